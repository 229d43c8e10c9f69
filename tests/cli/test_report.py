"""SARIF and Markdown from triage results and from a fuzz job's summary.json (lifeline/report.py), and either of
the wrong shape: one line and exit status 2, never a traceback."""
import copy
import json
import sys
import tempfile
import unittest
from pathlib import Path

from json_mutations import assert_each_renders_or_is_refused
from support import CLI, ROOT, run_apart

CRASH = {"tool": "asan", "type": "heap-use-after-free", "state": ["f", "g"], "frames": ["f", "g", "main"],
         "access": "READ 1", "message": None, "location": "/x/f.cc:3:1",
         "signature": "heap-use-after-free | f / g"}
# A row of `lifeline triage --json` with every field.
ROW = {"input": "/x/fuzz-out/t/artifacts/crash-1", "target": "t", "reintroduce": None,
       "signature": "heap-use-after-free | f / g", "crash": CRASH, "replays": ["s", "s", "s"], "flaky": False,
       "known": "some-bug", "duplicate_of": None, "known_status": "fixed", "status": "known"}


class Reports(unittest.TestCase):
    """SARIF and Markdown from triage results (no binaries needed)."""

    def setUp(self):
        sys.path.insert(0, str(ROOT / "cli"))
        from lifeline import report, triage
        self.report = report
        crash = {"type": "heap-use-after-free", "state": ["lifeline::interop::BufferView::Element", "b", "c"],
                 "message": None, "location": str(ROOT / "layers/interop/dlpack_consumer.cc") + ":120:7"}
        self.results = [
            triage.Result("fuzz-out/t/artifacts/crash-1", "t", None, "heap-use-after-free | a / b / c", crash,
                          ["s", "s", "s"], False, None),
            triage.Result("fuzz-out/t/artifacts/crash-2", "t", None, "heap-use-after-free | a / b / c", crash,
                          ["s", "s", "s"], False, None, "fuzz-out/t/artifacts/crash-1"),
            triage.Result("fuzz-out/t/artifacts/crash-3", "t", None),
        ]

    def test_sarif_has_one_result_per_distinct_crash_with_a_location(self):
        doc = self.report.sarif(self.results, ROOT)
        self.assertEqual(doc["version"], "2.1.0")
        run = doc["runs"][0]
        self.assertEqual([r["id"] for r in run["tool"]["driver"]["rules"]], ["lifeline/heap-use-after-free"])
        self.assertEqual(len(run["results"]), 1)
        loc = run["results"][0]["locations"][0]["physicalLocation"]
        self.assertEqual(loc["artifactLocation"]["uri"], "layers/interop/dlpack_consumer.cc")
        self.assertEqual(loc["region"], {"startLine": 120, "startColumn": 7})

    def test_markdown_counts_distinct_and_new(self):
        md = self.report.markdown(self.results)
        self.assertIn("3 input(s), 1 distinct crash(es), 1 new.", md)
        self.assertIn("| `crash-2` | t | new | heap-use-after-free | a / b / c | no | crash-1 |", md)



class WrongShapes(unittest.TestCase):
    def setUp(self):
        sys.path.insert(0, str(ROOT / "cli"))
        from lifeline import report
        self.report = report
        self.tmp = tempfile.TemporaryDirectory()
        self.file = Path(self.tmp.name) / "triage.json"

    def tearDown(self):
        self.tmp.cleanup()

    def cli(self, doc, fmt):
        self.file.write_text(doc if isinstance(doc, str) else json.dumps(doc))
        return run_apart(CLI + ["report", "--triage", self.file, "--format", fmt])

    def test_the_issue_shapes_are_one_line_and_exit_2(self):
        crash = dict(CRASH, location=5)
        cases = [({"a": 1}, "json", "the top level must be a list of rows"),
                 ([1, 2], "json", "row 0 must be an object"), (["x"], "markdown", "row 0 must be an object"),
                 ([dict(ROW, crash=None)], "sarif", "row 0: a row with a signature needs its 'crash' object"),
                 ([dict(ROW, crash="x")], "sarif", "row 0: 'crash' must be an object or null"),
                 ([dict(ROW, input=3)], "sarif", "row 0: 'input' must be a string"),
                 ([ROW, dict(ROW, crash=crash)], "sarif", "row 1: crash: 'location' must be a string or null"),
                 ("[" * 100000, "json", "is not triage output (maximum recursion depth exceeded")]
        for doc, fmt, text in cases:
            with self.subTest(doc=str(doc)[:40], fmt=fmt):
                rc, out, err = self.cli(doc, fmt)
                self.assertEqual((rc, out), (2, ""), err)
                self.assertEqual(len(err.strip().splitlines()), 1, err)
                self.assertIn(f"lifeline report: '{self.file}' is not triage output (", err)
                self.assertIn(text, err)

    def test_a_location_without_a_line_number_is_left_out(self):
        for location in ("/x/f.cc:" + "9" * 5000, "/x/f\0.cc:3", "f.cc"):
            with self.subTest(location=location[:12]):
                results = self.report.results_from_json([dict(ROW, crash=dict(CRASH, location=location))])
                result = self.report.sarif(results, ROOT)["runs"][0]["results"][0]
                self.assertEqual("locations" in result, location.endswith(":3"), result)

    def test_any_json_type_at_any_level_renders_or_is_refused(self):
        report = self.report
        assert_each_renders_or_is_refused(
            self, [ROW], report.results_from_json,
            lambda results: [report.sarif(results, ROOT), report.markdown(results), [r.to_json() for r in results]],
            200, 100)


# ---- fuzz summaries (`lifeline fuzz --out DIR`: DIR/summary.json) ----------------------------------------------

OPEN_SIG = "assert | ggml_gallocr_init_tensor / ggml_gallocr_alloc_graph"
NEW_SIG = "heap-buffer-overflow | rope_f32 / ggml_compute_forward_rope / ggml_graph_compute_thread"


def summary_job(source="/nonexistent/ggml", **more):
    """One target's job as fuzz.py writes it (the fields the reports read, and some they do not): a new crash in two
    inputs, a known fixed bug crashing again, an input that did not crash on replay, one without a report, the same
    upstream-open finding twice, and an upstream-open leak at exit."""
    a = "/w/fuzz-out/ggml_graph_topology/artifacts/"
    job = {"target": "ggml_graph_topology", "lane": "fuzz", "execs": 4200, "exec_s": 70, "crashes": 5,
           "interrupted": False, "not_replayed": [], "fork": False, "log": "/w/fuzz-out/ggml_graph_topology/fuzz.log",
           "crash_artifacts": [
               {"artifact": a + "crash-2", "signature": NEW_SIG, "short": "heap-buffer-overflow in rope_f32"},
               {"artifact": a + "crash-1", "signature": NEW_SIG, "short": "heap-buffer-overflow in rope_f32"},
               {"artifact": a + "crash-k", "signature": "assert | ggml_fixed_thing",
                "short": "assert in ggml_fixed_thing", "bug": "some-fixed-bug"},
               {"artifact": a + "crash-c", "signature": "(did not reproduce on replay)", "replay": "clean"},
               {"artifact": a + "crash-s", "signature": "(exit 1 on replay without a parsable report; see the log)",
                "replay": "no-report"}],
           "upstream_open_artifacts": [
               {"artifact": a + "crash-u2", "signature": OPEN_SIG, "short": "assert in ggml_gallocr_init_tensor",
                "bug": "ggml-gallocr-view-node-owned-record"},
               {"artifact": a + "crash-u1", "signature": OPEN_SIG, "short": "assert in ggml_gallocr_init_tensor",
                "bug": "ggml-gallocr-view-node-owned-record"}],
           "leak_at_exit": {"signature": "direct-leak | ggml_backend_alloc_ctx_tensors", "bug": "a-leak",
                            "short": "direct-leak in ggml_backend_alloc_ctx_tensors", "upstream_open": True,
                            "log": "/w/fuzz-out/ggml_graph_topology/fuzz.log"},
           "guards": {"inputs": 4200}, "artifact_groups": [],
           "upstream": {"ggml": {"version": "0.25.1", "source": source, "pinned": False,
                                 "targets": ["ggml_graph_topology"]}}}
    job.update(more)
    return job


ALLOC_C = """#include "ggml-alloc.h"

static void ggml_gallocr_init_tensor(ggml_gallocr_t galloc, struct ggml_tensor * tensor,
                                     struct tensor_alloc * tensor_alloc);

static void ggml_gallocr_init_tensor(ggml_gallocr_t galloc, struct ggml_tensor * tensor,
                                     struct tensor_alloc * tensor_alloc) {
    ggml_gallocr_init_tensor_more(galloc);
}
"""
OPS_CPP = """void ggml_compute_forward_rope(
        const ggml_compute_params * params,
        ggml_tensor * dst) {
}
"""


class Summaries(unittest.TestCase):
    """SARIF, Markdown and JSON from a fuzz summary (no binaries needed)."""

    def setUp(self):
        sys.path.insert(0, str(ROOT / "cli"))
        from lifeline import report
        self.report = report
        self.tmp = tempfile.TemporaryDirectory()
        # A caller's checkout (llama.cpp-shaped: ggml/ inside) with a small ggml tree.
        self.checkout = Path(self.tmp.name) / "llama cpp"
        self.tree = self.checkout / "ggml"
        (self.tree / "src" / "ggml-cpu").mkdir(parents=True)
        (self.tree / "CMakeLists.txt").write_text("project(ggml)\n")
        (self.tree / "src" / "ggml-alloc.c").write_text(ALLOC_C)
        (self.tree / "src" / "ggml-cpu" / "ops.cpp").write_text(OPS_CPP)

    def tearDown(self):
        self.tmp.cleanup()

    def sarif(self, jobs, root=None):
        doc = self.report.sarif_from_jobs(self.report.jobs_from_json(jobs), root or self.checkout)
        json.dumps(doc)
        self.assertEqual(doc["version"], "2.1.0")
        return doc["runs"][0]

    @staticmethod
    def place(result):
        loc = result["locations"][0]["physicalLocation"]
        return loc["artifactLocation"]["uri"], loc["region"]["startLine"]

    def test_one_result_per_signature_errors_for_what_fails_the_job_notes_for_upstream_open(self):
        run = self.sarif([summary_job(str(self.tree))])
        got = [(r["level"], r["ruleId"], r["properties"]["status"], len(r["properties"]["artifacts"]))
               for r in run["results"]]
        self.assertEqual(got, [
            ("error", "lifeline/heap-buffer-overflow", "new", 2),
            ("error", "lifeline/assert", "known", 1),
            ("error", "lifeline/no-report", "no-report", 1),
            ("error", "lifeline/did-not-reproduce", "did-not-reproduce", 1),
            ("note", "lifeline/assert", "upstream-open", 2),
            ("note", "lifeline/direct-leak", "upstream-open", 0)])
        rules = [r["id"] for r in run["tool"]["driver"]["rules"]]
        self.assertEqual(sorted(rules), sorted(set(rules)))
        self.assertTrue(all(r["ruleId"] in rules for r in run["results"]))
        self.assertEqual(run["invocations"], [{"executionSuccessful": True}])
        first = run["results"][0]
        self.assertEqual(first["partialFingerprints"]["crashState"], NEW_SIG)
        self.assertIn("new crash in ggml_graph_topology (2 input(s), e.g. crash-1)", first["message"]["text"])
        self.assertIn("[ggml 0.25.1]", first["message"]["text"])
        self.assertIn("known upstream-open finding ggml-gallocr-view-node-owned-record",
                      run["results"][4]["message"]["text"])
        self.assertIn("a leak at the exit of the ggml_graph_topology job", run["results"][5]["message"]["text"])
        self.assertEqual(run["properties"]["ggml"][0]["version"], "0.25.1")

    def test_locations_at_the_first_function_of_the_state_that_the_tree_defines(self):
        run = self.sarif([summary_job(str(self.tree))])
        places = {r["partialFingerprints"]["crashState"]: self.place(r) for r in run["results"]}
        # rope_f32 is defined nowhere: the next frame is; the declaration before a definition is passed over.
        self.assertEqual(places[NEW_SIG], ("ggml/src/ggml-cpu/ops.cpp", 1))
        self.assertEqual(places[OPEN_SIG], ("ggml/src/ggml-alloc.c", 6))
        # No frame defined in the tree: its CMakeLists.txt, so that code scanning takes the result.
        self.assertEqual(places["(did not reproduce on replay)"], ("ggml/CMakeLists.txt", 1))
        self.assertEqual(places["assert | ggml_fixed_thing"], ("ggml/CMakeLists.txt", 1))
        for r in run["results"]:
            self.assertEqual(r["locations"][0]["physicalLocation"]["artifactLocation"]["uriBaseId"], "%SRCROOT%")

    def test_a_ggml_tree_reached_through_a_link_in_the_checkout_is_named_through_it(self):
        other = Path(self.tmp.name) / "caller"
        other.mkdir()
        (other / "ggml").symlink_to(self.tree, target_is_directory=True)
        run = self.sarif([summary_job(str(self.tree))], root=other)
        self.assertEqual(self.place(run["results"][0]), ("ggml/src/ggml-cpu/ops.cpp", 1))
        # A checkout that does not hold the tree: absolute paths, which say where the file was.
        elsewhere = Path(self.tmp.name) / "elsewhere"
        elsewhere.mkdir()
        run = self.sarif([summary_job(str(self.tree))], root=elsewhere)
        self.assertEqual(self.place(run["results"][0])[0], str(self.tree.resolve() / "src" / "ggml-cpu" / "ops.cpp"))

    def test_a_target_without_upstream_code_is_shown_at_its_source(self):
        job = summary_job(target="alloc_graph_topology")
        del job["upstream"]
        run = self.sarif([job], root=ROOT)
        self.assertEqual({self.place(r) for r in run["results"]}, {("targets/alloc_graph_topology.cc", 1)})

    def test_a_job_that_did_not_finish_makes_the_invocation_unsuccessful(self):
        interrupted = summary_job(interrupted=True, crash_artifacts=[], upstream_open_artifacts=[], crashes=0,
                                  not_replayed=["/w/a/crash-x", "/w/a/crash-y"])
        del interrupted["leak_at_exit"]
        idle = summary_job(target="ggml_vulkan_graph_topology", execs=0, crash_artifacts=[],
                           upstream_open_artifacts=[], crashes=0)
        early = summary_job(target="t3", ended_early=True, crash_artifacts=[], crashes=0)
        run = self.sarif([interrupted, idle, early])
        self.assertFalse(run["invocations"][0]["executionSuccessful"])
        texts = [n["message"]["text"] for n in run["invocations"][0]["toolExecutionNotifications"]]
        self.assertEqual(len(texts), 3, texts)
        self.assertIn("ggml_graph_topology: interrupted; 2 artifact(s) not replayed", texts[0])
        self.assertIn("ggml_vulkan_graph_topology: ran no inputs", texts[1])
        self.assertIn("t3: ended before the time asked", texts[2])
        # The not-replayed artifacts are no results: nothing is known of them.
        self.assertEqual([r["properties"]["status"] for r in run["results"]], ["upstream-open"] * 3)
        md = self.report.markdown_from_jobs(self.report.jobs_from_json([interrupted, idle, early]))
        self.assertIn("| ggml_graph_topology | 4200 | 0 | 0 | interrupted; 2 artifact(s) not replayed", md)
        self.assertIn("not a finished run: ggml_graph_topology, ggml_vulkan_graph_topology, t3.", md)

    def test_crashes_counted_beyond_those_listed_are_an_error(self):
        """An AFL++ job counts crashes and replays none: the report must not pass what the job failed."""
        afl = {"target": "interop_string_handoff", "engine": "afl", "execs": 900, "crashes": 2,
               "new_artifacts": ["/w/afl/default/crashes/id:000000"], "interrupted": False}
        run = self.sarif([afl])
        self.assertEqual([(r["level"], r["ruleId"]) for r in run["results"]], [("error", "lifeline/not-replayed")])
        self.assertIn("2 crash(es) counted by the job and not replayed", run["results"][0]["message"]["text"])

    def test_fields_the_reports_do_not_read_are_left_alone(self):
        """summary.json gains fields with fuzz.py; a report never refuses one it does not read."""
        job = summary_job(stopped_early={"at_s": 1.5}, some_new_field=[1, {"x": None}])
        job["crash_artifacts"][0]["extra"] = 3
        job["upstream"]["ggml"]["new"] = {}
        self.assertEqual(len(self.sarif([job])["results"]), 6)

    def test_markdown_and_json(self):
        jobs = self.report.jobs_from_json([summary_job(str(self.tree))])
        md = self.report.markdown_from_jobs(jobs)
        self.assertIn("| ggml_graph_topology | 4200 | 4 | 2 | finished |", md)
        # A signature's `|` would end its table cell.
        self.assertIn("| ggml_graph_topology | new | `heap-buffer-overflow \\| rope_f32 / ggml_compute_forward_rope / "
                      "ggml_graph_compute_thread` | 2, e.g. `crash-1` |", md)
        self.assertIn("| upstream-open a-leak | `direct-leak \\| ggml_backend_alloc_ctx_tensors` | "
                      "leak at exit (no input) |", md)
        self.assertIn("1 job(s): 4 finding(s) that fail the job, 2 known upstream-open (not counted).", md)
        doc = json.loads(json.dumps([j.to_json() for j in jobs]))
        self.assertEqual([(f["status"], f["level"]) for f in doc[0]["findings"]][:1], [("new", "error")])
        self.assertIsNone(doc[0]["problem"])

    def test_the_cli_renders_a_summary_in_each_format(self):
        f = Path(self.tmp.name) / "summary.json"
        f.write_text(json.dumps([summary_job(str(self.tree))]))
        rc, out, err = run_apart(CLI + ["report", "--summary", f, "--format", "sarif", "--source-root", self.checkout])
        self.assertEqual(rc, 0, err)
        self.assertEqual(self.place(json.loads(out)["runs"][0]["results"][0]), ("ggml/src/ggml-cpu/ops.cpp", 1))
        for fmt in ("json", "markdown"):
            rc, out, err = run_apart(CLI + ["report", "--summary", f, "--format", fmt])
            self.assertEqual((rc, err), (0, ""))
        for args, text in ((["--triage", f, "--summary", f], "argument --summary: not allowed with argument --triage"),
                           ([], "one of the arguments --triage --summary is required"),
                           (["--summary", f, "--source-root", f], f"--source-root '{f}' is not a directory")):
            with self.subTest(args=args):
                rc, out, err = run_apart(CLI + ["report", *args])
                self.assertEqual((rc, out), (2, ""), err)
                self.assertEqual(len(err.strip().splitlines()), 1, err)
                self.assertIn(text, err)


class SummaryWrongShapes(unittest.TestCase):
    def setUp(self):
        sys.path.insert(0, str(ROOT / "cli"))
        from lifeline import report
        self.report = report
        self.tmp = tempfile.TemporaryDirectory()
        self.file = Path(self.tmp.name) / "summary.json"

    def tearDown(self):
        self.tmp.cleanup()

    def test_a_malformed_summary_is_one_line_naming_the_field_and_exit_2(self):
        def job(**edit):
            j = copy.deepcopy(summary_job())
            for key, value in edit.items():
                if value is None:
                    del j[key]
                else:
                    j[key] = value
            return j
        entry = summary_job()["crash_artifacts"][0]
        opened = summary_job()["upstream_open_artifacts"][0]
        cases = [({"jobs": []}, "the top level must be a list of jobs, one per target"),
                 ([1], "job 0 must be an object"),
                 ([job(), job(target=None)], "job 1: missing 'target'"),
                 ([job(target=3)], "job 0: 'target' must be a string"),
                 ([job(execs="many")], "job 0: 'execs' must be a whole number"),
                 ([job(execs=True)], "job 0: 'execs' must be a whole number"),
                 ([job(interrupted="yes")], "job 0: 'interrupted' must be true or false"),
                 ([job(crash_artifacts="crash-1")], "job 0: 'crash_artifacts' must be a list"),
                 ([job(crash_artifacts=["crash-1"])], "job 0: crash_artifacts[0] must be an object"),
                 ([job(crash_artifacts=[dict(entry, signature=None)])],
                  "job 0: crash_artifacts[0]: 'signature' must be a string"),
                 ([job(crash_artifacts=[{"artifact": "a", "signature": "s"}])],
                  "job 0: crash_artifacts[0]: missing 'short' (or 'replay', for an artifact replayed without a "
                  "report)"),
                 ([job(crash_artifacts=[{"artifact": "a", "signature": "s", "replay": "maybe"}])],
                  "job 0: crash_artifacts[0]: 'replay' must be \"clean\" or \"no-report\""),
                 ([job(upstream_open_artifacts=[opened, {k: v for k, v in opened.items() if k != "bug"}])],
                  "job 0: upstream_open_artifacts[1]: missing 'bug'"),
                 ([job(leak_at_exit={"signature": 3})], "job 0: leak_at_exit: 'signature' must be a string"),
                 ([job(leak_at_exit=[])], "job 0: 'leak_at_exit' must be an object"),
                 ([job(not_replayed=["a", 1])], "job 0: not_replayed[1] must be a string"),
                 ([job(upstream={"ggml": {"version": "0.25.1"}})], "job 0: upstream: ggml: missing 'source'"),
                 ([job(upstream={"ggml": "0.25.1"})], "job 0: upstream: 'ggml' must be an object"),
                 ("[" * 100000, "maximum recursion depth exceeded"),
                 ("[{", "Expecting property name")]
        for i, (doc, text) in enumerate(cases):
            fmt = ("sarif", "markdown", "json")[i % 3]
            with self.subTest(text=text, fmt=fmt):
                self.file.write_text(doc if isinstance(doc, str) else json.dumps(doc))
                rc, out, err = run_apart(CLI + ["report", "--summary", self.file, "--format", fmt])
                self.assertEqual((rc, out), (2, ""), err)
                self.assertEqual(len(err.strip().splitlines()), 1, err)
                self.assertIn(f"lifeline report: '{self.file}' is not a fuzz summary (", err)
                self.assertIn(text, err)

    def test_any_json_type_at_any_level_renders_or_is_refused(self):
        report = self.report
        assert_each_renders_or_is_refused(
            self, [summary_job()], report.jobs_from_json,
            lambda jobs: [report.sarif_from_jobs(jobs, ROOT), report.markdown_from_jobs(jobs),
                          [j.to_json() for j in jobs]],
            300, 300)


if __name__ == "__main__":
    unittest.main()
