// Replays a TorchScript archive's pickle (data.pkl, constants.pkl,
// code/*.debug_pkl) the way libtorch's Unpickler moves its stack, over
// abstract values, and refuses what that unpickler would act on unchecked.
// libtorch 1.13's Unpickler (torch/csrc/jit/serialization/unpickler.cpp)
// trusts the stream:
//   - TUPLE1-3, NEWOBJ, BUILD/REDUCE pop without looking, TUPLE/LIST/DICT
//     take a MARK above the stack top, DICT pairs an odd count: 14 bytes of
//     constants.pkl (PROTO 2, one string, TUPLE3) are a SIGSEGV, and in a
//     code/*.debug_pkl heap corruption once an error message is formatted
//     (found by fuzz_torchscript);
//   - a memo index up to 2^32 grows the memo table to it (a 64 GiB request);
//   - a GLOBAL name without its newline is looked for in stale buffer bytes;
//   - a storage may claim more elements than its record holds, and a tensor
//     sizes, strides and offset reaching past its storage: later reads leave
//     the buffer;
//   - an Enum value that matches no member leaves nothing on the stack.
// torch.jit.save writes none of these. Values are tracked only as far as
// these checks need (ints, floats, strings, tuples, storages); everything
// else is "other", which libtorch's own type checks (toInt(), toTuple()...)
// then guard. A refusal names the record and the byte.
#include "jit_archive_check.h"

#include <c10/core/ScalarType.h>

#include <cstring>
#include <memory>

namespace ctorch {
namespace {

struct Val;
using V = std::shared_ptr<const Val>;
struct Val {
  enum Kind { Other, Lit, Tuple, Tensor } kind = Other;
  JitLiteral lit;          // Lit
  std::vector<V> items;    // Tuple
  uint64_t nbytes = 0;     // Tensor: its storage's bytes
  size_t itemsize = 1;     // Tensor: its element size
};

// What a REDUCE/BUILD on globals_[idx] does.
struct Global {
  enum Kind { Plain, Enum, RebuildTensor, Sparse } kind = Plain;
  const std::vector<JitLiteral> *members = nullptr;  // Enum
  std::string name;
};

class PickleCheck {
 public:
  PickleCheck(const std::string &record, const char *data, size_t size, const JitEnums &enums,
              const std::string &storage_dir, const std::unordered_map<std::string, uint64_t> &sizes)
      : record_(record), begin_(data), p_(data), end_(data + size), enums_(enums), dir_(storage_dir), sizes_(sizes) {}

  void run() {
    if (u8() != 0x80) bad("it does not start with PROTO");
    uint8_t proto = u8();
    if (proto != 2) bad("pickle protocol " + std::to_string(proto) + " (TorchScript writes 2)");
    for (;;) {
      op_at_ = static_cast<size_t>(p_ - begin_);
      uint8_t op = u8();
      if (op == '.') break;
      step(op);
    }
    if (stack_.size() != 1) bad("it ends with " + std::to_string(stack_.size()) + " values on the stack, not 1");
  }

 private:
  const std::string &record_;
  const char *begin_, *p_, *end_;
  const JitEnums &enums_;
  const std::string &dir_;
  const std::unordered_map<std::string, uint64_t> &sizes_;
  size_t op_at_ = 0;
  std::vector<V> stack_;
  std::vector<size_t> marks_;
  std::vector<V> memo_;
  std::vector<Global> globals_;

  [[noreturn]] void bad(const std::string &why, bool unchecked = true) {
    fail(CTORCH_VALUE, "pickle '" + record_ + "', opcode at byte " + std::to_string(op_at_) + ": " + why +
                           (unchecked ? " (torch.jit.save never writes this; libtorch's unpickler does not check it)" : ""));
  }
  const char *take(size_t n) {
    if (n > static_cast<size_t>(end_ - p_)) bad("the pickle is truncated");
    const char *r = p_;
    p_ += n;
    return r;
  }
  uint64_t le(size_t n) {
    const unsigned char *b = reinterpret_cast<const unsigned char *>(take(n));
    uint64_t v = 0;
    for (size_t k = 0; k < n; ++k) v |= static_cast<uint64_t>(b[k]) << (8 * k);
    return v;
  }
  uint8_t u8() { return static_cast<uint8_t>(le(1)); }
  std::string line() {
    const void *nl = std::memchr(p_, '\n', static_cast<size_t>(end_ - p_));
    if (!nl) bad("a GLOBAL name has no terminating newline");
    std::string s(p_, static_cast<const char *>(nl));
    p_ = static_cast<const char *>(nl) + 1;
    return s;
  }

  void push(V v) { stack_.push_back(std::move(v)); }
  V other() { return std::make_shared<Val>(); }
  V literal(JitLiteral lit) {
    auto v = std::make_shared<Val>();
    v->kind = Val::Lit;
    v->lit = std::move(lit);
    return v;
  }
  V integer(int64_t i) {
    JitLiteral lit;
    lit.i = i;
    return literal(std::move(lit));
  }
  void need(size_t n) {
    if (stack_.size() < n) bad("it takes " + std::to_string(n) + " values from a stack of " + std::to_string(stack_.size()));
  }
  V pop() {
    need(1);
    V v = std::move(stack_.back());
    stack_.pop_back();
    return v;
  }
  // The innermost MARK, removed; it must not lie above the stack top.
  size_t pop_mark() {
    if (marks_.empty()) bad("no MARK");
    size_t m = marks_.back();
    marks_.pop_back();
    if (m > stack_.size()) bad("its MARK lies above the stack top");
    return m;
  }
  static bool is_int(const V &v) { return v->kind == Val::Lit && v->lit.kind == JitLiteral::Int; }
  static bool is_str(const V &v) { return v->kind == Val::Lit && v->lit.kind == JitLiteral::Str; }
  static const V *at(const V &tuple, size_t i) {
    return tuple->kind == Val::Tuple && i < tuple->items.size() ? &tuple->items[i] : nullptr;
  }

  void step(uint8_t op) {
    switch (op) {
      case ']': case '}': case 'N': case 0x88: case 0x89: push(other()); break;  // list, dict, None, bools
      case ')': {
        auto v = std::make_shared<Val>();
        v->kind = Val::Tuple;
        push(std::move(v));
        break;
      }
      case 'K': push(integer(static_cast<int64_t>(le(1)))); break;
      case 'M': push(integer(static_cast<int64_t>(le(2)))); break;
      case 'J': push(integer(static_cast<int32_t>(le(4)))); break;
      case 0x8a: {  // LONG1: libtorch reads exactly 8 bytes
        if (u8() != 8) bad("LONG1 of other than 8 bytes");
        push(integer(static_cast<int64_t>(le(8))));
        break;
      }
      case 'G': {  // BINFLOAT, big-endian
        const unsigned char *b = reinterpret_cast<const unsigned char *>(take(8));
        uint64_t u = 0;
        for (int k = 0; k < 8; ++k) u = (u << 8) | b[k];
        JitLiteral lit;
        lit.kind = JitLiteral::Float;
        std::memcpy(&lit.f, &u, 8);
        push(literal(std::move(lit)));
        break;
      }
      case 'X': {  // BINUNICODE: the length is checked before libtorch allocates it
        size_t n = static_cast<size_t>(le(4));
        JitLiteral lit;
        lit.kind = JitLiteral::Str;
        lit.s.assign(take(n), n);
        push(literal(std::move(lit)));
        break;
      }
      case '(': marks_.push_back(stack_.size()); break;
      case 't': {
        size_t m = pop_mark();
        auto v = std::make_shared<Val>();
        v->kind = Val::Tuple;
        v->items.assign(stack_.begin() + static_cast<std::ptrdiff_t>(m), stack_.end());
        stack_.resize(m);
        push(std::move(v));
        break;
      }
      case 0x85: case 0x86: case 0x87: {  // TUPLE1-3
        size_t n = op - 0x84u;
        need(n);
        auto v = std::make_shared<Val>();
        v->kind = Val::Tuple;
        v->items.assign(stack_.end() - static_cast<std::ptrdiff_t>(n), stack_.end());
        stack_.resize(stack_.size() - n);
        push(std::move(v));
        break;
      }
      case 'l': stack_.resize(pop_mark()); push(other()); break;  // LIST
      case 'e': {  // APPENDS onto the list below the MARK
        size_t m = pop_mark();
        if (m == 0) bad("APPENDS with nothing below its MARK");
        stack_.resize(m);
        break;
      }
      case 'd': case 'u': {  // DICT, SETITEMS (onto the dict below the MARK)
        size_t m = pop_mark();
        if ((stack_.size() - m) % 2) bad("a dict from an odd number of values");
        if (op == 'u' && m == 0) bad("SETITEMS with nothing below its MARK");
        stack_.resize(m);
        if (op == 'd') push(other());
        break;
      }
      case 'q': case 'r': {  // BINPUT, LONG_BINPUT: libtorch grows its memo to the index
        size_t id = static_cast<size_t>(le(op == 'q' ? 1 : 4));
        need(1);
        if (id > static_cast<size_t>(end_ - begin_)) bad("memo index " + std::to_string(id) + " beyond any the pickle could use");
        if (id >= memo_.size()) memo_.resize(id + 1);
        memo_[id] = stack_.back();
        break;
      }
      case 'h': case 'j': {  // BINGET, LONG_BINGET
        size_t id = static_cast<size_t>(le(op == 'h' ? 1 : 4));
        if (id >= memo_.size()) bad("memo index " + std::to_string(id) + " was never set");
        push(memo_[id] ? memo_[id] : other());  // a gap libtorch fills with None
        break;
      }
      case 'c': global(); break;
      case 0x81: pop(); break;  // NEWOBJ: libtorch drops the (empty) argument tuple
      case 'b': case 'R': reduce(); break;
      case 'Q': persistent(); break;
      default:
        // Refused rather than skipped: past an opcode it does not model,
        // this replay cannot vouch for the rest.
        bad("opcode " + std::to_string(op) + ", which TorchScript pickles do not use (a torch.save file is read with ctorch_load)", false);
    }
  }

  // GLOBAL: what Unpickler::readGlobal pushes and registers.
  void global() {
    std::string module = line(), name = line();
    if (module == "torch" && name != "device") {
      // Storage types and qschemes are pushed as ints, with no global.
      for (int t = 0; t < static_cast<int>(c10::ScalarType::NumOptions); ++t) {
        if (name == std::string(c10::toString(static_cast<c10::ScalarType>(t))) + "Storage") {
          push(integer(t));
          return;
        }
      }
      push(other());  // a qscheme, or an unknown name libtorch refuses
      return;
    }
    Global g;
    g.name = module + "." + name;
    if (module == "torch._utils") {
      if (name == "_rebuild_tensor_v2" || name == "_rebuild_qtensor") g.kind = Global::RebuildTensor;
      if (name == "_rebuild_sparse_tensor") g.kind = Global::Sparse;
    } else {
      auto e = enums_.find(g.name);
      if (e != enums_.end()) {
        g.kind = Global::Enum;
        g.members = &e->second;
      }
    }
    globals_.push_back(std::move(g));
    push(integer(static_cast<int64_t>(globals_.size() - 1)));
  }

  // BUILD and REDUCE: <global index> <argument> -> the global's result.
  void reduce() {
    need(2);
    V arg = pop(), fn = pop();
    if (!is_int(fn)) bad("REDUCE/BUILD on something other than a global's index");
    if (fn->lit.i < 0 || static_cast<uint64_t>(fn->lit.i) >= globals_.size()) bad("REDUCE/BUILD on an unknown global");
    const Global &g = globals_[static_cast<size_t>(fn->lit.i)];
    V result = other();
    if (g.kind == Global::Enum) {
      bool found = false;
      if (arg->kind == Val::Lit)
        for (const JitLiteral &m : *g.members) found = found || m == arg->lit;
      if (!found) bad("a value that is no member of Enum '" + g.name + "'");
    } else if (g.kind == Global::Sparse) {
      // libtorch builds it with the _unsafe constructors: indices unchecked.
      bad("a sparse tensor (ctorch does not load sparse tensors from TorchScript archives)");
    } else if (g.kind == Global::RebuildTensor) {
      result = rebuilt_tensor(arg);
    }
    push(std::move(result));
  }

  // _rebuild_tensor_v2 / _rebuild_qtensor (storage, offset, size, stride, ...):
  // libtorch sets sizes, strides and offset on the storage unchecked.
  V rebuilt_tensor(const V &arg) {
    const V *storage = at(arg, 0), *offset = at(arg, 1), *size = at(arg, 2), *stride = at(arg, 3);
    if (!storage || (*storage)->kind != Val::Tensor) bad("a tensor rebuilt from something other than a storage");
    if (!offset || !is_int(*offset) || !size || !stride || (*size)->kind != Val::Tuple ||
        (*stride)->kind != Val::Tuple || (*size)->items.size() != (*stride)->items.size())
      bad("a tensor with malformed offset, sizes or strides");
    int64_t off = (*offset)->lit.i;
    if (off < 0) bad("a tensor with a negative storage offset");
    // Highest element reached: offset + sum((size - 1) * stride); empty if any size is 0.
    unsigned __int128 last = static_cast<uint64_t>(off);
    bool empty = false;
    for (size_t d = 0; d < (*size)->items.size(); ++d) {
      const V &sz = (*size)->items[d], &st = (*stride)->items[d];
      if (!is_int(sz) || !is_int(st) || sz->lit.i < 0 || st->lit.i < 0) bad("a tensor with a negative or non-integer size or stride");
      if (sz->lit.i == 0) empty = true;
      else last += static_cast<unsigned __int128>(sz->lit.i - 1) * static_cast<uint64_t>(st->lit.i);
      if (last >> 64) bad("a tensor reaching past the end of its storage");  // also keeps the sum from wrapping
    }
    if (!empty && (last + 1) * (*storage)->itemsize > (*storage)->nbytes)
      bad("a tensor reaching past the end of its storage");
    return *storage;  // a view of the same storage
  }

  // BINPERSID ('storage', dtype, key, device, numel): a storage over record
  // <storage_dir><key>, which must hold numel elements.
  void persistent() {
    V arg = pop();
    const V *kind = at(arg, 0), *dtype = at(arg, 1), *key = at(arg, 2), *numel = at(arg, 4);
    if (!kind || !is_str(*kind) || (*kind)->lit.s != "storage")
      bad("a persistent id that is not a storage");
    if (!dtype || !is_int(*dtype) || (*dtype)->lit.i < 0 ||
        (*dtype)->lit.i >= static_cast<int64_t>(c10::ScalarType::NumOptions))
      bad("a storage of an unknown dtype");
    if (!key || !is_str(*key) || !numel || !is_int(*numel))
      bad("a storage with a malformed key or element count");
    auto type = static_cast<c10::ScalarType>((*dtype)->lit.i);
    if (type == c10::ScalarType::Undefined) bad("a storage of an unknown dtype");
    auto v = std::make_shared<Val>();
    v->kind = Val::Tensor;
    v->itemsize = c10::elementSize(type);
    int64_t n = (*numel)->lit.i;
    if (n < 0) bad("a storage with a negative element count");
    if (n > 0) {
      auto rec = sizes_.find(dir_ + (*key)->lit.s);
      if (dir_.empty() || rec == sizes_.end()) bad("a storage with no record '" + dir_ + (*key)->lit.s + "'");
      if (static_cast<unsigned __int128>(n) * v->itemsize > rec->second)
        bad("storage '" + (*key)->lit.s + "' claims " + std::to_string(n) + " elements; its record holds " +
            std::to_string(rec->second) + " bytes");
      v->nbytes = static_cast<uint64_t>(n) * v->itemsize;
    }
    push(std::move(v));
  }
};

}  // namespace

void check_torchscript_pickle(const std::string &record, const char *data, size_t size, const JitEnums &enums,
                              const std::string &storage_dir, const std::unordered_map<std::string, uint64_t> &sizes) {
  PickleCheck(record, data, size, enums, storage_dir, sizes).run();
}

}  // namespace ctorch
