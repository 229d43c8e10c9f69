"""What `lifeline promote` writes into a new bug.json (lifeline/promote.py)."""
import sys
import unittest

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


if __name__ == "__main__":
    unittest.main()
