/* CUDA devices, memory, generators, pinned memory, streams, events and CUDA
 * graphs (docs/gpu.md). The tcases tagged "cuda" run as the ctest test
 * test_cuda_cuda, which prints "skipped: no CUDA device" and counts as
 * skipped where there is none; the others run everywhere and check the
 * statuses ctorch gives without CUDA (or, with CUDA, the argument checks). */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "check_main.h"

static int cuda_count(void) {
  int n = -1;
  CT_OK(ctorch_cuda_device_count(&n));
  ck_assert_int_ge(n, 0);
  return n;
}

static ctorch_device dev(int32_t type, int32_t index) {
  ctorch_device d;
  d.type = type;
  d.index = index;
  return d;
}

static ctorch_tensor randn_on(ctorch_device d, ctorch_generator g, int64_t n) {
  ctorch_tensor t = NULL;
  ctorch_dtype f32 = CTORCH_FLOAT32;
  if (g) CT_OK(ctorch_randn_generator(&t, &n, 1, g, &f32, NULL, &d, NULL));
  else CT_OK(ctorch_randn(&t, &n, 1, &f32, NULL, &d, NULL));
  return t;
}

static int tensors_equal(ctorch_tensor a, ctorch_tensor b) {
  int eq = 0;
  ctorch_tensor ac = NULL, bc = NULL;
  CT_OK(ctorch_tensor_to_device(&ac, a, ctorch_device_cpu()));
  CT_OK(ctorch_tensor_to_device(&bc, b, ctorch_device_cpu()));
  CT_OK(ctorch_equal(&eq, ac, bc));
  ctorch_tensor_free(ac);
  ctorch_tensor_free(bc);
  return eq;
}

/* ---- everywhere: statuses without CUDA, argument checks ------------------ */

/* Without a CUDA device every device-specific call says so, naming cuda. */
START_TEST(test_no_cuda_statuses) {
  int i = 0;
  ctorch_cuda_device_properties props;
  ctorch_cuda_memory_stats stats;
  ctorch_generator g = NULL;
  ctorch_stream s = NULL;
  ctorch_event e = NULL;
  ctorch_cuda_graph graph = NULL;
  ctorch_tensor t = NULL, out = NULL;
  const float v[2] = {1, 2};
  const int64_t sz[1] = {2};
  if (cuda_count() > 0) {
    /* A GPU is here: the same calls succeed (the cuda-tagged tcases check
     * them in depth), before any CUDA tensor exists: the allocator's
     * counters need libtorch's lazy CUDA initialisation, which ctorch runs
     * (it once answered "Invalid device argument"). -1 is the current
     * device; an ordinal past the last is named. */
    int n = cuda_count();
    CT_OK(ctorch_cuda_current_device(&i));
    ck_assert_int_ge(i, 0);
    CT_OK(ctorch_cuda_synchronize_all());
    CT_OK(ctorch_cuda_synchronize(-1));
    CT_OK(ctorch_cuda_get_device_properties(&props, 0));
    CT_OK(ctorch_cuda_memory_stats_get(&stats, -1));
    ck_assert_uint_eq(stats.allocated_bytes, 0);
    CT_OK(ctorch_cuda_memory_stats_get(&stats, 0));
    CT_OK(ctorch_cuda_reset_peak_memory_stats(-1));
    CT_OK(ctorch_cuda_empty_cache());
    CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_cuda_memory_stats_get(&stats, n));
    CT_ERROR_HAS("does not exist");
    CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_cuda_reset_peak_memory_stats(n));
    CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_cuda_get_device_properties(&props, n));
    CT_OK(ctorch_generator_default(&g, dev(CTORCH_DEVICE_CUDA, -1)));
    ctorch_generator_free(g);
    CT_OK(ctorch_cuda_set_device(0));
    return;
  }
  CT_FAILS(CTORCH_NOT_IMPLEMENTED, ctorch_cuda_current_device(&i));
  CT_ERROR_HAS("cuda");
  CT_FAILS(CTORCH_NOT_IMPLEMENTED, ctorch_cuda_set_device(0));
  CT_ERROR_HAS("cuda:0 is not available");
  CT_FAILS(CTORCH_NOT_IMPLEMENTED, ctorch_cuda_synchronize(-1));
  CT_FAILS(CTORCH_NOT_IMPLEMENTED, ctorch_cuda_synchronize_all());
  CT_FAILS(CTORCH_NOT_IMPLEMENTED, ctorch_cuda_get_device_properties(&props, 0));
  CT_ERROR_HAS("cuda:0");
  CT_FAILS(CTORCH_NOT_IMPLEMENTED, ctorch_cuda_memory_stats_get(&stats, -1));
  CT_FAILS(CTORCH_NOT_IMPLEMENTED, ctorch_cuda_reset_peak_memory_stats(0));
  CT_FAILS(CTORCH_NOT_IMPLEMENTED, ctorch_cuda_empty_cache());
  CT_FAILS(CTORCH_NOT_IMPLEMENTED, ctorch_generator_new(&g, dev(CTORCH_DEVICE_CUDA, 0), 1));
  ck_assert_ptr_null(g);
  CT_ERROR_HAS("cuda:0");
  CT_FAILS(CTORCH_NOT_IMPLEMENTED, ctorch_generator_default(&g, dev(CTORCH_DEVICE_CUDA, -1)));
  CT_FAILS(CTORCH_NOT_IMPLEMENTED, ctorch_stream_new(&s, dev(CTORCH_DEVICE_CUDA, 0), 0));
  ck_assert_ptr_null(s);
  CT_FAILS(CTORCH_NOT_IMPLEMENTED, ctorch_stream_current(&s, dev(CTORCH_DEVICE_CUDA, -1)));
  CT_FAILS(CTORCH_NOT_IMPLEMENTED, ctorch_stream_default(&s, dev(CTORCH_DEVICE_CUDA, -1)));
  CT_FAILS(CTORCH_NOT_IMPLEMENTED, ctorch_event_new(&e, CTORCH_DEVICE_CUDA, 1));
  ck_assert_ptr_null(e);
  CT_FAILS(CTORCH_NOT_IMPLEMENTED, ctorch_cuda_graph_new(&graph));
  ck_assert_ptr_null(graph);
  CT_ERROR_HAS("CUDA graphs");
  /* Pinned memory and asynchronous copies to CUDA need a device too. */
  t = ct_floats(v, sz, 1);
  CT_FAILS(CTORCH_NOT_IMPLEMENTED, ctorch_tensor_pin_memory(&out, t));
  ck_assert_ptr_null(out);
  CT_ERROR_HAS("pinned memory");
  CT_OK(ctorch_tensor_is_pinned(&i, t));
  ck_assert_int_eq(i, 0);
  CT_FAILS(CTORCH_NOT_IMPLEMENTED, ctorch_tensor_to_device_async(&out, t, dev(CTORCH_DEVICE_CUDA, 0)));
  CT_ERROR_HAS("cuda:0");
  CT_OK(ctorch_dist_nccl_available(&i));
  ck_assert_int_eq(i, 0);
  {
    char path[] = "/tmp/ctorch_test_cuda_XXXXXX";
    int fd = mkstemp(path);
    ctorch_store store = NULL;
    ctorch_process_group pg = NULL;
    ck_assert_int_ge(fd, 0);
    close(fd);
    CT_OK(ctorch_store_file_new(&store, path, 1, 5000));
    CT_FAILS(CTORCH_NOT_IMPLEMENTED, ctorch_process_group_new_nccl(&pg, store, 0, 1, 5000));
    CT_ERROR_HAS("nccl");
    ck_assert_ptr_null(pg);
    CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_process_group_new_nccl(&pg, store, 1, 1, 5000));
    ctorch_store_free(store);
    unlink(path);
  }
  ctorch_tensor_free(t);
}
END_TEST

/* Arguments are checked before (and whatever) CUDA is. */
START_TEST(test_argument_checks) {
  int i = 0;
  int64_t id = 0;
  ctorch_stream s = NULL;
  ctorch_event e = NULL;
  ctorch_device d;
  ctorch_stream_scope scope = NULL;
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_cuda_current_device(NULL));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_cuda_set_device(-1));
  CT_ERROR_HAS("argument 'device'");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_cuda_synchronize(-2));
  CT_ERROR_HAS("negative");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_cuda_get_device_properties(NULL, 0));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_cuda_memory_stats_get(NULL, 0));
  /* Streams and events are CUDA's: a CPU device is refused, naming it. */
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_stream_new(&s, ctorch_device_cpu(), 0));
  CT_ERROR_HAS("cpu");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_stream_current(&s, dev(99, 0)));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_event_new(&e, CTORCH_DEVICE_CPU, 0));
  CT_ERROR_HAS("cpu");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_stream_query(&i, NULL));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_stream_synchronize(NULL));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_stream_id(&id, NULL));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_stream_device(&d, NULL));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_stream_wait_event(NULL, NULL));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_stream_wait_stream(NULL, NULL));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_stream_scope_enter(&scope, NULL));
  ck_assert_ptr_null(scope);
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_stream_scope_leave(NULL));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_event_record(NULL, NULL));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_event_query(&i, NULL));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_event_synchronize(NULL));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_event_elapsed_ms(NULL, NULL, NULL));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_cuda_graph_capture_begin(NULL, NULL));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_cuda_graph_replay(NULL));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_tensor_pin_memory(NULL, NULL));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_tensor_is_pinned(&i, NULL));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_generator_initial_seed(NULL, NULL));
  /* A meta generator is no CPU or CUDA one. */
  {
    ctorch_generator g = NULL;
    CT_FAILS(CTORCH_NOT_IMPLEMENTED, ctorch_generator_new(&g, dev(CTORCH_DEVICE_META, -1), 1));
    ck_assert_ptr_null(g);
  }
  ctorch_stream_free(NULL);
  ctorch_event_free(NULL);
  ctorch_cuda_graph_free(NULL);
}
END_TEST

/* The CPU default generator, shared through a handle; seeds read back. */
START_TEST(test_cpu_generators) {
  ctorch_generator def = NULL, g = NULL;
  ctorch_tensor a = NULL, b = NULL;
  uint64_t seed = 0;
  ctorch_device d;
  CT_OK(ctorch_generator_default(&def, ctorch_device_cpu()));
  CT_OK(ctorch_generator_set_seed(def, 1234));
  a = randn_on(ctorch_device_cpu(), NULL, 8); /* NULL: the default generator */
  CT_OK(ctorch_generator_initial_seed(&seed, def));
  ck_assert_uint_eq(seed, 1234);
  CT_OK(ctorch_generator_new(&g, ctorch_device_cpu(), 1234));
  b = randn_on(ctorch_device_cpu(), g, 8);
  ck_assert(tensors_equal(a, b));
  CT_OK(ctorch_generator_device(&d, g));
  ck_assert_int_eq(d.type, CTORCH_DEVICE_CPU);
  /* ctorch_manual_seed reseeds the shared default. */
  CT_OK(ctorch_manual_seed(99));
  CT_OK(ctorch_generator_initial_seed(&seed, def));
  ck_assert_uint_eq(seed, 99);
  ctorch_tensor_free(a);
  ctorch_tensor_free(b);
  ctorch_generator_free(g);
  ctorch_generator_free(def);
}
END_TEST

/* A non-blocking copy to the CPU of a CPU tensor is the tensor itself. */
START_TEST(test_async_copy_cpu) {
  const float v[3] = {1, 2, 3};
  const int64_t sz[1] = {3};
  ctorch_tensor t = ct_floats(v, sz, 1), out = NULL;
  CT_OK(ctorch_tensor_to_device_async(&out, t, ctorch_device_cpu()));
  ck_assert(tensors_equal(t, out));
  ctorch_tensor_free(out); /* the failing call below sets its out-handle to NULL */
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_tensor_to_device_async(&out, t, dev(42, 0)));
  ck_assert_ptr_null(out);
  ctorch_tensor_free(t);
}
END_TEST

/* ---- CUDA (skipped without a device) ------------------------------------- */

START_TEST(test_cuda_devices) {
  int n = cuda_count(), cur = -1;
  ctorch_cuda_device_properties p;
  CT_OK(ctorch_cuda_current_device(&cur));
  ck_assert_int_ge(cur, 0);
  ck_assert_int_lt(cur, n);
  CT_OK(ctorch_cuda_set_device(n - 1));
  CT_OK(ctorch_cuda_current_device(&cur));
  ck_assert_int_eq(cur, n - 1);
  CT_OK(ctorch_cuda_set_device(0));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_cuda_set_device(n));
  CT_ERROR_HAS("does not exist");
  CT_OK(ctorch_cuda_synchronize(-1));
  CT_OK(ctorch_cuda_synchronize_all());
  CT_OK(ctorch_cuda_get_device_properties(&p, 0));
  ck_assert(strlen(p.name) > 0);
  ck_assert_uint_gt(p.total_memory, (uint64_t)1 << 28);
  ck_assert_int_ge(p.major, 3);
  ck_assert_int_gt(p.multi_processor_count, 0);
}
END_TEST

START_TEST(test_cuda_memory_stats) {
  ctorch_cuda_memory_stats s0, s1, s2;
  ctorch_tensor t = NULL;
  const int64_t n = 16 << 20; /* 64 MiB of float32 */
  ctorch_dtype f32 = CTORCH_FLOAT32;
  ctorch_device d = dev(CTORCH_DEVICE_CUDA, 0);
  CT_OK(ctorch_cuda_synchronize(0));
  CT_OK(ctorch_cuda_memory_stats_get(&s0, 0));
  CT_OK(ctorch_empty_memory_format(&t, &n, 1, &f32, NULL, &d, NULL, NULL));
  CT_OK(ctorch_cuda_memory_stats_get(&s1, 0));
  ck_assert_uint_ge(s1.allocated_bytes, s0.allocated_bytes + (uint64_t)n * 4);
  ck_assert_uint_ge(s1.reserved_bytes, s1.allocated_bytes);
  ck_assert_uint_ge(s1.peak_allocated_bytes, s1.allocated_bytes);
  ctorch_tensor_free(t);
  CT_OK(ctorch_cuda_memory_stats_get(&s2, 0));
  ck_assert_uint_eq(s2.allocated_bytes, s0.allocated_bytes);
  ck_assert_uint_ge(s2.peak_allocated_bytes, s1.allocated_bytes); /* the peak remembers */
  CT_OK(ctorch_cuda_reset_peak_memory_stats(0));
  CT_OK(ctorch_cuda_memory_stats_get(&s2, 0));
  ck_assert_uint_eq(s2.peak_allocated_bytes, s2.allocated_bytes);
  CT_OK(ctorch_cuda_empty_cache());
  CT_OK(ctorch_cuda_memory_stats_get(&s2, 0));
  ck_assert_uint_le(s2.reserved_bytes, s1.reserved_bytes - (uint64_t)n * 4); /* the 64 MiB went back */
}
END_TEST

/* CUDA generators: per device, seeded; ctorch_manual_seed seeds them all. */
START_TEST(test_cuda_generators) {
  int n = cuda_count(), i;
  ctorch_device d0 = dev(CTORCH_DEVICE_CUDA, 0), gd;
  ctorch_generator g1 = NULL, g2 = NULL;
  ctorch_tensor a = NULL, b = NULL;
  CT_OK(ctorch_generator_new(&g1, d0, 7));
  CT_OK(ctorch_generator_new(&g2, d0, 7));
  CT_OK(ctorch_generator_device(&gd, g1));
  ck_assert_int_eq(gd.type, CTORCH_DEVICE_CUDA);
  ck_assert_int_eq(gd.index, 0);
  a = randn_on(d0, g1, 1000);
  b = randn_on(d0, g2, 1000);
  ck_assert(tensors_equal(a, b));
  ctorch_tensor_free(a);
  ctorch_tensor_free(b);
  ctorch_generator_free(g2);
  g2 = NULL;
  for (i = 0; i < n; ++i) {
    ctorch_device di = dev(CTORCH_DEVICE_CUDA, i);
    CT_OK(ctorch_manual_seed(4242));
    a = randn_on(di, NULL, 100); /* cuda:i's default generator */
    CT_OK(ctorch_generator_new(&g2, di, 4242));
    b = randn_on(di, g2, 100);
    ck_assert_msg(tensors_equal(a, b), "cuda:%d not seeded by ctorch_manual_seed", i);
    ctorch_tensor_free(a);
    ctorch_tensor_free(b);
    ctorch_generator_free(g2);
    g2 = NULL;
  }
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_generator_new(&g2, dev(CTORCH_DEVICE_CUDA, n), 1));
  ctorch_generator_free(g1);
  ctorch_generator_free(g2);
}
END_TEST

START_TEST(test_cuda_pinned_async) {
  const float v[4] = {1, 2, 3, 4};
  const int64_t sz[1] = {4};
  ctorch_tensor t = ct_floats(v, sz, 1), pinned = NULL, on_gpu = NULL, back = NULL;
  int pin = -1;
  CT_OK(ctorch_tensor_pin_memory(&pinned, t));
  CT_OK(ctorch_tensor_is_pinned(&pin, pinned));
  ck_assert_int_eq(pin, 1);
  CT_OK(ctorch_tensor_is_pinned(&pin, t));
  ck_assert_int_eq(pin, 0);
  CT_OK(ctorch_tensor_to_device_async(&on_gpu, pinned, dev(CTORCH_DEVICE_CUDA, 0)));
  CT_OK(ctorch_tensor_to_device_async(&back, on_gpu, ctorch_device_cpu()));
  CT_OK(ctorch_cuda_synchronize(0));
  ck_assert(tensors_equal(back, t));
  ctorch_tensor_free(t);
  ctorch_tensor_free(pinned);
  ctorch_tensor_free(on_gpu);
  ctorch_tensor_free(back);
}
END_TEST

START_TEST(test_cuda_streams_events) {
  ctorch_device d0 = dev(CTORCH_DEVICE_CUDA, 0), sd;
  ctorch_stream s = NULL, cur = NULL, cur2 = NULL, def = NULL;
  ctorch_stream_scope scope = NULL, inner = NULL;
  ctorch_event start = NULL, end = NULL, plain = NULL;
  int64_t id_s = 0, id_cur = 0, id_def = 0;
  int done = 0;
  double ms = -1;
  ctorch_tensor x = NULL, y = NULL;
  CT_OK(ctorch_stream_new(&s, d0, 0));
  CT_OK(ctorch_stream_default(&def, d0));
  CT_OK(ctorch_stream_device(&sd, s));
  ck_assert_int_eq(sd.type, CTORCH_DEVICE_CUDA);
  CT_OK(ctorch_stream_id(&id_s, s));
  CT_OK(ctorch_stream_id(&id_def, def));
  ck_assert(id_s != id_def);
  /* Inside the scope s is current; after it, the previous stream is. */
  CT_OK(ctorch_stream_scope_enter(&scope, s));
  CT_OK(ctorch_stream_current(&cur, d0));
  CT_OK(ctorch_stream_id(&id_cur, cur));
  ck_assert(id_cur == id_s);
  CT_OK(ctorch_stream_scope_enter(&inner, def));
  CT_OK(ctorch_stream_scope_leave(inner));
  /* Work queued in the scope runs on s; events time it. */
  CT_OK(ctorch_event_new(&start, CTORCH_DEVICE_CUDA, 1));
  CT_OK(ctorch_event_new(&end, CTORCH_DEVICE_CUDA, 1));
  CT_OK(ctorch_event_new(&plain, CTORCH_DEVICE_CUDA, 0));
  CT_OK(ctorch_event_query(&done, plain)); /* never recorded: done */
  ck_assert_int_eq(done, 1);
  CT_OK(ctorch_event_record(start, NULL));
  x = randn_on(d0, NULL, 1 << 20);
  CT_OK(ctorch_mul_Scalar(&y, x, ctorch_scalar_float(2.0)));
  CT_OK(ctorch_event_record(end, s));
  CT_OK(ctorch_event_record(plain, NULL));
  CT_OK(ctorch_stream_scope_leave(scope));
  CT_OK(ctorch_stream_current(&cur2, d0));
  CT_OK(ctorch_stream_id(&id_cur, cur2));
  ck_assert(id_cur != id_s);
  /* The current stream waits for s before reading y. */
  CT_OK(ctorch_stream_wait_stream(cur2, s));
  CT_OK(ctorch_stream_wait_event(cur2, end));
  CT_OK(ctorch_event_synchronize(end));
  CT_OK(ctorch_event_query(&done, end));
  ck_assert_int_eq(done, 1);
  {
    ctorch_status st = ctorch_event_elapsed_ms(&ms, start, end);
    ck_assert_msg(st == CTORCH_OK || st == CTORCH_NOT_IMPLEMENTED, "%s", ctorch_last_error());
    if (st == CTORCH_OK) ck_assert(ms >= 0.0);
  }
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_event_elapsed_ms(&ms, start, plain));
  CT_ERROR_HAS("enable_timing");
  CT_OK(ctorch_stream_synchronize(s));
  CT_OK(ctorch_stream_query(&done, s));
  ck_assert_int_eq(done, 1);
  ctorch_tensor_free(x);
  ctorch_tensor_free(y);
  ctorch_event_free(start);
  ctorch_event_free(end);
  ctorch_event_free(plain);
  ctorch_stream_free(s);
  ctorch_stream_free(cur);
  ctorch_stream_free(cur2);
  ctorch_stream_free(def);
}
END_TEST

struct leave_arg {
  ctorch_stream_scope scope;
  ctorch_status st;
};
static void *leave_elsewhere(void *p) {
  struct leave_arg *a = (struct leave_arg *)p;
  a->st = ctorch_stream_scope_leave(a->scope);
  return NULL;
}

START_TEST(test_cuda_stream_scope_thread) {
  ctorch_stream s = NULL;
  struct leave_arg a;
  pthread_t th;
  CT_OK(ctorch_stream_new(&s, dev(CTORCH_DEVICE_CUDA, 0), 1));
  CT_OK(ctorch_stream_scope_enter(&a.scope, s));
  ck_assert_int_eq(pthread_create(&th, NULL, leave_elsewhere, &a), 0);
  pthread_join(th, NULL);
  ck_assert_int_eq(a.st, CTORCH_RUNTIME);
  {
    /* a.scope was released by that leave; this thread's next stream-scope
     * call closes it, restoring the previous stream. */
    ctorch_stream_scope next = NULL;
    ctorch_stream cur = NULL;
    int64_t id_s = 0, id_cur = 0;
    CT_OK(ctorch_stream_id(&id_s, s));
    CT_OK(ctorch_stream_scope_enter(&next, s));
    CT_OK(ctorch_stream_scope_leave(next));
    CT_OK(ctorch_stream_current(&cur, dev(CTORCH_DEVICE_CUDA, 0)));
    CT_OK(ctorch_stream_id(&id_cur, cur));
    ck_assert(id_cur != id_s);
    ctorch_stream_free(cur);
  }
  ctorch_stream_free(s);
}
END_TEST

/* Capture y = x * 2 + 1 and replay it on new contents of x. */
START_TEST(test_cuda_graph) {
  ctorch_device d0 = dev(CTORCH_DEVICE_CUDA, 0);
  ctorch_cuda_graph g = NULL;
  ctorch_tensor x = NULL, t = NULL, y = NULL, src = NULL;
  const int64_t n = 1024;
  double v = 0;
  int i;
  x = randn_on(d0, NULL, n);
  /* Warm-up outside capture. */
  for (i = 0; i < 2; ++i) {
    CT_OK(ctorch_mul_Scalar(&t, x, ctorch_scalar_float(2.0)));
    CT_OK(ctorch_add_Scalar(&y, t, ctorch_scalar_float(1.0), ctorch_scalar_float(1.0)));
    ctorch_tensor_free(t);
    ctorch_tensor_free(y);
  }
  CT_OK(ctorch_cuda_graph_new(&g));
  CT_FAILS(CTORCH_RUNTIME, ctorch_cuda_graph_capture_end(g)); /* not capturing */
  CT_OK(ctorch_cuda_graph_capture_begin(g, NULL));
  CT_FAILS(CTORCH_RUNTIME, ctorch_cuda_graph_capture_begin(g, NULL));
  CT_OK(ctorch_mul_Scalar(&t, x, ctorch_scalar_float(2.0)));
  CT_OK(ctorch_add_Scalar(&y, t, ctorch_scalar_float(1.0), ctorch_scalar_float(1.0)));
  CT_OK(ctorch_cuda_graph_capture_end(g));
  /* New input, replay, read the captured output. */
  {
    ctorch_dtype f32 = CTORCH_FLOAT32;
    CT_OK(ctorch_full(&src, &n, 1, ctorch_scalar_float(3.0), &f32, NULL, &d0, NULL));
  }
  CT_OK(ctorch_copy_(x, src, 0));
  CT_OK(ctorch_cuda_graph_replay(g));
  CT_OK(ctorch_cuda_synchronize(0));
  {
    ctorch_tensor s = NULL;
    CT_OK(ctorch_sum(&s, y, NULL));
    CT_OK(ctorch_tensor_item_double(&v, s));
    ctorch_tensor_free(s);
  }
  ck_assert(fabs(v - 7.0 * (double)n) < 1e-3);
  CT_OK(ctorch_cuda_graph_reset(g));
  ctorch_tensor_free(t);
  CT_OK(ctorch_cuda_graph_capture_begin(g, NULL)); /* capturable again after reset */
  CT_OK(ctorch_mul_Scalar(&t, x, ctorch_scalar_float(2.0)));
  CT_OK(ctorch_cuda_graph_capture_end(g));
  CT_OK(ctorch_cuda_graph_replay(g));
  CT_OK(ctorch_cuda_synchronize(0));
  ctorch_cuda_graph_free(g);
  ctorch_tensor_free(x);
  ctorch_tensor_free(t);
  ctorch_tensor_free(y);
  ctorch_tensor_free(src);
}
END_TEST

/* A one-rank NCCL group: all_reduce and broadcast on a CUDA tensor. */
START_TEST(test_cuda_nccl) {
  char path[] = "/tmp/ctorch_test_nccl_XXXXXX";
  int fd = mkstemp(path), avail = 0;
  ctorch_store store = NULL;
  ctorch_process_group pg = NULL;
  const char *name = NULL;
  ctorch_tensor t = NULL;
  double v = 0;
  ctorch_device d0 = dev(CTORCH_DEVICE_CUDA, 0);
  ctorch_dtype f32 = CTORCH_FLOAT32;
  const int64_t n = 4;
  ck_assert_int_ge(fd, 0);
  close(fd);
  CT_OK(ctorch_store_file_new(&store, path, 1, 60000));
  CT_OK(ctorch_dist_nccl_available(&avail));
  if (!avail) { /* a CUDA libtorch built without nccl.h: refused, saying so */
    CT_FAILS(CTORCH_NOT_IMPLEMENTED, ctorch_process_group_new_nccl(&pg, store, 0, 1, 60000));
  } else {
    CT_OK(ctorch_cuda_set_device(0));
    CT_OK(ctorch_process_group_new_nccl(&pg, store, 0, 1, 60000));
    CT_OK(ctorch_process_group_backend(&name, pg));
    ck_assert_str_eq(name, "nccl");
    CT_OK(ctorch_full(&t, &n, 1, ctorch_scalar_float(2.5), &f32, NULL, &d0, NULL));
    CT_OK(ctorch_dist_all_reduce(pg, t, CTORCH_REDUCE_SUM));
    CT_OK(ctorch_dist_broadcast(pg, t, 0));
    CT_OK(ctorch_dist_all_reduce(pg, t, CTORCH_REDUCE_AVG));
    {
      ctorch_tensor s = NULL;
      CT_OK(ctorch_sum(&s, t, NULL));
      CT_OK(ctorch_tensor_item_double(&v, s));
      ctorch_tensor_free(s);
    }
    ck_assert(fabs(v - 10.0) < 1e-6);
    CT_OK(ctorch_dist_barrier(pg));
    ctorch_process_group_free(pg);
    ctorch_tensor_free(t);
  }
  ctorch_store_free(store);
  unlink(path);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("cuda");
  TCase *tc = tcase_create("everywhere");
  TCase *gpu = tcase_create("gpu");
  tcase_add_test(tc, test_no_cuda_statuses);
  tcase_add_test(tc, test_argument_checks);
  tcase_add_test(tc, test_cpu_generators);
  tcase_add_test(tc, test_async_copy_cpu);
  suite_add_tcase(s, tc);
  tcase_set_tags(gpu, "cuda");
  tcase_add_test(gpu, test_cuda_devices);
  tcase_add_test(gpu, test_cuda_memory_stats);
  tcase_add_test(gpu, test_cuda_generators);
  tcase_add_test(gpu, test_cuda_pinned_async);
  tcase_add_test(gpu, test_cuda_streams_events);
  tcase_add_test(gpu, test_cuda_stream_scope_thread);
  tcase_add_test(gpu, test_cuda_graph);
  tcase_add_test(gpu, test_cuda_nccl);
  suite_add_tcase(s, gpu);
  return s;
}

CTORCH_CHECK_MAIN()
