// Linked into the libFuzzer binaries that load libtorch only (not the
// replay programs, which keep libtorch's behaviour whole). libtorch 1.13
// builds a symbolised C++ backtrace in the constructor of every c10::Error
// (backtrace() + dladdr() over the ~100k symbols of libtorch_cpu): under
// ASan about 5 ms per error, and most fuzzed inputs fail several checks.
// Profiled (perf), the interpreter harness spent 74% of its time in glibc's
// _dl_addr and ran ~150 inputs/s; with the fetcher below ~1,400/s. What is
// fuzzed is ctorch's handling of the error, not libtorch's backtrace text
// (ctorch_last_error_backtrace then carries this placeholder instead).
#include <c10/util/Logging.h>

#include <string>

namespace {

struct NoBacktrace {
  NoBacktrace() {
    c10::SetStackTraceFetcher([]() -> std::string { return "(libtorch backtraces are off in the fuzzers)"; });
  }
} g_no_backtrace;

}  // namespace
