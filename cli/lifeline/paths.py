"""Where things are: the project root, the lanes, and the fuzz targets (sources and built binaries)."""
from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LANES = ("asan", "tsan", "lsan", "valgrind", "fuzz")


def fuzz_targets(lane_dir: Path) -> list[str]:
    d = lane_dir / "targets"
    return sorted(p.name for p in d.iterdir() if p.is_file() and os.access(p, os.X_OK)) if d.is_dir() else []


def source_targets() -> list[str]:
    return sorted(p.stem for p in (ROOT / "targets").glob("*.cc"))


# Lanes whose fuzz targets link libFuzzer, and so can fuzz (`lifeline fuzz --lane`).
FUZZ_LANES = ("fuzz", "tsan")


def target_labels(lane_dir: Path) -> dict[str, list[str]]:
    """target -> its CTest labels, from the lane's fuzz-targets.txt (written by every configure,
    cmake/LifelineTargets.cmake); empty when the lane is not configured."""
    try:
        lines = (lane_dir / "fuzz-targets.txt").read_text().splitlines()
    except OSError:
        return {}
    out = {}
    for line in lines:
        name, _, labels = line.partition(" ")
        if name:
            out[name] = [x for x in labels.split(";") if x]
    return out


def skipped_targets(lane_dir: Path) -> dict[str, str]:
    """target -> why the lane's configuration did not build it on its upstream source (skipped-targets.txt, written
    afresh by every configure: cmake/LifelineGgml.cmake lifeline_add_unavailable_target); empty when the lane is not
    configured."""
    try:
        lines = (lane_dir / "skipped-targets.txt").read_text().splitlines()
    except OSError:
        return {}
    return {name: why for name, _, why in (line.partition(": ") for line in lines) if name}
