"""The Python binding the way PyTorch users write it: NumPy's array
protocol, DLPack both ways through the array API's __dlpack__ and
ctorch.from_dlpack, and ctorch.save/load taking what torch.save/torch.load
take for weights (a tensor or a state dict), each compared with what torch
itself does on this torch version.

Run by ctest with the Python whose torch matches the build's libtorch
(CTORCH_TORCH_PYTHON), CTORCH_LIB and PYTHONPATH set. NumPy is part of both
test environments (Debian's python3-numpy, scripts/torch-env's venv); without
it the test reports skipped (exit 77).
"""
import collections
import sys
import unittest

try:
    import numpy as np
except ImportError:
    print("skipped: this Python has no numpy (scripts/deps and scripts/torch-env install it)")
    sys.exit(77)
import torch
from torch import nn

import ctorch
import interop_util
from interop_util import DTYPES

OLD = torch.__version__.startswith("1.")
# torch dtype -> NumPy dtype, for the dtypes both have (not bfloat16).
NP = {torch.bool: np.bool_, torch.uint8: np.uint8, torch.int8: np.int8, torch.int16: np.int16,
      torch.int32: np.int32, torch.int64: np.int64, torch.float16: np.float16, torch.float32: np.float32,
      torch.float64: np.float64, torch.complex64: np.complex64, torch.complex128: np.complex128}


def sample(dtype, shape=(3, 5), seed=7):
    return interop_util.sample(dtype, shape, seed=seed)


class ArrayProtocol(unittest.TestCase):
    def test_asarray_has_the_dtype_and_the_values(self):
        # The case: np.asarray(ctorch.tensor([1., 2.])) was an object array.
        a = np.asarray(ctorch.tensor([1.0, 2.0]))
        self.assertEqual(a.dtype, np.asarray(torch.tensor([1.0, 2.0])).dtype)
        self.assertEqual(a.dtype, np.float32)
        self.assertEqual(a.tolist(), [1.0, 2.0])
        for dt, npdt in NP.items():
            with self.subTest(dtype=dt):
                x = sample(dt)
                got = np.asarray(ctorch.from_torch(x))
                want = np.asarray(x)  # torch's own __array__
                self.assertEqual(got.dtype, want.dtype)
                self.assertEqual(got.dtype, np.dtype(npdt))
                self.assertEqual(got.shape, want.shape)
                self.assertTrue(np.array_equal(got, want))

    def test_shares_memory_and_keeps_the_tensor_alive(self):
        t = ctorch.zeros([2, 3])
        a = np.asarray(t)
        self.assertEqual(a.__array_interface__["data"][0], t.data_ptr())
        a[1, 2] = 5.0  # a write through NumPy is seen by ctorch ...
        self.assertEqual(t.tolist(), [[0.0] * 3, [0.0, 0.0, 5.0]])
        t.add_(1.0)  # ... and the other way
        self.assertEqual(a.tolist(), [[1.0] * 3, [1.0, 1.0, 6.0]])
        # The array holds its own reference to the storage (its base):
        # neither del nor dispose() of the tensor frees it.
        t.dispose()
        del t
        ctorch.flush_frees()
        junk = [ctorch.full([2, 3], 9.0) for _ in range(50)]
        self.assertEqual(a.tolist(), [[1.0] * 3, [1.0, 1.0, 6.0]])
        del junk
        self.assertIsNotNone(a.base)

    def test_views_share_with_their_strides(self):
        x = torch.arange(40.0).reshape(5, 8)
        base = ctorch.from_torch(x)
        for name, view, ref in (("slice", base[1:, ::3], x[1:, ::3]), ("t", base.t(), x.t()),
                                ("expand", base[0:1].expand([4, 8]), x[0:1].expand(4, 8)),
                                ("scalar", base[2, 3], x[2, 3])):
            with self.subTest(view=name):
                a = np.asarray(view)
                self.assertTrue(np.array_equal(a, ref.numpy()))
                self.assertEqual(a.strides, ref.numpy().strides)
                self.assertTrue(np.shares_memory(a, x.numpy()))

    def test_empty_and_copies(self):
        for shape in ([0], [3, 0, 2]):
            a = np.asarray(ctorch.zeros(shape, dtype=ctorch.int16))
            self.assertEqual((a.shape, a.dtype), (tuple(shape), np.dtype(np.int16)))
        t = ctorch.tensor([1.0, 2.0])
        c = np.array(t)  # np.array copies by default
        c[0] = 7.0
        self.assertEqual(t.tolist(), [1.0, 2.0])
        d = np.asarray(t, dtype=np.float64)
        self.assertEqual((d.dtype, d.tolist()), (np.dtype(np.float64), [1.0, 2.0]))
        n = t.numpy()  # as torch's Tensor.numpy(): shares
        n[1] = 3.0
        self.assertEqual(t.tolist(), [1.0, 3.0])

    def test_refusals_as_torch(self):
        cases = (("requires grad", lambda m: m.zeros([2], requires_grad=True), RuntimeError, "requires grad"),
                 ("conjugate bit", lambda m: m.ones([2], dtype=m.complex64).conj(), RuntimeError, "conjugate bit"),
                 ("bfloat16", lambda m: m.ones([2], dtype=m.bfloat16), TypeError, "BFloat16"))
        for name, make, exc, needle in cases:
            with self.subTest(case=name):
                with self.assertRaises(exc) as mine:
                    np.asarray(make(ctorch))
                self.assertIn(needle, str(mine.exception))
                with self.assertRaises(exc) as theirs:  # torch refuses the same, with that exception type
                    np.asarray(make(torch))
                self.assertIn(needle, str(theirs.exception))
        # force=True copies what must be copied, as torch 2.x's numpy(force=True).
        t = ctorch.tensor([1.0, 2.0], requires_grad=True)
        self.assertEqual(t.numpy(force=True).tolist(), [1.0, 2.0])
        c = ctorch.tensor([1 + 2j]).conj()
        self.assertEqual(c.numpy(force=True).tolist(), [1 - 2j])


class DLPack(unittest.TestCase):
    def test_torch_from_dlpack_of_ctorch(self):
        for dt in DTYPES:
            if OLD and dt == torch.bool:
                continue  # torch 1.13 knows no DLPack bool (ctorch.to_torch covers it)
            with self.subTest(dtype=dt):
                x = sample(dt)
                t = ctorch.from_torch(x.clone())
                y = torch.from_dlpack(t) if hasattr(torch, "from_dlpack") else torch.utils.dlpack.from_dlpack(t)
                self.assertEqual(y.dtype, dt)
                self.assertTrue(torch.equal(y, x))
                self.assertEqual(y.data_ptr(), t.data_ptr())

    def test_ctorch_from_dlpack_of_torch(self):
        for dt in DTYPES:
            with self.subTest(dtype=dt):
                x = sample(dt)
                t = ctorch.from_dlpack(x)
                self.assertEqual(t.data_ptr(), x.data_ptr())
                self.assertTrue(torch.equal(ctorch.to_torch(t), x))
        # A torch capsule, consumed: a second use is refused by its name.
        cap = torch.utils.dlpack.to_dlpack(torch.arange(3.0))
        self.assertEqual(ctorch.from_dlpack(cap).tolist(), [0.0, 1.0, 2.0])
        with self.assertRaises(ValueError):
            ctorch.from_dlpack(cap)

    def test_numpy_both_ways(self):
        if not hasattr(np, "from_dlpack"):
            self.skipTest(f"numpy {np.__version__} has no from_dlpack (1.22+)")
        a = np.arange(12, dtype=np.float64).reshape(3, 4)[:, 1:]
        t = ctorch.from_dlpack(a)
        self.assertEqual((t.dtype, t.shape, t.stride()), (ctorch.float64, (3, 3), (4, 1)))
        self.assertEqual(t.data_ptr(), a.__array_interface__["data"][0])
        t.mul_(2.0)
        self.assertEqual(a[2, 2], 22.0)  # shared
        b = np.from_dlpack(ctorch.tensor([[1, 2], [3, 4]], dtype=ctorch.int32))
        self.assertEqual((b.dtype, b.tolist()), (np.dtype(np.int32), [[1, 2], [3, 4]]))
        ro = np.arange(3.0)
        ro.flags.writeable = False
        with self.assertRaises((BufferError, TypeError, ValueError)):
            ctorch.from_dlpack(ro)  # NumPy refuses to export a read-only array

    def test_dlpack_device_and_refusals(self):
        t = ctorch.ones([2])
        self.assertEqual(t.__dlpack_device__(), (1, 0))
        self.assertEqual(t.__dlpack_device__(), tuple(torch.ones(2).__dlpack_device__()))
        with self.assertRaises(BufferError):
            t.__dlpack__(dl_device=(2, 0))
        c = t.__dlpack__(copy=True)
        self.assertNotEqual(ctorch.from_dlpack(c).data_ptr(), t.data_ptr())
        with self.assertRaises(TypeError):
            ctorch.from_dlpack([1.0, 2.0])


def torch_model():
    torch.manual_seed(0)
    m = nn.Sequential(nn.Conv2d(1, 3, 3), nn.BatchNorm2d(3), nn.ReLU(), nn.Flatten(), nn.Linear(3 * 4 * 4, 2))
    with torch.no_grad():
        m(torch.randn(4, 1, 6, 6))  # running stats and num_batches_tracked move
    return m


class SaveLoad(interop_util.TempDirTest):
    def test_state_dict_of_a_ctorch_module_to_torch(self):
        ctorch.manual_seed(0)
        m = ctorch.nn.Sequential(ctorch.nn.Linear(4, 3), ctorch.nn.BatchNorm1d(3))
        sd = m.state_dict()
        ctorch.save(sd, self.path("m.pt"))  # what the user wrote
        # torch.load's default (weights_only=True from 2.6; 1.13's weights-only reader reads no float)
        got = torch.load(self.path("m.pt")) if OLD else torch.load(self.path("m.pt"), weights_only=True)
        self.assertEqual(list(got), list(sd))
        for k, v in sd.items():
            self.assertTrue(torch.equal(got[k], ctorch.to_torch(v)), k)
        t = nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3))
        t.load_state_dict(got, strict=True)

    def test_torch_state_dict_both_ways(self):
        a = torch_model()
        sd = a.state_dict()
        ctorch.save(sd, self.path("sd.pt"))  # torch tensors as values: taken zero-copy
        if not OLD:
            self.assertEqual(list(torch.load(self.path("sd.pt"), weights_only=True)), list(sd))
        b = torch_model()
        for p in b.parameters():
            p.data.zero_()
        b.load_state_dict(torch.load(self.path("sd.pt")), strict=True)
        for k, v in b.state_dict().items():
            self.assertTrue(torch.equal(v, sd[k]), k)
        # torch.save -> ctorch.load: an OrderedDict in file order, as torch.load gives.
        torch.save(sd, self.path("t.pt"))
        back = ctorch.load(self.path("t.pt"))
        self.assertIsInstance(back, collections.OrderedDict)
        self.assertEqual(list(back), list(sd))
        for k, v in sd.items():
            self.assertTrue(torch.equal(ctorch.to_torch(back[k]), v), k)
        # ... and a plain dict and a single tensor.
        torch.save({"w": torch.ones(2, 2)}, self.path("d.pt"))
        self.assertEqual(ctorch.load(self.path("d.pt"))["w"].tolist(), [[1.0, 1.0], [1.0, 1.0]])
        torch.save(torch.arange(3), self.path("one.pt"))
        one = ctorch.load(self.path("one.pt"))
        self.assertEqual((one.dtype, one.tolist()), (ctorch.int64, [0, 1, 2]))

    def test_save_of_a_tensor_and_of_numpy(self):
        ctorch.save(ctorch.tensor([1.5, 2.5]), self.path("t.pt"))
        self.assertTrue(torch.equal(torch.load(self.path("t.pt")), torch.tensor([1.5, 2.5])))
        ctorch.save({"a": np.arange(4, dtype=np.int32)}, self.path("n.pt"))
        got = torch.load(self.path("n.pt"))["a"]
        self.assertEqual((got.dtype, got.tolist()), (torch.int32, [0, 1, 2, 3]))

    def test_what_is_not_taken(self):
        for obj, needle in (({"w": ctorch.ones([1]), "epoch": 3}, "'epoch' is of type int"),
                            ({1: ctorch.ones([1])}, "key of type int"),
                            ([ctorch.ones([1])], "got list"),
                            ("not a tensor", "got str")):
            with self.subTest(obj=type(obj).__name__):
                with self.assertRaises(TypeError) as cm:
                    ctorch.save(obj, self.path("x.pt"))
                msg = str(cm.exception)
                self.assertIn(needle, msg)
                self.assertIn("a Tensor, or a mapping of str -> Tensor", msg)
        torch.save({"w": torch.ones(2), "epoch": 3}, self.path("mixed.pt"))
        with self.assertRaises(ctorch.CtorchError) as cm:
            ctorch.load(self.path("mixed.pt"))
        self.assertEqual(cm.exception.status_name, "CTORCH_TYPE")
        self.assertIn("epoch", str(cm.exception))
        torch.save([torch.ones(2)], self.path("list.pt"))
        with self.assertRaises(ctorch.CtorchError) as cm:
            ctorch.load(self.path("list.pt"))
        self.assertIn("list", str(cm.exception))


if __name__ == "__main__":
    unittest.main(verbosity=2)
