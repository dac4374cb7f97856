// Reader for torch.save's zip format.
//
// libtorch's own torch::pickle_load cannot read model.state_dict() files:
// its unpickler turns collections.OrderedDict into None and cannot apply
// BUILD to a dict (the `_metadata` attribute). So this is a small
// unpickler of its own for the subset torch.save writes (protocol 2; the
// protocol 4/5 opcodes are cheap and accepted too): every read is bounds
// checked, every type checked, and anything unexpected becomes a
// StatusError(VALUE) rather than a crash. The zip container itself is read
// by libtorch's PyTorchStreamReader (miniz, CRC-checked).
#include "serialize_internal.h"

#include <ATen/ops/empty.h>
#include <c10/core/Storage.h>
#include <caffe2/serialize/inline_container.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <memory>
#include <unordered_map>

namespace ctorch {
namespace {

[[noreturn]] void corrupt(const std::string &msg) { fail(CTORCH_VALUE, msg); }

struct PV;
using P = std::shared_ptr<PV>;

// One unpickled Python value, limited to what checkpoints contain.
struct PV {
  enum Kind { None, Bool, Int, Float, Str, Tuple, List, Dict, Global, Tensor, Storage } kind = None;
  int64_t i = 0;
  double f = 0;
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
};

const char *kind_name(PV::Kind k) {
  static const char *names[] = {"None", "bool", "int", "float", "str", "tuple", "list", "dict", "global", "Tensor", "storage"};
  return names[k];
}

// torch.<Name>Storage -> dtype.
const std::map<std::string, c10::ScalarType> &storage_types() {
  static const std::map<std::string, c10::ScalarType> m = {
      {"FloatStorage", c10::kFloat},     {"DoubleStorage", c10::kDouble},
      {"HalfStorage", c10::kHalf},       {"BFloat16Storage", c10::kBFloat16},
      {"LongStorage", c10::kLong},       {"IntStorage", c10::kInt},
      {"ShortStorage", c10::kShort},     {"CharStorage", c10::kChar},
      {"ByteStorage", c10::kByte},       {"BoolStorage", c10::kBool},
      {"ComplexFloatStorage", c10::kComplexFloat}, {"ComplexDoubleStorage", c10::kComplexDouble},
      {"ComplexHalfStorage", c10::kComplexHalf},
  };
  return m;
}

class Unpickler {
 public:
  Unpickler(const char *data, size_t size, caffe2::serialize::PyTorchStreamReader &zip)
      : p_(data), end_(data + size), begin_(data), zip_(zip) {}

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
  caffe2::serialize::PyTorchStreamReader &zip_;
  std::vector<P> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint64_t, P> memo_;
  std::unordered_map<std::string, c10::Storage> storages_;

  size_t offset() const { return static_cast<size_t>(p_ - begin_); }
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
    std::vector<P> v(std::make_move_iterator(stack_.begin() + m), std::make_move_iterator(stack_.end()));
    stack_.resize(m);
    return v;
  }
  P expect(const P &v, PV::Kind k, const char *what) {
    if (!v || v->kind != k) corrupt(std::string(what) + ": expected " + kind_name(k) + ", found " + (v ? kind_name(v->kind) : "nothing"));
    return v;
  }
  int64_t as_int(const P &v, const char *what) { return expect(v, PV::Int, what)->i; }
  std::vector<int64_t> int_tuple(const P &v, const char *what) {
    std::vector<int64_t> out;
    if (!v || (v->kind != PV::Tuple && v->kind != PV::List)) corrupt(std::string(what) + ": expected a tuple of ints");
    for (const auto &e : v->items) out.push_back(as_int(e, what));
    return out;
  }
  void push(P v) { stack_.push_back(std::move(v)); }
  void push_str(uint64_t n) {
    auto v = PV::make(PV::Str);
    const char *b = take(n);
    v->s.assign(b, static_cast<size_t>(n));
    push(std::move(v));
  }
  static void dict_set(PV &d, P k, P v) {
    // Keys here are str or int; replace an existing equal key (Python dict semantics).
    for (size_t j = 0; j + 1 < d.items.size(); j += 2) {
      const P &e = d.items[j];
      if (e->kind == k->kind && ((k->kind == PV::Str && e->s == k->s) || (k->kind == PV::Int && e->i == k->i))) {
        d.items[j + 1] = std::move(v);
        return;
      }
    }
    d.items.push_back(std::move(k));
    d.items.push_back(std::move(v));
  }
  void set_items(const P &d, std::vector<P> &&kv) {
    expect(d, PV::Dict, "SETITEMS target");
    if (kv.size() % 2) corrupt("SETITEMS with an odd number of values");
    for (size_t j = 0; j < kv.size(); j += 2) {
      if (kv[j]->kind != PV::Str && kv[j]->kind != PV::Int) corrupt(std::string("dict key of type ") + kind_name(kv[j]->kind));
      dict_set(*d, kv[j], kv[j + 1]);
    }
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
      case '}': push(PV::make(PV::Dict)); break;
      case ']': push(PV::make(PV::List)); break;
      case ')': push(PV::make(PV::Tuple)); break;
      case 'N': push(PV::make(PV::None)); break;
      case 0x88:
      case 0x89: {
        auto v = PV::make(PV::Bool);
        v->i = op == 0x88;
        push(std::move(v));
        break;
      }
      case 't':
      case 'l': {
        auto v = PV::make(op == 't' ? PV::Tuple : PV::List);
        v->items = pop_mark();
        push(std::move(v));
        break;
      }
      case 0x85:
      case 0x86:
      case 0x87: {
        size_t n = op - 0x84u;
        auto v = PV::make(PV::Tuple);
        v->items.resize(n);
        for (size_t k = n; k-- > 0;) v->items[k] = pop();
        push(std::move(v));
        break;
      }
      case 'd': {
        auto v = PV::make(PV::Dict);
        set_items(v, pop_mark());
        push(std::move(v));
        break;
      }
      case 's': {
        P val = pop(), key = pop();
        set_items(top(), {key, val});
        break;
      }
      case 'u': {
        auto kv = pop_mark();
        set_items(top(), std::move(kv));
        break;
      }
      case 'a': {
        P v = pop();
        expect(top(), PV::List, "APPEND target")->items.push_back(std::move(v));
        break;
      }
      case 'e': {
        auto vs = pop_mark();
        auto &l = expect(top(), PV::List, "APPENDS target")->items;
        for (auto &v : vs) l.push_back(std::move(v));
        break;
      }
      case 'K':
      case 'M':
      case 'J': {
        auto v = PV::make(PV::Int);
        v->i = op == 'K' ? le<uint8_t>() : op == 'M' ? le<uint16_t>() : static_cast<int64_t>(le<int32_t>());
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
        auto v = PV::make(PV::Int);
        v->i = static_cast<int64_t>(u);
        push(std::move(v));
        break;
      }
      case 'G': {  // BINFLOAT, big-endian
        const unsigned char *b = reinterpret_cast<const unsigned char *>(take(8));
        uint64_t u = 0;
        for (int k = 0; k < 8; ++k) u = (u << 8) | b[k];
        auto v = PV::make(PV::Float);
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
      case 'q': memo_[u8()] = top(); break;          // BINPUT
      case 'r': memo_[le<uint32_t>()] = top(); break;  // LONG_BINPUT
      case 0x94: memo_[memo_.size()] = top(); break;   // MEMOIZE
      case 'h':
      case 'j': {
        uint64_t k = op == 'h' ? u8() : le<uint32_t>();
        auto it = memo_.find(k);
        if (it == memo_.end()) corrupt("pickle memo entry " + std::to_string(k) + " is missing");
        push(it->second);
        break;
      }
      case '0': pop(); break;
      case '1': pop_mark(); break;
      case '2': push(top()); break;
      case 'c': {
        auto g = PV::make(PV::Global);
        g->s = line();
        g->s2 = line();
        push(std::move(g));
        break;
      }
      case 0x93: {  // STACK_GLOBAL
        P name = pop(), mod = pop();
        auto g = PV::make(PV::Global);
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
        push(call(*fn, args->items));
        break;
      }
      case 'b': {  // BUILD: object state (OrderedDict._metadata, tensor attributes): not needed
        pop();
        P &obj = top();
        if (obj->kind != PV::Dict && obj->kind != PV::Tensor)
          corrupt(std::string("cannot set the state of a ") + kind_name(obj->kind));
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
    const P &cls = expect(a[1], PV::Global, "storage type");
    auto it = storage_types().find(cls->s2);
    if (cls->s != "torch" || it == storage_types().end()) corrupt("unsupported storage type " + cls->s + "." + cls->s2);
    const std::string &key = expect(a[2], PV::Str, "storage key")->s;
    int64_t numel = as_int(a[4], "storage size");
    if (numel < 0) corrupt("negative storage size");
    c10::ScalarType st = it->second;
    size_t item = c10::elementSize(st);
    if (static_cast<uint64_t>(numel) > SIZE_MAX / item) corrupt("storage size overflows");
    size_t nbytes = static_cast<size_t>(numel) * item;
    auto v = PV::make(PV::Storage);
    v->st = st;
    auto cached = storages_.find(key);
    if (cached != storages_.end()) {
      v->storage = cached->second;
      if (v->storage.nbytes() < nbytes) corrupt("storage '" + key + "' is used with two sizes");
      return v;
    }
    at::DataPtr data;
    if (nbytes) {
      std::string rec = "data/" + key;
      if (!zip_.hasRecord(rec)) corrupt("record '" + rec + "' is missing");
      size_t got = 0;
      std::tie(data, got) = zip_.getRecord(rec);
      if (got < nbytes) corrupt("record '" + rec + "' holds " + std::to_string(got) + " bytes, expected " + std::to_string(nbytes));
    }
    v->storage = c10::Storage(c10::Storage::use_byte_size_t(), nbytes, std::move(data), nullptr, false);
    storages_.emplace(key, v->storage);
    return v;
  }

  P tensor_from(const std::vector<P> &a, size_t nmin) {
    if (a.size() < nmin) corrupt("tensor record has " + std::to_string(a.size()) + " fields");
    const P &s = expect(a[0], PV::Storage, "tensor storage");
    int64_t off = as_int(a[1], "storage offset");
    auto sizes = int_tuple(a[2], "tensor sizes");
    auto strides = int_tuple(a[3], "tensor strides");
    if (sizes.size() != strides.size()) corrupt("tensor sizes and strides differ in length");
    if (off < 0) corrupt("negative storage offset");
    uint64_t span = 0;  // elements reachable from the offset
    bool empty = false;
    for (size_t k = 0; k < sizes.size(); ++k) {
      if (sizes[k] < 0 || strides[k] < 0) corrupt("negative tensor size or stride");
      if (sizes[k] == 0) empty = true;
    }
    if (!empty) {
      span = 1;
      for (size_t k = 0; k < sizes.size(); ++k) {
        uint64_t step = static_cast<uint64_t>(sizes[k] - 1), st = static_cast<uint64_t>(strides[k]);
        if (st && step > (UINT64_MAX / 4) / st) corrupt("tensor strides overflow");
        span += step * st;
      }
      size_t item = c10::elementSize(s->st);
      uint64_t need = static_cast<uint64_t>(off) + span;
      if (need > s->storage.nbytes() / item) corrupt("tensor reaches beyond its storage");
    }
    at::Tensor t = at::empty({0}, at::TensorOptions().dtype(s->st));
    t.set_(s->storage, off, sizes, strides);
    auto v = PV::make(PV::Tensor);
    v->t = std::move(t);
    return v;
  }

  void set_requires_grad(const P &tensor, const P &flag) {
    if (flag->kind != PV::Bool) corrupt("requires_grad flag is not a bool");
    if (flag->i && at::isFloatingType(tensor->t.scalar_type())) tensor->t.set_requires_grad(true);
  }

  P call(const PV &fn, const std::vector<P> &a) {
    const std::string &m = fn.s, &n = fn.s2;
    if (m == "collections" && n == "OrderedDict") {
      if (!a.empty()) corrupt("OrderedDict called with arguments");
      return PV::make(PV::Dict);
    }
    if (m == "torch._utils" && (n == "_rebuild_tensor_v2" || n == "_rebuild_tensor")) {
      P t = tensor_from(a, n == "_rebuild_tensor" ? 4 : 5);
      if (a.size() >= 5) set_requires_grad(t, a[4]);
      return t;
    }
    if (m == "torch._utils" && (n == "_rebuild_parameter" || n == "_rebuild_parameter_with_state")) {
      if (a.size() < 2) corrupt("parameter record is too short");
      P t = expect(a[0], PV::Tensor, "parameter data");
      auto v = PV::make(PV::Tensor);
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
            "' object; ctorch reads tensors and dicts of tensors only");
  }
};

}  // namespace

void require_readable_file(const char *path) {
  // Checked before libtorch's readers see the path: a missing or unreadable
  // file is an IO error, not a corrupt archive.
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(CTORCH_IO, std::string("cannot open '") + path + "': " + std::strerror(errno));
  struct stat sb;
  int rc = ::fstat(fd, &sb);
  int e = errno;
  ::close(fd);
  if (rc != 0) fail(CTORCH_IO, std::string("cannot stat '") + path + "': " + std::strerror(e));
  if (!S_ISREG(sb.st_mode)) fail(CTORCH_IO, std::string("'") + path + "' is not a regular file");
}

Checkpoint read_checkpoint(const char *path) {
  require_readable_file(path);
  Checkpoint out;
  P root;
  try {
    caffe2::serialize::PyTorchStreamReader zip{std::string(path)};
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
    std::tie(pkl, n) = zip.getRecord("data.pkl");
    root = Unpickler(static_cast<const char *>(pkl.get()), n, zip).run();
  } catch (const StatusError &err) {
    fail(err.status(), std::string("'") + path + "' is not a readable checkpoint: " + err.what());
  } catch (const c10::Error &err) {
    // The zip layer: a truncated, garbage or legacy (pre-1.6, non-zip) file.
    fail(CTORCH_VALUE, std::string("'") + path + "' is not a readable torch.save zip file (the format torch.save writes by default since PyTorch 1.6): " + err.what_without_backtrace());
  }
  if (root->kind == PV::Tensor) {
    out.is_tensor = true;
    out.tensor = root->t;
    return out;
  }
  if (root->kind != PV::Dict)
    fail(CTORCH_TYPE, std::string("'") + path + "' holds a " + kind_name(root->kind) + ", not a tensor or a dict of tensors");
  for (size_t j = 0; j + 1 < root->items.size(); j += 2) {
    const P &k = root->items[j], &v = root->items[j + 1];
    if (k->kind != PV::Str) fail(CTORCH_TYPE, std::string("'") + path + "' holds a dict with a non-string key");
    if (v->kind != PV::Tensor)
      fail(CTORCH_TYPE, std::string("'") + path + "': entry '" + k->s + "' has type " + kind_name(v->kind) + ", not Tensor");
    out.dict.keys.push_back(k->s);
    out.dict.values.push_back(v->t);
  }
  return out;
}

}  // namespace ctorch
