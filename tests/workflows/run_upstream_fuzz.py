#!/usr/bin/python3
"""Runs the steps of .github/workflows/upstream-fuzz.yml here, as GitHub would run them for a caller, and checks
what comes out: the exit status of each step, which steps run after a failure, the SARIF the code-scanning upload
would get, the folder the artifact upload would get, and the verdict. ctest: unit.workflows.upstream-fuzz-steps
(fuzz lane: the run that fuzzes needs its binaries).

The workflow is read as it is: its job's env, each step's `if:`, `env:` and `with:` (their `${{ }}` expressions
evaluated over the inputs, env, steps' outcomes and outputs, as far as this workflow uses them), and each `run:`
script, run as GitHub's `shell: bash` runs it (bash --noprofile --norc -eo pipefail) in a workspace whose path
holds a blank, with GITHUB_WORKSPACE, GITHUB_OUTPUT and GITHUB_STEP_SUMMARY. A `run:` script holding a `${{ }}`
fails the test: inputs must reach a script through env, never spliced into it. The `uses:` steps are stood in
for:
  - the checkout of the caller: a git repository made here whose ggml/ is, for the run that fuzzes, a link to the
    ggml tree the fuzz lane was built from (build/fuzz/upstream-ggml.txt: the pinned tree, normally), so that
    nothing is rebuilt, and for the other runs a small fake ggml tree;
  - the checkout of lifeline: a link to this checkout (the `repository` and `ref` it is given are checked);
  - upload-sarif: the file it names must exist and be SARIF 2.1.0 with what code scanning requires (a rule for
    each result, a level, a message, a location whose file is in the checkout it names); no JSON schema is
    installed here, so the check is of that subset, written out below;
  - upload-artifact: the folder it names is recorded.

Nothing here builds or installs: the steps run with `cmake`, `ninja`, `apt-get` and `npm` on their PATH replaced
by commands that fail saying so, so that a workflow which stopped passing its `build` input on would fail the test
instead of building the fuzz lane from inside its own ctest.

The runs:
  bad ggml-path     the caller's ggml-path names a folder without ggml: the fuzz step fails with one line (exit 2),
                    no SARIF is uploaded, the artifact upload and the verdict still run, and the verdict fails
  hostile targets   targets holding `$(touch pwned)`: refused with one line, and nothing is executed
  build off         the build off and a ggml tree the fuzz lane was not built from: refused with one line (exit 2)
  new crash         the fuzz step stood in for by a summary.json with a new crash and an upstream-open finding
                    and exit status 1 (what `lifeline fuzz` gives then; tests/cli/test_fuzz_job.py checks that it
                    does): SARIF with an error and a note at the functions' definitions, the verdict fails (1)
  upstream-open     the same with only the upstream-open finding and exit status 0: the verdict passes
  fuzz              every step for real, with the build off (the workflow's `build` input, which the fuzz step
                    passes on as --no-build) and 3 s of ggml_graph_topology: the verdict is lifeline fuzz's exit
                    status and agrees with the SARIF (0 exactly when no result is an error and every job finished)

Options: --workflow FILE (default: .github/workflows/upstream-fuzz.yml), --lifeline DIR (the lifeline checkout
the workflow's checkout of lifeline stands for, whose build/fuzz the run that fuzzes uses; default: this one).
Exit status 0 when every run holds, 1 when one does not, 77 with a `SKIPPED: <why>` line when the other runs hold
but the fuzz run cannot be made (the fuzz lane's ggml_graph_topology is not built, or the ggml tree it was built
from is gone), or python3-yaml is missing (python3-torch, which scripts/install-deps.sh installs, brings it).
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / ".github" / "workflows" / "upstream-fuzz.yml"  # --workflow
LIFELINE = ROOT                                                  # --lifeline
SKIP = 77
STEP_TIMEOUT_S = 240


class Failure(Exception):
    pass


# ---- the expressions of the workflow (`${{ }}` and `if:`), as far as it uses them ------------------------------

_TOKEN = re.compile(r"\s*(?:(?P<op>&&|\|\||==|!=|!|\(|\))|'(?P<str>(?:[^']|'')*)'|(?P<num>-?\d+(?:\.\d+)?)"
                    r"|(?P<name>[A-Za-z_][\w-]*(?:\.[A-Za-z_][\w-]*)*))")
STATUS_FUNCTIONS = ("always", "success", "failure", "cancelled")


class Expression:
    """One expression of GitHub's syntax: `||`, `&&`, `==`, `!=`, `!`, parentheses, 'strings', numbers, true,
    false, null, the status functions and context properties (a property that is not there is '')."""

    def __init__(self, text: str, context: dict, job_failed: bool):
        self.tokens, pos = [], 0
        while pos < len(text.rstrip()):
            m = _TOKEN.match(text, pos)
            if not m or m.end() == pos:
                raise Failure(f"the test cannot read the expression {text!r} at {text[pos:]!r}")
            self.tokens.append(m)
            pos = m.end()
        self.i, self.context, self.job_failed = 0, context, job_failed

    def value(self):
        v = self._or()
        if self.i != len(self.tokens):
            raise Failure(f"the test cannot read the expression: {self.tokens[self.i].group(0)!r} left over")
        return v

    def _peek(self, op):
        return self.i < len(self.tokens) and self.tokens[self.i].group("op") == op

    def _or(self):
        v = self._and()
        while self._peek("||"):
            self.i += 1
            w = self._and()
            v = v or w
        return v

    def _and(self):
        v = self._cmp()
        while self._peek("&&"):
            self.i += 1
            w = self._cmp()
            v = v and w
        return v

    def _cmp(self):
        v = self._unary()
        for op in ("==", "!="):
            if self._peek(op):
                self.i += 1
                w = self._unary()
                same = (v.lower() == w.lower()) if isinstance(v, str) and isinstance(w, str) else v == w
                return same if op == "==" else not same
        return v

    def _unary(self):
        if self._peek("!"):
            self.i += 1
            return not self._unary()
        return self._primary()

    def _primary(self):
        if self.i >= len(self.tokens):
            raise Failure("the test cannot read an expression that ends early")
        t = self.tokens[self.i]
        self.i += 1
        if t.group("op") == "(":
            v = self._or()
            if not self._peek(")"):
                raise Failure("an expression without its `)`")
            self.i += 1
            return v
        if t.group("str") is not None:
            return t.group("str").replace("''", "'")
        if t.group("num") is not None:
            return float(t.group("num")) if "." in t.group("num") else int(t.group("num"))
        name = t.group("name")
        if name in STATUS_FUNCTIONS and self._peek("("):
            self.i += 1
            if not self._peek(")"):
                raise Failure(f"{name}() takes no argument here")
            self.i += 1
            return {"always": True, "success": not self.job_failed, "failure": self.job_failed,
                    "cancelled": False}[name]
        if name in ("true", "false", "null"):
            return {"true": True, "false": False, "null": None}[name]
        node = self.context
        for part in name.split("."):
            node = node.get(part, "") if isinstance(node, dict) else ""
        return node


def text_of(value) -> str:
    if value is True or value is False:
        return "true" if value else "false"
    return "" if value is None else str(value)


def substitute(text, context: dict, job_failed: bool) -> str:
    return re.sub(r"\$\{\{(.*?)\}\}", lambda m: text_of(Expression(m.group(1), context, job_failed).value()),
                  str(text))


def condition(step: dict, context: dict, job_failed: bool) -> bool:
    """Whether the step runs: its `if:`, which without a status function is `success() && (...)`, as on GitHub."""
    expr = str(step.get("if", "success()"))
    m = re.fullmatch(r"\s*\$\{\{(.*)\}\}\s*", expr)
    expr = m.group(1) if m else expr
    if not any(re.search(rf"\b{f}\s*\(", expr) for f in STATUS_FUNCTIONS):
        expr = f"success() && ({expr})"
    return bool(Expression(expr, context, job_failed).value())


# ---- SARIF: what code scanning needs of a file ------------------------------------------------------------------

def check_sarif(path: Path, checkout: Path) -> tuple[dict, list[str]]:
    """The SARIF document at `path`, and what is wrong with it for code scanning (empty when nothing is)."""
    problems = []
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        return {}, [f"{path} is not JSON: {e}"]
    if doc.get("version") != "2.1.0" or not isinstance(doc.get("$schema"), str):
        problems.append("version is not 2.1.0, or there is no $schema")
    runs = doc.get("runs")
    if not isinstance(runs, list) or not runs:
        return doc, problems + ["no runs"]
    for r, run in enumerate(runs):
        driver = (run.get("tool") or {}).get("driver") or {}
        if not isinstance(driver.get("name"), str):
            problems.append(f"run {r}: tool.driver.name is not a string")
        rule_ids = [rule.get("id") for rule in driver.get("rules", [])]
        if len(set(rule_ids)) != len(rule_ids) or not all(isinstance(i, str) for i in rule_ids):
            problems.append(f"run {r}: rule ids are not distinct strings: {rule_ids}")
        for inv in run.get("invocations", []):
            if not isinstance(inv.get("executionSuccessful"), bool):
                problems.append(f"run {r}: an invocation without executionSuccessful")
            for n in inv.get("toolExecutionNotifications", []):
                if not isinstance((n.get("message") or {}).get("text"), str):
                    problems.append(f"run {r}: a notification without a message")
        for k, res in enumerate(run.get("results", [])):
            where = f"run {r} result {k}"
            if res.get("ruleId") not in rule_ids:
                problems.append(f"{where}: ruleId {res.get('ruleId')!r} is not a rule of the driver")
            if res.get("level") not in ("none", "note", "warning", "error"):
                problems.append(f"{where}: level {res.get('level')!r}")
            if not (res.get("message") or {}).get("text"):
                problems.append(f"{where}: no message text")
            locations = res.get("locations")
            if not isinstance(locations, list) or not locations:
                problems.append(f"{where}: no location (code scanning refuses the file)")
                continue
            for loc in locations:
                phys = loc.get("physicalLocation") or {}
                uri = (phys.get("artifactLocation") or {}).get("uri")
                line = (phys.get("region") or {}).get("startLine")
                if not isinstance(uri, str) or not isinstance(line, int) or line < 1:
                    problems.append(f"{where}: a location without a file and a line: {loc}")
                elif uri.startswith("/") or not (checkout / uri).is_file():
                    problems.append(f"{where}: {uri} is not a file of the checkout {checkout}")
    return doc, problems


def results(doc: dict) -> list[dict]:
    return [res for run in doc.get("runs", []) for res in run.get("results", [])]


def finished(doc: dict) -> bool:
    return all(inv.get("executionSuccessful") for run in doc.get("runs", []) for inv in run.get("invocations", []))


# ---- one run of the workflow ------------------------------------------------------------------------------------

def load_workflow() -> tuple[dict, dict]:
    import yaml
    wf = yaml.safe_load(WORKFLOW.read_text())
    on = wf.get("on", wf.get(True))  # YAML 1.1 reads the key `on` as true
    declared = on["workflow_call"]["inputs"]
    jobs = wf["jobs"]
    if len(jobs) != 1:
        raise Failure(f"the workflow has {len(jobs)} jobs; this test runs one")
    job = next(iter(jobs.values()))
    shell = ((job.get("defaults") or {}).get("run") or {}).get("shell")
    if shell != "bash":
        raise Failure(f"the job's run steps use shell {shell!r}; this test runs them as GitHub's bash")
    return declared, job


class Run:
    """One run of the job: what each step did, and what the stand-ins got."""

    def __init__(self, label: str, base: Path, inputs: dict, make_caller, fuzz_stand_in=None):
        self.label = label
        self.ws = base / f"{label} workspace"
        self.ws.mkdir()
        self.steps: list[dict] = []        # {name, id, ran, rc, output}
        self.sarif: dict | None = None     # what upload-sarif got
        self.sarif_problems: list[str] = []
        self.artifact: Path | None = None  # what upload-artifact got
        self.problems: list[str] = []
        declared, job = load_workflow()
        self.inputs = {}
        for name, spec in declared.items():
            if name in inputs:
                self.inputs[name] = inputs[name]
            elif "default" in spec:
                self.inputs[name] = spec["default"]
            elif spec.get("required"):
                raise Failure(f"{label}: the test gives no value for the required input {name}")
        unknown = set(inputs) - set(declared)
        if unknown:
            raise Failure(f"{label}: the workflow has no input {', '.join(sorted(unknown))}")
        self.make_caller, self.fuzz_stand_in = make_caller, fuzz_stand_in
        self.job = job
        self.failed = False
        self.context = {"inputs": self.inputs, "github": {"workspace": str(self.ws)}, "env": {}, "steps": {}}
        self.context["env"] = {k: substitute(v, self.context, False) for k, v in (job.get("env") or {}).items()}

    def step(self, name: str) -> dict:
        for s in self.steps:
            if s["name"] == name or s["id"] == name:
                return s
        raise Failure(f"{self.label}: no step {name!r}")

    def go(self) -> "Run":
        for i, step in enumerate(self.job["steps"]):
            name = step.get("name") or step.get("uses") or f"step {i}"
            record = {"name": name, "id": step.get("id"), "ran": False, "rc": None, "output": ""}
            self.steps.append(record)
            outcome = "skipped"
            if condition(step, self.context, self.failed):
                record["ran"] = True
                if "uses" in step:
                    rc = self.stand_in(step)
                elif step.get("id") == "fuzz" and self.fuzz_stand_in:
                    rc = self.fuzz_stand_in(self)
                    record["output"] = "(stood in for by the test)"
                else:
                    rc, record["output"], outputs = self.run_script(step)
                    if step.get("id"):
                        self.context["steps"].setdefault(step["id"], {})["outputs"] = outputs
                record["rc"] = rc
                outcome = "success" if rc == 0 else "failure"
                if rc != 0 and not step.get("continue-on-error"):
                    self.failed = True
            if step.get("id"):
                s = self.context["steps"].setdefault(step["id"], {})
                s.setdefault("outputs", {})
                s["outcome"] = outcome
                s["conclusion"] = "success" if outcome == "failure" and step.get("continue-on-error") else outcome
            shown = "skipped" if not record["ran"] else f"exit {record['rc']}"
            print(f"  {self.label}: {name}: {shown}")
        return self

    def run_script(self, step: dict) -> tuple[int, str, dict]:
        script = step["run"]
        if "${{" in script:
            raise Failure(f"step {step.get('name')!r}: its run script holds a ${{{{ }}}} expression: inputs must reach "
                          "it through env, never be spliced into the script")
        n = len(self.steps)
        files = self.ws.parent / f"{self.label} step {n}"
        files.mkdir()
        (files / "script.sh").write_text(script)
        output, summary = files / "output", files / "summary"
        output.touch()
        env = dict(os.environ, GITHUB_WORKSPACE=str(self.ws), GITHUB_OUTPUT=str(output),
                   GITHUB_STEP_SUMMARY=str(summary), CI="true", GITHUB_ACTIONS="true",
                   PATH=f"{no_build_path(self.ws.parent)}{os.pathsep}{os.environ.get('PATH', '')}")
        env.update(self.context["env"])
        env.update({k: substitute(v, self.context, self.failed) for k, v in (step.get("env") or {}).items()})
        try:
            p = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(files / "script.sh")],
                               cwd=self.ws, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               errors="replace", timeout=STEP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise Failure(f"{self.label}: step {step.get('name')!r} ran past {STEP_TIMEOUT_S} s")
        outputs = {}
        for line in output.read_text().splitlines():
            key, eq, value = line.partition("=")
            if eq:
                outputs[key] = value
        if summary.exists():
            self.step_summary = summary.read_text()
        return p.returncode, p.stdout, outputs

    def stand_in(self, step: dict) -> int:
        action = step["uses"].split("@")[0]
        with_ = {k: substitute(v, self.context, self.failed) for k, v in (step.get("with") or {}).items()}
        if action == "actions/checkout":
            dest = self.ws / with_.get("path", "")
            if dest == self.ws:
                raise Failure("a checkout into the workspace itself: the two checkouts would land on each other")
            if "repository" in with_:
                want = (self.inputs["lifeline-repository"], self.inputs["lifeline-ref"])
                if (with_["repository"], with_.get("ref")) != want:
                    self.problems.append(f"the lifeline checkout gets {with_['repository']}@{with_.get('ref')}, "
                                         f"not the inputs' {want[0]}@{want[1]}")
                dest.symlink_to(LIFELINE, target_is_directory=True)
            else:
                self.make_caller(dest)
            return 0
        if action == "github/codeql-action/upload-sarif":
            checkout = self.ws / with_.get("checkout_path", "")
            self.sarif, self.sarif_problems = check_sarif(self.ws / with_["sarif_file"], checkout)
            if checkout.resolve() != (self.ws / self.context["env"].get("UPSTREAM_DIR", "")).resolve():
                self.sarif_problems.append(f"checkout_path {with_.get('checkout_path')!r} is not the caller's checkout")
            return 1 if self.sarif_problems else 0
        if action == "actions/upload-artifact":
            if not with_.get("name"):
                self.problems.append("the artifact has no name")
            self.artifact = self.ws / with_["path"]
            return 0
        raise Failure(f"no stand-in for {step['uses']}: teach this test what it does")


def no_build_path(base: Path) -> Path:
    """A folder of commands that refuse to build or install, put first on the steps' PATH."""
    d = base / "no-build-bin"
    if not d.is_dir():
        d.mkdir()
        for name in ("cmake", "ninja", "apt-get", "npm"):
            (d / name).write_text(f"#!/bin/sh\necho 'run_upstream_fuzz.py: {name} called; this test never builds or "
                                  "installs' >&2\nexit 1\n")
            (d / name).chmod(0o755)
    return d


# ---- the caller's checkouts -------------------------------------------------------------------------------------

def git_repository(dest: Path, fill) -> None:
    dest.mkdir()
    fill(dest)
    if shutil.which("git"):
        # As actions/checkout leaves it: a repository at a commit (nothing in the workflow reads its history).
        env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t",
                   GIT_COMMITTER_EMAIL="t@t", GIT_CONFIG_NOSYSTEM="1", HOME=str(dest))
        for cmd in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "the caller"]):
            subprocess.run(["git", *cmd], cwd=dest, env=env, check=True, stdout=subprocess.DEVNULL)


FAKE_ALLOC = """// a stand-in for ggml's src/ggml-alloc.c: the functions the summaries below name
static void ggml_gallocr_init_tensor(int galloc,
                                     int tensor) {
}
"""
FAKE_OPS = """// a stand-in for ggml's src/ggml-cpu/ops.cpp
void ggml_compute_forward_rope(int params);

void ggml_compute_forward_rope(
        int params) {
}
"""


def fake_ggml(dest: Path) -> None:
    tree = dest / "ggml"
    (tree / "src" / "ggml-cpu").mkdir(parents=True)
    (tree / "CMakeLists.txt").write_text("set(GGML_VERSION_MAJOR 0)\nset(GGML_VERSION_MINOR 99)\n"
                                         "set(GGML_VERSION_PATCH 0)\n")
    (tree / "src" / "ggml-alloc.c").write_text(FAKE_ALLOC)
    (tree / "src" / "ggml-cpu" / "ops.cpp").write_text(FAKE_OPS)
    (dest / "docs").mkdir()
    (dest / "docs" / "README.md").write_text("not ggml\n")


def line_of(path: Path, text: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if line == text)


# ---- the runs ---------------------------------------------------------------------------------------------------

def expect(cond: bool, what: str, problems: list[str]) -> None:
    print(f"{'ok  ' if cond else 'FAIL'} {what}")
    if not cond:
        problems.append(what)


def lifeline_ref() -> str:
    p = subprocess.run(["git", "-C", str(LIFELINE), "rev-parse", "HEAD"], capture_output=True, text=True) \
        if shutil.which("git") else None
    head = p.stdout.strip() if p and p.returncode == 0 else ""
    return head if re.fullmatch(r"[0-9a-f]{40}", head) else "0" * 40  # setup checks the form only


def base_inputs(**more) -> dict:
    return {"lifeline-repository": "example/lifeline", "lifeline-ref": lifeline_ref(), "build": False, **more}


def run_bad_inputs(base: Path, problems: list[str]) -> None:
    r = Run("bad ggml-path", base, base_inputs(**{"ggml-path": "docs"}),
            lambda d: git_repository(d, fake_ggml)).go()
    fuzz = r.step("fuzz")
    said = fuzz["output"].strip()
    expect(fuzz["rc"] == 2 and len(said.splitlines()) == 1 and "is not a ggml tree" in said,
           f"bad ggml-path: the fuzz step fails with one line and exit 2 (got {fuzz['rc']}: {said!r})", problems)
    expect(r.step("report")["ran"] and r.sarif is None,
           "bad ggml-path: the report step runs after the failure, and no SARIF is uploaded", problems)
    expect(r.artifact is not None, "bad ggml-path: the artifact upload still runs", problems)
    verdict = r.steps[-1]
    expect(verdict["ran"] and verdict["rc"] == 1 and "recorded no exit status" in verdict["output"] and r.failed,
           f"bad ggml-path: the verdict runs and fails the job (exit {verdict['rc']})", problems)

    r = Run("hostile targets", base, base_inputs(targets="ggml_graph_topology $(touch pwned) `touch pwned`"),
            lambda d: git_repository(d, fake_ggml)).go()
    fuzz = r.step("fuzz")
    expect(fuzz["rc"] == 2 and "is not a target name" in fuzz["output"],
           f"hostile targets: refused with exit 2 (got {fuzz['rc']}: {fuzz['output'].strip()!r})", problems)
    pwned = [str(p) for p in base.rglob("pwned")]
    expect(not pwned, f"hostile targets: nothing executed (found: {pwned})", problems)
    problems += [f"{r.label}: {p}" for p in r.problems]

    r = Run("build off", base, base_inputs(), lambda d: git_repository(d, fake_ggml)).go()
    fuzz = r.step("fuzz")
    said = fuzz["output"].strip()
    expect(fuzz["rc"] == 2 and "the build is off but" in said and len(said.splitlines()) == 1,
           f"build off: a ggml tree the fuzz lane was not built from is refused with one line and exit 2 (got "
           f"{fuzz['rc']}: {said[-300:]!r})", problems)
    problems += [f"{r.label}: {p}" for p in r.problems]


def summary_doc(tree: Path, out: Path, new_crash: bool) -> list:
    arts = out / "ggml_graph_topology" / "artifacts"
    job = {"target": "ggml_graph_topology", "lane": "fuzz", "execs": 5000, "crashes": 1 if new_crash else 0,
           "interrupted": False, "not_replayed": [], "crash_artifacts": [],
           "upstream_open_artifacts": [{"artifact": str(arts / "crash-open"),
                                        "bug": "ggml-gallocr-view-node-owned-record",
                                        "signature": "assert | ggml_gallocr_init_tensor / ggml_gallocr_alloc_graph",
                                        "short": "assert in ggml_gallocr_init_tensor"}],
           "upstream": {"ggml": {"version": "0.99.0", "source": str(tree), "pinned": False}}}
    if new_crash:
        job["crash_artifacts"] = [{"artifact": str(arts / "crash-new"), "short": "heap-buffer-overflow in rope_f32",
                                   "signature": "heap-buffer-overflow | rope_f32 / ggml_compute_forward_rope"}]
    return [job]


def run_stood_in(base: Path, problems: list[str], new_crash: bool) -> None:
    label = "new crash" if new_crash else "upstream-open"

    def fuzz_stand_in(run: Run) -> int:
        out = run.ws / run.context["env"]["FUZZ_OUT"]
        tree = (run.ws / run.context["env"]["UPSTREAM_DIR"] / "ggml").resolve()
        (out / "ggml_graph_topology" / "artifacts").mkdir(parents=True)
        (out / "summary.json").write_text(json.dumps(summary_doc(tree, out, new_crash)))
        (out / "fuzz-exit-status").write_text("1\n" if new_crash else "0\n")
        return 0

    r = Run(label, base, base_inputs(), lambda d: git_repository(d, fake_ggml), fuzz_stand_in).go()
    expect(not r.sarif_problems, f"{label}: the SARIF is what code scanning takes ({'; '.join(r.sarif_problems)})",
           problems)
    found = {(res["level"], res["ruleId"],
              res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
              res["locations"][0]["physicalLocation"]["region"]["startLine"]) for res in results(r.sarif or {})}
    tree = r.ws / "upstream" / "ggml"
    want = {("note", "lifeline/assert", "ggml/src/ggml-alloc.c",
             line_of(tree / "src" / "ggml-alloc.c", "static void ggml_gallocr_init_tensor(int galloc,"))}
    if new_crash:
        want.add(("error", "lifeline/heap-buffer-overflow", "ggml/src/ggml-cpu/ops.cpp",
                  line_of(tree / "src" / "ggml-cpu" / "ops.cpp", "void ggml_compute_forward_rope(")))
    expect(found == want, f"{label}: SARIF results {sorted(found)} (want {sorted(want)})", problems)
    verdict = r.steps[-1]
    rc = 1 if new_crash else 0
    expect(verdict["ran"] and verdict["rc"] == rc and r.failed == bool(rc),
           f"{label}: the verdict exits {rc} and the job {'fails' if rc else 'passes'} "
           f"(got {verdict['rc']}: {verdict['output'].strip().splitlines()[-1:]})", problems)
    if new_crash:
        expect("rope_f32" in verdict["output"], f"{label}: the verdict's log names the new crash", problems)
    expect("# lifeline fuzz" in getattr(r, "step_summary", ""), f"{label}: the step summary has the table", problems)
    expect(r.artifact is not None and all((r.artifact / f).is_file() for f in ("summary.json", "lifeline.sarif")),
           f"{label}: the artifact gets the fuzz output with summary.json and the SARIF", problems)
    problems += [f"{r.label}: {p}" for p in r.problems]


def fuzz_run_prerequisite() -> tuple[Path | None, str]:
    """The ggml tree the fuzz lane was built from, or None and why the fuzz run cannot be made."""
    lane = LIFELINE / "build" / "fuzz"
    binary = lane / "targets" / "ggml_graph_topology"
    if not (binary.is_file() and os.access(binary, os.X_OK)):
        return None, f"{binary} is not built (the fuzz lane builds it when the pinned ggml is fetched)"
    try:
        source = next(line[7:] for line in (lane / "upstream-ggml.txt").read_text().splitlines()
                      if line.startswith("source "))
    except (OSError, StopIteration):
        return None, f"{lane / 'upstream-ggml.txt'} names no ggml tree"
    tree = Path(source)
    if not (tree / "src" / "ggml-alloc.c").is_file():
        return None, f"the ggml tree the fuzz lane was built from, {tree}, is gone (scripts/fetch-ggml.sh fetches it)"
    return tree, ""


def run_fuzz(base: Path, tree: Path, problems: list[str]) -> None:
    def caller(dest: Path) -> None:
        git_repository(dest, lambda d: (d / "ggml").symlink_to(tree, target_is_directory=True))

    r = Run("fuzz", base, base_inputs(**{"fuzz-seconds": 3}), caller).go()
    out = r.ws / r.context["env"]["FUZZ_OUT"]
    fuzz = r.step("fuzz")
    expect(fuzz["rc"] == 0 and (out / "fuzz-exit-status").is_file(),
           f"fuzz: the fuzz step records lifeline fuzz's exit status (step exit {fuzz['rc']})", problems)
    if fuzz["rc"] != 0:
        print(fuzz["output"])
        return
    status = int((out / "fuzz-exit-status").read_text())
    try:
        jobs = json.loads((out / "summary.json").read_text())
    except (OSError, ValueError):
        jobs = []
    execs = jobs[0].get("execs", 0) if jobs else 0
    expect([j.get("target") for j in jobs] == ["ggml_graph_topology"] and execs > 0,
           f"fuzz: summary.json has the ggml_graph_topology job, which ran {execs} inputs", problems)
    expect(status in (0, 1), f"fuzz: lifeline fuzz exited 0 or 1 (got {status})", problems)
    expect(not r.sarif_problems and r.sarif is not None,
           "fuzz: SARIF uploaded, and what code scanning takes "
           f"({'; '.join(r.sarif_problems) if r.sarif is not None else 'nothing was uploaded'})", problems)
    errors = [res for res in results(r.sarif or {}) if res["level"] == "error"]
    expect((status == 0) == (not errors and finished(r.sarif or {})),
           f"fuzz: exit status {status} agrees with the SARIF ({len(errors)} error result(s), every job finished: "
           f"{finished(r.sarif or {})})", problems)
    verdict = r.steps[-1]
    expect(verdict["ran"] and verdict["rc"] == status and r.failed == (status != 0),
           f"fuzz: the verdict exits with lifeline fuzz's status {status} (got {verdict['rc']})", problems)
    expect(r.artifact is not None and (r.artifact / "ggml_graph_topology" / "fuzz.log").is_file(),
           "fuzz: the artifact gets the job's folder with its log", problems)
    if status != 0 or problems:
        print(fuzz["output"][-3000:])
        print(verdict["output"][-3000:])
    problems += [f"{r.label}: {p}" for p in r.problems]


def main(argv: list[str]) -> int:
    global WORKFLOW, LIFELINE
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workflow", type=Path, default=WORKFLOW)
    ap.add_argument("--lifeline", type=Path, default=LIFELINE)
    args = ap.parse_args(argv)
    WORKFLOW, LIFELINE = args.workflow.resolve(), args.lifeline.resolve()
    if importlib.util.find_spec("yaml") is None:
        print("SKIPPED: python3-yaml is not installed (python3-torch, from scripts/install-deps.sh, brings it)")
        return SKIP
    problems: list[str] = []
    tree, why = None, "it was not tried"
    # A path with a blank, and every file under one temporary folder.
    with tempfile.TemporaryDirectory(prefix="lifeline upstream-fuzz ") as tmp:
        base = Path(tmp)
        try:
            run_bad_inputs(base, problems)
            run_stood_in(base, problems, new_crash=True)
            run_stood_in(base, problems, new_crash=False)
            tree, why = fuzz_run_prerequisite()
            if tree is not None:
                run_fuzz(base, tree, problems)
        except Failure as e:
            problems.append(str(e))
    if problems:
        for p in problems:
            print(f"FAIL: {p}")
        return 1
    if tree is None:
        print(f"SKIPPED: the runs without fuzzing hold, but the run that fuzzes cannot be made: {why}")
        return SKIP
    print("PASS: the workflow's steps run as the contract says, with the verdict from lifeline fuzz's exit status")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
