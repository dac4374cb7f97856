"""A ctorch training state, opened and continued by PyTorch.

resume_kill's run (Linear-ReLU-Dropout-Linear, SGD with momentum, CosineAnnealingLR,
a shuffling loader, 3 epochs) stops after step 20, and its checkpoint is
read with torch.load(weights_only=True) (2.x; plain torch.load on 1.13,
whose weights_only loader reads no float). Python
builds the same model, optimizer and scheduler, loads "model", "optimizer"
and "scheduler" with their load_state_dict, restores the generator from
"rng_state", reproduces the loader's order from "loader" (ctorch's epoch
seed), trains to the end, and must reach the parameters ctorch reached:
bit-identical.

Usage: train_state_vs_torch.py PATH/TO/resume_kill"""
import glob
import os
import subprocess
import sys
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F

N, FEATURES, CLASSES, BATCH, EPOCHS = 240, 20, 4, 16, 3
LOADER_SEED = 99
STOP = 20  # ctorch stops after this step; Python goes on from its checkpoint


def epoch_perm(epoch):
    g = torch.Generator().manual_seed((LOADER_SEED * 1000003 + epoch) % 2**64)
    return torch.randperm(N, generator=g)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as full, tempfile.TemporaryDirectory() as part:
        subprocess.run([sys.argv[1], "run", full], check=True)
        ref = torch.load(os.path.join(full, "final.pt"))
        subprocess.run([sys.argv[1], "run", part, str(STOP)], check=True)
        ck_path = sorted(glob.glob(os.path.join(part, "checkpoint-*.pt")))[-1]
        # torch 1.13's weights_only loader reads no float (pickle's BINFLOAT):
        # plain torch.load there.
        ck = torch.load(ck_path, weights_only=not torch.__version__.startswith("1."))
        want_keys = {"model", "optimizer", "scheduler", "epoch", "step", "metric", "loader", "rng_state"}
        if set(ck) != want_keys:
            print(f"keys {sorted(ck)}, expected {sorted(want_keys)}")
            return 1
        print(f"{os.path.basename(ck_path)}: epoch {ck['epoch']}, step {ck['step']}, loader {ck['loader']}, "
              f"metric {ck['metric']:.6f}")

        torch.manual_seed(20261123)
        x = torch.randn(N, FEATURES)
        y = torch.randint(CLASSES, (N,))
        net = nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Dropout(0.2), nn.Linear(32, 4))
        net.load_state_dict(ck["model"])
        opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
        batches = (N + BATCH - 1) // BATCH
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=batches * EPOCHS)
        opt.load_state_dict(ck["optimizer"])
        sched.load_state_dict(ck["scheduler"])
        torch.set_rng_state(ck["rng_state"]["cpu"])
        epoch, start = ck["loader"]["epoch"], ck["loader"]["batch"]
        assert epoch == ck["epoch"], (epoch, ck["epoch"])
        steps = 0
        while epoch < EPOCHS:
            perm = epoch_perm(epoch)
            for b in range(start, batches):
                idx = perm[b * BATCH:(b + 1) * BATCH]
                opt.zero_grad(set_to_none=True)
                loss = F.cross_entropy(net(x[idx]), y[idx])
                loss.backward()
                opt.step()
                sched.step()
                steps += 1
            epoch, start = epoch + 1, 0
        got = net.state_dict()
        bad = 0
        for k, v in ref.items():
            if not torch.equal(got[k], v):
                print(f"{k}: max difference {(got[k] - v).abs().max().item():.3e}")
                bad += 1
        print(f"torch {torch.__version__} continued ctorch's training state for {steps} steps: "
              f"{len(ref) - bad} of {len(ref)} parameters bit-identical to ctorch's run")
        return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
