"""`lifeline fuzz` with paths a shell would split or run (a checkout, --out or $TMPDIR holding a blank or
`$(...)`): libFuzzer's fork mode puts them on a system() command line (scratch_project.py's fake target
does the same), so every path a job gets must be a plain name, and a job that ran no input fails."""
import json
import os
import tempfile
import unittest
from pathlib import Path

from lifeline import shellsafe
from scratch_project import ScratchProject

HOSTILE = "o $(touch pwned);x"


class ForkModePaths(ScratchProject):
    def fuzz(self, out, *extra, env=None):
        """Runs a job from a working folder of its own (fork mode with --jobs 2 in `extra`); (exit status,
        output, the job's summary or None)."""
        cwd = self.tmp / "cwd"
        cwd.mkdir(exist_ok=True)
        rc, text = self.cli("fuzz", "fake_target", "--time", "1", "--no-build", "--out", out, *extra, cwd=cwd,
                            env=env)
        summary = out / "summary.json"
        return rc, text, json.loads(summary.read_text())[0] if summary.is_file() else None

    def assertNothingRan(self):
        self.assertEqual(sorted(str(p) for p in self.tmp.rglob("pwned")), [])

    def assertJobGotPlainNames(self, out):
        job = json.loads((self.fake.parent / "fake-job.json").read_text())
        for arg, real in job["names"].items():
            with self.subTest(arg=arg):
                self.assertTrue(shellsafe.is_safe(arg), arg)
        names = set(job["names"].values())
        for real in (out / "fake_target" / "artifacts", out / "fake_target" / "corpus", self.fake):
            self.assertIn(str(real.resolve()), names)
        self.assertTrue(shellsafe.is_safe(job["TMPDIR"] or "/tmp"), job["TMPDIR"])

    def test_out_with_shell_characters(self):
        self.artifacts({"crash-u": "uaf"})
        out = self.tmp / HOSTILE
        rc, text, summary = self.fuzz(out, "--jobs", "2")
        self.assertNothingRan()
        self.assertEqual(rc, 1, text)  # the crash, found and replayed
        self.assertEqual((summary["execs"], summary["crashes"]), (42, 1), text)
        self.assertTrue((out / "fake_target" / "artifacts" / "crash-u").is_file())
        self.assertJobGotPlainNames(out)

    def test_tmpdir_with_a_blank(self):
        tmpdir = self.tmp / "my tmp $(touch pwned)"
        tmpdir.mkdir()
        out = self.tmp / "out"
        rc, text, summary = self.fuzz(out, "--jobs", "2", env=dict(os.environ, TMPDIR=str(tmpdir)))
        self.assertNothingRan()
        self.assertEqual(rc, 0, text)
        self.assertEqual(summary["execs"], 42, text)
        self.assertJobGotPlainNames(out)
        self.assertEqual(list(tmpdir.iterdir()), [])  # the job files went to a private folder, now gone

    def test_a_job_that_goes_on_in_fork_mode_after_a_crash_links_its_paths_again(self):
        """The fork-mode run after an in-process job's crash gets the same plain names as the first run."""
        self.artifacts({"crash-a1": "assert"})
        out = self.tmp / HOSTILE
        cwd = self.tmp / "cwd"
        cwd.mkdir(exist_ok=True)
        rc, text = self.cli("fuzz", "fake_target", "--time", "3", "--no-build", "--out", out, cwd=cwd)
        self.assertNothingRan()
        summary = json.loads((out / "summary.json").read_text())[0]
        self.assertIn("stopped_early", summary, text)
        self.assertJobGotPlainNames(out)

    def test_a_job_that_ran_no_inputs_fails(self):
        (self.fake.parent / "fake-idle").write_text("")
        out = self.tmp / "out"
        cwd = self.tmp / "cwd"
        cwd.mkdir()
        for extra in (("--jobs", "2"), ()):  # fork mode, then one process
            with self.subTest(extra=extra):
                rc, stdout, stderr = self.cli_apart("fuzz", "fake_target", "--time", "1", "--no-build", "--out",
                                                    out, *extra, cwd=cwd)
                self.assertEqual(rc, 2, stdout + stderr)
                self.assertEqual(len(stderr.strip().splitlines()), 1, stderr)
                self.assertIn("lifeline fuzz: fake_target ran no inputs (exit status 0), so it tested nothing; ",
                              stderr)
                self.assertIn("ERROR: fake_target: told to run nothing", stderr)
                self.assertEqual(json.loads((out / "summary.json").read_text())[0]["execs"], 0)


class CheckoutWithBlanks(ForkModePaths):
    ROOT_NAME = "check out $(touch pwned)"

    def test_checkout_with_a_blank_and_shell_characters(self):
        out = self.root / "fuzz-out"
        rc, text, summary = self.fuzz(out, "--jobs", "2")
        self.assertNothingRan()
        self.assertEqual(rc, 0, text)
        self.assertEqual(summary["execs"], 42, text)
        self.assertJobGotPlainNames(out)


class SafeLinks(unittest.TestCase):
    def test_plain_names_pass_others_are_linked_and_the_links_go(self):
        with tempfile.TemporaryDirectory() as tmp:
            odd = Path(tmp) / "a b;$(x)"
            odd.mkdir()
            (odd / "f").write_text("kept")
            with shellsafe.SafeLinks() as links:
                self.assertEqual(links.path("/usr/bin", "bin"), "/usr/bin")
                linked = links.path(odd, "odd")
                self.assertTrue(shellsafe.is_safe(linked), linked)
                self.assertEqual(links.path(odd, "odd"), linked)  # asked again: the same link
                self.assertEqual((Path(linked) / "f").read_text(), "kept")
                self.assertEqual(links.env({"TMPDIR": "/tmp"}), {"TMPDIR": "/tmp"})
                self.assertEqual(links.env({}), {})
                env = links.env({"TMPDIR": str(odd), "X": "1"})
                self.assertTrue(shellsafe.is_safe(env["TMPDIR"]) and Path(env["TMPDIR"]).is_dir(), env)
                self.assertEqual(env["X"], "1")
                private = links.dir
            self.assertFalse(private.exists())
            self.assertEqual((odd / "f").read_text(), "kept")

    def test_relative_names_become_absolute(self):
        cwd = os.getcwd()
        os.chdir("/usr")
        try:
            with shellsafe.SafeLinks() as links:
                self.assertEqual(links.path("-leading", "x"), "/usr/-leading")
        finally:
            os.chdir(cwd)
        self.assertFalse(shellsafe.is_safe("relative/path"))
        self.assertFalse(shellsafe.is_safe("/a b"))
        self.assertTrue(shellsafe.is_safe("/a/b-c_d.e"))


if __name__ == "__main__":
    unittest.main()
