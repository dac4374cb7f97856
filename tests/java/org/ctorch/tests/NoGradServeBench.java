package org.ctorch.tests;

import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicLong;
import org.ctorch.Scope;
import org.ctorch.Tensor;
import org.ctorch.Torch;

/**
 * Requests per second of a small MLP served from 64 virtual threads, each request in its own
 * Scope, with the forward under Torch.noGrad and without it, two rounds of SECONDS each; prints
 * the rates and the native memory left after each round (a Scope that freed every request's
 * tensors leaves it flat). Not a JUnit test: run it with
 * {@code tests/bindings/run_java.sh example build/bindings/java build/libctorch.so
 * tests/java/org/ctorch/tests/NoGradServeBench.java [SECONDS]}.
 */
public final class NoGradServeBench {
    private NoGradServeBench() {}

    public static void main(String[] args) throws Exception {
        long seconds = args.length > 0 ? Long.parseLong(args[0]) : 3;
        Torch.manualSeed(1);
        Tensor w1 = Torch.randn(new long[] {32, 16}), w2 = Torch.randn(new long[] {8, 32});
        Tensor x = Torch.randn(new long[] {4, 16});
        for (boolean noGrad : new boolean[] {true, false}) {
            for (int round = 0; round < 2; round++) {
                AtomicLong done = new AtomicLong();
                long t0 = System.nanoTime(), end = t0 + seconds * 1_000_000_000L;
                try (var ex = Executors.newVirtualThreadPerTaskExecutor()) {
                    for (int i = 0; i < 64; i++) {
                        ex.submit(() -> {
                            while (System.nanoTime() < end) {
                                try (Scope s = Torch.scope()) {
                                    float[] y = noGrad
                                            ? Torch.noGrad(() -> x.matmul(w1.t()).relu().matmul(w2.t()).toFloatArray())
                                            : x.matmul(w1.t()).relu().matmul(w2.t()).toFloatArray();
                                    if (y.length != 32) {
                                        throw new IllegalStateException("a request gave " + y.length + " numbers");
                                    }
                                }
                                done.incrementAndGet();
                            }
                            return null;
                        });
                    }
                }
                double dt = (System.nanoTime() - t0) / 1e9;
                System.out.printf("%s, round %d: %.0f requests/s (%d in %.2f s), native memory after: %d bytes%n",
                        noGrad ? "noGrad" : "plain", round, done.get() / dt, done.get(), dt, Torch.memoryBytes());
            }
        }
    }
}
