// Private to aoti.cpp: checks an AOTInductor package (.pt2) in memory before
// libtorch's AOTIModelPackageLoader reads it. That loader (checked against
// 2.15) extracts entries to a temporary directory without refusing "../" in
// their names (an entry escapes the directory), does not check CRCs (PyTorch
// builds miniz without them), compiles packages that hold only C++ sources
// with a command line read from the package, and leaves its temporary
// directory behind whenever it throws after extracting. The check refuses
// all of these first, so the loader sees only well-formed packages.
//
// Self-contained (the standard library, zlib and zip/zip_directory.cpp): the
// replay harness of tests/models and fuzz/fuzz_aoti_check.cpp compile it on
// its own.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace ctorch {
namespace aoti {

struct PackageCheck {
  enum Verdict {
    OK,
    BAD,          // not a package this loader can read: CTORCH_VALUE
    UNSUPPORTED,  // a package the loader could read, refused by ctorch: CTORCH_NOT_IMPLEMENTED
  };
  Verdict verdict = BAD;
  std::string message;              // why, when not OK
  std::string prefix;               // the archive's top folder with its '/' ("mlp/"), or ""
  std::string so_entry;             // the model's shared library
  std::vector<std::string> models;  // model names in the archive (data/aotinductor/<name>/)
};

// data/size: the whole file. model: the model name the loader is asked for
// ("model" unless the package holds several).
PackageCheck check_package(const unsigned char *data, size_t size, const std::string &model);

}  // namespace aoti
}  // namespace ctorch
