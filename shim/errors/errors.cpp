// Thread-local last error and the one place where C++ exceptions become
// ctorch_status values.
#include "core/internal.h"

#include <c10/util/Exception.h>

#include "core/exclusive.h"

#include "error_log.h"

#include <cstdio>
#include <cstring>
#include <exception>
#include <new>
#include <stdexcept>

#if CTORCH_COMPAT_EAGER_ERROR_BACKTRACE
#include <c10/util/Logging.h>
#include <cxxabi.h>
#include <dlfcn.h>
#include <execinfo.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#endif

namespace {

thread_local std::string last_error;
thread_local std::string last_error_bt;
// The last error when it was a c10::Error: its text with libtorch's
// backtrace is built by ctorch_last_error_backtrace(), the one caller that
// wants it (compat.h, CTORCH_COMPAT_EAGER_ERROR_BACKTRACE: building it cost
// 14-24 ms per failing call).
thread_local std::exception_ptr last_c10;
void keep_frames(const c10::Error &e);
void add_backtrace(std::string &out, const c10::Error &e);

// Sets this thread's last error, logs it (error_log.h) and returns the
// status the entry point returns (with its ticket when tickets are on).
// e: the c10::Error being handled, whose backtrace text waits until asked.
ctorch_status record(ctorch_status status, const char *fn, const std::string &msg, const std::string &with_bt,
                     const c10::Error *e = nullptr) {
  // Building the strings may itself throw bad_alloc; the callers are noexcept.
  try {
    last_c10 = nullptr;
    last_error.assign(fn).append(": ").append(msg);
    last_error_bt.assign(fn).append(": ");
    if (e) {
      last_c10 = std::current_exception();
      keep_frames(*e);
    } else {
      last_error_bt.append(with_bt);
    }
  } catch (...) {
    last_error.clear();
    last_error_bt.clear();
    last_c10 = nullptr;
  }
  return ctorch::error_log::returned_status(status, ctorch::error_log::record(status, last_error));
}

// libtorch reports a CPU allocation failure as a plain c10::Error.
bool is_cpu_oom(const char *msg) {
  return std::strstr(msg, "can't allocate memory") || std::strstr(msg, "not enough memory") ||
         std::strstr(msg, "out of memory");
}

}  // namespace

namespace ctorch {

void fail(ctorch_status status, const std::string &msg) { throw StatusError(status, msg); }

void fail_arg(const char *arg, const std::string &msg) {
  throw StatusError(CTORCH_INVALID_ARGUMENT, std::string("argument '") + arg + "': " + msg);
}

void fail_null(const char *arg) { fail_arg(arg, "is NULL"); }
void fail_null_handle(const char *arg) {
  fail_arg(arg, "tensor handle is NULL (undefined tensor not allowed here)");
}
void fail_null_out(const char *arg) { fail_arg(arg, "output pointer is NULL"); }
void fail_null_list(const char *arg, size_t len) {
  fail_arg(arg, "pointer is NULL but length is " + std::to_string(len));
}

static std::string busy_message(const char *arg, const void *handle) {
  char addr[32];
  std::snprintf(addr, sizeof addr, "%p", handle);
  return std::string("argument '") + arg + "': handle " + addr +
         " is in use by another thread's call (an exclusive handle: include/ctorch.h, "
         "\"Sharing one handle between threads\"); nothing was done";
}

void fail_busy(const char *arg, const void *handle) { throw StatusError(CTORCH_BUSY, busy_message(arg, handle)); }

bool free_allowed(Busy &b, const char *fn, const void *handle) noexcept {
  const void *expected = nullptr;
  // Taken for good: the handle is about to be deleted, and a call that
  // slips in after this sees BUSY instead of freed memory.
  if (b.owner.compare_exchange_strong(expected, &b, std::memory_order_acquire)) return true;
  try {
    set_error(fn, CTORCH_BUSY, busy_message("handle", handle) + " (not freed)");
  } catch (...) {
  }
  return false;
}

ctorch_status set_error(const char *fn, ctorch_status status, const std::string &msg) noexcept {
  return record(status, fn, msg, msg);
}

ctorch_status translate_exception(const char *fn) noexcept {
  try {
    throw;
  } catch (const StatusError &e) {
    return record(e.status(), fn, e.what(), e.what());
  } catch (const c10::Error &e) {
    ctorch_status st = CTORCH_RUNTIME;
    // Most derived first.
    if (dynamic_cast<const c10::IndexError *>(&e)) st = CTORCH_INDEX;
    else if (dynamic_cast<const c10::ValueError *>(&e)) st = CTORCH_VALUE;
    else if (dynamic_cast<const c10::TypeError *>(&e)) st = CTORCH_TYPE;
    else if (dynamic_cast<const c10::NotImplementedError *>(&e)) st = CTORCH_NOT_IMPLEMENTED;
    else if (dynamic_cast<const c10::OutOfMemoryError *>(&e)) st = CTORCH_OUT_OF_MEMORY;
    else if (dynamic_cast<const c10::LinAlgError *>(&e)) st = CTORCH_LINALG;
    else if (is_cpu_oom(e.what_without_backtrace())) st = CTORCH_OUT_OF_MEMORY;
    return record(st, fn, e.what_without_backtrace(), std::string(), &e);
  } catch (const std::bad_alloc &e) {
    return record(CTORCH_OUT_OF_MEMORY, fn, std::string("out of memory (") + e.what() + ")", e.what());
  } catch (const std::out_of_range &e) {
    return record(CTORCH_INDEX, fn, e.what(), e.what());
  } catch (const std::invalid_argument &e) {
    return record(CTORCH_VALUE, fn, e.what(), e.what());
  } catch (const std::exception &e) {
    return record(CTORCH_RUNTIME, fn, e.what(), e.what());
  } catch (...) {
    return record(CTORCH_UNKNOWN, fn, "unknown C++ exception", "unknown C++ exception");
  }
}

}  // namespace ctorch

extern "C" {

CTORCH_API const char *ctorch_last_error(void) { return last_error.c_str(); }
CTORCH_API const char *ctorch_last_error_backtrace(void) {
  if (last_c10) {
    try {
      std::rethrow_exception(last_c10);
    } catch (const c10::Error &e) {
      try {
        add_backtrace(last_error_bt, e);
      } catch (...) {
      }
    } catch (...) {
    }
    last_c10 = nullptr;
  }
  return last_error_bt.c_str();
}

CTORCH_API const char *ctorch_status_name(ctorch_status status) {
  switch (status) {
    case CTORCH_OK: return "CTORCH_OK";
    case CTORCH_INVALID_ARGUMENT: return "CTORCH_INVALID_ARGUMENT";
    case CTORCH_INDEX: return "CTORCH_INDEX";
    case CTORCH_VALUE: return "CTORCH_VALUE";
    case CTORCH_TYPE: return "CTORCH_TYPE";
    case CTORCH_NOT_IMPLEMENTED: return "CTORCH_NOT_IMPLEMENTED";
    case CTORCH_OUT_OF_MEMORY: return "CTORCH_OUT_OF_MEMORY";
    case CTORCH_LINALG: return "CTORCH_LINALG";
    case CTORCH_IO: return "CTORCH_IO";
    case CTORCH_RUNTIME: return "CTORCH_RUNTIME";
    case CTORCH_UNKNOWN: return "CTORCH_UNKNOWN";
    case CTORCH_BUSY: return "CTORCH_BUSY";
  }
  return "CTORCH_?";
}

}  // extern "C"

namespace {

#if CTORCH_COMPAT_EAGER_ERROR_BACKTRACE
// libtorch 1.13's fetcher symbolises every backtrace as the c10::Error is
// made. This one only captures the frames, into a ring of the process's
// last kRing errors under an id that the error's text names; the handling
// thread copies them out when it records the error (an error raised on an
// intra-op worker is rethrown on the caller's thread, so the frames are
// found by id, not kept per thread), and ctorch_last_error_backtrace()
// symbolises them in c10's format. libtorch's own what() of an error that
// never reaches ctorch shows the id line instead of the frames.
constexpr int kRing = 64, kFrames = 48;
struct Frames {
  std::uint64_t id = 0;
  int n = 0;
  void *f[kFrames];
};
std::mutex ring_mutex;
Frames ring[kRing];
std::atomic<std::uint64_t> next_id{1};
const char kMark[] = "(ctorch: C++ frames #";
thread_local Frames last_frames;

std::string capture_frames() {
  Frames c;
  c.id = next_id.fetch_add(1, std::memory_order_relaxed);
  c.n = ::backtrace(c.f, kFrames);
  {
    std::lock_guard<std::mutex> g(ring_mutex);
    ring[c.id % kRing] = c;
  }
  return kMark + std::to_string(c.id) + ", symbolised by ctorch_last_error_backtrace())\n";
}

struct InstallFetcher {
  InstallFetcher() {
    if (!std::getenv("CTORCH_EAGER_BACKTRACES")) c10::SetStackTraceFetcher(capture_frames);
  }
} install_fetcher;

std::uint64_t mark_id(const std::string &text, size_t *at) {
  *at = text.find(kMark);
  return *at == std::string::npos ? 0 : std::strtoull(text.c_str() + *at + sizeof kMark - 1, nullptr, 10);
}

void keep_frames(const c10::Error &e) {
  size_t at;
  std::uint64_t id = mark_id(e.backtrace(), &at);
  last_frames.id = 0;
  if (!id) return;
  std::lock_guard<std::mutex> g(ring_mutex);
  if (ring[id % kRing].id == id) last_frames = ring[id % kRing];
}

void add_backtrace(std::string &out, const c10::Error &e) {
  std::string text = e.what();
  size_t at;
  std::uint64_t id = mark_id(text, &at);
  if (!id) {
    out.append(text);
    return;
  }
  size_t end = text.find('\n', at);
  end = end == std::string::npos ? text.size() : end + 1;
  std::string frames;
  if (last_frames.id != id) {
    frames = "(the frames of this error are no longer kept: more than 64 errors were raised before it was recorded)\n";
  } else {
    // Frame 0 is capture_frames, 1-2 the std::function that called it.
    for (int i = 3; i < last_frames.n; ++i) {
      Dl_info info{};
      char line[64];
      const char *name = nullptr;
      char *demangled = nullptr;
      std::uintptr_t addr = reinterpret_cast<std::uintptr_t>(last_frames.f[i]);
      if (dladdr(last_frames.f[i], &info) && info.dli_sname) {
        int st = 0;
        demangled = abi::__cxa_demangle(info.dli_sname, nullptr, nullptr, &st);
        name = st == 0 && demangled ? demangled : info.dli_sname;
      }
      frames.append("frame #").append(std::to_string(i - 3)).append(": ").append(name ? name : "<unknown function>");
      std::snprintf(line, sizeof line, " + 0x%lx (0x%lx in ",
                    static_cast<unsigned long>(addr - reinterpret_cast<std::uintptr_t>(name ? info.dli_saddr : info.dli_fbase)),
                    static_cast<unsigned long>(addr));
      frames.append(line).append(info.dli_fname ? info.dli_fname : "?").append(")\n");
      std::free(demangled);
    }
  }
  out.append(text, 0, at).append(frames).append(text, end, std::string::npos);
}
#else
// libtorch 2.x keeps the frames and symbolises them when what() is asked.
void keep_frames(const c10::Error &) {}
void add_backtrace(std::string &out, const c10::Error &e) { out.append(e.what()); }
#endif

}  // namespace
