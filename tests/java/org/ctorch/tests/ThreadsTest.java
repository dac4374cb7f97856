package org.ctorch.tests;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import org.ctorch.AutogradScopeKind;
import org.ctorch.CApi;
import org.ctorch.CTorchException;
import org.ctorch.DType;
import org.ctorch.Data;
import org.ctorch.DataLoader;
import org.ctorch.LrScheduler;
import org.ctorch.Nn;
import org.ctorch.NnModule;
import org.ctorch.Ops;
import org.ctorch.Optim;
import org.ctorch.Optimizer;
import org.ctorch.OptimizerKind;
import org.ctorch.Scope;
import org.ctorch.Status;
import org.ctorch.Tensor;
import org.ctorch.Torch;
import org.junit.jupiter.api.Test;

/** Threads (platform and virtual), exclusive handles, close races, and Java callbacks that throw. */
class ThreadsTest {
    @Test
    void anExclusiveHandleFromTwoThreadsIsBusy() throws Exception {
        // An optimizer is exclusive: a call while another thread's call on it runs is refused
        // with BUSY (nothing done), never run concurrently.
        try (Scope s = Torch.scope(); Tensor w = Torch.ones(new long[] {4 << 20}).requiresGrad(true)) {
            w.mul(w).sum().backward();
            Optimizer opt = Optim.of(OptimizerKind.ADAMW, new Tensor[] {w}, 1e-3);
            AtomicInteger busy = new AtomicInteger();
            ConcurrentLinkedQueue<Throwable> other = new ConcurrentLinkedQueue<>();
            CountDownLatch go = new CountDownLatch(1);
            Thread stepper = Thread.ofPlatform().start(() -> {
                try {
                    go.await();
                    for (int i = 0; i < 30 && busy.get() == 0; i++) {
                        try {
                            opt.step();
                        } catch (CTorchException.Busy e) {
                            busy.incrementAndGet();
                        }
                    }
                } catch (Throwable t) {
                    other.add(t);
                }
            });
            go.countDown();
            while (busy.get() == 0 && stepper.isAlive()) {
                try {
                    opt.getLr(0);
                } catch (CTorchException.Busy e) {
                    assertEquals(Status.BUSY, e.status());
                    assertTrue(e.getMessage().contains("optimizer"), e.getMessage());
                    busy.incrementAndGet();
                }
            }
            stepper.join();
            assertTrue(other.isEmpty(), () -> "unexpected: " + other);
            assertTrue(busy.get() > 0, "no call was refused with BUSY");
            opt.close();
        }
    }

    @Test
    void noGradOnAVirtualThreadRunsThereAndItsScopeFreesWhatTheBodyMade() throws Exception {
        try (var ex = Executors.newVirtualThreadPerTaskExecutor()) {
            ex.submit(() -> {
                Thread me = Thread.currentThread();
                assertTrue(me.isVirtual());
                Tensor w = Tensor.of(new float[] {1, 2}).requiresGrad(true);
                Tensor made;
                try (Scope s = Scope.open()) {
                    made = Torch.noGrad(() -> {
                        assertEquals(me, Thread.currentThread(), "the body ran on another thread");
                        assertFalse(CApi.autogradIsGradEnabled(), "grad mode on inside noGrad");
                        return w.mul(2);
                    });
                    assertFalse(made.requiresGrad(), "noGrad on a virtual thread recorded a graph");
                    assertTrue(CApi.autogradIsGradEnabled(), "grad mode stayed off after noGrad");
                    assertEquals(1, s.size(), "the caller's Scope did not get the body's tensor");
                    assertTrue(Torch.inferenceMode(() -> CApi.autogradIsInferenceMode()));
                    assertFalse(CApi.autogradIsInferenceMode());
                    // A body that throws: its exception here, the mode restored.
                    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                            () -> Torch.noGrad(() -> { throw new IllegalArgumentException("from the body"); }));
                    assertEquals("from the body", e.getMessage());
                    assertTrue(CApi.autogradIsGradEnabled());
                }
                assertTrue(made.isClosed(), "the Scope around noGrad did not free the body's tensor");
                w.close();
                return null;
            }).get();
        }
    }

    @Test
    void aBlockingNoGradBodyKeepsItsModeAndLendsItToNoOtherVirtualThread() throws Exception {
        // A body that blocks keeps its carrier (pinned), so it resumes where grad mode is off,
        // and no other virtual thread runs meanwhile on that carrier with the mode off.
        try (Scope s = Torch.scope()) {
            Tensor w = Tensor.of(new float[] {1, 2}).requiresGrad(true);
            ConcurrentLinkedQueue<String> bad = new ConcurrentLinkedQueue<>();
            List<Future<?>> fs = new ArrayList<>();
            try (var ex = Executors.newVirtualThreadPerTaskExecutor()) {
                for (int i = 0; i < 16; i++) {
                    boolean off = i % 2 == 0;
                    fs.add(ex.submit(() -> {
                        Runnable steps = () -> {
                            for (int k = 0; k < 5; k++) {
                                try (Tensor y = w.mul(2)) {
                                    if (CApi.autogradIsGradEnabled() == off || y.requiresGrad() == off) {
                                        bad.add((off ? "inside" : "outside") + " noGrad, step " + k + ": grad mode "
                                                + CApi.autogradIsGradEnabled());
                                    }
                                }
                                try {
                                    Thread.sleep(1);
                                } catch (InterruptedException e) {
                                    throw new IllegalStateException(e);
                                }
                            }
                        };
                        if (off) {
                            Torch.noGrad(steps);
                        } else {
                            steps.run();
                        }
                        return null;
                    }));
                }
            }
            for (Future<?> f : fs) {
                f.get();
            }
            assertTrue(bad.isEmpty(), () -> "grad mode crossed threads: " + bad);
        }
    }

    @Test
    void manyVirtualThreadsServeUnderNoGradWithScopes() throws Exception {
        try (Scope s = Torch.scope()) {
            Torch.manualSeed(5);
            Tensor w = Torch.randn(new long[] {8, 4}).requiresGrad(true), x = Torch.randn(new long[] {3, 4});
            float[] want = x.matmul(w.t()).relu().toFloatArray();
            int perRequest;
            try (Scope r = Torch.scope()) {
                x.matmul(w.t()).relu().toFloatArray();
                perRequest = r.size();
            }
            assertTrue(perRequest >= 3, "a request makes w.t(), the product and relu: " + perRequest);
            long before = Torch.memoryBytes();
            List<Future<Integer>> fs = new ArrayList<>();
            try (var ex = Executors.newVirtualThreadPerTaskExecutor()) {
                for (int i = 0; i < 64; i++) {
                    fs.add(ex.submit(() -> {
                        int left = 0;
                        for (int k = 0; k < 20; k++) {
                            try (Scope r = Torch.scope()) {
                                float[] got = Torch.noGrad(() -> x.matmul(w.t()).relu().toFloatArray());
                                assertArrayEquals(want, got);
                                left += r.size();
                            }
                        }
                        return left;
                    }));
                }
            }
            for (Future<Integer> f : fs) {
                assertEquals(20 * perRequest, f.get(), "the requests' Scopes did not hold what noGrad made");
            }
            // Every request's tensors were freed by its Scope, not left to the collector.
            assertTrue(Torch.memoryBytes() <= before, "native memory grew: " + before + " -> " + Torch.memoryBytes());
        }
    }

    @Test
    void perThreadStateIsRefusedOnAVirtualThreadButInsidePinned() throws Exception {
        try (var ex = Executors.newVirtualThreadPerTaskExecutor()) {
            Future<Throwable> f = ex.submit(() -> {
                try {
                    CApi.autogradScopeEnter(AutogradScopeKind.NO_GRAD).close();
                    return null;
                } catch (IllegalStateException e) {
                    return e;
                }
            });
            Throwable e = f.get();
            assertNotNull(e, "a grad-mode scope was opened on a virtual thread");
            assertTrue(e.getMessage().contains("Torch.pinned"), e.getMessage());
            // Inside Torch.pinned the thread keeps its carrier: the scope opens, holds, closes.
            boolean[] modes = ex.submit(() -> Torch.pinned(() -> {
                boolean inside;
                try (var g = CApi.autogradScopeEnter(AutogradScopeKind.NO_GRAD)) {
                    inside = CApi.autogradIsGradEnabled();
                }
                return new boolean[] {inside, CApi.autogradIsGradEnabled()};
            })).get();
            assertFalse(modes[0]);
            assertTrue(modes[1]);
        }
        // On a platform thread it opens and closes.
        CApi.autogradScopeEnter(AutogradScopeKind.NO_GRAD).close();
    }

    @Test
    void manyThreadsGetTheSingleThreadedResults() throws Exception {
        try (Scope s = Torch.scope()) {
            Tensor a = Torch.arange(64).to(org.ctorch.DType.FLOAT32).reshape(new long[] {8, 8});
            float[] want = a.matmul(a).relu().sum(new long[] {1}).toFloatArray();
            List<Future<float[]>> fs = new ArrayList<>();
            try (var ex = Executors.newVirtualThreadPerTaskExecutor()) {
                for (int i = 0; i < 32; i++) {
                    fs.add(ex.submit(() -> {
                        try (Scope t = Scope.open()) {
                            float[] got = null;
                            for (int k = 0; k < 20; k++) {
                                got = a.matmul(a).relu().sum(new long[] {1}).toFloatArray();
                            }
                            return got;
                        }
                    }));
                }
            }
            for (Future<float[]> f : fs) {
                assertArrayEquals(want, f.get());
            }
        }
    }

    @Test
    void closingATensorOtherThreadsUseNeverCrashes() throws Exception {
        for (int round = 0; round < 20; round++) {
            Tensor shared = Torch.ones(new long[] {256, 256});
            CountDownLatch go = new CountDownLatch(1);
            ConcurrentLinkedQueue<Throwable> bad = new ConcurrentLinkedQueue<>();
            List<Thread> ts = new ArrayList<>();
            for (int i = 0; i < 4; i++) {
                ts.add(Thread.ofPlatform().start(() -> {
                    try {
                        go.await();
                        for (int k = 0; k < 50; k++) {
                            try (Tensor r = shared.mul(2)) {
                                assertEquals(2.0 * 256 * 256, r.sum().item());
                            } catch (IllegalStateException closed) {
                                return; // used after close(): refused, not a crash
                            }
                        }
                    } catch (Throwable t) {
                        bad.add(t);
                    }
                }));
            }
            go.countDown();
            shared.close();
            for (Thread t : ts) {
                t.join();
            }
            assertTrue(bad.isEmpty(), () -> "unexpected: " + bad);
        }
    }

    @Test
    void everyFailureKeepsItsMessageUnderThreads() throws Exception {
        // 8 platform threads x 3000 failing mm: each exception's message (fetched through its
        // error ticket after the call) is the thread's own, none "(no message)".
        int threads = 8, fails = 3000;
        AtomicInteger lost = new AtomicInteger();
        ConcurrentLinkedQueue<String> wrong = new ConcurrentLinkedQueue<>();
        List<Thread> ts = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            int rows = t + 2;
            ts.add(Thread.ofPlatform().start(() -> {
                // ctorch's prefix, then libtorch's text naming this thread's shapes (2.x puts "mm: " before it).
                String shapes = "mat1 and mat2 shapes cannot be multiplied (" + rows + "x3 and 4x5)";
                try (Scope s = Torch.scope()) {
                    Tensor a = Torch.zeros(new long[] {rows, 3});
                    Tensor b = Torch.zeros(new long[] {4, 5});
                    for (int i = 0; i < fails; i++) {
                        try {
                            Ops.mm(a, b).close();
                            wrong.add("mm succeeded");
                        } catch (CTorchException.Runtime e) {
                            if (e.getMessage().equals("(no message)")) {
                                lost.incrementAndGet();
                            } else if (!e.getMessage().startsWith("ctorch_mm: ") || !e.getMessage().contains(shapes)) {
                                wrong.add(e.getMessage());
                            }
                        }
                    }
                }
            }));
        }
        for (Thread t : ts) {
            t.join();
        }
        assertEquals(0, lost.get(), "messages lost");
        assertTrue(wrong.isEmpty(), () -> "not the thread's own: " + wrong.peek());
    }

    @Test
    void aJavaForwardReenteringItselfDeeplyIsAnException() {
        // A forward that calls its own module again, through C each time: past the nesting
        // limit the next level is refused, and the outermost call throws (the JVM lives on).
        try (Scope s = Torch.scope()) {
            NnModule[] self = new NnModule[1];
            AtomicInteger levels = new AtomicInteger();
            AtomicInteger stopAt = new AtomicInteger(Integer.MAX_VALUE);
            self[0] = Nn.custom("Recursive", xs -> {
                if (levels.incrementAndGet() >= stopAt.get()) {
                    return new Tensor[] {xs[0].add(1)};
                }
                return new Tensor[] {self[0].forward(xs[0])};
            });
            CTorchException e = assertThrows(CTorchException.class, () -> self[0].forward(Tensor.of(new float[] {1})));
            Throwable root = e;
            int chain = 0;
            while (root.getCause() != null) {
                root = root.getCause();
                chain++;
            }
            assertInstanceOf(IllegalStateException.class, root);
            assertTrue(root.getMessage().contains("64 Java callbacks are already nested"), root.getMessage());
            assertEquals(64, levels.get());
            assertTrue(chain >= 64, "the chain of causes has " + chain + " links");
            // Within the limit the recursion runs to its end, and the count went back down.
            levels.set(0);
            stopAt.set(60);
            assertArrayEquals(new float[] {2}, self[0].forward(Tensor.of(new float[] {1})).toFloatArray());
            assertEquals(60, levels.get());
            self[0].close();
        }
    }

    @Test
    void aJavaForwardThatThrowsIsReportedNotFatal() {
        try (Scope s = Torch.scope()) {
            NnModule ok = Nn.custom("Double", xs -> new Tensor[] {xs[0].mul(2)});
            assertArrayEquals(new float[] {2, 4}, ok.forward(Tensor.of(new float[] {1, 2})).toFloatArray());
            NnModule bad = Nn.custom("Broken", xs -> {
                throw new UnsupportedOperationException("forward not written yet");
            });
            CTorchException e = assertThrows(CTorchException.class, () -> bad.forward(Tensor.of(new float[] {1})));
            assertNotNull(e.getCause(), "the Java exception is the cause");
            assertInstanceOf(UnsupportedOperationException.class, e.getCause());
            assertEquals("forward not written yet", e.getCause().getMessage());
            // The module and the thread still work.
            assertArrayEquals(new float[] {6}, ok.forward(Tensor.of(new float[] {3})).toFloatArray());
            ok.close();
            bad.close();
        }
    }

    /** PyTorch 1.13's lrs (SGD, lr 0.1) after LambdaLR(1 / (e + 1)) / MultiplicativeLR(0.5 every third epoch, else 0.95) and each of 10 steps. */
    static final double[] TORCH_LAMBDA_LRS = {0.1, 0.05, 0.03333333333333333, 0.025, 0.020000000000000004,
        0.016666666666666666, 0.014285714285714285, 0.0125, 0.011111111111111112, 0.010000000000000002,
        0.009090909090909092};
    static final double[] TORCH_MULTIPLICATIVE_LRS = {0.1, 0.095, 0.09025, 0.045125, 0.04286875, 0.04072531249999999,
        0.020362656249999996, 0.019344523437499997, 0.018377297265624995, 0.009188648632812497, 0.008729216201171872};

    static double[] lrs(java.util.function.Function<Optimizer, LrScheduler> make) {
        try (Tensor p = Tensor.of(new float[] {1}); Optimizer opt = Optim.of(OptimizerKind.SGD, new Tensor[] {p}, 0.1);
             LrScheduler sched = make.apply(opt)) {
            double[] out = new double[11];
            out[0] = sched.getLastLr(0);
            for (int i = 1; i <= 10; i++) {
                opt.step();
                sched.step();
                out[i] = sched.getLastLr(0);
            }
            return out;
        }
    }

    @Test
    void javaLrLambdasGiveTorchsLrsAndAThrowingOneIsReported() {
        assertArrayEquals(TORCH_LAMBDA_LRS, lrs(opt -> Optim.lambdaLr(opt, (e, g) -> 1.0 / (e + 1))));
        assertArrayEquals(TORCH_MULTIPLICATIVE_LRS, lrs(opt -> Optim.multiplicativeLr(opt, (e, g) -> e % 3 == 0 ? 0.5 : 0.95)));
        try (Tensor p = Tensor.of(new float[] {1}); Optimizer opt = Optim.of(OptimizerKind.SGD, new Tensor[] {p}, 0.1);
             LrScheduler sched = Optim.lambdaLr(opt, (e, g) -> {
                 if (e == 2) {
                     throw new ArithmeticException("no factor for epoch 2");
                 }
                 return 0.5;
             })) {
            sched.step();
            CTorchException e = assertThrows(CTorchException.class, sched::step);
            assertInstanceOf(ArithmeticException.class, e.getCause());
            assertEquals(0.05, sched.getLastLr(0)); // unchanged by the failed step
        }
    }

    @Test
    void aJavaLoaderTransformRunsPerItemAndAThrowingOneIsReported() {
        try (Scope s = Torch.scope()) {
            Tensor x = Torch.arange(8).to(DType.FLOAT32).reshape(new long[] {8, 1});
            try (DataLoader loader = Data.loader(x, Torch.arange(8), 4, false, 0, false)) {
                Data.transform(loader, (i, d, t) -> new Tensor[] {d.mul(10).add(i), null});
                List<float[]> got = new ArrayList<>();
                for (Tensor[] b : Data.epoch(loader, 0)) {
                    got.add(b[0].toFloatArray());
                    assertArrayEquals(new long[] {4}, b[1].shape()); // the target unchanged
                }
                assertArrayEquals(new float[] {0, 11, 22, 33}, got.get(0));
                assertArrayEquals(new float[] {44, 55, 66, 77}, got.get(1));
                Data.transform(loader, (i, d, t) -> {
                    if (i == 5) {
                        throw new IllegalStateException("no item 5");
                    }
                    return new Tensor[] {null, null};
                });
                Iterator<Tensor[]> it = Data.epoch(loader, 1).iterator();
                assertArrayEquals(new float[] {0, 1, 2, 3}, it.next()[0].toFloatArray());
                CTorchException e = assertThrows(CTorchException.class, it::hasNext);
                assertInstanceOf(IllegalStateException.class, e.getCause(), e.getMessage());
                Data.transform(loader, null);
                assertEquals(2, java.util.stream.StreamSupport.stream(Data.epoch(loader, 2).spliterator(), false).count());
            }
        }
    }
}
