"""Getting a lane ready: Debian packages, the pinned upstream ggml, configure and build (`test` and `fuzz`)."""
from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path

from .paths import ROOT, skipped_targets, target_labels
from .usage import UsageError


def run(cmd, **kw) -> int:
    print("+ " + " ".join(str(c) for c in cmd), flush=True)
    return subprocess.call([str(c) for c in cmd], **kw)


def ensure_deps() -> None:
    rc = subprocess.call([str(ROOT / "scripts" / "install-deps.sh")])
    if rc != 0:
        raise SystemExit(f"lifeline: installing dependencies failed (scripts/install-deps.sh exited {rc})")


UPSTREAM_SOURCES = (
    # (script, what it fetches, what goes missing without it)
    ("fetch-ggml.sh", "upstream ggml", "the ggml upstream tests will be reported as skipped and the ggml targets not built"),
    ("fetch-whisper.sh", "upstream whisper.cpp",
     "the whisper tests will be reported as skipped and whisper_string_handoff not built"),
)


def ensure_upstream() -> None:
    """Fetches the pinned upstream sources (scripts/fetch-ggml.sh, scripts/fetch-whisper.sh) for the `upstream`
    tests and targets. Without one (no network, npm missing) the lanes still build and its tests report
    themselves skipped."""
    for name, what, without in UPSTREAM_SOURCES:
        script = ROOT / "scripts" / name
        try:
            rc = subprocess.call([str(script)])
        except OSError as e:
            rc, why = 1, f"cannot run {script}: {e.strerror}"
        else:
            why = "see above"
        if rc != 0:
            print(f"lifeline: {what} could not be fetched ({why}); {without}", flush=True)


PINNED_GGML = ROOT / "build" / "upstream" / "llama.cpp" / "ggml"


def resolve_ggml_source(path: str, flag: str = "--ggml-source") -> Path | None:
    """The ggml tree a --ggml-source argument names: a ggml checkout (src/ggml-alloc.c and CMakeLists.txt at its
    top), or a llama.cpp or whisper.cpp checkout (the same under ggml/). None when it is the pinned tree. A path
    that is neither is a usage error naming what is missing."""
    d = Path(path).expanduser()
    if not d.is_dir():
        raise UsageError(f"lifeline: {flag} '{path}' is not a directory")
    for tree in (d, d / "ggml"):
        if (tree / "src" / "ggml-alloc.c").is_file() and (tree / "CMakeLists.txt").is_file():
            tree = tree.resolve()
            return None if tree == PINNED_GGML.resolve() else tree
    raise UsageError(f"lifeline: {flag} '{path}' is not a ggml source tree: it has no src/ggml-alloc.c and "
                     "CMakeLists.txt (nor ggml/src/ggml-alloc.c, as a llama.cpp or whisper.cpp checkout has)")


def upstream_ggml(lane_dir: Path) -> dict | None:
    """What the lane in `lane_dir` built as upstream ggml, from the upstream-ggml.txt its configuration wrote:
    {"version", "source", "pinned" (bool), "pin" (the pinned package, when pinned), "targets" (list), "missing" (the
    functions of ggml's API the adapters use that this tree lacks: cmake/LifelineGgml.cmake)}, or None
    when the lane builds no ggml (or was configured before the file existed)."""
    try:
        text = (lane_dir / "upstream-ggml.txt").read_text()
    except OSError:
        return None
    info = {}
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        if key:
            info[key] = value
    if "version" not in info or "source" not in info:
        return None
    out = {"version": info["version"], "source": info["source"], "pinned": info.get("pinned") == "1",
           "targets": info.get("targets", "").split(), "missing": info.get("missing", "").split()}
    if info.get("pin"):
        out["pin"] = info["pin"]
    return out


def describe_ggml(info: dict, lane_dir: Path | None = None) -> str:
    """One line naming the upstream ggml a lane was built from, the ggml targets it built, and, when the lane's
    folder is given, the ggml targets it skipped on that source and why."""
    if info["pinned"]:
        line = f"upstream ggml {info['version']}: the pinned source ({info.get('pin', 'scripts/fetch-ggml.sh')}), {info['source']}"
    else:
        line = f"upstream ggml {info['version']}: --ggml-source {info['source']} (not the pinned version)"
    if not info["pinned"] and info.get("targets"):
        line += f"; built: {', '.join(info['targets'])}"
    if info.get("missing"):
        line += f"; this tree has no {', '.join(info['missing'])} (what needs them is left out)"
    skipped = {t: why for t, why in skipped_targets(lane_dir).items() if t.startswith("ggml_")} if lane_dir else {}
    for t, why in skipped.items():
        line += f"; skipped: {t} ({why})"
    return line


CCACHE_DIR = ROOT / "build" / "ccache"  # the lanes' compiler cache (cmake/LifelineLane.cmake)


def ccache_stats_log(lane: str) -> Path:
    """Where the lane's compiler launcher logs each compilation's outcome (cmake/LifelineLane.cmake)."""
    return ROOT / "build" / lane / "ccache-stats.log"


def ccache_zero_stats(lane: str) -> None:
    """Starts the lane's count of compilations afresh."""
    ccache_stats_log(lane).unlink(missing_ok=True)


def ccache_stats(lane: str) -> tuple[int, int] | None:
    """(compilations the lane took from build/ccache, compilations it missed) since ccache_zero_stats(lane), or None
    when nothing went through ccache (not installed, or nothing compiled)."""
    try:
        lines = ccache_stats_log(lane).read_text(errors="replace").splitlines()
    except OSError:
        return None
    hits = sum(line in ("direct_cache_hit", "preprocessed_cache_hit") for line in lines)
    misses = sum(line == "cache_miss" for line in lines)
    return (hits, misses) if hits or misses else None


def _unbuilt(lane: str, targets: list) -> list[str]:
    """Which of `targets` (CMake target names) do not build in the lane, after a build that went on past its failures
    (ninja -k 0): each is built again on its own, which does nothing for one that built and fails again for one that
    did not (a dry run cannot tell: the always-run steps, the glob check, have work in every one)."""
    out = []
    for t in targets:
        proc = subprocess.run(["cmake", "--build", "--preset", lane, "--target", t], cwd=ROOT,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if proc.returncode != 0:
            out.append(t)
    return out


def configure_and_build(lane: str, targets: list | None = None, ggml_source: Path | None = None,
                        emit=None, nice: bool = False, started=None, verb: str = "test") -> bool:
    """Configures the lane's preset and builds it: everything, or only `targets` (CMake target names) and what
    they need. `ggml_source` (resolve_ggml_source) builds that ggml tree instead of the pinned one; without it the
    lane is set back to the pinned tree, so a configuration always follows the command that made it.
    A target the configuration skipped (skipped-targets.txt: it cannot build on this source) is named with its
    reason; a build that fails goes on with everything else (ninja -k 0) and ends with one line naming the fuzz
    targets that did not build and those that did (`verb` names the command in it).
    `emit` (a function taking one line) receives everything the build prints instead of this process's output;
    `nice` runs configure and build at the lowest CPU priority, each in a process group of its own (not a session:
    with the kernel's autogroup scheduling a new session shares the CPUs equally with this one, whatever its nice
    value), and passes each process to `started` as it starts (`lifeline test` builds the lanes after the first so,
    beside the ctests, and stops a build by its process group)."""
    source = f"-DLIFELINE_GGML_SOURCE_DIR={ggml_source or ''}"
    prefix = ["nice", "-n", "19"] if nice else []
    say = emit or (lambda line: print(line, end="", flush=True))

    def step(cmd: list, quiet_stdout: bool) -> int:
        say("+ " + " ".join(str(c) for c in cmd) + "\n")
        if emit is None:
            return subprocess.call([*prefix, *(str(c) for c in cmd)], cwd=ROOT,
                                   stdout=subprocess.DEVNULL if quiet_stdout else None)
        proc = subprocess.Popen([*prefix, *(str(c) for c in cmd)], cwd=ROOT, text=True, errors="replace",
                                stdout=subprocess.DEVNULL if quiet_stdout else subprocess.PIPE,
                                stderr=subprocess.PIPE if quiet_stdout else subprocess.STDOUT,
                                process_group=0 if nice else None)
        if started:
            started(proc)
        for line in proc.stderr if quiet_stdout else proc.stdout:
            emit(line)
        return proc.wait()

    if step(["cmake", "--preset", lane, source], quiet_stdout=True) != 0:
        say(f"lifeline: configuring lane {lane} failed; rerun `cmake --preset {lane} {shlex.quote(source)}` to see "
            "why\n")
        return False
    lane_dir = ROOT / "build" / lane
    if targets:
        skipped = skipped_targets(lane_dir)
        missing = [t for t in targets if t in skipped]
        if missing:
            for t in missing:
                say(f"lifeline {verb}: target {t} is not built in lane {lane} on this source: {skipped[t]}\n")
            return False
    only = ["--target", *targets] if targets else []
    if step(["cmake", "--build", "--preset", lane, "-j", str(os.cpu_count() or 2), *only, "--", "-k", "0"],
            quiet_stdout=False) == 0:
        return True
    fuzz = list(targets) if targets else sorted(target_labels(lane_dir))
    failed = _unbuilt(lane, fuzz)
    built = [t for t in fuzz if t not in failed]
    what = (f"fuzz target(s) {', '.join(failed)}" if failed else
            "something other than the fuzz targets (tests or tools)")
    say(f"lifeline {verb}: building lane {lane} failed for {what} (the compiler's errors are above); "
        + (f"built: {', '.join(built)}" + (f" (`./lifeline fuzz {' '.join(built)} --no-build` fuzzes them)"
                                            if verb == "fuzz" and lane in ("fuzz", "tsan") else "")
           if built else "no fuzz target built") + "\n")
    return False
