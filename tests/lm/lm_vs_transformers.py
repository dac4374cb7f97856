#!/usr/bin/env python3
"""ctorch's language-model decoders (ctorch_lm_load, sessions, decode) against
transformers, on the small random-weight folders of make_models.py (llama,
llama3-style RoPE scaling, mistral, qwen2, gpt2), through tests/lm/lm_check.c:

- the prompt's float32 logits at every position equal transformers' forward
  within float rounding (max |diff| <= 3e-5 x the largest |logit|, here ~3);
- 64 greedy new ids (argmax, one decode per id through the KV cache) are
  transformers' ids (its own KV cache, argmax each step), and each step's
  logits equal transformers' within the same bound (the one-token steps
  take the fused path of model_step.cpp, the prompt the operators' one);
- sliding windows (mistral's in every layer, qwen2_window's from its
  max_window_layers on) shorter than the prompt: the same checks;
- decode_batch over three sequences of different lengths, three rounds,
  equals each sequence decoded alone; fork and rewind give the prompt's
  logits again (lm_check prints the largest differences; the same bound);
- past the session's context a decode is refused and appends nothing
  (lm_check checks it);
- hostile or unknown configurations are refused by name, with no large
  allocation: an unknown model_type, an unimplemented rope_type, a
  dimension past its bound, a model whose weights would not fit in memory
  (refused before reading any weight: the largest child's peak RSS stays
  small), a tensor of the wrong shape.

The reference is this Python's transformers (the torch 2.15.0 environment
whatever libtorch ctorch is built against: the folders are data).
Exit 77 when transformers cannot be imported.

lm_gguf_vs_transformers.py runs the same comparisons on GGUF files of the
models (main(gguf=True)).

Usage: lm_vs_transformers.py --check BIN [--keep DIR]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # tests/optional_deps.py, ref_cache.py
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from optional_deps import need  # noqa: E402

os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
torch = need("torch")
need("transformers")
import make_models  # noqa: E402

PROMPT = [5, 17, 42, 99, 8, 64, 3, 71, 300, 11, 257, 13, 400, 6]
NEW = 64
TOL = 3e-5  # of the largest |logit| (at least 1)
# activations=int8: an activation a float32 rounding away from a rounding
# boundary lands one 8-bit step (1/127 of its group's largest value) from
# transformers'. The prompt's logits come from the same operations as
# transformers' and stay close; the greedy steps' fused kernels (their own
# norms and attention) round differently, and some values cross a
# boundary: measured 8.5e-3 of the largest logit on llama3.
INT8_TOL, INT8_STEP_TOL = 1e-4, 2e-2


def reference(model, prompt=PROMPT):
    """What compare() checks against: transformers' logits of prompt ([n, V]
    float32), NEW greedy ids, and the model's vocabulary size and parameter
    count (a dict of tensors and numbers: torch.save keeps it)."""
    with torch.no_grad():
        ids = torch.tensor([prompt])
        out = model(ids, use_cache=True)
        logits = out.logits[0].float()
        past = out.past_key_values
        nxt = int(out.logits[0, -1].argmax())
        greedy, steps = [], []
        for i in range(NEW):
            greedy.append(nxt)
            if i + 1 == NEW:
                break
            out = model(torch.tensor([[nxt]]), past_key_values=past, use_cache=True)
            past = out.past_key_values
            steps.append(out.logits[0, -1].float())
            nxt = int(out.logits[0, -1].argmax())
    return {"logits": logits, "greedy": greedy, "steps": torch.stack(steps), "vocab_size": model.config.vocab_size,
            "parameters": sum(p.numel() for p in model.parameters())}


def run(cmd):
    """The stdout of cmd, which must exit 0."""
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
    if p.returncode != 0:
        sys.exit(f"{cmd} exited {p.returncode}:\n{p.stdout}\n{p.stderr}")
    return p.stdout


def check_models(check, models, work, tol=TOL, prompt=PROMPT, refs=None, out_root=None, options=None, expect=None,
                 step_tol=None):
    """Runs lm_check over every folder or file (work/name) at once (with the
    load options `options`); compares each with its model's reference
    (logits within tol times the largest |logit|, at least 1). refs: the
    references where the caller has them (name -> reference()), models then
    only names the files. expect: {name: text} that the model's load report
    must hold. lm_check writes into out_root (default work). step_tol: the
    greedy steps' tolerance where it is not tol's."""
    if refs is None:
        refs = {name: reference(model, prompt) for name, model in models.items()}
    out_dir = os.path.join(out_root or work, "out")
    shutil.rmtree(out_dir, ignore_errors=True)
    for name in models:
        os.makedirs(os.path.join(out_dir, name))
    text = run([check, "--prompt", ",".join(map(str, prompt)), "--new", str(NEW), "--out", out_dir] +
               (["--options", options] if options else []) + [os.path.join(work, name) for name in models])
    blocks = text.split("model=")[1:]
    bad = [] if len(blocks) == len(models) else [f"{len(blocks)} results for {len(models)} models:\n{text}"]
    for name, block in zip(models, blocks):
        got = dict(line.split("=", 1) for line in block.split()[1:] if "=" in line)
        bad += compare(name, refs[name], got, os.path.join(out_dir, name), tol, (expect or {}).get(name), options,
                       step_tol)
    return bad


def compare(name, ref, got, out_dir, tol, expect=None, options=None, step_tol=None):
    ref_logits, ref_greedy = ref["logits"], ref["greedy"]
    logits = torch.from_file(os.path.join(out_dir, "prompt_logits.f32"), size=ref_logits.numel(),
                             dtype=torch.float32).view_as(ref_logits)
    diff = (logits - ref_logits).abs().max().item()
    ref_steps = ref["steps"]
    steps = torch.from_file(os.path.join(out_dir, "step_logits.f32"), size=ref_steps.numel(),
                            dtype=torch.float32).view_as(ref_steps)
    step_diff = (steps - ref_steps).abs().max().item()
    greedy = [int(x) for x in got["greedy"].split(",")]
    desc = json.load(open(os.path.join(out_dir, "describe.json")))
    print(f"{name}{' (' + options + ')' if options else ''}: logits max|diff| {diff:.3g} (|logits| up to {ref_logits.abs().max().item():.3g}), "
          f"greedy {sum(a == b for a, b in zip(greedy, ref_greedy))}/{NEW} equal, steps' logits {step_diff:.3g}, batch {got['batch_maxdiff']}, "
          f"fork {got['fork_maxdiff']}, rewind {got['rewind_maxdiff']}")
    bad = []
    if not diff <= tol * max(1.0, ref_logits.abs().max().item()):
        bad.append(f"logits differ by {diff}")
    if not step_diff <= (step_tol or tol) * max(1.0, ref_steps.abs().max().item()):
        bad.append(f"the greedy steps' logits differ by {step_diff}")
    if greedy != ref_greedy:
        bad.append(f"greedy ids differ:\n  ctorch       {greedy}\n  transformers {ref_greedy}")
    for k in ("batch_maxdiff", "fork_maxdiff", "rewind_maxdiff"):
        if not float(got[k]) <= tol * max(1.0, ref_logits.abs().max().item()):
            bad.append(f"{k} {got[k]}")
    if got.get("context") != "ok":
        bad.append("no context check")
    if expect and not any(expect in line for line in desc["report"]):
        bad.append(f"the load report does not say {expect!r}: {desc['report']}")
    if desc["n_vocab"] != ref["vocab_size"] or desc["eos"] != [2]:
        bad.append(f"describe: {desc}")
    if desc["parameters"] != ref["parameters"]:
        bad.append(f"describe's parameters {desc['parameters']}, transformers counts {ref['parameters']}")
    return [f"{name}: {b}" for b in bad]


def hostile(check, models_dir, work):
    """Folders (made in work from the models in models_dir) whose
    configuration is refused, each with the words its message must hold."""
    base = json.load(open(os.path.join(models_dir, "llama", "config.json")))
    cases = []

    def folder(name, cfg, weights=True, words=()):
        d = os.path.join(work, "bad_" + name)
        os.makedirs(d)
        json.dump(cfg, open(os.path.join(d, "config.json"), "w"))
        if weights:
            shutil.copy(os.path.join(models_dir, "llama", "model.safetensors"), d)
        cases.append((d, words))

    folder("arch", dict(base, model_type="falcon"), words=("falcon",))
    rope = dict(base)
    rope.pop("rope_scaling", None)
    rope["rope_parameters"] = {"rope_type": "yarn", "rope_theta": 10000.0, "factor": 4.0}
    folder("rope", rope, words=("yarn",))
    folder("huge", dict(base, hidden_size=1 << 40), weights=False, words=("hidden_size",))
    folder("too_big", dict(base, vocab_size=4000000, hidden_size=131072, intermediate_size=524288, head_dim=128,
                           num_attention_heads=1024, num_key_value_heads=8),
           weights=False, words=("parameters", "memory"))
    folder("shape", dict(base, intermediate_size=96), words=("gate_proj", "[128, 64]", "[96, 64]"))

    t0 = time.monotonic()
    text = run([check, "--expect-fail", "--ctx", "64"] + [c[0] for c in cases])
    took = time.monotonic() - t0
    rss_mb = int(text.split("peak_rss_kb=")[1].split()[0]) / 1024
    lines = [line for line in text.splitlines() if line.startswith("status=")]
    bad = []
    for (d, words), line in zip(cases, lines):
        print(f"{os.path.basename(d)}: {line}")
        if not line.startswith("status=CTORCH_INVALID_ARGUMENT") and not line.startswith("status=CTORCH_OUT_OF_MEMORY"):
            bad.append(f"{d}: {line}")
        for w in words:
            if w not in line:
                bad.append(f"{os.path.basename(d)}: the message does not name {w!r}: {line}")
    if len(lines) != len(cases):
        bad.append(f"{len(lines)} results for {len(cases)} folders:\n{text}")
    print(f"refusals: {took:.2f} s, peak RSS {rss_mb:.0f} MB")
    if rss_mb > 1024:
        bad.append(f"a refused load took {rss_mb:.0f} MB")
    return bad


def refused_options(check, model):
    """Load options refused by name: an activations value that is not float
    or int8, and int8 where there are no packed matrices to take it."""
    bad = []
    for opts, words in (("activations=int16", ("activations", "int16")),
                        ("activations=int8,weights=dequantize", ("activations=int8", "weights=dequantize"))):
        line = run([check, "--expect-fail", "--options", opts, model]).splitlines()[0]
        print(f"{opts}: {line}")
        if not line.startswith("status=CTORCH_INVALID_ARGUMENT") or not all(w in line for w in words):
            bad.append(f"{opts}: not refused by name: {line}")
    return bad


def make_cases(gguf, folder):
    """The models (folders, or GGUF files) in folder, and transformers'
    references of them in folder/references.pt."""
    refs = {}
    for name in (make_models.GGUF_TYPES if gguf else make_models.NAMES):
        if gguf:
            model = make_models.build(name)
            make_models.save_gguf(name, model, os.path.join(folder, name + ".gguf"))
            refs[name + ".gguf"] = reference(model)
        else:
            refs[name] = reference(make_models.save(name, folder)[1])
    torch.save(refs, os.path.join(folder, "references.pt"))
    if gguf:
        torch.save(quantized(), os.path.join(folder, "quantized.pt"))


def quantized():
    """The references of llama3.gguf (float32 matrices, tied head) loaded
    with quantize=q8_0 and quantize=bf16: transformers on the same model
    with its matrices (the tied embedding too) quantised as ctorch does.
    q8_0 in ctorch's float32 operations: groups of 32, scale d = max|x| /
    127, q = round-to-even(x * (1 / d)), value q * d; bf16 as torch rounds
    to bfloat16, the arithmetic staying float32 (weight-only)."""
    def q8_0(p):
        g = p.view(p.shape[0], -1, 32)
        d = g.abs().amax(-1, keepdim=True) / 127
        inv = torch.where(d > 0, 1 / torch.where(d > 0, d, 1), 0)
        return (torch.round(g * inv).clamp(-127, 127) * d).view_as(p)

    def int8_inputs(module, args):
        # activations=int8: each Linear's input as ctorch's int8 kernels take
        # it, rounded per group of 32 as q8_0 rounds the weights
        return (q8_0(args[0].contiguous().view(-1, args[0].shape[-1])).view_as(args[0]),)

    out = {}
    for how, quantise in (("q8_0", q8_0), ("bf16", lambda p: p.to(torch.bfloat16).float()), ("q8_0,int8", q8_0)):
        model = make_models.build("llama3")
        with torch.no_grad():
            for p in model.parameters():
                if p.dim() == 2:
                    p.copy_(quantise(p))
        if how.endswith("int8"):
            for m in model.modules():
                if isinstance(m, torch.nn.Linear):
                    m.register_forward_pre_hook(int8_inputs)
        out[how] = {"llama3.gguf": reference(model)}
    return out


def int8_kernels():
    """Whether ctorch's int8 kernels run here (shim/lm/qkernels_int8.cpp:
    AVX-512 with BW, VL and VNNI, and no CTORCH_LM_KERNELS choosing a
    narrower set)."""
    if os.environ.get("CTORCH_LM_KERNELS", "avx512") != "avx512":
        return False
    try:
        flags = next(l for l in open("/proc/cpuinfo") if l.startswith("flags")).split()
    except (OSError, StopIteration):
        return False
    return all(f in flags for f in ("avx512f", "avx512bw", "avx512vl", "avx512_vnni", "f16c"))


def main(gguf=False):
    """The models and their references come from the user's cache
    (tests/ref_cache.py, keyed by the packages' versions and these scripts:
    making them is most of the test's time, the same for every libtorch);
    --keep makes them anew in the folder it names."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--check", required=True)
    ap.add_argument("--keep", help="a folder to make the models in and keep")
    args = ap.parse_args()
    torch.set_num_threads(1)
    if args.keep:
        os.makedirs(args.keep, exist_ok=True)
        make_cases(gguf, args.keep)
        models_dir = args.keep
    else:
        import ref_cache
        import transformers
        here = os.path.dirname(os.path.abspath(__file__))
        k = ref_cache.key(gguf, PROMPT, NEW, torch.__version__, transformers.__version__,
                          files=[os.path.join(here, f) for f in ("lm_vs_transformers.py", "make_models.py")])
        models_dir = ref_cache.folder("lm-gguf-models" if gguf else "lm-models", k,
                                      lambda folder: make_cases(gguf, folder))
    refs = torch.load(os.path.join(models_dir, "references.pt"), weights_only=True)
    if gguf:
        quantized_refs = torch.load(os.path.join(models_dir, "quantized.pt"), weights_only=True)
    work = tempfile.mkdtemp(prefix="ctorch_lm_")
    try:
        if gguf:
            # GGUF's quantised matrices run packed by default (the load report
            # says so); the float path of weights=dequantize once, on the Q4_1
            # file; a float file quantised at load (quantize=q8_0, and
            # weight-only quantize=bf16) against its own quantised weights
            # (quantized() above).
            quantised = {n + ".gguf" for n, t in make_models.GGUF_TYPES.items() if t.startswith("Q")}
            expect = {n: "matrices packed" for n in quantised}
            expect["llama.gguf"] = "matrices packed (Q4/32: 4, Q8/32: 12"  # v and up Q4_0, the rest Q8_0
            bad = check_models(args.check, dict.fromkeys(refs), models_dir, refs=refs, out_root=work, expect=expect)
            bad += check_models(args.check, {"gpt2.gguf": None}, models_dir, refs={"gpt2.gguf": refs["gpt2.gguf"]},
                                out_root=work, options="weights=dequantize", expect={"gpt2.gguf": "dequantised"})
            for how in ("q8_0", "bf16"):
                bad += check_models(args.check, {"llama3.gguf": None}, models_dir, refs=quantized_refs[how],
                                    out_root=work, options="quantize=" + how,
                                    expect={"llama3.gguf": "quantised to " + how})
            # activations=int8: against transformers with every Linear's input
            # rounded as the kernels round it, where they run; elsewhere the
            # load falls back to float32 activations and says so.
            vnni = int8_kernels()
            bad += check_models(args.check, {"llama3.gguf": None}, models_dir,
                                refs=quantized_refs["q8_0,int8" if vnni else "q8_0"], out_root=work,
                                options="quantize=q8_0,activations=int8", tol=INT8_TOL if vnni else TOL,
                                step_tol=INT8_STEP_TOL if vnni else None,
                                expect={"llama3.gguf": "multiply x rounded to 8 bits" if vnni else
                                        "float32 activations"})
            bad += refused_options(args.check, os.path.join(models_dir, "llama3.gguf"))
        else:
            bad = check_models(args.check, dict.fromkeys(refs), models_dir, refs=refs, out_root=work)
            bad += hostile(args.check, models_dir, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if bad:
        sys.exit("FAILED:\n" + "\n".join(bad))
    print("ok")


if __name__ == "__main__":
    main()
