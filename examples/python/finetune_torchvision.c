/*
 * A model from Python's ecosystem, fine-tuned from C, saved back for Python
 * (the Python bridge, include/ctorch_python.h):
 *
 *   1. Python builds torchvision's ResNet-18 (10 classes, random weights from
 *      torch.manual_seed(--seed): nothing is downloaded);
 *   2. it comes into C as a TorchScript module (ctorch_py_module_to_c);
 *   3. C freezes everything but the last layer (fc) and trains fc with SGD
 *      on Fashion-MNIST images (gray, repeated to 3 channels), in eval mode
 *      (BatchNorm keeps its statistics: only fc learns);
 *   4. the trained weights go back to the Python model without a copy
 *      (ctorch_py_from_tensor) and Python's torch.save writes its state dict.
 *
 * Usage: finetune_torchvision [--data DIR] [--steps K] [--batch B] [--seed S] [--out DIR]
 * Writes, with --out: DIR/finetuned.pt (the model's state_dict) and
 * DIR/check.pt ({"x": a batch, "logits": C's logits for it}), which
 * tests/pybridge/finetune_check.py compares with torchvision in Python.
 * The last line: initial_loss=<nats> final_loss=<nats> trained=<fc params>,
 * the losses on a fixed batch of 256 held-out images (the last of the
 * training file, never trained on) before and after.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctorch.h"
#include "ctorch_python.h"

#define CHECK(call)                                                                                        \
  do {                                                                                                     \
    ctorch_status st_ = (call);                                                                            \
    if (st_ != CTORCH_OK) {                                                                                \
      fprintf(stderr, "finetune_torchvision: %s:%d: %s failed with %s: %s\n", __FILE__, __LINE__, #call,   \
              ctorch_status_name(st_), ctorch_last_error());                                               \
      exit(1);                                                                                             \
    }                                                                                                      \
  } while (0)
#define PYCHECK(call)                                                                                      \
  do {                                                                                                     \
    ctorch_status st_ = (call);                                                                            \
    if (st_ != CTORCH_OK) {                                                                                \
      fprintf(stderr, "finetune_torchvision: %s:%d: %s failed with %s: %s\n", __FILE__, __LINE__, #call,   \
              ctorch_status_name(st_), ctorch_py_last_error());                                            \
      exit(1);                                                                                             \
    }                                                                                                      \
  } while (0)

/* The Python side: build the model, and save what C trained. */
static const char *kPython =
    "import torch, torchvision\n"
    "def build(seed):\n"
    "    torch.manual_seed(seed)\n"
    "    return torchvision.models.resnet18(num_classes=10).eval()\n"
    "def save(model, state, x, logits, out_dir):\n"
    "    model.load_state_dict(state)\n"
    "    torch.save(model.state_dict(), out_dir + '/finetuned.pt')\n"
    "    torch.save({'x': x.clone(), 'logits': logits.clone()}, out_dir + '/check.pt')\n";

/* Fashion-MNIST images [start, start + n) as float [n, 3, 28, 28] in [-1, 1], and labels. */
static void batch(ctorch_tensor images, ctorch_tensor labels, int64_t start, int64_t n, ctorch_tensor *x,
                  ctorch_tensor *y) {
  ctorch_tensor u = NULL, f = NULL, g = NULL, c = NULL, three[3];
  int64_t shape[4] = {n, 1, 28, 28};
  CHECK(ctorch_narrow(&u, images, 0, start, n));
  CHECK(ctorch_tensor_to_dtype(&f, u, CTORCH_FLOAT32));
  CHECK(ctorch_div_Scalar(&g, f, ctorch_scalar_float(127.5)));
  CHECK(ctorch_sub_Scalar(&c, g, ctorch_scalar_float(1.0), ctorch_scalar_int(1)));
  ctorch_tensor_free(f);
  CHECK(ctorch_reshape(&f, c, shape, 4));
  three[0] = three[1] = three[2] = f;
  CHECK(ctorch_cat(x, three, 3, 1));
  CHECK(ctorch_narrow(y, labels, 0, start, n));
  ctorch_tensor_free(u);
  ctorch_tensor_free(f);
  ctorch_tensor_free(g);
  ctorch_tensor_free(c);
}

/* Loss on the held-out batch, without a graph. */
static double eval_loss(ctorch_module m, ctorch_tensor x, ctorch_tensor y);

static double loss_of(ctorch_module m, ctorch_tensor x, ctorch_tensor y, ctorch_tensor *loss, ctorch_tensor *logits) {
  double v = 0;
  CHECK(ctorch_module_forward_tensors(logits, m, &x, 1));
  CHECK(ctorch_cross_entropy_loss(loss, *logits, y, NULL, 1, -100, 0.0));
  CHECK(ctorch_tensor_item_double(&v, *loss));
  return v;
}

static double eval_loss(ctorch_module m, ctorch_tensor x, ctorch_tensor y) {
  ctorch_autograd_scope ng = NULL;
  ctorch_tensor loss = NULL, logits = NULL;
  double v;
  CHECK(ctorch_autograd_scope_enter(&ng, CTORCH_SCOPE_NO_GRAD));
  v = loss_of(m, x, y, &loss, &logits);
  CHECK(ctorch_autograd_scope_leave(ng));
  ctorch_tensor_free(loss);
  ctorch_tensor_free(logits);
  return v;
}

int main(int argc, char **argv) {
  const char *data = getenv("CTORCH_FASHION_MNIST_DIR"), *out_dir = NULL;
  int64_t steps = 30, bs = 64, seed = 0, i;
  ctorch_py_object ns = NULL, build = NULL, save = NULL, seed_obj = NULL, model = NULL;
  ctorch_module m = NULL;
  ctorch_tensor images = NULL, labels = NULL, x = NULL, y = NULL, trained[2] = {NULL, NULL};
  ctorch_tensor held_x = NULL, held_y = NULL;
  ctorch_tensor_dict params = NULL, buffers = NULL;
  ctorch_optimizer opt = NULL;
  ctorch_optim_options o;
  ctorch_value sv = NULL;
  double first = 0, last = 0;
  size_t n = 0, k, n_trained = 0;
  for (i = 1; i < argc; i += 2) { /* a flag and its value */
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!v) {
      fprintf(stderr, "usage: %s [--data DIR] [--steps K] [--batch B] [--seed S] [--out DIR]\n", argv[0]);
      return 2;
    }
    if (!strcmp(a, "--data")) data = v;
    else if (!strcmp(a, "--steps")) steps = atoll(v);
    else if (!strcmp(a, "--batch")) bs = atoll(v);
    else if (!strcmp(a, "--seed")) seed = atoll(v);
    else if (!strcmp(a, "--out")) out_dir = v;
    else {
      fprintf(stderr, "usage: %s [--data DIR] [--steps K] [--batch B] [--seed S] [--out DIR]\n", argv[0]);
      return 2;
    }
  }
  if (!data || !*data) data = "/usr/share/datasets/fashion-mnist"; /* package dataset-fashion-mnist */

  /* 1. the model, made by torchvision */
  PYCHECK(ctorch_py_start(NULL, NULL));
  PYCHECK(ctorch_py_exec(&ns, kPython, "finetune"));
  PYCHECK(ctorch_py_getattr(&build, ns, "build"));
  PYCHECK(ctorch_py_getattr(&save, ns, "save"));
  CHECK(ctorch_value_int(&sv, seed));
  PYCHECK(ctorch_py_from_value(&seed_obj, sv));
  PYCHECK(ctorch_py_call(&model, build, &seed_obj, 1, NULL));

  /* 2. into C */
  CHECK(ctorch_data_mnist_read_dir(&images, &labels, data, 1));
  batch(images, labels, 0, bs, &x, &y);
  PYCHECK(ctorch_py_module_to_c(&m, model, &x, 1));

  /* 3. only fc learns */
  CHECK(ctorch_module_named_parameters(&params, m));
  CHECK(ctorch_tensor_dict_size(&n, params));
  for (k = 0; k < n; ++k) {
    const char *name = NULL;
    ctorch_tensor p = NULL;
    CHECK(ctorch_tensor_dict_key(&name, params, k));
    CHECK(ctorch_tensor_dict_get(&p, params, k));
    if (!strncmp(name, "fc.", 3) && n_trained < 2) {
      trained[n_trained++] = p;
      CHECK(ctorch_tensor_set_requires_grad(p, 1));
    } else {
      CHECK(ctorch_tensor_set_requires_grad(p, 0));
      ctorch_tensor_free(p);
    }
  }
  CHECK(ctorch_optim_options_default(&o, CTORCH_OPTIM_SGD));
  o.lr = 0.05;
  o.momentum = 0.9;
  CHECK(ctorch_optimizer_new(&opt, CTORCH_OPTIM_SGD, trained, n_trained, &o));
  batch(images, labels, 60000 - 256, 256, &held_x, &held_y);
  first = eval_loss(m, held_x, held_y);
  for (i = 0; i < steps; ++i) {
    ctorch_tensor loss = NULL, logits = NULL;
    double v;
    ctorch_tensor_free(x);
    ctorch_tensor_free(y);
    batch(images, labels, (i * bs) % (60000 - 256 - bs), bs, &x, &y);
    CHECK(ctorch_optimizer_zero_grad(opt, 1));
    v = loss_of(m, x, y, &loss, &logits);
    CHECK(ctorch_tensor_backward(loss, NULL, 0, 0, NULL, 0));
    CHECK(ctorch_optimizer_step(opt));
    if (i % 10 == 0 || i == steps - 1) printf("step %lld loss %.4f\n", (long long)i, v);
    ctorch_tensor_free(loss);
    ctorch_tensor_free(logits);
  }
  last = eval_loss(m, held_x, held_y);

  /* 4. back to Python: the module's tensors, zero-copy, into the torchvision model */
  if (out_dir) {
    ctorch_py_object args[5], state = NULL, r = NULL;
    ctorch_tensor logits = NULL, loss = NULL;
    const char **names;
    ctorch_py_object *vals;
    size_t np = 0, nb = 0;
    CHECK(ctorch_module_named_buffers(&buffers, m));
    CHECK(ctorch_tensor_dict_size(&nb, buffers));
    np = n;
    names = calloc(np + nb, sizeof *names);
    vals = calloc(np + nb, sizeof *vals);
    if (!names || !vals) return 1;
    for (k = 0; k < np + nb; ++k) {
      ctorch_tensor_dict d = k < np ? params : buffers;
      size_t j = k < np ? k : k - np;
      ctorch_tensor t = NULL;
      CHECK(ctorch_tensor_dict_key(&names[k], d, j));
      CHECK(ctorch_tensor_dict_get(&t, d, j));
      PYCHECK(ctorch_py_from_tensor(&vals[k], t));
      ctorch_tensor_free(t);
    }
    PYCHECK(ctorch_py_dict(&state, names, vals, np + nb));
    {
      ctorch_autograd_scope ng = NULL;
      CHECK(ctorch_autograd_scope_enter(&ng, CTORCH_SCOPE_NO_GRAD));
      loss_of(m, x, y, &loss, &logits);
      CHECK(ctorch_autograd_scope_leave(ng));
    }
    args[0] = model;
    args[1] = state;
    PYCHECK(ctorch_py_from_tensor(&args[2], x));
    PYCHECK(ctorch_py_from_tensor(&args[3], logits));
    PYCHECK(ctorch_py_str(&args[4], out_dir));
    PYCHECK(ctorch_py_call(&r, save, args, 5, NULL));
    printf("saved %s/finetuned.pt and %s/check.pt\n", out_dir, out_dir);
    for (k = 0; k < np + nb; ++k) ctorch_py_object_free(vals[k]);
    for (k = 2; k < 5; ++k) ctorch_py_object_free(args[k]);
    free(names);
    free(vals);
    ctorch_py_object_free(state);
    ctorch_py_object_free(r);
    ctorch_tensor_free(logits);
    ctorch_tensor_free(loss);
  }
  printf("initial_loss=%.6f final_loss=%.6f trained=%zu\n", first, last, n_trained);
  for (k = 0; k < n_trained; ++k) ctorch_tensor_free(trained[k]);
  ctorch_optimizer_free(opt);
  ctorch_tensor_dict_free(params);
  ctorch_tensor_dict_free(buffers);
  ctorch_module_free(m);
  ctorch_tensor_free(images);
  ctorch_tensor_free(labels);
  ctorch_tensor_free(x);
  ctorch_tensor_free(y);
  ctorch_tensor_free(held_x);
  ctorch_tensor_free(held_y);
  ctorch_value_free(sv);
  ctorch_py_object_free(seed_obj);
  ctorch_py_object_free(model);
  ctorch_py_object_free(build);
  ctorch_py_object_free(save);
  ctorch_py_object_free(ns);
  return last < first ? 0 : 3;
}
