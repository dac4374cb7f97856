/* The module shortcuts: optimizers and gradient clipping
 * from a module (the same steps, bit for bit, as over the parameter array
 * built by hand), ctorch_nn_newf/newv (printf-style constructor text, its
 * bound and its errors), forward of a named child and the first output
 * alone; each on success and on failure. */
#include <math.h>
#include <stdarg.h>
#include <string.h>

#include "../nn_test_util.h"

/* Sequential(fc1=Linear(4, 8), act=Tanh(), fc2=Linear(8, 2)), made after seeding. */
static ctorch_nn_module small_net(uint64_t seed) {
  ctorch_nn_module s = nn("Sequential", ""), c;
  CT_OK(ctorch_manual_seed(seed));
  c = nn("Linear", "4, 8");
  CT_OK(ctorch_nn_module_register_module(s, "fc1", c));
  ctorch_nn_module_free(c);
  c = nn("Tanh", "");
  CT_OK(ctorch_nn_module_register_module(s, "act", c));
  ctorch_nn_module_free(c);
  c = nn("Linear", "8, 2");
  CT_OK(ctorch_nn_module_register_module(s, "fc2", c));
  ctorch_nn_module_free(c);
  return s;
}

/* The parameters as an array of NEW handles (what programs wrote by hand). */
static ctorch_tensor *params_by_hand(ctorch_nn_module m, size_t *n) {
  ctorch_tensor_list l = NULL;
  ctorch_tensor *p;
  size_t i;
  CT_OK(ctorch_nn_module_parameters(&l, m));
  CT_OK(ctorch_tensor_list_size(n, l));
  p = calloc(*n, sizeof *p);
  for (i = 0; i < *n; ++i) CT_OK(ctorch_tensor_list_get(&p[i], l, i));
  ctorch_tensor_list_free(l);
  return p;
}

/* Byte-equal float32 contents (stricter than torch.equal: -0 and NaN bits). */
static int same_bits(ctorch_tensor a, ctorch_tensor b) {
  void *pa = NULL, *pb = NULL;
  int64_t na = 0, nb = 0;
  CT_OK(ctorch_tensor_numel(&na, a));
  CT_OK(ctorch_tensor_numel(&nb, b));
  if (na != nb) return 0;
  CT_OK(ctorch_tensor_data_ptr(&pa, a));
  CT_OK(ctorch_tensor_data_ptr(&pb, b));
  return memcmp(pa, pb, (size_t)na * sizeof(float)) == 0;
}

/* One step on net: loss = sum(net(x)^2) scaled so the gradients are large,
 * backward, clip (by hand over p or from the module), step. */
static void train_step(ctorch_nn_module net, ctorch_optimizer opt, ctorch_tensor x, const ctorch_tensor *p, size_t n,
                       double *norm) {
  ctorch_tensor y = NULL, sq = NULL, loss = NULL;
  CT_OK(ctorch_optimizer_zero_grad(opt, 1));
  CT_OK(ctorch_nn_module_forward(&y, net, x));
  CT_OK(ctorch_pow_Tensor_Scalar(&sq, y, ctorch_scalar_int(2)));
  CT_OK(ctorch_sum(&loss, sq, NULL));
  CT_OK(ctorch_tensor_backward(loss, NULL, 0, 0, NULL, 0));
  if (p) {
    CT_OK(ctorch_clip_grad_norm_(norm, p, n, 0.5, 2.0, 0));
    CT_OK(ctorch_clip_grad_value_(p, n, 0.05));
  } else {
    CT_OK(ctorch_nn_module_clip_grad_norm_(norm, net, 0.5, 2.0, 0));
    CT_OK(ctorch_nn_module_clip_grad_value_(net, 0.05));
  }
  CT_OK(ctorch_optimizer_step(opt));
  ctorch_tensor_free(y);
  ctorch_tensor_free(sq);
  ctorch_tensor_free(loss);
}

/* Two identical nets, one trained through the array built by hand, one
 * through the module shortcuts, for `kind` (v2 options when v2): every
 * clipped norm and every parameter after each step are bit-identical. */
static void same_as_by_hand(ctorch_optimizer_kind kind, int v2) {
  ctorch_nn_module a = small_net(11), b = small_net(11);
  ctorch_optimizer oa = NULL, ob = NULL;
  size_t na = 0, nb = 0, i;
  ctorch_tensor *pa = params_by_hand(a, &na), *pb, x = NULL;
  int step;
  if (v2) {
    ctorch_optim_options_v2 o;
    CT_OK(ctorch_optim_options_default_v2(&o, kind));
    o.lr = 0.05;
    o.weight_decay = 0.01;
    CT_OK(ctorch_optimizer_new_v2(&oa, kind, pa, na, &o));
    CT_OK(ctorch_optimizer_new_from_module_v2(&ob, kind, b, &o));
  } else {
    ctorch_optim_options o;
    CT_OK(ctorch_optim_options_default(&o, kind));
    o.lr = 0.05;
    o.momentum = kind == CTORCH_OPTIM_SGD ? 0.9 : o.momentum;
    CT_OK(ctorch_optimizer_new(&oa, kind, pa, na, &o));
    CT_OK(ctorch_optimizer_new_from_module(&ob, kind, b, &o));
  }
  {
    ctorch_tensor_list l = NULL;
    CT_OK(ctorch_optimizer_params(&l, ob, 0));
    CT_OK(ctorch_tensor_list_size(&nb, l));
    ctorch_tensor_list_free(l);
    ck_assert_uint_eq(nb, na); /* 4: fc1 and fc2's weight and bias */
    ck_assert_uint_eq(na, 4);
  }
  CT_OK(ctorch_manual_seed(5));
  x = randn2(16, 4);
  for (step = 0; step < 5; ++step) {
    double norm_a = -1, norm_b = -2;
    train_step(a, oa, x, pa, na, &norm_a);
    train_step(b, ob, x, NULL, 0, &norm_b);
    ck_assert_msg(memcmp(&norm_a, &norm_b, sizeof norm_a) == 0, "step %d: norm %.17g vs %.17g", step, norm_a, norm_b);
    ck_assert(norm_a > 0.5); /* clipping did something */
  }
  pb = params_by_hand(b, &nb);
  for (i = 0; i < na; ++i) ck_assert_msg(same_bits(pa[i], pb[i]), "parameter %zu differs", i);
  {
    /* and they moved: the first net's weight is not its initial value */
    ctorch_nn_module c = small_net(11);
    ctorch_tensor w0 = NULL;
    CT_OK(ctorch_nn_module_tensor(&w0, c, "fc1.weight"));
    ck_assert(!same_values(w0, pa[0]));
    ctorch_tensor_free(w0);
    ctorch_nn_module_free(c);
  }
  for (i = 0; i < na; ++i) ctorch_tensor_free(pa[i]), ctorch_tensor_free(pb[i]);
  free(pa);
  free(pb);
  ctorch_tensor_free(x);
  ctorch_optimizer_free(oa);
  ctorch_optimizer_free(ob);
  ctorch_nn_module_free(a);
  ctorch_nn_module_free(b);
}

START_TEST(optimizer_from_module_is_by_hand) {
  same_as_by_hand(CTORCH_OPTIM_SGD, 0);
  same_as_by_hand(CTORCH_OPTIM_ADAMW, 0);
  same_as_by_hand(CTORCH_OPTIM_NADAM, 1);
}
END_TEST

START_TEST(optimizer_from_module_refuses) {
  ctorch_optimizer o = (ctorch_optimizer)1;
  ctorch_nn_module relu = nn("ReLU", ""), net = small_net(1);
  ctorch_optim_options bad;
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_optimizer_new_from_module(&o, CTORCH_OPTIM_SGD, NULL, NULL));
  ck_assert_ptr_null(o);
  CT_ERROR_HAS("ctorch_optimizer_new_from_module");
  CT_ERROR_HAS("'m'");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_optimizer_new_from_module(NULL, CTORCH_OPTIM_SGD, net, NULL));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_optimizer_new_from_module(&o, CTORCH_OPTIM_SGD, relu, NULL));
  CT_ERROR_HAS("no parameters");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_optimizer_new_from_module_v2(&o, CTORCH_OPTIM_ADAM, relu, NULL));
  /* the array version's own refusals come through, named */
  CT_OK(ctorch_optim_options_default(&bad, CTORCH_OPTIM_SGD));
  bad.lr = -1;
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_optimizer_new_from_module(&o, CTORCH_OPTIM_SGD, net, &bad));
  ck_assert_ptr_null(o);
  CT_ERROR_HAS("ctorch_optimizer_new_from_module: ctorch_optimizer_new");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_optimizer_new_from_module(&o, (ctorch_optimizer_kind)999, net, NULL));
  /* a freed module's parameters stay with the optimizer made from it */
  CT_OK(ctorch_optimizer_new_from_module(&o, CTORCH_OPTIM_SGD, net, NULL));
  ctorch_nn_module_free(net);
  CT_OK(ctorch_optimizer_zero_grad(o, 1));
  ctorch_optimizer_free(o);
  ctorch_nn_module_free(relu);
}
END_TEST

START_TEST(clip_from_module_refuses) {
  ctorch_nn_module net = small_net(2), relu = nn("ReLU", "");
  ctorch_tensor g = NULL, w = NULL;
  double norm = -1;
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_clip_grad_norm_(&norm, NULL, 1.0, 2.0, 0));
  CT_ERROR_HAS("ctorch_nn_module_clip_grad_norm_");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_clip_grad_value_(NULL, 1.0));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_clip_grad_norm_(&norm, net, NAN, 2.0, 0));
  CT_ERROR_HAS("max_norm");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_clip_grad_value_(net, NAN));
  /* no gradients yet, or no parameters: nothing to clip, norm 0 (as Python) */
  CT_OK(ctorch_nn_module_clip_grad_norm_(&norm, net, 1.0, 2.0, 0));
  ck_assert(norm == 0);
  CT_OK(ctorch_nn_module_clip_grad_norm_(NULL, relu, 1.0, 2.0, 0));
  CT_OK(ctorch_nn_module_clip_grad_value_(relu, 1.0));
  /* a non-finite gradient with error_if_nonfinite: VALUE, gradients unchanged */
  CT_OK(ctorch_nn_module_tensor(&w, net, "fc2.bias"));
  CT_OK(ctorch_full_like(&g, w, ctorch_scalar_float(INFINITY), NULL, NULL, NULL, NULL, NULL));
  CT_OK(ctorch_tensor_set_grad(w, g));
  CT_FAILS(CTORCH_VALUE, ctorch_nn_module_clip_grad_norm_(&norm, net, 1.0, 2.0, 1));
  CT_ERROR_HAS("non-finite");
  ctorch_tensor_free(g);
  ctorch_tensor_free(w);
  ctorch_nn_module_free(net);
  ctorch_nn_module_free(relu);
}
END_TEST

START_TEST(newf_formats_and_builds) {
  ctorch_nn_module a = NULL, b = NULL;
  ctorch_tensor wa = NULL, wb = NULL, bias = (ctorch_tensor)1;
  int in = 3, out = 5;
  char *r = NULL;
  CT_OK(ctorch_manual_seed(7));
  CT_OK(ctorch_nn_newf(&a, "Linear", "%d, %d, bias=%s", in, out, "False"));
  CT_OK(ctorch_manual_seed(7));
  CT_OK(ctorch_nn_new(&b, "Linear", "3, 5, bias=False"));
  CT_OK(ctorch_nn_module_tensor(&wa, a, "weight"));
  CT_OK(ctorch_nn_module_tensor(&wb, b, "weight"));
  ck_assert(same_bits(wa, wb));
  CT_OK(ctorch_nn_module_tensor(&bias, a, "bias"));
  ck_assert_ptr_null(bias);
  CT_OK(ctorch_nn_module_repr(&r, a));
  ck_assert_str_eq(r, "Linear(in_features=3, out_features=5, bias=False)");
  ctorch_string_free(r);
  ctorch_tensor_free(wa);
  ctorch_tensor_free(wb);
  ctorch_nn_module_free(a);
  ctorch_nn_module_free(b);
  /* floats and an empty format */
  CT_OK(ctorch_nn_newf(&a, "Dropout", "p=%.2f", 0.25));
  CT_OK(ctorch_nn_module_repr(&r, a));
  ck_assert_str_eq(r, "Dropout(p=0.25, inplace=False)");
  ctorch_string_free(r);
  ctorch_nn_module_free(a);
  CT_OK(ctorch_nn_newf(&a, "ReLU", ""));
  ctorch_nn_module_free(a);
}
END_TEST

/* A caller's own variadic helper over ctorch_nn_newv. */
static ctorch_status make_v(ctorch_nn_module *out, const char *kind, const char *fmt, ...) {
  va_list ap;
  ctorch_status st;
  va_start(ap, fmt);
  st = ctorch_nn_newv(out, kind, fmt, ap);
  va_end(ap);
  return st;
}

START_TEST(newv_and_newf_refuse) {
  ctorch_nn_module m = (ctorch_nn_module)1;
  CT_OK(make_v(&m, "Conv2d", "%d, %d, kernel_size=%d, padding=%d", 1, 6, 5, 2));
  {
    char *r = NULL;
    CT_OK(ctorch_nn_module_repr(&r, m));
    ck_assert_str_eq(r, "Conv2d(1, 6, kernel_size=(5, 5), stride=(1, 1), padding=(2, 2))");
    ctorch_string_free(r);
  }
  ctorch_nn_module_free(m);
  m = (ctorch_nn_module)1;
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_newf(&m, "Linear", NULL));
  ck_assert_ptr_null(m);
  CT_ERROR_HAS("ctorch_nn_newf");
  CT_ERROR_HAS("'fmt'");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_newf(NULL, "Linear", "%d, %d", 1, 2));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_newf(&m, NULL, "%d, %d", 1, 2));
  /* longer than the bound: refused before anything is allocated for it */
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_newf(&m, "Linear", "%70000d, 2", 1));
  CT_ERROR_HAS("65535");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, make_v(&m, "Linear", "%2000000000d", 1));
  CT_ERROR_HAS("ctorch_nn_newv");
  /* ctorch_nn_new's own refusal, with the formatted text */
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_newf(&m, "Linear", "%d, %d, bogus=%d", 4, 2, 1));
  CT_ERROR_HAS("\"4, 2, bogus=1\"");
  CT_ERROR_HAS("bogus");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_newf(&m, "NoSuchKind", "%d", 1));
  ck_assert_ptr_null(m);
}
END_TEST

START_TEST(forward_child_is_get_and_forward) {
  ctorch_nn_module net = small_net(3), fc1 = NULL;
  ctorch_tensor x = randn2(2, 4), ya = NULL, yb = NULL, yc = NULL, yd = NULL;
  CT_OK(ctorch_nn_module_forward_child(&ya, net, "fc1", x));
  CT_OK(ctorch_nn_module_get(&fc1, net, "fc1"));
  CT_OK(ctorch_nn_module_forward(&yb, fc1, x));
  ck_assert(same_bits(ya, yb));
  /* "" is the module itself */
  CT_OK(ctorch_nn_module_forward_child(&yc, net, "", x));
  CT_OK(ctorch_nn_module_forward(&yd, net, x));
  ck_assert(same_bits(yc, yd));
  {
    /* autograd records it as the call it stands for */
    int rg = 0;
    CT_OK(ctorch_tensor_requires_grad(&rg, ya));
    ck_assert_int_eq(rg, 1);
  }
  ctorch_tensor_free(ya);
  ya = (ctorch_tensor)1;
  CT_FAILS(CTORCH_INDEX, ctorch_nn_module_forward_child(&ya, net, "fc9", x));
  ck_assert_ptr_null(ya);
  CT_ERROR_HAS("ctorch_nn_module_forward_child");
  CT_ERROR_HAS("'fc9'");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_forward_child(&ya, net, NULL, x));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_forward_child(&ya, net, "fc1", NULL));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_forward_child(&ya, NULL, "fc1", x));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_forward_child(NULL, net, "fc1", x));
  /* a shape mismatch: the kernel's error, status RUNTIME or VALUE, never OK */
  ck_assert_int_ne(ctorch_nn_module_forward_child(&ya, net, "fc2", x), CTORCH_OK);
  ck_assert_ptr_null(ya);
  ctorch_tensor_free(yb);
  ctorch_tensor_free(yc);
  ctorch_tensor_free(yd);
  ctorch_tensor_free(x);
  ctorch_nn_module_free(fc1);
  ctorch_nn_module_free(net);
}
END_TEST

/* {"lstm": LSTM(4, 6, batch_first=True)} in a holder module. */
static ctorch_nn_module lstm_holder(void) {
  ctorch_nn_module h = NULL, l = nn("LSTM", "4, 6, batch_first=True");
  CT_OK(ctorch_nn_custom_new(&h, "Holder", NULL, NULL, NULL));
  CT_OK(ctorch_nn_module_register_module(h, "lstm", l));
  ctorch_nn_module_free(l);
  return h;
}

START_TEST(forward_child_n_and_first) {
  ctorch_nn_module h = lstm_holder(), lstm = NULL;
  int64_t hs[3] = {1, 2, 6};
  ctorch_tensor x = NULL, h0 = NULL, c0 = NULL, out[3] = {NULL, NULL, NULL}, ref[3] = {NULL, NULL, NULL};
  ctorch_tensor first = NULL, small[1] = {NULL}, bad[3] = {NULL, NULL, NULL};
  size_t n = 0, k;
  {
    int64_t xs[3] = {2, 3, 4};
    CT_OK(ctorch_randn(&x, xs, 3, NULL, NULL, NULL, NULL));
    CT_OK(ctorch_randn(&h0, hs, 3, NULL, NULL, NULL, NULL));
    CT_OK(ctorch_randn(&c0, hs, 3, NULL, NULL, NULL, NULL));
  }
  {
    /* in[3]: a fourth input (one too many for an LSTM) for the n_inputs
     * refusals below; the calls that pass 3 never read it */
    ctorch_tensor in[4] = {x, h0, c0, x};
    CT_OK(ctorch_nn_module_forward_child_n(h, "lstm", in, 3, NULL, out, 3, &n));
    ck_assert_uint_eq(n, 3);
    CT_OK(ctorch_nn_module_get(&lstm, h, "lstm"));
    CT_OK(ctorch_nn_module_forward_n(lstm, in, 3, NULL, ref, 3, &n));
    for (k = 0; k < 3; ++k) ck_assert_msg(same_bits(out[k], ref[k]), "output %zu", k);
    /* the first output alone: LSTM's output without h_n, c_n */
    CT_OK(ctorch_nn_module_forward_first(&first, lstm, in, 3, NULL));
    ck_assert(same_bits(first, ref[0]));
    ctorch_tensor_free(first);
    /* h_0 and c_0 None (NULL): zeros, as forward with one input */
    in[1] = in[2] = NULL;
    CT_OK(ctorch_nn_module_forward_first(&first, lstm, in, 3, NULL));
    {
      ctorch_tensor one = NULL;
      CT_OK(ctorch_nn_module_forward(&one, lstm, x));
      ck_assert(same_bits(first, one));
      ctorch_tensor_free(one);
    }
    ctorch_tensor_free(first);
    CT_OK(ctorch_nn_module_forward_first(&first, lstm, in, 1, ""));
    ctorch_tensor_free(first);
    in[1] = h0;
    in[2] = c0;
    /* failures (into bad[], not out[]: a call clears its outputs first,
     * which would lose out[]'s live handles) */
    n = 7;
    CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_forward_child_n(h, "lstm", in, 3, NULL, small, 1, &n));
    CT_ERROR_HAS("max_outputs");
    ck_assert_uint_eq(n, 0);
    ck_assert_ptr_null(small[0]);
    CT_FAILS(CTORCH_INDEX, ctorch_nn_module_forward_child_n(h, "gru", in, 3, NULL, bad, 3, &n));
    CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_forward_child_n(h, "lstm", in, 4, NULL, bad, 3, &n));
    CT_ERROR_HAS("n_inputs");
    CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_forward_child_n(h, "lstm", NULL, 3, NULL, bad, 3, &n));
    CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_forward_child_n(h, "lstm", in, 3, NULL, bad, 3, NULL));
    first = (ctorch_tensor)1;
    CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_forward_first(&first, lstm, in, 4, NULL));
    ck_assert_ptr_null(first);
    CT_ERROR_HAS("ctorch_nn_module_forward_first");
    CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_forward_first(&first, lstm, in, 0, NULL));
    CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_forward_first(&first, lstm, in, 3, "bogus=1"));
    CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_forward_first(&first, NULL, in, 3, NULL));
    CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_forward_first(NULL, lstm, in, 3, NULL));
    /* a module without a forward */
    CT_FAILS(CTORCH_NOT_IMPLEMENTED, ctorch_nn_module_forward_first(&first, h, in, 1, NULL));
  }
  for (k = 0; k < 3; ++k) ctorch_tensor_free(out[k]), ctorch_tensor_free(ref[k]);
  ctorch_tensor_free(x);
  ctorch_tensor_free(h0);
  ctorch_tensor_free(c0);
  ctorch_nn_module_free(lstm);
  ctorch_nn_module_free(h);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("nn_shortcuts");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, optimizer_from_module_is_by_hand);
  tcase_add_test(tc, optimizer_from_module_refuses);
  tcase_add_test(tc, clip_from_module_refuses);
  tcase_add_test(tc, newf_formats_and_builds);
  tcase_add_test(tc, newv_and_newf_refuse);
  tcase_add_test(tc, forward_child_is_get_and_forward);
  tcase_add_test(tc, forward_child_n_and_first);
  suite_add_tcase(s, tc);
  return s;
}

CTORCH_CHECK_MAIN()
