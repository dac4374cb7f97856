#!/bin/sh
# Runs a test that embeds CPython (the bridge) with leak checking off when
# it runs under AddressSanitizer (scripts/sanitize): the interpreter is never
# finalized and the extension modules it loads (torch, onnxruntime, OpenSSL)
# keep their objects alive at exit, as in every Python process; the
# Python-run tests turn it off the same way (scripts/sanitize's python-asan).
# ASan's memory-error checks and UBSan stay on. The bridge's own reference
# counting is checked by test_pybridge's 1e5-call RSS bound (plain builds).
if [ -n "${ASAN_OPTIONS:-}" ]; then
  ASAN_OPTIONS="$ASAN_OPTIONS:detect_leaks=0"
  export ASAN_OPTIONS
fi
exec "$@"
