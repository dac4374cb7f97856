"""The Go binding's operator trampolines (ctorch_gen/go/tramp.py): the Go call
passes each argument in its class's slot, the C wrapper hands them back to
the operator in its own order, and the C side compiles."""
import os
import shutil
import subprocess
import tempfile
import unittest

from ctorch_gen.apimodel import Function
from ctorch_gen.go.tramp import Trampolines, c_class


def fn(name, *c_types):
    return Function.load({"name": name, "params": [{"name": f"a{k}", "c_type": t} for k, t in enumerate(c_types)]})


class Trampoline(unittest.TestCase):
    def test_classes(self):
        self.assertEqual([c_class(t) for t in ("ctorch_tensor *", "ctorch_tensor", "const int64_t *", "size_t", "int",
                                               "ctorch_dtype", "double", "ctorch_scalar", "ctorch_device",
                                               "const char *const *")], list("PPPLLLDSVP"))
        with self.assertRaises(ValueError):
            c_class("float")

    def test_arguments_reordered_by_class_and_back(self):
        t = Trampolines()
        f = fn("ctorch_x", "ctorch_tensor *", "int64_t", "ctorch_tensor", "ctorch_scalar", "double")
        call = t.call(f, ["&r0", "C.int64_t(dim)", "self.handle()", "alpha.c()", "C.double(eps)"])
        self.assertEqual(call, "C.ctgo_p2l1d1s1(0, unsafe.Pointer(&r0), unsafe.Pointer(self.handle()), "
                               "C.int64_t(dim), C.double(eps), alpha.c())")
        g = fn("ctorch_y", "ctorch_tensor", "ctorch_tensor *", "ctorch_scalar", "int64_t", "double")
        self.assertTrue(t.call(g, ["a", "b", "c", "d", "e"]).startswith("C.ctgo_p2l1d1s1(1, "))
        src = t.source()
        self.assertIn("static ctorch_status ctgo_p2l1d1s1_ctorch_x(void *p0, void *p1, int64_t l0, double d0, "
                      "ctorch_scalar s0) { return ctorch_x(p0, l0, p1, s0, d0); }", src)
        self.assertIn("{ return ctorch_y(p0, p1, s0, l0, d0); }", src)
        self.assertIn("ctorch_status ctgo_p2l1d1s1(int op, void *p0, void *p1, int64_t l0, double d0, "
                      "ctorch_scalar s0);", t.header())

    @unittest.skipUnless(shutil.which("cc"), "no C compiler")
    def test_c_side_compiles_and_refuses_a_wrong_class(self):
        here = os.path.dirname(os.path.abspath(__file__))
        inc = os.path.join(here, "..", "..", "include")
        decls = ("ctorch_status ctorch_x(ctorch_tensor *r, int64_t d, ctorch_tensor s, ctorch_scalar a, double e);\n"
                 "ctorch_status ctorch_z(ctorch_tensor *r, const int64_t *v, size_t n);\n")
        for bad in (False, True):
            t = Trampolines()
            t.call(fn("ctorch_x", "ctorch_tensor *", "int64_t", "ctorch_tensor", "ctorch_scalar", "double"),
                   list("abcde"))
            # bad: the emitter told n is a pointer (a wrong class): the wrapper must not compile.
            t.call(fn("ctorch_z", "ctorch_tensor *", "const int64_t *", "ctorch_tensor" if bad else "size_t"),
                   list("abc"))
            with tempfile.TemporaryDirectory() as d:
                # The real header's types; its generated operator header stands in with two declarations.
                with open(os.path.join(d, "ctorch_ops.h"), "w") as fh:
                    fh.write(decls)
                for name, text in (("ops_tramp_gen.h", t.header()), ("ops_tramp_gen.c", t.source())):
                    with open(os.path.join(d, name), "w") as fh:
                        fh.write(text)
                r = subprocess.run(["cc", "-fsyntax-only", "-I", inc, "-I", d, os.path.join(d, "ops_tramp_gen.c")],
                                   capture_output=True, text=True)
                self.assertEqual(r.returncode != 0, bad, r.stderr)


if __name__ == "__main__":
    unittest.main()
