// The other built-in layers: Bilinear, Unflatten, Dropout, Dropout2d,
// Embedding, EmbeddingBag, Upsample and PixelShuffle, each as its class in
// torch/nn/modules/*.py, with the argument handling torch.nn.functional
// does in Python before it reaches the at:: op (F.embedding's padding_idx
// and max_norm renorm, F.embedding_bag's 2-D input and mode, F.interpolate's
// output size and kernel choice) written out here, since libtorch has no
// C++ twin of those Python lines.
#include "module.h"
#include "layers_util.h"

#include <ATen/core/grad_mode.h>
#include <ATen/ops/_upsample_nearest_exact1d.h>
#include <ATen/ops/_upsample_nearest_exact2d.h>
#include <ATen/ops/_upsample_nearest_exact3d.h>
#include <ATen/ops/adaptive_avg_pool1d.h>
#include <ATen/ops/adaptive_avg_pool2d.h>
#include <ATen/ops/adaptive_avg_pool3d.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/bilinear.h>
#include <ATen/ops/dropout.h>
#include <ATen/ops/embedding.h>
#include <ATen/ops/embedding_bag.h>
#include <ATen/ops/embedding_renorm.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/feature_dropout.h>
#include <ATen/ops/pixel_shuffle.h>
#include <ATen/ops/upsample_bicubic2d.h>
#include <ATen/ops/upsample_bilinear2d.h>
#include <ATen/ops/upsample_linear1d.h>
#include <ATen/ops/upsample_nearest1d.h>
#include <ATen/ops/upsample_nearest2d.h>
#include <ATen/ops/upsample_nearest3d.h>
#include <ATen/ops/upsample_trilinear3d.h>

#include <cmath>

namespace ctorch {
namespace nn {
namespace {

using layers::float_repr;
using layers::given_repr;
using layers::opt;
using layers::py_bool;
using layers::value_error;

class Bilinear : public Module {
 public:
  explicit Bilinear(const Args &a) : Module("Bilinear") {
    int64_t in1 = a.i("in1_features"), in2 = a.i("in2_features"), out = a.i("out_features");
    if (in1 <= 0) fail_arg("in1_features", "in1_features must be > 0, but got (in1_features=" + std::to_string(in1) + ")");
    at::TensorOptions o = a.factory();
    register_parameter("weight", at::empty({out, in1, in2}, o));
    register_parameter("bias", a.b("bias") ? at::empty({out}, o) : at::Tensor());
    // reset_parameters: weight then bias from U(-1/sqrt(in1), 1/sqrt(in1)).
    double bound = 1.0 / std::sqrt(static_cast<double>(in1));
    at::NoGradGuard ng;
    uniform_(params[0].t, -bound, bound);
    if (params[1].t.defined()) uniform_(params[1].t, -bound, bound);
    repr_ = "in1_features=" + std::to_string(in1) + ", in2_features=" + std::to_string(in2) +
            ", out_features=" + std::to_string(out) + ", bias=" + py_bool(params[1].t.defined());
  }
  std::vector<at::Tensor> forward(const std::vector<at::Tensor> &in, const Args &) override {
    return {at::bilinear(in[0], in[1], params[0].t, opt(params[1].t))};
  }
  std::string extra_repr() const override { return repr_; }
  CTORCH_NN_COPYABLE(Bilinear)

 private:
  std::string repr_;
};

// A parameterless module: Unflatten, PixelShuffle, Dropout, Dropout2d.
class Stateless : public Module {
 public:
  using Fn = std::function<at::Tensor(const at::Tensor &, bool training)>;
  Stateless(const char *kind, Fn fn, std::string repr) : Module(kind), fn_(std::move(fn)), repr_(std::move(repr)) {}
  std::vector<at::Tensor> forward(const std::vector<at::Tensor> &in, const Args &) override {
    return {fn_(in[0], training)};
  }
  std::string extra_repr() const override { return repr_; }
  CTORCH_NN_COPYABLE(Stateless)

 private:
  Fn fn_;
  std::string repr_;
};

// Dropout (_VF.dropout) and Dropout2d (_VF.feature_dropout; Python warns on
// inputs that are not 3-D or 4-D and still runs it).
ModulePtr dropout(const char *kind, const Args &a, bool feature) {
  double p = a.f("p");
  if (p < 0.0 || p > 1.0)
    fail_arg("p", "dropout probability has to be between 0 and 1, but got " + given_repr(a, "p"));
  bool inplace = a.b("inplace");
  Stateless::Fn fn = [p, inplace, feature](const at::Tensor &x, bool training) {
    if (!inplace) return feature ? at::feature_dropout(x, p, training) : at::dropout(x, p, training);
    at::Tensor y = x;
    return feature ? at::feature_dropout_(y, p, training) : at::dropout_(y, p, training);
  };
  return std::make_shared<Stateless>(kind, fn, "p=" + given_repr(a, "p") + ", inplace=" + py_bool(inplace));
}

// padding_idx as Embedding/EmbeddingBag keep it: negative counts from the end.
c10::optional<int64_t> padding_idx(const Args &a, int64_t num, const char *msg) {
  if (a.is_none("padding_idx")) return c10::nullopt;
  int64_t p = a.i("padding_idx");
  if (p >= num || p < -num) fail_arg("padding_idx", msg);
  return p < 0 ? num + p : p;
}

// Embedding and EmbeddingBag share their weight, its init and max_norm.
class EmbeddingBase : public Module {
 public:
  EmbeddingBase(const char *kind, const Args &a, const char *padding_msg) : Module(kind) {
    num_ = a.i("num_embeddings");
    dim_ = a.i("embedding_dim");
    padding_idx_ = padding_idx(a, num_, padding_msg);
    if (!a.is_none("max_norm")) max_norm_ = a.f("max_norm");
    norm_type_ = a.f("norm_type");
    scale_grad_ = a.b("scale_grad_by_freq");
    sparse_ = a.b("sparse");
    register_parameter("weight", at::empty({num_, dim_}, a.factory()));
    // reset_parameters: init.normal_(weight), then the padding row zeroed.
    at::NoGradGuard ng;
    params[0].t.normal_();
    if (padding_idx_) params[0].t[*padding_idx_].fill_(0);
  }

 protected:
  // F._no_grad_embedding_renorm_: rescales, in place and unrecorded, the
  // rows `input` reads whose norm exceeds max_norm.
  void renorm(const at::Tensor &input) {
    if (!max_norm_) return;
    at::NoGradGuard ng;
    at::Tensor w = params[0].t.detach();
    at::embedding_renorm_(w, input, *max_norm_, norm_type_);
  }
  // "{num}, {dim}", and the options that differ from their defaults in the
  // order both classes print them (padding_idx and mode go between).
  std::string head_repr() const { return std::to_string(num_) + ", " + std::to_string(dim_); }
  std::string options_repr(const Args &a) const {
    std::string s;
    if (max_norm_) s += ", max_norm=" + given_repr(a, "max_norm");
    if (norm_type_ != 2) s += ", norm_type=" + given_repr(a, "norm_type");
    if (scale_grad_) s += ", scale_grad_by_freq=True";
    return s;
  }

  int64_t num_, dim_;
  c10::optional<int64_t> padding_idx_;
  c10::optional<double> max_norm_;
  double norm_type_;
  bool scale_grad_, sparse_;
};

class Embedding : public EmbeddingBase {
 public:
  explicit Embedding(const Args &a) : EmbeddingBase("Embedding", a, "Padding_idx must be within num_embeddings") {
    if (a.b("_freeze")) params[0].t.requires_grad_(false);
    // Embedding prints padding_idx before max_norm, EmbeddingBag after mode.
    repr_ = head_repr();
    if (padding_idx_) repr_ += ", padding_idx=" + std::to_string(*padding_idx_);
    repr_ += options_repr(a);
    if (sparse_) repr_ += ", sparse=True";
  }
  std::vector<at::Tensor> forward(const std::vector<at::Tensor> &in, const Args &) override {
    at::Tensor x = in[0];
    if (max_norm_) {
      x = x.contiguous();
      renorm(x);
    }
    return {at::embedding(params[0].t, x, padding_idx_.value_or(-1), scale_grad_, sparse_)};
  }
  std::string extra_repr() const override { return repr_; }
  CTORCH_NN_COPYABLE(Embedding)

 private:
  std::string repr_;
};

class EmbeddingBag : public EmbeddingBase {
 public:
  explicit EmbeddingBag(const Args &a) : EmbeddingBase("EmbeddingBag", a, "padding_idx must be within num_embeddings") {
    mode_ = a.s("mode");
    if (mode_ != "sum" && mode_ != "mean" && mode_ != "max")
      fail_arg("mode", "mode has to be one of sum, mean or max");
    if (mode_ == "max" && scale_grad_)
      fail_arg("scale_grad_by_freq", "max mode does not support scaling the gradient by the frequency");
    if (mode_ == "max" && sparse_) fail_arg("sparse", "max mode does not support sparse weights");
    include_last_offset_ = a.b("include_last_offset");
    repr_ = head_repr() + options_repr(a) + ", mode=" + (CTORCH_NN_REPR_QUOTES_MODE ? given_repr(a, "mode") : mode_);
    if (padding_idx_) repr_ += ", padding_idx=" + std::to_string(*padding_idx_);
  }

  // F.embedding_bag
  std::vector<at::Tensor> forward(const std::vector<at::Tensor> &in, const Args &) override {
    at::Tensor input = in[0], offsets = in[1], psw = in[2];
    bool last = include_last_offset_;
    if (psw.defined() && input.sizes() != psw.sizes())
      value_error("embedding_bag: If per_sample_weights (" + shape(psw) +
                  ") is not None, then it must have the same shape as the input (" + shape(input) + ")");
    if (input.dim() == 2) {
      if (offsets.defined())
        value_error("if input is 2D, then offsets has to be None, as input is treated is a mini-batch of fixed "
                    "length sequences. However, found offsets of type <class 'torch.Tensor'>");
      // Each row is a bag: offsets 0, n, 2n, ...
      offsets = at::arange(0, input.numel(), input.size(1), input.options());
#if CTORCH_TORCH_AT_LEAST(2, 15)
      last = false;  // 2.15.0's F.embedding_bag ignores include_last_offset for 2-D input; 1.13.1's does not
#endif
      input = input.reshape(-1);
      if (psw.defined()) psw = psw.reshape(-1);
    } else if (input.dim() == 1) {
      if (!offsets.defined()) value_error("offsets has to be a 1D Tensor but got None");
      if (offsets.dim() != 1) value_error("offsets has to be a 1D Tensor");
    } else {
      value_error("input has to be 1D or 2D Tensor, but got Tensor of dimension " + std::to_string(input.dim()));
    }
    renorm(input);
    if (psw.defined() && mode_ != "sum")
      fail(CTORCH_NOT_IMPLEMENTED,
           "embedding_bag: per_sample_weights was not None. per_sample_weights is only supported for mode='sum' "
           "(got mode='" + mode_ + "'). Please open a feature request on GitHub.");
    int64_t mode = mode_ == "sum" ? 0 : mode_ == "mean" ? 1 : 2;
    return {std::get<0>(at::embedding_bag(params[0].t, input, offsets, scale_grad_, mode, sparse_, opt(psw), last,
                                          padding_idx_))};
  }
  std::string extra_repr() const override { return repr_; }
  CTORCH_NN_COPYABLE(EmbeddingBag)

 private:
  static std::string shape(const at::Tensor &t) {
    std::string r = "torch.Size([";
    for (int64_t i = 0; i < t.dim(); ++i) r += (i ? ", " : "") + std::to_string(t.size(i));
    return r + "])";
  }
  std::string mode_, repr_;
  bool include_last_offset_;
};

class Upsample : public Module {
 public:
  explicit Upsample(const Args &a) : Module("Upsample") {
    if (!a.is_none("size")) {
      has_size_ = true;
      size_is_int_ = a.get("size").kind == Value::Int;
      size_ = a.ints("size");
    }
    // Python keeps float(scale_factor) (a tuple of floats for a tuple), and
    // None for a scale factor that is falsy (0).
    const Value &sf = a.get("scale_factor");
    if (sf.kind == Value::Seq) {
      scale_ = a.floats("scale_factor");
      scale_is_seq_ = true;
      Value t;
      t.kind = Value::Seq;
      for (double f : scale_) {
        Value e;
        e.kind = Value::Float;
        e.f = f;
        t.items.push_back(e);
      }
      scale_repr_ = t.repr();
    } else if (sf.kind != Value::None && a.f("scale_factor") != 0) {
      scale_ = {a.f("scale_factor")};
      scale_repr_ = float_repr(scale_[0]);
    }
    mode_ = a.s("mode");
    if (!a.is_none("align_corners")) align_corners_ = a.b("align_corners");
    if (!a.is_none("recompute_scale_factor")) recompute_ = a.b("recompute_scale_factor");
    repr_ = scale_.empty() ? "size=" + given_repr(a, "size") : "scale_factor=" + scale_repr_;
    repr_ += ", mode=" + (CTORCH_NN_REPR_QUOTES_MODE ? given_repr(a, "mode") : mode_);
  }
  std::vector<at::Tensor> forward(const std::vector<at::Tensor> &in, const Args &) override {
    return {interpolate(in[0])};
  }
  std::string extra_repr() const override { return repr_; }
  CTORCH_NN_COPYABLE(Upsample)

 private:
  // F.interpolate(input, size, scale_factor, mode, align_corners,
  // recompute_scale_factor=...), antialias off.
  at::Tensor interpolate(const at::Tensor &x) const {
    const std::string &m = mode_;
    bool align = false;
    if (m == "nearest" || m == "area" || m == "nearest-exact") {
      if (align_corners_)
        value_error("align_corners option can only be set with the interpolating modes: linear | bilinear | "
                    "bicubic | trilinear");
    } else {
      align = align_corners_.value_or(false);
    }
    int64_t dim = x.dim() - 2;
    bool has_size = has_size_, has_scale = !scale_.empty();
    c10::optional<std::vector<int64_t>> out;
    c10::optional<std::vector<double>> scales;
    if (has_size && has_scale) value_error("only one of size or scale_factor should be defined");
    if (has_size) {
      if (!size_is_int_ && static_cast<int64_t>(size_.size()) != dim)
        value_error("Input and output must have the same number of spatial dimensions, but got input with "
                    "spatial dimensions of " + dims(x) + " and output size of " + list(size_) +
                    ". Please provide input tensor in (N, C, d1, d2, ...,dK) format and output size in (o1, o2, "
                    "...,oK) format.");
      out = size_is_int_ ? std::vector<int64_t>(dim, size_[0]) : size_;
    } else if (has_scale) {
      if (scale_is_seq_ && static_cast<int64_t>(scale_.size()) != dim)
        value_error("Input and scale_factor must have the same number of spatial dimensions, but got input with "
                    "spatial dimensions of " + dims(x) + " and scale_factor of shape " + scale_repr_ +
                    ". Please provide input tensor in (N, C, d1, d2, ...,dK) format and scale_factor in (s1, s2, "
                    "...,sK) format.");
      scales = scale_is_seq_ ? scale_ : std::vector<double>(dim, scale_[0]);
    } else {
      value_error("either size or scale_factor should be defined");
    }
    if (recompute_ && *recompute_ && has_size)
      value_error("recompute_scale_factor is not meaningful with an explicit size.");
    bool recompute = recompute_.value_or(false) || (m == "area" && !out);
    if (recompute) {
      std::vector<int64_t> o(dim);
      for (int64_t i = 0; i < dim; ++i)
        o[i] = static_cast<int64_t>(std::floor(static_cast<double>(x.size(i + 2)) * (*scales)[i]));
      out = o;
      scales = c10::nullopt;
    }
    at::OptionalIntArrayRef os = out ? at::OptionalIntArrayRef(*out) : at::OptionalIntArrayRef(c10::nullopt);
    c10::optional<at::ArrayRef<double>> sc;
    if (scales) sc = at::ArrayRef<double>(*scales);
    int64_t d = x.dim();
    if (m == "nearest" && d == 3) return at::upsample_nearest1d(x, os, sc);
    if (m == "nearest" && d == 4) return at::upsample_nearest2d(x, os, sc);
    if (m == "nearest" && d == 5) return at::upsample_nearest3d(x, os, sc);
    if (m == "nearest-exact" && d == 3) return at::_upsample_nearest_exact1d(x, os, sc);
    if (m == "nearest-exact" && d == 4) return at::_upsample_nearest_exact2d(x, os, sc);
    if (m == "nearest-exact" && d == 5) return at::_upsample_nearest_exact3d(x, os, sc);
    if (m == "area" && d == 3) return at::adaptive_avg_pool1d(x, *out);
    if (m == "area" && d == 4) return at::adaptive_avg_pool2d(x, *out);
    if (m == "area" && d == 5) return at::adaptive_avg_pool3d(x, *out);
    if (m == "linear" && d == 3) return at::upsample_linear1d(x, os, align, sc);
    if (m == "bilinear" && d == 4) return at::upsample_bilinear2d(x, os, align, sc);
    if (m == "trilinear" && d == 5) return at::upsample_trilinear3d(x, os, align, sc);
    if (m == "bicubic" && d == 4) return at::upsample_bicubic2d(x, os, align, sc);
    static const char *needs[][2] = {{"linear", "3D"}, {"bilinear", "4D"}, {"trilinear", "5D"}};
    if (d >= 3 && d <= 5)
      for (auto &n : needs)
        if (m == n[0])
          fail(CTORCH_NOT_IMPLEMENTED, "Got " + std::to_string(d) + "D input, but " + m + " mode needs " + n[1] +
                                           " input");
    fail(CTORCH_NOT_IMPLEMENTED, "Input Error: Only 3D, 4D and 5D input Tensors supported (got " +
                                     std::to_string(d) + "D) for the modes: nearest | linear | bilinear | bicubic | "
                                     "trilinear | area | nearest-exact (got " + m + ")");
  }
  static std::string list(const std::vector<int64_t> &v) {
    std::string r = "[";
    for (size_t i = 0; i < v.size(); ++i) r += (i ? ", " : "") + std::to_string(v[i]);
    return r + "]";
  }
  static std::string dims(const at::Tensor &x) { return list(x.sizes().slice(2).vec()); }

  std::vector<int64_t> size_;
  bool has_size_ = false, size_is_int_ = false;
  std::vector<double> scale_;
  bool scale_is_seq_ = false;
  std::string scale_repr_, mode_, repr_;
  c10::optional<bool> align_corners_, recompute_;
};

}  // namespace

// Signatures in full per kind: bindings-gen reads them from the source text.
// Embedding's _weight and EmbeddingBag's _weight (tensors) are not
// constructor text; set the weight after construction instead.
CTORCH_NN_KIND("Bilinear",
               "in1_features: int, in2_features: int, out_features: int, bias: bool = True, device: Device? = None, "
               "dtype: ScalarType? = None",
               "input1: Tensor, input2: Tensor -> Tensor", [](const Args &a) { return std::make_shared<Bilinear>(a); });
CTORCH_NN_KIND("Unflatten", "dim: int, unflattened_size: int[]", "input: Tensor -> Tensor", [](const Args &a) {
  int64_t dim = a.i("dim");
  std::vector<int64_t> sizes = a.ints("unflattened_size");
  return std::make_shared<Stateless>(
      "Unflatten", [dim, sizes](const at::Tensor &x, bool) { return x.unflatten(dim, sizes); },
      "dim=" + std::to_string(dim) + ", unflattened_size=" + given_repr(a, "unflattened_size"));
});
CTORCH_NN_KIND("PixelShuffle", "upscale_factor: int", "input: Tensor -> Tensor", [](const Args &a) {
  int64_t r = a.i("upscale_factor");
  return std::make_shared<Stateless>(
      "PixelShuffle", [r](const at::Tensor &x, bool) { return at::pixel_shuffle(x, r); },
      "upscale_factor=" + std::to_string(r));
});
CTORCH_NN_KIND("Dropout", "p: float = 0.5, inplace: bool = False", "input: Tensor -> Tensor",
               [](const Args &a) { return dropout("Dropout", a, false); });
CTORCH_NN_KIND("Dropout2d", "p: float = 0.5, inplace: bool = False", "input: Tensor -> Tensor",
               [](const Args &a) { return dropout("Dropout2d", a, true); });
CTORCH_NN_KIND("Embedding",
               "num_embeddings: int, embedding_dim: int, padding_idx: int? = None, max_norm: float? = None, "
               "norm_type: float = 2.0, scale_grad_by_freq: bool = False, sparse: bool = False, _freeze: bool = False, "
               "device: Device? = None, dtype: ScalarType? = None",
               "input: Tensor -> Tensor", [](const Args &a) { return std::make_shared<Embedding>(a); });
CTORCH_NN_KIND("EmbeddingBag",
               "num_embeddings: int, embedding_dim: int, max_norm: float? = None, norm_type: float = 2.0, "
               "scale_grad_by_freq: bool = False, mode: str = 'mean', sparse: bool = False, "
               "include_last_offset: bool = False, padding_idx: int? = None, device: Device? = None, "
               "dtype: ScalarType? = None",
               "input: Tensor, offsets: Tensor? = None, per_sample_weights: Tensor? = None -> Tensor",
               [](const Args &a) { return std::make_shared<EmbeddingBag>(a); });
CTORCH_NN_KIND("Upsample",
               "size: int[]? = None, scale_factor: float[]? = None, mode: str = 'nearest', align_corners: bool? = None, "
               "recompute_scale_factor: bool? = None",
               "input: Tensor -> Tensor", [](const Args &a) { return std::make_shared<Upsample>(a); });

}  // namespace nn
}  // namespace ctorch
