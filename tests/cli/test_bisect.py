"""`lifeline bisect` on a synthetic upstream: a git repository made here whose tiny C "ggml" (ggml-base and
ggml-cpu, static libraries built by CMake as ggml's are) starts reading one element past its array in its third
commit. The finding lives in a scratch project (a copy of cli/) whose `lifeline export` is faked: it writes the
C files this test gives it. Everything runs for real: the scratch clone, `git bisect run`, the CMake builds with
ASan+UBSan and their cache, the crash parser. Needs no network and no real ggml.

The upstream history (c0 is the oldest):
  c0  ggml-base and ggml-cpu appear, but ggml-cpu does not compile   (the default --good: skipped, so the next)
  c1  ggml_sum and ggml_mean, both correct                  (the --good the default settles on)
  c2  README only (same build inputs as c1: its build is reused)
  c3  ggml_sum reads a[n]                                   <- first bad commit of input `sum`
  c4  ggml-cpu does not compile                             (skip: ggml does not build)
  c5  builds again; ggml_mean reads a[n]                    <- first bad of `mean`, but c4 borders it: uncertain
  c6  ggml_sum takes one more argument                     (skip for `sum`: it does not compile)
  c7  ggml.h restored (HEAD)
"""
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

from support import PY, ROOT, run_apart

sys.path.insert(0, str(ROOT / "cli"))
from lifeline import bisect as bisectmod  # noqa: E402
from lifeline import export as exportmod  # noqa: E402

BUG = "ggml-fake-sum-overread"
SUM_SIG = {"type": "heap-buffer-overflow", "frame": "ggml_sum"}
MEAN_SIG = {"type": "heap-buffer-overflow", "frame": "ggml_mean"}
OLD_SIG = {"type": "heap-use-after-free", "frame": "old_read"}  # input `old`: its own use after free, at every commit

SUM = "int ggml_sum(const int * a, int n) { int s = 0; for (int i = 0; i < %s; ++i) s += a[i]; return s; }\n"
MEAN = "int ggml_mean(const int * a, int n) { int s = 0; for (int i = 0; i < %s; ++i) s += a[i]; return s / n; }\n"
CPU_OK = "int ggml_cpu_dummy(void) { return 0; }\n"
HEADER = "int ggml_sum(const int * a, int n);\nint ggml_mean(const int * a, int n);\n"

# The "export" of each input: calls one function on a malloc'd array of 4. `sleepy.c` first waits while the file
# named by $BISECT_TEST_SLEEP_IF exists, writing its pid beside it (the interrupt test).
PROGRAM = """#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "ggml.h"
int main(void) {
    const char * flag = getenv("BISECT_TEST_SLEEP_IF");
    int * a = malloc(4 * sizeof(int));
    if (SLEEPY && flag && access(flag, F_OK) == 0) {
        char path[4096];
        snprintf(path, sizeof path, "%s.pid", flag);
        FILE * f = fopen(path, "w");
        fprintf(f, "%d\\n", (int) getpid());
        fclose(f);
        sleep(60);
    }
    for (int i = 0; i < 4; ++i) a[i] = i;
    printf("%d\\n", FN(a, 4));
    free(a);
    return 0;
}
"""

FAKE_MAIN = r'''#!/usr/bin/python3
"""The scratch project's CLI: `export BUG --out DIR` copies cli/fake-export/* into DIR, `export-source --input NAME
--out FILE` copies cli/fake-export/NAME.c to FILE; the rest is lifeline's."""
import os, shutil, sys
here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
if sys.argv[1:2] == ["export-source"]:
    name = sys.argv[sys.argv.index("--input") + 1]
    shutil.copy(os.path.join(here, "fake-export", name + ".c"), sys.argv[sys.argv.index("--out") + 1])
    sys.exit(0)
if sys.argv[1:2] == ["export"]:
    out = sys.argv[sys.argv.index("--out") + 1]
    os.makedirs(out, exist_ok=True)
    for name in os.listdir(os.path.join(here, "fake-export")):
        shutil.copy(os.path.join(here, "fake-export", name), out)
    print("wrote the fake export into " + out)
    sys.exit(0)
from lifeline.main import main
sys.exit(main(sys.argv[1:]))
'''


def git(repo, *args) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, stdout=subprocess.PIPE, text=True).stdout


def commit(repo: Path, files: dict, message: str) -> str:
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD").strip()


def make_upstream(repo: Path) -> tuple:
    """(c0, [c1, ..., c7]) as in the module docstring."""
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "master")
    c0 = commit(repo, {
        "CMakeLists.txt": "cmake_minimum_required(VERSION 3.16)\nproject(ggml C)\nadd_subdirectory(src)\n",
        "include/ggml.h": HEADER,
        "src/CMakeLists.txt": "add_library(ggml-base STATIC ggml.c)\ntarget_include_directories(ggml-base PUBLIC "
                              "../include)\nadd_subdirectory(ggml-cpu)\n",
        "src/ggml.c": '#include "ggml.h"\n' + SUM % "n" + MEAN % "n",
        "src/ggml-cpu/CMakeLists.txt": "add_library(ggml-cpu STATIC cpu.c)\n",
        "src/ggml-cpu/cpu.c": "int ggml_cpu_dummy(void) { return 0 }\n",
        "examples/data.bin": "examples: never checked out\n"}, "ggml : libraries")
    c = [commit(repo, {"src/ggml-cpu/cpu.c": CPU_OK}, "ggml : initial")]
    c.append(commit(repo, {"README.md": "docs\n"}, "readme : words"))
    c.append(commit(repo, {"src/ggml.c": '#include "ggml.h"\n' + SUM % "n + 1" + MEAN % "n"}, "ggml : sum reads a[n]"))
    c.append(commit(repo, {"src/ggml-cpu/cpu.c": "int ggml_cpu_dummy(void) { return 0 }\n"}, "cpu : break the build"))
    c.append(commit(repo, {"src/ggml-cpu/cpu.c": CPU_OK,
                           "src/ggml.c": '#include "ggml.h"\n' + SUM % "n + 1" + MEAN % "n + 1"},
                    "ggml : mean reads a[n], the build again"))
    c.append(commit(repo, {"include/ggml.h": HEADER.replace("ggml_sum(", "ggml_sum(int flags, "),
                           "src/ggml.c": '#include "ggml.h"\n' + SUM.replace("(", "(int flags, ", 1) % "n + 1"
                           + MEAN % "n + 1"}, "ggml : ggml_sum takes flags"))
    c.append(commit(repo, {"include/ggml.h": HEADER,
                           "src/ggml.c": '#include "ggml.h"\n' + SUM % "n + 1" + MEAN % "n + 1"},
                    "ggml : ggml_sum as before"))
    return c0, c


class Bisect(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = Path(tempfile.mkdtemp())
        cls.root = cls.tmp / "project"
        shutil.copytree(ROOT / "cli", cls.root / "cli", ignore=shutil.ignore_patterns("__pycache__"))
        (cls.root / "cli" / "lifeline_main.py").write_text(FAKE_MAIN)
        fake = cls.root / "cli" / "fake-export"
        fake.mkdir()
        cls.sources = cls.tmp / "sources"
        cls.sources.mkdir()
        for name, fn, sleepy in (("sum", "ggml_sum", 0), ("mean", "ggml_mean", 0), ("sleepy", "ggml_sum", 1),
                                 ("old", "ggml_sum", 0)):
            text = PROGRAM.replace("FN(", fn + "(").replace("SLEEPY", str(sleepy))
            if name == "old":  # no element past the array at any commit; a read after free at all of them
                text = text.replace("(a, 4)", "(a, 0)").replace("return 0;\n}", "return old_read(a);\n}").replace(
                    "int main(void) {", "__attribute__((noinline)) int old_read(const int * a) { return a[0] == 42; }\n"
                    "int main(void) {")
            (cls.sources / f"{name}.c").write_text(text)
            if name != "sleepy":
                (fake / f"{name}.c").write_text(text)
        (cls.root / "core" / "suppressions").mkdir(parents=True)
        (cls.root / "core" / "bug_list.def").write_text('LIFELINE_BUG(kFakeFixedBug, "fake-fixed-bug")\n')
        (cls.root / "core" / "guard_list.def").write_text("")
        (cls.root / "core" / "suppressions" / "ubsan-upstream.supp").write_text("pointer-overflow:ggml_graph_nbytes\n")
        triage = {"date": "2026-11-26", "searched": ["nowhere: a test finding"]}
        cls.bug_json = cls.write_bug(BUG, {
            "status": "upstream-open", "triage": triage, "target": "ggml_graph_topology",
            "reproducers": [{"input": "sum", "expect": {"asan": SUM_SIG}},
                            {"input": "mean", "expect": {"asan": MEAN_SIG}},
                            {"input": "old", "expect": {"asan": OLD_SIG}}]})
        # Findings of targets without a C exporter on ggml-base and ggml-cpu: export.py's table says which exist.
        cls.refused = {"numpy_capsules": "has no exporter"}
        for target, e in exportmod.EXPORTERS.items():
            if e.language != "C":
                cls.refused[target] = f"has a {e.language} exporter, not C"
            elif "-lggml-vulkan" in getattr(e, "build", ""):
                cls.refused[target] = "link ggml-vulkan, and bisect builds ggml-base and ggml-cpu only"
        for target in cls.refused:
            cls.write_bug("ggml-fake-" + target.replace("_", "-"), {
                "status": "upstream-open", "triage": triage, "target": target,
                "reproducers": [{"input": "sum", "expect": {"asan": SUM_SIG}}]})
        cls.upstream = cls.tmp / "upstream"
        cls.c0, cls.c = make_upstream(cls.upstream)
        cls.scratch_tmp = cls.tmp / "tmp"  # TMPDIR of every run: where the scratch clones go
        cls.scratch_tmp.mkdir()

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    @classmethod
    def write_bug(cls, bug_id: str, doc: dict) -> Path:
        d = cls.root / "repro" / bug_id
        d.mkdir(parents=True)
        for r in doc["reproducers"]:
            (d / r["input"]).write_text("input bytes\n")
        path = d / "bug.json"
        path.write_text(json.dumps(dict({"id": bug_id, "title": "t", "upstream": []}, **doc), indent=2) + "\n")
        return path

    def env(self, **extra) -> dict:
        return dict(os.environ, TMPDIR=str(self.scratch_tmp), **extra)

    def bisect(self, *args, **env):
        return run_apart([PY, self.root / "cli" / "lifeline_main.py", "bisect", *args], env=self.env(**env))

    def assert_upstream_untouched(self):
        self.assertEqual(git(self.upstream, "rev-parse", "HEAD").strip(), self.c[-1])
        self.assertEqual(git(self.upstream, "status", "--porcelain"), "")
        self.assertEqual(len(git(self.upstream, "worktree", "list").splitlines()), 1)
        self.assertEqual(git(self.upstream, "for-each-ref", "refs/bisect"), "")
        self.assertEqual(os.listdir(self.scratch_tmp), [], "a scratch clone was left behind")

    def test_finds_the_first_bad_commit_of_the_export_and_records_it(self):
        before = self.bug_json.read_text()
        rc, out, err = self.bisect(BUG, "--upstream-repo", self.upstream, "--record")
        self.assertEqual(rc, 0, out + err)
        # The default --good: where ggml-base became a library (c0), which does not build; then the next commit.
        self.assertIn(f"check --good (default) {self.c0[:12]} ", out)
        self.assertIn("skip: ggml does not build here", out)
        self.assertIn(f"; trying the next commit\ncheck --good (default) {self.c[0][:12]} ", out)
        how = "lifeline export-source --input sum" if hasattr(exportmod, "cmd_export_source") else "lifeline export"
        self.assertIn(f"sum.c (from `{how}`", out)
        self.assertIn("signature heap-buffer-overflow in ggml_sum", out)
        self.assertIn(f"range: {self.c[0][:12]} ", out)
        self.assertIn(f"check --bad {self.c[-1][:12]}", out)
        self.assertIn("step 1: ", out)
        self.assertIn(f"first bad commit: {self.c[2]}\n", out)
        self.assertIn("subject: ggml : sum reads a[n]", out)
        self.assertRegex(out, r"range tested: \w{12}\.\.\w{12} \(6 commits\), \d+ steps? after 3 checks, "
                              r"\d+ skipped, \d+ s")
        doc = json.loads(self.bug_json.read_text())
        intro = doc.pop("introduced_by")
        self.assertEqual(intro, {"commit": self.c[2], "subject": "ggml : sum reads a[n]", "date": intro["date"],
                                 "repo": "ggml-org/ggml", "range": [self.c[0], self.c[-1]], "export": "sum"})
        self.assertRegex(intro["date"], r"^\d{4}-\d\d-\d\d$")
        self.assertEqual(json.dumps(doc, indent=2) + "\n", before, "the other keys and the formatting must stay")
        self.bug_json.write_text(before)
        self.assert_upstream_untouched()
        self.assertTrue((self.root / "build" / "bisect" / BUG / "git-bisect.log").is_file())

    def test_a_finding_already_there_at_the_default_good_is_recorded_as_older(self):
        before = self.bug_json.read_text()
        rc, out, err = self.bisect(BUG, "--upstream-repo", self.upstream, "--input", "old", "--record")
        self.assertEqual(rc, 0, out + err)
        self.assertIn(f"check --good (default) {self.c[0][:12]} ", out)
        self.assertIn("bad: heap-use-after-free | old_read", out)
        self.assertIn(f"the finding is already there at the default --good {self.c[0][:12]}", out)
        self.assertNotIn("step 1: ", out)
        doc = json.loads(self.bug_json.read_text())
        intro = doc.pop("introduced_by")
        self.assertEqual(intro, {"before": self.c[0], "subject": "ggml : initial", "date": intro["date"],
                                 "repo": "ggml-org/ggml", "range": [self.c[0], self.c[-1]], "export": "old"})
        self.assertEqual(json.dumps(doc, indent=2) + "\n", before)
        self.bug_json.write_text(before)
        self.assert_upstream_untouched()

    def test_a_skipped_commit_beside_the_first_bad_one_makes_it_uncertain(self):
        rc, out, err = self.bisect(BUG, "--upstream-repo", self.upstream, "--input", "mean",
                                   "--source", self.sources / "mean.c", "--good", self.c[1], "--bad", "master")
        self.assertEqual(rc, 1, out + err)
        self.assertIn("first bad commit: uncertain", out)
        self.assertIn(f"  {self.c[3]} ", out)
        self.assertIn(f"  {self.c[4]} ", out)
        self.assertIn("[skipped: ggml does not build here", out)
        self.assertRegex(out, r"[1-9]\d* skipped")
        self.assert_upstream_untouched()

    def test_a_bisection_stops_at_max_skips_with_the_range_it_has_narrowed(self):
        rc, out, err = self.bisect(BUG, "--upstream-repo", self.upstream, "--input", "mean",
                                   "--source", self.sources / "mean.c", "--good", self.c[1], "--max-skips", "1")
        self.assertEqual(rc, 1, out + err)
        self.assertIn("first bad commit: uncertain: stopped after 1 skipped step(s) (--max-skips)", out)
        listed = [line.split()[0] for line in out.splitlines() if line.startswith("  ") and len(line.split()[0]) == 40]
        self.assertIn(self.c[3], listed)
        self.assertIn(self.c[4], listed)
        self.assertNotIn(self.c[1], listed)  # the good end
        self.assert_upstream_untouched()

    def test_the_ends_are_checked_first(self):
        # --bad c6: the export of `sum` does not compile against its ggml.h; --good c3 already fails.
        for good, bad, check, says in (
                (self.c[0], self.c[5], "skip: the reproducer does not compile against these headers",
                 "--bad " + self.c[5][:12] + " must reproduce the finding; it cannot be tested there"),
                (self.c[2], self.c[6], "bad: heap-buffer-overflow | ggml_sum",
                 "--good " + self.c[2][:12] + " must run clean; the finding is already there: give an older --good")):
            with self.subTest(good=good, bad=bad):
                rc, out, err = self.bisect(BUG, "--upstream-repo", self.upstream, "--good", good, "--bad", bad)
                self.assertEqual(rc, 1, out + err)
                self.assertIn(check, out)
                self.assertIn(says, err)
                self.assertEqual(len(err.strip().splitlines()), 1, err)
        self.assert_upstream_untouched()

    def test_ctrl_c_leaves_no_scratch_clone_and_no_process(self):
        flag = self.tmp / "sleep-flag"
        proc = subprocess.Popen([PY, self.root / "cli" / "lifeline_main.py", "bisect", BUG, "--upstream-repo",
                                 self.upstream, "--source", self.sources / "sleepy.c"], env=self.env(
                                     BISECT_TEST_SLEEP_IF=str(flag)), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        # (SIG_DFL: a runner started in the background ignores SIGINT, and its children would inherit that.)
        try:
            for line in proc.stdout:  # the two checks pass; then the steps of git bisect run sleep
                if line.startswith("check --good"):
                    break
            flag.write_text("")
            deadline = time.monotonic() + 120
            pid_file = Path(str(flag) + ".pid")
            while not pid_file.is_file() and time.monotonic() < deadline:
                time.sleep(0.1)
            self.assertTrue(pid_file.is_file(), "no step ran the reproducer")
            time.sleep(0.2)
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
        self.assertEqual(proc.returncode, 130, out + err)
        self.assertIn("interrupted", err)
        pid = int(pid_file.read_text())
        with self.assertRaises(ProcessLookupError, msg="the reproducer a step ran is still running"):
            os.kill(pid, 0)
        self.assertEqual(list((self.root / "build" / "bisect" / "cache").glob(".partial-*")), [])
        self.assert_upstream_untouched()

    def test_bad_arguments_are_one_line_and_exit_2(self):
        not_git = self.tmp / "not-a-checkout"
        not_git.mkdir(exist_ok=True)
        spaced = self.tmp / "a dir"
        spaced.mkdir(exist_ok=True)
        shell = self.tmp / "x$(touch y)"
        shell.mkdir(exist_ok=True)
        (spaced / "r.c").write_text("int main(void) { return 0; }\n")
        up = str(self.upstream)
        cases = [
            (["ggml-no-such-finding", "--upstream-repo", up], "unknown bug id 'ggml-no-such-finding'"),
            (["Not_An_Id", "--upstream-repo", up], "unknown bug id"),
            *[(["ggml-fake-" + target.replace("_", "-"), "--upstream-repo", up], says)
              for target, says in self.refused.items()],
            ([BUG, "--upstream-repo", str(not_git)], "is not a git checkout"),
            ([BUG, "--upstream-repo", str(self.tmp / "missing")], "is not a directory"),
            ([BUG, "--upstream-repo", str(self.root)], "is not a git checkout"),
            ([BUG, "--upstream-repo", str(spaced)], "only plain paths"),
            ([BUG, "--upstream-repo", str(shell)], "only plain paths"),
            ([BUG, "--upstream-repo", up, "--source", str(spaced / "r.c")], "only plain paths"),
            ([BUG, "--upstream-repo", up, "--source", str(self.tmp / "none.c")], "is not a readable file"),
            ([BUG, "--upstream-repo", up, "--good", "no-such-rev"], "--good 'no-such-rev' does not resolve"),
            ([BUG, "--upstream-repo", up, "--bad=--output=x"], "--bad '--output=x' is not a revision"),
            ([BUG, "--upstream-repo", up, "--good", self.c[3], "--bad", self.c[1]], "is not an ancestor of --bad"),
            ([BUG, "--upstream-repo", up, "--good", self.c[3], "--bad", self.c[3]], "the same commit"),
            ([BUG, "--upstream-repo", up, "--input", "nothing"], "no reproducer input 'nothing'"),
            ([BUG, "--upstream-repo", up, "--max-skips", "0"], "--max-skips must be at least 1"),
            ([BUG, "--upstream-repo", up, "--signature", "{type: x}"], "--signature is not JSON"),
            ([BUG, "--upstream-repo", up, "--signature", '{"frame": "f"}'], "--signature must be an object with a"),
            ([BUG, "--upstream-repo", up, "--signature", '{"type": "assert"}', "--record"], "not a --signature"),
            ([BUG, "--upstream-repo", up, "--source", str(self.sources / "sum.c"), "--record"], "--record records"),
            ([BUG], "the following arguments are required: --upstream-repo"),
        ]
        for args, says in cases:
            with self.subTest(args=args):
                rc, out, err = self.bisect(*args)
                self.assertEqual(rc, 2, out + err)
                self.assertEqual(len(err.strip().splitlines()), 1, err)
                self.assertIn(says, err)
                self.assertTrue(err.startswith("lifeline bisect: "), err)
        self.assertFalse((self.tmp / "y").exists())
        self.assert_upstream_untouched()

    def test_a_folder_inside_a_checkout_is_refused(self):
        rc, out, err = self.bisect(BUG, "--upstream-repo", self.upstream / "src")
        self.assertEqual(rc, 2, out + err)
        self.assertIn(f"give its top, {self.upstream}", err)


class Verdicts(unittest.TestCase):
    """How one run of the reproducer becomes git bisect run's exit status."""

    ASAN = ("==1==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x6 at pc 0x5 bp 0x4 sp 0x3\n"
            "READ of size 4 at 0x6 thread T0\n"
            "    #0 0x5 in {fn} /u/src/ggml.c:2:3\n    #1 0x6 in main /t/r.c:9:5\n")

    def test_each_outcome(self):
        for rc, out, code, says in (
                (0, "4\n", 0, "runs clean"),
                (1, self.ASAN.format(fn="ggml_sum"), 1, "heap-buffer-overflow | ggml_sum"),
                (1, self.ASAN.format(fn="ggml_mean"), 125, "fails with another signature: heap-buffer-overflow | ggml_mean"),
                (3, "compute failed\n", 125, "exits 3 without a sanitizer or assert report (compute failed)"),
                (bisectmod.TIMED_OUT, "", 125, "timed out")):
            with self.subTest(says=says):
                v = bisectmod.classify(rc, out, SUM_SIG)
                self.assertEqual(v.code, code)
                self.assertIn(says, v.why)


if __name__ == "__main__":
    unittest.main()
