#!/usr/bin/env bash
# Fetches the pinned upstream whisper.cpp that the whisper tests fuzz, into the build tree (never committed).
#
#   scripts/fetch-whisper.sh            fetch into build/upstream/whisper.cpp (nothing to do when it is there)
#   scripts/fetch-whisper.sh --print    print the whisper.cpp source directory and exit 1 when it is not fetched
#
# The source is whisper.cpp 1.9.1 as shipped inside the npm package nodejs-whisper@0.3.1
# (package/cpp/whisper.cpp: the whole tree, with its own ggml and examples/whisper.wasm/emscripten.cpp).
# The package comes from the npm registry through the npm client; the tarball's sha512 is checked against the
# value pinned below (npm checks it against the registry's record as well) and the tree's version against
# 1.9.1. A failed check leaves nothing half-fetched behind.
#
# CMake takes the result by default; -DLIFELINE_WHISPER_SOURCE_DIR=<path> points it at another checkout.
set -euo pipefail

PACKAGE="nodejs-whisper@0.3.1"
TARBALL="nodejs-whisper-0.3.1.tgz"
INTEGRITY="sha512-ceoilUVraRuR5FnNyXpGQT2auAR48Oc3AQBEmkXnVpSn9iN6yVRzQBFCqVTGWbk6Wdi95NhvwXNzFvuR7erLWw=="
WHISPER_VERSION="1.9.1"

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest="$root/build/upstream"
src="$dest/whisper.cpp"
stamp="$dest/whisper-fetched.txt"

FETCH_NAME=fetch-whisper
# shellcheck source=lib/npm-pinned.sh
. "$root/scripts/lib/npm-pinned.sh"

pinned_fetch_prelude "${1:-}" "$stamp" "$src/src/whisper.cpp" "$src" "whisper.cpp $WHISPER_VERSION"

mkdir -p "$dest"
work="$(mktemp -d "$dest/.fetch.XXXXXX")"
trap 'rm -rf "$work"' EXIT

npm_pack_checked "$PACKAGE" "$TARBALL" "$INTEGRITY" "$work"

tar -xzf "$work/$TARBALL" -C "$work" package/cpp/whisper.cpp ||
  die "$TARBALL has no package/cpp/whisper.cpp"
tree="$work/package/cpp/whisper.cpp"
version="$(sed -n 's/^project("whisper.cpp" VERSION \([0-9.]*\))$/\1/p' "$tree/CMakeLists.txt")"
[ "$version" = "$WHISPER_VERSION" ] || die "whisper.cpp's CMakeLists.txt says version '$version', expected $WHISPER_VERSION"
for f in src/whisper.cpp include/whisper.h examples/whisper.wasm/emscripten.cpp ggml/src/ggml-alloc.c; do
  [ -f "$tree/$f" ] || die "$TARBALL's whisper.cpp has no $f"
done

rm -rf "$src" "$stamp"
mv "$tree" "$src"
printf 'package %s (%s)\nwhisper.cpp %s\n' "$PACKAGE" "$INTEGRITY" "$WHISPER_VERSION" >"$stamp"
echo "fetch-whisper: whisper.cpp $WHISPER_VERSION at $src"
