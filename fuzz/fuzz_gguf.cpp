// Harness: bytes as a GGUF file into ctorch's GGUF reader (shim/lm/gguf.*),
// compiled into the harness with the core pieces it uses (tests/lm's
// ctorch_gguf_reader), as the zip and AOTI checks are. The file is opened,
// then everything in it is read: every key through the getter its type
// calls for and through a getter of the wrong type, the vocabulary, every
// tensor (dequantised where ctorch converts its type) and its raw bytes.
// Properties: no crash, no out-of-bounds read (ASan checks every byte the
// reader and the dequantisers touch lies in the mapping), no hang, memory
// bounded by the load limit; every refusal a ctorch::StatusError of
// INVALID_ARGUMENT (the file) or OUT_OF_MEMORY (the limit), its message
// naming the file; a tensor handed out has the element count and the
// shape its table entry declares.
#include "lm/gguf.h"

#include <ATen/ATen.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "files/files.h"
#include "core/internal.h"
#include "mem_file.h"

namespace {

using ctorch::lm::GgmlType;
using ctorch::lm::GgufFile;
using ctorch::lm::GgufType;

[[noreturn]] void violation(const std::string &what) {
  std::fprintf(stderr, "CONTRACT VIOLATION: %s\n", what.c_str());
  std::abort();
}

// Runs f; a StatusError must be one the contract allows and name the file.
template <typename F>
void guarded(const std::string &path, F f) {
  try {
    f();
  } catch (const ctorch::StatusError &e) {
    if (e.status() != CTORCH_INVALID_ARGUMENT && e.status() != CTORCH_OUT_OF_MEMORY)
      violation("status " + std::to_string(e.status()) + ": " + e.what());
    if (std::string(e.what()).find("'" + path + "'") == std::string::npos)
      violation(std::string("a refusal that does not name the file: ") + e.what());
  }
}

void read_key(const GgufFile &g, const std::string &k) {
  GgufType t = g.type_of(k);
  (void)g.value_text(k);
  switch (t) {
    case GgufType::STRING: (void)g.str(k); (void)g.u32(k); break;  // the second must refuse
    case GgufType::BOOL: (void)g.boolean(k); (void)g.f32(k); break;
    case GgufType::FLOAT32:
    case GgufType::FLOAT64: (void)g.f32(k); (void)g.str(k); break;
    case GgufType::ARRAY:
      switch (g.array_type(k)) {
        case GgufType::STRING: (void)g.str_array(k); break;
        case GgufType::FLOAT32:
        case GgufType::FLOAT64: (void)g.f32_array(k); break;
        case GgufType::BOOL: (void)g.bool_array(k); break;
        case GgufType::ARRAY: break;
        default: (void)g.int_array(k); break;
      }
      (void)g.boolean(k);
      break;
    default: (void)g.i64(k); (void)g.u64(k); (void)g.u32(k); (void)g.str(k); break;
  }
  violation("metadata '" + k + "' was read through a getter of the wrong type");
}

bool converted(uint32_t t) {
  switch (static_cast<GgmlType>(t)) {
    case GgmlType::F32: case GgmlType::F16: case GgmlType::BF16: case GgmlType::Q8_0:
    case GgmlType::Q4_0: case GgmlType::Q4_1: case GgmlType::Q4_K: case GgmlType::Q6_K: return true;
    default: return false;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // The fuzzers' load limit (fuzz/fuzz_util.h's): a file that declares more
  // is refused before its tensors are made.
  static const bool limited = [] { return ctorch_set_load_limit(nullptr, 64u << 20) == CTORCH_OK; }();
  (void)limited;
  fz::MemFile f(data, size);
  const std::string path = f.path();
  std::shared_ptr<const GgufFile> g;
  guarded(path, [&] { g = GgufFile::open(path); });
  if (!g) return 0;
  for (const auto &k : g->keys()) guarded(path, [&] { read_key(*g, k); });
  guarded(path, [&] { (void)g->vocab(); });
  // One budget for every tensor, as a model loader charges its load.
  ctorch::LoadBudget budget("'" + path + "'", 0);
  for (const auto &t : g->tensors()) {
    guarded(path, [&] {
      at::Tensor r = g->raw(t.name);
      if (static_cast<uint64_t>(r.numel()) != t.nbytes) violation("raw() of '" + t.name + "' has the wrong size");
      if (!converted(t.type)) return;
      at::Tensor x = g->tensor_f32(t.name, &budget);
      if (x.numel() != t.numel || x.sizes().vec() != t.shape)
        violation("tensor '" + t.name + "' does not have the shape its table entry declares");
      (void)x.sum().item<float>();
    });
  }
  return 0;
}
