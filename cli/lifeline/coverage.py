"""`lifeline coverage`: what the inputs reach, measured with clang's source-based coverage.

  lifeline coverage [TARGET...] [--corpus DIR...] [--inputs seeds,regression,repro] [--out DIR] [--gaps]
                    [--no-build]

The coverage lane (preset `coverage`: -fprofile-instr-generate -fcoverage-mapping, no sanitizer, the replay
driver; upstream ggml, whisper.cpp and llama.cpp's src/ instrumented too, torch is a prebuilt library and is not)
replays, per target:
  seeds        corpus/<target>/
  regression   corpus/regression/<target>/ (the coverage-merged regression corpus), when there is one
  repro        the inputs of every repro/<id>/ whose target (or unpatched upstream variant's target) it is;
               on the fixed code, every guard on, they all run clean
  --corpus DIR a working corpus, e.g. fuzz-out/<target>/corpus; with several targets DIR must hold one
               <target>/corpus (or <target>/) folder per target, as a `lifeline fuzz --out` folder does
Each process writes a raw profile when it exits; llvm-profdata-14 merges them per target and over all, and
llvm-cov-14 writes, under --out (default coverage-out/):
  html/index.html   the annotated sources of the code under test (layers/, harness/, and the upstream ggml and
                    whisper.cpp sources compiled into the targets), line, region and branch counts
  summary.md, .json per target, per file of the code under test: lines, functions, branches covered
  gaps.md           (--gaps) per file: the functions nothing entered, the partly run functions by how little of
                    them ran, and the branch directions never taken inside functions that ran
When a set's replay fails (an input crashes the fixed code, or exits non-zero), its inputs are replayed one by
one to name the failing ones; the report leaves those out and the command exits 1. Bad arguments and missing tools: one line, exit 2.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path

from .bugs import switch_env
from .build import configure_and_build, ensure_deps, ensure_upstream
from .coverage_inputs import repro_inputs, targets_and_sets
from .paths import ROOT, fuzz_targets
from .states import cmd_states
from .usage import UsageError

LANE = "coverage"
INPUT_SETS = ("seeds", "regression", "repro")
TOOLS = {"llvm-profdata-14": "merges the raw profiles", "llvm-cov-14": "writes the reports",
         "llvm-cxxfilt-14": "demangles C++ function names"}
# The upstream sources, each tree with the prefix its files are named by in the tables: the fetched ggml
# (scripts/fetch-ggml.sh) and the copies of ggml-vulkan's host sources ("ggml/src/ggml-alloc.c"), and the fetched
# whisper.cpp with its own ggml and its whisper.wasm binding (scripts/fetch-whisper.sh: "whisper.cpp/src/whisper.cpp").
# A tree configured with -DLIFELINE_GGML_SOURCE_DIR or -DLIFELINE_WHISPER_SOURCE_DIR is added from the lane's
# cache (upstream_dirs_of).
UPSTREAM_TREES = [(ROOT / "build" / "upstream" / "llama.cpp" / "ggml" / "src", "ggml/src/"),
                  (ROOT / "build" / "upstream" / "ggml-vulkan" / "src", "ggml/src/"),
                  (ROOT / "build" / "upstream" / "whisper.cpp", "whisper.cpp/"),
                  (ROOT / "build" / "upstream" / "llama.cpp" / "src", "llama.cpp/src/")]
UPSTREAM_PREFIXES = tuple(dict.fromkeys(prefix for _, prefix in UPSTREAM_TREES))  # a tree added later reuses one
PROJECT_DIRS = ("layers", "harness")
NOT_UNDER_TEST = {"harness/replay_main.cc"}  # the replay driver: it runs the inputs, nothing tests it


def upstream_dirs_of(lane_dir: Path) -> None:
    """Adds the ggml, whisper.cpp and llama.cpp trees the lane was configured with (LIFELINE_GGML_SOURCE_DIR,
    LIFELINE_WHISPER_SOURCE_DIR, LIFELINE_LLAMA_SOURCE_DIR in its CMakeCache.txt) to UPSTREAM_TREES."""
    try:
        cache = (lane_dir / "CMakeCache.txt").read_text(errors="replace").splitlines()
    except OSError:
        return
    for line in cache:
        name, _, value = line.partition("=")
        value = value.strip()
        if not value:
            continue
        if name.startswith("LIFELINE_GGML_SOURCE_DIR:"):
            tree = (Path(value) / "src", "ggml/src/")
        elif name.startswith("LIFELINE_WHISPER_SOURCE_DIR:"):
            tree = (Path(value), "whisper.cpp/")
        elif name.startswith("LIFELINE_LLAMA_SOURCE_DIR:"):
            tree = (Path(value) / "src", "llama.cpp/src/")
        else:
            continue
        if tree not in UPSTREAM_TREES:
            UPSTREAM_TREES.append(tree)


def is_upstream(name: str) -> bool:
    return name.startswith(UPSTREAM_PREFIXES)


def regression_dir(target: str) -> Path:
    return ROOT / "corpus" / "regression" / target


def _err(msg: str) -> UsageError:
    return UsageError(f"lifeline coverage: {msg}")


def find_tools() -> dict[str, str]:
    found = {}
    for name, why in TOOLS.items():
        path = shutil.which(name)
        if not path:
            raise _err(f"{name} not found ({why}); it is in Debian's llvm-14 package, which "
                       "scripts/install-deps.sh installs")
        found[name] = path
    return found


def under_test(path: str) -> str | None:
    """How `path` (a source file in the coverage mapping) is reported: its name relative to the project or to
    an upstream tree ("ggml/src/ggml-alloc.c", "whisper.cpp/src/whisper.cpp"), or None when it is not code under
    test (core/, targets/,
    tests, system and third-party headers)."""
    p = Path(path)
    for up, prefix in UPSTREAM_TREES:
        try:
            rel = p.relative_to(up)
        except ValueError:
            continue
        # Upstream's sources; of its headers only llama.cpp's, where the memory's logic lives (llama-kv-cells.h)
        if p.suffix in (".c", ".cpp") or (prefix == "llama.cpp/src/" and p.suffix == ".h"):
            return prefix + str(rel)
        return None
    try:
        rel = p.relative_to(ROOT)
    except ValueError:
        return None
    if not rel.parts or rel.parts[0] not in PROJECT_DIRS or str(rel) in NOT_UNDER_TEST:
        return None
    return str(rel)


def check_corpus_dir(d: str) -> None:
    p = Path(d)
    if not p.exists():
        raise _err(f"--corpus '{d}' does not exist")
    if not p.is_dir():
        raise _err(f"--corpus '{d}' is not a directory")


def corpus_dirs(dirs: list[str], targets: list[str]) -> dict[str, list[Path]]:
    """target -> the --corpus folders that are its inputs (see the module doc)."""
    out = {t: [] for t in targets}
    for d in dirs:
        p = Path(d)
        check_corpus_dir(d)
        per_target = {t: (p / t / "corpus" if (p / t / "corpus").is_dir() else p / t) for t in targets
                      if (p / t).is_dir()}
        if per_target:
            for t, sub in per_target.items():
                out[t].append(sub.absolute())
        elif len(targets) == 1:
            out[targets[0]].append(p.absolute())
        else:
            raise _err(f"--corpus '{d}' holds no <target>/ folder of {', '.join(targets)}; with several targets "
                       "give a `lifeline fuzz --out` folder, or name one target")
    return out


def _files(d: Path) -> list[Path]:
    return sorted(p for p in d.rglob("*") if p.is_file()) if d.is_dir() else []


class Replayer:
    """Runs the coverage binaries over input sets, one process per set, each writing its raw profiles."""

    def __init__(self, lane_dir: Path, profiles: Path):
        self.lane_dir = lane_dir
        self.profiles = profiles
        self.crashed: list[tuple[str, Path]] = []
        self.counter = 0

    def run(self, target: str, label: str, inputs: list[Path], extra_env: dict | None = None) -> int:
        """Replays `inputs` (files) in one process; on a failure, one process per input, so every input that
        does not crash still counts and the ones that do are named. Returns how many inputs ran."""
        if not inputs:
            return 0
        binary = self.lane_dir / "targets" / target
        start = time.monotonic()
        rc = self._replay(binary, target, inputs, extra_env)
        if rc != 0:
            print(f"  {target}: {label}: the replay failed (exit {rc}); replaying its {len(inputs)} inputs one "
                  "by one to name the ones that crash", flush=True)
            self._drop_profiles(target)  # or the inputs that run clean would count twice
            for f in inputs:
                if self._replay(binary, target, [f], extra_env) != 0:
                    self._drop_profiles(target)  # an input that fails is not counted, died or exited
                    self.crashed.append((target, f))
                    print(f"  {target}: {label}: {f} fails on the fixed code; its coverage is not counted",
                          flush=True)
        print(f"  {target}: {label}: {len(inputs)} inputs in {time.monotonic() - start:.1f} s", flush=True)
        return len(inputs)

    def _drop_profiles(self, target: str) -> None:
        """Removes what the last replay wrote: a process that exited (rather than died) wrote its profile."""
        for f in (self.profiles / target).glob(f"run{self.counter}-*.profraw"):
            f.unlink()

    def _replay(self, binary: Path, target: str, inputs: list[Path], extra_env: dict | None) -> int:
        self.counter += 1
        d = self.profiles / target
        d.mkdir(parents=True, exist_ok=True)
        # Every guard on, no switch: the fixed code (an inherited LIFELINE_REINTRODUCE or LIFELINE_UNGUARD would
        # turn the regression inputs into crashes).
        env = switch_env(None, unguard=None, LLVM_PROFILE_FILE=str(d / f"run{self.counter}-%p.profraw"),
                         **(extra_env or {}))
        # The replay driver takes files and folders; the inputs go in chunks that fit a command line.
        rc = 0
        for i in range(0, len(inputs), 2000):
            try:
                r = subprocess.run([str(binary), *map(str, inputs[i:i + 2000])], env=env,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            except OSError as e:
                raise _err(f"cannot run {binary} ({e.strerror})")
            rc = rc or r.returncode
        return rc


def _tool_run(cmd: list[str], what: str, capture: bool = False) -> str:
    r = subprocess.run(cmd, stdout=subprocess.PIPE if capture else subprocess.DEVNULL, stderr=subprocess.PIPE,
                       text=True)
    if r.returncode != 0:
        raise SystemExit(f"lifeline coverage: {what} failed (exit {r.returncode}): {r.stderr.strip()[-500:]}")
    return r.stdout


def _ratio(s: dict) -> dict:
    return {"covered": s.get("covered", 0), "count": s.get("count", 0)}


def objects(binaries: list[Path]) -> list[str]:
    """The binaries as llvm-cov takes several: the first, then `-object` each other."""
    args = [str(binaries[0])]
    for b in binaries[1:]:
        args += ["-object", str(b)]
    return args


def file_summaries(tools: dict, profdata: Path, binary: Path, sources: set) -> dict[str, dict]:
    """file (as under_test names it) -> {lines, functions, branches: {covered, count}}, for the code under test
    in `binary`; adds the paths of those files, as the coverage mapping names them, to `sources`."""
    cmd = [tools["llvm-cov-14"], "export", "-summary-only", f"-instr-profile={profdata}", str(binary)]
    data = json.loads(_tool_run(cmd, "llvm-cov export -summary-only", capture=True))
    out = {}
    for f in data["data"][0]["files"]:
        name = under_test(f["filename"])
        if name is None:
            continue
        sources.add(f["filename"])
        s = f["summary"]
        out[name] = {k: _ratio(s[k]) for k in ("lines", "functions", "branches")}
    return out


def totals(files: dict[str, dict], prefix: str | None = None) -> dict:
    t = {k: {"covered": 0, "count": 0} for k in ("lines", "functions", "branches")}
    for name, s in files.items():
        if prefix is None or name.startswith(prefix):
            for k in t:
                t[k]["covered"] += s[k]["covered"]
                t[k]["count"] += s[k]["count"]
    return t


def groups(files: dict[str, dict]) -> dict[str, dict]:
    """The totals of the project's files (layers/, harness/) and of the upstream ones."""
    return {"project": totals({n: s for n, s in files.items() if not is_upstream(n)}),
            "upstream": totals({n: s for n, s in files.items() if is_upstream(n)})}


def pct(r: dict) -> str:
    return f"{100.0 * r['covered'] / r['count']:.1f}% ({r['covered']}/{r['count']})" if r["count"] else "-"


def summary_table(per_target: dict[str, dict]) -> list[str]:
    lines = ["| target | file | lines | functions | branches |", "|---|---|---|---|---|"]
    for t, files in per_target.items():
        g_of = groups(files)
        for key, group in (("project", "project (layers/, harness/)"),
                           ("upstream", "upstream (every upstream file linked)")):
            g = g_of[key]
            if g["lines"]["count"]:
                lines.append(f"| {t} | **{group}** | {pct(g['lines'])} | {pct(g['functions'])} | {pct(g['branches'])} |")
        for name in sorted(files):
            s = files[name]
            lines.append(f"| {t} | {name} | {pct(s['lines'])} | {pct(s['functions'])} | {pct(s['branches'])} |")
    return lines


def _demangle(tools: dict, names: list[str]) -> dict[str, str]:
    if not names:
        return {}
    r = subprocess.run([tools["llvm-cxxfilt-14"]], input="\n".join(names) + "\n", stdout=subprocess.PIPE,
                       text=True)
    out = r.stdout.splitlines() if r.returncode == 0 else names
    return dict(zip(names, out)) if len(out) == len(names) else {n: n for n in names}


def gaps(tools: dict, profdata: Path, binaries: list[Path]) -> dict[str, dict]:
    """file -> {"unentered": [(line, name, regions)], "partial": [(covered regions, regions, line, name)],
    "branches": [(line, col, "never true"|"never false")]}, for the code under test. A function in several
    binaries (or instantiations) counts as entered when any entered it; regions and branch directions
    likewise merge by their source position."""
    cmd = [tools["llvm-cov-14"], "export", "-skip-expansions", f"-instr-profile={profdata}", *objects(binaries)]
    data = json.loads(_tool_run(cmd, "llvm-cov export", capture=True))
    funcs: dict[tuple[str, str], dict] = {}
    for fn in data["data"][0]["functions"]:
        fname = under_test(fn["filenames"][0]) if fn.get("filenames") else None
        if fname is None:
            continue
        line = fn["regions"][0][0] if fn.get("regions") else 0
        rec = funcs.setdefault((fname, fn["name"]), {"line": line, "count": 0, "regions": {}, "branches": {}})
        rec["count"] += fn["count"]
        for r in fn.get("regions", []):
            # [line, col, end line, end col, count, file id, expanded file id, kind]; kind 0: code
            if r[5] == 0 and r[7] == 0:
                key = tuple(r[:4])
                rec["regions"][key] = rec["regions"].get(key, 0) + r[4]
        for b in fn.get("branches", []):
            # [line, col, end line, end col, true count, false count, file id, expanded file id, kind]
            if b[6] == 0:
                key = (b[0], b[1])
                t, f = rec["branches"].get(key, (0, 0))
                rec["branches"][key] = (t + b[4], f + b[5])
    names = _demangle(tools, sorted({n for _, n in funcs}))
    out: dict[str, dict] = {}
    for (fname, mangled), rec in funcs.items():
        g = out.setdefault(fname, {"unentered": set(), "partial": set(), "branches": set()})
        name = names.get(mangled, mangled)
        if rec["count"] == 0:
            g["unentered"].add((rec["line"], name, len(rec["regions"])))
            continue
        regions = rec["regions"]
        run = sum(1 for c in regions.values() if c > 0)
        if regions and run < len(regions):
            g["partial"].add((run, len(regions), rec["line"], name))
        for (line, col), (t, f) in rec["branches"].items():
            if t == 0 or f == 0:
                g["branches"].add((line, col, "never true" if t == 0 else "never false"))
    return {f: {"unentered": sorted(g["unentered"]),
                "partial": sorted(g["partial"], key=lambda p: (p[0] / p[1], p[2])),
                "branches": sorted(g["branches"])} for f, g in sorted(out.items())}


def gaps_lines(g: dict[str, dict], limit: int | None) -> list[str]:
    """Markdown of gaps(); `limit`: at most this many entries per list (None: all)."""
    def cut(items: list, fmt) -> list[str]:
        shown = items if limit is None else items[:limit]
        rest = [f"  - ... and {len(items) - len(shown)} more (gaps.md)"] if len(shown) < len(items) else []
        return [fmt(i) for i in shown] + rest

    lines = []
    for f, e in g.items():
        if not (e["unentered"] or e["partial"] or e["branches"]):
            continue
        lines.append(f"### {f}")
        if e["unentered"]:
            lines.append(f"- {len(e['unentered'])} functions never entered:")
            lines += cut(e["unentered"], lambda u: f"  - line {u[0]}: `{u[1]}` ({u[2]} regions)")
        if e["partial"]:
            lines.append(f"- {len(e['partial'])} functions entered but not run through (regions run / regions):")
            lines += cut(e["partial"], lambda p: f"  - line {p[2]}: `{p[3]}` {p[0]}/{p[1]}")
        if e["branches"]:
            lines.append(f"- {len(e['branches'])} branch directions never taken in functions that ran:")
            lines += cut(e["branches"], lambda b: f"  - line {b[0]}:{b[1]} {b[2]}")
        lines.append("")
    return lines


def html_report(tools: dict, profdata: Path, binaries: list[Path], sources: list[str], out: Path) -> None:
    cmd = [tools["llvm-cov-14"], "show", "-format=html", f"-output-dir={out}", f"-instr-profile={profdata}",
           "-show-branches=count", "-show-line-counts-or-regions", "-project-title=lifeline",
           f"-Xdemangler={tools['llvm-cxxfilt-14']}", *objects(binaries)]
    _tool_run(cmd + ["--", *sources], "llvm-cov show -format=html")


def _reset(d: Path) -> None:
    """Empties a folder this command writes (profiles/, html/): only those, never --out itself."""
    if d.is_symlink() or d.is_file():
        raise _err(f"{d} is in the way (not a folder this command made); move it or give another --out")
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)


def cmd_coverage(args) -> int:
    if args.states:
        if args.out is not None or args.gaps:
            raise _err("--states prints its table: it takes no --out and no --gaps")
        return cmd_states(args)
    if args.check or args.build_dir:
        raise _err("--check and --build-dir go with --states")
    sets = targets_and_sets(args, INPUT_SETS, INPUT_SETS, _err)
    if not sets and not args.corpus:
        raise _err("--inputs names no input set and no --corpus is given: nothing to replay")
    for d in args.corpus or []:
        check_corpus_dir(d)  # before anything is built
    tools = find_tools()
    out = Path(args.out if args.out is not None else ROOT / "coverage-out").absolute()
    if out.exists() and not out.is_dir():
        raise _err(f"--out '{out}' is not a directory")
    lane_dir = ROOT / "build" / LANE
    if not args.no_build:
        ensure_deps()
        ensure_upstream()
        if not configure_and_build(LANE, targets=args.targets or None):
            return 1
    built = fuzz_targets(lane_dir)
    upstream_dirs_of(lane_dir)
    targets = args.targets or built
    if not targets:
        raise _err(f"no coverage binaries in {lane_dir}; build them first (drop --no-build)")
    for t in targets:
        if t not in built:
            raise _err(f"target '{t}' is not built in {lane_dir} (configure output names what it lacks; "
                       "drop --no-build to build it)")
    extra = corpus_dirs(args.corpus or [], targets)
    try:
        out.mkdir(parents=True, exist_ok=True)
        profiles = out / "profiles"
        _reset(profiles)
    except OSError as e:
        raise _err(f"cannot write {out} ({e.strerror})")

    replayer = Replayer(lane_dir, profiles)
    ran: dict[str, dict[str, int]] = {}
    for t in targets:
        print(f"replaying {t} (coverage lane)", flush=True)
        n = ran.setdefault(t, {})
        if "seeds" in sets:
            n["seeds"] = replayer.run(t, "seeds", _files(ROOT / "corpus" / t))
        if "regression" in sets:
            n["regression"] = replayer.run(t, "regression", _files(regression_dir(t)))
        if "repro" in sets:
            by_env: dict[str, list[Path]] = {}
            for f, env in repro_inputs(t):
                by_env.setdefault(json.dumps(env, sort_keys=True), []).append(f)
            n["repro"] = sum(replayer.run(t, "reproducers", fs, json.loads(e)) for e, fs in sorted(by_env.items()))
        for d in extra[t]:
            n[str(d)] = replayer.run(t, f"--corpus {d}", _files(d))
        if not any(n.values()):
            raise _err(f"{t}: no input to replay in the sets asked for ({', '.join(sets) or 'none'}"
                       f"{', --corpus' if extra[t] else ''})")

    per_target: dict[str, dict] = {}
    sources: set = set()  # the code under test's files, as the coverage mapping names them: the HTML report's
    binaries = []
    target_profiles = []
    for t in targets:
        raws = sorted((profiles / t).glob("*.profraw"))
        if not raws:
            raise SystemExit(f"lifeline coverage: {t} wrote no profile (did every replay crash?)")
        pd = profiles / f"{t}.profdata"
        _tool_run([tools["llvm-profdata-14"], "merge", "-sparse", "-o", str(pd), *map(str, raws)],
                  f"llvm-profdata merge ({t})")
        binary = lane_dir / "targets" / t
        per_target[t] = file_summaries(tools, pd, binary, sources)
        binaries.append(binary)
        target_profiles.append(pd)
    merged = out / "coverage.profdata"
    _tool_run([tools["llvm-profdata-14"], "merge", "-sparse", "-o", str(merged), *map(str, target_profiles)],
              "llvm-profdata merge (all targets)")

    html = out / "html"
    _reset(html)
    html_report(tools, merged, binaries, sorted(sources), html)

    table = summary_table(per_target)
    (out / "summary.md").write_text("\n".join(["# Coverage of the code under test", "",
                                               "Inputs replayed: " + "; ".join(f"{t}: " + ", ".join(f"{k} {v}" for k, v in n.items()) for t, n in ran.items()),
                                               ""] + table) + "\n")
    summary = {"targets": {t: {"inputs": ran[t], "files": per_target[t], **groups(per_target[t])} for t in targets},
               "crashed": [{"target": t, "input": str(f)} for t, f in replayer.crashed]}
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    print("\n".join(table))
    if not args.gaps and (out / "gaps.md").is_file():
        (out / "gaps.md").unlink()  # an earlier run's, which this run did not measure
    if args.gaps:
        g = gaps(tools, merged, binaries)
        (out / "gaps.md").write_text("\n".join(["# Coverage gaps of the code under test", ""] + gaps_lines(g, None)) + "\n")
        print("\n" + "\n".join(gaps_lines(g, 15)))
    print(f"\nreport: {html / 'index.html'}\nsummary: {out / 'summary.md'}, {out / 'summary.json'}"
          + (f"\ngaps: {out / 'gaps.md'}" if args.gaps else ""))
    if replayer.crashed:
        print(f"lifeline coverage: {len(replayer.crashed)} input(s) failed on the fixed code and are not counted; "
              "`lifeline triage` tells what they are:")
        for t, f in replayer.crashed:
            print(f"  {t}: {f}")
        return 1
    return 0
