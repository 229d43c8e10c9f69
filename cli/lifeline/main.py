"""The lifeline command line.

  lifeline test  [--lanes asan,tsan,...]            build every lane and run its ctest; summary table
  lifeline fuzz  [TARGET...] [--time S] [--jobs N] [--lane fuzz|tsan] [--engine libfuzzer|afl]
                 [--reintroduce ID] [--out DIR]     run fuzz jobs from the seed corpus; summary table
  lifeline triage CRASH... [--target T] [--reintroduce ID] [--json FILE] [--allow-upstream-open]
                                                    replay x3, classify, dedup, match known bugs
  lifeline promote CRASH --id ID [--target T]       minimize and write repro/<ID>/ with its bug.json
  lifeline reduce INPUT [--bug ID | --target T] [--lane L] [--variant upstream] [--out FILE | --in-place]
                                                    delta debugging on the decoded program (drop ops,
                                                    simplify operands) while the finding's signature holds
  lifeline report (--triage FILE | --summary FILE) [--format json|sarif|markdown] [--output FILE] [--source-root DIR]
                                                    triage results or a fuzz job's summary.json as JSON,
                                                    SARIF 2.1.0 (code scanning) or Markdown
  lifeline corpus merge TARGET DIR... [--into seeds|regression]
                                                    merge new inputs into corpus/<TARGET>/ or
                                                    corpus/regression/<TARGET>/ (-merge=1)
  lifeline coverage [TARGET...] [--corpus DIR...] [--inputs seeds,regression,repro] [--gaps] [--out DIR]
                                                    replay in the coverage lane; HTML report, per-file table
  lifeline coverage --states [TARGET...] [--corpus DIR...] [--check]
                                                    (operation, state) pairs reached vs. the model's lists
  lifeline list                                     targets, lanes, bug ids, reproducers
  lifeline classify FILE...                         crash type + state of saved reports (JSON)
  lifeline repro-check --repro-dir D --lane L --mode fixed|reintroduced|pinned|guarded [--variant upstream] --binary B
                                                    the reproducer test (run by ctest)
  lifeline expect-crash --type T --frame F|--message M -- CMD
                                                    CMD must fail with that crash (lane self-tests)
  lifeline export BUG_ID [--out DIR] [--configs [NAME,...]]    a finding in upstream code as short standalone reproducers on
                                                    upstream's public API (one file per input) and report.md
  lifeline bisect BUG_ID --upstream-repo DIR [--good REV] [--bad REV] [--input NAME] [--source FILE.c] [--record]
                                                    the first upstream commit where the finding's exported C
                                                    reproducer fails (git bisect run over a ggml checkout)
  lifeline matrix [--versions NAME,...] [--source DIR]... [--vulkan] [--llama | --llama-only] [--out DIR] [--check FILE]
                                                    build the ggml targets on real ggml versions, replay the corpora,
                                                    run every ggml finding: finding x version (--llama: also
                                                    llama.cpp's runtime, llama_memory_differential, fuzz lane)

  lifeline repro-plan --lane L [--repro-root DIR]   internal: the reproducer tests CMake registers for lane L
                                                    (see lifeline/plan.py); not listed by --help
  lifeline export-plan, export-source, export-check internal: the exported reproducers the asan lane builds and
                                                    checks (see lifeline/export.py); not listed by --help
  lifeline libfuzzer-flags TARGET                   internal: targets/TARGET.options as libFuzzer flags, one per
                                                    line (the fuzz-smoke tests run it; see lifeline/options.py)

Bad arguments give a one-line error and exit status 2. One module per verb: ctest.py (test), fuzz.py, coverage.py,
triage.py, promote.py (promote, corpus merge), reduce.py, report.py, inventory.py (list), classify.py (classify,
expect-crash), repro.py (repro-check), plan.py (repro-plan), export.py (export, export-plan, export-check),
bisect.py (bisect), matrix.py (matrix).
"""
from __future__ import annotations

import importlib
import sys

from . import repro
from .paths import LANES, ROOT
from .usage import Parser, UsageError

# Each verb's module and function, imported when the verb runs: ctest starts this CLI hundreds of times a suite
# (repro-check, expect-crash, libfuzzer-flags), and importing every verb's module (bisect's and export's above all)
# took 110 ms of each start's 140 (python3 -X importtime, 2026-11-28).
COMMANDS = {"test": ("ctest", "cmd_test"), "fuzz": ("fuzz", "cmd_fuzz"), "list": ("inventory", "cmd_list"),
            "classify": ("classify", "cmd_classify"), "repro-check": ("repro", "cmd_repro_check"),
            "expect-crash": ("classify", "cmd_expect_crash"), "triage": ("triage", "cmd_triage"),
            "promote": ("promote", "cmd_promote"), "report": ("report", "cmd_report"),
            "corpus": ("promote", "cmd_corpus"), "export": ("export", "cmd_export"),
            "coverage": ("coverage", "cmd_coverage"), "reduce": ("reduce", "cmd_reduce"),
            "bisect": ("bisect", "cmd_bisect"), "matrix": ("matrix", "cmd_matrix")}
# The verbs whose parsers their own modules add (reduce, bisect): built only when the command line may need them.
MODULE_PARSERS = ("reduce", "bisect")
# The internal verbs of export.py (add_internal_parsers).
EXPORT_INTERNAL = ("export-plan", "export-source", "export-check")


def _module(name: str):
    return importlib.import_module(f".{name}", __package__)


def _repro_plan_parser() -> Parser:
    """The internal verb `repro-plan` (cmake/LifelineTargets.cmake runs it): its own parser, so that the
    public commands' help and errors do not list it."""
    p = Parser(prog="lifeline repro-plan", description="the reproducer tests CMake registers for one lane")
    p.add_argument("--lane", required=True, choices=LANES)
    p.add_argument("--repro-root", default=str(ROOT / "repro"), help="the folder of reproducers (default repro/)")
    return p


def main(argv: list[str]) -> int:
    launcher = []
    if argv[:1] in (["expect-crash"], ["repro-check"]) and "--" in argv:
        # The command (expect-crash) or launcher (repro-check) to run; every other verb leaves `--` to
        # argparse, where it ends the options: `lifeline classify -- -report`.
        i = argv.index("--")
        argv, launcher = argv[:i], argv[i + 1:]
    # Another verb's command line never reaches reduce's or bisect's parser; help, errors and those two verbs do.
    every_parser = not argv or argv[0] not in COMMANDS or argv[0] in MODULE_PARSERS
    p = Parser(prog="lifeline", description="fuzzing and sanitizer regression harness")
    sub = p.add_subparsers(dest="command", parser_class=Parser)
    t = sub.add_parser("test", help="build every lane and run its ctest")
    t.add_argument("--lanes", help="comma-separated subset of " + ",".join(LANES))
    t.add_argument("--ggml-source", metavar="DIR", help="build and test this ggml checkout (ggml, or llama.cpp or "
                   "whisper.cpp with ggml/) instead of the pinned one")
    f = sub.add_parser("fuzz", help="run fuzz jobs from the seed corpus")
    f.add_argument("targets", nargs="*")
    f.add_argument("--time", type=int, default=30, help="seconds per target (default 30)")
    f.add_argument("--reintroduce", help="bug id to switch back on (LIFELINE_REINTRODUCE)")
    f.add_argument("--out", help="working corpus and artifacts (default fuzz-out/; fuzz-out-tsan/ for --lane tsan)")
    f.add_argument("--no-build", action="store_true", help="use the fuzz lane as built")
    f.add_argument("--jobs", type=int, default=1, help="libFuzzer workers per target: 1 (default) runs in-process and stops at the first crash; "
                   "N > 1 runs fork mode, which keeps each crash and goes on")
    f.add_argument("--lane", default="fuzz", help="the lane whose binaries fuzz: fuzz (libFuzzer + ASan+UBSan, "
                   "default) or tsan (libFuzzer + TSan, the targets that start threads)")
    f.add_argument("--engine", choices=("libfuzzer", "afl"), default="libfuzzer")
    f.add_argument("--ggml-source", metavar="DIR", help="build and fuzz this ggml checkout (ggml, or llama.cpp or "
                   "whisper.cpp with ggml/) instead of the pinned one")
    tr = sub.add_parser("triage", help="replay crashes, classify, dedup, match known bugs")
    tr.add_argument("crashes", nargs="+")
    tr.add_argument("--target", help="the target (default: from fuzz-out/<target>/artifacts/)")
    tr.add_argument("--reintroduce", help="bug id the crash was found with (default: from the fuzz job)")
    tr.add_argument("--lane", choices=LANES, help="whose binary replays (default: the lane of the crash's fuzz "
                    "job, else fuzz)")
    tr.add_argument("--json", help="write the results here (input to `lifeline report`)")
    tr.add_argument("--allow-upstream-open", action="store_true",
                    help="exit 0 only if every input reproduces a known upstream-open bug, else 1")
    pr = sub.add_parser("promote", help="minimize a crash and write repro/<id>/")
    pr.add_argument("crash")
    pr.add_argument("--id", required=True, help="the bug id (a switch in core/bug_list.def)")
    pr.add_argument("--target")
    pr.add_argument("--lanes", help="lanes the reproducer runs in (default asan; tsan for a crash of a tsan job)")
    pr.add_argument("--title")
    pr.add_argument("--runs", type=int, default=2000, help="minimization runs (default 2000)")
    if every_parser:
        _module("reduce").add_parser(sub)
    rp = sub.add_parser("report", help="triage results or a fuzz summary as JSON, SARIF 2.1.0 or Markdown")
    what = rp.add_mutually_exclusive_group(required=True)
    what.add_argument("--triage", metavar="FILE", help="the output of `lifeline triage --json FILE`")
    what.add_argument("--summary", metavar="FILE", help="the summary.json of `lifeline fuzz --out DIR`")
    rp.add_argument("--source-root", metavar="DIR", help="SARIF locations relative to this checkout (default: "
                    "lifeline's); with --summary, the checkout whose ggml tree the job built, e.g. llama.cpp's")
    rp.add_argument("--format", choices=("json", "sarif", "markdown"), default="markdown")
    rp.add_argument("--output")
    co = sub.add_parser("corpus", help="corpus maintenance: merge")
    co.add_argument("action")
    co.add_argument("target")
    co.add_argument("dirs", nargs="+")
    co.add_argument("--into", choices=("seeds", "regression"), default="seeds",
                    help="merge into corpus/<target>/ (seeds, default) or corpus/regression/<target>/")
    cv = sub.add_parser("coverage", help="replay inputs in the coverage lane; HTML report and per-file table")
    cv.add_argument("targets", nargs="*", metavar="TARGET", help="default: every target the coverage lane builds")
    cv.add_argument("--corpus", action="append", metavar="DIR",
                    help="more inputs: a working corpus (one target) or a `lifeline fuzz --out` folder; repeatable")
    cv.add_argument("--inputs", help="the project's input sets to replay, comma-separated: seeds, regression, "
                    "repro (default: all three)")
    cv.add_argument("--out", help="where to write (default coverage-out/)")
    cv.add_argument("--gaps", action="store_true", help="list the functions and branches nothing reached, per file")
    cv.add_argument("--no-build", action="store_true", help="use the coverage lane (asan lane with --states) as built")
    cv.add_argument("--states", action="store_true",
                    help="the (operation, state) pairs the inputs reach against the model's golden lists "
                         "(harness/programs/*/states*.txt), decoded by the asan lane's binaries; default inputs: "
                         "seeds,regression")
    cv.add_argument("--check", action="store_true",
                    help="with --states: also fail when the lists' gap marks are stale (the unit.states test)")
    cv.add_argument("--build-dir", metavar="DIR", help="with --states: the build folder whose targets decode "
                    "(default build/asan, built first unless --no-build)")
    m = sub.add_parser("matrix", help="the ggml targets and findings on real ggml versions (scripts/ggml-versions.txt)")
    m.add_argument("--versions", help="comma-separated names of scripts/ggml-versions.txt (default: all of them)")
    m.add_argument("--source", action="append", metavar="DIR", help="a ggml checkout of your own as one more version "
                   "(ggml, or llama.cpp or whisper.cpp with ggml/); repeatable")
    m.add_argument("--vulkan", action="store_true", help="also ggml_vulkan_graph_topology (its shaders per version)")
    ml = m.add_mutually_exclusive_group()
    ml.add_argument("--llama", action="store_true", help="also llama_memory_differential and its findings (the fuzz "
                    "lane in build/llama-matrix/<name>, against the llama.cpp checkout holding the version's ggml; "
                    "minutes of build per version)")
    ml.add_argument("--llama-only", action="store_true", help="only llama_memory_differential and its findings")
    m.add_argument("--out", help="where to write matrix.json, matrix.md and matrix.log (default matrix-out/)")
    m.add_argument("--check", metavar="FILE", help="fail when a finding's result or a corpus crash differs from "
                   "this committed matrix.json")
    sub.add_parser("list", help="targets, lanes, bug ids, reproducers")
    c = sub.add_parser("classify", help="crash type and state of saved reports")
    c.add_argument("files", nargs="+")
    r = sub.add_parser("repro-check", help="two-way reproducer test (ctest runs this)")
    r.add_argument("--repro-dir", required=True)
    r.add_argument("--validate-only", action="store_true")
    r.add_argument("--lane", choices=LANES)
    r.add_argument("--mode", choices=repro.MODES,
                   help="fixed, reintroduced, pinned (status upstream-open: the pinned upstream still fails, with "
                        "the bug's guard off) or guarded (clean with every guard on)")
    r.add_argument("--variant", choices=repro.VARIANTS,
                   help="check the bug.json's upstream_variant: --binary is the target built against upstream "
                        "(fixed: unpatched, reintroduced: with its patch)")
    r.add_argument("--binary")
    r.add_argument("--other-source", help="(--mode pinned) the target was built from this upstream source, not the "
                   "pinned one: an input that runs clean is reported as not reproduced there (exit 77), not as a failure")
    x = sub.add_parser("export", help="an upstream-open finding as standalone reproducers and a report")
    x.add_argument("bug_id", metavar="BUG_ID")
    x.add_argument("--out", help="where to write (default export-out/<BUG_ID>/)")
    x.add_argument("--configs", nargs="?", const="all", metavar="NAME,...",
                   help="also build ggml with asserts and -DNDEBUG, with and without OpenMP, and without sanitizers "
                   "(plain), run each C reproducer in each, and record what each gave in bug.json's report (NAME,...: "
                   "only these of asserts, ndebug, asserts-openmp, ndebug-openmp, plain; the other rows are kept)")
    if every_parser:
        _module("bisect").add_parser(sub)
    e = sub.add_parser("expect-crash", help="run a command that must fail with a given crash type and frame")
    e.add_argument("--type", required=True)
    e.add_argument("--frame", help="a function that must be in the crash state")
    e.add_argument("--message", help="text the check or UBSan message must contain")
    try:
        if argv[:1] == ["repro-plan"]:
            return _module("plan").cmd_repro_plan(_repro_plan_parser().parse_args(argv[1:]))
        if argv[:1] == ["libfuzzer-flags"]:
            return _module("options").cmd_libfuzzer_flags(argv[1:])
        if argv[:1] and argv[0] in EXPORT_INTERNAL:
            parser, run = _module("export").add_internal_parsers(Parser)[argv[0]]
            return run(parser.parse_args(argv[1:]))
        args = p.parse_args(argv)
        args.launcher = launcher
        if args.command is None:
            raise UsageError("lifeline: a command is required (test, fuzz, coverage, triage, promote, reduce, report, "
                             "corpus, list, classify, repro-check, export, bisect, matrix)")
        if getattr(args, "reintroduce", None):
            from .bugs import known_bug_ids
            if args.reintroduce not in known_bug_ids():
                raise UsageError(f"lifeline {args.command}: unknown bug id '{args.reintroduce}'; see `lifeline list`")
        module, function = COMMANDS[args.command]
        return getattr(_module(module), function)(args)
    except UsageError as e:
        print(str(e), file=sys.stderr)
        return 2
