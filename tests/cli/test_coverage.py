"""`lifeline coverage`: bad input is one line and exit 2; on a scratch project whose one target is built here
with clang 14's source-based coverage, the table, the HTML report and the gaps say what the inputs reached,
and an input that crashes is named, left out, and fails the run (exit 1)."""
import json
import shutil
import subprocess
import tempfile
import unittest
from pathlib import Path

from support import CLI, PY, ROOT, run

LAYER = r"""
#include <cstddef>
#include <cstdlib>
namespace fake {
int Reached(const unsigned char* data, size_t size) {
  int sum = 0;
  for (size_t i = 0; i < size; i++) {
    if (data[i] == 'x') sum += 2;       // never true: no input holds an x
    else sum += 1;
  }
  if (size > 0 && data[0] == '!') abort();  // the crashing input
  if (size > 0 && data[0] == '#') exit(3);  // an input that fails without dying: its process writes a profile
  return sum;
}
int NeverEntered(int v) { return v * 3; }
}  // namespace fake
"""
TARGET = r"""
#include <cstddef>
namespace fake { int Reached(const unsigned char*, size_t); }
extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, size_t size) {
  fake::Reached(data, size);
  return 0;
}
"""
DRIVER = r"""
#include <cstdio>
#include <vector>
extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, size_t);
int main(int argc, char** argv) {
  for (int i = 1; i < argc; i++) {
    FILE* f = fopen(argv[i], "rb");
    if (!f) return 2;
    std::vector<unsigned char> b;
    int c;
    while ((c = fgetc(f)) != EOF) b.push_back((unsigned char)c);
    fclose(f);
    LLVMFuzzerTestOneInput(b.data(), b.size());
  }
  return 0;
}
"""


class CoverageArguments(unittest.TestCase):
    def assertUsageError(self, args, text, env=None):
        rc, out = run(CLI + args, env=env)
        self.assertEqual(rc, 2, out)
        self.assertIn(text, out)
        self.assertEqual(len(out.strip().splitlines()), 1, out)

    def test_unknown_target(self):
        self.assertUsageError(["coverage", "no_such_target", "--no-build"], "unknown target 'no_such_target'")

    def test_missing_corpus_folder(self):
        self.assertUsageError(["coverage", "alloc_graph_topology", "--no-build", "--corpus", "/nonexistent/corpus"],
                              "--corpus '/nonexistent/corpus' does not exist")

    def test_corpus_that_is_a_file(self):
        with tempfile.NamedTemporaryFile() as f:
            self.assertUsageError(["coverage", "alloc_graph_topology", "--no-build", "--corpus", f.name],
                                  f"--corpus '{f.name}' is not a directory")

    def test_unknown_input_set(self):
        self.assertUsageError(["coverage", "--no-build", "--inputs", "seeds,crashes"], "unknown input set 'crashes'")

    def test_missing_tools(self):
        # A PATH without LLVM's tools (the CLI itself runs on /usr/bin/python3 by absolute path).
        with tempfile.TemporaryDirectory() as empty:
            rc, out = run([PY, ROOT / "cli" / "lifeline_main.py", "coverage", "--no-build"], env={"PATH": empty})
        self.assertEqual(rc, 2, out)
        self.assertIn("llvm-profdata-14 not found", out)
        self.assertEqual(len(out.strip().splitlines()), 1, out)


@unittest.skipUnless(shutil.which("clang++-14") and shutil.which("llvm-cov-14"),
                     "needs clang++-14 and llvm-cov-14 (scripts/install-deps.sh)")
class CoverageOfAScratchTarget(unittest.TestCase):
    ROOT_NAME = "check out $(touch pwned)"

    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp())
        self.root = self.tmp / self.ROOT_NAME
        shutil.copytree(ROOT / "cli", self.root / "cli", ignore=shutil.ignore_patterns("__pycache__"))
        for d in ("core", "targets", "layers/fake", "harness", "corpus/fake_cov", "build/coverage/targets"):
            (self.root / d).mkdir(parents=True)
        (self.root / "core" / "bug_list.def").write_text("")
        (self.root / "core" / "guard_list.def").write_text("")
        (self.root / "layers" / "fake" / "fake.cc").write_text(LAYER)
        (self.root / "targets" / "fake_cov.cc").write_text(TARGET)
        (self.root / "harness" / "replay_main.cc").write_text(DRIVER)
        binary = self.root / "build" / "coverage" / "targets" / "fake_cov"
        flags = ["-O0", "-g", "-fprofile-instr-generate", "-fcoverage-mapping"]
        subprocess.run(["clang++-14", *flags, "-o", str(binary),
                        *(str(self.root / f) for f in ("layers/fake/fake.cc", "targets/fake_cov.cc",
                                                       "harness/replay_main.cc"))], check=True)
        for name, data in (("a", "abc"), ("b", "hello")):
            (self.root / "corpus" / "fake_cov" / name).write_text(data)
        self.out = self.tmp / "out dir"

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def coverage(self, *args):
        return run([PY, self.root / "cli" / "lifeline_main.py", "coverage", "fake_cov", "--no-build",
                    "--out", self.out, *args])

    def layer(self):
        return json.loads((self.out / "summary.json").read_text())["targets"]["fake_cov"]["files"]["layers/fake/fake.cc"]

    def test_table_report_and_gaps(self):
        rc, out = self.coverage("--gaps")
        self.assertEqual(rc, 0, out)
        self.assertEqual(list((self.tmp).rglob("pwned")), [])
        s = self.layer()
        self.assertEqual(s["functions"], {"covered": 1, "count": 2})
        self.assertGreater(s["lines"]["covered"], 0)
        self.assertLess(s["lines"]["covered"], s["lines"]["count"])
        self.assertEqual(s["branches"]["count"], 12)  # for, if, the two conditions of each &&, each both ways
        files = json.loads((self.out / "summary.json").read_text())["targets"]["fake_cov"]["files"]
        self.assertNotIn("targets/fake_cov.cc", files)      # the target's glue is not code under test
        self.assertNotIn("harness/replay_main.cc", files)   # nor the replay driver
        self.assertIn("| fake_cov | layers/fake/fake.cc | ", out)
        self.assertTrue((self.out / "html" / "index.html").is_file())
        self.assertTrue(any(self.out.rglob("fake.cc.html")))
        gaps = (self.out / "gaps.md").read_text()
        self.assertIn("- 1 functions never entered:\n  - line 15: `fake::NeverEntered(int)` (1 regions)\n"
                      "- 1 functions entered but not run through (regions run / regions):\n"
                      "  - line 5: `fake::Reached(unsigned char const*, unsigned long)` ", gaps)
        self.assertIn("  - line 8:9 never true\n", gaps)     # data[i] == 'x'
        self.assertIn("  - line 11:19 never true\n", gaps)   # data[0] == '!'

    def test_more_inputs_reach_more(self):
        rc, out = self.coverage()
        self.assertEqual(rc, 0, out)
        before = self.layer()["branches"]["covered"]
        extra = self.tmp / "extra"
        extra.mkdir()
        (extra / "x").write_text("xx")
        rc, out = self.coverage("--corpus", extra)
        self.assertEqual(rc, 0, out)
        self.assertGreater(self.layer()["branches"]["covered"], before)
        self.assertFalse((self.out / "gaps.md").exists())  # not asked for: no stale file from another run

    def failing_input_beside_x(self, name, data):
        """Replays a --corpus folder of one failing input and one that takes line 8's branch, with --gaps: the run
        must exit 1 naming the failing input; returns the gaps' list of branch directions never taken."""
        extra = self.tmp / "extra"
        extra.mkdir()
        (extra / name).write_text(data)
        (extra / "x").write_text("xx")
        rc, out = self.coverage("--corpus", extra, "--gaps")
        self.assertEqual(rc, 1, out)
        self.assertIn(f"{extra / name} fails on the fixed code", out)
        self.assertIn("1 input(s) failed on the fixed code and are not counted", out)
        branches = (self.out / "gaps.md").read_text().split("branch directions never taken")[1]
        self.assertNotIn("line 8:", branches)  # the other input of the folder still counts
        return branches

    def test_a_crashing_input_is_named_and_fails_the_run(self):
        branches = self.failing_input_beside_x("boom", "!boom")
        self.assertIn("line 11:19 never true", branches)  # the crashing input's '!' does not count

    def test_an_input_that_exits_is_not_counted_either(self):
        branches = self.failing_input_beside_x("exits", "#exit")
        self.assertIn("line 12:19 never true", branches)  # the '#' input's process wrote a profile: dropped
        # Every input counted once: Reached ran for the seeds a and b and for x; the failed batch's profile
        # (which ran the exiting input first, sorted by name) and the exiting input's own are dropped.
        export = subprocess.run(["llvm-cov-14", "export", "-summary-only=false",
                                 f"-instr-profile={self.out / 'coverage.profdata'}",
                                 str(self.root / "build" / "coverage" / "targets" / "fake_cov")],
                                stdout=subprocess.PIPE, text=True, check=True).stdout
        reached = [f for f in json.loads(export)["data"][0]["functions"] if f["name"].endswith("Reached" + "EPKhm")]
        self.assertEqual([f["count"] for f in reached], [3])

    def test_no_inputs_at_all(self):
        rc, out = self.coverage("--inputs", "regression")
        self.assertEqual(rc, 2, out)
        self.assertIn("fake_cov: no input to replay", out)


if __name__ == "__main__":
    unittest.main()


class UpstreamFilesAreNamedByTheirTree(unittest.TestCase):
    """Each upstream tree's files carry its prefix in the tables and count as upstream; headers and the rest are
    not code under test."""

    def test_ggml_and_whisper_files(self):
        from lifeline import coverage
        build = ROOT / "build" / "upstream"
        self.assertEqual(coverage.under_test(str(build / "llama.cpp" / "ggml" / "src" / "ggml-alloc.c")),
                         "ggml/src/ggml-alloc.c")
        self.assertEqual(coverage.under_test(str(build / "whisper.cpp" / "src" / "whisper.cpp")),
                         "whisper.cpp/src/whisper.cpp")
        self.assertEqual(coverage.under_test(str(build / "whisper.cpp" / "ggml" / "src" / "ggml.c")),
                         "whisper.cpp/ggml/src/ggml.c")
        self.assertIsNone(coverage.under_test(str(build / "whisper.cpp" / "include" / "whisper.h")))
        # llama.cpp's src/ headers hold the memory's logic (llama-kv-cells.h): they count; ggml's headers do not
        self.assertEqual(coverage.under_test(str(build / "llama.cpp" / "src" / "llama-kv-cells.h")),
                         "llama.cpp/src/llama-kv-cells.h")
        self.assertEqual(coverage.under_test(str(build / "llama.cpp" / "src" / "llama-batch.cpp")),
                         "llama.cpp/src/llama-batch.cpp")
        self.assertIsNone(coverage.under_test(str(build / "llama.cpp" / "ggml" / "src" / "ggml-impl.h")))
        self.assertEqual(coverage.under_test(str(ROOT / "harness" / "programs" / "handoff" / "model.cc")),
                         "harness/programs/handoff/model.cc")
        one = {k: {"covered": 1, "count": 2} for k in ("lines", "functions", "branches")}
        g = coverage.groups({"whisper.cpp/src/whisper.cpp": one, "ggml/src/ggml.c": one, "harness/x.cc": one})
        self.assertEqual(g["upstream"]["lines"], {"covered": 2, "count": 4})
        self.assertEqual(g["project"]["lines"], {"covered": 1, "count": 2})
