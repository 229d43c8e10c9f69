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
"""
from __future__ import annotations

import fcntl
import hashlib
import inspect
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from . import crash as crashmod
from . import export as exportmod
from . import repro
from .bugs import BUG_ID
from .paths import ROOT
from .shellsafe import is_safe
from .usage import UsageError

CC = shutil.which("clang-14") or "clang"
CXX = shutil.which("clang++-14") or "clang++"
# As the asan lane builds ggml (cmake/LifelineLane.cmake, LifelineGgml.cmake) and configs.py measures it.
SAN_FLAGS = ("-fsanitize=address,undefined -fno-sanitize-recover=all -fsanitize-recover=pointer-overflow "
             "-O1 -gline-tables-only -fdebug-info-for-profiling -fno-omit-frame-pointer -UNDEBUG")
CMAKE_OPTIONS = ["-G", "Ninja", f"-DCMAKE_C_COMPILER={CC}", f"-DCMAKE_CXX_COMPILER={CXX}",
                 "-DCMAKE_BUILD_TYPE=lifeline",  # a build type without flags of its own: no -O3 -DNDEBUG
                 "-DBUILD_SHARED_LIBS=OFF", "-DGGML_OPENMP=OFF", "-DGGML_NATIVE=OFF", "-DGGML_LLAMAFILE=OFF",
                 "-DGGML_CCACHE=OFF", "-DGGML_BACKEND_DL=OFF", "-DGGML_BUILD_TESTS=OFF",
                 "-DGGML_BUILD_EXAMPLES=OFF", "-Wno-dev",
                 f"-DCMAKE_C_FLAGS={SAN_FLAGS}", f"-DCMAKE_CXX_FLAGS={SAN_FLAGS}"]
# A function the headers do not declare is an error, not an implicit `int f()`: such a commit is skipped as "does
# not compile" rather than run with a truncated pointer.
EXPORT_CFLAGS = ["-std=c11", "-g", "-O1", "-fno-omit-frame-pointer", "-fsanitize=address,undefined", "-UNDEBUG",
                 "-Werror=implicit-function-declaration", "-Werror=int-conversion"]
BUILD_INPUTS = ("CMakeLists.txt", "cmake", "include", "src")  # what a build of ggml-base and ggml-cpu reads
# What the scratch clone checks out: the files at the top and ggml's build inputs (or all of ggml/), not examples,
# tests, models or data (faster checkouts; a snapshot without some data file still checks out).
SPARSE = ["/*", "!/*/", "/cmake/", "/include/", "/src/", "/ggml/"]
CPU_LIBRARY_MARK = "src/ggml-cpu/CMakeLists.txt"  # ggml's CPU backend as a library of its own
BASE_LIBRARY_MARK = "add_library(ggml-base"  # in src/CMakeLists.txt since the libraries split (the default --good)
DEFAULT_GOOD_TRIES = 8
MAX_SKIPS = 50    # skipped steps before a bisection stops with the range it has narrowed (--max-skips)
MAX_LISTED = 40   # candidates printed in full
RUN_TIMEOUT_S = 300
BUILD_TIMEOUT_S = 3600
GIT_TIMEOUT_S = 600
STEP_MARK = "lifeline-bisect-step "
TIMED_OUT = -1000  # _sh's exit status of a command it stopped at its timeout
OK, BAD, SKIP = 0, 1, 125
PLAIN_PATH = re.compile(r"/[A-Za-z0-9._+/-]*")  # shellsafe's plain names, and `+` (fetch's /work/.mirror/owner+name)


# ---- one step ---------------------------------------------------------------------------------------

@dataclass
class Verdict:
    code: int         # OK, BAD or SKIP: git bisect run's exit status
    what: str         # "good", "bad", "skip"
    why: str          # one line: the signature found, or why the commit cannot be tested
    build: str = ""   # how ggml was had: "cached build", "built in 240 s"
    ran: bool = False  # whether the reproducer ran (a skip for what it did, not for a build that failed)


def _sh(cmd: list, cwd=None, env=None, timeout=None) -> tuple[int, str]:
    """(exit status, stdout and stderr) of cmd, run in a process group of its own, which is killed when the
    wait ends early (a timeout: status TIMED_OUT; Ctrl-C or SIGTERM: re-raised), so no compiler or reproducer
    outlives this process."""
    p = subprocess.Popen([str(c) for c in cmd], cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, process_group=0)
    try:
        out, _ = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(p)
        out, _ = p.communicate()
        return TIMED_OUT, out.decode("utf-8", "replace") + f"\n[timed out after {timeout} s]\n"
    except BaseException:
        _kill_group(p)
        p.wait()
        raise
    return p.returncode, out.decode("utf-8", "replace")


def _kill_group(p: subprocess.Popen) -> None:
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _git(repo, *args, check: bool = True) -> str:
    rc, out = _sh(["git", "-C", repo, *args], timeout=GIT_TIMEOUT_S)
    if check and rc != 0:
        raise RuntimeError(f"git {' '.join(args)} failed (exit {rc}): {out.strip()[-500:]}")
    return out


def ggml_dir(tree: Path) -> Optional[Path]:
    """Where ggml is in a checkout: its root (ggml-org/ggml) or ggml/ (llama.cpp, whisper.cpp)."""
    for d in (tree, tree / "ggml"):
        if _include_dir(d) is not None and (d / "CMakeLists.txt").is_file():
            return d
    return None


def _include_dir(gdir: Path) -> Optional[Path]:
    """ggml's public headers: include/, or before 2024-06-26 (ggml-org/ggml 5378ea0d) include/ggml/."""
    for d in (gdir / "include", gdir / "include" / "ggml"):
        if (d / "ggml.h").is_file():
            return d
    return None


def first_error(text: str, *patterns: str) -> str:
    """The first line of `text` that matches the first of `patterns` that any line matches (none: the last line),
    shortened."""
    lines = text.splitlines()
    for pattern in patterns:
        for i, line in enumerate(lines):
            if re.search(pattern, line):
                found = line.strip()
                if found.endswith(":"):  # CMake's "CMake Error at f:12 (add_library):" says what on the next lines
                    found += " " + " ".join(x.strip() for x in lines[i + 1:i + 6] if x.strip())[:150]
                return found[:220]
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:220] if lines else "(no output)"


def classify(rc: int, out: str, signature: dict) -> Verdict:
    """A run of the reproducer: good (exit 0, no report), bad (its signature), else skip with the reason."""
    if rc == TIMED_OUT:
        return Verdict(SKIP, "skip", f"the run timed out after {RUN_TIMEOUT_S} s")
    found = crashmod.parse(out)
    if found is None:
        if rc == 0:
            return Verdict(OK, "good", "runs clean")
        return Verdict(SKIP, "skip", f"exits {rc} without a sanitizer or assert report ({first_error(out)})")
    ok, why = crashmod.matches(found, signature)
    if ok:
        return Verdict(BAD, "bad", found.signature)
    return Verdict(SKIP, "skip", f"fails with another signature: {found.signature} ({why})")


def build_key(tree: Path, gdir: Path) -> str:
    """The cache key of ggml at the checked-out commit: the git trees a build reads, the flags, the compiler."""
    rel = os.path.relpath(gdir, tree)
    spec = "HEAD:" if rel == "." else f"HEAD:{rel}"
    listing = _git(tree, "ls-tree", spec, "--", *BUILD_INPUTS)
    rc, cc = _sh([CC, "--version"])
    h = hashlib.sha256("\n".join([listing, " ".join(CMAKE_OPTIONS), cc.splitlines()[0] if cc else CC]).encode())
    return h.hexdigest()[:20]


def _libraries(gdir: Path) -> list[str]:
    """The libraries a reproducer links, in link order: ggml-cpu and ggml-base, or before they existed, ggml."""
    return ["ggml-cpu", "ggml-base"] if (gdir / CPU_LIBRARY_MARK).is_file() else ["ggml"]


def ensure_build(cfg: dict, tree: Path, gdir: Path, log) -> tuple[Optional[Path], str]:
    """(folder of the libraries, how they were had) or (None, why ggml does not build here). Builds once per
    key: the libraries are copied into the cache under a temporary name and renamed, so an interrupted build
    leaves nothing there; a failed build is remembered (its log tail in `failed`)."""
    cache = Path(cfg["cache"])
    key = build_key(tree, gdir)
    entry = cache / key
    libs = _libraries(gdir)
    if (entry / "failed").is_file():
        log_tail = (entry / "failed").read_text(errors="replace").split("\n\n", 1)[-1]  # after the summary line
        return None, "ggml does not build here (cached): " + first_error(log_tail, r"error:", r"Error|FAILED")
    if all((entry / f"lib{n}.a").is_file() for n in libs):
        return entry, f"cached build {key[:8]}"
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one build at a time on this machine, whoever runs it
        if all((entry / f"lib{n}.a").is_file() for n in libs):
            return entry, f"cached build {key[:8]}"
        build = Path(cfg["scratch"]) / f"build-{key}"
        shutil.rmtree(build, ignore_errors=True)
        t0 = time.monotonic()
        cmd = ["cmake", "-S", gdir, "-B", build, *CMAKE_OPTIONS]
        rc, out = _sh(cmd, env=_build_env(), timeout=BUILD_TIMEOUT_S)
        log.write(f"$ {_shown(cmd)}\n{out}\n")
        if rc == 0:
            cmd = ["cmake", "--build", build, "-j", str(cfg["jobs"]), "--target", *libs]
            rc, out = _sh(cmd, env=_build_env(), timeout=BUILD_TIMEOUT_S)
            log.write(f"$ {_shown(cmd)}\n{out}\n")
        seconds = time.monotonic() - t0
        if rc != 0:
            shutil.rmtree(build, ignore_errors=True)
            if rc < 0:  # a timeout or a signal says nothing about the commit: not remembered
                return None, f"the build of ggml did not finish: {first_error(out)}"
            why = first_error(out, r"error:", r"Error|FAILED")
            tmp = cache / f".partial-{cfg['token']}-{key}"
            tmp.mkdir(parents=True, exist_ok=True)
            (tmp / "failed").write_text(why + "\n\n" + out[-20000:])
            _publish(tmp, entry)
            return None, f"ggml does not build here: {why}"
        tmp = cache / f".partial-{cfg['token']}-{key}"
        tmp.mkdir(parents=True, exist_ok=True)
        for n in libs:
            found = next(build.rglob(f"lib{n}.a"), None)
            if found is None:
                shutil.rmtree(tmp)
                return None, f"ggml does not build here: its build made no lib{n}.a"
            shutil.copy2(found, tmp / found.name)
        (tmp / "build.json").write_text(json.dumps({"commit": _git(tree, "rev-parse", "HEAD").strip(),
                                                    "libraries": libs, "seconds": round(seconds)}) + "\n")
        _publish(tmp, entry)
        shutil.rmtree(build, ignore_errors=True)
        return entry, f"built in {seconds:.0f} s"


def _publish(tmp: Path, entry: Path) -> None:
    """Moves a finished cache entry into place in one rename (another bisection may have made it meanwhile)."""
    if entry.exists():
        shutil.rmtree(tmp)
    else:
        os.replace(tmp, entry)


def _shown(cmd: list) -> str:
    return shlex.join(str(c) for c in cmd)


def _build_env() -> dict:
    # A sanitizer option the caller has set must not reach the compilers' or CMake's own runs.
    return {k: v for k, v in os.environ.items() if not k.endswith("SAN_OPTIONS")}


def evaluate(cfg: dict, tree: Path, log) -> Verdict:
    """The verdict at the commit checked out in `tree` (see the module docstring)."""
    gdir = ggml_dir(tree)
    if gdir is None:
        return Verdict(SKIP, "skip", "no ggml tree here (CMakeLists.txt and include/ggml.h, or under ggml/)")
    work = Path(cfg["scratch"]) / "step"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    source = Path(cfg["source"])
    cmd = [CC, *EXPORT_CFLAGS, "-c", source, "-I", _include_dir(gdir), "-o", work / "repro.o"]
    rc, out = _sh(cmd, env=_build_env())
    log.write(f"$ {_shown(cmd)}\n{out}\n")
    if rc != 0:
        return Verdict(SKIP, "skip", f"the reproducer does not compile against these headers: {first_error(out, r'error:')}")
    libdir, how = ensure_build(cfg, tree, gdir, log)
    if libdir is None:
        return Verdict(SKIP, "skip", how)
    libs = [str(libdir / f"lib{n}.a") for n in _libraries(gdir)]
    cmd = [CXX, "-fsanitize=address,undefined", work / "repro.o", *libs, "-lm", "-lpthread", "-o", work / "repro"]
    rc, out = _sh(cmd, env=_build_env())
    log.write(f"$ {_shown(cmd)}\n{out}\n")
    if rc != 0:
        return Verdict(SKIP, "skip", "the reproducer does not link with " + " and ".join(
            os.path.basename(x) for x in libs) + f": {first_error(out, r'undefined reference', r'error')}", how)
    rc, out = _sh([work / "repro"], cwd=work, env=cfg["env"], timeout=RUN_TIMEOUT_S)
    shown_env = " ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(cfg["env"].items()) if k.endswith("SAN_OPTIONS"))
    log.write(f"$ {shown_env} {work / 'repro'}   # exit {rc}\n{out}\n")
    v = classify(rc, out, cfg["signature"])
    v.build, v.ran = how, True
    return v


def _commit_info(repo, rev: str) -> dict:
    out = _git(repo, "log", "-1", "--format=%H%n%as%n%s", rev, "--")
    h, date, subject = (out.splitlines() + ["", "", ""])[:3]
    return {"commit": h, "date": date, "subject": subject}


def run_step(cfg: dict, tree: Path) -> Verdict:
    """One step at the commit checked out in `tree`, logged to <log dir>/<commit>.log and steps.jsonl."""
    info = _commit_info(tree, "HEAD")
    logdir = Path(cfg["log_dir"])
    with open(logdir / f"{info['commit'][:12]}.log", "w", encoding="utf-8", errors="replace") as log:
        log.write(f"commit {info['commit']} ({info['date']}) {info['subject']}\n\n")
        v = evaluate(cfg, tree, log)
        log.write(f"\nverdict: {v.what}: {v.why}\n")
    record = dict(info, code=v.code, what=v.what, why=v.why, build=v.build)
    with open(Path(cfg["scratch"]) / "steps.jsonl", "a") as f:
        f.write(json.dumps(record) + "\n")
    return v


def step_main(config_path: str) -> int:
    """`git bisect run`'s command (the step script in the scratch folder calls it): 0, 1 or 125; 255 (git stops
    the bisection) when the step itself fails."""
    signal.signal(signal.SIGTERM, _raise_interrupt)  # lifeline bisect stops a step so: its _sh children go too
    try:
        cfg = json.loads(Path(config_path).read_text())
        v = run_step(cfg, Path.cwd())
        print(STEP_MARK + json.dumps({"code": v.code}), flush=True)
        return v.code
    except KeyboardInterrupt:
        return 255
    except Exception as e:  # never 1: git would take it for "bad"
        print(f"lifeline bisect: the step failed: {type(e).__name__}: {e}", flush=True)
        return 255


# ---- lifeline bisect --------------------------------------------------------------------------------

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
    rc, out = _sh(["git", "-C", repo, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}"])
    if rc != 0:
        raise _fail(f"{flag} '{rev}' does not resolve to a commit in {repo}")
    return out.strip()


def default_goods(repo: Path, bad: str) -> list[str]:
    """The default --good and the commits tried after it when it cannot be tested: the first commit (an ancestor
    of `bad`) whose src/CMakeLists.txt builds ggml-base as a library (ggml-org/ggml e33cebed, 2024-11-15, "cmake :
    restore CMakeLists.txt (llama/10256)"), then the next DEFAULT_GOOD_TRIES - 1 commits on the way to `bad` (a
    sync from llama.cpp lands in pieces, and a piece may not build)."""
    rc, out = _sh(["git", "-C", repo, "log", "--format=%H", "--reverse", "-S", BASE_LIBRARY_MARK, bad, "--",
                   "src/CMakeLists.txt", "ggml/src/CMakeLists.txt"], timeout=GIT_TIMEOUT_S)
    if rc != 0 or not out.split() or out.split()[0] == bad:
        return []
    first = out.split()[0]
    rc, later = _sh(["git", "-C", repo, "rev-list", "--reverse", "--first-parent", "--ancestry-path", f"{first}..{bad}"],
                    timeout=GIT_TIMEOUT_S)
    return ([first] + later.split()[:-1])[:DEFAULT_GOOD_TRIES]  # never `bad` itself


def repo_name(repo: Path, gdir_rel: str) -> str:
    """owner/name: from a GitHub remote URL, else by layout (ggml at the root: ggml-org/ggml; in ggml/:
    ggml-org/llama.cpp)."""
    rc, url = _sh(["git", "-C", repo, "config", "--get", "remote.origin.url"])
    m = re.search(r"github\.com[:/]+([\w.-]+)/([\w.-]+?)(?:\.git)?/?$", url.strip()) if rc == 0 else None
    if m:
        return f"{m.group(1)}/{m.group(2)}"
    return "ggml-org/llama.cpp" if gdir_rel == "ggml" else "ggml-org/ggml"


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
        rc, text = _sh(cli + ["export-source", "--repro-dir", bug.path, "--input", rep.input.name, "--out", path],
                       timeout=RUN_TIMEOUT_S * 4)
    else:
        verb = f"lifeline export {bug.id}"
        rc, text = _sh(cli + ["export", bug.id, "--out", out], timeout=RUN_TIMEOUT_S * 4)
    if rc != 0:
        lines = [line for line in text.strip().splitlines() if line.strip()]
        raise _fail(f"`{verb}` failed (exit {rc}): {lines[-1] if lines else ''}")
    if not path.is_file():
        written = ", ".join(sorted(p.name for p in out.iterdir())) or "nothing"
        raise _fail(f"`{verb}` wrote no {path.name} (it wrote: {written})")
    return path, f"from `{verb}`"


def _check(cfg: dict, tree: Path, flag: str, info: dict, then: str = "") -> Verdict:
    """The verdict at one end of the range, printed as a "check" line."""
    _git(tree, "checkout", "--quiet", "--detach", info["commit"])
    v = run_step(cfg, tree)
    print(f"check {flag} {_short(info)}: {v.what}: {v.why}" + (f" [{v.build}]" if v.build else "")
          + (then if v.code == SKIP and not v.ran else ""), flush=True)
    return v


def _check_failed(flag: str, info: dict, must: str, hint: str, log_dir: Path) -> None:
    print(f"lifeline bisect: {flag} {info['commit'][:12]} must {must}; {hint} (log: "
          f"{log_dir / (info['commit'][:12] + '.log')})", file=sys.stderr)


def _count(n: int, what: str) -> str:
    return f"{n} {what}" + ("" if n == 1 else "s")


def _short(info: dict) -> str:
    return f"{info['commit'][:12]} ({info['date']})"


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt


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
    rc, prefix = _sh(["git", "-C", repo, "rev-parse", "--show-prefix"])
    if rc != 0:
        raise _fail(f"--upstream-repo '{args.upstream_repo}' is not a git checkout")
    if prefix.strip():
        rc, top = _sh(["git", "-C", repo, "rev-parse", "--show-toplevel"])
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
        if _sh(["git", "-C", repo, "merge-base", "--is-ancestor", good, bad])[0] != 0:
            raise _fail(f"--good {good[:12]} is not an ancestor of --bad {bad[:12]}")
        goods = [good]
    else:
        goods = default_goods(repo, bad)
        if not goods:
            raise _fail("no commit before --bad builds ggml-base and ggml-cpu as libraries (the default --good); "
                        "give --good")
    rc, listing = _sh(["git", "-C", repo, "ls-tree", "--name-only", bad, "--", "include/ggml.h", "ggml/include/ggml.h",
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
    old = {s: signal.signal(s, _raise_interrupt) for s in (signal.SIGTERM, signal.SIGHUP)}
    proc = None
    t0 = time.monotonic()
    try:
        if source is None:
            source, origin = _export_source(bug, rep, exporter, scratch)
        else:
            origin = "--source"
        tree = scratch / "ggml"
        _git(scratch, "clone", "--quiet", "--shared", "--no-checkout", str(repo), str(tree))
        _git(tree, "sparse-checkout", "set", "--no-cone", *SPARSE)
        cfg = {"source": str(source), "signature": signature, "env": _run_env(rep, exporter), "cache": str(cache),
               "log_dir": str(log_dir), "scratch": str(scratch), "jobs": args.jobs, "token": scratch.name}
        cfg_path = scratch / "config.json"
        cfg_path.write_text(json.dumps(cfg))
        step_script = scratch / "step.py"
        step_script.write_text("import sys\nsys.path.insert(0, %r)\nfrom lifeline.bisect import step_main\n"
                               "sys.exit(step_main(%r))\n" % (str(ROOT / "cli"), str(cfg_path)))
        bi = _commit_info(repo, bad)
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
            info = _commit_info(repo, candidate)
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
                print(f"lifeline bisect: the finding is already there at the default --good {_short(info)}, the "
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
        checks = len(_steps(scratch))
        n = int(_git(repo, "rev-list", "--count", f"{good}..{bad}").strip() or 0)
        print(f"range: {_short(gi)} .. {_short(bi)}: {_count(n, 'commit')}", flush=True)
        if n <= 1:
            steps = []
            result = {"certain": True, "first": bi}
        else:
            started = _git(tree, "bisect", "start", bad, good)
            proc = subprocess.Popen(["git", "bisect", "run", sys.executable, str(step_script)], cwd=tree,
                                    stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                    process_group=0)
            output, stopped = _follow(proc, scratch, log_dir, started, checks, args.max_skips)
            proc = None
            steps = _steps(scratch)[checks:]
            result = _bracket(tree) if stopped else _outcome(output, tree)
            _git(tree, "bisect", "reset", "--quiet", check=False)
            if result is None:
                print(f"lifeline bisect: git bisect run stopped without a result; see {log_dir / 'git-bisect.log'}",
                      file=sys.stderr)
                return 1
        seconds = time.monotonic() - t0
        skipped = [s for s in steps if s["code"] == SKIP]
        print(f"range tested: {good[:12]}..{bad[:12]} ({_count(n, 'commit')}), {_count(len(steps), 'step')} after "
              f"{_count(checks, 'check')}, "
              f"{len(skipped)} skipped, {seconds:.0f} s", flush=True)
        if not result["certain"]:
            cands = result["candidates"]
            why = (f"stopped after {len(skipped)} skipped step(s) (--max-skips)" if result.get("stopped") else
                   "skipped commits border it")
            print(f"first bad commit: uncertain: {why}; it is one of these {len(cands)}, newest first:")
            for c in cands[:MAX_LISTED] if len(cands) > MAX_LISTED + 1 else cands:
                tested = next((s for s in steps if s["commit"] == c["commit"]), None)
                print(f"  {c['commit']} {c['date']} {c['subject']}"
                      + (f"  [skipped: {tested['why']}]" if tested and tested["code"] == SKIP else ""))
            if len(cands) > MAX_LISTED + 1:
                print(f"  ... {len(cands) - MAX_LISTED - 1} more, down to\n  {cands[-1]['commit']} {cands[-1]['date']} "
                      f"{cands[-1]['subject']}")
            if args.record:
                print("lifeline bisect: nothing recorded: the first bad commit is uncertain", file=sys.stderr)
            return 1
        first = result["first"]
        print(f"first bad commit: {first['commit']}\n  date: {first['date']}\n  subject: {first['subject']}")
        if skipped:
            print(f"  ({len(skipped)} skipped commit(s) elsewhere in the range; its parent ran clean, so it is certain)")
        if args.record:
            value = {"commit": first["commit"], "subject": first["subject"], "date": first["date"],
                     "repo": repo_name(repo, gdir_rel), "range": [good, bad], "export": rep.input.name}
            record(bug.path / "bug.json", value)
            print(f"recorded introduced_by in {bug.path / 'bug.json'}")
        return 0
    except KeyboardInterrupt:
        print(f"\nlifeline bisect: interrupted; removing the scratch clone {scratch}", file=sys.stderr)
        return 130
    except RuntimeError as e:  # a git command that should not fail did
        print(f"lifeline bisect: {e}", file=sys.stderr)
        return 1
    finally:
        if proc is not None:
            _stop(proc)
        for s, h in old.items():
            signal.signal(s, h)
        shutil.rmtree(scratch, ignore_errors=True)
        for partial in cache.glob(f".partial-{scratch.name}-*") if cache.is_dir() else []:
            shutil.rmtree(partial, ignore_errors=True)


def _stop(proc: subprocess.Popen) -> None:
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


def _follow(proc: subprocess.Popen, scratch: Path, log_dir: Path, started: str, checks: int,
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
                steps = _steps(scratch)
                s = steps[-1]
                print(f"step {len(steps) - checks}: {s['commit'][:12]} ({s['date']}) {s['what']}: {s['why']}"
                      + (f" [{s['build']}]" if s["build"] else "") + _left_text(left),
                      flush=True)
                left = None
                if sum(1 for x in steps[checks:] if x["code"] == SKIP) >= max_skips:
                    # git tests every commit of a skipped stretch before it gives up: stop here instead.
                    stopped = True
                    _stop(proc)
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


def _steps(scratch: Path) -> list:
    path = scratch / "steps.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.is_file() else []


def _bracket(tree: Path) -> dict:
    """What a bisection stopped early has narrowed the range to: every commit that is an ancestor of the oldest bad
    one and of no good one (newest first, the bad one included)."""
    bad = _git(tree, "rev-parse", "refs/bisect/bad").strip()
    goods = _git(tree, "for-each-ref", "--format=%(objectname)", "refs/bisect/good-*").split()
    return {"certain": False, "stopped": True, "candidates": _infos(tree, [bad, "--not", *goods])}


def _infos(tree: Path, revs: list) -> list:
    """_commit_info of each commit `git log revs` lists, in one call, newest first."""
    out = _git(tree, "log", "--format=%H%x09%as%x09%s", *revs, "--")
    return [dict(zip(("commit", "date", "subject"), line.split("\t", 2))) for line in out.splitlines() if line]


def _outcome(output: str, tree: Path) -> Optional[dict]:
    """{"certain": True, "first": info} or {"certain": False, "candidates": [info...]} from git bisect run's output;
    None when it stopped otherwise (a step that failed)."""
    m = re.search(r"^([0-9a-f]{40}) is the first bad commit", output, re.M)
    if m:
        return {"certain": True, "first": _commit_info(tree, m.group(1))}
    if "only 'skip'ped commits left" in output:
        block = output.split("could be any of:", 1)[-1].split("We cannot bisect more", 1)[0]
        hashes = re.findall(r"^([0-9a-f]{40})", block, re.M)
        return {"certain": False, "candidates": _infos(tree, ["--no-walk=sorted", *hashes])}
    return None


def record(path: Path, value: dict) -> None:
    """Sets "introduced_by" in bug.json, keeping its formatting (json.dumps, indent 2; ASCII escapes when the file
    has them) and its other keys in place."""
    text = path.read_text(encoding="utf-8")
    doc = json.loads(text)
    doc["introduced_by"] = value
    ascii_only = all(ord(c) < 128 for c in text)
    path.write_text(json.dumps(doc, indent=2, ensure_ascii=ascii_only) + ("\n" if text.endswith("\n") else ""),
                    encoding="utf-8")


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
