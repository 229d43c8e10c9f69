#!/usr/bin/env python3
"""Every upstream finding's report proves what it says (ctest upstream.reports, asan lane, pinned ggml only).

For each finding in upstream code (repro/*/bug.json with an upstream status):
  1. bug.json loads: among its checks (cli/lifeline/repro.py), every prior_art date says what it is the date of,
     and a merged entry has its merge date (or says it is not visible).
  2. `lifeline export` writes its folder, and every file of the finding that report.md names (an exported
     reproducer, a file of repro/<id>/, a program of report.programs) is in that folder.
  A finding whose target another lane decodes (llama_memory_differential: the fuzz lane) is noted and skipped
  where that lane's target is not built.
  3. For a finding of ggml_graph_topology (ggml's CPU backend) or whisper_string_handoff (whisper.cpp): each
     exported C program, built against ggml or whisper.cpp without any sanitizer (a release build,
     cli/lifeline/configs.py PLAIN_CONFIG and ensure_whisper_plain), fails (its own verdict, an
     abort, a signal) where the bug is there, and runs clean exactly where its reproducer's "no_sanitizer" says
     why; each program of report.programs marked "verdict" fails there too.
What is not checked without sanitizers is printed with the reason (ggml-vulkan is built here in the sanitizer
lanes only). Exit 1 when any check fails.
"""
from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "cli"))

from lifeline import configs, export, repro  # noqa: E402

# A file name as report.md writes one: a word, then an extension of the files an export holds.
FILE_NAME = re.compile(r"(?<![\w/.-])([A-Za-z0-9_][\w.-]*\.(?:c|py|md|expected|txt))\b")


def finding_files(bug: repro.Bug, exporter: export.Exporter) -> set[str]:
    """The names report.md may mention that belong to the finding: its reproducers' exports, the files of its
    folder, its report.programs."""
    names = {f"{r.input.name}.{exporter.extension}" for r in bug.reproducers}
    names |= {p.name for p in bug.path.iterdir() if p.is_file()}
    names |= {name for name, _, _ in export.shipped_programs(bug)}
    return names


def missing_files(report: str, names: set[str], folder: Path) -> list[str]:
    """The finding's files that report.md names and the export folder lacks (bug.json itself is not exported:
    report.md is made from it)."""
    named = {m.group(1) for m in FILE_NAME.finditer(report)}
    return sorted(n for n in named & names if n != "bug.json" and not (folder / n).is_file())


def plain_verdict(rc: int, out: str, no_sanitizer: str | None) -> str | None:
    """Why a run without sanitizers contradicts bug.json (None: it agrees)."""
    if rc == 0 and not no_sanitizer:
        return ("runs clean in a build without sanitizers while bug.json says the bug is there: give the program a "
                "verdict of its own, or say why in the reproducer's \"no_sanitizer\"")
    if rc != 0 and no_sanitizer:
        tail = " | ".join(line for line in out.splitlines()[-3:] if line.strip())
        return f"fails without sanitizers (exit {rc}: {tail[:300]}), but \"no_sanitizer\" says it runs clean: {no_sanitizer}"
    return None


def run_plain(source: str, rep: repro.Reproducer, exporter: export.Exporter) -> tuple[int, str]:
    """`source` built against the pinned upstream without sanitizers (ggml's CPU backend, or whisper.cpp) and run."""
    if exporter.target == "whisper_string_handoff":
        libdirs, includes = configs.ensure_whisper_plain()
        return configs.run(source, libdirs, includes, configs.PLAIN_CONFIG, export.run_env(rep, exporter),
                           libs=configs.WHISPER_LIBS)
    libdir, include = configs.ensure(configs.PLAIN_CONFIG)
    return configs.run(source, libdir, include, configs.PLAIN_CONFIG, export.run_env(rep, exporter))


def main() -> int:
    failed = 0

    def fail(msg: str) -> None:
        nonlocal failed
        failed += 1
        print(f"FAIL {msg}")

    findings = []
    for d in sorted(p for p in (ROOT / "repro").iterdir() if (p / "bug.json").is_file()):
        try:
            bug = repro.load(d)
        except repro.BugJsonError as e:
            fail(str(e))
            continue
        if bug.status in export.EXPORTED_STATUSES and bug.reproducers and bug.target in export.EXPORTERS:
            findings.append(bug)
    with tempfile.TemporaryDirectory(prefix="lifeline-reports-") as tmp:
        for bug in findings:
            exporter = export.EXPORTERS[bug.target]
            folder = Path(tmp) / bug.id
            decoder = ROOT / "build" / exporter.lane / "targets" / bug.target
            if exporter.lane != "asan" and not decoder.is_file():
                # llama_memory_differential: decoded and exported by the fuzz lane, which checks its exports there
                print(f"note {bug.id}: not checked here: its programs are decoded by the {exporter.lane} lane's "
                      f"{bug.target}, which is not built ({decoder})")
                continue
            proc = subprocess.run([sys.executable, "-S", str(ROOT / "cli" / "lifeline_main.py"), "export", bug.id,
                                   "--out", str(folder)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                  errors="replace")
            if proc.returncode != 0:
                fail(f"{bug.id}: lifeline export failed (exit {proc.returncode}): {proc.stdout.strip()[-400:]}")
                continue
            report = (folder / "report.md").read_text(encoding="utf-8")
            missing = missing_files(report, finding_files(bug, exporter), folder)
            if missing:
                fail(f"{bug.id}: report.md names {', '.join(missing)}, which the export folder does not hold")
            else:
                print(f"ok   {bug.id}: every file report.md names is in the export")
            if exporter.language != "C":
                continue
            if bug.target not in ("ggml_graph_topology", "whisper_string_handoff"):
                why = ("llama.cpp's src/ is built in the fuzz and tsan lanes only, with sanitizers" if
                       bug.target == "llama_memory_differential" else
                       f"{bug.target}'s ggml-vulkan is built in the sanitizer lanes only")
                print(f"note {bug.id}: not run without sanitizers here ({why})")
                continue
            for rep in bug.reproducers:
                name = f"{rep.input.name}.c"
                rc, out = run_plain((folder / name).read_text(), rep, exporter)
                why = plain_verdict(rc, out, rep.no_sanitizer)
                if why:
                    fail(f"{bug.id}/{name}: {why}")
                else:
                    print(f"ok   {bug.id}/{name}: without sanitizers " + (f"exit {rc}" if rc else
                                                                          "runs clean, as no_sanitizer says"))
            for p in (export.bug_json(bug).get("report") or {}).get("programs") or []:
                if not p.get("verdict"):
                    continue
                rc, out = run_plain((folder / p["file"]).read_text(), bug.reproducers[0], exporter)
                if rc == 0:
                    fail(f"{bug.id}/{p['file']}: runs clean without sanitizers; it is to show: {p['shows']}")
                else:
                    print(f"ok   {bug.id}/{p['file']}: without sanitizers exit {rc}")
    print(f"{len(findings)} findings checked, {failed} failure(s)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
