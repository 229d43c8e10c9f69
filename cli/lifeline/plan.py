"""`lifeline repro-plan --lane LANE`: the reproducer tests of one lane, for CMake.

cmake/LifelineTargets.cmake runs it at configure time and registers exactly what it prints, so repro.py is
the only reader of bug.json. An internal verb: the build runs it, `lifeline --help` does not list it.

One line per folder under the repro root, by name, eight fields separated by '|' ("-": none):

    repro|<id>|<status>|<target>|<modes>|<variant target>|<variant patch>|<variant modes>

  status          fixed, upstream-open, upstream-reported, upstream-fixed, not-a-bug (repro.py), or invalid:
                  bug.json missing or not valid (the folder gets only repro.<id>.bug-json, which fails naming
                  the file and the problem)
  target, modes   the bug's fuzz target and its repro.<id>.<lane>.<mode> tests: "fixed,reintroduced"
                  (status fixed), "pinned,guarded" (upstream-open with a guard) or "pinned" (without one)
                  (a finding in upstream code: repro.UPSTREAM_STATUSES) when a reproducer lists the lane, else "-"
  variant ...     the upstream_variant's target, its patch (a path inside the folder; "-": none, the bug's
                  switch acts on the variant's target as it is) and its
                  repro.<id>.upstream.<lane>.<mode> tests: "fixed,reintroduced" when one of its reproducers
                  lists the lane ("fixed,reintroduced,guarded" for a finding whose guard is checked on the patched
                  build: it has no reproducers of its own), else "-"

A value CMake's lists cannot carry (one holding | ; [ ] \\ or a line break) is an error, never a line
dropped: the plan exits 1 naming it and configuration stops.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

from . import repro
from .usage import UsageError

FIELDS = ("kind", "id", "status", "target", "modes", "variant_target", "variant_patch", "variant_modes")
_UNSAFE = re.compile(r"[|;\[\]\\\r\n]")


class PlanError(Exception):
    pass


def plan_line(repro_dir: Path, lane: str) -> str:
    """The plan's line for one reproducer folder."""
    fields = dict.fromkeys(FIELDS, "-")
    fields.update(kind="repro", id=repro_dir.name, status="invalid")
    try:
        bug = repro.load(repro_dir)
    except repro.BugJsonError:
        bug = None
    if bug is not None:
        fields.update(status=bug.status, target=bug.target)
        if lane in repro.lanes_of(bug.reproducers):
            if bug.status not in repro.UPSTREAM_STATUSES:
                fields["modes"] = "fixed,reintroduced"
            else:
                fields["modes"] = "pinned,guarded" if bug.guard else "pinned"
        if bug.variant:
            fields["variant_target"] = bug.variant.target
            if bug.variant.patch:
                fields["variant_patch"] = str(bug.variant.patch.relative_to(repro_dir))
            if lane in repro.lanes_of(bug.variant.reproducers):
                guarded = bug.guard is not None and bug.variant.patch is not None and not bug.reproducers
                fields["variant_modes"] = "fixed,reintroduced,guarded" if guarded else "fixed,reintroduced"
    for name, value in fields.items():
        if not value or _UNSAFE.search(value):
            raise PlanError(f"lifeline repro-plan: {repro_dir}: {name} {value!r} cannot be passed to CMake "
                            "(empty, or holds | ; [ ] \\ or a line break); rename it")
    return "|".join(fields.values())


def plan(repro_root: Path, lane: str) -> list[str]:
    return [plan_line(d, lane) for d in repro.folders(repro_root)]


def cmd_repro_plan(args) -> int:
    root = Path(args.repro_root)
    if not root.is_dir():
        raise UsageError(f"lifeline repro-plan: repro root '{root}' is not a directory")
    try:
        lines = plan(root, args.lane)
    except PlanError as e:
        print(str(e), file=sys.stderr)
        return 1
    sys.stdout.write("".join(line + "\n" for line in lines))
    return 0
