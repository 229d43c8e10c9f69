#!/usr/bin/env bash
# Fetches one ggml version of the compatibility matrix (scripts/ggml-versions.txt) into the build tree (never
# committed), checked as scripts/fetch-ggml.sh checks the pinned one.
#
#   scripts/fetch-ggml-version.sh NAME          fetch version NAME (nothing to do when it is already there)
#   scripts/fetch-ggml-version.sh --print NAME  print its ggml source directory; exit 1 when it is not fetched
#   scripts/fetch-ggml-version.sh --list        print the names, one per line
#
# A llama-bundle version lands in build/upstream/matrix/NAME/llama.cpp (ggml in its ggml/): the npm tarball's
# sha512 is checked against the pinned value, the bundle's HEAD against the pinned commit, and the tree's ggml
# version against the pinned one (when the tree has one). A whisper version is the tree scripts/fetch-whisper.sh
# fetches (its ggml/), the pinned one scripts/fetch-ggml.sh's, each checked against the same package. A failed check leaves nothing half-fetched behind.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
versions="$root/scripts/ggml-versions.txt"
FETCH_NAME=fetch-ggml-version
# shellcheck source=lib/npm-pinned.sh
. "$root/scripts/lib/npm-pinned.sh"

usage() { echo "fetch-ggml-version.sh: $*; usage: fetch-ggml-version.sh [--print] NAME | --list" >&2; exit 2; }

names() { grep -v '^#' "$versions" | awk 'NF {print $1}'; }

print=0
case "${1:-}" in
  --list) [ $# -eq 1 ] || usage "--list takes nothing more"; names; exit 0 ;;
  --print) print=1; shift ;;
  "") usage "a version name is needed (one of: $(names | paste -sd' '))" ;;
  -*) usage "unknown option '$1'" ;;
esac
[ $# -eq 1 ] || usage "one version name, not $#"
name="$1"
row="$(grep -v '^#' "$versions" | awk -v n="$name" '$1 == n' || true)"
[ -n "$row" ] || usage "unknown version '$name' (known: $(names | paste -sd' '))"
read -r _ kind package integrity head _ ggml_version _ <<<"$row"

# The same package and tree as another fetch script (which checks them): its ggml/ is the version.
fetched_by() {
  local script="$root/scripts/$1" pinned tree
  pinned="$(sed -n 's/^PACKAGE="\(.*\)"$/\1/p' "$script")"
  [ "$pinned" = "$package" ] || die "$name is $package, but scripts/$1 fetches $pinned"
  if [ "$print" = 1 ]; then
    tree="$("$script" --print)" || exit 1
    [ "$1" = fetch-whisper.sh ] && echo "$tree/ggml" || echo "$tree"
    exit 0
  fi
  "$script"
  exit 0
}
case "$kind" in
  whisper) fetched_by fetch-whisper.sh ;;
  pinned) fetched_by fetch-ggml.sh ;;
  llama-bundle) ;;
  *) die "$versions: version $name has kind '$kind' (expected llama-bundle, pinned or whisper)" ;;
esac

dest="$root/build/upstream/matrix/$name"
src="$dest/llama.cpp"
stamp="$dest/fetched.txt"
if [ "$print" = 1 ]; then
  [ -f "$stamp" ] && [ -f "$src/ggml/src/ggml-alloc.c" ] || exit 1
  echo "$src/ggml"
  exit 0
fi
if [ -f "$stamp" ] && [ -f "$src/ggml/src/ggml-alloc.c" ]; then
  echo "$FETCH_NAME: $name already at $src/ggml"
  exit 0
fi
tarball="$(echo "${package%@*}" | tr -d '@' | tr '/' '-')-${package##*@}.tgz"
fetch_llama_bundle "$package" "$tarball" "$integrity" "$head" "$ggml_version" "$dest"
echo "$FETCH_NAME: $name (ggml $ggml_version) at $src/ggml"
