"""A target's own libFuzzer settings (targets/<t>.options, lifeline/options.py): what is read, every way a file
can be wrong (one line naming the file, the line and the problem), and the checked-in files themselves."""
import io
import tempfile
import unittest
from contextlib import redirect_stdout
from pathlib import Path

from lifeline import options
from lifeline.paths import ROOT
from lifeline.usage import UsageError


class Parse(unittest.TestCase):
    def test_keys_become_flags_in_file_order(self):
        text = "# why\n[libfuzzer]\nentropic = 0\n\nuse_value_profile=1\n"
        self.assertEqual(options.parse(text, "t.options"), {"entropic": "0", "use_value_profile": "1"})

    def test_an_empty_file_sets_nothing(self):
        self.assertEqual(options.parse("# nothing yet\n", "t.options"), {})

    def bad(self, text, *needles):
        with self.assertRaises(UsageError) as cm:
            options.parse(text, "targets/t.options")
        msg = str(cm.exception)
        self.assertIn("targets/t.options:", msg)
        self.assertEqual(len(msg.splitlines()), 1)
        for n in needles:
            self.assertIn(n, msg)

    def test_a_key_before_the_section(self):
        self.bad("entropic = 0\n", ":1:", "before the [libfuzzer] section")

    def test_another_section(self):
        self.bad("[afl]\nx = 1\n", ":1:", "only [libfuzzer]")

    def test_a_second_section(self):
        self.bad("[libfuzzer]\nentropic = 0\n[libfuzzer]\n", ":3:", "second")

    def test_a_line_that_is_no_pair(self):
        self.bad("[libfuzzer]\nentropic\n", ":2:", "key = value")
        self.bad("[libfuzzer]\n-entropic = 0\n", ":2:", "without its dash")
        self.bad("[libfuzzer]\nentropic = 0; rm -rf /\n", ":2:")
        self.bad("[libfuzzer]\nentropic = \n", ":2:")

    def test_a_key_set_per_run(self):
        for key in ("max_total_time", "runs", "artifact_prefix", "seed", "fork", "dict"):
            self.bad(f"[libfuzzer]\n{key} = 1\n", ":2:", key, "per run")

    def test_a_timeout_that_is_no_count_of_seconds(self):
        for value in ("0", "2.5", "-1", "x"):
            self.bad(f"[libfuzzer]\ntimeout = {value}\n", ":2:", "timeout", "whole number")

    def test_a_key_set_twice(self):
        self.bad("[libfuzzer]\nentropic = 0\nentropic = 1\n", ":3:", "twice")


class Files(unittest.TestCase):
    def test_no_file_means_no_flags(self):
        with tempfile.TemporaryDirectory() as d:
            (Path(d) / "targets").mkdir()
            self.assertEqual(options.libfuzzer_flags("t", Path(d)), [])

    def test_the_per_input_timeout(self):
        with tempfile.TemporaryDirectory() as d:
            (Path(d) / "targets").mkdir()
            self.assertEqual(options.per_input_timeout("t", Path(d)), options.DEFAULT_TIMEOUT_S)
            (Path(d) / "targets" / "t.options").write_text("[libfuzzer]\nentropic = 0\n")
            self.assertEqual(options.per_input_timeout("t", Path(d)), 25)
            (Path(d) / "targets" / "t.options").write_text("[libfuzzer]\ntimeout = 120\n")
            self.assertEqual(options.per_input_timeout("t", Path(d)), 120)
            self.assertEqual(options.libfuzzer_flags("t", Path(d)), ["-timeout=120"])

    def test_flags_from_a_file(self):
        with tempfile.TemporaryDirectory() as d:
            (Path(d) / "targets").mkdir()
            (Path(d) / "targets" / "t.options").write_text("[libfuzzer]\nentropic = 0\n")
            self.assertEqual(options.libfuzzer_flags("t", Path(d)), ["-entropic=0"])

    def test_a_file_that_is_not_text(self):
        with tempfile.TemporaryDirectory() as d:
            (Path(d) / "targets").mkdir()
            (Path(d) / "targets" / "t.options").write_bytes(b"[libfuzzer]\n\xff\xfe\n")
            with self.assertRaises(UsageError) as cm:
                options.libfuzzer_flags("t", Path(d))
            self.assertIn("cannot be read", str(cm.exception))

    def test_every_checked_in_file_reads(self):
        found = sorted((ROOT / "targets").glob("*.options"))
        for p in found:
            self.assertTrue((ROOT / "targets" / f"{p.stem}.cc").is_file(), f"{p.name} names no fuzz target")
            flags = options.libfuzzer_flags(p.stem)
            self.assertTrue(flags, f"{p.name} sets nothing")


class Verb(unittest.TestCase):
    def test_prints_one_flag_per_line(self):
        target = next(iter(sorted(p.stem for p in (ROOT / "targets").glob("*.options"))), None)
        self.assertIsNotNone(target, "no targets/<t>.options to read")
        out = io.StringIO()
        with redirect_stdout(out):
            self.assertEqual(options.cmd_libfuzzer_flags([target]), 0)
        self.assertEqual(out.getvalue().splitlines(), options.libfuzzer_flags(target))

    def test_refuses_what_is_no_target(self):
        for argv in ([], ["a", "b"], ["../etc"], ["no_such_target"]):
            with self.assertRaises(UsageError):
                options.cmd_libfuzzer_flags(argv)


if __name__ == "__main__":
    unittest.main()
