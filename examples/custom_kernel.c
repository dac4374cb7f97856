/* custom_kernel.c - a user's own CUDA kernel inside a custom autograd
 * function, compiled at run time with NVRTC.
 *
 * The function is "swish" with a slope beta, y = x * sigmoid(beta * x), and
 * its derivative dy/dx = s + beta * x * s * (1 - s) with s = sigmoid(beta * x),
 * each fused into one kernel (PyTorch's composed expression takes 3 kernels
 * forward and more backward). ctorch_autograd_function_apply records it as a
 * graph node: forward runs the kernel and saves x, backward runs the
 * derivative kernel on the saved x and the incoming gradient.
 *
 * The same per-element formulas (SWISH_MATH below) are compiled twice: by the
 * C compiler for CPU tensors, and, as the text of a CUDA source, by NVRTC
 * (libnvrtc, loaded with dlopen: the nvidia-* wheels of a CUDA build of
 * PyTorch ship it, e.g. site-packages/nvidia/cu13/lib/libnvrtc.so.13) for CUDA
 * tensors. NVRTC needs no GPU. The CUDA path then loads the compiled image
 * with the driver API (libcuda.so.1, dlopen) into the primary context that
 * libtorch uses and launches it on the tensors' data pointers.
 *
 * Streams: ctorch has no call that hands out a stream's raw cudaStream_t, so
 * the kernel is launched on the device's legacy default stream (the NULL
 * stream, PyTorch's default stream); when the caller's current stream is
 * another one, the default stream first waits for it and the current stream
 * then waits for the kernel (ctorch_stream_wait_stream), so the launch is
 * ordered as if it were on the current stream.
 *
 * Modes:
 *   custom_kernel cpu [--rows R] [--cols C] [--beta B] [--seed S]
 *       runs the function on CPU tensors (float32 and float64) inside a small
 *       graph, checks its gradient by central differences (float64) and
 *       against ctorch's composed ops, and prints x, w, y and x.grad as hex
 *       floats for tests/examples/custom_kernel_vs_torch.py.
 *   custom_kernel ptx [--nvrtc PATH] [--arch compute_XY] [--sm sm_XY] [--out FILE]
 *       compiles the kernel source to PTX and to a cubin with NVRTC and checks
 *       both (the PTX holds each kernel's .entry; the cubin is an ELF image).
 *       Exit 77 ("skipped: ...") where no libnvrtc can be loaded.
 *   custom_kernel cuda [--nvrtc PATH] [--rows R] [--cols C] [--beta B] [--seed S]
 *       the same graph on cuda:0 with the NVRTC kernel, compared with the CPU
 *       path and with PyTorch's composed ops on the GPU, once on the default
 *       stream and once on a side stream. Exit 77 ("skipped: no CUDA device")
 *       without a device, libcuda or libnvrtc.
 *
 * Run on a GPU (an NVIDIA H200, PyTorch 2.11 + CUDA 13, 2026-11-26): the
 * kernel compiled, loaded and launched on the default and a side stream,
 * equal to the CPU kernel and to the composed ops within the tolerances of
 * run_cuda. The CPU path and the NVRTC compilation run in CI; the ctest
 * custom_kernel_cuda runs the CUDA mode wherever a CUDA device is present.
 *
 *   cc custom_kernel.c $(pkg-config --cflags --libs ctorch) -ldl -lm -o custom_kernel */
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ctorch.h>

#include "cuda_rtc.h"

/* ---- the kernel: one text for the C compiler and for NVRTC -------------- */

/* Each function computes one element. SWISH_FN is "static inline" for C and
 * "__device__ static inline" in the CUDA source, so both compilers see the
 * same formulas (their expf/exp differ in the last bits: the GPU results are
 * compared with a tolerance, the CPU ones with PyTorch's). */
#define SWISH_MATH                                                                                          \
  SWISH_FN float swish_f32(float x, float b) {                                                             \
    float s = 1.0f / (1.0f + expf(-b * x));                                                                \
    return x * s;                                                                                          \
  }                                                                                                        \
  SWISH_FN float swish_grad_f32(float x, float g, float b) {                                               \
    float s = 1.0f / (1.0f + expf(-b * x));                                                                \
    return g * (s + b * x * s * (1.0f - s));                                                               \
  }                                                                                                        \
  SWISH_FN double swish_f64(double x, double b) {                                                          \
    double s = 1.0 / (1.0 + exp(-b * x));                                                                  \
    return x * s;                                                                                          \
  }                                                                                                        \
  SWISH_FN double swish_grad_f64(double x, double g, double b) {                                           \
    double s = 1.0 / (1.0 + exp(-b * x));                                                                  \
    return g * (s + b * x * s * (1.0 - s));                                                                \
  }

/* Grid-stride kernels over n contiguous elements, one pair per dtype. */
#define SWISH_KERNELS(T, SUF)                                                                              \
  extern "C" __global__ void swish_fwd_##SUF(const T *x, T *y, T b, long long n) {                         \
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;                            \
         i += (long long)gridDim.x * blockDim.x)                                                           \
      y[i] = swish_##SUF(x[i], b);                                                                         \
  }                                                                                                        \
  extern "C" __global__ void swish_bwd_##SUF(const T *x, const T *g, T *dx, T b, long long n) {            \
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;                            \
         i += (long long)gridDim.x * blockDim.x)                                                           \
      dx[i] = swish_grad_##SUF(x[i], g[i], b);                                                             \
  }

#define STR_(...) #__VA_ARGS__
#define STR(...) STR_(__VA_ARGS__)
/* The CUDA source: stringised while SWISH_FN is still undefined, so the text
 * keeps the name and the first line gives it its CUDA meaning. */
static const char kernel_source[] = "#define SWISH_FN __device__ static inline\n" STR(SWISH_MATH) "\n" STR(
    SWISH_KERNELS(float, f32)) "\n" STR(SWISH_KERNELS(double, f64)) "\n";
static const char *const kernel_names[4] = {"swish_fwd_f32", "swish_bwd_f32", "swish_fwd_f64", "swish_bwd_f64"};

/* The same formulas as C, for CPU tensors. */
#define SWISH_FN static inline
SWISH_MATH
#undef SWISH_FN
/* What one device needs, made on first use and kept for the process (the
 * module lives in the primary context, which libtorch keeps alive). */
typedef struct swish_device {
  int ready;
  CUcontext ctx;
  CUfunction fn[4]; /* in kernel_names' order */
} swish_device;

#define MAX_DEVICES 64
static pthread_mutex_t gpu_lock = PTHREAD_MUTEX_INITIALIZER; /* guards gpu */
static struct {
  nvrtc_api nvrtc;
  cuda_api cuda;
  int loaded; /* 1 ok, -1 failed (why in `why`) */
  char why[2048];
  const char *nvrtc_path;
  swish_device dev[MAX_DEVICES];
} gpu;

static const char *cu_error(CUresult r) {
  const char *s = NULL;
  if (gpu.cuda.error_string && gpu.cuda.error_string(r, &s) == 0 && s) return s;
  return "unknown CUresult";
}

/* Records a failing driver call in gpu.why and jumps to `done`. */
#define CU_GO(call)                                                                                        \
  do {                                                                                                     \
    CUresult r_ = (call);                                                                                  \
    if (r_ != 0) {                                                                                         \
      snprintf(gpu.why, sizeof gpu.why, "%s failed: %s (%d)", #call, cu_error(r_), r_);                    \
      goto done;                                                                                           \
    }                                                                                                      \
  } while (0)

static int cuda_load(void) {
  if (!gpu.loaded)
    gpu.loaded = nvrtc_load(&gpu.nvrtc, gpu.nvrtc_path, gpu.why, sizeof gpu.why) &&
                         cuda_api_load(&gpu.cuda, gpu.why, sizeof gpu.why)
                     ? 1
                     : -1;
  return gpu.loaded > 0;
}

/* Compiles and loads the kernels for device `index` (once; under gpu_lock).
 * A cubin for the device's own architecture needs no JIT, so it loads even
 * where the driver is older than NVRTC (PTX of a newer ISA would be
 * refused); PTX for compute_75 is the fallback for a GPU this NVRTC cannot
 * target by name. The module goes into the device's primary context, the
 * one libtorch's runtime uses (retained here and never released: libtorch
 * keeps it alive for the process too). */
static int device_prepare(int index) {
  swish_device *d = &gpu.dev[index];
  cuda_api *c = &gpu.cuda;
  ctorch_cuda_device_properties props;
  CUdevice cu_dev = 0;
  CUcontext popped = NULL;
  CUmodule module = NULL;
  char arch[32], nvrtc_why[1024];
  size_t size = 0;
  char *image = NULL;
  int ok = 0, pushed = 0;
  if (d->ready) return 1;
  if (ctorch_cuda_get_device_properties(&props, index) != CTORCH_OK) {
    snprintf(gpu.why, sizeof gpu.why, "%s", ctorch_last_error());
    return 0;
  }
  snprintf(arch, sizeof arch, "sm_%d%d", props.major, props.minor);
  image = nvrtc_compile(&gpu.nvrtc, kernel_source, arch, &size, nvrtc_why, sizeof nvrtc_why);
  if (!image) image = nvrtc_compile(&gpu.nvrtc, kernel_source, "compute_75", &size, nvrtc_why, sizeof nvrtc_why);
  if (!image) {
    snprintf(gpu.why, sizeof gpu.why, "%s", nvrtc_why);
    return 0;
  }
  CU_GO(c->device_get(&cu_dev, index));
  CU_GO(c->primary_ctx_retain(&d->ctx, cu_dev));
  CU_GO(c->ctx_push(d->ctx));
  pushed = 1;
  CU_GO(c->module_load_data(&module, image));
  for (int k = 0; k < 4; k++) CU_GO(c->module_get_function(&d->fn[k], module, kernel_names[k]));
  d->ready = ok = 1;
done:
  if (pushed && c->ctx_pop(&popped) != 0 && ok) {
    snprintf(gpu.why, sizeof gpu.why, "cuCtxPopCurrent failed");
    d->ready = ok = 0;
  }
  free(image);
  return ok;
}

/* Launches kernel k (an index into kernel_names) over n elements on the
 * legacy default stream of device `index`. */
static int gpu_launch(int index, int k, void **args, int64_t n) {
  cuda_api *c = &gpu.cuda;
  swish_device *d;
  CUcontext popped = NULL;
  unsigned threads = 256;
  int64_t blocks = (n + threads - 1) / threads;
  int ok = 0;
  if (index < 0 || index >= MAX_DEVICES) {
    snprintf(gpu.why, sizeof gpu.why, "CUDA device %d is beyond this example's %d", index, MAX_DEVICES);
    return 0;
  }
  if (!cuda_load() || !device_prepare(index)) return 0;
  d = &gpu.dev[index];
  if (blocks > 65535) blocks = 65535; /* the kernels stride over the rest */
  if (n == 0) return 1;
  CU_GO(c->ctx_push(d->ctx));
  /* hStream 0 through the unsuffixed cuLaunchKernel is the legacy NULL
   * stream, which is PyTorch's default stream. */
  CUresult r = c->launch(d->fn[k], (unsigned)blocks, 1, 1, threads, 1, 1, 0, NULL, args, NULL);
  if (r != 0) {
    snprintf(gpu.why, sizeof gpu.why, "cuLaunchKernel(%s) failed: %s (%d)", kernel_names[k], cu_error(r), r);
  } else {
    ok = 1;
  }
  if (c->ctx_pop(&popped) != 0 && ok) {
    snprintf(gpu.why, sizeof gpu.why, "cuCtxPopCurrent failed");
    ok = 0;
  }
done:
  return ok;
}

/* ---- the autograd function ---------------------------------------------- */

typedef struct swish_params {
  double beta;
} swish_params;

static ctorch_status fail(ctorch_autograd_ctx ctx, ctorch_status st, const char *message) {
  ctorch_autograd_ctx_set_error(ctx, message);
  return st;
}

/* out = swish(x) (g NULL) or g * swish'(x), over contiguous tensors of one
 * dtype on one device: the C loop on the CPU, the NVRTC kernel on CUDA. */
static ctorch_status swish_run(ctorch_autograd_ctx ctx, ctorch_tensor x, ctorch_tensor g, ctorch_tensor out,
                               double beta) {
  ctorch_dtype dt;
  ctorch_device dev;
  int64_t n = 0;
  void *xp = NULL, *gp = NULL, *op = NULL;
  ctorch_status st;
  if ((st = ctorch_tensor_dtype(&dt, x)) || (st = ctorch_tensor_device(&dev, x)) || (st = ctorch_tensor_numel(&n, x)))
    return st;
  if (dev.type != CTORCH_DEVICE_CPU && dev.type != CTORCH_DEVICE_CUDA)
    return fail(ctx, CTORCH_NOT_IMPLEMENTED, "swish: no kernel for this device (CPU and CUDA only)");
  if ((st = ctorch_tensor_data_ptr(&xp, x)) ||
      (st = ctorch_tensor_data_ptr(&op, out)) || (g && (st = ctorch_tensor_data_ptr(&gp, g))))
    return st;
  if (dev.type == CTORCH_DEVICE_CPU) {
    if (dt == CTORCH_FLOAT32) {
      const float *xs = xp, *gs = gp;
      float *os = op, b = (float)beta;
      for (int64_t i = 0; i < n; i++) os[i] = g ? swish_grad_f32(xs[i], gs[i], b) : swish_f32(xs[i], b);
    } else {
      const double *xs = xp, *gs = gp;
      double *os = op;
      for (int64_t i = 0; i < n; i++) os[i] = g ? swish_grad_f64(xs[i], gs[i], beta) : swish_f64(xs[i], beta);
    }
    return CTORCH_OK;
  }
  { /* CUDA */
    float b32 = (float)beta;
    long long count = n;
    void *fwd_args[4] = {&xp, &op, dt == CTORCH_FLOAT32 ? (void *)&b32 : (void *)&beta, &count};
    void *bwd_args[5] = {&xp, &gp, &op, dt == CTORCH_FLOAT32 ? (void *)&b32 : (void *)&beta, &count};
    int k = (dt == CTORCH_FLOAT32 ? 0 : 2) + (g ? 1 : 0);
    ctorch_stream cur = NULL, def = NULL;
    int64_t cur_id = 0, def_id = 0;
    int ok;
    /* Order the NULL-stream launch after the current stream's work and the
     * current stream's later work after it (see the header). */
    if ((st = ctorch_stream_current(&cur, dev)) || (st = ctorch_stream_default(&def, dev)) ||
        (st = ctorch_stream_id(&cur_id, cur)) || (st = ctorch_stream_id(&def_id, def)) ||
        (cur_id != def_id && (st = ctorch_stream_wait_stream(def, cur)))) {
      ctorch_stream_free(cur);
      ctorch_stream_free(def);
      return st;
    }
    pthread_mutex_lock(&gpu_lock);
    ok = gpu_launch(dev.index < 0 ? 0 : dev.index, k, g ? bwd_args : fwd_args, n);
    if (!ok) ctorch_autograd_ctx_set_error(ctx, gpu.why);
    pthread_mutex_unlock(&gpu_lock);
    if (ok && cur_id != def_id) st = ctorch_stream_wait_stream(cur, def);
    ctorch_stream_free(cur);
    ctorch_stream_free(def);
    return ok ? st : CTORCH_RUNTIME;
  }
}

static ctorch_status swish_forward(ctorch_autograd_ctx ctx, void *user_data, const ctorch_tensor *inputs,
                                   size_t n_inputs, ctorch_tensor *outputs, size_t n_outputs) {
  const swish_params *p = user_data;
  ctorch_tensor xc = NULL, y = NULL;
  ctorch_dtype dt;
  ctorch_status st;
  (void)n_inputs;
  (void)n_outputs;
  if ((st = ctorch_tensor_dtype(&dt, inputs[0]))) return st;
  if (dt != CTORCH_FLOAT32 && dt != CTORCH_FLOAT64) return fail(ctx, CTORCH_TYPE, "swish: x must be float32 or float64");
  /* The kernels index memory linearly: give them contiguous tensors. */
  if (!(st = ctorch_tensor_contiguous(&xc, inputs[0])) && !(st = ctorch_empty_like(&y, xc, NULL, NULL, NULL, NULL, NULL)) &&
      !(st = swish_run(ctx, xc, NULL, y, p->beta)) && !(st = ctorch_autograd_ctx_save_for_backward(ctx, &xc, 1))) {
    outputs[0] = y;
    y = NULL;
  }
  ctorch_tensor_free(xc);
  ctorch_tensor_free(y);
  return st;
}

static ctorch_status swish_backward(ctorch_autograd_ctx ctx, void *user_data, const ctorch_tensor *grad_outputs,
                                    size_t n_outputs, ctorch_tensor *grad_inputs, size_t n_inputs) {
  const swish_params *p = user_data;
  ctorch_tensor_list saved = NULL;
  ctorch_tensor x = NULL, g = NULL, dx = NULL;
  ctorch_status st;
  int needed = 0;
  (void)n_outputs;
  (void)n_inputs;
  if ((st = ctorch_autograd_ctx_needs_input_grad(&needed, ctx, 0)) || !needed) return st;
  if (!(st = ctorch_autograd_ctx_saved_tensors(&saved, ctx)) && !(st = ctorch_tensor_list_get(&x, saved, 0)) &&
      !(st = ctorch_tensor_contiguous(&g, grad_outputs[0])) &&
      !(st = ctorch_empty_like(&dx, x, NULL, NULL, NULL, NULL, NULL)) && !(st = swish_run(ctx, x, g, dx, p->beta))) {
    grad_inputs[0] = dx;
    dx = NULL;
  }
  ctorch_tensor_list_free(saved);
  ctorch_tensor_free(x);
  ctorch_tensor_free(g);
  ctorch_tensor_free(dx);
  return st;
}

/* y = swish(x) as a differentiable op (NEW handle in *y). The parameters
 * must outlive the graph: here they are the caller's (static) struct. */
static ctorch_status swish(ctorch_tensor *y, ctorch_tensor x, swish_params *params) {
  return ctorch_autograd_function_apply(y, 1, swish_forward, swish_backward, params, NULL, &x, 1);
}

/* ---- the program ----------------------------------------------------------- */

static int check(ctorch_status st, const char *what) {
  if (st != CTORCH_OK) fprintf(stderr, "%s failed: %s: %s\n", what, ctorch_status_name(st), ctorch_last_error());
  return st == CTORCH_OK;
}
#define CHECK(call)                                                                                        \
  do {                                                                                                     \
    if (!check((call), #call)) exit(1);                                                                    \
  } while (0)

static swish_params params = {1.5};

/* The tensor's elements as doubles (malloc'd; n of them). */
static double *values(ctorch_tensor t, int64_t *n) {
  ctorch_tensor d = NULL;
  double *v;
  CHECK(ctorch_tensor_numel(n, t));
  CHECK(ctorch_tensor_to_dtype(&d, t, CTORCH_FLOAT64));
  v = malloc((size_t)(*n > 0 ? *n : 1) * sizeof *v);
  if (!v) exit(1);
  CHECK(ctorch_tensor_copy_to(v, (size_t)*n * sizeof *v, d));
  ctorch_tensor_free(d);
  return v;
}

/* One run of the test graph: loss = sum(swish(x^T) * w) with x a leaf of
 * shape [rows, cols] (x^T is not contiguous, so forward's contiguous() and
 * backward's gradient layout are exercised). x and w come from the caller in
 * float64 and are cast to dtype and moved to dev. Writes y and x.grad as
 * doubles; `composed` selects PyTorch's expression x * sigmoid(beta * x)
 * instead of the custom function. Returns the loss. */
static double run_graph(const double *x64, const double *w64, int64_t rows, int64_t cols, ctorch_dtype dtype,
                        ctorch_device dev, int composed, double **y_out, double **grad_out) {
  const int64_t xs[2] = {rows, cols}, ws[2] = {cols, rows};
  size_t nbytes = (size_t)(rows * cols) * sizeof(double);
  ctorch_tensor xc = NULL, wc = NULL, xt = NULL, wt = NULL, x = NULL, w = NULL, h = NULL, y = NULL, p = NULL;
  ctorch_tensor loss = NULL, grad = NULL;
  int64_t n;
  double value = 0;
  CHECK(ctorch_tensor_from_data(&xc, x64, nbytes, xs, 2, CTORCH_FLOAT64));
  CHECK(ctorch_tensor_from_data(&wc, w64, nbytes, ws, 2, CTORCH_FLOAT64));
  CHECK(ctorch_tensor_to_dtype(&xt, xc, dtype));
  CHECK(ctorch_tensor_to_dtype(&wt, wc, dtype));
  CHECK(ctorch_tensor_to_device(&x, xt, dev));
  CHECK(ctorch_tensor_to_device(&w, wt, dev));
  CHECK(ctorch_tensor_set_requires_grad(x, 1));
  CHECK(ctorch_t(&h, x));
  if (composed) {
    ctorch_tensor bh = NULL, s = NULL;
    CHECK(ctorch_mul_Scalar(&bh, h, ctorch_scalar_float(params.beta)));
    CHECK(ctorch_sigmoid(&s, bh));
    CHECK(ctorch_mul_Tensor(&y, h, s));
    ctorch_tensor_free(bh);
    ctorch_tensor_free(s);
  } else {
    CHECK(swish(&y, h, &params));
  }
  CHECK(ctorch_mul_Tensor(&p, y, w));
  CHECK(ctorch_sum(&loss, p, NULL));
  CHECK(ctorch_tensor_backward(loss, NULL, 0, 0, NULL, 0));
  CHECK(ctorch_tensor_grad(&grad, x));
  CHECK(ctorch_tensor_item_double(&value, loss));
  if (y_out) *y_out = values(y, &n);
  if (grad_out) *grad_out = values(grad, &n);
  ctorch_tensor xs_[] = {xc, wc, xt, wt, x, w, h, y, p, loss, grad};
  ctorch_tensor_free_many(xs_, sizeof xs_ / sizeof *xs_);
  return value;
}

/* The loss alone (no graph), for central differences. */
static double loss_only(const double *x64, const double *w64, int64_t rows, int64_t cols, ctorch_device dev) {
  const int64_t xs[2] = {rows, cols}, ws[2] = {cols, rows};
  size_t nbytes = (size_t)(rows * cols) * sizeof(double);
  ctorch_tensor xc = NULL, wc = NULL, x = NULL, w = NULL, h = NULL, y = NULL, p = NULL, loss = NULL;
  double value = 0;
  CHECK(ctorch_tensor_from_data(&xc, x64, nbytes, xs, 2, CTORCH_FLOAT64));
  CHECK(ctorch_tensor_from_data(&wc, w64, nbytes, ws, 2, CTORCH_FLOAT64));
  CHECK(ctorch_tensor_to_device(&x, xc, dev));
  CHECK(ctorch_tensor_to_device(&w, wc, dev));
  CHECK(ctorch_t(&h, x));
  CHECK(swish(&y, h, &params));
  CHECK(ctorch_mul_Tensor(&p, y, w));
  CHECK(ctorch_sum(&loss, p, NULL));
  CHECK(ctorch_tensor_item_double(&value, loss));
  ctorch_tensor all[] = {xc, wc, x, w, h, y, p, loss};
  ctorch_tensor_free_many(all, sizeof all / sizeof *all);
  return value;
}

/* torch.autograd.gradcheck's rule (eps 1e-6, atol 1e-5, rtol 1e-3) on the
 * first `limit` elements of x, float64. Returns the number of failures. */
static int gradcheck(const double *x64, const double *w64, int64_t rows, int64_t cols, ctorch_device dev,
                     int64_t limit) {
  double *grad = NULL, *xp = malloc((size_t)(rows * cols) * sizeof *xp);
  int bad = 0;
  if (!xp) exit(1);
  run_graph(x64, w64, rows, cols, CTORCH_FLOAT64, dev, 0, NULL, &grad);
  for (int64_t i = 0; i < rows * cols && i < limit; i++) {
    double up, down, numeric;
    memcpy(xp, x64, (size_t)(rows * cols) * sizeof *xp);
    xp[i] = x64[i] + 1e-6;
    up = loss_only(xp, w64, rows, cols, dev);
    xp[i] = x64[i] - 1e-6;
    down = loss_only(xp, w64, rows, cols, dev);
    numeric = (up - down) / 2e-6;
    if (fabs(numeric - grad[i]) > 1e-5 + 1e-3 * fabs(numeric)) {
      fprintf(stderr, "gradcheck: element %lld: analytic %.17g, numeric %.17g\n", (long long)i, grad[i], numeric);
      bad++;
    }
  }
  free(xp);
  free(grad);
  return bad;
}

/* Largest |a - b| / max(|b|, floor) over n elements. */
static double max_rel(const double *a, const double *b, int64_t n, double floor) {
  double m = 0;
  for (int64_t i = 0; i < n; i++) {
    double d = fabs(a[i] - b[i]) / fmax(fabs(b[i]), floor);
    if (!(d <= m)) m = d; /* NaN wins */
  }
  return m;
}

static void print_values(const char *tag, const char *name, const double *v, int64_t n) {
  printf("%s %s", tag, name);
  for (int64_t i = 0; i < n; i++) printf(" %a", v[i]);
  printf("\n");
}

/* x ~ randn, w ~ randn (seeded), with x's first entries replaced by edge
 * values: zeros of both signs and |beta x| where exp overflows in float32. */
static void make_inputs(double **x64, double **w64, int64_t rows, int64_t cols, uint64_t seed) {
  static const double edges[] = {0.0, -0.0, 30.0, -30.0, 90.0, -90.0, 1e-30, -1e-30};
  const int64_t size[1] = {rows * cols};
  ctorch_dtype f64 = CTORCH_FLOAT64;
  ctorch_tensor x = NULL, w = NULL;
  int64_t n;
  CHECK(ctorch_manual_seed(seed));
  CHECK(ctorch_randn(&x, size, 1, &f64, NULL, NULL, NULL));
  CHECK(ctorch_randn(&w, size, 1, &f64, NULL, NULL, NULL));
  *x64 = values(x, &n);
  *w64 = values(w, &n);
  for (size_t i = 0; i < sizeof edges / sizeof *edges && (int64_t)i < n; i++) (*x64)[i] = edges[i];
  for (int64_t i = 8; i < n; i++) (*x64)[i] *= 3; /* spread over sigmoid's curve */
  ctorch_tensor_free(x);
  ctorch_tensor_free(w);
}

/* The refusals a user can meet: a dtype without a kernel, a meta tensor. */
static int check_refusals(void) {
  const int64_t size[1] = {4};
  ctorch_dtype i64 = CTORCH_INT64, f32 = CTORCH_FLOAT32;
  ctorch_device meta = {CTORCH_DEVICE_META, -1};
  ctorch_tensor xi = NULL, xm = NULL, y = (ctorch_tensor)1;
  ctorch_status st;
  int bad = 0;
  CHECK(ctorch_zeros(&xi, size, 1, &i64, NULL, NULL, NULL));
  st = swish(&y, xi, &params);
  if (st != CTORCH_TYPE || y != NULL || !strstr(ctorch_last_error(), "float32 or float64")) {
    fprintf(stderr, "int64 input: got %s (%s)\n", ctorch_status_name(st), ctorch_last_error());
    bad++;
  }
  CHECK(ctorch_zeros(&xm, size, 1, &f32, NULL, &meta, NULL));
  st = swish(&y, xm, &params);
  if (st != CTORCH_NOT_IMPLEMENTED || y != NULL || !strstr(ctorch_last_error(), "no kernel for this device")) {
    fprintf(stderr, "meta input: got %s (%s)\n", ctorch_status_name(st), ctorch_last_error());
    bad++;
  }
  ctorch_tensor_free(xi);
  ctorch_tensor_free(xm);
  return bad;
}

/* cpu: the function on CPU tensors against ctorch's composed ops and by
 * central differences; prints everything for the Python comparison. */
static int run_cpu(int64_t rows, int64_t cols, uint64_t seed) {
  static const ctorch_dtype dtypes[2] = {CTORCH_FLOAT32, CTORCH_FLOAT64};
  static const char *const tags[2] = {"f32", "f64"};
  int64_t n = rows * cols;
  double *x64, *w64;
  int bad = 0;
  make_inputs(&x64, &w64, rows, cols, seed);
  printf("beta %a\nshape %lld %lld\n", params.beta, (long long)rows, (long long)cols);
  print_values("in", "x", x64, n);
  print_values("in", "w", w64, n);
  for (int k = 0; k < 2; k++) {
    double *y, *g, *yc, *gc;
    double loss = run_graph(x64, w64, rows, cols, dtypes[k], ctorch_device_cpu(), 0, &y, &g);
    run_graph(x64, w64, rows, cols, dtypes[k], ctorch_device_cpu(), 1, &yc, &gc);
    print_values(tags[k], "y", y, n);
    print_values(tags[k], "grad", g, n);
    printf("%s loss %a\n", tags[k], loss);
    fprintf(stderr, "%s: max relative difference to the composed ops: y %.3g, grad %.3g\n", tags[k],
            max_rel(y, yc, n, 1e-30), max_rel(g, gc, n, 1e-30));
    free(y), free(g), free(yc), free(gc);
  }
  bad += gradcheck(x64, w64, rows, cols, ctorch_device_cpu(), 256);
  bad += check_refusals();
  free(x64), free(w64);
  fprintf(stderr, "cpu: %s\n", bad ? "FAILED" : "gradcheck and refusals passed");
  return bad ? 1 : 0;
}

/* ptx: compile with NVRTC (no GPU needed) and look inside the results. */
static int run_ptx(const char *nvrtc_path, const char *arch, const char *sm, const char *out) {
  nvrtc_api api;
  char why[4096];
  size_t size = 0;
  char *image;
  int major = 0, minor = 0, bad = 0;
  if (!nvrtc_load(&api, nvrtc_path, why, sizeof why)) {
    printf("skipped: %s\n", why);
    return 77;
  }
  api.version(&major, &minor);
  printf("NVRTC %d.%d\n", major, minor);
  image = nvrtc_compile(&api, kernel_source, arch, &size, why, sizeof why);
  if (!image) {
    fprintf(stderr, "%s\n", why);
    return 1;
  }
  for (int k = 0; k < 4; k++) {
    char entry[64];
    snprintf(entry, sizeof entry, ".entry %s(", kernel_names[k]);
    if (!strstr(image, entry)) fprintf(stderr, "the PTX has no \"%s\"\n", entry), bad++;
  }
  if (!strstr(image, ".target")) fprintf(stderr, "the PTX has no .target line\n"), bad++;
  printf("%s: %zu bytes of PTX, %d of 4 kernel entries\n", arch, size, 4 - bad);
  if (out) {
    FILE *f = fopen(out, "w");
    if (!f || fwrite(image, 1, size, f) != size || fclose(f) != 0) fprintf(stderr, "cannot write %s\n", out), bad++;
  }
  free(image);
  /* Machine code for one GPU: an ELF image that names each kernel. */
  image = nvrtc_compile(&api, kernel_source, sm, &size, why, sizeof why);
  if (!image) {
    fprintf(stderr, "%s\n", why);
    return 1;
  }
  if (size < 4 || memcmp(image, "\177ELF", 4) != 0) fprintf(stderr, "the %s cubin is not ELF\n", sm), bad++;
  for (int k = 0; k < 4; k++) {
    size_t len = strlen(kernel_names[k]), i;
    for (i = 0; i + len <= size && memcmp(image + i, kernel_names[k], len) != 0; i++) {
    }
    if (i + len > size) fprintf(stderr, "the %s cubin does not name %s\n", sm, kernel_names[k]), bad++;
  }
  printf("%s: %zu bytes of cubin\n", sm, size);
  free(image);
  /* A compile error comes back as a status with the compiler's log. */
  image = nvrtc_compile(&api, kernel_source, "compute_1", &size, why, sizeof why);
  if (image || !strstr(why, "nvrtcCompileProgram(compute_1)"))
    fprintf(stderr, "an unknown architecture was not refused: %s\n", image ? "compiled" : why), bad++;
  free(image);
  return bad ? 1 : 0;
}

/* cuda: the same graph on cuda:0 against the CPU path and the composed ops,
 * on the default stream and on a side stream. */
static int run_cuda(int64_t rows, int64_t cols, uint64_t seed) {
  static const ctorch_dtype dtypes[2] = {CTORCH_FLOAT32, CTORCH_FLOAT64};
  /* The GPU's expf/exp against glibc's: a few ulps at most; composed ops: sigmoid's own rounding. */
  static const double tol[2] = {1e-5, 1e-13};
  ctorch_device cuda = {CTORCH_DEVICE_CUDA, 0};
  int64_t n = rows * cols;
  int count = 0, bad = 0;
  double *x64, *w64;
  if (ctorch_cuda_device_count(&count) != CTORCH_OK || count == 0) {
    printf("skipped: no CUDA device\n");
    return 77;
  }
  pthread_mutex_lock(&gpu_lock);
  if (!cuda_load()) {
    printf("skipped: %s\n", gpu.why);
    pthread_mutex_unlock(&gpu_lock);
    return 77;
  }
  pthread_mutex_unlock(&gpu_lock);
  make_inputs(&x64, &w64, rows, cols, seed);
  for (int k = 0; k < 2; k++) {
    double *y, *g, *yg, *gg, *ys, *gs, *ycg, *gcg;
    ctorch_stream side = NULL;
    ctorch_stream_scope scope = NULL;
    run_graph(x64, w64, rows, cols, dtypes[k], ctorch_device_cpu(), 0, &y, &g);
    run_graph(x64, w64, rows, cols, dtypes[k], cuda, 0, &yg, &gg);
    run_graph(x64, w64, rows, cols, dtypes[k], cuda, 1, &ycg, &gcg);
    CHECK(ctorch_stream_new(&side, cuda, 0));
    CHECK(ctorch_stream_scope_enter(&scope, side));
    run_graph(x64, w64, rows, cols, dtypes[k], cuda, 0, &ys, &gs);
    CHECK(ctorch_stream_scope_leave(scope));
    ctorch_stream_free(side);
    /* Relative above 1, absolute below (floor 1: the values are O(1)): the
     * gradient s + beta x s (1 - s) cancels to near 0 where beta x (1 - s)
     * is near -1, and there a few ulps of expf are a large relative error
     * (float32 on an H200: 3.0e-5 relative with no floor). */
    double d_cpu = fmax(max_rel(yg, y, n, 1), max_rel(gg, g, n, 1));
    double d_comp = fmax(max_rel(yg, ycg, n, 1), max_rel(gg, gcg, n, 1));
    double d_side = fmax(max_rel(ys, yg, n, 0), max_rel(gs, gg, n, 0));
    printf("%s on cuda:0: vs CPU kernel %.3g, vs composed ops on cuda %.3g, side stream vs default %.3g\n",
           k ? "float64" : "float32", d_cpu, d_comp, d_side);
    if (!(d_cpu <= tol[k]) || !(d_comp <= tol[k] * 10) || d_side != 0) bad++;
    free(y), free(g), free(yg), free(gg), free(ys), free(gs), free(ycg), free(gcg);
  }
  bad += gradcheck(x64, w64, rows, cols, cuda, 64);
  free(x64), free(w64);
  printf("cuda: %s\n", bad ? "FAILED" : "passed");
  return bad ? 1 : 0;
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "cpu", *arch = "compute_75", *sm = "sm_90", *out = NULL;
  int64_t rows = 24, cols = 17;
  uint64_t seed = 7;
  for (int i = 2; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--rows")) rows = atoll(argv[i + 1]);
    else if (!strcmp(argv[i], "--cols")) cols = atoll(argv[i + 1]);
    else if (!strcmp(argv[i], "--seed")) seed = strtoull(argv[i + 1], NULL, 10);
    else if (!strcmp(argv[i], "--beta")) params.beta = atof(argv[i + 1]);
    else if (!strcmp(argv[i], "--nvrtc")) gpu.nvrtc_path = argv[i + 1];
    else if (!strcmp(argv[i], "--arch")) arch = argv[i + 1];
    else if (!strcmp(argv[i], "--sm")) sm = argv[i + 1];
    else if (!strcmp(argv[i], "--out")) out = argv[i + 1];
    else return fprintf(stderr, "unknown option %s\n", argv[i]), 2;
  }
  if (rows < 1 || cols < 1) return fprintf(stderr, "--rows and --cols must be positive\n"), 2;
  if (!strcmp(mode, "cpu")) return run_cpu(rows, cols, seed);
  if (!strcmp(mode, "ptx")) return run_ptx(gpu.nvrtc_path, arch, sm, out);
  if (!strcmp(mode, "cuda")) return run_cuda(rows, cols, seed);
  fprintf(stderr, "usage: %s cpu|ptx|cuda [options] (see the header of custom_kernel.c)\n", argv[0]);
  return 2;
}
