/* Regressions of the 30-minute random sweep (scripts/sweep --long 1800,
 * docs/guarantees.md section 5): public generated functions whose libtorch
 * kernels crashed, hung or corrupted memory on argument combinations the
 * fixed recipes had not tried. Each must now answer INVALID_ARGUMENT naming
 * the argument (shim/ops/guards.h) and still work on valid
 * input. The inputs are the sweep's own (its failure table names them). */
#include <math.h>
#include <stdint.h>

#include "../check_main.h"

static ctorch_tensor floats(const int64_t *sizes, size_t ndim) {
  float v[256];
  int i;
  for (i = 0; i < 256; ++i) v[i] = (float)((i * 7) % 11) * 0.5f - 2.0f;
  return ct_floats(v, sizes, ndim);
}

static ctorch_tensor int64s(const int64_t *v, int64_t n) {
  ctorch_tensor t = NULL;
  CT_OK(ctorch_tensor_from_data(&t, v, (size_t)n * sizeof(int64_t), &n, 1, CTORCH_INT64));
  return t;
}

static int64_t list_size(ctorch_tensor_list l) {
  size_t n = 0;
  CT_OK(ctorch_tensor_list_size(&n, l));
  return (int64_t)n;
}

START_TEST(as_strided_views_stay_inside_the_storage) {
  int64_t s33[2] = {3, 3}, one = 1, big = INT64_MAX, ok_off = 8, size2[2] = {2, 3}, stride2[2] = {1, 1};
  ctorch_tensor x = floats(s33, 2), v = NULL, one_el = NULL;
  /* libtorch 1.13: the bound check wraps and the view points past the address space (UBSan) */
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_as_strided(&v, x, &one, 1, &one, 1, &big));
  CT_ERROR_HAS("ctorch_as_strided: argument 'size'");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_as_strided_(x, &one, 1, &one, 1, &big));
  CT_ERROR_HAS("reaches past its storage of 36 bytes");
  /* the last element is still a view */
  CT_OK(ctorch_as_strided(&v, x, &one, 1, &one, 1, &ok_off));
  ctorch_tensor_free(v);
  /* _reshape_alias had no check at all: [2,3] strides [1,1] over one element */
  {
    int64_t s1 = 1;
    float f = 1.0f;
    CT_OK(ctorch_tensor_from_data(&one_el, &f, sizeof f, &s1, 1, CTORCH_FLOAT32));
  }
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch__reshape_alias(&v, one_el, size2, 2, stride2, 2));
  CT_ERROR_HAS("argument 'size'");
  CT_OK(ctorch__reshape_alias(&v, x, size2, 2, stride2, 2));
  ctorch_tensor_free(v);
  ctorch_tensor_free(one_el);
  ctorch_tensor_free(x);
}
END_TEST

START_TEST(integer_division_of_the_minimum_by_minus_one_is_refused) {
  int64_t a[3] = {INT64_MIN, 7, -9}, b[3] = {-1, 2, 4}, c[3] = {3, 2, 4};
  ctorch_tensor x = int64s(a, 3), y = int64s(b, 3), z = int64s(c, 3), r = NULL;
  int64_t got[3];
  /* SIGFPE in libtorch 1.13 and 2.x (x86 idiv traps on the overflow) */
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_floor_divide_Scalar(&r, x, ctorch_scalar_int(-1)));
  CT_ERROR_HAS("ctorch_floor_divide_Scalar: argument 'other'");
  CT_ERROR_HAS("INT64_MIN");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_remainder_Tensor(&r, x, y));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_fmod_Scalar(&r, x, ctorch_scalar_int(-1)));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_div_Tensor_mode(&r, x, y, "floor"));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_remainder_Scalar_Tensor(&r, ctorch_scalar_int(INT64_MIN), y));
  /* nothing was changed by the refused in-place form */
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_floor_divide__Scalar(x, ctorch_scalar_int(-1)));
  CT_OK(ctorch_tensor_copy_to(got, sizeof got, x));
  ck_assert(got[0] == INT64_MIN && got[1] == 7 && got[2] == -9);
  /* the same values with other divisors, and true division, still work */
  CT_OK(ctorch_floor_divide(&r, x, z));
  CT_OK(ctorch_tensor_copy_to(got, sizeof got, r));
  ck_assert(got[1] == 3 && got[2] == -3);
  ctorch_tensor_free(r);
  CT_OK(ctorch_div_Tensor_mode(&r, x, y, NULL));
  ctorch_tensor_free(r);
  CT_OK(ctorch_remainder_Tensor(&r, z, y));
  ctorch_tensor_free(r);
  ctorch_tensor_free(x);
  ctorch_tensor_free(y);
  ctorch_tensor_free(z);
}
END_TEST

START_TEST(huge_counts_and_factors_are_refused) {
  int64_t s23[2] = {2, 3}, s234[3] = {2, 3, 4}, w[3] = {2, 3, 4}, one = 1, zero = 0;
  ctorch_tensor x = floats(s23, 2), x3 = floats(s234, 3), wt = floats(w, 3), r = NULL;
  ctorch_tensor_list l = NULL;
  /* 2^31 sections: 16 GiB of handles reserved before any check */
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_tensor_split_sections(&l, x, (int64_t)1 << 31, 0));
  CT_ERROR_HAS("argument 'sections'");
  CT_OK(ctorch_tensor_split_sections(&l, x, 5, 1));
  ck_assert_int_eq(list_size(l), 5);
  ctorch_tensor_list_free(l);
  /* groups 2^62 and factor 2^62 overflowed into a zero divisor (SIGFPE) */
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_conv1d_padding(&r, x3, wt, NULL, &one, 1, "same", &one, 1, (int64_t)1 << 62));
  CT_ERROR_HAS("argument 'groups'");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_conv1d(&r, x3, wt, NULL, &one, 1, &zero, 1, &one, 1, (int64_t)1 << 62));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_pixel_shuffle(&r, x3, (int64_t)1 << 62));
  CT_ERROR_HAS("argument 'upscale_factor'");
  /* matrix_power(INT64_MIN) squared forever */
  {
    int64_t s22[2] = {2, 2};
    float id[4] = {1, 0, 0, 1};
    ctorch_tensor m = ct_floats(id, s22, 2);
    CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_linalg_matrix_power(&r, m, INT64_MIN));
    CT_ERROR_HAS("argument 'n'");
    CT_OK(ctorch_linalg_matrix_power(&r, m, -3));
    ctorch_tensor_free(r);
    ctorch_tensor_free(m);
  }
  ctorch_tensor_free(wt);
  ctorch_tensor_free(x3);
  ctorch_tensor_free(x);
}
END_TEST

START_TEST(pools_check_sizes_samples_and_indices) {
  int64_t s1234[4] = {1, 2, 3, 4}, s20[2] = {2, 0}, s123[3] = {1, 2, 3}, neg[2] = {-1, -1}, k0[3] = {0, 0, 0},
          k2[2] = {2, 2}, o2[2] = {2, 2}, o222[3] = {2, 2, 2}, s1244[4] = {1, 2, 4, 4}, s122[3] = {1, 2, 2};
  ctorch_tensor x = floats(s1234, 4), bad = floats(s20, 2), r0 = NULL, r1 = NULL, x44 = floats(s1244, 4),
                good = NULL, g = NULL;
  /* a negative adaptive output size made out/indices of size -1 or -2^63 */
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch__adaptive_avg_pool2d(&r0, x, neg, 2));
  CT_ERROR_HAS("argument 'output_size'");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_adaptive_max_pool2d(&r0, &r1, x, neg, 2));
  /* fractional pooling read random_samples [2, 0] as [N, C, 3] (SIGSEGV) */
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_fractional_max_pool3d(&r0, &r1, x, k0, 3, o222, 3, bad));
  CT_ERROR_HAS("argument 'kernel_size'");
  {
    int64_t k111[3] = {1, 1, 1};
    CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_fractional_max_pool3d(&r0, &r1, x, k111, 3, o222, 3, bad));
    CT_ERROR_HAS("argument 'random_samples'");
  }
  {
    float u[4] = {0.3f, 0.6f, 0.1f, 0.9f};
    ctorch_tensor samples = ct_floats(u, s122, 3);
    CT_OK(ctorch_fractional_max_pool2d(&r0, &r1, x44, k2, 2, o2, 2, samples));
    /* the backward with the forward's indices works; out-of-plane indices are refused */
    CT_OK(ctorch_ones_like(&g, r0, NULL, NULL, NULL, NULL, NULL));
    CT_OK(ctorch_fractional_max_pool2d_backward(&good, g, x44, k2, 2, o2, 2, r1));
    ctorch_tensor_free(good);
    CT_OK(ctorch_mul__Scalar(r1, ctorch_scalar_int(100)));
    CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_fractional_max_pool2d_backward(&good, g, x44, k2, 2, o2, 2, r1));
    CT_ERROR_HAS("argument 'indices'");
    ctorch_tensor_free(g);
    ctorch_tensor_free(r0);
    ctorch_tensor_free(r1);
    ctorch_tensor_free(samples);
  }
  (void)s123;
  ctorch_tensor_free(x44);
  ctorch_tensor_free(bad);
  ctorch_tensor_free(x);
}
END_TEST

START_TEST(lists_noise_and_zero_tensors) {
  int64_t s23[2] = {2, 3}, s20[2] = {2, 0}, s100[2] = {100, 100};
  ctorch_tensor x = floats(s23, 2), q = NULL, r = NULL, noise = floats(s20, 2), z = NULL;
  ctorch_dtype f32 = CTORCH_FLOAT32;
  ctorch_memory_format cl = CTORCH_MEMORY_CHANNELS_LAST;
  /* cat.out with a quantized out read tensors[0] of an empty list (SIGSEGV at NULL) */
  CT_OK(ctorch_quantize_per_tensor(&q, x, 0.1, 0, CTORCH_QINT8));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_cat_out(NULL, 0, 0, q));
  CT_ERROR_HAS("ctorch_cat_out: argument 'tensors'");
  /* rrelu in training wrote numel(self) factors into a smaller noise */
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_rrelu_with_noise(&r, x, noise, ctorch_scalar_float(0.125),
                                                              ctorch_scalar_float(0.25), 1, NULL));
  CT_ERROR_HAS("argument 'noise'");
  ctorch_tensor_free(noise);
  noise = floats(s23, 2);
  CT_OK(ctorch_rrelu_with_noise(&r, x, noise, ctorch_scalar_float(0.125), ctorch_scalar_float(0.25), 1, NULL));
  ctorch_tensor_free(r);
  /* resize_ of a zero tensor with a memory_format restrided it over NULL */
  CT_OK(ctorch__efficientzerotensor(&z, s23, 2, &f32, NULL, NULL, NULL));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_resize_(z, s100, 2, &cl));
  CT_ERROR_HAS("argument 'self'");
  ctorch_tensor_free(z);
  ctorch_tensor_free(noise);
  ctorch_tensor_free(q);
  ctorch_tensor_free(x);
}
END_TEST

START_TEST(lapack_gets_finite_input) {
  int64_t s33[2] = {3, 3};
  float m[9] = {INFINITY, 1, 2, 3, 4, 5, 6, 7, 8}, n[9] = {NAN, 1, 2, 3, 4, 5, 6, 7, 8}, ok[9] = {2, 1, 0, 1, 3, 1, 0, 1, 4};
  ctorch_tensor a = ct_floats(m, s33, 2), b = ct_floats(n, s33, 2), c = ct_floats(ok, s33, 2), r0 = NULL, r1 = NULL,
                r2 = NULL;
  /* Debian's LAPACK: ?gesdd never returns on an infinity; ?geev corrupts the heap on NaN */
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_linalg_svd(&r0, &r1, &r2, a, 0, NULL));
  CT_ERROR_HAS("ctorch_linalg_svd: argument 'A'");
  CT_ERROR_HAS("NaN or infinity");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_linalg_pinv(&r0, a, 1e-15, 0));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_linalg_eigvals(&r0, b));
  CT_ERROR_HAS("argument 'self'");
  /* finite input still factorises */
  CT_OK(ctorch_linalg_svd(&r0, &r1, &r2, c, 0, NULL));
  ctorch_tensor_free(r0);
  ctorch_tensor_free(r1);
  ctorch_tensor_free(r2);
  CT_OK(ctorch_linalg_eigvals(&r0, c));
  ctorch_tensor_free(r0);
  ctorch_tensor_free(a);
  ctorch_tensor_free(b);
  ctorch_tensor_free(c);
}
END_TEST

/* The second 30-minute run's finds: negative sizes where the tensor is
 * empty (a corrupt result), and tensorinv's unchecked ind. */
START_TEST(negative_sizes_and_tensorinv_index) {
  int64_t s20[2] = {2, 0}, s034[3] = {0, 3, 4}, neg[2] = {-1, -1}, s7[7] = {1, 1, 1, 1, 1, 1, 1}, s22[2] = {2, 2};
  ctorch_tensor e = floats(s20, 2), u = floats(s034, 3), x7 = floats(s7, 7), r = NULL, idx = NULL, m = NULL;
  ctorch_dtype i64 = CTORCH_INT64;
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_unfold(&r, e, 0, -((int64_t)1 << 31) - 1, 1));
  CT_ERROR_HAS("ctorch_unfold: argument 'size'");
  CT_OK(ctorch_zeros(&idx, s034, 3, &i64, NULL, NULL, NULL));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_max_unpool2d_out(u, idx, neg, 2, u));
  CT_ERROR_HAS("argument 'output_size'");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_linalg_tensorinv(&r, x7, INT64_MAX));
  CT_ERROR_HAS("argument 'ind'");
  {
    float id[4] = {2, 0, 0, 4};
    m = ct_floats(id, s22, 2);
    CT_OK(ctorch_linalg_tensorinv(&r, m, 1));
    ctorch_tensor_free(r);
  }
#if CTORCH_TORCH_VERSION_MAJOR >= 2
  {
    /* libtorch 2.15: _lazy_clone of a quantized tensor (SIGSEGV reading the result) */
    ctorch_tensor q = NULL, f = floats(s22, 2);
    CT_OK(ctorch_quantize_per_tensor(&q, f, 0.1, 0, CTORCH_QINT8));
    CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch__lazy_clone(&r, q));
    CT_ERROR_HAS("argument 'self'");
    CT_OK(ctorch__lazy_clone(&r, f));
    ctorch_tensor_free(r);
    ctorch_tensor_free(q);
    ctorch_tensor_free(f);
  }
#endif
  ctorch_tensor_free(m);
  ctorch_tensor_free(idx);
  ctorch_tensor_free(x7);
  ctorch_tensor_free(u);
  ctorch_tensor_free(e);
}
END_TEST

/* Found by the sweep with CUDA tensors (libtorch 2.11, H100); the checks
 * do not depend on the device, so they are asserted here on the CPU. */
START_TEST(cuda_sweep_finds_are_checked_on_every_device) {
  int64_t s3[1] = {3}, s20[2] = {2, 0}, s23[2] = {2, 3}, one = 1, zero2[2] = {0, 0};
  ctorch_tensor v = floats(s3, 1), e = floats(s20, 2), r0 = NULL, r1 = NULL, out = floats(s23, 2);
  /* cudnn_convolution with a 1-d input and short lists: SIGSEGV / free(): invalid pointer on CUDA */
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_cudnn_convolution(&r0, v, v, zero2, 2, &one, 1, &one, 1, 1, 0, 0, 0));
  CT_ERROR_HAS("ctorch_cudnn_convolution: argument 'self'");
  /* zero-size batch-norm statistics: SIGFPE on CUDA */
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_batch_norm_stats(&r0, &r1, e, 1e-5));
  CT_ERROR_HAS("argument 'input'");
  /* batch_norm_elemt with fewer means / invstds than channels: an
   * out-of-bounds read on CUDA (illegal memory access) */
  {
    int64_t s0[1] = {0};
    ctorch_tensor none = floats(s0, 1), in = floats(s23, 2);
    CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_batch_norm_elemt(&r0, in, NULL, NULL, none, in, 1e-5));
    CT_ERROR_HAS("argument 'mean'");
    CT_ERROR_HAS("0 elements for 3 channels");
    CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_batch_norm_elemt(&r0, in, NULL, NULL, in, none, 1e-5));
    CT_ERROR_HAS("argument 'invstd'");
    ctorch_tensor_free(none);
    ctorch_tensor_free(in);
  }
  /* range.out_ keeps working into a CPU out */
  CT_OK(ctorch_range_out_(ctorch_scalar_int(0), ctorch_scalar_int(5), out));
  {
    float got[6];
    int64_t n = 0;
    CT_OK(ctorch_tensor_numel(&n, out));
    ck_assert_int_eq(n, 6);
    CT_OK(ctorch_tensor_copy_to(got, sizeof got, out));
    ck_assert(got[0] == 0.0f && got[5] == 5.0f);
  }
  ctorch_tensor_free(out);
  ctorch_tensor_free(e);
  ctorch_tensor_free(v);
}
END_TEST

/* Found by calling every operator once with int64 [2,3] tensors
 * and n = dimension = num_generated = 7. libtorch's Sobol loops read and
 * write past the 48-byte buffers (heap corruption, returned CTORCH_OK). */
START_TEST(sobol_engine_stays_inside_its_tensors) {
  int64_t v6[6] = {1, 2, 3, 4, 5, 6}, s23[2] = {2, 3}, two = 2, s2303[3] = {2, 30, 3};
  ctorch_tensor q = NULL, st = NULL, r0 = NULL, r1 = NULL, q2 = NULL, st23 = NULL, ltm = NULL, s230 = NULL;
  int64_t sizes[2], nd = 0;
  CT_OK(ctorch_tensor_from_data(&q, v6, sizeof v6, s23, 2, CTORCH_INT64));
  CT_OK(ctorch_tensor_from_data(&st, v6, sizeof v6, s23, 2, CTORCH_INT64));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch__sobol_engine_draw(&r0, &r1, q, 7, st, 7, 7, NULL));
  CT_ERROR_HAS("argument 'quasi'");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch__sobol_engine_ff_(q, 7, st, 7, 7));
  CT_ERROR_HAS("argument 'self'");
  /* used as Python's SobolEngine does: [dimension] quasi, [dimension, 30]
   * state (libtorch 2.x checks that shape itself; 1.13 does not) */
  q2 = int64s(v6, 2);
  CT_OK(ctorch_zeros(&st23, s2303, 2, &(ctorch_dtype){CTORCH_INT64}, NULL, NULL, NULL));
  CT_OK(ctorch__sobol_engine_draw(&r0, &r1, q2, 4, st23, 2, 0, NULL));
  CT_OK(ctorch_tensor_dim(&nd, r0));
  ck_assert_int_eq(nd, 2);
  CT_OK(ctorch_tensor_sizes(sizes, 2, r0));
  ck_assert_int_eq(sizes[0], 4);
  ck_assert_int_eq(sizes[1], 2);
  ctorch_tensor_free(r0);
  ctorch_tensor_free(r1);
  CT_OK(ctorch__sobol_engine_ff_(q2, 4, st23, 2, 0));
  /* draw 2^30 - 1 has 30 trailing one bits: it reads column 30 of a
   * 30-column state (past it on every version: 2.x checks >= 30 only) */
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch__sobol_engine_draw(&r0, &r1, q2, 1, st23, 2, ((int64_t)1 << 30) - 1, NULL));
  CT_ERROR_HAS("argument 'sobolstate'");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch__sobol_engine_ff_(q2, 2, st23, 2, ((int64_t)1 << 30) - 2));
  CT_ERROR_HAS("argument 'sobolstate'");
  CT_OK(ctorch__sobol_engine_ff_(q2, 1, st23, 2, ((int64_t)1 << 30) - 2));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch__sobol_engine_ff_(q2, 2, st23, 2, INT64_MAX));
  CT_ERROR_HAS("overflows");
  /* scramble_ reads [dimension, 30] of self and ltm's row sums */
  CT_OK(ctorch_zeros(&ltm, s2303, 3, &(ctorch_dtype){CTORCH_INT64}, NULL, NULL, NULL));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch__sobol_engine_scramble_(st, ltm, 2));
  CT_ERROR_HAS("argument 'self'");
  CT_OK(ctorch_zeros(&s230, s2303, 2, &(ctorch_dtype){CTORCH_INT64}, NULL, NULL, NULL));
  CT_OK(ctorch__sobol_engine_scramble_(s230, ltm, 2));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch__sobol_engine_scramble_(s230, ltm, 3));
  (void)two;
  ctorch_tensor_free(q);
  ctorch_tensor_free(st);
  ctorch_tensor_free(q2);
  ctorch_tensor_free(st23);
  ctorch_tensor_free(ltm);
  ctorch_tensor_free(s230);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("guards_random");
  TCase *tc = tcase_create("guards_random");
  tcase_add_test(tc, as_strided_views_stay_inside_the_storage);
  tcase_add_test(tc, integer_division_of_the_minimum_by_minus_one_is_refused);
  tcase_add_test(tc, huge_counts_and_factors_are_refused);
  tcase_add_test(tc, pools_check_sizes_samples_and_indices);
  tcase_add_test(tc, lists_noise_and_zero_tensors);
  tcase_add_test(tc, lapack_gets_finite_input);
  tcase_add_test(tc, cuda_sweep_finds_are_checked_on_every_device);
  tcase_add_test(tc, negative_sizes_and_tensorinv_index);
  tcase_add_test(tc, sobol_engine_stays_inside_its_tensors);
  suite_add_tcase(s, tc);
  return s;
}

CTORCH_CHECK_MAIN()
