"""Schema types -> C parameters, C++ conversions and return handling.

Each schema argument maps to one ArgBinding: the C parameters it becomes,
the C++ statements that validate/convert it, and the expression handed to
at::_ops::<op>::call. Anything without a mapping raises Unsupported with a
precise reason; the caller records it as a skip. Nothing here depends on the
libtorch version except the C++ spellings, which go through small helpers in
shim/ops/ctorch_gen_support.h so a different libtorch only needs those helpers
adjusted.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Optional, Tuple

from .model import (Argument, BaseType, Function, ListType, OptionalType,
                    Return, Type, type_to_str)


class Unsupported(Exception):
    """This schema cannot be wrapped; str(self) is the reason."""


C_KEYWORDS = set("""
auto break case char const continue default do double else enum extern float for goto if
inline int long register restrict return short signed sizeof static struct switch typedef
union unsigned void volatile while _Bool _Complex _Imaginary alignas alignof and and_eq asm
bitand bitor bool catch class compl constexpr const_cast decltype delete dynamic_cast explicit
export false friend mutable namespace new noexcept not not_eq nullptr operator or or_eq private
protected public reinterpret_cast static_assert static_cast template this thread_local throw
true try typeid typename using virtual wchar_t xor xor_eq char16_t char32_t concept requires
""".split())


def c_ident(name: str) -> str:
    return name + "_" if name in C_KEYWORDS else name


# C priority of a check: required tensors are validated first so a NULL
# handle is reported as INVALID_ARGUMENT before any other conversion runs.
PRIO_TENSOR, PRIO_TENSOR_LIST, PRIO_OTHER = 0, 1, 2


@dataclass
class ArgBinding:
    arg: Argument
    c_params: List[Tuple[str, str]]      # [(c_type, c_name)]
    stmts: List[str]                     # C++ statements before the call
    expr: str                            # C++ expression for the call
    prio: int = PRIO_OTHER
    nullable: bool = False
    requires_tensor: bool = False        # a NULL handle must be rejected
    dummy: List[str] = field(default_factory=list)  # C values for the NULL test
    post: List[str] = field(default_factory=list)   # C++ statements after the call

    @property
    def mutable(self) -> bool:
        return self.arg.is_write


def _base(t: Type) -> Optional[str]:
    return t.name if isinstance(t, BaseType) else None


# Scalar-like optional types: C pointer to value, C++ conversion of *p.
_ENUMS = {
    # schema name: (c type, C++ conversion of a C value `v` named `n`, C dummy)
    "ScalarType": ("ctorch_dtype", "ctorch::to_scalar_type({v}, \"{n}\")", "CTORCH_FLOAT32"),
    "Layout": ("ctorch_layout", "ctorch::to_layout({v}, \"{n}\")", "CTORCH_LAYOUT_STRIDED"),
    "Device": ("ctorch_device", "ctorch::to_device({v}, \"{n}\")", "ct_cpu"),
    "MemoryFormat": ("ctorch_memory_format", "ctorch::to_memory_format({v}, \"{n}\")",
                     "CTORCH_MEMORY_CONTIGUOUS"),
    "Scalar": ("ctorch_scalar", "ctorch::to_scalar({v}, \"{n}\")", "ct_scalar0"),
}
_OPT_CPP = {
    "ScalarType": "at::ScalarType", "Layout": "at::Layout", "Device": "at::Device",
    "MemoryFormat": "at::MemoryFormat", "Scalar": "at::Scalar",
}


def bind_argument(a: Argument, n: str, len_name: str) -> ArgBinding:
    """n: the C parameter name; len_name: its length companion if a list."""
    t = a.type
    ts = type_to_str(t)
    local = f"a_{n}"

    def B(c_params, stmts, expr, **kw):
        return ArgBinding(a, c_params, stmts, expr, **kw)

    b = _base(t)
    # ---- Tensor --------------------------------------------------------
    if b == "Tensor":
        if a.kwarg_only and a.is_write:
            # An out= tensor: held, checked and re-checked (ctorch_gen::OutArg).
            return B([("ctorch_tensor", n)],
                     [f'ctorch::require_tensor({n}, "{n}");', f'ctorch_gen::OutArg {local}({n}, "{n}");'],
                     f"{local}.get()", prio=PRIO_TENSOR, requires_tensor=True, dummy=["NULL"],
                     post=[f"{local}.check();"])
        stmts = [f'ctorch::Borrowed {local}({n}, "{n}", ctorch::Borrowed::required_t{{}});']
        if a.is_write:
            # An in-place argument: its storage is written by one call at a
            # time (ctorch::WriteHold, shim/core/storage_write.h).
            stmts.append(f'ctorch::WriteHold w_{n}({local}.get(), "{n}");')
        return B([("ctorch_tensor", n)], stmts,
                 f"{local}.get()", prio=PRIO_TENSOR, requires_tensor=True, dummy=["NULL"])
    if isinstance(t, OptionalType) and _base(t.elem) == "Tensor":
        stmts = [f'ctorch_gen::BorrowedOpt {local}({n}, "{n}");']
        if a.is_write:
            stmts += [f"ctorch::WriteHold w_{n};", f'if ({local}.get()) w_{n}.hold(*{local}.get(), "{n}");']
        return B([("ctorch_tensor", n)], stmts,
                 f"{local}.get()", nullable=True, dummy=["NULL"])
    if isinstance(t, ListType) and _base(t.elem) == "Tensor":
        if t.size is not None:
            raise Unsupported(f"fixed-size tensor list '{ts}' (argument '{a.name}')")
        stmts = [f'auto {local} = ctorch::tensor_list({n}, {len_name}, "{n}");']
        if a.is_write:
            stmts.append(f'ctorch::WriteHolds w_{n}({local}, "{n}");')
        return B([("const ctorch_tensor *", n), ("size_t", len_name)], stmts,
                 f"at::TensorList({local})", prio=PRIO_TENSOR_LIST, requires_tensor=True,
                 dummy=["ct_null_tensors", "1"])
    if isinstance(t, ListType) and isinstance(t.elem, OptionalType) and _base(t.elem.elem) == "Tensor":
        return B([("const ctorch_tensor *", n), ("size_t", len_name)],
                 [f'auto {local} = ctorch::opt_tensor_list({n}, {len_name}, "{n}");'],
                 local, nullable=True, dummy=["ct_null_tensors", "1"])
    # ---- integers ------------------------------------------------------
    if b in ("int", "SymInt"):
        return B([("int64_t", n)], [], n, dummy=["0"])
    if b == "DeviceIndex":
        return B([("int64_t", n)], [], f'ctorch_gen::device_index({n}, "{n}")', dummy=["0"])
    if isinstance(t, OptionalType) and _base(t.elem) in ("int", "SymInt"):
        cpp = "int64_t" if _base(t.elem) == "int" else "c10::SymInt"
        return B([("const int64_t *", n)], [],
                 f"({n} ? c10::optional<{cpp}>({cpp}(*{n})) : c10::optional<{cpp}>())",
                 nullable=True, dummy=["NULL"])
    if isinstance(t, ListType) and _base(t.elem) in ("int", "SymInt") and (t.size or 0) >= 2:
        # int[N]: kernels index it up to N-1 unchecked; see ctorch_gen::FixedInts.
        sym = _base(t.elem) == "SymInt"
        empty_ok = "true" if a.default == "[]" else "false"
        return B([("const int64_t *", n), ("size_t", len_name)],
                 [f'ctorch_gen::FixedInts<{t.size}> {local}({n}, {len_name}, "{n}", {empty_ok});'],
                 f"{local}.{'sym_ref' if sym else 'ref'}()", dummy=["ct_zeros_i64", str(t.size)])
    if isinstance(t, ListType) and _base(t.elem) in ("int", "SymInt"):
        sym = _base(t.elem) == "SymInt"
        return B([("const int64_t *", n), ("size_t", len_name)],
                 [f'ctorch::require_list({n}, {len_name}, "{n}");'],
                 f"ctorch_gen::{'sym_' if sym else ''}int_list({n}, {len_name})",
                 dummy=["ct_zeros_i64", str(t.size or 1)])
    if isinstance(t, OptionalType) and isinstance(t.elem, ListType) and _base(t.elem.elem) in ("int", "SymInt"):
        sym = _base(t.elem.elem) == "SymInt"
        return B([("const int64_t *", n), ("size_t", len_name)], [],
                 f"ctorch_gen::opt_{'sym_' if sym else ''}int_list({n}, {len_name})",
                 nullable=True, dummy=["NULL", "0"])
    # ---- floats --------------------------------------------------------
    if b == "float":
        return B([("double", n)], [], n, dummy=["0.0"])
    if isinstance(t, OptionalType) and _base(t.elem) == "float":
        return B([("const double *", n)], [],
                 f"({n} ? c10::optional<double>(*{n}) : c10::optional<double>())",
                 nullable=True, dummy=["NULL"])
    if isinstance(t, ListType) and _base(t.elem) == "float":
        return B([("const double *", n), ("size_t", len_name)],
                 [f'ctorch::require_list({n}, {len_name}, "{n}");'],
                 f"ctorch_gen::double_list({n}, {len_name})", dummy=["ct_zeros_f64", str(t.size or 1)])
    if isinstance(t, OptionalType) and isinstance(t.elem, ListType) and _base(t.elem.elem) == "float":
        return B([("const double *", n), ("size_t", len_name)], [],
                 f"ctorch_gen::opt_double_list({n}, {len_name})", nullable=True, dummy=["NULL", "0"])
    # ---- bools ---------------------------------------------------------
    if b == "bool":
        return B([("int", n)], [], f"({n} != 0)", dummy=["0"])
    if isinstance(t, OptionalType) and _base(t.elem) == "bool":
        return B([("const int *", n)], [],
                 f"({n} ? c10::optional<bool>(*{n} != 0) : c10::optional<bool>())",
                 nullable=True, dummy=["NULL"])
    if isinstance(t, ListType) and _base(t.elem) == "bool":
        if t.size is None:
            raise Unsupported(f"unsized bool list '{ts}' (argument '{a.name}')")
        return B([("const int *", n), ("size_t", len_name)],
                 [f'auto {local} = ctorch_gen::bool_array<{t.size}>({n}, {len_name}, "{n}");'],
                 local, dummy=["ct_zeros_int", str(t.size)])
    # ---- enums and Scalar ----------------------------------------------
    if b in _ENUMS:
        ct, conv, dummy = _ENUMS[b]
        return B([(ct, n)], [], conv.format(v=n, n=n), dummy=[dummy])
    if isinstance(t, OptionalType) and _base(t.elem) in _ENUMS:
        eb = _base(t.elem)
        ct, conv, _ = _ENUMS[eb]
        cpp = _OPT_CPP[eb]
        return B([(f"const {ct} *", n)], [],
                 f"({n} ? c10::optional<{cpp}>({conv.format(v='*' + n, n=n)}) : c10::optional<{cpp}>())",
                 nullable=True, dummy=["NULL"])
    if isinstance(t, ListType) and _base(t.elem) == "Scalar":
        return B([("const ctorch_scalar *", n), ("size_t", len_name)],
                 [f'auto {local} = ctorch_gen::scalar_list({n}, {len_name}, "{n}");'],
                 f"at::ArrayRef<at::Scalar>({local})", dummy=["&ct_scalar0", "1"])
    if isinstance(t, OptionalType) and isinstance(t.elem, ListType) and _base(t.elem.elem) == "Scalar":
        return B([("const ctorch_scalar *", n), ("size_t", len_name)],
                 [f'auto {local} = ctorch_gen::scalar_list({n}, {len_name}, "{n}");'],
                 f"({n} ? c10::optional<at::ArrayRef<at::Scalar>>(at::ArrayRef<at::Scalar>({local})) "
                 f": c10::optional<at::ArrayRef<at::Scalar>>())",
                 nullable=True, dummy=["NULL", "0"])
    # ---- strings and names ---------------------------------------------
    if b == "str":
        return B([("const char *", n)], [f'ctorch_gen::require_str({n}, "{n}");'],
                 f"c10::string_view({n})", dummy=['""'])
    if isinstance(t, OptionalType) and _base(t.elem) == "str":
        return B([("const char *", n)], [],
                 f"({n} ? c10::optional<c10::string_view>(c10::string_view({n})) "
                 f": c10::optional<c10::string_view>())", nullable=True, dummy=["NULL"])
    if b == "Dimname":
        return B([("const char *", n)], [], f'ctorch_gen::dimname({n}, "{n}")', dummy=['"x"'])
    if isinstance(t, ListType) and _base(t.elem) == "Dimname":
        return B([("const char *const *", n), ("size_t", len_name)],
                 [f'auto {local} = ctorch_gen::dimname_list({n}, {len_name}, "{n}");'],
                 f"at::DimnameList({local})", dummy=["ct_dimnames", str(t.size or 1)])
    if isinstance(t, OptionalType) and isinstance(t.elem, ListType) and _base(t.elem.elem) == "Dimname":
        return B([("const char *const *", n), ("size_t", len_name)],
                 [f'auto {local} = ctorch_gen::dimname_list({n}, {len_name}, "{n}");'],
                 f"({n} ? c10::optional<at::DimnameList>(at::DimnameList({local})) "
                 f": c10::optional<at::DimnameList>())", nullable=True, dummy=["NULL", "0"])
    # ---- generators ----------------------------------------------------
    if isinstance(t, OptionalType) and _base(t.elem) == "Generator":
        return B([("ctorch_generator", n)], [], f"ctorch::opt_generator({n})",
                 nullable=True, dummy=["NULL"])
    raise Unsupported(f"unsupported argument type '{ts}' (argument '{a.name}')")


# ---- returns ---------------------------------------------------------------

@dataclass
class RetBinding:
    ret: Return
    c_type: str           # type of the out-parameter (pointer)
    c_name: str
    assign: str           # C++ statement(s) given `v` (the C++ value)
    null_init: str        # statement run before anything can fail
    list_first: bool = False


_RET = {
    # schema type: (C pointee, assignment from value v, initial value)
    "Tensor": ("ctorch_tensor", "*{o} = ctorch::give({v});", "*{o} = nullptr;"),
    "Tensor[]": ("ctorch_tensor_list", "*{o} = ctorch::give_list({v});", "*{o} = nullptr;"),
    "bool": ("int", "*{o} = ({v}) ? 1 : 0;", "*{o} = 0;"),
    "int": ("int64_t", "*{o} = {v};", "*{o} = 0;"),
    "SymInt": ("int64_t", "*{o} = ctorch_gen::sym_to_int({v});", "*{o} = 0;"),
    "float": ("double", "*{o} = {v};", "*{o} = 0.0;"),
    "Scalar": ("ctorch_scalar", "*{o} = ctorch::from_scalar({v});", "*{o} = ctorch_scalar{{}};"),
    "ScalarType": ("ctorch_dtype", "*{o} = ctorch::from_scalar_type({v});", "*{o} = ctorch_dtype(0);"),
}


def bind_return(r: Return, c_name: str) -> RetBinding:
    ts = type_to_str(r.type)
    if ts not in _RET:
        raise Unsupported(f"unsupported return type '{r.type_str()}'")
    ct, assign, init = _RET[ts]
    return RetBinding(r, ct + " *", c_name, assign.replace("{o}", c_name),
                      init.format(o=c_name), list_first=(ts == "Tensor[]"))


def returns_convention(f: Function) -> str:
    if not f.returns:
        return "none"
    if all(r.is_write for r in f.returns):
        mutated = {a.annotation.alias_set for a in f.args if a.is_write}
        if all(r.annotation.alias_set in mutated for r in f.returns):
            return "mutated_args"
    return "out_params"
