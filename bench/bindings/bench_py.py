"""bench/bindings, Python: per-call add on 1 element and an MLP training
step through the generated binding, beside PyTorch's own Python calls when
torch is importable. Prints JSON. Usage: bench_py.py ITERS STEPS"""
import ctypes
import json
import sys
import time

import ctorch

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    torch = None

ITERS, STEPS = int(sys.argv[1]), int(sys.argv[2])


def best_of(n, fn, iters):
    best = 1e30
    for _ in range(n):
        t0 = time.perf_counter()
        fn(iters)
        best = min(best, (time.perf_counter() - t0) / iters)
    return best


def loop_add(mod, a):
    add = mod.add

    def run(n):
        for _ in range(n):
            add(a, a)
    return run


def mlp_step(ct, F, x, y, params, opt, linear, loss_fn):
    w1, b1, w2, b2 = params

    def run(n):
        for _ in range(n):
            loss = loss_fn(linear(linear(x, w1, b1).relu(), w2, b2), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
    return run


out = {"binding": "python"}
ctorch.set_num_threads(1)
ctorch.manual_seed(0)
a = ctorch.ones([1])
if torch is None:
    out["add_ns"] = best_of(5, loop_add(ctorch, a), ITERS) * 1e9
else:
    # Side by side: rounds of ctorch.add and torch.add alternate, so a load
    # change on a shared machine hits both; each side's best round, and the
    # median of the per-round ratios.
    torch.set_num_threads(1)
    ta = torch.ones(1)
    run_c, run_t = loop_add(ctorch, a), loop_add(torch, ta)
    n = max(ITERS // 3, 1)
    cs, ts = [], []
    for _ in range(15):
        for run, got in ((run_c, cs), (run_t, ts)):
            t0 = time.perf_counter()
            run(n)
            got.append((time.perf_counter() - t0) / n * 1e9)
    out["add_ns"], out["torch_add_ns"] = min(cs), min(ts)
    out["add_ratio_paired_median"] = sorted(c / t for c, t in zip(cs, ts))[len(cs) // 2]
out["add_operator_ns"] = best_of(5, lambda n: [a + a for _ in range(n)], ITERS) * 1e9


# The floors ctypes sets, each call as bare as ctypes allows (a C function
# object without argtypes, arguments already ctypes objects, GIL released as
# every CDLL call does): a call of a C function taking two pointers that does
# almost nothing (ctorch_tensor_numel), and ctorch_add_Tensor itself, its
# result freed each call as bench_c does (ctorch_tensor_free, a second call).
def bare(name, restype=ctypes.c_int):
    f = ctorch.lib._FuncPtr((name, ctorch.lib))  # no argtypes
    f.restype = restype
    return f


def floor_two_pointers(n):
    f, p, h = bare("ctorch_tensor_numel"), ctypes.byref(ctypes.c_int64()), ctypes.c_void_p(ctorch.ones([1]).handle)
    for _ in range(n):
        f(p, h)


def floor_add(n):
    f, free = bare("ctorch_add_Tensor"), bare("ctorch_tensor_free", None)
    byref, vp, h, alpha = ctypes.byref, ctypes.c_void_p, ctypes.c_void_p(a.handle), ctorch._ops._scalar(1)
    for _ in range(n):
        r = vp()
        f(byref(r), h, h, alpha)
        free(r)


out["ctypes_two_pointer_call_ns"] = best_of(5, floor_two_pointers, ITERS) * 1e9
out["ctypes_add_floor_ns"] = best_of(5, floor_add, ITERS) * 1e9


def params_of(mod, empty, init):
    ps = []
    for shape, fan in (([128, 784], 784), ([128], 784), ([10, 128], 128), ([10], 128)):
        t = empty(shape)
        init(t, -fan ** -0.5, fan ** -0.5)
        ps.append(t.requires_grad_())
    return ps


ps = params_of(ctorch, ctorch.empty, ctorch.nn.init.uniform_)
x, y = ctorch.randn([64, 784]), ctorch.randint(10, [64])
opt = ctorch.optim.Adam(ps, lr=1e-3)
out["train_step_us"] = best_of(3, mlp_step(ctorch, None, x, y, ps, opt, ctorch.nn.linear,
                                           ctorch.nn.cross_entropy_loss), STEPS) * 1e6
if torch is not None:
    tps = params_of(torch, torch.empty, lambda t, lo, hi: torch.nn.init.uniform_(t, lo, hi))
    topt = torch.optim.Adam(tps, lr=1e-3)
    out["torch_train_step_us"] = best_of(3, mlp_step(torch, F, torch.randn(64, 784), torch.randint(0, 10, (64,)),
                                                     tps, topt, F.linear, F.cross_entropy), STEPS) * 1e6
    out["torch_version"] = torch.__version__
print(json.dumps(out))
