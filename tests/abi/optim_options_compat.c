/* A program built against ctorch's first released header (df0ab3e, copied
 * to abi/df0ab3e/ctorch.h) must be safe with today's library: the optimizer
 * calls that take its caller-allocated ctorch_optim_options (96 bytes then)
 * may neither write nor read a byte past it (docs/abi.md, "How ctorch's own
 * ABI evolves"). Each struct sits between guard bytes (caught in any build)
 * and, in a heap block of exactly its size, behind ASan's redzones (caught
 * under scripts/sanitize, whose library is instrumented). Compiled with
 * abi/df0ab3e/ first on the include path, so sizeof is the old one. */
#include "ctorch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GUARD 64
#define FILL 0xA5

static int failures = 0;

#define CHECK(cond, ...)                                             \
  do {                                                               \
    if (!(cond)) {                                                   \
      fprintf(stderr, "optim_options_compat: FAIL: " __VA_ARGS__);   \
      fprintf(stderr, " (%s:%d)\n", __FILE__, __LINE__);             \
      ++failures;                                                    \
    }                                                                \
  } while (0)

#define OK(call)                                                                            \
  do {                                                                                      \
    ctorch_status st_ = (call);                                                             \
    if (st_ != CTORCH_OK) {                                                                 \
      fprintf(stderr, "optim_options_compat: %s failed: %s\n", #call, ctorch_last_error()); \
      exit(1);                                                                              \
    }                                                                                       \
  } while (0)

/* The old struct with guard bytes on both sides. */
typedef struct {
  unsigned char before[GUARD];
  ctorch_optim_options o;
  unsigned char after[GUARD];
} guarded;

static void guard_init(guarded *g) { memset(g, FILL, sizeof *g); }

static int guard_intact(const guarded *g) {
  for (size_t i = 0; i < GUARD; ++i)
    if (g->before[i] != FILL || g->after[i] != FILL) return 0;
  return 1;
}

static ctorch_tensor param(void) {
  static const float v[4] = {1, -2, 3, -4};
  static const int64_t shape[1] = {4};
  ctorch_tensor t = NULL;
  OK(ctorch_tensor_from_data(&t, v, sizeof v, shape, 1, CTORCH_FLOAT32));
  OK(ctorch_tensor_set_requires_grad(t, 1));
  return t;
}

/* The kinds the df0ab3e header had, with a default each checks (PyTorch's). */
static const struct {
  ctorch_optimizer_kind kind;
  const char *name;
  double lr;
} kinds[] = {
    {CTORCH_OPTIM_SGD, "SGD", 1e-2},        {CTORCH_OPTIM_ADAM, "Adam", 1e-3},
    {CTORCH_OPTIM_ADAMW, "AdamW", 1e-3},    {CTORCH_OPTIM_RMSPROP, "RMSprop", 1e-2},
    {CTORCH_OPTIM_ADAGRAD, "Adagrad", 1e-2},
};

int main(void) {
  if (sizeof(ctorch_optim_options) != 96) {
    fprintf(stderr, "optim_options_compat: compiled against the wrong header (sizeof %zu, want 96)\n",
            sizeof(ctorch_optim_options));
    return 1;
  }
  for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; ++k) {
    const char *name = kinds[k].name;
    ctorch_optimizer_kind kind = kinds[k].kind;
    guarded g;
    guard_init(&g);
    OK(ctorch_optim_options_default(&g.o, kind));
    CHECK(guard_intact(&g), "%s: ctorch_optim_options_default wrote past the 96-byte struct", name);
    CHECK(g.o.lr == kinds[k].lr, "%s: default lr %g, want %g", name, g.o.lr, kinds[k].lr);
    CHECK(g.o.eps > 0, "%s: default eps %g", name, g.o.eps);

    /* Heap copies of exactly the old size: ASan's redzones lie right after. */
    ctorch_optim_options *h = malloc(sizeof *h);
    ctorch_optim_options *h2 = malloc(sizeof *h2);
    if (!h || !h2) return 1;
    OK(ctorch_optim_options_default(h, kind));
    CHECK(memcmp(h, &g.o, sizeof *h) == 0, "%s: two defaults differ", name);
    h->lr = 0.25;
    h->weight_decay = 0.125;

    ctorch_tensor p[2] = {param(), param()};
    ctorch_optimizer opt = NULL;
    OK(ctorch_optimizer_new(&opt, kind, p, 1, h));   /* reads *h: 96 bytes */
    memcpy(h2, h, sizeof *h2);
    h2->lr = 0.5;
    OK(ctorch_optimizer_add_param_group(opt, p + 1, 1, h2));

    for (size_t group = 0; group < 2; ++group) {
      guard_init(&g);
      OK(ctorch_optimizer_get_options(&g.o, opt, group));
      CHECK(guard_intact(&g), "%s: ctorch_optimizer_get_options wrote past the 96-byte struct", name);
      CHECK(g.o.lr == (group ? 0.5 : 0.25), "%s group %zu: lr %g", name, group, g.o.lr);
      CHECK(g.o.weight_decay == 0.125, "%s group %zu: weight_decay %g", name, group, g.o.weight_decay);
      OK(ctorch_optimizer_get_options(h, opt, group)); /* into the heap block */
      CHECK(memcmp(h, &g.o, sizeof *h) == 0, "%s group %zu: get_options differs between two calls", name, group);
    }
    OK(ctorch_optimizer_step(opt)); /* no grads: a no-op, but runs with the options read */
    ctorch_optimizer_free(opt);
    ctorch_tensor_free(p[0]);
    ctorch_tensor_free(p[1]);
    free(h);
    free(h2);
  }
  if (failures) {
    fprintf(stderr, "optim_options_compat: %d failure(s): this library breaks programs built against the "
                    "df0ab3e header\n", failures);
    return 1;
  }
  printf("optim_options_compat: %zu optimizer kinds, 96-byte ctorch_optim_options untouched past its end\n",
         sizeof kinds / sizeof kinds[0]);
  return 0;
}
