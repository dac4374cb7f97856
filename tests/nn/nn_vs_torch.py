"""Proves ctorch's built-in modules equal to torch.nn, case by case.

Usage: nn_vs_torch.py NN_DUMP WORKDIR CASES.txt [CASES.txt ...] [-k SUBSTRING]
Runs with the Python whose torch matches the libtorch ctorch was built
against (ctest passes it: Debian's python3 with torch 1.13.1, or the
torch 2.15.0 venv). Exit 0 when every case matches, 1 otherwise.

CASE FILES (tests/nn/cases/*.txt; layers.txt, seq.txt, ...)
  One case per line, fields separated by " | " (space, bar, space):
    id | Kind | ctor args | inputs | forward kwargs | train|eval | tol
  id       unique in its file; names the files in WORKDIR.
  Kind     torch.nn's class name (ctorch_nn_new's kind).
  ctor args  Python call text, e.g. `16, 33, 3, stride=2, bias=False`, or
           `-` for none (Python: eval(f"torch.nn.{Kind}({args})"); C:
           ctorch_nn_new).
  inputs   ";"-separated, made in order after seed 4321:
             f32:2x3x8x8   torch.randn(2, 3, 8, 8), requires_grad
             f64:2x3       torch.randn(2, 3, dtype=torch.float64), requires_grad
             i64:4x5<10    torch.randint(0, 10, (4, 5))
             b:4x5         torch.randn(4, 5) > 0
             lit:0,2,5     torch.tensor([0, 2, 5]) (int64, no draw; e.g.
                           EmbeddingBag's offsets)
             none          None (an optional input left out)
  forward kwargs  Python keyword text (`output_size=[5, 9]`) or `-`.
  train|eval  the mode set right after construction.
  tol      `exact` (torch.equal) or a float used as rtol and atol for
           outputs, grads and the state after forward. Initial parameters
           and buffers are always compared bit for bit. A float tol needs a
           comment line just above saying which kernel is not deterministic
           or why Python takes another path.
  Lines starting with # are comments. `#@ min_torch X.Y` applies to the
  next case only: it is reported skipped on an older torch (an option that
  torch.nn gained later; C accepts it on every version).

PROCEDURE (both sides the same)
  seed 1234 -> construct -> train()/eval() -> seed 4321 -> inputs in order
  -> forward -> loss = sum over floating outputs of (o * o).sum() ->
  backward (when the loss requires grad).
  A case whose ctor args contain `inplace=True` passes a clone of each
  floating input (autograd refuses in-place writes into a leaf that
  requires grad); input grads are the leaves'.
  Inputs are passed positionally, except where CALL below packs them as
  Python's forward takes them (LSTM: x, h0, c0 -> x, (h0, c0)). Outputs are
  flattened in Python's order (LSTM: out, (h, c) -> out, h, c); trailing
  None outputs are dropped on both sides (MaxPool2d without indices
  returns one tensor in Python, (output, None) in C).

COMPARED
  state_dict keys and their order, named_parameters names, initial state
  bit for bit, the inputs themselves, outputs (None where Python has None),
  each parameter's grad, each floating input's grad, the state dict after
  forward (running stats, num_batches_tracked), repr(module). Then state
  dicts both ways with strict loading: Python's state dict after forward,
  perturbed (floats * 1.5 + 0.25, integers + 3), is loaded into a fresh C
  module, whose forward must give what a fresh Python module with that dict
  gives; C's state dict after forward loads into a fresh Python module with
  strict=True and reproduces C's values.
"""
import os
import subprocess
import sys
import warnings

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # tests/optional_deps.py
from optional_deps import need  # noqa: E402

safe_open = need("safetensors").safe_open
save_file = need("safetensors.torch").save_file


def flatten(o):
    if isinstance(o, (tuple, list)):
        r = []
        for x in o:
            r.extend(flatten(x))
        return r
    return [o]


def strip_none(xs):
    xs = list(xs)
    while xs and xs[-1] is None:
        xs.pop()
    return xs


# How a kind's flat inputs reach Python's forward, where positional
# passing is not Python's signature. Default: module(*inputs, **kwargs).
def _hx_pair(m, xs, kw):  # LSTM / LSTMCell: (input, h0, c0) -> input, (h0, c0)
    if len(xs) == 1 or (xs[1] is None and xs[2] is None):
        return m(xs[0], **kw)
    return m(xs[0], (xs[1], xs[2]), **kw)


def _mha(m, xs, kw):  # query, key, value, key_padding_mask, attn_mask
    names = ["key_padding_mask", "attn_mask"]
    extra = {n: x for n, x in zip(names, xs[3:])}
    return m(*xs[:3], **extra, **kw)


CALL = {"LSTM": _hx_pair, "LSTMCell": _hx_pair, "MultiheadAttention": _mha}


def parse_cases(path):
    cases, min_torch = [], None
    with open(path) as f:
        for raw in f:
            line = raw.strip()
            if not line:
                continue
            if line.startswith("#@"):
                parts = line[2:].split()
                if len(parts) == 2 and parts[0] == "min_torch":
                    min_torch = tuple(int(p) for p in parts[1].split("."))
                continue
            if line.startswith("#"):
                continue
            fields = [x.strip() for x in line.split(" | ")]
            if len(fields) != 7:
                raise SystemExit(f"{path}: not 7 fields: {line}")
            cid, kind, args, inputs, kwargs, mode, tol = fields
            cases.append(dict(id=cid, kind=kind, args="" if args == "-" else args, inputs=inputs, kwargs=kwargs, train=mode == "train",
                              tol=None if tol == "exact" else float(tol), min_torch=min_torch))
            min_torch = None
    return cases


def input_specs(spec):
    """The case's inputs as (type, size, high, literal values), None for `none`:
    the one reader of the input syntax (py_nn_cases.py draws them with ctorch)."""
    out = []
    for tok in spec.split(";"):
        tok = tok.strip()
        if tok == "none":
            out.append(None)
            continue
        typ, dims = tok.split(":", 1)
        if typ == "lit":
            out.append((typ, [], None, [int(v) for v in dims.split(",")]))
            continue
        if typ not in ("f32", "f64", "i64", "b"):
            raise SystemExit(f"unknown input type {typ}")
        high = None
        if "<" in dims:
            dims, h = dims.split("<")
            high = int(h)
        out.append((typ, [int(d) for d in dims.split("x")] if dims else [], high, None))
    return out


def make_inputs(spec):
    xs = []
    for s in input_specs(spec):
        if s is None:
            xs.append(None)
            continue
        typ, size, high, lit = s
        if typ == "lit":
            xs.append(torch.tensor(lit, dtype=torch.int64))
        elif typ in ("f32", "f64"):
            xs.append(torch.randn(size, dtype=torch.float32 if typ == "f32" else torch.float64).requires_grad_())
        elif typ == "i64":
            xs.append(torch.randint(0, high, size))
        else:  # b
            xs.append(torch.randn(size) > 0)
    return xs


def build(c):
    torch.manual_seed(1234)
    m = eval(f"torch.nn.{c['kind']}({c['args']})", {"torch": torch, "nn": torch.nn})
    m.train(c["train"])
    return m


def run_forward(c, m):
    """seed 4321, inputs, forward; returns (inputs, flat outputs)."""
    torch.manual_seed(4321)
    xs = make_inputs(c["inputs"])
    inplace = "inplace=True" in c["args"]
    call_xs = [x.clone() if inplace and x is not None and x.is_floating_point() else x for x in xs]
    kw = eval(f"dict({c['kwargs']})", {"torch": torch}) if c["kwargs"] != "-" else {}
    call = CALL.get(c["kind"], lambda mod, a, k: mod(*a, **k))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = call(m, call_xs, kw)
    return xs, strip_none(flatten(out))


def same(a, b, tol):
    if a.dtype != b.dtype or a.shape != b.shape:
        return f"dtype/shape {b.dtype} {tuple(b.shape)} in C, {a.dtype} {tuple(a.shape)} in Python"
    if tol is None or not a.is_floating_point():
        ok = torch.equal(a, b) or (a.is_floating_point() and torch.equal(a.isnan(), b.isnan())
                                   and torch.equal(a.nan_to_num(), b.nan_to_num()))
        return None if ok else f"differs (max abs diff {(a.double() - b.double()).abs().max().item():.3g})"
    if torch.allclose(a, b, rtol=tol, atol=tol, equal_nan=True):
        return None
    return f"differs beyond tol {tol} (max abs diff {(a.double() - b.double()).abs().max().item():.3g})"


def read_c(path):
    with safe_open(path, "pt") as f:
        meta = f.metadata() or {}
        ts = {k: f.get_tensor(k) for k in f.keys()}
    return meta, ts


def lines(s):
    return [x for x in s.split("\n") if x]


def perturbed(sd):
    out = {}
    for k, v in sd.items():
        v = v.detach()
        out[k] = (v * 1.5 + 0.25 if v.is_floating_point() else v + 3).contiguous().clone()
    return out


def check_run(c, work, problems):
    """Phase 1: C's run against Python's; writes Python's state dict for phase 2."""
    meta, ts = read_c(os.path.join(work, c["id"] + ".c.safetensors"))
    err = meta.get("error", "")
    try:
        m = build(c)
        init = {k: v.detach().clone() for k, v in m.state_dict().items()}
        xs, outs = run_forward(c, m)
    except Exception as e:  # Python refuses the case too: both must fail
        if not err:
            problems.append(f"Python failed ({type(e).__name__}: {e}) where C did not")
        return None
    if err:
        problems.append(f"C failed: {err}")
        return None
    tol = c["tol"]
    if lines(meta.get("state_keys", "")) != list(init):
        problems.append(f"state_dict keys: C {lines(meta.get('state_keys', ''))}, Python {list(init)}")
    names = [n for n, _ in m.named_parameters()]
    if lines(meta.get("param_names", "")) != names:
        problems.append(f"parameter names: C {lines(meta.get('param_names', ''))}, Python {names}")
    for k, v in init.items():
        if "init." + k in ts and (d := same(v, ts["init." + k], None)):
            problems.append(f"initial {k}: {d}")
    for i, x in enumerate(xs):
        if x is not None and (d := same(x.detach(), ts.get(f"in.{i}", torch.empty(0)), None)):
            problems.append(f"input {i}: {d}")
    c_mask = meta.get("outputs", "").rstrip("N")
    py_mask = "".join("N" if o is None else "T" for o in outs)
    if c_mask != py_mask:
        problems.append(f"outputs: C {c_mask!r}, Python {py_mask!r} (T tensor, N None)")
    for i, o in enumerate(outs):
        if o is not None and f"out.{i}" in ts and (d := same(o.detach(), ts[f"out.{i}"], tol)):
            problems.append(f"output {i}: {d}")
    floats = [o for o in outs if o is not None and o.is_floating_point()]
    if floats:
        loss = sum((o * o).sum() for o in floats)
        if loss.requires_grad:
            loss.backward()
    for n, p in m.named_parameters():
        cg = ts.get("grad." + n)
        if (p.grad is None) != (cg is None):
            problems.append(f"grad of {n}: {'None' if cg is None else 'set'} in C, "
                            f"{'None' if p.grad is None else 'set'} in Python")
        elif cg is not None and (d := same(p.grad.to_dense(), cg, tol)):
            problems.append(f"grad of {n}: {d}")
    for i, x in enumerate(xs):
        if x is None or not x.is_floating_point():
            continue
        cg = ts.get(f"igrad.{i}")
        if (x.grad is None) != (cg is None):
            problems.append(f"grad of input {i}: present in only one of C and Python")
        elif cg is not None and (d := same(x.grad, cg, tol)):
            problems.append(f"grad of input {i}: {d}")
    for k, v in m.state_dict().items():
        if f"post.{k}" in ts and (d := same(v.detach(), ts[f"post.{k}"], tol)):
            problems.append(f"{k} after forward: {d}")
    if meta.get("repr", "") != repr(m):
        problems.append(f"repr: C {meta.get('repr', '')!r}, Python {repr(m)!r}")
    # Phase 2 material: Python's perturbed dict, and what it gives in Python.
    sd = perturbed(m.state_dict())
    save_file(sd, os.path.join(work, c["id"] + ".py_sd.safetensors"))
    m2 = build(c)
    m2.load_state_dict(sd, strict=True)
    _, outs2 = run_forward(c, m2)
    return [None if o is None else o.detach() for o in outs2], {k: v.detach().clone() for k, v in
                                                                m2.state_dict().items()}, ts


def check_load(c, work, expected, problems):
    """Phase 2: Python's dict in C, C's dict in Python (strict both ways)."""
    outs2, post2, ts1 = expected
    meta, ts = read_c(os.path.join(work, c["id"] + ".c_load.safetensors"))
    if meta.get("error"):
        problems.append(f"C with Python's state dict: {meta['error']}")
        return
    for i, o in enumerate(outs2):
        if o is not None and (d := same(o, ts.get(f"out.{i}", torch.empty(0)), c["tol"])):
            problems.append(f"output {i} with Python's state dict: {d}")
    for k, v in post2.items():
        if d := same(v, ts.get(f"post.{k}", torch.empty(0)), c["tol"]):
            problems.append(f"{k} after forward with Python's state dict: {d}")
    c_sd = {k[len("post."):]: v for k, v in ts1.items() if k.startswith("post.")}
    m = build(c)
    try:
        m.load_state_dict(c_sd, strict=True)
    except Exception as e:
        problems.append(f"C's state dict refused by Python (strict=True): {e}")
        return
    for k, v in m.state_dict().items():
        if d := same(c_sd[k], v.detach(), None):
            problems.append(f"C's {k} loaded into Python: {d}")


def main(argv):
    sub = None
    if "-k" in argv:
        i = argv.index("-k")
        sub = argv[i + 1]
        argv = argv[:i] + argv[i + 2:]
    if len(argv) < 4:
        raise SystemExit(__doc__)
    dump, work, files = argv[1], argv[2], argv[3:]
    os.makedirs(work, exist_ok=True)
    version = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2])
    failed = passed = skipped = 0
    for path in files:
        cases = [c for c in parse_cases(path) if sub is None or sub in c["id"]]
        for name in os.listdir(work):  # stale files from an earlier run
            if name.endswith(".safetensors"):
                os.remove(os.path.join(work, name))
        subprocess.run([dump, "run", path, work], check=True)
        expected, problems = {}, {}
        for c in cases:
            if c["min_torch"] and version < c["min_torch"]:
                continue
            problems[c["id"]] = []
            expected[c["id"]] = check_run(c, work, problems[c["id"]])
        subprocess.run([dump, "load", path, work], check=True)
        for c in cases:
            if c["min_torch"] and version < c["min_torch"]:
                print(f"skip {c['id']}: needs torch >= {'.'.join(map(str, c['min_torch']))}")
                skipped += 1
                continue
            p = problems[c["id"]]
            if expected[c["id"]] is not None and not p:
                check_load(c, work, expected[c["id"]], p)
            if p:
                failed += 1
                print(f"FAIL {c['id']} ({c['kind']}({c['args']})):")
                for x in p:
                    print(f"    {x}")
            else:
                passed += 1
                print(f"ok   {c['id']}")
    print(f"{passed} passed, {failed} failed, {skipped} skipped (torch {torch.__version__})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
