"""Files for model_bench's paired modes (docs/inference-benchmarks.md,
"The inference optimiser"): torchvision's resnet50 (random weights, eval) as
TorchScript (DIR/resnet50.pt) and as a safetensors state dict
(DIR/resnet50.safetensors, for the module-layer ResNet-50), and seeded inputs
DIR/in_b1.safetensors and DIR/in_b16.safetensors (tensor in0, 224x224).
Usage: python resnet_jit.py DIR
"""
import os
import sys

import torch
import torchvision
from safetensors.torch import save_file

d = sys.argv[1]
os.makedirs(d, exist_ok=True)
torch.manual_seed(0)
m = torchvision.models.resnet50(weights=None).eval()
torch.jit.script(m).save(f"{d}/resnet50.pt")
save_file({k: v.contiguous() for k, v in m.state_dict().items()}, f"{d}/resnet50.safetensors")
for b in (1, 16):
    save_file({"in0": torch.randn(b, 3, 224, 224)}, f"{d}/in_b{b}.safetensors")
