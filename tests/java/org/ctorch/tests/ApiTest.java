package org.ctorch.tests;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.ctorch.CApi;
import org.ctorch.CTorchException;
import org.ctorch.DType;
import org.ctorch.Ops;
import org.ctorch.Opts;
import org.ctorch.Reduction;
import org.ctorch.Scalar;
import org.ctorch.Status;
import org.ctorch.Tensor;
import org.ctorch.Torch;
import org.junit.jupiter.api.Test;

/** The typed API: tensors, operators with torch's defaults, errors, enums. */
class ApiTest {
    @Test
    void tensorsRoundTrip() {
        try (Tensor x = Tensor.of(new float[] {1, 2, 3, 4, 5, 6}, 2, 3)) {
            assertArrayEquals(new long[] {2, 3}, x.shape());
            assertEquals(DType.FLOAT32, x.dtype());
            assertEquals(6, x.numel());
            assertArrayEquals(new float[] {1, 2, 3, 4, 5, 6}, x.toFloatArray());
            assertEquals(3, x.size(-1));
        }
        try (Tensor l = Tensor.of(new long[] {7, -8})) {
            assertArrayEquals(new long[] {7, -8}, l.toLongArray());
            assertEquals(DType.INT64, l.dtype());
        }
    }

    @Test
    void operatorsWithDefaults() {
        try (var s = Torch.scope()) {
            Tensor a = Tensor.of(new float[] {1, 2, 3});
            Tensor b = Tensor.of(new float[] {10, 20, 30});
            // add.Tensor's alpha defaults to 1; every argument explicit through Ops.
            assertArrayEquals(new float[] {11, 22, 33}, a.add(b).toFloatArray());
            assertArrayEquals(new float[] {21, 42, 63}, Ops.add_Tensor(a, b, 2).toFloatArray());
            // A Scalar argument: an Integer stays integral, a Double is a float.
            assertArrayEquals(new float[] {3, 4, 5}, a.add(2).toFloatArray());
            try (Tensor i = Tensor.of(new long[] {1, 2})) {
                assertEquals(DType.INT64, i.add(2).dtype());
                assertEquals(DType.FLOAT32, i.add(2.5).dtype());
            }
            assertEquals(6.0, a.sum().item());
            assertArrayEquals(new float[] {0, 0, 0}, Tensor.of(new float[] {-1, 0, -3}).relu().toFloatArray());
            Tensor m = Tensor.of(new float[] {1, 2, 3, 4, 5, 6}, 2, 3);
            assertArrayEquals(new long[] {3, 2}, m.transpose(0, 1).shape());
            assertArrayEquals(new float[] {14, 32}, m.matmul(a).toFloatArray());
            // In place: returns the tensor written.
            Tensor c = Tensor.of(new float[] {1, 1, 1});
            assertSame(c, c.mul_(3));
            assertArrayEquals(new float[] {3, 3, 3}, c.toFloatArray());
            // torch's functions with defaults: Torch.zeros(size) (dtype etc. None).
            Tensor z = Torch.zeros(new long[] {2, 2});
            assertArrayEquals(new float[] {0, 0, 0, 0}, z.toFloatArray());
            assertEquals(6.0, Torch.cat(new Tensor[] {a, a}).sum().item() / 2);
        }
    }

    @Test
    void optionBuildersChangeOnlyWhatTheySet() {
        try (var s = Torch.scope()) {
            Tensor x = Tensor.of(new float[] {1, 2, 3, 1, 0, -1}, 2, 3);
            Tensor y = Tensor.of(new long[] {2, 0});
            // torch.nn.functional.cross_entropy(x, y, label_smoothing=0.1) and with reduction='sum' (PyTorch 1.13).
            assertEquals(0.5076059103012085, x.crossEntropyLoss(y, new Opts.CrossEntropyLoss().labelSmoothing(0.1))
                    .item(), 1e-6);
            assertEquals(1.015211820602417, x.crossEntropyLoss(y, new Opts.CrossEntropyLoss().labelSmoothing(0.1)
                    .reduction(Reduction.SUM)).item(), 1e-6);
            // Options as made: every default, as the short form.
            assertEquals(x.crossEntropyLoss(y).item(), x.crossEntropyLoss(y, new Opts.CrossEntropyLoss()).item());
            // x.sum(dtype=torch.float64); torch.cumsum(t, 1, dtype=torch.float32) as a function.
            assertEquals(DType.FLOAT64, x.sum(new Opts.Sum().dtype(DType.FLOAT64)).dtype());
            Tensor t = Tensor.of(new long[] {1, 2, 3, 4}, 2, 2);
            Tensor cs = Torch.cumsum(t, 1, new Opts.Cumsum().dtype(DType.FLOAT32));
            assertEquals(DType.FLOAT32, cs.dtype());
            assertArrayEquals(new float[] {1, 3, 3, 7}, cs.toFloatArray());
        }
    }

    @Test
    void enumArgumentsAndDefaults() {
        try (var s = Torch.scope()) {
            Tensor logits = Tensor.of(new float[] {2, 1, 0, 0, 1, 2}, 2, 3);
            Tensor target = Tensor.of(new long[] {0, 2});
            double mean = logits.crossEntropyLoss(target).item();
            double sum = Ops.cross_entropy_loss(logits, target, null, Reduction.SUM, -100, 0.0).item();
            assertEquals(2 * mean, sum, 1e-6);
            assertEquals(Reduction.SUM, Reduction.of(Reduction.SUM.value));
            assertEquals(DType.FLOAT64, DType.of(DType.FLOAT64.value));
            assertThrows(IllegalArgumentException.class, () -> DType.of(12345));
        }
    }

    @Test
    void errorsHaveTheirStatusAndMessage() {
        try (var s = Torch.scope()) {
            Tensor a = Tensor.of(new float[] {1, 2, 3, 4, 5, 6}, 2, 3);
            CTorchException e = assertThrows(CTorchException.class, () -> a.matmul(a));
            assertTrue(e.getMessage().contains("mat1 and mat2 shapes cannot be multiplied")
                    || e.getMessage().contains("size mismatch"), e.getMessage());
            assertNotNull(e.status());
            CTorchException.Index ix = assertThrows(CTorchException.Index.class, () -> a.select(0, 7));
            assertEquals(Status.INDEX, ix.status());
            assertTrue(ix.getMessage().contains("out of range"), ix.getMessage());
            // null where the schema does not allow None: refused before C, naming the argument.
            NullPointerException npe = assertThrows(NullPointerException.class, () -> a.add((Tensor) null));
            assertTrue(npe.getMessage().contains("'other'"), npe.getMessage());
            // A long that does not fit a C int, and a negative size.
            assertThrows(CTorchException.class, () -> Torch.zeros(new long[] {-1}));
        }
    }

    @Test
    void papercutsNameTheCall() {
        try (var s = Torch.scope()) {
            Tensor a = Tensor.of(new float[] {1, 2, 3, 4, 5, 6}, 2, 3);
            // a long dimension is checked as a long ((int) (1L << 32) would be dimension 0)
            assertThrows(CTorchException.Index.class, () -> a.size(1L << 32));
            assertThrows(CTorchException.Index.class, () -> a.size(-3));
            assertEquals(3, a.size(-1));
            // more elements than a Java array holds: named, not an ArithmeticException
            IllegalStateException big = assertThrows(IllegalStateException.class,
                    () -> Tensor.of(new float[] {1}).expand(new long[] {1L << 40}).toFloatArray());
            assertTrue(big.getMessage().startsWith("toFloatArray: the tensor has 1099511627776 elements"),
                    big.getMessage());
            // null arguments of the hand-written methods name the method and argument
            NullPointerException npe = assertThrows(NullPointerException.class, () -> Tensor.of((float[]) null));
            assertEquals("Tensor.of: argument 'data' is null (it is not optional)", npe.getMessage());
            npe = assertThrows(NullPointerException.class, () -> a.save(null));
            assertEquals("Tensor.save: argument 'path' is null (it is not optional)", npe.getMessage());
            npe = assertThrows(NullPointerException.class, () -> Tensor.load(null));
            assertTrue(npe.getMessage().startsWith("Tensor.load: argument 'path'"), npe.getMessage());
            // top-0 accuracy is refused, as the C metrics refuse k = 0 (not reported as 0.0)
            Tensor scores = Tensor.of(new float[] {0.1f, 0.9f, 0.8f, 0.2f}, 2, 2);
            Tensor target = Tensor.of(new long[] {1, 0});
            assertEquals(2, org.ctorch.Data.topKHits(scores, target, 1));
            IllegalArgumentException k0 = assertThrows(IllegalArgumentException.class,
                    () -> org.ctorch.Data.topKHits(scores, target, 0));
            assertTrue(k0.getMessage().contains("'k' must be >= 1, got 0"), k0.getMessage());
            assertThrows(IllegalArgumentException.class, () -> org.ctorch.Data.topKAccuracy(null, null, 1, 0));
            npe = assertThrows(NullPointerException.class, () -> org.ctorch.Data.topKAccuracy(null, null, 1));
            assertEquals("topKAccuracy: argument 'net' is null (it is not optional)", npe.getMessage());
        }
    }

    @Test
    void nullIsNone() {
        try (var s = Torch.scope()) {
            Tensor x = Tensor.of(new float[] {1, 2, 3, 4}, 2, 2);
            // sum.dim_IntList(self, dim, keepdim=False, dtype=None): dtype null is None.
            Tensor r = Ops.sum_dim_IntList(x, new long[] {1}, false, null);
            assertArrayEquals(new float[] {3, 7}, r.toFloatArray());
            Tensor d = Ops.sum_dim_IntList(x, new long[] {1}, false, DType.FLOAT64);
            assertEquals(DType.FLOAT64, d.dtype());
            assertNull(x.grad());
        }
    }

    @Test
    void scalarKinds() {
        assertEquals("true", Scalar.of(true).toString());
        assertEquals(2.5, Scalar.of(2.5).doubleValue());
        assertEquals(7L, Scalar.of(7).longValue());
    }

    @Test
    void autogradAndNoGrad() {
        try (var s = Torch.scope()) {
            Tensor w = Tensor.of(new float[] {1, 2, 3}).requiresGrad(true);
            Tensor loss = w.mul(w).sum();
            loss.backward();
            assertArrayEquals(new float[] {2, 4, 6}, w.grad().toFloatArray());
            boolean rg = Torch.noGrad(() -> w.mul(2).requiresGrad());
            assertFalse(rg);
            assertTrue(w.mul(2).requiresGrad());
        }
    }

    @Test
    void arraysSharingOneLengthMustAgree() throws Exception {
        // api.json length_of: names and tensors (metadata keys and values) share one C length;
        // arrays of other lengths are refused before C reads past the shorter one.
        java.nio.file.Path dir = java.nio.file.Files.createTempDirectory("ctorch-java-len");
        try (var s = Torch.scope()) {
            Tensor x = Tensor.of(new float[] {1, 2});
            Tensor y = Tensor.of(new float[] {3, 4, 5});
            String p = dir.resolve("t.safetensors").toString();
            String pt = dir.resolve("t.pt").toString();
            String[] none = {};
            java.util.List<org.junit.jupiter.api.function.Executable> calls = java.util.List.of(
                    () -> CApi.safetensorsSave(p, new String[] {"t"}, new Tensor[] {x}, new String[] {"k1", "k2"},
                            new String[] {"v1"}),
                    () -> CApi.safetensorsSave(p, new String[] {"a"}, new Tensor[] {x, y}, none, none),
                    () -> CApi.safetensorsSave(p, new String[] {"a", "b"}, new Tensor[] {x}, none, none),
                    () -> CApi.saveDict(pt, new String[] {"a"}, new Tensor[] {x, y}));
            for (var call : calls) {
                IllegalArgumentException e = assertThrows(IllegalArgumentException.class, call);
                assertTrue(e.getMessage().matches("ctorch_\\w+: \\w+ has \\d, \\w+ has \\d entries; they share one length"),
                        e.getMessage());
            }
            try (var files = java.nio.file.Files.list(dir)) {
                assertEquals(0, files.count(), "nothing written");
            }
            CApi.safetensorsSave(p, new String[] {"a", "b"}, new Tensor[] {x, y}, new String[] {"k"},
                    new String[] {"v"});
            assertTrue(java.nio.file.Files.exists(dir.resolve("t.safetensors")));
        } finally {
            try (var files = java.nio.file.Files.list(dir)) {
                for (var f : (Iterable<java.nio.file.Path>) files::iterator) {
                    java.nio.file.Files.delete(f);
                }
            }
            java.nio.file.Files.delete(dir);
        }
    }

    @Test
    void saveAndLoad() throws Exception {
        java.nio.file.Path dir = java.nio.file.Files.createTempDirectory("ctorch-java");
        try (var s = Torch.scope()) {
            String p = dir.resolve("t.pt").toString();
            Tensor.of(new float[] {1, 2, 3}).save(p);
            assertArrayEquals(new float[] {1, 2, 3}, Tensor.load(p).toFloatArray());
        } finally {
            try (var files = java.nio.file.Files.list(dir)) {
                for (var f : (Iterable<java.nio.file.Path>) files::iterator) {
                    java.nio.file.Files.delete(f);
                }
            }
            java.nio.file.Files.delete(dir);
        }
    }
}
