"""Modules on a CUDA device: for each case, ctorch's module
(bench/probes/gpu_nn.c, built with ctorch_nn_new) against the same torch.nn module
from Python, on cuda:0, from the same seeds:
- equality: initial parameters (bit-identical expected: the same draws on the
  device's generator), the first forward's output and the gradients after
  backward of (out * out).sum() (max |difference| reported; 0 where the
  kernels are deterministic);
- speed: milliseconds per forward + backward step, ctorch / Python.
Prints one JSON object. Without CUDA: "skipped: no CUDA device", exit 77.

Usage: gpu_nn.py PATH/TO/gpu_nn [--quick]"""
import json
import os
import subprocess
import sys
import tempfile
import time

import torch

CASES = [  # name, kind, args (Python text, both sides), input shapes, forward kwargs
    ("lstm", "LSTM", "256, 512, num_layers=2, batch_first=True, device='cuda'", "64x100x256", ""),
    ("gru", "GRU", "256, 512, num_layers=2, batch_first=True, device='cuda'", "64x100x256", ""),
    ("mha", "MultiheadAttention", "512, 8, batch_first=True, device='cuda'", "64x128x512;=0;=0",
     "need_weights=False"),
    ("encoder", "TransformerEncoderLayer",
     "512, 8, dim_feedforward=2048, dropout=0.0, batch_first=True, device='cuda'", "64x128x512", ""),
    ("conv", "Conv2d", "64, 128, 3, padding=1, device='cuda'", "64x64x56x56", ""),
    ("batchnorm", "BatchNorm2d", "128, device='cuda'", "64x128x56x56", ""),
]


def python_case(kind, args, shapes, kwargs, iters):
    torch.manual_seed(0)
    m = eval(f"torch.nn.{kind}({args})")  # noqa: S307 (our own case table)
    init = {k: v.detach().clone() for k, v in m.state_dict().items()}
    torch.manual_seed(1)
    ins = []
    for s in shapes.split(";"):
        ins.append(ins[0] if s == "=0" else torch.randn(*[int(d) for d in s.split("x")], device="cuda"))
    kw = eval(f"dict({kwargs})")  # noqa: S307

    def step():
        out = m(*ins, **kw)
        out = out[0] if isinstance(out, tuple) else out
        (out * out).sum().backward()
        return out

    out = step().detach()
    grads = {k: p.grad.detach().clone() for k, p in m.named_parameters() if p.grad is not None}
    for _ in range(5):
        m.zero_grad()
        step()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(iters):
        m.zero_grad()
        step()
    torch.cuda.synchronize()
    return init, out, grads, (time.perf_counter() - t0) * 1e3 / iters


def main():
    if not torch.cuda.is_available():
        print("skipped: no CUDA device")
        return 77
    from safetensors.torch import load_file
    exe, quick = sys.argv[1], "--quick" in sys.argv
    iters = 3 if quick else 50
    res = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "date": time.strftime("%Y-%m-%d")}
    with tempfile.TemporaryDirectory() as tmp:
        for name, kind, args, shapes, kwargs in CASES:
            f = os.path.join(tmp, f"{name}.safetensors")
            r = subprocess.run([exe, kind, args, shapes, kwargs, str(iters), f], text=True, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
            if r.returncode != 0:
                res[name] = {"error": r.stderr.strip()[-400:]}
                continue
            c_ms = float(r.stdout.split()[-1])
            c = load_file(f, device="cuda")
            init, out, grads, py_ms = python_case(kind, args, shapes, kwargs, iters)
            init_equal = all(torch.equal(c[f"init.{k}"], v) for k, v in init.items())
            d_out = (c["out.0"] - out).abs().max().item()
            d_grad = max(((c[f"grad.{k}"] - g).abs().max().item() for k, g in grads.items()), default=0.0)
            res[name] = {"init_bit_identical": init_equal, "max_abs_diff_output": d_out,
                         "max_abs_diff_grads": d_grad, "ctorch_ms": c_ms, "python_ms": py_ms,
                         "python_over_ctorch": py_ms / c_ms}
            print(f"{name}: init equal {init_equal}, |d out| {d_out:.3g}, |d grad| {d_grad:.3g}, "
                  f"ctorch {c_ms:.3f} ms, Python {py_ms:.3f} ms", file=sys.stderr, flush=True)
    print(json.dumps(res, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
