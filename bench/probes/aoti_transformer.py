#!/usr/bin/env python3
"""The Python-only control for bench/probes/aoti_compile.c's Transformer: the same
network made in Python (Linear(28, 64), two
TransformerEncoderLayer(64, 4 heads, feed-forward 128, batch_first), Flatten,
Linear(1792, 10)) on [B, 28, 28], eager against AOTInductor packages made
several ways, all run from Python, 1 intra-op thread, median of interleaved
rounds. Shows whether the package's bound is Inductor's CPU code for this
shape rather than anything ctorch does.

    aoti_transformer.py WORKDIR [BATCH] [VARIANT ...]

Variants (default: all but +autotune): eager (inference mode: the fused
_transformer_encoder_layer_fwd), eager_slow (the fast path off: the
decomposed layer), and packages: export (torch.export of the module: the
decomposed layer, as a trace from C with grad on records it), fused (a trace
made under no_grad, converted as ctorch_py_aoti_compile does: the fused
kernel kept, run by AOTI's proxy executor); a package name may end in
+freeze (Inductor's freezing=True: weights as constants, linears packed when
Inductor finds it pays; at this shape it generated the same code) and/or +autotune (max_autotune=True: Inductor's C++ GEMM templates
tried against the library's). --profile prints torch.profiler's top operators
of each variant.

Run it with MALLOC_MMAP_THRESHOLD_=268435456 (and OMP_NUM_THREADS=1) to
compare with the C figures: under glibc's default the Python process pays
for fresh mmaps of the fused kernel's large temporaries on every eager call
(~22 ms instead of ~17 at batch 256), which the C process does
not, and which makes the packages look 1.2-1.46x faster than eager."""
import argparse
import statistics
import time
import warnings

import torch
import torch._inductor
from torch import nn


def make_model():
    torch.manual_seed(0)
    layer = dict(d_model=64, nhead=4, dim_feedforward=128, batch_first=True)
    m = nn.Sequential(nn.Linear(28, 64), nn.TransformerEncoderLayer(**layer), nn.TransformerEncoderLayer(**layer),
                      nn.Flatten(), nn.Linear(28 * 64, 10))
    return m.eval()


def exported(m, x, how):
    """An ExportedProgram of m on x: 'export' by torch.export (which takes
    the layer's slow path: linear, scaled_dot_product_attention, layer_norm),
    'fused' from a TorchScript trace made under no_grad, which records the
    fast path's aten._transformer_encoder_layer_fwd, converted as
    ctorch_py_aoti_compile converts a trace from C. (A Python trace with grad
    on records its reshapes' sizes as data, which the converter refuses.)"""
    if how == "export":
        return torch.export.export(m, (x,))
    assert how == "fused", how
    from torch._export.converter import TS2EPConverter
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with torch.no_grad():
            ts = torch.jit.trace(m, (x,), check_trace=False)
        return TS2EPConverter(ts, (x,)).convert()


# Suffixes of a package variant's name: the Inductor options they set.
OPTIONS = {"freeze": {"freezing": True}, "autotune": {"max_autotune": True}}


def package(m, x, name, workdir):
    how, *opts = name.split("+")
    configs = {}
    for o in opts:
        configs.update(OPTIONS[o])
    ep = exported(m, x, how)
    path = f"{workdir}/t_{name.replace('+', '_')}_{x.shape[0]}.pt2"
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch._inductor.aoti_compile_and_package(ep, package_path=path, inductor_configs=configs)
    compile_s = time.perf_counter() - t0
    ops = {}
    for n in ep.graph.nodes:
        if n.op == "call_function":
            ops[str(n.target)] = ops.get(str(n.target), 0) + 1
    return torch._inductor.aoti_load_package(path), compile_s, ops


def profile(name, f):
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as p:
        for _ in range(5):
            f()
    print(f"--- profile {name} (5 calls)")
    print(p.key_averages().table(sort_by="self_cpu_time_total", row_limit=12))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("workdir")
    ap.add_argument("batch", nargs="?", type=int, default=256)
    ap.add_argument("variants", nargs="*")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--seconds", type=float, default=0.3, help="per variant and round")
    ap.add_argument("--profile", action="store_true")
    a = ap.parse_args()
    torch.set_num_threads(1)
    m = make_model()
    for p in m.parameters():
        p.requires_grad_(False)
    torch.manual_seed(1)
    x = torch.randn(a.batch, 28, 28)
    names = a.variants or ["eager", "eager_slow", "export", "export+freeze", "fused", "fused+freeze"]
    with torch.inference_mode():
        ref = m(x)
    fns = {}
    for name in names:
        if name == "eager":
            fns[name] = lambda: m(x)
        elif name == "eager_slow":
            def slow():
                torch.backends.mha.set_fastpath_enabled(False)
                try:
                    return m(x)
                finally:
                    torch.backends.mha.set_fastpath_enabled(True)
            fns[name] = slow
        else:
            pkg, cs, ops = package(m, x, name, a.workdir)
            fns[name] = lambda pkg=pkg: pkg(x)
            print(f"{name}: compile {cs:.1f} s; exported graph ops {ops}")
    with torch.inference_mode():
        for name, f in fns.items():
            y = f()
            y = y[0] if isinstance(y, (tuple, list)) else y
            print(f"{name}: max |y - eager| {(y - ref).abs().max().item():.3g}")
            for _ in range(3):
                f()
        t = {n: [] for n in fns}
        t0 = time.perf_counter()
        fns[names[0]]()
        iters = max(2, int(a.seconds / max(time.perf_counter() - t0, 1e-6)))
        for r in range(a.rounds):
            order = list(fns)[r % len(fns):] + list(fns)[:r % len(fns)]
            for n in order:
                t0 = time.perf_counter()
                for _ in range(iters):
                    fns[n]()
                t[n].append((time.perf_counter() - t0) * 1e6 / iters)
        base = statistics.median(t[names[0]])
        for n in fns:
            med = statistics.median(t[n])
            print(f"batch {a.batch} {n:16s} {med:10.1f} us  {names[0]}/this {base / med:.2f}  "
                  f"range {min(t[n]):.0f}-{max(t[n]):.0f}")
        if a.profile:
            for n, f in fns.items():
                profile(n, f)


main()
