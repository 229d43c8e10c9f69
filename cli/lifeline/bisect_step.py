"""One step of `lifeline bisect`: the verdict at the commit checked out in the scratch clone (the reproducer compiled
against that commit's headers, linked with its ggml from the build cache, run, and its output classified: good,
bad or skip), logged; and step_main, the command `git bisect run` runs for it."""
from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from . import crash as crashmod
from .bisect_cache import CC, CXX, ensure_build, libraries
from .bisect_proc import TIMED_OUT, build_env, commit_info, first_error, sh, shown

# A function the headers do not declare is an error, not an implicit `int f()`: such a commit is skipped as "does
# not compile" rather than run with a truncated pointer.
EXPORT_CFLAGS = ["-std=c11", "-g", "-O1", "-fno-omit-frame-pointer", "-fsanitize=address,undefined", "-UNDEBUG",
                 "-Werror=implicit-function-declaration", "-Werror=int-conversion"]
RUN_TIMEOUT_S = 300
STEP_MARK = "lifeline-bisect-step "
OK, BAD, SKIP = 0, 1, 125


@dataclass
class Verdict:
    code: int         # OK, BAD or SKIP: git bisect run's exit status
    what: str         # "good", "bad", "skip"
    why: str          # one line: the signature found, or why the commit cannot be tested
    build: str = ""   # how ggml was had: "cached build", "built in 240 s"
    ran: bool = False  # whether the reproducer ran (a skip for what it did, not for a build that failed)


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


def evaluate(cfg: dict, tree: Path, log) -> Verdict:
    """The verdict at the commit checked out in `tree` (see bisect.py's docstring)."""
    gdir = ggml_dir(tree)
    if gdir is None:
        return Verdict(SKIP, "skip", "no ggml tree here (CMakeLists.txt and include/ggml.h, or under ggml/)")
    work = Path(cfg["scratch"]) / "step"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    source = Path(cfg["source"])
    cmd = [CC, *EXPORT_CFLAGS, "-c", source, "-I", _include_dir(gdir), "-o", work / "repro.o"]
    rc, out = sh(cmd, env=build_env())
    log.write(f"$ {shown(cmd)}\n{out}\n")
    if rc != 0:
        return Verdict(SKIP, "skip", f"the reproducer does not compile against these headers: {first_error(out, r'error:')}")
    libdir, how = ensure_build(cfg, tree, gdir, log)
    if libdir is None:
        return Verdict(SKIP, "skip", how)
    libs = [str(libdir / f"lib{n}.a") for n in libraries(gdir)]
    cmd = [CXX, "-fsanitize=address,undefined", work / "repro.o", *libs, "-lm", "-lpthread", "-o", work / "repro"]
    rc, out = sh(cmd, env=build_env())
    log.write(f"$ {shown(cmd)}\n{out}\n")
    if rc != 0:
        return Verdict(SKIP, "skip", "the reproducer does not link with " + " and ".join(
            os.path.basename(x) for x in libs) + f": {first_error(out, r'undefined reference', r'error')}", how)
    rc, out = sh([work / "repro"], cwd=work, env=cfg["env"], timeout=RUN_TIMEOUT_S)
    shown_env = " ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(cfg["env"].items()) if k.endswith("SAN_OPTIONS"))
    log.write(f"$ {shown_env} {work / 'repro'}   # exit {rc}\n{out}\n")
    v = classify(rc, out, cfg["signature"])
    v.build, v.ran = how, True
    return v


def run_step(cfg: dict, tree: Path) -> Verdict:
    """One step at the commit checked out in `tree`, logged to <log dir>/<commit>.log and steps.jsonl."""
    info = commit_info(tree, "HEAD")
    logdir = Path(cfg["log_dir"])
    with open(logdir / f"{info['commit'][:12]}.log", "w", encoding="utf-8", errors="replace") as log:
        log.write(f"commit {info['commit']} ({info['date']}) {info['subject']}\n\n")
        v = evaluate(cfg, tree, log)
        log.write(f"\nverdict: {v.what}: {v.why}\n")
    record = dict(info, code=v.code, what=v.what, why=v.why, build=v.build)
    with open(Path(cfg["scratch"]) / "steps.jsonl", "a") as f:
        f.write(json.dumps(record) + "\n")
    return v


def raise_interrupt(signum, frame):
    """A signal handler: SIGTERM (or SIGHUP) ends the process as Ctrl-C does."""
    raise KeyboardInterrupt


def step_main(config_path: str) -> int:
    """`git bisect run`'s command (the step script in the scratch folder calls it): 0, 1 or 125; 255 (git stops
    the bisection) when the step itself fails."""
    signal.signal(signal.SIGTERM, raise_interrupt)  # lifeline bisect stops a step so: its sh children go too
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
