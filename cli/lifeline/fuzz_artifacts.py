"""The artifacts of a `lifeline fuzz` job: each new one replayed once on the job's binary and sorted by the target's
known signatures (a crash of the job, or a finding upstream has not fixed), grouped by what they are, and the
screen lines that count the groups."""
from __future__ import annotations

from pathlib import Path

from . import crash as crashmod
from . import triage as triagemod
from .options import per_input_timeout
from .paths import ROOT


def replay_artifacts(binary: Path, target: str, artifacts: list,
                      reintroduce: str | None, lane: str = "fuzz") -> tuple[list, list, list]:
    """Replays each new artifact once on the job's binary, the way it was found, and sorts it by the known
    signatures of `target`: (crashes, upstream_open, not_replayed: the paths left when interrupted). An
    artifact that gives the signature of an upstream-open bug (upstream has not fixed it) is not a crash of
    this job; anything else is, including an artifact that does not crash again. Entries: {"artifact",
    "signature", "short"} (+ "bug" when it matches a known bug; "short": crash type and top frame), or for
    an artifact without a report on replay {"artifact", "signature", "replay": "clean" or "no-report"}."""
    known = triagemod.known_signatures(ROOT, target, lane, triagemod.other_source(binary, target)) if artifacts else []
    crashes, upstream_open = [], []
    for i, a in enumerate(artifacts):
        try:
            rc, out = triagemod.run_once(binary, a, reintroduce, extra=(f"-timeout={per_input_timeout(target)}",))
        except KeyboardInterrupt:
            return crashes, upstream_open, [str(p) for p in artifacts[i:]]
        c = crashmod.parse(out) if rc != 0 else None
        if c is None:
            sig = ("(did not reproduce on replay)" if rc == 0 else
                   f"(exit {rc} on replay without a parsable report; see the log)")
            crashes.append({"artifact": str(a), "signature": sig, "replay": "clean" if rc == 0 else "no-report"})
            continue
        entry = {"artifact": str(a), "signature": c.signature,
                 "short": c.type + (f" in {c.state[0]}" if c.state else "")}
        bug, status = triagemod.match_known(c, known)
        if bug:
            entry["bug"] = bug
        (upstream_open if status == "upstream-open" else crashes).append(entry)
    return crashes, upstream_open, []


# The order of the kinds of artifact groups, on screen and in summary.json.
_KINDS = ("new", "known", "no-report", "clean", "upstream-open", "not-replayed")


def group_artifacts(crashes: list, upstream_open: list, not_replayed: list) -> list[dict]:
    """A job's artifacts grouped by what they are: [{"kind", "label", "count", "artifacts", "signatures",
    (+ "bug")}]. kind: "upstream-open" or "known" (one group per bug id: a known bug may crash in several
    states), "new" (one group per signature), "no-report" (crashed on replay without a parsable report),
    "clean" (did not crash again), "not-replayed" (the job was interrupted). Groups by kind in _KINDS order,
    then most artifacts first, then label; artifacts in name order."""
    groups: dict[tuple, dict] = {}

    def add(kind, key, label, artifact, signature=None, bug=None):
        g = groups.setdefault((kind, key), {"kind": kind, "label": label, "count": 0, "artifacts": [],
                                            "signatures": []})
        if bug:
            g["bug"] = bug
        g["count"] += 1
        g["artifacts"].append(artifact)
        if signature and signature not in g["signatures"]:
            g["signatures"].append(signature)

    for e in crashes:
        if "replay" in e:
            add(e["replay"] if e["replay"] in ("clean", "no-report") else "no-report", "",
                "did not reproduce on replay" if e["replay"] == "clean" else "no report on replay",
                e["artifact"])
        elif e.get("bug"):
            add("known", e["bug"], f"known {e['bug']}", e["artifact"], e["signature"], e["bug"])
        else:
            add("new", e["signature"], f"new: {e.get('short') or e['signature']}", e["artifact"], e["signature"])
    for e in upstream_open:
        add("upstream-open", e["bug"], f"upstream-open {e['bug']}", e["artifact"], e["signature"], e["bug"])
    for a in not_replayed:
        add("not-replayed", "", "not replayed (interrupted)", a)
    out = list(groups.values())
    for g in out:
        g["artifacts"].sort()
        g["signatures"].sort()
    out.sort(key=lambda g: (_KINDS.index(g["kind"]), -g["count"], g["label"]))
    return out


def artifact_lines(r: dict) -> list[str]:
    """The screen lines of one job's artifacts: one line that counts them by group, then, for each group
    that fails the run or needs a look, a line with its signature(s) and one example path. Every path is in
    summary.json."""
    groups = r.get("artifact_groups")
    if not groups:
        return []
    total = sum(g["count"] for g in groups)
    lines = [f"  {total} artifact{'s' if total != 1 else ''}: "
             + ", ".join(f"{g['count']} {g['label']}" for g in groups)]
    for g in groups:
        if g["kind"] == "upstream-open":
            continue
        if g["kind"] == "not-replayed":
            lines.append(f"    not replayed (interrupted): {g['count']} artifact(s); `lifeline triage` sorts them, "
                         f"e.g. {g['artifacts'][0]}")
            continue
        what = {"new": "new crash", "known": f"known {g.get('bug')}", "clean": "did not reproduce on replay",
                "no-report": "no parsable report on replay (see the log)"}[g["kind"]]
        sigs = f": {' ; '.join(g['signatures'])}" if g["signatures"] else ""
        lines.append(f"    {what}{sigs} ({g['count']}), e.g. {g['artifacts'][0]}")
    return lines
