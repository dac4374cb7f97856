'use strict';
// ct.lm: language models over the C API's ctorch_lm_* functions (include/ctorch.h,
// "Language models"; docs/llm.md). Load a model (a Hugging Face folder or a GGUF
// file), tokenize, apply its chat template, and stream generated text:
//
//   const model = await ct.lm.Model.loadAsync(path);
//   for await (const piece of model.generate(messages, { maxTokens: 64 })) process.stdout.write(piece);
//
// The long calls (loading, each generated token) have a Promise form that runs
// on koffi's worker threads (ct.callAsync), so the event loop stays free. A
// model may serve several generations at once; a session, a generation or a
// detokenizer is used by one call at a time: a synchronous call while its
// Promise call is pending throws, as promise.js's objects do.
module.exports = function defineLm(ct, rt) {
  const { api, R, F } = rt;

  // The C API's "key=value,..." options text of the entries that are not
  // undefined/null (booleans as 0/1); null when there are none.
  function optionsText(entries) {
    const parts = [];
    for (const [k, v] of Object.entries(entries)) {
      if (v === undefined || v === null) continue;
      let s;
      if (typeof v === 'boolean') s = v ? '1' : '0';
      else if (typeof v === 'number') {
        if (!Number.isFinite(v)) throw new RangeError(`ct.lm: option ${k}=${v} is not a finite number`);
        s = String(v);
      } else if (typeof v === 'string' || typeof v === 'bigint') s = String(v);
      else throw new TypeError(`ct.lm: option ${k} takes a number or a string, not ${typeof v}`);
      if (/[,=]/.test(s)) throw new RangeError(`ct.lm: option ${k}=${JSON.stringify(s)} may not contain ',' or '='`);
      parts.push(`${k}=${s}`);
    }
    return parts.length ? parts.join(',') : null;
  }

  // opts with only the keys allowed (a misspelt option is an error, not ignored).
  function checked(opts, allowed, where) {
    const o = opts || {};
    for (const k of Object.keys(o)) {
      if (!allowed.includes(k)) throw new TypeError(`${where}: unknown option '${k}' (known: ${allowed.join(', ')})`);
    }
    return o;
  }

  const idsOf = (t) => { try { return t.toArray(); } finally { t.dispose(); } };
  const numbers = (ids) => Array.from(ids, Number);

  const LOAD_KEYS = ['dtype', 'device', 'weights', 'quantize', 'activations', 'init', 'seed'];
  const loadOptions = (opts) => {
    const o = checked(opts, LOAD_KEYS, 'ct.lm.Model.load');
    const name = (x) => (x && typeof x === 'object' && 'name' in x ? x.name : x);
    return optionsText({ dtype: name(o.dtype), device: o.device, weights: o.weights, quantize: o.quantize,
                         activations: o.activations, init: o.init, seed: o.seed });
  };
  const SAMPLER_KEYS = ['temperature', 'topK', 'topP', 'minP', 'repetitionPenalty', 'frequencyPenalty',
    'presencePenalty', 'seed'];
  const STREAM_KEYS = ['maxTokens', 'stop', 'stopIds', 'skipSpecial'];
  const GENERATE_KEYS = [...SAMPLER_KEYS, ...STREAM_KEYS, 'nCtx'];

  class Model {
    constructor(handle) { this._m = handle; this._info = null; }
    // Model.load(path, { dtype: 'float32'|'bfloat16'|'float16', device: 'cpu'|'cuda:N',
    //                    weights: 'packed'|'dequantize', quantize: 'q8_0'|'q4_0'|'q4_1',
    //                    activations: 'float'|'int8', init: 'random', seed })
    static load(path, opts) { return new Model(api.lm_load(path, loadOptions(opts))); }
    // The same, on a worker thread.
    static async loadAsync(path, opts) {
      const options = loadOptions(opts), o = new BigUint64Array(1);
      await ct.callAsync('ctorch_lm_load', o, path, options);
      return new Model(R.adopt(api.LmModel, o[0]));
    }
    get handle() {
      if (!this._m || !this._m._h) throw new Error('ct.lm.Model: used after dispose()');
      return this._m;
    }
    // ctorch_lm_describe's object: architecture, n_layer, n_vocab, n_ctx_train, bos, eos, ...
    get info() { return this._info || (this._info = JSON.parse(api.lm_describe(this.handle))); }
    tokenize(text, opts) {
      const o = checked(opts, ['addSpecial', 'parseSpecial'], 'ct.lm.Model.tokenize');
      return idsOf(api.lm_tokenize(this.handle, text, o.addSpecial === false ? 0 : 1, o.parseSpecial === false ? 0 : 1));
    }
    detokenize(ids, opts) {
      const o = checked(opts, ['skipSpecial'], 'ct.lm.Model.detokenize');
      return api.lm_detokenize(this.handle, numbers(ids), o.skipSpecial ? 1 : 0);
    }
    tokenText(id) { return api.lm_token_text(this.handle, id); }
    // The messages ({role, content}) through the model's chat template (or opts.template:
    // a template's text or 'chatml', 'llama2', 'llama3', 'mistral', 'zephyr').
    chat(messages, opts) {
      const o = checked(opts, ['addGenerationPrompt', 'template'], 'ct.lm.Model.chat');
      return api.lm_chat_apply(this.handle, JSON.stringify(messages), o.addGenerationPrompt === false ? 0 : 1,
        o.template === undefined ? null : o.template);
    }
    // The ids a generation starts from: a string tokenized with the tokenizer's
    // specials; messages through the chat template (no specials added, as
    // apply_chat_template(tokenize=True)); ids as they are.
    promptIds(prompt) {
      if (typeof prompt === 'string') return this.tokenize(prompt);
      const a = Array.from(prompt);
      if (a.length && typeof a[0] === 'object') return this.tokenize(this.chat(a), { addSpecial: false });
      return numbers(a);
    }
    session(opts) {
      const o = checked(opts, ['nCtx', 'nSeq'], 'ct.lm.Model.session');
      return new Session(this, o.nCtx || 0, o.nSeq || 1);
    }
    detokenizer(opts) {
      const o = checked(opts, ['skipSpecial'], 'ct.lm.Model.detokenizer');
      return new Detokenizer(this, o.skipSpecial !== false);
    }
    // A Generation in a session of its own (len(prompt) + maxTokens positions,
    // or nCtx, or the training context): iterate it with for await (worker
    // threads) or for...of (this thread).
    generate(prompt, opts) {
      const o = checked(opts, GENERATE_KEYS, 'ct.lm.Model.generate');
      const ids = this.promptIds(prompt);
      const nCtx = o.nCtx !== undefined ? o.nCtx : o.maxTokens !== undefined ? ids.length + o.maxTokens : 0;
      const sampler = new Sampler(Object.fromEntries(SAMPLER_KEYS.map((k) => [k, o[k]])));
      const session = new Session(this, nCtx, 1);
      return session.generate(ids, Object.assign({ sampler }, Object.fromEntries(STREAM_KEYS.map((k) => [k, o[k]]))));
    }
    dispose() { if (this._m) { this._m.dispose(); this._m = null; } }
    [Symbol.dispose]() { this.dispose(); }
  }

  class Session {
    constructor(model, nCtx = 0, nSeq = 1) { this._model = model; this._s = api.lm_session_new(model.handle, nCtx, nSeq); }
    get model() { return this._model; }
    // Appends tokens to sequence seq; the float32 logits ([1, V], or [n, V] with allLogits) as a Tensor.
    decode(tokens, opts) {
      const o = checked(opts, ['seq', 'allLogits'], 'ct.lm.Session.decode');
      return api.lm_decode(this._s, o.seq || 0, numbers(tokens), o.allLogits ? 1 : 0);
    }
    // batch: a Map or [[seq, tokens], ...]; one forward, [batch.length, V].
    decodeBatch(batch) {
      const pairs = Array.from(batch instanceof Map ? batch.entries() : batch);
      const toks = pairs.map(([, t]) => numbers(t));
      return api.lm_decode_batch(this._s, pairs.map(([s]) => Number(s)), toks.map((t) => t.length), toks.flat());
    }
    length(seq = 0) { return Number(api.lm_session_length(this._s, seq)); }
    rewind(pos, seq = 0) { api.lm_session_rewind(this._s, seq, pos); }
    fork(dst, src = 0, pos = undefined) { api.lm_session_fork(this._s, dst, src, pos === undefined ? this.length(src) : pos); }
    // Continues sequence opts.seq (0) with prompt (a string, messages or ids; [] continues).
    generate(prompt, opts) {
      const o = checked(opts, ['sampler', 'seq', ...STREAM_KEYS], 'ct.lm.Session.generate');
      const ids = typeof prompt === 'string' && prompt === '' ? [] : this._model.promptIds(prompt);
      return new Generation(this, ids, o);
    }
    dispose() { this._s.dispose(); }
    [Symbol.dispose]() { this.dispose(); }
  }

  // A sampler chain in transformers' order: repetitionPenalty (1 = off), frequencyPenalty
  // and presencePenalty (OpenAI's; 0 = off), temperature (0 = greedy), topK (0 = off),
  // topP (1 = off), minP (0 = off), and a draw from a generator seeded with seed.
  class Sampler {
    constructor(opts) {
      const o = checked(opts, SAMPLER_KEYS, 'ct.lm.Sampler');
      this._s = api.lm_sampler_new(optionsText({
        repetition_penalty: o.repetitionPenalty, frequency_penalty: o.frequencyPenalty,
        presence_penalty: o.presencePenalty, temperature: o.temperature, top_k: o.topK, top_p: o.topP,
        min_p: o.minP, seed: o.seed,
      }));
    }
    apply(logits, history = []) { return api.lm_sampler_apply(this._s, logits, numbers(history)); }
    sample(logits, history = []) { return Number(api.lm_sampler_sample(this._s, logits, numbers(history))); }
    dispose() { this._s.dispose(); }
    [Symbol.dispose]() { this.dispose(); }
  }

  // A generation in progress. Its pieces of text never split a character or a
  // stop string. After it: finishReason ('stop' or 'length'), ids, output.
  class Generation {
    constructor(session, prompt, o) {
      this._session = session;
      this._ids = [];
      this._reason = '';
      this._pieces = [];
      const sampler = o.sampler || new Sampler();
      this._st = api.lm_stream_new(session._s, o.seq || 0, sampler._s, prompt,
        optionsText({ max_tokens: o.maxTokens, skip_special: o.skipSpecial === undefined ? undefined : !!o.skipSpecial }));
      const stops = o.stop === undefined ? [] : typeof o.stop === 'string' ? [o.stop] : o.stop;
      for (const s of stops) api.lm_stream_stop_string(this._st, s);
      for (const id of o.stopIds || []) api.lm_stream_stop_token(this._st, id);
    }
    get session() { return this._session; }
    // The ids generated so far (a stop id included), and why the generation ended ('' while it runs).
    get ids() { return this._ids; }
    get finishReason() { return this._reason; }
    get output() { return this._pieces.join(''); }
    // One step's results; '' pieces are not returned: null once the generation ended.
    _took(text, id, done) {
      if (id >= 0) this._ids.push(id);
      if (done) {
        this._reason = api.lm_stream_finish_reason(this._st);
        this._end(); // gives the session back
      }
      if (text) this._pieces.push(text);
      return text;
    }
    // The next piece of text (this thread), or null at the end.
    nextPiece() {
      if (this._busy) throw new Error('ct.lm.Generation: a Promise call on it is pending; await it first');
      while (this._st) {
        const [text, id, done] = api.lm_stream_next(this._st);
        if (this._took(text, id, done)) return text;
      }
      return null;
    }
    // The next piece, each token generated on a worker thread; null at the end.
    // Calls queue; the generation is busy from the call until it settles.
    nextPieceAsync() {
      this._busy = (this._busy || 0) + 1;
      const run = (this._queue || Promise.resolve()).then(async () => {
        while (this._st) {
          const t = new BigUint64Array(1), id = new BigInt64Array(1), done = new Int32Array(1);
          await ct.callAsync('ctorch_lm_stream_next', t, id, done, this._st._h);
          const text = R.text(t[0]);
          F.ctorch_string_free(t[0]);
          if (this._took(text, Number(id[0]), done[0])) return text;
        }
        return null;
      }).finally(() => { this._busy--; });
      this._queue = run.catch(() => undefined);
      return run;
    }
    *[Symbol.iterator]() { for (let p; (p = this.nextPiece()) !== null;) yield p; }
    async *[Symbol.asyncIterator]() { for (let p; (p = await this.nextPieceAsync()) !== null;) yield p; }
    // Runs to the end; all of the text.
    async readAll() { for await (const p of this) void p; return this.output; }
    readAllSync() { for (const p of this) void p; return this.output; }
    // Ends the generation now (what the session holds stays).
    dispose() {
      if (this._busy) throw new Error('ct.lm.Generation.dispose() while a Promise call on it is pending; await it first');
      this._end();
    }
    _end() { if (this._st) { this._st.dispose(); this._st = null; } }
    [Symbol.dispose]() { this.dispose(); }
  }

  // Ids in, text out, never splitting a UTF-8 character.
  class Detokenizer {
    constructor(model, skipSpecial = true) { this._d = api.lm_detokenizer_new(model.handle, skipSpecial ? 1 : 0); }
    push(id) { return api.lm_detokenizer_push(this._d, id); }
    flush() { return api.lm_detokenizer_flush(this._d); }
    dispose() { this._d.dispose(); }
    [Symbol.dispose]() { this.dispose(); }
  }

  ct.lm = { Model, Session, Sampler, Generation, Detokenizer, optionsText };
};
