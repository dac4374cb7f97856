"""Training throughput on a CUDA device through Python torch: the twin of
gpu_train.c (same models, options, inputs, warm-up and timing; see there).

Usage: gpu_train.py lenet|resnet|resnet-cl fp32|bf16|fp16 eager|graph adamw|sgd STEPS [WIDTH BATCH]
       gpu_train.py -     (those arguments, one case per line on stdin)
Prints images/s; without CUDA: "skipped: no CUDA device", exit 77.
The graph mode is PyTorch's whole-network capture recipe (torch.cuda.graph)."""
import os
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
from lenet5 import LeNet5  # noqa: E402
from resnet import ResNet  # noqa: E402


def main():
    if not torch.cuda.is_available():
        print("skipped: no CUDA device")
        return 77
    if sys.argv[1:] == ["-"]:  # one case per line on stdin, as gpu_train.c
        for line in sys.stdin:
            if line.split():
                run_case(line.split())
                sys.stdout.flush()
        return 0
    return run_case(sys.argv[1:])


def run_case(argv):
    if len(argv) not in (5, 7):
        sys.exit(__doc__)
    which, prec, mode, optim, steps = argv[:5]
    steps = int(steps)
    channels_last = which == "resnet-cl"
    which = "resnet" if channels_last else which
    width, batch = (128, 512) if which == "resnet" else (0, 256)
    if len(argv) == 7:
        width, batch = int(argv[5]), int(argv[6])
    graph = mode == "graph"
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(prec)
    torch.manual_seed(0)
    dev = torch.device("cuda", 0)
    model = (ResNet(width) if which == "resnet" else LeNet5()).to(dev)
    opt = (torch.optim.AdamW(model.parameters(), lr=1e-3) if optim == "adamw"
           else torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9))
    scaler = torch.amp.GradScaler("cuda") if prec == "fp16" else None
    xs = [torch.randn(batch, 1, 28, 28, device=dev) for _ in range(2)]
    if channels_last:
        model = model.to(memory_format=torch.channels_last)
        xs = [t.contiguous(memory_format=torch.channels_last) for t in xs]
    ys = [torch.randint(0, 10, (batch,), device=dev) for _ in range(2)]
    x, y = xs[0].clone(), ys[0].clone()

    def step(cache=True):
        opt.zero_grad(set_to_none=False)
        with torch.autocast("cuda", dtype=dtype or torch.float32, enabled=dtype is not None, cache_enabled=cache):
            loss = F.cross_entropy(model(x), y)
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        else:
            loss.backward()
            opt.step()

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(5):
            step(not graph)
    torch.cuda.current_stream().wait_stream(side)
    run = step
    if graph:
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            step(False)
        run = g.replay
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for i in range(steps):
        x.copy_(xs[i % 2], non_blocking=True)
        y.copy_(ys[i % 2], non_blocking=True)
        run()
    torch.cuda.synchronize()
    print("%.3f" % (batch * steps / (time.perf_counter() - t0)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
