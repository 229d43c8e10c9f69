"""Crash triage, known-bug matching, promotion to reproducers, and reports.

triage:   each crash input is replayed REPLAYS times on its target; a crash is flaky unless every replay
          crashes with the same signature (crash type + top-3 frames). Crashes are deduplicated by that
          signature and matched against the signatures repro/*/bug.json expect ("known: <bug-id>", or
          "upstream-open: <bug-id>" when that bug's status says upstream has not fixed it).
promote:  a crash that reproduces is minimized with libFuzzer (-minimize_crash=1), kept only if the
          minimized input still gives the same signature, and written to repro/<id>/ with its bug.json.
report:   triage results as JSON, SARIF 2.1.0 (GitHub code scanning) or Markdown.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from . import crash as crashmod
from . import repro

REPLAYS = 3
REPLAY_TIMEOUT_S = 120


class TriageError(Exception):
    """Bad input to triage/promote: one line naming the problem (the CLI exits 2)."""


@dataclass
class Result:
    input: str
    target: str
    reintroduce: Optional[str]
    signature: Optional[str] = None
    crash: Optional[dict] = None       # crashmod.Crash.to_json() of the first replay
    replays: list = field(default_factory=list)  # signature (or None) of each replay
    flaky: bool = False
    known: Optional[str] = None        # bug id whose bug.json expects this signature
    duplicate_of: Optional[str] = None # input of the first result with the same signature
    known_status: Optional[str] = None # that bug's status: "fixed" or "upstream-open"

    @property
    def status(self) -> str:
        if self.signature is None:
            return "no-crash"
        if not self.known:
            return "new"
        return "upstream-open" if self.known_status == "upstream-open" else "known"

    @property
    def label(self) -> str:
        """"known: <id>", "upstream-open: <id>", "new" or "no-crash"."""
        return f"{self.status}: {self.known}" if self.known and self.signature else self.status

    def to_json(self) -> dict:
        d = dict(self.__dict__)
        d["status"] = self.status
        return d


def run_once(binary: Path, data_file: Path, reintroduce: Optional[str], extra=()) -> tuple[int, str]:
    env = dict(os.environ)
    env.pop("LIFELINE_REINTRODUCE", None)
    if reintroduce:
        env["LIFELINE_REINTRODUCE"] = reintroduce
    # An argument list, never a shell: crash file names come from the fuzzer.
    try:
        proc = subprocess.run([str(binary), *extra, str(data_file)], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, timeout=REPLAY_TIMEOUT_S)
    except subprocess.TimeoutExpired as e:
        return -1, (e.stdout or b"").decode("utf-8", "replace") + "\n[timed out]\n"
    return proc.returncode, proc.stdout.decode("utf-8", "replace")


def known_signatures(root: Path, target: str) -> list[tuple[str, dict, str]]:
    """(bug id, expected signature, bug status) of every repro/*/bug.json of `target`, from its fuzz and asan
    expectations. An upstream_variant's expectations are left out: they hold only on its patched build."""
    out = []
    for d in sorted((root / "repro").iterdir()) if (root / "repro").is_dir() else []:
        if not d.is_dir():
            continue
        try:
            bug = repro.load(d)
        except repro.BugJsonError:
            continue  # repro.<id>.bug-json reports it
        if bug.target != target:
            continue
        for rep in bug.reproducers:
            for lane in ("fuzz", "asan"):
                if lane in rep.expect:
                    out.append((bug.id, rep.expect[lane], bug.status))
    return out


def target_of(crash_file: Path) -> Optional[str]:
    """fuzz-out/<target>/artifacts/<file> -> <target>."""
    parts = crash_file.resolve().parts
    if len(parts) >= 3 and parts[-2] == "artifacts":
        return parts[-3]
    return None


def job_reintroduce(crash_file: Path) -> Optional[str]:
    """The LIFELINE_REINTRODUCE of the fuzz job that wrote this artifact (fuzz-out/<target>/job.json)."""
    job = crash_file.resolve().parent.parent / "job.json"
    try:
        return json.loads(job.read_text()).get("reintroduce")
    except (OSError, ValueError):
        return None


def triage_one(root: Path, binary: Path, crash_file: Path, target: str, reintroduce: Optional[str]) -> Result:
    r = Result(str(crash_file), target, reintroduce)
    first = None
    for _ in range(REPLAYS):
        rc, out = run_once(binary, crash_file, reintroduce)
        c = crashmod.parse(out) if rc != 0 else None
        r.replays.append(c.signature if c else None)
        if first is None and c is not None:
            first = c
    if first is None:
        return r
    r.signature = first.signature
    r.crash = first.to_json()
    r.flaky = any(s != first.signature for s in r.replays)
    r.known, r.known_status = match_known(first, known_signatures(root, target))
    return r


def match_known(c: Optional[crashmod.Crash], known: list) -> tuple[Optional[str], Optional[str]]:
    """(bug id, status) of the first of known_signatures() that `c` matches, or (None, None)."""
    for bug_id, expect, status in known:
        if crashmod.matches(c, expect)[0]:
            return bug_id, status
    return None, None


def dedup(results: list[Result]) -> None:
    seen: dict[str, str] = {}
    for r in results:
        if r.signature is None:
            continue
        if r.signature in seen:
            r.duplicate_of = seen[r.signature]
        else:
            seen[r.signature] = r.input


# ---- promote ------------------------------------------------------------------------------------------

def signature_for_bug_json(c: dict) -> dict:
    if c["type"] == "lifeline-check" and c.get("message"):
        # The longest run of the check's message without digits: op indexes, object ids, counts and
        # values vary between inputs that hit the same check; its wording does not.
        chunks = [x.strip(" :,()-") for x in re.split(r"[#0-9]", c["message"])]
        text = max(chunks, key=len)
        if len(text) >= 8:
            return {"type": c["type"], "message": text}
    return {"type": c["type"], "frame": c["state"][0]}


def minimize(binary: Path, crash_file: Path, reintroduce: Optional[str], work: Path, runs: int) -> Path:
    out = work / "minimized"
    env = dict(os.environ)
    env.pop("LIFELINE_REINTRODUCE", None)
    if reintroduce:
        env["LIFELINE_REINTRODUCE"] = reintroduce
    subprocess.run([str(binary), "-minimize_crash=1", f"-runs={runs}", f"-exact_artifact_path={out}",
                    "-timeout=25", str(crash_file)], env=env, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, timeout=600)
    return out


def write_repro(root: Path, bug_id: str, target: str, input_bytes: bytes, crash: dict, lanes: list[str],
                title: Optional[str], source: str) -> Path:
    d = root / "repro" / bug_id
    d.mkdir(parents=True)
    name = "minimized-crash"
    (d / name).write_bytes(input_bytes)
    sig = signature_for_bug_json(crash)
    doc = {
        "id": bug_id,
        "title": title or f"{crash['type']} found by fuzzing {target}" + (
            f": {sig['message']}" if "message" in sig else f" in {sig['frame']}"),
        "upstream": [],
        "target": target,
        "notes": f"Promoted by `lifeline promote` from {source}; crash state: {' / '.join(crash['state'])}.",
        "reproducers": [{"input": name, "expect": {lane: sig for lane in lanes}}],
    }
    (d / "bug.json").write_text(json.dumps(doc, indent=2) + "\n")
    return d


# ---- reports ------------------------------------------------------------------------------------------

def _rule_id(crash_type: str) -> str:
    return "lifeline/" + crash_type


def sarif(results: list[Result], root: Path) -> dict:
    crashes = [r for r in results if r.signature and not r.duplicate_of]
    rules = {}
    for r in crashes:
        t = r.crash["type"]
        rules.setdefault(t, {"id": _rule_id(t), "name": t.replace("-", " ").title().replace(" ", ""),
                             "shortDescription": {"text": f"{t} found by fuzzing"},
                             "helpUri": "https://github.com/google/sanitizers/wiki",
                             "properties": {"tags": ["security", "memory-safety", "fuzzing"]}})
    out_results = []
    for r in crashes:
        c = r.crash
        loc = c.get("location") or ""
        m = re.match(r"(.+?):(\d+)(?::(\d+))?$", loc)
        location = {}
        if m:
            path = Path(m.group(1))
            try:
                uri = str(path.resolve().relative_to(root))
            except ValueError:
                uri = str(path)
            region = {"startLine": int(m.group(2))}
            if m.group(3):
                region["startColumn"] = int(m.group(3))
            location = {"physicalLocation": {"artifactLocation": {"uri": uri, "uriBaseId": "%SRCROOT%"},
                                             "region": region}}
        text = f"{c['type']} in {c['state'][0] if c['state'] else '?'}"
        if c.get("message"):
            text += f": {c['message']}"
        known = {"known": f", known bug {r.known}", "upstream-open": f", upstream-open bug {r.known}"}
        text += f" (target {r.target}, input {Path(r.input).name}" + known.get(r.status, ", new") + ")"
        res = {"ruleId": _rule_id(c["type"]), "level": "error", "message": {"text": text},
               "partialFingerprints": {"crashState": r.signature},
               "properties": {"target": r.target, "input": r.input, "flaky": r.flaky, "known": r.known,
                              "status": r.status}}
        if location:
            res["locations"] = [location]
        out_results.append(res)
    return {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{"tool": {"driver": {"name": "lifeline", "version": "0",
                                      "rules": list(rules.values())}},
                  "results": out_results}],
    }


def markdown(results: list[Result]) -> str:
    lines = ["# lifeline triage", "", "| input | target | status | crash | flaky | duplicate of |",
             "|---|---|---|---|---|---|"]
    for r in results:
        lines.append(f"| `{Path(r.input).name}` | {r.target} | {r.label} | {r.signature or ''} | "
                     f"{'yes' if r.flaky else 'no'} | {Path(r.duplicate_of).name if r.duplicate_of else ''} |")
    distinct = sorted({r.signature for r in results if r.signature})
    upstream_open = sum(1 for r in results if r.status == "upstream-open" and not r.duplicate_of)
    lines += ["", f"{len(results)} input(s), {len(distinct)} distinct crash(es), "
                  f"{sum(1 for r in results if r.status == 'new' and not r.duplicate_of)} new"
                  + (f", {upstream_open} upstream-open." if upstream_open else ".")]
    return "\n".join(lines) + "\n"
