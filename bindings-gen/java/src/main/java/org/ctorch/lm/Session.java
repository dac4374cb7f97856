package org.ctorch.lm;

import org.ctorch.CApi;
import org.ctorch.LmSession;
import org.ctorch.Tensor;

/** A KV cache of sequences 0..nSeq-1 over one model. */
public final class Session implements AutoCloseable {
    final LmSession s;

    Session(LmSession s) {
        this.s = s;
    }

    /**
     * Appends tokens to sequence seq: the float32 logits of the last position ([1, V]), or of
     * every new one ([tokens.length, V]) with allLogits.
     */
    public Tensor decode(long seq, long[] tokens, boolean allLogits) {
        return CApi.lmDecode(s, seq, tokens, allLogits);
    }

    /** The number of positions sequence seq holds. */
    public long length(long seq) {
        return s.length(seq);
    }

    /** Forgets sequence seq from position pos on. */
    public void rewind(long seq, long pos) {
        s.rewind(seq, pos);
    }

    /** Sequence dst becomes a copy of sequence src's first pos positions. */
    public void fork(long dst, long src, long pos) {
        s.fork(dst, src, pos);
    }

    /**
     * A generation continuing sequence seq with prompt (empty: from what it holds); the
     * session is held until the generation ends or is closed.
     */
    public Generation generate(long seq, long[] prompt, GenerateOptions o) {
        return new Generation(s, null, seq, prompt, o);
    }

    @Override
    public void close() {
        s.close();
    }
}
