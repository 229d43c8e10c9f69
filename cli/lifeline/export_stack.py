"""A run's output as report.md quotes it, in upstream's coordinates: the stack excerpt (stack_excerpt: the
program's own lines, then the first sanitizer, assert, abort or traceback report to the end of its first stack)
and the paths and lines of upstream's own tree (upstream_coordinates: the pinned ggml's paths as upstream names
them, a line of ggml-vulkan's build-compat copy mapped to upstream's line)."""
from __future__ import annotations

import re
from pathlib import Path

from .paths import ROOT


def stack_excerpt(text: str, limit: int = 14) -> str:
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
