"""A ResNet-50 probe: does giving each frozen
convolution's weight the layout oneDNN picks for the real input size
remove the weight reorders that `torch.jit.optimize_for_inference` leaves
in every call? (docs/inference-benchmarks.md, "The weight layout at the
real input size".)

torchvision's resnet50 (random weights, eval) is scripted, frozen and
optimised; then every `prim::ConstantMKLDNNTensor` weight of a
`prim::mkldnn_convolution` is replaced in the graph by
`aten::mkldnn_reorder_conv2d_weight(w, padding, stride, dilation, groups,
input_size)` at its convolution's input size (taken from forward hooks on
the eager model). Prints the output difference (must be 0: only the
layout changes) and the milliseconds per call before and after, best of
3 rounds of 10 calls. With ONEDNN_VERBOSE=1 the reorders can be counted.
Usage: python resnet_weight_layout.py THREADS BATCH   (torch >= 2.0)
"""
import sys
import time
import warnings

import torch
import torchvision

warnings.filterwarnings("ignore")
torch.set_num_threads(int(sys.argv[1]))
batch = int(sys.argv[2])
torch.manual_seed(0)
model = torchvision.models.resnet50(weights=None).eval()
x = torch.randn(batch, 3, 224, 224)

# Each convolution's input size, by module path.
sizes, hooks = {}, []
for name, mod in model.named_modules():
    if isinstance(mod, torch.nn.Conv2d):
        hooks.append(mod.register_forward_hook(
            lambda mod, inp, out, name=name: sizes.__setitem__(name, list(inp[0].shape))))
with torch.no_grad():
    ref = model(x)
for h in hooks:
    h.remove()

opt = torch.jit.optimize_for_inference(torch.jit.freeze(torch.jit.script(model)))


def ms_per_call(n=10, rounds=3):
    out = []
    with torch.no_grad():
        for _ in range(rounds):
            t = time.perf_counter()
            for _ in range(n):
                opt(x)
            out.append((time.perf_counter() - t) / n * 1000)
    return sorted(out)


with torch.no_grad():
    y0 = opt(x)
before = ms_per_call()

graph = opt.graph
consts = {n.output().debugName(): n for n in graph.nodes() if n.kind() == "prim::ConstantMKLDNNTensor"}
replaced = 0
for node in graph.nodes():
    if node.kind() != "prim::mkldnn_convolution":
        continue
    # prim::mkldnn_convolution(input, weight, bias, stride, padding, dilation, groups)
    args = list(node.inputs())
    wname = args[1].debugName()  # e.g. self.layer1.0.conv1.weight_fused_bn_mkldnn
    path = wname[len("self."):].split(".weight")[0]
    stride, padding, dilation, groups = (v.toIValue() for v in args[3:7])
    const = consts[wname]
    const.t_("value", torch.ops.aten.mkldnn_reorder_conv2d_weight(
        const.t("value"), padding, stride, dilation, groups, sizes[path]))
    replaced += 1

with torch.no_grad():
    y1 = opt(x)
after = ms_per_call()
print(f"replaced {replaced} weights; max |after - before| {(y1 - y0).abs().max().item()}, "
      f"max |optimised - eager| {(y1 - ref).abs().max().item():.3g}")
print("ms per call before", [round(v, 1) for v in before], "after", [round(v, 1) for v in after])
