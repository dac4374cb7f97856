// Opening files a loader reads: what is not a regular file (a FIFO, a
// device, a directory, a socket) is refused before anything can block on
// it or act on it. Shared by every loader (checkpoints, optimizer state,
// TorchScript, AOTInductor packages, IDX/MNIST data).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

namespace ctorch {

// An open read-only file descriptor, closed with the object.
class ReadFile {
 public:
  // Opens path for reading. Refuses with StatusError(CTORCH_IO), naming the
  // path, what cannot be opened or is not a regular file: the path is
  // stat'ed first (a device is not even opened), then opened with
  // O_NONBLOCK (opening a FIFO never waits for a writer) and the opened
  // descriptor fstat'ed again, so a file swapped in between cannot win.
  explicit ReadFile(const char *path);
  ~ReadFile();
  ReadFile(const ReadFile &) = delete;
  ReadFile &operator=(const ReadFile &) = delete;

  int fd() const { return fd_; }
  uint64_t size() const { return size_; }
  // Gives the descriptor to the caller (who then closes it).
  int release() {
    int f = fd_;
    fd_ = -1;
    return f;
  }

 private:
  int fd_ = -1;
  uint64_t size_ = 0;
};

// ReadFile's check alone (the file is opened and closed again), for readers
// that open the path themselves afterwards (libtorch's).
void require_regular_file(const char *path);

// The caller's limit on the memory one load may take, in bytes (0: none):
// ctorch_set_load_limit.
uint64_t load_limit();

// The memory one load takes, as its loader counts it (an upper bound of
// what it allocates), charged before each allocation: beyond the caller's
// limit, or beyond the loader's own bound on its bookkeeping, the load is
// refused with StatusError(CTORCH_OUT_OF_MEMORY) before allocating more.
class LoadBudget {
 public:
  // what: the file, for messages ("'path'"). bookkeeping_max: the most the
  // loader's bookkeeping (values made from the file's bytes, as opposed to
  // data the file declares) may take, 0 for no bound of its own.
  LoadBudget(std::string what, uint64_t bookkeeping_max);
  // Bookkeeping: counts against bookkeeping_max and the caller's limit.
  void charge(uint64_t bytes) {
    book_ += bytes;
    used_ += bytes;
    if ((book_max_ && book_ > book_max_) || (limit_ && used_ > limit_)) refuse();
  }
  // Data the file declares (tensor storages, records read whole): counts
  // against the caller's limit only.
  void charge_data(uint64_t bytes) {
    used_ += bytes;
    if (used_ < bytes || (limit_ && used_ > limit_)) refuse();
  }
  // Bookkeeping freed again (a temporary): the bound is on the peak.
  void release(uint64_t bytes) {
    book_ -= std::min(book_, bytes);
    used_ -= std::min(used_, bytes);
  }
  uint64_t used() const { return used_; }

 private:
  [[noreturn]] void refuse() const;
  std::string what_;
  uint64_t book_max_, limit_, book_ = 0, used_ = 0;
};

}  // namespace ctorch
