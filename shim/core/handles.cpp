// The registry of live handles (internal.h: Live, check_handle,
// release_handle). A set of (pointer, kind) pairs, sharded by pointer so that
// threads creating, freeing and checking different handles rarely share a
// lock (a binding's finaliser frees on its own thread while others compute).
//
// Keyed by the pointer's value: a check never reads the memory a handle
// points to, so a freed handle (memory returned to the allocator, perhaps
// reused, perhaps unmapped) or a pointer that was never a handle is refused
// without touching it, and AddressSanitizer sees no use after free.
//
// Each shard is an open-addressing table (linear probing, backward-shift
// erase: no tombstones) behind a spin lock, not a std::unordered_map behind
// a std::mutex: the map allocated a node per handle and the mutex cost two
// library calls per operation. Converting a 5-million-item Python list
// registers, checks and frees 5 million value handles; with the map that
// was about half of its 6.7 s and +200 MiB (docs/benchmarks.md, "Handle
// registry and scopes").
#include "internal.h"

#include <sched.h>

#include <atomic>
#include <new>

namespace ctorch {
namespace {

constexpr size_t kShards = 64;

// A lock held for a few dozen instructions (a table grows or shrinks while
// held, rarely): spin, then yield to whoever holds it.
class RegistryLock {
 public:
  void lock() noexcept {
    for (int spins = 0; busy_.exchange(true, std::memory_order_acquire); ++spins)
      while (busy_.load(std::memory_order_relaxed)) {
        if (spins > 64) sched_yield();
#if defined(__x86_64__) || defined(__i386__)
        else __builtin_ia32_pause();
#endif
      }
  }
  void unlock() noexcept { busy_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> busy_{false};
};

struct RegistryGuard {
  RegistryLock &l;
  explicit RegistryGuard(RegistryLock &s) noexcept : l(s) { l.lock(); }
  ~RegistryGuard() { l.unlock(); }
  RegistryGuard(const RegistryGuard &) = delete;
  RegistryGuard &operator=(const RegistryGuard &) = delete;
};

// The pointer's hash: shard from its top 6 bits, slot base from the next
// ones. Only the 256-byte block holding p is mixed; p's place in its block
// (16-byte steps, heap handles are 16-byte aligned) is added to the slot
// base (Shard::home). Handles made one after another (a 5-million-item
// list converted by the Python bridge: a value per item, made, checked and
// freed in order) sit side by side on the heap, so their entries share a
// block's 16 adjacent slots (two cache lines) instead of each landing on a
// cache line (and page) of its own: with millions of live handles every
// add, check and take was a cache and TLB miss (perf: ~45% of
// ctorch_py_to_value's time in handle_add/handle_kind_of/handle_take).
// Unrelated handles still land in random blocks, so probe runs stay short.
constexpr unsigned kBlockShift = 8;
inline uint64_t registry_mix(const void *p) noexcept {
  return (reinterpret_cast<uintptr_t>(p) >> kBlockShift) * 0x9E3779B97F4A7C15ull;
}
inline size_t block_offset(uintptr_t p) noexcept {
  return static_cast<size_t>((p >> 4) & ((uintptr_t(1) << (kBlockShift - 4)) - 1));
}

// An entry is the pointer shifted left 7 bits with the kind in the low 7
// (user-space addresses are below 2^57), so a probe reads one word; 0 marks
// an empty slot.
constexpr unsigned kKindBits = 7;
constexpr uint64_t kKindMask = (uint64_t(1) << kKindBits) - 1;
static_assert(static_cast<uint64_t>(HandleKind::ddp) <= kKindMask, "handle kinds fit in the entry");

struct alignas(64) Shard {  // one cache line each: no false sharing between locks
  RegistryLock mu;
  uint64_t *slots = nullptr;  // entries, or 0
  size_t mask = 0;            // capacity - 1 (capacity a power of two, or 0)
  size_t n = 0;               // entries

  size_t home(uint64_t e) const noexcept {
    const uintptr_t p = static_cast<uintptr_t>(e >> kKindBits);
    return (static_cast<size_t>((registry_mix(reinterpret_cast<const void *>(p)) << 6) >> 40) + block_offset(p)) & mask;
  }
  // The slot holding p's entry, or SIZE_MAX.
  size_t find(uintptr_t p) const noexcept {
    if (!slots || p == 0) return SIZE_MAX;
    for (size_t i = home(uint64_t(p) << kKindBits);; i = (i + 1) & mask) {
      if (slots[i] == 0) return SIZE_MAX;
      if (slots[i] >> kKindBits == p) return i;
    }
  }
  // Inserts an entry whose pointer is absent into a table with room.
  void put(uint64_t e) noexcept {
    size_t i = home(e);
    while (slots[i] != 0) i = (i + 1) & mask;
    slots[i] = e;
  }
  // Rebuilds with `cap` slots (a power of two > n); false if out of memory.
  bool resize(size_t cap) noexcept {
    uint64_t *ns = new (std::nothrow) uint64_t[cap]();
    if (!ns) return false;
    uint64_t *os = slots;
    const size_t ocap = slots ? mask + 1 : 0;
    slots = ns;
    mask = cap - 1;
    for (size_t i = 0; i < ocap; ++i)
      if (os[i]) put(os[i]);
    delete[] os;
    return true;
  }
  // Removes slot i, shifting back the entries of its probe run.
  void erase(size_t i) noexcept {
    for (size_t j = i;;) {
      j = (j + 1) & mask;
      if (slots[j] == 0) break;
      const size_t h = home(slots[j]);
      // slots[j] may fill the hole at i unless its home lies in (i, j].
      if (i <= j ? (h <= i || h > j) : (h <= i && h > j)) {
        slots[i] = slots[j];
        i = j;
      }
    }
    slots[i] = 0;
    --n;
    // Shrink a table that emptied (a burst of handles freed), to a load
    // under 1/2: its memory goes back.
    if (mask >= 1023 && n * 8 < mask + 1) (void)resize((mask + 1) / 4);
  }
  HandleKind kind(size_t i) const noexcept { return static_cast<HandleKind>(slots[i] & kKindMask); }
};

// Never destroyed: handles may be freed by other libraries' static
// destructors or a binding's last finalisers after this library's own
// statics are gone.
Shard *shards() {
  static Shard *s = new Shard[kShards];
  return s;
}

Shard &shard_of(const void *p) {
  return shards()[registry_mix(p) >> 58];  // the top 6 bits: 64 shards
}

const char *handle_type_name(HandleKind k) {
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
    case HandleKind::op: return "ctorch_op";
    case HandleKind::lm_model: return "ctorch_lm_model";
    case HandleKind::lm_session: return "ctorch_lm_session";
    case HandleKind::lm_sampler: return "ctorch_lm_sampler";
    case HandleKind::lm_stream: return "ctorch_lm_stream";
    case HandleKind::lm_detokenizer: return "ctorch_lm_detokenizer";
    case HandleKind::ddp: return "ctorch_ddp";
  }
  return "?";
}

std::string why(const void *p, HandleKind want) {
  HandleKind got = handle_kind_of(p);
  if (got == HandleKind::none && tensor_live(p))
    return std::string("is a ctorch_tensor handle, not a ") + handle_type_name(want);
  if (got == HandleKind::none)
    return std::string("is not a live ") + handle_type_name(want) +
           " handle (already freed, or a pointer ctorch never returned)";
  return std::string("is a ") + handle_type_name(got) + " handle, not a " + handle_type_name(want);
}

}  // namespace

void handle_add(const void *p, HandleKind k) {
  const uintptr_t u = reinterpret_cast<uintptr_t>(p);
  if (u >> (64 - kKindBits)) throw std::bad_alloc();  // not a user-space address: cannot be recorded
  const uint64_t e = uint64_t(u) << kKindBits | static_cast<uint64_t>(k);
  Shard &s = shard_of(p);
  RegistryGuard g(s.mu);
  const size_t i = s.find(u);
  if (i != SIZE_MAX) {
    s.slots[i] = e;
    return;
  }
  // Load at most 1/2: linear probing's runs, which every probe and erase
  // walks, stay short.
  if (!s.slots || (s.n + 1) * 2 > s.mask + 1)
    if (!s.resize(s.slots ? (s.mask + 1) * 2 : 16)) throw std::bad_alloc();
  s.put(e);
  ++s.n;
}

void handle_remove(const void *p, HandleKind k) noexcept {
  Shard &s = shard_of(p);
  RegistryGuard g(s.mu);
  const size_t i = s.find(reinterpret_cast<uintptr_t>(p));
  if (i != SIZE_MAX && s.kind(i) == k) s.erase(i);
}

bool handle_take(const void *p, HandleKind k) noexcept {
  Shard &s = shard_of(p);
  RegistryGuard g(s.mu);
  const size_t i = s.find(reinterpret_cast<uintptr_t>(p));
  if (i == SIZE_MAX || s.kind(i) != k) return false;
  s.erase(i);
  return true;
}

HandleKind handle_kind_of(const void *p) noexcept {
  if (!p) return HandleKind::none;
  Shard &s = shard_of(p);
  RegistryGuard g(s.mu);
  const size_t i = s.find(reinterpret_cast<uintptr_t>(p));
  return i == SIZE_MAX ? HandleKind::none : s.kind(i);
}

void fail_handle(const void *p, HandleKind want, const char *arg) { fail_arg(arg, why(p, want)); }

namespace {
// Why p is not a live tensor handle. Reads the registries and the slot
// table only, never the memory p may point to.
std::string why_tensor(const void *p) {
  HandleKind got = handle_kind_of(p);
  if (got == HandleKind::none)
    return "is not a live ctorch_tensor handle (already freed, or a value ctorch never returned)";
  return std::string("is a ") + handle_type_name(got) + " handle, not a ctorch_tensor";
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
