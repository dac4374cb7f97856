package org.ctorch;

import java.util.ArrayList;

/**
 * Frees every tensor made inside it on this thread when it closes, but those passed to
 * {@link #keep}: {@code try (var s = Scope.open()) { ... return s.keep(result); }}.
 * Scopes nest; a kept tensor belongs to the enclosing scope, if any. A scope belongs to the
 * thread that opened it (closing it on another thread throws IllegalStateException).
 */
public final class Scope implements AutoCloseable {
    private static final ThreadLocal<Scope> CURRENT = new ThreadLocal<>();

    private final Scope parent;
    private final Thread owner = Thread.currentThread();
    private final ArrayList<Tensor> tensors = new ArrayList<>();
    private boolean closed;

    private Scope(Scope parent) {
        this.parent = parent;
    }

    /** Opens a scope on this thread. */
    public static Scope open() {
        Scope s = new Scope(CURRENT.get());
        CURRENT.set(s);
        return s;
    }

    static void adopt(Tensor t) {
        Scope s = CURRENT.get();
        if (s != null) {
            s.tensors.add(t);
        }
    }

    /** Lets t outlive this scope (it then belongs to the enclosing one, if any); returns t. */
    public Tensor keep(Tensor t) {
        if (t != null && tensors.remove(t) && parent != null) {
            parent.tensors.add(t);
        }
        return t;
    }

    /** Makes this scope free ts too (tensors made before it opened, or on another thread). */
    public void adoptAll(Tensor... ts) {
        for (Tensor t : ts) {
            if (t != null && !tensors.contains(t)) {
                tensors.add(t);
            }
        }
    }

    /** The number of tensors this scope will free. */
    public int size() {
        return tensors.size();
    }

    /** Frees the tensors made inside the scope (but the kept ones) and ends it. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        if (Thread.currentThread() != owner) {
            throw new IllegalStateException("a Scope is closed on the thread that opened it");
        }
        closed = true;
        // Scopes opened inside this one and not closed end with it.
        Scope cur = CURRENT.get();
        while (cur != null && cur != this) {
            cur.close();
            cur = CURRENT.get();
        }
        CURRENT.set(parent);
        for (Tensor t : tensors) {
            t.close();
        }
        tensors.clear();
    }
}
