// Preloaded (LD_PRELOAD) by load_check.sh: libtorch's build settings as a
// libtorch of another release reports them, so that a libctorch beside its
// own libtorch sees "another" one. libctorch reads TORCH_VERSION through
// caffe2::GetBuildOptions(); the preloaded definition comes first in symbol
// lookup. The version is $CTORCH_TEST_LOADED_TORCH.
#include <cstdlib>
#include <map>
#include <string>

namespace caffe2 {
__attribute__((visibility("default"))) const std::map<std::string, std::string> &GetBuildOptions() {
  static const std::map<std::string, std::string> opts{
      {"TORCH_VERSION", std::getenv("CTORCH_TEST_LOADED_TORCH") ? std::getenv("CTORCH_TEST_LOADED_TORCH") : "0.0.0"}};
  return opts;
}
}  // namespace caffe2
