// Fuzzed bytes as a file path for the loaders (which take paths): an
// anonymous memfd, named through /proc/self/fd, so nothing touches the disk.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace fz {

class MemFile {
 public:
  MemFile(const void *data, size_t size) {
    fd_ = memfd_create("ctorch-fuzz", MFD_CLOEXEC);
    if (fd_ < 0) {
      std::perror("memfd_create");
      std::abort();
    }
    const char *p = static_cast<const char *>(data);
    while (size) {
      ssize_t n = write(fd_, p, size);
      if (n <= 0) {
        std::perror("write");
        std::abort();
      }
      p += n;
      size -= (size_t)n;
    }
    path_ = "/proc/self/fd/" + std::to_string(fd_);
  }
  ~MemFile() { close(fd_); }
  MemFile(const MemFile &) = delete;
  MemFile &operator=(const MemFile &) = delete;
  const char *path() const { return path_.c_str(); }

 private:
  int fd_;
  std::string path_;
};

}  // namespace fz
