// ctorch values and tensors <-> Python objects. Tensors cross through
// DLPack capsules (the protocol's names: "dltensor", renamed
// "used_dltensor" by the consumer), so neither side copies.
#include <dlpack/dlpack.h>

#include <cstring>
#include <vector>

#include "bridge.h"

namespace ctorch_py {
namespace {

constexpr int kMaxDepth = 64;  // nesting beyond this (or a cycle) is refused

void capsule_destructor(PyObject *cap) {
  // Unconsumed: nobody took ownership of the struct, so free it here.
  if (PyCapsule_IsValid(cap, "dltensor")) {
    auto *m = static_cast<DLManagedTensor *>(PyCapsule_GetPointer(cap, "dltensor"));
    if (m && m->deleter) m->deleter(m);
  }
}

const char *type_name(PyObject *o) { return Py_TYPE(o)->tp_name; }

// Values being collected for a list, tuple or dict, freed at scope end
// (the container holds its own references).
struct ValueList : std::vector<ctorch_value> {
  explicit ValueList(size_t n = 0) : std::vector<ctorch_value>(n, nullptr) {}
  ~ValueList() { for (ctorch_value x : *this) ctorch_value_free(x); }
  ValueList(const ValueList &) = delete;
  ValueList &operator=(const ValueList &) = delete;
};

}  // namespace

PyObject *tensor_to_python(ctorch_tensor t) {
  ctorch_dtype dt;
  check(ctorch_tensor_dtype(&dt, t));
  bool is_bool = dt == CTORCH_BOOL;
  TensorGuard view;
  if (is_bool) check(ctorch_view_dtype(&view.t, t, CTORCH_UINT8));
  DLManagedTensor *m = nullptr;
  check(ctorch_to_dlpack(&m, is_bool ? view.t : t));
  PyObject *cap = PyCapsule_New(m, "dltensor", capsule_destructor);
  if (!cap) {
    m->deleter(m);
    throw_python("tensor_to_python");
  }
  Ref capsule(cap);
  Ref r(PyObject_CallFunction(helper("tensor_from_capsule"), "Oi", cap, is_bool ? 1 : 0));
  if (!r) throw_python("tensor_to_python");
  return r.release();
}

ctorch_tensor tensor_from_python(PyObject *o) {
  Ref pair(PyObject_CallFunctionObjArgs(helper("tensor_to_capsule"), o, nullptr));
  if (!pair) throw_python("tensor_from_python");
  PyObject *cap = PyTuple_GetItem(pair.o, 0);
  int is_bool = PyObject_IsTrue(PyTuple_GetItem(pair.o, 1));
  auto *m = static_cast<DLManagedTensor *>(PyCapsule_GetPointer(cap, "dltensor"));
  if (!m) throw_python("tensor_from_python");
  ctorch_tensor t = nullptr;
  // On failure ctorch took nothing: the capsule keeps its name and torch's
  // destructor frees the struct.
  check(ctorch_from_dlpack(&t, m));
  PyCapsule_SetName(cap, "used_dltensor");
  if (is_bool == 1) {
    TensorGuard u;
    u.t = t;
    check(ctorch_view_dtype(&t, u.t, CTORCH_BOOL));
  }
  return t;
}

PyObject *value_to_python(ctorch_value v, int depth) {
  if (depth > kMaxDepth) throw Fail{CTORCH_VALUE, "the value nests deeper than 64 levels"};
  ctorch_value_kind k;
  check(ctorch_value_kind_of(&k, v));
  switch (k) {
    case CTORCH_VALUE_NONE: Py_RETURN_NONE;
    case CTORCH_VALUE_BOOL: {
      int b;
      check(ctorch_value_to_bool(&b, v));
      return PyBool_FromLong(b);
    }
    case CTORCH_VALUE_INT: {
      int64_t i;
      check(ctorch_value_to_int(&i, v));
      return PyLong_FromLongLong(i);
    }
    case CTORCH_VALUE_DOUBLE: {
      double d;
      check(ctorch_value_to_double(&d, v));
      return PyFloat_FromDouble(d);
    }
    case CTORCH_VALUE_STRING: {
      const char *s;
      check(ctorch_value_to_string(&s, v));
      PyObject *r = PyUnicode_FromString(s);
      if (!r) throw_python("value_to_python");
      return r;
    }
    case CTORCH_VALUE_TENSOR: {
      TensorGuard t;
      check(ctorch_value_to_tensor(&t.t, v));
      if (!t.t) Py_RETURN_NONE;  // undefined tensor
      return tensor_to_python(t.t);
    }
    case CTORCH_VALUE_LIST:
    case CTORCH_VALUE_TUPLE: {
      size_t n;
      check(ctorch_value_size(&n, v));
      Ref seq(k == CTORCH_VALUE_LIST ? PyList_New(static_cast<Py_ssize_t>(n))
                                     : PyTuple_New(static_cast<Py_ssize_t>(n)));
      if (!seq) throw_python("value_to_python");
      for (size_t i = 0; i < n; ++i) {
        ValueGuard item;
        check(ctorch_value_get(&item.v, v, i));
        PyObject *p = value_to_python(item.v, depth + 1);
        if (k == CTORCH_VALUE_LIST) PyList_SET_ITEM(seq.o, static_cast<Py_ssize_t>(i), p);
        else PyTuple_SET_ITEM(seq.o, static_cast<Py_ssize_t>(i), p);
      }
      return seq.release();
    }
    case CTORCH_VALUE_DICT: {
      size_t n;
      check(ctorch_value_size(&n, v));
      Ref d(PyDict_New());
      if (!d) throw_python("value_to_python");
      for (size_t i = 0; i < n; ++i) {
        ValueGuard key, val;
        check(ctorch_value_dict_key(&key.v, v, i));
        check(ctorch_value_dict_value(&val.v, v, i));
        Ref pk(value_to_python(key.v, depth + 1));
        Ref pv(value_to_python(val.v, depth + 1));
        if (PyDict_SetItem(d.o, pk.o, pv.o) != 0) throw_python("value_to_python");
      }
      return d.release();
    }
    default: {
      char *ty = nullptr;
      std::string name = ctorch_value_type_str(&ty, v) == CTORCH_OK && ty ? ty : "?";
      ctorch_string_free(ty);
      throw Fail{CTORCH_TYPE, "a ctorch value of type " + name + " has no Python equivalent"};
    }
  }
}

ctorch_value value_from_python(PyObject *o, int depth) {
  if (depth > kMaxDepth) throw Fail{CTORCH_VALUE, "the object nests deeper than 64 levels (or contains itself)"};
  ctorch_value out = nullptr;
  if (o == Py_None) {
    check(ctorch_value_none(&out));
  } else if (PyBool_Check(o)) {
    check(ctorch_value_bool(&out, o == Py_True));
  } else if (PyLong_Check(o)) {
    int overflow = 0;
    long long i = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow) throw Fail{CTORCH_VALUE, "a Python int does not fit in int64"};
    if (i == -1 && PyErr_Occurred()) throw_python("value_from_python");
    check(ctorch_value_int(&out, i));
  } else if (PyFloat_Check(o)) {
    check(ctorch_value_double(&out, PyFloat_AS_DOUBLE(o)));
  } else if (PyUnicode_Check(o)) {
    const char *s = PyUnicode_AsUTF8(o);
    if (!s) throw_python("value_from_python");
    check(ctorch_value_string(&out, s));
  } else if (PyObject_IsInstance(o, helper("Tensor")) == 1) {
    TensorGuard t;
    t.t = tensor_from_python(o);
    check(ctorch_value_tensor(&out, t.t));
  } else if (PyList_Check(o) || PyTuple_Check(o)) {
    bool list = PyList_Check(o);
    Ref fast(PySequence_Fast(o, "sequence"));
    if (!fast) throw_python("value_from_python");
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast.o);
    ValueList items(static_cast<size_t>(n));
    for (Py_ssize_t i = 0; i < n; ++i)
      items[static_cast<size_t>(i)] = value_from_python(PySequence_Fast_GET_ITEM(fast.o, i), depth + 1);
    check(list ? ctorch_value_list(&out, items.data(), items.size())
               : ctorch_value_tuple(&out, items.data(), items.size()));
  } else if (PyDict_Check(o)) {
    ValueList vals;
    std::vector<std::string> skeys;
    std::vector<int64_t> ikeys;
    PyObject *k, *v;
    Py_ssize_t pos = 0;
    bool any_str = false, any_int = false;
    while (PyDict_Next(o, &pos, &k, &v)) {
      if (PyUnicode_Check(k)) {
        const char *s = PyUnicode_AsUTF8(k);
        if (!s) throw_python("value_from_python");
        skeys.emplace_back(s);
        any_str = true;
      } else if (PyLong_Check(k) && !PyBool_Check(k)) {
        int overflow = 0;
        ikeys.push_back(PyLong_AsLongLongAndOverflow(k, &overflow));
        if (overflow) throw Fail{CTORCH_VALUE, "a dict key does not fit in int64"};
        any_int = true;
      } else {
        throw Fail{CTORCH_TYPE, std::string("a dict key of type ") + type_name(k) + " (ctorch dicts have str or int keys)"};
      }
      if (any_str && any_int) throw Fail{CTORCH_TYPE, "a dict mixes str and int keys"};
      vals.push_back(nullptr);
      vals.back() = value_from_python(v, depth + 1);
    }
    if (any_int) {
      check(ctorch_value_dict_int(&out, ikeys.data(), vals.data(), vals.size()));
    } else {
      std::vector<const char *> ks;
      for (const std::string &s : skeys) ks.push_back(s.c_str());
      check(ctorch_value_dict_str(&out, ks.data(), vals.data(), vals.size()));
    }
  } else {
    throw Fail{CTORCH_TYPE, std::string("a Python ") + type_name(o) +
                                " has no ctorch value (keep it as a ctorch_py_object)"};
  }
  return out;
}

PyObject *tensor_list(const ctorch_tensor *ts, size_t n, const char *fn) {
  if (n && !ts) throw Fail{CTORCH_INVALID_ARGUMENT, "argument 'example_inputs' is NULL with n > 0"};
  Ref list(PyList_New(static_cast<Py_ssize_t>(n)));
  if (!list) throw_python(fn);
  for (size_t i = 0; i < n; ++i) {
    if (!ts[i]) throw Fail{CTORCH_INVALID_ARGUMENT, "argument 'example_inputs' has a NULL tensor"};
    PyList_SET_ITEM(list.o, static_cast<Py_ssize_t>(i), tensor_to_python(ts[i]));
  }
  return list.release();
}

}  // namespace ctorch_py

using namespace ctorch_py;

extern "C" {

CTORCH_API ctorch_status ctorch_py_from_value(ctorch_py_object *out, ctorch_value v) {
  return in_python(__func__, out, {{!v, "argument 'v' is NULL"}}, [&](const char *fn) {
    *out = new_handle(value_to_python(v, 0));
  });
}

CTORCH_API ctorch_status ctorch_py_to_value(ctorch_value *out, ctorch_py_object o) {
  return in_python(__func__, out, {}, [&](const char *fn) {
    *out = value_from_python(object_of(o, fn, "o"), 0);
  });
}

CTORCH_API ctorch_status ctorch_py_from_tensor(ctorch_py_object *out, ctorch_tensor t) {
  return in_python(__func__, out, {{!t, "argument 't' is NULL"}}, [&](const char *fn) {
    *out = new_handle(tensor_to_python(t));
  });
}

CTORCH_API ctorch_status ctorch_py_to_tensor(ctorch_tensor *out, ctorch_py_object o) {
  return in_python(__func__, out, {}, [&](const char *fn) {
    *out = tensor_from_python(object_of(o, fn, "o"));
  });
}

CTORCH_API ctorch_status ctorch_py_str(ctorch_py_object *out, const char *s) {
  return in_python(__func__, out, {{!s, "argument 's' is NULL"}}, [&](const char *fn) {
    PyObject *r = PyUnicode_DecodeUTF8(s, static_cast<Py_ssize_t>(std::strlen(s)), "strict");
    if (!r) throw_python(fn);
    *out = new_handle(r);
  });
}

CTORCH_API ctorch_status ctorch_py_dict(ctorch_py_object *out, const char *const *keys, const ctorch_py_object *values,
                                        size_t n) {
  return in_python(__func__, out, {{n && (!keys || !values), "argument 'keys' or 'values' is NULL with n > 0"}},
                   [&](const char *fn) {
    Ref d(PyDict_New());
    if (!d) throw_python(fn);
    for (size_t i = 0; i < n; ++i) {
      if (!keys[i]) throw Fail{CTORCH_INVALID_ARGUMENT, "argument 'keys' has a NULL key"};
      if (PyDict_SetItemString(d.o, keys[i], object_of(values[i], fn, "values")) != 0) throw_python(fn);
    }
    *out = new_handle(d.release());
  });
}

CTORCH_API ctorch_status ctorch_py_call_values(ctorch_value *out, ctorch_py_object callable, const ctorch_value *args,
                                               size_t n) {
  return in_python(__func__, out, {{n && !args, "argument 'args' is NULL with n > 0"}}, [&](const char *fn) {
    PyObject *f = object_of(callable, fn, "callable");
    Ref tuple(PyTuple_New(static_cast<Py_ssize_t>(n)));
    if (!tuple) throw_python(fn);
    for (size_t i = 0; i < n; ++i) {
      if (!args[i]) throw Fail{CTORCH_INVALID_ARGUMENT, "argument 'args' has a NULL value"};
      PyTuple_SET_ITEM(tuple.o, static_cast<Py_ssize_t>(i), value_to_python(args[i], 0));
    }
    Ref r(PyObject_Call(f, tuple.o, nullptr));
    if (!r) throw_python(fn);
    *out = value_from_python(r.o, 0);
  });
}

}  // extern "C"
