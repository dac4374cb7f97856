// onednn_resnet where ctorch is built without oneDNN (resnet.h): the module
// as it is, and the optimiser's other rewrites.
#include "infer/onednn/resnet.h"

namespace ctorch {
namespace infer {

nn::ModulePtr onednn_resnet(const nn::ModulePtr &m, std::ostream &report, bool) {
  report << "skip onednn_resnet (root): ctorch was built without oneDNN; the other rewrites apply\n";
  return m;
}

bool onednn_resnet_int8_finish(nn::Module &, std::ostream &) { return false; }

}  // namespace infer
}  // namespace ctorch
