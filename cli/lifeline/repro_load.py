"""repro/<bug-id>/bug.json: loading and validation, into a Bug (repro_model.py); the two-way check that runs its
reproducers is repro.py's, and a finding's status is checked by repro_status.py.

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

import json
import re
from pathlib import Path
from typing import Optional

from .bugs import BUG_ID, known_bug_ids, known_guard_ids
from .paths import LANES
from .repro_model import STATUSES, UPSTREAM_STATUSES, Bug, BugJsonError, Reproducer, UpstreamVariant
from .repro_status import check_status

PLAIN_PATH = re.compile(r"[A-Za-z0-9._/-]+")


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
