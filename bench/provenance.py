"""Where and when a benchmark ran: the date, machine and commit each bench/ script records in the JSON it writes.

  provenance.record() -> {"date": "2026-12-07T11:30:00Z", "machine": "2 x AMD EPYC 7B13", "commit": "14a381d"}

date is UTC at the time of the call; machine is the processors the run could use (os.sched_getaffinity, else
nproc) and the CPU model of /proc/cpuinfo ("not recorded" where neither is readable); commit is
`git rev-parse --short HEAD` of this checkout (uncommitted edits are not told apart), or "not recorded" outside
git. bench/dashboard.py reads these three fields.
"""
import os
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOT_RECORDED = "not recorded"


def machine() -> str:
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 0
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text(errors="replace").splitlines():
            key, _, value = line.partition(":")
            if key.strip() in ("model name", "Model", "cpu model") and value.strip():
                model = " ".join(value.split())
                break
    except OSError:
        pass
    if not cpus and not model:
        return NOT_RECORDED
    return f"{cpus} x {model}" if model else f"{cpus} processors"


def commit() -> str:
    try:
        proc = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, universal_newlines=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return NOT_RECORDED
    return proc.stdout.strip() if proc.returncode == 0 and proc.stdout.strip() else NOT_RECORDED


def record() -> dict:
    return {"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "machine": machine(), "commit": commit()}
