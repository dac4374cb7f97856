package org.ctorch;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.SegmentAllocator;
import java.lang.foreign.ValueLayout;
import org.ctorch.raw.Structs;

/**
 * A number of a definite kind, as torch's Scalar: an integer, a float, a bool or a complex.
 * Operators take any {@link Number} where torch takes a Scalar: Integer, Long, Short and Byte
 * are integers ({@code intTensor.add(2)} stays integral), Float and Double are floats; use
 * {@link #of(boolean)} and {@link #complex} for the others.
 */
public final class Scalar extends Number {
    private static final long serialVersionUID = 1L;
    private final ScalarKind kind;
    private final long i;
    private final double f;
    private final double imag;

    private Scalar(ScalarKind kind, long i, double f, double imag) {
        this.kind = kind;
        this.i = i;
        this.f = f;
        this.imag = imag;
    }

    public static Scalar of(long v) {
        return new Scalar(ScalarKind.INT, v, 0, 0);
    }

    public static Scalar of(double v) {
        return new Scalar(ScalarKind.FLOAT, 0, v, 0);
    }

    public static Scalar of(boolean v) {
        return new Scalar(ScalarKind.BOOL, v ? 1 : 0, 0, 0);
    }

    public static Scalar complex(double re, double im) {
        return new Scalar(ScalarKind.COMPLEX, 0, re, im);
    }

    public ScalarKind kind() {
        return kind;
    }

    @Override
    public long longValue() {
        return kind == ScalarKind.FLOAT || kind == ScalarKind.COMPLEX ? (long) f : i;
    }

    @Override
    public int intValue() {
        return (int) longValue();
    }

    @Override
    public double doubleValue() {
        return kind == ScalarKind.FLOAT || kind == ScalarKind.COMPLEX ? f : i;
    }

    @Override
    public float floatValue() {
        return (float) doubleValue();
    }

    @Override
    public String toString() {
        return switch (kind) {
            case INT -> Long.toString(i);
            case BOOL -> i != 0 ? "true" : "false";
            case COMPLEX -> "(" + f + (imag < 0 ? "" : "+") + imag + "j)";
            default -> Double.toString(f);
        };
    }

    /** The ctorch_scalar of n, written into memory from a. */
    static MemorySegment write(SegmentAllocator a, Number n, String fn, String arg) {
        MemorySegment s = a.allocate(Structs.CTORCH_SCALAR);
        fill(s, 0, n, fn, arg);
        return s;
    }

    static void fill(MemorySegment s, long at, Number n, String fn, String arg) {
        ScalarKind k;
        long iv = 0;
        double fv = 0, im = 0;
        if (n == null) {
            throw new NullPointerException(fn + ": argument '" + arg + "' is null (it is not optional)");
        } else if (n instanceof Scalar x) {
            k = x.kind;
            iv = x.i;
            fv = x.f;
            im = x.imag;
        } else if (n instanceof Double || n instanceof Float) {
            k = ScalarKind.FLOAT;
            fv = n.doubleValue();
        } else if (n instanceof Long || n instanceof Integer || n instanceof Short || n instanceof Byte) {
            k = ScalarKind.INT;
            iv = n.longValue();
        } else {
            throw new IllegalArgumentException(fn + ": argument '" + arg + "' is a " + n.getClass().getName()
                    + "; a Scalar is an Integer, Long, Short, Byte, Float, Double or org.ctorch.Scalar");
        }
        s.set(ValueLayout.JAVA_INT, at + Structs.CTORCH_SCALAR_KIND, k.value);
        s.set(ValueLayout.JAVA_INT, at + Structs.CTORCH_SCALAR_RESERVED, 0);
        s.set(ValueLayout.JAVA_LONG, at + Structs.CTORCH_SCALAR_I, iv);
        s.set(ValueLayout.JAVA_DOUBLE, at + Structs.CTORCH_SCALAR_F, fv);
        s.set(ValueLayout.JAVA_DOUBLE, at + Structs.CTORCH_SCALAR_IMAG, im);
    }

    static Scalar read(MemorySegment s) {
        ScalarKind k = ScalarKind.of(s.get(ValueLayout.JAVA_INT, Structs.CTORCH_SCALAR_KIND));
        return new Scalar(k, s.get(ValueLayout.JAVA_LONG, Structs.CTORCH_SCALAR_I),
                s.get(ValueLayout.JAVA_DOUBLE, Structs.CTORCH_SCALAR_F),
                s.get(ValueLayout.JAVA_DOUBLE, Structs.CTORCH_SCALAR_IMAG));
    }
}
