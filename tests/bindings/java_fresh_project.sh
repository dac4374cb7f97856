#!/usr/bin/env bash
# A fresh Maven project that declares ONE dependency, the natives artifact of
# this build (org.ctorch:ctorch-native-torch<M.m>, classifier linux-x86_64,
# whose pom brings org.ctorch:ctorch), from a local Maven repository of the
# artifacts `scripts/package java` writes, compiles and runs the first Java program of
# docs/bindings-java.md (README.md's, where it has one) with the ctorch jar on
# the module path (the named module org.ctorch) and nothing of the build tree
# (no CTORCH_LIB: the library is extracted from the natives jar to a cache
# folder under WORK), and checks that it prints what its "// prints ..."
# comment says. Skipped (77) as run_java.sh skips.
# Usage: java_fresh_project.sh SOURCE_DIR BUILD_DIR WORK
set -uo pipefail
src=$1 build=$2 work=$3
env_line=$("$src/tests/bindings/run_java.sh" env - -)
rc=$?
if [ $rc -ne 0 ]; then echo "$env_line"; exit $rc; fi
export "$env_line"
set -e
# Maven's local repository (for scripts/package's mvn too) is this test's own,
# beside WORK in the build tree, never the user's ~/.m2: a local repository
# caches released artifacts for good, so this build's org.ctorch artifacts
# must be fetched anew each run, and the user's (those docs/bindings-java.md
# has them install) are not this test's to replace or delete. The plugins
# Maven fetches stay in it between runs.
m2=$work-m2
rm -rf "$m2/org/ctorch"
# C1 only for Maven's JVMs (scripts/package's too): a run of seconds never repays C2's compiles.
export MAVEN_OPTS="${MAVEN_OPTS:-} -Dmaven.repo.local=$m2 --sun-misc-unsafe-memory-access=allow -XX:TieredStopAtLevel=1"
rm -rf "$work"
mkdir -p "$work/app/src/main/java"
t0=$SECONDS
CTORCH_PACKAGE_BUILD=$build "$src/scripts/package" --out "$work/dist" java >"$work/package.log" 2>&1 ||
  { cat "$work/package.log"; echo "FAIL: scripts/package java"; exit 1; }
echo "scripts/package java: $((SECONDS - t0)) s"
# scripts/package keeps Maven's offline try quiet (a plugin not yet in the repository is
# expected there), so an [ERROR] it prints is a real one, even when the online try succeeds.
if grep -q "\[ERROR\]" "$work/package.log"; then
  cat "$work/package.log"; echo "FAIL: scripts/package java printed an [ERROR]"; exit 1
fi
# The artifacts laid out as a Maven repository (a local one, reached as file:).
repo=$work/repo
natjar=$(cd "$work/dist" && ls ctorch-native-torch*-linux-x86_64.jar)
nat=${natjar%%-[0-9]*}
version=${natjar#"$nat"-}
version=${version%-linux-x86_64.jar}
# The sources and Javadoc jars Maven Central requires beside the jar, with what they are for.
for want in "sources org/ctorch/Tensor.java" "javadoc org.ctorch/org/ctorch/Tensor.html"; do
  f=$work/dist/ctorch-$version-${want%% *}.jar
  "$JAVA_HOME/bin/jar" --list --file "$f" | grep -qxF "${want#* }" ||
    { echo "FAIL: $f lacks ${want#* }"; exit 1; }
done
for a in ctorch "$nat"; do
  mkdir -p "$repo/org/ctorch/$a/$version"
  cp "$work/dist/$a-$version.pom" "$work/dist/$a-$version"*.jar "$repo/org/ctorch/$a/$version/"
done
prog=$(python3 - "$src" <<'PY'
import re, sys
for doc in ("README.md", "docs/bindings-java.md"):
    text = open(f"{sys.argv[1]}/{doc}", encoding="utf-8").read()
    blocks = re.findall(r"^```java\n(.*?)^```$", text, re.M | re.S)
    if blocks:
        print(f"{doc}\n{blocks[0]}", end="")
        break
PY
)
echo "the program: ${prog%%$'\n'*}'s first Java block"
main=$(sed -n 's/^public class \([A-Za-z0-9_]*\).*/\1/p' <<<"${prog#*$'\n'}" | head -1)
printf '%s' "${prog#*$'\n'}" >"$work/app/src/main/java/$main.java"
# The pom is docs/bindings-java.md's, as a user copies it, but for the
# dependency (this build's natives artifact and version) and the local
# repository's folder (this test's).
python3 - "$src/docs/bindings-java.md" "$nat" "$version" "file://$repo" >"$work/app/pom.xml" <<'PY' ||
import re, sys
doc, nat, version, url = sys.argv[1:]
poms = re.findall(r"^```xml\n(<\?xml.*?)^```$", open(doc, encoding="utf-8").read(), re.M | re.S)
if not poms:
    sys.exit("docs/bindings-java.md has no complete pom (an ```xml block starting <?xml)")
pom, n = re.subn(r"<artifactId>ctorch-native-torch[0-9.]+</artifactId>(\s*)<version>[^<]+</version>",
                 rf"<artifactId>{nat}</artifactId>\g<1><version>{version}</version>", poms[0])
pom, m = re.subn(r"<url>file://\$\{user\.home\}/ctorch-repo</url>", f"<url>{url}</url>", pom)
if (n, m) != (1, 1):
    sys.exit("the page's pom no longer has one ctorch-native dependency and one ctorch-repo repository")
print(pom, end="")
PY
  { echo "FAIL: the pom of docs/bindings-java.md"; exit 1; }
t0=$SECONDS
(cd "$work/app" && mvn -B -q package dependency:build-classpath -Dmdep.outputFile=cp.txt) >"$work/mvn.log" 2>&1 ||
  { cat "$work/mvn.log"; echo "FAIL: mvn package of the fresh project"; exit 1; }
echo "mvn package of the fresh project: $((SECONDS - t0)) s"
cp=$(cat "$work/app/cp.txt")
jar=$(tr ':' '\n' <<<"$cp" | grep "/ctorch-$version.jar$")
natives=$(tr ':' '\n' <<<"$cp" | grep -- "-linux-x86_64.jar$")
# The ctorch jar on the module path (a named module), the natives jar on the class path.
out=$(env -u CTORCH_LIB -u LD_LIBRARY_PATH CTORCH_CACHE_DIR="$work/cache" "$JAVA_HOME/bin/java" \
  --enable-native-access=org.ctorch --module-path "$jar" --add-modules org.ctorch \
  -cp "$work/app/target/classes:$natives" "$main" 2>&1) || { echo "$out"; echo "FAIL: the program failed"; exit 1; }
echo "$out"
grep -q "^WARNING" <<<"$out" && { echo "FAIL: the JVM warned"; exit 1; }
# The block says what it prints (a "// prints ..." comment): that line, exactly.
want=$(sed -n 's|.*// prints \(.*\)$|\1|p' <<<"$prog" | head -1)
[ -n "$want" ] || { echo "FAIL: the program's block has no '// prints ...' comment"; exit 1; }
grep -qxF "$want" <<<"$out" || { echo "FAIL: the program did not print: $want"; exit 1; }
ls "$work/cache"/*/libctorch.so.* >/dev/null || { echo "FAIL: nothing was extracted to $work/cache"; exit 1; }
# Both jars on the module path: the natives jar is an automatic module with a name of its own.
natmod=$("$JAVA_HOME/bin/jar" --describe-module --file "$natives" 2>&1 | sed -n 's/@.* automatic$//p')
[ -n "$natmod" ] || { "$JAVA_HOME/bin/jar" --describe-module --file "$natives"; echo "FAIL: the natives jar is no module"; exit 1; }
echo "the natives jar's module: $natmod"
out2=$(env -u CTORCH_LIB -u LD_LIBRARY_PATH CTORCH_CACHE_DIR="$work/cache" "$JAVA_HOME/bin/java" \
  --enable-native-access=org.ctorch --module-path "$jar:$natives" --add-modules "org.ctorch,$natmod" \
  -cp "$work/app/target/classes" "$main" 2>&1) || { echo "$out2"; echo "FAIL: the program, both jars on the module path"; exit 1; }
[ "$out2" = "$out" ] || { echo "$out2"; echo "FAIL: another output with both jars on the module path"; exit 1; }
echo "a fresh Maven project with one dependency ($nat:$version:linux-x86_64) ran the program; the library came from the natives jar"
rm -rf "$m2/org/ctorch"
