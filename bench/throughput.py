#!/usr/bin/python3
"""Throughput of the fuzz targets: exec/s against the ceiling, and what each sanitizer costs.

  bench/throughput.py [TARGET...] [--seconds 10] [--rounds 2] [--max-len 256] [--sanitizers]

Ceiling: each target and the empty target (bench/empty_target.cc, same lane, same -max_len and -seed) run in
turns (target, empty, target, empty, ...) so machine noise hits both alike; the ratio is target/empty.
--sanitizers also builds every target through .clusterfuzzlite/build.sh with libFuzzer and no sanitizer,
ASan, ASan+UBSan (the fuzz lane's set), LSan and TSan (build/bench/<variant>/), and runs each sanitizer
build in turns with the no-sanitizer build: the overhead is exec/s(none) / exec/s(sanitizer).
Prints progress and tables; writes bench/results/throughput.json, throughput.md and, per target,
throughput-<target>.json. A benchmark, not a test.
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
BASE_FLAGS = "-O1 -fno-omit-frame-pointer -gline-tables-only -fsanitize=fuzzer-no-link"
VARIANTS = {  # name -> extra compile flags (all link -fsanitize=fuzzer plus the same sanitizers)
    "none": "",
    "asan": "-fsanitize=address -fsanitize-address-use-after-scope",
    "asan-ubsan": "-fsanitize=address -fsanitize-address-use-after-scope -fsanitize=undefined",
    "lsan": "-fsanitize=leak",
    "tsan": "-fsanitize=thread",
}


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
        print(f"throughput: no final stats from {binary} (it crashed or refused to run):\n{out[-1500:]}",
              file=sys.stderr)
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


def alternate(a: tuple, b: tuple, seeds: Path, args, label: str) -> tuple:
    """Mean exec/s of a and b ((name, binary) each), measured in turns."""
    got = {a[0]: [], b[0]: []}
    for r in range(args.rounds):
        for name, binary in (a, b):
            eps = run(binary, seeds, args.seconds, args.max_len)
            got[name].append(eps)
            print(f"  {label} round {r}: {name:<28} {eps:>9} exec/s", flush=True)
    return statistics.mean(got[a[0]]), statistics.mean(got[b[0]]), got


def build_variant(name: str, flags: str) -> Path:
    out = ROOT / "build" / "bench" / name / "out"
    shutil.rmtree(out, ignore_errors=True)
    cflags = f"{BASE_FLAGS} {flags}".strip()
    env = dict(os.environ, CC="clang-14", CXX="clang++-14", CFLAGS=cflags, CXXFLAGS=cflags,
               LIB_FUZZING_ENGINE=f"-fsanitize=fuzzer {flags}".strip(), OUT=str(out),
               LIFELINE_OSSFUZZ_BUILD_DIR=str(ROOT / "build" / "bench" / name / "build"))
    print(f"building the {name} variant ({cflags})", flush=True)
    proc = subprocess.run([str(ROOT / ".clusterfuzzlite" / "build.sh")], env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT)
    if proc.returncode != 0:
        print(f"throughput: the {name} build failed:\n{proc.stdout.decode('utf-8', 'replace')[-1500:]}", file=sys.stderr)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("targets", nargs="*", help="default: every target built in the fuzz lane")
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--max-len", type=int, default=256)
    ap.add_argument("--build", default=str(ROOT / "build" / "fuzz"))
    ap.add_argument("--sanitizers", action="store_true", help="also measure each sanitizer's overhead")
    args = ap.parse_args()
    if args.seconds < 1 or args.rounds < 1:
        print("throughput: --seconds and --rounds must be positive", file=sys.stderr)
        return 2
    build = Path(args.build)
    empty = build / "bench" / "empty_target"
    built = sorted(p.name for p in (build / "targets").iterdir()) if (build / "targets").is_dir() else []
    targets = args.targets or built
    for t in targets + ["empty_target"]:
        p = empty if t == "empty_target" else build / "targets" / t
        if not p.is_file():
            print(f"throughput: {p} is not built; run `cmake --preset fuzz && cmake --build --preset fuzz`",
                  file=sys.stderr)
            return 2
    variants = {}
    if args.sanitizers:
        variants = {name: build_variant(name, flags) for name, flags in VARIANTS.items()}
    results = []
    for n, t in enumerate(targets):
        print(f"[{n + 1}/{len(targets)}] {t}", flush=True)
        seeds = ROOT / "corpus" / t
        te, ce, rows = alternate((t, build / "targets" / t), ("empty_target", empty), seeds, args, "ceiling")
        res = {"target": t, "exec_s": round(te), "ceiling_exec_s": round(ce), "ratio": round(te / ce, 4) if ce else 0,
               "seconds": args.seconds, "rounds": args.rounds, "max_len": args.max_len, "rows": rows,
               "overhead": {}}
        none = variants.get("none")
        for name, out in variants.items():
            if name == "none":
                continue
            nb, vb = none / t, out / t
            if not nb.is_file() or not vb.is_file():
                res["overhead"][name] = None
                continue
            ne, ve, _ = alternate(("none", nb), (name, vb), seeds, args, name)
            res["overhead"][name] = {"none_exec_s": round(ne), "exec_s": round(ve),
                                     "slowdown": round(ne / ve, 2) if ve else None}
        results.append(res)
        (ROOT / "bench" / "results" / f"throughput-{t}.json").write_text(json.dumps(res, indent=2) + "\n")
    out_dir = ROOT / "bench" / "results"
    (out_dir / "throughput.json").write_text(json.dumps(results, indent=2) + "\n")
    names = [n for n in VARIANTS if n != "none" and variants]
    head = "| target | exec/s | empty target | ratio |" + "".join(f" {n} slowdown |" for n in names)
    lines = [f"# Throughput ({args.rounds} alternating rounds of {args.seconds} s, -max_len={args.max_len})", "",
             "Command: `bench/throughput.py " + " ".join(sys.argv[1:]) + "`", "", head,
             "|---|---|---|---|" + "---|" * len(names)]
    for r in results:
        cells = "".join(f" {r['overhead'][n]['slowdown']}x |" if r["overhead"].get(n) and r["overhead"][n]["slowdown"]
                        else " n/a |" for n in names)
        lines.append(f"| {r['target']} | {r['exec_s']} | {r['ceiling_exec_s']} | {r['ratio']:.2%} |{cells}")
    if names:
        lines += ["", "slowdown = exec/s without sanitizers / exec/s with the sanitizer, both libFuzzer builds of "
                      ".clusterfuzzlite/build.sh, measured in turns."]
    (out_dir / "throughput.md").write_text("\n".join(lines) + "\n")
    print("\n" + "\n".join(lines[4:]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
