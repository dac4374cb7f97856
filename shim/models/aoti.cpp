// AOTInductor packages: .pt2 files made by torch._inductor.aoti_compile_and_package,
// loaded with libtorch's torch::inductor::AOTIModelPackageLoader (2.6+) and
// run with tensor arrays. The entry points (argument checks, statuses,
// ownership) are the same on every libtorch; the loader half below exists
// only where compat.h says the loader does, and elsewhere every call answers
// CTORCH_NOT_IMPLEMENTED.
//
// A package is code: its model is a shared library that the loader dlopens.
// Before the loader sees a file, aoti_check.h refuses what libtorch's loader
// mishandles (entries escaping its temporary directory, corrupt contents it
// does not CRC-check, source-only packages it would compile with a command
// from the package); a package that passes is still trusted code.
#include "aoti_check.h"
#include "files/files.h"
#include "core/internal.h"
#include "serialize/serialize.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>
#include <set>

#if CTORCH_COMPAT_HAS_AOTI_PACKAGE_LOADER
#include <torch/csrc/inductor/aoti_package/model_package_loader.h>
#endif

// The loader, held by the exported ctorch_aoti_package_s: in a named
// namespace, since a member whose type is in an anonymous one would make
// the struct a different type in every translation unit
// (-Wsubobject-linkage).
namespace ctorch {
namespace aoti {
#if CTORCH_COMPAT_HAS_AOTI_PACKAGE_LOADER
struct Loaded {
  Loaded(const std::string &path, const std::string &model) : loader(path, model) {}
  torch::inductor::AOTIModelPackageLoader loader;
};
#else
struct Loaded {};
#endif
}  // namespace aoti
}  // namespace ctorch

namespace {

using ctorch::aoti::Loaded;

#if CTORCH_COMPAT_HAS_AOTI_PACKAGE_LOADER

constexpr bool kAvailable = true;
Loaded *open_loader(const std::string &path, const std::string &model) { return new Loaded(path, model); }
std::vector<std::pair<std::string, std::string>> loader_metadata(Loaded &l) {
  auto m = l.loader.get_metadata();
  std::vector<std::pair<std::string, std::string>> v(m.begin(), m.end());
  std::sort(v.begin(), v.end());
  return v;
}
std::vector<std::string> loader_call_spec(Loaded &l) { return l.loader.get_call_spec(); }
std::vector<at::Tensor> loader_run(Loaded &l, const std::vector<at::Tensor> &inputs) { return l.loader.run(inputs); }

#else

constexpr bool kAvailable = false;
[[noreturn]] void no_loader() { ctorch::fail(CTORCH_NOT_IMPLEMENTED, "no AOTInductor loader in this libtorch"); }
Loaded *open_loader(const std::string &, const std::string &) { no_loader(); }
std::vector<std::pair<std::string, std::string>> loader_metadata(Loaded &) { no_loader(); }
std::vector<std::string> loader_call_spec(Loaded &) { no_loader(); }
std::vector<at::Tensor> loader_run(Loaded &, const std::vector<at::Tensor> &) { no_loader(); }

#endif

}  // namespace

struct ctorch_aoti_package_s {
  std::unique_ptr<ctorch::aoti::Loaded> loaded;
  std::vector<std::pair<std::string, std::string>> metadata;  // sorted by key
  std::string in_spec, out_spec;
  ctorch::Live<ctorch_aoti_package_s> live{this};  // last: see core/internal.h
};

namespace {

[[noreturn]] void not_available() {
  ctorch::fail(CTORCH_NOT_IMPLEMENTED, "AOTInductor packages need libtorch 2.6 or newer; this ctorch is built against "
                                       "libtorch " +
                                           std::to_string(TORCH_VERSION_MAJOR) + "." +
                                           std::to_string(TORCH_VERSION_MINOR) + "." +
                                           std::to_string(TORCH_VERSION_PATCH));
}

ctorch_aoti_package_s &pkg(ctorch_aoti_package p) {
  if (!kAvailable) not_available();
  ctorch::check_handle(p, "package");
  return *p;
}

// The file, read-only, for the check.
class Mapped {
 public:
  explicit Mapped(const char *path) {
    ctorch::ReadFile f(path);  // a regular file only, opened without blocking
    size_ = static_cast<size_t>(f.size());
    int fd = f.release();
    if (size_ > 0) {
      void *p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
      if (p == MAP_FAILED) {
        ::close(fd);
        ctorch::fail(CTORCH_IO, std::string("cannot map '") + path + "': " + std::strerror(errno));
      }
      data_ = static_cast<const unsigned char *>(p);
    }
    ::close(fd);
  }
  ~Mapped() {
    if (data_) ::munmap(const_cast<unsigned char *>(data_), size_);
  }
  Mapped(const Mapped &) = delete;
  Mapped &operator=(const Mapped &) = delete;
  const unsigned char *data() const { return data_ ? data_ : reinterpret_cast<const unsigned char *>(""); }
  size_t size() const { return size_; }

 private:
  const unsigned char *data_ = nullptr;
  size_t size_ = 0;
};

// The loader extracts into <temp>/aotinductor_XXXXXX and removes it in its
// destructor, which does not run when its constructor throws: that
// directory is found (new since the load began, holding this package's
// library) and removed here.
std::set<std::string> loader_temp_dirs() {
  std::set<std::string> dirs;
  std::error_code ec;
  std::filesystem::path root = std::filesystem::temp_directory_path(ec);
  if (ec) return dirs;
  for (std::filesystem::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec))
    if (it->path().filename().string().rfind("aotinductor_", 0) == 0) dirs.insert(it->path().string());
  return dirs;
}

void remove_left_behind(const std::set<std::string> &before, const std::string &so_entry) {
  for (const std::string &d : loader_temp_dirs()) {
    std::error_code ec;
    if (!before.count(d) && std::filesystem::exists(std::filesystem::path(d) / so_entry, ec))
      std::filesystem::remove_all(d, ec);
  }
}

// Loads are serialised: the snapshot above must see only this load's
// directory appear, and the loader parses metadata through a static JSON
// object (libtorch 2.6-2.9 at least).
std::mutex load_mu;

}  // namespace

extern "C" {

CTORCH_API ctorch_status ctorch_aoti_available(int *out) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = kAvailable ? 1 : 0;
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_aoti_package_load(ctorch_aoti_package *out, const char *path, const char *model_name) {
  CTORCH_TRY
  if (out) *out = nullptr;
  if (!kAvailable) not_available();
  ctorch::require_out(out, "out");
  ctorch::require_ptr(path, "path");
  const std::string model = model_name ? model_name : "model";
  ctorch::require_regular_file(path);
  const std::string bad = std::string("'") + path + "' is not a loadable AOTInductor package: ";
  ctorch::aoti::PackageCheck check;
  {
    Mapped file(path);
    check = ctorch::aoti::check_package(file.data(), file.size(), model);
  }
  if (check.verdict == ctorch::aoti::PackageCheck::UNSUPPORTED)
    ctorch::fail(CTORCH_NOT_IMPLEMENTED, std::string("'") + path + "': " + check.message);
  if (check.verdict != ctorch::aoti::PackageCheck::OK) ctorch::fail(CTORCH_VALUE, bad + check.message);

  auto p = std::make_unique<ctorch_aoti_package_s>();
  {
    std::lock_guard<std::mutex> g(load_mu);
    // AOTInductor checks a run's inputs (dtype, sizes, strides, device)
    // against the export only when this is set; unchecked, a wrong input
    // makes the model read out of bounds. Each model reads it once.
    ::setenv("AOTI_RUNTIME_CHECK_INPUTS", "1", /*overwrite=*/0);
    std::set<std::string> before = loader_temp_dirs();
    try {
      p->loaded.reset(open_loader(path, model));
    } catch (const std::exception &e) {
      remove_left_behind(before, check.so_entry);
      const c10::Error *ce = dynamic_cast<const c10::Error *>(&e);
      ctorch::fail(CTORCH_VALUE, bad + (ce ? ce->what_without_backtrace() : e.what()));
    }
  }
  p->metadata = loader_metadata(*p->loaded);
  std::vector<std::string> spec = loader_call_spec(*p->loaded);
  if (spec.size() == 2) p->in_spec = spec[0], p->out_spec = spec[1];
  *out = p.release();
  CTORCH_CATCH
}

CTORCH_API void ctorch_aoti_package_free(ctorch_aoti_package package) {
  if (ctorch::release_handle(package, __func__)) delete package;
}

CTORCH_API ctorch_status ctorch_aoti_package_run(ctorch_tensor_list *out, ctorch_aoti_package package,
                                                 const ctorch_tensor *inputs, size_t n_inputs) {
  CTORCH_TRY
  if (out) *out = nullptr;
  auto &p = pkg(package);
  ctorch::require_out(out, "out");
  std::vector<at::Tensor> in = ctorch::tensor_list(inputs, n_inputs, "inputs");
  std::vector<at::Tensor> res;
  try {
    res = loader_run(*p.loaded, in);
  } catch (const std::exception &e) {
    const c10::Error *ce = dynamic_cast<const c10::Error *>(&e);
    ctorch::fail(CTORCH_RUNTIME,
                 std::string("the model did not run (wrong number, dtype, shape, stride or device of inputs, or a "
                             "failure inside it; AOTInductor prints its reason on stderr): ") +
                     (ce ? ce->what_without_backtrace() : e.what()));
  }
  *out = ctorch::give_list(std::move(res));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_aoti_package_metadata_size(size_t *out, ctorch_aoti_package package) {
  CTORCH_TRY
  auto &p = pkg(package);
  ctorch::require_out(out, "out");
  *out = p.metadata.size();
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_aoti_package_metadata_entry(const char **key, const char **value,
                                                            ctorch_aoti_package package, size_t i) {
  CTORCH_TRY
  if (key) *key = nullptr;
  if (value) *value = nullptr;
  auto &p = pkg(package);
  ctorch::require_out(key, "key");
  ctorch::require_out(value, "value");
  if (i >= p.metadata.size())
    ctorch::fail(CTORCH_INDEX, "argument 'i': index " + std::to_string(i) + " out of range for " +
                                   std::to_string(p.metadata.size()) + " metadata entries");
  *key = p.metadata[i].first.c_str();
  *value = p.metadata[i].second.c_str();
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_aoti_package_metadata_find(const char **value, ctorch_aoti_package package,
                                                           const char *key) {
  CTORCH_TRY
  if (value) *value = nullptr;
  auto &p = pkg(package);
  ctorch::require_out(value, "value");
  ctorch::require_ptr(key, "key");
  for (const auto &kv : p.metadata)
    if (kv.first == key) {
      *value = kv.second.c_str();
      return CTORCH_OK;
    }
  ctorch::fail(CTORCH_INDEX, std::string("argument 'key': the package has no metadata '") + key + "'");
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_aoti_package_call_spec(const char **in_spec, const char **out_spec,
                                                       ctorch_aoti_package package) {
  CTORCH_TRY
  if (in_spec) *in_spec = nullptr;
  if (out_spec) *out_spec = nullptr;
  auto &p = pkg(package);
  ctorch::require_out(in_spec, "in_spec");
  ctorch::require_out(out_spec, "out_spec");
  *in_spec = p.in_spec.c_str();
  *out_spec = p.out_spec.c_str();
  CTORCH_CATCH
}

}  // extern "C"
