#!/usr/bin/env bash
# Builds the fuzz lane's clang pass plugin (cmake/sancov-filter/: it keeps libFuzzer's comparison tracing off
# UBSan's own checks) for the clang that is to load it, and prints the plugin's path.
#
#   scripts/build-sancov-filter.sh CLANG    e.g. clang++-14
#
# Built once per machine, per LLVM major version and per version of the plugin's source, into
# build/tools/sancov-filter/llvm-<major>-<source hash>/ (never committed): a changed source gets a new path,
# so compile flags naming the plugin change with it and a lane rebuilds what the old plugin compiled.
# cmake/LifelineLane.cmake runs it when the fuzz lane is configured; bench/throughput.py for its fuzz variant.
# Needs Debian's llvm-<major>-dev (scripts/install-deps.sh installs llvm-14-dev). A failed build leaves
# nothing half-built behind and prints why.
set -euo pipefail

die() { echo "build-sancov-filter: $*" >&2; exit 1; }
[ $# -eq 1 ] || { echo "usage: scripts/build-sancov-filter.sh CLANG (e.g. clang++-14)" >&2; exit 2; }
cxx=$1
command -v "$cxx" >/dev/null 2>&1 || die "no compiler '$cxx'"
major=$("$cxx" -dumpversion | cut -d. -f1)
[[ "$major" =~ ^[0-9]+$ ]] || die "'$cxx -dumpversion' did not give a version"

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
src="$root/cmake/sancov-filter"
hash=$(cat "$src/hide_sanitizer_compares.cc" "$src/CMakeLists.txt" | sha256sum | cut -c1-12)
dest="$root/build/tools/sancov-filter/llvm-$major-$hash"
plugin="$dest/hide_sanitizer_compares.so"
if [ ! -f "$plugin" ]; then
  mkdir -p "$(dirname "$dest")"
  work=$(mktemp -d "$(dirname "$dest")/.building-XXXXXX")
  trap 'rm -rf "$work"' EXIT
  generator=()
  if command -v ninja >/dev/null 2>&1; then generator=(-G Ninja); fi
  # LLVM's CMake package runs C checks: the C compiler of the same clang (clang++-14 -> clang-14).
  cc=${cxx/clang++/clang}
  command -v "$cc" >/dev/null 2>&1 || cc=cc
  if ! cmake -S "$src" -B "$work/build" "${generator[@]}" -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_C_COMPILER="$cc" \
         -DLIFELINE_LLVM_MAJOR="$major" >"$work/log" 2>&1 ||
     ! cmake --build "$work/build" >>"$work/log" 2>&1; then
    cat "$work/log" >&2
    die "building the plugin for $cxx (LLVM $major) failed (log above)"
  fi
  mkdir -p "$work/out"
  cp "$work/build/hide_sanitizer_compares.so" "$work/out/"
  # Another configure may have built it meanwhile: the first one to arrive stays.
  mv -T "$work/out" "$dest" 2>/dev/null || [ -f "$plugin" ] || die "could not move the plugin to $dest"
  # Plugins built from an older source for this LLVM are not named by any flag once lanes reconfigure.
  for old in "$(dirname "$dest")/llvm-$major-"*; do
    [ "$old" = "$dest" ] || rm -rf "$old"
  done
fi
echo "$plugin"
