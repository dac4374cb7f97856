/* Regression tests for defects found while hardening ctorch (fuzzing,
 * sanitizers, probing libtorch's edge cases). Each test names the defect it
 * pins down; see docs/guarantees.md. Inputs found by the fuzzers are
 * replayed separately (harden_replay_*). */
#include <dlpack/dlpack.h>
#include <stdint.h>
#include <unistd.h>

#include "check_main.h"
#include "dlpack_producer.h"

static int g_released;
static void count_release(void *ctx) {
  (void)ctx;
  ++g_released;
}

/* Defect: a quantized dtype over raw memory built a tensor without a
 * quantizer; printing one made by from_blob dereferenced NULL inside
 * libtorch (SEGV in dequantize_quantized). Now rejected up front. */
START_TEST(quantized_dtypes_from_raw_memory_are_rejected) {
  static unsigned char buf[64];
  const int64_t sizes[2] = {2, 3};
  const ctorch_dtype q[] = {CTORCH_QINT8, CTORCH_QUINT8, CTORCH_QINT32, CTORCH_QUINT4X2, CTORCH_QUINT2X4};
  size_t i;
  for (i = 0; i < sizeof q / sizeof q[0]; ++i) {
    ctorch_tensor t = (ctorch_tensor)1;
    size_t isz = 0;
    CT_OK(ctorch_dtype_size(&isz, q[i]));
    CT_FAILS(CTORCH_TYPE, ctorch_tensor_from_data(&t, buf, 6 * isz, sizes, 2, q[i]));
    ck_assert_ptr_null(t);
    CT_ERROR_HAS("ctorch_tensor_from_data");
    CT_ERROR_HAS("quantized");
    g_released = 0;
    t = (ctorch_tensor)1;
    CT_FAILS(CTORCH_TYPE,
             ctorch_tensor_from_blob(&t, buf, sizes, NULL, 2, q[i], ctorch_device_cpu(), count_release, NULL));
    ck_assert_ptr_null(t);
    ck_assert_int_eq(g_released, 0); /* on failure the caller keeps the memory */
    CT_ERROR_HAS("dtype");
  }
  /* the same bytes as uint8 are fine */
  {
    ctorch_tensor t = NULL;
    char *s = NULL;
    CT_OK(ctorch_tensor_from_blob(&t, buf, sizes, NULL, 2, CTORCH_UINT8, ctorch_device_cpu(), NULL, NULL));
    CT_OK(ctorch_tensor_to_string(&s, t));
    ctorch_string_free(s);
    ctorch_tensor_free(t);
  }
}
END_TEST

/* Defect: element counts between 2^63 and 2^64 passed ctorch's uint64
 * checks but overflow libtorch's int64 numel. */
START_TEST(element_counts_beyond_int64_are_rejected) {
  static unsigned char buf[16];
  const int64_t sizes[3] = {(int64_t)1 << 31, (int64_t)1 << 31, 2}; /* 2^63 elements */
  const int64_t zero[3] = {0, 0, 0};
  ctorch_tensor t = NULL;
  g_released = 0;
  CT_FAILS(CTORCH_INVALID_ARGUMENT,
           ctorch_tensor_from_blob(&t, buf, sizes, zero, 3, CTORCH_UINT8, ctorch_device_cpu(), count_release, NULL));
  ck_assert_ptr_null(t);
  CT_ERROR_HAS("overflows");
  ck_assert_int_eq(g_released, 0);
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_tensor_from_data(&t, buf, 0, sizes, 3, CTORCH_UINT8));
  ck_assert_ptr_null(t);
}
END_TEST

/* Defect: DLPack import multiplied contiguous strides in int64 without an
 * overflow check (signed overflow, UB) for shapes whose element count
 * exceeds int64, and summed stride spans unchecked. */
START_TEST(dlpack_shapes_that_overflow_are_rejected) {
  static unsigned char buf[64];
  int64_t shape2[2] = {(int64_t)1 << 32, (int64_t)1 << 31};
  int64_t shape3[3] = {3, 3, 3};
  int64_t strides3[3] = {(int64_t)1 << 61, (int64_t)1 << 61, (int64_t)1 << 61};
  int64_t shape_empty[3] = {0, (int64_t)1 << 40, (int64_t)1 << 40};
  Producer p;
  DLManagedTensor *m = &p.m;
  ctorch_tensor t = NULL;
  producer_init(&p, buf, kDLInt, 8, 2, shape2, NULL, 0); /* 2^63 elements */
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_from_dlpack(&t, m));
  CT_ERROR_HAS("overflows");
  ck_assert_ptr_null(t);

  m->dl_tensor.ndim = 3;
  m->dl_tensor.shape = shape3;
  m->dl_tensor.strides = strides3; /* each span fits, their sum does not */
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_from_dlpack(&t, m));
  CT_ERROR_HAS("overflow");

  m->dl_tensor.strides = NULL;
  m->dl_tensor.shape = shape_empty; /* no elements, but contiguous strides overflow */
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_from_dlpack(&t, m));
  ck_assert_int_eq(p.deleted, 0); /* failures never call the producer's deleter */

  /* a sane import of the same struct still works and releases once */
  shape3[0] = 2;
  shape3[1] = 4;
  shape3[2] = 8;
  m->dl_tensor.shape = shape3;
  CT_OK(ctorch_from_dlpack(&t, m));
  ctorch_tensor_free(t);
  ck_assert_int_eq(p.deleted, 1);
}
END_TEST

/* Defect: a misaligned data pointer (DLPack byte_offset 35 for complex128,
 * found by fuzz_dlpack) crashed libtorch's vectorised copy in clone. Both
 * zero-copy entry points now require element-size alignment. */
START_TEST(misaligned_zero_copy_data_is_rejected) {
  static double storage[16];
  unsigned char *base = (unsigned char *)storage;
  int64_t shape[1] = {2};
  Producer p;
  ctorch_tensor t = NULL, c = NULL;
  producer_init(&p, base, kDLComplex, 128, 1, shape, NULL, 35);
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_from_dlpack(&t, &p.m));
  CT_ERROR_HAS("aligned");
  ck_assert_int_eq(p.deleted, 0);
  p.m.dl_tensor.byte_offset = 32; /* aligned: imported, cloned, released once */
  CT_OK(ctorch_from_dlpack(&t, &p.m));
  CT_OK(ctorch_tensor_clone(&c, t));
  ctorch_tensor_free(c);
  ctorch_tensor_free(t);
  ck_assert_int_eq(p.deleted, 1);
  g_released = 0;
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_tensor_from_blob(&t, base + 3, shape, NULL, 1, CTORCH_FLOAT32,
                                                          ctorch_device_cpu(), count_release, NULL));
  CT_ERROR_HAS("aligned");
  ck_assert_int_eq(g_released, 0);
  /* one-byte elements are aligned anywhere */
  CT_OK(ctorch_tensor_from_blob(&t, base + 3, shape, NULL, 1, CTORCH_UINT8, ctorch_device_cpu(), NULL, NULL));
  ctorch_tensor_free(t);
}
END_TEST

static void in_tmp(char *buf, size_t n, const char *name) {
  snprintf(buf, n, "/tmp/ctorch-harden-%d-%s", (int)getpid(), name);
}

/* Defect (fuzz_interp): ctorch_save wrote a sparse tensor as a dense one over
 * its empty storage, a file ctorch_load (and torch.load) cannot read; and it
 * dropped the conjugate/negative view bits, saving unconjugated values.
 * ctorch_tensor_copy_to copied the unresolved data of such views too. */
START_TEST(save_and_copy_resolve_views_and_refuse_sparse) {
  const float v[4] = {1, 2, 3, 4};
  const int64_t two[1] = {2};
  ctorch_tensor t = NULL, c = NULL, l = NULL, s = NULL;
  float out[4];
  char path[256];
  const ctorch_layout coo = CTORCH_LAYOUT_SPARSE_COO;
  in_tmp(path, sizeof path, "views.pt");
  CT_OK(ctorch_tensor_from_data(&t, v, sizeof v, two, 1, CTORCH_COMPLEX64));
  CT_OK(ctorch_conj(&c, t));
  CT_OK(ctorch_tensor_copy_to(out, sizeof out, c));
  ck_assert(out[0] == 1 && out[1] == -2 && out[2] == 3 && out[3] == -4);
  CT_OK(ctorch_save(path, c));
  CT_OK(ctorch_load(&l, path));
  memset(out, 0, sizeof out);
  CT_OK(ctorch_tensor_copy_to(out, sizeof out, l));
  ck_assert(out[0] == 1 && out[1] == -2 && out[2] == 3 && out[3] == -4);
  ctorch_tensor_free(l);
  ctorch_tensor_free(c);
  CT_OK(ctorch__neg_view(&c, t));
  {
    const char *names[1] = {"n"};
    ctorch_tensor_dict d = NULL;
    CT_OK(ctorch_save_dict(path, names, &c, 1));
    CT_OK(ctorch_load_dict(&d, path));
    CT_OK(ctorch_tensor_dict_get(&l, d, 0));
    ctorch_tensor_dict_free(d);
  }
  CT_OK(ctorch_tensor_copy_to(out, sizeof out, l));
  ck_assert(out[0] == -1 && out[1] == -2 && out[2] == -3 && out[3] == -4);
  ctorch_tensor_free(l);
  ctorch_tensor_free(c);
  {
    const int64_t sz[3] = {1, 5, 5};
    const ctorch_dtype i32 = CTORCH_INT32;
    CT_OK(ctorch_zeros(&s, sz, 3, &i32, &coo, NULL, NULL));
    CT_FAILS(CTORCH_NOT_IMPLEMENTED, ctorch_save(path, s));
    CT_ERROR_HAS("dense");
  }
  ctorch_tensor_free(s);
  ctorch_tensor_free(t);
  unlink(path);
}
END_TEST

/* Defect (in-process fuzz_interp): a resize_ that grew a
 * storage exported through DLPack freed the buffer the consumer was reading
 * (here ctorch itself, through the imported tensor): heap-use-after-free.
 * The export now shares the buffer, so the consumer keeps the old values. */
/* Defect (in-process fuzz_interp): ctorch_tensor_from_blob
 * stopped checking strides at the first 0 size, so an empty tensor kept a
 * negative stride after it. */
START_TEST(from_blob_checks_every_stride_of_an_empty_tensor) {
  static float buf[8];
  const int64_t sizes[3] = {3, 0, 1}, strides[3] = {0, 1, -2};
  ctorch_tensor t = NULL;
  CT_FAILS(CTORCH_INVALID_ARGUMENT,
           ctorch_tensor_from_blob(&t, buf, sizes, strides, 3, CTORCH_FLOAT32, ctorch_device_cpu(), NULL, NULL));
  CT_ERROR_HAS("stride -2 at dimension 2 is negative");
  ck_assert_ptr_null(t);
}
END_TEST

START_TEST(resize_after_dlpack_export_keeps_the_exported_memory) {
  const float v[2] = {1.5f, -2.5f};
  const int64_t two[1] = {2}, many[1] = {4096};
  ctorch_tensor t = ct_floats(v, two, 1), view = NULL, imported = NULL;
  DLManagedTensor *m = NULL;
  float out[2] = {0, 0};
  CT_OK(ctorch_alias(&view, t));
  CT_OK(ctorch_to_dlpack(&m, t));
  CT_OK(ctorch_from_dlpack(&imported, m));
  CT_OK(ctorch_resize_(view, many, 1, NULL)); /* grows the shared storage: a new buffer */
  CT_OK(ctorch_tensor_copy_to(out, sizeof out, imported));
  ck_assert(out[0] == 1.5f && out[1] == -2.5f);
  ctorch_tensor_free(imported); /* releases the export */
  ctorch_tensor_free(view);
  ctorch_tensor_free(t);
}
END_TEST

/* Defects (in-process fuzz_interp): ctorch_tensor_copy_to read
 * numel bytes of a quint2x4 tensor, which packs 4 elements per byte (heap
 * overflow); ctorch_save wrote an empty tensor with a negative size
 * (libtorch's expand allows [1, 1] -> [0, -2]; PyTorch 2.15 too), a file
 * ctorch_load then refused. */
START_TEST(packed_quantized_copy_and_negative_size_save_are_refused) {
  const int64_t sizes[2] = {4, 4}, one[2] = {1, 1}, neg[2] = {0, -2};
  const ctorch_dtype q = CTORCH_QUINT2X4;
  unsigned char out[64];
  ctorch_tensor t = NULL, e = NULL;
  char path[256];
  if (ctorch_empty_memory_format(&t, sizes, 2, &q, NULL, NULL, NULL, NULL) == CTORCH_OK) {
    CT_FAILS(CTORCH_TYPE, ctorch_tensor_copy_to(out, sizeof out, t));
    CT_ERROR_HAS("packs");
    ctorch_tensor_free(t);
    t = NULL;
  }
  in_tmp(path, sizeof path, "negative.pt");
  CT_OK(ctorch_ones(&t, one, 2, NULL, NULL, NULL, NULL));
  if (ctorch_expand(&e, t, neg, 2, 0) == CTORCH_OK) { /* libtorch's own check may come one day */
    CT_FAILS(CTORCH_VALUE, ctorch_save(path, e));
    CT_ERROR_HAS("negative size");
    ctorch_tensor_free(e);
  }
  ctorch_tensor_free(t);
  unlink(path);
}
END_TEST

/* Defect (fuzz_interp): libtorch 1.13's resize_ sets the new sizes before it
 * fails on a storage that is not resizable, leaving a tensor larger than its
 * memory; the next write went past the caller's buffer (from_blob, DLPack)
 * or to NULL (an empty tensor from ctorch_load). ctorch's zero-copy and
 * loaded storages are now resizable on the CPU: resize_ reallocates. */
START_TEST(resize_of_zero_copy_and_loaded_tensors_reallocates) {
  static float buf[4] = {1, 2, 3, 4};
  const int64_t four[1] = {4}, big[1] = {1 << 16}, empty[3] = {0, 2, 3}, sz[3] = {1, 5, 5};
  const ctorch_dtype i32 = CTORCH_INT32;
  ctorch_tensor t = NULL, e = NULL, l = NULL, s = NULL;
  int64_t n = 0;
  double v = 0;
  char path[256];
  g_released = 0;
  CT_OK(ctorch_tensor_from_blob(&t, buf, four, NULL, 1, CTORCH_FLOAT32, ctorch_device_cpu(), count_release, NULL));
  CT_OK(ctorch_resize_(t, big, 1, NULL));
  CT_OK(ctorch_tensor_numel(&n, t));
  ck_assert_int_eq(n, 1 << 16);
  ck_assert_int_eq(g_released, 1); /* the caller's memory was let go when the storage moved */
  CT_OK(ctorch_fill__Scalar(t, ctorch_scalar_float(0.5)));
  CT_OK(ctorch_sum(&s, t, NULL));
  CT_OK(ctorch_tensor_item_double(&v, s));
  ck_assert(v == 0.5 * (1 << 16));
  ck_assert(buf[0] == 1 && buf[3] == 4); /* not written through */
  ctorch_tensor_free(s);
  ctorch_tensor_free(t);
  ck_assert_int_eq(g_released, 1);

  in_tmp(path, sizeof path, "empty.pt");
  CT_OK(ctorch_zeros(&e, empty, 3, &i32, NULL, NULL, NULL));
  CT_OK(ctorch_save(path, e));
  CT_OK(ctorch_load(&l, path));
  CT_OK(ctorch_resize_(l, sz, 3, NULL));
  CT_OK(ctorch_fill__Scalar(l, ctorch_scalar_int(7)));
  CT_OK(ctorch_save(path, l));
  ctorch_tensor_free(l);
  CT_OK(ctorch_load(&l, path)); /* what it saved, it loads */
  CT_OK(ctorch_sum(&s, l, NULL));
  CT_OK(ctorch_tensor_item_double(&v, s));
  ck_assert(v == 7 * 25);
  ctorch_tensor_free(s);
  ctorch_tensor_free(l);
  ctorch_tensor_free(e);
  unlink(path);

  {
    static double storage[8];
    int64_t shape[1] = {8};
    Producer p;
    producer_init(&p, storage, kDLFloat, 64, 1, shape, NULL, 0);
    CT_OK(ctorch_from_dlpack(&t, &p.m));
    CT_OK(ctorch_resize_(t, big, 1, NULL));
    CT_OK(ctorch_fill__Scalar(t, ctorch_scalar_float(1.0)));
    ck_assert_int_eq(p.deleted, 1);
    ctorch_tensor_free(t);
    ck_assert_int_eq(p.deleted, 1);
  }
}
END_TEST

/* Defect (fuzz_interp), libtorch 1.13: resize_ with a negative size fails
 * but leaves that size on the tensor. The guard belongs in the generated
 * ctorch_resize_ (reported); until it lands, ctorch_to_dlpack at least
 * refuses to describe such a tensor to a consumer. Either way no one sees a
 * negative size through DLPack. */
START_TEST(failed_resize_never_exports_a_negative_size) {
  const int64_t s[2] = {3, 3}, neg[1] = {-2};
  int64_t sizes[2] = {0, 0}, d = 0;
  ctorch_tensor t = NULL;
  DLManagedTensor *m = NULL;
  CT_OK(ctorch_zeros(&t, s, 2, NULL, NULL, NULL, NULL));
  ck_assert_int_ne(ctorch_resize_(t, neg, 1, NULL), CTORCH_OK);
  CT_OK(ctorch_tensor_dim(&d, t));
  CT_OK(ctorch_tensor_sizes(sizes, 2, t));
  if (d == 1 && sizes[0] < 0) {
    CT_FAILS(CTORCH_VALUE, ctorch_to_dlpack(&m, t));
    ck_assert_ptr_null(m);
    CT_ERROR_HAS("negative size");
  } else {
    CT_OK(ctorch_to_dlpack(&m, t)); /* the wrapper restored the tensor */
    ck_assert_int_ge(m->dl_tensor.shape[0], 0);
    m->deleter(m);
  }
  ctorch_tensor_free(t);
}
END_TEST

/* The 2^50-element request of the issue: OUT_OF_MEMORY, and the process
 * goes on allocating normally afterwards. */
/* libtorch 1.13's resize_ writes the new sizes before failing and leaves them
 * behind; the generated wrapper restores them, so the tensor stays usable. */
START_TEST(failed_resize_restores_the_shape) {
  const int64_t shape[2] = {3, 3}, neg[1] = {-2}, huge[1] = {(int64_t)1 << 50};
  const ctorch_dtype f32 = CTORCH_FLOAT32;
  int64_t sizes[2] = {0, 0}, dim = 0;
  double v = 0;
  ctorch_tensor t = NULL, s = NULL;
  CT_OK(ctorch_zeros(&t, shape, 2, &f32, NULL, NULL, NULL));
  ck_assert_int_ne(ctorch_resize_(t, neg, 1, NULL), CTORCH_OK);
  CT_ERROR_HAS("ctorch_resize_");
  CT_OK(ctorch_tensor_dim(&dim, t));
  ck_assert_int_eq(dim, 2);
  CT_OK(ctorch_tensor_sizes(sizes, 2, t));
  ck_assert_int_eq(sizes[0], 3);
  ck_assert_int_eq(sizes[1], 3);
  CT_FAILS(CTORCH_OUT_OF_MEMORY, ctorch_resize_(t, huge, 1, NULL));
  CT_OK(ctorch_tensor_sizes(sizes, 2, t));
  ck_assert_int_eq(sizes[0] * sizes[1], 9);
  CT_OK(ctorch_fill__Scalar(t, ctorch_scalar_float(2.0))); /* writes within its storage */
  CT_OK(ctorch_sum(&s, t, NULL));
  CT_OK(ctorch_tensor_item_double(&v, s));
  ck_assert_double_eq(v, 18.0);
  ctorch_tensor_free(s);
  ctorch_tensor_free(t);
}
END_TEST

START_TEST(absurd_allocation_is_out_of_memory) {
  const int64_t sizes[2] = {(int64_t)1 << 25, (int64_t)1 << 25};
  const int64_t small[1] = {4};
  const ctorch_dtype f = CTORCH_FLOAT32;
  ctorch_tensor t = (ctorch_tensor)1;
  CT_FAILS(CTORCH_OUT_OF_MEMORY, ctorch_empty_memory_format(&t, sizes, 2, &f, NULL, NULL, NULL, NULL));
  ck_assert_ptr_null(t);
  CT_ERROR_HAS("ctorch_empty_memory_format");
  CT_OK(ctorch_ones(&t, small, 1, &f, NULL, NULL, NULL));
  ctorch_tensor_free(t);
}
END_TEST

/* Defect (fuzz_interp under LeakSanitizer): a DLPack export
 * held the whole tensor, autograd metadata included. With y imported from
 * an export of x and requiring grad, x.add_(y) makes x's graph hold y (its
 * AccumulateGrad), y's memory holds the export, and the export held x: a
 * reference cycle, so none of them, nor the producer's buffer, was ever
 * freed. An export now keeps only the memory. */
START_TEST(dlpack_export_does_not_hold_the_autograd_graph) {
  static float buf[3] = {1, 2, 3};
  const int64_t three[1] = {3};
  ctorch_tensor x = NULL, y = NULL;
  DLManagedTensor *m = NULL;
  float out[3] = {0, 0, 0};
  g_released = 0;
  CT_OK(ctorch_tensor_from_blob(&x, buf, three, NULL, 1, CTORCH_FLOAT32, ctorch_device_cpu(), count_release, NULL));
  CT_OK(ctorch_to_dlpack(&m, x));
  CT_OK(ctorch_from_dlpack(&y, m));
  CT_OK(ctorch_requires_grad_(y, 1));
  CT_OK(ctorch_add__Tensor(x, y, ctorch_scalar_int(1)));
  CT_OK(ctorch_tensor_copy_to(out, sizeof out, y)); /* same memory: 1+1, 2+2, 3+3 */
  ck_assert(out[0] == 2.0f && out[1] == 4.0f && out[2] == 6.0f);
  ctorch_tensor_free(x);
  ck_assert_int_eq(g_released, 0); /* y still reads the buffer */
  ctorch_tensor_free(y);
  ck_assert_int_eq(g_released, 1);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("harden_regressions");
  TCase *tc = tcase_create("regressions");
  tcase_add_test(tc, quantized_dtypes_from_raw_memory_are_rejected);
  tcase_add_test(tc, element_counts_beyond_int64_are_rejected);
  tcase_add_test(tc, dlpack_shapes_that_overflow_are_rejected);
  tcase_add_test(tc, misaligned_zero_copy_data_is_rejected);
  tcase_add_test(tc, save_and_copy_resolve_views_and_refuse_sparse);
  tcase_add_test(tc, resize_of_zero_copy_and_loaded_tensors_reallocates);
  tcase_add_test(tc, packed_quantized_copy_and_negative_size_save_are_refused);
  tcase_add_test(tc, resize_after_dlpack_export_keeps_the_exported_memory);
  tcase_add_test(tc, dlpack_export_does_not_hold_the_autograd_graph);
  tcase_add_test(tc, from_blob_checks_every_stride_of_an_empty_tensor);
  tcase_add_test(tc, failed_resize_never_exports_a_negative_size);
  tcase_add_test(tc, failed_resize_restores_the_shape);
  tcase_add_test(tc, absurd_allocation_is_out_of_memory);
  suite_add_tcase(s, tc);
  return s;
}

CTORCH_CHECK_MAIN()
