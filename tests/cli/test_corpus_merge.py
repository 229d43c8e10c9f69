"""`lifeline corpus merge` (libFuzzer -merge=1, whose inner process it starts with system()): inputs that
crash during the merge leave nothing in the current folder, and folders and checkouts whose names a shell
would split or run are merged like any other (scratch project)."""
import hashlib
import unittest

from scratch_project import ScratchProject


class CorpusMerge(ScratchProject):
    def setUp(self):
        super().setUp()
        self.cwd = self.tmp / "cwd"
        self.cwd.mkdir()

    def inputs(self, name):
        d = self.cwd / name
        d.mkdir()
        for word in ("clean", "uaf", "assert", "another"):
            (d / f"in-{word}").write_text(word)
        return d

    def merge(self, *dirs):
        rc, out = self.cli("corpus", "merge", "fake_target", *dirs, cwd=self.cwd)
        self.assertEqual(rc, 0, out)
        self.assertEqual(sorted(p.name for p in self.tmp.rglob("pwned")), [])
        self.assertEqual(sorted(p.name for p in self.cwd.rglob("crash-*")), [])  # libFuzzer's default prefix
        merged = sorted(p.name for p in (self.root / "corpus" / "fake_target").iterdir())
        self.assertEqual(merged, sorted(hashlib.sha1(w).hexdigest() for w in (b"clean", b"another")))
        return out

    def test_crashing_inputs_are_counted_and_leave_no_files(self):
        out = self.merge(self.inputs("new"))
        self.assertIn("corpus merge: 2 new input(s) in ", out)
        self.assertIn("corpus merge: 2 input(s) crashed the target and were left out", out)

    def test_a_checkout_without_corpus_folders(self):
        (self.root / "corpus").rmdir()
        self.merge(self.inputs("new"))

    def test_folders_with_shell_characters_and_flag_like_names(self):
        self.merge("--", self.inputs("in $(touch pwned)"))
        (self.root / "corpus" / "fake_target").rename(self.tmp / "first")
        self.inputs("-new")
        self.merge("--", "-new")


class CorpusMergeInACheckoutWithBlanks(CorpusMerge):
    ROOT_NAME = "check out $(touch pwned)"


if __name__ == "__main__":
    unittest.main()
