"""Seeds and integers through the Python binding, against PyTorch.

Seeds take PyTorch's range [-2^63, 2^64-1], a negative seed s meaning
2^64 + s: for each s in {-1, -2^63, 2^64-1, 0}, ctorch.manual_seed(s) gives
torch.initial_seed()'s value and the same first random numbers as
torch.manual_seed(s); ctorch.Generator(seed=s) the same as
torch.Generator().manual_seed(s); DataLoader(seed=s, shuffle=True) the order
of torch.randperm from the epoch seed the C loader documents. Outside the
range: OverflowError; not an integer: TypeError.

One exception type for one error: an int that does not fit raises
OverflowError from an operator (t + 2**70) and from an argument converter
(DataLoader(batch_size=2**64+2), which ctypes used to wrap into
ctypes.ArgumentError), naming the argument. Exit 77 (skipped) where this
Python has no torch."""
import ctypes

from py_check import expect, finish, torch_or_skip

torch = torch_or_skip()
import ctorch
from ctorch import _api
from ctorch.interop import to_torch


def raises(exc_type, fn, *needles):
    """fn() raises exactly exc_type (not a wrapper of it) whose text has every needle."""
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the type is what is checked
        ok = type(e) is exc_type and not isinstance(e, ctypes.ArgumentError) and all(n in str(e) for n in needles)
        expect(ok, f"wanted {exc_type.__name__} with {needles}, got {type(e).__name__}: {e}")
        return
    expect(False, f"wanted {exc_type.__name__} with {needles}, nothing was raised")


def same(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b)


default = _api.generator_default("cpu")
for s in (-1, -2**63, 2**64 - 1, 0):
    torch.manual_seed(s)
    want_seed = torch.initial_seed()
    want = (torch.rand(5), torch.randn(3), torch.randint(0, 1000, (4,)))
    ctorch.manual_seed(s)
    got_seed = _api.generator_initial_seed(default)
    got = (to_torch(ctorch.rand([5])), to_torch(ctorch.randn([3])), to_torch(ctorch.randint(0, 1000, [4])))
    expect(got_seed == want_seed, f"manual_seed({s}): initial seed {got_seed}, PyTorch {want_seed}")
    expect(all(same(g, w) for g, w in zip(got, want)), f"manual_seed({s}): draws {got} != PyTorch's {want}")

    g = ctorch.Generator(seed=s)
    tg = torch.Generator().manual_seed(s)
    expect(_api.generator_initial_seed(g) == tg.initial_seed(), f"Generator(seed={s}).initial_seed")
    expect(same(to_torch(ctorch.randn([4], generator=g)), torch.randn(4, generator=tg)), f"Generator(seed={s}) draws")
    g.manual_seed(s)
    tg.manual_seed(s)
    expect(same(to_torch(ctorch.rand([4], generator=g)), torch.rand(4, generator=tg)), f"Generator.manual_seed({s})")

    # The loader's epoch order: randperm from ctorch_data_epoch_seed(seed, epoch)
    # = (seed * 1000003 + epoch) mod 2^64, the seed as PyTorch takes it.
    n = 10
    data = ctorch.arange(n)
    order = torch.cat([to_torch(b) for b in ctorch.data.DataLoader(data, batch_size=3, shuffle=True, seed=s)]).tolist()
    epoch_seed = ((s % 2**64) * 1000003 + 0) % 2**64
    want_order = torch.randperm(n, generator=torch.Generator().manual_seed(epoch_seed)).tolist()
    expect(order == want_order, f"DataLoader(seed={s}) order {order}, PyTorch's randperm {want_order}")

raises(OverflowError, lambda: ctorch.manual_seed(2**64), "seed")
raises(OverflowError, lambda: ctorch.manual_seed(-2**63 - 1), "seed")
raises(TypeError, lambda: ctorch.manual_seed(1.5), "seed")
raises(OverflowError, lambda: ctorch.Generator(seed=2**64), "seed")
raises(OverflowError, lambda: ctorch.data.DataLoader(ctorch.arange(4), seed=-2**64), "seed")

t = ctorch.ones([2])
raises(OverflowError, lambda: t + 2**70, "out of range")
raises(OverflowError, lambda: ctorch.ops.narrow.default(ctorch.arange(10), True, 2**64 + 1, 2), "start")  # slow path
raises(OverflowError, lambda: ctorch.data.DataLoader(ctorch.arange(4), batch_size=2**64 + 2), "batch_size", "out of range")
raises(OverflowError, lambda: ctorch.data.DataLoader(ctorch.arange(4), batch_size=-2**63 - 1), "batch_size")
raises(TypeError, lambda: ctorch.data.DataLoader(ctorch.arange(4), batch_size="2"), "batch_size")
# After a refusal, the next call is unaffected (nothing kept from it).
expect(len(ctorch.data.DataLoader(ctorch.arange(4), batch_size=2)) == 2, "a loader after the refusals")

finish("seeds -1, -2^63, 2^64-1, 0 as PyTorch takes them (initial seed, draws, generators, loader order); "
       "out-of-range ints raise OverflowError from operators and converters alike")
