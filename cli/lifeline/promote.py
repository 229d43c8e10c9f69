"""`lifeline promote`: a crash that reproduces with a switch on, and only then, is minimized with libFuzzer
(-minimize_crash=1), kept only if the minimized input still gives the same signature, its program reduced
(`lifeline reduce`: ops deleted and operands simplified while the signature holds and the fixed code runs
clean), and written to repro/<id>/ with its bug.json; and `lifeline corpus merge`: new inputs into corpus/<target>/ (-merge=1)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Optional

from . import crash as crashmod
from . import reduce as reducemod
from . import triage as triagemod
from .bug_signature import signature_for_bug_json
from .bugs import BUG_ID, known_bug_ids, switch_env
from .build import run
from .options import per_input_timeout
from .paths import FUZZ_LANES, LANES, ROOT, source_targets
from .shellsafe import SafeLinks
from .usage import UsageError


def minimize(binary: Path, crash_file: Path, reintroduce: Optional[str], work: Path, runs: int, timeout: int) -> Path:
    """work/minimized: the smallest input libFuzzer (-minimize_crash=1) found that still crashes, if any."""
    out = work / "minimized"
    env = switch_env(reintroduce)
    # libFuzzer runs each attempt through a shell (MinimizeCrashInput), so every path is a plain name.
    with SafeLinks() as links:
        try:
            subprocess.run([links.path(binary, "target"), "-minimize_crash=1", f"-runs={runs}",
                            f"-exact_artifact_path={links.path(work, 'work')}/{out.name}", f"-timeout={timeout}",
                            links.path(crash_file, "input")], env=links.env(env), stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, timeout=600)
        except subprocess.TimeoutExpired:
            print("promote: minimization stopped after 600 s")
    return out


def write_repro(root: Path, bug_id: str, target: str, input_bytes: bytes, crash: dict, lanes: list[str],
                title: Optional[str], source: str) -> Path:
    """Makes repro/<bug_id>/ with the input and its bug.json; UsageError, and nothing left behind, when the
    folder appeared meanwhile or cannot be written."""
    d = root / "repro" / bug_id
    try:
        d.mkdir()
    except FileExistsError:
        raise UsageError(f"lifeline promote: {d} appeared while minimizing (another promote?); nothing was "
                         "written: pick another --id or remove it and promote again")
    except OSError as e:
        raise UsageError(f"lifeline promote: cannot make {d} ({e.strerror})")
    try:
        return _write_bug(d, target, input_bytes, crash, lanes, title, source)
    except OSError as e:
        shutil.rmtree(d, ignore_errors=True)
        raise UsageError(f"lifeline promote: cannot write {d} ({e.strerror}); nothing was kept")


def _write_bug(d: Path, target: str, input_bytes: bytes, crash: dict, lanes: list[str], title: Optional[str],
               source: str) -> Path:
    bug_id = d.name
    name = "minimized-crash"
    (d / name).write_bytes(input_bytes)
    sig = signature_for_bug_json(crash)
    doc = {
        "id": bug_id,
        "title": title or f"{crash['type']} found by fuzzing {target}" + (
            f": {sig['message']}" if "message" in sig else f" in {sig['frame']}"),
        "upstream": [],
        "target": target,
        "notes": f"Promoted by `lifeline promote` from {source}; crash state: {' / '.join(crash['state'])}.",
        "reproducers": [{"input": name, "expect": {lane: sig for lane in lanes}}],
    }
    (d / "bug.json").write_text(json.dumps(doc, indent=2) + "\n")
    return d


def cmd_promote(args) -> int:
    f = triagemod.crash_file_arg("promote", args.crash)
    if not BUG_ID.fullmatch(args.id):
        raise UsageError(f"lifeline promote: '{args.id}' is not a bug id (kebab-case, led by the upstream component)")
    if args.id not in known_bug_ids():
        raise UsageError(f"lifeline promote: no switch named '{args.id}' in core/bug_list.def; a reproducer must run "
                         "clean with its switch off, so add the switch (beside the fix) first")
    dest = ROOT / "repro" / args.id
    if dest.exists():
        raise UsageError(f"lifeline promote: {dest} already exists; pick another id or extend its bug.json by hand")
    lane = triagemod.job_lane(f, None)  # the lane whose binary found it replays and minimizes it
    if lane not in FUZZ_LANES:
        lane = "fuzz"
    if args.lanes is None:
        args.lanes = "tsan" if lane == "tsan" else "asan"
    for lane_name in args.lanes.split(","):
        if lane_name not in LANES:
            raise UsageError(f"lifeline promote: unknown lane '{lane_name}' (known: {', '.join(LANES)})")
    try:
        (ROOT / "repro").mkdir(exist_ok=True)
        probe = ROOT / "repro" / ".write-test"
        probe.write_text("")
        probe.unlink()
    except OSError as e:
        raise UsageError(f"lifeline promote: {ROOT / 'repro'} is not writable ({e.strerror})")
    target, binary = triagemod.target_binary("promote", f, args.target, lane)
    print(f"promote: replaying {f} on {target} ({lane} lane) with LIFELINE_REINTRODUCE={args.id}", flush=True)
    r = triagemod.triage_one(ROOT, binary, f, target, args.id, lane=lane)
    if r.signature is None:
        raise UsageError(f"lifeline promote: '{f}' does not reproduce with LIFELINE_REINTRODUCE={args.id} "
                         f"(3 clean replays on {target})")
    if r.flaky:
        raise UsageError(f"lifeline promote: '{f}' is flaky ({r.replays}); a reproducer must fail every time")
    rc, out = triagemod.run_once(binary, f, None)
    if rc != 0:
        found = crashmod.parse(out)
        raise UsageError(f"lifeline promote: '{f}' also crashes with the switch off "
                         f"({found.signature if found else f'exit {rc}'}); it is not the bug behind '{args.id}'")
    print(f"promote: {r.signature}; minimizing (libFuzzer -minimize_crash=1, {args.runs} runs)", flush=True)
    data = f.read_bytes()
    with tempfile.TemporaryDirectory() as tmp:
        small = minimize(binary, f, args.id, Path(tmp), args.runs, per_input_timeout(target))
        if small.is_file() and len(small.read_bytes()) < len(data):
            m = triagemod.triage_one(ROOT, binary, small, target, args.id, lane=lane)
            if m.signature == r.signature and not m.flaky:
                print(f"promote: minimized {len(data)} -> {len(small.read_bytes())} bytes, same crash state")
                data = small.read_bytes()
            else:
                print(f"promote: the minimized input crashes differently ({m.signature}); keeping the original")
        else:
            print("promote: no smaller input found; keeping the original")
    # The program itself, reduced (ops deleted, operands simplified) while the signature holds with the switch on
    # and the run stays clean with it off (lifeline reduce), where the asan lane can decode it.
    sig = signature_for_bug_json(r.crash)
    reduced = reducemod.reduce_for_promote(target, data, args.id, sig)
    if reduced is not None:
        data, before, after = reduced
        print(f"promote: program reduced from {before} to {after} ops")
    d = write_repro(ROOT, args.id, target, data, r.crash, args.lanes.split(","), args.title, str(f))
    print(f"promote: wrote {d}/bug.json and {d}/minimized-crash")
    print(f"promote: the next build registers repro.{args.id}.<lane>.fixed and .reintroduced for {args.lanes}")
    return 0


def cmd_corpus(args) -> int:
    if args.action != "merge":
        raise UsageError(f"lifeline corpus: unknown action '{args.action}' (known: merge)")
    if args.target not in source_targets():
        raise UsageError(f"lifeline corpus: unknown target '{args.target}' (known: {', '.join(source_targets())})")
    for d in args.dirs:
        if not Path(d).is_dir():
            raise UsageError(f"lifeline corpus: '{d}' is not a directory")
    binary = ROOT / "build" / "fuzz" / "targets" / args.target
    if not binary.is_file():
        raise UsageError(f"lifeline corpus: {binary} is not built; run `cmake --build --preset fuzz`")
    # --into seeds: corpus/<target>/, the seeds (time-to-exposure is measured from them, so nothing merged there
    # may expose a documented bug on its own); --into regression: corpus/regression/<target>/, the
    # coverage-merged regression corpus that ctest replays in every lane.
    seeds = ROOT / "corpus" / args.target if args.into == "seeds" else ROOT / "corpus" / "regression" / args.target
    try:
        seeds.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UsageError(f"lifeline corpus: cannot make {seeds} ({e.strerror})")
    before = {p.name for p in seeds.iterdir()}
    # -merge=1 copies into the first directory only inputs that add coverage, named by the SHA-1 of their
    # content; an interrupted merge can be resumed with the same command. Its inner process is started
    # through a shell, so every path is a plain name (shellsafe.py), and an input that crashes it is written
    # to a private folder, not to the current one.
    with SafeLinks() as links:
        crashed = links.dir / "crashed"
        crashed.mkdir()
        dirs = [links.path(d, f"in{i}") for i, d in enumerate(args.dirs)]
        # The regression corpus keeps an input only for an edge nothing before it reached (-use_counters=0: hit
        # counts are not features), so it stays small enough for every lane to replay, valgrind's included.
        edges_only = ["-use_counters=0"] if args.into == "regression" else []
        rc = run([links.path(binary, args.target), "-merge=1", *edges_only, f"-artifact_prefix={crashed}/",
                  links.path(seeds, "corpus"), *dirs], env=links.env(dict(os.environ)))
        n_crashed = sum(1 for _ in crashed.iterdir())
    added = sorted(p.name for p in seeds.iterdir() if p.name not in before)
    print(f"corpus merge: {len(added)} new input(s) in {seeds}")
    if n_crashed:
        print(f"corpus merge: {n_crashed} input(s) crashed the target and were left out (`lifeline triage` "
              "finds which)")
    return 0 if rc == 0 else 1
