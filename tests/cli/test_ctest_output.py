"""`lifeline test`: what it reads from ctest's output (skipped tests and their reasons), and its table."""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest
from pathlib import Path
from unittest import mock

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


class CcacheCounts(unittest.TestCase):
    """A lane's "N of M compilations taken from ccache" comes from its own stats log (CCACHE_STATSLOG, set by
    cmake/LifelineLane.cmake), never from the cache's counters, which a build beside it would add to."""

    def test_each_lane_counts_its_own_log(self):
        sys.path.insert(0, str(ROOT / "cli"))
        from lifeline import build
        with tempfile.TemporaryDirectory() as d, mock.patch.object(build, "ROOT", Path(d)):
            self.assertIsNone(build.ccache_stats("asan"))  # nothing compiled through ccache
            log = Path(d) / "build" / "asan" / "ccache-stats.log"
            log.parent.mkdir(parents=True)
            # ccache 4.7's stats log: a "# source" line, then the counters that compilation touched.
            log.write_text("# /p/a.cc\ncache_miss\ndirect_cache_miss\nlocal_storage_miss\npreprocessed_cache_miss\n"
                           "# /p/b.cc\ndirect_cache_hit\nlocal_storage_hit\n# /p/c.cc\npreprocessed_cache_hit\n"
                           "direct_cache_miss\n")
            self.assertEqual(build.ccache_stats("asan"), (2, 1))
            self.assertIsNone(build.ccache_stats("lsan"))
            build.ccache_zero_stats("asan")
            self.assertFalse(log.exists())
            self.assertIsNone(build.ccache_stats("asan"))


def scratch_lanes(root: Path, lists: str, lanes: list[str]) -> None:
    """A scratch checkout `lifeline test` can run: the CLI, a no-op install-deps.sh, CMakeLists.txt `lists` and a
    preset per lane (build/<lane>/)."""
    shutil.copytree(ROOT / "cli", root / "cli", ignore=shutil.ignore_patterns("__pycache__"))
    (root / "scripts").mkdir()
    (root / "scripts" / "install-deps.sh").write_text("#!/bin/sh\nexit 0\n")
    (root / "scripts" / "install-deps.sh").chmod(0o755)
    (root / "CMakeLists.txt").write_text("cmake_minimum_required(VERSION 3.23)\nproject(scratch NONE)\n"
                                         "enable_testing()\n" + lists)
    (root / "CMakePresets.json").write_text(json.dumps({
        "version": 4,
        "configurePresets": [{"name": n, "generator": "Ninja", "binaryDir": "${sourceDir}/build/${presetName}",
                              "cacheVariables": {"LANE": n}} for n in lanes],
        "buildPresets": [{"name": n, "configurePreset": n} for n in lanes],
        "testPresets": [{"name": n, "configurePreset": n, "output": {"outputOnFailure": True}} for n in lanes]}))


@unittest.skipUnless(shutil.which("cmake") and shutil.which("ctest") and shutil.which("ninja"), "needs cmake and ninja")
class LifelineTestSkips(unittest.TestCase):
    """`lifeline test` on a scratch CMake project with one passing and two self-skipping tests."""

    def test_skipped_tests_are_counted_and_named(self):
        with tempfile.TemporaryDirectory() as d:
            root = Path(d)
            scratch_lanes(root,
                          "add_test(NAME unit.pass COMMAND true)\n"
                          "foreach(n upstream.one upstream.two)\n"
                          "  add_test(NAME ${n} COMMAND sh -c \"echo 'SKIPPED: upstream ggml is not fetched'; exit 77\")\n"
                          "  set_tests_properties(${n} PROPERTIES SKIP_RETURN_CODE 77)\n"
                          "endforeach()\n", ["asan"])
            rc, out = run([PY, root / "cli" / "lifeline_main.py", "test", "--lanes", "asan"])
            self.assertEqual(rc, 0, out)
            self.assertIn("lane       build   passed  failed  skipped  build s  ctest s", out)
            self.assertRegex(out, r"\nasan\s+ok\s+1\s+0\s+2\s")
            self.assertIn("skipped in lane asan:\n  upstream.one: upstream ggml is not fetched\n"
                          "  upstream.two: upstream ggml is not fetched\n", out)
            self.assertIn("lifeline: 1 passed, 0 failed, 2 skipped", out)


# Each lane's build prints its name, its CPU priority (`nice`) and its session, then its test sleeps a little (in
# the ctest of lane `asan`, the next lane's build runs). The session must stay the caller's: with the kernel's
# autogroup scheduling, a process in another session competes with this one as an equal whatever its nice value.
TWO_LANES = """add_custom_target(say ALL COMMAND sh -c "echo built-lane-${LANE} niceness-`nice` session-`awk '{print $6}' /proc/self/stat`" VERBATIM)
add_test(NAME unit.${LANE} COMMAND sh -c "sleep 1; echo tested-lane-${LANE}")
"""


@unittest.skipUnless(shutil.which("cmake") and shutil.which("ctest") and shutil.which("ninja"), "needs cmake and ninja")
class LifelineTestOverlap(unittest.TestCase):
    """`lifeline test` builds the next lane beside a lane's ctest, at nice 19, and prints each build in its turn."""

    def test_the_next_build_runs_niced_beside_the_ctest_and_prints_in_its_turn(self):
        with tempfile.TemporaryDirectory() as d:
            root = Path(d)
            scratch_lanes(root, TWO_LANES, ["asan", "fuzz"])
            # Given in the other order: asan runs first (fuzz takes its objects from the compiler cache).
            rc, out = run([PY, root / "cli" / "lifeline_main.py", "test", "--lanes", "fuzz,asan"])
            self.assertEqual(rc, 0, out)
            own = os.nice(0)
            order = [line for line in out.splitlines()
                     if line.startswith("==== lane") or line.startswith("built-lane") or "Passed" in line]
            self.assertEqual(order[0], "==== lane asan: build ====", out)
            self.assertIn(f"built-lane-asan niceness-{own}", order[1])
            self.assertTrue(order[2].startswith("==== lane asan: ctest ==== (beside it, at nice 19, the builds of "
                                                "lanes fuzz)"), out)
            self.assertIn("unit.asan", order[3])
            self.assertEqual(order[4], "==== lane fuzz: build ====", out)
            self.assertIn(f"built-lane-fuzz niceness-{min(own + 19, 19)} session-{os.getsid(0)}", order[5])
            self.assertEqual(order[6], "==== lane fuzz: ctest ====", out)
            self.assertIn("unit.fuzz", order[7])
            self.assertRegex(out, r"\nasan\s+ok\s+1\s+0\s+0\s+\d+\s+\d+\nfuzz\s+ok\s+1\s+0\s+0\s")
            self.assertIn("lifeline: 2 passed, 0 failed, 0 skipped", out)

    def test_builds_run_ahead_of_the_ctests_one_at_a_time(self):
        with tempfile.TemporaryDirectory() as d:
            root = Path(d)
            mark = root / "tsan-built"
            # lane asan's test passes only once lane tsan's build has run: beside asan's ctest, after fuzz's build.
            scratch_lanes(root, f"""add_custom_target(say ALL COMMAND sh -c "echo built-lane-${{LANE}}" VERBATIM)
if(LANE STREQUAL "tsan")
  add_custom_target(mark ALL COMMAND touch "{mark}" VERBATIM)
endif()
if(LANE STREQUAL "asan")
  add_test(NAME unit.asan COMMAND timeout 60 sh -c "until [ -f '{mark}' ]; do sleep 0.1; done")
else()
  add_test(NAME unit.${{LANE}} COMMAND true)
endif()
""", ["asan", "fuzz", "tsan"])
            rc, out = run([PY, root / "cli" / "lifeline_main.py", "test", "--lanes", "asan,fuzz,tsan"])
            self.assertEqual(rc, 0, out)
            self.assertIn("==== lane asan: ctest ==== (beside it, at nice 19, the builds of lanes fuzz, tsan)", out)
            self.assertIn("lifeline: 3 passed, 0 failed, 0 skipped", out)
            # lane tsan's build may still be finishing (its last step, ninja's and cmake's exits) when lane fuzz's
            # ctest starts, right after asan's test saw the mark: that heading names it or not (a fresh clone's run
            # of 2026-11-27 saw it named, under load).
            fuzz_ctest = "==== lane fuzz: ctest ===="
            order = [fuzz_ctest if line == fuzz_ctest + " (beside it, at nice 19, the builds of lanes tsan)" else line
                     for line in out.splitlines() if line.startswith("==== lane") or line.startswith("built-lane")]
            self.assertEqual(order, ["==== lane asan: build ====", "built-lane-asan",
                                     "==== lane asan: ctest ==== (beside it, at nice 19, the builds of lanes fuzz, tsan)",
                                     "==== lane fuzz: build ====", "built-lane-fuzz", fuzz_ctest,
                                     "==== lane tsan: build ====", "built-lane-tsan", "==== lane tsan: ctest ===="],
                             out)

    def test_lsan_builds_beside_the_first_build_and_valgrind_after_it(self):
        with tempfile.TemporaryDirectory() as d:
            root = Path(d)
            started, built = root / "lsan-started", root / "lsan-built"
            # asan's build finishes only once lsan's has started (so they ran at once); lsan's takes 6 s more, and
            # valgrind's build fails unless lsan's has finished (valgrind takes lsan's objects from the cache).
            scratch_lanes(root, f"""add_custom_target(say ALL COMMAND sh -c "echo built-lane-${{LANE}}" VERBATIM)
if(LANE STREQUAL "asan")
  add_custom_target(wait ALL COMMAND timeout 60 sh -c "until [ -f '{started}' ]; do sleep 0.1; done" VERBATIM)
elseif(LANE STREQUAL "lsan")
  add_custom_target(slow ALL COMMAND sh -c "touch '{started}'; sleep 6; touch '{built}'" VERBATIM)
else()
  add_custom_target(check ALL COMMAND test -f "{built}" VERBATIM)
endif()
add_test(NAME unit.${{LANE}} COMMAND true)
""", ["asan", "lsan", "valgrind"])
            rc, out = run([PY, root / "cli" / "lifeline_main.py", "test", "--lanes", "asan,lsan,valgrind"])
            self.assertEqual(rc, 0, out)
            self.assertIn("lifeline: 3 passed, 0 failed, 0 skipped", out)
            order = [line for line in out.splitlines() if line.startswith("built-lane")]
            self.assertEqual(order, ["built-lane-asan", "built-lane-lsan", "built-lane-valgrind"], out)

    def test_a_failed_build_beside_is_the_lanes_failure_with_its_output(self):
        with tempfile.TemporaryDirectory() as d:
            root = Path(d)
            scratch_lanes(root, TWO_LANES.replace("add_custom_target(say ALL COMMAND sh -c \"",
                                                  "add_custom_target(say ALL COMMAND sh -c \"[ ${LANE} = asan ] || "
                                                  "{ echo no-way-to-build-${LANE}; exit 3; }; "), ["asan", "lsan"])
            rc, out = run([PY, root / "cli" / "lifeline_main.py", "test", "--lanes", "asan,lsan"])
            self.assertEqual(rc, 1, out)
            self.assertIn("no-way-to-build-lsan", out.split("==== lane lsan: build ====", 1)[1])
            self.assertRegex(out, r"\nasan\s+ok\s+1\s+0\s+0\s+\d+\s+\d+\nlsan\s+FAILED\s+0\s+1\s+0\s")

    def test_an_interrupt_ends_the_build_beside_the_ctest(self):
        with tempfile.TemporaryDirectory() as d:
            root = Path(d)
            # lane asan's test waits for lane lsan's build to have started, which writes its pid and sleeps.
            pidfile = root / "build-pid"
            scratch_lanes(root, f"""if(LANE STREQUAL "lsan")
  add_custom_target(slow ALL COMMAND sh -c "echo $$ > '{pidfile}'; exec sleep 300" VERBATIM)
endif()
add_test(NAME unit.${{LANE}} COMMAND sh -c "while [ ! -s '{pidfile}' ]; do sleep 0.1; done; sleep 300" VERBATIM)
""", ["asan", "lsan"])
            proc = subprocess.Popen([PY, root / "cli" / "lifeline_main.py", "test", "--lanes", "asan,lsan"], stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, text=True, start_new_session=True)
            self.addCleanup(self._end, proc)
            deadline = time.monotonic() + 120
            while not (pidfile.is_file() and pidfile.read_text().strip()) and time.monotonic() < deadline:
                time.sleep(0.1)
            self.assertTrue(pidfile.is_file(), "lane lsan's build never started beside lane asan's ctest")
            pid = int(pidfile.read_text())
            os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C: the terminal's process group (the build has its own)
            out, _ = proc.communicate(timeout=60)
            self.assertNotEqual(proc.returncode, 0, out)
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and Path(f"/proc/{pid}").exists():
                time.sleep(0.1)
            alive = Path(f"/proc/{pid}").exists()
            if alive:
                os.kill(pid, signal.SIGKILL)
            self.assertFalse(alive, f"lane lsan's build (pid {pid}) still ran after the interrupt:\n{out}")

    @staticmethod
    def _end(proc: subprocess.Popen) -> None:
        """Leaves nothing of a failed run behind: lifeline, its ctest and their tests (one process group)."""
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        proc.communicate()


if __name__ == "__main__":
    unittest.main()
