// The ctorch_value handle (a TorchScript IValue), shared by every folder
// that takes or returns values: models/ (module methods, tracing) and
// dispatch/ (operators called by name). The ctorch_value_* functions
// themselves live in models/jit.cpp.
#pragma once

#include <ATen/core/ivalue.h>
#include <ATen/core/jit_type.h>

#include "core/internal.h"
#include "ctorch.h"

struct ctorch_value_s {
  c10::IValue v;
  ctorch::Live<ctorch_value_s> live{this};  // last: see core/internal.h
};

namespace ctorch {

// A new value handle owning v.
inline ctorch_value give_value(c10::IValue v) { return new ctorch_value_s{std::move(v)}; }

// An empty list or dict carries no element type of its own (ctorch_value_list
// of no items is a List[Tensor]); give it the parameter's so a schema check
// accepts it.
inline c10::IValue retyped(const c10::IValue &v, const c10::TypePtr &want) {
  if (v.isList() && v.toListRef().empty()) {
    if (auto lt = want->cast<c10::ListType>()) return c10::IValue(c10::impl::GenericList(lt->getElementType()));
  }
  if (v.isGenericDict() && v.toGenericDict().empty()) {
    if (auto dt = want->cast<c10::DictType>())
      return c10::IValue(c10::impl::GenericDict(dt->getKeyType(), dt->getValueType()));
  }
  return v;
}

}  // namespace ctorch
