package org.ctorch.tests;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.function.Function;
import org.ctorch.CApi;
import org.ctorch.Nn;
import org.ctorch.NnModule;
import org.ctorch.Scope;
import org.ctorch.ScriptModule;
import org.ctorch.Tensor;
import org.ctorch.TensorDict;
import org.ctorch.Torch;
import org.ctorch.Tracer;
import org.junit.jupiter.api.Test;

/**
 * Serving: a TorchScript model (traced here, saved, loaded back as a service would) and a
 * module whose forward is Java, each shared by 8 platform threads and by virtual threads, every
 * output equal to the single-threaded one for the same input.
 */
class ServingTest {
    static final int REQUESTS = 48;
    static final int ROUNDS = 3;

    /** Serves every input ROUNDS times from each kind of thread; each output must equal want's. */
    static void serve(Function<Tensor, float[]> model, Tensor[] inputs, float[][] want) throws Exception {
        for (ExecutorService ex : List.of(Executors.newFixedThreadPool(8), Executors.newVirtualThreadPerTaskExecutor())) {
            List<Future<float[]>> fs = new ArrayList<>();
            try (ex) {
                for (int r = 0; r < ROUNDS; r++) {
                    for (Tensor x : inputs) {
                        fs.add(ex.submit(() -> model.apply(x)));
                    }
                }
            }
            for (int j = 0; j < fs.size(); j++) {
                assertArrayEquals(want[j % inputs.length], fs.get(j).get(), "request " + j);
            }
        }
    }

    @Test
    void aTorchScriptModelServedFromManyThreadsGivesTheSingleThreadedOutputs() throws Exception {
        Path file = Files.createTempFile("ctorch-served", ".pt");
        try (Scope s = Torch.scope()) {
            Torch.manualSeed(7);
            Tensor w1 = Torch.randn(new long[] {32, 16}), b1 = Torch.randn(new long[] {32});
            Tensor w2 = Torch.randn(new long[] {8, 32}), example = Torch.randn(new long[] {4, 16});
            try (Tracer tr = CApi.tracerNew("Mlp")) {
                tr.addParameter("fc1.weight", w1);
                tr.addParameter("fc1.bias", b1);
                tr.addParameter("fc2.weight", w2);
                tr.begin(new Tensor[] {example});
                Tensor y = example.matmul(w1.t()).add(b1).relu().matmul(w2.t()).logSoftmax(1);
                try (ScriptModule traced = tr.finish(new Tensor[] {y})) {
                    traced.save(file.toString());
                }
            }
            try (ScriptModule model = CApi.moduleLoad(file.toString(), null)) {
                model.eval();
                try (TensorDict params = model.namedParameters()) {
                    assertEquals(3, params.size());
                }
                Tensor[] inputs = new Tensor[REQUESTS];
                float[][] want = new float[REQUESTS][];
                for (int i = 0; i < REQUESTS; i++) {
                    inputs[i] = Torch.randn(new long[] {4, 16});
                    want[i] = model.forwardTensors(new Tensor[] {inputs[i]}).toFloatArray();
                }
                // The traced graph is the eager computation: same numbers.
                assertArrayEquals(inputs[0].matmul(w1.t()).add(b1).relu().matmul(w2.t()).logSoftmax(1).toFloatArray(),
                        want[0]);
                serve(x -> {
                    try (Tensor out = model.forwardTensors(new Tensor[] {x})) {
                        return out.toFloatArray();
                    }
                }, inputs, want);
            }
        } finally {
            Files.deleteIfExists(file);
        }
    }

    @Test
    void aModuleWithAJavaForwardServedFromManyThreads() throws Exception {
        try (Scope s = Torch.scope()) {
            Torch.manualSeed(3);
            Tensor w = Torch.randn(new long[] {6, 5});
            // torch.nn.Module subclassed in Java: forward(x) = tanh(x @ w.T) * 2, called from C.
            NnModule net = Nn.custom("JavaMlp", xs -> new Tensor[] {xs[0].matmul(w.t()).tanh().mul(2)});
            Tensor[] inputs = new Tensor[REQUESTS];
            float[][] want = new float[REQUESTS][];
            for (int i = 0; i < REQUESTS; i++) {
                inputs[i] = Torch.randn(new long[] {3, 5});
                want[i] = net.forward(inputs[i]).toFloatArray();
            }
            assertArrayEquals(inputs[1].matmul(w.t()).tanh().mul(2).toFloatArray(), want[1]);
            serve(x -> {
                try (Tensor out = net.forward(x)) {
                    return out.toFloatArray();
                }
            }, inputs, want);
        }
    }
}
