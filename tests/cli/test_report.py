"""SARIF and Markdown from triage results (lifeline/report.py), and triage output of the wrong shape: one
line and exit status 2, never a traceback."""
import json
import sys
import tempfile
import unittest
from pathlib import Path

from json_mutations import mutations
from support import CLI, ROOT, run_apart

CRASH = {"tool": "asan", "type": "heap-use-after-free", "state": ["f", "g"], "frames": ["f", "g", "main"],
         "access": "READ 1", "message": None, "location": "/x/f.cc:3:1",
         "signature": "heap-use-after-free | f / g"}
# A row of `lifeline triage --json` with every field.
ROW = {"input": "/x/fuzz-out/t/artifacts/crash-1", "target": "t", "reintroduce": None,
       "signature": "heap-use-after-free | f / g", "crash": CRASH, "replays": ["s", "s", "s"], "flaky": False,
       "known": "some-bug", "duplicate_of": None, "known_status": "fixed", "status": "known"}


class Reports(unittest.TestCase):
    """SARIF and Markdown from triage results (no binaries needed)."""

    def setUp(self):
        sys.path.insert(0, str(ROOT / "cli"))
        from lifeline import report, triage
        self.report = report
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



class WrongShapes(unittest.TestCase):
    def setUp(self):
        sys.path.insert(0, str(ROOT / "cli"))
        from lifeline import report
        self.report = report
        self.tmp = tempfile.TemporaryDirectory()
        self.file = Path(self.tmp.name) / "triage.json"

    def tearDown(self):
        self.tmp.cleanup()

    def cli(self, doc, fmt):
        self.file.write_text(doc if isinstance(doc, str) else json.dumps(doc))
        return run_apart(CLI + ["report", "--triage", self.file, "--format", fmt])

    def test_the_issue_shapes_are_one_line_and_exit_2(self):
        crash = dict(CRASH, location=5)
        cases = [({"a": 1}, "json", "the top level must be a list of rows"),
                 ([1, 2], "json", "row 0 must be an object"), (["x"], "markdown", "row 0 must be an object"),
                 ([dict(ROW, crash=None)], "sarif", "row 0: a row with a signature needs its 'crash' object"),
                 ([dict(ROW, crash="x")], "sarif", "row 0: 'crash' must be an object or null"),
                 ([dict(ROW, input=3)], "sarif", "row 0: 'input' must be a string"),
                 ([ROW, dict(ROW, crash=crash)], "sarif", "row 1: crash: 'location' must be a string or null"),
                 ("[" * 100000, "json", "is not triage output (maximum recursion depth exceeded")]
        for doc, fmt, text in cases:
            with self.subTest(doc=str(doc)[:40], fmt=fmt):
                rc, out, err = self.cli(doc, fmt)
                self.assertEqual((rc, out), (2, ""), err)
                self.assertEqual(len(err.strip().splitlines()), 1, err)
                self.assertIn(f"lifeline report: '{self.file}' is not triage output (", err)
                self.assertIn(text, err)

    def test_a_location_without_a_line_number_is_left_out(self):
        for location in ("/x/f.cc:" + "9" * 5000, "/x/f\0.cc:3", "f.cc"):
            with self.subTest(location=location[:12]):
                results = self.report.results_from_json([dict(ROW, crash=dict(CRASH, location=location))])
                result = self.report.sarif(results, ROOT)["runs"][0]["results"][0]
                self.assertEqual("locations" in result, location.endswith(":3"), result)

    def test_any_json_type_at_any_level_renders_or_is_refused(self):
        rendered = refused = 0
        for at, value, doc in mutations([ROW]):
            with self.subTest(at=at, value=value):
                try:
                    results = self.report.results_from_json(doc)
                except ValueError as e:
                    self.assertEqual(len(str(e).splitlines()), 1, e)
                    refused += 1
                    continue
                json.dumps(self.report.sarif(results, ROOT))
                self.report.markdown(results)
                json.dumps([r.to_json() for r in results])
                rendered += 1
        self.assertGreater(refused, 200)
        self.assertGreater(rendered, 100)


if __name__ == "__main__":
    unittest.main()
