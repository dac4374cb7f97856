"""Checks examples/python/finetune_torchvision's output in Python: the saved
state dict loads into torchvision's ResNet-18 (10 classes), only fc differs
from the model torch.manual_seed(seed) builds, and the loaded model gives C's
logits on C's batch.

Usage: finetune_check.py EXAMPLE_BINARY DATA_DIR WORK_DIR
"""
import os
import subprocess
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # tests/optional_deps.py
from optional_deps import need  # noqa: E402

torchvision = need("torchvision")  # scripts/deps and scripts/torch-env install it


def main():
    exe, data, work = sys.argv[1:4]
    seed = 3
    run = subprocess.run([exe, "--data", data, "--steps", "30", "--batch", "32", "--seed", str(seed), "--out", work],
                         capture_output=True, text=True)
    print(run.stdout, run.stderr)
    assert run.returncode == 0, f"the example exited with {run.returncode}"
    last = run.stdout.strip().splitlines()[-1]
    vals = dict(kv.split("=") for kv in last.split())
    assert float(vals["final_loss"]) < float(vals["initial_loss"]), last
    assert vals["trained"] == "2", last

    torch.manual_seed(seed)
    fresh = torchvision.models.resnet18(num_classes=10).eval()
    tuned = torchvision.models.resnet18(num_classes=10).eval()
    state = torch.load(f"{work}/finetuned.pt")
    tuned.load_state_dict(state)  # strict: every key, every shape
    f0 = fresh.state_dict()
    changed = sorted(k for k, v in tuned.state_dict().items() if not torch.equal(v, f0[k]))
    assert changed == ["fc.bias", "fc.weight"], changed

    check = torch.load(f"{work}/check.pt")
    with torch.no_grad():
        logits = tuned(check["x"])
    diff = (logits - check["logits"]).abs().max().item()
    print(f"torch {torch.__version__}, torchvision {torchvision.__version__}: changed {changed}, "
          f"max |python - C| logits {diff:.3g}")
    assert diff <= 1e-4, diff


if __name__ == "__main__":
    main()
