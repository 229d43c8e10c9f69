"""Crash and input files whose names start with '-' (given as ./-name, which Python shortens to -name, or
after `--`): every verb hands them to the target as absolute paths, never where they read as flags. The
scratch project's fake target reads an argument led by '-' as libFuzzer does: as a flag, fuzzing from
scratch into the current folder when no input is left."""
import json
import unittest
from pathlib import Path

from scratch_project import ASSERT_SIG, ScratchProject, write_bug
from support import TRIAGE

REPORT = Path(__file__).resolve().parents[1] / "data" / "reports" / "asan-heap-use-after-free.txt"


class FlagLikeNames(ScratchProject):
    def setUp(self):
        super().setUp()
        self.cwd = self.tmp / "inputs"
        self.cwd.mkdir()

    def named(self, name, text):
        (self.cwd / name).write_text(text)
        return name

    def assertNoFilesWritten(self):
        self.assertEqual(sorted(p.name for p in self.cwd.iterdir() if p.name.startswith("crash-")), [])

    def test_triage_replays_a_dash_named_crash(self):
        self.named("-leading", "uaf")
        self.named("-help=1", "assert")
        report = self.tmp / "triage.json"
        rc, out = self.cli("triage", "./-leading", "./-help=1", "--target", "fake_target", "--json", report,
                           cwd=self.cwd)
        self.assertEqual(rc, 0, out)
        self.assertNoFilesWritten()
        rows = json.loads(report.read_text())
        self.assertEqual([r["input"] for r in rows], [str(self.cwd / "-leading"), str(self.cwd / "-help=1")])
        self.assertTrue(rows[0]["signature"].startswith("heap-use-after-free | lifeline::fake::FakeUse"), rows[0])
        self.assertEqual(rows[1]["status"], "upstream-open", rows[1])
        rc, out = self.cli("triage", "--target", "fake_target", "--", "-leading", cwd=self.cwd)
        self.assertEqual(rc, 0, out)
        self.assertIn("heap-use-after-free | lifeline::fake::FakeUse", out)

    def test_promote_replays_and_minimizes_a_dash_named_crash(self):
        self.named("-leading", "switch-uaf")
        for p in sorted(self.fixed.iterdir()):
            p.unlink()
        self.fixed.rmdir()
        rc, out = self.cli("promote", "./-leading", "--id", "fake-fixed-bug", "--target", "fake_target",
                           cwd=self.cwd)
        self.assertEqual(rc, 0, out)
        self.assertNoFilesWritten()
        doc = json.loads((self.fixed / "bug.json").read_text())
        self.assertEqual(doc["reproducers"][0]["expect"], {"asan": {"type": "heap-use-after-free",
                                                                    "frame": "lifeline::fake::FakeUse"}})

    def test_classify_takes_a_dash_named_report_after_double_dash(self):
        self.named("-leading", REPORT.read_text())
        for args in (["./-leading"], ["--", "-leading"]):
            with self.subTest(args=args):
                rc, out = self.cli("classify", *args, cwd=self.cwd)
                self.assertEqual(rc, 0, out)
                self.assertEqual(json.loads(out)["crash"]["type"], "heap-use-after-free")

    def test_repro_check_runs_a_dash_named_input(self):
        bug = write_bug(self.tmp / "elsewhere" / "fake-dash-input", {
            "status": "upstream-open", "triage": TRIAGE, "target": "fake_target",
            "reproducers": [{"input": "-in", "expect": {"asan": ASSERT_SIG}}]}, {"-in": "assert"})
        rc, out = self.cli("repro-check", "--repro-dir", ".", "--lane", "asan", "--mode", "pinned", "--binary",
                           self.fake, cwd=bug)
        self.assertEqual(rc, 0, out)
        self.assertIn("PASS -in: assert | ggml_gallocr_init_tensor", out)
        self.assertFalse(list(bug.glob("crash-*")))


if __name__ == "__main__":
    unittest.main()
