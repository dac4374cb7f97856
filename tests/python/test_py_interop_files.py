"""Checkpoint and optimizer-state files crossing between ctorch and Python.

The C side is a separate program (checkpoint_peer, path in
CTORCH_CHECKPOINT_PEER), so the Python running this may be any PyTorch
version: the build's own (CTORCH_TORCH_PYTHON) or another one
(CTORCH_CROSS_TORCH_PYTHON). Files are loaded with plain torch.load(path),
whose default is weights_only=True from PyTorch 2.6 on, and also with
weights_only=True explicitly where this PyTorch's weights-only unpickler can
read them (1.13's has no BINFLOAT, so not optimizer state there).
"""
import collections
import copy
import os
import pickletools
import subprocess
import sys
import unittest
import zipfile

import torch

import interop_util

PEER = os.environ.get("CTORCH_CHECKPOINT_PEER")
SOURCE = os.environ.get("CTORCH_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
VERSION = tuple(int(x) for x in torch.__version__.split("+")[0].split(".")[:2])
WEIGHTS_ONLY_FLOATS = VERSION >= (2, 0)  # 1.13's weights-only unpickler has no BINFLOAT

# What torch.load(weights_only=True) allows (and Python's torch.save writes).
ALLOWED_GLOBALS = {"collections OrderedDict", "torch._utils _rebuild_tensor_v2", "torch._utils _rebuild_tensor_v3",
                   "torch.storage UntypedStorage"} | {
    "torch " + n for n in ("FloatStorage", "DoubleStorage", "HalfStorage", "BFloat16Storage", "LongStorage",
                           "IntStorage", "ShortStorage", "CharStorage", "ByteStorage", "BoolStorage",
                           "ComplexFloatStorage", "ComplexDoubleStorage")}


def peer(*args, expect_ok=True):
    r = subprocess.run([PEER] + [str(a) for a in args], capture_output=True, text=True)
    if expect_ok and r.returncode != 0:
        raise AssertionError("checkpoint_peer %s failed (%d): %s" % (args, r.returncode, r.stderr))
    return r


def peer_batch(commands, workdir):
    """Runs many peer commands in one process (libtorch starts once)."""
    path = os.path.join(workdir, "commands.txt")
    with open(path, "w") as f:
        for c in commands:
            f.write("\t".join(str(a) for a in c) + "\n")
    return peer("batch", path)


def storage_ptr(t):
    return t.untyped_storage().data_ptr() if hasattr(t, "untyped_storage") else t.storage().data_ptr()


def disallowed(globs):
    """The globals among globs that torch.load(weights_only=True) refuses."""
    return {g for g in globs if g not in ALLOWED_GLOBALS
            and not (g.startswith("torch ") and isinstance(getattr(torch, g[6:], None), torch.dtype))}


def globals_in(path):
    with zipfile.ZipFile(path) as z:
        pkl = z.read(next(n for n in z.namelist() if n.endswith("/data.pkl")))
    found = set()
    for op, arg, _ in pickletools.genops(pkl):
        if op.name == "GLOBAL":
            found.add(arg)
        assert op.proto <= 2, "opcode %s needs protocol %d" % (op.name, op.proto)
    return found


def pattern():
    return (torch.arange(15) % 7).to(torch.float32).reshape(3, 5) * 1.5 - 4


@unittest.skipUnless(PEER, "CTORCH_CHECKPOINT_PEER is not set")
class Base(interop_util.TempDirTest):
    def assert_same(self, a, b, what=""):
        self.assertEqual(a.dtype, b.dtype, what)
        self.assertEqual(a.shape, b.shape, what)
        self.assertTrue(torch.equal(a, b), what)


class CWritesPythonReads(Base):
    def setUp(self):
        super().setUp()
        peer("fixtures", self.dir)

    def test_files_use_only_what_weights_only_allows(self):
        for name in ("c_dict.pt", "c_grad.pt", "c_scalar.pt"):
            self.assertEqual(disallowed(globals_in(self.path(name))), set(), name)
        with zipfile.ZipFile(self.path("c_dict.pt")) as z:
            names = z.namelist()
        self.assertIn("archive/data.pkl", names)
        self.assertIn("archive/byteorder", names)
        self.assertTrue("archive/version" in names or "archive/.data/version" in names, names)

    def test_every_dtype(self):
        d = torch.load(self.path("c_dict.pt"))
        self.assertIsInstance(d, collections.OrderedDict)
        p = pattern()
        want = {"float32": p, "uint8": p.abs().to(torch.uint8), "complex64": torch.complex(p, p * -0.5)}
        want["complex128"] = want["complex64"].to(torch.complex128)
        for name in ("float64", "float16", "bfloat16", "int64", "int32", "int16", "int8", "bool"):
            want[name] = p.to(getattr(torch, name))
        for name, w in want.items():
            self.assert_same(d[name], w, name)

    def test_weights_only_gives_the_same(self):
        for name in ("c_dict.pt", "c_grad.pt", "c_scalar.pt"):
            plain = torch.load(self.path(name))
            safe = torch.load(self.path(name), weights_only=True)
            if isinstance(plain, dict):
                self.assertEqual(list(plain), list(safe))
                for k in plain:
                    self.assert_same(plain[k], safe[k], k)
            else:
                self.assert_same(plain, safe, name)

    def test_views_keep_sharing_one_storage(self):
        d = torch.load(self.path("c_dict.pt"))
        base = torch.arange(20, dtype=torch.float32).reshape(4, 5)
        self.assert_same(d["base"], base)
        self.assert_same(d["base_t"], base.t())
        self.assertEqual(d["base_t"].stride(), (1, 5))
        self.assert_same(d["base_row2"], base[2])
        self.assertEqual(d["base_row2"].storage_offset(), 10)
        self.assert_same(d["base_t_narrow"], base.t()[1:4])
        for k in ("base_t", "base_row2", "base_t_narrow"):
            self.assertEqual(storage_ptr(d[k]), storage_ptr(d["base"]), k)
        d["base"][2, 1] = -100.0
        self.assertEqual(d["base_row2"][1].item(), -100.0)
        self.assertEqual(d["base_t_narrow"][0, 2].item(), -100.0)

    def test_empty_scalar_and_requires_grad(self):
        d = torch.load(self.path("c_dict.pt"))
        self.assertEqual(d["empty"].shape, (0, 3))
        self.assertEqual(d["scalar"].shape, ())
        self.assertEqual(d["scalar"].item(), 2.5)
        self.assertEqual(torch.load(self.path("c_scalar.pt")).item(), -7.25)
        g = torch.load(self.path("c_grad.pt"))
        self.assertTrue(g.requires_grad)
        self.assertTrue(g.is_leaf)
        self.assertTrue(torch.equal(g.detach(), pattern()))
        self.assertFalse(d["float32"].requires_grad)


class PythonWritesCReads(Base):
    def roundtrip(self, obj, name="py.pt"):
        torch.save(obj, self.path(name))
        peer("resave", self.path(name), self.path("back_" + name))
        self.assertEqual(disallowed(globals_in(self.path("back_" + name))), set())
        return torch.load(self.path("back_" + name))

    def test_every_dtype_and_layout(self):
        g = torch.Generator().manual_seed(5)
        w = torch.randn(6, 4, generator=g)
        src = collections.OrderedDict()
        for dt in (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.int32, torch.int16,
                   torch.int8, torch.uint8, torch.bool, torch.complex64, torch.complex128):
            src[str(dt)] = (torch.randn(3, 5, generator=g) * 20).to(dt)
        src["w"] = w
        src["w_t"] = w.t()
        src["w_cols"] = w[1:, ::2]
        src["w_row"] = w[3]
        src["empty"] = torch.zeros(0, 7)
        src["scalar"] = torch.tensor(-3.5)
        src["long_scalar"] = torch.tensor(2 ** 40)
        back = self.roundtrip(src)
        self.assertEqual(list(back), list(src))
        for k, v in src.items():
            self.assertEqual(back[k].dtype, v.dtype, k)
            self.assertEqual(back[k].shape, v.shape, k)
            self.assertEqual(back[k].stride(), v.stride(), k)
            self.assertTrue(torch.equal(back[k], v), k)
        for k in ("w_t", "w_cols", "w_row"):
            self.assertEqual(storage_ptr(back[k]), storage_ptr(back["w"]), k)

    @unittest.skipUnless(VERSION >= (2, 3), "this PyTorch writes no _rebuild_tensor_v3 records")
    def test_dtypes_without_a_storage_class(self):
        # PyTorch 2.x writes these with _rebuild_tensor_v3 over an UntypedStorage.
        c32 = torch.complex(torch.randn(4), torch.randn(4)).to(torch.complex32)
        back = self.roundtrip({"c32": c32, "c32_t": c32[1::2]}, "c32.pt")
        self.assertEqual(back["c32"].dtype, torch.complex32)
        self.assertTrue(torch.equal(back["c32"].view(torch.float16), c32.view(torch.float16)))
        self.assertEqual(back["c32_t"].storage_offset(), 1)
        self.assertEqual(storage_ptr(back["c32_t"]), storage_ptr(back["c32"]))
        u16 = torch.full((2, 3), 60000, dtype=torch.uint16)
        torch.save({"u": u16}, self.path("u16.pt"))
        c_torch = tuple(int(x) for x in peer("torch-version").stdout.split(".")[:2])
        r = peer("resave", self.path("u16.pt"), self.path("back_u16.pt"), expect_ok=c_torch >= (2, 3))
        if c_torch >= (2, 3):
            back = torch.load(self.path("back_u16.pt"))
            self.assertEqual(back["u"].dtype, torch.uint16)
            self.assertTrue(torch.equal(back["u"].to(torch.int64), u16.to(torch.int64)))
        else:  # this ctorch's libtorch has no uint16: a clear refusal
            self.assertIn("CTORCH_VALUE", r.stderr)
            self.assertIn("unsupported dtype torch.uint16", r.stderr)

    def test_parameter_and_requires_grad(self):
        p = torch.nn.Parameter(torch.randn(3, 2))
        back = self.roundtrip(p, "param.pt")
        self.assertTrue(back.requires_grad)
        self.assertTrue(torch.equal(back.detach(), p.detach()))
        back = self.roundtrip({"p": p, "q": torch.ones(2)}, "params.pt")
        self.assertTrue(back["p"].requires_grad)
        self.assertFalse(back["q"].requires_grad)

    def test_model_state_dict(self):
        torch.manual_seed(0)
        m = torch.nn.Sequential(torch.nn.Conv2d(1, 3, 3), torch.nn.BatchNorm2d(3), torch.nn.Flatten(),
                                torch.nn.Linear(3 * 4 * 4, 2))
        m(torch.randn(4, 1, 6, 6))
        back = self.roundtrip(m.state_dict(), "model.pt")
        m2 = torch.nn.Sequential(torch.nn.Conv2d(1, 3, 3), torch.nn.BatchNorm2d(3), torch.nn.Flatten(),
                                 torch.nn.Linear(3 * 4 * 4, 2))
        m2.load_state_dict(back)
        for k, v in m.state_dict().items():
            self.assertTrue(torch.equal(m2.state_dict()[k], v), k)

    def test_files_of_earlier_ctorch_versions(self):
        # Written by ctorch 0.1 (libtorch's torch::pickle_save, with
        # restore_type_tag): still read by ctorch, and resaved in the new form.
        old = os.path.join(SOURCE, "tests", "data", "checkpoints", "ctorch-0.1-dict.pt")
        peer("resave", old, self.path("new.pt"))
        d = torch.load(self.path("new.pt"))
        self.assertTrue(torch.equal(d["w"], torch.arange(6, dtype=torch.float32).reshape(2, 3)))
        self.assertTrue(torch.equal(d["b"], torch.arange(3) - 1))
        self.assertTrue(torch.equal(d["w_t"], d["w"].t()))
        self.assertEqual(storage_ptr(d["w_t"]), storage_ptr(d["w"]))
        old = os.path.join(SOURCE, "tests", "data", "checkpoints", "ctorch-0.1-tensor.pt")
        peer("resave", old, self.path("new_t.pt"))
        self.assertTrue(torch.equal(torch.load(self.path("new_t.pt")), torch.arange(4, dtype=torch.float64) * 0.5))


# ---- optimizer state ----------------------------------------------------------------

def parse(opts):
    return {k: float(v) for k, v in (kv.split("=") for kv in opts.split(","))}


def make_optimizer(kind, opts, params):
    o = parse(opts)
    if kind == "sgd":
        kw = dict(lr=o["lr"], momentum=o.get("momentum", 0.0), dampening=o.get("dampening", 0.0),
                  weight_decay=o.get("wd", 0.0), nesterov=bool(o.get("nesterov", 0)))
    else:
        kw = dict(lr=o["lr"], betas=(o.get("beta1", 0.9), o.get("beta2", 0.999)), eps=o.get("eps", 1e-8),
                  weight_decay=o.get("wd", 0.01 if kind == "adamw" else 0.0), amsgrad=bool(o.get("amsgrad", 0)))
    groups = [{"params": params}] if "lr2" not in o else [{"params": params[:1]}, {"params": params[1:], "lr": o["lr2"]}]
    cls = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam, "adamw": torch.optim.AdamW}[kind]
    return cls(groups, **kw)


def loss_of(params, targets):
    return sum((torch.sin(p) * t + 0.5 * (p * p)).sum() for p, t in zip(params, targets))


def step(opt, params, targets):
    opt.zero_grad()
    loss_of(params, targets).backward()
    opt.step()


CASES = [("sgd", "lr=0.05,momentum=0.9"), ("sgd", "lr=0.05,momentum=0.9,nesterov=1,wd=0.01"),
         ("sgd", "lr=0.05,momentum=0.5,dampening=0.3"), ("sgd", "lr=0.1"),
         ("adam", "lr=0.01"), ("adam", "lr=0.01,amsgrad=1,wd=0.1"),
         ("adam", "lr=0.02,beta1=0.8,beta2=0.95,eps=1e-6"),
         ("adamw", "lr=0.01,wd=0.05"), ("adamw", "lr=0.01,lr2=0.003,amsgrad=1")]
STEPS = 3


class OptimizerState(Base):
    def setUp(self):
        super().setUp()
        g = torch.Generator().manual_seed(11)
        shapes = collections.OrderedDict([("w", (3, 4)), ("b", (4,)), ("k", (2, 2, 2))])
        self.names = list(shapes)
        self.p0 = collections.OrderedDict((n, torch.randn(s, generator=g)) for n, s in shapes.items())
        self.targets = collections.OrderedDict((n, torch.randn(s, generator=g)) for n, s in shapes.items())
        torch.save(self.p0, self.path("p0.pt"))
        torch.save(self.targets, self.path("targets.pt"))

    def params_from(self, d):
        return [torch.nn.Parameter(d[n].detach().clone()) for n in self.names]

    def assert_close_params(self, got, want, what):
        for n, p in zip(self.names, want):
            torch.testing.assert_close(got[n], p.detach(), rtol=1e-5, atol=1e-6, msg=lambda m: "%s %s: %s" % (what, n, m))

    def test_c_saves_python_continues(self):
        def p(i, name):
            return self.path("%d_%s" % (i, name))
        peer_batch([("train", kind, opts, self.path("p0.pt"), self.path("targets.pt"), "-", STEPS,
                     p(i, "state.pt"), p(i, "pN.pt"), p(i, "next.pt")) for i, (kind, opts) in enumerate(CASES)],
                   self.dir)
        for i, (kind, opts) in enumerate(CASES):
            with self.subTest(kind=kind, opts=opts):
                self.assertEqual(disallowed(globals_in(p(i, "state.pt"))), set())
                sd = torch.load(p(i, "state.pt"))  # the version's default
                if WEIGHTS_ONLY_FLOATS:
                    torch.load(p(i, "state.pt"), weights_only=True)
                self.assertEqual(sorted(sd), ["param_groups", "state"])
                if kind == "sgd" and "momentum" not in opts:
                    self.assertEqual(sd["state"], {})
                else:
                    self.assertEqual(sorted(sd["state"]), [0, 1, 2])
                if kind != "sgd":
                    self.assertTrue(torch.is_tensor(sd["state"][0]["step"]))
                    self.assertEqual(sd["state"][0]["step"].item(), STEPS)
                    self.assertEqual("max_exp_avg_sq" in sd["state"][0], "amsgrad=1" in opts)
                # C's first N steps are Python's.
                ref = self.params_from(self.p0)
                ref_opt = make_optimizer(kind, opts, ref)
                for _ in range(STEPS):
                    step(ref_opt, ref, list(self.targets.values()))
                pN = torch.load(p(i, "pN.pt"))
                self.assert_close_params(pN, ref, "after %d steps" % STEPS)
                # Python continues from C's parameters and state: the same next step as C.
                params = self.params_from(pN)
                opt = make_optimizer(kind, opts, params)
                opt.load_state_dict(sd)
                step(opt, params, list(self.targets.values()))
                self.assert_close_params(torch.load(p(i, "next.pt")), params, "next step")

    def test_python_saves_c_continues(self):
        def p(i, name):
            return self.path("%d_%s" % (i, name))
        expected, commands = [], []
        for i, (kind, opts) in enumerate(CASES):
            params = self.params_from(self.p0)
            opt = make_optimizer(kind, opts, params)
            for _ in range(STEPS):
                step(opt, params, list(self.targets.values()))
            torch.save(collections.OrderedDict((n, p.detach()) for n, p in zip(self.names, params)), p(i, "pyN.pt"))
            torch.save(opt.state_dict(), p(i, "pystate.pt"))
            step(opt, params, list(self.targets.values()))
            expected.append(params)
            commands.append(("train", kind, opts, p(i, "pyN.pt"), self.path("targets.pt"), p(i, "pystate.pt"), 0,
                             p(i, "cstate.pt"), p(i, "cN.pt"), p(i, "cnext.pt")))
        peer_batch(commands, self.dir)
        for i, (kind, opts) in enumerate(CASES):
            with self.subTest(kind=kind, opts=opts):
                self.assert_close_params(torch.load(p(i, "cnext.pt")), expected[i], "C's next step")
                # What C saves back is Python's state, unchanged.
                mine, theirs = torch.load(p(i, "cstate.pt")), torch.load(p(i, "pystate.pt"))
                # (1.13's SGD without momentum keeps {'momentum_buffer': None}: no state)
                self.assertEqual(sorted(mine["state"]), sorted(i for i, st in theirs["state"].items()
                                                               if any(v is not None for v in st.values())))
                for j, st in mine["state"].items():
                    for k, v in theirs["state"][j].items():
                        if k == "step":
                            self.assertEqual(float(st[k]), float(v))
                        else:
                            self.assertTrue(torch.equal(st[k], v), (j, k))
                for gm, gt in zip(mine["param_groups"], theirs["param_groups"]):
                    for k in ("lr", "weight_decay", "params"):
                        self.assertEqual(gm[k], gt[k], k)

    def test_python_step_as_a_number(self):
        # Files of PyTorch < 1.12 (and hand-made ones) hold 'step' as a number.
        params = self.params_from(self.p0)
        opt = make_optimizer("adam", "lr=0.01", params)
        step(opt, params, list(self.targets.values()))
        sd = copy.deepcopy(opt.state_dict())
        for st in sd["state"].values():
            st["step"] = float(st["step"])
        torch.save(collections.OrderedDict((n, p.detach()) for n, p in zip(self.names, params)), self.path("pyN.pt"))
        torch.save(sd, self.path("pystate.pt"))
        step(opt, params, list(self.targets.values()))
        peer("train", "adam", "lr=0.01", self.path("pyN.pt"), self.path("targets.pt"), self.path("pystate.pt"), 0,
             self.path("cstate.pt"), self.path("cN.pt"), self.path("cnext.pt"))
        self.assert_close_params(torch.load(self.path("cnext.pt")), params, "C's next step")

    def run_load(self, kind, opts, state):
        torch.save(state, self.path("bad.pt"))
        return peer("train", kind, opts, self.path("p0.pt"), self.path("targets.pt"), self.path("bad.pt"), 0,
                    self.path("x.pt"), self.path("y.pt"), self.path("z.pt"), expect_ok=False)

    def test_refusals(self):
        params = self.params_from(self.p0)
        adam = torch.optim.Adam(params, lr=0.01, maximize=True)
        step(adam, params, list(self.targets.values()))
        r = self.run_load("adam", "lr=0.01", adam.state_dict())
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("NOT_IMPLEMENTED", r.stderr)
        self.assertIn("maximize", r.stderr)
        sgd = torch.optim.SGD(params, lr=0.1, momentum=0.9)
        step(sgd, params, list(self.targets.values()))
        r = self.run_load("adam", "lr=0.01", sgd.state_dict())
        self.assertIn("VALUE", r.stderr)
        self.assertIn("betas", r.stderr)
        two = torch.optim.SGD([{"params": params[:2]}, {"params": params[2:]}], lr=0.1, momentum=0.9)
        r = self.run_load("sgd", "lr=0.1,momentum=0.9", two.state_dict())
        self.assertIn("VALUE", r.stderr)
        self.assertIn("parameter groups", r.stderr)
        r = self.run_load("sgd", "lr=0.1", {"w": torch.ones(2)})
        self.assertIn("TYPE", r.stderr)
        if VERSION >= (2, 6):
            decoupled = torch.optim.Adam(params, lr=0.01, decoupled_weight_decay=True)
            step(decoupled, params, list(self.targets.values()))
            r = self.run_load("adam", "lr=0.01", decoupled.state_dict())
            self.assertIn("decoupled_weight_decay", r.stderr)
            r = self.run_load("adamw", "lr=0.01", decoupled.state_dict())
            self.assertEqual(r.returncode, 0, r.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
