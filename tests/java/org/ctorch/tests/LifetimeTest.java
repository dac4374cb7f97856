package org.ctorch.tests;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.ctorch.CTorchException;
import org.ctorch.Scope;
import org.ctorch.Tensor;
import org.ctorch.Torch;
import org.ctorch.raw.RawApi;
import org.junit.jupiter.api.Test;

/** close(), scopes and the Cleaner. */
class LifetimeTest {
    @Test
    void closeIsIdempotentAndUseAfterCloseIsRefused() {
        Tensor x = Tensor.of(new float[] {1, 2});
        x.close();
        x.close();
        assertTrue(x.isClosed());
        // The message names the call: the operator and argument, or the method called.
        IllegalStateException e = assertThrows(IllegalStateException.class, x::relu);
        assertEquals("relu: argument 'self': Tensor used after close()", e.getMessage());
        e = assertThrows(IllegalStateException.class, x::numel);
        assertEquals("Tensor.numel: Tensor used after close()", e.getMessage());
        e = assertThrows(IllegalStateException.class, x::item);
        assertEquals("Tensor.item: Tensor used after close()", e.getMessage());
        assertEquals("Tensor(closed)", x.toString());
        // As an argument, the C function and the argument are named.
        try (Tensor y = Tensor.of(new float[] {1, 2})) {
            e = assertThrows(IllegalStateException.class, () -> y.add(x));
            assertTrue(e.getMessage().endsWith("argument 'other': Tensor used after close()"), e.getMessage());
            e = assertThrows(IllegalStateException.class, () -> Torch.cat(new Tensor[] {y, x}, 0));
            assertTrue(e.getMessage().contains("argument 'tensors[1]': Tensor used after close()"), e.getMessage());
        }
    }

    @Test
    void rawHandlesAreCheckedBeforeATensorHoldsThem() {
        // Values ctorch never returned (small ones among them: 0x1 and 0x9 once crashed in C)
        // are refused by C, so no Tensor holds one.
        for (long v : new long[] {0x1, 0x7, 0x9, 0x11, 0x10001, 0x20001, 0xdeadbeefL}) {
            CTorchException.InvalidArgument e = assertThrows(CTorchException.InvalidArgument.class,
                    () -> Tensor.fromRaw(MemorySegment.ofAddress(v)));
            assertTrue(e.getMessage().contains("is not a live ctorch_tensor handle"), e.getMessage());
        }
        assertThrows(CTorchException.InvalidArgument.class, () -> Tensor.fromRaw(MemorySegment.NULL));
        // One a raw call made is adopted.
        MemorySegment out = Arena.ofAuto().allocate(ValueLayout.ADDRESS);
        assertEquals(0, RawApi.tensor_clone(out, Tensor.of(new float[] {4, 5}).address()));
        try (Tensor t = Tensor.fromRaw(out.get(ValueLayout.ADDRESS, 0))) {
            assertEquals(9.0, t.sum().item());
        }
    }

    @Test
    void scopeFreesWhatWasMadeInsideButKept() {
        Tensor kept;
        Tensor inner;
        try (Scope s = Torch.scope()) {
            Tensor a = Tensor.of(new float[] {1, 2, 3});
            inner = a.mul(2);
            kept = s.keep(a.add(1));
            assertEquals(2, s.size());
        }
        assertTrue(inner.isClosed());
        assertFalse(kept.isClosed());
        assertEquals(9.0, kept.sum().item());
        kept.close();
    }

    @Test
    void nestedScopesKeepIntoTheParent() {
        Tensor k;
        try (Scope outer = Torch.scope()) {
            try (Scope inner = Torch.scope()) {
                k = inner.keep(Tensor.of(new float[] {1}));
            }
            assertFalse(k.isClosed());
            assertEquals(1, outer.size());
        }
        assertTrue(k.isClosed());
    }

    @Test
    void cleanerFreesForgottenTensors() throws Exception {
        long before = Torch.memoryBytes();
        // 200 tensors of 4 MiB each, never closed: 800 MiB unless the collector frees them.
        for (int i = 0; i < 200; i++) {
            Torch.zeros(new long[] {1024, 1024});
        }
        for (int i = 0; i < 50 && Torch.memoryBytes() - before > (64L << 20); i++) {
            System.gc();
            Thread.sleep(20);
        }
        long grown = Torch.memoryBytes() - before;
        assertTrue(grown < (300L << 20), "native memory grew by " + grown + " bytes");
    }
}
