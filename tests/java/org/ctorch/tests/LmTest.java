package org.ctorch.tests;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.stream.Collectors;
import org.ctorch.CTorchException;
import org.ctorch.Status;
import org.ctorch.Tensor;
import org.ctorch.lm.GenerateOptions;
import org.ctorch.lm.Generation;
import org.ctorch.lm.Message;
import org.ctorch.lm.Model;
import org.ctorch.lm.Session;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * org.ctorch.lm on SmolLM2-135M-Instruct's GGUF against the C API it is made of: a greedy chat's
 * ids are decode + argmax step by step and its pieces (Iterator and Stream) join to detokenize;
 * maxTokens ends with "length", a stop string ends the text before it, a seeded sampled
 * generation repeats; virtual threads share one model. Skipped without the model
 * (tests/bindings/lm_model.py sets CTORCH_LM_MODEL) or while the library does not implement
 * ctorch_lm_load.
 */
class LmTest {
    static Model loadOrSkip() {
        String path = System.getenv("CTORCH_LM_MODEL");
        Assumptions.assumeTrue(path != null, () -> {
            String why = System.getenv("CTORCH_LM_MODEL_ABSENT");
            return why != null ? why : "CTORCH_LM_MODEL is not set (tests/bindings/lm_model.py)";
        });
        try {
            return Model.load(path);
        } catch (CTorchException e) {
            Assumptions.assumeTrue(e.status() != Status.NOT_IMPLEMENTED,
                "the library does not implement ctorch_lm_load yet: " + e.getMessage());
            throw e;
        }
    }

    @Test
    void messagesAreJsonEscaped() {
        Message m = Message.user("a \"quoted\"\nline\u0001");
        assertEquals("user", m.role());
        assertThrows(IllegalArgumentException.class, () -> new Message(null, "x"));
    }

    @Test
    void loadOptionsReachTheLoader() {
        try (Model packed = loadOrSkip();
             Model deq = Model.load(System.getenv("CTORCH_LM_MODEL"), null, null, "dequantize", null)) {
            // A GGUF file's matrices stay packed by default; weights=dequantize turns them into floats.
            assertTrue(packed.describe().contains("kept packed"), packed.describe());
            assertFalse(deq.describe().contains("kept packed"), deq.describe());
        }
        // activations too: the load report says what it did (int8, or float32 on a CPU without VNNI).
        try (Model i8 = Model.load(System.getenv("CTORCH_LM_MODEL"), null, null, null, null, "int8")) {
            assertTrue(i8.describe().contains("activations=int8"), i8.describe());
        }
        assertThrows(IllegalArgumentException.class, () -> Model.load("x.gguf", null, null, "a,b", null));
    }

    @Test
    void chatStreamsTheGreedyAnswer() throws Exception {
        try (Model model = loadOrSkip()) {
            List<Message> chat = List.of(Message.user("What is the capital of \"France\"?"));
            assertTrue(model.applyTemplate(chat, true, null).contains("What is the capital of \"France\"?"));
            int n = 24;
            GenerateOptions o = new GenerateOptions().maxTokens(n);
            List<String> pieces = new ArrayList<>();
            long[] ids;
            try (Generation g = model.chat(chat, o)) {
                g.forEachRemaining(pieces::add);
                ids = g.ids();
                // The answer ends with its end-of-sequence id, before maxTokens.
                assertTrue(ids.length < n && g.finishReason().equals("stop"), ids.length + " " + g.finishReason());
            }
            try (Generation g = model.generate("Once upon a time", new GenerateOptions().maxTokens(5))) {
                assertTrue(!g.text().isEmpty() && g.ids().length == 5 && g.finishReason().equals("length"));
            }
            String answer = String.join("", pieces);
            assertEquals(model.detokenize(ids, true), answer);
            try (Generation g = model.chat(chat, o); var s = g.stream()) {
                assertEquals(answer, s.collect(Collectors.joining()));
            }
            long[] prompt = model.chatIds(chat);
            long[] want = new long[ids.length];
            try (Session s = model.session(prompt.length + n, 1)) {
                long[] toks = prompt;
                for (int i = 0; i < ids.length; i++) {
                    try (Tensor logits = s.decode(0, toks, false); Tensor am = logits.argmax()) {
                        want[i] = am.itemLong();
                    }
                    toks = new long[] {want[i]};
                }
            }
            assertArrayEquals(want, ids, "greedy ids equal decode + argmax");
            String[] words = answer.trim().split("\\s+");
            if (words.length > 1) {
                try (Generation g = model.chat(chat, new GenerateOptions().maxTokens(n).stop(words[1]))) {
                    assertEquals(answer.substring(0, answer.indexOf(words[1])), g.text());
                    assertEquals("stop", g.finishReason());
                }
            }
            GenerateOptions sampled = new GenerateOptions().maxTokens(16).temperature(0.9).topK(50).topP(0.95).seed(7);
            try (Generation a = model.generate("Once upon a time", sampled);
                 Generation b = model.generate("Once upon a time", sampled)) {
                assertEquals(a.text(), b.text());
            }
            // Virtual threads share the model: each gets the greedy answer.
            try (var ex = Executors.newVirtualThreadPerTaskExecutor()) {
                List<Future<String>> fs = new ArrayList<>();
                for (int i = 0; i < 3; i++) {
                    fs.add(ex.submit(() -> {
                        try (Generation g = model.chat(chat, o)) {
                            return g.text();
                        }
                    }));
                }
                for (Future<String> f : fs) {
                    assertEquals(answer, f.get());
                }
            }
            CTorchException e = assertThrows(CTorchException.class, () -> model.detokenize(new long[] {1L << 40}, false));
            assertTrue(e.getMessage().contains("ctorch_lm_detokenize"), e.getMessage());
        }
    }
}
