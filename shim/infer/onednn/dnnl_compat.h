// The one place where oneDNN's two APIs differ for what plan.cpp creates:
// Debian's libtorch 1.13.1 links Debian's oneDNN 2.x (operation descriptors,
// then a primitive descriptor made from one; eltwise post-ops with a scale),
// a PyPI torch is built against a oneDNN 3.x from PyPI (primitive
// descriptors made directly from the engine and the shapes). Everything
// else plan.cpp uses (memory descriptors, reorders, post-op sums,
// execution) is the same in both.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include <vector>

namespace ctorch {
namespace infer {
namespace onednn {

using dims = dnnl::memory::dims;

// attr's post-ops: the residual's sum (accumulate into dst) when sum, then
// ReLU when relu.
inline dnnl::primitive_attr post_ops(bool sum, bool relu) {
  dnnl::post_ops po;
  if (sum) po.append_sum(1.f);
#if DNNL_VERSION_MAJOR >= 3
  if (relu) po.append_eltwise(dnnl::algorithm::eltwise_relu, 0.f, 0.f);
#else
  if (relu) po.append_eltwise(1.f, dnnl::algorithm::eltwise_relu, 0.f, 0.f);
#endif
  dnnl::primitive_attr attr;
  attr.set_post_ops(po);
  return attr;
}

// An inference convolution. dilation as oneDNN counts it (0 = dense).
inline dnnl::convolution_forward::primitive_desc conv_pd(const dnnl::engine &eng, const dnnl::memory::desc &src,
                                                         const dnnl::memory::desc &weights,
                                                         const dnnl::memory::desc &bias,
                                                         const dnnl::memory::desc &dst, const dims &stride,
                                                         const dims &dilation, const dims &pad_l, const dims &pad_r,
                                                         const dnnl::primitive_attr &attr) {
#if DNNL_VERSION_MAJOR >= 3
  return dnnl::convolution_forward::primitive_desc(eng, dnnl::prop_kind::forward_inference,
                                                   dnnl::algorithm::convolution_direct, src, weights, bias, dst,
                                                   stride, dilation, pad_l, pad_r, attr);
#else
  dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, src,
                                    weights, bias, dst, stride, dilation, pad_l, pad_r);
  return dnnl::convolution_forward::primitive_desc(d, attr, eng);
#endif
}

// An inference pooling (max, or average over the valid elements), dense.
inline dnnl::pooling_forward::primitive_desc pool_pd(const dnnl::engine &eng, bool max,
                                                     const dnnl::memory::desc &src, const dnnl::memory::desc &dst,
                                                     const dims &stride, const dims &kernel, const dims &pad_l,
                                                     const dims &pad_r) {
  dnnl::algorithm alg = max ? dnnl::algorithm::pooling_max : dnnl::algorithm::pooling_avg_exclude_padding;
#if DNNL_VERSION_MAJOR >= 3
  return dnnl::pooling_forward::primitive_desc(eng, dnnl::prop_kind::forward_inference, alg, src, dst, stride,
                                               kernel, dims(kernel.size(), 0), pad_l, pad_r);
#else
  dnnl::pooling_forward::desc d(dnnl::prop_kind::forward_inference, alg, src, dst, stride, kernel, pad_l, pad_r);
  return dnnl::pooling_forward::primitive_desc(d, eng);
#endif
}

}  // namespace onednn
}  // namespace infer
}  // namespace ctorch
