"""repro/<bug-id>/bug.json: loading, validation, and the two-way check run by ctest (`lifeline repro-check`).

bug.json (see docs/adding-a-reproducer.md, "bug.json reference"):
  id           the bug id; equals the folder name and is what LIFELINE_REINTRODUCE takes
  title        one line
  upstream     list of references (issues, commits)
  target       the fuzz target whose binary replays the inputs
  reproducers  list of {"input": FILE, "expect": {LANE: SIGNATURE, ...}, "env": {VAR: VALUE}?, ...}; `env`
               adds to the environment of the run (e.g. UBSAN_OPTIONS without the upstream suppressions)
  status       optional: "fixed" (the default: a switch re-introduces the bug into fixed code), or one of the
               statuses of a finding in upstream code, which has no switch and no fixed code here:
                 "upstream-open"      upstream has not fixed it and nobody has reported it: "triage" says where
                                      the prior-art search looked and when
                 "upstream-reported"  an upstream issue or pull request reports the same mechanism: a
                                      "prior_art" entry with relation "same-mechanism" links it
                 "upstream-fixed"     upstream has fixed it: a "prior_art" entry with relation "fix"; with
                                      "reproducers" the pinned version still has it (they are checked pinned),
                                      without them it was fixed before the pinned version and its
                                      "upstream_variant" patch re-introduces it (`target` is the variant's)
                 "not-a-bug"          what looked like a finding is not one: "not_a_bug" says why; reproducers,
                                      if any, keep what the harness sees checked (pinned) and its guard honest
               The reproducers of a finding with reproducers are checked with --mode pinned (the pinned upstream
               still gives the signature) and, with a guard, --mode guarded.
  prior_art    with an upstream status: [{"url", "relation", "title"?, "state"?, "opened"?, "merged"?, "closed"?,
               "release"?, "as_of"?, "notes"?}], relation one of same-mechanism, fix, related, cause, downstream (a
               downstream project's report or workaround); state open, closed or merged. Dates say what they are
               ("opened", "merged", "closed": each begins with its date, YYYY-MM[-DD]; "as_of": the date the state
               was last seen); a merged entry says when ("merged": its date, a bound such as "after 2026-08-22",
               or "not visible ..." where no date could be seen, saying what was checked) and "release" the first
               tagged release that has it, where one is visible. An undated "date" is refused: it was read as a
               merge date where it was an opening date. Every
               upstream issue or pull request URL that bug.json's "upstream" or "notes" cites must be one of them:
               a finding cannot cite a report of its own mechanism and still say "upstream-open".
  triage       with status upstream-open: {"date": "YYYY-MM-DD", "searched": ["where and what", ...]}
  introduced_by  optional, written by `lifeline bisect --record`: {"commit": SHA, "subject", "date", "repo",
               "range": [GOOD, BAD], "export": INPUT} (the first bad commit), or {"before": SHA, ...} (the export
               already fails at the oldest commit it builds against); "note": TEXT may add what bisecting by hand
               found; "found_by": "history" where the commit was read off upstream's history by hand (e.g. the
               commit that added the function: nothing before it can fail), not bisected
  guard        optional, a finding in upstream code with reproducers only: the guard of core/guard_list.def that steps around the finding
               by default (core/guards.h); its inputs must run clean with it on and reproduce with it off
  guard_notes  with a guard: what it checks and what it does instead (for lifeline's readers; `notes` stay
               what an upstream maintainer reads, and `lifeline export` quotes them)
  upstream_variant  optional: the bug forward-ported into upstream code, checked on a separate build of
               {"target": TARGET, "source": TEXT, "patch": FILE (in the folder), "reproducers": [...]}:
               the target built against unpatched upstream runs the inputs clean, the patched build fails;
               without "patch", the bug's own switch on that target (see below)
A reproducer of a finding in upstream code may also carry "export": SIGNATURE, the signature its standalone
program (`lifeline export`, cli/lifeline/export.py) must fail with, where the lane's signature does not fit
it: an oracle-only finding's `lifeline-check` is the harness's oracle, which the exported program replaces
with a check of its own (e.g. {"type": "assert", "frame": "check_same_outputs"}). Without it the export
must fail with the reproducer's `asan` signature.
An exported C program must also fail without any sanitizer (a release build of ggml: its own verdict, a canary,
an abort), where the bug is there; a reproducer whose program cannot show it there says why in "no_sanitizer":
TEXT (an undefined operation with no visible effect in that build, an assert() that -DNDEBUG compiles out), and
the check (tests/upstream/check_reports.py) fails when either is not so.
SIGNATURE is {"type": CRASH_TYPE, "frame": FUNCTION} and/or {"type": "lifeline-check", "message": TEXT}; a
heap-use-after-free may add "freed_by": FUNCTION, a frame of the stack that freed the memory.
An upstream_variant without "patch" is the bug's switch acting on upstream code the project cannot patch (a
prebuilt library: PyTorch): its target runs the inputs clean as it is, and fails with LIFELINE_REINTRODUCE.
"""
from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from . import crash as crashmod
from .bugs import BUG_ID, known_bug_ids, known_guard_ids, switch_env
from .paths import LANES
from .usage import UsageError

STATUSES = ("fixed", "upstream-open", "upstream-reported", "upstream-fixed", "not-a-bug")
# Findings in upstream code: no switch; their reproducers (when they have them) run on the pinned upstream.
UPSTREAM_STATUSES = ("upstream-open", "upstream-reported", "upstream-fixed", "not-a-bug")
RELATIONS = ("same-mechanism", "fix", "related", "cause", "downstream")
GITHUB_THREAD = re.compile(r"https://github\.com/[\w.-]+/[\w.-]+/(?:issues|pull)/\d+")
MODES = ("fixed", "reintroduced", "pinned", "guarded")
VARIANTS = ("upstream",)
RUN_TIMEOUT_S = 300
PLAIN_PATH = re.compile(r"[A-Za-z0-9._/-]+")


@dataclass
class Reproducer:
    input: Path
    expect: dict  # lane -> signature
    env: dict = dataclasses.field(default_factory=dict)  # extra environment of the run (e.g. UBSAN_OPTIONS)
    export: Optional[dict] = None  # the signature of its exported standalone program, when not the lane's
    no_sanitizer: Optional[str] = None  # why its exported C program runs clean without sanitizers (else it fails)


@dataclass
class UpstreamVariant:
    target: str       # the target built against upstream source (unpatched: fixed; patched: reintroduced)
    source: str       # which upstream source, in words
    patch: Optional[Path]  # the patch that re-introduces the bug into that source; None: the bug's switch does
    reproducers: list # Reproducer


@dataclass
class Bug:
    id: str
    title: str
    target: str
    reproducers: list
    path: Path
    status: str = "fixed"                     # one of STATUSES
    variant: Optional[UpstreamVariant] = None  # "upstream_variant"
    guard: Optional[str] = None               # "guard": an id of core/guard_list.def


class BugJsonError(Exception):
    pass


# A frame of the harness, not of upstream code: an oracle's own frame (GgmlGraphAdapter::AllocAndCompute).
HARNESS_FRAME = re.compile(r"lifeline::|\b\w*Adapter::|^ComputeUnderOracles$")


def check_mechanism_frames(reproducers: list, where: str, prefix: str) -> None:
    """A finding in upstream code that an oracle of the harness finds (a `lifeline-check`) is told from other
    bugs by its mechanism: a 'frame' it names must be one of the upstream calls of the report's "upstream:" line
    (cli/lifeline/crash.py), never the harness frame the oracle ran in, which every oracle finding there shares."""
    for i, rep in enumerate(reproducers):
        for lane, sig in rep.expect.items():
            frame = sig.get("frame")
            if sig.get("type") == "lifeline-check" and frame and HARNESS_FRAME.search(frame):
                raise BugJsonError(
                    f"{where}: {prefix}reproducers[{i}]: expect.{lane}: frame '{frame}' is the harness's own; an "
                    "oracle finding in upstream code names the upstream call of its report's 'upstream:' line (e.g. "
                    "'ggml_gallocr_alloc_graph [kept plan; edges changed since the plan]')")


def folders(repro_root: Path) -> list[Path]:
    """The reproducer folders under repro_root (repro/), by name; a file there is not one."""
    return sorted(d for d in repro_root.iterdir() if d.is_dir()) if repro_root.is_dir() else []


def loadable(repro_root: Path) -> list[Bug]:
    """The bugs under repro_root whose bug.json loads; one that does not is left out (its repro.<id>.bug-json
    test says why)."""
    bugs = []
    for d in folders(repro_root):
        try:
            bugs.append(load(d))
        except BugJsonError:
            pass
    return bugs


def lanes_of(reproducers: list) -> list[str]:
    """The lanes the `expect` objects of `reproducers` name, sorted."""
    return sorted({lane for r in reproducers for lane in r.expect})


def load(repro_dir: Path, switches: Optional[list] = None) -> Bug:
    """Reads and validates repro_dir/bug.json; raises BugJsonError naming the file and the problem. A fixed bug's
    id must be one of `switches` (default: this checkout's core/bug_list.def)."""
    path = repro_dir / "bug.json"
    where = str(path)
    if not path.is_file():
        raise BugJsonError(f"{where}: missing (every repro/<bug-id>/ folder needs a bug.json)")
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as e:
        raise BugJsonError(f"{where}: not UTF-8 text ({e})")
    except json.JSONDecodeError as e:
        raise BugJsonError(f"{where}: invalid JSON at line {e.lineno} column {e.colno}: {e.msg}")
    except (ValueError, RecursionError) as e:  # an integer past Python's digit limit, nesting past its stack
        raise BugJsonError(f"{where}: JSON this checker cannot read ({e})")
    except OSError as e:
        raise BugJsonError(f"{where}: cannot be read ({e.strerror})")
    if not isinstance(doc, dict):
        raise BugJsonError(f"{where}: the top level must be an object")

    def need(obj, key, typ, ctx):
        if key not in obj:
            raise BugJsonError(f"{where}: {ctx}missing '{key}'")
        if not isinstance(obj[key], typ) or (typ is str and not obj[key].strip()):
            raise BugJsonError(f"{where}: {ctx}'{key}' must be a non-empty {typ.__name__}")
        return obj[key]

    bug_id = need(doc, "id", str, "")
    if not BUG_ID.fullmatch(bug_id):
        raise BugJsonError(f"{where}: id '{bug_id}' is not a bug id (lowercase letters and digits in words "
                           "joined by '-', led by the upstream component)")
    if bug_id != repro_dir.name:
        raise BugJsonError(f"{where}: id '{bug_id}' does not match the folder name '{repro_dir.name}'")
    title = need(doc, "title", str, "")
    upstream = need(doc, "upstream", list, "")
    if not all(isinstance(u, str) for u in upstream):
        raise BugJsonError(f"{where}: 'upstream' must be a list of strings")
    target = need(doc, "target", str, "")
    if not re.fullmatch(r"[a-z0-9_]+", target):
        raise BugJsonError(f"{where}: target '{target}' is not a target name (targets/<name>.cc)")

    def load_reproducers(obj, prefix):
        """obj["reproducers"]: [{"input": FILE, "expect": {LANE: SIGNATURE}}]; prefix names where it is."""
        items = need(obj, "reproducers", list, prefix.rstrip(".") + ": " if prefix else "")
        if not items:
            raise BugJsonError(f"{where}: '{prefix}reproducers' is empty")
        reproducers = []
        for i, item in enumerate(items):
            ctx = f"{prefix}reproducers[{i}]: "
            if not isinstance(item, dict):
                raise BugJsonError(f"{where}: {ctx}must be an object")
            name = need(item, "input", str, ctx)
            if "/" in name or name in (".", ".."):
                raise BugJsonError(f"{where}: {ctx}input '{name}' must be a file name inside {repro_dir}")
            if not (repro_dir / name).is_file():
                raise BugJsonError(f"{where}: {ctx}input file '{name}' does not exist")
            expect = need(item, "expect", dict, ctx)
            if not expect:
                raise BugJsonError(f"{where}: {ctx}'expect' lists no lane")
            for lane, sig in expect.items():
                lctx = f"{ctx}expect.{lane}: "
                if lane not in LANES:
                    raise BugJsonError(f"{where}: {lctx}unknown lane (known: {', '.join(LANES)})")
                if not isinstance(sig, dict):
                    raise BugJsonError(f"{where}: {lctx}must be an object with 'type' and 'frame' or 'message'")
                need(sig, "type", str, lctx)
                if "frame" not in sig and "message" not in sig:
                    raise BugJsonError(f"{where}: {lctx}needs 'frame' (a function in the crash state) or 'message'")
                for key in ("frame", "message", "freed_by"):
                    if key in sig:
                        need(sig, key, str, lctx)
                if "freed_by" in sig and sig["type"] not in ("heap-use-after-free", "double-free"):
                    raise BugJsonError(f"{where}: {lctx}'freed_by' applies to heap-use-after-free and double-free "
                                       "(ASan's \"freed by thread\" stack)")
            env = item.get("env", {})
            if not isinstance(env, dict) or not all(
                    isinstance(k, str) and re.fullmatch(r"[A-Z][A-Z0-9_]*", k) and isinstance(v, str)
                    and "\0" not in v for k, v in env.items()):
                raise BugJsonError(f"{where}: {ctx}'env' must map variable names (A-Z, 0-9, _) to strings "
                                   "(without NUL)")
            if "LIFELINE_REINTRODUCE" in env:
                raise BugJsonError(f"{where}: {ctx}'env' must not set LIFELINE_REINTRODUCE (the check sets it)")
            plain = item.get("no_sanitizer")
            if plain is not None and (not isinstance(plain, str) or not plain.strip()):
                raise BugJsonError(f"{where}: {ctx}'no_sanitizer' must say, in a non-empty str, why the exported "
                                   "program runs clean in a build without sanitizers")
            reproducers.append(Reproducer(repro_dir / name, expect, env, export_signature(item, where, ctx), plain))
        return reproducers

    status = doc.get("status", "fixed")
    if status not in STATUSES:
        raise BugJsonError(f"{where}: 'status' must be one of {', '.join(STATUSES)}, not {json.dumps(status)}")
    if status == "upstream-fixed" and "reproducers" not in doc:
        if "upstream_variant" not in doc:
            raise BugJsonError(f"{where}: an upstream-fixed bug without reproducers of its own (fixed before the pinned "
                               "version) needs 'upstream_variant' (the patch that re-introduces it and its reproducers)")
        reproducers = []
    elif status == "not-a-bug" and "reproducers" not in doc:
        reproducers = []
    else:
        reproducers = load_reproducers(doc, "")
    if status == "fixed" and bug_id not in (known_bug_ids() if switches is None else switches):
        raise BugJsonError(f"{where}: id '{bug_id}' is no switch in core/bug_list.def; a fixed bug is "
                           "re-introduced by its switch (add it beside the fix), or give it an upstream status "
                           "(\"upstream-open\", ...)")
    if status in UPSTREAM_STATUSES:
        check_status(doc, status, where)
        check_mechanism_frames(reproducers, where, "")

    variant = None
    if "upstream_variant" in doc:
        v = need(doc, "upstream_variant", dict, "")
        ctx = "upstream_variant: "
        vtarget = need(v, "target", str, ctx)
        if not re.fullmatch(r"[a-z0-9_]+", vtarget):
            raise BugJsonError(f"{where}: {ctx}target '{vtarget}' is not a target name")
        source = need(v, "source", str, ctx)
        patch = need(v, "patch", str, ctx) if "patch" in v else None
        if patch is None and status == "upstream-fixed" and not reproducers:
            raise BugJsonError(f"{where}: {ctx}an upstream-fixed bug has no switch, so its variant needs 'patch'")
        # The path reaches CMake (`lifeline repro-plan`): plain characters only, so a lane always configures.
        if patch is None:
            pass
        elif not PLAIN_PATH.fullmatch(patch) or patch.startswith("/") or ".." in Path(patch).parts:
            raise BugJsonError(f"{where}: {ctx}patch '{patch}' must be a relative path inside {repro_dir} "
                               "(no '..'), of letters, digits and . _ / -")
        if patch is not None:
            check_patch(repro_dir, patch, where, ctx)
        variant = UpstreamVariant(vtarget, source, repro_dir / patch if patch else None,
                                  load_reproducers(v, "upstream_variant."))
        if status in UPSTREAM_STATUSES:
            check_mechanism_frames(variant.reproducers, where, "upstream_variant.")
        if status == "upstream-fixed" and not reproducers and vtarget != target:
            raise BugJsonError(f"{where}: an upstream-fixed bug's target is its variant's: 'target' is '{target}', "
                               f"upstream_variant.target '{vtarget}'")

    guard = None
    if "guard" in doc:
        guard = need(doc, "guard", str, "")
        # A finding fixed before the pinned version has reproducers only through its patched variant; its guard
        # steps around it on the versions that still have it (--ggml-source), and is checked on the patched build.
        patched_only = not reproducers and variant is not None and variant.patch is not None
        if status not in UPSTREAM_STATUSES or not (reproducers or patched_only):
            raise BugJsonError(f"{where}: 'guard' applies to findings in upstream code with reproducers (their own, or "
                               f"their patched upstream_variant's); this bug is '{status}'"
                               + (" (a fixed bug has a switch instead)" if status == "fixed" else ""))
        if guard not in known_guard_ids():
            raise BugJsonError(f"{where}: guard '{guard}' is not in core/guard_list.def (known: "
                               f"{', '.join(known_guard_ids())})")
    if "guard_notes" in doc:
        need(doc, "guard_notes", str, "")
        if guard is None:
            raise BugJsonError(f"{where}: 'guard_notes' describe a guard, and this bug names none ('guard')")
    return Bug(bug_id, title, target, reproducers, repro_dir, status, variant, guard)


PRIOR_ART_STATES = ("open", "closed", "merged")
_DATED = re.compile(r"\d{4}-\d{2}(-\d{2})?\b")


def check_prior_art_dates(item: dict, ctx: str) -> None:
    """A prior_art entry's state and its dates, each labelled by what it is (module docstring)."""
    for key in ("title", "state", "opened", "merged", "closed", "release", "as_of", "notes"):
        if key in item and not isinstance(item[key], str):
            raise BugJsonError(f"{ctx}'{key}' must be a str")
    if "date" in item:
        raise BugJsonError(f"{ctx}'date' does not say what it is the date of: write 'opened', 'merged' or 'closed'")
    state = item.get("state")
    if state is not None and state not in PRIOR_ART_STATES:
        raise BugJsonError(f"{ctx}state '{state}' is not one of {', '.join(PRIOR_ART_STATES)}")
    for key in ("opened", "closed"):
        if key in item and not _DATED.match(item[key]):
            raise BugJsonError(f"{ctx}'{key}' must begin with its date (YYYY-MM-DD or YYYY-MM), not '{item[key][:40]}'")
    merged = item.get("merged")
    if state == "merged" and merged is None:
        raise BugJsonError(f"{ctx}says merged without the date of the merge: give 'merged' (its date, a bound such as "
                           "'after YYYY-MM-DD', or 'not visible ...' saying what was checked)")
    if merged is not None and state != "merged":
        raise BugJsonError(f"{ctx}has a 'merged' date but its state is '{state}'")
    if merged is not None and not (_DATED.search(merged) or merged.startswith(("not visible", "date not visible"))):
        raise BugJsonError(f"{ctx}'merged' must hold a date, a bound with a date, or say 'not visible': '{merged[:40]}'")


def check_status(doc: dict, status: str, where: str) -> None:
    """A finding's status and what it must show for it (module docstring): the prior art, classified; the
    search behind "upstream-open"; the reference behind the others."""
    prior = doc.get("prior_art", [])
    if not isinstance(prior, list):
        raise BugJsonError(f"{where}: 'prior_art' must be a list of objects")
    relation = {}
    for i, item in enumerate(prior):
        ctx = f"prior_art[{i}]: "
        if not isinstance(item, dict):
            raise BugJsonError(f"{where}: {ctx}must be an object with 'url' and 'relation'")
        for key in ("url", "relation"):
            if not isinstance(item.get(key), str) or not item[key].strip():
                raise BugJsonError(f"{where}: {ctx}'{key}' must be a non-empty str")
        check_prior_art_dates(item, f"{where}: {ctx}")
        if item["relation"] not in RELATIONS:
            raise BugJsonError(f"{where}: {ctx}relation '{item['relation']}' is not one of {', '.join(RELATIONS)}")
        relation[item["url"]] = item["relation"]
    cited = set()
    for text in [u for u in doc.get("upstream", []) if isinstance(u, str)] + [doc.get("notes") or ""]:
        if isinstance(text, str):
            cited |= set(GITHUB_THREAD.findall(text))
    unclassified = sorted(u for u in cited if u not in relation)
    if unclassified:
        raise BugJsonError(f"{where}: cites {unclassified[0]} without saying what it is to this finding: list it in "
                           f"'prior_art' with a relation ({', '.join(RELATIONS)})")
    check_introduced_by(doc, where)
    same = sorted(u for u, r in relation.items() if r == "same-mechanism")
    fixes = sorted(u for u, r in relation.items() if r == "fix")
    if status == "upstream-open":
        if same or fixes:
            u = (same or fixes)[0]
            raise BugJsonError(f"{where}: status 'upstream-open' but it cites {u}, which "
                               + ("reports the same mechanism: the status is 'upstream-reported'" if same else
                                  "fixes it: the status is 'upstream-fixed'"))
        t = doc.get("triage")
        if not isinstance(t, dict) or not isinstance(t.get("date"), str) or not re.fullmatch(
                r"\d{4}-\d{2}-\d{2}", t["date"]) or not isinstance(t.get("searched"), list) or not t["searched"] \
                or not all(isinstance(x, str) and x.strip() for x in t["searched"]):
            raise BugJsonError(f"{where}: status 'upstream-open' says nobody upstream has reported it: 'triage' must "
                               "say when and where that was searched ({\"date\": \"YYYY-MM-DD\", \"searched\": [...]})")
    elif status == "upstream-reported" and not same:
        raise BugJsonError(f"{where}: status 'upstream-reported' needs the report: a 'prior_art' entry with relation "
                           "'same-mechanism'")
    elif status == "upstream-fixed" and not fixes:
        raise BugJsonError(f"{where}: status 'upstream-fixed' needs the fix: a 'prior_art' entry with relation 'fix'")
    elif status == "not-a-bug" and (not isinstance(doc.get("not_a_bug"), str) or not doc["not_a_bug"].strip()):
        raise BugJsonError(f"{where}: status 'not-a-bug' needs 'not_a_bug': why it is not one")


def check_introduced_by(doc: dict, where: str) -> None:
    """bug.json's "introduced_by" (module docstring): what `lifeline bisect --record` writes, and report.md quotes."""
    if "introduced_by" not in doc:
        return
    intro = doc["introduced_by"]
    sha = re.compile(r"[0-9a-f]{40}")
    if not isinstance(intro, dict) or sum(k in intro for k in ("commit", "before")) != 1:
        raise BugJsonError(f"{where}: 'introduced_by' must be an object with 'commit' (the first bad commit) or "
                           "'before' (the oldest commit the export builds against, where it already fails)")
    key = "commit" if "commit" in intro else "before"
    if not isinstance(intro[key], str) or not sha.fullmatch(intro[key]):
        raise BugJsonError(f"{where}: introduced_by.{key} must be a full 40-digit lower-case commit hash")
    for k in ("subject", "repo", "export"):
        if not isinstance(intro.get(k), str) or not intro[k].strip():
            raise BugJsonError(f"{where}: introduced_by.{k} must be a non-empty str")
    if not isinstance(intro.get("date"), str) or not re.fullmatch(r"\d{4}-\d{2}-\d{2}", intro["date"]):
        raise BugJsonError(f"{where}: introduced_by.date must be YYYY-MM-DD")
    rng = intro.get("range")
    if not isinstance(rng, list) or len(rng) != 2 or not all(isinstance(c, str) and sha.fullmatch(c) for c in rng):
        raise BugJsonError(f"{where}: introduced_by.range must be [GOOD, BAD], two full commit hashes")
    if "note" in intro and not isinstance(intro["note"], str):
        raise BugJsonError(f"{where}: introduced_by.note must be a str")
    if intro.get("found_by", "bisect") not in ("bisect", "history"):
        raise BugJsonError(f"{where}: introduced_by.found_by must be \"bisect\" (`lifeline bisect`, the default) or "
                           "\"history\" (read off upstream's history by hand: the note says how)")


def check_patch(repro_dir: Path, patch: str, where: str, ctx: str) -> None:
    """An upstream_variant's patch: a file in the folder, a unified diff whose files are plain relative paths."""
    if not (repro_dir / patch).is_file():
        raise BugJsonError(f"{where}: {ctx}patch file '{patch}' does not exist")
    try:
        diff = (repro_dir / patch).read_text(encoding="utf-8", errors="replace")
    except OSError as e:
        raise BugJsonError(f"{where}: {ctx}patch file '{patch}' cannot be read ({e.strerror})")
    # The build copies each file the patch touches out of the upstream tree (cmake/LifelineGgml.cmake).
    touched = re.findall(r"^\+\+\+ b/([^\t \n]+)", diff, re.M)
    if not touched:
        raise BugJsonError(f"{where}: {ctx}patch file '{patch}' has no '+++ b/<file>' line (a unified diff "
                           "against the upstream tree, applied with -p1)")
    for name in touched:
        if not PLAIN_PATH.fullmatch(name) or name.startswith("/") or ".." in Path(name).parts:
            raise BugJsonError(f"{where}: {ctx}patch file '{patch}' touches '{name}', not a plain relative "
                               "path (letters, digits, . _ / -; no '..')")


def export_signature(item: dict, where: str, ctx: str) -> Optional[dict]:
    """A reproducer's optional "export" signature (see the module docstring): {"type": TEXT} with "frame"
    and/or "message", each a non-empty string; raises BugJsonError naming the problem."""
    if "export" not in item:
        return None
    sig = item["export"]
    if not isinstance(sig, dict):
        raise BugJsonError(f"{where}: {ctx}'export' must be an object with 'type' and 'frame' or 'message'")
    for key in ("type", "frame", "message"):
        if key in sig and (not isinstance(sig[key], str) or not sig[key].strip()):
            raise BugJsonError(f"{where}: {ctx}export: '{key}' must be a non-empty str")
    if "type" not in sig:
        raise BugJsonError(f"{where}: {ctx}export: missing 'type'")
    if "frame" not in sig and "message" not in sig:
        raise BugJsonError(f"{where}: {ctx}export: needs 'frame' (a function in the crash state) or 'message'")
    unknown = sorted(set(sig) - {"type", "frame", "message"})
    if unknown:
        raise BugJsonError(f"{where}: {ctx}export: unknown key '{unknown[0]}' (known: type, frame, message)")
    return sig


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
