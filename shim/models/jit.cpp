// TorchScript: loading modules saved by torch.jit.save, running their
// methods with IValue arguments (ctorch_value), parameters and buffers.
#include "jit_archive_check.h"
#include "jit_handles.h"
#include "models.h"
#include "serialize/serialize.h"

#include <ATen/core/jit_type.h>
#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/frontend/error_report.h>
#include <torch/csrc/jit/serialization/import.h>
#include <caffe2/serialize/file_adapter.h>
#include <caffe2/serialize/in_memory_adapter.h>
#include <caffe2/serialize/inline_container.h>

#include <cstdlib>
#include <cstring>
#include <functional>


namespace {

torch::jit::Module &mod(ctorch_module m) {
  ctorch::check_handle(m, "m");
  return m->m;
}

const c10::IValue &val(ctorch_value v, const char *arg = "v") {
  ctorch::check_handle(v, arg);
  return v->v;
}

using ctorch::give_value;
using ctorch::retyped;

ctorch_value_kind kind_of(const c10::IValue &v) {
  if (v.isNone()) return CTORCH_VALUE_NONE;
  if (v.isBool()) return CTORCH_VALUE_BOOL;
  if (v.isInt()) return CTORCH_VALUE_INT;
  if (v.isDouble()) return CTORCH_VALUE_DOUBLE;
  if (v.isString()) return CTORCH_VALUE_STRING;
  if (v.isTensor()) return CTORCH_VALUE_TENSOR;
  if (v.isList()) return CTORCH_VALUE_LIST;
  if (v.isTuple()) return CTORCH_VALUE_TUPLE;
  if (v.isGenericDict()) return CTORCH_VALUE_DICT;
  return CTORCH_VALUE_OTHER;
}

const char *kind_name(ctorch_value_kind k) {
  static const char *names[] = {"None", "bool", "int", "float", "str", "Tensor", "list", "tuple", "dict", "object"};
  return names[k];
}

[[noreturn]] void wrong_kind(const c10::IValue &v, const char *want) {
  ctorch::fail(CTORCH_TYPE, std::string("argument 'v': value is a ") + kind_name(kind_of(v)) + ", not " + want);
}

// TorchScript containers are typed. The element type of a list or dict
// built from C values is the unification of the items' types, with tensor
// shapes erased (a List[Tensor] parameter must accept any tensors).
c10::TypePtr unified_type(const ctorch_value *items, size_t n, const char *arg) {
  c10::TypePtr t;
  for (size_t i = 0; i < n; ++i) {
    if (!items[i]) ctorch::fail_arg(arg, "entry " + std::to_string(i) + " is NULL");
    ctorch::check_handle(items[i], arg);
    c10::TypePtr ti = c10::unshapedType(items[i]->v.type());
    if (!t) {
      t = ti;
      continue;
    }
    // The same type again (a list of ints, of floats...): nothing to unify.
    // unifyTypes would return t too, after two subtype checks per item.
    if (ti == t) continue;
    auto u = c10::unifyTypes(t, ti, /*default_to_union=*/false);
    if (!u)
      ctorch::fail(CTORCH_TYPE, std::string("argument '") + arg + "': entry " + std::to_string(i) + " has type " +
                                    ti->annotation_str() + ", which does not unify with " + t->annotation_str() +
                                    " (TorchScript containers hold one type; use a tuple)");
    t = *u;
  }
  return t ? t : c10::TensorType::get();  // empty: retyped against the schema at call time
}

c10::IValue make_dict(c10::TypePtr key_type, const ctorch_value *values, size_t n,
                      const std::function<c10::IValue(size_t)> &key) {
  c10::impl::GenericDict d(std::move(key_type), unified_type(values, n, "values"));
  for (size_t i = 0; i < n; ++i) d.insert_or_assign(key(i), values[i]->v);
  return c10::IValue(std::move(d));
}

c10::IValue run(torch::jit::Module &m, const char *name, std::vector<c10::IValue> args) {
  auto method = m.find_method(name);
  if (!method) ctorch::fail(CTORCH_INDEX, std::string("argument 'method': the module has no method '") + name + "'");
  const c10::FunctionSchema &schema = method->function().getSchema();
  // Schema arguments start with self.
  const auto &params = schema.arguments();
  for (size_t i = 0; i < args.size() && i + 1 < params.size(); ++i) args[i] = retyped(args[i], params[i + 1].type());
  std::vector<c10::IValue> stack;
  stack.reserve(args.size() + 1);
  stack.emplace_back(m._ivalue());
  for (auto &a : args) stack.push_back(a);
  try {
    schema.checkAndNormalizeInputs(stack, {});
  } catch (const c10::Error &e) {
    ctorch::fail(CTORCH_TYPE, std::string("arguments do not match ") + name + "'s schema " + c10::toString(schema) + ": " +
                                  e.what_without_backtrace());
  }
  return (*method)(std::move(args));
}

std::vector<c10::IValue> arg_values(const ctorch_value *args, size_t nargs) {
  ctorch::require_list(args, nargs, "args");
  std::vector<c10::IValue> v;
  v.reserve(nargs);
  for (size_t i = 0; i < nargs; ++i) {
    if (!args[i]) ctorch::fail_arg("args", "entry " + std::to_string(i) + " is NULL (use ctorch_value_none for None)");
    ctorch::check_handle(args[i], "args");
    v.push_back(args[i]->v);
  }
  return v;
}

template <class List>
ctorch_tensor_dict named_dict(const List &l) {
  auto d = std::make_unique<ctorch_tensor_dict_s>();
  for (const auto &nv : l) {
    d->keys.push_back(nv.name);
    d->values.push_back(nv.value);
  }
  return d.release();
}

template <class List>
ctorch_tensor find_named(const List &l, const char *name, const char *what) {
  ctorch::require_ptr(name, "name");
  for (const auto &nv : l)
    if (nv.name == name) return ctorch::give(nv.value);
  ctorch::fail(CTORCH_INDEX, std::string("argument 'name': the module has no ") + what + " named '" + name + "'");
}

}  // namespace

extern "C" {

// ---- values -------------------------------------------------------------

CTORCH_API void ctorch_value_free(ctorch_value v) {
  if (ctorch::release_handle(v, __func__)) delete v;
}

CTORCH_API ctorch_status ctorch_value_none(ctorch_value *out) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = give_value(c10::IValue());
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_value_bool(ctorch_value *out, int v) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = give_value(c10::IValue(v != 0));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_value_int(ctorch_value *out, int64_t v) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = give_value(c10::IValue(v));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_value_double(ctorch_value *out, double v) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = give_value(c10::IValue(v));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_value_string(ctorch_value *out, const char *s) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  ctorch::require_ptr(s, "s");
  *out = give_value(c10::IValue(std::string(s)));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_value_tensor(ctorch_value *out, ctorch_tensor t) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  ctorch::require_tensor(t, "t");
  *out = give_value(c10::IValue(ctorch::own(t)));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_value_list(ctorch_value *out, const ctorch_value *items, size_t n) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  ctorch::require_list(items, n, "items");
  c10::impl::GenericList l(unified_type(items, n, "items"));
  l.reserve(n);
  for (size_t i = 0; i < n; ++i) l.push_back(items[i]->v);
  *out = give_value(c10::IValue(std::move(l)));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_value_tuple(ctorch_value *out, const ctorch_value *items, size_t n) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  ctorch::require_list(items, n, "items");
  std::vector<c10::IValue> e;
  e.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    if (!items[i]) ctorch::fail_arg("items", "entry " + std::to_string(i) + " is NULL");
    ctorch::check_handle(items[i], "items");
    e.push_back(items[i]->v);
  }
  *out = give_value(c10::IValue(c10::ivalue::Tuple::create(std::move(e))));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_value_dict_str(ctorch_value *out, const char *const *keys, const ctorch_value *values,
                                               size_t n) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  ctorch::require_list(keys, n, "keys");
  ctorch::require_list(values, n, "values");
  for (size_t i = 0; i < n; ++i)
    if (!keys[i]) ctorch::fail_arg("keys", "entry " + std::to_string(i) + " is NULL");
  *out = give_value(make_dict(c10::StringType::get(), values, n, [&](size_t i) { return c10::IValue(std::string(keys[i])); }));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_value_dict_int(ctorch_value *out, const int64_t *keys, const ctorch_value *values,
                                               size_t n) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  ctorch::require_list(keys, n, "keys");
  ctorch::require_list(values, n, "values");
  *out = give_value(make_dict(c10::IntType::get(), values, n, [&](size_t i) { return c10::IValue(keys[i]); }));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_value_kind_of(ctorch_value_kind *out, ctorch_value v) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = kind_of(val(v));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_value_to_tensor(ctorch_tensor *out, ctorch_value v) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  const auto &x = val(v);
  if (!x.isTensor()) wrong_kind(x, "a Tensor");
  *out = ctorch::give(x.toTensor());
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_value_to_int(int64_t *out, ctorch_value v) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  const auto &x = val(v);
  if (x.isInt()) *out = x.toInt();
  else if (x.isBool()) *out = x.toBool() ? 1 : 0;
  else wrong_kind(x, "an int");
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_value_to_double(double *out, ctorch_value v) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  const auto &x = val(v);
  if (x.isDouble()) *out = x.toDouble();
  else if (x.isInt()) *out = static_cast<double>(x.toInt());
  else wrong_kind(x, "a float");
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_value_to_bool(int *out, ctorch_value v) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  const auto &x = val(v);
  if (!x.isBool()) wrong_kind(x, "a bool");
  *out = x.toBool() ? 1 : 0;
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_value_to_string(const char **out, ctorch_value v) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  const auto &x = val(v);
  if (!x.isString()) wrong_kind(x, "a str");
  *out = x.toStringRef().c_str();
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_value_size(size_t *out, ctorch_value v) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  const auto &x = val(v);
  if (x.isList()) *out = x.toListRef().size();
  else if (x.isTuple()) *out = x.toTupleRef().elements().size();
  else if (x.isGenericDict()) *out = x.toGenericDict().size();
  else wrong_kind(x, "a list, tuple or dict");
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_value_get(ctorch_value *out, ctorch_value v, size_t i) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  const auto &x = val(v);
  size_t n = 0;
  if (x.isList()) n = x.toListRef().size();
  else if (x.isTuple()) n = x.toTupleRef().elements().size();
  else wrong_kind(x, "a list or tuple");
  if (i >= n) ctorch::fail(CTORCH_INDEX, "argument 'i': index " + std::to_string(i) + " out of range for size " + std::to_string(n));
  *out = give_value(x.isList() ? x.toListRef()[i] : x.toTupleRef().elements()[i]);
  CTORCH_CATCH
}

static c10::impl::GenericDict::iterator dict_at(const c10::IValue &x, size_t i) {
  if (!x.isGenericDict()) wrong_kind(x, "a dict");
  auto d = x.toGenericDict();
  if (i >= d.size())
    ctorch::fail(CTORCH_INDEX, "argument 'i': index " + std::to_string(i) + " out of range for a dict of " + std::to_string(d.size()));
  auto it = d.begin();
  for (size_t k = 0; k < i; ++k) ++it;
  return it;
}

CTORCH_API ctorch_status ctorch_value_dict_key(ctorch_value *out, ctorch_value v, size_t i) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  *out = give_value(dict_at(val(v), i)->key());
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_value_dict_value(ctorch_value *out, ctorch_value v, size_t i) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  *out = give_value(dict_at(val(v), i)->value());
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_value_type_str(char **out, ctorch_value v) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  std::string s = c10::unshapedType(val(v).type())->annotation_str();
  char *c = static_cast<char *>(std::malloc(s.size() + 1));
  if (!c) throw std::bad_alloc();
  std::memcpy(c, s.c_str(), s.size() + 1);
  *out = c;
  CTORCH_CATCH
}

// ---- modules ------------------------------------------------------------

static void check_load_flags(uint32_t flags) {
  const uint32_t known = CTORCH_MODULE_LOAD_ALLOW_IO | CTORCH_MODULE_LOAD_ALLOW_UNBOUNDED_LOOPS |
                         CTORCH_MODULE_LOAD_ALLOW_CLASSES;
  if (flags & ~known)
    ctorch::fail_arg("flags", "unknown flag bits " + std::to_string(flags & ~known) +
                                  " (the flags are CTORCH_MODULE_LOAD_ALLOW_IO, _ALLOW_UNBOUNDED_LOOPS and _ALLOW_CLASSES)");
}

// Checks (check(): check_torchscript_file or _memory), then torch::jit::load;
// what is refused or unreadable is VALUE, "<what> is not a loadable
// TorchScript module: ...". The one path of every TorchScript load.
static ctorch_module load_checked(const std::function<ctorch::CheckedTorchScript()> &check, const std::string &what,
                                  const ctorch_device *map_location) {
  c10::optional<c10::Device> dev;
  if (map_location) dev = ctorch::to_device(*map_location, "map_location");
  torch::jit::Module m;
  const std::string bad = what + " is not a loadable TorchScript module: ";
  try {
    ctorch::CheckedTorchScript checked = check();
    m = torch::jit::load(checked.in, dev);
  } catch (const ctorch::StatusError &e) {
    if (e.status() == CTORCH_IO) throw;  // its message names the path
    ctorch::fail(e.status(), bad + e.what());
  } catch (const c10::Error &e) {
    ctorch::fail(CTORCH_VALUE, bad + e.what_without_backtrace());
  } catch (const torch::jit::ErrorReport &e) {
    ctorch::fail(CTORCH_VALUE, bad + e.what());  // the code does not compile
  }
  return new ctorch_module_s{std::move(m)};
}

static void module_load(ctorch_module *out, const char *path, const ctorch_device *map_location, uint32_t flags) {
  ctorch::require_out(out, "out");
  *out = nullptr;
  ctorch::require_ptr(path, "path");
  check_load_flags(flags);
  *out = load_checked([&] { return ctorch::check_torchscript_file(path, flags); }, std::string("'") + path + "'",
                      map_location);
}

// flags: already checked by the caller (a stream's before it is read).
static void module_load_memory(ctorch_module *out, const void *data, size_t len, const ctorch_device *map_location,
                               uint32_t flags, const char *what) {
  *out = load_checked([&] { return ctorch::check_torchscript_memory(data, len, flags); }, what, map_location);
}

CTORCH_API ctorch_status ctorch_module_load(ctorch_module *out, const char *path, const ctorch_device *map_location) {
  CTORCH_TRY
  module_load(out, path, map_location, 0);
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_module_load_ex(ctorch_module *out, const char *path, const ctorch_device *map_location,
                                               uint32_t flags) {
  CTORCH_TRY
  module_load(out, path, map_location, flags);
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_module_load_from_buffer(ctorch_module *out, const void *data, size_t len,
                                                        const ctorch_device *map_location, uint32_t flags) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  if (!data && len) ctorch::fail_arg("data", "is NULL with len " + std::to_string(len));
  check_load_flags(flags);
  module_load_memory(out, data, len, map_location, flags, "the buffer");
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_module_load_from_stream(ctorch_module *out, ctorch_read_fn read, void *user_data,
                                                        const ctorch_device *map_location, uint32_t flags) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  ctorch::require_ptr(read, "read");
  check_load_flags(flags);  // before the stream is read
  if (map_location) ctorch::to_device(*map_location, "map_location");
  std::string bytes = ctorch::read_stream(read, user_data);
  module_load_memory(out, bytes.data(), bytes.size(), map_location, flags, "the stream");
  CTORCH_CATCH
}

CTORCH_API void ctorch_module_free(ctorch_module m) {
  if (ctorch::release_handle(m, __func__)) delete m;
}

CTORCH_API ctorch_status ctorch_module_train(ctorch_module m, int on) {
  CTORCH_TRY
  mod(m).train(on != 0);
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_module_eval(ctorch_module m) {
  CTORCH_TRY
  mod(m).eval();
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_module_is_training(int *out, ctorch_module m) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = mod(m).is_training() ? 1 : 0;
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_module_to_device(ctorch_module m, ctorch_device device) {
  CTORCH_TRY
  auto &mm = mod(m);
  mm.to(ctorch::to_device(device, "device"));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_module_has_method(int *out, ctorch_module m, const char *name) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  auto &mm = mod(m);
  ctorch::require_ptr(name, "name");
  *out = mm.find_method(name) ? 1 : 0;
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_module_forward(ctorch_value *out, ctorch_module m, const ctorch_value *args,
                                               size_t nargs) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  auto &mm = mod(m);
  *out = give_value(run(mm, "forward", arg_values(args, nargs)));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_module_run_method(ctorch_value *out, ctorch_module m, const char *method,
                                                  const ctorch_value *args, size_t nargs) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  auto &mm = mod(m);
  ctorch::require_ptr(method, "method");
  *out = give_value(run(mm, method, arg_values(args, nargs)));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_module_forward_tensors(ctorch_tensor *out, ctorch_module m, const ctorch_tensor *inputs,
                                                       size_t n) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  auto &mm = mod(m);
  std::vector<c10::IValue> args;
  args.reserve(n);
  for (auto &t : ctorch::tensor_list(inputs, n, "inputs")) args.emplace_back(std::move(t));
  c10::IValue r = run(mm, "forward", std::move(args));
  if (!r.isTensor())
    ctorch::fail(CTORCH_TYPE, std::string("forward returned a ") + kind_name(kind_of(r)) +
                                  ", not a Tensor (use ctorch_module_forward)");
  *out = ctorch::give(r.toTensor());
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_module_named_parameters(ctorch_tensor_dict *out, ctorch_module m) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  *out = named_dict(mod(m).named_parameters(/*recurse=*/true));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_module_named_buffers(ctorch_tensor_dict *out, ctorch_module m) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  *out = named_dict(mod(m).named_buffers(/*recurse=*/true));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_module_parameter(ctorch_tensor *out, ctorch_module m, const char *name) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  *out = find_named(mod(m).named_parameters(true), name, "parameter");
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_module_buffer(ctorch_tensor *out, ctorch_module m, const char *name) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  *out = find_named(mod(m).named_buffers(true), name, "buffer");
  CTORCH_CATCH
}

}  // extern "C"
