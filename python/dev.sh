#!/usr/bin/env bash
# Developer entry point; works on a fresh machine (needs python3 >= 3.10, Java 17, network access
# to PyPI and Maven Central). Everything it installs stays inside the project folder:
#   .venv/          Python environment (pyspark, delta-spark, sqlglot, pytest, dbt, ...)
#   .tools/sbt/     sbt launcher and its caches (the JVM build)
#   .cache/jars/    Delta's JVM jars from Maven Central
#   dist/           the wheel (`wheel`), which carries the compiled extension jar
# Usage: bash python/dev.sh setup | main | test | soak | docs | wheel | bench [args] | load [args] | profile [args]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
VENV="$ROOT/.venv"
PY="$VENV/bin/python"
SBT_VERSION=1.10.7
TOOLS="$ROOT/.tools/sbt"
export SPARK_LOCAL_IP=127.0.0.1

say() { printf '\033[1m== %s\033[0m\n' "$*" >&2; }

setup_python() {
  if [ ! -x "$PY" ]; then
    say "creating $VENV"
    python3 -m venv "$VENV"
  fi
  local stamp="$VENV/.sql-ext-installed"
  if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ] || [ python/constraints.txt -nt "$stamp" ]; then
    # uv resolves as pip does (the same versions) and installs in parallel from its cache:
    # measured 40-48 s where pip took 65 s (warm cache) to 123 s (cold).
    say "installing Python packages with uv (pyspark is large: under a minute)"
    "$PY" -m pip install -q "uv>=0.5"
    # The tested versions of Spark, Delta and sqlglot (python/constraints.txt), not the newest
    # patch releases pyproject.toml allows.
    # From uv's cache alone first (--offline), online only when the cache lacks something:
    # pyspark comes as a source distribution, and uv built its 450 MB wheel again on every
    # install here (the index's answers to its revalidation count as changed, so it builds
    # anew instead of taking its cached build): 38 s, where the install from the cache takes
    # 4 s. Unpinned dependencies then stay at the cache's versions (docs/testing.md).
    local install=(pip install -q --python "$PY" -c python/constraints.txt
                   -e ".[test,dbt,connect,docs]")
    "$VENV/bin/uv" "${install[@]}" --offline 2>/dev/null || "$VENV/bin/uv" "${install[@]}"
    touch "$stamp"
  fi
  export PYSPARK_PYTHON="$PY"
}

# The environment's bytecode, compiled once per install. uv installs without it (pip compiles at
# install), and where PYTHONDONTWRITEBYTECODE is set no process writes it later: every Python
# process then compiled pyspark, pandas, dbt and the rest from source again. A driver's start took
# 16 CPU-seconds with them uncompiled, 12 compiled; the tests start a few hundred such processes.
# Files that do not compile (none today) only cost that time, so they do not stop the setup.
compile_bytecode() {
  local compiled="$VENV/.sql-ext-compiled"
  if [ ! -f "$compiled" ] || [ "$VENV/.sql-ext-installed" -nt "$compiled" ]; then
    say "compiling the environment's Python bytecode"
    nice -n "${NICENESS:-0}" "$PY" -m compileall -q -j 0 \
      "$("$PY" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')" > /dev/null || true
    touch "$compiled"
  fi
}

# pyspark's folder in the environment: Spark's scripts and jars.
pyspark_dir() { "$PY" -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))'; }

sbt() {
  mkdir -p "$TOOLS"
  local launcher="$TOOLS/sbt-launch-$SBT_VERSION.jar"
  if [ ! -f "$launcher" ]; then
    say "fetching the sbt launcher from Maven Central"
    curl -fsSL -o "$launcher.part" \
      "https://repo1.maven.org/maven2/org/scala-sbt/sbt-launch/$SBT_VERSION/sbt-launch-$SBT_VERSION.jar"
    mv "$launcher.part" "$launcher"
  fi
  printf '[repositories]\n  local\n  maven-central\n' > "$TOOLS/repositories"
  # SBT_TIME_LIMIT (seconds), where set: sbt stopped after it. A forked JVM suite that cannot
  # start (its class path broken) leaves sbt waiting for it without end.
  local limit=()
  if [ -n "${SBT_TIME_LIMIT:-}" ]; then limit=(timeout --kill-after=30 "$SBT_TIME_LIMIT"); fi
  # C1 alone (TieredStopAtLevel=1): each sbt run here is one build from a cold JVM, where C2's
  # compiling of scalac costs more than it saves: `clean jvm/package` 119 -> 54 CPU-s, 64 s ->
  # 39 s of wall clock (the jar's compile 53 s -> 31 s).
  SQL_EXT_SPARK_JARS="$(pyspark_dir)/jars" \
  "${limit[@]}" nice -n "${NICENESS:-0}" java -Xmx2g -XX:TieredStopAtLevel=1 -Dsbt.repository.config="$TOOLS/repositories" -Dsbt.override.build.repos=true \
    -Dsbt.boot.directory="$TOOLS/boot" -Dsbt.ivy.home="$TOOLS/ivy" \
    -Dsbt.coursier.home="$TOOLS/coursier" -Dsbt.global.base="$TOOLS/global" \
    -Dsbt.server.forcestart=false -Dsbt.supershell=false -Dsbt.color=false \
    -jar "$launcher" "$@" < /dev/null
}

build_jar() {
  local jar="sql_ext/jars/sql-ext.jar"
  if [ ! -f "$jar" ] || [ -n "$(find jvm/src/main build.sbt sql_ext/sql/contract.json \
      sql_ext/sql/error-conditions.json -newer "$jar" -type f | head -1)" ]; then
    say "building the JVM extension (sbt jvm/package)"
    sbt jvm/package
  fi
}

# Delta's and the Kafka connector's jars: sessions load them, the JVM build compiles against
# them.
fetched_jars() { "$PY" -c 'from sql_ext import jars; jars.fetched_jars()'; }

# Chromium for the docs site's browser check (tests/site_browser.py): Debian's package, where
# /usr/bin/chromium is missing. apt-get as root, else through sudo; the package lists fetched
# only when the install cannot find the package (a fresh image). A clean install here fetched
# 124 MB and took 19 s.
have_chromium() { [ -x "${SQL_EXT_CHROMIUM:-/usr/bin/chromium}" ]; }
# A command as root: itself when this is root, else through sudo.
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
install_chromium() {
  local install=(as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q
                 --no-install-recommends chromium)
  "${install[@]}" || { as_root apt-get update -q && "${install[@]}"; }
}

# promtool, Prometheus' rule checker (tests/test_operations.py checks the example alert rules
# with it): taken out of Debian's prometheus package into .tools/prometheus, nothing installed
# (the package would set up a Prometheus service).
PROMTOOL="$ROOT/.tools/prometheus/usr/bin/promtool"
fetch_promtool() {
  local work
  work="$(mktemp -d)"
  mkdir -p "$ROOT/.tools/prometheus"  # dpkg-deb makes only the last folder (sbt's may not yet)
  (cd "$work" && { apt-get download prometheus -q ||
                    { as_root apt-get update -q && apt-get download prometheus -q; }; }) &&
    dpkg-deb -x "$work"/prometheus_*.deb "$ROOT/.tools/prometheus"
  local done=$?
  rm -rf "$work"
  return $done
}

# `docs`: the site built strictly, then checked in headless Chromium (the site mkdocs wrote:
# mkdocs.yml's site_dir, or the --site-dir/-d given).
docs() {
  if ! have_chromium; then
    say "installing Chromium (apt-get) for the docs site's browser check"
    install_chromium
  fi
  local site=.cache/site previous=
  for arg in "$@"; do
    case "$previous" in -d|--site-dir) site="$arg" ;; esac
    case "$arg" in --site-dir=*) site="${arg#*=}" ;; esac
    previous="$arg"
  done
  NO_MKDOCS_2_WARNING=1 "$PY" -m mkdocs build --strict "$@"
  say "the site in headless Chromium (tests/site_browser.py)"
  "$PY" tests/site_browser.py "$site"
}

setup() {
  setup_python
  compile_bytecode
  fetched_jars
  build_jar
}

# dist/sql_ext-<version>-py3-none-any.whl: the package with the jar just built, nothing else.
wheel() {
  setup
  say "building the wheel into dist/"
  rm -rf build dist/sql_ext-*.whl
  "$PY" -m pip wheel -q --no-deps -w dist .
  rm -rf build
  ls dist/sql_ext-*.whl
}

# The JVMs that tests start (stream drivers killed and restarted, Thrift servers, a standalone
# cluster, deploy jobs) live seconds to minutes:
#  - the C1 compiler alone warms them up with less CPU than C2 takes to compile for the long run
#    (a stream driver 33.5 s -> 27.3 s on 2 cores); the workers' shared sessions keep C2.
#    C1 alone also shrinks the JIT's code cache from 240 MB to 48 MB, which a Thrift server's
#    generated code filled under the load test ("Out of space in CodeCache"; Spark then stopped
#    its context): the cache keeps its usual size;
#  - a class-data archive (tests/jvm_archive.py) halves a driver's start (15.5 s -> 7.7 s);
#  - the parallel collector, as in the workers' sessions: without G1's concurrent threads, the
#    archive's training workload took 66-69 CPU-s where G1 took 66-73 (three runs each).
# Spark reads them from a properties file that PYSPARK_SUBMIT_ARGS names, not from
# SPARK_CONF_DIR: Spark puts that folder on the class path, and the JVM maps no archive when a
# folder on its class path holds files.
ARCHIVE="$ROOT/.cache/test-spark/drivers.jsa"
build_archive() { "$PY" tests/jvm_archive.py "$ARCHIVE"; }

# JDK 17's class-data archive leaves out every class of a jar whose path holds a space (it
# compares the class's URL, with %20, to its class path entry): in a checkout in such a folder
# the archive held the JDK's classes only, and a driver's start and first statements took 40-44
# CPU-s instead of 28-29. There the test JVMs (and the archive's training driver) take Spark's and
# the fetched jars from a folder without a space: hard links (copies across file systems), since
# the JVM resolves symbolic links in its class path. sql-ext's own jar keeps its path.
space_free_jvm_paths() {
  case "$ROOT" in *" "*) ;; *) return 0 ;; esac
  local link spark entry
  link="${TMPDIR:-/tmp}/sql-ext-jvm-$(id -u)-$(printf '%s' "$ROOT" | cksum | cut -d' ' -f1)"
  case "$link" in *" "*) return 0 ;; esac
  spark="$(pyspark_dir)"
  rm -rf "$link"  # no jar of an earlier install stays on the class path
  mkdir -p "$link/spark/jars" "$link/jars"
  for entry in "$spark"/*; do  # Spark's scripts and the rest of its folder: linked
    [ "${entry##*/}" = jars ] || ln -s "$entry" "$link/spark/"
  done
  ln "$spark"/jars/*.jar "$link/spark/jars/" 2>/dev/null || cp -p "$spark"/jars/*.jar "$link/spark/jars/"
  for entry in "$spark"/jars/*; do  # what is not a jar (connect-repl/, not on the class path)
    case "$entry" in *.jar) ;; *) ln -s "$entry" "$link/spark/jars/" ;; esac
  done
  ln "$ROOT"/.cache/jars/*.jar "$link/jars/" 2>/dev/null || cp -p "$ROOT"/.cache/jars/*.jar "$link/jars/"
  say "Spark's and the fetched jars from $link (the checkout's path holds a space)"
  export SPARK_HOME="$link/spark" SQL_EXT_JAR_CACHE="$link/jars"
}

# sbt jvm/package jvm/test, with the class-data archive built beside the JVM tests as soon as
# the jar is packaged (the archive holds the jar's classes): each of the two uses about one
# core, so side by side they take the time of the longer. Its output goes to
# .cache/test-spark/archive.log and is printed after sbt's.
sbt_and_archive() {
  local packaged="$ROOT/.cache/test-spark/packaged" log="$ROOT/.cache/test-spark/archive.log"
  mkdir -p "$ROOT/.cache/test-spark"
  rm -f "$packaged"
  ( while [ ! -f "$packaged" ]; do sleep 1; done; build_archive ) > "$log" 2>&1 &
  local archive=$!
  # sbt prints "[success]" as each command ends: the first is jvm/package's. sbt runs at a
  # lower priority (NICENESS, as the bytecode's compiling beside it, lower still): the
  # archive's training takes longer than the JVM tests and pytest waits for it, so it takes
  # the CPU first and the JVM tests the rest; before it starts, the jar it needs goes first.
  if ! SBT_TIME_LIMIT=1200 NICENESS=10 sbt jvm/package jvm/test | while IFS= read -r line; do
      printf '%s\n' "$line"
      case "$line" in "[success]"*) touch "$packaged" ;; esac
    done; then
    kill "$archive" 2>/dev/null || true
    return 1
  fi
  local built=0
  wait "$archive" || built=$?
  cat "$log" >&2
  return "$built"
}

test_jvms() {
  local conf="$ROOT/.cache/test-spark" archive="$ARCHIVE"
  local short_lived="-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=240m -XX:+UseParallelGC"
  mkdir -p "$conf"
  say "class-data archive of the test drivers (.cache/test-spark)"
  build_archive  # jvm_archive.py leaves a current archive as it is (`test` built it already)
  local shared
  shared="$("$PY" -c 'import sys; sys.path.insert(0, "tests"); import jvm_archive, pathlib; print(jvm_archive.use_options(pathlib.Path(sys.argv[1])))' "$archive")"
  printf '%s\n' "spark.driver.defaultJavaOptions $short_lived $shared" \
    "spark.executor.defaultJavaOptions $short_lived" > "$conf/started.conf"
  # The workers' sessions collect with the parallel collector: G1's concurrent work cost a
  # session 12-14 % more CPU (test_streaming.py: 152-167 CPU-s with G1, 138-140 s parallel).
  printf '%s\n' "spark.driver.defaultJavaOptions $shared -XX:+UseParallelGC" > "$conf/session.conf"
  # For spark-submit's own drivers (tests/test_deploy.py), which read a conf folder: no archive.
  mkdir -p "$conf/conf"
  printf '%s\n' "spark.driver.defaultJavaOptions $short_lived" \
    "spark.executor.defaultJavaOptions $short_lived" \
    > "$conf/conf/spark-defaults.conf"
  export SQL_EXT_TEST_SPARK_CONF_DIR="$conf/conf"
  unset SPARK_CONF_DIR
  # PySpark splits these as a shell would: the file's path is quoted (a folder with a space).
  export PYSPARK_SUBMIT_ARGS="--properties-file '$conf/started.conf' pyspark-shell"
  # tests/conftest.py: the workers' own long-lived sessions (C2).
  export SQL_EXT_TEST_SESSION_ARGS="--properties-file '$conf/session.conf' pyspark-shell"
  export SPARK_DAEMON_JAVA_OPTS="$short_lived"  # a standalone master and workers
}

case "${1:-}" in
  setup) setup ;;
  main) setup; shift; exec "$VENV/bin/sql-ext" run-examples "$@" ;;
  # pytest: `test` without the JVM unit tests, for a quick run of some Python tests.
  test|soak|pytest)
    setup_python
    NICENESS=19 compile_bytecode & bytecode=$!  # beside sbt, after it (sbt_and_archive)
    fetched_jars
    space_free_jvm_paths
    # The Kafka broker the tests start (Maven Central jars, cached under .cache/kafka): fetched
    # while sbt builds, which needs the CPU and not the network.
    say "Kafka broker jars (.cache/kafka), in the background"
    mkdir -p "$ROOT/.cache"
    "$PY" tests/kafka_broker.py > "$ROOT/.cache/kafka-jars.log" 2>&1 &
    kafka_jars=$!
    # Chromium (tests/test_site_browser.py) and promtool (tests/test_operations.py), where
    # missing: fetched while sbt builds too, one after the other (apt's lock).
    debian_tools=
    if ! have_chromium || [ ! -x "$PROMTOOL" ]; then
      say "Chromium and promtool for the docs' checks (Debian's packages), in the background"
      { if ! have_chromium; then install_chromium; fi &&
        if [ ! -x "$PROMTOOL" ]; then fetch_promtool; fi; } \
        > "$ROOT/.cache/debian-tools.log" 2>&1 &
      debian_tools=$!
    fi
    if [ "$1" = test ]; then
      # One sbt run builds the jar (when sources changed) and runs the JVM tests: each sbt
      # start loads the build again (20-30 s of CPU).
      say "JVM extension and its tests (sbt jvm/package jvm/test), the drivers' class-data archive beside them"
      sbt_and_archive
    else
      build_jar
      if [ "$1" = soak ]; then export SQL_EXT_SOAK=1; fi  # tests/scale.py: full-size loads
    fi
    shift
    if ! wait "$kafka_jars"; then cat "$ROOT/.cache/kafka-jars.log" >&2; exit 1; fi
    if [ -n "$debian_tools" ] && ! wait "$debian_tools"; then
      cat "$ROOT/.cache/debian-tools.log" >&2
      exit 1
    fi
    cat "$ROOT/.cache/kafka-jars.log" >&2
    wait "$bytecode"
    test_jvms
    workers="${SQL_EXT_TEST_WORKERS:-2}"
    say "Python tests (pytest, $workers workers)"
    # Two workers: the suite is CPU-bound on 2 cores. loadgroup without reordering: each
    # worker takes the next test (or xdist_group) of the collection, which tests/conftest.py
    # orders heavy tests first.
    if [ "${SQL_EXT_SOAK:-}" = 1 ]; then set -- -m soak "$@"; fi
    exec "$PY" -m pytest -n "$workers" --dist loadgroup --no-loadscope-reorder "$@" ;;
  # The documentation site, strict (a broken link or a page outside the navigation fails),
  # then in a browser: pages render, the search works, no page logs an error.
  docs) setup_python; shift; docs "$@" ;;
  wheel) wheel ;;
  bench) setup; shift; exec "$PY" python/bench.py "$@" ;;
  load) setup; shift; exec "$PY" python/thrift_load.py "$@" ;;
  # Many clients managing streaming tables at once; a small query beside a heavy one.
  manage-load) setup; shift; exec "$PY" python/manage_load.py "$@" ;;
  share-bench) setup; shift; exec "$PY" python/bench_sharing.py "$@" ;;
  profile) setup; shift; exec "$PY" python/stream_profile.py "$@" ;;
  # A Kafka broker on 127.0.0.1:9092 (or the port given) until Ctrl-C, for the Kafka example.
  kafka) setup_python; shift; exec "$PY" tests/kafka_broker.py serve "$@" ;;
  sbt) setup_python; fetched_jars; shift; sbt "$@" ;;
  *) echo "usage: bash python/dev.sh setup|main|test|soak|pytest|docs|wheel|bench|load|manage-load|share-bench|profile|kafka|sbt ..." >&2; exit 2 ;;
esac
