#!/usr/bin/python3
"""Time-to-exposure: how fast the fuzz target finds a documented bug from the seed corpus alone.

  bench/tte.py BUG_ID [--trials 10] [--budget 60] [--step-mutator]
  bench/tte.py BUG_ID --fixed --trials 1 --budget 600     the same job on the fixed code: expect no crash

Each trial runs the bug's fuzz target (fuzz lane, libFuzzer + ASan) with LIFELINE_REINTRODUCE=BUG_ID and
its own -seed, from a fresh scratch corpus plus the read-only seeds in corpus/<target>/, bounded by the
budget. A trial counts as found when the first crash's signature matches one the bug's bug.json expects
for the asan or fuzz lane. Prints a table and found/N with the median time; writes
bench/results/tte-<bug>.json. A benchmark, not a test: nothing here passes or fails.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "harness" / "py"))
from lifeline import crash as crashmod  # noqa: E402
from lifeline import repro  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("bug")
    ap.add_argument("--trials", type=int, default=10)
    ap.add_argument("--budget", type=int, default=60, help="seconds per trial")
    ap.add_argument("--fixed", action="store_true", help="run on the fixed code (no LIFELINE_REINTRODUCE)")
    ap.add_argument("--build", default=str(ROOT / "build" / "fuzz"))
    ap.add_argument("--step-mutator", action="store_true",
                    help="turn on a target's op-level LLVMFuzzerCustomMutator (LIFELINE_STEP_MUTATOR=1)")
    args = ap.parse_args()
    try:
        bug = repro.load(ROOT / "repro" / args.bug)
    except repro.BugJsonError as e:
        print(f"tte: {e}", file=sys.stderr)
        return 2
    binary = Path(args.build) / "targets" / bug.target
    if not binary.is_file():
        print(f"tte: {binary} is not built; run `cmake --preset fuzz && cmake --build --preset fuzz`", file=sys.stderr)
        return 2
    expected = [r.expect[l] for r in bug.reproducers for l in ("fuzz", "asan") if l in r.expect]
    seeds = ROOT / "corpus" / bug.target
    env = dict(os.environ)
    env.pop("LIFELINE_REINTRODUCE", None)
    if not args.fixed:
        env["LIFELINE_REINTRODUCE"] = bug.id
    if args.step_mutator:
        env["LIFELINE_STEP_MUTATOR"] = "1"

    rows = []
    print(f"{'trial':>5} {'seed':>5} {'result':<10} {'seconds':>8} {'execs':>9}  signature")
    for trial in range(args.trials):
        seed = trial + 1
        work = Path(tempfile.mkdtemp(prefix=f"tte-{bug.id}-"))
        (work / "corpus").mkdir()
        cmd = [str(binary), f"-seed={seed}", f"-max_total_time={args.budget}", "-print_final_stats=1",
               f"-artifact_prefix={work}/", str(work / "corpus"), str(seeds)]
        dict_file = ROOT / "corpus" / f"{bug.target}.dict"
        if dict_file.is_file():
            cmd.insert(1, f"-dict={dict_file}")
        t0 = time.monotonic()
        proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=args.budget + 120)
        elapsed = time.monotonic() - t0
        out = proc.stdout.decode("utf-8", "replace")
        found = crashmod.parse(out)
        execs = 0
        for line in out.splitlines():
            if line.startswith("stat::number_of_executed_units:"):
                execs = int(line.split()[-1])
        if found is None:
            result = "censored" if proc.returncode == 0 else "no-report"
        else:
            result = "found" if any(crashmod.matches(found, e)[0] for e in expected) else "other"
        rows.append({"trial": trial, "seed": seed, "result": result, "seconds": round(elapsed, 2),
                     "execs": execs, "signature": found.signature if found else None})
        print(f"{trial:>5} {seed:>5} {result:<10} {elapsed:>8.1f} {execs:>9}  {found.signature if found else ''}", flush=True)
        if result in ("other", "no-report"):
            # An unexpected crash is a finding: keep its input where the summary says.
            keep = ROOT / "bench" / "results" / "artifacts" / f"tte-{bug.id}-seed{seed}"
            keep.mkdir(parents=True, exist_ok=True)
            for a in work.glob("crash-*"):
                shutil.copy2(a, keep / a.name)
            (keep / "output.txt").write_text(out)
            rows[-1]["kept"] = str(keep)
            print(f"      kept the input and the report in {keep}", flush=True)
        shutil.rmtree(work, ignore_errors=True)

    times = [r["seconds"] for r in rows if r["result"] == "found"]
    summary = {
        "bug": bug.id, "target": bug.target, "fixed_code": args.fixed, "trials": args.trials,
        "step_mutator": args.step_mutator,
        "budget_s": args.budget, "found": len(times),
        "median_s": round(statistics.median(times), 2) if times else None,
        "other_crashes": sum(1 for r in rows if r["result"] in ("other", "no-report")),
        "rows": rows,
    }
    mode = ("fixed" if args.fixed else "reintroduced") + ("-step-mutator" if args.step_mutator else "")
    print(f"\n{bug.id} ({mode}): found {len(times)}/{args.trials}"
          + (f", median {summary['median_s']} s" if times else "")
          + f", other crashes {summary['other_crashes']}, budget {args.budget} s per trial")
    out_dir = ROOT / "bench" / "results"
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / f"tte-{bug.id}-{mode}.json").write_text(json.dumps(summary, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
