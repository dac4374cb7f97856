// Harness: bytes as a module's constructor text (ctorch_nn_new). The first
// byte chooses the kind (of every built-in kind, in kKinds' order); the rest
// is the argument text, as a user or a binding writes it ("10, 20,
// num_layers=2, bidirectional=True", "torch.nn.TransformerEncoderLayer(8,
// 2), 3"). Properties beyond fuzz_util.h's status contract:
//   - a module that builds holds at most the bound set here
//     (ctorch_nn_set_max_parameters, 2^20 elements) in its state dict: the
//     size rules of shim/nn/bounds.cpp cover every kind and argument, so no
//     text allocates past it (or loops: an input over 60 s is a hang);
//   - a failure leaves *out NULL;
//   - a built module's repr, parameter count and state dict can be read.
#include "fuzz_util.h"

#include <string>

namespace {

// The built-in kinds (ctorch_nn_catalogue's names). A kind added later is
// reached once it is listed here; the order only maps bytes to kinds.
const char *const kKinds[] = {
    "Linear", "Identity", "Flatten", "ReLU", "Sequential", "ModuleList", "ModuleDict", "PReLU", "LeakyReLU", "GELU",
    "SiLU", "ELU", "Hardswish", "Mish", "Tanh", "Sigmoid", "Softmax", "LogSoftmax", "Conv1d", "Conv2d", "Conv3d",
    "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d", "Bilinear", "Unflatten", "PixelShuffle", "Dropout",
    "Dropout2d", "Embedding", "EmbeddingBag", "Upsample", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d",
    "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "LayerNorm", "GroupNorm", "MaxPool1d", "MaxPool2d",
    "MaxPool3d", "AvgPool1d", "AvgPool2d", "AvgPool3d", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d",
    "AdaptiveAvgPool3d", "AdaptiveMaxPool2d", "RNN", "LSTM", "GRU", "RNNCell", "LSTMCell", "GRUCell",
    "MultiheadAttention", "TransformerEncoderLayer", "TransformerDecoderLayer", "TransformerEncoder",
    "TransformerDecoder", "Transformer"};
constexpr size_t kNumKinds = sizeof kKinds / sizeof kKinds[0];
constexpr uint64_t kBound = uint64_t{1} << 20;

void inspect(ctorch_nn_module m) {
  char *repr = nullptr;
  if (FZ(ctorch_nn_module_repr(&repr, m)) == CTORCH_OK) std::free(repr);
  int64_t np = 0;
  FZ(ctorch_nn_module_num_parameters(&np, m, 0));
  ctorch_tensor_dict d = nullptr;
  if (FZ(ctorch_nn_module_state_dict(&d, m)) != CTORCH_OK) return;
  size_t n = 0;
  uint64_t total = 0;
  FZ(ctorch_tensor_dict_size(&n, d));
  for (size_t i = 0; i < n; ++i) {
    ctorch_tensor t = nullptr;
    int64_t k = 0;
    if (FZ(ctorch_tensor_dict_get(&t, d, i)) != CTORCH_OK) continue;
    FZ(ctorch_tensor_numel(&k, t));
    total += (uint64_t)k;
    ctorch_tensor_free(t);
  }
  ctorch_tensor_dict_free(d);
  if (total > kBound) fz::violation("a module over the size bound was built", "ctorch_nn_new", CTORCH_OK);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fz::init_once();
  static bool bounded = [] { return ctorch_nn_set_max_parameters(nullptr, kBound) == CTORCH_OK; }();
  if (!bounded) fz::violation("the bound could not be set", "ctorch_nn_set_max_parameters", CTORCH_UNKNOWN);
  if (size == 0) return 0;
  const char *kind = kKinds[data[0] % kNumKinds];
  std::string args(reinterpret_cast<const char *>(data) + 1, size - 1);  // a NUL inside ends the text early
  ctorch_nn_module m = nullptr;
  if (FZ(ctorch_nn_new(&m, kind, args.c_str())) != CTORCH_OK) {
    if (m) fz::violation("failure left a module", "ctorch_nn_new", CTORCH_UNKNOWN);
    return 0;
  }
  if (!m) fz::violation("OK without a module", "ctorch_nn_new", CTORCH_OK);
  inspect(m);
  ctorch_nn_module_free(m);
  return 0;
}
