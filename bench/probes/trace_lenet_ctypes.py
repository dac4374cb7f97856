#!/usr/bin/env python3
"""LeNet-5 forward from Python through ctypes (a language binding's view of
ctorch: one FFI call per op), op by op against the same network traced --
from Python, through the same C API -- into a TorchScript module run with one
call. Needs no torch, only libctorch.

    trace_lenet_ctypes.py LIBCTORCH [BATCH] [ITERS]

Prints microseconds per forward each way (median of 7 interleaved rounds,
inference mode, 1 intra-op thread; wall clock and the thread's CPU time)."""
import ctypes as C
import statistics
import sys
import time

T = C.c_void_p  # ctorch_tensor
I64 = C.c_int64


def main():
    lib = C.CDLL(sys.argv[1])
    batch = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    iters = int(sys.argv[3]) if len(sys.argv) > 3 else 700

    def call(name, *args):
        st = getattr(lib, name)(*args)
        if st != 0:
            lib.ctorch_last_error.restype = C.c_char_p
            sys.exit(f"{name}: {lib.ctorch_last_error().decode()}")

    def ints(*v):
        return (I64 * len(v))(*v)

    lib.ctorch_tensor_free.argtypes = [T]
    call("ctorch_set_num_threads", 1)
    call("ctorch_manual_seed", C.c_uint64(0))
    f32 = C.c_int32(9)

    def randn(*shape):
        t = T()
        call("ctorch_randn", C.byref(t), ints(*shape), C.c_size_t(len(shape)), C.byref(f32), None, None, None)
        return t

    shapes = [("conv1.weight", (6, 1, 5, 5)), ("conv1.bias", (6,)), ("conv2.weight", (16, 6, 5, 5)),
              ("conv2.bias", (16,)), ("fc1.weight", (120, 256)), ("fc1.bias", (120,)), ("fc2.weight", (84, 120)),
              ("fc2.bias", (84,)), ("fc3.weight", (10, 84)), ("fc3.bias", (10,))]
    p = [randn(*s) for _, s in shapes]
    x = randn(batch, 1, 28, 28)
    one, zero, two = ints(1, 1), ints(0, 0), ints(2, 2)
    n2 = C.c_size_t(2)

    def op(name, *args):
        t = T()
        call(name, C.byref(t), *args)
        return t

    def then(prev, nxt):
        lib.ctorch_tensor_free(prev)
        return nxt

    def forward(x):  # examples/lenet5_model.h's forward, one ctypes call per op
        t = op("ctorch_conv2d", x, p[0], p[1], one, n2, zero, n2, one, n2, I64(1))
        t = then(t, op("ctorch_relu", t))
        t = then(t, op("ctorch_max_pool2d", t, two, n2, two, n2, zero, n2, one, n2, C.c_int(0)))
        t = then(t, op("ctorch_conv2d", t, p[2], p[3], one, n2, zero, n2, one, n2, I64(1)))
        t = then(t, op("ctorch_relu", t))
        t = then(t, op("ctorch_max_pool2d", t, two, n2, two, n2, zero, n2, one, n2, C.c_int(0)))
        t = then(t, op("ctorch_flatten_using_ints", t, I64(1), I64(-1)))
        t = then(t, op("ctorch_linear", t, p[4], p[5]))
        t = then(t, op("ctorch_relu", t))
        t = then(t, op("ctorch_linear", t, p[6], p[7]))
        t = then(t, op("ctorch_relu", t))
        return then(t, op("ctorch_linear", t, p[8], p[9]))

    # Trace it from Python, through the C API.
    tr, m = T(), T()
    call("ctorch_tracer_new", C.byref(tr), b"LeNet5")
    for (name, _), t in zip(shapes, p):
        call("ctorch_tracer_add_parameter", tr, name.encode(), t)
    call("ctorch_tracer_begin", tr, C.byref(x), C.c_size_t(1))
    y = forward(x)
    call("ctorch_tracer_finish", C.byref(m), tr, C.byref(y), C.c_size_t(1))
    lib.ctorch_tracer_free.argtypes = [T]
    lib.ctorch_tracer_free(tr)
    lib.ctorch_tensor_free(y)

    def traced(x):
        return op("ctorch_module_forward_tensors", m, C.byref(x), C.c_size_t(1))

    scope = T()
    call("ctorch_autograd_scope_enter", C.byref(scope), C.c_int32(2))  # inference mode
    rounds = {"ops": [], "traced": []}
    cpu = {"ops": [], "traced": []}
    per = max(1, iters // 7)
    for f in (forward, traced):  # warm-up (the executor profiles first)
        for _ in range(10):
            lib.ctorch_tensor_free(f(x))
    for _ in range(7):
        for name, f in (("ops", forward), ("traced", traced)):
            t0, c0 = time.perf_counter(), time.thread_time()
            for _ in range(per):
                lib.ctorch_tensor_free(f(x))
            cpu[name].append((time.thread_time() - c0) * 1e6 / per)
            rounds[name].append((time.perf_counter() - t0) * 1e6 / per)
    call("ctorch_autograd_scope_leave", scope)
    med = statistics.median
    print(f"python_ctypes batch {batch}: forward_ops wall {med(rounds['ops']):.1f} cpu {med(cpu['ops']):.1f}, "
          f"forward_traced wall {med(rounds['traced']):.1f} cpu {med(cpu['traced']):.1f}")


main()
