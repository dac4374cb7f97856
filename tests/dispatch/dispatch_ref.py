"""Inputs and Python's torch.ops results for tests/dispatch/test_dispatch.c:
the same operators the C test calls by name, on the same inputs, saved as
one torch.save dict (OUT_DIR/refs.pt)."""
import os
import sys

import torch

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
torch.manual_seed(0)
a, b, x = torch.randn(3, 4), torch.randn(3, 4), torch.randn(4, 5)
refs = {"a": a, "b": b, "x": x}
refs["add"] = torch.ops.aten.add.Tensor(a, b, alpha=2.5)
refs["var"] = torch.ops.aten.var.correction(x, [1], correction=0, keepdim=True)
refs["max_values"], refs["max_indices"] = torch.ops.aten.max.dim(x, 1)
# mkldnn::_linear_pointwise with the weight prepacked for a batch of 8
# (libtorch 2.x registers both; 1.13 has neither).
lin_x, lin_w, lin_b = torch.randn(8, 16), torch.randn(32, 16), torch.randn(32)
refs.update(lin_x=lin_x, lin_w=lin_w, lin_b=lin_b)
if hasattr(torch.ops.mkldnn, "_linear_pointwise") and torch.backends.mkldnn.is_available():
    packed = torch.ops.mkldnn._reorder_linear_weight(lin_w, 8)
    refs["lin_relu"] = torch.ops.mkldnn._linear_pointwise(lin_x, packed, lin_b, "relu", [], "")
torch.save(refs, os.path.join(out, "refs.pt"))
