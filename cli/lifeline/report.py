"""`lifeline report`: triage results (`lifeline triage --json`) as JSON, SARIF 2.1.0 (GitHub code scanning:
one rule per crash type, one result per distinct crash at its top frame) or Markdown."""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from .paths import ROOT
from .triage import Result, summary
from .usage import UsageError, input_file


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
    names = {str: "a string", list: "a list", dict: "an object", bool: "true or false", None: "null"}
    return " or ".join(names[t] for t in types)


def _check(obj: dict, spec: dict, required, where: str) -> None:
    for key in required:
        if key not in obj:
            raise ValueError(f"{where}: missing '{key}'")
    for key, value in obj.items():
        if key not in spec:
            raise ValueError(f"{where}: unknown field '{key}'")
        types = spec[key]
        if not any(value is None if t is None else type(value) is t for t in types):
            raise ValueError(f"{where}: '{key}' must be {_kinds(types)}")


def results_from_json(doc) -> list[Result]:
    """Triage rows (`lifeline triage --json`) as Results; ValueError names the first row and field of the
    wrong shape, so every report can read every field it uses."""
    if not isinstance(doc, list):
        raise ValueError("the top level must be a list of rows")
    results = []
    for i, row in enumerate(doc):
        where = f"row {i}"
        if not isinstance(row, dict):
            raise ValueError(f"{where} must be an object")
        _check(row, _ROW, _REQUIRED, where)
        crash = row.get("crash")
        if crash is not None:
            _check({k: v for k, v in crash.items() if k in _CRASH}, _CRASH, ("type", "state"), f"{where}: crash")
            if not all(isinstance(f, str) for f in crash["state"]):
                raise ValueError(f"{where}: crash: 'state' must be a list of strings")
        elif row.get("signature"):
            raise ValueError(f"{where}: a row with a signature needs its 'crash' object")
        results.append(Result(**{k: v for k, v in row.items() if k != "status"}))
    return results


def cmd_report(args) -> int:
    src = args.triage
    path = input_file("report", "triage results", src, "do not exist (run `lifeline triage ... --json FILE`)")
    try:
        results = results_from_json(json.loads(path.read_text()))
    except OSError as e:
        raise UsageError(f"lifeline report: triage results '{src}' cannot be read ({e.strerror})")
    except (ValueError, RecursionError) as e:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        raise UsageError(f"lifeline report: '{src}' is not triage output ({e})")
    if args.format == "json":
        text = json.dumps([r.to_json() for r in results], indent=2) + "\n"
    elif args.format == "sarif":
        text = json.dumps(sarif(results, ROOT), indent=2) + "\n"
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
