#!/usr/bin/python3
"""Throughput of the fuzz targets: exec/s against the ceiling, and what each sanitizer costs.

  bench/throughput.py [TARGET...] [--seconds 10] [--rounds 2] [--max-len 256] [--sanitizers [--variants V,..]]
                      [--name NAME]
  bench/throughput.py TARGET... --replay DIR [--rounds 3] --name NAME   replay rate over the same inputs
  bench/throughput.py TARGET... --against OTHER/build/fuzz             also against another checkout's build

Ceiling: each target and the empty target (bench/empty_target.cc, same lane, same -max_len and -seed) run in
turns (target, empty, target, empty, ...) so machine noise hits both alike; the ratio is target/empty.
--sanitizers also builds every target through .clusterfuzzlite/build.sh with libFuzzer and no sanitizer,
and with each lane's sanitizer flags: asan, fuzz (ASan+UBSan, -fno-sanitize-recover=all and the lane's pass
plugin, cmake/sancov-filter/: the fuzz lane), lsan, tsan (build/bench/<variant>/; --variants picks, and adds
ubsan-recover, fuzz-unfiltered: the fuzz lane without the plugin, fuzz-bare-harness: the fuzz lane with harness/
built without ASan and UBSan), and runs each sanitizer build in turns with the no-sanitizer build: the overhead is
exec/s(none) / exec/s(sanitizer).
Every run passes the target's own libFuzzer settings (targets/<t>.options), as `lifeline fuzz` does.
--against: each target also runs in turns with the same target built in another checkout (a `git worktree` of an
older revision, its fuzz lane configured and built there), each from its own checkout's seeds (corpus/<t>: each
decoder reads its own inputs): before/after figures of one run, on one machine state.
A fuzzing run that crashes ends there (libFuzzer still prints its rate); such runs are counted in the table,
since a target that keeps finding known upstream bugs (ggml_graph_topology) is measured over short runs.
--replay DIR: instead, every input of DIR runs once (-runs=0) on each target in turns, and exec/s is inputs per
second of wall time (start-up included): the same inputs on every target, no mutation, no crash.
Prints progress and tables; writes bench/results/<NAME>.json, <NAME>.md (NAME: throughput by default) and,
per target, <NAME>-<target>.json (not with --replay), each result with the run's date, machine and commit
(bench/provenance.py; bench/dashboard.py shows the newest per target). Every ratio in a table is computed from
the two figures printed beside it (bench/tables.py). A benchmark, not a test.
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
sys.path.insert(0, str(ROOT / "cli"))
from lifeline.options import libfuzzer_flags  # noqa: E402
from lifeline.usage import UsageError  # noqa: E402
import provenance  # noqa: E402  (bench/, this script's folder)
import tables  # noqa: E402
BASE_FLAGS = "-O1 -fno-omit-frame-pointer -gline-tables-only -fsanitize=fuzzer-no-link"
# The lanes' flags (cmake/LifelineLane.cmake), so each variant is what that lane runs.
LANE_ASAN = "-fsanitize=address -fsanitize-address-use-after-return=runtime -fsanitize-address-use-after-scope"
LANE_UBSAN = "-fsanitize=undefined -fno-sanitize-recover=all"
# The fuzz lane's clang pass plugin (cmake/sancov-filter/), which keeps libFuzzer's comparison tracing off UBSan's
# checks: `{SANCOV_FILTER}` in a variant's flags becomes -fpass-plugin=<the plugin, built for clang 14>.
SANCOV_FILTER = "{sancov_filter}"
VARIANTS = {  # name -> extra compile flags (all link -fsanitize=fuzzer plus the same sanitizers)
    "none": "",
    "asan": LANE_ASAN,
    "fuzz": f"{LANE_ASAN} {LANE_UBSAN} {SANCOV_FILTER}",  # the fuzz lane: ASan+UBSan, fatal, the plugin
    "lsan": "-fsanitize=leak",
    "tsan": "-fsanitize=thread",
}
# The compiler of each variant: the lane's (cmake presets). tsan is built with clang 19, as the tsan lane is:
# clang 14 and 16 TSan-instrument libFuzzer's edge counters, which crashes at start and reports races on them.
COMPILERS = {"tsan": ("clang-19", "clang++-19")}
# Only on request (--variants): UBSan with recoverable checks, which no lane runs. Every check's handler then
# returns into the code after it, and SanitizerCoverage instruments that join as one more edge per check
# (bench/results/throughput.md: what this table showed as the fuzz lane's cost before issue 15).
EXTRA_VARIANTS = {"ubsan-recover": f"{LANE_ASAN} -fsanitize=undefined",
                  # the fuzz lane's flags without the plugin: what the plugin saves
                  "fuzz-unfiltered": f"{LANE_ASAN} {LANE_UBSAN}",
                  # the fuzz lane's flags with harness/ compiled without ASan and UBSan (coverage kept): what the
                  # code under test (layers/, core/, upstream) costs alone. A measurement, never a lane: the harness's
                  # own checks (and, through shared template instantiations, some of the layers') are gone.
                  "fuzz-bare-harness": f"{LANE_ASAN} {LANE_UBSAN} {SANCOV_FILTER}"}
# Extra CMake arguments of a variant's build (.clusterfuzzlite/build.sh's LIFELINE_OSSFUZZ_CMAKE_ARGS).
CMAKE_ARGS = {"fuzz-bare-harness": "-DLIFELINE_BENCH_BARE_HARNESS=ON"}


def sancov_filter_flag() -> str:
    """-fpass-plugin=<the fuzz lane's plugin for clang 14>, built by scripts/build-sancov-filter.sh if needed."""
    proc = subprocess.run([str(ROOT / "scripts" / "build-sancov-filter.sh"), "clang++-14"], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True)
    if proc.returncode != 0:
        raise UsageError(f"the fuzz lane's pass plugin did not build:\n{proc.stderr}")
    plugin = Path(proc.stdout.strip())
    if any(c.isspace() for c in str(plugin)):  # CFLAGS are split on blanks: a copy under a blank-free path
        copy = Path(tempfile.mkdtemp(prefix="sancov-filter-")) / plugin.name
        shutil.copy(plugin, copy)
        plugin = copy
    return f"-fpass-plugin={plugin}"


CRASHED = {}  # binary -> runs that ended in a crash


def replay(binary: Path, inputs: Path) -> float:
    """Inputs per second: every file of `inputs` executed once."""
    n = sum(1 for p in inputs.iterdir() if p.is_file())
    t0 = time.monotonic()
    proc = subprocess.run([str(binary), "-runs=0", str(inputs)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    elapsed = time.monotonic() - t0
    if proc.returncode != 0:
        print(f"throughput: {binary} did not replay {inputs} cleanly (exit {proc.returncode}):\n"
              f"{proc.stdout.decode('utf-8', 'replace')[-1500:]}", file=sys.stderr)
        return 0.0
    return n / elapsed


def rate(value: float) -> float:
    """An exec/s figure as the tables print it: whole numbers, one decimal under 10 (whisper_string_handoff runs
    about one input a second, which libFuzzer's own whole-number average prints as 0 or 1)."""
    return round(value, 1) if value < 10 else round(value)


def run(binary: Path, seeds: Path, seconds: int, max_len: int, flags: list = ()) -> float:
    """exec/s of one fuzzing run; `flags`: libFuzzer's, ahead of the run's own. Under 10 exec/s, the run's
    executed units over its wall time instead of libFuzzer's whole-number average."""
    work = Path(tempfile.mkdtemp(prefix="throughput-"))
    try:
        cmd = [str(binary), *flags, f"-max_total_time={seconds}", "-seed=1",
               "-print_final_stats=1", f"-artifact_prefix={work}/", str(work), str(seeds)]
        if max_len:
            cmd.insert(1, f"-max_len={max_len}")
        env = dict(os.environ)
        env.pop("LIFELINE_REINTRODUCE", None)
        t0 = time.monotonic()
        out = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             timeout=seconds + 120).stdout.decode("utf-8", "replace")
        wall = time.monotonic() - t0
        if "ERROR: libFuzzer: deadly signal" in out or "==ERROR:" in out or "SUMMARY:" in out:
            CRASHED[str(binary)] = CRASHED.get(str(binary), 0) + 1
        stats = dict(line[len("stat::"):].split(":", 1) for line in out.splitlines()
                     if line.startswith("stat::") and ":" in line[len("stat::"):])
        if "average_exec_per_sec" in stats:
            average = int(stats["average_exec_per_sec"].strip())
            units = stats.get("number_of_executed_units", "").strip()
            if average < 10 and units.isdigit() and wall > 0:
                return int(units) / wall
            return average
        print(f"throughput: no final stats from {binary} (it crashed or refused to run):\n{out[-1500:]}",
              file=sys.stderr)
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


def alternate(a: tuple, b: tuple, seeds: Path, args, label: str, flags: list = ()) -> tuple:
    """Mean exec/s of a and b ((name, binary) each, or (name, binary, seeds) for seeds of its own), measured in
    turns, both with `flags`."""
    got = {a[0]: [], b[0]: []}
    for r in range(args.rounds):
        for name, binary, *own in (a, b):
            dir_ = own[0] if own else seeds
            eps = replay(binary, dir_) if args.replay else run(binary, dir_, args.seconds, args.max_len, flags)
            got[name].append(eps)
            print(f"  {label} round {r}: {name:<28} {eps:>9} exec/s", flush=True)
    return statistics.mean(got[a[0]]), statistics.mean(got[b[0]]), got


def build_variant(name: str, flags: str, targets: list) -> Path:
    out = ROOT / "build" / "bench" / name / "out"
    shutil.rmtree(out, ignore_errors=True)
    if SANCOV_FILTER in flags:
        flags = flags.replace(SANCOV_FILTER, sancov_filter_flag())
    cflags = f"{BASE_FLAGS} {flags}".strip()
    link = " ".join(f for f in flags.split() if not f.startswith("-fpass-plugin="))  # a compile-only flag
    cc, cxx = COMPILERS.get(name, ("clang-14", "clang++-14"))
    env = dict(os.environ, CC=cc, CXX=cxx, CFLAGS=cflags, CXXFLAGS=cflags,
               LIB_FUZZING_ENGINE=f"-fsanitize=fuzzer {link}".strip(), OUT=str(out),
               LIFELINE_OSSFUZZ_BUILD_DIR=str(ROOT / "build" / "bench" / name / "build"),
               LIFELINE_OSSFUZZ_TARGETS=" ".join(targets), LIFELINE_OSSFUZZ_CMAKE_ARGS=CMAKE_ARGS.get(name, ""))
    print(f"building the {name} variant ({cc}: {cflags})", flush=True)
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
    ap.add_argument("--variants", help="with --sanitizers: which builds besides none (default "
                    f"{','.join(v for v in VARIANTS if v != 'none')}; also {','.join(EXTRA_VARIANTS)})")
    ap.add_argument("--name", default="throughput", help="results file name in bench/results (default throughput)")
    ap.add_argument("--replay", help="replay rate: every input of this directory once per run, targets in turns")
    ap.add_argument("--against", help="the fuzz lane's build folder of another checkout (another revision): each "
                                      "target also runs in turns with its build there, from that checkout's seeds")
    args = ap.parse_args()
    if args.replay:
        return main_replay(args)
    if args.seconds < 1 or args.rounds < 1:
        print("throughput: --seconds and --rounds must be positive", file=sys.stderr)
        return 2
    build = Path(args.build)
    empty = build / "bench" / "empty_target"
    built = sorted(p.name for p in (build / "targets").iterdir()) if (build / "targets").is_dir() else []
    targets = args.targets or built
    against = Path(args.against) if args.against else None
    for t in targets + ["empty_target"]:
        for b in (build, against) if against else (build,):
            p = b / "bench" / "empty_target" if t == "empty_target" else b / "targets" / t
            if t == "empty_target" and b is against:
                continue
            if not p.is_file():
                print(f"throughput: {p} is not built; run `cmake --preset fuzz && cmake --build --preset fuzz`"
                      f"{' in that checkout' if b is against else ''}", file=sys.stderr)
                return 2
    variants = {}
    known = {**VARIANTS, **EXTRA_VARIANTS}
    chosen = [v for v in VARIANTS if v != "none"]
    if args.variants:
        chosen = [v.strip() for v in args.variants.split(",") if v.strip()]
        unknown = [v for v in chosen if v not in known or v == "none"]
        if unknown or not chosen:
            print(f"throughput: --variants {args.variants!r}: unknown {', '.join(unknown) or '(none given)'}; "
                  f"known: {', '.join(v for v in known if v != 'none')}", file=sys.stderr)
            return 2
    if args.sanitizers:
        try:
            variants = {name: build_variant(name, known[name], targets) for name in ["none"] + chosen}
        except UsageError as e:
            print(f"throughput: {e}", file=sys.stderr)
            return 2
    try:
        settings = {t: libfuzzer_flags(t, ROOT) for t in targets}
    except UsageError as e:
        print(f"throughput: {e}", file=sys.stderr)
        return 2
    results, prov = [], provenance.record()
    for n, t in enumerate(targets):
        print(f"[{n + 1}/{len(targets)}] {t}", flush=True)
        seeds = ROOT / "corpus" / t
        te, ce, rows = alternate((t, build / "targets" / t), ("empty_target", empty), seeds, args, "ceiling",
                                 settings[t])
        res = {"target": t, "exec_s": rate(te), "ceiling_exec_s": round(ce), "ratio": round(te / ce, 4) if ce else 0,
               "seconds": args.seconds, "rounds": args.rounds, "max_len": args.max_len, "rows": rows,
               "runs_ended_by_crash": CRASHED.get(str(build / "targets" / t), 0), "overhead": {},
               "flags": settings[t], **prov}
        if against:
            # The other checkout's seeds: its decoder reads its own inputs (<checkout>/build/<lane>/targets/<t>).
            own = against.parent.parent / "corpus" / t
            oe, ne, orows = alternate((f"{t} (against)", against / "targets" / t, own if own.is_dir() else seeds),
                                      (t, build / "targets" / t), seeds, args, "against", settings[t])
            res["against"] = {"build": str(against), "exec_s": rate(oe), "this_exec_s": rate(ne),
                              "ratio": round(ne / oe, 2) if oe else None, "rows": orows}
        none = variants.get("none")
        for name, out in variants.items():
            if name == "none":
                continue
            nb, vb = none / t, out / t
            if not nb.is_file() or not vb.is_file():
                res["overhead"][name] = None
                continue
            ne, ve, _ = alternate(("none", nb), (name, vb), seeds, args, name, settings[t])
            res["overhead"][name] = {"none_exec_s": round(ne), "exec_s": round(ve),
                                     "slowdown": round(ne / ve, 2) if ve else None}
        results.append(res)
        (ROOT / "bench" / "results" / f"{args.name}-{t}.json").write_text(json.dumps(res, indent=2) + "\n")
    out_dir = ROOT / "bench" / "results"
    (out_dir / f"{args.name}.json").write_text(json.dumps(results, indent=2) + "\n")
    names = [n for n in variants if n != "none"]
    lines = table(results, names, str(against) if against else None, args.rounds, args.seconds, args.max_len,
                  "bench/throughput.py " + " ".join(sys.argv[1:]))
    (out_dir / f"{args.name}.md").write_text("\n".join(lines) + "\n")
    print("\n" + "\n".join(lines[4:]))
    return 0


def table(results: list, names: list, against, rounds: int, seconds: int, max_len: int, command: str) -> list:
    """The lines of <NAME>.md: one row per result of main(), a slowdown column per sanitizer of `names`, and the
    --against columns where `against` (the other build's folder) is given."""
    head = "| target | exec/s | empty target | ratio | runs ended by a crash |" + "".join(f" {n} slowdown |" for n in names)
    sep = "|---|---|---|---|---|" + "---|" * len(names)
    if against:
        head += " against: exec/s there | this build, same turns | this / there |"
        sep += "---|---|---|"
    lines = [f"# Throughput ({rounds} alternating rounds of {seconds} s, -max_len={max_len})", "",
             f"Command: `{command}`", "", head, sep]
    for r in results:
        cells = ""
        for n in names:
            o = r["overhead"].get(n)
            cells += (f" {tables.times(o['none_exec_s'], o['exec_s'])} ({o['none_exec_s']:,} / {o['exec_s']:,} exec/s) |"
                      if o and o["exec_s"] else " n/a |")
        if against:
            a = r["against"]
            cells += f" {a['exec_s']} | {a['this_exec_s']} | {tables.times(a['this_exec_s'], a['exec_s'])} |"
        lines.append(f"| {r['target']} | {r['exec_s']} | {r['ceiling_exec_s']} | "
                     f"{tables.percent(r['exec_s'], r['ceiling_exec_s'], 2)} | {r['runs_ended_by_crash']}/{rounds} |{cells}")
    lines += ["", "ratio = exec/s / the empty target's exec/s, measured in turns."]
    if against:
        lines += ["", f"against: `{against}`, measured in turns with this build (their own rounds, not the ceiling's), "
                      "each from its checkout's seeds with this checkout's libFuzzer settings; this / there = this "
                      "build's exec/s in those turns (\"this build, same turns\", not the exec/s column, which is of "
                      "the ceiling's turns) / that build's."]
    if names:
        lines += ["", "slowdown = exec/s without sanitizers / exec/s with the sanitizer, both libFuzzer builds of "
                      ".clusterfuzzlite/build.sh with the lane's flags (fuzz = ASan+UBSan, -fno-sanitize-recover=all), "
                      "measured in turns with the target's own settings (targets/<t>.options); in brackets "
                      "exec/s without / with the sanitizer. The fuzz variant loads the lane's pass plugin "
                      "(cmake/sancov-filter/: no comparison tracing of UBSan's checks); fuzz-unfiltered is the same "
                      "without it; fuzz-bare-harness builds harness/ without ASan and UBSan (what the code under "
                      "test costs alone; a measurement, never a lane). The tsan variant is built with clang 19 (as "
                      "the tsan lane), the others and the build without sanitizers with clang 14."]
    return lines


def main_replay(args) -> int:
    build, inputs = Path(args.build), Path(args.replay)
    if not inputs.is_dir() or not any(p.is_file() for p in inputs.iterdir()):
        print(f"throughput: --replay {inputs} is not a directory of inputs", file=sys.stderr)
        return 2
    if len(args.targets) < 1:
        print("throughput: --replay needs the targets to compare", file=sys.stderr)
        return 2
    for t in args.targets:
        if not (build / "targets" / t).is_file():
            print(f"throughput: {build / 'targets' / t} is not built", file=sys.stderr)
            return 2
    n = sum(1 for p in inputs.iterdir() if p.is_file())
    got = {t: [] for t in args.targets}
    for r in range(args.rounds):
        for t in args.targets:
            eps = replay(build / "targets" / t, inputs)
            got[t].append(eps)
            print(f"  replay round {r}: {t:<28} {eps:>9.1f} inputs/s", flush=True)
    prov = provenance.record()
    results = [{"target": t, "replay_exec_s": round(statistics.mean(v), 1), "rows": v, "inputs": n,
                "rounds": args.rounds, "corpus": str(inputs), **prov} for t, v in got.items()]
    lines = replay_table(results, inputs.name, args.rounds, "bench/throughput.py " + " ".join(sys.argv[1:]))
    out_dir = ROOT / "bench" / "results"
    (out_dir / f"{args.name}.json").write_text(json.dumps(results, indent=2) + "\n")
    (out_dir / f"{args.name}.md").write_text("\n".join(lines) + "\n")
    print("\n" + "\n".join(lines[4:]))
    return 0


def replay_table(results: list, corpus_name: str, rounds: int, command: str) -> list:
    """The lines of a --replay run's <NAME>.md: inputs/s per target, and each against the first target's."""
    n, base = results[0]["inputs"], results[0]["replay_exec_s"]
    lines = [f"# Replay rate ({rounds} alternating rounds, {n} inputs of {corpus_name}, each once per run)", "",
             f"Command: `{command}`", "", f"| target | inputs/s | vs {results[0]['target']} |", "|---|---|---|"]
    for r in results:
        lines.append(f"| {r['target']} | {r['replay_exec_s']} | {tables.times(r['replay_exec_s'], base)} |")
    return lines


if __name__ == "__main__":
    sys.exit(main())
