"""The figures `lifeline fuzz` reads from a libFuzzer job's output (lifeline.fuzz.JobLog), on lines captured
from real jobs of the fuzz lane (clang 14's libFuzzer), and how it groups a job's artifacts."""
import unittest

from lifeline.fuzz import JobLog, artifact_lines, executed_units, group_artifacts

# `lifeline fuzz ggml_graph_topology --time 20` (one process), its progress lines and final stats.
PLAIN = """\
INFO: Running with entropic power schedule (0xFF, 100).
INFO: seed corpus: files: 668 min: 1b max: 401b total: 109839b rss: 42Mb
#512	pulse  cov: 3926 ft: 24430 corp: 476/60Kb exec/s: 170 rss: 239Mb
#670	INITED cov: 3933 ft: 24969 corp: 618/97Kb exec/s: 167 rss: 246Mb
#1024	pulse  cov: 3979 ft: 25082 corp: 632/99Kb lim: 401 exec/s: 170 rss: 254Mb
#5319	NEW    cov: 3996 ft: 25297 corp: 685/106Kb lim: 401 exec/s: 265 rss: 273Mb L: 148/401 MS: 5 InsertByte-ChangeBit-
#5454	DONE   cov: 3996 ft: 25297 corp: 685/106Kb lim: 401 exec/s: 259 rss: 273Mb
Done 5454 runs in 21 second(s)
stat::number_of_executed_units: 5454
stat::average_exec_per_sec:     259
stat::new_units_added:          128
stat::slowest_unit_time_sec:    0
stat::peak_rss_mb:              273
"""

# `lifeline fuzz ggml_graph_topology --jobs 2 --time 20` with every guard off (LIFELINE_UNGUARD): fork
# mode with -ignore_crashes=1, 18 jobs, 17 of them crashed; many within their first second (exec/s 0).
FORK = """\
INFO: Running with entropic power schedule (0xFF, 100).
INFO: -fork=2: fuzzing in separate process(s)
INFO: -fork=2: 623 seed inputs, starting to fuzz in /tmp/libFuzzerTemp.FuzzWithFork27109.dir
#65: cov: 25004 ft: 25004 corp: 623 exec/s 0 oom/timeout/crash: 0/0/0 time: 3s job: 2 dft_time: 0
==27121== ERROR: libFuzzer: deadly signal
#112: cov: 25004 ft: 25004 corp: 623 exec/s 0 oom/timeout/crash: 0/0/1 time: 4s job: 3 dft_time: 0
==27127== ERROR: libFuzzer: deadly signal
#198: cov: 25004 ft: 25004 corp: 623 exec/s 86 oom/timeout/crash: 0/0/2 time: 4s job: 1 dft_time: 0
==27119== ERROR: libFuzzer: deadly signal
#1739: cov: 28066 ft: 25058 corp: 643 exec/s 99 oom/timeout/crash: 0/0/16 time: 19s job: 18 dft_time: 0
==27237== ERROR: libFuzzer: deadly signal
#2040: cov: 28066 ft: 25058 corp: 643 exec/s 0 oom/timeout/crash: 0/0/17 time: 20s job: 16 dft_time: 0
==27219== ERROR: libFuzzer: deadly signal
INFO: fuzzed for 20 seconds, wrapping up soon
INFO: exiting: 0 time: 20s
"""


def read(text):
    log = JobLog()
    for line in text.splitlines(keepends=True):
        log.feed(line)
    return log


class PlainJob(unittest.TestCase):
    def test_final_stats(self):
        log = read(PLAIN)
        self.assertFalse(log.fork)
        self.assertEqual((log.total_execs(), log.exec_per_s(25.0), log.corpus, log.cov), (5454, 259, 685, 3996))
        self.assertEqual(executed_units(PLAIN), 5454)

    def test_a_job_stopped_before_its_final_stats_keeps_its_last_line(self):
        log = read(PLAIN.split("Done")[0])
        self.assertEqual((log.total_execs(), log.exec_per_s(99.0), log.corpus), (5454, 259, 685))

    def test_a_job_that_crashed_in_its_first_second(self):
        """libFuzzer's average is execs / whole seconds: 0 for a job under a second; then execs / elapsed."""
        text = ("#2\tINITED cov: 3 ft: 3 corp: 1/1b exec/s: 0 rss: 30Mb\n==1==ERROR: AddressSanitizer: x\n"
                "stat::number_of_executed_units: 40\nstat::average_exec_per_sec:     0\n")
        log = read(text)
        self.assertEqual((log.total_execs(), log.exec_per_s(0.5), log.corpus), (40, 80, 1))

    def test_no_progress_at_all(self):
        log = read("ERROR: The required directory \"/x\" does not exist\n")
        self.assertEqual((log.total_execs(), log.exec_per_s(1.0), log.corpus), (0, 0, None))


class ForkModeJob(unittest.TestCase):
    def test_execs_rate_and_corpus_are_the_whole_job(self):
        log = read(FORK)
        self.assertTrue(log.fork)
        self.assertEqual(log.total_execs(), 2040)
        # The last line's "exec/s 0" is its job's; the job's rate is its execs over libFuzzer's 20 s.
        self.assertEqual(log.exec_per_s(26.0), 102)
        self.assertEqual(log.corpus, 643)  # seeds the first merge kept (623) and what the jobs added
        self.assertEqual(log.fork_crashes, (0, 0, 17))
        self.assertEqual(executed_units(FORK), 2040)

    def test_before_the_first_job_ends(self):
        log = read(FORK.split("#65")[0])
        self.assertTrue(log.fork)
        self.assertEqual((log.total_execs(), log.exec_per_s(2.0), log.corpus), (0, 0, None))

    def test_a_crash_it_stops_on_adds_that_jobs_inputs(self):
        """Without -ignore_crashes fork mode prints the crashed job's whole log and stops: its final stats
        are that job's alone, which no progress line counted."""
        text = FORK.split("INFO: fuzzed")[0] + ("INFO: log from the inner process:\n"
                                                "stat::number_of_executed_units: 60\n"
                                                "stat::average_exec_per_sec:     0\n")
        log = read(text)
        self.assertEqual(log.total_execs(), 2100)
        self.assertEqual(log.exec_per_s(30.0), 105)

    def test_an_older_line_without_time_falls_back_to_the_wall_clock(self):
        log = read("INFO: -fork=2: fuzzing in separate process(s)\n#300: cov: 3 ft: 3 corp: 9 exec/s: 0\n")
        self.assertEqual((log.total_execs(), log.exec_per_s(10.0), log.corpus), (300, 30, 9))


def crash(name, sig, short=None, bug=None):
    e = {"artifact": f"/o/t/artifacts/{name}", "signature": sig, "short": short or sig.split(" |")[0]}
    if bug:
        e["bug"] = bug
    return e


class Grouping(unittest.TestCase):
    def test_by_bug_id_then_signature(self):
        upstream = ([crash(f"crash-l{i:02}", "heap-buffer-overflow | ggml_gallocr_init_tensor",
                           bug="ggml-gallocr-leaf-records-unchecked") for i in range(18)]
                    + [crash(f"crash-m{i}", "assert | ggml_gallocr_init_tensor",
                             bug="ggml-gallocr-leaf-records-unchecked") for i in range(2)]
                    + [crash(f"crash-s{i}", "assert | ggml_compute_forward_scale",
                             bug="ggml-cpu-scale-f16-unsupported") for i in range(5)])
        crashes = [crash("crash-n", "heap-buffer-overflow | foo / bar", "heap-buffer-overflow in foo")]
        groups = group_artifacts(crashes, list(reversed(upstream)), [])
        self.assertEqual([(g["kind"], g["label"], g["count"]) for g in groups], [
            ("new", "new: heap-buffer-overflow in foo", 1),
            ("upstream-open", "upstream-open ggml-gallocr-leaf-records-unchecked", 20),
            ("upstream-open", "upstream-open ggml-cpu-scale-f16-unsupported", 5)])
        self.assertEqual(groups[1]["signatures"], ["assert | ggml_gallocr_init_tensor",
                                                   "heap-buffer-overflow | ggml_gallocr_init_tensor"])
        self.assertEqual(groups[1]["artifacts"], sorted(groups[1]["artifacts"]))
        self.assertEqual(len(groups[1]["artifacts"]), 20)
        lines = artifact_lines({"artifact_groups": groups})
        self.assertEqual(lines, [
            "  26 artifacts: 1 new: heap-buffer-overflow in foo, 20 upstream-open ggml-gallocr-leaf-records-unchecked, "
            "5 upstream-open ggml-cpu-scale-f16-unsupported",
            "    new crash: heap-buffer-overflow | foo / bar (1), e.g. /o/t/artifacts/crash-n"])

    def test_nothing_found_prints_nothing(self):
        self.assertEqual(group_artifacts([], [], []), [])
        self.assertEqual(artifact_lines({"artifact_groups": []}), [])
        self.assertEqual(artifact_lines({}), [])

    def test_one_artifact(self):
        groups = group_artifacts([{"artifact": "/a/crash-1", "signature": "(did not reproduce on replay)",
                                   "replay": "clean"}], [], [])
        self.assertEqual(artifact_lines({"artifact_groups": groups}), [
            "  1 artifact: 1 did not reproduce on replay",
            "    did not reproduce on replay (1), e.g. /a/crash-1"])

    def test_the_same_input_gives_the_same_groups(self):
        a = [crash("crash-b", "x | f"), crash("crash-a", "y | g"), crash("crash-c", "x | f")]
        self.assertEqual(group_artifacts(a, [], []), group_artifacts(list(reversed(a)), [], []))


if __name__ == "__main__":
    unittest.main()
