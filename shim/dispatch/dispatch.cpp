// Any registered operator by name: a boxed call through libtorch's
// dispatcher (c10::Dispatcher), with ctorch_value arguments checked against
// the schema first and the typed wrappers' checks applied by operator name
// (boxed_rules.h). include/ctorch.h, "Any registered operator by name".
#include "dispatch/boxed_rules.h"

#include "core/internal.h"
#include "core/storage_write.h"
#include "core/value.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/function_schema.h>
#include <ATen/core/jit_type.h>
#include <ATen/MemoryOverlap.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

struct ctorch_op_s {
  c10::OperatorHandle h;
  std::string name;                         // "ns::op.overload" ("ns::op" without one)
  const ctorch::boxed::Rules *rules;        // nullptr: not a generated function's operator
  ctorch::Live<ctorch_op_s> live{this};     // last: see core/internal.h
};

namespace {

using ctorch::boxed::Rules;

const ctorch_op_s &op_of(ctorch_op op) {
  ctorch::check_handle(op, "op");
  return *op;
}

char *dup(const std::string &s) {
  char *c = static_cast<char *>(std::malloc(s.size() + 1));
  if (!c) throw std::bad_alloc();
  std::memcpy(c, s.c_str(), s.size() + 1);
  return c;
}

std::string full_name(const c10::OperatorName &n) {
  return n.overload_name.empty() ? n.name : n.name + "." + n.overload_name;
}

// Operators the typed path would never expose as safe: flagged in
// unsafe_ops.txt, or named _unsafe (they build data without the
// checks their checked twins make).
const char *unsafe_reason(const ctorch_op_s &op) {
  if (op.rules && op.rules->unsafe) return op.rules->unsafe;
  if (op.name.find("_unsafe") != std::string::npos)
    return "its name says _unsafe: it skips the invariant checks of its checked twin";
  return nullptr;
}

// ---- arguments: C values -> a checked stack -------------------------------

// The c10 kind of a schema type with its optional stripped.
c10::TypePtr strip_optional(const c10::TypePtr &t) {
  if (auto o = t->cast<c10::OptionalType>()) return o->getElementType();
  return t;
}

[[noreturn]] void bad_arg(const ctorch_op_s &op, size_t i, const c10::Argument &a, const std::string &msg) {
  ctorch::fail(CTORCH_INVALID_ARGUMENT, "argument " + std::to_string(i) + " '" + a.name() + "' of " +
                                            c10::toString(op.h.schema()) + ": " + msg);
}

// ctorch's enum numbering -> c10's for a ScalarType/Layout/MemoryFormat
// parameter given as an INT (the header's rule), checked.
c10::IValue enum_in(const c10::IValue &v, c10::TypeKind k, const std::string &arg) {
  if (!v.isInt()) return v;
  int64_t x = v.toInt();
  if (x < INT32_MIN || x > INT32_MAX) ctorch::fail_arg(arg.c_str(), std::to_string(x) + " is out of range");
  int e = static_cast<int>(x);
  switch (k) {
    case c10::TypeKind::ScalarTypeType:
      return c10::IValue(static_cast<int64_t>(ctorch::to_scalar_type(e, arg.c_str())));
    case c10::TypeKind::LayoutType:
      return c10::IValue(static_cast<int64_t>(ctorch::to_layout(e, arg.c_str())));
    case c10::TypeKind::MemoryFormatType:
      return c10::IValue(static_cast<int64_t>(ctorch::to_memory_format(e, arg.c_str())));
    default:
      return v;
  }
}

// One value for parameter i: the conversions the header promises, then the
// schema's type check.
c10::IValue coerce(const ctorch_op_s &op, size_t i, const c10::Argument &a, c10::IValue v) {
  const c10::TypePtr &fake = a.type();
  const c10::TypePtr real = strip_optional(a.real_type());
  const c10::TypePtr want = strip_optional(fake);
  if (v.isNone()) {
    if (!c10::NoneType::get()->isSubtypeOf(*fake)) bad_arg(op, i, a, "None given, but the parameter is " + fake->annotation_str());
    return v;
  }
  const std::string arg = std::to_string(i) + " '" + a.name() + "'";
  switch (real->kind()) {
    case c10::TypeKind::ScalarTypeType:
    case c10::TypeKind::LayoutType:
    case c10::TypeKind::MemoryFormatType:
      v = enum_in(v, real->kind(), arg);
      break;
    default:
      break;
  }
  if (want->kind() == c10::TypeKind::FloatType && v.isInt()) v = c10::IValue(static_cast<double>(v.toInt()));
  // Python's Scalar takes a bool: so does the dispatcher's toScalar.
  if (want->kind() == c10::TypeKind::NumberType && v.isBool()) return v;
  if (auto lt = want->cast<c10::ListType>()) {
    // int[2] stride=1: one int stands for N of them, as in Python.
    if (v.isInt() && a.N() && lt->getElementType()->kind() == c10::TypeKind::IntType)
      v = c10::IValue(c10::List<int64_t>(std::vector<int64_t>(static_cast<size_t>(*a.N()), v.toInt())));
    v = ctorch::retyped(v, want);
    if (v.isList() && !v.type()->isSubtypeOf(*want)) {
      // A list typed from its items (List[Tensor]) for a parameter of a
      // wider element type (List[Optional[Tensor]], List[float] from ints):
      // rebuilt with the parameter's element type when every item fits.
      const c10::TypePtr &et = lt->getElementType();
      c10::impl::GenericList l(et);
      size_t k = 0;
      for (const c10::IValue &e : v.toListRef()) {
        c10::IValue x = e;
        if (strip_optional(et)->kind() == c10::TypeKind::FloatType && x.isInt())
          x = c10::IValue(static_cast<double>(x.toInt()));
        if (!x.type()->isSubtypeOf(*et))
          bad_arg(op, i, a, "item " + std::to_string(k) + " is a " + x.type()->annotation_str() + ", not " +
                                et->annotation_str());
        l.push_back(std::move(x));
        ++k;
      }
      v = c10::IValue(std::move(l));
    }
  }
  // int[N] / bool[N]: kernels index them up to N-1 without looking at the
  // length (1.13: reflection_pad1d with padding=[], max_unpool2d with
  // output_size=[] read past the list), so their length is checked as the
  // typed wrappers do (ctorch_gen::FixedInts): N values, or one int standing
  // for all N, or [] where the schema's default is [].
  if (a.N() && *a.N() >= 2 && v.isList()) {
    const size_t n = v.toListRef().size(), want = static_cast<size_t>(*a.N());
    const auto ek = strip_optional(fake)->cast<c10::ListType>()->getElementType()->kind();
    const bool ints = ek == c10::TypeKind::IntType || ek == c10::TypeKind::SymIntType;
    const bool empty_default = a.default_value() && a.default_value()->isList() && a.default_value()->toListRef().empty();
    if (ints && n == 1) {
      v = c10::IValue(c10::List<int64_t>(std::vector<int64_t>(want, v.toListRef()[0].toInt())));
    } else if (n != want && !(ints && n == 0 && empty_default)) {
      bad_arg(op, i, a, "expected " + std::to_string(want) + " values" + (ints ? " (or 1, used for all)" : "") +
                            ", got " + std::to_string(n));
    }
  }
  if (!v.type()->isSubtypeOf(*fake))
    bad_arg(op, i, a, "expected " + a.real_type()->annotation_str() + ", got a " +
                          c10::unshapedType(v.type())->annotation_str());
  if (v.isTensor() && !v.toTensor().defined() && want->kind() == c10::TypeKind::TensorType &&
      fake->kind() != c10::TypeKind::OptionalType)
    bad_arg(op, i, a, "undefined tensor for a Tensor parameter (give None where the schema says Tensor?)");
  if (v.isList() && strip_optional(fake)->cast<c10::ListType>() &&
      strip_optional(fake)->cast<c10::ListType>()->getElementType()->kind() == c10::TypeKind::TensorType) {
    size_t k = 0;
    for (const c10::IValue &e : v.toListRef()) {
      if (e.isTensor() && !e.toTensor().defined())
        bad_arg(op, i, a, "item " + std::to_string(k) + " is an undefined tensor");
      ++k;
    }
  }
  return v;
}

const c10::IValue &value_at(const ctorch_value *p, size_t i, const char *what) {
  if (!p[i]) ctorch::fail_arg(what, "entry " + std::to_string(i) + " is NULL (use ctorch_value_none for None)");
  ctorch::check_handle(p[i], what);
  return p[i]->v;
}

torch::jit::Stack build_stack(const ctorch_op_s &op, const ctorch_value *args, size_t nargs,
                              const char *const *kw_names, const ctorch_value *kw_values, size_t nkw) {
  ctorch::require_list(args, nargs, "args");
  ctorch::require_list(kw_names, nkw, "kw_names");
  ctorch::require_list(kw_values, nkw, "kw_values");
  const c10::FunctionSchema &schema = op.h.schema();
  const auto &params = schema.arguments();
  size_t n_pos = 0;
  while (n_pos < params.size() && !params[n_pos].kwarg_only()) ++n_pos;
  if (nargs > n_pos)
    ctorch::fail_arg("nargs", std::to_string(nargs) + " positional arguments given, but " + c10::toString(schema) +
                                  " takes " + std::to_string(n_pos) + " (keyword-only ones go by name)");
  std::vector<c10::optional<c10::IValue>> given(params.size());
  for (size_t i = 0; i < nargs; ++i) given[i] = value_at(args, i, "args");
  for (size_t k = 0; k < nkw; ++k) {
    if (!kw_names[k]) ctorch::fail_arg("kw_names", "entry " + std::to_string(k) + " is NULL");
    const c10::IValue &v = value_at(kw_values, k, "kw_values");
    size_t i = 0;
    while (i < params.size() && params[i].name() != kw_names[k]) ++i;
    if (i == params.size())
      ctorch::fail_arg("kw_names", std::string("'") + kw_names[k] + "' is no parameter of " + c10::toString(schema));
    if (given[i])
      ctorch::fail_arg("kw_names", "argument " + std::to_string(i) + " '" + params[i].name() + "' given twice");
    given[i] = v;
  }
  torch::jit::Stack stack;
  stack.reserve(params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    const c10::Argument &a = params[i];
    if (given[i]) {
      stack.push_back(coerce(op, i, a, std::move(*given[i])));
    } else if (a.default_value()) {
      stack.push_back(*a.default_value());
    } else {
      bad_arg(op, i, a, "missing (it has no default)");
    }
  }
  return stack;
}

// out= arguments (keyword-only Tensor(a!)): what ctorch_gen::OutArg checks
// in the typed wrappers, for every operator (a schema fact, not a guard):
// memory of their own to write (not a zero tensor, no element aliasing
// another), and afterwards that the kernel wrote into them rather than
// returning a new tensor. Returns the out arguments' TensorImpls in order.
bool is_out_arg(const c10::Argument &a) {
  return a.kwarg_only() && a.alias_info() && a.alias_info()->isWrite() &&
         strip_optional(a.type())->kind() == c10::TypeKind::TensorType;
}

std::vector<const c10::TensorImpl *> check_out_args(const ctorch_op_s &op, const torch::jit::Stack &s) {
  std::vector<const c10::TensorImpl *> impls;
  const auto &params = op.h.schema().arguments();
  for (size_t i = 0; i < params.size() && i < s.size(); ++i) {
    if (!is_out_arg(params[i]) || !s[i].isTensor()) continue;
    const at::Tensor &t = s[i].toTensor();
    if (!t.defined()) continue;
    if (t._is_zerotensor()) bad_arg(op, i, params[i], "is a zero tensor (_efficientzerotensor): it has no memory to write");
    if (t.layout() == c10::kStrided && at::has_internal_overlap(t) == at::MemOverlap::Yes)
      bad_arg(op, i, params[i], "more than one element refers to the same memory (an expanded view?); "
                                "pass a tensor with memory of its own (clone or contiguous)");
    impls.push_back(t.unsafeGetTensorImpl());
  }
  return impls;
}

void check_out_results(const ctorch_op_s &op, const torch::jit::Stack &s, const std::vector<const c10::TensorImpl *> &outs) {
  const auto &rets = op.h.schema().returns();
  size_t k = 0;
  for (size_t i = 0; i < rets.size() && i < s.size() && k < outs.size(); ++i) {
    if (!rets[i].alias_info() || !rets[i].alias_info()->isWrite() || !s[i].isTensor()) continue;
    if (s[i].toTensor().unsafeGetTensorImpl() != outs[k++])
      ctorch::fail(CTORCH_NOT_IMPLEMENTED, "the kernel of " + op.name + " made a new tensor instead of writing into "
                                           "its out= argument (libtorch does not support out= here); call it without out");
  }
}

// Every argument the schema writes (Tensor(a!), Tensor(a!)?, Tensor(a!)[]:
// a list's elements carry the write in its contained alias sets): its
// storage held for the call, as the typed wrappers hold it.
bool writes(const c10::AliasInfo *a) {
  if (!a) return false;
  if (a->isWrite()) return true;
  for (const c10::AliasInfo &c : a->containedTypes())
    if (c.isWrite()) return true;
  return false;
}

std::vector<ctorch::WriteHold> hold_written(const ctorch_op_s &op, const torch::jit::Stack &s) {
  std::vector<ctorch::WriteHold> holds;
  const auto &params = op.h.schema().arguments();
  for (size_t i = 0; i < params.size() && i < s.size(); ++i) {
    if (!writes(params[i].alias_info())) continue;
    const char *name = params[i].name().c_str();
    if (s[i].isTensor()) {
      holds.emplace_back(s[i].toTensor(), name);
    } else if (s[i].isTensorList()) {
      for (const at::Tensor &t : s[i].toTensorList().vec()) holds.emplace_back(t, name);
    }
  }
  return holds;
}

// The typed path's checks, by name (boxed_rules.h): enum ranges, guards.
void apply_rules(const ctorch_op_s &op, const torch::jit::Stack &s) {
  if (const char *why = unsafe_reason(op))
    ctorch::fail_arg("op", op.name + " is flagged unsafe (" + why +
                               "); ctorch_op_call_unchecked runs it, and bad input may then crash the process");
  const Rules *r = op.rules;
  if (!r) return;
  for (int k = 0; k < r->n_enums; ++k) {
    const auto &e = r->enums[k];
    const c10::IValue &v = s.at(static_cast<size_t>(e.index));
    if (v.isInt() && (v.toInt() < e.lo || v.toInt() > e.hi))
      ctorch::fail_arg(e.name, std::to_string(v.toInt()) + " " + e.meaning);
  }
  if (r->guard) r->guard(s);
}

// ---- results: the stack -> one value ---------------------------------------

c10::IValue enum_out(c10::IValue v, const c10::TypePtr &real) {
  if (!v.isInt()) return v;
  switch (strip_optional(real)->kind()) {
    case c10::TypeKind::ScalarTypeType:
      return c10::IValue(static_cast<int64_t>(ctorch::from_scalar_type(static_cast<c10::ScalarType>(v.toInt()))));
    case c10::TypeKind::LayoutType:
      return c10::IValue(static_cast<int64_t>(ctorch::from_layout(static_cast<c10::Layout>(v.toInt()))));
    case c10::TypeKind::MemoryFormatType: {
      const auto mf = static_cast<c10::MemoryFormat>(v.toInt());
      for (int m = 0; m < 8; ++m) {
        try {
          if (ctorch::to_memory_format(m, "ret") == mf) return c10::IValue(static_cast<int64_t>(m));
        } catch (const ctorch::StatusError &) {
          break;
        }
      }
      return v;
    }
    default:
      return v;
  }
}

c10::IValue result_of(const ctorch_op_s &op, torch::jit::Stack &s) {
  const auto &rets = op.h.schema().returns();
  for (size_t i = 0; i < s.size() && i < rets.size(); ++i) s[i] = enum_out(std::move(s[i]), rets[i].real_type());
  if (s.empty()) return c10::IValue();
  if (s.size() == 1) return std::move(s[0]);
  return c10::IValue(c10::ivalue::Tuple::create(std::move(s)));
}

void call(ctorch_value *out, ctorch_op h, const ctorch_value *args, size_t nargs, const char *const *kw_names,
          const ctorch_value *kw_values, size_t nkw, bool checked) {
  ctorch::require_out(out, "out");
  *out = nullptr;
  const ctorch_op_s &op = op_of(h);
  torch::jit::Stack s = build_stack(op, args, nargs, kw_names, kw_values, nkw);
  const std::vector<const c10::TensorImpl *> outs = check_out_args(op, s);
  const std::vector<ctorch::WriteHold> holds = hold_written(op, s);
  if (checked) apply_rules(op, s);
  if (checked && op.rules && op.rules->shape_guard)
    ctorch::boxed::call_shape_guarded(op.h, s);
  else
    op.h.callBoxed(s);
  check_out_results(op, s, outs);
  *out = ctorch::give_value(result_of(op, s));
}

}  // namespace

extern "C" {

CTORCH_API ctorch_status ctorch_op_find(ctorch_op *out, const char *name, const char *overload) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  ctorch::require_ptr(name, "name");
  const std::string ov = overload ? overload : "";
  if (std::strstr(name, "::") == nullptr)
    ctorch::fail_arg("name", std::string("'") + name + "' has no namespace (\"aten::" + name + "\")");
  auto h = c10::Dispatcher::singleton().findOp(c10::OperatorName(name, ov));
  if (!h || !h->hasSchema())
    ctorch::fail(CTORCH_INDEX, std::string("argument 'name': no operator ") + name + (ov.empty() ? "" : "." + ov) +
                                   " is registered (ctorch_op_list lists them; a library's operators appear once it is loaded)");
  std::string full = full_name(h->operator_name());
  const Rules *r = h->operator_name().name.rfind("aten::", 0) == 0 ? ctorch::boxed::find_rules(full) : nullptr;
  *out = new ctorch_op_s{*h, std::move(full), r};
  CTORCH_CATCH
}

CTORCH_API void ctorch_op_free(ctorch_op op) {
  if (ctorch::release_handle(op, __func__)) delete op;
}

CTORCH_API ctorch_status ctorch_op_schema(char **out, ctorch_op op) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  *out = dup(c10::toString(op_of(op).h.schema()));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_op_safety(int *out, char **why, ctorch_op h) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  if (why) *why = nullptr;
  const ctorch_op_s &op = op_of(h);
  const char *reason = unsafe_reason(op);
  *out = reason ? 1 : (op.rules ? 0 : 2);
  if (reason && why) *why = dup(reason);
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_op_list(ctorch_value *out, const char *prefix) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  const std::string pre = prefix ? prefix : "";
  std::vector<std::tuple<std::string, std::string, std::string>> rows;
  auto &d = c10::Dispatcher::singleton();
  for (const c10::OperatorName &n : d.getAllOpNames()) {
    if (n.name.compare(0, pre.size(), pre) != 0) continue;
    auto h = d.findOp(n);
    if (!h || !h->hasSchema()) continue;
    rows.emplace_back(n.name, n.overload_name, c10::toString(h->schema()));
  }
  std::sort(rows.begin(), rows.end());
  c10::impl::GenericList l(c10::TupleType::create({c10::StringType::get(), c10::StringType::get(), c10::StringType::get()}));
  l.reserve(rows.size());
  for (auto &r : rows)
    l.push_back(c10::ivalue::Tuple::create(std::move(std::get<0>(r)), std::move(std::get<1>(r)), std::move(std::get<2>(r))));
  *out = ctorch::give_value(c10::IValue(std::move(l)));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_op_call(ctorch_value *out, ctorch_op op, const ctorch_value *args, size_t nargs,
                                        const char *const *kw_names, const ctorch_value *kw_values, size_t nkw) {
  CTORCH_TRY
  call(out, op, args, nargs, kw_names, kw_values, nkw, true);
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_op_call_unchecked(ctorch_value *out, ctorch_op op, const ctorch_value *args,
                                                  size_t nargs, const char *const *kw_names,
                                                  const ctorch_value *kw_values, size_t nkw) {
  CTORCH_TRY
  call(out, op, args, nargs, kw_names, kw_values, nkw, false);
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_value_device(ctorch_value *out, ctorch_device d) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  *out = ctorch::give_value(c10::IValue(ctorch::to_device(d, "d")));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_value_generator(ctorch_value *out, ctorch_generator g) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  ctorch::require_ptr(g, "g");
  *out = ctorch::give_value(c10::IValue(g->gen));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_value_scalar(ctorch_value *out, ctorch_scalar s) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  const c10::Scalar x = ctorch::to_scalar(s, "s");
  *out = ctorch::give_value(c10::IValue(x));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_value_int_list(ctorch_value *out, const int64_t *p, size_t n) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  ctorch::require_list(p, n, "p");
  c10::List<int64_t> l;
  l.reserve(n);
  for (size_t i = 0; i < n; ++i) l.push_back(p[i]);
  *out = ctorch::give_value(c10::IValue(std::move(l)));
  CTORCH_CATCH
}

}  // extern "C"
