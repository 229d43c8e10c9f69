"""`lifeline matrix`: the upstream targets and the findings on real ggml versions, not only the pinned one.

For each version of scripts/ggml-versions.txt asked for (or a checkout given with --source), fetched as
scripts/fetch-ggml-version.sh pins it: the asan preset configured in build/matrix/<name>/ against that tree, the
ggml targets built there (what cannot build is recorded with why, never a stop), the seed and regression corpora
replayed with every guard on (a crash is sorted as a known finding, by its signature, or as new), and every
finding in upstream ggml run with its guard off: its own reproducers, or, for one fixed before the pinned version,
its upstream variant's inputs on the version as it is. The table it prints and writes is finding x version:
reproduces there, does not, or cannot run there (the target does not build; the finding is about a function the
tree lacks). `--check FILE` compares the findings' results and the corpora's crashes with a committed matrix
(bench/results/matrix/): the suite's test of the matrix.

`--llama` adds llama.cpp's runtime: llama_memory_differential built in the fuzz lane (the only lanes that build
llama.cpp's src/ are fuzz, tsan and coverage) in build/llama-matrix/<name> against the llama.cpp checkout that holds
the version's ggml, its seeds replayed, and the findings on it (their "fuzz" signatures) run as the ggml ones are.
What the tree's llama.h lacks is found by the configure (cmake/LifelineLlama.cmake) and recorded as the target's
skip reason. Each version's llama.cpp build takes minutes, so it is only done when asked; `--llama-only` leaves
the ggml targets out.

    lifeline matrix [--versions NAME,...] [--source DIR]... [--vulkan] [--llama | --llama-only] [--out DIR]
                    [--check FILE]
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from . import crash as crashmod
from . import repro
from . import triage as triagemod
from .bugs import switch_env
from .build import resolve_ggml_source, upstream_ggml
from .paths import ROOT, skipped_targets
from .usage import UsageError

VERSIONS_FILE = ROOT / "scripts" / "ggml-versions.txt"
FETCH = ROOT / "scripts" / "fetch-ggml-version.sh"
CPU_TARGET, VULKAN_TARGET = "ggml_graph_topology", "ggml_vulkan_graph_topology"
LLAMA_TARGET = "llama_memory_differential"
# target -> (the preset it builds with, the folder under build/ that holds a build per version)
LANES = {CPU_TARGET: ("asan", "matrix"), VULKAN_TARGET: ("asan", "matrix"), LLAMA_TARGET: ("fuzz", "llama-matrix")}
# what to ask for to have the target: the not-run reason of a finding on one not asked for
ASK = {VULKAN_TARGET: "--vulkan", LLAMA_TARGET: "--llama"}
RUN_TIMEOUT_S = 300
CHUNK = 200  # inputs per replay process (a crash ends the process; the rest go on in the next)


@dataclass
class Version:
    name: str
    kind: str
    package: str
    date: str
    ggml: str
    release: str
    tree: Optional[Path] = None  # given (--source) or fetched


def load_versions(path: Path = VERSIONS_FILE) -> list[Version]:
    """The rows of scripts/ggml-versions.txt; ValueError naming the line that does not have its eight columns."""
    out = []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        cols = line.split()
        if len(cols) != 8:
            raise ValueError(f"{path}:{n}: {len(cols)} columns, expected 8 (name kind package integrity head date "
                             "ggml release)")
        name, kind, package, _, _, date, ggml, release = cols
        out.append(Version(name, kind, package, date, ggml, release))
    return out


def _run(cmd: list, log, env=None, timeout: Optional[float] = None, cwd: Path = ROOT) -> tuple[int, str]:
    log.write("+ " + " ".join(str(c) for c in cmd) + "\n")
    log.flush()
    try:
        proc = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, errors="replace", timeout=timeout)
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode("utf-8", "replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        log.write(out + "\n[timed out]\n")
        return -1, out + "\n[timed out]\n"
    log.write(proc.stdout)
    return proc.returncode, proc.stdout


def fetch(v: Version, log) -> str:
    """Fetches the version (scripts/fetch-ggml-version.sh) and sets v.tree; "" or why it could not."""
    rc, out = _run([FETCH, v.name], log)
    if rc != 0:
        return f"fetching it failed: {out.strip().splitlines()[-1] if out.strip() else rc}"
    rc, out = _run([FETCH, "--print", v.name], log)
    if rc != 0 or not out.strip():
        return "fetched, but scripts/fetch-ggml-version.sh --print names no tree"
    v.tree = Path(out.strip().splitlines()[-1])
    return ""


def build_plan(name: str, targets: list) -> dict:
    """{(preset, build folder): [targets]}: the targets of `targets` grouped by the lane each builds in (LANES), in
    the order asked, one folder per lane and version."""
    plan: dict = {}
    for t in targets:
        preset, folder = LANES[t]
        plan.setdefault((preset, ROOT / "build" / folder / name), []).append(t)
    return plan


def _first_error(out: str) -> str:
    errors = [line.strip() for line in out.splitlines() if "error:" in line]
    return errors[0] if errors else "see the log"


def build(v: Version, targets: list, log) -> tuple[dict, dict, dict]:
    """Configures a folder per lane (build_plan: the asan preset in build/matrix/<name>, the fuzz preset in
    build/llama-matrix/<name>) against this version's tree and builds `targets` there, one at a time, so that one
    that does not build leaves the others: ({target: its build folder}, {target: "built" or why not},
    {target: seconds its configure and build took})."""
    folders, status, seconds = {}, {}, {}
    for (preset, d), ts in build_plan(v.name, targets).items():
        t0 = time.monotonic()
        for t in ts:
            folders[t] = d
        rc, out = _run(["cmake", "--preset", preset, "-B", d, f"-DLIFELINE_GGML_SOURCE_DIR={v.tree}"], log)
        if rc != 0:
            errors = [line for line in out.splitlines() if "Error" in line or "error" in line]
            why = f"configuring failed: {(errors or out.strip().splitlines() or ['?'])[0].strip()}"
            status.update({t: why for t in ts})
            continue
        skipped = skipped_targets(d)
        for t in ts:
            t1 = time.monotonic()
            if t in skipped:
                status[t] = f"skipped: {skipped[t]}"
                continue
            rc, out = _run(["cmake", "--build", d, "--target", t, "-j", str(os.cpu_count() or 2), "--", "-k", "0"],
                           log)
            status[t] = "built" if rc == 0 else f"does not compile: {_first_error(out)}"
            seconds[t] = round(time.monotonic() - (t0 if t == ts[0] else t1))
    return folders, status, seconds


def replay_corpus(binary: Path, target: str, known: list, log) -> dict:
    """The seed and regression corpora of `target` on `binary`, every guard on: {"inputs": N, "crashes": [{"input",
    "signature", "known"}]} (known: the finding it matches, or null); a crash ends its process, and the inputs after
    it run in the next."""
    inputs = []
    for d in (ROOT / "corpus" / target, ROOT / "corpus" / "regression" / target):
        if d.is_dir():
            inputs += sorted(p for p in d.iterdir() if p.is_file())
    crashes = []
    env = switch_env(None, unguard=None)
    i = 0
    while i < len(inputs):
        chunk = inputs[i:i + CHUNK]
        rc, out = _run([binary, *chunk], log, env=env, timeout=RUN_TIMEOUT_S)
        if rc == 0:
            i += len(chunk)
            continue
        # The replay driver's "replay: running <file> (<n> bytes)", or libFuzzer's "Running: <file>" (a fuzz lane's
        # binary given files runs each once).
        ran = [a or b for a, b in re.findall(r"^(?:replay: running (.+) \(\d+ bytes\)|Running: (.+))$", out, re.M)]
        last = Path(ran[-1]) if ran else chunk[0]
        c = crashmod.parse(out)
        bug, _ = triagemod.match_known(c, known) if c else (None, None)
        crashes.append({"input": str(last.relative_to(ROOT)) if last.is_relative_to(ROOT) else str(last),
                        "signature": c.signature if c else f"(exit {rc} without a parsable report)", "known": bug})
        i += chunk.index(last) + 1 if last in chunk else len(chunk)
    return {"inputs": len(inputs), "crashes": crashes}


def _missing_function(bug: repro.Bug, missing: list) -> Optional[str]:
    """The function this tree lacks that the finding is about (its title names it), if any."""
    title = json.loads((bug.path / "bug.json").read_text()).get("title", "")
    return next((f for f in missing if re.search(rf"\b{re.escape(f)}\b", title)), None)


def run_finding(bug: repro.Bug, binaries: dict, status: dict, missing: list, log) -> dict:
    """One finding on one version: {"result": "reproduces" | "partly" | "no" | "other" | "cannot" | "not-run", "why",
    "inputs": {input: what it gave}}. Its own reproducers when it has them, else its upstream variant's inputs (a finding
    fixed before the pinned version: does this version have it?), each with the finding's guard off."""
    if bug.reproducers:
        target, reps = bug.target, bug.reproducers
    elif bug.variant is not None:
        target, reps = bug.variant.target, bug.variant.reproducers
    else:
        return {"result": "cannot", "why": "no reproducer"}
    if target not in status:  # not asked for (--vulkan, --llama): nothing to say of this version
        return {"result": "not-run", "why": f"{target} was not asked for ({ASK.get(target, 'the matrix')} builds it)"}
    if status[target] != "built":
        return {"result": "cannot", "why": f"{target}: {status[target]}"}
    fn = _missing_function(bug, missing)
    if fn:
        return {"result": "cannot", "why": f"this ggml has no {fn}"}
    got = {}
    for rep in reps:
        expect = rep.expect.get("asan") or rep.expect.get("fuzz")
        if expect is None:
            continue
        env = switch_env(None, unguard=bug.guard or None, **rep.env)
        rc, out = _run([binaries[target], rep.input], log, env=env, timeout=RUN_TIMEOUT_S)
        found = crashmod.parse(out) if rc != 0 else None
        if found is not None and crashmod.matches(found, expect)[0]:
            got[rep.input.name] = "reproduces"
        elif found is None and rc == 0:
            got[rep.input.name] = "clean"
        else:
            got[rep.input.name] = f"other: {found.signature if found else f'exit {rc} without a parsable report'}"
    if not got:
        return {"result": "cannot", "why": "no reproducer with an asan signature"}
    yes = sum(1 for g in got.values() if g == "reproduces")
    clean = sum(1 for g in got.values() if g == "clean")
    result = ("reproduces" if yes == len(got) else "partly" if yes else "no" if clean == len(got) else "other")
    return {"result": result, "inputs": got}


def findings(root: Path = ROOT, targets: tuple = (CPU_TARGET, VULKAN_TARGET)) -> list[repro.Bug]:
    """The findings in upstream code: upstream statuses, on one of `targets` (own reproducers or a variant's): the ggml
    targets by default, llama_memory_differential's with --llama."""
    out = []
    for bug in repro.loadable(root / "repro"):
        if bug.status not in repro.UPSTREAM_STATUSES:
            continue
        target = bug.target if bug.reproducers else (bug.variant.target if bug.variant else None)
        if target in targets:
            out.append(bug)
    return out


def run_version(v: Version, targets: list, bugs: list, log) -> dict:
    row = {"name": v.name, "date": v.date, "ggml": v.ggml, "release": v.release, "package": v.package}
    t0 = time.monotonic()
    if v.tree is None:
        why = fetch(v, log)
        if why:
            row.update(tree=None, targets={t: why for t in targets}, findings={
                b.id: {"result": "cannot", "why": why} for b in bugs})
            return row
    row["tree"] = str(v.tree)
    folders, status, seconds = build(v, targets, log)
    row["targets"] = status
    row["build_seconds"] = seconds
    info = upstream_ggml(folders[targets[0]]) or {}
    row["missing"] = info.get("missing", [])
    if info.get("version"):
        row["ggml"] = info["version"]
    binaries = {t: folders[t] / "targets" / t for t in targets}
    row["corpus"] = {}
    for t in targets:
        if status[t] == "built":
            known = triagemod.known_signatures(ROOT, t, LANES[t][0], other_source=True)
            row["corpus"][t] = replay_corpus(binaries[t], t, known, log)
    row["findings"] = {b.id: run_finding(b, binaries, status, row["missing"], log) for b in bugs}
    row["seconds"] = round(time.monotonic() - t0)
    return row


_MARK = {"reproduces": "reproduces", "partly": "partly", "no": "no", "other": "other crash", "cannot": "cannot run",
         "not-run": "not run"}


def _short(why: str) -> str:
    """A table cell's few words for why a finding cannot run (the whole reason is under the table)."""
    m = re.match(r"this ggml has no (\w+)", why)
    if m:
        return f"no `{m.group(1)}`"
    m = re.match(r"(ggml_\w+_topology|llama_\w+): ", why)
    return f"`{m.group(1)}` not built" if m else why


def markdown(rows: list, bugs: list) -> str:
    """finding x version, then each version's targets and corpus replay."""
    heads = [f"{r['name']} (ggml {r['ggml']}, {r['date']})" for r in rows]
    md = ["| finding | " + " | ".join(heads) + " |", "|---|" + "---|" * len(rows)]
    for b in bugs:
        cells = []
        for r in rows:
            f = r["findings"].get(b.id, {"result": "cannot", "why": "not run"})
            cells.append(_MARK[f["result"]] + (f": {_short(f.get('why', ''))}" if f["result"] == "cannot" else ""))
        md.append(f"| `{b.id}` | " + " | ".join(cells) + " |")
    md.append("")
    for r in rows:
        md.append(f"- **{r['name']}** ({r['package']}, upstream {r['release']}, ggml {r['ggml']}, {r['date']}): "
                  + "; ".join(f"`{t}` {s}" + (f" ({r['build_seconds'][t]} s)" if t in (r.get("build_seconds") or {})
                                                       else "") for t, s in r["targets"].items())
                  + (f"; this tree lacks {', '.join(r['missing'])}" if r.get("missing") else ""))
        for t, c in (r.get("corpus") or {}).items():
            known = sorted({x["known"] for x in c["crashes"] if x["known"]})
            new = [x for x in c["crashes"] if not x["known"]]
            md.append(f"  - `{t}` corpus: {c['inputs']} inputs, {len(c['crashes'])} crashed"
                      + (f" (known: {', '.join(known)})" if known else "")
                      + (f"; new: " + "; ".join(f"{x['input']}: {x['signature']}" for x in new) if new else ""))
    return "\n".join(md) + "\n"


def compare(rows: list, expected: dict) -> list[str]:
    """What differs from a committed matrix, for the versions run: each finding's result, and any corpus crash that
    is no known finding. [] when nothing does."""
    problems = []
    want = {r["name"]: r for r in expected.get("versions", [])}
    for r in rows:
        w = want.get(r["name"])
        if w is None:
            problems.append(f"{r['name']}: not in the committed matrix")
            continue
        for bug_id, got in r["findings"].items():
            if got["result"] == "not-run":
                continue
            exp = (w.get("findings") or {}).get(bug_id)
            if exp is None:
                problems.append(f"{r['name']}: {bug_id} gave '{got['result']}', and the committed matrix has no "
                                "result for it")
            elif exp["result"] != got["result"]:
                problems.append(f"{r['name']}: {bug_id} gave '{got['result']}'"
                                + (f" ({got.get('why') or got.get('inputs')})") + f", the committed matrix says "
                                f"'{exp['result']}'")
        for t, c in (r.get("corpus") or {}).items():
            for x in c["crashes"]:
                if not x["known"]:
                    problems.append(f"{r['name']}: {t} {x['input']} crashed with {x['signature']}, no known finding")
    return problems


COMMITTED = ROOT / "bench" / "results" / "matrix" / "matrix.json"


def versions_line(bug_id: str, path: Path = COMMITTED) -> Optional[str]:
    """The versions a finding reproduces on, does not, and cannot run on, from the committed matrix, as one
    sentence for its report.md (`lifeline export`); None when the matrix has no result for it."""
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    groups = {"reproduces": [], "partly": [], "no": [], "other": [], "cannot": []}
    for r in doc.get("versions", []):
        f = (r.get("findings") or {}).get(bug_id)
        if f and f.get("result") in groups:
            groups[f["result"]].append(f"{r['release']} (ggml {r['ggml']}, {r['date']})")
    if not any(groups.values()):
        return None
    words = {"reproduces": "reproduces on", "partly": "reproduces in part on", "no": "does not reproduce on",
             "other": "crashes otherwise on", "cannot": "cannot run on"}
    parts = [f"{words[k]} {', '.join(v)}" for k, v in groups.items() if v]
    return f"`lifeline matrix` ({doc.get('date', '?')}, {path.relative_to(ROOT)}): " + "; ".join(parts)


def asked_targets(vulkan: bool, llama: bool, llama_only: bool) -> list:
    """The targets to build per version: the CPU ggml target, ggml-vulkan's with --vulkan, llama.cpp's runtime with
    --llama; --llama-only: that one alone."""
    if llama_only:
        return [LLAMA_TARGET]
    return [CPU_TARGET] + ([VULKAN_TARGET] if vulkan else []) + ([LLAMA_TARGET] if llama else [])


def cmd_matrix(args) -> int:
    try:
        versions = load_versions()
    except (OSError, ValueError) as e:
        raise UsageError(f"lifeline matrix: {e}")
    by_name = {v.name: v for v in versions}
    chosen = []
    if args.versions:
        for name in args.versions.split(","):
            if name not in by_name:
                raise UsageError(f"lifeline matrix: unknown version '{name}' (known: {', '.join(by_name)})")
            chosen.append(by_name[name])
    for i, s in enumerate(args.source or []):
        tree = resolve_ggml_source(s, "--source")
        if tree is None:
            raise UsageError(f"lifeline matrix: --source '{s}' is the pinned tree; ask for it with --versions "
                             f"{versions[-1].name}")
        chosen.append(Version(f"source-{i + 1}", "source", f"checkout {tree}", "-", "?", "-", tree))
    if not chosen:
        chosen = versions
    expected = None
    if args.check:
        try:
            expected = json.loads(Path(args.check).read_text())
        except (OSError, ValueError) as e:
            raise UsageError(f"lifeline matrix: --check '{args.check}' is not a matrix of `lifeline matrix` ({e})")
    out = Path(args.out or ROOT / "matrix-out").resolve()
    out.mkdir(parents=True, exist_ok=True)
    targets = asked_targets(args.vulkan, getattr(args, "llama", False), getattr(args, "llama_only", False))
    bugs = findings(targets=(() if targets == [LLAMA_TARGET] else (CPU_TARGET, VULKAN_TARGET))
                    + ((LLAMA_TARGET,) if LLAMA_TARGET in targets else ()))
    rows = []
    with open(out / "matrix.log", "w") as log:
        for v in chosen:
            print(f"matrix: {v.name} ({v.package}, ggml {v.ggml}, {v.date}) ...", flush=True)
            row = run_version(v, targets, bugs, log)
            rows.append(row)
            print(f"  {'; '.join(f'{t} {s}' for t, s in row['targets'].items())}"
                  + (f" ({row.get('seconds')} s)" if row.get("seconds") is not None else ""), flush=True)
    doc = {"date": time.strftime("%Y-%m-%d"), "targets": targets, "versions": rows,
           "findings": [b.id for b in bugs]}
    (out / "matrix.json").write_text(json.dumps(doc, indent=2) + "\n")
    text = markdown(rows, bugs)
    (out / "matrix.md").write_text(text)
    print("\n" + text + f"matrix: {out / 'matrix.json'}, {out / 'matrix.md'}, log {out / 'matrix.log'}")
    if expected is not None:
        unfetched = [r for r in rows if r.get("tree") is None]
        if unfetched:
            # No network, no npm: what the check compares cannot be had here; that is no result, and says so.
            print("SKIPPED: " + "; ".join(f"{r['name']}: {next(iter(r['targets'].values()))}" for r in unfetched))
            return 77
        problems = compare(rows, expected)
        if problems:
            print(f"lifeline matrix: {len(problems)} difference(s) from {args.check}:")
            for p in problems:
                print(f"  {p}")
            return 1
        print(f"lifeline matrix: as {args.check} says, for {', '.join(r['name'] for r in rows)}")
    return 0
