// Private to the checkpoint code: the Python values a torch.save file holds
// (what serialize_reader.cpp unpickles and serialize_writer.cpp pickles),
// and the dtype <-> Python name table both use.
#pragma once

#include "serialize.h"

#include <c10/core/Storage.h>

#include <memory>

namespace ctorch {

struct PV;
using P = std::shared_ptr<PV>;

// One Python value, limited to what checkpoints contain.
struct PV {
  enum Kind { None, Bool, Int, Float, Str, Tuple, List, Dict, Global, Tensor, Storage } kind = None;
  int64_t i = 0;
  double f = 0;
  bool ordered = false;  // Dict: a collections.OrderedDict (as model.state_dict() is)
  bool counter = false;  // Dict: a collections.Counter (MultiStepLR's milestones)
  std::string s, s2;     // Str; Global module (s) and name (s2)
  std::vector<P> items;  // Tuple, List; Dict as key, value, key, value...
  at::Tensor t;          // Tensor
  c10::Storage storage;  // Storage
  c10::ScalarType st = c10::kFloat;

  PV() = default;
  PV(const PV &) = delete;
  PV &operator=(const PV &) = delete;
  // Iterative teardown: a hostile file can nest lists a million deep (via
  // the memo), and recursive shared_ptr destruction would overflow the stack.
  ~PV() {
    std::vector<P> work = std::move(items);
    while (!work.empty()) {
      P q = std::move(work.back());
      work.pop_back();
      if (q && q.use_count() == 1) {
        for (auto &c : q->items) work.push_back(std::move(c));
        q->items.clear();
      }
    }
  }

  static P make(Kind k) {
    auto p = std::make_shared<PV>();
    p->kind = k;
    return p;
  }

  // Builders for values to pickle.
  static P none() { return make(None); }
  static P boolean(bool b) {
    P v = make(Bool);
    v->i = b;
    return v;
  }
  static P integer(int64_t n) {
    P v = make(Int);
    v->i = n;
    return v;
  }
  static P real(double x) {
    P v = make(Float);
    v->f = x;
    return v;
  }
  static P str(std::string text) {
    P v = make(Str);
    v->s = std::move(text);
    return v;
  }
  static P tuple(std::vector<P> items) {
    P v = make(Tuple);
    v->items = std::move(items);
    return v;
  }
  static P list(std::vector<P> items) {
    P v = make(List);
    v->items = std::move(items);
    return v;
  }
  static P dict(bool ordered = false) {
    P v = make(Dict);
    v->ordered = ordered;
    return v;
  }
  static P tensor(at::Tensor x) {
    P v = make(Tensor);
    v->t = std::move(x);
    return v;
  }
  // d[k] = v for a dict being built (keys not checked for duplicates).
  void put(P k, P v) {
    items.push_back(std::move(k));
    items.push_back(std::move(v));
  }
  // The value stored under a str key, or null.
  const P *find(const std::string &key) const {
    for (size_t j = 0; j + 1 < items.size(); j += 2)
      if (items[j]->kind == Str && items[j]->s == key) return &items[j + 1];
    return nullptr;
  }
};

// Python's name of a pickle value's type ("dict", "Tensor"), for messages.
const char *pickle_type_name(PV::Kind k);

// Every container made while unpickling. A hostile pickle can put a list
// or dict inside itself (through the memo); shared_ptr cannot free such a
// cycle, so the owner of the arena empties every container once done.
struct Arena {
  std::vector<P> containers;
  Arena() = default;
  Arena(const Arena &) = delete;
  Arena &operator=(const Arena &) = delete;
  ~Arena() {
    for (auto &c : containers) c->items.clear();
  }
};

// A torch.save file, unpickled: its root value and the arena owning its
// containers (destroyed with it).
struct Pickled {
  Arena arena;
  P root;
};

// Reads and unpickles the torch.save zip file at path (tensors are made on
// the CPU over the file's storages). Throws StatusError: IO when the file
// cannot be opened or read, VALUE when it is not a readable checkpoint.
std::unique_ptr<Pickled> read_pickled(const ByteSource &src);
inline std::unique_ptr<Pickled> read_pickled(const char *path) { return read_pickled(ByteSource::file(path)); }

// Writes root in torch.save's format (zip, protocol-2 pickle with only the
// globals torch.load(weights_only=True) allows) to path, atomically.
// Values: None, bool, int, float, str, tuple, list, dict (str or int keys;
// an OrderedDict or a Counter when flagged), Tensor. Throws StatusError (IO, NOT_IMPLEMENTED for tensors torch.save
// cannot hold, INVALID_ARGUMENT for a str that is not UTF-8).
void write_pickled(const char *path, const PV &root);
// The same bytes through a sink (a buffer, a caller's stream).
void write_pickled(const Sink &sink, const PV &root);

// The root values the checkpoint savers write, checked (a dense tensor;
// the dict's entries): shared by the file, buffer and stream forms.
P saved_tensor_value(ctorch_tensor t);
P saved_dict_value(ctorch_tensor_dict d);

// The dtype a Python dtype name (torch.<name>) stands for; false if none.
bool dtype_from_python_name(const std::string &name, c10::ScalarType *out);
// The dtype of a legacy storage class (torch.<Name>Storage); false if none.
bool dtype_from_storage_class(const std::string &name, c10::ScalarType *out);

// A str value from a C string (the state-file writers in optim/ spell their
// keys with it: `str("lr")`).
namespace value {
inline P str(const char *s) { return PV::str(s); }
}  // namespace value

}  // namespace ctorch
