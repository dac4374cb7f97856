// Failure ids, the process-wide log of the last kLogSize failures and error
// tickets: how a binding whose calls run on worker threads gets the message
// of a call that failed there (the thread-local last error is per thread).
// Only failing calls come here, so a mutex is cheap enough.
#include "error_log.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>

#include "internal.h"

namespace {

constexpr size_t kLogSize = 1024;       // failures kept (tickets span far more)
// Bytes kept of one failure's message: the log holds at most kLogSize *
// kMaxLogged bytes of text (4 MiB), whatever callers' messages grow to.
constexpr size_t kMaxLogged = 4096;
const char kTruncated[] = "... (truncated)";
constexpr uint64_t kMaxTicket = 0x7FFFFF;  // 23 bits above the 8 of the status

struct Entry {
  uint64_t id = 0;
  ctorch_status status = CTORCH_OK;
  std::string msg;
};

std::atomic<uint64_t> g_next_log_id{1};
std::atomic<bool> g_tickets{false};
std::mutex g_mu;
Entry g_log[kLogSize];
thread_local uint64_t t_last_id = 0;

// Tickets run 1..kMaxTicket and wrap; ticket 0 means "no ticket".
uint64_t ticket_of(uint64_t id) { return (id - 1) % kMaxTicket + 1; }

}  // namespace

namespace ctorch {
namespace error_log {

uint64_t record(ctorch_status status, const std::string &msg) noexcept {
  uint64_t id = g_next_log_id.fetch_add(1, std::memory_order_relaxed);
  t_last_id = id;
  std::lock_guard<std::mutex> lock(g_mu);
  Entry &e = g_log[id % kLogSize];
  e.id = id;
  e.status = status;
  try {
    // A fresh string each time (assigning would keep an earlier, longer
    // message's capacity); cut to kMaxLogged bytes.
    std::string copy = msg.size() <= kMaxLogged ? msg
                                                : msg.substr(0, kMaxLogged - (sizeof kTruncated - 1)) + kTruncated;
    e.msg.swap(copy);
  } catch (...) {
    std::string().swap(e.msg);
  }
  return id;
}

ctorch_status returned_status(ctorch_status status, uint64_t id) noexcept {
  if (!g_tickets.load(std::memory_order_relaxed) || status == CTORCH_OK) return status;
  uint32_t code = static_cast<uint32_t>(status) & 0xFFu;
  return static_cast<ctorch_status>(code | static_cast<uint32_t>(ticket_of(id) << 8));
}

}  // namespace error_log
}  // namespace ctorch

extern "C" {

CTORCH_API uint64_t ctorch_last_error_id(void) { return t_last_id; }

namespace {
void copy_out(const std::string &s, size_t *out_len, char *buf, size_t cap) {
  if (out_len) *out_len = s.size();
  if (buf && cap) {
    size_t n = std::min(s.size(), cap - 1);
    std::memcpy(buf, s.data(), n);
    buf[n] = '\0';
  }
}
}  // namespace

CTORCH_API ctorch_status ctorch_last_error_copy(size_t *out_len, char *buf, size_t cap) {
  CTORCH_TRY
  if (!buf && cap) ctorch::fail_arg("buf", "is NULL but cap is " + std::to_string(cap));
  copy_out(ctorch_last_error(), out_len, buf, cap);
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_error_message(ctorch_status *status, size_t *out_len, char *buf, size_t cap,
                                              uint64_t id) {
  CTORCH_TRY
  if (status) *status = CTORCH_OK;
  if (out_len) *out_len = 0;
  if (buf && cap) buf[0] = '\0';
  if (!buf && cap) ctorch::fail_arg("buf", "is NULL but cap is " + std::to_string(cap));
  if (id == 0) ctorch::fail_arg("id", "0 is no failure");
  std::string msg;
  ctorch_status st = CTORCH_OK;
  bool found = false;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    if (id > kMaxTicket) {
      const Entry &e = g_log[id % kLogSize];
      found = e.id == id;
      if (found) st = e.status, msg = e.msg;
    } else {
      // A ticket (or a small id, whose ticket is itself): at most one of
      // the kLogSize consecutive ids kept has it.
      for (const Entry &e : g_log)
        if (e.id && ticket_of(e.id) == id) {
          found = true, st = e.status, msg = e.msg;
          break;
        }
    }
  }
  if (!found)
    ctorch::fail(CTORCH_INDEX, "failure " + std::to_string(id) + " is not in the log (it keeps the last " +
                                   std::to_string(kLogSize) + " failures)");
  if (status) *status = st;
  copy_out(msg, out_len, buf, cap);
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_set_error_tickets(int *previous, int on) {
  bool was = g_tickets.exchange(on != 0);
  if (previous) *previous = was ? 1 : 0;
  return CTORCH_OK;
}

}  // extern "C"
