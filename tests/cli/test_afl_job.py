"""`lifeline fuzz --engine afl` on the scratch project, with a fake afl-fuzz that writes the fuzzer_stats it
is given: its counts are read whatever the file holds, and a job that ran no inputs fails with one line."""
import json
import os
import unittest

from scratch_project import ScratchProject

FAKE_AFL = """#!/bin/sh
# afl-fuzz -i SEEDS -o OUT -V S [-x DICT] -- BINARY: writes $FAKE_AFL_STATS as OUT/default/fuzzer_stats.
while [ "$1" != "-o" ]; do shift; done
mkdir -p "$2/default/crashes"
printf '%b' "$FAKE_AFL_STATS" > "$2/default/fuzzer_stats"
"""


class AflJob(ScratchProject):
    def setUp(self):
        super().setUp()
        self.install_fake(self.root / "build" / "afl" / "fake_target")
        (self.root / "corpus" / "fake_target").mkdir()
        bin_dir = self.tmp / "bin"
        bin_dir.mkdir()
        (bin_dir / "afl-fuzz").write_text(FAKE_AFL)
        (bin_dir / "afl-fuzz").chmod(0o755)
        self.path = f"{bin_dir}:{os.environ['PATH']}"

    def afl(self, stats):
        out = self.tmp / "out"
        env = dict(os.environ, PATH=self.path, FAKE_AFL_STATS=stats)
        rc, stdout, stderr = self.cli_apart("fuzz", "fake_target", "--engine", "afl", "--time", "1", "--no-build",
                                            "--out", out, env=env)
        return rc, stdout, stderr, json.loads((out / "summary.json").read_text())[0]

    def test_counts_are_read(self):
        rc, out, err, summary = self.afl("execs_done : 1234\\nexecs_per_sec : 50.5\\ncorpus_count : 3\\n")
        self.assertEqual(rc, 0, out + err)
        self.assertEqual((summary["execs"], summary["exec_s"], summary["corpus"]), (1234, 50, 3))

    def test_a_job_that_ran_no_inputs_fails(self):
        for stats in ("execs_done : 0\\n", "execs_done : many\\nexecs_per_sec : -\\ncorpus_count : 1e9x\\n", ""):
            with self.subTest(stats=stats):
                rc, out, err, summary = self.afl(stats)
                self.assertEqual(rc, 2, out + err)
                self.assertEqual(len(err.strip().splitlines()), 1, err)
                self.assertIn("lifeline fuzz: fake_target ran no inputs (exit status 0), so it tested nothing", err)
                self.assertEqual(summary["execs"], 0)


if __name__ == "__main__":
    unittest.main()
