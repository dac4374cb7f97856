// Loading: ctorch_lm_load's options, a Hugging Face folder (config.json,
// generation_config.json, model.safetensors or its sharded index,
// tokenizer_config.json's chat template), a GGUF file (model_gguf.cpp),
// or weights drawn at random; and the model's description.
#include <sys/stat.h>
#include <unistd.h>

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <unordered_map>

#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "files/files.h"
#include "core/internal.h"
#include "json/json.h"
#include "lm/model.h"
#include "lm/model_weights.h"
#include "lm/qkernels.h"
#include "lm/tokenizer.h"
#include "safetensors/safetensors_internal.h"

namespace ctorch {
namespace lm {
namespace load_detail {

[[noreturn]] void bad_option(const std::string &what) { fail_arg("options", what); }

bool is_dir(const std::string &p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}
bool exists(const std::string &p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0;
}

// The whole of a small text file (a configuration): refused past max bytes.
std::string read_text(const std::string &path, uint64_t max) {
  ReadFile f(path.c_str());
  if (f.size() > max)
    fail(CTORCH_INVALID_ARGUMENT, "'" + path + "' is " + std::to_string(f.size()) + " bytes long, more than the " +
                                      std::to_string(max) + " it may take");
  std::string text(static_cast<size_t>(f.size()), '\0');
  size_t done = 0;
  while (done < text.size()) {
    ssize_t got = ::read(f.fd(), &text[done], text.size() - done);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) fail(CTORCH_IO, "'" + path + "' cannot be read: " + std::strerror(errno));
    if (got == 0) fail(CTORCH_INVALID_ARGUMENT, "'" + path + "' ended while being read (was it truncated?)");
    done += static_cast<size_t>(got);
  }
  return text;
}

// The folder's safetensors tensors by name.
class FolderSource : public WeightSource {
 public:
  explicit FolderSource(const std::string &dir) {
    std::string single = dir + "/model.safetensors", index = dir + "/model.safetensors.index.json";
    try {
      if (exists(index)) {
        file_ = index;
        st::load_sharded(dict_, index.c_str(), nullptr);
      } else if (exists(single)) {
        file_ = single;
        st::load_file(dict_, single.c_str(), nullptr);
      } else {
        fail(CTORCH_INVALID_ARGUMENT, "'" + dir + "' has neither model.safetensors nor model.safetensors.index.json");
      }
    } catch (const StatusError &e) {
      // The safetensors reader's VALUE (a malformed file) is this API's INVALID_ARGUMENT.
      if (e.status() == CTORCH_VALUE) fail(CTORCH_INVALID_ARGUMENT, e.what());
      throw;
    }
    for (size_t i = 0; i < dict_.keys.size(); ++i) by_name_[dict_.keys[i]] = i;
  }
  at::Tensor get(const std::string &name, const std::vector<int64_t> &shape, WeightKind) override {
    auto it = by_name_.find(name);
    if (it == by_name_.end()) fail(CTORCH_INVALID_ARGUMENT, "'" + file_ + "' has no tensor \"" + name + "\"");
    const at::Tensor &t = dict_.values[it->second];
    if (t.sizes() != c10::IntArrayRef(shape))
      fail(CTORCH_INVALID_ARGUMENT, "'" + file_ + "': tensor \"" + name + "\" is " + shape_text(t.sizes().vec()) +
                                        ", the configuration makes it " + shape_text(shape));
    if (!at::isFloatingType(t.scalar_type()))
      fail(CTORCH_INVALID_ARGUMENT, "'" + file_ + "': tensor \"" + name + "\" is " +
                                        std::string(c10::toString(t.scalar_type())) + ", not a floating dtype");
    return t;
  }
  bool has(const std::string &name) const override { return by_name_.count(name) != 0; }
  std::string what() const override { return file_; }

 private:
  static std::string shape_text(const std::vector<int64_t> &s) {
    std::string r = "[";
    for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
    return r + "]";
  }
  std::string file_;
  ctorch_tensor_dict_s dict_;
  std::unordered_map<std::string, size_t> by_name_;
};

// tokenizer_config.json's chat_template: a string, or a list of
// {"name", "template"} of which the one named "default"; "" if none.
std::string chat_template_of(const std::string &text, const std::string &file) {
  if (text.empty()) return "";
  LoadBudget budget(file, text.size() * 64 + (1u << 20));
  json::Value root;
  try {
    root = json::parse(text.data(), text.size(), st::charge_budget, &budget);
  } catch (const json::JsonError &e) {
    fail(CTORCH_INVALID_ARGUMENT, file + ": " + e.what());
  }
  const json::Value *t = root.kind == json::Value::Object ? root.find("chat_template") : nullptr;
  if (!t) return "";
  if (t->kind == json::Value::String) return t->text;
  if (t->kind == json::Value::Array)
    for (const auto &e : t->items) {
      const json::Value *n = e.find("name"), *x = e.find("template");
      if (n && x && n->kind == json::Value::String && n->text == "default" && x->kind == json::Value::String)
        return x->text;
    }
  return "";
}

// activations=int8: the packed Q8/Q4 parts in groups of 32 and Q6_K's
// marked for the int8 kernels (bf16 stays float32) and rearranged in tiles
// of 16 rows for them (qweight_tile: in place of the row-major bytes, not
// beside them; Q6_K's at the file's size), and what the load report says.
void mark_int8(Weights &w, std::vector<std::string> &report) {
  int64_t marked = 0, left = 0, tiled = 0;
  auto mark = [&](Linear &l) {
    for (QWeight &q : l.q) {
      q = qweight_tile(q);  // (a Q6_K's Q8/16 takes int8 only as Q6 tiles)
      q.int8_acts = q.int8_form();
      ++(q.int8_acts ? marked : left);
      tiled += q.tiled;
    }
  };
  for (LayerWeights &l : w.layers) mark(l.wqkv), mark(l.wo), mark(l.wup), mark(l.wdown);
  // A tied head's embedding lookups read the head's tiles (one copy).
  const bool tied = w.tok_embd_q.defined() && w.head.q.size() == 1 && w.head.q[0].data.is_same(w.tok_embd_q.data);
  mark(w.head);
  if (tied) w.tok_embd_q = w.head.q[0];
  int64_t bytes = w.tok_embd_q.nbytes();  // (the packed size after tiling: Q6 tiles are smaller)
  auto add = [&](const Linear &l) {
    for (const QWeight &q : l.q) bytes += q.nbytes();
  };
  for (const LayerWeights &l : w.layers) add(l.wqkv), add(l.wo), add(l.wup), add(l.wdown);
  if (!tied) add(w.head);
#ifdef __GLIBC__
  // The row-major copies are freed, but among the tiles that replaced
  // them: malloc keeps such holes resident unless asked to give them back.
  if (tiled) ::malloc_trim(0);
#endif
  if (!qk::int8_available())
    report.push_back("activations=int8: this CPU has no AVX-512 VNNI (or CTORCH_LM_KERNELS chose another set): "
                     "float32 activations");
  else
    report.push_back("activations=int8: " + std::to_string(marked) +
                     " packed matrices multiply x rounded to 8 bits per group of 32 (AVX-512 VNNI), " +
                     std::to_string(tiled) + " of them in tiles of 16 rows" +
                     (left ? ", " + std::to_string(left) + " others float32" : "") + "; " +
                     std::to_string(bytes >> 20) + " MiB packed");
}

}  // namespace load_detail

LoadOptions parse_load_options(const char *text) {
  using load_detail::bad_option;
  LoadOptions o;
  if (!text) return o;
  std::string s(text);
  bool seed_given = false;
  size_t i = 0;
  while (i < s.size()) {
    size_t j = s.find(',', i);
    if (j == std::string::npos) j = s.size();
    std::string item = s.substr(i, j - i);
    i = j + 1;
    if (item.empty()) continue;
    size_t eq = item.find('=');
    if (eq == std::string::npos) bad_option("\"" + item + "\" is not key=value");
    std::string k = item.substr(0, eq), v = item.substr(eq + 1);
    if (k == "dtype") {
      if (v == "float32") o.dtype = at::kFloat;
      else if (v == "bfloat16") o.dtype = at::kBFloat16;
      else if (v == "float16") o.dtype = at::kHalf;
      else bad_option("dtype \"" + v + "\" is not float32, bfloat16 or float16");
    } else if (k == "device") {
      if (v == "cpu") {
        o.device = c10::Device(c10::DeviceType::CPU);
      } else if (v == "cuda" || v.rfind("cuda:", 0) == 0) {
        int64_t idx = 0;
        if (v.size() > 5) {
          const char *b = v.data() + 5, *e = v.data() + v.size();
          auto r = std::from_chars(b, e, idx);
          if (r.ec != std::errc() || r.ptr != e || idx < 0 || idx > 255) bad_option("device \"" + v + "\" is not cuda:N");
        }
        if (!at::hasCUDA()) fail(CTORCH_INVALID_ARGUMENT, "argument 'options': device \"" + v + "\": this ctorch has no CUDA device");
        o.device = c10::Device(c10::DeviceType::CUDA, static_cast<c10::DeviceIndex>(idx));
      } else {
        bad_option("device \"" + v + "\" is not cpu, cuda or cuda:N");
      }
    } else if (k == "init") {
      if (v != "random") bad_option("init \"" + v + "\" is not random");
      o.random = true;
    } else if (k == "seed") {
      const char *b = v.data(), *e = v.data() + v.size();
      auto r = std::from_chars(b, e, o.seed);
      if (v.empty() || r.ec != std::errc() || r.ptr != e) bad_option("seed \"" + v + "\" is not an unsigned integer");
      seed_given = true;
    } else if (k == "weights") {
      if (v == "packed") o.packed = true;
      else if (v == "dequantize") o.packed = false;
      else bad_option("weights \"" + v + "\" is not packed or dequantize");
    } else if (k == "quantize") {
      if (v == "none") o.quantize.clear();
      else if (v == "q8_0" || v == "q4_0" || v == "q4_1" || v == "bf16") o.quantize = v;
      else bad_option("quantize \"" + v + "\" is not q8_0, q4_0, q4_1, bf16 or none");
    } else if (k == "activations") {
      if (v == "float") o.int8_activations = false;
      else if (v == "int8") o.int8_activations = true;
      else bad_option("activations \"" + v + "\" is not float or int8");
    } else {
      bad_option("unknown key \"" + k + "\" (dtype, device, init, seed, weights, quantize, activations)");
    }
  }
  if (seed_given && !o.random) bad_option("seed is given without init=random");
  if (!o.quantize.empty() && !o.device.is_cpu())
    bad_option("quantize is for the CPU (its packed kernels), not " + o.device.str());
  if (o.int8_activations && (!o.device.is_cpu() || !o.packed))
    bad_option("activations=int8 is for the CPU's packed matrices, not " +
               std::string(o.packed ? o.device.str() : "weights=dequantize"));
  return o;
}

std::shared_ptr<Model> ModelBuilder::folder(const std::string &dir, const LoadOptions &opt) {
  using namespace load_detail;
  std::shared_ptr<Model> m(new Model());
  m->opt_ = opt;
  m->source_ = "folder";
  const std::string cfg_path = dir + "/config.json";
  m->cfg_ = parse_hf_config(read_text(cfg_path, 16u << 20), "'" + cfg_path + "'");
  const std::string gen_path = dir + "/generation_config.json";
  if (exists(gen_path)) apply_generation_config(m->cfg_, read_text(gen_path, 16u << 20), "'" + gen_path + "'");
  check_config(m->cfg_, "'" + cfg_path + "'");
  // The tokenizer (tokenizer.json with tokenizer_config.json) and the chat
  // template: transformers 5 writes it to chat_template.jinja, earlier
  // versions into tokenizer_config.json.
  const std::string tc_path = dir + "/tokenizer_config.json", jinja = dir + "/chat_template.jinja";
  const std::string tc_text = exists(tc_path) ? read_text(tc_path, 64u << 20) : std::string();
  if (exists(dir + "/tokenizer.json"))
    m->tok_ = Tokenizer::from_hf_json(read_text(dir + "/tokenizer.json", 1u << 30), tc_text, "'" + dir + "'");
  if (exists(jinja)) m->chat_template_ = read_text(jinja, 16u << 20);
  else if (m->tok_) m->chat_template_ = m->tok_->chat_template();
  else m->chat_template_ = chat_template_of(tc_text, "'" + tc_path + "'");
  if (m->cfg_.eos.empty() && m->tok_ && m->tok_->eos_id() >= 0) m->cfg_.eos.push_back(m->tok_->eos_id());
  build(*m, [&]() -> std::unique_ptr<WeightSource> { return std::make_unique<FolderSource>(dir); });
  return m;
}

void ModelBuilder::build(Model &m, const std::function<std::unique_ptr<WeightSource>()> &make) {
  const int64_t bytes = parameter_count(m.cfg_) * static_cast<int64_t>(c10::elementSize(m.opt_.dtype));
  if (m.opt_.device.is_cpu()) {
    const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
    const double phys = pages > 0 && page > 0 ? double(pages) * double(page) : 0;
    if (phys > 0 && double(bytes) > phys)
      fail(CTORCH_OUT_OF_MEMORY, "the model's " + std::to_string(parameter_count(m.cfg_)) + " parameters take " +
                                     std::to_string(bytes) + " bytes, more than this machine's memory");
  }
  if (uint64_t lim = load_limit(); lim && m.opt_.random && uint64_t(bytes) > lim)
    fail(CTORCH_OUT_OF_MEMORY, "the model's weights take " + std::to_string(bytes) +
                                   " bytes, more than the load limit (ctorch_set_load_limit)");
  std::unique_ptr<WeightSource> src = m.opt_.random ? random_source(m.opt_.seed) : make();
  if (m.opt_.random) m.report_.push_back("weights drawn at random (seed " + std::to_string(m.opt_.seed) + ")");
  at::NoGradGuard no_grad;
  m.w_ = assemble_weights(m.cfg_, m.opt_, *src, m.report_);
  if (m.opt_.int8_activations) load_detail::mark_int8(m.w_, m.report_);
}

std::shared_ptr<Model> Model::load(const std::string &path, const LoadOptions &opt) {
  std::shared_ptr<Model> m = load_detail::is_dir(path) ? ModelBuilder::folder(path, opt) : ModelBuilder::gguf(path, opt);
  m->step_weights_ = m->step_weights();
  return m;
}

std::string Model::describe() const {
  const ModelConfig &c = cfg_;
  std::string o = "{\"architecture\":";
  json::append_string(o, c.arch);
  o += ",\"source\":";
  json::append_string(o, source_);
  auto num = [&](const char *k, int64_t v) { o += std::string(",\"") + k + "\":" + std::to_string(v); };
  num("n_layer", c.n_layer);
  num("n_embd", c.n_embd);
  num("n_head", c.n_head);
  num("n_head_kv", c.n_head_kv);
  num("n_vocab", c.n_vocab);
  num("n_ctx_train", c.n_ctx_train);
  o += ",\"dtype\":";
  json::append_string(o, opt_.dtype == at::kFloat ? "float32" : opt_.dtype == at::kBFloat16 ? "bfloat16" : "float16");
  o += ",\"device\":";
  json::append_string(o, opt_.device.str());
  o += ",\"bos\":" + (c.bos < 0 ? std::string("null") : std::to_string(c.bos));
  o += ",\"eos\":[";
  for (size_t i = 0; i < c.eos.size(); ++i) o += (i ? "," : "") + std::to_string(c.eos[i]);
  o += "],\"has_chat_template\":";
  o += chat_template_.empty() ? "false" : "true";
  num("parameters", parameter_count(c));
  o += ",\"report\":[";
  for (size_t i = 0; i < report_.size(); ++i) {
    if (i) o += ",";
    json::append_string(o, report_[i]);
  }
  return o + "]}";
}

}  // namespace lm
}  // namespace ctorch
