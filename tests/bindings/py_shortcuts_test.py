"""The module shortcuts through the Python binding's classes:
ctorch.optim.Adam(model) (ctorch_optimizer_new_from_module_v2) against
Adam(list(model.parameters())) and against torch.optim.Adam(model.parameters()),
and ctorch.nn.utils.clip_grad_norm_/clip_grad_value_ over the module against
torch.nn.utils' over model.parameters(): the same seed gives bit-identical
losses, norms and parameters after every step. Failures: a module without
parameters, NaN max_norm. Exit 77 (skipped) where this Python has no torch."""

from py_check import expect, finish, torch_or_skip

torch = torch_or_skip()
import ctorch
from ctorch import nn
from ctorch.interop import to_torch, from_torch


def net(mod):
    return mod.Sequential(mod.Linear(6, 16), mod.Tanh(), mod.Linear(16, 3))


torch.manual_seed(4)
ref = net(torch.nn)
ctorch.manual_seed(4)
a = net(nn)  # trained through Adam(model) and clip over the module
ctorch.manual_seed(4)
b = net(nn)  # trained through Adam(list of parameters) and clip over the list

torch.manual_seed(9)
x, y = torch.randn(32, 6), torch.randint(0, 3, (32,))
cx, cy = from_torch(x), from_torch(y)
ropt = torch.optim.Adam(ref.parameters(), lr=0.05, weight_decay=0.01)
oa = ctorch.optim.Adam(a, lr=0.05, weight_decay=0.01)
ob = ctorch.optim.Adam(list(b.parameters()), lr=0.05, weight_decay=0.01)
expect(oa.num_param_groups() == 1 and len(ctorch.capi.optimizer_params(oa, 0)) == 4, "Adam(model) holds 4 parameters")
for step in range(4):
    rl = torch.nn.functional.cross_entropy(ref(x), y) * 20  # large gradients: clipping acts
    ropt.zero_grad()
    rl.backward()
    rn = float(torch.nn.utils.clip_grad_norm_(ref.parameters(), 0.5))
    torch.nn.utils.clip_grad_value_(ref.parameters(), 0.02)
    ropt.step()
    norms = []
    for m, o, over in ((a, oa, a), (b, ob, None)):
        loss = ctorch.nn.cross_entropy_loss(m(cx), cy) * 20
        o.zero_grad()
        loss.backward()
        norms.append(nn.utils.clip_grad_norm_(over if over is not None else list(m.parameters()), 0.5))
        nn.utils.clip_grad_value_(over if over is not None else list(m.parameters()), 0.02)
        o.step()
        expect(torch.equal(to_torch(loss.detach()), rl.detach()), f"step {step}: loss {loss.item()} vs {rl.item()}")
    expect(norms[0] == norms[1] == rn and rn > 0.5, f"step {step}: norms {norms} vs torch {rn}")
for k, v in ref.state_dict().items():
    expect(torch.equal(to_torch(a.state_dict()[k]), v), f"{k}: Adam(model) vs torch after 4 steps")
    expect(torch.equal(to_torch(b.state_dict()[k]), v), f"{k}: Adam(list) vs torch after 4 steps")

try:
    ctorch.optim.SGD(nn.ReLU(), lr=0.1)
    expect(False, "an optimizer over a module without parameters must fail")
except ctorch.CtorchError as e:
    expect("no parameters" in str(e) and "ctorch_optimizer_new_from_module" in str(e), f"message: {e}")
try:
    nn.utils.clip_grad_norm_(a, float("nan"))
    expect(False, "NaN max_norm must fail")
except ctorch.CtorchError as e:
    expect("max_norm" in str(e), f"message: {e}")

finish("py_shortcuts: Adam(model) and clipping over the module against the list's and torch's (4 steps)")
