"""bug.json validation: every defect is reported with the file and the problem, never a traceback."""
import json
import shutil
import tempfile
import unittest
from pathlib import Path

from lifeline import repro

GOOD = {
    "id": "some-bug", "title": "t", "upstream": ["x#1"], "target": "interop_string_handoff",
    "reproducers": [{"input": "in", "expect": {"asan": {"type": "heap-use-after-free", "frame": "F"}}}],
}


class BugJson(unittest.TestCase):
    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp())
        self.dir = self.tmp / "some-bug"
        self.dir.mkdir()
        (self.dir / "in").write_bytes(b"\x00")

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def write(self, doc):
        (self.dir / "bug.json").write_text(doc if isinstance(doc, str) else json.dumps(doc))

    def error(self):
        with self.assertRaises(repro.BugJsonError) as cm:
            repro.load(self.dir)
        msg = str(cm.exception)
        self.assertIn(str(self.dir / "bug.json"), msg)
        return msg

    def test_valid_file_loads(self):
        self.write(GOOD)
        bug = repro.load(self.dir)
        self.assertEqual(bug.id, "some-bug")
        self.assertEqual(bug.reproducers[0].expect["asan"]["type"], "heap-use-after-free")

    def test_missing_file(self):
        self.assertIn("missing", self.error())

    def test_corrupt_json_names_line_and_column(self):
        self.write('{"id": "some-bug",')
        self.assertIn("invalid JSON at line 1", self.error())

    def test_each_missing_key_is_named(self):
        for key in ("id", "title", "upstream", "target", "reproducers"):
            with self.subTest(key=key):
                doc = dict(GOOD)
                del doc[key]
                self.write(doc)
                self.assertIn(f"missing '{key}'", self.error())

    def test_id_must_match_folder(self):
        self.write(dict(GOOD, id="other-bug"))
        self.assertIn("does not match the folder name", self.error())

    def test_unknown_lane(self):
        doc = json.loads(json.dumps(GOOD))
        doc["reproducers"][0]["expect"] = {"msan": {"type": "x", "frame": "y"}}
        self.write(doc)
        self.assertIn("expect.msan: unknown lane", self.error())

    def test_signature_needs_frame_or_message(self):
        doc = json.loads(json.dumps(GOOD))
        doc["reproducers"][0]["expect"]["asan"] = {"type": "heap-use-after-free"}
        self.write(doc)
        self.assertIn("needs 'frame'", self.error())

    def test_missing_input_file(self):
        doc = json.loads(json.dumps(GOOD))
        doc["reproducers"][0]["input"] = "nope"
        self.write(doc)
        self.assertIn("input file 'nope' does not exist", self.error())

    def test_input_cannot_escape_the_folder(self):
        doc = json.loads(json.dumps(GOOD))
        doc["reproducers"][0]["input"] = "../in"
        self.write(doc)
        self.assertIn("must be a file name inside", self.error())

    def test_not_an_object(self):
        self.write("[1, 2]")
        self.assertIn("top level must be an object", self.error())

    def test_checked_in_reproducers_are_valid(self):
        root = Path(__file__).resolve().parents[2] / "repro"
        for d in sorted(p for p in root.iterdir() if p.is_dir()):
            with self.subTest(repro=d.name):
                repro.load(d)


if __name__ == "__main__":
    unittest.main()
