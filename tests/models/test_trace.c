/* Tracing C code into TorchScript modules (ctorch_tracer_*): replay equals
 * the ops run one by one, Python's torch.jit.load runs the saved module with
 * the same outputs, training through the module trains the caller's
 * tensors, every misuse returns a status, and what tracing cannot capture
 * behaves as docs/interop-models.md says. */
#include <pthread.h>
#include <unistd.h>

#include "check_main.h"

#define CHECK(call) CT_OK(call)
#include "lenet5_model.h"

static const ctorch_dtype F32 = CTORCH_FLOAT32;

static ctorch_tensor randn2(int64_t a, int64_t b) {
  const int64_t s[2] = {a, b};
  ctorch_tensor t = NULL;
  CT_OK(ctorch_randn(&t, s, 2, &F32, NULL, NULL, NULL));
  return t;
}

static ctorch_tensor randn4(int64_t a, int64_t b, int64_t c, int64_t d) {
  const int64_t s[4] = {a, b, c, d};
  ctorch_tensor t = NULL;
  CT_OK(ctorch_randn(&t, s, 4, &F32, NULL, NULL, NULL));
  return t;
}

static int graph_has(ctorch_module m, const char *needle) {
  char *g = NULL;
  int found;
  CT_OK(ctorch_module_graph_str(&g, m, "forward"));
  found = strstr(g, needle) != NULL;
  ctorch_string_free(g);
  return found;
}

/* The tiny model of several tests: relu(fc1(x)), fc1 = (w [4,3], b [4]). */
static ctorch_tensor mlp(ctorch_tensor x, ctorch_tensor w, ctorch_tensor b) {
  ctorch_tensor h = NULL, y = NULL;
  CT_OK(ctorch_linear(&h, x, w, b));
  CT_OK(ctorch_relu(&y, h));
  ctorch_tensor_free(h);
  return y;
}

static ctorch_module trace_mlp(ctorch_tensor w, ctorch_tensor b) {
  ctorch_tracer tr = NULL;
  ctorch_module m = NULL;
  ctorch_tensor x = randn2(2, 3), y;
  CT_OK(ctorch_tracer_new(&tr, "Tiny"));
  CT_OK(ctorch_tracer_add_parameter(tr, "fc1.weight", w));
  CT_OK(ctorch_tracer_add_parameter(tr, "fc1.bias", b));
  CT_OK(ctorch_tracer_begin(tr, &x, 1));
  y = mlp(x, w, b);
  CT_OK(ctorch_tracer_finish(&m, tr, &y, 1));
  ctorch_tracer_free(tr);
  ctorch_tensor_free(y);
  ctorch_tensor_free(x);
  return m;
}

START_TEST(replay_equals_ops) {
  ctorch_tensor w = randn2(4, 3), b = NULL, x2 = randn2(5, 3), want, got = NULL, p = NULL;
  const int64_t bs[1] = {4};
  ctorch_module m;
  ctorch_tensor_dict d = NULL;
  const char *k = NULL;
  size_t n = 0;
  int active = -1;
  CT_OK(ctorch_randn(&b, bs, 1, &F32, NULL, NULL, NULL));
  m = trace_mlp(w, b);
  CT_OK(ctorch_tracer_active(&active));
  ck_assert_int_eq(active, 0);
  ck_assert(graph_has(m, "aten::linear"));
  ck_assert(graph_has(m, "aten::relu"));
  /* an nn.Module's training flag, on the module and its submodule */
  CT_OK(ctorch_module_is_training(&active, m));
  ck_assert_int_eq(active, 1);
  CT_OK(ctorch_module_eval(m));
  CT_OK(ctorch_module_is_training(&active, m));
  ck_assert_int_eq(active, 0);
  /* another batch size than the example's: the graph is not specialised to it */
  want = mlp(x2, w, b);
  CT_OK(ctorch_module_forward_tensors(&got, m, &x2, 1));
  ck_assert_double_eq(ct_max_abs_diff(want, got), 0.0);
  /* the module's parameters are the caller's tensors, under their dotted names */
  CT_OK(ctorch_module_named_parameters(&d, m));
  CT_OK(ctorch_tensor_dict_size(&n, d));
  ck_assert_uint_eq(n, 2);
  CT_OK(ctorch_tensor_dict_key(&k, d, 0));
  ck_assert_str_eq(k, "fc1.weight");
  CT_OK(ctorch_module_parameter(&p, m, "fc1.bias"));
  CT_ASSERT_SAME(p, b);
  ctorch_tensor_dict_free(d);
  ctorch_tensor_free(p);
  ctorch_tensor_free(want);
  ctorch_tensor_free(got);
  ctorch_module_free(m);
  ctorch_tensor_free(x2);
  ctorch_tensor_free(w);
  ctorch_tensor_free(b);
}
END_TEST

/* ---- LeNet-5 (examples/lenet5_model.h), saved for Python ------------------ */

static ctorch_module trace_lenet(ctorch_tensor *p, ctorch_tensor x) {
  ctorch_tracer tr = NULL;
  ctorch_module m = NULL;
  ctorch_tensor logits;
  int i;
  CT_OK(ctorch_tracer_new(&tr, "LeNet5"));
  for (i = 0; i < NPARAMS; ++i) CT_OK(ctorch_tracer_add_parameter(tr, PARAM_NAMES[i], p[i]));
  CT_OK(ctorch_tracer_begin(tr, &x, 1));
  logits = forward(p, x);
  CT_OK(ctorch_tracer_finish(&m, tr, &logits, 1));
  ctorch_tensor_free(logits);
  ctorch_tracer_free(tr);
  return m;
}

static void write_raw(const char *path, ctorch_tensor t) {
  int64_t n = 0;
  float *v;
  FILE *f = fopen(path, "wb");
  ck_assert_msg(f != NULL, "cannot write %s", path);
  CT_OK(ctorch_tensor_numel(&n, t));
  v = malloc(sizeof(float) * (size_t)n);
  CT_OK(ctorch_tensor_copy_to(v, sizeof(float) * (size_t)n, t));
  ck_assert_uint_eq(fwrite(v, sizeof(float), (size_t)n, f), (size_t)n);
  fclose(f);
  free(v);
}

static ctorch_tensor lenet_ops(ctorch_tensor *p, ctorch_tensor x) {
  ctorch_tensor y = NULL, out = forward(p, x);
  CT_OK(ctorch_detach(&y, out));
  ctorch_tensor_free(out);
  return y;
}

START_TEST(lenet_saved_runs_in_python) {
  ctorch_tensor p[NPARAMS], x4 = randn4(4, 1, 28, 28), x3 = randn4(3, 1, 28, 28), y4, y3, got = NULL;
  ctorch_module m, back = NULL;
  const char *py = getenv("CTORCH_TORCH_PYTHON"), *src = getenv("CTORCH_SOURCE_DIR");
  char dir[] = "/tmp/ctorch-trace-XXXXXX", cmd[8192], keys[512] = "";
  int i, rc;
  ck_assert_msg(py && src, "CTORCH_TORCH_PYTHON and CTORCH_SOURCE_DIR must be set (run under ctest)");
  ck_assert_ptr_nonnull(mkdtemp(dir));
  make_model(p);
  m = trace_lenet(p, x4);
  ck_assert(graph_has(m, "aten::_convolution")); /* conv2d is recorded as what it calls, as in Python */
  ck_assert(graph_has(m, "aten::max_pool2d"));
  y4 = lenet_ops(p, x4);
  y3 = lenet_ops(p, x3);
  snprintf(cmd, sizeof cmd, "%s/lenet.pt", dir);
  CT_OK(ctorch_module_save(m, cmd));
  /* C reads its own file back too */
  CT_OK(ctorch_module_load(&back, cmd, NULL));
  CT_OK(ctorch_module_forward_tensors(&got, back, &x3, 1));
  ck_assert_double_le(ct_max_abs_diff(got, y3), 1e-6);
  snprintf(cmd, sizeof cmd, "%s/x4.bin", dir), write_raw(cmd, x4);
  snprintf(cmd, sizeof cmd, "%s/y4.bin", dir), write_raw(cmd, y4);
  snprintf(cmd, sizeof cmd, "%s/x3.bin", dir), write_raw(cmd, x3);
  snprintf(cmd, sizeof cmd, "%s/y3.bin", dir), write_raw(cmd, y3);
  for (i = 0; i < NPARAMS; ++i) {
    if (i) strcat(keys, ",");
    strcat(keys, PARAM_NAMES[i]);
  }
  snprintf(cmd, sizeof cmd,
           "'%s' '%s/tests/models/trace_check.py' %s/lenet.pt LeNet5 %s "
           "%s/x4.bin:4,1,28,28=%s/y4.bin:4,10 %s/x3.bin:3,1,28,28=%s/y3.bin:3,10",
           py, src, dir, keys, dir, dir, dir, dir);
  rc = system(cmd);
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  ck_assert_int_eq(system(cmd), 0);
  ck_assert_msg(rc == 0, "Python's check of the traced module failed (exit %d)", rc);
  for (i = 0; i < NPARAMS; ++i) ctorch_tensor_free(p[i]);
  ctorch_tensor_free(x4), ctorch_tensor_free(x3), ctorch_tensor_free(y4), ctorch_tensor_free(y3);
  ctorch_tensor_free(got);
  ctorch_module_free(m);
  ctorch_module_free(back);
}
END_TEST

/* Forward through the module, backward, optimizer: the gradients are the
 * op-by-op ones and the step trains the caller's tensors (the module's). */
START_TEST(training_through_module) {
  ctorch_tensor p[NPARAMS], x = randn4(8, 1, 28, 28), y = NULL, out = NULL, loss = NULL, g_ops[NPARAMS], before = NULL,
                            after = NULL;
  const int64_t ys[1] = {8};
  const ctorch_dtype i64 = CTORCH_INT64;
  ctorch_module m;
  ctorch_optimizer opt = NULL;
  int i;
  make_model(p);
  CT_OK(ctorch_randint(&y, 10, ys, 1, &i64, NULL, NULL, NULL));
  m = trace_lenet(p, x);
  /* the trace's example forward recorded autograd too: clear its grads */
  CT_OK(ctorch_optimizer_new(&opt, CTORCH_OPTIM_SGD, p, NPARAMS, NULL));
  /* op by op */
  CT_OK(ctorch_optimizer_zero_grad(opt, 1));
  loss = batch_loss(p, x, y, &out);
  CT_OK(ctorch_tensor_backward(loss, NULL, 0, 0, NULL, 0));
  for (i = 0; i < NPARAMS; ++i) {
    ctorch_tensor g = NULL;
    CT_OK(ctorch_tensor_grad(&g, p[i]));
    CT_OK(ctorch_clone(&g_ops[i], g, NULL));
    ctorch_tensor_free(g);
  }
  ctorch_tensor_free(out);
  ctorch_tensor_free(loss);
  /* through the module, three times (the executor optimises after profiling runs) */
  for (int rep = 0; rep < 3; ++rep) {
    CT_OK(ctorch_optimizer_zero_grad(opt, 1));
    CT_OK(ctorch_module_forward_tensors(&out, m, &x, 1));
    CT_OK(ctorch_cross_entropy_loss(&loss, out, y, NULL, 1, -100, 0.0));
    CT_OK(ctorch_tensor_backward(loss, NULL, 0, 0, NULL, 0));
    for (i = 0; i < NPARAMS; ++i) {
      ctorch_tensor g = NULL;
      CT_OK(ctorch_tensor_grad(&g, p[i]));
      ck_assert_ptr_nonnull(g);
      double d = ct_max_abs_diff(g, g_ops[i]);
      ck_assert_msg(d <= 1e-5, "%s: gradient differs by %g", PARAM_NAMES[i], d);
      ctorch_tensor_free(g);
    }
    ctorch_tensor_free(out);
    ctorch_tensor_free(loss);
  }
  CT_OK(ctorch_module_forward_tensors(&before, m, &x, 1));
  CT_OK(ctorch_optimizer_step(opt));
  CT_OK(ctorch_module_forward_tensors(&after, m, &x, 1));
  ck_assert_msg(ct_max_abs_diff(before, after) > 1e-4, "the step did not change the module's output");
  ctorch_optimizer_free(opt);
  for (i = 0; i < NPARAMS; ++i) ctorch_tensor_free(p[i]), ctorch_tensor_free(g_ops[i]);
  ctorch_tensor_free(x), ctorch_tensor_free(y), ctorch_tensor_free(before), ctorch_tensor_free(after);
  ctorch_module_free(m);
}
END_TEST

START_TEST(several_outputs_and_buffers) {
  ctorch_tensor x = randn2(2, 3), scale = randn2(1, 3), a = NULL, b = NULL, c = NULL, outs[2], got = NULL, want = NULL;
  ctorch_value va = NULL, vb = NULL, vc = NULL, inner = NULL, top = NULL, items[2], r = NULL, r1 = NULL, xv = NULL;
  ctorch_value_kind kind;
  ctorch_tracer tr = NULL;
  ctorch_module m = NULL, m2 = NULL;
  size_t n = 0;
  /* two tensor outputs: forward returns a tuple */
  CT_OK(ctorch_tracer_new(&tr, NULL));
  CT_OK(ctorch_tracer_add_buffer(tr, "scale", scale));
  CT_OK(ctorch_tracer_begin(tr, &x, 1));
  CT_OK(ctorch_mul_Tensor(&a, x, scale));
  CT_OK(ctorch_neg(&b, a));
  outs[0] = a, outs[1] = b;
  CT_OK(ctorch_tracer_finish(&m, tr, outs, 2));
  ctorch_tracer_free(tr);
  CT_OK(ctorch_value_tensor(&xv, x));
  CT_OK(ctorch_module_forward(&r, m, &xv, 1));
  CT_OK(ctorch_value_kind_of(&kind, r));
  ck_assert_int_eq(kind, CTORCH_VALUE_TUPLE);
  CT_OK(ctorch_value_size(&n, r));
  ck_assert_uint_eq(n, 2);
  CT_OK(ctorch_value_get(&r1, r, 1));
  CT_OK(ctorch_value_to_tensor(&got, r1));
  ck_assert_double_eq(ct_max_abs_diff(got, b), 0.0);
  CT_OK(ctorch_module_buffer(&want, m, "scale"));
  CT_ASSERT_SAME(want, scale);
  ctorch_tensor_free(want), ctorch_tensor_free(got), ctorch_value_free(r), ctorch_value_free(r1);
  ctorch_tensor_free(a), ctorch_tensor_free(b);

  /* a nested structure: (a, (b, c)) */
  CT_OK(ctorch_tracer_new(&tr, "Nested"));
  CT_OK(ctorch_tracer_begin(tr, &x, 1));
  CT_OK(ctorch_relu(&a, x));
  CT_OK(ctorch_tanh(&b, x));
  CT_OK(ctorch_add_Tensor(&c, a, b, ctorch_scalar_int(1)));
  CT_OK(ctorch_value_tensor(&va, a));
  CT_OK(ctorch_value_tensor(&vb, b));
  CT_OK(ctorch_value_tensor(&vc, c));
  items[0] = vb, items[1] = vc;
  CT_OK(ctorch_value_tuple(&inner, items, 2));
  items[0] = va, items[1] = inner;
  CT_OK(ctorch_value_tuple(&top, items, 2));
  CT_OK(ctorch_tracer_finish_value(&m2, tr, top));
  ctorch_tracer_free(tr);
  CT_OK(ctorch_module_forward(&r, m2, &xv, 1));
  CT_OK(ctorch_value_get(&r1, r, 1));
  CT_OK(ctorch_value_kind_of(&kind, r1));
  ck_assert_int_eq(kind, CTORCH_VALUE_TUPLE);
  ctorch_value_free(r), ctorch_value_free(r1);
  ctorch_value_free(va), ctorch_value_free(vb), ctorch_value_free(vc), ctorch_value_free(inner), ctorch_value_free(top);
  ctorch_value_free(xv);
  ctorch_tensor_free(a), ctorch_tensor_free(b), ctorch_tensor_free(c);
  ctorch_module_free(m), ctorch_module_free(m2);
  ctorch_tensor_free(x), ctorch_tensor_free(scale);
}
END_TEST

/* ---- every misuse is a status ---------------------------------------------- */

START_TEST(argument_and_phase_errors) {
  ctorch_tensor x = randn2(2, 3), w = randn2(4, 3), stray = randn2(2, 4), y, nul = NULL;
  ctorch_tracer tr = NULL;
  ctorch_module m = NULL;
  ctorch_value iv = NULL;
  int active = -1;
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_tracer_new(NULL, "A"));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_tracer_new(&tr, "not a name"));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_tracer_new(&tr, "class"));
  ck_assert_ptr_null(tr);
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_tracer_add_parameter(NULL, "w", w));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_tracer_begin(NULL, &x, 1));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_tracer_finish(&m, NULL, &x, 1));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_tracer_abandon(NULL));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_tracer_active(NULL));
  ctorch_tracer_free(NULL);

  CT_OK(ctorch_tracer_new(&tr, "A"));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_tracer_add_parameter(tr, NULL, w));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_tracer_add_parameter(tr, "w", NULL));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_tracer_add_parameter(tr, "fc..w", w));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_tracer_add_parameter(tr, "fc.1w", w));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_tracer_add_parameter(tr, "lambda.w", w));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_tracer_add_parameter(tr, "training", w));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_tracer_add_parameter(tr, "__init__", w));
  CT_OK(ctorch_tracer_add_parameter(tr, "fc.w", w));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_tracer_add_parameter(tr, "fc.w", stray));
  CT_ERROR_HAS("already added");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_tracer_add_buffer(tr, "fc", stray));
  CT_ERROR_HAS("conflict");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_tracer_add_buffer(tr, "fc.w.x", stray));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_tracer_add_buffer(tr, "other", w));
  CT_ERROR_HAS("already added as 'fc.w'");

  /* finishing or abandoning on a trace that has not begun */
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_tracer_finish(&m, tr, &x, 1));
  CT_ERROR_HAS("has not begun");
  /* bad inputs: nothing starts */
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_tracer_begin(tr, NULL, 1));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_tracer_begin(tr, &nul, 1));
  {
    ctorch_tensor two[2] = {x, x};
    CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_tracer_begin(tr, two, 2));
    CT_ERROR_HAS("same tensor as element 0");
  }
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_tracer_begin(tr, &w, 1));
  CT_ERROR_HAS("parameter or buffer 'fc.w'");
  CT_OK(ctorch_tracer_active(&active));
  ck_assert_int_eq(active, 0);

  CT_OK(ctorch_tracer_begin(tr, &x, 1));
  CT_OK(ctorch_tracer_active(&active));
  ck_assert_int_eq(active, 1);
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_tracer_begin(tr, &x, 1));
  CT_ERROR_HAS("already called");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_tracer_add_parameter(tr, "late", stray));
  CT_ERROR_HAS("before ctorch_tracer_begin");
  y = mlp(x, w, NULL);
  /* wrong outputs leave the trace recording */
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_tracer_finish(NULL, tr, &y, 1));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_tracer_finish(&m, tr, &y, 0));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_tracer_finish(&m, tr, &nul, 1));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_tracer_finish(&m, tr, &stray, 1));
  CT_ERROR_HAS("not computed during the trace");
  CT_OK(ctorch_value_int(&iv, 3));
  CT_FAILS(CTORCH_TYPE, ctorch_tracer_finish_value(&m, tr, iv));
  CT_ERROR_HAS("is an int");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_tracer_finish_value(&m, tr, NULL));
  ck_assert_ptr_null(m);
  CT_OK(ctorch_tracer_active(&active));
  ck_assert_int_eq(active, 1);
  CT_OK(ctorch_tracer_finish(&m, tr, &y, 1));
  ck_assert_ptr_nonnull(m);
  {
    ctorch_module again = (ctorch_module)1;
    CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_tracer_finish(&again, tr, &y, 1));
    CT_ERROR_HAS("already finished");
    ck_assert_ptr_null(again);
  }
  CT_OK(ctorch_tracer_abandon(tr)); /* a finished trace stays finished */
  ctorch_tracer_free(tr);

  /* module helpers */
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_module_save(NULL, "/tmp/x.pt"));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_module_save(m, NULL));
  CT_FAILS(CTORCH_IO, ctorch_module_save(m, "/nonexistent-dir/x.pt"));
  {
    char *g = (char *)1;
    CT_FAILS(CTORCH_INDEX, ctorch_module_graph_str(&g, m, "backward"));
    ck_assert_ptr_null(g);
  }
  ctorch_module_free(m);
  ctorch_value_free(iv);
  ctorch_tensor_free(y), ctorch_tensor_free(x), ctorch_tensor_free(w), ctorch_tensor_free(stray);
}
END_TEST

START_TEST(abandon_and_free_mid_trace) {
  ctorch_tensor x = randn2(2, 3), y = NULL;
  ctorch_tracer tr = NULL, tr2 = NULL;
  ctorch_module m = NULL;
  int active = -1;
  /* nested traces are refused */
  CT_OK(ctorch_tracer_new(&tr, NULL));
  CT_OK(ctorch_tracer_new(&tr2, NULL));
  CT_OK(ctorch_tracer_begin(tr, &x, 1));
  CT_FAILS(CTORCH_RUNTIME, ctorch_tracer_begin(tr2, &x, 1));
  CT_ERROR_HAS("already recording on this thread");
  /* abandon: the thread stops recording, the trace cannot be finished */
  CT_OK(ctorch_tracer_abandon(tr));
  CT_OK(ctorch_tracer_active(&active));
  ck_assert_int_eq(active, 0);
  CT_OK(ctorch_neg(&y, x));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_tracer_finish(&m, tr, &y, 1));
  CT_ERROR_HAS("abandoned");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_tracer_begin(tr, &x, 1));
  ctorch_tracer_free(tr);
  ctorch_tensor_free(y);
  /* free while recording, on the same thread */
  CT_OK(ctorch_tracer_begin(tr2, &x, 1));
  CT_OK(ctorch_neg(&y, x));
  ctorch_tracer_free(tr2);
  CT_OK(ctorch_tracer_active(&active));
  ck_assert_int_eq(active, 0);
  ctorch_tensor_free(y);
  ctorch_tensor_free(x);
}
END_TEST

/* An op that fails during the trace stops libtorch's tracer on the thread. */
START_TEST(failed_op_ends_the_trace) {
  ctorch_tensor x = randn2(2, 3), bad = NULL, y = NULL;
  ctorch_tracer tr = NULL;
  ctorch_module m = NULL;
  int active = -1;
  CT_OK(ctorch_tracer_new(&tr, NULL));
  CT_OK(ctorch_tracer_begin(tr, &x, 1));
  CT_FAILS(CTORCH_RUNTIME, ctorch_mm(&bad, x, x)); /* 2x3 @ 2x3 */
  CT_OK(ctorch_tracer_active(&active));
  ck_assert_int_eq(active, 0);
  CT_OK(ctorch_neg(&y, x));
  CT_FAILS(CTORCH_RUNTIME, ctorch_tracer_finish(&m, tr, &y, 1));
  CT_ERROR_HAS("stopped tracing");
  ck_assert_ptr_null(m);
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_tracer_finish(&m, tr, &y, 1));
  ctorch_tracer_free(tr);
  ctorch_tensor_free(y);

  /* an untraced tensor that requires grad cannot become a constant */
  {
    ctorch_tensor w = randn2(3, 3);
    CT_OK(ctorch_tensor_set_requires_grad(w, 1));
    CT_OK(ctorch_tracer_new(&tr, NULL));
    CT_OK(ctorch_tracer_begin(tr, &x, 1));
    CT_FAILS(CTORCH_RUNTIME, ctorch_mm(&bad, x, w));
    CT_ERROR_HAS("requires grad");
    CT_OK(ctorch_tracer_active(&active));
    ck_assert_int_eq(active, 0);
    ctorch_tracer_free(tr);
    ctorch_tensor_free(w);
  }
  ctorch_tensor_free(x);
}
END_TEST

/* ---- threads ------------------------------------------------------------------ */

typedef struct {
  ctorch_tracer tr;
  ctorch_tensor y;
  ctorch_status finish, abandon, active_status;
  int active;
  int do_free;
} other_thread;

static void *on_other_thread(void *arg) {
  other_thread *o = arg;
  ctorch_module m = NULL;
  o->finish = ctorch_tracer_finish(&m, o->tr, &o->y, 1);
  o->abandon = ctorch_tracer_abandon(o->tr);
  o->active_status = ctorch_tracer_active(&o->active);
  if (o->do_free) ctorch_tracer_free(o->tr);
  return NULL;
}

START_TEST(trace_belongs_to_its_thread) {
  ctorch_tensor x = randn2(2, 3), y = NULL, z = NULL;
  ctorch_tracer tr = NULL, tr2 = NULL;
  ctorch_module m = NULL;
  pthread_t th;
  other_thread o;
  int active = -1;
  CT_OK(ctorch_tracer_new(&tr, NULL));
  CT_OK(ctorch_tracer_begin(tr, &x, 1));
  CT_OK(ctorch_neg(&y, x));
  memset(&o, 0, sizeof o);
  o.tr = tr, o.y = y;
  ck_assert_int_eq(pthread_create(&th, NULL, on_other_thread, &o), 0);
  pthread_join(th, NULL);
  ck_assert_int_eq(o.finish, CTORCH_RUNTIME);
  ck_assert_int_eq(o.abandon, CTORCH_RUNTIME);
  ck_assert_int_eq(o.active_status, CTORCH_OK);
  ck_assert_int_eq(o.active, 0); /* the other thread never traced */
  /* still recording here */
  CT_OK(ctorch_tanh(&z, y));
  CT_OK(ctorch_tracer_finish(&m, tr, &z, 1));
  ck_assert(graph_has(m, "aten::neg"));
  ck_assert(graph_has(m, "aten::tanh"));
  ctorch_module_free(m);
  ctorch_tracer_free(tr);
  ctorch_tensor_free(z);

  /* freed on another thread: this thread's stale state is cleared by the next begin */
  CT_OK(ctorch_tracer_new(&tr, NULL));
  CT_OK(ctorch_tracer_begin(tr, &x, 1));
  memset(&o, 0, sizeof o);
  o.tr = tr, o.y = y, o.do_free = 1;
  ck_assert_int_eq(pthread_create(&th, NULL, on_other_thread, &o), 0);
  pthread_join(th, NULL);
  CT_OK(ctorch_tracer_new(&tr2, NULL));
  CT_OK(ctorch_tracer_begin(tr2, &x, 1));
  CT_OK(ctorch_relu(&z, x));
  CT_OK(ctorch_tracer_finish(&m, tr2, &z, 1));
  ck_assert(!graph_has(m, "aten::neg"));
  ctorch_tracer_free(tr2);
  CT_OK(ctorch_tracer_active(&active));
  ck_assert_int_eq(active, 0);
  ctorch_module_free(m);
  ctorch_tensor_free(x), ctorch_tensor_free(y), ctorch_tensor_free(z);
}
END_TEST

/* ---- what a trace cannot capture (docs/interop-models.md) ----------------- */

START_TEST(limits_are_as_documented) {
  const float pos[3] = {1, 2, 3}, neg[3] = {-1, -2, -3};
  const int64_t s3[1] = {3};
  ctorch_tensor xp = ct_floats(pos, s3, 1), xn = ct_floats(neg, s3, 1), sum = NULL, y = NULL, got = NULL, want = NULL;
  ctorch_tracer tr = NULL;
  ctorch_module m = NULL;
  double v = 0;
  /* A branch taken in C on a tensor's value is baked in: traced with x > 0,
   * the module doubles x whatever its sign. */
  CT_OK(ctorch_tracer_new(&tr, NULL));
  CT_OK(ctorch_tracer_begin(tr, &xp, 1));
  CT_OK(ctorch_sum(&sum, xp, NULL));
  CT_OK(ctorch_tensor_item_double(&v, sum));
  if (v > 0) CT_OK(ctorch_mul_Scalar(&y, xp, ctorch_scalar_float(2)));
  else CT_OK(ctorch_neg(&y, xp));
  CT_OK(ctorch_tracer_finish(&m, tr, &y, 1));
  ctorch_tracer_free(tr);
  CT_OK(ctorch_module_forward_tensors(&got, m, &xn, 1));
  CT_OK(ctorch_mul_Scalar(&want, xn, ctorch_scalar_float(2)));
  ck_assert_double_eq(ct_max_abs_diff(got, want), 0.0);
  ctorch_module_free(m), ctorch_tensor_free(got), ctorch_tensor_free(want), ctorch_tensor_free(y);
  ctorch_tensor_free(sum);

  /* In-place ops on an input are replayed on the caller's tensor. */
  CT_OK(ctorch_tracer_new(&tr, NULL));
  CT_OK(ctorch_tracer_begin(tr, &xp, 1));
  CT_OK(ctorch_add__Tensor(xp, xp, ctorch_scalar_int(1))); /* x += x */
  CT_OK(ctorch_tracer_finish(&m, tr, &xp, 1));
  ctorch_tracer_free(tr);
  CT_OK(ctorch_module_forward_tensors(&got, m, &xn, 1));
  {
    float now[3];
    CT_OK(ctorch_tensor_copy_to(now, sizeof now, xn));
    ck_assert(now[0] == -2 && now[1] == -4 && now[2] == -6);
  }
  ctorch_module_free(m), ctorch_tensor_free(got);

  /* Sizes read in C are constants: reshaping to a size read from x fixes it. */
  {
    const float six[6] = {1, 2, 3, 4, 5, 6};
    const int64_t s23[2] = {2, 3}, s33[2] = {3, 3};
    ctorch_tensor x6 = ct_floats(six, s23, 2), x9 = randn2(3, 3);
    int64_t sizes[2], flat[1];
    CT_OK(ctorch_tracer_new(&tr, NULL));
    CT_OK(ctorch_tracer_begin(tr, &x6, 1));
    CT_OK(ctorch_tensor_sizes(sizes, 2, x6));
    flat[0] = sizes[0] * sizes[1];
    CT_OK(ctorch_reshape(&y, x6, flat, 1));
    CT_OK(ctorch_tracer_finish(&m, tr, &y, 1));
    ctorch_tracer_free(tr);
    CT_FAILS(CTORCH_RUNTIME, ctorch_module_forward_tensors(&got, m, &x9, 1));
    (void)s33;
    ctorch_module_free(m), ctorch_tensor_free(y), ctorch_tensor_free(x6), ctorch_tensor_free(x9);
  }
  ctorch_tensor_free(xp), ctorch_tensor_free(xn);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("trace");
  TCase *tc = tcase_create("trace"), *py = tcase_create("python");
  tcase_set_timeout(tc, 300);
  tcase_set_timeout(py, 300);
  /* its own ctest test (test_trace_python), skipped where no matching Python is configured */
  tcase_set_tags(py, "python");
  tcase_add_test(py, lenet_saved_runs_in_python);
  suite_add_tcase(s, py);
  tcase_add_test(tc, replay_equals_ops);
  tcase_add_test(tc, training_through_module);
  tcase_add_test(tc, several_outputs_and_buffers);
  tcase_add_test(tc, argument_and_phase_errors);
  tcase_add_test(tc, abandon_and_free_mid_trace);
  tcase_add_test(tc, failed_op_ends_the_trace);
  tcase_add_test(tc, trace_belongs_to_its_thread);
  tcase_add_test(tc, limits_are_as_documented);
  suite_add_tcase(s, tc);
  return s;
}

CTORCH_CHECK_MAIN()
