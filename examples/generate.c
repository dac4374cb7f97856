/*
 * Text generation in C: a GPT-2 decoder loaded from a Hugging Face
 * `transformers` GPT2LMHeadModel saved with save_pretrained (a folder holding
 * config.json and model.safetensors), run on prompt token ids with a KV
 * cache, producing new ids greedily or by sampling (temperature, top-k,
 * top-p) from a seeded ctorch generator.
 *
 *   transformer.wte / wpe: token and position Embedding
 *   transformer.h.N: ln_1, attn (c_attn Conv1D -> q, k, v; causal softmax of
 *     scaled q k^T; c_proj Conv1D), residual; ln_2, mlp (c_fc Conv1D,
 *     gelu_new, c_proj Conv1D), residual
 *   transformer.ln_f, then the logits: hidden @ wte^T (lm_head tied to wte)
 *
 * Conv1D is GPT-2's linear layer with its weight stored transposed
 * ([in, out]): out = addmm(bias, x, weight). The module tree carries
 * GPT2LMHeadModel's names, so the safetensors file loads into it strictly.
 * Then each Conv1D is replaced by a torch.nn Linear over the same tensors,
 * its weight the transposed view [out, in] (no copy): linear(x, weight,
 * bias) is addmm(bias, x, conv1d.weight), Conv1D's forward bit for bit, and
 * the tied LM head becomes a Linear whose weight is wte's. The forward calls
 * these Linears (handles kept, no per-call lookups) and runs the rest on the
 * loaded tensors directly.
 * The KV cache is, per layer, the keys and values [B, heads, T, head_size]
 * of every position so far, grown by cat along T at each step.
 *
 * By default the tree goes through ctorch_nn_module_optimize_for_inference:
 * decoding multiplies one row by every weight, which the BLAS runs on one
 * thread; the optimised Linears split such products across the intra-op
 * threads (with MKL, the LM head read from a transposed copy). The prompt
 * is one several-row call per Linear: at::linear, as in transformers (a
 * Linear prepacks for oneDNN from its second such call). The ids are
 * transformers' (tests/examples/generate_vs_transformers.py checks it at 1
 * and 2 threads), the logits equal up to rounding. --no-optimize keeps the
 * plain Linears: the
 * operations are then transformers' eager attention and generate() in their
 * order (examples/generate.py is the same program with transformers), so
 * the logits, and with them the greedy ids, are bit-identical. Sampling
 * applies transformers' warpers in its order (temperature, top-k, top-p,
 * each as its LogitsWarper computes it), softmax, then
 * torch.multinomial(probs, 1) on a generator seeded with --seed: the draw
 * transformers makes after torch.manual_seed(seed), as long as the
 * probabilities are the same bits.
 * The score scale is a multiplication by head_size**-0.5 (transformers 5;
 * 4.x divides by sqrt(head_size): the same number when the head size is a
 * power of 4, GPT-2's 64 too).
 *
 * --device cuda[:N] loads the weights on the CPU, moves the model there
 * (before the Linears are made, so their weight views are of the device's
 * tensors) and makes every tensor of the step there (positions, causal
 * mask, ids); a device this machine lacks is refused with ctorch's message,
 * exit status 2. On CUDA the plain Linears run, as with --no-optimize (the
 * optimisation splits one-row products across CPU threads; cuBLAS already
 * uses the whole device). Greedy argmax runs on the device; --sample moves
 * the [1, V] logits to the CPU first, the warpers and multinomial running
 * there on the seeded CPU generator (which cannot draw for CUDA tensors).
 * Each id is read back with item() at every step, which waits for the
 * device: the wall-clock time covers the GPU's work.
 *
 * Usage: generate --model DIR --prompt "464,3290,318" [--new N] [--sample]
 *                 [--seed S] [--temperature T] [--top-k K] [--top-p P]
 *                 [--eos ID] [--all-logits] [--threads T] [--no-optimize]
 *                 [--device cpu|cuda[:N]]
 * --top-k 0 and --top-p 1 turn those filters off (transformers' values that
 * do); --eos defaults to config.json's eos_token_id (-1: none): generation
 * stops after producing it. --all-logits computes the prompt's logits at
 * every position, as transformers' GPT-2 without logits_to_keep (4.46) does
 * (see gpt2_step). The last line is machine-readable:
 * prompt=L new=N seconds=S tok_per_s=R cpu_seconds=C ids=<the new ids,
 * comma-separated> (S wall-clock, C the process's CPU time, of the prompt
 * and the N steps; loading excluded).
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctorch.h"

#define CHECK(call)                                                                                \
  do {                                                                                             \
    ctorch_status st_ = (call);                                                                    \
    if (st_ != CTORCH_OK) {                                                                        \
      fprintf(stderr, "generate: %s:%d: %s failed with %s: %s\n", __FILE__, __LINE__, #call,       \
              ctorch_status_name(st_), ctorch_last_error());                                       \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

#include "train_device.h" /* --device: parse_device, target_init (the refusal) */
#include "example_args.h"
#include "example_nn.h"
#include "hf_folder.h" /* config.json, model.safetensors; box, split_heads */

/* The config.json fields the model needs (GPT2Config's defaults where absent). */
typedef struct {
  double vocab, n_embd, n_layer, n_head, n_pos, n_inner, eps, eos;
  int tied;
} gpt2_config;

static gpt2_config read_config(const char *dir) {
  hf_config f;
  gpt2_config c;
  hf_config_read(&f, "generate", dir);
  c.vocab = hf_number(&f, "vocab_size", 50257);
  c.n_embd = hf_number(&f, "n_embd", 768);
  c.n_layer = hf_number(&f, "n_layer", 12);
  c.n_head = hf_number(&f, "n_head", 12);
  c.n_pos = hf_number(&f, "n_positions", 1024);
  c.n_inner = hf_number(&f, "n_inner", 4 * c.n_embd); /* null: 4 * n_embd */
  c.eps = hf_number(&f, "layer_norm_epsilon", 1e-5);
  c.eos = hf_number(&f, "eos_token_id", -1); /* null: none */
  c.tied = hf_is(&f, "tie_word_embeddings", "true");
  /* What the forward below computes; other variants are refused, not run wrong. */
  if (!hf_is(&f, "activation_function", "\"gelu_new\"") || !hf_is(&f, "scale_attn_weights", "true") ||
      !hf_is(&f, "scale_attn_by_inverse_layer_idx", "false") || !hf_is(&f, "reorder_and_upcast_attn", "false") ||
      !hf_is(&f, "add_cross_attention", "false"))
    hf_config_fail(&f, "only activation_function \"gelu_new\", scale_attn_weights true and no inverse-layer "
                       "scaling, reordered attention or cross attention are supported");
  hf_config_free(&f);
  if (c.n_embd < 1 || c.n_head < 1 || fmod(c.n_embd, c.n_head) != 0 || c.n_layer < 0 || c.n_layer > 1000 ||
      c.vocab < 1 || c.n_pos < 1 || c.n_inner < 1)
    hf_config_fail(&f, "n_embd must be a multiple of n_head, sizes positive");
  return c;
}

/* ---- the module tree (GPT2LMHeadModel's names, for a strict load) ---- */

/* transformers' Conv1D(nf, nx): weight [nx, nf], bias [nf] (zeros until loaded). */
static ctorch_nn_module conv1d(double nf, double nx) {
  const ctorch_dtype f32 = CTORCH_FLOAT32;
  ctorch_nn_module m = box("Conv1D");
  ctorch_tensor w = NULL, b = NULL;
  int64_t ws[2] = {(int64_t)nx, (int64_t)nf}, bs[1] = {(int64_t)nf};
  CHECK(ctorch_zeros(&w, ws, 2, &f32, NULL, NULL, NULL));
  CHECK(ctorch_zeros(&b, bs, 1, &f32, NULL, NULL, NULL));
  CHECK(ctorch_nn_module_register_parameter(m, "weight", w));
  CHECK(ctorch_nn_module_register_parameter(m, "bias", b));
  ctorch_tensor_free(w);
  ctorch_tensor_free(b);
  return m;
}

static ctorch_nn_module make_model(const gpt2_config *c) {
  ctorch_nn_module m = box("GPT2LMHeadModel"), t = box("GPT2Model"), h = nn_make("ModuleList", "");
  int i;
  nn_add(t, "wte", nn_makef("Embedding", "%.0f, %.0f", c->vocab, c->n_embd));
  nn_add(t, "wpe", nn_makef("Embedding", "%.0f, %.0f", c->n_pos, c->n_embd));
  for (i = 0; i < (int)c->n_layer; ++i) {
    ctorch_nn_module block = box("GPT2Block"), attn = box("GPT2Attention"), mlp = box("GPT2MLP");
    nn_add(block, "ln_1", nn_makef("LayerNorm", "%.0f, eps=%.17g", c->n_embd, c->eps));
    nn_add(attn, "c_attn", conv1d(3 * c->n_embd, c->n_embd));
    nn_add(attn, "c_proj", conv1d(c->n_embd, c->n_embd));
    nn_add(block, "attn", attn);
    nn_add(block, "ln_2", nn_makef("LayerNorm", "%.0f, eps=%.17g", c->n_embd, c->eps));
    nn_add(mlp, "c_fc", conv1d(c->n_inner, c->n_embd));
    nn_add(mlp, "c_proj", conv1d(c->n_embd, c->n_inner));
    nn_add(block, "mlp", mlp);
    nn_add(h, NULL, block);
  }
  nn_add(t, "h", h);
  nn_add(t, "ln_f", nn_makef("LayerNorm", "%.0f, eps=%.17g", c->n_embd, c->eps));
  nn_add(m, "transformer", t);
  /* Tied (GPT-2's default): lm_head.weight is wte's, and save_pretrained
   * stores it once, under transformer.wte.weight. */
  if (!c->tied) nn_add(m, "lm_head", nn_makef("Linear", "%.0f, %.0f, bias=False", c->n_embd, c->vocab));
  return m;
}

/* NEW handle to the parameter at `name` (printf-style) of the model. */
static ctorch_tensor param(ctorch_nn_module m, const char *fmt, ...) {
  char name[256];
  ctorch_tensor t = NULL;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(name, sizeof name, fmt, ap);
  va_end(ap);
  CHECK(ctorch_nn_module_tensor(&t, m, name));
  return t;
}

/* A torch.nn Linear(in, out) whose weight is `w` [out, in] and bias `b`
 * (NULL: none), registered as `name` of the module at `parent` (replacing
 * what was there). Made on the meta device, so it allocates and draws
 * nothing before its tensors are set. */
static void put_linear(ctorch_nn_module m, const char *parent, const char *name, ctorch_tensor w, ctorch_tensor b) {
  ctorch_nn_module p = NULL, lin;
  int64_t ws[2];
  CHECK(ctorch_tensor_sizes(ws, 2, w));
  lin = nn_makef("Linear", "%lld, %lld, bias=%s, device='meta'", (long long)ws[1], (long long)ws[0],
                 b ? "True" : "False");
  CHECK(ctorch_nn_module_set_tensor(lin, "weight", w));
  if (b) CHECK(ctorch_nn_module_set_tensor(lin, "bias", b));
  CHECK(ctorch_nn_module_get(&p, m, parent));
  nn_add(p, name, lin);
  ctorch_nn_module_free(p);
}

/* After the strict load: each Conv1D replaced by a Linear over its tensors,
 * the weight the transposed view (a leaf: taken from the detached tensor),
 * and the tied LM head as a Linear over wte's weight (the same tensor). */
static void use_linears(ctorch_nn_module m, const gpt2_config *c) {
  static const char *const convs[4][2] = {{"attn", "c_attn"}, {"attn", "c_proj"}, {"mlp", "c_fc"}, {"mlp", "c_proj"}};
  ctorch_handle_scope s = scope_enter(); /* the handles made here; the module keeps the tensors */
  int i, k;
  for (i = 0; i < (int)c->n_layer; ++i)
    for (k = 0; k < 4; ++k) {
      char parent[64];
      ctorch_tensor w = param(m, "transformer.h.%d.%s.%s.weight", i, convs[k][0], convs[k][1]), wt = NULL;
      snprintf(parent, sizeof parent, "transformer.h.%d.%s", i, convs[k][0]);
      CHECK(ctorch_detach(&wt, w));
      CHECK(ctorch_transpose_int(&wt, wt, 0, 1));
      put_linear(m, parent, convs[k][1], wt, param(m, "transformer.h.%d.%s.%s.bias", i, convs[k][0], convs[k][1]));
    }
  if (c->tied) put_linear(m, "", "lm_head", param(m, "transformer.wte.weight"), NULL);
  scope_leave(s);
}

/* ---- the model's tensors and Linears, and the forward over them ---- */

enum { LN1_W, LN1_B, LN2_W, LN2_B, N_BLOCK_W };
static const char *const block_names[N_BLOCK_W] = {"ln_1.weight", "ln_1.bias", "ln_2.weight", "ln_2.bias"};
enum { C_ATTN, A_PROJ, C_FC, M_PROJ, N_PROJ };
static const char *const proj_names[N_PROJ] = {"attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj"};

typedef struct {
  gpt2_config c;
  ctorch_tensor wte, wpe, lnf_w, lnf_b;
  ctorch_tensor (*h)[N_BLOCK_W];
  ctorch_nn_module (*proj)[N_PROJ], head; /* the Linears */
  ctorch_tensor *past_k, *past_v; /* the KV cache: [B, heads, T, head_size] per layer, NULL before the prompt */
  int64_t past;                   /* T: positions in the cache */
  int all_logits;                 /* --all-logits: lm_head on every prompt position */
  ctorch_device device;           /* where the weights are and the step's tensors are made */
} gpt2;

static gpt2 take_weights(ctorch_nn_module m, const gpt2_config *c) {
  gpt2 g;
  int i, j;
  memset(&g, 0, sizeof g);
  g.c = *c;
  g.wte = param(m, "transformer.wte.weight");
  g.wpe = param(m, "transformer.wpe.weight");
  g.lnf_w = param(m, "transformer.ln_f.weight");
  g.lnf_b = param(m, "transformer.ln_f.bias");
  CHECK(ctorch_nn_module_get(&g.head, m, "lm_head"));
  g.h = calloc((size_t)c->n_layer + 1, sizeof *g.h);
  g.proj = calloc((size_t)c->n_layer + 1, sizeof *g.proj);
  g.past_k = calloc((size_t)c->n_layer + 1, sizeof *g.past_k);
  g.past_v = calloc((size_t)c->n_layer + 1, sizeof *g.past_v);
  if (!g.h || !g.proj || !g.past_k || !g.past_v) exit(1);
  for (i = 0; i < (int)c->n_layer; ++i) {
    for (j = 0; j < N_BLOCK_W; ++j) g.h[i][j] = param(m, "transformer.h.%d.%s", i, block_names[j]);
    for (j = 0; j < N_PROJ; ++j) {
      char path[64];
      snprintf(path, sizeof path, "transformer.h.%d.%s", i, proj_names[j]);
      CHECK(ctorch_nn_module_get(&g.proj[i][j], m, path));
    }
  }
  return g;
}

static ctorch_status layer_norm(ctorch_tensor *out, ctorch_tensor x, ctorch_tensor w, ctorch_tensor b, const gpt2 *g) {
  const int64_t shape[1] = {(int64_t)g->c.n_embd};
  return ctorch_layer_norm(out, x, shape, 1, w, b, g->c.eps, 1);
}

/* gelu_new as transformers' NewGELUActivation writes it, op for op:
 * 0.5 * x * (1.0 + tanh(sqrt(2 / pi) * (x + 0.044715 * pow(x, 3.0)))). */
static ctorch_status gelu_new(ctorch_tensor *out, ctorch_tensor x) {
  ctorch_tensor half = NULL, t = NULL;
  ctorch_status st = ctorch_mul_Scalar(&half, x, ctorch_scalar_float(0.5));
  if (!st) st = ctorch_pow_Tensor_Scalar(&t, x, ctorch_scalar_float(3.0));
  if (!st) st = ctorch_mul_Scalar(&t, t, ctorch_scalar_float(0.044715));
  if (!st) st = ctorch_add_Tensor(&t, x, t, ctorch_scalar_int(1));
  if (!st) st = ctorch_mul_Scalar(&t, t, ctorch_scalar_float(sqrt(2.0 / 3.14159265358979323846) /* math.pi */));
  if (!st) st = ctorch_tanh(&t, t);
  if (!st) st = ctorch_add_Scalar(&t, t, ctorch_scalar_float(1.0), ctorch_scalar_int(1));
  return st ? st : ctorch_mul_Tensor(out, half, t);
}

/* One GPT2Block on x [B, T, E] at positions past..past+T-1; layer i's cache
 * grows by T (its new tensors kept out of the caller's handle scope). */
static ctorch_status block_forward(ctorch_tensor *x, gpt2 *g, int i, ctorch_tensor causal) {
  static const int64_t perm[4] = {0, 2, 1, 3};
  ctorch_tensor *w = g->h[i], h = NULL, q = NULL, k = NULL, v = NULL, s = NULL, a = NULL;
  int64_t xs[3], shape4[4], e = (int64_t)g->c.n_embd;
  ctorch_status st = ctorch_tensor_sizes(xs, 3, *x);
  shape4[0] = xs[0], shape4[1] = xs[1], shape4[2] = (int64_t)g->c.n_head, shape4[3] = e / shape4[2];
  if (!st) st = layer_norm(&h, *x, w[LN1_W], w[LN1_B], g);
  if (!st) st = ctorch_nn_module_forward(&h, g->proj[i][C_ATTN], h);
  /* split(E, dim=2) into views, each to heads */
  if (!st) st = ctorch_narrow(&q, h, 2, 0, e);
  if (!st) st = ctorch_narrow(&k, h, 2, e, e);
  if (!st) st = ctorch_narrow(&v, h, 2, 2 * e, e);
  if (!st) st = split_heads(&q, q, shape4);
  if (!st) st = split_heads(&k, k, shape4);
  if (!st) st = split_heads(&v, v, shape4);
  /* the cache: past keys/values then these (transformers 5's DynamicCache
   * cats onto an empty tensor at the first step too: a contiguous copy) */
  if (!st) {
    ctorch_tensor kk[2] = {g->past_k[i], k}, vv[2] = {g->past_v[i], v};
    if (!kk[0]) st = ctorch_contiguous(&k, k, CTORCH_MEMORY_CONTIGUOUS);
    else st = ctorch_cat(&k, kk, 2, 2);
    if (!st) st = kk[0] ? ctorch_cat(&v, vv, 2, 2) : ctorch_contiguous(&v, v, CTORCH_MEMORY_CONTIGUOUS);
    if (!st) st = ctorch_handle_scope_keep(k);
    if (!st) st = ctorch_handle_scope_keep(v);
    if (!st) {
      ctorch_tensor_free(g->past_k[i]);
      ctorch_tensor_free(g->past_v[i]);
      g->past_k[i] = k, g->past_v[i] = v;
    }
  }
  /* softmax(q k^T * head_size**-0.5, causal) v, heads merged back */
  if (!st) st = ctorch_transpose_int(&s, k, -1, -2);
  if (!st) st = ctorch_matmul(&s, q, s);
  if (!st) st = ctorch_mul_Scalar(&s, s, ctorch_scalar_float(pow((double)shape4[3], -0.5)));
  if (!st && causal) st = ctorch_masked_fill_Scalar(&s, s, causal, ctorch_scalar_float(-FLT_MAX));
  if (!st) st = ctorch_softmax_int(&s, s, -1, NULL);
  if (!st) st = ctorch_matmul(&a, s, v);
  if (!st) st = ctorch_permute(&a, a, perm, 4);
  if (!st) st = ctorch_contiguous(&a, a, CTORCH_MEMORY_CONTIGUOUS);
  if (!st) st = ctorch_view(&a, a, xs, 3);
  if (!st) st = ctorch_nn_module_forward(&a, g->proj[i][A_PROJ], a);
  if (!st) st = ctorch_add_Tensor(x, a, *x, ctorch_scalar_int(1));
  /* MLP */
  if (!st) st = layer_norm(&h, *x, w[LN2_W], w[LN2_B], g);
  if (!st) st = ctorch_nn_module_forward(&h, g->proj[i][C_FC], h);
  if (!st) st = gelu_new(&h, h);
  if (!st) st = ctorch_nn_module_forward(&h, g->proj[i][M_PROJ], h);
  if (!st) st = ctorch_add_Tensor(x, *x, h, ctorch_scalar_int(1));
  return st;
}

/* The logits of the last position [B, V] for ids [B, T] following the cached
 * positions (NEW handle); the cache grows by T. Called inside a handle scope
 * of the caller's: everything but the cache and the result goes with it. */
static ctorch_status gpt2_step(ctorch_tensor *logits, gpt2 *g, ctorch_tensor ids) {
  const ctorch_dtype i64 = CTORCH_INT64;
  ctorch_tensor x = NULL, pos = NULL, causal = NULL;
  int64_t sizes[2];
  int i;
  ctorch_status st = ctorch_tensor_sizes(sizes, 2, ids);
  if (!st && g->past + sizes[1] > (int64_t)g->c.n_pos) {
    fprintf(stderr, "generate: %lld positions exceed n_positions %.0f\n", (long long)(g->past + sizes[1]), g->c.n_pos);
    exit(2);
  }
  /* wte(ids) + wpe(past .. past+T-1) */
  if (!st) st = ctorch_embedding(&x, g->wte, ids, -1, 0, 0);
  if (!st)
    st = ctorch_arange_start(&pos, ctorch_scalar_int(g->past), ctorch_scalar_int(g->past + sizes[1]), &i64, NULL,
                             &g->device, NULL);
  if (!st) st = ctorch_embedding(&pos, g->wpe, pos, -1, 0, 0);
  if (!st) st = ctorch_add_Tensor(&x, x, pos, ctorch_scalar_int(1));
  /* The causal mask over [T, past + T]: true above the diagonal (hidden).
   * One new position sees everything: no mask. transformers' masked entries
   * hold float32's lowest too, whose exp is 0 in the softmax. */
  if (!st && sizes[1] > 1) {
    const ctorch_dtype b = CTORCH_BOOL;
    int64_t ms[2] = {sizes[1], g->past + sizes[1]};
    st = ctorch_ones(&causal, ms, 2, &b, NULL, &g->device, NULL);
    if (!st) st = ctorch_triu(&causal, causal, g->past + 1);
  }
  for (i = 0; !st && i < (int)g->c.n_layer; ++i) st = block_forward(&x, g, i, causal);
  if (!st) g->past += sizes[1];
  /* ln_f, then lm_head on the last position only (generate's
   * logits_to_keep=1, transformers 5), or on every position, then the last
   * (a GPT-2 without logits_to_keep, 4.46's: the matrix product of T rows,
   * not of one, gives the last row's logits other rounding). [B, V]. */
  if (!st && !g->all_logits) st = ctorch_narrow(&x, x, 1, sizes[1] - 1, 1);
  if (!st) st = layer_norm(&x, x, g->lnf_w, g->lnf_b, g);
  if (!st) st = ctorch_nn_module_forward(&x, g->head, x);
  if (!st) st = ctorch_select_int(logits, x, 1, g->all_logits ? sizes[1] - 1 : 0);
  return st ? st : ctorch_handle_scope_keep(*logits);
}

/* The optimised Linears lay out their weights for one-row products at their
 * first one-row call where the BLAS reads another layout faster (with MKL
 * the LM head, stored [vocab, n_embd], is copied to [n_embd, vocab]: 154 MB
 * for GPT-2). One call of each on a zero row at load keeps that out of the
 * timed run. */
static void zero_row_through(ctorch_nn_module linear, double width, const ctorch_device *device) {
  const int64_t row[3] = {1, 1, (int64_t)width};
  ctorch_tensor x = NULL, y = NULL;
  CHECK(ctorch_zeros(&x, row, 3, NULL, NULL, device, NULL));
  CHECK(ctorch_nn_module_forward(&y, linear, x));
}

static void warm_up(const gpt2 *g) {
  ctorch_handle_scope s = scope_enter(); /* frees x and y */
  int i, j;
  for (i = 0; i < (int)g->c.n_layer; ++i)
    for (j = 0; j < N_PROJ; ++j)
      zero_row_through(g->proj[i][j], j == M_PROJ ? g->c.n_inner : g->c.n_embd, &g->device);
  zero_row_through(g->head, g->c.n_embd, &g->device);
  scope_leave(s);
}

/* ---- choosing the next id: transformers' generate() for one row ---- */

typedef struct {
  int sample;
  double temperature, top_p;
  int64_t top_k;
} gen_options;

/* The next id from logits [1, V]: argmax (on the logits' device), or
 * transformers' warpers in its order (_get_logits_processor), softmax,
 * multinomial(probs, 1), on the CPU: gen is a CPU generator, and CUDA
 * logits are copied over first (on the CPU, the same tensor). */
static ctorch_status next_id(int64_t *id, ctorch_tensor logits, const gen_options *o, ctorch_generator gen) {
  ctorch_tensor s = logits, t = NULL, u = NULL, rm = NULL;
  int64_t sizes[2], last = -1;
  ctorch_status st = ctorch_tensor_sizes(sizes, 2, logits);
  if (!o->sample) {
    if (!st) st = ctorch_argmax(&t, s, &last, 0);
    return st ? st : ctorch_tensor_item_int64(id, t);
  }
  if (!st) st = ctorch_tensor_to_device(&s, logits, ctorch_device_cpu());
  /* TemperatureLogitsWarper: scores / temperature */
  if (!st && o->temperature != 1.0) st = ctorch_div_Scalar(&s, s, ctorch_scalar_float(o->temperature));
  /* TopKLogitsWarper: scores < topk(scores, k)[0][..., -1, None] -> -inf */
  if (!st && o->top_k != 0) {
    int64_t k = o->top_k < sizes[1] ? o->top_k : sizes[1];
    st = ctorch_topk(&t, &u, s, k, -1, 1, 1);
    if (!st) st = ctorch_narrow(&t, t, -1, k - 1, 1);
    if (!st) st = ctorch_lt_Tensor(&rm, s, t);
    if (!st) st = ctorch_masked_fill_Scalar(&s, s, rm, ctorch_scalar_float(-INFINITY));
  }
  /* TopPLogitsWarper: sort ascending, cumulative softmax <= 1 - top_p is
   * removed except the last (min_tokens_to_keep 1), scattered back */
  if (!st && o->top_p < 1.0) {
    st = ctorch_sort(&t, &u, s, -1, 0);
    if (!st) st = ctorch_softmax_int(&t, t, -1, NULL);
    if (!st) st = ctorch_cumsum(&t, t, -1, NULL);
    if (!st) st = ctorch_le_Scalar(&rm, t, ctorch_scalar_float(1 - o->top_p));
    if (!st) st = ctorch_narrow(&t, rm, -1, sizes[1] - 1, 1);
    if (!st) st = ctorch_fill__Scalar(t, ctorch_scalar_int(0));
    if (!st) st = ctorch_scatter_src(&rm, rm, 1, u, rm);
    if (!st) st = ctorch_masked_fill_Scalar(&s, s, rm, ctorch_scalar_float(-INFINITY));
  }
  if (!st) st = ctorch_softmax_int(&t, s, -1, NULL);
  if (!st) st = ctorch_multinomial(&t, t, 1, 0, gen);
  return st ? st : ctorch_tensor_item_int64(id, t);
}

/* CPU seconds of this process (every thread): on a shared machine, a time
 * that leaves out the waits for a core that wall-clock time includes. */
static double cpu_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* "1,2,3" -> malloc'd ids, *n of them (at least one). */
static int64_t *parse_ids(const char *text, int64_t *n) {
  int64_t *v = calloc(strlen(text) + 1, sizeof *v);
  const char *p = text;
  *n = 0;
  if (!v) exit(1);
  for (;;) {
    char *end;
    v[*n] = strtoll(p, &end, 10);
    if (end == p) break;
    ++*n;
    if (*end == '\0') return v;
    if (*end != ',') break;
    p = end + 1;
  }
  fprintf(stderr, "generate: --prompt: expected token ids like \"464,3290,318\", got \"%s\"\n", text);
  exit(2);
}

/* *out (NULL before) = ids [1, n] on the device: made on the CPU from the
 * array, then moved. */
static void ids_tensor(ctorch_tensor *out, const int64_t *ids, int64_t n, ctorch_device device) {
  int64_t shape[2] = {1, 0};
  ctorch_tensor t = NULL;
  shape[1] = n;
  CHECK(ctorch_tensor_from_data(&t, ids, (size_t)n * sizeof *ids, shape, 2, CTORCH_INT64));
  if (device.type == CTORCH_DEVICE_CPU) {
    *out = t;
    return;
  }
  CHECK(ctorch_tensor_to_device(out, t, device));
  ctorch_tensor_free(t);
}

static void usage(const char *prog) {
  fprintf(stderr,
          "usage: %s --model DIR --prompt IDS [--new N] [--sample] [--seed S] [--temperature T]\n"
          "          [--top-k K] [--top-p P] [--eos ID] [--all-logits] [--threads T] [--no-optimize]\n"
          "          [--device cpu|cuda[:N]] [--precision float32|bf16|int8-dynamic]\n"
          "  DIR: a transformers GPT2LMHeadModel's save_pretrained folder (config.json, model.safetensors)\n"
          "  IDS: prompt token ids like \"464,3290,318\"; N new ids (default 20), greedy unless --sample\n"
          "  --no-optimize: the plain Linears, logits bit-identical to transformers' (default: the model\n"
          "    optimised for inference, one-row products split across the intra-op threads)\n"
          "  --device: where the model runs (default cpu); on cuda the plain Linears run, as with\n"
          "    --no-optimize (cuBLAS already uses the whole device), and --sample draws on the CPU\n"
          "  --precision: the optimiser's precision for the Linears (default float32): bf16 weights,\n"
          "    or int8 weights with each call's activations quantised (the ids may then differ)\n",
          prog);
}

int main(int argc, char **argv) {
  const char *dir = NULL, *prompt_text = NULL, *temp_text = "1", *top_p_text = "1", *sample_text = NULL;
  const char *precision = "float32";
  int all_logits = 0, optimize = 1;
  int threads = 0, n_new = 20;
  int64_t n_prompt = 0, top_k = 0, eos = -2, *prompt, *out_ids, n_out = 0;
  unsigned long long seed = 0;
  gpt2_config cfg;
  gpt2 g;
  gen_options opt;
  train_target tgt; /* the device only (amp stays 0) */
  ctorch_nn_module model;
  ctorch_tensor ids = NULL, logits = NULL;
  ctorch_generator gen = NULL;
  ctorch_autograd_scope no_grad = NULL;
  double t0, seconds, cpu0, cpu_seconds;
  int i, j;
  memset(&tgt, 0, sizeof tgt);
  tgt.device = ctorch_device_cpu();
  /* --sample, --all-logits, --no-optimize: bare flags; the table takes "--name VALUE" pairs */
  for (i = j = 1; i < argc; ++i)
    if (!strcmp(argv[i], "--sample")) sample_text = argv[i];
    else if (!strcmp(argv[i], "--all-logits")) all_logits = 1;
    else if (!strcmp(argv[i], "--no-optimize")) optimize = 0;
    else argv[j++] = argv[i];
  argc = j;
  {
    const example_arg args[] = {
        EXAMPLE_STR("--model", &dir),          EXAMPLE_STR("--prompt", &prompt_text), EXAMPLE_INT("--new", &n_new),
        EXAMPLE_U64("--seed", &seed),          EXAMPLE_STR("--temperature", &temp_text),
        EXAMPLE_INT64("--top-k", &top_k),      EXAMPLE_STR("--top-p", &top_p_text),   EXAMPLE_INT64("--eos", &eos),
        EXAMPLE_INT("--threads", &threads),    EXAMPLE_DEVICE("--device", &tgt.device, NULL),
        EXAMPLE_STR("--precision", &precision),
    };
    int rc = example_parse_args(argc, argv, args, EXAMPLE_NARGS(args), usage);
    if (rc >= 0) return rc;
  }
  opt.sample = sample_text != NULL;
  opt.temperature = strtod(temp_text, NULL);
  opt.top_p = strtod(top_p_text, NULL);
  opt.top_k = top_k;
  if (!dir || !prompt_text || n_new < 0 || !(opt.temperature > 0) || !(opt.top_p >= 0 && opt.top_p <= 1) ||
      top_k < 0) {
    usage(argv[0]);
    return 2;
  }
  if (threads > 0) CHECK(ctorch_set_num_threads(threads));
  target_init(&tgt, "generate"); /* an unavailable device: its message, exit status 2 */
  if (tgt.device.type == CTORCH_DEVICE_CUDA) optimize = 0; /* CPU threading and oneDNN: not for cuBLAS */

  cfg = read_config(dir);
  if (eos == -2) eos = (int64_t)cfg.eos;
  model = make_model(&cfg);
  hf_load_weights(model, "generate", dir); /* strict: GPT2LMHeadModel's keys, every one */
  /* Moved before use_linears: its transposed weight views, and the tied
   * head's weight, are then the device's tensors (a move makes new ones). */
  if (tgt.device.type != CTORCH_DEVICE_CPU) CHECK(ctorch_nn_module_to(model, &tgt.device, -1));
  use_linears(model, &cfg);
  if (optimize) { /* a new model (a deep copy, rewritten); the loaded one is not needed after */
    ctorch_nn_module fast = NULL;
    char options[64];
    snprintf(options, sizeof options, "precision=%s", precision);
    CHECK(ctorch_nn_module_optimize_for_inference(&fast, NULL, model, options));
    ctorch_nn_module_free(model);
    model = fast;
  }
  g = take_weights(model, &cfg);
  g.all_logits = all_logits;
  g.device = tgt.device;
  if (optimize) warm_up(&g);
  prompt = parse_ids(prompt_text, &n_prompt);
  for (i = 0; i < n_prompt; ++i)
    if (prompt[i] < 0 || prompt[i] >= (int64_t)cfg.vocab) {
      fprintf(stderr, "generate: --prompt: id %lld is outside the vocabulary (%.0f)\n", (long long)prompt[i], cfg.vocab);
      return 2;
    }
  out_ids = calloc((size_t)n_new + 1, sizeof *out_ids);
  if (!out_ids) return 1;
  if (opt.sample) CHECK(ctorch_generator_new(&gen, ctorch_device_cpu(), seed));

  CHECK(ctorch_autograd_scope_enter(&no_grad, CTORCH_SCOPE_NO_GRAD));
  t0 = now(), cpu0 = cpu_now();
  ids_tensor(&ids, prompt, n_prompt, tgt.device);
  while (n_out < n_new) {
    ctorch_handle_scope s = scope_enter();
    CHECK(gpt2_step(&logits, &g, ids)); /* the whole prompt first, then one id a step */
    CHECK(next_id(&out_ids[n_out], logits, &opt, gen));
    scope_leave(s);
    ctorch_tensor_free(logits);
    ctorch_tensor_free(ids);
    ids = NULL;
    if (out_ids[n_out++] == eos) break; /* transformers stops a row at its eos id (kept) */
    ids_tensor(&ids, &out_ids[n_out - 1], 1, tgt.device);
  }
  seconds = now() - t0, cpu_seconds = cpu_now() - cpu0;
  CHECK(ctorch_autograd_scope_leave(no_grad));

  printf("GPT-2 from %s: %.0f layers, n_embd %.0f, %.0f heads, vocab %.0f; %s", dir, cfg.n_layer, cfg.n_embd,
         cfg.n_head, cfg.vocab, opt.sample ? "sampling" : "greedy");
  if (tgt.device.type == CTORCH_DEVICE_CUDA) printf(" on cuda:%d", (int)tgt.device.index);
  printf("\n");
  printf("prompt=%lld new=%lld seconds=%.6f tok_per_s=%.2f cpu_seconds=%.6f ids=", (long long)n_prompt,
         (long long)n_out, seconds, seconds > 0 ? n_out / seconds : 0.0, cpu_seconds);
  for (i = 0; i < n_out; ++i) printf("%s%lld", i ? "," : "", (long long)out_ids[i]);
  printf("\n");

  ctorch_tensor_free(ids);
  for (i = 0; i < (int)cfg.n_layer; ++i) {
    for (j = 0; j < N_BLOCK_W; ++j) ctorch_tensor_free(g.h[i][j]);
    for (j = 0; j < N_PROJ; ++j) ctorch_nn_module_free(g.proj[i][j]);
    ctorch_tensor_free(g.past_k[i]);
    ctorch_tensor_free(g.past_v[i]);
  }
  ctorch_tensor_free(g.wte), ctorch_tensor_free(g.wpe), ctorch_nn_module_free(g.head);
  ctorch_tensor_free(g.lnf_w), ctorch_tensor_free(g.lnf_b);
  free(g.h), free(g.proj), free(g.past_k), free(g.past_v), free(prompt), free(out_ids);
  ctorch_generator_free(gen);
  ctorch_nn_module_free(model);
  target_free(&tgt);
  return 0;
}
