"""Training states cross both ways between ctorch and PyTorch, for every
learning-rate schedule kind (train_state_kinds.c is the C side).

Per kind, a Linear(3, 2) fitted by MSE on fixed data with SGD (momentum
0.9, two parameter groups) and the schedule stepped every step, 12 steps:
1. ctorch runs uninterrupted, saving training states at steps 0, 5, 12;
2. PyTorch, from ctorch's step-0 weights, runs uninterrupted too (saving
   its own training state at step 5, torch.save of the usual dict): its
   final parameters must equal ctorch's bit for bit;
3. PyTorch opens ctorch's step-5 state (torch.load, weights_only on 2.x),
   loads model, optimizer and scheduler with their load_state_dict and
   continues: bit-identical to the uninterrupted run;
4. ctorch opens PyTorch's step-5 state (ctorch_train_state_load) and
   continues: bit-identical too.

Usage: train_state_kinds_vs_torch.py PATH/TO/train_state_kinds"""
import os
import subprocess
import sys
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim import lr_scheduler as L

OLD = torch.__version__.startswith("1.")
STEPS, STOP, ROWS = 12, 5, 8
METRICS = [1.0, 0.9, 0.91, 0.905, 0.9, 0.95, 0.85, 0.86, 0.87, 0.88, 0.84, 0.845]


def pair(o, a, b, milestone):
    return L.SequentialLR(o, [a, b], milestones=[milestone]) if milestone else L.ChainedScheduler([a, b])


# The arguments train_state_kinds.c gives ctorch's.
KINDS = {
    "StepLR": lambda o: L.StepLR(o, step_size=3, gamma=0.5),
    "MultiStepLR": lambda o: L.MultiStepLR(o, milestones=[2, 5, 5, 9], gamma=0.3),
    "ConstantLR": lambda o: L.ConstantLR(o, factor=0.4, total_iters=7),
    "LinearLR": lambda o: L.LinearLR(o, start_factor=0.2, end_factor=0.9, total_iters=8),
    "ExponentialLR": lambda o: L.ExponentialLR(o, gamma=0.93),
    "PolynomialLR": lambda o: L.PolynomialLR(o, total_iters=9, power=2.0),
    "CosineAnnealingLR": lambda o: L.CosineAnnealingLR(o, T_max=5, eta_min=0.001),
    "CosineAnnealingWarmRestarts": lambda o: L.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2, eta_min=0.0005),
    "CyclicLR": lambda o: L.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=4, step_size_down=3,
                                     mode="triangular2"),
    "OneCycleLR": lambda o: L.OneCycleLR(o, max_lr=0.2, total_steps=STEPS, pct_start=0.25),
    "LambdaLR": lambda o: L.LambdaLR(o, [lambda e: 1 / (1.0 + e), lambda e: 2 / (1.0 + e)]),
    "MultiplicativeLR": lambda o: L.MultiplicativeLR(o, [lambda e: 0.95, lambda e: 0.9]),
    "ReduceLROnPlateau": lambda o: L.ReduceLROnPlateau(o, patience=1, factor=0.5, cooldown=1, threshold=0.01,
                                                       min_lr=0.004),
    "SequentialLR": lambda o: pair(o, L.LinearLR(o, start_factor=0.1, end_factor=1.0, total_iters=4),
                                   L.CosineAnnealingLR(o, T_max=10), 4),
    "ChainedScheduler": lambda o: pair(o, L.ConstantLR(o, factor=0.3, total_iters=5),
                                       L.ExponentialLR(o, gamma=0.95), 0),
}


def data():
    x = torch.tensor([[((i * 7 + j * 3) % 11 - 5) / 4.0 for j in range(3)] for i in range(ROWS)])
    y = torch.tensor([[((i * 5 + j) % 7 - 3) / 2.0 for j in range(2)] for i in range(ROWS)])
    return x, y


def load(path):
    # torch 1.13's weights_only loader reads no float (pickle's BINFLOAT): plain torch.load there.
    return torch.load(path, weights_only=not OLD)


def run(kind, model_state, resume=None, save_at=None):
    """Trains to STEPS from model_state (fresh optimizer and scheduler), or
    from the training state `resume`; with save_at, torch.saves the
    training state after that step. Returns the final model state."""
    torch.set_num_threads(1)
    x, y = data()
    net = nn.Linear(3, 2)
    net.load_state_dict(model_state)
    opt = torch.optim.SGD([{"params": [net.weight]}, {"params": [net.bias], "lr": 0.05}], lr=0.1, momentum=0.9)
    sched = KINDS[kind](opt)
    step = 0
    if resume is not None:
        net.load_state_dict(resume["model"])
        opt.load_state_dict(resume["optimizer"])
        sched.load_state_dict(resume["scheduler"])
        torch.set_rng_state(resume["rng_state"]["cpu"])
        step = resume["step"]
    while step < STEPS:
        opt.zero_grad(set_to_none=True)
        loss = F.mse_loss(net(x), y)
        loss.backward()
        opt.step()
        sched.step(METRICS[step]) if kind == "ReduceLROnPlateau" else sched.step()
        step += 1
        if save_at and step == save_at[1]:
            state = sched.state_dict()
            # torch 1.13's CyclicLR keeps a weakref.WeakMethod there, which torch.save cannot
            # pickle ("cannot pickle 'WeakMethod' object"): its users drop it, as here.
            state.pop("_scale_fn_ref", None)
            torch.save({"model": net.state_dict(), "optimizer": opt.state_dict(), "scheduler": state,
                        "epoch": 0, "step": step, "metric": loss.item(),
                        "rng_state": {"cpu": torch.get_rng_state(), "cuda": []}}, save_at[0])
    return net.state_dict()


def differences(got, want, what):
    bad = [k for k in want if not torch.equal(got[k], want[k])]
    for k in bad:
        print(f"{what}: {k} differs by up to {(got[k] - want[k]).abs().max().item():.3e}")
    return len(bad)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    exe, bad = sys.argv[1], 0
    with tempfile.TemporaryDirectory() as d:
        subprocess.run([exe, d, "c"], check=True)
        for kind in KINDS:
            start, ref = load(f"{d}/c-{kind}-0.pt")["model"], load(f"{d}/c-{kind}-final.pt")["model"]
            py_ref = run(kind, start, save_at=(f"{d}/py-{kind}-{STOP}.pt", STOP))
            bad += differences(py_ref, ref, f"{kind}: torch's uninterrupted run against ctorch's")
            bad += differences(run(kind, start, resume=load(f"{d}/c-{kind}-{STOP}.pt")), ref,
                               f"{kind}: ctorch saved at step {STOP}, torch continued")
        # ctorch continues from every state torch saved.
        r = subprocess.run([exe, d, "cr", "py"], stderr=subprocess.PIPE, text=True)
        if r.returncode != 0:
            print(f"ctorch could not continue torch's states: {r.stderr.strip()}")
            bad += 1
        for kind in KINDS:
            if os.path.exists(f"{d}/cr-{kind}-final.pt"):
                bad += differences(load(f"{d}/cr-{kind}-final.pt")["model"], load(f"{d}/c-{kind}-final.pt")["model"],
                                   f"{kind}: torch saved at step {STOP}, ctorch continued")
            else:
                print(f"{kind}: ctorch did not continue torch's state")
                bad += 1
    print(f"torch {torch.__version__}: {len(KINDS)} schedule kinds, training states crossed both ways at step "
          f"{STOP} of {STEPS}: {bad} differences")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
