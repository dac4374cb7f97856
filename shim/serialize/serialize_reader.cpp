// Reader for torch.save's zip format.
//
// libtorch's own torch::pickle_load cannot read model.state_dict() files:
// its unpickler turns collections.OrderedDict into None and cannot apply
// BUILD to a dict (the `_metadata` attribute). So this is a small
// unpickler of its own for the subset torch.save writes (protocol 2; the
// protocol 4/5 opcodes are cheap and accepted too): every read is bounds
// checked, every type checked, and anything unexpected becomes a
// StatusError(VALUE) rather than a crash. The zip container is read by
// ctorch's zip reader (zip/zip_directory.h; ZipReader in torch_zip.h: stored
// records, CRC-checked: torch_zip.h), not by libtorch's PyTorchStreamReader, whose
// constructor leaks when it throws.
#include "serialize_value.h"
#include "torch_zip.h"
#include "text/text.h"

#include <ATen/ops/empty.h>
#include <c10/core/CPUAllocator.h>
#include <c10/core/Storage.h>
#include <caffe2/serialize/versions.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <unordered_map>

namespace ctorch {
namespace {

[[noreturn]] void corrupt(const std::string &msg) { fail(CTORCH_VALUE, msg); }


using torch_zip::ZipReader;

}  // namespace

const char *pickle_type_name(PV::Kind k) {
  static const char *const names[] = {"None", "bool", "int", "float", "str", "tuple", "list", "dict", "global", "Tensor", "storage"};
  return names[k];
}

namespace {

// Memory, as the unpickler counts it (an upper bound of what it allocates):
// what each value, stack slot, container item, memo entry and dict index
// entry costs, with allocator overhead and a vector's growth slack.
constexpr uint64_t kBookPerByte = 64;
constexpr uint64_t kBookSlack = 4u << 20;
constexpr uint64_t kValueCost = sizeof(PV) + 32;  // make_shared's block + malloc's header
constexpr uint64_t kSlotCost = 2 * sizeof(P);     // a vector slot, doubled for growth slack
constexpr uint64_t kMemoCost = 64;                // an unordered_map node and its bucket
constexpr uint64_t kIndexCost = 64;               // a dict index node and its bucket
constexpr uint64_t kTensorCost = 1024;            // a TensorImpl, its StorageImpl, sizes and strides

// A dict's keys (str or int), for a hash lookup of the key being set.
struct KeyRef {
  PV::Kind kind;
  int64_t i;
  const std::string *s;
  bool operator==(const KeyRef &o) const { return kind == o.kind && (kind == PV::Str ? *s == *o.s : i == o.i); }
};
struct KeyHash {
  size_t operator()(const KeyRef &k) const {
    return k.kind == PV::Str ? std::hash<std::string>()(*k.s) : std::hash<int64_t>()(k.i) * 31u + 7u;
  }
};

class Unpickler {
 public:
  // budget: the bytes of memory the values made may take, at most
  // (LoadBudget: the file's share and the caller's limit).
  Unpickler(const char *data, size_t size, ZipReader &zip, Arena &arena, LoadBudget &budget)
      : p_(data), end_(data + size), begin_(data), zip_(zip), arena_(arena), budget_(budget) {
    for (const auto &kv : zip.record_sizes()) {
      uint64_t &n = record_sizes_[text::ascii_lower(kv.first)];
      n = std::max(n, kv.second);
    }
    none_ = make(PV::None);
    false_ = make(PV::Bool);
    true_ = make(PV::Bool);
    true_->i = 1;
    empty_tuple_ = make(PV::Tuple);
  }

  P run() {
    for (;;) {
      uint8_t op = u8();
      if (op == '.') break;
      step(op);
    }
    if (stack_.size() != 1) corrupt("pickle ended with " + std::to_string(stack_.size()) + " values on its stack");
    return stack_.back();
  }

 private:
  const char *p_, *end_, *begin_;
  ZipReader &zip_;
  Arena &arena_;
  std::vector<P> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint64_t, P> memo_;
  std::unordered_map<std::string, c10::Storage> storages_;
  LoadBudget &budget_;
  // Record sizes by lower-cased name: zip names match without regard to
  // case (ZipReader::find, as miniz), so storage keys are cached that way
  // too, or "a", "A", "aA", ... would each read one record again.
  std::unordered_map<std::string, uint64_t> record_sizes_;
  size_t stack_high_ = 0;  // the stack's largest size so far (charged)
  // Immutable values made once: None, False, True, (), the ints 0..255.
  P none_, false_, true_, empty_tuple_;
  std::array<P, 256> small_ints_;
  // Dicts larger than kIndexFrom keys: key -> index of the key in items.
  static constexpr size_t kIndexFrom = 8;
  std::unordered_map<const PV *, std::unordered_map<KeyRef, size_t, KeyHash>> index_;

  void charge(uint64_t bytes) { budget_.charge(bytes); }

  size_t offset() const { return static_cast<size_t>(p_ - begin_); }
  P make(PV::Kind k) {
    bool container = k == PV::Tuple || k == PV::List || k == PV::Dict;
    charge(kValueCost + (container ? kSlotCost : 0));
    P v = PV::make(k);
    if (container) arena_.containers.push_back(v);
    return v;
  }
  P small_int(uint8_t n) {
    P &v = small_ints_[n];
    if (!v) {
      v = make(PV::Int);
      v->i = n;
    }
    return v;
  }
  const char *take(uint64_t n) {
    if (n > static_cast<uint64_t>(end_ - p_)) corrupt("pickle data is truncated at byte " + std::to_string(offset()));
    const char *r = p_;
    p_ += n;
    return r;
  }
  template <class T>
  T le() {  // little-endian integer
    const unsigned char *b = reinterpret_cast<const unsigned char *>(take(sizeof(T)));
    uint64_t v = 0;
    for (size_t k = 0; k < sizeof(T); ++k) v |= static_cast<uint64_t>(b[k]) << (8 * k);
    return static_cast<T>(v);
  }
  uint8_t u8() { return le<uint8_t>(); }
  std::string line() {
    const char *nl = static_cast<const char *>(std::memchr(p_, '\n', static_cast<size_t>(end_ - p_)));
    if (!nl) corrupt("pickle data is truncated in a GLOBAL name");
    charge(static_cast<size_t>(nl - p_));
    std::string s(p_, nl);
    p_ = nl + 1;
    return s;
  }

  P pop() {
    if (stack_.empty() || (!marks_.empty() && marks_.back() >= stack_.size())) corrupt("pickle stack underflow at byte " + std::to_string(offset()));
    P v = std::move(stack_.back());
    stack_.pop_back();
    return v;
  }
  P &top() {
    if (stack_.empty()) corrupt("pickle stack underflow at byte " + std::to_string(offset()));
    return stack_.back();
  }
  std::vector<P> pop_mark() {
    if (marks_.empty()) corrupt("pickle MARK missing at byte " + std::to_string(offset()));
    size_t m = marks_.back();
    marks_.pop_back();
    if (m > stack_.size()) corrupt("pickle MARK beyond the stack");
    charge((stack_.size() - m) * kSlotCost);
    std::vector<P> v(std::make_move_iterator(stack_.begin() + m), std::make_move_iterator(stack_.end()));
    stack_.resize(m);
    return v;
  }
  P expect(const P &v, PV::Kind k, const char *what) {
    if (!v || v->kind != k) corrupt(std::string(what) + ": expected " + pickle_type_name(k) + ", found " + (v ? pickle_type_name(v->kind) : "nothing"));
    return v;
  }
  int64_t as_int(const P &v, const char *what) { return expect(v, PV::Int, what)->i; }
  std::vector<int64_t> int_tuple(const P &v, const char *what) {
    std::vector<int64_t> out;
    if (!v || (v->kind != PV::Tuple && v->kind != PV::List)) corrupt(std::string(what) + ": expected a tuple of ints");
    for (const auto &e : v->items) out.push_back(as_int(e, what));
    return out;
  }
  void push(P v) {
    if (stack_.size() >= stack_high_) {
      charge(kSlotCost);
      stack_high_ = stack_.size() + 1;
    }
    stack_.push_back(std::move(v));
  }
  void push_str(uint64_t n) {
    const char *b = take(n);  // the bytes are there before anything is charged for them
    charge(n);
    auto v = make(PV::Str);
    v->s.assign(b, static_cast<size_t>(n));
    push(std::move(v));
  }
  static KeyRef key_of(const PV &k) { return KeyRef{k.kind, k.i, &k.s}; }
  // d[k] = v with Python's dict semantics (an equal key keeps its place and
  // takes the new value). Keys here are str or int. Small dicts are
  // scanned; larger ones get a hash index, so a dict of n keys costs O(n),
  // not O(n^2) (100k keys took 30 s with the scan alone).
  void dict_set(PV &d, P k, P v) {
    size_t keys = d.items.size() / 2;
    if (keys < kIndexFrom) {
      for (size_t j = 0; j + 1 < d.items.size(); j += 2) {
        const P &e = d.items[j];
        if (key_of(*e) == key_of(*k)) {
          d.items[j + 1] = std::move(v);
          return;
        }
      }
    } else {
      auto &ix = index_[&d];
      if (ix.empty()) {  // built once the dict reaches kIndexFrom keys
        charge(keys * kIndexCost);
        for (size_t j = 0; j + 1 < d.items.size(); j += 2) ix.emplace(key_of(*d.items[j]), j);
      }
      auto hit = ix.find(key_of(*k));
      if (hit != ix.end()) {
        d.items[hit->second + 1] = std::move(v);
        return;
      }
      charge(kIndexCost);
      ix.emplace(key_of(*k), d.items.size());
    }
    charge(2 * kSlotCost);
    d.items.push_back(std::move(k));
    d.items.push_back(std::move(v));
  }
  // kv: pop_mark's temporary (its charge is given back once copied), or
  // SETITEM's pair (from_mark false: nothing was charged for it).
  void set_items(const P &d, std::vector<P> &&kv, bool from_mark = true) {
    expect(d, PV::Dict, "SETITEMS target");
    if (kv.size() % 2) corrupt("SETITEMS with an odd number of values");
    for (size_t j = 0; j < kv.size(); j += 2) {
      // Tensor keys: a PyTorch 1.13 optimizer's `state` inside the scheduler
      // object its OneCycleLR state holds (see placeholder); Python hashes
      // tensors by identity, so the key is the value object's address.
      if (kv[j]->kind == PV::Tensor) kv[j]->i = static_cast<int64_t>(reinterpret_cast<intptr_t>(kv[j].get()));
      else if (kv[j]->kind != PV::Str && kv[j]->kind != PV::Int)
        corrupt(std::string("dict key of type ") + pickle_type_name(kv[j]->kind));
      dict_set(*d, kv[j], kv[j + 1]);
    }
    if (from_mark) budget_.release(kv.size() * kSlotCost);
  }

  void memoize(uint64_t k) {
    const P &v = top();
    auto it = memo_.find(k);
    if (it != memo_.end()) {
      it->second = v;
      return;
    }
    charge(kMemoCost);
    memo_.emplace(k, v);
  }

  void step(uint8_t op) {
    switch (op) {
      case 0x80: {  // PROTO
        uint8_t v = u8();
        if (v < 2 || v > 5) corrupt("unsupported pickle protocol " + std::to_string(v));
        break;
      }
      case 0x95: take(8); break;  // FRAME: framing only
      case '(': marks_.push_back(stack_.size()); break;
      case '}': push(make(PV::Dict)); break;
      case ']': push(make(PV::List)); break;
      case ')': push(empty_tuple_); break;  // immutable: one for all
      case 'N': push(none_); break;
      case 0x88: push(true_); break;
      case 0x89: push(false_); break;
      case 't':
      case 'l': {
        auto v = make(op == 't' ? PV::Tuple : PV::List);
        v->items = pop_mark();
        push(std::move(v));
        break;
      }
      case 0x85:
      case 0x86:
      case 0x87: {
        size_t n = op - 0x84u;
        auto v = make(PV::Tuple);
        charge(n * kSlotCost);
        v->items.resize(n);
        for (size_t k = n; k-- > 0;) v->items[k] = pop();
        push(std::move(v));
        break;
      }
      case 'd': {
        auto v = make(PV::Dict);
        set_items(v, pop_mark());
        push(std::move(v));
        break;
      }
      case 's': {
        P val = pop(), key = pop();
        set_items(top(), {key, val}, false);
        break;
      }
      case 'u': {
        auto kv = pop_mark();
        set_items(top(), std::move(kv));
        break;
      }
      case 'a': {
        P v = pop();
        auto &l = expect(top(), PV::List, "APPEND target")->items;
        charge(kSlotCost);
        l.push_back(std::move(v));
        break;
      }
      case 'e': {
        auto vs = pop_mark();
        auto &l = expect(top(), PV::List, "APPENDS target")->items;
        charge(vs.size() * kSlotCost);
        for (auto &v : vs) l.push_back(std::move(v));
        budget_.release(vs.size() * kSlotCost);  // pop_mark's temporary
        break;
      }
      case 'K': push(small_int(u8())); break;  // immutable: one per value
      case 'M':
      case 'J': {
        auto v = make(PV::Int);
        v->i = op == 'M' ? le<uint16_t>() : static_cast<int64_t>(le<int32_t>());
        push(std::move(v));
        break;
      }
      case 0x8a: {  // LONG1: little-endian two's complement
        uint8_t n = u8();
        if (n > 8) corrupt("integer of " + std::to_string(n) + " bytes is too large");
        const unsigned char *b = reinterpret_cast<const unsigned char *>(take(n));
        uint64_t u = 0;
        for (uint8_t k = 0; k < n; ++k) u |= static_cast<uint64_t>(b[k]) << (8 * k);
        if (n && n < 8 && (b[n - 1] & 0x80)) u |= ~uint64_t(0) << (8 * n);
        auto v = make(PV::Int);
        v->i = static_cast<int64_t>(u);
        push(std::move(v));
        break;
      }
      case 'G': {  // BINFLOAT, big-endian
        const unsigned char *b = reinterpret_cast<const unsigned char *>(take(8));
        uint64_t u = 0;
        for (int k = 0; k < 8; ++k) u = (u << 8) | b[k];
        auto v = make(PV::Float);
        std::memcpy(&v->f, &u, 8);
        push(std::move(v));
        break;
      }
      case 'X': push_str(le<uint32_t>()); break;     // BINUNICODE
      case 0x8c: push_str(u8()); break;              // SHORT_BINUNICODE
      case 0x8d: push_str(le<uint64_t>()); break;    // BINUNICODE8
      case 'T': push_str(le<uint32_t>()); break;     // BINSTRING
      case 'U': push_str(u8()); break;               // SHORT_BINSTRING
      case 'B': push_str(le<uint32_t>()); break;     // BINBYTES
      case 'C': push_str(u8()); break;               // SHORT_BINBYTES
      case 'q': memoize(u8()); break;                 // BINPUT
      case 'r': memoize(le<uint32_t>()); break;       // LONG_BINPUT
      case 0x94: memoize(memo_.size()); break;        // MEMOIZE
      case 'h':
      case 'j': {
        uint64_t k = op == 'h' ? u8() : le<uint32_t>();
        auto it = memo_.find(k);
        if (it == memo_.end()) corrupt("pickle memo entry " + std::to_string(k) + " is missing");
        push(it->second);
        break;
      }
      case '0': pop(); break;
      case '1': budget_.release(pop_mark().size() * kSlotCost); break;
      case '2': push(top()); break;
      case 'c': {
        auto g = make(PV::Global);
        g->s = line();
        g->s2 = line();
        push(std::move(g));
        break;
      }
      case 0x93: {  // STACK_GLOBAL
        P name = pop(), mod = pop();
        auto g = make(PV::Global);
        g->s = expect(mod, PV::Str, "STACK_GLOBAL module")->s;
        g->s2 = expect(name, PV::Str, "STACK_GLOBAL name")->s;
        push(std::move(g));
        break;
      }
      case 'R':
      case 0x81: {  // REDUCE, NEWOBJ
        P args = pop(), fn = pop();
        expect(args, PV::Tuple, "call arguments");
        expect(fn, PV::Global, "called object");
        push(call(*fn, args->items, op == 0x81));
        break;
      }
      case 'b': {  // BUILD: object state (OrderedDict._metadata, tensor attributes): not needed
        pop();
        P &obj = top();
        if (obj->kind != PV::Dict && obj->kind != PV::Tensor && !(obj->kind == PV::Global && obj->i == 1))
          corrupt(std::string("cannot set the state of a ") + pickle_type_name(obj->kind));
        break;
      }
      case 'Q': push(persistent(pop())); break;  // BINPERSID
      default: {
        char buf[8];
        std::snprintf(buf, sizeof buf, "0x%02x", op);
        corrupt(std::string("unsupported pickle opcode ") + buf + " at byte " + std::to_string(offset() - 1));
      }
    }
  }

  // ('storage', torch.XStorage, key, location, numel) -> the record data/<key>.
  P persistent(const P &pid) {
    expect(pid, PV::Tuple, "persistent id");
    const auto &a = pid->items;
    if (a.size() != 5 || a[0]->kind != PV::Str || a[0]->s != "storage") corrupt("unknown persistent id in checkpoint");
    // torch.<X>Storage (typed: numel in elements), or PyTorch 2.x's
    // torch.storage.UntypedStorage (numel in bytes; the dtype comes with
    // _rebuild_tensor_v3).
    const P &cls = expect(a[1], PV::Global, "storage type");
    c10::ScalarType st = c10::kByte;
    bool untyped = (cls->s == "torch.storage" || cls->s == "torch") && cls->s2 == "UntypedStorage";
    if (!untyped && (cls->s != "torch" || !dtype_from_storage_class(cls->s2, &st)))
      corrupt("unsupported storage type " + cls->s + "." + cls->s2);
    const std::string &key = expect(a[2], PV::Str, "storage key")->s;
    int64_t numel = as_int(a[4], "storage size");
    if (numel < 0) corrupt("negative storage size");
    size_t item = c10::elementSize(st);
    if (static_cast<uint64_t>(numel) > SIZE_MAX / item) corrupt("storage size overflows");
    size_t nbytes = static_cast<size_t>(numel) * item;
    auto v = make(PV::Storage);
    v->st = st;
    auto cached = storages_.find(text::ascii_lower(key));
    if (cached != storages_.end()) {
      v->storage = cached->second;
      if (v->storage.nbytes() < nbytes) corrupt("storage '" + key + "' is used with two sizes");
      return v;
    }
    at::DataPtr data;
    if (nbytes) {
      std::string rec = "data/" + key;
      if (!zip_.hasRecord(rec)) corrupt("record '" + rec + "' is missing");
      budget_.charge_data(record_sizes_[text::ascii_lower(rec)]);  // the tensors the file declares, before reading them
      size_t got = 0;
      std::tie(data, got) = zip_.getRecord(rec);
      if (got < nbytes) corrupt("record '" + rec + "' holds " + std::to_string(got) + " bytes, expected " + std::to_string(nbytes));
    }
    // Resizable, as torch.load's are: libtorch 1.13's resize_ changes the
    // sizes before failing on a fixed storage, leaving a tensor larger than
    // its memory (an empty loaded tensor resized then filled wrote to NULL).
    v->storage = c10::Storage(c10::Storage::use_byte_size_t(), nbytes, std::move(data), c10::GetCPUAllocator(), true);
    storages_.emplace(text::ascii_lower(key), v->storage);
    return v;
  }

  // dtype: the tensor's (v3 records) when it is not the storage's.
  P tensor_from(const std::vector<P> &a, size_t nmin, const c10::ScalarType *dtype = nullptr) {
    if (a.size() < nmin) corrupt("tensor record has " + std::to_string(a.size()) + " fields");
    const P &s = expect(a[0], PV::Storage, "tensor storage");
    const c10::ScalarType st = dtype ? *dtype : s->st;
    int64_t off = as_int(a[1], "storage offset");
    auto sizes = int_tuple(a[2], "tensor sizes");
    auto strides = int_tuple(a[3], "tensor strides");
    if (sizes.size() != strides.size()) corrupt("tensor sizes and strides differ in length");
    if (off < 0) corrupt("negative storage offset");
    uint64_t span = 0;  // elements reachable from the offset
    bool empty = false;
    for (size_t k = 0; k < sizes.size(); ++k) {
      if (sizes[k] < 0) corrupt("negative tensor size");
      if (sizes[k] == 0) empty = true;
    }
    // The element count must fit libtorch's int64 (zero strides let huge
    // sizes stay inside a small storage).
    if (!empty) {
      uint64_t numel = 1;
      for (int64_t d : sizes)
        if (static_cast<uint64_t>(d) > static_cast<uint64_t>(INT64_MAX) / numel)
          corrupt("tensor sizes overflow: their product exceeds 2^63 elements");
        else
          numel *= static_cast<uint64_t>(d);
    }
    // Strides of an empty tensor address nothing; libtorch lets them be
    // anything (as_strided), and ctorch_save writes what the tensor has.
    for (size_t k = 0; k < strides.size() && !empty; ++k)
      if (strides[k] < 0) corrupt("negative tensor stride");
    if (!empty) {
      span = 1;
      for (size_t k = 0; k < sizes.size(); ++k) {
        uint64_t step = static_cast<uint64_t>(sizes[k] - 1), st = static_cast<uint64_t>(strides[k]);
        if (st && step > (UINT64_MAX / 4) / st) corrupt("tensor strides overflow");
        span += step * st;
      }
      size_t item = c10::elementSize(st);
      uint64_t need = static_cast<uint64_t>(off) + span;
      if (need > s->storage.nbytes() / item) corrupt("tensor reaches beyond its storage");
    }
    charge(kTensorCost + 16 * sizes.size());
    at::Tensor t = at::empty({0}, at::TensorOptions().dtype(st));
    t.set_(s->storage, off, sizes, strides);
    auto v = make(PV::Tensor);
    v->t = std::move(t);
    return v;
  }

  void set_requires_grad(const P &tensor, const P &flag) {
    if (flag->kind != PV::Bool) corrupt("requires_grad flag is not a bool");
    if (flag->i && at::isFloatingType(tensor->t.scalar_type())) tensor->t.set_requires_grad(true);
  }

  // Code that a PyTorch 1.13 scheduler's state_dict() holds (OneCycleLR's
  // `anneal_func`, a bound method): pickle writes getattr(<the scheduler
  // object, made by NEWOBJ and BUILD>, name). Read as an inert placeholder
  // (a global named <class>.<method>, i = 2; the object itself i = 1),
  // never resolved nor called; only classes under torch.optim. are
  // accepted this way, and readers of such files (scheduler states) skip
  // the key.
  static bool optim_class(const PV &fn) { return fn.s.compare(0, 12, "torch.optim.") == 0; }
  P placeholder(const std::string &m, const std::string &n, int64_t what) {
    P g = make(PV::Global);
    g->s = m, g->s2 = n, g->i = what;
    return g;
  }

  P call(const PV &fn, const std::vector<P> &a, bool newobj = false) {
    const std::string &m = fn.s, &n = fn.s2;
    if (newobj && optim_class(fn)) return placeholder(m, n, 1);
    if ((m == "__builtin__" || m == "builtins") && n == "getattr" && a.size() == 2 && a[0]->kind == PV::Global &&
        a[0]->i == 1 && a[1]->kind == PV::Str)
      return placeholder(a[0]->s + "." + a[0]->s2, a[1]->s, 2);
    // defaultdict(dict): a 1.13 optimizer's `state` inside such an object.
    if (m == "collections" && n == "defaultdict") return make(PV::Dict);
    if (m == "collections" && n == "OrderedDict") {
      if (!a.empty()) corrupt("OrderedDict called with arguments");
      P d = make(PV::Dict);
      d->ordered = true;
      return d;
    }
    // Counter({key: count}): a dict subclass that torch.load(weights_only=True)
    // allows (2.x); MultiStepLR's milestones are one.
    if (m == "collections" && n == "Counter") {
      if (a.size() > 1) corrupt("Counter called with " + std::to_string(a.size()) + " arguments");
      P d = a.empty() ? make(PV::Dict) : expect(a[0], PV::Dict, "Counter contents");
      if (d->ordered) corrupt("Counter made from an OrderedDict");
      d->counter = true;
      return d;
    }
    // (storage, offset, size, stride, requires_grad, hooks, dtype[, metadata]):
    // PyTorch 2.x, for dtypes without a legacy storage class (uint16, ...).
    if (m == "torch._utils" && n == "_rebuild_tensor_v3") {
      if (a.size() < 7) corrupt("tensor record has " + std::to_string(a.size()) + " fields");
      const P &g = expect(a[6], PV::Global, "tensor dtype");
      c10::ScalarType st;
      if (g->s != "torch" || !dtype_from_python_name(g->s2, &st)) corrupt("unsupported dtype " + g->s + "." + g->s2);
      P t = tensor_from(a, 7, &st);
      set_requires_grad(t, a[4]);
      return t;
    }
    if (m == "torch._utils" && (n == "_rebuild_tensor_v2" || n == "_rebuild_tensor")) {
      P t = tensor_from(a, n == "_rebuild_tensor" ? 4 : 5);
      if (a.size() >= 5) set_requires_grad(t, a[4]);
      return t;
    }
    if (m == "torch._utils" && (n == "_rebuild_parameter" || n == "_rebuild_parameter_with_state")) {
      if (a.size() < 2) corrupt("parameter record is too short");
      P t = expect(a[0], PV::Tensor, "parameter data");
      auto v = make(PV::Tensor);
      v->t = t->t.detach();
      set_requires_grad(v, a[1]);
      return v;
    }
    if (m == "torch.jit._pickle" && n == "restore_type_tag") {
      if (a.empty()) corrupt("restore_type_tag without a value");
      return a[0];
    }
    if (m == "torch.jit._pickle" &&
        (n == "build_intlist" || n == "build_tensorlist" || n == "build_doublelist" || n == "build_boollist")) {
      if (a.empty()) corrupt(n + " without a value");
      return expect(a[0], PV::List, n.c_str());
    }
    corrupt("the checkpoint holds a '" + m + "." + n +
            "' object; ctorch reads None, bool, int, float, str, bytes, tuples, lists, dicts, OrderedDicts, "
            "Counters, tensors and parameters (and, as inert placeholders, the bound methods of torch.optim "
            "objects that PyTorch 1.13's scheduler states hold)");
  }
};

}  // namespace



std::string canonical_torch_archive(const char *path, std::unordered_map<std::string, uint64_t> *sizes) {
  return canonical_torch_archive(ByteSource::file(path), sizes);
}

std::string canonical_torch_archive(const ByteSource &src, std::unordered_map<std::string, uint64_t> *sizes) {
  ZipReader zip(src);
  zip.check();
  if (sizes) *sizes = zip.record_sizes();
  return zip.canonical();
}

std::unique_ptr<Pickled> read_pickled(const ByteSource &src) {
  if (src.path) require_regular_file(src.path);
  const std::string name = src.name();
  auto out = std::make_unique<Pickled>();
  std::unique_ptr<ZipReader> reader;
  try {
    reader.reset(new ZipReader(src));
    reader->check();
  } catch (const StatusError &err) {
    if (err.status() != CTORCH_VALUE) throw;
    fail(CTORCH_VALUE, name + " is not a readable torch.save zip file (the format torch.save writes by default since PyTorch 1.6): " + err.what());
  }
  try {
    ZipReader &zip = *reader;
    if (zip.hasRecord("byteorder")) {
      at::DataPtr bo;
      size_t n = 0;
      std::tie(bo, n) = zip.getRecord("byteorder");
      std::string order(static_cast<const char *>(bo.get()), n);
      if (order != "little") corrupt("checkpoint byte order '" + order + "' is not supported");
    }
    if (!zip.hasRecord("data.pkl")) corrupt("no data.pkl record (not a torch.save file)");
    at::DataPtr pkl;
    size_t n = 0;
    // What the reader may allocate: the records it reads whole (data.pkl,
    // the tensors' storages: at most the file's size) and, for the values
    // it makes, at most kBookPerByte bytes per byte of data.pkl plus
    // kBookSlack (refused with OUT_OF_MEMORY beyond that, or beyond the
    // caller's ctorch_set_load_limit, before allocating).
    auto sizes = zip.record_sizes();
    uint64_t pkl_size = sizes.count("data.pkl") ? sizes["data.pkl"] : 0;
    LoadBudget budget(name, pkl_size * kBookPerByte + kBookSlack);
    budget.charge_data(pkl_size);
    std::tie(pkl, n) = zip.getRecord("data.pkl");
    out->root = Unpickler(static_cast<const char *>(pkl.get()), n, zip, out->arena, budget).run();
  } catch (const StatusError &err) {
    if (err.status() == CTORCH_OUT_OF_MEMORY || err.status() == CTORCH_IO) throw;  // they name the path
    fail(err.status(), name + " is not a readable checkpoint: " + err.what());
  } catch (const c10::Error &err) {
    // The zip layer is ctorch's own (ZipReader, checked above): what libtorch
    // refuses here is a value (a tensor's sizes, strides or dtype).
    fail(CTORCH_VALUE, name + " is not a readable checkpoint: " + err.what_without_backtrace());
  } catch (const std::bad_alloc &) {
    throw;
  } catch (const std::length_error &) {
    fail(CTORCH_OUT_OF_MEMORY, name + " declares a size too large to allocate");
  } catch (const std::exception &err) {
    fail(CTORCH_VALUE, name + " is not a readable checkpoint: " + err.what());
  }
  return out;
}

Checkpoint read_checkpoint(const ByteSource &src) {
  std::unique_ptr<Pickled> file = read_pickled(src);  // its arena outlives root's use here
  const std::string name = src.name();
  const P &root = file->root;
  Checkpoint out;
  if (root->kind == PV::Tensor) {
    out.is_tensor = true;
    out.tensor = root->t;
    return out;
  }
  if (root->kind != PV::Dict)
    fail(CTORCH_TYPE, name + " holds a " + pickle_type_name(root->kind) + ", not a tensor or a dict of tensors");
  for (size_t j = 0; j + 1 < root->items.size(); j += 2) {
    const P &k = root->items[j], &v = root->items[j + 1];
    if (k->kind != PV::Str) fail(CTORCH_TYPE, name + " holds a dict with a non-string key");
    if (v->kind != PV::Tensor)
      fail(CTORCH_TYPE, name + ": entry '" + k->s + "' has type " + pickle_type_name(v->kind) + ", not Tensor");
    out.dict.keys.push_back(k->s);
    out.dict.values.push_back(v->t);
  }
  return out;
}

}  // namespace ctorch
