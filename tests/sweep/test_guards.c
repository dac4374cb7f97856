/* Regressions: generated operators whose libtorch kernels
 * crashed on inputs a binding author's placeholders produced ([2,3] float
 * tensors, small ints, NULL optionals). Each must now answer
 * INVALID_ARGUMENT naming the argument (shim/ops/guards.h),
 * and still work on valid input. Also: a zero tensor (_efficientzerotensor)
 * exported through DLPack or copied out must carry real memory. */
#include <dlpack/dlpack.h>

#include "../check_main.h"

static ctorch_tensor floats(int64_t rows, int64_t cols) {
  float v[64];
  int64_t sizes[2] = {rows, cols};
  int i;
  for (i = 0; i < 64; ++i) v[i] = (float)((i % 7) - 3) * 0.25f;
  return ct_floats(v, sizes, 2);
}

static ctorch_tensor vec(int64_t n, float value) {
  float v[64];
  int i;
  for (i = 0; i < 64; ++i) v[i] = value;
  return ct_floats(v, &n, 1);
}

static const int kMask[3] = {1, 1, 1};

START_TEST(native_batch_norm_in_eval_mode_needs_running_stats) {
  ctorch_tensor x = floats(2, 3), rm = vec(3, 0.0f), rv = vec(3, 1.0f), r0 = NULL, r1 = NULL, r2 = NULL, shortv = vec(2, 1.0f);
  /* libtorch 1.13: SIGSEGV (running stats read through NULL). */
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_native_batch_norm(&r0, &r1, &r2, x, NULL, NULL, NULL, NULL, 0, 0.0, 0.0));
  CT_ERROR_HAS("ctorch_native_batch_norm: argument 'running_mean'");
  ck_assert_ptr_null(r0);
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_native_batch_norm(&r0, &r1, &r2, x, NULL, NULL, rm, NULL, 0, 0.0, 0.0));
  CT_ERROR_HAS("argument 'running_var'");
  /* per-channel tensors shorter than the channel count were read past their end */
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_native_batch_norm(&r0, &r1, &r2, x, shortv, NULL, rm, rv, 0, 0.0, 0.0));
  CT_ERROR_HAS("argument 'weight'");
  /* valid: eval mode with mean 0, var 1, eps 0 is the identity */
  CT_OK(ctorch_native_batch_norm(&r0, &r1, &r2, x, NULL, NULL, rm, rv, 0, 0.1, 0.0));
  {
    ctorch_tensor a = NULL, b = NULL;
    float fa[6], fb[6];
    int i;
    CT_OK(ctorch_tensor_contiguous(&a, r0));
    CT_OK(ctorch_tensor_contiguous(&b, x));
    CT_OK(ctorch_tensor_copy_to(fa, sizeof fa, a));
    CT_OK(ctorch_tensor_copy_to(fb, sizeof fb, b));
    for (i = 0; i < 6; ++i) ck_assert_double_eq_tol(fa[i], fb[i], 1e-6);
    ctorch_tensor_free(a);
    ctorch_tensor_free(b);
  }
  ctorch_tensor_free(r0);
  ctorch_tensor_free(r1);
  ctorch_tensor_free(r2);
  ctorch_tensor_free(shortv);
  ctorch_tensor_free(rm);
  ctorch_tensor_free(rv);
  ctorch_tensor_free(x);
}
END_TEST

START_TEST(batch_norm_backward_needs_its_statistics) {
  ctorch_tensor x = floats(2, 3), g = floats(2, 3), res = floats(2, 3), rm = vec(3, 0.0f), rv = vec(3, 1.0f);
  ctorch_tensor r0 = NULL, r1 = NULL, r2 = NULL;
  /* libtorch 1.13: SIGSEGV in batch_norm_backward_cpu, both entry points. */
  CT_FAILS(CTORCH_INVALID_ARGUMENT,
           ctorch_native_batch_norm_backward(&r0, &r1, &r2, g, x, NULL, NULL, NULL, NULL, NULL, 0, 0.0, kMask, 3));
  CT_ERROR_HAS("ctorch_native_batch_norm_backward: argument 'running_mean'");
  CT_FAILS(CTORCH_INVALID_ARGUMENT,
           ctorch_native_batch_norm_backward(&r0, &r1, &r2, g, x, NULL, NULL, NULL, NULL, NULL, 1, 0.0, kMask, 3));
  CT_ERROR_HAS("argument 'save_mean'");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch__batch_norm_impl_index_backward(&r0, &r1, &r2, 0, x, g, NULL, NULL, NULL,
                                                                           NULL, NULL, 0, 0.0, kMask, 3, res));
  CT_ERROR_HAS("ctorch__batch_norm_impl_index_backward: argument 'running_mean'");
  ck_assert_ptr_null(r0);
  ck_assert_ptr_null(r1);
  ck_assert_ptr_null(r2);
  /* valid: eval mode, no weight asked for */
  {
    const int mask[3] = {1, 0, 1};
    CT_OK(ctorch_native_batch_norm_backward(&r0, &r1, &r2, g, x, NULL, rm, rv, NULL, NULL, 0, 1e-5, mask, 3));
    ck_assert_ptr_nonnull(r0);
    ck_assert_ptr_null(r1);
    ck_assert_ptr_nonnull(r2);
    ctorch_tensor_free(r0);
    ctorch_tensor_free(r2);
  }
  ctorch_tensor_free(rm);
  ctorch_tensor_free(rv);
  ctorch_tensor_free(res);
  ctorch_tensor_free(g);
  ctorch_tensor_free(x);
}
END_TEST

START_TEST(rnn_cells_check_weight_shapes_and_hidden_state) {
  ctorch_tensor a = floats(2, 3), b = floats(2, 3), c = floats(2, 3), d = floats(2, 3), r0 = NULL, r1 = NULL;
  ctorch_tensor hx[2] = {b, c};
  const ctorch_scalar z = ctorch_scalar_int(0);
  /* libtorch 1.13: gru_cell with [2,3] weights read past its gate list (SIGSEGV). */
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_gru_cell(&r0, a, b, c, d, NULL, NULL));
  CT_ERROR_HAS("ctorch_gru_cell: argument 'w_hh'");
  ck_assert_ptr_null(r0);
  /* libtorch 1.13: quantized_lstm_cell and lstm_cell read hx[1] of a 1-tensor list (SIGSEGV). */
  CT_FAILS(CTORCH_INVALID_ARGUMENT,
           ctorch_quantized_lstm_cell(&r0, &r1, a, hx, 1, a, b, c, d, a, b, c, d, z, z, z, z));
  CT_ERROR_HAS("ctorch_quantized_lstm_cell: argument 'hx'");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_quantized_lstm_cell(&r0, &r1, a, hx, 0, a, b, c, d, a, b, c, d, z, z, z, z));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_lstm_cell(&r0, &r1, a, hx, 1, c, d, NULL, NULL));
  CT_ERROR_HAS("ctorch_lstm_cell: argument 'hx'");
  ck_assert_ptr_null(r0);
  ck_assert_ptr_null(r1);
  /* valid GRU cell: input [2,3], hidden [2,4], w_ih [12,3], w_hh [12,4] */
  {
    ctorch_tensor h = floats(2, 4), wih = floats(12, 3), whh = floats(12, 4), bias = vec(12, 0.5f), out = NULL;
    int64_t sizes[2];
    CT_OK(ctorch_gru_cell(&out, a, h, wih, whh, bias, bias));
    CT_OK(ctorch_tensor_sizes(sizes, 2, out));
    ck_assert_int_eq(sizes[0], 2);
    ck_assert_int_eq(sizes[1], 4);
    ctorch_tensor_free(out);
    ctorch_tensor_free(bias);
    ctorch_tensor_free(whh);
    ctorch_tensor_free(wih);
    ctorch_tensor_free(h);
  }
  ctorch_tensor_free(a);
  ctorch_tensor_free(b);
  ctorch_tensor_free(c);
  ctorch_tensor_free(d);
}
END_TEST

START_TEST(zero_tensor_has_memory_when_exported) {
  const int64_t sizes[2] = {2, 3};
  const ctorch_dtype f32 = CTORCH_FLOAT32;
  ctorch_tensor z = NULL;
  DLManagedTensor *m = NULL;
  float out[6] = {1, 1, 1, 1, 1, 1};
  void *p = NULL;
  int i;
  CT_OK(ctorch__efficientzerotensor(&z, sizes, 2, &f32, NULL, NULL, NULL));
  /* was: CTORCH_OK with data NULL and shape [2,3]: a consumer reading it crashed */
  CT_OK(ctorch_to_dlpack(&m, z));
  ck_assert_ptr_nonnull(m->dl_tensor.data);
  ck_assert_int_eq(m->dl_tensor.ndim, 2);
  ck_assert_int_eq(m->dl_tensor.strides[0], 3); /* materialised: contiguous */
  ck_assert_int_eq(m->dl_tensor.strides[1], 1);
  for (i = 0; i < 6; ++i) ck_assert(((const float *)m->dl_tensor.data)[i] == 0.0f);
  m->deleter(m);
  CT_OK(ctorch_tensor_copy_to(out, sizeof out, z));
  for (i = 0; i < 6; ++i) ck_assert(out[i] == 0.0f);
  /* a zero tensor has no memory to point at */
  CT_FAILS(CTORCH_VALUE, ctorch_tensor_data_ptr(&p, z));
  CT_ERROR_HAS("zero tensor");
  ctorch_tensor_free(z);
}
END_TEST

/* set_(source, storage_offset, size, stride): libtorch 1.13 did not count
 * the offset when sizing the result (found by the sweep: a tensor reaching
 * one element past its storage). Refused on every version, as 2.x does. */
START_TEST(set_with_storage_offset_stays_inside_the_storage) {
  ctorch_tensor self = floats(2, 3), source = floats(2, 3);
  const int64_t size[2] = {2, 3}, size_small[2] = {1, 5}, stride[2] = {3, 1};
  const int64_t none[1] = {0};
  float got[5], want[6];
  int i;
  /* [] (a non-NULL pointer of length 0) means contiguous strides, as in PyTorch */
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_set__source_Tensor_storage_offset(self, source, 1, size, 2, none, 0));
  CT_ERROR_HAS("argument 'size'");
  CT_ERROR_HAS("storage has 24");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_set__source_Tensor_storage_offset(self, source, 1, size, 2, stride, 2));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_set__source_Tensor_storage_offset(self, source, -1, size, 2, stride, 2));
  CT_ERROR_HAS("argument 'storage_offset'");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_set__source_Tensor_storage_offset(self, source, 0, size, 2, stride, 1));
  CT_ERROR_HAS("argument 'stride'");
  /* valid: the last five elements of source */
  CT_OK(ctorch_set__source_Tensor_storage_offset(self, source, 1, size_small, 2, none, 0));
  CT_OK(ctorch_tensor_copy_to(got, sizeof got, self));
  CT_OK(ctorch_tensor_copy_to(want, sizeof want, source));
  for (i = 0; i < 5; ++i) ck_assert(got[i] == want[i + 1]);
  ctorch_tensor_free(self);
  ctorch_tensor_free(source);
}
END_TEST

/* lstm.input: libtorch 2.x's oneDNN path read past weights of the wrong
 * count or shape (SIGSEGV, found by the sweep on 2.15.0). */
static ctorch_tensor zeros3(int64_t a, int64_t b, int64_t c) {
  ctorch_tensor t = NULL;
  int64_t sz[3] = {a, b, c};
  size_t n = c ? 3 : (b ? 2 : 1);
  if (n == 1) sz[0] = a;
  CT_OK(ctorch_zeros(&t, sz, n, NULL, NULL, NULL, NULL));
  return t;
}

/* Found by the in-process fuzz_interp. libtorch 1.13 and 2.x
 * zero an MKLDNN tensor as float32 whatever its dtype (a uint8 one was
 * overrun: heap-buffer-overflow); libtorch 1.13 permutes a 0-dim sparse
 * tensor through NULL (SIGSEGV). */
START_TEST(mkldnn_zeros_and_sparse_scalar_permute) {
  const int64_t five[1] = {5};
  const ctorch_layout mk = CTORCH_LAYOUT_MKLDNN, coo = CTORCH_LAYOUT_SPARSE_COO;
  const ctorch_dtype u8 = CTORCH_UINT8, bf16 = CTORCH_BFLOAT16, f32 = CTORCH_FLOAT32;
  ctorch_tensor t = NULL, r = NULL;
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_zeros(&t, five, 1, &u8, &mk, NULL, NULL));
  CT_ERROR_HAS("argument 'layout'");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_zeros(&t, five, 1, &bf16, &mk, NULL, NULL));
  ck_assert_ptr_null(t);
  if (ctorch_empty_memory_format(&t, five, 1, &u8, &mk, NULL, NULL, NULL) == CTORCH_OK) {
    CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_zero_(t));
    CT_ERROR_HAS("argument 'self'");
    CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_new_zeros(&r, t, five, 1, NULL, NULL, NULL, NULL));
    ctorch_tensor_free(t);
    t = NULL;
  }
  CT_OK(ctorch_zeros(&t, five, 1, &f32, &mk, NULL, NULL)); /* float32 is what the kernel writes */
  ctorch_tensor_free(t);
  t = NULL;
  CT_OK(ctorch_zeros(&t, NULL, 0, &f32, &coo, NULL, NULL));
#if CTORCH_TORCH_VERSION_MAJOR < 2
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_permute(&r, t, NULL, 0));
  CT_ERROR_HAS("0-dim sparse");
#else
  CT_OK(ctorch_permute(&r, t, NULL, 0));
  ctorch_tensor_free(r);
#endif
  ctorch_tensor_free(t);
}
END_TEST

START_TEST(lstm_params_must_have_nn_lstm_shapes) {
  /* seq 5, batch 2, input 3, hidden 4, one layer, biases */
  ctorch_tensor x = zeros3(5, 2, 3), hx[2] = {zeros3(1, 2, 4), zeros3(1, 2, 4)};
  ctorch_tensor p[4] = {zeros3(16, 3, 0), zeros3(16, 4, 0), zeros3(16, 0, 0), zeros3(16, 0, 0)};
  ctorch_tensor bad[2] = {floats(2, 3), floats(2, 3)};
  ctorch_tensor o = NULL, h = NULL, c = NULL;
  int64_t sz[3];
  int i;
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_lstm_input(&o, &h, &c, x, hx, 2, bad, 2, 0, 1, 0.0, 0, 0, 0));
  CT_ERROR_HAS("argument 'params'");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_lstm_input(&o, &h, &c, x, hx, 2, p, 4, 0, 1, 0.0, 0, 0, 0));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_lstm_input(&o, &h, &c, x, hx, 1, p, 4, 1, 1, 0.0, 0, 0, 0));
  CT_ERROR_HAS("argument 'hx'");
  ck_assert_ptr_null(o);
  CT_OK(ctorch_lstm_input(&o, &h, &c, x, hx, 2, p, 4, 1, 1, 0.0, 0, 0, 0));
  CT_OK(ctorch_tensor_sizes(sz, 3, o));
  ck_assert(sz[0] == 5 && sz[1] == 2 && sz[2] == 4);
  ctorch_tensor_free(o), ctorch_tensor_free(h), ctorch_tensor_free(c), ctorch_tensor_free(x);
  for (i = 0; i < 2; ++i) ctorch_tensor_free(hx[i]), ctorch_tensor_free(bad[i]);
  for (i = 0; i < 4; ++i) ctorch_tensor_free(p[i]);
}
END_TEST

/* All n floats of t (contiguous copy) are 0. */
static int all_zero(ctorch_tensor t) {
  ctorch_tensor c = NULL;
  float v[64];
  int64_t n = 0, i;
  CT_OK(ctorch_tensor_numel(&n, t));
  ck_assert_int_le(n, 64);
  CT_OK(ctorch_tensor_contiguous(&c, t));
  CT_OK(ctorch_tensor_copy_to(v, sizeof(float) * (size_t)n, c));
  ctorch_tensor_free(c);
  for (i = 0; i < n; ++i)
    if (v[i] != 0.0f) return 0;
  return 1;
}

static ctorch_tensor randn3(ctorch_dtype dt, int64_t a, int64_t b, int64_t c) {
  int64_t sz[3] = {a, b, c};
  ctorch_tensor t = NULL;
  CT_OK(ctorch_randn(&t, sz, 3, &dt, NULL, NULL, NULL));
  return t;
}

static ctorch_tensor zero_tensor(int64_t a, int64_t b) {
  int64_t sz[2] = {a, b};
  ctorch_dtype f32 = CTORCH_FLOAT32;
  ctorch_tensor t = NULL;
  CT_OK(ctorch__efficientzerotensor(&t, sz, 2, &f32, NULL, NULL, NULL));
  return t;
}

/* Calls aten::NAME by name with args (freed here); expects INVALID_ARGUMENT naming arg. */
static void boxed_refused(const char *name, ctorch_value *args, size_t n, const char *arg) {
  ctorch_op op = NULL;
  ctorch_value out = NULL;
  char want[64];
  size_t i;
  CT_OK(ctorch_op_find(&op, name, NULL));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_op_call(&out, op, args, n, NULL, NULL, 0));
  snprintf(want, sizeof want, "ctorch_op_call: argument '%s'", arg);
  CT_ERROR_HAS(want);
  ck_assert_ptr_null(out);
  ctorch_op_free(op);
  for (i = 0; i < n; ++i) ctorch_value_free(args[i]);
}

static ctorch_value vt(ctorch_tensor t) {
  ctorch_value v = NULL;
  CT_OK(ctorch_value_tensor(&v, t));
  return v;
}

/* Found by scripts/sweep --boxed. The _fft_* kernels take dims
 * wrapped and unique, as torch.fft passes them: a negative dim indexes
 * before the sizes (SIGSEGV in r2c and c2r on 1.13 and 2.15; heap-read
 * sizes in c2c on 2.15), a repeated one crashes 2.15's MKL path (SIGSEGV:
 * r2c, dim [1, 1], onesided false). Typed and by name. */
START_TEST(fft_dims_distinct_and_wrapped) {
  const int64_t rep[2] = {1, 1}, neg[2] = {1, -2}, ok[2] = {1, 2}, big[1] = {3};
  ctorch_tensor x = NULL, z = NULL, r = NULL, out = NULL;
  ctorch_value a[4];
  int64_t sz[3];
  CT_OK(ctorch_manual_seed(7));
  x = randn3(CTORCH_FLOAT32, 2, 3, 4);
  z = randn3(CTORCH_COMPLEX64, 2, 3, 4);
  out = randn3(CTORCH_COMPLEX64, 2, 3, 4);
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch__fft_r2c(&r, x, rep, 2, 1, 0));
  CT_ERROR_HAS("ctorch__fft_r2c: argument 'dim'");
  CT_ERROR_HAS("repeated");
  {
    ctorch_tensor x2 = floats(2, 3); /* the sweep's input: SIGSEGV on 2.15 */
    CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch__fft_r2c(&r, x2, rep, 2, 1, 0));
    ctorch_tensor_free(x2);
  }
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch__fft_r2c(&r, x, neg, 2, 0, 1));
  CT_ERROR_HAS("out of range");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch__fft_r2c(&r, x, big, 1, 0, 1));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch__fft_c2c(&r, z, rep, 2, 0, 1));
  CT_ERROR_HAS("ctorch__fft_c2c: argument 'dim'");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch__fft_c2c(&r, z, neg, 2, 0, 1));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch__fft_c2r(&r, z, rep, 2, 0, 4));
  CT_ERROR_HAS("ctorch__fft_c2r: argument 'dim'");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch__fft_c2r(&r, z, neg, 2, 0, 4));
  ck_assert_ptr_null(r);
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch__fft_r2c_out(x, rep, 2, 0, 0, out));
  CT_ERROR_HAS("ctorch__fft_r2c_out: argument 'dim'");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch__fft_c2c_out(z, neg, 2, 0, 1, out));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch__fft_c2r_out(z, rep, 2, 0, 4, x));
  /* by name: the same guard */
  a[0] = vt(x);
  CT_OK(ctorch_value_int_list(&a[1], rep, 2));
  CT_OK(ctorch_value_int(&a[2], 1));
  CT_OK(ctorch_value_bool(&a[3], 0));
  boxed_refused("aten::_fft_r2c", a, 4, "dim");
  a[0] = vt(z);
  CT_OK(ctorch_value_int_list(&a[1], neg, 2));
  CT_OK(ctorch_value_int(&a[2], 0));
  CT_OK(ctorch_value_int(&a[3], 4));
  boxed_refused("aten::_fft_c2r", a, 4, "dim");
  /* distinct, wrapped dims still work */
  CT_OK(ctorch__fft_r2c(&r, x, ok, 2, 0, 1));
  CT_OK(ctorch_tensor_sizes(sz, 3, r));
  ck_assert(sz[0] == 2 && sz[1] == 3 && sz[2] == 3);
  ctorch_tensor_free(r);
  r = NULL;
  CT_OK(ctorch__fft_c2c(&r, z, ok, 2, 0, 1));
  ctorch_tensor_free(r);
  ctorch_tensor_free(x);
  ctorch_tensor_free(z);
  ctorch_tensor_free(out);
}
END_TEST

/* Found by scripts/sweep --boxed. The fused weight-norm
 * kernel reads v and g as memory without the ZeroTensor fallback: a zero
 * tensor g aborted in glibc's checking malloc ("memory corruption",
 * _weight_norm, 1.13 and 2.15) and _weight_norm_interface returned the
 * heap's bytes. Refused where fused; a materialised zero g gives the right
 * answer, zeros; the unfused path (a middle dim) handles zero tensors. */
START_TEST(weight_norm_refuses_zero_tensors_where_fused) {
  ctorch_tensor v = floats(2, 3), gz = zero_tensor(2, 1), gz_last = zero_tensor(1, 3), vz = zero_tensor(2, 3);
  ctorch_tensor g = vec(2, 1.5f), g3 = NULL, v3 = NULL, g_mat = NULL, r = NULL, r1 = NULL;
  const int64_t g3_sz[3] = {1, 3, 1}, v3_sz[3] = {2, 3, 4};
  ctorch_dtype f32 = CTORCH_FLOAT32;
  ctorch_value a[3];
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch__weight_norm(&r, v, gz, 0));
  CT_ERROR_HAS("ctorch__weight_norm: argument 'g'");
  CT_ERROR_HAS("zero tensor");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch__weight_norm(&r, v, gz_last, 1));
  CT_ERROR_HAS("argument 'g'");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch__weight_norm(&r, vz, g, 0));
  CT_ERROR_HAS("argument 'v'");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch__weight_norm_interface(&r, &r1, v, gz, 0));
  CT_ERROR_HAS("ctorch__weight_norm_interface: argument 'g'");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch__weight_norm_interface(&r, &r1, vz, g, 0));
  CT_ERROR_HAS("argument 'v'");
  ck_assert_ptr_null(r);
  ck_assert_ptr_null(r1);
  /* by name */
  a[0] = vt(v);
  a[1] = vt(gz);
  CT_OK(ctorch_value_int(&a[2], 0));
  boxed_refused("aten::_weight_norm", a, 3, "g");
  a[0] = vt(v);
  a[1] = vt(gz);
  CT_OK(ctorch_value_int(&a[2], 0));
  boxed_refused("aten::_weight_norm_interface", a, 3, "g");
  /* the right answer with g materialised: v * 0 / ||v|| = 0 */
  CT_OK(ctorch_clone(&g_mat, gz, NULL));
  CT_OK(ctorch__weight_norm(&r, v, g_mat, 0));
  ck_assert(all_zero(r));
  ctorch_tensor_free(r);
  r = NULL;
  /* unfused (dim 1 of 3): zero tensors are handled by the ops it composes */
  CT_OK(ctorch__efficientzerotensor(&g3, g3_sz, 3, &f32, NULL, NULL, NULL));
  CT_OK(ctorch_randn(&v3, v3_sz, 3, &f32, NULL, NULL, NULL));
  CT_OK(ctorch__weight_norm(&r, v3, g3, 1));
  ck_assert(all_zero(r));
  ctorch_tensor_free(r);
  ctorch_tensor_free(g3), ctorch_tensor_free(v3), ctorch_tensor_free(g_mat), ctorch_tensor_free(g);
  ctorch_tensor_free(v), ctorch_tensor_free(gz), ctorch_tensor_free(gz_last), ctorch_tensor_free(vz);
}
END_TEST

/* Found by a probe of ResNet-50's weight layouts: oneDNN divides by the
 * stride while choosing a conv weight's layout (SIGFPE on 1.13 and 2.15,
 * PyTorch's own Python crashes the same way). Typed and by name; a valid
 * call still reorders. */
static ctorch_status reorder2d(ctorch_tensor *r, ctorch_tensor w, const int64_t *stride, size_t stride_len) {
  static const int64_t pad[2] = {0, 0}, dil[2] = {1, 1};
#if CTORCH_TORCH_VERSION_MAJOR >= 2
  return ctorch_mkldnn_reorder_conv2d_weight(r, w, pad, 2, stride, stride_len, dil, 2, 1, NULL, 0);
#else
  return ctorch_mkldnn_reorder_conv2d_weight(r, w, pad, 2, stride, stride_len, dil, 2, 1);
#endif
}

START_TEST(mkldnn_weight_reorder_needs_a_positive_stride) {
  static const int64_t zero[2] = {0, 0}, one[2] = {1, 1}, sizes[4] = {8, 8, 1, 1};
  float v[64];
  ctorch_tensor dense = NULL, w = NULL, r = NULL, back = NULL;
  ctorch_value a[5];
  int64_t shape[4], nd = 0;
  size_t i;
  for (i = 0; i < 64; ++i) v[i] = (float)i;
  dense = ct_floats(v, sizes, 4);
  CT_OK(ctorch_to_mkldnn(&w, dense, NULL));  /* both libtorch builds tested have oneDNN */
  CT_FAILS(CTORCH_INVALID_ARGUMENT, reorder2d(&r, w, zero, 2));
  CT_ERROR_HAS("ctorch_mkldnn_reorder_conv2d_weight: argument 'stride'");
  ck_assert_ptr_null(r);
  /* by name */
  a[0] = vt(w);
  CT_OK(ctorch_value_int_list(&a[1], zero, 2));
  CT_OK(ctorch_value_int_list(&a[2], zero, 2));
  CT_OK(ctorch_value_int_list(&a[3], one, 2));
  CT_OK(ctorch_value_int(&a[4], 1));
  boxed_refused("aten::mkldnn_reorder_conv2d_weight", a, 5, "stride");
  /* one value is expanded to both dims (1.13's kernel read a one-value list
   * past its end: SIGFPE) */
  {
    ctorch_op op = NULL;
    ctorch_value out = NULL;
    a[0] = vt(w);
    CT_OK(ctorch_value_int_list(&a[1], zero, 1));
    CT_OK(ctorch_value_int_list(&a[2], one, 1));
    CT_OK(ctorch_value_int_list(&a[3], one, 1));
    CT_OK(ctorch_value_int(&a[4], 1));
    CT_OK(ctorch_op_find(&op, "aten::mkldnn_reorder_conv2d_weight", NULL));
    CT_OK(ctorch_op_call(&out, op, a, 5, NULL, NULL, 0));
    ctorch_value_free(out);
    ctorch_op_free(op);
    for (i = 0; i < 5; ++i) ctorch_value_free(a[i]);
  }
  /* valid: the same values back, whatever the layout */
  CT_OK(reorder2d(&r, w, one, 2));
#if CTORCH_TORCH_VERSION_MAJOR >= 2
  CT_OK(ctorch_to_dense(&back, r, NULL, NULL));
#else
  CT_OK(ctorch_to_dense(&back, r, NULL));
#endif
  CT_OK(ctorch_tensor_dim(&nd, back));
  ck_assert_int_eq(nd, 4);
  CT_OK(ctorch_tensor_sizes(shape, 4, back));
  ck_assert_int_eq(shape[0], 8);
  {
    float got[64];
    CT_OK(ctorch_tensor_copy_to(got, sizeof got, back));
    for (i = 0; i < 64; ++i) ck_assert_float_eq(got[i], v[i]);
  }
  ctorch_tensor_free(back), ctorch_tensor_free(r), ctorch_tensor_free(w), ctorch_tensor_free(dense);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("guards");
  TCase *tc = tcase_create("issue15");
  tcase_add_test(tc, native_batch_norm_in_eval_mode_needs_running_stats);
  tcase_add_test(tc, batch_norm_backward_needs_its_statistics);
  tcase_add_test(tc, rnn_cells_check_weight_shapes_and_hidden_state);
  tcase_add_test(tc, zero_tensor_has_memory_when_exported);
  tcase_add_test(tc, set_with_storage_offset_stays_inside_the_storage);
  tcase_add_test(tc, lstm_params_must_have_nn_lstm_shapes);
  tcase_add_test(tc, mkldnn_zeros_and_sparse_scalar_permute);
  tcase_add_test(tc, fft_dims_distinct_and_wrapped);
  tcase_add_test(tc, weight_norm_refuses_zero_tensors_where_fused);
  tcase_add_test(tc, mkldnn_weight_reorder_needs_a_positive_stride);
  suite_add_tcase(s, tc);
  return s;
}

CTORCH_CHECK_MAIN()
