// Writer for torch.save's zip format, as Python's torch.save writes it.
//
// libtorch's torch::pickle_save tags every dict and list with
// torch.jit._pickle.restore_type_tag / build_intlist, globals that
// torch.load(weights_only=True) refuses (its default since PyTorch 2.6).
// So the pickle is written here, with only what Python's own torch.save
// emits and the weights-only unpickler of every version since 1.13 allows:
// protocol 2, collections.OrderedDict, torch._utils._rebuild_tensor_v2 (v3
// for dtypes without a legacy storage class), persistent ids
// ('storage', torch.<X>Storage, key, location, numel) and the records
// data/<key>, byteorder. The zip container is libtorch's
// PyTorchStreamWriter, the writer behind Python's torch.save (64-byte
// aligned records, the version record, and in 2.x .data/serialization_id).
#include "serialize_value.h"
#include "text/utf8.h"
#include "text/text.h"

#include <ATen/ops/empty.h>
#include <caffe2/serialize/inline_container.h>

#include <cerrno>
#include <cstring>
#include <unordered_map>

// Storage bytes are written as they lie in memory, under byteorder "little".
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "ctorch writes checkpoints little-endian only");

namespace ctorch {
namespace {

// dtype <-> storage class <-> Python dtype name. A constant table (no
// construction at run time, so nothing shared is ever initialised lazily
// by whichever thread loads first).
struct DtypeNames {
  c10::ScalarType st;
  const char *storage;  // legacy storage class, nullptr if none
  const char *python;   // torch.<python>
};
constexpr DtypeNames kDtypes[] = {
    {c10::kFloat, "FloatStorage", "float32"},
    {c10::kDouble, "DoubleStorage", "float64"},
    {c10::kHalf, "HalfStorage", "float16"},
    {c10::kBFloat16, "BFloat16Storage", "bfloat16"},
    {c10::kLong, "LongStorage", "int64"},
    {c10::kInt, "IntStorage", "int32"},
    {c10::kShort, "ShortStorage", "int16"},
    {c10::kChar, "CharStorage", "int8"},
    {c10::kByte, "ByteStorage", "uint8"},
    {c10::kBool, "BoolStorage", "bool"},
    {c10::kComplexFloat, "ComplexFloatStorage", "complex64"},
    {c10::kComplexDouble, "ComplexDoubleStorage", "complex128"},
    {c10::kComplexHalf, nullptr, "complex32"},
};

const DtypeNames *names_of(c10::ScalarType st) {
  for (const auto &d : kDtypes)
    if (d.st == st) return &d;
  return nullptr;
}

// Python's name of dtypes outside the table (uint16, float8_e4m3fn, ...,
// the ones PyTorch 2.x added) is c10's name in lower case.
std::string lower_c10_name(c10::ScalarType st) {
  return text::ascii_lower(c10::toString(st));
}

bool valid_utf8(const std::string &s) { return ctorch::valid_utf8(s.data(), s.size()); }  // text/utf8.h

class Pickler {
 public:
  // Each distinct storage, in order of first use: the records to write.
  struct Saved {
    c10::Storage storage;
    c10::ScalarType st;
    std::string key;
  };

  std::string run(const PV &root) {
    out_ = "\x80\x02";  // PROTO 2
    value(root);
    out_ += '.';
    return std::move(out_);
  }
  const std::vector<Saved> &storages() const { return saved_; }

 private:
  std::string out_;
  std::vector<Saved> saved_;
  std::unordered_map<const c10::StorageImpl *, size_t> by_impl_;

  void u32(uint32_t v) {
    for (int k = 0; k < 4; ++k) out_ += static_cast<char>((v >> (8 * k)) & 0xFF);
  }
  void global(const char *module, const std::string &name) {
    out_ += 'c';
    out_ += module;
    out_ += '\n';
    out_ += name;
    out_ += '\n';
  }
  void integer(int64_t v) {
    if (v >= 0 && v < 0x100) {
      out_ += 'K';
      out_ += static_cast<char>(v);
    } else if (v >= 0 && v < 0x10000) {
      out_ += 'M';
      out_ += static_cast<char>(v & 0xFF);
      out_ += static_cast<char>(v >> 8);
    } else if (v >= INT32_MIN && v <= INT32_MAX) {
      out_ += 'J';
      u32(static_cast<uint32_t>(static_cast<int32_t>(v)));
    } else {  // LONG1, 8 bytes of two's complement (always enough)
      out_ += "\x8a\x08";
      uint64_t u = static_cast<uint64_t>(v);
      for (int k = 0; k < 8; ++k) out_ += static_cast<char>((u >> (8 * k)) & 0xFF);
    }
  }
  void real(double x) {  // BINFLOAT, big-endian
    uint64_t u;
    std::memcpy(&u, &x, 8);
    out_ += 'G';
    for (int k = 7; k >= 0; --k) out_ += static_cast<char>((u >> (8 * k)) & 0xFF);
  }
  void str(const std::string &s) {
    if (!valid_utf8(s)) fail_arg("names", "'" + s + "' is not valid UTF-8 (Python keys are str)");
    if (s.size() > UINT32_MAX) fail(CTORCH_NOT_IMPLEMENTED, "a string of 4 GiB or more cannot be pickled");
    out_ += 'X';
    u32(static_cast<uint32_t>(s.size()));
    out_ += s;
  }
  void empty_ordered_dict() {
    global("collections", "OrderedDict");
    out_ += ")R";
  }
  void int_tuple(c10::IntArrayRef v) {
    if (v.empty()) {
      out_ += ')';
      return;
    }
    out_ += '(';
    for (int64_t x : v) integer(x);
    out_ += 't';
  }

  void value(const PV &v) {
    switch (v.kind) {
      case PV::None: out_ += 'N'; return;
      case PV::Bool: out_ += v.i ? '\x88' : '\x89'; return;
      case PV::Int: integer(v.i); return;
      case PV::Float: real(v.f); return;
      case PV::Str: str(v.s); return;
      case PV::Tuple:
        if (v.items.empty()) {
          out_ += ')';
        } else if (v.items.size() <= 3) {
          for (const auto &e : v.items) value(*e);
          out_ += static_cast<char>(0x84 + v.items.size());  // TUPLE1..3
        } else {
          out_ += '(';
          for (const auto &e : v.items) value(*e);
          out_ += 't';
        }
        return;
      case PV::List:
        out_ += ']';
        if (!v.items.empty()) {
          out_ += '(';
          for (const auto &e : v.items) value(*e);
          out_ += 'e';  // APPENDS
        }
        return;
      case PV::Dict:
        if (v.counter) global("collections", "Counter");  // Counter({...}): Counter.__reduce__
        if (v.ordered) empty_ordered_dict();
        else out_ += '}';
        if (!v.items.empty()) {
          out_ += '(';
          for (const auto &e : v.items) value(*e);
          out_ += 'u';  // SETITEMS
        }
        if (v.counter) out_ += "\x85R";  // TUPLE1, REDUCE
        return;
      case PV::Tensor: tensor(v.t); return;
      default: fail(CTORCH_NOT_IMPLEMENTED, std::string("a ") + pickle_type_name(v.kind) + " cannot be saved");
    }
  }

  // _rebuild_tensor_v2(storage, offset, size, stride, requires_grad,
  // OrderedDict()) as Python writes it; _rebuild_tensor_v3(..., dtype) over
  // an UntypedStorage for dtypes without a storage class (PyTorch 2.x).
  void tensor(const at::Tensor &t) {
    if (t.layout() != c10::kStrided || t.is_quantized())
      fail(CTORCH_NOT_IMPLEMENTED, "only dense (strided, not quantized) tensors can be saved; convert it (to_dense) first");
    if (t.device().is_meta()) fail(CTORCH_NOT_IMPLEMENTED, "a meta tensor has no data to save");
    // libtorch lets an empty tensor have a negative size (expand of a size-1
    // dimension to -2 beside a 0; PyTorch 2.15 too). ctorch_load refuses
    // such a file, so it is not written (found by the interpreter fuzzer).
    for (int64_t d : t.sizes())
      if (d < 0) fail(CTORCH_VALUE, "a tensor with a negative size (" + std::to_string(d) + ") cannot be saved");
    const c10::ScalarType st = t.scalar_type();
    const DtypeNames *names = names_of(st);
    const bool legacy = names && names->storage;
    const c10::Storage &storage = t.storage();
    auto found = by_impl_.find(storage.unsafeGetStorageImpl());
    size_t index;
    if (found == by_impl_.end()) {
      index = saved_.size();
      by_impl_.emplace(storage.unsafeGetStorageImpl(), index);
      saved_.push_back({storage, st, std::to_string(index)});
    } else {
      index = found->second;
      // A typed storage record cannot be read as two dtypes; Python's
      // torch.save refuses this too.
      if (saved_[index].st != st)
        fail(CTORCH_NOT_IMPLEMENTED, std::string("two tensors view the same memory as ") + c10::toString(saved_[index].st) +
                                         " and " + c10::toString(st) + "; torch.save cannot store that (clone one of them)");
    }
    const size_t item = c10::elementSize(st);
    global("torch._utils", legacy ? "_rebuild_tensor_v2" : "_rebuild_tensor_v3");
    out_ += "((";  // the call's arguments, then the persistent id
    str("storage");
    if (legacy) global("torch", names->storage);
    else global("torch.storage", "UntypedStorage");
    str(saved_[index].key);
    str(storage.device().str());
    integer(static_cast<int64_t>(legacy ? storage.nbytes() / item : storage.nbytes()));
    out_ += "tQ";  // the id tuple, BINPERSID
    integer(t.storage_offset());
    int_tuple(t.sizes());
    int_tuple(t.strides());
    out_ += t.requires_grad() ? '\x88' : '\x89';
    empty_ordered_dict();
    if (!legacy) global("torch", names ? names->python : lower_c10_name(st));
    out_ += "tR";
  }
};

}  // namespace

bool dtype_from_storage_class(const std::string &name, c10::ScalarType *out) {
  for (const auto &d : kDtypes)
    if (d.storage && name == d.storage) {
      *out = d.st;
      return true;
    }
  return false;
}

bool dtype_from_python_name(const std::string &name, c10::ScalarType *out) {
  for (const auto &d : kDtypes)
    if (name == d.python) {
      *out = d.st;
      return true;
    }
  for (int k = 0; k < static_cast<int>(c10::ScalarType::NumOptions); ++k) {
    auto st = static_cast<c10::ScalarType>(k);
    if (c10::isQIntType(st) || names_of(st)) continue;
    if (lower_c10_name(st) == name) {
      *out = st;
      return true;
    }
  }
  return false;
}

void write_pickled(const char *path, const PV &root) {
  atomic_write_with(path, [&](const Sink &sink) { write_pickled(sink, root); });
}

void write_pickled(const Sink &sink, const PV &root) {
  Pickler pickler;
  std::string pkl = pickler.run(root);
  // Storages not on the CPU are copied there (byte for byte) first.
  std::vector<c10::Storage> cpu;
  for (const auto &s : pickler.storages()) {
    if (s.storage.device().is_cpu() || s.storage.nbytes() == 0) {
      cpu.push_back(s.storage);
      continue;
    }
    at::Tensor bytes = at::empty({0}, at::TensorOptions().dtype(at::kByte).device(s.storage.device()));
    bytes.set_(s.storage, 0, {static_cast<int64_t>(s.storage.nbytes())}, {1});
    cpu.push_back(bytes.cpu().storage());
  }
  caffe2::serialize::PyTorchStreamWriter zip(sink);
  zip.writeRecord("data.pkl", pkl.data(), pkl.size());
  zip.writeRecord("byteorder", "little", 6);
  for (size_t k = 0; k < cpu.size(); ++k)
    zip.writeRecord("data/" + pickler.storages()[k].key, cpu[k].data(), cpu[k].nbytes());
  zip.writeEndOfFile();
}

}  // namespace ctorch
