#!/usr/bin/python3
"""libFuzzer's own settings per target: exec/s and time-to-exposure under each, in one run.

  bench/engine.py [TARGET...] [--setting NAME=FLAGS]... [--seconds 10] [--rounds 2] [--trials 10] [--budget 60]
                  [--upstream-open] [--bug ID]... [--seeds DIR] [--name engine]

Settings (default: `default` = libFuzzer's defaults, `entropic0` = -entropic=0, `value-profile` =
-use_value_profile=1; --setting NAME="-flag=v -flag=v" replaces them): each is passed as given, instead of the
target's own targets/<t>.options, so the table says which to write there.

Per target (default: every target built in the fuzz lane), in the fuzz lane's build:
  exec/s    one fuzzing run of --seconds per setting per round, the settings in turns (noise hits all alike),
            from corpus/<target>/ (--seeds: another directory, one target) with -seed=1 (bench/throughput.py's run)
  TTE       for every documented bug of the target (repro/<id>/, not upstream-open): --trials trials per
            setting, trial k of every setting with -seed=k+1, the settings in turns (bench/tte.py's trial);
            found/N, median, RMST over the --budget. --upstream-open adds the target's upstream-open
            findings (LIFELINE_UNGUARD=<its guard>, every other guard on), which take far longer.
Prints progress and a table; writes bench/results/<NAME>.json and <NAME>.md, each target's result with the run's
date, machine and commit (bench/provenance.py); the table's (0.73x) is a setting's exec/s over the first
setting's, both printed in the row. A benchmark, not a test.
"""
import argparse
import json
import shlex
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "cli"))
sys.path.insert(0, str(ROOT / "bench"))
from lifeline import repro  # noqa: E402
from lifeline.bugs import switch_env  # noqa: E402
import provenance  # noqa: E402
import tables  # noqa: E402
import throughput  # noqa: E402
import tte  # noqa: E402

DEFAULT_SETTINGS = {"default": [], "entropic0": ["-entropic=0"], "value-profile": ["-use_value_profile=1"]}


def parse_settings(given: list) -> dict:
    if not given:
        return dict(DEFAULT_SETTINGS)
    out = {}
    for g in given:
        name, eq, flags = g.partition("=")
        if not eq or not name or not all(c.isalnum() or c in "-_." for c in name):
            raise ValueError(f"--setting {g!r}: write NAME=FLAGS (NAME letters, digits, - _ .)")
        fl = shlex.split(flags)
        if any(not f.startswith("-") or "=" not in f for f in fl):
            raise ValueError(f"--setting {g!r}: every flag is -name=value")
        if name in out:
            raise ValueError(f"--setting {name!r} given twice")
        out[name] = fl
    return out


def bugs_of(target: str, upstream_open: bool) -> list:
    found = []
    for d in sorted((ROOT / "repro").iterdir()):
        if not (d / "bug.json").is_file():
            continue
        try:
            bug = repro.load(d)
        except repro.BugJsonError as e:
            print(f"engine: skipping {d.name}: {e}", file=sys.stderr)
            continue
        if bug.target != target:
            continue
        if bug.status == "upstream-open" and not (upstream_open and bug.guard):
            continue
        if bug.status == "upstream-fixed" and bug.variant is not None and bug.guard is None:
            # Fixed in the pinned tree and shown only by its upstream variant's build (bench/tte.py --upstream):
            # this target's own build cannot expose it, so a trial here would only time out.
            print(f"engine: skipping {d.name}: only its upstream variant shows it (bench/tte.py {d.name})",
                  file=sys.stderr)
            continue
        found.append(bug)
    return found


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("targets", nargs="*")
    ap.add_argument("--setting", action="append", default=[], metavar="NAME=FLAGS")
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--trials", type=int, default=10)
    ap.add_argument("--budget", type=int, default=60)
    ap.add_argument("--upstream-open", action="store_true")
    ap.add_argument("--bug", action="append", default=[], metavar="ID", help="only these bugs' TTE (repeatable)")
    ap.add_argument("--build", default=str(ROOT / "build" / "fuzz"))
    ap.add_argument("--seeds", help="seed directory for a single target (default: corpus/<target>)")
    ap.add_argument("--name", default="engine")
    args = ap.parse_args()
    try:
        settings = parse_settings(args.setting)
    except ValueError as e:
        print(f"engine: {e}", file=sys.stderr)
        return 2
    if min(args.seconds, args.rounds, args.trials, args.budget) < 1:
        print("engine: --seconds, --rounds, --trials and --budget must be positive", file=sys.stderr)
        return 2
    if not args.name or not all(c.isalnum() or c in "-_." for c in args.name) or args.name.startswith("."):
        print(f"engine: --name {args.name!r} must be a plain file name", file=sys.stderr)
        return 2
    if args.seeds and (len(args.targets) != 1 or not Path(args.seeds).is_dir()):
        print("engine: --seeds takes a directory, with exactly one target", file=sys.stderr)
        return 2
    build = Path(args.build)
    built = sorted(p.name for p in (build / "targets").iterdir()) if (build / "targets").is_dir() else []
    targets = args.targets or built
    missing = [t for t in targets if t not in built]
    if missing or not targets:
        print(f"engine: not built in {build}: {', '.join(missing) or 'any target'}; "
              "run `cmake --preset fuzz && cmake --build --preset fuzz`", file=sys.stderr)
        return 2
    results, prov = [], provenance.record()
    for n, t in enumerate(targets):
        binary = build / "targets" / t
        seeds = Path(args.seeds) if args.seeds else ROOT / "corpus" / t
        print(f"\n== [{n + 1}/{len(targets)}] {t}: exec/s, {args.rounds} rounds of {args.seconds} s", flush=True)
        eps = {s: [] for s in settings}
        for r in range(args.rounds):
            for s, flags in settings.items():
                v = throughput.run(binary, seeds, args.seconds, None, flags)
                eps[s].append(v)
                print(f"  round {r}: {s:<16} {v:>7} exec/s", flush=True)
        res = {"target": t, "seeds": str(seeds), "settings": settings, "exec_s": {s: round(statistics.mean(v)) for s, v in eps.items()},
               "exec_s_rows": eps, "bugs": [], **prov}
        for bug in bugs_of(t, args.upstream_open):
            if args.bug and bug.id not in args.bug:
                continue
            expected = [rp.expect[lane] for rp in bug.reproducers for lane in ("fuzz", "asan") if lane in rp.expect]
            # As bench/tte.py: a finding the pinned upstream still has runs with its guard off (upstream-open,
            # upstream-reported, and upstream-fixed after the pin); the project's own bugs are reintroduced.
            pinned = bug.guard is not None and (bug.status in ("upstream-open", "upstream-reported")
                                                or (bug.status == "upstream-fixed" and bug.variant is None))
            env = switch_env(None, unguard=bug.guard) if pinned else switch_env(bug.id, unguard=None)
            print(f"-- {bug.id}: {args.trials} trials per setting, budget {args.budget} s", flush=True)
            rows = {s: [] for s in settings}
            for trial in range(args.trials):
                for s, flags in settings.items():
                    print(f"  {s:<16}", end="", flush=True)
                    row = tte.run_trial(binary, t, seeds, env, args.budget, trial, expected, flags, f"{bug.id}-{s}")
                    if row is None:
                        return 2
                    rows[s].append(row)
            per = {}
            for s, rs in rows.items():
                times = [r["seconds"] for r in rs if r["result"] == "found"]
                km = tte.kaplan_meier(rs, args.budget)
                per[s] = {"found": len(times), "trials": args.trials,
                          "median_s": round(statistics.median(times), 2) if times else None,
                          "rmst_s": round(tte.rmst(km, args.budget), 2),
                          "other": sum(1 for r in rs if r["result"] in ("other", "no-report")), "rows": rs}
            res["bugs"].append({"bug": bug.id, "status": bug.status, "budget_s": args.budget, "by_setting": per})
        results.append(res)

    lines = table(results, settings, args, "bench/engine.py " + " ".join(sys.argv[1:]))
    out_dir = ROOT / "bench" / "results"
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / f"{args.name}.json").write_text(json.dumps(results, indent=2) + "\n")
    (out_dir / f"{args.name}.md").write_text("\n".join(lines) + "\n")
    print("\n" + "\n".join(lines[4:]))
    print(f"\nwrote {out_dir / (args.name + '.md')}")
    return 0


def table(results: list, settings: dict, args, command: str) -> list:
    """The lines of <NAME>.md (`args`: rounds, seconds, trials, budget): per target, exec/s under each setting with
    its ratio to the first setting's, then each bug's time to exposure under each."""
    names = list(settings)
    lines = [f"# libFuzzer settings per target ({args.rounds} rounds of {args.seconds} s for exec/s; "
             f"{args.trials} trials, budget {args.budget} s, for time-to-exposure)", "",
             f"Command: `{command}`", "",
             "Settings: " + "; ".join(f"`{s}` = {' '.join(f) or '(libFuzzer defaults)'}" for s, f in settings.items()),
             "", "| target | what | " + " | ".join(names) + " |", "|---|---|" + "---|" * len(names)]
    for res in results:
        base = res["exec_s"][names[0]]
        lines.append(f"| {res['target']} | exec/s | " + " | ".join(
            f"{res['exec_s'][s]} ({tables.times(res['exec_s'][s], base)})" for s in names) + " |")
        for b in res["bugs"]:
            cells = []
            for s in names:
                p = b["by_setting"][s]
                cells.append(f"{p['found']}/{p['trials']}, median {p['median_s'] if p['median_s'] is not None else '-'}"
                             f" s, RMST {p['rmst_s']} s" + (f", {p['other']} other" if p["other"] else ""))
            lines.append(f"| | `{b['bug']}` | " + " | ".join(cells) + " |")
    return lines


if __name__ == "__main__":
    sys.exit(main())
