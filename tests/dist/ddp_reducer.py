"""ctorch_ddp (c10d's Reducer from C) against torch.nn.parallel.DistributedDataParallel.

Run with the Python whose torch is the libtorch ctorch was built against:
    ddp_reducer.py PATH/TO/ddp_peer        every scenario; exit 0 if all pass
    ddp_reducer.py worker MODE DIR         one Python DDP rank (torchrun's environment)

For each mode of ddp_peer.c (mlp, accum: no_sync, unused:
find_unused_parameters) three jobs of 2 ranks train the same model on the
same data: Python DDP on both ranks (the reference), ctorch on both, and a
mixed job (rank 0 Python DDP, rank 1 ctorch) that only runs if both sides
issue the same collectives with the same bucket sizes. Every rank of every
job must match the reference bit for bit: each step's bucket assignment
(one bucket at first, then the rebuilt ones), each gradient after backward,
and the final parameters. Each job is bounded by a watchdog. The Python
ranks are children forked from this interpreter (procs.Forked).
"""
import os
import subprocess
import sys
import tempfile
import time

from procs import Forked, free_port

WATCHDOG_S = 120
STEPS, WORLD, PER_RANK = 4, 2, 8
MODES = ("mlp", "accum", "unused")


def make_model(torch, unused):
    nn = torch.nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Sequential(nn.Linear(32, 640), nn.ReLU(), nn.Linear(640, 640), nn.ReLU(),
                                      nn.Linear(640, 10))
            if unused:
                self.skip = nn.Linear(640, 640)  # never called: find_unused_parameters marks it ready

        def forward(self, x):
            return self.body(x)

    return Net()


def worker(mode, d):
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    torch.set_num_threads(1)  # as ddp_peer: one thread's kernels give the same bits
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    unused = mode == "unused"
    net = make_model(torch, unused)
    init = torch.load(os.path.join(d, "init.pt"))
    net.load_state_dict({k: v for k, v in init.items() if unused or k.startswith("body.")})
    data = torch.load(os.path.join(d, "data.pt"))
    ddp = DDP(net, bucket_cap_mb=20000 / 2**20, find_unused_parameters=unused)
    params = [p for p in net.parameters() if p.requires_grad]
    index = {p.data_ptr(): i for i, p in enumerate(params)}
    opt = torch.optim.SGD(params, lr=0.05, foreach=False)
    out = {}
    parts = 2 if mode == "accum" else 1
    rows = PER_RANK // parts
    for s in range(data["x"].shape[0]):
        opt.zero_grad(set_to_none=True)
        x = data["x"][s, rank * PER_RANK:(rank + 1) * PER_RANK]
        y = data["y"][s, rank * PER_RANK:(rank + 1) * PER_RANK]
        for part in range(parts):
            xp, yp = x[part * rows:(part + 1) * rows], y[part * rows:(part + 1) * rows]
            if part < parts - 1:
                with ddp.no_sync():
                    torch.nn.functional.mse_loss(ddp(xp), yp).backward()
            else:
                torch.nn.functional.mse_loss(ddp(xp), yp).backward()
        for i, p in enumerate(params):
            if p.grad is not None:
                out[f"s{s}.grad{i}"] = p.grad.clone()
        for b in ddp.reducer._get_zeros_like_grad_buckets():
            out[f"s{s}.bucket{b.index()}"] = torch.tensor([index[p.data_ptr()] for p in b.parameters()])
        opt.step()
    for i, p in enumerate(params):
        out[f"final{i}"] = p.detach().clone()
    torch.save(out, os.path.join(d, f"{mode}_py_rank{rank}.pt"))
    dist.destroy_process_group()


def run_job(ranks, label):
    """Starts one process per rank (ranks[rank]: ("py", mode, dir) for a
    Python DDP rank, or a command line) with torchrun's variables and waits
    for all; a job past the watchdog is killed and fails."""
    port = free_port()
    procs = []
    for rank, what in enumerate(ranks):
        env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank),
                   WORLD_SIZE=str(len(ranks)), LOCAL_RANK=str(rank), OMP_NUM_THREADS="1")
        procs.append(Forked(env, worker, what[1], what[2]) if what[0] == "py" else subprocess.Popen(what, env=env))
    ok = True
    deadline = time.monotonic() + WATCHDOG_S
    for p in procs:
        try:
            ok &= p.wait(timeout=max(1, deadline - time.monotonic())) == 0
        except subprocess.TimeoutExpired:
            ok = False
    for p in procs:
        if p.poll() is None:
            p.kill()
            p.wait()
    if not ok:
        print(f"FAIL {label}: a rank failed or hung", flush=True)
    return ok


def compare(torch, ref, got, label):
    """Bit-for-bit equality of two records; returns the number of problems."""
    bad = 0
    if sorted(ref) != sorted(got):
        print(f"FAIL {label}: keys differ: only in reference {sorted(set(ref) - set(got))[:6]}, "
              f"only in ctorch {sorted(set(got) - set(ref))[:6]}")
        return 1
    for k in sorted(ref):
        a, b = ref[k], got[k]
        if a.dtype != b.dtype or a.shape != b.shape or not torch.equal(a, b):
            diff = (a.double() - b.double()).abs().max().item() if a.shape == b.shape else "shape"
            print(f"FAIL {label}: {k} differs ({diff}): {a.flatten()[:4].tolist()} vs {b.flatten()[:4].tolist()}")
            bad += 1
    return bad


def main(peer):
    import torch

    torch.manual_seed(0)
    bad = 0
    with tempfile.TemporaryDirectory(prefix="ctorch-ddp-") as d:
        torch.save(make_model(torch, True).state_dict(), os.path.join(d, "init.pt"))
        torch.save({"x": torch.randn(STEPS, WORLD * PER_RANK, 32), "y": torch.randn(STEPS, WORLD * PER_RANK, 10)},
                   os.path.join(d, "data.pt"))
        for mode in MODES:
            py, c = ("py", mode, d), [peer, mode, d]
            jobs = {"py": [py] * WORLD, "c": [c] * WORLD, "mixed": [py, c]}
            for name, ranks in jobs.items():
                if not run_job(ranks, f"{mode}/{name}"):
                    bad += 1
                    continue
                # Each rank's record is named by its side; the mixed job's
                # ranks overwrite those of the earlier jobs, so read them now.
                recs = {}
                for rank, what in enumerate(ranks):
                    side = "py" if what is py else "c"
                    recs[rank] = torch.load(os.path.join(d, f"{mode}_{side}_rank{rank}.pt"))
                if name == "py":
                    ref = recs
                    nb = sorted({k.split(".")[0] for k in ref[0] if ".bucket" in k})
                    buckets = [sum(1 for k in ref[0] if k.startswith(f"{s}.bucket")) for s in nb]
                    print(f"{mode}: Python DDP buckets per step {buckets}")
                    # One bucket for the first iteration unless unused parameters are searched for.
                    if (mode != "unused" and buckets[0] != 1) or max(buckets) < 2:
                        print(f"FAIL {mode}: expected one bucket, then several after the rebuild")
                        bad += 1
                    continue
                for rank in recs:
                    n = compare(torch, ref[rank], recs[rank], f"{mode}/{name} rank {rank}")
                    bad += n
                    if not n:
                        print(f"ok {mode}/{name} rank {rank}: {len(recs[rank])} tensors equal to Python DDP's")
    print("ddp_reducer:", "FAILED" if bad else "passed")
    return 1 if bad else 0


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "worker":
        worker(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 2:
        sys.exit(main(sys.argv[1]))
    else:
        sys.exit(__doc__)
