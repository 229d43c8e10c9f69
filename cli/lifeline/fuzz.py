"""`lifeline fuzz`: one job per target from the seed corpus, with libFuzzer (the fuzz lane: in-process, or
fork mode with --jobs N) or AFL++ (the AFL++ build of scripts/build-afl.sh); a progress line, then each new
artifact replayed once and sorted into crashes and known upstream-open findings, and a summary table with each
target's artifacts grouped by bug id or signature and its guard counts (LIFELINE_GUARD_COUNTS). Nothing found
is lost on Ctrl-C or SIGTERM.

This module is the verb: its arguments checked, the lane built, a job run per target, the table printed and
summary.json written. The parts: fuzz_libfuzzer.py and fuzz_afl.py (one job of each engine), fuzz_jobdir.py (a
job's folder), fuzz_artifacts.py (a job's artifacts replayed, sorted and grouped), fuzz_log.py (libFuzzer's
output read)."""
from __future__ import annotations

import json
import os
import signal
from pathlib import Path

from . import guards as guardsmod
from .build import configure_and_build, describe_ggml, ensure_deps, ensure_upstream, resolve_ggml_source, run, upstream_ggml
from .fuzz_afl import afl_job
from .fuzz_artifacts import artifact_lines, group_artifacts
from .fuzz_jobdir import check_file_slot, check_writable_dir, prepare_job_dir
from .fuzz_libfuzzer import libfuzzer_job
from .fuzz_log import JobLog, executed_units
from .options import libfuzzer_flags
from .paths import FUZZ_LANES, ROOT, fuzz_targets, source_targets, target_labels
from .usage import UsageError

# The names callers read here: main.py's verb, and what a libFuzzer log says and how a job's artifacts group
# (tests/cli/test_fuzz_log.py, bench/tte.py).
__all__ = ["JobLog", "artifact_lines", "cmd_fuzz", "executed_units", "group_artifacts"]


def _ran_no_inputs(r: dict) -> str:
    """The one line that fails a job which executed no input: it tested nothing, whatever its exit status."""
    try:
        lines = [line.strip() for line in Path(r["log"]).read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        lines = []
    errors = [line for line in lines if "error" in line.lower() or "not found" in line]
    last = (errors or lines or ["(empty)"])[-1]
    return (f"lifeline fuzz: {r['target']} ran no inputs (exit status {r.get('exit_status')}), so it tested "
            f"nothing; {r['log']} says: {last}")


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt


def cmd_fuzz(args) -> int:
    if args.time <= 0:
        raise UsageError("lifeline fuzz: --time must be a positive number of seconds")
    if args.jobs < 1:
        raise UsageError("lifeline fuzz: --jobs must be at least 1")
    if args.lane not in FUZZ_LANES:
        raise UsageError(f"lifeline fuzz: lane '{args.lane}' links no fuzzing engine; only the fuzz lane "
                         "(libFuzzer + ASan+UBSan) and the tsan lane (libFuzzer + TSan) do; the others replay inputs")
    if args.engine == "afl" and args.lane != "fuzz":
        raise UsageError("lifeline fuzz: --engine afl builds its own ASan+UBSan binaries; it has no --lane")
    if args.engine == "afl" and args.jobs > 1:
        raise UsageError("lifeline fuzz: --jobs applies to libFuzzer; run several AFL++ instances by hand")
    known = source_targets()
    for t in args.targets:
        if t not in known:
            raise UsageError(f"lifeline fuzz: unknown target '{t}' (known: {', '.join(known)})")
    if args.ggml_source and (args.no_build or args.engine == "afl"):
        raise UsageError("lifeline fuzz: --ggml-source builds the lane from that checkout; it cannot go with "
                         + ("--no-build" if args.no_build else "--engine afl (build-afl.sh builds the pinned ggml)"))
    ggml_source = resolve_ggml_source(args.ggml_source) if args.ggml_source else None
    out = Path(args.out if args.out is not None else ROOT / ("fuzz-out" if args.lane == "fuzz" else f"fuzz-out-{args.lane}")).resolve()
    check_writable_dir(out, "output directory")
    check_file_slot(out / "summary.json")
    if not args.no_build:
        ensure_deps()
        if args.engine == "afl":
            if run([str(ROOT / "scripts" / "build-afl.sh")], cwd=ROOT) != 0:
                return 1
        else:
            ensure_upstream()
            # The targets asked for and what they link, not the whole lane (every target when none is named).
            if not configure_and_build(args.lane, targets=list(args.targets) or None, ggml_source=ggml_source,
                                       verb="fuzz"):
                return 1
    if args.engine == "afl":
        lane_dir = ROOT / "build" / "afl"
        built = sorted(p.name for p in lane_dir.iterdir() if p.is_file() and os.access(p, os.X_OK)
                       and (ROOT / "targets" / f"{p.name}.cc").is_file()) if lane_dir.is_dir() else []
    else:
        lane_dir = ROOT / "build" / args.lane
        built = fuzz_targets(lane_dir)
    if args.lane == "tsan":
        # TSan watches threads: the lane fuzzes the targets that start them (label `threads`).
        labels = target_labels(lane_dir)
        threaded = [t for t in built if "threads" in labels.get(t, [])]
        for t in args.targets:
            if t in built and t not in threaded:
                raise UsageError(f"lifeline fuzz: target '{t}' starts no threads, so TSan has nothing to watch; "
                                 f"fuzz it in the fuzz lane (targets that start threads: {', '.join(threaded) or 'none built'})")
        built = threaded
    targets = args.targets or built
    if not targets:
        raise UsageError(f"lifeline fuzz: no fuzz binaries in {lane_dir}; build them first (drop --no-build)")
    results = []
    interrupted = False
    idle = None  # the job that ran no inputs: the run stops there and fails
    # SIGINT and SIGTERM stop a job: the children are stopped, nothing found is lost. SIGINT is handled
    # explicitly because a shell starts background jobs with it ignored, and libFuzzer would still die of
    # it (it installs its own handler) while the job went on to the next target.
    signal.signal(signal.SIGTERM, _raise_interrupt)
    signal.signal(signal.SIGINT, _raise_interrupt)
    for t in targets:
        if t not in built:
            raise UsageError(f"lifeline fuzz: target '{t}' is not built in {lane_dir}")
        if args.engine != "afl":
            libfuzzer_flags(t)  # a malformed targets/<t>.options stops the run before any job starts
    for t in targets:  # every job's folders, before the first job starts
        prepare_job_dir(out, t, args.engine)
    for t in targets:
        if interrupted:
            break
        print(f"fuzzing {t} for {args.time} s" + (f" with LIFELINE_REINTRODUCE={args.reintroduce}" if args.reintroduce else ""), flush=True)
        try:
            if args.engine == "afl":
                r = afl_job(lane_dir / t, t, args.time, out, args.reintroduce)
            else:
                r = libfuzzer_job(lane_dir / "targets" / t, t, args.time, out, args.reintroduce, args.jobs, args.lane)
        except KeyboardInterrupt:
            interrupted = True
            continue
        r["engine"] = args.engine
        results.append(r)
        if r["interrupted"]:
            interrupted = True
        elif r["execs"] == 0:
            idle = r
            break
    print("\ntarget                      execs     exec/s  corpus  crashes  upstream-open  artifacts")
    for r in results:
        print(f"{r['target']:<26} {r['execs']:>7} {r['exec_s']:>10} {r['corpus']:>7} {r['crashes']:>8}  "
              f"{r.get('upstream_open', 0):>13}  {r['artifacts']}")
        if "artifact_groups" in r:
            for line in artifact_lines(r):
                print(line)
        elif r.get("signature"):
            print(f"  crash: {r['signature']}")
            for a in r["new_artifacts"]:
                print(f"    {a}")
        early = r.get("stopped_early")
        if early:
            print(f"  libFuzzer stopped on a crash at {early['at_s']} s (exit status {early['exit_status']}); "
                  f"{early['went_on']} went on for the {early['for_s']} s left: {early.get('execs', 0)} more inputs")
        if r.get("stopped_at_crash"):
            st = r["stopped_at_crash"]
            print(f"  stopped at its first crash, {st['at_s']} s in (exit status {st['exit_status']}): with "
                  f"--reintroduce {st['reintroduce']} a crash is what the job looks for, not fuzzed past")
        if r.get("ended_early"):
            print(f"  ended at {r['seconds']} s of the {args.time} s asked (exit status {r.get('exit_status')}), "
                  f"not stopped by hand: it tested less than asked; see {r['log']}")
        if r.get("slow_units"):
            print(f"  slow units (over 10 s, not crashes): {len(r['slow_units'])} kept in {r['artifacts']}")
        if r.get("leak_at_exit"):
            lk = r["leak_at_exit"]
            known = ""
            if lk.get("bug"):
                known = (f", upstream-open {lk['bug']}, not counted" if lk.get("upstream_open")
                         else f", known {lk['bug']}")
            print(f"  leak at exit (LeakSanitizer over the whole run; no input carries it{known}): "
                  f"{lk['signature']}; see {lk['log']}")
        guards_line = guardsmod.describe(r.get("guards"))
        if guards_line:
            print("  " + guards_line)
    if any(r["engine"] == "libfuzzer" for r in results):
        print("corpus: inputs in libFuzzer's corpus at the end (the seeds it kept and what it added; the added "
              "ones are saved in <out>/<target>/corpus); exec/s: execs over the job's time")
    if any(r.get("upstream_open") for r in results):
        print("upstream-open: artifacts that replay as a finding in upstream code that the upstream built still has "
              "(repro/*/bug.json with an upstream status; on another ggml source also one fixed before the pinned "
              "version); not counted as crashes")
    ggml = upstream_ggml(lane_dir) if args.engine != "afl" else None
    if ggml and any(r["target"] in ggml["targets"] for r in results):
        print(describe_ggml(ggml, lane_dir))
        for r in results:
            if r["target"] in ggml["targets"]:
                r["upstream"] = {"ggml": ggml}
    (out / "summary.json").write_text(json.dumps(results, indent=2) + "\n")
    print(f"summary: {out / 'summary.json'}")
    if interrupted:
        print("interrupted: corpus and artifacts so far are kept under " + str(out))
        return 130
    if idle:
        raise UsageError(_ran_no_inputs(idle))
    short = [r["target"] for r in results if r.get("ended_early")]
    if short:
        print(f"lifeline fuzz: {', '.join(short)} ended before the {args.time} s asked (see above)")
    return 1 if short or any(r["crashes"] for r in results) else 0
