# Sourced by the scripts that fetch pinned upstream sources from the npm registry (fetch-ggml.sh,
# fetch-ggml-version.sh, fetch-whisper.sh). Defines die() with the caller's $FETCH_NAME, pinned_fetch_prelude,
# npm_pack_checked and fetch_llama_bundle.

die() { echo "$FETCH_NAME: $*" >&2; exit 1; }

# npm_pack_checked PACKAGE TARBALL INTEGRITY DIR: `npm pack PACKAGE` into DIR, then checks that it produced
# TARBALL and that the tarball's sha512 is INTEGRITY (npm checks the registry's record as well). Dies naming
# what was wrong; DIR is the caller's scratch folder, removed by the caller's trap.
npm_pack_checked() {
  local package="$1" tarball="$2" integrity="$3" dir="$4" got
  command -v npm >/dev/null || die "npm is not installed (the npm registry is where $package comes from)"
  echo "$FETCH_NAME: npm pack $package"
  (cd "$dir" && npm pack --silent "$package" >/dev/null 2>"$dir/npm.log") ||
    die "npm pack $package failed: $(tail -n 3 "$dir/npm.log")"
  [ -f "$dir/$tarball" ] || die "npm pack did not produce $tarball"
  got="sha512-$(/usr/bin/python3 -c 'import base64, hashlib, sys; print(base64.b64encode(hashlib.sha512(open(sys.argv[1], "rb").read()).digest()).decode())' "$dir/$tarball")"
  [ "$got" = "$integrity" ] || die "$tarball: integrity $got, expected $integrity"
}

# pinned_fetch_prelude ARG STAMP MARKER TREE WHAT: the scripts' one argument and their "nothing to do". --print
# prints TREE and exits 0 when STAMP and MARKER (a file of the fetched tree) exist, else exits 1; no argument goes
# on; anything else exits 2. With no argument and the tree already fetched, says so and exits 0.
pinned_fetch_prelude() {
  local arg="$1" stamp="$2" marker="$3" tree="$4" what="$5"
  case "$arg" in
    --print)
      [ -f "$stamp" ] && [ -f "$marker" ] || exit 1
      echo "$tree"
      exit 0
      ;;
    "") ;;
    *) echo "$FETCH_NAME.sh: unknown argument '$arg' (expected --print or nothing)" >&2; exit 2 ;;
  esac
  if [ -f "$stamp" ] && [ -f "$marker" ]; then
    echo "$FETCH_NAME: $what already at $tree"
    exit 0
  fi
}

# fetch_llama_bundle PACKAGE TARBALL INTEGRITY HEAD GGML_VERSION DEST: the llama.cpp release a node-llama-cpp package
# ships as a git bundle (package/llama/gitRelease.bundle), checked out at HEAD into DEST/llama.cpp, with DEST/fetched.txt
# saying what it is. Checks the tarball (npm_pack_checked), the bundle's HEAD and the version ggml/CMakeLists.txt says
# ("unversioned" for a tree without one: those of September 2025 and before checked here). Works in a scratch folder
# under DEST: a failed check leaves nothing half-fetched behind.
fetch_llama_bundle() {
  local package="$1" tarball="$2" integrity="$3" head="$4" ggml_version="$5" dest="$6" work got version
  command -v git >/dev/null || die "git is not installed (needed to clone the package's git bundle)"
  mkdir -p "$dest"
  work="$(mktemp -d "$dest/.fetch.XXXXXX")"
  FETCH_SCRATCH="$work"  # global: the EXIT trap runs after this function's locals are gone
  trap 'rm -rf "$FETCH_SCRATCH"' EXIT
  npm_pack_checked "$package" "$tarball" "$integrity" "$work"
  tar -xzf "$work/$tarball" -C "$work" package/llama/gitRelease.bundle ||
    die "$tarball has no package/llama/gitRelease.bundle"
  got="$(git bundle list-heads "$work/package/llama/gitRelease.bundle" | awk '$2 == "HEAD" {print $1}')"
  [ "$got" = "$head" ] || die "the bundle's HEAD is '$got', expected $head"
  git clone --quiet --no-checkout "$work/package/llama/gitRelease.bundle" "$work/llama.cpp"
  git -C "$work/llama.cpp" -c advice.detachedHead=false checkout --quiet "$head"
  version="$(sed -n 's/^set(GGML_VERSION_\(MAJOR\|MINOR\|PATCH\) \([0-9]*\))$/\2/p' "$work/llama.cpp/ggml/CMakeLists.txt" | paste -sd.)"
  [ "${version:-unversioned}" = "$ggml_version" ] ||
    die "ggml/CMakeLists.txt says ggml '${version:-unversioned}', expected $ggml_version"
  rm -rf "$dest/llama.cpp"
  mv "$work/llama.cpp" "$dest/llama.cpp"
  printf 'package %s (%s)\nbundle head %s\nggml %s\n' "$package" "$integrity" "$head" "$ggml_version" >"$dest/fetched.txt"
}
