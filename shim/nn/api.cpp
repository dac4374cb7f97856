// The C API of the module layer (ctorch_nn_*): argument checks, handle
// plumbing and error messages; the work is in module.cpp and the modules'
// own files. Every entry point is CTORCH_TRY ... CTORCH_CATCH, so no C++
// exception crosses the boundary.
#include "nn/nn_internal.h"
#include "serialize/serialize.h"

#include <ATen/ATen.h>

#include <cstdlib>

using ctorch::fail;
using ctorch::fail_arg;
using ctorch::require_out;
using ctorch::require_ptr;
namespace nn = ctorch::nn;

namespace {

nn::Module &mod(ctorch_nn_module m, const char *arg = "m") {
  ctorch::require_ptr(m, arg);
  if (!m->m) fail_arg(arg, "is not a live module");
  return *m->m;
}

ctorch_nn_module give_module(nn::ModulePtr p) { return new ctorch_nn_module_s{std::move(p)}; }


ctorch_tensor_dict give_dict(const nn::Named &v) {
  auto *d = new ctorch_tensor_dict_s;
  for (const auto &e : v) {
    d->keys.push_back(e.first);
    d->values.push_back(e.second);
  }
  return d;
}

std::vector<at::Tensor> forward_inputs(nn::Module &m, const ctorch_tensor *inputs, size_t n) {
  std::vector<at::Tensor> in;
  in.reserve(n);
  for (size_t k = 0; k < n; ++k) in.push_back(inputs[k] ? ctorch::own(inputs[k]) : at::Tensor());
  nn::check_forward_inputs(m, in);
  return in;
}

}  // namespace

// Inputs checked against a built-in kind's forward signature: the count,
// and the required ones present; inputs left off the end take their default
// (None).
void ctorch::nn::check_forward_inputs(Module &m, std::vector<at::Tensor> &in) {
  size_t n = in.size();
  const Kind *kind = find_kind(m.kind());
  if (!kind || dynamic_cast<TextForward *>(&m)) return;  // custom: the callback checks
  const Sig &sig = sig_of(kind->forward);
  if (sig.params.empty() && sig.outputs.empty()) return;  // no forward (ModuleList): it fails itself
  std::vector<const Param *> pos;
  for (const auto &p : sig.params)
    if (!p.kw_only) pos.push_back(&p);
  size_t required = 0;
  for (const auto *p : pos)
    if (!p->has_default) ++required;
  if (n < required || n > pos.size())
    fail_arg("n_inputs", m.kind() + ".forward takes " +
                             (required == pos.size() ? std::to_string(required)
                                                     : std::to_string(required) + " to " + std::to_string(pos.size())) +
                             " inputs, got " + std::to_string(n));
  for (size_t k = 0; k < pos.size(); ++k) {
    if (k < n && in[k].defined()) continue;
    if (!pos[k]->optional)
      fail_arg("inputs", m.kind() + ".forward: input " + std::to_string(k) + " ('" + pos[k]->name +
                             "') is required, got NULL");
    if (k >= n) in.emplace_back();
  }
}

char *ctorch::nn::give_string(const std::string &s) {
  char *p = static_cast<char *>(std::malloc(s.size() + 1));
  if (!p) throw std::bad_alloc();
  std::memcpy(p, s.c_str(), s.size() + 1);
  return p;
}

extern "C" {

CTORCH_API ctorch_status ctorch_nn_new(ctorch_nn_module *out, const char *kind, const char *args) {
  CTORCH_TRY
  require_out(out, "out");
  *out = nullptr;
  require_ptr(kind, "kind");
  const nn::Kind *k = nn::find_kind(kind);
  if (!k) fail_arg("kind", std::string("no module kind '") + kind + "' (ctorch_nn_catalogue lists them)");
  nn::Args a = nn::parse_args(k->init, args ? args : "", kind);
  nn::ModulePtr p = nn::build(*k, a);
  *out = give_module(std::move(p));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_nn_new_with_modules(ctorch_nn_module *out, const char *kind, const char *args,
                                                    const char *const *names, const ctorch_nn_module *modules,
                                                    size_t n_modules) {
  CTORCH_TRY
  require_out(out, "out");
  *out = nullptr;
  require_ptr(kind, "kind");
  const nn::Kind *k = nn::find_kind(kind);
  if (!k) fail_arg("kind", std::string("no module kind '") + kind + "' (ctorch_nn_catalogue lists them)");
  if (n_modules) {
    require_ptr(names, "names");
    require_ptr(modules, "modules");
  }
  std::vector<std::pair<std::string, nn::Value>> preset;
  for (size_t i = 0; i < n_modules; ++i) {
    std::string at = "[" + std::to_string(i) + "]";
    if (!names[i]) fail_arg(("names" + at).c_str(), "is NULL");
    nn::Value v;
    v.kind = nn::Value::Mod;
    v.mod = mod(modules[i], ("modules" + at).c_str()).shared_from_this();
    preset.emplace_back(names[i], std::move(v));
  }
  nn::Args a = nn::parse_args(k->init, args ? args : "", kind, preset);
  *out = give_module(nn::build(*k, a));
  CTORCH_CATCH
}

CTORCH_API void ctorch_nn_module_free(ctorch_nn_module m) {
  if (ctorch::release_handle(m, __func__)) delete m;
}

CTORCH_API ctorch_status ctorch_nn_module_kind(const char **out, ctorch_nn_module m) {
  CTORCH_TRY
  require_out(out, "out");
  *out = nullptr;
  *out = mod(m).kind().c_str();
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_nn_module_forward_n(ctorch_nn_module m, const ctorch_tensor *inputs, size_t n_inputs,
                                                    const char *kwargs, ctorch_tensor *outputs, size_t max_outputs,
                                                    size_t *n_outputs) {
  CTORCH_TRY
  require_out(n_outputs, "n_outputs");
  *n_outputs = 0;
  ctorch::require_list(outputs, max_outputs, "outputs");
  for (size_t k = 0; k < max_outputs; ++k) outputs[k] = nullptr;
  nn::Module &mm = mod(m);
  ctorch::require_list(inputs, n_inputs, "inputs");
  std::vector<at::Tensor> in = forward_inputs(mm, inputs, n_inputs);
  nn::reset_error_path();
  std::vector<at::Tensor> res = nn::run_forward(mm, in, kwargs);
  if (res.size() > max_outputs)
    fail_arg("max_outputs", mm.kind() + ".forward returned " + std::to_string(res.size()) + " outputs, room for " +
                                std::to_string(max_outputs));
  for (size_t k = 0; k < res.size(); ++k) outputs[k] = ctorch::give(std::move(res[k]));
  *n_outputs = res.size();
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_nn_module_forward(ctorch_tensor *out, ctorch_nn_module m, ctorch_tensor input) {
  CTORCH_TRY
  require_out(out, "out");
  *out = nullptr;
  nn::Module &mm = mod(m);
  ctorch::require_tensor(input, "input");
  std::vector<at::Tensor> in = forward_inputs(mm, &input, 1);
  nn::reset_error_path();
  std::vector<at::Tensor> res = nn::run_forward(mm, in, nullptr);
  if (res.empty()) fail(CTORCH_VALUE, mm.kind() + ".forward returned no output");
  *out = ctorch::give(std::move(res[0]));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_nn_module_register_parameter(ctorch_nn_module m, const char *name, ctorch_tensor t) {
  CTORCH_TRY
  nn::Module &mm = mod(m);
  require_ptr(name, "name");
  at::Tensor v = t ? ctorch::own(t) : at::Tensor();
  if (v.defined()) {
    if (!(v.is_floating_point() || v.is_complex()))
      fail_arg("t", "a parameter must be floating-point or complex, got " + std::string(c10::toString(v.scalar_type())));
    if (!v.is_leaf()) fail_arg("t", "a parameter must be a leaf tensor (detach() it first)");
  }
  mm.register_parameter(name, v);
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_nn_module_register_buffer(ctorch_nn_module m, const char *name, ctorch_tensor t,
                                                          int persistent) {
  CTORCH_TRY
  nn::Module &mm = mod(m);
  require_ptr(name, "name");
  mm.register_buffer(name, t ? ctorch::own(t) : at::Tensor(), persistent != 0);
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_nn_module_register_module(ctorch_nn_module m, const char *name,
                                                          ctorch_nn_module child) {
  CTORCH_TRY
  nn::Module &mm = mod(m);
  require_ptr(name, "name");
  nn::Module &c = mod(child, "child");
  if (nn::contains(c, &mm)) fail_arg("child", "a module cannot contain itself");
  mm.register_module(name, child->m);
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_nn_module_append(ctorch_nn_module m, ctorch_nn_module child) {
  CTORCH_TRY
  nn::Module &mm = mod(m);
  nn::Module &c = mod(child, "child");
  if (mm.kind() != "Sequential" && mm.kind() != "ModuleList")
    fail_arg("m", "append needs a Sequential or a ModuleList, got " + mm.kind());
  if (nn::contains(c, &mm)) fail_arg("child", "a module cannot contain itself");
  mm.register_module(std::to_string(mm.children.size()), child->m);
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_nn_module_set_tensor(ctorch_nn_module m, const char *name, ctorch_tensor t) {
  CTORCH_TRY
  nn::Module &mm = mod(m);
  require_ptr(name, "name");
  bool is_param = false;
  nn::Module::Entry *e = nn::find_entry(mm, name, &is_param);
  if (!e) fail(CTORCH_INDEX, std::string("argument 'name': no parameter or buffer '") + name + "' in " + mm.kind());
  at::Tensor v = t ? ctorch::own(t) : at::Tensor();
  if (is_param && v.defined()) {
    if (!(v.is_floating_point() || v.is_complex()))
      fail_arg("t", "a parameter must be floating-point or complex");
    if (!v.is_leaf()) fail_arg("t", "a parameter must be a leaf tensor (detach() it first)");
    if (!v.requires_grad()) v.set_requires_grad(true);
  }
  e->t = v;
  // The owner rebuilds what it derives from its tensors.
  std::string path = name;
  size_t dot = path.rfind('.');
  nn::ModulePtr owner = dot == std::string::npos ? m->m : nn::find_module(m->m, path.substr(0, dot));
  if (owner) owner->tensors_changed();
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_nn_module_named_parameters(ctorch_tensor_dict *out, ctorch_nn_module m, int recurse) {
  CTORCH_TRY
  require_out(out, "out");
  *out = nullptr;
  *out = give_dict(nn::named_tensors(mod(m), true, recurse != 0));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_nn_module_named_buffers(ctorch_tensor_dict *out, ctorch_nn_module m, int recurse) {
  CTORCH_TRY
  require_out(out, "out");
  *out = nullptr;
  *out = give_dict(nn::named_tensors(mod(m), false, recurse != 0));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_nn_module_parameters(ctorch_tensor_list *out, ctorch_nn_module m) {
  CTORCH_TRY
  require_out(out, "out");
  *out = nullptr;
  std::vector<at::Tensor> v;
  for (auto &e : nn::named_tensors(mod(m), true, true)) v.push_back(e.second);
  *out = ctorch::give_list(std::move(v));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_nn_module_state_dict(ctorch_tensor_dict *out, ctorch_nn_module m) {
  CTORCH_TRY
  require_out(out, "out");
  *out = nullptr;
  *out = give_dict(nn::state_dict(mod(m)));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_nn_module_load_state_dict(char **report, ctorch_nn_module m, ctorch_tensor_dict sd,
                                                          int strict) {
  CTORCH_TRY
  if (report) *report = nullptr;
  nn::Module &mm = mod(m);
  require_ptr(sd, "sd");
  nn::Named v;
  for (size_t k = 0; k < sd->keys.size(); ++k) v.emplace_back(sd->keys[k], sd->values[k]);
  std::string r = nn::load_state_dict(mm, v, strict != 0);
  if (report) *report = nn::give_string(r);
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_nn_module_train(ctorch_nn_module m, int mode) {
  CTORCH_TRY
  nn::set_train(mod(m), mode != 0);
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_nn_module_is_training(int *out, ctorch_nn_module m) {
  CTORCH_TRY
  require_out(out, "out");
  *out = mod(m).training ? 1 : 0;
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_nn_module_to(ctorch_nn_module m, const ctorch_device *device, int dtype) {
  CTORCH_TRY
  nn::Module &mm = mod(m);
  c10::optional<c10::Device> d;
  if (device) d = ctorch::to_device(*device, "device");
  c10::optional<c10::ScalarType> t;
  if (dtype >= 0) {
    t = ctorch::to_scalar_type(dtype, "dtype");
    if (!(at::isFloatingType(*t) || at::isComplexType(*t)))
      fail_arg("dtype", "must be a floating-point or complex dtype (as nn.Module.to), got torch." + nn::dtype_name(*t));
  }
  nn::module_to(mm, d, t);
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_nn_module_requires_grad(ctorch_nn_module m, int requires_grad) {
  CTORCH_TRY
  nn::set_requires_grad(mod(m), requires_grad != 0);
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_nn_module_zero_grad(ctorch_nn_module m, int set_to_none) {
  CTORCH_TRY
  nn::zero_grad(mod(m), set_to_none != 0);
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_nn_module_num_parameters(int64_t *out, ctorch_nn_module m, int only_trainable) {
  CTORCH_TRY
  require_out(out, "out");
  *out = 0;
  *out = nn::num_parameters(mod(m), only_trainable != 0);
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_nn_module_repr(char **out, ctorch_nn_module m) {
  CTORCH_TRY
  require_out(out, "out");
  *out = nullptr;
  *out = nn::give_string(nn::repr(mod(m)));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_nn_module_clone(ctorch_nn_module *out, ctorch_nn_module m) {
  CTORCH_TRY
  require_out(out, "out");
  *out = nullptr;
  *out = give_module(nn::clone(mod(m)));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_nn_module_num_children(size_t *out, ctorch_nn_module m) {
  CTORCH_TRY
  require_out(out, "out");
  *out = mod(m).children.size();
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_nn_module_child(ctorch_nn_module *out, const char **name, ctorch_nn_module m,
                                                size_t i) {
  CTORCH_TRY
  require_out(out, "out");
  *out = nullptr;
  if (name) *name = nullptr;
  nn::Module &mm = mod(m);
  if (i >= mm.children.size())
    fail(CTORCH_INDEX, "argument 'i': " + std::to_string(i) + " is out of range (" + mm.kind() + " has " +
                           std::to_string(mm.children.size()) + " children)");
  if (!mm.children[i].second) fail(CTORCH_VALUE, "child " + std::to_string(i) + " is None");
  *out = give_module(mm.children[i].second);
  if (name) *name = mm.children[i].first.c_str();
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_nn_module_get(ctorch_nn_module *out, ctorch_nn_module m, const char *path) {
  CTORCH_TRY
  require_out(out, "out");
  *out = nullptr;
  mod(m);
  require_ptr(path, "path");
  nn::ModulePtr p = nn::find_module(m->m, path);
  if (!p) fail(CTORCH_INDEX, std::string("argument 'path': no submodule '") + path + "' in " + m->m->kind());
  *out = give_module(std::move(p));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_nn_module_tensor(ctorch_tensor *out, ctorch_nn_module m, const char *name) {
  CTORCH_TRY
  require_out(out, "out");
  *out = nullptr;
  nn::Module &mm = mod(m);
  require_ptr(name, "name");
  nn::Module::Entry *e = nn::find_entry(mm, name);
  if (!e) fail(CTORCH_INDEX, std::string("argument 'name': no parameter or buffer '") + name + "' in " + mm.kind());
  *out = ctorch::give(e->t);
  CTORCH_CATCH
}

}  // extern "C"
