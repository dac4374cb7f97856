"""The optimiser's precisions against PyTorch's own (test_infer_precision.c's python tcase).

    precision_vs_torch.py DIR

DIR holds, per model NAME (bert, cnn): NAME_sd.pt (the float32 state dict),
NAME_x.pt (the input set), NAME_cal.pt (the calibration batches, keys "0",
"1", ...), and per precision TAG (int8, bf16, int8s) ctorch's output
NAME_TAG_y.pt, its optimised state dict NAME_TAG_sd.pt and its report
NAME_TAG_report.txt; for bert, int8's output for two more input sets too
(NAME_xl.pt and NAME_xs.pt, 320 and 8 rows, one each side of the row count
where the auto engine may change: NAME_int8_yl.pt, NAME_int8_ys.pt).

int8: the float32 model put through torch.ao.quantization.quantize_dynamic
({Linear}, qint8; torch.quantization on 1.13) with the quantized engine
ctorch reports, run layer by layer with the reduce_range ctorch reports
(quantize_dynamic's module always passes reduce_range=True; ctorch uses the
full range on VNNI CPUs), each call on the engine ctorch reports for its
row count: the same int8 weights, activation quantisation, kernels and
exact int32 sums, so the outputs are PyTorch's bit for bit (the engines
round differently in the last bits or more: a tolerance would not see a
call on the other engine). bf16: ctorch's bf16 tensors are PyTorch's
.to(torch.bfloat16) of the folded float32 ones bit for bit, and its output is
within 2e-2 of the largest of the same layers run by PyTorch (Linear and
Conv2d in bf16, input converted, output back to float32; the ops between in
float32). int8s (int8-static): PyTorch's eager static quantisation of the
model as ctorch quantises it (fuse_modules' Conv-BN-ReLU and Conv-ReLU
groups, then each Conv2d, ConvReLU2d and Linear wrapped as QuantStub -> op
-> DeQuantStub), qconfig MinMaxObserver(quint8, the reduce_range ctorch
reports) for activations and default_per_channel_weight_observer for
weights, prepare, the same calibration batches, convert, on the engine
ctorch reports: the outputs agree to 1e-5 of the largest (the same int8
tensors and kernels). Exit status 1 with the differences printed on a
mismatch.
"""
import os
import re
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

try:
    from torch.ao import quantization as tq
except ImportError:  # older layouts
    from torch import quantization as tq
fuse_modules, quantize_dynamic = tq.fuse_modules, tq.quantize_dynamic


def bert_like():
    return nn.Sequential(nn.Linear(256, 1024), nn.GELU(), nn.Linear(1024, 256), nn.LayerNorm(256),
                         nn.Linear(256, 1024), nn.GELU(approximate="tanh"), nn.Linear(1024, 256), nn.Linear(256, 16))


def cnn():
    return nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                         nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                         nn.Flatten(), nn.Linear(32, 10))


failures = []


def check(what, ok, detail):
    print(f"{'ok  ' if ok else 'FAIL'} {what}: {detail}")
    if not ok:
        failures.append(what)


def rel_diff(a, b):
    return ((a - b).abs().max() / b.abs().max()).item()


def int8_models(model, engine, large=None):
    """quantize_dynamic's model on engine, and where large = (engine, rows), on that engine too."""
    torch.backends.quantized.engine = engine
    q = quantize_dynamic(model, {nn.Linear}, dtype=torch.qint8)
    ql = None
    if large:
        torch.backends.quantized.engine = large[0]
        ql = quantize_dynamic(model, {nn.Linear}, dtype=torch.qint8)
    return q, ql


def int8_reference(models, x, engine, reduce_range, large=None, used=None):
    """models: int8_models' pair, called in the order ctorch's module was (a packed weight
    remembers its first call: 1.13's oneDNN lays the weight out for that call's shape and takes
    another path, rounding its scales otherwise, for other shapes); large: (engine, rows): calls of
    at least rows rows run that engine's packed weights; used: a set that gets each call's engine."""
    q, ql = models
    h = x
    for i, layer in enumerate(q):
        if hasattr(layer, "_packed_params"):
            shape = h.shape
            h2 = h.reshape(-1, shape[-1]).contiguous()
            big = ql is not None and h2.shape[0] >= large[1]
            if big:
                layer = ql[i]
            if used is not None:
                used.add(f"{h2.shape[0]} rows {large[0] if big else engine}")
            h = torch.ops.quantized.linear_dynamic(h2, layer._packed_params._packed_params, reduce_range)
            h = h.reshape(*shape[:-1], h.shape[-1])
        else:
            h = layer(h)
    return h


def leaves(m):
    for layer in m:
        if isinstance(layer, nn.Sequential):  # fuse_modules' ConvReLU2d is one
            yield from leaves(layer)
        else:
            yield layer


class Island(nn.Module):
    """One quantised op with float32 in and out, as ctorch's int8-static runs each."""

    def __init__(self, op):
        super().__init__()
        self.quant, self.op, self.dequant = tq.QuantStub(), op, tq.DeQuantStub()

    def forward(self, x):
        return self.dequant(self.op(self.quant(x)))


def islands(m):
    for name, child in m.named_children():
        if isinstance(child, (nn.Conv2d, nn.Linear)) or type(child).__name__ == "ConvReLU2d":
            setattr(m, name, Island(child))
        else:
            islands(child)
    return m


def int8_static_reference(model, fuse, cal, x, engine, reduce_range):
    torch.backends.quantized.engine = engine
    m = islands(fuse_modules(model, fuse) if fuse else model).eval()
    qconfig = tq.QConfig(activation=tq.MinMaxObserver.with_args(dtype=torch.quint8, reduce_range=reduce_range),
                         weight=tq.default_per_channel_weight_observer)
    for island in m.modules():  # the islands only: the ops between stay float32
        if isinstance(island, Island):
            island.qconfig = qconfig
    tq.prepare(m, inplace=True)
    for c in cal:
        m(c)
    tq.convert(m, inplace=True)
    return m(x)


def bf16_reference(model, x):
    h = x
    for layer in model:
        if isinstance(layer, nn.Linear):
            b = None if layer.bias is None else layer.bias.bfloat16()
            h = F.linear(h.bfloat16(), layer.weight.bfloat16(), b).float()
        elif isinstance(layer, nn.Conv2d):
            cl = torch.channels_last
            h = F.conv2d(h.bfloat16().contiguous(memory_format=cl), layer.weight.bfloat16().contiguous(memory_format=cl),
                         layer.bias.bfloat16(), layer.stride, layer.padding, layer.dilation, layer.groups).float()
        else:
            h = layer(h)
    return h


def main(d):
    torch.manual_seed(0)
    for name, make, fuse, qfuse in (("bert", bert_like, [], []),
                                    ("cnn", cnn, [["0", "1", "2"]], [["0", "1", "2"], ["3", "4"]])):
        model = make().eval()
        model.load_state_dict(torch.load(f"{d}/{name}_sd.pt"))
        x = torch.load(f"{d}/{name}_x.pt")["x"]
        with torch.no_grad():
            ref32 = model(x)
            # int8-dynamic
            report = open(f"{d}/{name}_int8_report.txt").read()
            m = re.search(r"quantized::linear_dynamic \((\w+) engine, reduce_range=([01])\)", report)
            check(f"{name} int8 report", m is not None, report.strip().splitlines()[:3])
            if m:
                engine, rr = m.group(1).lower(), m.group(2) == "1"
                ml = re.search(r"quantized::linear_dynamic \(.*\); (\w+) engine from (\d+) rows", report)
                large = (ml.group(1).lower(), int(ml.group(2))) if ml else None
                sets = [("", x)] + [(tag, torch.load(f"{d}/{name}_x{tag}.pt")["x"]) for tag in ("l", "s")
                                    if os.path.exists(f"{d}/{name}_x{tag}.pt")]
                models = int8_models(model, engine, large)
                for tag, xs in sets:  # (in the order ctorch ran them)
                    ours = torch.load(f"{d}/{name}_int8_y{tag}.pt")["y"]
                    used = set()
                    theirs = int8_reference(models, xs, engine, rr, large, used)
                    r = rel_diff(ours, theirs)
                    check(f"{name} int8 vs quantize_dynamic ({', '.join(sorted(used))}; reduce_range={int(rr)})",
                          r == 0,
                          f"max |diff| / max |theirs| {r:.3g} (vs float32: ours {rel_diff(ours, model(xs)):.3g}, "
                          f"PyTorch's {rel_diff(theirs, model(xs)):.3g})")
            # int8-static
            report = open(f"{d}/{name}_int8s_report.txt").read()
            m = re.search(r"quantized::\w+ \((\w+) engine, reduce_range=([01])\)", report)
            check(f"{name} int8-static report", m is not None, report.strip().splitlines()[:3])
            if m:
                engine, rr = m.group(1).lower(), m.group(2) == "1"
                cal_d = torch.load(f"{d}/{name}_cal.pt")
                cal = [cal_d[str(k)] for k in range(len(cal_d))]
                fresh = make().eval()
                fresh.load_state_dict(torch.load(f"{d}/{name}_sd.pt"))
                ours = torch.load(f"{d}/{name}_int8s_y.pt")["y"]
                theirs = int8_static_reference(fresh, qfuse, cal, x, engine, rr)
                r = rel_diff(ours, theirs)
                check(f"{name} int8-static vs torch.ao.quantization prepare/convert ({engine}, reduce_range={int(rr)})",
                      r <= 1e-5, f"max |diff| / max |theirs| {r:.3g} (vs float32: ours {rel_diff(ours, ref32):.3g}, "
                      f"PyTorch's {rel_diff(theirs, ref32):.3g})")
            # bf16: the weights after folding, as PyTorch folds them (fuse_modules'
            # keys are ctorch's; a LinearGELU pair's "N.0." is the Linear "N.")
            folded = make().eval()
            folded.load_state_dict(torch.load(f"{d}/{name}_sd.pt"))
            if fuse:
                folded = fuse_modules(folded, fuse)
            ref = folded.state_dict()
            sd16 = torch.load(f"{d}/{name}_bf16_sd.pt")
            same, n16 = True, 0
            for k, v in sd16.items():
                if v.dtype != torch.bfloat16:
                    continue
                n16 += 1
                pk = k if k in ref else re.sub(r"^(\d+)\.0\.", r"\1.", k)
                if pk not in ref or not torch.equal(ref[pk].bfloat16(), v):
                    same = False
                    print(f"  {k}: not PyTorch's bf16 of {pk}")
            check(f"{name} bf16 tensors are .to(bfloat16) of the float32 ones", same and n16 > 0, f"{n16} tensors")
            plain = nn.Sequential(*leaves(folded))
            ours = torch.load(f"{d}/{name}_bf16_y.pt")["y"]
            theirs = bf16_reference(plain, x)
            r = rel_diff(ours, theirs)
            check(f"{name} bf16 vs PyTorch's bf16 layers", r <= 2e-2,
                  f"max |diff| / max |theirs| {r:.3g} (vs float32: ours {rel_diff(ours, ref32):.3g}, "
                  f"PyTorch's {rel_diff(theirs, ref32):.3g})")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
