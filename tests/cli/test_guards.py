"""Reading the guard counter file (LIFELINE_GUARD_COUNTS, layout in core/guards.h) from bytes built by hand:
a valid file, and every way one can be short or garbled (reported as unreadable, never a traceback)."""
import struct
import tempfile
import unittest
from pathlib import Path

from lifeline import guards

STALE = "ggml-gallocr-stale-plan-rewired-edges"
SCALE = "ggml-cpu-scale-f16-unsupported"


def header(magic=b"LLGUARD1", inputs=40210, n=2):
    return magic + struct.pack("<QQ", inputs, n)


def entry(gid, count):
    raw = gid.encode() if isinstance(gid, str) else gid
    return raw + b"\0" * (56 - len(raw)) + struct.pack("<Q", count)


VALID = header() + entry(STALE, 812) + entry(SCALE, 0)


class Parse(unittest.TestCase):
    def test_valid(self):
        self.assertEqual(len(VALID), 24 + 2 * 64)
        c = guards.parse(VALID)
        self.assertEqual((c.inputs, c.fired), (40210, {STALE: 812, SCALE: 0}))
        self.assertEqual(guards.build(40210, [(STALE, 812), (SCALE, 0)]), VALID)

    def test_no_guards(self):
        c = guards.parse(header(inputs=7, n=0))
        self.assertEqual((c.inputs, c.fired), (7, {}))

    def test_an_id_of_55_bytes_fills_its_field(self):
        gid = "g" * 55
        self.assertEqual(guards.parse(header(n=1) + entry(gid, 3)).fired, {gid: 3})

    def assertUnreadable(self, data, why):
        with self.assertRaises(guards.GuardFileError) as e:
            guards.parse(data)
        self.assertIn(why, str(e.exception))

    def test_truncated(self):
        for size in (0, 7, 23):
            with self.subTest(size=size):
                self.assertUnreadable(VALID[:size], f"{size} bytes, shorter than the 24-byte header")
        for size in (24, 24 + 64, len(VALID) - 1):
            with self.subTest(size=size):
                self.assertUnreadable(VALID[:size], f"{size} bytes, but 2 entries make 152")

    def test_longer_than_its_entries(self):
        self.assertUnreadable(VALID + b"\0" * 64, "216 bytes, but 2 entries make 152")

    def test_wrong_magic(self):
        self.assertUnreadable(header(magic=b"LLGUARD2") + entry(STALE, 1) + entry(SCALE, 1), "magic b'LLGUARD2'")
        self.assertUnreadable(b"\0" * 152, "magic b'\\x00")

    def test_n_too_large(self):
        self.assertUnreadable(header(n=3) + entry(STALE, 1) + entry(SCALE, 1), "152 bytes, but 3 entries make 216")
        self.assertUnreadable(header(n=2 ** 64 - 1) + entry(STALE, 1), "18446744073709551615 entries claimed")

    def test_garbled_entries(self):
        cases = ((entry("", 1), "entry 0: its id is not a NUL-padded name"),
                 (b"x" * 56 + struct.pack("<Q", 1), "entry 0: its id is not a NUL-padded name"),
                 (entry(b"ab\0cd", 1), "entry 0: its id is not a NUL-padded name"),
                 (entry(b"\xff\xfe", 1), "entry 0: its id is not ASCII"),
                 (entry(b"a\nb", 1), "entry 0: its id holds control characters"),
                 (entry(STALE, 40211), f"entry 0: {STALE} fired in 40211 inputs of 40210"))
        for bad, why in cases:
            with self.subTest(why=why):
                self.assertUnreadable(header(n=1) + bad, why)
        self.assertUnreadable(header() + entry(STALE, 1) + entry(STALE, 2), f"entry 1: guard {STALE} listed twice")


class ReadAndDescribe(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.path = Path(self.dir.name) / "guards.bin"

    def tearDown(self):
        self.dir.cleanup()

    def test_absent(self):
        self.assertIsNone(guards.read(self.path))
        self.assertIsNone(guards.summary_json(self.path))
        self.assertIsNone(guards.describe(None))

    def test_valid(self):
        self.path.write_bytes(header(n=3) + entry(SCALE, 0) + entry(STALE, 812) + entry("b-guard", 812))
        g = guards.summary_json(self.path)
        self.assertEqual(g, {"file": str(self.path), "inputs": 40210, "fired": {SCALE: 0, STALE: 812, "b-guard": 812}})
        self.assertEqual(guards.describe(g), f"guards: b-guard 812/40210 inputs (2.0%), {STALE} 812/40210 inputs "
                                             "(2.0%)")

    def test_none_fired(self):
        self.path.write_bytes(header(inputs=0, n=1) + entry(SCALE, 0))
        self.assertEqual(guards.describe(guards.summary_json(self.path)), "guards: none fired in 0 inputs")

    def test_unreadable(self):
        self.path.write_bytes(VALID[:100])
        g = guards.summary_json(self.path)
        self.assertEqual(g, {"file": str(self.path), "unreadable": "100 bytes, but 2 entries make 152"})
        self.assertEqual(guards.describe(g), f"guards: {self.path} is unreadable (100 bytes, but 2 entries make 152)")

    def test_a_directory_in_its_place(self):
        self.path.mkdir()
        g = guards.summary_json(self.path)
        self.assertIn("cannot read it", g["unreadable"])


class RealFile(unittest.TestCase):
    def test_a_file_the_ggml_target_wrote(self):
        """tests/data/guards/ggml_graph_topology-20s.bin: `lifeline fuzz ggml_graph_topology --time 20` on the
        fuzz lane (5454 execs), as core/guards.cc wrote it."""
        from lifeline.bugs import known_guard_ids
        from support import ROOT
        c = guards.read(ROOT / "tests" / "data" / "guards" / "ggml_graph_topology-20s.bin")
        self.assertEqual(c.inputs, 5454)
        # One entry per guard the writer knew, in guard_list.def's order; guards added to the list since then
        # (ggml-sched-inplace-writer-backend) come after them.
        self.assertEqual(list(c.fired), known_guard_ids()[:len(c.fired)])
        self.assertEqual(len(c.fired), 5)
        self.assertEqual(c.fired, {SCALE: 106, "ggml-gallocr-hash-set-external-view-src": 71,
                                   "ggml-gallocr-leaf-records-unchecked": 4, STALE: 0,
                                   "ggml-gallocr-view-node-owned-record": 0})


if __name__ == "__main__":
    unittest.main()
