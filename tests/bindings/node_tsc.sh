#!/usr/bin/env bash
# The Node package's TypeScript declarations (index.d.ts, generated from
# api.json by node/dts.py), checked two ways:
#   node_tsc.sh PKG REPO tsc    tsc --strict --noEmit over every Node example
#                               (examples/node/*.js, checkJs) and
#                               tests/bindings/node_types_check.ts, which also
#                               asserts wrong calls are refused (@ts-expect-error)
#   node_tsc.sh PKG REPO names  every name the declarations give exists in the
#                               loaded package with the declared kind, and every
#                               name the package has is declared (node_types.js)
# typescript and @types/node come from npm (pinned, as run_node.sh fetches
# koffi) into PKG/../node-tools; without node or npm the test is skipped (77).
set -uo pipefail
pkg=$(cd "$1" && pwd); repo=$(cd "$2" && pwd); mode=$3
tools="$pkg/../node-tools"
if [ -n "${CTORCH_BINDING_SKIP:-}" ]; then echo "skipped: $CTORCH_BINDING_SKIP"; exit 77; fi
if ! command -v node >/dev/null; then echo "skipped: node is not installed"; exit 77; fi
mkdir -p "$tools"
if [ ! -f "$tools/node_modules/typescript/package.json" ] || [ ! -f "$tools/node_modules/@types/node/package.json" ]; then
  if ! command -v npm >/dev/null; then echo "skipped: npm is not installed (needed for typescript)"; exit 77; fi
  ( flock 9
    [ -f "$tools/node_modules/@types/node/package.json" ] ||
      (cd "$tools" && timeout 300 npm install --no-save --no-audit --no-fund --no-package-lock \
        --ignore-scripts typescript@5.9.3 @types/node@20.19.43 >npm-install.log 2>&1)
  ) 9>"$tools/.npm-install.lock"
  if [ ! -f "$tools/node_modules/@types/node/package.json" ]; then
    echo "skipped: could not install typescript from npm (see $tools/npm-install.log)"; tail -3 "$tools/npm-install.log"; exit 77
  fi
fi
tools=$(cd "$tools" && pwd)
case "$mode" in
tsc)
  work="$pkg/../node-tsc"; mkdir -p "$work"
  files=$(for f in "$repo"/examples/node/*.js "$repo"/tests/bindings/node_types_check.ts; do printf '"%s",' "$f"; done)
  # "ctorch" resolves to the generated package (its package.json "types"), as
  # for a user who installed it; @types/node from the tools directory.
  cat >"$work/tsconfig.json" <<EOF
{ "compilerOptions": { "strict": true, "noEmit": true, "allowJs": true, "checkJs": true,
    "module": "commonjs", "moduleResolution": "node10", "target": "es2022",
    "lib": ["es2022", "esnext.disposable"], "types": ["node"], "typeRoots": ["$tools/node_modules/@types"],
    "baseUrl": ".", "paths": { "ctorch": ["$pkg"] } },
  "files": [${files%,}] }
EOF
  n=$(echo "$files" | tr ',' '\n' | grep -c .)
  node "$tools/node_modules/typescript/bin/tsc" -p "$work/tsconfig.json" --strict --noEmit
  rc=$?
  echo "tsc $(node "$tools/node_modules/typescript/bin/tsc" -v) --strict --noEmit over $n files: exit $rc"
  # A fresh project, as `npm install <ctorch tarball> typescript` makes one:
  # the package as npm packs it (its "files" only) in node_modules/ctorch,
  # typescript beside it, no @types/node; node_fresh_check.ts compiled with
  # tsc --init's tsconfig, then with --strict, ES2022 and every .d.ts checked.
  fresh="$pkg/../node-fresh"; rm -rf "$fresh"; mkdir -p "$fresh/node_modules/ctorch"
  tarball=$(cd "$pkg" && npm pack --silent --pack-destination "$fresh" 2>/dev/null | tail -1)
  if [ -z "$tarball" ] || ! tar xzf "$fresh/$tarball" -C "$fresh/node_modules/ctorch" --strip-components=1; then
    echo "npm pack of $pkg failed"; exit 1
  fi
  ln -s "$tools/node_modules/typescript" "$fresh/node_modules/typescript"
  cp "$repo/tests/bindings/node_fresh_check.ts" "$fresh/main.ts"
  tsc_fresh="$fresh/node_modules/typescript/bin/tsc"
  (cd "$fresh" && node "$tsc_fresh" --init >/dev/null && node "$tsc_fresh" -p . --noEmit); rc2=$?
  echo "fresh project (npm pack, no @types/node), tsc --init's tsconfig: exit $rc2"
  (cd "$fresh" && node "$tsc_fresh" --strict --noEmit --target es2022 --module commonjs main.ts); rc3=$?
  echo "fresh project, tsc --strict --target es2022 --module commonjs main.ts: exit $rc3"
  [ $rc -eq 0 ] && [ $rc2 -eq 0 ] && [ $rc3 -eq 0 ] ;;
names)
  export CTORCH_TYPESCRIPT="$tools/node_modules/typescript"
  exec "$repo/tests/bindings/run_node.sh" "$pkg" "$repo/tests/bindings/node_types.js" ;;
*) echo "usage: node_tsc.sh PKG REPO tsc|names"; exit 2 ;;
esac
