"""The inputs `lifeline coverage` and `lifeline coverage --states` replay: the targets and input sets a command line
names, and the reproducer inputs that run on a target. Below both commands' modules, which share it."""
from __future__ import annotations

from pathlib import Path

from . import repro
from .paths import ROOT, source_targets


def repro_inputs(target: str) -> list[tuple[Path, dict]]:
    """(input, extra environment) of the reproducers that run on `target` as it is built: the bug's own inputs
    when it is the bug's target, and an upstream variant's inputs when it is that variant's target (the
    unpatched upstream is the fixed code). A bug.json that does not load is skipped: its own test fails."""
    out = []
    for bug in repro.loadable(ROOT / "repro"):
        if bug.target == target:
            out += [(r.input, r.env) for r in bug.reproducers]
        if bug.variant and bug.variant.target == target:
            out += [(r.input, r.env) for r in bug.variant.reproducers]
    return out


def targets_and_sets(args, default_sets, known_sets, err) -> list[str]:
    """Checks args.targets against the project's targets and returns the input sets --inputs names (default
    `default_sets`), each one of `known_sets`; `err` makes the UsageError."""
    known = source_targets()
    for t in args.targets:
        if t not in known:
            raise err(f"unknown target '{t}' (known: {', '.join(known)})")
    sets = [s for s in (args.inputs or ",".join(default_sets)).split(",") if s]
    for s in sets:
        if s not in known_sets:
            raise err(f"--inputs: unknown input set '{s}' (known: {', '.join(known_sets)})")
    return sets
