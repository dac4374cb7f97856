// The inference optimiser for TorchScript modules:
// ctorch_module_optimize_for_inference, libtorch's own torch::jit::freeze
// and torch::jit::optimize_for_inference (both in 1.13.1 and 2.15.0) on a
// copy, with a report of what they changed in forward's graph, so a caller
// (and the tests) can see which rewrites applied on this libtorch.
#include "core/internal.h"
#include "infer/options.h"
#include "jit_handles.h"

#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/frontend/error_report.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/passes/inliner.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <sstream>
#include <string>
#include <vector>

// A named namespace: the unity build compiles this file with others of models/.
namespace jit_optimize {

struct JitOptions {
  bool mkldnn = true;
  std::vector<std::string> methods;
};

// "mkldnn=0,methods=a:b" (NULL or "": the defaults).
JitOptions parse_options(const char *text) {
  JitOptions o;
  for (const ctorch::infer::OptionItem &item : ctorch::infer::option_items(text)) {
    if (item.key == "mkldnn" && ctorch::infer::flag_value(item, &o.mkldnn)) continue;
    ctorch::infer::Precision p = ctorch::infer::Precision::Float32;
    if (item.key == "precision" && ctorch::infer::precision_value(item, &p)) {
      // A frozen graph's ops and constants are float32; converting them is a
      // graph rewrite of its own. Module trees take the other precisions.
      if (p != ctorch::infer::Precision::Float32)
        ctorch::fail(CTORCH_NOT_IMPLEMENTED, "argument 'options': precision=" + item.value +
                                                 " is not implemented for TorchScript modules (float32 only); "
                                                 "ctorch_nn_module_optimize_for_inference takes it for module trees");
      continue;
    }
    if (item.key == "methods" && !item.value.empty()) {
      const std::string &value = item.value;
      size_t p = 0;
      while (p <= value.size()) {
        size_t c = value.find(':', p);
        if (c == std::string::npos) c = value.size();
        if (c > p) o.methods.push_back(value.substr(p, c - p));
        p = c + 1;
      }
      continue;
    }
    ctorch::fail_arg("options", "'" + item.text + "' is not one of mkldnn=0|1, methods=NAME[:NAME...], precision=float32");
  }
  return o;
}

// How many nodes of each kind a graph holds, blocks included.
void count_nodes(torch::jit::Block *b, std::map<std::string, int> &n) {
  for (torch::jit::Node *node : b->nodes()) {
    ++n[node->kind().toQualString()];
    for (torch::jit::Block *sub : node->blocks()) count_nodes(sub, n);
  }
}

// Counted on a copy with every method call inlined: a module not frozen
// yet calls its submodules' methods (prim::CallMethod), whose ops count too.
std::map<std::string, int> graph_counts(torch::jit::Module &m) {
  std::map<std::string, int> n;
  std::shared_ptr<torch::jit::Graph> g = m.get_method("forward").graph()->copy();
  torch::jit::Inline(*g);
  count_nodes(g->block(), n);
  return n;
}

char *give_text(const std::string &s) {
  char *c = static_cast<char *>(std::malloc(s.size() + 1));
  if (!c) throw std::bad_alloc();
  std::memcpy(c, s.c_str(), s.size() + 1);
  return c;
}

}  // namespace jit_optimize

extern "C" {

CTORCH_API ctorch_status ctorch_module_optimize_for_inference(ctorch_module *out, char **report, ctorch_module m,
                                                              const char *options) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  if (report) *report = nullptr;
  ctorch::check_handle(m, "m");
  jit_optimize::JitOptions o = jit_optimize::parse_options(options);
  if (!m->m.find_method("forward")) ctorch::fail_arg("m", "the module has no forward method");
  for (const std::string &name : o.methods)
    if (!m->m.find_method(name)) ctorch::fail_arg("options", "the module has no method '" + name + "'");
  torch::jit::Module result;
  std::map<std::string, int> before, after;
  try {
    // clone(): a deep copy (freeze clones again, but eval() must not touch m).
    torch::jit::Module copy = m->m.clone();
    copy.eval();
    before = jit_optimize::graph_counts(copy);
    // freeze drops methods other than forward unless named as attributes to preserve.
    result = torch::jit::freeze(copy, o.methods, /*optimize_numerics=*/true);
    if (o.mkldnn) result = torch::jit::optimize_for_inference(result, o.methods);
    after = jit_optimize::graph_counts(result);
  } catch (const torch::jit::ErrorReport &e) {
    ctorch::fail(CTORCH_RUNTIME, std::string("freezing failed: ") + e.what());
  } catch (const c10::Error &e) {
    ctorch::fail(CTORCH_RUNTIME, std::string("freezing failed: ") + e.what_without_backtrace());
  }
  if (report) {
    std::ostringstream r;
    r << "pass torch::jit::freeze\n";
    if (o.mkldnn) r << "pass torch::jit::optimize_for_inference\n";
    std::map<std::string, int> all = before;
    for (const auto &kv : after) all[kv.first];
    for (const auto &kv : all) {
      int b = before.count(kv.first) ? before[kv.first] : 0, a = after.count(kv.first) ? after[kv.first] : 0;
      if (a != b) r << kv.first << ": " << b << " -> " << a << "\n";
    }
    *report = jit_optimize::give_text(r.str());
  }
  *out = new ctorch_module_s{std::move(result)};
  CTORCH_CATCH
}

}  // extern "C"
