import java.time.Duration;
import java.util.function.UnaryOperator;
import org.ctorch.*;
import org.ctorch.nn.*;

/**
 * Data-parallel training with the Java binding's Distributed under torchrun (ctest
 * dist_torchrun_java_binding: scripts/ddp -n 2 -- java ... DistTrain.java). Checks, on every
 * rank: the collectives (allReduce of rank + 1 is the sum 1 + ... + n, broadcast, allGather,
 * send/recv, barrier); a 2-layer MLP trained 20 SGD steps, each rank on its share of a fixed
 * global batch with averageGradients after backward, ends with parameters bit-identical on
 * every rank; and, on rank 0, those parameters equal within 1e-5 one process training the same
 * model on the whole global batch. Then the same model, from the same initial parameters on the
 * same data, trained through DistributedDataParallel (gradients averaged by c10d's Reducer during
 * backward) ends bit-identical to the averageGradients run (2 ranks: both divide by 2 exactly);
 * and one step of gradient accumulation (the first micro-batch under noSync) leaves the local
 * gradient after the noSync backward and, after the synchronised one, the sum of the two
 * micro-batches' synchronised gradients. Exits 1 naming the first failed check. --build-only:
 * exits at once (the test has the binding's classes compiled before torchrun starts the ranks).
 */
public class DistTrain {
    static final int GLOBAL_BATCH = 16, IN = 4, STEPS = 20;
    static final double LR = 0.1;
    static final long SEED = 7;

    static void check(boolean ok, String what) {
        if (!ok) {
            throw new AssertionError(what);
        }
    }

    /** The fixed global batch: inputs and targets from a 64-bit LCG (the same on every rank). */
    static Tensor[] globalBatch() {
        long s = 0x2545f4914f6cdd1dL;
        float[] x = new float[GLOBAL_BATCH * IN], y = new float[GLOBAL_BATCH];
        for (int i = 0; i < x.length + y.length; i++) {
            s = s * 6364136223846793005L + 1442695040888963407L;
            float v = ((s >>> 40) / (float) (1L << 24)) * 2f - 1f;
            if (i < x.length) x[i] = v; else y[i - x.length] = v;
        }
        return new Tensor[] {Tensor.of(x, GLOBAL_BATCH, IN), Tensor.of(y, GLOBAL_BATCH, 1)};
    }

    /** The MLP, its initial weights from the seed. */
    static NnModule model() {
        Torch.manualSeed(SEED);
        return new Sequential().add("0", new Linear(IN, 8)).add("1", new Tanh()).add("2", new Linear(8, 1)).build();
    }

    /** STEPS steps of SGD on (x, y); with a group, gradients averaged over it after backward. */
    static double train(NnModule net, Tensor x, Tensor y, Distributed dist) {
        return train(net, net::forward, x, y, dist);
    }

    /** {@link #train} with forward as the model's call (a DistributedDataParallel's). */
    static double train(NnModule net, UnaryOperator<Tensor> forward, Tensor x, Tensor y, Distributed dist) {
        Optimizer opt = Optim.sgd(net, LR);
        double last = 0;
        for (int i = 0; i < STEPS; i++) {
            try (Scope s = Torch.scope()) { // frees the step's tensors
                opt.zeroGrad(true);
                Tensor loss = forward.apply(x).mseLoss(y);
                loss.backward();
                if (dist != null) {
                    dist.averageGradients(net);
                }
                opt.step();
                last = loss.item();
            }
        }
        return last;
    }

    /** Every parameter's values, in order, as one array. */
    static float[] flat(NnModule net) {
        java.util.ArrayList<float[]> parts = new java.util.ArrayList<>();
        int n = 0;
        for (Tensor p : net.parameters()) {
            float[] v = p.detach().toFloatArray();
            parts.add(v);
            n += v.length;
        }
        float[] out = new float[n];
        int at = 0;
        for (float[] v : parts) {
            System.arraycopy(v, 0, out, at, v.length);
            at += v.length;
        }
        return out;
    }

    /** Every parameter's gradient, in order, as one array (zeros for none). */
    static float[] grads(NnModule net) {
        Tensor[] ps = net.parameters();
        float[][] parts = new float[ps.length][];
        int n = 0;
        for (int i = 0; i < ps.length; i++) {
            Tensor g = ps[i].grad();
            parts[i] = g == null ? new float[ps[i].detach().toFloatArray().length] : g.toFloatArray();
            n += parts[i].length;
        }
        float[] out = new float[n];
        int at = 0;
        for (float[] v : parts) {
            System.arraycopy(v, 0, out, at, v.length);
            at += v.length;
        }
        return out;
    }

    /** The backward of the mean squared error of forward(x) against y. */
    static void backward(UnaryOperator<Tensor> forward, Tensor x, Tensor y) {
        try (Scope s = Torch.scope()) {
            forward.apply(x).mseLoss(y).backward();
        }
    }

    static boolean sameBits(float[] a, float[] b) {
        boolean same = a.length == b.length;
        for (int k = 0; same && k < a.length; k++) {
            same = Float.floatToRawIntBits(a[k]) == Float.floatToRawIntBits(b[k]);
        }
        return same;
    }

    static float maxDiff(float[] a, float[] b) {
        float d = 0;
        for (int k = 0; k < a.length; k++) d = Math.max(d, Math.abs(a[k] - b[k]));
        return d;
    }

    /**
     * DistributedDataParallel against the averageGradients run (avg: its final parameters) on
     * the same model, data (this rank's rows) and initial parameters.
     */
    static void checkDdp(Distributed dist, float[] avg, Tensor xs, Tensor ys) {
        int r = dist.getRank();
        NnModule net = model();
        DistributedDataParallel kept;
        try (DistributedDataParallel ddp = new DistributedDataParallel(net, dist)) {
            kept = ddp;
            train(net, ddp::forward, xs, ys, null);
            float[] got = flat(net);
            check(sameBits(got, avg), "rank " + r + ": DistributedDataParallel's parameters differ from "
                + "averageGradients' (max |difference| " + maxDiff(got, avg) + ")");
            long buckets = ddp.bucketCount();
            check(buckets >= 1, "rank " + r + ": " + buckets + " buckets");
            int held = 0;
            for (long b = 0; b < buckets; b++) held += ddp.bucketIndices(b).length;
            int nParams = net.parameters().length;
            check(held == nParams, "rank " + r + ": the buckets hold " + held + " parameters, the model " + nParams);

            // Gradient accumulation: two micro-batches of this rank's rows, the first under noSync.
            long q = xs.shape()[0] / 2;
            Tensor x1 = xs.narrow(0, 0, q), y1 = ys.narrow(0, 0, q), x2 = xs.narrow(0, q, q), y2 = ys.narrow(0, q, q);
            net.zeroGrad(true);
            backward(net::forward, x1, y1);
            float[] local = grads(net);
            net.zeroGrad(true);
            backward(ddp::forward, x1, y1);
            float[] synced1 = grads(net);
            net.zeroGrad(true);
            backward(ddp::forward, x2, y2);
            float[] synced2 = grads(net);
            check(!sameBits(local, synced1), "rank " + r + ": the synchronised gradient is the local one");
            net.zeroGrad(true);
            try (DistributedDataParallel.NoSync off = ddp.noSync()) {
                backward(ddp::forward, x1, y1);
            }
            float[] under = grads(net);
            check(sameBits(under, local), "rank " + r + ": under noSync the gradient is not the local one "
                + "(max |difference| " + maxDiff(under, local) + ")");
            backward(ddp::forward, x2, y2);
            float[] sum = new float[synced1.length];
            for (int k = 0; k < sum.length; k++) sum[k] = synced1[k] + synced2[k];
            float diff = maxDiff(grads(net), sum);
            check(diff <= 1e-6f, "rank " + r + ": the accumulated gradient vs the sum of the two micro-batches' "
                + "synchronised gradients: max |difference| " + diff + " > 1e-6");
            System.out.printf("rank %d: DistributedDataParallel: %d steps bit-identical to averageGradients, "
                + "buckets: %d; accumulation under noSync max |difference| %.3g%n", r, STEPS, buckets, diff);
        }
        kept.close(); // idempotent
        try {
            kept.bucketCount();
            check(false, "rank " + r + ": bucketCount after close() succeeded");
        } catch (IllegalStateException e) {
            // a closed wrapper refuses every call
        }
    }

    static void collectives(Distributed dist) {
        int r = dist.getRank(), n = dist.getWorldSize();
        Tensor t = Tensor.of(new float[] {r + 1f}, 1);
        dist.allReduce(t, ReduceOp.SUM);
        float want = n * (n + 1) / 2f;
        check(t.toFloatArray()[0] == want, "allReduce of rank + 1 gave " + t.toFloatArray()[0] + ", not " + want);
        Tensor b = Tensor.of(new float[] {r * 10f + 5f}, 1);
        dist.broadcast(b, 0);
        check(b.toFloatArray()[0] == 5f, "broadcast from 0 gave " + b.toFloatArray()[0]);
        Tensor[] outs = new Tensor[n];
        for (int i = 0; i < n; i++) outs[i] = Tensor.of(new long[] {-1}, 1);
        dist.allGather(outs, Tensor.of(new long[] {r}, 1));
        for (int i = 0; i < n; i++) check(outs[i].toLongArray()[0] == i, "allGather[" + i + "] = " + outs[i].toLongArray()[0]);
        if (n >= 2 && r < 2) {
            if (r == 0) {
                dist.send(Tensor.of(new double[] {1.5, 2.5, 3.5}, 3), 1, 7);
            } else {
                Tensor m = Tensor.of(new double[3], 3);
                dist.recv(m, 0, 7);
                check(java.util.Arrays.equals(m.toDoubleArray(), new double[] {1.5, 2.5, 3.5}),
                    "recv from 0 gave " + java.util.Arrays.toString(m.toDoubleArray()));
            }
        }
        try {
            dist.broadcast(b, n);
            check(false, "broadcast from rank " + n + " of " + n + " succeeded");
        } catch (CTorchException.InvalidArgument e) {
            check(e.getMessage().contains("src"), "broadcast from rank " + n + ": the error names no src: " + e);
        }
        dist.barrier();
        System.out.println("rank " + r + ": allReduce of rank + 1 = " + want + ", broadcast, allGather, send/recv, barrier ok");
    }

    public static void main(String[] args) {
        if (java.util.List.of(args).contains("--build-only")) {
            return;
        }
        CApi.setNumThreads(1);
        try (Distributed dist = Distributed.initProcessGroup("gloo", Duration.ofSeconds(60))) {
            int r = dist.getRank(), n = dist.getWorldSize();
            check(dist.getBackend().equals("gloo"), "backend " + dist.getBackend());
            check(GLOBAL_BATCH % n == 0, n + " ranks do not divide the global batch of " + GLOBAL_BATCH);
            collectives(dist);

            Tensor[] xy = globalBatch();
            long share = GLOBAL_BATCH / n;
            Tensor xs = xy[0].narrow(0, r * share, share), ys = xy[1].narrow(0, r * share, share);
            NnModule net = model();
            dist.broadcastParameters(net, 0);
            double loss = train(net, xs, ys, dist);
            float[] mine = flat(net);

            // (a) Every rank's parameters, gathered, bit for bit those of this rank.
            Tensor[] gathered = dist.allGather(Tensor.of(mine, mine.length));
            for (int i = 0; i < gathered.length; i++) {
                float[] theirs = gathered[i].toFloatArray();
                boolean same = theirs.length == mine.length;
                for (int k = 0; same && k < mine.length; k++) {
                    same = Float.floatToRawIntBits(theirs[k]) == Float.floatToRawIntBits(mine[k]);
                }
                check(same, "rank " + r + ": rank " + i + "'s parameters differ from this rank's");
            }
            System.out.printf("rank %d: %d steps on %d of %d rows, last local loss %.6f; %d parameters bit-identical on all %d ranks%n",
                r, STEPS, share, GLOBAL_BATCH, loss, mine.length, n);

            // (b) On rank 0: one process on the whole global batch.
            if (r == 0) {
                NnModule single = model();
                double singleLoss = train(single, xy[0], xy[1], null);
                float[] want = flat(single), init = flat(model());
                float diff = 0, moved = 0;
                for (int k = 0; k < want.length; k++) {
                    diff = Math.max(diff, Math.abs(want[k] - mine[k]));
                    moved = Math.max(moved, Math.abs(want[k] - init[k]));
                }
                check(diff <= 1e-5f, "max |data parallel - single process| = " + diff + " > 1e-5");
                check(moved > 1e-3f, "training moved the parameters by only " + moved);
                System.out.printf("rank 0: single process on %d rows (last loss %.6f): max |difference| %.3g <= 1e-5 "
                    + "(training moved them by up to %.4f)%n", GLOBAL_BATCH, singleLoss, diff, moved);
            }
            checkDdp(dist, mine, xs, ys);
            dist.barrier();
        } catch (AssertionError | CTorchException e) {
            System.err.println("FAIL: " + e.getMessage());
            System.exit(1);
        }
    }
}
