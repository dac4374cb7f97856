/*
 * A BERT encoder in C with ctorch's modules, loading a Hugging Face
 * `transformers` BertModel saved with save_pretrained (a folder holding
 * config.json and model.safetensors), and running it on token ids.
 *
 *   embeddings: word + token_type + position Embedding, LayerNorm, dropout
 *   encoder.layer.N: self-attention (query/key/value Linear, softmax over
 *     masked scaled dot products, output dense + dropout + LayerNorm of the
 *     residual), intermediate dense + GELU (erf), output dense + dropout +
 *     LayerNorm of the residual
 *   pooler: dense + tanh of the first token's hidden state
 *
 * The module tree has BertModel's names, so its state dict has BertModel's
 * keys ("encoder.layer.0.attention.self.query.weight", ...) and the
 * safetensors file loads into it strictly. The forward uses the operations of
 * transformers' eager attention in its order (examples/bert.py is the same
 * program with transformers itself). The score scale is a multiplication by
 * head_size**-0.5 as transformers 5 writes it (4.x divides by sqrt(head_size):
 * the same number when the head size is a power of 4, BERT-base's 64 too).
 *
 * Usage: bert --model DIR --ids "101,7,8,102;101,9,102,0" [--mask "1,1,1,1;1,1,1,0"]
 *             [--types "0,0,1,1;0,0,0,0"] [--threads T] [--out PATH]
 * Rows are separated by ';', all of one length. The mask defaults to all ones,
 * the token types to zeros. --out writes last_hidden_state [B, L, H] and
 * pooler_output [B, H] to a safetensors file. The last line of output is
 * machine-readable: batch=B seq=L hidden=H sum=<sum of last_hidden_state>
 * pooled_sum=<sum of pooler_output>.
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
      fprintf(stderr, "bert: %s:%d: %s failed with %s: %s\n", __FILE__, __LINE__, #call,           \
              ctorch_status_name(st_), ctorch_last_error());                                       \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

#include "train_device.h" /* example_args.h's device options (unused here) */
#include "example_args.h"
#include "example_nn.h"
#include "hf_folder.h" /* config.json, model.safetensors; box, split_heads */

/* The config.json fields the model needs (BertConfig's defaults where absent). */
typedef struct {
  double vocab, hidden, layers, heads, intermediate, max_pos, type_vocab, pad, eps, p_hidden, p_attn;
} bert_config;

static bert_config read_config(const char *dir) {
  hf_config f;
  bert_config c;
  hf_config_read(&f, "bert", dir);
  c.vocab = hf_number(&f, "vocab_size", 30522);
  c.hidden = hf_number(&f, "hidden_size", 768);
  c.layers = hf_number(&f, "num_hidden_layers", 12);
  c.heads = hf_number(&f, "num_attention_heads", 12);
  c.intermediate = hf_number(&f, "intermediate_size", 3072);
  c.max_pos = hf_number(&f, "max_position_embeddings", 512);
  c.type_vocab = hf_number(&f, "type_vocab_size", 2);
  c.pad = hf_number(&f, "pad_token_id", -1);
  c.eps = hf_number(&f, "layer_norm_eps", 1e-12);
  c.p_hidden = hf_number(&f, "hidden_dropout_prob", 0.1);
  c.p_attn = hf_number(&f, "attention_probs_dropout_prob", 0.1);
  if (!hf_is(&f, "hidden_act", "\"gelu\"") || !hf_is(&f, "position_embedding_type", "\"absolute\""))
    hf_config_fail(&f, "only hidden_act \"gelu\" and absolute position embeddings are supported");
  hf_config_free(&f);
  if (c.hidden < 1 || c.heads < 1 || fmod(c.hidden, c.heads) != 0 || c.layers < 0 || c.layers > 1000)
    hf_config_fail(&f, "hidden_size must be a multiple of num_attention_heads");
  return c;
}

/* BertSelfOutput / BertOutput (the child `block` of a layer):
 * *out = LayerNorm(dropout(dense(h)) + residual). */
static ctorch_status add_norm(ctorch_tensor *out, ctorch_nn_module layer, const char *block, ctorch_tensor h,
                              ctorch_tensor residual) {
  ctorch_nn_module b = NULL;
  ctorch_status st = ctorch_nn_module_get(&b, layer, block);
  if (!st) st = ctorch_nn_module_forward_child(&h, b, "dense", h);
  if (!st) st = ctorch_nn_module_forward_child(&h, b, "dropout", h);
  if (!st) st = ctorch_add_Tensor(&h, h, residual, ctorch_scalar_int(1));
  if (!st) st = ctorch_nn_module_forward_child(out, b, "LayerNorm", h);
  ctorch_nn_module_free(b);
  return st;
}

/* One BertLayer: x [B, L, H] and the additive mask [B, 1, 1, L] -> *x. */
static ctorch_status layer_forward(ctorch_tensor *x, ctorch_nn_module layer, ctorch_tensor mask, int64_t heads) {
  static const int64_t perm[4] = {0, 2, 1, 3};
  ctorch_tensor q = NULL, k = NULL, v = NULL, s = NULL, a = NULL, h = NULL;
  int64_t sizes[3], shape4[4];
  ctorch_status st = ctorch_tensor_sizes(sizes, 3, *x);
  shape4[0] = sizes[0], shape4[1] = sizes[1], shape4[2] = heads, shape4[3] = sizes[2] / heads;
  if (!st) st = ctorch_nn_module_forward_child(&q, layer, "attention.self.query", *x);
  if (!st) st = ctorch_nn_module_forward_child(&k, layer, "attention.self.key", *x);
  if (!st) st = ctorch_nn_module_forward_child(&v, layer, "attention.self.value", *x);
  if (!st) st = split_heads(&q, q, shape4);
  if (!st) st = split_heads(&k, k, shape4);
  if (!st) st = split_heads(&v, v, shape4);
  /* softmax(q k^T * head_size**-0.5 + mask) v, heads merged back */
  if (!st) st = ctorch_transpose_int(&k, k, 2, 3);
  if (!st) st = ctorch_matmul(&s, q, k);
  if (!st) st = ctorch_mul_Scalar(&s, s, ctorch_scalar_float(pow((double)shape4[3], -0.5)));
  if (!st) st = ctorch_add_Tensor(&s, s, mask, ctorch_scalar_int(1));
  if (!st) st = ctorch_softmax_int(&s, s, -1, NULL);
  if (!st) st = ctorch_nn_module_forward_child(&s, layer, "attention.self.dropout", s);
  if (!st) st = ctorch_matmul(&a, s, v);
  if (!st) st = ctorch_permute(&a, a, perm, 4);
  if (!st) st = ctorch_contiguous(&a, a, CTORCH_MEMORY_CONTIGUOUS);
  if (!st) st = ctorch_view(&a, a, sizes, 3);
  if (!st) st = add_norm(&a, layer, "attention.output", a, *x);
  if (!st) st = ctorch_nn_module_forward_child(&h, layer, "intermediate.dense", a);
  if (!st) st = ctorch_nn_module_forward_child(&h, layer, "intermediate.intermediate_act_fn", h);
  if (!st) st = add_norm(x, layer, "output", h, a);
  return st;
}

/* BertModel.forward: (input_ids, attention_mask, token_type_ids) [B, L] int64
 * -> (last_hidden_state [B, L, H], pooler_output [B, H]). */
static ctorch_status bert_forward(void *cfg, ctorch_nn_module self, const ctorch_tensor *in, size_t n_in,
                                  const char *kwargs, ctorch_tensor *out, size_t max_out, size_t *n_out) {
  const bert_config *c = (const bert_config *)cfg;
  const ctorch_dtype f32 = CTORCH_FLOAT32;
  ctorch_handle_scope s = NULL;
  ctorch_tensor x = NULL, t = NULL, pos = NULL, mask = NULL;
  ctorch_nn_module layers = NULL, layer = NULL;
  ctorch_device dev;
  int64_t sizes[2], mask_shape[4];
  size_t i;
  ctorch_status st = ctorch_handle_scope_enter(&s);
  (void)kwargs;
  *n_out = 0;
  if (n_in != 3 || max_out < 2 || !in[0] || !in[1] || !in[2]) {
    ctorch_handle_scope_leave(s);
    return CTORCH_INVALID_ARGUMENT;
  }
  if (!st) st = ctorch_tensor_sizes(sizes, 2, in[0]);
  /* embeddings: word + token type, + position, LayerNorm, dropout */
  if (!st) st = ctorch_nn_module_forward_child(&x, self, "embeddings.word_embeddings", in[0]);
  if (!st) st = ctorch_nn_module_forward_child(&t, self, "embeddings.token_type_embeddings", in[2]);
  if (!st) st = ctorch_add_Tensor(&x, x, t, ctorch_scalar_int(1));
  if (!st) st = ctorch_tensor_device(&dev, in[0]); /* positions on the ids' device (a GPU too) */
  if (!st) st = ctorch_arange(&pos, ctorch_scalar_int(sizes[1]), NULL, NULL, &dev, NULL);
  if (!st) st = ctorch_nn_module_forward_child(&t, self, "embeddings.position_embeddings", pos);
  if (!st) st = ctorch_add_Tensor(&x, x, t, ctorch_scalar_int(1));
  if (!st) st = ctorch_nn_module_forward_child(&x, self, "embeddings.LayerNorm", x);
  if (!st) st = ctorch_nn_module_forward_child(&x, self, "embeddings.dropout", x);
  /* the additive mask: 0 where attended, float32's lowest where padded */
  mask_shape[0] = sizes[0], mask_shape[1] = mask_shape[2] = 1, mask_shape[3] = sizes[1];
  if (!st) st = ctorch_to_dtype(&mask, in[1], f32, 0, 0, NULL);
  if (!st) st = ctorch_view(&mask, mask, mask_shape, 4);
  if (!st) st = ctorch_rsub_Scalar(&mask, mask, ctorch_scalar_float(1.0), ctorch_scalar_int(1));
  if (!st) st = ctorch_mul_Scalar(&mask, mask, ctorch_scalar_float(-FLT_MAX));
  if (!st) st = ctorch_nn_module_get(&layers, self, "encoder.layer");
  for (i = 0; !st && i < (size_t)c->layers; ++i) {
    st = ctorch_nn_module_child(&layer, NULL, layers, i);
    if (!st) st = layer_forward(&x, layer, mask, (int64_t)c->heads);
    ctorch_nn_module_free(layer);
    layer = NULL;
  }
  ctorch_nn_module_free(layers);
  /* pooler: tanh(dense(hidden state of the first token)) */
  if (!st) st = ctorch_select_int(&t, x, 1, 0);
  if (!st) st = ctorch_nn_module_forward_child(&t, self, "pooler.dense", t);
  if (!st) st = ctorch_nn_module_forward_child(&out[1], self, "pooler.activation", t);
  if (!st) st = ctorch_handle_scope_keep(out[0] = x);
  if (!st) st = ctorch_handle_scope_keep(out[1]);
  ctorch_handle_scope_leave(s);
  *n_out = st ? 0 : 2;
  return st;
}

/* BertSelfOutput / BertOutput: dense(in -> hidden), LayerNorm, dropout. */
static ctorch_nn_module dense_norm(const char *type, double in, const bert_config *c) {
  ctorch_nn_module m = box(type);
  nn_add(m, "dense", nn_makef("Linear", "%.0f, %.0f", in, c->hidden));
  nn_add(m, "LayerNorm", nn_makef("LayerNorm", "%.0f, eps=%.17g", c->hidden, c->eps));
  nn_add(m, "dropout", nn_makef("Dropout", "%.17g", c->p_hidden));
  return m;
}

/* BertModel(config)'s tree of modules, with its names. */
static ctorch_nn_module make_model(const bert_config *c) {
  ctorch_nn_module m = NULL, e = box("BertEmbeddings"), enc = box("BertEncoder"), layers = nn_make("ModuleList", "");
  ctorch_nn_module pool = box("BertPooler");
  int i;
  CHECK(ctorch_nn_custom_new(&m, "BertModel", bert_forward, (void *)c, NULL));
  if (c->pad >= 0)
    nn_add(e, "word_embeddings", nn_makef("Embedding", "%.0f, %.0f, padding_idx=%.0f", c->vocab, c->hidden, c->pad));
  else
    nn_add(e, "word_embeddings", nn_makef("Embedding", "%.0f, %.0f", c->vocab, c->hidden));
  nn_add(e, "position_embeddings", nn_makef("Embedding", "%.0f, %.0f", c->max_pos, c->hidden));
  nn_add(e, "token_type_embeddings", nn_makef("Embedding", "%.0f, %.0f", c->type_vocab, c->hidden));
  nn_add(e, "LayerNorm", nn_makef("LayerNorm", "%.0f, eps=%.17g", c->hidden, c->eps));
  nn_add(e, "dropout", nn_makef("Dropout", "%.17g", c->p_hidden));
  nn_add(m, "embeddings", e);
  for (i = 0; i < (int)c->layers; ++i) {
    ctorch_nn_module layer = box("BertLayer"), att = box("BertAttention"), self = box("BertSelfAttention");
    ctorch_nn_module inter = box("BertIntermediate");
    nn_add(self, "query", nn_makef("Linear", "%.0f, %.0f", c->hidden, c->hidden));
    nn_add(self, "key", nn_makef("Linear", "%.0f, %.0f", c->hidden, c->hidden));
    nn_add(self, "value", nn_makef("Linear", "%.0f, %.0f", c->hidden, c->hidden));
    nn_add(self, "dropout", nn_makef("Dropout", "%.17g", c->p_attn));
    nn_add(att, "self", self);
    nn_add(att, "output", dense_norm("BertSelfOutput", c->hidden, c));
    nn_add(layer, "attention", att);
    nn_add(inter, "dense", nn_makef("Linear", "%.0f, %.0f", c->hidden, c->intermediate));
    nn_add(inter, "intermediate_act_fn", nn_make("GELU", ""));
    nn_add(layer, "intermediate", inter);
    nn_add(layer, "output", dense_norm("BertOutput", c->intermediate, c));
    nn_add(layers, NULL, layer);
  }
  nn_add(enc, "layer", layers);
  nn_add(m, "encoder", enc);
  nn_add(pool, "dense", nn_makef("Linear", "%.0f, %.0f", c->hidden, c->hidden));
  nn_add(pool, "activation", nn_make("Tanh", ""));
  nn_add(m, "pooler", pool);
  return m;
}

/* "1,2,3;4,5,6" -> NEW int64 tensor [rows, cols]; rows must be of one length. */
static ctorch_tensor parse_rows(const char *text, const char *what) {
  int64_t *v = calloc(strlen(text) + 1, sizeof *v), shape[2] = {1, 0}, n = 0, cols = -1, in_row = 0;
  const char *p = text;
  ctorch_tensor t = NULL;
  if (!v) exit(1);
  for (;;) {
    char *end;
    v[n++] = strtoll(p, &end, 10);
    if (end == p) break;
    ++in_row;
    if (*end == ';' || *end == '\0') {
      if (cols >= 0 && in_row != cols) break;
      cols = in_row, in_row = 0;
      if (*end == '\0') {
        shape[0] = n / cols, shape[1] = cols;
        CHECK(ctorch_tensor_from_data(&t, v, (size_t)n * sizeof *v, shape, 2, CTORCH_INT64));
        free(v);
        return t;
      }
    } else if (*end != ',') break;
    p = end + 1;
  }
  fprintf(stderr, "bert: --%s: expected rows of integers like \"1,2,3;4,5,6\", all of one length, got \"%s\"\n",
          what, text);
  exit(2);
}

/* A tensor like `like` filled with v (the default mask and token types). */
static ctorch_tensor filled(ctorch_tensor like, int64_t v) {
  ctorch_tensor t = NULL;
  CHECK(ctorch_full_like(&t, like, ctorch_scalar_int(v), NULL, NULL, NULL, NULL, NULL));
  return t;
}

static void usage(const char *prog) {
  fprintf(stderr,
          "usage: %s --model DIR --ids ROWS [--mask ROWS] [--types ROWS] [--threads T] [--out PATH]\n"
          "  DIR: a transformers BertModel's save_pretrained folder (config.json, model.safetensors)\n"
          "  ROWS: token rows like \"101,7,8,102;101,9,102,0\" (mask: all ones, types: zeros by default)\n",
          prog);
}

int main(int argc, char **argv) {
  const char *dir = NULL, *ids_text = NULL, *mask_text = NULL, *types_text = NULL, *out_path = "";
  int threads = 0;
  bert_config cfg;
  ctorch_nn_module model;
  ctorch_tensor in[3], out[2] = {NULL, NULL}, sum = NULL, pooled_sum = NULL;
  ctorch_autograd_scope no_grad = NULL;
  int64_t shape[3] = {0, 0, 0};
  size_t n_out = 0;
  double total = 0, pooled_total = 0;
  {
    const example_arg args[] = {
        EXAMPLE_STR("--model", &dir),         EXAMPLE_STR("--ids", &ids_text),   EXAMPLE_STR("--mask", &mask_text),
        EXAMPLE_STR("--types", &types_text), EXAMPLE_INT("--threads", &threads), EXAMPLE_STR("--out", &out_path),
    };
    int rc = example_parse_args(argc, argv, args, EXAMPLE_NARGS(args), usage);
    if (rc >= 0) return rc;
  }
  if (!dir || !ids_text) {
    usage(argv[0]);
    return 2;
  }
  if (threads > 0) CHECK(ctorch_set_num_threads(threads));

  cfg = read_config(dir);
  model = make_model(&cfg);
  hf_load_weights(model, "bert", dir); /* strict: BertModel's keys, every one */
  CHECK(ctorch_nn_module_train(model, 0)); /* dropout off, as model.eval() */

  in[0] = parse_rows(ids_text, "ids");
  in[1] = mask_text ? parse_rows(mask_text, "mask") : filled(in[0], 1);
  in[2] = types_text ? parse_rows(types_text, "types") : filled(in[0], 0);
  CHECK(ctorch_autograd_scope_enter(&no_grad, CTORCH_SCOPE_NO_GRAD));
  CHECK(ctorch_nn_module_forward_n(model, in, 3, NULL, out, 2, &n_out));
  CHECK(ctorch_autograd_scope_leave(no_grad));

  CHECK(ctorch_tensor_sizes(shape, 3, out[0]));
  CHECK(ctorch_sum(&sum, out[0], NULL));
  CHECK(ctorch_sum(&pooled_sum, out[1], NULL));
  CHECK(ctorch_tensor_item_double(&total, sum));
  CHECK(ctorch_tensor_item_double(&pooled_total, pooled_sum));
  printf("BERT encoder from %s: %.0f layers, hidden %.0f, %.0f heads\n", dir, cfg.layers, cfg.hidden, cfg.heads);
  if (*out_path) {
    const char *names[2] = {"last_hidden_state", "pooler_output"};
    CHECK(ctorch_safetensors_save(out_path, names, out, 2, NULL, NULL, 0));
    printf("wrote last_hidden_state and pooler_output to %s\n", out_path);
  }
  printf("batch=%lld seq=%lld hidden=%lld sum=%.9g pooled_sum=%.9g\n", (long long)shape[0], (long long)shape[1],
         (long long)shape[2], total, pooled_total);

  ctorch_tensor_free(sum);
  ctorch_tensor_free(pooled_sum);
  ctorch_tensor_free(out[0]);
  ctorch_tensor_free(out[1]);
  ctorch_tensor_free(in[0]);
  ctorch_tensor_free(in[1]);
  ctorch_tensor_free(in[2]);
  ctorch_nn_module_free(model);
  return 0;
}
