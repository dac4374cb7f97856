package org.ctorch;

import static java.lang.foreign.ValueLayout.ADDRESS;

import java.lang.foreign.MemorySegment;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
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
     * result. Grad mode is per OS thread: on a virtual thread, whose carrier may change inside
     * body, the body runs on a platform thread instead (the calling thread waits for it).
     */
    public static <T> T noGrad(Supplier<T> body) {
        return inMode(AutogradScopeKind.NO_GRAD, body);
    }

    /** noGrad for a body without a result. */
    public static void noGrad(Runnable body) {
        inMode(AutogradScopeKind.NO_GRAD, () -> {
            body.run();
            return null;
        });
    }

    /** Runs body in inference mode (torch.inference_mode()), as noGrad does. */
    public static <T> T inferenceMode(Supplier<T> body) {
        return inMode(AutogradScopeKind.INFERENCE_MODE, body);
    }

    static <T> T inMode(AutogradScopeKind kind, Supplier<T> body) {
        if (Thread.currentThread().isVirtual()) {
            return onPlatformThread(() -> inMode(kind, body));
        }
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
    }

    /** Runs body on a new platform thread and waits for it; its exception is rethrown here. */
    static <T> T onPlatformThread(Supplier<T> body) {
        java.util.concurrent.FutureTask<T> task = new java.util.concurrent.FutureTask<>((Callable<T>) body::get);
        Thread t = Thread.ofPlatform().name("ctorch-thread-state").start(task);
        try {
            return task.get();
        } catch (InterruptedException e) {
            t.interrupt();
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while the platform thread ran", e);
        } catch (ExecutionException e) {
            Throwable c = e.getCause();
            if (c instanceof RuntimeException r) {
                throw r;
            }
            if (c instanceof Error err) {
                throw err;
            }
            throw new IllegalStateException(c);
        }
    }
}
