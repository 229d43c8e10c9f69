#!/usr/bin/python3
"""bench/results/README.md, the dashboard: per fuzz target and per bug, the newest result of each measure.

  bench/dashboard.py            rewrite bench/results/README.md from the results
  bench/dashboard.py --check    exit 1 (and say which line differs) if README.md is not what it would write
  bench/dashboard.py --stdout   print the dashboard instead of writing it
  bench/dashboard.py --older    list the results at the top that a newer one of their measure supersedes: each
                                with its run's files, the dated folder it belongs in and the guides that cite it

Reads every JSON result under bench/results/, the dated folders of older runs included (artifacts/ and matrix/
left out), by its fields: a bench/throughput.py run (<NAME>.json, a list with exec_s and ceiling_exec_s) gives a
target's exec/s and each sanitizer's cost; a bench/coverage.py run (results, fuzz) a target's coverage; a
bench/tte.py result (tte-<bug>-<mode>*.json) a bug's time to exposure in one mode. Of several results of one
measure (a target's exec/s, a target's cost under one sanitizer, a target's coverage, a bug's time to exposure in
one mode) the newest wins. Its date, machine and commit are those the result records (bench/provenance.py,
every run since issue 64); where it records none, the date and commit are those of the commit that last changed
the file (renames followed; marked "(git)"), and the machine is "not recorded". Between two results of the same
time (one commit), a tte result under the name bench/tte.py writes (tte-<bug>-<mode>.json) wins over a renamed
copy, and only that name gets its plot (tte-<bug>[-<mode>].png) linked.
Every derived column is computed from the two columns printed beside it (bench/tables.py). Writes nothing else;
tests/cli/test_dashboard.py checks that the committed README.md is what this writes. Refuses to run in a shallow
clone, whose cut history would date every older result alike.
"""
import argparse
import calendar
import json
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
import tables  # noqa: E402
from provenance import NOT_RECORDED  # noqa: E402

RESULTS = ROOT / "bench" / "results"
SKIP_DIRS = ("artifacts", "matrix")  # scratch (git-ignored), and the version matrix (docs/your-own-upstream.md)
SANITIZER_ORDER = ("asan", "fuzz", "lsan", "tsan")  # bench/throughput.py's VARIANTS; its extras after them
TTE_MODES = ("reintroduced", "upstream-variant", "pinned-upstream")
COVERAGE_COLUMNS = ("seeds", "seeds + fuzz", "regression")
COMMAND = "bench/dashboard.py"


# ---- where each result came from -------------------------------------------------------------------------------

def git_history(root: Path, paths: list) -> dict:
    """{path relative to root: (unix time, short hash)} of the commit that last changed each file's content,
    following renames back (a rename with unchanged content is a move, not a change). A path git does not know
    is left out. One `git log` over bench/results."""
    try:
        proc = subprocess.run(["git", "-c", "core.quotePath=off", "log", "-M", "--name-status", "--format=@%h %ct",
                               "--", "bench/results"], cwd=root, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                              universal_newlines=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return {}
    if proc.returncode != 0:
        return {}
    tracking = {}  # name in the commit being read -> the paths of today that had that name then
    for p in paths:
        tracking.setdefault(p, []).append(p)
    found, commit = {}, None
    for line in proc.stdout.splitlines():
        if line.startswith("@"):
            h, t = line[1:].split()
            commit = (int(t), h)
            continue
        fields = line.split("\t")
        if len(fields) < 2 or commit is None:
            continue
        status, names = fields[0], fields[1:]
        if status.startswith("R") and len(names) == 2:
            old, new = names
            now = tracking.pop(new, [])
            if not now:
                continue
            if status == "R100":
                tracking.setdefault(old, []).extend(now)
            else:
                for p in now:
                    found[p] = commit
        elif status[0] in "AMC":
            for p in tracking.pop(names[-1], []):
                found[p] = commit
    return found


def shallow(root: Path) -> bool:
    """Whether git's history of root is cut (a shallow clone: every file's last change would be its first
    commit), or there is no history to read."""
    try:
        proc = subprocess.run(["git", "rev-parse", "--is-shallow-repository"], cwd=root, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, universal_newlines=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return True
    return proc.returncode != 0 or proc.stdout.strip() != "false"


class Source:
    """One result file: its path under bench/results/ and, per result in it, when, where and at which commit."""

    def __init__(self, results: Path, rel: str, history: dict, data):
        self.results, self.rel, self.data = results, rel, data  # rel: relative to results, bench/results/
        self.git = history.get(f"bench/results/{rel}")

    def provenance(self, record: dict) -> dict:
        """{"key": sortable time, "date", "machine", "commit"} of one result of this file (`record`: its fields)."""
        date, machine, commit = record.get("date"), record.get("machine"), record.get("commit")
        if isinstance(date, str) and re.match(r"^\d{4}-\d\d-\d\d", date):
            key = calendar.timegm(time.strptime(date[:19], "%Y-%m-%dT%H:%M:%S") if "T" in date
                                  else time.strptime(date[:10], "%Y-%m-%d"))
            shown_date = date[:10]
        elif self.git:
            key, shown_date = self.git[0], time.strftime("%Y-%m-%d", time.gmtime(self.git[0])) + " (git)"
        else:
            key, shown_date = 0, NOT_RECORDED
        if not commit:
            commit = f"{self.git[1]} (git)" if self.git else NOT_RECORDED
        return {"key": key, "date": shown_date, "machine": machine or NOT_RECORDED, "commit": commit}

    def siblings(self) -> dict:
        """{"table": <NAME>.md, "plot": the Kaplan-Meier plot} beside this result where they exist (paths relative
        to the results folder), and the per-target JSONs of a throughput run."""
        rel, data = Path(self.rel), self.data
        out = {"table": rel.with_suffix(".md")}
        if isinstance(data, dict) and "bug" in data and rel.name == f"tte-{data['bug']}-{tte_mode(data)}.json":
            # The plot bench/tte.py writes with this name; a renamed copy's plot was overwritten by a later run.
            mode = tte_mode(data)
            out["plot"] = rel.with_name(f"tte-{data['bug']}.png" if mode == "reintroduced"
                                        else f"tte-{data['bug']}-{mode}.png")
        if isinstance(data, list):
            for e in data:
                out[e["target"]] = rel.with_name(f"{rel.stem}-{e['target']}.json")
        return {k: v.as_posix() for k, v in out.items() if (self.results / v).is_file()}

    def link(self) -> str:
        """The file as a link from README.md, with its table and plot where there are."""
        near = self.siblings()
        return f"[{self.rel}]({self.rel})" + "".join(f" ([{k}]({near[k]}))" for k in ("table", "plot") if k in near)


# ---- reading the results ---------------------------------------------------------------------------------------

def result_files(results: Path) -> list:
    """Every JSON under `results`, relative to it, the folders of SKIP_DIRS left out; sorted."""
    out = []
    for p in results.rglob("*.json"):
        rel = p.relative_to(results)
        if rel.parts[0] in SKIP_DIRS:
            continue
        out.append(rel.as_posix())
    return sorted(out)


def tte_mode(data: dict) -> str:
    """The mode of a tte result: as recorded, else as bench/tte.py named it before it recorded one."""
    if data.get("mode"):
        return data["mode"]
    mode = "fixed" if data.get("fixed_code") else "upstream-variant" if data.get("upstream_variant") else "reintroduced"
    lane = data.get("lane") or "fuzz"
    return mode if lane == "fuzz" else f"{mode}-{lane}"


def kind_of(data) -> str:
    """Which measure a result file holds: "throughput" (a bench/throughput.py run), "coverage" (bench/coverage.py),
    "tte" (bench/tte.py), or "" (none this page shows)."""
    if isinstance(data, list) and data and all(isinstance(e, dict) and "ceiling_exec_s" in e and "target" in e
                                               for e in data):
        return "throughput"
    if isinstance(data, dict) and isinstance(data.get("results"), dict) and "fuzz" in data:
        return "coverage"
    if isinstance(data, dict) and {"bug", "rows", "trials", "found"} <= set(data):
        return "tte"
    return ""


def newer(candidate: tuple, held: tuple) -> bool:
    """Whether candidate (provenance, source, ...) is a newer result of its measure than held: the later time,
    and at one time the name bench/tte.py writes over a renamed copy, then the later name (a fixed order)."""
    if held is None:
        return True
    a, b = candidate[0], held[0]
    if a["key"] != b["key"]:
        return a["key"] > b["key"]
    return (candidate[-1], candidate[1].rel) > (held[-1], held[1].rel)


def collect(results: Path, history: dict) -> dict:
    """{"throughput": {target: (prov, source, entry, 0)}, "sanitizer": {(target, variant): ...},
    "coverage": {target: ...}, "tte": {(bug, mode): (prov, source, data, canonical)}}, newest of each."""
    best = {"throughput": {}, "sanitizer": {}, "coverage": {}, "tte": {}}

    def offer(kind, key, item):
        if newer(item, best[kind].get(key)):
            best[kind][key] = item

    for rel in result_files(results):
        try:
            data = json.loads((results / rel).read_text())
        except (OSError, ValueError):
            continue
        src, kind = Source(results, rel, history, data), kind_of(data)
        if kind == "throughput":
            for e in data:
                prov = src.provenance(e)
                offer("throughput", e["target"], (prov, src, e, 0))
                for variant, o in (e.get("overhead") or {}).items():
                    if o and o.get("exec_s"):
                        offer("sanitizer", (e["target"], variant), (prov, src, o, 0))
        elif kind == "coverage":
            prov = src.provenance(data)
            for target, cols in data["results"].items():
                offer("coverage", target, (prov, src, cols, 0))
        elif kind == "tte":
            mode = tte_mode(data)
            canonical = int(Path(rel).name == f"tte-{data['bug']}-{mode}.json")
            offer("tte", (data["bug"], mode), (src.provenance(data), src, data, canonical))
    return best


# ---- the page --------------------------------------------------------------------------------------------------

def where(prov: dict) -> str:
    return f"{prov['date']} | {prov['machine']} | {prov['commit']}"


def seconds(v) -> str:
    return "-" if v is None else f"{v:g}"


def throughput_table(best: dict) -> list:
    lines = ["| target | exec/s | empty target, exec/s | exec/s / empty target | runs ended by a crash | date | machine | "
             "commit | file |", "|---|---|---|---|---|---|---|---|---|"]
    for target in sorted(best["throughput"]):
        prov, src, e, _ = best["throughput"][target]
        crashed = f"{e['runs_ended_by_crash']}/{e['rounds']}" if "runs_ended_by_crash" in e and "rounds" in e else "-"
        lines.append(f"| {target} | {e['exec_s']} | {e['ceiling_exec_s']} | "
                     f"{tables.percent(e['exec_s'], e['ceiling_exec_s'], 2)} | {crashed} | {where(prov)} | {src.link()} |")
    return lines


def sanitizer_table(best: dict) -> list:
    lines = ["| target | sanitizer build | exec/s without sanitizers | exec/s with it | slowdown | date | machine | "
             "commit | file |", "|---|---|---|---|---|---|---|---|---|"]
    order = {v: i for i, v in enumerate(SANITIZER_ORDER)}
    for target, variant in sorted(best["sanitizer"], key=lambda k: (k[0], order.get(k[1], len(order)), k[1])):
        prov, src, o, _ = best["sanitizer"][(target, variant)]
        lines.append(f"| {target} | {variant} | {o['none_exec_s']} | {o['exec_s']} | "
                     f"{tables.times(o['none_exec_s'], o['exec_s'])} | {where(prov)} | {src.link()} |")
    return lines


def coverage_cell(col: dict, code: str) -> str:
    if not col or not col.get(code):
        return "-"
    lines = col[code]["lines"]
    if not lines["count"]:
        return "-"
    return f"{tables.percent(lines['covered'], lines['count'])} ({lines['covered']}/{lines['count']})"


def coverage_table(best: dict) -> list:
    lines = ["| target | code | " + " | ".join(f"{c}: lines" for c in COVERAGE_COLUMNS) + " | date | machine | commit | "
             "file |", "|---|---|" + "---|" * len(COVERAGE_COLUMNS) + "---|---|---|---|"]
    for target in sorted(best["coverage"]):
        prov, src, cols, _ = best["coverage"][target]
        for code, label in (("project", "project (layers/, harness/)"), ("upstream", "upstream (ggml)")):
            cells = [coverage_cell(cols.get(c), code) for c in COVERAGE_COLUMNS]
            if code == "upstream" and all(c == "-" for c in cells):
                continue
            lines.append(f"| {target} | {label} | " + " | ".join(cells) + f" | {where(prov)} | {src.link()} |")
    return lines


def last_found(data: dict):
    times = [r["seconds"] for r in data.get("rows", []) if r.get("result") == "found"]
    return max(times) if times else None


def tte_tables(best: dict, bugs: list) -> list:
    head = ["| bug | mode | target | found | budget s | median s | RMST s | last found s | other crashes | date | "
            "machine | commit | file |", "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    exposed, fixed = list(head), ["| bug | target | trials | budget s | crashes | date | machine | commit | file |",
                                  "|---|---|---|---|---|---|---|---|---|"]
    for bug, mode in sorted(best["tte"]):
        prov, src, d, _ = best["tte"][(bug, mode)]
        if mode.startswith("fixed"):
            crashes = d.get("found", 0) + d.get("other_crashes", 0)
            fixed.append(f"| `{bug}` | {d.get('target', '-')} | {d['trials']} | {d.get('budget_s', '-')} | {crashes} | "
                         f"{where(prov)} | {src.link()} |")
            continue
        exposed.append(f"| `{bug}` | {mode} | {d.get('target', '-')} | {d['found']}/{d['trials']} | "
                       f"{d.get('budget_s', '-')} | {seconds(d.get('median_s'))} | {seconds(d.get('rmst_s'))} | "
                       f"{seconds(last_found(d))} | {d.get('other_crashes', '-')} | {where(prov)} | {src.link()} |")
    measured = {bug for bug, mode in best["tte"] if not mode.startswith("fixed")}
    missing = [b for b in bugs if b not in measured]
    out = ["## Time to exposure, per bug and mode", "",
           "`bench/tte.py`: trials that found the bug / trials, each trial bounded by the budget; the median of the "
           "trials that found it; RMST, the restricted mean survival time (unfound trials counted at the budget); "
           "last found, the slowest trial that found it; other crashes, trials stopped by another crash first. "
           "Modes: reintroduced (the stand-in with the bug switched back on), upstream-variant (forward-ported into "
           "upstream), pinned-upstream (an upstream finding on the pinned upstream with its guard off); -tsan: "
           "fuzzed under TSan.", ""] + exposed
    if missing:
        out += ["", "No time-to-exposure result yet: " + ", ".join(f"`{b}`" for b in missing) + "."]
    out += ["", "## The fixed code", "", "`bench/tte.py BUG --fixed`: the same fuzzing with the bug switched off; "
            "any crash is a false report.", ""] + fixed
    return out


def count(n: int, what: str) -> str:
    return f"{n} {what}" + ("" if n == 1 else "s")


def other_files(results: Path, cited: set, targets: set) -> list:
    """The files at the top of `results` no table above cites, one link per run, and the dated folders
    (`targets`: the fuzz targets, whose names end a throughput run's per-target JSONs)."""
    top = sorted(p.name for p in results.iterdir() if p.name != "README.md" and not p.name.startswith("."))
    dated = [n for n in top if re.fullmatch(r"\d{4}-\d\d-\d\d", n) and (results / n).is_dir()]
    rest = [n for n in top if n not in dated and n not in cited and n not in SKIP_DIRS]
    runs = {}  # a run's name -> its files: NAME.md, NAME.json, NAME-<target>.json, NAME-survival.png
    for n in rest:
        base = Path(n).stem
        for suffix in ["-survival"] + [f"-{t}" for t in targets]:
            # A file with a table of its own names its run whole (bench/profile.py's profile-<target>.json and .md).
            if (base.endswith(suffix) and (suffix == "-survival" or n.endswith(".json"))
                    and not (results / f"{base}.md").is_file()):
                base = base[:-len(suffix)]
                break
        runs.setdefault(base, []).append(n)
    kinds = {}
    for run, files in sorted(runs.items()):
        shown = next((f for ext in (".md", ".json", ".png") for f in files if f == run + ext), files[0])
        kinds.setdefault(run.split("-")[0], []).append(f"[{run}]({shown})")
    lines = []
    if kinds:
        lines += ["Also at the top, one link per run (its table, else its JSON): tables of several bugs or targets, "
                  "plots, the newest of measures this page does not show (libFuzzer settings: bench/engine.py; "
                  "replay rates; the suite's wall time) and runs the guides cite:", ""]
        lines += [f"- {kind}: " + ", ".join(links) for kind, links in sorted(kinds.items())]
        lines.append("")
    lines += ["The version matrix: [matrix/](matrix/) (`lifeline matrix`; a test reads matrix/matrix.json)."]
    if dated:
        lines += ["", "Older runs, by the date of their run (or of their commit): " +
                  ", ".join(f"[{n}/]({n}/) ({count(sum(1 for p in (results / n).rglob('*') if p.is_file()), 'file')})"
                            for n in dated) + "."]
    return lines


def read(results: Path, root: Path) -> tuple:
    """(git history of every file under `results`, the newest result of each measure): what both pages read."""
    paths = [f"bench/results/{p.relative_to(results).as_posix()}" for p in results.rglob("*") if p.is_file()]
    history = git_history(root, paths)
    return history, collect(results, history)


def render(results: Path = RESULTS, root: Path = ROOT) -> str:
    _, best = read(results, root)
    bugs = sorted(d.name for d in (root / "repro").iterdir() if (d / "bug.json").is_file()) \
        if (root / "repro").is_dir() else []
    cited = set()
    for kind in best.values():
        for item in kind.values():
            cited.update(p for p in [item[1].rel, *item[1].siblings().values()] if "/" not in p)
    lines = [f"<!-- Generated by {COMMAND} from the results in this folder; do not edit: run {COMMAND}. -->",
             "# Benchmark results",
             "",
             f"Generated by `{COMMAND}` from the newest result of each measure in bench/results/ and its dated folders; "
             f"never edit it by hand: run `{COMMAND}` after adding a result (`unit.python.dashboard` fails while this "
             "page and the results disagree). How each benchmark runs and what its figures mean: "
             "[docs/benchmarks.md](../../docs/benchmarks.md).",
             "",
             "Each row: the newest result of its measure, with the date, machine and commit the result records; where "
             "it records none (every run before issue 64), the date and commit are those of the commit that last "
             "changed the file, marked (git), and the machine is not recorded. Every ratio and percentage is computed "
             "from the two columns beside it.",
             "",
             "## Throughput, per target",
             "",
             "`bench/throughput.py`: exec/s of a fuzzing run of the fuzz lane's build from the target's seeds, in turns "
             "with the empty target (the ceiling), the mean of the run's rounds.",
             ""] + throughput_table(best) + [
             "",
             "## Sanitizer cost, per target",
             "",
             "`bench/throughput.py --sanitizers`: exec/s of a libFuzzer build with the sanitizer's flags against one "
             "without sanitizers, in turns; slowdown = without / with. fuzz is the fuzz lane (ASan+UBSan and its pass "
             "plugin); fuzz-unfiltered and fuzz-bare-harness are the measurements of `--variants` "
             "([docs/benchmarks.md](../../docs/benchmarks.md#sanitizer-overhead)).",
             ""] + sanitizer_table(best) + [
             "",
             "## Coverage, per target",
             "",
             "`bench/coverage.py`: source-based coverage of lines, from the seeds, the seeds plus a fuzzing run, and "
             "the regression corpus; functions and branches are in the run's table.",
             ""] + coverage_table(best) + [""] + tte_tables(best, bugs) + ["", "## Other results", ""] + \
        other_files(results, cited, set(best["throughput"]))
    return "\n".join(lines) + "\n"


def older(results: Path = RESULTS, root: Path = ROOT) -> list:
    """Lines: each JSON result at the top of `results` that no row of the dashboard shows, with its run's other
    files (<NAME>.md, per-target JSONs), the dated folder of its date, and the guides and result tables that name
    it."""
    history, best = read(results, root)
    shown = {item[1].rel for kind in best.values() for item in kind.values()}
    named_in = [root / "README.md", *sorted((root / "docs").glob("*.md")),
                *sorted(p for p in results.glob("*.md") if p.name != "README.md")]
    guides = {g: g.read_text(errors="replace") for g in named_in if g.is_file()}
    lines = []
    for rel in result_files(results):
        if "/" in rel or rel in shown:
            continue
        data = json.loads((results / rel).read_text())
        kind = kind_of(data)
        if kind not in ("throughput", "tte"):
            continue
        src = Source(results, rel, history, data)
        entry = data[0] if kind == "throughput" else data
        folder = src.provenance(entry)["date"].split()[0]
        files = sorted({rel, *(v for k, v in src.siblings().items() if k != "plot")})
        cited = sorted({g.relative_to(root).as_posix() for g, text in guides.items()
                        for f in files if f in text and g.name not in files})
        lines.append(f"{folder}/ <- " + " ".join(files) + (f"   (named in {', '.join(cited)})" if cited else ""))
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="exit 1 if README.md differs from what would be written")
    mode.add_argument("--stdout", action="store_true", help="print the dashboard instead of writing it")
    mode.add_argument("--older", action="store_true", help="list the superseded results at the top")
    args = ap.parse_args()
    if shallow(ROOT):
        # The results that record no date are dated, and so ordered, by git: a cut history dates them all alike.
        print(f"dashboard: {ROOT} is a shallow clone or no git checkout, and the results before issue 64 are dated "
              "by their commits: run `git fetch --unshallow` first", file=sys.stderr)
        return 2
    if args.older:
        print("\n".join(older()) or "dashboard: no superseded result at the top")
        return 0
    page = render()
    readme = RESULTS / "README.md"
    if args.stdout:
        sys.stdout.write(page)
        return 0
    if args.check:
        have = readme.read_text() if readme.is_file() else ""
        if have == page:
            print(f"dashboard: {readme.relative_to(ROOT)} is up to date")
            return 0
        for n, (a, b) in enumerate(zip(have.splitlines() + [""] * 9999, page.splitlines()), 1):
            if a != b:
                print(f"dashboard: {readme.relative_to(ROOT)}:{n} differs; run {COMMAND}\n  has:    {a}\n  writes: {b}",
                      file=sys.stderr)
                break
        else:
            print(f"dashboard: {readme.relative_to(ROOT)} has lines past the end; run {COMMAND}", file=sys.stderr)
        return 1
    readme.write_text(page)
    print(f"dashboard: wrote {readme.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
