"""One AFL++ job of `lifeline fuzz --engine afl`: afl-fuzz -V on a target that scripts/build-afl.sh built, with a
progress line from its fuzzer_stats, and its figures (executions, exec/s, coverage, corpus, crashes) in the
job's summary entry."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from . import guards as guardsmod
from .bugs import switch_env
from .fuzz_jobdir import fresh_guard_file
from .paths import ROOT
from .usage import UsageError


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


def afl_job(binary: Path, target: str, seconds: int, out: Path, reintroduce: str | None) -> dict:
    """One AFL++ job (afl-fuzz -V seconds) on a target built by scripts/build-afl.sh."""
    work = out / target / "afl"  # exists: fuzz_jobdir.prepare_job_dir
    (out / target / "job.json").write_text(json.dumps({"target": target, "reintroduce": reintroduce,
                                                       "unguard": os.environ.get("LIFELINE_UNGUARD"),
                                                       "binary": str(binary), "engine": "afl"}) + "\n")
    cmd = ["afl-fuzz", "-i", str(ROOT / "corpus" / target), "-o", str(work), "-V", str(seconds)]
    dict_file = ROOT / "corpus" / f"{target}.dict"
    if dict_file.is_file():
        cmd += ["-x", str(dict_file)]
    cmd += ["--", str(binary)]
    guard_file = fresh_guard_file(out, target)
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
