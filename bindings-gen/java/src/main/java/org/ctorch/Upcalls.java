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
 * MultiplicativeLR). One upcall stub per callback type for the
 * process, dispatching on user_data (a key into a map), so no stub is made per module. A
 * Java exception never unwinds into C (the JVM would end): the stub catches every Throwable,
 * returns a failure status, and keeps the exception for the thread, where the failed call's
 * CTorchException carries it as its cause.
 */
final class Upcalls {
    private Upcalls() {}

    private static final Map<Long, Function<Tensor[], Tensor[]>> FORWARDS = new ConcurrentHashMap<>();
    private static final AtomicLong NEXT = new AtomicLong(1);
    static final ThreadLocal<Throwable> PENDING = new ThreadLocal<>();
    private static final int RUNTIME = 9;
    private static final MemorySegment FORWARD_STUB;
    private static final MemorySegment FREE_STUB;
    private static final MemorySegment LR_STUB;
    private static final Map<Long, Optim.LrLambda> LAMBDAS = new ConcurrentHashMap<>();

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
            PENDING.set(t);
            return RUNTIME;
        }
    }

    private static void free(MemorySegment userData) {
        FORWARDS.remove(userData.address());
    }

    private static int forward(MemorySegment userData, MemorySegment self, MemorySegment inputs, long nInputs,
                               MemorySegment kwargs, MemorySegment outputs, long maxOutputs, MemorySegment nOutputs) {
        try {
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
            PENDING.set(t);
            return RUNTIME;
        }
    }
}
