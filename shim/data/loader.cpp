// The batch loader over a dataset: the epoch's order (sequential, seeded
// randperm, or DistributedSampler's), batching, and background workers that
// make batches ahead while ctorch_data_loader_next hands them out in order.
#include "core/exclusive.h"
#include "data/data.h"
#include "transforms/transforms.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/randperm.h>

#include <algorithm>
#include <condition_variable>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace ctorch {
namespace data {

// torch/utils/data/distributed.py, DistributedSampler.__iter__ (the same in
// torch 1.13 and 2.x): the order, padded by repeating it from its start
// (padded[i] = order[i % n]) or cut, then every world-th entry from rank.
at::Tensor distributed_indices(int64_t n, int64_t rank, int64_t world, bool shuffle, uint64_t seed, uint64_t epoch,
                               bool drop_last) {
  // num_samples = ceil((n - world) / world) when dropping a ragged tail
  // (that is n / world), else ceil(n / world).
  const int64_t num = drop_last && n % world != 0 ? n / world : n / world + (n % world != 0);
  at::Tensor order;
  if (shuffle) {
    auto gen = at::detail::createCPUGenerator(seed + epoch);  // g.manual_seed(self.seed + self.epoch), mod 2^64
    order = at::randperm(n, gen, at::TensorOptions().dtype(at::kLong));
  }
  at::Tensor out = at::empty({num}, at::TensorOptions().dtype(at::kLong));
  int64_t *o = out.data_ptr<int64_t>();
  const int64_t *p = shuffle ? order.data_ptr<int64_t>() : nullptr;
  for (int64_t k = 0; k < num; ++k) {
    int64_t i = (rank + k * world) % n;  // num > 0 implies n > 0
    o[k] = p ? p[i] : i;
  }
  return out;
}

// The loader's parts held by the exported ctorch_data_loader_s: in the
// folder's namespace, not an anonymous one, which would make the struct a
// different type in every translation unit (-Wsubobject-linkage).

// One batch made by a worker, or the error it met.
struct BatchResult {
  at::Tensor x, y;
  std::exception_ptr error;
};

// The host's per-item callback and its data (freed once, when replaced,
// removed or the loader freed: after the workers stopped).
struct TransformFn {
  ctorch_data_transform_fn fn = nullptr;
  void *data = nullptr;
  void (*release)(void *) = nullptr;
  TransformFn(ctorch_data_transform_fn f, void *d, void (*r)(void *)) : fn(f), data(d), release(r) {}
  TransformFn(const TransformFn &) = delete;
  TransformFn &operator=(const TransformFn &) = delete;
  ~TransformFn() {
    if (release) release(data);
  }
};

struct TransformRef {  // the loader's reference to its ctorch_transform
  ctorch_transform t = nullptr;
  TransformRef() = default;
  TransformRef(const TransformRef &) = delete;
  TransformRef &operator=(const TransformRef &) = delete;
  ~TransformRef() { ctorch::transforms::release(t); }
  void reset(ctorch_transform n) noexcept {
    if (n) ctorch::transforms::retain(n);
    ctorch::transforms::release(t);
    t = n;
  }
};

}  // namespace data
}  // namespace ctorch

using namespace ctorch::data;

namespace {

constexpr int kMaxWorkers = 64;

// One item through the loader's transform: an image [C, H, W] or [H, W]
// (taken as [1, H, W]).
at::Tensor transform_item(ctorch_transform t, at::Tensor x, int64_t index, const at::Generator &gen) {
  const std::string item = "dataset item " + std::to_string(index);
  if (x.dim() == 2) x = x.unsqueeze(0);
  if (x.dim() != 3)
    ctorch::fail(CTORCH_VALUE, item + ": the loader's transform needs an image [C, H, W] or [H, W], got " +
                                   std::to_string(x.dim()) + " dimensions");
  try {
    return ctorch::transforms::apply_image(t, x, gen);
  } catch (const ctorch::StatusError &e) {
    ctorch::fail(e.status(), item + ": the loader's transform: " + e.what());
  }
}

// One item through the host's callback: data and target lent as handles,
// whatever it writes taken.
void call_item_fn(const TransformFn &f, int64_t index, at::Tensor *x, at::Tensor *y) {
  std::string before = ctorch_last_error();
  ctorch_tensor dh = ctorch::give(*x), th = y->defined() ? ctorch::give(*y) : nullptr;
  ctorch_tensor dout = nullptr, tout = nullptr;
  ctorch_status st = f.fn(f.data, index, dh, th, &dout, &tout);
  // The lent handles and whatever was written are ctorch's again (the
  // callback may have written a lent handle back: it stays as it is).
  at::Tensor d = dout == dh ? at::Tensor() : ctorch::take(dout);
  at::Tensor t = tout == th ? at::Tensor() : ctorch::take(tout);
  const bool keep_data = dout == dh && dout, keep_target = tout == th || !tout;
  ctorch::take(dh);
  if (th) ctorch::take(th);
  const std::string item = "dataset item " + std::to_string(index);
  if (st != CTORCH_OK)
    ctorch::fail(callback_status(st), item + ": the loader's transform_fn returned " +
                                          std::string(ctorch_status_name(st)) + errors_since(before));
  if (!keep_data && !d.defined())
    ctorch::fail(CTORCH_VALUE, item + ": the loader's transform_fn returned CTORCH_OK but wrote no data");
  if (!keep_data) *x = std::move(d);
  if (!keep_target) *y = std::move(t);
}

}  // namespace

struct ctorch_data_loader_s {
  std::shared_ptr<Dataset> ds;
  int64_t batch = 1;
  bool shuffle = false, drop_last = false, pin = false;
  uint64_t seed = 0, epoch = 0;
  bool dist = false, dist_drop_last = false;
  int64_t rank = 0, world = 1;
  int workers = 0, prefetch = 2;
  // The transform stage (per item, before collate): none when both are unset.
  TransformRef transform;
  std::unique_ptr<TransformFn> transform_fn;

  // The epoch: the dataset's length at its start, its order (undefined:
  // 0..count-1), its batches and the next one to hand out.
  int64_t n = 0, count = 0, nbatches = 0, next = 0;
  at::Tensor order;

  // Workers: each takes the next batch not yet taken while fewer than
  // workers * prefetch are made and not yet handed out.
  std::mutex mu;
  std::condition_variable work_cv, done_cv;
  std::vector<std::thread> threads;
  bool stop = false;
  int64_t taken = 0;
  std::map<int64_t, BatchResult> results;

  ~ctorch_data_loader_s() { stop_workers(); }

  void stop_workers() noexcept {
    {
      std::lock_guard<std::mutex> lk(mu);
      stop = true;
    }
    work_cv.notify_all();
    for (auto &t : threads) t.join();
    threads.clear();
    results.clear();
    stop = false;
  }

  void start(uint64_t e) {
    stop_workers();
    epoch = e;
    next = taken = 0;
    count = nbatches = 0;  // an empty epoch if what follows fails
    order = at::Tensor();
    n = ds->len();
    int64_t c = n;
    if (dist) {
      order = distributed_indices(n, rank, world, shuffle, seed, e, dist_drop_last);
      c = order.numel();
    } else if (shuffle) {
      auto gen = at::detail::createCPUGenerator(epoch_seed(seed, e));
      order = at::randperm(n, gen, at::TensorOptions().dtype(at::kLong));
    }
    count = c;
    // count / batch rounded up without count + batch - 1 (which overflows
    // for a batch near INT64_MAX).
    nbatches = drop_last ? count / batch : count / batch + (count % batch != 0);
  }

  void make(int64_t k, at::Tensor *x, at::Tensor *y) {
    const int64_t lo = k * batch, len = std::min(batch, count - lo);
    if (transform.t || transform_fn) {
      make_transformed(k, order.defined() ? order.narrow(0, lo, len)
                                          : at::arange(lo, lo + len, at::TensorOptions().dtype(at::kLong)),
                       x, y);
    } else if (order.defined()) {
      ds->batch(order.narrow(0, lo, len), -1, x, y);
    } else {
      ds->batch(at::arange(lo, lo + len, at::TensorOptions().dtype(at::kLong)), lo, x, y);
    }
    if (pin) {
      if (x->defined() && x->device().is_cpu()) *x = x->pin_memory();
      if (y->defined() && y->device().is_cpu()) *y = y->pin_memory();
    }
  }

  // Batch k's items, each through the transform and the callback, then
  // collated. The draws: a fresh generator per batch (see ctorch.h).
  void make_transformed(int64_t k, const at::Tensor &idx, at::Tensor *x, at::Tensor *y) {
    std::vector<at::Tensor> xs, ys;
    ds->items(idx, &xs, &ys);
    const int64_t *ip = idx.data_ptr<int64_t>();
    at::Generator gen;
    if (transform.t) gen = at::detail::createCPUGenerator(epoch_seed(seed, epoch) + 1 + uint64_t(k));
    for (size_t i = 0; i < xs.size(); ++i) {
      if (transform.t) xs[i] = transform_item(transform.t, std::move(xs[i]), ip[i], gen);
      if (transform_fn) {
        at::Tensor none;
        call_item_fn(*transform_fn, ip[i], &xs[i], ys.empty() ? &none : &ys[i]);
        if (none.defined())
          ctorch::fail(CTORCH_VALUE, "dataset item " + std::to_string(ip[i]) +
                                         ": the loader's transform_fn wrote a target, but the dataset has none");
      }
    }
    collate(xs, ys, idx, x, y);
  }

  void work() noexcept {
    for (;;) {
      int64_t k;
      {
        std::unique_lock<std::mutex> lk(mu);
        work_cv.wait(lk, [&] { return stop || taken >= nbatches || taken < next + int64_t(workers) * prefetch; });
        if (stop || taken >= nbatches) return;
        k = taken++;
      }
      BatchResult r;
      try {
        make(k, &r.x, &r.y);
      } catch (...) {
        r.x = at::Tensor();
        r.y = at::Tensor();
        r.error = std::current_exception();
      }
      {
        std::lock_guard<std::mutex> lk(mu);
        results[k] = std::move(r);
      }
      done_cv.notify_all();
    }
  }

  // The next batch in order (next < nbatches), from the workers or made here.
  void take_next(at::Tensor *x, at::Tensor *y) {
    if (workers == 0) {
      make(next++, x, y);
      return;
    }
    if (threads.empty()) {
      try {
        const int64_t m = std::min<int64_t>(workers, nbatches - next);
        for (int64_t i = 0; i < m; ++i) threads.emplace_back([this] { work(); });
      } catch (...) {
        stop_workers();
        throw;
      }
    }
    BatchResult r;
    {
      std::unique_lock<std::mutex> lk(mu);
      done_cv.wait(lk, [&] { return results.count(next) != 0; });
      auto it = results.find(next);
      r = std::move(it->second);
      results.erase(it);
      ++next;
    }
    work_cv.notify_all();
    if (r.error) std::rethrow_exception(r.error);
    *x = std::move(r.x);
    *y = std::move(r.y);
  }
  ctorch::Busy busy;  // held by every call on the handle (core/exclusive.h)
  ctorch::Live<ctorch_data_loader_s> live{this};  // last: see core/internal.h
};

namespace {

ctorch_data_loader make_loader(std::shared_ptr<Dataset> ds, int64_t batch_size, int shuffle, uint64_t seed,
                               int drop_last) {
  auto l = std::make_unique<ctorch_data_loader_s>();
  l->ds = std::move(ds);
  l->batch = batch_size;
  l->shuffle = shuffle != 0;
  l->drop_last = drop_last != 0;
  l->seed = seed;
  l->start(0);
  return l.release();
}

}  // namespace

extern "C" {

CTORCH_API ctorch_status ctorch_data_epoch_seed(uint64_t *out, uint64_t seed, uint64_t epoch) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = epoch_seed(seed, epoch);
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_data_distributed_indices(ctorch_tensor *out, int64_t dataset_len, int64_t rank,
                                                         int64_t world_size, int shuffle, uint64_t seed,
                                                         uint64_t epoch, int drop_last) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  if (dataset_len < 0) ctorch::fail_arg("dataset_len", "must be >= 0, got " + std::to_string(dataset_len));
  if (world_size < 1) ctorch::fail_arg("world_size", "must be >= 1, got " + std::to_string(world_size));
  if (rank < 0 || rank >= world_size)
    ctorch::fail_arg("rank", "must be in [0, " + std::to_string(world_size - 1) + "], got " + std::to_string(rank));
  *out = ctorch::give(distributed_indices(dataset_len, rank, world_size, shuffle != 0, seed, epoch, drop_last != 0));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_data_loader_new(ctorch_data_loader *out, ctorch_tensor data, ctorch_tensor targets,
                                                int64_t batch_size, int shuffle, uint64_t seed, int drop_last) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  ctorch::require_tensor(data, "data");
  if (batch_size < 1) ctorch::fail_arg("batch_size", "must be >= 1, got " + std::to_string(batch_size));
  *out = make_loader(tensor_dataset(data, targets), batch_size, shuffle, seed, drop_last);
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_data_loader_from_dataset(ctorch_data_loader *out, ctorch_dataset ds,
                                                         int64_t batch_size, int shuffle, uint64_t seed,
                                                         int drop_last) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  ctorch::require_ptr(ds, "ds");
  if (batch_size < 1) ctorch::fail_arg("batch_size", "must be >= 1, got " + std::to_string(batch_size));
  *out = make_loader(ds->ds, batch_size, shuffle, seed, drop_last);
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_data_loader_set_workers(ctorch_data_loader loader, int num_workers,
                                                        int prefetch_factor) {
  CTORCH_TRY
  ctorch::require_ptr(loader, "loader");
  ctorch::Exclusive held(loader->busy, "loader", loader);  // core/exclusive.h
  if (num_workers < 0 || num_workers > kMaxWorkers)
    ctorch::fail_arg("num_workers", "must be in [0, 64], got " + std::to_string(num_workers));
  if (prefetch_factor < 1) ctorch::fail_arg("prefetch_factor", "must be >= 1, got " + std::to_string(prefetch_factor));
  loader->stop_workers();
  loader->workers = num_workers;
  loader->prefetch = prefetch_factor;
  loader->start(loader->epoch);
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_data_loader_set_pin_memory(ctorch_data_loader loader, int pin_memory) {
  CTORCH_TRY
  ctorch::require_ptr(loader, "loader");
  ctorch::Exclusive held(loader->busy, "loader", loader);  // core/exclusive.h
  if (pin_memory && !at::hasCUDA())
    ctorch::fail(CTORCH_NOT_IMPLEMENTED,
                 "argument 'pin_memory': pinned memory needs CUDA, and this libtorch build or machine has none");
  loader->stop_workers();
  loader->pin = pin_memory != 0;
  loader->start(loader->epoch);
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_data_loader_set_distributed(ctorch_data_loader loader, int64_t rank,
                                                            int64_t world_size, int drop_last) {
  CTORCH_TRY
  ctorch::require_ptr(loader, "loader");
  ctorch::Exclusive held(loader->busy, "loader", loader);  // core/exclusive.h
  if (world_size < 1) ctorch::fail_arg("world_size", "must be >= 1, got " + std::to_string(world_size));
  if (rank < 0 || rank >= world_size)
    ctorch::fail_arg("rank", "must be in [0, " + std::to_string(world_size - 1) + "], got " + std::to_string(rank));
  loader->stop_workers();
  loader->dist = true;
  loader->rank = rank;
  loader->world = world_size;
  loader->dist_drop_last = drop_last != 0;
  loader->start(loader->epoch);
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_data_loader_set_transform(ctorch_data_loader loader, ctorch_transform t) {
  CTORCH_TRY
  ctorch::require_ptr(loader, "loader");
  ctorch::Exclusive held(loader->busy, "loader", loader);  // core/exclusive.h
  if (t) ctorch::check_handle(t, "t");
  loader->stop_workers();
  loader->transform.reset(t);
  loader->start(loader->epoch);
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_data_loader_set_transform_fn(ctorch_data_loader loader, ctorch_data_transform_fn fn,
                                                             void *user_data, void (*free_user_data)(void *)) {
  CTORCH_TRY
  ctorch::require_ptr(loader, "loader");
  ctorch::Exclusive held(loader->busy, "loader", loader);  // core/exclusive.h
  // From here on free_user_data runs exactly once, also if this call fails.
  std::unique_ptr<TransformFn> f;
  try {
    f.reset(new TransformFn{fn, user_data, free_user_data});
  } catch (...) {
    if (free_user_data) free_user_data(user_data);
    throw;
  }
  if (!fn) f.reset();  // removing: user_data is released now
  loader->stop_workers();
  loader->transform_fn = std::move(f);
  loader->start(loader->epoch);
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_data_loader_start_epoch(ctorch_data_loader loader, uint64_t epoch) {
  CTORCH_TRY
  ctorch::require_ptr(loader, "loader");
  ctorch::Exclusive held(loader->busy, "loader", loader);  // core/exclusive.h
  loader->start(epoch);
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_data_loader_next(int *has_batch, ctorch_tensor *data, ctorch_tensor *targets,
                                                 ctorch_data_loader loader) {
  CTORCH_TRY
  ctorch::require_out(has_batch, "has_batch");
  ctorch::require_out(data, "data");
  *has_batch = 0;
  *data = nullptr;
  if (targets) *targets = nullptr;
  ctorch::require_ptr(loader, "loader");
  ctorch::Exclusive held(loader->busy, "loader", loader);  // core/exclusive.h
  if (loader->ds->has_targets() == 1 && !targets) ctorch::fail_arg("targets", "is NULL but the loader has targets");
  if (loader->next >= loader->nbatches) return CTORCH_OK;
  at::Tensor x, y;
  loader->take_next(&x, &y);
  if (y.defined() && !targets) ctorch::fail_arg("targets", "is NULL but the dataset's items have targets");
  *data = ctorch::give(std::move(x));
  if (targets) *targets = ctorch::give(std::move(y));
  *has_batch = 1;
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_data_loader_num_batches(int64_t *out, ctorch_data_loader loader) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  ctorch::require_ptr(loader, "loader");
  ctorch::Exclusive held(loader->busy, "loader", loader);  // core/exclusive.h
  *out = loader->nbatches;
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_data_loader_size(int64_t *out, ctorch_data_loader loader) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  ctorch::require_ptr(loader, "loader");
  ctorch::Exclusive held(loader->busy, "loader", loader);  // core/exclusive.h
  *out = loader->n;
  CTORCH_CATCH
}

// The position a training state records (ctorch_train_state_save): the
// epoch and the batches handed out; seeking replays the epoch's order (a
// function of seed and epoch) and skips, making nothing.
CTORCH_API ctorch_status ctorch_data_loader_position(uint64_t *epoch, int64_t *batch, ctorch_data_loader loader) {
  CTORCH_TRY
  ctorch::require_ptr(loader, "loader");
  ctorch::Exclusive held(loader->busy, "loader", loader);  // core/exclusive.h
  if (epoch) *epoch = loader->epoch;
  if (batch) *batch = loader->next;
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_data_loader_seek(ctorch_data_loader loader, uint64_t epoch, int64_t batch) {
  CTORCH_TRY
  ctorch::require_ptr(loader, "loader");
  ctorch::Exclusive held(loader->busy, "loader", loader);  // core/exclusive.h
  if (batch < 0) ctorch::fail_arg("batch", "must be >= 0, got " + std::to_string(batch));
  loader->start(epoch);
  if (batch > loader->nbatches)
    ctorch::fail_arg("batch", "must be in 0.." + std::to_string(loader->nbatches) + ", got " + std::to_string(batch));
  loader->next = loader->taken = batch;
  CTORCH_CATCH
}

CTORCH_API void ctorch_data_loader_free(ctorch_data_loader loader) {
  if (loader && ctorch::handle_kind_of(loader) == ctorch::HandleKind::data_loader &&
      !ctorch::free_allowed(loader->busy, __func__, loader))
    return;
  if (ctorch::release_handle(loader, __func__)) delete loader;
}

}  // extern "C"
