"""The ggml configurations a C reproducer is measured in (`lifeline export --configs`): the pinned ggml's
ggml-base, ggml-cpu and ggml built on their own by ggml's CMake, with ASan+UBSan as the asan lane builds them,
with asserts (-UNDEBUG) and without (-DNDEBUG, what a release build has: ggml's CMake defaults to Release), and
with ggml's own thread pool (GGML_OPENMP=OFF, as lifeline's lanes build it) and with OpenMP (ggml's default);
and once with no sanitizer at all (a release build as users ship it: -O2 -DNDEBUG), where a reproducer must show
the bug by its own verdict (a canary, a value, an answer it checks) and exit non-zero. Each is built once, in build/export-configs/<name>/, and reused; a reproducer is compiled against each and run.
"""
from __future__ import annotations

import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .paths import ROOT
from .usage import UsageError

PLAIN = "-O2 -g -fno-omit-frame-pointer"
SAN = ("-O1 -gline-tables-only -fdebug-info-for-profiling -fno-omit-frame-pointer -fsanitize=address,undefined "
       "-fsanitize-recover=pointer-overflow")


@dataclass(frozen=True)
class Config:
    name: str
    label: str
    ndebug: bool
    openmp: bool
    sanitize: bool = True

    def flags(self) -> str:
        return f"{SAN if self.sanitize else PLAIN} {'-DNDEBUG' if self.ndebug else '-UNDEBUG'}"


CONFIGS = (
    Config("asserts", "asserts on (-UNDEBUG), ggml's thread pool (GGML_OPENMP=OFF)", False, False),
    Config("ndebug", "release asserts (-DNDEBUG), ggml's thread pool (GGML_OPENMP=OFF)", True, False),
    Config("asserts-openmp", "asserts on (-UNDEBUG), OpenMP (GGML_OPENMP=ON, ggml's default)", False, True),
    Config("ndebug-openmp", "release asserts (-DNDEBUG), OpenMP (GGML_OPENMP=ON, ggml's default)", True, True),
    Config("plain", "no sanitizer: a release build (-O2 -DNDEBUG), ggml's thread pool (GGML_OPENMP=OFF)", True, False,
           sanitize=False),
)
PLAIN_CONFIG = CONFIGS[-1]


def _ggml_dir() -> Path:
    d = ROOT / "build" / "upstream" / "llama.cpp" / "ggml"
    if not (d / "CMakeLists.txt").is_file():
        raise UsageError("lifeline export --configs: the pinned ggml is not fetched (scripts/fetch-ggml.sh)")
    return d


# ggml as a subproject, as the lanes build it (cmake/LifelineGgml.cmake): configured on its own, ggml's CMake wants
# files the npm bundle leaves out (ggml.pc.in).
_WRAPPER = """cmake_minimum_required(VERSION 3.21)
project(lifeline_export_config C CXX)
set(BUILD_SHARED_LIBS OFF)
set(GGML_CPU ON)
set(GGML_BACKEND_DL OFF)
set(GGML_NATIVE OFF)
set(GGML_LLAMAFILE OFF)
set(GGML_CCACHE OFF)
set(GGML_BUILD_TESTS OFF)
set(GGML_BUILD_EXAMPLES OFF)
add_subdirectory("{ggml}" ggml EXCLUDE_FROM_ALL)
"""


def ensure(cfg: Config) -> tuple[Path, Path]:
    """(library folder, include folder) of the configuration, built first when it is not."""
    src = _ggml_dir()
    out = ROOT / "build" / "export-configs" / cfg.name
    flags = cfg.flags()
    libdir = out / "ggml" / "src"
    if not (libdir / "libggml-cpu.a").is_file():
        print(f"configs: building ggml ({cfg.label}) in {out}", flush=True)
        (out / "wrapper").mkdir(parents=True, exist_ok=True)
        (out / "wrapper" / "CMakeLists.txt").write_text(_WRAPPER.replace("{ggml}", str(src)))
        cmd = ["cmake", "-S", str(out / "wrapper"), "-B", str(out), "-G", "Ninja", "-DCMAKE_C_COMPILER=clang-14",
               "-DCMAKE_CXX_COMPILER=clang++-14", "-DCMAKE_BUILD_TYPE=lifeline",
               f"-DGGML_OPENMP={'ON' if cfg.openmp else 'OFF'}", f"-DCMAKE_C_FLAGS={flags}", f"-DCMAKE_CXX_FLAGS={flags}"]
        for step in (cmd, ["cmake", "--build", str(out), "--target", "ggml", "ggml-base", "ggml-cpu"]):
            proc = subprocess.run(step, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace")
            if proc.returncode != 0:
                raise UsageError(f"lifeline export --configs: building ggml ({cfg.label}) failed:\n"
                                 + "\n".join(proc.stdout.splitlines()[-15:]))
    return libdir, src / "include"


def ensure_whisper_plain() -> tuple[list, list]:
    """whisper.cpp as scripts/fetch-whisper.sh fetched it, built once by its own CMake without sanitizers (a release
    build, ggml's thread pool), in build/export-configs/whisper-plain/: (library folders, include folders) for
    run(..., libs=WHISPER_LIBS), what a whisper export needs to show its verdict without a sanitizer."""
    src = ROOT / "build" / "upstream" / "whisper.cpp"
    if not (src / "CMakeLists.txt").is_file():
        raise UsageError("lifeline: whisper.cpp is not fetched (scripts/fetch-whisper.sh)")
    out = ROOT / "build" / "export-configs" / "whisper-plain"
    if not (out / "src" / "libwhisper.a").is_file():
        print(f"configs: building whisper.cpp without sanitizers in {out}", flush=True)
        for step in (["cmake", "-S", str(src), "-B", str(out), "-G", "Ninja", "-DCMAKE_C_COMPILER=clang-14",
                      "-DCMAKE_CXX_COMPILER=clang++-14", "-DCMAKE_BUILD_TYPE=Release", "-DBUILD_SHARED_LIBS=OFF",
                      "-DGGML_NATIVE=OFF", "-DGGML_OPENMP=OFF", "-DWHISPER_BUILD_TESTS=OFF",
                      "-DWHISPER_BUILD_EXAMPLES=OFF", "-DWHISPER_BUILD_SERVER=OFF"],
                     ["cmake", "--build", str(out), "--target", "whisper"]):
            proc = subprocess.run(step, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace")
            if proc.returncode != 0:
                raise UsageError("lifeline: building whisper.cpp without sanitizers failed:\n"
                                 + "\n".join(proc.stdout.splitlines()[-15:]))
    return [out / "src", out / "ggml" / "src"], [src / "include", src / "ggml" / "include"]


GGML_LIBS = ("-lggml", "-lggml-cpu", "-lggml-base")
WHISPER_LIBS = ("-lwhisper",) + GGML_LIBS


def run(source: str, libdir, include, cfg: Config, env: dict, libs: tuple = GGML_LIBS) -> tuple[int, str]:
    """Compiles `source` (C) against the configuration (a folder of libraries and one of headers, or lists of them)
    and runs it: (exit status, output)."""
    libdirs = libdir if isinstance(libdir, list) else [libdir]
    includes = include if isinstance(include, list) else [include]
    with tempfile.TemporaryDirectory(prefix="lifeline-config-") as tmp:
        t = Path(tmp)
        (t / "repro.c").write_text(source)
        # the reproducer's own checks stay (-UNDEBUG): the configuration is ggml's build
        flags = (SAN if cfg.sanitize else PLAIN).split() + ["-UNDEBUG"]
        libs = [f"-L{d}" for d in libdirs] + list(libs) + ["-lstdc++", "-lm", "-lpthread"]
        if cfg.openmp:
            libs.append("-fopenmp")
        for step in (["clang-14", "-std=c11", *flags, "-c", "repro.c", *[f"-I{i}" for i in includes], "-o", "repro.o"],
                     ["clang++-14", *(["-fsanitize=address,undefined"] if cfg.sanitize else []), "repro.o", *libs,
                      "-o", "repro"]):
            proc = subprocess.run(step, cwd=t, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                  errors="replace")
            if proc.returncode != 0:
                return -2, "does not build: " + proc.stdout[-2000:]
        try:
            proc = subprocess.run([str(t / "repro")], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  timeout=300)
        except subprocess.TimeoutExpired:
            return -1, "timed out after 300 s"
        return proc.returncode, proc.stdout.decode("utf-8", "replace")
