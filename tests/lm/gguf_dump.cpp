// The GGUF reader (shim/lm/gguf.*) driven from the command line, for
// gguf_vs_numpy.py to compare with the gguf package:
//   gguf_dump info FILE...       a JSON line per file: version, alignment,
//                                every key through its typed getter, the
//                                tensor table, the vocabulary (strings as
//                                hex: the bytes exact)
//   gguf_dump dump DIR FILE...   a JSON line per file: {"info": as above,
//                                "tensors": tensor()'s dtype and shape and
//                                whether it views the mapping}, each tensor
//                                ctorch converts written as DIR/I/NAME.f32
//                                (tensor_f32's bytes) and DIR/I/NAME.raw
//                                (raw()) for the I-th file (DIR/I exists)
//   gguf_dump check FILE...      one line per file: "ok", or "refused STATUS
//                                MESSAGE" for a StatusError, or "error WHAT"
//                                for any other exception (a bug), after
//                                opening it and reading every key, tensor
//                                and the vocabulary
// CTORCH_GGUF_DUMP_LIMIT=N sets the load limit (ctorch_set_load_limit) first.
#include "lm/gguf.h"

#include <ATen/ATen.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>

#include "files/files.h"
#include "core/internal.h"

using ctorch::lm::GgmlType;
using ctorch::lm::GgufFile;
using ctorch::lm::GgufType;

namespace {

std::string hex(const std::string &s) {
  static const char *d = "0123456789abcdef";
  std::string o = "\"";
  for (unsigned char c : s) o += d[c >> 4], o += d[c & 15];
  return o + "\"";
}

std::string quoted(const std::string &s) { return "\"" + s + "\""; }  // names this tool writes (ASCII)

// A float as JSON that Python's json reads back to the same value.
std::string num(double v, int digits) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  char b[40];
  return std::string(b, std::snprintf(b, sizeof b, "%.*g", digits, v));
}

bool convertible(uint32_t t) {
  switch (static_cast<GgmlType>(t)) {
    case GgmlType::F32: case GgmlType::F16: case GgmlType::BF16: case GgmlType::Q8_0:
    case GgmlType::Q4_0: case GgmlType::Q4_1: case GgmlType::Q4_K: case GgmlType::Q6_K: return true;
    default: return false;
  }
}

// A key's value through the getter its type calls for (arrays elementwise).
std::string value_json(const GgufFile &g, const std::string &k) {
  std::ostringstream o;
  GgufType t = g.type_of(k);
  auto is_int = [](GgufType x) {
    return x != GgufType::FLOAT32 && x != GgufType::FLOAT64 && x != GgufType::BOOL && x != GgufType::STRING &&
           x != GgufType::ARRAY;
  };
  if (t == GgufType::STRING) return hex(g.str(k));
  if (t == GgufType::BOOL) return g.boolean(k) ? "true" : "false";
  if (t == GgufType::FLOAT32) return num(g.f32(k), 17);
  if (t == GgufType::FLOAT64) return num(std::stod(g.value_text(k)), 17);
  if (t == GgufType::UINT64) return std::to_string(g.u64(k));
  if (is_int(t)) return std::to_string(g.i64(k));
  GgufType e = g.array_type(k);
  o << "[";
  if (e == GgufType::STRING) {
    auto v = g.str_array(k);
    for (size_t i = 0; i < v.size(); ++i) o << (i ? "," : "") << hex(v[i]);
  } else if (e == GgufType::FLOAT32 || e == GgufType::FLOAT64) {
    auto v = g.f32_array(k);
    for (size_t i = 0; i < v.size(); ++i) o << (i ? "," : "") << num(v[i], 17);
  } else if (e == GgufType::BOOL) {
    auto v = g.bool_array(k);
    for (size_t i = 0; i < v.size(); ++i) o << (i ? "," : "") << (v[i] ? "true" : "false");
  } else if (e == GgufType::ARRAY) {
    o << quoted(g.value_text(k));
  } else {
    auto v = g.int_array(k);
    for (size_t i = 0; i < v.size(); ++i) o << (i ? "," : "") << v[i];
  }
  o << "]";
  return o.str();
}

std::string info(const std::string &path) {
  auto g = GgufFile::open(path);
  std::ostringstream o;
  o << "{\"version\":" << g->version() << ",\"alignment\":" << g->alignment() << ",\"data_offset\":" << g->data_offset()
    << ",\"kv\":[";
  bool first = true;
  for (const auto &k : g->keys()) {
    GgufType t = g->type_of(k);
    o << (first ? "" : ",") << "{\"key\":" << hex(k) << ",\"type\":" << static_cast<uint32_t>(t);
    if (t == GgufType::ARRAY)
      o << ",\"elem\":" << static_cast<uint32_t>(g->array_type(k)) << ",\"count\":" << g->array_size(k);
    o << ",\"value\":" << value_json(*g, k) << "}";
    first = false;
  }
  o << "],\"tensors\":[";
  first = true;
  for (const auto &t : g->tensors()) {
    o << (first ? "" : ",") << "{\"name\":" << hex(t.name) << ",\"type\":" << t.type << ",\"type_name\":"
      << quoted(ctorch::lm::ggml_type_name(t.type)) << ",\"ne\":[";
    for (size_t i = 0; i < t.ne.size(); ++i) o << (i ? "," : "") << t.ne[i];
    o << "],\"shape\":[";
    for (size_t i = 0; i < t.shape.size(); ++i) o << (i ? "," : "") << t.shape[i];
    o << "],\"offset\":" << t.offset << ",\"nbytes\":" << t.nbytes << ",\"numel\":" << t.numel << "}";
    first = false;
  }
  o << "]";
  if (g->has("tokenizer.ggml.model")) {
    auto v = g->vocab();
    o << ",\"vocab\":{\"model\":" << hex(v.model) << ",\"pre\":" << hex(v.pre) << ",\"n_tokens\":" << v.tokens.size()
      << ",\"n_scores\":" << v.scores.size() << ",\"n_types\":" << v.types.size() << ",\"n_merges\":"
      << v.merges.size() << ",\"bos\":" << v.bos << ",\"eos\":" << v.eos << ",\"unk\":" << v.unk << ",\"pad\":" << v.pad
      << ",\"add_bos\":" << v.add_bos << ",\"add_eos\":" << v.add_eos << ",\"add_space_prefix\":" << v.add_space_prefix
      << ",\"chat_template\":" << hex(v.chat_template) << ",\"first_tokens\":[";
    for (size_t i = 0; i < v.tokens.size() && i < 8; ++i) o << (i ? "," : "") << hex(v.tokens[i]);
    o << "],\"last_token\":" << hex(v.tokens.back()) << "}";
  }
  o << "}";
  return o.str();
}

void write_file(const std::string &p, const void *data, size_t n) {
  std::ofstream f(p, std::ios::binary);
  f.write(static_cast<const char *>(data), static_cast<std::streamsize>(n));
  if (!f) throw std::runtime_error("cannot write " + p);
}

std::string tensors(const std::string &path, const std::string &dir) {
  std::ostringstream o;
  o << "[";
  at::Tensor view;
  {
    auto g = GgufFile::open(path);
    for (const auto &t : g->tensors()) {
      if (!convertible(t.type)) continue;
      at::Tensor x = g->tensor(t.name);
      at::Tensor f = g->tensor_f32(t.name).contiguous();
      at::Tensor r = g->raw(t.name);
      bool is_view = t.numel && x.data_ptr() == static_cast<const void *>(g->raw_data(t));
      write_file(dir + "/" + t.name + ".f32", f.data_ptr(), f.numel() * 4);
      write_file(dir + "/" + t.name + ".raw", r.data_ptr(), r.numel());
      o << (o.tellp() > 1 ? "," : "") << "{\"name\":" << quoted(t.name) << ",\"dtype\":" << quoted(c10::toString(x.scalar_type()))
                << ",\"shape\":" << quoted(c10::str(x.sizes())) << ",\"view\":" << (is_view ? "true" : "false")
                << "}";
      if (is_view) view = x;
    }
  }
  // The GgufFile is gone; a view still reads its bytes (the mapping it keeps).
  o << "]";
  if (view.defined()) o << ",\"after_close_sum\":" << view.to(at::kDouble).sum().item<double>();
  return o.str();
}

void check(const std::string &path) {
  try {
    auto g = GgufFile::open(path);
    for (const auto &k : g->keys()) (void)value_json(*g, k);
    ctorch::LoadBudget budget("'" + path + "'", 0);  // one for the file's tensors, as a model loader's
    for (const auto &t : g->tensors()) {
      (void)g->raw(t.name);
      if (convertible(t.type)) (void)g->tensor_f32(t.name, &budget);
    }
    if (g->has("tokenizer.ggml.model")) (void)g->vocab();
    std::cout << "ok\n";
  } catch (const ctorch::StatusError &e) {
    std::cout << "refused " << e.status() << " " << e.what() << "\n";
  } catch (const std::exception &e) {
    std::cout << "error " << e.what() << "\n";
  }
}

}  // namespace

int main(int argc, char **argv) {
  if (argc < 3) {
    std::cerr << "usage: gguf_dump info FILE... | dump DIR FILE... | check FILE...\n";
    return 2;
  }
  std::string cmd = argv[1];
  if (const char *lim = std::getenv("CTORCH_GGUF_DUMP_LIMIT")) ctorch_set_load_limit(nullptr, std::strtoull(lim, nullptr, 10));
  try {
    if (cmd == "info") {
      for (int i = 2; i < argc; ++i) std::cout << info(argv[i]) << "\n";
    } else if (cmd == "dump" && argc >= 4) {
      for (int i = 3; i < argc; ++i) {
        std::string dir = std::string(argv[2]) + "/" + std::to_string(i - 3);
        std::cout << "{\"info\":" << info(argv[i]) << ",\"tensors\":" << tensors(argv[i], dir) << "}\n";
      }
    } else if (cmd == "check") {
      for (int i = 2; i < argc; ++i) check(argv[i]);
    } else {
      std::cerr << "gguf_dump: unknown command\n";
      return 2;
    }
  } catch (const std::exception &e) {
    std::cerr << "gguf_dump: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
