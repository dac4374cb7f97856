package org.ctorch.tests;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import org.ctorch.CTorchException;
import org.ctorch.DType;
import org.ctorch.Device;
import org.ctorch.DeviceType;
import org.ctorch.Generator;
import org.ctorch.Ops;
import org.ctorch.Scalar;
import org.ctorch.Scope;
import org.ctorch.Tensor;
import org.ctorch.Unchecked;

/**
 * The Java bad-input sweep (tests/bindings/rust_sweep.py runs it, in child JVMs): every
 * operator of {@link Ops} (every checked operator; with CTORCH_SWEEP_UNSAFE=1 the
 * {@link Unchecked} ones too) called through the ordinary API with RECIPES recipes of bad
 * arguments, picked by Java type (empty, 0-dim, wrong-dtype and mismatched tensors, negative
 * and huge longs, NaN and infinities, empty and oversized arrays, null for every optional,
 * odd strings, the meta device), and every tensor it returns read (printed, which reads
 * every element, and cloned). A failure must come back as an exception; the process must
 * not die. Prints "B i name" before operator i and "DONE n" at the end.
 * Usage: Sweep START
 */
public final class Sweep {
    static final int RECIPES = 6;

    static Tensor t(int r, int k) {
        float[] f6 = {0.5f, -1, 2, 3, Float.NaN, 0};
        return switch ((r + k) % RECIPES) {
            case 0 -> Tensor.of(new float[0], 0);
            case 1 -> Tensor.of(new long[] {0, 1, 2, 3, 4, 5}, 2, 3);
            case 2 -> Tensor.scalar(1.5f);
            case 3 -> k == 0 ? Tensor.of(f6, 2, 3) : Tensor.of(new double[] {1, 2, 3}, 3);
            case 4 -> Tensor.of(new int[] {1, 0, 1, 1}, 1, 2, 2, 1).to(DType.BOOL);
            default -> Tensor.of(f6, 3, 2).to(k % 2 == 0 ? DType.COMPLEX64 : DType.FLOAT16);
        };
    }

    static Object value(Class<?> c, int r, int k) {
        int i = (r + k) % RECIPES;
        boolean none = (r + k) % 3 == 0;
        if (c == Tensor.class) {
            return none && k > 0 ? null : t(r, k);
        }
        if (c == Tensor[].class) {
            return switch (i % 3) {
                case 0 -> new Tensor[0];
                case 1 -> new Tensor[] {t(r, k)};
                default -> new Tensor[] {t(r, k), t(r, k + 1), t(r, k + 2)};
            };
        }
        if (c == long.class || c == Long.class) {
            return none && c == Long.class ? null : new long[] {0, -1, Long.MAX_VALUE, 1, -(1L << 40), 2}[i];
        }
        if (c == double.class || c == Double.class) {
            return none && c == Double.class ? null
                    : new double[] {0, -1, Double.NaN, 1e300, Double.POSITIVE_INFINITY, 0.5}[i];
        }
        if (c == boolean.class || c == Boolean.class) {
            return none && c == Boolean.class ? null : (r + k) % 2 == 1;
        }
        if (c == Number.class) {
            return new Number[] {0, Double.NaN, Long.MAX_VALUE, Scalar.of(true), Scalar.complex(1, -1), -1e300}[i];
        }
        if (c == long[].class) {
            return none && k > 0 && r % 2 == 0 ? null : switch (i) {
                case 0 -> new long[0];
                case 1 -> new long[] {-1};
                case 2 -> new long[] {Long.MAX_VALUE};
                case 3 -> new long[9];
                case 4 -> new long[] {2, -3};
                default -> new long[] {1L << 40, 1L << 40};
            };
        }
        if (c == double[].class) {
            return switch (i) {
                case 0 -> new double[0];
                case 1 -> new double[] {Double.NaN};
                case 2 -> new double[] {1e300, -1e300};
                default -> new double[] {-1, Double.POSITIVE_INFINITY};
            };
        }
        if (c == boolean[].class) {
            return switch (i % 4) {
                case 0 -> new boolean[0];
                case 1 -> new boolean[] {true};
                case 2 -> new boolean[] {false, true, false, true};
                default -> new boolean[7];
            };
        }
        if (c == Number[].class) {
            return switch (i % 3) {
                case 0 -> new Number[0];
                case 1 -> new Number[] {Double.NaN};
                default -> new Number[] {1, 2.5, Scalar.complex(0, 1)};
            };
        }
        if (c == String.class) {
            return none ? null : new String[] {"", "nonsense", "mean", "\u00e9\u4e2d", "reflect", "a".repeat(300)}[i];
        }
        if (c == String[].class) {
            return i % 2 == 0 ? new String[0] : new String[] {"N", "C"};
        }
        if (c == Device.class) {
            return none ? null : new Device[] {Device.CPU, Device.cuda(0), new Device(DeviceType.META, -1),
                new Device(DeviceType.CPU, 7), new Device(DeviceType.CPU, -1), Device.cuda(-1)}[i];
        }
        if (c == Generator.class) {
            return null;
        }
        if (c.isEnum()) {
            Object[] cs = c.getEnumConstants();
            return none ? null : cs[(r + k) % cs.length];
        }
        throw new IllegalStateException("no sweep value for " + c);
    }

    static void read(Object o) {
        if (o instanceof Tensor t) {
            if (t.toString().isEmpty()) {
                throw new IllegalStateException("an empty rendering");
            }
            t.clone().close();
        } else if (o instanceof Object[] a) {
            for (Object x : a) {
                read(x);
            }
        }
    }

    static List<Method> operators() {
        List<Method> ms = new ArrayList<>();
        List<Class<?>> from = new ArrayList<>(List.of(Ops.class));
        if ("1".equals(System.getenv("CTORCH_SWEEP_UNSAFE"))) {
            from.add(Unchecked.class);
        }
        for (Class<?> c : from) {
            for (Method m : c.getMethods()) {
                if (Modifier.isStatic(m.getModifiers()) && m.getDeclaringClass().getPackageName().equals("org.ctorch")
                        && m.getDeclaringClass() != Object.class) {
                    ms.add(m);
                }
            }
        }
        ms.sort(Comparator.comparing((Method m) -> m.getDeclaringClass().getSimpleName().equals("Unchecked"))
                .thenComparing(Method::getName).thenComparing(m -> Arrays.toString(m.getParameterTypes())));
        return ms;
    }

    public static void main(String[] args) throws Exception {
        int start = args.length > 0 ? Integer.parseInt(args[0]) : 0;
        List<Method> ms = operators();
        int exceptions = 0;
        for (int i = start; i < ms.size(); i++) {
            Method m = ms.get(i);
            System.out.println("B " + i + " " + m.getName());
            System.out.flush();
            for (int r = 0; r < RECIPES; r++) {
                try (Scope s = Scope.open()) {
                    Class<?>[] ps = m.getParameterTypes();
                    Object[] a = new Object[ps.length];
                    for (int k = 0; k < ps.length; k++) {
                        a[k] = value(ps[k], r, k);
                    }
                    read(m.invoke(null, a));
                } catch (InvocationTargetException e) {
                    Throwable c = e.getCause();
                    if (!(c instanceof CTorchException || c instanceof NullPointerException
                            || c instanceof IllegalArgumentException || c instanceof ArithmeticException)) {
                        throw new AssertionError(m.getName() + ": an unexpected " + c, c);
                    }
                    exceptions++;
                } catch (CTorchException e) {
                    exceptions++; // reading a result failed cleanly
                }
            }
        }
        System.out.println("DONE " + ms.size() + " exceptions=" + exceptions);
    }
}
