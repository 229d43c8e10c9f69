"""tests/lanes/gtest_batch.py, the valgrind lane's one run per GoogleTest binary: the ctest tests it writes,
and that a failed case, a launcher error and a crash each fail (a stand-in binary speaks gtest's protocol)."""
import os
import tempfile
import textwrap
import unittest
from pathlib import Path

from support import PY, ROOT, run

BATCH = ROOT / "tests" / "lanes" / "gtest_batch.py"

# A stand-in for a gtest binary: lists two suites; writes a report in gtest's XML form; FAKE_GTEST says how
# the run ends (pass, fail: A.Second fails, error: all pass but the launcher's exit 99, crash: no report).
FAKE = textwrap.dedent('''\
    import os, sys
    how = os.environ.get("FAKE_GTEST", "pass")
    if "--gtest_list_tests" in sys.argv:
        print("Running main() from gtest_main.cc")
        print("A.\\n  First\\n  Second\\nB.\\n  Skipped")
        sys.exit(0)
    xml = next(a.split(":", 1)[1] for a in sys.argv if a.startswith("--gtest_output=xml:"))
    if how == "crash":
        os.abort()
    second = '<failure message="x.cc:3&#x0A;one is not two" type=""/>' if how == "fail" else ""
    with open(xml, "w") as f:
        f.write('<?xml version="1.0"?><testsuites><testsuite name="A">'
                '<testcase name="First" status="run" result="completed" classname="A"/>'
                '<testcase name="Second" status="run" result="completed" classname="A">' + second + '</testcase>'
                '</testsuite><testsuite name="B"><testcase name="Skipped" status="run" result="skipped" '
                'classname="B"><skipped message="x.cc:9&#x0A;no device"/></testcase></testsuite></testsuites>')
    sys.exit({"pass": 0, "fail": 1, "error": 99}[how])
''')


class GtestBatchTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = Path(self.tmp.name)
        self.fake = self.dir / "fake gtest"  # a space: every path is quoted in what it writes
        self.fake.write_text(f"#!{PY}\n" + FAKE)
        self.fake.chmod(0o755)
        self.xml = self.dir / "report.xml"

    def tearDown(self):
        self.tmp.cleanup()

    def batch(self, *args, how="pass"):
        return run([PY, BATCH, *args], env=dict(os.environ, FAKE_GTEST=how))

    def test_discover_writes_one_test_per_case_requiring_the_run(self):
        out = self.dir / "cases.cmake"
        rc, text = self.batch("discover", self.fake, out, "fake", self.xml, "unit", "", "python")
        self.assertEqual(rc, 0, text)
        written = out.read_text()
        self.assertEqual(written.count("add_test("), 3)
        for case in ("A.First", "A.Second", "B.Skipped"):
            self.assertIn(f"add_test([==[unit.{case}]==] [==[", written)
            self.assertIn(f"[==[{case}]==])", written)
        self.assertEqual(written.count("FIXTURES_REQUIRED [==[gtest.fake]==] LABELS [==[unit;python]==]"), 3)

    def test_each_case_reads_its_own_result(self):
        rc, text = self.batch("run", self.xml, "--", self.fake, how="fail")
        self.assertEqual(rc, 0, text)  # the failed case fails its own test, not the run
        self.assertIn("1 case(s) failed, each shown by its own test: A.Second", text)
        self.assertEqual(self.batch("check", self.xml, "A.First")[0], 0)
        rc, text = self.batch("check", self.xml, "A.Second")
        self.assertEqual(rc, 1)
        self.assertIn("one is not two", text)
        rc, text = self.batch("check", self.xml, "B.Skipped")
        self.assertEqual(rc, 77)
        self.assertIn("SKIPPED: x.cc:9\nno device", text)
        rc, text = self.batch("check", self.xml, "A.Third")
        self.assertEqual(rc, 1)
        self.assertIn("A.Third is not in the report", text)

    def test_a_launcher_error_or_a_crash_fails_the_run(self):
        rc, text = self.batch("run", self.xml, "--", self.fake, how="error")
        self.assertEqual(rc, 1, text)
        self.assertIn("the run exited 99 (memcheck found errors", text)
        rc, text = self.batch("run", self.xml, "--", self.fake, how="crash")
        self.assertEqual(rc, 1, text)
        self.assertIn("wrote no readable report", text)
        self.assertFalse(self.xml.exists())  # the report of the run before is removed first

    def test_a_passing_run_passes_its_cases(self):
        self.assertEqual(self.batch("run", self.xml, "--", self.fake)[0], 0)
        self.assertEqual(self.batch("check", self.xml, "A.Second")[0], 0)


if __name__ == "__main__":
    unittest.main()
