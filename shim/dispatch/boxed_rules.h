// The checks a by-name (boxed) call applies, per operator: what the
// generated typed function of the same operator applies, generated from the
// same sources (bindings-gen/ctorch_gen/emit_cpp.py, emit_boxed: guards.h,
// unsafe_ops.txt, plan.py's ENUM_ARGS) into build*/generated/ctorch_boxed.cpp.
// Shared by that generated file and dispatch.cpp only.
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/ivalue.h>
#include <ATen/core/stack.h>
#include <ATen/core/IListRef.h>
#include <ATen/core/boxing/impl/make_boxed_from_unboxed_functor.h>
#include <vector>

#include <cstddef>
#include <cstdint>
#include <utility>

namespace ctorch {
namespace boxed {

struct EnumRule {
  int index;            // argument position in the schema
  const char *name;     // its schema name
  int64_t lo, hi;       // allowed range
  const char *meaning;  // what the values mean, for the message
};

struct Rules {
  const char *name;      // "aten::add.Tensor" (overload "" -> "aten::relu")
  const char *c_name;    // the generated function's name
  const char *unsafe;    // reason it may crash (unsafe_ops.txt), or nullptr
  // ctorch::guard::<op> on the unboxed arguments, or nullptr (no guard).
  void (*guard)(const torch::jit::Stack &);
  const EnumRule *enums;
  int n_enums;
  bool shape_guard;      // resize family: restore self's shape if the call fails
};

// The rules of the operator named name ("ns::op" or "ns::op.overload"), or
// nullptr when it is not one of the generated functions' operators.
const Rules *find_rules(const std::string &name);
// Runs the call, restoring self's sizes and strides if a resize-family
// operator fails half-way (ctorch_gen::ShapeGuard, as the typed wrappers do).
void call_shape_guarded(const c10::OperatorHandle &op, torch::jit::Stack &s);

// One argument off the stack as the dispatcher's own boxed-to-unboxed
// adapter reads it (Fetch::get), then passed to the guard as Pass: the
// parameter type of at::_ops::<op>::call, except where the guards take what
// the typed wrappers hand them (guards.h): a concrete int for a SymInt (the
// values come from C ints) and a TensorList for an ITensorListRef.
template <class P>
struct Fetch {
  using Pass = P;
  static decltype(auto) get(c10::IValue &v) {
    return c10::impl::ivalue_to_arg<typename c10::impl::decay_if_not_tensor<P>::type, false>::call(v);
  }
};
template <>
struct Fetch<c10::SymInt> {
  using Pass = int64_t;
  static int64_t get(c10::IValue &v) { return v.toInt(); }
};
template <>
struct Fetch<const at::ITensorListRef &> {
  using Pass = at::TensorList;
  static std::vector<at::Tensor> get(c10::IValue &v) { return v.toTensorVector(); }
};

// Unboxes a stack into an operator's C++ argument types (Sig: the
// at::_ops::<op>::schema function type) and hands them to g.
template <class Sig>
struct Unbox;
template <class R, class... P>
struct Unbox<R(P...)> {
  template <class G>
  static void run(const torch::jit::Stack &in, G g) {
    torch::jit::Stack s = in;  // ivalue_to_arg moves out of its IValue
    run_(s, g, std::index_sequence_for<P...>{});
  }
  template <class G, size_t... I>
  static void run_(torch::jit::Stack &s, G g, std::index_sequence<I...>) {
    g(static_cast<typename Fetch<P>::Pass>(Fetch<P>::get(s[I]))...);
  }
};

}  // namespace boxed
}  // namespace ctorch
