"""Bug ids: the switches of core/bug_list.def, the one list that core/bugs.h expands too."""
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


def switch_env(reintroduce: Optional[str], **extra: str) -> dict:
    """The environment a target runs in: this process's, plus `extra`, with LIFELINE_REINTRODUCE set to
    `reintroduce` and nothing else (an inherited value never leaks into a run that asked for none)."""
    env = dict(os.environ, **extra)
    env.pop("LIFELINE_REINTRODUCE", None)
    if reintroduce:
        env["LIFELINE_REINTRODUCE"] = reintroduce
    return env
