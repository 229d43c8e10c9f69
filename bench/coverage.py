#!/usr/bin/python3
"""What each target reaches: source-based coverage from its seeds, from its seeds plus a fuzzing run, and from
its regression corpus.

  bench/coverage.py [TARGET...] [--fuzz-seconds 600] [--fuzz-out DIR] [--work DIR] [--picture] [--name NAME]
                    [--no-build]

Per target, three `lifeline coverage` runs in the coverage lane (cli/lifeline/coverage.py):
  seeds          corpus/<target>/ only (time-to-exposure is measured from these)
  seeds + fuzz   the seeds and the working corpus of `lifeline fuzz <target> --time <fuzz-seconds>` (fuzz lane,
                 fixed code, every guard on) started from them; --fuzz-out DIR reuses the corpora of an earlier
                 `lifeline fuzz --out DIR` run instead of fuzzing (the table says which)
  regression     corpus/regression/<target>/ only
The table gives lines, functions and branches of the project's code under test (layers/, harness/) and of the
upstream files the target drives (ggml-alloc.c, ggml-backend.cpp, ggml.c, the CPU backend's ops, ggml-vulkan).
--picture renders the annotated ggml-alloc.c of the regression run with headless Chromium (Debian's chromium;
`scripts/install-deps.sh --bench` installs it) into bench/results/<NAME>-ggml-alloc.png.
Writes bench/results/<NAME>.json (with the run's date, machine and commit, bench/provenance.py) and <NAME>.md
(NAME: coverage by default). A benchmark, not a test.
"""
import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import provenance  # bench/, this script's folder

ROOT = Path(__file__).resolve().parents[1]
LIFELINE = [sys.executable, str(ROOT / "cli" / "lifeline_main.py")]
# The upstream files shown in the table (the "the upstream files the target drives"); the full list
# per file is in each run's summary.md.
UPSTREAM_ROWS = ("ggml/src/ggml-alloc.c", "ggml/src/ggml-backend.cpp", "ggml/src/ggml.c", "ggml/src/ggml-cpu/ops.cpp",
                 "ggml/src/ggml-cpu/ggml-cpu.c", "ggml/src/ggml-vulkan/ggml-vulkan.cpp")
COLUMNS = ("seeds", "seeds + fuzz", "regression")


def lifeline(args: list, what: str) -> None:
    print("+ lifeline " + " ".join(args), flush=True)
    r = subprocess.run(LIFELINE + args, cwd=ROOT)
    if r.returncode != 0:
        raise SystemExit(f"bench/coverage.py: {what} failed (lifeline exited {r.returncode})")


def measure(target: str, out: Path, extra: list) -> dict:
    lifeline(["coverage", target, "--no-build", "--out", str(out)] + extra, f"coverage of {target}")
    return json.loads((out / "summary.json").read_text())["targets"][target]


def pct(r: dict) -> str:
    return f"{100.0 * r['covered'] / r['count']:.1f}%" if r["count"] else "-"


def cell(r: dict) -> str:
    return f"{pct(r)} ({r['covered']}/{r['count']})" if r["count"] else "-"


def table(results: dict) -> list[str]:
    lines = ["| target | code | " + " | ".join(f"{c}: lines / functions / branches" for c in COLUMNS) + " |",
             "|---|---|" + "---|" * len(COLUMNS)]
    for t, cols in results.items():
        # Per column, the figures of each row: the project's totals, then the upstream files the target links.
        figures = {col: ({"project (layers/, harness/)": c["project"], **c["files"]} if c else {})
                   for col, c in ((col, cols.get(col)) for col in COLUMNS)}
        names = ["project (layers/, harness/)"] + [f for f in UPSTREAM_ROWS if any(f in v for v in figures.values())]
        for name in names:
            cells = [" / ".join(pct(s[k]) for k in ("lines", "functions", "branches")) if s else "-"
                     for s in (figures[col].get(name) for col in COLUMNS)]
            lines.append(f"| {t} | {name} | " + " | ".join(cells) + " |")
    return lines


def inputs_row(results: dict) -> list[str]:
    lines = ["| target | seeds | fuzz corpus added | regression corpus |", "|---|---|---|---|"]
    for t, cols in results.items():
        seeds = cols["seeds"]["inputs"].get("seeds", 0)
        fuzz = sum(v for k, v in cols["seeds + fuzz"]["inputs"].items() if k not in ("seeds",)) if cols.get("seeds + fuzz") else 0
        reg = cols["regression"]["inputs"].get("regression", 0) if cols.get("regression") else 0
        lines.append(f"| {t} | {seeds} | {fuzz} | {reg} |")
    return lines


def picture(report: Path, out_png: Path, first: int = 926, last: int = 980) -> None:
    """Lines first..last of ggml-alloc.c's page in `report` (an llvm-cov html folder), rendered by headless
    Chromium. The page is cut to those rows (the header row kept) in a copy beside it, so the stylesheet's
    relative path still holds: a screenshot shows the top of a page, and Chromium's headless screenshot does
    not scroll to an anchor."""
    chromium = shutil.which("chromium")
    if not chromium:
        raise SystemExit("bench/coverage.py: --picture needs Debian's chromium (scripts/install-deps.sh --bench)")
    pages = sorted(report.absolute().rglob("ggml-alloc.c.html"))
    if not pages:
        raise SystemExit(f"bench/coverage.py: no ggml-alloc.c.html under {report}")
    page = pages[0].read_text()
    rows = page.split("<tr>")
    keep = [r for r in rows[2:] if first <= _row_line(r) <= last]
    if not keep:
        raise SystemExit(f"bench/coverage.py: {pages[0]} has no rows {first}..{last}")
    tail = rows[-1][rows[-1].index("</tr>") + len("</tr>"):]  # the end of the table and page
    cut = pages[0].with_name("lifeline-picture.html")
    cut.write_text("<tr>".join(rows[:2] + keep) + tail)
    try:
        with tempfile.TemporaryDirectory() as profile:
            # The flags keep Chromium off the network (this machine's is closed) and out of any user profile;
            # the virtual time budget lets the page and its stylesheet load before the screenshot.
            cmd = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                   "--disable-background-networking", "--disable-component-update", "--disable-sync",
                   f"--user-data-dir={profile}", "--hide-scrollbars", "--window-size=1400,1250",
                   "--virtual-time-budget=5000", f"--screenshot={out_png}", cut.as_uri()]
            r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
    finally:
        cut.unlink()
    if r.returncode != 0 or not out_png.is_file():
        raise SystemExit(f"bench/coverage.py: chromium failed (exit {r.returncode}): {r.stdout[-800:]}")
    print(f"picture: {out_png} (ggml-alloc.c lines {first}-{last})")


def _row_line(row: str) -> int:
    """The source line of one row of an llvm-cov html page (its first anchor L<n>), or 0."""
    i = row.find("name='L")
    if i < 0:
        return 0
    j = row.index("'", i + 7)
    return int(row[i + 7:j])


def _executed(log: Path) -> str:
    """", N inputs executed" from a `lifeline fuzz` job's fuzz.log (libFuzzer's final stats), or ""."""
    try:
        lines = [l for l in log.read_text(errors="replace").splitlines() if l.startswith("stat::number_of_executed_units:")]
    except OSError:
        return ""
    return f", {int(lines[-1].split()[-1]):,} inputs executed" if lines else ""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("targets", nargs="*", help="default: every target the coverage lane builds")
    ap.add_argument("--fuzz-seconds", type=int, default=600)
    ap.add_argument("--fuzz-out", help="reuse the working corpora of this `lifeline fuzz --out` folder")
    ap.add_argument("--work", help="where the runs write (default: a folder under build/bench/coverage)")
    ap.add_argument("--picture", action="store_true", help="render ggml-alloc.c's report page (headless Chromium)")
    ap.add_argument("--name", default="coverage")
    ap.add_argument("--no-build", action="store_true")
    a = ap.parse_args()
    if a.fuzz_seconds <= 0:
        ap.error("--fuzz-seconds must be positive")
    if a.fuzz_out and not Path(a.fuzz_out).is_dir():
        ap.error(f"--fuzz-out '{a.fuzz_out}' is not a directory")
    work = Path(a.work or ROOT / "build" / "bench" / "coverage").absolute()
    work.mkdir(parents=True, exist_ok=True)
    if not a.no_build:
        # Builds the coverage lane (and checks the tools) once; the runs below use it as built.
        lifeline(["coverage", *a.targets, "--inputs", "seeds", "--out", str(work / "build-check")], "building the coverage lane")
    targets = a.targets or sorted(p.name for p in (ROOT / "build" / "coverage" / "targets").iterdir() if p.is_file())
    fuzz_dir = Path(a.fuzz_out).absolute() if a.fuzz_out else work / "fuzz"
    results, fuzz_note, prov = {}, {}, provenance.record()
    for t in targets:
        cols = results.setdefault(t, {})
        cols["seeds"] = measure(t, work / t / "seeds", ["--inputs", "seeds"])
        if not a.fuzz_out:
            start = time.monotonic()
            lifeline(["fuzz", t, "--time", str(a.fuzz_seconds), "--no-build", "--out", str(fuzz_dir)], f"fuzzing {t}")
            fuzz_note[t] = f"fuzzed here for {a.fuzz_seconds} s ({time.monotonic() - start:.0f} s wall)"
        else:
            fuzz_note[t] = f"reused {fuzz_dir / t / 'corpus'}" + _executed(fuzz_dir / t / "fuzz.log")
        corpus = fuzz_dir / t / "corpus"
        if corpus.is_dir() and any(corpus.iterdir()):
            cols["seeds + fuzz"] = measure(t, work / t / "seeds+fuzz", ["--inputs", "seeds", "--corpus", str(corpus)])
        if (ROOT / "corpus" / "regression" / t).is_dir():
            cols["regression"] = measure(t, work / t / "regression", ["--inputs", "regression"])
    md = [f"# Coverage of the code under test ({time.strftime('%Y-%m-%d')})", "",
          "Source-based coverage (clang 14, `lifeline coverage`, coverage lane); each cell is lines / functions / "
          "branches covered. Project: layers/ and harness/ (the replay driver excluded); upstream: the ggml files "
          "named. The fuzz corpus: `lifeline fuzz <target> --time N` from the seeds, fixed code, every guard on.", ""]
    md += table(results) + ["", "Inputs replayed:", ""] + inputs_row(results)
    md += ["", "Fuzz corpora: " + "; ".join(f"{t}: {n}" for t, n in fuzz_note.items())]
    results_dir = ROOT / "bench" / "results"
    (results_dir / f"{a.name}.md").write_text("\n".join(md) + "\n")
    (results_dir / f"{a.name}.json").write_text(json.dumps({"results": results, "fuzz": fuzz_note, **prov}, indent=1) + "\n")
    print("\n".join(md))
    if a.picture:
        reg = work / "ggml_graph_topology" / "regression" / "html"
        picture(reg if reg.is_dir() else work / "ggml_graph_topology" / "seeds" / "html",
                results_dir / f"{a.name}-ggml-alloc.png")
    print(f"\nwrote {results_dir / (a.name + '.md')} and .json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
