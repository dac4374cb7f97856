package org.ctorch.tests;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.ctorch.Scope;
import org.ctorch.Tensor;
import org.ctorch.Torch;
import org.junit.jupiter.api.Test;

/** close(), scopes and the Cleaner. */
class LifetimeTest {
    @Test
    void closeIsIdempotentAndUseAfterCloseIsRefused() {
        Tensor x = Tensor.of(new float[] {1, 2});
        x.close();
        x.close();
        assertTrue(x.isClosed());
        IllegalStateException e = assertThrows(IllegalStateException.class, x::relu);
        assertTrue(e.getMessage().contains("after close"), e.getMessage());
        assertEquals("Tensor(closed)", x.toString());
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
