// Internal to libctorch_python: the GIL guard, references, the failure type
// every entry point turns into a status, and the helpers shared by
// bridge.cpp (interpreter, objects, calls), values.cpp (ctorch values <->
// Python) and uses.cpp (modules, ONNX, AOTInductor).
#pragma once
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <string>

#include "ctorch_python.h"

namespace ctorch_py {

// Thrown inside the bridge, caught at the entry point (ENTRY/EXIT below).
struct Fail {
  ctorch_status status;
  std::string message;
};

// Takes the GIL for a scope (any thread; nests).
struct Gil {
  PyGILState_STATE s;
  Gil() : s(PyGILState_Ensure()) {}
  ~Gil() { PyGILState_Release(s); }
  Gil(const Gil &) = delete;
  Gil &operator=(const Gil &) = delete;
};

// A strong reference, released at scope end (the GIL must be held).
struct Ref {
  PyObject *o = nullptr;
  Ref() = default;
  explicit Ref(PyObject *p) : o(p) {}
  ~Ref() { Py_XDECREF(o); }
  Ref(const Ref &) = delete;
  Ref &operator=(const Ref &) = delete;
  PyObject *release() { PyObject *p = o; o = nullptr; return p; }
  explicit operator bool() const { return o != nullptr; }
};

// ctorch handles freed at scope end.
struct TensorGuard {
  ctorch_tensor t = nullptr;
  ~TensorGuard() { ctorch_tensor_free(t); }
};
struct ValueGuard {
  ctorch_value v = nullptr;
  ~ValueGuard() { ctorch_value_free(v); }
};

// Checks an out-parameter and clears it (so it is NULL on any failure).
template <class T>
void clear_out(T *out) {
  if (!out) throw Fail{CTORCH_INVALID_ARGUMENT, "argument 'out' is NULL"};
  *out = nullptr;
}

// The pending Python exception as a Fail (type mapped to a status; message:
// "fn: Type: text" then the traceback). Clears the exception.
[[noreturn]] void throw_python(const char *fn);
// A ctorch call's failure as a Fail carrying libctorch's message.
void check(ctorch_status s);
// Throws unless ctorch_py_start succeeded (fn names the caller).
void require_started(const char *fn);
// Sets this thread's last error; returns status.
ctorch_status set_error(const char *fn, ctorch_status status, const std::string &msg);
// Validates a handle (INVALID_ARGUMENT naming fn and arg otherwise).
PyObject *object_of(ctorch_py_object o, const char *fn, const char *arg);
ctorch_py_object new_handle(PyObject *stolen);
// A function of the "_ctorch_bridge" helper module (borrowed).
PyObject *helper(const char *name);

// values.cpp (GIL held; results are new references / new handles).
PyObject *tensor_to_python(ctorch_tensor t);
ctorch_tensor tensor_from_python(PyObject *o);
PyObject *value_to_python(ctorch_value v, int depth);
ctorch_value value_from_python(PyObject *o, int depth);
PyObject *tensor_list(const ctorch_tensor *ts, size_t n, const char *fn);

}  // namespace ctorch_py

// Entry point frame: catches every Fail and C++ exception into a status.
#define CTORCH_PY_ENTRY try {
#define CTORCH_PY_EXIT(fn)                                                              \
  }                                                                                    \
  catch (const ::ctorch_py::Fail &f) {                                                 \
    return ::ctorch_py::set_error(fn, f.status, f.message);                            \
  }                                                                                    \
  catch (const std::bad_alloc &) {                                                     \
    return ::ctorch_py::set_error(fn, CTORCH_OUT_OF_MEMORY, "out of memory");          \
  }                                                                                    \
  catch (const std::exception &e) {                                                    \
    return ::ctorch_py::set_error(fn, CTORCH_RUNTIME, e.what());                       \
  }                                                                                    \
  catch (...) {                                                                        \
    return ::ctorch_py::set_error(fn, CTORCH_UNKNOWN, "unknown C++ exception");        \
  }

#include <initializer_list>
#include <type_traits>

namespace ctorch_py {

// An argument check of an entry point: refused (INVALID_ARGUMENT, message)
// when bad.
struct Refusal {
  bool bad;
  const char *message;
};

// The frame of an entry point that runs Python: its out-parameter checked
// and cleared (none for std::nullptr_t), its argument checks made (before
// anything needs the interpreter, so a bad argument is named even before
// ctorch_py_start), the interpreter required, the GIL held while body(fn)
// runs; a Fail or C++ exception becomes fn's status and message.
template <class OutPtr, class Body>
ctorch_status in_python(const char *fn, OutPtr out, std::initializer_list<Refusal> checks, Body body) {
  CTORCH_PY_ENTRY
  if constexpr (!std::is_same_v<OutPtr, std::nullptr_t>) clear_out(out);
  for (const Refusal &c : checks)
    if (c.bad) throw Fail{CTORCH_INVALID_ARGUMENT, c.message};
  require_started(fn);
  Gil gil;
  body(fn);
  return CTORCH_OK;
  CTORCH_PY_EXIT(fn)
}

}  // namespace ctorch_py
