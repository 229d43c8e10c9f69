"""`lifeline bisect <bug-id> --upstream-repo DIR [--good REV] [--bad REV] [--input NAME] [--source FILE.c]
[--signature JSON] [--max-skips N] [--jobs N] [--record]`: the first upstream commit where a finding's exported
reproducer fails (ClusterFuzz's regression range, syzbot's cause bisection).

The reproducer is the finding's standalone C file for reproducer input --input (default: the first with a
signature) as export.py writes it today: `lifeline export-source` for that input (with an export.py without that
verb, `lifeline export <bug-id>` into a temporary folder); or, with --source, a C file of one's own. Its signature
and environment are the input's, as `lifeline export-check` takes them (export.py `signature_for`, `run_env`);
--signature replaces the signature (e.g. an assert whose wording changed over the years).

DIR is a git checkout of ggml (ggml-org/ggml, or a llama.cpp/whisper.cpp one with ggml in ggml/); it is never
changed: the bisection runs in a scratch clone that shares its objects (`git clone --shared` into a temporary
folder, removed at the end, on an error and on Ctrl-C or SIGTERM), so DIR's HEAD, work tree, index and refs stay
as they were, and a read-only or bare checkout works. The clone checks out only the top-level files and cmake/,
include/, src/ (or ggml/). `git bisect run` checks out each commit there and runs one step, which
  1. compiles the C file against that commit's public headers (include/, before 2024-06-26 include/ggml/), a
     function they do not declare being an error,
  2. builds ggml-base and ggml-cpu (before ggml had them: ggml) with ggml's CMake, static, ASan+UBSan as the
     asan lane builds ggml (-O1 -gline-tables-only -fdebug-info-for-profiling -fno-omit-frame-pointer -UNDEBUG;
     UBSan fatal except pointer-overflow, which the reproducers' suppression file needs recoverable),
     GGML_OPENMP=OFF, GGML_NATIVE=OFF, no tests or examples. Builds are cached in build/bisect/cache/, keyed
     by what a build reads (the git trees of CMakeLists.txt, cmake/, include/ and src/), the flags and the
     compiler, so commits that change only docs, examples or tests share a build and a second bisection reuses
     the first one's; a build that fails is remembered; one build at a time per machine (a lock),
  3. links the file with those libraries, runs it in the reproducer's environment and parses its output with
     the project's crash parser (crash.py `parse`, `matches`):
       exit 0   good: it runs clean
       exit 1   bad: it fails with the signature
       exit 125 skip: the file does not compile or link there, ggml does not build, or the run fails otherwise
                (another signature, an exit without a report, a timeout); the step line says which.
Before bisecting, --bad must reproduce and --good must run clean, else an error says what each gave.

--bad defaults to DIR's HEAD. --good defaults to the first commit whose src/CMakeLists.txt builds ggml-base as a
library beside ggml-cpu (ggml-org/ggml e33cebed, "cmake : restore CMakeLists.txt (llama/10256)", 2024-11-15): the
libraries a reproducer links, with ggml-cpu.h as it has been since (it appeared 40 commits before, 2024-11-03).
Where that commit cannot be tested (a sync from llama.cpp lands in pieces, some of which do not build), the next
commits towards --bad are tried, up to 8.

Prints one line per step (commit, date, verdict, why, the build cached or made, git's estimate of the steps
left), then the first bad commit (hash, author date, subject), the range, the steps, how many were skipped and the
wall time. When skipped commits border it, git cannot tell which is first: the candidates are listed and the
result is uncertain. git tests every commit of a stretch that cannot be tested before it says so; after
--max-skips skipped steps (default 50) the bisection stops with the range it has narrowed, also uncertain.
Logs: build/bisect/<bug-id>/ (one file per commit tested; git-bisect.log). With --record, a certain result goes
into repro/<bug-id>/bug.json as "introduced_by": {"commit", "subject", "date", "repo", "range": [good, bad],
"export": <input>} (not with --source or --signature: the record names the export and signature it holds for);
when the export already fails at the default --good, that is recorded too, as {"before": <that commit>, "subject",
"date", "repo", "range", "export"}: the finding is older than any commit the export builds against (exit 0).

Exit status: 0 a first bad commit was found; 1 none was (--bad does not reproduce, --good does, or the result is
uncertain); 2 bad arguments; 130 interrupted.

This module is the verb: its arguments checked, the finding's reproducer and signature chosen, the ends of the
range checked, the bisection run from start to end. The parts: bisect_run.py (the scratch clone, git bisect run
followed), bisect_step.py (one step), bisect_cache.py (ggml's builds), bisect_report.py (the result lines, the
record in bug.json), bisect_proc.py (how each command runs).
"""
from __future__ import annotations

import inspect
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional

from . import export as exportmod
from . import repro
from .bisect_proc import GIT_TIMEOUT_S, TIMED_OUT, commit_info, git, sh
from .bisect_report import count, record, report, repo_name, short
from .bisect_run import bracket, follow, outcome, read_steps, scratch_clone, stop, write_step_script
from .bisect_step import BAD, OK, RUN_TIMEOUT_S, SKIP, Verdict, classify, raise_interrupt, run_step
from .bugs import BUG_ID
from .paths import ROOT
from .shellsafe import is_safe
from .usage import UsageError

# The names callers read here: main.py's verb and parser, and the verdict of one run (tests/cli/test_bisect.py).
__all__ = ["add_parser", "classify", "cmd_bisect", "TIMED_OUT"]

BASE_LIBRARY_MARK = "add_library(ggml-base"  # in src/CMakeLists.txt since the libraries split (the default --good)
DEFAULT_GOOD_TRIES = 8
MAX_SKIPS = 50    # skipped steps before a bisection stops with the range it has narrowed (--max-skips)
PLAIN_PATH = re.compile(r"/[A-Za-z0-9._+/-]*")  # shellsafe's plain names, and `+` (fetch's /work/.mirror/owner+name)


def _fail(msg: str) -> UsageError:
    return UsageError(f"lifeline bisect: {msg}")


def _plain_path(flag: str, value: str) -> Path:
    p = Path(value).absolute()
    if not PLAIN_PATH.fullmatch(str(p)):
        raise _fail(f"{flag} '{value}': only plain paths (letters, digits, . _ + / -) are taken: no blanks or shell "
                    "characters, which CMake, the compilers and a shell would read otherwise")
    return p


def _load(bug_id: str) -> tuple[repro.Bug, object]:
    root = ROOT / "repro"
    if not BUG_ID.fullmatch(bug_id) or not (root / bug_id).is_dir():
        raise _fail(f"unknown bug id '{bug_id}' (no folder {root / bug_id}); see `lifeline list`")
    try:
        bug = repro.load(root / bug_id)
    except repro.BugJsonError as e:
        raise _fail(str(e))
    if bug.status == "fixed":
        raise _fail(f"bug '{bug_id}' is modelled in lifeline's own code (status 'fixed'); bisect takes findings in "
                    "upstream code")
    exporter = exportmod.EXPORTERS.get(bug.target)
    c_targets = sorted(t for t, e in exportmod.EXPORTERS.items() if e.language == "C")
    if exporter is None or exporter.language != "C":
        what = "no exporter" if exporter is None else f"a {exporter.language} exporter, not C"
        raise _fail(f"target '{bug.target}' of bug '{bug_id}' has {what}; bisect runs C reproducers on ggml "
                    f"(targets with a C exporter: {', '.join(c_targets)})")
    extra = sorted(set(re.findall(r"-l(ggml-[\w-]+)", getattr(exporter, "build", ""))) - {"ggml-base", "ggml-cpu"})
    if extra:
        raise _fail(f"the exports of target '{bug.target}' link {', '.join(extra)}, and bisect builds ggml-base and "
                    "ggml-cpu only (the CPU backend)")
    return bug, exporter


def _reproducer(bug: repro.Bug, exporter, name: Optional[str]) -> tuple[repro.Reproducer, dict]:
    lane = getattr(exporter, "lane", "asan")
    usable = [r for r in bug.reproducers if exportmod.signature_for(r, lane)]
    names = ", ".join(r.input.name for r in usable) or "none"
    if name is None:
        if not usable:
            raise _fail(f"bug '{bug.id}' has no reproducer with a signature to bisect with")
        rep = usable[0]
    else:
        rep = next((r for r in usable if r.input.name == name), None)
        if rep is None:
            raise _fail(f"bug '{bug.id}' has no reproducer input '{name}' with a signature (inputs: {names})")
    sig = exportmod.signature_for(rep, lane)
    if sig.get("type") in ("lifeline-check", "lifeline-precondition"):
        raise _fail(f"{rep.input.name}: its signature is lifeline's own oracle ({sig['type']}), which a C reproducer "
                    "does not have; give the reproducer an \"export\" signature in bug.json")
    return rep, sig


def _signature_arg(text: str) -> dict:
    """--signature: a signature as bug.json writes one, {"type": T, "frame": F, "message": M} (frame and message
    optional)."""
    try:
        sig = json.loads(text)
    except ValueError as e:
        raise _fail(f"--signature is not JSON ({e.msg}): give {{\"type\": ..., \"frame\": ...}}")
    if not isinstance(sig, dict) or not isinstance(sig.get("type"), str) or not sig["type"] or any(
            k not in ("type", "frame", "message") or not isinstance(v, str) for k, v in sig.items()):
        raise _fail("--signature must be an object with a \"type\" and optionally \"frame\" and \"message\" (strings)")
    return sig


def _run_env(rep, exporter) -> dict:
    params = inspect.signature(exportmod.run_env).parameters
    return exportmod.run_env(rep, exporter) if len(params) > 1 else exportmod.run_env(rep)


def _resolve(repo: Path, flag: str, rev: str) -> str:
    if rev.startswith("-") or not rev.strip():
        raise _fail(f"{flag} '{rev}' is not a revision")
    rc, out = sh(["git", "-C", repo, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}"])
    if rc != 0:
        raise _fail(f"{flag} '{rev}' does not resolve to a commit in {repo}")
    return out.strip()


def default_goods(repo: Path, bad: str) -> list[str]:
    """The default --good and the commits tried after it when it cannot be tested: the first commit (an ancestor
    of `bad`) whose src/CMakeLists.txt builds ggml-base as a library (ggml-org/ggml e33cebed, 2024-11-15, "cmake :
    restore CMakeLists.txt (llama/10256)"), then the next DEFAULT_GOOD_TRIES - 1 commits on the way to `bad` (a
    sync from llama.cpp lands in pieces, and a piece may not build)."""
    rc, out = sh(["git", "-C", repo, "log", "--format=%H", "--reverse", "-S", BASE_LIBRARY_MARK, bad, "--",
                  "src/CMakeLists.txt", "ggml/src/CMakeLists.txt"], timeout=GIT_TIMEOUT_S)
    if rc != 0 or not out.split() or out.split()[0] == bad:
        return []
    first = out.split()[0]
    rc, later = sh(["git", "-C", repo, "rev-list", "--reverse", "--first-parent", "--ancestry-path", f"{first}..{bad}"],
                   timeout=GIT_TIMEOUT_S)
    return ([first] + later.split()[:-1])[:DEFAULT_GOOD_TRIES]  # never `bad` itself


def _export_source(bug: repro.Bug, rep, exporter, scratch: Path) -> tuple[Path, str]:
    """(the reproducer's file as export.py writes it today, how it was made): `lifeline export-source` for this input
    alone where export.py has that verb (another input the exporter cannot write does not matter), else `lifeline
    export` of the whole finding into a temporary folder."""
    out = scratch / "export"
    out.mkdir()
    path = out / f"{rep.input.name}.{exporter.extension}"
    cli = [sys.executable, ROOT / "cli" / "lifeline_main.py"]
    if hasattr(exportmod, "cmd_export_source"):
        verb = f"lifeline export-source --input {rep.input.name}"
        rc, text = sh(cli + ["export-source", "--repro-dir", bug.path, "--input", rep.input.name, "--out", path],
                      timeout=RUN_TIMEOUT_S * 4)
    else:
        verb = f"lifeline export {bug.id}"
        rc, text = sh(cli + ["export", bug.id, "--out", out], timeout=RUN_TIMEOUT_S * 4)
    if rc != 0:
        lines = [line for line in text.strip().splitlines() if line.strip()]
        raise _fail(f"`{verb}` failed (exit {rc}): {lines[-1] if lines else ''}")
    if not path.is_file():
        written = ", ".join(sorted(p.name for p in out.iterdir())) or "nothing"
        raise _fail(f"`{verb}` wrote no {path.name} (it wrote: {written})")
    return path, f"from `{verb}`"


def _check(cfg: dict, tree: Path, flag: str, info: dict, then: str = "") -> Verdict:
    """The verdict at one end of the range, printed as a "check" line."""
    git(tree, "checkout", "--quiet", "--detach", info["commit"])
    v = run_step(cfg, tree)
    print(f"check {flag} {short(info)}: {v.what}: {v.why}" + (f" [{v.build}]" if v.build else "")
          + (then if v.code == SKIP and not v.ran else ""), flush=True)
    return v


def _check_failed(flag: str, info: dict, must: str, hint: str, log_dir: Path) -> None:
    print(f"lifeline bisect: {flag} {info['commit'][:12]} must {must}; {hint} (log: "
          f"{log_dir / (info['commit'][:12] + '.log')})", file=sys.stderr)


def cmd_bisect(args) -> int:
    bug, exporter = _load(args.bug_id)
    rep, signature = _reproducer(bug, exporter, args.input)
    if args.signature is not None:
        signature = _signature_arg(args.signature)
        if args.record:
            raise _fail("--record records a bisection with the finding's own signature, not a --signature")
    repo = _plain_path("--upstream-repo", args.upstream_repo)
    if not repo.is_dir():
        raise _fail(f"--upstream-repo '{args.upstream_repo}' is not a directory")
    rc, prefix = sh(["git", "-C", repo, "rev-parse", "--show-prefix"])
    if rc != 0:
        raise _fail(f"--upstream-repo '{args.upstream_repo}' is not a git checkout")
    if prefix.strip():
        rc, top = sh(["git", "-C", repo, "rev-parse", "--show-toplevel"])
        raise _fail(f"--upstream-repo '{args.upstream_repo}' is a folder inside a checkout; give its top, {top.strip()}")
    source = None
    if args.source is not None:
        source = _plain_path("--source", args.source)
        if not source.is_file() or not os.access(source, os.R_OK):
            raise _fail(f"--source '{args.source}' is not a readable file")
        if args.record:
            raise _fail("--record records a bisection of the finding's own export; a --source file is another "
                        "program (leave out --record, or --source)")
    if args.jobs < 1:
        raise _fail("--jobs must be at least 1")
    if args.max_skips < 1:
        raise _fail("--max-skips must be at least 1")
    bad = _resolve(repo, "--bad", args.bad if args.bad is not None else "HEAD")
    if args.good is not None:
        good = _resolve(repo, "--good", args.good)
        if good == bad:
            raise _fail("--good and --bad are the same commit")
        if sh(["git", "-C", repo, "merge-base", "--is-ancestor", good, bad])[0] != 0:
            raise _fail(f"--good {good[:12]} is not an ancestor of --bad {bad[:12]}")
        goods = [good]
    else:
        goods = default_goods(repo, bad)
        if not goods:
            raise _fail("no commit before --bad builds ggml-base and ggml-cpu as libraries (the default --good); "
                        "give --good")
    rc, listing = sh(["git", "-C", repo, "ls-tree", "--name-only", bad, "--", "include/ggml.h", "ggml/include/ggml.h",
                      "include/ggml/ggml.h"])
    if rc != 0 or not listing.strip():
        raise _fail(f"--upstream-repo '{args.upstream_repo}' has no ggml at --bad {bad[:12]} (no include/ggml.h, "
                    "nor ggml/include/ggml.h)")
    gdir_rel = "ggml" if listing.split()[0].startswith("ggml/") else "."

    log_dir = ROOT / "build" / "bisect" / bug.id
    shutil.rmtree(log_dir, ignore_errors=True)
    log_dir.mkdir(parents=True)
    base = next((d for d in (tempfile.gettempdir(), "/tmp", "/var/tmp") if is_safe(d) and os.access(d, os.W_OK)), None)
    if base is None:
        raise _fail("no writable temporary folder with a plain name; set TMPDIR to one")
    scratch = Path(tempfile.mkdtemp(prefix="lifeline-bisect-", dir=base))
    cache = ROOT / "build" / "bisect" / "cache"
    old = {s: signal.signal(s, raise_interrupt) for s in (signal.SIGTERM, signal.SIGHUP)}
    proc = None
    t0 = time.monotonic()
    try:
        if source is None:
            source, origin = _export_source(bug, rep, exporter, scratch)
        else:
            origin = "--source"
        tree = scratch_clone(repo, scratch)
        cfg = {"source": str(source), "signature": signature, "env": _run_env(rep, exporter), "cache": str(cache),
               "log_dir": str(log_dir), "scratch": str(scratch), "jobs": args.jobs, "token": scratch.name}
        cfg_path = scratch / "config.json"
        cfg_path.write_text(json.dumps(cfg))
        step_script = write_step_script(scratch, ROOT / "cli", cfg_path)
        bi = commit_info(repo, bad)
        sig_text = signature["type"] + (f" in {signature['frame']}" if signature.get("frame") else "") + (
            f" (\"{signature['message']}\")" if signature.get("message") else "")
        print(f"lifeline bisect {bug.id}: {source.name} ({origin}), signature {sig_text}; {repo}; logs in {log_dir}",
              flush=True)

        # --bad must reproduce and --good must not, or there is nothing to bisect.
        v = _check(cfg, tree, "--bad", bi)
        if v.code != BAD:
            hint = ("it runs clean there: the finding is not in this checkout (newer than it, or fixed)"
                    if v.code == OK else "it cannot be tested there")
            _check_failed("--bad", bi, "reproduce the finding", hint, log_dir)
            return 1
        for i, candidate in enumerate(goods):
            info = commit_info(repo, candidate)
            v = _check(cfg, tree, "--good" if args.good is not None else "--good (default)", info,
                       "; trying the next commit" if i + 1 < len(goods) and args.good is None else "")
            if v.code != SKIP or v.ran or args.good is not None:
                break  # only a commit that cannot be built is passed over: the next would run the same way
        if v.code != OK:
            if v.code == BAD and args.good is None and args.record:
                # The finding is as old as the oldest commit the export builds against: that is the result.
                record(bug.path / "bug.json", {"before": info["commit"], "subject": info["subject"],
                                               "date": info["date"], "repo": repo_name(repo, gdir_rel),
                                               "range": [info["commit"], bi["commit"]], "export": rep.input.name})
                print(f"lifeline bisect: the finding is already there at the default --good {short(info)}, the "
                      f"oldest commit the export builds against; recorded introduced_by {{\"before\": "
                      f"\"{info['commit'][:12]}\"}} in {bug.path / 'bug.json'}")
                return 0
            if v.code == BAD:
                hint = "the finding is already there: give an older --good" + (
                    " (the default is the oldest commit with ggml's ggml-base and ggml-cpu libraries)"
                    if args.good is None else "")
            elif v.ran:
                hint = "it fails otherwise there: give another --good, or a --signature that fits"
            else:
                hint = ("it cannot be tested there: give another --good" if args.good is not None else
                        f"none of the {len(goods)} commits tried from the default on can be tested: give --good")
            _check_failed("--good", info, "run clean", hint, log_dir)
            return 1
        gi = info
        good = gi["commit"]
        checks = len(read_steps(scratch))
        n = int(git(repo, "rev-list", "--count", f"{good}..{bad}").strip() or 0)
        print(f"range: {short(gi)} .. {short(bi)}: {count(n, 'commit')}", flush=True)
        if n <= 1:
            steps = []
            result = {"certain": True, "first": bi}
        else:
            started = git(tree, "bisect", "start", bad, good)
            proc = subprocess.Popen(["git", "bisect", "run", sys.executable, str(step_script)], cwd=tree,
                                    stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                    process_group=0)
            output, stopped = follow(proc, scratch, log_dir, started, checks, args.max_skips)
            proc = None
            steps = read_steps(scratch)[checks:]
            result = bracket(tree) if stopped else outcome(output, tree)
            git(tree, "bisect", "reset", "--quiet", check=False)
            if result is None:
                print(f"lifeline bisect: git bisect run stopped without a result; see {log_dir / 'git-bisect.log'}",
                      file=sys.stderr)
                return 1
        return report(result, steps, checks, n, good, bad, time.monotonic() - t0,
                      record_in=bug.path / "bug.json" if args.record else None, repo=repo, gdir_rel=gdir_rel,
                      export=rep.input.name)
    except KeyboardInterrupt:
        print(f"\nlifeline bisect: interrupted; removing the scratch clone {scratch}", file=sys.stderr)
        return 130
    except RuntimeError as e:  # a git command that should not fail did
        print(f"lifeline bisect: {e}", file=sys.stderr)
        return 1
    finally:
        if proc is not None:
            stop(proc)
        for s, h in old.items():
            signal.signal(s, h)
        shutil.rmtree(scratch, ignore_errors=True)
        for partial in cache.glob(f".partial-{scratch.name}-*") if cache.is_dir() else []:
            shutil.rmtree(partial, ignore_errors=True)


def add_parser(sub) -> None:
    b = sub.add_parser("bisect", help="the first upstream commit where a finding's exported reproducer fails")
    b.add_argument("bug_id", metavar="BUG_ID")
    b.add_argument("--upstream-repo", required=True, metavar="DIR",
                   help="a git checkout of ggml (ggml-org/ggml, or llama.cpp with ggml in ggml/); never changed")
    b.add_argument("--good", metavar="REV", help="a commit that runs clean (default: the first commit whose CMake builds "
                   "ggml-base and ggml-cpu as libraries, e33cebed in ggml-org/ggml, 2024-11-15, or the next that can "
                   "be tested)")
    b.add_argument("--bad", metavar="REV", help="a commit that reproduces the finding (default: the checkout's HEAD)")
    b.add_argument("--input", metavar="NAME", help="which reproducer input's export and signature (default: the first)")
    b.add_argument("--source", metavar="FILE.c", help="bisect with this C file instead of the export (the input's "
                   "signature and environment still apply)")
    b.add_argument("--signature", metavar="JSON", help="classify runs by this signature instead of the input's, e.g. "
                   "'{\"type\": \"assert\", \"frame\": \"ggml_gallocr_init_tensor\"}' (an assert whose wording "
                   "changed over time); not with --record")
    b.add_argument("--jobs", type=int, default=2, metavar="N", help="parallel compile jobs per ggml build (default 2)")
    b.add_argument("--max-skips", type=int, default=MAX_SKIPS, metavar="N", help="stop after N skipped steps and "
                   f"print the range narrowed so far (default {MAX_SKIPS}; git would test every commit of a stretch "
                   "that cannot be tested)")
    b.add_argument("--record", action="store_true",
                   help="write the result into repro/<BUG_ID>/bug.json as \"introduced_by\"")
