#!/bin/bash
# `lifeline fuzz` interrupted in the middle of a multi-target job keeps everything it found: the first
# target's crash artifact and the working corpus of the target that was running, prints its table and
# exits 130. Run by ctest in the fuzz lane (unit.fuzz-interrupt-keeps-everything).
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail() { echo "FAIL: $*"; echo "---- job output"; cat "$out/job.log"; exit 1; }

# metal-encode-async-block makes the first target crash on its first seed with a frame (deterministically:
# every frame calls the dead callback), which ends its job (a switched-on bug is not fuzzed past); the second
# target, untouched by that switch, is still fuzzing at the interrupt.
setsid "$root/lifeline" fuzz runtime_encoder_lifetime alloc_graph_topology --time 12 --no-build \
  --reintroduce metal-encode-async-block --out "$out/fuzz" > "$out/job.log" 2>&1 &
job=$!
for _ in $(seq 1 120); do  # wait until the second target has started (up to 60 s: 12 s and the replays)
  [ -f "$out/fuzz/alloc_graph_topology/fuzz.log" ] && break
  sleep 0.5
done
sleep 3
kill -INT -- "-$job"  # the whole process group, as a terminal's Ctrl-C does
wait "$job"
rc=$?
[ "$rc" = 130 ] || fail "exit status $rc, expected 130"
ls "$out/fuzz/runtime_encoder_lifetime/artifacts/"crash-* >/dev/null 2>&1 || fail "the first target's crash artifact is gone"
n=$(ls "$out/fuzz/alloc_graph_topology/corpus" | wc -l)
[ "$n" -gt 0 ] || fail "the interrupted target's working corpus is empty"
[ -s "$out/fuzz/summary.json" ] || fail "no summary.json"
grep -q "interrupted: corpus and artifacts so far are kept" "$out/job.log" || fail "no interrupt message"
echo "PASS: exit 130, crash artifact kept, $n corpus files of the interrupted target kept"
