// Checks a TorchScript archive before torch::jit::load reads it: the
// driver (every code file, then every pickle) and the source check. The
// pickle check is jit_pickle_check.cpp.
//
// Source: class bodies libtorch's importer reads without checking. It takes
// the element of an absent optional (Maybe<Expr>::get() on an empty tree
// list: reads past the list, SIGSEGV) for
//   - a class constant 'k = 3' with no type annotation (parseClassConstant;
//     PyTorch 2.x added a check, 1.13 reads past the list; found by
//     fuzz_torchscript, NULL read under ASan);
//   - a NamedTuple field 'b = 2' with no type (importNamedTuple, still
//     unchecked upstream: SIGSEGV in plain 1.13);
//   - an Enum member 'GREEN : int' with no value (importEnum, likewise);
//   - module metadata annotated instead of assigned, '__parameters__ :
//     ["w"]' or '__buffers__ : List[str]' (importClass reads its value list;
//     1.13.1 reads past the tree: SEGV in parseTypeFromExpr under
//     SourceImporter::loadType, found by fuzz_torchscript).
// torch.jit.save never writes these; a crafted or corrupted file can. The
// same parser libtorch uses reads each code file here, in the order its
// importer does; anything it cannot parse is left for libtorch to report.
// The Enum members found here are what the pickle check compares against.
#include "text/text.h"
#include "jit_archive_check.h"

#include <caffe2/serialize/inline_container.h>
#include <torch/csrc/jit/frontend/parser.h>
#include <torch/csrc/jit/frontend/tree_views.h>

#include <cstring>
#include <functional>
#include <initializer_list>
#include <set>
#include <sstream>
#include <tuple>

namespace ctorch {
namespace {

using namespace torch::jit;

[[noreturn]] void refuse(const TreeView &where, const std::string &what) {
  // The file, line and a caret under the statement, as libtorch's own import
  // errors show them (ErrorReport::what(): message, ":\n", the highlight).
  // Not through torch::jit::ErrorReport itself: its constructor is compiled
  // in libtorch and its destructor inline here, so its std::stringstream was
  // built by one copy of libstdc++'s locale code and torn down by another
  // where libctorch carries its own (PyTorch 2.11 + g++ 13 on the GPU image:
  // "free(): invalid pointer"; AddressSanitizer there: bad-free in
  // std::locale::_Impl::~_Impl inside libctorch, from ~ErrorReport). This
  // stream is made and destroyed here; libtorch only writes into it.
  std::ostringstream out;
  out << what << " (torch.jit.save never writes this; libtorch's importer would read past the end of "
      << "its syntax tree):\n";
  where.range().highlight(out);
  fail(CTORCH_VALUE, out.str());
}

bool is_one_of(const std::string &name, std::initializer_list<const char *> names) {
  for (const char *n : names)
    if (name == n) return true;
  return false;
}

// Class-body names whose value list importClass reads (ListLiteral of
// assign.rhs().get()) without asking whether there is one.
bool reads_value_list(const std::string &name) {
  return is_one_of(name, {"__parameters__", "__buffers__", "__constants__", "__overloads__", "__forward_pre_hooks__",
                          "__forward_hooks__"});
}

// Class-body assignments importClass handles by name, not as constants.
bool is_module_metadata(const std::string &name) {
  return is_one_of(name, {"__parameters__", "__buffers__", "__annotations__", "__forward_pre_hooks__",
                          "__forward_hooks__"});
}

// Qualifier of a code record, as the importer maps it back:
// "code/__torch__/a/b.py" -> "__torch__.a.b".
std::string qualifier_of(const std::string &record) {
  std::string q = record.substr(5, record.size() - 8);
  for (char &c : q)
    if (c == '/') c = '.';
  return q;
}

void check_class(const ClassDef &cls, const std::string &qualifier, JitEnums &enums) {
  std::string base;
  if (cls.superclass().present()) {
    Expr super = cls.superclass().get();
    if (super.kind() != TK_VAR) return;  // the importer refuses it itself
    base = Var(super).name().name();
  }
  const std::string &name = cls.name().name();
  std::vector<JitLiteral> *members = base == "Enum" ? &enums[qualifier + "." + name] : nullptr;
  std::set<std::string> methods;
  for (const Stmt &stmt : cls.body()) {
    if (stmt.kind() == TK_DEF) {
      // A method defined twice: libtorch's importer defines the first,
      // throws on the second and leaks what it built (a class and its
      // compilation unit that hold each other: fuzz_torchscript, LSan).
      std::string method = Def(stmt).name().name();
      if (!methods.insert(method).second) refuse(stmt, "method '" + method + "' of '" + name + "' is defined twice");
      continue;
    }
    if (stmt.kind() != TK_ASSIGN) continue;
    Assign assign(stmt);
    bool typed = assign.type().present(), valued = assign.rhs().present();
    List<Expr> targets = assign.lhs_list();
    if (!valued && targets.size() == 1 && (*targets.begin()).kind() == TK_VAR) {
      std::string field = Var(*targets.begin()).name().name();
      if (reads_value_list(field))
        refuse(assign, "'" + field + "' of '" + name + "' has no value (expected '" + field + " = [...]')");
    }
    if (base == "NamedTuple" && !typed) {
      refuse(assign, "NamedTuple '" + name + "' has a field with no type annotation");
    } else if (members && !valued) {
      refuse(assign, "Enum '" + name + "' has a member with no value");
    } else if (members) {
      // The values the unpickler compares pickled members against
      // (SourceImporterImpl::importEnum).
      Expr value = assign.rhs().get();
      JitLiteral lit;
      if (value.kind() == TK_STRINGLITERAL) {
        lit.kind = JitLiteral::Str;
        lit.s = StringLiteral(value).text();
      } else if (value.kind() == TK_CONST && Const(value).isFloatingPoint()) {
        lit.kind = JitLiteral::Float;
        lit.f = Const(value).asFloatingPoint();
      } else if (value.kind() == TK_CONST && Const(value).isIntegral()) {
        lit.i = Const(value).asIntegral();
      } else {
        continue;  // the importer refuses it, or it matches no pickled literal
      }
      members->push_back(std::move(lit));
    } else if (!valued && assign.lhs_list().size() == 1 && (*assign.lhs_list().begin()).kind() == TK_SUBSCRIPT) {
      // importClass takes the type of "__annotations__[name] = T" from the
      // right-hand side, unchecked: written as "__annotations__[name] : T"
      // it reads an absent subtree (SEGV in parseTypeFromExpr, fuzz_optim).
      refuse(assign, "attribute annotation of '" + name + "' has no right-hand side (expected '__annotations__[\"x\"] = T')");
    } else if ((base.empty() || base == "Module") && valued && !typed) {
      List<Expr> lhs = assign.lhs_list();
      if (lhs.size() != 1 || (*lhs.begin()).kind() != TK_VAR) continue;
      std::string field = Var(*lhs.begin()).name().name();
      if (!is_module_metadata(field))
        refuse(assign, "class constant '" + field + "' of '" + name + "' has no type annotation (expected '" +
                           field + " : Final[T] = ...')");
    }
  }
}

using text::ends_with;

}  // namespace

void for_each_source_class(const std::string &record, const char *text, size_t size,
                           const std::function<void(const ClassDef &, const std::string &)> &on_class) {
  const std::string qualifier = qualifier_of(record);
  Parser parser(std::make_shared<Source>(std::string(text, size), record, 1));
  Lexer &lex = parser.lexer();
  if (lex.cur().kind == TK_IDENT && lex.cur().text() == "op_version_set") {
    lex.next();
    lex.expect('=');
    lex.expect(TK_NUMBER);
    lex.expect(TK_NEWLINE);
  }
  while (lex.cur().kind != TK_EOF) {
    while (lex.nextIf(TK_IMPORT)) {
      while (lex.cur().kind != TK_NEWLINE && lex.cur().kind != TK_EOF) lex.next();
      lex.expect(TK_NEWLINE);
    }
    if (lex.cur().kind == TK_CLASS_DEF) {
      on_class(ClassDef(parser.parseClass()), qualifier);
    } else if (lex.cur().kind == TK_DEF) {
      parser.parseFunction(/*is_method=*/false);
    } else {
      return;  // the importer's "Unexpected token in code import"
    }
  }
}

void check_torchscript_archive(caffe2::serialize::PyTorchStreamReader &reader,
                               const std::unordered_map<std::string, uint64_t> &sizes) {
  std::vector<std::string> records = reader.getAllRecords();
  JitEnums enums;
  for (const std::string &record : records) {
    if (record.compare(0, 5, "code/") != 0 || !ends_with(record, ".py")) continue;
    try {
      at::DataPtr data;
      size_t size = 0;
      std::tie(data, size) = reader.getRecord(record);
      for_each_source_class(record, static_cast<const char *>(data.get()), size,
                            [&enums](const ClassDef &cls, const std::string &qualifier) { check_class(cls, qualifier, enums); });
    } catch (const StatusError &) {
      throw;
    } catch (const std::bad_alloc &) {
      throw;
    } catch (const std::exception &) {
      // Unreadable or unparsable: libtorch reports it if it needs the file.
    }
  }
  // The pickles torch::jit::load unpickles (extra/ files are the user's bytes).
  for (const std::string &record : records) {
    bool debug = record.compare(0, 5, "code/") == 0 && ends_with(record, ".debug_pkl");
    if (!debug && record != "data.pkl" && record != "constants.pkl") continue;
    at::DataPtr data;
    size_t size = 0;
    try {
      std::tie(data, size) = reader.getRecord(record);
    } catch (const c10::Error &) {
      continue;  // unreadable: so it is for libtorch, which throws
    }
    // data.pkl's storages are in data/, constants.pkl's in constants/.
    std::string dir = debug ? std::string() : record.substr(0, record.size() - 4) + "/";
    check_torchscript_pickle(record, static_cast<const char *>(data.get()), size, enums, dir, sizes);
  }
}

}  // namespace ctorch
