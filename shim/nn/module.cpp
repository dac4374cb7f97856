// The Module base class and what every module can do, each written to
// follow torch.nn.Module's Python code (named_modules' memo, state_dict's
// order, load_state_dict's checks, _apply for to(), __repr__, deepcopy), so
// that names, orders and texts are Python's.
#include "core/exclusive.h"
#include "nn/nn_internal.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include <mutex>
#include <unordered_map>
#include <unordered_set>

namespace ctorch {
namespace nn {

// ---- registration ----------------------------------------------------------

void check_name(const Module &m, const std::string &name, NameKind kind) {
  if (name.empty()) fail(CTORCH_INVALID_ARGUMENT, "a name may not be empty");
  if (name.find('.') != std::string::npos)
    fail(CTORCH_INVALID_ARGUMENT, "name '" + name + "' may not contain '.'");
  if (!m.names.count(name)) return;  // the common case, without a scan
  // Python's register_parameter / register_buffer / add_module replace an
  // attribute of their own kind and refuse (KeyError) one of another.
  if (kind != NameKind::parameter)
    for (const auto &e : m.params)
      if (e.name == name) fail(CTORCH_INVALID_ARGUMENT, "'" + name + "' is already a parameter of " + m.kind());
  if (kind != NameKind::buffer)
    for (const auto &e : m.buffers)
      if (e.name == name) fail(CTORCH_INVALID_ARGUMENT, "'" + name + "' is already a buffer of " + m.kind());
  if (kind != NameKind::child)
    for (const auto &c : m.children)
      if (c.first == name) fail(CTORCH_INVALID_ARGUMENT, "'" + name + "' is already a child of " + m.kind());
}

namespace {
// The entry named `name` in v, replaced by e in its place (Python's dict
// assignment keeps the key's position), or e appended; its index.
size_t put_entry(std::vector<Module::Entry> &v, std::unordered_set<std::string> &names, Module::Entry e) {
  for (size_t k = 0; names.count(e.name) && k < v.size(); ++k)
    if (v[k].name == e.name) {
      v[k] = std::move(e);
      return k;
    }
  names.insert(e.name);
  v.push_back(std::move(e));
  return v.size() - 1;
}
}  // namespace

size_t Module::register_parameter(const std::string &name, at::Tensor t) {
  check_name(*this, name, NameKind::parameter);
  if (t.defined() && !t.requires_grad()) t.set_requires_grad(true);
  return put_entry(params, names, {name, std::move(t), true});
}

size_t Module::register_buffer(const std::string &name, at::Tensor t, bool persistent) {
  check_name(*this, name, NameKind::buffer);
  return put_entry(buffers, names, {name, std::move(t), persistent});
}

size_t Module::register_module(const std::string &name, ModulePtr child) {
  check_name(*this, name, NameKind::child);
  for (size_t k = 0; names.count(name) && k < children.size(); ++k)
    if (children[k].first == name) {
      children[k].second = std::move(child);  // Python's setattr keeps the key's place
      return k;
    }
  children.emplace_back(name, std::move(child));
  names.insert(name);
  return children.size() - 1;
}

// ---- calling children ------------------------------------------------------

// The path of the child calls in progress on this thread (names borrowed
// from the modules, which the calls keep alive), for error messages and the
// shape log; and whether the exception in flight already carries its path.
static thread_local std::vector<const std::string *> tl_path;
static thread_local bool tl_annotated = false;
static thread_local ShapeLog *tl_shapes = nullptr;

void set_shape_log(ShapeLog *log) { tl_shapes = log; }
// Only at the outermost forward: a custom module's callback may run a
// child's forward through the C API while its own call is in progress.
void reset_error_path() {
  if (tl_path.empty()) tl_annotated = false;
}

static std::string current_path() {
  std::string p;
  for (const auto *n : tl_path) p += (p.empty() ? "" : ".") + *n;
  return p;
}

std::string shape_text(at::IntArrayRef s) {
  std::string out = "[";
  for (size_t k = 0; k < s.size(); ++k) out += (k ? ", " : "") + std::to_string(s[k]);
  return out + "]";
}

namespace {
// What a kind's forward needs per call, parsed once per kind: its default
// keyword arguments, and whether it takes more than one positional input
// (then a container's one-input call is padded with the defaults).
struct ForwardDefaults {
  Args kwargs;
  bool more_inputs = false;
};

const ForwardDefaults &forward_defaults(const Module &m) {
  // One parse per kind, kept: a lookup per call, no parse on the hot path.
  static std::mutex mu;
  static std::unordered_map<std::string, ForwardDefaults> cache;
  std::lock_guard<std::mutex> g(mu);
  auto it = cache.find(m.kind());
  if (it != cache.end()) return it->second;
  ForwardDefaults d;
  if (const Kind *k = find_kind(m.kind())) {
    const Sig &sig = sig_of(k->forward);
    d.kwargs = parse_args_sig(sig, "", m.kind(), true);
    size_t positional = 0;
    for (const auto &p : sig.params) positional += !p.kw_only;
    d.more_inputs = positional > 1;
  }
  return cache.emplace(m.kind(), std::move(d)).first->second;
}
}  // namespace

const Args &default_kwargs(const Module &m) { return forward_defaults(m).kwargs; }

std::string missing_meta_kernel(const c10::Error &e) {
  std::string m = e.what_without_backtrace();
  const std::string head = "Could not run '";
  size_t a = m.find(head);
  if (a != std::string::npos && m.find("'Meta' backend") != std::string::npos) {
    size_t b = m.find('\'', a + head.size());
    return m.substr(a + head.size(), b == std::string::npos ? std::string::npos : b - a - head.size());
  }
  // 1.13's convolution: NotImplementedError from convolution_overrideable.
  if (dynamic_cast<const c10::NotImplementedError *>(&e) || m.find("not implemented") != std::string::npos) {
    size_t nl = m.find('\n');
    return m.substr(0, nl);
  }
  return "";
}

// Kinds whose output has their input's shape: in a shape check, when
// libtorch has no meta kernel for them (1.13: relu, ...), the input's shape
// is their output's, so the check can go on past them.
static bool keeps_shape(const std::string &kind) {
  static const char *const kinds[] = {"ReLU",    "ReLU6",    "LeakyReLU", "GELU",      "SiLU",    "ELU",
                                      "SELU",    "CELU",     "Hardswish", "Hardsigmoid", "Mish", "Tanh",
                                      "Sigmoid", "Softmax",  "LogSoftmax", "Dropout",  "Dropout2d", "Identity",
                                      "PReLU",   "Hardtanh", "Softplus",  "Tanhshrink"};
  for (const char *k : kinds)
    if (kind == k) return true;
  return false;
}

namespace {
// Pops the path entry however the child's forward ends.
struct PathEntry {
  explicit PathEntry(const std::string *name) { tl_path.push_back(name); }
  ~PathEntry() { tl_path.pop_back(); }
  PathEntry(const PathEntry &) = delete;
  PathEntry &operator=(const PathEntry &) = delete;
};
}  // namespace

at::Tensor Module::call(size_t child, const at::Tensor &x) {
  if (child >= children.size() || !children[child].second)
    fail(CTORCH_INDEX, kind() + " has no child " + std::to_string(child));
  Module &c = *children[child].second;
  PathEntry entry(&children[child].first);
  std::vector<at::Tensor> out;
  // The innermost module a failure passes through adds its path, kind and
  // input shape (once: the outer calls see tl_annotated).
  auto where = [&]() {
    std::string w = "in module '" + current_path() + "' (" + c.kind() + ")";
    if (x.defined()) w += ", input shape " + shape_text(x.sizes());
    return w;
  };
  try {
    if (auto *tf = dynamic_cast<TextForward *>(&c)) {
      out = tf->forward_text({x}, "");
    } else {
      // A child whose forward takes more inputs (TransformerEncoderLayer's
      // masks) gets its defaults for the rest, as from ctorch_nn_module_forward
      // (checked only for those kinds: this is every container step's path).
      const ForwardDefaults &fd = forward_defaults(c);
      std::vector<at::Tensor> in{x};
      if (fd.more_inputs) check_forward_inputs(c, in);
      out = c.forward(in, fd.kwargs);
    }
  } catch (c10::Error &e) {
    if (tl_shapes && x.defined() && keeps_shape(c.kind()) && !missing_meta_kernel(e).empty()) {
      out = {x};
      tl_shapes->lines.emplace_back(current_path(), x.sizes().vec());
      return x;
    }
    if (!tl_annotated) {
      tl_annotated = true;
      e.add_context(where());
    }
    throw;
  } catch (const StatusError &e) {
    if (tl_annotated) throw;
    tl_annotated = true;
    throw StatusError(e.status(), std::string(e.what()) + " (" + where() + ")");
  } catch (const std::bad_alloc &) {
    throw;  // keeps its own status (OUT_OF_MEMORY)
  } catch (const std::exception &e) {
    // Not libtorch's own error type: with torch 2.x's Python imported in the
    // process, meta kernels written in Python raise Python's errors. In a
    // shape check that is the input not fitting (VALUE, as for c10::Error).
    if (tl_annotated) throw;
    tl_annotated = true;
    throw StatusError(tl_shapes ? CTORCH_VALUE : CTORCH_RUNTIME,
                      std::string(tl_shapes ? "input does not fit: " : "") + e.what() + "\n" + where());
  }
  if (out.empty()) fail(CTORCH_VALUE, "module '" + current_path() + "' (" + c.kind() + ") returned no output");
  if (tl_shapes && out[0].defined()) tl_shapes->lines.emplace_back(current_path(), out[0].sizes().vec());
  return out[0];
}

std::vector<at::Tensor> run_forward(Module &m, const std::vector<at::Tensor> &in, const char *kwargs) {
  if (auto *tf = dynamic_cast<TextForward *>(&m)) return tf->forward_text(in, kwargs ? kwargs : "");
  if (!kwargs || !*kwargs) return m.forward(in, default_kwargs(m));
  const Kind *k = find_kind(m.kind());
  if (!k) return m.forward(in, Args());
  return m.forward(in, parse_args_sig(sig_of(k->forward), kwargs, m.kind() + ".forward", true));
}

// ---- traversal -------------------------------------------------------------

static void walk(Module &m, const std::string &prefix, std::unordered_set<const Module *> &seen,
                 std::vector<std::pair<std::string, Module *>> &out) {
  if (!seen.insert(&m).second) return;
  out.emplace_back(prefix, &m);
  for (auto &c : m.children)
    if (c.second) walk(*c.second, prefix.empty() ? c.first : prefix + "." + c.first, seen, out);
}

std::vector<std::pair<std::string, Module *>> named_modules(Module &m) {
  std::unordered_set<const Module *> seen;
  std::vector<std::pair<std::string, Module *>> out;
  walk(m, "", seen, out);
  return out;
}

static std::string join(const std::string &prefix, const std::string &name) {
  return prefix.empty() ? name : prefix + "." + name;
}

Named named_tensors(Module &m, bool params, bool recurse) {
  Named out;
  std::unordered_set<const c10::TensorImpl *> seen;
  auto add = [&](const std::string &prefix, Module &mod) {
    for (const auto &e : params ? mod.params : mod.buffers)
      if (e.t.defined() && seen.insert(e.t.unsafeGetTensorImpl()).second) out.emplace_back(join(prefix, e.name), e.t);
  };
  if (!recurse) {
    add("", m);
    return out;
  }
  for (auto &pm : named_modules(m)) add(pm.first, *pm.second);
  return out;
}

static void save_to(Module &m, const std::string &prefix, Named &out) {
  for (const auto &e : m.params)
    if (e.t.defined()) out.emplace_back(prefix + e.name, e.t.detach());
  for (const auto &e : m.buffers)
    if (e.t.defined() && e.persistent) out.emplace_back(prefix + e.name, e.t.detach());
  for (auto &c : m.children)
    if (c.second) save_to(*c.second, prefix + c.first + ".", out);
}

Named state_dict(Module &m) {
  Named out;
  save_to(m, "", out);
  return out;
}

// ---- load_state_dict -------------------------------------------------------

namespace {
struct Slot {
  std::string key;
  Module *owner;
  at::Tensor *t;
};
}  // namespace

static void slots_of(Module &m, const std::string &prefix, std::vector<Slot> &out) {
  for (auto &e : m.params)
    if (e.t.defined()) out.push_back({prefix + e.name, &m, &e.t});
  for (auto &e : m.buffers)
    if (e.t.defined() && e.persistent) out.push_back({prefix + e.name, &m, &e.t});
  for (auto &c : m.children)
    if (c.second) slots_of(*c.second, prefix + c.first + ".", out);
}

std::string load_state_dict(Module &m, const Named &sd, bool strict) {
  std::vector<Slot> slots;
  slots_of(m, "", slots);
  std::unordered_map<std::string, size_t> given;
  for (size_t k = 0; k < sd.size(); ++k) given.emplace(sd[k].first, k);
  std::unordered_set<std::string> expected;
  std::vector<std::string> missing, unexpected, mismatched;
  std::vector<std::pair<at::Tensor *, const at::Tensor *>> copies;
  std::vector<Module *> touched;
  for (const auto &s : slots) {
    expected.insert(s.key);
    auto it = given.find(s.key);
    if (it == given.end()) {
      missing.push_back(s.key);
      continue;
    }
    const at::Tensor &src = sd[it->second].second;
    if (!src.defined() || !src.sizes().equals(s.t->sizes())) {
      mismatched.push_back("size mismatch for " + s.key + ": copying a param with shape " +
                           (src.defined() ? shape_text(src.sizes()) : std::string("None")) +
                           " from checkpoint, the shape in current model is " + shape_text(s.t->sizes()));
      continue;
    }
    copies.emplace_back(s.t, &src);
    if (touched.empty() || touched.back() != s.owner) touched.push_back(s.owner);
  }
  for (const auto &e : sd)
    if (!expected.count(e.first)) unexpected.push_back(e.first);
  auto quoted = [](const std::vector<std::string> &v) {
    std::string out;
    for (const auto &k : v) out += (out.empty() ? "\"" : ", \"") + k + "\"";
    return out;
  };
  std::string err;
  if (strict && !unexpected.empty()) err += "\n\tUnexpected key(s) in state_dict: " + quoted(unexpected) + ".";
  if (strict && !missing.empty()) err += "\n\tMissing key(s) in state_dict: " + quoted(missing) + ".";
  for (const auto &mm : mismatched) err += "\n\t" + mm + ".";
  if (!err.empty()) fail(CTORCH_VALUE, "Error(s) in loading state_dict for " + m.kind() + ":" + err);
  {
    at::NoGradGuard g;
    for (auto &c : copies) c.first->copy_(*c.second);
  }
  for (Module *t : touched) t->tensors_changed();
  std::string report;
  for (const auto &k : missing) report += "missing: " + k + "\n";
  for (const auto &k : unexpected) report += "unexpected: " + k + "\n";
  return report;
}

// ---- modes and in-place changes -------------------------------------------

void set_train(Module &m, bool on) {
  for (auto &pm : named_modules(m)) pm.second->set_training(on);
}

// Python's Module._apply(fn) with to()'s fn: each distinct tensor converted
// once (a tensor shared by two modules stays shared); a parameter stays a
// leaf with its requires_grad, its grad converted alike.
void module_to(Module &m, c10::optional<c10::Device> device, c10::optional<c10::ScalarType> dtype) {
  if (dtype && !(at::isFloatingType(*dtype) || at::isComplexType(*dtype)))
    fail(CTORCH_INVALID_ARGUMENT, "nn.Module.to only accepts floating point or complex dtypes, but got desired dtype=" +
                                      std::string("torch.") + dtype_name(*dtype));
  auto fn = [&](const at::Tensor &t) {
    c10::optional<c10::ScalarType> dt;
    if (dtype && (t.is_floating_point() || t.is_complex())) dt = *dtype;
    return t.to(device.value_or(t.device()), dt.value_or(t.scalar_type()));
  };
  std::unordered_map<const c10::TensorImpl *, at::Tensor> memo;
  at::NoGradGuard g;
  for (auto &pm : named_modules(m)) {
    Module &mod = *pm.second;
    bool changed = false;
    for (auto &e : mod.params) {
      if (!e.t.defined()) continue;
      auto it = memo.find(e.t.unsafeGetTensorImpl());
      if (it == memo.end()) {
        at::Tensor applied = fn(e.t);
        at::Tensor next = e.t;
        if (!applied.is_same(e.t)) {
          next = applied.detach();
          next.set_requires_grad(e.t.requires_grad());
          if (e.t.grad().defined()) next.mutable_grad() = fn(e.t.grad());
        }
        it = memo.emplace(e.t.unsafeGetTensorImpl(), next).first;
      }
      changed |= !it->second.is_same(e.t);
      e.t = it->second;
    }
    for (auto &e : mod.buffers) {
      if (!e.t.defined()) continue;
      auto it = memo.find(e.t.unsafeGetTensorImpl());
      if (it == memo.end()) it = memo.emplace(e.t.unsafeGetTensorImpl(), fn(e.t)).first;
      changed |= !it->second.is_same(e.t);
      e.t = it->second;
    }
    if (changed) mod.tensors_changed();
  }
}

void set_requires_grad(Module &m, bool on) {
  for (auto &p : named_tensors(m, true, true)) p.second.set_requires_grad(on);
}

// Python's zero_grad: drop, or detach/zero in place.
void zero_grad(Module &m, bool set_to_none) {
  auto params = named_tensors(m, true, true);
  std::vector<at::Tensor> ts;
  for (auto &p : params) ts.push_back(p.second);
  // A backward on another thread writing these .grads waits (core/exclusive.h).
  ctorch::GradLocks locks(ts);
  for (auto &p : params) {
    at::Tensor &g = p.second.mutable_grad();
    if (!g.defined()) continue;
    if (set_to_none) {
      g.reset();
      continue;
    }
    if (g.grad_fn()) g = g.detach();
    else g.set_requires_grad(false);
    g.zero_();
  }
}

int64_t num_parameters(Module &m, bool only_trainable) {
  int64_t n = 0;
  for (auto &p : named_tensors(m, true, true))
    if (!only_trainable || p.second.requires_grad()) n += p.second.numel();
  return n;
}

// ---- repr ------------------------------------------------------------------

// Python's _addindent(s, 2): every line after the first indented.
static std::string add_indent(const std::string &s) {
  std::string out;
  for (char c : s) {
    out += c;
    if (c == '\n') out += "  ";
  }
  return out;
}

std::string repr(const Module &m);

// ModuleList.__repr__ in PyTorch >= 2.0 collapses runs of equal children
// ("(0-2): 3 x Linear(...)"); 1.13 prints Module's generic repr.
static std::string repr_module_list(const Module &m) {
  std::vector<std::string> reprs;
  for (const auto &c : m.children) reprs.push_back(c.second ? repr(*c.second) : "None");
  if (reprs.empty()) return m.kind() + "()";
  std::vector<std::string> lines;
  size_t start = 0;
  for (size_t k = 1; k <= reprs.size(); ++k) {
    if (k < reprs.size() && reprs[k] == reprs[start]) continue;
    std::string local = "(" + std::to_string(start) + "): " + reprs[start];
    if (k - 1 != start)
      local = "(" + std::to_string(start) + "-" + std::to_string(k - 1) + "): " + std::to_string(k - start) + " x " +
              reprs[start];
    lines.push_back(add_indent(local));
    start = k;
  }
  std::string out = m.kind() + "(";
  for (size_t k = 0; k < lines.size(); ++k) out += "\n  " + lines[k];
  return out + "\n)";
}

std::string repr(const Module &m) {
#if CTORCH_TORCH_AT_LEAST(2, 0)
  if (m.kind() == "ModuleList") return repr_module_list(m);
#endif
  std::vector<std::string> extra_lines;
  std::string extra = m.extra_repr();
  if (!extra.empty()) {
    size_t start = 0;
    for (size_t k = 0; k <= extra.size(); ++k)
      if (k == extra.size() || extra[k] == '\n') {
        extra_lines.push_back(extra.substr(start, k - start));
        start = k + 1;
      }
  }
  std::vector<std::string> child_lines;
  for (const auto &c : m.children)
    child_lines.push_back("(" + c.first + "): " + add_indent(c.second ? repr(*c.second) : "None"));
  std::string out = m.kind() + "(";
  if (!extra_lines.empty() || !child_lines.empty()) {
    if (extra_lines.size() == 1 && child_lines.empty()) {
      out += extra_lines[0];
    } else {
      out += "\n  ";
      bool first = true;
      for (const auto *v : {&extra_lines, &child_lines})
        for (const auto &l : *v) {
          if (!first) out += "\n  ";
          out += l;
          first = false;
        }
      out += "\n";
    }
  }
  return out + ")";
}
#if !CTORCH_TORCH_AT_LEAST(2, 0)
// Kept compiled on 1.13 so the 2.x path cannot rot unnoticed.
[[maybe_unused]] static auto *const repr_module_list_ref = &repr_module_list;
#endif

// ---- deepcopy ----------------------------------------------------------------

namespace {
struct CopyMemo {
  bool to_meta = false;
  std::unordered_map<const Module *, ModulePtr> modules;
  std::unordered_map<const c10::TensorImpl *, at::Tensor> tensors;
};
}  // namespace

static at::Tensor copy_tensor(const at::Tensor &t, CopyMemo &memo) {
  if (!t.defined()) return t;
  auto it = memo.tensors.find(t.unsafeGetTensorImpl());
  if (it != memo.tensors.end()) return it->second;
  at::Tensor c;
  {
    at::NoGradGuard g;
    if (memo.to_meta) c = at::empty_strided(t.sizes(), t.strides(), t.options().device(c10::kMeta));
    else c = t.detach().clone(at::MemoryFormat::Preserve);
  }
  c.set_requires_grad(t.requires_grad());
  memo.tensors.emplace(t.unsafeGetTensorImpl(), c);
  return c;
}

static ModulePtr copy_module(const Module &m, CopyMemo &memo) {
  auto it = memo.modules.find(&m);
  if (it != memo.modules.end()) return it->second;
  ModulePtr c = m.shallow_copy();
  memo.modules.emplace(&m, c);
  for (auto &e : c->params) e.t = copy_tensor(e.t, memo);
  for (auto &e : c->buffers) e.t = copy_tensor(e.t, memo);
  for (auto &ch : c->children)
    if (ch.second) ch.second = copy_module(*ch.second, memo);
  c->tensors_changed();
  return c;
}

ModulePtr clone(const Module &m, bool to_meta) {
  CopyMemo memo;
  memo.to_meta = to_meta;
  return copy_module(m, memo);
}

// ---- lookups -----------------------------------------------------------------

bool contains(const Module &m, const Module *target) {
  if (&m == target) return true;
  for (const auto &c : m.children)
    if (c.second && contains(*c.second, target)) return true;
  return false;
}

ModulePtr find_module(const ModulePtr &m, const std::string &path) {
  ModulePtr cur = m;
  size_t start = 0;
  while (cur && start < path.size()) {
    size_t dot = path.find('.', start);
    std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    ModulePtr next;
    for (const auto &c : cur->children)
      if (c.first == part) next = c.second;
    cur = next;
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return cur;
}

Module::Entry *find_entry(Module &m, const std::string &path, bool *is_param) {
  size_t dot = path.rfind('.');
  Module *owner = &m;
  ModulePtr keep;
  if (dot != std::string::npos) {
    keep = find_module(m.shared_from_this(), path.substr(0, dot));
    if (!keep) return nullptr;
    owner = keep.get();
  }
  std::string leaf = dot == std::string::npos ? path : path.substr(dot + 1);
  for (auto &e : owner->params)
    if (e.name == leaf) {
      if (is_param) *is_param = true;
      return &e;
    }
  for (auto &e : owner->buffers)
    if (e.name == leaf) {
      if (is_param) *is_param = false;
      return &e;
    }
  return nullptr;
}

}  // namespace nn
}  // namespace ctorch
