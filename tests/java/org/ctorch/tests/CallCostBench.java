package org.ctorch.tests;

import static java.lang.foreign.ValueLayout.ADDRESS;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.TimeUnit;
import org.ctorch.Tensor;
import org.ctorch.raw.RawApi;
import org.ctorch.raw.RawOpsMR;
import org.ctorch.raw.RawOpsSZ;
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
 * bench/bindings/bench_c.c calls the C API. The *Raw forms make the same C calls through the
 * raw layer (one downcall and tensor_free, no Handle, Cleaner or Scope): the FFM floor, so a
 * gap between a typed call and its raw form is the binding's own work.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class CallCostBench {
    Tensor a;
    Tensor m;
    Arena arena;
    MemorySegment out;

    @Setup(Level.Trial)
    public void setup() {
        a = Tensor.of(new float[] {1});
        m = Tensor.of(new float[] {1}, 1, 1);
        arena = Arena.ofConfined();
        out = arena.allocate(ADDRESS);
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        a.close();
        m.close();
        arena.close();
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

    @Benchmark
    public void reluRaw() {
        if (RawOpsMR.relu(out, a.address()) != 0) {
            throw new IllegalStateException("ctorch_relu failed");
        }
        RawApi.tensor_free(out.get(ADDRESS, 0));
    }

    @Benchmark
    public void transposeRaw() {
        if (RawOpsSZ.transpose_int(out, m.address(), 0, 1) != 0) {
            throw new IllegalStateException("ctorch_transpose_int failed");
        }
        RawApi.tensor_free(out.get(ADDRESS, 0));
    }
}
