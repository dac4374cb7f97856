"""Type mapping, skip reasons, naming and emitters, on a hand-made yaml."""
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

from ctorch_gen import emit_cpp, emit_header, emit_json, emit_null_test
from ctorch_gen.model import load_yaml, parse_schema
from ctorch_gen.plan import build, c_name_of, existing_c_names, header_of, plan_function
from ctorch_gen.typemap import Unsupported

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURE = os.path.join(HERE, "fixtures", "unsupported.yaml")


def _read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def _write(path, text):
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def plan(schema):
    return plan_function(parse_schema(schema))


class Naming(unittest.TestCase):
    def test_names(self):
        cases = {
            "add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor": "ctorch_add_Tensor",
            "add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)": "ctorch_add__Tensor",
            "add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)": "ctorch_add_out",
            "relu_(Tensor(a!) self) -> Tensor(a!)": "ctorch_relu_",
            "max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)": "ctorch_max_dim",
        }
        for s, n in cases.items():
            self.assertEqual(c_name_of(parse_schema(s)), n)

    def test_headers(self):
        self.assertEqual(header_of(parse_schema("add_.Tensor(Tensor(a!) self) -> Tensor(a!)")), "add")
        self.assertEqual(header_of(parse_schema("__iand__.Tensor(Tensor(a!) self, Tensor o) -> Tensor(a!)")), "and")
        self.assertEqual(header_of(parse_schema("normal_functional(Tensor self) -> Tensor")), "normal")

    def test_reserved_names_from_header(self):
        text = "CTORCH_API ctorch_status ctorch_tensor_clone(ctorch_tensor *out, ctorch_tensor t);"
        self.assertEqual(existing_c_names(text), {"ctorch_tensor_clone"})


class Mapping(unittest.TestCase):
    def test_add_tensor_signature(self):
        p = plan("add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor")
        self.assertEqual(emit_header.declaration(p),
                         "CTORCH_API ctorch_status ctorch_add_Tensor(ctorch_tensor *ret, ctorch_tensor self, "
                         "ctorch_tensor other, ctorch_scalar alpha);")
        self.assertEqual(p.convention, "out_params")

    def test_inplace_and_out_have_no_out_params(self):
        for s in ["add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)",
                  "add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)",
                  "max.dim_max(Tensor self, int dim, bool keepdim=False, *, Tensor(a!) max, Tensor(b!) "
                  "max_values) -> (Tensor(a!) values, Tensor(b!) indices)"]:
            p = plan(s)
            self.assertEqual(p.convention, "mutated_args", s)
            self.assertEqual(p.rets, [])
        self.assertEqual(plan("_foreach_add_.Scalar(Tensor(a!)[] self, Scalar scalar) -> ()").convention, "none")

    def test_tuple_and_list_returns(self):
        p = plan("max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)")
        self.assertEqual([(r.c_type, r.c_name) for r in p.rets],
                         [("ctorch_tensor *", "ret0"), ("ctorch_tensor *", "ret1")])
        p = plan("unbind.int(Tensor(a -> *) self, int dim=0) -> Tensor(a)[]")
        self.assertEqual([(r.c_type, r.c_name) for r in p.rets], [("ctorch_tensor_list *", "ret")])
        p = plan("is_same_size(Tensor self, Tensor other) -> bool")
        self.assertEqual(p.rets[0].c_type, "int *")

    def test_out_param_names_avoid_arguments(self):
        p = plan("f(Tensor ret, Tensor ret_) -> Tensor")
        self.assertEqual(p.rets[0].c_name, "ret__")
        p = plan("g(Tensor ret1, int[] ret1_len) -> (Tensor, Tensor)")
        names = [n for _, n in p.c_params()]
        self.assertEqual(len(names), len(set(names)), names)

    def test_keyword_argument_names_sanitised(self):
        p = plan("f(Tensor self, int default, float int) -> Tensor")
        self.assertEqual([n for _, n in p.c_params()], ["ret", "self", "default_", "int_"])

    def test_type_table(self):
        p = plan("f(Tensor a, Tensor? b, Tensor[] c, Tensor?[] d, int e, int? f, int[] g, SymInt[] h, "
                 "int[]? i, int[1]? j, float k, float? l, float[]? m, bool n, bool? o, bool[3] p, Scalar q, "
                 "Scalar? r, Scalar[] s, ScalarType t, ScalarType? u, Layout? v, Device? w, MemoryFormat? x, "
                 "str y, str? z, Generator? gen, SymInt sy, Dimname dn, Dimname[] dns) -> Tensor")
        got = {b.arg.name: [t for t, _ in b.c_params] for b in p.args}
        want = {
            "a": ["ctorch_tensor"], "b": ["ctorch_tensor"], "c": ["const ctorch_tensor *", "size_t"],
            "d": ["const ctorch_tensor *", "size_t"], "e": ["int64_t"], "f": ["const int64_t *"],
            "g": ["const int64_t *", "size_t"], "h": ["const int64_t *", "size_t"],
            "i": ["const int64_t *", "size_t"], "j": ["const int64_t *", "size_t"], "k": ["double"],
            "l": ["const double *"], "m": ["const double *", "size_t"], "n": ["int"], "o": ["const int *"],
            "p": ["const int *", "size_t"], "q": ["ctorch_scalar"], "r": ["const ctorch_scalar *"],
            "s": ["const ctorch_scalar *", "size_t"], "t": ["ctorch_dtype"], "u": ["const ctorch_dtype *"],
            "v": ["const ctorch_layout *"], "w": ["const ctorch_device *"],
            "x": ["const ctorch_memory_format *"], "y": ["const char *"], "z": ["const char *"],
            "gen": ["ctorch_generator"], "sy": ["int64_t"], "dn": ["const char *"],
            "dns": ["const char *const *", "size_t"],
        }
        self.assertEqual(got, want)
        nullable = {b.arg.name for b in p.args if b.nullable}
        self.assertEqual(nullable, {"b", "d", "f", "i", "j", "l", "m", "o", "r", "u", "v", "w", "x", "z", "gen"})

    def test_required_tensors_checked_first(self):
        p = plan("f(bool[2] mask, ScalarType t, Tensor[] xs, Tensor self) -> Tensor")
        body = emit_cpp.wrapper(p)
        first_check = body.index("Borrowed a_self(self")
        self.assertLess(first_check, body.index("tensor_list(xs"))
        self.assertLess(body.index("tensor_list(xs"), body.index("bool_array<2>"))
        self.assertLess(body.index("*ret = nullptr"), first_check)


class FixtureYaml(unittest.TestCase):
    def setUp(self):
        self.res = build(load_yaml(FIXTURE), reserved={"ctorch_tensor_ref"})
        self.reasons = {s.schema.split("(")[0]: s.reason for s in self.res.skipped}

    def test_skip_reasons(self):
        want = {
            "set_.source_Storage": "unsupported argument type 'Storage' (argument 'source')",
            "record_stream": "unsupported argument type 'Stream' (argument 's')",
            "qscheme": "unsupported return type 'QScheme'",
            "_nested_tensor_offsets": "unsupported return type 'int[]'",
            "frob": "unsupported argument type 'Frobnicator' (argument 'f')",
            "scalar_types": "unsupported argument type 'ScalarType[]' (argument 'types')",
            "fixed_tensors": "fixed-size tensor list 'Tensor[2]' (argument 'pair')",
            "unsized_bools": "unsized bool list 'bool[]' (argument 'mask')",
            "returns_optional": "unsupported return type 'Tensor?'",
            "tensor_ref": "name collision with ctorch_tensor_ref declared in ctorch.h",
        }
        for k, v in want.items():
            self.assertEqual(self.reasons.get(k), v, k)
        self.assertTrue(self.reasons["broken"].startswith("unparsable schema"))
        dup = [s for s in self.res.skipped if s.schema.startswith("add.Tensor")]
        self.assertEqual(len(dup), 1)
        self.assertIn("name collision with ctorch_add_Tensor generated for 'add.Tensor'", dup[0].reason)

    def test_wrapped(self):
        names = [p.c_name for p in self.res.plans]
        self.assertEqual(names, ["ctorch_add_Tensor", "ctorch_add__Tensor", "ctorch_add_out", "ctorch_max_dim",
                                 "ctorch_split_Tensor", "ctorch_newer_op", "ctorch___and___Tensor"])
        self.assertEqual(self.res.schemas, 19)

    def test_generate_cli_outputs(self):
        with tempfile.TemporaryDirectory() as d:
            subprocess.run([sys.executable, os.path.join(HERE, "..", "generate.py"), "--yaml", FIXTURE,
                            "--out", d, "--shards", "3", "--torch-version", "9.9", "--quiet"], check=True)
            cov = json.loads(_read(os.path.join(d, "coverage.json")))
            self.assertEqual(cov["schemas"], 19)
            self.assertEqual(cov["wrapped"], 8)  # tensor_ref is not reserved without --ctorch-header
            self.assertEqual(cov["wrapped"] + len(cov["skipped"]), cov["schemas"])
            self.assertEqual(cov["torch_version"], "9.9")
            ops = json.loads(_read(os.path.join(d, "ops.json")))
            add = next(o for o in ops["ops"] if o["c_name"] == "ctorch_add_Tensor")
            self.assertEqual(add["returns_convention"], "out_params")
            self.assertEqual(add["args"][2], {"name": "alpha", "schema_type": "Scalar", "c_types": ["ctorch_scalar"],
                                              "c_names": ["alpha"], "default": "1", "kwarg_only": True,
                                              "nullable": False, "mutable": False})
            addo = next(o for o in ops["ops"] if o["c_name"] == "ctorch_add_out")
            self.assertEqual(addo["returns_convention"], "mutated_args")
            self.assertEqual(addo["returns"][0]["alias_of"], "out")
            shards = sorted(f for f in os.listdir(d) if re.match(r"ctorch_ops_\d+\.cpp$", f))
            self.assertEqual(len(shards), 3)
            # Every op is defined in exactly one shard; each header included once.
            text = "".join(_read(os.path.join(d, f)) for f in shards)
            for o in ops["ops"]:
                self.assertEqual(text.count(f" {o['c_name']}("), 1, o["c_name"])
            self.assertEqual(text.count("#include <ATen/ops/add_ops.h>"), 1)
            hdr = _read(os.path.join(d, "ctorch_ops.h"))
            self.assertIn("/** add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor", hdr)
            null_test = _read(os.path.join(d, "test_ops_null.c"))
            self.assertIn("expect(ctorch_add_Tensor(&t[0], NULL, NULL, ct_scalar0)", null_test)

    def test_header_compiles_as_c99(self):
        cc = os.environ.get("CC", "cc")
        src = os.path.normpath(os.path.join(HERE, "..", ".."))
        plans = self.res.plans
        with tempfile.TemporaryDirectory() as d:
            _write(os.path.join(d, "ctorch_ops.h"), emit_header.emit(plans, "x.yaml", "1"))
            _write(os.path.join(d, "t.c"), emit_null_test.emit(plans))
            subprocess.run([cc, "-std=c99", "-Wall", "-Wextra", "-pedantic", "-Werror", "-fsyntax-only",
                            "-I", d, "-I", os.path.join(src, "include"), os.path.join(d, "t.c")], check=True)


if __name__ == "__main__":
    unittest.main()


class Torch2xVocabulary(unittest.TestCase):
    """The generator takes a 2.x-style yaml: everything parses, unsupported
    types are skipped with reasons, the rest maps to the documented C types."""

    def setUp(self):
        self.res = build(load_yaml(os.path.join(HERE, "fixtures", "torch2x.yaml")))
        self.by_name = {p.c_name: p for p in self.res.plans}

    def test_only_storage_and_stream_skipped(self):
        self.assertEqual(sorted(s.reason for s in self.res.skipped),
                         ["unsupported argument type 'Storage' (argument 'source')",
                          "unsupported argument type 'Stream' (argument 's')"])
        self.assertEqual(len(self.res.plans) + 2, self.res.schemas)

    def sig(self, name):
        return emit_header.declaration(self.by_name[name])

    def test_signatures(self):
        self.assertEqual(self.sig("ctorch_sym_size_int"),
                         "CTORCH_API ctorch_status ctorch_sym_size_int(int64_t *ret, ctorch_tensor self, int64_t dim);")
        self.assertIn("ctorch_tensor_list *ret, const ctorch_tensor *self, size_t self_len, "
                      "const ctorch_scalar *scalars, size_t scalars_len", self.sig("ctorch__foreach_add_ScalarList"))
        self.assertIn("const char *const *names, size_t names_len", self.sig("ctorch_empty_names"))
        self.assertIn("const int64_t *output_size, size_t output_size_len, int align_corners, "
                      "const double *scale_factors, size_t scale_factors_len",
                      self.sig("ctorch_upsample_bilinear2d_vec"))
        self.assertIn("ctorch_tensor self, int64_t index)", self.sig("ctorch__dummy_device_index"))
        self.assertIn("const ctorch_scalar *values, size_t values_len", self.sig("ctorch__optional_scalars"))
        self.assertIn("const int *output_mask, size_t output_mask_len", self.sig("ctorch_convolution_backward"))
        fa = self.by_name["ctorch__scaled_dot_product_flash_attention"]
        self.assertEqual([r.c_type for r in fa.rets],
                         ["ctorch_tensor *"] * 4 + ["int64_t *"] * 2 + ["ctorch_tensor *"] * 3)

    def test_conventions(self):
        self.assertEqual(self.by_name["ctorch__fused_adam_"].convention, "none")
        self.assertEqual(self.by_name["ctorch_split_with_sizes_copy_out"].convention, "none")
        self.assertEqual(self.by_name["ctorch__assert_async_msg"].convention, "none")
        self.assertEqual(self.by_name["ctorch__nested_view_from_buffer"].convention, "out_params")
        nullable = {b.arg.name for b in self.by_name["ctorch_as_strided_scatter"].args if b.nullable}
        self.assertEqual(nullable, {"storage_offset"})

    def test_yaml_tags_kept(self):
        f = next(p.f for p in self.res.plans if p.f.name == "_to_copy")
        self.assertEqual(f.tags, ("core", "pointwise"))
