#!/bin/bash -eu
# OSS-Fuzz / ClusterFuzzLite build script for lifeline (also run locally: tests' unit.ossfuzz-build,
# scripts/build-afl.sh).
#
# Honours the build contract: $CC $CXX $CFLAGS $CXXFLAGS (compiler, coverage instrumentation, sanitizer),
# $LIB_FUZZING_ENGINE (what a fuzz target links: -fsanitize=fuzzer, or e.g. AFL++'s libAFLDriver.a),
# $OUT (where the fuzzers go) and $SRC (the folder holding the checkout, `lifeline/`).
#
# Into $OUT, per fuzz target <t>:
#   <t>                    the fuzzer
#   <t>_seed_corpus.zip    corpus/<t>/ and corpus/regression/<t>/ (flat)
#   <t>.dict               corpus/<t>.dict, when there is one
#   <t>.options            [libfuzzer] defaults (timeout; detect_leaks = 0 for interop_capsule_lifecycle), then
#                          the target's own settings from targets/<t>.options
# A target whose dependencies the environment lacks (NumPy/libpython/dlpack.h, the Vulkan stack) is skipped
# with the reason printed; the rest still build.
#
# Optional: LIFELINE_OSSFUZZ_BUILD_DIR (CMake build folder, reused between runs), LIFELINE_OSSFUZZ_TARGETS
# (space-separated: only these of the buildable targets; bench/throughput.py), LIFELINE_OSSFUZZ_CMAKE_ARGS
# (space-separated extra -D arguments of the configure; bench/throughput.py's measurement variants), LIFELINE_BUILD_JOBS,
# LIFELINE_PYTHON (the interpreter to embed; default Debian/Ubuntu's /usr/bin/python3, which python3-numpy
# serves, rather than OSS-Fuzz's own /usr/local/bin/python3).

# The checkout: the folder above this script when run from it, else the current folder (OSS-Fuzz runs
# $SRC/build.sh from WORKDIR $SRC/lifeline), else $SRC/lifeline.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [ -f "$here/../cmake/LifelineLane.cmake" ]; then
  PROJECT=$(cd "$here/.." && pwd)
elif [ -f "$PWD/cmake/LifelineLane.cmake" ]; then
  PROJECT=$PWD
else
  PROJECT=${SRC:?SRC is not set}/lifeline
fi
SRC=${SRC:-$(dirname "$PROJECT")}
: "${CC:?} ${CXX:?} ${OUT:?} ${LIB_FUZZING_ENGINE:?}"
CFLAGS=${CFLAGS:-}
CXXFLAGS=${CXXFLAGS:-}
BUILD=${LIFELINE_OSSFUZZ_BUILD_DIR:-${WORK:-$PROJECT/build}/lifeline-ossfuzz}
JOBS=${LIFELINE_BUILD_JOBS:-$(nproc)}
PY=${LIFELINE_PYTHON:-}
if [ -z "$PY" ]; then
  if [ -x /usr/bin/python3 ]; then PY=/usr/bin/python3; else PY=$(command -v python3); fi
fi

echo "lifeline build.sh: project $PROJECT, build $BUILD, out $OUT"
echo "lifeline build.sh: CC=$CC CXX=$CXX LIB_FUZZING_ENGINE=$LIB_FUZZING_ENGINE"
mkdir -p "$OUT" "$BUILD"

generator=()
if command -v ninja >/dev/null 2>&1 && [ ! -f "$BUILD/CMakeCache.txt" ]; then generator=(-G Ninja); fi

extra_cmake_args=()
read -r -a extra_cmake_args <<< "${LIFELINE_OSSFUZZ_CMAKE_ARGS:-}"  # split on blanks, no globbing
# Flags are passed explicitly (not only through the environment, which CMake reads on the first configure
# only) so a reused build folder follows the current CFLAGS.
cmake -S "$PROJECT" -B "$BUILD" "${generator[@]}" \
  -DCMAKE_C_COMPILER="$CC" -DCMAKE_CXX_COMPILER="$CXX" \
  -DCMAKE_C_FLAGS="$CFLAGS" -DCMAKE_CXX_FLAGS="$CXXFLAGS" -DCMAKE_BUILD_TYPE= \
  -DPython3_EXECUTABLE="$PY" \
  -DLIFELINE_LANE=ossfuzz -DLIFELINE_ENGINE=external -DLIFELINE_SANITIZE= -DLIFELINE_VALGRIND=OFF \
  -DLIFELINE_FUZZING_ENGINE="$LIB_FUZZING_ENGINE" "${extra_cmake_args[@]}"

while IFS= read -r line; do
  [ -n "$line" ] && echo "lifeline build.sh: skipping $line"
done < "$BUILD/lifeline_skipped_targets.txt"

targets=()
while IFS= read -r t; do
  if [ -n "$t" ] && { [ -z "${LIFELINE_OSSFUZZ_TARGETS:-}" ] || [[ " $LIFELINE_OSSFUZZ_TARGETS " == *" $t "* ]]; }; then
    targets+=("$t")
  fi
done < "$BUILD/lifeline_fuzz_targets.txt"
if [ ${#targets[@]} -eq 0 ]; then
  echo "lifeline build.sh: no fuzz target can be built here" >&2
  exit 1
fi

# Only the fuzz targets (and what they link): no tests, no benchmarks.
cmake --build "$BUILD" --target "${targets[@]}" -j "$JOBS"

for t in "${targets[@]}"; do
  cp "$BUILD/targets/$t" "$OUT/$t"
  rm -f "$OUT/${t}_seed_corpus.zip"
  if [ -d "$PROJECT/corpus/$t" ]; then
    (cd "$PROJECT/corpus/$t" && zip -q -j "$OUT/${t}_seed_corpus.zip" ./*)
  fi
  # The regression corpus goes in too: the infrastructure's fuzzing starts from everything the project has
  # reached (time-to-exposure, measured from the seeds alone, is a local benchmark). Files are named by their
  # content, so one in both folders is the same entry.
  if [ -d "$PROJECT/corpus/regression/$t" ]; then
    (cd "$PROJECT/corpus/regression/$t" && zip -q -j "$OUT/${t}_seed_corpus.zip" ./*)
  fi
  if [ -f "$PROJECT/corpus/$t.dict" ]; then
    cp "$PROJECT/corpus/$t.dict" "$OUT/$t.dict"
  fi
  {
    echo "[libfuzzer]"
    # lifeline/options.py's DEFAULT_TIMEOUT_S, where the target's own file sets none.
    grep -qE '^timeout *=' "$PROJECT/targets/$t.options" 2>/dev/null || echo "timeout = 25"
    case "$t" in
      # Per-input leak checks cannot tell NumPy's and CPython's caches from leaks; see
      # LLVMFuzzerInitialize in targets/interop_capsule_lifecycle.cc.
      interop_capsule_lifecycle) echo "detect_leaks = 0" ;;
    esac
    # The target's own settings (targets/<t>.options, the same [libfuzzer] form; lifeline/options.py reads
    # it for local runs): its key = value lines.
    if [ -f "$PROJECT/targets/$t.options" ]; then
      grep -E '^[a-z][a-z0-9_]* *= *[A-Za-z0-9_.+-]+ *$' "$PROJECT/targets/$t.options" || true
    fi
  } > "$OUT/$t.options"
  echo "lifeline build.sh: $OUT/$t"
done
