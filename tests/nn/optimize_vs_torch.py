"""The inference optimiser against PyTorch (tests/nn/test_nn_optimize.c).

    optimize_vs_torch.py make DIR
        writes DIR/resnetish.pt: a scripted ResNet-like model (conv-bn-relu
        stem, one residual block with a downsample, pooling, linear) with
        BatchNorm statistics and affine parameters drawn at random, in
        training mode (ctorch_module_optimize_for_inference must eval its copy).
    optimize_vs_torch.py fuse DIR
        reads DIR/orig.pt (the C model's state dict, torch.save), builds the
        same Sequential with torch.nn, fuses it with
        torch.ao.quantization.fuse_modules in eval mode, and checks that
        DIR/opt.pt (the state dict of ctorch_nn_module_optimize_for_inference's
        result) has the same keys and bit-identical tensors, and that
        DIR/opt_repr.txt is the fused model's repr.
    optimize_vs_torch.py linear DIR
        for bias False and True: reads DIR/linear_b{0,1}.pt (the state dict of
        the C test's linear_model) and DIR/linear_io_b{0,1}.pt (its inputs x0..x3,
        one row and several, and the optimised module's outputs y{k}_t{1,2} at 1
        and 2 intra-op threads), builds the same Sequential with torch.nn in eval
        mode and checks each output within 1e-5 of the largest magnitude of
        torch's (the split and oneDNN round differently; see test_nn_optimize.c).
"""
import sys

import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride=stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        h = self.relu(self.bn1(self.conv1(x)))
        h = self.bn2(self.conv2(h))
        return self.relu(h + self.downsample(x))


class ResNetish(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.relu = nn.ReLU(inplace=True)
        self.layer1 = Block(8, 16, 2)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(16, 5)

    def forward(self, x):
        x = self.layer1(self.relu(self.bn1(self.conv1(x))))
        return self.fc(torch.flatten(self.pool(x), 1))


def randomise_bn(model):
    g = torch.Generator().manual_seed(0)
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            n = m.num_features
            m.running_mean.copy_(torch.randn(n, generator=g) * 0.1)
            m.running_var.copy_(torch.rand(n, generator=g) + 0.5)
            m.weight.data.copy_(torch.rand(n, generator=g) + 0.5)
            m.bias.data.copy_(torch.randn(n, generator=g) * 0.1)


# The C test's Sequential (test_nn_optimize.c, seq_model), in the same order.
def seq_model():
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
        nn.Conv2d(8, 8, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(8),
        nn.Conv2d(8, 4, 1), nn.ReLU(),
        nn.Flatten(), nn.Linear(64, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 5))


# The C test's linear_model (test_nn_optimize.c), in the same order.
def linear_model(bias):
    return nn.Sequential(
        nn.Linear(512, 2048, bias=bias), nn.ReLU(), nn.Linear(2048, 512, bias=bias), nn.GELU(approximate="tanh"),
        nn.Linear(512, 512, bias=bias), nn.SiLU(), nn.Linear(512, 64, bias=bias), nn.GELU(),
        nn.Linear(64, 16384, bias=bias))


def check_linear(d):
    bad = 0
    for bias in (0, 1):
        m = linear_model(bool(bias))
        m.load_state_dict(torch.load(f"{d}/linear_b{bias}.pt"))
        m.eval()
        io = torch.load(f"{d}/linear_io_b{bias}.pt")
        for k in range(4):
            with torch.no_grad():
                want = m(io[f"x{k}"])
            for t in (1, 2):
                got = io[f"y{k}_t{t}"]
                diff = (got - want).abs().max().item()
                scale = want.abs().max().item()
                ok = got.shape == want.shape and diff <= 1e-5 * scale
                print(f"bias={bool(bias)} x{k} {list(want.shape)} threads {t}: max |diff| {diff:.3g} "
                      f"(max |torch| {scale:.3g}){'' if ok else ' TOO FAR'}")
                bad |= not ok
    return int(bad)


def main():
    mode, d = sys.argv[1], sys.argv[2]
    if mode == "linear":
        return check_linear(d)
    if mode == "make":
        import os
        os.makedirs(d, exist_ok=True)
        torch.manual_seed(0)
        m = ResNetish()
        with torch.no_grad():
            randomise_bn(m)
        torch.jit.script(m).save(f"{d}/resnetish.pt")
        return 0
    m = seq_model()
    m.load_state_dict(torch.load(f"{d}/orig.pt"))
    m.eval()
    from torch.ao.quantization import fuse_modules
    fused = fuse_modules(m, [["0", "1", "2"], ["3", "4"], ["5", "6"], ["8", "9"]])
    fused = fuse_modules(fused, [["8", "10"]])
    want = fused.state_dict()
    got = torch.load(f"{d}/opt.pt")
    bad = 0
    if list(want) != list(got):
        print(f"keys differ:\n  torch  {list(want)}\n  ctorch {list(got)}")
        bad = 1
    for k in want:
        if k in got and not (want[k].dtype == got[k].dtype and torch.equal(want[k], got[k])):
            print(f"{k}: not bit-identical (max |diff| {(want[k].double() - got[k].double()).abs().max().item()})")
            bad = 1
    with open(f"{d}/opt_repr.txt") as f:
        got_repr = f.read()
    if got_repr != repr(fused):
        print(f"repr differs:\n--- torch\n{fused!r}\n--- ctorch\n{got_repr}")
        bad = 1
    return bad


if __name__ == "__main__":
    sys.exit(main())
