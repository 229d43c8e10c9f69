"""`lifeline test`: build every lane and run its ctest, with a per-lane table; and what it reads from ctest's
output (the summary line, the tests that skipped themselves and why)."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from .build import (CCACHE_DIR, ccache_stats, ccache_zero_stats, configure_and_build, describe_ggml, ensure_deps,
                    ensure_upstream, resolve_ggml_source, upstream_ggml)
from .paths import LANES, ROOT
from .usage import UsageError

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


# The order `lifeline test` runs lanes in: fuzz right after asan, whose objects it takes from the compiler cache,
# and a lane whose ctest keeps both processors busy last (the last ctest has no build beside it).
RUN_ORDER = ("asan", "fuzz", "tsan", "lsan", "valgrind")
# Lanes whose build shares nothing with the others' but the compiler cache (no upstream ggml, whisper.cpp or
# ggml-vulkan under build/upstream/, no build/tools/): their build starts before the fetch, at nice 19, and takes
# what the fetch and the first lane's build leave idle (its configure, its links, its last long compiles; about a
# twentieth of the two processors over a fresh clone's asan build, process accounting 2026-11-28).
INDEPENDENT_BUILDS = ("lsan",)
# The lane whose objects a lane's build takes from the compiler cache (the same compiler and flags): it waits for
# that build too (fuzz's is the first lane's, already done when the others start).
CACHE_FROM = {"fuzz": "asan", "valgrind": "lsan"}


class LaneBuild:
    """One lane's configure and build, run beside the lanes' ctests: at the lowest CPU priority (nice 19, so the
    tests keep the processors they ask for; the build takes what they leave idle), its output held until the lane's
    turn and then printed in order. The builds that share build/upstream/ never overlap each other: each starts when
    the builds `after` it have finished, so they run ahead of the ctests one after another; an INDEPENDENT_BUILDS lane
    has no `after` and starts at once."""

    def __init__(self, lane: str, ggml_source: Path | None, after: tuple["LaneBuild", ...] = ()):
        self.lane, self.ggml_source, self.after = lane, ggml_source, after
        self.built, self.cached, self.seconds = False, None, 0.0
        self._lines: list[str] = []
        self._lock = threading.Lock()
        self._proc: subprocess.Popen | None = None
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name=f"build-{lane}", daemon=True)

    def start(self) -> "LaneBuild":
        self._thread.start()
        return self

    def running(self) -> bool:
        return self._thread.is_alive()

    def _emit(self, line: str) -> None:
        with self._lock:
            self._lines.append(line)

    def _started(self, proc: subprocess.Popen) -> None:
        self._proc = proc
        if self._stopping:  # stop() came between the configure and the build
            self._kill(proc)

    @staticmethod
    def _kill(proc: subprocess.Popen) -> None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except OSError:
            pass

    def _run(self) -> None:
        for before in self.after:
            before._thread.join()
        if self._stopping:
            return
        t0 = time.monotonic()
        ccache_zero_stats(self.lane)
        try:
            self.built = configure_and_build(self.lane, ggml_source=self.ggml_source, emit=self._emit, nice=True,
                                             started=self._started)
        except OSError as e:
            self._emit(f"lifeline: building lane {self.lane} failed: {e}\n")
        self.cached = ccache_stats(self.lane)
        self.seconds = time.monotonic() - t0

    def follow(self) -> None:
        """Prints what the build printed so far, then the rest as it comes, until it has finished."""
        shown = 0
        while True:
            done = not self._thread.is_alive()
            with self._lock:
                new = self._lines[shown:]
            shown += len(new)
            if new:
                sys.stdout.write("".join(new))
                sys.stdout.flush()
            if done:
                return
            time.sleep(0.2)

    def stop(self) -> None:
        """Ends the build if it is running or still to start (an interrupted `lifeline test`): its whole process
        group."""
        self._stopping = True
        proc = self._proc
        if self._thread.is_alive() and proc is not None and proc.poll() is None:
            self._kill(proc)
        self._thread.join(timeout=30)


def _foreground_build(lane: str, ggml_source: Path | None) -> tuple[bool, tuple | None, float]:
    t0 = time.monotonic()
    ccache_zero_stats(lane)
    built = configure_and_build(lane, ggml_source=ggml_source)
    return built, ccache_stats(lane), time.monotonic() - t0


def _run_ctest(lane: str, skipped_by_lane: list) -> tuple[int, int, int]:
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
    return passed, failed, skipped


def cmd_test(args) -> int:
    lanes = args.lanes.split(",") if args.lanes else list(LANES)
    for lane in lanes:
        if lane not in LANES:
            raise UsageError(f"lifeline test: unknown lane '{lane}' (known: {', '.join(LANES)})")
    lanes = sorted(dict.fromkeys(lanes), key=RUN_ORDER.index)
    ggml_source = resolve_ggml_source(args.ggml_source) if args.ggml_source else None
    ensure_deps()
    rows, total_pass, total_fail, total_skip = [], 0, 0, 0
    ggml_lines = {}  # the line naming each lane's upstream ggml -> the lanes built from it
    skipped_by_lane = []
    t_all = time.monotonic()
    builds: dict[str, LaneBuild] = {}  # the lanes after the first: built one after another beside the ctests
    try:
        # An independent lane's build needs no upstream source: it starts before the fetch.
        for later in lanes[1:]:
            if later in INDEPENDENT_BUILDS:
                builds[later] = LaneBuild(later, ggml_source).start()
        ensure_upstream()
        for i, lane in enumerate(lanes):
            print(f"\n==== lane {lane}: build ====", flush=True)
            if i == 0:
                built, cached, t_build = _foreground_build(lane, ggml_source)
                previous = ()
                for later in lanes[1:]:
                    if later not in builds:
                        source = builds.get(CACHE_FROM.get(later, ""))
                        after = previous + ((source,) if source is not None and source not in previous else ())
                        builds[later] = LaneBuild(later, ggml_source, after=after).start()
                        previous = (builds[later],)
            else:
                builds[lane].follow()
                built, cached, t_build = builds[lane].built, builds[lane].cached, builds[lane].seconds
            if cached and sum(cached):
                print(f"lane {lane}: {cached[0]} of {sum(cached)} compilations taken from ccache ({CCACHE_DIR})",
                      flush=True)
            info = upstream_ggml(ROOT / "build" / lane) if built else None
            if info:
                ggml_lines.setdefault(describe_ggml(info, ROOT / "build" / lane), []).append(lane)
            passed = failed = skipped = 0
            t0 = time.monotonic()
            if built:
                pending = [later for later in lanes[i + 1:] if builds[later].running()]
                print(f"\n==== lane {lane}: ctest ====" + (f" (beside it, at nice 19, the builds of lanes "
                                                           f"{', '.join(pending)})" if pending else ""), flush=True)
                passed, failed, skipped = _run_ctest(lane, skipped_by_lane)
            else:
                failed = 1
            total_pass += passed
            total_fail += failed
            total_skip += skipped
            rows.append((lane, "ok" if built else "FAILED", passed, failed, skipped, t_build, time.monotonic() - t0))
    finally:
        for build in builds.values():
            build.stop()
    print("\nlane       build   passed  failed  skipped  build s  ctest s")
    for lane, b, p, f, sk, tb, tc in rows:
        print(f"{lane:<10} {b:<7} {p:>6}  {f:>6}  {sk:>7}  {tb:>7.0f}  {tc:>7.0f}")
    for lane, tests in skipped_by_lane:
        print(f"skipped in lane {lane}:")
        for name, reason in tests:
            print(f"  {name}: {reason or '(no reason in the ctest output; see ctest -V)'}")
    for line, built_lanes in ggml_lines.items():
        print(f"{line} (lanes {', '.join(built_lanes)})")
    print(f"all lanes: {time.monotonic() - t_all:.0f} s (the builds after the first ran beside the ctests)"
          if len(rows) > 1 else f"all lanes: {time.monotonic() - t_all:.0f} s")
    print(f"lifeline: {total_pass} passed, {total_fail} failed, {total_skip} skipped")
    return 0 if total_fail == 0 else 1
