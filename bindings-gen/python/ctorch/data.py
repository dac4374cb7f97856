"""Data: IDX/MNIST files and ctorch's batch loader (ctorch_data_*)."""
import ctypes as _c

from ._rt import check, lib, byref, c_void_p, wrap


def read_idx(path):
    h = c_void_p()
    check(lib.ctorch_data_idx_read(byref(h), str(path).encode()))
    return wrap(h.value)


def read_mnist(directory, train=True):
    """(images uint8 [N, 28, 28], labels int64 [N]) of an MNIST-style directory."""
    a, b = c_void_p(), c_void_p()
    check(lib.ctorch_data_mnist_read_dir(byref(a), byref(b), str(directory).encode(), 1 if train else 0))
    return wrap(a.value), wrap(b.value)


class DataLoader:
    """Batches along dimension 0 of data (and targets); shuffled per epoch
    from seed exactly as the C loader documents. Iterating runs one epoch."""

    def __init__(self, data, targets=None, batch_size=1, shuffle=False, seed=0, drop_last=False):
        h = c_void_p()
        check(lib.ctorch_data_loader_new(byref(h), data._h, None if targets is None else targets._h, batch_size,
                                         1 if shuffle else 0, seed, 1 if drop_last else 0))
        self._h = h.value
        self._epoch = 0

    def __len__(self):
        v = _c.c_int64()
        check(lib.ctorch_data_loader_num_batches(byref(v), self._h))
        return v.value

    def start_epoch(self, epoch):
        check(lib.ctorch_data_loader_start_epoch(self._h, epoch))
        self._epoch = epoch

    def __iter__(self):
        check(lib.ctorch_data_loader_start_epoch(self._h, self._epoch))
        self._epoch += 1
        has = _c.c_int()
        while True:
            x, y = c_void_p(), c_void_p()
            check(lib.ctorch_data_loader_next(byref(has), byref(x), byref(y), self._h))
            if not has.value:
                return
            yield (wrap(x.value), wrap(y.value)) if y.value else wrap(x.value)

    def __del__(self):
        if getattr(self, "_h", None):
            lib.ctorch_data_loader_free(self._h)
            self._h = None
