/**
 * Language models: load a causal LM (a Hugging Face folder or a GGUF file), tokenize, apply
 * its chat template and stream generated text, over the C API's {@code ctorch_lm_*} functions
 * (include/ctorch.h, "Language models"; docs/llm.md).
 *
 * <pre>{@code
 * try (Model model = Model.load(path);
 *      Generation answer = model.chat(List.of(Message.user("Hi!")), new GenerateOptions().maxTokens(32))) {
 *     answer.forEachRemaining(System.out::print);
 * }
 * }</pre>
 *
 * <p>A {@link org.ctorch.lm.Model} may be used by several threads at once, platform or
 * virtual (tokenize, templates and generations run concurrently, as the C API allows); a
 * {@link org.ctorch.lm.Session}, {@link org.ctorch.lm.Sampler} or
 * {@link org.ctorch.lm.Generation} by one thread at a time. Sessions and generations keep
 * their model alive. Every class is {@link java.lang.AutoCloseable}, with the Cleaner as a
 * fallback.
 */
package org.ctorch.lm;
