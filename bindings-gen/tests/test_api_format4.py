"""api.json format 4: what a generator written from
docs/api-json.md alone met in format 3, each checked against the C compiler
or the real header and version scripts:

- a function pointer's `c_type` held the parameter's name
  (`void (*free_user_data)(void *arg0)`): now a C type name with no name
  inside, the declaration in `c_decl`; every hand-written function of the
  real header, redeclared from api.json by the documented rule, compiles
  against ctorch.h (a redeclaration with another type is a C error);
- the ABI hash still covers format 3's spelling, so it did not change;
- the symbol version (`CTORCH_0`) comes from the linker's version script;
- every `flags` parameter names its constants."""
import os
import re
import subprocess
import tempfile
import unittest

from ctorch_gen import emit_api
from ctorch_gen.api_header import DescribeError, describe_header
from ctorch_gen.cheader import parse_header

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HEADER = os.path.join(ROOT, "include", "ctorch.h")
CC = os.environ.get("CC", "cc")


def declaration(p: dict) -> str:
    """A parameter's declaration by docs/api-json.md's rule."""
    if p["type"]["kind"] == "variadic":
        return "..."
    return p.get("c_decl") or (p["c_type"] + ("" if p["c_type"].endswith("*") else " ") + p["name"])


def real_header():
    with open(HEADER, encoding="utf-8") as f:
        text = f.read()
    return text, parse_header(text)


class FunctionPointers(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.text, cls.h = real_header()
        cls.desc = describe_header(cls.h)
        cls.funcs = {f["name"]: f for f in cls.desc["functions"]}

    def fnptr_params(self):
        return [(f["name"], p) for f in self.desc["functions"] for p in f["params"]
                if p["type"]["kind"] == "callback" and "signature" in p["type"]]

    def test_c_type_has_no_name(self):
        found = self.fnptr_params()
        self.assertEqual(len(found), 5, [n for n, _ in found])  # the five format 4 added
        for fn, p in found:
            self.assertEqual(p["c_type"], "void (*)(void *)", fn)
            self.assertNotIn(p["name"], p["c_type"])
            self.assertTrue(p["c_decl"].startswith(f"void (*{p['name']})("), (fn, p["c_decl"]))
            self.assertNotIn("arg0", p["c_decl"])  # no invented names: the header's text
        for f in self.desc["functions"]:
            for p in f["params"]:
                if "c_decl" not in p:
                    self.assertNotRegex(p["c_type"], r"\b" + re.escape(p["name"]) + r"$", f["name"])

    def test_abi_hash_spelling_unchanged(self):
        # The hash covers format 3's c_type; these are format 3's strings.
        p = next(q for q in self.funcs["ctorch_dataset_from_callbacks"]["params"] if q["name"] == "free_user_data")
        self.assertEqual(emit_api._hashed_c_type(p), "void (*free_user_data)(void *arg0)")
        p = next(q for q in self.funcs["ctorch_tensor_from_blob"]["params"] if q["name"] == "release")
        self.assertEqual(emit_api._hashed_c_type(p), "void (*release)(void *ctx)")
        for f in self.h.functions:
            d = self.funcs[f.name]
            for hp, dp in zip(f.params, d["params"]):
                want = hp.c_text if hp.callback else hp.c_text[: -len(hp.name)].strip()
                if hp.name == "...":
                    want = "..."
                self.assertEqual(emit_api._hashed_c_type(dp), want, (f.name, hp.name))

    def test_redeclared_from_api_json_compiles(self):
        """Every exported hand-written function redeclared from its
        description (c_type of the return, declaration() of each parameter):
        the compiler refuses a redeclaration whose types differ from the
        header's. And c_type alone is a type name (sizeof accepts it)."""
        body = ["#include \"ctorch.h\""]
        n = 0
        for f in self.desc["functions"]:
            if f["inline"]:
                continue
            ps = ", ".join(declaration(p) for p in f["params"]) or "void"
            body.append(f"CTORCH_API {f['returns']['c_type']} {f['name']}({ps});")
            for i, p in enumerate(f["params"]):
                if p["type"]["kind"] != "variadic":
                    body.append(f"typedef char ctorch_t_{n}_{i}[sizeof({p['c_type']}) > 0 ? 1 : -1];")
            n += 1
        with tempfile.TemporaryDirectory() as d:
            # ctorch_ops.h is generated at build time; the hand-written part needs none of it.
            with open(os.path.join(d, "ctorch.h"), "w") as fh:
                fh.write(self.text.replace('#include "ctorch_ops.h"', ""))
            src = os.path.join(d, "redecl.c")
            with open(src, "w") as fh:
                fh.write("\n".join(body) + "\n")
            r = subprocess.run([CC, "-std=c99", "-fsyntax-only", "-Werror", f"-I{d}", src],
                               capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr[-3000:])
        self.assertGreater(n, 300)

    def test_fixture_unnamed_and_named(self):
        h = parse_header("typedef struct ctorch_x_s *ctorch_x;\n/** A. */\n"
                         "CTORCH_API int ctorch_x_new(ctorch_x *out, int (*cb)(void *, const char *name), "
                         "void *ctx);\n/** Frees. */\nCTORCH_API void ctorch_x_free(ctorch_x x);\n")
        p = describe_header(h)["functions"][0]["params"][1]
        self.assertEqual(p["c_type"], "int (*)(void *, const char *)")
        self.assertEqual(p["c_decl"], "int (*cb)(void *, const char *name)")


class SymbolVersion(unittest.TestCase):
    def read(self, *path):
        with open(os.path.join(ROOT, *path), encoding="utf-8") as f:
            return f.read()

    def test_version_scripts(self):
        self.assertEqual(emit_api.version_node(self.read("shim", "ctorch.map")), "CTORCH_0")
        self.assertEqual(emit_api.version_node(self.read("shim", "pybridge", "ctorch_python.map")), "CTORCH_PYTHON_0")

    def test_two_nodes_refused(self):
        with self.assertRaises(ValueError):
            emit_api.version_node("CTORCH_0 { global: ctorch_*; local: *; };\n"
                                  "CTORCH_1 { global: ctorch_new; } CTORCH_0;\n")

    def test_in_library(self):
        lib = emit_api.library_names("0.1.0", "2.15.0")
        self.assertNotIn("symbol_version", lib)  # added by build_doc from the script, never guessed


class Flags(unittest.TestCase):
    def test_real_header(self):
        desc = describe_header(real_header()[1])
        macros = {m["name"]: m for m in desc["macros"]}
        flags = {f["name"]: p for f in desc["functions"] for p in f["params"] if p["name"] == "flags"}
        self.assertEqual(sorted(flags), ["ctorch_ddp_new", "ctorch_ddp_new_params",
                                         "ctorch_module_load_ex", "ctorch_module_load_from_buffer",
                                         "ctorch_module_load_from_stream", "ctorch_nn_checkpoint",
                                         "ctorch_nn_checkpoint_sequential"])
        for fn, p in flags.items():
            fc = p["flag_constants"]
            self.assertTrue(fc["names"], fn)
            values = [macros[n]["value"] for n in fc["names"]]
            for n, v in zip(fc["names"], values):
                self.assertTrue(n.startswith(fc["prefix"]), (fn, n))
                self.assertEqual(v & (v - 1), 0, f"{n} = {v} is not one bit")
            self.assertEqual(len(set(values)), len(values), fn)
        self.assertEqual(flags["ctorch_module_load_ex"]["flag_constants"]["names"],
                         ["CTORCH_MODULE_LOAD_ALLOW_IO", "CTORCH_MODULE_LOAD_ALLOW_UNBOUNDED_LOOPS",
                          "CTORCH_MODULE_LOAD_ALLOW_CLASSES"])
        self.assertEqual(flags["ctorch_nn_checkpoint_sequential"]["flag_constants"],
                         flags["ctorch_nn_checkpoint"]["flag_constants"])
        for fn in ("ctorch_module_load_from_buffer", "ctorch_module_load_from_stream"):
            self.assertEqual(flags[fn]["flag_constants"], flags["ctorch_module_load_ex"]["flag_constants"])

    def test_unlinked_flags_fail(self):
        h = parse_header("typedef struct ctorch_x_s *ctorch_x;\n/** Loads. */\n"
                         "CTORCH_API int ctorch_x_load(ctorch_x *out, uint32_t flags);\n"
                         "/** Frees. */\nCTORCH_API void ctorch_x_free(ctorch_x x);\n")
        with self.assertRaisesRegex(DescribeError, "flags has no constants"):
            describe_header(h)


if __name__ == "__main__":
    unittest.main()
