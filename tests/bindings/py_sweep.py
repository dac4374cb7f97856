"""The Python binding's bad-input sweep: every operator
overload of ctorch.ops that api.json does not mark unsafe (ctorch.unchecked's
are left out), called with bad arguments through the package's own Python
functions, as tests/bindings/rust_sweep_gen.py does for the Rust crate; each
new tensor an operator returns is read back the ways a user reads it
(to_dense, coalesce, +, tolist, str), so a constructor that builds unchecked
data crashes in its own turn. Besides the Rust sweep's bad values it passes
what only Python can: None for required arguments, ints past int64 (2**70),
objects of the wrong type (a str for a tensor, a tensor for an int), enum
values as bare ints or strings. Every call must return or raise; a process
death is a crash of that operator.

  py_sweep.py START   the child: runs operators START.., printing "B i name"
                      before operator i and "DONE n ok=.. err=.." at the end
  py_sweep.py         the parent: runs the children through rust_sweep.py
                      (which restarts past a crash and fails on any)
With CTORCH_SWEEP_UNSAFE=1 ctorch.unchecked's operators are swept too (to see
that the sweep finds what they are marked for: it must report crashes).
"""
import json
import math
import os
import subprocess
import sys

R = 6


def child(start):
    import ctorch

    api = json.load(open(os.environ["CTORCH_API_JSON"]))
    with_unsafe = os.environ.get("CTORCH_SWEEP_UNSAFE") == "1"
    ops = [f for f in api["functions"]
           if f.get("origin") == "generated" and (with_unsafe or not (f.get("ops_json") or {}).get("unsafe"))]
    f32, i64, f64, b8 = ctorch.float32, ctorch.int64, ctorch.float64, ctorch.bool

    def t(r, k):
        j = (r + k) % R
        if j == 0:
            return None if k % 3 == 2 else ctorch.tensor([], dtype=f32)
        if j == 1:
            return ctorch.tensor([[0, 1, 2], [3, 4, 5]], dtype=i64)
        if j == 2:
            return ctorch.tensor(1.5) if k % 4 != 3 else 7  # an int where a tensor goes
        if j == 3:
            return ctorch.tensor([[0.5, -1, 2], [3, math.nan, 0]], dtype=f32) if k == 0 else \
                ctorch.tensor([1.0, 2.0, 3.0], dtype=f64)
        if j == 4:
            return ctorch.tensor([[[[True], [False]], [[True], [True]]]], dtype=b8)
        return ctorch.tensor([[0.5, -1], [2, 3], [math.nan, 0]], dtype=f32).to(
            ctorch.complex64 if k % 2 == 0 else ctorch.float16) if k % 5 != 4 else "tensor"

    def some(r, k):
        return (r + k) % 3 != 0

    ints = [0, -1, 2 ** 63 - 1, 2 ** 70, -(1 << 40), 2]
    floats = [0.0, -1.0, math.nan, 1e300, math.inf, 0.5]
    scalars = [0, math.nan, 2 ** 63 - 1, True, complex(1, -1), 2 ** 70]
    dtypes = [99, b8, i64, "float32", ctorch.complex64, ctorch.float16]
    layouts = [getattr(ctorch, "strided", 0), 42, -1, getattr(ctorch, "sparse_coo", 1), "strided", None]
    formats = [getattr(ctorch, "contiguous_format", 0), 42, -1, getattr(ctorch, "channels_last", 2), "x", None]
    devices = ["cpu", "cuda:0", "bogus", "cpu:7", "meta", -7]
    strs = ["", "garbage", "x" * 9000, "sum", "ij->ji", "\U0001F600"]

    def lst(r, k, pick, n):
        j = (r + k) % 4
        return [[], [pick(r, k)], [pick(r, k + m) for m in range(n)], None if k % 2 else [2 ** 70]][j]

    def value(a, r, k):
        b = a["base"]
        if a.get("list"):
            if b == "Tensor":
                ts = lst(r, k, t, 3)
                if ts and a.get("elements_optional"):
                    ts = [x if some(r, m) else None for m, x in enumerate(ts)]
                return ts
            pick = {"int": lambda r, k: ints[(r + k) % R], "SymInt": lambda r, k: ints[(r + k) % R],
                    "float": lambda r, k: floats[(r + k) % R], "bool": lambda r, k: (r + k) % 2 == 1,
                    "Scalar": lambda r, k: scalars[(r + k) % R], "Dimname": lambda r, k: strs[(r + k) % R]}[b]
            return lst(r, k, pick, 9 if b in ("int", "SymInt") else 3)
        if b == "Tensor":
            return t(r, k)
        if b == "Generator":
            return ctorch.Generator("cpu", 7) if some(r, k) else None
        if a.get("enum"):
            return [0, -1, 99, 1, 2 ** 31 - 1, 2][(r + k) % R]
        tab = {"int": ints, "SymInt": ints, "DeviceIndex": ints, "float": floats, "Scalar": scalars,
               "ScalarType": dtypes, "Layout": layouts, "MemoryFormat": formats, "Device": devices, "str": strs,
               "Dimname": strs, "bool": [False, True, 1, 0, None, "yes"]}[b]
        return tab[(r + k) % R]

    def follow(x):
        if not isinstance(x, ctorch.Tensor):
            if isinstance(x, (tuple, list)):
                for y in x:
                    follow(y)
            return
        try:
            if x.numel() > (1 << 16):
                return
        except Exception:
            return
        for read in (lambda: x.to_dense(), lambda: x.coalesce(), lambda: x + x, lambda: x.tolist(),
                     lambda: str(x)):
            try:
                read()
            except Exception:
                pass

    nok = nerr = 0
    missing = []
    for i in range(start, len(ops)):
        f = ops[i]
        op = f["op"]
        print(f"B {i} {f['name']}", flush=True)
        home = ctorch.unchecked if (f.get("ops_json") or {}).get("unsafe") else ctorch.ops
        grp, ov = getattr(home, op["name"], None), op.get("overload") or "default"
        fn = getattr(grp, ov, None) or getattr(grp, ov + "_", None)  # random_.from_: a Python keyword
        if fn is None:
            missing.append(f["name"])
            nerr += R
            continue
        for r in range(R):
            args, kwargs = [], {}
            for k, a in enumerate(op["args"]):
                v = None if a.get("optional") and not some(r, k) else value(a, r, k)
                if a.get("kwarg_only") and (r + k) % 2:
                    kwargs[a["name"]] = v
                else:
                    args.append(v) if not kwargs else kwargs.__setitem__(a["name"], v)
            try:
                follow(fn(*args, **kwargs))
                nok += 1
            except Exception:
                nerr += 1
    print(f"DONE {len(ops)} ok={nok} err={nerr} missing={len(missing)}" + (f" ({missing[0]}...)" if missing else ""),
          flush=True)


def main():
    if os.environ.get("CTORCH_BINDING_SKIP"):
        print(f"skipped: {os.environ['CTORCH_BINDING_SKIP']}")
        sys.exit(77)
    here = os.path.dirname(os.path.abspath(__file__))
    sys.exit(subprocess.call([sys.executable, os.path.join(here, "rust_sweep.py"), "--lang", "python", "--",
                              sys.executable, os.path.abspath(__file__)]))


if __name__ == "__main__":
    if len(sys.argv) > 1:
        child(int(sys.argv[1]))
    else:
        main()
