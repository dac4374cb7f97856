// The GGUF reader. Layout (little-endian): "GGUF", u32 version (2 or 3),
// u64 tensor count, u64 key/value count; the key/values (string key, u32
// type, value; strings are u64 length + bytes, arrays u32 element type +
// u64 count + elements); the tensor infos (string name, u32 n_dims, n_dims
// x u64 ne, u32 ggml type, u64 offset); padding to general.alignment; the
// data section, each tensor at its offset from the section's start.
//
// The table of contents is walked once, every length and count checked
// against the bytes left in the file before anything is sized from it, so
// a hostile count cannot allocate more than the file could describe.
// Metadata values are not copied: each key remembers where its value lies
// in the mapping, and the getters decode it when asked.
#include "lm/gguf.h"

#include <ATen/Functions.h>
#include <ATen/Parallel.h>
#include <c10/util/Half.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <unordered_map>

#include "files/files.h"
#include "core/internal.h"

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "GGUF is little-endian; ctorch reads it as the host's bytes");

namespace ctorch {
namespace lm {
// The reader's helpers, in a namespace of their own rather than an
// anonymous one: GgufFile::Impl holds some of them (a member of an
// anonymous type in a class with linkage), and the unity build compiles
// these files in one batch with the folder's others, whose helpers would
// share one anonymous namespace with these.
namespace gguf_detail {

// The file's mapping, shared by the tensors made over it; unmapped when the
// last of them and the GgufFile are gone.
struct Mapping {
  void *base = MAP_FAILED;
  size_t len = 0;
  ~Mapping() {
    if (base != MAP_FAILED) ::munmap(base, len);
  }
  const uint8_t *bytes() const { return static_cast<const uint8_t *>(base); }
};

// Where a key's value lies: for a scalar or string the value's bytes, for
// an array its first element.
struct Kv {
  std::string key;
  GgufType type;
  GgufType elem = GgufType::UINT8;  // arrays
  uint64_t count = 0;               // arrays
  uint64_t at = 0;
};

}  // namespace gguf_detail

namespace gguf_detail {

constexpr unsigned kMaxDims = 4;       // GGML_MAX_DIMS
constexpr int kMaxArrayDepth = 8;      // nested arrays (the format allows them; no model needs more than two)
constexpr uint64_t kHeaderBytes = 24;  // magic, version, two counts

size_t scalar_size(GgufType t) {
  switch (t) {
    case GgufType::UINT8:
    case GgufType::INT8:
    case GgufType::BOOL: return 1;
    case GgufType::UINT16:
    case GgufType::INT16: return 2;
    case GgufType::UINT32:
    case GgufType::INT32:
    case GgufType::FLOAT32: return 4;
    case GgufType::UINT64:
    case GgufType::INT64:
    case GgufType::FLOAT64: return 8;
    default: return 0;
  }
}

bool is_integer(GgufType t) {
  switch (t) {
    case GgufType::UINT8:
    case GgufType::INT8:
    case GgufType::UINT16:
    case GgufType::INT16:
    case GgufType::UINT32:
    case GgufType::INT32:
    case GgufType::UINT64:
    case GgufType::INT64: return true;
    default: return false;
  }
}

}  // namespace gguf_detail

struct GgufFile::Impl {
  std::shared_ptr<gguf_detail::Mapping> map;
  uint64_t size = 0;
  std::vector<gguf_detail::Kv> kvs;
  std::unordered_map<std::string, size_t> kv_at, tensor_at;

  [[noreturn]] void bad(const std::string &file, const std::string &what) const {
    fail(CTORCH_INVALID_ARGUMENT, "'" + file + "': " + what);
  }
};

namespace gguf_detail {

// A bounded reader over the mapping's [0, size): every read checks the
// bytes it needs are there.
class Cursor {
 public:
  Cursor(const uint8_t *p, uint64_t size, const std::string &file) : p_(p), size_(size), file_(file) {}
  uint64_t pos() const { return pos_; }
  uint64_t left() const { return size_ - pos_; }
  [[noreturn]] void bad(const std::string &what) const {
    fail(CTORCH_INVALID_ARGUMENT, "'" + file_ + "': " + what + " (at byte " + std::to_string(pos_) + ")");
  }
  void need(uint64_t n, const char *what) const {
    if (n > left())
      bad(std::string("ends inside ") + what + ": " + std::to_string(n) + " bytes needed, " +
          std::to_string(left()) + " left (is it truncated?)");
  }
  template <typename T>
  T get(const char *what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, p_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  void skip(uint64_t n, const char *what) {
    need(n, what);
    pos_ += n;
  }
  // A string's length and first byte's position, its bytes checked present.
  uint64_t string_at(uint64_t *len, const char *what) {
    *len = get<uint64_t>(what);
    need(*len, what);
    uint64_t at = pos_;
    pos_ += *len;
    return at;
  }
  std::string string(const char *what) {
    uint64_t len;
    uint64_t at = string_at(&len, what);
    return std::string(reinterpret_cast<const char *>(p_ + at), static_cast<size_t>(len));
  }
  // Walks one value of type t (arrays to depth kMaxArrayDepth), checking it
  // lies in the file; counts are bounded by the bytes left before the walk.
  void skip_value(GgufType t, int depth, const std::string &key) {
    if (size_t n = scalar_size(t)) return skip(n, "a metadata value");
    if (t == GgufType::STRING) {
      uint64_t len;
      string_at(&len, "a string value");
      return;
    }
    if (t != GgufType::ARRAY)
      bad("metadata '" + key + "' has type " + std::to_string(static_cast<uint32_t>(t)) +
          ", which GGUF does not define");
    if (depth >= kMaxArrayDepth)
      bad("metadata '" + key + "' nests arrays deeper than " + std::to_string(kMaxArrayDepth));
    GgufType elem = static_cast<GgufType>(get<uint32_t>("an array's element type"));
    uint64_t count = get<uint64_t>("an array's length");
    skip_array(elem, count, depth + 1, key);
  }
  void skip_array(GgufType elem, uint64_t count, int depth, const std::string &key) {
    // The smallest encoding of one element: its bytes, a string's length, an array's type and count.
    size_t n = scalar_size(elem);
    uint64_t least = n ? n : elem == GgufType::STRING ? 8 : elem == GgufType::ARRAY ? 12 : 0;
    if (!least)
      bad("metadata '" + key + "' is an array of type " + std::to_string(static_cast<uint32_t>(elem)) +
          ", which GGUF does not define");
    if (count > left() / least)
      bad("metadata '" + key + "' declares " + std::to_string(count) + " elements, more than the " +
          std::to_string(left()) + " bytes left can hold");
    if (n) return skip(count * n, "an array");
    for (uint64_t i = 0; i < count; ++i) skip_value(elem, depth, key);
  }

 private:
  const uint8_t *p_;
  uint64_t size_, pos_ = 0;
  const std::string &file_;
};

}  // namespace gguf_detail

GgufFile::~GgufFile() = default;

std::shared_ptr<const GgufFile> GgufFile::open(const std::string &path) {
  std::shared_ptr<GgufFile> g(new GgufFile());
  g->path_ = path;
  g->impl_.reset(new Impl());
  Impl &im = *g->impl_;
  ReadFile f(path.c_str());
  const uint64_t size = f.size();
  im.size = size;
  if (size < gguf_detail::kHeaderBytes)
    im.bad(path, "holds " + std::to_string(size) + " bytes, fewer than a GGUF header's " +
                     std::to_string(gguf_detail::kHeaderBytes) + " (is it truncated?)");
  if (size > std::numeric_limits<size_t>::max()) im.bad(path, "is larger than this machine can map");
  // Private and copy-on-write: an in-place write to a tensor viewing the
  // mapping changes this process's pages, never the file.
  im.map = std::make_shared<gguf_detail::Mapping>();
  im.map->len = static_cast<size_t>(size);
  im.map->base = ::mmap(nullptr, im.map->len, PROT_READ | PROT_WRITE, MAP_PRIVATE, f.fd(), 0);
  if (im.map->base == MAP_FAILED) fail(CTORCH_IO, "'" + path + "': cannot be memory-mapped: " + std::strerror(errno));

  // Bookkeeping (keys, tensor infos and their indexes) is bounded by the
  // file's size: each byte of the table of contents yields a bounded amount.
  LoadBudget budget("'" + path + "'", size * 64 + (4u << 20));
  gguf_detail::Cursor c(im.map->bytes(), size, path);
  if (std::memcmp(im.map->bytes(), "GGUF", 4) != 0) c.bad("is not a GGUF file (its first four bytes are not \"GGUF\")");
  c.skip(4, "the magic");
  uint32_t version = c.get<uint32_t>("the version");
  if (version == 0x02000000u || version == 0x03000000u) c.bad("is a big-endian GGUF file, which ctorch does not read");
  if (version != 2 && version != 3)
    c.bad("has GGUF version " + std::to_string(version) + "; ctorch reads versions 2 and 3");
  g->version_ = version;
  const uint64_t n_tensors = c.get<uint64_t>("the tensor count");
  const uint64_t n_kv = c.get<uint64_t>("the metadata count");
  // Least bytes per entry: a key/value is a key length, a type and a byte;
  // a tensor info is a name length, n_dims, a type and an offset.
  if (n_kv > c.left() / 13)
    c.bad("declares " + std::to_string(n_kv) + " metadata entries, more than the file's " + std::to_string(size) +
          " bytes can hold");
  if (n_tensors > c.left() / 24)
    c.bad("declares " + std::to_string(n_tensors) + " tensors, more than the file's " + std::to_string(size) +
          " bytes can hold");

  budget.charge(n_kv * (sizeof(gguf_detail::Kv) + 64));
  im.kvs.reserve(static_cast<size_t>(n_kv));
  for (uint64_t i = 0; i < n_kv; ++i) {
    gguf_detail::Kv kv;
    kv.key = c.string("a metadata key");
    budget.charge(kv.key.size());
    if (kv.key.empty()) c.bad("metadata entry " + std::to_string(i) + " has an empty key");
    if (im.kv_at.count(kv.key)) c.bad("metadata key '" + kv.key + "' appears twice");
    kv.type = static_cast<GgufType>(c.get<uint32_t>("a metadata type"));
    if (kv.type == GgufType::ARRAY) {
      kv.elem = static_cast<GgufType>(c.get<uint32_t>("an array's element type"));
      kv.count = c.get<uint64_t>("an array's length");
      kv.at = c.pos();
      c.skip_array(kv.elem, kv.count, 1, kv.key);
    } else {
      kv.at = c.pos();
      c.skip_value(kv.type, 0, kv.key);
    }
    im.kv_at.emplace(kv.key, im.kvs.size());
    im.kvs.push_back(std::move(kv));
  }

  if (g->has("general.alignment")) {
    if (g->type_of("general.alignment") != GgufType::UINT32)
      im.bad(path, "general.alignment is " + std::string(gguf_type_name(g->type_of("general.alignment"))) +
                       ", not UINT32");
    uint32_t a = g->u32("general.alignment");
    if (a == 0 || (a & (a - 1))) im.bad(path, "general.alignment is " + std::to_string(a) + ", not a power of two");
    g->alignment_ = a;
  }

  budget.charge(n_tensors * (sizeof(GgufTensorInfo) + 128));
  g->tensors_.reserve(static_cast<size_t>(n_tensors));
  for (uint64_t i = 0; i < n_tensors; ++i) {
    GgufTensorInfo t;
    t.name = c.string("a tensor name");
    budget.charge(t.name.size());
    if (im.tensor_at.count(t.name)) c.bad("tensor '" + t.name + "' appears twice");
    uint32_t n_dims = c.get<uint32_t>("a tensor's dimension count");
    if (n_dims > gguf_detail::kMaxDims)
      c.bad("tensor '" + t.name + "' has " + std::to_string(n_dims) + " dimensions; GGUF allows at most " +
            std::to_string(gguf_detail::kMaxDims));
    // The product of the dimensions, zeros counted as ones as well: a
    // tensor's strides are those products, and must fit int64 even where a
    // zero dimension makes it empty.
    int64_t numel = 1, span = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      uint64_t ne = c.get<uint64_t>("a tensor's dimensions");
      if (ne > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ||
          __builtin_mul_overflow(numel, static_cast<int64_t>(ne), &numel) ||
          __builtin_mul_overflow(span, std::max<int64_t>(static_cast<int64_t>(ne), 1), &span))
        c.bad("tensor '" + t.name + "' has dimensions whose product overflows");
      t.ne.push_back(static_cast<int64_t>(ne));
    }
    t.shape.assign(t.ne.rbegin(), t.ne.rend());
    t.numel = numel;
    t.type = c.get<uint32_t>("a tensor's type");
    t.offset = c.get<uint64_t>("a tensor's offset");
    int64_t be = 0, bb = 0;
    ggml_block(t.type, &be, &bb);
    if (!be) c.bad("tensor '" + t.name + "' has type " + std::to_string(t.type) + ", which ggml does not define");
    const int64_t row = t.ne.empty() ? 1 : t.ne[0];
    if (row % be)
      c.bad("tensor '" + t.name + "' has rows of " + std::to_string(row) + " elements, not whole " +
            ggml_type_name(t.type) + " blocks of " + std::to_string(be));
    // numel / be blocks of bb bytes: numel fits int64, so numel / be * bb
    // overflows only for counts no file could hold; checked anyway.
    uint64_t nbytes;
    if (__builtin_mul_overflow(static_cast<uint64_t>(numel / be), static_cast<uint64_t>(bb), &nbytes))
      c.bad("tensor '" + t.name + "' has a byte size that overflows");
    t.nbytes = nbytes;
    if (t.offset % g->alignment_)
      c.bad("tensor '" + t.name + "' has offset " + std::to_string(t.offset) + ", not a multiple of the alignment " +
            std::to_string(g->alignment_));
    im.tensor_at.emplace(t.name, g->tensors_.size());
    g->tensors_.push_back(std::move(t));
  }

  // The data section starts at the next multiple of the alignment; a file
  // without tensors may end before it.
  uint64_t data_at = (c.pos() + g->alignment_ - 1) / g->alignment_ * g->alignment_;
  g->data_at_ = data_at;
  if (!g->tensors_.empty()) {
    if (data_at > size)
      im.bad(path, "ends before its data section (at byte " + std::to_string(data_at) + ") begins (is it truncated?)");
    const uint64_t data_len = size - data_at;
    std::vector<std::pair<uint64_t, size_t>> order;
    order.reserve(g->tensors_.size());
    for (size_t i = 0; i < g->tensors_.size(); ++i) {
      const auto &t = g->tensors_[i];
      if (t.offset > data_len || t.nbytes > data_len - t.offset)
        im.bad(path, "tensor '" + t.name + "' (" + std::to_string(t.nbytes) + " bytes at offset " +
                         std::to_string(t.offset) + ") lies past the end of the data section (" +
                         std::to_string(data_len) + " bytes; is the file truncated?)");
      order.emplace_back(t.offset, i);
    }
    std::sort(order.begin(), order.end());
    for (size_t k = 1; k < order.size(); ++k) {
      const auto &a = g->tensors_[order[k - 1].second], &b = g->tensors_[order[k].second];
      if (a.offset + a.nbytes > b.offset)
        im.bad(path, "tensors '" + a.name + "' and '" + b.name + "' overlap in the data section");
    }
  }
  return g;
}

// ---- metadata ---------------------------------------------------------------

const char *gguf_type_name(GgufType t) {
  static const char *const kNames[] = {"UINT8", "INT8",   "UINT16", "INT16",  "UINT32", "INT32", "FLOAT32",
                                       "BOOL",  "STRING", "ARRAY",  "UINT64", "INT64",  "FLOAT64"};
  auto i = static_cast<uint32_t>(t);
  return i < 13 ? kNames[i] : "an unknown type";
}

namespace gguf_detail {

const Kv &lookup(const GgufFile &g, const GgufFile::Impl &im, const std::string &key) {
  auto it = im.kv_at.find(key);
  if (it == im.kv_at.end()) im.bad(g.path(), "has no metadata key '" + key + "'");
  return im.kvs[it->second];
}

[[noreturn]] void wrong_type(const GgufFile &g, const GgufFile::Impl &im, const Kv &kv, const char *wanted) {
  std::string has = kv.type == GgufType::ARRAY ? std::string("an ARRAY of ") + gguf_type_name(kv.elem)
                                               : std::string(gguf_type_name(kv.type));
  im.bad(g.path(), "metadata '" + kv.key + "' is " + has + ", not " + wanted);
}

template <typename T>
T load(const uint8_t *p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

// The integer value of type t at p: *neg set for a negative value, the
// value in *u (a negative one in two's complement, as int64 has it).
void integer_at(GgufType t, const uint8_t *p, bool *neg, uint64_t *u) {
  int64_t s = 0;
  switch (t) {
    case GgufType::UINT8: *u = load<uint8_t>(p); *neg = false; return;
    case GgufType::UINT16: *u = load<uint16_t>(p); *neg = false; return;
    case GgufType::UINT32: *u = load<uint32_t>(p); *neg = false; return;
    case GgufType::UINT64: *u = load<uint64_t>(p); *neg = false; return;
    case GgufType::INT8: s = load<int8_t>(p); break;
    case GgufType::INT16: s = load<int16_t>(p); break;
    case GgufType::INT32: s = load<int32_t>(p); break;
    default: s = load<int64_t>(p); break;
  }
  *neg = s < 0;
  *u = static_cast<uint64_t>(s);
}

}  // namespace gguf_detail

std::vector<std::string> GgufFile::keys() const {
  std::vector<std::string> out;
  out.reserve(impl_->kvs.size());
  for (const auto &kv : impl_->kvs) out.push_back(kv.key);
  return out;
}

bool GgufFile::has(const std::string &key) const { return impl_->kv_at.count(key) != 0; }

GgufType GgufFile::type_of(const std::string &key) const { return gguf_detail::lookup(*this, *impl_, key).type; }

GgufType GgufFile::array_type(const std::string &key) const {
  const gguf_detail::Kv &kv = gguf_detail::lookup(*this, *impl_, key);
  if (kv.type != GgufType::ARRAY) gguf_detail::wrong_type(*this, *impl_, kv, "an ARRAY");
  return kv.elem;
}

uint64_t GgufFile::array_size(const std::string &key) const {
  const gguf_detail::Kv &kv = gguf_detail::lookup(*this, *impl_, key);
  if (kv.type != GgufType::ARRAY) gguf_detail::wrong_type(*this, *impl_, kv, "an ARRAY");
  return kv.count;
}

uint64_t GgufFile::u64(const std::string &key) const {
  const gguf_detail::Kv &kv = gguf_detail::lookup(*this, *impl_, key);
  if (!gguf_detail::is_integer(kv.type)) gguf_detail::wrong_type(*this, *impl_, kv, "an integer");
  bool neg;
  uint64_t u;
  gguf_detail::integer_at(kv.type, impl_->map->bytes() + kv.at, &neg, &u);
  if (neg) impl_->bad(path_, "metadata '" + key + "' is " + std::to_string(static_cast<int64_t>(u)) + ", negative");
  return u;
}

uint32_t GgufFile::u32(const std::string &key) const {
  uint64_t v = u64(key);
  if (v > std::numeric_limits<uint32_t>::max())
    impl_->bad(path_, "metadata '" + key + "' is " + std::to_string(v) + ", more than a UINT32 holds");
  return static_cast<uint32_t>(v);
}

int64_t GgufFile::i64(const std::string &key) const {
  const gguf_detail::Kv &kv = gguf_detail::lookup(*this, *impl_, key);
  if (!gguf_detail::is_integer(kv.type)) gguf_detail::wrong_type(*this, *impl_, kv, "an integer");
  bool neg;
  uint64_t u;
  gguf_detail::integer_at(kv.type, impl_->map->bytes() + kv.at, &neg, &u);
  if (!neg && u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    impl_->bad(path_, "metadata '" + key + "' is " + std::to_string(u) + ", more than an INT64 holds");
  return static_cast<int64_t>(u);
}

float GgufFile::f32(const std::string &key) const {
  const gguf_detail::Kv &kv = gguf_detail::lookup(*this, *impl_, key);
  const uint8_t *p = impl_->map->bytes() + kv.at;
  if (kv.type == GgufType::FLOAT32) return gguf_detail::load<float>(p);
  if (kv.type == GgufType::FLOAT64) return static_cast<float>(gguf_detail::load<double>(p));
  gguf_detail::wrong_type(*this, *impl_, kv, "FLOAT32");
}

bool GgufFile::boolean(const std::string &key) const {
  const gguf_detail::Kv &kv = gguf_detail::lookup(*this, *impl_, key);
  if (kv.type != GgufType::BOOL) gguf_detail::wrong_type(*this, *impl_, kv, "BOOL");
  uint8_t b = impl_->map->bytes()[kv.at];
  if (b > 1) impl_->bad(path_, "metadata '" + key + "' is a BOOL of value " + std::to_string(b) + ", not 0 or 1");
  return b != 0;
}

std::string GgufFile::str(const std::string &key) const {
  const gguf_detail::Kv &kv = gguf_detail::lookup(*this, *impl_, key);
  if (kv.type != GgufType::STRING) gguf_detail::wrong_type(*this, *impl_, kv, "STRING");
  const uint8_t *p = impl_->map->bytes() + kv.at;
  uint64_t len = gguf_detail::load<uint64_t>(p);
  LoadBudget("'" + path_ + "'", 0).charge(len);
  return std::string(reinterpret_cast<const char *>(p + 8), static_cast<size_t>(len));
}

uint32_t GgufFile::u32_or(const std::string &key, uint32_t d) const { return has(key) ? u32(key) : d; }
uint64_t GgufFile::u64_or(const std::string &key, uint64_t d) const { return has(key) ? u64(key) : d; }
int64_t GgufFile::i64_or(const std::string &key, int64_t d) const { return has(key) ? i64(key) : d; }
float GgufFile::f32_or(const std::string &key, float d) const { return has(key) ? f32(key) : d; }
bool GgufFile::boolean_or(const std::string &key, bool d) const { return has(key) ? boolean(key) : d; }
std::string GgufFile::str_or(const std::string &key, const std::string &d) const { return has(key) ? str(key) : d; }

std::vector<std::string> GgufFile::str_array(const std::string &key) const {
  const gguf_detail::Kv &kv = gguf_detail::lookup(*this, *impl_, key);
  if (kv.type != GgufType::ARRAY || kv.elem != GgufType::STRING)
    gguf_detail::wrong_type(*this, *impl_, kv, "an ARRAY of STRING");
  // The strings were checked to lie in the file when it was opened; their
  // total is bounded by its size, charged with each one's bookkeeping.
  LoadBudget budget("'" + path_ + "'", 0);
  budget.charge(kv.count * sizeof(std::string));
  std::vector<std::string> out;
  out.reserve(static_cast<size_t>(kv.count));
  const uint8_t *p = impl_->map->bytes() + kv.at;
  for (uint64_t i = 0; i < kv.count; ++i) {
    uint64_t len = gguf_detail::load<uint64_t>(p);
    budget.charge(len);
    out.emplace_back(reinterpret_cast<const char *>(p + 8), static_cast<size_t>(len));
    p += 8 + len;
  }
  return out;
}

std::vector<float> GgufFile::f32_array(const std::string &key) const {
  const gguf_detail::Kv &kv = gguf_detail::lookup(*this, *impl_, key);
  if (kv.type != GgufType::ARRAY || (kv.elem != GgufType::FLOAT32 && kv.elem != GgufType::FLOAT64))
    gguf_detail::wrong_type(*this, *impl_, kv, "an ARRAY of FLOAT32");
  LoadBudget("'" + path_ + "'", 0).charge(kv.count * sizeof(float));
  std::vector<float> out(static_cast<size_t>(kv.count));
  const uint8_t *p = impl_->map->bytes() + kv.at;
  if (kv.elem == GgufType::FLOAT32) {
    if (kv.count) std::memcpy(out.data(), p, out.size() * sizeof(float));
  } else {
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<float>(gguf_detail::load<double>(p + 8 * i));
  }
  return out;
}

std::vector<int64_t> GgufFile::int_array(const std::string &key) const {
  const gguf_detail::Kv &kv = gguf_detail::lookup(*this, *impl_, key);
  if (kv.type != GgufType::ARRAY || !gguf_detail::is_integer(kv.elem))
    gguf_detail::wrong_type(*this, *impl_, kv, "an ARRAY of integers");
  LoadBudget("'" + path_ + "'", 0).charge(kv.count * sizeof(int64_t));
  std::vector<int64_t> out(static_cast<size_t>(kv.count));
  const uint8_t *p = impl_->map->bytes() + kv.at;
  const size_t n = gguf_detail::scalar_size(kv.elem);
  for (size_t i = 0; i < out.size(); ++i) {
    bool neg;
    uint64_t u;
    gguf_detail::integer_at(kv.elem, p + n * i, &neg, &u);
    if (!neg && u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      impl_->bad(path_, "metadata '" + key + "' element " + std::to_string(i) + " is " + std::to_string(u) +
                            ", more than an INT64 holds");
    out[i] = static_cast<int64_t>(u);
  }
  return out;
}

std::vector<bool> GgufFile::bool_array(const std::string &key) const {
  const gguf_detail::Kv &kv = gguf_detail::lookup(*this, *impl_, key);
  if (kv.type != GgufType::ARRAY || kv.elem != GgufType::BOOL)
    gguf_detail::wrong_type(*this, *impl_, kv, "an ARRAY of BOOL");
  LoadBudget("'" + path_ + "'", 0).charge(kv.count / 8 + 1);
  std::vector<bool> out(static_cast<size_t>(kv.count));
  const uint8_t *p = impl_->map->bytes() + kv.at;
  for (size_t i = 0; i < out.size(); ++i) {
    if (p[i] > 1)
      impl_->bad(path_, "metadata '" + key + "' element " + std::to_string(i) + " is a BOOL of value " +
                            std::to_string(p[i]) + ", not 0 or 1");
    out[i] = p[i] != 0;
  }
  return out;
}

std::string GgufFile::value_text(const std::string &key) const {
  const gguf_detail::Kv &kv = gguf_detail::lookup(*this, *impl_, key);
  const uint8_t *p = impl_->map->bytes() + kv.at;
  if (kv.type == GgufType::ARRAY)
    return std::string("[") + gguf_type_name(kv.elem) + " x " + std::to_string(kv.count) + "]";
  if (kv.type == GgufType::STRING) {
    uint64_t len = gguf_detail::load<uint64_t>(p);
    const size_t shown = static_cast<size_t>(std::min<uint64_t>(len, 200));
    return "\"" + std::string(reinterpret_cast<const char *>(p + 8), shown) + (shown < len ? "...\"" : "\"");
  }
  // Enough digits to read back to the same value.
  char buf[40];
  if (kv.type == GgufType::FLOAT32)
    return std::string(buf, std::snprintf(buf, sizeof buf, "%.9g", gguf_detail::load<float>(p)));
  if (kv.type == GgufType::FLOAT64)
    return std::string(buf, std::snprintf(buf, sizeof buf, "%.17g", gguf_detail::load<double>(p)));
  if (kv.type == GgufType::BOOL) return *p ? "true" : "false";
  bool neg;
  uint64_t u;
  gguf_detail::integer_at(kv.type, p, &neg, &u);
  return neg ? std::to_string(static_cast<int64_t>(u)) : std::to_string(u);
}

// ---- tensors ----------------------------------------------------------------

const GgufTensorInfo *GgufFile::find(const std::string &name) const {
  auto it = impl_->tensor_at.find(name);
  return it == impl_->tensor_at.end() ? nullptr : &tensors_[it->second];
}

const GgufTensorInfo &GgufFile::info(const std::string &name) const {
  const GgufTensorInfo *t = find(name);
  if (!t) impl_->bad(path_, "has no tensor '" + name + "'");
  return *t;
}

const uint8_t *GgufFile::raw_data(const GgufTensorInfo &t) const {
  return impl_->map->bytes() + data_at_ + t.offset;
}

void GgufFile::release(const GgufTensorInfo &t) const {
  const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  uintptr_t a = reinterpret_cast<uintptr_t>(raw_data(t)), e = a + t.nbytes;
  a = (a + page - 1) / page * page;  // whole pages inside the tensor only: its neighbours may be views
  e = e / page * page;
  if (page && a < e) ::madvise(reinterpret_cast<void *>(a), e - a, MADV_DONTNEED);  // advice: failure is harmless
}

at::Tensor GgufFile::raw(const std::string &name) const {
  const GgufTensorInfo &t = info(name);
  auto opts = at::TensorOptions().dtype(at::kByte);
  if (!t.nbytes) return at::empty({0}, opts);
  std::shared_ptr<gguf_detail::Mapping> keep = impl_->map;
  return at::from_blob(const_cast<uint8_t *>(raw_data(t)), {static_cast<int64_t>(t.nbytes)},
                       [keep](void *) mutable { keep.reset(); }, opts);
}

at::Tensor GgufFile::tensor(const std::string &name, LoadBudget *budget) const {
  LoadBudget own("'" + path_ + "'", 0);
  LoadBudget &charged = budget ? *budget : own;
  const GgufTensorInfo &t = info(name);
  const uint8_t *src = raw_data(t);
  at::ScalarType st;
  size_t item;
  switch (static_cast<GgmlType>(t.type)) {
    case GgmlType::F32: st = at::kFloat, item = 4; break;
    case GgmlType::F16: st = at::kHalf, item = 2; break;
    case GgmlType::BF16: st = at::kBFloat16, item = 2; break;
    case GgmlType::Q8_0:
    case GgmlType::Q4_0:
    case GgmlType::Q4_1:
    case GgmlType::Q4_K:
    case GgmlType::Q6_K: {
      charged.charge_data(static_cast<uint64_t>(t.numel) * 4);
      at::Tensor out = at::empty(t.shape, at::TensorOptions().dtype(at::kFloat));
      int64_t be, bb;
      ggml_block(t.type, &be, &bb);
      const int64_t nb = t.numel / be;
      float *dst = out.data_ptr<float>();
      const auto type = static_cast<GgmlType>(t.type);
      // Blocks are independent: split over the intra-op threads.
      at::parallel_for(0, nb, 4096, [&](int64_t b0, int64_t b1) {
        gguf_dequantize(type, src + b0 * bb, dst + b0 * be, (b1 - b0) * be);
      });
      return out;
    }
    default:
      impl_->bad(path_, "tensor '" + name + "' is " + ggml_type_name(t.type) +
                            ", a type ctorch does not convert (F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q4_K, Q6_K)");
  }
  auto opts = at::TensorOptions().dtype(st);
  if (!t.numel) return at::empty(t.shape, opts);
  if (reinterpret_cast<uintptr_t>(src) % item == 0) {
    std::shared_ptr<gguf_detail::Mapping> keep = impl_->map;
    return at::from_blob(const_cast<uint8_t *>(src), t.shape, [keep](void *) mutable { keep.reset(); }, opts);
  }
  charged.charge_data(t.nbytes);
  at::Tensor out = at::empty(t.shape, opts);
  std::memcpy(out.data_ptr(), src, static_cast<size_t>(t.nbytes));
  return out;
}

at::Tensor GgufFile::tensor_f32(const std::string &name, LoadBudget *budget) const {
  LoadBudget own("'" + path_ + "'", 0);
  LoadBudget &charged = budget ? *budget : own;
  at::Tensor t = tensor(name, &charged);
  if (t.scalar_type() == at::kFloat) return t;
  charged.charge_data(static_cast<uint64_t>(t.numel()) * 4);
  return t.to(at::kFloat);
}

}  // namespace lm
}  // namespace ctorch
