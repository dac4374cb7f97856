// The C API's identity at run time: the ABI hash api.json also carries
// (computed by bindings-gen/generate_api.py into the generated ctorch_abi.h),
// and the check that the libtorch loaded beside libctorch is the release it
// was compiled against.
#include "api_identity.h"

#include "internal.h"

#include "ctorch_abi.h"

#include <torch/csrc/api/include/torch/version.h>

#include <dlfcn.h>

#include <cstdio>
#include <map>
#include <string>

namespace caffe2 {
// libtorch's build settings, what torch.__config__.show() prints as "Build
// settings" (TORCH_VERSION among them): a static map, exported by
// libtorch_cpu in 1.13 and 2.x, declared in no header they install. Read
// instead of at::show_config(), which asks the CUDA runtime for devices.
// Weak: a libtorch without it loads, unchecked.
__attribute__((weak, visibility("default"))) const std::map<std::string, std::string> &GetBuildOptions();
}  // namespace caffe2

namespace {

// "X.Y" of a version string "X.Y.Z[...]"; the string itself if it has no second dot.
std::string torch_release_of(const std::string &v) {
  const auto dot = v.find('.');
  const auto dot2 = dot == std::string::npos ? dot : v.find('.', dot + 1);
  return dot2 == std::string::npos ? v : v.substr(0, dot2);
}

// The message when the loaded libtorch is another release, else "". Built
// once when libctorch loads (libtorch, a dependency, is initialised first).
// Patch releases of one X.Y share its C++ ABI: the wheel requires torch==X.Y.*,
// and the SONAME names X.Y.
std::string torch_mismatch_message() {
  if (!&caffe2::GetBuildOptions) return "";
  const auto &opts = caffe2::GetBuildOptions();
  const auto it = opts.find("TORCH_VERSION");
  if (it == opts.end() || it->second.empty()) return "";
  const std::string loaded = it->second;
  if (torch_release_of(loaded) == torch_release_of(TORCH_VERSION)) return "";
  std::string where;
  Dl_info info{};
  if (dladdr(reinterpret_cast<void *>(&caffe2::GetBuildOptions), &info) && info.dli_fname)
    where = std::string(" (") + info.dli_fname + ")";
  return std::string("libctorch was built for libtorch " TORCH_VERSION ", but the libtorch loaded in this process is ") +
         loaded + where + ": load libtorch " TORCH_VERSION " (LD_LIBRARY_PATH, or the torch it was built with), "
         "or build ctorch against libtorch " + loaded;
}

const std::string &torch_mismatch() {
  static const std::string m = torch_mismatch_message();
  return m;
}

// At load, so that a C program that never asks sees why it may fail; the
// queries above refuse with the same text.
__attribute__((constructor)) void report_mismatch_at_load() {
  if (!torch_mismatch().empty()) std::fprintf(stderr, "ctorch: %s\n", torch_mismatch().c_str());
}

}  // namespace

void ctorch::require_matching_torch() {
  if (C10_UNLIKELY(!torch_mismatch().empty())) ctorch::fail(CTORCH_RUNTIME, torch_mismatch());
}

extern "C" {

CTORCH_API ctorch_status ctorch_abi_hash(const char **out) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  ctorch::require_matching_torch();
  *out = CTORCH_ABI_HASH;
  CTORCH_CATCH
}

}  // extern "C"
