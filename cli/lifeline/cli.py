"""The lifeline command line.

  lifeline test  [--lanes asan,tsan,...]            build every lane and run its ctest; summary table
  lifeline fuzz  [TARGET...] [--time S] [--jobs N] [--lane fuzz] [--engine libfuzzer|afl]
                 [--reintroduce ID] [--out DIR]     run fuzz jobs from the seed corpus; summary table
  lifeline triage CRASH... [--target T] [--reintroduce ID] [--json FILE] [--allow-upstream-open]
                                                    replay x3, classify, dedup, match known bugs
  lifeline promote CRASH --id ID [--target T]       minimize and write repro/<ID>/ with its bug.json
  lifeline report --triage FILE --format json|sarif|markdown [--output FILE]
  lifeline corpus merge TARGET DIR...               merge new inputs into corpus/<TARGET>/ (-merge=1)
  lifeline list                                     targets, lanes, bug ids, reproducers
  lifeline classify FILE...                         crash type + state of saved reports (JSON)
  lifeline repro-check --repro-dir D --lane L --mode fixed|reintroduced|pinned [--variant upstream] --binary B
                                                    the reproducer test (run by ctest)
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
import tempfile
import time
from pathlib import Path

from . import crash as crashmod
from . import repro
from . import triage as triagemod

ROOT = Path(__file__).resolve().parents[2]
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


def _ensure_upstream() -> None:
    """Fetches the pinned upstream ggml (scripts/fetch-ggml.sh) for the `upstream` tests and target. Without
    it (no network, npm missing) the lanes still build and those tests report themselves skipped."""
    script = ROOT / "scripts" / "fetch-ggml.sh"
    try:
        rc = subprocess.call([str(script)])
    except OSError as e:
        rc, why = 1, f"cannot run {script}: {e.strerror}"
    else:
        why = "see above"
    if rc != 0:
        print(f"lifeline: upstream ggml could not be fetched ({why}); the upstream tests will be reported as "
              "skipped and ggml_graph_topology not built", flush=True)


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
# "2/4 Test #2: upstream.ggml-source ..............***Skipped   0.00 sec"
_CTEST_RESULT = re.compile(r"^\s*\d+/\d+ Test\s+#(\d+): (\S+) \.*\s*(\*\*\*)?(\w+)")
# In "The following tests did not run:": "	 12 - upstream.ggml-source (Skipped)"
_CTEST_NOT_RUN = re.compile(r"^\s*(\d+) - (\S+) \(([^)]*)\)\s*$")
# What a test prints when it skips itself (SKIP_RETURN_CODE); `ctest -V` prefixes it with the test number.
_SKIPPED_LINE = re.compile(r"^(?:(\d+): )?SKIPPED: (.*?)\s*$")


class CtestOutput:
    """What `lifeline test` reads from one ctest run's output, line by line: the summary line, and the tests
    that did not run because they skipped themselves. CTest counts those as passed (not failed) in its
    summary; `passed` here does not."""

    def __init__(self):
        self.summary = None
        self.skipped: list[str] = []     # names, in ctest's order
        self._names: dict[str, str] = {}  # test number -> name
        self._by_number: dict[str, str] = {}  # `ctest -V`: "<number>: SKIPPED: <reason>", before the result line
        self._by_name: dict[str, str] = {}
        self._last_skipped = None        # --output-on-failure prints a test's output after its result line
        self._not_run = False

    @property
    def reasons(self) -> dict[str, str]:
        """name -> the reason its "SKIPPED: " line gave, for the skipped tests whose output ctest printed."""
        out = {}
        for name in self.skipped:
            number = next((n for n, x in self._names.items() if x == name), None)
            reason = self._by_name.get(name) or self._by_number.get(number)
            if reason:
                out[name] = reason
        return out

    def feed(self, line: str) -> None:
        line = line.rstrip("\n")
        m = _CTEST_SUMMARY.search(line)
        if m:
            self.summary = m
        m = _CTEST_RESULT.match(line)
        if m:
            self._names[m.group(1)] = m.group(2)
            self._last_skipped = m.group(2) if m.group(4) == "Skipped" else None
            return
        m = _SKIPPED_LINE.match(line)
        if m:
            if m.group(1):
                self._by_number.setdefault(m.group(1), m.group(2))
            elif self._last_skipped:
                self._by_name.setdefault(self._last_skipped, m.group(2))
            return
        if line.startswith("The following tests did not run:"):
            self._not_run = True
            return
        if self._not_run:
            m = _CTEST_NOT_RUN.match(line)
            if m:
                self._names.setdefault(m.group(1), m.group(2))
                if m.group(3) == "Skipped" and m.group(2) not in self.skipped:
                    self.skipped.append(m.group(2))
                return
            self._not_run = False

    def counts(self) -> tuple[int, int, int]:
        """(passed, failed, skipped); (0, 0, 0) when ctest printed no summary."""
        if not self.summary:
            return 0, 0, 0
        total, failed = int(self.summary.group(3)), int(self.summary.group(2))
        skipped = len(self.skipped)
        return max(0, total - failed - skipped), failed, skipped


def skip_reasons_from_log(log: Path, names: list[str]) -> dict[str, str]:
    """name -> reason from the "SKIPPED: " lines in ctest's Testing/Temporary/LastTest.log, which keeps every
    test's output (ctest --output-on-failure prints none for a skipped test)."""
    reasons, current = {}, None
    try:
        text = log.read_text(errors="replace")
    except OSError:
        return reasons
    for line in text.splitlines():
        m = re.match(r"^\d+/\d+ Test: (.+?)\s*$", line)
        if m:
            current = m.group(1)
            continue
        if current in names and current not in reasons and line.startswith("SKIPPED: "):
            reasons[current] = line[len("SKIPPED: "):].strip()
    return reasons


def cmd_test(args) -> int:
    lanes = args.lanes.split(",") if args.lanes else list(LANES)
    for lane in lanes:
        if lane not in LANES:
            raise UsageError(f"lifeline test: unknown lane '{lane}' (known: {', '.join(LANES)})")
    _ensure_deps()
    _ensure_upstream()
    rows, total_pass, total_fail, total_skip = [], 0, 0, 0
    skipped_by_lane = []
    t_all = time.monotonic()
    for lane in lanes:
        t0 = time.monotonic()
        print(f"\n==== lane {lane}: build ====", flush=True)
        built = _configure_and_build(lane)
        t_build = time.monotonic() - t0
        passed = failed = skipped = 0
        if built:
            print(f"\n==== lane {lane}: ctest ====", flush=True)
            proc = subprocess.Popen(["ctest", "--preset", lane, "-j", str(max(2, os.cpu_count() or 2))],
                                    cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            ctest = CtestOutput()
            for line in proc.stdout:
                sys.stdout.write(line)
                ctest.feed(line)
            rc = proc.wait()
            passed, failed, skipped = ctest.counts()
            if rc != 0 and failed == 0:
                failed = 1  # ctest itself failed (no tests, configuration error)
            if ctest.skipped:
                missing = [n for n in ctest.skipped if n not in ctest.reasons]
                log = ROOT / "build" / lane / "Testing" / "Temporary" / "LastTest.log"
                reasons = dict(skip_reasons_from_log(log, missing) if missing else {}, **ctest.reasons)
                skipped_by_lane.append((lane, [(n, reasons.get(n)) for n in ctest.skipped]))
        else:
            failed = 1
        total_pass += passed
        total_fail += failed
        total_skip += skipped
        rows.append((lane, "ok" if built else "FAILED", passed, failed, skipped, t_build, time.monotonic() - t0))
    print("\nlane       build   passed  failed  skipped  build s  total s")
    for lane, b, p, f, sk, tb, tt in rows:
        print(f"{lane:<10} {b:<7} {p:>6}  {f:>6}  {sk:>7}  {tb:>7.0f}  {tt:>7.0f}")
    for lane, tests in skipped_by_lane:
        print(f"skipped in lane {lane}:")
        for name, reason in tests:
            print(f"  {name}: {reason or '(no reason in the ctest output; see ctest -V)'}")
    print(f"all lanes: {time.monotonic() - t_all:.0f} s")
    print(f"lifeline: {total_pass} passed, {total_fail} failed, {total_skip} skipped")
    return 0 if total_fail == 0 else 1


# ---- fuzz -------------------------------------------------------------------------------------------

_STATUS = re.compile(r"^#(\d+)\s+(\w+)\s+cov: (\d+) ft: (\d+) corp: (\d+)/\S+.*?exec/s: (\d+)")
# Fork mode: "#1234: cov: 56 ft: 78 corp: 9 exec/s 100 oom/timeout/crash: 0/0/1 time: 12s job: 3 dft_time: 0"
_FORK_STATUS = re.compile(r"^#(\d+): cov: (\d+) ft: (\d+) corp: (\d+) exec/s:? (\d+)")
_FINAL = re.compile(r"^stat::(number_of_executed_units|average_exec_per_sec):\s+(\d+)")


def _fuzz_one(binary: Path, target: str, seconds: int, out: Path, reintroduce: str | None, jobs: int = 1) -> dict:
    work = out / target / "corpus"
    artifacts = out / target / "artifacts"
    work.mkdir(parents=True, exist_ok=True)
    artifacts.mkdir(parents=True, exist_ok=True)
    # What triage needs to replay an artifact the way it was found.
    (out / target / "job.json").write_text(json.dumps({"target": target, "reintroduce": reintroduce,
                                                       "binary": str(binary)}) + "\n")
    before = set(p.name for p in artifacts.iterdir())
    seeds = ROOT / "corpus" / target
    cmd = [str(binary), f"-max_total_time={seconds}", "-print_final_stats=1", "-timeout=25",
           f"-artifact_prefix={artifacts}/", str(work)]
    dict_file = ROOT / "corpus" / f"{target}.dict"
    if dict_file.is_file():
        cmd.insert(1, f"-dict={dict_file}")
    if seeds.is_dir():
        cmd.append(str(seeds))
    # A target with upstream-open findings hits them within seconds; without a switch there is no fixed code to
    # fall back on, so its job runs in fork mode too and goes on past them (each is counted apart below).
    known_upstream = not reintroduce and any(
        status == "upstream-open" for _, _, status in triagemod.known_signatures(ROOT, target))
    if jobs > 1 or known_upstream:
        # Fork mode: `jobs` child processes share the corpus; a crash is kept and the job goes on.
        cmd[1:1] = [f"-fork={jobs}", "-ignore_crashes=1"]
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
        try:
            proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                    errors="replace")
        except OSError as e:
            raise UsageError(f"lifeline fuzz: cannot run {binary} ({e.strerror}); is a build replacing it?")
        try:
            for line in proc.stdout:
                log.write(line)
                m, fm = _STATUS.match(line), _FORK_STATUS.match(line)
                if m or fm:
                    if m:
                        execs, cov, corp, rate = m.group(1), m.group(3), m.group(5), m.group(6)
                    else:
                        execs, cov, corp, rate = fm.group(1), fm.group(2), fm.group(4), fm.group(5)
                    stats.update(execs=int(execs), cov=int(cov), exec_s=int(rate))
                    now = time.monotonic()
                    if now - last_progress >= progress_every:
                        last_progress = now
                        found_now = sum(1 for p in artifacts.iterdir() if p.name not in before)
                        sys.stdout.write(f"{lead}  {target}: {execs} execs  {rate} exec/s  cov {cov}  corpus {corp}  "
                                         f"crashes {found_now}  {now - t0:.0f}/{seconds} s   {tail}")
                        sys.stdout.flush()
                if "libFuzzer: run interrupted" in line:
                    stats["interrupted"] = True  # the child got the signal even if we did not
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
    stats["new_artifacts"] = [str(p) for p in new]
    stats["corpus"] = sum(1 for _ in work.iterdir())
    if stats["interrupted"]:
        # Stopped by hand: no replays. Every artifact counts as a crash, named by the log's first report.
        found = crashmod.parse(Path(log_path).read_text(errors="replace"))
        sig = found.signature if found else "(no parsable report; see the log)"
        crashes, upstream_open = [{"artifact": str(p), "signature": sig} for p in new], []
    else:
        crashes, upstream_open, interrupted = _replay_artifacts(binary, target, new, reintroduce)
        stats["interrupted"] = interrupted
    stats["crashes"] = len(crashes)
    stats["crash_artifacts"] = crashes
    stats["upstream_open"] = len(upstream_open)
    stats["upstream_open_bugs"] = sorted({u["bug"] for u in upstream_open})
    stats["upstream_open_artifacts"] = upstream_open
    if crashes:
        stats["signature"] = crashes[0]["signature"]
    return stats


def _replay_artifacts(binary: Path, target: str, artifacts: list, reintroduce: str | None) -> tuple[list, list, bool]:
    """Replays each new artifact once on the job's binary, the way it was found, and sorts it by the known
    signatures of `target`: (crashes, upstream_open, interrupted). An artifact that gives the signature of an
    upstream-open bug (upstream has not fixed it) is not a crash of this job; anything else is, including an
    artifact that does not crash again. Entries: {"artifact", "signature"} (+ "bug" for upstream-open)."""
    known = triagemod.known_signatures(ROOT, target) if artifacts else []
    crashes, upstream_open = [], []
    for i, a in enumerate(artifacts):
        try:
            rc, out = triagemod.run_once(binary, a, reintroduce, extra=("-timeout=25",))
        except KeyboardInterrupt:
            crashes += [{"artifact": str(p), "signature": "(not replayed: interrupted)"} for p in artifacts[i:]]
            return crashes, upstream_open, True
        c = crashmod.parse(out) if rc != 0 else None
        if c is None:
            sig = ("(did not reproduce on replay)" if rc == 0 else
                   f"(exit {rc} on replay without a parsable report; see the log)")
            crashes.append({"artifact": str(a), "signature": sig})
            continue
        bug, status = triagemod.match_known(c, known)
        if status == "upstream-open":
            upstream_open.append({"artifact": str(a), "signature": c.signature, "bug": bug})
        else:
            crashes.append({"artifact": str(a), "signature": c.signature})
    return crashes, upstream_open, False


def _by_signature(entries: list, bug_key: str | None = None) -> list[tuple[str, list]]:
    """[(signature, [artifact...])] in first-seen order; with bug_key, the signature is led by "<bug>: "."""
    groups: dict[str, list] = {}
    for e in entries:
        key = (f"{e[bug_key]}: " if bug_key else "") + e["signature"]
        groups.setdefault(key, []).append(e["artifact"])
    return list(groups.items())


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt


def _afl_stats(path: Path) -> dict:
    stats = {}
    try:
        for line in path.read_text().splitlines():
            k, _, v = line.partition(":")
            stats[k.strip()] = v.strip()
    except OSError:
        pass
    return stats


def _afl_one(binary: Path, target: str, seconds: int, out: Path, reintroduce: str | None) -> dict:
    """One AFL++ job (afl-fuzz -V seconds) on a target built by scripts/build-afl.sh."""
    work = out / target / "afl"
    work.mkdir(parents=True, exist_ok=True)
    (out / target / "job.json").write_text(json.dumps({"target": target, "reintroduce": reintroduce,
                                                       "binary": str(binary), "engine": "afl"}) + "\n")
    cmd = ["afl-fuzz", "-i", str(ROOT / "corpus" / target), "-o", str(work), "-V", str(seconds)]
    dict_file = ROOT / "corpus" / f"{target}.dict"
    if dict_file.is_file():
        cmd += ["-x", str(dict_file)]
    cmd += ["--", str(binary)]
    env = dict(os.environ, AFL_NO_UI="1", AFL_SKIP_CPUFREQ="1", AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES="1")
    env.pop("LIFELINE_REINTRODUCE", None)
    if reintroduce:
        env["LIFELINE_REINTRODUCE"] = reintroduce
    log_path = out / target / "afl.log"
    stats_file = work / "default" / "fuzzer_stats"
    result = {"target": target, "execs": 0, "exec_s": 0, "cov": 0, "corpus": 0, "crashes": 0,
              "artifacts": str(work / "default" / "crashes"), "interrupted": False, "log": str(log_path)}
    t0 = time.monotonic()
    with open(log_path, "w") as log:
        try:
            proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
        except OSError as e:
            raise UsageError(f"lifeline fuzz: cannot run afl-fuzz ({e.strerror}); install afl++ (scripts/install-deps.sh)")
        try:
            while proc.poll() is None:
                time.sleep(1 if sys.stdout.isatty() else 10)
                st = _afl_stats(stats_file)
                if st:
                    lead, end = ("\r", "") if sys.stdout.isatty() else ("", "\n")
                    sys.stdout.write(f"{lead}  {target}: {st.get('execs_done', 0)} execs  "
                                     f"{st.get('execs_per_sec', 0)} exec/s  corpus {st.get('corpus_count', 0)}  "
                                     f"crashes {st.get('saved_crashes', 0)}  {time.monotonic() - t0:.0f}/{seconds} s{end}")
                    sys.stdout.flush()
        except KeyboardInterrupt:
            result["interrupted"] = True
            proc.send_signal(signal.SIGINT)  # afl-fuzz writes its state and exits
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
    if sys.stdout.isatty():
        sys.stdout.write("\n")
    st = _afl_stats(stats_file)
    crashes_dir = work / "default" / "crashes"
    crashes = sorted(p for p in crashes_dir.iterdir() if p.name.startswith("id:")) if crashes_dir.is_dir() else []
    result.update(execs=int(st.get("execs_done", 0) or 0), exec_s=int(float(st.get("execs_per_sec", 0) or 0)),
                  cov=st.get("bitmap_cvg", ""), corpus=int(st.get("corpus_count", 0) or 0), crashes=len(crashes),
                  new_artifacts=[str(p) for p in crashes])
    if proc.returncode not in (0, None) and not st:
        result["signature"] = f"afl-fuzz exited {proc.returncode} before fuzzing; see {log_path}"
    return result


def cmd_fuzz(args) -> int:
    if args.time <= 0:
        raise UsageError("lifeline fuzz: --time must be a positive number of seconds")
    if args.jobs < 1:
        raise UsageError("lifeline fuzz: --jobs must be at least 1")
    if args.lane != "fuzz":
        raise UsageError(f"lifeline fuzz: lane '{args.lane}' links no fuzzing engine; only the fuzz lane "
                         "(libFuzzer + ASan+UBSan) does; the others replay inputs")
    if args.engine == "afl" and args.jobs > 1:
        raise UsageError("lifeline fuzz: --jobs applies to libFuzzer; run several AFL++ instances by hand")
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
        if args.engine == "afl":
            if _run([str(ROOT / "scripts" / "build-afl.sh")], cwd=ROOT) != 0:
                return 1
        else:
            _ensure_upstream()
            if not _configure_and_build("fuzz"):
                return 1
    if args.engine == "afl":
        lane_dir = ROOT / "build" / "afl"
        built = sorted(p.name for p in lane_dir.iterdir() if p.is_file() and os.access(p, os.X_OK)
                       and (ROOT / "targets" / f"{p.name}.cc").is_file()) if lane_dir.is_dir() else []
    else:
        lane_dir = ROOT / "build" / "fuzz"
        built = fuzz_targets(lane_dir)
    targets = args.targets or built
    if not targets:
        raise UsageError(f"lifeline fuzz: no fuzz binaries in {lane_dir}; build them first (drop --no-build)")
    results = []
    interrupted = False
    # SIGINT and SIGTERM stop a job: the children are stopped, nothing found is lost. SIGINT is handled
    # explicitly because a shell starts background jobs with it ignored, and libFuzzer would still die of
    # it (it installs its own handler) while the job went on to the next target.
    signal.signal(signal.SIGTERM, _raise_interrupt)
    signal.signal(signal.SIGINT, _raise_interrupt)
    for t in targets:
        if t not in built:
            raise UsageError(f"lifeline fuzz: target '{t}' is not built in {lane_dir}")
        if interrupted:
            break
        print(f"fuzzing {t} for {args.time} s" + (f" with LIFELINE_REINTRODUCE={args.reintroduce}" if args.reintroduce else ""), flush=True)
        try:
            if args.engine == "afl":
                r = _afl_one(lane_dir / t, t, args.time, out, args.reintroduce)
            else:
                r = _fuzz_one(lane_dir / "targets" / t, t, args.time, out, args.reintroduce, args.jobs)
        except KeyboardInterrupt:
            interrupted = True
            continue
        results.append(r)
        if r["interrupted"]:
            interrupted = True
    print("\ntarget                      execs     exec/s  corpus  crashes  upstream-open  artifacts   "
          "(corpus: files in the working corpus)")
    for r in results:
        print(f"{r['target']:<26} {r['execs']:>7} {r['exec_s']:>10} {r['corpus']:>7} {r['crashes']:>8}  "
              f"{r.get('upstream_open', 0):>13}  {r['artifacts']}")
        if "crash_artifacts" in r:
            for sig, arts in _by_signature(r["crash_artifacts"]):
                print(f"  crash: {sig}")
                for a in arts:
                    print(f"    {a}")
            for sig, arts in _by_signature(r["upstream_open_artifacts"], "bug"):
                print(f"  upstream-open: {sig}")
                for a in arts:
                    print(f"    {a}")
        elif r.get("signature"):
            print(f"  crash: {r['signature']}")
            for a in r["new_artifacts"]:
                print(f"    {a}")
    if any(r.get("upstream_open") for r in results):
        print("upstream-open: artifacts that replay as a bug upstream has not fixed (repro/*/bug.json with "
              "status upstream-open); not counted as crashes")
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
    print("bug ids:    " + ", ".join(known_bug_ids()))
    for d in sorted((ROOT / "repro").iterdir()) if (ROOT / "repro").is_dir() else []:
        if not d.is_dir():
            continue
        try:
            bug = repro.load(d)
            lanes = sorted({l for r in bug.reproducers for l in r.expect})
            print(f"reproducer: {bug.id}  target={bug.target}  inputs={len(bug.reproducers)}  lanes={','.join(lanes)}  "
                  f"status={bug.status}" + (f"  upstream variant: {bug.variant.target}" if bug.variant else ""))
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
        extra = f"; status {bug.status}" if bug.status != "fixed" else ""
        if bug.variant:
            extra += f"; upstream variant {bug.variant.target}: {len(bug.variant.reproducers)} reproducer(s)"
        print(f"PASS {bug.path / 'bug.json'}: valid ({len(bug.reproducers)} reproducer(s){extra})")
        return 0
    if not (args.lane and args.mode and args.binary):
        raise UsageError("lifeline repro-check: --lane, --mode and --binary are required unless --validate-only")
    return 0 if repro.check(bug, args.lane, args.mode, args.binary, args.launcher, variant=args.variant) else 1


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


# ---- triage / promote / report / corpus ----------------------------------------------------------

_BUG_ID = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)+")


def known_bug_ids() -> list[str]:
    """The ids of core/bug_list.def, the one list of bug switches (lines `LIFELINE_BUG(kName, "id")`)."""
    src = (ROOT / "core" / "bug_list.def").read_text()
    return re.findall(r'^LIFELINE_BUG\(\w+, "([a-z0-9]+(?:-[a-z0-9]+)+)"\)', src, re.M)


def _crash_file(cmd: str, f: str) -> Path:
    p = Path(f)
    if not p.is_file():
        raise UsageError(f"lifeline {cmd}: crash file '{f}' does not exist")
    return p


def _target_binary(cmd: str, crash_file: Path, target: str | None, lane: str) -> tuple[str, Path]:
    t = target or triagemod.target_of(crash_file)
    if not t:
        raise UsageError(f"lifeline {cmd}: cannot tell the target of '{crash_file}' (not under "
                         "fuzz-out/<target>/artifacts/); give --target")
    if t not in source_targets():
        raise UsageError(f"lifeline {cmd}: unknown target '{t}' (known: {', '.join(source_targets())})")
    binary = ROOT / "build" / lane / "targets" / t
    if not binary.is_file():
        raise UsageError(f"lifeline {cmd}: {binary} is not built; run `cmake --preset {lane} && "
                         f"cmake --build --preset {lane}`")
    return t, binary


def _reintroduce_for(cmd: str, crash_file: Path, given: str | None) -> str | None:
    r = given if given is not None else triagemod.job_reintroduce(crash_file)
    if r and r not in known_bug_ids():
        raise UsageError(f"lifeline {cmd}: unknown bug id '{r}'; see `lifeline list`")
    return r or None


def cmd_triage(args) -> int:
    files = [_crash_file("triage", f) for f in args.crashes]
    results = []
    for f in files:
        target, binary = _target_binary("triage", f, args.target, args.lane)
        reintroduce = _reintroduce_for("triage", f, args.reintroduce)
        print(f"triage: replaying {f} on {target} x{triagemod.REPLAYS}"
              + (f" (LIFELINE_REINTRODUCE={reintroduce})" if reintroduce else ""), flush=True)
        results.append(triagemod.triage_one(ROOT, binary, f, target, reintroduce))
    triagemod.dedup(results)
    statuses = [r.label + (" (dup)" if r.duplicate_of else "") for r in results]
    width = max([len("status")] + [len(x) for x in statuses])
    print(f"\n{'status':<{width}}  flaky  {'input':<41} signature")
    for r, status in zip(results, statuses):
        print(f"{status:<{width}}  {'yes' if r.flaky else 'no':<6} {Path(r.input).name[:40]:<41} "
              f"{r.signature or '(no crash in 3 replays)'}")
    distinct = {r.signature for r in results if r.signature}
    upstream_open = sum(1 for r in results if r.status == "upstream-open" and not r.duplicate_of)
    print(f"{len(results)} input(s), {len(distinct)} distinct crash(es), "
          f"{sum(1 for r in results if r.status == 'new' and not r.duplicate_of)} new"
          + (f", {upstream_open} upstream-open" if upstream_open else ""))
    if args.json:
        out = Path(args.json)
        try:
            out.write_text(json.dumps([r.to_json() for r in results], indent=2) + "\n")
        except OSError as e:
            raise UsageError(f"lifeline triage: cannot write {out} ({e.strerror})")
        print(f"triage results: {out}")
    if args.allow_upstream_open:
        # A run may stop only on a known upstream-open finding: every input must reproduce one, every time.
        bad = []
        for r in results:
            if r.signature is None:
                bad.append((r, f"no crash in {triagemod.REPLAYS} replays"))
            elif r.flaky:
                bad.append((r, f"flaky: replays gave {r.replays}"))
            elif r.status != "upstream-open":
                bad.append((r, f"{r.label}: {r.signature}"))
        if bad:
            print(f"lifeline triage: --allow-upstream-open: {len(bad)} of {len(results)} input(s) are not a "
                  "known upstream-open bug:")
            for r, why in bad:
                print(f"  {r.input}: {why}")
            return 1
        print("lifeline triage: every input reproduces an upstream-open bug: "
              + ", ".join(sorted({r.known for r in results})))
    return 0


def cmd_promote(args) -> int:
    f = _crash_file("promote", args.crash)
    if not _BUG_ID.fullmatch(args.id):
        raise UsageError(f"lifeline promote: '{args.id}' is not a bug id (kebab-case, led by the upstream component)")
    if args.id not in known_bug_ids():
        raise UsageError(f"lifeline promote: no switch named '{args.id}' in core/bug_list.def; a reproducer must run "
                         "clean with its switch off, so add the switch (beside the fix) first")
    dest = ROOT / "repro" / args.id
    if dest.exists():
        raise UsageError(f"lifeline promote: {dest} already exists; pick another id or extend its bug.json by hand")
    for lane in args.lanes.split(","):
        if lane not in LANES:
            raise UsageError(f"lifeline promote: unknown lane '{lane}' (known: {', '.join(LANES)})")
    try:
        (ROOT / "repro").mkdir(exist_ok=True)
        probe = ROOT / "repro" / ".write-test"
        probe.write_text("")
        probe.unlink()
    except OSError as e:
        raise UsageError(f"lifeline promote: {ROOT / 'repro'} is not writable ({e.strerror})")
    target, binary = _target_binary("promote", f, args.target, "fuzz")
    print(f"promote: replaying {f} on {target} with LIFELINE_REINTRODUCE={args.id}", flush=True)
    r = triagemod.triage_one(ROOT, binary, f, target, args.id)
    if r.signature is None:
        raise UsageError(f"lifeline promote: '{f}' does not reproduce with LIFELINE_REINTRODUCE={args.id} "
                         f"(3 clean replays on {target})")
    if r.flaky:
        raise UsageError(f"lifeline promote: '{f}' is flaky ({r.replays}); a reproducer must fail every time")
    rc, out = triagemod.run_once(binary, f, None)
    if rc != 0:
        found = crashmod.parse(out)
        raise UsageError(f"lifeline promote: '{f}' also crashes with the switch off "
                         f"({found.signature if found else f'exit {rc}'}); it is not the bug behind '{args.id}'")
    print(f"promote: {r.signature}; minimizing (libFuzzer -minimize_crash=1, {args.runs} runs)", flush=True)
    data = f.read_bytes()
    with tempfile.TemporaryDirectory() as tmp:
        small = triagemod.minimize(binary, f, args.id, Path(tmp), args.runs)
        if small.is_file() and len(small.read_bytes()) < len(data):
            m = triagemod.triage_one(ROOT, binary, small, target, args.id)
            if m.signature == r.signature and not m.flaky:
                print(f"promote: minimized {len(data)} -> {len(small.read_bytes())} bytes, same crash state")
                data = small.read_bytes()
            else:
                print(f"promote: the minimized input crashes differently ({m.signature}); keeping the original")
        else:
            print("promote: no smaller input found; keeping the original")
    d = triagemod.write_repro(ROOT, args.id, target, data, r.crash, args.lanes.split(","), args.title, str(f))
    print(f"promote: wrote {d}/bug.json and {d}/minimized-crash")
    print(f"promote: the next build registers repro.{args.id}.<lane>.fixed and .reintroduced for {args.lanes}")
    return 0


def cmd_report(args) -> int:
    src = Path(args.triage)
    if not src.is_file():
        raise UsageError(f"lifeline report: triage results '{src}' do not exist (run `lifeline triage ... --json FILE`)")
    try:
        rows = json.loads(src.read_text())
        results = [triagemod.Result(**{k: v for k, v in row.items() if k != "status"}) for row in rows]
    except (ValueError, TypeError) as e:
        raise UsageError(f"lifeline report: '{src}' is not triage output ({e})")
    if args.format == "json":
        text = json.dumps([r.to_json() for r in results], indent=2) + "\n"
    elif args.format == "sarif":
        text = json.dumps(triagemod.sarif(results, ROOT), indent=2) + "\n"
    else:
        text = triagemod.markdown(results)
    if args.output:
        try:
            Path(args.output).write_text(text)
        except OSError as e:
            raise UsageError(f"lifeline report: cannot write {args.output} ({e.strerror})")
        print(f"report: {args.output}")
    else:
        sys.stdout.write(text)
    return 0


def cmd_corpus(args) -> int:
    if args.action != "merge":
        raise UsageError(f"lifeline corpus: unknown action '{args.action}' (known: merge)")
    if args.target not in source_targets():
        raise UsageError(f"lifeline corpus: unknown target '{args.target}' (known: {', '.join(source_targets())})")
    for d in args.dirs:
        if not Path(d).is_dir():
            raise UsageError(f"lifeline corpus: '{d}' is not a directory")
    binary = ROOT / "build" / "fuzz" / "targets" / args.target
    if not binary.is_file():
        raise UsageError(f"lifeline corpus: {binary} is not built; run `cmake --build --preset fuzz`")
    seeds = ROOT / "corpus" / args.target
    seeds.mkdir(exist_ok=True)
    before = {p.name for p in seeds.iterdir()}
    # -merge=1 copies into the first directory only inputs that add coverage, named by the SHA-1 of their
    # content; an interrupted merge can be resumed with the same command.
    rc = _run([binary, "-merge=1", seeds, *args.dirs])
    added = sorted(p.name for p in seeds.iterdir() if p.name not in before)
    print(f"corpus merge: {len(added)} new input(s) in {seeds}")
    return 0 if rc == 0 else 1


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
    f.add_argument("--jobs", type=int, default=1, help="libFuzzer fork-mode workers per target (default 1)")
    f.add_argument("--lane", default="fuzz", help="the lane whose binaries fuzz (only fuzz links libFuzzer)")
    f.add_argument("--engine", choices=("libfuzzer", "afl"), default="libfuzzer")
    tr = sub.add_parser("triage", help="replay crashes, classify, dedup, match known bugs")
    tr.add_argument("crashes", nargs="+")
    tr.add_argument("--target", help="the target (default: from fuzz-out/<target>/artifacts/)")
    tr.add_argument("--reintroduce", help="bug id the crash was found with (default: from the fuzz job)")
    tr.add_argument("--lane", default="fuzz", choices=LANES, help="whose binary replays (default fuzz)")
    tr.add_argument("--json", help="write the results here (input to `lifeline report`)")
    tr.add_argument("--allow-upstream-open", action="store_true",
                    help="exit 0 only if every input reproduces a known upstream-open bug, else 1")
    pr = sub.add_parser("promote", help="minimize a crash and write repro/<id>/")
    pr.add_argument("crash")
    pr.add_argument("--id", required=True, help="the bug id (a switch in core/bug_list.def)")
    pr.add_argument("--target")
    pr.add_argument("--lanes", default="asan", help="lanes the reproducer runs in (default asan)")
    pr.add_argument("--title")
    pr.add_argument("--runs", type=int, default=2000, help="minimization runs (default 2000)")
    rp = sub.add_parser("report", help="triage results as JSON, SARIF 2.1.0 or Markdown")
    rp.add_argument("--triage", required=True)
    rp.add_argument("--format", choices=("json", "sarif", "markdown"), default="markdown")
    rp.add_argument("--output")
    co = sub.add_parser("corpus", help="corpus maintenance: merge")
    co.add_argument("action")
    co.add_argument("target")
    co.add_argument("dirs", nargs="+")
    sub.add_parser("list", help="targets, lanes, bug ids, reproducers")
    c = sub.add_parser("classify", help="crash type and state of saved reports")
    c.add_argument("files", nargs="+")
    r = sub.add_parser("repro-check", help="two-way reproducer test (ctest runs this)")
    r.add_argument("--repro-dir", required=True)
    r.add_argument("--validate-only", action="store_true")
    r.add_argument("--lane", choices=LANES)
    r.add_argument("--mode", choices=repro.MODES,
                   help="fixed, reintroduced, or pinned (status upstream-open: the pinned upstream still fails)")
    r.add_argument("--variant", choices=repro.VARIANTS,
                   help="check the bug.json's upstream_variant: --binary is the target built against upstream "
                        "(fixed: unpatched, reintroduced: with its patch)")
    r.add_argument("--binary")
    e = sub.add_parser("expect-crash", help="run a command that must fail with a given crash type and frame")
    e.add_argument("--type", required=True)
    e.add_argument("--frame", help="a function that must be in the crash state")
    e.add_argument("--message", help="text the check or UBSan message must contain")
    try:
        args = p.parse_args(argv)
        args.launcher = launcher
        if args.command is None:
            raise UsageError("lifeline: a command is required (test, fuzz, triage, promote, report, corpus, list, "
                             "classify, repro-check)")
        if getattr(args, "reintroduce", None) and args.reintroduce not in known_bug_ids():
            raise UsageError(f"lifeline {args.command}: unknown bug id '{args.reintroduce}'; see `lifeline list`")
        return {"test": cmd_test, "fuzz": cmd_fuzz, "list": cmd_list, "classify": cmd_classify,
                "repro-check": cmd_repro_check, "expect-crash": cmd_expect_crash, "triage": cmd_triage,
                "promote": cmd_promote, "report": cmd_report, "corpus": cmd_corpus}[args.command](args)
    except UsageError as e:
        print(str(e), file=sys.stderr)
        return 2
