/* A DLPack producer of the tests' own (test_dlpack, test_harden_regressions):
 * a CPU DLManagedTensor viewing caller memory, whose deleter counts its
 * calls and records the thread it ran on. */
#pragma once

#include <dlpack/dlpack.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

typedef struct {
  DLManagedTensor m;
  int64_t shape[4];
  int64_t strides[4];
  int deleted;       /* times the deleter ran */
  pthread_t deleter_thread;
} Producer;

static void producer_deleter(DLManagedTensor *self) {
  Producer *p = (Producer *)self->manager_ctx;
  p->deleted++;
  p->deleter_thread = pthread_self();
}

/* A producer viewing `data` (not owned) with the given layout. */
static void producer_init(Producer *p, void *data, uint8_t code, uint8_t bits, int ndim, const int64_t *shape,
                          const int64_t *strides, uint64_t byte_offset) {
  int i;
  memset(p, 0, sizeof *p);
  for (i = 0; i < ndim; ++i) {
    p->shape[i] = shape[i];
    if (strides) p->strides[i] = strides[i];
  }
  p->m.dl_tensor.data = data;
  p->m.dl_tensor.device.device_type = kDLCPU;
  p->m.dl_tensor.device.device_id = 0;
  p->m.dl_tensor.ndim = ndim;
  p->m.dl_tensor.dtype.code = code;
  p->m.dl_tensor.dtype.bits = bits;
  p->m.dl_tensor.dtype.lanes = 1;
  p->m.dl_tensor.shape = ndim ? p->shape : NULL;
  p->m.dl_tensor.strides = strides ? p->strides : NULL;
  p->m.dl_tensor.byte_offset = byte_offset;
  p->m.manager_ctx = p;
  p->m.deleter = producer_deleter;
}
