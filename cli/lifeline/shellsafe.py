"""Paths that libFuzzer puts on a shell command line.

libFuzzer starts the child processes of fork mode (-fork=N), of -merge=1 and of -minimize_crash=1 with
system(): it joins its own argv (the binary, -artifact_prefix=, -dict=, the corpus directories, the input),
paths in its temporary directory ($TMPDIR, else /tmp) and a `> log 2>&1` with blanks, quoting none of them
(compiler-rt lib/fuzzer: Command::toString in FuzzerCommand.h, ExecuteCommand in FuzzerUtilLinux.cpp,
CreateNewJob in FuzzerFork.cpp, CrashResistantMerge in FuzzerMerge.cpp, MinimizeCrashInput in
FuzzerDriver.cpp). A path with a blank is split, one with `$(...)` or `;` runs a command.

SafeLinks gives such a run only names made of SAFE characters, without refusing any path a user gives: a
path that is already such a name is passed as it is, any other as a symlink with a plain name in a private
directory (itself a safe name under the system's temporary directory), and $TMPDIR is replaced by a
directory in there when it is not a safe name.
"""
from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path

from .usage import UsageError

SAFE = re.compile(r"/[A-Za-z0-9._/-]*")


def is_safe(path: str) -> bool:
    """An absolute path that a shell reads as one word, literally."""
    return bool(SAFE.fullmatch(path))


def _safe_temp_base() -> str:
    for d in (tempfile.gettempdir(), "/tmp", "/var/tmp", "/dev/shm"):
        if is_safe(d) and os.path.isdir(d) and os.access(d, os.W_OK | os.X_OK):
            return d
    raise UsageError("lifeline: no writable temporary directory with a plain name (letters, digits, . _ / -) "
                     "for libFuzzer's child processes; set TMPDIR to one")


class SafeLinks:
    """`with SafeLinks() as links:` links.path(p, name) is p, absolute, or a symlink `name` to it;
    links.env(env) is env with a safe TMPDIR; links.dir is a private safe directory, removed at the end
    with the links (never what they point to)."""

    def __enter__(self) -> "SafeLinks":
        self.dir = Path(tempfile.mkdtemp(prefix="lifeline-", dir=_safe_temp_base()))
        return self

    def __exit__(self, *exc) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)

    def path(self, p, name: str) -> str:
        """A shell-safe absolute name for p (an existing file or directory); `name` is a plain file name,
        unique within this SafeLinks to one p (asking again for the same p and name gives the same link)."""
        full = os.path.abspath(p)
        if is_safe(full):
            return full
        link = self.dir / name
        if link.is_symlink() and os.readlink(link) == full:
            return str(link)
        link.symlink_to(full)
        return str(link)

    def env(self, env: dict) -> dict:
        """env, with TMPDIR (where libFuzzer keeps its job files) replaced by a private directory when
        it is not a safe name."""
        if "TMPDIR" not in env or is_safe(env["TMPDIR"]):  # libFuzzer falls back on /tmp
            return env
        tmp = self.dir / "tmp"
        tmp.mkdir(exist_ok=True)
        return dict(env, TMPDIR=str(tmp))
