package org.ctorch.lm;

import java.util.ArrayList;
import java.util.List;

/**
 * One generation's options: the sampler chain (in transformers' order: repetition penalty,
 * the OpenAI API's frequency and presence penalties, temperature, top-k, top-p, min-p, a
 * seeded draw), when it stops, and the session's size. Each setter returns this; the
 * defaults are greedy decoding until the end-of-sequence id or the full context.
 */
public final class GenerateOptions {
    double repetitionPenalty = 1, frequencyPenalty = 0, presencePenalty = 0, temperature = 0, topP = 1, minP = 0;
    long topK = 0, seed = 0, maxTokens = 0, nCtx = 0;
    boolean keepSpecial = false;
    final List<String> stop = new ArrayList<>();
    final List<Long> stopIds = new ArrayList<>();

    /** Greedy decoding until the end-of-sequence id or the full context. */
    public GenerateOptions() {
    }

    /** New ids at most (0: until the context is full). */
    public GenerateOptions maxTokens(long n) {
        maxTokens = n;
        return this;
    }

    /** 0 is greedy. */
    public GenerateOptions temperature(double t) {
        temperature = t;
        return this;
    }

    /** 1 is off. */
    public GenerateOptions topP(double p) {
        topP = p;
        return this;
    }

    /** 0 is off. */
    public GenerateOptions topK(long k) {
        topK = k;
        return this;
    }

    /** 0 is off. */
    public GenerateOptions minP(double p) {
        minP = p;
        return this;
    }

    /** transformers' RepetitionPenaltyLogitsProcessor; 1 is off. */
    public GenerateOptions repetitionPenalty(double p) {
        repetitionPenalty = p;
        return this;
    }

    /** The OpenAI API's frequency penalty; 0 is off. */
    public GenerateOptions frequencyPenalty(double p) {
        frequencyPenalty = p;
        return this;
    }

    /** The OpenAI API's presence penalty; 0 is off. */
    public GenerateOptions presencePenalty(double p) {
        presencePenalty = p;
        return this;
    }

    /** The draw's generator seed. */
    public GenerateOptions seed(long s) {
        seed = s;
        return this;
    }

    /** Adds stop strings: the text ends before the first of them. */
    public GenerateOptions stop(String... texts) {
        stop.addAll(List.of(texts));
        return this;
    }

    /** Adds ids that end the generation. */
    public GenerateOptions stopIds(long... ids) {
        for (long id : ids) {
            stopIds.add(id);
        }
        return this;
    }

    /** Special tokens give their text (by default they give none). */
    public GenerateOptions keepSpecial(boolean keep) {
        keepSpecial = keep;
        return this;
    }

    /** The session's positions (0: the prompt and maxTokens, or the training context when maxTokens is 0). */
    public GenerateOptions nCtx(long n) {
        nCtx = n;
        return this;
    }

    /** The C API's sampler options text. */
    String samplerText() {
        return "repetition_penalty=" + repetitionPenalty + ",frequency_penalty=" + frequencyPenalty
            + ",presence_penalty=" + presencePenalty + ",temperature=" + temperature + ",top_k=" + topK
            + ",top_p=" + topP + ",min_p=" + minP + ",seed=" + seed;
    }

    /** The C API's stream options text. */
    String streamText() {
        return (maxTokens > 0 ? "max_tokens=" + maxTokens + "," : "") + "skip_special=" + (keepSpecial ? 0 : 1);
    }
}
