#!/usr/bin/env python3
"""lm_vs_transformers.py's comparisons on GGUF files of its models
(make_models.save_gguf, PyPI's gguf package: llama's matrices Q8_0 with its
q/k rows in llama.cpp's order, llama3's RoPE scaling as rope_freqs factors,
qwen2's matrices F16, gpt2's Q4_1 with its Conv1D matrices transposed),
against the transformers models holding the weights the files hold
(dequantised): logits within float rounding, 64 greedy ids equal, batched
decode, fork and rewind. llama's v and up projections are Q4_0 (its stacked
q/k/v and gate/up run as two packed formats each). The quantised files run
the packed kernels (the load report says so), the Q4_1 file once more with
weights=dequantize, and the float32 llama3 file quantised at load
(quantize=q8_0) against transformers on the same quantised weights; once
more with activations=int8, against transformers with each Linear's input
rounded to 8 bits as the int8 kernels round it (where the CPU runs them),
and an unknown activations value and int8 without packed matrices refused
by name.
Exit 77 without transformers or gguf.

Usage: lm_gguf_vs_transformers.py --check BIN [--keep DIR]
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # tests/optional_deps.py
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from optional_deps import need  # noqa: E402

need("gguf", "the GGUF files are written with PyPI's gguf package")
need("torch")
need("transformers")
import lm_vs_transformers  # noqa: E402

if __name__ == "__main__":
    lm_vs_transformers.main(gguf=True)
