"""Unit tests of the API description: the header parser, the ownership and
array rules, typed schema defaults, the measured struct layouts and the
binding emitters' type mappings."""
import os
import shutil
import unittest

from ctorch_gen import emit_api
from ctorch_gen.apimodel import Param, load_api
from ctorch_gen.py import capi as py_capi
from ctorch_gen.api_header import describe_header
from ctorch_gen.api_ops import typed_default
from ctorch_gen.cheader import HeaderError, parse_header
from ctorch_gen.model import parse_type

HEADER = r"""
#ifndef X_H
#define X_H
#include <stdint.h>
#define CTORCH_VERSION_MAJOR 0
#ifdef __cplusplus
#define CTORCH_ENUM_BASE : int32_t
extern "C" {
#else
#define CTORCH_ENUM_BASE
#endif
/* ------------------------------------------------------------------ */
/* Things                                                              */
/* ------------------------------------------------------------------ */
/** Kinds. */
typedef enum ctorch_kind CTORCH_ENUM_BASE {
  CTORCH_KIND_A = 0, /**< first */
  CTORCH_KIND_B = 5  /**< second */
} ctorch_kind;
/** A pair. */
typedef struct ctorch_pair {
  int32_t kind; /**< a ctorch_kind value */
  double x, y;  /**< coordinates */
} ctorch_pair;
/** A thing. */
typedef struct ctorch_thing_s *ctorch_thing;
typedef int (*ctorch_cb)(void *ctx, const ctorch_thing *things, size_t n);
/** New thing. */
CTORCH_API ctorch_status ctorch_thing_new(ctorch_thing *out, const int64_t *sizes, size_t ndim, ctorch_kind kind);
/** Frees. NULL-safe; returns nothing. */
CTORCH_API void ctorch_thing_free(ctorch_thing t);
/** Copies into buf; out_len may be NULL.
 * @nullable out_len */
CTORCH_API ctorch_status ctorch_thing_name(size_t *out_len, char *buf, size_t cap, ctorch_thing t);
/** Borrowed name, valid while t lives. */
CTORCH_API ctorch_status ctorch_thing_label(const char **out, ctorch_thing t);
/** Takes names and things (n each); options NULL = defaults.
 * @nullable names things */
CTORCH_API ctorch_status ctorch_thing_many(const char *const *names, const ctorch_thing *things, size_t n,
                                           const ctorch_pair *options);
/** Helper. */
static inline ctorch_pair ctorch_pair_zero(void) {
  ctorch_pair p = {0, 0.0, 0.0};
  return p;
}
#ifdef __cplusplus
}
#endif
#endif
"""


class Header(unittest.TestCase):
    def setUp(self):
        self.h = parse_header(HEADER.replace("ctorch_status", "int"))

    def test_declarations(self):
        e = self.h.enums[0]
        self.assertEqual(e.name, "ctorch_kind")
        self.assertEqual([(v.name, v.value, v.doc) for v in e.values],
                         [("CTORCH_KIND_A", 0, "first"), ("CTORCH_KIND_B", 5, "second")])
        self.assertEqual(e.section, "Things")
        s = self.h.structs[0]
        self.assertEqual([(f.name, f.type.text, f.doc) for f in s.fields],
                         [("kind", "int32_t", "a ctorch_kind value"), ("x", "double", "coordinates"),
                          ("y", "double", "coordinates")])
        self.assertEqual([x.name for x in self.h.handles], ["ctorch_thing"])
        self.assertEqual([c.name for c in self.h.callbacks], ["ctorch_cb"])
        names = [f.name for f in self.h.functions]
        self.assertEqual(names, ["ctorch_thing_new", "ctorch_thing_free", "ctorch_thing_name", "ctorch_thing_label",
                                 "ctorch_thing_many", "ctorch_pair_zero"])
        self.assertTrue(self.h.functions[-1].inline)
        self.assertEqual(self.h.functions[4].params[0].type.text, "const char *const *")

    def test_rules(self):
        d = {f["name"]: {p["name"]: p for p in f["params"]} for f in describe_header(self.h)["functions"]}
        new = d["ctorch_thing_new"]
        self.assertEqual((new["out"]["direction"], new["out"]["ownership"], new["out"]["free"]),
                         ("out", "new", "ctorch_thing_free"))
        self.assertEqual(new["sizes"]["array"], {"length": "ndim"})
        self.assertEqual(new["ndim"]["length_of"], ["sizes"])
        self.assertEqual(d["ctorch_thing_free"]["t"]["ownership"], "freed")
        self.assertTrue(d["ctorch_thing_free"]["t"]["nullable"])
        name = d["ctorch_thing_name"]
        self.assertTrue(name["out_len"]["nullable"])
        self.assertEqual((name["buf"]["direction"], name["buf"]["ownership"]), ("out", "caller_buffer"))
        self.assertEqual(name["cap"]["role"], "capacity")
        self.assertEqual(name["buf"]["buffer_size"],
                         {"unit": "bytes", "rule": "reported", "length": "out_len", "plus": 1})
        self.assertEqual(d["ctorch_thing_label"]["out"]["ownership"], "borrowed")
        self.assertEqual(d["ctorch_thing_label"]["out"]["lifetime"], "t")
        many = d["ctorch_thing_many"]
        self.assertEqual(many["n"]["length_of"], ["names", "things"])
        self.assertTrue(many["options"]["nullable"])
        # "@nullable names things": a tag's names separated by spaces.
        self.assertTrue(many["names"]["nullable"] and many["things"]["nullable"])
        self.assertEqual(many["names"]["direction"], "in")
        self.assertEqual((new["out"]["null_result"], new["sizes"]["const"]), (False, True))
        self.assertEqual(many["names"]["const_levels"], [True, True, False])
        zero = {f["name"]: f for f in describe_header(self.h)["functions"]}["ctorch_pair_zero"]
        self.assertEqual(zero["inline_body"], {"returns_struct": "ctorch_pair", "fields": [
            {"field": "kind", "value": 0}, {"field": "x", "value": 0.0}, {"field": "y", "value": 0.0}]})

    def test_undescribable_fails(self):
        from ctorch_gen.api_header import DescribeError
        # A borrowed output whose doc does not say how long it lives.
        h = parse_header(HEADER.replace("ctorch_status", "int").replace("valid while t lives", "that is all"))
        with self.assertRaises(DescribeError):
            describe_header(h)
        # A caller buffer without a size rule.
        h = parse_header(HEADER.replace("ctorch_status", "int").replace("size_t *out_len", "size_t *got"))
        with self.assertRaises(ValueError):
            describe_header(h)

    def test_unknown_declaration_fails(self):
        with self.assertRaises(HeaderError):
            parse_header("CTORCH_API int ctorch_x(int a)\n")  # no ';'
        with self.assertRaises(HeaderError):
            parse_header("union u { int a; };\n")

    @unittest.skipUnless(shutil.which(os.environ.get("CC", "cc")), "no C compiler")
    def test_layouts_are_measured(self):
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "ctorch.h")
            with open(p, "w") as f:
                f.write(HEADER.replace("ctorch_status", "int").replace("CTORCH_API ", "")
                        .replace('#define CTORCH_VERSION_MAJOR 0', '#include <stddef.h>'))
            lay = emit_api.measure_layouts(self.h, os.environ.get("CC", "cc"), [d])
        self.assertEqual(lay["structs"]["ctorch_pair"]["size"], 24)
        self.assertEqual(lay["structs"]["ctorch_pair"]["fields"]["x"], [8, 8])
        self.assertEqual(lay["types"]["ctorch_kind"], [4, 4])


ENUMS = {"ctorch_dtype": {"CTORCH_INT64": 6, "CTORCH_FLOAT32": 9},
         "ctorch_memory_format": {"CTORCH_MEMORY_CONTIGUOUS": 0},
         "ctorch_layout": {"CTORCH_LAYOUT_STRIDED": 0},
         "ctorch_reduction": {"CTORCH_REDUCTION_NONE": 0, "CTORCH_REDUCTION_MEAN": 1, "CTORCH_REDUCTION_SUM": 2}}


def td(type_text, text, enum=None):
    return typed_default(parse_type(type_text)[0], text, enum, ENUMS)


class Defaults(unittest.TestCase):
    def test_kinds(self):
        self.assertEqual(td("Tensor?", "None")["kind"], "none")
        self.assertEqual(td("bool", "False")["value"], False)
        self.assertEqual(td("int", "-100")["value"], -100)
        self.assertEqual(td("float", "1e-05")["value"], 1e-05)
        self.assertEqual(td("str", '"\\"\'\\\\"')["value"], "\"'\\")
        self.assertEqual(td("Scalar", "1"), {"kind": "scalar", "scalar_kind": "INT", "value": 1, "text": "1"})
        self.assertEqual(td("Scalar", "1.0")["scalar_kind"], "FLOAT")
        self.assertEqual(td("ScalarType?", "long")["name"], "CTORCH_INT64")
        self.assertEqual(td("MemoryFormat?", "contiguous_format")["value"], 0)
        self.assertEqual(td("int", "Mean", "ctorch_reduction")["name"], "CTORCH_REDUCTION_MEAN")
        self.assertEqual(td("int", "at::Reduction::Sum", "ctorch_reduction")["value"], 2)

    def test_lists(self):
        self.assertEqual(td("int[2]", "1")["value"], [1, 1])
        self.assertEqual(td("int[2]", "1")["expanded_from"], 1)
        self.assertTrue(td("int[2]", "[]")["size_mismatch"])
        self.assertEqual(td("int[]", "[0,1]")["value"], [0, 1])
        self.assertEqual(td("bool[3]", "[True, False, True]")["value"], [True, False, True])

    def test_specials(self):
        d = td("float", "inf")
        self.assertEqual((d["value"], d["special"]), (None, "inf"))
        self.assertTrue(td("int", "9223372036854775807")["exceeds_double"])


class NullResults(unittest.TestCase):
    """null_result: only the results an operator can leave undefined."""

    def nulls(self, schema):
        from ctorch_gen.api_ops import null_results
        from ctorch_gen.model import parse_schema
        return null_results(parse_schema(schema))

    def test_rules(self):
        self.assertEqual(self.nulls("add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"), {})
        self.assertEqual(self.nulls("max.dim(Tensor self, int dim, bool keepdim=False) -> "
                                    "(Tensor values, Tensor indices)"), {})
        m = self.nulls("native_layer_norm_backward(Tensor grad_out, Tensor input, SymInt[] normalized_shape, "
                       "Tensor mean, Tensor rstd, Tensor? weight, Tensor? bias, bool[3] output_mask) -> "
                       "(Tensor, Tensor, Tensor)")
        self.assertEqual(sorted(m), [0, 1, 2])
        self.assertIn("output_mask", m[0])
        self.assertEqual(sorted(self.nulls("matmul_backward(Tensor grad, Tensor self, Tensor other, bool[2] mask) "
                                           "-> (Tensor, Tensor)")), [0, 1])
        self.assertEqual(sorted(self.nulls(
            "_native_multi_head_attention(Tensor query, Tensor key, Tensor value, int embed_dim, int num_head, "
            "Tensor qkv_weight, Tensor qkv_bias, Tensor proj_weight, Tensor proj_bias, Tensor? mask=None, "
            "bool need_weights=True, bool average_attn_weights=True, int? mask_type=None) -> (Tensor, Tensor)")), [1])

    def test_library_names(self):
        lib = emit_api.library_names("0.1.0", "2.15.0")
        self.assertEqual((lib["soname"], lib["file"], lib["load_names"], lib["torch_abi"]),
                         ("libctorch.so.0-torch2.15", "libctorch.so.0.1.0", ["libctorch.so.0-torch2.15"], "2.15"))

    def test_status_macro_bits(self):
        h = parse_header(HEADER.replace("ctorch_status", "int").replace(
            "/** Helper. */", "/** Code. */\n#define CTORCH_STATUS_CODE(st) ((ctorch_status)((uint32_t)(st) & 0xFFu))\n"
            "/** Ticket. */\n#define CTORCH_STATUS_TICKET(st) (((uint32_t)(st) >> 8) & 0x7FFFFFu)\n/** Helper. */"))
        m = {x["name"]: x for x in describe_header(h)["macros"]}
        self.assertEqual(m["CTORCH_STATUS_TICKET"]["bits"],
                         {"arg": "st", "as": "uint32_t", "shift": 8, "mask": 0x7FFFFF, "result": "uint32_t"})
        self.assertEqual(m["CTORCH_STATUS_CODE"]["bits"]["mask"], 0xFF)
        # The data computes what the C macro does.
        st = (1234 << 8) | 9
        b = m["CTORCH_STATUS_TICKET"]["bits"]
        self.assertEqual((st >> b["shift"]) & b["mask"], 1234)


class HeaderPlan(unittest.TestCase):
    """hplan: which header functions the bindings wrap, as what, and the
    container rule (handles[].elements)."""
    HDR = HEADER.replace("ctorch_status", "int").replace("/** Helper. */", """/** A list of things. */
typedef struct ctorch_bag_s *ctorch_bag;
/** Frees. */
CTORCH_API void ctorch_bag_free(ctorch_bag b);
/** Count. */
CTORCH_API ctorch_status ctorch_bag_size(size_t *out, ctorch_bag b);
/** New element i. */
CTORCH_API ctorch_status ctorch_bag_get(ctorch_thing *out, ctorch_bag b, size_t i);
/** New bag of a thing's parts. */
CTORCH_API ctorch_status ctorch_thing_parts(ctorch_bag *out, ctorch_thing t);
/** Calls back. */
CTORCH_API ctorch_status ctorch_thing_visit(ctorch_thing t, ctorch_cb cb, void *ctx);
/** Helper. */""").replace("ctorch_status", "int")

    def test_plan(self):
        from ctorch_gen import hplan
        d = describe_header(parse_header(self.HDR))
        doc = load_api({"handles": d["handles"], "functions": [dict(f, origin="header") for f in d["functions"]]})
        bag = next(h for h in doc.handles if h.name == "ctorch_bag")
        self.assertEqual(bag.elements.to_json(), {"handle": "ctorch_thing", "size": "ctorch_bag_size",
                                                  "get": "ctorch_bag_get"})
        self.assertIsNone(next(h for h in doc.handles if h.name == "ctorch_thing").elements)
        self.assertEqual(hplan.list_handles(doc), {"ctorch_bag": bag.elements})
        e = {x.name: x for x in hplan.plan(doc)}
        self.assertEqual((e["ctorch_thing_label"].owner, e["ctorch_thing_label"].method), ("ctorch_thing", "label"))
        self.assertIsNone(e["ctorch_thing_new"].owner)           # a constructor: a module-level function
        self.assertEqual([p.name for p in e["ctorch_thing_name"].ins], ["t"])  # out_len, cap: derived
        self.assertEqual([p.name for p in e["ctorch_thing_many"].ins], ["names", "things", "options"])
        self.assertIn("frees", e["ctorch_thing_free"].skip)
        self.assertIn("callback", e["ctorch_thing_visit"].skip)
        self.assertIn("read_bag", e["ctorch_bag_size"].skip)     # read by the generated list reader
        self.assertIsNone(e["ctorch_thing_parts"].skip)


class PythonTypes(unittest.TestCase):
    def test_ctypes_of(self):
        doc = load_api({})

        def c(t, pointer):
            return py_capi.ctypes_of(Param.load({"type": t, "pointer": pointer}), doc)
        self.assertEqual(c({"kind": "handle", "name": "ctorch_tensor"}, 1), "_P(_c.c_void_p)")
        self.assertEqual(c({"kind": "opaque", "name": "struct DLManagedTensor"}, 1), "_c.c_void_p")
        self.assertEqual(c({"kind": "string", "name": "char"}, 1), "_P(_c.c_char_p)")
        self.assertEqual(c({"kind": "struct", "name": "ctorch_scalar"}, 0), "ctorch_scalar")


if __name__ == "__main__":
    unittest.main()
