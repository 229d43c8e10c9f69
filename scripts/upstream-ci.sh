#!/usr/bin/env bash
# The steps of .github/workflows/upstream-fuzz.yml, the reusable workflow through which ggml, llama.cpp or
# whisper.cpp fuzz their pull requests with lifeline; here so that each step of the workflow is one command, and
# so that they run the same way on a desk (tests/workflows/run_upstream_fuzz.py runs the workflow's steps).
#
#   upstream-ci.sh setup --lifeline-ref SHA [--build true|false | --no-build]
#       checks that lifeline is pinned to a commit, prints what the sanitizers depend on, and installs the Debian
#       packages (scripts/install-deps.sh; needs root) unless the build is off
#   upstream-ci.sh fuzz --caller DIR --out DIR [--ggml-path PATH] [--targets "T ..."] [--time S]
#                       [--build true|false | --no-build]
#       finds the ggml tree in the checkout DIR (PATH inside it; by default ggml/ when there is one, else DIR
#       itself), runs `lifeline fuzz T... --ggml-source TREE --time S --out DIR` (with the build off: the fuzz lane
#       as built, which must have been built from that tree) and records its exit status in DIR/fuzz-exit-status.
#       Exits 0 once the status is recorded: the uploads come first, and the verdict is the `verdict` step's.
#   upstream-ci.sh report --caller DIR --out DIR --sarif FILE
#       SARIF of DIR/summary.json (`lifeline report --summary`, locations relative to the caller's checkout);
#       the same as Markdown into $GITHUB_STEP_SUMMARY and `sarif=FILE` into $GITHUB_OUTPUT when they are set.
#       Nothing, and exit 0, when lifeline fuzz wrote no summary (the verdict says why).
#   upstream-ci.sh verdict --out DIR
#       exits with the status `fuzz` recorded, with one line saying what it means (1 when none was recorded)
#
# Defaults: --targets ggml_graph_topology, --time 600, --build true. Bad arguments (a missing option, a caller
# folder that does not exist or holds no ggml tree, a target or time that is not one) are one line on stderr and
# exit status 2. Every value reaches a command as one argument: nothing here is evaluated by a shell.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
me="upstream-ci.sh"

usage_error() { echo "$me${verb:+ $verb}: $*" >&2; exit 2; }

verb="${1:-}"
case "$verb" in
  setup|fuzz|report|verdict) shift ;;
  "") usage_error "a step is required: setup, fuzz, report or verdict" ;;
  *) bad="$verb"; verb=""; usage_error "unknown step '$bad' (expected setup, fuzz, report or verdict)" ;;
esac

caller="" out="" ggml_path="" targets="ggml_graph_topology" seconds="600" build="true" ref="" sarif=""
have_ref=0
while [ $# -gt 0 ]; do
  opt="$1"
  case "$opt" in
    --no-build) build="false"; shift; continue ;;
    --caller|--out|--ggml-path|--targets|--time|--build|--lifeline-ref|--sarif)
      [ $# -ge 2 ] || usage_error "$opt needs a value"
      value="$2"; shift 2 ;;
    *) usage_error "unknown argument '$opt'" ;;
  esac
  case "$opt" in
    --caller) caller="$value" ;;
    --out) out="$value" ;;
    --ggml-path) ggml_path="$value" ;;
    --targets) targets="$value" ;;
    --time) seconds="$value" ;;
    --build) build="$value" ;;
    --lifeline-ref) ref="$value"; have_ref=1 ;;
    --sarif) sarif="$value" ;;
  esac
done

case "$build" in
  true|false) ;;
  *) usage_error "--build must be true or false, not '$build'" ;;
esac

# An absolute path for a folder given on the command line (it must exist).
folder() {  # what, path
  [ -n "$2" ] || usage_error "$1 is required"
  [ -d "$2" ] || usage_error "$1 '$2' is not a directory"
  (cd -- "$2" && pwd)
}

# The folder that `out` names, made if needed: lifeline fuzz writes the job there, and this script the status.
out_folder() {
  [ -n "$out" ] || usage_error "--out DIR is required (the fuzz output: summary.json, artifacts, logs)"
  mkdir -p -- "$out" 2>/dev/null || usage_error "--out '$out' cannot be made"
  (cd -- "$out" && pwd)
}

is_ggml_tree() { [ -f "$1/src/ggml-alloc.c" ] && [ -f "$1/CMakeLists.txt" ]; }

step_setup() {
  [ "$have_ref" = 1 ] || usage_error "--lifeline-ref SHA is required (the commit of lifeline this job runs)"
  # A branch or tag would let lifeline change under a caller that changed nothing; the workflow file it called
  # came from the commit in its `uses:` line, and this checkout must be that commit too.
  [[ "$ref" =~ ^[0-9a-f]{40}$ ]] || usage_error "lifeline-ref '$ref' is not a full commit SHA (40 hex digits):" \
    "pin lifeline to the commit your \`uses: .../upstream-fuzz.yml@SHA\` line names"
  echo "lifeline $ref"
  # The sanitizer runtimes of clang 14 need vm.mmap_rnd_bits <= 28 on the host kernel: printed, so that a
  # sanitizer failing at start-up can be told from a finding.
  echo "kernel $(uname -r), $(nproc) CPUs, vm.mmap_rnd_bits = $(cat /proc/sys/vm/mmap_rnd_bits 2>/dev/null || echo '?')"
  if [ "$build" = false ]; then
    echo "$me setup: the build is off: no Debian packages installed (the fuzz lane is used as built)"
    return 0
  fi
  "$root/scripts/install-deps.sh"
}

step_fuzz() {
  local caller_dir out_dir tree built_from built_real tree_real rc child
  caller_dir="$(folder "the caller's checkout (--caller)" "$caller")"
  [ -n "$out" ] || usage_error "--out DIR is required (the fuzz output: summary.json, artifacts, logs)"
  if [ -n "$ggml_path" ]; then
    case "$ggml_path" in
      /*) usage_error "ggml-path '$ggml_path' must be relative to the caller's checkout" ;;
    esac
    tree="$caller_dir/$ggml_path"
    [ -d "$tree" ] || usage_error "ggml-path '$ggml_path' is not a directory in the caller's checkout $caller_dir"
  elif [ -d "$caller_dir/ggml" ]; then
    tree="$caller_dir/ggml"    # llama.cpp and whisper.cpp keep ggml there
  else
    tree="$caller_dir"         # ggml itself
  fi
  is_ggml_tree "$tree" || usage_error "'$tree' is not a ggml tree (it has no src/ggml-alloc.c and CMakeLists.txt);" \
    "set ggml-path to the folder of the caller's checkout that has them"

  local list=() t flat="${targets//,/ }"
  flat="${flat//$'\n'/ }"   # `read` takes one line
  read -r -a list <<<"$flat" || true
  [ "${#list[@]}" -gt 0 ] || usage_error "--targets names no target"
  for t in "${list[@]}"; do
    [[ "$t" =~ ^[a-z0-9_]+$ ]] || usage_error "'$t' is not a target name (lower-case letters, digits and _)"
  done
  [[ "$seconds" =~ ^[1-9][0-9]{0,6}$ ]] || usage_error "--time must be a whole number of seconds, not '$seconds'"

  local args=(fuzz --time "$seconds")
  if [ "$build" = true ]; then
    args+=(--ggml-source "$tree")
  else
    # lifeline fuzz builds the lane from --ggml-source, so it takes none with --no-build: the lane as built must
    # be the caller's, or the verdict would be about another ggml.
    built_from="$(sed -n 's/^source //p' "$root/build/fuzz/upstream-ggml.txt" 2>/dev/null || true)"
    [ -n "$built_from" ] ||
      usage_error "the build is off but the fuzz lane builds no ggml (no $root/build/fuzz/upstream-ggml.txt);" \
        "turn the build on"
    built_real="$(realpath -e -- "$built_from" 2>/dev/null || echo "$built_from")"
    tree_real="$(realpath -e -- "$tree")"
    [ "$built_real" = "$tree_real" ] ||
      usage_error "the build is off but the fuzz lane was built from the ggml in $built_from, not from $tree;" \
        "turn the build on"
    args+=(--no-build)
  fi

  out_dir="$(out_folder)"
  args+=(--out "$out_dir")
  rm -f -- "$out_dir/fuzz-exit-status"
  echo "+ lifeline ${args[*]} -- ${list[*]}"
  # lifeline fuzz stops on SIGINT or SIGTERM, keeps what it found and writes its summary (exit 130). A cancelled
  # run signals this shell, which would otherwise wait for the job to end: the signal is passed on.
  "$root/lifeline" "${args[@]}" -- "${list[@]}" &
  child=$!
  trap 'kill -INT "$child" 2>/dev/null || true' INT TERM
  rc=0
  wait "$child" || rc=$?
  while kill -0 "$child" 2>/dev/null; do  # the wait above ended on a signal: wait for the job itself
    rc=0
    wait "$child" || rc=$?
  done
  trap - INT TERM
  echo "$rc" >"$out_dir/fuzz-exit-status"
  echo "$me fuzz: lifeline fuzz exited $rc (recorded in $out_dir/fuzz-exit-status; the verdict step goes by it)"
}

step_report() {
  local caller_dir out_dir
  caller_dir="$(folder "the caller's checkout (--caller)" "$caller")"
  out_dir="$(out_folder)"
  [ -n "$sarif" ] || usage_error "--sarif FILE is required"
  case "$sarif" in
    *$'\n'*) usage_error "--sarif: a file name with a line break cannot be a step output" ;;
  esac
  if [ ! -f "$out_dir/summary.json" ]; then
    echo "$me report: no $out_dir/summary.json: lifeline fuzz stopped before writing one (see the fuzz step); no SARIF"
    return 0
  fi
  "$root/lifeline" report --summary "$out_dir/summary.json" --format sarif --output "$sarif" --source-root "$caller_dir"
  if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
    "$root/lifeline" report --summary "$out_dir/summary.json" --format markdown >>"$GITHUB_STEP_SUMMARY"
  fi
  if [ -n "${GITHUB_OUTPUT:-}" ]; then
    printf 'sarif=%s\n' "$sarif" >>"$GITHUB_OUTPUT"
  fi
}

step_verdict() {
  local out_dir rc
  out_dir="$(out_folder)"
  if [ ! -f "$out_dir/fuzz-exit-status" ]; then
    echo "verdict: fail: lifeline fuzz recorded no exit status in $out_dir (it did not run, or was stopped before" \
      "it ended; see the fuzz step)"
    return 1
  fi
  rc="$(cat -- "$out_dir/fuzz-exit-status")"
  if ! [[ "$rc" =~ ^[0-9]{1,3}$ ]]; then
    echo "verdict: fail: $out_dir/fuzz-exit-status holds '$rc', not an exit status"
    return 1
  fi
  if [ "$rc" != 0 ] && [ -f "$out_dir/summary.json" ]; then
    # What failed, in the words of the step summary (new crashes and the jobs that did not finish).
    "$root/lifeline" report --summary "$out_dir/summary.json" --format markdown || true
  fi
  case "$rc" in
    0) echo "verdict: pass: lifeline fuzz exited 0: it found no crash that is not a known upstream-open finding" ;;
    1) echo "verdict: fail: lifeline fuzz exited 1: a crash that is not a known upstream-open finding, a job that" \
         "ended before its time, or a build that failed (the fuzz step says which; the SARIF results and the fuzz" \
         "output artifact hold the inputs)" ;;
    2) echo "verdict: fail: lifeline fuzz exited 2: it refused its arguments, or a job ran no inputs (see the" \
         "fuzz step)" ;;
    130) echo "verdict: fail: lifeline fuzz was interrupted (exit 130); what it found so far is in the fuzz" \
           "output artifact" ;;
    *) echo "verdict: fail: lifeline fuzz exited $rc" ;;
  esac
  return "$rc"
}

"step_$verb"
