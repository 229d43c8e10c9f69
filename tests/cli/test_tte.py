"""bench/tte.py's trials on the scratch project's fake target, from a checkout whose name a shell would
split or run: fork-mode (scan) trials run inputs and execute nothing, and a trial that ran no input stops the
benchmark with one line instead of counting as a survival time."""
import json
import shutil
import unittest

from scratch_project import ScratchProject
from support import ROOT, run_apart


class TimeToExposure(ScratchProject):
    ROOT_NAME = "check out $(touch pwned)"

    def setUp(self):
        super().setUp()
        (self.root / "bench").mkdir()
        shutil.copy(ROOT / "bench" / "tte.py", self.root / "bench" / "tte.py")
        (self.root / "corpus" / "fake_target").mkdir()
        self.cwd = self.tmp / "cwd"
        self.cwd.mkdir()

    def run_tte(self, bug):
        return run_apart(["/usr/bin/python3", self.root / "bench" / "tte.py", bug, "--trials", "1",
                          "--budget", "1", "--build", self.root / "build" / "fuzz"], cwd=self.cwd)

    def test_a_fork_mode_trial_runs_inputs_and_nothing_else(self):
        self.artifacts({"crash-a": "assert"})
        rc, out, err = self.run_tte("fake-upstream-open")  # upstream-open: fork mode, artifacts replayed
        self.assertEqual(rc, 0, out + err)
        self.assertEqual(list(self.tmp.rglob("pwned")), [])
        row = json.loads((self.root / "bench" / "results" / "tte-fake-upstream-open-pinned-upstream.json")
                         .read_text())["rows"][0]
        self.assertEqual((row["result"], row["execs"]), ("found", 42), row)

    def test_a_trial_that_ran_no_inputs_stops_the_benchmark(self):
        (self.fake.parent / "fake-idle").write_text("")
        for bug in ("fake-upstream-open", "fake-fixed-bug"):  # fork mode, then one process
            with self.subTest(bug=bug):
                rc, out, err = self.run_tte(bug)
                self.assertEqual(rc, 2, out + err)
                self.assertEqual(len(err.strip().splitlines()), 1, err)
                self.assertIn(f"tte: {bug}: trial 0 ran no inputs (exit status 0): ", err)


if __name__ == "__main__":
    unittest.main()
