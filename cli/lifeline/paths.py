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
