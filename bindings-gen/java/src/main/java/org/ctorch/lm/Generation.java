package org.ctorch.lm;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.Spliterator;
import java.util.Spliterators;
import java.util.stream.Stream;
import java.util.stream.StreamSupport;
import org.ctorch.CApi;
import org.ctorch.LmSession;
import org.ctorch.LmStream;

/**
 * A generation in progress: an Iterator of text pieces (never a split character, never a
 * part of a stop string), or a {@link #stream()} of them. Closing it ends the generation
 * and gives its session back; it closes itself once it has ended.
 */
public final class Generation implements Iterator<String>, AutoCloseable {
    private LmStream st;
    private LmSession owned; // the session Model.generate made for it
    private final List<Long> ids = new ArrayList<>();
    private final StringBuilder text = new StringBuilder();
    private String reason = "";
    private String pending;

    Generation(LmSession s, LmSession owned, long seq, long[] prompt, GenerateOptions o) {
        try (Sampler sampler = new Sampler(o)) { // the stream keeps its own reference
            st = CApi.lmStreamNew(s, seq, sampler.s, prompt, o.streamText());
        }
        this.owned = owned;
        try {
            for (String stop : o.stop) {
                st.stopString(stop);
            }
            for (long id : o.stopIds) {
                st.stopToken(id);
            }
        } catch (RuntimeException e) {
            st.close();
            throw e;
        }
    }

    @Override
    public boolean hasNext() {
        while (pending == null && st != null) {
            Object[] r = st.next();
            String piece = (String) r[0];
            long id = (Long) r[1];
            if (id >= 0) {
                ids.add(id);
            }
            if ((Integer) r[2] != 0) {
                reason = st.finishReason();
                close();
            }
            if (!piece.isEmpty()) {
                pending = piece;
            }
        }
        return pending != null;
    }

    @Override
    public String next() {
        if (!hasNext()) {
            throw new NoSuchElementException("Generation: it has ended (" + reason + ")");
        }
        String p = pending;
        pending = null;
        text.append(p);
        return p;
    }

    /** The pieces as a sequential Stream; closing the Stream closes the generation. */
    public Stream<String> stream() {
        return StreamSupport.stream(Spliterators.spliteratorUnknownSize(this, Spliterator.ORDERED | Spliterator.NONNULL),
            false).onClose(this::close);
    }

    /** Runs the generation to its end: all of its text (what was already read included). */
    public String text() {
        forEachRemaining(p -> { });
        return text.toString();
    }

    /** The ids generated so far (a stop id included). */
    public long[] ids() {
        return ids.stream().mapToLong(Long::longValue).toArray();
    }

    /** "stop" or "length" once the generation ended, "" before. */
    public String finishReason() {
        return reason;
    }

    /** Ends the generation now (what its session holds stays). */
    @Override
    public void close() {
        if (st != null) {
            st.close();
            st = null;
        }
        if (owned != null) {
            owned.close();
            owned = null;
        }
    }
}
