"""Scripts and traces small TorchScript models for tests/test_jit.c (running
them) and tests/test_jit_load.c (loading them, and what is no good module).

Usage: make_jit_models.py OUTDIR. Writes scripted.pt, traced.pt, refs.pt
(reference inputs and outputs computed here, for C to compare against),
state_dict.pt (the scripted model's state dict, as torch.save writes it),
typed.pt (a class constant, a NamedTuple, an Enum, a parameter) and copies
of it crafted as libtorch 1.13 reads unchecked: source lacking what the
importer dereferences (untyped_constant.pt, untyped_field.pt,
valueless_member.pt) and pickles it follows past its stack or buffers
(stack_underflow.pt, storage_overclaim.pt, unknown_member.pt), and a
deflated code record libtorch's zip reader returns as stale heap bytes
(corrupt_deflate.pt). And modules whose code reaches outside the process,
which ctorch_module_load refuses unless the caller allows it:
setstate_writes.pt (__setstate__, run during the load, torch.save's to
OUTDIR/written_by_setstate), forward_from_file.pt (forward reads any file),
helper_save.pt (forward calls a free function that torch.save's), and
prints.pt (forward prints, which is allowed). And scripted_bytesio.bin,
traced_bytesio.bin: the same two modules through torch.jit.save(m,
io.BytesIO()), for the buffer and stream loaders.
"""
import enum
import io
import os
import re
import struct
import sys
import warnings
import zipfile
from typing import Dict, Final, List, NamedTuple, Optional, Tuple

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


class Pair(NamedTuple):
    scaled: Tensor
    code: int


class Color(enum.Enum):
    RED = 1
    GREEN = 2


@torch.jit.script
def color_code(c: Color) -> int:
    return c.value


class Typed(nn.Module):
    k: Final[int] = 3

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.full((3,), 2.0))
        self.c = Color.GREEN

    def forward(self, x: Tensor) -> Pair:
        return Pair(x * self.k, color_code(self.c))


def edit_record(src, dst, suffix, old, new):
    """Copies the archive src to dst, replacing the regular expression old by
    new once in the record ending with suffix."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for info in zin.infolist():
            data = zin.read(info.filename)
            if info.filename.endswith(suffix):
                data, n = re.subn(old, new, data, count=1, flags=re.DOTALL)
                assert n == 1, (old, data)
            zout.writestr(info, data)


def write_typed(out):
    """typed.pt, and copies crafted the ways libtorch 1.13 trusts unchecked."""
    path = os.path.join(out, "typed.pt")
    torch.jit.script(Typed()).save(path)

    def crafted(name, suffix, old, new):
        edit_record(path, os.path.join(out, name), suffix, old, new)

    # Class bodies missing what the importer dereferences.
    crafted("untyped_constant.pt", "code/__torch__.py", rb"  k : Final\[int\] = 3\n", b"  k = 3\n")
    crafted("untyped_field.pt", "code/__torch__.py", rb"  code : int\n", b"  code = 2\n")
    crafted("valueless_member.pt", "code/__torch__.py", rb"  GREEN = 2\n", b"  GREEN : int\n")
    # Pickles: three values taken from a stack of one (PROTO 2, a string, TUPLE3).
    with zipfile.ZipFile(path) as z:
        constants = z.read("typed/constants.pkl")
    crafted("stack_underflow.pt", "/constants.pkl", re.escape(constants), b"\x80\x02X\x01\x00\x00\x00a\x87.")
    # The parameter's storage claims 64 floats; its record holds 3.
    crafted("storage_overclaim.pt", "/data.pkl", rb"(cpuq.)K\x03t", b"\\1K\x40t")
    # The Enum attribute holds 7, which is no member of Color.
    crafted("unknown_member.pt", "/data.pkl", rb"(Color\nq.)K\x02R", b"\\1K\x07R")
    # The deflated code record's first block has the reserved type 3: libtorch's
    # reader returns the record's declared size of stale heap bytes, no error.
    corrupt_deflate(path, os.path.join(out, "corrupt_deflate.pt"), "code/__torch__.py")


def corrupt_deflate(src, dst, suffix):
    """Copies the archive src to dst with the first byte of the deflate stream
    of the record ending with suffix set to 0x07 (BFINAL=1, BTYPE=11)."""
    data = bytearray(open(src, "rb").read())
    with zipfile.ZipFile(src) as z:
        info = [i for i in z.infolist() if i.filename.endswith(suffix)][0]
    assert info.compress_type == zipfile.ZIP_DEFLATED, info.compress_type
    n, m = struct.unpack("<HH", data[info.header_offset + 26:info.header_offset + 30])
    data[info.header_offset + 30 + n + m] = 0x07
    open(dst, "wb").write(data)

class SetstateWrites(nn.Module):
    def __init__(self, path: str):
        super().__init__()
        self.path = path
        self.w = torch.ones(2)

    def forward(self, x: Tensor) -> Tensor:
        return x + self.w

    @torch.jit.export
    def __getstate__(self) -> Tuple[str, Tensor, bool]:
        return (self.path, self.w, self.training)

    @torch.jit.export
    def __setstate__(self, state: Tuple[str, Tensor, bool]) -> None:
        self.path = state[0]
        self.w = state[1]
        self.training = state[2]
        torch.save(self.w, self.path)


def leak(t: Tensor, dst: str) -> None:
    torch.save(t, dst)


class FromFile(nn.Module):
    def forward(self, src: str, n: int) -> Tensor:
        return torch.from_file(src, size=n, dtype=torch.uint8)


class HelperSave(nn.Module):
    def forward(self, x: Tensor, dst: str) -> Tensor:
        leak(x, dst)
        return x


class Prints(nn.Module):
    def forward(self, x: Tensor) -> Tensor:
        print("ctorch test: forward sees", x.shape)
        return x * 2


def write_side_effects(out):
    target = os.path.join(out, "written_by_setstate")
    if os.path.exists(target):
        os.remove(target)
    torch.jit.script(SetstateWrites(target)).save(os.path.join(out, "setstate_writes.pt"))
    assert not os.path.exists(target)  # scripting and saving do not run __setstate__
    torch.jit.script(FromFile()).save(os.path.join(out, "forward_from_file.pt"))
    torch.jit.script(HelperSave()).save(os.path.join(out, "helper_save.pt"))
    torch.jit.script(Prints()).save(os.path.join(out, "prints.pt"))


def main(out):
    # PyTorch 2.10+ marks torch.jit deprecated (FutureWarning on every call);
    # TorchScript is what this script makes, so keep the test's log to errors.
    warnings.filterwarnings("ignore", category=FutureWarning, module=r"torch\.jit")
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
    # torch.jit.save to a file object, as services keep models in memory:
    # the bytes ctorch_module_load_from_buffer takes.
    for name, mod in (("scripted", sm), ("traced", tm)):
        buf = io.BytesIO()
        torch.jit.save(mod, buf)
        with open(os.path.join(out, name + "_bytesio.bin"), "wb") as f:
            f.write(buf.getvalue())
    write_typed(out)
    write_side_effects(out)


if __name__ == "__main__":
    main(sys.argv[1])
