"""`lifeline fuzz --lane tsan` on a scratch project: the lane's own binaries, only the targets that start
threads, the tsan expectations of bug.json, and triage/promote replaying on the lane that found a crash."""
import json
import re
from pathlib import Path

from scratch_project import ScratchProject, write_bug

OTHER_SIG = {"type": "heap-use-after-free", "frame": "OtherUse"}


class TsanLane(ScratchProject):
    def setUp(self):
        super().setUp()
        self.tsan = self.install_fake(self.root / "build" / "tsan" / "targets" / "fake_target")
        (self.root / "targets" / "fake_plain.cc").write_text("")
        self.install_fake(self.root / "build" / "tsan" / "targets" / "fake_plain")
        # What cmake/LifelineTargets.cmake writes at configure: each target and its labels.
        (self.root / "build" / "tsan" / "fuzz-targets.txt").write_text("fake_target threads\nfake_plain \n")
        (self.tsan.parent / "fake-artifacts.json").write_text(json.dumps({"crash-o": "other"}))
        # A bug only TSan's expectations name: an artifact is known to it in the tsan lane, new in the fuzz lane.
        with open(self.root / "core" / "bug_list.def", "a") as f:
            f.write('LIFELINE_BUG(kFakeRaceBug, "fake-race-bug")\n')
        write_bug(self.root / "repro" / "fake-race-bug", {
            "target": "fake_target", "reproducers": [{"input": "in", "expect": {"tsan": OTHER_SIG}}]}, {"in": "other"})

    def test_the_tsan_lane_fuzzes_its_threaded_targets_with_its_own_binaries(self):
        rc, text = self.cli("fuzz", "--lane", "tsan", "--time", "1", "--no-build")
        self.assertEqual(rc, 1, text)  # a crash, though of a known bug (fixed code must not crash)
        out = self.root / "fuzz-out-tsan"  # not fuzz-out/: the fuzz lane's jobs keep theirs
        summary = json.loads((out / "summary.json").read_text())
        self.assertEqual([s["target"] for s in summary], ["fake_target"])  # fake_plain starts no threads
        self.assertEqual(summary[0]["lane"], "tsan")
        self.assertEqual(summary[0]["crashes"], 1, text)
        self.assertEqual([g["kind"] for g in summary[0]["artifact_groups"]], ["known"])
        self.assertEqual(summary[0]["artifact_groups"][0]["bug"], "fake-race-bug")
        job = json.loads((out / "fake_target" / "job.json").read_text())
        self.assertEqual((job["lane"], Path(job["binary"])), ("tsan", self.tsan))
        self.assertFalse((self.root / "fuzz-out").exists())

    def test_the_fuzz_lane_does_not_know_a_bug_only_tsan_expects(self):
        self.artifacts({"crash-o": "other"})
        rc, text = self.cli("fuzz", "fake_target", "--time", "1", "--no-build")
        self.assertEqual(rc, 1, text)
        summary = json.loads((self.root / "fuzz-out" / "summary.json").read_text())
        self.assertEqual([g["kind"] for g in summary[0]["artifact_groups"]], ["new"])

    def test_a_target_without_threads_is_refused_in_the_tsan_lane(self):
        rc, text = self.cli("fuzz", "fake_plain", "--lane", "tsan", "--time", "1", "--no-build")
        self.assertEqual(rc, 2, text)
        self.assertIn("target 'fake_plain' starts no threads, so TSan has nothing to watch", text)
        self.assertIn("(targets that start threads: fake_target)", text)
        self.assertEqual(len(text.strip().splitlines()), 1, text)

    def test_afl_has_no_tsan_lane(self):
        rc, text = self.cli("fuzz", "--lane", "tsan", "--engine", "afl", "--no-build")
        self.assertEqual(rc, 2, text)
        self.assertIn("--engine afl builds its own ASan+UBSan binaries", text)

    def test_triage_replays_on_the_lane_of_the_job(self):
        rc, text = self.cli("fuzz", "--lane", "tsan", "--time", "1", "--no-build")
        self.assertEqual(rc, 1, text)
        crash = self.root / "fuzz-out-tsan" / "fake_target" / "artifacts" / "crash-o"
        # No --lane: the job's (tsan), so the tsan expectation names it; --lane fuzz: nothing does.
        for extra, known in (((), "known: fake-race-bug"), (("--lane", "fuzz"), "new")):
            with self.subTest(extra=extra):
                rc, text = self.cli("triage", crash, *extra)
                self.assertEqual(rc, 0, text)
                self.assertRegex(text, r"(?m)^" + re.escape(known) + r"\s+no\s+crash-o ")
