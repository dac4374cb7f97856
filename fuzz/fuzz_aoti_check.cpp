// Harness: bytes into ctorch's AOTInductor package check (shim/models/aoti_check.h),
// the code that reads untrusted .pt2 files before libtorch's loader does.
// It is compiled on its own (the standard library and zlib), so it runs on
// every build, including the ASan/UBSan one whose libtorch (1.13) has no
// loader. Properties: no crash, no out-of-bounds read, and a verdict that
// is consistent (OK names the model's library; a refusal says why). The
// first byte picks the model name asked for, so other names are reached too.
#include "models/aoti_check.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const char *const models[] = {"model", "other", "m", ".."};
  const char *model = size ? models[data[0] % 4] : "model";
  auto r = ctorch::aoti::check_package(data, size, model);
  if (r.verdict == ctorch::aoti::PackageCheck::OK && (r.so_entry.empty() || !r.message.empty())) {
    std::fprintf(stderr, "CONTRACT VIOLATION: OK without a library, or with a message\n");
    std::abort();
  }
  if (r.verdict != ctorch::aoti::PackageCheck::OK && r.message.empty()) {
    std::fprintf(stderr, "CONTRACT VIOLATION: a refusal without a message\n");
    std::abort();
  }
  return 0;
}
