"""`lifeline test`: what it reads from ctest's output (skipped tests and their reasons), and its table."""
import json
import shutil
import sys
import tempfile
import unittest
from pathlib import Path

from support import PY, ROOT, run


# ctest 3.25's output for a run with a skipped, a disabled and a failed test (--output-on-failure).
CTEST_OUTPUT = """Test project /work/main/build/asan
    Start 1: unit.a
    Start 2: upstream.ggml-source
1/4 Test #1: unit.a ...........................   Passed    0.00 sec
    Start 3: unit.b
2/4 Test #2: upstream.ggml-source .............***Skipped   0.00 sec
    Start 4: unit.disabled
3/4 Test #4: unit.disabled ....................***Not Run (Disabled)   0.00 sec
4/4 Test #3: unit.b ...........................***Failed    0.00 sec
boom

67% tests passed, 1 tests failed out of 3

Label Time Summary:
unit    =   0.00 sec*proc (2 tests)

Total Test time (real) =   0.00 sec

The following tests did not run:
	  2 - upstream.ggml-source (Skipped)
	  4 - unit.disabled (Disabled)

The following tests FAILED:
	  3 - unit.b (Failed)
Errors while running CTest
"""


class CtestSkips(unittest.TestCase):
    def setUp(self):
        sys.path.insert(0, str(ROOT / "cli"))
        from lifeline import ctest
        self.ctest = ctest

    def feed(self, text):
        c = self.ctest.CtestOutput()
        for line in text.splitlines(keepends=True):
            c.feed(line)
        return c

    def test_skipped_tests_are_not_passed(self):
        c = self.feed(CTEST_OUTPUT)
        self.assertEqual(c.skipped, ["upstream.ggml-source"])
        self.assertEqual(c.counts(), (1, 1, 1))
        self.assertEqual(c.reasons, {})

    def test_no_summary_counts_nothing(self):
        self.assertEqual(self.feed("No tests were found!!!\n").counts(), (0, 0, 0))

    def test_reason_from_verbose_output(self):
        verbose = CTEST_OUTPUT.replace("    Start 3: unit.b\n", "    Start 3: unit.b\n2: SKIPPED: ggml is not fetched\n")
        self.assertEqual(self.feed(verbose).reasons, {"upstream.ggml-source": "ggml is not fetched"})

    def test_reason_printed_after_the_result_line(self):
        c = self.feed(CTEST_OUTPUT.replace("***Skipped   0.00 sec\n", "***Skipped   0.00 sec\nSKIPPED: no ggml\n"))
        self.assertEqual(c.reasons, {"upstream.ggml-source": "no ggml"})

    def test_reason_from_last_test_log(self):
        with tempfile.TemporaryDirectory() as d:
            log = Path(d) / "LastTest.log"
            log.write_text("2/4 Testing: upstream.ggml-source\n2/4 Test: upstream.ggml-source\nCommand: \"x\"\n"
                           "Output:\n----------\nSKIPPED: upstream ggml is not fetched: run scripts/fetch-ggml.sh\n"
                           "<end of output>\n1/4 Test: unit.a\nOutput:\n----------\nSKIPPED: not this one\n")
            self.assertEqual(self.ctest.skip_reasons_from_log(log, ["upstream.ggml-source"]),
                             {"upstream.ggml-source": "upstream ggml is not fetched: run scripts/fetch-ggml.sh"})
            self.assertEqual(self.ctest.skip_reasons_from_log(Path(d) / "nope.log", ["x"]), {})


@unittest.skipUnless(shutil.which("cmake") and shutil.which("ctest") and shutil.which("ninja"), "needs cmake and ninja")
class LifelineTestSkips(unittest.TestCase):
    """`lifeline test` on a scratch CMake project with one passing and two self-skipping tests."""

    def test_skipped_tests_are_counted_and_named(self):
        with tempfile.TemporaryDirectory() as d:
            root = Path(d)
            shutil.copytree(ROOT / "cli", root / "cli",
                            ignore=shutil.ignore_patterns("__pycache__"))
            (root / "scripts").mkdir()
            (root / "scripts" / "install-deps.sh").write_text("#!/bin/sh\nexit 0\n")
            (root / "scripts" / "install-deps.sh").chmod(0o755)
            (root / "CMakeLists.txt").write_text(
                "cmake_minimum_required(VERSION 3.23)\nproject(scratch NONE)\nenable_testing()\n"
                "add_test(NAME unit.pass COMMAND true)\n"
                "foreach(n upstream.one upstream.two)\n"
                "  add_test(NAME ${n} COMMAND sh -c \"echo 'SKIPPED: upstream ggml is not fetched'; exit 77\")\n"
                "  set_tests_properties(${n} PROPERTIES SKIP_RETURN_CODE 77)\n"
                "endforeach()\n")
            (root / "CMakePresets.json").write_text(json.dumps({
                "version": 4,
                "configurePresets": [{"name": "asan", "generator": "Ninja",
                                      "binaryDir": "${sourceDir}/build/${presetName}"}],
                "buildPresets": [{"name": "asan", "configurePreset": "asan"}],
                "testPresets": [{"name": "asan", "configurePreset": "asan", "output": {"outputOnFailure": True}}]}))
            rc, out = run([PY, root / "cli" / "lifeline_main.py", "test", "--lanes", "asan"])
            self.assertEqual(rc, 0, out)
            self.assertIn("lane       build   passed  failed  skipped  build s  total s", out)
            self.assertRegex(out, r"\nasan\s+ok\s+1\s+0\s+2\s")
            self.assertIn("skipped in lane asan:\n  upstream.one: upstream ggml is not fetched\n"
                          "  upstream.two: upstream ggml is not fetched\n", out)
            self.assertIn("lifeline: 1 passed, 0 failed, 2 skipped", out)


if __name__ == "__main__":
    unittest.main()
