"""One libFuzzer job of `lifeline fuzz` (the fuzz or tsan lane): the target run from the seed corpus, in-process
or in fork mode, with a progress line; on in fork mode after a crash that leaves time; then its new artifacts
replayed and sorted, its leak at exit, its guard counts, all in the job's summary entry."""
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
from .fuzz_artifacts import group_artifacts, replay_artifacts
from .fuzz_jobdir import fresh_guard_file
from .fuzz_log import JobLog
from .options import libfuzzer_flags, per_input_timeout
from .paths import ROOT
from .shellsafe import SafeLinks
from .usage import UsageError


def libfuzzer_job(binary: Path, target: str, seconds: int, out: Path, reintroduce: str | None, jobs: int = 1,
              lane: str = "fuzz") -> dict:
    work = out / target / "corpus"  # these folders exist: fuzz_jobdir.prepare_job_dir
    artifacts = out / target / "artifacts"
    # What triage needs to replay an artifact the way it was found.
    (out / target / "job.json").write_text(json.dumps({"target": target, "reintroduce": reintroduce,
                                                       "unguard": os.environ.get("LIFELINE_UNGUARD"),
                                                       "binary": str(binary), "lane": lane}) + "\n")
    before = set(p.name for p in artifacts.iterdir())
    seeds = ROOT / "corpus" / target
    dict_file = ROOT / "corpus" / f"{target}.dict"
    guard_file = fresh_guard_file(out, target)
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
    # the exit status say so (fuzz.py cmd_fuzz). libFuzzer checks its time between inputs, so it never ends early by
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
        crashes, upstream_open, not_replayed = replay_artifacts(binary, target, new, reintroduce, lane)
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


def _slow(p: Path) -> bool:
    return p.name.startswith("slow-unit-")
