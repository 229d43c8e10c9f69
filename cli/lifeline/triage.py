"""`lifeline triage`: crash triage and known-bug matching.

Each crash input is replayed REPLAYS times on its target; a crash is flaky unless every replay crashes with
the same signature (crash type + top-3 frames). Crashes are deduplicated by that signature and matched against
the signatures repro/*/bug.json expect ("known: <bug-id>", or "upstream-open: <bug-id>" when that bug's status
says upstream has not fixed it). `fuzz` sorts its artifacts and `promote` checks its input with the same
replays; `report` renders the results.
"""
from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from . import crash as crashmod
from . import repro
from .bugs import INHERIT, known_bug_ids, switch_env
from .paths import LANES, ROOT, source_targets
from .usage import UsageError, input_file

REPLAYS = 3
REPLAY_TIMEOUT_S = 120


@dataclass
class Result:
    input: str
    target: str
    reintroduce: Optional[str]
    signature: Optional[str] = None
    crash: Optional[dict] = None       # crashmod.Crash.to_json() of the first replay
    replays: list = field(default_factory=list)  # signature (or None) of each replay
    flaky: bool = False
    known: Optional[str] = None        # bug id whose bug.json expects this signature
    duplicate_of: Optional[str] = None # input of the first result with the same signature
    known_status: Optional[str] = None # that bug's status: "fixed" or "upstream-open"

    @property
    def status(self) -> str:
        if self.signature is None:
            return "no-crash"
        if not self.known:
            return "new"
        return "upstream-open" if self.known_status == "upstream-open" else "known"

    @property
    def label(self) -> str:
        """"known: <id>", "upstream-open: <id>", "new" or "no-crash"."""
        return f"{self.status}: {self.known}" if self.known and self.signature else self.status

    def to_json(self) -> dict:
        d = dict(self.__dict__)
        d["status"] = self.status
        return d


def run_once(binary: Path, data_file: Path, reintroduce: Optional[str], extra=(), unguard=INHERIT) -> tuple[int, str]:
    env = switch_env(reintroduce, unguard=unguard)
    # An argument list, never a shell: crash file names come from the fuzzer. An absolute path, never read as
    # a flag (`-leading` would be one to libFuzzer and to the replay driver).
    try:
        proc = subprocess.run([str(binary), *extra, os.path.abspath(data_file)], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, timeout=REPLAY_TIMEOUT_S)
    except subprocess.TimeoutExpired as e:
        return -1, (e.stdout or b"").decode("utf-8", "replace") + "\n[timed out]\n"
    except OSError as e:  # replaced or removed since it was checked
        raise UsageError(f"lifeline: cannot run {binary} ({e.strerror})")
    return proc.returncode, proc.stdout.decode("utf-8", "replace")


def expectation_lanes(lane: str) -> tuple[str, ...]:
    """The lanes of bug.json whose expectations say what a crash of `lane`'s binary is: tsan's for the tsan lane
    (TSan names a bug differently: a data race where ASan sees a use after free), else fuzz's and asan's."""
    return ("tsan",) if lane == "tsan" else ("fuzz", "asan")


def known_signatures(root: Path, target: str, lane: str = "fuzz", other_source: bool = False) -> list[tuple[str, dict, str]]:
    """(bug id, expected signature, "fixed" or "upstream-open") of every repro/*/bug.json of `target`, from the expectations of
    the lane that replays (expectation_lanes). A patched upstream_variant's expectations are left out: they hold
    only on its patched build; one without a patch is the bug's switch on its target, and counts there.
    `other_source`: the target was built from an upstream source other than the pinned one (--ggml-source, a version
    of `lifeline matrix`), which may be older than a fix: there a finding fixed before the pinned version, whose only
    reproducers are its patched variant's, is known by their signatures too."""
    lanes = expectation_lanes(lane)
    out = []
    switches = known_bug_ids(root)
    for d in repro.folders(root / "repro"):
        try:
            bug = repro.load(d, switches)
        except repro.BugJsonError:
            continue  # repro.<id>.bug-json reports it
        reproducers = list(bug.reproducers) if bug.target == target else []
        if bug.variant and bug.variant.target == target and (
                bug.variant.patch is None or (other_source and bug.status in repro.UPSTREAM_STATUSES)):
            reproducers += bug.variant.reproducers
        # A finding in upstream code (open, reported, fixed after the pinned version, or not a bug) is one the
        # pinned upstream still has: triage and fuzz group it as "upstream-open", apart from the crashes.
        status = "upstream-open" if bug.status in repro.UPSTREAM_STATUSES else bug.status
        for rep in reproducers:
            for name in lanes:
                if name in rep.expect:
                    out.append((bug.id, rep.expect[name], status))
    return out


def other_source(binary: Path, target: str) -> bool:
    """Whether `binary` (build/<lane>/targets/<target>) was built from an upstream ggml other than the pinned one."""
    from .build import upstream_ggml
    info = upstream_ggml(Path(binary).parent.parent)
    return bool(info) and not info["pinned"] and target in info["targets"]


def target_of(crash_file: Path) -> Optional[str]:
    """fuzz-out/<target>/artifacts/<file> -> <target>."""
    parts = crash_file.resolve().parts
    if len(parts) >= 3 and parts[-2] == "artifacts":
        return parts[-3]
    return None


def job_reintroduce(crash_file: Path) -> Optional[str]:
    """The LIFELINE_REINTRODUCE of the fuzz job that wrote this artifact (fuzz-out/<target>/job.json), None
    when no job record is there; ValueError for a record of another shape."""
    job = crash_file.resolve().parent.parent / "job.json"
    try:
        doc = json.loads(job.read_text())
    except FileNotFoundError:
        return None
    except OSError as e:
        raise ValueError(f"{job} is not a job record of `lifeline fuzz` ({e.strerror})")
    except (ValueError, RecursionError) as e:  # not JSON, not UTF-8, nested past Python's stack
        raise ValueError(f"{job} is not a job record of `lifeline fuzz` ({e})")
    if not isinstance(doc, dict) or not isinstance(doc.get("reintroduce"), (str, type(None))):
        raise ValueError(f"{job} is not a job record of `lifeline fuzz` (an object whose 'reintroduce' is a bug "
                         "id or null)")
    return doc.get("reintroduce")


def _job_record(crash_file: Path) -> dict:
    """The job.json of the fuzz job that wrote this artifact, or {} when there is none or it cannot be read
    (job_reintroduce names a record that is there but unreadable)."""
    try:
        doc = json.loads((crash_file.resolve().parent.parent / "job.json").read_text())
    except (OSError, ValueError, RecursionError):
        return {}
    return doc if isinstance(doc, dict) else {}


def job_lane(crash_file: Path, given: str | None) -> str:
    """The lane whose binary replays `crash_file`: `given`, else the lane its fuzz job ran in (job.json's
    "lane"; records from before it had one: fuzz), else fuzz."""
    if given is not None:
        return given
    lane = _job_record(crash_file).get("lane")
    return lane if lane in LANES else "fuzz"


def job_unguard(crash_file: Path):
    """The LIFELINE_UNGUARD of the fuzz job that wrote this artifact, as its job.json records it ("unguard":
    the guards it ran without, or null), so a finding made with a guard off replays with that guard off;
    INHERIT (this process's) when no record says."""
    unguard = _job_record(crash_file).get("unguard", INHERIT)
    return unguard if isinstance(unguard, (str, type(None))) else INHERIT


def triage_one(root: Path, binary: Path, crash_file: Path, target: str, reintroduce: Optional[str],
               unguard=INHERIT, lane: str = "fuzz") -> Result:
    r = Result(str(crash_file), target, reintroduce)
    first = None
    for _ in range(REPLAYS):
        rc, out = run_once(binary, crash_file, reintroduce, unguard=unguard)
        c = crashmod.parse(out) if rc != 0 else None
        r.replays.append(c.signature if c else None)
        if first is None and c is not None:
            first = c
    if first is None:
        return r
    r.signature = first.signature
    r.crash = first.to_json()
    r.flaky = any(s != first.signature for s in r.replays)
    r.known, r.known_status = match_known(first, known_signatures(root, target, lane, other_source(binary, target)))
    return r


def match_known(c: Optional[crashmod.Crash], known: list) -> tuple[Optional[str], Optional[str]]:
    """(bug id, status) of the first of known_signatures() that `c` matches, or (None, None)."""
    for bug_id, expect, status in known:
        if crashmod.matches(c, expect)[0]:
            return bug_id, status
    return None, None


def dedup(results: list[Result]) -> None:
    seen: dict[str, str] = {}
    for r in results:
        if r.signature is None:
            continue
        if r.signature in seen:
            r.duplicate_of = seen[r.signature]
        else:
            seen[r.signature] = r.input


def summary(results: list[Result]) -> str:
    """"<n> input(s), <m> distinct crash(es), <k> new[, <u> upstream-open]" (duplicates not counted)."""
    distinct = {r.signature for r in results if r.signature}
    upstream_open = sum(1 for r in results if r.status == "upstream-open" and not r.duplicate_of)
    return (f"{len(results)} input(s), {len(distinct)} distinct crash(es), "
            f"{sum(1 for r in results if r.status == 'new' and not r.duplicate_of)} new"
            + (f", {upstream_open} upstream-open" if upstream_open else ""))


# ---- the verb --------------------------------------------------------------------------------------

def crash_file_arg(cmd: str, f: str) -> Path:
    """The crash file `f` as an absolute path (a name led by '-' is then never a flag to the target)."""
    return input_file(cmd, "crash file", f)


def target_binary(cmd: str, crash_file: Path, target: str | None, lane: str) -> tuple[str, Path]:
    t = target or target_of(crash_file)
    if not t:
        raise UsageError(f"lifeline {cmd}: cannot tell the target of '{crash_file}' (not under "
                         "fuzz-out/<target>/artifacts/); give --target")
    if t not in source_targets():
        raise UsageError(f"lifeline {cmd}: unknown target '{t}' (known: {', '.join(source_targets())})")
    binary = ROOT / "build" / lane / "targets" / t
    if not binary.is_file():
        raise UsageError(f"lifeline {cmd}: {binary} is not built; run `cmake --preset {lane} && "
                         f"cmake --build --preset {lane}`")
    if not os.access(binary, os.X_OK):
        raise UsageError(f"lifeline {cmd}: cannot run {binary} (not executable)")
    return t, binary


def reintroduce_for(cmd: str, crash_file: Path, given: str | None) -> str | None:
    try:
        r = given if given is not None else job_reintroduce(crash_file)
    except ValueError as e:
        raise UsageError(f"lifeline {cmd}: {e}; give --reintroduce (or --reintroduce '' for none)")
    if r and r not in known_bug_ids():
        raise UsageError(f"lifeline {cmd}: unknown bug id '{r}'; see `lifeline list`")
    return r or None


def cmd_triage(args) -> int:
    files = [crash_file_arg("triage", f) for f in args.crashes]
    results = []
    for f in files:
        lane = job_lane(f, args.lane)
        target, binary = target_binary("triage", f, args.target, lane)
        reintroduce = reintroduce_for("triage", f, args.reintroduce)
        unguard = job_unguard(f)
        print(f"triage: replaying {f} on {target} x{REPLAYS}"
              + (f" (LIFELINE_REINTRODUCE={reintroduce})" if reintroduce else "")
              + (f" (LIFELINE_UNGUARD={unguard}, as its fuzz job ran)" if unguard not in (INHERIT, None) else ""),
              flush=True)
        results.append(triage_one(ROOT, binary, f, target, reintroduce, unguard, lane))
    dedup(results)
    statuses = [r.label + (" (dup)" if r.duplicate_of else "") for r in results]
    width = max([len("status")] + [len(x) for x in statuses])
    print(f"\n{'status':<{width}}  flaky  {'input':<41} signature")
    for r, status in zip(results, statuses):
        print(f"{status:<{width}}  {'yes' if r.flaky else 'no':<6} {Path(r.input).name[:40]:<41} "
              f"{r.signature or '(no crash in 3 replays)'}")
    print(summary(results))
    if args.json:
        out = Path(args.json)
        try:
            out.write_text(json.dumps([r.to_json() for r in results], indent=2) + "\n")
        except OSError as e:
            raise UsageError(f"lifeline triage: cannot write {out} ({e.strerror})")
        print(f"triage results: {out}")
    if args.allow_upstream_open:
        # A run may stop only on a known upstream-open finding: every input must reproduce one, every time.
        bad = []
        for r in results:
            if r.signature is None:
                bad.append((r, f"no crash in {REPLAYS} replays"))
            elif r.flaky:
                bad.append((r, f"flaky: replays gave {r.replays}"))
            elif r.status != "upstream-open":
                bad.append((r, f"{r.label}: {r.signature}"))
        if bad:
            print(f"lifeline triage: --allow-upstream-open: {len(bad)} of {len(results)} input(s) are not a "
                  "known upstream-open bug:")
            for r, why in bad:
                print(f"  {r.input}: {why}")
            return 1
        print("lifeline triage: every input reproduces an upstream-open bug: "
              + ", ".join(sorted({r.known for r in results})))
    return 0
