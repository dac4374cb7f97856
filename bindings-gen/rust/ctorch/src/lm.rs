//! Language models: load a causal LM (a Hugging Face folder or a GGUF file),
//! tokenize, apply its chat template and stream generated text, over the C
//! API's `ctorch_lm_*` functions (include/ctorch.h, "Language models";
//! docs/llm.md).
//!
//! ```
//! use ctorch::lm::{GenerateOptions, Message, Model};
//! # let Ok(path) = std::env::var("CTORCH_LM_MODEL") else { return Ok(()) };
//! let model = Model::load(&path)?; // e.g. SmolLM2-135M-Instruct.Q4_1.gguf
//! let chat = [Message::user("What is the capital of France?")];
//! for piece in model.chat(&chat, &GenerateOptions { max_tokens: 32, ..Default::default() })? {
//!     print!("{}", piece?);
//! }
//! # Ok::<(), ctorch::Error>(())
//! ```
//!
//! A [`Model`] may be shared by threads (`Sync`: tokenizing, templates and
//! generations run at once, as the C API allows); a [`Session`],
//! [`Sampler`] or [`Generation`] is `Send` only. Sessions and generations
//! keep their model alive.
use std::marker::PhantomData;

use crate::{capi, Error, LmModel, LmSampler, LmSession, LmStream, Result, Tensor};

/// One turn of a conversation for a chat template.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Message {
    /// "system", "user", "assistant", or a role the template knows.
    pub role: String,
    /// The turn's text.
    pub content: String,
}

impl Message {
    /// A message of any role.
    pub fn new(role: impl Into<String>, content: impl Into<String>) -> Message {
        Message { role: role.into(), content: content.into() }
    }
    /// A "system" message.
    pub fn system(content: impl Into<String>) -> Message { Message::new("system", content) }
    /// A "user" message.
    pub fn user(content: impl Into<String>) -> Message { Message::new("user", content) }
    /// An "assistant" message.
    pub fn assistant(content: impl Into<String>) -> Message { Message::new("assistant", content) }
}

/// JSON's string form of s (quotes, backslashes and control characters escaped).
fn json_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// The messages as the JSON array `ctorch_lm_chat_apply` takes.
fn messages_json(messages: &[Message]) -> String {
    let mut out = String::from("[");
    for (i, m) in messages.iter().enumerate() {
        out.push_str(if i == 0 { "{\"role\":" } else { ",{\"role\":" });
        json_string(&m.role, &mut out);
        out.push_str(",\"content\":");
        json_string(&m.content, &mut out);
        out.push('}');
    }
    out.push(']');
    out
}

/// The C API's `key=value,...` options text of the pairs whose value is
/// `Some`; a value holding `,` or `=` is refused (it would change the text's structure).
fn options_text(pairs: &[(&str, Option<String>)]) -> Result<Option<String>> {
    let mut parts = Vec::new();
    for (k, v) in pairs {
        if let Some(v) = v {
            if v.contains([',', '=']) {
                return Err(Error::binding(format!("ctorch::lm: option {k}={v:?} may not contain ',' or '='")));
            }
            parts.push(format!("{k}={v}"));
        }
    }
    Ok(if parts.is_empty() { None } else { Some(parts.join(",")) })
}

/// How [`Model::load_with`] loads: `None` is the default (float32, the CPU).
#[derive(Clone, Debug, Default)]
pub struct LoadOptions {
    /// "float32", "bfloat16" or "float16".
    pub dtype: Option<String>,
    /// "cpu", "cuda" or "cuda:N".
    pub device: Option<String>,
    /// "packed" (a GGUF file's quantised matrices multiplied as they are on
    /// the CPU, the default) or "dequantize".
    pub weights: Option<String>,
    /// "q8_0", "q4_0" or "q4_1": float matrices packed as they load (CPU).
    pub quantize: Option<String>,
    /// "float" (the default) or "int8": the packed matrices multiply
    /// activations rounded to 8 bits, as llama.cpp does (CPUs with AVX-512 VNNI).
    pub activations: Option<String>,
    /// Weights drawn from the configuration with this seed instead of read (for speed measurements).
    pub random_init: Option<u64>,
}

/// The sampler chain, applied in transformers' order; the default is greedy.
#[derive(Clone, Debug)]
pub struct SamplerOptions {
    /// transformers' RepetitionPenaltyLogitsProcessor (1: off).
    pub repetition_penalty: f64,
    /// The OpenAI API's frequency penalty (0: off).
    pub frequency_penalty: f64,
    /// The OpenAI API's presence penalty (0: off).
    pub presence_penalty: f64,
    /// 0: greedy.
    pub temperature: f64,
    /// 0: off.
    pub top_k: i64,
    /// 1: off.
    pub top_p: f64,
    /// 0: off.
    pub min_p: f64,
    /// The draw's generator.
    pub seed: u64,
}

impl Default for SamplerOptions {
    fn default() -> Self {
        SamplerOptions { repetition_penalty: 1.0, frequency_penalty: 0.0, presence_penalty: 0.0, temperature: 0.0,
                         top_k: 0, top_p: 1.0, min_p: 0.0, seed: 0 }
    }
}

/// One generation's options: its sampler, when it stops, the session's size.
#[derive(Clone, Debug, Default)]
pub struct GenerateOptions {
    /// The sampler chain (greedy by default).
    pub sampler: SamplerOptions,
    /// New ids at most (0: until the context is full).
    pub max_tokens: i64,
    /// The text ends before the first of these.
    pub stop: Vec<String>,
    /// Ids that end the generation.
    pub stop_ids: Vec<i64>,
    /// Special tokens give their text (by default they give none).
    pub keep_special: bool,
    /// The session's positions (0: the prompt and `max_tokens`, or the
    /// model's training context when `max_tokens` is 0).
    pub n_ctx: i64,
}

/// A loaded language model: weights, configuration, tokenizer, chat template.
pub struct Model {
    m: LmModel,
}

// The C API makes a model read-only once loaded: any number of threads may
// use one at once (include/ctorch.h, "Language models").
unsafe impl Sync for Model {}

impl Model {
    /// Loads a folder as save_pretrained writes it, or a GGUF file, in float32 on the CPU.
    pub fn load(path: &str) -> Result<Model> { Model::load_with(path, &LoadOptions::default()) }

    /// Loads with the dtype, device, weights, quantisation or random weights `o` gives.
    pub fn load_with(path: &str, o: &LoadOptions) -> Result<Model> {
        let text = options_text(&[("dtype", o.dtype.clone()), ("device", o.device.clone()),
                                  ("weights", o.weights.clone()), ("quantize", o.quantize.clone()),
                                  ("activations", o.activations.clone()),
                                  ("init", o.random_init.map(|_| "random".to_string())),
                                  ("seed", o.random_init.map(|s| s.to_string()))])?;
        Ok(Model { m: capi::lm_load(path, text.as_deref())? })
    }

    /// The generated handle, for the `capi::lm_*` functions.
    pub fn handle(&self) -> &LmModel { &self.m }

    /// `ctorch_lm_describe`'s JSON object: architecture, n_layer, n_vocab, n_ctx_train, bos, eos, ...
    pub fn describe(&self) -> Result<String> { capi::lm_describe(&self.m) }

    /// The ids of text, as transformers' `tokenizer(text, add_special_tokens=add_special)`;
    /// special tokens written in the text are single ids.
    pub fn tokenize(&self, text: &str, add_special: bool) -> Result<Vec<i64>> {
        capi::lm_tokenize(&self.m, text, add_special, true)?.to_vec::<i64>()
    }

    /// The text of ids, as transformers' `decode(ids, skip_special_tokens=skip_special)`.
    pub fn detokenize(&self, ids: &[i64], skip_special: bool) -> Result<String> {
        capi::lm_detokenize(&self.m, ids, skip_special)
    }

    /// messages through the model's chat template (or `template`: a template's text or
    /// "chatml", "llama2", "llama3", "mistral", "zephyr"), as transformers'
    /// `apply_chat_template(messages, tokenize=False, add_generation_prompt=...)`.
    pub fn apply_template(&self, messages: &[Message], add_generation_prompt: bool, template: Option<&str>)
        -> Result<String> {
        capi::lm_chat_apply(&self.m, &messages_json(messages), add_generation_prompt, template)
    }

    /// The prompt of a chat: the template with the generation prompt, tokenized without
    /// adding specials (as `apply_chat_template(tokenize=True)`).
    pub fn chat_ids(&self, messages: &[Message]) -> Result<Vec<i64>> {
        self.tokenize(&self.apply_template(messages, true, None)?, false)
    }

    /// A KV cache of `n_seq` sequences of `n_ctx` positions (0: the training context).
    pub fn session(&self, n_ctx: i64, n_seq: i64) -> Result<Session> {
        Ok(Session { s: capi::lm_session_new(&self.m, n_ctx, n_seq)? })
    }

    /// A generation from ids in a session of its own: an iterator of text pieces.
    pub fn generate_ids(&self, prompt: &[i64], o: &GenerateOptions) -> Result<Generation<'static>> {
        let n_ctx = if o.n_ctx == 0 && o.max_tokens > 0 { prompt.len() as i64 + o.max_tokens } else { o.n_ctx };
        let s = capi::lm_session_new(&self.m, n_ctx, 1)?;
        let mut g = Generation::new(&s, 0, prompt, o)?;
        g.owned = Some(s);
        Ok(g)
    }

    /// A generation from text (tokenized with the tokenizer's specials).
    pub fn generate(&self, prompt: &str, o: &GenerateOptions) -> Result<Generation<'static>> {
        self.generate_ids(&self.tokenize(prompt, true)?, o)
    }

    /// The assistant's answer to messages, through the model's chat template.
    pub fn chat(&self, messages: &[Message], o: &GenerateOptions) -> Result<Generation<'static>> {
        self.generate_ids(&self.chat_ids(messages)?, o)
    }
}

/// A KV cache of sequences `0..n_seq` over one model.
pub struct Session {
    s: LmSession,
}

impl Session {
    /// Appends tokens to sequence `seq`: the float32 logits of the last position
    /// (`[1, V]`), or of every new one (`[tokens.len(), V]`) with `all_logits`.
    pub fn decode(&self, seq: i64, tokens: &[i64], all_logits: bool) -> Result<Tensor> {
        capi::lm_decode(&self.s, seq, tokens, all_logits)
    }
    /// The number of positions sequence `seq` holds.
    pub fn length(&self, seq: i64) -> Result<i64> { capi::lm_session_length(&self.s, seq) }
    /// Forgets sequence `seq` from position `pos` on.
    pub fn rewind(&self, seq: i64, pos: i64) -> Result<()> { capi::lm_session_rewind(&self.s, seq, pos) }
    /// Sequence `dst` becomes a copy of sequence `src`'s first `pos` positions.
    pub fn fork(&self, dst: i64, src: i64, pos: i64) -> Result<()> { capi::lm_session_fork(&self.s, dst, src, pos) }

    /// A generation continuing sequence `seq` with `prompt` (empty: from what it holds);
    /// it borrows the session until it is dropped.
    pub fn generate(&mut self, seq: i64, prompt: &[i64], o: &GenerateOptions) -> Result<Generation<'_>> {
        Generation::new(&self.s, seq, prompt, o)
    }
}

/// A sampler chain with its own seeded generator.
pub struct Sampler {
    s: LmSampler,
}

impl Sampler {
    /// The chain `o` describes.
    pub fn new(o: &SamplerOptions) -> Result<Sampler> {
        let f = |x: f64| Some(x.to_string());
        let text = options_text(&[("repetition_penalty", f(o.repetition_penalty)),
                                  ("frequency_penalty", f(o.frequency_penalty)),
                                  ("presence_penalty", f(o.presence_penalty)), ("temperature", f(o.temperature)),
                                  ("top_k", Some(o.top_k.to_string())), ("top_p", f(o.top_p)),
                                  ("min_p", f(o.min_p)), ("seed", Some(o.seed.to_string()))])?;
        Ok(Sampler { s: capi::lm_sampler_new(text.as_deref())? })
    }
    /// The scores after the chain's processors, given the ids so far.
    pub fn apply(&self, logits: &Tensor, history: &[i64]) -> Result<Tensor> {
        capi::lm_sampler_apply(&self.s, logits, history)
    }
    /// One id drawn from logits, given the ids so far.
    pub fn sample(&self, logits: &Tensor, history: &[i64]) -> Result<i64> {
        capi::lm_sampler_sample(&self.s, logits, history)
    }
}

/// A generation in progress: an `Iterator` of text pieces (never a split character,
/// never a part of a stop string); an error ends it.
/// A generation of [`Model`]'s own is `Generation<'static>`; one of a [`Session`] borrows it.
pub struct Generation<'s> {
    st: Option<LmStream>,
    owned: Option<LmSession>, // the session Model's generations make (dropped after st: fields drop in order)
    ids: Vec<i64>,
    finish_reason: String,
    session: PhantomData<&'s mut Session>,
}

impl Generation<'_> {
    fn new<'s>(s: &LmSession, seq: i64, prompt: &[i64], o: &GenerateOptions) -> Result<Generation<'s>> {
        let sampler = Sampler::new(&o.sampler)?; // the stream keeps its own reference
        let text = options_text(&[("max_tokens", (o.max_tokens > 0).then(|| o.max_tokens.to_string())),
                                  ("skip_special", Some(if o.keep_special { "0" } else { "1" }.to_string()))])?;
        let st = capi::lm_stream_new(s, seq, &sampler.s, prompt, text.as_deref())?;
        for stop in &o.stop {
            capi::lm_stream_stop_string(&st, stop)?;
        }
        for &id in &o.stop_ids {
            capi::lm_stream_stop_token(&st, id)?;
        }
        Ok(Generation { st: Some(st), owned: None, ids: Vec::new(), finish_reason: String::new(), session: PhantomData })
    }

    /// The ids generated so far (a stop id included).
    pub fn ids(&self) -> &[i64] { &self.ids }

    /// "stop" or "length" once the generation ended, "" before.
    pub fn finish_reason(&self) -> &str { &self.finish_reason }

    /// Runs the generation to its end: the rest of its text.
    pub fn text(&mut self) -> Result<String> { self.collect() }
}

impl Iterator for Generation<'_> {
    type Item = Result<String>;

    fn next(&mut self) -> Option<Result<String>> {
        while let Some(st) = &self.st {
            let (text, id, done) = match capi::lm_stream_next(st) {
                Ok(r) => r,
                Err(e) => {
                    self.st = None;
                    return Some(Err(e));
                }
            };
            if id >= 0 {
                self.ids.push(id);
            }
            if done != 0 {
                self.finish_reason = capi::lm_stream_finish_reason(st).unwrap_or_default();
                self.st = None; // dropping the stream gives the session back
            }
            if !text.is_empty() {
                return Some(Ok(text));
            }
        }
        None
    }
}
