// Shared inside data/: the file readers (data.cpp, cifar.cpp), datasets
// (dataset.cpp) and the loader (loader.cpp).
#pragma once

#include "core/internal.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace ctorch {
namespace data {

// IDX / MNIST (data.cpp).
at::Tensor read_idx(const std::string &path);
void mnist_pair(at::Tensor *images, at::Tensor *labels, const std::string &images_path,
                const std::string &labels_path);
void mnist_dir(at::Tensor *images, at::Tensor *labels, const std::string &dir, bool train);
uint64_t epoch_seed(uint64_t seed, uint64_t epoch);

// CIFAR binary files (cifar.cpp). kind: a ctorch_data_cifar_kind, checked
// by the caller (arg names the argument for the message).
void check_cifar_kind(int kind, const char *arg);
void read_cifar(at::Tensor *images, at::Tensor *labels, const std::string &path, int kind);

// torch.utils.data.DistributedSampler's order (loader.cpp). CPU int64.
at::Tensor distributed_indices(int64_t n, int64_t rank, int64_t world, bool shuffle, uint64_t seed, uint64_t epoch,
                               bool drop_last);

// A dataset: a length and batches of items (dataset.cpp).
class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual int64_t len() = 0;
  // The batch of the items at idx (CPU int64, 1-D, every entry in range).
  // When `first` >= 0 the indices are first, first+1, ... (a view may do).
  // *y stays undefined for items without targets. Throws StatusError naming
  // the item at fault. Called from worker threads, several at once.
  virtual void batch(const at::Tensor &idx, int64_t first, at::Tensor *x, at::Tensor *y) = 0;
  // The items at idx, one by one, not stacked (the loader's transform stage
  // runs on them before collate()); ys stays empty without targets. The
  // default splits batch(); a host-defined dataset gives its items as the
  // callback wrote them (sizes may differ). Throws as batch().
  virtual void items(const at::Tensor &idx, std::vector<at::Tensor> *xs, std::vector<at::Tensor> *ys);
  // Whether batches have targets, when known before the first batch (a
  // host-defined dataset only tells by its items): 1 yes, 0 no, -1 unknown.
  virtual int has_targets() const { return -1; }
};

// A host callback's failure status as ctorch reports it (out of range:
// UNKNOWN), and the thread's last error when a ctorch call inside the
// callback changed it since `before` (": ..." or "").
ctorch_status callback_status(ctorch_status st);
std::string errors_since(const std::string &before);

// torch's default collate of items (a batch's, at dataset indices idx):
// stacked along a new dimension 0 once they agree in dtype, shape, device and
// having a target (TYPE or VALUE naming the item otherwise). m >= 1 items;
// ys empty (no targets) or one entry per item (undefined: none).
void collate(const std::vector<at::Tensor> &xs, const std::vector<at::Tensor> &ys, const at::Tensor &idx,
             at::Tensor *x, at::Tensor *y);

std::shared_ptr<Dataset> tensor_dataset(at::Tensor data, at::Tensor targets);
// The same over a caller's handles (borrowed; targets may be NULL), checked
// as ctorch_dataset_from_tensors and ctorch_data_loader_new check them.
std::shared_ptr<Dataset> tensor_dataset(ctorch_tensor data, ctorch_tensor targets);

}  // namespace data
}  // namespace ctorch

struct ctorch_dataset_s {
  std::shared_ptr<ctorch::data::Dataset> ds;
  ctorch::Live<ctorch_dataset_s> live{this};  // last: see core/internal.h
};
