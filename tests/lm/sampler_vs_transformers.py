#!/usr/bin/env python3
"""ctorch's sampler chain (ctorch_lm_sampler_*) against its definitions.

Drives libctorch ($CTORCH_LIB) through ctypes, with the torch of the libtorch
ctorch was built with, on seeded random logits (a vocabulary of 1000, and one
of 64 with many ties):
  - each of transformers' processors (RepetitionPenaltyLogitsProcessor,
    TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper,
    MinPLogitsWarper) alone and chained in transformers' order, bit for bit
    (where transformers is installed; reported otherwise);
  - frequency and presence penalties against the OpenAI API's formula
    (logit - count * frequency - (count > 0) * presence), computed here in
    float64: equal within float32 rounding, and bit for bit against the same
    formula in float32 torch operators;
  - the seeded draw: 40 ids drawn by ctorch_lm_sampler_sample equal
    torch.multinomial(softmax(scores), 1) after torch.manual_seed(seed), on
    the scores ctorch_lm_sampler_apply gives; greedy is argmax;
  - bad options, logits and history refused, naming what is wrong.
"""
import ctypes as C
import importlib
import os
import sys

import torch

lib = C.CDLL(os.environ["CTORCH_LIB"])
lib.ctorch_last_error.restype = C.c_char_p
P = C.c_void_p
FLOAT32, INT64 = 9, 6
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def ok(st, what):
    if st != 0:
        raise RuntimeError(f"{what}: status {st}: {lib.ctorch_last_error().decode()}")


def from_torch(x):
    x = x.contiguous()
    t = P()
    sizes = (C.c_int64 * max(x.dim(), 1))(*x.shape)
    dtype = {torch.float32: FLOAT32, torch.int64: INT64}[x.dtype]
    ok(lib.ctorch_tensor_from_data(C.byref(t), C.c_void_p(x.data_ptr()), C.c_size_t(x.numel() * x.element_size()),
                                   sizes, C.c_size_t(x.dim()), dtype), "from_data")
    return t


def to_torch(t, shape):
    out = torch.empty(shape, dtype=torch.float32)
    ok(lib.ctorch_tensor_copy_to(C.c_void_p(out.data_ptr()), C.c_size_t(out.numel() * 4), t), "copy_to")
    return out


def sampler(options):
    s = P()
    ok(lib.ctorch_lm_sampler_new(C.byref(s), options.encode()), f"sampler_new({options})")
    return s


def history_arg(history):
    return (C.c_int64 * max(len(history), 1))(*history), C.c_size_t(len(history))


def c_apply(options, logits, history):
    s = sampler(options)
    t = from_torch(logits)
    h, n = history_arg(history)
    out = P()
    ok(lib.ctorch_lm_sampler_apply(C.byref(out), s, t, h, n), f"apply({options})")
    res = to_torch(out, list(logits.shape))
    for x in (out, t):
        lib.ctorch_tensor_free(x)
    lib.ctorch_lm_sampler_free(s)
    return res


def same_bits(a, b):
    return a.shape == b.shape and torch.equal(a.view(torch.int32), b.view(torch.int32))


g = torch.Generator().manual_seed(1234)
CASES = []
for V in (1000, 64):
    logits = torch.randn(1, V, generator=g) * 3
    if V == 64:
        logits = torch.round(logits)  # many ties: the sorts must break them as torch does
    history = torch.randint(0, V, (25,), generator=g).tolist() + [3, 3, 3]
    CASES.append((logits, history))

# 1. transformers' processors, bit for bit
try:
    lp = importlib.import_module("transformers.generation.logits_process")
except ImportError as e:
    lp = None
    print(f"note: {sys.executable} has no transformers ({e}): the processors are not compared "
          f"(scripts/deps and scripts/torch-env install it)")
if lp is not None:
    def chain(*procs):
        def run(ids, scores):
            for p in procs:
                scores = p(ids, scores)
            return scores
        return run
    CONFIGS = [
        ("repetition_penalty=1.3", lp.RepetitionPenaltyLogitsProcessor(1.3)),
        ("repetition_penalty=0.8", lp.RepetitionPenaltyLogitsProcessor(0.8)),
        ("temperature=0.7", lp.TemperatureLogitsWarper(0.7)),
        ("temperature=1.5,top_k=50", chain(lp.TemperatureLogitsWarper(1.5), lp.TopKLogitsWarper(50))),
        ("temperature=1,top_k=5", lp.TopKLogitsWarper(5)),
        ("temperature=1,top_p=0.9", lp.TopPLogitsWarper(0.9)),
        ("temperature=1,top_p=0.3", lp.TopPLogitsWarper(0.3)),
        ("temperature=1,min_p=0.05", lp.MinPLogitsWarper(0.05)),
        ("temperature=1,min_p=0.5", lp.MinPLogitsWarper(0.5)),
        ("repetition_penalty=1.2,temperature=0.8,top_k=40,top_p=0.95,min_p=0.02,seed=7",
         chain(lp.RepetitionPenaltyLogitsProcessor(1.2), lp.TemperatureLogitsWarper(0.8), lp.TopKLogitsWarper(40),
               lp.TopPLogitsWarper(0.95), lp.MinPLogitsWarper(0.02))),
    ]
    for logits, history in CASES:
        ids = torch.tensor([history])
        for opts, proc in CONFIGS:
            want = proc(ids, logits.clone())
            got = c_apply(opts, logits, history)
            check(same_bits(got, want), f"V={logits.shape[1]} {opts}: differs from transformers in "
                                        f"{int((got != want).sum())} entries")

# 2. frequency / presence: the OpenAI formula
for logits, history in CASES:
    V = logits.shape[1]
    for f, p in ((0.5, 0.0), (0.0, 0.7), (0.4, -0.3), (1.25, 2.0)):
        got = c_apply(f"frequency_penalty={f},presence_penalty={p}", logits, history)
        counts = [history.count(j) for j in range(V)]
        want64 = [float(logits[0, j]) - counts[j] * f - (1.0 if counts[j] > 0 else 0.0) * p for j in range(V)]
        err = max(abs(float(got[0, j]) - want64[j]) / max(1.0, abs(want64[j])) for j in range(V))
        check(err < 2e-6, f"V={V} frequency={f} presence={p}: relative error {err} from the OpenAI formula")
        c = torch.bincount(torch.tensor(history), minlength=V).to(torch.float32).reshape(1, V)
        want32 = logits.sub(c.mul(f)).sub((c > 0).to(torch.float32).mul(p))
        check(same_bits(got, want32), f"V={V} frequency={f} presence={p}: not the float32 formula's bits")
    # no history: nothing changes
    check(same_bits(c_apply("frequency_penalty=1,presence_penalty=1,repetition_penalty=2", logits, []), logits),
          "penalties with an empty history changed the logits")

# 3. the seeded draw and greedy
for seed in (0, 42, 2**40 + 3):
    opts = f"temperature=0.9,top_k=200,top_p=0.98,seed={seed}"
    s = sampler(opts)
    torch.manual_seed(seed)
    steps = torch.Generator().manual_seed(seed + 1)
    drawn, want = [], []
    for step in range(40):
        logits = torch.randn(1, 1000, generator=steps)
        hist = drawn[-8:]
        scores = c_apply(opts, logits, hist)
        want.append(int(torch.multinomial(torch.softmax(scores, -1), 1)))
        t = from_torch(logits)
        h, n = history_arg(hist)
        out = C.c_int64()
        ok(lib.ctorch_lm_sampler_sample(C.byref(out), s, t, h, n), "sample")
        lib.ctorch_tensor_free(t)
        drawn.append(out.value)
    lib.ctorch_lm_sampler_free(s)
    check(drawn == want, f"seed {seed}: ctorch drew {drawn[:10]}..., torch.multinomial {want[:10]}...")
greedy = sampler("repetition_penalty=1.5")
for logits, history in CASES:
    t = from_torch(logits[0])  # a 1-D [V] logits
    h, n = history_arg(history)
    out = C.c_int64()
    ok(lib.ctorch_lm_sampler_sample(C.byref(out), greedy, t, h, n), "greedy sample")
    lib.ctorch_tensor_free(t)
    penalised = c_apply("repetition_penalty=1.5", logits, history)
    check(out.value == int(torch.argmax(penalised)), f"greedy: {out.value} is not the argmax of the penalised scores")
lib.ctorch_lm_sampler_free(greedy)
s = sampler("")
check(s.value is not None, "empty options make a greedy sampler")
lib.ctorch_lm_sampler_free(s)

# 4. refusals, naming what is wrong
BAD = [("top_q=0.5", "top_q"), ("temperature=-1", "temperature"), ("top_p=0", "top_p"), ("top_p=1.5", "top_p"),
       ("top_k=-3", "top_k"), ("seed=abc", "seed"), ("min_p=2", "min_p"), ("repetition_penalty=0", "repetition_penalty"),
       ("temperature=1,temperature=2", "temperature"), ("temperature", "temperature"), ("frequency_penalty=nan", "frequency_penalty"),
       ("seed=99999999999999999999999", "seed")]
for opts, name in BAD:
    s = P()
    st = lib.ctorch_lm_sampler_new(C.byref(s), opts.encode())
    msg = lib.ctorch_last_error().decode()
    check(st == 1 and name in msg and "ctorch_lm_sampler_new" in msg and not s.value,
          f"options {opts!r}: status {st}, message {msg!r}")
s = sampler("temperature=1")
logits, history = CASES[0]
for what, tensor, hist, name in (
        ("a [2, V] batch", torch.zeros(2, 10), [], "logits"),
        ("integer logits", torch.zeros(1, 10, dtype=torch.int64), [], "logits"),
        ("an id past the vocabulary", logits, [5, 1000], "history"),
        ("a negative id", logits, [-1], "history")):
    t = from_torch(tensor)
    h, n = history_arg(hist)
    out = P()
    st = lib.ctorch_lm_sampler_apply(C.byref(out), s, t, h, n)
    msg = lib.ctorch_last_error().decode()
    check(st == 1 and name in msg and not out.value, f"apply with {what}: status {st}, message {msg!r}")
    idv = C.c_int64()
    st = lib.ctorch_lm_sampler_sample(C.byref(idv), s, t, h, n)
    check(st == 1 and name in lib.ctorch_last_error().decode(), f"sample with {what}: status {st}")
    lib.ctorch_tensor_free(t)
lib.ctorch_lm_sampler_free(s)

print(f"sampler: {len(CASES)} logits sets, processors {'compared' if lp else 'not compared'} with transformers, "
      f"{len(failures)} failures")
sys.exit(1 if failures else 0)
