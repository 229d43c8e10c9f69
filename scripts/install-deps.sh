#!/usr/bin/env bash
# Installs the Debian packages lifeline needs, idempotently.
#
#   scripts/install-deps.sh           install what is missing (needs root when something is)
#   scripts/install-deps.sh --check   only report; exit 1 if something is missing
#   scripts/install-deps.sh --bench   also what only bench/ needs (BENCH_PACKAGES); combines with --check
#
# Every package the project builds or runs with is listed here and nowhere else. What is already
# installed is skipped without touching the network; what is missing is named before it is installed.
set -euo pipefail

# package            why
PACKAGES=(
  cmake              # build system (presets need >= 3.21)
  ninja-build        # generator used by every preset
  ccache             # the lanes' compiler cache (build/ccache): the fuzz lane reuses the asan lane's objects
  clang-14           # the compiler of every lane but tsan (Debian 12's default clang)
  libclang-rt-14-dev # ASan/UBSan/TSan/LSan/libFuzzer runtimes and FuzzedDataProvider.h
  lld-14             # the lanes' linker (cmake/LifelineLane.cmake): 3 to 4 times faster than GNU ld on their links
  clang-19           # the tsan lane: clang 14 and 16 TSan-instrument libFuzzer's edge counters (docs/fuzzing.md, "Fuzzing under TSan")
  libclang-rt-19-dev # ... and its TSan and libFuzzer runtimes
  llvm-14            # llvm-symbolizer-14, so sanitizer reports carry function names
  llvm-14-dev        # LLVM 14's headers and CMake package: the fuzz lane's pass plugin (cmake/sancov-filter/)
  libgtest-dev       # GoogleTest for tests/
  nlohmann-json3-dev # nlohmann/json.hpp: programs as JSON, both ways (harness/programs/common/codec.h, lifeline reduce)
  valgrind           # the valgrind lane, and valgrind/memcheck.h client requests
  python3            # Debian's interpreter: the lifeline CLI and the reproducer checker
  python3-dev        # libpython3.11 headers and library: the embedded interpreter of layers/interop
  python3-numpy      # NumPy, the second DLPack producer/consumer the interop layer talks to
  python3-torch      # PyTorch 1.13, the third DLPack party: torch_capsule_lifecycle (~570 MB, no recommends)
  libdlpack-dev      # dlpack/dlpack.h, the DLPack ABI (0.6 on Debian 12)
  libvulkan-dev      # the Vulkan loader and headers of layers/runtime
  mesa-vulkan-drivers # lavapipe: a CPU Vulkan ICD, so the runtime runs on any machine
  vulkan-validationlayers # VK_LAYER_KHRONOS_validation, the runtime's oracle
  glslc              # GLSL -> SPIR-V at build time for the runtime's compute kernels
  spirv-headers      # spirv/unified1/spirv.hpp, which ggml-vulkan's host code includes (ggml-vulkan-types.h)
  python3-matplotlib # bench/: Kaplan-Meier survival plots of time-to-exposure
  afl++              # AFL++ (afl-clang-fast, afl-fuzz, libAFLDriver.a): scripts/build-afl.sh, a second engine
  zip                # <target>_seed_corpus.zip of the OSS-Fuzz build (.clusterfuzzlite/build.sh)
  unzip              # unit.ossfuzz-build unpacks those zips to replay them
  git                # scripts/fetch-ggml.sh clones the upstream ggml bundle
  patch              # applies repro/*/upstream/*.patch to the fetched ggml (upstream variants of bugs)
)
# The npm client fetches the pinned upstream ggml (scripts/fetch-ggml.sh). Machines that already have one
# (often from a nodejs package outside Debian, which bundles npm) keep it; elsewhere Debian's npm.
if ! command -v npm >/dev/null 2>&1; then
  PACKAGES+=(npm)
fi

# Only for benchmarks, not for building or testing: `--bench` adds them.
BENCH_PACKAGES=(
  chromium           # bench/coverage.py --picture: renders a page of the coverage report headless
)

check_only=0
for arg in "$@"; do
  case "$arg" in
    --check) check_only=1 ;;
    --bench) PACKAGES+=("${BENCH_PACKAGES[@]}") ;;
    *) echo "install-deps.sh: unknown argument '$arg' (expected --check, --bench or nothing)" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${PACKAGES[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
  [ "$status" = "installed" ] || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  [ "$check_only" = 1 ] && echo "install-deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi

if [ "$check_only" = 1 ]; then
  echo "install-deps: missing: ${missing[*]}"
  exit 1
fi

if [ "$(id -u)" != 0 ]; then
  echo "install-deps: missing packages: ${missing[*]}" >&2
  echo "install-deps: installing them needs root; run: sudo $0" >&2
  exit 1
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# A fresh machine has no package lists yet; an old list may not know the packages.
if ! apt-get install -y --no-install-recommends "${missing[@]}"; then
  apt-get update
  apt-get install -y --no-install-recommends "${missing[@]}"
fi
echo "install-deps: done"
