// Linked into the libFuzzer binaries that load libtorch only (not the
// replay programs). Under ASan a throwing operator new that cannot be
// satisfied aborts the process ("allocator is out of memory") instead of
// throwing std::bad_alloc as libstdc++'s does. libtorch's TorchScript
// importer trusts length fields, so a hostile file asks for tens of
// gigabytes; in production that is a std::bad_alloc which ctorch turns into
// CTORCH_OUT_OF_MEMORY. This replacement restores that behaviour on top of
// ASan's malloc (allocator_may_return_null=1), which still checks every
// access and leak.
//
// It also caps the heap, so that an input which asks for too much memory
// is an out-of-memory status inside the process rather than the end of an
// in-process run (libFuzzer's -rss_limit_mb and -malloc_limit_mb stop the
// whole run): a request that would take the live heap (all threads, as ASan
// counts it) above CTORCH_FUZZ_HEAP_MB (default 1024) throws std::bad_alloc.
// Single allocations of any kind (malloc, posix_memalign: tensor storage)
// above ASan's max_allocation_size_mb return NULL (scripts/fuzz sets it
// below -malloc_limit_mb), which libtorch also reports as out of memory.
#include <sanitizer/allocator_interface.h>

#include <cstdlib>
#include <new>

namespace {

size_t heap_cap() {
  static const size_t cap = [] {
    const char *v = std::getenv("CTORCH_FUZZ_HEAP_MB");
    long mb = v && *v ? std::atol(v) : 1024;
    return mb > 0 ? (size_t)mb << 20 : (size_t)0;
  }();
  return cap;
}

}  // namespace

void *operator new(std::size_t n) {
  size_t cap = heap_cap();
  if (cap && (n > cap || __sanitizer_get_current_allocated_bytes() > cap - n)) throw std::bad_alloc();
  void *p = std::malloc(n ? n : 1);
  if (!p) throw std::bad_alloc();
  return p;
}
void *operator new[](std::size_t n) { return operator new(n); }
void operator delete(void *p) noexcept { std::free(p); }
void operator delete[](void *p) noexcept { std::free(p); }
void operator delete(void *p, std::size_t) noexcept { std::free(p); }
void operator delete[](void *p, std::size_t) noexcept { std::free(p); }
