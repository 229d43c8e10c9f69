"""`lifeline list`: the fuzz targets, lanes, bug ids and reproducers this checkout has."""
from __future__ import annotations

from . import repro
from .bugs import known_bug_ids
from .paths import LANES, ROOT, source_targets


def cmd_list(args) -> int:
    print("targets:    " + ", ".join(source_targets()))
    print("lanes:      " + ", ".join(LANES))
    print("bug ids:    " + ", ".join(known_bug_ids()))
    for d in repro.folders(ROOT / "repro"):
        try:
            bug = repro.load(d)
            lanes = repro.lanes_of(bug.reproducers)
            print(f"reproducer: {bug.id}  target={bug.target}  inputs={len(bug.reproducers)}  lanes={','.join(lanes)}  "
                  f"status={bug.status}" + (f"  upstream variant: {bug.variant.target}" if bug.variant else ""))
        except repro.BugJsonError as e:
            print(f"reproducer: {d.name}  INVALID: {e}")
    return 0
