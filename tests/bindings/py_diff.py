"""Differential test: every generated operator, called through the Python
binding and through PyTorch itself (torch.ops.aten.<name>.<overload>, the
same schema) on the same inputs, must agree: same values (NaN = NaN),
shapes and dtypes, or both fail. Inputs are built from the schema alone
(api.json); each op is swept over input dtypes (float32, float64, int64),
Scalar kinds (int, float, bool) and, for 4-d inputs, channels_last memory.

Needs the Python whose torch matches the libtorch ctorch was built
against (CMake's CTORCH_TORCH_PYTHON). Prints the counts; fails if fewer
than MIN_COMPARED operators were compared or if any disagreed.
"""
import json
import math
import os
import sys
import time

from py_check import torch_or_skip

torch = torch_or_skip()
import ctorch

MIN_COMPARED = int(os.environ.get("CTORCH_DIFF_MIN", "1500"))
BUDGET_S = float(os.environ.get("CTORCH_DIFF_BUDGET_S", "400"))
TRACE = bool(os.environ.get("CTORCH_DIFF_TRACE"))

# Operators not called at all, with why.
SKIP = {
    # Values that cannot agree: uninitialised memory or addresses.
    "data_ptr": "address", "_cufft_get_plan_cache_size": "CUDA only",
    # Both sides read the same process-wide state: calling changes it for later ops.
    "_set_grad_enabled": "process state", "set_num_threads": "process state",
    "_autocast_to_reduced_precision": "process state",
    # Internal helpers that check nothing: on the generated (mismatched)
    # shapes they read or write out of bounds, on both sides.
    "_symeig_helper": "LAPACK on a non-square input corrupts the heap",
    "_compute_linear_combination": "reads past its coefficients",
    "_histogramdd_bin_edges": "reads uninitialised memory for its bin count",
}
# Results are uninitialised memory (compare metadata only).
UNINITIALISED = ("empty", "new_empty", "_empty", "empty_like", "empty_strided", "new_empty_strided",
                 "_empty_affine_quantized", "_empty_per_channel_affine_quantized", "resize", "resize_",
                 "_weight_norm_interface", "_weight_norm_interface_backward",
                 "resize_as", "resize_as_", "_resize_output", "_resize_output_", "set_", "set",
                 "_make_dep_token")  # 2.x: _make_dep_token_cpu returns at::empty({})
# Results that are uninitialised memory on channels_last inputs only: 2.15's
# CPU flash attention. Run twice, PyTorch may return the same leftover bytes
# both times, so the reproduction check of run_one cannot tell them from a
# result; only their metadata is compared on those inputs.
UNINITIALISED_CHANNELS_LAST = ("_scaled_dot_product_flash_attention_for_cpu",)
# c10::ScalarType numbering, as torch.ops returns ScalarType results.
C10_DTYPES = dict(enumerate([torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float16,
                             torch.float32, torch.float64, torch.complex32, torch.complex64, torch.complex128,
                             torch.bool]))


def tmap(v):
    """A ctorch enum/value -> the torch equivalent."""
    if isinstance(v, ctorch._rt.dtype):
        return getattr(torch, v._name)
    if isinstance(v, ctorch._rt.memory_format):
        return getattr(torch, v._name)
    if isinstance(v, ctorch._rt.layout):
        return getattr(torch, v._name)
    return v


# Arguments that say which results a backward operator computes (api.json's
# null_when "not asked for by ...").
MASK_ARGS = ("output_mask", "mask", "grad_input_mask")


class Inputs:
    """Builds a call's arguments for both sides from the schema."""

    def __init__(self, dtype, shape, scalar, channels_last, mask=True):
        self.dtype, self.shape, self.scalar, self.channels_last = dtype, shape, scalar, channels_last
        self.mask = mask
        self.gen = torch.Generator().manual_seed(7)

    def tensor(self, name):
        lname = name.lower()
        if any(k in lname for k in ("index", "indices", "target", "offsets", "label", "lengths")):
            return torch.randint(0, 2, self.shape, generator=self.gen)
        if self.dtype is torch.bool:
            t = torch.randint(0, 2, self.shape, generator=self.gen).bool()
        elif self.dtype.is_floating_point:
            t = torch.randn(self.shape, generator=self.gen, dtype=self.dtype)
        else:
            t = torch.randint(-3, 4, self.shape, generator=self.gen, dtype=self.dtype)
        if self.channels_last and t.dim() == 4:
            t = t.contiguous(memory_format=torch.channels_last)
        return t

    def value(self, a):
        """(present, value) for a required non-tensor argument; present=False to leave it out."""
        n, b, lst = a["name"], a["base"], a.get("list")
        if a["optional"]:
            return True, None
        if b in ("Tensor",):
            if lst:
                return True, [self.tensor(n), self.tensor(n)]
            return True, self.tensor(n)
        if b in ("int", "SymInt"):
            if lst:
                size = a.get("size")
                if n in ("size", "sizes", "shape"):
                    return True, list(self.shape)
                if n in ("stride",):
                    return True, [1] * (size or len(self.shape))
                if n in ("kernel_size",):
                    return True, [1] * (size or 1)
                if "padding" in n or n == "output_padding":
                    return True, [0] * (size or 1)
                if n in ("dilation",):
                    return True, [1] * (size or 1)
                if n in ("dims", "dim"):
                    return True, [0] * (size or 1)
                return True, [1] * (size or 1)
            if n in ("dim1", "end_dim", "destination"):
                return True, 1
            if n in ("n", "num_classes", "steps", "chunks", "sections", "split_size", "repeats",
                     "window_length", "num_samples"):
                return True, 2
            if n in ("k",):
                return True, 1
            if n in ("groups",):
                return True, 1
            if n in ("high", "to", "end"):
                return True, 5
            if "enum" in a:
                return True, 1
            return True, 0
        if b == "float":
            if lst:
                return True, [1.0] * (a.get("size") or 1)
            if n in ("p",):
                return True, 2.0
            if n in ("eps",):
                return True, 1e-5
            if n in ("std", "sigma", "lambd", "beta", "scale", "alpha"):
                return True, 1.0
            return True, 0.5
        if b == "Scalar":
            if lst:
                return True, [self.scalar, self.scalar]
            if n in ("end", "high"):
                return True, 5
            if n in ("start", "low"):
                return True, 0
            if n in ("step",):
                return True, 1
            return True, self.scalar
        if b == "bool":
            if lst:
                return True, [self.mask if n in MASK_ARGS else True] * (a.get("size") or 1)
            return True, False
        if b == "ScalarType":
            return True, ctorch.float32
        if b == "MemoryFormat":
            return True, ctorch.contiguous_format
        if b == "Layout":
            return True, ctorch.strided
        if b == "Device":
            return True, "cpu"
        if b == "str":
            return True, {"equation": "ij->ji", "reduce": "sum", "mode": "reflect", "padding": "valid",
                          "approximate": "none", "rounding_mode": "trunc", "indexing": "ij",
                          "interpolation": "linear", "ord": "fro", "UPLO": "L", "driver": "gelsy",
                          "side": "left", "norm": "backward"}.get(n, "mean")
        if b == "Generator":
            return True, None
        raise LookupError(b)


def to_ctorch(v):
    if isinstance(v, torch.Tensor):
        return ctorch.from_torch(v.clone(memory_format=torch.preserve_format))
    if isinstance(v, list):
        return [to_ctorch(x) for x in v]
    return v


class Meta:
    """A ctorch result DLPack cannot carry (sparse, quantized): its metadata."""

    def __init__(self, t):
        self.shape, self.dtype = tuple(t.shape), t.dtype


def to_torch_value(v):
    if isinstance(v, ctorch.Tensor):
        # DLPack refuses the conjugate/negative bits: resolve them (as
        # PyTorch's own export does) before comparing values.
        v = ctorch.ops.resolve_neg(ctorch.ops.resolve_conj(v))
        try:
            return ctorch.to_torch(v)
        except ctorch.CtorchError:
            return Meta(v)
    if isinstance(v, (list, tuple)):
        return type(v)(to_torch_value(x) for x in v)
    if isinstance(v, (ctorch._rt.dtype, ctorch._rt.layout, ctorch._rt.memory_format)):
        return tmap(v)
    return v


def same(x, y, meta_only):
    """(ok, why) comparing a torch result x with ctorch's y (already converted to torch)."""
    if isinstance(x, (list, tuple)):
        if not isinstance(y, (list, tuple)) or len(x) != len(y):
            return False, f"structure {type(x).__name__}[{len(x)}] vs {type(y).__name__}"
        for a, b in zip(x, y):
            ok, why = same(a, b, meta_only)
            if not ok:
                return ok, why
        return True, ""
    if isinstance(x, torch.Tensor):
        if isinstance(y, Meta):
            ok = tuple(x.shape) == y.shape and str(x.dtype).replace("torch.", "") == y.dtype._name
            return ok, f"metadata {tuple(x.shape)} {x.dtype} vs {y.shape} {y.dtype}"
        if not isinstance(y, torch.Tensor):
            return False, f"tensor vs {type(y).__name__}"
        if x.shape != y.shape or x.dtype != y.dtype:
            return False, f"shape/dtype {tuple(x.shape)} {x.dtype} vs {tuple(y.shape)} {y.dtype}"
        if meta_only or x.layout != torch.strided or x.is_quantized:
            return True, ""
        x = x.resolve_conj().resolve_neg()
        if x.dtype.is_floating_point or x.dtype.is_complex:
            if not torch.allclose(x, y, rtol=1e-5, atol=1e-6, equal_nan=True):
                return False, f"values differ (max {float((x - y).abs().nan_to_num().max())})"
        elif not torch.equal(x, y):
            return False, "values differ"
        return True, ""
    if x is None:
        return y is None, "None vs value"
    if isinstance(x, float) and isinstance(y, float) and math.isnan(x) and math.isnan(y):
        return True, ""
    if isinstance(x, torch.dtype):
        return x == y, f"{x} vs {y}"
    if isinstance(x, int) and isinstance(y, torch.dtype):
        # torch.ops returns a ScalarType as c10's number.
        return C10_DTYPES.get(x) == y, f"{x} ({C10_DTYPES.get(x)}) vs {y}"
    return (x == y or (isinstance(x, float) and abs(x - y) <= 1e-6 * (1 + abs(x)))), f"{x!r} vs {y!r}"


def build_args(op, variant):
    """The call's arguments from the schema: (names, args, kwargs), the same
    values every time for the same variant (Inputs' generator is seeded).
    A fifth element of variant, False, asks a backward op for no result
    (its output mask all false)."""
    dtype, shape, scalar, cl = variant[:4]
    inp = Inputs(dtype, shape, scalar, cl, variant[4] if len(variant) > 4 else True)
    names, args, kwargs = [], [], {}
    for a in op["args"]:
        if "default" in a and not (a["base"] == "Tensor" and not a["optional"]):
            continue
        present, v = inp.value(a)
        if not present:
            continue
        if a["kwarg_only"]:
            kwargs[a["name"]] = v
        else:
            args.append(v)
            names.append(a["name"])
    return names, args, kwargs


def foreign(v):
    """v with every tensor replaced by a DLPack import of a copy: memory
    libtorch did not allocate, as every tensor ctorch gets from Python is."""
    if isinstance(v, torch.Tensor):
        return torch.from_dlpack(v.clone(memory_format=torch.preserve_format))
    if isinstance(v, list):
        return [foreign(x) for x in v]
    return v


def torch_call(torch_fn, op, variant, wrap):
    """PyTorch's result for the variant's inputs passed through wrap, or the exception."""
    _, args, kwargs = build_args(op, variant)
    torch.manual_seed(1234)
    try:
        return torch_fn(*[wrap(tmap(v)) for v in args], **{k: wrap(tmap(v)) for k, v in kwargs.items()}), None
    except Exception as e:  # noqa: BLE001
        return None, e


def null_outputs(op, cr):
    """(result index, element index or -1) of every result the binding gave
    as None (the C output NULL with CTORCH_OK)."""
    if op["returns_convention"] != "out_params":
        return []
    rets = op["returns"]
    vals = tuple(cr) if len(rets) > 1 and isinstance(cr, (tuple, list)) else (cr,)
    out = []
    for k, (r, v) in enumerate(zip(rets, vals)):
        if v is None:
            out.append((k, -1))
        elif r.get("list") and isinstance(v, (list, tuple)):
            out.extend((k, e) for e, x in enumerate(v) if x is None)
    return out


_NULL_REPORT = None


def run_one(f, variant):
    """Calls op f on both sides with the inputs of `variant`; returns
    ("ok"|"both_error"|"mismatch"|"foreign_memory"|"torch_unreproducible", detail).
    Before a disagreement is reported, two checks on the PyTorch side alone
    tell libtorch's own behaviour from ctorch's:
    - only ctorch failed: PyTorch is called again with its tensors imported
      through DLPack (the way the binding's tensors reach ctorch); failing
      then too, the failure belongs to libtorch on foreign memory (e.g.
      _lazy_clone's copy-on-write needs storage libtorch allocated);
    - values differ: PyTorch is called again on the same inputs; if it does
      not reproduce its own result, the kernel is nondeterministic on these
      inputs (e.g. 2.15's _scaled_dot_product_flash_attention_for_cpu on
      channels_last tensors returns uninitialised memory)."""
    op = f["op"]
    names, args, kwargs = build_args(op, variant)
    t_args = [tmap(v) for v in args]
    t_kwargs = {k: tmap(v) for k, v in kwargs.items()}
    c_args = [to_ctorch(v) for v in args]
    c_kwargs = {(k + "_" if k in ("from",) else k): to_ctorch(v) for k, v in kwargs.items()}
    torch_fn = getattr(getattr(torch.ops.aten, op["name"]), op["overload"] or "default")
    c_fn = getattr(getattr(ctorch.ops, op["name"]), (op["overload"] or "default") +
                   ("_" if op["overload"] in ("from", "in", "is") else ""))
    if TRACE:
        print("call", op["qualified_name"], variant, flush=True)
    if _SIDE_REPORT:
        _SIDE_REPORT("torch")
    torch.manual_seed(1234)
    try:
        tr = torch_fn(*t_args, **t_kwargs)
        terr = None
    except Exception as e:  # noqa: BLE001 (any failure counts as "failed")
        tr, terr = None, e
    if _SIDE_REPORT:
        _SIDE_REPORT("ctorch")
    torch.manual_seed(1234)
    try:
        cr = c_fn(*c_args, **c_kwargs)
        cerr = None
    except (ctorch.CtorchError, TypeError, ValueError, IndexError, NotImplementedError, MemoryError, RuntimeError) as e:
        cr, cerr = None, e
    if _SIDE_REPORT:
        _SIDE_REPORT("torch")
    if cerr is None and _NULL_REPORT:
        _NULL_REPORT(null_outputs(op, cr), len(variant) > 4 and not variant[4])
    if terr is not None and cerr is not None:
        return "both_error", ""
    if terr is not None:
        return "mismatch", f"only torch failed: {str(terr).splitlines()[0][:160]}"
    if cerr is not None:
        _, ferr = torch_call(torch_fn, op, variant, foreign)
        if ferr is not None:
            return "foreign_memory", f"{str(cerr).splitlines()[0][:200]}"
        return "mismatch", f"only ctorch failed: {str(cerr).splitlines()[0][:200]}"
    meta = op["name"] in UNINITIALISED or "nondeterministic_bitwise" in op["tags"] or (
        op["name"] in UNINITIALISED_CHANNELS_LAST and len(variant) > 3 and variant[3] and len(variant[1]) == 4)
    ok, why = same(tr, to_torch_value(cr), meta)
    if not ok:
        if why.startswith("values differ"):
            tr2, _ = torch_call(torch_fn, op, variant, lambda v: v)
            if not same(tr, tr2, False)[0]:
                return "torch_unreproducible", why
        return "mismatch", why
    # Arguments the op writes (in-place, out=) must agree too.
    for a in op["args"]:
        if "alias" in a and a["alias"]["write"]:
            if a["name"] in kwargs:
                x, y = t_kwargs[a["name"]], c_kwargs[a["name"]]
            elif a["name"] in names:
                k = names.index(a["name"])
                x, y = t_args[k], c_args[k]
            else:
                continue
            ok, why = same(x, to_torch_value(y), meta)
            if not ok:
                return "mismatch", f"written argument {a['name']}: {why}"
    return "ok", ""


def test_op(f, report):
    """All variants of one operator; report(kind, payload) streams results."""
    op = f["op"]
    shapes = [(2, 3), (2, 3, 4, 4), (3,), (2, 3, 4)]
    base = None
    for shape in shapes:
        res, why = run_one(f, (torch.float32, shape, 2, False))
        report(res, ["float32", shape, why])
        if res == "ok":
            base = shape
            break
        if res != "both_error":
            return
    if base is None:
        return
    report("compared", [])
    if any(a["name"] in MASK_ARGS and a["base"] == "bool" and a.get("list") for a in op["args"]):
        # A backward op asked for nothing: the results it leaves undefined.
        res, why = run_one(f, (torch.float32, base, 2, False, False))
        report(res, ["float32 output_mask all false", base, why])
    variants = [(torch.float64, base, 2, False, "dtype"), (torch.int64, base, 2, False, "dtype")]
    if any(a["base"] == "Scalar" for a in op["args"]):
        # Scalar kinds: INT above, FLOAT and COMPLEX here. Not BOOL: torch.ops
        # reads a Python bool given for a Scalar as an int (torch.full((2,),
        # True) is bool, torch.ops.aten.full([2], True) int64), while the
        # binding passes a BOOL Scalar, as PyTorch's Python API does.
        variants += [(torch.float32, base, 2.5, False, "scalar_kind"),
                     (torch.float32, base, 1 + 2j, False, "scalar_kind")]
    if len(base) == 4:
        variants.append((torch.float32, base, 2, True, "memory_format"))
    for dt, shp, sc, cl, kind in variants:
        res, why = run_one(f, (dt, shp, sc, cl))
        report(res, [f"{dt} scalar={sc!r} channels_last={cl}", shp, why, kind])


def worker(ops, start, wfd, stop=None):
    """Runs in a forked child: tests ops[start:], one JSON line per event.
    A crash of libtorch kills only this child; the parent notes which op and
    which side was running and forks a new child for the rest."""
    out = os.fdopen(wfd, "w", buffering=1)
    global _SIDE_REPORT
    for i in range(start, len(ops) if stop is None else stop):
        out.write(json.dumps(["start", i]) + "\n")
        _SIDE_REPORT = lambda side: out.write(json.dumps(["side", i, side]) + "\n")  # noqa: E731
        global _NULL_REPORT
        _NULL_REPORT = lambda nulls, unmasked: out.write(  # noqa: E731
            json.dumps(["nulls", i, [nulls, unmasked]]) + "\n")
        test_op(ops[i], lambda kind, payload: out.write(json.dumps([kind, i, payload]) + "\n"))
    out.write(json.dumps(["done"]) + "\n")
    out.close()
    os._exit(0)


_SIDE_REPORT = None


def check_nulls(funcs, observed, unmasked):
    """api.json's null_result against what the calls returned; prints the
    counts, returns the problems."""
    problems = []
    for (name, k, element), n in sorted(observed.items()):
        outs = [p for p in funcs[name]["params"] if p["direction"] == "out"]
        p = outs[k] if k < len(outs) else None
        flag = "elements_null_result" if element else "null_result"
        if p is None or not p.get(flag):
            problems.append(f"{name}: result {k}{' (an element)' if element else ''} came back NULL with "
                            f"CTORCH_OK ({n} calls) but api.json does not say {flag}")
    masked_ok = 0
    for name, nulls in sorted(unmasked.items()):
        outs = [p for p in funcs[name]["params"] if p["direction"] == "out"]
        for k, p in enumerate(outs):
            if p.get("null_result") and str(p.get("null_when", "")).startswith("not asked for by"):
                if k in nulls:
                    masked_ok += 1
                else:
                    problems.append(f"{name}: result {k} is flagged null_result ({p['null_when']}) but came back "
                                    "defined with the mask all false")
    print(f"null results: {sum(observed.values())} results came back NULL with CTORCH_OK over "
          f"{len(observed)} (function, result) pairs; {masked_ok} mask-gated results of {len(unmasked)} "
          "functions came back NULL when not asked for")
    return problems


def main():
    api_path = os.environ["CTORCH_API_JSON"]
    with open(api_path, encoding="utf-8") as fh:
        doc = json.load(fh)
    ctorch.set_num_threads(1)
    torch.set_num_threads(1)
    # Operators ops.json marks unsafe (memory-unsafe on bad inputs) are not called.
    ops = [f for f in doc["functions"] if f["origin"] == "generated" and f["op"]["name"] not in SKIP
           and not f.get("ops_json", {}).get("unsafe")
           and not f["op"]["name"].startswith(("_cudnn", "cudnn", "miopen", "_nnpack", "mkldnn", "_mkldnn",
                                              "_fbgemm", "fbgemm", "_nested", "nested", "_sparse",
                                              "sparse", "_to_sparse", "to_sparse", "_test", "_fused"))
           and not any(a["base"] in ("Dimname",) for a in f["op"]["args"])]
    t0 = time.time()
    counts = {"ok": 0, "both_error": 0, "mismatch": 0, "foreign_memory": 0, "torch_unreproducible": 0}
    libtorch_own = {"foreign_memory": [], "torch_unreproducible": []}
    compared_ops, mismatches, crashed = set(), [], []
    sweeps = {"dtype": 0, "scalar_kind": 0, "memory_format": 0}
    def run_children(start, stop=None):
        """Runs ops[start:stop] in forked children; returns the crashes as
        (index, side, signal) after recording every other result."""
        crashes = []
        while start < (len(ops) if stop is None else stop):
            if time.time() - t0 > BUDGET_S:
                print(f"stopped after the {BUDGET_S:.0f} s budget at operator {start} of {len(ops)}")
                break
            r, w = os.pipe()
            pid = os.fork()
            if pid == 0:
                os.close(r)
                try:
                    worker(ops, start, w, stop)
                finally:
                    os._exit(3)
            os.close(w)
            current, side, finished = start, None, False
            with os.fdopen(r) as inp:
                for line in inp:
                    ev = json.loads(line)
                    if ev[0] == "done":
                        finished = True
                    elif ev[0] == "start":
                        current, side = ev[1], None
                    elif ev[0] == "side":
                        side = ev[2]
                    else:
                        record(*ev)
            _, status = os.waitpid(pid, 0)
            if finished:
                break
            sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
            crashes.append((current, side, sig))
            start = current + 1
        return crashes

    # Operators with a hand-written guard (shim/ops/guards.h)
    # refuse, on purpose, inputs libtorch's kernel accepts unchecked (reading
    # past a buffer, or answering from garbage): such a refusal is not a
    # disagreement, and is counted apart.
    import re as _re
    import glob as _glob
    guarded = set()
    for _guards_h in _glob.glob(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shim", "ops",
                                             "guards*.h")):  # guards.h and the guards_*.h it includes
        with open(_guards_h) as f:
            guarded |= set(_re.findall(r"^void\s+(\w+)\s*\(", f.read(), _re.M))
    guarded_refusals = []

    # Results that came back None (NULL with CTORCH_OK): each must be flagged
    # null_result (elements_null_result for a list's elements) in api.json;
    # and a result flagged because an output mask gates it must come back
    # None when the mask asks for nothing (where that call succeeds).
    observed_nulls = {}   # (c_name, result, element?) -> count
    unmasked_calls = {}   # c_name -> set of results that came back None with the mask all false

    def record(kind, i, payload):
        name = ops[i]["name"]
        if kind == "nulls":
            nulls, unmasked = payload
            for k, e in nulls:
                key = (name, k, e >= 0)
                observed_nulls[key] = observed_nulls.get(key, 0) + 1
            if unmasked:
                unmasked_calls.setdefault(name, set()).update(k for k, e in nulls if e < 0)
            return
        if kind == "compared":
            compared_ops.add(name)
            return
        if (kind == "mismatch" and name[len("ctorch_"):] in guarded and "only ctorch failed" in str(payload[-1])
                and ("INVALID_ARGUMENT" in str(payload[-1]) or "CTORCH_VALUE" in str(payload[-1]))):
            guarded_refusals.append(name)
            return
        counts[kind] += 1
        if kind in libtorch_own:
            libtorch_own[kind].append(f"{name} ({payload[0]}, {payload[1]})")
        if kind == "mismatch":
            mismatches.append((name, *payload))
        elif kind == "ok" and len(payload) == 4:
            sweeps[payload[3]] += 1

    for i, side, sig in run_children(0):
        # A crash may come from an earlier call's heap corruption: the op
        # runs again alone in a fresh process. A crash of the PyTorch call is
        # libtorch's own (counted, skipped); of the ctorch call, a failure.
        again = run_children(i, i + 1)
        if not again:
            continue
        _, side, sig = again[0]
        name = ops[i]["name"]
        if side == "ctorch":
            mismatches.append((name, "ctorch crashed where PyTorch did not", f"signal/status {sig}"))
        else:
            crashed.append((name, sig))
    dt = time.time() - t0
    print(f"python binding vs PyTorch {torch.__version__}: {len(compared_ops)} operators compared "
          f"(of {len(ops)} tried); calls: {counts['ok']} agreed, {counts['both_error']} failed on both sides, "
          f"{counts['mismatch']} disagreed; sweep calls agreeing: {sweeps['dtype']} dtype, "
          f"{sweeps['scalar_kind']} scalar kind, {sweeps['memory_format']} channels_last; "
          f"{len(crashed)} operators crash libtorch on these inputs (PyTorch side): "
          f"{', '.join(n[len('ctorch_'):] for n, _ in crashed)}; {dt:.1f} s")
    if guarded_refusals:
        print(f"  refused by ctorch's guards where libtorch runs unchecked: {', '.join(sorted(set(guarded_refusals)))}")
    if libtorch_own["foreign_memory"]:
        print("  failed in ctorch and in PyTorch alike once PyTorch's inputs come through DLPack (libtorch on "
              f"memory it did not allocate): {'; '.join(libtorch_own['foreign_memory'])}")
    if libtorch_own["torch_unreproducible"]:
        print("  PyTorch does not reproduce its own result on the same inputs (nondeterministic kernel; "
              f"values not comparable): {'; '.join(libtorch_own['torch_unreproducible'])}")
    for m in mismatches[:80]:
        print("  DISAGREE", *m)
    null_problems = check_nulls({f["name"]: f for f in ops}, observed_nulls, unmasked_calls)
    for p in null_problems:
        print("  NULL_RESULT", p)
    if mismatches or null_problems:
        return 1
    if len(compared_ops) < MIN_COMPARED:
        print(f"FAIL: fewer than {MIN_COMPARED} operators compared")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
