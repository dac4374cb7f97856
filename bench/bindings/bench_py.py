"""bench/bindings, Python: per-call add on 1 element and an MLP training
step through the generated binding, beside PyTorch's own Python calls when
torch is importable. Prints JSON. Usage: bench_py.py ITERS STEPS"""
import json
import sys
import time

import ctorch

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
out["add_ns"] = best_of(5, loop_add(ctorch, a), ITERS) * 1e9
out["add_operator_ns"] = best_of(5, lambda n: [a + a for _ in range(n)], ITERS) * 1e9


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
try:
    import torch
    import torch.nn.functional as F
    torch.set_num_threads(1)
    ta = torch.ones(1)
    out["torch_add_ns"] = best_of(5, loop_add(torch, ta), ITERS) * 1e9
    tps = params_of(torch, torch.empty, lambda t, lo, hi: torch.nn.init.uniform_(t, lo, hi))
    topt = torch.optim.Adam(tps, lr=1e-3)
    out["torch_train_step_us"] = best_of(3, mlp_step(torch, F, torch.randn(64, 784), torch.randint(0, 10, (64,)),
                                                     tps, topt, F.linear, F.cross_entropy), STEPS) * 1e6
    out["torch_version"] = torch.__version__
except ImportError:
    pass
print(json.dumps(out))
