#!/usr/bin/python3
"""Time-to-exposure: how fast the fuzz target finds a documented bug from the seed corpus alone.

  bench/tte.py [BUG_ID...] [--trials 10] [--budget 60]   every bug in repro/ by default
  bench/tte.py BUG_ID --fixed --trials 1 --budget 600     the same job on the fixed code: expect no crash
  bench/tte.py BUG_ID --upstream                          the bug's upstream variant (repro upstream_variant;
                                                          implied for an upstream-fixed bug, which has no other)
  bench/tte.py UPSTREAM_OPEN_ID                           an upstream-open finding, on the pinned upstream (also
                                                          an upstream-reported one, and an upstream-fixed one
                                                          the pin predates: a guard and no upstream_variant)
  bench/tte.py BUG_ID --seeds DIR                         from other seeds than corpus/<target>/
  bench/tte.py BUG_ID... --name NAME                      the table of several bugs as NAME.md (default tte)
  bench/tte.py BUG_ID --flag=-use_value_profile=1         libFuzzer flags after the target's own settings
  bench/tte.py BUG_ID --lane tsan                         fuzzed under TSan (the tsan lane's libFuzzer build),
                                                          found when a tsan expectation of its bug.json matches

Each trial runs the bug's fuzz target (fuzz lane, libFuzzer + ASan) with LIFELINE_REINTRODUCE=BUG_ID and
its own -seed, from a fresh scratch corpus plus the read-only seeds in corpus/<target>/, bounded by the
budget, with the target's own libFuzzer settings (targets/<target>.options) as `lifeline fuzz` runs it. A trial counts as found when the first crash's signature matches one the bug's bug.json expects
for the asan or fuzz lane (the tsan lane with --lane tsan). A trial that stops on any other crash is censored at that moment (the bug was
not seen before it), one that runs out of budget is censored at the budget.

Per bug: found/N, the median time of the trials that found it, the restricted mean survival time (RMST:
the area under the Kaplan-Meier survival curve up to the budget — the expected time to exposure with
unfound trials counted at the budget), a Kaplan-Meier plot (bench/results/tte-<bug>.png) and
bench/results/tte-<bug>-<mode>.json (with the run's date, machine and commit; bench/dashboard.py shows the newest
per bug and mode); for several bugs also bench/results/tte.md and tte-survival.png (all curves). A benchmark, not
a test: nothing here passes or fails.

Upstream code has no switches. --upstream fuzzes the bug forward-ported into upstream by a patch (the patched
build of the upstream variant) with every guard on (core/guards.h): the upstream-open findings the harness
knows are stepped around, so any other crash is one. An upstream-open finding is fuzzed on the pinned upstream
with only its own guard off (LIFELINE_UNGUARD=<its guard>), every other guard on. Both run in-process like
every other trial. The default list leaves upstream-open bugs out.
"""
import argparse
import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Optional
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "cli"))
from lifeline import crash as crashmod  # noqa: E402
from lifeline import repro  # noqa: E402
from lifeline.bugs import switch_env  # noqa: E402
from lifeline.fuzz import executed_units  # noqa: E402
from lifeline.options import libfuzzer_flags  # noqa: E402
from lifeline.shellsafe import SafeLinks  # noqa: E402
from lifeline.triage import expectation_lanes  # noqa: E402
from lifeline.usage import UsageError  # noqa: E402
import provenance  # noqa: E402  (bench/, this script's folder)


def kaplan_meier(rows: list, budget: float) -> list:
    """[(t, S(t))] steps of the survival curve: events are 'found' trials; others are censored."""
    times = sorted({r["seconds"] for r in rows if r["result"] == "found"})
    at_risk = lambda t: sum(1 for r in rows if min(r["seconds"], budget) >= t)
    s, curve = 1.0, [(0.0, 1.0)]
    for t in times:
        d = sum(1 for r in rows if r["result"] == "found" and r["seconds"] == t)
        n = at_risk(t)
        if n:
            s *= 1 - d / n
        curve.append((t, s))
    return curve


def rmst(curve: list, budget: float) -> float:
    area = 0.0
    for (t0, s0), (t1, _) in zip(curve, curve[1:] + [(budget, None)]):
        area += s0 * (min(t1, budget) - min(t0, budget))
    return area


def plot(curves: dict, budget: float, path: Path, title: str) -> bool:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("tte: no matplotlib (python3-matplotlib); skipping the plot", file=sys.stderr)
        return False
    fig, ax = plt.subplots(figsize=(7, 4))
    for name, curve in curves.items():
        xs = [t for t, _ in curve] + [budget]
        ys = [v for _, v in curve] + [curve[-1][1]]
        ax.step(xs, ys, where="post", label=name)
    ax.set_xscale("symlog", linthresh=1.0)
    ax.set_xlim(0, budget)
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("seconds of fuzzing (symlog)")
    ax.set_ylabel("trials not yet exposed")
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("bugs", nargs="*", help="bug ids (default: every repro/<id>/)")
    ap.add_argument("--trials", type=int, default=10)
    ap.add_argument("--budget", type=int, default=60, help="seconds per trial")
    ap.add_argument("--fixed", action="store_true", help="run on the fixed code (no LIFELINE_REINTRODUCE)")
    ap.add_argument("--lane", choices=("fuzz", "tsan"), default="fuzz",
                    help="whose libFuzzer build fuzzes: fuzz (ASan+UBSan, default) or tsan")
    ap.add_argument("--build", help="the lane's build folder (default build/<lane>)")
    ap.add_argument("--seeds", help="seed directory (default: corpus/<target>)")
    ap.add_argument("--upstream", action="store_true",
                    help="fuzz the bug's upstream variant (the target built against the patched upstream)")
    ap.add_argument("--name", default="tte", help="file name of the several-bug table and plot (default tte)")
    ap.add_argument("--flag", dest="flags", action="append", default=[], metavar="-FLAG=V",
                    help="a libFuzzer flag after the target's own settings (targets/<t>.options); repeatable")
    args = ap.parse_args()
    if args.build is None:
        args.build = str(ROOT / "build" / args.lane)
    if not args.name or not all(c.isalnum() or c in "-_." for c in args.name) or args.name.startswith("."):
        print(f"tte: --name {args.name!r} must be a plain file name (letters, digits, - _ .)", file=sys.stderr)
        return 2
    if args.trials < 1 or args.budget < 1:
        print("tte: --trials and --budget must be positive", file=sys.stderr)
        return 2
    bad = [f for f in args.flags if not f.startswith("-") or "=" not in f]
    if bad:
        print(f"tte: --flag {bad[0]!r} is not a libFuzzer flag (-name=value; write --flag=-name=value)",
              file=sys.stderr)
        return 2
    bugs = args.bugs or sorted(d.name for d in (ROOT / "repro").iterdir() if (d / "bug.json").is_file()
                               and _status(d) != "upstream-open")
    summaries = []
    for bug_id in bugs:
        if not (ROOT / "repro" / bug_id).is_dir():
            print(f"tte: no repro/{bug_id}/ (known: {', '.join(sorted(d.name for d in (ROOT / 'repro').iterdir()))})",
                  file=sys.stderr)
            return 2
    for n, bug_id in enumerate(bugs):
        print(f"\n== [{n + 1}/{len(bugs)}] {bug_id}", flush=True)
        try:
            summary = run_bug(args, bug_id)
        except UsageError as e:
            print(str(e), file=sys.stderr)
            return 2
        if summary is None:
            return 2
        summaries.append(summary)
    out_dir = ROOT / "bench" / "results"
    if len(summaries) > 1:
        lines = [f"# Time-to-exposure ({args.trials} trials, budget {args.budget} s per trial)", "",
                 "Command: `bench/tte.py " + " ".join(sys.argv[1:]) + "`", "",
                 "| bug | target | mode | found | median s | RMST s | other crashes |", "|---|---|---|---|---|---|---|"]
        for sm in summaries:
            lines.append(f"| `{sm['bug']}` | {sm['target']} | {sm['mode']} | {sm['found']}/{sm['trials']} | "
                         f"{sm['median_s'] if sm['median_s'] is not None else '-'} | {sm['rmst_s']} | {sm['other_crashes']} |")
        plotted = plot({sm["bug"]: sm["km"] for sm in summaries}, args.budget, out_dir / f"{args.name}-survival.png",
                       f"time to exposure, {args.trials} trials per bug")
        shown = len(lines)
        # The plot's link only where it was drawn (plot() skips it without matplotlib).
        lines += ["", f"![Kaplan-Meier survival curves]({args.name}-survival.png)", ""] if plotted else [""]
        (out_dir / f"{args.name}.md").write_text("\n".join(lines))
        print("\n" + "\n".join(lines[4:shown]))
        print(f"\nwrote {out_dir / (args.name + '.md')}" +
              (f" and {out_dir / (args.name + '-survival.png')}" if plotted else ""))
    return 0


def _status(d: Path) -> str:
    try:
        return repro.load(d).status
    except repro.BugJsonError:
        return "fixed"  # run_bug reports the problem


def run_trial(binary: Path, target: str, seeds: Path, env: dict, budget: int, trial: int, expected: list,
              flags: list, label: str, variant_expected: Optional[list] = None):
    """One trial (-seed=trial+1) from a fresh scratch corpus plus `seeds`: its row, or None when it ran nothing.
    `flags` (libFuzzer's, ahead of the trial's own) are the target's settings unless the caller compares others."""
    seed = trial + 1
    work = Path(tempfile.mkdtemp(prefix=f"tte-{label}-"))
    (work / "corpus").mkdir()
    # Plain names for every path libFuzzer gets (lifeline/shellsafe.py), as `lifeline fuzz` gives them.
    with SafeLinks() as links:
        w = links.path(work, "work")
        cmd = [links.path(binary, target), *flags, f"-seed={seed}", f"-max_total_time={budget}",
               "-print_final_stats=1", f"-artifact_prefix={w}/", f"{w}/corpus", links.path(seeds, "seeds")]
        dict_file = ROOT / "corpus" / f"{target}.dict"
        if dict_file.is_file():
            cmd.insert(1, f"-dict={links.path(dict_file, 'dict')}")
        # libFuzzer looks at -max_total_time between inputs: one input may run its whole -timeout past the budget.
        per_input = max([int(f.split("=", 1)[1]) for f in flags if re.fullmatch(r"-timeout=\d+", f)] or [0])
        t0 = time.monotonic()
        try:
            proc = subprocess.run(cmd, env=links.env(env), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  timeout=budget + per_input + 120)
            returncode, raw = proc.returncode, proc.stdout
        except subprocess.TimeoutExpired as e:
            # Past every limit the target sets itself: censored where it was stopped (the run's output kept).
            print(f"tte: {label}: trial {trial} ran past {budget + per_input + 120} s and was stopped",
                  file=sys.stderr, flush=True)
            returncode, raw = 0, e.stdout or b""
    elapsed = time.monotonic() - t0
    out = raw.decode("utf-8", "replace")
    execs = executed_units(out)
    if execs == 0:
        # A trial that ran nothing is no survival time: it would count as censored at the budget.
        last = ([line for line in out.splitlines() if "error" in line.lower()] or out.splitlines() or [""])[-1]
        print(f"tte: {label}: trial {trial} ran no inputs (exit status {returncode}): {last.strip()}",
              file=sys.stderr)
        shutil.rmtree(work, ignore_errors=True)
        return None
    found = crashmod.parse(out)
    if found is None:
        result = "censored" if returncode == 0 else "no-report"
    else:
        result = "found" if any(crashmod.matches(found, e)[0] for e in expected) else "other"
    row = {"trial": trial, "seed": seed, "result": result, "seconds": round(elapsed, 2), "execs": execs,
           "signature": found.signature if found else None, "flags": flags}
    if variant_expected is not None and result == "found":
        row["via_variant"] = any(crashmod.matches(found, e)[0] for e in variant_expected)
    print(f"{trial:>5} {seed:>5} {result:<10} {elapsed:>8.1f} {execs:>9}  {found.signature if found else ''}",
          flush=True)
    if result in ("other", "no-report"):
        # An unexpected crash is a finding: keep its input where the summary says.
        keep = ROOT / "bench" / "results" / "artifacts" / f"tte-{label}-seed{seed}"
        keep.mkdir(parents=True, exist_ok=True)
        for kind in ("crash", "timeout", "oom", "leak", "slow-unit"):  # libFuzzer's artifact prefixes
            for a in work.glob(f"{kind}-*"):
                shutil.copy2(a, keep / a.name)
        (keep / "output.txt").write_text(out)
        row["kept"] = str(keep)
        print(f"      kept the input and the report in {keep}", flush=True)
    shutil.rmtree(work, ignore_errors=True)
    return row


def run_bug(args, bug_id: str):
    try:
        bug = repro.load(ROOT / "repro" / bug_id)
    except repro.BugJsonError as e:
        print(f"tte: {e}", file=sys.stderr)
        return None
    target, reproducers = bug.target, bug.reproducers
    binary = Path(args.build) / "targets" / bug.target
    # A finding the pinned upstream still has, stepped around by its guard, is fuzzed there with the guard off:
    # upstream-open and upstream-reported ones, and an upstream-fixed one without a variant (fixed after the pin).
    pinned = not args.upstream and bug.guard is not None and (
        bug.status in ("upstream-open", "upstream-reported")
        or (bug.status == "upstream-fixed" and bug.variant is None))
    upstream = args.upstream or (bug.status == "upstream-fixed" and not pinned)  # no stand-in: its variant is all

    if upstream:
        if bug.variant is None:
            print(f"tte: {bug.id} has no upstream_variant in its bug.json", file=sys.stderr)
            return None
        target, reproducers = bug.variant.target, bug.variant.reproducers
        # A patched build of its own, or (no patch) the bug's switch on the variant's target as it is.
        binary = Path(args.build) / ("upstream-variants/" + bug.id if bug.variant.patch else "targets") / target
    if not binary.is_file():
        print(f"tte: {binary} is not built; run `cmake --preset {args.lane} && cmake --build --preset {args.lane}`",
              file=sys.stderr)
        return None
    # A variant without a patch is the bug's own switch on another target, which reaches this layer's own
    # paths too: a trial that exposes the bug there has found the same bug. The summary says how many trials
    # found it through the variant's own signatures ("via_variant").
    counted = reproducers
    if upstream and bug.variant.patch is None:
        counted = list(bug.reproducers) + list(reproducers)
    variant_expected = [r.expect[l] for r in reproducers for l in expectation_lanes(args.lane) if l in r.expect]
    expected = [r.expect[l] for r in counted for l in expectation_lanes(args.lane) if l in r.expect]
    if not expected:
        print(f"tte: no reproducer of {bug.id} expects a report in the {args.lane} lane (bug.json 'expect'), so no "
              "trial could count as found", file=sys.stderr)
        return None
    seeds = Path(args.seeds) if args.seeds else ROOT / "corpus" / target
    if pinned or bug.status == "upstream-open":
        if bug.guard is None:
            print(f"tte: {bug.id} has no guard (bug.json 'guard'), so every input of its target would hit it",
                  file=sys.stderr)
            return None
        env = switch_env(None, unguard=None if args.fixed else bug.guard)  # --fixed: every guard on
    else:
        patched = upstream and bug.variant.patch is not None
        env = switch_env(None if args.fixed or patched else bug.id, unguard=None)

    rows = []
    print(f"{'trial':>5} {'seed':>5} {'result':<10} {'seconds':>8} {'execs':>9}  signature")
    flags = libfuzzer_flags(target) + list(args.flags)
    for trial in range(args.trials):
        row = run_trial(binary, target, seeds, env, args.budget, trial, expected, flags, bug.id,
                        variant_expected if upstream else None)
        if row is None:
            return None
        rows.append(row)

    times = [r["seconds"] for r in rows if r["result"] == "found"]
    via_variant = sum(1 for r in rows if r["result"] == "found" and r.get("via_variant"))
    km = kaplan_meier(rows, args.budget)
    summary = {
        "bug": bug.id, "target": target, "fixed_code": args.fixed, "upstream_variant": upstream, "lane": args.lane,
        "seeds": str(seeds),
        "trials": args.trials,
        "budget_s": args.budget, "found": len(times),
        "median_s": round(statistics.median(times), 2) if times else None,
        "rmst_s": round(rmst(km, args.budget), 2),
        "other_crashes": sum(1 for r in rows if r["result"] in ("other", "no-report")),
        "found_via_variant": via_variant if upstream else None,
        "km": km,
        "flags": libfuzzer_flags(target) + list(args.flags),
        "rows": rows,
    }
    mode = ("fixed" if args.fixed else "upstream-variant" if upstream else
            "pinned-upstream" if pinned else "reintroduced")
    if args.lane != "fuzz":
        mode += "-" + args.lane
    summary["mode"] = mode
    summary.update(provenance.record())  # date, machine, commit (bench/provenance.py)
    print(f"\n{bug.id} ({mode}): found {len(times)}/{args.trials}"
          + (f", median {summary['median_s']} s" if times else "")
          + f", RMST {summary['rmst_s']} s, other crashes {summary['other_crashes']}, budget {args.budget} s per trial"
          + (f"; {via_variant} of the {len(times)} through the variant's own signatures" if upstream else ""))
    out_dir = ROOT / "bench" / "results"
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / f"tte-{bug.id}-{mode}.json").write_text(json.dumps(summary, indent=2) + "\n")
    if not args.fixed:
        png = f"tte-{bug.id}.png" if mode == "reintroduced" else f"tte-{bug.id}-{mode}.png"
        plot({bug.id: km}, args.budget, out_dir / png, f"{bug.id} ({mode}): time to exposure")
    return summary


if __name__ == "__main__":
    sys.exit(main())
