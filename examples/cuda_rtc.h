/* cuda_rtc.h - NVRTC and the CUDA driver API, opened with dlopen, for a
 * user's own kernels (examples/custom_kernel.c). Nothing CUDA is linked: a
 * program using this runs where there is no GPU, no driver and no toolkit,
 * and finds out at run time what it can do. Only the few declarations it
 * needs are repeated here (cuda.h and nvrtc.h need not be installed). */
#ifndef CTORCH_EXAMPLE_CUDA_RTC_H
#define CTORCH_EXAMPLE_CUDA_RTC_H
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- NVRTC, loaded at run time ----------------------------------------- */

typedef struct nvrtc_api {
  void *lib;
  int (*version)(int *, int *);
  int (*create)(void **prog, const char *src, const char *name, int n_headers, const char *const *headers,
                const char *const *include_names);
  int (*compile)(void *prog, int n_options, const char *const *options);
  int (*log_size)(void *prog, size_t *);
  int (*log)(void *prog, char *);
  int (*ptx_size)(void *prog, size_t *);
  int (*ptx)(void *prog, char *);
  int (*cubin_size)(void *prog, size_t *);
  int (*cubin)(void *prog, char *);
  int (*destroy)(void **prog);
  const char *(*error_string)(int);
} nvrtc_api;

/* Loads libnvrtc: `path` if given, else $CTORCH_NVRTC, else by soname (a CUDA
 * build of libtorch has already loaded one, so its soname resolves). */
static int nvrtc_load(nvrtc_api *api, const char *path, char *why, size_t why_cap) {
  static const char *const sonames[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2", "libnvrtc.so"};
  memset(api, 0, sizeof *api);
  if (!path || !*path) path = getenv("CTORCH_NVRTC");
  if (path && *path) {
    api->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!api->lib) snprintf(why, why_cap, "cannot load %s: %s", path, dlerror());
  } else {
    for (size_t i = 0; !api->lib && i < sizeof sonames / sizeof *sonames; i++)
      api->lib = dlopen(sonames[i], RTLD_NOW | RTLD_LOCAL);
    if (!api->lib) snprintf(why, why_cap, "no libnvrtc found (give --nvrtc PATH or set CTORCH_NVRTC)");
  }
  if (!api->lib) return 0;
#define NVRTC_SYM(field, name)                                                                             \
  if (!(*(void **)&api->field = dlsym(api->lib, name))) {                                                  \
    snprintf(why, why_cap, "libnvrtc has no %s", name);                                                    \
    return 0;                                                                                              \
  }
  NVRTC_SYM(version, "nvrtcVersion")
  NVRTC_SYM(create, "nvrtcCreateProgram")
  NVRTC_SYM(compile, "nvrtcCompileProgram")
  NVRTC_SYM(log_size, "nvrtcGetProgramLogSize")
  NVRTC_SYM(log, "nvrtcGetProgramLog")
  NVRTC_SYM(ptx_size, "nvrtcGetPTXSize")
  NVRTC_SYM(ptx, "nvrtcGetPTX")
  NVRTC_SYM(cubin_size, "nvrtcGetCUBINSize")
  NVRTC_SYM(cubin, "nvrtcGetCUBIN")
  NVRTC_SYM(destroy, "nvrtcDestroyProgram")
  NVRTC_SYM(error_string, "nvrtcGetErrorString")
#undef NVRTC_SYM
  return 1;
}

/* Compiles `source` (CUDA C++) for `arch`: "compute_XY" gives PTX (the driver
 * JIT-compiles it), "sm_XY" a cubin (machine code for that GPU). Returns a
 * malloc'd image (NUL-terminated) and its size, or NULL with the reason and
 * the compiler's log in `why`. */
static char *nvrtc_compile(const nvrtc_api *api, const char *source, const char *arch, size_t *size, char *why,
                           size_t why_cap) {
  char option[64];
  const char *options[2] = {option, "--std=c++14"};
  int cubin = strncmp(arch, "sm_", 3) == 0;
  void *prog = NULL;
  char *image = NULL;
  size_t n = 0;
  int rc;
  snprintf(option, sizeof option, "--gpu-architecture=%s", arch);
  rc = api->create(&prog, source, "user.cu", 0, NULL, NULL);
  if (rc != 0) return snprintf(why, why_cap, "nvrtcCreateProgram: %s", api->error_string(rc)), NULL;
  rc = api->compile(prog, 2, options);
  if (rc != 0) {
    size_t log_n = 0;
    int len = snprintf(why, why_cap, "nvrtcCompileProgram(%s): %s", arch, api->error_string(rc));
    if (api->log_size(prog, &log_n) == 0 && log_n > 1 && len > 0 && (size_t)len + 2 < why_cap) {
      char *log = malloc(log_n);
      if (log && api->log(prog, log) == 0) snprintf(why + len, why_cap - (size_t)len, "\n%s", log);
      free(log);
    }
    api->destroy(&prog);
    return NULL;
  }
  rc = cubin ? api->cubin_size(prog, &n) : api->ptx_size(prog, &n);
  if (rc == 0 && (image = malloc(n + 1)) != NULL) {
    rc = cubin ? api->cubin(prog, image) : api->ptx(prog, image);
    image[n] = '\0';
  }
  api->destroy(&prog);
  if (rc != 0 || !image) {
    free(image);
    snprintf(why, why_cap, "nvrtcGet%s: %s", cubin ? "CUBIN" : "PTX", rc ? api->error_string(rc) : "out of memory");
    return NULL;
  }
  *size = n;
  return image;
}

/* ---- the CUDA driver API, loaded at run time ---------------------------- */

typedef int CUresult; /* CUDA_SUCCESS = 0 */
typedef int CUdevice;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;

typedef struct cuda_api {
  void *lib;
  CUresult (*init)(unsigned);
  CUresult (*device_get)(CUdevice *, int);
  CUresult (*primary_ctx_retain)(CUcontext *, CUdevice);
  CUresult (*ctx_push)(CUcontext);
  CUresult (*ctx_pop)(CUcontext *);
  CUresult (*module_load_data)(CUmodule *, const void *);
  CUresult (*module_get_function)(CUfunction *, CUmodule, const char *);
  CUresult (*launch)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                     void **, void **);
  CUresult (*error_string)(CUresult, const char **);
} cuda_api;

/* Opens libcuda.so.1 (the driver's library) and calls cuInit. 0 with the
 * reason in `why` where there is no driver. The versioned names are what
 * cuda.h maps these calls to (the unsuffixed ones keep the old ABI). */
static int cuda_api_load(cuda_api *c, char *why, size_t why_cap) {
  CUresult r;
  memset(c, 0, sizeof *c);
  if (!(c->lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL))) {
    snprintf(why, why_cap, "no libcuda.so.1 (no NVIDIA driver): %s", dlerror());
    return 0;
  }
#define CU_SYM(field, name)                                                                                \
  if (!(*(void **)&c->field = dlsym(c->lib, name))) {                                                      \
    snprintf(why, why_cap, "libcuda has no %s", name);                                                     \
    return 0;                                                                                              \
  }
  CU_SYM(init, "cuInit")
  CU_SYM(device_get, "cuDeviceGet")
  CU_SYM(primary_ctx_retain, "cuDevicePrimaryCtxRetain")
  CU_SYM(ctx_push, "cuCtxPushCurrent_v2")
  CU_SYM(ctx_pop, "cuCtxPopCurrent_v2")
  CU_SYM(module_load_data, "cuModuleLoadData")
  CU_SYM(module_get_function, "cuModuleGetFunction")
  CU_SYM(launch, "cuLaunchKernel")
  CU_SYM(error_string, "cuGetErrorString")
#undef CU_SYM
  if ((r = c->init(0)) != 0) {
    const char *s = NULL;
    c->error_string(r, &s);
    snprintf(why, why_cap, "cuInit failed: %s (%d)", s ? s : "unknown CUresult", r);
    return 0;
  }
  return 1;
}
#endif
