"""Unit tests of the bindings' module-class emitters (node/nn.py,
go/nn.py, java/nn.py) on catalogue entries read from C++ text by nn_sig.py, and of
hplan's handling of a "filled" output array (ctorch_nn_module_forward_n)."""
import unittest

from ctorch_gen import hplan, nn_sig
from ctorch_gen.apimodel import load_api
from ctorch_gen.go import nn as go_nn
from ctorch_gen.java import nn as java_nn
from ctorch_gen.node import nn as node_nn
from tests.test_nn_sig import SRC

DTYPES = {"name": "ctorch_dtype", "values": [{"name": "CTORCH_FLOAT32", "value": 9}]}


def doc():
    kinds = [nn_sig.describe(*k) for k in nn_sig.extract_kinds(SRC, "t.cpp")]
    kinds.append(nn_sig.describe("TransformerEncoder", "encoder_layer: Module, num_layers: int", "src: Tensor -> Tensor"))
    return load_api({"nn_modules": kinds, "enums": [DTYPES]})


class Emitters(unittest.TestCase):
    def test_java_builders_take_required_arguments_and_set_the_others(self):
        files = java_nn.emit(doc())
        conv = files["Conv2d.java"]
        self.assertIn("public final class Conv2d extends ModuleBuilder {", conv)
        self.assertIn("    public Conv2d(long inChannels, long outChannels, long kernelSize) {", conv)
        self.assertIn("    public Conv2d(long inChannels, long outChannels, long[] kernelSize) {", conv)
        self.assertIn('        set("padding", Args.ints(padding));', conv)
        self.assertIn("    public Conv2d padding(String padding) {", conv)
        self.assertIn("    public Conv2d dtype(DType dtype) {", conv)
        enc = files["TransformerEncoder.java"]
        self.assertIn("    public TransformerEncoder(NnModule encoderLayer, long numLayers) {", enc)
        self.assertIn('        module("encoder_layer", encoderLayer);', enc)
        self.assertIn('"TransformerEncoder"', files["Kinds.java"])

    def test_node_classes_carry_their_catalogue_entry(self):
        js = node_nn.emit(doc())
        self.assertIn("K.Conv2d = class Conv2d extends Builtin {};", js)
        self.assertIn('"name": "padding_mode"', js)
        self.assertIn("forward(query: Tensor, key: Tensor, value: Tensor, key_padding_mask: Tensor? = None, "
                      "attn_mask: Tensor? = None; {need_weights: bool = True", js)

    def test_go_constructors_type_required_arguments_and_leave_defaults_to_nil(self):
        go = go_nn.emit(doc())
        self.assertIn("func NewConv2d(inChannels int64, outChannels int64, kernelSize []int64, "
                      "opts *Conv2dOptions) (*Module, error) {", go)
        self.assertIn("\tPadding []int64 // padding: int[2]|str = 0", go)
        self.assertIn("\tPaddingString string", go)
        self.assertIn('a.union("padding", repeat(opts.Padding), opts.PaddingString)', go)
        self.assertIn("\tDtype *ctorch.DType // dtype: ScalarType? = None", go)
        self.assertIn('\ta.add("kernel_size", repeat(kernelSize))', go)
        self.assertIn('var dtypeNames = map[ctorch.DType]string{9: "float32"}', go)
        self.assertIn('\treturn a.build("Conv2d")', go)

    def test_go_module_valued_arguments_go_by_handle(self):
        go = go_nn.emit(doc())
        self.assertIn("func NewTransformerEncoder(encoderLayer *Module, numLayers int64) (*Module, error) {", go)
        self.assertIn('\ta.module("encoder_layer", encoderLayer)', go)


def param(name, **kw):
    return dict({"name": name, "type": {"kind": "int", "name": "size_t"}, "direction": "in", "pointer": 0,
                 "ownership": "value"}, **kw)


class FilledOutputs(unittest.TestCase):
    def test_forward_n_is_wrapped_with_count_and_capacity_derived(self):
        h = {"kind": "handle", "name": "ctorch_tensor"}
        f = {"name": "ctorch_nn_module_forward_n", "origin": "header", "inline": False,
             "returns": {"kind": "status"}, "params": [
                 param("m", type={"kind": "handle", "name": "ctorch_nn_module"}, ownership="borrowed"),
                 param("outputs", type=h, pointer=1, direction="out", ownership="new", array={"length": "max_outputs"},
                       buffer_size={"unit": "elements", "rule": "filled", "count": "n_outputs", "capacity": 16}),
                 param("max_outputs", role="capacity", length_of=["outputs"]),
                 param("n_outputs", pointer=1, direction="out")]}
        d = {"functions": [f], "handles": [{"name": "ctorch_nn_module"}, {"name": "ctorch_tensor"}]}
        e = hplan.plan(load_api(d))[0]
        self.assertIsNone(e.skip)
        self.assertEqual([p.name for p in e.outs], ["outputs"])
        self.assertEqual([p.name for p in e.ins], ["m"])


if __name__ == "__main__":
    unittest.main()
