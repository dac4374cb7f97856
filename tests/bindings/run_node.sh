#!/usr/bin/env bash
# Runs a Node.js test against the generated package in $1: installs koffi
# into the package (once; npm is reachable from the project's machines) and
# reports itself skipped (77) when node or koffi cannot be had.
set -uo pipefail
pkg=$1; shift
if [ -n "${CTORCH_BINDING_SKIP:-}" ]; then echo "skipped: $CTORCH_BINDING_SKIP"; exit 77; fi
if ! command -v node >/dev/null; then echo "skipped: node is not installed"; exit 77; fi
if [ ! -f "$pkg/node_modules/koffi/package.json" ]; then
  if ! command -v npm >/dev/null; then echo "skipped: npm is not installed (needed for koffi)"; exit 77; fi
  # flock: two tests may start at once (ctest -j2).
  ( flock 9
    [ -f "$pkg/node_modules/koffi/package.json" ] ||
      (cd "$pkg" && timeout 300 npm install --no-save --no-audit --no-fund --no-package-lock \
        --ignore-scripts koffi@3.3.4 >npm-install.log 2>&1)
  ) 9>"$pkg/.npm-install.lock"
  if [ ! -f "$pkg/node_modules/koffi/package.json" ]; then
    echo "skipped: could not install koffi from npm (see $pkg/npm-install.log)"; tail -3 "$pkg/npm-install.log"; exit 77
  fi
fi
exec node "$@"
