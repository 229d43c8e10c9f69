"""The replay driver's contract and the CLI's handling of bad arguments, run against the built binaries
of the lane named by LIFELINE_BUILD_DIR."""
import json
import os
import shutil
import sys
import subprocess
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("LIFELINE_BUILD_DIR", ROOT / "build" / "asan"))
PROBE = BUILD / "tests" / "replay_probe"
CLI = [str(ROOT / "lifeline")]


def run(cmd):
    p = subprocess.run([str(c) for c in cmd], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       errors="replace")
    return p.returncode, p.stdout


class ReplayDriver(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        assert PROBE.is_file(), f"{PROBE} is not built (set LIFELINE_BUILD_DIR to a built lane)"

    def test_no_inputs_is_an_error(self):
        rc, out = run([PROBE])
        self.assertEqual(rc, 2)
        self.assertIn("no inputs given", out)

    def test_missing_path_is_named(self):
        rc, out = run([PROBE, "/nonexistent/input"])
        self.assertEqual(rc, 2)
        self.assertIn("'/nonexistent/input' is not a file or directory", out)

    def test_empty_directory_is_an_error(self):
        with tempfile.TemporaryDirectory() as d:
            rc, out = run([PROBE, d])
            self.assertEqual(rc, 2)
            self.assertIn("holds no input files", out)

    def test_libfuzzer_flags_are_refused(self):
        rc, out = run([PROBE, "-runs=10"])
        self.assertEqual(rc, 2)
        self.assertIn("unknown option '-runs=10'", out)

    def test_directory_inputs_run_in_name_order(self):
        with tempfile.TemporaryDirectory() as d:
            for name, size in (("b", 2), ("a", 1), ("c", 3)):
                Path(d, name).write_bytes(b"x" * size)
            rc, out = run([PROBE, d])
            self.assertEqual(rc, 0, out)
            self.assertEqual([l for l in out.splitlines() if l.startswith("probe:")],
                             ["probe: 1", "probe: 2", "probe: 3"])
            self.assertIn("3 input(s) ran", out)

    def test_each_input_is_an_exactly_sized_heap_copy(self):
        # The probe reads data[size] for inputs starting with 'O': one byte past an exact-size copy.
        with tempfile.NamedTemporaryFile() as f:
            f.write(b"O123")
            f.flush()
            rc, out = run([PROBE, f.name])
            self.assertNotEqual(rc, 0)
            self.assertIn("heap-buffer-overflow", out)


class CliArguments(unittest.TestCase):
    def assertUsageError(self, args, text):
        rc, out = run(CLI + args)
        self.assertEqual(rc, 2, out)
        self.assertIn(text, out)
        self.assertEqual(len(out.strip().splitlines()), 1, out)

    def test_unknown_command(self):
        self.assertUsageError(["frobnicate"], "invalid choice: 'frobnicate'")

    def test_unknown_target(self):
        self.assertUsageError(["fuzz", "no_such_target", "--no-build"], "unknown target 'no_such_target'")

    def test_unknown_bug_id(self):
        self.assertUsageError(["fuzz", "--reintroduce", "no-such-bug", "--no-build"], "unknown bug id 'no-such-bug'")

    def test_bad_time(self):
        self.assertUsageError(["fuzz", "--time", "0", "--no-build"], "--time must be a positive")

    def test_unknown_lane(self):
        self.assertUsageError(["test", "--lanes", "asan,msan"], "unknown lane 'msan'")

    def test_missing_report_file(self):
        self.assertUsageError(["classify", "/nonexistent/report"], "'/nonexistent/report' does not exist")

    def test_fuzz_lane_without_engine(self):
        self.assertUsageError(["fuzz", "--lane", "asan", "--no-build"], "lane 'asan' links no fuzzing engine")

    def test_fuzz_bad_jobs(self):
        self.assertUsageError(["fuzz", "--jobs", "0", "--no-build"], "--jobs must be at least 1")

    def test_fuzz_unknown_engine(self):
        self.assertUsageError(["fuzz", "--engine", "honggfuzz", "--no-build"], "invalid choice: 'honggfuzz'")

    def test_triage_missing_crash_file(self):
        self.assertUsageError(["triage", "/nonexistent/crash-1"], "crash file '/nonexistent/crash-1' does not exist")

    def test_triage_needs_a_target_outside_fuzz_out(self):
        with tempfile.NamedTemporaryFile() as f:
            self.assertUsageError(["triage", f.name], "give --target")

    def test_triage_unknown_target(self):
        with tempfile.NamedTemporaryFile() as f:
            self.assertUsageError(["triage", f.name, "--target", "nope"], "unknown target 'nope'")

    def test_promote_unknown_switch(self):
        with tempfile.NamedTemporaryFile() as f:
            self.assertUsageError(["promote", f.name, "--id", "new-thing"], "no switch named 'new-thing'")

    def test_promote_bad_id(self):
        with tempfile.NamedTemporaryFile() as f:
            self.assertUsageError(["promote", f.name, "--id", "Bad_Id"], "'Bad_Id' is not a bug id")

    def test_promote_existing_reproducer(self):
        with tempfile.NamedTemporaryFile() as f:
            self.assertUsageError(["promote", f.name, "--id", "wasm-lang-dangling"], "already exists")

    def test_report_missing_triage(self):
        self.assertUsageError(["report", "--triage", "/nonexistent.json"], "do not exist")

    def test_report_corrupt_triage(self):
        with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
            f.write("{not json")
            f.flush()
            self.assertUsageError(["report", "--triage", f.name], "is not triage output")

    def test_corpus_unknown_action_and_target(self):
        self.assertUsageError(["corpus", "split", "alloc_graph_topology", "/tmp"], "unknown action 'split'")
        self.assertUsageError(["corpus", "merge", "nope", "/tmp"], "unknown target 'nope'")
        self.assertUsageError(["corpus", "merge", "alloc_graph_topology", "/nonexistent"], "is not a directory")


class Reports(unittest.TestCase):
    """SARIF and Markdown from triage results (no binaries needed)."""

    def setUp(self):
        sys.path.insert(0, str(ROOT / "cli"))
        from lifeline import promote, report, triage
        self.triage = triage
        self.report = report
        self.promote = promote
        crash = {"type": "heap-use-after-free", "state": ["lifeline::interop::BufferView::Element", "b", "c"],
                 "message": None, "location": str(ROOT / "layers/interop/dlpack_consumer.cc") + ":120:7"}
        self.results = [
            triage.Result("fuzz-out/t/artifacts/crash-1", "t", None, "heap-use-after-free | a / b / c", crash,
                          ["s", "s", "s"], False, None),
            triage.Result("fuzz-out/t/artifacts/crash-2", "t", None, "heap-use-after-free | a / b / c", crash,
                          ["s", "s", "s"], False, None, "fuzz-out/t/artifacts/crash-1"),
            triage.Result("fuzz-out/t/artifacts/crash-3", "t", None),
        ]

    def test_sarif_has_one_result_per_distinct_crash_with_a_location(self):
        doc = self.report.sarif(self.results, ROOT)
        self.assertEqual(doc["version"], "2.1.0")
        run = doc["runs"][0]
        self.assertEqual([r["id"] for r in run["tool"]["driver"]["rules"]], ["lifeline/heap-use-after-free"])
        self.assertEqual(len(run["results"]), 1)
        loc = run["results"][0]["locations"][0]["physicalLocation"]
        self.assertEqual(loc["artifactLocation"]["uri"], "layers/interop/dlpack_consumer.cc")
        self.assertEqual(loc["region"], {"startLine": 120, "startColumn": 7})

    def test_markdown_counts_distinct_and_new(self):
        md = self.report.markdown(self.results)
        self.assertIn("3 input(s), 1 distinct crash(es), 1 new.", md)
        self.assertIn("| `crash-2` | t | new | heap-use-after-free | a / b / c | no | crash-1 |", md)

    def test_bug_json_signature_drops_ids_and_counts(self):
        sig = self.promote.signature_for_bug_json(
            {"type": "lifeline-check", "state": ["f"],
             "message": "op 3 (destroy s0): accounting oracle (bytes): backing memory outlives its wrappers: 1 VkBuffer"})
        self.assertEqual(sig, {"type": "lifeline-check",
                               "message": "accounting oracle (bytes): backing memory outlives its wrappers"})
        self.assertEqual(self.promote.signature_for_bug_json({"type": "data-race", "state": ["g", "h"]}),
                         {"type": "data-race", "frame": "g"})


# ---- upstream-open bugs, upstream variants, skipped tests: the CLI on a scratch project ---------------------
#
# A copy of cli/ in a temporary project root whose "fuzz target" is a script: each input's first word
# says what it does when replayed, and run with libFuzzer's -artifact_prefix= it writes the artifacts listed
# in fake-artifacts.json beside it. Nothing here needs a built lane.

PY = "/usr/bin/python3"

FAKE_TARGET = r"""#!/usr/bin/python3
import json, os, sys

ASSERT = '''fake_target: /x/ggml/src/ggml-alloc.c:975: ggml_gallocr_init_tensor: Assertion `tensor_alloc->addr.offset == SIZE_MAX' failed.
==77== ERROR: libFuzzer: deadly signal
    #0 0x560001 in __sanitizer_print_stack_trace (/b/fake_target+0xe9d01)
    #1 0x560002 in fuzzer::PrintStackTrace() (/b/fake_target+0x5c658)
    #2 0x7f0003  (/lib/x86_64-linux-gnu/libc.so.6+0x3c04f)
    #3 0x7f0004 in raise signal/../sysdeps/posix/raise.c:26:13
    #4 0x7f0005 in abort stdlib/abort.c:79:7
    #5 0x7f0006 in __assert_fail assert/assert.c:103:3
    #6 0x560007 in ggml_gallocr_init_tensor /x/ggml/src/ggml-alloc.c:975:13
    #7 0x560008 in ggml_gallocr_alloc_graph /x/ggml/src/ggml-alloc.c:1081:9
'''
UAF = '''==77==ERROR: AddressSanitizer: heap-use-after-free on address 0x602000000010 at pc 0x560001 bp 0x7ffd sp 0x7ffd
READ of size 1 at 0x602000000010 thread T0
    #0 0x560001 in lifeline::fake::FakeUse(int) /w/fake.cc:12:5
    #1 0x560002 in LLVMFuzzerTestOneInput /w/fake.cc:30:3
'''

def crash(report):
    sys.stderr.write(report)
    sys.exit(1)

args = sys.argv[1:]
prefix = next((a.split("=", 1)[1] for a in args if a.startswith("-artifact_prefix=")), None)
if prefix is not None:
    here = os.path.dirname(os.path.abspath(__file__))
    json.dump(args, open(os.path.join(here, "fake-argv.json"), "w"))
    arts = json.load(open(os.path.join(here, "fake-artifacts.json")))
    print("#2\tINITED cov: 3 ft: 3 corp: 1/1b exec/s: 0 rss: 30Mb", flush=True)
    for name, word in arts.items():
        with open(prefix + name, "w") as f:
            f.write(word)
    print("stat::number_of_executed_units: 42")
    sys.exit(1 if arts else 0)

switch = os.environ.get("LIFELINE_REINTRODUCE")
words = open(args[-1]).read().split()
word = words[0] if words else ""
if word == "patched-assert":  # an upstream build: no switches; crashes only when built with the patch
    if switch:
        print("fake_target: this upstream build has no switch " + switch)
        sys.exit(2)
    if os.path.basename(sys.argv[0]).endswith("_patched"):
        crash(ASSERT)
    sys.exit(0)
if switch and switch != "fake-fixed-bug":
    print("fake_target: unknown bug id " + switch)
    sys.exit(2)
if word == "assert":
    crash(ASSERT)
if word == "uaf" or (word == "switch-uaf" and switch == "fake-fixed-bug"):
    crash(UAF)
if word == "other":
    crash(UAF.replace("FakeUse", "OtherUse"))
if word == "silent":
    sys.exit(1)
if word == "flaky":  # the assert on every other run
    count = args[-1] + ".runs"
    n = int(open(count).read()) + 1 if os.path.exists(count) else 1
    open(count, "w").write(str(n))
    if n % 2:
        crash(ASSERT)
sys.exit(0)
"""

ASSERT_SIG = {"type": "assert", "frame": "ggml_gallocr_init_tensor"}
UAF_SIG = {"type": "heap-use-after-free", "frame": "FakeUse"}


def write_bug(d: Path, doc: dict, files: dict) -> Path:
    d.mkdir(parents=True)
    for name, text in files.items():
        (d / name).write_text(text)
    (d / "bug.json").write_text(json.dumps(dict({"id": d.name, "title": "t", "upstream": []}, **doc)))
    return d


class ScratchProject(unittest.TestCase):
    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp())
        self.root = self.tmp / "root"
        shutil.copytree(ROOT / "cli", self.root / "cli",
                        ignore=shutil.ignore_patterns("__pycache__"))
        (self.root / "core").mkdir()
        (self.root / "core" / "bug_list.def").write_text('LIFELINE_BUG(kFakeFixedBug, "fake-fixed-bug")\n')
        (self.root / "targets").mkdir()
        (self.root / "targets" / "fake_target.cc").write_text("")
        self.fake = self.install_fake(self.root / "build" / "fuzz" / "targets" / "fake_target")
        self.unpatched = self.install_fake(self.root / "build" / "asan" / "upstream" / "fake_target_upstream")
        self.patched = self.install_fake(self.root / "build" / "asan" / "upstream" / "fake_target_upstream_patched")
        self.artifacts({})
        self.upstream_open = write_bug(self.root / "repro" / "fake-upstream-open", {
            "status": "upstream-open", "target": "fake_target",
            "reproducers": [{"input": "in", "expect": {"asan": ASSERT_SIG, "fuzz": ASSERT_SIG}}]}, {"in": "assert"})
        # A fixed bug forward-ported into upstream: its variant's expectation (an assert) must not make triage
        # call the upstream-open assert a known fixed bug.
        self.fixed = write_bug(self.root / "repro" / "fake-fixed-bug", {
            "target": "fake_target",
            "reproducers": [{"input": "in", "expect": {"asan": UAF_SIG}}],
            "upstream_variant": {"target": "fake_target_upstream", "source": "ggml 0.25.1",
                                 "patch": "reintroduce.patch",
                                 "reproducers": [{"input": "variant-in", "expect": {"asan": ASSERT_SIG}}]}},
            {"in": "switch-uaf", "variant-in": "patched-assert", "reintroduce.patch": "--- a\n+++ b\n"})

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def install_fake(self, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(FAKE_TARGET)
        path.chmod(0o755)
        return path

    def artifacts(self, arts: dict):
        (self.fake.parent / "fake-artifacts.json").write_text(json.dumps(arts))

    def cli(self, *args):
        return run([PY, self.root / "cli" / "lifeline_main.py", *args])

    def input(self, word: str, name: str = None) -> Path:
        d = self.tmp / "inputs"
        d.mkdir(exist_ok=True)
        p = d / (name or f"crash-{word}")
        p.write_text(word)
        return p

    # ---- list / repro-check

    def test_list_shows_status_and_variant(self):
        rc, out = self.cli("list")
        self.assertEqual(rc, 0, out)
        self.assertRegex(out, r"reproducer: fake-upstream-open .* status=upstream-open\n")
        self.assertRegex(out, r"reproducer: fake-fixed-bug .* status=fixed  upstream variant: fake_target_upstream\n")

    def test_validate_only_names_status_and_variant(self):
        rc, out = self.cli("repro-check", "--validate-only", "--repro-dir", self.upstream_open)
        self.assertEqual(rc, 0, out)
        self.assertIn("valid (1 reproducer(s); status upstream-open)", out)
        rc, out = self.cli("repro-check", "--validate-only", "--repro-dir", self.fixed)
        self.assertIn("valid (1 reproducer(s); upstream variant fake_target_upstream: 1 reproducer(s))", out)

    def check(self, bug, mode, binary, *extra, lane="asan"):
        return self.cli("repro-check", "--repro-dir", bug, "--lane", lane, "--mode", mode, "--binary", binary, *extra)

    def test_pinned_passes_while_the_pinned_upstream_reproduces(self):
        rc, out = self.check(self.upstream_open, "pinned", self.fake)
        self.assertEqual(rc, 0, out)
        self.assertIn("PASS in: assert | ggml_gallocr_init_tensor / ggml_gallocr_alloc_graph", out)

    def test_pinned_fails_when_the_pinned_upstream_no_longer_reproduces(self):
        gone = write_bug(self.tmp / "elsewhere" / "fake-gone-upstream", {
            "status": "upstream-open", "target": "fake_target",
            "reproducers": [{"input": "in", "expect": {"asan": ASSERT_SIG}}]}, {"in": "clean"})
        rc, out = self.check(gone, "pinned", self.fake)
        self.assertEqual(rc, 1, out)
        self.assertIn("FAIL in: the pinned upstream no longer reproduces it", out)
        self.assertIn("a version bump may have fixed it: revisit status 'upstream-open'", out)

    def test_pinned_fails_on_another_crash(self):
        other = write_bug(self.tmp / "elsewhere" / "fake-other-crash", {
            "status": "upstream-open", "target": "fake_target",
            "reproducers": [{"input": "in", "expect": {"asan": ASSERT_SIG}}]}, {"in": "uaf"})
        rc, out = self.check(other, "pinned", self.fake)
        self.assertEqual(rc, 1, out)
        self.assertIn("the pinned upstream must still give", out)
        self.assertIn("crash type is 'heap-use-after-free', expected 'assert'", out)

    def test_pinned_on_a_lane_no_input_lists(self):
        rc, out = self.check(self.upstream_open, "pinned", self.fake, lane="tsan")
        self.assertEqual(rc, 1, out)
        self.assertIn("no reproducer lists lane 'tsan'", out)

    def test_fixed_and_reintroduced_refuse_an_upstream_open_bug(self):
        for mode in ("fixed", "reintroduced"):
            with self.subTest(mode=mode):
                rc, out = self.check(self.upstream_open, mode, self.fake)
                self.assertEqual(rc, 1, out)
                self.assertIn("FAIL fake-upstream-open: status is 'upstream-open'", out)
                self.assertIn(f"no '{mode}' run; check it with --mode pinned", out)

    def test_pinned_refuses_a_fixed_bug(self):
        rc, out = self.check(self.fixed, "pinned", self.fake)
        self.assertEqual(rc, 1, out)
        self.assertIn("--mode pinned applies to bugs with status 'upstream-open'; this one is 'fixed'", out)

    def test_fixed_bug_two_way_test_is_unchanged(self):
        rc, out = self.check(self.fixed, "fixed", self.fake)
        self.assertEqual(rc, 0, out)
        self.assertIn("PASS in: clean on the fixed code", out)
        rc, out = self.check(self.fixed, "reintroduced", self.fake)
        self.assertEqual(rc, 0, out)
        self.assertIn("PASS in: heap-use-after-free | lifeline::fake::FakeUse", out)

    def test_variant_fixed_is_clean_on_the_unpatched_upstream(self):
        rc, out = self.check(self.fixed, "fixed", self.unpatched, "--variant", "upstream")
        self.assertEqual(rc, 0, out)
        self.assertIn("PASS variant-in: clean on the unpatched upstream build", out)
        rc, out = self.check(self.fixed, "fixed", self.patched, "--variant", "upstream")
        self.assertEqual(rc, 1, out)
        self.assertIn("FAIL variant-in: the unpatched upstream build reported assert | ggml_gallocr_init_tensor", out)

    def test_variant_reintroduced_fails_on_the_patched_build_without_a_switch(self):
        # The fake upstream build exits 2 if LIFELINE_REINTRODUCE is set at all.
        rc, out = self.check(self.fixed, "reintroduced", self.patched, "--variant", "upstream")
        self.assertEqual(rc, 0, out)
        self.assertIn("PASS variant-in: assert | ggml_gallocr_init_tensor", out)
        rc, out = self.check(self.fixed, "reintroduced", self.unpatched, "--variant", "upstream")
        self.assertEqual(rc, 1, out)
        self.assertIn("FAIL variant-in: the patched upstream build (reintroduce.patch) must give", out)

    def test_variant_needs_an_upstream_variant(self):
        rc, out = self.check(self.upstream_open, "fixed", self.unpatched, "--variant", "upstream")
        self.assertEqual(rc, 1, out)
        self.assertIn("FAIL fake-upstream-open: --variant upstream needs an 'upstream_variant'", out)
        self.assertIn("which has none", out)

    def test_variant_has_no_pinned_mode(self):
        rc, out = self.check(self.fixed, "pinned", self.unpatched, "--variant", "upstream")
        self.assertEqual(rc, 1, out)
        self.assertIn("--mode pinned checks an upstream-open bug", out)

    def test_variant_binary_missing(self):
        rc, out = self.check(self.fixed, "fixed", self.tmp / "nope", "--variant", "upstream")
        self.assertEqual(rc, 1, out)
        self.assertIn("is the upstream variant 'fake_target_upstream' built in this lane?", out)

    def test_bad_mode_and_variant_are_usage_errors(self):
        for args, text in ((["--mode", "open"], "invalid choice: 'open'"),
                           (["--mode", "fixed", "--variant", "downstream"], "invalid choice: 'downstream'")):
            with self.subTest(args=args):
                rc, out = self.cli("repro-check", "--repro-dir", self.fixed, "--lane", "asan", "--binary",
                                   self.fake, *args)
                self.assertEqual(rc, 2, out)
                self.assertIn(text, out)
                self.assertEqual(len(out.strip().splitlines()), 1, out)

    # ---- triage

    def test_triage_names_upstream_open_bugs(self):
        report = self.tmp / "triage.json"
        rc, out = self.cli("triage", self.input("assert"), self.input("other"), "--target", "fake_target",
                           "--json", report)
        self.assertEqual(rc, 0, out)  # without --allow-upstream-open triage reports, it does not judge
        self.assertRegex(out, r"upstream-open: fake-upstream-open\s+no\s+crash-assert\s+assert \| ggml_gallocr_init_tensor")
        self.assertRegex(out, r"\nnew\s+no\s+crash-other\s+heap-use-after-free \| lifeline::fake::OtherUse")
        self.assertIn("2 input(s), 2 distinct crash(es), 1 new, 1 upstream-open", out)
        rows = {Path(r["input"]).name: r for r in json.loads(report.read_text())}
        self.assertEqual((rows["crash-assert"]["status"], rows["crash-assert"]["known"]),
                         ("upstream-open", "fake-upstream-open"))
        self.assertEqual(rows["crash-other"]["status"], "new")
        rc, md = self.cli("report", "--triage", report, "--format", "markdown")
        self.assertEqual(rc, 0, md)
        self.assertIn("| `crash-assert` | fake_target | upstream-open: fake-upstream-open | assert |", md)
        self.assertIn("2 input(s), 2 distinct crash(es), 1 new, 1 upstream-open.", md)
        rc, sarif = self.cli("report", "--triage", report, "--format", "sarif")
        self.assertEqual(rc, 0, sarif)
        results = json.loads(sarif)["runs"][0]["results"]
        texts = sorted(r["message"]["text"] for r in results)
        self.assertTrue(any("upstream-open bug fake-upstream-open" in t for t in texts), texts)
        self.assertEqual(sorted(r["properties"]["status"] for r in results), ["new", "upstream-open"])

    def test_triage_known_fixed_bug_stays_known(self):
        rc, out = self.cli("triage", self.input("switch-uaf"), "--target", "fake_target",
                           "--reintroduce", "fake-fixed-bug")
        self.assertEqual(rc, 0, out)
        self.assertIn("known: fake-fixed-bug", out)

    def test_allow_upstream_open_passes_when_every_input_is_one(self):
        rc, out = self.cli("triage", self.input("assert"), self.input("assert", "crash-again"),
                           "--target", "fake_target", "--allow-upstream-open")
        self.assertEqual(rc, 0, out)
        self.assertIn("every input reproduces an upstream-open bug: fake-upstream-open", out)

    def test_allow_upstream_open_names_every_other_input(self):
        rc, out = self.cli("triage", self.input("assert"), self.input("other"), self.input("clean"),
                           self.input("switch-uaf"), "--target", "fake_target", "--reintroduce", "fake-fixed-bug",
                           "--allow-upstream-open")
        self.assertEqual(rc, 1, out)
        self.assertIn("--allow-upstream-open: 3 of 4 input(s) are not a known upstream-open bug:", out)
        self.assertIn(f"{self.input('other')}: new: heap-use-after-free | lifeline::fake::OtherUse", out)
        self.assertIn(f"{self.input('clean')}: no crash in 3 replays", out)
        self.assertIn(f"{self.input('switch-uaf')}: known: fake-fixed-bug: heap-use-after-free", out)
        self.assertNotIn(f"{self.input('assert')}:", out)

    def test_allow_upstream_open_refuses_a_flaky_input(self):
        rc, out = self.cli("triage", self.input("flaky"), "--target", "fake_target", "--allow-upstream-open")
        self.assertEqual(rc, 1, out)
        self.assertIn("1 of 1 input(s) are not a known upstream-open bug:", out)
        self.assertIn(f"{self.input('flaky')}: flaky: replays gave ['assert | ggml_gallocr_init_tensor", out)

    def test_known_signatures_carry_the_status_and_leave_out_the_variant(self):
        sys.path.insert(0, str(ROOT / "cli"))
        from lifeline import triage
        known = triage.known_signatures(self.root, "fake_target")
        self.assertEqual(known, [("fake-fixed-bug", UAF_SIG, "fixed"),
                                 ("fake-upstream-open", ASSERT_SIG, "upstream-open"),
                                 ("fake-upstream-open", ASSERT_SIG, "upstream-open")])
        self.assertEqual(triage.known_signatures(self.root, "fake_target_upstream"), [])

    # ---- fuzz

    def fuzz(self):
        out = self.tmp / "fuzz-out"
        rc, text = self.cli("fuzz", "fake_target", "--time", "1", "--no-build", "--out", out)
        return rc, text, json.loads((out / "summary.json").read_text())[0]

    def test_fuzz_leaves_upstream_open_artifacts_out_of_the_crashes(self):
        self.artifacts({"crash-a1": "assert", "crash-a2": "assert", "crash-u": "uaf", "crash-c": "clean",
                        "crash-s": "silent"})
        rc, text, summary = self.fuzz()
        self.assertEqual(rc, 1, text)
        self.assertEqual(summary["crashes"], 3)
        self.assertEqual(summary["upstream_open"], 2)
        self.assertEqual(summary["upstream_open_bugs"], ["fake-upstream-open"])
        self.assertEqual(sorted(Path(a["artifact"]).name for a in summary["upstream_open_artifacts"]),
                         ["crash-a1", "crash-a2"])
        sigs = {Path(a["artifact"]).name: a["signature"] for a in summary["crash_artifacts"]}
        self.assertEqual(sigs["crash-c"], "(did not reproduce on replay)")
        self.assertTrue(sigs["crash-u"].startswith("heap-use-after-free | lifeline::fake::FakeUse"), sigs)
        self.assertIn("without a parsable report", sigs["crash-s"])
        self.assertEqual(len(summary["new_artifacts"]), 5)
        header = next(l for l in text.splitlines() if l.startswith("target "))
        self.assertIn("crashes  upstream-open  artifacts", header)
        row = next(l for l in text.splitlines() if l.startswith("fake_target "))
        self.assertRegex(row, r"\s3\s+2\s+/")
        self.assertIn("  crash: (did not reproduce on replay)", text)
        self.assertIn("  upstream-open: fake-upstream-open: assert | ggml_gallocr_init_tensor", text)
        crash_lines = [l for l in text.splitlines() if l.startswith("  crash: ")]
        self.assertFalse(any("assert" in l for l in crash_lines), crash_lines)

    def test_fuzz_exits_0_when_it_only_found_upstream_open_bugs(self):
        self.artifacts({"crash-a1": "assert"})
        rc, text, summary = self.fuzz()
        self.assertEqual(rc, 0, text)
        self.assertEqual((summary["crashes"], summary["upstream_open"]), (0, 1))
        self.assertNotIn("signature", summary)
        self.assertNotIn("  crash: ", text)

    def test_fuzz_goes_on_past_upstream_open_bugs_in_fork_mode(self):
        rc, text, _ = self.fuzz()  # fake_target has an upstream-open bug in repro/
        self.assertEqual(rc, 0, text)
        argv = json.loads((self.fake.parent / "fake-argv.json").read_text())
        self.assertIn("-fork=1", argv)
        self.assertIn("-ignore_crashes=1", argv)
        out = self.tmp / "fuzz-out-switch"
        rc, text = self.cli("fuzz", "fake_target", "--time", "1", "--no-build", "--out", out,
                            "--reintroduce", "fake-fixed-bug")
        argv = json.loads((self.fake.parent / "fake-argv.json").read_text())
        self.assertFalse(any(a.startswith("-fork") for a in argv), argv)  # a switch: stop at the first crash

    def test_fuzz_without_findings(self):
        rc, text, summary = self.fuzz()
        self.assertEqual(rc, 0, text)
        self.assertEqual((summary["crashes"], summary["upstream_open"], summary["upstream_open_bugs"]), (0, 0, []))


# ctest 3.25's output for a run with a skipped, a disabled and a failed test (--output-on-failure).
CTEST_OUTPUT = """Test project /work/main/build/asan
    Start 1: unit.a
    Start 2: upstream.ggml-source
1/4 Test #1: unit.a ...........................   Passed    0.00 sec
    Start 3: unit.b
2/4 Test #2: upstream.ggml-source .............***Skipped   0.00 sec
    Start 4: unit.disabled
3/4 Test #4: unit.disabled ....................***Not Run (Disabled)   0.00 sec
4/4 Test #3: unit.b ...........................***Failed    0.00 sec
boom

67% tests passed, 1 tests failed out of 3

Label Time Summary:
unit    =   0.00 sec*proc (2 tests)

Total Test time (real) =   0.00 sec

The following tests did not run:
	  2 - upstream.ggml-source (Skipped)
	  4 - unit.disabled (Disabled)

The following tests FAILED:
	  3 - unit.b (Failed)
Errors while running CTest
"""


class CtestSkips(unittest.TestCase):
    def setUp(self):
        sys.path.insert(0, str(ROOT / "cli"))
        from lifeline import ctest
        self.cli = ctest

    def feed(self, text):
        c = self.cli.CtestOutput()
        for line in text.splitlines(keepends=True):
            c.feed(line)
        return c

    def test_skipped_tests_are_not_passed(self):
        c = self.feed(CTEST_OUTPUT)
        self.assertEqual(c.skipped, ["upstream.ggml-source"])
        self.assertEqual(c.counts(), (1, 1, 1))
        self.assertEqual(c.reasons, {})

    def test_no_summary_counts_nothing(self):
        self.assertEqual(self.feed("No tests were found!!!\n").counts(), (0, 0, 0))

    def test_reason_from_verbose_output(self):
        verbose = CTEST_OUTPUT.replace("    Start 3: unit.b\n", "    Start 3: unit.b\n2: SKIPPED: ggml is not fetched\n")
        self.assertEqual(self.feed(verbose).reasons, {"upstream.ggml-source": "ggml is not fetched"})

    def test_reason_printed_after_the_result_line(self):
        c = self.feed(CTEST_OUTPUT.replace("***Skipped   0.00 sec\n", "***Skipped   0.00 sec\nSKIPPED: no ggml\n"))
        self.assertEqual(c.reasons, {"upstream.ggml-source": "no ggml"})

    def test_reason_from_last_test_log(self):
        with tempfile.TemporaryDirectory() as d:
            log = Path(d) / "LastTest.log"
            log.write_text("2/4 Testing: upstream.ggml-source\n2/4 Test: upstream.ggml-source\nCommand: \"x\"\n"
                           "Output:\n----------\nSKIPPED: upstream ggml is not fetched: run scripts/fetch-ggml.sh\n"
                           "<end of output>\n1/4 Test: unit.a\nOutput:\n----------\nSKIPPED: not this one\n")
            self.assertEqual(self.cli.skip_reasons_from_log(log, ["upstream.ggml-source"]),
                             {"upstream.ggml-source": "upstream ggml is not fetched: run scripts/fetch-ggml.sh"})
            self.assertEqual(self.cli.skip_reasons_from_log(Path(d) / "nope.log", ["x"]), {})


@unittest.skipUnless(shutil.which("cmake") and shutil.which("ctest") and shutil.which("ninja"), "needs cmake and ninja")
class LifelineTestSkips(unittest.TestCase):
    """`lifeline test` on a scratch CMake project with one passing and two self-skipping tests."""

    def test_skipped_tests_are_counted_and_named(self):
        with tempfile.TemporaryDirectory() as d:
            root = Path(d)
            shutil.copytree(ROOT / "cli", root / "cli",
                            ignore=shutil.ignore_patterns("__pycache__"))
            (root / "scripts").mkdir()
            (root / "scripts" / "install-deps.sh").write_text("#!/bin/sh\nexit 0\n")
            (root / "scripts" / "install-deps.sh").chmod(0o755)
            (root / "CMakeLists.txt").write_text(
                "cmake_minimum_required(VERSION 3.23)\nproject(scratch NONE)\nenable_testing()\n"
                "add_test(NAME unit.pass COMMAND true)\n"
                "foreach(n upstream.one upstream.two)\n"
                "  add_test(NAME ${n} COMMAND sh -c \"echo 'SKIPPED: upstream ggml is not fetched'; exit 77\")\n"
                "  set_tests_properties(${n} PROPERTIES SKIP_RETURN_CODE 77)\n"
                "endforeach()\n")
            (root / "CMakePresets.json").write_text(json.dumps({
                "version": 4,
                "configurePresets": [{"name": "asan", "generator": "Ninja",
                                      "binaryDir": "${sourceDir}/build/${presetName}"}],
                "buildPresets": [{"name": "asan", "configurePreset": "asan"}],
                "testPresets": [{"name": "asan", "configurePreset": "asan", "output": {"outputOnFailure": True}}]}))
            rc, out = run([PY, root / "cli" / "lifeline_main.py", "test", "--lanes", "asan"])
            self.assertEqual(rc, 0, out)
            self.assertIn("lane       build   passed  failed  skipped  build s  total s", out)
            self.assertRegex(out, r"\nasan\s+ok\s+1\s+0\s+2\s")
            self.assertIn("skipped in lane asan:\n  upstream.one: upstream ggml is not fetched\n"
                          "  upstream.two: upstream ggml is not fetched\n", out)
            self.assertIn("lifeline: 1 passed, 0 failed, 2 skipped", out)


if __name__ == "__main__":
    unittest.main()
