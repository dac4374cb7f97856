package org.ctorch;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_DOUBLE;

import java.lang.foreign.MemorySegment;
import org.ctorch.raw.RawApi;
import org.ctorch.raw.Structs;

/**
 * torch.optim's optimizers over a module's parameters or a list of tensors, with torch's
 * defaults ({@code Optim.adamW(net, 1e-3)}: betas (0.9, 0.999), weight_decay 0.01), and the
 * step of a training loop ({@link #backwardStep}).
 */
public final class Optim {
    private Optim() {}

    /** An optimizer of kind over params, torch's defaults but lr. */
    public static Optimizer of(OptimizerKind kind, Tensor[] params, double lr) {
        Scratch s = Scratch.get();
        long m = s.mark();
        try {
            MemorySegment o = s.allocate(Structs.CTORCH_OPTIM_OPTIONS);
            Native.check(RawApi.optim_options_default(o, kind.value));
            o.set(JAVA_DOUBLE, Structs.CTORCH_OPTIM_OPTIONS_LR, lr);
            MemorySegment out = s.allocate(ADDRESS);
            MemorySegment hs = Tensor.useAll(params, s, "Optim.of", "params", false);
            try {
                Native.check(RawApi.optimizer_new(out, kind.value, hs, params.length, o));
            } finally {
                Tensor.doneAll(params);
            }
            return Optimizer.own(out.get(ADDRESS, 0));
        } finally {
            s.reset(m);
        }
    }

    /** An optimizer of kind over a module's parameters, torch's defaults but lr. */
    public static Optimizer of(OptimizerKind kind, NnModule net, double lr) {
        Scratch s = Scratch.get();
        long m = s.mark();
        try {
            MemorySegment o = s.allocate(Structs.CTORCH_OPTIM_OPTIONS);
            Native.check(RawApi.optim_options_default(o, kind.value));
            o.set(JAVA_DOUBLE, Structs.CTORCH_OPTIM_OPTIONS_LR, lr);
            MemorySegment out = s.allocate(ADDRESS);
            MemorySegment h = net.use();
            try {
                Native.check(RawApi.optimizer_new_from_module(out, kind.value, h, o));
            } finally {
                net.done();
            }
            return Optimizer.own(out.get(ADDRESS, 0));
        } finally {
            s.reset(m);
        }
    }

    /** {@code torch.optim.AdamW(net.parameters(), lr)}. */
    public static Optimizer adamW(NnModule net, double lr) {
        return of(OptimizerKind.ADAMW, net, lr);
    }

    /** {@code torch.optim.Adam(net.parameters(), lr)}. */
    public static Optimizer adam(NnModule net, double lr) {
        return of(OptimizerKind.ADAM, net, lr);
    }

    /** {@code torch.optim.SGD(net.parameters(), lr)}. */
    public static Optimizer sgd(NnModule net, double lr) {
        return of(OptimizerKind.SGD, net, lr);
    }

    /** {@code opt.zero_grad(); loss.backward(); opt.step()}: gradients set to None first
     * (PyTorch 2's default), so only this loss's count. */
    public static void backwardStep(Optimizer opt, Tensor loss) {
        opt.zeroGrad(true);
        loss.backward();
        opt.step();
    }

    /** LambdaLR's lr_lambda (MultiplicativeLR's): the factor for an epoch and a parameter group. */
    @FunctionalInterface
    public interface LrLambda {
        double factor(long epoch, long group);
    }

    /**
     * {@code torch.optim.lr_scheduler.LambdaLR(opt, lr_lambda)}: each group's lr is its initial lr
     * times fn(epoch, group); the initial step (epoch 0) is taken here, as PyTorch's constructor
     * does. An exception fn throws fails that step with a CTorchException whose cause it is (the
     * groups' lrs unchanged); it never reaches C.
     */
    public static LrScheduler lambdaLr(Optimizer opt, LrLambda fn) {
        return Upcalls.lrLambda(opt, LrSchedule.LAMBDA, fn);
    }

    /** {@code torch.optim.lr_scheduler.MultiplicativeLR(opt, lr_lambda)}: lr times fn(epoch, group) from epoch 1. */
    public static LrScheduler multiplicativeLr(Optimizer opt, LrLambda fn) {
        return Upcalls.lrLambda(opt, LrSchedule.MULTIPLICATIVE, fn);
    }
}
