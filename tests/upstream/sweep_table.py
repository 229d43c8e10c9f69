#!/usr/bin/env python3
"""The summary table of ggml_cpu_supports_op_sweep: which (op, type) pairs ggml's CPU backend accepts
(supports_op=1) and then cannot compute.

The sweep's output comes from a file (--output) or from running the sweep (--run BINARY: its stdout; the
run must exit 0). Then, in any combination:

  --expected FILE   the output must equal FILE (tests/upstream/ggml_cpu_supports_op_sweep.expected); a
                    difference is printed as a unified diff: upstream changed what its CPU backend does
  --check MD        MD must equal the table this output gives (the committed
                    repro/ggml-cpu-scale-f16-unsupported/supports-op-sweep.md)
  --write MD        write that table to MD (after an upstream change, once the new output is the expected one)

Without --check or --write the table goes to stdout. Exit status: 0 when every check holds, 1 when one fails
(each failure is named on stderr), 2 on bad usage or a sweep that did not run through. Standard library only.

ctest upstream.ggml-cpu.supports-op-sweep (tests/upstream/CMakeLists.txt) runs
  sweep_table.py --run <sweep> --expected <.expected> --check <.md>
Regenerate both files after a deliberate change:
  build/asan/tests/ggml_cpu_supports_op_sweep > tests/upstream/ggml_cpu_supports_op_sweep.expected
  python3 tests/upstream/sweep_table.py --output tests/upstream/ggml_cpu_supports_op_sweep.expected \\
      --write repro/ggml-cpu-scale-f16-unsupported/supports-op-sweep.md
(with the environment the ctest sets: ASAN_OPTIONS=handle_abort=0, UBSAN_OPTIONS with report_error_type=1).
"""
import argparse
import difflib
import re
import subprocess
import sys
from collections import OrderedDict
from pathlib import Path

TYPES = ("f32", "f16", "f16-src0")
TYPE_MEANING = {
    "f32": "every float source F32 (the control)",
    "f16": "every float source F16",
    "f16-src0": "src0 F16, the other float sources F32 (ops with another float source of free type)",
}
LINE = re.compile(r'^(?P<op>\S+) (?P<type>\S+) (?:supports_op=(?P<supports>[01]) compute=(?P<compute>.+)'
                  r'|build=(?P<build>.+)|broken-row (?P<broken>.+))$')


class SweepError(Exception):
    pass


def parse(text):
    """OrderedDict op -> {type: row}, row = dict(supports, compute, build), in the sweep's order."""
    ops = OrderedDict()
    for number, line in enumerate(text.splitlines(), 1):
        m = LINE.match(line)
        if not m:
            raise SweepError(f"line {number} is not a sweep line: {line!r}")
        if m["broken"]:
            raise SweepError(f"line {number}: the sweep's table is broken: {line}")
        if m["type"] not in TYPES:
            raise SweepError(f"line {number}: unknown type {m['type']!r} (known: {', '.join(TYPES)})")
        row = ops.setdefault(m["op"], {})
        if m["type"] in row:
            raise SweepError(f"line {number}: {m['op']} {m['type']} appears twice")
        row[m["type"]] = {"supports": m["supports"], "compute": m["compute"], "build": m["build"]}
    if not ops:
        raise SweepError("the sweep printed nothing")
    return ops


def kind(row):
    """What a row is: 'aborts' (supports_op=1, then ggml_abort: GGML_ABORT or GGML_ASSERT), 'unsafe'
    (supports_op=1, then a sanitizer report), 'dies' (supports_op=1, then another death), 'ok', 'refused'
    (supports_op=0) or 'build' (the constructor failed)."""
    if row is None:
        return None
    if row["build"] is not None:
        return "build"
    if row["supports"] == "0":
        return "refused"
    compute = row["compute"]
    if compute == "ok":
        return "ok"
    if compute.startswith(("abort ", "assert ")):
        return "aborts"
    if compute.startswith(("asan ", "ubsan ")):
        return "unsafe"
    return "dies"


def in_class(rows, t):
    """A pair of the finding's class: supports_op=1 for a float16 source, the compute aborts (GGML_ABORT or
    GGML_ASSERT), and the same op computes with float32 sources (the control): the abort is about F16."""
    return t != "f32" and kind(rows.get(t)) == "aborts" and kind(rows.get("f32")) == "ok"


def f32_fails(rows):
    """supports_op=1 for float32 sources too, and the compute aborts there: the same mistake, not about F16."""
    return kind(rows.get("f32")) in ("aborts", "dies")


def cell(row, bold=False):
    if row is None:
        return "—"
    k = kind(row)
    if k == "build":
        return f"constructor: {md(row['build'])}"
    if k == "refused":
        return f"supports_op=0 (compute: {md(row['compute'])})"
    if k == "ok":
        return "ok"
    return f"**{md(row['compute'])}**" if bold else md(row["compute"])  # bold: a pair of the class


def refusal(row):
    if kind(row) == "build":
        return f"the constructor fails: {md(row['build'])}"
    return f"supports_op=0 (computed anyway: {md(row['compute'])})"


def md(text):
    """`text` as a code span that a table cell can hold."""
    return "`" + text.replace("|", "\\|") + "`"


def table(ops, kinds):
    """The ops with at least one type of a kind in `kinds`, one row each, a column per type."""
    out = ["| op | " + " | ".join(TYPES) + " |", "|---|" + "---|" * len(TYPES)]
    n = 0
    for op, rows in ops.items():
        if not any(kind(rows.get(t)) in kinds for t in TYPES):
            continue
        n += 1
        out.append(f"| {md(op)} | " + " | ".join(cell(rows.get(t), in_class(rows, t) or kind(rows.get(t)) == "unsafe")
                                                  for t in TYPES) + " |")
    return out, n


def pairs(ops, kinds, types=TYPES):
    return [(op, t) for op, rows in ops.items() for t in types if kind(rows.get(t)) in kinds]


def render(ops):
    n_pairs = sum(len(rows) for rows in ops.values())
    aborts = pairs(ops, {"aborts"})
    aborts_f16 = pairs(ops, {"aborts"}, ("f16",))
    unsafe = pairs(ops, {"unsafe"})
    dies = pairs(ops, {"dies"})
    klass = [(op, t) for op, rows in ops.items() for t in TYPES if in_class(rows, t)]
    f32_too = [op for op, rows in ops.items() if f32_fails(rows)]
    lines = [
        "# CPU supports_op says yes, the CPU backend cannot compute: the measured class",
        "",
        "<!-- Generated by tests/upstream/sweep_table.py from the output of tests/upstream/ggml_cpu_supports_op_sweep.c"
        " (tests/upstream/ggml_cpu_supports_op_sweep.expected); ctest upstream.ggml-cpu.supports-op-sweep fails when"
        " this file is not what that output gives. Do not edit by hand. -->",
        "",
        "Each (op, type) was built on the pinned ggml in its own process, asked "
        "`ggml_backend_supports_op(cpu, node)`, then computed as a one-node graph "
        "(`ggml_backend_alloc_ctx_tensors`, `ggml_backend_graph_compute`, one thread) in the asan lane "
        "(ASan+UBSan, `-UNDEBUG`). Types: "
        + "; ".join(f"`{t}`: {TYPE_MEANING[t]}" for t in TYPES) + ". "
        "Messages are ggml_abort's without its `file:line`. This finding, ggml-cpu-scale-f16-unsupported, is the "
        "`SCALE f16` row.",
        "",
        f"- (op, type) pairs swept: {n_pairs}, over {len(ops)} ops (UNARY and GLU counted by sub-op)",
        f"- supports_op=1, then the compute aborts (GGML_ABORT or GGML_ASSERT): {len(aborts)} pairs, "
        f"{len(aborts_f16)} of them `f16`; {len({op for op, _ in aborts})} ops",
        f"- **the class** (supports_op=1 for F16 sources, the compute aborts, the `f32` control computes): "
        f"{len({op for op, _ in klass})} ops, {len(klass)} pairs: " + ", ".join(md(op) for op in dict.fromkeys(
            op for op, _ in klass)),
        f"- out of the class, the `f32` control failing too (supports_op=1 for F32 and the compute fails: the same "
        f"mistake for another type, not about F16): " + (", ".join(md(op) for op in f32_too) or "none"),
        f"- supports_op=1, then the compute is memory-unsafe or undefined (a sanitizer report): {len(unsafe)} pairs",
    ]
    if dies:
        lines.append(f"- supports_op=1, then the compute dies otherwise: {len(dies)} pairs")
    lines += [
        f"- supports_op=0: {len(pairs(ops, {'refused'}))} pairs; the constructor itself refuses: "
        f"{len(pairs(ops, {'build'}))} pairs",
        "",
        "## supports_op=1, then the compute aborts",
        "",
        "Bold: the pairs of the class; the other cells of the same op for comparison (— : not swept, the op has "
        "no other float source of free type). Where the `f32` control fails too, the failure is not about F16 and "
        "the row is not bold.",
        "",
    ]
    rows, _ = table(ops, {"aborts", "dies"})
    lines += rows
    lines += [
        "",
        "## supports_op=1, then the compute is memory-unsafe or undefined",
        "",
        "A sanitizer's first report in the child (kind and frame #0). These kernels do not check the type "
        "they read; without a sanitizer they compute from misread memory instead of aborting. Where the `f32` "
        "control fails too, the failure is not about F16.",
        "",
    ]
    rows, n = table(ops, {"unsafe"})
    lines += rows if n else ["(none)"]
    lines += [
        "",
        "## Refused up front",
        "",
        "supports_op=0 for these pairs, or ggml's constructor asserts on the type, so the scheduler never "
        "places them on the CPU backend.",
        "",
    ]
    refused = OrderedDict()
    for op, t in pairs(ops, {"refused", "build"}):
        refused.setdefault(op, []).append(t)
    lines += [f"- {md(op)} `{t}`: " + refusal(ops[op][t]) for op, ts in refused.items() for t in ts]
    return "\n".join(lines) + "\n"


def diff(expected_text, actual_text, expected_name, actual_name):
    return "".join(difflib.unified_diff(expected_text.splitlines(True), actual_text.splitlines(True),
                                        fromfile=expected_name, tofile=actual_name))


def check_guard_list(output: str, def_file: Path) -> bool:
    """Whether the guard's list differs from the sweep (prints the difference): the ops the CPU backend accepts
    for F16 and aborts on, as LIFELINE_CPU_F16_UNSUPPORTED(<OP>) / LIFELINE_CPU_F16_GLU_UNSUPPORTED(<GLU>)."""
    swept = {op for op, rows in parse(output).items() if in_class(rows, "f16")}
    listed = set()
    for m in re.finditer(r"^LIFELINE_CPU_F16_(GLU_)?UNSUPPORTED\((\w+)\)", def_file.read_text(), re.M):
        listed.add(("GLU:" if m.group(1) else "") + m.group(2))
    if swept == listed:
        print(f"ok: {def_file} lists the {len(listed)} ops the CPU backend accepts for F16 and aborts on (and "
              "computes for F32)")
        return False
    print(f"FAILED: {def_file} is not the sweep's F16 aborts: missing {sorted(swept - listed)}, "
          f"not aborting (any more) {sorted(listed - swept)}; the guard ggml-cpu-scale-f16-unsupported follows "
          "that list, so update it with the sweep", file=sys.stderr)
    return True


def main(argv):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--output", type=Path, help="a file holding the sweep's output")
    source.add_argument("--run", metavar="BINARY", help="run the sweep and read its stdout")
    p.add_argument("--expected", type=Path, help="the output must equal this file")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--check", type=Path, metavar="MD", help="MD must equal the table of this output")
    mode.add_argument("--write", type=Path, metavar="MD", help="write the table of this output to MD")
    p.add_argument("--check-guard-list", type=Path, metavar="DEF",
                   help="the guard's list (harness/programs/graph/upstream/ggml_cpu_f16_unsupported.def) must name "
                        "exactly the ops of the class: F16 says supports_op=1 and the compute aborts, F32 computes")
    args = p.parse_args(argv)

    if args.run:
        proc = subprocess.run([args.run], stdout=subprocess.PIPE, text=True)
        output, origin = proc.stdout, f"{args.run} (stdout)"
        if proc.returncode != 0:
            sys.stdout.write(output)
            print(f"sweep_table: {args.run} exited {proc.returncode}: the sweep did not run through "
                  "(its stderr above names the row)", file=sys.stderr)
            return 2
    else:
        output, origin = args.output.read_text(), str(args.output)

    failed = False
    if args.expected:
        expected = args.expected.read_text()
        if output != expected:
            failed = True
            print(f"FAILED: the sweep's output is not {args.expected}: upstream ggml's CPU backend changed what it "
                  "accepts or computes (a fixed op shows as a changed line). Check the diff, then regenerate the "
                  "expected file and the table (sweep_table.py --help).", file=sys.stderr)
            sys.stderr.write(diff(expected, output, str(args.expected), origin))
        else:
            print(f"ok: the sweep's output equals {args.expected}")
    try:
        text = render(parse(output))
    except SweepError as e:
        print(f"sweep_table: {origin}: {e}", file=sys.stderr)
        return 2
    if args.check_guard_list:
        failed = check_guard_list(output, args.check_guard_list) or failed
    if args.check:
        committed = args.check.read_text() if args.check.exists() else ""
        if committed != text:
            failed = True
            print(f"FAILED: {args.check} is not the table of the sweep's output; regenerate it with "
                  f"sweep_table.py --output <output> --write {args.check}", file=sys.stderr)
            sys.stderr.write(diff(committed, text, str(args.check), f"table of {origin}"))
        else:
            print(f"ok: {args.check} is the table of the sweep's output")
    elif args.write:
        args.write.write_text(text)
    else:
        sys.stdout.write(text)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
