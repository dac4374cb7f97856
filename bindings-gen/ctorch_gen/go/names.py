"""Go binding: names and type mapping shared by its emitters (ops, hfuncs,
opts, nn): Go identifiers for C and schema names, the Go type of a schema
argument, the Go names of the enums. Imports none of the emitters."""
from __future__ import annotations

from ..apimodel import Function, Op, OpArg


# The module path (bindings-gen/go/go.mod says the same; generate() checks):
# Go has no version field, a release is the tag v<ctorch version>
# (docs/bindings-languages.md).
GO_MODULE = "github.com/ctorch/ctorch-go"


GO_KEYWORDS = set("""break case chan const continue default defer else fallthrough for func go goto if import
interface map package range return select struct switch type var""".split())


# Identifiers the generated bodies use; arguments with these names are renamed.
GO_LOCALS = {"st", "err", "r0", "r1", "r2", "r3", "r4", "r5", "unsafe", "runtime", "C"}


def camel(s: str) -> str:
    return "".join(p[:1].upper() + p[1:] for p in s.split("_") if p)


def go_func_name(op: Op) -> str:
    """ctorch_add_Tensor -> Add_Tensor, ctorch_add__Tensor -> Add__Tensor,
    ctorch__softmax -> X_softmax-style: leading underscores become an X."""
    n = op.name
    base = camel(n)
    if n.startswith("_"):
        base = "X" + base
    if n.endswith("_") and not n.endswith("__"):
        base += "_"
    if n.startswith("__") and n.endswith("__"):
        base = "Dunder" + camel(n.strip("_"))
    name = base + ("_" + op.overload if op.overload else "")
    return name + "Op" if name in RUNTIME_NAMES else name


def go_op_name(f: Function) -> str:
    """The Go name of generated function f: its operator's (go_func_name), prefixed
    Unchecked where api.json marks it unsafe (ops_json.unsafe; hplan.split_groups):
    UncheckedXRemoveBatchDim. Bad input can crash the process; the name says so."""
    name = go_func_name(f.op)
    return "Unchecked" + name if f.is_unsafe else name


# Exported names of the hand-written runtime (bindings-gen/go/*.go): a
# generated function with one of these names gets an "Op" suffix.
RUNTIME_NAMES = {"Int", "Float", "Bool", "ComplexScalar", "Ptr", "FromFloat32", "FromInt64", "NoGrad", "CPU",
                 "ABIHash", "Version", "LibtorchVersion", "FromFloat64", "FromInt32", "FromUint8", "FromBool", "FromSlice", "ToSlice",
                 "DTypeOf", "Element", "Must", "Must0", "Must2", "Catch", "NewOptimizer", "FromInt", "NewLambdaLR",
                 "NewMultiplicativeLR", "SetBusyTimeout"}


def go_arg(n: str) -> str:
    return n + "_" if n in GO_KEYWORDS or n in GO_LOCALS else n


ENUM_GO = {"ctorch_reduction": "Reduction", "ctorch_grid_sampler_interpolation": "GridSamplerInterpolation",
           "ctorch_grid_sampler_padding": "GridSamplerPadding", "ctorch_embedding_bag_mode": "EmbeddingBagMode"}


def go_type(a: OpArg) -> str:
    b, opt, lst = a.base, a.optional, a.list
    if lst:
        return {"Tensor": "[]*Tensor", "int": "[]int64", "SymInt": "[]int64", "float": "[]float64",
                "bool": "[]bool", "Scalar": "[]Scalar", "Dimname": "[]string"}[b]
    t = {"Tensor": "*Tensor", "int": "int64", "SymInt": "int64", "DeviceIndex": "int64", "float": "float64", "bool": "bool",
         "Scalar": "Scalar", "ScalarType": "DType", "Layout": "Layout", "MemoryFormat": "MemoryFormat",
         "Device": "Device", "str": "string", "Dimname": "string", "Generator": "*Generator"}[b]
    if a.enum is not None:
        t = ENUM_GO[a.enum]
    if opt and not t.startswith("*"):
        t = "*" + t
    return t


def go_enum_type(name: str) -> str:
    return _GO_ENUM_TYPES.get(name, camel(name[len("ctorch_"):]))


_GO_ENUM_TYPES = {"ctorch_dtype": "DType", "ctorch_layout": "Layout", "ctorch_memory_format": "MemoryFormat",
                  "ctorch_device_type": "DeviceType", "ctorch_status": "Status",
                  "ctorch_optimizer_kind": "OptimizerKind", **ENUM_GO}
