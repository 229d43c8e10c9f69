"""The crash-report parser on real reports captured from this project's binaries (tests/data/reports/).

Each report was produced by a lifeline binary in its lane: the reproducer inputs of wasm-lang-dangling with
the bug switched on, and tests/lane_selftest.cc's deliberate errors."""
import unittest
from pathlib import Path

from lifeline import crash

REPORTS = Path(__file__).resolve().parents[1] / "data" / "reports"
WORKER = ["lifeline::interop::(anonymous namespace)::ReadCString",
          "lifeline::interop::(anonymous namespace)::Transcribe",
          "lifeline::interop::(anonymous namespace)::RunJobWorker"]

# file -> (tool, type, crash state, access)
EXPECTED = {
    "asan-stack-use-after-return.txt": ("asan", "stack-use-after-return", WORKER, "READ 1"),
    "asan-heap-use-after-free.txt": ("asan", "heap-use-after-free", WORKER, "READ 1"),
    "libfuzzer-asan-heap-use-after-free.txt": ("asan", "heap-use-after-free", WORKER, "READ 1"),
    "tsan-heap-use-after-free.txt": ("tsan", "heap-use-after-free", WORKER, "READ 1"),
    "tsan-data-race.txt": ("tsan", "data-race", ["(anonymous namespace)::IncrementRacy"], None),
    "valgrind-invalid-read.txt": ("valgrind", "invalid-read", WORKER, "READ 1"),
    "valgrind-uninitialized-value.txt": ("valgrind", "uninitialized-value", WORKER, None),
    "valgrind-definite-leak.txt": ("valgrind", "definite-leak", ["(anonymous namespace)::LeakBlock"], None),
    "lsan-direct-leak.txt": ("lsan", "direct-leak", ["(anonymous namespace)::LeakBlock"], None),
    "ubsan-signed-integer-overflow.txt": ("ubsan", "signed-integer-overflow", ["(anonymous namespace)::OverflowSigned"], None),
    "check-asan.txt": ("lifeline", "lifeline-check", ["(anonymous namespace)::FailCheck"], None),
    "check-tsan.txt": ("lifeline", "lifeline-check", ["(anonymous namespace)::FailCheck"], None),
    "check-valgrind.txt": ("lifeline", "lifeline-check", ["(anonymous namespace)::FailCheck"], None),
}


class CapturedReports(unittest.TestCase):
    def test_every_captured_report_is_covered(self):
        on_disk = {p.name for p in REPORTS.glob("*.txt")} - {"clean-asan.txt"}
        self.assertEqual(on_disk, set(EXPECTED))

    def test_each_report_parses_to_its_type_and_state(self):
        for name, (tool, kind, state, access) in EXPECTED.items():
            with self.subTest(report=name):
                c = crash.parse((REPORTS / name).read_text())
                self.assertIsNotNone(c)
                self.assertEqual(c.tool, tool)
                self.assertEqual(c.type, kind)
                self.assertEqual(c.state[:len(state)], state)
                self.assertLessEqual(len(c.state), crash.STATE_FRAMES)
                if access:
                    self.assertEqual(c.access, access)

    def test_check_report_carries_its_message(self):
        c = crash.parse((REPORTS / "check-asan.txt").read_text())
        self.assertEqual(c.message, "selftest: deliberate check failure")

    def test_ubsan_report_carries_the_runtime_error(self):
        c = crash.parse((REPORTS / "ubsan-signed-integer-overflow.txt").read_text())
        self.assertIn("2147483647 + 1 cannot be represented", c.message)

    def test_clean_run_has_no_report(self):
        self.assertIsNone(crash.parse((REPORTS / "clean-asan.txt").read_text()))
        self.assertIsNone(crash.parse(""))


class Signatures(unittest.TestCase):
    def setUp(self):
        self.c = crash.parse((REPORTS / "asan-stack-use-after-return.txt").read_text())

    def test_matching_type_and_frame(self):
        ok, why = crash.matches(self.c, {"type": "stack-use-after-return", "frame": "RunJobWorker"})
        self.assertTrue(ok, why)

    def test_wrong_type_is_named(self):
        ok, why = crash.matches(self.c, {"type": "heap-use-after-free", "frame": "RunJobWorker"})
        self.assertFalse(ok)
        self.assertIn("'stack-use-after-return'", why)

    def test_frame_outside_the_crash_state_does_not_match(self):
        # CallFullDefaultFromJs is on the stack that created the thread, not on the faulting stack.
        ok, why = crash.matches(self.c, {"type": "stack-use-after-return", "frame": "CallFullDefaultFromJs"})
        self.assertFalse(ok)
        self.assertIn("not in the crash state", why)

    def test_no_report_never_matches(self):
        ok, why = crash.matches(None, {"type": "heap-use-after-free", "frame": "x"})
        self.assertFalse(ok)
        self.assertIn("no report", why)

    def test_message_signature(self):
        c = crash.parse((REPORTS / "check-tsan.txt").read_text())
        self.assertTrue(crash.matches(c, {"type": "lifeline-check", "message": "deliberate check"})[0])
        self.assertFalse(crash.matches(c, {"type": "lifeline-check", "message": "value oracle"})[0])


class Normalization(unittest.TestCase):
    def test_argument_lists_and_qualifiers_are_dropped(self):
        self.assertEqual(crash.normalize_function("a::B::f(int, char const*) const"), "a::B::f")
        self.assertEqual(crash.normalize_function("f[abi:cxx11](char const*)"), "f")

    def test_lambda_keeps_enclosing_function(self):
        self.assertEqual(crash.normalize_function("a::f(int)::$_0::operator()() const"), "a::f(int)::$_0::operator()")

    def test_return_type_of_template_function_is_dropped(self):
        self.assertEqual(crash.normalize_function("void std::__invoke_impl<void>(int)"), "std::__invoke_impl<void>")


if __name__ == "__main__":
    unittest.main()
