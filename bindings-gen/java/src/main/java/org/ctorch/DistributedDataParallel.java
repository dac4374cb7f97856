package org.ctorch;

/**
 * torch.nn.parallel.DistributedDataParallel over c10d's own Reducer (the C API's
 * {@code ctorch_ddp_*}): the parameters are put in buckets whose all-reduce starts during
 * backward, as each bucket's gradients become ready, so that when backward returns every
 * {@code .grad} holds the group's average (no {@link Distributed#averageGradients} call).
 *
 * <pre>{@code
 * try (DistributedDataParallel ddp = new DistributedDataParallel(net, dist)) {
 *     opt.zeroGrad(true);
 *     try (DistributedDataParallel.NoSync off = ddp.noSync()) {
 *         ddp.forward(x1).mseLoss(y1).backward();  // accumulates .grad locally
 *     }
 *     ddp.forward(x2).mseLoss(y2).backward();      // averages both micro-batches' sum
 *     opt.step();
 * }
 * }</pre>
 *
 * <p>Making one is collective (every rank makes one over the same shapes) and copies rank 0's
 * parameters and buffers to every rank. Between a forward through the wrapper and the end of
 * its backward the group must not be used by other calls. The wrapper holds its module and
 * group, so neither is collected before it; {@link #close()} frees the Reducer (idempotent;
 * the module and group stay), and a wrapper never closed is freed by the Cleaner with its
 * handle. A failing call throws a {@link CTorchException} naming the C function; a call after
 * close() throws IllegalStateException.
 */
public final class DistributedDataParallel implements AutoCloseable {
    // ctorch_ddp_new's flags (include/ctorch.h, CTORCH_DDP_*; the values are part of the ABI).
    private static final long FIND_UNUSED_PARAMETERS = 1, GRADIENT_AS_BUCKET_VIEW = 2, NO_BROADCAST_BUFFERS = 4;

    /**
     * DistributedDataParallel's keywords; each setter returns this, and a new Options is DDP's
     * defaults (bucket_cap_mb 25, find_unused_parameters and gradient_as_bucket_view off,
     * broadcast_buffers on).
     */
    public static final class Options {
        double bucketCapMb = 0;
        boolean findUnusedParameters = false, gradientAsBucketView = false, broadcastBuffers = true;

        /** DDP's defaults. */
        public Options() {
        }

        /**
         * bucket_cap_mb: the buckets' cap in MiB (by default DDP's 25). As in DDP, the buckets
         * rebuilt after the first iteration start with one of 1 MiB.
         */
        public Options bucketCapMb(double mb) {
            if (!(mb > 0) || Double.isInfinite(mb)) {
                throw new CTorchException.InvalidArgument("DistributedDataParallel.Options.bucketCapMb: " + mb
                    + " is not a positive size");
            }
            bucketCapMb = mb;
            return this;
        }

        /** find_unused_parameters: parameters the forward did not use are marked ready, not waited for. */
        public Options findUnusedParameters(boolean on) {
            findUnusedParameters = on;
            return this;
        }

        /** gradient_as_bucket_view: each .grad is a view into its bucket, with no copy back. */
        public Options gradientAsBucketView(boolean on) {
            gradientAsBucketView = on;
            return this;
        }

        /** broadcast_buffers: rank 0's buffers are copied to every rank before each forward. */
        public Options broadcastBuffers(boolean on) {
            broadcastBuffers = on;
            return this;
        }

        long bytes() {
            return bucketCapMb == 0 ? 0 : Math.max(1, (long) (bucketCapMb * (1L << 20)));
        }

        long flags() {
            return (findUnusedParameters ? FIND_UNUSED_PARAMETERS : 0)
                | (gradientAsBucketView ? GRADIENT_AS_BUCKET_VIEW : 0)
                | (broadcastBuffers ? 0 : NO_BROADCAST_BUFFERS);
        }
    }

    private final Ddp ddp;
    private final NnModule module;
    private final Distributed group;
    private boolean sync = true; // guarded by this

    private DistributedDataParallel(Ddp ddp, NnModule module, Distributed group) {
        this.ddp = ddp;
        this.module = module;
        this.group = group;
    }

    private static Options orDefault(Options options) {
        return options == null ? new Options() : options;
    }

    /** group's handle; null is refused naming the call, as the C API refuses a NULL group. */
    private static ProcessGroup pg(String fn, Distributed group) {
        if (group == null) {
            throw new CTorchException.InvalidArgument("DistributedDataParallel." + fn + ": argument 'group' is null");
        }
        return group.processGroup();
    }

    /**
     * Wraps module ({@code DistributedDataParallel(module, process_group=group, ...)}); options
     * null is DDP's defaults. The Reducer covers the module's parameters that require grad, in
     * named-parameters order.
     */
    public DistributedDataParallel(NnModule module, Distributed group, Options options) {
        this(CApi.ddpNew(pg("DistributedDataParallel", group), module, orDefault(options).bytes(),
            orDefault(options).flags()), module, group);
    }

    /** {@link #DistributedDataParallel(NnModule, Distributed, Options)} with DDP's defaults. */
    public DistributedDataParallel(NnModule module, Distributed group) {
        this(module, group, null);
    }

    /**
     * The wrapper over parameters (leaf tensors that require grad) and buffers (may be empty) of
     * a model this binding does not hold, such as a TorchScript module's: its forward is then
     * {@link #preForward()}, your own call, and {@link #postForward}. The Reducer keeps its own
     * references to the tensors.
     */
    public static DistributedDataParallel ofParameters(Distributed group, Tensor[] parameters, Tensor[] buffers,
                                                       Options options) {
        Options o = orDefault(options);
        Tensor[] bs = buffers == null ? new Tensor[0] : buffers;
        return new DistributedDataParallel(CApi.ddpNewParams(pg("ofParameters", group), parameters, bs, o.bytes(),
            o.flags()), null, group);
    }

    /**
     * DDP's forward on a wrapper made over a module: {@link #preForward()}, the module's
     * forward on x, {@link #postForward} on its output. The caller owns the output.
     */
    public Tensor forward(Tensor x) {
        return ddp.forward(x);
    }

    /**
     * What DDP does before the module's forward: the buckets' rebuild after the first
     * iteration, preparing the Reducer, and (with broadcastBuffers) copying rank 0's buffers.
     * Collective.
     */
    public void preForward() {
        ddp.preForward();
    }

    /**
     * What DDP does after the module's forward: it arms the Reducer for the coming backward;
     * with findUnusedParameters it walks the graph from outputs to find the parameters the
     * forward did not use.
     */
    public void postForward(Tensor... outputs) {
        ddp.postForward(outputs);
    }

    /** The scope of {@link #noSync()}: close() restores what synchronisation was before it. */
    public final class NoSync implements AutoCloseable {
        private final boolean previous;
        private boolean closed;

        private NoSync(boolean previous) {
            this.previous = previous;
        }

        /** Ends the scope (again: a no-op). */
        @Override
        public void close() {
            synchronized (DistributedDataParallel.this) {
                if (closed) {
                    return;
                }
                closed = true;
                sync = previous;
                if (previous) {
                    ddp.setRequireSync(1);
                }
            }
        }
    }

    /**
     * DDP's {@code no_sync()}, for try-with-resources: the backwards of the forwards inside the
     * scope only accumulate .grad locally, with no communication; the first synchronised
     * backward after it averages what accumulated. Scopes nest.
     */
    public synchronized NoSync noSync() {
        ddp.setRequireSync(0);
        NoSync scope = new NoSync(sync);
        sync = false;
        return scope;
    }

    /** The number of buckets the Reducer has now (1 until the rebuild after the first iteration). */
    public long bucketCount() {
        return ddp.bucketCount();
    }

    /**
     * Bucket i's parameters as indices into the wrapper's parameters (the module's that require
     * grad, in named-parameters order, or those given to {@link #ofParameters}), in the
     * bucket's order; bucket 0 is reduced first.
     */
    public long[] bucketIndices(long i) {
        try (Tensor t = ddp.bucketIndices(i)) {
            return t.toLongArray();
        }
    }

    /** The wrapped module (null for a wrapper made by {@link #ofParameters}). */
    public NnModule module() {
        return module;
    }

    /** The group the gradients are averaged over. */
    public Distributed group() {
        return group;
    }

    /** The wrapper's handle, for the CApi.ddp* functions. */
    public Ddp handle() {
        return ddp;
    }

    /** Frees the Reducer (the module and group stay). Idempotent. */
    @Override
    public void close() {
        ddp.close();
    }
}
