"""One rank of bench/ddp/run in Python: ddp_step.c's job (same model, shape,
optimizer and step) through torch.nn.parallel.DistributedDataParallel.

    ddp_step.py WAY STEPS  under torchrun's environment; WAY: ddp (DistributedDataParallel) or
                           local (no communication: each rank alone); rank 0 prints
                           {"way": "python-WAY", "step_ms": [...]}
"""
import json
import sys
import time

import torch
import torch.distributed as dist
from torch import nn

VOCAB, DIM, HEADS, FF, LAYERS, SEQ, BATCH, WARMUP = 8192, 256, 4, 1024, 4, 64, 4, 3


def main(way, steps):
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    torch.manual_seed(1)
    layer = nn.TransformerEncoderLayer(DIM, HEADS, dim_feedforward=FF, dropout=0.0, batch_first=True)
    model = nn.Sequential(nn.Embedding(VOCAB, DIM), nn.TransformerEncoder(layer, LAYERS, enable_nested_tensor=False),
                          nn.Linear(DIM, VOCAB))
    ddp = nn.parallel.DistributedDataParallel(model) if way == "ddp" else model
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    ms = []
    for s in range(WARMUP + steps):
        tokens = torch.randint(VOCAB, (BATCH, SEQ))
        target = torch.randint(VOCAB, (BATCH * SEQ,))
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = nn.functional.cross_entropy(ddp(tokens).reshape(BATCH * SEQ, VOCAB), target)
        loss.backward()
        opt.step()
        if s >= WARMUP:
            ms.append(round((time.perf_counter() - t0) * 1e3, 2))
    if dist.get_rank() == 0:
        print(json.dumps({"way": f"python-{way}", "step_ms": ms}), flush=True)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("ddp", "local"):
        sys.exit(__doc__)
    main(sys.argv[1], int(sys.argv[2]))
