"""tests/upstream/check_reports.py's two judgements, on made-up reports and runs: a report that names a file of
its finding the export lacks, and a run without sanitizers that contradicts bug.json (the ctest upstream.reports
applies them to every real finding)."""
import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "upstream"))
import check_reports  # noqa: E402


class CheckReports(unittest.TestCase):
    def test_a_named_file_of_the_finding_must_be_in_the_export(self):
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            (folder / "scale-f16.c").write_text("")
            names = {"scale-f16.c", "supports-op-sweep.md", "bug.json", "scale-f16"}
            report = ("the table is supports-op-sweep.md in this folder; see `scale-f16.c`; ggml-alloc.c and "
                      "src/ggml-cpu/ops.cpp are upstream's; bug.json is where it comes from")
            self.assertEqual(check_reports.missing_files(report, names, folder), ["supports-op-sweep.md"])
            (folder / "supports-op-sweep.md").write_text("")
            self.assertEqual(check_reports.missing_files(report, names, folder), [])

    def test_a_plain_run_must_fail_or_say_why_it_runs_clean(self):
        self.assertIn("runs clean in a build without sanitizers", check_reports.plain_verdict(0, "", None))
        self.assertIsNone(check_reports.plain_verdict(1, "verdict: the bug is there", None))
        self.assertIsNone(check_reports.plain_verdict(-6, "fatal error", None))
        self.assertIsNone(check_reports.plain_verdict(0, "", "an assert() that -DNDEBUG compiles out"))
        self.assertIn("but \"no_sanitizer\" says it runs clean",
                      check_reports.plain_verdict(-11, "Segmentation fault", "an assert() that -DNDEBUG compiles out"))


if __name__ == "__main__":
    unittest.main()
