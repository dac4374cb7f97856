// Seeded batch transforms: torchvision's Normalize, RandomCrop (constant
// padding), RandomHorizontalFlip, RandomResizedCrop (bilinear, antialias
// off) and Compose, applied image by image as a DataLoader applying them per
// item would, each drawing from the caller's generator through the torch
// calls torchvision makes (the draw order is in ctorch.h), so that Python
// replays a batch bit for bit (tests/transforms/transforms_vs_torch.py).
#include "transforms/transforms.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <atomic>
#include <cmath>
#include <string>
#include <vector>

struct ctorch_transform_s {
  enum Kind { NORMALIZE, CROP, FLIP, RESIZED_CROP, COMPOSE, RESIZE, CENTER_CROP, CONVERT_DTYPE } kind;
  std::atomic<int64_t> refs{1};
  std::vector<double> mean, std;                     // NORMALIZE
  int64_t height = 0, width = 0;                     // CROP, RESIZED_CROP
  int64_t pad_left = 0, pad_top = 0, pad_right = 0, pad_bottom = 0;  // CROP
  double fill = 0;                                   // CROP
  double p = 0;                                      // FLIP
  double scale_min = 0, scale_max = 0, ratio_min = 0, ratio_max = 0;  // RESIZED_CROP
  std::vector<ctorch_transform> parts;               // COMPOSE (one reference each)
  std::vector<int64_t> size;                         // RESIZE: 1 (shorter side) or 2 (height, width) entries
  int64_t max_size = 0;                              // RESIZE: 0 = None
  bool bicubic = false, antialias = false;           // RESIZE
  c10::ScalarType dtype = at::kFloat;                // CONVERT_DTYPE
  explicit ctorch_transform_s(Kind k) : kind(k) {}
  ctorch::Live<ctorch_transform_s> live{this};  // last: see core/internal.h
};

namespace {

void release(ctorch_transform t) noexcept {
  if (!t || t->refs.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  for (ctorch_transform p : t->parts) release(p);
  delete t;
}

const char *transform_name(const ctorch_transform_s &t) {
  switch (t.kind) {
    case ctorch_transform_s::NORMALIZE: return "normalize";
    case ctorch_transform_s::CROP: return "random_crop";
    case ctorch_transform_s::FLIP: return "random_horizontal_flip";
    case ctorch_transform_s::RESIZED_CROP: return "random_resized_crop";
    case ctorch_transform_s::COMPOSE: return "compose";
    case ctorch_transform_s::RESIZE: return "resize";
    case ctorch_transform_s::CENTER_CROP: return "center_crop";
    case ctorch_transform_s::CONVERT_DTYPE: return "convert_image_dtype";
  }
  return "?";
}

[[noreturn]] void fail_in(ctorch_status st, const ctorch_transform_s &t, const char *arg, const std::string &msg) {
  ctorch::fail(st, std::string("argument '") + arg + "' of " + transform_name(t) + ": " + msg);
}

std::string hw(int64_t h, int64_t w) { return std::to_string(h) + "x" + std::to_string(w); }

// torchvision's output size of F.resize (_compute_resized_output_size):
// one size sets the shorter side, the longer one int(size * long / short)
// (true division of exact integers, then truncation, as Python's), capped
// by max_size.
void resize_size(const ctorch_transform_s &t, int64_t h, int64_t w, int64_t &nh, int64_t &nw) {
  if (t.size.size() == 2) {
    nh = t.size[0], nw = t.size[1];
    return;
  }
  int64_t shorter = std::min(h, w), longer = std::max(h, w);
  int64_t new_short = t.size[0];
  auto new_long = static_cast<int64_t>(static_cast<double>(new_short * longer) / static_cast<double>(shorter));
  if (t.max_size && new_long > t.max_size) {
    new_short = static_cast<int64_t>(static_cast<double>(t.max_size * new_short) / static_cast<double>(new_long));
    new_long = t.max_size;
  }
  if (w <= h) nw = new_short, nh = new_long;
  else nh = new_short, nw = new_long;
}

bool is_real(c10::ScalarType d) { return d != at::kBool && !at::isComplexType(d); }

// Shape and dtype checks of the whole pipeline before any draw: returns the
// (H, W) and dtype an image of (C, H, W) has after t.
void check(const ctorch_transform_s &t, c10::ScalarType &dtype, int64_t c, int64_t &h, int64_t &w) {
  switch (t.kind) {
    case ctorch_transform_s::NORMALIZE:
      if (!at::isFloatingType(dtype))
        ctorch::fail(CTORCH_TYPE, std::string("argument 'batch': normalize needs a floating point batch, got ") +
                                      c10::toString(dtype));
      if (static_cast<int64_t>(t.mean.size()) != c)
        fail_in(CTORCH_INVALID_ARGUMENT, t, "mean",
                "has " + std::to_string(t.mean.size()) + " entries, the batch " + std::to_string(c) + " channels");
      return;
    case ctorch_transform_s::CROP: {
      int64_t ph = h + t.pad_top + t.pad_bottom, pw = w + t.pad_left + t.pad_right;
      if (ph < t.height || pw < t.width)
        fail_in(CTORCH_VALUE, t, ph < t.height ? "height" : "width",
                "crop " + hw(t.height, t.width) + " is larger than the padded image " + hw(ph, pw));
      h = t.height, w = t.width;
      return;
    }
    case ctorch_transform_s::FLIP: return;
    case ctorch_transform_s::RESIZED_CROP:
      if (dtype == at::kBool || at::isComplexType(dtype))
        ctorch::fail(CTORCH_TYPE, std::string("argument 'batch': random_resized_crop needs a real batch, got ") +
                                      c10::toString(dtype));
      if (h < 1 || w < 1) fail_in(CTORCH_VALUE, t, "batch", "the image " + hw(h, w) + " is empty");
      h = t.height, w = t.width;
      return;
    case ctorch_transform_s::COMPOSE:
      for (ctorch_transform p : t.parts) check(*p, dtype, c, h, w);
      return;
    case ctorch_transform_s::RESIZE: {
      if (!is_real(dtype))
        ctorch::fail(CTORCH_TYPE, std::string("argument 'batch': resize needs a real batch, got ") +
                                      c10::toString(dtype));
      if (h < 1 || w < 1) fail_in(CTORCH_VALUE, t, "batch", "the image " + hw(h, w) + " is empty");
      int64_t nh, nw;
      resize_size(t, h, w, nh, nw);
      if (nh < 1 || nw < 1)
        fail_in(CTORCH_VALUE, t, "size", "gives an empty image " + hw(nh, nw) + " for " + hw(h, w));
      h = nh, w = nw;
      return;
    }
    case ctorch_transform_s::CENTER_CROP:
      h = t.height, w = t.width;
      return;
    case ctorch_transform_s::CONVERT_DTYPE:
      if (!is_real(dtype))
        ctorch::fail(CTORCH_TYPE, std::string("argument 'batch': convert_image_dtype needs a real batch, got ") +
                                      c10::toString(dtype));
      if ((dtype == at::kFloat && (t.dtype == at::kInt || t.dtype == at::kLong)) ||
          (dtype == at::kDouble && t.dtype == at::kLong))
        fail_in(CTORCH_VALUE, t, "dtype",
                std::string("the cast from ") + c10::toString(dtype) + " to " + c10::toString(t.dtype) +
                    " cannot be performed safely (as torchvision)");
      dtype = t.dtype;
      return;
  }
}

int64_t randint(int64_t high, const at::Generator &gen) {
  return at::randint(0, high, {1}, gen, at::TensorOptions().dtype(at::kLong)).item<int64_t>();
}
double uniform(double from, double to, const at::Generator &gen) {
  return at::empty({1}, at::kFloat).uniform_(from, to, gen).item<double>();
}
// Python's round() of a float to an int: half to even (the default rounding mode).
int64_t py_round(double v) { return static_cast<int64_t>(std::nearbyint(v)); }

// torchvision RandomResizedCrop.get_params.
void resized_crop_params(const ctorch_transform_s &t, int64_t height, int64_t width, const at::Generator &gen,
                         int64_t &i, int64_t &j, int64_t &h, int64_t &w) {
  double area = static_cast<double>(height * width);
  at::Tensor log_ratio = at::log(at::tensor({t.ratio_min, t.ratio_max}, at::kDouble).to(at::kFloat));
  double lr0 = log_ratio[0].item<double>(), lr1 = log_ratio[1].item<double>();
  for (int attempt = 0; attempt < 10; ++attempt) {
    double target_area = area * uniform(t.scale_min, t.scale_max, gen);
    double aspect = at::exp(at::empty({1}, at::kFloat).uniform_(lr0, lr1, gen)).item<double>();
    w = py_round(std::sqrt(target_area * aspect));
    h = py_round(std::sqrt(target_area / aspect));
    if (0 < w && w <= width && 0 < h && h <= height) {
      i = randint(height - h + 1, gen);
      j = randint(width - w + 1, gen);
      return;
    }
  }
  double in_ratio = static_cast<double>(width) / static_cast<double>(height);
  if (in_ratio < t.ratio_min) {
    w = width;
    h = py_round(static_cast<double>(w) / t.ratio_min);
  } else if (in_ratio > t.ratio_max) {
    h = height;
    w = py_round(static_cast<double>(h) * t.ratio_max);
  } else {
    w = width;
    h = height;
  }
  i = (height - h) / 2;  // both >= 0 here
  j = (width - w) / 2;
}

// torchvision's F_t.resize (bilinear, antialias=False) of one image [C, H, W].
at::Tensor resize_bilinear(const at::Tensor &img, int64_t h, int64_t w) {
  if (img.size(1) == h && img.size(2) == w) return img;  // torchvision returns the image as is
  c10::ScalarType out_dtype = img.scalar_type();
  bool cast = out_dtype != at::kFloat && out_dtype != at::kDouble;
  at::Tensor x = img.unsqueeze(0);
  if (cast) x = x.to(at::kFloat);
  x = at::upsample_bilinear2d(x, {h, w}, false, c10::nullopt, c10::nullopt);
  if (cast) {
    if (at::isIntegralType(out_dtype, /*includeBool=*/false)) x = at::round(x);
    x = x.to(out_dtype);
  }
  return x.squeeze(0);
}

// torchvision's F_t.resize of one image [C, H, W] (after the size is
// known): integer images go through float32 and come back rounded (bicubic
// UINT8 clamped first); the same ATen kernels F.interpolate calls.
at::Tensor resize(const ctorch_transform_s &t, const at::Tensor &img) {
  int64_t h = img.size(1), w = img.size(2), nh, nw;
  resize_size(t, h, w, nh, nw);
  if (t.size.size() == 1 && nh == h && nw == w) return img;  // torchvision returns the image as is
  c10::ScalarType out_dtype = img.scalar_type();
  bool cast = out_dtype != at::kFloat && out_dtype != at::kDouble;
  at::Tensor x = img.unsqueeze(0);
  if (cast) x = x.to(at::kFloat);
  if (t.bicubic)
    x = t.antialias ? at::_upsample_bicubic2d_aa(x, {nh, nw}, false, c10::nullopt, c10::nullopt)
                    : at::upsample_bicubic2d(x, {nh, nw}, false, c10::nullopt, c10::nullopt);
  else
    x = t.antialias ? at::_upsample_bilinear2d_aa(x, {nh, nw}, false, c10::nullopt, c10::nullopt)
                    : at::upsample_bilinear2d(x, {nh, nw}, false, c10::nullopt, c10::nullopt);
  if (t.bicubic && out_dtype == at::kByte) x = x.clamp(0, 255);
  if (cast) {
    if (at::isIntegralType(out_dtype, /*includeBool=*/false)) x = at::round(x);
    x = x.to(out_dtype);
  }
  return x.squeeze(0);
}

// torchvision's F.center_crop of one image [C, H, W].
at::Tensor center_crop(const ctorch_transform_s &t, at::Tensor x) {
  int64_t h = x.size(1), w = x.size(2), ch = t.height, cw = t.width;
  if (cw > w || ch > h) {
    int64_t l = cw > w ? (cw - w) / 2 : 0, tp = ch > h ? (ch - h) / 2 : 0;
    int64_t r = cw > w ? (cw - w + 1) / 2 : 0, b = ch > h ? (ch - h + 1) / 2 : 0;
    x = at::constant_pad_nd(x, {l, r, tp, b}, 0);
    h = x.size(1), w = x.size(2);
    if (ch == h && cw == w) return x;
  }
  int64_t top = py_round(static_cast<double>(h - ch) / 2.0), left = py_round(static_cast<double>(w - cw) / 2.0);
  return x.slice(1, top, top + ch).slice(2, left, left + cw);
}

// The largest value of an integer dtype (torchvision's _max_value).
double max_value(c10::ScalarType d) {
  switch (d) {
    case at::kByte: return 255.0;
    case at::kChar: return 127.0;
    case at::kShort: return 32767.0;
    case at::kInt: return 2147483647.0;
    default: return 9223372036854775807.0;  // kLong
  }
}

// torchvision's F.convert_image_dtype.
at::Tensor convert_dtype(c10::ScalarType dtype, const at::Tensor &x) {
  c10::ScalarType from = x.scalar_type();
  if (from == dtype) return x;
  bool from_float = at::isFloatingType(from), to_float = at::isFloatingType(dtype);
  if (from_float) {
    if (to_float) return x.to(dtype);
    return x.mul(max_value(dtype) + 1.0 - 1e-3).to(dtype);
  }
  double in_max = max_value(from);
  if (to_float) return x.to(dtype).div(in_max);
  double out_max = max_value(dtype);
  if (in_max > out_max) {
    auto factor = static_cast<int64_t>(std::floor((in_max + 1) / (out_max + 1)));
    return at::div(x, factor, "floor").to(dtype);
  }
  auto factor = static_cast<int64_t>(std::floor((out_max + 1) / (in_max + 1)));
  return x.to(dtype).mul(factor);
}

at::Tensor apply_one(const ctorch_transform_s &t, at::Tensor x, const at::Generator &gen) {
  switch (t.kind) {
    case ctorch_transform_s::NORMALIZE: {
      at::Tensor mean = at::tensor(t.mean, at::kDouble).to(x.scalar_type()).to(x.device());
      at::Tensor std = at::tensor(t.std, at::kDouble).to(x.scalar_type()).to(x.device());
      if (at::eq(std, 0).any().item<bool>())
        fail_in(CTORCH_INVALID_ARGUMENT, t, "std",
                std::string("has an entry that is 0 in ") + c10::toString(x.scalar_type()));
      return x.sub(mean.view({-1, 1, 1})).div(std.view({-1, 1, 1}));
    }
    case ctorch_transform_s::CROP: {
      if (t.pad_left || t.pad_top || t.pad_right || t.pad_bottom)
        x = at::constant_pad_nd(x, {t.pad_left, t.pad_right, t.pad_top, t.pad_bottom}, t.fill);
      int64_t ph = x.size(1), pw = x.size(2), i = 0, j = 0;
      if (!(ph == t.height && pw == t.width)) {
        i = randint(ph - t.height + 1, gen);
        j = randint(pw - t.width + 1, gen);
      }
      return x.slice(1, i, i + t.height).slice(2, j, j + t.width);
    }
    case ctorch_transform_s::FLIP:
      if ((at::rand({1}, gen) < t.p).item<bool>()) return x.flip({-1});
      return x;
    case ctorch_transform_s::RESIZED_CROP: {
      int64_t i, j, h, w;
      resized_crop_params(t, x.size(1), x.size(2), gen, i, j, h, w);
      return resize_bilinear(x.slice(1, i, i + h).slice(2, j, j + w), t.height, t.width);
    }
    case ctorch_transform_s::COMPOSE:
      for (ctorch_transform p : t.parts) x = apply_one(*p, std::move(x), gen);
      return x;
    case ctorch_transform_s::RESIZE: return resize(t, x);
    case ctorch_transform_s::CENTER_CROP: return center_crop(t, std::move(x));
    case ctorch_transform_s::CONVERT_DTYPE: return convert_dtype(t.dtype, x);
  }
  return x;
}

// Copies a 1-D real tensor's values as doubles.
std::vector<double> values_of(ctorch_tensor h, const char *arg) {
  ctorch::require_tensor(h, arg);
  at::Tensor v = ctorch::own(h);
  if (v.dim() != 1) ctorch::fail_arg(arg, "expected a 1-D tensor, got " + std::to_string(v.dim()) + " dimensions");
  if (v.numel() == 0) ctorch::fail_arg(arg, "is empty");
  if (v.scalar_type() == at::kBool || at::isComplexType(v.scalar_type()))
    ctorch::fail(CTORCH_TYPE, std::string("argument '") + arg + "': expected real values, got " +
                                  c10::toString(v.scalar_type()));
  at::Tensor d = v.to(at::kCPU).to(at::kDouble).contiguous();
  std::vector<double> out(d.data_ptr<double>(), d.data_ptr<double>() + d.numel());
  for (size_t i = 0; i < out.size(); ++i)
    if (std::isnan(out[i])) ctorch::fail_arg(arg, "entry " + std::to_string(i) + " is NaN");
  return out;
}

void check_size(int64_t v, const char *arg) {
  if (v < 1) ctorch::fail_arg(arg, "must be >= 1, got " + std::to_string(v));
}

}  // namespace

namespace ctorch {
namespace transforms {

void retain(ctorch_transform t) noexcept { t->refs.fetch_add(1, std::memory_order_relaxed); }
void release(ctorch_transform t) noexcept { ::release(t); }

at::Tensor apply_image(ctorch_transform t, const at::Tensor &img, const at::Generator &gen) {
  int64_t h = img.size(1), w = img.size(2);
  c10::ScalarType dtype = img.scalar_type();
  check(*t, dtype, img.size(0), h, w);
  return apply_one(*t, img, gen);
}

}  // namespace transforms
}  // namespace ctorch

CTORCH_API ctorch_status ctorch_transform_normalize(ctorch_transform *out, ctorch_tensor mean, ctorch_tensor std) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  std::vector<double> m = values_of(mean, "mean"), s = values_of(std, "std");
  if (m.size() != s.size())
    ctorch::fail_arg("std", "has " + std::to_string(s.size()) + " entries, mean " + std::to_string(m.size()));
  for (size_t i = 0; i < s.size(); ++i)
    if (s[i] == 0) ctorch::fail_arg("std", "entry " + std::to_string(i) + " is 0");
  auto *t = new ctorch_transform_s(ctorch_transform_s::NORMALIZE);
  t->mean = std::move(m);
  t->std = std::move(s);
  *out = t;
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_transform_random_crop(ctorch_transform *out, int64_t height, int64_t width,
                                                      const int64_t *padding, size_t n_padding, double fill) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  check_size(height, "height");
  check_size(width, "width");
  ctorch::require_list(padding, n_padding, "padding");
  int64_t l = 0, tp = 0, r = 0, b = 0;
  switch (n_padding) {
    case 0: break;
    case 1: l = tp = r = b = padding[0]; break;
    case 2: l = r = padding[0], tp = b = padding[1]; break;
    case 4: l = padding[0], tp = padding[1], r = padding[2], b = padding[3]; break;
    default: ctorch::fail_arg("padding", "must have 0, 1, 2 or 4 entries, got " + std::to_string(n_padding));
  }
  for (size_t i = 0; i < n_padding; ++i)
    if (padding[i] < 0 || padding[i] > (int64_t{1} << 30))
      ctorch::fail_arg("padding", "entry " + std::to_string(i) + " is " + std::to_string(padding[i]) +
                                      " (must be in [0, 2^30])");
  if (std::isnan(fill)) ctorch::fail_arg("fill", "is NaN");
  auto *t = new ctorch_transform_s(ctorch_transform_s::CROP);
  t->height = height, t->width = width, t->fill = fill;
  t->pad_left = l, t->pad_top = tp, t->pad_right = r, t->pad_bottom = b;
  *out = t;
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_transform_random_horizontal_flip(ctorch_transform *out, double p) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  if (!(p >= 0 && p <= 1)) ctorch::fail_arg("p", "must be in [0, 1], got " + std::to_string(p));
  auto *t = new ctorch_transform_s(ctorch_transform_s::FLIP);
  t->p = p;
  *out = t;
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_transform_random_resized_crop(ctorch_transform *out, int64_t height, int64_t width,
                                                              double scale_min, double scale_max, double ratio_min,
                                                              double ratio_max) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  check_size(height, "height");
  check_size(width, "width");
  if (!(scale_min > 0 && std::isfinite(scale_min)))
    ctorch::fail_arg("scale_min", "must be finite and > 0, got " + std::to_string(scale_min));
  if (!(scale_max >= scale_min && std::isfinite(scale_max)))
    ctorch::fail_arg("scale_max", "must be finite and >= scale_min, got " + std::to_string(scale_max));
  if (!(ratio_min > 0 && std::isfinite(ratio_min)))
    ctorch::fail_arg("ratio_min", "must be finite and > 0, got " + std::to_string(ratio_min));
  if (!(ratio_max >= ratio_min && std::isfinite(ratio_max)))
    ctorch::fail_arg("ratio_max", "must be finite and >= ratio_min, got " + std::to_string(ratio_max));
  auto *t = new ctorch_transform_s(ctorch_transform_s::RESIZED_CROP);
  t->height = height, t->width = width;
  t->scale_min = scale_min, t->scale_max = scale_max, t->ratio_min = ratio_min, t->ratio_max = ratio_max;
  *out = t;
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_transform_compose(ctorch_transform *out, const ctorch_transform *ts, size_t n) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  ctorch::require_list(ts, n, "ts");
  for (size_t i = 0; i < n; ++i)
    if (!ts[i]) ctorch::fail_arg("ts", "entry " + std::to_string(i) + " is NULL");
    else ctorch::check_handle(ts[i], "ts");
  auto *t = new ctorch_transform_s(ctorch_transform_s::COMPOSE);
  t->parts.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    ts[i]->refs.fetch_add(1, std::memory_order_relaxed);
    t->parts.push_back(ts[i]);
  }
  *out = t;
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_transform_apply(ctorch_tensor *out, ctorch_transform t, ctorch_tensor batch,
                                                ctorch_generator generator) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  ctorch::require_ptr(t, "t");
  ctorch::require_tensor(batch, "batch");
  ctorch::Borrowed b(batch);
  const at::Tensor &x = b.get();
  if (x.dim() != 4) ctorch::fail_arg("batch", "expected [N, C, H, W], got " + std::to_string(x.dim()) + " dimensions");
  if (generator) ctorch::check_handle(generator, "generator");
  at::Generator gen = generator ? generator->gen : at::detail::getDefaultCPUGenerator();
  if (gen.device().type() != at::kCPU) ctorch::fail_arg("generator", "must be a CPU generator");
  int64_t h = x.size(2), w = x.size(3);
  c10::ScalarType dtype = x.scalar_type();
  check(*t, dtype, x.size(1), h, w);
  int64_t n = x.size(0);
  at::Tensor result;
  if (n == 0) {
    result = at::empty({0, x.size(1), h, w}, x.options().dtype(dtype));
  } else {
    std::vector<at::Tensor> items;
    items.reserve(n);
    for (int64_t k = 0; k < n; ++k) items.push_back(apply_one(*t, x[k], gen));
    result = at::stack(items);  // a new tensor, never a view of batch
  }
  *out = ctorch::give(std::move(result));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_transform_resize(ctorch_transform *out, const int64_t *size, size_t n_size,
                                                 ctorch_interpolation interpolation, int64_t max_size,
                                                 int antialias) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  ctorch::require_ptr(size, "size");
  if (n_size != 1 && n_size != 2)
    ctorch::fail_arg("n_size", "must be 1 (the shorter side) or 2 (height, width), got " + std::to_string(n_size));
  for (size_t i = 0; i < n_size; ++i)
    if (size[i] < 1 || size[i] > (int64_t{1} << 30))
      ctorch::fail_arg("size", "entry " + std::to_string(i) + " is " + std::to_string(size[i]) +
                                   " (must be in [1, 2^30])");
  if (interpolation != CTORCH_INTERPOLATION_BILINEAR && interpolation != CTORCH_INTERPOLATION_BICUBIC)
    ctorch::fail_arg("interpolation", "is not a ctorch_interpolation (1 or 2), got " +
                                          std::to_string(static_cast<int>(interpolation)));
  if (max_size < 0 || max_size > (int64_t{1} << 30))
    ctorch::fail_arg("max_size", "must be 0 (None) or in [1, 2^30], got " + std::to_string(max_size));
  if (max_size && n_size != 1)
    ctorch::fail_arg("max_size", "is only allowed with one size (the shorter side), as torchvision");
  if (max_size && max_size <= size[0])
    ctorch::fail_arg("max_size", "= " + std::to_string(max_size) + " must be strictly greater than the requested size " +
                                     std::to_string(size[0]));
  auto *t = new ctorch_transform_s(ctorch_transform_s::RESIZE);
  t->size.assign(size, size + n_size);
  t->max_size = max_size;
  t->bicubic = interpolation == CTORCH_INTERPOLATION_BICUBIC;
  t->antialias = antialias != 0;
  *out = t;
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_transform_center_crop(ctorch_transform *out, int64_t height, int64_t width) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  check_size(height, "height");
  check_size(width, "width");
  if (height > (int64_t{1} << 30)) ctorch::fail_arg("height", "must be <= 2^30, got " + std::to_string(height));
  if (width > (int64_t{1} << 30)) ctorch::fail_arg("width", "must be <= 2^30, got " + std::to_string(width));
  auto *t = new ctorch_transform_s(ctorch_transform_s::CENTER_CROP);
  t->height = height, t->width = width;
  *out = t;
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_transform_convert_image_dtype(ctorch_transform *out, ctorch_dtype dtype) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  switch (dtype) {
    case CTORCH_UINT8: case CTORCH_INT8: case CTORCH_INT16: case CTORCH_INT32: case CTORCH_INT64:
    case CTORCH_FLOAT16: case CTORCH_BFLOAT16: case CTORCH_FLOAT32: case CTORCH_FLOAT64: break;
    default:
      ctorch::fail_arg("dtype", "must be an integer or floating point ctorch_dtype (UINT8, INT8, INT16, INT32, "
                                "INT64, FLOAT16, BFLOAT16, FLOAT32, FLOAT64), got " +
                                    std::to_string(static_cast<int>(dtype)));
  }
  auto *t = new ctorch_transform_s(ctorch_transform_s::CONVERT_DTYPE);
  t->dtype = ctorch::to_scalar_type(dtype, "dtype");
  *out = t;
  CTORCH_CATCH
}

// A transform a compose still holds stays live (and registered) after its
// own handle is freed: a second free of that handle is not detected.
CTORCH_API void ctorch_transform_free(ctorch_transform t) {
  if (!t) return;
  if (ctorch::handle_kind_of(t) != ctorch::HandleKind::transform)
    return ctorch::bad_free(t, ctorch::HandleKind::transform, __func__);
  release(t);
}
