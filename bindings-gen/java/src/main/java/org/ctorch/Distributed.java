package org.ctorch;

import java.time.Duration;
import java.util.OptionalInt;

/**
 * Training past one process: torch.distributed's vocabulary over ctorch's process groups
 * (c10d's Gloo; NCCL where ctorch is built with it), for programs that torchrun starts or
 * that meet at a {@link TCPStore}.
 *
 * <pre>{@code
 * try (Distributed dist = Distributed.initProcessGroup("gloo", Duration.ofMinutes(1))) {
 *     Tensor t = Tensor.of(new float[] {dist.getRank() + 1f}, 1);
 *     dist.allReduce(t, ReduceOp.SUM);                 // the sum over the ranks, in place
 *     ...
 *     dist.averageGradients(net);                      // after backward, before the step
 * }                                                    // close(): destroy_process_group
 * }</pre>
 *
 * <p>The wire is c10d's own: ranks of this binding, of ctorch's C API, of the other
 * bindings and of PyTorch's {@code torch.distributed} of the same generation share a group.
 * What differs from torch.distributed: the group is this object (no default group);
 * {@code ReduceOp.AVG} works on Gloo (a SUM, then a division); {@code recv} needs its
 * {@code src}; {@link #averageGradients} and {@link #broadcastParameters} are ctorch's
 * data-parallel helpers (bucketed collectives), and {@link DistributedDataParallel} is
 * torch.nn.parallel's, over c10d's own Reducer. Every failing call throws a
 * {@link CTorchException} naming the C function; a rank out of range throws
 * {@link CTorchException.InvalidArgument} before anything is sent, so every rank fails alike.
 */
public final class Distributed implements AutoCloseable {
    private final ProcessGroup pg;
    private final int rank;
    private final int worldSize;
    private final int localRank;

    private Distributed(ProcessGroup pg, int localRank) {
        this.pg = pg;
        this.localRank = localRank;
        this.rank = pg.rank();
        this.worldSize = pg.size();
    }

    /** Milliseconds for the C calls: null is 0, the C default; zero or negative is refused. */
    static long millis(String fn, Duration timeout) {
        if (timeout == null) {
            return 0;
        }
        if (timeout.isZero() || timeout.isNegative()) {
            throw new CTorchException.InvalidArgument("Distributed." + fn + ": timeout " + timeout
                + " is not a positive duration");
        }
        return Math.max(1, timeout.toMillis());
    }

    /**
     * The group from torchrun's environment (Python's {@code init_process_group(backend,
     * init_method="env://")}): MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE, and LOCAL_RANK when
     * set. backend: "gloo" (or "nccl" where {@code CApi.distNcclAvailable()} says so); timeout
     * bounds the rendezvous and every collective (null: 30 minutes, torch's default).
     */
    public static Distributed initProcessGroup(String backend, Duration timeout) {
        Object[] r = CApi.distInitFromEnv(backend, millis("initProcessGroup", timeout));
        return new Distributed((ProcessGroup) r[0], (Integer) r[1]);
    }

    /** {@link #initProcessGroup(String, Duration)} with Gloo and torch's default timeout. */
    public static Distributed initProcessGroup() {
        return initProcessGroup("gloo", null);
    }

    /**
     * A Gloo group of worldSize ranks that meet at store; this process is rank. Blocks until
     * every rank joined or timeout (null: 30 minutes) passed. The store stays the caller's.
     */
    public static Distributed initProcessGroup(TCPStore store, int rank, int worldSize, Duration timeout) {
        return new Distributed(CApi.processGroupNewGloo(store.store, rank, worldSize,
            millis("initProcessGroup", timeout)), -1);
    }

    /** torch.distributed.TCPStore: the key-value store ranks meet at. */
    public static final class TCPStore implements AutoCloseable {
        final Store store;

        /**
         * Connects to (isMaster: serves) the store at host:port; port 0 with isMaster lets the
         * OS pick one ({@link #port}). worldSize: the number of ranks (-1: unknown); timeout
         * bounds connecting and every later call on the store (null: 300 s).
         */
        public TCPStore(String host, int port, int worldSize, boolean isMaster, Duration timeout) {
            store = CApi.storeTcpNew(host, port, worldSize, isMaster, millis("TCPStore", timeout));
        }

        /** The port the store listens at (the OS's pick when made with port 0). */
        public int port() {
            return CApi.storePort(store);
        }

        /** Drops this handle (groups made on the store keep their own reference). */
        @Override
        public void close() {
            store.close();
        }
    }

    /** This process's rank, 0 to getWorldSize() - 1. */
    public int getRank() {
        return rank;
    }

    /** The number of ranks. */
    public int getWorldSize() {
        return worldSize;
    }

    /** LOCAL_RANK as torchrun set it (the rank's GPU); empty when unset or for a group made at a store. */
    public OptionalInt getLocalRank() {
        return localRank < 0 ? OptionalInt.empty() : OptionalInt.of(localRank);
    }

    /** "gloo" or "nccl". */
    public String getBackend() {
        return pg.backend();
    }

    /** The group's handle, for the CApi.dist* functions this class has no method for (gather, scatter, reduce, the async forms). */
    public ProcessGroup processGroup() {
        return pg;
    }

    private int peer(String fn, String arg, int r) {
        if (r < 0 || r >= worldSize) {
            throw new CTorchException.InvalidArgument("Distributed." + fn + ": argument '" + arg + "' = " + r
                + " is not a rank of this group of " + worldSize);
        }
        return r;
    }

    /** In place: tensor = op over every rank's tensor. */
    public void allReduce(Tensor tensor, ReduceOp op) {
        CApi.distAllReduce(pg, tensor, op);
    }

    /** In place: tensor = the sum over every rank's tensor. */
    public void allReduce(Tensor tensor) {
        allReduce(tensor, ReduceOp.SUM);
    }

    /** In place: every rank's tensor = rank src's. */
    public void broadcast(Tensor tensor, int src) {
        CApi.distBroadcast(pg, tensor, peer("broadcast", "src", src));
    }

    /** outputs[i] = rank i's tensor, written in place (one output per rank, shaped like tensor). */
    public void allGather(Tensor[] outputs, Tensor tensor) {
        CApi.distAllGather(pg, outputs, tensor);
    }

    /** Every rank's tensor as new tensors, element i from rank i (the caller closes them). */
    public Tensor[] allGather(Tensor tensor) {
        return CApi.distAllGatherList(pg, tensor);
    }

    /** Returns when every rank reached it. */
    public void barrier() {
        CApi.distBarrier(pg);
    }

    /** Sends tensor to rank dst (not this one); the recv with the same tag there takes it. */
    public void send(Tensor tensor, int dst, int tag) {
        CApi.distSend(pg, tensor, peer("send", "dst", dst), tag);
    }

    /** send with tag 0. */
    public void send(Tensor tensor, int dst) {
        send(tensor, dst, 0);
    }

    /** Receives into tensor (the sender's shape and dtype) what rank src sends with tag. */
    public void recv(Tensor tensor, int src, int tag) {
        CApi.distRecv(pg, tensor, peer("recv", "src", src), tag);
    }

    /** recv with tag 0. */
    public void recv(Tensor tensor, int src) {
        recv(tensor, src, 0);
    }

    /**
     * Averages each parameter's gradient over the group, in buckets of 25 MiB
     * (DistributedDataParallel's default): call it after backward and before the optimizer's
     * step. A parameter without a gradient gets zeros first, so every rank issues the same
     * collectives.
     */
    public void averageGradients(Tensor[] parameters) {
        CApi.distAverageGradients(pg, parameters, 0);
    }

    /** {@link #averageGradients(Tensor[])} over a module's parameters. */
    public void averageGradients(NnModule module) {
        Tensor[] ps = module.parameters();
        try {
            averageGradients(ps);
        } finally {
            closeAll(ps);
        }
    }

    /** Copies rank src's parameter values to every rank (before training, so all ranks start equal). */
    public void broadcastParameters(Tensor[] parameters, int src) {
        CApi.distBroadcastParameters(pg, parameters, peer("broadcastParameters", "src", src));
    }

    /** {@link #broadcastParameters(Tensor[], int)} over a module's parameters. */
    public void broadcastParameters(NnModule module, int src) {
        Tensor[] ps = module.parameters();
        try {
            broadcastParameters(ps, src);
        } finally {
            closeAll(ps);
        }
    }

    private static void closeAll(Tensor[] ts) {
        for (Tensor t : ts) {
            t.close();
        }
    }

    /**
     * Shuts the group down (waits for queued work, bounded by the group's timeout) and frees it
     * (torch's destroy_process_group). Idempotent; a failed shutdown throws after the free.
     */
    @Override
    public void close() {
        if (pg.isClosed()) {
            return;
        }
        try {
            pg.destroy();
        } finally {
            pg.close();
        }
    }
}
