package org.ctorch.tests;

import java.util.concurrent.TimeUnit;
import org.ctorch.Tensor;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

/**
 * Per-call cost of the Java binding (JMH; bench/bindings/run --langs java): add, mul, relu
 * and transpose of 1-element tensors through the typed API, each result closed at once, as
 * bench/bindings/bench_c.c calls the C API.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class CallCostBench {
    Tensor a;
    Tensor m;

    @Setup(Level.Trial)
    public void setup() {
        a = Tensor.of(new float[] {1});
        m = Tensor.of(new float[] {1}, 1, 1);
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        a.close();
        m.close();
    }

    @Benchmark
    public void add() {
        a.add(a).close();
    }

    @Benchmark
    public void mul() {
        a.mul(a).close();
    }

    @Benchmark
    public void relu() {
        a.relu().close();
    }

    @Benchmark
    public void transpose() {
        m.transpose(0, 1).close();
    }
}
