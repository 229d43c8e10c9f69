"""`lifeline fuzz` on a scratch project: artifacts replayed and sorted, upstream-open findings apart."""
import json
import unittest
from pathlib import Path

from scratch_project import ScratchProject


class FuzzJob(ScratchProject):
    def fuzz(self, *extra):
        out = self.tmp / "fuzz-out"
        rc, text = self.cli("fuzz", "fake_target", "--time", "1", "--no-build", "--out", out, *extra)
        return rc, text, json.loads((out / "summary.json").read_text())[0]

    def test_fuzz_leaves_upstream_open_artifacts_out_of_the_crashes(self):
        self.artifacts({"crash-a1": "assert", "crash-a2": "assert", "crash-u": "other", "crash-c": "clean",
                        "crash-s": "silent", "crash-f": "uaf"})
        rc, text, summary = self.fuzz()
        self.assertEqual(rc, 1, text)
        self.assertEqual(summary["crashes"], 4)
        self.assertEqual(summary["upstream_open"], 2)
        self.assertEqual(summary["upstream_open_bugs"], ["fake-upstream-open"])
        self.assertEqual(sorted(Path(a["artifact"]).name for a in summary["upstream_open_artifacts"]),
                         ["crash-a1", "crash-a2"])
        sigs = {Path(a["artifact"]).name: a["signature"] for a in summary["crash_artifacts"]}
        self.assertEqual(sigs["crash-c"], "(did not reproduce on replay)")
        self.assertTrue(sigs["crash-u"].startswith("heap-use-after-free | lifeline::fake::OtherUse"), sigs)
        self.assertTrue(sigs["crash-f"].startswith("heap-use-after-free | lifeline::fake::FakeUse"), sigs)
        self.assertIn("without a parsable report", sigs["crash-s"])
        self.assertEqual(len(summary["new_artifacts"]), 6)
        header = next(l for l in text.splitlines() if l.startswith("target "))
        self.assertIn("crashes  upstream-open  artifacts", header)
        row = next(l for l in text.splitlines() if l.startswith("fake_target "))
        self.assertRegex(row, r"\s4\s+2\s+/")
        # On screen: the artifacts counted by what they are, one line; then one example per crash group.
        self.assertIn("\n  6 artifacts: 1 new: heap-use-after-free in lifeline::fake::OtherUse, 1 known fake-fixed-bug, "
                      "1 no report on replay, 1 did not reproduce on replay, 2 upstream-open fake-upstream-open\n", text)
        arts = self.tmp / "fuzz-out" / "fake_target" / "artifacts"
        self.assertIn(f"    new crash: {sigs['crash-u']} (1), e.g. {arts / 'crash-u'}\n", text)
        self.assertIn(f"    known fake-fixed-bug: {sigs['crash-f']} (1), e.g. {arts / 'crash-f'}\n", text)
        self.assertIn(f"    did not reproduce on replay (1), e.g. {arts / 'crash-c'}\n", text)
        self.assertIn(f"    no parsable report on replay (see the log) (1), e.g. {arts / 'crash-s'}\n", text)
        self.assertNotIn("crash-a1", text)  # upstream-open artifacts: counted on screen, named in summary.json
        # summary.json: every artifact, in the same groups.
        groups = [(g["kind"], g.get("bug"), g["count"], [Path(a).name for a in g["artifacts"]], g["signatures"])
                  for g in summary["artifact_groups"]]
        self.assertEqual(groups, [
            ("new", None, 1, ["crash-u"], [sigs["crash-u"]]),
            ("known", "fake-fixed-bug", 1, ["crash-f"], [sigs["crash-f"]]),
            ("no-report", None, 1, ["crash-s"], []),
            ("clean", None, 1, ["crash-c"], []),
            ("upstream-open", "fake-upstream-open", 2, ["crash-a1", "crash-a2"],
             ["assert | ggml_gallocr_init_tensor / ggml_gallocr_alloc_graph"])])

    def test_a_leak_reported_at_exit_fails_the_job_without_an_artifact(self):
        """A target that runs without libFuzzer's per-input leak check (detect_leaks = 0 in its options) is
        still checked by LeakSanitizer when it exits: that report fails the job, though no input carries it."""
        (self.fake.parent / "fake-exit-leak").write_text("")
        rc, text, summary = self.fuzz()
        self.assertEqual(rc, 1, text)
        self.assertEqual(summary["crashes"], 1)
        # The empty unit libFuzzer wrote when the report aborted the process is kept, not replayed as a crash.
        unit = self.tmp / "fuzz-out" / "fake_target" / "artifacts" / "crash-da39a3ee5e6b4b0d3255bfef95601890afd80709"
        self.assertEqual(summary["new_artifacts"], [str(unit)])
        self.assertTrue(unit.is_file())
        self.assertEqual(summary["crash_artifacts"], [])
        self.assertEqual(summary["artifact_groups"], [])
        leak = summary["leak_at_exit"]
        self.assertEqual(leak["exit_unit"], str(unit))
        self.assertTrue(leak["signature"].startswith("direct-leak | lifeline::fake::KeepFrame"), leak)
        self.assertEqual(leak["short"], "direct-leak in lifeline::fake::KeepFrame")
        self.assertEqual(summary["signature"], leak["signature"])
        log = self.tmp / "fuzz-out" / "fake_target" / "fuzz.log"
        self.assertEqual(leak["log"], str(log))
        self.assertIn(f"\n  leak at exit (LeakSanitizer over the whole run; no input carries it): {leak['signature']}; "
                      f"see {log}\n", text)

    def test_an_exit_status_without_a_leak_report_is_not_a_leak(self):
        self.artifacts({"crash-f": "uaf"})
        rc, text, summary = self.fuzz()
        self.assertNotIn("leak_at_exit", summary)
        self.assertNotIn("leak at exit", text)

    def test_a_crash_of_a_fixed_bug_is_grouped_under_its_id(self):
        self.artifacts({"crash-x1": "switch-uaf", "crash-x2": "switch-uaf", "crash-n": "other"})
        out = self.tmp / "fuzz-out"
        rc, text = self.cli("fuzz", "fake_target", "--time", "1", "--no-build", "--out", out,
                            "--reintroduce", "fake-fixed-bug")
        self.assertEqual(rc, 1, text)
        self.assertIn("\n  3 artifacts: 1 new: heap-use-after-free in lifeline::fake::OtherUse, "
                      "2 known fake-fixed-bug\n", text)
        self.assertRegex(text, r"\n    known fake-fixed-bug: heap-use-after-free \| lifeline::fake::FakeUse.* \(2\), "
                               r"e\.g\. /.*/crash-x1\n")
        summary = json.loads((out / "summary.json").read_text())[0]
        self.assertEqual([(g["kind"], g["count"]) for g in summary["artifact_groups"]], [("new", 1), ("known", 2)])
        self.assertEqual(summary["crashes"], 3)

    def test_fuzz_exits_0_when_it_only_found_upstream_open_bugs(self):
        self.artifacts({"crash-a1": "assert"})
        rc, text, summary = self.fuzz()
        self.assertEqual(rc, 0, text)
        self.assertEqual((summary["crashes"], summary["upstream_open"]), (0, 1))
        self.assertNotIn("signature", summary)
        self.assertNotIn("  crash: ", text)

    def test_a_target_with_upstream_open_bugs_runs_in_process_like_any_other(self):
        """Guards step around the known findings, so a crash is a crash: no fork mode, no -ignore_crashes,
        unless --jobs asks for fork mode."""
        self.artifacts({"crash-u": "uaf"})
        rc, text, summary = self.fuzz()  # fake_target has an upstream-open bug in repro/
        self.assertEqual(rc, 1, text)
        argv = json.loads((self.fake.parent / "fake-argv.json").read_text())
        self.assertFalse(any(a.startswith(("-fork", "-ignore_crashes")) for a in argv), argv)
        self.assertFalse(summary["fork"])
        out = self.tmp / "fuzz-out-jobs"
        rc, text = self.cli("fuzz", "fake_target", "--time", "1", "--no-build", "--out", out, "--jobs", "2")
        job = json.loads((self.fake.parent / "fake-job.json").read_text())
        self.assertNotIn("-fork=2", job["argv"])  # the job libFuzzer started; its argv was:
        self.assertIn("INFO: -fork=2: fuzzing in separate process(s)", (out / "fake_target" / "fuzz.log").read_text())
        summary = json.loads((out / "summary.json").read_text())[0]
        self.assertTrue(summary["fork"])

    def test_a_job_stopped_by_a_crash_goes_on_in_fork_mode_for_the_time_left(self):
        """An in-process job stops at its first crash: a seed that crashes on this upstream version (a finding no
        guard steps around here) would end a 60-s job in a second, and exit 0 when the crash is a known finding.
        The job goes on in fork mode for the time left, and says so."""
        self.artifacts({"crash-a1": "assert"})  # an upstream-open finding: not a crash of the job
        (self.fake.parent / "fake-fork-sleeps").write_text("")
        out = self.tmp / "fuzz-out"
        rc, text = self.cli("fuzz", "fake_target", "--time", "3", "--no-build", "--out", out)
        summary = json.loads((out / "summary.json").read_text())[0]
        self.assertEqual(rc, 0, text)
        early = summary["stopped_early"]
        self.assertEqual((early["exit_status"], early["went_on"]), (1, "fork mode (-fork=1 -ignore_crashes=1)"))
        self.assertIn(early["for_s"], (2, 3))
        self.assertLess(early["at_s"], 2)
        argv = json.loads((self.fake.parent / "fake-argv.json").read_text())  # the fork-mode run's
        self.assertIn("-fork=1", argv)
        self.assertIn("-ignore_crashes=1", argv)
        self.assertIn(f"-max_total_time={early['for_s']}", argv)
        self.assertFalse(summary["ended_early"])
        self.assertGreaterEqual(summary["seconds"], 2.0)
        self.assertEqual(summary["execs"], 42 + early["execs"])
        self.assertIn(f"\n  libFuzzer stopped on a crash at {early['at_s']} s (exit status 1); fork mode "
                      f"(-fork=1 -ignore_crashes=1) went on for the {early['for_s']} s left: {early['execs']} more "
                      "inputs\n", text)
        self.assertIn("fuzz.log", summary["log"])
        self.assertIn("==lifeline== libFuzzer stopped on a crash at", Path(summary["log"]).read_text())

    def test_a_job_with_a_bug_switched_on_stops_at_its_first_crash(self):
        """With --reintroduce the crash is what the job looks for: no fork mode after it, and not 'ended early'."""
        self.artifacts({"crash-x1": "switch-uaf"})
        (self.fake.parent / "fake-fork-sleeps").write_text("")
        out = self.tmp / "fuzz-out"
        rc, text = self.cli("fuzz", "fake_target", "--time", "3", "--no-build", "--out", out,
                            "--reintroduce", "fake-fixed-bug")
        summary = json.loads((out / "summary.json").read_text())[0]
        self.assertEqual(rc, 1, text)
        self.assertNotIn("stopped_early", summary)
        self.assertFalse(summary["ended_early"])
        argv = json.loads((self.fake.parent / "fake-argv.json").read_text())  # the last run's: in-process
        self.assertFalse(any(a.startswith("-fork") for a in argv), argv)
        stop = summary["stopped_at_crash"]
        self.assertEqual((stop["exit_status"], stop["reintroduce"]), (1, "fake-fixed-bug"))
        self.assertIn(f"\n  stopped at its first crash, {stop['at_s']} s in (exit status 1): with --reintroduce "
                      "fake-fixed-bug a crash is what the job looks for, not fuzzed past\n", text)
        self.assertNotIn("tested less than asked", text)

    def test_a_job_that_ends_before_its_time_says_so_and_fails(self):
        """A job whose libFuzzer ended before the time asked, not stopped by hand, tested less than it says."""
        self.artifacts({"crash-a1": "assert"})  # fork mode then ends at once: no fake-fork-sleeps
        out = self.tmp / "fuzz-out"
        rc, text = self.cli("fuzz", "fake_target", "--time", "4", "--no-build", "--out", out)
        summary = json.loads((out / "summary.json").read_text())[0]
        self.assertEqual(rc, 1, text)
        self.assertTrue(summary["ended_early"])
        self.assertEqual(summary["crashes"], 0)  # its only artifact is a known upstream-open finding
        self.assertIn(f"\n  ended at {summary['seconds']} s of the 4 s asked (exit status 0), not stopped by hand: it "
                      f"tested less than asked; see {summary['log']}\n", text)
        self.assertIn("\nlifeline fuzz: fake_target ended before the 4 s asked (see above)\n", text)

    def test_fork_mode_figures(self):
        """Fork mode's progress line carries its last job's exec/s (0 for a job that crashed at once) and the
        corpus libFuzzer keeps; the table shows execs over libFuzzer's time and that corpus."""
        self.artifacts({"crash-u": "uaf"})
        out = self.tmp / "fuzz-out"
        rc, text = self.cli("fuzz", "fake_target", "--time", "1", "--no-build", "--out", out, "--jobs", "2")
        summary = json.loads((out / "summary.json").read_text())[0]
        self.assertEqual((summary["execs"], summary["exec_s"], summary["corpus"]), (42, 21, 7), text)
        self.assertEqual(summary["corpus_saved"], 0)
        self.assertRegex(text, r"\nfake_target +42 +21 +7 +1 +0 +/")

    def test_guard_counts(self):
        """Every job gets LIFELINE_GUARD_COUNTS=<out>/<target>/guards.bin, a fresh one; the counts go on
        screen and into summary.json."""
        from lifeline import guards
        out = self.tmp / "fuzz-out"
        (out / "fake_target").mkdir(parents=True)
        (out / "fake_target" / "guards.bin").write_bytes(b"left by the last job")
        rc, text, summary = self.fuzz()
        self.assertEqual(rc, 0, text)
        self.assertEqual(json.loads((self.fake.parent / "fake-guard-env.json").read_text()),
                         str(out / "fake_target" / "guards.bin"))
        self.assertIsNone(summary["guards"])  # no guards: no file, the last job's is gone
        self.assertFalse((out / "fake_target" / "guards.bin").exists())
        self.assertNotIn("guards:", text)
        (self.fake.parent / "fake-guards.bin").write_bytes(guards.build(
            40210, [("fake-guarded", 812), ("fake-other-guard", 0), ("fake-third", 40210)]))
        rc, text, summary = self.fuzz()
        self.assertEqual(rc, 0, text)
        self.assertEqual(summary["guards"], {"file": str(out / "fake_target" / "guards.bin"), "inputs": 40210,
                                             "fired": {"fake-guarded": 812, "fake-other-guard": 0,
                                                       "fake-third": 40210}})
        self.assertIn("\n  guards: fake-third 40210/40210 inputs (100.0%), fake-guarded 812/40210 inputs (2.0%)\n",
                      text)
        (self.fake.parent / "fake-guards.bin").write_bytes(guards.build(10, [("fake-guarded", 1)])[:-3])
        rc, text, summary = self.fuzz()
        self.assertEqual(rc, 0, text)  # an unreadable counter file is reported, not fatal
        self.assertIn("85 bytes, but 1 entries make 88", summary["guards"]["unreadable"])
        self.assertIn(f"\n  guards: {out / 'fake_target' / 'guards.bin'} is unreadable (85 bytes, but 1 entries make 88)\n",
                      text)

    def test_an_interrupted_job_labels_no_artifact(self):
        """Fork mode's log keeps only its children's ERROR lines: an interrupted job's artifacts are not
        replayed, so they are neither crashes nor upstream-open findings, and triage is named to sort them."""
        self.artifacts({"crash-a1": "assert", "crash-u": "uaf"})
        (self.fake.parent / "fake-interrupt").write_text("")
        rc, text, summary = self.fuzz("--jobs", "2")
        self.assertEqual(rc, 130, text)
        self.assertEqual((summary["crashes"], summary["upstream_open"]), (0, 0), summary)
        self.assertEqual(sorted(Path(a).name for a in summary["not_replayed"]), ["crash-a1", "crash-u"])
        self.assertNotIn("signature", summary)
        self.assertNotIn("deadly-signal", text)
        self.assertRegex(text, r"\nfake_target +42 +\d+ +\d+ +0 +0 +/")
        self.assertIn("\n  2 artifacts: 2 not replayed (interrupted)\n", text)
        self.assertIn("    not replayed (interrupted): 2 artifact(s); `lifeline triage` sorts them, e.g. ", text)
        self.assertEqual([(g["kind"], g["count"]) for g in summary["artifact_groups"]], [("not-replayed", 2)])

    def test_fuzz_without_findings(self):
        rc, text, summary = self.fuzz()
        self.assertEqual(rc, 0, text)
        self.assertEqual((summary["crashes"], summary["upstream_open"], summary["upstream_open_bugs"]), (0, 0, []))


    def test_a_slow_unit_is_listed_not_counted_as_a_crash(self):
        # libFuzzer keeps an input that ran past -report_slow_units as slow-unit-<sha1>: nothing crashed.
        self.artifacts({"slow-unit-s": "clean"})
        rc, text, summary = self.fuzz()
        self.assertEqual(rc, 0, text)
        self.assertEqual((summary["crashes"], summary["new_artifacts"]), (0, []))
        self.assertEqual([Path(p).name for p in summary["slow_units"]], ["slow-unit-s"])
        self.assertIn("\n  slow units (over 10 s, not crashes): 1 kept in ", text)

    def test_the_summary_names_the_upstream_ggml_the_lane_was_built_from(self):
        lane = self.root / "build" / "fuzz"
        rc, text, summary = self.fuzz()
        self.assertNotIn("upstream ggml", text)  # a lane without upstream-ggml.txt builds no ggml
        self.assertNotIn("upstream", summary)
        (lane / "skipped-targets.txt").write_text("ggml_vulkan_graph_topology: its patch does not apply\n")
        for pinned, says in (("1", "upstream ggml 0.25.1: the pinned source (npm node-llama-cpp@3.22.1), /b/ggml; "
                                   "skipped: ggml_vulkan_graph_topology (its patch does not apply)"),
                             ("0", "upstream ggml 0.26.0: --ggml-source /my src/ggml (not the pinned version); built: "
                                   "other_target, fake_target; this tree has no ggml_frob (what needs them is left out); "
                                   "skipped: ggml_vulkan_graph_topology (its patch does not apply)")):
            with self.subTest(pinned=pinned):
                version, source = ("0.25.1", "/b/ggml") if pinned == "1" else ("0.26.0", "/my src/ggml")
                (lane / "upstream-ggml.txt").write_text(
                    f"version {version}\nsource {source}\npinned {pinned}\npin npm node-llama-cpp@3.22.1\n"
                    "targets other_target fake_target\n" + ("missing ggml_frob\n" if pinned == "0" else ""))
                rc, text, summary = self.fuzz()
                self.assertEqual(rc, 0, text)
                self.assertIn(f"\n{says}\n", text)
                self.assertEqual(summary["upstream"]["ggml"]["source"], source)
                self.assertEqual(summary["upstream"]["ggml"]["pinned"], pinned == "1")
                self.assertEqual(summary["upstream"]["ggml"]["version"], version)

    def test_ggml_source_is_checked_before_anything_runs(self):
        not_ggml = self.tmp / "not ggml"
        not_ggml.mkdir()
        for args, says in (
                (["fuzz", "--ggml-source", self.tmp / "missing"], f"--ggml-source '{self.tmp / 'missing'}' is not a directory"),
                (["fuzz", "--ggml-source", not_ggml], f"--ggml-source '{not_ggml}' is not a ggml source tree: it has no "
                                                      "src/ggml-alloc.c"),
                (["test", "--ggml-source", not_ggml], "is not a ggml source tree"),
                (["fuzz", "--ggml-source", not_ggml, "--no-build"], "--ggml-source builds the lane from that checkout; "
                                                                   "it cannot go with --no-build")):
            with self.subTest(args=args):
                rc, out, err = self.cli_apart(*args)
                self.assertEqual(rc, 2, out + err)
                self.assertEqual(len(err.strip().splitlines()), 1, err)
                self.assertIn(says, err)
                self.assertEqual(out, "")  # nothing installed, configured or built


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
