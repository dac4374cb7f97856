// Shared by the fuzz harnesses (fuzz/*.cpp). They use only the public C API.
// Properties every harness enforces after each ctorch call (a violation
// aborts, which libFuzzer and the replay driver report as a crash):
//   - the status is one of the ctorch_status values;
//   - a non-OK status leaves a non-empty last error naming a ctorch function.
#pragma once

#include <ctorch.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace fz {

[[noreturn]] inline void violation(const char *what, const char *call, ctorch_status st) {
  std::fprintf(stderr, "CONTRACT VIOLATION in %s: %s (status %d, last error '%s')\n", call, what, (int)st,
               ctorch_last_error());
  std::abort();
}

// CTORCH_FUZZ_VERBOSE=1 prints every failed call's status and message
// (for triage when replaying one input; off under the fuzzers).
inline bool verbose() {
  static const bool on = [] {
    const char *v = std::getenv("CTORCH_FUZZ_VERBOSE");
    return v && *v && *v != '0';
  }();
  return on;
}

// Checks the status contract and returns the status.
inline ctorch_status check(ctorch_status st, const char *call) {
  if ((int)st < (int)CTORCH_OK || (int)st > (int)CTORCH_UNKNOWN) violation("status out of range", call, st);
  if (st != CTORCH_OK) {
    const char *e = ctorch_last_error();
    if (!e || !*e) violation("failure without a last error", call, st);
    if (std::strncmp(e, "ctorch_", 7) != 0) violation("last error does not name a ctorch function", call, st);
    if (verbose()) std::fprintf(stderr, "  %s -> %s: %.400s\n", call, ctorch_status_name(st), e);
  }
  return st;
}
#define FZ(call) ::fz::check((call), #call)

// Reads the fuzzer's bytes; past the end it yields zeros.
struct Bytes {
  const uint8_t *p;
  size_t n;
  bool empty() const { return n == 0; }
  uint8_t u8() {
    if (!n) return 0;
    --n;
    return *p++;
  }
  uint16_t u16() { return (uint16_t)(u8() | (u8() << 8)); }
  uint32_t u32() { return (uint32_t)u16() | ((uint32_t)u16() << 16); }
  uint64_t u64() { return (uint64_t)u32() | ((uint64_t)u32() << 32); }
  // Up to len bytes (fewer at the end).
  size_t take(const uint8_t **out, size_t len) {
    if (len > n) len = n;
    *out = p;
    p += len;
    n -= len;
    return len;
  }
};

// Reads a loaded tensor's every byte (copy_to: ASan checks that the bytes
// lie inside its storage); false, reading nothing, for one of over 2^20
// elements (a harness's inputs stay small; a large one is the load limit's
// business, not the reader's).
inline bool read_all(ctorch_tensor t) {
  int64_t n = 0;
  FZ(ctorch_tensor_numel(&n, t));
  size_t isz = 0;
  ctorch_dtype d;
  FZ(ctorch_tensor_dtype(&d, t));
  FZ(ctorch_dtype_size(&isz, d));
  if (n > (1 << 20)) return false;
  std::vector<unsigned char> buf((size_t)n * isz + 1);
  FZ(ctorch_tensor_copy_to(buf.data(), buf.size(), t));
  return true;
}

// read_all, then a reduction over the values.
inline void inspect(ctorch_tensor t) {
  if (!read_all(t)) return;
  ctorch_tensor s = nullptr;
  if (FZ(ctorch_sum(&s, t, nullptr)) == CTORCH_OK) ctorch_tensor_free(s);
}

// One-time process setup, for the fuzzers and the replay programs alike:
//  - one intra-op thread (the machine is shared, runs are reproducible) and
//    a fixed seed;
//  - a load limit (ctorch_set_load_limit): a file that declares more memory
//    is refused with CTORCH_OUT_OF_MEMORY before it is taken, so that an
//    in-process fuzzer stays within libFuzzer's -rss_limit_mb;
//  - ctorch's failure log (ctorch_error_message) filled to its steady
//    state. libFuzzer runs LeakSanitizer's full scan (~70 ms with libtorch's
//    heap) after every input that made more allocations than it freed. The
//    log keeps the last 1,024 messages: until it is full each failing call
//    keeps one string, so every input looked like a leak and the fuzzers
//    ran at ~14 inputs/s. Once full, a failure frees the entry it replaces
//    and only a real leak (or a cache that grows) triggers the scan. 1,100
//    failing calls, with messages longer than the short-string buffer, fill it.
constexpr uint64_t kLoadLimit = 64u << 20;
inline void init_once() {
  static bool done = false;
  if (done) return;
  done = true;
  ctorch_set_num_threads(1);
  ctorch_manual_seed(0);
  ctorch_set_load_limit(nullptr, kLoadLimit);
  for (int i = 0; i < 1100; ++i) ctorch_tensor_numel(nullptr, nullptr);
}

}  // namespace fz
