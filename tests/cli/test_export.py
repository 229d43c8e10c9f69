"""`lifeline export` and its internal verbs export-plan, export-source and export-check, on a scratch project whose
target is a script that decodes inputs into a fixed graph program (`--program decode`) and whose exported programs
are scripts (its folder holds blanks and shell characters); the C comes from the real exporter
(cli/lifeline/exporters/ggml_c.py). Where the asan lane built the real targets, real exports of checked-in
findings."""
import json
import os
import shutil
import tempfile
import unittest
from pathlib import Path

from scratch_project import write_bug
from support import TRIAGE, BUILD, PY, ROOT, run, run_apart

# A reduced program of the graph format: a leaf, its negation, sealed, placed twice by allocator 0.
PROGRAM = {"format": "graph", "allocators": [{"buffers": [32], "threads": 1}, {"buffers": [32], "threads": 1}],
           "ops": [{"id": 0, "op": "leaf", "graph": "#2", "type": "f32", "ne": [4, 2], "input": True, "preallocated": False},
                   {"id": 1, "op": "unary", "graph": "#2", "fn": "neg", "src": "#0", "inplace": False, "cpu": False},
                   {"id": 2, "op": "seal", "model": {"output": "#1"}},
                   {"id": 3, "op": "alloc+compute", "graph": "#2", "allocator": 0}]}

# The fake target: `--program decode INPUT` prints PROGRAM (an input reading "refused" makes it fail, as a target
# whose codec cannot read it would), recording its environment beside itself.
FAKE_TARGET = r"""#!/usr/bin/python3
import json, os, sys
json.dump(dict(os.environ), open(os.path.realpath(__file__) + '.env', 'w'))
if sys.argv[1:2] == ["--program"]:
    if open(sys.argv[3]).read() == "refused":
        sys.stderr.write("replay: cannot decode\n")
        sys.exit(2)
    print(%r)
    sys.exit(0)
sys.exit(1)
""" % json.dumps(PROGRAM)

ASAN_HBO = """==7==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x602000000008 at pc 0x1 bp 0x2 sp 0x3
READ of size 8 at 0x602000000008 thread T0
    #0 0x55 in ggml_gallocr_init_tensor /g/src/ggml-alloc.c:972:5
    #1 0x56 in ggml_gallocr_alloc_graph /g/src/ggml-alloc.c:1081:9
    #2 0x57 in main /x/repro.c:177:10
"""
ASSERT_OWN = """repro: repro.c:31: void same_outputs(const char *, struct ggml_tensor *, struct ggml_tensor *): Assertion `a == b && "an output differs from the same graph placed by a new gallocr"' failed.
==8==ERROR: AddressSanitizer: ABRT on unknown address 0x000000003e10 (pc 0x7f bp 0x7f sp 0x7f T0)
    #0 0x7f in __pthread_kill_implementation nptl/pthread_kill.c:44:76
    #1 0x7f in raise signal/../sysdeps/posix/raise.c:26:13
    #2 0x7f in abort stdlib/abort.c:79:7
    #3 0x7f in __assert_fail assert/assert.c:103:3
    #4 0x55 in same_outputs repro.c:31:5
    #5 0x55 in main repro.c:70:5
"""

# A program (exported program) that prints `report` to stderr and exits 1, or exits 0 when report is empty; it
# records its environment beside itself.
def program(report: str) -> str:
    return ("#!/usr/bin/python3\nimport json, os, sys\n"
            "json.dump(dict(os.environ), open(os.path.realpath(__file__) + '.env', 'w'))\n"
            f"sys.stderr.write({report!r})\nsys.exit(1 if {report!r} else 0)\n")


HBO_SIG = {"type": "heap-buffer-overflow", "frame": "ggml_gallocr_init_tensor"}
CHECK_SIG = {"type": "lifeline-check", "frame": "ggml_gallocr_alloc_graph [kept plan", "message": "no-overlap oracle"}
OWN_SIG = {"type": "assert", "frame": "same_outputs", "message": "new gallocr"}
REPORT = {"title": "ggml-alloc: a title in upstream's words", "contract": "ggml-alloc.h:70: \"the contract\"",
          "expected": "it places the graph", "fix": "compare the records"}


class Export(unittest.TestCase):
    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp())
        self.root = self.tmp / "a root $(x) 'q'"
        shutil.copytree(ROOT / "cli", self.root / "cli", ignore=shutil.ignore_patterns("__pycache__"))
        (self.root / "core" / "suppressions").mkdir(parents=True)
        (self.root / "core" / "bug_list.def").write_text('LIFELINE_BUG(kFakeFixedBug, "fake-fixed-bug")\n')
        (self.root / "core" / "suppressions" / "ubsan-upstream.supp").write_text("pointer-overflow:ggml_graph_nbytes\n")
        self.target = self.install(self.root / "build" / "asan" / "targets" / "ggml_graph_topology", FAKE_TARGET)
        self.bug = write_bug(self.root / "repro" / "ggml-fake-finding", {
            "status": "upstream-open", "triage": TRIAGE, "target": "ggml_graph_topology",
            "prior_art": [{"url": "https://github.com/ggml-org/llama.cpp/issues/1", "relation": "related",
                           "title": "an older thread", "state": "open", "opened": "2026-01-01", "notes": "nodes only"}],
            "notes": "the mechanism, in words", "report": REPORT,
            "reproducers": [{"input": "first input", "program": "g0: a leaf", "expect": {"asan": HBO_SIG}},
                            {"input": "oracle-only", "expect": {"asan": CHECK_SIG}, "export": OWN_SIG,
                             "env": {"UBSAN_OPTIONS": "suppressions=", "LIFELINE_GGML_POOL_COMPUTES": "5"}}]},
            {"first input": "bytes one", "oracle-only": "bytes two"})
        write_bug(self.root / "repro" / "fake-fixed-bug", {
            "target": "ggml_graph_topology", "reproducers": [{"input": "in", "expect": {"asan": HBO_SIG}}]}, {"in": "x"})
        write_bug(self.root / "repro" / "other-target-finding", {
            "status": "upstream-open", "triage": TRIAGE, "target": "numpy_capsules",
            "reproducers": [{"input": "in", "expect": {"asan": HBO_SIG}}]}, {"in": "x"})

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def install(self, path: Path, text: str) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        path.chmod(0o755)
        return path

    def cli(self, *args):
        return run_apart([PY, self.root / "cli" / "lifeline_main.py", *args], cwd=self.tmp)

    def usage_error(self, *args) -> str:
        rc, out, err = self.cli(*args)
        self.assertEqual(rc, 2, out + err)
        self.assertEqual(len(err.strip().splitlines()), 1, err)
        self.assertNotIn("Traceback", err)
        return err.strip()

    # ---- lifeline export ------------------------------------------------------------------------------

    def test_writes_one_short_file_per_input_and_a_report(self):
        out = self.tmp / "out dir $HOME"
        rc, stdout, err = self.cli("export", "ggml-fake-finding", "--out", out)
        self.assertEqual(rc, 0, stdout + err)
        self.assertEqual(sorted(p.name for p in out.iterdir()), ["first input.c", "oracle-only.c", "report.md"])
        c = (out / "first input.c").read_text()
        self.assertIn("struct ggml_tensor * neg_x = output(gf1, ggml_neg(ctx1, x));", c)  # roles, not harness ids
        self.assertNotIn("g0.t", c)
        self.assertIn('fprintf(stderr, "contract: %s\\nexpected: %s\\n", "ggml-alloc.h:70: \\"the contract\\"", '
                      '"it places the graph");', c)
        self.assertIn("ggml_gallocr_alloc_graph(galloc, gf1)", c)
        self.assertIn(f"wrote {out / 'first input.c'} (", stdout)
        report = (out / "report.md").read_text()
        self.assertTrue(report.startswith("# ggml-alloc: a title in upstream's words\n"), report)
        self.assertIn("- **Version**: ggml-org/llama.cpp at", report)
        self.assertIn("## The contract\n\n> ggml-alloc.h:70: \"the contract\"\n", report)
        self.assertIn("## What happens\n\nthe mechanism, in words\n", report)
        self.assertIn("## Fix direction\n\ncompare the records\n", report)
        self.assertIn("## Prior art and references\n\n- https://github.com/ggml-org/llama.cpp/issues/1 "
                      "\"an older thread\" (related, open, opened 2026-01-01): nodes only\n", report)
        self.assertIn(f"\nSearched ({TRIAGE['date']}):\n- {TRIAGE['searched'][0]}\n", report)
        self.assertIn("Expected: it places the graph", report)
        # No exported program is built here: nothing was run, and the report says what it must give.
        self.assertIn("Actual: fails with `heap-buffer-overflow` in `ggml_gallocr_init_tensor` (not run here", report)
        self.assertIn("-c 'first input.c' -I", report)
        self.assertIn(" -o 'first input'\n", report)
        self.assertIn(f"wrote {out / 'report.md'}", stdout)

    def test_the_affects_line_names_the_versions_of_the_committed_matrix(self):
        """`lifeline matrix`'s committed results (bench/results/matrix/matrix.json) fill the report's Affects line:
        where the finding reproduces, where not, where it cannot run."""
        out = self.tmp / "out"
        rc, stdout, err = self.cli("export", "ggml-fake-finding", "--out", out)
        self.assertEqual(rc, 0, stdout + err)
        self.assertNotIn("by version", (out / "report.md").read_text())  # no matrix: nothing said
        m = self.root / "bench" / "results" / "matrix"
        m.mkdir(parents=True)
        row = {"date": "2025-09-09", "ggml": "unversioned", "release": "llama.cpp@b6431"}
        (m / "matrix.json").write_text(json.dumps({"date": "2026-12-07", "versions": [
            dict(row, name="a", findings={"ggml-fake-finding": {"result": "reproduces"}}),
            dict(row, name="b", release="llama.cpp@v0.5.0", ggml="0.25.1", date="2026-09-28",
                 findings={"ggml-fake-finding": {"result": "cannot", "why": "this ggml has no f"}})]}))
        rc, stdout, err = self.cli("export", "ggml-fake-finding", "--out", out)
        self.assertEqual(rc, 0, stdout + err)
        self.assertIn("by version, `lifeline matrix` (2026-12-07, bench/results/matrix/matrix.json): reproduces on "
                      "llama.cpp@b6431 (ggml unversioned, 2025-09-09); cannot run on llama.cpp@v0.5.0 (ggml 0.25.1, "
                      "2026-09-28).\n", (out / "report.md").read_text())

    def test_the_program_is_decoded_with_the_findings_guard_off_and_its_env(self):
        rc, stdout, err = self.cli("export", "ggml-fake-finding", "--out", self.tmp / "o")
        self.assertEqual(rc, 0, stdout + err)
        env = json.loads(Path(str(self.target) + ".env").read_text())
        self.assertEqual(env.get("LIFELINE_GGML_POOL_COMPUTES"), "5")  # the last decode was oracle-only's

    def test_a_reproducers_pool_computes_become_computes_in_the_c(self):
        self.cli("export", "ggml-fake-finding", "--out", self.tmp / "o")
        c = (self.tmp / "o" / "oracle-only.c").read_text()
        self.assertIn("for (int i = 0; i < 5; ++i) ggml_backend_graph_compute(cpu, gf1);", c)
        self.assertNotIn("LIFELINE_", c)

    def test_the_run_line_shows_no_lifeline_variable(self):
        from lifeline import export, repro
        rep = repro.Reproducer(Path("in"), {}, {"LIFELINE_GGML_POOL_COMPUTES": "32767", "UBSAN_OPTIONS": "suppressions="})
        shown = export.shown_env(rep, export.EXPORTERS["ggml_graph_topology"])
        self.assertTrue(shown.startswith("ASAN_OPTIONS="), shown)
        self.assertNotIn("LIFELINE_", shown)
        self.assertEqual(shown.count("UBSAN_OPTIONS="), 1, "its UBSan options are appended to run_env's")
        self.assertIn(":suppressions= ", shown)
        self.assertNotIn("LIFELINE_GGML_POOL_COMPUTES", export.run_env(rep))

    def test_the_stack_comes_from_the_built_export_when_it_is_the_same_file(self):
        out = self.tmp / "out"
        self.cli("export", "ggml-fake-finding", "--out", out)
        built = self.root / "build" / "asan" / "exports" / "ggml-fake-finding"
        self.install(built / "oracle-only", program(ASSERT_OWN))
        shutil.copy(out / "oracle-only.c", built / "oracle-only.c")
        rc, stdout, err = self.cli("export", "ggml-fake-finding", "--out", out)
        self.assertEqual(rc, 0, stdout + err)
        report = (out / "report.md").read_text()
        self.assertIn("Actual (the exported program as the asan lane built it): `assert | same_outputs`", report)
        env = json.loads((built / "oracle-only.env").read_text())
        self.assertIn("handle_abort=1", env["ASAN_OPTIONS"])
        self.assertEqual(env["GGML_NO_BACKTRACE"], "1")
        # the suppression file first, the reproducer's own UBSan options after it (they win)
        self.assertTrue(env["UBSAN_OPTIONS"].endswith(":suppressions="), env["UBSAN_OPTIONS"])
        self.assertIn('suppressions="', env["UBSAN_OPTIONS"], "a path with blanks is quoted")
        # a stale build (another text) is not used
        (built / "oracle-only.c").write_text("older\n")
        rc, stdout, err = self.cli("export", "ggml-fake-finding", "--out", out)
        self.assertNotIn("as the asan lane built it", (out / "report.md").read_text())

    def test_default_out_is_export_out_of_the_bug(self):
        rc, stdout, err = self.cli("export", "ggml-fake-finding")
        self.assertEqual(rc, 0, stdout + err)
        self.assertTrue((self.root / "export-out" / "ggml-fake-finding" / "report.md").is_file())

    def test_unknown_bug_id(self):
        err = self.usage_error("export", "ggml-no-such-finding")
        self.assertIn("lifeline export: unknown bug id 'ggml-no-such-finding'", err)
        self.assertIn("findings it exports: ggml-fake-finding, other-target-finding", err)
        self.assertIn("unknown bug id '../repro'", self.usage_error("export", "../repro"))

    def test_a_fixed_bug_is_not_exported(self):
        self.assertIn("bug 'fake-fixed-bug' has status 'fixed'", self.usage_error("export", "fake-fixed-bug"))

    def test_a_target_without_exporter(self):
        self.assertIn("target 'numpy_capsules' of bug 'other-target-finding' has no exporter (targets with one: "
                      "ggml_graph_topology, ggml_vulkan_graph_topology, llama_memory_differential, torch_capsule_lifecycle, "
                      "whisper_string_handoff)",
                      self.usage_error("export", "other-target-finding"))

    def test_configs_of_a_vulkan_finding_are_refused_before_anything_is_built(self):
        self.install(self.root / "build" / "asan" / "targets" / "ggml_vulkan_graph_topology", FAKE_TARGET)
        write_bug(self.root / "repro" / "ggml-vk-fake-finding", {
            "status": "upstream-open", "triage": TRIAGE, "target": "ggml_vulkan_graph_topology", "report": REPORT,
            "reproducers": [{"input": "in", "expect": {"asan": HBO_SIG}}]}, {"in": "x"})
        err = self.usage_error("export", "ggml-vk-fake-finding", "--configs")
        self.assertIn("--configs builds ggml's CPU backend only", err)
        self.assertIn("repro.ggml-vk-fake-finding.asan.export checks", err)
        self.assertFalse((self.root / "build" / "export-configs").exists())

    def test_target_not_built_says_how_to_build_it(self):
        self.target.unlink()
        err = self.usage_error("export", "ggml-fake-finding")
        self.assertIn(f"{self.target} is not built; build it with `cmake --preset asan && "
                      "cmake --build build/asan --target ggml_graph_topology`", err)

    def test_bad_out(self):
        f = self.tmp / "a file"
        f.write_text("")
        self.assertIn(f"--out '{f}' is not a directory", self.usage_error("export", "ggml-fake-finding", "--out", f))
        self.assertIn("cannot be created", self.usage_error("export", "ggml-fake-finding", "--out", f / "sub"))

    def test_an_invalid_bug_json_is_named(self):
        (self.bug / "bug.json").write_text("{")
        self.assertIn("invalid JSON", self.usage_error("export", "ggml-fake-finding"))

    def test_an_input_the_target_cannot_decode_is_named(self):
        (self.bug / "first input").write_text("refused")
        err = self.usage_error("export", "ggml-fake-finding", "--out", self.tmp / "o")
        self.assertIn("could not decode", err)
        self.assertIn("first input", err)

    def test_export_source_writes_one_file_for_the_build(self):
        out = self.tmp / "one.c"
        rc, stdout, err = self.cli("export-source", "--repro-dir", self.bug, "--input", "first input", "--out", out)
        self.assertEqual((rc, err), (0, ""))
        self.assertIn("int main(void) {", out.read_text())
        self.assertIn("has no exported input 'nope'",
                      self.usage_error("export-source", "--repro-dir", self.bug, "--input", "nope", "--out", out))

    # ---- export-plan, export-check ------------------------------------------------------------------------

    def test_plan_lists_the_upstream_open_bugs_of_targets_with_an_exporter(self):
        rc, out, err = self.cli("export-plan", "--lane", "asan", "--repro-root", self.root / "repro")
        self.assertEqual((rc, err), (0, ""))
        # "first input" holds a blank, which CMake cannot carry: left out here, named by export-check
        self.assertEqual(out, "export|ggml-fake-finding|ggml_graph_topology|c|oracle-only\n")
        rc, out, err = self.cli("export-plan", "--lane", "fuzz", "--repro-root", self.root / "repro")
        self.assertEqual((rc, out), (0, ""))

    def check(self, exe_dir, *extra):
        rc, out, err = self.cli("export-check", "--repro-dir", self.bug, "--lane", "asan", "--exe-dir", exe_dir, *extra)
        return rc, out + err

    def test_check_passes_when_each_export_fails_with_its_signature(self):
        d = self.tmp / "exes"
        self.install(d / "first input", program(ASAN_HBO))
        self.install(d / "oracle-only", program(ASSERT_OWN))
        rc, out = self.check(d)
        self.assertEqual(rc, 0, out)
        self.assertIn("PASS first input: heap-buffer-overflow | ggml_gallocr_init_tensor", out)
        self.assertIn("PASS oracle-only: assert | same_outputs", out)

    def test_check_fails_an_export_that_runs_clean_or_fails_otherwise(self):
        d = self.tmp / "exes"
        self.install(d / "first input", program(""))
        self.install(d / "oracle-only", program(ASAN_HBO))
        rc, out = self.check(d)
        self.assertEqual(rc, 1, out)
        self.assertIn("FAIL first input: the exported program ran clean", out)
        self.assertIn("FAIL oracle-only: the exported program must give", out)
        self.assertIn("crash type is 'heap-buffer-overflow', expected 'assert'", out)

    def test_check_on_another_source_skips_an_export_that_runs_clean(self):
        d = self.tmp / "exes"
        self.install(d / "first input", program(""))
        self.install(d / "oracle-only", program(ASSERT_OWN))
        rc, out = self.check(d, "--other-source", "ggml 0.25.1 from /my ggml")
        self.assertEqual(rc, 77, out)
        self.assertIn("NOT REPRODUCED first input: the exported program ran clean on ggml 0.25.1 from /my ggml", out)
        self.assertIn("SKIPPED: not reproduced on this source: fixed? 1 of 2 input(s) ran clean on ggml 0.25.1 "
                      "from /my ggml (first input)", out)
        self.install(d / "oracle-only", program(ASAN_HBO))  # another crash there is still a failure
        rc, out = self.check(d, "--other-source", "ggml 0.25.1 from /my ggml")
        self.assertEqual(rc, 1, out)

    def test_check_fails_a_missing_program_and_an_oracle_signature_without_export(self):
        doc = json.loads((self.bug / "bug.json").read_text())
        del doc["reproducers"][1]["export"]
        (self.bug / "bug.json").write_text(json.dumps(doc))
        rc, out = self.check(self.tmp / "nothing built")
        self.assertEqual(rc, 1, out)
        self.assertIn("FAIL first input: the exported program", out)
        self.assertIn("is not built (only inputs named with letters, digits, . _ - are exported)", out)
        self.assertIn("FAIL oracle-only: its asan signature is lifeline's own oracle (lifeline-check)", out)

    def test_bug_json_export_signature_is_validated(self):
        doc = json.loads((self.bug / "bug.json").read_text())
        for bad, why in (("x", "'export' must be an object"), ({"frame": "f"}, "export: missing 'type'"),
                         ({"type": "assert"}, "export: needs 'frame'"), ({"type": "", "frame": "f"}, "'type' must be"),
                         ({"type": "a", "frame": "f", "fram": "g"}, "unknown key 'fram'")):
            with self.subTest(export=bad):
                doc["reproducers"][1]["export"] = bad
                (self.bug / "bug.json").write_text(json.dumps(doc))
                rc, out = self.check(self.tmp)
                self.assertEqual(rc, 1, out)
                self.assertIn("reproducers[1]: ", out)
                self.assertIn(why, out)


@unittest.skipUnless((BUILD / "targets" / "ggml_graph_topology").is_file(),
                     "the asan lane builds ggml_graph_topology with upstream ggml")
class GgmlCRowOps(unittest.TestCase):
    """The graph program's model ops (rms_norm, soft_max, mul_mat, transpose, get_rows, rope, set_rows) become ggml's calls,
    named by role."""

    @staticmethod
    def export(leafs, ops):
        """The C of one graph: `leafs` ((type, ne) inputs, ids 0..), then `ops` (ids after them, sources named
        "#<id>"), sealed with the last op as its output and placed once."""
        from lifeline.exporters import ggml_c
        body = [{"id": i, "op": "leaf", "graph": "#G", "type": ty, "ne": ne, "input": True, "preallocated": False}
                for i, (ty, ne) in enumerate(leafs)]
        body += [dict(op, id=len(leafs) + i, graph="#G") for i, op in enumerate(ops)]
        seal = len(body)
        body.append({"id": seal, "op": "seal", "model": {"output": f"#{seal - 1}"}})
        body.append({"id": seal + 1, "op": "alloc+compute", "graph": "#G", "allocator": 0})
        for op in body:
            if op.get("graph") == "#G":
                op["graph"] = f"#{seal}"
        program = {"format": "graph", "allocators": [{"buffers": [32], "threads": 1}, {"buffers": [32], "threads": 1}],
                   "ops": body}
        return ggml_c.generate(program, {"id": "x", "title": "t", "report": {}, "backend": "cpu"})

    def test_mul_mat_multiplies_the_programs_2d_tensors(self):
        c = self.export([("f32", [4, 2]), ("f32", [4, 3])], [{"op": "mul_mat", "src": ["#0", "#1"]}])
        self.assertIn("ggml_tensor * x_x_x2 = output(gf1, ggml_mul_mat(ctx1, x, x2));", c)

    def test_row_ops_become_ggml_rms_norm_and_soft_max(self):
        c = self.export([("f32", [4, 2])], [{"op": "row", "fn": "rms_norm", "src": "#0"},
                                            {"op": "row", "fn": "soft_max", "src": "#1"}])
        self.assertIn("struct ggml_tensor * rms_norm_x = ggml_rms_norm(ctx1, x, 1e-6f);", c)
        self.assertIn("output(gf1, ggml_soft_max(ctx1, rms_norm_x))", c)

    def test_transpose_is_a_permuted_or_transposed_view_made_contiguous(self):
        from lifeline.exporters import ggml_c
        ops = [{"op": "transpose", "src": "#0", "via": "permute"}, {"op": "transpose", "src": "#1", "via": "transpose"}]
        c = self.export([("f32", [4, 2])], ops)
        self.assertIn("struct ggml_tensor * x_T = ggml_cont(ctx1, ggml_permute(ctx1, x, 1, 0, 2, 3));", c)
        self.assertIn("output(gf1, ggml_cont(ctx1, ggml_transpose(ctx1, x_T)))", c)
        ops[0]["via"] = "sideways"
        with self.assertRaisesRegex(ggml_c.Unexportable, "'via' of a transpose is permute or transpose"):
            self.export([("f32", [4, 2])], ops)

    def test_get_rows_reads_an_int32_tensor_with_the_programs_rows(self):
        c = self.export([("f16", [4, 3])], [{"op": "get_rows", "src": "#0", "n": 4, "first": 2, "step": 1}])
        self.assertIn("struct ggml_tensor * rows_of_x_idx = ggml_new_tensor_1d(ctx1, GGML_TYPE_I32, 4);\n"
                      "    ggml_set_input(rows_of_x_idx);", c)
        self.assertIn("output(gf1, ggml_get_rows(ctx1, x, rows_of_x_idx))", c)
        # the rows are set once the graph is placed, as the adapter sets them
        placed = c.index("ggml_gallocr_alloc_graph(")
        self.assertGreater(c.index("ggml_backend_tensor_set(rows_of_x_idx, (const int32_t[]){2, 0, 1, 2}, 0, "
                                   "ggml_nbytes(rows_of_x_idx));"), placed)

    def test_rope_turns_the_program_tensor_as_heads_and_tokens_with_positions_set_once_placed(self):
        from lifeline.exporters import ggml_c
        ops = [{"op": "rope", "src": "#0", "mode": "neox", "n_dims": 4, "heads": 2, "positions": [7, 3]}]
        c = self.export([("f32", [6, 4])], ops)
        self.assertIn("struct ggml_tensor * rope_x_pos = ggml_new_tensor_1d(ctx1, GGML_TYPE_I32, 2);\n"
                      "    ggml_set_input(rope_x_pos);", c)
        self.assertIn("struct ggml_tensor * rope_x_turned = ggml_rope_ext(ctx1, ggml_reshape_3d(ctx1, x, 6, 2, 2), "
                      "rope_x_pos, NULL, 4, GGML_ROPE_TYPE_NEOX, 0, 10000.0f, 1.0f, 0.0f, 1.0f, 0.0f, 0.0f);\n"
                      "    ggml_set_output(rope_x_turned);", c)
        self.assertIn("output(gf1, ggml_reshape_2d(ctx1, rope_x_turned, 6, 4))", c)
        placed = c.index("ggml_gallocr_alloc_graph(")
        self.assertGreater(c.index("ggml_backend_tensor_set(rope_x_pos, (const int32_t[]){7, 10}, 0, "
                                   "ggml_nbytes(rope_x_pos));"), placed)
        ops[0]["mode"] = "sideways"
        with self.assertRaisesRegex(ggml_c.Unexportable, "'mode' of a rope is normal or neox"):
            self.export([("f32", [6, 4])], ops)

    def test_set_rows_writes_into_its_destination_through_an_int32_index_set_once_placed(self):
        c = self.export([("f16", [4, 4]), ("f32", [4, 2])], [{"op": "set_rows", "src": ["#0", "#1"], "first": 3, "step": 3}])
        self.assertIn("struct ggml_tensor * x_set_idx = ggml_new_tensor_1d(ctx1, GGML_TYPE_I32, 2);\n"
                      "    ggml_set_input(x_set_idx);", c)
        self.assertIn("output(gf1, ggml_set_rows(ctx1, x, x2, x_set_idx))", c)
        # rows 3 and (3 + 3) % 4 of the destination, set once the graph is placed
        placed = c.index("ggml_gallocr_alloc_graph(")
        self.assertGreater(c.index("ggml_backend_tensor_set(x_set_idx, (const int32_t[]){3, 2}, 0, "
                                   "ggml_nbytes(x_set_idx));"), placed)


class RealExport(unittest.TestCase):
    def export(self, bug_id, out):
        rc, text = run([ROOT / "lifeline", "export", bug_id, "--out", out])
        self.assertEqual(rc, 0, text)
        return text

    def test_every_ggml_finding_exports_a_short_file_in_ggmls_terms(self):
        from lifeline import export
        out = Path(tempfile.mkdtemp()) / "with blank"
        try:
            for bug_id in ("ggml-gallocr-leaf-records-unchecked", "ggml-gallocr-stale-plan-rewired-edges",
                           "ggml-cpu-threadpool-graph-count-shift", "ggml-cpu-scale-f16-unsupported",
                           "ggml-gallocr-reserve-size-drops-buffers"):
                with self.subTest(bug_id):
                    self.export(bug_id, out / bug_id)
                    doc = json.loads((ROOT / "repro" / bug_id / "bug.json").read_text())
                    # the exported reproducers (the programs report.programs ships beside them are upstream's terms
                    # too, written by hand: a sweep is not a short reproducer)
                    for c in (out / bug_id / f"{r['input']}.c" for r in doc["reproducers"]):
                        text = c.read_text()
                        includes = [line for line in text.splitlines() if line.startswith("#include") and "ggml" in line]
                        self.assertEqual(includes, ['#include "ggml.h"', '#include "ggml-alloc.h"',
                                                    '#include "ggml-backend.h"', '#include "ggml-cpu.h"'])
                        self.assertLessEqual(export.code_lines(text, "C"), 60, c)
                        self.assertNotIn("LIFELINE", text)
                        self.assertNotRegex(text, r"\bg[0-9]+\.t[0-9]+\b")
            self.assertIn("ggml_backend_supports_op", (out / "ggml-cpu-scale-f16-unsupported" / "scale-f16.c").read_text())
            for shipped in ("ggml_cpu_supports_op_sweep.c", "ggml_cpu_supports_op_sweep.expected", "supports-op-sweep.md"):
                self.assertTrue((out / "ggml-cpu-scale-f16-unsupported" / shipped).is_file(), shipped)
            self.assertIn("same_outputs(", next((out / "ggml-gallocr-stale-plan-rewired-edges").glob("*.c")).read_text())
            # A finding whose write past a tensor the program shows without a sanitizer: a canary pass first
            # (check "canary"), then the placement the fuzzer made, where ASan reports.
            self.export("ggml-cpu-conv-2d-dw-f16-overflow", out / "conv")
            conv = (out / "conv" / "f16-input-float-writes.c").read_text()
            self.assertIn("ggml_conv_2d_dw_direct(", conv)
            self.assertIn("GGML_TYPE_F16", conv)
            self.assertLess(conv.index("outside_tensors(ctx1, canary_buf, 1)"), conv.index("ggml_gallocr_alloc_graph("))
            self.assertIn("return 1;", conv.split("if (overwritten) {", 1)[1])
            self.assertIn("ask_supports_op(cpu,", conv)
            measured = (out / "ggml-gallocr-reserve-size-drops-buffers" / "measure-then-place.c").read_text()
            self.assertIn("ggml_gallocr_reserve_n_size(galloc, gf1, NULL, NULL, sizes1);", measured)
            self.assertLess(measured.index("ggml_gallocr_reserve_n_size("), measured.index("ggml_gallocr_alloc_graph("))
        finally:
            shutil.rmtree(out.parent)


if __name__ == "__main__":
    unittest.main()


class WhisperC(unittest.TestCase):
    """The whisper.h exporter writes each whisper_full the binding would make, in program order, with the page's
    audio in a heap block of exactly its samples; refused ops and cancelled jobs make none."""

    PROGRAM = {"format": "handoff", "ops": [
        {"id": 0, "op": "bind", "multilingual": True, "model": {"slot": 0}},
        {"id": 1, "op": "bind", "multilingual": False, "model": {"slot": 1}},
        {"id": 2, "op": "submit-async", "slot": 0, "language": "d\u00e9\"\\", "audio": [0.5, -0.25], "threads": 2,
         "translate": True, "model": {"job_id": 1}},
        {"id": 3, "op": "submit-async", "slot": 1, "language": "fr", "audio": [], "threads": 1, "model": {"job_id": 2}},
        {"id": 4, "op": "cancel", "job": "#3", "model": {}},
        {"id": 5, "op": "submit-sync", "slot": 2, "language": "en", "audio": [1.0], "threads": 1,
         "model": {"expect": "NOT_FOUND"}},
        {"id": 6, "op": "submit-sync", "slot": 1, "language": "ja\u0000xx", "audio": [1.0], "threads": 1, "model": {}},
        {"id": 7, "op": "start", "job": "#2", "model": {}},
    ]}

    def test_calls_in_the_programs_order(self):
        from lifeline.exporters import whisper_c
        c = whisper_c.generate(self.PROGRAM, {"id": "x", "title": "t", "report": {"contract": "c"}})
        calls = [line.strip() for line in c.splitlines() if line.strip().startswith("transcribe(")]
        self.assertEqual(calls, [
            'transcribe(ctx[1], "en", 1, false, clip(1, (const float[]){1.0f}, 100), 100);',
            'transcribe(ctx[0], "d\\351\\"\\\\", 2, true, clip(2, (const float[]){0.5f, -0.25f}, 400), 800);'])
        self.assertIn("refuses it (NOT_FOUND)", c)
        self.assertIn("WHISPER_MODEL_EN", c)
        self.assertIn('fprintf(stderr, "contract: %s\\n", "c");', c)

    def test_other_programs_are_refused(self):
        from lifeline.exporters import whisper_c
        with self.assertRaises(ValueError):
            whisper_c.generate({"format": "graph", "ops": []}, {"id": "x"})
        with self.assertRaises(ValueError):
            whisper_c.generate({"format": "handoff", "ops": [{"id": 0, "op": "join", "job": "#9"}]}, {"id": "x"})
