#!/usr/bin/env bash
# Fetches the pinned upstream ggml that the `upstream` tests fuzz, into the build tree (never committed).
#
#   scripts/fetch-ggml.sh            fetch into build/upstream/ (nothing to do when it is already there)
#   scripts/fetch-ggml.sh --print    print the ggml source directory and exit 1 when it is not fetched
#
# The source is ggml as shipped inside the npm package node-llama-cpp@3.22.1: its llama/gitRelease.bundle
# is a git bundle of a llama.cpp release whose ggml/ is ggml 0.25.1. The package comes from the npm
# registry through the npm client; the tarball's sha512 is checked against the value pinned below (npm
# checks it against the registry's record as well), the bundle's head against the pinned commit, and the
# tree's ggml version against 0.25.1. A failed check leaves nothing half-fetched behind.
#
# CMake takes the result by default (build/upstream/llama.cpp/ggml); -DLIFELINE_GGML_SOURCE_DIR=<path>
# points it at any other ggml checkout instead.
set -euo pipefail

PACKAGE="node-llama-cpp@3.22.1"
TARBALL="node-llama-cpp-3.22.1.tgz"
INTEGRITY="sha512-bltIipuWmc123H7tMIgDGKSsSrhmhlQYeVUC48XTjVW7XGJJiJJyCdlTMzQ/LiWoPkGDpcL4FviDpgw7qfTiDw=="
BUNDLE_HEAD="de3ff815ea7d559ee917f063901b8986f038abc6"
GGML_VERSION="0.25.1"

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest="$root/build/upstream"
src="$dest/llama.cpp"
ggml="$src/ggml"
stamp="$dest/fetched.txt"

die() { echo "fetch-ggml: $*" >&2; exit 1; }

case "${1:-}" in
  --print)
    [ -f "$stamp" ] && [ -f "$ggml/src/ggml-alloc.c" ] || exit 1
    echo "$ggml"
    exit 0
    ;;
  "") ;;
  *) echo "fetch-ggml.sh: unknown argument '$1' (expected --print or nothing)" >&2; exit 2 ;;
esac

if [ -f "$stamp" ] && [ -f "$ggml/src/ggml-alloc.c" ]; then
  echo "fetch-ggml: ggml $GGML_VERSION already at $ggml"
  exit 0
fi

command -v npm >/dev/null || die "npm is not installed (the npm registry is where $PACKAGE comes from)"
command -v git >/dev/null || die "git is not installed (needed to clone the package's git bundle)"

mkdir -p "$dest"
work="$(mktemp -d "$dest/.fetch.XXXXXX")"
trap 'rm -rf "$work"' EXIT

echo "fetch-ggml: npm pack $PACKAGE"
(cd "$work" && npm pack --silent "$PACKAGE" >/dev/null 2>"$work/npm.log") ||
  die "npm pack $PACKAGE failed: $(tail -n 3 "$work/npm.log")"
[ -f "$work/$TARBALL" ] || die "npm pack did not produce $TARBALL"

got="sha512-$(/usr/bin/python3 -c 'import base64, hashlib, sys; print(base64.b64encode(hashlib.sha512(open(sys.argv[1], "rb").read()).digest()).decode())' "$work/$TARBALL")"
[ "$got" = "$INTEGRITY" ] || die "$TARBALL: integrity $got, expected $INTEGRITY"

tar -xzf "$work/$TARBALL" -C "$work" package/llama/gitRelease.bundle ||
  die "$TARBALL has no package/llama/gitRelease.bundle"
head="$(git bundle list-heads "$work/package/llama/gitRelease.bundle" | awk '$2 == "HEAD" {print $1}')"
[ "$head" = "$BUNDLE_HEAD" ] || die "the bundle's HEAD is '$head', expected $BUNDLE_HEAD"

git clone --quiet --no-checkout "$work/package/llama/gitRelease.bundle" "$work/llama.cpp"
git -C "$work/llama.cpp" -c advice.detachedHead=false checkout --quiet "$BUNDLE_HEAD"
version="$(sed -n 's/^set(GGML_VERSION_\(MAJOR\|MINOR\|PATCH\) \([0-9]*\))$/\2/p' "$work/llama.cpp/ggml/CMakeLists.txt" | paste -sd.)"
[ "$version" = "$GGML_VERSION" ] || die "ggml/CMakeLists.txt says ggml '$version', expected $GGML_VERSION"

rm -rf "$src"
mv "$work/llama.cpp" "$src"
printf 'package %s (%s)\nbundle head %s\nggml %s\n' "$PACKAGE" "$INTEGRITY" "$BUNDLE_HEAD" "$GGML_VERSION" >"$stamp"
echo "fetch-ggml: ggml $GGML_VERSION at $ggml"
