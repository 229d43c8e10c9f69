"""How `lifeline bisect` runs its commands (git, CMake, the compilers, the reproducer): each in a process group of
its own that is killed when the wait ends early (a timeout, Ctrl-C, SIGTERM), so none outlives the bisection;
with git's answers read and the line of a command's output that says why it failed."""
from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess

GIT_TIMEOUT_S = 600
TIMED_OUT = -1000  # sh's exit status of a command it stopped at its timeout


def sh(cmd: list, cwd=None, env=None, timeout=None) -> tuple[int, str]:
    """(exit status, stdout and stderr) of cmd, run in a process group of its own, which is killed when the
    wait ends early (a timeout: status TIMED_OUT; Ctrl-C or SIGTERM: re-raised), so no compiler or reproducer
    outlives this process."""
    p = subprocess.Popen([str(c) for c in cmd], cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, process_group=0)
    try:
        out, _ = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(p)
        out, _ = p.communicate()
        return TIMED_OUT, out.decode("utf-8", "replace") + f"\n[timed out after {timeout} s]\n"
    except BaseException:
        _kill_group(p)
        p.wait()
        raise
    return p.returncode, out.decode("utf-8", "replace")


def _kill_group(p: subprocess.Popen) -> None:
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def git(repo, *args, check: bool = True) -> str:
    """git's output in `repo`; RuntimeError when it fails and `check`."""
    rc, out = sh(["git", "-C", repo, *args], timeout=GIT_TIMEOUT_S)
    if check and rc != 0:
        raise RuntimeError(f"git {' '.join(args)} failed (exit {rc}): {out.strip()[-500:]}")
    return out


def commit_info(repo, rev: str) -> dict:
    """{"commit", "date", "subject"} of `rev` (the author date, YYYY-MM-DD)."""
    out = git(repo, "log", "-1", "--format=%H%n%as%n%s", rev, "--")
    h, date, subject = (out.splitlines() + ["", "", ""])[:3]
    return {"commit": h, "date": date, "subject": subject}


def shown(cmd: list) -> str:
    """cmd as a shell line, for the logs."""
    return shlex.join(str(c) for c in cmd)


def build_env() -> dict:
    """The environment of the compilers' and CMake's runs: this one without the caller's sanitizer options,
    which must not reach them."""
    return {k: v for k, v in os.environ.items() if not k.endswith("SAN_OPTIONS")}


def first_error(text: str, *patterns: str) -> str:
    """The first line of `text` that matches the first of `patterns` that any line matches (none: the last line),
    shortened."""
    lines = text.splitlines()
    for pattern in patterns:
        for i, line in enumerate(lines):
            if re.search(pattern, line):
                found = line.strip()
                if found.endswith(":"):  # CMake's "CMake Error at f:12 (add_library):" says what on the next lines
                    found += " " + " ".join(x.strip() for x in lines[i + 1:i + 6] if x.strip())[:150]
                return found[:220]
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:220] if lines else "(no output)"
