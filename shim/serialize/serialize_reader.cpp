// Reader for torch.save's zip format.
//
// libtorch's own torch::pickle_load cannot read model.state_dict() files:
// its unpickler turns collections.OrderedDict into None and cannot apply
// BUILD to a dict (the `_metadata` attribute). So this is a small
// unpickler of its own for the subset torch.save writes (protocol 2; the
// protocol 4/5 opcodes are cheap and accepted too): every read is bounds
// checked, every type checked, and anything unexpected becomes a
// StatusError(VALUE) rather than a crash. The zip container is read by
// ctorch's zip reader (zip/zip_directory.h; ZipReader below: stored
// records, CRC-checked), not by libtorch's PyTorchStreamReader, whose
// constructor leaks when it throws.
#include "serialize_value.h"
#include "zip/zip_directory.h"

#include <ATen/ops/empty.h>
#include <c10/core/CPUAllocator.h>
#include <c10/core/Storage.h>
#include <caffe2/serialize/versions.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <memory>
#include <unordered_map>

namespace ctorch {
namespace {

[[noreturn]] void corrupt(const std::string &msg) { fail(CTORCH_VALUE, msg); }


// ---- the zip layer ------------------------------------------------------------

// The file, read with pread: failing to read it is CTORCH_IO, not a
// refusal of its contents.
class FileSource : public zip::Source {
 public:
  explicit FileSource(const char *path) : path_(path) {
    fd_ = ::open(path, O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) fail(CTORCH_IO, std::string("cannot open '") + path + "': " + std::strerror(errno));
    struct stat sb;
    if (::fstat(fd_, &sb) != 0) {
      ::close(fd_);
      fail(CTORCH_IO, std::string("cannot stat '") + path + "'");
    }
    size_ = static_cast<uint64_t>(sb.st_size);
  }
  ~FileSource() override { ::close(fd_); }
  FileSource(const FileSource &) = delete;
  FileSource &operator=(const FileSource &) = delete;
  uint64_t size() const override { return size_; }
  void read(uint64_t off, void *buf, size_t n) const override {
    char *p = static_cast<char *>(buf);
    while (n) {
      ssize_t r = ::pread(fd_, p, n, static_cast<off_t>(off));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) fail(CTORCH_IO, std::string("cannot read '") + path_ + "'");
      p += r;
      off += static_cast<uint64_t>(r);
      n -= static_cast<size_t>(r);
    }
  }

 private:
  const char *path_;
  int fd_;
  uint64_t size_ = 0;
};

// A torch.save / torch.jit.save archive read by ctorch itself (zip/: stored
// records, CRC-checked) rather than by libtorch's PyTorchStreamReader, whose
// constructor leaks miniz's state whenever it throws on a corrupt archive.
class ZipReader {
 public:
  explicit ZipReader(const char *path) : file_(path) {}

  // The checks PyTorchStreamReader's constructor makes (so that, passed,
  // libtorch can open the file without throwing from it).
  void check() {
    guarded([&] {
      dir_.reset(new zip::Directory(file_));  // refuses an archive with no entries
      const std::string &first = dir_->entries()[0].name;
      size_t slash = first.find('/');
      if (slash == std::string::npos) bad("its first entry '" + first + "' is not inside a folder");
      prefix_ = first.substr(0, slash + 1);
      const zip::Entry *v = dir_->find(prefix_ + ".data/version");
      if (!v) v = dir_->find(prefix_ + "version");
      if (!v) bad("it has no 'version' record");
      uint64_t version = parse_version(record(*v, 4096));
      if (version < caffe2::serialize::kMinSupportedFileFormatVersion ||
          version > caffe2::serialize::kMaxSupportedFileFormatVersion)
        bad("archive format version " + std::to_string(version) + " is not supported by this libtorch");
    });
  }

  bool hasRecord(const std::string &name) {
    return guarded([&] { return dir_->find(prefix_ + name) != nullptr; });
  }

  // The whole archive rewritten as a plain stored zip (every record's CRC
  // checked on the way): what libtorch's reader then parses is well formed
  // by construction, whatever odd but valid-looking layout the file had.
  std::string canonical() {
    return guarded([&] {
      const std::vector<zip::Entry> &entries = dir_->entries();
      // Past the plain zip format's limits: "" (the caller opens the file as
      // is, after check()).
      // Sizes are checked against the file first: a directory claiming a
      // 4 GiB record in a small file must not send it down the large path.
      uint64_t total = 22;
      for (const zip::Entry &en : entries) {
        if (en.csize > file_.size()) bad("'" + en.name + "' is larger than the file");
        total += 76 + 2 * en.name.size() + en.csize;
      }
      if (entries.size() > 0xFFFF || total > 0xFFFFFFF0u) return std::string();
      std::string out, cd;
      auto put = [](std::string &s, uint64_t v, int n) {
        for (int k = 0; k < n; ++k) s.push_back(static_cast<char>((v >> (8 * k)) & 0xFF));
      };
      for (const zip::Entry &en : entries) {
        // Stored records are CRC-checked here; deflated ones (torch.jit.save
        // compresses code/) are copied as they are and checked by
        // check_deflated_records (models/jit_zip_check.cpp) before libtorch
        // reads them.
        uint64_t at = raw_offset(en);
        if (en.method == 0 && en.csize != en.usize) bad("'" + en.name + "' has inconsistent sizes");
        std::string data(static_cast<size_t>(en.csize), '\0');
        if (!data.empty()) dir_->read(at, &data[0], data.size());
        if (en.method == 0 && zip::crc32_of(data.data(), data.size()) != en.crc) bad("CRC mismatch in '" + en.name + "'");
        uint64_t off = out.size();
        put(out, 0x04034b50, 4); put(out, 20, 2); put(out, 0, 2); put(out, en.method, 2); put(out, 0, 4);
        put(out, en.crc, 4); put(out, data.size(), 4); put(out, en.usize, 4);
        put(out, en.name.size(), 2); put(out, 0, 2);
        out += en.name;
        out += data;
        put(cd, 0x02014b50, 4); put(cd, 20, 2); put(cd, 20, 2); put(cd, 0, 2); put(cd, en.method, 2); put(cd, 0, 4);
        put(cd, en.crc, 4); put(cd, data.size(), 4); put(cd, en.usize, 4);
        put(cd, en.name.size(), 2); put(cd, 0, 2); put(cd, 0, 2); put(cd, 0, 2); put(cd, 0, 2); put(cd, 0, 4);
        put(cd, off, 4);
        cd += en.name;
      }
      uint64_t cd_off = out.size();
      out += cd;
      put(out, 0x06054b50, 4); put(out, 0, 2); put(out, 0, 2);
      put(out, entries.size(), 2); put(out, entries.size(), 2);
      put(out, cd.size(), 4); put(out, cd_off, 4); put(out, 0, 2);
      return out;
    });
  }
  // Uncompressed size of every record, by the name libtorch's reader uses
  // (without the archive's folder). A name stored twice keeps the smaller
  // size: which copy miniz returns is unspecified.
  std::unordered_map<std::string, uint64_t> record_sizes() const {
    std::unordered_map<std::string, uint64_t> out;
    for (const zip::Entry &en : dir_->entries()) {
      if (en.name.compare(0, prefix_.size(), prefix_) != 0) continue;
      auto ins = out.emplace(en.name.substr(prefix_.size()), en.usize);
      if (!ins.second && en.usize < ins.first->second) ins.first->second = en.usize;
    }
    return out;
  }
  // The record's bytes in memory from libtorch's CPU allocator (so a storage
  // made over them frees and resizes them as any other).
  std::tuple<at::DataPtr, size_t> getRecord(const std::string &name) {
    return guarded([&] {
      const zip::Entry *en = dir_->find(prefix_ + name);
      if (!en) bad("no record '" + name + "'");
      uint64_t at = data_offset(*en);  // checks that its bytes lie inside the file
      size_t n = static_cast<size_t>(en->usize);
      at::DataPtr d = c10::GetCPUAllocator()->allocate(n);
      if (n) dir_->read(at, d.get(), n);
      if (zip::crc32_of(d.get(), n) != en->crc) bad("CRC mismatch in '" + en->name + "'");
      return std::make_tuple(std::move(d), n);
    });
  }

 private:
  FileSource file_;
  std::unique_ptr<zip::Directory> dir_;
  std::string prefix_;

  [[noreturn]] static void bad(const std::string &why) {
    fail(CTORCH_VALUE, std::string("not a readable torch zip archive: ") + why);
  }
  // Runs f, turning the zip reader's refusals into bad().
  template <class F>
  static auto guarded(F &&f) -> decltype(f()) {
    try {
      return f();
    } catch (const zip::Error &e) {
      bad(e.what());
    }
  }

  // Where a stored record's bytes start (after its local header).
  uint64_t data_offset(const zip::Entry &en) {
    if (en.method != 0) bad("'" + en.name + "' is compressed (torch.save stores records uncompressed)");
    if (en.csize != en.usize) bad("'" + en.name + "' has inconsistent sizes");
    return raw_offset(en);
  }
  // Where a record's (possibly deflated) bytes start; csize of them lie
  // inside the file.
  uint64_t raw_offset(const zip::Entry &en) {
    zip::Directory::require_readable(en);
    return dir_->data_offset(en);
  }

  std::string record(const zip::Entry &en, uint64_t max) {
    uint64_t data = data_offset(en);
    if (en.usize > max) bad("'" + en.name + "' is too long for a version number");
    std::string out(static_cast<size_t>(en.usize), '\0');
    dir_->read(data, &out[0], out.size());
    if (zip::crc32_of(out.data(), out.size()) != en.crc) bad("CRC mismatch in '" + en.name + "'");
    return out;
  }

  // std::stoull's grammar (which libtorch applies): spaces, a sign, digits.
  uint64_t parse_version(const std::string &s) {
    size_t i = 0;
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    bool neg = false;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) neg = s[i++] == '-';
    if (i >= s.size() || !std::isdigit(static_cast<unsigned char>(s[i]))) bad("its version record is not a number");
    uint64_t v = 0;
    for (; i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])); ++i) {
      unsigned d = static_cast<unsigned>(s[i] - '0');
      if (v > (UINT64_MAX - d) / 10) bad("its version number overflows");
      v = v * 10 + d;
    }
    return neg ? 0 - v : v;
  }
};


}  // namespace

const char *kind_name(PV::Kind k) {
  static const char *const names[] = {"None", "bool", "int", "float", "str", "tuple", "list", "dict", "global", "Tensor", "storage"};
  return names[k];
}

namespace {

class Unpickler {
 public:
  Unpickler(const char *data, size_t size, ZipReader &zip, Arena &arena)
      : p_(data), end_(data + size), begin_(data), zip_(zip), arena_(arena) {}

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

  size_t offset() const { return static_cast<size_t>(p_ - begin_); }
  P make(PV::Kind k) {
    P v = PV::make(k);
    if (k == PV::Tuple || k == PV::List || k == PV::Dict) arena_.containers.push_back(v);
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
    auto v = make(PV::Str);
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
      case '}': push(make(PV::Dict)); break;
      case ']': push(make(PV::List)); break;
      case ')': push(make(PV::Tuple)); break;
      case 'N': push(make(PV::None)); break;
      case 0x88:
      case 0x89: {
        auto v = make(PV::Bool);
        v->i = op == 0x88;
        push(std::move(v));
        break;
      }
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
        auto v = make(PV::Int);
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
    // Resizable, as torch.load's are: libtorch 1.13's resize_ changes the
    // sizes before failing on a fixed storage, leaving a tensor larger than
    // its memory (an empty loaded tensor resized then filled wrote to NULL).
    v->storage = c10::Storage(c10::Storage::use_byte_size_t(), nbytes, std::move(data), c10::GetCPUAllocator(), true);
    storages_.emplace(key, v->storage);
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

  P call(const PV &fn, const std::vector<P> &a) {
    const std::string &m = fn.s, &n = fn.s2;
    if (m == "collections" && n == "OrderedDict") {
      if (!a.empty()) corrupt("OrderedDict called with arguments");
      P d = make(PV::Dict);
      d->ordered = true;
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
            "' object; ctorch reads tensors and dicts of tensors only");
  }
};

}  // namespace



std::string canonical_torch_archive(const char *path, std::unordered_map<std::string, uint64_t> *sizes) {
  ZipReader zip(path);
  zip.check();
  if (sizes) *sizes = zip.record_sizes();
  return zip.canonical();
}

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

std::unique_ptr<Pickled> read_pickled(const char *path) {
  require_readable_file(path);
  auto out = std::make_unique<Pickled>();
  std::unique_ptr<ZipReader> reader;
  try {
    reader.reset(new ZipReader(path));
    reader->check();
  } catch (const StatusError &err) {
    if (err.status() != CTORCH_VALUE) throw;
    fail(CTORCH_VALUE, std::string("'") + path + "' is not a readable torch.save zip file (the format torch.save writes by default since PyTorch 1.6): " + err.what());
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
    std::tie(pkl, n) = zip.getRecord("data.pkl");
    out->root = Unpickler(static_cast<const char *>(pkl.get()), n, zip, out->arena).run();
  } catch (const StatusError &err) {
    fail(err.status(), std::string("'") + path + "' is not a readable checkpoint: " + err.what());
  } catch (const c10::Error &err) {
    // The zip layer: a truncated, garbage or legacy (pre-1.6, non-zip) file.
    fail(CTORCH_VALUE, std::string("'") + path + "' is not a readable torch.save zip file (the format torch.save writes by default since PyTorch 1.6): " + err.what_without_backtrace());
  } catch (const std::bad_alloc &) {
    throw;
  } catch (const std::exception &err) {
    fail(CTORCH_VALUE, std::string("'") + path + "' is not a readable torch.save zip file: " + err.what());
  }
  return out;
}

Checkpoint read_checkpoint(const char *path) {
  std::unique_ptr<Pickled> file = read_pickled(path);  // its arena outlives root's use here
  const P &root = file->root;
  Checkpoint out;
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
