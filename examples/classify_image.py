#!/usr/bin/env python3
"""The Python twin of examples/classify_image.c: torchvision.io.read_image, the
eval transforms (Resize(256) with this torchvision's default antialias,
CenterCrop(224), ConvertImageDtype(float), Normalize) and
torchvision.models.resnet18, printing the same lines.

No weights are downloaded: the model is resnet18(weights=None) made from
--seed, or a state dict loaded with --weights; --save writes its state dict
(torch.save) for classify_image.c's --weights.

Usage: classify_image.py --image PATH [--weights PATH | --seed S] [--save PATH]
                         [--threads T] [--logits PATH]
"""
import argparse

import torch
import torchvision
from torchvision import transforms as T
from torchvision.io import ImageReadMode, read_image


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--image", required=True)
    ap.add_argument("--weights", default="")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--save", default="")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--logits", default="")
    a = ap.parse_args()
    if a.threads > 0:
        torch.set_num_threads(a.threads)

    torch.manual_seed(a.seed)
    model = torchvision.models.resnet18(weights=None)
    if a.weights:
        model.load_state_dict(torch.load(a.weights))
    if a.save:
        torch.save(model.state_dict(), a.save)
    model.eval()
    preprocess = T.Compose([T.Resize(256), T.CenterCrop(224), T.ConvertImageDtype(torch.float),
                            T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])
    img = read_image(a.image, ImageReadMode.RGB)
    with torch.inference_mode():
        logits = model(preprocess(img).unsqueeze(0))
        probs = logits.softmax(1)
        top = probs.topk(5, 1).indices[0].tolist()

    print(f"resnet18 on {a.image} ({img.shape[1]}x{img.shape[2]})")
    for rank, c in enumerate(top, 1):
        print(f"rank={rank} class={c} prob={probs[0, c].item():.9g} logit={logits[0, c].item():.9g}")
    if a.logits:
        with open(a.logits, "w") as f:
            f.writelines(f"{v:.9g}\n" for v in logits[0].tolist())


if __name__ == "__main__":
    main()
