"""Data: IDX/MNIST files and ctorch's batch loader (the generated
_api.data_* functions; the DataLoader class is their Python face: an
iterable with PyTorch's keyword arguments)."""
from . import _api

read_idx = _api.data_idx_read


def read_mnist(directory, train=True):
    """(images uint8 [N, 28, 28], labels int64 [N]) of an MNIST-style directory."""
    return _api.data_mnist_read_dir(str(directory), train)


class DataLoader(_api.DataLoader):
    """Batches along dimension 0 of data (and targets); shuffled per epoch
    from seed exactly as the C loader documents. Iterating runs one epoch."""

    def __init__(self, data, targets=None, batch_size=1, shuffle=False, seed=0, drop_last=False, transform=None):
        self._h = _api.data_loader_new(data, targets, batch_size, shuffle, seed, drop_last)._take()
        self._epoch = 0
        if transform is not None:  # a ctorch transform handle, applied per item (the loader keeps a reference)
            _api.data_loader_set_transform(self, transform)

    def __len__(self):
        return self.num_batches()

    def start_epoch(self, epoch):
        _api.data_loader_start_epoch(self, epoch)
        self._epoch = epoch

    def __iter__(self):
        """A new epoch with a cursor of its own (as each iter() of a PyTorch
        DataLoader): two iterations at once (zip(loader, loader)) each see
        every batch once. The C loader has one cursor; an iterator that finds
        it elsewhere (another iterator moved it) seeks back to its own place
        (ctorch_data_loader_seek replays the epoch's order to that batch)."""
        epoch = self._epoch
        self._epoch += 1
        _api.data_loader_start_epoch(self, epoch)
        return self._batches(epoch)

    def _batches(self, epoch):
        done = 0
        while True:
            if tuple(_api.data_loader_position(self)) != (epoch, done):
                _api.data_loader_seek(self, epoch, done)
            has, x, y = _api.data_loader_next(self)
            if not has:
                return
            done += 1
            yield (x, y) if y is not None else x
