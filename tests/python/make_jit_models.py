"""Scripts and traces small TorchScript models for tests/test_jit.c.

Usage: make_jit_models.py OUTDIR. Writes scripted.pt, traced.pt, refs.pt
(reference inputs and outputs computed here, for C to compare against) and
state_dict.pt (the scripted model's state dict, as torch.save writes it).
"""
import os
import sys
from typing import Dict, List, Optional, Tuple

import torch
from torch import Tensor, nn


class Inner(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)
        self.register_buffer("scale", torch.tensor([1.0, 2.0, 3.0]))

    def forward(self, x: Tensor) -> Tensor:
        return self.fc(x) * self.scale


class Scripted(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = Inner()
        self.bn = nn.BatchNorm1d(3)
        self.drop = nn.Dropout(0.5)

    def forward(self, x: Tensor) -> Tensor:
        return self.drop(self.bn(self.inner(x)))

    @torch.jit.export
    def combine(self, xs: List[Tensor], opts: Dict[str, float], k: int, name: str,
                flag: bool) -> Tuple[Tensor, Dict[str, Tensor], List[int], str]:
        st = torch.stack(xs)
        s = st.sum(0) * opts["alpha"] + k
        if flag:
            s = s + opts.get("beta", 0.0)
        return s, {"sum": s, "max": st.max(0).values}, [len(xs), k * 2], name + "!"

    @torch.jit.export
    def maybe_double(self, x: Optional[Tensor]) -> Optional[Tensor]:
        if x is None:
            return None
        return x * 2

    @torch.jit.export
    def by_index(self, d: Dict[int, Tensor], i: int) -> Tensor:
        return d[i]

    @torch.jit.export
    def count(self, xs: List[Tensor]) -> int:
        return len(xs)

    @torch.jit.export
    def checked(self, v: int) -> float:
        if v < 0:
            raise ValueError("v must not be negative")
        return float(v) / 2.0


class Convnet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 2, 3)
        self.fc = nn.Linear(2 * 4 * 4, 5)

    def forward(self, x):
        return self.fc(torch.relu(self.conv(x)).flatten(1))


def main(out):
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    m = Scripted()
    # Non-trivial running stats so eval() output depends on the buffers.
    m.train()
    with torch.no_grad():
        for _ in range(3):
            m(torch.randn(8, 4))
    m.eval()
    sm = torch.jit.script(m)
    sm.save(os.path.join(out, "scripted.pt"))
    torch.save(m.state_dict(), os.path.join(out, "state_dict.pt"))

    net = Convnet().eval()
    xt = torch.randn(2, 1, 6, 6)
    tm = torch.jit.trace(net, xt)
    tm.save(os.path.join(out, "traced.pt"))

    x = torch.randn(5, 4)
    xs = [torch.randn(2, 3), torch.randn(2, 3), torch.randn(2, 3)]
    with torch.no_grad():
        s, d, ints, name = sm.combine(xs, {"alpha": 0.5, "beta": 3.0}, 7, "abc", True)
        refs = {
            "x": x,
            "forward": sm(x),
            "xt": xt,
            "traced": tm(xt),
            "xs0": xs[0], "xs1": xs[1], "xs2": xs[2],
            "combine_sum": s,
            "combine_max": d["max"],
        }
    assert ints == [3, 14] and name == "abc!"
    torch.save(refs, os.path.join(out, "refs.pt"))


if __name__ == "__main__":
    main(sys.argv[1])
