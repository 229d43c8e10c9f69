"""repro/<bug-id>/bug.json: loading, validation, and the two-way check run by ctest.

bug.json (see README "Adding a reproducer"):
  id           the bug id; equals the folder name and is what LIFELINE_REINTRODUCE takes
  title        one line
  upstream     list of references (issues, commits)
  target       the fuzz target whose binary replays the inputs
  reproducers  list of {"input": FILE, "expect": {LANE: SIGNATURE, ...}, ...}
SIGNATURE is {"type": CRASH_TYPE, "frame": FUNCTION} and/or {"type": "lifeline-check", "message": TEXT}.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from . import crash as crashmod

LANES = ("asan", "tsan", "lsan", "valgrind", "fuzz")
RUN_TIMEOUT_S = 300


@dataclass
class Reproducer:
    input: Path
    expect: dict  # lane -> signature


@dataclass
class Bug:
    id: str
    title: str
    target: str
    reproducers: list
    path: Path


class BugJsonError(Exception):
    pass


def load(repro_dir: Path) -> Bug:
    """Reads and validates repro_dir/bug.json; raises BugJsonError naming the file and the problem."""
    path = repro_dir / "bug.json"
    where = str(path)
    if not path.is_file():
        raise BugJsonError(f"{where}: missing (every repro/<bug-id>/ folder needs a bug.json)")
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as e:
        raise BugJsonError(f"{where}: not UTF-8 text ({e})")
    except json.JSONDecodeError as e:
        raise BugJsonError(f"{where}: invalid JSON at line {e.lineno} column {e.colno}: {e.msg}")
    if not isinstance(doc, dict):
        raise BugJsonError(f"{where}: the top level must be an object")

    def need(obj, key, typ, ctx):
        if key not in obj:
            raise BugJsonError(f"{where}: {ctx}missing '{key}'")
        if not isinstance(obj[key], typ) or (typ is str and not obj[key].strip()):
            raise BugJsonError(f"{where}: {ctx}'{key}' must be a non-empty {typ.__name__}")
        return obj[key]

    bug_id = need(doc, "id", str, "")
    if bug_id != repro_dir.name:
        raise BugJsonError(f"{where}: id '{bug_id}' does not match the folder name '{repro_dir.name}'")
    title = need(doc, "title", str, "")
    upstream = need(doc, "upstream", list, "")
    if not all(isinstance(u, str) for u in upstream):
        raise BugJsonError(f"{where}: 'upstream' must be a list of strings")
    target = need(doc, "target", str, "")
    if not re.fullmatch(r"[a-z0-9_]+", target):
        raise BugJsonError(f"{where}: target '{target}' is not a target name (targets/<name>.cc)")
    items = need(doc, "reproducers", list, "")
    if not items:
        raise BugJsonError(f"{where}: 'reproducers' is empty")
    reproducers = []
    for i, item in enumerate(items):
        ctx = f"reproducers[{i}]: "
        if not isinstance(item, dict):
            raise BugJsonError(f"{where}: {ctx}must be an object")
        name = need(item, "input", str, ctx)
        if "/" in name or name in (".", ".."):
            raise BugJsonError(f"{where}: {ctx}input '{name}' must be a file name inside {repro_dir}")
        if not (repro_dir / name).is_file():
            raise BugJsonError(f"{where}: {ctx}input file '{name}' does not exist")
        expect = need(item, "expect", dict, ctx)
        if not expect:
            raise BugJsonError(f"{where}: {ctx}'expect' lists no lane")
        for lane, sig in expect.items():
            lctx = f"{ctx}expect.{lane}: "
            if lane not in LANES:
                raise BugJsonError(f"{where}: {lctx}unknown lane (known: {', '.join(LANES)})")
            if not isinstance(sig, dict):
                raise BugJsonError(f"{where}: {lctx}must be an object with 'type' and 'frame' or 'message'")
            need(sig, "type", str, lctx)
            if "frame" not in sig and "message" not in sig:
                raise BugJsonError(f"{where}: {lctx}needs 'frame' (a function in the crash state) or 'message'")
            for key in ("frame", "message"):
                if key in sig:
                    need(sig, key, str, lctx)
        reproducers.append(Reproducer(repro_dir / name, expect))
    return Bug(bug_id, title, target, reproducers, repro_dir)


def run_input(binary: str, input_path: Path, launcher: list, reintroduce: Optional[str]) -> tuple[int, str]:
    env = dict(os.environ)
    env.pop("LIFELINE_REINTRODUCE", None)
    if reintroduce:
        env["LIFELINE_REINTRODUCE"] = reintroduce
    try:
        proc = subprocess.run(launcher + [binary, str(input_path)], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode("utf-8", "replace")
        return -1, out + f"\n[repro-check: timed out after {RUN_TIMEOUT_S} s]\n"
    return proc.returncode, proc.stdout.decode("utf-8", "replace")


def _tail(text: str, n: int = 60) -> str:
    return "\n".join("    | " + line for line in text.splitlines()[-n:])


def check(bug: Bug, lane: str, mode: str, binary: str, launcher: list) -> bool:
    """The two-way test. fixed: every input exits 0 with no report. reintroduced: every input that lists
    `lane` fails with its expected signature. Prints one line per input; returns overall success."""
    if not Path(binary).is_file():
        print(f"FAIL {bug.id}: target binary {binary} does not exist; is '{bug.target}' a fuzz target "
              f"(targets/{bug.target}.cc) registered with lifeline_add_fuzz_target?")
        return False
    ok_all = True
    ran = 0
    for rep in bug.reproducers:
        if mode == "reintroduced" and lane not in rep.expect:
            continue
        ran += 1
        rc, out = run_input(binary, rep.input, launcher, bug.id if mode == "reintroduced" else None)
        found = crashmod.parse(out)
        if mode == "fixed":
            if rc == 0 and found is None:
                print(f"PASS {rep.input.name}: clean on the fixed code")
                continue
            why = f"reported {found.signature}" if found else f"exited with {rc} without a parsable report"
            print(f"FAIL {rep.input.name}: fixed code {why}\n{_tail(out)}")
            ok_all = False
        else:
            expect = rep.expect[lane]
            ok, why = crashmod.matches(found, expect)
            if ok and rc == 0:
                ok, why = False, "the report was printed but the process exited 0 (findings must be fatal)"
            if ok:
                print(f"PASS {rep.input.name}: {found.signature}")
                continue
            print(f"FAIL {rep.input.name}: LIFELINE_REINTRODUCE={bug.id} must give {expect}; {why}\n{_tail(out)}")
            ok_all = False
    if ran == 0:
        print(f"FAIL {bug.id}: no reproducer lists lane '{lane}'")
        return False
    return ok_all
