package org.ctorch.nn;

import org.ctorch.DType;
import org.ctorch.Device;

/**
 * Java values as the Python literals of the constructor text ctorch_nn_new parses
 * ({@code 5}, {@code (1, 2)}, {@code 0.1}, {@code True}, {@code 'same'}, {@code 'float64'}).
 */
final class Args {
    private Args() {}

    static String of(long v) {
        return Long.toString(v);
    }

    static String of(double v) {
        if (Double.isNaN(v)) {
            return "nan";
        }
        if (Double.isInfinite(v)) {
            return v > 0 ? "inf" : "-inf";
        }
        String s = Double.toString(v); // shortest repr that reads back; always has '.' or 'E'
        return s.replace("E", "e");
    }

    static String of(boolean v) {
        return v ? "True" : "False";
    }

    static String of(Long v) {
        return of(v.longValue());
    }

    static String of(Double v) {
        return of(v.doubleValue());
    }

    static String of(Boolean v) {
        return of(v.booleanValue());
    }

    /** A Python string; null: None. */
    static String of(String v) {
        return v == null ? "None" : "'" + v.replace("\\", "\\\\").replace("'", "\\'") + "'";
    }

    /** torch's dtype name ('float32'); null: None. */
    static String of(DType v) {
        return v == null ? "None" : of(v.name().toLowerCase());
    }

    /** The device's name ('cpu', 'cuda:1'); null: None. */
    static String of(Device v) {
        return v == null ? "None" : of(v.toString());
    }

    /** An int[N]: one number (PyTorch repeats it N times) or N of them; null: None. */
    static String ints(long[] v) {
        if (v == null) {
            return "None";
        }
        return v.length == 1 ? of(v[0]) : list(v);
    }

    /** A tuple of ints; null: None. */
    static String list(long[] v) {
        if (v == null) {
            return "None";
        }
        StringBuilder b = new StringBuilder("(");
        for (int i = 0; i < v.length; i++) {
            b.append(i > 0 ? ", " : "").append(v[i]);
        }
        return b.append(v.length == 1 ? ",)" : ")").toString();
    }

    /** A tuple of floats; null: None. */
    static String list(double[] v) {
        if (v == null) {
            return "None";
        }
        StringBuilder b = new StringBuilder("(");
        for (int i = 0; i < v.length; i++) {
            b.append(i > 0 ? ", " : "").append(of(v[i]));
        }
        return b.append(v.length == 1 ? ",)" : ")").toString();
    }
}
