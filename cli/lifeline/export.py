"""`lifeline export <bug-id> [--out DIR]`: an upstream-open finding as what one attaches to an upstream issue.

For each reproducer input of repro/<bug-id>/bug.json, the target's exporter (a program built with the
target, e.g. ggml_graph_topology_export) turns the decoded op program into one standalone source file that
uses only the upstream project's public API (for ggml_graph_topology: a C file on ggml.h, ggml-alloc.h,
ggml-backend.h and ggml-cpu.h), and `report.md` beside them says what the finding is (title, mechanism from
bug.json's notes), what is expected and what happens instead, the stack, and how to build and run each file.

EXPORTERS maps a target to its exporter: the binary, the lane that builds it (and whose ctest compiles,
runs and checks every exported file: `repro.<id>.<lane>.export`, cmake/LifelineExports.cmake), the
language and file extension, and how an exported file is built and run. A target without an entry has no
exporter; a later upstream target adds one (a DLPack target on PyTorch would export Python: extension
"py", no build step, run with `python3 {file}`).

Internal verbs (not in --help), run by the build and by ctest:
  lifeline export-plan --lane L [--repro-root DIR]   one line per exportable bug: export|<id>|<target>|
                                                      <exporter binary>|<input>,<input>,...
  lifeline export-check --repro-dir D --lane L --exe-dir E
                                                      each reproducer's exported program (E/<input>) must fail
                                                      with its signature: bug.json's per-reproducer "export"
                                                      signature, else its `L` expectation
"""
from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from . import crash as crashmod
from . import repro
from .bugs import BUG_ID
from .paths import LANES, ROOT
from .usage import UsageError

RUN_TIMEOUT_S = 120
PLAIN_NAME = re.compile(r"[A-Za-z0-9._-]+")
UBSAN_UPSTREAM_SUPP = ROOT / "core" / "suppressions" / "ubsan-upstream.supp"


@dataclass(frozen=True)
class Exporter:
    target: str      # the fuzz target whose inputs it exports
    binary: str      # the exporter, build/<lane>/exporters/<binary>: `<binary> --label TEXT -- INPUT OUTPUT`
    lane: str        # the lane that builds it and checks what it writes
    language: str    # of the exported files
    extension: str   # of the exported files
    upstream: str    # what the exported file runs on, in words
    build: str       # how to build an exported file ({file}, {exe}, {include}, {libdir}); "" when nothing to build
    run: str         # how to run it ({exe}, {file}, {env}: the variables of run_env that differ from a plain run)


EXPORTERS = {
    "ggml_graph_topology": Exporter(
        target="ggml_graph_topology", binary="ggml_graph_topology_export", lane="asan", language="C",
        extension="c",
        upstream="ggml (the pinned ggml 0.25.1 of scripts/fetch-ggml.sh), CPU backend",
        build="clang -std=c11 -g -O1 -fsanitize=address,undefined -c {file} -I{include} -o repro.o\n"
              "clang++ -fsanitize=address,undefined repro.o -L{libdir} -lggml -lggml-cpu -lggml-base -lm -lpthread "
              "-o {exe}",
        run="{env} {exe}"),
}


def exporter_binary(exporter: Exporter) -> Path:
    return ROOT / "build" / exporter.lane / "exporters" / exporter.binary


def build_command(exporter: Exporter) -> str:
    return f"cmake --preset {exporter.lane} && cmake --build build/{exporter.lane} --target {exporter.binary}"


def run_env(rep: repro.Reproducer) -> dict:
    """The environment an exported program runs in: sanitizer reports with stacks (a SIGABRT from assert()
    or GGML_ABORT included: handle_abort=1), findings fatal, ggml's gdb backtrace off, and UBSan's
    suppressions of known upstream-open findings (ggml_graph_nbytes, which every graph build hits); the
    reproducer's `env` goes on top, a *_OPTIONS value appended so that its flags win."""
    sym = shutil.which("llvm-symbolizer-14") or shutil.which("llvm-symbolizer")
    asan = "handle_abort=1:detect_stack_use_after_return=1:detect_leaks=1:halt_on_error=1"
    if sym:
        asan += f":external_symbolizer_path={_option_value(sym)}"
    ubsan = f"halt_on_error=1:print_stacktrace=1:suppressions={_option_value(str(UBSAN_UPSTREAM_SUPP))}"
    env = dict(os.environ, ASAN_OPTIONS=asan, UBSAN_OPTIONS=ubsan, GGML_NO_BACKTRACE="1")
    env.pop("LIFELINE_REINTRODUCE", None)
    for key, value in rep.env.items():
        env[key] = env[key] + ":" + value if key.endswith("SAN_OPTIONS") and key in env else value
    return env


def shown_env(rep: repro.Reproducer) -> str:
    """run_env's own variables as a shell prefix, for report.md, then the reproducer's other `env` variables,
    which the exported program reads too (e.g. LIFELINE_GGML_POOL_COMPUTES)."""
    env = run_env(rep)
    own = ("ASAN_OPTIONS", "UBSAN_OPTIONS", "GGML_NO_BACKTRACE")
    keys = list(own) + sorted(k for k in rep.env if k not in own)
    return " ".join(shlex.quote(f"{k}={env[k]}") for k in keys)


def _option_value(path: str) -> str:
    """A path as a sanitizer option value: quoted when it holds characters that end a value."""
    return f'"{path}"' if re.search(r"[\s:'\"]", path) else path


def signature_for(rep: repro.Reproducer, lane: str) -> Optional[dict]:
    """The signature the exported program of `rep` must fail with, or None when it has none to check."""
    if rep.export is not None:
        return rep.export
    return rep.expect.get(lane)


def _run(cmd: list, env: Optional[dict] = None) -> tuple[int, str]:
    try:
        proc = subprocess.run([str(c) for c in cmd], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired as e:
        return -1, (e.stdout or b"").decode("utf-8", "replace") + f"\n[timed out after {RUN_TIMEOUT_S} s]\n"
    return proc.returncode, proc.stdout.decode("utf-8", "replace")


# ---- lifeline export -------------------------------------------------------------------------------

def _load_bug(bug_id: str, repro_root: Path) -> repro.Bug:
    open_ids = sorted(d.name for d in repro.folders(repro_root) if _status(d) == "upstream-open")
    known = "; upstream-open bugs: " + ", ".join(open_ids) if open_ids else ""
    if not BUG_ID.fullmatch(bug_id) or not (repro_root / bug_id).is_dir():
        raise UsageError(f"lifeline export: unknown bug id '{bug_id}' (no folder {repro_root / bug_id}){known}")
    try:
        bug = repro.load(repro_root / bug_id)
    except repro.BugJsonError as e:
        raise UsageError(f"lifeline export: {e}")
    if bug.status != "upstream-open":
        raise UsageError(f"lifeline export: bug '{bug_id}' has status '{bug.status}': it is modelled in lifeline's "
                         f"own code, so there is nothing to report upstream; export takes upstream-open findings{known}")
    return bug


def _status(d: Path) -> Optional[str]:
    try:
        return repro.load(d).status
    except repro.BugJsonError:
        return None


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


def _stack_excerpt(text: str, limit: int = 30) -> str:
    """The report's lines: from a little above the first sanitizer, assert or abort line to the end of its
    first stack (the allocation stack and shadow bytes of an ASan report are left out)."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines)
                  if "ERROR: AddressSanitizer" in line or "runtime error:" in line or "Assertion `" in line
                  or "GGML_ASSERT(" in line or "==lifeline==" in line), None)
    if start is None:
        return "\n".join(lines[-limit:])
    start = max(0, start - 2)
    end, seen_frame = start, False
    for i in range(start, len(lines)):
        is_frame = re.match(r"\s*#\d+ ", lines[i]) is not None
        if seen_frame and not is_frame:
            break
        seen_frame = seen_frame or is_frame
        end = i
    return "\n".join(lines[start:min(end + 1, start + limit)])


def _observe(bug: repro.Bug, rep: repro.Reproducer, exporter: Exporter, text: str) -> tuple[str, str, Optional[crashmod.Crash]]:
    """(where the stack comes from, the run's output, its parsed report): the exported program as the lane built
    it when it was built from the same text, else lifeline's own reproducer run, else nothing."""
    built = ROOT / "build" / exporter.lane / "exports" / bug.id / rep.input.name
    source = built.parent / f"{rep.input.name}.{exporter.extension}"
    if built.is_file() and source.is_file() and source.read_text(errors="replace") == text:
        rc, out = _run([built], env=run_env(rep))
        return f"the exported program, as built by the {exporter.lane} lane ({built})", out, crashmod.parse(out)
    target = ROOT / "build" / exporter.lane / "targets" / bug.target
    if target.is_file():
        rc, out = repro.run_input(str(target), rep.input, [], None, rep.env)
        return (f"lifeline's reproducer run ({target.relative_to(ROOT)} {rep.input.relative_to(ROOT)}); the "
                f"exported program is not built (`cmake --build build/{exporter.lane}` builds it)"), out, crashmod.parse(out)
    return "", "", None


def _report(bug: repro.Bug, exporter: Exporter, rows: list) -> str:
    doc = bug_json(bug)
    include = ROOT / "build" / "upstream" / "llama.cpp" / "ggml" / "include"
    libdir = ROOT / "build" / exporter.lane / "ggml" / "src"
    md = [f"# {bug.title}", "",
          f"Finding `{bug.id}` of lifeline's fuzz target `{bug.target}` on {exporter.upstream}; "
          f"{len(rows)} standalone {exporter.language} reproducer(s) beside this file, generated from the "
          "minimized inputs. They use only the upstream project's public API and no lifeline code.", ""]
    refs = doc.get("upstream") or []
    if refs:
        md += ["Where: " + "; ".join(refs), ""]
    md += ["## Mechanism", "", doc.get("notes") or "(bug.json has no notes)", ""]
    for rep, name, source, out, found in rows:
        sig = signature_for(rep, exporter.lane)
        md += [f"## `{name}`", ""]
        program = next((r.get("program") for r in doc.get("reproducers", []) if r.get("input") == rep.input.name), None)
        if program:
            md += [f"Program: {program}", ""]
        md += ["Expected: the program runs to its end and prints \"the program ran to its end\" (every "
               "placement valid, every output equal to the same graph placed by a fresh allocator).", ""]
        if sig:
            what = f"`{sig['type']}`" + (f" in `{sig['frame']}`" if sig.get("frame") else "")
            what += f" (\"{sig['message']}\")" if sig.get("message") else ""
            md += [f"Actual: it fails with {what}.", ""]
        if found is not None:
            md += [f"Stack, from {source}: `{found.signature}`", "", "```", _stack_excerpt(out), "```", ""]
        else:
            md += ["Stack: none recorded (neither the exported program nor the lifeline target is built).", ""]
        exe = Path(name).stem
        q = shlex.quote
        md += ["Build and run (against the pinned ggml as lifeline's asan lane builds it; with any other ggml "
               "build, point -I and -L at it):", "", "```sh",
               exporter.build.format(file=q(name), exe=q(exe), include=q(str(include)), libdir=q(str(libdir))),
               exporter.run.format(file=q(name), exe=q("./" + exe), env=shown_env(rep)), "```", "",
               "(`handle_abort=1` gives an assert() or GGML_ABORT a sanitizer stack; GGML_NO_BACKTRACE skips "
               "ggml's gdb backtrace; the UBSan suppression file names ggml_graph_nbytes, whose report on every "
               "graph build is finding ggml-graph-nbytes-null-offset"
               + (", and this reproducer's own options come after it"
                  if any(k.endswith("SAN_OPTIONS") for k in rep.env) else "") + ".)", ""]
    md += ["Generated by `lifeline export " + bug.id + "` from `repro/" + bug.id + "/`."]
    return "\n".join(md) + "\n"


def bug_json(bug: repro.Bug) -> dict:
    """bug.json as JSON (its notes, programs and references, which repro.load does not keep)."""
    try:
        doc = json.loads((bug.path / "bug.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def cmd_export(args) -> int:
    repro_root = ROOT / "repro"
    bug = _load_bug(args.bug_id, repro_root)
    exporter = EXPORTERS.get(bug.target)
    if exporter is None:
        raise UsageError(f"lifeline export: target '{bug.target}' of bug '{bug.id}' has no exporter (targets with "
                         f"one: {', '.join(sorted(EXPORTERS))})")
    binary = exporter_binary(exporter)
    if not (binary.is_file() and os.access(binary, os.X_OK)):
        raise UsageError(f"lifeline export: the exporter {binary} is not built; build it with `{build_command(exporter)}`"
                         + (" (upstream ggml first: scripts/fetch-ggml.sh)" if exporter.target == "ggml_graph_topology"
                            and not (ROOT / "build" / "upstream" / "fetched.txt").is_file() else ""))
    out = _out_dir(args.out if args.out is not None else str(ROOT / "export-out" / bug.id))
    rows = []
    for rep in bug.reproducers:
        name = f"{rep.input.name}.{exporter.extension}"
        path = out / name
        rc, text = _run([binary, "--label", f"{bug.id}/{rep.input.name}", "--", rep.input, path])
        if rc != 0:
            print(f"lifeline export: {binary.name} could not export {rep.input} (exit {rc}): {text.strip()}")
            return 1
        source, run_out, found = _observe(bug, rep, exporter, path.read_text(errors="replace"))
        rows.append((rep, name, source, run_out, found))
        print(f"wrote {path}" + (f"  ({found.signature})" if found else ""))
    report = out / "report.md"
    report.write_text(_report(bug, exporter, rows), encoding="utf-8")
    print(f"wrote {report}")
    return 0


# ---- internal: export-plan (CMake) and export-check (ctest) ------------------------------------------

def plan(repro_root: Path, lane: str) -> list[str]:
    """export|<id>|<target>|<exporter binary>|<input>,<input>,... for every upstream-open bug whose target has
    an exporter checked in `lane`; inputs whose names CMake cannot carry (not letters, digits, . _ -) are left
    out, and export-check fails naming them."""
    lines = []
    for d in repro.folders(repro_root):
        try:
            bug = repro.load(d)
        except repro.BugJsonError:
            continue  # repro.<id>.bug-json says why
        exporter = EXPORTERS.get(bug.target)
        if bug.status != "upstream-open" or exporter is None or exporter.lane != lane:
            continue
        inputs = [r.input.name for r in bug.reproducers if PLAIN_NAME.fullmatch(r.input.name)]
        if inputs and PLAIN_NAME.fullmatch(bug.id):
            lines.append("|".join(["export", bug.id, bug.target, exporter.binary, ",".join(inputs)]))
    return lines


def cmd_export_plan(args) -> int:
    root = Path(args.repro_root)
    if not root.is_dir():
        raise UsageError(f"lifeline export-plan: repro root '{root}' is not a directory")
    for line in plan(root, args.lane):
        print(line)
    return 0


def check(bug: repro.Bug, lane: str, exe_dir: Path) -> bool:
    """Every reproducer's exported program fails with its signature. Prints one line per input."""
    ok_all, ran = True, 0
    for rep in bug.reproducers:
        sig = signature_for(rep, lane)
        name = rep.input.name
        if sig is None:
            continue
        ran += 1
        if sig["type"] in ("lifeline-check", "lifeline-precondition") and rep.export is None:
            print(f"FAIL {name}: its {lane} signature is lifeline's own oracle ({sig['type']}), which the exported "
                  "program does not have; give the reproducer an \"export\" signature in bug.json")
            ok_all = False
            continue
        exe = exe_dir / name
        if not exe.is_file():
            why = "" if PLAIN_NAME.fullmatch(name) else " (only inputs named with letters, digits, . _ - are exported)"
            print(f"FAIL {name}: the exported program {exe} is not built{why}")
            ok_all = False
            continue
        rc, out = _run([exe], env=run_env(rep))
        found = crashmod.parse(out)
        ok, why = crashmod.matches(found, sig)
        if ok and rc == 0:
            ok, why = False, "the report was printed but the program exited 0"
        if ok:
            print(f"PASS {name}: {found.signature}")
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
    return 0 if check(bug, args.lane, Path(args.exe_dir)) else 1


def add_internal_parsers(make_parser) -> dict:
    """The parsers of export-plan and export-check (main.py runs them apart from the public verbs)."""
    p = make_parser(prog="lifeline export-plan", description="the exported reproducers CMake builds for one lane")
    p.add_argument("--lane", required=True, choices=LANES)
    p.add_argument("--repro-root", default=str(ROOT / "repro"))
    c = make_parser(prog="lifeline export-check", description="exported reproducers fail with their signature")
    c.add_argument("--repro-dir", required=True)
    c.add_argument("--lane", required=True, choices=LANES)
    c.add_argument("--exe-dir", required=True, help="the folder of the built exported programs (one per input)")
    return {"export-plan": (p, cmd_export_plan), "export-check": (c, cmd_export_check)}
