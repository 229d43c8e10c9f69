"""What `lifeline export` exports with, and one exported file: the exporters (EXPORTERS, one per target: the
language and file extension, what the file runs on, the version line, how to build and run a file), the program a
reproducer decodes to and the file its target's exporter writes from it (source_of: what `lifeline export` and
`lifeline export-source` write), and the environment an exported program runs in (run_env) with the signature it
must fail with (signature_for). The findings exported are those with one of EXPORTED_STATUSES."""
from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
from dataclasses import dataclass, field
from typing import Callable, Optional

from . import repro
from .bugs import switch_env
from .exporters import ggml_c, llama_c, whisper_c
from .paths import ROOT
from .usage import UsageError

RUN_TIMEOUT_S = 300
PLAIN_NAME = re.compile(r"[A-Za-z0-9._-]+")
UBSAN_UPSTREAM_SUPP = ROOT / "core" / "suppressions" / "ubsan-upstream.supp"
GGML_VERSION = ("ggml-org/llama.cpp at \"llama.cpp : bump version to 0.5.0 (#29333)\" (tag v0.5.0), whose ggml/ is "
                "ggml 0.25.1; lifeline takes it from npm node-llama-cpp@3.22.1 (its git bundle, head de3ff815)")
WHISPER_VERSION = ("ggml-org/whisper.cpp v1.9.1 (its CMakeLists.txt's version; lifeline takes the tree from npm "
                   "nodejs-whisper@0.3.1, package/cpp/whisper.cpp)")
LLAMA_VERSION = ("ggml-org/llama.cpp at \"llama.cpp : bump version to 0.5.0 (#29333)\" (tag v0.5.0); lifeline takes "
                 "it from npm node-llama-cpp@3.22.1 (its git bundle, head de3ff815)")
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
    "llama_memory_differential": Exporter(
        target="llama_memory_differential", language="C", extension="c",
        upstream="llama.cpp's C API (llama.h) on ggml's CPU backend",
        version=LLAMA_VERSION, generate=llama_c.generate,
        # the fuzz and tsan lanes build llama.cpp's src/ (cmake/LifelineLlama.cmake); the fuzz lane decodes and
        # checks its exports (its codec: harness/CMakeLists.txt LIFELINE_LLAMA_CODEC)
        lane="fuzz",
        build_help="\n".join([
            "Build and run, against llama.cpp built with `-fsanitize=address,undefined` and asserts on (e.g. `cmake -B "
            "build -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS=-fsanitize=address,undefined "
            "-DCMAKE_CXX_FLAGS=-fsanitize=address,undefined -DBUILD_SHARED_LIBS=OFF && cmake --build build --target "
            "llama`), in its source folder $LLAMA (no model file: the program builds its tiny model):", "", "```sh",
            "cc -g -fsanitize=address,undefined {file} -I$LLAMA/include -I$LLAMA/ggml/include -L$LLAMA/build/src "
            "-L$LLAMA/build/ggml/src -lllama -lggml -lggml-cpu -lggml-base -lstdc++ -lm -lpthread -o {exe}",
            "ASAN_OPTIONS=handle_abort=1 ./{exe}", "```", ""])),
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


def run_captured(cmd: list, env: Optional[dict] = None, cwd=None) -> tuple[int, str]:
    """(exit status, stdout and stderr together) of `cmd`; past RUN_TIMEOUT_S, -1 and what it printed so far."""
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


def source_of(bug: repro.Bug, rep: repro.Reproducer, exporter: Exporter, lane: Optional[str] = None) -> str:
    """The exported file of `rep`, its program decoded by `lane`'s target (default: the exporter's lane)."""
    program = program_of(bug, rep, lane or exporter.lane)
    try:
        return exporter.generate(program, finding_of(bug, rep, exporter))
    except ValueError as e:
        raise UsageError(f"lifeline export: {rep.input.name} of {bug.id}: the exporter cannot write its program: {e}")


def code_lines(text: str, language: str) -> int:
    if language == "C":
        return ggml_c.code_lines(text)
    return sum(1 for line in text.splitlines() if line.strip() and not line.strip().startswith("#"))
