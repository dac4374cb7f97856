/* What language bindings need from the C side: failure ids and tickets
 * (messages of calls made on other threads, none lost when many threads
 * fail at once), the native memory counter,
 * ctorch_scalar.reserved, empty lists as PyTorch's [], the enums of schema
 * ints, and the ABI hash. */
#include <dlpack/dlpack.h>
#include <pthread.h>

#include "check_main.h"
#include "ctorch_abi.h"

static const int64_t k23[2] = {2, 3};
static const float k6[6] = {1, 2, 3, 4, 5, 6};

/* A call that fails with INVALID_ARGUMENT naming argument 'self'. */
static ctorch_status fail_null_self(void) {
  ctorch_tensor out = NULL;
  return ctorch_neg(&out, NULL);
}

START_TEST(failure_ids_and_messages) {
  char buf[512];
  size_t len = 0;
  ctorch_status st = CTORCH_OK;
  uint64_t id1, id2;
  ck_assert_int_eq(fail_null_self(), CTORCH_INVALID_ARGUMENT);
  id1 = ctorch_last_error_id();
  ck_assert_uint_gt(id1, 0);
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_set_num_threads(0));
  id2 = ctorch_last_error_id();
  ck_assert_uint_gt(id2, id1);
  /* The log keeps both, with their statuses and messages. */
  CT_OK(ctorch_error_message(&st, &len, buf, sizeof buf, id1));
  ck_assert_int_eq(st, CTORCH_INVALID_ARGUMENT);
  ck_assert_msg(strstr(buf, "ctorch_neg") && strstr(buf, "'self'"), "message of id1: %s", buf);
  ck_assert_uint_eq(len, strlen(buf));
  CT_OK(ctorch_error_message(NULL, NULL, buf, sizeof buf, id2));
  ck_assert_str_eq(buf, ctorch_last_error());
  /* The copy of this thread's last message, whole and truncated. */
  CT_OK(ctorch_last_error_copy(&len, buf, sizeof buf));
  ck_assert_str_eq(buf, ctorch_last_error());
  ck_assert_uint_eq(len, strlen(ctorch_last_error()));
  CT_OK(ctorch_last_error_copy(&len, buf, 8));
  ck_assert_uint_eq(strlen(buf), 7);
  ck_assert_int_eq(strncmp(buf, ctorch_last_error(), 7), 0);
  ck_assert_uint_gt(len, 7);
  CT_OK(ctorch_last_error_copy(&len, NULL, 0));
  ck_assert_uint_eq(len, strlen(ctorch_last_error()));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_last_error_copy(NULL, NULL, 4));
  CT_ERROR_HAS("'buf'");
  /* Unknown ids. */
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_error_message(NULL, NULL, NULL, 0, 0));
  CT_FAILS(CTORCH_INDEX, ctorch_error_message(&st, NULL, buf, sizeof buf, ctorch_last_error_id() + 1000000000ull));
  ck_assert_int_eq(st, CTORCH_OK);
  ck_assert_str_eq(buf, "");
}
END_TEST

START_TEST(failure_log_forgets_old_failures) {
  uint64_t first;
  int i;
  ck_assert_int_eq(fail_null_self(), CTORCH_INVALID_ARGUMENT);
  first = ctorch_last_error_id();
  for (i = 0; i < 1100; ++i) ck_assert_int_eq(fail_null_self(), CTORCH_INVALID_ARGUMENT);
  CT_FAILS(CTORCH_INDEX, ctorch_error_message(NULL, NULL, NULL, 0, first));
  CT_ERROR_HAS("not in the log");
  CT_OK(ctorch_error_message(NULL, NULL, NULL, 0, ctorch_last_error_id() - 1));
}
END_TEST

struct worker_result {
  ctorch_status status;
  uint64_t id;
};

static void *worker_fails(void *arg) {
  struct worker_result *r = arg;
  ctorch_tensor out = NULL;
  /* dim 5 of a 2-d tensor: a libtorch IndexError on this thread. */
  ctorch_tensor t = NULL;
  int64_t sz[2] = {2, 3};
  ctorch_tensor_from_data(&t, k6, sizeof k6, sz, 2, CTORCH_FLOAT32);
  r->status = ctorch_select_int(&out, t, 5, 0);
  r->id = ctorch_last_error_id();
  ctorch_tensor_free(t);
  return NULL;
}

START_TEST(message_of_a_call_on_another_thread) {
  pthread_t th;
  struct worker_result r = {CTORCH_OK, 0};
  char buf[512];
  ctorch_status st = CTORCH_OK;
  ck_assert_int_eq(pthread_create(&th, NULL, worker_fails, &r), 0);
  ck_assert_int_eq(pthread_join(th, NULL), 0);
  ck_assert_int_eq(r.status, CTORCH_INDEX);
  /* This thread fails differently meanwhile; the worker's message stays reachable by its id. */
  ck_assert_int_eq(fail_null_self(), CTORCH_INVALID_ARGUMENT);
  CT_OK(ctorch_error_message(&st, NULL, buf, sizeof buf, r.id));
  ck_assert_int_eq(st, CTORCH_INDEX);
  ck_assert_msg(strstr(buf, "ctorch_select_int") != NULL, "worker's message: %s", buf);
  ck_assert_msg(strstr(ctorch_last_error(), "ctorch_neg") != NULL, "own message: %s", ctorch_last_error());
}
END_TEST

START_TEST(error_tickets) {
  pthread_t th;
  struct worker_result r = {CTORCH_OK, 0};
  char buf[512];
  ctorch_status st = CTORCH_OK, code;
  int prev = -1;
  uint32_t ticket;
  CT_OK(ctorch_set_error_tickets(&prev, 1));
  ck_assert_int_eq(prev, 0);
  /* The worker returns only its status, as koffi's async calls do. */
  ck_assert_int_eq(pthread_create(&th, NULL, worker_fails, &r), 0);
  ck_assert_int_eq(pthread_join(th, NULL), 0);
  code = CTORCH_STATUS_CODE(r.status);
  ticket = CTORCH_STATUS_TICKET(r.status);
  ck_assert_int_eq(code, CTORCH_INDEX);
  ck_assert_uint_gt(ticket, 0);
  ck_assert_int_ne(r.status, CTORCH_INDEX);
  ck_assert_uint_eq(ticket, (uint32_t)((r.id - 1) % 0x7FFFFF + 1));
  st = fail_null_self();
  ck_assert_int_eq(CTORCH_STATUS_CODE(st), CTORCH_INVALID_ARGUMENT);
  ck_assert_uint_ne(CTORCH_STATUS_TICKET(st), ticket);
  CT_OK(ctorch_error_message(&st, NULL, buf, sizeof buf, ticket));
  ck_assert_int_eq(st, CTORCH_INDEX);
  ck_assert_msg(strstr(buf, "ctorch_select_int") != NULL, "message by ticket: %s", buf);
  /* Success stays 0. */
  CT_OK(ctorch_set_num_threads(1));
  CT_OK(ctorch_set_error_tickets(&prev, 0));
  ck_assert_int_eq(prev, 1);
  ck_assert_int_eq(fail_null_self(), CTORCH_INVALID_ARGUMENT);
}
END_TEST

/* Tickets under threads: 8 threads each fail mm kFails times with tickets on
 * and read every message by its ticket right away; each thread's mm has its
 * own shape, so a message is checked to be the thread's own, whole. */
enum { kThreads = 8, kFails = 3000 };

/* mm of (rows x 3) by (4 x 5): fails naming both shapes. */
static ctorch_status failing_mm(int64_t rows, ctorch_tensor *a, ctorch_tensor *b) {
  const ctorch_dtype f32 = CTORCH_FLOAT32;
  const int64_t sa[2] = {rows, 3}, sb[2] = {4, 5};
  ctorch_tensor out = NULL;
  if (!*a && (ctorch_zeros(a, sa, 2, &f32, NULL, NULL, NULL) != CTORCH_OK ||
              ctorch_zeros(b, sb, 2, &f32, NULL, NULL, NULL) != CTORCH_OK))
    return CTORCH_UNKNOWN;
  return ctorch_mm(&out, *a, *b);
}

struct ticket_job {
  int64_t rows;
  int lost, wrong;
  char example[256];
};

/* Whether msg is the failure of failing_mm(rows): ctorch's prefix, then
 * libtorch's text (2.x puts "mm: " before it), naming this call's shapes. */
static int is_mm_failure(const char *msg, long rows) {
  char shapes[128];
  snprintf(shapes, sizeof shapes, "mat1 and mat2 shapes cannot be multiplied (%ldx3 and 4x5)", rows);
  return strncmp(msg, "ctorch_mm: ", 11) == 0 && strstr(msg, shapes) != NULL;
}

static void *mm_failures(void *arg) {
  struct ticket_job *j = arg;
  ctorch_tensor a = NULL, b = NULL;
  char buf[512];
  for (int i = 0; i < kFails; ++i) {
    ctorch_status st = failing_mm(j->rows, &a, &b), code = CTORCH_OK;
    uint32_t ticket = CTORCH_STATUS_TICKET(st);
    if (CTORCH_STATUS_CODE(st) == CTORCH_OK || ticket == 0 ||
        ctorch_error_message(&code, NULL, buf, sizeof buf, ticket) != CTORCH_OK) {
      ++j->lost;
    } else if (!is_mm_failure(buf, (long)j->rows) || code != CTORCH_STATUS_CODE(st)) {
      if (!j->wrong++) snprintf(j->example, sizeof j->example, "%.*s", (int)sizeof j->example - 1, buf);  // an example: its start is enough
    }
  }
  ctorch_tensor_free(a);
  ctorch_tensor_free(b);
  return NULL;
}

START_TEST(tickets_under_threads) {
  pthread_t th[kThreads];
  struct ticket_job jobs[kThreads];
  int prev = -1;
  CT_OK(ctorch_set_error_tickets(&prev, 1));
  for (int t = 0; t < kThreads; ++t) {
    memset(&jobs[t], 0, sizeof jobs[t]);
    jobs[t].rows = t + 2;
    ck_assert_int_eq(pthread_create(&th[t], NULL, mm_failures, &jobs[t]), 0);
  }
  for (int t = 0; t < kThreads; ++t) ck_assert_int_eq(pthread_join(th[t], NULL), 0);
  CT_OK(ctorch_set_error_tickets(&prev, 0));
  for (int t = 0; t < kThreads; ++t) {
    ck_assert_msg(jobs[t].lost == 0, "thread %d: %d of %d messages lost", t, jobs[t].lost, kFails);
    ck_assert_msg(jobs[t].wrong == 0, "thread %d: %d messages not its own, e.g. %s", t, jobs[t].wrong,
                  jobs[t].example);
  }
}
END_TEST

/* The case the shared log alone lost: a thread fails, and before it reads
 * its message (preempted, or handing the ticket to another thread) other
 * threads fail far more often than the shared log holds. The failing
 * thread's own entries keep it, for itself and for any other reader. */
struct held_failure {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int stage; /* 1: failed, 2: others done, 3: read its own, 4: may end */
  ctorch_status status, own_read;
  char own[512];
};

static void wait_stage(struct held_failure *h, int stage) {
  pthread_mutex_lock(&h->mu);
  while (h->stage < stage) pthread_cond_wait(&h->cv, &h->mu);
  pthread_mutex_unlock(&h->mu);
}

static void set_stage(struct held_failure *h, int stage) {
  pthread_mutex_lock(&h->mu);
  h->stage = stage;
  pthread_cond_broadcast(&h->cv);
  pthread_mutex_unlock(&h->mu);
}

static void *fail_then_wait(void *arg) {
  struct held_failure *h = arg;
  ctorch_tensor a = NULL, b = NULL;
  h->status = failing_mm(9, &a, &b);
  set_stage(h, 1);
  wait_stage(h, 2);
  h->own_read = ctorch_error_message(NULL, NULL, h->own, sizeof h->own, CTORCH_STATUS_TICKET(h->status));
  set_stage(h, 3);
  wait_stage(h, 4); /* alive until the main thread is done */
  ctorch_tensor_free(a);
  ctorch_tensor_free(b);
  return NULL;
}

START_TEST(ticket_outlives_other_threads_failures) {
  struct held_failure h;
  pthread_t waiter, others[kThreads - 1];
  struct ticket_job jobs[kThreads - 1];
  char buf[512];
  ctorch_status code = CTORCH_OK;
  int prev = -1;
  memset(&h, 0, sizeof h);
  pthread_mutex_init(&h.mu, NULL);
  pthread_cond_init(&h.cv, NULL);
  CT_OK(ctorch_set_error_tickets(&prev, 1));
  ck_assert_int_eq(pthread_create(&waiter, NULL, fail_then_wait, &h), 0);
  wait_stage(&h, 1);
  ck_assert_int_eq(CTORCH_STATUS_CODE(h.status), CTORCH_RUNTIME);
  /* 7 x 3000 failures meanwhile: the shared log (1,024) turns over 20 times. */
  for (int t = 0; t < kThreads - 1; ++t) {
    memset(&jobs[t], 0, sizeof jobs[t]);
    jobs[t].rows = t + 2;
    ck_assert_int_eq(pthread_create(&others[t], NULL, mm_failures, &jobs[t]), 0);
  }
  for (int t = 0; t < kThreads - 1; ++t) ck_assert_int_eq(pthread_join(others[t], NULL), 0);
  /* another thread reads the waiting thread's ticket, and so does that thread */
  CT_OK(ctorch_error_message(&code, NULL, buf, sizeof buf, CTORCH_STATUS_TICKET(h.status)));
  ck_assert_int_eq(code, CTORCH_RUNTIME);
  ck_assert_msg(is_mm_failure(buf, 9), "message by ticket: %s", buf);
  set_stage(&h, 2);
  wait_stage(&h, 3);
  ck_assert_int_eq(h.own_read, CTORCH_OK);
  ck_assert_str_eq(h.own, buf);
  set_stage(&h, 4);
  ck_assert_int_eq(pthread_join(waiter, NULL), 0);
  CT_OK(ctorch_set_error_tickets(&prev, 0));
  for (int t = 0; t < kThreads - 1; ++t) ck_assert_int_eq(jobs[t].lost + jobs[t].wrong, 0);
}
END_TEST

START_TEST(memory_counter) {
  int64_t before = -1, during = -1, after = -1, cuda = -1;
  const int64_t n = 1 << 18; /* 1 MiB of float32 */
  ctorch_tensor t = NULL, v = NULL;
  ctorch_dtype f32 = CTORCH_FLOAT32;
  int has_cuda = 0;
  CT_OK(ctorch_memory_bytes(&before, CTORCH_DEVICE_CPU));
  ck_assert_int_ge(before, 0);
  CT_OK(ctorch_empty_memory_format(&t, &n, 1, &f32, NULL, NULL, NULL, NULL));
  CT_OK(ctorch_memory_bytes(&during, CTORCH_DEVICE_CPU));
  ck_assert_int_ge(during - before, n * 4);
  ck_assert_int_lt(during - before, n * 4 + 64 * 1024);
  /* A view shares the storage: nothing more. */
  CT_OK(ctorch_view(&v, t, &n, 1));
  CT_OK(ctorch_memory_bytes(&after, CTORCH_DEVICE_CPU));
  ck_assert_int_eq(after, during);
  ctorch_tensor_free(t);
  CT_OK(ctorch_memory_bytes(&after, CTORCH_DEVICE_CPU));
  ck_assert_int_eq(after, during); /* v still holds it */
  ctorch_tensor_free(v);
  CT_OK(ctorch_memory_bytes(&after, CTORCH_DEVICE_CPU));
  ck_assert_int_eq(after, before);
  CT_OK(ctorch_cuda_is_available(&has_cuda));
  /* Asked before any CUDA tensor exists: 0, not an error (the allocator's
   * counters need libtorch's lazy CUDA initialisation, which ctorch runs). */
  CT_OK(ctorch_memory_bytes(&cuda, CTORCH_DEVICE_CUDA));
  ck_assert_int_eq(cuda, 0);
#if CTORCH_TORCH_VERSION_MAJOR > 2 || (CTORCH_TORCH_VERSION_MAJOR == 2 && CTORCH_TORCH_VERSION_MINOR >= 8)
  if (has_cuda) { /* counted from 2.8 (c10's device-generic allocator statistics) */
    ctorch_device d0;
    int64_t with_t = -1;
    d0.type = CTORCH_DEVICE_CUDA;
    d0.index = 0;
    CT_OK(ctorch_empty_memory_format(&t, &n, 1, &f32, NULL, &d0, NULL, NULL));
    CT_OK(ctorch_memory_bytes(&with_t, CTORCH_DEVICE_CUDA));
    ck_assert_int_ge(with_t, n * 4);
    ctorch_tensor_free(t);
    t = NULL;
    CT_OK(ctorch_memory_bytes(&cuda, CTORCH_DEVICE_CUDA));
    ck_assert_int_eq(cuda, with_t - n * 4);
  }
#endif
  CT_FAILS(CTORCH_NOT_IMPLEMENTED, ctorch_memory_bytes(&cuda, CTORCH_DEVICE_META));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_memory_bytes(&cuda, (ctorch_device_type)77));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_memory_bytes(NULL, CTORCH_DEVICE_CPU));
}
END_TEST

START_TEST(memory_counter_sees_graph_buffers) {
  /* Tensors autograd saves inside libtorch are counted too: that is what a
   * garbage-collected binding must see when a live loss pins its graph. */
  int64_t base = 0, with_graph = 0, freed = 0;
  const int64_t sz[2] = {256, 256};
  ctorch_tensor w = NULL, x = NULL, y = NULL, z = NULL;
  ctorch_dtype f32 = CTORCH_FLOAT32;
  CT_OK(ctorch_ones(&w, sz, 2, &f32, NULL, NULL, NULL));
  CT_OK(ctorch_tensor_set_requires_grad(w, 1));
  CT_OK(ctorch_memory_bytes(&base, CTORCH_DEVICE_CPU));
  CT_OK(ctorch_sigmoid(&x, w));
  CT_OK(ctorch_sigmoid(&y, x));
  ctorch_tensor_free(x); /* the graph keeps x's result for sigmoid's backward */
  CT_OK(ctorch_sum(&z, y, NULL));
  ctorch_tensor_free(y);
  CT_OK(ctorch_memory_bytes(&with_graph, CTORCH_DEVICE_CPU));
  ck_assert_int_ge(with_graph - base, 2 * 256 * 256 * 4);
  ctorch_tensor_free(z);
  CT_OK(ctorch_memory_bytes(&freed, CTORCH_DEVICE_CPU));
  ck_assert_int_eq(freed, base);
  ctorch_tensor_free(w);
}
END_TEST

START_TEST(scalar_reserved_is_checked) {
  ctorch_tensor a = ct_floats(k6, k23, 2), out = NULL;
  ctorch_scalar s = ctorch_scalar_int(1);
  CT_OK(ctorch_add_Tensor(&out, a, a, s));
  ctorch_tensor_free(out);
  s.reserved = 7;
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_add_Tensor(&out, a, a, s));
  CT_ERROR_HAS("'alpha'");
  CT_ERROR_HAS("reserved must be 0, got 7");
  ck_assert_ptr_null(out);
  s = ctorch_scalar_float(2.0);
  s.kind = 42;
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_mul_Scalar(&out, a, s));
  CT_ERROR_HAS("ctorch_scalar_kind");
  /* Lists of scalars are checked the same way. */
  s = ctorch_scalar_int(1);
  s.reserved = -1;
  {
    ctorch_tensor list[1];
    ctorch_tensor_list res = NULL;
    list[0] = a;
    CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch__foreach_add_ScalarList(&res, list, 1, &s, 1));
    CT_ERROR_HAS("reserved must be 0");
  }
  ctorch_tensor_free(a);
}
END_TEST

START_TEST(empty_list_is_pytorchs_empty_list) {
  /* set_(source, storage_offset, size=[2, 2], stride=[]): PyTorch gives a
   * contiguous view. A non-NULL pointer of length 0 must mean the same. */
  const float v6[6] = {0, 1, 2, 3, 4, 5};
  const int64_t n6 = 6, size[2] = {2, 2};
  const int64_t dummy[1] = {99};
  ctorch_tensor src = ct_floats(v6, &n6, 1), t = NULL;
  int64_t strides[2] = {0, 0};
  float got[4];
  ctorch_dtype f32 = CTORCH_FLOAT32;
  int pass;
  for (pass = 0; pass < 2; ++pass) {
    CT_OK(ctorch_empty_memory_format(&t, NULL, 0, &f32, NULL, NULL, NULL, NULL));
    CT_OK(ctorch_set__source_Tensor_storage_offset(t, src, 1, size, 2, pass ? dummy : NULL, 0));
    CT_OK(ctorch_tensor_strides(strides, 2, t));
    ck_assert_int_eq(strides[0], 2);
    ck_assert_int_eq(strides[1], 1);
    CT_OK(ctorch_tensor_copy_to(got, sizeof got, t));
    ck_assert_float_eq(got[0], 1);
    ck_assert_float_eq(got[3], 4);
    ctorch_tensor_free(t);
  }
  /* For an optional list, [] is not None (as in PyTorch): upsample with
   * output_size and scale_factors=[] is refused, with scale_factors=None not. */
  {
    ctorch_tensor x = NULL, out = NULL;
    const int64_t sz3[3] = {1, 1, 2};
    const int64_t osz[1] = {4};
    const double fdummy[1] = {7.0};
    const float v2[2] = {1, 2};
    x = ct_floats(v2, sz3, 3);
    CT_FAILS(CTORCH_RUNTIME, ctorch_upsample_nearest1d_vec(&out, x, osz, 1, fdummy, 0));
    CT_ERROR_HAS("exactly one of output_size and scale_factors");
    CT_OK(ctorch_upsample_nearest1d_vec(&out, x, osz, 1, NULL, 0));
    ctorch_tensor_free(out);
    ctorch_tensor_free(x);
  }
  ctorch_tensor_free(src);
}
END_TEST

START_TEST(schema_int_enums) {
  const float p[2] = {1, 3}, q[2] = {0, 0};
  const int64_t two = 2;
  ctorch_tensor a = ct_floats(p, &two, 1), b = ct_floats(q, &two, 1), out = NULL;
  double v = 0;
  CT_OK(ctorch_mse_loss(&out, a, b, CTORCH_REDUCTION_SUM));
  CT_OK(ctorch_tensor_item_double(&v, out));
  ck_assert_double_eq(v, 10.0);
  ctorch_tensor_free(out);
  CT_OK(ctorch_mse_loss(&out, a, b, CTORCH_REDUCTION_MEAN));
  CT_OK(ctorch_tensor_item_double(&v, out));
  ck_assert_double_eq(v, 5.0);
  ctorch_tensor_free(out);
  CT_OK(ctorch_mse_loss(&out, a, b, CTORCH_REDUCTION_NONE));
  {
    int64_t n = 0;
    CT_OK(ctorch_tensor_numel(&n, out));
    ck_assert_int_eq(n, 2);
  }
  ctorch_tensor_free(out);
  ck_assert_int_eq(CTORCH_GRID_SAMPLER_NEAREST, 1);
  ck_assert_int_eq(CTORCH_GRID_SAMPLER_PADDING_REFLECTION, 2);
  ck_assert_int_eq(CTORCH_EMBEDDING_BAG_MAX, 2);
  ctorch_tensor_free(a);
  ctorch_tensor_free(b);
}
END_TEST

START_TEST(zerotensor_is_not_exported) {
  /* Found by the bindings' differential test (and the sweep): a ZeroTensor
   * has elements but a NULL data pointer; exporting it made consumers crash.
   * ctorch_to_dlpack materialises it: real memory holding zeros. */
  const int64_t sz[2] = {2, 3};
  ctorch_tensor z = NULL;
  struct DLManagedTensor *m = NULL;
  int i;
  CT_OK(ctorch__efficientzerotensor(&z, sz, 2, NULL, NULL, NULL, NULL));
  CT_OK(ctorch_to_dlpack(&m, z));
  ck_assert_ptr_nonnull(m);
  ck_assert_ptr_nonnull(m->dl_tensor.data);
  for (i = 0; i < 6; ++i) ck_assert(((const float *)m->dl_tensor.data)[i] == 0.0f);
  m->deleter(m);
  ctorch_tensor_free(z);
}
END_TEST

START_TEST(abi_hash) {
  const char *h = NULL;
  size_t i;
  CT_OK(ctorch_abi_hash(&h));
  ck_assert_str_eq(h, CTORCH_ABI_HASH);
  ck_assert_uint_eq(strlen(h), 32);
  for (i = 0; i < 32; ++i) ck_assert_msg(strchr("0123456789abcdef", h[i]) != NULL, "hash %s", h);
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_abi_hash(NULL));
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("binding_support");
  TCase *tc = tcase_create("all");
  tcase_add_test(tc, failure_ids_and_messages);
  tcase_add_test(tc, failure_log_forgets_old_failures);
  tcase_add_test(tc, message_of_a_call_on_another_thread);
  tcase_add_test(tc, error_tickets);
  tcase_add_test(tc, tickets_under_threads);
  tcase_add_test(tc, ticket_outlives_other_threads_failures);
  tcase_add_test(tc, memory_counter);
  tcase_add_test(tc, memory_counter_sees_graph_buffers);
  tcase_add_test(tc, scalar_reserved_is_checked);
  tcase_add_test(tc, empty_list_is_pytorchs_empty_list);
  tcase_add_test(tc, schema_int_enums);
  tcase_add_test(tc, zerotensor_is_not_exported);
  tcase_add_test(tc, abi_hash);
  suite_add_tcase(s, tc);
  return s;
}

CTORCH_CHECK_MAIN()
