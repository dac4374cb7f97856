"""Unit tests of the Rust emitters (ctorch_gen/rust/: names, sys, nn): C types
as Rust FFI types, struct layouts asserted, operator wrappers' argument
conversions, and the module builders from catalogue entries."""
import unittest

from ctorch_gen.apimodel import Function, load_api
from ctorch_gen.rust import names as rust_names, nn as rust_nn, sys as rust_sys
from tests.test_nn_emitters import doc as nn_doc


class RustTypes(unittest.TestCase):
    def test_c_types(self):
        t = rust_names.rust_c_type
        self.assertEqual(t("const char *const *"), "*const *const ::std::os::raw::c_char")
        self.assertEqual(t("ctorch_tensor *"), "*mut ctorch_tensor")
        self.assertEqual(t("const ctorch_dtype *", "sys::"), "*const sys::ctorch_dtype")
        self.assertEqual(t("struct DLManagedTensor **"), "*mut *mut DLManagedTensor")
        self.assertEqual(t("void"), "()")
        self.assertEqual(t("size_t"), "usize")

    def test_keywords_and_locals_are_renamed(self):
        self.assertEqual(rust_names.ident("where"), "r#where")
        self.assertEqual(rust_names.ident("self"), "self_")
        self.assertEqual(rust_names.ident("input"), "input")


def _sys_doc():
    return {"abi_hash": "x", "ctorch_version": "0.1.0", "torch_version": "1.13.1",
            "library": {"soname": "libctorch.so.0-torch1.13"}, "types": {"ctorch_dtype": {"size": 4}},
            "macros": [], "handles": [], "opaque_types": [], "callbacks": [],
            "enums": [{"name": "ctorch_dtype", "c_type": "int32_t", "doc": "",
                       "values": [{"name": "CTORCH_FLOAT32", "value": 9}]}],
            "structs": [{"name": "ctorch_device", "size": 8, "align": 4, "doc": "", "fields": [
                {"name": "type", "c_type": "int32_t", "offset": 0}, {"name": "index", "c_type": "int32_t", "offset": 4}]}],
            "functions": [{"name": "ctorch_f", "inline": False, "doc": "", "returns": {"c_type": "ctorch_status"},
                           "params": [{"name": "out", "c_type": "int64_t *", "type": {"kind": "int"}}]}]}


class RustSys(unittest.TestCase):
    def test_layouts_are_asserted_and_functions_declared(self):
        rs = rust_sys.emit_sys(load_api(_sys_doc()))
        self.assertIn("const _: () = assert!(::std::mem::size_of::<ctorch_device>() == 8);", rs)
        self.assertIn("const _: () = assert!(::std::mem::offset_of!(ctorch_device, index) == 4);", rs)
        self.assertIn("pub r#type: i32,", rs)
        self.assertIn("pub const CTORCH_FLOAT32: ctorch_dtype = 9;", rs)
        self.assertIn("pub fn ctorch_f(out: *mut i64) -> ctorch_status;", rs)


class RustEnums(unittest.TestCase):
    def test_debug_names_the_value_and_display_is_torchs_name(self):
        d = _sys_doc()
        d["enums"] = [{"name": "ctorch_dtype", "c_type": "int32_t", "doc": "", "values": [
            {"name": "CTORCH_FLOAT32", "value": 9}, {"name": "CTORCH_FLOAT64", "value": 10}]},
            {"name": "ctorch_reduction", "c_type": "int32_t", "doc": "", "values": [
                {"name": "CTORCH_REDUCTION_NONE", "value": 0}, {"name": "CTORCH_REDUCTION_MEAN", "value": 1},
                {"name": "CTORCH_REDUCTION_AVERAGE", "value": 1}]}]
        rs = rust_sys.emit_enums(load_api(d))
        self.assertIn("#[derive(Clone, Copy, PartialEq, Eq, Hash)]\npub struct DType(pub sys::ctorch_dtype);", rs)
        self.assertIn("impl ::std::fmt::Debug for DType {", rs)
        self.assertIn('            10 => "FLOAT64",', rs)
        self.assertIn('            _ => return write!(f, "DType({})", self.0),', rs)
        self.assertIn("impl ::std::fmt::Display for DType {", rs)
        self.assertIn('            10 => "float64",', rs)
        # A value given two names matches once (the first name), and only the
        # enums whose names are torch's get Display.
        self.assertIn('            1 => "MEAN",', rs)
        self.assertNotIn('1 => "AVERAGE"', rs)
        self.assertNotIn("impl ::std::fmt::Display for Reduction", rs)


class RustOps(unittest.TestCase):
    def test_optional_and_list_arguments(self):
        f = {"name": "ctorch_sum_dim", "params": [
            {"name": "ret", "direction": "out", "type": {"name": "ctorch_tensor"}, "c_type": "ctorch_tensor *"},
            {"name": "self", "direction": "in", "schema_arg": "self", "c_type": "ctorch_tensor"},
            {"name": "dim", "direction": "in", "schema_arg": "dim", "c_type": "const int64_t *"},
            {"name": "dim_len", "direction": "in", "schema_arg": "dim", "c_type": "size_t"},
            {"name": "dtype", "direction": "in", "schema_arg": "dtype", "c_type": "const ctorch_dtype *"}],
             "op": {"schema": "sum.dim(...)", "returns_convention": "out_params", "args": [
                 {"name": "self", "base": "Tensor", "optional": False},
                 {"name": "dim", "base": "int", "optional": True, "list": True},
                 {"name": "dtype", "base": "ScalarType", "optional": True}]}}
        rs = rust_sys.op_function(Function.load(f))
        self.assertIn("pub fn sum_dim(self_: &Tensor, dim: Option<&[i64]>, dtype: Option<DType>) -> Result<Tensor>",
                      rs)
        self.assertIn("dim.map_or(::std::ptr::null(), |l| l.as_ptr())", rs)
        self.assertIn("let dtype_o: Option<sys::ctorch_dtype> = dtype.map(|x| x.0 as sys::ctorch_dtype);", rs)
        self.assertIn("#[inline]", rs)


class RustNn(unittest.TestCase):
    def test_builders_take_required_arguments_and_set_the_rest(self):
        rs = rust_nn.emit(nn_doc())
        self.assertIn("pub fn new(in_channels: i64, out_channels: i64, kernel_size: impl Into<Ints>) -> Self {", rs)
        self.assertIn("pub fn padding(mut self, padding: impl Into<IntsOrStr>) -> Self {", rs)
        self.assertIn("pub fn new(encoder_layer: &'a Module, num_layers: i64) -> Self {", rs)
        self.assertIn('a.module("encoder_layer", encoder_layer);', rs)


if __name__ == "__main__":
    unittest.main()
