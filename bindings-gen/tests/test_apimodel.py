"""The typed model of api.json (ctorch_gen/apimodel.py) that every binding
emitter reads: it reads what api.json holds, refuses what it does not know,
gives back api.json's text of an object, and derives the facts the emitters
share (unsafe, buffer counters, list handles, the C-only functions)."""
import json
import unittest

from ctorch_gen.apimodel import Api, Function, Param, QueryCall, load_api

FILLED = {"name": "outputs", "direction": "out", "pointer": 1, "type": {"kind": "handle", "name": "ctorch_tensor"},
          "array": {"length": "max_outputs"},
          "buffer_size": {"unit": "elements", "rule": "filled", "count": "n_outputs", "capacity": 16}}
REPORTED = {"name": "buf", "direction": "out", "pointer": 1, "type": {"kind": "string", "name": "char"},
            "buffer_size": {"rule": "reported", "length": "out_len", "plus": 1, "unit": "bytes"}}
QUERY = {"name": "sizes", "direction": "out", "pointer": 1, "type": {"kind": "int", "name": "int64_t"},
         "buffer_size": {"rule": "query", "unit": "elements", "product": [
             {"call": "ctorch_tensor_dim", "args": {"t": "t"}},
             {"call": "ctorch_x", "args": {"dtype": {"call": "ctorch_tensor_dtype", "args": {"t": "t"}}}}]}}


class Model(unittest.TestCase):
    def test_reads_types_and_round_trips(self):
        d = {"functions": [{"name": "ctorch_f", "origin": "header", "params": [FILLED, REPORTED, QUERY]}],
             "macros": [{"name": "CTORCH_X", "bits": {"arg": "st", "shift": 8, "mask": 255, "as": "int"}}]}
        api = Api.load(d)
        f = api.functions[0]
        self.assertIsInstance(f, Function)
        self.assertIsInstance(f.params[0], Param)
        self.assertEqual(f.params[0].buffer_rule, "filled")
        self.assertEqual(api.macros[0].bits.as_, "int")  # a Python keyword as api.json's key
        q = f.params[2].buffer_size.product
        self.assertIsInstance(q[1].args["dtype"], QueryCall)  # a nested query
        self.assertEqual(q[0].args["t"], "t")                  # a parameter's name
        self.assertEqual(json.dumps(api.to_json()), json.dumps(d))  # same keys, same order
        self.assertFalse(f.params[0].has("null_result"))

    def test_unknown_key_is_an_error(self):
        with self.assertRaises(ValueError) as e:
            Api.load({"functions": [{"name": "ctorch_f", "params": [{"name": "x", "colour": "red"}]}]})
        self.assertIn("colour", str(e.exception))

    def test_buffer_counters_and_unsafe(self):
        f = Function.load({"name": "ctorch_f", "params": [FILLED, REPORTED, QUERY]})
        self.assertEqual(f.buffer_counters, {"n_outputs", "out_len"})
        self.assertFalse(f.unsafe)
        g = Function.load({"name": "ctorch__x", "ops_json": {"unsafe": True, "unsafe_reason": "SIGSEGV"}})
        self.assertTrue(g.unsafe)

    def test_bindings_leave_c_only_functions_out(self):
        d = {"functions": [{"name": "ctorch_a"}, {"name": "ctorch_b", "c_only": "variadic"}],
             "handles": [{"name": "ctorch_l", "elements": {"handle": "ctorch_tensor", "size": "s", "get": "g"}},
                         {"name": "ctorch_d", "elements": {"handle": "ctorch_tensor", "size": "s", "get": "g",
                                                           "key": "k"}}]}
        api = load_api(d)
        self.assertEqual([f.name for f in api.functions], ["ctorch_a"])
        self.assertEqual(api.c_only_functions, {"ctorch_b": "C only: variadic"})
        self.assertEqual(list(api.list_handles), ["ctorch_l"])  # a dict (with a key) is not a list
        self.assertEqual(len(load_api(d, bindings=False).functions), 2)


if __name__ == "__main__":
    unittest.main()
