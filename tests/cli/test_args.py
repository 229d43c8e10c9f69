"""The CLI's handling of bad arguments: one line naming the problem, exit status 2."""
import os
import tempfile
import unittest

from support import CLI, run


class CliArguments(unittest.TestCase):
    def assertUsageError(self, args, text):
        rc, out = run(CLI + args)
        self.assertEqual(rc, 2, out)
        self.assertIn(text, out)
        self.assertEqual(len(out.strip().splitlines()), 1, out)

    def test_unknown_command(self):
        self.assertUsageError(["frobnicate"], "invalid choice: 'frobnicate'")

    def test_unknown_target(self):
        self.assertUsageError(["fuzz", "no_such_target", "--no-build"], "unknown target 'no_such_target'")

    def test_unknown_bug_id(self):
        self.assertUsageError(["fuzz", "--reintroduce", "no-such-bug", "--no-build"], "unknown bug id 'no-such-bug'")

    def test_bad_time(self):
        self.assertUsageError(["fuzz", "--time", "0", "--no-build"], "--time must be a positive")

    def test_unknown_lane(self):
        self.assertUsageError(["test", "--lanes", "asan,msan"], "unknown lane 'msan'")

    def test_missing_report_file(self):
        self.assertUsageError(["classify", "/nonexistent/report"], "'/nonexistent/report' does not exist")

    def test_fuzz_lane_without_engine(self):
        self.assertUsageError(["fuzz", "--lane", "asan", "--no-build"], "lane 'asan' links no fuzzing engine")

    def test_fuzz_bad_jobs(self):
        self.assertUsageError(["fuzz", "--jobs", "0", "--no-build"], "--jobs must be at least 1")

    def test_fuzz_unknown_engine(self):
        self.assertUsageError(["fuzz", "--engine", "honggfuzz", "--no-build"], "invalid choice: 'honggfuzz'")

    def test_triage_missing_crash_file(self):
        self.assertUsageError(["triage", "/nonexistent/crash-1"], "crash file '/nonexistent/crash-1' does not exist")

    def test_a_directory_or_special_file_is_named_as_such(self):
        with tempfile.TemporaryDirectory() as d:
            fifo = os.path.join(d, "fifo")
            os.mkfifo(fifo)
            for args, text in ((["triage", d], f"crash file '{d}' is a directory; give the files in it"),
                               (["promote", d, "--id", "wasm-lang-dangling"], f"crash file '{d}' is a directory"),
                               (["classify", d], f"report '{d}' is a directory; give the files in it"),
                               (["report", "--triage", d], f"triage results '{d}' is a directory"),
                               (["classify", fifo], f"report '{fifo}' is not a regular file"),
                               (["triage", fifo], f"crash file '{fifo}' is not a regular file")):
                with self.subTest(args=args):
                    self.assertUsageError(args, text)

    def test_triage_needs_a_target_outside_fuzz_out(self):
        with tempfile.NamedTemporaryFile() as f:
            self.assertUsageError(["triage", f.name], "give --target")

    def test_triage_unknown_target(self):
        with tempfile.NamedTemporaryFile() as f:
            self.assertUsageError(["triage", f.name, "--target", "nope"], "unknown target 'nope'")

    def test_promote_unknown_switch(self):
        with tempfile.NamedTemporaryFile() as f:
            self.assertUsageError(["promote", f.name, "--id", "new-thing"], "no switch named 'new-thing'")

    def test_promote_bad_id(self):
        with tempfile.NamedTemporaryFile() as f:
            self.assertUsageError(["promote", f.name, "--id", "Bad_Id"], "'Bad_Id' is not a bug id")

    def test_promote_existing_reproducer(self):
        with tempfile.NamedTemporaryFile() as f:
            self.assertUsageError(["promote", f.name, "--id", "wasm-lang-dangling"], "already exists")

    def test_report_missing_triage(self):
        self.assertUsageError(["report", "--triage", "/nonexistent.json"], "do not exist")

    def test_report_corrupt_triage(self):
        with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
            f.write("{not json")
            f.flush()
            self.assertUsageError(["report", "--triage", f.name], "is not triage output")

    def test_corpus_unknown_action_and_target(self):
        self.assertUsageError(["corpus", "split", "alloc_graph_topology", "/tmp"], "unknown action 'split'")
        self.assertUsageError(["corpus", "merge", "nope", "/tmp"], "unknown target 'nope'")
        self.assertUsageError(["corpus", "merge", "alloc_graph_topology", "/nonexistent"], "is not a directory")


if __name__ == "__main__":
    unittest.main()
