"""ctorch's multi-tensor (foreach) and fused optimizer steps against the
installed torch.optim with foreach=True / fused=True.

For every optimizer kind with a foreach form (SGD, Adam, AdamW, RMSprop,
Adagrad, NAdam, RAdam, Adamax, Adadelta) and the options that change its
arithmetic, runs optim_dump (tests/optim/optim_dump.c) with
OPTIM_DUMP_IMPL=foreach and the same scenario in Python with foreach=True,
and requires the loss of every step and every parameter element after every
step to be bit-identical (one intra-op thread on both sides). Likewise
fused=True where the installed torch has CPU fused kernels (2.x: Adam, AdamW,
SGD, Adagrad); where it has none (1.13) Python must refuse fused=True on the
CPU and ctorch must refuse FUSED with NOT_IMPLEMENTED.

Also: where Python's foreach and for-loop results are bit-identical for a
scenario, ctorch's must be too (its for-loop run against its foreach run);
the state dict ctorch writes after foreach steps (SGD, Adam, AdamW) must
equal Python's optimizer.state_dict() after its foreach steps, tensor for
tensor; and LBFGS must refuse FOREACH (PyTorch's LBFGS has no foreach).

Usage: foreach_vs_torch.py PATH/TO/optim_dump"""
import atexit
import os
import shutil
import sys
import tempfile

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import optim_vs_torch as base  # noqa: E402  (its parameters, closure and comparison)

# name, kind, f64, steps, group0, group1 ("-": one group), schedule
SCENARIOS = [
    ("sgd_plain", "sgd", 0, 5, "lr=0.01", "-", ""),
    ("sgd_momentum", "sgd", 0, 6, "lr=0.01,momentum=0.9", "-", ""),
    ("sgd_dampening_wd", "sgd", 0, 6, "lr=0.01,momentum=0.9,dampening=0.2,weight_decay=0.1", "-", ""),
    ("sgd_nesterov_2g", "sgd", 0, 6, "lr=0.01,momentum=0.9,nesterov=1", "lr=0.02,momentum=0.5,weight_decay=0.05", ""),
    ("sgd_f64", "sgd", 1, 6, "lr=0.01,momentum=0.8,weight_decay=0.1,nesterov=1", "lr=0.03", ""),
    ("adam_default", "adam", 0, 8, "-", "-", ""),
    ("adam_wd", "adam", 0, 8, "lr=0.01,weight_decay=0.1", "-", ""),
    ("adam_amsgrad_2g", "adam", 0, 8, "lr=0.01,amsgrad=1", "lr=0.005,beta1=0.8,beta2=0.99,eps=1e-6,weight_decay=0.05", ""),
    ("adam_f64", "adam", 1, 8, "lr=0.01,amsgrad=1,weight_decay=0.1", "lr=0.02", ""),
    ("adamw_default", "adamw", 0, 8, "-", "-", ""),
    ("adamw_amsgrad_2g", "adamw", 0, 8, "lr=0.01,weight_decay=0.1,amsgrad=1", "lr=0.005,beta1=0.8,weight_decay=0", ""),
    ("adamw_f64", "adamw", 1, 8, "lr=0.01,weight_decay=0.1", "lr=0.02,amsgrad=1", ""),
    ("rmsprop_default", "rmsprop", 0, 6, "-", "-", ""),
    ("rmsprop_centered", "rmsprop", 0, 6, "lr=0.01,centered=1", "-", ""),
    ("rmsprop_momentum_wd_2g", "rmsprop", 0, 6, "lr=0.01,momentum=0.9,weight_decay=0.1", "lr=0.005,centered=1,momentum=0.5,alpha=0.9", ""),
    ("rmsprop_f64", "rmsprop", 1, 6, "lr=0.01,centered=1,momentum=0.9,weight_decay=0.1,eps=1e-6", "-", ""),
    ("adagrad_default", "adagrad", 0, 6, "-", "-", ""),
    ("adagrad_decay_wd", "adagrad", 0, 6, "lr=0.05,lr_decay=0.1,weight_decay=0.1", "-", ""),
    ("adagrad_iav", "adagrad", 0, 6, "lr=0.05,initial_accumulator_value=0.1", "-", ""),
    ("adagrad_2g", "adagrad", 0, 6, "lr=0.05,weight_decay=0.05", "lr=0.02,lr_decay=0.01,eps=1e-6", ""),
    ("adagrad_f64", "adagrad", 1, 6, "lr=0.05,lr_decay=0.1,weight_decay=0.1,initial_accumulator_value=0.2", "-", ""),
    ("nadam_1g", "nadam", 0, 8, "-", "-", ""),
    ("nadam_2g", "nadam", 0, 8, "lr=0.01,weight_decay=0.1,momentum_decay=0.01", "lr=0.005,beta1=0.8,beta2=0.99,eps=1e-6", ""),
    ("nadam_f64", "nadam", 1, 8, "lr=0.01,weight_decay=0.1", "lr=0.005,beta1=0.8", ""),
    ("nadam_decoupled", "nadam", 0, 6, "lr=0.01,weight_decay=0.1,decoupled_weight_decay=1", "lr=0.02", ""),
    ("radam_1g", "radam", 0, 10, "lr=0.01", "-", ""),
    ("radam_2g", "radam", 0, 10, "lr=0.01,weight_decay=0.05", "lr=0.02,beta1=0.85,beta2=0.9,eps=1e-5", ""),
    ("radam_f64", "radam", 1, 10, "lr=0.01,weight_decay=0.05", "lr=0.02,beta2=0.9", ""),
    ("radam_decoupled", "radam", 0, 8, "lr=0.01,weight_decay=0.1,decoupled_weight_decay=1", "lr=0.02,beta2=0.9", ""),
    ("adamax_1g", "adamax", 0, 8, "-", "-", ""),
    ("adamax_2g", "adamax", 0, 8, "lr=0.01,weight_decay=0.1", "lr=0.003,beta1=0.7,beta2=0.95,eps=1e-4", ""),
    ("adamax_f64", "adamax", 1, 8, "lr=0.01,weight_decay=0.1", "lr=0.003,beta1=0.7", ""),
    ("adadelta_1g", "adadelta", 0, 8, "-", "-", ""),
    ("adadelta_2g", "adadelta", 0, 8, "lr=1.0,weight_decay=0.1", "lr=0.5,rho=0.5,eps=1e-4", ""),
    ("adadelta_f64", "adadelta", 1, 8, "lr=1.0,weight_decay=0.1", "lr=0.5,rho=0.5", ""),
    ("adam_onecycle", "adam", 0, 6, "-", "lr=0.005,beta1=0.8", "onecycle"),
]
FUSED_KINDS = {"sgd", "adam", "adamw", "adagrad"}
STATE_KINDS = {"sgd", "adam", "adamw"}
LIBTORCH_KINDS = {"sgd", "adam", "adamw", "rmsprop", "adagrad"}


def python_side(sc, **impl):
    """base.python_side with foreach=/fused= given to the constructor."""
    real = base.KINDS[sc[1]]

    def make(params, **kw):
        # torch.optim.Adagrad fills each sum from its constructor's
        # initial_accumulator_value, not a group's: pass group 0's (one-group
        # scenarios only, where ctorch's group value is the same).
        if sc[1] == "adagrad" and isinstance(params, list) and len(params) == 1 and isinstance(params[0], dict):
            if "initial_accumulator_value" in params[0]:
                kw["initial_accumulator_value"] = params[0]["initial_accumulator_value"]
        return real(params, **kw, **impl)

    base.KINDS[sc[1]] = make
    try:
        out = base.python_side(sc)
    finally:
        base.KINDS[sc[1]] = real
    return out, LAST_OPT[0]


LAST_OPT = [None]


def c_side(dump, sc, impl, state_path=None):
    """ctorch's run of a scenario with one implementation (base.Dump: one
    optim_dump process for all of them)."""
    return dump.run(sc, impl, state_path)


def differences(a, b):
    if len(a) != len(b):
        return 1, f"{len(a)} steps != {len(b)}"
    n, first = 0, ""
    for k, ((la, pa), (lb, pb)) in enumerate(zip(a, b)):
        if not base.same(la, lb):
            n += 1
            first = first or f"step {k + 1}: loss {la!r} != {lb!r}"
        for i, (x, y) in enumerate(zip(pa, pb)):
            for j, (u, v) in enumerate(zip(x, y)):
                if not base.same(u, v):
                    n += 1
                    first = first or f"step {k + 1}: p{i}[{j}] {u!r} != {v!r}"
    return n, first


def state_equal(path, opt):
    """ctorch's state dict file against Python's live optimizer.state_dict()."""
    mine = torch.load(path)
    theirs = opt.state_dict()
    # Python 2.x keeps SGD's momentum_buffer None without momentum; ctorch keeps no state.
    theirs["state"] = {i: s for i, s in theirs["state"].items() if any(v is not None for v in s.values())}
    if sorted(mine["state"]) != sorted(theirs["state"]):
        return f"state keys {sorted(mine['state'])} != {sorted(theirs['state'])}"
    for i, s in theirs["state"].items():
        m = mine["state"][i]
        if sorted(m) != sorted(k for k in s if s[k] is not None):
            return f"state {i}: fields {sorted(m)} != {sorted(s)}"
        for k, v in s.items():
            if v is None:
                continue
            a = torch.as_tensor(m[k], dtype=torch.float64)
            b = torch.as_tensor(v, dtype=torch.float64)
            if a.shape != b.shape or not torch.equal(a, b):
                return f"state {i}.{k} differs"
    return None


def main():
    dump = base.Dump(sys.argv[1])
    print(f"torch {torch.__version__}")
    bad = passed = skipped = noted = 0
    tmp = tempfile.mkdtemp()
    atexit.register(shutil.rmtree, tmp, True)  # the state_dict files written below
    orig_init = torch.optim.Optimizer.__init__

    def remember(self, *a, **kw):  # the last optimizer made, for its state_dict()
        orig_init(self, *a, **kw)
        LAST_OPT[0] = self

    torch.optim.Optimizer.__init__ = remember
    for sc in SCENARIOS:
        name, kind = sc[0], sc[1]
        if not base.supported(kind, sc[4], sc[5]):
            c, err = c_side(dump, sc, "foreach")
            if c is None and "NOT_IMPLEMENTED" in err and "decoupled_weight_decay" in err:
                print(f"{name}: SKIP (torch {torch.__version__} lacks an option; ctorch refused it)")
                skipped += 1
            else:
                print(f"{name}: torch lacks an option but ctorch did not refuse it: {err.strip()}")
                bad += 1
            continue
        for impl in ("foreach", "fused"):
            if impl == "fused" and kind not in FUSED_KINDS:
                continue
            state = os.path.join(tmp, f"{name}_{impl}.pt") if kind in STATE_KINDS and not sc[6] else None
            c, err = c_side(dump, sc, impl, state)
            try:
                py, opt = python_side(sc, **{impl: True})
            except (RuntimeError, TypeError) as e:  # 1.13: no fused= on SGD, no CPU kernel for Adam
                py, opt = None, str(e)
            label = f"{name} [{impl}]"
            if py is None:
                # Python refuses (1.13: no CPU fused kernel): ctorch must too.
                if c == "refused" and "NOT_IMPLEMENTED" in err:
                    print(f"{label}: both refuse (Python: {opt.splitlines()[0]}; ctorch: {err})")
                    passed += 1
                else:
                    print(f"{label}: FAIL: Python refused ({opt}) but ctorch did not: {err}")
                    bad += 1
                continue
            if c is None or c == "refused":
                print(f"{label}: FAIL: optim_dump: {err.strip()}")
                bad += 1
                continue
            n, first = differences(c, py)
            if n:
                print(f"{label}: FAIL ({n} values differ; first: {first})")
                bad += 1
                continue
            msg = ""
            if state:
                why = state_equal(state, opt)
                if why:
                    print(f"{label}: FAIL: state dict: {why}")
                    bad += 1
                    continue
                msg = ", state dict equal"
            print(f"{label}: ok ({len(c)} steps, bit-identical{msg})")
            passed += 1
        # foreach == for-loop in ctorch wherever it is so in Python. ctorch's
        # for-loop for SGD, Adam, AdamW, RMSprop and Adagrad is libtorch's C++
        # torch::optim, whose arithmetic differs from torch.optim's for-loop
        # on 2.x (e.g. exp_avg by mul_/add_ where Python lerp_s): there the
        # two for-loops are compared first, and the case is reported, not
        # failed, when they already differ.
        py_for, _ = python_side(sc, foreach=False)
        py_fe, _ = python_side(sc, foreach=True)
        if differences(py_for, py_fe)[0] == 0:
            c_for, err1 = c_side(dump, sc, "forloop")
            c_fe, err2 = c_side(dump, sc, "foreach")
            if not c_for or not c_fe or c_for == "refused" or c_fe == "refused":
                print(f"{name}: FAIL: optim_dump: {err1} {err2}")
                bad += 1
                continue
            n, first = differences(c_for, c_fe)
            n_loops, first_loops = differences(c_for, py_for)
            if n and n_loops and kind in LIBTORCH_KINDS:
                print(f"{name}: note: ctorch's for-loop (libtorch's C++ {kind}) differs from torch.optim's "
                      f"for-loop ({first_loops}), so its foreach cannot equal it; foreach equals Python's")
                noted += 1
            elif n:
                print(f"{name}: FAIL: Python's foreach equals its for-loop, ctorch's do not ({first})")
                bad += 1
            else:
                print(f"{name}: foreach == for-loop in Python and in ctorch")
                passed += 1
    torch.optim.Optimizer.__init__ = orig_init
    # LBFGS has no foreach form.
    c, err = c_side(dump, ("lbfgs", "lbfgs", 0, 1, "-", "-", ""), "foreach")
    if c == "refused" and "NOT_IMPLEMENTED" in err and "LBFGS" in err:
        print(f"lbfgs [foreach]: refused as it should be ({err})")
        passed += 1
    else:
        print(f"lbfgs [foreach]: FAIL: not refused: {c!r} {err}")
        bad += 1
    dump.close()
    print(f"{passed} passed, {skipped} skipped, {noted} noted (libtorch's for-loop differs from Python's), "
          f"{bad} failed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
