"""Bug ids: the switches of core/bug_list.def, the one list that core/bugs.h expands too."""
from __future__ import annotations

import re
from pathlib import Path

from .paths import ROOT

BUG_ID = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)+")


def known_bug_ids(root: Path = ROOT) -> list[str]:
    """The ids of root/core/bug_list.def, the one list of bug switches (lines `LIFELINE_BUG(kName, "id")`)."""
    src = (root / "core" / "bug_list.def").read_text()
    return re.findall(r'^LIFELINE_BUG\(\w+, "([a-z0-9]+(?:-[a-z0-9]+)+)"\)', src, re.M)
