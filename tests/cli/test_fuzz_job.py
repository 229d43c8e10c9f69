"""`lifeline fuzz` on a scratch project: artifacts replayed and sorted, upstream-open findings apart."""
import json
import unittest
from pathlib import Path

from scratch_project import ScratchProject


class FuzzJob(ScratchProject):
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

    def test_an_interrupted_job_labels_no_artifact(self):
        """Fork mode's log keeps only its children's ERROR lines: an interrupted job's artifacts are not
        replayed, so they are neither crashes nor upstream-open findings, and triage is named to sort them."""
        self.artifacts({"crash-a1": "assert", "crash-u": "uaf"})
        (self.fake.parent / "fake-interrupt").write_text("")
        rc, text, summary = self.fuzz()
        self.assertEqual(rc, 130, text)
        self.assertEqual((summary["crashes"], summary["upstream_open"]), (0, 0), summary)
        self.assertEqual(sorted(Path(a).name for a in summary["not_replayed"]), ["crash-a1", "crash-u"])
        self.assertNotIn("signature", summary)
        self.assertNotIn("deadly-signal", text)
        self.assertRegex(text, r"\nfake_target +42 +0 +\d+ +0 +0 +/")
        self.assertIn("  not replayed (interrupted): 2 artifact(s); `lifeline triage` sorts them", text)

    def test_fuzz_without_findings(self):
        rc, text, summary = self.fuzz()
        self.assertEqual(rc, 0, text)
        self.assertEqual((summary["crashes"], summary["upstream_open"], summary["upstream_open_bugs"]), (0, 0, []))


class FuzzOutInTheWay(ScratchProject):
    """--out DIR where what a job writes under DIR cannot be written: one line, exit 2, before any job."""

    def test_each_blocked_path_is_named(self):
        cases = (("fake_target", "file", "fake_target's job directory"),
                 ("fake_target/corpus", "file", "fake_target's corpus directory"),
                 ("fake_target/artifacts", "file", "fake_target's artifacts directory"),
                 ("fake_target/fuzz.log", "dir", "fuzz.log is in the way (not a file)"),
                 ("fake_target/job.json", "dir", "job.json is in the way (not a file)"),
                 ("summary.json", "dir", "summary.json is in the way (not a file)"))
        for n, (blocked, kind, text) in enumerate(cases):
            with self.subTest(blocked=blocked):
                out = self.tmp / f"out{n}"
                path = out / blocked
                path.parent.mkdir(parents=True)
                path.mkdir() if kind == "dir" else path.write_text("")
                rc, stdout, stderr = self.cli_apart("fuzz", "fake_target", "--time", "1", "--no-build", "--out",
                                                    out)
                self.assertEqual(rc, 2, stdout + stderr)
                self.assertEqual(len(stderr.strip().splitlines()), 1, stderr)
                self.assertIn(text, stderr)
                self.assertFalse((self.fake.parent / "fake-argv.json").exists())  # no job started


if __name__ == "__main__":
    unittest.main()
