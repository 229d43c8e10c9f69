"""`lifeline matrix`: the pinned list of real ggml versions, a finding run on one version's build, the table, and the
check the suite runs against the committed matrix. Nothing here builds a ggml: the runs use the scratch project's
stand-in target (scratch_project.py), whose input's first word says what it does."""
import json
import tempfile
import unittest
from pathlib import Path

from lifeline import matrix, repro, repro_load
from scratch_project import ASSERT_SIG, ScratchProject
from support import ROOT


class Versions(unittest.TestCase):
    def test_the_pinned_versions_span_more_than_a_year_and_end_at_the_pinned_ggml(self):
        versions = matrix.load_versions()
        self.assertGreaterEqual(len(versions), 6)
        dates = [v.date for v in versions]
        self.assertEqual(dates, sorted(dates))
        first, last = versions[0].date, versions[-1].date
        self.assertGreaterEqual(int(last[:4]) * 12 + int(last[5:7]) - int(first[:4]) * 12 - int(first[5:7]), 12)
        pinned = [v for v in versions if v.kind == "pinned"]
        self.assertEqual(len(pinned), 1)
        fetch = (ROOT / "scripts" / "fetch-ggml.sh").read_text()
        self.assertIn(f'PACKAGE="{pinned[0].package}"', fetch)
        self.assertIn(f'GGML_VERSION="{pinned[0].ggml}"', fetch)
        for v in versions:
            self.assertIn(v.kind, ("llama-bundle", "pinned", "whisper"), v.name)
            self.assertRegex(v.release, r"^(llama|whisper)\.cpp@", v.name)

    def test_a_malformed_line_is_named(self):
        with tempfile.TemporaryDirectory() as tmp:
            f = Path(tmp) / "versions.txt"
            f.write_text("# comment\nnlc-1 llama-bundle node-llama-cpp@1 sha512-x\n")
            with self.assertRaises(ValueError) as cm:
                matrix.load_versions(f)
            self.assertIn(f"{f}:2: 4 columns, expected 8", str(cm.exception))


ROW = {"name": "v1", "date": "2025-09-09", "ggml": "0.9", "release": "llama.cpp@b1", "package": "p@1",
       "targets": {"ggml_graph_topology": "built"}, "missing": [],
       "corpus": {"ggml_graph_topology": {"inputs": 3, "crashes": []}},
       "findings": {"bug-a": {"result": "reproduces"}, "bug-b": {"result": "cannot", "why": "this ggml has no f"}}}


class Compare(unittest.TestCase):
    def test_the_same_results_compare_equal(self):
        self.assertEqual(matrix.compare([ROW], {"versions": [ROW]}), [])

    def test_every_difference_is_a_line(self):
        got = json.loads(json.dumps(ROW))
        got["findings"]["bug-a"] = {"result": "no", "inputs": {"in": "clean"}}
        got["findings"]["bug-c"] = {"result": "reproduces"}
        got["corpus"]["ggml_graph_topology"]["crashes"] = [{"input": "corpus/x/1", "signature": "segv | f", "known": None},
                                                           {"input": "corpus/x/2", "signature": "assert | g",
                                                            "known": "bug-a"}]
        problems = matrix.compare([got], {"versions": [ROW]})
        self.assertEqual(len(problems), 3, problems)
        self.assertIn("v1: bug-a gave 'no'", problems[0])
        self.assertIn("the committed matrix says 'reproduces'", problems[0])
        self.assertIn("v1: bug-c gave 'reproduces', and the committed matrix has no result for it", problems[1])
        self.assertEqual(problems[2], "v1: ggml_graph_topology corpus/x/1 crashed with segv | f, no known finding")
        self.assertEqual(matrix.compare([dict(ROW, name="v9")], {"versions": [ROW]}),
                         ["v9: not in the committed matrix"])

    def test_a_reports_versions_line_comes_from_the_committed_matrix(self):
        with tempfile.TemporaryDirectory(dir=ROOT / "build") as tmp:
            f = Path(tmp) / "matrix.json"
            f.write_text(json.dumps({"date": "2026-12-07", "versions": [
                ROW, dict(ROW, name="v2", release="llama.cpp@b2", ggml="0.10", date="2026-01-01",
                          findings={"bug-a": {"result": "no"}})]}))
            line = matrix.versions_line("bug-a", f)
            self.assertEqual(line, f"`lifeline matrix` (2026-12-07, {f.relative_to(ROOT)}): reproduces on llama.cpp@b1 "
                                   "(ggml 0.9, 2025-09-09); does not reproduce on llama.cpp@b2 (ggml 0.10, 2026-01-01)")
            self.assertIsNone(matrix.versions_line("bug-z", f))
        self.assertIsNone(matrix.versions_line("bug-a", Path("/nonexistent/matrix.json")))


class RunFinding(ScratchProject):
    """A finding on one version's build: its reproducers with its guard off, sorted by what they gave."""

    def finding(self, words: dict, guard=None, lane="asan"):
        doc = {"status": "upstream-open", "triage": {"date": "2026-12-07", "searched": ["x"]}, "target": "fake_target",
               "reproducers": [{"input": name, "expect": {lane: ASSERT_SIG}} for name in words]}
        if guard:
            doc["guard"] = guard
        d = self.root / "repro" / "fake-finding"
        d.mkdir()
        for name, word in words.items():
            (d / name).write_text(word)
        (d / "bug.json").write_text(json.dumps(dict({"id": "fake-finding", "title": "ggml_frob frobs", "upstream": []},
                                                    **doc)))
        from unittest import mock
        # the scratch project's guards (repro.load is repro_load's, which reads them)
        with mock.patch.object(repro_load, "known_guard_ids", lambda: ["fake-guarded"]):
            return repro.load(d, [])

    def run_finding(self, bug, missing=(), status=None):
        with open(self.tmp / "log", "w") as log:
            return matrix.run_finding(bug, {"fake_target": self.fake}, {"fake_target": "built"} if status is None else status,
                                      list(missing), log)

    def test_every_input_reproduces(self):
        self.assertEqual(self.run_finding(self.finding({"a": "assert", "b": "assert"}))["result"], "reproduces")

    def test_every_input_clean(self):
        self.assertEqual(self.run_finding(self.finding({"a": "clean"}))["result"], "no")

    def test_results_by_input(self):
        got = self.run_finding(self.finding({"a": "assert", "b": "clean", "c": "uaf"}))
        self.assertEqual(got["result"], "partly")
        self.assertEqual(got["inputs"]["a"], "reproduces")
        self.assertEqual(got["inputs"]["b"], "clean")
        self.assertTrue(got["inputs"]["c"].startswith("other: heap-use-after-free | lifeline::fake::FakeUse"), got)

    def test_a_finding_about_a_function_the_tree_lacks_cannot_run(self):
        got = self.run_finding(self.finding({"a": "assert"}), missing=["ggml_frob"])
        self.assertEqual(got, {"result": "cannot", "why": "this ggml has no ggml_frob"})

    def test_a_target_not_asked_for_is_not_run_and_not_compared(self):
        got = self.run_finding(self.finding({"a": "assert"}), status={})
        self.assertEqual(got["result"], "not-run")
        row = dict(ROW, findings={"bug-a": got})
        self.assertEqual(matrix.compare([row], {"versions": [ROW]}), [])

    def test_a_target_that_did_not_build_cannot_run(self):
        got = self.run_finding(self.finding({"a": "assert"}), status={"fake_target": "does not compile: error: x"})
        self.assertEqual(got, {"result": "cannot", "why": "fake_target: does not compile: error: x"})

    def test_a_fuzz_lane_finding_runs_on_its_fuzz_signature(self):
        # llama_memory_differential's findings expect only "fuzz" (the target is built in no asan lane)
        self.assertEqual(self.run_finding(self.finding({"a": "assert"}, lane="fuzz"))["result"], "reproduces")

    def test_the_guard_is_off(self):
        got = self.run_finding(self.finding({"a": "guarded-assert"}, guard="fake-guarded"))
        self.assertEqual(got["result"], "reproduces")


class Llama(unittest.TestCase):
    """--llama: llama_memory_differential in the fuzz lane, in a folder of its own per version; its findings only when
    asked."""

    def test_the_llama_target_builds_in_the_fuzz_lane_beside_the_asan_one(self):
        plan = matrix.build_plan("v1", [matrix.CPU_TARGET, matrix.LLAMA_TARGET, matrix.VULKAN_TARGET])
        self.assertEqual(plan, {("asan", ROOT / "build" / "matrix" / "v1"): [matrix.CPU_TARGET, matrix.VULKAN_TARGET],
                                ("fuzz", ROOT / "build" / "llama-matrix" / "v1"): [matrix.LLAMA_TARGET]})
        self.assertEqual(matrix.build_plan("v1", [matrix.LLAMA_TARGET]),
                         {("fuzz", ROOT / "build" / "llama-matrix" / "v1"): [matrix.LLAMA_TARGET]})

    def test_the_targets_asked_for(self):
        self.assertEqual(matrix.asked_targets(False, False, False), [matrix.CPU_TARGET])
        self.assertEqual(matrix.asked_targets(True, True, False),
                         [matrix.CPU_TARGET, matrix.VULKAN_TARGET, matrix.LLAMA_TARGET])
        self.assertEqual(matrix.asked_targets(True, False, True), [matrix.LLAMA_TARGET])

    def test_the_llama_findings_only_when_asked(self):
        llama_ids = {"llama-kv-seq-keep-other-streams", "llama-state-restore-needs-contiguous-cells"}
        default = {b.id for b in matrix.findings()}
        self.assertFalse(default & llama_ids, default)
        asked = matrix.findings(targets=(matrix.CPU_TARGET, matrix.VULKAN_TARGET, matrix.LLAMA_TARGET))
        self.assertTrue(llama_ids <= {b.id for b in asked})
        self.assertTrue(default <= {b.id for b in asked})
        only = matrix.findings(targets=(matrix.LLAMA_TARGET,))
        self.assertEqual({b.target if b.reproducers else b.variant.target for b in only}, {matrix.LLAMA_TARGET})

    def test_a_llama_finding_without_the_target_is_not_run_and_names_the_flag(self):
        bug = next(b for b in matrix.findings(targets=(matrix.LLAMA_TARGET,))
                   if b.id == "llama-state-restore-needs-contiguous-cells")
        with tempfile.TemporaryFile("w") as log:
            got = matrix.run_finding(bug, {}, {matrix.CPU_TARGET: "built"}, [], log)
            self.assertEqual(got, {"result": "not-run",
                                   "why": "llama_memory_differential was not asked for (--llama builds it)"})
            got = matrix.run_finding(bug, {}, {matrix.LLAMA_TARGET: "skipped: llama.h lacks x"}, [], log)
            self.assertEqual(got, {"result": "cannot", "why": "llama_memory_differential: skipped: llama.h lacks x"})

    def test_the_table_names_the_target_its_build_time_and_why_it_cannot_run(self):
        row = dict(ROW, targets={matrix.LLAMA_TARGET: "skipped: llama.h lacks llama_memory_seq_rm",
                                 matrix.CPU_TARGET: "built"}, build_seconds={matrix.CPU_TARGET: 42},
                   findings={"bug-a": {"result": "cannot", "why": "llama_memory_differential: skipped: llama.h lacks"}})
        bug = type("B", (), {"id": "bug-a"})()
        md = matrix.markdown([row], [bug])
        self.assertIn("| `bug-a` | cannot run: `llama_memory_differential` not built |", md)
        self.assertIn("`llama_memory_differential` skipped: llama.h lacks llama_memory_seq_rm; "
                      "`ggml_graph_topology` built (42 s)", md)


class Command(ScratchProject):
    def setUp(self):
        super().setUp()
        (self.root / "scripts").mkdir(exist_ok=True)
        (self.root / "scripts" / "ggml-versions.txt").write_text((ROOT / "scripts" / "ggml-versions.txt").read_text())

    def test_bad_arguments(self):
        rc, text = self.cli("matrix", "--versions", "nope")
        self.assertEqual(rc, 2)
        self.assertIn("lifeline matrix: unknown version 'nope' (known: ", text)
        rc, text = self.cli("matrix", "--source", self.tmp)
        self.assertEqual(rc, 2)
        self.assertIn("is not a ggml source tree", text)
        rc, text = self.cli("matrix", "--llama", "--llama-only")
        self.assertEqual(rc, 2)
        self.assertIn("not allowed with argument", text)


if __name__ == "__main__":
    unittest.main()
