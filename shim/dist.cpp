// torch.distributed (c10d) through the C ABI: stores, Gloo process groups,
// collectives and their work handles. The grouping helpers built on these
// live in dist_grad.cpp and use only the public functions defined here.

// libtorch_cpu 1.13.1 (Debian) is compiled with USE_C10D_GLOO: it exports
// c10d::ProcessGroupGloo. The installed headers hide the class unless the
// consumer defines the same macro; it is the only macro they test (checked:
// no other #if changes a class layout in the c10d headers we include).
#ifndef USE_C10D_GLOO
#define USE_C10D_GLOO 1
#endif

#include <torch/csrc/distributed/c10d/FileStore.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <thread>

#define CTORCH_COMPAT_C10D 1  // the Gloo/ProcessGroup shim in compat.h
#include "internal.h"

using std::chrono::milliseconds;

struct ctorch_store_s {
  c10::intrusive_ptr<c10d::Store> store;
  // Every rank runs on this host (TCPStore on a loopback address): Gloo can
  // bind 127.0.0.1 and never touch another interface.
  bool loopback = false;
  int port = -1;  // TCPStore only
};

struct ctorch_process_group_s {
  c10::intrusive_ptr<c10d::ProcessGroup> pg;  // null once destroyed
  milliseconds timeout{0};
  int rank = 0;
  int size = 0;
};

struct ctorch_work_s {
  c10::intrusive_ptr<c10d::Work> work;
  // Run once, after the communication succeeded (AVG division, copies back
  // into non-contiguous tensors, slicing for reduce_scatter).
  std::vector<std::function<void()>> finish;
  milliseconds timeout{0};
  std::string what;
  bool finished = false;
};

namespace {

constexpr milliseconds kStoreDefaultTimeout{300 * 1000};
constexpr milliseconds kGroupDefaultTimeout{30 * 60 * 1000};  // torch's default

// Groups this process created, as Python's distributed_c10d._group_count:
// group n uses key prefix "n/" and barrier key "store_based_barrier_key:n+1".
std::atomic<int> g_group_count{0};

milliseconds to_timeout(int64_t ms, milliseconds dflt) { return ms > 0 ? milliseconds(ms) : dflt; }

c10d::Store &live_store(ctorch_store s, const char *arg) {
  if (!s || !s->store) ctorch::fail_arg(arg, "store handle is NULL");
  return *s->store;
}

std::string require_key(const char *key, const char *arg) {
  if (!key) ctorch::fail_arg(arg, "key is NULL");
  return key;
}

ctorch_process_group_s &live_pg(ctorch_process_group pg) {
  if (!pg) ctorch::fail_arg("pg", "process group handle is NULL");
  if (!pg->pg) ctorch::fail_arg("pg", "process group was destroyed");
  return *pg;
}

void check_rank(int r, const ctorch_process_group_s &g, const char *arg) {
  if (r < 0 || r >= g.size)
    ctorch::fail_arg(arg, "rank " + std::to_string(r) + " is outside the group [0, " + std::to_string(g.size) + ")");
}

bool is_loopback(const std::string &host) {
  return host == "localhost" || host.rfind("127.", 0) == 0 || host == "::1" || host == "[::1]";
}

// The c10d error text without libtorch's backtrace.
std::string message_of(const std::exception &e) {
  if (auto *c = dynamic_cast<const c10::Error *>(&e)) return c->what_without_backtrace();
  return e.what();
}

// ---- reduce ops ----------------------------------------------------------

struct Reduce {
  c10d::ReduceOp op;
  bool average;
};

Reduce to_reduce(int op, const char *arg) {
  switch (op) {
    case CTORCH_REDUCE_SUM: return {c10d::ReduceOp::SUM, false};
    case CTORCH_REDUCE_AVG: return {c10d::ReduceOp::SUM, true};
    case CTORCH_REDUCE_PRODUCT: return {c10d::ReduceOp::PRODUCT, false};
    case CTORCH_REDUCE_MIN: return {c10d::ReduceOp::MIN, false};
    case CTORCH_REDUCE_MAX: return {c10d::ReduceOp::MAX, false};
    default: ctorch::fail_arg(arg, "invalid ctorch_reduce_op value " + std::to_string(op));
  }
}

// Checked on every rank before communicating, so all ranks fail alike.
void check_average_dtype(const Reduce &r, const at::Tensor &t, const char *arg) {
  if (r.average && !at::isFloatingType(t.scalar_type()) && !at::isComplexType(t.scalar_type()))
    ctorch::fail(CTORCH_TYPE, std::string("argument '") + arg + "': CTORCH_REDUCE_AVG needs a floating-point or "
                 "complex tensor, got " + std::string(c10::toString(t.scalar_type())) +
                 " (Gloo has no AVG: ctorch sums, then divides)");
}

// ---- pending operations --------------------------------------------------

struct Pending {
  c10::intrusive_ptr<c10d::Work> work;
  std::vector<std::function<void()>> finish;
  const char *what;
};

// A dense contiguous tensor for c10d. A non-contiguous one is replaced by a
// contiguous copy, copied back into the caller's tensor on completion when
// `write_back` (outputs).
at::Tensor staged(const at::Tensor &t, Pending &p, bool write_back) {
  if (t.is_contiguous()) return t;
  at::Tensor c = t.contiguous();
  if (write_back)
    p.finish.push_back([t, c]() mutable {
      at::NoGradGuard no_grad;
      t.copy_(c);
    });
  return c;
}

// First finisher: the division acts on the communicated buffer before any
// copy back into a non-contiguous caller tensor.
void add_average(Pending &p, const at::Tensor &t, int size) {
  p.finish.insert(p.finish.begin(), [t, size]() mutable {
    at::NoGradGuard no_grad;
    t.div_(size);
  });
}

// Waits for the work then runs its finishers; failures and timeouts become
// StatusErrors naming the collective.
void complete(c10d::Work &work, std::vector<std::function<void()>> &finish, bool &finished, milliseconds timeout,
              const std::string &what) {
  if (finished) return;
  try {
    work.wait(timeout);
  } catch (const std::exception &e) {
    std::string msg = message_of(e);
    bool timed_out = !work.isCompleted() || msg.find("imed out") != std::string::npos;
    if (timed_out)
      ctorch::fail(CTORCH_RUNTIME, what + " timed out after " + std::to_string(timeout.count()) +
                   " ms (a peer may have died, hung, or issued a different collective): " + msg);
    ctorch::fail(CTORCH_RUNTIME, what + " failed (a peer may have died): " + msg);
  }
  for (auto &f : finish) f();
  finish.clear();
  finished = true;
}

ctorch_status run_sync(const ctorch_process_group_s &g, Pending &&p) {
  bool finished = false;
  complete(*p.work, p.finish, finished, g.timeout, p.what);
  return CTORCH_OK;
}

ctorch_work make_work(const ctorch_process_group_s &g, Pending &&p) {
  auto *w = new ctorch_work_s;
  w->work = std::move(p.work);
  w->finish = std::move(p.finish);
  w->timeout = g.timeout;
  w->what = p.what;
  return w;
}

// ---- the collectives (start only; run_sync/make_work finish them) --------

Pending start_all_reduce(ctorch_process_group_s &g, ctorch_tensor tensor, int op) {
  ctorch::require_tensor(tensor, "tensor");
  Reduce r = to_reduce(op, "op");
  at::Tensor t = ctorch::own(tensor);
  check_average_dtype(r, t, "tensor");
  Pending p{{}, {}, "all_reduce"};
  std::vector<at::Tensor> ts{staged(t, p, true)};
  if (r.average) add_average(p, ts[0], g.size);
  c10d::AllreduceOptions o;
  o.reduceOp = r.op;
  p.work = g.pg->allreduce(ts, o);
  return p;
}

Pending start_broadcast(ctorch_process_group_s &g, ctorch_tensor tensor, int root) {
  ctorch::require_tensor(tensor, "tensor");
  check_rank(root, g, "root");
  Pending p{{}, {}, "broadcast"};
  std::vector<at::Tensor> ts{staged(ctorch::own(tensor), p, true)};
  c10d::BroadcastOptions o;
  o.rootRank = root;
  p.work = g.pg->broadcast(ts, o);
  return p;
}

void check_count(size_t n, const ctorch_process_group_s &g, const char *arg) {
  if (n != static_cast<size_t>(g.size))
    ctorch::fail_arg(arg, "needs one tensor per rank (" + std::to_string(g.size) + "), got " + std::to_string(n));
}

Pending start_all_gather(ctorch_process_group_s &g, const ctorch_tensor *outputs, size_t n, ctorch_tensor input) {
  ctorch::require_tensor(input, "input");
  auto outs = ctorch::tensor_list(outputs, n, "outputs");
  check_count(n, g, "n_outputs");
  Pending p{{}, {}, "all_gather"};
  std::vector<std::vector<at::Tensor>> o(1);
  for (auto &t : outs) o[0].push_back(staged(t, p, true));
  std::vector<at::Tensor> in{staged(ctorch::own(input), p, false)};
  p.work = g.pg->allgather(o, in);
  return p;
}

Pending start_gather(ctorch_process_group_s &g, const ctorch_tensor *outputs, size_t n, ctorch_tensor input,
                     int root) {
  ctorch::require_tensor(input, "input");
  check_rank(root, g, "root");
  auto outs = ctorch::tensor_list(outputs, n, "outputs");
  if (g.rank == root)
    check_count(n, g, "n_outputs");
  else if (n != 0)
    ctorch::fail_arg("n_outputs", "must be 0 on a non-root rank (only root " + std::to_string(root) + " receives)");
  Pending p{{}, {}, "gather"};
  std::vector<std::vector<at::Tensor>> o;
  if (g.rank == root) {
    o.resize(1);
    for (auto &t : outs) o[0].push_back(staged(t, p, true));
  }
  std::vector<at::Tensor> in{staged(ctorch::own(input), p, false)};
  c10d::GatherOptions opt;
  opt.rootRank = root;
  p.work = g.pg->gather(o, in, opt);
  return p;
}

Pending start_scatter(ctorch_process_group_s &g, ctorch_tensor output, const ctorch_tensor *inputs, size_t n,
                      int root) {
  ctorch::require_tensor(output, "output");
  check_rank(root, g, "root");
  auto ins = ctorch::tensor_list(inputs, n, "inputs");
  if (g.rank == root)
    check_count(n, g, "n_inputs");
  else if (n != 0)
    ctorch::fail_arg("n_inputs", "must be 0 on a non-root rank (only root " + std::to_string(root) + " sends)");
  Pending p{{}, {}, "scatter"};
  std::vector<std::vector<at::Tensor>> in;
  if (g.rank == root) {
    in.resize(1);
    for (auto &t : ins) in[0].push_back(staged(t, p, false));
  }
  std::vector<at::Tensor> out{staged(ctorch::own(output), p, true)};
  c10d::ScatterOptions opt;
  opt.rootRank = root;
  p.work = g.pg->scatter(out, in, opt);
  return p;
}

Pending start_reduce(ctorch_process_group_s &g, ctorch_tensor tensor, int op, int root) {
  ctorch::require_tensor(tensor, "tensor");
  Reduce r = to_reduce(op, "op");
  check_rank(root, g, "root");
  at::Tensor t = ctorch::own(tensor);
  check_average_dtype(r, t, "tensor");
  Pending p{{}, {}, "reduce"};
  std::vector<at::Tensor> ts{staged(t, p, true)};
  if (r.average && g.rank == root) add_average(p, ts[0], g.size);
  c10d::ReduceOptions o;
  o.reduceOp = r.op;
  o.rootRank = root;
  p.work = g.pg->reduce(ts, o);
  return p;
}

// Gloo 1.13 throws "does not support reduce_scatter": stack the inputs,
// all-reduce the stack once, keep this rank's slice.
Pending start_reduce_scatter(ctorch_process_group_s &g, ctorch_tensor output, const ctorch_tensor *inputs, size_t n,
                             int op) {
  ctorch::require_tensor(output, "output");
  Reduce r = to_reduce(op, "op");
  auto ins = ctorch::tensor_list(inputs, n, "inputs");
  check_count(n, g, "n_inputs");
  at::Tensor out = ctorch::own(output);
  for (size_t i = 0; i < ins.size(); ++i)
    if (!ins[i].sizes().equals(out.sizes()) || ins[i].scalar_type() != out.scalar_type())
      ctorch::fail_arg("inputs", "element " + std::to_string(i) + " must have the output's shape and dtype");
  check_average_dtype(r, out, "output");
  at::Tensor stack = at::stack(ins);
  Pending p{{}, {}, "reduce_scatter"};
  int rank = g.rank, size = g.size;
  bool average = r.average;
  p.finish.push_back([out, stack, rank, size, average]() mutable {
    at::NoGradGuard no_grad;
    at::Tensor mine = stack.select(0, rank);
    if (average) mine.div_(size);
    out.copy_(mine);
  });
  std::vector<at::Tensor> ts{stack};
  c10d::AllreduceOptions o;
  o.reduceOp = r.op;
  p.work = g.pg->allreduce(ts, o);
  return p;
}

Pending start_barrier(ctorch_process_group_s &g) {
  Pending p{{}, {}, "barrier"};
  p.work = g.pg->barrier();
  return p;
}

void check_peer(int peer, const ctorch_process_group_s &g, const char *arg) {
  check_rank(peer, g, arg);
  if (peer == g.rank) ctorch::fail_arg(arg, "is this process's own rank " + std::to_string(peer));
}

Pending start_send(ctorch_process_group_s &g, ctorch_tensor tensor, int dst, int tag) {
  ctorch::require_tensor(tensor, "tensor");
  check_peer(dst, g, "dst");
  if (tag < 0) ctorch::fail_arg("tag", "must be >= 0");
  Pending p{{}, {}, "send"};
  std::vector<at::Tensor> ts{staged(ctorch::own(tensor), p, false)};
  p.work = g.pg->send(ts, dst, tag);
  return p;
}

Pending start_recv(ctorch_process_group_s &g, ctorch_tensor tensor, int src, int tag) {
  ctorch::require_tensor(tensor, "tensor");
  check_peer(src, g, "src");
  if (tag < 0) ctorch::fail_arg("tag", "must be >= 0");
  Pending p{{}, {}, "recv"};
  std::vector<at::Tensor> ts{staged(ctorch::own(tensor), p, true)};
  p.work = g.pg->recv(ts, src, tag);
  return p;
}

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

// distributed_c10d._store_based_barrier: Python ranks wait for this count.
void store_barrier(c10d::Store &store, const std::string &key, int size, milliseconds timeout) {
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

// The sequence of Python's init_process_group(store=...) for Gloo.
ctorch_process_group new_group(const c10::intrusive_ptr<c10d::Store> &store, bool loopback, int rank, int size,
                               milliseconds timeout) {
  int n = g_group_count.fetch_add(1);
  auto prefixed = c10::make_intrusive<c10d::PrefixStore>(std::to_string(n), store);
  auto pg = make_gloo(prefixed, loopback, rank, size, timeout);
  store_barrier(*store, "store_based_barrier_key:" + std::to_string(n + 1), size, timeout);
  ctorch::compat::start_sequence_numbers(*pg);
  auto *h = new ctorch_process_group_s;
  h->pg = std::move(pg);
  h->timeout = timeout;
  h->rank = rank;
  h->size = size;
  return h;
}

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

}  // namespace

extern "C" {

// ---- stores ----------------------------------------------------------------

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
  auto s = c10::make_intrusive<c10d::TCPStore>(std::string(host), o);
  auto *h = new ctorch_store_s;
  h->port = s->getPort();
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
  try {
    delete store;
  } catch (...) {
  }
}

// ---- process groups --------------------------------------------------------

CTORCH_API ctorch_status ctorch_process_group_new_gloo(ctorch_process_group *out, ctorch_store store, int rank,
                                                       int size, int64_t timeout_ms) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  live_store(store, "store");
  if (size < 1) ctorch::fail_arg("size", "must be >= 1");
  if (rank < 0 || rank >= size)
    ctorch::fail_arg("rank", std::to_string(rank) + " is outside [0, " + std::to_string(size) + ")");
  *out = new_group(store->store, store->loopback, rank, size, to_timeout(timeout_ms, kGroupDefaultTimeout));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_dist_nccl_available(int *out) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  // NCCL needs ProcessGroupNCCL from a CUDA libtorch. ctorch has no NCCL
  // code path yet (Debian's libtorch is CPU-only, so none could be built or
  // tested here): the answer is always 0 until one is added.
  *out = 0;
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_dist_init_from_env(ctorch_process_group *out, int *local_rank, const char *backend,
                                                   int64_t timeout_ms) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  if (local_rank) *local_rank = -1;
  std::string b = backend ? backend : "gloo";
  if (b == "nccl")
    ctorch::fail(CTORCH_NOT_IMPLEMENTED, "backend 'nccl' is not available: this ctorch is built against a "
                 "libtorch without CUDA/NCCL (see ctorch_dist_nccl_available)");
  if (b != "gloo") ctorch::fail_arg("backend", "'" + b + "' is not a known backend (use \"gloo\")");
  const char *addr = std::getenv("MASTER_ADDR");
  if (!addr || !*addr)
    ctorch::fail(CTORCH_INVALID_ARGUMENT, "environment variable MASTER_ADDR is not set (set MASTER_ADDR, "
                 "MASTER_PORT, RANK, WORLD_SIZE as torchrun does)");
  int port = env_int("MASTER_PORT", true, 0, 1, 65535);
  int world = env_int("WORLD_SIZE", true, 0, 1, 1 << 20);
  int rank = env_int("RANK", true, 0, 0, world - 1);
  int lrank = env_int("LOCAL_RANK", false, -1, 0, 1 << 20);
  milliseconds timeout = to_timeout(timeout_ms, kGroupDefaultTimeout);
  c10d::TCPStoreOptions o;
  o.port = static_cast<uint16_t>(port);
  o.isServer = rank == 0;
  o.numWorkers = static_cast<size_t>(world);
  o.waitWorkers = rank != 0;  // see ctorch_store_tcp_new
  o.timeout = timeout;
  o.multiTenant = true;  // as Python's _create_c10d_store
  auto tcp = c10::make_intrusive<c10d::TCPStore>(std::string(addr), o);
  auto store = c10::make_intrusive<c10d::PrefixStore>("default_pg", tcp);
  *out = new_group(store, is_loopback(addr), rank, world, timeout);
  if (local_rank) *local_rank = lrank;
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_process_group_rank(int *out, ctorch_process_group pg) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = live_pg(pg).rank;
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_process_group_size(int *out, ctorch_process_group pg) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = live_pg(pg).size;
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_process_group_backend(const char **out, ctorch_process_group pg) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  live_pg(pg);
  *out = c10d::GLOO_BACKEND_NAME;
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_process_group_sequence_number(uint64_t *out, ctorch_process_group pg) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = live_pg(pg).pg->getSequenceNumberForGroup();
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_process_group_destroy(ctorch_process_group pg) {
  CTORCH_TRY
  if (!pg) ctorch::fail_arg("pg", "process group handle is NULL");
  pg->pg.reset();
  CTORCH_CATCH
}

CTORCH_API void ctorch_process_group_free(ctorch_process_group pg) {
  try {
    delete pg;
  } catch (...) {
  }
}

// ---- collectives -----------------------------------------------------------

CTORCH_API ctorch_status ctorch_dist_all_reduce(ctorch_process_group pg, ctorch_tensor tensor, ctorch_reduce_op op) {
  CTORCH_TRY
  auto &g = live_pg(pg);
  run_sync(g, start_all_reduce(g, tensor, op));
  CTORCH_CATCH
}
CTORCH_API ctorch_status ctorch_dist_all_reduce_async(ctorch_work *out, ctorch_process_group pg, ctorch_tensor tensor,
                                                      ctorch_reduce_op op) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  auto &g = live_pg(pg);
  *out = make_work(g, start_all_reduce(g, tensor, op));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_dist_broadcast(ctorch_process_group pg, ctorch_tensor tensor, int root) {
  CTORCH_TRY
  auto &g = live_pg(pg);
  run_sync(g, start_broadcast(g, tensor, root));
  CTORCH_CATCH
}
CTORCH_API ctorch_status ctorch_dist_broadcast_async(ctorch_work *out, ctorch_process_group pg, ctorch_tensor tensor,
                                                     int root) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  auto &g = live_pg(pg);
  *out = make_work(g, start_broadcast(g, tensor, root));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_dist_all_gather(ctorch_process_group pg, const ctorch_tensor *outputs,
                                                size_t n_outputs, ctorch_tensor input) {
  CTORCH_TRY
  auto &g = live_pg(pg);
  run_sync(g, start_all_gather(g, outputs, n_outputs, input));
  CTORCH_CATCH
}
CTORCH_API ctorch_status ctorch_dist_all_gather_async(ctorch_work *out, ctorch_process_group pg,
                                                      const ctorch_tensor *outputs, size_t n_outputs,
                                                      ctorch_tensor input) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  auto &g = live_pg(pg);
  *out = make_work(g, start_all_gather(g, outputs, n_outputs, input));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_dist_all_gather_list(ctorch_tensor_list *out, ctorch_process_group pg,
                                                     ctorch_tensor input) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  auto &g = live_pg(pg);
  ctorch::require_tensor(input, "input");
  ctorch::Borrowed in(input);
  std::vector<at::Tensor> outs;
  std::vector<ctorch_tensor> handles;
  for (int i = 0; i < g.size; ++i) {
    outs.push_back(at::empty(in->sizes(), in->options().requires_grad(false)));
    handles.push_back(reinterpret_cast<ctorch_tensor>(outs.back().unsafeGetTensorImpl()));
  }
  run_sync(g, start_all_gather(g, handles.data(), handles.size(), input));
  *out = ctorch::give_list(std::move(outs));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_dist_gather(ctorch_process_group pg, const ctorch_tensor *outputs, size_t n_outputs,
                                            ctorch_tensor input, int root) {
  CTORCH_TRY
  auto &g = live_pg(pg);
  run_sync(g, start_gather(g, outputs, n_outputs, input, root));
  CTORCH_CATCH
}
CTORCH_API ctorch_status ctorch_dist_gather_async(ctorch_work *out, ctorch_process_group pg,
                                                  const ctorch_tensor *outputs, size_t n_outputs, ctorch_tensor input,
                                                  int root) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  auto &g = live_pg(pg);
  *out = make_work(g, start_gather(g, outputs, n_outputs, input, root));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_dist_scatter(ctorch_process_group pg, ctorch_tensor output,
                                             const ctorch_tensor *inputs, size_t n_inputs, int root) {
  CTORCH_TRY
  auto &g = live_pg(pg);
  run_sync(g, start_scatter(g, output, inputs, n_inputs, root));
  CTORCH_CATCH
}
CTORCH_API ctorch_status ctorch_dist_scatter_async(ctorch_work *out, ctorch_process_group pg, ctorch_tensor output,
                                                   const ctorch_tensor *inputs, size_t n_inputs, int root) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  auto &g = live_pg(pg);
  *out = make_work(g, start_scatter(g, output, inputs, n_inputs, root));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_dist_reduce(ctorch_process_group pg, ctorch_tensor tensor, ctorch_reduce_op op,
                                            int root) {
  CTORCH_TRY
  auto &g = live_pg(pg);
  run_sync(g, start_reduce(g, tensor, op, root));
  CTORCH_CATCH
}
CTORCH_API ctorch_status ctorch_dist_reduce_async(ctorch_work *out, ctorch_process_group pg, ctorch_tensor tensor,
                                                  ctorch_reduce_op op, int root) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  auto &g = live_pg(pg);
  *out = make_work(g, start_reduce(g, tensor, op, root));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_dist_reduce_scatter(ctorch_process_group pg, ctorch_tensor output,
                                                    const ctorch_tensor *inputs, size_t n_inputs,
                                                    ctorch_reduce_op op) {
  CTORCH_TRY
  auto &g = live_pg(pg);
  run_sync(g, start_reduce_scatter(g, output, inputs, n_inputs, op));
  CTORCH_CATCH
}
CTORCH_API ctorch_status ctorch_dist_reduce_scatter_async(ctorch_work *out, ctorch_process_group pg,
                                                          ctorch_tensor output, const ctorch_tensor *inputs,
                                                          size_t n_inputs, ctorch_reduce_op op) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  auto &g = live_pg(pg);
  *out = make_work(g, start_reduce_scatter(g, output, inputs, n_inputs, op));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_dist_barrier(ctorch_process_group pg) {
  CTORCH_TRY
  auto &g = live_pg(pg);
  run_sync(g, start_barrier(g));
  CTORCH_CATCH
}
CTORCH_API ctorch_status ctorch_dist_barrier_async(ctorch_work *out, ctorch_process_group pg) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  auto &g = live_pg(pg);
  *out = make_work(g, start_barrier(g));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_dist_send(ctorch_process_group pg, ctorch_tensor tensor, int dst, int tag) {
  CTORCH_TRY
  auto &g = live_pg(pg);
  run_sync(g, start_send(g, tensor, dst, tag));
  CTORCH_CATCH
}
CTORCH_API ctorch_status ctorch_dist_send_async(ctorch_work *out, ctorch_process_group pg, ctorch_tensor tensor,
                                                int dst, int tag) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  auto &g = live_pg(pg);
  *out = make_work(g, start_send(g, tensor, dst, tag));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_dist_recv(ctorch_process_group pg, ctorch_tensor tensor, int src, int tag) {
  CTORCH_TRY
  auto &g = live_pg(pg);
  run_sync(g, start_recv(g, tensor, src, tag));
  CTORCH_CATCH
}
CTORCH_API ctorch_status ctorch_dist_recv_async(ctorch_work *out, ctorch_process_group pg, ctorch_tensor tensor,
                                                int src, int tag) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  auto &g = live_pg(pg);
  *out = make_work(g, start_recv(g, tensor, src, tag));
  CTORCH_CATCH
}

// ---- work handles ----------------------------------------------------------

CTORCH_API ctorch_status ctorch_work_wait(ctorch_work work, int64_t timeout_ms) {
  CTORCH_TRY
  if (!work) ctorch::fail_arg("work", "work handle is NULL");
  complete(*work->work, work->finish, work->finished, to_timeout(timeout_ms, work->timeout), work->what);
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_work_is_completed(int *out, ctorch_work work) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  if (!work) ctorch::fail_arg("work", "work handle is NULL");
  *out = work->finished || work->work->isCompleted() ? 1 : 0;
  CTORCH_CATCH
}

CTORCH_API void ctorch_work_free(ctorch_work work) {
  try {
    delete work;
  } catch (...) {
  }
}

}  // extern "C"
