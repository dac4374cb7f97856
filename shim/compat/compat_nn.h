// compat_nn.h - the libtorch version differences of the module layer's
// attention (nn/attention.cpp, nn/transformer.cpp), kept with compat.h's
// rules (one named shim per difference, versions and date given, no version
// test elsewhere). A separate header only because compat.h is included by
// every generated wrapper: a line added there rebuilds ~2,500 translation
// units in every build directory, for code two files use.
#pragma once

#include "compat/compat.h"

#if CTORCH_TORCH_AT_LEAST(2, 0)
#include <ATen/ops/scaled_dot_product_attention.h>
#endif
namespace ctorch {
namespace compat {

// torch.nn's attention is Python code that 2.0 rewrote: masks made float
// (-inf) up front (F._canonical_mask), the is_causal hint, the
// need_weights=False path through scaled_dot_product_attention, the packed
// in-projection through unflatten().contiguous(), q * sqrt(1/E) instead of
// q / sqrt(E), mean() for averaged weights, other fast-path conditions in
// MultiheadAttention, TransformerEncoderLayer and TransformerEncoder. ctorch
// reproduces, op for op, the Python of the libtorch it is built against:
// 1.13's below 2.0, 2.15's from 2.0 (both checked against torch.nn; 2.0 to
// 2.14 are taken to be 2.15's).
constexpr bool kPythonAttention2 = CTORCH_TORCH_AT_LEAST(2, 0);

// at::scaled_dot_product_attention appeared in 2.0; only the 2.x path
// (kPythonAttention2) calls this.
inline at::Tensor scaled_dot_product_attention(const at::Tensor &q, const at::Tensor &k, const at::Tensor &v,
                                               const c10::optional<at::Tensor> &mask, double dropout_p,
                                               bool is_causal) {
#if CTORCH_TORCH_AT_LEAST(2, 0)
  return at::scaled_dot_product_attention(q, k, v, mask, dropout_p, is_causal);
#else
  (void)q, (void)k, (void)v, (void)mask, (void)dropout_p, (void)is_causal;
  TORCH_CHECK(false, "scaled_dot_product_attention needs libtorch 2.0 or newer");
#endif
}

}  // namespace compat
}  // namespace ctorch
