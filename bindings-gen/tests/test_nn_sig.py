"""Unit tests of the module catalogue's reader (nn_sig.py): extracting the
CTORCH_NN_KIND strings from C++ and parsing signatures as shim/nn/args.cpp
does (the C++ side is compared with api.json by tests/python/nn_core_vs_torch.py)."""
import os
import unittest

from ctorch_gen import nn_sig

SRC = r'''
// CTORCH_NN_KIND("Commented", "x: int", "input: Tensor -> Tensor", ...)  must be skipped
/* CTORCH_NN_KIND("Block", "", "", f); */
#define CTORCH_NN_KIND(name, init, forward, make) register(name)
CTORCH_NN_KIND("Conv2d",
               "in_channels: int, out_channels: int, kernel_size: int[2], stride: int[2] = 1, "
               "padding: int[2]|str = 0, padding_mode: str = 'zeros', dtype: ScalarType? = None",
               "input: Tensor -> Tensor", [](const Args &a) { return make(a, "a, b"); });
CTORCH_NN_KIND("MultiheadAttention", "embed_dim: int, num_heads: int, dropout: float = 0.0",
               "query: Tensor, key: Tensor, value: Tensor, key_padding_mask: Tensor? = None, "
               "attn_mask: Tensor? = None; need_weights: bool = True, average_attn_weights: bool = True "
               "-> attn_output: Tensor, attn_output_weights: Tensor?",
               [](const Args &a) { return nullptr; });
'''


class Extract(unittest.TestCase):
    def test_literals_comments_and_the_define(self):
        kinds = nn_sig.extract_kinds(SRC, "t.cpp")
        self.assertEqual([k[0] for k in kinds], ["Conv2d", "MultiheadAttention"])
        self.assertIn("padding_mode: str = 'zeros'", kinds[0][1])
        self.assertTrue(kinds[0][1].endswith("dtype: ScalarType? = None"))

    def test_non_literal_is_an_error(self):
        with self.assertRaises(ValueError):
            nn_sig.extract_kinds('CTORCH_NN_KIND("X", kInit, "", f);', "t.cpp")


class Describe(unittest.TestCase):
    def test_init(self):
        _, init, fwd = nn_sig.extract_kinds(SRC)[0]
        d = nn_sig.describe("Conv2d", init, fwd)
        self.assertEqual(d["init"][0], {"name": "in_channels", "type": "int", "optional": False, "required": True})
        self.assertEqual(d["init"][4], {"name": "padding", "type": "int[2]|str", "optional": False, "required": False,
                                        "default": "0"})
        self.assertEqual(d["init"][6], {"name": "dtype", "type": "ScalarType", "optional": True, "required": False,
                                        "default": "None"})
        self.assertEqual(d["forward"]["outputs"], [{"name": "output", "type": "Tensor", "optional": False}])

    def test_forward_with_kwargs_and_outputs(self):
        _, init, fwd = nn_sig.extract_kinds(SRC)[1]
        f = nn_sig.describe("MultiheadAttention", init, fwd)["forward"]
        self.assertEqual([p["name"] for p in f["inputs"]], ["query", "key", "value", "key_padding_mask", "attn_mask"])
        self.assertEqual([p["required"] for p in f["inputs"]], [True, True, True, False, False])
        self.assertEqual([p["name"] for p in f["kwargs"]], ["need_weights", "average_attn_weights"])
        self.assertEqual(f["outputs"][1], {"name": "attn_output_weights", "type": "Tensor", "optional": True})

    def test_tuple_defaults_stay_whole(self):
        s = nn_sig.parse_sig("kernel_size: int[2] = (3, 3), eps: float = 1e-05")
        self.assertEqual([(p["name"], p["default"]) for p in s["params"]], [("kernel_size", "(3, 3)"), ("eps", "1e-05")])

    def test_empty(self):
        self.assertEqual(nn_sig.parse_sig(""), {"params": [], "outputs": []})


class Catalogue(unittest.TestCase):
    def test_the_sources(self):
        nn_dir = os.path.join(os.path.dirname(__file__), "..", "..", "shim", "nn")
        kinds = [e["kind"] for e in nn_sig.catalogue(nn_dir)]
        self.assertEqual(kinds, sorted(kinds))
        for k in ("Linear", "Sequential", "ModuleList", "ModuleDict", "ReLU"):
            self.assertIn(k, kinds)


if __name__ == "__main__":
    unittest.main()
