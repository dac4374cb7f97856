// Linked into the libFuzzer binaries only. Under ASan a throwing operator
// new that cannot be satisfied aborts the process ("allocator is out of
// memory") instead of throwing std::bad_alloc as libstdc++'s does. libtorch's
// TorchScript importer trusts length fields, so a hostile file asks for tens
// of gigabytes; in production that is a std::bad_alloc which ctorch turns
// into CTORCH_OUT_OF_MEMORY. This replacement restores that behaviour on top
// of ASan's malloc (allocator_may_return_null=1), which still checks every
// access and leak.
#include <cstdlib>
#include <new>

void *operator new(std::size_t n) {
  void *p = std::malloc(n ? n : 1);
  if (!p) throw std::bad_alloc();
  return p;
}
void *operator new[](std::size_t n) { return operator new(n); }
void operator delete(void *p) noexcept { std::free(p); }
void operator delete[](void *p) noexcept { std::free(p); }
void operator delete(void *p, std::size_t) noexcept { std::free(p); }
void operator delete[](void *p, std::size_t) noexcept { std::free(p); }
