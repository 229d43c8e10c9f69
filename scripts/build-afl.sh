#!/usr/bin/env bash
# Builds every fuzz target for AFL++ through the OSS-Fuzz build script (.clusterfuzzlite/build.sh):
# afl-clang-fast instrumentation + ASan (AFL_USE_ASAN=1), linked with AFL++'s libFuzzer-compatible driver.
#
#   scripts/build-afl.sh            fuzzers, seed zips, dicts and .options into build/afl/
#
# Then, e.g.:
#   AFL_SKIP_CPUFREQ=1 AFL_NO_UI=1 afl-fuzz -i corpus/alloc_graph_topology -o /tmp/afl-out -V 60 \
#     -- build/afl/alloc_graph_topology
# (the driver reads each input from stdin; `@@` works as well).
set -euo pipefail
project=$(cd "$(dirname "$0")/.." && pwd)
driver=${AFL_DRIVER:-/usr/lib/afl/libAFLDriver.a}   # Debian's afl++ package
command -v afl-clang-fast++ >/dev/null || { echo "build-afl.sh: afl-clang-fast++ not found (scripts/install-deps.sh installs afl++)" >&2; exit 1; }
[ -f "$driver" ] || { echo "build-afl.sh: $driver not found (afl++ package; or set AFL_DRIVER)" >&2; exit 1; }

flags="-O1 -fno-omit-frame-pointer -gline-tables-only"
export AFL_USE_ASAN=1          # afl-clang-fast adds -fsanitize=address (and links the runtime)
export AFL_QUIET=1
rm -rf "$project/build/afl"
CC=afl-clang-fast CXX=afl-clang-fast++ CFLAGS="$flags" CXXFLAGS="$flags" LIB_FUZZING_ENGINE="$driver" \
  OUT="$project/build/afl" SRC="$(dirname "$project")" LIFELINE_OSSFUZZ_BUILD_DIR="$project/build/afl-build" \
  "$project/.clusterfuzzlite/build.sh"
