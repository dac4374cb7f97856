// TorchScript without side effects (issue 25): before torch::jit::load runs
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
#include "core/text.h"
#include "jit_archive_check.h"

#include <caffe2/serialize/inline_container.h>
#include <torch/csrc/jit/api/compilation_unit.h>
#include <torch/csrc/jit/api/function_impl.h>
#include <torch/csrc/jit/frontend/error_report.h>
#include <torch/csrc/jit/frontend/parser.h>
#include <torch/csrc/jit/frontend/source_range.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/serialization/import_read.h>
#include <torch/csrc/jit/serialization/import_source.h>

#include <cstring>
#include <sstream>
#include <tuple>
#include <unordered_set>

namespace ctorch {
namespace {

using namespace torch::jit;

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

void scan_block(const Block *b, const std::string &fn) {
  for (const Node *n : b->nodes()) {
    std::string buf;
    if (const char *what = refusal(n, buf)) refuse(n, fn, what);
    for (const Block *sub : n->blocks()) scan_block(sub, fn);
    for (Symbol a : n->attributeNames()) {
      if (n->kindOf(a) == AttributeKind::g) {
        scan_block(n->g(a)->block(), fn);
      } else if (n->kindOf(a) == AttributeKind::gs) {
        for (const auto &g : n->gs(a)) scan_block(g->block(), fn);
      }
    }
  }
}

void scan_function(Function &f, std::unordered_set<const Function *> &seen) {
  if (!seen.insert(&f).second || !f.isGraphFunction()) return;
  f.ensure_defined();
  scan_block(toGraphFunction(f).graph()->block(), f.qualname().qualifiedName());
}

using text::ends_with;

}  // namespace

void check_torchscript_side_effects(caffe2::serialize::PyTorchStreamReader &reader) {
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
  // Methods (hooks and __setstate__ included) and the free functions they
  // call are all functions of the unit; compiling one may add others.
  for (size_t done = 0;;) {
    std::vector<Function *> fns = cu->get_functions();
    if (fns.size() == done) break;
    done = fns.size();
    for (Function *f : fns) scan_function(*f, seen);
  }
}

}  // namespace ctorch
