'use strict';
// ct.lm (the Node binding's language-model layer) on SmolLM2-135M-Instruct's
// GGUF, against the C API it is made of: a greedy generation through
// `for await` (worker threads) gives the ids of decode + argmax step by step
// and the text of detokenize; the synchronous iterator gives the same; the
// event loop keeps running while tokens are generated; a seeded sampled
// generation repeats itself; maxTokens ends with 'length', a stop string
// ends the text before it; loadAsync loads on a worker thread; a synchronous
// call during a pending Promise call throws; bad options are refused by name.
// Skipped (77) without the model (tests/bindings/lm_model.py sets
// CTORCH_LM_MODEL) or while the library reports the C functions not implemented.
const assert = require('assert');
const ct = require(process.env.CTORCH_NODE_PKG);
const { lm } = ct;

assert.strictEqual(lm.optionsText({ temperature: 0.5, top_k: 40, skip_special: true, seed: undefined }),
  'temperature=0.5,top_k=40,skip_special=1');
assert.throws(() => lm.optionsText({ dtype: 'a,b' }), RangeError);

async function main() {
  const path = process.env.CTORCH_LM_MODEL;
  if (!path) {
    console.log(`skipped: ${process.env.CTORCH_LM_MODEL_ABSENT || 'CTORCH_LM_MODEL is not set (tests/bindings/lm_model.py)'}`);
    process.exit(77);
  }
  let model;
  try {
    model = await lm.Model.loadAsync(path);
  } catch (e) {
    if (e.statusName === 'CTORCH_NOT_IMPLEMENTED') {
      console.log(`skipped: the library does not implement ctorch_lm_load yet: ${e.message}`);
      process.exit(77);
    }
    throw e;
  }
  assert.strictEqual(model.info.architecture, 'llama');
  // weights: reaches the C options: the GGUF's matrices packed (the default) or dequantised.
  const deq = lm.Model.load(path, { weights: 'dequantize' });
  assert.ok(model.info.report.some((r) => r.includes('kept packed')), `${model.info.report}`);
  assert.ok(!deq.info.report.some((r) => r.includes('kept packed')), `${deq.info.report}`);
  deq.dispose();
  // activations: too: the load report says what it did (int8, or float32 on a CPU without VNNI).
  const i8 = lm.Model.load(path, { activations: 'int8' });
  assert.ok(i8.info.report.some((r) => r.startsWith('activations=int8')), `${i8.info.report}`);
  i8.dispose();
  assert.throws(() => model.generate('x', { maxToken: 3 }), /unknown option 'maxToken'/);

  const text = 'Hello, world! Ça va? 1234  spaces\tand tabs';
  const ids = model.tokenize(text, { addSpecial: false });
  assert.ok(ids.length > 5 && ids.every(Number.isInteger), `tokenize: ${ids}`);
  assert.strictEqual(model.detokenize(ids), text);
  const d = model.detokenizer({ skipSpecial: false });
  assert.strictEqual(ids.map((i) => d.push(i)).join('') + d.flush(), text);

  const messages = [{ role: 'user', content: 'What is the capital of France?' }];
  const chat = model.chat(messages);
  assert.ok(chat.includes('What is the capital of France?') && chat.trimEnd().endsWith('assistant'), chat);
  assert.deepStrictEqual(model.promptIds(messages), model.tokenize(chat, { addSpecial: false }));

  // Greedy, asynchronously: the event loop ticks while tokens are generated.
  const n = 24;
  let ticks = 0;
  const timer = setInterval(() => { ticks++; }, 0);
  const g = model.generate(messages, { maxTokens: n });
  const pieces = [];
  for await (const p of g) pieces.push(p);
  clearInterval(timer);
  assert.ok(ticks > 0, 'the event loop ran during the generation');
  // The answer ends with an end-of-sequence id, before maxTokens.
  assert.ok(g.finishReason === 'stop' && model.info.eos.includes(g.ids[g.ids.length - 1]) && g.ids.length < n,
    `${g.ids} ${g.finishReason}`);
  assert.ok(pieces.every((p) => p.length > 0));
  assert.strictEqual(pieces.join(''), model.detokenize(g.ids, { skipSpecial: true }));
  const prompt = model.promptIds(messages);
  const s = model.session({ nCtx: prompt.length + n });
  let logits = s.decode(prompt);
  const want = [];
  for (let i = 0; i < g.ids.length; i++) {
    want.push(Number(logits.argmax().item()));
    logits = s.decode([want[i]]);
  }
  s.dispose();
  assert.deepStrictEqual(g.ids, want, 'greedy ids equal decode + argmax');
  // Synchronously: the same.
  const g2 = model.generate(messages, { maxTokens: n });
  assert.strictEqual([...g2].join(''), pieces.join(''));

  const ml = model.generate('Once upon a time', { maxTokens: 5 });
  assert.ok((await ml.readAll()).length > 0 && ml.ids.length === 5 && ml.finishReason === 'length', `${ml.ids}`);

  // Seeded sampling repeats; a pending Promise call locks the generation.
  const opts = { maxTokens: 16, temperature: 0.9, topK: 50, topP: 0.95, seed: 7 };
  const a = model.generate('Once upon a time', opts), b = model.generate('Once upon a time', opts);
  const pending = a.nextPieceAsync();
  assert.throws(() => a.nextPiece(), /pending/);
  await pending;
  assert.strictEqual(await a.readAll(), b.readAllSync());

  // A stop string ends the text before it.
  const full = model.generate(messages, { maxTokens: 24 }).readAllSync();
  const words = full.split(/\s+/).filter(Boolean);
  if (words.length > 1) {
    const st = model.generate(messages, { maxTokens: 24, stop: [words[1]] });
    assert.strictEqual(await st.readAll(), full.slice(0, full.indexOf(words[1])));
    assert.strictEqual(st.finishReason, 'stop');
  }
  // Bad input: the C API's error, naming the function.
  assert.throws(() => model.detokenize([1e9]), /ctorch_lm_detokenize/);
  await assert.rejects(lm.Model.loadAsync('/nonexistent/model.gguf'), /ctorch_lm_load/);
  model.dispose();
  console.log('node lm: all checks passed');
}

main().catch((e) => { console.error(e); process.exit(1); });
