#!/usr/bin/python3
"""unit.sancov-filter.only-sanitizer-compares-lose-their-trace: the fuzz lane's clang pass plugin
(cmake/sancov-filter/hide_sanitizer_compares.cc) takes libFuzzer's comparison tracing off UBSan's checks, and off
nothing else.

  sancov_filter_check.py CLANGXX PLUGIN

Compiles sancov_filter_probe.cc to LLVM IR with the fuzz lane's instrumentation (-O1, -fsanitize=fuzzer-no-link,
ASan and UBSan, -fno-sanitize-recover=all), once without and once with -fpass-plugin=PLUGIN, and counts the calls
to __sanitizer_cov_trace_*cmp* in each function:
  ChecksOnly       (UBSan checks, no comparison of its own)   some without the plugin, none with it
  ProgramCompares  (its own comparisons, no UBSan check)      the same calls with and without
  Mixed            (one comparison of its own among checks)   with the plugin, that one call alone
and that UBSan's handler calls are the same with and without (the checks themselves stay). Prints what it saw;
exits 1 on a mismatch, 2 on bad arguments.
"""
import collections
import re
import subprocess
import sys
from pathlib import Path

FLAGS = ["-O1", "-S", "-emit-llvm", "-o", "-", "-fsanitize=fuzzer-no-link", "-fsanitize=address,undefined",
         "-fno-sanitize-recover=all"]
TRACE = re.compile(r"call void @(__sanitizer_cov_trace_(?:const_)?cmp\d)\(")
HANDLER = re.compile(r"call void @(__ubsan_handle_\w+)\(")


def calls(ir: str, pattern) -> dict:
    """{function: Counter of the callees `pattern` matches} for the probe's three functions."""
    out, fn = {}, None
    for line in ir.splitlines():
        m = re.match(r"define .*@(ChecksOnly|ProgramCompares|Mixed)\(", line)
        if m:
            fn = m.group(1)
            out[fn] = collections.Counter()
        elif line.startswith("}"):
            fn = None
        elif fn:
            out[fn].update(pattern.findall(line))
    return out


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    cxx, plugin = sys.argv[1], sys.argv[2]
    probe = Path(__file__).with_name("sancov_filter_probe.cc")
    if not Path(plugin).is_file():
        print(f"sancov_filter_check: no plugin at {plugin}", file=sys.stderr)
        return 2
    irs = {}
    for name, extra in (("without", []), ("with", [f"-fpass-plugin={plugin}"])):
        proc = subprocess.run([cxx, *FLAGS, *extra, str(probe)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              universal_newlines=True)
        if proc.returncode != 0:
            print(f"sancov_filter_check: compiling the probe {name} the plugin failed:\n{proc.stderr}", file=sys.stderr)
            return 1
        irs[name] = proc.stdout
    trace = {k: calls(v, TRACE) for k, v in irs.items()}
    handlers = {k: calls(v, HANDLER) for k, v in irs.items()}
    for k in ("without", "with"):
        for fn in ("ChecksOnly", "ProgramCompares", "Mixed"):
            print(f"{k:>7} the plugin: {fn:<16} trace calls {dict(trace[k].get(fn, {}))}  "
                  f"UBSan handlers {sum(handlers[k].get(fn, collections.Counter()).values())}")
    failures = []
    if sum(trace["without"]["ChecksOnly"].values()) == 0:
        failures.append("ChecksOnly has no trace call even without the plugin: the probe no longer tests anything")
    if sum(trace["with"]["ChecksOnly"].values()) != 0:
        failures.append("ChecksOnly keeps trace calls with the plugin: UBSan's comparisons are still traced")
    if not trace["with"]["ProgramCompares"] or trace["with"]["ProgramCompares"] != trace["without"]["ProgramCompares"]:
        failures.append("ProgramCompares' own comparisons are traced differently with the plugin")
    if trace["with"]["Mixed"] != collections.Counter({"__sanitizer_cov_trace_cmp8": 1}):
        failures.append("Mixed with the plugin should keep exactly its own 64-bit comparison's trace call")
    for fn in ("ChecksOnly", "Mixed"):
        if not handlers["with"][fn] or handlers["with"][fn] != handlers["without"][fn]:
            failures.append(f"{fn}: UBSan's checks differ with the plugin (handler calls "
                            f"{dict(handlers['without'][fn])} -> {dict(handlers['with'][fn])})")
    for f in failures:
        print(f"FAIL: {f}")
    if not failures:
        print("PASS: the plugin hides UBSan's comparisons from trace-cmp and keeps the program's and every check")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
