/*
 * Traces a module built with ctorch's nn layer into a TorchScript module
 * (ctorch_module): its parameters and buffers keep their state-dict names
 * ("0.weight", "fc.bias"), so the result saves, exports (ONNX) and compiles
 * (AOTInductor) as the same network. Header-only; used by the bridge's
 * example, tests and benchmark.
 */
#ifndef CTORCH_TRACE_NN_H
#define CTORCH_TRACE_NN_H

#include "ctorch.h"

/* Adds every tensor of d to the trace as a parameter (buffers = 0) or buffer. */
static ctorch_status trace_nn_add(ctorch_tracer tr, ctorch_tensor_dict d, int buffers) {
  size_t n = 0, i;
  ctorch_status st = ctorch_tensor_dict_size(&n, d);
  for (i = 0; st == CTORCH_OK && i < n; ++i) {
    const char *name = NULL;
    ctorch_tensor t = NULL;
    st = ctorch_tensor_dict_key(&name, d, i);
    if (st == CTORCH_OK) st = ctorch_tensor_dict_get(&t, d, i);
    if (st == CTORCH_OK)
      st = buffers ? ctorch_tracer_add_buffer(tr, name, t) : ctorch_tracer_add_parameter(tr, name, t);
    ctorch_tensor_free(t);
  }
  return st;
}

/* *out = NEW TorchScript module recording m's forward on the example input x
 * (borrowed), in m's current train/eval mode. On failure *out is NULL and
 * ctorch_last_error() says why. */
static ctorch_status trace_nn_module(ctorch_module *out, ctorch_nn_module m, ctorch_tensor x, const char *name) {
  ctorch_tracer tr = NULL;
  ctorch_tensor_dict params = NULL, buffers = NULL;
  ctorch_tensor y = NULL;
  ctorch_status st = ctorch_tracer_new(&tr, name);
  *out = NULL;
  if (st == CTORCH_OK) st = ctorch_nn_module_named_parameters(&params, m, 1);
  if (st == CTORCH_OK) st = ctorch_nn_module_named_buffers(&buffers, m, 1);
  if (st == CTORCH_OK) st = trace_nn_add(tr, params, 0);
  if (st == CTORCH_OK) st = trace_nn_add(tr, buffers, 1);
  if (st == CTORCH_OK) st = ctorch_tracer_begin(tr, &x, 1);
  if (st == CTORCH_OK) {
    st = ctorch_nn_module_forward(&y, m, x);
    st = st == CTORCH_OK ? ctorch_tracer_finish(out, tr, &y, 1) : st;
    if (st != CTORCH_OK) ctorch_tracer_abandon(tr);
  }
  ctorch_tensor_free(y);
  ctorch_tensor_dict_free(params);
  ctorch_tensor_dict_free(buffers);
  ctorch_tracer_free(tr);
  return st;
}

#endif
