"""The internal verbs of `lifeline export` (not in --help), run by the build and by ctest in the asan lane
(cmake/LifelineExports.cmake):
  lifeline export-plan --lane L [--repro-root DIR]   one line per exportable finding:
                                                      export|<id>|<target>|<extension>|<input>,<input>,...
  lifeline export-source --repro-dir D --input NAME --out FILE [--lane L]
                                                      writes one exported file (the build's custom command)
  lifeline export-check --repro-dir D --lane L --exe-dir E
                                                      each reproducer's exported program (E/<input>, or
                                                      E/<input>.py) fails with its signature (bug.json's
                                                      per-reproducer "export" signature, else its asan one; a
                                                      Python export with its AssertionError)
main.py gets their parsers from add_internal_parsers, which export.py re-exports with the rest."""
from __future__ import annotations

import subprocess
from pathlib import Path

from . import crash as crashmod
from . import repro
from .export_source import (EXPORTED_STATUSES, EXPORTERS, PLAIN_NAME, run_captured, run_env, signature_for,
                            source_of)
from .paths import LANES, ROOT
from .usage import UsageError


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
        rc, out = run_captured((["/usr/bin/python3"] if python else []) + [exe], env=run_env(rep, exporter))
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
    s.add_argument("--lane", choices=LANES, help="the lane whose target decodes the input (default: the exporter's)")
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
