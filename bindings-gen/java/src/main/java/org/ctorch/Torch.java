package org.ctorch;

import static java.lang.foreign.ValueLayout.ADDRESS;

import java.lang.foreign.MemorySegment;
import java.util.function.Supplier;
import org.ctorch.raw.RawApi;

/**
 * torch's functions ({@code Torch.zeros}, {@code Torch.cat}, {@code Torch.randn}, every public
 * operator with torch's defaults), and the process-wide and per-thread state: seeds, grad
 * mode, scopes.
 */
public final class Torch extends TorchFunctions {
    private Torch() {}

    static {
        Native.init();
    }

    /** Seeds every generator (torch.manual_seed). */
    public static void manualSeed(long seed) {
        Native.check(RawApi.manual_seed(seed));
    }

    /** Opens a {@link Scope}: the tensors made inside it on this thread are freed when it closes. */
    public static Scope scope() {
        return Scope.open();
    }

    /** Bytes held by live CPU tensor storages (ctorch_memory_bytes). */
    public static long memoryBytes() {
        Scratch s = Scratch.get();
        long m = s.mark();
        try {
            MemorySegment out = s.allocate(java.lang.foreign.ValueLayout.JAVA_LONG);
            Native.check(RawApi.memory_bytes(out, DeviceType.CPU.value));
            return out.get(java.lang.foreign.ValueLayout.JAVA_LONG, 0);
        } finally {
            s.reset(m);
        }
    }

    /** The library's ctorch version. */
    public static String version() {
        Scratch s = Scratch.get();
        long m = s.mark();
        try {
            MemorySegment out = s.allocate(ADDRESS);
            Native.check(RawApi.version(out));
            return Native.string(out.get(ADDRESS, 0));
        } finally {
            s.reset(m);
        }
    }

    /**
     * Runs body with gradient recording off on this thread (torch.no_grad()), and returns its
     * result. Grad mode is per OS thread: body runs on the calling thread, and a virtual thread
     * stays on its carrier until body returns (see {@link #pinned}), so a {@link Scope} open
     * around the call frees what body makes.
     *
     * @param <T> the result's type
     * @param body the code to run
     * @return what body returned
     */
    public static <T> T noGrad(Supplier<T> body) {
        return inMode(AutogradScopeKind.NO_GRAD, body);
    }

    /**
     * noGrad for a body without a result.
     *
     * @param body the code to run
     */
    public static void noGrad(Runnable body) {
        inMode(AutogradScopeKind.NO_GRAD, () -> {
            body.run();
            return null;
        });
    }

    /**
     * Runs body in inference mode (torch.inference_mode()), as noGrad does.
     *
     * @param <T> the result's type
     * @param body the code to run
     * @return what body returned
     */
    public static <T> T inferenceMode(Supplier<T> body) {
        return inMode(AutogradScopeKind.INFERENCE_MODE, body);
    }

    /**
     * Runs body on the calling thread held on one OS thread until it returns: a virtual thread
     * is pinned to its carrier (body runs as an upcall from C, and a virtual thread cannot leave
     * its carrier while a native frame is on its stack). State libtorch keeps per OS thread and
     * that a {@link CApi} call begins (an autocast or stream scope, the profiler) may then be
     * begun and ended inside body on a virtual thread. A platform thread runs body directly.
     * A blocking call inside body holds the carrier for that long, as a native call does; a body
     * should not wait for another virtual thread (a lock it holds, a queue it fills), which may
     * find every carrier pinned and never run.
     *
     * @param <T> the result's type
     * @param body the code to run
     * @return what body returned
     */
    public static <T> T pinned(Supplier<T> body) {
        return Pinned.run(body);
    }

    static <T> T inMode(AutogradScopeKind kind, Supplier<T> body) {
        return Pinned.run(() -> {
            MemorySegment scope;
            Scratch s = Scratch.get();
            long m = s.mark();
            try {
                MemorySegment out = s.allocate(ADDRESS);
                Native.check(RawApi.autograd_scope_enter(out, kind.value));
                scope = out.get(ADDRESS, 0);
            } finally {
                s.reset(m);
            }
            try {
                return body.get();
            } finally {
                Native.check(RawApi.autograd_scope_leave(scope));
            }
        });
    }
}
