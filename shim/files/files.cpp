#include "files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "core/internal.h"

namespace ctorch {
namespace {

[[noreturn]] void refuse(const char *path, const std::string &why) {
  fail(CTORCH_IO, std::string("'") + path + "' " + why);
}

const char *kind_of(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISSOCK(m)) return "a socket";
  return "not a regular file";
}

}  // namespace

ReadFile::ReadFile(const char *path) {
  struct stat sb;
  if (::stat(path, &sb) != 0) refuse(path, std::string("cannot be opened: ") + std::strerror(errno));
  if (!S_ISREG(sb.st_mode)) refuse(path, std::string("is not a regular file (it is ") + kind_of(sb.st_mode) + ")");
  int fd;
  do fd = ::open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  while (fd < 0 && errno == EINTR);
  if (fd < 0) refuse(path, std::string("cannot be opened: ") + std::strerror(errno));
  if (::fstat(fd, &sb) != 0) {
    int e = errno;
    ::close(fd);
    refuse(path, std::string("cannot be stat'ed: ") + std::strerror(e));
  }
  if (!S_ISREG(sb.st_mode)) {
    ::close(fd);
    refuse(path, std::string("is not a regular file (it is ") + kind_of(sb.st_mode) + ")");
  }
  // Regular files ignore O_NONBLOCK; cleared anyway for the readers after.
  int fl = ::fcntl(fd, F_GETFL);
  if (fl >= 0) ::fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
  fd_ = fd;
  size_ = static_cast<uint64_t>(sb.st_size);
}

ReadFile::~ReadFile() {
  if (fd_ >= 0) ::close(fd_);
}

void require_regular_file(const char *path) { ReadFile f(path); }

namespace {
std::atomic<uint64_t> g_load_limit{0};
}

uint64_t load_limit() { return g_load_limit.load(std::memory_order_relaxed); }

LoadBudget::LoadBudget(std::string what, uint64_t bookkeeping_max)
    : what_(std::move(what)), book_max_(bookkeeping_max), limit_(load_limit()) {}

void LoadBudget::refuse() const {
  if (book_max_ && book_ > book_max_)
    fail(CTORCH_OUT_OF_MEMORY, what_ + " would take more than " + std::to_string(book_max_) +
                                   " bytes of memory to read, more than its size allows (refused before allocating it)");
  fail(CTORCH_OUT_OF_MEMORY, what_ + " would take more than the " + std::to_string(limit_) +
                                 " bytes of memory allowed per load by ctorch_set_load_limit (refused before allocating it)");
}

}  // namespace ctorch

extern "C" {

CTORCH_API ctorch_status ctorch_set_load_limit(uint64_t *previous, uint64_t max_bytes) {
  uint64_t was = ctorch::g_load_limit.exchange(max_bytes);
  if (previous) *previous = was;
  return CTORCH_OK;
}

}  // extern "C"

namespace ctorch {

}  // namespace ctorch
