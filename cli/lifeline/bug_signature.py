"""The signature a new bug.json records for a crash, as `lifeline promote` writes it and `lifeline reduce` (without
--bug) keeps it while reducing: the crash type and top frame, or for a lifeline check the digit-free wording of
its message."""
from __future__ import annotations

import re


def signature_for_bug_json(c: dict) -> dict:
    if c["type"] == "lifeline-check" and c.get("message"):
        # The longest run of the check's message without digits: op indexes, object ids, counts and
        # values vary between inputs that hit the same check; its wording does not.
        chunks = [x.strip(" :,()-") for x in re.split(r"[#0-9]", c["message"])]
        text = max(chunks, key=len)
        if len(text) >= 8:
            return {"type": c["type"], "message": text}
    return {"type": c["type"], "frame": c["state"][0]}
