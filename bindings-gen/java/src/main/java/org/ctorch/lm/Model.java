package org.ctorch.lm;

import java.util.List;
import org.ctorch.CApi;
import org.ctorch.LmModel;
import org.ctorch.LmSession;
import org.ctorch.Tensor;

/** A loaded language model: weights, configuration, tokenizer, chat template. */
public final class Model implements AutoCloseable {
    final LmModel m;

    private Model(LmModel m) {
        this.m = m;
    }

    /** Loads a folder as save_pretrained writes it, or a GGUF file, in float32 on the CPU. */
    public static Model load(String path) {
        return new Model(CApi.lmLoad(path, null));
    }

    /**
     * Loads with a dtype ("float32", "bfloat16", "float16") and a device ("cpu", "cuda",
     * "cuda:N"); null for the default.
     */
    public static Model load(String path, String dtype, String device) {
        return load(path, dtype, device, null, null);
    }

    /**
     * Loads with a dtype and a device (as above), weights ("packed": a GGUF file's quantised
     * matrices multiplied as they are on the CPU, the default; "dequantize": turned into floats
     * as they load) and quantize ("q8_0", "q4_0", "q4_1": float matrices packed as they load,
     * on the CPU); null for the default.
     */
    public static Model load(String path, String dtype, String device, String weights, String quantize) {
        return load(path, dtype, device, weights, quantize, null);
    }

    /**
     * Loads as above, with activations: "float" (the default) or "int8" (the packed matrices
     * multiply activations rounded to 8 bits, as llama.cpp does, on CPUs with AVX-512 VNNI).
     */
    public static Model load(String path, String dtype, String device, String weights, String quantize,
                             String activations) {
        StringBuilder o = new StringBuilder();
        String[][] options = {{"dtype", dtype}, {"device", device}, {"weights", weights}, {"quantize", quantize},
                              {"activations", activations}};
        for (String[] kv : options) {
            if (kv[1] != null) {
                if (kv[1].contains(",") || kv[1].contains("=")) {
                    throw new IllegalArgumentException("Model.load: " + kv[0] + " may not contain ',' or '='");
                }
                o.append(o.length() > 0 ? "," : "").append(kv[0]).append('=').append(kv[1]);
            }
        }
        return new Model(CApi.lmLoad(path, o.length() > 0 ? o.toString() : null));
    }

    /** The generated handle, for the CApi.lm* functions. */
    public LmModel handle() {
        return m;
    }

    /** ctorch_lm_describe's JSON object: architecture, n_layer, n_vocab, n_ctx_train, bos, eos, ... */
    public String describe() {
        return CApi.lmDescribe(m);
    }

    /**
     * The ids of text, as transformers' tokenizer(text, add_special_tokens=addSpecial);
     * special tokens written in the text are single ids.
     */
    public long[] tokenize(String text, boolean addSpecial) {
        try (Tensor t = CApi.lmTokenize(m, text, addSpecial, true)) {
            return t.toLongArray();
        }
    }

    /** The text of ids, as transformers' decode(ids, skip_special_tokens=skipSpecial). */
    public String detokenize(long[] ids, boolean skipSpecial) {
        return CApi.lmDetokenize(m, ids, skipSpecial);
    }

    /**
     * messages through the model's chat template, or through template (a template's text or
     * "chatml", "llama2", "llama3", "mistral", "zephyr"; null for the model's own), as
     * transformers' apply_chat_template(messages, tokenize=False, add_generation_prompt=...).
     */
    public String applyTemplate(List<Message> messages, boolean addGenerationPrompt, String template) {
        return CApi.lmChatApply(m, Message.json(messages), addGenerationPrompt, template);
    }

    /**
     * The prompt of a chat: the template with the generation prompt, tokenized without adding
     * specials (as apply_chat_template(tokenize=True)).
     */
    public long[] chatIds(List<Message> messages) {
        return tokenize(applyTemplate(messages, true, null), false);
    }

    /** A KV cache of nSeq sequences of nCtx positions each (0: the training context). */
    public Session session(long nCtx, long nSeq) {
        return new Session(CApi.lmSessionNew(m, nCtx, nSeq));
    }

    /** A generation from ids in a session of its own. */
    public Generation generate(long[] prompt, GenerateOptions o) {
        long nCtx = o.nCtx == 0 && o.maxTokens > 0 ? prompt.length + o.maxTokens : o.nCtx;
        LmSession s = CApi.lmSessionNew(m, nCtx, 1);
        try {
            return new Generation(s, s, 0, prompt, o);
        } catch (RuntimeException e) {
            s.close();
            throw e;
        }
    }

    /** A generation from text (tokenized with the tokenizer's specials). */
    public Generation generate(String prompt, GenerateOptions o) {
        return generate(tokenize(prompt, true), o);
    }

    /** The assistant's answer to messages, through the model's chat template. */
    public Generation chat(List<Message> messages, GenerateOptions o) {
        return generate(chatIds(messages), o);
    }

    /** Frees the model now (its sessions and generations keep it alive). */
    @Override
    public void close() {
        m.close();
    }
}
