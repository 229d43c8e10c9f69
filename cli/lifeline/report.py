"""`lifeline report`: triage results (`lifeline triage --json`) or a fuzz job's summary (the `summary.json` of
`lifeline fuzz --out DIR`) as JSON, SARIF 2.1.0 (GitHub code scanning) or Markdown.

SARIF from triage: one rule per crash type, one result per distinct crash at its top frame. SARIF from a fuzz
summary: one result per target and distinct signature, level `error` for what fails the job (a new crash, a known
bug crashing again, an artifact that did not crash again or left no report, a leak at exit) and `note` for a known
upstream-open finding (shown in code scanning, failing nothing); a job that was interrupted or ran no inputs makes
the run's invocation unsuccessful, with a notification saying why."""
from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from .paths import ROOT
from .triage import Result, summary
from .usage import UsageError, input_file


def _rule_id(crash_type: str) -> str:
    return "lifeline/" + crash_type


def _rule(name: str, text: str) -> dict:
    return {"id": _rule_id(name), "name": name.replace("-", " ").title().replace(" ", ""),
            "shortDescription": {"text": text}, "helpUri": "https://github.com/google/sanitizers/wiki",
            "properties": {"tags": ["security", "memory-safety", "fuzzing"]}}


def _sarif_log(rules: dict, results: list, **run_extra) -> dict:
    return {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{"tool": {"driver": {"name": "lifeline", "version": "0", "rules": list(rules.values())}},
                  **run_extra, "results": results}],
    }


def sarif(results: list[Result], root: Path) -> dict:
    crashes = [r for r in results if r.signature and not r.duplicate_of]
    rules = {}
    for r in crashes:
        t = r.crash["type"]
        rules.setdefault(t, _rule(t, f"{t} found by fuzzing"))
    out_results = []
    for r in crashes:
        c = r.crash
        loc = c.get("location") or ""
        m = re.match(r"(.+?):(\d{1,9})(?::(\d{1,9}))?$", loc)  # a line number, not any run of digits
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
    return _sarif_log(rules, out_results)


def markdown(results: list[Result]) -> str:
    lines = ["# lifeline triage", "", "| input | target | status | crash | flaky | duplicate of |",
             "|---|---|---|---|---|---|"]
    for r in results:
        lines.append(f"| `{Path(r.input).name}` | {r.target} | {r.label} | {r.signature or ''} | "
                     f"{'yes' if r.flaky else 'no'} | {Path(r.duplicate_of).name if r.duplicate_of else ''} |")
    lines += ["", summary(results) + "."]
    return "\n".join(lines) + "\n"


# What each field of a triage row (triage.Result.to_json) may hold; None stands for JSON null.
_ROW = {"input": (str,), "target": (str,), "reintroduce": (str, None), "signature": (str, None),
        "crash": (dict, None), "replays": (list,), "flaky": (bool,), "known": (str, None),
        "duplicate_of": (str, None), "known_status": (str, None), "status": (str,)}
_REQUIRED = ("input", "target")
# The fields of a row's crash (crash.Crash.to_json) that the reports read.
_CRASH = {"type": (str,), "state": (list,), "message": (str, None), "location": (str, None)}


def _kinds(types) -> str:
    names = {str: "a string", list: "a list", dict: "an object", bool: "true or false", int: "a whole number",
             None: "null"}
    return " or ".join(names[t] for t in types)


def _check(obj: dict, spec: dict, required, where: str, others: bool = False) -> None:
    """Each field of `obj` holds what `spec` allows, and `required` are there; a field `spec` does not name is
    refused, unless `others`."""
    for key in required:
        if key not in obj:
            raise ValueError(f"{where}: missing '{key}'")
    for key, value in obj.items():
        if key not in spec:
            if others:
                continue
            raise ValueError(f"{where}: unknown field '{key}'")
        types = spec[key]
        if not any(value is None if t is None else type(value) is t for t in types):
            raise ValueError(f"{where}: '{key}' must be {_kinds(types)}")


def _objects(doc, name, not_a_list: str, spec: dict, required, others: bool):
    """The objects of the list `doc`, each checked against `spec`, with where each is (`name(i)`: "row 3")."""
    if not isinstance(doc, list):
        raise ValueError(not_a_list)
    for i, row in enumerate(doc):
        where = name(i)
        if not isinstance(row, dict):
            raise ValueError(f"{where} must be an object")
        _check(row, spec, required, where, others=others)
        yield where, row


def results_from_json(doc) -> list[Result]:
    """Triage rows (`lifeline triage --json`) as Results; ValueError names the first row and field of the
    wrong shape, so every report can read every field it uses."""
    results = []
    for where, row in _objects(doc, lambda i: f"row {i}", "the top level must be a list of rows", _ROW, _REQUIRED,
                               False):
        crash = row.get("crash")
        if crash is not None:
            _check({k: v for k, v in crash.items() if k in _CRASH}, _CRASH, ("type", "state"), f"{where}: crash")
            if not all(isinstance(f, str) for f in crash["state"]):
                raise ValueError(f"{where}: crash: 'state' must be a list of strings")
        elif row.get("signature"):
            raise ValueError(f"{where}: a row with a signature needs its 'crash' object")
        results.append(Result(**{k: v for k, v in row.items() if k != "status"}))
    return results


# ---- a fuzz job's summary (`lifeline fuzz --out DIR` writes DIR/summary.json) ---------------------------------

# The fields of a summary's job (one per target: fuzz_libfuzzer.py libfuzzer_job and fuzz_afl.py afl_job, plus
# "engine" and "upstream") that the reports read, and what each may hold. Other fields are left alone: summary.json
# is the record of a job and gains fields with fuzz.py, and a report must not refuse a newer one over a field it
# never reads.
_JOB = {"target": (str,), "engine": (str,), "execs": (int,), "crashes": (int,), "interrupted": (bool,),
        "ended_early": (bool,), "crash_artifacts": (list,), "upstream_open_artifacts": (list,),
        "not_replayed": (list,), "leak_at_exit": (dict,), "upstream": (dict,), "log": (str,)}
# crash_artifacts: {artifact, signature, short, bug?}, or for an artifact without a report on replay
# {artifact, signature, replay: "clean" or "no-report"}; upstream_open_artifacts: {artifact, signature, short, bug}.
_CRASH_ENTRY = {"artifact": (str,), "signature": (str,), "short": (str,), "bug": (str,), "replay": (str,)}
_OPEN_ENTRY = {"artifact": (str,), "signature": (str,), "short": (str,), "bug": (str,)}
_LEAK = {"signature": (str,), "short": (str,), "log": (str,), "bug": (str,), "upstream_open": (bool,),
         "exit_unit": (str,)}
_UPSTREAM = {"ggml": (dict,)}
_GGML = {"version": (str,), "source": (str,), "pinned": (bool,)}

# A finding's status: what it is, in the order the reports list them. Every status fails the job except
# upstream-open (fuzz.py counts those apart).
_STATUSES = ("new", "known", "no-report", "did-not-reproduce", "not-replayed", "upstream-open")
# The rules of the statuses that have no crash type of their own.
_STATUS_RULES = {"did-not-reproduce": "an input that crashed while fuzzing did not crash again on replay",
                 "no-report": "an input crashed on replay without a report lifeline can parse",
                 "not-replayed": "crashes the fuzz job counted but did not replay"}


@dataclass
class Finding:
    """One distinct signature of one target's job, and the artifacts that gave it."""
    target: str
    signature: str
    status: str                      # one of _STATUSES
    short: Optional[str] = None      # crash type and top frame
    bug: Optional[str] = None        # the known bug it matched
    artifacts: list = field(default_factory=list)
    leak_log: Optional[str] = None   # a leak LeakSanitizer reported when the job's process exited: its log
    count: int = 0                   # not-replayed: how many crashes

    @property
    def level(self) -> str:
        return "note" if self.status == "upstream-open" else "error"

    def to_json(self) -> dict:
        d = dict(self.__dict__)
        d["level"] = self.level
        return d


@dataclass
class Job:
    """One target's fuzz job, as the reports need it."""
    target: str
    execs: Optional[int]
    interrupted: bool
    not_replayed: list
    ggml: Optional[dict]             # upstream ggml the lane built: version, source (and pinned)
    findings: list
    ended_early: bool = False        # ended before its time without being stopped by hand

    @property
    def problem(self) -> Optional[str]:
        """Why the job is not a finished run, or None."""
        if self.interrupted:
            n = len(self.not_replayed)
            return "interrupted" + (f"; {n} artifact(s) not replayed, so neither counted as crashes nor matched to "
                                    "known findings (`lifeline triage` sorts them)" if n else "")
        if self.execs == 0:
            return "ran no inputs, so it tested nothing"
        if self.ended_early:
            return "ended before the time asked without being stopped by hand, so it tested less than asked"
        return None

    def to_json(self) -> dict:
        return {"target": self.target, "execs": self.execs, "interrupted": self.interrupted,
                "not_replayed": self.not_replayed, "problem": self.problem, "ggml": self.ggml,
                "findings": [f.to_json() for f in self.findings]}


def _entries(row: dict, key: str, spec: dict, required, where: str):
    """The objects of the list row[key] (already checked to be a list), with where each is."""
    yield from _objects(row.get(key, []), lambda j: f"{where}: {key}[{j}]", f"{where}: '{key}' must be a list",
                        spec, required, True)


def jobs_from_json(doc) -> list[Job]:
    """The jobs of a fuzz summary (`lifeline fuzz --out DIR`: DIR/summary.json), each with its findings grouped by
    signature; ValueError names the first job and field of the wrong shape."""
    jobs = []
    for where, row in _objects(doc, lambda i: f"job {i}", "the top level must be a list of jobs, one per target",
                               _JOB, ("target",), True):
        target = row["target"]
        groups: dict[tuple, Finding] = {}

        def add(status, e, **extra):
            f = groups.setdefault((status, e.get("bug"), e["signature"], "leak_log" in extra),
                                  Finding(target, e["signature"], status, e.get("short"), e.get("bug"), **extra))
            if "artifact" in e:
                f.artifacts.append(e["artifact"])

        failing = 0
        for w, e in _entries(row, "crash_artifacts", _CRASH_ENTRY, ("artifact", "signature"), where):
            if "replay" in e:
                if e["replay"] not in ("clean", "no-report"):
                    raise ValueError(f"{w}: 'replay' must be \"clean\" or \"no-report\"")
                add("did-not-reproduce" if e["replay"] == "clean" else "no-report", e)
            elif "short" not in e:
                raise ValueError(f"{w}: missing 'short' (or 'replay', for an artifact replayed without a report)")
            else:
                add("known" if e.get("bug") else "new", e)
            failing += 1
        for w, e in _entries(row, "upstream_open_artifacts", _OPEN_ENTRY, ("artifact", "signature", "short", "bug"),
                             where):
            add("upstream-open", e)
        leak = row.get("leak_at_exit")
        if leak is not None:
            _check(leak, _LEAK, ("signature",), f"{where}: leak_at_exit", others=True)
            status = "upstream-open" if leak.get("upstream_open") else "known" if leak.get("bug") else "new"
            add(status, leak, leak_log=leak.get("log"))
            failing += status != "upstream-open"
        # Crashes the job counted beyond those it lists (an AFL++ job replays none): shown, so that the report
        # never passes what the job failed.
        if row.get("crashes", 0) > failing:
            n = row["crashes"] - failing
            groups[("not-replayed",)] = Finding(target, f"({n} crash(es) counted, not replayed)", "not-replayed",
                                                count=n)
        not_replayed = row.get("not_replayed", [])
        for j, a in enumerate(not_replayed):
            if not isinstance(a, str):
                raise ValueError(f"{where}: not_replayed[{j}] must be a string")
        ggml = None
        if "upstream" in row:
            _check(row["upstream"], _UPSTREAM, (), f"{where}: upstream", others=True)
            if "ggml" in row["upstream"]:
                ggml = row["upstream"]["ggml"]
                _check(ggml, _GGML, ("version", "source"), f"{where}: upstream: ggml", others=True)
        findings = sorted(groups.values(), key=lambda f: (_STATUSES.index(f.status), f.signature))
        for f in findings:
            f.artifacts.sort()
        jobs.append(Job(target, row.get("execs"), row.get("interrupted", False), not_replayed, ggml, findings,
                        row.get("ended_early", False)))
    return jobs


_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
_AFTER_PARAMETERS = re.compile(r"\s*(?:(?:const|noexcept|override|final)\b\s*)*\{")


def _definition_line(text: str, name: str) -> Optional[int]:
    """The line where C or C++ `text` defines the function `name` at file scope: a line that starts (unindented, not
    a preprocessor line or a comment) with a declaration of `name` whose parameter list is followed by a body."""
    for m in re.finditer(r"^(?![\s#/*])[^\n;{}]*?\b" + re.escape(name) + r"[ \t]*\(", text, re.M):
        depth, i = 1, m.end()
        while depth and i < len(text):
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            i += 1
        if _AFTER_PARAMETERS.match(text, i):
            return text.count("\n", 0, m.start()) + 1
    return None


class _Locator:
    """Where code scanning shows a finding of a fuzz summary: at the definition of the first function of its crash
    state found in the ggml tree the job built (its src/ and include/, sources before headers, in name order); else
    at that tree's CMakeLists.txt; else, for a target without upstream code, at the target's source in lifeline.
    GitHub refuses a result without a location. Paths are relative to `root`, the checkout code scanning reads."""

    def __init__(self, root: Path):
        self.root = root
        self.files: dict[Path, list] = {}
        self.texts: dict[Path, str] = {}

    def _sources(self, tree: Path) -> list:
        if tree not in self.files:
            found = [p for d in (tree / "src", tree / "include") if d.is_dir() for p in d.rglob("*")
                     if p.suffix in (".c", ".cc", ".cpp", ".h", ".hpp") and p.is_file()]
            self.files[tree] = sorted(found, key=lambda p: (p.suffix in (".h", ".hpp"), str(p)))
        return self.files[tree]

    def _text(self, p: Path) -> str:
        if p not in self.texts:
            try:
                self.texts[p] = p.read_text(errors="replace")
            except OSError:
                self.texts[p] = ""
        return self.texts[p]

    def uri(self, path: Path) -> str:
        """`path` relative to the checkout, also when its ggml tree is reached through a link there (ggml/ or the
        checkout itself, where --ggml-source looks); absolute when it is outside."""
        try:
            real = path.resolve()
        except (OSError, ValueError):  # a NUL in a path from the summary
            return str(path)
        for d in (self.root, self.root / "ggml"):
            try:
                return (d.relative_to(self.root) / real.relative_to(d.resolve())).as_posix()
            except (ValueError, OSError):
                continue
        return str(real)

    def _place(self, path: Path, line: int) -> dict:
        return {"physicalLocation": {"artifactLocation": {"uri": self.uri(path), "uriBaseId": "%SRCROOT%"},
                                     "region": {"startLine": line}}}

    def locate(self, f: Finding, job: Job) -> dict:
        tree = Path(job.ggml["source"]) if job.ggml else None
        if tree is not None and tree.is_dir():
            _, bar, frames = f.signature.partition(" | ")
            for name in frames.split(" / ") if bar else []:
                if not _IDENTIFIER.fullmatch(name):
                    continue  # a C++ method or template: not looked for
                for p in self._sources(tree):
                    text = self._text(p)
                    line = _definition_line(text, name) if name in text else None
                    if line:
                        return self._place(p, line)
            if (tree / "CMakeLists.txt").is_file():
                return self._place(tree / "CMakeLists.txt", 1)
        return self._place(ROOT / "targets" / f"{job.target}.cc", 1)


def _finding_text(f: Finding, job: Job) -> str:
    n = len(f.artifacts)
    inputs = f"{n} input(s), e.g. {Path(f.artifacts[0]).name}" if n else ""
    what = f.short or f.signature
    if f.leak_log:
        where = f"a leak at the exit of the {f.target} job (LeakSanitizer over the whole run; no input carries it; " \
                f"see {f.leak_log})"
    else:
        where = f"in {f.target} ({inputs})"
    text = {"new": f"{what}: new crash {where}",
            "known": f"{what}: known bug {f.bug} crashes again {where}",
            "upstream-open": f"{what}: known upstream-open finding {f.bug} {where}; not counted as a crash",
            "did-not-reproduce": f"{n} input(s) crashed {f.target} while fuzzing but not on replay "
                                 f"(e.g. {Path(f.artifacts[0]).name if n else '?'})",
            "no-report": f"{n} input(s) crashed {f.target} on replay without a report lifeline can parse "
                         f"(e.g. {Path(f.artifacts[0]).name if n else '?'}; see the job's log)",
            "not-replayed": f"{f.target}: {f.count} crash(es) counted by the job and not replayed (`lifeline "
                            "triage` sorts its artifacts)"}[f.status]
    if f.signature != what and f.status in ("new", "known", "upstream-open"):
        text += f"; signature {f.signature}"
    if job.ggml:
        text += f" [ggml {job.ggml['version']}]"
    return text


def sarif_from_jobs(jobs: list[Job], root: Path) -> dict:
    """SARIF 2.1.0 of a fuzz summary: see the module's docstring."""
    rules, results = {}, []
    locator = _Locator(root)
    for job in jobs:
        for f in job.findings:
            if f.status in _STATUS_RULES:
                rule = f.status
                rules.setdefault(rule, _rule(rule, _STATUS_RULES[rule]))
            else:
                rule = f.signature.partition(" | ")[0] if " | " in f.signature else "crash"
                rules.setdefault(rule, _rule(rule, f"{rule} found by fuzzing"))
            results.append({"ruleId": _rule_id(rule), "level": f.level, "message": {"text": _finding_text(f, job)},
                            "locations": [locator.locate(f, job)],
                            "partialFingerprints": {"crashState": f.signature, "target": f.target},
                            "properties": {"target": f.target, "status": f.status, "known": f.bug,
                                           "artifacts": f.artifacts}})
    problems = [{"level": "error", "message": {"text": f"{job.target}: {job.problem}"}} for job in jobs if job.problem]
    invocation = {"executionSuccessful": not problems}
    if problems:
        invocation["toolExecutionNotifications"] = problems
    ggml = []
    for job in jobs:
        if job.ggml and job.ggml not in ggml:
            ggml.append(job.ggml)
    return _sarif_log(rules, results, invocations=[invocation],
                      properties={"targets": [j.target for j in jobs], "ggml": ggml})


def _cell(text: str) -> str:
    """Text in a Markdown table cell: a `|` would end it (GitHub honours `\\|` even inside a code span)."""
    return text.replace("|", "\\|").replace("\n", " ")


def markdown_from_jobs(jobs: list[Job]) -> str:
    lines = ["# lifeline fuzz", "", "| target | inputs run | failing | upstream-open | job |", "|---|---|---|---|---|"]
    for job in jobs:
        failing = sum(1 for f in job.findings if f.level == "error")
        notes = sum(1 for f in job.findings if f.level == "note")
        lines.append(f"| {_cell(job.target)} | {job.execs if job.execs is not None else '?'} | {failing} | {notes} | "
                     f"{_cell(job.problem or 'finished')} |")
    findings = [(job, f) for job in jobs for f in job.findings]
    if findings:
        lines += ["", "| target | finding | signature | inputs |", "|---|---|---|---|"]
        for job, f in findings:
            what = f"{f.status} {f.bug}" if f.bug else f.status
            if f.leak_log:
                inputs = "leak at exit (no input)"
            elif f.artifacts:
                inputs = f"{len(f.artifacts)}, e.g. `{_cell(Path(f.artifacts[0]).name)}`"
            else:
                inputs = str(f.count or "")
            lines.append(f"| {_cell(job.target)} | {_cell(what)} | `{_cell(f.signature)}` | {inputs} |")
    shown = []
    for job in jobs:
        g = job.ggml
        if g and g not in shown:
            shown.append(g)
            lines += ["", f"upstream ggml {g['version']}" + (" (the pinned version)" if g.get("pinned") else "")
                      + f": {g['source']}"]
    failing = sum(1 for _, f in findings if f.level == "error")
    notes = len(findings) - failing
    stopped = [j.target for j in jobs if j.problem]
    lines += ["", f"{len(jobs)} job(s): {failing} finding(s) that fail the job, {notes} known upstream-open (not "
                  "counted)" + (f"; not a finished run: {', '.join(stopped)}" if stopped else "") + "."]
    return "\n".join(lines) + "\n"


def _load(path: Path, src: str, what: str, parse):
    try:
        return parse(json.loads(path.read_text()))
    except OSError as e:
        raise UsageError(f"lifeline report: {what} '{src}' cannot be read ({e.strerror})")
    except (ValueError, RecursionError) as e:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        raise UsageError(f"lifeline report: '{src}' is not {what} ({e})")


def cmd_report(args) -> int:
    root = ROOT
    if args.source_root is not None:
        root = Path(args.source_root)
        if not root.is_dir():
            raise UsageError(f"lifeline report: --source-root '{args.source_root}' is not a directory")
        root = root.resolve()
    if args.summary is not None:
        src = args.summary
        path = input_file("report", "fuzz summary", src,
                          "does not exist (`lifeline fuzz ... --out DIR` writes DIR/summary.json)")
        jobs = _load(path, src, "a fuzz summary", jobs_from_json)
        if args.format == "json":
            text = json.dumps([j.to_json() for j in jobs], indent=2) + "\n"
        elif args.format == "sarif":
            text = json.dumps(sarif_from_jobs(jobs, root), indent=2) + "\n"
        else:
            text = markdown_from_jobs(jobs)
    else:
        src = args.triage
        path = input_file("report", "triage results", src, "do not exist (run `lifeline triage ... --json FILE`)")
        results = _load(path, src, "triage output", results_from_json)
        if args.format == "json":
            text = json.dumps([r.to_json() for r in results], indent=2) + "\n"
        elif args.format == "sarif":
            text = json.dumps(sarif(results, root), indent=2) + "\n"
        else:
            text = markdown(results)
    if args.output:
        try:
            Path(args.output).write_text(text)
        except OSError as e:
            raise UsageError(f"lifeline report: cannot write {args.output} ({e.strerror})")
        print(f"report: {args.output}")
    else:
        sys.stdout.write(text)
    return 0
