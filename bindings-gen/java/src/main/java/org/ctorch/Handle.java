package org.ctorch;

import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.lang.ref.Cleaner;
import java.util.function.Consumer;

/**
 * One reference to a native ctorch object (a tensor, an optimizer, a module...).
 *
 * <p>{@link #close()} frees it; closing twice does nothing. A handle that is never closed is
 * freed by a {@link Cleaner} once it is unreachable. A call in progress keeps the handle
 * alive: a close() from another thread during it frees the object when the call returns,
 * and a call after close() throws IllegalStateException, so a closed or racing handle is
 * never passed to C.
 */
public abstract class Handle implements AutoCloseable {
    static final Cleaner CLEANER = Cleaner.create();
    private static final VarHandle STATE;

    static {
        try {
            STATE = MethodHandles.lookup().findVarHandle(Handle.class, "state", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final MemorySegment address;
    private final Cleaner.Cleanable cleanable;
    // Bit 0: closed. Above it: the number of calls using the handle now (2 per call).
    @SuppressWarnings("unused")
    private volatile long state;

    /** Takes ownership of h, freed by free (a static function: the Cleaner must not reach this). */
    Handle(MemorySegment h, Consumer<MemorySegment> free) {
        this.address = h;
        this.cleanable = free == null ? null : CLEANER.register(this, new Freer(h, free));
    }

    private record Freer(MemorySegment h, Consumer<MemorySegment> free) implements Runnable {
        @Override
        public void run() {
            free.accept(h);
        }
    }

    /** Marks the handle in use by a call and returns the C handle; throws if it was closed. */
    final MemorySegment use() {
        return use(null, null);
    }

    /** As use(), for argument arg of C function fn (named when it was closed). */
    final MemorySegment use(String fn, String arg) {
        long s;
        do {
            s = state;
            if ((s & 1) != 0) {
                throw closed(fn, arg);
            }
        } while (!STATE.weakCompareAndSet(this, s, s + 2));
        return address;
    }

    /** "Tensor used after close()", naming the call: the C function and argument where the
     * handle is an argument, else the binding's method the caller called (found only on
     * this path, so a call that succeeds pays nothing for the name). */
    private IllegalStateException closed(String fn, String arg) {
        String what = getClass().getSimpleName() + " used after close()";
        if (fn != null) {
            return new IllegalStateException(fn + ": argument '" + arg + "': " + what);
        }
        String call = StackWalker.getInstance().walk(frames -> {
            String last = null;
            for (StackWalker.StackFrame f : (Iterable<StackWalker.StackFrame>) frames::iterator) {
                String c = f.getClassName();
                if (!c.startsWith("org.ctorch.") || c.startsWith("org.ctorch.tests.")) {
                    break;
                }
                if (!c.equals(Handle.class.getName())) {
                    last = c.substring(c.lastIndexOf('.') + 1) + "." + f.getMethodName();
                }
            }
            return last;
        });
        if (call != null && call.startsWith("TensorMethods.")) {
            call = "Tensor." + call.substring("TensorMethods.".length()); // the public class
        }
        return new IllegalStateException(call == null ? what : call + ": " + what);
    }

    /** Ends a use begun by use(); frees the object if it was closed meanwhile. */
    final void done() {
        long s = (long) STATE.getAndAdd(this, -2L) - 2;
        if (s == 1) {
            release();
        }
    }

    /** The C handle without marking a use: for the raw layer (org.ctorch.raw), at the caller's risk. */
    public final MemorySegment address() {
        if ((state & 1) != 0) {
            throw closed(null, null);
        }
        return address;
    }

    /** Whether close() was called. */
    public final boolean isClosed() {
        return (state & 1) != 0;
    }

    /** Frees the native object now (or when the calls using it return). Idempotent. */
    @Override
    public void close() {
        long s;
        do {
            s = state;
            if ((s & 1) != 0) {
                return;
            }
        } while (!STATE.weakCompareAndSet(this, s, s | 1));
        if (s == 0) {
            release();
        }
    }

    private void release() {
        if (cleanable != null) {
            cleanable.clean();
        }
    }

    static MemorySegment use(Handle h, String fn, String arg) {
        if (h == null) {
            throw new NullPointerException(fn + ": argument '" + arg + "' is null (it is not optional)");
        }
        return h.use(fn, arg);
    }

    static MemorySegment useOpt(Handle h) {
        return h == null ? MemorySegment.NULL : h.use();
    }

    static void done(Handle h) {
        if (h != null) {
            h.done();
        }
    }
}
