"""The lifeline command line.

  lifeline test  [--lanes asan,tsan,...]            build every lane and run its ctest; summary table
  lifeline fuzz  [TARGET...] [--time S] [--reintroduce ID] [--out DIR]
                                                    run fuzz jobs from the seed corpus; summary table
  lifeline list                                     targets, lanes, bug ids, reproducers
  lifeline classify FILE...                         crash type + state of saved reports (JSON)
  lifeline repro-check ...                          the two-way reproducer test (run by ctest)
  lifeline expect-crash --type T --frame F|--message M -- CMD
                                                    CMD must fail with that crash (lane self-tests)

Bad arguments give a one-line error and exit status 2.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from . import crash as crashmod
from . import repro

ROOT = Path(__file__).resolve().parents[3]
LANES = repro.LANES


class UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2
        raise UsageError(f"{self.prog}: {message}")


def _run(cmd, **kw) -> int:
    print("+ " + " ".join(str(c) for c in cmd), flush=True)
    return subprocess.call([str(c) for c in cmd], **kw)


def _ensure_deps() -> None:
    rc = subprocess.call([str(ROOT / "scripts" / "install-deps.sh")])
    if rc != 0:
        raise SystemExit(f"lifeline: installing dependencies failed (scripts/install-deps.sh exited {rc})")


def _configure_and_build(lane: str) -> bool:
    if _run(["cmake", "--preset", lane], cwd=ROOT, stdout=subprocess.DEVNULL) != 0:
        print(f"lifeline: configuring lane {lane} failed; rerun `cmake --preset {lane}` to see why")
        return False
    return _run(["cmake", "--build", "--preset", lane, "-j", str(os.cpu_count() or 2)], cwd=ROOT) == 0


def fuzz_targets(lane_dir: Path) -> list[str]:
    d = lane_dir / "targets"
    return sorted(p.name for p in d.iterdir() if p.is_file() and os.access(p, os.X_OK)) if d.is_dir() else []


def source_targets() -> list[str]:
    return sorted(p.stem for p in (ROOT / "targets").glob("*.cc"))


# ---- test -------------------------------------------------------------------------------------------

_CTEST_SUMMARY = re.compile(r"(\d+)% tests passed, (\d+) tests? failed out of (\d+)")


def cmd_test(args) -> int:
    lanes = args.lanes.split(",") if args.lanes else list(LANES)
    for lane in lanes:
        if lane not in LANES:
            raise UsageError(f"lifeline test: unknown lane '{lane}' (known: {', '.join(LANES)})")
    _ensure_deps()
    rows, total_pass, total_fail = [], 0, 0
    t_all = time.monotonic()
    for lane in lanes:
        t0 = time.monotonic()
        print(f"\n==== lane {lane}: build ====", flush=True)
        built = _configure_and_build(lane)
        t_build = time.monotonic() - t0
        passed = failed = 0
        if built:
            print(f"\n==== lane {lane}: ctest ====", flush=True)
            proc = subprocess.Popen(["ctest", "--preset", lane, "-j", str(max(2, os.cpu_count() or 2))],
                                    cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            summary = None
            for line in proc.stdout:
                sys.stdout.write(line)
                m = _CTEST_SUMMARY.search(line)
                if m:
                    summary = m
            rc = proc.wait()
            if summary:
                total = int(summary.group(3))
                failed = int(summary.group(2))
                passed = total - failed
            if rc != 0 and failed == 0:
                failed = 1  # ctest itself failed (no tests, configuration error)
        else:
            failed = 1
        total_pass += passed
        total_fail += failed
        rows.append((lane, "ok" if built else "FAILED", passed, failed, t_build, time.monotonic() - t0))
    print("\nlane       build   passed  failed  build s  total s")
    for lane, b, p, f, tb, tt in rows:
        print(f"{lane:<10} {b:<7} {p:>6}  {f:>6}  {tb:>7.0f}  {tt:>7.0f}")
    print(f"all lanes: {time.monotonic() - t_all:.0f} s")
    print(f"lifeline: {total_pass} passed, {total_fail} failed")
    return 0 if total_fail == 0 else 1


# ---- fuzz -------------------------------------------------------------------------------------------

_STATUS = re.compile(r"^#(\d+)\s+(\w+)\s+cov: (\d+) ft: (\d+) corp: (\d+)/\S+.*?exec/s: (\d+)")
_FINAL = re.compile(r"^stat::(number_of_executed_units|average_exec_per_sec):\s+(\d+)")


def _fuzz_one(binary: Path, target: str, seconds: int, out: Path, reintroduce: str | None) -> dict:
    work = out / target / "corpus"
    artifacts = out / target / "artifacts"
    work.mkdir(parents=True, exist_ok=True)
    artifacts.mkdir(parents=True, exist_ok=True)
    before = set(p.name for p in artifacts.iterdir())
    seeds = ROOT / "corpus" / target
    cmd = [str(binary), f"-max_total_time={seconds}", "-print_final_stats=1", "-timeout=25",
           f"-artifact_prefix={artifacts}/", str(work)]
    dict_file = ROOT / "corpus" / f"{target}.dict"
    if dict_file.is_file():
        cmd.insert(1, f"-dict={dict_file}")
    if seeds.is_dir():
        cmd.append(str(seeds))
    env = dict(os.environ)
    env.pop("LIFELINE_REINTRODUCE", None)
    if reintroduce:
        env["LIFELINE_REINTRODUCE"] = reintroduce
    log_path = out / target / "fuzz.log"
    stats = {"target": target, "execs": 0, "exec_s": 0, "cov": 0, "corpus": 0, "crashes": 0,
             "artifacts": str(artifacts), "interrupted": False, "log": str(log_path)}
    # One progress line: rewritten in place on a terminal, a new line every 10 s in a log.
    tty = sys.stdout.isatty()
    lead, tail, progress_every = ("\r", "", 1.0) if tty else ("", "\n", 10.0)
    t0 = last_progress = time.monotonic()
    with open(log_path, "w") as log:
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                errors="replace")
        try:
            for line in proc.stdout:
                log.write(line)
                m = _STATUS.match(line)
                if m:
                    stats.update(execs=int(m.group(1)), cov=int(m.group(3)), exec_s=int(m.group(6)))
                    now = time.monotonic()
                    if now - last_progress >= progress_every:
                        last_progress = now
                        sys.stdout.write(f"{lead}  {target}: {stats['execs']} execs  {stats['exec_s']} exec/s  "
                                         f"cov {stats['cov']}  corpus {m.group(5)}  {now - t0:.0f}/{seconds} s   {tail}")
                        sys.stdout.flush()
                f = _FINAL.match(line)
                if f:
                    key = "execs" if f.group(1) == "number_of_executed_units" else "exec_s"
                    stats[key] = int(f.group(2))
            proc.wait()
        except KeyboardInterrupt:
            # libFuzzer handles SIGINT itself: it stops, prints its final stats and exits. The corpus it
            # wrote and every artifact stay where they are.
            stats["interrupted"] = True
            proc.send_signal(signal.SIGINT)
            try:
                rest, _ = proc.communicate(timeout=30)
                log.write(rest or "")
            except subprocess.TimeoutExpired:
                proc.kill()
    if tty:
        sys.stdout.write("\n")
    new = sorted(p for p in artifacts.iterdir() if p.name not in before)
    stats["crashes"] = len(new)
    stats["new_artifacts"] = [str(p) for p in new]
    stats["corpus"] = sum(1 for _ in work.iterdir())
    if new:
        found = crashmod.parse(Path(log_path).read_text(errors="replace"))
        stats["signature"] = found.signature if found else "(no parsable report; see the log)"
    return stats


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt


def cmd_fuzz(args) -> int:
    if args.time <= 0:
        raise UsageError("lifeline fuzz: --time must be a positive number of seconds")
    known = source_targets()
    for t in args.targets:
        if t not in known:
            raise UsageError(f"lifeline fuzz: unknown target '{t}' (known: {', '.join(known)})")
    out = Path(args.out).resolve()
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / ".write-test"
        probe.write_text("")
        probe.unlink()
    except OSError as e:
        raise UsageError(f"lifeline fuzz: output directory {out} is not writable ({e.strerror})")
    if not args.no_build:
        _ensure_deps()
        if not _configure_and_build("fuzz"):
            return 1
    lane_dir = ROOT / "build" / "fuzz"
    built = fuzz_targets(lane_dir)
    targets = args.targets or built
    if not targets:
        raise UsageError(f"lifeline fuzz: no fuzz binaries in {lane_dir / 'targets'}; build the fuzz lane first")
    results = []
    interrupted = False
    # SIGTERM stops a job the way Ctrl-C does: the children are stopped, nothing found is lost.
    signal.signal(signal.SIGTERM, _raise_interrupt)
    for t in targets:
        if t not in built:
            raise UsageError(f"lifeline fuzz: target '{t}' is not built in {lane_dir}")
        if interrupted:
            break
        print(f"fuzzing {t} for {args.time} s" + (f" with LIFELINE_REINTRODUCE={args.reintroduce}" if args.reintroduce else ""), flush=True)
        try:
            r = _fuzz_one(lane_dir / "targets" / t, t, args.time, out, args.reintroduce)
        except KeyboardInterrupt:
            interrupted = True
            continue
        results.append(r)
        if r["interrupted"]:
            interrupted = True
    print("\ntarget                      execs     exec/s  corpus  crashes  artifacts   (corpus: files in the working corpus)")
    for r in results:
        print(f"{r['target']:<26} {r['execs']:>7} {r['exec_s']:>10} {r['corpus']:>7} {r['crashes']:>8}  {r['artifacts']}")
        if r.get("signature"):
            print(f"  crash: {r['signature']}")
            for a in r["new_artifacts"]:
                print(f"    {a}")
    (out / "summary.json").write_text(json.dumps(results, indent=2) + "\n")
    print(f"summary: {out / 'summary.json'}")
    if interrupted:
        print("interrupted: corpus and artifacts so far are kept under " + str(out))
        return 130
    return 1 if any(r["crashes"] for r in results) else 0


# ---- list / classify / repro-check ------------------------------------------------------------------

def cmd_list(args) -> int:
    print("targets:    " + ", ".join(source_targets()))
    print("lanes:      " + ", ".join(LANES))
    src = (ROOT / "harness" / "bugs.cc").read_text()
    ids = re.findall(r'"([a-z0-9]+(?:-[a-z0-9]+)+)"', src.split("kIds")[1].split("};")[0])
    print("bug ids:    " + ", ".join(ids))
    for d in sorted((ROOT / "repro").iterdir()) if (ROOT / "repro").is_dir() else []:
        if not d.is_dir():
            continue
        try:
            bug = repro.load(d)
            lanes = sorted({l for r in bug.reproducers for l in r.expect})
            print(f"reproducer: {bug.id}  target={bug.target}  inputs={len(bug.reproducers)}  lanes={','.join(lanes)}")
        except repro.BugJsonError as e:
            print(f"reproducer: {d.name}  INVALID: {e}")
    return 0


def cmd_classify(args) -> int:
    rc = 0
    for f in args.files:
        p = Path(f)
        if not p.is_file():
            raise UsageError(f"lifeline classify: '{f}' does not exist")
        c = crashmod.parse(p.read_text(errors="replace"))
        print(json.dumps({"file": f, "crash": c.to_json() if c else None}))
        rc |= 0 if c else 1
    return rc


def cmd_repro_check(args) -> int:
    try:
        bug = repro.load(Path(args.repro_dir))
    except repro.BugJsonError as e:
        print(f"FAIL {e}")
        return 1
    if args.validate_only:
        print(f"PASS {bug.path / 'bug.json'}: valid ({len(bug.reproducers)} reproducer(s))")
        return 0
    if not (args.lane and args.mode and args.binary):
        raise UsageError("lifeline repro-check: --lane, --mode and --binary are required unless --validate-only")
    return 0 if repro.check(bug, args.lane, args.mode, args.binary, args.launcher) else 1


def cmd_expect_crash(args) -> int:
    if not (args.frame or args.message):
        raise UsageError("lifeline expect-crash: give --frame or --message")
    if not args.launcher:
        raise UsageError("lifeline expect-crash: give the command after --")
    try:
        proc = subprocess.run(args.launcher, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              timeout=repro.RUN_TIMEOUT_S)
    except FileNotFoundError:
        raise UsageError(f"lifeline expect-crash: '{args.launcher[0]}' does not exist")
    out = proc.stdout.decode("utf-8", "replace")
    found = crashmod.parse(out)
    expect = {"type": args.type}
    if args.frame:
        expect["frame"] = args.frame
    if args.message:
        expect["message"] = args.message
    ok, why = crashmod.matches(found, expect)
    if ok and proc.returncode == 0:
        ok, why = False, "the process exited 0 after its report (findings must be fatal)"
    if ok:
        print(f"PASS {found.signature}")
        return 0
    print(f"FAIL expected {expect}: {why}")
    print("\n".join("    | " + line for line in out.splitlines()[-60:]))
    return 1


def main(argv: list[str]) -> int:
    launcher = []
    if "--" in argv:
        i = argv.index("--")
        argv, launcher = argv[:i], argv[i + 1:]
    p = _Parser(prog="lifeline", description="fuzzing and sanitizer regression harness")
    sub = p.add_subparsers(dest="command", parser_class=_Parser)
    t = sub.add_parser("test", help="build every lane and run its ctest")
    t.add_argument("--lanes", help="comma-separated subset of " + ",".join(LANES))
    f = sub.add_parser("fuzz", help="run fuzz jobs from the seed corpus")
    f.add_argument("targets", nargs="*")
    f.add_argument("--time", type=int, default=30, help="seconds per target (default 30)")
    f.add_argument("--reintroduce", help="bug id to switch back on (LIFELINE_REINTRODUCE)")
    f.add_argument("--out", default=str(ROOT / "fuzz-out"), help="working corpus and artifacts (default fuzz-out/)")
    f.add_argument("--no-build", action="store_true", help="use the fuzz lane as built")
    sub.add_parser("list", help="targets, lanes, bug ids, reproducers")
    c = sub.add_parser("classify", help="crash type and state of saved reports")
    c.add_argument("files", nargs="+")
    r = sub.add_parser("repro-check", help="two-way reproducer test (ctest runs this)")
    r.add_argument("--repro-dir", required=True)
    r.add_argument("--validate-only", action="store_true")
    r.add_argument("--lane", choices=LANES)
    r.add_argument("--mode", choices=("fixed", "reintroduced"))
    r.add_argument("--binary")
    e = sub.add_parser("expect-crash", help="run a command that must fail with a given crash type and frame")
    e.add_argument("--type", required=True)
    e.add_argument("--frame", help="a function that must be in the crash state")
    e.add_argument("--message", help="text the check or UBSan message must contain")
    try:
        args = p.parse_args(argv)
        args.launcher = launcher
        if args.command is None:
            raise UsageError("lifeline: a command is required (test, fuzz, list, classify, repro-check)")
        if getattr(args, "reintroduce", None):
            src = (ROOT / "harness" / "bugs.cc").read_text()
            if f'"{args.reintroduce}"' not in src:
                raise UsageError(f"lifeline fuzz: unknown bug id '{args.reintroduce}'; see `lifeline list`")
        return {"test": cmd_test, "fuzz": cmd_fuzz, "list": cmd_list, "classify": cmd_classify,
                "repro-check": cmd_repro_check, "expect-crash": cmd_expect_crash}[args.command](args)
    except UsageError as e:
        print(str(e), file=sys.stderr)
        return 2
