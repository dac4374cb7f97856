// The TorchScript module handle, shared by jit.cpp (loading and running
// modules) and trace.cpp (modules recorded from C).
#pragma once

#include <ATen/core/ivalue.h>
#include <torch/csrc/jit/api/module.h>

#include "core/value.h"
#include "ctorch.h"

struct ctorch_module_s {
  torch::jit::Module m;
  ctorch::Live<ctorch_module_s> live{this};  // last: see core/internal.h
};
// ctorch_value_s: core/value.h (dispatch/ uses values too).
