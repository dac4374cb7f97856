"""What the Python interop tests share (test_py_checkpoint.py,
test_py_dlpack.py, test_py_interop_files.py): the dtypes that cross between
ctorch and torch, deterministic sample tensors of each, and a TestCase with a
fresh temporary directory per test. Imported from the tests' own directory
(Python puts a script's directory first on sys.path)."""
import os
import tempfile
import unittest

import torch

# Every dtype ctorch and torch exchange (files and DLPack).
DTYPES = [torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float16,
          torch.bfloat16, torch.float32, torch.float64, torch.complex64, torch.complex128]


def sample(dtype, shape, seed, negative_ints=True):
    """A tensor of `dtype` and `shape` drawn from a generator seeded with
    `seed`: booleans half true, floats ~N(0, 10), integers in [-50, 100)
    ([0, 100) for uint8, or when negative_ints is false)."""
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.rand(shape, generator=g) > 0.5
    if dtype.is_complex:
        return torch.randn(shape, dtype=dtype, generator=g)
    if dtype.is_floating_point:
        return (torch.randn(shape, generator=g) * 10).to(dtype)
    low = -50 if negative_ints and dtype != torch.uint8 else 0
    return torch.randint(low, 100, shape, generator=g).to(dtype)


class TempDirTest(unittest.TestCase):
    """self.dir: a temporary directory made for each test and removed after it."""

    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory()
        self.dir = self._tmp.name

    def tearDown(self):
        self._tmp.cleanup()

    def path(self, name):
        return os.path.join(self.dir, name)
