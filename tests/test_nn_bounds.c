/* The size bound of module construction (shim/nn/bounds.cpp):
 * constructor text whose sizes come to more than ctorch_nn_set_max_parameters
 * allows is refused with OUT_OF_MEMORY naming the argument, at once and
 * without the memory, for every kind whose size comes from its arguments;
 * the count is exact (bound = the module's elements builds, one less is
 * refused); modules under the bound still build. */
#include <stdint.h>
#include <time.h>

#include "check_main.h"

#define P62 "4611686018427387904"

/* Peak resident memory of this process so far (VmHWM, KiB). */
static long peak_rss_kib(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long kib = -1;
  ck_assert_ptr_nonnull(f);
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "VmHWM: %ld kB", &kib) == 1) break;
  fclose(f);
  return kib;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Builds kind(args) expecting a refusal: OUT_OF_MEMORY, the message naming
 * ctorch_nn_new and `needle`, in under a second, with the peak RSS grown by
 * less than 64 MiB. */
static void refused(const char *kind, const char *args, const char *needle) {
  ctorch_nn_module m = NULL;
  long rss0 = peak_rss_kib();
  double t0 = now_s();
  ctorch_status st = ctorch_nn_new(&m, kind, args);
  double took = now_s() - t0;
  long grown = peak_rss_kib() - rss0;
  ck_assert_msg(st == CTORCH_OUT_OF_MEMORY, "%s(%s) -> %s: %s", kind, args, ctorch_status_name(st), ctorch_last_error());
  ck_assert_ptr_null(m);
  CT_ERROR_HAS("ctorch_nn_new");
  CT_ERROR_HAS(needle);
  ck_assert_msg(took < 1.0, "%s(%s) took %.3f s to be refused", kind, args, took);
  ck_assert_msg(grown < 64 * 1024, "%s(%s) grew the peak RSS by %ld KiB", kind, args, grown);
}

START_TEST(test_huge_stacks_refused) {
  refused("LSTM", "10, 20, num_layers=" P62, "LSTM num_layers=" P62);
  refused("GRU", "10, 20, " P62, "GRU num_layers=" P62);
  refused("RNN", "10, 20, num_layers=" P62 ", bidirectional=True", "num_layers=" P62);
  refused("LSTM", "10, 20, proj_size=" P62, "proj_size=" P62);
  refused("TransformerEncoder", "torch.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16), " P62,
          "TransformerEncoder num_layers=" P62);
  refused("TransformerDecoder", "torch.nn.TransformerDecoderLayer(8, 2, dim_feedforward=16), num_layers=" P62,
          "TransformerDecoder num_layers=" P62);
  refused("Transformer", "8, 2, num_encoder_layers=" P62 ", dim_feedforward=16", "num_encoder_layers=" P62);
  refused("Transformer", "8, 2, num_decoder_layers=" P62 ", dim_feedforward=16", "num_decoder_layers=" P62);
}
END_TEST

START_TEST(test_huge_sizes_refused) {
  refused("Linear", "1099511627776, 1099511627776", "in_features=1099511627776");
  refused("Linear", "10, " P62, "out_features=" P62);
  refused("Bilinear", "4, 4, " P62, "out_features=" P62);
  refused("Embedding", P62 ", 2", "Embedding num_embeddings=" P62);
  refused("EmbeddingBag", "1000, " P62, "embedding_dim=" P62);
  refused("Conv2d", "3, " P62 ", 3", "out_channels=" P62);
  refused("Conv1d", "65536, 65536, 65536", "in_channels=65536");
  refused("ConvTranspose3d", "2, 2, (" P62 ", 1, 1)", "kernel_size=" P62);
  refused("MultiheadAttention", "4294967296, 1", "embed_dim=4294967296");
  refused("MultiheadAttention", "8, 1, kdim=" P62, "kdim=" P62);
  refused("TransformerEncoderLayer", "8, 2, dim_feedforward=" P62, "dim_feedforward=" P62);
  refused("TransformerDecoderLayer", P62 ", 1", "d_model=" P62);
  refused("LayerNorm", "[1073741824, 1073741824]", "normalized_shape=1073741824");
  refused("BatchNorm2d", P62, "num_features=" P62);
  refused("InstanceNorm1d", P62 ", affine=True", "num_features=" P62);
  refused("GroupNorm", "1, " P62, "num_channels=" P62);
  refused("PReLU", P62, "num_parameters=" P62);
  refused("LSTMCell", "1099511627776, 1099511627776", "LSTMCell");
  refused("GRUCell", "10, " P62, "hidden_size=" P62);
  refused("RNNCell", P62 ", 10", "input_size=" P62);
}
END_TEST

/* Sum of the elements of m's state dict (its parameters and buffers). */
static uint64_t elements(ctorch_nn_module m) {
  ctorch_tensor_dict d = NULL;
  size_t n = 0, i;
  uint64_t total = 0;
  CT_OK(ctorch_nn_module_state_dict(&d, m));
  CT_OK(ctorch_tensor_dict_size(&n, d));
  for (i = 0; i < n; ++i) {
    ctorch_tensor t = NULL;
    int64_t k = 0;
    CT_OK(ctorch_tensor_dict_get(&t, d, i));
    CT_OK(ctorch_tensor_numel(&k, t));
    total += (uint64_t)k;
    ctorch_tensor_free(t);
  }
  ctorch_tensor_dict_free(d);
  return total;
}

/* The count is exact: with the bound at the module's own count it builds,
 * one below it is refused. */
static void exact(const char *kind, const char *args) {
  ctorch_nn_module m = NULL;
  uint64_t n, prev = 0;
  CT_OK(ctorch_nn_set_max_parameters(&prev, 0));
  CT_OK(ctorch_nn_new(&m, kind, args));
  n = elements(m);
  ctorch_nn_module_free(m);
  m = NULL;
  ck_assert_uint_gt(n, 0);
  CT_OK(ctorch_nn_set_max_parameters(NULL, n));
  CT_OK(ctorch_nn_new(&m, kind, args));
  ctorch_nn_module_free(m);
  m = NULL;
  CT_OK(ctorch_nn_set_max_parameters(NULL, n - 1));
  ck_assert_msg(ctorch_nn_new(&m, kind, args) == CTORCH_OUT_OF_MEMORY, "%s(%s) with bound %llu: %s", kind, args,
                (unsigned long long)(n - 1), ctorch_last_error());
  ck_assert_ptr_null(m);
  CT_ERROR_HAS("over the bound");
  CT_OK(ctorch_nn_set_max_parameters(NULL, prev));
}

START_TEST(test_count_is_exact) {
  exact("Linear", "7, 5");
  exact("Linear", "7, 5, bias=False");
  exact("Bilinear", "3, 4, 5");
  exact("Conv2d", "4, 6, (3, 2), groups=2");
  exact("ConvTranspose1d", "4, 6, 3, groups=2, bias=False");
  exact("Embedding", "11, 3");
  exact("EmbeddingBag", "11, 3");
  exact("PReLU", "5");
  exact("BatchNorm1d", "6");
  exact("InstanceNorm2d", "6, affine=True, track_running_stats=True");
  exact("LayerNorm", "[3, 4]");
  exact("GroupNorm", "2, 6");
  exact("RNN", "3, 4, num_layers=3, bidirectional=True");
  exact("LSTM", "3, 5, num_layers=2, proj_size=2, bidirectional=True");
  exact("GRU", "3, 4, 2, bias=False");
  exact("LSTMCell", "3, 4");
  exact("GRUCell", "3, 4, bias=False");
  exact("MultiheadAttention", "8, 2");
  exact("MultiheadAttention", "8, 2, kdim=3, vdim=5, add_bias_kv=True");
  exact("TransformerEncoderLayer", "8, 2, dim_feedforward=16");
  exact("TransformerDecoderLayer", "8, 2, dim_feedforward=16, bias=False");
  exact("TransformerEncoder", "torch.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16), 3, norm=torch.nn.LayerNorm(8)");
}
END_TEST

/* Stacks of layers that hold almost nothing still stop at 2^16 tensors and
 * modules (an LSTM layer: 4 tensors; the LSTM itself: 1 module), and the
 * bound set to 0 lifts only the element bound. */
START_TEST(test_object_bound) {
  uint64_t prev = 0;
  ctorch_nn_module m = NULL;
  double t0 = now_s();
  CT_OK(ctorch_nn_new(&m, "LSTM", "1, 1, num_layers=16383"));  /* 65,533 objects: builds, */
  ck_assert_msg(now_s() - t0 < 10.0, "16,383 LSTM layers took %.1f s to build", now_s() - t0);
  ctorch_nn_module_free(m);
  refused("LSTM", "1, 1, num_layers=16384", "would make 65537 tensors and modules");  /* 65,537: refused */
  refused("LSTM", "1, 1, num_layers=300000", "tensors and modules");
  CT_OK(ctorch_nn_set_max_parameters(&prev, 0));
  refused("LSTM", "1, 1, num_layers=300000", "num_layers=300000");
  refused("GRU", "1, 1, num_layers=" P62, "tensors and modules");
  CT_OK(ctorch_nn_set_max_parameters(NULL, prev));
}
END_TEST

/* The setting: the default, previous values, NULL previous; modules under
 * the bound build (a 4096 x 4096 Linear: 16.8 M elements). */
START_TEST(test_setting) {
  uint64_t prev = 0, again = 0;
  ctorch_nn_module m = NULL;
  CT_OK(ctorch_nn_set_max_parameters(&prev, 1000));
  ck_assert_uint_eq(prev, (uint64_t)1 << 31);
  refused("Linear", "40, 40", "over the bound of 1000 (ctorch_nn_set_max_parameters)");
  CT_OK(ctorch_nn_new(&m, "Linear", "20, 40"));  /* 840 elements */
  ctorch_nn_module_free(m);
  m = NULL;
  /* A module argument built from the text is checked as it is built. */
  refused("TransformerEncoder", "torch.nn.TransformerEncoderLayer(8, 2, dim_feedforward=64), 1",
          "TransformerEncoderLayer");
  CT_OK(ctorch_nn_set_max_parameters(&again, prev));
  ck_assert_uint_eq(again, 1000);
  CT_OK(ctorch_nn_set_max_parameters(NULL, prev));
  CT_OK(ctorch_nn_new(&m, "Linear", "4096, 4096"));
  ctorch_nn_module_free(m);
  m = NULL;
  /* Kinds that allocate nothing build whatever their sizes. */
  CT_OK(ctorch_nn_new(&m, "Upsample", "size=(" P62 ", " P62 ")"));
  ctorch_nn_module_free(m);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("nn_bounds");
  TCase *tc = tcase_create("bounds");
  tcase_add_test(tc, test_huge_stacks_refused);
  tcase_add_test(tc, test_huge_sizes_refused);
  tcase_add_test(tc, test_count_is_exact);
  tcase_add_test(tc, test_object_bound);
  tcase_add_test(tc, test_setting);
  suite_add_tcase(s, tc);
  return s;
}

CTORCH_CHECK_MAIN()
