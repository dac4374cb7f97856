/* shim/transforms: each transform's effect where it can be told without
 * drawing (or whatever was drawn), determinism per seed, composition and
 * reference counting, and each failure (status and the argument named).
 * The bit-for-bit comparison with torch/torchvision is
 * transforms_vs_torch.py. */
#include <math.h>

#include "check_main.h"

#define N 4
#define C 3
#define H 6
#define W 5

static float X[N][C][H][W];

static ctorch_tensor batch(void) {
  const int64_t sz[4] = {N, C, H, W};
  int i, c, h, w;
  for (i = 0; i < N; ++i)
    for (c = 0; c < C; ++c)
      for (h = 0; h < H; ++h)
        for (w = 0; w < W; ++w) X[i][c][h][w] = (float)(i * 1000 + c * 100 + h * 10 + w) / 7.0f;
  return ct_floats(&X[0][0][0][0], sz, 4);
}

static ctorch_tensor dvec(const double *v, int64_t n) {
  ctorch_tensor t = NULL;
  CT_OK(ctorch_tensor_from_data(&t, v, (size_t)n * sizeof(double), &n, 1, CTORCH_FLOAT64));
  return t;
}

static void shape_is(ctorch_tensor t, int64_t n, int64_t c, int64_t h, int64_t w) {
  int64_t sz[4], d;
  CT_OK(ctorch_tensor_dim(&d, t));
  ck_assert_int_eq(d, 4);
  CT_OK(ctorch_tensor_sizes(sz, 4, t));
  ck_assert_int_eq(sz[0], n);
  ck_assert_int_eq(sz[1], c);
  ck_assert_int_eq(sz[2], h);
  ck_assert_int_eq(sz[3], w);
}

static ctorch_tensor apply(ctorch_transform t, ctorch_tensor b, uint64_t seed) {
  ctorch_generator g = NULL;
  ctorch_device cpu = {CTORCH_DEVICE_CPU, -1};
  ctorch_tensor out = NULL;
  CT_OK(ctorch_generator_new(&g, cpu, seed));
  CT_OK(ctorch_transform_apply(&out, t, b, g));
  ctorch_generator_free(g);
  return out;
}

START_TEST(test_normalize) {
  const double m[C] = {0.5, -1.25, 3.1}, s[C] = {0.2, 2.0, 0.7};
  ctorch_tensor b = batch(), mt = dvec(m, C), st = dvec(s, C), out;
  ctorch_transform t = NULL;
  static float got[N][C][H][W];
  int i, c, h, w;
  CT_OK(ctorch_transform_normalize(&t, mt, st));
  out = apply(t, b, 1);
  shape_is(out, N, C, H, W);
  CT_OK(ctorch_tensor_copy_to(got, sizeof got, out));
  for (i = 0; i < N; ++i)
    for (c = 0; c < C; ++c)
      for (h = 0; h < H; ++h)
        for (w = 0; w < W; ++w) {
          float want = (X[i][c][h][w] - (float)m[c]) / (float)s[c];
          ck_assert_msg(got[i][c][h][w] == want, "(%d,%d,%d,%d): %.9g vs %.9g", i, c, h, w, got[i][c][h][w], want);
        }
  ctorch_tensor_free(out);
  ctorch_transform_free(t);
  ctorch_tensor_free(b);
  ctorch_tensor_free(mt);
  ctorch_tensor_free(st);
}
END_TEST

START_TEST(test_crop_pad_and_window) {
  const int64_t pad4[4] = {1, 2, 3, 0}; /* left, top, right, bottom */
  ctorch_tensor b = batch(), out;
  ctorch_transform t = NULL;
  static float got[N][C][H + 2][W + 4];
  int i, c, h, w, di, dj, found;
  /* crop = padded size: no draw, the padded image itself */
  CT_OK(ctorch_transform_random_crop(&t, H + 2, W + 4, pad4, 4, -3.5));
  out = apply(t, b, 7);
  shape_is(out, N, C, H + 2, W + 4);
  CT_OK(ctorch_tensor_copy_to(got, sizeof got, out));
  for (i = 0; i < N; ++i)
    for (c = 0; c < C; ++c)
      for (h = 0; h < H + 2; ++h)
        for (w = 0; w < W + 4; ++w) {
          int ih = h - 2, iw = w - 1;
          float want = (ih >= 0 && ih < H && iw >= 0 && iw < W) ? X[i][c][ih][iw] : -3.5f;
          ck_assert(got[i][c][h][w] == want);
        }
  ctorch_tensor_free(out);
  ctorch_transform_free(t);
  /* a 3x3 crop without padding: each image is some 3x3 window of itself */
  {
    float small[N][C][3][3];
    CT_OK(ctorch_transform_random_crop(&t, 3, 3, NULL, 0, 0));
    out = apply(t, b, 11);
    shape_is(out, N, C, 3, 3);
    CT_OK(ctorch_tensor_copy_to(small, sizeof small, out));
    for (i = 0; i < N; ++i) {
      found = 0;
      for (di = 0; di <= H - 3 && !found; ++di)
        for (dj = 0; dj <= W - 3 && !found; ++dj) {
          int ok = 1;
          for (c = 0; c < C; ++c)
            for (h = 0; h < 3; ++h)
              for (w = 0; w < 3; ++w) ok &= small[i][c][h][w] == X[i][c][di + h][dj + w];
          found = ok;
        }
      ck_assert_msg(found, "image %d is no window of its input", i);
    }
    ctorch_tensor_free(out);
    ctorch_transform_free(t);
  }
  ctorch_tensor_free(b);
}
END_TEST

START_TEST(test_flip_and_compose) {
  ctorch_tensor b = batch(), out;
  ctorch_transform f1 = NULL, f0 = NULL, both = NULL, none = NULL, nested = NULL, parts[2];
  static float got[N][C][H][W];
  int i, c, h, w;
  CT_OK(ctorch_transform_random_horizontal_flip(&f1, 1.0));
  CT_OK(ctorch_transform_random_horizontal_flip(&f0, 0.0));
  out = apply(f1, b, 3);
  CT_OK(ctorch_tensor_copy_to(got, sizeof got, out));
  for (i = 0; i < N; ++i)
    for (c = 0; c < C; ++c)
      for (h = 0; h < H; ++h)
        for (w = 0; w < W; ++w) ck_assert(got[i][c][h][w] == X[i][c][h][W - 1 - w]);
  ctorch_tensor_free(out);
  /* flip twice = identity; the compose keeps f1 alive after the caller's free */
  parts[0] = f1;
  parts[1] = f1;
  CT_OK(ctorch_transform_compose(&both, parts, 2));
  ctorch_transform_free(f1);
  parts[0] = both;
  parts[1] = f0;
  CT_OK(ctorch_transform_compose(&nested, parts, 2));
  ctorch_transform_free(both);
  CT_OK(ctorch_transform_compose(&none, NULL, 0));
  out = apply(nested, b, 5);
  CT_OK(ctorch_tensor_copy_to(got, sizeof got, out));
  ck_assert(memcmp(got, X, sizeof got) == 0);
  ctorch_tensor_free(out);
  out = apply(none, b, 5);
  CT_OK(ctorch_tensor_copy_to(got, sizeof got, out));
  ck_assert(memcmp(got, X, sizeof got) == 0);
  ctorch_tensor_free(out);
  ctorch_transform_free(nested);
  ctorch_transform_free(none);
  ctorch_transform_free(f0);
  ctorch_transform_free(NULL);
  ctorch_tensor_free(b);
}
END_TEST

START_TEST(test_resized_crop_and_seeds) {
  const int64_t sz[4] = {2, 1, 8, 8};
  static uint8_t u8[2 * 8 * 8];
  ctorch_tensor b = batch(), u = NULL, o1, o2, o3, e = NULL, empty_out = NULL;
  ctorch_transform t = NULL, whole = NULL;
  ctorch_dtype dt;
  static float a1[N][C][7][9], a2[N][C][7][9], a3[N][C][7][9];
  int i, differs;
  CT_OK(ctorch_transform_random_resized_crop(&t, 7, 9, 0.08, 1.0, 0.75, 4.0 / 3.0));
  o1 = apply(t, b, 42);
  o2 = apply(t, b, 42);
  o3 = apply(t, b, 43);
  shape_is(o1, N, C, 7, 9);
  CT_OK(ctorch_tensor_copy_to(a1, sizeof a1, o1));
  CT_OK(ctorch_tensor_copy_to(a2, sizeof a2, o2));
  CT_OK(ctorch_tensor_copy_to(a3, sizeof a3, o3));
  ck_assert(memcmp(a1, a2, sizeof a1) == 0);     /* same seed, same batch */
  differs = memcmp(a1, a3, sizeof a1) != 0;      /* another seed: other crops */
  ck_assert(differs);
  ctorch_tensor_free(o1);
  ctorch_tensor_free(o2);
  ctorch_tensor_free(o3);
  /* UINT8 stays UINT8; scale 1 and the image's own ratio: the whole image */
  for (i = 0; i < (int)sizeof u8; ++i) u8[i] = (uint8_t)(i * 37);
  CT_OK(ctorch_tensor_from_data(&u, u8, sizeof u8, sz, 4, CTORCH_UINT8));
  CT_OK(ctorch_transform_random_resized_crop(&whole, 8, 8, 1.0, 1.0, 1.0, 1.0));
  o1 = apply(whole, u, 9);
  CT_OK(ctorch_tensor_dtype(&dt, o1));
  ck_assert_int_eq(dt, CTORCH_UINT8);
  {
    uint8_t back[sizeof u8];
    CT_OK(ctorch_tensor_copy_to(back, sizeof back, o1));
    ck_assert(memcmp(back, u8, sizeof u8) == 0);
  }
  ctorch_tensor_free(o1);
  o1 = apply(t, u, 9);
  shape_is(o1, 2, 1, 7, 9);
  ctorch_tensor_free(o1);
  /* an empty batch: the output's shape, no draws needed */
  {
    const int64_t z[4] = {0, 3, 10, 10};
    CT_OK(ctorch_tensor_from_data(&e, NULL, 0, z, 4, CTORCH_FLOAT32));
    empty_out = apply(t, e, 1);
    shape_is(empty_out, 0, 3, 7, 9);
  }
  ctorch_tensor_free(empty_out);
  ctorch_tensor_free(e);
  ctorch_transform_free(t);
  ctorch_transform_free(whole);
  ctorch_tensor_free(u);
  ctorch_tensor_free(b);
}
END_TEST

START_TEST(test_failures) {
  const double m3[3] = {0, 0, 0}, s3[3] = {1, 1, 1}, s0[3] = {1, 0, 1}, nan3[3] = {0, NAN, 0}, tiny[3] = {1e-50, 1, 1};
  const int64_t pad3[3] = {1, 1, 1}, padneg[1] = {-1}, sz3[3] = {3, 4, 4}, one = 1;
  float zeros[48] = {0};
  ctorch_tensor b = batch(), mt = dvec(m3, 3), st = dvec(s3, 3), s0t = dvec(s0, 3), nant = dvec(nan3, 3),
                m2 = dvec(m3, 2), tinyt = dvec(tiny, 3), r3 = ct_floats(zeros, sz3, 3), out = (ctorch_tensor)1, u = NULL;
  ctorch_transform t = (ctorch_transform)1, ok = NULL, list[2] = {NULL, NULL};
  uint8_t ub = 0;
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_transform_normalize(NULL, mt, st));
  CT_ERROR_HAS("ctorch_transform_normalize");
  CT_ERROR_HAS("out");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_transform_normalize(&t, NULL, st));
  ck_assert_ptr_null(t);
  CT_ERROR_HAS("mean");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_transform_normalize(&t, mt, s0t));
  CT_ERROR_HAS("'std': entry 1 is 0");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_transform_normalize(&t, nant, st));
  CT_ERROR_HAS("'mean': entry 1 is NaN");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_transform_normalize(&t, m2, st));
  CT_ERROR_HAS("'std'");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_transform_normalize(&t, r3, st));
  CT_ERROR_HAS("'mean': expected a 1-D tensor");

  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_transform_random_crop(&t, 0, 3, NULL, 0, 0));
  CT_ERROR_HAS("ctorch_transform_random_crop");
  CT_ERROR_HAS("height");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_transform_random_crop(&t, 3, -1, NULL, 0, 0));
  CT_ERROR_HAS("width");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_transform_random_crop(&t, 3, 3, pad3, 3, 0));
  CT_ERROR_HAS("padding");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_transform_random_crop(&t, 3, 3, padneg, 1, 0));
  CT_ERROR_HAS("padding");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_transform_random_crop(&t, 3, 3, NULL, 2, 0));
  CT_ERROR_HAS("padding");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_transform_random_crop(&t, 3, 3, NULL, 0, NAN));
  CT_ERROR_HAS("fill");

  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_transform_random_horizontal_flip(&t, 1.5));
  CT_ERROR_HAS("ctorch_transform_random_horizontal_flip");
  CT_ERROR_HAS("'p'");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_transform_random_horizontal_flip(&t, NAN));
  CT_ERROR_HAS("'p'");

  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_transform_random_resized_crop(&t, 8, 8, 0.0, 1.0, 0.75, 1.3));
  CT_ERROR_HAS("ctorch_transform_random_resized_crop");
  CT_ERROR_HAS("scale_min");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_transform_random_resized_crop(&t, 8, 8, 0.5, 0.4, 0.75, 1.3));
  CT_ERROR_HAS("scale_max");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_transform_random_resized_crop(&t, 8, 8, 0.5, 1.0, NAN, 1.3));
  CT_ERROR_HAS("ratio_min");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_transform_random_resized_crop(&t, 8, 8, 0.5, 1.0, 2.0, 1.0));
  CT_ERROR_HAS("ratio_max");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_transform_random_resized_crop(&t, 8, 0, 0.5, 1.0, 0.5, 1.0));
  CT_ERROR_HAS("width");

  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_transform_compose(&t, list, 2));
  CT_ERROR_HAS("ctorch_transform_compose");
  CT_ERROR_HAS("'ts': entry 0 is NULL");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_transform_compose(&t, NULL, 1));
  CT_ERROR_HAS("ts");

  /* apply: handles, rank, and each transform's check against the batch */
  CT_OK(ctorch_transform_normalize(&ok, mt, st));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_transform_apply(&out, NULL, b, NULL));
  ck_assert_ptr_null(out);
  CT_ERROR_HAS("ctorch_transform_apply");
  CT_ERROR_HAS("'t'");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_transform_apply(&out, ok, NULL, NULL));
  CT_ERROR_HAS("batch");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_transform_apply(NULL, ok, b, NULL));
  CT_ERROR_HAS("out");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_transform_apply(&out, ok, r3, NULL));
  CT_ERROR_HAS("'batch': expected [N, C, H, W], got 3 dimensions");
  CT_OK(ctorch_tensor_from_data(&u, &ub, 1, (const int64_t[]){1, 1, 1, 1}, 4, CTORCH_UINT8));
  CT_FAILS(CTORCH_TYPE, ctorch_transform_apply(&out, ok, u, NULL));
  CT_ERROR_HAS("normalize needs a floating point batch");
  ctorch_transform_free(ok);
  {
    const double m2v[2] = {0, 0}, s2v[2] = {1, 1};
    ctorch_tensor a = dvec(m2v, 2), s = dvec(s2v, 2);
    CT_OK(ctorch_transform_normalize(&ok, a, s));
    CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_transform_apply(&out, ok, b, NULL));
    CT_ERROR_HAS("'mean' of normalize: has 2 entries, the batch 3 channels");
    ctorch_transform_free(ok);
    ctorch_tensor_free(a);
    ctorch_tensor_free(s);
  }
  CT_OK(ctorch_transform_normalize(&ok, mt, tinyt)); /* 1e-50 is 0 in float32 */
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_transform_apply(&out, ok, b, NULL));
  CT_ERROR_HAS("'std' of normalize");
  ctorch_transform_free(ok);
  CT_OK(ctorch_transform_random_crop(&ok, H + 3, W, &one, 1, 0)); /* padded height H + 2 */
  CT_FAILS(CTORCH_VALUE, ctorch_transform_apply(&out, ok, b, NULL));
  CT_ERROR_HAS("'height' of random_crop");
  ctorch_transform_free(ok);
  ck_assert_ptr_null(out);
  ctorch_tensor_free(u);
  ctorch_tensor_free(b);
  ctorch_tensor_free(mt);
  ctorch_tensor_free(st);
  ctorch_tensor_free(s0t);
  ctorch_tensor_free(nant);
  ctorch_tensor_free(m2);
  ctorch_tensor_free(tinyt);
  ctorch_tensor_free(r3);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("transforms");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_normalize);
  tcase_add_test(tc, test_crop_pad_and_window);
  tcase_add_test(tc, test_flip_and_compose);
  tcase_add_test(tc, test_resized_crop_and_seeds);
  tcase_add_test(tc, test_failures);
  suite_add_tcase(s, tc);
  return s;
}

CTORCH_CHECK_MAIN()
