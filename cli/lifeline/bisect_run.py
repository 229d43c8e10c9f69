"""The bisection itself, for `lifeline bisect`: the scratch clone that shares the upstream checkout's objects and
leaves it untouched, the step script `git bisect run` calls there, and git bisect run followed (a line per step,
stopped after too many skips, stopped whole on an interrupt) until it names the first bad commit or the range
it narrowed."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path
from typing import Optional

from .bisect_proc import commit_info, git
from .bisect_step import SKIP, STEP_MARK

# What the scratch clone checks out: the files at the top and ggml's build inputs (or all of ggml/), not examples,
# tests, models or data (faster checkouts; a snapshot without some data file still checks out).
SPARSE = ["/*", "!/*/", "/cmake/", "/include/", "/src/", "/ggml/"]


def scratch_clone(repo: Path, scratch: Path) -> Path:
    """scratch/ggml: a clone of `repo` that shares its objects (`git clone --shared`), with nothing checked out;
    a checkout there takes only the SPARSE paths."""
    tree = scratch / "ggml"
    git(scratch, "clone", "--quiet", "--shared", "--no-checkout", str(repo), str(tree))
    git(tree, "sparse-checkout", "set", "--no-cone", *SPARSE)
    return tree


def write_step_script(scratch: Path, cli_dir: Path, cfg_path: Path) -> Path:
    """scratch/step.py: `git bisect run`'s command, bisect_step.step_main on the configuration in cfg_path."""
    step_script = scratch / "step.py"
    step_script.write_text("import sys\nsys.path.insert(0, %r)\nfrom lifeline.bisect_step import step_main\n"
                           "sys.exit(step_main(%r))\n" % (str(cli_dir), str(cfg_path)))
    return step_script


def stop(proc: subprocess.Popen) -> None:
    """Ends git bisect run and everything under it: SIGTERM to its process group (git, the step, whose own
    children it kills as it goes: CMake, the compilers, the reproducer), then SIGKILL to what is left after 10 s;
    returns once the group is empty, so nothing of the bisection outlives this process."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            proc.poll()  # reaps git itself, the group's leader
            try:
                os.killpg(proc.pid, 0)
            except ProcessLookupError:
                proc.wait()
                return
            time.sleep(0.05)
    proc.wait()


def follow(proc: subprocess.Popen, scratch: Path, log_dir: Path, started: str, checks: int,
           max_skips: int) -> tuple[str, bool]:
    """(git bisect run's output, whether it was stopped at `max_skips` skipped steps). The output goes to
    git-bisect.log after `git bisect start`'s; one line is printed per step as each ends, with git's estimate of
    the steps left after it."""
    lines, left, stopped = [], _left(started), False
    with open(log_dir / "git-bisect.log", "w", encoding="utf-8", errors="replace") as log:
        log.write(started)
        for raw in proc.stdout:
            line = raw.decode("utf-8", "replace")
            log.write(line)
            log.flush()
            lines.append(line)
            if _left(line) is not None:
                left = _left(line)
            if line.startswith(STEP_MARK):
                steps = read_steps(scratch)
                s = steps[-1]
                print(f"step {len(steps) - checks}: {s['commit'][:12]} ({s['date']}) {s['what']}: {s['why']}"
                      + (f" [{s['build']}]" if s["build"] else "") + _left_text(left),
                      flush=True)
                left = None
                if sum(1 for x in steps[checks:] if x["code"] == SKIP) >= max_skips:
                    # git tests every commit of a skipped stretch before it gives up: stop here instead.
                    stopped = True
                    stop(proc)
                    break
            elif line.startswith("lifeline bisect:"):
                print(line.rstrip(), flush=True)
    proc.wait()
    return "".join(lines), stopped


def _left_text(left: Optional[str]) -> str:
    if not left:
        return ""
    return " (the last, by git's estimate)" if left.startswith("0 ") else f" (about {left} left)"


def _left(text: str) -> Optional[str]:
    """git's estimate of the steps after the one it has just checked out, "3 steps"."""
    m = re.search(r"Bisecting: \d+ revisions? left to test after this \(roughly (\d+ steps?)\)", text)
    return m.group(1) if m else None


def read_steps(scratch: Path) -> list:
    """The steps run so far, the checks of --bad and --good first: bisect_step.run_step's records."""
    path = scratch / "steps.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.is_file() else []


def bracket(tree: Path) -> dict:
    """What a bisection stopped early has narrowed the range to: every commit that is an ancestor of the oldest bad
    one and of no good one (newest first, the bad one included)."""
    bad = git(tree, "rev-parse", "refs/bisect/bad").strip()
    goods = git(tree, "for-each-ref", "--format=%(objectname)", "refs/bisect/good-*").split()
    return {"certain": False, "stopped": True, "candidates": _infos(tree, [bad, "--not", *goods])}


def _infos(tree: Path, revs: list) -> list:
    """commit_info of each commit `git log revs` lists, in one call, newest first."""
    out = git(tree, "log", "--format=%H%x09%as%x09%s", *revs, "--")
    return [dict(zip(("commit", "date", "subject"), line.split("\t", 2))) for line in out.splitlines() if line]


def outcome(output: str, tree: Path) -> Optional[dict]:
    """{"certain": True, "first": info} or {"certain": False, "candidates": [info...]} from git bisect run's output;
    None when it stopped otherwise (a step that failed)."""
    m = re.search(r"^([0-9a-f]{40}) is the first bad commit", output, re.M)
    if m:
        return {"certain": True, "first": commit_info(tree, m.group(1))}
    if "only 'skip'ped commits left" in output:
        block = output.split("could be any of:", 1)[-1].split("We cannot bisect more", 1)[0]
        hashes = re.findall(r"^([0-9a-f]{40})", block, re.M)
        return {"certain": False, "candidates": _infos(tree, ["--no-walk=sorted", *hashes])}
    return None
