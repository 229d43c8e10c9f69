"""`lifeline fuzz`: one job per target from the seed corpus, with libFuzzer (the fuzz lane: in-process, or
fork mode with --jobs N) or AFL++ (the AFL++ build of scripts/build-afl.sh); a progress line, then each new
artifact replayed once and sorted into crashes and known upstream-open findings, and a summary table with each
target's artifacts grouped by bug id or signature and its guard counts (LIFELINE_GUARD_COUNTS). Nothing found
is lost on Ctrl-C or SIGTERM."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from . import crash as crashmod
from . import guards as guardsmod
from . import triage as triagemod
from .bugs import switch_env
from .build import configure_and_build, describe_ggml, ensure_deps, ensure_upstream, resolve_ggml_source, run, upstream_ggml
from .options import libfuzzer_flags, per_input_timeout
from .paths import FUZZ_LANES, ROOT, fuzz_targets, source_targets, target_labels
from .shellsafe import SafeLinks
from .usage import UsageError

_STATUS = re.compile(r"^#(\d+)\s+(\w+)\s+cov: (\d+) ft: (\d+) corp: (\d+)/\S+.*?exec/s: (\d+)")
# Fork mode, one line per finished job (compiler-rt FuzzerFork.cpp): "#<runs of every job so far>: cov: 56
# ft: 78 corp: 9 exec/s 100 oom/timeout/crash: 0/0/1 time: 12s job: 3 dft_time: 0"; its corp counts the
# seeds the first merge kept plus what the jobs added, its exec/s is the finished job's alone (0 for a job
# that crashed within its first second), its time the seconds since the fork-mode process started.
_FORK_STATUS = re.compile(r"^#(\d+): cov: (\d+) ft: (\d+) corp: (\d+) exec/s:? (\d+)"
                          r"(?: oom/timeout/crash: (\d+)/(\d+)/(\d+) time: (\d+)s)?")
_FINAL = re.compile(r"^stat::(number_of_executed_units|average_exec_per_sec):\s+(\d+)")


class JobLog:
    """The figures of one libFuzzer job, from its output fed line by line (plain or fork mode).

    execs: the final stats' number_of_executed_units, else the last progress line's count (fork mode prints
    only those: the sum over its finished jobs). exec/s: libFuzzer's average when it gives one (the final
    stats of a plain job, when not 0), else execs / elapsed: fork mode's progress lines carry one job's rate
    only, so there it is always the total over libFuzzer's own elapsed time. corpus: libFuzzer's corpus
    size from the last progress line (the seeds it kept plus what it added; the working corpus folder holds
    only the added ones), None when it printed none."""

    def __init__(self):
        self.fork = False
        self.execs = 0
        self.cov = 0
        self.corpus = None
        self.rate = 0                # the last plain progress line's exec/s
        self.final_execs = None
        self.final_rate = None
        self.fork_seconds = None     # fork mode: the last line's time
        self.fork_crashes = None     # fork mode: (ooms, timeouts, crashes) its jobs ended with
        self.unmerged_execs = 0      # fork mode: inputs of a crashed job whose log it printed

    def feed(self, line: str) -> bool:
        """Takes one line of output; whether it was a progress line."""
        m = _STATUS.match(line)
        if m:
            self.execs, self.cov, self.corpus, self.rate = (int(m.group(i)) for i in (1, 3, 5, 6))
            return True
        m = _FORK_STATUS.match(line)
        if m:
            self.fork = True
            self.execs, self.cov, self.corpus = (int(m.group(i)) for i in (1, 2, 4))
            if m.group(9) is not None:
                self.fork_crashes = tuple(int(m.group(i)) for i in (6, 7, 8))
                self.fork_seconds = int(m.group(9))
            return True
        if line.startswith("INFO: -fork="):
            self.fork = True
            return False
        f = _FINAL.match(line)
        if f and f.group(1) == "number_of_executed_units" and self.fork:
            # Fork mode prints a child's stats only inside the log of the crash it stops on (without
            # -ignore_crashes); that job's inputs are in no progress line.
            self.unmerged_execs += int(f.group(2))
        elif f and f.group(1) == "number_of_executed_units":
            self.final_execs = int(f.group(2))
        elif f and not self.fork:
            self.final_rate = int(f.group(2))
        return False

    def absorb(self, later: "JobLog") -> None:
        """Takes in the figures of a fork-mode job that went on where this one stopped: the inputs of both, the
        coverage and corpus where the later one ended, exec/s over the whole time (exec_per_s)."""
        self.final_execs = self.total_execs() + later.total_execs()
        self.cov = max(self.cov, later.cov)
        if later.corpus is not None:
            self.corpus = later.corpus
        self.fork, self.fork_seconds, self.final_rate = True, None, None

    def total_execs(self) -> int:
        return self.final_execs if self.final_execs is not None else self.execs + self.unmerged_execs

    def exec_per_s(self, elapsed: float) -> float:
        """Inputs a second over the job; `elapsed`: its wall time, for when libFuzzer gives no better one. Under
        10 a second, libFuzzer's whole-number rate says little (whisper_string_handoff's is 0): execs over the
        time instead, with one decimal."""
        execs = self.total_execs()
        if not self.fork and self.final_rate and self.final_rate >= 10:
            return self.final_rate
        if not self.fork and self.final_execs is None and self.rate and self.rate >= 10:
            return self.rate  # stopped before its final stats: its last progress line's rate
        seconds = self.fork_seconds if self.fork and self.fork_seconds else elapsed
        if not execs or seconds <= 0:
            return 0
        rate = execs / seconds
        return round(rate, 1) if rate < 10 else round(rate)


def executed_units(text: str) -> int:
    """How many inputs a libFuzzer job ran, from its output: its final stats, else its last progress line
    (a fork-mode job prints only those)."""
    log = JobLog()
    for line in text.splitlines():
        log.feed(line)
    return log.total_execs()


def _fuzz_one(binary: Path, target: str, seconds: int, out: Path, reintroduce: str | None, jobs: int = 1,
              lane: str = "fuzz") -> dict:
    work = out / target / "corpus"  # these folders exist: _prepare_job_dir
    artifacts = out / target / "artifacts"
    # What triage needs to replay an artifact the way it was found.
    (out / target / "job.json").write_text(json.dumps({"target": target, "reintroduce": reintroduce,
                                                       "unguard": os.environ.get("LIFELINE_UNGUARD"),
                                                       "binary": str(binary), "lane": lane}) + "\n")
    before = set(p.name for p in artifacts.iterdir())
    seeds = ROOT / "corpus" / target
    dict_file = ROOT / "corpus" / f"{target}.dict"
    guard_file = _fresh_guard_file(out, target)
    env = switch_env(reintroduce, LIFELINE_GUARD_COUNTS=str(guard_file))
    log_path = out / target / "fuzz.log"
    stats = {"target": target, "lane": lane, "execs": 0, "exec_s": 0, "cov": 0, "corpus": 0, "crashes": 0,
             "artifacts": str(artifacts), "interrupted": False, "log": str(log_path), "fork": jobs > 1}
    # One progress line: rewritten in place on a terminal, a new line every 10 s in a log.
    tty = sys.stdout.isatty()
    lead, tail, progress_every = ("\r", "", 1.0) if tty else ("", "\n", 10.0)
    t0 = last_progress = time.monotonic()
    job = JobLog()
    # Fork mode starts its jobs through a shell: every path it gets is a plain name (lifeline/shellsafe.py).
    with SafeLinks() as links, open(log_path, "w") as log:
        def command(budget: int, fork: int) -> list:
            cmd = [links.path(binary, target), *libfuzzer_flags(target), f"-max_total_time={budget}",
                   "-print_final_stats=1", f"-timeout={per_input_timeout(target)}",
                   f"-artifact_prefix={links.path(artifacts, 'artifacts')}/", links.path(work, "corpus")]
            if dict_file.is_file():
                cmd.insert(1, f"-dict={links.path(dict_file, 'dict')}")
            if seeds.is_dir():
                cmd.append(links.path(seeds, "seeds"))
            if fork:
                # Fork mode: `fork` child processes share the corpus; a crash is kept and the job goes on.
                cmd[1:1] = [f"-fork={fork}", "-ignore_crashes=1"]
            return cmd

        def run(cmd: list, log_job: JobLog) -> int:
            nonlocal last_progress
            try:
                proc = subprocess.Popen(cmd, env=links.env(env), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                        text=True, errors="replace")
            except OSError as e:
                raise UsageError(f"lifeline fuzz: cannot run {binary} ({e.strerror}); is a build replacing it?")
            try:
                for line in proc.stdout:
                    log.write(line)
                    if log_job.feed(line):
                        now = time.monotonic()
                        if now - last_progress >= progress_every:
                            last_progress = now
                            found_now = sum(1 for p in artifacts.iterdir() if p.name not in before and not _slow(p))
                            execs = job.total_execs() + (log_job.execs if log_job is not job else 0)
                            sys.stdout.write(f"{lead}  {target}: {execs} execs  "
                                             f"{round(execs / max(now - t0, 1e-3))} exec/s  cov {log_job.cov}  "
                                             f"corpus {log_job.corpus}  crashes {found_now}  "
                                             f"{now - t0:.0f}/{seconds} s   {tail}")
                            sys.stdout.flush()
                    if "libFuzzer: run interrupted" in line:
                        stats["interrupted"] = True  # the child got the signal even if we did not
                return proc.wait()
            except KeyboardInterrupt:
                # libFuzzer handles SIGINT itself: it stops, prints its final stats and exits. The corpus it
                # wrote and every artifact stay where they are.
                stats["interrupted"] = True
                proc.send_signal(signal.SIGINT)
                try:
                    rest, _ = proc.communicate(timeout=30)
                    log.write(rest or "")
                    for line in (rest or "").splitlines():
                        log_job.feed(line)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
                return proc.returncode

        returncode = run(command(seconds, jobs if jobs > 1 else 0), job)
        stopped_at = time.monotonic() - t0
        # An in-process job stops at its first crash. When that leaves time the user asked for (a seed that
        # crashes on this upstream version, a finding no guard steps around here), the job goes on in fork
        # mode, which keeps each crash and goes on, for the rest of the time, from the corpus so far; the
        # summary says where it stopped and what ran after. Not with a bug switched on by --reintroduce: that
        # bug is what such a job looks for, and every input after would find it again.
        left = int(seconds - stopped_at)
        crashed = returncode != 0 and any(p.name not in before and not _slow(p) for p in artifacts.iterdir())
        if reintroduce and crashed and not stats["interrupted"] and left >= 1:
            stats["stopped_at_crash"] = {"at_s": round(stopped_at, 1), "exit_status": returncode,
                                         "reintroduce": reintroduce}
        elif jobs == 1 and not stats["interrupted"] and crashed and left >= 1:
            stats["stopped_early"] = {"at_s": round(stopped_at, 1), "exit_status": returncode,
                                      "went_on": "fork mode (-fork=1 -ignore_crashes=1)", "for_s": left}
            log.write(f"\n==lifeline== libFuzzer stopped on a crash at {stopped_at:.1f} s of {seconds}; going on "
                      f"in fork mode for {left} s\n")
            more = JobLog()
            returncode = run(command(left, 1), more)
            stats["stopped_early"]["execs"] = more.total_execs()
            job.absorb(more)
    elapsed = time.monotonic() - t0
    stats["exit_status"] = returncode
    if tty:
        sys.stdout.write("\n")
    new = sorted(p for p in artifacts.iterdir() if p.name not in before)
    # libFuzzer's slow-unit-* files: inputs that ran longer than -report_slow_units (10 s), kept and listed, not
    # replayed as crashes (ggml_vulkan_graph_topology's first input to use a pipeline compiles it: 16 s cold).
    stats["slow_units"] = [str(p) for p in new if _slow(p)]
    new = [p for p in new if not _slow(p)]
    stats["new_artifacts"] = [str(p) for p in new]
    saved = sum(1 for _ in work.iterdir())
    stats.update(execs=job.total_execs(), exec_s=job.exec_per_s(elapsed), cov=job.cov,
                 corpus=job.corpus if job.corpus is not None else saved, corpus_saved=saved,
                 seconds=round(elapsed, 1))
    stats["guards"] = guardsmod.summary_json(guard_file)
    # A job that ended before its time without being stopped by hand tested less than it says: the table and
    # the exit status say so (cmd_fuzz). libFuzzer checks its time between inputs, so it never ends early by
    # its own clock; a second's slack covers the start of the process.
    stats["ended_early"] = not stats["interrupted"] and "stopped_at_crash" not in stats and elapsed + 1 < seconds
    in_process = jobs == 1 and "stopped_early" not in stats  # fork mode's children keep their own leak reports
    leak = _leak_at_exit(log_path, returncode, target, lane) if in_process and not stats["interrupted"] else None
    if leak and leak.get("exit_unit"):
        # The unit libFuzzer's death handler wrote when LeakSanitizer aborted the exiting process: whatever
        # input was current then, not one that leaks. Kept on disk, named in the leak's entry, not replayed.
        name = Path(leak["exit_unit"]).name  # the log names it through the job's safe links
        leak["exit_unit"] = str(artifacts / name)
        new = [p for p in new if p.name != name]
    if stats["interrupted"]:
        # Stopped by hand: no replays, so no labels. The log cannot stand in for them: fork mode keeps only
        # its children's ERROR lines (no stack, no artifact name), and one report would name every artifact.
        crashes, upstream_open, not_replayed = [], [], [str(p) for p in new]
    else:
        crashes, upstream_open, not_replayed = _replay_artifacts(binary, target, new, reintroduce, lane)
        stats["interrupted"] = bool(not_replayed)
    stats["not_replayed"] = not_replayed
    stats["crashes"] = len(crashes)
    stats["crash_artifacts"] = crashes
    stats["upstream_open"] = len(upstream_open)
    stats["upstream_open_bugs"] = sorted({u["bug"] for u in upstream_open})
    stats["upstream_open_artifacts"] = upstream_open
    stats["artifact_groups"] = group_artifacts(crashes, upstream_open, not_replayed)
    if leak:
        stats["leak_at_exit"] = leak
        if not leak.get("upstream_open"):
            stats["crashes"] += 1
    if crashes or (leak and not leak.get("upstream_open")):
        stats["signature"] = (crashes[0] if crashes else leak)["signature"]
    return stats


def _leak_at_exit(log_path: Path, returncode, target: str, lane: str = "fuzz") -> dict | None:
    """The LeakSanitizer report a job printed when its process exited, with no artifact: a target whose
    options turn libFuzzer's per-input leak check off (detect_leaks = 0, where caches or asynchronous frees
    of the code beneath make that check scan the heap after most inputs) still has LeakSanitizer's check of
    the whole run at exit, and a leak found there fails the job like a crash, though no input carries it.
    Only a report after libFuzzer's "Done N runs" line counts: one before it is a per-input leak, with its
    own artifact. {"signature", "short", "log", (+ "bug", "upstream_open", and "exit_unit": the artifact
    libFuzzer wrote when the report aborted the process)}; None when the job exited 0 or printed no such
    report."""
    if returncode in (0, None):
        return None
    try:
        text = log_path.read_text(errors="replace")
    except OSError:
        return None
    at = text.rfind("ERROR: LeakSanitizer: detected memory leaks")
    done = text.rfind("\nDone ")
    if at < 0 or done < 0 or at < done:
        return None
    c = crashmod.parse(text[text.rfind("\n", 0, at) + 1:])
    if c is None:
        return None
    entry = {"signature": c.signature, "short": c.type + (f" in {c.state[0]}" if c.state else ""),
             "log": str(log_path)}
    bug, status = triagemod.match_known(c, triagemod.known_signatures(
        ROOT, target, lane, triagemod.other_source(ROOT / "build" / lane / "targets" / target, target)))
    if bug:
        entry["bug"] = bug
    if status == "upstream-open":
        entry["upstream_open"] = True  # shown, not counted: upstream has not fixed it
    unit = re.search(r"Test unit written to (\S+)", text[at:])
    if unit:
        entry["exit_unit"] = unit.group(1)
    return entry


def _fresh_guard_file(out: Path, target: str) -> Path:
    """out/<target>/guards.bin, where the job's processes count the guards that fire (LIFELINE_GUARD_COUNTS,
    core/guards.h), removed first: it holds one job's counts, and a target refuses a file of another build."""
    f = out / target / "guards.bin"
    try:
        f.unlink()
    except FileNotFoundError:
        pass
    except OSError as e:
        raise UsageError(f"lifeline fuzz: cannot remove the last job's guard counts {f} ({e.strerror}); "
                         "give another --out")
    return f


def _slow(p: Path) -> bool:
    return p.name.startswith("slow-unit-")


def _replay_artifacts(binary: Path, target: str, artifacts: list,
                      reintroduce: str | None, lane: str = "fuzz") -> tuple[list, list, list]:
    """Replays each new artifact once on the job's binary, the way it was found, and sorts it by the known
    signatures of `target`: (crashes, upstream_open, not_replayed: the paths left when interrupted). An
    artifact that gives the signature of an upstream-open bug (upstream has not fixed it) is not a crash of
    this job; anything else is, including an artifact that does not crash again. Entries: {"artifact",
    "signature", "short"} (+ "bug" when it matches a known bug; "short": crash type and top frame), or for
    an artifact without a report on replay {"artifact", "signature", "replay": "clean" or "no-report"}."""
    known = triagemod.known_signatures(ROOT, target, lane, triagemod.other_source(binary, target)) if artifacts else []
    crashes, upstream_open = [], []
    for i, a in enumerate(artifacts):
        try:
            rc, out = triagemod.run_once(binary, a, reintroduce, extra=(f"-timeout={per_input_timeout(target)}",))
        except KeyboardInterrupt:
            return crashes, upstream_open, [str(p) for p in artifacts[i:]]
        c = crashmod.parse(out) if rc != 0 else None
        if c is None:
            sig = ("(did not reproduce on replay)" if rc == 0 else
                   f"(exit {rc} on replay without a parsable report; see the log)")
            crashes.append({"artifact": str(a), "signature": sig, "replay": "clean" if rc == 0 else "no-report"})
            continue
        entry = {"artifact": str(a), "signature": c.signature,
                 "short": c.type + (f" in {c.state[0]}" if c.state else "")}
        bug, status = triagemod.match_known(c, known)
        if bug:
            entry["bug"] = bug
        (upstream_open if status == "upstream-open" else crashes).append(entry)
    return crashes, upstream_open, []


# The order of the kinds of artifact groups, on screen and in summary.json.
_KINDS = ("new", "known", "no-report", "clean", "upstream-open", "not-replayed")


def group_artifacts(crashes: list, upstream_open: list, not_replayed: list) -> list[dict]:
    """A job's artifacts grouped by what they are: [{"kind", "label", "count", "artifacts", "signatures",
    (+ "bug")}]. kind: "upstream-open" or "known" (one group per bug id: a known bug may crash in several
    states), "new" (one group per signature), "no-report" (crashed on replay without a parsable report),
    "clean" (did not crash again), "not-replayed" (the job was interrupted). Groups by kind in _KINDS order,
    then most artifacts first, then label; artifacts in name order."""
    groups: dict[tuple, dict] = {}

    def add(kind, key, label, artifact, signature=None, bug=None):
        g = groups.setdefault((kind, key), {"kind": kind, "label": label, "count": 0, "artifacts": [],
                                            "signatures": []})
        if bug:
            g["bug"] = bug
        g["count"] += 1
        g["artifacts"].append(artifact)
        if signature and signature not in g["signatures"]:
            g["signatures"].append(signature)

    for e in crashes:
        if "replay" in e:
            add(e["replay"] if e["replay"] in ("clean", "no-report") else "no-report", "",
                "did not reproduce on replay" if e["replay"] == "clean" else "no report on replay",
                e["artifact"])
        elif e.get("bug"):
            add("known", e["bug"], f"known {e['bug']}", e["artifact"], e["signature"], e["bug"])
        else:
            add("new", e["signature"], f"new: {e.get('short') or e['signature']}", e["artifact"], e["signature"])
    for e in upstream_open:
        add("upstream-open", e["bug"], f"upstream-open {e['bug']}", e["artifact"], e["signature"], e["bug"])
    for a in not_replayed:
        add("not-replayed", "", "not replayed (interrupted)", a)
    out = list(groups.values())
    for g in out:
        g["artifacts"].sort()
        g["signatures"].sort()
    out.sort(key=lambda g: (_KINDS.index(g["kind"]), -g["count"], g["label"]))
    return out


def artifact_lines(r: dict) -> list[str]:
    """The screen lines of one job's artifacts: one line that counts them by group, then, for each group
    that fails the run or needs a look, a line with its signature(s) and one example path. Every path is in
    summary.json."""
    groups = r.get("artifact_groups")
    if not groups:
        return []
    total = sum(g["count"] for g in groups)
    lines = [f"  {total} artifact{'s' if total != 1 else ''}: "
             + ", ".join(f"{g['count']} {g['label']}" for g in groups)]
    for g in groups:
        if g["kind"] == "upstream-open":
            continue
        if g["kind"] == "not-replayed":
            lines.append(f"    not replayed (interrupted): {g['count']} artifact(s); `lifeline triage` sorts them, "
                         f"e.g. {g['artifacts'][0]}")
            continue
        what = {"new": "new crash", "known": f"known {g.get('bug')}", "clean": "did not reproduce on replay",
                "no-report": "no parsable report on replay (see the log)"}[g["kind"]]
        sigs = f": {' ; '.join(g['signatures'])}" if g["signatures"] else ""
        lines.append(f"    {what}{sigs} ({g['count']}), e.g. {g['artifacts'][0]}")
    return lines


def _check_writable_dir(d: Path, what: str) -> None:
    if d.exists() and not d.is_dir():
        raise UsageError(f"lifeline fuzz: {what} {d} is in the way (not a directory); move it or give another "
                         "--out")
    try:
        d.mkdir(parents=True, exist_ok=True)
        probe = d / ".write-test"
        probe.write_text("")
        probe.unlink()
    except OSError as e:
        raise UsageError(f"lifeline fuzz: {what} {d} is not a writable directory ({e.strerror}); give another "
                         "--out")


def _check_file_slot(f: Path) -> None:
    """f, which the job writes, is a file or can be one."""
    if f.exists() and not f.is_file():
        raise UsageError(f"lifeline fuzz: {f} is in the way (not a file); move it or give another --out")


def _prepare_job_dir(out: Path, target: str, engine: str) -> None:
    """out/<target>/ and the folders and files its job writes (corpus/, artifacts/, job.json, fuzz.log and
    guards.bin; with AFL++ afl/, afl.log and guards.bin), each checked writable."""
    base = out / target
    _check_writable_dir(base, f"{target}'s job directory")
    for name in (("afl",) if engine == "afl" else ("corpus", "artifacts")):
        _check_writable_dir(base / name, f"{target}'s {name} directory")
    for name in ("job.json", "afl.log" if engine == "afl" else "fuzz.log", "guards.bin"):
        _check_file_slot(base / name)


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


def _afl_stats(path: Path) -> dict:
    stats = {}
    try:
        for line in path.read_text().splitlines():
            k, _, v = line.partition(":")
            stats[k.strip()] = v.strip()
    except OSError:
        pass
    return stats


def _count(stats: dict, key: str) -> int:
    """A count in afl-fuzz's fuzzer_stats (execs_per_sec is a decimal); 0 when it is missing or not a number."""
    try:
        return max(0, int(float(stats.get(key, "0"))))
    except (ValueError, OverflowError):
        return 0


def _afl_one(binary: Path, target: str, seconds: int, out: Path, reintroduce: str | None) -> dict:
    """One AFL++ job (afl-fuzz -V seconds) on a target built by scripts/build-afl.sh."""
    work = out / target / "afl"  # exists: _prepare_job_dir
    (out / target / "job.json").write_text(json.dumps({"target": target, "reintroduce": reintroduce,
                                                       "unguard": os.environ.get("LIFELINE_UNGUARD"),
                                                       "binary": str(binary), "engine": "afl"}) + "\n")
    cmd = ["afl-fuzz", "-i", str(ROOT / "corpus" / target), "-o", str(work), "-V", str(seconds)]
    dict_file = ROOT / "corpus" / f"{target}.dict"
    if dict_file.is_file():
        cmd += ["-x", str(dict_file)]
    cmd += ["--", str(binary)]
    guard_file = _fresh_guard_file(out, target)
    env = switch_env(reintroduce, AFL_NO_UI="1", AFL_SKIP_CPUFREQ="1", AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES="1",
                     LIFELINE_GUARD_COUNTS=str(guard_file))
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
            while True:
                try:
                    proc.wait(timeout=1 if sys.stdout.isatty() else 10)  # returns as soon as afl-fuzz ends
                    break
                except subprocess.TimeoutExpired:
                    pass
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
    result.update(execs=_count(st, "execs_done"), exec_s=_count(st, "execs_per_sec"), cov=st.get("bitmap_cvg", ""),
                  corpus=_count(st, "corpus_count"), crashes=len(crashes), new_artifacts=[str(p) for p in crashes])
    result["exit_status"] = proc.returncode
    result["guards"] = guardsmod.summary_json(guard_file)
    if proc.returncode not in (0, None) and not st:
        result["signature"] = f"afl-fuzz exited {proc.returncode} before fuzzing; see {log_path}"
    return result


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
    _check_writable_dir(out, "output directory")
    _check_file_slot(out / "summary.json")
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
        _prepare_job_dir(out, t, args.engine)
    for t in targets:
        if interrupted:
            break
        print(f"fuzzing {t} for {args.time} s" + (f" with LIFELINE_REINTRODUCE={args.reintroduce}" if args.reintroduce else ""), flush=True)
        try:
            if args.engine == "afl":
                r = _afl_one(lane_dir / t, t, args.time, out, args.reintroduce)
            else:
                r = _fuzz_one(lane_dir / "targets" / t, t, args.time, out, args.reintroduce, args.jobs, args.lane)
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
