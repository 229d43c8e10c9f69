"""`lifeline repro-plan`: the reproducer tests CMake registers for a lane, read from bug.json by repro.py alone.

A malformed bug.json (any JSON type at any level) is "invalid": CMake registers only its failing
repro.<id>.bug-json. Nothing else ever escapes the loader: the plan of every other folder still prints."""
import json
import shutil
import tempfile
import unittest
from pathlib import Path

from json_mutations import JSON_VALUES, mutations, replaced
from lifeline import plan, repro
from support import TRIAGE, CLI, ROOT, run

# What an upstream-fixed finding cites (cli/lifeline/repro.py).
FIX = [{"url": "https://github.com/ggml-org/ggml/pull/1", "relation": "fix"}]

SIG = {"type": "heap-use-after-free", "frame": "F"}
ID = "gallocr-view-leaf-offset"  # a fixed bug names a switch of core/bug_list.def
# Every field bug.json has, with an upstream variant and a reproducer environment.
FULL = {
    "id": ID, "title": "t", "upstream": ["x#1"], "target": "alloc_graph_topology",
    "reproducers": [{"input": "in", "expect": {"asan": SIG, "valgrind": SIG}, "env": {"UBSAN_OPTIONS": "x=1"}}],
    "upstream_variant": {"target": "ggml_graph_topology", "source": "ggml 0.25.1", "patch": "upstream/p.patch",
                         "reproducers": [{"input": "variant-in",
                                          "expect": {"asan": {"type": "assert", "frame": "g"}}}]},
}


class PlanLines(unittest.TestCase):
    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp())
        self.root = self.tmp / "repro"
        self.root.mkdir()

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def folder(self, name, doc):
        d = self.root / name
        (d / "upstream").mkdir(parents=True, exist_ok=True)
        (d / "in").write_bytes(b"\x00")
        (d / "variant-in").write_bytes(b"\x01")
        (d / "upstream" / "p.patch").write_text("--- a/x\n+++ b/x\n")
        for value in JSON_VALUES:  # so that any string names a file: an input or a patch
            if isinstance(value, str) and value.strip() and "\0" not in value:
                (d / value).write_text("--- a/x\n+++ b/x\n")
        if doc is not None:
            (d / "bug.json").write_text(doc if isinstance(doc, str) else json.dumps(doc))
        return d

    def test_fixed_bug_with_a_variant(self):
        d = self.folder(ID, FULL)
        self.assertEqual(plan.plan_line(d, "asan"), f"repro|{ID}|fixed|alloc_graph_topology|fixed,reintroduced|"
                                                    "ggml_graph_topology|upstream/p.patch|fixed,reintroduced")
        # valgrind is listed by the bug's own reproducer only; tsan by neither.
        self.assertEqual(plan.plan_line(d, "valgrind"), f"repro|{ID}|fixed|alloc_graph_topology|"
                                                        "fixed,reintroduced|ggml_graph_topology|upstream/p.patch|-")
        self.assertEqual(plan.plan_line(d, "tsan"),
                         f"repro|{ID}|fixed|alloc_graph_topology|-|ggml_graph_topology|upstream/p.patch|-")

    def test_a_variant_without_a_patch_prints_none(self):
        """The bug's switch acting on upstream code as it is (PyTorch): no patch, the same two modes."""
        doc = json.loads(json.dumps(FULL))
        del doc["upstream_variant"]["patch"]
        d = self.folder(ID, doc)
        self.assertEqual(plan.plan_line(d, "asan"), f"repro|{ID}|fixed|alloc_graph_topology|fixed,reintroduced|"
                                                    "ggml_graph_topology|-|fixed,reintroduced")

    def test_upstream_open_bug_is_pinned(self):
        doc = dict(FULL, status="upstream-open", triage=TRIAGE)
        del doc["upstream_variant"]
        d = self.folder(ID, doc)
        self.assertEqual(plan.plan_line(d, "valgrind"),
                         f"repro|{ID}|upstream-open|alloc_graph_topology|pinned|-|-|-")

    def test_upstream_open_bug_with_a_guard_is_pinned_and_guarded(self):
        doc = dict(FULL, status="upstream-open", triage=TRIAGE, guard="ggml-gallocr-leaf-records-unchecked")
        del doc["upstream_variant"]
        d = self.folder(ID, doc)
        self.assertEqual(plan.plan_line(d, "asan"),
                         f"repro|{ID}|upstream-open|alloc_graph_topology|pinned,guarded|-|-|-")

    def test_upstream_fixed_bug_has_only_its_variants_tests(self):
        """A bug upstream fixed before the pinned version, which no stand-in models: no switch needed, no reproducers
        of its own."""
        doc = dict(FULL, id="no-switch-for-this", status="upstream-fixed", target="ggml_graph_topology", prior_art=FIX)
        del doc["reproducers"]
        d = self.folder("no-switch-for-this", doc)
        self.assertEqual(plan.plan_line(d, "asan"), "repro|no-switch-for-this|upstream-fixed|ggml_graph_topology|-|"
                                                    "ggml_graph_topology|upstream/p.patch|fixed,reintroduced")
        self.assertEqual(plan.plan_line(d, "tsan"), "repro|no-switch-for-this|upstream-fixed|ggml_graph_topology|-|"
                                                    "ggml_graph_topology|upstream/p.patch|-")

    def test_upstream_fixed_bug_with_reproducers_is_checked_pinned(self):
        """Fixed upstream after the pinned version: its reproducers still fail on the pinned upstream."""
        doc = dict(FULL, id="no-switch-for-this", status="upstream-fixed", target="ggml_graph_topology", prior_art=FIX)
        d = self.folder("no-switch-for-this", doc)
        self.assertEqual(plan.plan_line(d, "asan").split("|")[2:5], ["upstream-fixed", "ggml_graph_topology", "pinned"])

    def test_upstream_fixed_bug_without_a_fix_a_variant_or_with_another_target_is_invalid(self):
        no_variant = dict(FULL, id="no-switch-for-this", status="upstream-fixed", target="ggml_graph_topology",
                          prior_art=FIX)
        del no_variant["reproducers"]
        del no_variant["upstream_variant"]
        no_fix = dict(FULL, id="no-switch-for-this", status="upstream-fixed", target="ggml_graph_topology")
        other_target = dict(FULL, id="no-switch-for-this", status="upstream-fixed", prior_art=FIX)
        del other_target["reproducers"]
        for name, doc, why in (("no variant", no_variant, "needs 'upstream_variant'"),
                               ("no fix", no_fix, "needs the fix: a 'prior_art' entry with relation 'fix'"),
                               ("target", other_target, "target is its variant's")):
            with self.subTest(name):
                d = self.folder("no-switch-for-this", doc)
                self.assertEqual(plan.plan_line(d, "asan").split("|")[2], "invalid")
                with self.assertRaises(repro.BugJsonError) as cm:
                    repro.load(d)
                self.assertIn(why, str(cm.exception))

    def test_a_guard_that_is_not_in_the_guard_list_or_on_a_fixed_bug_is_invalid(self):
        for doc in (dict(FULL, status="upstream-open", triage=TRIAGE, guard="no-such-guard"),
                    dict(FULL, guard="ggml-gallocr-leaf-records-unchecked"),
                    dict(FULL, status="upstream-open", triage=TRIAGE, guard=["ggml-gallocr-leaf-records-unchecked"]),
                    dict(FULL, status="upstream-open", triage=TRIAGE, guard="ggml-gallocr-leaf-records-unchecked", guard_notes=""),
                    dict(FULL, status="upstream-open", triage=TRIAGE, guard_notes="notes of no guard")):
            with self.subTest(guard=doc.get("guard"), notes=doc.get("guard_notes"), status=doc.get("status")):
                d = self.folder(ID, doc)
                self.assertEqual(plan.plan_line(d, "asan").split("|")[2], "invalid")
                with self.assertRaises(repro.BugJsonError) as e:
                    repro.load(d)
                self.assertRegex(str(e.exception), r"guard|'guard'")
                shutil.rmtree(d)

    def test_the_brief_examples_are_invalid(self):
        for name, doc in (("expect-array", replaced(FULL, ("reproducers", 0, "expect"), ["asan"])),
                          ("reproducers-object", replaced(FULL, ("reproducers",), {})),
                          ("variant-number", replaced(FULL, ("upstream_variant",), 3)),
                          ("no-bug-json", None), ("corrupt", '{"id": "corrupt",'), ("empty", "")):
            with self.subTest(name):
                if isinstance(doc, dict):  # upstream-open: the id needs no switch, only the defect is wrong
                    doc = dict(doc, id=name, status="upstream-open", triage=TRIAGE)
                d = self.folder(name, doc)
                self.assertEqual(plan.plan_line(d, "asan"), f"repro|{name}|invalid|-|-|-|-|-")

    def test_any_json_type_at_any_level_is_valid_or_invalid_never_an_error(self):
        d = self.folder(ID, FULL)
        seen = {"invalid": 0, "valid": 0}
        for at, value, doc in mutations(FULL):
            with self.subTest(at=at, value=value):
                (d / "bug.json").write_text(json.dumps(doc))
                try:
                    repro.load(d)
                    valid = True
                except repro.BugJsonError:
                    valid = False
                line = plan.plan_line(d, "asan")
                self.assertEqual(line.split("|")[2] != "invalid", valid, line)
                seen["valid" if valid else "invalid"] += 1
        self.assertGreater(seen["invalid"], 100)
        self.assertGreater(seen["valid"], 10)  # e.g. "upstream": [] or another title

    def test_json_python_cannot_hold_is_invalid(self):
        for text in ("[" * 100000 + "]" * 100000, '{"id": ' + "9" * 5000 + "}"):
            with self.subTest(text=text[:20]):
                d = self.folder(ID, text)
                with self.assertRaises(repro.BugJsonError):
                    repro.load(d)
                self.assertEqual(plan.plan_line(d, "asan"), f"repro|{ID}|invalid|-|-|-|-|-")

    def test_a_patch_cmake_cannot_carry_is_invalid(self):
        for patch in ("upstream/p;q.patch", "upstream/p q.patch", "upstream/p[1].patch", "upstream/$(x).patch"):
            with self.subTest(patch=patch):
                d = self.folder(ID, replaced(FULL, ("upstream_variant", "patch"), patch))
                (d / patch).write_text("--- a/x\n+++ b/x\n")
                self.assertEqual(plan.plan_line(d, "asan"), f"repro|{ID}|invalid|-|-|-|-|-")

    def test_a_folder_name_cmake_cannot_carry_stops_the_plan(self):
        d = self.folder("some;bug", dict(FULL, id="some;bug"))
        with self.assertRaises(plan.PlanError) as cm:
            plan.plan_line(d, "asan")
        self.assertIn("id 'some;bug' cannot be passed to CMake", str(cm.exception))

    def test_folders_by_name_files_skipped(self):
        self.folder("b-bug", dict(FULL, id="b-bug"))
        self.folder("a-bug", None)
        (self.root / "README").write_text("not a reproducer")
        self.assertEqual([line.split("|")[1] for line in plan.plan(self.root, "asan")], ["a-bug", "b-bug"])


class PlanCommand(unittest.TestCase):
    def test_checked_in_reproducers_plan(self):
        """Every checked-in folder is in the plan, valid; asan runs the documented variant."""
        rc, out = run(CLI + ["repro-plan", "--lane", "asan"])
        self.assertEqual(rc, 0, out)
        lines = out.splitlines()
        self.assertEqual([line.split("|")[1] for line in lines], [d.name for d in repro.folders(ROOT / "repro")])
        self.assertFalse([line for line in lines if line.split("|")[2] == "invalid"], out)
        self.assertIn("repro|gallocr-view-leaf-offset|fixed|alloc_graph_topology|fixed,reintroduced|"
                      "ggml_graph_topology|upstream/revert-906c73b2.patch|fixed,reintroduced", lines)
        self.assertIn("repro|wasm-lang-dangling|fixed|interop_string_handoff|fixed,reintroduced|"
                      "whisper_string_handoff|upstream/revert-3000.patch|fixed,reintroduced", lines)
        self.assertIn("repro|iree-dlpack-import-leak|fixed|interop_capsule_lifecycle|fixed,reintroduced|-|-|-", lines)
        # Every upstream-open finding but the UBSan one (suppressed by function instead) has a guard.
        self.assertIn("repro|ggml-gallocr-leaf-records-unchecked|upstream-open|ggml_graph_topology|"
                      "pinned,guarded|-|-|-", lines)
        self.assertIn("repro|ggml-graph-nbytes-null-offset|upstream-open|ggml_graph_topology|pinned|-|-|-", lines)

    def test_bad_arguments(self):
        for args, text in ((["--lane", "msan"], "invalid choice: 'msan'"),
                           ([], "the following arguments are required: --lane"),
                           (["--lane", "asan", "--repro-root", "/nonexistent"], "'/nonexistent' is not a directory")):
            with self.subTest(args=args):
                rc, out = run(CLI + ["repro-plan", *args])
                self.assertEqual(rc, 2, out)
                self.assertIn(text, out)
                self.assertEqual(len(out.strip().splitlines()), 1, out)

    def test_internal_verb_is_not_listed(self):
        rc, out = run(CLI + ["--help"])
        self.assertEqual(rc, 0, out)
        self.assertNotIn("repro-plan", out)


if __name__ == "__main__":
    unittest.main()
