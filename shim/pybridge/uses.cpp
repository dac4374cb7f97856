// Uses of the bridge: TorchScript modules across the boundary, ONNX export
// and AOTInductor compilation. Modules cross as torch.jit.save files in a
// private temporary file (TorchScript has no other form both libtorch and
// Python read); ctorch's own calls run with the GIL released.
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "bridge.h"

namespace ctorch_py {
namespace {

// A private file under $TMPDIR (or /tmp), removed at scope end.
struct TempFile {
  std::string path;
  explicit TempFile(const char *suffix) {
    const char *dir = std::getenv("TMPDIR");
    std::string tmpl = std::string(dir && *dir ? dir : "/tmp") + "/ctorch-py-XXXXXX" + suffix;
    int fd = mkstemps(&tmpl[0], static_cast<int>(std::string(suffix).size()));
    if (fd < 0) throw Fail{CTORCH_IO, "cannot create a temporary file in " + tmpl.substr(0, tmpl.rfind('/'))};
    close(fd);
    path = tmpl;
  }
  ~TempFile() { unlink(path.c_str()); }
};

void require_module(ctorch_module m) {
  if (!m) throw Fail{CTORCH_INVALID_ARGUMENT, "argument 'm' is NULL"};
}

// Saves m (GIL not held), then calls the helper `helper_name` with
// (saved file, inputs, path, a, b).
// options: a sixth argument for the helper (aoti_compile's), or none when NULL.
void call_with_saved_module(const char *fn, ctorch_module m, const ctorch_tensor *inputs, size_t n,
                            const char *helper_name, const char *path, int64_t a, int64_t b,
                            const char *options = nullptr) {
  require_module(m);
  if (!path) throw Fail{CTORCH_INVALID_ARGUMENT, "argument 'path' is NULL"};
  require_started(fn);
  TempFile ts(".pt");
  check(ctorch_module_save(m, ts.path.c_str()));
  Gil gil;
  Ref list(tensor_list(inputs, n, fn));
  Ref r(options ? PyObject_CallFunction(helper(helper_name), "sOsLLs", ts.path.c_str(), list.o, path,
                                        static_cast<long long>(a), static_cast<long long>(b), options)
                : PyObject_CallFunction(helper(helper_name), "sOsLL", ts.path.c_str(), list.o, path,
                                        static_cast<long long>(a), static_cast<long long>(b)));
  if (!r) throw_python(fn);
}

}  // namespace
}  // namespace ctorch_py

using namespace ctorch_py;

extern "C" {

CTORCH_API ctorch_status ctorch_py_module_to_c(ctorch_module *out, ctorch_py_object module,
                                               const ctorch_tensor *example_inputs, size_t n) {
  const char *fn = "ctorch_py_module_to_c";
  CTORCH_PY_ENTRY
  clear_out(out);
  require_started(fn);
  TempFile ts(".pt");
  {
    Gil gil;
    PyObject *mod = object_of(module, fn, "module");
    Ref list(tensor_list(example_inputs, n, fn));
    Ref r(PyObject_CallFunction(helper("module_to_file"), "OOs", mod, list.o, ts.path.c_str()));
    if (!r) throw_python(fn);
  }
  check(ctorch_module_load(out, ts.path.c_str(), nullptr));
  return CTORCH_OK;
  CTORCH_PY_EXIT(fn)
}

CTORCH_API ctorch_status ctorch_py_module_from_c(ctorch_py_object *out, ctorch_module m) {
  const char *fn = "ctorch_py_module_from_c";
  CTORCH_PY_ENTRY
  clear_out(out);
  require_module(m);
  require_started(fn);
  TempFile ts(".pt");
  check(ctorch_module_save(m, ts.path.c_str()));
  Gil gil;
  Ref r(PyObject_CallFunction(helper("module_from_file"), "s", ts.path.c_str()));
  if (!r) throw_python(fn);
  *out = new_handle(r.release());
  return CTORCH_OK;
  CTORCH_PY_EXIT(fn)
}

CTORCH_API ctorch_status ctorch_py_onnx_export(ctorch_module m, const ctorch_tensor *example_inputs, size_t n,
                                               const char *path, int64_t opset, int dynamic_batch) {
  const char *fn = "ctorch_py_onnx_export";
  CTORCH_PY_ENTRY
  if (opset < 0) throw Fail{CTORCH_INVALID_ARGUMENT, "argument 'opset' is negative"};
  call_with_saved_module(fn, m, example_inputs, n, "onnx_export", path, opset, dynamic_batch ? 1 : 0);
  return CTORCH_OK;
  CTORCH_PY_EXIT(fn)
}

CTORCH_API ctorch_status ctorch_py_aoti_compile(ctorch_module m, const ctorch_tensor *example_inputs, size_t n,
                                                const char *package_path, int dynamic_batch, int64_t max_batch) {
  const char *fn = "ctorch_py_aoti_compile";
  CTORCH_PY_ENTRY
  if (dynamic_batch && max_batch < 2) throw Fail{CTORCH_INVALID_ARGUMENT, "argument 'max_batch' must be >= 2"};
  call_with_saved_module(fn, m, example_inputs, n, "aoti_compile", package_path, dynamic_batch ? 1 : 0,
                         max_batch);
  return CTORCH_OK;
  CTORCH_PY_EXIT(fn)
}

CTORCH_API ctorch_status ctorch_py_aoti_compile_options(ctorch_module m, const ctorch_tensor *example_inputs,
                                                        size_t n, const char *package_path, int dynamic_batch,
                                                        int64_t max_batch, const char *options) {
  const char *fn = "ctorch_py_aoti_compile_options";
  CTORCH_PY_ENTRY
  if (dynamic_batch && max_batch < 2) throw Fail{CTORCH_INVALID_ARGUMENT, "argument 'max_batch' must be >= 2"};
  // "" is no options, the same call as ctorch_py_aoti_compile's.
  call_with_saved_module(fn, m, example_inputs, n, "aoti_compile", package_path, dynamic_batch ? 1 : 0,
                         max_batch, options && *options ? options : nullptr);
  return CTORCH_OK;
  CTORCH_PY_EXIT(fn)
}

}  // extern "C"
