// Data-parallel training through c10d's own Reducer: the calls
// torch.nn.parallel.DistributedDataParallel makes around a module, in its
// order and with its arguments, for the libtorch this is built against
// (1.13's distributed.py and 2.15's were read for them). Equal to Python
// DDP bucket for bucket (tests/dist/ddp_reducer.py checks it, and runs a
// job that mixes C and Python DDP ranks).

#include "dist_internal.h"  // first (see there): HeldPg

#include <torch/csrc/distributed/c10d/comm.hpp>
#include <torch/csrc/distributed/c10d/reducer.hpp>

#include <ATen/ops/tensor.h>
#include <c10/core/GradMode.h>

#include <limits>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>

#include "core/exclusive.h"
#include "core/internal.h"

struct ctorch_ddp_s {
  ctorch_process_group pg = nullptr;  // borrowed; checked on every call
  ctorch_nn_module module = nullptr;  // borrowed (ctorch_ddp_new), or NULL
  std::vector<at::Tensor> params;     // the Reducer's: those that require grad
  std::vector<at::Tensor> buffers;
  std::shared_ptr<c10d::Reducer> reducer;
  uint32_t flags = 0;
  bool require_sync = true;                // DDP's require_backward_grad_sync
  bool require_forward_param_sync = true;  // DDP's: the last forward was synchronised
  ctorch::Busy busy;
  ctorch::Live<ctorch_ddp_s> live{this};  // last: see core/internal.h
};

namespace {

using ctorch::dist::check;

using ctorch::fail_arg;

constexpr uint32_t kAllFlags =
    CTORCH_DDP_FIND_UNUSED_PARAMETERS | CTORCH_DDP_GRADIENT_AS_BUCKET_VIEW | CTORCH_DDP_NO_BROADCAST_BUFFERS;
// DDP's broadcast_bucket_size: the buckets of its parameter and buffer broadcasts.
constexpr size_t kBroadcastBucketBytes = size_t(250) << 20;
constexpr bool kTorch2 = CTORCH_TORCH_AT_LEAST(2, 0);

struct ListGuard {
  ctorch_tensor_list h = nullptr;
  ~ListGuard() { ctorch_tensor_list_free(h); }
};
struct DictGuard {
  ctorch_tensor_dict h = nullptr;
  ~DictGuard() { ctorch_tensor_dict_free(h); }
};
struct TensorGuard {
  ctorch_tensor h = nullptr;
  ~TensorGuard() { ctorch_tensor_free(h); }
};

// The Reducer's constructor changed between libtorch versions; each known
// form is tried in turn, so a version whose form is not listed fails to
// compile here instead of calling the wrong one.
template <class... A>
std::shared_ptr<c10d::Reducer> make_reducer_if(A &&...a) {
  if constexpr (std::is_constructible_v<c10d::Reducer, A...>)
    return std::make_shared<c10d::Reducer>(std::forward<A>(a)...);
  else
    return nullptr;
}

std::shared_ptr<c10d::Reducer> make_reducer(const std::vector<at::Tensor> &params,
                                            std::vector<std::vector<size_t>> buckets, std::vector<size_t> limits,
                                            const c10::intrusive_ptr<c10d::ProcessGroup> &pg, int64_t cap,
                                            int64_t first_cap, bool find_unused, bool view) {
  std::vector<bool> sparse(params.size(), false);
  std::unordered_map<size_t, std::string> names;  // Python passes names in its debug mode only
  // 2.x (2.15's form): skip_all_reduce_unused_params, use_python_reducer,
  // bucket_bytes_cap_list (empty: the default rebuild), batched_grad_copy,
  // lazy_bucket_allocation, all DDP's defaults.
  if (auto r = make_reducer_if(params, buckets, pg, sparse, cap, find_unused, view, names, first_cap, false, false,
                               std::vector<int64_t>{}, false, false))
    return r;
  // 1.13's form: the per-bucket size limits second.
  if (auto r = make_reducer_if(params, buckets, limits, pg, sparse, cap, find_unused, view, names, first_cap))
    return r;
  ctorch::fail(CTORCH_NOT_IMPLEMENTED, "c10d::Reducer of this libtorch takes arguments ctorch does not know");
}

std::unique_ptr<ctorch_ddp_s> build(ctorch_process_group pg, std::vector<at::Tensor> all_params,
                                    std::vector<at::Tensor> buffers, size_t bucket_cap, uint32_t flags) {
  if (flags & ~kAllFlags) fail_arg("flags", "unknown bits " + std::to_string(flags & ~kAllFlags));
  if (bucket_cap > static_cast<size_t>(std::numeric_limits<int64_t>::max()))
    fail_arg("bucket_cap_bytes", "too large");
  ctorch::dist::HeldPg held(pg);
  auto &g = held.g;
  bool find_unused = flags & CTORCH_DDP_FIND_UNUSED_PARAMETERS;
  bool broadcast_buffers = !(flags & CTORCH_DDP_NO_BROADCAST_BUFFERS);

  // DDP's _build_params_for_reducer: parameters that require grad, each once.
  std::vector<at::Tensor> params;
  std::unordered_set<const c10::TensorImpl *> seen;
  for (auto &p : all_params)
    if (p.requires_grad() && seen.insert(p.unsafeGetTensorImpl()).second) params.push_back(p);
  if (params.empty()) fail_arg("params", "no parameter requires grad: there is nothing to average");
  for (size_t i = 0; i < params.size(); ++i)
    if (!params[i].is_leaf()) fail_arg("params", "parameter " + std::to_string(i) + " is not a leaf tensor");

  // DDP's bucket sizes: bucket_cap_mb (default 25 MiB) and, where it is the
  // default, a first bucket of 1 MiB (1.x: always).
  int64_t cap = bucket_cap ? static_cast<int64_t>(bucket_cap) : c10d::kDefaultBucketBytesCap;
  int64_t first_cap = (bucket_cap && kTorch2) ? cap : c10d::kDefaultFirstBucketBytes;

  c10d::verify_params_across_processes(g.pg, params, {});
  {
    // _sync_module_states: rank 0's parameters (all of them) and buffers.
    at::NoGradGuard no_grad;
    std::vector<at::Tensor> states;
    for (auto &p : all_params) states.push_back(p.detach());
    if (broadcast_buffers || !kTorch2)
      for (auto &b : buffers) states.push_back(b.detach());
    if (!states.empty()) c10d::broadcast_coalesced(g.pg, states, kBroadcastBucketBytes, 0);
  }

  // _ddp_init_helper: one bucket for the first iteration unless unused
  // parameters are searched for (the rebuild after it orders the buckets as
  // the gradients came), reversed to approximate the order of backward.
  std::vector<size_t> limits;
  if (!find_unused)
    limits = {static_cast<size_t>(std::numeric_limits<int64_t>::max())};  // Python's sys.maxsize
  else if (first_cap < cap || !kTorch2)  // 1.x: the first bucket's limit always
    limits = {static_cast<size_t>(first_cap), static_cast<size_t>(cap)};
  else
    limits = {static_cast<size_t>(cap)};
  auto assignment = c10d::compute_bucket_assignment_by_size(params, limits, std::vector<bool>(params.size(), false));
  auto buckets = std::get<0>(assignment);
  auto per_bucket = std::get<1>(assignment);
  std::reverse(buckets.begin(), buckets.end());
  std::reverse(per_bucket.begin(), per_bucket.end());

  auto d = std::make_unique<ctorch_ddp_s>();
  d->pg = pg;
  d->reducer = make_reducer(params, std::move(buckets), std::move(per_bucket), g.pg, cap, first_cap, find_unused,
                            flags & CTORCH_DDP_GRADIENT_AS_BUCKET_VIEW);
  d->params = std::move(params);
  d->buffers = std::move(buffers);
  d->flags = flags;
  return d;
}

struct HeldDdp {
  explicit HeldDdp(ctorch_ddp d) : ddp((ctorch::check_handle(d, "ddp"), *d)), hold(ddp.busy, "ddp", d) {}
  ctorch_ddp_s &ddp;
  ctorch::Exclusive hold;
};

// A module's buffers now (DDP's _assign_modules_buffers: one may have been
// replaced since the last forward).
std::vector<at::Tensor> module_buffers(ctorch_nn_module m) {
  DictGuard named;
  check(ctorch_nn_module_named_buffers(&named.h, m, 1));
  size_t n = 0;
  check(ctorch_tensor_dict_size(&n, named.h));
  std::vector<at::Tensor> out;
  for (size_t i = 0; i < n; ++i) {
    TensorGuard b;
    check(ctorch_tensor_dict_get(&b.h, named.h, i));
    if (b.h) out.push_back(ctorch::own(b.h));
  }
  return out;
}

void pre_forward(ctorch_ddp_s &d) {
  ctorch::dist::HeldPg held(d.pg);
  bool grad = at::GradMode::is_enabled();
  if (grad && d.require_sync) d.reducer->prepare_for_forward();
  if (grad) d.reducer->rebuild_buckets();
  bool sync_buffers = d.require_forward_param_sync && !(d.flags & CTORCH_DDP_NO_BROADCAST_BUFFERS);
  if (sync_buffers && d.module) d.buffers = module_buffers(d.module);
  if (sync_buffers && !d.buffers.empty()) {
    at::NoGradGuard no_grad;
    std::vector<at::Tensor> bufs;
    for (auto &b : d.buffers) bufs.push_back(b.detach());
    c10d::broadcast_coalesced(held.g.pg, bufs, kBroadcastBucketBytes, 0);
  }
}

void post_forward(ctorch_ddp_s &d, const std::vector<at::Tensor> &outputs) {
  if (at::GradMode::is_enabled() && d.require_sync) {
    d.require_forward_param_sync = true;
    if (d.flags & CTORCH_DDP_FIND_UNUSED_PARAMETERS)
      d.reducer->prepare_for_backward(outputs);
    else
      d.reducer->prepare_for_backward({});
  } else {
    d.require_forward_param_sync = false;
  }
}

std::vector<at::Tensor> tensors_of(ctorch_tensor_list l) {
  ctorch::check_handle(l, "list");
  return l->items;
}

}  // namespace

extern "C" {

CTORCH_API ctorch_status ctorch_ddp_new(ctorch_ddp *out, ctorch_process_group pg, ctorch_nn_module m,
                                        size_t bucket_cap_bytes, uint32_t flags) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  ctorch::check_handle(m, "m");
  ListGuard params;
  check(ctorch_nn_module_parameters(&params.h, m));
  std::vector<at::Tensor> buffers = module_buffers(m);
  auto d = build(pg, tensors_of(params.h), std::move(buffers), bucket_cap_bytes, flags);
  d->module = m;
  *out = d.release();
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_ddp_new_params(ctorch_ddp *out, ctorch_process_group pg, const ctorch_tensor *params,
                                               size_t n_params, const ctorch_tensor *buffers, size_t n_buffers,
                                               size_t bucket_cap_bytes, uint32_t flags) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  auto ps = ctorch::tensor_list(params, n_params, "params");
  auto bs = ctorch::tensor_list(buffers, n_buffers, "buffers");
  *out = build(pg, std::move(ps), std::move(bs), bucket_cap_bytes, flags).release();
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_ddp_forward(ctorch_tensor *out, ctorch_ddp ddp, ctorch_tensor input) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  HeldDdp h(ddp);
  if (!h.ddp.module) fail_arg("ddp", "made by ctorch_ddp_new_params: call ctorch_ddp_pre_forward, your forward, "
                                     "then ctorch_ddp_post_forward");
  ctorch::require_tensor(input, "input");
  pre_forward(h.ddp);
  TensorGuard y;
  check(ctorch_nn_module_forward(&y.h, h.ddp.module, input));
  post_forward(h.ddp, {ctorch::own(y.h)});
  *out = y.h;
  y.h = nullptr;
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_ddp_pre_forward(ctorch_ddp ddp) {
  CTORCH_TRY
  HeldDdp h(ddp);
  pre_forward(h.ddp);
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_ddp_post_forward(ctorch_ddp ddp, const ctorch_tensor *outputs, size_t n) {
  CTORCH_TRY
  HeldDdp h(ddp);
  post_forward(h.ddp, ctorch::tensor_list(outputs, n, "outputs"));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_ddp_set_require_sync(ctorch_ddp ddp, int sync) {
  CTORCH_TRY
  HeldDdp h(ddp);
  h.ddp.require_sync = sync != 0;
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_ddp_bucket_count(size_t *out, ctorch_ddp ddp) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  HeldDdp h(ddp);
  *out = h.ddp.reducer->get_grad_buckets(true).size();
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_ddp_bucket_indices(ctorch_tensor *out, ctorch_ddp ddp, size_t bucket) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  HeldDdp h(ddp);
  auto buckets = h.ddp.reducer->get_grad_buckets(true);
  if (bucket >= buckets.size())
    fail_arg("bucket", std::to_string(bucket) + " is out of range: the Reducer has " +
                           std::to_string(buckets.size()) + " buckets");
  std::unordered_map<const c10::TensorImpl *, int64_t> index;
  for (size_t i = 0; i < h.ddp.params.size(); ++i) index[h.ddp.params[i].unsafeGetTensorImpl()] = int64_t(i);
  std::vector<int64_t> ids;
  for (auto &p : buckets[bucket].getParameters()) {
    auto it = index.find(p.unsafeGetTensorImpl());
    ids.push_back(it == index.end() ? -1 : it->second);
  }
  *out = ctorch::give(at::tensor(ids, at::kLong));
  CTORCH_CATCH
}

CTORCH_API void ctorch_ddp_free(ctorch_ddp ddp) {
  // A handle in use by another thread's call is not freed (core/exclusive.h).
  if (ddp && ctorch::handle_kind_of(ddp) == ctorch::HandleKind::ddp && !ctorch::free_allowed(ddp->busy, __func__, ddp))
    return;
  if (!ctorch::release_handle(ddp, __func__)) return;
  try {
    delete ddp;  // ~Reducer takes its hooks off the parameters; it is noexcept(false)
  } catch (...) {
  }
}

}  // extern "C"
