/* CTORCH_HEAP=keep (docs/modules.md, "Memory between calls"): with it set
 * when the library loads, an 8 MiB tensor comes from glibc's heap, not from
 * an mmap of its own, and its memory stays in the heap after it is freed, so
 * the next call's activations reuse those pages. ctest runs this with
 * CTORCH_HEAP=keep; it skips where the allocator is not glibc's (ASan's
 * replaces it, and mallinfo2 then sees nothing). */
#include <malloc.h>

#include "../check_main.h"

START_TEST(keep_keeps) {
  const int64_t n = 2 * 1024 * 1024; /* 8 MiB of float32 */
  const size_t bytes = (size_t)n * 4;
  const ctorch_dtype f32 = CTORCH_FLOAT32;
  const char *v = getenv("CTORCH_HEAP");
  struct mallinfo2 before, held, after;
  ctorch_tensor t = NULL;
  ck_assert_msg(v && strcmp(v, "keep") == 0, "run with CTORCH_HEAP=keep (ctest sets it)");
  before = mallinfo2();
  CT_OK(ctorch_zeros(&t, &n, 1, &f32, NULL, NULL, NULL));
  held = mallinfo2();
  ctorch_tensor_free(t);
  after = mallinfo2();
  /* glibc's default would map a first block this size on its own (the
   * threshold starts at 128 KiB) and unmap it at the free */
  ck_assert_msg(held.hblkhd == before.hblkhd, "mapped bytes %zu -> %zu: the tensor was mmap'ed", before.hblkhd,
                held.hblkhd);
  ck_assert_msg(held.arena >= before.arena + bytes / 2 || before.fordblks >= bytes,
                "heap %zu -> %zu bytes (%zu free before): the tensor is not in the heap", before.arena, held.arena,
                before.fordblks);
  ck_assert_msg(after.arena == held.arena, "heap %zu -> %zu bytes at the free: trimmed", held.arena, after.arena);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("heap_keep");
  TCase *tc = tcase_create("keep");
  tcase_add_test(tc, keep_keeps);
  suite_add_tcase(s, tc);
  return s;
}

/* ASan replaces malloc, and mallinfo2 then sees no heap at all. */
static const char *glibc_heap_missing(void) {
  void *probe = malloc(1 << 20);
  struct mallinfo2 m = mallinfo2();
  free(probe);
  return m.arena == 0 && m.hblkhd == 0 ? "mallinfo2 sees no heap: the allocator is not glibc's (a sanitizer's?)"
                                       : NULL;
}

CTORCH_CHECK_MAIN_UNLESS(glibc_heap_missing)
