"""The replay driver's contract, run against the replay probe of the lane named by LIFELINE_BUILD_DIR."""
import tempfile
import unittest
from pathlib import Path

from support import BUILD, run

PROBE = BUILD / "tests" / "replay_probe"


class ReplayDriver(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        assert PROBE.is_file(), f"{PROBE} is not built (set LIFELINE_BUILD_DIR to a built lane)"

    def test_no_inputs_is_an_error(self):
        rc, out = run([PROBE])
        self.assertEqual(rc, 2)
        self.assertIn("no inputs given", out)

    def test_missing_path_is_named(self):
        rc, out = run([PROBE, "/nonexistent/input"])
        self.assertEqual(rc, 2)
        self.assertIn("'/nonexistent/input' is not a file or directory", out)

    def test_empty_directory_is_an_error(self):
        with tempfile.TemporaryDirectory() as d:
            rc, out = run([PROBE, d])
            self.assertEqual(rc, 2)
            self.assertIn("holds no input files", out)

    def test_libfuzzer_flags_are_refused(self):
        rc, out = run([PROBE, "-runs=10"])
        self.assertEqual(rc, 2)
        self.assertIn("unknown option '-runs=10'", out)

    def test_directory_inputs_run_in_name_order(self):
        with tempfile.TemporaryDirectory() as d:
            for name, size in (("b", 2), ("a", 1), ("c", 3)):
                Path(d, name).write_bytes(b"x" * size)
            rc, out = run([PROBE, d])
            self.assertEqual(rc, 0, out)
            self.assertEqual([l for l in out.splitlines() if l.startswith("probe:")],
                             ["probe: 1", "probe: 2", "probe: 3"])
            self.assertIn("3 input(s) ran", out)

    def test_each_input_is_an_exactly_sized_heap_copy(self):
        # The probe reads data[size] for inputs starting with 'O': one byte past an exact-size copy.
        with tempfile.NamedTemporaryFile() as f:
            f.write(b"O123")
            f.flush()
            rc, out = run([PROBE, f.name])
            self.assertNotEqual(rc, 0)
            self.assertIn("heap-buffer-overflow", out)


if __name__ == "__main__":
    unittest.main()
