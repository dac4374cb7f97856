"""ctorch.nn (the Python binding's module classes) against torch.nn, in one
process with the torch whose libtorch ctorch was built against:

- a LeNet-5 written as a Module subclass in both, from the same seed: the
  same state-dict keys in the same order, bit-identical initial parameters,
  forward, loss and gradients, and parameters after three SGD steps;
- repr(model) equal to torch's;
- Sequential / ModuleList / ModuleDict names, indexing and repr;
- load_state_dict: torch's state dict loads strictly, a missing key fails
  strictly and is reported by name otherwise;
- a Python subclass inside a C Sequential (the library calls back into its
  forward) and a Python exception raised there reaching the caller;
- train/eval, requires_grad_, zero_grad, to(dtype), clone independence.
Exit 77 (skipped) where this Python has no torch."""

from py_check import expect, finish, torch_or_skip

torch = torch_or_skip()
import ctorch
from ctorch import nn
from ctorch.interop import to_torch, from_torch


def same(a, b):
    """a: ctorch Tensor, b: torch.Tensor: bit-identical values and shape."""
    a = to_torch(a)
    return a.shape == b.shape and a.dtype == b.dtype and torch.equal(a, b)


def lenet(mod):
    """The same LeNet-5 class over either library's nn."""
    class LeNet5(mod.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = mod.Conv2d(1, 6, 5, padding=2)
            self.pool = mod.MaxPool2d(2)
            self.conv2 = mod.Conv2d(6, 16, 5)
            self.fc = mod.Sequential(mod.Linear(400, 120), mod.ReLU(), mod.Linear(120, 84), mod.ReLU(),
                                     mod.Linear(84, 10))

        def forward(self, x):
            x = self.pool(self.conv1(x).relu())
            x = self.pool(self.conv2(x).relu())
            return self.fc(x.flatten(1))
    return LeNet5()


torch.manual_seed(0)
ref = lenet(torch.nn)
ctorch.manual_seed(0)
net = lenet(nn)

sd, rsd = net.state_dict(), ref.state_dict()
expect(list(sd) == list(rsd), f"state_dict keys {list(sd)} vs torch {list(rsd)}")
expect(all(same(sd[k], rsd[k]) for k in rsd if k in sd), "initial parameters bit-identical to torch.nn's")
expect(repr(net) == repr(ref), f"repr:\n{net!r}\nvs torch:\n{ref!r}")
expect(net.num_parameters() == sum(p.numel() for p in ref.parameters()), "parameter count")

torch.manual_seed(1)
x = torch.randn(8, 1, 28, 28)
y = torch.randint(0, 10, (8,))
cx, cy = from_torch(x), from_torch(y)
ropt = torch.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)
opt = ctorch.optim.SGD(list(net.parameters()), lr=0.1, momentum=0.9)
for step in range(3):
    rl = torch.nn.functional.cross_entropy(ref(x), y)
    ropt.zero_grad()
    rl.backward()
    ropt.step()
    cl = ctorch.nn.cross_entropy_loss(net(cx), cy)
    opt.zero_grad()
    cl.backward()
    opt.step()
    expect(same(cl.detach(), rl.detach()), f"step {step}: loss {cl.item()} vs torch {rl.item()}")
after, rafter = net.state_dict(), ref.state_dict()
expect(all(same(after[k], rafter[k]) for k in rafter), "parameters after 3 SGD steps bit-identical")

# containers
seq = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
rseq = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 2))
expect(repr(seq) == repr(rseq), f"Sequential repr:\n{seq!r}\nvs\n{rseq!r}")
expect(len(seq) == 3 and isinstance(seq[0], nn.Linear), "Sequential len/indexing")
expect(list(seq.state_dict()) == list(rseq.state_dict()), "Sequential keys")
ml = nn.ModuleList([nn.Linear(2, 2), nn.Linear(2, 2)])
md = nn.ModuleDict({"enc": nn.Linear(2, 3), "dec": nn.Linear(3, 2)})
expect(list(ml.state_dict()) == ["0.weight", "0.bias", "1.weight", "1.bias"], "ModuleList keys")
expect(md.keys() == ["enc", "dec"] and list(md.state_dict())[0] == "enc.weight", "ModuleDict keys")

# load_state_dict both ways
seq2 = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
res = seq2.load_state_dict({k: from_torch(v) for k, v in rseq.state_dict().items()})
expect(res.missing_keys == [] and res.unexpected_keys == [], "strict load of torch's state dict")
expect(all(same(seq2.state_dict()[k], v) for k, v in rseq.state_dict().items()), "loaded values")
rseq.load_state_dict({k: to_torch(v).clone() for k, v in seq.state_dict().items()}, strict=True)
partial = {k: from_torch(v) for k, v in rseq.state_dict().items() if k != "2.bias"}
try:
    seq2.load_state_dict(partial)
    expect(False, "strict load with a missing key must fail")
except ctorch.CtorchError as e:
    expect("2.bias" in str(e), f"strict load names the missing key: {e}")
res = seq2.load_state_dict(partial, strict=False)
expect(res.missing_keys == ["2.bias"], f"non-strict report: {res}")


# a Python module called by the library (inside a C Sequential)
class Double(nn.Module):
    def forward(self, x):
        return x * 2


class Boom(nn.Module):
    def forward(self, x):
        raise ValueError("boom from Python")


mixed = nn.Sequential(nn.Identity(), Double())
t = ctorch.tensor([1.0, 2.0])
expect(to_torch(mixed(t)).tolist() == [2.0, 4.0], "Sequential calls a Python forward")
try:
    nn.Sequential(Boom())(t)
    expect(False, "an exception in a Python forward must reach the caller")
except ValueError as e:
    expect("boom" in str(e), "the Python exception itself")

# modes, freezing, dtype, clone
net.eval()
expect(not net.training and not net.fc.training, "eval() recursive")
net.train()
expect(net.training, "train()")
net.requires_grad_(False)
expect(all(not p.requires_grad for p in net.parameters()), "requires_grad_(False)")
net.requires_grad_(True)
net.zero_grad()
expect(all(p.grad is None for p in net.parameters()), "zero_grad() sets None")
c = seq.clone()
list(c.parameters())[0].detach().zero_()  # a write into the copy
expect(not same(list(c.parameters())[0], to_torch(list(seq.parameters())[0])), "clone owns its parameters")
seq.to(ctorch.float64)
expect(all(p.dtype == ctorch.float64 for p in seq.parameters()), "to(float64)")

# module-valued constructor arguments: the stack deep-copies the layer and
# keeps the norm itself, as torch.nn does, so the draws and names match
def encoder(mod):
    layer = mod.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0)
    norm = mod.LayerNorm(8)
    return mod.TransformerEncoder(layer, 2, norm=norm), norm


torch.manual_seed(5)
renc, rnorm = encoder(torch.nn)
ctorch.manual_seed(5)
enc, cnorm = encoder(nn)
esd, rsd = enc.state_dict(), renc.state_dict()
expect(list(esd) == list(rsd), f"TransformerEncoder keys {list(esd)} vs torch {list(rsd)}")
expect(all(same(esd[k], rsd[k]) for k in rsd if k in esd), "TransformerEncoder parameters bit-identical")
x = torch.randn(5, 3, 8)
expect(same(enc(from_torch(x)), renc(x).detach()), "TransformerEncoder forward bit-identical")
cnorm.weight.detach().fill_(2.0)  # the caller's norm is the encoder's norm
expect(to_torch(enc.state_dict()["norm.weight"]).eq(2.0).all().item(), "norm passed by handle is shared")
try:
    nn.TransformerEncoder(nn.Linear(8, 8), 2)
    expect(False, "a Linear as encoder_layer must be refused")
except Exception as e:
    expect("encoder_layer" in str(e), f"the refusal names encoder_layer: {e}")

# shapes without computing (ctorch's shape_check, through the generated capi.nn_module_shape_check)
mlp = nn.Sequential(nn.Flatten(), nn.Linear(784, 10))
expect("1: [3, 10]" in mlp.shape_check((3, 1, 28, 28)), "shape_check")
try:
    mlp.shape_check((3, 1, 20, 28))
    expect(False, "shape_check refuses a misfit")
except ctorch.CtorchError as e:
    # With torch 2.x imported in the process its Python meta kernels answer ("a and b must
    # have same reduction dim"), not libtorch's c10::Error: the message still names the module.
    expect("560" in str(e) and "784" in str(e) and "(Linear)" in str(e), f"shape_check gives the shapes: {e}")

finish(f"torch {torch.__version__}")
