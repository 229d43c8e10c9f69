"""What `lifeline promote` writes into a new bug.json (lifeline/promote.py), and promote on a scratch
project: minimized through libFuzzer's shell from any checkout, and a folder made meanwhile is one line."""
import json
import os
import sys
import unittest

from scratch_project import ScratchProject
from support import ROOT


class BugJsonSignature(unittest.TestCase):
    def setUp(self):
        sys.path.insert(0, str(ROOT / "cli"))
        from lifeline import promote
        self.promote = promote

    def test_bug_json_signature_drops_ids_and_counts(self):
        sig = self.promote.signature_for_bug_json(
            {"type": "lifeline-check", "state": ["f"],
             "message": "op 3 (destroy s0): accounting oracle (bytes): backing memory outlives its wrappers: 1 VkBuffer"})
        self.assertEqual(sig, {"type": "lifeline-check",
                               "message": "accounting oracle (bytes): backing memory outlives its wrappers"})
        self.assertEqual(self.promote.signature_for_bug_json({"type": "data-race", "state": ["g", "h"]}),
                         {"type": "data-race", "frame": "g"})



class Promote(ScratchProject):
    def setUp(self):
        super().setUp()
        for p in sorted(self.fixed.iterdir()):  # the switch fake-fixed-bug has no reproducer yet
            p.unlink()
        self.fixed.rmdir()

    def promote(self, env=None):
        crash = self.input("switch-uaf and some bytes minimization drops")
        cwd = self.tmp / "cwd"
        cwd.mkdir(exist_ok=True)
        return self.cli_apart("promote", crash, "--id", "fake-fixed-bug", "--target", "fake_target", cwd=cwd,
                              env=env)

    def test_minimizes_and_writes_the_reproducer(self):
        rc, out, err = self.promote()
        self.assertEqual(rc, 0, out + err)
        self.assertIn("promote: minimized 44 -> 10 bytes, same crash state", out)
        self.assertEqual((self.fixed / "minimized-crash").read_text(), "switch-uaf")
        doc = json.loads((self.fixed / "bug.json").read_text())
        self.assertEqual(doc["reproducers"][0]["expect"]["asan"]["frame"], "lifeline::fake::FakeUse")

    def test_a_folder_made_while_minimizing_is_one_line(self):
        rc, out, err = self.promote(env=dict(os.environ, FAKE_MINIMIZE_MKDIR=str(self.fixed)))
        self.assertEqual(rc, 2, out + err)
        self.assertEqual(len(err.strip().splitlines()), 1, err)
        self.assertIn(f"lifeline promote: {self.fixed} appeared while minimizing", err)
        self.assertEqual(list(self.fixed.iterdir()), [])  # left as it was found


class PromoteInACheckoutWithBlanks(Promote):
    ROOT_NAME = "check out $(touch pwned)"

    def tearDown(self):
        try:
            self.assertEqual(list(self.tmp.rglob("pwned")), [])
        finally:
            super().tearDown()


if __name__ == "__main__":
    unittest.main()
