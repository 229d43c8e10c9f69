"""A target's own libFuzzer settings: targets/<target>.options, the file ClusterFuzz reads beside a fuzzer.

    # why (a measured reason, bench/results/engine.md)
    [libfuzzer]
    entropic = 0

Every run of the target that lifeline starts passes these as -key=value flags ahead of its own (`lifeline
fuzz`, the fuzz-smoke tests, bench/tte.py, bench/throughput.py); .clusterfuzzlite/build.sh copies them into
$OUT/<target>.options. Keys that a job decides per run (its time, its paths, its seed, fork mode) are refused
here, as is anything but one [libfuzzer] section of `key = value` lines. `timeout` (seconds per input) is the
target's to set: every tool passes per_input_timeout(), 25 s unless the file says otherwise.
"""
from __future__ import annotations

import re
from pathlib import Path

from .paths import ROOT
from .usage import UsageError

# Set per run by the tools that start the target; a target's file must not fight them.
PER_RUN = {"max_total_time", "runs", "artifact_prefix", "exact_artifact_path", "seed", "fork", "jobs",
           "workers", "dict", "print_final_stats", "merge", "minimize_crash", "close_fd_mask"}
DEFAULT_TIMEOUT_S = 25  # libFuzzer's -timeout where a target's file sets none (ClusterFuzz's default too)
_KEY = re.compile(r"[a-z][a-z0-9_]*")
_VALUE = re.compile(r"[A-Za-z0-9_.+-]+")


def options_path(target: str, root: Path = ROOT) -> Path:
    return root / "targets" / f"{target}.options"


def parse(text: str, where: str) -> dict[str, str]:
    """key -> value of the [libfuzzer] section; UsageError naming `where` and the line for anything else."""
    section, got = None, {}
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("["):
            if line != "[libfuzzer]":
                raise UsageError(f"{where}:{n}: section {line!r}: only [libfuzzer] is read")
            if section is not None:
                raise UsageError(f"{where}:{n}: a second [libfuzzer] section")
            section = line
            continue
        if section is None:
            raise UsageError(f"{where}:{n}: {line!r} comes before the [libfuzzer] section")
        key, eq, value = (s.strip() for s in line.partition("="))
        if not eq or not _KEY.fullmatch(key) or not _VALUE.fullmatch(value):
            raise UsageError(f"{where}:{n}: {line!r} is not a `key = value` line (a libFuzzer flag without its dash)")
        if key in PER_RUN:
            raise UsageError(f"{where}:{n}: {key} is set per run by the tool that starts the target, not here")
        if key in got:
            raise UsageError(f"{where}:{n}: {key} is set twice")
        if key == "timeout" and not (value.isdigit() and int(value) > 0):
            raise UsageError(f"{where}:{n}: timeout is a whole number of seconds above 0, not {value!r}")
        got[key] = value
    return got


def _read(target: str, root: Path) -> dict[str, str]:
    p = options_path(target, root)
    if not p.is_file():
        return {}
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise UsageError(f"{p}: cannot be read ({e})")
    return parse(text, str(p))


def libfuzzer_flags(target: str, root: Path = ROOT) -> list[str]:
    """The target's settings as libFuzzer flags (-key=value); none when it has no file."""
    return [f"-{k}={v}" for k, v in _read(target, root).items()]


def per_input_timeout(target: str, root: Path = ROOT) -> int:
    """The seconds one input may run: the target's `timeout`, else DEFAULT_TIMEOUT_S."""
    return int(_read(target, root).get("timeout", DEFAULT_TIMEOUT_S))


def cmd_libfuzzer_flags(argv: list[str]) -> int:
    """`lifeline libfuzzer-flags TARGET` (internal; cmake/run_fuzz_smoke.cmake): the flags, one per line."""
    if len(argv) != 1 or not re.fullmatch(r"[a-z0-9_]+", argv[0]):
        raise UsageError("lifeline libfuzzer-flags: one argument, a fuzz target's name")
    if not (ROOT / "targets" / f"{argv[0]}.cc").is_file():
        raise UsageError(f"lifeline libfuzzer-flags: '{argv[0]}' is not a fuzz target (no targets/{argv[0]}.cc)")
    for flag in libfuzzer_flags(argv[0]):
        print(flag)
    return 0
