#!/usr/bin/python3
"""exec/s of a fuzz target beside the empty target (the ceiling) on the same inputs, measured alternately.

  bench/throughput.py TARGET [--seconds 15] [--rounds 2] [--max-len 256]

Both run from a fresh scratch corpus plus the target's seeds, with the same -max_len and -seed, in turns
(target, empty, target, empty, ...) so machine noise hits both alike. Prints a table and the ratio, and
writes bench/results/throughput-<target>.json. A benchmark, not a test.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run(binary: Path, seeds: Path, seconds: int, max_len: int) -> int:
    work = Path(tempfile.mkdtemp(prefix="throughput-"))
    try:
        cmd = [str(binary), f"-max_total_time={seconds}", f"-max_len={max_len}", "-seed=1",
               "-print_final_stats=1", f"-artifact_prefix={work}/", str(work), str(seeds)]
        env = dict(os.environ)
        env.pop("LIFELINE_REINTRODUCE", None)
        out = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             timeout=seconds + 120).stdout.decode("utf-8", "replace")
        for line in out.splitlines():
            if line.startswith("stat::average_exec_per_sec:"):
                return int(line.split()[-1])
        print(f"throughput: no final stats from {binary.name}:\n{out[-2000:]}", file=sys.stderr)
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("target")
    ap.add_argument("--seconds", type=int, default=15)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--max-len", type=int, default=256)
    ap.add_argument("--build", default=str(ROOT / "build" / "fuzz"))
    args = ap.parse_args()
    build = Path(args.build)
    target, empty = build / "targets" / args.target, build / "bench" / "empty_target"
    seeds = ROOT / "corpus" / args.target
    for p in (target, empty):
        if not p.is_file():
            print(f"throughput: {p} is not built; run `cmake --preset fuzz && cmake --build --preset fuzz`", file=sys.stderr)
            return 2
    rows = []
    print(f"{'round':>5} {'binary':<28} {'exec/s':>9}")
    for r in range(args.rounds):
        for name, binary in ((args.target, target), ("empty_target", empty)):
            eps = run(binary, seeds, args.seconds, args.max_len)
            rows.append({"round": r, "binary": name, "exec_s": eps})
            print(f"{r:>5} {name:<28} {eps:>9}", flush=True)
    t = statistics.mean(x["exec_s"] for x in rows if x["binary"] == args.target)
    e = statistics.mean(x["exec_s"] for x in rows if x["binary"] == "empty_target")
    ratio = t / e if e else 0.0
    print(f"\n{args.target}: {t:.0f} exec/s; empty target: {e:.0f} exec/s; ratio {ratio:.1%} "
          f"({args.rounds} alternating rounds of {args.seconds} s, max_len {args.max_len})")
    out = ROOT / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / f"throughput-{args.target}.json").write_text(json.dumps(
        {"target": args.target, "exec_s": round(t), "ceiling_exec_s": round(e), "ratio": round(ratio, 4),
         "seconds": args.seconds, "rounds": args.rounds, "max_len": args.max_len, "rows": rows}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
