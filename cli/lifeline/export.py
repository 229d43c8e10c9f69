"""`lifeline export <bug-id> [--out DIR] [--configs]`: an upstream finding as what one attaches to an upstream
issue.

For each reproducer input of repro/<bug-id>/bug.json, the target decodes the input into its program
(`<target> --program decode`, run as the reproducer's pinned check runs it: the finding's guard off), and the
target's exporter (cli/lifeline/exporters/) writes that program as one short standalone file in upstream's own
terms, on upstream's public API only: C on ggml for ggml_graph_topology (CPU backend) and
ggml_vulkan_graph_topology (ggml-vulkan, ggml_backend_sched), C on whisper.h for whisper_string_handoff, C on
llama.h for llama_memory_differential (decoded and checked by the fuzz lane, which builds that target), Python
on PyTorch and NumPy for torch_capsule_lifecycle. Inputs are reduced programs (`lifeline reduce`), so the files
are short; the file prints the contract it shows broken and what it expects, and fails while the bug is there.
`report.md` beside them is the report in a maintainer's form (export_report.py): title in upstream's words, the
version upstream can check out, the configurations affected, the contract, expected vs actual, the short stack,
the fix direction where the mechanism makes it plain, prior art, and the first bad commit when `lifeline bisect`
found it.

bug.json's "report" object holds the words: "title", "contract", "expected", "actual", "fix", "check" (what
the C exporter adds to show the contract: supports-op, fresh-gallocr), and "configurations" (measured by
--configs: each C file built against ggml with asserts and with -DNDEBUG, with and without OpenMP, and what each
gave), each optional. "status" and "upstream" say where upstream stands (repro.py).

The parts: export_source.py (EXPORTERS, one exported file, the environment exported programs run in),
export_report.py (report.md), export_stack.py (a run's output in upstream's coordinates, as report.md quotes it),
export_internal.py (the internal verbs export-plan, export-source and export-check, which the build and ctest
run: cmake/LifelineExports.cmake builds and checks every export in the asan lane, `repro.<id>.asan.export`, and
llama_memory_differential's in the fuzz lane, `repro.<id>.fuzz.export`). This
module is the command, and re-exports the names callers take from it.
"""
from __future__ import annotations

import json
import os
import signal
import shutil
import tempfile
from pathlib import Path
from typing import Optional

from . import crash as crashmod
from . import repro
from .bugs import BUG_ID
from .export_internal import (add_internal_parsers, check, cmd_export_check, cmd_export_plan,  # noqa: F401
                              cmd_export_source, plan)
from .export_report import render_report, runs_in, shipped_programs  # noqa: F401
from .export_source import (EXPORTED_STATUSES, EXPORTERS, GGML_VERSION, PLAIN_NAME, RUN_TIMEOUT_S,  # noqa: F401
                            UBSAN_UPSTREAM_SUPP, WHISPER_VERSION, Exporter, bug_json, code_lines, finding_of,
                            program_of, run_captured, run_env, shown_env, signature_for, source_of)
from .export_stack import upstream_coordinates
from .paths import ROOT
from .usage import UsageError


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
            rc, out = run_captured(["/usr/bin/python3", f], env=run_env(rep, exporter))
        return "the exported script on this machine", out, crashmod.parse(out), rc
    exe = _exe_of(bug, rep, exporter, exporter.lane)
    source = exe.parent / f"{rep.input.name}.{exporter.extension}"
    if exporter.target.startswith("ggml_") and lane_source(exporter.lane):
        return "", "", None, 0  # built against another ggml than the version report.md names
    if exe.is_file() and source.is_file() and source.read_text(errors="replace") == text:
        rc, out = run_captured([exe], env=run_env(rep, exporter))
        return f"the exported program as the {exporter.lane} lane built it", out, crashmod.parse(out), rc
    return "", "", None, 0



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
    report.write_text(render_report(bug, exporter, rows), encoding="utf-8")
    print(f"wrote {report}")
    return 0
