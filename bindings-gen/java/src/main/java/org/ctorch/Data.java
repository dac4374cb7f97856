package org.ctorch;

import java.util.Iterator;
import java.util.NoSuchElementException;

/** Data sets and loaders: MNIST-format files, {@code DataLoader(TensorDataset(x, y), ...)},
 * an epoch's batches as an Iterable, and top-k accuracy over a loader. */
public final class Data {
    private Data() {}

    /** The MNIST-format IDX files in dir (train or t10k): {images uint8 [N, 28, 28], labels int64 [N]}. */
    public static Tensor[] readMnist(String dir, boolean train) {
        Object[] r = CApi.dataMnistReadDir(dir, train);
        return new Tensor[] {(Tensor) r[0], (Tensor) r[1]};
    }

    /** {@code DataLoader(TensorDataset(data, targets), batch_size, shuffle, drop_last)}, shuffled
     * per epoch with a generator seeded from seed and the epoch (the loader keeps its own references). */
    public static DataLoader loader(Tensor data, Tensor targets, long batchSize, boolean shuffle, long seed,
                                    boolean dropLast) {
        return CApi.dataLoaderNew(data, targets, batchSize, shuffle, seed, dropLast);
    }

    /** A loader's per-item transform: {data, target} of the dataset item at index (null, or the
     * tensor given: that one unchanged). The tensors given are valid during the call. */
    @FunctionalInterface
    public interface ItemTransform {
        Tensor[] apply(long index, Tensor data, Tensor target);
    }

    /**
     * Runs fn on every item the loader takes, before the items are stacked into a batch (null
     * removes it). With worker threads it runs on them, several at once. An exception fn throws
     * fails that batch's next() with a CTorchException naming the callback and the item (its
     * cause on the thread that ran fn, when that is the caller's: no workers); it never reaches C.
     */
    public static void transform(DataLoader loader, ItemTransform fn) {
        Upcalls.setTransform(loader, fn);
    }

    /** Starts epoch e of the loader (reshuffles, rewinds) and gives its batches {x, y}; each
     * batch's tensors are the caller's (a {@link Scope} around the loop body frees them). */
    public static Iterable<Tensor[]> epoch(DataLoader loader, long e) {
        if (loader == null) {
            throw Conv.npe("epoch", "loader");
        }
        loader.startEpoch(e);
        return () -> new Iterator<>() {
            private Tensor[] next;
            private boolean done;

            @Override
            public boolean hasNext() {
                if (next == null && !done) {
                    Object[] r = loader.next();
                    if ((Boolean) r[0]) {
                        next = new Tensor[] {(Tensor) r[1], (Tensor) r[2]};
                    } else {
                        done = true;
                    }
                }
                return next != null;
            }

            @Override
            public Tensor[] next() {
                if (!hasNext()) {
                    throw new NoSuchElementException();
                }
                Tensor[] b = next;
                next = null;
                return b;
            }
        };
    }

    /** k as ctorch's metrics take it (ctorch_metric_top_k_accuracy refuses k < 1 too): top-0
     * would count no row a hit and report an accuracy of 0. */
    private static void checkK(String fn, long k) {
        if (k < 1) {
            throw new IllegalArgumentException(fn + ": argument 'k' must be >= 1, got " + k);
        }
    }

    /** The number of rows of scores [N, C] whose target class (int64 [N]) is among the k
     * highest (k = 1: the argmax), without recording a graph. */
    public static long topKHits(Tensor scores, Tensor target, long k) {
        checkK("topKHits", k);
        return Torch.noGrad(() -> {
            try (Scope _ = Scope.open()) {
                Tensor hit = k == 1 ? scores.argmax(1L, false).eq(target)
                        : scores.topk(k, 1, true, true)[1].eq(target.unsqueeze(1));
                return hit.sum().itemLong();
            }
        });
    }

    /** Top-k accuracy for each k over one pass (epoch 0) of loader, under inference mode, in the
     * module's current mode (call train(false) first for dropout or batch norm). */
    public static double[] topKAccuracy(NnModule net, DataLoader loader, long... ks) {
        if (ks == null) {
            throw Conv.npe("topKAccuracy", "ks");
        }
        for (long k : ks) {
            checkK("topKAccuracy", k); // before the pass, as the C metrics refuse it
        }
        if (net == null || loader == null) {
            throw Conv.npe("topKAccuracy", net == null ? "net" : "loader");
        }
        return Torch.inferenceMode(() -> {
            long[] hits = new long[ks.length];
            long rows = 0;
            for (Tensor[] b : epoch(loader, 0)) {
                try (Scope s = Scope.open()) {
                    s.adoptAll(b); // the batch's tensors too
                    Tensor logits = net.forward(b[0]);
                    for (int i = 0; i < ks.length; i++) {
                        hits[i] += topKHits(logits, b[1], ks[i]);
                    }
                    rows += b[1].numel();
                }
            }
            if (rows == 0) {
                throw new IllegalStateException("topKAccuracy: the loader has no rows");
            }
            double[] out = new double[ks.length];
            for (int i = 0; i < ks.length; i++) {
                out[i] = (double) hits[i] / rows;
            }
            return out;
        });
    }
}
