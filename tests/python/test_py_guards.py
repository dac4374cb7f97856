"""Guards in front of ATen calls (shim/ops/guards*.cpp) against torch itself:
what torch accepts, ctorch computes with torch's result; what a guard refuses,
torch refuses or computes wrongly (from PyTorch's OpInfo
samples replayed through ctorch).

Run by ctest with the build's torch Python (CTORCH_TORCH_PYTHON), CTORCH_LIB
and PYTHONPATH (the generated package) set, on every libtorch version: the
expectations follow what this torch does, and the test checks that this is
what its version is known to do.
"""
import unittest

import torch

import ctorch

TORCH_MAJOR = int(torch.__version__.split(".")[0])


def strides(t):
    return tuple(ctorch.capi.tensor_strides(t))


def contiguous(t):
    return bool(ctorch.capi.tensor_is_contiguous(t))


class EmptyViews(unittest.TestCase):
    """as_strided and its forms: a view with no element reads nothing, so
    torch takes it at any offset, even past a 0-byte storage."""

    def test_the_opinfo_sample(self):
        # The sample that was refused: a slice of an empty tensor (offset 2,
        # past its 0-byte storage) viewed again at offset 1.
        e = ctorch.ops.empty.memory_format([1, 0, 6])
        s = ctorch.ops.slice.Tensor(e, 2, 1, None, 2)
        te = torch.empty([1, 0, 6])
        ts = torch.ops.aten.slice.Tensor(te, 2, 1, None, 2)
        self.assertEqual(tuple(s.shape), tuple(ts.shape))
        self.assertEqual(strides(s), ts.stride())
        tv = torch.ops.aten.as_strided.default(ts, [1, 0, 3], [6, 6, 2], 1)
        v = ctorch.ops.as_strided.default(s, [1, 0, 3], [6, 6, 2], 1)
        self.assertEqual(tuple(v.shape), tuple(tv.shape))
        self.assertEqual(strides(v), tv.stride())
        self.assertEqual(ctorch.capi.tensor_numel(v), 0)

    def test_any_offset_over_a_zero_byte_storage(self):
        for off in (1, 7, 2 ** 40, 2 ** 62, 2 ** 63 - 1):
            with self.subTest(offset=off):
                tv = torch.empty(0).as_strided((1, 0, 3), (6, 6, 2), off)  # torch takes it
                v = ctorch.ops.as_strided.default(ctorch.ops.empty.memory_format([0]), [1, 0, 3], [6, 6, 2], off)
                self.assertEqual(tuple(v.shape), tuple(tv.shape))
                self.assertEqual(strides(v), tv.stride())
                # its data pointer is NULL, as torch's is 0
                self.assertIsNone(ctorch.capi.tensor_data_ptr(v) or None)
                self.assertEqual(tv.data_ptr(), 0)

    def test_what_follows_such_a_view_stays_safe(self):
        # Growing it fails whole (the storage size overflows; the view stays
        # empty), and a view with elements at its offset is refused (no torch
        # call: 1.13's own check wraps there).
        for off in (2 ** 61, 2 ** 63 - 1):
            with self.subTest(offset=off):
                v = ctorch.ops.as_strided.default(ctorch.ops.empty.memory_format([0]), [0], [1], off)
                with self.assertRaises(ctorch.CtorchError):
                    ctorch.ops.resize_.default(v, [4])
                self.assertEqual(tuple(v.shape), (0,))
                self.assertEqual(ctorch.ops.sum.default(v).item(), 0.0)
                with self.assertRaises(ctorch.CtorchError) as cm:
                    ctorch.ops.as_strided.default(v, [1], [1])
                self.assertIn("argument 'size'", str(cm.exception))

    def test_the_other_forms(self):
        x, tx = ctorch.ops.empty.memory_format([0]), torch.empty(0)
        c = ctorch.ops.as_strided_copy.default(x, [2, 0], [1, 1], 5)
        tc = torch.ops.aten.as_strided_copy.default(tx, [2, 0], [1, 1], 5)
        self.assertEqual(tuple(c.shape), tuple(tc.shape))
        y, ty = ctorch.ops.empty.memory_format([0]), torch.empty(0)
        ctorch.ops.as_strided_.default(y, [0, 3], [3, 1], 4)
        torch.ops.aten.as_strided_.default(ty, [0, 3], [3, 1], 4)
        self.assertEqual(tuple(y.shape), tuple(ty.shape))
        self.assertEqual(strides(y), ty.stride())
        # scatter into an empty view of a 3-element tensor: self unchanged
        z = ctorch.tensor([1.0, 2.0, 3.0])
        tz = torch.tensor([1.0, 2.0, 3.0])
        src, tsrc = ctorch.ops.empty.memory_format([0, 2]), torch.empty([0, 2])
        r = ctorch.ops.as_strided_scatter.default(z, src, [0, 2], [1, 1], 9)
        tr = torch.ops.aten.as_strided_scatter.default(tz, tsrc, [0, 2], [1, 1], 9)
        self.assertEqual(r.tolist(), tr.tolist())

    def test_views_with_elements_stay_inside_their_storage(self):
        # One element past a 9-float storage: torch refuses it too.
        x, tx = ctorch.ops.zeros.default([3, 3]), torch.zeros([3, 3])
        with self.assertRaises(RuntimeError):
            torch.ops.aten.as_strided.default(tx, [1], [1], 9)
        with self.assertRaises(ctorch.CtorchError) as cm:
            ctorch.ops.as_strided.default(x, [1], [1], 9)
        self.assertEqual(cm.exception.status_name, "CTORCH_INVALID_ARGUMENT")
        self.assertIn("reaches past its storage of 36 bytes", str(cm.exception))
        # the last element is a view on both
        self.assertEqual(tuple(ctorch.ops.as_strided.default(x, [1], [1], 8).shape), (1,))
        # 2^63-1 wraps libtorch 1.13's own check: ctorch refuses it (no torch call)
        with self.assertRaises(ctorch.CtorchError):
            ctorch.ops.as_strided.default(x, [1], [1], 2 ** 63 - 1)
        # negative offsets: both refuse, empty or not
        with self.assertRaises(RuntimeError):
            torch.empty(0).as_strided((0,), (1,), -1)
        with self.assertRaises(ctorch.CtorchError):
            ctorch.ops.as_strided.default(ctorch.ops.empty.memory_format([0]), [0], [1], -1)


class FractionalSamples(unittest.TestCase):
    """fractional_max_pool{2,3}d with non-contiguous random_samples: torch
    2.x pools with their contiguous copy, 1.13 reads them as flat memory."""

    def run_case(self, k, out_form):
        torch.manual_seed(k)
        tx = torch.randn((2, 3) + (10,) * k)
        base = torch.rand(3, 2, k)
        ts = base.permute(1, 0, 2)  # [N=2, C=3, k], non-contiguous
        self.assertFalse(ts.is_contiguous())
        ks, os = [2] * k, [4] * k
        op = getattr(torch.ops.aten, f"fractional_max_pool{k}d")
        to, ti = op.default(tx, ks, os, ts)
        co, ci = op.default(tx, ks, os, ts.contiguous())
        copies = torch.equal(to, co) and torch.equal(ti, ci)
        # What this version is known to do (shim/compat/compat.h).
        self.assertEqual(copies, TORCH_MAJOR >= 2, f"torch {torch.__version__}: a new behaviour, see compat.h")

        x = ctorch.from_torch(tx)
        s = ctorch.ops.permute.default(ctorch.from_torch(base), [1, 0, 2])
        self.assertFalse(contiguous(s))
        cop = getattr(ctorch.ops, f"fractional_max_pool{k}d")
        if copies:
            if out_form:
                o, i = ctorch.ops.empty.memory_format([0]), ctorch.ops.empty.memory_format([0], dtype=ctorch.int64)
                cop.output(x, ks, os, s, output=o, indices=i)
            else:
                o, i = cop.default(x, ks, os, s)
            self.assertTrue(torch.equal(ctorch.to_torch(o), to))
            self.assertTrue(torch.equal(ctorch.to_torch(i), ti))
        else:
            with self.assertRaises(ctorch.CtorchError) as cm:
                if out_form:
                    o, i = ctorch.ops.empty.memory_format([0]), ctorch.ops.empty.memory_format([0], dtype=ctorch.int64)
                    cop.output(x, ks, os, s, output=o, indices=i)
                else:
                    cop.default(x, ks, os, s)
            self.assertEqual(cm.exception.status_name, "CTORCH_INVALID_ARGUMENT")
            self.assertIn("argument 'random_samples'", str(cm.exception))
            self.assertIn("must be contiguous", str(cm.exception))
        # the contiguous samples: torch's result everywhere
        o, i = cop.default(x, ks, os, ctorch.ops.contiguous.default(s))
        self.assertTrue(torch.equal(ctorch.to_torch(o), co))
        self.assertTrue(torch.equal(ctorch.to_torch(i), ci))

    def test_2d(self):
        self.run_case(2, False)

    def test_2d_output(self):
        self.run_case(2, True)

    def test_3d(self):
        self.run_case(3, False)

    def test_3d_output(self):
        self.run_case(3, True)


if __name__ == "__main__":
    unittest.main()
