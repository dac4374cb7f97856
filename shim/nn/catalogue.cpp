// ctorch_nn_catalogue (the kinds' signatures as JSON: the same entries as
// api.json's "nn_modules", which bindings-gen/ctorch_gen/nn_sig.py reads
// from the same CTORCH_NN_KIND strings) and ctorch_nn_module_shape_check
// (forward on a meta copy of the module).
#include "nn/nn_internal.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include <algorithm>

namespace ctorch {
namespace nn {
namespace {

std::string json_str(const std::string &s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char b[8];
          std::snprintf(b, sizeof b, "\\u%04x", c);
          out += b;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

// One argument: {"name", "type" (as written, without '?'), "optional"
// (None allowed), "required", "default" (Python text, when there is one)}.
std::string json_param(const Param &p, bool output) {
  std::string out = "{\"name\": " + json_str(p.name) + ", \"type\": " + json_str(p.type) +
                    ", \"optional\": " + (p.optional ? "true" : "false");
  if (!output) {
    out += std::string(", \"required\": ") + (p.has_default ? "false" : "true");
    if (p.has_default) out += ", \"default\": " + json_str(p.def_text);
  }
  return out + "}";
}

std::string json_list(const std::vector<const Param *> &ps, bool output) {
  std::string out = "[";
  for (size_t k = 0; k < ps.size(); ++k) out += (k ? ", " : "") + json_param(*ps[k], output);
  return out + "]";
}

// The input dtype for a shape check: an embedding's indices are int64; else
// the module's first floating parameter's dtype (float32 without one).
c10::ScalarType input_dtype(Module &m) {
  Module *first = &m;
  while (!first->children.empty() && first->children[0].second &&
         (first->kind() == "Sequential" || first->params.empty()))
    first = first->children[0].second.get();
  if (first->kind() == "Embedding" || first->kind() == "EmbeddingBag") return c10::kLong;
  for (auto &p : named_tensors(m, true, true))
    if (p.second.is_floating_point()) return p.second.scalar_type();
  return c10::kFloat;
}

struct ShapeLogGuard {
  explicit ShapeLogGuard(ShapeLog *l) { set_shape_log(l); }
  ~ShapeLogGuard() { set_shape_log(nullptr); }
};

}  // namespace
}  // namespace nn
}  // namespace ctorch

namespace nn = ctorch::nn;

extern "C" {

CTORCH_API ctorch_status ctorch_nn_catalogue(char **out) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  std::vector<const nn::Kind *> ks;
  for (const auto &k : nn::kinds()) ks.push_back(&k);
  std::sort(ks.begin(), ks.end(), [](const nn::Kind *a, const nn::Kind *b) { return std::string(a->name) < b->name; });
  std::string j = "[";
  for (size_t i = 0; i < ks.size(); ++i) {
    const nn::Sig &init = nn::sig_of(ks[i]->init);
    const nn::Sig &fwd = nn::sig_of(ks[i]->forward);
    std::vector<const nn::Param *> iargs, inputs, kwargs, outputs;
    for (const auto &p : init.params) iargs.push_back(&p);
    for (const auto &p : fwd.params) (p.kw_only ? kwargs : inputs).push_back(&p);
    for (const auto &p : fwd.outputs) outputs.push_back(&p);
    j += std::string(i ? ",\n " : "") + "{\"kind\": " + nn::json_str(ks[i]->name) + ", \"init\": " +
         nn::json_list(iargs, false) + ", \"forward\": {\"inputs\": " + nn::json_list(inputs, false) +
         ", \"kwargs\": " + nn::json_list(kwargs, false) + ", \"outputs\": " + nn::json_list(outputs, true) + "}}";
  }
  j += "]";
  *out = nn::give_string(j);
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_nn_module_shape_check(char **out, ctorch_nn_module m, const int64_t *const *shapes,
                                                      const size_t *ndims, size_t n_inputs) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  ctorch::require_ptr(m, "m");
  if (!m->m) ctorch::fail_arg("m", "is not a live module");
  ctorch::require_list(shapes, n_inputs, "shapes");
  ctorch::require_list(ndims, n_inputs, "ndims");
  nn::ModulePtr meta = nn::clone(*m->m, true);
  c10::ScalarType dt = nn::input_dtype(*meta);
  std::vector<at::Tensor> in;
  std::string in_text;
  for (size_t k = 0; k < n_inputs; ++k) {
    if (!shapes[k] && ndims[k]) ctorch::fail_arg("shapes", "entry " + std::to_string(k) + " is NULL");
    std::vector<int64_t> sz(shapes[k], shapes[k] + ndims[k]);
    for (int64_t d : sz)
      if (d < 0) ctorch::fail_arg("shapes", "entry " + std::to_string(k) + " has a negative size");
    in.push_back(at::empty(sz, at::TensorOptions().dtype(dt).device(c10::kMeta)));
    in_text += (k ? ", " : "") + nn::shape_text(sz);
  }
  nn::check_forward_inputs(*meta, in);
  nn::ShapeLog log;
  std::vector<at::Tensor> res;
  try {
    nn::ShapeLogGuard g(&log);
    at::NoGradGuard ng;
    nn::reset_error_path();
    res = nn::run_forward(*meta, in, nullptr);
  } catch (const c10::Error &e) {
    std::string msg = e.what_without_backtrace();
    std::string op = nn::missing_meta_kernel(e);
    if (!op.empty()) {
      // libtorch's message goes on to list every backend: its first line
      // and the module's path are what the reader needs.
      size_t ctx = msg.find("\nin module '");
      std::string where = ctx == std::string::npos ? "" : " (" + msg.substr(ctx + 1) + ")";
      ctorch::fail(CTORCH_NOT_IMPLEMENTED, "libtorch " TORCH_VERSION " has no meta kernel for " + op + where +
                                               ", so this module's shapes cannot be checked without computing");
    }
    // A failure in a child names it (Module::call); one in m itself does not.
    if (msg.find("in module '") == std::string::npos)
      msg += "\nin module '' (" + meta->kind() + "), input shape " + in_text;
    ctorch::fail(CTORCH_VALUE, "input does not fit: " + msg);
  } catch (const ctorch::StatusError &) {
    throw;  // a child's, already annotated (Module::call)
  } catch (const std::exception &e) {
    // m itself ran a Python meta kernel (torch 2.x's Python in the process):
    // not c10::Error, but the same meaning.
    ctorch::fail(CTORCH_VALUE, std::string("input does not fit: ") + e.what() + "\nin module '' (" + meta->kind() +
                                   "), input shape " + in_text);
  }
  std::string text;
  for (const auto &l : log.lines) text += l.first + ": " + nn::shape_text(l.second) + "\n";
  for (size_t k = 0; k < res.size(); ++k)
    text += std::string(res.size() == 1 ? "(output)" : "(output " + std::to_string(k) + ")") + ": " +
            (res[k].defined() ? nn::shape_text(res[k].sizes()) : std::string("None")) + "\n";
  *out = nn::give_string(text);
  CTORCH_CATCH
}

}  // extern "C"
