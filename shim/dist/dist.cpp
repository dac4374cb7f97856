// torch.distributed (c10d) collectives through the C ABI, and their work
// handles. Stores are made in dist_store.cpp, groups in dist_group.cpp; the
// grouping helpers built on these live in dist_grad.cpp and use only the
// public functions.
#include <atomic>
#include <functional>

#include "dist_internal.h"

using namespace ctorch::dist;

struct ctorch_work_s {
  c10::intrusive_ptr<c10d::Work> work;
  // Run once, after the communication succeeded (AVG division, copies back
  // into non-contiguous tensors, slicing for reduce_scatter).
  std::vector<std::function<void()>> finish;
  milliseconds timeout{0};
  std::string what;
  std::atomic<bool> finished{false};  // read by is_completed on any thread
  // Held by wait (core/exclusive.h): two threads' waits both ran `finish`
  // (an AVG result divided twice: silent wrong data).
  ctorch::Busy busy;
  ctorch::Live<ctorch_work_s> live{this};  // last: see core/internal.h
};

namespace {

void check_rank(int r, const ctorch_process_group_s &g, const char *arg) {
  if (r < 0 || r >= g.size)
    ctorch::fail_arg(arg, "rank " + std::to_string(r) + " is outside the group [0, " + std::to_string(g.size) + ")");
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
void complete(c10d::Work &work, std::vector<std::function<void()>> &finish, std::atomic<bool> &finished, milliseconds timeout,
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
  std::atomic<bool> finished{false};
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

// The two forms of every collective, given its start_* function and its
// arguments after the group: the blocking one waits for it, the _async one
// hands out its work. fn is the C function's name for the error message
// (CTORCH_CATCH's __func__ would name these helpers).
template <class Start, class... Args>
ctorch_status collective_blocking(const char *fn, ctorch_process_group pg, Start start, Args... args) {
  try {
    HeldPg held(pg);
    run_sync(held.g, start(held.g, args...));
  } catch (...) {
    return ctorch::translate_exception(fn);
  }
  return CTORCH_OK;
}
template <class Start, class... Args>
ctorch_status collective_async(const char *fn, ctorch_work *out, ctorch_process_group pg, Start start,
                               Args... args) {
  try {
    ctorch::require_out(out, "out");
    *out = nullptr;
    HeldPg held(pg);
    *out = make_work(held.g, start(held.g, args...));
  } catch (...) {
    return ctorch::translate_exception(fn);
  }
  return CTORCH_OK;
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

}  // namespace

extern "C" {

// ---- collectives -----------------------------------------------------------

CTORCH_API ctorch_status ctorch_dist_all_reduce(ctorch_process_group pg, ctorch_tensor tensor, ctorch_reduce_op op) {
  return collective_blocking(__func__, pg, start_all_reduce, tensor, op);
}
CTORCH_API ctorch_status ctorch_dist_all_reduce_async(ctorch_work *out, ctorch_process_group pg, ctorch_tensor tensor,
                                                      ctorch_reduce_op op) {
  return collective_async(__func__, out, pg, start_all_reduce, tensor, op);
}

CTORCH_API ctorch_status ctorch_dist_broadcast(ctorch_process_group pg, ctorch_tensor tensor, int root) {
  return collective_blocking(__func__, pg, start_broadcast, tensor, root);
}
CTORCH_API ctorch_status ctorch_dist_broadcast_async(ctorch_work *out, ctorch_process_group pg, ctorch_tensor tensor,
                                                     int root) {
  return collective_async(__func__, out, pg, start_broadcast, tensor, root);
}

CTORCH_API ctorch_status ctorch_dist_all_gather(ctorch_process_group pg, const ctorch_tensor *outputs,
                                                size_t n_outputs, ctorch_tensor input) {
  return collective_blocking(__func__, pg, start_all_gather, outputs, n_outputs, input);
}
CTORCH_API ctorch_status ctorch_dist_all_gather_async(ctorch_work *out, ctorch_process_group pg,
                                                      const ctorch_tensor *outputs, size_t n_outputs,
                                                      ctorch_tensor input) {
  return collective_async(__func__, out, pg, start_all_gather, outputs, n_outputs, input);
}

CTORCH_API ctorch_status ctorch_dist_all_gather_list(ctorch_tensor_list *out, ctorch_process_group pg,
                                                     ctorch_tensor input) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  HeldPg held(pg);
  auto &g = held.g;
  ctorch::require_tensor(input, "input");
  ctorch::Borrowed in(input);
  std::vector<at::Tensor> outs;
  std::vector<ctorch_tensor> handles;
  ctorch::Lent lend;
  for (int i = 0; i < g.size; ++i) outs.push_back(at::empty(in->sizes(), in->options().requires_grad(false)));
  for (const auto &o : outs) handles.push_back(lend(o));
  run_sync(g, start_all_gather(g, handles.data(), handles.size(), input));
  *out = ctorch::give_list(std::move(outs));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_dist_gather(ctorch_process_group pg, const ctorch_tensor *outputs, size_t n_outputs,
                                            ctorch_tensor input, int root) {
  return collective_blocking(__func__, pg, start_gather, outputs, n_outputs, input, root);
}
CTORCH_API ctorch_status ctorch_dist_gather_async(ctorch_work *out, ctorch_process_group pg,
                                                  const ctorch_tensor *outputs, size_t n_outputs, ctorch_tensor input,
                                                  int root) {
  return collective_async(__func__, out, pg, start_gather, outputs, n_outputs, input, root);
}

CTORCH_API ctorch_status ctorch_dist_scatter(ctorch_process_group pg, ctorch_tensor output,
                                             const ctorch_tensor *inputs, size_t n_inputs, int root) {
  return collective_blocking(__func__, pg, start_scatter, output, inputs, n_inputs, root);
}
CTORCH_API ctorch_status ctorch_dist_scatter_async(ctorch_work *out, ctorch_process_group pg, ctorch_tensor output,
                                                   const ctorch_tensor *inputs, size_t n_inputs, int root) {
  return collective_async(__func__, out, pg, start_scatter, output, inputs, n_inputs, root);
}

CTORCH_API ctorch_status ctorch_dist_reduce(ctorch_process_group pg, ctorch_tensor tensor, ctorch_reduce_op op,
                                            int root) {
  return collective_blocking(__func__, pg, start_reduce, tensor, op, root);
}
CTORCH_API ctorch_status ctorch_dist_reduce_async(ctorch_work *out, ctorch_process_group pg, ctorch_tensor tensor,
                                                  ctorch_reduce_op op, int root) {
  return collective_async(__func__, out, pg, start_reduce, tensor, op, root);
}

CTORCH_API ctorch_status ctorch_dist_reduce_scatter(ctorch_process_group pg, ctorch_tensor output,
                                                    const ctorch_tensor *inputs, size_t n_inputs,
                                                    ctorch_reduce_op op) {
  return collective_blocking(__func__, pg, start_reduce_scatter, output, inputs, n_inputs, op);
}
CTORCH_API ctorch_status ctorch_dist_reduce_scatter_async(ctorch_work *out, ctorch_process_group pg,
                                                          ctorch_tensor output, const ctorch_tensor *inputs,
                                                          size_t n_inputs, ctorch_reduce_op op) {
  return collective_async(__func__, out, pg, start_reduce_scatter, output, inputs, n_inputs, op);
}

CTORCH_API ctorch_status ctorch_dist_barrier(ctorch_process_group pg) {
  return collective_blocking(__func__, pg, start_barrier);
}
CTORCH_API ctorch_status ctorch_dist_barrier_async(ctorch_work *out, ctorch_process_group pg) {
  return collective_async(__func__, out, pg, start_barrier);
}

CTORCH_API ctorch_status ctorch_dist_send(ctorch_process_group pg, ctorch_tensor tensor, int dst, int tag) {
  return collective_blocking(__func__, pg, start_send, tensor, dst, tag);
}
CTORCH_API ctorch_status ctorch_dist_send_async(ctorch_work *out, ctorch_process_group pg, ctorch_tensor tensor,
                                                int dst, int tag) {
  return collective_async(__func__, out, pg, start_send, tensor, dst, tag);
}

CTORCH_API ctorch_status ctorch_dist_recv(ctorch_process_group pg, ctorch_tensor tensor, int src, int tag) {
  return collective_blocking(__func__, pg, start_recv, tensor, src, tag);
}
CTORCH_API ctorch_status ctorch_dist_recv_async(ctorch_work *out, ctorch_process_group pg, ctorch_tensor tensor,
                                                int src, int tag) {
  return collective_async(__func__, out, pg, start_recv, tensor, src, tag);
}

// ---- work handles ----------------------------------------------------------

CTORCH_API ctorch_status ctorch_work_wait(ctorch_work work, int64_t timeout_ms) {
  CTORCH_TRY
  ctorch::check_handle(work, "work");
  ctorch::Exclusive hold(work->busy, "work", work);
  complete(*work->work, work->finish, work->finished, to_timeout(timeout_ms, work->timeout), work->what);
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_work_is_completed(int *out, ctorch_work work) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  ctorch::check_handle(work, "work");
  *out = work->finished || work->work->isCompleted() ? 1 : 0;
  CTORCH_CATCH
}

CTORCH_API void ctorch_work_free(ctorch_work work) {
  // Not under another thread's wait (core/exclusive.h).
  if (work && ctorch::handle_kind_of(work) == ctorch::HandleKind::work &&
      !ctorch::free_allowed(work->busy, __func__, work))
    return;
  if (!ctorch::release_handle(work, __func__)) return;
  try {
    delete work;
  } catch (...) {
  }
}

}  // extern "C"
