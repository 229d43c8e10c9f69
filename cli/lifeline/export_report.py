"""report.md, the report `lifeline export` writes beside a finding's exported files, in a maintainer's form
(render_report): title in upstream's words, the version upstream can check out, what the bug affects (runs_in),
its status, the first bad commit where `lifeline bisect` found it, the contract, what happens, the configurations
measured, the programs shipped beside the reproducers (shipped_programs), each reproducer with expected vs actual
and its short stack, how to build and run it, the fix direction, prior art and references."""
from __future__ import annotations

import re
import shlex
from pathlib import Path

from . import repro
from .export_source import PLAIN_NAME, Exporter, bug_json, code_lines, signature_for
from .export_stack import stack_excerpt
from .paths import ROOT
from .usage import UsageError


def _section(title: str, body) -> list:
    body = [body] if isinstance(body, str) else list(body)
    return [f"## {title}", ""] + body + [""]


# Where the code a finding's frames name runs, by the upstream function's prefix: "Affects" names that, not the
# backend the reproducer happens to run on (a gallocr bug is every backend's).
_RUNS_IN = (
    (re.compile(r"^(ggml_gallocr|ggml_dyn_tallocr|ggml_vbuffer|ggml_backend_alloc_ctx|ggml_tallocr)"),
     "ggml's graph allocator (ggml-alloc.c: ggml_gallocr), which every backend's graphs go through (directly, or "
     "through ggml_backend_sched); shown here on {shown}"),
    (re.compile(r"^ggml_vk_"), "ggml-vulkan (shown here on lavapipe, Mesa's CPU Vulkan device)"),
    (re.compile(r"^ggml_backend_sched"), "ggml_backend_sched (ggml-backend.cpp), with any set of backends; shown here "
     "on {shown}"),
    (re.compile(r"^(ggml_graph_nbytes|ggml_new_graph|ggml_graph_overhead|ggml_new_tensor|ggml_view)"),
     "ggml's core (ggml.c), which every backend uses; shown here on {shown}"),
)


def runs_in(doc: dict, exporter: Exporter, frames: list[str]) -> str:
    """"Affects"'s first words: bug.json report's "runs_in" where it says, else what the first upstream frame of
    the finding's stack is part of (_RUNS_IN), else the backend the exporter's programs run on."""
    r = doc.get("report") or {}
    if isinstance(r.get("runs_in"), str) and r["runs_in"].strip():
        return r["runs_in"]
    for frame in frames:
        for pattern, words in _RUNS_IN:
            if pattern.match(frame):
                return words.format(shown=exporter.upstream)
    return exporter.upstream


def _frames(rep: repro.Reproducer, exporter: Exporter, found) -> list[str]:
    if found is not None:
        return [f.strip() for f in found.signature.split("|", 1)[-1].split("/")]
    sig = signature_for(rep, exporter.lane) or {}
    return [sig["frame"]] if sig.get("frame") else []


def shipped_programs(bug: repro.Bug) -> list[tuple[str, Path, str]]:
    """bug.json report's "programs": files that show a claim the reproducers do not (a second trigger, a class's
    sweep and its table), each [{"file": NAME, "source": PATH?, "shows": TEXT}]: (name in the export, the file,
    what it shows). "source" is relative to the project's root (default: the finding's folder / NAME)."""
    out = []
    for i, p in enumerate((bug_json(bug).get("report") or {}).get("programs") or []):
        where = f"{bug.path / 'bug.json'}: report.programs[{i}]"
        if not isinstance(p, dict) or not isinstance(p.get("file"), str) or not PLAIN_NAME.fullmatch(p["file"]) \
                or not isinstance(p.get("shows"), str) or not p["shows"].strip():
            raise UsageError(f"{where} must be {{\"file\": NAME (letters, digits, . _ -), \"shows\": TEXT}}")
        src = ROOT / p["source"] if isinstance(p.get("source"), str) else bug.path / p["file"]
        if not src.is_file():
            raise UsageError(f"{where}: {src} does not exist")
        out.append((p["file"], src, p["shows"]))
    return out


def render_report(bug: repro.Bug, exporter: Exporter, rows: list) -> str:
    doc = bug_json(bug)
    r = doc.get("report") or {}
    md = [f"# {r.get('title') or bug.title}", ""]
    from .matrix import versions_line  # the committed matrix of real ggml versions (bench/results/matrix/)
    versions = versions_line(bug.id) if exporter.target.startswith("ggml_") else None
    md += [f"- **Version**: {exporter.version}.",
           f"- **Affects**: {runs_in(doc, exporter, [f for row in rows for f in _frames(row[0], exporter, row[5])])}"
           + (f"; {r['affects']}" if r.get("affects") else "")
           + (f"; by version, {versions}" if versions else "") + ".",
           f"- **Status here**: `{bug.status}`" + (f" ({doc['status_notes']})" if doc.get("status_notes") else "") + ".",
           f"- **Found by**: lifeline's fuzz target `{bug.target}` (finding `{bug.id}`)."]
    intro = doc.get("introduced_by")
    if isinstance(intro, dict) and intro.get("commit"):
        how = "read off the history by hand" if intro.get("found_by") == "history" else "`lifeline bisect`"
        md.append(f"- **First bad commit** ({how}, {intro.get('repo', 'upstream')}): {intro['commit'][:12]} "
                  f"\"{intro.get('subject', '')}\" ({intro.get('date', '')})."
                  + (f" {intro['note']}" if intro.get("note") else ""))
    elif isinstance(intro, dict) and intro.get("before"):
        md.append(f"- **Introduced**: before {intro.get('repo', 'upstream')} {intro['before'][:12]} "
                  f"\"{intro.get('subject', '')}\" ({intro.get('date', '')}), the oldest commit this reproducer builds "
                  f"against (`lifeline bisect`): it fails there already."
                  + (f" {intro['note']}" if intro.get("note") else ""))
    md.append("")
    if r.get("contract"):
        md += _section("The contract", f"> {r['contract']}")
    md += _section("What happens", doc.get("notes") or "(bug.json has no notes)")
    configs = r.get("configurations")
    if isinstance(configs, list) and configs:
        md += ["## Configurations", "", "| ggml build | what the reproducer gives |", "|---|---|"]
        md += [f"| {c.get('build', '')} | {c.get('result', '')} |" for c in configs if isinstance(c, dict)]
        md += [""] + ([r["configurations_notes"], ""] if r.get("configurations_notes") else [])
    shipped = shipped_programs(bug)
    if shipped:
        md += ["## Claims and the programs that show them", "",
               "Each reproducer below shows the title's claim. Beside them in this folder:", ""]
        md += [f"- `{name}`: {shows}" for name, _, shows in shipped] + [""]
    for rep, name, text, source, out, found, rc in rows:
        sig = signature_for(rep, exporter.lane)
        md += [f"## Reproducer `{name}` ({code_lines(text, exporter.language)} lines of code)", "", "```"
               + ("c" if exporter.language == "C" else "python"), text.rstrip(), "```", ""]
        if r.get("expected"):
            md += [f"Expected: {r['expected']}", ""]
        if found is not None:
            md += [f"Actual ({source}): `{found.signature}`", "", "```", stack_excerpt(out), "```", ""]
        elif exporter.language == "Python" and "AssertionError" in out:
            md += [f"Actual ({source}):", "", "```", stack_excerpt(out), "```", ""]
        elif sig:
            md += [f"Actual: fails with `{sig['type']}`" + (f" in `{sig['frame']}`" if sig.get("frame") else "")
                   + " (not run here: the exported program is not built).", ""]
        q = shlex.quote
        if exporter.build_help:
            md += [exporter.build_help.format(file=q(name), exe=q(Path(name).stem))]
        elif exporter.language == "C":
            exe = Path(name).stem
            env = "ASAN_OPTIONS=handle_abort=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:suppressions=ubsan.supp " \
                  "GGML_NO_BACKTRACE=1" + (" GGML_VK_VISIBLE_DEVICES=0" if exporter.extra.get("backend") == "vulkan" else "")
            md += ["Build and run, against ggml built with `-fsanitize=address,undefined` (e.g. `cmake -B build "
                   "-DCMAKE_C_FLAGS=-fsanitize=address,undefined -DCMAKE_CXX_FLAGS=-fsanitize=address,undefined`; for a "
                   "release build add `-DNDEBUG`; see Configurations):", "", "```sh",
                   exporter.build.format(file=q(name), exe=q(exe), include="$GGML/include", libdir="$GGML/build/src",
                                         cflags="").replace("  ", " "),
                   "echo 'pointer-overflow:ggml_graph_nbytes' > ubsan.supp  # ggml_graph_nbytes's report on every graph "
                   "build (finding ggml-graph-nbytes-null-offset)" if bug.id != "ggml-graph-nbytes-null-offset" else
                   "touch ubsan.supp",
                   f"{env} ./{q(exe)}", "```", "",
                   "(`handle_abort=1` gives an assert() or GGML_ABORT a sanitizer stack.)", ""]
        else:
            md += ["Run: `python3 " + q(name) + "` (exits 0 once fixed).", ""]
    if r.get("fix"):
        md += _section("Fix direction", r["fix"])
    prior = _prior_art_lines(doc)
    if prior:
        md += _section("Prior art and references", prior)
    md += [f"Generated by `lifeline export {bug.id}` from `repro/{bug.id}/`."]
    return "\n".join(md) + "\n"


def _prior_art_lines(doc: dict) -> list:
    """bug.json's prior_art (the upstream threads, each with how it relates), where the triage searched, and its
    plain references, as report.md's last section."""
    lines = []
    for x in doc.get("prior_art") or []:
        # Each date labelled with what it is; a merged entry with its merge and its first release where seen.
        what = ", ".join([str(x[k]) for k in ("relation", "state") if x.get(k)]
                         + [f"{k} {x[k]}" for k in ("opened", "merged", "closed") if x.get(k)]
                         + ([x["release"]] if x.get("release") else [])
                         + ([f"state as of {x['as_of']}"] if x.get("as_of") else []))
        title = f"\"{x['title']}\" " if x.get("title") else ""
        lines.append(f"- {x['url']} {title}({what})" + (f": {x['notes']}" if x.get("notes") else ""))
    triage = doc.get("triage") or {}
    if triage.get("searched"):
        lines += ["", f"Searched ({triage.get('date', 'undated')}):"] + [f"- {s}" for s in triage["searched"]]
    refs = [x for x in (doc.get("upstream") or []) if isinstance(x, str)]
    if refs:
        lines += ["", "References:"] + [f"- {x}" for x in refs]
    return lines
