"""A bug as lifeline keeps it, loaded from repro/<bug-id>/bug.json (repro_load.py): the Bug, its Reproducers and
its UpstreamVariant, the statuses a bug may have (STATUSES; UPSTREAM_STATUSES: findings in upstream code), and
BugJsonError, what a bug.json that does not load raises."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

STATUSES = ("fixed", "upstream-open", "upstream-reported", "upstream-fixed", "not-a-bug")
# Findings in upstream code: no switch; their reproducers (when they have them) run on the pinned upstream.
UPSTREAM_STATUSES = ("upstream-open", "upstream-reported", "upstream-fixed", "not-a-bug")


@dataclass
class Reproducer:
    input: Path
    expect: dict  # lane -> signature
    env: dict = dataclasses.field(default_factory=dict)  # extra environment of the run (e.g. UBSAN_OPTIONS)
    export: Optional[dict] = None  # the signature of its exported standalone program, when not the lane's
    no_sanitizer: Optional[str] = None  # why its exported C program runs clean without sanitizers (else it fails)


@dataclass
class UpstreamVariant:
    target: str       # the target built against upstream source (unpatched: fixed; patched: reintroduced)
    source: str       # which upstream source, in words
    patch: Optional[Path]  # the patch that re-introduces the bug into that source; None: the bug's switch does
    reproducers: list # Reproducer


@dataclass
class Bug:
    id: str
    title: str
    target: str
    reproducers: list
    path: Path
    status: str = "fixed"                     # one of STATUSES
    variant: Optional[UpstreamVariant] = None  # "upstream_variant"
    guard: Optional[str] = None               # "guard": an id of core/guard_list.def


class BugJsonError(Exception):
    pass
