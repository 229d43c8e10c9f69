"""SARIF and Markdown from triage results (lifeline/report.py)."""
import sys
import unittest

from support import ROOT


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


if __name__ == "__main__":
    unittest.main()
