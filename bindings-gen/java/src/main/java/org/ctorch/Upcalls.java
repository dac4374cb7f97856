package org.ctorch;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import org.ctorch.raw.RawApi;

/**
 * C calling Java: a custom module's forward, an LR schedule's factor (LambdaLR,
 * MultiplicativeLR), a loader's per-item transform. One upcall stub per callback type for the
 * process, dispatching on user_data (a key into a map), so no stub is made per module. A
 * Java exception never unwinds into C (the JVM would end): the stub catches every Throwable,
 * returns a failure status, and keeps the exception for the thread, where the failed call's
 * CTorchException carries it as its cause.
 *
 * <p>Re-entry: a Java forward that calls a module whose forward is Java again (itself, or
 * modules calling each other) nests C and Java frames on one thread. Past {@link #MAX_DEPTH}
 * nested upcalls the next one fails with an IllegalStateException (the cause of the
 * outermost call's CTorchException) instead of running: deep enough for any module tree,
 * and well before the thread's stack ends, where a StackOverflowError thrown in an upcall's
 * own handler would escape it and end the JVM. Should the stack still run out (a thread with
 * a small stack), the handler keeps the exception only if it has room to: otherwise the
 * status alone goes back to C.
 */
final class Upcalls {
    private Upcalls() {}

    private static final Map<Long, Function<Tensor[], Tensor[]>> FORWARDS = new ConcurrentHashMap<>();
    private static final AtomicLong NEXT = new AtomicLong(1);
    static final ThreadLocal<Throwable> PENDING = new ThreadLocal<>();
    /** The most Java upcalls nested on one thread (each with C and libtorch frames between). */
    static final int MAX_DEPTH = 64;
    private static final ThreadLocal<int[]> DEPTH = ThreadLocal.withInitial(() -> new int[1]);
    private static final int RUNTIME = 9;
    private static final MemorySegment FORWARD_STUB;
    private static final MemorySegment FREE_STUB;
    private static final MemorySegment LR_STUB;
    private static final Map<Long, Optim.LrLambda> LAMBDAS = new ConcurrentHashMap<>();
    private static final Map<Long, Data.ItemTransform> TRANSFORMS = new ConcurrentHashMap<>();
    private static final MemorySegment TRANSFORM_STUB;
    private static final MemorySegment TRANSFORM_FREE_STUB;

    static {
        try {
            var lookup = MethodHandles.lookup();
            Linker linker = Linker.nativeLinker();
            FORWARD_STUB = linker.upcallStub(
                    lookup.findStatic(Upcalls.class, "forward", MethodType.methodType(int.class, MemorySegment.class,
                            MemorySegment.class, MemorySegment.class, long.class, MemorySegment.class,
                            MemorySegment.class, long.class, MemorySegment.class)),
                    FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS, JAVA_LONG, ADDRESS, ADDRESS, JAVA_LONG,
                            ADDRESS),
                    Arena.global());
            FREE_STUB = linker.upcallStub(
                    lookup.findStatic(Upcalls.class, "free", MethodType.methodType(void.class, MemorySegment.class)),
                    FunctionDescriptor.ofVoid(ADDRESS), Arena.global());
            LR_STUB = linker.upcallStub(
                    lookup.findStatic(Upcalls.class, "lrFactor", MethodType.methodType(int.class, MemorySegment.class,
                            long.class, long.class, MemorySegment.class)),
                    FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_LONG, ADDRESS), Arena.global());
            TRANSFORM_STUB = linker.upcallStub(
                    lookup.findStatic(Upcalls.class, "transform", MethodType.methodType(int.class, MemorySegment.class,
                            long.class, MemorySegment.class, MemorySegment.class, MemorySegment.class,
                            MemorySegment.class)),
                    FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, ADDRESS, ADDRESS, ADDRESS, ADDRESS),
                    Arena.global());
            TRANSFORM_FREE_STUB = linker.upcallStub(
                    lookup.findStatic(Upcalls.class, "freeTransform", MethodType.methodType(void.class,
                            MemorySegment.class)),
                    FunctionDescriptor.ofVoid(ADDRESS), Arena.global());
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    static NnModule custom(String typeName, Function<Tensor[], Tensor[]> forward) {
        long key = NEXT.getAndIncrement();
        FORWARDS.put(key, forward);
        Scratch s = Scratch.get();
        long m = s.mark();
        try {
            MemorySegment out = s.allocate(ADDRESS);
            int st = RawApi.nn_custom_new(out, s.allocateFrom(typeName), FORWARD_STUB, MemorySegment.ofAddress(key),
                    FREE_STUB);
            if (st != 0) {
                FORWARDS.remove(key);
                throw Native.error(st);
            }
            return NnModule.own(out.get(ADDRESS, 0));
        } finally {
            s.reset(m);
        }
    }

    /**
     * A LambdaLR or MultiplicativeLR scheduler whose factor is fn. C keeps no reference to fn
     * (user_data is a key): it stays registered while the returned scheduler is reachable.
     */
    static LrScheduler lrLambda(Optimizer opt, LrSchedule kind, Optim.LrLambda fn) {
        long key = NEXT.getAndIncrement();
        LAMBDAS.put(key, fn);
        Scratch s = Scratch.get();
        long m = s.mark();
        try {
            MemorySegment out = s.allocate(ADDRESS);
            MemorySegment h = Handle.use(opt, "ctorch_lr_scheduler_lambda", "opt");
            int st;
            try {
                st = RawApi.lr_scheduler_lambda(out, h, kind.value, LR_STUB, MemorySegment.ofAddress(key));
            } finally {
                opt.done();
            }
            if (st != 0) {
                LAMBDAS.remove(key);
                throw Native.error(st);
            }
            LrScheduler sched = LrScheduler.own(out.get(ADDRESS, 0));
            Handle.CLEANER.register(sched, () -> LAMBDAS.remove(key));
            return sched;
        } finally {
            s.reset(m);
        }
    }

    private static int lrFactor(MemorySegment userData, long epoch, long group, MemorySegment factor) {
        try {
            Optim.LrLambda f = LAMBDAS.get(userData.address());
            if (f == null) {
                throw new IllegalStateException("the scheduler's Java lr_lambda is gone");
            }
            factor.reinterpret(8).set(java.lang.foreign.ValueLayout.JAVA_DOUBLE, 0, f.factor(epoch, group));
            return 0;
        } catch (Throwable t) {
            try {
                PENDING.set(t);
            } catch (StackOverflowError noRoom) {
                // No stack left to keep it: the failure status alone goes back to C.
            }
            return RUNTIME;
        }
    }

    /** Sets (fn null: removes) the loader's per-item transform; the previous one is released by C. */
    static void setTransform(DataLoader loader, Data.ItemTransform fn) {
        long key = fn == null ? 0 : NEXT.getAndIncrement();
        if (fn != null) {
            TRANSFORMS.put(key, fn);
        }
        MemorySegment h = Handle.use(loader, "ctorch_data_loader_set_transform_fn", "loader");
        int st;
        try {
            st = RawApi.data_loader_set_transform_fn(h, fn == null ? MemorySegment.NULL : TRANSFORM_STUB,
                    MemorySegment.ofAddress(key), fn == null ? MemorySegment.NULL : TRANSFORM_FREE_STUB);
        } finally {
            loader.done();
        }
        if (st != 0) {
            TRANSFORMS.remove(key); // a failure after the checks has called free already: removing twice is harmless
            throw Native.error(st);
        }
    }

    private static void freeTransform(MemorySegment userData) {
        TRANSFORMS.remove(userData.address());
    }

    /** A borrowed C tensor as a Java one holding its own reference (freed with the upcall's scope). */
    private static Tensor borrowed(MemorySegment h, MemorySegment r) {
        if (h.equals(MemorySegment.NULL)) {
            return null;
        }
        Native.check(RawApi.tensor_ref(r, h));
        return Tensor.own(r.get(ADDRESS, 0));
    }

    /** A NEW C handle to t (for C to own). */
    private static MemorySegment toC(Tensor t, MemorySegment r) {
        MemorySegment h = t.use();
        try {
            Native.check(RawApi.tensor_ref(r, h));
        } finally {
            t.done();
        }
        return r.get(ADDRESS, 0);
    }

    private static int transform(MemorySegment userData, long index, MemorySegment data, MemorySegment target,
                                 MemorySegment dataOut, MemorySegment targetOut) {
        try {
            Data.ItemTransform f = TRANSFORMS.get(userData.address());
            if (f == null) {
                throw new IllegalStateException("the loader's Java transform is gone");
            }
            try (Scope _ = Scope.open()) { // frees the wrappers made here (C holds its own references)
                Scratch s = Scratch.get();
                long m = s.mark();
                try {
                    MemorySegment r = s.allocate(ADDRESS);
                    Tensor x = borrowed(data, r), y = borrowed(target, r);
                    Tensor[] out = f.apply(index, x, y);
                    if (out == null || out.length != 2) {
                        throw new IllegalArgumentException("a loader transform returns {data, target}");
                    }
                    // null or the item's own tensor: the borrowed handle back, unchanged.
                    MemorySegment d = out[0] == null || out[0] == x ? data : toC(out[0], r);
                    MemorySegment t;
                    try {
                        t = out[1] == null || out[1] == y ? target : toC(out[1], r);
                    } catch (Throwable e) {
                        if (d != data) {
                            RawApi.tensor_free(d);
                        }
                        throw e;
                    }
                    dataOut.reinterpret(8).set(ADDRESS, 0, d);
                    targetOut.reinterpret(8).set(ADDRESS, 0, t);
                } finally {
                    s.reset(m);
                }
            }
            return 0;
        } catch (Throwable t) {
            try {
                PENDING.set(t);
            } catch (StackOverflowError noRoom) {
                // No stack left to keep it: the failure status alone goes back to C.
            }
            return RUNTIME;
        }
    }

    private static void free(MemorySegment userData) {
        FORWARDS.remove(userData.address());
    }

    /** Enters one more nested upcall on this thread; returns the counter to leave() it. */
    private static int[] enter(String what) {
        int[] d = DEPTH.get();
        if (d[0] >= MAX_DEPTH) {
            throw new IllegalStateException(what + ": " + MAX_DEPTH + " Java callbacks are already nested on this "
                    + "thread (a Java forward calling modules whose forward is Java, through C): refused before the "
                    + "thread's stack runs out");
        }
        d[0]++;
        return d;
    }

    private static int forward(MemorySegment userData, MemorySegment self, MemorySegment inputs, long nInputs,
                               MemorySegment kwargs, MemorySegment outputs, long maxOutputs, MemorySegment nOutputs) {
        int[] depth = null;
        try {
            depth = enter("a custom module's forward");
            Function<Tensor[], Tensor[]> f = FORWARDS.get(userData.address());
            if (f == null) {
                throw new IllegalStateException("the module's Java forward is gone");
            }
            try (Scope _ = Scope.open()) { // frees the wrappers made here (C holds its own references)
                MemorySegment in = inputs.reinterpret(nInputs * 8);
                Tensor[] xs = new Tensor[(int) nInputs];
                Scratch s = Scratch.get();
                long m = s.mark();
                try {
                    MemorySegment r = s.allocate(ADDRESS);
                    for (int i = 0; i < xs.length; i++) {
                        MemorySegment h = in.getAtIndex(ADDRESS, i);
                        if (!h.equals(MemorySegment.NULL)) {
                            Native.check(RawApi.tensor_ref(r, h)); // borrowed: the Java object owns a reference
                            xs[i] = Tensor.own(r.get(ADDRESS, 0));
                        }
                    }
                } finally {
                    s.reset(m);
                }
                Tensor[] ys = f.apply(xs);
                if (ys.length > maxOutputs) {
                    throw new IllegalArgumentException("forward returned " + ys.length + " outputs; at most "
                            + maxOutputs + " fit");
                }
                MemorySegment outs = outputs.reinterpret(maxOutputs * 8);
                int done = 0;
                try {
                    m = s.mark();
                    MemorySegment r = s.allocate(ADDRESS);
                    for (; done < ys.length; done++) {
                        MemorySegment h = MemorySegment.NULL;
                        if (ys[done] != null) {
                            MemorySegment yh = ys[done].use();
                            try {
                                Native.check(RawApi.tensor_ref(r, yh)); // a NEW handle goes to C
                            } finally {
                                ys[done].done();
                            }
                            h = r.get(ADDRESS, 0);
                        }
                        outs.setAtIndex(ADDRESS, done, h);
                    }
                } catch (Throwable t) {
                    for (int i = 0; i < done; i++) {
                        RawApi.tensor_free(outs.getAtIndex(ADDRESS, i));
                    }
                    throw t;
                } finally {
                    s.reset(m);
                }
                nOutputs.reinterpret(8).set(JAVA_LONG, 0, ys.length);
            }
            return 0;
        } catch (Throwable t) {
            try {
                PENDING.set(t);
            } catch (StackOverflowError noRoom) {
                // No stack left to keep it: the failure status alone goes back to C.
            }
            return RUNTIME;
        } finally {
            if (depth != null) {
                depth[0]--;
            }
        }
    }
}
