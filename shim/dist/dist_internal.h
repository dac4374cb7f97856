// Private to the dist*.cpp files: the store and group handles and the
// helpers they share. dist_store.cpp makes stores, dist_group.cpp makes
// groups, dist.cpp runs collectives, dist_wire.cpp checks versions.
#pragma once

// libtorch_cpu (Debian 1.13.1 and PyPI 2.x alike) is compiled with
// USE_C10D_GLOO: it exports c10d::ProcessGroupGloo. The installed headers
// hide the class unless the consumer defines the same macro; it is the only
// macro they test (checked: no other #if changes a class layout in the c10d
// headers we include).
#ifndef USE_C10D_GLOO
#define USE_C10D_GLOO 1
#endif

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <memory>
#include <string>

// The c10d shims of compat.h (internal.h includes it): this header must
// come first in every dist*.cpp.
#define CTORCH_COMPAT_C10D 1
#include "compat/compat.h"  // directly: a unity build may have read it already without this section
#include "core/exclusive.h"
#include "core/internal.h"

namespace c10d {
struct TCPStoreOptions;
}

namespace ctorch {
namespace dist {

// The last reference to a FileStore, held apart from the handles' stores so
// that it drops in ctorch's code. c10d's ~FileStore appends its exit to the
// file and throws from the noexcept destructor when that write fails (a
// full disk: std::terminate, found in CI). Before the store
// goes, this reserves room past the file's end (fallocate, KEEP_SIZE) for
// that write; where none can be had, it leaves the store undestroyed (its
// file stays, as a crashed rank's would) and warns, so the process lives.
// Shared by every handle built on the store: a prefix store's, a group's.
struct FileStoreKeeper {
  FileStoreKeeper(c10::intrusive_ptr<c10d::Store> s, std::string p) : store(std::move(s)), path(std::move(p)) {}
  ~FileStoreKeeper();
  FileStoreKeeper(const FileStoreKeeper &) = delete;
  FileStoreKeeper &operator=(const FileStoreKeeper &) = delete;
  c10::intrusive_ptr<c10d::Store> store;
  std::string path;
};

}  // namespace dist
}  // namespace ctorch

struct ctorch_store_s {
  // Declared before `store`: members go in reverse order, so the keeper's
  // check runs once this handle's own reference is gone.
  std::shared_ptr<ctorch::dist::FileStoreKeeper> file;  // FileStores (and prefix stores on one) only
  c10::intrusive_ptr<c10d::Store> store;
  // Every rank runs on this host (TCPStore on a loopback address): Gloo can
  // bind 127.0.0.1 and never touch another interface.
  bool loopback = false;
  int port = -1;  // TCPStore only
  ctorch::Live<ctorch_store_s> live{this};  // last: see core/internal.h
};

struct ctorch_process_group_s {
  std::shared_ptr<ctorch::dist::FileStoreKeeper> file;  // the store's, if a FileStore: before pg (see above)
  c10::intrusive_ptr<c10d::ProcessGroup> pg;  // null once destroyed
  std::chrono::milliseconds timeout{0};
  int rank = 0;
  int size = 0;
  const char *backend = "gloo";  // static text
  // Held by every call on the handle (include/ctorch.h lists groups as
  // exclusive; core/exclusive.h): a destroy under another thread's
  // collective freed the c10d group it was using, and two threads' helpers
  // (average_gradients) interleaved their buckets' collectives, which every
  // rank must issue in one order.
  ctorch::Busy busy;
  ctorch::Live<ctorch_process_group_s> live{this};  // last: see core/internal.h
};

namespace ctorch {
namespace dist {

using std::chrono::milliseconds;

constexpr milliseconds kStoreDefaultTimeout{300 * 1000};
constexpr milliseconds kGroupDefaultTimeout{30 * 60 * 1000};  // torch's default

inline milliseconds to_timeout(int64_t ms, milliseconds dflt) { return ms > 0 ? milliseconds(ms) : dflt; }

inline bool is_loopback(const std::string &host) {
  return host == "localhost" || host.rfind("127.", 0) == 0 || host == "::1" || host == "[::1]";
}

// The c10d error text without libtorch's backtrace.
inline std::string message_of(const std::exception &e) {
  if (auto *c = dynamic_cast<const c10::Error *>(&e)) return c->what_without_backtrace();
  return e.what();
}

// A failing public call inside a helper of these files: keep its status and message.
inline void check(ctorch_status st) {
  if (st != CTORCH_OK) ctorch::fail(st, ctorch_last_error());
}

// A live group held for the call (CTORCH_BUSY while another thread's call on
// it runs; a call of a helper re-entered on this thread passes):
// `HeldPg held(pg); auto &g = held.g;`.
struct HeldPg {
  explicit HeldPg(ctorch_process_group pg) : g((check_handle(pg, "pg"), *pg)), hold(g.busy, "pg", pg) {
    if (!g.pg) fail_arg("pg", "process group was destroyed");  // after taking it: no destroy in between
  }
  ctorch_process_group_s &g;
  Exclusive hold;
};

// A TCPStore (server when o.isServer); a client first checks that the
// server speaks this libtorch's wire protocol (dist_store.cpp). *port: the
// port it listens on or connected to. `advice` ends the message refusing a
// server of another libtorch generation (what to do where the caller knows).
c10::intrusive_ptr<c10d::Store> tcp_store(const std::string &host, const c10d::TCPStoreOptions &o, int *port,
                                          const std::string &advice = "");

// The sequence of Python's init_process_group(store=...) for Gloo, on the
// store as given (dist_group.cpp).
ctorch_process_group new_group(const c10::intrusive_ptr<c10d::Store> &store, bool loopback, int rank, int size,
                               milliseconds timeout, bool nccl = false);

}  // namespace dist
}  // namespace ctorch
