#!/usr/bin/env python3
"""The module layer's core against torch.nn, with the torch of the libtorch
ctorch was built with: after ctorch_manual_seed(s) and torch.manual_seed(s)
the same modules have bit-identical parameters, the same state-dict keys in
the same order, the same repr text and the same forward output; state dicts
cross both ways (ctorch_tensor_dict_save -> torch.load -> strict
load_state_dict, torch.save -> ctorch_load_dict -> strict load). Only what
the core owns (Linear, Identity, Flatten, ReLU, Sequential, ModuleList,
ModuleDict, custom modules); the layers' cases are tests/nn/.

Drives libctorch ($CTORCH_LIB) through ctypes directly: a handful of
functions, so the test depends on nothing but the C ABI.
"""
import ctypes as C
import json
import os
import sys
import tempfile

import torch

lib = C.CDLL(os.environ["CTORCH_LIB"])
lib.ctorch_last_error.restype = C.c_char_p
P = C.c_void_p
FLOAT32, FLOAT64 = 9, 10
DTYPES = {torch.float32: FLOAT32, torch.float64: FLOAT64}
failures = []


def ok(st, what):
    if st != 0:
        raise RuntimeError(f"{what}: status {st}: {lib.ctorch_last_error().decode()}")


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def nn_new(kind, args=""):
    m = P()
    ok(lib.ctorch_nn_new(C.byref(m), kind.encode(), args.encode()), f"ctorch_nn_new({kind}, {args})")
    return m


def take_string(p):
    s = C.cast(p, C.c_char_p).value.decode()
    lib.ctorch_string_free(p)
    return s


def c_repr(m):
    p = P()
    ok(lib.ctorch_nn_module_repr(C.byref(p), m), "repr")
    return take_string(p)


def to_torch(t):
    """A ctorch tensor handle's values as a torch tensor (a copy)."""
    nd = C.c_int64()
    ok(lib.ctorch_tensor_dim(C.byref(nd), t), "dim")
    sizes = (C.c_int64 * max(nd.value, 1))()
    ok(lib.ctorch_tensor_sizes(sizes, C.c_size_t(nd.value), t), "sizes")
    dt = C.c_int()
    ok(lib.ctorch_tensor_dtype(C.byref(dt), t), "dtype")
    dtype = {v: k for k, v in DTYPES.items()}[dt.value]
    out = torch.empty([sizes[i] for i in range(nd.value)], dtype=dtype)
    ok(lib.ctorch_tensor_copy_to(C.c_void_p(out.data_ptr()), C.c_size_t(out.numel() * out.element_size()), t), "copy_to")
    return out


def from_torch(x):
    x = x.contiguous()
    t = P()
    sizes = (C.c_int64 * max(x.dim(), 1))(*x.shape)
    ok(lib.ctorch_tensor_from_data(C.byref(t), C.c_void_p(x.data_ptr()), C.c_size_t(x.numel() * x.element_size()),
                                   sizes, C.c_size_t(x.dim()), DTYPES[x.dtype]), "from_data")
    return t


def dict_items(d):
    n = C.c_size_t()
    ok(lib.ctorch_tensor_dict_size(C.byref(n), d), "dict_size")
    items = []
    for i in range(n.value):
        k = C.c_char_p()
        ok(lib.ctorch_tensor_dict_key(C.byref(k), d, C.c_size_t(i)), "dict_key")
        t = P()
        ok(lib.ctorch_tensor_dict_get(C.byref(t), d, C.c_size_t(i)), "dict_get")
        items.append((k.value.decode(), to_torch(t)))
        lib.ctorch_tensor_free(t)
    return items


def c_state_dict(m):
    d = P()
    ok(lib.ctorch_nn_module_state_dict(C.byref(d), m), "state_dict")
    items = dict_items(d)
    lib.ctorch_tensor_dict_free(d)
    return items


def c_named_parameters(m):
    d = P()
    ok(lib.ctorch_nn_module_named_parameters(C.byref(d), m, 1), "named_parameters")
    items = dict_items(d)
    lib.ctorch_tensor_dict_free(d)
    return [k for k, _ in items]


def append(parent, child):
    ok(lib.ctorch_nn_module_append(parent, child), "append")
    lib.ctorch_nn_module_free(child)


def compare(name, c_mod, py_mod, x=None):
    """Keys, values (bit for bit), named_parameters, repr, forward."""
    sd_c = c_state_dict(c_mod)
    sd_p = list(py_mod.state_dict().items())
    check([k for k, _ in sd_c] == [k for k, _ in sd_p], f"{name}: state_dict keys {[k for k, _ in sd_c]} vs {[k for k, _ in sd_p]}")
    for (k, a), (_, b) in zip(sd_c, sd_p):
        check(torch.equal(a, b), f"{name}: {k} differs (max {float((a - b).abs().max()) if a.shape == b.shape else 'shape'})")
    check(c_named_parameters(c_mod) == [k for k, _ in py_mod.named_parameters()], f"{name}: named_parameters")
    rc, rp = c_repr(c_mod), repr(py_mod)
    check(rc == rp, f"{name}: repr\n{rc}\nvs\n{rp}")
    if x is not None:
        t = from_torch(x)
        y = P()
        ok(lib.ctorch_nn_module_forward(C.byref(y), c_mod, t), f"{name}: forward")
        yc = to_torch(y)
        yp = py_mod(x).detach()
        check(torch.equal(yc, yp), f"{name}: forward output differs")
        lib.ctorch_tensor_free(y)
        lib.ctorch_tensor_free(t)


def seeded(seed, build_c, build_py):
    ok(lib.ctorch_manual_seed(C.c_uint64(seed)), "seed")
    c_mod = build_c()
    torch.manual_seed(seed)
    return c_mod, build_py()


def main():
    nnm = torch.nn
    for seed in (0, 1234, 2**40 + 7):
        for args, kw in (("784, 10", dict(in_features=784, out_features=10)),
                         ("5, 3, bias=False", dict(in_features=5, out_features=3, bias=False)),
                         ("3, 4, dtype=torch.float64", dict(in_features=3, out_features=4, dtype=torch.float64)),
                         ("1, 1", dict(in_features=1, out_features=1))):
            c_mod, p_mod = seeded(seed, lambda: nn_new("Linear", args), lambda: nnm.Linear(**kw))
            x = torch.randn(2, kw["in_features"], dtype=kw.get("dtype", torch.float32))
            compare(f"Linear({args}) seed {seed}", c_mod, p_mod, x)
            lib.ctorch_nn_module_free(c_mod)

    def c_mlp():
        s = nn_new("Sequential")
        append(s, nn_new("Flatten"))
        append(s, nn_new("Linear", "12, 8"))
        append(s, nn_new("ReLU", "inplace=True"))
        append(s, nn_new("Identity"))
        append(s, nn_new("Linear", "8, 2"))
        return s

    c_mod, p_mod = seeded(7, c_mlp, lambda: nnm.Sequential(nnm.Flatten(), nnm.Linear(12, 8), nnm.ReLU(inplace=True),
                                                         nnm.Identity(), nnm.Linear(8, 2)))
    compare("Sequential", c_mod, p_mod, torch.randn(5, 3, 4))

    # State dicts both ways, strict.
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "c.pt")
        d = P()
        ok(lib.ctorch_nn_module_state_dict(C.byref(d), c_mod), "state_dict")
        ok(lib.ctorch_tensor_dict_save(path.encode(), d), "tensor_dict_save")
        lib.ctorch_tensor_dict_free(d)
        torch.manual_seed(99)
        fresh = nnm.Sequential(nnm.Flatten(), nnm.Linear(12, 8), nnm.ReLU(inplace=True), nnm.Identity(), nnm.Linear(8, 2))
        fresh.load_state_dict(torch.load(path), strict=True)
        for (k, a), (_, b) in zip(fresh.state_dict().items(), p_mod.state_dict().items()):
            check(torch.equal(a, b), f"torch.load of ctorch's state dict: {k}")
        torch.manual_seed(5)
        other = nnm.Sequential(nnm.Flatten(), nnm.Linear(12, 8), nnm.ReLU(inplace=True), nnm.Identity(), nnm.Linear(8, 2))
        path2 = os.path.join(tmp, "py.pt")
        torch.save(other.state_dict(), path2)
        d = P()
        ok(lib.ctorch_load_dict(C.byref(d), path2.encode()), "load_dict")
        report = P()
        ok(lib.ctorch_nn_module_load_state_dict(C.byref(report), c_mod, d, 1), "load_state_dict strict")
        check(take_string(report) == "", "strict load report not empty")
        lib.ctorch_tensor_dict_free(d)
        for (k, a), (_, b) in zip(c_state_dict(c_mod), other.state_dict().items()):
            check(torch.equal(a, b), f"ctorch load of torch.save'd state dict: {k}")
    lib.ctorch_nn_module_free(c_mod)

    # ModuleDict and nested containers (dotted names), ModuleList repr
    # (collapsed runs of equal children from PyTorch 2.0 on).
    def c_dict():
        d = nn_new("ModuleDict")
        inner = nn_new("Sequential")
        append(inner, nn_new("Linear", "2, 3"))
        append(inner, nn_new("ReLU"))
        ok(lib.ctorch_nn_module_register_module(d, b"encoder", inner), "register")
        lib.ctorch_nn_module_free(inner)
        lst = nn_new("ModuleList")
        for _ in range(3):
            append(lst, nn_new("Linear", "3, 3"))
        append(lst, nn_new("ReLU"))
        append(lst, nn_new("Linear", "3, 1", ))
        ok(lib.ctorch_nn_module_register_module(d, b"layers", lst), "register")
        lib.ctorch_nn_module_free(lst)
        return d

    def p_dict():
        return nnm.ModuleDict({"encoder": nnm.Sequential(nnm.Linear(2, 3), nnm.ReLU()),
                               "layers": nnm.ModuleList([nnm.Linear(3, 3) for _ in range(3)] + [nnm.ReLU(), nnm.Linear(3, 1)])})

    c_mod, p_mod = seeded(42, c_dict, p_dict)
    compare("ModuleDict", c_mod, p_mod)
    lib.ctorch_nn_module_free(c_mod)

    # A custom module (no forward) holding a parameter, a buffer and children,
    # as a Python subclass of nn.Module would register them.
    def c_custom():
        m = P()
        ok(lib.ctorch_nn_custom_new(C.byref(m), b"Net", None, None, None), "custom_new")
        append_named = [("fc1", nn_new("Linear", "4, 4")), ("act", nn_new("ReLU")), ("fc2", nn_new("Linear", "4, 2"))]
        w = from_torch(torch.ones(2))
        ok(lib.ctorch_nn_module_register_parameter(m, b"scale", w), "register_parameter")
        ok(lib.ctorch_nn_module_register_buffer(m, b"steps", w, 1), "register_buffer")
        lib.ctorch_tensor_free(w)
        for name, c in append_named:
            ok(lib.ctorch_nn_module_register_module(m, name.encode(), c), "register_module")
            lib.ctorch_nn_module_free(c)
        return m

    class Net(nnm.Module):
        def __init__(self):
            super().__init__()
            self.scale = nnm.Parameter(torch.ones(2))
            self.register_buffer("steps", self.scale.detach())
            self.fc1 = nnm.Linear(4, 4)
            self.act = nnm.ReLU()
            self.fc2 = nnm.Linear(4, 2)

    c_mod, p_mod = seeded(3, c_custom, Net)
    compare("custom Net", c_mod, p_mod)
    lib.ctorch_nn_module_free(c_mod)

    # The catalogue the library parses at run time is the one the generator
    # wrote into api.json (two parsers of the same signature text).
    p = P()
    ok(lib.ctorch_nn_catalogue(C.byref(p)), "catalogue")
    cat = json.loads(take_string(p))
    api_path = os.environ.get("CTORCH_API_JSON")
    if api_path:
        with open(api_path, encoding="utf-8") as f:
            check(json.load(f)["nn_modules"] == cat, "ctorch_nn_catalogue() differs from api.json's nn_modules")
    else:
        print("note: CTORCH_API_JSON not set, catalogue not compared with api.json")
    check(any(e["kind"] == "Linear" for e in cat), "Linear missing from the catalogue")

    if failures:
        print(f"{len(failures)} failure(s) with torch {torch.__version__}")
        return 1
    print(f"nn core matches torch {torch.__version__}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
