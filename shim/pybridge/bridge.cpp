// The interpreter (start/attach and the torch check), errors, object
// handles and calls. See ctorch_python.h for the contract.
#include "bridge.h"

#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#include <cctype>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>

#include "helpers_py.h"

#ifndef CTORCH_PYTHON_DEFAULT
#define CTORCH_PYTHON_DEFAULT ""
#endif

struct ctorch_py_object_s {
  uint64_t magic;
  PyObject *o;
};

namespace ctorch_py {
namespace {

constexpr uint64_t kMagic = 0x6374707962726467ull;  // "ctpybrdg"
thread_local std::string t_error;

enum class State { kNotStarted, kReady, kRefused };
std::mutex g_start_mu;
State g_state = State::kNotStarted;
ctorch_status g_refused_status = CTORCH_OK;
std::string g_refusal;
int g_started_here = 0;
PyObject *g_helper = nullptr;  // the "_ctorch_bridge" module, immortal

std::string str_of(PyObject *o) {
  Ref s(o ? PyObject_Str(o) : nullptr);
  const char *c = s ? PyUnicode_AsUTF8(s.o) : nullptr;
  if (!c) {
    PyErr_Clear();
    return "<unprintable>";
  }
  return c;
}

ctorch_status status_of(PyObject *type) {
  struct Map { PyObject *exc; ctorch_status st; };
  const Map map[] = {{PyExc_TypeError, CTORCH_TYPE},       {PyExc_ValueError, CTORCH_VALUE},
                     {PyExc_IndexError, CTORCH_INDEX},     {PyExc_KeyError, CTORCH_INDEX},
                     {PyExc_NotImplementedError, CTORCH_NOT_IMPLEMENTED},
                     {PyExc_MemoryError, CTORCH_OUT_OF_MEMORY}, {PyExc_OSError, CTORCH_IO}};
  for (const Map &m : map)
    if (type && PyErr_GivenExceptionMatches(type, m.exc)) return m.st;
  return CTORCH_RUNTIME;
}

// Realpaths of every libtorch_cpu loaded in this process.
int collect_libtorch(struct dl_phdr_info *info, size_t, void *data) {
  const char *name = info->dlpi_name;
  if (name && std::strstr(name, "/libtorch_cpu.so")) {
    char buf[PATH_MAX];
    static_cast<std::set<std::string> *>(data)->insert(realpath(name, buf) ? buf : name);
  }
  return 0;
}

// "2.15.0+cu132", "1.13.0a0" (Debian's Python) -> "2.15.0", "1.13.0".
std::string base_version(const std::string &v) {
  size_t n = 0;
  while (n < v.size() && (std::isdigit(static_cast<unsigned char>(v[n])) || v[n] == '.')) ++n;
  return v.substr(0, n);
}

// With the GIL held: compares the interpreter's torch with this process's
// libtorch before importing it, then loads the helper module.
void check_torch_and_load_helpers() {
  Ref ns(PyDict_New());
  if (!ns) throw_python("ctorch_py_start");
  PyDict_SetItemString(ns.o, "__builtins__", PyEval_GetBuiltins());
  Ref r(PyRun_String(kProbeSource, Py_file_input, ns.o, ns.o));
  if (!r) throw_python("ctorch_py_start");
  Ref probe_res(PyObject_CallObject(PyDict_GetItemString(ns.o, "probe"), nullptr));
  if (!probe_res) throw_python("ctorch_py_start");
  const char *ours = nullptr;
  check(ctorch_torch_version(&ours));
  std::set<std::string> libs;
  dl_iterate_phdr(collect_libtorch, &libs);
  std::string our_lib = libs.empty() ? std::string("?") : *libs.begin();
  if (PyTuple_Size(probe_res.o) == 2)
    throw Fail{CTORCH_RUNTIME, "the interpreter (" + str_of(PyTuple_GetItem(probe_res.o, 0)) +
                                   ") has no torch module on its path (" + str_of(PyTuple_GetItem(probe_res.o, 1)) +
                                   "); this process runs libtorch " + ours + " from " + our_lib +
                                   ": start it with a Python whose torch is that libtorch"};
  std::string ver = str_of(PyTuple_GetItem(probe_res.o, 0));
  std::string lib = str_of(PyTuple_GetItem(probe_res.o, 1));
  std::string dir = str_of(PyTuple_GetItem(probe_res.o, 2));
  std::string exe = str_of(PyTuple_GetItem(probe_res.o, 3));
  bool version_differs = base_version(ver) != ours;
  bool lib_differs = !lib.empty() && libs.count(lib) == 0;
  if (version_differs || lib_differs || libs.size() > 1)
    throw Fail{CTORCH_RUNTIME, "the interpreter's torch is not this process's libtorch: Python " + exe +
                                   " has torch " + ver + " at " + dir + (lib.empty() ? "" : " (" + lib + ")") +
                                   ", this process runs libtorch " + ours + " from " + our_lib +
                                   "; importing it would load a second libtorch. Use the Python the library was "
                                   "built with (" CTORCH_PYTHON_DEFAULT ") or one with the same torch"};
  Ref code(Py_CompileString(kHelperSource, "<ctorch_python helpers>", Py_file_input));
  if (!code) throw_python("ctorch_py_start");
  Ref mod(PyImport_ExecCodeModule("_ctorch_bridge", code.o));
  if (!mod) throw_python("ctorch_py_start");
  g_helper = mod.release();
}

}  // namespace

ctorch_status set_error(const char *fn, ctorch_status status, const std::string &msg) {
  t_error = std::string(fn) + ": " + msg;
  return status;
}

void throw_python(const char *fn) {
  PyObject *type = nullptr, *value = nullptr, *tb = nullptr;
  PyErr_Fetch(&type, &value, &tb);
  if (!type) throw Fail{CTORCH_RUNTIME, "a Python call failed without an exception"};
  PyErr_NormalizeException(&type, &value, &tb);
  if (tb && value) PyException_SetTraceback(value, tb);
  Ref t(type), v(value), b(tb);
  ctorch_status st = status_of(type);
  std::string head = reinterpret_cast<PyTypeObject *>(type)->tp_name;
  std::string text = str_of(value);
  std::string msg = head + (text.empty() ? "" : ": " + text);
  // The traceback as Python prints it.
  Ref tbmod(PyImport_ImportModule("traceback"));
  Ref lines(tbmod ? PyObject_CallMethod(tbmod.o, "format_exception", "OOO", type, value ? value : Py_None,
                                        tb ? tb : Py_None)
                  : nullptr);
  if (lines && PyList_Check(lines.o)) {
    msg += "\n";
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(lines.o); ++i) msg += str_of(PyList_GET_ITEM(lines.o, i));
    while (!msg.empty() && msg.back() == '\n') msg.pop_back();
  }
  PyErr_Clear();
  throw Fail{st, msg};
}

void check(ctorch_status s) {
  if (s != CTORCH_OK) throw Fail{s, ctorch_last_error()};
}

void require_started(const char *fn) {
  std::lock_guard<std::mutex> lock(g_start_mu);
  if (g_state == State::kReady) return;
  if (g_state == State::kRefused) throw Fail{g_refused_status, "the bridge was refused at start: " + g_refusal};
  throw Fail{CTORCH_RUNTIME, "the Python bridge is not started (call ctorch_py_start first)"};
}

PyObject *object_of(ctorch_py_object o, const char *fn, const char *arg) {
  if (!o) throw Fail{CTORCH_INVALID_ARGUMENT, std::string("argument '") + arg + "' is NULL"};
  if (o->magic != kMagic || !o->o)
    throw Fail{CTORCH_INVALID_ARGUMENT, std::string("argument '") + arg + "' is not a live ctorch_py_object"};
  return o->o;
}

PyObject *helper(const char *name) {
  PyObject *f = PyObject_GetAttrString(g_helper, name);
  if (!f) throw_python("helper");
  Py_DECREF(f);  // the module keeps it alive
  return f;
}

}  // namespace ctorch_py

ctorch_py_object ctorch_py::new_handle(PyObject *stolen) {
  auto *h = new (std::nothrow) ctorch_py_object_s{kMagic, stolen};
  if (!h) {
    Py_DECREF(stolen);
    throw std::bad_alloc();
  }
  return h;
}

using namespace ctorch_py;

extern "C" {

CTORCH_API const char *ctorch_py_last_error(void) { return t_error.c_str(); }

CTORCH_API ctorch_status ctorch_py_start(int *started, const char *python) {
  const char *fn = "ctorch_py_start";
  CTORCH_PY_ENTRY
  std::lock_guard<std::mutex> lock(g_start_mu);
  if (g_state == State::kReady) {
    if (started) *started = g_started_here;
    return CTORCH_OK;
  }
  if (g_state == State::kRefused) throw Fail{g_refused_status, g_refusal};
  bool init_here = !Py_IsInitialized();
  if (init_here) {
    const char *py = python ? python : std::getenv("CTORCH_PYTHON");
    if (!py) py = CTORCH_PYTHON_DEFAULT;
    if (*py && access(py, X_OK) != 0)
      throw Fail{CTORCH_IO, std::string("argument 'python': '") + py + "' is not an executable file"};
    // Extension modules (torch._C) resolve Python's symbols globally: make
    // libpython global even when this library was dlopen'ed RTLD_LOCAL.
    Dl_info info;
    if (dladdr(reinterpret_cast<void *>(&Py_InitializeFromConfig), &info) && info.dli_fname)
      dlopen(info.dli_fname, RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD);
    PyConfig config;
    PyConfig_InitPythonConfig(&config);
    config.install_signal_handlers = 0;  // the host owns SIGINT
    config.parse_argv = 0;
    PyStatus st = PyStatus_Ok();
    if (*py) st = PyConfig_SetBytesString(&config, &config.program_name, py);
    if (!PyStatus_Exception(st)) st = Py_InitializeFromConfig(&config);
    PyConfig_Clear(&config);
    if (PyStatus_Exception(st)) {
      g_state = State::kRefused;
      g_refused_status = CTORCH_RUNTIME;
      g_refusal = std::string("the interpreter did not start: ") + (st.err_msg ? st.err_msg : "?");
      throw Fail{CTORCH_RUNTIME, g_refusal};
    }
  }
  try {
    Gil gil;
    check_torch_and_load_helpers();
  } catch (const Fail &f) {
    g_state = State::kRefused;
    g_refused_status = f.status;
    g_refusal = f.message;
    if (init_here) PyEval_SaveThread();
    throw;
  }
  // The thread that initialized Python holds the GIL: give it back so that
  // any thread (this one included) takes it per call.
  if (init_here) PyEval_SaveThread();
  g_state = State::kReady;
  g_started_here = init_here ? 1 : 0;
  if (started) *started = g_started_here;
  return CTORCH_OK;
  CTORCH_PY_EXIT(fn)
}

CTORCH_API ctorch_status ctorch_py_is_started(int *out) {
  const char *fn = "ctorch_py_is_started";
  CTORCH_PY_ENTRY
  if (!out) throw Fail{CTORCH_INVALID_ARGUMENT, "argument 'out' is NULL"};
  std::lock_guard<std::mutex> lock(g_start_mu);
  *out = g_state == State::kReady;
  return CTORCH_OK;
  CTORCH_PY_EXIT(fn)
}

CTORCH_API void ctorch_py_object_free(ctorch_py_object o) {
  if (!o || o->magic != kMagic) return;
  o->magic = 0;
  if (o->o && Py_IsInitialized()) {
    Gil gil;
    Py_DECREF(o->o);
  }
  delete o;
}

CTORCH_API ctorch_status ctorch_py_import(ctorch_py_object *out, const char *name) {
  return in_python(__func__, out, {{!name, "argument 'name' is NULL"}}, [&](const char *fn) {
    Ref m(PyImport_ImportModule(name));
    if (!m) throw_python(fn);
    *out = new_handle(m.release());
  });
}

CTORCH_API ctorch_status ctorch_py_getattr(ctorch_py_object *out, ctorch_py_object o, const char *name) {
  return in_python(__func__, out, {{!name, "argument 'name' is NULL"}}, [&](const char *fn) {
    PyObject *cur = object_of(o, fn, "o");
    Py_INCREF(cur);
    Ref acc(cur);
    std::string path(name);
    size_t start = 0;
    while (true) {
      size_t dot = path.find('.', start);
      std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
      Ref next(PyObject_GetAttrString(acc.o, part.c_str()));
      if (!next) throw_python(fn);
      Py_DECREF(acc.o);
      acc.o = next.release();
      if (dot == std::string::npos) break;
      start = dot + 1;
    }
    *out = new_handle(acc.release());
  });
}

CTORCH_API ctorch_status ctorch_py_setattr(ctorch_py_object o, const char *name, ctorch_py_object value) {
  return in_python(__func__, nullptr, {{!name, "argument 'name' is NULL"}}, [&](const char *fn) {
    if (PyObject_SetAttrString(object_of(o, fn, "o"), name, object_of(value, fn, "value")) != 0) throw_python(fn);
  });
}

CTORCH_API ctorch_status ctorch_py_exec(ctorch_py_object *out, const char *source, const char *name) {
  return in_python(__func__, out, {{!source, "argument 'source' is NULL"}}, [&](const char *fn) {
    const char *modname = name ? name : "__ctorch_exec__";
    Ref code(Py_CompileString(source, modname, Py_file_input));
    if (!code) throw_python(fn);
    // A fresh module object (not entered in sys.modules): its globals are
    // the namespace the source ran in.
    Ref mod(PyModule_New(modname));
    if (!mod) throw_python(fn);
    PyObject *globals = PyModule_GetDict(mod.o);
    PyDict_SetItemString(globals, "__builtins__", PyEval_GetBuiltins());
    Ref r(PyEval_EvalCode(code.o, globals, globals));
    if (!r) throw_python(fn);
    *out = new_handle(mod.release());
  });
}

CTORCH_API ctorch_status ctorch_py_call(ctorch_py_object *out, ctorch_py_object callable, const ctorch_py_object *args,
                                        size_t n, ctorch_py_object kwargs) {
  return in_python(__func__, out, {{n && !args, "argument 'args' is NULL with n > 0"}}, [&](const char *fn) {
    PyObject *f = object_of(callable, fn, "callable");
    PyObject *kw = kwargs ? object_of(kwargs, fn, "kwargs") : nullptr;
    if (kw && !PyDict_Check(kw)) throw Fail{CTORCH_TYPE, "argument 'kwargs' is not a dict"};
    Ref tuple(PyTuple_New(static_cast<Py_ssize_t>(n)));
    if (!tuple) throw_python(fn);
    for (size_t i = 0; i < n; ++i) {
      PyObject *a = object_of(args[i], fn, "args");
      Py_INCREF(a);
      PyTuple_SET_ITEM(tuple.o, static_cast<Py_ssize_t>(i), a);
    }
    Ref r(PyObject_Call(f, tuple.o, kw));
    if (!r) throw_python(fn);
    *out = new_handle(r.release());
  });
}

CTORCH_API ctorch_status ctorch_py_call_method(ctorch_py_object *out, ctorch_py_object o, const char *method,
                                               const ctorch_py_object *args, size_t n) {
  const char *fn = "ctorch_py_call_method";
  CTORCH_PY_ENTRY
  clear_out(out);
  if (!method) throw Fail{CTORCH_INVALID_ARGUMENT, "argument 'method' is NULL"};
  ctorch_py_object bound = nullptr;
  {
    ctorch_status s = ctorch_py_getattr(&bound, o, method);
    if (s != CTORCH_OK) throw Fail{s, t_error};
  }
  ctorch_status s = ctorch_py_call(out, bound, args, n, nullptr);
  ctorch_py_object_free(bound);
  if (s != CTORCH_OK) throw Fail{s, t_error};
  return CTORCH_OK;
  CTORCH_PY_EXIT(fn)
}

CTORCH_API ctorch_status ctorch_py_repr(char **out, ctorch_py_object o) {
  return in_python(__func__, out, {}, [&](const char *fn) {
    Ref r(PyObject_Repr(object_of(o, fn, "o")));
    if (!r) throw_python(fn);
    Py_ssize_t len = 0;
    const char *c = PyUnicode_AsUTF8AndSize(r.o, &len);
    if (!c) throw_python(fn);
    char *s = static_cast<char *>(std::malloc(static_cast<size_t>(len) + 1));  // ctorch_string_free: free()
    if (!s) throw std::bad_alloc();
    std::memcpy(s, c, static_cast<size_t>(len) + 1);
    *out = s;
  });
}

}  // extern "C"
