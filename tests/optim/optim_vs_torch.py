"""Runs optim_dump (ctorch's NAdam, RAdam, Adamax, Adadelta, LBFGS on seeded
parameters, stepped with a closure, in one or two parameter groups) and the
same scenarios with the installed torch's torch.optim (foreach=False, its
default on the CPU), and requires the loss each step returns and every
parameter element after every step to be bit-identical.

A scenario that needs an option the installed torch lacks
(decoupled_weight_decay on 1.13) must be refused by ctorch's build for that
torch (NOT_IMPLEMENTED naming the option) and is otherwise skipped, visibly.

Usage: optim_vs_torch.py PATH/TO/optim_dump"""
import inspect
import math
import subprocess
import tempfile
import sys

import torch

SHAPES = [(3, 4), (5,), (2, 3), (4,)]
KINDS = {
    "sgd": torch.optim.SGD, "adam": torch.optim.Adam, "adamw": torch.optim.AdamW,
    "rmsprop": torch.optim.RMSprop, "adagrad": torch.optim.Adagrad,
    "nadam": torch.optim.NAdam, "radam": torch.optim.RAdam, "adamax": torch.optim.Adamax,
    "adadelta": torch.optim.Adadelta, "lbfgs": torch.optim.LBFGS,
}
FLOATS = {"lr", "weight_decay", "momentum", "dampening", "eps", "alpha", "lr_decay", "initial_accumulator_value",
          "momentum_decay", "rho", "tolerance_grad", "tolerance_change"}
INTS = {"max_iter", "max_eval", "history_size"}
BOOLS = {"nesterov", "amsgrad", "centered", "decoupled_weight_decay"}

# name, kind, f64, steps, group0, group1 ("-": one group), schedule
SCENARIOS = [
    ("nadam_1g", "nadam", 0, 10, "-", "-", ""),
    ("nadam_2g", "nadam", 0, 8, "lr=0.01,weight_decay=0.1,momentum_decay=0.01", "lr=0.005,beta1=0.8,beta2=0.99,eps=1e-6", ""),
    ("nadam_2g_f64", "nadam", 1, 8, "lr=0.01,weight_decay=0.1,momentum_decay=0.01", "lr=0.005,beta1=0.8,beta2=0.99", ""),
    ("nadam_decoupled", "nadam", 0, 6, "lr=0.01,weight_decay=0.1,decoupled_weight_decay=1", "lr=0.02", ""),
    ("radam_1g", "radam", 0, 10, "lr=0.01", "-", ""),
    ("radam_2g", "radam", 0, 10, "lr=0.01,weight_decay=0.05", "lr=0.02,beta1=0.85,beta2=0.9,eps=1e-5", ""),
    ("radam_2g_f64", "radam", 1, 10, "lr=0.01,weight_decay=0.05", "lr=0.02,beta2=0.9", ""),
    ("radam_decoupled", "radam", 0, 8, "lr=0.01,weight_decay=0.1,decoupled_weight_decay=1", "lr=0.02,beta2=0.9", ""),
    ("adamax_1g", "adamax", 0, 8, "-", "-", ""),
    ("adamax_2g", "adamax", 0, 8, "lr=0.01,weight_decay=0.1", "lr=0.003,beta1=0.7,beta2=0.95,eps=1e-4", ""),
    ("adamax_2g_f64", "adamax", 1, 8, "lr=0.01,weight_decay=0.1", "lr=0.003,beta1=0.7", ""),
    ("adadelta_1g", "adadelta", 0, 8, "-", "-", ""),
    ("adadelta_2g", "adadelta", 0, 8, "lr=1.0,weight_decay=0.1", "lr=0.5,rho=0.5,eps=1e-4", ""),
    ("adadelta_2g_f64", "adadelta", 1, 8, "lr=1.0,weight_decay=0.1", "lr=0.5,rho=0.5,eps=1e-4", ""),
    ("nadam_onecycle", "nadam", 0, 6, "-", "lr=0.005,beta1=0.8", "onecycle"),
    ("radam_onecycle", "radam", 0, 8, "-", "lr=0.005", "onecycle"),
    ("adamax_onecycle", "adamax", 1, 6, "-", "-", "onecycle"),
    ("lbfgs_default", "lbfgs", 0, 3, "-", "-", ""),
    ("lbfgs_short", "lbfgs", 0, 5, "lr=0.5,max_iter=5,history_size=3", "-", ""),
    ("lbfgs_short_f64", "lbfgs", 1, 5, "lr=0.5,max_iter=5,history_size=3", "-", ""),
    ("lbfgs_wolfe", "lbfgs", 0, 3, "line_search=1", "-", ""),
    ("lbfgs_wolfe_f64", "lbfgs", 1, 3, "line_search=1", "-", ""),
    ("lbfgs_wolfe_budget", "lbfgs", 0, 4, "line_search=1,max_iter=7,history_size=2,max_eval=9", "-", ""),
    ("lbfgs_wolfe_lr", "lbfgs", 1, 4, "lr=0.3,line_search=1,max_iter=4,tolerance_change=1e-5", "-", ""),
]


def kwargs(spec):
    kw, betas = {}, [None, None]
    if spec == "-":
        return kw
    for item in spec.split(","):
        k, v = item.split("=")
        if k in FLOATS:
            kw[k] = float(v)
        elif k in INTS:
            kw[k] = int(v)
        elif k in BOOLS:
            kw[k] = bool(int(v))
        elif k == "beta1":
            betas[0] = float(v)
        elif k == "beta2":
            betas[1] = float(v)
        elif k == "line_search":
            kw["line_search_fn"] = "strong_wolfe" if int(v) else None
        else:
            raise ValueError(k)
    if betas != [None, None]:
        kw["betas"] = (0.9 if betas[0] is None else betas[0], 0.999 if betas[1] is None else betas[1])
    return kw


def supported(kind, spec0, spec1):
    params = inspect.signature(KINDS[kind].__init__).parameters
    return all(k in params for k in list(kwargs(spec0)) + list(kwargs(spec1)))


def python_side(sc):
    name, kind, f64, steps, g0, g1, sched = sc
    dt = torch.float64 if f64 else torch.float32
    torch.manual_seed(7)
    p, c, w = [], [], []
    for s in SHAPES:
        p.append(torch.randn(s, dtype=dt).requires_grad_())
        c.append(torch.randn(s, dtype=dt))
        w.append(torch.rand(s, dtype=dt) + 0.5)
    if kind == "lbfgs":
        # LBFGS has one group; its constructor works out max_eval from max_iter
        # (a group dict would take the defaults' max_eval instead).
        groups = None
    elif g1 == "-":
        groups = [dict(params=p, **kwargs(g0))]
    else:
        groups = [dict(params=p[:2], **kwargs(g0)), dict(params=p[2:], **kwargs(g1))]
    opt = KINDS[kind](p, **kwargs(g0)) if groups is None else KINDS[kind](groups)
    s = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.01, total_steps=steps + 1) if sched == "onecycle" else None

    def closure():
        opt.zero_grad(set_to_none=True)
        loss = None
        for i in range(len(p)):
            l = ((p[i] - c[i]).pow(2) * w[i]).sum() + p[i].pow(4).sum() * 0.05
            loss = l if loss is None else loss + l
        loss.backward()
        return loss

    out = []
    for _ in range(steps):
        loss = float(opt.step(closure))
        if s is not None:
            s.step()
        out.append((loss, [[float(v) for v in q.detach().double().flatten()] for q in p]))
    return out


class Dump:
    """optim_dump --serve: one process runs the scenarios one after another
    (each seeds and builds its own parameters, so prints what a process of
    its own would), instead of one process per scenario, whose libtorch load
    was most of the optimizer tests' time. A failing ctorch call
    ends that process (exit 1, its message on stderr): the scenario is
    reported with the message and the next one starts a new process."""

    def __init__(self, path):
        self.path, self.proc, self.err = path, None, None

    def run(self, sc, impl=None, state=None):
        """(parsed dump, "") / ("refused", the REFUSED line) / (None, stderr)."""
        name, kind, f64, steps, g0, g1, sched = sc
        if self.proc is None:
            self.err = tempfile.TemporaryFile(mode="w+")
            self.proc = subprocess.Popen([self.path, "--serve"], text=True, stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=self.err)
        fields = [impl or "-", state or "-", kind, str(f64), str(steps), g0, g1] + ([sched] if sched else [])
        lines = []
        try:
            self.proc.stdin.write(" ".join(fields) + "\n")
            self.proc.stdin.flush()
            for line in self.proc.stdout:
                if line.startswith("END "):
                    rc = int(line.split()[1])
                    out = "".join(lines)
                    if rc == 3 and out.startswith("REFUSED"):
                        return "refused", out.strip()
                    if rc != 0:
                        return None, f"optim_dump ended the scenario with {rc}: {out}"
                    return parse_dump(out), ""
                lines.append(line)
        except BrokenPipeError:
            pass
        # The process ended inside the scenario (a failed call): its message.
        self.proc.wait()
        self.err.seek(0)
        err = self.err.read() or f"optim_dump exited with {self.proc.returncode}"
        self.err.close()
        self.proc = None
        return None, err

    def close(self):
        if self.proc is not None:
            self.proc.stdin.close()
            self.proc.wait()
            self.err.close()
            self.proc = None


def c_side(dump, sc):
    return dump.run(sc)


def parse_dump(stdout):
    """optim_dump's output: per step (loss, [each parameter's values])."""
    out = []
    for line in stdout.splitlines():
        f = line.split()
        if f[0] == "STEP":
            out.append((float.fromhex(f[2]), []))
        elif f[0] == "P":
            out[-1][1].append([float.fromhex(v) for v in f[2:]])
    return out


def same(a, b):
    return a == b and math.copysign(1, a) == math.copysign(1, b) or (math.isnan(a) and math.isnan(b))


def main():
    dump = Dump(sys.argv[1])
    print(f"torch {torch.__version__}")
    bad = passed = skipped = 0
    for sc in SCENARIOS:
        name, kind = sc[0], sc[1]
        c, err = c_side(dump, sc)
        if not supported(kind, sc[4], sc[5]):
            # torch lacks an option: ctorch's build for it must refuse, naming it.
            if c is None and "NOT_IMPLEMENTED" in err and "decoupled_weight_decay" in err:
                print(f"{name}: SKIP (torch {torch.__version__} lacks an option; ctorch refused it: {err.strip()})")
                skipped += 1
            else:
                print(f"{name}: torch {torch.__version__} lacks an option but ctorch did not refuse it "
                      f"(NOT_IMPLEMENTED naming it): {err.strip()}")
                bad += 1
            continue
        if c is None:
            print(f"{name}: optim_dump failed: {err.strip()}")
            bad += 1
            continue
        py = python_side(sc)
        if len(c) != len(py):
            print(f"{name}: {len(c)} steps from ctorch, {len(py)} from torch")
            bad += 1
            continue
        diffs, worst = 0, 0.0
        for k, ((lc, pc), (lp, pp)) in enumerate(zip(c, py)):
            if not same(lc, lp):
                diffs += 1
                if diffs <= 3:
                    print(f"{name}: step {k + 1}: loss {lc!r} (ctorch) != {lp!r} (torch)")
            for i, (a, b) in enumerate(zip(pc, pp)):
                for j, (x, y) in enumerate(zip(a, b)):
                    if not same(x, y):
                        diffs += 1
                        worst = max(worst, abs(x - y))
                        if diffs <= 3:
                            print(f"{name}: step {k + 1}: p{i}[{j}] {x!r} (ctorch) != {y!r} (torch)")
        if diffs:
            print(f"{name}: FAIL ({diffs} values differ, largest difference {worst:g})")
            bad += 1
        else:
            n = sum(len(a) for a in c[-1][1])
            print(f"{name}: ok ({len(c)} steps x {n} elements + loss, bit-identical)")
            passed += 1
    dump.close()
    print(f"{passed} passed, {skipped} skipped, {bad} failed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
