package org.ctorch;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.util.function.Supplier;

/**
 * Runs Java code with the calling thread held on one OS thread throughout. libtorch keeps grad
 * mode, autocast and the current stream per OS thread; a virtual thread that blocks inside a
 * body may resume on another carrier (where that state is not set), and another virtual thread
 * may meanwhile run on the first carrier (where it is). A virtual thread cannot leave its
 * carrier while a native frame is on its stack, so the body runs as an upcall from C: the C
 * library's bsearch over one element, which calls its comparison function exactly once. The
 * body stays on the caller's thread (its ThreadLocals, its {@link Scope}), and the cost is one
 * downcall and one upcall, not a thread. A blocking call inside the body blocks the carrier
 * for that long, as a native call does.
 */
final class Pinned {
    private Pinned() {}

    /** void *bsearch(const void *key, const void *base, size_t nmemb, size_t size, int (*compar)(...)). */
    private static final MethodHandle BSEARCH;
    private static final MemorySegment STUB;
    /** The one element searched (key and base): its content is never read. */
    private static final MemorySegment ONE = Arena.global().allocate(8);

    /** The body the next upcall on this thread runs, its result or exception, and the nesting. */
    private static final class Frame {
        Supplier<?> body;
        Object result;
        Throwable thrown;
        int depth;
    }

    private static final ThreadLocal<Frame> FRAME = ThreadLocal.withInitial(Frame::new);

    static {
        try {
            Linker linker = Linker.nativeLinker();
            MemorySegment fn = linker.defaultLookup().find("bsearch")
                    .orElseThrow(() -> new UnsatisfiedLinkError("ctorch: the C library has no bsearch"));
            BSEARCH = linker.downcallHandle(fn,
                    FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS, JAVA_LONG, JAVA_LONG, ADDRESS));
            STUB = linker.upcallStub(MethodHandles.lookup().findStatic(Pinned.class, "compare",
                            MethodType.methodType(int.class, MemorySegment.class, MemorySegment.class)),
                    FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS), Arena.global());
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /** True while this thread runs a body of {@link #run} (a virtual thread is then pinned). */
    static boolean active() {
        return !Thread.currentThread().isVirtual() || FRAME.get().depth > 0;
    }

    /**
     * Runs body on this thread and returns its result; a virtual thread stays on its carrier
     * until body returns. A platform thread, or a body already inside one, runs it directly.
     * An exception of body is thrown here.
     */
    @SuppressWarnings("unchecked")
    static <T> T run(Supplier<T> body) {
        if (!Thread.currentThread().isVirtual()) {
            return body.get();
        }
        Frame f = FRAME.get();
        if (f.depth > 0) {
            return body.get();
        }
        f.body = body;
        f.depth++;
        try {
            MemorySegment found = (MemorySegment) BSEARCH.invokeExact(ONE, ONE, 1L, 8L, STUB);
            if (f.body != null) {
                throw new IllegalStateException("ctorch: the body did not run (bsearch returned " + found
                        + " without calling back, or this thread's stack ran out)");
            }
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable e) {
            throw new IllegalStateException(e);
        } finally {
            f.depth--;
            f.body = null;
        }
        Object result = f.result;
        Throwable thrown = f.thrown;
        f.result = null;
        f.thrown = null;
        if (thrown instanceof RuntimeException r) {
            throw r;
        }
        if (thrown instanceof Error e) {
            throw e;
        }
        if (thrown != null) {
            // A checked exception thrown through a Supplier (sneakily): not ours to wrap differently.
            throw new IllegalStateException(thrown);
        }
        return (T) result;
    }

    /**
     * The upcall: runs the thread's pending body once. Nothing may unwind into C (the JVM would
     * end), so every Throwable is kept for {@link #run} to rethrow.
     */
    private static int compare(MemorySegment key, MemorySegment element) {
        try {
            Frame f = FRAME.get();
            Supplier<?> body = f.body;
            if (body != null) {
                f.body = null;
                try {
                    f.result = body.get();
                } catch (Throwable t) {
                    f.thrown = t;
                }
            }
        } catch (Throwable t) {
            // Only a StackOverflowError or OutOfMemoryError could reach here: run() then
            // reports that the body did not run, as the pending body is still set.
        }
        return 0;
    }
}
