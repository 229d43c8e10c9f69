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

FETCH_NAME=fetch-ggml
# shellcheck source=lib/npm-pinned.sh
. "$root/scripts/lib/npm-pinned.sh"

pinned_fetch_prelude "${1:-}" "$stamp" "$ggml/src/ggml-alloc.c" "$ggml" "ggml $GGML_VERSION"

fetch_llama_bundle "$PACKAGE" "$TARBALL" "$INTEGRITY" "$BUNDLE_HEAD" "$GGML_VERSION" "$dest"
echo "fetch-ggml: ggml $GGML_VERSION at $ggml"
