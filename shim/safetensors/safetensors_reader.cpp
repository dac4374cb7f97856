// The safetensors reader: an 8-byte little-endian header length N, N bytes
// of JSON ({"name": {"dtype", "shape", "data_offsets": [begin, end]}, ...,
// "__metadata__": {str: str}}), then the data buffer. Everything the Python
// package's Rust reader checks is checked here, with the same rules (so a
// file one accepts the other accepts), plus duplicate names, which the
// Python package lets the last one win. The file is memory-mapped; tensors
// whose data is aligned for their dtype share the mapping.
#include "json/json.h"
#include "safetensors_internal.h"
#include "files/files.h"

#include <ATen/Functions.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

namespace ctorch {
namespace st {
namespace {

const Dtype kDtypes[] = {
    {"BOOL", CTORCH_BOOL, 1, 0},
    {"F4", 0, 0, 1},
    {"F6_E2M3", 0, 0, 2},
    {"F6_E3M2", 0, 0, 3},
    {"U8", CTORCH_UINT8, 1, 4},
    {"I8", CTORCH_INT8, 1, 5},
    {"F8_E5M2", CTORCH_FLOAT8_E5M2, 1, 6},
    {"F8_E4M3", CTORCH_FLOAT8_E4M3FN, 1, 7},
    {"F8_E8M0", CTORCH_FLOAT8_E8M0FNU, 1, 8},
    {"F8_E4M3FNUZ", CTORCH_FLOAT8_E4M3FNUZ, 1, 9},
    {"F8_E5M2FNUZ", CTORCH_FLOAT8_E5M2FNUZ, 1, 10},
    {"I16", CTORCH_INT16, 2, 11},
    {"U16", CTORCH_UINT16, 2, 12},
    {"F16", CTORCH_FLOAT16, 2, 13},
    {"BF16", CTORCH_BFLOAT16, 2, 14},
    {"I32", CTORCH_INT32, 4, 15},
    {"U32", CTORCH_UINT32, 4, 16},
    {"F32", CTORCH_FLOAT32, 4, 17},
    {"C64", CTORCH_COMPLEX64, 8, 18},
    {"F64", CTORCH_FLOAT64, 8, 19},
    {"I64", CTORCH_INT64, 8, 20},
    {"U64", CTORCH_UINT64, 8, 21},
};

// The file's mapping, shared by the tensors made over it; unmapped when the
// last of them is freed.
struct Mapping {
  void *base = MAP_FAILED;
  size_t len = 0;
  ~Mapping() {
    if (base != MAP_FAILED) ::munmap(base, len);
  }
};

struct Entry {
  std::string name;
  const Dtype *dtype;
  std::vector<int64_t> shape;
  uint64_t begin, end;
};

[[noreturn]] void bad_tensor(const std::string &file, const std::string &name, const std::string &what) {
  fail(CTORCH_VALUE, file + ": tensor '" + name + "': " + what);
}


void read_exact(int fd, void *buf, size_t n, uint64_t at, const std::string &file) {
  char *p = static_cast<char *>(buf);
  while (n) {
    ssize_t got = ::pread(fd, p, n, static_cast<off_t>(at));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) fail(CTORCH_IO, file + ": cannot be read: " + std::strerror(errno));
    if (got == 0) bad(file, "ended while being read (was it truncated?)");
    p += got, n -= static_cast<size_t>(got), at += static_cast<uint64_t>(got);
  }
}

Entry entry_of(const std::string &file, const std::string &name, const json::Value &v) {
  if (v.kind != json::Value::Object) bad_tensor(file, name, "is not a JSON object");
  const json::Value *dt = v.find("dtype"), *shape = v.find("shape"), *offs = v.find("data_offsets");
  if (!dt || !shape || !offs) bad_tensor(file, name, "lacks \"dtype\", \"shape\" or \"data_offsets\"");
  if (dt->kind != json::Value::String) bad_tensor(file, name, "\"dtype\" is not a string");
  Entry e;
  e.name = name;
  e.dtype = dtype_by_name(dt->text);
  if (!e.dtype) bad_tensor(file, name, "unknown dtype \"" + dt->text + "\"");
  if (shape->kind != json::Value::Array) bad_tensor(file, name, "\"shape\" is not an array");
  for (const auto &d : shape->items) {
    uint64_t x;
    if (!json::as_u64(d, &x) || x > static_cast<uint64_t>(INT64_MAX))
      bad_tensor(file, name, "\"shape\" holds " + (d.kind == json::Value::Number ? d.text : std::string("a non-number")) +
                                 ", not a non-negative integer below 2^63");
    e.shape.push_back(static_cast<int64_t>(x));
  }
  if (offs->kind != json::Value::Array || offs->items.size() != 2 || !json::as_u64(offs->items[0], &e.begin) ||
      !json::as_u64(offs->items[1], &e.end))
    bad_tensor(file, name, "\"data_offsets\" is not [begin, end] with two non-negative integers");
  return e;
}

// The entries' sizes and offsets, as the Rust reader's Metadata::validate:
// sorted by offsets, each must start where the previous one ended (the
// first at 0), none may end before it begins, and end - begin must be the
// bytes its shape and dtype take. Returns the bytes they cover.
uint64_t validate(const std::string &file, std::vector<Entry> &entries) {
  std::stable_sort(entries.begin(), entries.end(), [](const Entry &a, const Entry &b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t start = 0;
  for (const auto &e : entries) {
    if (e.begin != start || e.end < e.begin)
      bad_tensor(file, e.name,
                 "data_offsets [" + std::to_string(e.begin) + ", " + std::to_string(e.end) + "] do not start at byte " +
                     std::to_string(start) + " where the data before it ends (the tensors must cover the data buffer "
                     "contiguously: no gap, no overlap)");
    start = e.end;
    uint64_t numel = 1;
    for (int64_t d : e.shape) {
      if (d != 0 && numel > static_cast<uint64_t>(INT64_MAX) / static_cast<uint64_t>(d))
        bad_tensor(file, e.name, "its shape has more than 2^63 elements");
      numel *= static_cast<uint64_t>(d);
    }
    if (!e.dtype->itemsize)
      fail(CTORCH_NOT_IMPLEMENTED, file + ": tensor '" + e.name + "': dtype " + e.dtype->name +
                                       " (sub-byte) has no libtorch dtype");
    if (numel > UINT64_MAX / e.dtype->itemsize) bad_tensor(file, e.name, "its size in bytes overflows 64 bits");
    uint64_t nbytes = numel * e.dtype->itemsize;
    if (e.end - e.begin != nbytes)
      bad_tensor(file, e.name, "data_offsets [" + std::to_string(e.begin) + ", " + std::to_string(e.end) + "] span " +
                                   std::to_string(e.end - e.begin) + " bytes, but its shape and dtype " +
                                   e.dtype->name + " take " + std::to_string(nbytes));
  }
  return start;
}

c10::ScalarType scalar_type(const std::string &file, const Entry &e) {
  try {
    return to_scalar_type(e.dtype->ctorch_dtype, "dtype");
  } catch (const StatusError &err) {
    fail(err.status(), file + ": tensor '" + e.name + "' has dtype " + e.dtype->name + ": " + err.what());
  }
}

}  // namespace

const Dtype *dtype_by_name(const std::string &name) {
  for (const auto &d : kDtypes)
    if (name == d.name) return &d;
  return nullptr;
}

const Dtype *dtype_by_ctorch(int ctorch_dtype) {
  for (const auto &d : kDtypes)
    if (d.ctorch_dtype && d.ctorch_dtype == ctorch_dtype) return &d;
  return nullptr;
}

void load_file(ctorch_tensor_dict_s &d, const char *path, const ctorch_device *device) {
  const std::string file = std::string("'") + path + "'";
  c10::optional<c10::Device> dev;
  if (device) dev = to_device(*device, "device");
  ReadFile f(path);
  const uint64_t size = f.size();
  if (size < 8) bad(file, "is " + std::to_string(size) + " bytes long, shorter than the 8-byte header length");
  unsigned char len_bytes[8];
  read_exact(f.fd(), len_bytes, 8, 0, file);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | len_bytes[i];
  if (n > kMaxHeader)
    bad(file, "header length " + std::to_string(n) + " is more than the format's " + std::to_string(kMaxHeader) +
                  " bytes");
  if (n > size - 8)
    bad(file, "header length " + std::to_string(n) + " runs past the end of the file (" + std::to_string(size) +
                  " bytes)");
  // What the header's values take: at most 64 bytes per header byte and 4
  // MiB (each value is one node of the parse plus its text).
  LoadBudget budget(file, n * 64 + (4u << 20));
  budget.charge(n);
  std::string header(n, '\0');
  read_exact(f.fd(), &header[0], n, 8, file);
  size_t bad_at = 0;
  if (!json::valid_utf8(header.data(), header.size(), &bad_at))
    bad(file, "header is not valid UTF-8 (byte " + std::to_string(bad_at) + " of the header)");
  json::Value root;
  try {
    root = json::parse(header.data(), header.size(), charge_budget, &budget);
  } catch (const json::JsonError &e) {
    bad(file, std::string("header: ") + e.what());
  }
  if (root.kind != json::Value::Object) bad(file, "header is not a JSON object");

  std::vector<Entry> entries;
  std::vector<std::pair<std::string, std::string>> metadata;
  for (const auto &m : root.members) {
    if (m.first == "__metadata__") {
      if (m.second.kind == json::Value::Null) continue;
      if (m.second.kind != json::Value::Object) bad(file, "\"__metadata__\" is not an object of strings");
      for (const auto &kv : m.second.members) {
        if (kv.second.kind != json::Value::String)
          bad(file, "\"__metadata__\" entry '" + kv.first + "' is not a string");
        metadata.emplace_back(kv.first, kv.second.text);
      }
      continue;
    }
    entries.push_back(entry_of(file, m.first, m.second));
  }
  uint64_t data_len = validate(file, entries);
  if (data_len != size - 8 - n)
    bad(file, "the tensors cover " + std::to_string(data_len) + " bytes of data but the file holds " +
                  std::to_string(size - 8 - n) + " after its header (the buffer must be covered exactly)");
  budget.charge_data(data_len);

  // The whole file, private and copy-on-write: an in-place write to a
  // tensor changes this process's pages, never the file.
  std::shared_ptr<Mapping> map;
  if (data_len) {
    map = std::make_shared<Mapping>();
    map->len = static_cast<size_t>(size);
    map->base = ::mmap(nullptr, map->len, PROT_READ | PROT_WRITE, MAP_PRIVATE, f.fd(), 0);
    if (map->base == MAP_FAILED) fail(CTORCH_IO, file + ": cannot be memory-mapped: " + std::strerror(errno));
  }
  const uint64_t data_at = 8 + n;
  std::vector<std::string> keys;
  std::vector<at::Tensor> values;
  keys.reserve(entries.size());
  values.reserve(entries.size());
  for (const auto &e : entries) {
    auto opts = at::TensorOptions().dtype(scalar_type(file, e));
    at::Tensor t;
    uint64_t nbytes = e.end - e.begin;
    if (!nbytes) {
      t = at::empty(e.shape, opts);
    } else {
      char *src = static_cast<char *>(map->base) + data_at + e.begin;
      if ((data_at + e.begin) % e.dtype->itemsize == 0) {
        std::shared_ptr<Mapping> keep = map;
        t = at::from_blob(src, e.shape, [keep](void *) mutable { keep.reset(); }, opts);
      } else {
        t = at::empty(e.shape, opts);
        std::memcpy(t.data_ptr(), src, static_cast<size_t>(nbytes));
      }
    }
    if (dev && *dev != t.device()) t = t.to(*dev);
    keys.push_back(e.name);
    values.push_back(std::move(t));
  }
  d.keys = std::move(keys);
  d.values = std::move(values);
  d.metadata = std::move(metadata);
}

}  // namespace st
}  // namespace ctorch
