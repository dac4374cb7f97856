// Failure ids, the process-wide log of the last kLogSize failures, each
// thread's own last kPerThread failures, and error tickets: how a binding
// whose calls run on worker threads gets the message of a call that failed
// there (the thread-local last error is per thread).
//
// Why each thread keeps its own failures too: a ticket is read after the
// call returns, by a second call. On a shared log alone, a thread preempted
// between the two while other threads failed kLogSize times found its entry
// replaced ("(no message)" for 1 to 4 of 24,000 failures of 8 threads on 2
// cores). A thread's own entries are replaced only by that thread's next
// failures, so a ticket read by the thread that failed, or soon after by
// another, is found whatever other threads do.
// Only failing calls come here, so a mutex is cheap enough.
#include "error_log.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#include "core/internal.h"

namespace {

constexpr size_t kLogSize = 1024;  // failures kept process-wide (tickets span far more)
constexpr size_t kPerThread = 32;  // and each thread's last ones
// Bytes kept of one failure's message: the logs hold at most (kLogSize +
// kPerThread * threads) * kMaxLogged bytes of text, whatever callers'
// messages grow to (one string per failure, shared by both logs).
constexpr size_t kMaxLogged = 4096;
const char kTruncated[] = "... (truncated)";
constexpr uint64_t kMaxTicket = 0x7FFFFF;  // 23 bits above the 8 of the status

struct Entry {
  uint64_t id = 0;
  ctorch_status status = CTORCH_OK;
  std::shared_ptr<const std::string> msg;
};

// One thread's last failures, registered while the thread lives.
struct ThreadLog {
  Entry e[kPerThread];
};

// Never destroyed: threads end (and unregister) after this library's statics.
struct Logs {
  std::mutex mu;
  Entry all[kLogSize];
  std::vector<ThreadLog *> threads;
};
Logs &logs() {
  static Logs *l = new Logs;
  return *l;
}

std::atomic<uint64_t> g_next_log_id{1};
std::atomic<bool> g_tickets{false};
thread_local uint64_t t_last_id = 0;

// This thread's log: made at its first failure, unregistered when the
// thread ends. Plain __thread words (never destroyed), so a failure recorded
// after that, by another thread_local's destructor, finds t_log_ended and
// goes to the shared log only.
__thread ThreadLog *t_log = nullptr;
__thread bool t_log_ended = false;
struct ThreadLogOwner {
  ~ThreadLogOwner() {
    t_log_ended = true;
    if (!t_log) return;
    Logs &l = logs();
    {
      std::lock_guard<std::mutex> g(l.mu);
      auto at = std::find(l.threads.begin(), l.threads.end(), t_log);
      if (at != l.threads.end()) l.threads.erase(at);
    }
    delete t_log;
    t_log = nullptr;
  }
};

// Tickets run 1..kMaxTicket and wrap; ticket 0 means "no ticket".
uint64_t ticket_of(uint64_t id) { return (id - 1) % kMaxTicket + 1; }

// The entry of failure id (want_ticket: of ticket id), newest first, or
// NULL. l.mu held. A ticket names several ids kMaxTicket apart; the newest
// is the call being asked about (an idle thread's log may hold an old one).
const Entry *find_entry(Logs &l, uint64_t id, bool want_ticket) {
  const Entry *best = nullptr;
  auto consider = [&](const Entry &e) {
    if (e.id && (want_ticket ? ticket_of(e.id) == id : e.id == id) && (!best || e.id > best->id)) best = &e;
  };
  if (!want_ticket) {
    consider(l.all[id % kLogSize]);
    if (best) return best;
  } else {
    for (const Entry &e : l.all) consider(e);
  }
  for (const ThreadLog *t : l.threads)
    for (const Entry &e : t->e) consider(e);
  return best;
}

}  // namespace

namespace ctorch {
namespace error_log {

uint64_t record(ctorch_status status, const std::string &msg) noexcept {
  uint64_t id = g_next_log_id.fetch_add(1, std::memory_order_relaxed);
  t_last_id = id;
  std::shared_ptr<const std::string> text;
  try {
    // Cut to kMaxLogged bytes.
    text = std::make_shared<const std::string>(
        msg.size() <= kMaxLogged ? msg : msg.substr(0, kMaxLogged - (sizeof kTruncated - 1)) + kTruncated);
  } catch (...) {
    // Out of memory: the id is kept with no message.
  }
  Logs &l = logs();
  std::lock_guard<std::mutex> lock(l.mu);
  try {
    if (!t_log && !t_log_ended) {
      static thread_local ThreadLogOwner owner;  // its destructor unregisters t_log
      (void)&owner;
      std::unique_ptr<ThreadLog> mine(new ThreadLog);
      l.threads.push_back(mine.get());
      t_log = mine.release();
    }
  } catch (...) {
    // Out of memory: this failure is in the shared log only.
  }
  if (t_log) t_log->e[id % kPerThread] = Entry{id, status, text};
  // A thread that took its id before a newer one's writer took the lock
  // leaves the newer entry in place (its own log has it).
  Entry &e = l.all[id % kLogSize];
  if (e.id < id) e = Entry{id, status, std::move(text)};
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
    Logs &l = logs();
    std::lock_guard<std::mutex> lock(l.mu);
    // A ticket, or a small id whose ticket is itself: the newest failure
    // with that ticket.
    if (const Entry *e = find_entry(l, id, id <= kMaxTicket)) {
      found = true, st = e->status;
      if (e->msg) msg = *e->msg;
    }
  }
  if (!found)
    ctorch::fail(CTORCH_INDEX, "failure " + std::to_string(id) + " is not in the log (it keeps the last " +
                                   std::to_string(kLogSize) + " failures and each live thread's last " +
                                   std::to_string(kPerThread) + ")");
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
