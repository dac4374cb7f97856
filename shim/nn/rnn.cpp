// The recurrent modules: RNN, LSTM, GRU (torch.nn.RNNBase) and their cells
// RNNCell, LSTMCell, GRUCell (torch.nn.RNNCellBase), as torch.nn's
// rnn.py writes them (1.13.1 and 2.15.0 agree on everything used here).
//
// Parameters are registered in RNNBase's order (per layer, per direction:
// weight_ih, weight_hh, bias_ih, bias_hh, weight_hr), which is also
// _flat_weights' order, the list the fused kernels take; so forward passes
// `params` as it stands and never keeps a second list that load_state_dict,
// to() or set_tensor could leave stale. reset_parameters draws
// uniform(-1/sqrt(hidden), 1/sqrt(hidden)) for each parameter in that same
// order, so the draws are Python's.
#include "nn/module.h"
#include "layers_util.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/gru.h>
#include <ATen/ops/gru_cell.h>
#include <ATen/ops/lstm.h>
#include <ATen/ops/lstm_cell.h>
#include <ATen/ops/rnn_relu.h>
#include <ATen/ops/rnn_relu_cell.h>
#include <ATen/ops/rnn_tanh.h>
#include <ATen/ops/rnn_tanh_cell.h>
#include <ATen/ops/zeros.h>
#include <c10/core/GradMode.h>

#include <cmath>
#include <sstream>
#include <tuple>

namespace ctorch {
namespace nn {
namespace {

// Python's str() of the sizes a check compares (a tuple or a list of ints).
std::string sizes_str(at::IntArrayRef s, bool tuple) {
  std::ostringstream os;
  os << (tuple ? "(" : "[");
  for (size_t i = 0; i < s.size(); i++) os << (i ? ", " : "") << s[i];
  os << (tuple && s.size() == 1 ? ",)" : tuple ? ")" : "]");
  return os.str();
}

// Python's repr of a float option (extra_repr prints self.dropout, a float).
using layers::float_repr;

// reset_parameters of RNNBase and RNNCellBase: every parameter, in
// registration order, from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)).
void reset_uniform(Module &m, int64_t hidden_size) {
  at::NoGradGuard no_grad;
  double stdv = 1.0 / std::sqrt(static_cast<double>(hidden_size));
  for (auto &p : m.params)
    if (p.t.defined()) uniform_(p.t, -stdv, stdv);
}

// ---- RNN, LSTM, GRU --------------------------------------------------------

class RNNBase : public Module {
 public:
  enum Mode { RNN_TANH, RNN_RELU, LSTM, GRU };

  RNNBase(const char *kind, Mode mode, const Args &a) : Module(kind), mode_(mode) {
    input_size_ = a.i("input_size");
    hidden_size_ = a.i("hidden_size");
    num_layers_ = a.i("num_layers");
    bias_ = a.b("bias");
    batch_first_ = a.b("batch_first");
    dropout_ = a.f("dropout");
    bidirectional_ = a.b("bidirectional");
    proj_size_ = mode == LSTM ? a.i("proj_size") : 0;
    // RNNBase.__init__'s checks, with its messages.
    if (!(dropout_ >= 0 && dropout_ <= 1))
      fail_arg("dropout", "dropout should be a number in range [0, 1] representing the probability of an element "
                          "being zeroed");
    if (input_size_ <= 0) fail_arg("input_size", "input_size must be greater than zero");
    if (hidden_size_ <= 0) fail_arg("hidden_size", "hidden_size must be greater than zero");
    if (num_layers_ <= 0) fail_arg("num_layers", "num_layers must be greater than zero");
    if (proj_size_ < 0)
      fail_arg("proj_size", "proj_size should be a positive integer or zero to disable projections");
    if (proj_size_ >= hidden_size_) fail_arg("proj_size", "proj_size has to be smaller than hidden_size");
    int64_t gate_size = hidden_size_ * (mode == LSTM ? 4 : mode == GRU ? 3 : 1);
    at::TensorOptions opts = a.factory();
    int64_t real_hidden = proj_size_ > 0 ? proj_size_ : hidden_size_;
    for (int64_t layer = 0; layer < num_layers_; layer++) {
      for (int dir = 0; dir < directions(); dir++) {
        int64_t layer_input = layer == 0 ? input_size_ : real_hidden * directions();
        std::string sfx = std::to_string(layer) + (dir == 1 ? "_reverse" : "");
        register_parameter("weight_ih_l" + sfx, at::empty({gate_size, layer_input}, opts));
        register_parameter("weight_hh_l" + sfx, at::empty({gate_size, real_hidden}, opts));
        if (bias_) {
          register_parameter("bias_ih_l" + sfx, at::empty({gate_size}, opts));
          register_parameter("bias_hh_l" + sfx, at::empty({gate_size}, opts));
        }
        if (proj_size_ > 0) register_parameter("weight_hr_l" + sfx, at::empty({proj_size_, hidden_size_}, opts));
      }
    }
    reset_uniform(*this, hidden_size_);
  }
  CTORCH_NN_COPYABLE(RNNBase)

  std::vector<at::Tensor> forward(const std::vector<at::Tensor> &in, const Args &) override {
    at::Tensor input = in[0];
    at::Tensor hx = in.size() > 1 ? in[1] : at::Tensor();
    at::Tensor cx = mode_ == LSTM && in.size() > 2 ? in[2] : at::Tensor();
    if (mode_ == LSTM && hx.defined() != cx.defined())
      fail(CTORCH_INVALID_ARGUMENT, "LSTM: h_0 and c_0 must be given together (Python's hx = (h_0, c_0)) or both None");
    if (input.dim() != 2 && input.dim() != 3)
      fail(CTORCH_VALUE, std::string(mode_name()) + ": Expected input to be 2D or 3D, got " +
                             std::to_string(input.dim()) + "D" + (mode_ == LSTM || mode_ == GRU ? "" : " tensor") +
                             " instead");
    bool batched = input.dim() == 3;
    int64_t batch_dim = batch_first_ ? 0 : 1;
    if (!batched) {
      input = input.unsqueeze(batch_dim);
      if (hx.defined()) {
        if (hx.dim() != 2 || (cx.defined() && cx.dim() != 2))
          fail(CTORCH_RUNTIME, hidden_dims_message(false, hx, cx));
        hx = hx.unsqueeze(1);
        if (cx.defined()) cx = cx.unsqueeze(1);
      }
    } else if (hx.defined() && (hx.dim() != 3 || (cx.defined() && cx.dim() != 3))) {
      fail(CTORCH_RUNTIME, hidden_dims_message(true, hx, cx));
    }
    int64_t max_batch = input.size(batch_first_ ? 0 : 1);
    int64_t real_hidden = proj_size_ > 0 ? proj_size_ : hidden_size_;
    if (!hx.defined()) {
      // Python: zeros with the input's dtype and device.
      hx = at::zeros({num_layers_ * directions(), max_batch, real_hidden}, input.options());
      if (mode_ == LSTM) cx = at::zeros({num_layers_ * directions(), max_batch, hidden_size_}, input.options());
    }
    check_forward_args(input, hx, cx, max_batch);

    std::vector<at::Tensor> flat;
    flat.reserve(params.size());
    for (const auto &p : params) flat.push_back(p.t);
    at::Tensor output, h_n, c_n;
    bool train = training;
    switch (mode_) {
      case LSTM:
        std::tie(output, h_n, c_n) = at::lstm(input, {hx, cx}, flat, bias_, num_layers_, dropout_, train,
                                               bidirectional_, batch_first_);
        break;
      case GRU:
        std::tie(output, h_n) =
            at::gru(input, hx, flat, bias_, num_layers_, dropout_, train, bidirectional_, batch_first_);
        break;
      case RNN_TANH:
        std::tie(output, h_n) =
            at::rnn_tanh(input, hx, flat, bias_, num_layers_, dropout_, train, bidirectional_, batch_first_);
        break;
      case RNN_RELU:
        std::tie(output, h_n) =
            at::rnn_relu(input, hx, flat, bias_, num_layers_, dropout_, train, bidirectional_, batch_first_);
        break;
    }
    if (!batched) {
      output = output.squeeze(batch_dim);
      h_n = h_n.squeeze(1);
      if (c_n.defined()) c_n = c_n.squeeze(1);
    }
    if (mode_ == LSTM) return {output, h_n, c_n};
    return {output, h_n};
  }

  // RNNBase.extra_repr (RNN's nonlinearity is not shown, as in Python).
  std::string extra_repr() const override {
    std::string s = std::to_string(input_size_) + ", " + std::to_string(hidden_size_);
    if (proj_size_ != 0) s += ", proj_size=" + std::to_string(proj_size_);
    if (num_layers_ != 1) s += ", num_layers=" + std::to_string(num_layers_);
    if (!bias_) s += ", bias=False";
    if (batch_first_) s += ", batch_first=True";
    if (dropout_ != 0) s += ", dropout=" + float_repr(dropout_);
    if (bidirectional_) s += ", bidirectional=True";
    return s;
  }

 private:
  int directions() const { return bidirectional_ ? 2 : 1; }
  const char *mode_name() const { return mode_ == LSTM ? "LSTM" : mode_ == GRU ? "GRU" : "RNN"; }

  std::string hidden_dims_message(bool batched, const at::Tensor &hx, const at::Tensor &cx) const {
    std::string want = batched ? "3" : "2";
    std::string shape = batched ? "For batched 3-D input, " : "For unbatched 2-D input, ";
    if (mode_ == LSTM)
      return shape + "hx and cx should also be " + want + "-D but got (" + std::to_string(hx.dim()) + "-D, " +
             std::to_string(cx.dim()) + "-D) tensors";
    return shape + "hx should also be " + want + "-D but got " + std::to_string(hx.dim()) + "-D tensor";
  }

  // RNNBase.check_input / check_hidden_size (LSTM: both states).
  void check_forward_args(const at::Tensor &input, const at::Tensor &hx, const at::Tensor &cx,
                          int64_t max_batch) const {
    const at::Tensor &w0 = params[0].t;
    if (w0.defined() && input.scalar_type() != w0.scalar_type())
      fail(CTORCH_VALUE, std::string("RNN input dtype (") + c10::toString(input.scalar_type()) +
                             ") does not match weight dtype (" + c10::toString(w0.scalar_type()) + ")");
    if (input.size(-1) != input_size_)
      fail(CTORCH_RUNTIME, "input.size(-1) must be equal to input_size. Expected " + std::to_string(input_size_) +
                               ", got " + std::to_string(input.size(-1)));
    int64_t real_hidden = proj_size_ > 0 ? proj_size_ : hidden_size_;
    std::vector<int64_t> want{num_layers_ * directions(), max_batch, real_hidden};
    const char *h_msg = mode_ == LSTM ? "Expected hidden[0] size " : "Expected hidden size ";
    if (hx.sizes() != at::IntArrayRef(want))
      fail(CTORCH_RUNTIME, h_msg + sizes_str(want, true) + ", got " + sizes_str(hx.sizes(), false));
    if (mode_ == LSTM) {
      want[2] = hidden_size_;
      if (cx.sizes() != at::IntArrayRef(want))
        fail(CTORCH_RUNTIME, "Expected hidden[1] size " + sizes_str(want, true) + ", got " + sizes_str(cx.sizes(), false));
    }
  }

  Mode mode_;
  int64_t input_size_ = 0, hidden_size_ = 0, num_layers_ = 1, proj_size_ = 0;
  bool bias_ = true, batch_first_ = false, bidirectional_ = false;
  double dropout_ = 0;
};

RNNBase::Mode rnn_mode(const Args &a) {
  std::string nl = a.s("nonlinearity");
  if (nl == "tanh") return RNNBase::RNN_TANH;
  if (nl == "relu") return RNNBase::RNN_RELU;
  fail_arg("nonlinearity", "Unknown nonlinearity '" + nl + "'. Select from 'tanh' or 'relu'.");
}

// ---- the cells ---------------------------------------------------------------

class RNNCellBase : public Module {
 public:
  enum Mode { RNN_TANH, RNN_RELU, LSTM, GRU };

  RNNCellBase(const char *kind, Mode mode, const Args &a) : Module(kind), mode_(mode) {
    input_size_ = a.i("input_size");
    hidden_size_ = a.i("hidden_size");
    bias_ = a.b("bias");
    int64_t chunks = mode == LSTM ? 4 : mode == GRU ? 3 : 1;
    at::TensorOptions opts = a.factory();
    register_parameter("weight_ih", at::empty({chunks * hidden_size_, input_size_}, opts));
    register_parameter("weight_hh", at::empty({chunks * hidden_size_, hidden_size_}, opts));
    // bias=False registers None entries, as register_parameter('bias_ih', None).
    register_parameter("bias_ih", bias_ ? at::empty({chunks * hidden_size_}, opts) : at::Tensor());
    register_parameter("bias_hh", bias_ ? at::empty({chunks * hidden_size_}, opts) : at::Tensor());
    reset_uniform(*this, hidden_size_);
  }
  CTORCH_NN_COPYABLE(RNNCellBase)

  std::vector<at::Tensor> forward(const std::vector<at::Tensor> &in, const Args &) override {
    at::Tensor input = in[0];
    at::Tensor hx = in.size() > 1 ? in[1] : at::Tensor();
    at::Tensor cx = mode_ == LSTM && in.size() > 2 ? in[2] : at::Tensor();
    if (mode_ == LSTM && hx.defined() != cx.defined())
      fail(CTORCH_INVALID_ARGUMENT, "LSTMCell: h_0 and c_0 must be given together (Python's hx = (h_0, c_0)) or both None");
    std::string name = kind();
    if (input.dim() != 1 && input.dim() != 2)
      fail(CTORCH_VALUE, name + ": Expected input to be 1D or 2D, got " + std::to_string(input.dim()) + "D instead");
    for (int i = 0; i < 2; i++) {
      const at::Tensor &h = i == 0 ? hx : cx;
      if (h.defined() && h.dim() != 1 && h.dim() != 2)
        fail(CTORCH_VALUE, name + ": Expected " + (mode_ == LSTM ? "hx[" + std::to_string(i) + "]" : "hidden") +
                               " to be 1D or 2D, got " + std::to_string(h.dim()) + "D instead");
    }
    bool batched = input.dim() == 2;
    if (!batched) input = input.unsqueeze(0);
    if (!hx.defined()) {
      hx = at::zeros({input.size(0), hidden_size_}, input.options());
      if (mode_ == LSTM) cx = hx;  // Python: hx = (zeros, zeros), one tensor
    } else if (!batched) {
      hx = hx.unsqueeze(0);
      if (cx.defined()) cx = cx.unsqueeze(0);
    }
    const at::Tensor &w_ih = params[0].t, &w_hh = params[1].t, &b_ih = params[2].t, &b_hh = params[3].t;
    at::Tensor h, c;
    switch (mode_) {
      case LSTM: std::tie(h, c) = at::lstm_cell(input, {hx, cx}, w_ih, w_hh, b_ih, b_hh); break;
      case GRU: h = at::gru_cell(input, hx, w_ih, w_hh, b_ih, b_hh); break;
      case RNN_TANH: h = at::rnn_tanh_cell(input, hx, w_ih, w_hh, b_ih, b_hh); break;
      case RNN_RELU: h = at::rnn_relu_cell(input, hx, w_ih, w_hh, b_ih, b_hh); break;
    }
    if (!batched) {
      h = h.squeeze(0);
      if (c.defined()) c = c.squeeze(0);
    }
    if (mode_ == LSTM) return {h, c};
    return {h};
  }

  // RNNCellBase.extra_repr: nonlinearity only for RNNCell, unquoted.
  std::string extra_repr() const override {
    std::string s = std::to_string(input_size_) + ", " + std::to_string(hidden_size_);
    if (!bias_) s += ", bias=False";
    if (mode_ == RNN_RELU) s += ", nonlinearity=relu";
    return s;
  }

 private:
  Mode mode_;
  int64_t input_size_ = 0, hidden_size_ = 0;
  bool bias_ = true;
};

RNNCellBase::Mode cell_mode(const Args &a) {
  std::string nl = a.s("nonlinearity");
  if (nl == "tanh") return RNNCellBase::RNN_TANH;
  if (nl == "relu") return RNNCellBase::RNN_RELU;
  // Python accepts any string here and fails at forward ("Unknown
  // nonlinearity"); refusing it at construction is the earlier, clearer error.
  fail_arg("nonlinearity", "Unknown nonlinearity: " + nl);
}

CTORCH_NN_KIND("RNN",
               "input_size: int, hidden_size: int, num_layers: int = 1, nonlinearity: str = 'tanh', bias: bool = True, "
               "batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, device: Device? = None, "
               "dtype: ScalarType? = None",
               "input: Tensor, hx: Tensor? = None -> output: Tensor, h_n: Tensor",
               [](const Args &a) { return std::make_shared<RNNBase>("RNN", rnn_mode(a), a); });
CTORCH_NN_KIND("LSTM",
               "input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True, batch_first: bool = False, "
               "dropout: float = 0.0, bidirectional: bool = False, proj_size: int = 0, device: Device? = None, "
               "dtype: ScalarType? = None",
               "input: Tensor, h_0: Tensor? = None, c_0: Tensor? = None -> output: Tensor, h_n: Tensor, c_n: Tensor",
               [](const Args &a) { return std::make_shared<RNNBase>("LSTM", RNNBase::LSTM, a); });
CTORCH_NN_KIND("GRU",
               "input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True, batch_first: bool = False, "
               "dropout: float = 0.0, bidirectional: bool = False, device: Device? = None, dtype: ScalarType? = None",
               "input: Tensor, hx: Tensor? = None -> output: Tensor, h_n: Tensor",
               [](const Args &a) { return std::make_shared<RNNBase>("GRU", RNNBase::GRU, a); });
CTORCH_NN_KIND("RNNCell",
               "input_size: int, hidden_size: int, bias: bool = True, nonlinearity: str = 'tanh', "
               "device: Device? = None, dtype: ScalarType? = None",
               "input: Tensor, hx: Tensor? = None -> h_1: Tensor",
               [](const Args &a) { return std::make_shared<RNNCellBase>("RNNCell", cell_mode(a), a); });
CTORCH_NN_KIND("LSTMCell",
               "input_size: int, hidden_size: int, bias: bool = True, device: Device? = None, dtype: ScalarType? = None",
               "input: Tensor, h_0: Tensor? = None, c_0: Tensor? = None -> h_1: Tensor, c_1: Tensor",
               [](const Args &a) { return std::make_shared<RNNCellBase>("LSTMCell", RNNCellBase::LSTM, a); });
CTORCH_NN_KIND("GRUCell",
               "input_size: int, hidden_size: int, bias: bool = True, device: Device? = None, dtype: ScalarType? = None",
               "input: Tensor, hx: Tensor? = None -> h_1: Tensor",
               [](const Args &a) { return std::make_shared<RNNCellBase>("GRUCell", RNNCellBase::GRU, a); });

}  // namespace
}  // namespace nn
}  // namespace ctorch
