"""The two-way reproducer check run by ctest (`lifeline repro-check`, check): a bug's inputs run clean on the fixed
code and fail with their recorded signature where the bug is (re-introduced by its switch, the pinned upstream,
the patched upstream variant), and run clean with the finding's guard on.

repro/<bug-id>/bug.json itself is read by repro_load.py (load, folders, loadable; its docstring is bug.json's
reference), into repro_model.py's Bug, with repro_status.py's checks of a finding's status; callers take those
names from here, where they are re-exported."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Optional

from . import crash as crashmod
from .bugs import switch_env
from .repro_load import (HARNESS_FRAME, PLAIN_PATH, check_mechanism_frames, check_patch,  # noqa: F401
                         export_signature, folders, lanes_of, load, loadable)
from .repro_model import (STATUSES, UPSTREAM_STATUSES, Bug, BugJsonError, Reproducer,  # noqa: F401
                          UpstreamVariant)
from .repro_status import (GITHUB_THREAD, PRIOR_ART_STATES, RELATIONS, check_introduced_by,  # noqa: F401
                           check_prior_art_dates, check_status)
from .usage import UsageError

MODES = ("fixed", "reintroduced", "pinned", "guarded")
VARIANTS = ("upstream",)
RUN_TIMEOUT_S = 300


def run_input(binary: str, input_path: Path, launcher: list, reintroduce: Optional[str],
              extra_env: Optional[dict] = None, unguard: Optional[str] = None) -> tuple[int, str]:
    # bug.json's env never sets LIFELINE_REINTRODUCE; LIFELINE_UNGUARD is the check's, never inherited.
    env = switch_env(reintroduce, unguard=unguard, **(extra_env or {}))
    try:
        proc = subprocess.run(launcher + [binary, os.path.abspath(input_path)], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode("utf-8", "replace")
        return -1, out + f"\n[repro-check: timed out after {RUN_TIMEOUT_S} s]\n"
    return proc.returncode, proc.stdout.decode("utf-8", "replace")


def tail(text: str, n: int = 60) -> str:
    """The last n lines of a run's output, indented and marked, for a failure message."""
    return "\n".join("    | " + line for line in text.splitlines()[-n:])


# The exit status of a pinned check run on an upstream source other than the pinned one (--other-source) in which
# an input no longer reproduces: ctest's SKIP_RETURN_CODE for those tests, so `lifeline test` lists them as
# skipped with the reason instead of failing.
NOT_REPRODUCED_EXIT = 77


def not_reproduced_line(names: list, total: int, source: str) -> str:
    """The one SKIPPED line (ctest's skip reason) for the inputs that ran clean on another upstream source."""
    return (f"SKIPPED: not reproduced on this source: fixed? {len(names)} of {total} input(s) ran clean on {source} "
            f"({', '.join(names)}); the pinned upstream still has the finding")


def check(bug: Bug, lane: str, mode: str, binary: str, launcher: list, variant: Optional[str] = None,
          other_source: Optional[str] = None, not_reproduced: Optional[list] = None) -> bool:
    """The reproducer test, on the bug's own target or (variant="upstream") on its upstream variant.

    fixed:        every input exits 0 with no report (the fixed code; for the variant, the target built
                  against unpatched upstream).
    reintroduced: every input that lists `lane` fails with its expected signature: with
                  LIFELINE_REINTRODUCE=<id>, or for the variant on the patched build, without it.
    pinned:       (findings in upstream code only: UPSTREAM_STATUSES) every input that lists `lane` still fails with its expected
                  signature on the pinned upstream version, without LIFELINE_REINTRODUCE; with the bug's
                  guard off (LIFELINE_UNGUARD=<guard>) when it has one.
    guarded:      (such a finding with a guard only) every input exits 0 with no report, every guard on: the
                  harness steps around the finding.
    other_source (pinned only): the target was built from that upstream source, not the pinned one; an input
    that runs clean there is not a failure but goes into `not_reproduced` (the finding may be fixed there).
    Prints one line per input; returns overall success."""
    if mode not in MODES:
        print(f"FAIL {bug.id}: unknown mode '{mode}' (known: {', '.join(MODES)})")
        return False
    if variant is not None:
        if variant not in VARIANTS:
            print(f"FAIL {bug.id}: unknown variant '{variant}' (known: {', '.join(VARIANTS)})")
            return False
        if bug.variant is None:
            print(f"FAIL {bug.id}: --variant {variant} needs an 'upstream_variant' in {bug.path / 'bug.json'}, "
                  "which has none")
            return False
        variant_guarded = mode == "guarded" and bug.guard is not None and bug.variant.patch is not None
        if mode == "pinned" or (mode == "guarded" and not variant_guarded):
            print(f"FAIL {bug.id}: --mode {mode} checks a finding in upstream code on the pinned upstream; the upstream "
                  "variant is checked with --mode fixed (unpatched build) or --mode reintroduced (patched build), and "
                  "with --mode guarded (patched build, every guard on) when the finding has a guard")
            return False
        target, reproducers = bug.variant.target, bug.variant.reproducers
    else:
        if bug.status in UPSTREAM_STATUSES and not bug.reproducers:
            print(f"FAIL {bug.id}: status is '{bug.status}' with no reproducers of its own: its only runs are the "
                  "upstream variant's (--variant upstream --mode fixed or reintroduced)")
            return False
        if bug.status in UPSTREAM_STATUSES and mode not in ("pinned", "guarded"):
            print(f"FAIL {bug.id}: status is '{bug.status}' (a finding in upstream code: there is no switch and no "
                  f"fixed code), so it has no '{mode}' run; check it with --mode pinned or --mode guarded")
            return False
        if bug.status not in UPSTREAM_STATUSES and mode in ("pinned", "guarded"):
            print(f"FAIL {bug.id}: --mode {mode} applies to findings in upstream code; this one is "
                  f"'{bug.status}' (use --mode fixed or --mode reintroduced)")
            return False
        if mode == "guarded" and bug.guard is None:
            print(f"FAIL {bug.id}: --mode guarded needs a 'guard' in {bug.path / 'bug.json'}, which has none")
            return False
        target, reproducers = bug.target, bug.reproducers
    if not Path(binary).is_file():
        if variant is not None:
            print(f"FAIL {bug.id}: target binary {binary} does not exist; is the upstream variant '{target}' "
                  "built in this lane?")
        else:
            print(f"FAIL {bug.id}: target binary {binary} does not exist; is '{target}' a fuzz target "
                  f"(targets/{target}.cc) registered with lifeline_add_fuzz_target?")
        return False
    ok_all = True
    ran = 0
    for rep in reproducers:
        if mode not in ("fixed", "guarded") and lane not in rep.expect:
            continue
        ran += 1
        # The bug's own target has a switch, and so has a variant without a patch (the switch acting on upstream
        # code); the pinned upstream and the patched build run as they are.
        switched = variant is None or bug.variant.patch is None
        reintroduce = bug.id if mode == "reintroduced" and switched else None
        # The guard steps around the finding: off where the check wants to see it (the pinned upstream, the patched
        # build), on everywhere else.
        unguard = bug.guard if mode == "pinned" or (mode == "reintroduced" and not switched) else None
        try:
            rc, out = run_input(binary, rep.input, launcher, reintroduce, rep.env, unguard)
        except OSError as e:
            print(f"FAIL {rep.input.name}: cannot run {e.filename or binary} ({e.strerror})")
            return False
        found = crashmod.parse(out)
        if mode == "guarded":
            if rc == 0 and found is None:
                print(f"PASS {rep.input.name}: clean with guard {bug.guard} on"
                      + (f" (the patched build, {bug.variant.patch.name})" if variant is not None else ""))
                continue
            why = f"reported {found.signature}" if found else f"exited with {rc} without a parsable report"
            print(f"FAIL {rep.input.name}: with every guard on (guard {bug.guard} steps around this finding) it "
                  f"{why}\n{tail(out)}")
            ok_all = False
            continue
        if mode == "fixed":
            code = "the unpatched upstream build" if variant is not None and bug.variant.patch else "fixed code"
            if rc == 0 and found is None:
                print(f"PASS {rep.input.name}: clean on {'the ' if variant is None else ''}{code}")
                continue
            if other_source and variant is not None and lane in rep.expect and crashmod.matches(found, rep.expect[lane])[0]:
                # Another upstream source that has the bug itself (a version from before its fix): not a failure of
                # the check, a fact about that version.
                print(f"HAS THE BUG {rep.input.name}: the unpatched build of {other_source} gives the finding's "
                      f"signature ({found.signature}): that version has the bug")
                if not_reproduced is not None:
                    not_reproduced.append(rep.input.name)
                continue
            why = f"reported {found.signature}" if found else f"exited with {rc} without a parsable report"
            print(f"FAIL {rep.input.name}: {code} {why}\n{tail(out)}")
            ok_all = False
            continue
        expect = rep.expect[lane]
        ok, why = crashmod.matches(found, expect)
        if ok and rc == 0:
            ok, why = False, "the report was printed but the process exited 0 (findings must be fatal)"
        if ok:
            print(f"PASS {rep.input.name}: {found.signature}")
            continue
        if mode == "pinned" and rc == 0 and found is None and other_source:
            print(f"NOT REPRODUCED {rep.input.name}: ran clean on {other_source} (the pinned upstream gives {expect})")
            if not_reproduced is not None:
                not_reproduced.append(rep.input.name)
            continue
        if mode == "pinned" and rc == 0 and found is None:
            off = f" with guard {bug.guard} off" if bug.guard else ""
            print(f"FAIL {rep.input.name}: the pinned upstream no longer reproduces it{off} (exit 0, no report; "
                  f"expected {expect}); a version bump may have fixed it: revisit status '{bug.status}' in "
                  f"{bug.path / 'bug.json'}\n{tail(out)}")
        elif mode == "pinned":
            print(f"FAIL {rep.input.name}: the pinned upstream must still give {expect}; {why}\n{tail(out)}")
        elif variant is not None and bug.variant.patch:
            print(f"FAIL {rep.input.name}: the patched upstream build ({bug.variant.patch.name}) must give "
                  f"{expect}; {why}\n{tail(out)}")
        else:
            print(f"FAIL {rep.input.name}: LIFELINE_REINTRODUCE={bug.id} must give {expect}; {why}\n{tail(out)}")
        ok_all = False
    if ran == 0:
        where = "reproducer in upstream_variant" if variant is not None else "reproducer"
        print(f"FAIL {bug.id}: no {where} lists lane '{lane}'")
        return False
    return ok_all


def cmd_repro_check(args) -> int:
    try:
        bug = load(Path(args.repro_dir).absolute())  # `--repro-dir .` is the folder it names
    except BugJsonError as e:
        print(f"FAIL {e}")
        return 1
    if args.validate_only:
        extra = f"; status {bug.status}" if bug.status != "fixed" else ""
        if bug.guard:
            extra += f"; guard {bug.guard}"
        if bug.variant:
            extra += f"; upstream variant {bug.variant.target}: {len(bug.variant.reproducers)} reproducer(s)"
        print(f"PASS {bug.path / 'bug.json'}: valid ({len(bug.reproducers)} reproducer(s){extra})")
        return 0
    if not (args.lane and args.mode and args.binary):
        raise UsageError("lifeline repro-check: --lane, --mode and --binary are required unless --validate-only")
    if args.other_source and not ((args.mode == "pinned" and not args.variant) or
                                  (args.mode == "fixed" and args.variant)):
        raise UsageError("lifeline repro-check: --other-source applies to --mode pinned (a finding's reproducers run on "
                         "an upstream source other than the pinned one) and to --variant upstream --mode fixed")
    not_reproduced = []
    ok = check(bug, args.lane, args.mode, args.binary, args.launcher, variant=args.variant,
               other_source=args.other_source, not_reproduced=not_reproduced)
    if ok and not_reproduced and args.variant:
        print(f"SKIPPED: {len(not_reproduced)} input(s) of the upstream variant fail with its signature on the unpatched "
              f"build of {args.other_source} ({', '.join(not_reproduced)}): that version has the bug, so its variant "
              "is not checked there")
        return NOT_REPRODUCED_EXIT
    if ok and not_reproduced:
        total = sum(1 for r in bug.reproducers if args.lane in r.expect)
        print(not_reproduced_line(not_reproduced, total, args.other_source))
        return NOT_REPRODUCED_EXIT
    return 0 if ok else 1
