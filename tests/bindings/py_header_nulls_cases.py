#!/usr/bin/env python3
"""Header functions whose handle outputs may be NULL with CTORCH_OK, called
through the generated ctorch.capi where they are NULL and where they are
not (run by py_record_nulls.py, which fails on a NULL result api.json does
not flag), and the bindings' use of what api.json now says: a
boolean flag is a Python bool, a module's absent output (MaxPool2d without
return_indices) is absent, not None, a shared length is checked."""
import json
import os
import sys

import ctorch
from ctorch import capi

fails = []


def expect(what, ok, got=None):
    if not ok:
        fails.append(f"{what}: got {got!r}")


with open(os.environ["CTORCH_API_JSON"], encoding="utf-8") as f:
    doc = json.load(f)

# ctorch_nn_module_tensor: a parameter that is None (Linear(bias=False)).
lin = capi.nn_new("Linear", "3, 2, bias=False")
expect("Linear(bias=False) bias is None", capi.nn_module_tensor(lin, "bias") is None, capi.nn_module_tensor(lin, "bias"))
expect("Linear weight is a tensor", capi.nn_module_tensor(lin, "weight") is not None)
# ctorch_tensor_grad: no .grad yet, then one.
x = ctorch.tensor([1.0, 2.0], requires_grad=True)
expect("no grad yet", capi.tensor_grad(x) is None)
(x * x).sum().backward()
expect("grad after backward", capi.tensor_grad(x) is not None)

# Booleans come back as bool and are taken as bool.
capi.nn_module_train(lin, False)
got = capi.nn_module_is_training(lin)
expect("is_training is a bool", got is False, got)
capi.nn_module_train(lin, True)
expect("train(True)", capi.nn_module_is_training(lin) is True)
expect("item_bool is a bool", capi.tensor_item_bool(ctorch.tensor([1.0])) is True)
expect("num_parameters(only_trainable=True)", capi.nn_module_num_parameters(lin, True) == 6)
capi.nn_module_requires_grad(lin, False)
expect("only trainable: none", capi.nn_module_num_parameters(lin, True) == 0)
# nn_module_to's dtype: None keeps it (api.json: enum ctorch_dtype, negative "keep").
capi.nn_module_to(lin, None, None)
capi.nn_module_to(lin, None, ctorch.float64)
expect("to(float64)", capi.nn_module_tensor(lin, "weight").dtype == ctorch.float64)

# MaxPool2d: indices absent without return_indices, present with it.
absent = {(a["kind"], a["output"]): a["present_if"] for a in doc["nn_conventions"]["outputs"]["absent"]}
expect("api.json: MaxPool2d indices absent unless return_indices",
       absent.get(("MaxPool2d", "indices")) == "return_indices", absent)
img = ctorch.randn([1, 1, 4, 4])
for kind, inp in (("MaxPool2d", img), ("MaxPool1d", ctorch.randn([1, 2, 4])), ("MaxPool3d", ctorch.randn([1, 1, 2, 4, 4])),
                  ("AdaptiveMaxPool2d", img)):
    arg = "2" if kind != "AdaptiveMaxPool2d" else "(2, 2)"
    outs = capi.nn_module_forward_n(capi.nn_new(kind, arg), [inp], None)
    expect(f"{kind}: one output without return_indices", len(outs) == 1, len(outs))
    outs = capi.nn_module_forward_n(capi.nn_new(kind, arg + ", return_indices=True"), [inp], None)
    expect(f"{kind}: two with it", len(outs) == 2 and all(o is not None for o in outs), outs)
# MultiheadAttention's weights: present and NULL (None) with need_weights=False.
mha = capi.nn_new("MultiheadAttention", "4, 2")
q = ctorch.randn([3, 1, 4])
outs = capi.nn_module_forward_n(mha, [q, q, q], "need_weights=False")
expect("MHA weights None, not absent", len(outs) == 2 and outs[1] is None, outs)
# A module argument of the wrong kind is refused as module_args says.
margs = {(m["kind"], m["arg"]): m["module_kind"] for m in doc["nn_conventions"]["module_args"]}
expect("encoder_layer kind", margs.get(("TransformerEncoder", "encoder_layer")) == "TransformerEncoderLayer", margs)
try:
    capi.nn_new_with_modules("TransformerEncoder", "num_layers=2", ["encoder_layer"], [lin])
    fails.append("a Linear accepted as encoder_layer")
except ctorch.CtorchError as e:
    expect("refusal names the kind", "TransformerEncoderLayer" in str(e), str(e))
# A dtype spelled as api.json says, in constructor text.
names = doc["nn_conventions"]["values"]["ScalarType"]["names"]
lin64 = capi.nn_new("Linear", f"2, 2, dtype=torch.{names[names.index('float64')]}")
expect("dtype=torch.float64", capi.nn_module_tensor(lin64, "weight").dtype == ctorch.float64)
# Containers are filled by the call api.json names.
cont = {c["kind"]: c["add"] for c in doc["nn_conventions"]["containers"]}
seq = capi.nn_new("Sequential", None)
expect("Sequential is filled by append", cont.get("Sequential") == "ctorch_nn_module_append", cont)
capi.nn_module_append(seq, lin)
expect("Sequential has one child", capi.nn_module_num_children(seq) == 1)

# One length for names/values/texts (length_from): a mismatch is refused before the call.
import tempfile  # noqa: E402
with tempfile.TemporaryDirectory(prefix="ctorch_hp_") as d:
    w = capi.summary_writer_new(d, None)
    try:
        capi.summary_writer_add_hparams(w, ["a", "b"], [1.0], None, None, None, None)
        fails.append("add_hparams with 2 names and 1 value accepted")
    except ValueError as e:
        expect("shared length message", "share one length" in str(e), str(e))
    w.dispose()

for f in fails:
    print("FAIL", f)
print(f"py_header_nulls_cases: {len(fails)} failures")
sys.exit(1 if fails else 0)
