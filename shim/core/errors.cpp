// Thread-local last error and the one place where C++ exceptions become
// ctorch_status values.
#include "internal.h"

#include <c10/util/Exception.h>

#include "exclusive.h"

#include "error_log.h"

#include <cstdio>
#include <cstring>
#include <exception>
#include <new>
#include <stdexcept>

namespace {

thread_local std::string last_error;
thread_local std::string last_error_bt;

// Sets this thread's last error, logs it (error_log.h) and returns the
// status the entry point returns (with its ticket when tickets are on).
ctorch_status record(ctorch_status status, const char *fn, const std::string &msg, const std::string &with_bt) {
  // Building the strings may itself throw bad_alloc; the callers are noexcept.
  try {
    last_error.assign(fn).append(": ").append(msg);
    last_error_bt.assign(fn).append(": ").append(with_bt);
  } catch (...) {
    last_error.clear();
    last_error_bt.clear();
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
    return record(st, fn, e.what_without_backtrace(), e.what());
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
CTORCH_API const char *ctorch_last_error_backtrace(void) { return last_error_bt.c_str(); }

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
