// What the handle registries cost per operation (shim/core/README.md): the
// one of the other handle types (shim/core/handles.cpp: mutex-sharded hash
// maps) and the slots of tensor handles (shim/core/tensor_slots.cpp),
// both compiled in here as they ship: a lookup (what every checked entry
// point does), and a register + release pair (what making and freeing a
// handle adds), alone and while another thread makes and frees handles. Per
// generated 1-element add there are two checks (self, other), one make
// (the result) and one release (its free): the output gives that sum for
// each as a fraction of a ctorch add's per-call time, measured here too
// (the library's add includes the tensor slots).
// Usage: build/bench/probes/handle_registry [iterations]
#include "core/internal.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <thread>
#include <vector>

#include "ctorch.h"

// The error paths handles.cpp calls, never reached here.
namespace ctorch {
void fail_arg(const char *, const std::string &) { std::abort(); }
void fail_null_handle(const char *) { std::abort(); }
ctorch_status set_error(const char *, ctorch_status s, const std::string &) noexcept { return s; }
}  // namespace ctorch

namespace {

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

template <class F>
double ns_per(long n, F f) {
  std::vector<double> r;
  for (int round = 0; round < 7; ++round) {
    double t0 = now();
    for (long i = 0; i < n; ++i) f(i);
    r.push_back((now() - t0) * 1e9 / double(n));
  }
  std::sort(r.begin(), r.end());
  return r[r.size() / 2];
}

}  // namespace

int main(int argc, char **argv) {
  long n = argc > 1 ? std::atol(argv[1]) : 1000000;
  using ctorch::HandleKind;
  // 1,000 live handles of assorted kinds, as a program with a model, an
  // optimizer and some tensors might hold.
  std::vector<std::unique_ptr<char[]>> live;
  for (int i = 0; i < 1000; ++i) {
    live.emplace_back(new char[64]);
    ctorch::handle_add(live.back().get(), HandleKind::value);
  }
  const void *probe = live[500].get();
  // Written as sink = sink + x: a compound assignment to a volatile is
  // deprecated in C++20 (-Wvolatile, libtorch 2.x builds as C++20).
  volatile int sink = 0;
  double lookup = ns_per(n, [&](long) { sink = sink + int(ctorch::handle_kind_of(probe)); });
  std::vector<std::unique_ptr<char[]>> fresh;
  for (int i = 0; i < 64; ++i) fresh.emplace_back(new char[64]);
  double add_take = ns_per(n, [&](long i) {
    const void *p = fresh[i & 63].get();
    ctorch::handle_add(p, HandleKind::value);
    sink = sink + ctorch::handle_take(p, HandleKind::value);
  });
  // The same lookup while another thread registers and frees handles.
  std::atomic<bool> stop{false};
  std::thread churn([&] {
    std::vector<std::unique_ptr<char[]>> mine;
    for (int i = 0; i < 64; ++i) mine.emplace_back(new char[64]);
    for (long i = 0; !stop.load(std::memory_order_relaxed); ++i) {
      ctorch::handle_add(mine[i & 63].get(), HandleKind::value);
      ctorch::handle_take(mine[i & 63].get(), HandleKind::value);
    }
  });
  double lookup_contended = ns_per(n, [&](long) { sink = sink + int(ctorch::handle_kind_of(probe)); });
  stop = true;
  churn.join();

  // A ctorch add of two 1-element tensors, one intra-op thread.
  at::set_num_threads(1);
  const int64_t one = 1;
  const ctorch_dtype f32 = CTORCH_FLOAT32;
  ctorch_tensor a = nullptr, b = nullptr;
  if (ctorch_ones(&a, &one, 1, &f32, nullptr, nullptr, nullptr) || ctorch_ones(&b, &one, 1, &f32, nullptr, nullptr, nullptr))
    return 1;
  const ctorch_scalar alpha = ctorch_scalar_int(1);
  double add = ns_per(n, [&](long) {
    ctorch_tensor r = nullptr;
    ctorch_add_Tensor(&r, a, b, alpha);
    ctorch_tensor_free(r);
  });
  ctorch_tensor_free(a);
  ctorch_tensor_free(b);

  // Tensor handles (slots): 1,000 live handles, as above; a check of one,
  // and a make + free pair (what each result adds), alone and while another
  // thread makes and frees handles of its own.
  std::vector<ctorch_tensor> hs;
  for (auto &p : live) hs.push_back(ctorch::tensor_make(reinterpret_cast<c10::TensorImpl *>(p.get())));
  const ctorch_tensor hprobe = hs[500];
  double t_lookup = ns_per(n, [&](long) { sink = sink + int(ctorch::tensor_live(hprobe) != nullptr); });
  double t_add_take = ns_per(n, [&](long i) {
    ctorch_tensor h = ctorch::tensor_make(reinterpret_cast<c10::TensorImpl *>(fresh[i & 63].get()));
    sink = sink + int(ctorch::tensor_release(h) != nullptr);
  });
  // Eight live at a time, freed oldest first (slots not reused at once).
  double t_add_take_spread = ns_per(n, [&](long i) {
    static ctorch_tensor ring[8];
    ctorch_tensor &r = ring[i & 7];
    if (r) sink = sink + int(ctorch::tensor_release(r) != nullptr);
    r = ctorch::tensor_make(reinterpret_cast<c10::TensorImpl *>(fresh[i & 63].get()));
  });
  stop = false;
  std::thread tchurn([&] {
    std::vector<std::unique_ptr<char[]>> mine;
    for (int i = 0; i < 64; ++i) mine.emplace_back(new char[64]);
    for (long i = 0; !stop.load(std::memory_order_relaxed); ++i)
      ctorch::tensor_release(ctorch::tensor_make(reinterpret_cast<c10::TensorImpl *>(mine[i & 63].get())));
  });
  double t_lookup_contended = ns_per(n, [&](long) { sink = sink + int(ctorch::tensor_live(hprobe) != nullptr); });
  double t_add_take_contended = ns_per(n, [&](long i) {
    ctorch_tensor h = ctorch::tensor_make(reinterpret_cast<c10::TensorImpl *>(fresh[i & 63].get()));
    sink = sink + int(ctorch::tensor_release(h) != nullptr);
  });
  stop = true;
  tchurn.join();
  for (ctorch_tensor h : hs) ctorch::tensor_release(h);

  double map_cost = 2 * lookup + add_take, tensor_cost = 2 * t_lookup + t_add_take;
  std::printf("{\"map_lookup_ns\": %.1f, \"map_lookup_contended_ns\": %.1f, \"map_register_release_ns\": %.1f, "
              "\"tensor_lookup_ns\": %.1f, \"tensor_lookup_contended_ns\": %.1f, "
              "\"tensor_register_release_ns\": %.1f, \"tensor_register_release_spread_ns\": %.1f, "
              "\"tensor_register_release_contended_ns\": %.1f, \"ctorch_add_ns\": %.1f, "
              "\"map_per_add_ns\": %.1f, \"map_fraction\": %.4f, "
              "\"tensor_registry_per_add_ns\": %.1f, \"tensor_registry_fraction\": %.4f}\n",
              lookup, lookup_contended, add_take, t_lookup, t_lookup_contended, t_add_take, t_add_take_spread,
              t_add_take_contended, add, map_cost, map_cost / add, tensor_cost, tensor_cost / add);
  return 0;
}
