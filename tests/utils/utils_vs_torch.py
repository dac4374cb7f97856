"""The training utilities from C (utils_dump) against the installed torch.

Usage: utils_vs_torch.py PATH/TO/utils_dump WORKDIR

1. Gradient checkpointing: for an MLP and a conv stack, both with Dropout,
   the same seeded run in C and in Python with torch.utils.checkpoint
   (use_reentrant=False; torch 1.13's checkpoint_sequential has no
   use_reentrant and is reentrant, which gives the same values): outputs,
   the input's and every parameter's gradient, and a draw after backward
   (the generator's state) bit-identical; checkpointed gradients equal to
   the plain run's; preserve_rng_state=False equal to Python's and not to
   the plain run's (the recompute drew another Dropout mask).
2. Peak memory: a 16-layer MLP with and without checkpoint_sequential
   (4 segments); the checkpointed run must hold under 60% of the plain
   run's bytes after forward and peak under 80% over forward + backward.
3. Early stopping step for step against a twin of Lightning's EarlyStopping
   rule: __init__'s sign of min_delta and best_score, and
   _evaluate_stopping_criteria, copied from lightning 2.6.6's
   lightning/pytorch/callbacks/early_stopping.py with the messages left
   out (Lightning is not installed here; the twin runs on torch tensors as
   Lightning does, in float64). Sequences with ties, min_delta edges, NaN
   and infinities, thresholds, and random ones.
4. Restoring the best state: bit-identical weights (checked in C).
5. The profiler: the Chrome trace parses as JSON with complete events of
   the ops (sane ts/dur), the table names them, and per-op call counts
   equal those of torch.autograd.profiler (legacy mode) on the same steps.
"""
import inspect
import json
import math
import os
import random
import struct
import subprocess
import sys

import torch
import torch.nn as nn
from torch.utils.checkpoint import checkpoint, checkpoint_sequential

torch.set_num_threads(1)
DUMP, WORK = sys.argv[1], sys.argv[2]
os.makedirs(WORK, exist_ok=True)
failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL:", msg)


def run_c(*args):
    r = subprocess.run([DUMP, *map(str, args)], capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        raise SystemExit(f"utils_dump {' '.join(map(str, args))} failed ({r.returncode}):\n{r.stderr}{r.stdout}")
    return r.stdout


def bits(v):
    return struct.unpack("<Q", struct.pack("<d", v))[0]


# ---- 1. checkpointing ------------------------------------------------------

def build(name):
    if name == "mlp":
        return nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Dropout(0.5), nn.Linear(32, 32), nn.Tanh(),
                             nn.Dropout(0.3), nn.Linear(32, 8))
    return nn.Sequential(nn.Conv2d(2, 4, 3, padding=1), nn.ReLU(), nn.Dropout(0.25), nn.Conv2d(4, 3, 3), nn.ReLU(),
                         nn.Flatten(), nn.Linear(48, 5))


SEQ_HAS_REENTRANT = "use_reentrant" in inspect.signature(checkpoint_sequential).parameters


def seq_ckpt(model, segments, x, preserve):
    if SEQ_HAS_REENTRANT:
        return checkpoint_sequential(model, segments, x, use_reentrant=False, preserve_rng_state=preserve)
    return checkpoint_sequential(model, segments, x, preserve_rng_state=preserve)


def py_grads(name, mode):
    torch.manual_seed(0)
    model = build(name)
    x = torch.randn((6, 16) if name == "mlp" else (2, 2, 6, 6), requires_grad=True)
    if mode == "plain":
        y = model(x)
    elif mode == "whole":
        y = checkpoint(model, x, use_reentrant=False)
    else:
        y = seq_ckpt(model, 3, x, mode == "seq")
    (y * y).sum().backward()
    r = torch.randn(4)
    out = {"Y y": y.detach(), "G x": x.grad}
    for n, p in model.named_parameters():
        out["G " + n] = p.grad
    out["R r"] = r
    return {k: [float(v) for v in t.double().flatten()] for k, t in out.items()}


def parse_dump(text):
    out = {}
    for line in text.splitlines():
        f = line.split()
        out[f[0] + " " + f[1]] = [float.fromhex(v) for v in f[2:]]
    return out


def same(a, b):
    return a.keys() == b.keys() and all(
        len(a[k]) == len(b[k]) and all(bits(u) == bits(v) for u, v in zip(a[k], b[k])) for k in a)


def diff(a, b):
    for k in a:
        if k not in b or len(a[k]) != len(b[k]):
            return f"{k}: missing or another length"
        for i, (u, v) in enumerate(zip(a[k], b[k])):
            if bits(u) != bits(v):
                return f"{k}[{i}]: {u!r} vs {v!r}"
    return "keys differ"


for name in ("mlp", "conv"):
    c_runs = {}
    for mode in ("plain", "whole", "seq", "norng"):
        c = parse_dump(run_c("grads", name, mode))
        p = py_grads(name, mode)
        c_runs[mode] = c
        if not same(c, p):
            fail(f"checkpoint {name} {mode}: C and Python differ at {diff(c, p)}")
        else:
            print(f"checkpoint {name} {mode}: {sum(map(len, c.values()))} values bit-identical to Python")
    for mode in ("whole", "seq"):
        if not same(c_runs[mode], c_runs["plain"]):
            fail(f"checkpoint {name} {mode}: gradients differ from the plain run's at {diff(c_runs[mode], c_runs['plain'])}")
    g_plain = {k: v for k, v in c_runs["plain"].items() if k.startswith("G")}
    g_norng = {k: v for k, v in c_runs["norng"].items() if k.startswith("G")}
    if same(g_plain, g_norng):
        fail(f"checkpoint {name} norng: gradients equal the plain run's, so the recompute reused the mask")

# ---- 2. peak memory ---------------------------------------------------------

mem = {}
for mode in ("plain", "seq"):
    f = run_c("memory", mode).split()
    mem[mode] = (int(f[3]), int(f[5]))
    print(f"memory {mode}: held after forward {mem[mode][0] / 2**20:.1f} MiB, peak {mem[mode][1] / 2**20:.1f} MiB")
if not mem["seq"][0] < 0.6 * mem["plain"][0]:
    fail(f"checkpointed run held {mem['seq'][0]} bytes after forward, not under 60% of {mem['plain'][0]}")
if not mem["seq"][1] < 0.8 * mem["plain"][1]:
    fail(f"checkpointed run peaked at {mem['seq'][1]} bytes, not under 80% of {mem['plain'][1]}")

# ---- 3. early stopping --------------------------------------------------------


class LightningRule:
    """lightning 2.6.6 EarlyStopping: __init__'s state and
    _evaluate_stopping_criteria, messages left out; best_step added."""

    def __init__(self, mode, patience, min_delta, check_finite, stopping_threshold, divergence_threshold):
        self.monitor_op = torch.lt if mode == "min" else torch.gt
        self.patience = patience
        self.check_finite = check_finite
        self.stopping_threshold = stopping_threshold
        self.divergence_threshold = divergence_threshold
        self.wait_count = 0
        self.min_delta = min_delta
        self.min_delta *= 1 if self.monitor_op == torch.gt else -1
        torch_inf = torch.tensor(torch.inf)
        self.best_score = torch_inf if self.monitor_op == torch.lt else -torch_inf
        self.best_step, self.steps = -1, 0

    def step(self, current):
        should_stop, improved = False, False
        if self.check_finite and not torch.isfinite(current):
            should_stop = True
        elif self.stopping_threshold is not None and self.monitor_op(current, self.stopping_threshold):
            should_stop = True
        elif self.divergence_threshold is not None and self.monitor_op(-current, -self.divergence_threshold):
            should_stop = True
        elif self.monitor_op(current - self.min_delta, self.best_score.to(current.device)):
            should_stop = False
            improved = True
            self.best_score = current
            self.wait_count = 0
            self.best_step = self.steps
        else:
            self.wait_count += 1
            if self.wait_count >= self.patience:
                should_stop = True
        self.steps += 1
        return should_stop, improved


NAN, INF = math.nan, math.inf
ES_CASES = [
    ("min", 3, 0.0, 1, None, None, [1.0, 0.9, 0.95, 0.94, 0.93, 0.92]),
    ("min", 2, 0.0, 1, None, None, [1.0, 1.0, 1.0]),                   # ties do not improve
    ("max", 2, 0.0, 1, None, None, [0.5, 0.5, 0.6, 0.6, 0.6]),
    ("min", 3, 0.1, 1, None, None, [1.0, 0.9, 0.8, 0.7999, 0.65, 0.6]),  # 0.9 + 0.1 < 1.0 in double
    ("max", 3, 0.05, 1, None, None, [0.5, 0.55, 0.6, 0.61, 0.7, 0.74]),
    ("max", 2, 0.25, 1, None, None, [0.0, 0.25, 0.5, 0.75, 0.75]),     # exact binary edges
    ("min", 3, 0.0, 1, None, None, [1.0, NAN, 0.5]),                    # NaN stops (check_finite)
    ("min", 2, 0.0, 0, None, None, [1.0, NAN, 0.5, NAN, NAN]),          # NaN counts as no improvement
    ("min", 2, 0.0, 1, None, None, [INF]),
    ("max", 1, 0.0, 0, None, None, [-INF, -INF]),
    ("max", 1, 0.0, 0, None, None, [INF, 1.0]),
    ("min", 5, 0.0, 1, 0.5, None, [1.0, 0.6, 0.5, 0.4]),                # stopping threshold
    ("max", 5, 0.0, 1, 0.9, None, [0.5, 0.9, 0.95]),
    ("min", 5, 0.0, 1, None, 2.0, [1.0, 1.5, 2.0, 2.5]),                # divergence threshold
    ("max", 5, 0.0, 1, None, 0.1, [0.5, 0.2, 0.1, 0.05]),
    ("min", 0, 0.0, 1, None, None, [1.0, 1.0, 0.5]),                    # patience 0
    ("min", 2, -0.1, 1, None, None, [1.0, 1.05, 1.2, 1.3]),             # negative min_delta
]
rng = random.Random(38)
for k in range(24):
    vals = [round(rng.uniform(0, 1), 1) for _ in range(rng.randint(1, 12))]
    if k % 4 == 0:
        vals.insert(rng.randrange(len(vals) + 1), rng.choice([NAN, INF, -INF]))
    ES_CASES.append((rng.choice(["min", "max"]), rng.randint(0, 4), rng.choice([0.0, 0.1, 0.05, 1e-9]),
                     rng.randint(0, 1), rng.choice([None, None, 0.2, 0.8]), rng.choice([None, None, 0.3, 0.9]), vals))

# Every sequence in one run of the dump (its --jobs form; "@@end" closes each one's lines).
with open(os.path.join(WORK, "es_jobs.txt"), "w") as jf:
    for mode, patience, delta, finite, stop_thr, div_thr, vals in ES_CASES:
        jf.write(" ".join(map(str, ["es", mode, patience, repr(delta), finite, "none" if stop_thr is None else
                                    repr(stop_thr), "none" if div_thr is None else repr(div_thr),
                                    *[repr(v) for v in vals]])) + "\n")
es_outs = run_c("--jobs", os.path.join(WORK, "es_jobs.txt")).split("@@end\n")
if len(es_outs) != len(ES_CASES) + 1 or es_outs[-1] != "":
    raise SystemExit(f"early stopping: {len(es_outs) - 1} outputs for {len(ES_CASES)} sequences")
for i, (mode, patience, delta, finite, stop_thr, div_thr, vals) in enumerate(ES_CASES):
    out = es_outs[i].splitlines()
    rule = LightningRule(mode, patience, delta, bool(finite), stop_thr, div_thr)
    for j, v in enumerate(vals):
        stop, improved = rule.step(torch.tensor(v, dtype=torch.float64))
        want = (int(stop), int(improved), float(rule.best_score), rule.wait_count, rule.best_step)
        f = out[j].split()
        got = (int(f[1]), int(f[2]), float.fromhex(f[3]), int(f[4]), int(f[5]))
        if got[:2] != want[:2] or bits(got[2]) != bits(want[2]) or got[3:] != want[3:]:
            fail(f"early stopping case {i} {ES_CASES[i][:6]} value {j} ({v}): C {got}, Lightning's rule {want}")
            break
print(f"early stopping: {len(ES_CASES)} sequences, {sum(len(c[6]) for c in ES_CASES)} steps compared")

# ---- 4. restore -----------------------------------------------------------------

out = run_c("restore")
if not out.startswith("RESTORE ok"):
    fail("restore: " + out)
print(out.strip())

# ---- 5. profiler ------------------------------------------------------------------

trace_path = os.path.join(WORK, "trace.json")
table = run_c("profile", trace_path)
with open(trace_path) as f:
    trace = json.load(f)
events = trace["traceEvents"]
span = max(e["ts"] + e["dur"] for e in events) - min(e["ts"] for e in events)
OPS = ["aten::conv2d", "aten::addmm", "aten::relu", "aten::max_pool2d", "aten::linear"]
c_counts = {}
for e in events:
    if e["ph"] != "X" or not isinstance(e["ts"], (int, float)) or not isinstance(e["dur"], (int, float)):
        fail(f"profiler: malformed event {e}")
        break
    if e["dur"] < 0 or e["ts"] < 0 or e["dur"] > span:
        fail(f"profiler: insane time in {e}")
        break
    c_counts[e["name"]] = c_counts.get(e["name"], 0) + 1
for op in OPS + ["aten::convolution_backward" if torch.__version__ >= "1.11" else "aten::conv2d"]:
    if c_counts.get(op, 0) == 0:
        fail(f"profiler: no {op} event in the trace")
conv_durs = [e["dur"] for e in events if e["name"] == "aten::conv2d"]
if conv_durs and not all(d > 0 for d in conv_durs):
    fail(f"profiler: a conv2d with zero duration: {conv_durs}")
for op in OPS + ["Name", "Self CPU %", "# of Calls", "Self CPU time total"]:
    if op not in table:
        fail(f"profiler: the table does not name {op}")
row = [ln for ln in table.splitlines() if ln.startswith("aten::conv2d ")]
if not row or int(row[0].split()[6]) != c_counts.get("aten::conv2d"):
    fail(f"profiler: the table's aten::conv2d calls {row} disagree with the trace's {c_counts.get('aten::conv2d')}")

# The same two steps profiled by PyTorch's legacy profiler: the same calls.
torch.manual_seed(0)
net = nn.Sequential(nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(6, 16, 5), nn.ReLU(),
                    nn.MaxPool2d(2), nn.Flatten(), nn.Linear(400, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(),
                    nn.Linear(84, 10))
opt = torch.optim.SGD(net.parameters(), lr=0.01)
with torch.autograd.profiler.profile(use_kineto=False) as prof:
    for _ in range(2):
        x = torch.randn(8, 1, 28, 28)
        t = torch.randint(10, (8,))
        opt.zero_grad(set_to_none=True)
        nn.functional.cross_entropy(net(x), t).backward()
        opt.step()
py_counts = {}
for e in prof.function_events:
    py_counts[e.name] = py_counts.get(e.name, 0) + 1
for op in OPS:
    if c_counts.get(op) != py_counts.get(op):
        fail(f"profiler: {op} called {c_counts.get(op)} times in C, {py_counts.get(op)} in PyTorch's profiler")
print(f"profiler: {len(events)} events, span {span:.0f} us; calls C/PyTorch: " +
      ", ".join(f"{op} {c_counts.get(op)}/{py_counts.get(op)}" for op in OPS))
print(table)

if failures:
    print(f"{len(failures)} failure(s)")
    sys.exit(1)
print("all training-utility checks passed (torch " + torch.__version__ + ")")
