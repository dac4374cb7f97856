// TorchScript without side effects: before torch::jit::load runs
// any of an archive's code (the unpickler calls each object's __setstate__
// while it reads data.pkl, so "load" already runs code), the archive's code
// is compiled here, into a scratch CompilationUnit, by the same importer
// libtorch uses (torch::jit::SourceImporter), and every graph of every
// function and method is scanned for operators that reach outside the
// process. Nothing is run: the constant table is unpickled with an object
// loader that never calls __setstate__, and data.pkl is not read at all.
//
// Why graphs and not the source text: the importer resolves every call
// (torch.save, torch.ops.aten.save, an alias bound to a builtin, a fork of
// one) to the operator node it runs, so what is scanned is what would run.
// Every class in code/ is compiled, not only those data.pkl names, so code
// the module could reach through any path is covered. Code that cannot be
// compiled cannot be checked: it is refused (libtorch would refuse it too
// when it is reachable).
//
// Built-in classes: TorchScript reaches C++ classes registered
// with libtorch (torch.classes.NS.NAME) through their constructors, their
// methods and their __setstate__ (run by the unpickler for an object in
// data.pkl), none of which is an operator. Every type a graph handles (each
// value's, each class attribute's, contained types included) and every
// class a pickle record names is checked against kAllowedClasses: classes
// that only compute (packed weights); any other registered class, known or
// not, is refused (see kClassReasons for the audited ones).
//
// Code that runs during the load ("a load that never returns"):
// every __setstate__, with what it calls inlined, may only loop a constant
// number of times (for i in range(10)); a while loop or a loop over data
// is refused, so a load returns in bounded time without a watchdog thread.
#include "text/text.h"
#include "jit_archive_check.h"

#include <caffe2/serialize/inline_container.h>
#include <torch/csrc/jit/api/compilation_unit.h>
#include <torch/csrc/jit/api/function_impl.h>
#include <torch/csrc/jit/frontend/error_report.h>
#include <torch/csrc/jit/frontend/parser.h>
#include <torch/csrc/jit/frontend/source_range.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/passes/inliner.h>
#include <torch/csrc/jit/serialization/import_read.h>
#include <torch/csrc/jit/serialization/import_source.h>

#include <cstring>
#include <limits>
#include <sstream>
#include <cctype>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

namespace ctorch {
namespace {

using namespace torch::jit;

using text::ends_with;
bool ends_with_pkl(const std::string &s) { return ends_with(s, ".pkl"); }

// Operators refused by name: what each does outside the process.
struct Refusal {
  const char *op;  // qualified name, or "ns::" for a whole namespace
  const char *what;
};
const Refusal kRefused[] = {
    {"aten::save", "writes a file"},
    {"aten::from_file", "reads (maps) a file"},
    {"debugprims::load_tensor", "reads tensors from files"},
    {"prim::rpc_async", "calls another process (torch.distributed.rpc)"},
    {"prim::rpc_sync", "calls another process (torch.distributed.rpc)"},
    {"prim::rpc_remote", "calls another process (torch.distributed.rpc)"},
    {"c10d::", "exchanges data with other processes (torch.distributed)"},
    {"_c10d_functional::", "exchanges data with other processes (torch.distributed)"},
    {"_c10d_functional_autograd::", "exchanges data with other processes (torch.distributed)"},
    {"symm_mem::", "exchanges data with other processes (symmetric memory)"},
};

// Any other operator (a later libtorch's, a custom library's) with a string
// argument named as a file is refused too.
bool names_a_file(const std::string &arg) {
  static const char *names[] = {"filename", "file_name", "filepath", "file_path", "path", "file", "f", "dirname",
                                "directory"};
  for (const char *n : names)
    if (arg == n) return true;
  return false;
}

const char *refusal(const Node *n, std::string &buf) {
  std::string q = n->kind().toQualString();
  for (const Refusal &r : kRefused) {
    size_t len = std::strlen(r.op);
    bool ns = len > 2 && r.op[len - 1] == ':';
    if (ns ? q.compare(0, len, r.op) == 0 : q == r.op) return r.what;
  }
  if (const c10::FunctionSchema *s = n->maybeSchema()) {
    for (const c10::Argument &a : s->arguments()) {
      c10::TypePtr t = a.type();
      if (auto o = t->cast<c10::OptionalType>()) t = o->getElementType();
      if (t->kind() == c10::TypeKind::StringType && names_a_file(a.name())) {
        buf = "takes a file name ('" + a.name() + "')";
        return buf.c_str();
      }
    }
  }
  return nullptr;
}

// Built-in (C++) classes that only compute: packed weights of quantized,
// sparse, XNNPACK, oneDNN (mkldnn) and quantized RNN modules, whose
// __setstate__ repacks tensors, and the profiler's record_function scope
// (in-process bookkeeping). Names as torch.classes spells them.
const char *const kAllowedClasses[] = {
    "quantized.LinearPackedParamsBase", "quantized.Conv2dPackedParamsBase", "quantized.Conv3dPackedParamsBase",
    "quantized.EmbeddingPackedParamsBase", "sparse.LinearPackedParamsBase", "xnnpack.LinearOpContext",
    "xnnpack.Conv2dOpContext", "xnnpack.TransposeConv2dOpContext", "mkldnn.ConvOpContext", "rnn.CellParamsBase",
    "profiler._RecordFunction",
};
// Why the audited classes of libtorch 1.13.1 and 2.15.0 are refused.
const Refusal kClassReasons[] = {
    {"_nnapi.", "loads a native library (dlopen of libneuralnetworks.so) when initialised"},
    {"c10d.", "exchanges data with other processes (torch.distributed)"},
    {"dist_c10d.", "exchanges data with other processes (torch.distributed)"},
    {"rpc.", "calls other processes (torch.distributed.rpc)"},
    {"dist_rpc.", "calls other processes (torch.distributed.rpc)"},
    {"cuda.", "initialises CUDA (loading its driver libraries) and synchronises devices"},
    {"profiling.", "switches process-wide TorchScript profiling on and off"},
    {"backendutils.", "belongs to backend delegation (code compiled elsewhere)"},
    {"StaticRuntime.", "configures the static runtime (not a computation)"},
};
constexpr char kClassPrefix[] = "__torch__.torch.classes.";

// "" if the built-in class NS.NAME is allowed, else the name.
std::string refused_class_name(const std::string &n) {
  for (const char *a : kAllowedClasses)
    if (n == a) return "";
  return n;
}

// The refused built-in class a type is or contains, else "". Memoised per
// type for one check (a module's type holds its submodules' and is every
// method's first argument): the unit keeps the types alive meanwhile.
thread_local std::unordered_map<const c10::Type *, std::string> *type_memo = nullptr;
std::string refused_class(const c10::TypePtr &t, int depth = 0) {
  if (!t || depth > 64) return "";
  if (type_memo) {
    auto hit = type_memo->find(t.get());
    if (hit != type_memo->end()) return hit->second;
  }
  std::string r;
  if (auto c = t->cast<c10::ClassType>()) {
    const std::string q = c->name() ? c->name()->qualifiedName() : "";
    if (q.compare(0, sizeof kClassPrefix - 1, kClassPrefix) == 0) r = refused_class_name(q.substr(sizeof kClassPrefix - 1));
  }
  if (r.empty())
    for (const c10::TypePtr &sub : t->containedTypes()) {
      r = refused_class(sub, depth + 1);
      if (!r.empty()) break;
    }
  if (type_memo) type_memo->emplace(t.get(), r);
  return r;
}

std::string class_reason(const std::string &n) {
  for (const Refusal &r : kClassReasons)
    if (n.compare(0, std::strlen(r.op), r.op) == 0) return r.what;
  return "is not on ctorch's list of built-in classes that only compute";
}

[[noreturn]] void refuse_class(const std::string &cls, const std::string &where) {
  fail(CTORCH_VALUE, "its code uses the built-in class torch.classes." + cls + ", which " + class_reason(cls) + ", in " +
                         where +
                         "; built-in TorchScript classes other than packed weights (quantized, sparse, xnnpack, "
                         "mkldnn, rnn) and profiler._RecordFunction are refused unless the load allows them "
                         "(ctorch_module_load_ex with CTORCH_MODULE_LOAD_ALLOW_CLASSES)");
}

[[noreturn]] void refuse(const Node *n, const std::string &fn, const char *what) {
  std::ostringstream s;
  s << "its code calls " << n->kind().toQualString() << ", which " << what << ", in " << fn;
  const SourceRange &r = n->sourceRange();
  if (auto flc = r.file_line_col())
    s << " (" << std::get<0>(*flc) << ", line " << std::get<1>(*flc) << ")";
  s << ":\n";
  if (r.source()) r.highlight(s);
  s << "TorchScript code that reads or writes files or talks to other processes is refused unless the load "
       "allows it (ctorch_module_load_ex with CTORCH_MODULE_LOAD_ALLOW_IO)";
  fail(CTORCH_VALUE, s.str());
}

std::string at_line(const Node *n, const std::string &fn) {
  std::ostringstream s;
  s << fn;
  if (auto flc = n->sourceRange().file_line_col()) s << " (" << std::get<0>(*flc) << ", line " << std::get<1>(*flc) << ")";
  return s.str();
}

void scan_block(const Block *b, const std::string &fn, bool classes) {
  if (classes)
    for (const Value *v : b->inputs()) {
      std::string c = refused_class(v->type());
      if (!c.empty()) refuse_class(c, fn);
    }
  for (const Node *n : b->nodes()) {
    std::string buf;
    if (const char *what = refusal(n, buf)) refuse(n, fn, what);
    if (classes) {
      for (const Value *v : n->inputs()) {
        std::string c = refused_class(v->type());
        if (!c.empty()) refuse_class(c, at_line(n, fn));
      }
      for (const Value *v : n->outputs()) {
        std::string c = refused_class(v->type());
        if (!c.empty()) refuse_class(c, at_line(n, fn));
      }
    }
    for (const Block *sub : n->blocks()) scan_block(sub, fn, classes);
    for (Symbol a : n->attributeNames()) {
      if (n->kindOf(a) == AttributeKind::g) {
        scan_block(n->g(a)->block(), fn, classes);
      } else if (n->kindOf(a) == AttributeKind::gs) {
        for (const auto &g : n->gs(a)) scan_block(g->block(), fn, classes);
      }
    }
  }
}

// ---- code that runs during the load: loops bounded by constants ----------------

// At most this many iterations of one loop, and of nested loops together.
constexpr int64_t kMaxLoadLoopTrips = int64_t{1} << 24;

// A loop's trip count when it is a constant: range(c), range(a, b[, s])
// of constants, or a literal count; -1 otherwise (a while loop's count is
// INT64_MAX, a loop over a list's is len(list)).
int64_t constant_trips(const Value *v) {
  auto as_int = [](const Value *x, int64_t *out) {
    if (x->node()->kind() != prim::Constant || !x->type()->cast<c10::IntType>()) return false;
    *out = x->node()->i(attr::value);
    return true;
  };
  int64_t n = 0;
  // A while loop's count is INT64_MAX (its condition ends it, if anything does).
  if (as_int(v, &n)) return n == std::numeric_limits<int64_t>::max() ? -1 : n < 0 ? 0 : n;
  const Node *r = v->node();
  if (r->kind() == aten::__range_length && r->inputs().size() == 3) {
    int64_t lo, hi, step;
    if (!as_int(r->input(0), &lo) || !as_int(r->input(1), &hi) || !as_int(r->input(2), &step) || step == 0) return -1;
    long double span = static_cast<long double>(hi) - lo;
    long double k = step > 0 ? (span + step - 1) / step : (span + step + 1) / step;
    if (k <= 0) return 0;
    return k > static_cast<long double>(std::numeric_limits<int64_t>::max() / 2) ? -1 : static_cast<int64_t>(k);
  }
  return -1;
}

[[noreturn]] void refuse_load_code(const Node *n, const std::string &fn, const std::string &what) {
  std::ostringstream s;
  s << "its code that runs while it loads (" << fn << ") " << what;
  if (auto flc = n->sourceRange().file_line_col())
    s << " (" << std::get<0>(*flc) << ", line " << std::get<1>(*flc) << ")";
  s << ":\n";
  if (n->sourceRange().source()) n->sourceRange().highlight(s);
  s << "a load must return: code run during it (each __setstate__ and what it calls) may only loop a constant "
       "number of times (at most " << kMaxLoadLoopTrips << " iterations, nested loops together), unless the load "
       "allows it (ctorch_module_load_ex with CTORCH_MODULE_LOAD_ALLOW_UNBOUNDED_LOOPS)";
  fail(CTORCH_VALUE, s.str());
}

void scan_load_block(const Block *b, const std::string &fn, int64_t outer) {
  for (const Node *n : b->nodes()) {
    int64_t inner = outer;
    if (n->kind() == prim::Loop) {
      int64_t k = constant_trips(n->input(0));
      if (k < 0) refuse_load_code(n, fn, "has a loop whose number of iterations is not a constant (a while loop, or a loop over data)");
      if (k > 0 && outer > kMaxLoadLoopTrips / k)
        refuse_load_code(n, fn, "loops more than " + std::to_string(kMaxLoadLoopTrips) + " times");
      inner = outer * std::max<int64_t>(k, 1);
    } else if (n->kind() == prim::CallFunction) {
      refuse_load_code(n, fn, "calls a function whose code is not known before it runs");
    } else if (n->kind() == prim::CallMethod && n->input(0)->type()->cast<c10::InterfaceType>()) {
      refuse_load_code(n, fn, "calls an interface method, whose code is not known before it runs");
    }
    for (const Block *sub : n->blocks()) scan_load_block(sub, fn, inner);
    for (Symbol a : n->attributeNames()) {
      if (n->kindOf(a) == AttributeKind::g) scan_load_block(n->g(a)->block(), fn, inner);
      else if (n->kindOf(a) == AttributeKind::gs)
        for (const auto &g : n->gs(a)) scan_load_block(g->block(), fn, inner);
    }
  }
}

// A __setstate__ with every call to TorchScript code inlined (a copy: the
// unit's graphs stay as compiled), scanned for loops.
void scan_load_function(Function &f) {
  auto g = toGraphFunction(f).graph()->copy();
  Inline(*g);
  scan_load_block(g->block(), f.qualname().qualifiedName(), 1);
}

// load_fns collects the __setstate__s, scanned once every function is defined
// (inlining needs the callees' graphs).
void scan_function(Function &f, std::unordered_set<const Function *> &seen, uint32_t allow,
                   std::vector<Function *> &load_fns) {
  if (!seen.insert(&f).second || !f.isGraphFunction()) return;
  f.ensure_defined();
  scan_block(toGraphFunction(f).graph()->block(), f.qualname().qualifiedName(),
             !(allow & CTORCH_MODULE_LOAD_ALLOW_CLASSES));
  if (!(allow & CTORCH_MODULE_LOAD_ALLOW_UNBOUNDED_LOOPS) && f.name() == "__setstate__") load_fns.push_back(&f);
}

// Pickle records (data.pkl, constants.pkl, ...) name the class of each
// object they hold; the unpickler runs a built-in class's C++ __setstate__.
void scan_pickle_classes(caffe2::serialize::PyTorchStreamReader &reader) {
  const std::string pre = kClassPrefix;
  for (const std::string &record : reader.getAllRecords()) {
    if (!ends_with_pkl(record)) continue;
    at::DataPtr data;
    size_t size = 0;
    std::tie(data, size) = reader.getRecord(record);
    const std::string bytes(static_cast<const char *>(data.get()), size);
    for (size_t at = bytes.find(pre); at != std::string::npos; at = bytes.find(pre, at + 1)) {
      // GLOBAL writes "__torch__.torch.classes.NS\nNAME\n", a type tag
      // "...classes.NS.NAME]": the class is NS.NAME either way. A name cut
      // short (written some other way) is not on the list: refused.
      std::string n;
      for (size_t e = at + pre.size(); e < bytes.size(); ++e) {
        char c = bytes[e];
        if (c == '\n') {
          if (n.find('.') != std::string::npos) break;
          c = '.';
        } else if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.') {
          break;
        }
        n += c;
      }
      while (!n.empty() && n.back() == '.') n.pop_back();
      std::string r = n.empty() ? std::string("(unnamed)") : refused_class_name(n);
      if (!r.empty()) refuse_class(r, "the pickle record '" + record + "'");
    }
  }
}


}  // namespace

void check_torchscript_side_effects(caffe2::serialize::PyTorchStreamReader &reader, uint32_t allow) {
  std::unordered_map<const c10::Type *, std::string> memo;
  type_memo = &memo;
  struct Reset {
    ~Reset() { type_memo = nullptr; }
  } reset;
  if (reader.hasRecord("model.json"))
    fail(CTORCH_VALUE, "it is in the legacy (model.json) format, whose code ctorch cannot check for side effects; "
                       "load it with CTORCH_MODULE_LOAD_ALLOW_IO if it is trusted");
  std::vector<std::string> classes;
  for (const std::string &record : reader.getAllRecords()) {
    if (record.compare(0, 5, "code/") != 0 || !ends_with(record, ".py")) continue;
    at::DataPtr data;
    size_t size = 0;
    std::tie(data, size) = reader.getRecord(record);
    // The top-level classes, as the importer names them ("code/__torch__/a.py"
    // class M -> "__torch__.a.M"); free functions are compiled when a class calls them.
    for_each_source_class(record, static_cast<const char *>(data.get()), size,
                          [&classes](const ClassDef &cls, const std::string &qualifier) {
                            classes.push_back(qualifier + "." + cls.name().name());
                          });
  }
  auto cu = std::make_shared<CompilationUnit>();
  std::vector<c10::IValue> constants;
  SourceImporter importer(
      cu, &constants,
      [&reader](const std::string &qualifier) -> std::shared_ptr<Source> {
        std::string path = "code/" + qualifier;
        for (char &c : path)
          if (c == '.') c = '/';
        path += ".py";
        if (!reader.hasRecord(path)) return nullptr;
        at::DataPtr data;
        size_t size = 0;
        std::tie(data, size) = reader.getRecord(path);
        return std::make_shared<Source>(std::string(static_cast<const char *>(data.get()), size), path, 1);
      },
      reader.version());
  TypeResolver resolve = [&](const c10::QualifiedName &qn) { return c10::StrongTypePtr(cu, importer.loadType(qn)); };
  // Objects in the constant table keep their slots empty: their types are
  // what compiling needs; their __setstate__ must not run.
  ObjLoader no_setstate = [](const at::StrongTypePtr &type, const c10::IValue &) {
    auto cls = type.type_->expect<at::ClassType>();
    return c10::ivalue::Object::create(type, cls->numAttributes());
  };
  if (reader.hasRecord("constants.pkl")) {
    c10::IValue table =
        readArchiveAndTensors("constants", "", "", resolve, no_setstate, c10::Device(c10::kCPU), reader);
    for (const auto &c : table.toTupleRef().elements()) constants.push_back(c);
  }
  for (const std::string &name : classes) importer.loadType(c10::QualifiedName(name));
  std::unordered_set<const Function *> seen;
  std::vector<Function *> load_fns;
  // Methods (hooks and __setstate__ included) and the free functions they
  // call are all functions of the unit; compiling one may add others.
  for (size_t done = 0;;) {
    std::vector<Function *> fns = cu->get_functions();
    if (fns.size() == done) break;
    done = fns.size();
    for (Function *f : fns) scan_function(*f, seen, allow, load_fns);
  }
  for (Function *f : load_fns) scan_load_function(*f);
  if (!(allow & CTORCH_MODULE_LOAD_ALLOW_CLASSES)) {
    // Attributes of a built-in class type no code touches still unpickle.
    for (const std::string &name : classes)
      if (auto cls = cu->get_class(c10::QualifiedName(name))) {
        std::string c = refused_class(cls);
        if (!c.empty()) refuse_class(c, "an attribute of " + name);
      }
    scan_pickle_classes(reader);
  }
}

}  // namespace ctorch
