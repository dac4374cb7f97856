package org.ctorch.lm;

import org.ctorch.CApi;
import org.ctorch.LmSampler;
import org.ctorch.Tensor;

/** A sampler chain with its own seeded generator (the sampler part of {@link GenerateOptions}). */
public final class Sampler implements AutoCloseable {
    final LmSampler s;

    /** The chain the options describe (their stop conditions aside). */
    public Sampler(GenerateOptions o) {
        s = CApi.lmSamplerNew(o.samplerText());
    }

    /** The scores after the chain's processors, given the ids so far. */
    public Tensor apply(Tensor logits, long... history) {
        return s.apply(logits, history);
    }

    /** One id drawn from logits ([V] or [1, V]), given the ids so far. */
    public long sample(Tensor logits, long... history) {
        return s.sample(logits, history);
    }

    @Override
    public void close() {
        s.close();
    }
}
