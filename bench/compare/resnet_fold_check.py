#!/usr/bin/env python3
"""The output check of model_bench.c's ResNet-50 ways (bench/compare):
torchvision's resnet50 (random weights made here, nothing downloaded; the
BatchNorms' running statistics, weights and biases moved off their initial
values so that a fold that skipped or misplaced one would show) run by
torch eager and by model_bench in the modes resnet50 (C modules),
resnet50-fold (BatchNorms folded, channels-last), resnet50-fold-nchw and
resnet50-cl, one thread, two 96x96 images.

1. Each way's logits agree with torch eager's within --tol times the largest
   |logit| (folding and channels-last change the rounding, so not bit for bit).
2. The folded weights and biases model_bench saves (MODEL_BENCH_FOLDED) are
   bit for bit those of torch.nn.utils.fusion.fuse_conv_bn_eval on the same
   modules, all 53 convolutions; resnet50-cl's are the unfolded weights.

Exit 77 ("skipped: why") when this Python lacks torchvision or safetensors.
Usage: resnet_fold_check.py --bin BUILD/bench/compare/compare_model_bench [--tol T]
"""
import argparse
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests"))
from optional_deps import need  # noqa: E402

import torch  # noqa: E402

torchvision = need("torchvision", "the reference ResNet-50")
st = need("safetensors.torch", "the model_bench inputs")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--tol", type=float, default=1e-4)
    a = ap.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)  # as model_bench runs: the same conv kernels' summation order
    m = torchvision.models.resnet50(weights=None).eval()
    convs = {}  # conv name -> the BatchNorm after it
    with torch.no_grad():
        for name, mod in m.named_modules():
            if isinstance(mod, torch.nn.BatchNorm2d):
                mod.running_mean.copy_(torch.randn_like(mod.running_mean) * 0.1)
                mod.running_var.copy_(torch.rand_like(mod.running_var) + 0.5)
                mod.weight.copy_(torch.randn_like(mod.weight) * 0.1 + 1)
                mod.bias.copy_(torch.randn_like(mod.bias) * 0.1)
        mods = dict(m.named_modules())
        for name, mod in mods.items():
            if isinstance(mod, torch.nn.Conv2d):
                bn = name.replace("conv", "bn") if "conv" in name else name[:-1] + "1"  # downsample.0 -> .1
                convs[name] = mods[bn]
        x = torch.randn(2, 3, 96, 96)
        ref = m(x)
    assert len(convs) == 53, len(convs)
    bad = []
    with tempfile.TemporaryDirectory() as d:
        st.save_file({k: v.contiguous() for k, v in m.state_dict().items()}, os.path.join(d, "w.safetensors"))
        st.save_file({"in0": x}, os.path.join(d, "in.safetensors"))
        for mode in ("resnet50", "resnet50-fold", "resnet50-fold-nchw", "resnet50-cl", "resnet50-fold-mkldnn"):
            out, dump = os.path.join(d, "out.safetensors"), os.path.join(d, "folded.pt")
            env = dict(os.environ, MODEL_BENCH_FOLDED=dump, OMP_NUM_THREADS="1")
            subprocess.run([a.bin, mode, os.path.join(d, "w.safetensors"), os.path.join(d, "in.safetensors"), "1",
                            "1", out], check=True, env=env, stdout=subprocess.DEVNULL)
            y = st.load_file(out)["out"]
            diff = (y - ref).abs().max().item()
            ok = y.shape == ref.shape and diff <= a.tol * ref.abs().max().item()
            print(f"{mode}: max abs diff vs torch eager {diff:.3e} (max |logit| {ref.abs().max().item():.3g})"
                  f"{'' if ok else ' FAIL'}")
            if not ok:
                bad.append(mode)
            if mode == "resnet50":
                continue
            got = torch.load(dump)
            same = 0
            for name, bn in convs.items():
                conv = mods[name]
                if "fold" in mode:
                    want = torch.nn.utils.fusion.fuse_conv_bn_eval(conv, bn)
                    w, b = want.weight, want.bias
                else:
                    w, b = conv.weight, None
                gw, gb = got.get(name + ".weight"), got.get(name + ".bias")
                if gw is not None and torch.equal(gw, w) and (gb is None) == (b is None) and (
                        b is None or torch.equal(gb, b)):
                    same += 1
                else:
                    bad.append(f"{mode} {name}")
            print(f"{mode}: {same} of {len(convs)} convolutions' weights bit for bit those of "
                  f"{'fuse_conv_bn_eval' if 'fold' in mode else 'the state dict'}")
    if bad:
        print("FAIL: " + ", ".join(bad[:10]))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
