"""`lifeline reduce`: delta debugging on the decoded program. The JSON helpers (which ops a deletion takes with it,
the one-step simplifications) on written programs; bad arguments; and, where the asan lane is built, a real
reduction: a reproducer of wasm-lang-dangling padded with ops that do not matter is reduced back, the result
decodes to itself, and it still fails with the bug's signature and runs clean on the fixed code."""
import json
import shutil
import subprocess
import tempfile
import unittest
from pathlib import Path

from lifeline import reduce
from support import BUILD, ROOT, run, run_apart

HANDOFF = BUILD / "targets" / "interop_string_handoff"


class Helpers(unittest.TestCase):
    PROGRAM = {"format": "graph", "ops": [
        {"id": 0, "op": "leaf", "graph": "#3"},
        {"id": 1, "op": "unary", "graph": "#3", "src": "#0", "model": {"expect": "#9"}},
        {"id": 2, "op": "binary", "graph": "#3", "src": ["#0", "#1"]},
        {"id": 3, "op": "seal", "model": {"output": "#2"}},
        {"id": 4, "op": "alloc+compute", "graph": "#3", "allocator": 0},
        {"id": 5, "op": "leaf"}]}

    def test_a_deletion_takes_every_op_that_names_a_deleted_one(self):
        ids = lambda p: [op["id"] for op in p["ops"]]
        self.assertEqual(ids(reduce.without(self.PROGRAM, {1})), [0, 3, 4, 5])  # 2 names 1; 1's build names seal 3
        self.assertEqual(ids(reduce.without(self.PROGRAM, {3})), [5])  # the graph goes with its seal
        self.assertEqual(ids(reduce.without(self.PROGRAM, {5})), [0, 1, 2, 3, 4])
        self.assertEqual(reduce.refs_in(self.PROGRAM["ops"][1]), {0, 3}, "references in 'model' are not uses")

    def test_simplifications_go_toward_plain_values_one_step_at_a_time(self):
        op = {"id": 7, "op": "leaf", "type": "f16", "ne": [8, 3], "input": True, "src": "#2", "model": {"x": True}}
        got = list(reduce.variants(op))
        self.assertIn(dict(op, type="f32"), got)
        self.assertIn(dict(op, input=False), got)
        self.assertIn(dict(op, ne=[3]), got)            # an element dropped
        self.assertIn(dict(op, ne=[1, 3]), got)         # an extent made small
        self.assertIn(dict(op, ne=[4, 3]), got)         # ... or halved
        self.assertFalse([v for v in got if v.get("src") != "#2" or v["id"] != 7 or v["op"] != "leaf"
                          or v["model"] != {"x": True}], "ids, op names, references and the model stay")
        self.assertEqual(reduce.simpler("language", "ukrainian"), ["", "ukra", "ukrainia"])
        self.assertEqual(reduce.simpler("flag", False), [])


class Arguments(unittest.TestCase):
    def usage_error(self, *args) -> str:
        rc, out, err = run_apart([ROOT / "lifeline", "reduce", *args])
        self.assertEqual(rc, 2, out + err)
        self.assertNotIn("Traceback", err)
        return err.strip()

    def test_bad_arguments_are_one_line(self):
        tmp = Path(tempfile.mkdtemp())
        try:
            f = tmp / "in put $(x)"
            f.write_bytes(b"\x01")
            self.assertIn("is not a file", self.usage_error(str(tmp / "missing"), "--target", "alloc_graph_topology"))
            self.assertIn("name the target (--target) or the bug (--bug)", self.usage_error(str(f)))
            self.assertIn("unknown target 'nope'", self.usage_error(str(f), "--target", "nope"))
            self.assertIn("unknown lane 'x'", self.usage_error(str(f), "--target", "alloc_graph_topology", "--lane", "x"))
            self.assertIn("--in-place and --out exclude each other",
                          self.usage_error(str(f), "--target", "alloc_graph_topology", "--in-place", "--out", str(tmp / "o")))
            self.assertIn("unknown bug id 'no-such-bug'", self.usage_error(str(f), "--bug", "no-such-bug"))
        finally:
            shutil.rmtree(tmp)


@unittest.skipUnless(HANDOFF.is_file(), "the asan lane is not built")
class RealReduction(unittest.TestCase):
    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp())

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def program(self, path: Path) -> dict:
        out = subprocess.run([HANDOFF, "--program", "decode", path], stdout=subprocess.PIPE, check=True).stdout
        return json.loads(out)

    def test_a_padded_reproducer_reduces_back_and_still_reproduces(self):
        original = self.program(ROOT / "repro" / "wasm-lang-dangling" / "long-heap-string")
        padded = dict(original)
        # Three ops that do not matter: another context, a synchronous submit to it, a submit to no context.
        padded["ops"] = original["ops"] + [
            {"id": 50, "op": "bind", "multilingual": False},
            {"id": 51, "op": "submit-sync", "slot": 1, "language": "en", "audio": [0.5], "threads": 3, "translate": True},
            {"id": 52, "op": "submit-sync", "slot": 3, "language": "xx", "threads": 1}]
        (self.tmp / "padded.json").write_text(json.dumps(padded))
        big = self.tmp / "padded input"
        subprocess.run([HANDOFF, "--program", "encode", self.tmp / "padded.json", big], check=True)
        out = self.tmp / "reduced"
        rc, text = run([ROOT / "lifeline", "reduce", big, "--bug", "wasm-lang-dangling", "--only-lane", "--out", out])
        self.assertEqual(rc, 0, text)
        self.assertIn(f"reduce: {len(original['ops']) + 3} -> ", text)
        reduced = self.program(out)
        self.assertLessEqual(len(reduced["ops"]), len(original["ops"]), text)
        # It decodes to itself, and its two-way test holds: clean on the fixed code, the signature with the switch.
        (self.tmp / "again.json").write_text(json.dumps(reduced))
        again = self.tmp / "again"
        subprocess.run([HANDOFF, "--program", "encode", self.tmp / "again.json", again], check=True)
        self.assertEqual(again.read_bytes(), out.read_bytes())
        rc, text = run([ROOT / "lifeline", "repro-check", "--repro-dir", ROOT / "repro" / "wasm-lang-dangling",
                        "--lane", "asan", "--mode", "fixed", "--binary", HANDOFF])
        self.assertEqual(rc, 0, text)
        proc = subprocess.run([HANDOFF, out], env={"LIFELINE_REINTRODUCE": "wasm-lang-dangling", "PATH": "/usr/bin"},
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace")
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn("heap-use-after-free", proc.stdout)

    def test_an_input_that_does_not_reproduce_is_refused(self):
        clean = self.tmp / "clean"
        clean.write_bytes(b"")
        rc, text = run([ROOT / "lifeline", "reduce", clean, "--target", "interop_string_handoff"])
        self.assertEqual(rc, 1, text)
        self.assertIn("runs clean on interop_string_handoff: nothing to keep while reducing", text)


if __name__ == "__main__":
    unittest.main()
