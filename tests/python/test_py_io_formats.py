"""Bytes, streams and NumPy files against Python itself, in one process: torch.save bytes
through memory and streams (torch.save/torch.load with io.BytesIO), NumPy's
.npy/.npz (numpy.save/savez/savez_compressed/load), and str(tensor) under
torch.set_printoptions, byte for byte (ctorch_tensor_format).

Run by ctest with the Python whose torch matches the build's libtorch
(CTORCH_TORCH_PYTHON), CTORCH_LIB and PYTHONPATH set; without NumPy it
reports skipped (exit 77).
"""
import ctypes
import io
import os
import struct
import sys
import tempfile
import unittest
import zipfile

try:
    import numpy as np
except ImportError:
    print("skipped: this Python has no numpy (scripts/deps and scripts/torch-env install it)")
    sys.exit(77)
import torch

import ctorch
from ctorch import _api
from ctorch._rt import CtorchError
import interop_util
from interop_util import DTYPES

OLD = torch.__version__.startswith("1.")
_lib = _api._lib
WRITE_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t)
READ_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t,
                           ctypes.POINTER(ctypes.c_size_t))


def sample(dtype, shape=(3, 5), seed=11):
    return interop_util.sample(dtype, shape, seed=seed)


def c(x):
    return ctorch.from_torch(x)


def t(h):
    return ctorch.to_torch(h)


def read_file(path):
    with open(path, "rb") as f:
        return f.read()


def status_of(fn, *args):
    try:
        fn(*args)
    except CtorchError as e:
        return e.status_name
    return "CTORCH_OK"


class Buffers(unittest.TestCase):
    def test_every_dtype_both_ways(self):
        for dt in DTYPES:
            with self.subTest(dtype=dt):
                x = sample(dt)
                f = io.BytesIO()
                torch.save(x, f)
                self.assertTrue(torch.equal(t(_api.load_from_buffer(f.getvalue())), x))
                y = torch.load(io.BytesIO(_api.save_to_buffer(c(x))))
                self.assertEqual(y.dtype, dt)
                self.assertTrue(torch.equal(y, x))

    def test_same_bytes_as_the_file_form(self):
        with tempfile.TemporaryDirectory() as d:
            x = torch.arange(12.0).reshape(3, 4).t()
            p = os.path.join(d, "x.pt")
            ctorch.save(c(x), p)
            self.assertEqual(read_file(p), _api.save_to_buffer(c(x)))
            sd = {"a": c(x), "b": c(torch.ones(2, dtype=torch.int64))}
            ctorch.save_dict(sd, p)
            td = _api.tensor_dict_new()
            for k, v in sd.items():
                td.set(k, v)
            self.assertEqual(read_file(p), _api.tensor_dict_save_to_buffer(td))

    def test_state_dict_and_file_objects(self):
        m = torch.nn.Linear(3, 2)
        f = io.BytesIO()
        torch.save(m.state_dict(), f)
        f.seek(0)
        got = ctorch.load(f)
        self.assertEqual(list(got), ["weight", "bias"])
        self.assertTrue(torch.equal(t(got["weight"]), m.weight.detach()))
        out = io.BytesIO()
        ctorch.save({k: c(v) for k, v in m.state_dict().items()}, out)
        out.seek(0)
        back = torch.load(out)
        self.assertTrue(torch.equal(back["bias"], m.bias.detach()))
        f = io.BytesIO()
        ctorch.save(c(torch.tensor([1.5, 2.5])), f)
        f.seek(0)
        self.assertTrue(torch.equal(t(ctorch.load(f)), torch.tensor([1.5, 2.5])))

    def test_optimizer_state(self):
        p = c(torch.tensor([1.0, -2.0, 3.0], requires_grad=True))
        opt = ctorch.optim.Adam([p], lr=0.1)
        _api.tensor_set_grad(p, c(torch.tensor([0.5, -1.0, 2.0])))
        opt.step()
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "o.pt")
            opt.save_state_dict(path)
            data = _api.optimizer_save_state_dict_to_buffer(opt)
            self.assertEqual(read_file(path), data)
        sd = torch.load(io.BytesIO(data))
        self.assertEqual(sd["state"][0]["step"].item() if torch.is_tensor(sd["state"][0]["step"]) else sd["state"][0]["step"], 1)
        opt2 = ctorch.optim.Adam([p], lr=0.5)
        _api.optimizer_load_state_dict_from_buffer(opt2, data)
        self.assertAlmostEqual(opt2.lr, 0.1)
        # The stream forms: the same bytes out, the same state in.
        chunks = []

        @WRITE_FN
        def write(user, ptr, n):
            chunks.append(ctypes.string_at(ptr, n))
            return 0

        self.assertEqual(_lib.ctorch_optimizer_save_state_dict_to_stream(write, None, _api._h(opt)), 0)
        self.assertEqual(b"".join(chunks), data)
        src = io.BytesIO(data)

        @READ_FN
        def read(user, buf, cap, n_read):
            part = src.read(cap)
            ctypes.memmove(buf, part, len(part))
            n_read[0] = len(part)
            return 0

        opt3 = ctorch.optim.Adam([p], lr=0.7)
        self.assertEqual(_lib.ctorch_optimizer_load_state_dict_from_stream(_api._h(opt3), read, None), 0)
        self.assertAlmostEqual(opt3.lr, 0.1)

    def test_streams(self):
        x = sample(torch.float32, (4, 4))
        chunks = []

        @WRITE_FN
        def write(user, data, n):
            chunks.append(ctypes.string_at(data, n))
            return 0

        h = _api._h(c(x))
        self.assertEqual(_lib.ctorch_save_to_stream(write, None, h), 0)
        whole = b"".join(chunks)
        self.assertEqual(whole, _api.save_to_buffer(c(x)))
        self.assertGreater(len(chunks), 1)

        src = io.BytesIO(whole)

        @READ_FN
        def read(user, buf, cap, n_read):
            part = src.read(min(cap, 7))  # short reads on purpose
            ctypes.memmove(buf, part, len(part))
            n_read[0] = len(part)
            return 0

        out = ctypes.c_void_p()
        self.assertEqual(_lib.ctorch_load_from_stream(ctypes.byref(out), read, None), 0)
        got = ctorch.interop.from_handle(out.value)
        self.assertTrue(torch.equal(t(got), x))

        @WRITE_FN
        def failing(user, data, n):
            return 8  # CTORCH_IO

        self.assertEqual(_lib.ctorch_save_to_stream(failing, None, h), 8)
        self.assertIn("write callback", _api.last_error())

        @READ_FN
        def liar(user, buf, cap, n_read):
            n_read[0] = cap + 1
            return 0

        self.assertNotEqual(_lib.ctorch_load_from_stream(ctypes.byref(out), liar, None), 0)
        self.assertIsNone(out.value)

        # A state dict through the dict stream forms.
        td = _api.tensor_dict_new()
        td.set("x", c(x))
        chunks.clear()
        self.assertEqual(_lib.ctorch_tensor_dict_save_to_stream(write, None, _api._h(td)), 0)
        self.assertEqual(b"".join(chunks), _api.tensor_dict_save_to_buffer(td))
        src = io.BytesIO(b"".join(chunks))
        d = ctypes.c_void_p()
        self.assertEqual(_lib.ctorch_load_dict_from_stream(ctypes.byref(d), read, None), 0)
        got = _api.load_dict_from_buffer(b"".join(chunks))
        self.assertTrue(torch.equal(t(got.get(0)), x))
        _lib.ctorch_tensor_dict_free(d)

    def test_hostile_buffers(self):
        good = _api.save_to_buffer(c(torch.arange(100.0)))
        for bad in (b"", b"PK", good[: len(good) // 2], good[:-1], bytes(200)):
            with self.subTest(n=len(bad)):
                self.assertEqual(status_of(_api.load_from_buffer, bad), "CTORCH_VALUE")
        self.assertEqual(status_of(_api.load_dict_from_buffer, good), "CTORCH_TYPE")


class _Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 3)
        self.register_buffer("scale", torch.tensor([1.0, -2.0, 0.5]))

    def forward(self, x):
        return torch.tanh(self.fc(x)) * self.scale


def _leak(t: torch.Tensor, dst: str) -> None:
    torch.save(t, dst)


class _Leaky(torch.nn.Module):
    def forward(self, x, dst: str):
        _leak(x, dst)
        return x


class TorchScriptInMemory(unittest.TestCase):
    """ctorch_module_save_to_buffer / _load_from_buffer (and the streams)
    against torch.jit.save / torch.jit.load with io.BytesIO, through
    ctorch.jit.load / ctorch.jit.save."""

    @classmethod
    def setUpClass(cls):
        import warnings
        warnings.filterwarnings("ignore", category=FutureWarning, module=r"torch\.jit")
        torch.manual_seed(3)
        cls.sm = torch.jit.script(_Net().eval())
        cls.x = torch.randn(5, 4)
        with torch.no_grad():
            cls.want = cls.sm(cls.x)
        f = io.BytesIO()
        torch.jit.save(cls.sm, f)
        cls.py_bytes = f.getvalue()

    def forward(self, m):
        return t(_api.module_forward_tensors(m, [c(self.x)]))

    def test_python_bytes_load_here_and_ours_load_in_python(self):
        m = ctorch.jit.load(io.BytesIO(self.py_bytes))
        self.assertTrue(torch.equal(self.forward(m), self.want))
        m2 = ctorch.jit.load(self.py_bytes)  # bytes too
        self.assertTrue(torch.equal(self.forward(m2), self.want))
        out = io.BytesIO()
        ctorch.jit.save(m, out)
        ours = out.getvalue()
        self.assertEqual(ours, _api.module_save_to_buffer(m))
        back = torch.jit.load(io.BytesIO(ours))
        with torch.no_grad():
            self.assertTrue(torch.equal(back(self.x), self.want))
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "m.pt")
            ctorch.jit.save(m, p)
            self.assertEqual(read_file(p), ours)  # the file form's bytes
            self.assertTrue(torch.equal(self.forward(ctorch.jit.load(p)), self.want))

    def test_streams(self):
        m = ctorch.jit.load(self.py_bytes)
        chunks = []

        @WRITE_FN
        def write(user, data, n):
            chunks.append(ctypes.string_at(data, n))
            return 0

        self.assertEqual(_lib.ctorch_module_save_to_stream(write, None, _api._h(m)), 0)
        whole = b"".join(chunks)
        self.assertEqual(whole, _api.module_save_to_buffer(m))
        src = io.BytesIO(self.py_bytes)

        @READ_FN
        def read(user, buf, cap, n_read):
            part = src.read(min(cap, 1000))
            ctypes.memmove(buf, part, len(part))
            n_read[0] = len(part)
            return 0

        out = ctypes.c_void_p()
        self.assertEqual(_lib.ctorch_module_load_from_stream(ctypes.byref(out), read, None, None, 0), 0)
        got = _api._adopt(_api.Module, out.value)
        self.assertTrue(torch.equal(self.forward(got), self.want))

    def test_hostile_bytes(self):
        good = self.py_bytes
        for bad in (b"", b"PK", good[: len(good) // 2], good[:-1], bytes(300), b"\0\0\0\0PTMF" + bytes(64)):
            with self.subTest(n=len(bad)):
                self.assertEqual(status_of(ctorch.jit.load, bad), "CTORCH_VALUE")
        # A checkpoint is a zip too, but no module.
        self.assertEqual(status_of(ctorch.jit.load, _api.save_to_buffer(c(torch.ones(2)))), "CTORCH_VALUE")
        # Code that writes files: refused unless the caller allows it.
        f = io.BytesIO()
        torch.jit.save(torch.jit.script(_Leaky()), f)
        self.assertEqual(status_of(ctorch.jit.load, f.getvalue()), "CTORCH_VALUE")
        self.assertIn("aten::save", _api.last_error())
        self.assertIn("the buffer", _api.last_error())
        allowed = ctorch.jit.load(f.getvalue(), flags=1)  # CTORCH_MODULE_LOAD_ALLOW_IO
        self.assertIsNotNone(allowed)
        self.assertEqual(status_of(ctorch.jit.load, good, None, 8), "CTORCH_INVALID_ARGUMENT")


# torch dtype -> NumPy dtype for the dtypes both have.
NP = {torch.bool: np.bool_, torch.uint8: np.uint8, torch.int8: np.int8, torch.int16: np.int16,
      torch.int32: np.int32, torch.int64: np.int64, torch.float16: np.float16, torch.float32: np.float32,
      torch.float64: np.float64, torch.complex64: np.complex64, torch.complex128: np.complex128}
WIDE_UNSIGNED = [] if OLD else [(torch.uint16, np.uint16), (torch.uint32, np.uint32), (torch.uint64, np.uint64)]


def npy_bytes(a):
    f = io.BytesIO()
    np.save(f, a)
    return f.getvalue()


class Npy(unittest.TestCase):
    def test_every_dtype_same_bytes_as_numpy(self):
        for dt, nt in list(NP.items()) + WIDE_UNSIGNED:
            for shape in ((3, 5), (), (0,), (2, 0, 3), (7,)):
                with self.subTest(dtype=dt, shape=shape):
                    x = sample(dt if dt in NP else torch.int64, shape).abs().to(dt) if dt not in NP else sample(dt, shape)
                    a = x.numpy() if dt in NP else x.to(torch.int64).numpy().astype(nt)
                    self.assertEqual(_api.npy_save_to_buffer(c(x)), npy_bytes(a))
                    y = _api.npy_load_from_buffer(npy_bytes(a))
                    self.assertEqual(y.dtype, c(x).dtype)
                    if dt in NP:
                        self.assertTrue(torch.equal(t(y), x))
                    else:  # DLPack has no uint16-64 on every torch: compare as int64
                        self.assertEqual(y.to(ctorch.int64).tolist(), x.to(torch.int64).tolist())

    def test_non_contiguous_and_file_form(self):
        x = torch.arange(24, dtype=torch.float64).reshape(4, 6)[:, ::2].t()
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "x.npy")
            ctorch.save_npy(c(x), p)
            self.assertEqual(read_file(p), npy_bytes(x.numpy()))
            self.assertTrue(np.array_equal(np.load(p), x.numpy()))
            np.save(p, x.numpy() * 2)
            self.assertTrue(torch.equal(t(ctorch.load_npy(p)), x * 2))

    def test_fortran_order_and_big_endian(self):
        a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
        for arr in (np.asfortranarray(a), a.astype(">f4"), np.asfortranarray(a.astype(">i2")),
                    (a + 1j * a).astype(">c16"), a.astype(">u1"), np.asfortranarray(a.astype(">f8"))):
            with self.subTest(descr=arr.dtype.str, fortran=arr.flags.f_contiguous):
                got = t(_api.npy_load_from_buffer(npy_bytes(arr)))
                self.assertTrue(np.array_equal(got.numpy(), arr))

    def test_npz(self):
        xs = {"w": np.arange(6, dtype=np.float32).reshape(2, 3), "b": np.array([True, False]),
              "z": np.zeros((0, 2), dtype=np.int16), "c": np.array(2.5 + 1j)}
        for saver in (np.savez, np.savez_compressed):
            with self.subTest(saver=saver.__name__):
                f = io.BytesIO()
                saver(f, **xs)
                d = _api.npz_load_from_buffer(f.getvalue())
                self.assertEqual([d.key(i) for i in range(d.size())], list(xs))
                for i, k in enumerate(xs):
                    self.assertTrue(np.array_equal(t(d.get(i)).numpy(), xs[k]))
        td = _api.tensor_dict_new()
        for k, v in xs.items():
            td.set(k, c(torch.from_numpy(v)))
        data = _api.npz_save_to_buffer(td)
        back = np.load(io.BytesIO(data))
        self.assertEqual(list(back.files), list(xs))
        for k in xs:
            self.assertTrue(np.array_equal(back[k], xs[k]))
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            for k in xs:
                self.assertEqual(z.read(k + ".npy"), npy_bytes(xs[k]))
        f = io.BytesIO()
        np.savez(f)
        self.assertEqual(_api.npz_load_from_buffer(f.getvalue()).size(), 0)

    def test_refusals(self):
        self.assertEqual(status_of(_api.npy_save_to_buffer, c(torch.ones(2, dtype=torch.bfloat16))),
                         "CTORCH_NOT_IMPLEMENTED")
        u16 = npy_bytes(np.arange(3, dtype=np.uint16))
        self.assertEqual(status_of(_api.npy_load_from_buffer, u16), "CTORCH_NOT_IMPLEMENTED" if OLD else "CTORCH_OK")

        def with_header(h, data=b"", version=1):
            h = h.encode() + b"\n"
            pre = b"\x93NUMPY" + bytes([version, 0]) + (struct.pack("<H", len(h)) if version == 1 else struct.pack("<I", len(h)))
            return pre + h + data

        good = npy_bytes(np.arange(6, dtype=np.int32))
        cases = {
            "magic": b"\x93NUMPZ" + good[6:],
            "version": b"\x93NUMPY\x04\x00" + good[8:],
            "truncated data": good[:-1],
            "truncated header": good[:40],
            "header past the end": b"\x93NUMPY\x01\x00\xff\xff{",
            "huge v2 header": b"\x93NUMPY\x02\x00\xff\xff\xff\x7f{",
            "object": with_header("{'descr': '|O', 'fortran_order': False, 'shape': (1,), }", bytes(8)),
            "unicode": with_header("{'descr': '<U3', 'fortran_order': False, 'shape': (1,), }", bytes(12)),
            "structured": with_header("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }", bytes(4)),
            "overflow": with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 16), }", bytes(4)),
            "short data": with_header("{'descr': '<f8', 'fortran_order': False, 'shape': (1000000000,), }", bytes(64)),
            "extra key": with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1, }", bytes(4)),
            "missing key": with_header("{'descr': '<f4', 'shape': (1,), }", bytes(4)),
            "negative": with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }", bytes(4)),
            "code": with_header("__import__('os').system('true')", bytes(4)),
            "bad bool": with_header("{'descr': '<f4', 'fortran_order': 1, 'shape': (1,), }", bytes(4)),
        }
        for name, data in cases.items():
            with self.subTest(case=name):
                self.assertEqual(status_of(_api.npy_load_from_buffer, data), "CTORCH_VALUE")
        # A bool byte that is not 0/1 loads as True (never a bool holding 5).
        b = with_header("{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }", b"\x00\x05\x01")
        self.assertEqual(t(_api.npy_load_from_buffer(b)).tolist(), [False, True, True])
        z = io.BytesIO()
        with zipfile.ZipFile(z, "w") as zf:
            zf.writestr("notes.txt", b"hello")
        self.assertEqual(status_of(_api.npz_load_from_buffer, z.getvalue()), "CTORCH_VALUE")


def py_str(x, **opts):
    torch.set_printoptions(profile="default", sci_mode=None)
    try:
        torch.set_printoptions(**opts)
        return str(x)
    finally:
        torch.set_printoptions(profile="default", sci_mode=None)


def c_str(x, precision=-1, threshold=-1, edgeitems=-1, linewidth=-1, sci_mode=None):
    sci = -1 if sci_mode is None else int(sci_mode)
    return _api.tensor_format(c(x), precision, threshold, edgeitems, linewidth, sci)


class Printing(unittest.TestCase):
    def cases(self):
        g = torch.Generator().manual_seed(5)
        floats = [torch.randn(3, 4, generator=g), torch.tensor([1.0, 2.0, -3.0]), torch.tensor([1e-5, 1.0]),
                  torch.tensor([1e10, 1.0, float("nan"), float("inf"), -float("inf")]), torch.tensor([0.0, -0.0]),
                  torch.tensor([float("nan")]), torch.tensor([123456789.0, 1.5]), torch.tensor(3.25),
                  torch.tensor([1.0, 1e5]), torch.randn(2, 3, 4, generator=g) * 1000, torch.tensor([-1.0, 2.0])]
        out = []
        for x in floats:
            for dt in (torch.float32, torch.float64, torch.float16, torch.bfloat16):
                out.append(x.to(dt))
        for dt in (torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8, torch.bool):
            out.append(sample(dt, (4, 6)))
            out.append(sample(dt, ()))
        out += [torch.randn(3, 2, dtype=torch.complex64, generator=g), torch.tensor([1 - 2j, -0.5 + 0j, 3j]),
                torch.tensor([1e-6 + 1e6j]).to(torch.complex128), torch.tensor(1 + 1j)]
        out += [torch.empty(0), torch.empty(2, 0), torch.empty(0, dtype=torch.int64), torch.empty(0, 3, dtype=torch.bool)]
        out += [torch.arange(11000), torch.arange(11000.0).reshape(110, 100) / 7, torch.randn(4, 5, 6, 7, generator=g),
                torch.arange(2000, dtype=torch.int32).reshape(2, 1000), torch.randn(1001, 2, generator=g),
                torch.arange(30.0).reshape(5, 6).t()]
        if not OLD:
            out += [torch.arange(5).to(torch.uint16), torch.tensor([2**64 - 1, 3], dtype=torch.uint64)]
        return out

    def test_defaults(self):
        for x in self.cases():
            with self.subTest(dtype=x.dtype, shape=tuple(x.shape)):
                self.assertEqual(c_str(x), py_str(x))

    def test_options(self):
        opts = [dict(precision=2), dict(precision=8), dict(sci_mode=True), dict(sci_mode=False),
                dict(threshold=10), dict(threshold=10, edgeitems=1), dict(linewidth=30), dict(linewidth=200),
                dict(threshold=5, edgeitems=2, linewidth=40, precision=3, sci_mode=True)]
        if not OLD:
            opts.append(dict(threshold=10, edgeitems=0))
        for o in opts:
            for x in self.cases():
                with self.subTest(opts=o, dtype=x.dtype, shape=tuple(x.shape)):
                    self.assertEqual(c_str(x, **o), py_str(x, **o))

    def test_autograd_suffixes(self):
        w = torch.tensor([1.0, 2.0], requires_grad=True)
        cw = c(torch.tensor([1.0, 2.0]))
        _api.tensor_set_requires_grad(cw, True)
        self.assertEqual(_api.tensor_format(cw, -1, -1, -1, -1, -1), py_str(w))
        y = cw * cw
        self.assertEqual(_api.tensor_format(y, -1, -1, -1, -1, -1), "tensor([1., 4.], grad_fn=<MulBackward0>)")

    def test_summarised_is_short(self):
        s = c_str(torch.arange(11000))
        self.assertEqual(s, "tensor([    0,     1,     2,  ..., 10997, 10998, 10999])")
        self.assertEqual(repr(c(torch.arange(11000))), s)

    def test_bad_arguments(self):
        x = c(torch.ones(2))
        self.assertEqual(status_of(_api.tensor_format, x, -1, -1, -1, -1, 2), "CTORCH_INVALID_ARGUMENT")
        self.assertEqual(status_of(_api.tensor_format, x, 5000, -1, -1, -1, -1), "CTORCH_INVALID_ARGUMENT")
        big = c(torch.arange(100))
        if OLD:
            self.assertEqual(status_of(_api.tensor_format, big, -1, 10, 0, -1, -1), "CTORCH_VALUE")


if __name__ == "__main__":
    unittest.main()
