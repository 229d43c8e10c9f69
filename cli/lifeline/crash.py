"""Turns sanitizer, valgrind, libFuzzer, LIFELINE_CHECK, upstream assert and uncaught-exception output into crash
type + crash state.

The crash state is the top 3 meaningful frames of the primary stack (ClusterFuzz's convention, matching
dedup_token_length=3): frames of sanitizer runtimes, libc, the C++ standard library, the check handler and
the fuzzing engine are skipped, and function names lose their argument lists. A LIFELINE_CHECK report that
names the upstream calls behind what it checked (its "upstream:" line) has as its state the oracle's kind and
those calls instead: an oracle finding in upstream code is told by its mechanism, not by the harness frame the
oracle ran in.

    parse(text) -> Crash | None     the first report in `text`, or None when there is none
"""
from __future__ import annotations

import dataclasses
import os
import re
from typing import Optional

STATE_FRAMES = 3


@dataclasses.dataclass
class Crash:
    tool: str                 # asan, ubsan, tsan, lsan, valgrind, lifeline, libfuzzer, upstream
    type: str                 # heap-use-after-free, stack-use-after-return, data-race, direct-leak, assert, ...
    state: list[str]          # top meaningful frames, normalized
    frames: list[str]         # every frame of the primary stack, normalized, in order
    access: Optional[str] = None   # "READ 1", "WRITE 8"
    message: Optional[str] = None  # LIFELINE_CHECK message, UBSan runtime error text, assert expression
    location: Optional[str] = None # file:line of the top meaningful frame, when known
    freed_by: list[str] = dataclasses.field(default_factory=list)  # ASan's "freed by thread" stack, normalized
    # A LIFELINE_CHECK report's "upstream:" line (core/check.h SetUpstreamContext): the upstream calls that produced
    # what the check looked at, each with what held when it ran ("ggml_gallocr_alloc_graph [kept plan; ...]")
    upstream: list[str] = dataclasses.field(default_factory=list)

    @property
    def signature(self) -> str:
        return self.type + " | " + " / ".join(self.state)

    def to_json(self) -> dict:
        d = dataclasses.asdict(self)
        d["signature"] = self.signature
        return d


# ---- frames ---------------------------------------------------------------------------------------

# "    #3 0x55d0c2 in lifeline::Foo(int) /path/file.cc:12:5"
# "    #8 0x7fd9e6cd44a2  (/lib/x86_64-linux-gnu/libstdc++.so.6+0xd44a2)"
# A source location: an absolute path may hold spaces (a checkout in "/home/me/my ggml"), a relative one does not.
_LOC = r"(?:/[^:]*|\S+):\d+(?::\d+)?"
_SAN_FRAME = re.compile(r"^\s*#(\d+)\s+0x[0-9a-fA-F]+(?:\s+in\s+(?P<func>.+?))?(?:\s+(?P<loc>" + _LOC + r"))?(?:\s+\((?P<mod>[^)]*)\))?\s*$")
# TSan: "    #0 lifeline::Foo(int) /path/file.cc:12:5 (binary+0x1234)"
_TSAN_FRAME = re.compile(r"^\s*#(\d+)\s+(?P<func>.+?)\s+(?P<loc>" + _LOC + r"|<null>)\s+\((?P<mod>[^)]*)\)\s*$")
# valgrind: "==123==    at 0x4848: lifeline::Foo(int) (file.cc:12)"  /  "by 0x...: ... (in /lib/libc.so.6)"
_VG_FRAME = re.compile(r"^==\d+==\s+(?:at|by) 0x[0-9A-Fa-f]+: (?P<func>.+?)(?: \((?P<loc>[^()]*)\))?\s*$")

_SKIP_PREFIXES = (
    "__asan", "__tsan", "__lsan", "__ubsan", "__sanitizer", "__interceptor_", "__interception::",
    "___interceptor_", "__cxa_", "__libc_", "__GI_", "__gnu_cxx::", "std::", "__invoke", "__gthread",
    "_start", "start_thread", "clone", "clone3", "abort", "raise", "__pthread", "pthread_",
    "operator new", "operator delete", "malloc", "calloc", "realloc", "free", "strdup", "strndup",
    "memcpy", "memmove", "memset", "memcmp", "strlen", "strcmp", "strncmp",
    "fuzzer::", "lifeline::internal::CheckFailed", "lifeline::internal::PrintStackTrace",
    "testing::", "RUN_ALL_TESTS", "main", "VALGRIND_",
    # upstream C code's aborts: glibc's assert(), ggml's GGML_ASSERT/GGML_ABORT, and the harness's abort
    # callback and SIGABRT handler that print them (lifeline::internal::Upstream...)
    "__assert", "gsignal", "ggml_abort", "ggml_print_backtrace", "lifeline::internal::Upstream",
    # ... and c10's error machinery, in the backtrace a c10::Error carries (PyTorch's TORCH_CHECK)
    "c10::Error::Error", "c10::detail::torchCheckFail",
)
_SKIP_MODULES = ("libc.so", "libstdc++", "libgcc_s", "ld-linux", "libpthread", "vgpreload", "libclang_rt")


def normalize_function(func: str) -> str:
    """Drops the trailing argument list and cv-qualifier: `A::f(int) const` -> `A::f`.

    Inner parentheses stay, so lambdas keep their enclosing function: `A::f(int)::$_0::operator()`."""
    f = func.strip()
    f = re.sub(r"\[abi:[^\]]*\]", "", f)
    # TSan and valgrind print template functions with their return type: `void std::__invoke_impl<...>`
    f = re.sub(r"^(?:void|bool|int|unsigned|long|char|auto)\s+(?=[\w:~])", "", f)
    for suffix in (" const", " volatile", " &", " &&"):
        if f.endswith(suffix):
            f = f[: -len(suffix)]
    if f.endswith(")"):
        depth = 0
        for i in range(len(f) - 1, -1, -1):
            c = f[i]
            if c == ")":
                depth += 1
            elif c == "(":
                depth -= 1
                if depth == 0:
                    # `operator()` is a name, not an argument list
                    if f[:i].endswith("operator") and f[i:i + 2] == "()" and i + 2 < len(f):
                        continue
                    f = f[:i]
                    break
    return f.strip()


def _meaningful(func: Optional[str], module: Optional[str]) -> bool:
    if not func or func == "??" or func.startswith("<"):
        return False
    if normalize_function(func).startswith(_SKIP_PREFIXES):
        return False
    if module and any(m in module for m in _SKIP_MODULES) and "lifeline" not in func:
        return False
    return True


def _state(frames: list[tuple[str, Optional[str], Optional[str]]]) -> tuple[list[str], list[str], Optional[str]]:
    """frames: (func, loc, module) in stack order -> (state, all normalized, location of state[0])."""
    normalized = [normalize_function(f) for f, _, _ in frames if f]
    state, location = [], None
    for func, loc, module in frames:
        if not _meaningful(func, module):
            continue
        name = normalize_function(func)
        if not state:
            location = loc
        if not state or state[-1] != name:  # inlined copies of one frame count once
            state.append(name)
        if len(state) == STATE_FRAMES:
            break
    return state, normalized, location


_BUILD_ID = re.compile(r"\s+\(BuildId: [0-9a-fA-F]+\)\s*$")


def _frame(line: str, patterns) -> Optional[re.Match]:
    line = _BUILD_ID.sub("", line)
    for pattern in patterns:
        m = pattern.match(line)
        if m:
            return m
    return None


def _collect(lines: list[str], start: int, *patterns: re.Pattern) -> list[tuple[str, Optional[str], Optional[str]]]:
    """Frames of the first stack at or after line `start` (a stack ends at the first non-frame line)."""
    frames = []
    i = start
    while i < len(lines) and not _frame(lines[i], patterns):
        i += 1
    while i < len(lines):
        m = _frame(lines[i], patterns)
        if not m:
            break
        d = m.groupdict()
        frames.append((d.get("func"), d.get("loc"), d.get("mod")))
        i += 1
    return frames


def _frame_names(frames) -> list[str]:
    """Every frame's normalized function, or for a frame without symbols (a stripped library: Debian's
    libtorch) its module's file name, "libtorch_python.so.1.13"."""
    return [normalize_function(f) if f else os.path.basename((mod or "?").split("+")[0]) for f, _, mod in frames]


def _stack(lines: list[str], start: int, *patterns: re.Pattern):
    """(state, all frames normalized, location) of the first stack at or after line `start`."""
    return _state(_collect(lines, start, *patterns))


def _access(lines: list[str], i: int, pattern: re.Pattern) -> Optional[str]:
    """"READ 1" from the access line just below a report header, if there is one."""
    for follow in lines[i + 1:i + 4]:
        a = pattern.match(follow)
        if a:
            return f"{a.group(1).upper()} {a.group(2)}"
    return None


# ---- report kinds ---------------------------------------------------------------------------------

_ASAN = re.compile(r"==\d+==ERROR: AddressSanitizer: (?P<what>[\w-]+(?: on unknown address)?)")
_ASAN_ACCESS = re.compile(r"^(READ|WRITE) of size (\d+)")
_FREED_BY = re.compile(r"^freed by thread ")
_LSAN = re.compile(r"==\d+==ERROR: LeakSanitizer: detected memory leaks")
_LEAK = re.compile(r"^(Direct|Indirect) leak of \d+ byte")
_TSAN = re.compile(r"WARNING: ThreadSanitizer: (?P<what>[\w -]+?)(?: \(pid=\d+\))?\s*$")
# A deadly signal under TSan (its own handler, as ASan's SEGV report): the program crashed, TSan diagnosed nothing.
_TSAN_SIGNAL = re.compile(r"==\d+==ERROR: ThreadSanitizer: (?P<what>SEGV|BUS|FPE|ILL|ABRT) on unknown address")
_TSAN_ACCESS = re.compile(r"^\s*(?:Atomic )?(Read|Write) of size (\d+)")
_UBSAN = re.compile(r"^(?P<loc>.+?:\d+:\d+): runtime error: (?P<msg>.*)$")
_CHECK = re.compile(r"==lifeline== (LIFELINE_CHECK|LIFELINE_PRECONDITION) failed at (?P<loc>.+?:\d+)\s*$")
_VALGRIND = re.compile(r"^==\d+== (?P<what>Invalid (?:read|write) of size (?P<size>\d+)|Invalid free\(\) / delete / delete\[\] / realloc\(\)|Mismatched free\(\) / delete / delete \[\]|Conditional jump or move depends on uninitialised value\(s\)|Use of uninitialised value of size \d+|Syscall param .* points to unaddressable byte\(s\)|Source and destination overlap in \w+|Process terminating with default action of signal \d+ \(\w+\))")
_VG_LEAK = re.compile(r"^==\d+== \d[\d,]* bytes in [\d,]+ blocks are definitely lost")
# glibc's assert(): "<prog>: <file>:<line>: <function>: Assertion `<expr>' failed." (<prog>: and <function>:
# may be absent; the function is __PRETTY_FUNCTION__, with its signature under clang). Found by its literal
# parts rather than one regex search, so that a long line of program output costs linear time.
_ASSERTION = "Assertion `"
_ASSERT_FAILED = re.compile(r"' failed\.?\s*$")
_ASSERT_WHERE = re.compile(r"(?<!\S)(?P<file>/[^:]*|[^\s:]+):(?P<line>\d+): ")
# ggml's GGML_ASSERT / GGML_ABORT through the harness's abort callback, and ggml's own default print of a
# GGML_ASSERT: "==lifeline== upstream abort: <file>:<line>: <text>", "<file>:<line>: GGML_ASSERT(<x>) failed"
_UPSTREAM_ABORT = "==lifeline== upstream abort: "
_UPSTREAM_SIGNAL = "==lifeline== upstream abort signal"
_UPSTREAM_WHERE = re.compile(r"(?P<file>.+?):(?P<line>\d+): (?P<text>.*?)\s*$")
_GGML_ASSERT = ": GGML_ASSERT("
_FILE_LINE = re.compile(r"(?:^|\s)(?P<file>/[^:]*|[^\s:]+):(?P<line>\d+)$")
# ggml's own print of a GGML_ABORT (no abort callback): "<file>.c:<line>: <text>", then abort()
_GGML_ABORT_PRINT = re.compile(r"^(?P<file>.+?\.(?:c|cc|cpp|h)):(?P<line>\d+): (?P<text>.+?)\s*$")
# libstdc++'s verbose terminate handler: an exception that leaves a noexcept function (or main) ends the process
# with "terminate called after throwing an instance of '<type>'" and "  what():  <text>". A c10::Error's text
# goes on with "Exception raised from <function> at <file>:<line>" and its backtrace, one "frame #N: <function>
# + 0x<offset> (<address> in <module>)" per line.
_TERMINATE = re.compile(r"^terminate called after throwing an instance of '(?P<type>[^']+)'")
_WHAT = re.compile(r"^\s*what\(\):\s+(?P<text>.*?)\s*$")
_C10_RAISED = re.compile(r"^Exception raised from \S+ at (?P<loc>\S+:\d+)")
_C10_FRAME = re.compile(r"^frame #\d+: (?P<func>.+?) \+ 0x[0-9a-fA-F]+ \((?:0x[0-9a-fA-F]+ in )?(?P<mod>[^)]*)\)\s*$")
_FUZZER = re.compile(r"==\d+== ERROR: libFuzzer: (?P<what>deadly signal|timeout after \d+ seconds|out-of-memory|fuzz target exited|leak detected)")

_UBSAN_KINDS = [
    (r"signed integer overflow", "signed-integer-overflow"),
    (r"unsigned integer overflow", "unsigned-integer-overflow"),
    (r"shift exponent|left shift", "invalid-shift"),
    (r"division by zero", "divide-by-zero"),
    (r"misaligned address", "misaligned-address"),
    # before "null pointer": "applying non-zero offset 96 to null pointer" is clang's pointer-overflow check
    # ... and "pointer index expression with base 0x... overflowed to 0x...", its wrap-around
    (r"pointer overflow|pointer index expression|applying (non-zero )?offset", "pointer-overflow"),
    (r"null pointer", "null-pointer-use"),
    (r"out of bounds for type|index .* out of bounds", "index-out-of-bounds"),
    (r"load of value .* not a valid value for type", "invalid-enum-or-bool-load"),
    (r"is outside the range of representable values", "float-cast-overflow"),
    (r"reached unreachable|execution reached the end of a value-returning", "unreachable"),
    (r"member call on|member access within|downcast of", "vptr-or-type-mismatch"),
    (r"through pointer to incorrect function type", "function-type-mismatch"),
]


def _valgrind_type(what: str) -> str:
    if what.startswith("Invalid read"):
        return "invalid-read"
    if what.startswith("Invalid write"):
        return "invalid-write"
    if what.startswith("Invalid free"):
        return "invalid-free"
    if what.startswith("Mismatched free"):
        return "mismatched-free"
    if what.startswith(("Conditional jump", "Use of uninitialised")):
        return "uninitialized-value"
    if what.startswith("Syscall param"):
        return "syscall-unaddressable"
    if what.startswith("Source and destination overlap"):
        return "memcpy-overlap"
    return "signal"


def _function_name(pretty: str) -> str:
    """The bare name from an assert's __PRETTY_FUNCTION__: `void f(struct ta *)` -> `f`."""
    name = normalize_function(pretty)
    if "<" not in name and re.search(r"[\s*&]", name):
        name = re.split(r"[\s*&]+", name)[-1] or name
    return name


def _upstream_abort(line: str) -> Optional[tuple[str, str, Optional[str]]]:
    """(message, file:line, asserting function or None) when `line` starts an upstream abort report."""
    k = line.find(_UPSTREAM_ABORT)
    if k >= 0:
        m = _UPSTREAM_WHERE.match(line, k + len(_UPSTREAM_ABORT))
        if m:
            return m.group("text"), f"{m.group('file')}:{m.group('line')}", None
    k = line.find(_ASSERTION)
    if k >= 0:
        end = _ASSERT_FAILED.search(line, k)
        where = _ASSERT_WHERE.search(line, 0, k)
        if end and where:
            func = line[where.end():k]
            func = func[:-2] if func.endswith(": ") else None
            return line[k + len(_ASSERTION):end.start()], f"{where.group('file')}:{where.group('line')}", func or None
    k = line.find(_GGML_ASSERT)
    if k >= 0:
        m = _FILE_LINE.search(line, 0, k)
        if m:
            return line[k + 2:].rstrip(), f"{m.group('file')}:{m.group('line')}", None
    return None


def _ggml_default_abort(lines: list[str], i: int, state: list[str], normalized: list[str],
                        location: Optional[str]) -> Crash:
    """A GGML_ABORT without the harness's abort callback (a standalone program, `lifeline export`): ggml prints
    "<file>:<line>: <text>" and calls abort(), and the sanitizer's SIGABRT report (ASan with handle_abort=1)
    on line i holds the stack. Type `assert` as for every upstream abort; the message is ggml's text, from
    the nearest such line above the report (ggml's backtrace, when not turned off, may come in between)."""
    message, loc = None, None
    for j in range(i - 1, max(-1, i - 200), -1):
        m = _GGML_ABORT_PRINT.match(lines[j])
        if m:
            message, loc = m.group("text"), f"{m.group('file')}:{m.group('line')}"
            break
    return Crash("upstream", "assert", state, normalized, message=message, location=location or loc)


def _uncaught_exception(lines: list[str], i: int, exception_type: str) -> Crash:
    """Type `uncaught-exception` (tool `upstream`) for std::terminate's report on line i; the message is what()'s
    first line (or the exception's type without one), the state and location come from a c10::Error's own
    backtrace when it carries one (Debian's libtorch is stripped: its frames name exported symbols only)."""
    message, location, frames = exception_type, None, []
    for j in range(i + 1, min(i + 200, len(lines))):
        w = _WHAT.match(lines[j]) if message is exception_type else None
        if w:
            message = w.group("text")
            continue
        r = _C10_RAISED.match(lines[j])
        if r:
            location = r.group("loc")
            continue
        f = _C10_FRAME.match(lines[j])
        if f:
            frames.append((f.group("func"), None, f.group("mod")))
        elif frames:
            break
    state, normalized, _ = _state(frames)
    return Crash("upstream", "uncaught-exception", state, normalized, message=message, location=location)


def _stack_start(lines: list[str], i: int) -> int:
    """Where to look for the stack of the report on line i: its "stack:" line when one comes before the first
    sanitizer or valgrind frame (the harness prints the op trace, whose "#N op" lines are no frames, first)."""
    for j in range(i + 1, len(lines)):
        if lines[j].strip() == "stack:":
            return j
        if _frame(lines[j], (_SAN_FRAME, _VG_FRAME)):
            break
    return i + 1


_UPSTREAM_LINE = "  upstream: "
_ORACLE = re.compile(r"[\w-]+ oracle\b")


def _upstream_calls(lines: list[str], start: int, end: int) -> list[str]:
    """The calls of a check report's "upstream:" line (between its message and its stack), or []."""
    for j in range(start, max(start, end)):
        if lines[j].startswith(_UPSTREAM_LINE):
            return [c.strip() for c in lines[j][len(_UPSTREAM_LINE):].split(" / ") if c.strip()]
        if lines[j].startswith(("  op: ", "  trace:")):
            break
    return []


def oracle_kind(message: str) -> str:
    """What kind of check a LIFELINE_CHECK message reports: its first "<name> oracle" ("no-overlap oracle"), else
    its text up to the first ": " with numbers as N ("ggml_backend_sched, after placing gN"), so that the kind does
    not depend on which graph or tensor the input happened to name."""
    m = _ORACLE.search(message)
    if m:
        return m.group(0)
    head = message.split(": ", 1)[0].splitlines()[0] if message else "check"
    return re.sub(r"\d+", "N", head)


def parse(text: str) -> Optional[Crash]:
    """The first report found in `text` (stderr of one run), or None."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = _CHECK.search(line)
        if m:
            kind = "lifeline-check" if m.group(1) == "LIFELINE_CHECK" else "lifeline-precondition"
            message = None
            for j in range(i + 1, min(i + 6, len(lines))):
                if lines[j].startswith("  message: "):
                    # A message may go on over lines indented deeper than the report's keys (a validation
                    # layer's messages, one per line, under "validation layer: N message(s):").
                    more = []
                    for cont in lines[j + 1:]:
                        if not cont.startswith("    "):
                            break
                        more.append(cont.strip())
                    message = "\n".join([lines[j][len("  message: "):]] + more)
                    break
            stack_start = next((j for j in range(i, len(lines)) if lines[j].strip() == "stack:"), i)
            state, normalized, location = _stack(lines, stack_start, _SAN_FRAME, _TSAN_FRAME, _VG_FRAME)
            upstream = _upstream_calls(lines, i + 1, stack_start)
            if upstream:
                # The state of an oracle finding in upstream code: what kind of check failed and the upstream
                # calls that produced what it looked at, not the harness frames the check ran in.
                state = [oracle_kind(message or "")] + upstream[:STATE_FRAMES]
            return Crash("lifeline", kind, state, normalized, message=message, location=location or m.group("loc"),
                         upstream=upstream)

        m = _ASAN.search(line)
        if m:
            what = m.group("what")
            kind = "segv" if what.startswith("SEGV") else what.replace("attempting ", "")
            state, normalized, location = _stack(lines, i + 1, _SAN_FRAME)
            if what.startswith("ABRT") and "ggml_abort" in normalized:
                return _ggml_default_abort(lines, i, state, normalized, location)
            freed = next((j for j in range(i + 1, len(lines)) if _FREED_BY.match(lines[j])), None)
            freed_by = _frame_names(_collect(lines, freed + 1, _SAN_FRAME)) if freed is not None else []
            return Crash("asan", kind, state, normalized, access=_access(lines, i, _ASAN_ACCESS), location=location,
                         freed_by=freed_by)

        if _LSAN.search(line):
            for j in range(i + 1, len(lines)):
                lk = _LEAK.match(lines[j])
                if lk:
                    state, normalized, location = _stack(lines, j + 1, _SAN_FRAME)
                    return Crash("lsan", lk.group(1).lower() + "-leak", state, normalized, location=location)
            return Crash("lsan", "leak", [], [])

        m = _TSAN_SIGNAL.search(line)
        if m:
            state, normalized, location = _stack(lines, i + 1, _TSAN_FRAME)
            return Crash("tsan", m.group("what").lower(), state, normalized, location=location)

        m = _TSAN.search(line)
        if m:
            kind = m.group("what").strip().replace(" ", "-")
            state, normalized, location = _stack(lines, i + 1, _TSAN_FRAME)
            return Crash("tsan", kind, state, normalized, access=_access(lines, i, _TSAN_ACCESS), location=location)

        m = _UBSAN.match(line)
        if m:
            msg = m.group("msg")
            kind = next((k for pat, k in _UBSAN_KINDS if re.search(pat, msg)), "undefined-behavior")
            state, normalized, location = _stack(lines, i + 1, _SAN_FRAME)
            return Crash("ubsan", kind, state, normalized, message=msg, location=location or m.group("loc"))

        m = _VALGRIND.match(line)
        if m:
            state, normalized, location = _stack(lines, i + 1, _VG_FRAME)
            size = m.group("size")
            return Crash("valgrind", _valgrind_type(m.group("what")), state, normalized,
                         access=(("READ " if "read" in m.group("what") else "WRITE ") + size) if size else None,
                         location=location)
        if _VG_LEAK.match(line):
            state, normalized, location = _stack(lines, i + 1, _VG_FRAME)
            return Crash("valgrind", "definite-leak", state, normalized, location=location)

        m = _TERMINATE.match(line)
        if m:
            return _uncaught_exception(lines, i, m.group("type"))

        up = _upstream_abort(line)
        if up:
            message, loc, func = up
            # The stack printed after it: libFuzzer's deadly-signal stack, or the harness's (after "stack:",
            # below the program's op trace), or a valgrind one; the abort machinery is skipped.
            state, normalized, location = _stack(lines, _stack_start(lines, i), _SAN_FRAME, _TSAN_FRAME, _VG_FRAME)
            if not state and func:
                state = [_function_name(func)]
            return Crash("upstream", "assert", state, normalized, message=message, location=location or loc)

        if line.startswith(_UPSTREAM_SIGNAL):
            # An upstream abort without an abort hook (ggml before ggml_set_abort_callback): its own line above,
            # the harness's context below (core/upstream_hooks.h ReportAbortSignals).
            state, normalized, location = _stack(lines, _stack_start(lines, i), _SAN_FRAME, _TSAN_FRAME, _VG_FRAME)
            return _ggml_default_abort(lines, i, state, normalized, location)

        m = _FUZZER.search(line)
        if m:
            what = m.group("what")
            kind = "timeout" if what.startswith("timeout") else what.replace(" ", "-")
            state, normalized, location = _stack(lines, i + 1, _SAN_FRAME)
            if what == "deadly signal" and "ggml_abort" in normalized:
                return _ggml_default_abort(lines, i, state, normalized, location)  # the same, libFuzzer's stack
            return Crash("libfuzzer", kind, state, normalized, location=location)
    return None


def matches(crash: Optional[Crash], expect: dict) -> tuple[bool, str]:
    """Whether `crash` has the expected signature: {"type": ..., "frame": ...} and/or {"message": ...}.

    `frame` must be one of the crash-state frames (a substring of one, so namespaces may be left out);
    `freed_by` one of the frames of ASan's "freed by thread" stack (who freed the memory of a use-after-free:
    the same read in this project's code means another bug when another party freed it);
    `message` must be a substring of the LIFELINE_CHECK or UBSan message. Returns (ok, why-not)."""
    if crash is None:
        return False, "no report was found in the output"
    if crash.type != expect["type"]:
        return False, f"crash type is {crash.type!r}, expected {expect['type']!r}"
    frame = expect.get("frame")
    if frame and not any(frame in f for f in crash.state):
        return False, f"frame {frame!r} is not in the crash state {crash.state}"
    freed_by = expect.get("freed_by")
    if freed_by and not any(freed_by in f for f in crash.freed_by):
        return False, f"freed_by {freed_by!r} is not in the stack that freed the memory {crash.freed_by}"
    message = expect.get("message")
    if message and (crash.message is None or message not in crash.message):
        return False, f"message {message!r} is not in {crash.message!r}"
    return True, ""
