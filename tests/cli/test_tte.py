"""bench/tte.py's trials on the scratch project's fake target, from a checkout whose name a shell would
split or run: a trial runs inputs and executes nothing; an upstream-open finding is fuzzed with only its own
guard off; a trial that ran no input stops the benchmark with one line instead of counting as a survival
time."""
import json
import shutil
import unittest

from scratch_project import ASSERT_SIG, ScratchProject, write_bug
from support import TRIAGE, ROOT, run_apart


class TimeToExposure(ScratchProject):
    ROOT_NAME = "check out $(touch pwned)"

    def setUp(self):
        super().setUp()
        (self.root / "bench").mkdir()
        for script in ("tte.py", "provenance.py"):
            shutil.copy(ROOT / "bench" / script, self.root / "bench" / script)
        (self.root / "corpus" / "fake_target").mkdir()
        self.cwd = self.tmp / "cwd"
        self.cwd.mkdir()

    def run_tte(self, bug):
        return run_apart(["/usr/bin/python3", self.root / "bench" / "tte.py", bug, "--trials", "1",
                          "--budget", "1", "--build", self.root / "build" / "fuzz"], cwd=self.cwd)

    def guarded_finding(self):
        write_bug(self.root / "repro" / "fake-guarded", {
            "status": "upstream-open", "triage": TRIAGE, "guard": "fake-guarded", "target": "fake_target",
            "reproducers": [{"input": "in", "expect": {"fuzz": ASSERT_SIG}}]}, {"in": "guarded-assert"})

    def test_an_upstream_open_trial_runs_with_only_its_own_guard_off(self):
        self.guarded_finding()
        self.artifacts({"crash-a": "guarded-assert"})  # crashes only with LIFELINE_UNGUARD=fake-guarded
        rc, out, err = self.run_tte("fake-guarded")
        self.assertEqual(rc, 0, out + err)
        self.assertEqual(list(self.tmp.rglob("pwned")), [])
        summary = json.loads((self.root / "bench" / "results" / "tte-fake-guarded-pinned-upstream.json").read_text())
        row = summary["rows"][0]
        self.assertEqual((row["result"], row["execs"]), ("found", 42), row)
        # Where and when it ran, for bench/dashboard.py; the scratch checkout is no git repository.
        self.assertRegex(summary["date"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
        self.assertEqual(summary["commit"], "not recorded")
        self.assertTrue(summary["machine"], summary)
        self.assertNotIn("-fork=1", json.loads((self.fake.parent / "fake-argv.json").read_text()))

    def test_a_trial_stopped_on_a_timeout_keeps_the_timeout_input(self):
        self.guarded_finding()
        self.artifacts({"timeout-b": "slow", "crash-c": "slow"})  # no report of the finding: kept
        rc, out, err = self.run_tte("fake-guarded")
        self.assertEqual(rc, 0, out + err)
        row = json.loads((self.root / "bench" / "results" / "tte-fake-guarded-pinned-upstream.json")
                         .read_text())["rows"][0]
        self.assertNotEqual(row["result"], "found", row)
        kept = sorted(p.name for p in (self.root / "bench" / "results" / "artifacts").rglob("*"))
        self.assertIn("timeout-b", kept)
        self.assertIn("crash-c", kept)

    def test_an_upstream_open_finding_without_a_guard_is_refused(self):
        rc, out, err = self.run_tte("fake-upstream-open")
        self.assertEqual(rc, 2, out + err)
        self.assertIn("tte: fake-upstream-open has no guard", err)

    def test_a_trial_that_ran_no_inputs_stops_the_benchmark(self):
        self.guarded_finding()
        (self.fake.parent / "fake-idle").write_text("")
        for bug in ("fake-guarded", "fake-fixed-bug"):
            with self.subTest(bug=bug):
                rc, out, err = self.run_tte(bug)
                self.assertEqual(rc, 2, out + err)
                self.assertEqual(len(err.strip().splitlines()), 1, err)
                self.assertIn(f"tte: {bug}: trial 0 ran no inputs (exit status 0): ", err)


if __name__ == "__main__":
    unittest.main()
