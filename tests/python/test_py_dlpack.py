"""DLPack between ctorch (through the ctorch package's interop module,
ctypes only) and torch.

Run by ctest with the build's torch Python, CTORCH_LIB and PYTHONPATH (the
generated package, build/bindings/python) set; also run a second time under
PYTHONMALLOC=debug.
"""
import ctypes
import gc
import unittest

import torch

import ctorch
import interop_util
from interop_util import DTYPES

lib = ctorch.lib


class CtorchDevice(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int32), ("index", ctypes.c_int32)]


RELEASE = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
# The test's own prototype: the package's lib keeps the ones it set.
from_blob = ctypes.CFUNCTYPE(
    ctypes.c_int, ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p, ctypes.POINTER(ctypes.c_int64),
    ctypes.POINTER(ctypes.c_int64), ctypes.c_size_t, ctypes.c_int, CtorchDevice, RELEASE, ctypes.c_void_p)(
    ("ctorch_tensor_from_blob", lib))


class Counted:
    """A float32 ctorch tensor over a ctypes buffer whose release is counted:
    the memory's owner learns exactly when (and how often) ctorch lets go."""

    def __init__(self, n=6):
        self.buf = (ctypes.c_float * n)(*[float(i) for i in range(n)])
        self.released = 0

        def on_release(ctx):
            self.released += 1

        self._cb = RELEASE(on_release)  # kept alive as long as the memory
        sizes = (ctypes.c_int64 * 1)(n)
        h = ctypes.c_void_p()
        st = from_blob(ctypes.byref(h), ctypes.addressof(self.buf), sizes, None, 1, 9, CtorchDevice(0, -1), self._cb,
                       None)
        assert st == 0, lib.ctorch_last_error()
        self.tensor = ctorch.from_handle(h.value)

    @property
    def address(self):
        return ctypes.addressof(self.buf)


def collect():
    for _ in range(2):
        gc.collect()
    ctorch.flush_frees()  # collected Tensors release their handles in batches (ctorch._rt.Tensor.__del__)


class ZeroCopy(unittest.TestCase):
    def test_torch_to_ctorch_shares_memory(self):
        x = torch.arange(12, dtype=torch.float32).reshape(3, 4)
        t = ctorch.from_torch(x)
        self.assertEqual(t.data_ptr(), x.data_ptr())
        self.assertEqual(t.shape, (3, 4))
        x[1, 2] = 100.0  # torch writes, ctorch reads
        self.assertEqual(torch.frombuffer(bytearray(t.tobytes()), dtype=torch.float32)[6].item(), 100.0)
        ctypes.c_float.from_address(t.data_ptr() + 4 * 5).value = -7.0  # C-side write, torch reads
        self.assertEqual(x[1, 1].item(), -7.0)

    def test_ctorch_to_torch_shares_memory(self):
        c = Counted()
        x = ctorch.to_torch(c.tensor)
        self.assertEqual(x.data_ptr(), c.address)
        self.assertEqual(x.tolist(), [0, 1, 2, 3, 4, 5])
        x[2] = 42.0
        self.assertEqual(c.buf[2], 42.0)
        c.buf[3] = -1.5
        self.assertEqual(x[3].item(), -1.5)
        del x
        c.tensor.dispose()
        collect()
        self.assertEqual(c.released, 1)

    def test_round_trip_keeps_pointer(self):
        x = torch.randn(5, 7)
        y = ctorch.to_torch(ctorch.from_torch(x))
        self.assertEqual(y.data_ptr(), x.data_ptr())
        self.assertTrue(torch.equal(x, y))


class Lifetimes(unittest.TestCase):
    def test_ctorch_frees_first(self):
        c = Counted()
        x = ctorch.to_torch(c.tensor)
        c.tensor.dispose()
        collect()
        self.assertEqual(c.released, 0)  # torch still holds it
        self.assertEqual(x.tolist(), [0, 1, 2, 3, 4, 5])
        del x
        collect()
        self.assertEqual(c.released, 1)

    def test_torch_frees_first(self):
        c = Counted()
        x = ctorch.to_torch(c.tensor)
        del x
        collect()
        self.assertEqual(c.released, 0)
        self.assertEqual(c.tensor.tobytes(), bytes(c.buf))
        c.tensor.dispose()
        self.assertEqual(c.released, 1)

    def test_chain_through_both_sides_releases_once(self):
        c = Counted()
        x = ctorch.to_torch(c.tensor)      # ctorch -> torch
        t2 = ctorch.from_torch(x * 0 + x)  # a different tensor: unrelated
        t3 = ctorch.from_torch(x)          # torch -> ctorch: same memory again
        self.assertEqual(t3.data_ptr(), c.address)
        del x
        c.tensor.dispose()
        t2.dispose()
        collect()
        self.assertEqual(c.released, 0)
        self.assertEqual(ctorch.to_torch(t3).tolist(), [0, 1, 2, 3, 4, 5])
        collect()
        t3.dispose()
        collect()
        self.assertEqual(c.released, 1)

    def test_torch_memory_outlives_torch_tensor(self):
        x = torch.arange(1000, dtype=torch.int64)
        t = ctorch.from_torch(x)
        ptr = x.data_ptr()
        del x
        collect()
        junk = [torch.full((1000,), 7, dtype=torch.int64) for _ in range(20)]  # would reuse freed memory
        self.assertEqual(t.data_ptr(), ptr)
        y = ctorch.to_torch(t)
        self.assertTrue(torch.equal(y, torch.arange(1000)))
        del junk, y

    def test_unconsumed_capsule_frees_its_tensor(self):
        c = Counted()
        cap = ctorch.to_dlpack_capsule(c.tensor)
        del cap  # never given to torch: the capsule destructor must delete it
        collect()
        c.tensor.dispose()
        collect()
        self.assertEqual(c.released, 1)

    def test_consumed_capsule_is_not_freed_twice(self):
        c = Counted()
        cap = ctorch.to_dlpack_capsule(c.tensor)
        x = torch.utils.dlpack.from_dlpack(cap)
        del cap
        collect()
        c.tensor.dispose()
        self.assertEqual(c.released, 0)
        self.assertEqual(x[5].item(), 5.0)
        del x
        collect()
        self.assertEqual(c.released, 1)

    def test_many_exchanges_do_not_leak(self):
        c = Counted()
        for _ in range(200):
            y = ctorch.to_torch(ctorch.from_torch(ctorch.to_torch(c.tensor)))
        del y
        collect()
        c.tensor.dispose()
        collect()
        self.assertEqual(c.released, 1)


NAMES = {torch.bool: "bool", torch.uint8: "uint8", torch.int8: "int8", torch.int16: "int16", torch.int32: "int32",
         torch.int64: "int64", torch.float16: "float16", torch.bfloat16: "bfloat16", torch.float32: "float32",
         torch.float64: "float64", torch.complex64: "complex64", torch.complex128: "complex128"}


def sample(dtype):
    return interop_util.sample(dtype, (3, 4), seed=1, negative_ints=False)


def raw_bytes(x):
    return x.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()


class Dtypes(unittest.TestCase):
    def test_every_dtype_both_ways(self):
        for dt in DTYPES:
            with self.subTest(dtype=dt):
                x = sample(dt)
                t = ctorch.from_torch(x)
                self.assertEqual(t.dtype, getattr(ctorch, NAMES[dt]))
                self.assertEqual(str(t.dtype), "ctorch." + NAMES[dt])
                self.assertEqual(t.data_ptr(), x.data_ptr())
                self.assertEqual(t.tobytes(), raw_bytes(x))
                y = ctorch.to_torch(t)
                self.assertEqual(y.dtype, dt)
                self.assertEqual(y.data_ptr(), x.data_ptr())
                self.assertTrue(torch.equal(y, x))

    def test_bool_writes_cross(self):
        x = torch.zeros(4, dtype=torch.bool)
        t = ctorch.from_torch(x)
        ctypes.c_uint8.from_address(t.data_ptr() + 2).value = 1
        self.assertEqual(x.tolist(), [False, False, True, False])
        y = ctorch.to_torch(t)
        y[0] = True
        self.assertEqual(x.tolist(), [True, False, True, False])


class Layouts(unittest.TestCase):
    def same_strides(self, a, b, shape):
        # torch 1.13's to_dlpack rewrites the strides of size-1 dims and of
        # empty tensors (they address nothing); all others must match.
        if 0 in shape:
            return
        self.assertEqual([s for s, n in zip(a, shape) if n != 1], [s for s, n in zip(b, shape) if n != 1])

    def check(self, x):
        t = ctorch.from_torch(x)
        self.assertEqual(t.shape, tuple(x.shape))
        self.same_strides(t.stride(), x.stride(), x.shape)
        if x.numel():
            self.assertEqual(t.data_ptr(), x.data_ptr())
        self.assertEqual(t.tobytes(), raw_bytes(x))
        y = ctorch.to_torch(t)
        self.same_strides(y.stride(), x.stride(), x.shape)
        if x.numel():
            self.assertEqual(y.data_ptr(), x.data_ptr())
        self.assertEqual(y.shape, x.shape)
        self.assertTrue(torch.equal(y, x))

    def test_zero_dim(self):
        self.check(torch.tensor(3.5))
        self.check(torch.tensor(True))

    def test_non_contiguous_and_offset(self):
        base = torch.arange(60, dtype=torch.float64).reshape(3, 4, 5)
        self.check(base.transpose(0, 2))
        self.check(base[1:, ::2, 3])       # storage offset and step
        self.check(base.permute(1, 2, 0)[:, 1:4])

    def test_size_one_and_empty(self):
        self.check(torch.randn(1, 5, 1))
        self.check(torch.randn(5, 1).expand(5, 3))  # stride 0
        self.check(torch.empty(0, 3))


if __name__ == "__main__":
    unittest.main(verbosity=2)
