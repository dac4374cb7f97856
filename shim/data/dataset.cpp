// Datasets: items (data, target) by index, from tensors, from files (CIFAR,
// MNIST through the readers) or from the host's callbacks.
#include "data/data.h"

#include <ATen/ops/cat.h>
#include <ATen/ops/index_select.h>
#include <ATen/ops/stack.h>

#include <vector>

namespace ctorch {
namespace data {

namespace {

std::string shape_text(const at::Tensor &t) {
  std::string s = "[";
  for (int64_t d = 0; d < t.dim(); ++d) s += (d ? ", " : "") + std::to_string(t.size(d));
  return s + "]";
}

void check_like(const std::string &what, const at::Tensor &t, const at::Tensor &ref, const std::string &how) {
  if (t.scalar_type() != ref.scalar_type())
    fail(CTORCH_TYPE, what + " has dtype " + std::string(c10::toString(t.scalar_type())) + how + "which has " +
                          std::string(c10::toString(ref.scalar_type())));
  if (t.sizes() != ref.sizes())
    fail(CTORCH_VALUE, what + " has shape " + shape_text(t) + how + "which has " + shape_text(ref));
  if (t.device() != ref.device())
    fail(CTORCH_VALUE, what + " is on " + t.device().str() + how + "which is on " + ref.device().str());
}

class TensorDataset : public Dataset {
 public:
  TensorDataset(at::Tensor data, at::Tensor targets) : data_(std::move(data)), targets_(std::move(targets)) {}
  int64_t len() override { return data_.size(0); }
  int has_targets() const override { return targets_.defined() ? 1 : 0; }
  void batch(const at::Tensor &idx, int64_t first, at::Tensor *x, at::Tensor *y) override {
    if (first >= 0) {  // a run of consecutive items: a view, no copy
      *x = data_.narrow(0, first, idx.numel());
      if (targets_.defined()) *y = targets_.narrow(0, first, idx.numel());
      return;
    }
    // index_select wants its index where the data is (CUDA data).
    at::Tensor i = idx.device() == data_.device() ? idx : idx.to(data_.device());
    *x = at::index_select(data_, 0, i);
    if (targets_.defined()) {
      at::Tensor j = idx.device() == targets_.device() ? idx : idx.to(targets_.device());
      *y = at::index_select(targets_, 0, j);
    }
  }

 private:
  at::Tensor data_, targets_;
};

struct UserData {
  void *data = nullptr;
  void (*release)(void *) = nullptr;
  ~UserData() {
    if (release) release(data);
  }
};

class CallbackDataset : public Dataset {
 public:
  CallbackDataset(ctorch_dataset_len_fn len, ctorch_dataset_get_item_fn get, std::unique_ptr<UserData> ud)
      : len_(len), get_(get), ud_(std::move(ud)) {}

  int64_t len() override {
    int64_t n = -1;
    std::string before = ctorch_last_error();
    ctorch_status st = len_(ud_->data, &n);
    if (st != CTORCH_OK)
      fail(callback_status(st),
           "dataset len callback returned " + std::string(ctorch_status_name(st)) + errors_since(before));
    if (n < 0) fail(CTORCH_VALUE, "dataset len callback gave a negative length " + std::to_string(n));
    return n;
  }

  void batch(const at::Tensor &idx, int64_t, at::Tensor *x, at::Tensor *y) override {
    std::vector<at::Tensor> xs, ys;
    items(idx, &xs, &ys);
    if (!xs.empty()) collate(xs, ys, idx, x, y);
  }

  void items(const at::Tensor &idx, std::vector<at::Tensor> *xs, std::vector<at::Tensor> *ys) override {
    const int64_t m = idx.numel();
    const int64_t *ip = idx.data_ptr<int64_t>();
    xs->reserve(m);
    ys->reserve(m);
    for (int64_t k = 0; k < m; ++k) {
      const int64_t i = ip[k];
      ctorch_tensor dh = nullptr, th = nullptr;
      std::string before = ctorch_last_error();
      ctorch_status st = get_(ud_->data, i, &dh, &th);
      // Whatever was written is ctorch's now, whatever the status.
      at::Tensor d = take(dh), t = take(th);
      const std::string item = "dataset item " + std::to_string(i);
      if (st != CTORCH_OK)
        fail(callback_status(st), item + ": get_item returned " + std::string(ctorch_status_name(st)) +
                                      errors_since(before));
      if (!d.defined()) fail(CTORCH_VALUE, item + ": get_item returned CTORCH_OK but wrote no data");
      xs->push_back(std::move(d));
      ys->push_back(std::move(t));
    }
  }

 private:
  ctorch_dataset_len_fn len_;
  ctorch_dataset_get_item_fn get_;
  std::unique_ptr<UserData> ud_;
};

}  // namespace

ctorch_status callback_status(ctorch_status st) { return st > CTORCH_OK && st <= CTORCH_UNKNOWN ? st : CTORCH_UNKNOWN; }

std::string errors_since(const std::string &before) {
  std::string after = ctorch_last_error();
  return after != before ? ": " + after : std::string();
}

void Dataset::items(const at::Tensor &idx, std::vector<at::Tensor> *xs, std::vector<at::Tensor> *ys) {
  at::Tensor x, y;
  batch(idx, -1, &x, &y);
  *xs = x.unbind(0);
  if (y.defined()) *ys = y.unbind(0);
}

void collate(const std::vector<at::Tensor> &xs, const std::vector<at::Tensor> &ys, const at::Tensor &idx,
             at::Tensor *x, at::Tensor *y) {
  const int64_t *ip = idx.data_ptr<int64_t>();
  const bool targets = !ys.empty();  // entries, defined or not, to check
  for (size_t k = 1; k < xs.size(); ++k) {
    const std::string item = "dataset item " + std::to_string(ip[k]);
    const std::string ref = " unlike dataset item " + std::to_string(ip[0]) + ", the first of its batch, ";
    check_like(item + ": data", xs[k], xs[0], ref);
    if (targets && ys[k].defined() != ys[0].defined())
      fail(CTORCH_VALUE, item + ": " + (ys[k].defined() ? "has a target" : "has no target") +
                             ref.substr(0, ref.size() - 2) + (ys[k].defined() ? " (which has none)" : " (which has one)"));
    if (targets && ys[k].defined()) check_like(item + ": target", ys[k], ys[0], ref);
  }
  *x = at::stack(xs, 0);
  if (targets && ys[0].defined()) *y = at::stack(ys, 0);
}

std::shared_ptr<Dataset> tensor_dataset(at::Tensor data, at::Tensor targets) {
  return std::make_shared<TensorDataset>(std::move(data), std::move(targets));
}

std::shared_ptr<Dataset> tensor_dataset(ctorch_tensor data, ctorch_tensor targets) {
  ctorch::require_tensor(data, "data");
  at::Tensor x = ctorch::own(data), y;
  if (x.dim() < 1) ctorch::fail_arg("data", "must have at least one dimension (examples along dim 0)");
  if (targets) {
    y = ctorch::own(targets);
    if (y.dim() < 1 || y.size(0) != x.size(0))
      ctorch::fail_arg("targets", "must have " + std::to_string(x.size(0)) + " entries along dim 0 like data");
  }
  return tensor_dataset(std::move(x), std::move(y));
}

}  // namespace data
}  // namespace ctorch

using namespace ctorch::data;

extern "C" {

CTORCH_API ctorch_status ctorch_dataset_from_tensors(ctorch_dataset *out, ctorch_tensor data, ctorch_tensor targets) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  *out = new ctorch_dataset_s{tensor_dataset(data, targets)};
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_dataset_cifar(ctorch_dataset *out, const char *const *paths, size_t n_paths,
                                              ctorch_data_cifar_kind kind) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  ctorch::require_list(paths, n_paths, "paths");
  if (n_paths == 0) ctorch::fail_arg("n_paths", "must be >= 1");
  for (size_t i = 0; i < n_paths; ++i)
    if (!paths[i]) ctorch::fail_arg("paths", "entry " + std::to_string(i) + " is NULL");
  check_cifar_kind(kind, "kind");
  std::vector<at::Tensor> ims, lbs;
  for (size_t i = 0; i < n_paths; ++i) {
    at::Tensor im, lb;
    read_cifar(&im, &lb, paths[i], kind);
    ims.push_back(std::move(im));
    lbs.push_back(std::move(lb));
  }
  at::Tensor x = n_paths == 1 ? ims[0] : at::cat(ims, 0);
  at::Tensor y = n_paths == 1 ? lbs[0] : at::cat(lbs, 0);
  *out = new ctorch_dataset_s{tensor_dataset(std::move(x), std::move(y))};
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_dataset_mnist_dir(ctorch_dataset *out, const char *dir, int train) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  ctorch::require_ptr(dir, "dir");
  at::Tensor im, lb;
  mnist_dir(&im, &lb, dir, train != 0);
  *out = new ctorch_dataset_s{tensor_dataset(std::move(im), std::move(lb))};
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_dataset_from_callbacks(ctorch_dataset *out, ctorch_dataset_len_fn len,
                                                       ctorch_dataset_get_item_fn get_item, void *user_data,
                                                       void (*free_user_data)(void *)) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  ctorch::require_ptr(len, "len");
  ctorch::require_ptr(get_item, "get_item");
  // From here on free_user_data runs exactly once, also if this call fails.
  std::unique_ptr<UserData> ud;
  try {
    ud.reset(new UserData{user_data, free_user_data});
  } catch (...) {
    if (free_user_data) free_user_data(user_data);
    throw;
  }
  *out = new ctorch_dataset_s{std::make_shared<CallbackDataset>(len, get_item, std::move(ud))};
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_dataset_len(int64_t *out, ctorch_dataset ds) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  ctorch::require_ptr(ds, "ds");
  *out = ds->ds->len();
  CTORCH_CATCH
}

CTORCH_API void ctorch_dataset_free(ctorch_dataset ds) {
  if (ctorch::release_handle(ds, __func__)) delete ds;
}

}  // extern "C"
