/* Runs a loss-scaling training sequence through ctorch's grad scaler and
 * prints the scaler's state after every iteration, one line each:
 *   <scale> <growth_tracker> <found_inf> <stepped> <p0> <p1> <p2>
 * Input (stdin), one iteration per line: "<unscale_first> <new_scale> x0 x1 x2"
 * (x may be inf or nan; new_scale 0 = dynamic update). The loss is
 * sum(p * x), so the scaled gradient is scale * x. scaler_vs_python.py runs
 * the same lines through torch.amp.GradScaler and compares.
 * Usage: scaler_trace cpu|cuda */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctorch.h"

#include "../dump_ok.h"

int main(int argc, char **argv) {
  ctorch_device dev = ctorch_device_cpu();
  ctorch_grad_scaler_options so;
  ctorch_optim_options oo;
  ctorch_grad_scaler scaler = NULL;
  ctorch_optimizer opt = NULL;
  ctorch_tensor p = NULL;
  ctorch_dtype f32 = CTORCH_FLOAT32;
  const int64_t three = 3;
  char line[512];
  if (argc > 1 && strcmp(argv[1], "cuda") == 0) dev.type = CTORCH_DEVICE_CUDA, dev.index = 0;
  OK(ctorch_grad_scaler_options_default(&so));
  so.init_scale = 1024.0;
  so.growth_factor = 4.0;
  so.backoff_factor = 0.25;
  so.growth_interval = 3;
  OK(ctorch_grad_scaler_new(&scaler, dev, &so));
  OK(ctorch_zeros(&p, &three, 1, &f32, NULL, &dev, NULL));
  OK(ctorch_tensor_set_requires_grad(p, 1));
  OK(ctorch_optim_options_default(&oo, CTORCH_OPTIM_SGD));
  oo.lr = 0.5;
  OK(ctorch_optimizer_new(&opt, CTORCH_OPTIM_SGD, &p, 1, &oo));
  while (fgets(line, sizeof line, stdin)) {
    int unscale_first = 0, found = 0, stepped = 0;
    double new_scale = 0, scale = 0;
    float x[3], pv[3];
    int64_t tracker = 0;
    const int64_t sz[1] = {3};
    ctorch_tensor xt = NULL, xd = NULL, prod = NULL, loss = NULL, scaled = NULL;
    char *s = line, *end;
    unscale_first = (int)strtol(s, &end, 10);
    s = end;
    new_scale = strtod(s, &end);
    s = end;
    for (int i = 0; i < 3; ++i) {
      x[i] = strtof(s, &end);
      if (end == s) {
        fprintf(stderr, "bad input line: %s", line);
        return 2;
      }
      s = end;
    }
    OK(ctorch_tensor_from_data(&xt, x, sizeof x, sz, 1, CTORCH_FLOAT32));
    OK(ctorch_tensor_to_device(&xd, xt, dev));
    OK(ctorch_optimizer_zero_grad(opt, 1));
    OK(ctorch_mul_Tensor(&prod, p, xd));
    OK(ctorch_sum(&loss, prod, NULL));
    OK(ctorch_grad_scaler_scale(&scaled, scaler, loss));
    OK(ctorch_tensor_backward(scaled, NULL, 0, 0, NULL, 0));
    if (unscale_first) OK(ctorch_grad_scaler_unscale(scaler, opt));
    OK(ctorch_grad_scaler_step(&stepped, scaler, opt));
    OK(ctorch_grad_scaler_found_inf(&found, scaler));
    OK(ctorch_grad_scaler_update(scaler, new_scale > 0 ? &new_scale : NULL));
    OK(ctorch_grad_scaler_get_scale(&scale, scaler));
    OK(ctorch_grad_scaler_get_growth_tracker(&tracker, scaler));
    OK(ctorch_tensor_copy_to(pv, sizeof pv, p));
    printf("%.17g %lld %d %d %.17g %.17g %.17g\n", scale, (long long)tracker, found, stepped, pv[0], pv[1], pv[2]);
    ctorch_tensor_free(xt);
    ctorch_tensor_free(xd);
    ctorch_tensor_free(prod);
    ctorch_tensor_free(loss);
    ctorch_tensor_free(scaled);
  }
  ctorch_optimizer_free(opt);
  ctorch_grad_scaler_free(scaler);
  ctorch_tensor_free(p);
  return 0;
}
