"""api.json's description of the real include/ctorch.h against the header's
own wording (a binding generated from api.json alone found
booleans, nullable pointers, NULL results, a macro value, an int holding an
enum and output arrays that the description left out).

Each test derives its candidates from the header text by its own, broader
rules than the generator's (api_header.py), and fails on a candidate the
description does not mark, unless the candidate is listed below with why it
is not one. So a new declaration worded like the ones found then fails here
until the generator reads it."""
import os
import re
import unittest

from ctorch_gen import nn_sig
from ctorch_gen.api_header import describe_header
from ctorch_gen.cheader import parse_header

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HEADER = os.path.join(ROOT, "include", "ctorch.h")

# int parameters whose wording looks like a flag but that are counts or ids.
NOT_BOOLEAN = {
    ("ctorch_tensor_format", "sci_mode"): "three states: -1 automatic (Python's None), 0 off, 1 on",
    ("ctorch_set_num_threads", "n"): "a thread count",
    ("ctorch_set_num_interop_threads", "n"): "a thread count",
    ("ctorch_data_loader_set_workers", "prefetch_factor"): "a batch count",
    ("ctorch_train_state_save_kept", "keep_last"): "a file count",
    ("ctorch_store_tcp_new", "world_size"): "a process count",
    ("ctorch_store_file_new", "world_size"): "a process count",
    ("ctorch_dist_init_from_env", "local_rank"): "a rank",
    ("ctorch_dist_reduce", "root"): "a rank",
    ("ctorch_dist_send", "dst"): "a rank",
    ("ctorch_dist_send", "tag"): "a message tag",
    ("ctorch_cuda_set_device", "device"): "a device index",
    ("ctorch_cuda_synchronize", "device"): "a device index",
    ("ctorch_nn_module_to", "dtype"): "a ctorch_dtype (enum, negative = keep)",
}

# Pointers a sentence mentions beside "may be NULL" said of another one.
NOT_NULLABLE = {
    ("ctorch_data_loader_new", "data"): "\"data (and targets, may be NULL)\": targets may be",
    ("ctorch_dataset_from_tensors", "data"): "\"(targets may be NULL ...)\"",
    ("ctorch_nn_module_child", "m"): "\"valid while m lives (name may be NULL)\"",
    ("ctorch_store_set", "key"): "\"Sets key to ... (value may be NULL ...)\"",
    ("ctorch_ddp_new_params", "params"): "\"params (...) and buffers (may be NULL ...)\": buffers may be",
}

# The 13 flags a binding generated from api.json alone found unmarked: the candidates must include them.
ISSUE_35_FLAGS = [
    ("ctorch_nn_module_train", "mode"), ("ctorch_nn_module_is_training", "out"),
    ("ctorch_nn_module_named_parameters", "recurse"), ("ctorch_nn_module_named_buffers", "recurse"),
    ("ctorch_nn_module_load_state_dict", "strict"), ("ctorch_nn_module_register_buffer", "persistent"),
    ("ctorch_nn_module_num_parameters", "only_trainable"), ("ctorch_clip_grad_norm_", "error_if_nonfinite"),
    ("ctorch_data_loader_set_pin_memory", "pin_memory"), ("ctorch_tensor_item_bool", "out"),
    ("ctorch_autograd_ctx_needs_input_grad", "out"), ("ctorch_value_bool", "v"), ("ctorch_value_to_bool", "out"),
]

_FLAG_WORDS = re.compile(r"nonzero|\b0/1\b|\b1 (if|when)\b|\b[Ww]hether\b|\btrue\b|\bfalse\b|\(1\)|\(0\)|"
                         r"= ?[01]\b|\bon\b|\boff\b|enabl|disabl")
_FLAG_NAMES = re.compile(r"^(is|has|only|allow|use|enable|need)_|_if_|recurse|strict|persistent|pin|"
                         r"^(on|mode|v)$|_mode$|bool")


def _sentences(doc, name):
    return [s for s in re.split(r"(?<=[.;:])\s", doc) if re.search(rf"(?<![\w*]){re.escape(name)}\b", s)]


class RealHeader(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open(HEADER, encoding="utf-8") as f:
            cls.text = f.read()
        cls.h = parse_header(cls.text)
        cls.d = describe_header(cls.h)
        cls.funcs = {f["name"]: f for f in cls.d["functions"]}
        cls.decl = {f.name: f for f in cls.h.functions}

    def param(self, fname, pname):
        return next(p for p in self.funcs[fname]["params"] if p["name"] == pname)

    def test_numeric_macros_have_values(self):
        """Every #define of a number (with C's suffixes: 1u, 0x10, 64UL) has its value."""
        macros = {m["name"]: m for m in self.d["macros"]}
        found = 0
        for name, body in re.findall(r"^#\s*define\s+(\w+)[ \t]+([^\n/]+)", self.text, re.M):
            body = body.strip()
            m = re.fullmatch(r"(-?)(0[xX][0-9a-fA-F]+|\d+)[uUlL]*", body)
            if not m or name not in macros:
                continue
            found += 1
            self.assertEqual(macros[name].get("value"), int(m.group(1) + m.group(2), 0), name)
        self.assertGreater(found, 3)
        self.assertEqual(macros["CTORCH_MODULE_LOAD_ALLOW_IO"]["value"], 1)

    def boolean_candidates(self):
        """int parameters the header words as flags (or names as one)."""
        out = set()
        for f in self.h.functions:
            for p in f.params:
                if not p.type or p.type.base != "int" or p.type.pointers > 1:
                    continue
                said = any(_FLAG_WORDS.search(s) for s in _sentences(f.doc, p.name))
                if p.type.pointers == 1 and p.name == "out" and _FLAG_WORDS.search(f.doc):
                    said = True
                if said or _FLAG_NAMES.search(p.name) or f.name.endswith("_bool"):
                    out.add((f.name, p.name))
        return out

    def test_booleans_marked(self):
        cands = self.boolean_candidates()
        for k in ISSUE_35_FLAGS:
            self.assertIn(k, cands, "the rule no longer finds a flag it found before")
        missing = sorted(k for k in cands - set(NOT_BOOLEAN) if not self.param(*k).get("boolean"))
        self.assertEqual(missing, [], "int parameters the header words as booleans, not marked boolean")
        for k in NOT_BOOLEAN:
            self.assertFalse(self.param(*k).get("boolean"), k)

    def test_nullable_pointers_marked(self):
        """An input pointer whose sentence says NULL is accepted ("p (NULL = the
        defaults", "p: NULL = ...", "p may be NULL") is nullable."""
        said = re.compile(r"(?<![\w*]){n}\b(\s*\(|:)?\s*(may be |or |can be )?NULL\b(?! entr| element)|"
                          r"\b{n}\b[^.;]*\bmay be NULL|\b{n}\b[^.;]*\bNULL =")
        missing = []
        for f in self.h.functions:
            for p in f.params:
                d = self.param(f.name, p.name)
                if d["direction"] != "in" or not (d["pointer"] or d["type"]["kind"] in ("handle", "string")):
                    continue
                pat = re.compile(said.pattern.replace("{n}", re.escape(p.name)))
                if any(pat.search(s) for s in _sentences(f.doc, p.name)) and not d["nullable"] and \
                        (f.name, p.name) not in NOT_NULLABLE:
                    missing.append((f.name, p.name))
        self.assertEqual(missing, [], "pointers the header says may be NULL, not nullable")
        self.assertTrue(self.param("ctorch_lr_scheduler_new", "options")["nullable"])

    def test_null_results_marked(self):
        """A handle output the doc says is NULL on success ("*out NULL if it is
        None", "NULL for an undefined tensor") is flagged null_result."""
        handles = {x["name"] for x in self.d["handles"]}
        missing = []
        for f in self.h.functions:
            outs = [p for p in self.funcs[f.name]["params"] if p["direction"] == "out"
                    and p["type"].get("name") in handles and p["pointer"] == 1]
            for s in re.split(r"(?<=[.;])\s", f.doc):
                if "NULL" not in s or re.search(r"on failure|\(and \*\w+ = NULL\)|may be NULL|NULL =|non-NULL", s):
                    continue
                for p in outs:
                    named = re.search(rf"\*{re.escape(p['name'])}\b", s) or (p is outs[0] and re.search(
                        r"\bNULL (if|when|for)\b", s))
                    if named and not p.get("null_result"):
                        missing.append((f.name, p["name"], s))
        self.assertEqual(missing, [])
        self.assertTrue(self.param("ctorch_nn_module_tensor", "out")["null_result"])

    def test_int_enums_marked(self):
        """An int parameter whose sentence names an enum it holds has `enum`."""
        enums = {e["name"] for e in self.d["enums"]}
        missing = []
        for f in self.h.functions:
            for p in self.funcs[f.name]["params"]:
                if p["type"]["kind"] != "int" or p["pointer"]:
                    continue
                for s in _sentences(f.doc, p["name"]):
                    named = [e for e in re.findall(r"\bctorch_\w+", s) if e in enums]
                    if named and re.search(rf"\b{p['name']}\b[^.;]*(<|=|a |an )", s) and p.get("enum") not in named:
                        missing.append((f.name, p["name"], named))
        self.assertEqual(missing, [])
        p = self.param("ctorch_nn_module_to", "dtype")
        self.assertEqual((p.get("enum"), p.get("negative")), ("ctorch_dtype", "keep"))

    def test_output_arrays_sized(self):
        for f in self.d["functions"]:
            for p in f["params"]:
                if p["direction"] == "out" and "array" in p:
                    self.assertIn("buffer_size", p, f"{f['name']}.{p['name']}")
        self.assertEqual(self.param("ctorch_autograd_function_apply", "outputs")["buffer_size"]["rule"], "chosen")

    def test_shared_lengths_say_which_arrays_give_them(self):
        for f in self.d["functions"]:
            by = {p["name"]: p for p in f["params"]}
            for p in f["params"]:
                lo = p.get("length_of", [])
                if p.get("role") == "length" and len(lo) > 1 and any(by[x]["nullable"] for x in lo):
                    self.assertEqual(p.get("length_from"), [x for x in lo if not by[x]["nullable"]], f["name"])
        self.assertEqual(self.param("ctorch_summary_writer_add_hparams", "n")["length_from"], ["names"])


class Catalogue(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        nn_dir = os.path.join(ROOT, "shim", "nn")
        cls.entries = nn_sig.catalogue(nn_dir)
        cls.conv = nn_sig.conventions(nn_dir, cls.entries)
        with open(HEADER, encoding="utf-8") as f:
            cls.header = f.read()

    def test_every_module_argument_has_its_kind(self):
        margs = {(m["kind"], m["arg"]): m["module_kind"] for m in self.conv["module_args"]}
        kinds = {e["kind"] for e in self.entries}
        for e in self.entries:
            for a in e["init"]:
                if a["type"] == "Module":
                    self.assertIn((e["kind"], a["name"]), margs)
        self.assertEqual(margs[("TransformerEncoder", "encoder_layer")], "TransformerEncoderLayer")
        self.assertEqual(margs[("TransformerDecoder", "decoder_layer")], "TransformerDecoderLayer")
        self.assertIsNone(margs[("TransformerEncoder", "norm")])
        for k in margs.values():
            self.assertTrue(k is None or k in kinds, k)

    def test_every_catalogue_type_has_a_spelling(self):
        values = self.conv["values"]
        for e in self.entries:
            for a in e["init"]:
                for t in a["type"].split("|"):
                    t = re.sub(r"\[\d+\]", "[N]", t)
                    self.assertIn(t, values, f"{e['kind']}.{a['name']}: no spelling for {t}")
        self.assertIn("float32", values["ScalarType"]["names"])
        self.assertIn("float64", values["ScalarType"]["names"])

    def test_containers(self):
        kinds = {e["kind"]: e for e in self.entries}
        got = {c["kind"]: c["add"] for c in self.conv["containers"]}
        self.assertEqual(got, {"Sequential": "ctorch_nn_module_append", "ModuleList": "ctorch_nn_module_append",
                               "ModuleDict": "ctorch_nn_module_register_module"})
        for k, fn in got.items():
            self.assertEqual(kinds[k]["init"], [], k)  # filled after construction, not by arguments
            self.assertIn(fn + "(", self.header)
        # the header says so too, where the function is declared
        self.assertRegex(self.header, r"Appends `child` to a Sequential or ModuleList")
        self.assertRegex(self.header, r"ModuleDict entries are added")

    def test_absent_outputs(self):
        absent = {(a["kind"], a["output"]): a["present_if"] for a in self.conv["outputs"]["absent"]}
        self.assertEqual(absent.get(("MaxPool2d", "indices")), "return_indices")
        for e in self.entries:
            flags = {a["name"] for a in e["init"] if a["type"] == "bool"}
            for o in e["forward"]["outputs"]:
                if o["optional"] and "return_indices" in flags:
                    self.assertIn((e["kind"], o["name"]), absent)
        # MultiheadAttention's weights are NULL (None), not absent
        self.assertNotIn(("MultiheadAttention", "attn_output_weights"), absent)


if __name__ == "__main__":
    unittest.main()


class CallableFromCOnly(unittest.TestCase):
    """Variadic and va_list functions (ctorch_nn_newf/newv): described with
    their `...`/va_list parameter and a c_only reason; one without the
    @c_only tag is refused; generate_bindings.py leaves them out of every
    binding and lists them as not wrapped."""

    def test_real_header(self):
        with open(HEADER, encoding="utf-8") as f:
            d = {x["name"]: x for x in describe_header(parse_header(f.read()))["functions"]}
        self.assertIn("variadic", d["ctorch_nn_newf"]["c_only"])
        self.assertEqual([p["type"]["kind"] for p in d["ctorch_nn_newf"]["params"]][-1], "variadic")
        self.assertEqual(d["ctorch_nn_newv"]["params"][-1]["type"]["kind"], "va_list")
        self.assertNotIn("c_only", d["ctorch_nn_new"])

    def test_untagged_is_refused(self):
        text = ("#include <stdarg.h>\ntypedef enum ctorch_status { CTORCH_OK = 0 } ctorch_status;\n"
                "/** No tag. */\nCTORCH_API ctorch_status ctorch_f(const char *fmt, ...);\n")
        with self.assertRaises(Exception) as e:
            describe_header(parse_header(text))
        self.assertIn("@c_only", str(e.exception))

    def test_bindings_leave_it_out(self):
        with open(HEADER, encoding="utf-8") as f:
            doc = describe_header(parse_header(f.read()))
        names = {f["name"] for f in doc["functions"]}
        self.assertTrue({"ctorch_nn_newf", "ctorch_nn_newv", "ctorch_nn_new"} <= names)
        from ctorch_gen.py import api as py_api
        from ctorch_gen.apimodel import load_api
        # (load_api leaves the C-only functions out, as for every binding; structs_raw is
        # describe_header's working data, not api.json's)
        src = py_api.emit_api(load_api({k: v for k, v in doc.items() if k != "structs_raw"}))
        self.assertNotIn("def nn_newf", src)
        self.assertIn("'ctorch_nn_newf': 'C only: variadic", src)
        self.assertIn("def nn_new(", src)
