#!/usr/bin/env bash
# unit.ossfuzz-build: runs .clusterfuzzlite/build.sh as OSS-Fuzz would (ASan + libFuzzer, clang-14; -O0 where
# OSS-Fuzz says -O1: build.sh passes the flags through, and -O0 nearly halves this test's compile, 157 -> 88
# CPU-s) into a fresh $OUT, then checks each expected target: the fuzzer exists and runs, its seed corpus zip exists and
# holds every file of corpus/<t>/, its .options exists and holds the settings of targets/<t>.options (and .dict
# when corpus/<t>.dict does), and the fuzzer replays its unzipped seed corpus (-runs=0) with the flags of its
# .options (the first 100 of them by name; the fuzz and asan lanes run them all).
#
#   ossfuzz_build_check.sh PROJECT_DIR WORK_DIR TARGET...
#
# WORK_DIR/build is the CMake build folder, reused between runs; WORK_DIR/out and WORK_DIR/replay are
# recreated every run.
set -euo pipefail
[ $# -ge 3 ] || { echo "usage: $0 PROJECT_DIR WORK_DIR TARGET..." >&2; exit 2; }
project=$(cd "$1" && pwd)
work=$2
shift 2
mkdir -p "$work"
work=$(cd "$work" && pwd)
out=$work/out
rm -rf "$out" "$work/replay"
mkdir -p "$out" "$work/replay"

flags="-O0 -fno-omit-frame-pointer -gline-tables-only -fsanitize=address -fsanitize-address-use-after-scope -fsanitize=fuzzer-no-link"
# The build contract's environment only: drop any sanitizer options of the calling shell.
if ! env -u ASAN_OPTIONS -u UBSAN_OPTIONS -u LSAN_OPTIONS \
    CC=clang-14 CXX=clang++-14 CFLAGS="$flags" CXXFLAGS="$flags" LIB_FUZZING_ENGINE=-fsanitize=fuzzer \
    OUT="$out" SRC="$(dirname "$project")" LIFELINE_OSSFUZZ_BUILD_DIR="$work/build" LIFELINE_BUILD_JOBS=2 \
    "$project/.clusterfuzzlite/build.sh"; then
  echo "FAIL: .clusterfuzzlite/build.sh failed" >&2
  exit 1
fi

REPLAY_MAX=100
failures=0
fail() { echo "FAIL [$1]: $2" >&2; failures=$((failures + 1)); }

for t in "$@"; do
  bin=$out/$t
  zip=$out/${t}_seed_corpus.zip
  [ -x "$bin" ] || { fail "$t" "no fuzzer $bin"; continue; }
  [ -f "$zip" ] || { fail "$t" "no seed corpus $zip"; continue; }
  [ -f "$out/$t.options" ] || fail "$t" "no $out/$t.options"
  # The target's own settings (targets/<t>.options) reach its .options line by line.
  if [ -f "$project/targets/$t.options" ] && [ -f "$out/$t.options" ]; then
    while IFS= read -r kv; do
      grep -qxF "$kv" "$out/$t.options" || fail "$t" "$out/$t.options lacks '$kv' of targets/$t.options"
    done < <(grep -E '^[a-z][a-z0-9_]* *= *[A-Za-z0-9_.+-]+ *$' "$project/targets/$t.options" || true)
  fi
  if [ -f "$project/corpus/$t.dict" ] && ! cmp -s "$project/corpus/$t.dict" "$out/$t.dict"; then
    fail "$t" "$out/$t.dict missing or not a copy of corpus/$t.dict"
  fi
  seeds=$work/replay/$t/seeds
  mkdir -p "$seeds"
  unzip -q "$zip" -d "$seeds" || { fail "$t" "cannot unzip $zip"; continue; }
  # The seeds and the regression corpus, by file name (content-named: a file in both is one entry).
  dirs=("$project/corpus/$t")
  [ -d "$project/corpus/regression/$t" ] && dirs+=("$project/corpus/regression/$t")
  want=$(find "${dirs[@]}" -maxdepth 1 -type f -printf '%f\n' | sort -u | wc -l)
  got=$(find "$seeds" -type f | wc -l)
  [ "$want" = "$got" ] || fail "$t" "$zip holds $got files, corpus/$t/ and corpus/regression/$t/ have $want (zip must be flat)"
  # The [libfuzzer] section of <t>.options as flags, as ClusterFuzz passes them.
  opts=()
  if [ -f "$out/$t.options" ]; then
    while IFS= read -r line; do
      opts+=("$line")
    done < <(awk '/^\[/{s=($0=="[libfuzzer]")} s && /=/{gsub(/[ \t]/,""); print "-" $0}' "$out/$t.options")
  fi
  # The first REPLAY_MAX files by name (names are content hashes: a sample of seeds and regression files alike).
  # Every seed also runs in the fuzz lane's fuzz-smoke.<t> and every regression file in the asan lane's
  # regression.<t>, both under ASan+UBSan; this build is at -O0, where ggml_graph_topology's 700-odd took 22.5 s
  # (2026-11-28).
  replay=$work/replay/$t/sample
  mkdir -p "$replay"
  # (sed, not head: head would end the pipe early, and sort's SIGPIPE would fail the script under pipefail)
  find "$seeds" -type f -printf '%f\n' | LC_ALL=C sort | sed -n "1,${REPLAY_MAX}p" |
    (cd "$seeds" && xargs -r -d '\n' cp -t "$replay" --)
  sampled=$(find "$replay" -type f | wc -l)
  log=$work/replay/$t/replay.log
  if (cd "$work/replay/$t" && env -u ASAN_OPTIONS -u UBSAN_OPTIONS -u LSAN_OPTIONS \
        "$bin" -runs=0 "${opts[@]}" -artifact_prefix="$work/replay/$t/" "$replay") > "$log" 2>&1; then
    echo "ok [$t]: replayed $sampled of its $got zipped inputs ($(grep -o 'Done [0-9]* runs' "$log" | tail -1 || true)) with ${opts[*]}"
  else
    tail -40 "$log" >&2
    fail "$t" "replaying its seed corpus failed; log: $log"
  fi
done

if [ "$failures" -gt 0 ]; then
  echo "unit.ossfuzz-build: $failures failure(s)" >&2
  exit 1
fi
echo "unit.ossfuzz-build: all $# targets built, packaged and replayed"
