"""ctorch.lm (the Python binding's language-model layer) on SmolLM2-135M-Instruct's
GGUF, against the C API it is made of:

- a greedy generation's ids are the argmax, step by step, of a session's
  decode logits (the binding's stream composes decode and sampling correctly),
  and its pieces join to detokenize(ids, skip_special=True);
- a seeded sampled generation repeats itself with the same seed;
- max_tokens ends with finish_reason "length"; a stop string ends the text
  before it; a chat prompt is the model's template through tokenize without
  added specials; tokenize/detokenize round-trip; a Detokenizer's pieces join
  to detokenize; fork and rewind give the same logits as a fresh decode;
- bad input raises the C API's error naming the function; the options text
  refuses values that would change its structure.

Skipped (77) without the model (tests/bindings/lm_model.py sets
CTORCH_LM_MODEL) or while the library reports the C functions not implemented."""
import os
import sys

import ctorch
from ctorch import lm
from py_check import expect, finish

# The options text needs no model.
expect(lm.options_text(temperature=0.5, top_k=40, skip_special=True, seed=None) ==
       "temperature=0.5,top_k=40,skip_special=1", "options_text")
for bad in ("a,b", "x=y"):
    try:
        lm.options_text(dtype=bad)
        expect(False, f"options_text accepted {bad!r}")
    except ValueError:
        pass

path = os.environ.get("CTORCH_LM_MODEL")
if not path:
    print("skipped:", os.environ.get("CTORCH_LM_MODEL_ABSENT", "CTORCH_LM_MODEL is not set (tests/bindings/lm_model.py)"))
    sys.exit(77)
try:
    model = lm.Model.load(path)
except ctorch.CtorchError as e:
    if e.status_name == "CTORCH_NOT_IMPLEMENTED":
        print("skipped: the library does not implement ctorch_lm_load yet:", e)
        sys.exit(77)
    raise

info = model.info
expect(info["architecture"] == "llama" and info["source"] == "gguf", f"describe: {info}")
# weights= reaches the C options: the GGUF's matrices packed (the default) or dequantised.
deq = lm.Model.load(path, weights="dequantize")
expect(any("kept packed" in r for r in info["report"]), f"the default load's report: {info['report']}")
expect(not any("kept packed" in r for r in deq.info["report"]), f"weights=dequantize's report: {deq.info['report']}")
deq.close()
# activations= too: the load report says what it did (int8, or float32 on a CPU without VNNI).
i8 = lm.Model.load(path, activations="int8")
expect(any(r.startswith("activations=int8") for r in i8.info["report"]), f"activations=int8's report: {i8.info['report']}")
i8.close()

# Tokenize and detokenize.
text = "Hello, world! Ça va? 1234  spaces\tand tabs"
ids = model.tokenize(text, add_special=False)
expect(all(isinstance(i, int) for i in ids) and len(ids) > 5, f"tokenize: {ids}")
expect(model.detokenize(ids) == text, f"round trip: {model.detokenize(ids)!r}")
d = model.detokenizer(skip_special=False)
expect("".join(d.push(i) for i in ids) + d.flush() == text, "detokenizer pieces")

# Chat: the template's text, tokenized without specials.
messages = [{"role": "user", "content": "What is the capital of France?"}]
chat = model.chat(messages)
expect("What is the capital of France?" in chat and chat.rstrip().endswith("assistant"), f"chat: {chat!r}")
expect(model.prompt_ids(messages) == model.tokenize(chat, add_special=False), "prompt_ids of messages")
expect(model.chat(messages, add_generation_prompt=False) != chat, "add_generation_prompt=False")

# Greedy generation equals decode + argmax, step by step, to the end-of-sequence id.
n = 24
g = model.generate(messages, max_tokens=n)
pieces = list(g)
eos = info["eos"]
expect(g.finish_reason == "stop" and g.ids[-1] in eos and len(g.ids) < n, f"{g.ids} {g.finish_reason!r}, eos {eos}")
expect("".join(pieces) == g.text == model.detokenize(g.ids, skip_special=True), f"pieces {pieces!r}")
expect(all(p for p in pieces), "no empty piece is yielded")
print(f"greedy answer: {g.text!r} ({len(g.ids)} ids, {g.finish_reason})")
prompt = model.prompt_ids(messages)
with model.session(len(prompt) + n) as s:
    logits = s.decode(prompt)
    want = []
    for _ in range(len(g.ids)):
        want.append(int(logits.argmax().item()))
        logits = s.decode([want[-1]])
expect(g.ids == want, f"greedy ids {g.ids} != decode argmax {want}")
ml = model.generate("Once upon a time", max_tokens=5)
expect(len(ml.read()) > 0 and len(ml.ids) == 5 and ml.finish_reason == "length", f"max_tokens: {ml.ids}")

# A seeded sampled generation repeats itself.
a = model.generate("Once upon a time", max_tokens=16, temperature=0.9, top_k=50, top_p=0.95, seed=7)
b = model.generate("Once upon a time", max_tokens=16, temperature=0.9, top_k=50, top_p=0.95, seed=7)
expect(a.read() == b.read() and a.ids == b.ids, "same seed, same text")

# A stop string ends the text before it.
full = model.generate(messages, max_tokens=24).read()
cut = full.split()[1] if len(full.split()) > 1 else None
if cut:
    st = model.generate(messages, max_tokens=24, stop=[cut])
    out = st.read()
    expect(st.finish_reason == "stop" and out == full[:full.index(cut)], f"stop {cut!r}: {out!r} of {full!r}")

# Sessions: fork and rewind give what a fresh decode gives.
with model.session(64, n_seq=2) as s:
    first = s.decode(prompt[:8])
    s.fork(1, 0)
    expect(s.length(1) == 8, "fork length")
    x = s.decode(prompt[8:12], seq=1)
    s.rewind(8, seq=1)
    y = s.decode(prompt[8:12], seq=1)
    expect((x - y).abs().max().item() < 1e-4, "rewind then decode again")
    both = s.decode_batch({0: prompt[8:12], 1: [prompt[12]]})
    expect(list(both.shape) == [2, info["n_vocab"]], f"decode_batch shape {both.shape}")
    expect(list(first.shape) == [1, info["n_vocab"]], "decode shape")

# Sampler: greedy picks the argmax; apply keeps the shape.
sp = lm.Sampler()
logits = ctorch.tensor([[0.1, 2.0, -1.0, 0.5]])
expect(sp.sample(logits) == 1, "greedy sample")
expect(list(lm.Sampler(top_k=2, temperature=1.0).apply(logits).shape) == [1, 4], "apply shape")

# Bad input: the C API's error, naming the function.
for fn, needle in ((lambda: model.detokenize([10 ** 9]), "ctorch_lm_detokenize"),
                   (lambda: lm.Model.load("/nonexistent/model.gguf"), "ctorch_lm_load"),
                   (lambda: model.chat("not messages"), "ctorch_lm_chat_apply")):
    try:
        fn()
        expect(False, f"no error ({needle})")
    except (ctorch.CtorchError, TypeError, ValueError) as e:
        expect(needle in str(e), f"error names {needle}: {e}")

model.close()
finish("ctorch.lm")
