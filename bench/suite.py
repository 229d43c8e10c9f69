#!/usr/bin/python3
"""Wall time of the test suite: each lane's build and ctest, and the whole README test command.

  bench/suite.py [--lanes asan,tsan,...] [--fresh]

Runs `./lifeline test` (the README's test command; with --lanes only those lanes) and records what it
prints per lane: build seconds, ctest seconds, tests passed and failed (each build after the first runs beside the
previous lane's ctest, so the lanes' seconds add up to more than the wall time, which is recorded too), and for
each stretch between two of its `==== lane` headings how long it took and how busy the processors were (from
/proc/stat: the seconds of CPU left idle say what running more beside it could still win). --fresh deletes build/<lane>/ and the lanes' compiler cache build/ccache/ first, as a fresh
clone has neither (the fetched upstream source and the shared ggml-vulkan shader build stay). Writes
bench/results/suite.json (with the run's date, machine and commit, bench/provenance.py) and suite.md, whose CPU
busy % is computed from the busy and idle CPU seconds printed beside it. A benchmark: it reports the suite's
result, it does not judge it.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import provenance  # bench/, this script's folder
import tables

ROOT = Path(__file__).resolve().parents[1]
LANES = ("asan", "tsan", "lsan", "valgrind", "fuzz")
# `lifeline test`'s table: lane, build, passed, failed, skipped, build s, ctest s.
# "==== lane fuzz: ctest ==== (beside it, at nice 19, the builds of lanes tsan)"
HEADING = re.compile(r"^==== (.*?) ====(.*)$")
ROW = re.compile(r"^(\w+)\s+(ok|FAILED)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s*$")


class CpuMeter:
    """Busy and idle CPU seconds of the whole machine between two readings of /proc/stat (Linux)."""

    def __init__(self):
        self.tick = os.sysconf("SC_CLK_TCK")
        self.last = self._read()

    @staticmethod
    def _read() -> tuple[int, int] | None:
        try:
            fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
        except (OSError, ValueError):
            return None
        return sum(fields), fields[3] + (fields[4] if len(fields) > 4 else 0)  # all, idle + iowait

    def lap(self) -> tuple[float, float] | None:
        """(busy CPU seconds, idle CPU seconds) since the last lap."""
        now, last = self._read(), self.last
        self.last = now
        if now is None or last is None:
            return None
        total, idle = now[0] - last[0], now[1] - last[1]
        return (total - idle) / self.tick, idle / self.tick


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
    rows, prov = [], provenance.record()
    meter, phases, phase, phase_t0 = CpuMeter(), [], "start-up (dependencies, upstream fetch)", t0

    def close_phase(now: float) -> None:
        lap = meter.lap()
        if lap is not None and now - phase_t0 >= 0.5:
            busy, idle = lap
            phases.append({"phase": phase, "seconds": round(now - phase_t0), "busy_pct": round(100 * busy / (busy + idle), 1)
                           if busy + idle else 0.0, "busy_cpu_s": round(busy, 1), "idle_cpu_s": round(idle, 1)})

    for line in proc.stdout:
        if line.startswith("==== lane") or line.startswith("lane       build"):
            now = time.monotonic()
            close_phase(now)
            m = HEADING.match(line)
            phase = (m.group(1) + (" " + m.group(2).strip() if m.group(2).strip() else "")) if m else "summary"
            phase_t0 = now
        if line.startswith("==== lane") or line.startswith("lifeline:"):
            print("  " + line.strip(), flush=True)  # progress
        m = ROW.match(line)
        if m:
            lane, built, passed, failed, skipped, build_s, ctest_s = m.groups()
            rows.append({"lane": lane, "build": built, "passed": int(passed), "failed": int(failed),
                         "skipped": int(skipped), "build_s": int(build_s), "ctest_s": int(ctest_s)})
    rc = proc.wait()
    wall = time.monotonic() - t0
    close_phase(time.monotonic())
    if not rows:
        print("suite: `lifeline test` printed no lane table; nothing recorded", file=sys.stderr)
        return 1
    result = {"command": " ".join(cmd[1:]), "fresh": args.fresh, "exit_status": rc, "wall_s": round(wall),
              "lanes": rows, "phases": phases, **prov}
    out = ROOT / "bench" / "results"
    (out / "suite.json").write_text(json.dumps(result, indent=2) + "\n")
    lines = table(result)
    (out / "suite.md").write_text("\n".join(lines) + "\n")
    print("\n" + "\n".join(lines[2:]))
    return 0


def table(result: dict) -> list:
    """The lines of suite.md from the result main() writes to suite.json."""
    rows, phases, rc, wall = result["lanes"], result["phases"], result["exit_status"], result["wall_s"]
    lines = [f"# Suite wall time (`./lifeline {result['command']}`" + (", fresh build folders" if result["fresh"] else "")
             + f"; exit status {rc})", "", "| lane | build s | ctest s | passed | failed | skipped |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['lane']} | {r['build_s']} | {r['ctest_s']} | {r['passed']} | {r['failed']} | {r['skipped']} |")
    lines.append(f"| **all**: wall s (including dependency checks) | **{wall}** | | "
                 f"{sum(r['passed'] for r in rows)} | {sum(r['failed'] for r in rows)} | "
                 f"{sum(r['skipped'] for r in rows)} |")
    if phases:
        lines += ["", "Where the wall time went, between the headings `lifeline test` prints (a build printed under its "
                  "heading ran earlier, beside a ctest, when it is held):", "",
                  "| stretch | s | CPU s busy | CPU s left idle | CPU busy % |", "|---|---|---|---|---|"]
        lines += [f"| {p['phase']} | {p['seconds']} | {p['busy_cpu_s']} | {p['idle_cpu_s']} | "
                  f"{tables.percent(p['busy_cpu_s'], p['busy_cpu_s'] + p['idle_cpu_s'])} |" for p in phases]
    return lines


if __name__ == "__main__":
    sys.exit(main())
