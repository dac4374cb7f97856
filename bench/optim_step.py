"""Python's optimizer step time on the CPU, foreach=True against
foreach=False, round by round in alternating order in one process: the
Python half of bench/optim_step.cpp (same parameter sets, optimizers, fixed
grads, steps per loop and rounds; one intra-op thread).
Usage: optim_step.py [--quick]. Prints one JSON object:
  "<set>_<opt>_py_foreach_us" / "_py_forloop_us": {"median","min","max"} and
  "<set>_<opt>_py_foreach_over_forloop": median of the per-round ratios."""
import json
import statistics
import sys
import time

import torch

SETS = {
    "many": [(16, 16)] * 200,
    "lenet": [(6, 1, 5, 5), (6,), (16, 6, 5, 5), (16,), (120, 256), (120,), (84, 120), (84,), (10, 84), (10,)],
}


def make(shapes, opt, foreach):
    torch.manual_seed(0)
    ps = []
    for s in shapes:
        p = torch.randn(s).requires_grad_()
        p.grad = torch.randn(s)
        ps.append(p)
    if opt == "adam":
        return torch.optim.Adam(ps, lr=1e-3, foreach=foreach)
    return torch.optim.SGD(ps, lr=1e-2, momentum=0.9, foreach=foreach)


def mmm(xs):
    return {"median": statistics.median(xs), "min": min(xs), "max": max(xs)}


def main():
    quick = "--quick" in sys.argv
    rounds = 1 if quick else 15
    torch.set_num_threads(1)
    out = {}
    for name, shapes in SETS.items():
        for opt in ("adam", "sgd"):
            steps = 2 if quick else (200 if name == "many" else 300)
            sides = {"foreach": make(shapes, opt, True), "forloop": make(shapes, opt, False)}
            for o in sides.values():
                o.step()
            us = {k: [] for k in sides}
            ratios = []
            for r in range(rounds):
                order = list(sides) if r % 2 == 0 else list(reversed(list(sides)))
                t = {}
                for k in order:
                    o = sides[k]
                    t0 = time.perf_counter()
                    for _ in range(steps):
                        o.step()
                    t[k] = (time.perf_counter() - t0) * 1e6 / steps
                    us[k].append(t[k])
                ratios.append(t["foreach"] / t["forloop"])
            for k in sides:
                out[f"{name}_{opt}_py_{k}_us"] = mmm(us[k])
            out[f"{name}_{opt}_py_foreach_over_forloop"] = statistics.median(ratios)
    out["torch"] = torch.__version__
    print(json.dumps(out))


if __name__ == "__main__":
    main()
