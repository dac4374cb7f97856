"""Guards, unsafe flags and the sweep's operator table (emit_sweep)."""
import json
import os
import subprocess
import tempfile
import unittest

from ctorch_gen import emit_cpp, emit_header, emit_json, emit_sweep
from ctorch_gen.model import parse_schema
from ctorch_gen.plan import apply_safety, guarded_names, plan_function, unsafe_reasons

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.normpath(os.path.join(HERE, "..", ".."))


def plan(schema):
    return plan_function(parse_schema(schema))


def _read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


class Guards(unittest.TestCase):
    def test_guards_header_names_the_issue_15_operators(self):
        names = guarded_names(_read(os.path.join(SRC, "shim", "ops", "guards.h")))
        for n in ("native_batch_norm", "native_batch_norm_backward", "_batch_norm_impl_index_backward",
                  "gru_cell", "quantized_lstm_cell", "_symeig_helper"):
            self.assertIn(n, names)
        # The hot path has no guard.
        for n in ("add_Tensor", "mul_Tensor", "relu"):
            self.assertNotIn(n, names)

    def test_guard_call_precedes_the_call_and_leaves_others_identical(self):
        bn = plan("gru_cell(Tensor input, Tensor hx, Tensor w_ih, Tensor w_hh, Tensor? b_ih=None, "
                  "Tensor? b_hh=None) -> Tensor")
        add = plan("add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor")
        before = emit_cpp.wrapper(add)
        apply_safety([bn, add], {"gru_cell"}, {})
        self.assertTrue(bn.guard)
        self.assertFalse(add.guard)
        self.assertEqual(emit_cpp.wrapper(add), before)
        w = emit_cpp.wrapper(bn)
        g = w.index("ctorch::guard::gru_cell(a_input.get(), a_hx.get(), a_w_ih.get(), a_w_hh.get(), "
                    "a_b_ih.get(), a_b_hh.get());")
        self.assertLess(g, w.index("at::_ops::gru_cell::call("))
        self.assertGreater(g, w.index('ctorch::Borrowed a_w_hh(w_hh, "w_hh", ctorch::Borrowed::required_t{});'))

    def test_unsafe_flag_reaches_header_and_ops_json(self):
        reasons = unsafe_reasons("# comment\n\nctorch_foo: reads past x  # trailing\nctorch_bar\n")
        self.assertEqual(reasons, {"ctorch_foo": "reads past x", "ctorch_bar": "may crash on bad input"})
        p = plan("foo(Tensor self) -> Tensor")
        q = plan("relu(Tensor self) -> Tensor")
        apply_safety([p, q], set(), reasons)
        hdr = emit_header.emit([p, q], "x.yaml", "1")
        self.assertIn(" *  ret: new tensor.\n *  UNSAFE: reads past x */\nCTORCH_API ctorch_status ctorch_foo(", hdr)
        self.assertEqual(hdr.count("UNSAFE"), 1)
        ops = json.loads(emit_json.emit_ops([p, q], "1"))["ops"]
        self.assertEqual((ops[0]["unsafe"], ops[0]["unsafe_reason"]), (True, "reads past x"))
        self.assertNotIn("unsafe", ops[1])


class SchemaDerivedChecks(unittest.TestCase):
    def test_fixed_size_int_lists(self):
        w = emit_cpp.wrapper(plan("max_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, "
                                  "int[2] dilation=1, bool ceil_mode=False) -> Tensor"))
        self.assertIn('ctorch_gen::FixedInts<2> a_kernel_size(kernel_size, kernel_size_len, "kernel_size", false);', w)
        self.assertIn('ctorch_gen::FixedInts<2> a_stride(stride, stride_len, "stride", true);', w)
        self.assertIn("a_kernel_size.ref(), a_stride.ref(), a_padding.ref(), a_dilation.ref()", w)
        w = emit_cpp.wrapper(plan("upsample_nearest2d(Tensor self, SymInt[2] output_size, float? scales_h=None, "
                                  "float? scales_w=None) -> Tensor"))
        self.assertIn("a_output_size.sym_ref()", w)
        # int[1] accepts any length: unchanged.
        w = emit_cpp.wrapper(plan("sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, "
                                  "ScalarType? dtype=None) -> Tensor"))
        self.assertNotIn("FixedInts", w)

    def test_out_arguments_are_held_and_rechecked(self):
        w = emit_cpp.wrapper(plan("add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)"))
        self.assertIn('ctorch_gen::OutArg a_out(out, "out");', w)
        self.assertLess(w.index("add_out::call("), w.index("  a_out.check();"))
        self.assertIn('ctorch::Borrowed a_self(self, "self", ctorch::Borrowed::required_t{});', w)
        # In-place self is borrowed as before.
        w = emit_cpp.wrapper(plan("relu_(Tensor(a!) self) -> Tensor(a!)"))
        self.assertNotIn("OutArg", w)


class SweepTable(unittest.TestCase):
    SCHEMAS = [
        "add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
        "add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)",
        "max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)",
        "split.Tensor(Tensor(a -> *) self, SymInt split_size, int dim=0) -> Tensor(a)[]",
        "index.Tensor(Tensor self, Tensor?[] indices) -> Tensor",
        "conv2d(Tensor input, Tensor weight, Tensor? bias=None, int[2] stride=1, int[2] padding=0, "
        "int[2] dilation=1, int groups=1) -> Tensor",
        "_batch_norm_impl_index_backward(int impl_index, Tensor input, Tensor grad_output, Tensor? weight, "
        "Tensor? running_mean, Tensor? running_var, Tensor? save_mean, Tensor? save_var_transform, bool train, "
        "float eps, bool[3] output_mask, Tensor reservedSpace) -> (Tensor, Tensor, Tensor)",
        "linspace(Scalar start, Scalar end, int steps, *, ScalarType? dtype=None, Layout? layout=None, "
        "Device? device=None, bool? pin_memory=None) -> Tensor",
        "div.Tensor_mode(Tensor self, Tensor other, *, str? rounding_mode) -> Tensor",
        "sum.dim_DimnameList(Tensor self, Dimname[1] dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
        "bernoulli(Tensor self, *, Generator? generator=None) -> Tensor",
        "_foreach_add.ScalarList(Tensor[] self, Scalar[] scalars) -> Tensor[]",
        "native_layer_norm_backward(Tensor grad_out, Tensor input, SymInt[] normalized_shape, Tensor mean, "
        "Tensor rstd, Tensor? weight, Tensor? bias, bool[3] output_mask) -> (Tensor, Tensor, Tensor)",
        "is_same_size(Tensor self, Tensor other) -> bool",
        "quantized_lstm_cell(Tensor input, Tensor[] hx, Tensor w_ih, Tensor w_hh, Tensor b_ih, Tensor b_hh, "
        "Tensor packed_ih, Tensor packed_hh, Tensor col_offsets_ih, Tensor col_offsets_hh, Scalar scale_ih, "
        "Scalar scale_hh, Scalar zero_point_ih, Scalar zero_point_hh) -> (Tensor, Tensor)",
    ]

    def test_kinds(self):
        def kinds(schema):
            return [emit_sweep.kind_of(b.arg.type) for b in plan(schema).args]
        self.assertEqual(kinds(self.SCHEMAS[5]), [("T", 0), ("T", 0), ("OT", 0), ("IL", 2), ("IL", 2),
                                                  ("IL", 2), ("I", 0)])
        self.assertEqual(kinds(self.SCHEMAS[4]), [("T", 0), ("OTL", 0)])
        self.assertEqual(kinds(self.SCHEMAS[9]), [("T", 0), ("DNL", 1), ("B", 0), ("ODT", 0)])
        self.assertEqual(kinds(self.SCHEMAS[7])[3:], [("ODT", 0), ("OLAY", 0), ("ODEV", 0), ("OB", 0)])

    def test_internal_functions(self):
        internal = {p.c_name for p in map(plan, self.SCHEMAS) if emit_sweep.is_internal(p)}
        self.assertEqual(internal, {"ctorch__batch_norm_impl_index_backward", "ctorch__foreach_add_ScalarList",
                                    "ctorch_native_layer_norm_backward", "ctorch_quantized_lstm_cell"})

    def test_table_compiles_against_the_runtime(self):
        plans = [plan(s) for s in self.SCHEMAS]
        apply_safety(plans, set(), {"ctorch_bernoulli": 'says "why"'})
        text = emit_sweep.emit(plans)
        self.assertIn('"ctorch_bernoulli", ', text)
        self.assertIn('"says \\"why\\""', text)
        self.assertIn("  sw_out_mutated(st, 0);", text)  # add_ mutates self
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "ctorch_ops.h"), "w", encoding="utf-8") as f:
                f.write(emit_header.emit(plans, "x.yaml", "1"))
            with open(os.path.join(d, "sweep_ops.c"), "w", encoding="utf-8") as f:
                f.write(text)
            subprocess.run([os.environ.get("CC", "cc"), "-std=gnu11", "-Wall", "-Wextra", "-Werror",
                            "-Wno-unused-parameter", "-fsyntax-only", "-I", d, "-I", os.path.join(SRC, "include"),
                            "-I", os.path.join(SRC, "tests", "sweep"), os.path.join(d, "sweep_ops.c")], check=True)


if __name__ == "__main__":
    unittest.main()
