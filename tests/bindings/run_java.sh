#!/usr/bin/env bash
# The Java binding of this build (build/bindings/java, a Maven project) with
# its JUnit tests (tests/java), in one Maven invocation: compile, then every
# test class on Surefire in one JVM.
#   test [--sweep] [-Dtest=PATTERN]: mvn test (the tests' classes and methods
#          by name); with --sweep, then the bad-input sweep on the classes
#          that run compiled (no second Maven start)
#   example FILE [ARGS...]: runs the single-file program FILE
#          (examples/java/*.java) with ARGS on the package's classes,
#          compiling them first (mvn compile) unless a Maven run of this
#          script left them newer than every source
#   sweep: the bad-input sweep (tests/java: Sweep) in child JVMs under
#          rust_sweep.py, which counts the crashes, compiling the tests first
#          (mvn test-compile) unless they are up to date as above
#   bench [quick]: the JMH per-call benchmark (tests/java: CallCostBench);
#          prints one JSON line of ns per call, the best iteration's and the
#          mean (bench/bindings/run reads it)
#   env:   prints the JDK it would use
# A JDK 22 or newer is needed (java.lang.foreign); the first found of:
# CTORCH_JAVA_HOME, JAVA_HOME, the Temurin 25 JDK's usual directory, any
# /usr/lib/jvm/*-2[2-9]*. Maven runs offline (-o) when its repository already
# holds the plugins and JUnit, online otherwise (Maven Central). Skipped (77)
# without such a JDK, without mvn, or when neither offline nor online Maven can
# resolve what the project needs.
# Usage: run_java.sh MODE BINDINGS_JAVA_DIR LIBCTORCH [MAVEN ARGS...]
set -uo pipefail
mode=$1 pkg=$(realpath -m "$2") lib=$(realpath -m "$3")
shift 3
src=$(cd "$(dirname "$0")/../.." && pwd)
skip() { echo "skipped: $*"; exit 77; }
if [ -n "${CTORCH_BINDING_SKIP:-}" ]; then skip "$CTORCH_BINDING_SKIP"; fi

java_major() {  # java_major JAVA_HOME: the feature version of its java, or 0
  local v
  v=$("$1/bin/java" -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java\.specification\.version = //p')
  echo "${v:-0}"
}
tried=()
jdk=""
for c in "${CTORCH_JAVA_HOME:-}" "${JAVA_HOME:-}" /usr/lib/jvm/temurin-25-jdk-amd64 /usr/lib/jvm/*-2[2-9]* /usr/lib/jvm/*-2[2-9]-*; do
  [ -n "$c" ] || continue
  if [ ! -x "$c/bin/javac" ]; then
    tried+=("$c (no bin/javac)")
    continue
  fi
  m=$(java_major "$c")
  if [ "${m%%.*}" -ge 22 ] 2>/dev/null; then jdk=$c; break; fi
  tried+=("$c (Java $m; java.lang.foreign needs 22+)")
done
[ -n "$jdk" ] || skip "no JDK 22+ found (tried: ${tried[*]:-nothing}); set CTORCH_JAVA_HOME to one (Temurin 25 is what CI uses)"
command -v mvn >/dev/null || skip "Maven (mvn) is not installed (apt-get install maven)"
export JAVA_HOME=$jdk
if [ "$mode" = env ]; then echo "JAVA_HOME=$jdk"; exit 0; fi
export CTORCH_LIB=$lib OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
# Maven's own JVM (Guava in Maven 3.8) warns about sun.misc.Unsafe on JDK 24+: not ours.
# C1 only: javac over the ~6 MB of generated sources takes half the time of the default
# tiered C2 (about 10 s against 20 s on the 2-core CI machine); a run is too short for C2 to repay.
export MAVEN_OPTS="${MAVEN_OPTS:-} --sun-misc-unsafe-memory-access=allow -XX:TieredStopAtLevel=1"
stamp=$pkg/target/ctorch-compiled.stamp
compiled() {  # compiled: the classes and test classes a Maven run of this script left are newer than every source
  [ -f "$stamp" ] && [ -z "$(find "$pkg/src" "$pkg/pom.xml" "$src/tests/java" -newer "$stamp" -print -quit)" ]
}
sweep() {
  python3 "$src/tests/bindings/rust_sweep.py" --lang java --timeout 120 -- "$JAVA_HOME/bin/java" \
    --enable-native-access=ALL-UNNAMED -XX:TieredStopAtLevel=1 -Xmx1g \
    -cp "$pkg/target/classes:$pkg/target/test-classes" org.ctorch.tests.Sweep
}

mvn_run() {  # mvn_run LOG ARGS...: offline first, then online if offline lacked an artifact
  local log=$1
  shift
  mvn -B -o "$@" >"$log" 2>&1 && return 0
  if grep -q "offline mode\|has not been downloaded\|Cannot access .* in offline" "$log"; then
    echo "(Maven's repository lacks an artifact: resolving online)"
    mvn -B "$@" >"$log" 2>&1 && return 0
    if grep -q "Could not transfer\|Unknown host\|Could not resolve dependencies\|Network is unreachable" "$log"; then
      tail -20 "$log"
      skip "Maven cannot resolve the plugins or JUnit (offline, and Maven Central unreachable)"
    fi
  fi
  return 1
}

case "$mode" in
  test)
    log=$pkg/target-test.log
    with_sweep=0
    if [ "${1:-}" = --sweep ]; then with_sweep=1; shift; fi
    if ! mvn_run "$log" -f "$pkg/pom.xml" test "-Dctorch.tests=$src/tests/java" "$@"; then
      grep -E "Tests run|FAIL|ERROR|expected|Exception" "$log" | head -80
      echo "mvn test failed (full log: $log)"
      exit 1
    fi
    grep -E "Tests run:|Running org|skipped" "$log"
    # A test class that reports itself skipped (assumption failed) counts as a skip.
    if grep -q "Tests run: [0-9]*, Failures: 0, Errors: 0, Skipped: [1-9]" "$log" && \
       ! grep -q "Tests run: [0-9]*, Failures: 0, Errors: 0, Skipped: 0" "$log"; then
      skip "every JUnit test skipped itself"
    fi
    touch "$stamp"
    if [ $with_sweep = 1 ]; then sweep || exit 1; fi
    ;;
  example)
    prog=$1
    shift
    log=$pkg/target-compile.log
    if ! compiled && ! mvn_run "$log" -q -f "$pkg/pom.xml" compile; then
      cat "$log"
      echo "mvn compile failed"
      exit 1
    fi
    exec "$JAVA_HOME/bin/java" --enable-native-access=ALL-UNNAMED -XX:TieredStopAtLevel=1 -cp "$pkg/target/classes" \
      "$prog" "$@"
    ;;
  sweep)
    log=$pkg/target-test-compile.log
    if ! compiled && ! mvn_run "$log" -q -f "$pkg/pom.xml" test-compile "-Dctorch.tests=$src/tests/java"; then
      cat "$log"
      echo "mvn test-compile failed"
      exit 1
    fi
    touch "$stamp"
    sweep
    ;;
  bench)
    log=$pkg/target-bench.log
    cp_file=$pkg/target/test-classpath.txt
    if ! mvn_run "$log" -q -f "$pkg/pom.xml" test-compile dependency:build-classpath "-Dctorch.tests=$src/tests/java" \
        -Dmdep.includeScope=test "-Dmdep.outputFile=$cp_file"; then
      cat "$log" >&2
      echo "mvn test-compile failed" >&2
      exit 1
    fi
    # One fork, 1 s iterations; quick: one of each (it checks that the benchmark runs).
    if [ "${1:-}" = quick ]; then runs=(-wi 1 -i 1 -w 200ms -r 200ms); else runs=(-wi 5 -i 10 -w 1s -r 1s); fi
    json=$pkg/target/jmh-result.json
    "$JAVA_HOME/bin/java" --enable-native-access=ALL-UNNAMED \
      -cp "$pkg/target/classes:$pkg/target/test-classes:$(cat "$cp_file")" org.openjdk.jmh.Main CallCostBench \
      -f 1 "${runs[@]}" -jvmArgsAppend --enable-native-access=ALL-UNNAMED -rf json -rff "$json" >&2 || exit 1
    # Per benchmark its best 1 s iteration (<name>_ns: the statistic bench_c gives C, the best of its
    # rounds, so the ratio compares like with like) and JMH's mean (<name>_mean_ns).
    python3 - "$json" <<'PY'
import json, sys
out = {}
for x in json.load(open(sys.argv[1])):
    name, m = x["benchmark"].rsplit(".", 1)[1], x["primaryMetric"]
    out[name + "_ns"] = round(min(v for fork in m["rawData"] for v in fork), 1)
    out[name + "_mean_ns"] = round(m["score"], 1)
print(json.dumps(out))
PY
    ;;
  *)
    echo "run_java.sh: unknown mode $mode" >&2
    exit 2
    ;;
esac
