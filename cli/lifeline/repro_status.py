"""The checks of a finding's status in bug.json (repro_load.py's docstring says what each field means): what an
upstream status must show (check_status: the prior art, each entry classified by its relation; the search behind
"upstream-open"; the report behind "upstream-reported"; the fix behind "upstream-fixed"; the reason behind
"not-a-bug"), the dates of a prior_art entry (check_prior_art_dates), and "introduced_by" (check_introduced_by)."""
from __future__ import annotations

import re

from .repro_model import BugJsonError

RELATIONS = ("same-mechanism", "fix", "related", "cause", "downstream")
GITHUB_THREAD = re.compile(r"https://github\.com/[\w.-]+/[\w.-]+/(?:issues|pull)/\d+")
PRIOR_ART_STATES = ("open", "closed", "merged")
_DATED = re.compile(r"\d{4}-\d{2}(-\d{2})?\b")


def check_prior_art_dates(item: dict, ctx: str) -> None:
    """A prior_art entry's state and its dates, each labelled by what it is (repro_load.py's docstring)."""
    for key in ("title", "state", "opened", "merged", "closed", "release", "as_of", "notes"):
        if key in item and not isinstance(item[key], str):
            raise BugJsonError(f"{ctx}'{key}' must be a str")
    if "date" in item:
        raise BugJsonError(f"{ctx}'date' does not say what it is the date of: write 'opened', 'merged' or 'closed'")
    state = item.get("state")
    if state is not None and state not in PRIOR_ART_STATES:
        raise BugJsonError(f"{ctx}state '{state}' is not one of {', '.join(PRIOR_ART_STATES)}")
    for key in ("opened", "closed"):
        if key in item and not _DATED.match(item[key]):
            raise BugJsonError(f"{ctx}'{key}' must begin with its date (YYYY-MM-DD or YYYY-MM), not '{item[key][:40]}'")
    merged = item.get("merged")
    if state == "merged" and merged is None:
        raise BugJsonError(f"{ctx}says merged without the date of the merge: give 'merged' (its date, a bound such as "
                           "'after YYYY-MM-DD', or 'not visible ...' saying what was checked)")
    if merged is not None and state != "merged":
        raise BugJsonError(f"{ctx}has a 'merged' date but its state is '{state}'")
    if merged is not None and not (_DATED.search(merged) or merged.startswith(("not visible", "date not visible"))):
        raise BugJsonError(f"{ctx}'merged' must hold a date, a bound with a date, or say 'not visible': '{merged[:40]}'")


def check_status(doc: dict, status: str, where: str) -> None:
    """A finding's status and what it must show for it (repro_load.py's docstring): the prior art, classified; the
    search behind "upstream-open"; the reference behind the others."""
    prior = doc.get("prior_art", [])
    if not isinstance(prior, list):
        raise BugJsonError(f"{where}: 'prior_art' must be a list of objects")
    relation = {}
    for i, item in enumerate(prior):
        ctx = f"prior_art[{i}]: "
        if not isinstance(item, dict):
            raise BugJsonError(f"{where}: {ctx}must be an object with 'url' and 'relation'")
        for key in ("url", "relation"):
            if not isinstance(item.get(key), str) or not item[key].strip():
                raise BugJsonError(f"{where}: {ctx}'{key}' must be a non-empty str")
        check_prior_art_dates(item, f"{where}: {ctx}")
        if item["relation"] not in RELATIONS:
            raise BugJsonError(f"{where}: {ctx}relation '{item['relation']}' is not one of {', '.join(RELATIONS)}")
        relation[item["url"]] = item["relation"]
    cited = set()
    for text in [u for u in doc.get("upstream", []) if isinstance(u, str)] + [doc.get("notes") or ""]:
        if isinstance(text, str):
            cited |= set(GITHUB_THREAD.findall(text))
    unclassified = sorted(u for u in cited if u not in relation)
    if unclassified:
        raise BugJsonError(f"{where}: cites {unclassified[0]} without saying what it is to this finding: list it in "
                           f"'prior_art' with a relation ({', '.join(RELATIONS)})")
    check_introduced_by(doc, where)
    same = sorted(u for u, r in relation.items() if r == "same-mechanism")
    fixes = sorted(u for u, r in relation.items() if r == "fix")
    if status == "upstream-open":
        if same or fixes:
            u = (same or fixes)[0]
            raise BugJsonError(f"{where}: status 'upstream-open' but it cites {u}, which "
                               + ("reports the same mechanism: the status is 'upstream-reported'" if same else
                                  "fixes it: the status is 'upstream-fixed'"))
        t = doc.get("triage")
        if not isinstance(t, dict) or not isinstance(t.get("date"), str) or not re.fullmatch(
                r"\d{4}-\d{2}-\d{2}", t["date"]) or not isinstance(t.get("searched"), list) or not t["searched"] \
                or not all(isinstance(x, str) and x.strip() for x in t["searched"]):
            raise BugJsonError(f"{where}: status 'upstream-open' says nobody upstream has reported it: 'triage' must "
                               "say when and where that was searched ({\"date\": \"YYYY-MM-DD\", \"searched\": [...]})")
    elif status == "upstream-reported" and not same:
        raise BugJsonError(f"{where}: status 'upstream-reported' needs the report: a 'prior_art' entry with relation "
                           "'same-mechanism'")
    elif status == "upstream-fixed" and not fixes:
        raise BugJsonError(f"{where}: status 'upstream-fixed' needs the fix: a 'prior_art' entry with relation 'fix'")
    elif status == "not-a-bug" and (not isinstance(doc.get("not_a_bug"), str) or not doc["not_a_bug"].strip()):
        raise BugJsonError(f"{where}: status 'not-a-bug' needs 'not_a_bug': why it is not one")


def check_introduced_by(doc: dict, where: str) -> None:
    """bug.json's "introduced_by" (repro_load.py's docstring): what `lifeline bisect --record` writes, and report.md
    quotes."""
    if "introduced_by" not in doc:
        return
    intro = doc["introduced_by"]
    sha = re.compile(r"[0-9a-f]{40}")
    if not isinstance(intro, dict) or sum(k in intro for k in ("commit", "before")) != 1:
        raise BugJsonError(f"{where}: 'introduced_by' must be an object with 'commit' (the first bad commit) or "
                           "'before' (the oldest commit the export builds against, where it already fails)")
    key = "commit" if "commit" in intro else "before"
    if not isinstance(intro[key], str) or not sha.fullmatch(intro[key]):
        raise BugJsonError(f"{where}: introduced_by.{key} must be a full 40-digit lower-case commit hash")
    for k in ("subject", "repo", "export"):
        if not isinstance(intro.get(k), str) or not intro[k].strip():
            raise BugJsonError(f"{where}: introduced_by.{k} must be a non-empty str")
    if not isinstance(intro.get("date"), str) or not re.fullmatch(r"\d{4}-\d{2}-\d{2}", intro["date"]):
        raise BugJsonError(f"{where}: introduced_by.date must be YYYY-MM-DD")
    rng = intro.get("range")
    if not isinstance(rng, list) or len(rng) != 2 or not all(isinstance(c, str) and sha.fullmatch(c) for c in rng):
        raise BugJsonError(f"{where}: introduced_by.range must be [GOOD, BAD], two full commit hashes")
    if "note" in intro and not isinstance(intro["note"], str):
        raise BugJsonError(f"{where}: introduced_by.note must be a str")
    if intro.get("found_by", "bisect") not in ("bisect", "history"):
        raise BugJsonError(f"{where}: introduced_by.found_by must be \"bisect\" (`lifeline bisect`, the default) or "
                           "\"history\" (read off upstream's history by hand: the note says how)")
