// Tracing from C into TorchScript: the ops C code runs between
// ctorch_tracer_begin and ctorch_tracer_finish are recorded by libtorch's own
// tracer into the forward method of a new module whose attributes are the
// named parameters and buffers. The generated wrappers call the dispatcher
// (at::_ops::*::call), and while a thread holds a tracer::TracingState the
// dispatcher's Tracer key records each call into that state's graph: the
// same mechanism torch.jit.trace uses. torch::jit::tracer::trace() takes
// the traced code as a callback; here the traced code is the caller's, run
// between two C calls, so its body is split in two (begin: the module's
// attributes and the inputs become graph values; finish: the outputs are
// registered and the graph goes through the same passes), with the same
// public pieces of libtorch it is built from.
#include "core/internal.h"
#include "jit_handles.h"
#include "serialize/serialize.h"

#include <torch/csrc/jit/frontend/tracer.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/passes/fixup_trace_scope_blocks.h>
#include <torch/csrc/jit/passes/normalize_ops.h>
#include <torch/csrc/jit/serialization/export.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <thread>

namespace tracer = torch::jit::tracer;
using torch::jit::Value;

struct ctorch_tracer_s {
  enum Phase { COLLECTING, TRACING, FINISHED, ABANDONED };
  struct Attr {
    std::string name;  // dotted: "conv1.weight"
    at::Tensor t;
    bool buffer;
  };
  Phase phase = COLLECTING;
  std::string name;  // the module's class name
  std::vector<Attr> attrs;
  std::vector<at::Tensor> inputs;  // kept alive while tracing: the tracer keys values by identity
  c10::optional<torch::jit::Module> module;
  std::shared_ptr<tracer::TracingState> state;
  std::thread::id thread;
  ctorch::Live<ctorch_tracer_s> live{this};  // last: see core/internal.h
};

namespace {

// ---- traces freed on another thread ----------------------------------------
// The tracing state is thread-local to libtorch: only the thread that began a
// trace can stop it. A trace freed from another thread leaves its state on
// its thread; it is remembered here (weakly: a thread that exits frees it) so
// that the next ctorch_tracer_begin or ctorch_tracer_active on that thread
// clears it instead of reporting a trace that nobody owns.
std::mutex orphans_mu;
std::vector<std::weak_ptr<tracer::TracingState>> orphans;

void add_orphan(const std::shared_ptr<tracer::TracingState> &s) {
  std::lock_guard<std::mutex> g(orphans_mu);
  orphans.erase(std::remove_if(orphans.begin(), orphans.end(), [](const auto &w) { return w.expired(); }),
                orphans.end());
  orphans.push_back(s);
}

void clear_orphan_here() {
  std::shared_ptr<tracer::TracingState> cur = tracer::getTracingState();
  if (!cur) return;
  std::lock_guard<std::mutex> g(orphans_mu);
  for (auto it = orphans.begin(); it != orphans.end(); ++it) {
    if (it->lock() == cur) {
      orphans.erase(it);
      tracer::setTracingState(nullptr);
      return;
    }
  }
}

// ---- names -----------------------------------------------------------------

bool is_identifier(const std::string &s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}

// Names that would not survive the module's Python source (torch.jit.save
// writes code; Python reads it back) or that nn.Module already uses.
bool is_reserved(const std::string &s) {
  static const char *const words[] = {
      "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue", "def",
      "del", "elif", "else", "except", "finally", "for", "from", "global", "if", "import", "in", "is",
      "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while", "with", "yield",
      "self", "training", "forward"};
  for (const char *w : words)
    if (s == w) return true;
  return s.size() >= 2 && s[0] == '_' && s[1] == '_';
}

bool is_index(const std::string &s) {
  if (s.empty() || s.size() > 9) return false;
  for (char c : s)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

// Submodule names may also be indices ("0.weight", "layers.1.bias"): the
// children of nn.Sequential and nn.ModuleList, which TorchScript writes as
// getattr(self, "0") as it does for Python's traced Sequential.
std::vector<std::string> split_name(const std::string &name, const char *arg) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (;;) {
    size_t dot = name.find('.', start);
    std::string part = name.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (!is_identifier(part) && !(dot != std::string::npos && is_index(part)))
      ctorch::fail_arg(arg, "'" + name + "' is not a dotted name of identifiers (such as \"fc1.weight\")");
    if (is_reserved(part))
      ctorch::fail_arg(arg, "'" + name + "': '" + part +
                                "' is reserved (a Python keyword, self, training, forward, or a __dunder__ name)");
    parts.push_back(std::move(part));
    if (dot == std::string::npos) return parts;
    start = dot + 1;
  }
}

// ---- handle checks ---------------------------------------------------------

ctorch_tracer_s &trace_of(ctorch_tracer tr) {
  ctorch::check_handle(tr, "trace");
  return *tr;
}

const char *phase_text(ctorch_tracer_s::Phase p) {
  switch (p) {
    case ctorch_tracer_s::COLLECTING: return "has not begun (call ctorch_tracer_begin first)";
    case ctorch_tracer_s::TRACING: return "is recording (ctorch_tracer_begin was already called)";
    case ctorch_tracer_s::FINISHED: return "is already finished";
    case ctorch_tracer_s::ABANDONED: return "was abandoned";
  }
  return "is in an unknown state";
}

[[noreturn]] void wrong_phase(const ctorch_tracer_s &t) { ctorch::fail_arg("trace", std::string("the trace ") + phase_text(t.phase)); }

void stop_here(ctorch_tracer_s &t) {
  if (tracer::getTracingState() == t.state) tracer::setTracingState(nullptr);
  t.phase = ctorch_tracer_s::ABANDONED;
  t.state.reset();
  t.module.reset();
  t.inputs.clear();
}

// The trace must be recording, on this thread, with its state still current.
void require_recording_here(ctorch_tracer_s &t) {
  if (t.phase != ctorch_tracer_s::TRACING) wrong_phase(t);
  if (t.thread != std::this_thread::get_id())
    ctorch::fail(CTORCH_RUNTIME, "the trace records on the thread that began it; finish or abandon it there");
  if (tracer::getTracingState() != t.state) {
    // libtorch's traced kernels clear the thread's tracing state while the
    // real kernel runs and restore it afterwards: an op that fails during
    // the trace (a shape error, an untraced tensor that requires grad, ...)
    // leaves the thread not tracing, and a half-recorded node in the graph.
    stop_here(t);
    ctorch::fail(CTORCH_RUNTIME,
                 "this thread stopped tracing: an op failed during the trace, and libtorch's tracer does not resume "
                 "after an error; free the trace and trace again");
  }
}

// ---- begin -----------------------------------------------------------------

// The module: one submodule per dotted prefix ("conv1" for "conv1.weight"),
// so that Python sees the usual state_dict names.
torch::jit::Module build_module(const ctorch_tracer_s &t) {
  auto cu = std::make_shared<torch::jit::CompilationUnit>();
  torch::jit::Module root(c10::QualifiedName("__torch__", t.name), cu);
  // Every nn.Module has `training` (Module::train() and Python's .eval() set
  // it); torch.jit.trace's modules have it first.
  root.register_attribute("training", c10::BoolType::get(), true);
  for (const auto &a : t.attrs) {
    std::vector<std::string> parts = split_name(a.name, "name");
    torch::jit::Module m = root;
    std::string path = t.name;
    for (size_t i = 0; i + 1 < parts.size(); ++i) {
      path += "_" + parts[i];
      if (auto sub = m.attr(parts[i], c10::IValue()); sub.isObject()) {
        m = torch::jit::Module(sub.toObject());
      } else {
        torch::jit::Module child(c10::QualifiedName("__torch__", path), cu, /*shouldMangle=*/true);
        child.register_attribute("training", c10::BoolType::get(), true);
        m.register_module(parts[i], child);
        m = child;
      }
    }
    m.register_parameter(parts.back(), a.t, /*is_buffer=*/a.buffer);
  }
  return root;
}

// tracer::trace's gatherParametersAndBuffers: every attribute of the module
// becomes a prim::TracedAttr value named by its scope ("__module.conv1.weight"),
// which FixupTraceScopeBlocks later turns into GetAttr chains from self.
void gather(tracer::TracingState &state, Value *self_value, const torch::jit::Module &self, const std::string &prefix) {
  torch::jit::Graph &g = *self_value->owningGraph();
  state.setValue(self._ivalue(), self_value);
  for (const auto &s : self.named_attributes(/*recurse=*/false)) {
    std::string qualname = prefix + "." + s.name;
    Value *v = g.insertNode(g.create(c10::prim::TracedAttr))
                   ->s_(c10::attr::scope, qualname)
                   ->output()
                   ->setType(s.value.type());
    if (s.value.isTensor()) state.setValue(s.value, v);
    if (self.type()->getAttribute(s.name)->is_module())
      gather(state, v, torch::jit::Module(s.value.toObject()), qualname);
  }
}

// ---- finish ----------------------------------------------------------------

// What a traced forward may return: a tensor the trace computed (or an input
// or parameter), or a tuple of such. Checked before the graph is touched, so
// that a wrong output leaves the trace recording.
void check_output(const tracer::TracingState &state, const c10::IValue &v, const std::string &where) {
  if (v.isTensor()) {
    if (!v.toTensor().defined()) ctorch::fail_arg("outputs", where + " is an undefined tensor");
    if (!state.hasValue(v))
      ctorch::fail_arg("outputs", where +
                                      " was not computed during the trace (the tracer saw no op on this thread "
                                      "produce it, and it is not an input, parameter or buffer of the trace)");
    return;
  }
  if (v.isTuple()) {
    const auto &e = v.toTupleRef().elements();
    for (size_t i = 0; i < e.size(); ++i) check_output(state, e[i], where + "[" + std::to_string(i) + "]");
    return;
  }
  const char *what = v.isNone() ? "None" : v.isInt() ? "an int" : v.isDouble() ? "a float" : v.isBool() ? "a bool"
                   : v.isString() ? "a str" : v.isList() ? "a list" : v.isGenericDict() ? "a dict" : "an object";
  ctorch::fail(CTORCH_TYPE, "argument 'output': " + where + " is " + what +
                                "; a traced forward returns tensors or (nested) tuples of tensors (lists and dicts "
                                "are not traced strictly, numbers would be constants)");
}

torch::jit::Module finish(ctorch_tracer_s &t, const c10::IValue &result) {
  require_recording_here(t);
  check_output(*t.state, result, "output");
  torch::jit::Module m = *t.module;
  try {
    std::shared_ptr<torch::jit::Graph> graph = t.state->graph;
    graph->registerOutput(t.state->getOutput(result, 0));
    tracer::setTracingState(nullptr);
    torch::jit::FixupTraceScopeBlocks(graph, &m);
    torch::jit::NormalizeOps(graph);
    auto fn = m._ivalue()->compilation_unit()->create_function(c10::QualifiedName(*m.type()->name(), "forward"), graph);
    m.type()->addMethod(fn);
  } catch (...) {
    stop_here(t);
    throw;
  }
  t.phase = ctorch_tracer_s::FINISHED;
  t.state.reset();
  t.module.reset();
  t.inputs.clear();
  return m;
}

void add_attr(ctorch_tracer tr, const char *name, ctorch_tensor tensor, bool buffer) {
  auto &t = trace_of(tr);
  ctorch::require_ptr(name, "name");
  ctorch::require_tensor(tensor, "tensor");
  if (t.phase != ctorch_tracer_s::COLLECTING)
    ctorch::fail_arg("trace", std::string("parameters and buffers are added before ctorch_tracer_begin; the trace ") +
                                  phase_text(t.phase));
  std::string n(name);
  split_name(n, "name");
  at::Tensor x = ctorch::own(tensor);
  for (const auto &a : t.attrs) {
    if (a.name == n) ctorch::fail_arg("name", "'" + n + "' was already added");
    if (a.name.compare(0, n.size() + 1, n + ".") == 0 || n.compare(0, a.name.size() + 1, a.name + ".") == 0)
      ctorch::fail_arg("name", "'" + n + "' and '" + a.name + "' conflict (one would be a submodule of the other)");
    if (a.t.unsafeGetTensorImpl() == x.unsafeGetTensorImpl())
      ctorch::fail_arg("tensor", "this tensor was already added as '" + a.name +
                                     "' (the tracer tells tensors apart by identity)");
  }
  t.attrs.push_back({std::move(n), std::move(x), buffer});
}

char *dup_string(const std::string &s) {
  char *c = static_cast<char *>(std::malloc(s.size() + 1));
  if (!c) throw std::bad_alloc();
  std::memcpy(c, s.c_str(), s.size() + 1);
  return c;
}

}  // namespace

extern "C" {

CTORCH_API ctorch_status ctorch_tracer_new(ctorch_tracer *out, const char *name) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  std::string n = name ? name : "Traced";
  if (!is_identifier(n) || is_reserved(n))
    ctorch::fail_arg("name", "'" + n + "' is not a usable class name (an identifier, not a keyword or __dunder__)");
  auto t = std::make_unique<ctorch_tracer_s>();
  t->name = std::move(n);
  *out = t.release();
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_tracer_add_parameter(ctorch_tracer trace, const char *name, ctorch_tensor tensor) {
  CTORCH_TRY
  add_attr(trace, name, tensor, false);
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_tracer_add_buffer(ctorch_tracer trace, const char *name, ctorch_tensor tensor) {
  CTORCH_TRY
  add_attr(trace, name, tensor, true);
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_tracer_begin(ctorch_tracer trace, const ctorch_tensor *inputs, size_t n_inputs) {
  CTORCH_TRY
  auto &t = trace_of(trace);
  if (t.phase != ctorch_tracer_s::COLLECTING) wrong_phase(t);
  std::vector<at::Tensor> in = ctorch::tensor_list(inputs, n_inputs, "inputs");
  for (size_t i = 0; i < in.size(); ++i) {
    for (size_t j = 0; j < i; ++j)
      if (in[i].unsafeGetTensorImpl() == in[j].unsafeGetTensorImpl())
        ctorch::fail_arg("inputs", "element " + std::to_string(i) + " is the same tensor as element " +
                                       std::to_string(j) + " (the tracer tells inputs apart by identity; pass a clone)");
    for (const auto &a : t.attrs)
      if (in[i].unsafeGetTensorImpl() == a.t.unsafeGetTensorImpl())
        ctorch::fail_arg("inputs", "element " + std::to_string(i) + " is the trace's parameter or buffer '" + a.name + "'");
  }
  clear_orphan_here();
  if (tracer::isTracing())
    ctorch::fail(CTORCH_RUNTIME, "a trace is already recording on this thread (traces cannot be nested)");

  torch::jit::Module m = build_module(t);
  std::shared_ptr<tracer::TracingState> state(new tracer::TracingState());
  torch::jit::Graph &g = *state->graph;
  Value *self = g.insertInput(0, "self")->setType(m._ivalue()->type());
  gather(*state, self, m, "__module");
  for (size_t i = 0; i < in.size(); ++i) {
    Value *v = g.addInput("x" + std::to_string(i))->setType(c10::TensorType::create(in[i]));
    state->setValue(in[i], v);
  }
  // Nothing above touched this thread's state; from here on every op the
  // thread dispatches is recorded.
  tracer::setTracingState(state);
  t.state = std::move(state);
  t.module = std::move(m);
  t.inputs = std::move(in);
  t.thread = std::this_thread::get_id();
  t.phase = ctorch_tracer_s::TRACING;
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_tracer_finish(ctorch_module *out, ctorch_tracer trace, const ctorch_tensor *outputs,
                                             size_t n_outputs) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  auto &t = trace_of(trace);
  std::vector<at::Tensor> outs = ctorch::tensor_list(outputs, n_outputs, "outputs");
  if (outs.empty()) ctorch::fail_arg("n_outputs", "is 0; a traced forward returns at least one tensor");
  c10::IValue result;
  if (outs.size() == 1) {
    result = c10::IValue(outs[0]);
  } else {
    std::vector<c10::IValue> e(outs.begin(), outs.end());
    result = c10::IValue(c10::ivalue::Tuple::create(std::move(e)));
  }
  auto m = std::make_unique<ctorch_module_s>(ctorch_module_s{finish(t, result)});
  *out = m.release();
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_tracer_finish_value(ctorch_module *out, ctorch_tracer trace, ctorch_value output) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  auto &t = trace_of(trace);
  ctorch::require_ptr(output, "output");
  auto m = std::make_unique<ctorch_module_s>(ctorch_module_s{finish(t, output->v)});
  *out = m.release();
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_tracer_abandon(ctorch_tracer trace) {
  CTORCH_TRY
  auto &t = trace_of(trace);
  if (t.phase == ctorch_tracer_s::TRACING && t.thread != std::this_thread::get_id())
    ctorch::fail(CTORCH_RUNTIME, "the trace records on another thread; abandon it there (or free it)");
  if (t.phase != ctorch_tracer_s::FINISHED) stop_here(t);
  CTORCH_CATCH
}

CTORCH_API void ctorch_tracer_free(ctorch_tracer trace) {
  if (!ctorch::release_handle(trace, __func__)) return;
  try {
    if (trace->phase == ctorch_tracer_s::TRACING) {
      if (trace->thread == std::this_thread::get_id()) {
        stop_here(*trace);
      } else {
        add_orphan(trace->state);
      }
    }
  } catch (...) {
    // Only add_orphan allocates; without memory the other thread keeps
    // recording into a graph nobody reads until it begins a new trace.
  }
  delete trace;
}

CTORCH_API ctorch_status ctorch_tracer_active(int *out) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  clear_orphan_here();
  *out = tracer::isTracing() ? 1 : 0;
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_module_save(ctorch_module m, const char *path) {
  CTORCH_TRY
  ctorch::require_ptr(m, "m");
  ctorch::require_ptr(path, "path");
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) ctorch::fail(CTORCH_IO, std::string("cannot open '") + path + "' for writing: " + std::strerror(errno));
  m->m.save(f);
  f.close();
  if (!f) ctorch::fail(CTORCH_IO, std::string("writing '") + path + "' failed");
  CTORCH_CATCH
}

// The bytes ctorch_module_save writes (Module::save(ostream) is this
// ExportModule call), through a sink.
static void export_module(const torch::jit::Module &m, const ctorch::Sink &sink) {
  torch::jit::ExportModule(m, [&](const void *p, size_t n) -> size_t { return sink(p, n); });
}

CTORCH_API ctorch_status ctorch_module_save_to_buffer(size_t *out_len, void *buf, size_t cap, ctorch_module m) {
  CTORCH_TRY
  ctorch::require_buffer_args(out_len, buf, cap);
  ctorch::require_ptr(m, "m");
  ctorch::write_to_buffer(out_len, buf, cap, [&](const ctorch::Sink &s) { export_module(m->m, s); });
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_module_save_to_stream(ctorch_write_fn write, void *user_data, ctorch_module m) {
  CTORCH_TRY
  ctorch::require_ptr(write, "write");
  ctorch::require_ptr(m, "m");
  ctorch::write_to_stream(write, user_data, [&](const ctorch::Sink &s) { export_module(m->m, s); });
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_module_graph_str(char **out, ctorch_module m, const char *method) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  ctorch::require_ptr(m, "m");
  ctorch::require_ptr(method, "method");
  auto fn = m->m.find_method(method);
  if (!fn) ctorch::fail(CTORCH_INDEX, std::string("argument 'method': the module has no method '") + method + "'");
  *out = dup_string(fn->graph()->toString());
  CTORCH_CATCH
}

}  // extern "C"
