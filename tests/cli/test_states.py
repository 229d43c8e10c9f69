"""`lifeline coverage --states`: every (operation, state) pair the checked-in inputs reach is one the golden lists
(harness/programs/*/states*.txt) call legal, and their gap marks say exactly which legal pairs the inputs miss
(--check, on the asan lane's binaries); a list that lacks a reached pair, a stale or missing gap mark, and a
malformed list line are each reported; bad arguments are one line and exit 2."""
import os
import sys
import tempfile
import unittest
from collections import Counter
from pathlib import Path

from support import BUILD, CLI, ROOT, run, run_apart

sys.path.insert(0, str(ROOT / "cli"))
from lifeline import states  # noqa: E402
from lifeline.usage import UsageError  # noqa: E402

ENCODER = "runtime_encoder_lifetime"


def golden(text: str) -> states.Golden:
    f = tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False, dir=ROOT / "build")
    f.write(text)
    f.close()
    try:
        return states.Golden(Path(f.name))
    finally:
        os.unlink(f.name)


@unittest.skipUnless((BUILD / "targets" / ENCODER).is_file(), f"needs the asan lane's {ENCODER} in {BUILD}")
class CheckedInInputs(unittest.TestCase):
    def test_every_target_agrees_with_its_list(self):
        rc, out = run([*CLI, "coverage", "--states", "--check", "--build-dir", BUILD])
        self.assertEqual(rc, 0, out)
        totals = [l for l in out.splitlines() if "legal pairs reached" in l]
        self.assertGreaterEqual(len(totals), 5, out)  # both runtime families, graph, capsule, handoff at least
        for t in totals:  # every legal pair: the lists' gap marks are all gone (--check would say otherwise)
            n, _, rest = t.split(":")[1].strip().partition("/")
            self.assertEqual(n, rest.split()[0], t)

    def test_a_reached_pair_missing_from_the_list_is_an_error(self):
        files = states.input_files(ENCODER, ["seeds"], [])["seeds"]
        fmt, counts = states.decode_states(BUILD / "targets" / ENCODER, files)
        self.assertEqual(fmt, "runtime-encoder")
        self.assertGreater(counts[("push-pool", "no-pool")], 0)
        real = (ROOT / "harness/programs/runtime/states-encoder.txt").read_text()
        # The list without `compute pool-drained`, which a seed reaches (metal-edesc-autorelease's state).
        cut = "\n".join(l for l in real.splitlines() if l.split()[:2] != ["compute", "pool-drained"]) + "\n"
        lines, errors = states.report(ENCODER, golden(cut), counts, {"seeds": len(files)}, check=False)
        self.assertEqual(errors, 1, "\n".join(lines))
        self.assertIn("ERROR: compute in state pool-drained", "\n".join(lines))


class Lists(unittest.TestCase):
    LIST = "# format: toy\nopen a\nopen b only=t1\nclose a gap=t1\nclose b not=t1\n"

    def test_marks_pick_the_pairs_of_a_target(self):
        g = golden(self.LIST)
        self.assertEqual(g.legal("t1"), {("open", "a"): False, ("open", "b"): False, ("close", "a"): True})
        self.assertEqual(g.legal("t2"), {("open", "a"): False, ("close", "a"): False, ("close", "b"): False})

    def test_check_reports_stale_and_lost_gap_marks(self):
        g = golden(self.LIST)
        counts = Counter({("open", "a"): 3, ("close", "a"): 1})  # close a is marked a gap; open b is not reached
        lines, errors = states.report("t1", g, counts, {"seeds": 1}, check=True)
        text = "\n".join(lines)
        self.assertEqual(errors, 2, text)
        self.assertIn("STALE: close a is marked gap=t1", text)
        self.assertIn("LOST: the inputs no longer reach open b", text)
        self.assertIn("total: 2/3 legal pairs reached", text)
        _, errors = states.report("t1", g, counts, {"seeds": 1}, check=False)
        self.assertEqual(errors, 0)

    def test_malformed_lines_name_the_file_and_line(self):
        with self.assertRaisesRegex(UsageError, r":3: unknown mark 'gap:t1'"):
            golden("# format: toy\nopen a\nopen b gap:t1\n")
        with self.assertRaisesRegex(UsageError, r"no '# format: <name>' line"):
            golden("open a\n")
        with self.assertRaisesRegex(UsageError, r":2: a line is 'OP STATE"):
            golden("# format: toy\nlonely\n")


class BadArguments(unittest.TestCase):
    def test_one_line_and_exit_2(self):
        for args, message in [
            (["--states", "no_such_target"], "unknown target 'no_such_target'"),
            (["--states", "--inputs", "seeds,nope"], "unknown input set 'nope'"),
            (["--states", "--corpus", "/nonexistent dir"], "'/nonexistent dir' is not a directory"),
            (["--states", "--check", "--inputs", "seeds"], "--check accounts for the checked-in inputs"),
            (["--states", "--gaps"], "--states prints its table"),
            (["--check"], "--check and --build-dir go with --states"),
        ]:
            rc, out, err = run_apart([*CLI, "coverage", *args, "--no-build"])
            self.assertEqual(rc, 2, (args, out, err))
            self.assertIn(message, err, args)
            self.assertEqual(len(err.strip().splitlines()), 1, err)


if __name__ == "__main__":
    unittest.main()
