// Data-parallel helpers: bucketed averaging of tensors and gradients, and
// broadcast of parameters. Built only on the public collectives of dist.cpp,
// so everything here goes through the same checks and timeouts.

#include "dist_internal.h"  // first (see there): HeldPg

#include <ATen/ops/cat.h>
#include <ATen/ops/zeros_like.h>
#include <c10/core/GradMode.h>

#include "core/internal.h"

namespace {

using ctorch::dist::check;

constexpr size_t kDefaultBucketBytes = 25u << 20;  // DDP's bucket_cap_mb default

// Consecutive tensors of one dtype and device, at most `cap` bytes (a larger
// tensor alone). The rule is in ctorch.h; tests recompute it independently.
std::vector<std::vector<size_t>> plan_buckets(const std::vector<at::Tensor> &ts, size_t cap) {
  std::vector<std::vector<size_t>> buckets;
  size_t bytes = 0;
  for (size_t i = 0; i < ts.size(); ++i) {
    size_t b = static_cast<size_t>(ts[i].numel()) * ts[i].element_size();
    bool fits = !buckets.empty() && bytes + b <= cap && ts[i].scalar_type() == ts[buckets.back()[0]].scalar_type() &&
                ts[i].device() == ts[buckets.back()[0]].device();
    if (!fits) {
      buckets.emplace_back();
      bytes = 0;
    }
    buckets.back().push_back(i);
    bytes += b;
  }
  return buckets;
}

at::Tensor flatten(const std::vector<at::Tensor> &ts, const std::vector<size_t> &idx) {
  std::vector<at::Tensor> views;
  views.reserve(idx.size());
  for (size_t i : idx) views.push_back(ts[i].reshape({-1}));
  return at::cat(views);
}

void unflatten(std::vector<at::Tensor> &ts, const std::vector<size_t> &idx, const at::Tensor &flat) {
  at::NoGradGuard no_grad;
  int64_t off = 0;
  for (size_t i : idx) {
    int64_t n = ts[i].numel();
    ts[i].copy_(flat.narrow(0, off, n).view(ts[i].sizes()));
    off += n;
  }
}

// Issues one all-reduce (SUM) per bucket, all before waiting, then divides
// and writes back. Every work is waited for even after a failure, so no
// collective is left running on buffers we are about to drop.
void average(ctorch_process_group pg, std::vector<at::Tensor> &ts, size_t bucket_bytes) {
  int size = 0;
  check(ctorch_process_group_size(&size, pg));
  for (size_t i = 0; i < ts.size(); ++i)
    if (!at::isFloatingType(ts[i].scalar_type()) && !at::isComplexType(ts[i].scalar_type()))
      ctorch::fail(CTORCH_TYPE, "tensor " + std::to_string(i) + " is " + std::string(c10::toString(ts[i].scalar_type())) +
                   ": averaging needs floating-point tensors");
  auto buckets = plan_buckets(ts, bucket_bytes ? bucket_bytes : kDefaultBucketBytes);
  std::vector<at::Tensor> flats;
  ctorch::Lent lend;  // handles to the flats for the public calls below
  std::vector<ctorch_work> works;
  ctorch_status first = CTORCH_OK;
  std::string first_msg;
  for (auto &b : buckets) {
    flats.push_back(flatten(ts, b));
    ctorch_work w = nullptr;
    ctorch_status st = ctorch_dist_all_reduce_async(&w, pg, lend(flats.back()), CTORCH_REDUCE_SUM);
    if (st != CTORCH_OK) {
      first = st;
      first_msg = ctorch_last_error();
      break;
    }
    works.push_back(w);
  }
  for (ctorch_work w : works) {
    ctorch_status st = ctorch_work_wait(w, 0);
    if (st != CTORCH_OK && first == CTORCH_OK) {
      first = st;
      first_msg = ctorch_last_error();
    }
    ctorch_work_free(w);
  }
  if (first != CTORCH_OK) ctorch::fail(first, first_msg);
  for (size_t k = 0; k < buckets.size(); ++k) {
    {
      at::NoGradGuard no_grad;
      flats[k].div_(size);
    }
    unflatten(ts, buckets[k], flats[k]);
  }
}

}  // namespace

extern "C" {

CTORCH_API ctorch_status ctorch_dist_average_tensors(ctorch_process_group pg, const ctorch_tensor *tensors, size_t n,
                                                     size_t bucket_bytes) {
  CTORCH_TRY
  ctorch::dist::HeldPg held(pg);  // one thread's buckets at a time: every rank issues them in one order
  auto ts = ctorch::tensor_list(tensors, n, "tensors");
  average(pg, ts, bucket_bytes);
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_dist_average_gradients(ctorch_process_group pg, const ctorch_tensor *params, size_t n,
                                                       size_t bucket_bytes) {
  CTORCH_TRY
  ctorch::dist::HeldPg held(pg);  // one thread's buckets at a time: every rank issues them in one order
  auto ps = ctorch::tensor_list(params, n, "params");
  std::vector<at::Tensor> grads;
  grads.reserve(n);
  {
    // Reading and installing .grad under the accumulators' locks: a backward
    // on another thread replaces it under them (core/exclusive.h).
    ctorch::GradLocks locks(ps);
    for (auto &p : ps) {
      if (!p.grad().defined()) {
        at::NoGradGuard no_grad;
        p.mutable_grad() = at::zeros_like(p);
      }
      grads.push_back(p.grad());
    }
  }
  average(pg, grads, bucket_bytes);
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_dist_broadcast_parameters(ctorch_process_group pg, const ctorch_tensor *params,
                                                          size_t n, int root) {
  CTORCH_TRY
  ctorch::dist::HeldPg held(pg);  // one thread's buckets at a time: every rank issues them in one order
  auto ps = ctorch::tensor_list(params, n, "params");
  int rank = 0;
  check(ctorch_process_group_rank(&rank, pg));
  std::vector<at::Tensor> data;
  for (auto &p : ps) data.push_back(p.detach());
  auto buckets = plan_buckets(data, kDefaultBucketBytes);
  for (auto &b : buckets) {
    at::Tensor flat = flatten(data, b);
    ctorch::Lent lend;
    check(ctorch_dist_broadcast(pg, lend(flat), root));
    if (rank != root) unflatten(data, b, flat);
  }
  CTORCH_CATCH
}

}  // extern "C"
