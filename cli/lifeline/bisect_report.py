"""What `lifeline bisect` found, told: the closing lines (the range tested, the steps, the first bad commit or the
candidates when it is uncertain) and, with --record, the finding's "introduced_by" in its bug.json."""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Optional

from .bisect_proc import sh
from .bisect_step import SKIP

MAX_LISTED = 40   # candidates printed in full


def count(n: int, what: str) -> str:
    return f"{n} {what}" + ("" if n == 1 else "s")


def short(info: dict) -> str:
    return f"{info['commit'][:12]} ({info['date']})"


def repo_name(repo: Path, gdir_rel: str) -> str:
    """owner/name: from a GitHub remote URL, else by layout (ggml at the root: ggml-org/ggml; in ggml/:
    ggml-org/llama.cpp)."""
    rc, url = sh(["git", "-C", repo, "config", "--get", "remote.origin.url"])
    m = re.search(r"github\.com[:/]+([\w.-]+)/([\w.-]+?)(?:\.git)?/?$", url.strip()) if rc == 0 else None
    if m:
        return f"{m.group(1)}/{m.group(2)}"
    return "ggml-org/llama.cpp" if gdir_rel == "ggml" else "ggml-org/ggml"


def record(path: Path, value: dict) -> None:
    """Sets "introduced_by" in bug.json, keeping its formatting (json.dumps, indent 2; ASCII escapes when the file
    has them) and its other keys in place."""
    text = path.read_text(encoding="utf-8")
    doc = json.loads(text)
    doc["introduced_by"] = value
    ascii_only = all(ord(c) < 128 for c in text)
    path.write_text(json.dumps(doc, indent=2, ensure_ascii=ascii_only) + ("\n" if text.endswith("\n") else ""),
                    encoding="utf-8")


def report(result: dict, steps: list, checks: int, n: int, good: str, bad: str, seconds: float, *,
           record_in: Optional[Path], repo: Path, gdir_rel: str, export: str) -> int:
    """Prints what the bisection of good..bad (n commits) found: `result` as bisect_run.outcome or bracket gives
    it, `steps` the bisection's steps after the `checks` of its ends. A certain result is recorded in `record_in`
    (a bug.json; None: not recorded) as the bisection of input `export` in `repo`. The exit status: 0 when the
    first bad commit is certain, else 1."""
    skipped = [s for s in steps if s["code"] == SKIP]
    print(f"range tested: {good[:12]}..{bad[:12]} ({count(n, 'commit')}), {count(len(steps), 'step')} after "
          f"{count(checks, 'check')}, "
          f"{len(skipped)} skipped, {seconds:.0f} s", flush=True)
    if not result["certain"]:
        cands = result["candidates"]
        why = (f"stopped after {len(skipped)} skipped step(s) (--max-skips)" if result.get("stopped") else
               "skipped commits border it")
        print(f"first bad commit: uncertain: {why}; it is one of these {len(cands)}, newest first:")
        for c in cands[:MAX_LISTED] if len(cands) > MAX_LISTED + 1 else cands:
            tested = next((s for s in steps if s["commit"] == c["commit"]), None)
            print(f"  {c['commit']} {c['date']} {c['subject']}"
                  + (f"  [skipped: {tested['why']}]" if tested and tested["code"] == SKIP else ""))
        if len(cands) > MAX_LISTED + 1:
            print(f"  ... {len(cands) - MAX_LISTED - 1} more, down to\n  {cands[-1]['commit']} {cands[-1]['date']} "
                  f"{cands[-1]['subject']}")
        if record_in is not None:
            print("lifeline bisect: nothing recorded: the first bad commit is uncertain", file=sys.stderr)
        return 1
    first = result["first"]
    print(f"first bad commit: {first['commit']}\n  date: {first['date']}\n  subject: {first['subject']}")
    if skipped:
        print(f"  ({len(skipped)} skipped commit(s) elsewhere in the range; its parent ran clean, so it is certain)")
    if record_in is not None:
        value = {"commit": first["commit"], "subject": first["subject"], "date": first["date"],
                 "repo": repo_name(repo, gdir_rel), "range": [good, bad], "export": export}
        record(record_in, value)
        print(f"recorded introduced_by in {record_in}")
    return 0
