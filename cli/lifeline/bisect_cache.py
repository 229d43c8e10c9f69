"""The ggml builds of `lifeline bisect`: ggml-base and ggml-cpu (before they existed, ggml) built with ggml's CMake,
static, ASan+UBSan as the asan lane builds ggml, and cached in build/bisect/cache/ by what a build reads (the git
trees of CMakeLists.txt, cmake/, include/ and src/), the flags and the compiler; a build that fails is remembered,
and one build at a time runs on a machine (a lock)."""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import time
from pathlib import Path
from typing import Optional

from .bisect_proc import build_env, first_error, git, sh, shown

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
BUILD_INPUTS = ("CMakeLists.txt", "cmake", "include", "src")  # what a build of ggml-base and ggml-cpu reads
CPU_LIBRARY_MARK = "src/ggml-cpu/CMakeLists.txt"  # ggml's CPU backend as a library of its own
BUILD_TIMEOUT_S = 3600


def build_key(tree: Path, gdir: Path) -> str:
    """The cache key of ggml at the checked-out commit: the git trees a build reads, the flags, the compiler."""
    rel = os.path.relpath(gdir, tree)
    spec = "HEAD:" if rel == "." else f"HEAD:{rel}"
    listing = git(tree, "ls-tree", spec, "--", *BUILD_INPUTS)
    rc, cc = sh([CC, "--version"])
    h = hashlib.sha256("\n".join([listing, " ".join(CMAKE_OPTIONS), cc.splitlines()[0] if cc else CC]).encode())
    return h.hexdigest()[:20]


def libraries(gdir: Path) -> list[str]:
    """The libraries a reproducer links, in link order: ggml-cpu and ggml-base, or before they existed, ggml."""
    return ["ggml-cpu", "ggml-base"] if (gdir / CPU_LIBRARY_MARK).is_file() else ["ggml"]


def ensure_build(cfg: dict, tree: Path, gdir: Path, log) -> tuple[Optional[Path], str]:
    """(folder of the libraries, how they were had) or (None, why ggml does not build here). Builds once per
    key: the libraries are copied into the cache under a temporary name and renamed, so an interrupted build
    leaves nothing there; a failed build is remembered (its log tail in `failed`)."""
    cache = Path(cfg["cache"])
    key = build_key(tree, gdir)
    entry = cache / key
    libs = libraries(gdir)
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
        rc, out = sh(cmd, env=build_env(), timeout=BUILD_TIMEOUT_S)
        log.write(f"$ {shown(cmd)}\n{out}\n")
        if rc == 0:
            cmd = ["cmake", "--build", build, "-j", str(cfg["jobs"]), "--target", *libs]
            rc, out = sh(cmd, env=build_env(), timeout=BUILD_TIMEOUT_S)
            log.write(f"$ {shown(cmd)}\n{out}\n")
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
        (tmp / "build.json").write_text(json.dumps({"commit": git(tree, "rev-parse", "HEAD").strip(),
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
