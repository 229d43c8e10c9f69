#!/usr/bin/python3
"""Wall time of the test suite: each lane's build and ctest, and the whole README test command.

  bench/suite.py [--lanes asan,tsan,...] [--fresh]

Runs `./lifeline test` (the README's test command; with --lanes only those lanes) and records what it
prints per lane: build seconds, ctest seconds, tests passed and failed (each build after the first runs beside the
previous lane's ctest, so the lanes' seconds add up to more than the wall time, which is recorded too). --fresh deletes build/<lane>/ and the lanes' compiler cache build/ccache/ first, as a fresh
clone has neither (the fetched upstream source and the shared ggml-vulkan shader build stay). Writes
bench/results/suite.json and suite.md. A benchmark: it reports the suite's result, it does not judge it.
"""
import argparse
import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LANES = ("asan", "tsan", "lsan", "valgrind", "fuzz")
# `lifeline test`'s table: lane, build, passed, failed, skipped, build s, ctest s.
ROW = re.compile(r"^(\w+)\s+(ok|FAILED)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s*$")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lanes", default=",".join(LANES))
    ap.add_argument("--fresh", action="store_true", help="delete the lanes' build folders and build/ccache first")
    args = ap.parse_args()
    lanes = args.lanes.split(",")
    for lane in lanes:
        if lane not in LANES:
            print(f"suite: unknown lane '{lane}' (known: {', '.join(LANES)})", file=sys.stderr)
            return 2
    if args.fresh:
        for lane in lanes:
            shutil.rmtree(ROOT / "build" / lane, ignore_errors=True)
        shutil.rmtree(ROOT / "build" / "ccache", ignore_errors=True)  # else the lanes compile from a warm cache
    cmd = [str(ROOT / "lifeline"), "test"] + ([] if len(lanes) == len(LANES) else ["--lanes", args.lanes])
    print("suite: " + " ".join(cmd), flush=True)
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    rows = []
    for line in proc.stdout:
        if line.startswith("==== lane") or line.startswith("lifeline:"):
            print("  " + line.strip(), flush=True)  # progress
        m = ROW.match(line)
        if m:
            lane, built, passed, failed, skipped, build_s, ctest_s = m.groups()
            rows.append({"lane": lane, "build": built, "passed": int(passed), "failed": int(failed),
                         "skipped": int(skipped), "build_s": int(build_s), "ctest_s": int(ctest_s)})
    rc = proc.wait()
    wall = time.monotonic() - t0
    if not rows:
        print("suite: `lifeline test` printed no lane table; nothing recorded", file=sys.stderr)
        return 1
    result = {"command": " ".join(cmd[1:]), "fresh": args.fresh, "exit_status": rc, "wall_s": round(wall),
              "lanes": rows}
    out = ROOT / "bench" / "results"
    (out / "suite.json").write_text(json.dumps(result, indent=2) + "\n")
    lines = [f"# Suite wall time (`./lifeline {result['command']}`" + (", fresh build folders" if args.fresh else "")
             + f"; exit status {rc})", "", "| lane | build s | ctest s | passed | failed | skipped |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['lane']} | {r['build_s']} | {r['ctest_s']} | {r['passed']} | {r['failed']} | {r['skipped']} |")
    lines.append(f"| **all**: wall s (including dependency checks) | **{round(wall)}** | | "
                 f"{sum(r['passed'] for r in rows)} | {sum(r['failed'] for r in rows)} | "
                 f"{sum(r['skipped'] for r in rows)} |")
    (out / "suite.md").write_text("\n".join(lines) + "\n")
    print("\n" + "\n".join(lines[2:]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
