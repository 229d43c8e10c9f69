"""The replay driver's contract and the CLI's handling of bad arguments, run against the built binaries
of the lane named by LIFELINE_BUILD_DIR."""
import os
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
        sys.path.insert(0, str(ROOT / "harness" / "py"))
        from lifeline import triage
        self.triage = triage
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
        doc = self.triage.sarif(self.results, ROOT)
        self.assertEqual(doc["version"], "2.1.0")
        run = doc["runs"][0]
        self.assertEqual([r["id"] for r in run["tool"]["driver"]["rules"]], ["lifeline/heap-use-after-free"])
        self.assertEqual(len(run["results"]), 1)
        loc = run["results"][0]["locations"][0]["physicalLocation"]
        self.assertEqual(loc["artifactLocation"]["uri"], "layers/interop/dlpack_consumer.cc")
        self.assertEqual(loc["region"], {"startLine": 120, "startColumn": 7})

    def test_markdown_counts_distinct_and_new(self):
        md = self.triage.markdown(self.results)
        self.assertIn("3 input(s), 1 distinct crash(es), 1 new.", md)
        self.assertIn("| `crash-2` | t | new | heap-use-after-free | a / b / c | no | crash-1 |", md)

    def test_bug_json_signature_drops_ids_and_counts(self):
        sig = self.triage.signature_for_bug_json(
            {"type": "lifeline-check", "state": ["f"],
             "message": "op 3 (destroy s0): accounting oracle (bytes): backing memory outlives its wrappers: 1 VkBuffer"})
        self.assertEqual(sig, {"type": "lifeline-check",
                               "message": "accounting oracle (bytes): backing memory outlives its wrappers"})
        self.assertEqual(self.triage.signature_for_bug_json({"type": "data-race", "state": ["g", "h"]}),
                         {"type": "data-race", "frame": "g"})


if __name__ == "__main__":
    unittest.main()
