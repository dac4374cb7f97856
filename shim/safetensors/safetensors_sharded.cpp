// Sharded checkpoints as Hugging Face writes them: model.safetensors.index.json
// = {"metadata": {...}, "weight_map": {"tensor name": "model-00001-of-00002.safetensors", ...}},
// the shards in the index's folder. Each shard is read once (load_file's
// checks); every name of the weight map must be in the shard it names.
#include "json/json.h"
#include "safetensors_internal.h"
#include "files/files.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <unordered_map>

namespace ctorch {
namespace st {
namespace {

// A shard's file name must stay inside the index's folder: relative, no
// ".." component, no empty name.
bool safe_relative(const std::string &s) {
  if (s.empty() || s[0] == '/' || s.find('\0') != std::string::npos) return false;
  size_t i = 0;
  while (i <= s.size()) {
    size_t j = s.find('/', i);
    if (j == std::string::npos) j = s.size();
    if (s.compare(i, j - i, "..") == 0 && j - i == 2) return false;
    i = j + 1;
  }
  return true;
}

// The real path of p (symbolic links, "." and ".." resolved); "" if it
// cannot be resolved (missing: the load then reports it).
std::string real_path(const std::string &p) {
  char *r = ::realpath(p.empty() ? "." : p.c_str(), nullptr);
  if (!r) return std::string();
  std::string out(r);
  std::free(r);
  return out;
}

}  // namespace

void load_sharded(ctorch_tensor_dict_s &d, const char *index_path, const ctorch_device *device) {
  const std::string file = std::string("'") + index_path + "'";
  if (device) (void)to_device(*device, "device");
  std::string text;
  {
    ReadFile f(index_path);
    if (f.size() > kMaxHeader)
      bad(file, "is " + std::to_string(f.size()) + " bytes long, more than the " + std::to_string(kMaxHeader) +
                    " an index may take");
    text.resize(static_cast<size_t>(f.size()));
    size_t done = 0;
    while (done < text.size()) {
      ssize_t got = ::read(f.fd(), &text[done], text.size() - done);
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) fail(CTORCH_IO, file + ": cannot be read: " + std::strerror(errno));
      if (got == 0) bad(file, "ended while being read (was it truncated?)");
      done += static_cast<size_t>(got);
    }
  }
  LoadBudget budget(file, text.size() * 64 + (4u << 20));
  size_t bad_at = 0;
  if (!json::valid_utf8(text.data(), text.size(), &bad_at))
    bad(file, "is not valid UTF-8 (byte " + std::to_string(bad_at) + ")");
  json::Value root;
  try {
    root = json::parse(text.data(), text.size(), charge_budget, &budget);
  } catch (const json::JsonError &e) {
    bad(file, e.what());
  }
  if (root.kind != json::Value::Object) bad(file, "is not a JSON object");
  const json::Value *wm = root.find("weight_map");
  if (!wm || wm->kind != json::Value::Object) bad(file, "has no \"weight_map\" object");

  std::string dir(index_path);
  size_t slash = dir.find_last_of('/');
  dir = slash == std::string::npos ? std::string() : dir.substr(0, slash + 1);

  // The shards, each read once, in the order the weight map first names them.
  struct Shard {
    ctorch_tensor_dict_s dict;
    std::unordered_map<std::string, size_t> index;
  };
  std::unordered_map<std::string, Shard> shards;
  // Symbolic links are resolved before a shard is opened: a shard that is a
  // link to a file elsewhere, or a path through a linked folder, must still
  // end inside the index's own (real) folder; links within it are fine.
  const std::string real_dir = real_path(dir);
  if (real_dir.empty()) fail(CTORCH_IO, file + ": its folder cannot be resolved: " + std::strerror(errno));
  const std::string inside = real_dir == "/" ? real_dir : real_dir + "/";
  for (const auto &m : wm->members) {
    if (m.second.kind != json::Value::String) bad(file, "weight_map entry '" + m.first + "' is not a file name");
    const std::string &shard = m.second.text;
    if (!safe_relative(shard))
      bad(file, "weight_map entry '" + m.first + "' names '" + shard +
                    "': a shard must be a relative path inside the index's folder");
    if (!shards.count(shard)) {
      const std::string real = real_path(dir + shard);
      if (!real.empty() && real.compare(0, inside.size(), inside) != 0)
        bad(file, "weight_map entry '" + m.first + "' names '" + shard + "', which resolves to '" + real +
                      "' outside the index's folder '" + real_dir + "' (through a symbolic link)");
      Shard &s = shards[shard];
      load_file(s.dict, (dir + shard).c_str(), device);
      for (size_t k = 0; k < s.dict.keys.size(); ++k) s.index.emplace(s.dict.keys[k], k);
    }
  }
  std::vector<std::string> keys;
  std::vector<at::Tensor> values;
  for (const auto &m : wm->members) {
    const Shard &s = shards[m.second.text];
    auto it = s.index.find(m.first);
    if (it == s.index.end())
      bad(file, "tensor '" + m.first + "' is mapped to shard '" + m.second.text + "', which does not hold it");
    keys.push_back(m.first);
    values.push_back(s.dict.values[it->second]);
  }
  // The index's own metadata ({"total_size": N} from transformers): strings
  // as they are, numbers and booleans as their JSON text.
  std::vector<std::pair<std::string, std::string>> metadata;
  if (const json::Value *md = root.find("metadata")) {
    if (md->kind != json::Value::Object && md->kind != json::Value::Null) bad(file, "\"metadata\" is not an object");
    for (const auto &kv : md->members) {
      if (kv.second.kind == json::Value::String || kv.second.kind == json::Value::Number)
        metadata.emplace_back(kv.first, kv.second.text);
      else if (kv.second.kind == json::Value::Bool)
        metadata.emplace_back(kv.first, kv.second.boolean ? "true" : "false");
    }
  }
  d.keys = std::move(keys);
  d.values = std::move(values);
  d.metadata = std::move(metadata);
}

}  // namespace st
}  // namespace ctorch
