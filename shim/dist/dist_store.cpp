// torch.distributed stores through the C ABI: TCPStore, FileStore,
// PrefixStore and their key-value calls. A TCPStore client first asks the
// server which wire protocol it speaks (dist_wire.cpp): a server of another
// libtorch generation is refused with a status naming both, where libtorch's
// own client would retry until its timeout (2.x) or block for ever (1.13).
#include "dist_internal.h"
#include "dist_wire.h"

#include <torch/csrc/distributed/c10d/FileStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <vector>

using namespace ctorch::dist;

namespace {

c10d::Store &live_store(ctorch_store s, const char *arg) {
  ctorch::check_handle(s, arg);
  if (!s->store) ctorch::fail_arg(arg, "store handle is NULL");
  return *s->store;
}

std::string require_key(const char *key, const char *arg) {
  if (!key) ctorch::fail_arg(arg, "key is NULL");
  return key;
}

// Whether ~FileStore's append to `path` can succeed: reserves the bytes it
// appends (a key "cleanup/", a count and their lengths: under 64; 512 asked)
// past the end of the file without changing its size. That takes no new
// block where the file's last one has room, one otherwise. A file that is
// gone needs no room (~FileStore returns early); a file system without
// fallocate is asked for its free space instead.
bool room_for_exit_record(const std::string &path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return true;
  struct stat st {};
  bool ok = true;
  if (::fstat(fd, &st) == 0 && ::fallocate(fd, FALLOC_FL_KEEP_SIZE, st.st_size, 512) != 0) {
    if (errno == ENOSPC || errno == EDQUOT) {
      ok = false;
    } else {
      struct statvfs vfs {};
      ok = ::fstatvfs(fd, &vfs) != 0 || uint64_t(vfs.f_bavail) * vfs.f_frsize >= 65536;
    }
  }
  ::close(fd);
  return ok;
}

}  // namespace

namespace ctorch {
namespace dist {

FileStoreKeeper::~FileStoreKeeper() {
  // Someone else (a Gloo group being torn down) still holds the store: the
  // write happens there, and nothing here can help it.
  if (store.use_count() != 1 || room_for_exit_record(path)) return;
  // Deliberately never destroyed (see dist_internal.h); kept reachable, so
  // that leak checkers see a store kept, not lost.
  static std::mutex mu;
  static auto *kept = new std::vector<c10d::Store *>;
  try {
    std::lock_guard<std::mutex> lock(mu);
    kept->push_back(store.get());
  } catch (...) {  // no memory for the entry: kept all the same, unlisted
  }
  store.release();
  try {
    TORCH_WARN("ctorch: the FileStore at '", path,
               "' cannot record this process's exit (no room on its file system); "
               "left as it is, as a crashed rank would leave it");
  } catch (...) {
  }
}

c10::intrusive_ptr<c10d::Store> tcp_store(const std::string &host, const c10d::TCPStoreOptions &o, int *port,
                                          const std::string &advice) {
  if (!o.isServer) {
    const StoreWire mine = compat::kStoreWireValidates ? StoreWire::Validated : StoreWire::Unvalidated;
    StoreWire theirs = probe_store_wire(host, o.port, o.timeout);
    if (theirs != mine)
      fail(CTORCH_RUNTIME, "the TCPStore server at " + host + ":" + std::to_string(o.port) + " speaks " +
           wire_name(theirs) + " wire protocol; this ctorch is built against " + this_libtorch() +
           ", whose TCPStore speaks " + wire_name(mine) + ": every rank of a group must run the "
           "same PyTorch version" + (advice.empty() ? "" : "; " + advice));
  }
  auto s = c10::make_intrusive<c10d::TCPStore>(host, o);
  if (port) *port = s->getPort();
  return s;
}

}  // namespace dist
}  // namespace ctorch

extern "C" {

CTORCH_API ctorch_status ctorch_store_tcp_new(ctorch_store *out, const char *host, int port, int world_size,
                                              int is_master, int64_t timeout_ms) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  if (!host || !*host) ctorch::fail_arg("host", "NULL or empty");
  if (port < 0 || port > 65535) ctorch::fail_arg("port", std::to_string(port) + " is not in [0, 65535]");
  if (port == 0 && !is_master) ctorch::fail_arg("port", "0 (let the OS pick) is only valid for the master");
  c10d::TCPStoreOptions o;
  o.port = static_cast<uint16_t>(port);
  o.isServer = is_master != 0;
  if (world_size > 0) o.numWorkers = static_cast<size_t>(world_size);
  // A client announces itself under the "init/" key (a Python master waits
  // for world_size of those in its constructor); a ctorch master does not
  // wait, so that it can publish a port picked by the OS first.
  o.waitWorkers = !is_master;
  o.timeout = to_timeout(timeout_ms, kStoreDefaultTimeout);
  // A multi-tenant server is shared per port within a process; with port 0
  // every master must get its own.
  o.multiTenant = port != 0;
  int got_port = -1;
  auto s = tcp_store(host, o, &got_port);
  auto *h = new ctorch_store_s;
  h->port = got_port;
  h->store = std::move(s);
  h->loopback = is_loopback(host);
  *out = h;
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_store_file_new(ctorch_store *out, const char *path, int world_size,
                                               int64_t timeout_ms) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  if (!path || !*path) ctorch::fail_arg("path", "NULL or empty");
  if (world_size <= 0) ctorch::fail_arg("world_size", "must be >= 1");
  auto s = c10::make_intrusive<c10d::FileStore>(std::string(path), world_size);
  s->setTimeout(to_timeout(timeout_ms, kStoreDefaultTimeout));
  auto *h = new ctorch_store_s;
  h->file = std::make_shared<FileStoreKeeper>(s, path);
  h->store = std::move(s);
  *out = h;
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_store_prefix_new(ctorch_store *out, ctorch_store base, const char *prefix) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  live_store(base, "base");
  if (!prefix) ctorch::fail_arg("prefix", "NULL");
  auto *h = new ctorch_store_s;
  h->store = c10::make_intrusive<c10d::PrefixStore>(std::string(prefix), base->store);
  h->file = base->file;
  h->loopback = base->loopback;
  *out = h;
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_store_port(int *out, ctorch_store store) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  live_store(store, "store");
  if (store->port < 0) ctorch::fail_arg("store", "is not a TCPStore");
  *out = store->port;
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_store_set(ctorch_store store, const char *key, const void *value, size_t len) {
  CTORCH_TRY
  auto &s = live_store(store, "store");
  std::string k = require_key(key, "key");
  ctorch::require_list(static_cast<const uint8_t *>(value), len, "value");
  const auto *b = static_cast<const uint8_t *>(value);
  s.set(k, std::vector<uint8_t>(b, b + len));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_store_get(size_t *out_len, void *buf, size_t cap, ctorch_store store,
                                          const char *key) {
  CTORCH_TRY
  ctorch::require_out(out_len, "out_len");
  ctorch::require_list(static_cast<uint8_t *>(buf), cap, "buf");
  auto &s = live_store(store, "store");
  std::vector<uint8_t> v = s.get(require_key(key, "key"));
  if (cap) std::memcpy(buf, v.data(), std::min(cap, v.size()));
  *out_len = v.size();
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_store_add(int64_t *out, ctorch_store store, const char *key, int64_t delta) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  auto &s = live_store(store, "store");
  *out = s.add(require_key(key, "key"), delta);
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_store_wait(ctorch_store store, const char *const *keys, size_t n,
                                           int64_t timeout_ms) {
  CTORCH_TRY
  auto &s = live_store(store, "store");
  ctorch::require_list(keys, n, "keys");
  std::vector<std::string> ks;
  for (size_t i = 0; i < n; ++i) {
    if (!keys[i]) ctorch::fail_arg("keys", "element " + std::to_string(i) + " is NULL");
    ks.emplace_back(keys[i]);
  }
  s.wait(ks, to_timeout(timeout_ms, s.getTimeout()));
  CTORCH_CATCH
}

CTORCH_API void ctorch_store_free(ctorch_store store) {
  if (!ctorch::release_handle(store, __func__)) return;
  try {
    delete store;
  } catch (...) {
  }
}

}  // extern "C"
