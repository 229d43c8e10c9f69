#!/bin/bash
# `lifeline fuzz` in fork mode (libFuzzer starts its jobs with system(), unquoted) with an --out folder and
# a $TMPDIR whose names a shell would split or run: the job runs inputs, no command in a name is executed,
# and the corpus lands in the folder given. Run by ctest in the fuzz lane (unit.fuzz-hostile-paths);
# tests/cli/test_fuzz_paths.py checks the same, and a checkout path with a blank, on a fake target.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
base=$(mktemp -d)
trap 'rm -rf "$base"' EXIT
fail() { echo "FAIL: $*"; echo "---- job output"; cat "$base/job.log"; exit 1; }

tmp="$base/tmp \$(touch pwned)"
out="$base/o \$(touch pwned);x"
mkdir "$base/cwd" "$tmp"
(cd "$base/cwd" && TMPDIR="$tmp" "$root/lifeline" fuzz interop_string_handoff --jobs 2 --time 5 --no-build \
  --out "$out") > "$base/job.log" 2>&1
rc=$?
found=$(find "$base" -name pwned)
[ -z "$found" ] || fail "a shell ran a command from a path: $found"
[ "$rc" = 0 ] || fail "exit status $rc, expected 0"
execs=$(/usr/bin/python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))[0]["execs"])' \
  "$out/summary.json")
[ "$execs" -gt 0 ] || fail "the job ran no inputs"
n=$(ls "$out/interop_string_handoff/corpus" | wc -l)
[ "$n" -gt 0 ] || fail "the working corpus in $out is empty"
echo "PASS: $execs execs, $n corpus files under $out, nothing executed"
