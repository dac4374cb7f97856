"""hplan.py, the plan the Python, Node and Go emitters share: what a typed
wrapper of a header function does with each C parameter (call_plan), which
functions are methods (Planned.receiver), which handles get a class, and
which overloads a dispatcher tests first (quick_overloads)."""
import unittest

from ctorch_gen.apimodel import Api, Function, OpArg
from ctorch_gen.hplan import call_plan, class_handles, plan, quick_overloads

from .test_apimodel import FILLED, QUERY, REPORTED

H = {"kind": "handle", "name": "ctorch_tensor"}
SIZE = {"kind": "int", "name": "size_t"}


def _p(name, direction="in", **kw):
    return dict({"name": name, "direction": direction, "type": SIZE}, **kw)


class CallPlan(unittest.TestCase):
    def test_each_parameter_has_its_role(self):
        f = Function.load({"name": "ctorch_f", "origin": "header", "params": [
            dict(FILLED), _p("max_outputs", role="capacity", length_of=["outputs"]), _p("n_outputs", "out"),
            dict(REPORTED, array={"length": "cap"}), _p("cap", role="capacity", length_of=["buf"]),
            _p("out_len", "out"),
            dict(QUERY, array={"length": "n_sizes"}), _p("n_sizes", role="capacity", length_of=["sizes"]),
            _p("xs", pointer=1, array={"length": "n"}, type={"kind": "int", "name": "int64_t"}),
            _p("ys", pointer=1, array={"length": "n"}, nullable=True, type={"kind": "int", "name": "int64_t"}),
            _p("n", role="length", length_of=["xs", "ys"], length_from="the given ones"),
            _p("m", role="length", length_of=["xs"]),
            _p("shapes", pointer=2, array={"length": "k", "element_length": "lens"}),
            _p("lens", element_lengths_of="shapes"),
            _p("t", type=H), _p("victim", type=H, ownership="freed", when="always")]})
        cp = call_plan(f)
        got = [(s.p.name, s.how) for s in cp.slots]
        self.assertEqual(got, [
            ("outputs", "filled_buffer"), ("max_outputs", "length"), ("n_outputs", "counter"),
            ("buf", "reported_buffer"), ("cap", "length"), ("out_len", "counter"),
            ("sizes", "query_buffer"), ("n_sizes", "length"),
            ("xs", "array"), ("ys", "array"), ("n", "shared_length"), ("m", "length"),
            ("shapes", "int_arrays"), ("lens", "element_lengths"), ("t", "in"), ("victim", "in")])
        by = {s.p.name: s for s in cp.slots}
        self.assertIs(by["max_outputs"].buffer, by["outputs"])  # a capacity takes its buffer's size
        self.assertIs(by["cap"].buffer, by["buf"])
        self.assertIsNone(by["m"].buffer)  # ... else the array's length (length_of[0])
        self.assertEqual(by["n_outputs"].counts.name, "outputs")  # Go declares a filled count with its array
        self.assertEqual(by["out_len"].counts.name, "buf")
        self.assertIs(cp.reported, by["buf"])
        self.assertTrue(cp.freed_always)

    def test_arrays_sharing_a_length_are_checked(self):
        # names and tensors share n, both required (ctorch_save_dict): the wrapper takes
        # a shared length (checked to agree), not the first array's; an array of arrays'
        # element lengths (lens, filled by the binding) is no array a caller passes.
        s = {"kind": "string", "name": "char"}
        f = Function.load({"name": "ctorch_save_dict", "origin": "header", "params": [
            _p("names", pointer=2, array={"length": "n"}, type=s),
            _p("tensors", pointer=1, array={"length": "n"}, type=H),
            _p("n", role="length", length_of=["names", "tensors"]),
            _p("shapes", pointer=2, array={"length": "k", "element_length": "lens"}),
            _p("lens", pointer=1, array={"length": "k"}, element_lengths_of="shapes"),
            _p("k", role="length", length_of=["shapes", "lens"])]})
        by = {s.p.name: s.how for s in call_plan(f).slots}
        self.assertEqual(by["n"], "shared_length")
        self.assertEqual(f.shared_length_arrays(f.params[2]), ["names", "tensors"])
        self.assertEqual(by["k"], "length")
        self.assertEqual(f.shared_length_arrays(f.params[5]), ["shapes"])

    def test_a_length_before_its_buffer_is_an_arrays(self):
        # C order decides (the wrappers write the arguments in one pass).
        f = Function.load({"name": "ctorch_g", "params": [
            _p("cap", role="capacity", length_of=["buf"]), dict(REPORTED, array={"length": "cap"}),
            _p("out_len", "out")]})
        cp = call_plan(f)
        self.assertIsNone(cp.slots[0].buffer)
        self.assertFalse(cp.freed_always)


class Plan(unittest.TestCase):
    DOC = {"handles": [{"name": "ctorch_tensor"}, {"name": "ctorch_optimizer", "free": "ctorch_optimizer_free"},
                       {"name": "ctorch_tensor_list",
                        "elements": {"handle": "ctorch_tensor", "size": "ctorch_tensor_list_size",
                                     "get": "ctorch_tensor_list_get"}}],
           "functions": [
               {"name": "ctorch_optimizer_step", "origin": "header", "returns": {"kind": "status"},
                "params": [_p("opt", type={"kind": "handle", "name": "ctorch_optimizer"})]},
               {"name": "ctorch_tensor_list_size", "origin": "header", "returns": {"kind": "status"},
                "params": [_p("n", "out"), _p("l", type={"kind": "handle", "name": "ctorch_tensor_list"})]},
               {"name": "ctorch_optimizer_lr", "origin": "header", "returns": {"kind": "status"},
                "params": [_p("lr", "out"), _p("opt", type={"kind": "handle", "name": "ctorch_optimizer"})]}]}

    def test_receiver_and_classes(self):
        api = Api.load(self.DOC)
        es = {e.name: e for e in plan(api)}
        self.assertTrue(es["ctorch_optimizer_step"].receiver)
        self.assertEqual(es["ctorch_optimizer_step"].method, "step")
        self.assertFalse(es["ctorch_tensor_list_size"].receiver)  # a list handle is the language's list
        self.assertTrue(es["ctorch_optimizer_lr"].receiver)  # the receiver is the first parameter passed
        self.assertEqual([h.name for h in class_handles(api)], ["ctorch_optimizer"])

    def test_quick_overloads(self):
        def f(name, *args):
            return Function.load({"name": name, "op": {"args": list(args)}})
        t = {"name": "self", "base": "Tensor"}
        ms = [f("ctorch_a", t, {"name": "other", "base": "Tensor"}),
              f("ctorch_b", t, {"name": "dims", "base": "int", "list": True}),  # a list: no quick test
              f("ctorch_c", t, {"name": "k", "base": "int", "kwarg_only": True}),  # a required keyword
              f("ctorch_d", t, {"name": "s", "base": "Scalar", "default": {"kind": "int", "value": 1}}),
              f("ctorch_e", t, {"name": "x", "base": "float"}), f("ctorch_f", t, {"name": "y", "base": "bool"})]
        got = quick_overloads(ms, {"Tensor", "Scalar", "int", "float", "bool"})
        self.assertEqual([(g.name, [a.name for a in req], kinds) for g, req, kinds in got],
                         [("ctorch_a", ["self", "other"], ["Tensor", "Tensor"]), ("ctorch_d", ["self"], ["Tensor"]),
                          ("ctorch_e", ["self", "x"], ["Tensor", "float"])])  # the first three only
        self.assertIsInstance(got[0][1][0], OpArg)
        self.assertEqual(quick_overloads(ms, {"Scalar"}), [])  # a type the language has no test for


if __name__ == "__main__":
    unittest.main()
