"""Python threads sharing one model and its optimizer (4
threads, each running forward, backward, step and zero_grad with no lock of
its own). ctypes releases the GIL around every call, so the threads really
are inside the library at once; on the 1.13.1 build this corrupted the heap
in 8 of 24 runs (SIGSEGV, "double free or corruption"). Now an optimizer
call made while another thread's runs raises CtorchError CTORCH_BUSY, and
backward, zero_grad and step take turns on each parameter's gradient.
Then the same threads share one BatchNorm in training mode: every
forward's update of its running statistics is counted.

Runs the repro RUNS times, each in a child process (a crash kills only the
child and is counted); every run must exit cleanly. Errors allowed inside a
run: CTORCH_BUSY, and libtorch's own "modified by an inplace operation"
(a step on one thread bumps the version of a weight another thread's graph
saved: PyTorch raises the same). Anything else fails the run."""
import os
import subprocess
import sys
import threading

RUNS = int(os.environ.get("CTORCH_THREADS_RUNS", "8"))


def child():
    import ctorch
    from ctorch import nn

    ctorch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 4))
    opt = ctorch.optim.Adam(model.parameters(), lr=1e-3)
    x = ctorch.randn([32, 16])
    y = (ctorch.rand([32]) * 4).to(ctorch.int64)
    counts = {"busy": 0, "inplace": 0, "ok": 0}
    failures = []
    lock = threading.Lock()

    def work():
        for i in range(150):
            try:
                loss = nn.cross_entropy_loss(model(x), y)
                loss.backward()
                opt.step()
                opt.zero_grad(set_to_none=(i % 2 == 0))
                kind = "ok"
            except ctorch.CtorchError as e:
                if e.status_name == "CTORCH_BUSY":
                    kind = "busy"
                elif "modified by an inplace operation" in str(e):
                    kind = "inplace"
                else:
                    with lock:
                        failures.append(str(e))
                    return
            with lock:
                counts[kind] += 1

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failures:
        print(f"FAIL: {len(failures)} unexpected errors, first: {failures[0]}")
        sys.exit(1)

    # Training-mode forwards of one shared BatchNorm from the same threads:
    # its running statistics' updates take turns inside the library, so
    # none is lost.
    bn = nn.BatchNorm1d(8)
    xb = ctorch.randn([16, 8])

    def bn_work():
        for _ in range(100):
            bn(xb)

    threads = [threading.Thread(target=bn_work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    tracked = int(bn.num_batches_tracked.item())
    if tracked != 400:
        print(f"FAIL: a shared BatchNorm counted {tracked} of 400 training-mode forwards")
        sys.exit(1)
    print(f"child: {counts}, BatchNorm: {tracked} of 400 forwards counted")


def main():
    if os.environ.get("CTORCH_BINDING_SKIP"):
        print(f"skipped: {os.environ['CTORCH_BINDING_SKIP']}")
        sys.exit(77)
    bad = 0
    for run in range(RUNS):
        p = subprocess.run([sys.executable, __file__, "--child"], capture_output=True, text=True, timeout=300)
        tail = (p.stdout + p.stderr).strip().splitlines()[-1:] or [""]
        print(f"run {run}: exit {p.returncode}: {tail[0]}")
        if p.returncode != 0:
            bad += 1
            print(p.stderr[-2000:])
    print(f"{RUNS - bad} of {RUNS} runs clean")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    if sys.argv[1:] == ["--child"]:
        child()
    else:
        main()
