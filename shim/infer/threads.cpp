// ctorch_thread_policy: the thread and spin policy in
// effect. libgomp reads OMP_WAIT_POLICY and GOMP_SPINCOUNT once, in its own
// constructor, before this library's static initialisers run; nothing in
// OpenMP's API changes the wait policy afterwards (docs/inference-benchmarks.md,
// "Threads and spinning": setenv after load was measured to change nothing).
// So the report gives the environment as it was when this library was
// loaded, which is what the OpenMP runtime saw, not what getenv says later.
#include "core/internal.h"

#include <ATen/Parallel.h>

#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>

namespace {

constexpr int kLoadEnv = 5;
struct LoadEnv {
  std::string values[kLoadEnv];
  LoadEnv() {
    for (int i = 0; i < kLoadEnv; ++i) {
      const char *v = std::getenv(names()[i]);
      values[i] = v ? v : "unset";
    }
  }
  static const char *const *names() {
    // CTORCH_HEAP: the heap policy shim/core/memory.cpp applied at the same load.
    static const char *const n[kLoadEnv] = {"OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
                                            "CTORCH_HEAP"};
    return n;
  }
};
const LoadEnv load_env;  // at library load

// "OpenMP" out of at::get_parallel_info()'s "ATen parallel backend: OpenMP" line.
std::string parallel_backend() {
  std::string info = at::get_parallel_info(), key = "ATen parallel backend: ";
  size_t p = info.find(key);
  if (p == std::string::npos) return "unknown";
  p += key.size();
  return info.substr(p, info.find('\n', p) - p);
}

}  // namespace

extern "C" CTORCH_API ctorch_status ctorch_thread_policy(char **out) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  std::ostringstream s;
  s << "intra_op_threads=" << at::get_num_threads() << "\n"
    << "inter_op_threads=" << at::get_num_interop_threads() << "\n"
    << "parallel_backend=" << parallel_backend() << "\n";
  for (int i = 0; i < kLoadEnv; ++i) s << LoadEnv::names()[i] << "=" << load_env.values[i] << "\n";
  std::string r = s.str();
  char *c = static_cast<char *>(std::malloc(r.size() + 1));
  if (!c) throw std::bad_alloc();
  std::memcpy(c, r.c_str(), r.size() + 1);
  *out = c;
  CTORCH_CATCH
}
