"""The generated Python binding: operators with keyword arguments and
defaults, overloads, out= and in-place forms, Tensor methods and operators,
autograd, optimizers, data, DLPack with PyTorch, checkpoints, errors, the
native memory counter and the ABI check; and that the package pip-installs."""
import array
import math
import os
import subprocess
import struct
import sys
import tempfile
import unittest

import ctorch

try:
    import torch
except ImportError:  # the interop cases then report themselves skipped
    torch = None


def close(a, b, tol=1e-5):
    a, b = (a.tolist() if isinstance(a, ctorch.Tensor) else a), (b.tolist() if isinstance(b, ctorch.Tensor) else b)
    if isinstance(a, list):
        return len(a) == len(b) and all(close(x, y, tol) for x, y in zip(a, b))
    return abs(a - b) <= tol * (1 + abs(b))


class Ops(unittest.TestCase):
    def setUp(self):
        self.a = ctorch.tensor([[1.0, 2.0], [3.0, 4.0]])
        self.b = ctorch.tensor([[0.5, -1.0], [2.0, 0.0]])

    def test_keywords_and_defaults(self):
        self.assertTrue(close(ctorch.add(self.a, self.b, alpha=2), [[2.0, 0.0], [7.0, 4.0]]))
        self.assertTrue(close(ctorch.add(self.a, self.b), [[1.5, 1.0], [5.0, 4.0]]))
        self.assertTrue(close(ctorch.sum(self.a, dim=[1], keepdim=True), [[3.0], [7.0]]))
        x = ctorch.tensor([[2.0, 1.0, 0.0], [0.0, 1.0, 3.0]])
        y = ctorch.tensor([0, 2])
        mean = ctorch.nn.cross_entropy_loss(x, y).item()
        # reduction as PyTorch's name, as the ctorch enum value, as an int
        total = ctorch.nn.cross_entropy_loss(x, y, reduction="sum").item()
        self.assertAlmostEqual(total, ctorch.nn.cross_entropy_loss(x, y, reduction=2).item(), places=5)
        self.assertAlmostEqual(total, 2 * mean, places=5)
        with self.assertRaises(ValueError):
            ctorch.nn.cross_entropy_loss(x, y, reduction="average")

    def test_int_list_defaults_and_expansion(self):
        x = ctorch.arange(16.0).reshape([1, 1, 4, 4])
        # stride=[] (default): the kernel size, as PyTorch does.
        self.assertEqual(ctorch.max_pool2d(x, [2, 2]).shape, (1, 1, 2, 2))
        # A lone int for int[2] is repeated.
        self.assertEqual(ctorch.nn.avg_pool2d(x, 2).shape, (1, 1, 2, 2))
        self.assertTrue(close(ctorch.nn.avg_pool2d(x, 2).reshape([-1]), [2.5, 4.5, 10.5, 12.5]))

    def test_overloads(self):
        self.assertTrue(close(ctorch.add(self.a, 1), [[2.0, 3.0], [4.0, 5.0]]))
        self.assertTrue(close(ctorch.ops.add.Scalar(self.a, 0.5), [[1.5, 2.5], [3.5, 4.5]]))
        self.assertTrue(close(ctorch.ops.add.Tensor(self.a, self.b, alpha=-1), [[0.5, 3.0], [1.0, 4.0]]))
        with self.assertRaises(TypeError) as cm:
            ctorch.add(self.a, "x")
        self.assertIn("add.Tensor", str(cm.exception))
        v, i = ctorch.max(self.a, 1)
        self.assertEqual(v.tolist(), [2.0, 4.0])
        self.assertEqual(i.tolist(), [1, 1])
        self.assertEqual(ctorch.max(self.a).item(), 4.0)

    def test_out_and_inplace(self):
        c = ctorch.empty([2, 2])
        r = ctorch.add(self.a, self.b, out=c)
        self.assertIs(r, c)
        self.assertTrue(close(c, [[1.5, 1.0], [5.0, 4.0]]))
        a = self.a.clone()
        self.assertIs(a.mul_(2), a)
        self.assertTrue(close(a, [[2.0, 4.0], [6.0, 8.0]]))
        a += 1
        self.assertTrue(close(a, [[3.0, 5.0], [7.0, 9.0]]))

    def test_operators_and_methods(self):
        a, b = self.a, self.b
        self.assertTrue(close(a + 1, [[2, 3], [4, 5]]))
        self.assertTrue(close(1 + a, [[2, 3], [4, 5]]))
        self.assertTrue(close(10 - a, [[9, 8], [7, 6]]))
        self.assertTrue(close(a * b, [[0.5, -2.0], [6.0, 0.0]]))
        self.assertTrue(close(1 / a, [[1.0, 0.5], [1 / 3, 0.25]]))
        self.assertTrue(close(a ** 2, [[1, 4], [9, 16]]))
        self.assertTrue(close(2 ** a, [[2, 4], [8, 16]]))
        self.assertTrue(close(-a, [[-1, -2], [-3, -4]]))
        self.assertTrue(close(a @ a, [[7, 10], [15, 22]]))
        self.assertEqual((a > 2).tolist(), [[False, False], [True, True]])
        self.assertEqual((a > 2).dtype, ctorch.bool)
        self.assertEqual(a.t().tolist(), [[1.0, 3.0], [2.0, 4.0]])
        self.assertEqual(a[1].tolist(), [3.0, 4.0])
        self.assertEqual(a[:, 0].tolist(), [1.0, 3.0])
        self.assertEqual(a[None].shape, (1, 2, 2))
        self.assertEqual(a.shape, (2, 2))
        self.assertEqual(a.dtype, ctorch.float32)
        self.assertEqual(str(a.device), "device('cpu')")
        c = a.clone()
        c[0, 1] = 7.0
        self.assertEqual(c.tolist(), [[1.0, 7.0], [3.0, 4.0]])
        self.assertEqual(ctorch.where(a > 2, a, b).tolist(), [[0.5, -1.0], [3.0, 4.0]])

    def test_bool_bytes_read_as_zero_or_one(self):
        # A bool view of uint8 bytes 5, 0, 255, 1 reads as
        # True, False, True, True (the C copy-out and item normalise).
        b = ctorch.ops.view.dtype(ctorch.tensor([5, 0, 255, 1], dtype=ctorch.uint8), ctorch.bool)
        self.assertEqual(b.tolist(), [True, False, True, True])
        self.assertEqual([type(x) for x in b.tolist()], [bool] * 4)
        self.assertIs(b[0].item(), True)
        self.assertEqual(bytes(b.tobytes()), bytes([1, 0, 1, 1]))

    def test_unsafe_operators_only_unchecked(self):
        # The operators api.json marks unsafe (ops_json.unsafe) exist only as
        # ctorch.unchecked.<name>: not ctorch.<name>, ctorch.ops.<name> or a Tensor method.
        # (A name with checked overloads too, 2.15's _fused_adam_.tensor_lr, keeps those.)
        names = set(ctorch._ops.UNCHECKED)
        self.assertIn("_remove_batch_dim", names)  # on a bool tensor it killed the process (Go)
        for n in names:
            self.assertTrue(callable(getattr(ctorch.unchecked, n)), n)
            unsafe = {fn for fn, _sig in getattr(ctorch._ops, f"_G__u_{n}")}
            checked = {fn for fn, _sig in getattr(ctorch._ops, f"_G_{n}", ())}
            self.assertFalse(unsafe & checked, f"ctorch.ops.{n} dispatches to an unsafe overload")
            for space in (ctorch.ops, ctorch, ctorch.Tensor):
                if not checked:
                    self.assertFalse(hasattr(space, n), f"{space.__name__}.{n}: an unsafe operator under its name")
        # On good input it runs, under the name that says what it risks.
        x, v, i = ctorch.tensor([1.0, 3.0, 2.0]), ctorch.zeros([3]), ctorch.zeros([3], dtype=ctorch.int64)
        ctorch.unchecked._cummax_helper.default(x, v, i, 0)
        self.assertEqual((v.tolist(), i.tolist()), ([1.0, 3.0, 3.0], [0, 1, 1]))

    def test_views_share_data(self):
        a = self.a.clone()
        t = a.transpose(0, 1)
        t.zero_()
        self.assertEqual(a.tolist(), [[0.0, 0.0], [0.0, 0.0]])
        parts = ctorch.split(ctorch.arange(5), 2)
        self.assertEqual([p.tolist() for p in parts], [[0, 1], [2, 3], [4]])

    def test_empty_list_is_pytorchs(self):
        src = ctorch.arange(6.0)
        t = ctorch.empty([0])
        t.set_(src, 1, [2, 2], [])
        self.assertEqual(t.stride(), (2, 1))
        self.assertEqual(t.tolist(), [[1.0, 2.0], [3.0, 4.0]])
        x = ctorch.ones([1, 1, 2])
        self.assertEqual(ctorch.nn.upsample_nearest1d(x, [4], None).shape, (1, 1, 4))
        with self.assertRaises(ctorch.CtorchError):
            ctorch.nn.upsample_nearest1d(x, [4], [])  # [] is not None

    def test_dtypes_and_creation(self):
        self.assertEqual(ctorch.tensor([1, 2]).dtype, ctorch.int64)
        self.assertEqual(ctorch.tensor([True]).dtype, ctorch.bool)
        self.assertEqual(ctorch.zeros([2], dtype=ctorch.float64).dtype, ctorch.float64)
        self.assertEqual(ctorch.arange(3, dtype=ctorch.int32).tolist(), [0, 1, 2])
        x = ctorch.ones([2, 3, 4, 5]).contiguous(memory_format=ctorch.channels_last)
        self.assertEqual(x.stride(), (60, 1, 15, 3))

    def test_factories_take_requires_grad(self):
        # As in PyTorch: torch.zeros([2], requires_grad=True), not for non-factories.
        w = ctorch.zeros([2, 3], requires_grad=True)
        self.assertTrue(w.requires_grad)
        self.assertFalse(ctorch.ones([2], dtype=ctorch.float64, requires_grad=False).requires_grad)
        (w * 2).sum().backward()
        self.assertEqual(w.grad.tolist(), [[2.0] * 3] * 2)
        with self.assertRaisesRegex(TypeError, r"add\(\): no overload accepts .*requires_grad=bool"):
            ctorch.add(w, w, requires_grad=True)


class SlowTensor(ctorch.Tensor):
    """Not exactly a ctorch.Tensor: the generated functions take their slow
    path (argtypes) for it, so the two paths can be compared."""
    __slots__ = ()


def slow(t):
    h = ctorch._rt.c_void_p()
    ctorch._rt.check(ctorch.lib.ctorch_tensor_ref(ctorch._rt.byref(h), t._h))
    s = object.__new__(SlowTensor)
    s._h = h
    return s


class FastPath(unittest.TestCase):
    """Exact handles and plain numbers go to the C function without argtypes
    (the fast path); anything else through argtypes. Both must pass the same
    C values: int64 (large and negative), size_t, double, C int (bool, enum),
    structs (Scalar), byref outputs and optional pointers, NULL."""

    def both(self, fn, x, *args, **kwargs):
        try:
            fast = ("ok", fn(x, *args, **kwargs))
        except ctorch.CtorchError as e:
            fast = ("error", str(e))
        try:
            res = ("ok", fn(slow(x), *args, **kwargs))
        except ctorch.CtorchError as e:
            res = ("error", str(e))
        self.assertEqual(fast[0], res[0], (fn.__name__, fast, res))
        if fast[0] == "ok":
            a, b = fast[1], res[1]
            self.assertIs(type(a), ctorch.Tensor)  # results are always exact Tensors
            self.assertEqual(a.dtype, b.dtype)
            self.assertEqual(a.shape, b.shape)
            self.assertTrue(close(a, b), (fn.__name__, a.tolist(), b.tolist()))
        else:
            self.assertEqual(fast[1], res[1])
        return fast

    def test_same_values_both_ways(self):
        x = ctorch.arange(12, dtype=ctorch.float32).reshape([3, 4])
        o = ctorch.ops
        self.both(o.add.Tensor, x, x)
        self.both(o.add.Tensor, x, x, alpha=-2.5)                       # struct, non-default
        self.both(o.add.Scalar, x, 3, 2)
        self.both(o.sum.dim_IntList, x, [0, 1], True)                   # int64 array + size_t + C int
        self.both(o.sum.dim_IntList, x, [1], False, dtype=ctorch.float64)  # optional enum pointer
        self.both(o.softmax.int, x, -1)                                  # negative int64
        self.both(o.softmax.int, x, 1, ctorch.float64)
        self.both(o.pdist.default, x, 1.5)                              # double
        self.both(o.narrow.default, x, 1, 1, 3)
        self.both(o.transpose.int, x, 0, 1)
        self.assertEqual(self.both(o.narrow.default, x, 0, (1 << 40) + 1, 1)[0], "error")  # int64, not truncated
        self.both(o.to.dtype, x, ctorch.int32)                           # required enum as C int
        self.both(o.clamp.default, x, None, 5)                           # optional Scalar: NULL and byref
        self.both(o.where.self, x > 4, x, x * 2)

    def test_guards_send_other_values_the_slow_way(self):
        x = ctorch.ones([2])
        # float for an int, int for a float, a non-Tensor: the slow path's argtypes decide.
        with self.assertRaises(Exception):
            ctorch.ops.softmax.int(x, 1.0)
        self.assertTrue(close(ctorch.ops.pdist.default(ctorch.ones([3, 2]), 2), ctorch.ops.pdist.default(ctorch.ones([3, 2]), 2.0)))
        with self.assertRaises(TypeError):
            ctorch.ops.add.Tensor(x, object())


class Autograd(unittest.TestCase):
    def test_backward_and_grad(self):
        x = ctorch.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = (x * x).sum()
        y.backward()
        self.assertEqual(x.grad.tolist(), [2.0, 4.0, 6.0])
        self.assertTrue(x.is_leaf)
        self.assertEqual(y.grad_fn, "SumBackward0")
        z = (x ** 3).sum()
        (g,) = ctorch.autograd.grad([z], [x])
        self.assertEqual(g.tolist(), [3.0, 12.0, 27.0])
        with ctorch.no_grad():
            w = x * 2
        self.assertFalse(w.requires_grad)
        self.assertTrue((x * 2).requires_grad)

    def test_optimizer(self):
        w = ctorch.tensor([5.0, -3.0], requires_grad=True)
        opt = ctorch.optim.SGD([w], lr=0.1)
        first = None
        for _ in range(50):
            loss = (w * w).sum()
            first = first if first is not None else loss.item()
            opt.zero_grad()
            loss.backward()
            opt.step()
        self.assertLess(loss.item(), first * 1e-3)
        self.assertAlmostEqual(opt.lr, 0.1)
        opt.lr = 0.01
        self.assertAlmostEqual(opt.lr, 0.01)
        adam = ctorch.optim.Adam([w], lr=1e-2, betas=(0.8, 0.9))
        adam.step()

    def test_data_loader(self):
        data = ctorch.arange(10.0).reshape([5, 2])
        targets = ctorch.arange(5)
        loader = ctorch.data.DataLoader(data, targets, batch_size=2, shuffle=True, seed=3)
        self.assertEqual(len(loader), 3)
        seen = sorted(v for _, y in loader for v in y.tolist())
        self.assertEqual(seen, [0, 1, 2, 3, 4])

    def test_data_loader_transform(self):
        # uint8 [3, 2, 2] images -> float32 [b, 1, 2, 2] / 255, per item, by the loader
        data = ctorch.tensor([[[0, 51], [102, 255]]] * 3, dtype=ctorch.uint8)
        t = ctorch._api.transform_convert_image_dtype(ctorch.float32)
        loader = ctorch.data.DataLoader(data, ctorch.arange(3), batch_size=2, transform=t)
        del t  # the loader keeps its own reference
        batches = [(x.shape, x.dtype, x.tolist()[0][0], y.tolist()) for x, y in loader]
        self.assertEqual([b[0] for b in batches], [(2, 1, 2, 2), (1, 1, 2, 2)])
        self.assertEqual(batches[0][1], ctorch.float32)
        f32 = lambda v: struct.unpack("f", struct.pack("f", v))[0]  # noqa: E731
        self.assertEqual(batches[0][2], [[0.0, f32(51 / 255)], [f32(102 / 255), 1.0]])
        self.assertEqual(batches[1][3], [2])


class Interop(unittest.TestCase):
    @unittest.skipIf(torch is None, "torch not importable")
    def test_dlpack_shares_memory(self):
        x = torch.arange(4.0)
        t = ctorch.from_torch(x)
        t.add_(1)
        self.assertEqual(x.tolist(), [1.0, 2.0, 3.0, 4.0])
        y = ctorch.to_torch(t)
        y.mul_(2)
        self.assertEqual(t.tolist(), [2.0, 4.0, 6.0, 8.0])
        self.assertEqual(ctorch.to_torch(ctorch.tensor([True, False])).tolist(), [True, False])

    def test_checkpoints(self):
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "sd.pt")
            ctorch.save_dict({"w": ctorch.ones([2]), "b": ctorch.zeros([3])}, p)
            back = ctorch.load_dict(p)
            self.assertEqual(list(back), ["w", "b"])
            self.assertEqual(back["w"].tolist(), [1.0, 1.0])
            if torch is not None:
                sd = torch.load(p, weights_only=False)  # 2.6+ refuses libtorch pickles by default (FACTS.md)
                self.assertEqual(sd["b"].tolist(), [0.0, 0.0, 0.0])
            q = os.path.join(d, "t.pt")
            ctorch.save(ctorch.arange(3), q)
            self.assertEqual(ctorch.load(q).tolist(), [0, 1, 2])
            # safetensors through the generated prototypes (api.json).
            s = os.path.join(d, "m.safetensors")
            ctorch.save_safetensors({"w": ctorch.ones([2]), "b": ctorch.arange(3)}, s, metadata={"format": "pt"})
            back, meta = ctorch.load_safetensors(s, metadata=True)
            self.assertEqual(sorted(back), ["b", "w"])
            self.assertEqual(back["b"].tolist(), [0, 1, 2])
            self.assertEqual(meta, {"format": "pt"})
            try:
                from safetensors.torch import load_file
            except ImportError:
                load_file = None
            if load_file is not None:
                self.assertEqual(load_file(s)["w"].tolist(), [1.0, 1.0])


class Errors(unittest.TestCase):
    def test_errors_carry_status_and_message(self):
        a, b = ctorch.ones([2]), ctorch.ones([3])
        with self.assertRaises(ctorch.CtorchError) as cm:
            a + b
        self.assertEqual(cm.exception.status_name, "CTORCH_RUNTIME")
        self.assertIn("ctorch_add_Tensor", str(cm.exception))
        with self.assertRaises(IndexError):
            ctorch.select(ctorch.ones([2, 2]), 5, 0)
        with self.assertRaises(TypeError):
            ctorch.ops.add.Tensor(a, 3)

    def test_memory_counter(self):
        ctorch.flush_frees()
        before = ctorch.memory_bytes()
        t = ctorch.empty([1 << 20])
        during = ctorch.memory_bytes()
        self.assertGreaterEqual(during - before, 4 << 20)
        del t
        self.assertEqual(ctorch.memory_bytes(), before)  # memory_bytes releases deferred frees first

    def test_abi(self):
        self.assertEqual(len(ctorch.abi_hash), 32)
        self.assertEqual(ctorch.__version__, ctorch._capi.CTORCH_VERSION)


class HeaderFunctions(unittest.TestCase):
    """ctorch.capi: the header's functions generated from api.json (outputs
    returned, buffers sized by buffer_size, handle classes, inline helpers)."""

    def test_outputs_and_buffers(self):
        c = ctorch.capi
        t = ctorch.arange(6).reshape([2, 3])
        self.assertEqual(c.tensor_dim(t), 2)
        self.assertEqual(c.tensor_sizes(t), (2, 3))           # "query" rule: ctorch_tensor_dim elements
        self.assertEqual(c.tensor_strides(t), (3, 1))
        self.assertEqual(len(c.tensor_copy_to(t)), 6 * 8)     # numel * dtype_size(dtype) bytes
        self.assertIs(c.tensor_is_contiguous(t), True)        # boolean outputs are bools
        self.assertIs(c.tensor_dtype(t), ctorch.int64)
        self.assertIn("CPULongType", c.tensor_to_string(t))   # new text, freed after decoding
        self.assertTrue(c.version())
        with self.assertRaises(ctorch.CtorchError):
            c.tensor_sizes(_disposed())
        msg = c.last_error_copy()                             # "reported" rule: asks, then copies all
        self.assertIn("ctorch_tensor_dim", msg)
        self.assertEqual(len(msg), len(c.last_error()))
        status, text = c.error_message(c.last_error_id())
        self.assertEqual(text, msg)
        self.assertEqual(status, ctorch._capi.ENUMS["ctorch_status"]["CTORCH_INVALID_ARGUMENT"])

    def test_arrays_sharing_a_length_must_agree(self):
        # names and tensors share one C length (api.json length_of): lists of
        # other lengths are refused before C reads past the shorter one.
        c = ctorch.capi
        x, y = ctorch.ones([2]), ctorch.zeros([3])
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "t.safetensors")
            cases = [
                lambda: c.safetensors_save(p, ["t"], [x], ["k1", "k2"], ["v1"]),
                lambda: c.safetensors_save(p, ["a"], [x, y], [], []),
                lambda: c.safetensors_save(p, ["a", "b"], [x], [], []),
                lambda: c.save_dict(os.path.join(d, "t.pt"), ["a"], [x, y]),
                lambda: c.value_dict_str(["a", "b"], [c.value_int(1)]),
            ]
            for call in cases:
                with self.assertRaisesRegex(ValueError, r"^ctorch_\w+: \w+ has \d, \w+ has \d entries; they share one length"):
                    call()
            self.assertEqual(os.listdir(d), [])  # nothing written
            c.safetensors_save(p, ["a", "b"], [x, y], ["k"], ["v"])
            self.assertEqual(os.listdir(d), ["t.safetensors"])

    def test_handle_classes(self):
        c = ctorch.capi
        s = c.autograd_scope_enter(0)
        self.assertIsInstance(s, c.AutogradScope)
        self.assertFalse(c.autograd_is_grad_enabled())
        c.autograd_scope_leave(s)                              # "when": "always": the object lets go of it
        self.assertIsNone(s.handle)
        self.assertTrue(c.autograd_is_grad_enabled())
        w = ctorch.ones([3]).requires_grad_()
        opt = c.optimizer_new(0, [w], None)
        self.assertIsInstance(opt, c.Optimizer)
        self.assertEqual(opt.num_param_groups(), 1)          # methods: ctorch_optimizer_* on the class
        opt.set_lr(0, 0.25)
        self.assertEqual(opt.get_lr(0), 0.25)
        opt.dispose()
        self.assertIsNone(opt.handle)
        self.assertIn("ctorch_tensor_free", c.NOT_WRAPPED)

    def test_operator_by_name(self):
        # shim/dispatch/ through the generated header functions: aten::add.Tensor
        # by name, alpha by keyword, equal to the typed call.
        c = ctorch.capi
        a, b = ctorch.tensor([[1.0, 2.0], [3.0, 4.0]]), ctorch.tensor([[0.5, -1.0], [2.0, 0.0]])
        op = c.op_find("aten::add", "Tensor")
        self.assertEqual(c.op_schema(op), "aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor")
        r = c.op_call(op, [c.value_tensor(a), c.value_tensor(b)], ["alpha"], [c.value_double(2.0)])
        self.assertTrue(close(c.value_to_tensor(r), [[2.0, 0.0], [7.0, 4.0]]))
        with self.assertRaises(ctorch.CtorchError) as cm:
            c.op_call(op, [c.value_tensor(a), c.value_string("x")], None, None)
        self.assertIn("argument 1 'other'", str(cm.exception))
        self.assertIn("ctorch_op_call_unchecked", c.NOT_WRAPPED)  # UNSAFE: C only

    def test_inline_helpers(self):
        s = ctorch._capi.scalar_bool(7)
        self.assertEqual((s.kind, s.i, s.reserved), (2, 1, 0))
        s = ctorch._capi.scalar_complex(1.5, -2.0)
        self.assertEqual((s.kind, s.f, s.imag), (3, 1.5, -2.0))
        self.assertEqual(ctorch.add(ctorch.ones([1], dtype=ctorch.int64), True).tolist(), [2])


def _disposed():
    t = ctorch.ones([1])
    t.dispose()
    return t


class Package(unittest.TestCase):
    def test_one_module_called_ctorch(self):
        # The former hand-written python/ctorch.py is ctorch.interop: its
        # names are the package's, and the source tree has no other module
        # called ctorch that could shadow it on sys.path.
        for name in ("from_torch", "to_torch", "to_dlpack_capsule", "save", "load", "save_dict", "load_dict"):
            self.assertIs(getattr(ctorch, name), getattr(ctorch.interop, name), name)
        self.assertIs(ctorch.Tensor, ctorch._rt.Tensor)
        self.assertIs(ctorch.CtorchError, ctorch._rt.CtorchError)
        self.assertIs(ctorch.lib, ctorch._rt.lib)
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        found = []
        for d, dirs, files in os.walk(root):
            dirs[:] = [x for x in dirs if not x.startswith((".", "build")) and x != "node_modules"]
            if "ctorch.py" in files or (os.path.basename(d) == "ctorch" and "__init__.py" in files):
                found.append(os.path.relpath(d, root))
        self.assertEqual(found, [os.path.join("bindings-gen", "python", "ctorch")])

    def test_handles_adopted_and_released(self):
        h = ctorch._rt.c_void_p()
        # A name keeps the tensor alive over the call: a temporary's handle may
        # be released by the batch its collection completes (_rt, FREE_BATCH).
        a = ctorch.arange(3)
        ctorch._rt.check(ctorch.lib.ctorch_tensor_ref(ctorch._rt.byref(h), a._h))
        t = ctorch.from_handle(h.value)
        self.assertEqual(t.tolist(), [0, 1, 2])
        self.assertEqual(t.tobytes(), bytes(ctorch.arange(3).tobytes()))
        self.assertEqual(t.element_size(), 8)
        self.assertIsNone(ctorch.from_handle(0))

    def test_pip_install(self):
        pkg = os.path.dirname(os.path.dirname(os.path.abspath(ctorch.__file__)))
        with tempfile.TemporaryDirectory() as d:
            r = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                                "--no-index", "--target", d, pkg], capture_output=True, text=True)
            if r.returncode != 0 and "No module named pip" in r.stderr:
                self.skipTest("pip is not installed for this Python")
            self.assertEqual(r.returncode, 0, r.stderr[-2000:])
            code = "import ctorch; print(ctorch.__file__, ctorch.add(ctorch.ones([1]), 1).item())"
            env = dict(os.environ, PYTHONPATH=d, CTORCH_LIB=ctorch._rt.LIB_PATH)
            out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=d)
            self.assertEqual(out.returncode, 0, out.stderr[-2000:])
            self.assertTrue(out.stdout.startswith(d), out.stdout)
            self.assertTrue(out.stdout.strip().endswith("2.0"), out.stdout)


class BoundaryChecks(unittest.TestCase):
    """Integers past the C type's range are
    refused by parameter name (ctypes would wrap them), tensor() takes what
    torch.tensor takes and words its refusals, each iterator of a loader has
    its own epoch, modules can be disposed."""

    def assertRefused(self, fn, *words, exc=OverflowError):
        with self.assertRaises(exc) as cm:
            fn()
        for w in words:
            self.assertIn(w, str(cm.exception))

    def test_integers_past_int64_refused(self):
        t = ctorch.arange(3.0)
        self.assertRefused(lambda: t + 2 ** 70, "'other'", "int64")
        self.assertRefused(lambda: ctorch.add(t, 2 ** 70), "'other'")
        self.assertRefused(lambda: ctorch.zeros([2 ** 64 + 2]), "'size'", "out of range")
        self.assertRefused(lambda: ctorch.arange(10).narrow(0, 2 ** 64 + 1, 2), "'start'")  # the fast path
        self.assertRefused(lambda: ctorch.ops.narrow.default(ctorch.arange(10), True, 2 ** 64 + 1, 2), "'start'")  # slow path
        self.assertRefused(lambda: ctorch.sum(t, dim=[2 ** 63]), "'dim'")
        self.assertRefused(lambda: ctorch.data.DataLoader(t, batch_size=2 ** 64 + 2), "'batch_size'")
        self.assertRefused(lambda: ctorch.manual_seed(2 ** 64), "'seed'", "out of range for a seed")
        self.assertRefused(lambda: ctorch.manual_seed("7"), "'seed'", exc=TypeError)
        # The edges themselves pass.
        self.assertEqual((ctorch.zeros([1], dtype=ctorch.int64) + (2 ** 63 - 1)).item(), 2 ** 63 - 1)
        self.assertEqual((ctorch.zeros([1], dtype=ctorch.int64) + (-2 ** 63)).item(), -2 ** 63)
        if torch is not None:
            with self.assertRaises((OverflowError, RuntimeError, ValueError, TypeError)):
                torch.zeros([2 ** 64 + 2])  # PyTorch refuses too

    def test_tensor_inputs(self):
        self.assertEqual(ctorch.tensor(range(5)).tolist(), [0, 1, 2, 3, 4])
        self.assertEqual(ctorch.tensor(range(5)).dtype, ctorch.int64)
        a = ctorch.tensor(array.array("f", [1.5, 2.0]))
        self.assertEqual((a.tolist(), a.dtype), ([1.5, 2.0], ctorch.float32))
        self.assertEqual(ctorch.tensor(array.array("H", [1, 2])).dtype, ctorch.int64)
        self.assertEqual(ctorch.tensor(memoryview(b"ab")).tolist(), [97, 98])
        self.assertEqual(ctorch.tensor(bytearray(b"ab")).tolist(), [97, 98])
        self.assertRefused(lambda: ctorch.tensor(b"ab"), "invalid data type 'bytes'", exc=TypeError)
        self.assertRefused(lambda: ctorch.tensor([1.0], dtype="float32"), "'dtype'", "ctorch.float32", exc=TypeError)
        self.assertRefused(lambda: ctorch.zeros([2]).to("float32"), "ctorch.float32", exc=TypeError)
        self.assertRefused(lambda: ctorch.tensor([300], dtype=ctorch.uint8), "300", "uint8", exc=RuntimeError)
        self.assertRefused(lambda: ctorch.tensor([-129], dtype=ctorch.int8), "int8", exc=RuntimeError)
        self.assertRefused(lambda: ctorch.tensor([2 ** 70]), "int64", exc=RuntimeError)
        self.assertEqual(ctorch.tensor([255], dtype=ctorch.uint8).tolist(), [255])
        self.assertEqual(ctorch.tensor([1e300], dtype=ctorch.float32).tolist(), [math.inf])  # as torch rounds
        if torch is not None:
            for data in (range(5), array.array("f", [1.5, 2.0]), memoryview(b"ab"), bytearray(b"ab")):
                want = torch.tensor(data)
                got = ctorch.tensor(data)
                self.assertEqual((got.tolist(), str(got.dtype)[7:]), (want.tolist(), str(want.dtype)[6:]))
            with self.assertRaises(RuntimeError):
                torch.tensor([300], dtype=torch.uint8)
        try:
            import numpy as np
        except ImportError:
            return
        self.assertRefused(lambda: ctorch.tensor(np.zeros(2, dtype=np.uint16)), "numpy.uint16",
                           "supported types", exc=TypeError)
        self.assertEqual(ctorch.tensor(np.array([1.5, 2.5], dtype=">f8")).tolist(), [1.5, 2.5])

    def test_loader_iterators_have_their_own_epoch(self):
        loader = ctorch.data.DataLoader(ctorch.arange(100), batch_size=10)
        pairs = [(a.tolist(), b.tolist()) for a, b in zip(loader, loader)]
        self.assertEqual(len(pairs), 10)
        self.assertEqual([a for a, _ in pairs], [list(range(i, i + 10)) for i in range(0, 100, 10)])
        self.assertEqual([b for _, b in pairs], [a for a, _ in pairs])
        shuffled = ctorch.data.DataLoader(ctorch.arange(100), batch_size=7, shuffle=True, seed=5)
        xs, ys = [], []
        for a, b in zip(shuffled, shuffled):
            xs += a.tolist()
            ys += b.tolist()
        self.assertEqual((sorted(xs), sorted(ys)), (list(range(100)), list(range(100))))
        # Each iterator its own epoch: the next iteration is the next epoch's order, whole.
        self.assertEqual(sorted(v for b in shuffled for v in b.tolist()), list(range(100)))
        if torch is not None:  # epoch e's order is torch.randperm from the epoch's seed, as the C loader documents
            seed = ctorch.capi.data_epoch_seed(5, 1)
            want = torch.randperm(100, generator=torch.Generator().manual_seed(seed)).tolist()
            self.assertEqual(ys, want)

    def test_module_dispose(self):
        m = ctorch.nn.Linear(2, 2)
        w = m.weight
        m.dispose()
        m.dispose()  # twice is harmless
        self.assertEqual(w.shape, (2, 2))  # tensors taken from it hold their own references
        with self.assertRaises(ctorch.CtorchError):
            m(ctorch.zeros([1, 2]))


if __name__ == "__main__":
    unittest.main(verbosity=2)
