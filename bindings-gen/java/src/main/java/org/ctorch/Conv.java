package org.ctorch;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_DOUBLE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.MemorySegment;
import org.ctorch.raw.Structs;

/** Java arguments as C arguments in the calling thread's scratch memory (the generated
 * operators' conversions): null is None (NULL) where the schema allows it and an
 * exception naming the operator and argument where it does not. An empty array is a
 * non-NULL pointer of length 0 (torch's {@code []}, not None). */
final class Conv {
    private Conv() {}

    static NullPointerException npe(String fn, String arg) {
        return new NullPointerException(fn + ": argument '" + arg + "' is null (it is not optional)");
    }

    static int e(CEnum v, String fn, String arg) {
        if (v == null) {
            throw npe(fn, arg);
        }
        return v.cValue();
    }

    static MemorySegment enumOpt(Scratch s, CEnum v) {
        return v == null ? MemorySegment.NULL : s.allocateFrom(JAVA_INT, v.cValue());
    }

    static MemorySegment longOpt(Scratch s, Long v) {
        return v == null ? MemorySegment.NULL : s.allocateFrom(JAVA_LONG, v);
    }

    static MemorySegment doubleOpt(Scratch s, Double v) {
        return v == null ? MemorySegment.NULL : s.allocateFrom(JAVA_DOUBLE, v);
    }

    static MemorySegment boolOpt(Scratch s, Boolean v) {
        return v == null ? MemorySegment.NULL : s.allocateFrom(JAVA_INT, v ? 1 : 0);
    }

    static MemorySegment scalarOpt(Scratch s, Number v, String fn, String arg) {
        return v == null ? MemorySegment.NULL : Scalar.write(s, v, fn, arg);
    }

    static MemorySegment device(Scratch s, Device v, String fn, String arg) {
        if (v == null) {
            throw npe(fn, arg);
        }
        return Device.write(s, v);
    }

    static MemorySegment deviceOpt(Scratch s, Device v) {
        return v == null ? MemorySegment.NULL : Device.write(s, v);
    }

    static MemorySegment str(Scratch s, String v, String fn, String arg) {
        if (v == null) {
            throw npe(fn, arg);
        }
        return s.allocateFrom(v);
    }

    static MemorySegment strOpt(Scratch s, String v) {
        return v == null ? MemorySegment.NULL : s.allocateFrom(v);
    }

    static MemorySegment longs(Scratch s, long[] v, String fn, String arg) {
        if (v == null) {
            throw npe(fn, arg);
        }
        return v.length == 0 ? s.allocate(JAVA_LONG) : s.allocateFrom(JAVA_LONG, v);
    }

    static MemorySegment longsOpt(Scratch s, long[] v) {
        return v == null ? MemorySegment.NULL : longs(s, v, "", "");
    }

    static MemorySegment doubles(Scratch s, double[] v, String fn, String arg) {
        if (v == null) {
            throw npe(fn, arg);
        }
        return v.length == 0 ? s.allocate(JAVA_DOUBLE) : s.allocateFrom(JAVA_DOUBLE, v);
    }

    static MemorySegment doublesOpt(Scratch s, double[] v) {
        return v == null ? MemorySegment.NULL : doubles(s, v, "", "");
    }

    static MemorySegment bools(Scratch s, boolean[] v, String fn, String arg) {
        if (v == null) {
            throw npe(fn, arg);
        }
        MemorySegment a = s.allocate(JAVA_INT, Math.max(v.length, 1));
        for (int i = 0; i < v.length; i++) {
            a.setAtIndex(JAVA_INT, i, v[i] ? 1 : 0);
        }
        return a;
    }

    static MemorySegment boolsOpt(Scratch s, boolean[] v) {
        return v == null ? MemorySegment.NULL : bools(s, v, "", "");
    }

    static MemorySegment scalars(Scratch s, Number[] v, String fn, String arg) {
        if (v == null) {
            throw npe(fn, arg);
        }
        long size = Structs.CTORCH_SCALAR.byteSize();
        MemorySegment a = s.allocate(Structs.CTORCH_SCALAR, Math.max(v.length, 1));
        for (int i = 0; i < v.length; i++) {
            Scalar.fill(a, i * size, v[i], fn, arg + "[" + i + "]");
        }
        return a;
    }

    static MemorySegment scalarsOpt(Scratch s, Number[] v, String fn, String arg) {
        return v == null ? MemorySegment.NULL : scalars(s, v, fn, arg);
    }

    static MemorySegment strings(Scratch s, String[] v, String fn, String arg) {
        if (v == null) {
            throw npe(fn, arg);
        }
        MemorySegment a = s.allocate(ADDRESS, Math.max(v.length, 1));
        for (int i = 0; i < v.length; i++) {
            a.setAtIndex(ADDRESS, i, str(s, v[i], fn, arg + "[" + i + "]"));
        }
        return a;
    }

    static MemorySegment stringsOpt(Scratch s, String[] v, String fn, String arg) {
        return v == null ? MemorySegment.NULL : strings(s, v, fn, arg);
    }

    /** The one C length of several arrays (api.json's length_of: names and tensors of
     * ctorch_save_dict): lengths[i] is array names[i]'s, -1 where it is null (allowed only
     * where the array is optional; its own conversion refuses it otherwise). The given
     * ones must agree: a length taken from one array would let C read past a shorter one
     * or leave a longer one's tail out. */
    static long sharedLength(String fn, String[] names, long[] lengths) {
        long n = -1;
        for (long k : lengths) {
            if (k >= 0 && n >= 0 && k != n) {
                java.util.StringJoiner b = new java.util.StringJoiner(", ", fn + ": ", " entries; they share one length");
                for (int i = 0; i < names.length; i++) {
                    if (lengths[i] >= 0) {
                        b.add(names[i] + " has " + lengths[i]);
                    }
                }
                throw new IllegalArgumentException(b.toString());
            }
            if (k >= 0) {
                n = k;
            }
        }
        return Math.max(n, 0);
    }
}
