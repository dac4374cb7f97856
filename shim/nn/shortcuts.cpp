// Shortcuts over the module layer for what every training program wrote by
// hand: an optimizer or gradient clipping over a module's
// parameters, printf-style constructor text, forward of a named child, and
// the first output alone. Each is the longer sequence of existing calls, done
// by the same code: the optimizer and clipping functions call the public
// ones on ctorch_nn_module_parameters' list, so their results are those of
// the hand-written sequence bit for bit (tests/nn/test_nn_shortcuts.c).
#include "nn/nn_internal.h"

#include <ATen/ATen.h>

#include <cstdarg>
#include <cstdio>
#include <string>
#include <vector>

using ctorch::fail;
using ctorch::fail_arg;
using ctorch::require_out;
using ctorch::require_ptr;
namespace nn = ctorch::nn;

namespace {

// The longest text ctorch_nn_newf formats (documented in ctorch.h): bounds
// the allocation a runaway format ("%100000000d") could ask for.
constexpr int kNewfMax = 65535;

nn::Module &shortcut_mod(ctorch_nn_module m, const char *arg) {
  require_ptr(m, arg);
  if (!m->m) fail_arg(arg, "is not a live module");
  return *m->m;
}

// A module's parameters as NEW handles (ctorch_nn_module_parameters' list),
// freed when it goes: what the public functions taking an array read.
struct ParamHandles {
  std::vector<ctorch_tensor> h;
  explicit ParamHandles(nn::Module &m) {
    nn::Named named = nn::named_tensors(m, true, true);
    h.reserve(named.size());
    for (auto &e : named) h.push_back(ctorch::give(e.second));
  }
  ~ParamHandles() {
    for (ctorch_tensor t : h) ctorch_tensor_free(t);
  }
  ParamHandles(const ParamHandles &) = delete;
  ParamHandles &operator=(const ParamHandles &) = delete;
};

// An inner public call's failure, raised again with its status and message
// (the outer CTORCH_CATCH puts the outer function's name before it).
void raise_inner(ctorch_status st) {
  if (st != CTORCH_OK) fail(st, ctorch_last_error());
}

std::vector<at::Tensor> child_inputs(nn::Module &m, const ctorch_tensor *inputs, size_t n) {
  ctorch::require_list(inputs, n, "inputs");
  std::vector<at::Tensor> in;
  in.reserve(n);
  for (size_t k = 0; k < n; ++k) in.push_back(inputs[k] ? ctorch::own(inputs[k]) : at::Tensor());
  nn::check_forward_inputs(m, in);
  return in;
}

nn::ModulePtr child_at(ctorch_nn_module m, const char *path) {
  shortcut_mod(m, "m");
  require_ptr(path, "path");
  nn::ModulePtr p = nn::find_module(m->m, path);
  if (!p) fail(CTORCH_INDEX, std::string("argument 'path': no submodule '") + path + "' in " + m->m->kind());
  return p;
}

ctorch_status newv_named(const char *fn, ctorch_nn_module *out, const char *kind, const char *fmt, va_list ap) {
  try {
    require_out(out, "out");
    *out = nullptr;
    require_ptr(kind, "kind");
    require_ptr(fmt, "fmt");
    va_list measure;
    va_copy(measure, ap);
    int n = std::vsnprintf(nullptr, 0, fmt, measure);
    va_end(measure);
    if (n < 0) fail_arg("fmt", std::string("formatting \"") + fmt + "\" failed (vsnprintf)");
    if (n > kNewfMax)
      fail_arg("fmt", std::string("\"") + fmt + "\" formats to " + std::to_string(n) + " bytes, more than " +
                          std::to_string(kNewfMax));
    std::string args(static_cast<size_t>(n) + 1, '\0');
    std::vsnprintf(&args[0], args.size(), fmt, ap);
    args.resize(static_cast<size_t>(n));
    ctorch_status st = ctorch_nn_new(out, kind, args.c_str());
    if (st != CTORCH_OK) fail(st, "args \"" + args + "\": " + ctorch_last_error());
  } catch (...) {
    return ctorch::translate_exception(fn);
  }
  return CTORCH_OK;
}

}  // namespace

extern "C" {

CTORCH_API ctorch_status ctorch_optimizer_new_from_module(ctorch_optimizer *out, ctorch_optimizer_kind kind,
                                                          ctorch_nn_module m, const ctorch_optim_options *options) {
  CTORCH_TRY
  require_out(out, "out");
  *out = nullptr;
  ParamHandles p(shortcut_mod(m, "m"));
  if (p.h.empty()) fail_arg("m", m->m->kind() + " has no parameters (optimizer got an empty parameter list)");
  raise_inner(ctorch_optimizer_new(out, kind, p.h.data(), p.h.size(), options));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_optimizer_new_from_module_v2(ctorch_optimizer *out, ctorch_optimizer_kind kind,
                                                             ctorch_nn_module m,
                                                             const ctorch_optim_options_v2 *options) {
  CTORCH_TRY
  require_out(out, "out");
  *out = nullptr;
  ParamHandles p(shortcut_mod(m, "m"));
  if (p.h.empty()) fail_arg("m", m->m->kind() + " has no parameters (optimizer got an empty parameter list)");
  raise_inner(ctorch_optimizer_new_v2(out, kind, p.h.data(), p.h.size(), options));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_nn_module_clip_grad_norm_(double *total_norm, ctorch_nn_module m, double max_norm,
                                                          double norm_type, int error_if_nonfinite) {
  CTORCH_TRY
  if (total_norm) *total_norm = 0;
  ParamHandles p(shortcut_mod(m, "m"));
  raise_inner(ctorch_clip_grad_norm_(total_norm, p.h.data(), p.h.size(), max_norm, norm_type, error_if_nonfinite));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_nn_module_clip_grad_value_(ctorch_nn_module m, double clip_value) {
  CTORCH_TRY
  ParamHandles p(shortcut_mod(m, "m"));
  raise_inner(ctorch_clip_grad_value_(p.h.data(), p.h.size(), clip_value));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_nn_newf(ctorch_nn_module *out, const char *kind, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  ctorch_status st = newv_named(__func__, out, kind, fmt, ap);
  va_end(ap);
  return st;
}

CTORCH_API ctorch_status ctorch_nn_newv(ctorch_nn_module *out, const char *kind, const char *fmt, va_list ap) {
  return newv_named(__func__, out, kind, fmt, ap);
}

CTORCH_API ctorch_status ctorch_nn_module_forward_child(ctorch_tensor *out, ctorch_nn_module m, const char *path,
                                                        ctorch_tensor input) {
  CTORCH_TRY
  require_out(out, "out");
  *out = nullptr;
  nn::ModulePtr c = child_at(m, path);
  ctorch::require_tensor(input, "input");
  std::vector<at::Tensor> in = child_inputs(*c, &input, 1);
  nn::reset_error_path();
  std::vector<at::Tensor> res = nn::run_forward(*c, in, nullptr);
  if (res.empty()) fail(CTORCH_VALUE, c->kind() + ".forward returned no output");
  *out = ctorch::give(std::move(res[0]));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_nn_module_forward_child_n(ctorch_nn_module m, const char *path,
                                                          const ctorch_tensor *inputs, size_t n_inputs,
                                                          const char *kwargs, ctorch_tensor *outputs,
                                                          size_t max_outputs, size_t *n_outputs) {
  CTORCH_TRY
  require_out(n_outputs, "n_outputs");
  *n_outputs = 0;
  ctorch::require_list(outputs, max_outputs, "outputs");
  for (size_t k = 0; k < max_outputs; ++k) outputs[k] = nullptr;
  nn::ModulePtr c = child_at(m, path);
  std::vector<at::Tensor> in = child_inputs(*c, inputs, n_inputs);
  nn::reset_error_path();
  std::vector<at::Tensor> res = nn::run_forward(*c, in, kwargs);
  if (res.size() > max_outputs)
    fail_arg("max_outputs", c->kind() + ".forward returned " + std::to_string(res.size()) + " outputs, room for " +
                                std::to_string(max_outputs));
  for (size_t k = 0; k < res.size(); ++k) outputs[k] = res[k].defined() ? ctorch::give(std::move(res[k])) : nullptr;
  *n_outputs = res.size();
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_nn_module_forward_first(ctorch_tensor *out, ctorch_nn_module m,
                                                        const ctorch_tensor *inputs, size_t n_inputs,
                                                        const char *kwargs) {
  CTORCH_TRY
  require_out(out, "out");
  *out = nullptr;
  nn::Module &mm = shortcut_mod(m, "m");
  std::vector<at::Tensor> in = child_inputs(mm, inputs, n_inputs);
  nn::reset_error_path();
  std::vector<at::Tensor> res = nn::run_forward(mm, in, kwargs);
  if (res.empty()) fail(CTORCH_VALUE, mm.kind() + ".forward returned no output");
  if (res[0].defined()) *out = ctorch::give(std::move(res[0]));
  CTORCH_CATCH
}

}  // extern "C"
