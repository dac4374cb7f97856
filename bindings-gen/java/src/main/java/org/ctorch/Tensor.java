package org.ctorch;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_DOUBLE;
import static java.lang.foreign.ValueLayout.JAVA_FLOAT;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import org.ctorch.raw.RawApi;

/**
 * A tensor: one reference to a libtorch tensor. Every operator of torch is a method
 * ({@code x.relu()}, {@code a.matmul(b)}, {@code x.add(y)}) taking the arguments without a
 * default (torch's defaults for the others; every argument explicit in {@link Ops}).
 * Close it (try-with-resources, or a {@link Scope}); a forgotten one is freed by the
 * collector.
 */
public final class Tensor extends TensorMethods {
    private static final java.util.function.Consumer<MemorySegment> FREE = RawApi::tensor_free;

    private Tensor(MemorySegment h) {
        super(h, FREE);
    }

    /**
     * Takes ownership of a tensor handle from the raw layer ({@code org.ctorch.raw}: a C
     * function the typed layers do not wrap). The handle is checked by C first: NULL, a
     * freed handle or any value ctorch never returned throws
     * {@link CTorchException.InvalidArgument}, so no typed object holds one.
     */
    public static Tensor fromRaw(MemorySegment h) {
        if (h == null) {
            throw new NullPointerException("Tensor.fromRaw: argument 'h' is null");
        }
        Scratch s = Scratch.get();
        long m = s.mark();
        try {
            Native.check(RawApi.tensor_dim(s.allocate(JAVA_LONG), h));
        } finally {
            s.reset(m);
        }
        return own(h);
    }

    /** Takes ownership of a tensor handle a C call of this binding returned (NULL: null).
     * Package-private: a handle from elsewhere comes in through {@link #fromRaw}, checked. */
    static Tensor own(MemorySegment h) {
        if (h.equals(MemorySegment.NULL)) {
            return null;
        }
        Tensor t = new Tensor(h);
        Scope.adopt(t);
        Native.pressure();
        return t;
    }

    /** A ctorch_tensor_list's tensors, owned; the list itself is freed. */
    static Tensor[] ownList(MemorySegment list) {
        Scratch s = Scratch.get();
        long m = s.mark();
        try {
            MemorySegment n = s.allocate(JAVA_LONG);
            MemorySegment e = s.allocate(ADDRESS);
            Native.check(RawApi.tensor_list_size(n, list));
            Tensor[] out = new Tensor[Math.toIntExact(n.get(JAVA_LONG, 0))];
            for (int i = 0; i < out.length; i++) {
                Native.check(RawApi.tensor_list_get(e, list, i));
                out[i] = own(e.get(ADDRESS, 0));
            }
            return out;
        } finally {
            RawApi.tensor_list_free(list);
            s.reset(m);
        }
    }

    /** Writes the handles of ts into a new array of the scratch memory, marking each in use
     * (null entries are NULL when nullable, else refused); on failure none stays marked. */
    static MemorySegment useAll(Tensor[] ts, Scratch s, String fn, String arg, boolean nullable) {
        if (ts == null) {
            throw new NullPointerException(fn + ": argument '" + arg + "' is null (it is not optional)");
        }
        MemorySegment a = s.allocate(ADDRESS, Math.max(ts.length, 1));
        int i = 0;
        try {
            for (; i < ts.length; i++) {
                if (ts[i] == null) {
                    if (!nullable) {
                        throw new NullPointerException(fn + ": argument '" + arg + "' has a null element");
                    }
                    a.setAtIndex(ADDRESS, i, MemorySegment.NULL);
                } else {
                    a.setAtIndex(ADDRESS, i, ts[i].use(fn, arg + "[" + i + "]"));
                }
            }
        } catch (RuntimeException e) {
            for (int j = 0; j < i; j++) {
                Handle.done(ts[j]);
            }
            throw e;
        }
        return a;
    }

    static void doneAll(Tensor[] ts) {
        if (ts != null) {
            for (Tensor t : ts) {
                Handle.done(t);
            }
        }
    }

    // ---- making tensors from Java data -------------------------------------------------

    /** A CPU tensor holding a copy of data (a heap segment: copied to native memory first, as
     * a downcall takes native memory only). */
    private static Tensor fromData(MemorySegment data, long[] shape, DType dtype) {
        Scratch s = Scratch.get();
        long m = s.mark();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment copy = arena.allocate(Math.max(data.byteSize(), 1), 16).copyFrom(data);
            MemorySegment out = s.allocate(ADDRESS);
            MemorySegment sizes = Conv.longs(s, shape, "Tensor.of", "shape");
            Native.check(RawApi.tensor_from_data(out, copy, data.byteSize(), sizes, shape.length, dtype.value));
            return own(out.get(ADDRESS, 0));
        } finally {
            s.reset(m);
        }
    }

    /** The shape given, or 1-D of n elements when none is; a null array or shape is refused
     * naming the method. */
    private static long[] shapeOr(String fn, Object data, long[] shape, long n) {
        if (data == null) {
            throw Conv.npe(fn, "data");
        }
        if (shape == null) {
            throw Conv.npe(fn, "shape");
        }
        return shape.length == 0 ? new long[] {n} : shape;
    }

    /** A float32 tensor holding a copy of data, of the given shape (default: 1-D). */
    public static Tensor of(float[] data, long... shape) {
        long[] sh = shapeOr("Tensor.of", data, shape, data == null ? 0 : data.length);
        return fromData(MemorySegment.ofArray(data), sh, DType.FLOAT32);
    }

    /** A float64 tensor holding a copy of data, of the given shape (default: 1-D). */
    public static Tensor of(double[] data, long... shape) {
        long[] sh = shapeOr("Tensor.of", data, shape, data == null ? 0 : data.length);
        return fromData(MemorySegment.ofArray(data), sh, DType.FLOAT64);
    }

    /** An int64 tensor holding a copy of data, of the given shape (default: 1-D). */
    public static Tensor of(long[] data, long... shape) {
        long[] sh = shapeOr("Tensor.of", data, shape, data == null ? 0 : data.length);
        return fromData(MemorySegment.ofArray(data), sh, DType.INT64);
    }

    /** An int32 tensor holding a copy of data, of the given shape (default: 1-D). */
    public static Tensor of(int[] data, long... shape) {
        long[] sh = shapeOr("Tensor.of", data, shape, data == null ? 0 : data.length);
        return fromData(MemorySegment.ofArray(data), sh, DType.INT32);
    }

    /** A uint8 tensor holding a copy of data, of the given shape (default: 1-D). */
    public static Tensor ofBytes(byte[] data, long... shape) {
        long[] sh = shapeOr("Tensor.ofBytes", data, shape, data == null ? 0 : data.length);
        return fromData(MemorySegment.ofArray(data), sh, DType.UINT8);
    }

    /** A 0-dim float32 tensor. */
    public static Tensor scalar(float v) {
        return fromData(MemorySegment.ofArray(new float[] {v}), new long[0], DType.FLOAT32);
    }

    // ---- properties ----------------------------------------------------------------------

    /** The sizes of the dimensions (torch's {@code shape}). */
    public long[] shape() {
        Scratch s = Scratch.get();
        long m = s.mark();
        MemorySegment h = use();
        try {
            MemorySegment n = s.allocate(JAVA_LONG);
            Native.check(RawApi.tensor_dim(n, h));
            long dim = n.get(JAVA_LONG, 0);
            MemorySegment out = s.allocate(JAVA_LONG, Math.max(dim, 1));
            Native.check(RawApi.tensor_sizes(out, dim, h));
            return out.asSlice(0, dim * 8).toArray(JAVA_LONG);
        } finally {
            done();
            s.reset(m);
        }
    }

    /** The size of dimension d (negative counts from the end). */
    public long size(long d) {
        long[] sh = shape();
        long i = d < 0 ? d + sh.length : d; // checked as a long: (int) (1L << 32) is 0
        if (i < 0 || i >= sh.length) {
            throw new CTorchException.Index("size: dimension " + d + " is out of range for a "
                    + sh.length + "-dim tensor");
        }
        return sh[(int) i];
    }

    /** The number of dimensions. */
    public long dim() {
        return shape().length;
    }

    /** The number of elements. */
    public long numel() {
        long n = 1;
        for (long d : shape()) {
            n *= d;
        }
        return n;
    }

    /** The element type. */
    public DType dtype() {
        Scratch s = Scratch.get();
        long m = s.mark();
        MemorySegment h = use();
        try {
            MemorySegment out = s.allocate(JAVA_INT);
            Native.check(RawApi.tensor_dtype(out, h));
            return DType.of(out.get(JAVA_INT, 0));
        } finally {
            done();
            s.reset(m);
        }
    }

    /** The one element as a double (a tensor of one element). */
    public double item() {
        Scratch s = Scratch.get();
        long m = s.mark();
        MemorySegment h = use();
        try {
            MemorySegment out = s.allocate(JAVA_DOUBLE);
            Native.check(RawApi.tensor_item_double(out, h));
            return out.get(JAVA_DOUBLE, 0);
        } finally {
            done();
            s.reset(m);
        }
    }

    /** The one element as a long (a tensor of one element). */
    public long itemLong() {
        Scratch s = Scratch.get();
        long m = s.mark();
        MemorySegment h = use();
        try {
            MemorySegment out = s.allocate(JAVA_LONG);
            Native.check(RawApi.tensor_item_int64(out, h));
            return out.get(JAVA_LONG, 0);
        } finally {
            done();
            s.reset(m);
        }
    }

    /** The elements copied into a native buffer, then into the heap array behind dst. */
    private MemorySegment copyTo(MemorySegment dst) {
        MemorySegment h = use();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocate(Math.max(dst.byteSize(), 1), 16);
            Native.check(RawApi.tensor_copy_to(buf, dst.byteSize(), h));
            return dst.copyFrom(buf.asSlice(0, dst.byteSize()));
        } finally {
            done();
        }
    }

    /** The number of elements, as the length of the Java array that what() returns. */
    private int arrayLength(String what) {
        long n = numel();
        if (n > Integer.MAX_VALUE - 8) { // the largest array a JVM makes
            throw new IllegalStateException(what + ": the tensor has " + n + " elements; a Java array holds at most "
                    + (Integer.MAX_VALUE - 8) + " (read it in slices: narrow, or index_select)");
        }
        return (int) n;
    }

    private void expect(DType want, String what) {
        DType d = dtype();
        if (d != want) {
            throw new CTorchException.Type(what + ": the tensor is " + d + ", not " + want + " (convert with to(DType." + want + "))");
        }
    }

    /** The elements in row-major order (a float32 tensor). */
    public float[] toFloatArray() {
        expect(DType.FLOAT32, "toFloatArray");
        return copyTo(MemorySegment.ofArray(new float[arrayLength("toFloatArray")])).toArray(JAVA_FLOAT);
    }

    /** The elements in row-major order (a float64 tensor). */
    public double[] toDoubleArray() {
        expect(DType.FLOAT64, "toDoubleArray");
        return copyTo(MemorySegment.ofArray(new double[arrayLength("toDoubleArray")])).toArray(JAVA_DOUBLE);
    }

    /** The elements in row-major order (an int64 tensor). */
    public long[] toLongArray() {
        expect(DType.INT64, "toLongArray");
        return copyTo(MemorySegment.ofArray(new long[arrayLength("toLongArray")])).toArray(JAVA_LONG);
    }

    /** The elements in row-major order (an int32 tensor). */
    public int[] toIntArray() {
        expect(DType.INT32, "toIntArray");
        return copyTo(MemorySegment.ofArray(new int[arrayLength("toIntArray")])).toArray(JAVA_INT);
    }

    /** The elements in row-major order (a uint8 or bool tensor). */
    public byte[] toByteArray() {
        DType d = dtype();
        if (d != DType.UINT8 && d != DType.BOOL) {
            throw new CTorchException.Type("toByteArray: the tensor is " + d + ", not UINT8 or BOOL");
        }
        return copyTo(MemorySegment.ofArray(new byte[arrayLength("toByteArray")])).toArray(JAVA_BYTE);
    }

    /** This tensor converted to dtype (a new tensor; this one if it already is). */
    public Tensor to(DType dtype) {
        Scratch s = Scratch.get();
        long m = s.mark();
        MemorySegment h = use();
        try {
            MemorySegment out = s.allocate(ADDRESS);
            Native.check(RawApi.tensor_to_dtype(out, h, dtype.value));
            return own(out.get(ADDRESS, 0));
        } finally {
            done();
            s.reset(m);
        }
    }

    /** The gradient accumulated by backward() (null when there is none). */
    public Tensor grad() {
        Scratch s = Scratch.get();
        long m = s.mark();
        MemorySegment h = use();
        try {
            MemorySegment out = s.allocate(ADDRESS);
            Native.check(RawApi.tensor_grad(out, h));
            return own(out.get(ADDRESS, 0));
        } finally {
            done();
            s.reset(m);
        }
    }

    /** Sets whether autograd records operations on this tensor; returns this tensor. */
    public Tensor requiresGrad(boolean on) {
        MemorySegment h = use();
        try {
            Native.check(RawApi.tensor_set_requires_grad(h, on ? 1 : 0));
            return this;
        } finally {
            done();
        }
    }

    /** Whether autograd records operations on this tensor. */
    public boolean requiresGrad() {
        Scratch s = Scratch.get();
        long m = s.mark();
        MemorySegment h = use();
        try {
            MemorySegment out = s.allocate(JAVA_INT);
            Native.check(RawApi.tensor_requires_grad(out, h));
            return out.get(JAVA_INT, 0) != 0;
        } finally {
            done();
            s.reset(m);
        }
    }

    /** torch's {@code backward()} of a one-element tensor. */
    public void backward() {
        MemorySegment h = use();
        try {
            Native.check(RawApi.tensor_backward(h, MemorySegment.NULL, 0, 0, MemorySegment.NULL, 0));
        } finally {
            done();
        }
    }

    /** Saves the tensor to path in torch.save's format (torch.load reads it). */
    public void save(String path) {
        Scratch s = Scratch.get();
        long m = s.mark();
        MemorySegment h = use();
        try {
            Native.check(RawApi.save(Conv.str(s, path, "Tensor.save", "path"), h));
        } finally {
            done();
            s.reset(m);
        }
    }

    /** A tensor saved by save() or torch.save. */
    public static Tensor load(String path) {
        Scratch s = Scratch.get();
        long m = s.mark();
        try {
            MemorySegment out = s.allocate(ADDRESS);
            Native.check(RawApi.load(out, Conv.str(s, path, "Tensor.load", "path")));
            return own(out.get(ADDRESS, 0));
        } finally {
            s.reset(m);
        }
    }

    /** libtorch's rendering of the tensor (its values); "Tensor(closed)" after close(). */
    @Override
    public String toString() {
        if (isClosed()) {
            return "Tensor(closed)";
        }
        Scratch s = Scratch.get();
        long m = s.mark();
        MemorySegment h = use();
        try {
            MemorySegment out = s.allocate(ADDRESS);
            Native.check(RawApi.tensor_to_string(out, h));
            MemorySegment p = out.get(ADDRESS, 0);
            try {
                return Native.string(p);
            } finally {
                RawApi.string_free(p);
            }
        } finally {
            done();
            s.reset(m);
        }
    }

    /** Shape and dtype, without the values (for logs). */
    public String describe() {
        return "Tensor(" + Arrays.toString(shape()) + ", " + dtype() + ")";
    }
}
