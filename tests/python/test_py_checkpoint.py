"""Checkpoints crossing between ctorch (C) and Python's torch.save/torch.load.

Run by ctest with the Python whose torch matches the build's libtorch
(CTORCH_TORCH_PYTHON), CTORCH_LIB and PYTHONPATH set.
"""
import collections
import os
import struct
import unittest
import zipfile

import torch
from torch import nn

import ctorch
import interop_util
from interop_util import DTYPES

def sample(dtype):
    return interop_util.sample(dtype, (3, 5), seed=3)


def model():
    torch.manual_seed(0)
    m = nn.Sequential(nn.Conv2d(1, 3, 3), nn.BatchNorm2d(3), nn.ReLU(), nn.Flatten(), nn.Linear(3 * 4 * 4, 2))
    m.train()
    with torch.no_grad():
        m(torch.randn(4, 1, 6, 6))  # running stats and num_batches_tracked move
    return m


class Base(interop_util.TempDirTest):
    pass


class CToPython(Base):
    def test_tensor_every_dtype(self):
        for dt in DTYPES:
            with self.subTest(dtype=dt):
                x = sample(dt)
                ctorch.save(ctorch.from_torch(x), self.path("t.pt"))
                y = torch.load(self.path("t.pt"))
                self.assertEqual(y.dtype, dt)
                self.assertTrue(torch.equal(x, y))

    def test_views_and_zero_dim(self):
        base = torch.arange(40, dtype=torch.float32).reshape(5, 8)
        for x in (base[1:, ::3], base.t(), torch.tensor(2.5), torch.empty(0, 4)):
            ctorch.save(ctorch.from_torch(x), self.path("v.pt"))
            y = torch.load(self.path("v.pt"))
            self.assertEqual(y.shape, x.shape)
            self.assertTrue(torch.equal(x, y))

    def test_weights_only_load(self):
        # PyTorch >= 2.6 loads with weights_only=True by default; ask for it
        # on older ones (1.13 has the option).
        x = torch.randn(3, 4)
        ctorch.save_dict({"x": ctorch.from_torch(x), "xt": ctorch.from_torch(x.t())}, self.path("w.pt"))
        ctorch.save(ctorch.from_torch(x), self.path("one.pt"))
        d = torch.load(self.path("w.pt"), weights_only=True)
        self.assertTrue(torch.equal(d["x"], x))
        self.assertTrue(torch.equal(d["xt"], x.t()))
        self.assertTrue(torch.equal(torch.load(self.path("one.pt"), weights_only=True), x))

    def test_former_argument_order(self):
        # python/ctorch.py took (path, object); the package takes torch.save's
        # (object, path) and still accepts the former: the same files.
        x = torch.randn(2, 3)
        t = ctorch.from_torch(x)
        ctorch.save(self.path("old.pt"), t)
        ctorch.save(t, self.path("new.pt"))
        ctorch.save_dict(self.path("old_d.pt"), {"x": t})
        ctorch.save_dict({"x": t}, self.path("new_d.pt"))
        for a, b in (("old.pt", "new.pt"), ("old_d.pt", "new_d.pt")):
            with open(self.path(a), "rb") as fa, open(self.path(b), "rb") as fb:
                self.assertEqual(fa.read(), fb.read(), a)
        self.assertTrue(torch.equal(torch.load(self.path("old.pt"), weights_only=True), x))
        self.assertTrue(torch.equal(torch.load(self.path("old_d.pt"), weights_only=True)["x"], x))
        with self.assertRaises(TypeError):
            ctorch.save(self.path("a.pt"), self.path("b.pt"))  # no tensor at all

    def test_state_dict_loads_into_a_model(self):
        a = model()
        sd = a.state_dict()
        ctorch.save_dict({k: ctorch.from_torch(v) for k, v in sd.items()}, self.path("sd.pt"))
        loaded = torch.load(self.path("sd.pt"))
        self.assertIsInstance(loaded, dict)
        self.assertEqual(list(loaded.keys()), list(sd.keys()))
        b = nn.Sequential(nn.Conv2d(1, 3, 3), nn.BatchNorm2d(3), nn.ReLU(), nn.Flatten(), nn.Linear(3 * 4 * 4, 2))
        result = b.load_state_dict(loaded, strict=True)
        self.assertEqual(result.missing_keys, [])
        self.assertEqual(result.unexpected_keys, [])
        for k, v in b.state_dict().items():
            self.assertTrue(torch.equal(v, sd[k]), k)
        a.eval()
        b.eval()
        x = torch.randn(2, 1, 6, 6)
        self.assertTrue(torch.equal(a(x), b(x)))


class PythonToC(Base):
    def test_tensor_every_dtype(self):
        for dt in DTYPES:
            with self.subTest(dtype=dt):
                x = sample(dt)
                torch.save(x, self.path("t.pt"))
                t = ctorch.load(self.path("t.pt"))
                y = ctorch.to_torch(t)
                self.assertEqual(y.dtype, dt)
                self.assertTrue(torch.equal(x, y))

    def test_view_keeps_offset_and_strides(self):
        base = torch.arange(60, dtype=torch.float64).reshape(6, 10)
        x = base[2:, 1::3]
        torch.save(x, self.path("v.pt"))
        y = ctorch.to_torch(ctorch.load(self.path("v.pt")))
        self.assertEqual(y.stride(), x.stride())
        self.assertTrue(torch.equal(x, y))

    def test_zero_dim_and_empty(self):
        for x in (torch.tensor(-1.25), torch.tensor(7, dtype=torch.int64), torch.zeros(0, 3)):
            torch.save(x, self.path("s.pt"))
            y = ctorch.to_torch(ctorch.load(self.path("s.pt")))
            self.assertEqual(y.shape, x.shape)
            self.assertTrue(torch.equal(x, y))

    def test_parameter_keeps_requires_grad(self):
        p = nn.Parameter(torch.randn(3, 2))
        torch.save(p, self.path("p.pt"))
        t = ctorch.load(self.path("p.pt"))
        self.assertTrue(t.requires_grad)
        self.assertTrue(torch.equal(ctorch.to_torch(t), p.detach()))
        torch.save(torch.randn(2), self.path("plain.pt"))
        self.assertFalse(ctorch.load(self.path("plain.pt")).requires_grad)

    def test_model_state_dict_ordered_dict(self):
        m = model()
        sd = m.state_dict()
        self.assertIsInstance(sd, collections.OrderedDict)
        torch.save(sd, self.path("sd.pt"))  # zip format, OrderedDict with _metadata
        loaded = ctorch.load_dict(self.path("sd.pt"))
        self.assertEqual(list(loaded.keys()), list(sd.keys()))
        for k, v in sd.items():
            y = ctorch.to_torch(loaded[k])
            self.assertEqual(y.dtype, v.dtype, k)
            self.assertTrue(torch.equal(y, v), k)
        # ...and it goes back out from C to a model unchanged.
        ctorch.save_dict(loaded, self.path("again.pt"))
        m2 = nn.Sequential(nn.Conv2d(1, 3, 3), nn.BatchNorm2d(3), nn.ReLU(), nn.Flatten(), nn.Linear(3 * 4 * 4, 2))
        m2.load_state_dict(torch.load(self.path("again.pt")))
        for k, v in m2.state_dict().items():
            self.assertTrue(torch.equal(v, sd[k]), k)

    def test_shared_storage_stays_shared(self):
        w = torch.randn(4, 4)
        torch.save({"a": w, "b": w[1], "c": w.t()}, self.path("tied.pt"))
        d = ctorch.load_dict(self.path("tied.pt"))
        a, b, c = (ctorch.to_torch(d[k]) for k in "abc")
        self.assertTrue(torch.equal(b, w[1]))
        self.assertTrue(torch.equal(c, w.t()))
        a[1, 0] = 1234.0
        self.assertEqual(b[0].item(), 1234.0)  # one storage, as in Python

    def test_python_protocol_4(self):
        x = torch.randn(3)
        torch.save({"x": x}, self.path("p4.pt"), pickle_protocol=4)
        self.assertTrue(torch.equal(ctorch.to_torch(ctorch.load_dict(self.path("p4.pt"))["x"]), x))


def expect_error(test, status, fn, *args, needle=None):
    with test.assertRaises(ctorch.CtorchError) as cm:
        fn(*args)
    test.assertEqual(cm.exception.status_name, status, str(cm.exception))
    if needle:
        test.assertIn(needle, str(cm.exception))
    return cm.exception


def zip_with_pickle(path, pkl, records=None):
    """A torch.save-shaped zip holding the given data.pkl (and data/ records)."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
        z.writestr("archive/data.pkl", pkl)
        for k, v in (records or {}).items():
            z.writestr("archive/data/" + k, v)
        z.writestr("archive/version", "3\n")


def tensor_pickle(numel, offset, size, stride, storage="FloatStorage"):
    """data.pkl of torch.save(tensor) with chosen fields (protocol 2)."""
    def tup(vals):
        return b"(" + b"".join(b"J" + struct.pack("<i", v) for v in vals) + b"t"
    return (b"\x80\x02ctorch._utils\n_rebuild_tensor_v2\n("
            b"(X\x07\x00\x00\x00storagectorch\n" + storage.encode() + b"\nX\x01\x00\x00\x000X\x03\x00\x00\x00cpu"
            + b"J" + struct.pack("<i", numel) + b"tQ"
            + b"J" + struct.pack("<i", offset) + tup(size) + tup(stride)
            + b"\x89ccollections\nOrderedDict\n)RtR.")


class BadFiles(Base):
    def test_sanity_of_the_hand_made_pickle(self):
        zip_with_pickle(self.path("ok.pt"), tensor_pickle(6, 0, [2, 3], [3, 1]), {"0": struct.pack("<6f", *range(6))})
        self.assertEqual(torch.load(self.path("ok.pt")).tolist(), [[0, 1, 2], [3, 4, 5]])
        self.assertEqual(ctorch.to_torch(ctorch.load(self.path("ok.pt"))).tolist(), [[0, 1, 2], [3, 4, 5]])

    def test_out_of_bounds_and_negative_layouts(self):
        data = {"0": struct.pack("<6f", *range(6))}
        for name, pkl in [("beyond", tensor_pickle(6, 4, [2, 3], [3, 1])),
                          ("negstride", tensor_pickle(6, 5, [2, 3], [-3, 1])),
                          ("negsize", tensor_pickle(6, 0, [-2, 3], [3, 1])),
                          ("bigsize", tensor_pickle(6, 0, [2**30, 2**30], [2**30, 1])),
                          ("short_record", tensor_pickle(600, 0, [600], [1])),
                          ("bad_storage", tensor_pickle(6, 0, [6], [1], storage="os.system"))]:
            with self.subTest(case=name):
                zip_with_pickle(self.path(name + ".pt"), pkl, data)
                expect_error(self, "CTORCH_VALUE", ctorch.load, self.path(name + ".pt"))

    def test_missing_record(self):
        zip_with_pickle(self.path("norec.pt"), tensor_pickle(6, 0, [6], [1]))
        expect_error(self, "CTORCH_VALUE", ctorch.load, self.path("norec.pt"), needle="data/0")

    def test_arbitrary_globals_are_refused(self):
        pkl = b"\x80\x02cos\nsystem\nX\x04\x00\x00\x00echo\x85R."
        zip_with_pickle(self.path("evil.pt"), pkl)
        expect_error(self, "CTORCH_VALUE", ctorch.load, self.path("evil.pt"), needle="os.system")

    def test_deep_nesting_does_not_crash(self):
        # A million nested lists built through the memo: the reader must
        # neither recurse nor overflow while building or freeing them.
        depth = 1_000_000
        body = [b"\x80\x02]r\x00\x00\x00\x000"]
        for i in range(1, depth):
            body.append(b"j" + struct.pack("<I", i - 1) + b"]r" + struct.pack("<I", i) + b"a0")
        body.append(b"j\x00\x00\x00\x00.")
        zip_with_pickle(self.path("deep.pt"), b"".join(body))
        expect_error(self, "CTORCH_TYPE", ctorch.load, self.path("deep.pt"), needle="list")

    def test_garbage_opcodes_and_truncation(self):
        good = tensor_pickle(6, 0, [6], [1])
        data = {"0": struct.pack("<6f", *range(6))}
        for cut in range(2, len(good), 3):
            zip_with_pickle(self.path("cut.pt"), good[:cut], data)
            expect_error(self, "CTORCH_VALUE", ctorch.load, self.path("cut.pt"))
        zip_with_pickle(self.path("op.pt"), b"\x80\x02\xff.", data)
        expect_error(self, "CTORCH_VALUE", ctorch.load, self.path("op.pt"), needle="opcode")

    def test_other_contents(self):
        torch.save([torch.ones(2)], self.path("list.pt"))
        expect_error(self, "CTORCH_TYPE", ctorch.load, self.path("list.pt"), needle="list")
        torch.save({"w": torch.ones(2), "epoch": 3}, self.path("mixed.pt"))
        expect_error(self, "CTORCH_TYPE", ctorch.load_dict, self.path("mixed.pt"), needle="epoch")
        torch.save(torch.ones(2), self.path("legacy.pt"), _use_new_zipfile_serialization=False)
        expect_error(self, "CTORCH_VALUE", ctorch.load, self.path("legacy.pt"), needle="1.6")
        expect_error(self, "CTORCH_IO", ctorch.load, self.path("nope.pt"), needle="No such file")


if __name__ == "__main__":
    unittest.main(verbosity=2)
