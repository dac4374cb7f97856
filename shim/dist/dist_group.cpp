// torch.distributed process groups through the C ABI: Gloo groups made
// as Python's init_process_group of the same libtorch version makes them
// (store prefixes, store-based barrier, sequence number: each difference
// between versions is a shim in compat.h), so C and Python ranks share a
// group; ranks of another libtorch version are refused (dist_wire.cpp).
#include "dist_internal.h"
#include "dist_wire.h"
#include "core/cuda_backend.h"  // NCCL groups (ctorch::cuda_backend::nccl_process_group)

#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <atomic>
#include <cstdlib>
#include <thread>

using namespace ctorch::dist;

namespace {

// Groups this process created, as Python's group count: group n uses the
// key prefix of group name "n" (compat::group_store).
std::atomic<int> g_group_count{0};

// ---- group creation ------------------------------------------------------

c10::intrusive_ptr<c10d::ProcessGroup> make_gloo(const c10::intrusive_ptr<c10d::Store> &store, bool loopback,
                                                 int rank, int size, milliseconds timeout) {
  auto opts = c10d::ProcessGroupGloo::Options::create(timeout);
  const char *ifnames = std::getenv("GLOO_SOCKET_IFNAME");
  if (ifnames && *ifnames) {
    std::string all(ifnames);
    size_t start = 0;
    while (start <= all.size()) {
      size_t comma = all.find(',', start);
      std::string name = all.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      if (!name.empty()) opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(name));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  if (opts->devices.empty()) {
    if (loopback)
      opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
    else
      opts->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
  }
  opts->threads = static_cast<int>(opts->devices.size()) * 2;  // as torch's Python binding
  return ctorch::compat::gloo_process_group(store, rank, size,
                                            c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, size, opts));
}

// torch.distributed 1.x's _store_based_barrier: every rank adds 1, then
// polls the count until all ranks did.
void store_barrier_count(c10d::Store &store, const std::string &key, int size, milliseconds timeout) {
  store.add(key, 1);
  auto start = std::chrono::steady_clock::now();
  for (;;) {
    int64_t n = store.add(key, 0);
    if (n == size) return;
    if (std::chrono::steady_clock::now() - start > timeout)
      ctorch::fail(CTORCH_RUNTIME, "timed out after " + std::to_string(timeout.count()) + " ms in the store-based "
                   "barrier: " + std::to_string(n) + " of " + std::to_string(size) + " ranks joined");
    std::this_thread::sleep_for(milliseconds(10));
  }
}

// torch.distributed 2.x's _store_based_barrier: every rank adds 1; the one
// that sees the full count sets "<key>:last_worker", which all wait for.
void store_barrier_last_worker(c10d::Store &store, const std::string &key, int size, milliseconds timeout) {
  store.add(key, 1);
  int64_t n = store.add(key, 0);
  const std::string last = key + ":last_worker";
  if (n == size) store.set(last, std::vector<uint8_t>{'1'});
  try {
    store.wait({last}, timeout);
  } catch (const std::exception &e) {
    ctorch::fail(CTORCH_RUNTIME, "timed out after " + std::to_string(timeout.count()) + " ms in the store-based "
                 "barrier: " + std::to_string(store.add(key, 0)) + " of " + std::to_string(size) +
                 " ranks joined (" + message_of(e) + ")");
  }
}

}  // namespace

namespace ctorch {
namespace dist {

ctorch_process_group new_group(const c10::intrusive_ptr<c10d::Store> &store, bool loopback, int rank, int size,
                               milliseconds timeout, bool nccl) {
  int n = g_group_count.fetch_add(1);
  // Every rank shows its libtorch version before Gloo waits for them all.
  check_group_versions(*store, n, rank, size, timeout);
  auto pg = nccl ? ctorch::cuda_backend::nccl_process_group(compat::nccl_group_store(store, n), rank, size, timeout)
                 : make_gloo(compat::gloo_group_store(store, n), loopback, rank, size, timeout);
  switch (compat::init_barrier()) {
    case compat::InitBarrier::None: break;
    case compat::InitBarrier::Count:
      store_barrier_count(*store, "store_based_barrier_key:" + std::to_string(n + 1), size, timeout);
      break;
    case compat::InitBarrier::LastWorker:
      store_barrier_last_worker(*store, "store_based_barrier_key:" + std::to_string(n), size, timeout);
      break;
  }
  compat::start_sequence_numbers(*pg);
  auto *h = new ctorch_process_group_s;
  h->pg = std::move(pg);
  h->timeout = timeout;
  h->rank = rank;
  h->size = size;
  h->backend = nccl ? "nccl" : "gloo";
  return h;
}

}  // namespace dist
}  // namespace ctorch

namespace {

int env_int(const char *name, bool required, int dflt, int lo, int hi) {
  const char *v = std::getenv(name);
  if (!v || !*v) {
    if (required)
      ctorch::fail(CTORCH_INVALID_ARGUMENT, std::string("environment variable ") + name +
                   " is not set (set MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE as torchrun does)");
    return dflt;
  }
  char *end = nullptr;
  long x = std::strtol(v, &end, 10);
  if (*end != '\0' || x < lo || x > hi)
    ctorch::fail(CTORCH_INVALID_ARGUMENT, std::string("environment variable ") + name + "='" + v +
                 "' is not an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return static_cast<int>(x);
}

// torch.distributed's _create_c10d_store as env:// calls it. Under torchrun
// (TORCHELASTIC_USE_AGENT_STORE=True) the agent already hosts a TCPStore at
// MASTER_ADDR:MASTER_PORT: every rank, rank 0 included, is its client, and
// the keys go under the prefix Python of this version uses there
// (compat::agent_store_prefix: the restart count where the agent keeps one
// store across restarts, so that a restarted group never reads the keys of
// the attempt before). Otherwise rank 0 hosts the store, shared by the
// groups of this process (multi-tenant).
c10::intrusive_ptr<c10d::Store> env_store(const std::string &addr, int port, int rank, int world,
                                          milliseconds timeout) {
  const char *agent = std::getenv("TORCHELASTIC_USE_AGENT_STORE");
  bool use_agent = agent && std::string(agent) == "True";  // Python compares with str(True)
  c10d::TCPStoreOptions o;
  o.port = static_cast<uint16_t>(port);
  o.numWorkers = static_cast<size_t>(world);
  o.timeout = timeout;
  if (use_agent) {
    const char *restart = std::getenv("TORCHELASTIC_RESTART_COUNT");
    if (!restart || !*restart)
      ctorch::fail(CTORCH_INVALID_ARGUMENT, "environment variable TORCHELASTIC_RESTART_COUNT is not set, though "
                   "TORCHELASTIC_USE_AGENT_STORE=True (torchrun sets both)");
    int attempt = env_int("TORCHELASTIC_RESTART_COUNT", true, 0, 0, 1 << 30);
    o.isServer = false;
    o.waitWorkers = true;  // a client announces itself, as Python's TCPStore(..., is_master=False)
    auto tcp = tcp_store(addr, o, nullptr,
                         "torchrun's agent hosts this store (TORCHELASTIC_USE_AGENT_STORE=True): start the ranks "
                         "with the torchrun of the PyTorch this ctorch is built against, or with the agent's "
                         "store not shared (docs/distributed.md, \"Under torchrun\")");
    std::string prefix = ctorch::compat::agent_store_prefix(attempt);
    if (prefix.empty()) return tcp;
    return c10::make_intrusive<c10d::PrefixStore>(prefix, tcp);
  }
  o.isServer = rank == 0;
  o.waitWorkers = rank != 0;  // see ctorch_store_tcp_new
  o.multiTenant = true;       // as Python's _create_c10d_store
  return tcp_store(addr, o, nullptr);
}

}  // namespace

extern "C" {

// ---- process groups --------------------------------------------------------

CTORCH_API ctorch_status ctorch_process_group_new_gloo(ctorch_process_group *out, ctorch_store store, int rank,
                                                       int size, int64_t timeout_ms) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  ctorch::check_handle(store, "store");
  if (!store->store) ctorch::fail_arg("store", "store handle is NULL");
  if (size < 1) ctorch::fail_arg("size", "must be >= 1");
  if (rank < 0 || rank >= size)
    ctorch::fail_arg("rank", std::to_string(rank) + " is outside [0, " + std::to_string(size) + ")");
  *out = new_group(store->store, store->loopback, rank, size, to_timeout(timeout_ms, kGroupDefaultTimeout));
  (*out)->file = store->file;
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_process_group_new_nccl(ctorch_process_group *out, ctorch_store store, int rank,
                                                       int size, int64_t timeout_ms) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  ctorch::check_handle(store, "store");
  if (!store->store) ctorch::fail_arg("store", "store handle is NULL");
  if (size < 1) ctorch::fail_arg("size", "must be >= 1");
  if (rank < 0 || rank >= size)
    ctorch::fail_arg("rank", std::to_string(rank) + " is outside [0, " + std::to_string(size) + ")");
  std::string why = ctorch::nccl_unavailable_reason();
  if (!why.empty()) ctorch::fail(CTORCH_NOT_IMPLEMENTED, "backend 'nccl' is not available: " + why);
  *out = new_group(store->store, store->loopback, rank, size, to_timeout(timeout_ms, kGroupDefaultTimeout), true);
  (*out)->file = store->file;
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_dist_nccl_available(int *out) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = ctorch::nccl_unavailable_reason().empty() ? 1 : 0;
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_dist_init_from_env(ctorch_process_group *out, int *local_rank, const char *backend,
                                                   int64_t timeout_ms) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  if (local_rank) *local_rank = -1;
  std::string b = backend ? backend : "gloo";
  if (b != "gloo" && b != "nccl") ctorch::fail_arg("backend", "'" + b + "' is not a known backend (use \"gloo\" or \"nccl\")");
  std::string why = b == "nccl" ? ctorch::nccl_unavailable_reason() : std::string();
  if (!why.empty()) ctorch::fail(CTORCH_NOT_IMPLEMENTED, "backend 'nccl' is not available: " + why);
  const char *addr = std::getenv("MASTER_ADDR");
  if (!addr || !*addr)
    ctorch::fail(CTORCH_INVALID_ARGUMENT, "environment variable MASTER_ADDR is not set (set MASTER_ADDR, "
                 "MASTER_PORT, RANK, WORLD_SIZE as torchrun does)");
  int port = env_int("MASTER_PORT", true, 0, 1, 65535);
  int world = env_int("WORLD_SIZE", true, 0, 1, 1 << 20);
  int rank = env_int("RANK", true, 0, 0, world - 1);
  int lworld = env_int("LOCAL_WORLD_SIZE", false, 1 << 20, 1, world);
  int lrank = env_int("LOCAL_RANK", false, -1, 0, lworld - 1);
  milliseconds timeout = to_timeout(timeout_ms, kGroupDefaultTimeout);
  auto store = c10::make_intrusive<c10d::PrefixStore>("default_pg", env_store(addr, port, rank, world, timeout));
  *out = new_group(store, is_loopback(addr), rank, world, timeout, b == "nccl");
  if (local_rank) *local_rank = lrank;
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_process_group_rank(int *out, ctorch_process_group pg) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = HeldPg(pg).g.rank;
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_process_group_size(int *out, ctorch_process_group pg) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = HeldPg(pg).g.size;
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_process_group_backend(const char **out, ctorch_process_group pg) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = HeldPg(pg).g.backend;
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_process_group_sequence_number(uint64_t *out, ctorch_process_group pg) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = HeldPg(pg).g.pg->getSequenceNumberForGroup();
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_process_group_destroy(ctorch_process_group pg) {
  CTORCH_TRY
  ctorch::check_handle(pg, "pg");
  ctorch::Exclusive hold(pg->busy, "pg", pg);  // not under another thread's collective
  pg->pg.reset();
  CTORCH_CATCH
}

CTORCH_API void ctorch_process_group_free(ctorch_process_group pg) {
  // A handle in use by another thread's call is not freed (core/exclusive.h).
  if (pg && ctorch::handle_kind_of(pg) == ctorch::HandleKind::process_group &&
      !ctorch::free_allowed(pg->busy, __func__, pg))
    return;
  if (!ctorch::release_handle(pg, __func__)) return;
  try {
    delete pg;
  } catch (...) {
  }
}


}  // extern "C"
