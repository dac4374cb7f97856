"""TorchScript archives for tests/test_jit_strangers.c (files from
strangers, round two), made with the installed torch.

Usage: make_jit_strangers.py OUTDIR. Writes
- classes.txt: one line "NS.NAME FILE" per built-in (torch.classes) class
  registered in this torch that ctorch refuses, FILE an archive whose
  exported method takes an Optional[torch.classes.NS.NAME] (a value of the
  class's type in its graph), so every refused class has its archive;
- nnapi_forward.pt / nnapi_setstate.pt: torch.classes._nnapi.Compilation()
  constructed and init()-ed in forward / in __setstate__ (init dlopens
  libneuralnetworks.so);
- profile_forward.pt: torch.classes.profiling._ScriptProfile() in forward;
- quantized.pt + quantized_ref.pt: a dynamically quantized Linear (its
  weights a quantized.LinearPackedParamsBase, an allowed class) and its
  output on a fixed input;
- setstate_loops.pt: a __setstate__ with a while loop that never ends;
  setstate_helper_loops.pt: a __setstate__ calling a method that loops over
  data; setstate_bounded.pt: a __setstate__ looping range(4) (allowed);
  forward_loops.pt: a while loop in forward (not run by a load: allowed);
- flatbuffer.ff (when this torch writes flatbuffers) or flatbuffer.txt
  saying why not.
"""
import os
import sys
import warnings
from typing import List, Optional, Tuple

import torch
from torch import Tensor, nn

# Every class registered in libtorch 1.13.1 or 2.15.0 (ctorch's audit,
# docs/interop-models.md) that ctorch refuses; those this torch lacks are skipped.
REFUSED = [
    "_nnapi.Compilation", "backendutils.BackendDebugInfo", "c10d.ProcessGroup", "c10d.ReduceOp",
    "c10d.SymmetricMemory", "c10d.Work", "cuda.Event", "cuda.Stream", "profiling.InstructionStats",
    "profiling.SourceRef", "profiling.SourceStats", "profiling._ScriptProfile", "rpc._Message",
    "StaticRuntime.StaticRuntimeMetadata",
]

TEMPLATE = '''
import torch
from typing import Optional
from torch import Tensor, nn


class Uses(nn.Module):
    def forward(self, x: Tensor) -> Tensor:
        return x + 1

    @torch.jit.export
    def uses(self, w: Optional[torch.classes.{cls}]) -> bool:
        return w is None
'''


class NnapiForward(nn.Module):
    def forward(self, x: Tensor) -> Tensor:
        c = torch.classes._nnapi.Compilation()
        c.init(x, [x])
        return x


class NnapiSetstate(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.ones(2)

    def forward(self, x: Tensor) -> Tensor:
        return x + self.w

    @torch.jit.export
    def __getstate__(self) -> Tuple[Tensor, bool]:
        return (self.w, self.training)

    @torch.jit.export
    def __setstate__(self, state: Tuple[Tensor, bool]) -> None:
        self.w = state[0]
        self.training = state[1]
        c = torch.classes._nnapi.Compilation()
        c.init(self.w, [self.w])


class ProfileForward(nn.Module):
    def forward(self, x: Tensor) -> Tensor:
        p = torch.classes.profiling._ScriptProfile()
        p.enable()
        return x


class SetstateLoops(nn.Module):
    def __init__(self):
        super().__init__()
        self.k = 0

    def forward(self, x: Tensor) -> Tensor:
        return x + self.k

    @torch.jit.export
    def __getstate__(self) -> Tuple[int, bool]:
        return (self.k, self.training)

    @torch.jit.export
    def __setstate__(self, state: Tuple[int, bool]) -> None:
        self.k = state[0]
        self.training = state[1]
        while self.k >= 0:  # never ends: k only grows
            self.k += 1


class SetstateHelperLoops(nn.Module):
    def __init__(self):
        super().__init__()
        self.xs: List[int] = [1, 2, 3]
        self.total = 0

    def forward(self, x: Tensor) -> Tensor:
        return x + self.total

    @torch.jit.export
    def add_up(self, xs: List[int]) -> int:
        t = 0
        for v in xs:  # as long as the data is
            t += v
        return t

    @torch.jit.export
    def __getstate__(self) -> Tuple[List[int], bool]:
        return (self.xs, self.training)

    @torch.jit.export
    def __setstate__(self, state: Tuple[List[int], bool]) -> None:
        self.xs = state[0]
        self.training = state[1]
        self.total = self.add_up(self.xs)


class SetstateBounded(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.ones(2)

    def forward(self, x: Tensor) -> Tensor:
        return x + self.w

    @torch.jit.export
    def __getstate__(self) -> Tuple[Tensor, bool]:
        return (self.w, self.training)

    @torch.jit.export
    def __setstate__(self, state: Tuple[Tensor, bool]) -> None:
        self.training = state[1]
        w = state[0]
        for i in range(4):
            w = w * 2
        self.w = w


class ForwardLoops(nn.Module):
    def forward(self, x: Tensor) -> Tensor:
        while bool(x.sum() < 100):
            x = x * 2 + 1
        return x


def has_class(name):
    ns, cls = name.split(".")
    try:
        getattr(getattr(torch.classes, ns), cls)
        return True
    except (RuntimeError, AttributeError):
        return False


def main(out):
    warnings.filterwarnings("ignore", category=FutureWarning, module=r"torch\.jit")
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    os.makedirs(out, exist_ok=True)
    sys.path.insert(0, out)
    lines = []
    for name in REFUSED:
        if not has_class(name):
            continue
        mod = "uses_" + name.replace(".", "_").lower()
        with open(os.path.join(out, mod + ".py"), "w") as f:
            f.write(TEMPLATE.format(cls=name))
        m = __import__(mod)
        path = os.path.join(out, mod + ".pt")
        torch.jit.script(m.Uses()).save(path)
        lines.append(f"{name} {path}\n")
    with open(os.path.join(out, "classes.txt"), "w") as f:
        f.writelines(lines)
    torch.jit.script(NnapiForward()).save(os.path.join(out, "nnapi_forward.pt"))
    torch.jit.script(NnapiSetstate()).save(os.path.join(out, "nnapi_setstate.pt"))
    torch.jit.script(ProfileForward()).save(os.path.join(out, "profile_forward.pt"))
    torch.jit.script(SetstateLoops()).save(os.path.join(out, "setstate_loops.pt"))
    torch.jit.script(SetstateHelperLoops()).save(os.path.join(out, "setstate_helper_loops.pt"))
    torch.jit.script(SetstateBounded()).save(os.path.join(out, "setstate_bounded.pt"))
    torch.jit.script(ForwardLoops()).save(os.path.join(out, "forward_loops.pt"))

    torch.manual_seed(0)
    q = torch.quantization.quantize_dynamic(nn.Sequential(nn.Linear(4, 3)), {nn.Linear}, dtype=torch.qint8)
    qs = torch.jit.script(q)
    qs.save(os.path.join(out, "quantized.pt"))
    x = torch.arange(8, dtype=torch.float32).reshape(2, 4) / 8
    torch.save({"x": x, "y": qs(x)}, os.path.join(out, "quantized_ref.pt"))

    fb = os.path.join(out, "flatbuffer.ff")
    try:
        torch.jit.save_jit_module_to_flatbuffer(torch.jit.script(ForwardLoops()), fb)
    except Exception as e:  # a torch built without flatbuffer support
        with open(os.path.join(out, "flatbuffer.txt"), "w") as f:
            f.write(f"torch {torch.__version__} does not write flatbuffers: {e}\n")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
