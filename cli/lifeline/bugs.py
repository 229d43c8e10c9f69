"""Bug ids: the switches of core/bug_list.def and the guards of core/guard_list.def, the lists that
core/bugs.h and core/guards.h expand too."""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Optional

from .paths import ROOT

BUG_ID = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)+")


def known_bug_ids(root: Path = ROOT) -> list[str]:
    """The ids of root/core/bug_list.def, the one list of bug switches (lines `LIFELINE_BUG(kName, "id")`)."""
    src = (root / "core" / "bug_list.def").read_text()
    return re.findall(r'^LIFELINE_BUG\(\w+, "([a-z0-9]+(?:-[a-z0-9]+)+)"\)', src, re.M)


def known_guard_ids(root: Path = ROOT) -> list[str]:
    """The ids of root/core/guard_list.def (lines `LIFELINE_GUARD(kName, "id")`): the upstream-open findings
    that the harness steps around unless LIFELINE_UNGUARD names them."""
    src = (root / "core" / "guard_list.def").read_text()
    return re.findall(r'^LIFELINE_GUARD\(\w+, "([a-z0-9]+(?:-[a-z0-9]+)+)"\)', src, re.M)


INHERIT = object()  # switch_env(unguard=INHERIT): LIFELINE_UNGUARD as this process has it


def switch_env(reintroduce: Optional[str], unguard=INHERIT, **extra: str) -> dict:
    """The environment a target runs in: this process's, plus `extra`, with LIFELINE_REINTRODUCE set to
    `reintroduce` and nothing else (an inherited value never leaks into a run that asked for none).
    `unguard`: the LIFELINE_UNGUARD value (None or "": every guard on), or INHERIT to keep this process's."""
    env = dict(os.environ, **extra)
    env.pop("LIFELINE_REINTRODUCE", None)
    if reintroduce:
        env["LIFELINE_REINTRODUCE"] = reintroduce
    if unguard is not INHERIT:
        env.pop("LIFELINE_UNGUARD", None)
        if unguard:
            env["LIFELINE_UNGUARD"] = unguard
    return env
