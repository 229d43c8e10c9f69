"""`lifeline triage`: known, new and upstream-open crashes, --allow-upstream-open (scratch project)."""
import json
import sys
import unittest
from pathlib import Path

from scratch_project import ASSERT_SIG, UAF_SIG, ScratchProject
from support import ROOT


class Triage(ScratchProject):
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

    def test_an_artifact_of_a_job_with_a_guard_off_replays_with_that_guard_off(self):
        job = self.tmp / "fuzz-out" / "fake_target"
        (job / "artifacts").mkdir(parents=True)
        crash = job / "artifacts" / "crash-guarded"
        crash.write_text("guarded-assert")  # reproduces only with LIFELINE_UNGUARD=fake-guarded
        (job / "job.json").write_text(json.dumps({"target": "fake_target", "reintroduce": None,
                                                  "unguard": "fake-guarded"}))
        rc, out = self.cli("triage", crash, "--target", "fake_target")
        self.assertEqual(rc, 0, out)
        self.assertIn("(LIFELINE_UNGUARD=fake-guarded, as its fuzz job ran)", out)
        self.assertRegex(out, r"upstream-open: fake-upstream-open\s+no\s+crash-guarded")
        (job / "job.json").write_text(json.dumps({"target": "fake_target", "reintroduce": None, "unguard": None}))
        rc, out = self.cli("triage", crash, "--target", "fake_target")
        self.assertNotIn("LIFELINE_UNGUARD", out)
        self.assertNotIn("upstream-open: fake-upstream-open", out)

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

    def test_a_job_record_of_the_wrong_shape_is_one_line(self):
        """fuzz-out/<target>/job.json says which switch the job had on; one of another shape is named."""
        artifacts = self.tmp / "fuzz-out" / "fake_target" / "artifacts"
        artifacts.mkdir(parents=True)
        (artifacts / "crash-u").write_text("uaf")
        for text in ("[1]", '{"reintroduce": 3}', '"x"', "[" * 100000, "{not json", "\udcff"):
            with self.subTest(job=text[:12]):
                (artifacts.parent / "job.json").write_text(text, errors="surrogateescape")
                rc, out, err = self.cli_apart("triage", artifacts / "crash-u")
                self.assertEqual(rc, 2, out + err)
                self.assertEqual(len(err.strip().splitlines()), 1, err)
                self.assertIn(f"{artifacts.parent / 'job.json'} is not a job record of `lifeline fuzz`", err)
        rc, out = self.cli("triage", artifacts / "crash-u", "--reintroduce", "")  # the record is not read
        self.assertEqual(rc, 0, out)
        (artifacts.parent / "job.json").write_text('{"reintroduce": null}')
        rc, out = self.cli("triage", artifacts / "crash-u")
        self.assertEqual(rc, 0, out)
        self.assertIn("known: fake-fixed-bug  no     crash-u", out)

    def test_known_signatures_carry_the_status_and_leave_out_the_variant(self):
        sys.path.insert(0, str(ROOT / "cli"))
        from lifeline import triage
        known = triage.known_signatures(self.root, "fake_target")
        self.assertEqual(known, [("fake-fixed-bug", UAF_SIG, "fixed"),
                                 ("fake-upstream-open", ASSERT_SIG, "upstream-open"),
                                 ("fake-upstream-open", ASSERT_SIG, "upstream-open")])
        self.assertEqual(triage.known_signatures(self.root, "fake_target_upstream"), [])


if __name__ == "__main__":
    unittest.main()
