// Shared inside data/: the file readers (data.cpp, cifar.cpp), datasets
// (dataset.cpp) and the loader (loader.cpp).
#pragma once

#include "core/internal.h"

#include <cstdint>
#include <memory>
#include <string>

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
  // Whether batches have targets, when known before the first batch (a
  // host-defined dataset only tells by its items): 1 yes, 0 no, -1 unknown.
  virtual int has_targets() const { return -1; }
};

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
