//! ctorch::lm (the Rust binding's language-model layer) on SmolLM2-135M-Instruct's
//! GGUF, safe code only, against the C API it is made of: a greedy chat's ids are
//! decode + argmax step by step and its pieces join to detokenize; max_tokens ends
//! with "length", a stop string ends the text before it, a seeded sampled generation
//! repeats; a Model is shared by two threads generating at once (Sync) with the
//! same text as one alone; bad input is an Err naming the C function.
//! Exit 77 (skipped) without the model (tests/bindings/lm_model.py sets
//! CTORCH_LM_MODEL) or while the library does not implement ctorch_lm_load.
use ctorch::lm::{GenerateOptions, LoadOptions, Message, Model, SamplerOptions};

fn check(ok: bool, what: &str, failures: &mut u32) {
    if !ok {
        println!("FAIL: {what}");
        *failures += 1;
    }
}

fn main() -> ctorch::Result<()> {
    let Ok(path) = std::env::var("CTORCH_LM_MODEL") else {
        let why = std::env::var("CTORCH_LM_MODEL_ABSENT").unwrap_or("CTORCH_LM_MODEL is not set".into());
        println!("skipped: {why}");
        std::process::exit(77);
    };
    let model = match Model::load(&path) {
        Err(e) if e.status_name() == "CTORCH_NOT_IMPLEMENTED" => {
            println!("skipped: the library does not implement ctorch_lm_load yet: {e}");
            std::process::exit(77);
        }
        r => r?,
    };
    let mut failures = 0;
    let text = "Hello, world! Ça va? 1234  spaces\tand tabs";
    let ids = model.tokenize(text, false)?;
    check(model.detokenize(&ids, false)? == text, "tokenize/detokenize round trip", &mut failures);

    let chat = [Message::user("What is the capital of \"France\"?\n")];
    let shown = model.apply_template(&chat, true, None)?;
    check(shown.contains("What is the capital of \"France\"?\n"), "the message's text (JSON-escaped) in the template",
          &mut failures);
    let n = 12;
    let o = GenerateOptions { max_tokens: n, ..Default::default() };
    let mut g = model.chat(&chat, &o)?;
    let answer = g.text()?;
    let (len, why) = (g.ids().len(), g.finish_reason().to_string());
    check((why == "length" && len == n as usize) || (why == "stop" && len < n as usize),
          &format!("{len} ids, finish reason {why:?} (max_tokens {n})"), &mut failures);
    check(answer == model.detokenize(g.ids(), true)?, "pieces join to detokenize", &mut failures);
    let prompt = model.chat_ids(&chat)?;
    let s = model.session(prompt.len() as i64 + n, 1)?;
    let mut logits = s.decode(0, &prompt, false)?;
    let mut want = Vec::new();
    for _ in 0..n {
        want.push(logits.argmax()?.item()? as i64);
        logits = s.decode(0, &want[want.len() - 1..], false)?;
    }
    check(g.ids() == want.as_slice(), &format!("greedy ids {:?} != decode + argmax {want:?}", g.ids()), &mut failures);

    if let Some(word) = answer.split_whitespace().nth(1) {
        let o = GenerateOptions { max_tokens: n, stop: vec![word.to_string()], ..Default::default() };
        let mut g = model.chat(&chat, &o)?;
        let cut = g.text()?;
        check(cut == answer[..answer.find(word).unwrap()] && g.finish_reason() == "stop",
              &format!("stop {word:?}: {cut:?} of {answer:?}"), &mut failures);
    }
    let sampled = GenerateOptions { max_tokens: 16, sampler: SamplerOptions { temperature: 0.9, top_k: 50, top_p: 0.95,
                                    seed: 7, ..Default::default() }, ..Default::default() };
    let a = model.generate("Once upon a time", &sampled)?.text()?;
    check(a == model.generate("Once upon a time", &sampled)?.text()?, "same seed, same text", &mut failures);

    // Two threads share the model (Model: Sync).
    let both: Vec<String> = std::thread::scope(|sc| {
        let hs: Vec<_> = (0..2).map(|_| sc.spawn(|| model.chat(&chat, &o).and_then(|mut g| g.text()))).collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect::<ctorch::Result<_>>()
    })?;
    check(both.iter().all(|t| *t == answer), "two threads, the same text", &mut failures);

    let e = model.detokenize(&[1 << 40], false).err();
    check(e.is_some_and(|e| e.message.contains("ctorch_lm_detokenize")), "an id outside the vocabulary", &mut failures);
    check(Model::load("/nonexistent/model.gguf").is_err(), "a missing file", &mut failures);
    // weights reaches the C options: the GGUF's matrices packed (the default) or dequantised.
    let deq = Model::load_with(&path, &LoadOptions { weights: Some("dequantize".into()), ..Default::default() })?;
    check(model.describe()?.contains("kept packed") && !deq.describe()?.contains("kept packed"),
          "weights=dequantize in the load report", &mut failures);
    // activations too: the load report says what it did (int8, or float32 on a CPU without VNNI).
    let i8 = Model::load_with(&path, &LoadOptions { activations: Some("int8".into()), ..Default::default() })?;
    check(i8.describe()?.contains("activations=int8"), "activations=int8 in the load report", &mut failures);
    println!("ctorch::lm: {}", if failures == 0 { "all checks passed".to_string() } else { format!("{failures} failed") });
    std::process::exit(if failures == 0 { 0 } else { 1 });
}
