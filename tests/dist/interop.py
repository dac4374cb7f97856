"""C (ctorch) and Python ranks in one process group: Python ranks of
torch.distributed and of ctorch's Python binding (ctorch.distributed, which
takes torch.distributed's names: sequence() below runs unchanged on both,
with ctorch's tensors in place of torch's).

Run with the Python whose torch is the libtorch ctorch was built against
(CMake's CTORCH_TORCH_PYTHON), with the binding on PYTHONPATH:
    interop.py PATH/TO/dist_peer           run every scenario, exit 0 if all pass
    interop.py worker MODE RANK SIZE PORT  one torch rank (used by the above)
    interop.py binding-env                 one binding rank from the environment
                                           torchrun sets (dist_torchrun_python_binding):
                                           the collectives, then data_parallel()

Each scenario starts C ranks (dist_peer) and Python ranks on 127.0.0.1 with a
fresh port; all issue the same collectives (see dist_peer.c) and check every
result. Every process is bounded by a watchdog. Where CTORCH_BINDING_SKIP is
set (the sanitizer build: a Python without the sanitizer's runtime cannot load
its library) the binding's scenarios are left out, saying so.

The Python ranks are children forked from this interpreter, which imports
torch once, before any of them (a rank of its own interpreter imported torch
each time: 7 of them cost 8 s of CPU with 1.13, 15 s with 2.x). Each
child takes its rank's environment, runs worker() and exits with its status,
as `interop.py worker ...` (still there, for running one rank by hand).
"""
import os
import subprocess
import sys
import time
from datetime import timedelta

from procs import Forked, free_port

WATCHDOG_S = 120


def sequence(dist, torch, rank, size):
    S = size * (size + 1) / 2

    t = torch.tensor([rank + 1.0, 10.0])
    dist.all_reduce(t)
    assert t.tolist() == [S, 10.0 * size], t

    t = torch.tensor([rank], dtype=torch.int64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    assert t.item() == size - 1, t

    # Gloo has no AVG: both sides send a SUM, then divide.
    t = torch.tensor([rank + 1.0])
    dist.all_reduce(t)
    t /= size
    assert t.item() == S / size, t

    t = torch.tensor([42.0 if rank == 0 else -1.0, 7.0 * rank])
    dist.broadcast(t, 0)
    assert t.tolist() == [42.0, 0.0], t
    t = torch.tensor([rank + 0.25], dtype=torch.float64)
    dist.broadcast(t, size - 1)
    assert t.item() == size - 1 + 0.25, t

    outs = [torch.full((1,), -1.0) for _ in range(size)]
    dist.all_gather(outs, torch.tensor([2.0 * rank]))
    assert [o.item() for o in outs] == [2.0 * i for i in range(size)], outs

    outs = [torch.full((1,), -1.0) for _ in range(size)] if rank == 0 else None
    dist.gather(torch.tensor([rank + 5.0]), outs, dst=0)
    if rank == 0:
        assert [o.item() for o in outs] == [i + 5.0 for i in range(size)], outs
    out = torch.full((1,), -1.0)
    dist.scatter(out, [torch.tensor([100.0 + i]) for i in range(size)] if rank == 0 else None, src=0)
    assert out.item() == 100.0 + rank, out

    if rank == 0:
        t = torch.tensor([123.0, 0.0])
        dist.send(t, 1, tag=3)
        dist.recv(t, 1, tag=4)
        assert t.tolist() == [456.0, 1.0], t
    elif rank == 1:
        t = torch.full((2,), -1.0)
        dist.recv(t, 0, tag=3)
        assert t.tolist() == [123.0, 0.0], t
        dist.send(torch.tensor([456.0, 1.0]), 0, tag=4)

    dist.barrier()


def data_parallel(dist, torch, rank, size):
    """2 ranks of the binding: an MLP trained with average_gradients, then the
    same model from the same initial parameters on the same data through
    DistributedDataParallel: both divide sums of 2 gradients by 2, exactly,
    so the parameters must end bit-identical. Then one step of gradient
    accumulation: under no_sync a rank's gradient is its own; the synced
    micro-batch after it gives the average of both ranks' accumulated sums."""
    from ctorch.nn.parallel import DistributedDataParallel as DDP
    nn, steps, batch = torch.nn, 10, 16
    assert size == 2, size

    def make():
        torch.manual_seed(0)  # the same initial parameters on both ranks and in both runs
        return nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 2))

    torch.manual_seed(1 + rank)  # each rank its own data
    x, y = torch.randn([steps, batch, 4]), torch.randn([steps, batch, 2])

    def train(model, forward, after_backward=lambda: None):
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for s in range(steps):
            opt.zero_grad()
            nn.mse_loss(forward(x[s]), y[s]).backward()
            after_backward()
            opt.step()

    ref = make()
    dist.broadcast_parameters(ref.parameters())
    train(ref, ref, lambda: dist.average_gradients(ref.parameters()))
    # 209-byte buckets: several after the rebuild with 2.x; 1.x keeps a first
    # bucket of 1 MiB, which holds this whole model.
    ddp = DDP(make(), bucket_cap_mb=0.0002)
    train(ddp, ddp)
    want = [p.tolist() for p in ref.parameters()]
    got = [p.tolist() for p in ddp.module.parameters()]
    assert got == want, "DistributedDataParallel's parameters differ from average_gradients'"
    flat = torch.cat([p.reshape([-1]) for p in ddp.parameters()]).detach()
    both = [torch.zeros_like(flat) for _ in range(size)]
    dist.all_gather(both, flat)
    assert both[0].tolist() == both[1].tolist(), "the ranks' parameters differ"
    n_params = len(list(ddp.parameters()))
    buckets = [ddp.bucket_indices(b) for b in range(ddp.bucket_count())]
    assert len(buckets) >= 1 and sorted(i for b in buckets for i in b) == list(range(n_params)), buckets

    # Gradient accumulation: micro-batch a under no_sync, then b synchronised.
    a, b = (x[0].narrow(0, 0, 8), y[0].narrow(0, 0, 8)), (x[0].narrow(0, 8, 8), y[0].narrow(0, 8, 8))

    def local_grads(xy):
        ref.zero_grad()
        nn.mse_loss(ref(xy[0]), xy[1]).backward()
        return [p.grad.clone() for p in ref.parameters()]

    ga, gb = local_grads(a), local_grads(b)  # ref's parameters are ddp's (above)
    ddp.zero_grad()
    with ddp.no_sync():
        nn.mse_loss(ddp(a[0]), a[1]).backward()
    assert [p.grad.tolist() for p in ddp.parameters()] == [g.tolist() for g in ga], "no_sync: not the local gradient"
    nn.mse_loss(ddp(b[0]), b[1]).backward()
    for i, p in enumerate(ddp.parameters()):
        avg = ga[i] + gb[i]
        dist.all_reduce(avg)
        avg /= size
        assert p.grad.tolist() == avg.tolist(), f"after no_sync: parameter {i}'s gradient is not the average"
        assert ga[i].tolist() != avg.tolist(), f"parameter {i}: the ranks' local gradients are equal"
    ddp.dispose()
    ddp.dispose()  # again: nothing

    # Tensors of one's own (from_parameters), a layer the forward never uses
    # (find_unused_parameters: without it the Reducer waits for gradients that
    # never come and averages nothing), 2 steps: the gradients averaged.
    torch.manual_seed(0)
    used, unused = nn.Linear(4, 2), nn.Linear(4, 2)
    params = list(used.parameters()) + list(unused.parameters())
    own = DDP.from_parameters(params, find_unused_parameters=True)
    for s in range(2):
        for p in params:
            p.grad = None
        own.pre_forward()
        out = used(x[s])
        own.post_forward(out)
        nn.mse_loss(out, y[s]).backward()
        for p in used.parameters():  # each rank's own data: equal on both ranks only when averaged
            avg = p.grad.clone()
            dist.all_reduce(avg)
            avg /= size
            assert p.grad.tolist() == avg.tolist(), f"find_unused_parameters, step {s}: the gradients differ"
    print(f"ctorch binding rank {rank}: DistributedDataParallel equal to average_gradients bit for bit "
          f"({steps} steps, {len(buckets)} buckets), no_sync accumulation averaged, unused parameters found", flush=True)


def worker(mode, rank, size, port, binding=False):
    # Python's default Gloo device resolves the host name; keep it on loopback.
    os.environ["GLOO_SOCKET_IFNAME"] = "lo"
    if binding:
        import ctorch as torch
        import ctorch.distributed as dist
    else:
        import torch
        import torch.distributed as dist

    timeout = timedelta(seconds=60)
    if mode == "env":
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(size))
        dist.init_process_group("gloo", init_method="env://", timeout=timeout)
    elif mode == "torchrun":  # the environment is torchrun's
        dist.init_process_group("gloo", timeout=timeout)
    elif mode == "store":
        store = dist.TCPStore("127.0.0.1", port, size, rank == 0, timeout)
        dist.init_process_group("gloo", store=store, rank=rank, world_size=size, timeout=timeout)
    else:
        raise SystemExit("unknown mode " + mode)
    assert dist.get_rank() == rank and dist.get_world_size() == size
    sequence(dist, torch, rank, size)
    if binding and mode == "torchrun":
        data_parallel(dist, torch, rank, size)
    dist.destroy_process_group()
    print(f"{'ctorch binding' if binding else 'Python'} rank {rank} of {size}: all collectives matched", flush=True)


def scenario(peer, name, mode, size, c_ranks, extra_env=None, binding_ranks=()):
    port = free_port()
    procs = []
    for rank in range(size):
        env = dict(os.environ)
        env.pop("GLOO_SOCKET_IFNAME", None)  # C ranks must stay on 127.0.0.1 by themselves
        env.update(extra_env or {})
        if rank in c_ranks:
            if mode == "env":
                env.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(size),
                           LOCAL_RANK=str(rank))
                cmd = [peer, "env"]
            else:
                cmd = [peer, "store", "127.0.0.1", str(port), str(rank), str(size), "1" if rank == 0 else "0"]
            procs.append((rank, subprocess.Popen(cmd, env=env)))
        else:
            procs.append((rank, Forked(env, worker, mode, rank, size, port, rank in binding_ranks)))
    deadline = time.monotonic() + WATCHDOG_S
    codes = {}
    while len(codes) < len(procs):
        for rank, p in procs:
            if rank not in codes and p.poll() is not None:
                codes[rank] = p.returncode
        if time.monotonic() > deadline:
            for rank, p in procs:
                if rank not in codes:
                    print(f"watchdog: {name}: rank {rank} still running after {WATCHDOG_S} s, killing it", flush=True)
                    p.kill()
                    codes[rank] = p.wait()
        time.sleep(0.05)
    ok = all(c == 0 for c in codes.values())
    kinds = ", ".join(f"{r}:{'C' if r in c_ranks else 'ctorch-Py' if r in binding_ranks else 'Py'}" for r in range(size))
    print(f"{'PASS' if ok else 'FAIL'}: {name} ({mode}; ranks {kinds}; exit codes {codes})", flush=True)
    return ok


def main():
    if len(sys.argv) == 6 and sys.argv[1] == "worker":
        worker(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]))
        return 0
    if len(sys.argv) == 2 and sys.argv[1] == "binding-env":
        worker("torchrun", int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), None, binding=True)
        return 0
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    peer = sys.argv[1]
    import torch.distributed  # noqa: F401  (once, for every forked Python rank; nothing computed here)
    results = [
        scenario(peer, "C master, Python worker, env://", "env", 2, {0}),
        scenario(peer, "Python master, C worker, env://", "env", 2, {1}),
        scenario(peer, "C TCPStore master, Python TCPStore + init_process_group(store=)", "store", 2, {0}),
        scenario(peer, "Python TCPStore master, C TCPStore client", "store", 2, {1}),
        scenario(peer, "4 ranks, C and Python interleaved, env://", "env", 4, {0, 2}),
        # 2.x runs the store-based barrier after init only when asked (1.13
        # always does): C ranks must then wait in it exactly as Python's do.
        scenario(peer, "C master, Python worker, env://, TORCH_DIST_INIT_BARRIER=1", "env", 2, {0},
                 {"TORCH_DIST_INIT_BARRIER": "1"}),
    ]
    if os.environ.get("CTORCH_BINDING_SKIP"):
        print(f"skipped: the ctorch binding's ranks ({os.environ['CTORCH_BINDING_SKIP']})", flush=True)
    else:
        results += [
            scenario(peer, "C master, torch and ctorch-binding workers, env://", "env", 3, {0}, binding_ranks={2}),
            scenario(peer, "ctorch-binding TCPStore master, C and torch clients", "store", 3, {1},
                     binding_ranks={0}),
        ]
        results.append(ddp_signature_is_torch())
    return 0 if all(results) else 1


def ddp_signature_is_torch():
    """The binding's DistributedDataParallel takes torch's argument names with
    torch's defaults (bucket_cap_mb: None, torch 2.x's spelling of 1.x's 25;
    broadcast_buffers: True, which 2.x deprecates, spelling its default None).
    After every scenario: no rank is forked from a process that loaded ctorch."""
    import inspect
    import torch.nn.parallel
    import ctorch.nn.parallel
    theirs = inspect.signature(torch.nn.parallel.DistributedDataParallel.__init__).parameters
    ours = inspect.signature(ctorch.nn.parallel.DistributedDataParallel.__init__).parameters
    bad = [f"{n}={p.default!r}" for n, p in ours.items() if n != "self" and (
        n not in theirs or (p.default != theirs[n].default and not (n == "bucket_cap_mb" and p.default is None
                                                                      and theirs[n].default in (None, 25))
                            and not (n == "broadcast_buffers" and p.default is True and theirs[n].default is None)))]
    print(f"{'FAIL' if bad else 'PASS'}: DistributedDataParallel's arguments are torch's"
          f"{': not ' + ', '.join(bad) if bad else ''}", flush=True)
    return not bad


if __name__ == "__main__":
    sys.exit(main())
