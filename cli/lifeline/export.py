"""`lifeline export <bug-id> [--out DIR] [--configs]`: an upstream finding as what one attaches to an upstream
issue.

For each reproducer input of repro/<bug-id>/bug.json, the target decodes the input into its program
(`<target> --program decode`, run as the reproducer's pinned check runs it: the finding's guard off), and the
target's exporter (cli/lifeline/exporters/) writes that program as one short standalone file in upstream's own
terms, on upstream's public API only: C on ggml for ggml_graph_topology (CPU backend) and
ggml_vulkan_graph_topology (ggml-vulkan, ggml_backend_sched), C on whisper.h for whisper_string_handoff, Python
on PyTorch and NumPy for torch_capsule_lifecycle. Inputs are reduced programs (`lifeline reduce`), so the files
are short; the file prints the contract it shows broken and what it expects, and fails while the bug is there.
`report.md` beside them is the report in a maintainer's form (see _report): title in upstream's words, the
version upstream can check out, the configurations affected, the contract, expected vs actual, the short stack,
the fix direction where the mechanism makes it plain, prior art, and the first bad commit when `lifeline bisect`
found it.

bug.json's "report" object holds the words: "title", "contract", "expected", "actual", "fix", "check" (what
the C exporter adds to show the contract: supports-op, fresh-gallocr), and "configurations" (measured by
--configs: each C file built against ggml with asserts and with -DNDEBUG, with and without OpenMP, and what each
gave), each optional. "status" and "upstream" say where upstream stands (repro.py).

EXPORTERS maps a target to its exporter: the language and file extension, what the file runs on, the version
line, how to build and run a file. ctest builds and checks every export in the asan lane
(cmake/LifelineExports.cmake: `repro.<id>.asan.export`): each must fail with its signature (bug.json's
per-reproducer "export" signature, else its asan one; a Python export with its AssertionError).

Internal verbs (not in --help), run by the build and by ctest:
  lifeline export-plan --lane L [--repro-root DIR]   one line per exportable finding:
                                                      export|<id>|<target>|<extension>|<input>,<input>,...
  lifeline export-source --repro-dir D --input NAME --out FILE [--lane L]
                                                      writes one exported file (the build's custom command)
  lifeline export-check --repro-dir D --lane L --exe-dir E
                                                      each reproducer's exported program (E/<input>, or
                                                      E/<input>.py) fails with its signature
"""
from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

from . import crash as crashmod
from . import repro
from .bugs import BUG_ID, switch_env
from .exporters import ggml_c, whisper_c
from .paths import LANES, ROOT
from .usage import UsageError

RUN_TIMEOUT_S = 300
PLAIN_NAME = re.compile(r"[A-Za-z0-9._-]+")
UBSAN_UPSTREAM_SUPP = ROOT / "core" / "suppressions" / "ubsan-upstream.supp"
GGML_VERSION = ("ggml-org/llama.cpp at \"llama.cpp : bump version to 0.5.0 (#29333)\" (tag v0.5.0), whose ggml/ is "
                "ggml 0.25.1; lifeline takes it from npm node-llama-cpp@3.22.1 (its git bundle, head de3ff815)")
WHISPER_VERSION = ("ggml-org/whisper.cpp v1.9.1 (its CMakeLists.txt's version; lifeline takes the tree from npm "
                   "nodejs-whisper@0.3.1, package/cpp/whisper.cpp)")
# Statuses whose findings are exported: a finding the pinned upstream has, reported or not, fixed since or not
# (an export of a fixed one shows a maintainer's newer version passing).
EXPORTED_STATUSES = ("upstream-open", "upstream-reported", "upstream-fixed")


def _torch_generate(program: dict, finding: dict) -> str:
    from .exporters import torch_py  # imports nothing heavy; kept apart so that a C export never needs it
    return torch_py.generate(program, finding)


@dataclass(frozen=True)
class Exporter:
    target: str       # the fuzz target whose inputs it exports
    language: str     # of the exported files
    extension: str
    upstream: str     # what the exported file runs on, in words
    version: str      # the version upstream can check out
    generate: Callable[[dict, dict], str]
    extra: dict = field(default_factory=dict)  # added to the finding generate() gets
    build: str = ""   # how to build a file ({file}, {exe}, {include}, {libdir}, {cflags}); "" when nothing to build
    run: str = "{env} {exe}"  # how to run it ({exe}, {file}, {env})
    lane: str = "asan"  # the lane that builds the target and checks the exports
    build_help: str = ""  # report.md's build-and-run lines ({file}, {exe}), when not ggml's
    env: dict = field(default_factory=dict)  # what its programs need in their environment (unless already set)


_C_BUILD = ("clang -std=c11 -g -O1 -fsanitize=address,undefined {cflags} -c {file} -I{include} -o repro.o\n"
            "clang++ -fsanitize=address,undefined repro.o -L{libdir} {libs} -lm -lpthread -o {exe}")
EXPORTERS = {
    "ggml_graph_topology": Exporter(
        target="ggml_graph_topology", language="C", extension="c", upstream="ggml's CPU backend",
        version=GGML_VERSION, generate=ggml_c.generate, extra={"backend": "cpu"},
        build=_C_BUILD.replace("{libs}", "-lggml -lggml-cpu -lggml-base")),
    "ggml_vulkan_graph_topology": Exporter(
        target="ggml_vulkan_graph_topology", language="C", extension="c",
        upstream="ggml-vulkan (lavapipe here) and ggml_backend_sched over ggml-vulkan and the CPU backend",
        version=GGML_VERSION, generate=ggml_c.generate, extra={"backend": "vulkan"},
        build=_C_BUILD.replace("{libs}", "-lggml -lggml-vulkan -lggml-cpu -lggml-base -lvulkan -lstdc++"),
        run="{env} {exe}", env={"GGML_VK_VISIBLE_DEVICES": "0"}),
    "whisper_string_handoff": Exporter(
        target="whisper_string_handoff", language="C", extension="c",
        upstream="whisper.cpp's C API (whisper.h) on its CPU backend",
        version=WHISPER_VERSION, generate=whisper_c.generate,
        # the asan lane's generated models (scripts/make-whisper-model.py)
        env={"WHISPER_MODEL": str(ROOT / "build" / "asan" / "whisper-models" / "tiny-multilingual.bin"),
             "WHISPER_MODEL_EN": str(ROOT / "build" / "asan" / "whisper-models" / "tiny-en.bin")},
        build_help="\n".join([
            "Build and run, against whisper.cpp built with `-fsanitize=address,undefined` (e.g. `cmake -B build "
            "-DCMAKE_C_FLAGS=-fsanitize=address,undefined -DCMAKE_CXX_FLAGS=-fsanitize=address,undefined "
            "-DBUILD_SHARED_LIBS=OFF && cmake --build build --target whisper`), in its source folder $WHISPER, with any "
            "multilingual model:", "", "```sh",
            "cc -g -fsanitize=address,undefined {file} -I$WHISPER/include -I$WHISPER/ggml/include -L$WHISPER/build/src "
            "-L$WHISPER/build/ggml/src -lwhisper -lggml -lggml-cpu -lggml-base -lstdc++ -lm -lpthread -o {exe}",
            "# ggml_graph_nbytes's report on every graph build (finding ggml-graph-nbytes-null-offset; its helper",
            "# incr_ptr_aligned where it is not inlined)",
            "printf 'pointer-overflow:ggml_graph_nbytes\\npointer-overflow:incr_ptr_aligned\\n' > ubsan.supp",
            "ASAN_OPTIONS=detect_stack_use_after_return=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:"
            "suppressions=ubsan.supp WHISPER_MODEL=models/ggml-tiny.bin ./{exe}", "```", ""])),
    "torch_capsule_lifecycle": Exporter(
        target="torch_capsule_lifecycle", language="Python", extension="py", upstream="PyTorch and NumPy",
        version="PyTorch 1.13.1 (Debian 12 python3-torch 1.13.1+dfsg-4) with NumPy 1.24.2 (python3-numpy)",
        generate=_torch_generate, run="python3 {file}"),
}


def run_env(rep: repro.Reproducer, exporter: Optional[Exporter] = None) -> dict:
    """The environment an exported program runs in: sanitizer reports with stacks (a SIGABRT from assert()
    or GGML_ABORT included: handle_abort=1), findings fatal, ggml's gdb backtrace off, UBSan's suppression of
    the ggml_graph_nbytes report every graph build gives (finding ggml-graph-nbytes-null-offset), and the
    exporter's own variables (ggml-vulkan shown the CPU device lavapipe is; whisper's models); the reproducer's
    sanitizer options go on top (appended, so that they win). The harness's own variables (LIFELINE_*) never reach an exported program."""
    sym = shutil.which("llvm-symbolizer-14") or shutil.which("llvm-symbolizer")
    asan = "handle_abort=1:detect_stack_use_after_return=1:detect_leaks=1:halt_on_error=1"
    if sym:
        asan += f":external_symbolizer_path={_option_value(sym)}"
    ubsan = f"halt_on_error=1:print_stacktrace=1:suppressions={_option_value(str(UBSAN_UPSTREAM_SUPP))}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("LIFELINE_")}
    env.update(ASAN_OPTIONS=asan, UBSAN_OPTIONS=ubsan, GGML_NO_BACKTRACE="1")
    for key, value in (exporter.env if exporter is not None else {}).items():
        env.setdefault(key, value)
    for key, value in rep.env.items():
        if key.endswith("SAN_OPTIONS"):
            env[key] = env[key] + ":" + value if key in env else value
    return env


def shown_env(rep: repro.Reproducer, exporter: Exporter) -> str:
    """run_env's own variables as a shell prefix, for report.md."""
    if exporter.language != "C":
        return ""
    env = run_env(rep, exporter)
    keys = ["ASAN_OPTIONS", "UBSAN_OPTIONS", "GGML_NO_BACKTRACE"] + (
        ["GGML_VK_VISIBLE_DEVICES"] if "GGML_VK_VISIBLE_DEVICES" in env and exporter.extra.get("backend") else [])
    return " ".join(shlex.quote(f"{k}={env[k]}") for k in keys)


def _option_value(path: str) -> str:
    """A path as a sanitizer option value: quoted when it holds characters that end a value."""
    return f'"{path}"' if re.search(r"[\s:'\"]", path) else path


def signature_for(rep: repro.Reproducer, lane: str) -> Optional[dict]:
    """The signature the exported program of `rep` must fail with, or None when it has none to check."""
    if rep.export is not None:
        return rep.export
    return rep.expect.get(lane)


def _run(cmd: list, env: Optional[dict] = None, cwd=None) -> tuple[int, str]:
    try:
        proc = subprocess.run([str(c) for c in cmd], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              timeout=RUN_TIMEOUT_S, cwd=cwd)
    except subprocess.TimeoutExpired as e:
        return -1, (e.stdout or b"").decode("utf-8", "replace") + f"\n[timed out after {RUN_TIMEOUT_S} s]\n"
    return proc.returncode, proc.stdout.decode("utf-8", "replace")


def bug_json(bug: repro.Bug) -> dict:
    """bug.json as JSON (its notes, report and references, which repro.load does not keep)."""
    try:
        doc = json.loads((bug.path / "bug.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


# ---- one exported file ------------------------------------------------------------------------------

def program_of(bug: repro.Bug, rep: repro.Reproducer, lane: str = "asan") -> dict:
    """The reproducer's program, decoded by the target as its pinned check runs it (the finding's guard off)."""
    binary = ROOT / "build" / lane / "targets" / bug.target
    if not binary.is_file():
        raise UsageError(f"lifeline export: {binary} is not built; build it with `cmake --preset {lane} && "
                         f"cmake --build build/{lane} --target {bug.target}`")
    env = switch_env(None, unguard=bug.guard, **rep.env)
    # The program is stdout; stderr is the target's own (what its backend prints as it starts, its sanitizers'
    # reports at exit), read only for why a decode failed.
    try:
        proc = subprocess.run([str(binary), "--program", "decode", str(rep.input.resolve())], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise UsageError(f"lifeline export: {binary.name} did not decode {rep.input} in {RUN_TIMEOUT_S} s")
    out = proc.stdout.decode("utf-8", "replace")
    if proc.returncode != 0:
        err = proc.stderr.decode("utf-8", "replace")
        raise UsageError(f"lifeline export: {binary.name} could not decode {rep.input} (exit {proc.returncode}): "
                         f"{err.strip().splitlines()[-1:] or out.strip().splitlines()[-1:] or ''}")
    try:
        return json.loads(out)
    except ValueError:
        raise UsageError(f"lifeline export: {binary.name} --program decode printed no program for {rep.input}")


def finding_of(bug: repro.Bug, rep: repro.Reproducer, exporter: Exporter) -> dict:
    doc = bug_json(bug)
    report = dict(doc.get("report") or {})
    computes = rep.env.get("LIFELINE_GGML_POOL_COMPUTES")
    if computes:  # the harness ages its thread pools by this many computes (ggml_host.cc): the export does it itself
        report.setdefault("check", "pool-computes")
        report["pool_computes"] = int(computes)
    return dict(exporter.extra, id=bug.id, title=bug.title, report=report, status=bug.status, input=rep.input.name)


def source_of(bug: repro.Bug, rep: repro.Reproducer, exporter: Exporter, lane: str = "asan") -> str:
    program = program_of(bug, rep, lane)
    try:
        return exporter.generate(program, finding_of(bug, rep, exporter))
    except ValueError as e:
        raise UsageError(f"lifeline export: {rep.input.name} of {bug.id}: the exporter cannot write its program: {e}")


def code_lines(text: str, language: str) -> int:
    if language == "C":
        return ggml_c.code_lines(text)
    return sum(1 for line in text.splitlines() if line.strip() and not line.strip().startswith("#"))


# ---- lifeline export --------------------------------------------------------------------------------

def _load_bug(bug_id: str, repro_root: Path, verb: str = "export") -> repro.Bug:
    def known() -> str:  # for an error only: it reads every bug.json
        exported = sorted(d.name for d in repro.folders(repro_root) if _exportable(d))
        return "; findings it exports: " + ", ".join(exported) if exported else ""

    if not BUG_ID.fullmatch(bug_id) or not (repro_root / bug_id).is_dir():
        raise UsageError(f"lifeline {verb}: unknown bug id '{bug_id}' (no folder {repro_root / bug_id}){known()}")
    try:
        bug = repro.load(repro_root / bug_id)
    except repro.BugJsonError as e:
        raise UsageError(f"lifeline {verb}: {e}")
    if bug.status not in EXPORTED_STATUSES:
        why = {"fixed": "it is modelled in lifeline's own code, so there is nothing to report upstream",
               "not-a-bug": "it was found not to be a bug (bug.json says why)"}.get(bug.status, "")
        raise UsageError(f"lifeline {verb}: bug '{bug_id}' has status '{bug.status}': {why}; export takes findings "
                         f"the pinned upstream has{known()}")
    if not bug.reproducers:
        raise UsageError(f"lifeline {verb}: bug '{bug_id}' has no reproducers of its own (upstream fixed it before the "
                         f"pinned version; its upstream variant re-introduces it){known()}")
    return bug


def _exportable(d: Path) -> bool:
    """A finding the pinned upstream has, with reproducers of its own."""
    try:
        bug = repro.load(d)
    except repro.BugJsonError:
        return False
    return bug.status in EXPORTED_STATUSES and bool(bug.reproducers)


def _out_dir(out: str) -> Path:
    p = Path(out).absolute()
    if p.exists() and not p.is_dir():
        raise UsageError(f"lifeline export: --out '{out}' is not a directory")
    try:
        p.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UsageError(f"lifeline export: --out '{out}' cannot be created ({e.strerror})")
    if not os.access(p, os.W_OK | os.X_OK):
        raise UsageError(f"lifeline export: --out '{out}' is not writable")
    return p


def _stack_excerpt(text: str, limit: int = 14) -> str:
    """The report's lines: from a little above the first sanitizer, assert, abort or traceback line to the end
    of its first stack (the allocation stack and shadow bytes of an ASan report are left out), frames of the
    sanitizers' and libc's abort machinery dropped."""
    lines = upstream_coordinates(text).splitlines()
    start = next((i for i, line in enumerate(lines)
                  if "ERROR: AddressSanitizer" in line or "runtime error:" in line or "Assertion `" in line
                  or "GGML_ASSERT(" in line or "fatal error" in line or line.startswith("Traceback")), None)
    own = [line for line in lines[:start] if _OWN_LINES.match(line)] if start is not None else []
    if start is None:
        return "\n".join(lines[-limit:])
    out, seen_frame = own[:6], False
    limit += len(out)
    for line in lines[start:]:
        is_frame = re.match(r"\s*#\d+ ", line) is not None
        if seen_frame and not is_frame and not line.startswith("  File") and not line.startswith("    "):
            break
        seen_frame = seen_frame or is_frame
        if is_frame and re.search(r" in (__pthread_kill|raise|abort|__assert_fail|ggml_abort|__interceptor_|_start|"
                                  r"__libc_start)", line):
            continue
        out.append(re.sub(r" \(BuildId: [0-9a-f]+\)", "", line))
        if len(out) >= limit:
            break
    return "\n".join(out)


# The program's own lines (the exporters print them: a check's answers, a canary's, a verdict), kept in report.md's
# excerpt before the sanitizer's report so that what the program saw reaches the report.
_OWN_LINES = re.compile(r"^(actual|verdict|ggml_backend_supports_op\(|ggml_gallocr_reserve_n_size:|the program ran)")
# Where the lanes keep upstream's trees: the pinned ggml, and ggml-vulkan's build-compat copies (patched).
_PINNED_GGML = re.compile(r"\S*?/build/upstream/llama\.cpp/ggml/src/")
_COMPAT_COPY = re.compile(r"(\S*?/build/upstream/(ggml-vulkan[^/\s]*)/src/)(ggml-vulkan/[^:\s]+):(\d+)")


def _compat_line_map(copy: Path, original: Path) -> dict[int, int]:
    """Line numbers of a build-compat copy (cmake/ggml-vulkan/compat/*.patch applied) -> the same lines in
    upstream's file; lines the patches added are absent."""
    import difflib
    a = original.read_text(errors="replace").splitlines()
    b = copy.read_text(errors="replace").splitlines()
    out = {}
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            out.update({j1 + k + 1: i1 + k + 1 for k in range(j2 - j1)})
    return out


def upstream_coordinates(text: str) -> str:
    """A stack in upstream's own coordinates: the pinned tree's paths as upstream names them (ggml/src/...), and
    a line of a ggml-vulkan file compiled from lifeline's build-compat copy mapped to that line in upstream's file
    (a line the compat patch added says so)."""
    maps: dict[str, dict] = {}

    def vk(m: re.Match) -> str:
        prefix, copy_dir, rel, line = m.group(1), m.group(2), m.group(3), int(m.group(4))
        copy = Path(prefix) / rel
        original = ROOT / "build" / "upstream" / "llama.cpp" / "ggml" / "src" / rel
        if copy_dir != "ggml-vulkan" or not copy.is_file() or not original.is_file():
            return m.group(0)  # another source's copy: its own tree is what its lines refer to
        key = str(copy)
        if key not in maps:
            maps[key] = _compat_line_map(copy, original)
        n = maps[key].get(line)
        return f"ggml/src/{rel}:{n}" if n else f"ggml/src/{rel} (a line of lifeline's build-compat patch)"
    text = _COMPAT_COPY.sub(vk, text)
    return _PINNED_GGML.sub("ggml/src/", text)


def lane_source(lane: str) -> Optional[str]:
    """The ggml tree a lane was configured from when it is not the pinned one (LIFELINE_GGML_SOURCE_DIR)."""
    cache = ROOT / "build" / lane / "CMakeCache.txt"
    try:
        for line in cache.read_text(errors="replace").splitlines():
            if line.startswith("LIFELINE_GGML_SOURCE_DIR:"):
                return line.split("=", 1)[1].strip() or None
    except OSError:
        pass
    return None


def _exe_of(bug: repro.Bug, rep: repro.Reproducer, exporter: Exporter, lane: str) -> Path:
    d = ROOT / "build" / lane / "exports" / bug.id
    return d / (rep.input.name + (".py" if exporter.language == "Python" else ""))


def _observe(bug: repro.Bug, rep: repro.Reproducer, exporter: Exporter, text: str) -> tuple[str, str, Optional[crashmod.Crash], int]:
    """(where the output comes from, the output, its parsed report, exit status): the exported program as the
    lane built it, when it was built from the same text; a Python export is run as it is."""
    if exporter.language == "Python":
        with tempfile.TemporaryDirectory() as tmp:
            f = Path(tmp) / (rep.input.name + ".py")
            f.write_text(text)
            rc, out = _run(["/usr/bin/python3", f], env=run_env(rep, exporter))
        return "the exported script on this machine", out, crashmod.parse(out), rc
    exe = _exe_of(bug, rep, exporter, exporter.lane)
    source = exe.parent / f"{rep.input.name}.{exporter.extension}"
    if exporter.target.startswith("ggml_") and lane_source(exporter.lane):
        return "", "", None, 0  # built against another ggml than the version report.md names
    if exe.is_file() and source.is_file() and source.read_text(errors="replace") == text:
        rc, out = _run([exe], env=run_env(rep, exporter))
        return f"the exported program as the {exporter.lane} lane built it", out, crashmod.parse(out), rc
    return "", "", None, 0


def _section(title: str, body) -> list:
    body = [body] if isinstance(body, str) else list(body)
    return [f"## {title}", ""] + body + [""]


# Where the code a finding's frames name runs, by the upstream function's prefix: "Affects" names that, not the
# backend the reproducer happens to run on (a gallocr bug is every backend's).
_RUNS_IN = (
    (re.compile(r"^(ggml_gallocr|ggml_dyn_tallocr|ggml_vbuffer|ggml_backend_alloc_ctx|ggml_tallocr)"),
     "ggml's graph allocator (ggml-alloc.c: ggml_gallocr), which every backend's graphs go through (directly, or "
     "through ggml_backend_sched); shown here on {shown}"),
    (re.compile(r"^ggml_vk_"), "ggml-vulkan (shown here on lavapipe, Mesa's CPU Vulkan device)"),
    (re.compile(r"^ggml_backend_sched"), "ggml_backend_sched (ggml-backend.cpp), with any set of backends; shown here "
     "on {shown}"),
    (re.compile(r"^(ggml_graph_nbytes|ggml_new_graph|ggml_graph_overhead|ggml_new_tensor|ggml_view)"),
     "ggml's core (ggml.c), which every backend uses; shown here on {shown}"),
)


def runs_in(doc: dict, exporter: Exporter, frames: list[str]) -> str:
    """"Affects"'s first words: bug.json report's "runs_in" where it says, else what the first upstream frame of
    the finding's stack is part of (_RUNS_IN), else the backend the exporter's programs run on."""
    r = doc.get("report") or {}
    if isinstance(r.get("runs_in"), str) and r["runs_in"].strip():
        return r["runs_in"]
    for frame in frames:
        for pattern, words in _RUNS_IN:
            if pattern.match(frame):
                return words.format(shown=exporter.upstream)
    return exporter.upstream


def _frames(rep: repro.Reproducer, exporter: Exporter, found) -> list[str]:
    if found is not None:
        return [f.strip() for f in found.signature.split("|", 1)[-1].split("/")]
    sig = signature_for(rep, exporter.lane) or {}
    return [sig["frame"]] if sig.get("frame") else []


def shipped_programs(bug: repro.Bug) -> list[tuple[str, Path, str]]:
    """bug.json report's "programs": files that show a claim the reproducers do not (a second trigger, a class's
    sweep and its table), each [{"file": NAME, "source": PATH?, "shows": TEXT}]: (name in the export, the file,
    what it shows). "source" is relative to the project's root (default: the finding's folder / NAME)."""
    out = []
    for i, p in enumerate((bug_json(bug).get("report") or {}).get("programs") or []):
        where = f"{bug.path / 'bug.json'}: report.programs[{i}]"
        if not isinstance(p, dict) or not isinstance(p.get("file"), str) or not PLAIN_NAME.fullmatch(p["file"]) \
                or not isinstance(p.get("shows"), str) or not p["shows"].strip():
            raise UsageError(f"{where} must be {{\"file\": NAME (letters, digits, . _ -), \"shows\": TEXT}}")
        src = ROOT / p["source"] if isinstance(p.get("source"), str) else bug.path / p["file"]
        if not src.is_file():
            raise UsageError(f"{where}: {src} does not exist")
        out.append((p["file"], src, p["shows"]))
    return out


def _report(bug: repro.Bug, exporter: Exporter, rows: list) -> str:
    doc = bug_json(bug)
    r = doc.get("report") or {}
    md = [f"# {r.get('title') or bug.title}", ""]
    from .matrix import versions_line  # the committed matrix of real ggml versions (bench/results/matrix/)
    versions = versions_line(bug.id) if exporter.target.startswith("ggml_") else None
    md += [f"- **Version**: {exporter.version}.",
           f"- **Affects**: {runs_in(doc, exporter, [f for row in rows for f in _frames(row[0], exporter, row[5])])}"
           + (f"; {r['affects']}" if r.get("affects") else "")
           + (f"; by version, {versions}" if versions else "") + ".",
           f"- **Status here**: `{bug.status}`" + (f" ({doc['status_notes']})" if doc.get("status_notes") else "") + ".",
           f"- **Found by**: lifeline's fuzz target `{bug.target}` (finding `{bug.id}`)."]
    intro = doc.get("introduced_by")
    if isinstance(intro, dict) and intro.get("commit"):
        how = "read off the history by hand" if intro.get("found_by") == "history" else "`lifeline bisect`"
        md.append(f"- **First bad commit** ({how}, {intro.get('repo', 'upstream')}): {intro['commit'][:12]} "
                  f"\"{intro.get('subject', '')}\" ({intro.get('date', '')})."
                  + (f" {intro['note']}" if intro.get("note") else ""))
    elif isinstance(intro, dict) and intro.get("before"):
        md.append(f"- **Introduced**: before {intro.get('repo', 'upstream')} {intro['before'][:12]} "
                  f"\"{intro.get('subject', '')}\" ({intro.get('date', '')}), the oldest commit this reproducer builds "
                  f"against (`lifeline bisect`): it fails there already."
                  + (f" {intro['note']}" if intro.get("note") else ""))
    md.append("")
    if r.get("contract"):
        md += _section("The contract", f"> {r['contract']}")
    md += _section("What happens", doc.get("notes") or "(bug.json has no notes)")
    configs = r.get("configurations")
    if isinstance(configs, list) and configs:
        md += ["## Configurations", "", "| ggml build | what the reproducer gives |", "|---|---|"]
        md += [f"| {c.get('build', '')} | {c.get('result', '')} |" for c in configs if isinstance(c, dict)]
        md += [""] + ([r["configurations_notes"], ""] if r.get("configurations_notes") else [])
    shipped = shipped_programs(bug)
    if shipped:
        md += ["## Claims and the programs that show them", "",
               "Each reproducer below shows the title's claim. Beside them in this folder:", ""]
        md += [f"- `{name}`: {shows}" for name, _, shows in shipped] + [""]
    for rep, name, text, source, out, found, rc in rows:
        sig = signature_for(rep, exporter.lane)
        md += [f"## Reproducer `{name}` ({code_lines(text, exporter.language)} lines of code)", "", "```"
               + ("c" if exporter.language == "C" else "python"), text.rstrip(), "```", ""]
        if r.get("expected"):
            md += [f"Expected: {r['expected']}", ""]
        if found is not None:
            md += [f"Actual ({source}): `{found.signature}`", "", "```", _stack_excerpt(out), "```", ""]
        elif exporter.language == "Python" and "AssertionError" in out:
            md += [f"Actual ({source}):", "", "```", _stack_excerpt(out), "```", ""]
        elif sig:
            md += [f"Actual: fails with `{sig['type']}`" + (f" in `{sig['frame']}`" if sig.get("frame") else "")
                   + " (not run here: the exported program is not built).", ""]
        q = shlex.quote
        if exporter.build_help:
            md += [exporter.build_help.format(file=q(name), exe=q(Path(name).stem))]
        elif exporter.language == "C":
            exe = Path(name).stem
            env = "ASAN_OPTIONS=handle_abort=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:suppressions=ubsan.supp " \
                  "GGML_NO_BACKTRACE=1" + (" GGML_VK_VISIBLE_DEVICES=0" if exporter.extra.get("backend") == "vulkan" else "")
            md += ["Build and run, against ggml built with `-fsanitize=address,undefined` (e.g. `cmake -B build "
                   "-DCMAKE_C_FLAGS=-fsanitize=address,undefined -DCMAKE_CXX_FLAGS=-fsanitize=address,undefined`; for a "
                   "release build add `-DNDEBUG`; see Configurations):", "", "```sh",
                   exporter.build.format(file=q(name), exe=q(exe), include="$GGML/include", libdir="$GGML/build/src",
                                         cflags="").replace("  ", " "),
                   "echo 'pointer-overflow:ggml_graph_nbytes' > ubsan.supp  # ggml_graph_nbytes's report on every graph "
                   "build (finding ggml-graph-nbytes-null-offset)" if bug.id != "ggml-graph-nbytes-null-offset" else
                   "touch ubsan.supp",
                   f"{env} ./{q(exe)}", "```", "",
                   "(`handle_abort=1` gives an assert() or GGML_ABORT a sanitizer stack.)", ""]
        else:
            md += ["Run: `python3 " + q(name) + "` (exits 0 once fixed).", ""]
    if r.get("fix"):
        md += _section("Fix direction", r["fix"])
    prior = _prior_art_lines(doc)
    if prior:
        md += _section("Prior art and references", prior)
    md += [f"Generated by `lifeline export {bug.id}` from `repro/{bug.id}/`."]
    return "\n".join(md) + "\n"


def _prior_art_lines(doc: dict) -> list:
    """bug.json's prior_art (the upstream threads, each with how it relates), where the triage searched, and its
    plain references, as report.md's last section."""
    lines = []
    for x in doc.get("prior_art") or []:
        # Each date labelled with what it is; a merged entry with its merge and its first release where seen.
        what = ", ".join([str(x[k]) for k in ("relation", "state") if x.get(k)]
                         + [f"{k} {x[k]}" for k in ("opened", "merged", "closed") if x.get(k)]
                         + ([x["release"]] if x.get("release") else [])
                         + ([f"state as of {x['as_of']}"] if x.get("as_of") else []))
        title = f"\"{x['title']}\" " if x.get("title") else ""
        lines.append(f"- {x['url']} {title}({what})" + (f": {x['notes']}" if x.get("notes") else ""))
    triage = doc.get("triage") or {}
    if triage.get("searched"):
        lines += ["", f"Searched ({triage.get('date', 'undated')}):"] + [f"- {s}" for s in triage["searched"]]
    refs = [x for x in (doc.get("upstream") or []) if isinstance(x, str)]
    if refs:
        lines += ["", "References:"] + [f"- {x}" for x in refs]
    return lines


def _measure_configs(bug: repro.Bug, exporter: Exporter, rows: list, names: str = "all") -> list:
    """Each C reproducer built against ggml with asserts and with -DNDEBUG, with and without OpenMP (builds of
    ggml-base and ggml-cpu under ASan+UBSan in build/export-configs/, made once) and without sanitizers, and what
    each run gave: the configurations `names` names ("all", or NAME,...), the others' rows as bug.json has them."""
    from . import configs
    chosen = configs.CONFIGS if names == "all" else [c for c in configs.CONFIGS if c.name in names.split(",")]
    unknown = sorted(set(names.split(",")) - {c.name for c in configs.CONFIGS}) if names != "all" else []
    if unknown or not chosen:
        raise UsageError(f"lifeline export: --configs: unknown configuration '{(unknown or [names])[0]}' (known: "
                         f"{', '.join(c.name for c in configs.CONFIGS)})")
    whisper = exporter.target == "whisper_string_handoff"
    if whisper and chosen != [configs.PLAIN_CONFIG]:
        raise UsageError("lifeline export: --configs for whisper.cpp's findings is 'plain' only (whisper.cpp without "
                         "sanitizers); its sanitizer builds are the asan lane's")
    labels = {c.label for c in chosen}
    kept = [r for r in (bug_json(bug).get("report") or {}).get("configurations") or []
            if isinstance(r, dict) and not any(str(r.get("build", "")).startswith(lab) for lab in labels)]
    results = []
    for cfg in configs.CONFIGS:
        if cfg not in chosen:
            results += [r for r in kept if str(r.get("build", "")).startswith(cfg.label)]
            continue
        libdir, include = configs.ensure_whisper_plain() if whisper else configs.ensure(cfg)
        for rep, name, text, *_ in rows:
            rc, out = configs.run(text, libdir, include, cfg, run_env(rep, exporter),
                                  libs=configs.WHISPER_LIBS if whisper else configs.GGML_LIBS)
            found = crashmod.parse(out)
            verdict = [line for line in upstream_coordinates(out).splitlines()
                       if line.startswith(("actual:", "verdict:")) or "GGML_ASSERT(" in line
                       or line.endswith(": fatal error") or "Assertion `" in line][:3]
            how = f"killed by {signal.Signals(-rc).name}" if rc < 0 and -rc in signal.valid_signals() else f"exit {rc}"
            result = found.signature if found else ("runs clean" if rc == 0 else how
                                                    + (f": {' '.join(verdict)}" if verdict else ", no report"))
            results.append({"build": cfg.label + (f" ({name})" if len(rows) > 1 else ""), "result": result})
            print(f"  {cfg.label}: {name}: {result}")
    return results


def cmd_export(args) -> int:
    repro_root = ROOT / "repro"
    bug = _load_bug(args.bug_id, repro_root)
    exporter = EXPORTERS.get(bug.target)
    if exporter is None:
        raise UsageError(f"lifeline export: target '{bug.target}' of bug '{bug.id}' has no exporter (targets with "
                         f"one: {', '.join(sorted(EXPORTERS))})")
    out = _out_dir(args.out if args.out is not None else str(ROOT / "export-out" / bug.id))
    rows = []
    for rep in bug.reproducers:
        name = f"{rep.input.name}.{exporter.extension}"
        text = source_of(bug, rep, exporter)
        (out / name).write_text(text)
        source, run_out, found, rc = _observe(bug, rep, exporter, text)
        rows.append((rep, name, text, source, run_out, found, rc))
        print(f"wrote {out / name} ({code_lines(text, exporter.language)} lines of code)"
              + (f"  ({found.signature})" if found else ""))
    if getattr(args, "configs", False):
        if exporter.language != "C":
            raise UsageError("lifeline export: --configs builds ggml in several configurations; "
                             f"{bug.target}'s exports are {exporter.language}")
        if exporter.extra.get("backend", "cpu") != "cpu":
            raise UsageError("lifeline export: --configs builds ggml's CPU backend only (ggml-base, ggml-cpu); "
                             f"{bug.target}'s exports also need ggml-vulkan, which the asan lane builds and "
                             f"repro.{bug.id}.asan.export checks")
        results = _measure_configs(bug, exporter, rows, args.configs)
        doc = bug_json(bug)
        doc.setdefault("report", {})["configurations"] = results
        (bug.path / "bug.json").write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
        print(f"recorded {len(results)} configuration result(s) in {bug.path / 'bug.json'}")
    for name, src, _ in shipped_programs(bug):
        shutil.copyfile(src, out / name)
        print(f"copied {out / name} (from {src.relative_to(ROOT) if src.is_relative_to(ROOT) else src})")
    report = out / "report.md"
    report.write_text(_report(bug, exporter, rows), encoding="utf-8")
    print(f"wrote {report}")
    return 0


# ---- internal: export-plan (CMake), export-source (the build), export-check (ctest) -----------------

def plan(repro_root: Path, lane: str) -> list[str]:
    """export|<id>|<target>|<extension>|<input>,<input>,... for every exported finding whose target has an
    exporter checked in `lane`; inputs whose names CMake cannot carry (not letters, digits, . _ -) are left
    out, and export-check fails naming them."""
    lines = []
    for bug in repro.loadable(repro_root):
        exporter = EXPORTERS.get(bug.target)
        if bug.status not in EXPORTED_STATUSES or exporter is None or exporter.lane != lane or not bug.reproducers:
            continue
        inputs = [r.input.name for r in bug.reproducers if PLAIN_NAME.fullmatch(r.input.name)]
        if inputs and PLAIN_NAME.fullmatch(bug.id):
            lines.append("|".join(["export", bug.id, bug.target, exporter.extension, ",".join(inputs)]))
    return lines


def cmd_export_plan(args) -> int:
    root = Path(args.repro_root)
    if not root.is_dir():
        raise UsageError(f"lifeline export-plan: repro root '{root}' is not a directory")
    for line in plan(root, args.lane):
        print(line)
    return 0


def cmd_export_source(args) -> int:
    try:
        bug = repro.load(Path(args.repro_dir).absolute())
    except repro.BugJsonError as e:
        raise UsageError(f"lifeline export-source: {e}")
    exporter = EXPORTERS.get(bug.target)
    rep = next((r for r in bug.reproducers if r.input.name == args.input), None)
    if exporter is None or rep is None:
        raise UsageError(f"lifeline export-source: {bug.id} has no exported input '{args.input}'")
    Path(args.out).write_text(source_of(bug, rep, exporter, args.lane))
    return 0


def check(bug: repro.Bug, lane: str, exe_dir: Path, other_source: str | None = None,
          not_reproduced: list | None = None) -> bool:
    """Every reproducer's exported program fails with its signature. Prints one line per input. With
    `other_source` (the programs were built against that upstream source, not the pinned one) a program that
    runs clean is not a failure but goes into `not_reproduced`."""
    exporter = EXPORTERS.get(bug.target)
    python = exporter is not None and exporter.language == "Python"
    ok_all, ran = True, 0
    for rep in bug.reproducers:
        sig = signature_for(rep, lane)
        name = rep.input.name
        if sig is None:
            continue
        ran += 1
        if not python and sig["type"] in ("lifeline-check", "lifeline-precondition") and rep.export is None:
            print(f"FAIL {name}: its {lane} signature is lifeline's own oracle ({sig['type']}), which the exported "
                  "program does not have; give the reproducer an \"export\" signature in bug.json")
            ok_all = False
            continue
        exe = exe_dir / (name + (".py" if python else ""))
        if not exe.is_file():
            why = "" if PLAIN_NAME.fullmatch(name) else " (only inputs named with letters, digits, . _ - are exported)"
            print(f"FAIL {name}: the exported program {exe} is not built{why}")
            ok_all = False
            continue
        rc, out = _run((["/usr/bin/python3"] if python else []) + [exe], env=run_env(rep, exporter))
        if python:
            # Its AssertionError; or, for a finding whose signature is no oracle of lifeline's (an abort of the
            # interpreter), that signature.
            found = crashmod.parse(out) if sig["type"] not in ("lifeline-check", "lifeline-precondition") else None
            if rc != 0 and "AssertionError" in out:
                print(f"PASS {name}: AssertionError: " + out.split("AssertionError", 1)[1].strip().splitlines()[0][:200])
            elif rc != 0 and found is not None and crashmod.matches(found, sig)[0]:
                print(f"PASS {name}: {found.signature}")
            else:
                print(f"FAIL {name}: the exported script must fail with its AssertionError or {sig} (exit {rc})\n"
                      f"{repro.tail(out)}")
                ok_all = False
            continue
        found = crashmod.parse(out)
        ok, why = crashmod.matches(found, sig)
        if ok and rc == 0:
            ok, why = False, "the report was printed but the program exited 0"
        if ok:
            print(f"PASS {name}: {found.signature}")
        elif rc == 0 and found is None and other_source:
            print(f"NOT REPRODUCED {name}: the exported program ran clean on {other_source} (the pinned upstream "
                  f"gives {sig})")
            if not_reproduced is not None:
                not_reproduced.append(name)
        elif rc == 0 and found is None:
            print(f"FAIL {name}: the exported program ran clean (expected {sig}); it no longer reproduces the "
                  f"finding\n{repro.tail(out)}")
            ok_all = False
        else:
            print(f"FAIL {name}: the exported program must give {sig}; {why}\n{repro.tail(out)}")
            ok_all = False
    if ran == 0:
        print(f"FAIL {bug.id}: no reproducer has an 'export' signature or lists lane '{lane}'")
        return False
    return ok_all


def cmd_export_check(args) -> int:
    try:
        bug = repro.load(Path(args.repro_dir).absolute())
    except repro.BugJsonError as e:
        print(f"FAIL {e}")
        return 1
    if args.build:
        # Built here, not by the lane: against another ggml source an exported program may not compile (an API that
        # tree lacks), which must not stop the lane's build. That is a skip, with the compiler's first error.
        build_dir, targets = args.build[0], args.build[1:]
        proc = subprocess.run(["cmake", "--build", build_dir, "--target", *targets], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, errors="replace")
        if proc.returncode != 0:
            errors = [line.strip() for line in proc.stdout.splitlines() if "error:" in line] or \
                     [line.strip() for line in proc.stdout.splitlines() if line.strip()][-1:]
            print(f"SKIPPED: the exported program does not build against {args.other_source or 'this source'}: "
                  f"{errors[0] if errors else 'cmake --build failed'}")
            return repro.NOT_REPRODUCED_EXIT
    not_reproduced = []
    ok = check(bug, args.lane, Path(args.exe_dir), args.other_source, not_reproduced)
    if ok and not_reproduced:
        total = sum(1 for r in bug.reproducers if signature_for(r, args.lane) is not None)
        print(repro.not_reproduced_line(not_reproduced, total, args.other_source))
        return repro.NOT_REPRODUCED_EXIT
    return 0 if ok else 1


def add_internal_parsers(make_parser) -> dict:
    """The parsers of export-plan, export-source and export-check (main.py runs them apart from the public verbs)."""
    p = make_parser(prog="lifeline export-plan", description="the exported reproducers CMake builds for one lane")
    p.add_argument("--lane", required=True, choices=LANES)
    p.add_argument("--repro-root", default=str(ROOT / "repro"))
    s = make_parser(prog="lifeline export-source", description="one exported file, for the build")
    s.add_argument("--repro-dir", required=True)
    s.add_argument("--input", required=True)
    s.add_argument("--out", required=True)
    s.add_argument("--lane", default="asan", choices=LANES)
    c = make_parser(prog="lifeline export-check", description="exported reproducers fail with their signature")
    c.add_argument("--repro-dir", required=True)
    c.add_argument("--lane", required=True, choices=LANES)
    c.add_argument("--exe-dir", required=True, help="the folder of the built exported programs (one per input)")
    c.add_argument("--other-source", help="the programs were built against this upstream source, not the pinned "
                   "one: one that runs clean is reported as not reproduced there (exit 77), not as a failure")
    c.add_argument("--build", nargs="+", metavar=("BUILD_DIR", "TARGET"),
                   help="build these targets of BUILD_DIR first; one that does not build is skipped (exit 77)")
    return {"export-plan": (p, cmd_export_plan), "export-source": (s, cmd_export_source),
            "export-check": (c, cmd_export_check)}
