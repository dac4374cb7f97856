/*
 * Where and in which precision the examples train: the --device and --amp
 * options of lenet5.c, ddp_lenet5.c and resnet.c, and the few calls that
 * differ between a CPU float32 step and a CUDA (or CPU) mixed-precision one.
 * Header-only; the includer defines CHECK(call) before including it.
 *
 *   --device cpu | cuda | cuda:N   where the model and the data live
 *   --amp none | bf16 | fp16       autocast the forward pass to that dtype;
 *                                  fp16 also scales the loss (GradScaler)
 *
 * A device or precision this machine cannot run is refused before any work,
 * with the library's message (e.g. "cuda:0 is not available: this libtorch
 * was built without CUDA"), exit status 2.
 */
#ifndef CTORCH_TRAIN_DEVICE_H
#define CTORCH_TRAIN_DEVICE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctorch.h"

#ifndef CHECK
#error "define CHECK(call) before including train_device.h"
#endif

typedef struct {
  ctorch_device device;
  int amp;                 /* 0, or the autocast dtype (CTORCH_BFLOAT16 / CTORCH_FLOAT16) */
  ctorch_grad_scaler scaler; /* fp16 only */
} train_target;

/* "cpu", "cuda", "cuda:N" -> *out; 0 on success. */
static inline int parse_device(const char *s, ctorch_device *out) {
  char *end = NULL;
  if (!strcmp(s, "cpu")) {
    *out = ctorch_device_cpu();
    return 0;
  }
  if (!strcmp(s, "cuda")) {
    out->type = CTORCH_DEVICE_CUDA;
    out->index = 0;
    return 0;
  }
  if (!strncmp(s, "cuda:", 5)) {
    long i = strtol(s + 5, &end, 10);
    if (end == s + 5 || *end || i < 0 || i > 127) return -1;
    out->type = CTORCH_DEVICE_CUDA;
    out->index = (int32_t)i;
    return 0;
  }
  return -1;
}

/* "none"/"off"/"fp32", "bf16", "fp16" -> 0 / dtype; -1 if unknown. */
static inline int parse_amp(const char *s) {
  if (!strcmp(s, "none") || !strcmp(s, "off") || !strcmp(s, "fp32")) return 0;
  if (!strcmp(s, "bf16") || !strcmp(s, "bfloat16")) return CTORCH_BFLOAT16;
  if (!strcmp(s, "fp16") || !strcmp(s, "float16")) return CTORCH_FLOAT16;
  return -1;
}

static inline const char *amp_name(int amp) {
  return amp == CTORCH_BFLOAT16 ? "bf16" : amp == CTORCH_FLOAT16 ? "fp16" : "fp32";
}

/* Checks that the device and the precision can run here (opening and
 * closing an autocast scope is the test ctorch itself applies); on failure
 * prints why and exits 2. Makes a CUDA device current and, for fp16, a loss
 * scaler on it. */
static inline void target_init(train_target *t, const char *prog) {
  ctorch_status st;
  t->scaler = NULL;
  if (t->device.type == CTORCH_DEVICE_CUDA) {
    st = ctorch_cuda_set_device(t->device.index);
    if (st != CTORCH_OK) {
      fprintf(stderr, "%s: --device cuda:%d: %s\n", prog, t->device.index, ctorch_last_error());
      exit(2);
    }
  }
  if (t->amp) {
    ctorch_autocast_scope s = NULL;
    st = ctorch_autocast_scope_enter(&s, (ctorch_device_type)t->device.type, (ctorch_dtype)t->amp, 1, 1);
    if (st != CTORCH_OK) {
      fprintf(stderr, "%s: --amp %s on %s: %s\n", prog, amp_name(t->amp),
              t->device.type == CTORCH_DEVICE_CUDA ? "cuda" : "cpu", ctorch_last_error());
      exit(2);
    }
    CHECK(ctorch_autocast_scope_leave(s));
  }
  if (t->amp == CTORCH_FLOAT16) CHECK(ctorch_grad_scaler_new(&t->scaler, t->device, NULL));
}

static inline void target_free(train_target *t) { ctorch_grad_scaler_free(t->scaler); }

/* Autocast around a forward pass (NULL when training in float32). */
static inline ctorch_autocast_scope amp_enter(const train_target *t) {
  ctorch_autocast_scope s = NULL;
  if (t->amp) CHECK(ctorch_autocast_scope_enter(&s, (ctorch_device_type)t->device.type, (ctorch_dtype)t->amp, 1, 1));
  return s;
}
static inline void amp_leave(ctorch_autocast_scope s) {
  if (s) CHECK(ctorch_autocast_scope_leave(s));
}

/* Moves a tensor to the target device in place of the caller's handle. */
static inline void to_target(const train_target *t, ctorch_tensor *x) {
  ctorch_tensor moved = NULL;
  if (t->device.type == CTORCH_DEVICE_CPU) return;
  CHECK(ctorch_tensor_to_device(&moved, *x, t->device));
  ctorch_tensor_free(*x);
  *x = moved;
}

/* Moves freshly initialised parameters (CPU leaves) to the device as leaves,
 * as Module.to(device) does: the CPU draw keeps the initialisation equal to
 * a CPU run from the same seed. */
static inline void params_to_target(const train_target *t, ctorch_tensor *p, int n) {
  int i;
  if (t->device.type == CTORCH_DEVICE_CPU) return;
  for (i = 0; i < n; ++i) {
    ctorch_tensor moved = NULL, leaf = NULL;
    CHECK(ctorch_tensor_to_device(&moved, p[i], t->device));
    CHECK(ctorch_tensor_detach(&leaf, moved));
    CHECK(ctorch_tensor_set_requires_grad(leaf, 1));
    ctorch_tensor_free(moved);
    ctorch_tensor_free(p[i]);
    p[i] = leaf;
  }
}

/* Zeroed gradients, then backward of the loss (scaled by the loss scaler
 * for fp16). */
static inline void scaled_backward(const train_target *t, ctorch_optimizer opt, ctorch_tensor loss) {
  CHECK(ctorch_optimizer_zero_grad(opt, 1));
  if (t->scaler) {
    ctorch_tensor scaled = NULL;
    CHECK(ctorch_grad_scaler_scale(&scaled, t->scaler, loss));
    CHECK(ctorch_tensor_backward(scaled, NULL, 0, 0, NULL, 0));
    ctorch_tensor_free(scaled);
  } else {
    CHECK(ctorch_tensor_backward(loss, NULL, 0, 0, NULL, 0));
  }
}

/* The optimizer step; for fp16 through the scaler (which unscales the
 * gradients, skips the step if any is inf/NaN, and updates its scale). */
static inline void scaled_step(const train_target *t, ctorch_optimizer opt) {
  if (t->scaler) {
    CHECK(ctorch_grad_scaler_step(NULL, t->scaler, opt));
    CHECK(ctorch_grad_scaler_update(t->scaler, NULL));
  } else {
    CHECK(ctorch_optimizer_step(opt));
  }
}

/* backward + optimizer step, through the loss scaler for fp16. */
static inline void backward_step(const train_target *t, ctorch_optimizer opt, ctorch_tensor loss) {
  scaled_backward(t, opt, loss);
  scaled_step(t, opt);
}

/* CPU copies of the parameters for saving (new handles; the same handles
 * again, with a new reference, on the CPU). */
static inline void params_to_cpu(ctorch_tensor *dst, ctorch_tensor *p, int n) {
  int i;
  for (i = 0; i < n; ++i) CHECK(ctorch_tensor_to_device(&dst[i], p[i], ctorch_device_cpu()));
}

#endif
