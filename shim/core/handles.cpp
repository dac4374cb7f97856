// The registry of live handles (internal.h: Live, check_handle,
// release_handle). A set of (pointer, kind) pairs, sharded by pointer so that
// threads creating, freeing and checking different handles rarely share a
// lock (a binding's finaliser frees on its own thread while others compute).
//
// Keyed by the pointer's value: a check never reads the memory a handle
// points to, so a freed handle (memory returned to the allocator, perhaps
// reused, perhaps unmapped) or a pointer that was never a handle is refused
// without touching it, and AddressSanitizer sees no use after free.
#include "internal.h"

#include <mutex>
#include <unordered_map>

namespace ctorch {
namespace {

constexpr size_t kShards = 64;

struct alignas(64) Shard {  // one cache line each: no false sharing between locks
  std::mutex mu;
  std::unordered_map<const void *, HandleKind> live;
};

// Never destroyed: handles may be freed by other libraries' static
// destructors or a binding's last finalisers after this library's own
// statics are gone.
Shard *shards() {
  static Shard *s = new Shard[kShards];
  return s;
}

Shard &shard_of(const void *p) {
  // Heap handles are 16-byte aligned: drop the low bits, mix the rest.
  uint64_t x = reinterpret_cast<uintptr_t>(p) >> 4;
  x *= 0x9E3779B97F4A7C15ull;
  return shards()[x >> 58];  // the top 6 bits: 64 shards
}

const char *kind_name(HandleKind k) {
  switch (k) {
    case HandleKind::none: return "no handle";
    case HandleKind::tensor_list: return "ctorch_tensor_list";
    case HandleKind::generator: return "ctorch_generator";
    case HandleKind::autograd_scope: return "ctorch_autograd_scope";
    case HandleKind::autograd_ctx: return "ctorch_autograd_ctx";
    case HandleKind::optimizer: return "ctorch_optimizer";
    case HandleKind::lr_scheduler: return "ctorch_lr_scheduler";
    case HandleKind::summary_writer: return "ctorch_summary_writer";
    case HandleKind::transform: return "ctorch_transform";
    case HandleKind::data_loader: return "ctorch_data_loader";
    case HandleKind::dataset: return "ctorch_dataset";
    case HandleKind::tensor_dict: return "ctorch_tensor_dict";
    case HandleKind::module: return "ctorch_module";
    case HandleKind::value: return "ctorch_value";
    case HandleKind::nn_module: return "ctorch_nn_module";
    case HandleKind::store: return "ctorch_store";
    case HandleKind::process_group: return "ctorch_process_group";
    case HandleKind::work: return "ctorch_work";
    case HandleKind::tracer: return "ctorch_tracer";
    case HandleKind::aoti_package: return "ctorch_aoti_package";
    case HandleKind::stream: return "ctorch_stream";
    case HandleKind::event: return "ctorch_event";
    case HandleKind::stream_scope: return "ctorch_stream_scope";
    case HandleKind::cuda_graph: return "ctorch_cuda_graph";
    case HandleKind::autocast_scope: return "ctorch_autocast_scope";
    case HandleKind::grad_scaler: return "ctorch_grad_scaler";
    case HandleKind::early_stopping: return "ctorch_early_stopping";
    case HandleKind::profiler: return "ctorch_profiler";
  }
  return "?";
}

std::string why(const void *p, HandleKind want) {
  HandleKind got = handle_kind_of(p);
  if (got == HandleKind::none && tensor_live(p))
    return std::string("is a ctorch_tensor handle, not a ") + kind_name(want);
  if (got == HandleKind::none)
    return std::string("is not a live ") + kind_name(want) +
           " handle (already freed, or a pointer ctorch never returned)";
  return std::string("is a ") + kind_name(got) + " handle, not a " + kind_name(want);
}

}  // namespace

void handle_add(const void *p, HandleKind k) {
  Shard &s = shard_of(p);
  std::lock_guard<std::mutex> g(s.mu);
  s.live[p] = k;
}

void handle_remove(const void *p, HandleKind k) noexcept {
  Shard &s = shard_of(p);
  std::lock_guard<std::mutex> g(s.mu);
  auto it = s.live.find(p);
  if (it != s.live.end() && it->second == k) s.live.erase(it);
}

bool handle_take(const void *p, HandleKind k) noexcept {
  Shard &s = shard_of(p);
  std::lock_guard<std::mutex> g(s.mu);
  auto it = s.live.find(p);
  if (it == s.live.end() || it->second != k) return false;
  s.live.erase(it);
  return true;
}

HandleKind handle_kind_of(const void *p) noexcept {
  Shard &s = shard_of(p);
  std::lock_guard<std::mutex> g(s.mu);
  auto it = s.live.find(p);
  return it == s.live.end() ? HandleKind::none : it->second;
}

void fail_handle(const void *p, HandleKind want, const char *arg) { fail_arg(arg, why(p, want)); }

namespace {
// Why p is not a live tensor handle. Reads the registries and the slot
// table only, never the memory p may point to.
std::string why_tensor(const void *p) {
  HandleKind got = handle_kind_of(p);
  if (got == HandleKind::none)
    return "is not a live ctorch_tensor handle (already freed, or a value ctorch never returned)";
  return std::string("is a ") + kind_name(got) + " handle, not a ctorch_tensor";
}
}  // namespace

void fail_tensor(const void *h, const char *arg) {
  if (!h) fail_null_handle(arg);
  fail_arg(arg, why_tensor(h));
}
void fail_tensor_element(const void *h, const char *arg, size_t i) {
  fail_arg(arg, "element " + std::to_string(i) + (h ? " " + why_tensor(h) : std::string(" is NULL")));
}
void bad_tensor_free(const void *h, const char *fn) noexcept {
  try {
    set_error(fn, CTORCH_INVALID_ARGUMENT, "the handle " + why_tensor(h) + "; nothing was freed");
  } catch (...) {
  }
}

void bad_free(const void *p, HandleKind want, const char *fn) noexcept {
  try {
    set_error(fn, CTORCH_INVALID_ARGUMENT, "the handle " + why(p, want) + "; nothing was freed");
  } catch (...) {
  }
}

}  // namespace ctorch
