"""Unit tests of the schema parser (1.13 and 2.x vocabulary)."""
import os
import unittest

from ctorch_gen.model import (Annotation, BaseType, ListType, OptionalType, SchemaError,
                              parse_schema, parse_type, split_top_level, type_to_str)


class ParseType(unittest.TestCase):
    def test_base(self):
        self.assertEqual(parse_type("Tensor"), (BaseType("Tensor"), None))
        self.assertEqual(parse_type("SymInt"), (BaseType("SymInt"), None))
        self.assertEqual(parse_type("DeviceIndex"), (BaseType("DeviceIndex"), None))

    def test_optional_and_lists(self):
        self.assertEqual(parse_type("int?")[0], OptionalType(BaseType("int")))
        self.assertEqual(parse_type("SymInt[]")[0], ListType(BaseType("SymInt")))
        self.assertEqual(parse_type("int[2]")[0], ListType(BaseType("int"), 2))
        # int[1]? is an optional list of size 1, Tensor?[] a list of optionals.
        self.assertEqual(parse_type("int[1]?")[0], OptionalType(ListType(BaseType("int"), 1)))
        self.assertEqual(parse_type("Tensor?[]")[0], ListType(OptionalType(BaseType("Tensor"))))
        self.assertEqual(parse_type("Scalar[]?")[0], OptionalType(ListType(BaseType("Scalar"))))
        self.assertEqual(parse_type("Device?")[0], OptionalType(BaseType("Device")))

    def test_annotations(self):
        t, a = parse_type("Tensor(a!)")
        self.assertEqual(t, BaseType("Tensor"))
        self.assertEqual(a, Annotation(("a",), True))
        t, a = parse_type("Tensor(a)[]")
        self.assertEqual(t, ListType(BaseType("Tensor")))
        self.assertFalse(a.is_write)
        t, a = parse_type("Tensor(a -> *)")
        self.assertEqual(a.alias_set_after, ("*",))
        t, a = parse_type("Tensor(b|a!)?")
        self.assertEqual(a.alias_set, ("b", "a"))
        self.assertTrue(a.is_write)
        self.assertEqual(t, OptionalType(BaseType("Tensor")))

    def test_round_trip(self):
        for s in ["Tensor?[]", "int[1]?", "SymInt[]", "Scalar[]?", "bool[3]", "Tensor(a!)[]"]:
            t, a = parse_type(s)
            self.assertEqual(type_to_str(t, a), s)

    def test_malformed(self):
        for bad in ["", "[]", "int[x]", "Tensor(a!", "int?!"]:
            with self.assertRaises(SchemaError, msg=bad):
                parse_type(bad)


class ParseSchema(unittest.TestCase):
    def test_add_tensor(self):
        f = parse_schema("add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor")
        self.assertEqual((f.name, f.overload), ("add", "Tensor"))
        self.assertEqual([a.name for a in f.args], ["self", "other", "alpha"])
        self.assertEqual([a.kwarg_only for a in f.args], [False, False, True])
        self.assertEqual(f.args[2].default, "1")
        self.assertEqual(f.args[2].type, BaseType("Scalar"))
        self.assertEqual(len(f.returns), 1)
        self.assertEqual(f.returns[0].type, BaseType("Tensor"))
        self.assertEqual(f.unambiguous_name, "add_Tensor")

    def test_no_overload_and_inplace(self):
        f = parse_schema("relu_(Tensor(a!) self) -> Tensor(a!)")
        self.assertEqual((f.name, f.overload), ("relu_", ""))
        self.assertTrue(f.args[0].is_write)
        self.assertTrue(f.returns[0].is_write)

    def test_out_variant_named_returns(self):
        f = parse_schema("max.dim_max(Tensor self, int dim, bool keepdim=False, *, Tensor(a!) max, "
                         "Tensor(b!) max_values) -> (Tensor(a!) values, Tensor(b!) indices)")
        self.assertEqual([r.name for r in f.returns], ["values", "indices"])
        self.assertEqual([r.annotation.alias_set for r in f.returns], [("a",), ("b",)])
        self.assertEqual([a.kwarg_only for a in f.args], [False, False, False, True, True])
        self.assertEqual(f.args[2].default, "False")

    def test_defaults_with_brackets_and_strings(self):
        f = parse_schema('foo.bar(Tensor self, int[2] k=[1, 2], str mode="a,b", float? x=None, '
                         "SymInt[] s=[], int[1]? d=None, *, ScalarType? dtype=None) -> ()")
        self.assertEqual([a.default for a in f.args], [None, "[1, 2]", '"a,b"', "None", "[]", "None", "None"])
        self.assertEqual(f.returns, [])
        self.assertEqual(f.args[4].type, ListType(BaseType("SymInt")))

    def test_2x_vocabulary(self):
        f = parse_schema("_foo.x(Tensor?[] indices, Scalar[]? values, Device? device=None, "
                         "DeviceIndex idx=-1, SymInt? n=None, bool[3] mask) -> (Tensor, Tensor[])")
        types = [type_to_str(a.type) for a in f.args]
        self.assertEqual(types, ["Tensor?[]", "Scalar[]?", "Device?", "DeviceIndex", "SymInt?", "bool[3]"])
        self.assertEqual([type_to_str(r.type) for r in f.returns], ["Tensor", "Tensor[]"])

    def test_unknown_types_parse(self):
        f = parse_schema("weird(Frobnicator f, Tensor x) -> Gizmo")
        self.assertEqual(f.args[0].type, BaseType("Frobnicator"))
        self.assertEqual(f.returns[0].type, BaseType("Gizmo"))

    def test_bad_schemas(self):
        for bad in ["add(Tensor self -> Tensor", "add(Tensor self)", "add(Tensor self, Tensor self) -> Tensor",
                    "(Tensor x) -> Tensor", "f(Tensor) -> Tensor", "f(*, *, int a) -> ()"]:
            with self.assertRaises(SchemaError, msg=bad):
                parse_schema(bad)

    def test_split_top_level(self):
        self.assertEqual(split_top_level("a=[1,2], b='x,y', c=(1,2)"), ["a=[1,2]", "b='x,y'", "c=(1,2)"])


def installed_yaml():
    """The yaml the build uses (ctest passes it), else the installed torchgen's."""
    path = os.environ.get("CTORCH_NATIVE_FUNCTIONS_YAML")
    if not path:
        import torchgen
        path = os.path.join(os.path.dirname(torchgen.__file__), "packaged", "ATen", "native",
                            "native_functions.yaml")
    return path


class InstalledYaml(unittest.TestCase):
    def test_every_schema_parses(self):
        from ctorch_gen.model import load_yaml
        entries = load_yaml(installed_yaml())
        self.assertGreater(len(entries), 2000)
        for e in entries:
            f = parse_schema(e["func"])
            self.assertTrue(f.name)


if __name__ == "__main__":
    unittest.main()
