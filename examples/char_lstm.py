#!/usr/bin/env python3
"""A character-level LSTM language model in Python PyTorch: the twin of examples/char_lstm.c.

Same model (Embedding(V, 32) -> 2-layer LSTM(hidden 128) -> Linear(V)), the same
initial weights from the same seed, the same windows of the same text
(truncated BPTT over `batch` streams, state carried and detached), Adam lr
3e-3 with the gradient norm clipped to 1.0, the same output.

  python3 examples/char_lstm.py [--text PATH] [--steps K] [--batch B] [--seq T]
                                [--hidden H] [--seed S] [--threads N] [--sample N]
                                [--save PATH] [--load PATH]
--load PATH starts from a state_dict (e.g. the one char_lstm.c saved), loaded
strictly; with --steps 0 the program only measures and samples it.
The last line of output is
  initial_loss=<nats> final_loss=<nats> val_loss=<nats> val_ppl=<number> chars_per_s=<number>
"""
import argparse
import math
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

EMBED, EVAL_STREAMS = 32, 8


class CharLSTM(nn.Module):
    def __init__(self, v, hidden=128):
        super().__init__()
        self.embed = nn.Embedding(v, EMBED)
        self.lstm = nn.LSTM(EMBED, hidden, num_layers=2, batch_first=True)
        self.head = nn.Linear(hidden, v)

    def forward(self, x, state=None):
        out, state = self.lstm(self.embed(x), state)
        return self.head(out), state


def batchify(ids, streams):
    cols = ids.numel() // streams
    return ids[:streams * cols].view(streams, cols)


def window_loss(model, ids, start, length, state):
    logits, (h, c) = model(ids[:, start:start + length], state)
    y = ids[:, start + 1:start + 1 + length].reshape(-1)
    loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y)
    return loss, (h.detach(), c.detach())


def evaluate(model, ids, seq):
    model.eval()
    total = count = 0
    state = None
    with torch.inference_mode():
        for start in range(0, ids.shape[1] - 1, seq):
            length = min(seq, ids.shape[1] - 1 - start)
            loss, state = window_loss(model, ids, start, length, state)
            total += loss.item() * length
            count += length
    model.train()
    return total / count


def sample(model, vocab, prompt, n, seed):
    code = {b: i for i, b in enumerate(vocab)}
    x = torch.tensor([[code[b] for b in prompt.encode() if b in code]])
    g = torch.Generator().manual_seed(seed)
    out = bytearray(prompt.encode())
    state = None
    with torch.inference_mode():
        for _ in range(n):
            logits, state = model(x, state)
            i = int(torch.multinomial(F.softmax(logits[:, -1], -1), 1, generator=g))
            out.append(vocab[i])
            x = torch.tensor([[i]])
    sys.stdout.buffer.write(b"sample: " + bytes(out) + b"\n")
    sys.stdout.flush()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--text", default="/usr/share/common-licenses/GPL-3")
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--seq", type=int, default=32)
    ap.add_argument("--hidden", type=int, default=128)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--sample", type=int, default=200)
    ap.add_argument("--save", default="")
    ap.add_argument("--load", default="")
    a = ap.parse_args()
    try:
        data = open(a.text, "rb").read()
    except OSError:
        print(f"char_lstm.py: cannot read {a.text}: skipped", file=sys.stderr)
        sys.exit(77)
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    vocab = sorted(set(data))
    code = {b: i for i, b in enumerate(vocab)}
    ids = torch.tensor([code[b] for b in data])
    n_train = len(data) * 9 // 10
    train, val = batchify(ids[:n_train], a.batch), batchify(ids[n_train:], EVAL_STREAMS)
    windows = (train.shape[1] - 1) // a.seq

    torch.manual_seed(a.seed)
    model = CharLSTM(len(vocab), a.hidden)
    if a.load:
        model.load_state_dict(torch.load(a.load))
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    print(f"char-LSTM (hidden {a.hidden}) on {a.text} ({len(data)} characters, {len(vocab)} distinct), {a.steps} steps, "
          f"batch {a.batch} x {a.seq}, {torch.get_num_threads()} thread(s), seed {a.seed} [python]", flush=True)
    t0 = time.perf_counter()
    state = None
    first = last = 0.0
    for step in range(a.steps):
        w = step % windows
        if w == 0:
            state = None
        opt.zero_grad(set_to_none=True)
        loss, state = window_loss(model, train, w * a.seq, a.seq, state)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        last = loss.item()
        if step == 0:
            first = last
        if step == 0 or (step + 1) % 50 == 0 or step + 1 == a.steps:
            print(f"step {step + 1}/{a.steps} loss {last:.6f} ppl {math.exp(last):.3f}", flush=True)
    dt = time.perf_counter() - t0
    val_loss = evaluate(model, val, a.seq)
    print(f"held-out loss {val_loss:.6f} perplexity {math.exp(val_loss):.4f} (uniform: {len(vocab)})")
    sample(model, vocab, "The ", a.sample, a.seed)
    if a.save:
        torch.save(model.state_dict(), a.save)
        print(f"saved weights to {a.save}")
    print(f"initial_loss={first:.6f} final_loss={last:.6f} val_loss={val_loss:.6f} "
          f"val_ppl={math.exp(val_loss):.4f} chars_per_s={a.steps * a.batch * a.seq / max(dt, 1e-9):.1f}")


if __name__ == "__main__":
    main()
