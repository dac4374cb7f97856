package org.ctorch;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import org.ctorch.raw.ApiInfo;
import org.ctorch.raw.RawApi;

/** The runtime's link to the library: the load-time checks, statuses as exceptions, the
 * native-memory counter. */
final class Native {
    private Native() {}

    /** CPU bytes held by live tensor storages (ctorch_memory_cpu_counter), read with a plain load. */
    private static final MemorySegment COUNTER;
    private static final long GC_STEP = Long.getLong("ctorch.gcThresholdBytes", 256L << 20);
    private static volatile long nextGc;

    static {
        Scratch s = Scratch.get();
        long m = s.mark();
        try {
            // Error tickets: a failed call's status names its message in ctorch's log, so the
            // message does not depend on which OS thread reads it (a virtual thread may run on
            // another carrier after the call).
            int st = RawApi.set_error_tickets(MemorySegment.NULL, 1);
            if (st != 0) {
                throw new UnsatisfiedLinkError("ctorch: " + error(st).getMessage());
            }
            checkIdentity(s);
            MemorySegment c = s.allocate(ADDRESS);
            check(RawApi.memory_cpu_counter(c));
            COUNTER = c.get(ADDRESS, 0).reinterpret(8);
            nextGc = COUNTER.get(JAVA_LONG, 0) + GC_STEP;
        } finally {
            s.reset(m);
        }
    }

    /**
     * The load check every binding makes (docs/packages.md, "The load check"): the library
     * refuses when a libtorch of another release is loaded beside it; its ctorch and libtorch
     * versions must be those this package was generated for, then its ABI hash
     * (CTORCH_IGNORE_ABI=1 skips the last two, never the first).
     */
    private static void checkIdentity(Scratch s) {
        String[] got = new String[3];
        String[] names = {"ctorch_version", "ctorch_torch_version", "ctorch_abi_hash"};
        for (int i = 0; i < 3; i++) {
            MemorySegment out = s.allocate(ADDRESS);
            int st = switch (i) {
                case 0 -> RawApi.version(out);
                case 1 -> RawApi.torch_version(out);
                default -> RawApi.abi_hash(out);
            };
            if (st != 0) {
                throw new UnsatisfiedLinkError("ctorch: " + names[i] + " refused (the library loaded from "
                        + org.ctorch.raw.NativeLibrary.loadedFrom() + "): " + error(st).getMessage());
            }
            got[i] = string(out.get(ADDRESS, 0));
        }
        if ("1".equals(System.getenv("CTORCH_IGNORE_ABI"))) {
            return;
        }
        if (!got[0].equals(ApiInfo.CTORCH_VERSION) || !got[1].equals(ApiInfo.TORCH_VERSION)) {
            throw new UnsatisfiedLinkError("ctorch: the loaded libctorch (" + org.ctorch.raw.NativeLibrary.loadedFrom()
                    + ") is " + got[0] + " built for libtorch " + got[1] + "; this package was generated for libctorch "
                    + ApiInfo.CTORCH_VERSION + " built for libtorch " + ApiInfo.TORCH_VERSION
                    + " (use that library: CTORCH_LIB, or the natives jar of this version)");
        }
        if (!got[2].equals(ApiInfo.ABI_HASH)) {
            throw new UnsatisfiedLinkError("ctorch: the loaded libctorch has ABI " + got[2]
                    + "; this package was generated for " + ApiInfo.ABI_HASH);
        }
    }

    /** Loads the library and runs the checks above (idempotent). */
    static void init() {}

    static void check(int st) {
        if (st != 0) {
            throw error(st);
        }
    }

    /** The exception of a failed call: its status, and its message fetched through its ticket. */
    static CTorchException error(int st) {
        int code = (st >>> ApiInfo.STATUS_CODE_SHIFT) & ApiInfo.STATUS_CODE_MASK;
        int ticket = (st >>> ApiInfo.STATUS_TICKET_SHIFT) & ApiInfo.STATUS_TICKET_MASK;
        String msg = "(no message)";
        if (ticket != 0) {
            Scratch s = Scratch.get();
            long m = s.mark();
            try {
                MemorySegment len = s.allocate(JAVA_LONG);
                long cap = 512;
                for (int tries = 0; tries < 3; tries++) {
                    MemorySegment buf = s.allocate(cap);
                    if (RawApi.error_message(MemorySegment.NULL, len, buf, cap, ticket) != 0) {
                        break;
                    }
                    long n = len.get(JAVA_LONG, 0);
                    if (n + 1 > cap) {
                        cap = n + 1;
                        continue;
                    }
                    msg = new String(buf.asSlice(0, n).toArray(java.lang.foreign.ValueLayout.JAVA_BYTE),
                            StandardCharsets.UTF_8);
                    break;
                }
            } finally {
                s.reset(m);
            }
        }
        CTorchException e = CTorchException.of(code, msg);
        // A Java callback that threw during the call (a custom module's forward): its exception.
        Throwable cause = Upcalls.PENDING.get();
        if (cause != null) {
            Upcalls.PENDING.remove();
            e.initCause(cause);
        }
        return e;
    }

    /** Called as tensors are made: asks for a collection when native memory grew by
     * ctorch.gcThresholdBytes since the last one, so forgotten tensors are freed. */
    static void pressure() {
        long now = COUNTER.get(JAVA_LONG, 0);
        if (now > nextGc) {
            nextGc = now + GC_STEP;
            System.gc();
        }
    }

    static String string(MemorySegment p) {
        return p.equals(MemorySegment.NULL) ? null : p.reinterpret(Long.MAX_VALUE).getString(0);
    }

    static int intOf(long v, String fn, String arg) {
        if (v != (int) v) {
            throw new IllegalArgumentException(fn + ": argument '" + arg + "' = " + v + " does not fit a C int");
        }
        return (int) v;
    }

    static long sizeOf(long v, String fn, String arg) {
        if (v < 0) {
            throw new IllegalArgumentException(fn + ": argument '" + arg + "' = " + v + " is negative (a size_t)");
        }
        return v;
    }

    /** Refuses a call that begins or ends per-OS-thread state on a virtual thread (whose
     * carrier may change between two calls) outside {@link Torch#pinned}, which holds it on one. */
    static void platformThreadOnly(String fn) {
        if (!Pinned.active()) {
            throw new IllegalStateException(fn + " begins or ends state libtorch keeps per OS thread: on a virtual "
                    + "thread (which may change carrier between two calls) call it inside Torch.pinned(...), or "
                    + "from a platform thread; Torch.noGrad and Torch.inferenceMode pin their body themselves");
        }
    }

    static int uint32Of(long v, String fn, String arg) {
        if (v < 0 || v > 0xFFFFFFFFL) {
            throw new IllegalArgumentException(fn + ": argument '" + arg + "' = " + v + " does not fit a uint32_t");
        }
        return (int) v;
    }
}
