// Modules the host language defines (ctorch_nn_custom_new): a type name,
// a forward callback and user data. Everything else (registration, state
// dicts, repr, clone) is the base class's, so a binding's class tree gets
// Python's names.
#include "nn/nn_internal.h"

#include <ATen/core/Tensor.h>

namespace ctorch {
namespace nn {
namespace {

// The user data, shared by a module and its clones: free_user_data runs
// once, when the last of them goes.
struct UserData {
  void *data = nullptr;
  void (*free_fn)(void *) = nullptr;
  ~UserData() {
    if (free_fn) free_fn(data);
  }
};

// Enough room for any structured output a binding flattens (LSTM-like
// modules return 3); a callback needing more fails with the count.
constexpr size_t kMaxOutputs = 64;

class Custom : public Module, public TextForward {
 public:
  Custom(std::string type, ctorch_nn_forward_fn fn, std::shared_ptr<UserData> ud)
      : Module(std::move(type)), fn_(fn), ud_(std::move(ud)) {}

  std::vector<at::Tensor> forward(const std::vector<at::Tensor> &in, const Args &) override {
    return forward_text(in, "");
  }

  std::vector<at::Tensor> forward_text(const std::vector<at::Tensor> &in, const std::string &kwargs) override {
    if (!fn_) fail(CTORCH_NOT_IMPLEMENTED, "custom module '" + kind() + "' has no forward (made with forward NULL)");
    // Borrowed handles: the callback reads them while `in` keeps them alive.
    std::vector<ctorch_tensor> handles;
    handles.reserve(in.size());
    ctorch::Lent lend;  // registered as live tensor handles during the call
    for (const auto &t : in) handles.push_back(lend(t));
    ctorch_nn_module_s self{shared_from_this()};
    ctorch_tensor outs[kMaxOutputs] = {};
    size_t n = 0;
    std::string before = ctorch_last_error();
    ctorch_status st = fn_(ud_->data, &self, handles.data(), handles.size(), kwargs.c_str(), outs, kMaxOutputs, &n);
    // Take ownership of what was written, whatever the status, so nothing leaks.
    std::vector<at::Tensor> res;
    size_t got = n < kMaxOutputs ? n : kMaxOutputs;
    for (size_t k = 0; k < got; ++k)
      res.push_back(outs[k] ? take(outs[k]) : at::Tensor());
    if (st != CTORCH_OK) {
      std::string msg = "custom module '" + kind() + "': forward returned " + ctorch_status_name(st);
      std::string after = ctorch_last_error();
      if (after != before) msg += ": " + after;
      fail(st, msg);
    }
    if (n > kMaxOutputs)
      fail(CTORCH_INVALID_ARGUMENT, "custom module '" + kind() + "': forward reported " + std::to_string(n) +
                                        " outputs, room for " + std::to_string(kMaxOutputs));
    return res;
  }
  CTORCH_NN_COPYABLE(Custom)

 private:
  ctorch_nn_forward_fn fn_;
  std::shared_ptr<UserData> ud_;
};

}  // namespace
}  // namespace nn
}  // namespace ctorch

extern "C" {

CTORCH_API ctorch_status ctorch_nn_custom_new(ctorch_nn_module *out, const char *type_name,
                                              ctorch_nn_forward_fn forward, void *user_data,
                                              void (*free_user_data)(void *)) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  ctorch::require_ptr(type_name, "type_name");
  if (!*type_name) ctorch::fail_arg("type_name", "may not be empty");
  auto ud = std::make_shared<ctorch::nn::UserData>();
  ud->data = user_data;
  auto h = std::make_unique<ctorch_nn_module_s>(ctorch_nn_module_s{std::make_shared<ctorch::nn::Custom>(type_name, forward, ud)});
  // Only now does the module own user_data: a failure above leaves it the caller's.
  ud->free_fn = free_user_data;
  *out = h.release();
  CTORCH_CATCH
}

}  // extern "C"
