#!/usr/bin/python3
"""Where a fuzz target's CPU time goes: perf profiles of a seed replay and of a fuzzing run, by owner.

  bench/profile.py TARGET [--seconds 30] [--freq 199] [--call-graph dwarf|fp] [--build build/fuzz] [--name NAME]
  bench/profile.py TARGET --no-fuzz        the replay only (--no-replay: the fuzzing run only)
  bench/profile.py TARGET --build OTHER/build/fuzz --label "..."   another build, said in the result

Two runs of the fuzz lane's build of TARGET under `perf record`, each with the target's own libFuzzer settings
(targets/<t>.options, as `lifeline fuzz` passes them): a `-runs=0` replay of its seeds (a copy of corpus/TARGET),
and a fuzzing run of --seconds from those seeds (-seed=1, into a scratch corpus). Every sample is charged to
one owner, by its stack from the sampled instruction up:
  kernel       the sample is in the kernel (page faults, mmap/munmap, scheduling, ...)
  idle spin    ggml's workers waiting: ggml_thread_cpu_relax, ggml_barrier, the poll/check-for-work loops, and
               ggml_graph_compute_thread's own time (its work is in the ops it calls)
  sanitizer    the ASan/LSan/UBSan/TSan runtimes: __asan*, __lsan*, __sanitizer*, __ubsan*, __tsan*, interceptors
  libFuzzer    fuzzer::, and SanitizerCoverage's callbacks (__sanitizer_cov_*: libFuzzer's TracePC)
  harness      the project's code in harness/, core/, targets/ (decoding, oracles, bookkeeping)
  under test   upstream sources (build/upstream/: whisper.cpp, ggml, llama.cpp, ...) and the project's layers/
  other        nothing on the stack was recognised (a stack DWARF unwinding cut short, a library of its own)
A function of libc, libstdc++ or the C++ headers (memset, malloc's insides, std::map) is charged to the first
frame above it that is recognised: memset called by ASan's allocator is the sanitizer's, std::map::operator[]
called by whisper_model_load is under test. Source files come from the binary's line tables (`nm -l`).
Beside the shares, the table names what asked for the kernel's and the sanitizer runtime's time: the first frame
of the harness or of the code under test on each such stack (e.g. the upstream function whose allocations ASan
poisons), and the functions that took the most time themselves.

--call-graph dwarf (the default) unwinds libc's functions too (memset has no frame pointer: with fp its caller is
skipped, its caller's caller is found). Prints the tables; writes bench/results/<NAME>.json and <NAME>.md (NAME:
profile-TARGET by default) with the run's date, machine and commit (bench/provenance.py). A benchmark, not a
test; tests/cli/test_profile.py checks the owner rules.
"""
import argparse
import bisect
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "cli"))
sys.path.insert(0, str(ROOT / "bench"))
from lifeline.options import libfuzzer_flags  # noqa: E402
import provenance  # noqa: E402
import tables  # noqa: E402

OWNERS = ("under test", "harness", "sanitizer", "libFuzzer", "kernel", "idle spin", "other")
# ggml's thread pool waiting for work or for the other threads (ggml-cpu.c); the compute thread's own time is its
# loop over the graph, whose work is in the ops it calls.
IDLE = re.compile(r"^(ggml_thread_cpu_relax|ggml_barrier|ggml_graph_compute_thread|ggml_graph_compute_poll_for_work|"
                  r"ggml_graph_compute_check_for_work|ggml_graph_compute_thread_sync\w*|ggml_thread_cpu_relax\w*)$")
# Mangled and plain names of the sanitizer runtimes (compiler-rt has no line tables in the binary).
SANITIZER = re.compile(r"^(_ZN\d+__(asan|lsan|ubsan|tsan|msan|sanitizer|interception|sancov)\b|"
                       r"_ZN\d+__(asan|lsan|ubsan|tsan|msan|sanitizer|interception)|"
                       r"_?__(asan|lsan|ubsan|tsan|msan|interceptor|interception)|__sanitizer_(?!cov)|"
                       r"___interceptor_|__interceptor_|_ZL\d+__interceptor|asan_|__ubsan_|__tsan_)")
LIBFUZZER = re.compile(r"^(_ZN6fuzzer|_ZNK6fuzzer|_ZZN6fuzzer|_ZZNK6fuzzer|__sanitizer_cov_|fuzzer::|"
                       r"LLVMFuzzerRunDriver|_ZN\d+fuzzer)")
KERNEL_DSO = re.compile(r"^\[(kernel\.kallsyms|kernel|vdso|guest\.kernel)")


def owner_of_file(path: str) -> str:
    """The owner of a function by the source file its line tables name; "" for a pass-through (the C and C++
    libraries' headers, whose instantiations run for whoever called them) or an unknown file."""
    p = path.replace("\\", "/")
    if "/build/upstream/" in p or re.search(r"/(whisper\.cpp|llama\.cpp|ggml|pytorch|numpy)/", p):
        return "under test"
    if "/layers/" in p:
        return "under test"
    if re.search(r"/(harness|core|targets)/", p):
        return "harness"
    return ""


def owner_of_frame(sym: str, dso: str, files: dict) -> str:
    """The owner of one frame (mangled symbol `sym` in `dso`), or "" when it passes through to its caller."""
    if KERNEL_DSO.match(dso) or dso == "[kernel]":
        return "kernel"
    if IDLE.match(sym):
        return "idle spin"
    if LIBFUZZER.match(sym):
        return "libFuzzer"
    if SANITIZER.match(sym):
        return "sanitizer"
    if sym in files:
        return owner_of_file(files[sym])
    if sym == "LLVMFuzzerTestOneInput":
        return "harness"
    return ""


def classify(stack: list, files: dict) -> tuple:
    """(owner, charged frame, asker) of one sample; `stack`: [(mangled symbol, dso)] from the sampled
    instruction up. The owner is the first frame's that is not a pass-through (kernel: the first frame is in the
    kernel); asker: the first frame of the harness or the code under test on the stack ("" where none)."""
    owner, charged = "", ""
    for sym, dso in stack:
        o = owner_of_frame(sym, dso, files)
        if o:
            owner, charged = o, sym
            break
    asker = next((sym for sym, dso in stack if owner_of_frame(sym, dso, files) in ("harness", "under test")), "")
    if not owner:
        owner, charged = "other", stack[0][0] if stack else "[unknown]"
    return owner, charged, asker


def source_files(binary: Path) -> dict:
    """{mangled symbol: source file} from the binary's line tables (`nm -l`)."""
    out = subprocess.run(["nm", "-l", "--defined-only", str(binary)], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, universal_newlines=True).stdout
    files = {}
    for line in out.splitlines():
        parts = line.split("\t")
        if len(parts) != 2:
            continue
        fields = parts[0].split(" ", 2)
        if len(fields) == 3:
            files[fields[2]] = parts[1].rsplit(":", 1)[0]
    return files


FRAME = re.compile(r"^\s+[0-9a-f]+ (.*?)(?:\+0x[0-9a-f]+)? \((.*)\)$")


def parse_script(lines):
    """(period, [(mangled symbol, dso)]) per sample of `perf script -F period,ip,sym,dso` output: a line with the
    period, then one indented line per frame ("addr symbol (dso)"), then a blank line."""
    period, stack = None, []
    for line in lines:
        line = line.rstrip("\n")
        if not line.strip():
            if period is not None:
                yield period, stack
            period, stack = None, []
        elif not line[0].isspace() or (period is None and line.strip().isdigit()):
            word = line.split()[0]
            period, stack = (int(word) if word.isdigit() else 1), []
        else:
            m = FRAME.match(line)
            if m and period is not None:
                dso = m.group(2)
                stack.append((m.group(1), dso if dso.startswith("[") else os.path.basename(dso)))
    if period is not None:
        yield period, stack


def samples(data: Path):
    """The samples of a perf.data (parse_script of `perf script`)."""
    proc = subprocess.Popen(["perf", "script", "-i", str(data), "-F", "period,ip,sym,dso", "--no-demangle",
                             "--no-inline"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            universal_newlines=True, errors="replace")
    yield from parse_script(proc.stdout)
    proc.wait()


def breakdown(sample_iter, files: dict) -> dict:
    """Sums of sample periods (ns of CPU time for cpu-clock) per owner, per charged frame, and per asker of the
    kernel's and the sanitizer runtime's time."""
    by_owner = {o: 0 for o in OWNERS}
    by_frame, by_asker = {}, {}
    total = 0
    for period, stack in sample_iter:
        owner, charged, asker = classify(stack, files)
        total += period
        by_owner[owner] += period
        by_frame[(owner, charged)] = by_frame.get((owner, charged), 0) + period
        if owner in ("kernel", "sanitizer"):
            by_asker[(owner, asker)] = by_asker.get((owner, asker), 0) + period
    return {"total": total, "owners": by_owner, "frames": by_frame, "askers": by_asker}


def demangle(names: list) -> dict:
    names = [n for n in names if n]
    if not names:
        return {}
    try:
        out = subprocess.run(["c++filt"], input="\n".join(names), stdout=subprocess.PIPE,
                             universal_newlines=True).stdout.splitlines()
    except OSError:
        return {n: n for n in names}
    short = {}
    for n, d in zip(names, out):
        d = re.sub(r"\(.*\)( const)?$", "", d) if not d.startswith("(") else d  # no parameter lists
        short[n] = d if len(d) <= 90 else d[:87] + "..."
    return short


def summarize(b: dict, top: int = 8) -> dict:
    names = demangle(sorted({k[1] for k in b["frames"]} | {k[1] for k in b["askers"]}))
    frames = sorted(b["frames"].items(), key=lambda kv: -kv[1])[:top]
    askers = sorted(b["askers"].items(), key=lambda kv: -kv[1])[:top]
    return {
        "cpu_s": round(b["total"] / 1e9, 2),
        "owners": {o: round(v / 1e9, 2) for o, v in b["owners"].items()},
        "top_frames": [{"owner": o, "frame": names.get(f, f), "cpu_s": round(v / 1e9, 2)} for (o, f), v in frames],
        "askers": [{"owner": o, "asked_by": names.get(a, a) or "(none)", "cpu_s": round(v / 1e9, 2)}
                   for (o, a), v in askers],
    }


def record(binary: Path, args: list, data: Path, freq: int, call_graph: str, timeout: int) -> tuple:
    """Runs `binary args` under perf record; (its output, wall seconds)."""
    cg = ["--call-graph", "dwarf,16384"] if call_graph == "dwarf" else ["--call-graph", "fp"]
    env = dict(os.environ)
    env.pop("LIFELINE_REINTRODUCE", None)
    t0 = time.monotonic()
    proc = subprocess.run(["perf", "record", "-F", str(freq), *cg, "-o", str(data), "--", str(binary), *args],
                          env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout)
    return proc.stdout.decode("utf-8", "replace"), time.monotonic() - t0


def stats_of(out: str) -> dict:
    return dict((k.strip(), v.strip()) for k, v in (line[len("stat::"):].split(":", 1) for line in out.splitlines()
                                                    if line.startswith("stat::") and ":" in line[len("stat::"):]))


def table(runs: list) -> list:
    """The Markdown lines of the owner table: one column per run, each cell "CPU-s (share of the run's CPU-s)"."""
    head = "| owner | " + " | ".join(f"{r['run']}: CPU-s | {r['run']}: share" for r in runs) + " |"
    lines = [head, "|---|" + "---|---|" * len(runs)]
    for o in OWNERS:
        cells = []
        for r in runs:
            v = r["owners"][o]
            cells += [f"{v:.2f}", tables.percent(v, r["cpu_s"])]
        lines.append(f"| {o} | " + " | ".join(cells) + " |")
    lines.append("| all | " + " | ".join(f"{r['cpu_s']:.2f} | {tables.percent(r['cpu_s'], r['cpu_s'])}"
                                         for r in runs) + " |")
    return lines


def detail(r: dict) -> list:
    lines = [f"### {r['run']}: the frames charged the most CPU time", "", "| owner | frame | CPU-s | share |",
             "|---|---|---|---|"]
    lines += [f"| {f['owner']} | `{f['frame']}` | {f['cpu_s']:.2f} | {tables.percent(f['cpu_s'], r['cpu_s'])} |"
              for f in r["top_frames"]]
    lines += ["", f"### {r['run']}: who asked for the kernel's and the sanitizer runtime's time",
              "", "The first frame of the harness or the code under test on the stack.", "",
              "| owner | asked by | CPU-s | share |", "|---|---|---|---|"]
    lines += [f"| {a['owner']} | `{a['asked_by']}` | {a['cpu_s']:.2f} | {tables.percent(a['cpu_s'], r['cpu_s'])} |"
              for a in r["askers"]]
    return lines + [""]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("target")
    ap.add_argument("--seconds", type=int, default=30, help="length of the fuzzing run (default 30)")
    ap.add_argument("--freq", type=int, default=199, help="samples per second per CPU (perf record -F; default 199)")
    ap.add_argument("--call-graph", choices=("dwarf", "fp"), default="dwarf")
    ap.add_argument("--build", default=str(ROOT / "build" / "fuzz"), help="the fuzz lane's build folder")
    ap.add_argument("--seeds", help="seed directory (default corpus/TARGET)")
    ap.add_argument("--name", help="results file name in bench/results (default profile-TARGET)")
    ap.add_argument("--label", help="what the build is, when it is not this checkout's (recorded and printed)")
    ap.add_argument("--no-replay", action="store_true")
    ap.add_argument("--no-fuzz", action="store_true")
    args = ap.parse_args()
    binary = Path(args.build) / "targets" / args.target
    seeds = Path(args.seeds) if args.seeds else ROOT / "corpus" / args.target
    if not binary.is_file():
        print(f"profile: {binary} is not built", file=sys.stderr)
        return 2
    if not seeds.is_dir():
        print(f"profile: {seeds} is not a directory of seeds", file=sys.stderr)
        return 2
    if shutil.which("perf") is None:
        print("profile: perf is not installed (Debian: linux-perf)", file=sys.stderr)
        return 2
    flags = libfuzzer_flags(args.target)
    work = Path(tempfile.mkdtemp(prefix="profile-"))
    runs = []
    try:
        seed_copy = work / "seeds"
        shutil.copytree(seeds, seed_copy)
        files = source_files(binary)
        plan = []
        if not args.no_replay:
            plan.append(("replay", ["-runs=0", *flags, f"-artifact_prefix={work}/", str(seed_copy)], 3600))
        if not args.no_fuzz:
            (work / "corpus").mkdir()
            plan.append(("fuzz", [*flags, f"-max_total_time={args.seconds}", "-seed=1", "-print_final_stats=1",
                                  f"-artifact_prefix={work}/", str(work / "corpus"), str(seed_copy)],
                         args.seconds + 600))
        for name, run_args, timeout in plan:
            data = work / f"{name}.data"
            print(f"profile: {name}: perf record of {binary.name} {' '.join(run_args[:-1])} ...", flush=True)
            out, wall = record(binary, run_args, data, args.freq, args.call_graph, timeout)
            st = stats_of(out)
            execs = int(st["number_of_executed_units"]) if st.get("number_of_executed_units", "").isdigit() else None
            if name == "replay":
                execs = sum(1 for p in seed_copy.iterdir() if p.is_file())
            crashed = "==ERROR:" in out or "deadly signal" in out or "SUMMARY:" in out
            s = summarize(breakdown(samples(data), files))
            s.update(run=name, wall_s=round(wall, 1), inputs=execs, crashed=crashed,
                     exec_s=round(execs / wall, 2) if execs and wall else None)
            runs.append(s)
            print(f"profile: {name}: {execs} inputs in {wall:.1f} s, {s['cpu_s']} CPU-s sampled"
                  + (" (it stopped on a crash)" if crashed else ""), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if not runs:
        print("profile: nothing to run (--no-replay and --no-fuzz)", file=sys.stderr)
        return 2
    name = args.name or f"profile-{args.target}"
    command = "bench/profile.py " + " ".join(sys.argv[1:])
    result = {"target": args.target, "build": str(args.build), "freq": args.freq, "call_graph": args.call_graph,
              "seconds": args.seconds, "flags": flags, "command": command, "label": args.label, "runs": runs,
              **provenance.record()}
    lines = [f"# Where {args.target}'s CPU time goes", "",
             f"Command: `{command}`; {result['date']}, {result['machine']}, commit {result['commit']}"
             + (f"; the build: {args.label}" if args.label else "") + ".", "",
             "; ".join(f"{r['run']}: {r['inputs']} inputs in {r['wall_s']} s of wall time "
                       f"({r['exec_s']} inputs/s), {r['cpu_s']} CPU-s sampled" for r in runs) + ".", "",
             "Owners as bench/profile.py defines them (its docstring); each share is the row's CPU-s over the run's "
             "CPU-s.", ""] + table(runs) + [""]
    for r in runs:
        lines += detail(r)
    out_dir = ROOT / "bench" / "results"
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / f"{name}.json").write_text(json.dumps(result, indent=2) + "\n")
    (out_dir / f"{name}.md").write_text("\n".join(lines))
    print("\n" + "\n".join(lines[4:]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
