# Sourced by the scripts that fetch pinned upstream sources from the npm registry (fetch-ggml.sh,
# fetch-whisper.sh). Defines die() with the caller's $FETCH_NAME, pinned_fetch_prelude and npm_pack_checked.

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
