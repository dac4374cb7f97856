"""Every case of tests/nn/cases/*.txt (every built-in module kind) through
the Python binding's module classes (ctorch.nn), against torch.nn in the
same process, with the torch whose libtorch ctorch was built against.

tests/nn/nn_vs_torch.py proves the C API equal to torch.nn case by case;
this proves the binding's classes reach the same modules: constructed from
Python values (ctorch.nn.Conv2d(16, 33, 3, stride=2), module-valued
arguments as ctorch.nn objects), same seed: the same state-dict keys in
the same order, parameters and buffers bit for bit, the same repr, the same
forward outputs and parameter gradients (a case's tolerance as there).
Inputs are made by torch after the same seed and shared through DLPack.
Usage: py_nn_cases.py CASES.txt [...]. Exit 77 (skipped) where this Python
has no torch."""
import os
import re
import sys
import warnings

from py_check import torch_or_skip

torch = torch_or_skip()

import ctorch
from ctorch.interop import from_torch, to_torch

# The harness's case reader, inputs and comparisons: one definition of a case.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "nn"))
import nn_vs_torch as H  # noqa: E402

FLOATS = (ctorch.float32, ctorch.float64)


def ours(c):
    """The case's module from ctorch.nn, written as the user writes it:
    module-valued arguments are ctorch.nn objects, dtypes ctorch's."""
    ctorch.manual_seed(1234)
    args = re.sub(r"\b(torch\.)?nn\.", "nn.", c["args"])
    args = re.sub(r"\btorch\.(float64|float32|float16|bfloat16|int64|int32)\b", r"ctorch.\1", args)
    m = eval(f"nn.{c['kind']}({args})", {"torch": torch, "nn": ctorch.nn, "ctorch": ctorch})
    m.train(c["train"])
    return m


def our_inputs(spec_text):
    """The case's inputs drawn by ctorch after the same seed (same generator:
    the same values as H.make_inputs, checked), so the forward's own draws
    (dropout) start where torch's do."""
    ctorch.manual_seed(4321)
    xs = []
    for spec in H.input_specs(spec_text):
        if spec is None:
            xs.append(None)
            continue
        typ, size, high, lit = spec
        if typ == "lit":
            xs.append(ctorch.tensor(lit, dtype=ctorch.int64))
        elif typ in ("f32", "f64"):
            xs.append(ctorch.randn(size, dtype=ctorch.float32 if typ == "f32" else ctorch.float64).requires_grad_(True))
        elif typ == "i64":
            xs.append(ctorch.randint(0, high, size))
        else:  # b
            xs.append(ctorch.randn(size) > 0)
    return xs


def dense(t):
    return t.to_dense() if t.layout != ctorch.strided else t


def run_case(c):
    problems = []
    ref = H.build(c)
    init = {k: v.detach().clone() for k, v in ref.state_dict().items()}
    m = ours(c)
    sd = m.state_dict()
    if list(sd) != list(init):
        problems.append(f"state_dict keys: binding {list(sd)}, torch {list(init)}")
    for k, v in init.items():
        if k in sd and (d := H.same(v, to_torch(sd[k]), None)):
            problems.append(f"initial {k}: {d}")
    if repr(m) != repr(ref):
        problems.append(f"repr: binding\n{m!r}\ntorch\n{ref!r}")
    xs, outs = H.run_forward(c, ref)
    cxs = our_inputs(c["inputs"])
    for i, (x, cx) in enumerate(zip(xs, cxs)):
        if x is not None and (d := H.same(x.detach(), to_torch(cx.detach()), None)):
            problems.append(f"input {i} drawn by ctorch: {d}")
    inplace = "inplace=True" in c["args"]  # as the C harness: a clone into the in-place module
    call_xs = [x.clone() if inplace and x is not None and x.dtype in FLOATS else x for x in cxs]
    kw = eval(f"dict({c['kwargs']})", {"torch": torch}) if c["kwargs"] != "-" else {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        couts = H.strip_none(H.flatten(m(*call_xs, **kw)))
    if len(couts) != len(outs) or any((a is None) != (b is None) for a, b in zip(outs, couts)):
        problems.append(f"outputs: binding {len(couts)}, torch {len(outs)}")
        return problems
    for i, (o, co) in enumerate(zip(outs, couts)):
        if o is not None and (d := H.same(o.detach(), to_torch(co.detach()), c["tol"])):
            problems.append(f"output {i}: {d}")
    floats = [o for o in outs if o is not None and o.is_floating_point()]
    if floats:
        loss = sum((o * o).sum() for o in floats)
        closs = None
        for co in couts:
            if co is not None and co.dtype in FLOATS:
                t = (co * co).sum()
                closs = t if closs is None else closs + t
        if loss.requires_grad:
            loss.backward()
            closs.backward()
    grads = {n: p.grad for n, p in m.named_parameters()}
    for n, p in ref.named_parameters():
        cg = grads.get(n)
        if (p.grad is None) != (cg is None):
            problems.append(f"grad of {n}: set in only one of the binding and torch")
        elif cg is not None and (d := H.same(p.grad.to_dense(), to_torch(dense(cg)), c["tol"])):
            problems.append(f"grad of {n}: {d}")
    return problems


def main():
    paths = sys.argv[1:]
    cases = [c for p in paths for c in H.parse_cases(p)]
    version = tuple(int(x) for x in re.findall(r"\d+", torch.__version__)[:2])
    failed = skipped = 0
    for c in cases:
        if c["min_torch"] and version < c["min_torch"]:
            skipped += 1
            continue
        try:
            problems = run_case(c)
        except Exception as e:  # noqa: BLE001 (a case that raises is reported, the rest still run)
            problems = [f"raised {type(e).__name__}: {e}"]
        if problems:
            failed += 1
            print(f"FAIL {c['id']}: " + "; ".join(problems))
    print(f"torch {torch.__version__}: {len(cases) - failed - skipped} of {len(cases)} cases equal through "
          f"ctorch.nn, {skipped} skipped (older torch), {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
