//! A character-level language model: examples/char_lstm.c in safe Rust with the
//! `ctorch` crate. Embedding(V, 32) -> LSTM(32, H, 2 layers, batch_first) -> Linear(H, V),
//! Adam(lr 3e-3), gradients clipped to norm 1, truncated backpropagation through time
//! over `batch` streams of the text. From the same seed it prints what the C program
//! prints and saves the same weights, bit for bit (tests/bindings/char_lstm_twin.py).
//!
//!     char_lstm [--text PATH] [--steps K] [--batch B] [--seq T] [--hidden H]
//!               [--seed S] [--threads N] [--sample N] [--save PATH]
use ctorch::{capi, nn, optim::{OptimOptions, Optimizer}, AutogradScopeKind, Device, Generator, OptimizerKind, Tensor};
use std::{collections::BTreeSet, error::Error, io::Write, time::Instant};

type R<T> = Result<T, Box<dyn Error>>;
type State = Option<(Tensor, Tensor)>; // the LSTM's (h, c); None: zeros

/// char_lstm.py's CharLSTM: the children made in its order (the order of the random
/// draws), held by `net` under its names (the state-dict keys embed.weight, ...).
struct CharLstm { net: nn::Module, embed: nn::Module, lstm: nn::Module, head: nn::Module, v: i64 }

impl CharLstm {
    fn new(v: i64, hidden: i64) -> R<CharLstm> {
        let embed = nn::Embedding::new(v, 32).build()?;
        let lstm = nn::LSTM::new(32, hidden).num_layers(2).batch_first(true).build()?;
        let head = nn::Linear::new(hidden, v).build()?;
        let net = nn::ModuleDict::new(&[("embed", &embed), ("lstm", &lstm), ("head", &head)])?;
        Ok(CharLstm { net, embed, lstm, head, v })
    }
    /// (x [B, T] ids, state) -> (logits [B, T, V], h, c).
    fn forward(&self, x: &Tensor, state: &State) -> R<(Tensor, Tensor, Tensor)> {
        let (h, c) = state.as_ref().map_or((None, None), |(h, c)| (Some(h), Some(c)));
        let outs = self.lstm.forward_n(&[Some(&self.embed.forward(x)?), h, c], "")?;
        let [y, h, c] = <[Option<Tensor>; 3]>::try_from(outs).map_err(|_| "LSTM: not 3 outputs")?;
        Ok((self.head.forward(&y.ok_or("LSTM: no output")?)?, h.ok_or("no h_n")?, c.ok_or("no c_n")?))
    }
    /// Mean cross-entropy of predicting ids[:, start+1 ..= start+len] from ids[:, start ..
    /// start+len]; the state carried on, detached (truncated BPTT).
    fn window_loss(&self, ids: &Tensor, start: i64, len: i64, state: &mut State) -> R<Tensor> {
        let (logits, h, c) = self.forward(&ids.narrow(1, start, len)?, state)?;
        *state = Some((h.detach()?, c.detach()?));
        let y = ids.narrow(1, start + 1, len)?.reshape(&[-1])?;
        Ok(logits.reshape(&[-1, self.v])?.cross_entropy_loss(&y)?)
    }
    /// Mean loss over the held-out streams, one window of `seq` after another.
    fn evaluate(&self, ids: &Tensor, seq: i64) -> R<f64> {
        let cols = ids.size()[1];
        self.net.eval()?;
        let _inference = capi::autograd_scope_enter(AutogradScopeKind::INFERENCE_MODE)?;
        let (mut state, mut sum, mut count) = (None, 0.0, 0);
        for start in (0..cols - 1).step_by(seq as usize) {
            let len = seq.min(cols - 1 - start);
            sum += self.window_loss(ids, start, len, &mut state)?.item()? * len as f64;
            count += len;
        }
        self.net.train(true)?;
        Ok(sum / count as f64)
    }
    /// Feeds `prompt`, then draws n characters from the softmax of the logits
    /// (torch.multinomial with a generator seeded with `seed`).
    fn sample(&self, vocab: &[u8], prompt: &str, n: usize, seed: u64) -> R<Vec<u8>> {
        let g = Generator::new(Device::CPU, seed)?;
        let _inference = capi::autograd_scope_enter(AutogradScopeKind::INFERENCE_MODE)?;
        let mut ids: Vec<i64> = prompt.bytes().filter_map(|b| vocab.binary_search(&b).ok()).map(|i| i as i64).collect();
        let (mut state, mut text) = (None, Vec::new());
        for _ in 0..n {
            let (logits, h, c) = self.forward(&Tensor::from_slice(&ids, &[1, ids.len() as i64])?, &state)?;
            let probs = logits.select(1, -1)?.softmax(-1)?;
            let id = ctorch::ops::multinomial(&probs, 1, false, Some(&g))?.item()? as usize;
            (state, ids) = (Some((h, c)), vec![id as i64]);
            text.push(vocab[id]);
        }
        Ok(text)
    }
}

fn main() -> R<()> {
    let arg = |k: &str, d: &str| std::env::args().skip_while(|a| a != k).nth(1).unwrap_or(d.into());
    let num = |k: &str, d: &str| arg(k, d).parse::<i64>();
    let (text, save) = (arg("--text", "/usr/share/common-licenses/GPL-3"), arg("--save", ""));
    let (steps, batch, seq) = (num("--steps", "200")?, num("--batch", "32")?, num("--seq", "32")?);
    let (hidden, threads, n_sample) = (num("--hidden", "128")?, num("--threads", "0")? as i32, num("--sample", "200")?);
    let seed: u64 = arg("--seed", "1").parse()?;
    let bytes = match std::fs::read(&text) {
        Ok(b) if !b.is_empty() => b,
        _ => {
            eprintln!("char_lstm: cannot read {text}: skipped");
            std::process::exit(77);
        }
    };
    // The text as codes 0..V-1 of its distinct bytes in sorted order (sorted(set(data))).
    let vocab: Vec<u8> = bytes.iter().copied().collect::<BTreeSet<u8>>().into_iter().collect();
    let ids: Vec<i64> = bytes.iter().map(|b| vocab.binary_search(b).map_or(0, |i| i as i64)).collect();
    let (n, n_train) = (ids.len() as i64, ids.len() as i64 * 9 / 10);
    if steps < 1 || batch < 1 || seq < 1 || hidden < 1 || n_train / batch < seq + 1 || (n - n_train) / 8 < 2 {
        eprintln!("char_lstm: --steps, --batch, --seq and --hidden must be >= 1, and the text long enough for them");
        std::process::exit(2);
    }
    if threads > 0 {
        ctorch::set_num_threads(threads)?;
    }
    // ids[start .. start+len] as `streams` rows of consecutive pieces (char_lstm.py's batchify).
    let batchify = |start: i64, len: i64, streams: i64| {
        Tensor::from_slice(&ids[start as usize..(start + len / streams * streams) as usize], &[streams, len / streams])
    };
    let (train, val) = (batchify(0, n_train, batch)?, batchify(n_train, n - n_train, 8)?);
    let windows = (n_train / batch - 1) / seq; // full windows per pass over the streams

    ctorch::manual_seed(seed);
    let model = CharLstm::new(vocab.len() as i64, hidden)?;
    let opt = Optimizer::from_module(OptimizerKind::ADAM, &model.net, OptimOptions::new(OptimizerKind::ADAM).lr(3e-3))?;
    let (v, threads) = (vocab.len(), capi::get_num_threads()?);
    println!("char-LSTM (hidden {hidden}) on {text} ({n} characters, {v} distinct), {steps} steps, \
              batch {batch} x {seq}, {threads} thread(s), seed {seed}");
    let (t0, mut state, mut first, mut last) = (Instant::now(), None, 0.0, 0.0);
    for step in 0..steps {
        let w = step % windows;
        if w == 0 {
            state = None; // the streams start over: so does the state
        }
        opt.zero_grad(true)?;
        let loss = model.window_loss(&train, w * seq, seq, &mut state)?;
        loss.backward()?;
        model.net.clip_grad_norm_(1.0, 2.0, false)?;
        opt.step()?;
        last = loss.item()?;
        if step == 0 {
            first = last;
        }
        if step == 0 || (step + 1) % 50 == 0 || step + 1 == steps {
            println!("step {}/{steps} loss {last:.6} ppl {:.3}", step + 1, last.exp());
        }
    }
    let dt = t0.elapsed().as_secs_f64();
    let val_loss = model.evaluate(&val, seq)?;
    println!("held-out loss {val_loss:.6} perplexity {:.4} (uniform: {})", val_loss.exp(), vocab.len());
    let sample = model.sample(&vocab, "The ", n_sample.max(0) as usize, seed)?;
    let mut out = std::io::stdout().lock();
    out.write_all(&[b"sample: The ", &sample[..], b"\n"].concat())?;
    if !save.is_empty() {
        model.net.save(&save)?;
        writeln!(out, "saved weights to {save}")?;
    }
    writeln!(out, "initial_loss={first:.6} final_loss={last:.6} val_loss={val_loss:.6} val_ppl={:.4} chars_per_s={:.1}",
             val_loss.exp(), (steps * batch * seq) as f64 / dt)?;
    Ok(())
}
