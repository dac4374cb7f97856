// The safetensors writer, byte for byte what the Python package's
// safetensors.torch.save_file writes (its Rust `serialize_to_file`):
// tensors sorted by dtype (the Rust `Dtype` enum's order, descending) then
// by name (bytewise), data packed in that order from offset 0, the header
// serde_json's compact text ({"__metadata__":{...},"name":{"dtype":"F32",
// "shape":[2,2],"data_offsets":[0,16]},...}) padded with spaces to a
// multiple of 8 bytes. The one difference: the Python package writes its
// metadata in its hash map's order, which changes from run to run; ctorch
// writes the keys sorted, so a file with at most one metadata entry is
// byte-identical and one with more is equal as JSON.
#include "json/json.h"
#include "safetensors_internal.h"
#include "core/materialize.h"

#include <algorithm>
#include <numeric>
#include <unordered_set>

namespace ctorch {
namespace st {

void save_file(const char *path, const std::vector<std::string> &names, const std::vector<at::Tensor> &tensors,
               const std::vector<std::pair<std::string, std::string>> &metadata) {
  struct Item {
    const std::string *name;
    const Dtype *dtype;
    at::Tensor data;  // contiguous, on the CPU
  };
  std::vector<Item> items;
  items.reserve(names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    const at::Tensor &t = tensors[i];
    std::string arg = "tensors[" + std::to_string(i) + "] ('" + names[i] + "')";
    if (t.layout() != c10::kStrided)
      fail(CTORCH_NOT_IMPLEMENTED, "argument '" + arg + "': only dense (strided) tensors can be saved; convert it (to_dense) first");
    for (int64_t j = 0; j < t.dim(); ++j)
      if (t.size(j) < 0) fail(CTORCH_VALUE, "argument '" + arg + "': has a negative size");
    ctorch_dtype cd;
    try {
      cd = from_scalar_type(t.scalar_type());
    } catch (const StatusError &) {
      cd = static_cast<ctorch_dtype>(0);
    }
    const Dtype *dt = dtype_by_ctorch(cd);
    if (!dt)
      fail(CTORCH_TYPE, "argument '" + arg + "': dtype " + c10::toString(t.scalar_type()) + " has no safetensors dtype");
    at::Tensor c = materialize_zero(t).resolve_conj().resolve_neg();
    if (c.device().type() != c10::kCPU) c = c.to(c10::kCPU);
    items.push_back({&names[i], dt, c.contiguous()});
  }
  std::sort(items.begin(), items.end(), [](const Item &a, const Item &b) {
    if (a.dtype->rank != b.dtype->rank) return a.dtype->rank > b.dtype->rank;
    return *a.name < *b.name;  // bytewise, as Rust's str ordering
  });

  std::string h = "{";
  if (!metadata.empty()) {
    std::vector<size_t> order(metadata.size());
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return metadata[a].first < metadata[b].first; });
    h += "\"__metadata__\":{";
    for (size_t k = 0; k < order.size(); ++k) {
      if (k) h += ',';
      json::append_string(h, metadata[order[k]].first);
      h += ':';
      json::append_string(h, metadata[order[k]].second);
    }
    h += '}';
  }
  uint64_t offset = 0;
  for (size_t k = 0; k < items.size(); ++k) {
    const Item &it = items[k];
    if (k || !metadata.empty()) h += ',';
    json::append_string(h, *it.name);
    h += ":{\"dtype\":\"";
    h += it.dtype->name;
    h += "\",\"shape\":[";
    for (int64_t j = 0; j < it.data.dim(); ++j) {
      if (j) h += ',';
      h += std::to_string(it.data.size(j));
    }
    uint64_t nbytes = static_cast<uint64_t>(it.data.numel()) * it.dtype->itemsize;
    h += "],\"data_offsets\":[" + std::to_string(offset) + "," + std::to_string(offset + nbytes) + "]}";
    offset += nbytes;
  }
  h += '}';
  h.resize((h.size() + 7) / 8 * 8, ' ');
  if (h.size() > kMaxHeader)
    fail(CTORCH_VALUE, "the header would take " + std::to_string(h.size()) + " bytes, more than the format's " +
                           std::to_string(kMaxHeader));

  atomic_write_with(path, [&](const Sink &sink) {
    unsigned char len[8];
    uint64_t n = h.size();
    for (int i = 0; i < 8; ++i) len[i] = static_cast<unsigned char>(n >> (8 * i));
    sink(len, 8);
    sink(h.data(), h.size());
    for (const auto &it : items) {
      size_t nbytes = static_cast<size_t>(it.data.numel()) * it.dtype->itemsize;
      if (nbytes) sink(it.data.data_ptr(), nbytes);
    }
  });
}

}  // namespace st
}  // namespace ctorch
