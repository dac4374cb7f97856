// The C entry points of safetensors/: load (one file or a sharded
// checkpoint), save, and the metadata of a loaded dict.
#include "json/json.h"
#include "safetensors_internal.h"

#include <cstring>
#include <memory>
#include <unordered_set>

namespace {

void require_path(const char *path, const char *arg) {
  ctorch::require_ptr(path, arg);
  if (!*path) ctorch::fail_arg(arg, "is empty");
}

size_t meta_index(const ctorch_tensor_dict_s &d, size_t i) {
  if (i >= d.metadata.size())
    ctorch::fail(CTORCH_INDEX, "argument 'i': index " + std::to_string(i) + " out of range for metadata of " +
                                   std::to_string(d.metadata.size()) + " entries");
  return i;
}

// A name or metadata text: non-NULL, valid UTF-8 (JSON text is).
std::string text_arg(const char *s, const char *arg, size_t i) {
  if (!s) ctorch::fail_arg(arg, "entry " + std::to_string(i) + " is NULL");
  size_t n = std::strlen(s), bad_at = 0;
  if (!ctorch::json::valid_utf8(s, n, &bad_at))
    ctorch::fail_arg(arg, "entry " + std::to_string(i) + " is not valid UTF-8 (byte " + std::to_string(bad_at) + ")");
  return std::string(s, n);
}

}  // namespace

extern "C" {

CTORCH_API ctorch_status ctorch_safetensors_load(ctorch_tensor_dict *out, const char *path,
                                                 const ctorch_device *device) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  require_path(path, "path");
  auto d = std::make_unique<ctorch_tensor_dict_s>();
  ctorch::st::load_file(*d, path, device);
  *out = d.release();
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_safetensors_load_sharded(ctorch_tensor_dict *out, const char *index_path,
                                                         const ctorch_device *device) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  require_path(index_path, "index_path");
  auto d = std::make_unique<ctorch_tensor_dict_s>();
  ctorch::st::load_sharded(*d, index_path, device);
  *out = d.release();
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_safetensors_save(const char *path, const char *const *names,
                                                 const ctorch_tensor *tensors, size_t n,
                                                 const char *const *meta_keys, const char *const *meta_values,
                                                 size_t n_meta) {
  CTORCH_TRY
  require_path(path, "path");
  ctorch::require_list(names, n, "names");
  ctorch::require_list(tensors, n, "tensors");
  ctorch::require_list(meta_keys, n_meta, "meta_keys");
  ctorch::require_list(meta_values, n_meta, "meta_values");
  std::vector<std::string> ns;
  std::vector<at::Tensor> ts;
  std::unordered_set<std::string> seen;
  for (size_t i = 0; i < n; ++i) {
    ns.push_back(text_arg(names[i], "names", i));
    if (ns.back() == "__metadata__") ctorch::fail_arg("names", "entry " + std::to_string(i) + " is '__metadata__', the format's metadata key");
    if (!seen.insert(ns.back()).second) ctorch::fail_arg("names", "'" + ns.back() + "' appears twice");
    if (!tensors[i]) ctorch::fail_arg("tensors", "entry " + std::to_string(i) + " ('" + ns.back() + "') is NULL");
    ts.push_back(ctorch::own(tensors[i]));
  }
  std::vector<std::pair<std::string, std::string>> meta;
  seen.clear();
  for (size_t i = 0; i < n_meta; ++i) {
    std::string k = text_arg(meta_keys[i], "meta_keys", i);
    if (!seen.insert(k).second) ctorch::fail_arg("meta_keys", "'" + k + "' appears twice");
    meta.emplace_back(std::move(k), text_arg(meta_values[i], "meta_values", i));
  }
  ctorch::st::save_file(path, ns, ts, meta);
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_tensor_dict_metadata_size(size_t *out, ctorch_tensor_dict d) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = ctorch::dict_ref(d).metadata.size();
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_tensor_dict_metadata_key(const char **out, ctorch_tensor_dict d, size_t i) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  auto &r = ctorch::dict_ref(d);
  *out = r.metadata[meta_index(r, i)].first.c_str();
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_tensor_dict_metadata_value(const char **out, ctorch_tensor_dict d, size_t i) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  auto &r = ctorch::dict_ref(d);
  *out = r.metadata[meta_index(r, i)].second.c_str();
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_tensor_dict_metadata_find(const char **out, ctorch_tensor_dict d, const char *key) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  auto &r = ctorch::dict_ref(d);
  ctorch::require_ptr(key, "key");
  for (const auto &kv : r.metadata)
    if (kv.first == key) {
      *out = kv.second.c_str();
      return CTORCH_OK;
    }
  ctorch::fail(CTORCH_INDEX, std::string("argument 'key': no metadata entry '") + key + "'");
  CTORCH_CATCH
}

}  // extern "C"
