"""api.json's null_result, checked where it is provable: every operator
flagged because it can return an undefined tensor is called on valid inputs
(built with PyTorch) through the Python binding and through torch.ops.aten,
once asking for nothing (output mask all false, need_weights false, no
incoming gradient, ...) and once asking for everything. Fails when
- a result came back NULL (None) with CTORCH_OK but is not flagged,
- a flagged result did not come back NULL where the case says it must
  (the mask-gated ones with the mask all false, each documented case),
- ctorch and PyTorch disagree on which results are undefined,
- a flagged operator with a CPU kernel in this libtorch has no case here.
Flagged operators without a CPU kernel (CUDA, MPS, MKLDNN-only) are listed,
not called. Needs the Python whose torch matches the libtorch ctorch was
built against.
"""
import json
import os
import sys

from py_check import torch_or_skip

torch = torch_or_skip()
import ctorch

torch.manual_seed(0)
R = torch.randn


def layer_norm(mask):
    x, w, b = R(2, 3, 4), R(4), R(4)
    _, mean, rstd = torch.ops.aten.native_layer_norm(x, [4], w, b, 1e-5)
    return [R(2, 3, 4), x, [4], mean, rstd, w, b, mask]


def batch_norm(mask):
    x, w = R(4, 3, 2), R(3)
    rm, rv = torch.zeros(3), torch.ones(3)
    _, sm, si = torch.ops.aten.native_batch_norm(x, w, R(3), rm, rv, True, 0.1, 1e-5)
    return [R(4, 3, 2), x, w, rm, rv, sm, si, True, 1e-5, mask]


def group_norm(mask):
    x, w = R(2, 4, 3), R(4)
    _, mean, rstd = torch.ops.aten.native_group_norm(x, w, R(4), 2, 4, 3, 2, 1e-5)
    return [R(2, 4, 3), x, mean, rstd, w, 2, 4, 3, 2, mask]


def conv_backward(mask):
    return [R(1, 2, 3, 3), R(1, 1, 5, 5), R(2, 1, 3, 3), [2], [1, 1], [0, 0], [1, 1], False, [0, 0], 1, mask]


def slow_conv2d_backward(mask):
    return [R(1, 2, 3, 3), R(1, 1, 5, 5), R(2, 1, 3, 3), [3, 3], [1, 1], [0, 0], mask]


def conv_double_backward(ask):
    # The output mask does not decide here: None second-order gradients do.
    gg = [R(1, 1, 5, 5), R(2, 1, 3, 3), R(2)] if ask else [None, None, None]
    return gg + [R(1, 2, 3, 3), R(2, 1, 3, 3), R(1, 1, 5, 5), [1, 1], [0, 0], [1, 1], False, [0, 0], 1, M3T]


def grid_2d(mask):
    return [R(1, 1, 3, 3), R(1, 1, 4, 4), torch.rand(1, 3, 3, 2) * 2 - 1, 0, 0, False, mask]


def grid_3d(mask):
    return [R(1, 1, 2, 2, 2), R(1, 1, 3, 3, 3), torch.rand(1, 2, 2, 2, 3) * 2 - 1, 0, 0, False, mask]


def bn_impl_index_backward(mask):
    x, w = R(4, 3, 2), R(3)
    rm, rv = torch.zeros(3), torch.ones(3)
    _, sm, si = torch.ops.aten.native_batch_norm(x, w, R(3), rm, rv, True, 0.1, 1e-5)
    return [0, x, R(4, 3, 2), w, rm, rv, sm, si, True, 1e-5, mask, torch.empty(0)]


def matmul_backward(mask):
    return [R(2, 2), R(2, 3), R(3, 2), mask[:2]]


def batch_norm_backward(mask):
    x, w = R(4, 3, 2), R(3)
    rm, rv = torch.zeros(3), torch.ones(3)
    _, sm, si = torch.ops.aten.native_batch_norm(x, w, R(3), rm, rv, True, 0.1, 1e-5)
    return [R(4, 3, 2), x, w, rm, rv, sm, si, True, 1e-5, mask, torch.empty(0, dtype=torch.uint8)]


def rms_norm_backward(mask):
    x, w = R(2, 4), R(4)
    _, rstd = torch.ops.aten._fused_rms_norm(x, [4], w, 1e-5)
    return [R(2, 4), x, [4], rstd, w, mask[:2]]


def mha(ask):
    e, h = 4, 2
    q = R(1, 3, e)
    return [q, q, q, e, h, R(3 * e, e), R(3 * e), R(e, e), R(e), None, ask]


def lstm_cell_backward(ask):
    g = R(2, 2) if ask else None
    return [g, g, R(2, 8), R(2, 8), R(8) if ask else None, R(8) if ask else None, R(2, 2), R(2, 2)]


def gru_cell_backward(ask):
    return [R(2, 2), R(2, 6), R(2, 6), R(2, 2), R(6) if ask else None, R(6) if ask else None]


def unpack_dual(ask):
    # A plain tensor has no tangent. (A dual tensor cannot cross DLPack with
    # its tangent, so "asked" is not built here.)
    return None if ask else [R(3), 0]


# Operator (schema name, overload) -> (argument builder, the
# builder's "ask for nothing" value, its "ask for everything" value, the
# schema results that must be undefined when nothing is asked, or None = all
# flagged results).
M3F, M3T = [False, False, False], [True, True, True]
CASES = {
    ("native_layer_norm_backward", ""): (layer_norm, M3F, M3T, None),
    ("native_batch_norm_backward", ""): (batch_norm, M3F, M3T, None),
    ("native_group_norm_backward", ""): (group_norm, M3F, M3T, None),
    ("convolution_backward", ""): (conv_backward, M3F, M3T, None),
    ("_slow_conv2d_backward", "output_mask"): (slow_conv2d_backward, M3F, M3T, None),
    ("_convolution_double_backward", ""): (conv_double_backward, False, True, None),
    ("grid_sampler_2d_backward", ""): (grid_2d, [False, False], [True, True], None),
    ("grid_sampler_3d_backward", ""): (grid_3d, [False, False], [True, True], None),
    ("_batch_norm_impl_index_backward", ""): (bn_impl_index_backward, M3F, M3T, None),
    ("matmul_backward", ""): (matmul_backward, M3F, M3T, None),
    ("batch_norm_backward", ""): (batch_norm_backward, M3F, M3T, None),
    ("_fused_rms_norm_backward", ""): (rms_norm_backward, M3F, M3T, None),
    ("_native_multi_head_attention", ""): (mha, False, True, [1]),
    ("_thnn_differentiable_lstm_cell_backward", ""): (lstm_cell_backward, False, True, None),
    ("_thnn_differentiable_gru_cell_backward", ""): (gru_cell_backward, False, True, [3, 4]),
    ("_unpack_dual", ""): (unpack_dual, False, True, [1]),
}
# Flagged operators with no CPU kernel for strided tensors: not callable here.
NO_CPU = ("_cudnn", "cudnn_", "miopen_", "mps_", "mkldnn_", "linear_backward", "convolution_backward_overrideable",
          "_thnn_fused_", "batch_norm_backward_reduce", "_efficient_attention", "_scaled_dot_product_efficient",
          "_scaled_dot_product_fused_attention_overrideable", "_sparse_mm_reduce_impl_backward")


def to_ctorch(v):
    if isinstance(v, torch.Tensor):
        return ctorch.from_torch(v.clone())
    return v


def outputs(v, n):
    return list(v) if n > 1 else [v]


def main():
    with open(os.environ["CTORCH_API_JSON"], encoding="utf-8") as fh:
        doc = json.load(fh)
    flagged = {}
    for f in doc["functions"]:
        if f["origin"] != "generated" or f["op"]["returns_convention"] != "out_params":
            continue
        outs = [p for p in f["params"] if p["direction"] == "out"]
        if any(p.get("null_result") or p.get("elements_null_result") for p in outs):
            flagged[(f["op"]["name"], f["op"]["overload"])] = f
    problems, checked, not_cpu = [], 0, []
    for key, f in sorted(flagged.items()):
        name, ov = key
        if key not in CASES:
            if name.startswith(NO_CPU) or name in NO_CPU:
                not_cpu.append(name + ("." + ov if ov else ""))
            else:
                problems.append(f"{name}: flagged null_result but no case in this test checks it")
            continue
        build, nothing, everything, must_null = CASES[key]
        outs = [p for p in f["params"] if p["direction"] == "out"]
        t_fn = getattr(getattr(torch.ops.aten, name), ov or "default")
        # (an operator api.json marks unsafe is only in ctorch.unchecked)
        space = ctorch.unchecked if f.get("ops_json", {}).get("unsafe") else ctorch.ops
        c_fn = getattr(getattr(space, name), ov or "default")
        for asked in (nothing, everything):
            torch.manual_seed(1)
            args = build(asked)
            if args is None:
                continue
            try:
                tr = outputs(t_fn(*args), len(outs))
            except Exception as e:  # noqa: BLE001 (no kernel for these inputs in this libtorch)
                not_cpu.append(f"{name}{'.' + ov if ov else ''} (PyTorch: {str(e).splitlines()[0][:80]})")
                break
            try:
                cr = outputs(c_fn(*[to_ctorch(a) for a in args]), len(outs))
            except Exception as e:  # noqa: BLE001
                problems.append(f"{name}: ctorch failed where PyTorch did not: {str(e).splitlines()[0][:160]}")
                break
            checked += 1
            for k, (p, t, c) in enumerate(zip(outs, tr, cr)):
                where = f"{name}{'.' + ov if ov else ''} result {k} (asked {asked!r})"
                if (t is None) != (c is None):
                    problems.append(f"{where}: torch gives {'None' if t is None else 'a tensor'}, "
                                    f"ctorch {'None' if c is None else 'a tensor'}")
                if c is None and not p.get("null_result"):
                    problems.append(f"{where}: NULL with CTORCH_OK but not flagged null_result")
                if asked is nothing and p.get("null_result") and (must_null is None or k in must_null) \
                        and c is not None:
                    problems.append(f"{where}: flagged null_result ({p.get('null_when')}) but defined when "
                                    "nothing is asked")
                if asked is everything and c is None:
                    problems.append(f"{where}: undefined although everything was asked for")
    print(f"null_result: {len(flagged)} flagged operators in api.json; {checked} calls checked on CPU; "
          f"not callable here: {'; '.join(not_cpu)}")
    for p in problems:
        print("  PROBLEM", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
