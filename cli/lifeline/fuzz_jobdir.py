"""The folder of one `lifeline fuzz` job, out/<target>/: made and checked writable before any job starts, with the
files each engine's job writes there; and the job's guard-count file, fresh for each job."""
from __future__ import annotations

from pathlib import Path

from .usage import UsageError


def fresh_guard_file(out: Path, target: str) -> Path:
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


def check_writable_dir(d: Path, what: str) -> None:
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


def check_file_slot(f: Path) -> None:
    """f, which the job writes, is a file or can be one."""
    if f.exists() and not f.is_file():
        raise UsageError(f"lifeline fuzz: {f} is in the way (not a file); move it or give another --out")


def prepare_job_dir(out: Path, target: str, engine: str) -> None:
    """out/<target>/ and the folders and files its job writes (corpus/, artifacts/, job.json, fuzz.log and
    guards.bin; with AFL++ afl/, afl.log and guards.bin), each checked writable."""
    base = out / target
    check_writable_dir(base, f"{target}'s job directory")
    for name in (("afl",) if engine == "afl" else ("corpus", "artifacts")):
        check_writable_dir(base / name, f"{target}'s {name} directory")
    for name in ("job.json", "afl.log" if engine == "afl" else "fuzz.log", "guards.bin"):
        check_file_slot(base / name)
