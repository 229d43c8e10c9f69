"""bug.json validation: every defect is reported with the file and the problem, never a traceback."""
import json
import shutil
import tempfile
import unittest
from pathlib import Path

from lifeline import repro
from support import TRIAGE

ID = "wasm-lang-dangling"  # a fixed bug names a switch of core/bug_list.def
GOOD = {
    "id": ID, "title": "t", "upstream": ["x#1"], "target": "interop_string_handoff",
    "reproducers": [{"input": "in", "expect": {"asan": {"type": "heap-use-after-free", "frame": "F"}}}],
}
DIFF = "--- a/src/ggml-alloc.c\n+++ b/src/ggml-alloc.c\n"


class BugJson(unittest.TestCase):
    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp())
        self.dir = self.tmp / ID
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
        self.assertEqual(bug.id, ID)
        self.assertEqual(bug.reproducers[0].expect["asan"]["type"], "heap-use-after-free")

    def test_missing_file(self):
        self.assertIn("missing", self.error())

    def test_corrupt_json_names_line_and_column(self):
        self.write('{"id": "wasm-lang-dangling",')
        self.assertIn("invalid JSON at line 1", self.error())

    def test_each_missing_key_is_named(self):
        for key in ("id", "title", "upstream", "target", "reproducers"):
            with self.subTest(key=key):
                doc = dict(GOOD)
                del doc[key]
                self.write(doc)
                self.assertIn(f"missing '{key}'", self.error())

    def test_a_fixed_bug_names_a_switch(self):
        d = self.tmp / "no-such-switch"
        d.mkdir()
        (d / "in").write_bytes(b"\x00")
        for status in (None, "fixed"):
            with self.subTest(status=status):
                doc = dict(GOOD, id=d.name, **({"status": status} if status else {}))
                (d / "bug.json").write_text(json.dumps(doc))
                with self.assertRaises(repro.BugJsonError) as cm:
                    repro.load(d)
                self.assertIn("id 'no-such-switch' is no switch in core/bug_list.def", str(cm.exception))
        (d / "bug.json").write_text(json.dumps(dict(GOOD, id=d.name, status="upstream-open", triage=TRIAGE)))
        self.assertEqual(repro.load(d).status, "upstream-open")  # upstream has no fix, so no switch

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

    # ---- status and upstream_variant

    def variant_doc(self, **variant):
        (self.dir / "variant-in").write_bytes(b"\x01")
        (self.dir / "reintroduce.patch").write_text(DIFF)
        v = {"target": "ggml_graph_topology", "source": "ggml 0.25.1 (node-llama-cpp@3.22.1)",
             "patch": "reintroduce.patch",
             "reproducers": [{"input": "variant-in", "expect": {"asan": {"type": "assert", "frame": "g"}}}]}
        v.update(variant)
        return dict(GOOD, upstream_variant={k: x for k, x in v.items() if x is not None})

    def test_status_defaults_to_fixed_and_there_is_no_variant(self):
        self.write(GOOD)
        bug = repro.load(self.dir)
        self.assertEqual((bug.status, bug.variant), ("fixed", None))

    def test_upstream_open_status_loads(self):
        self.write(dict(GOOD, status="upstream-open", triage=TRIAGE))
        self.assertEqual(repro.load(self.dir).status, "upstream-open")
        self.write(dict(GOOD, status="fixed"))
        self.assertEqual(repro.load(self.dir).status, "fixed")

    def test_unknown_status_is_named(self):
        for bad, shown in (("open", '"open"'), ("", '""'), (3, "3"), (None, "null"), (["fixed"], '["fixed"]')):
            with self.subTest(status=bad):
                self.write(dict(GOOD, status=bad))
                msg = self.error()
                self.assertIn("'status' must be one of fixed, upstream-open, upstream-reported, upstream-fixed, "
                              "not-a-bug", msg)
                self.assertIn(f"not {shown}", msg)

    def finding(self, **kw):
        """An upstream finding: GOOD with `kw`, and the prior art of its cited thread classified."""
        return dict(GOOD, upstream=["https://github.com/ggml-org/llama.cpp/issues/7 (a thread)"], **kw)

    def test_upstream_open_says_where_it_searched(self):
        rel = [{"url": "https://github.com/ggml-org/llama.cpp/issues/7", "relation": "related"}]
        self.write(self.finding(status="upstream-open", prior_art=rel))
        self.assertIn("'triage' must say when and where that was searched", self.error())
        self.write(self.finding(status="upstream-open", prior_art=rel, triage=TRIAGE))
        self.assertEqual(repro.load(self.dir).status, "upstream-open")

    def test_an_oracle_finding_in_upstream_code_names_its_mechanism_not_the_oracles_frame(self):
        """Every oracle finding in ggml stops in the same harness frames; a signature that names one of them would
        count another bug behind the same oracle as this one."""
        for frame in ("lifeline::graphs::internal::GgmlGraphAdapter::AllocAndCompute", "GgmlGraphAdapter::Place",
                      "lifeline::graphs::ComputeUnderOracles"):
            with self.subTest(frame=frame):
                sig = {"type": "lifeline-check", "frame": frame, "message": "no-overlap oracle"}
                self.write(dict(self.finding(status="upstream-open", triage=TRIAGE, prior_art=[
                    {"url": "https://github.com/ggml-org/llama.cpp/issues/7", "relation": "related"}]),
                    reproducers=[{"input": "in", "expect": {"asan": sig}}]))
                msg = self.error()
                self.assertIn(f"expect.asan: frame '{frame}' is the harness's own", msg)
        sig = {"type": "lifeline-check", "frame": "ggml_gallocr_alloc_graph [kept plan", "message": "no-overlap oracle"}
        self.write(dict(self.finding(status="upstream-open", triage=TRIAGE, prior_art=[
            {"url": "https://github.com/ggml-org/llama.cpp/issues/7", "relation": "related"}]),
            reproducers=[{"input": "in", "expect": {"asan": sig}}]))
        self.assertEqual(repro.load(self.dir).status, "upstream-open")
        # A bug of the project's own stand-ins is named by its own frames.
        self.write(dict(GOOD, reproducers=[{"input": "in", "expect": {"asan": dict(
            sig, frame="lifeline::alloc::GraphAllocator::InitTensor")}}]))
        self.assertEqual(repro.load(self.dir).status, "fixed")

    def test_a_cited_thread_must_be_classified(self):
        self.write(self.finding(status="upstream-open", triage=TRIAGE))
        self.assertIn("cites https://github.com/ggml-org/llama.cpp/issues/7 without saying what it is to this finding",
                      self.error())

    def test_upstream_open_cannot_cite_a_report_of_its_mechanism_or_its_fix(self):
        for relation, status in (("same-mechanism", "upstream-reported"), ("fix", "upstream-fixed")):
            with self.subTest(relation):
                self.write(self.finding(status="upstream-open", triage=TRIAGE, prior_art=[
                    {"url": "https://github.com/ggml-org/llama.cpp/issues/7", "relation": relation}]))
                msg = self.error()
                self.assertIn("status 'upstream-open' but it cites https://github.com/ggml-org/llama.cpp/issues/7", msg)
                self.assertIn(f"the status is '{status}'", msg)

    def test_reported_fixed_and_not_a_bug_need_their_reference(self):
        rel = [{"url": "https://github.com/ggml-org/llama.cpp/issues/7", "relation": "related"}]
        for status, why in (("upstream-reported", "relation 'same-mechanism'"), ("upstream-fixed", "relation 'fix'"),
                            ("not-a-bug", "needs 'not_a_bug': why it is not one")):
            with self.subTest(status):
                self.write(self.finding(status=status, prior_art=rel))
                self.assertIn(why, self.error())
        self.write(self.finding(status="not-a-bug", prior_art=rel, not_a_bug="the layer's approximation"))
        self.assertEqual(repro.load(self.dir).status, "not-a-bug")

    def test_prior_art_entries_are_validated(self):
        for bad, why in (("x", "must be a list of objects"), (["x"], "prior_art[0]: must be an object"),
                         ([{"url": "u"}], "prior_art[0]: 'relation' must be a non-empty str"),
                         ([{"url": "u", "relation": "duplicate"}], "relation 'duplicate' is not one of"),
                         ([{"url": "u", "relation": "fix", "title": 3}], "'title' must be a str")):
            with self.subTest(bad=bad):
                self.write(self.finding(status="upstream-fixed", prior_art=bad))
                self.assertIn(why, self.error())

    def test_prior_art_dates_say_what_they_are_and_a_merge_has_its_date(self):
        """An opening date read as a merge date made two reports say 'merged' of pull requests that were not
        (whisper.cpp #3981 open when cited, #3956 merged twelve days after the date given)."""
        fix = {"url": "https://github.com/ggml-org/llama.cpp/issues/7", "relation": "fix", "state": "merged"}
        for good in (dict(fix, opened="2026-07-26", merged="2026-08-07", release="first in v1.9.3"),
                     dict(fix, merged="after 2026-08-22: not on master in the history up to then"),
                     dict(fix, merged="not visible: the stored thread says merged, the repository is too large"),
                     dict(fix, state="closed", opened="2024-01", closed="2024-02-01", as_of="2026-09-01")):
            with self.subTest(good=good):
                self.write(self.finding(status="upstream-fixed", prior_art=[good]))
                self.assertEqual(repro.load(self.dir).status, "upstream-fixed")
        for bad, why in ((dict(fix, date="2026-07-26"), "'date' does not say what it is the date of"),
                         (fix, "says merged without the date of the merge"),
                         (dict(fix, merged="soon"), "'merged' must hold a date, a bound with a date, or say 'not visible'"),
                         (dict(fix, state="open", merged="2026-08-07"), "has a 'merged' date but its state is 'open'"),
                         (dict(fix, state="landed"), "state 'landed' is not one of open, closed, merged"),
                         (dict(fix, state="open", opened="July"), "'opened' must begin with its date")):
            with self.subTest(bad=bad):
                self.write(self.finding(status="upstream-fixed", prior_art=[bad]))
                self.assertIn(why, self.error())

    def test_introduced_by_is_what_bisect_records(self):
        sha, sha2 = "a" * 40, "b" * 40
        found = {"commit": sha, "subject": "s", "date": "2025-12-10", "repo": "ggml-org/ggml", "range": [sha2, sha],
                 "export": "in"}
        older = {k: v for k, v in dict(found, before=sha).items() if k != "commit"}
        rel = [{"url": "https://github.com/ggml-org/llama.cpp/issues/7", "relation": "related"}]
        for intro in (found, older, dict(found, note="by hand"), dict(found, found_by="history", note="git log -S")):
            with self.subTest(intro=intro):
                self.write(self.finding(status="upstream-open", triage=TRIAGE, prior_art=rel, introduced_by=intro))
                self.assertEqual(repro.load(self.dir).status, "upstream-open")
        for bad, why in (("x", "'introduced_by' must be an object with 'commit'"),
                         (dict(found, before=sha), "'introduced_by' must be an object with 'commit'"),
                         (dict(found, commit="f2ff0f28"), "introduced_by.commit must be a full 40-digit"),
                         (dict(found, subject=""), "introduced_by.subject must be a non-empty str"),
                         (dict(found, date="2025-12"), "introduced_by.date must be YYYY-MM-DD"),
                         (dict(found, range=[sha]), "introduced_by.range must be [GOOD, BAD]"),
                         (dict(found, note=1), "introduced_by.note must be a str"),
                         (dict(found, found_by="guess"), "introduced_by.found_by must be \"bisect\"")):
            with self.subTest(bad=bad):
                self.write(self.finding(status="upstream-open", triage=TRIAGE, prior_art=rel, introduced_by=bad))
                self.assertIn(why, self.error())

    def test_checked_in_findings_say_where_upstream_stands(self):
        """Every repro/ finding in upstream code has a status its bug.json backs (the re-triage of issue 34)."""
        from support import ROOT
        statuses = {}
        for d in repro.folders(ROOT / "repro"):
            bug = repro.load(d)
            statuses[bug.id] = bug.status
        self.assertEqual(statuses["ggml-gallocr-stale-plan-rewired-edges"], "upstream-reported")
        self.assertEqual(statuses["ggml-vk-descriptor-range-untracked"], "not-a-bug")
        self.assertEqual(statuses["torch-from-dlpack-empty-leaks"], "upstream-fixed")

    def test_valid_upstream_variant_loads(self):
        self.write(self.variant_doc())
        bug = repro.load(self.dir)
        self.assertEqual(bug.variant.target, "ggml_graph_topology")
        self.assertEqual(bug.variant.patch, self.dir / "reintroduce.patch")
        self.assertEqual([r.input for r in bug.variant.reproducers], [self.dir / "variant-in"])
        self.assertEqual(bug.variant.reproducers[0].expect["asan"]["type"], "assert")
        self.assertEqual(len(bug.reproducers), 1)  # the top-level reproducers are apart from the variant's

    def test_patch_may_be_in_a_subfolder(self):
        (self.dir / "patches").mkdir()
        (self.dir / "patches" / "p.patch").write_text(DIFF)
        self.write(self.variant_doc(patch="patches/p.patch"))
        self.assertEqual(repro.load(self.dir).variant.patch, self.dir / "patches" / "p.patch")

    def test_upstream_variant_must_be_an_object(self):
        self.write(dict(GOOD, upstream_variant=["ggml_graph_topology"]))
        self.assertIn("'upstream_variant' must be a non-empty dict", self.error())

    def test_a_variant_without_a_patch_is_the_switch_on_its_target(self):
        self.write(self.variant_doc(patch=None))
        self.assertIsNone(repro.load(self.dir).variant.patch)
        doc = dict(self.variant_doc(patch=None), status="upstream-fixed", target="ggml_graph_topology",
                   prior_art=[{"url": "https://github.com/ggml-org/ggml/pull/1", "relation": "fix"}])
        del doc["reproducers"]
        self.write(doc)
        self.assertIn("an upstream-fixed bug has no switch, so its variant needs 'patch'", self.error())

    def test_freed_by_is_for_use_after_free(self):
        sig = {"type": "heap-use-after-free", "frame": "f", "freed_by": "DLPack_Capsule_Destructor"}
        self.write(dict(GOOD, reproducers=[dict(GOOD["reproducers"][0], expect={"asan": sig})]))
        self.assertEqual(repro.load(self.dir).reproducers[0].expect["asan"]["freed_by"], "DLPack_Capsule_Destructor")
        sig = {"type": "lifeline-check", "message": "m", "freed_by": "g"}
        self.write(dict(GOOD, reproducers=[dict(GOOD["reproducers"][0], expect={"asan": sig})]))
        self.assertIn("'freed_by' applies to heap-use-after-free and double-free", self.error())

    def test_each_missing_variant_field_is_named(self):
        for key in ("target", "source", "reproducers"):
            with self.subTest(key=key):
                self.write(self.variant_doc(**{key: None}))
                self.assertIn(f"upstream_variant: missing '{key}'", self.error())

    def test_variant_fields_must_be_non_empty(self):
        self.write(self.variant_doc(source="  "))
        self.assertIn("upstream_variant: 'source' must be a non-empty str", self.error())
        self.write(self.variant_doc(target="Bad Name"))
        self.assertIn("upstream_variant: target 'Bad Name' is not a target name", self.error())
        self.write(self.variant_doc(reproducers=[]))
        self.assertIn("'upstream_variant.reproducers' is empty", self.error())

    def test_patch_outside_the_folder(self):
        (self.tmp / "outside.patch").write_text("x")
        for patch in ("../outside.patch", str(self.tmp / "outside.patch"), "patches/../../outside.patch"):
            with self.subTest(patch=patch):
                self.write(self.variant_doc(patch=patch))
                self.assertIn(f"patch '{patch}' must be a relative path inside", self.error())

    def test_patch_cmake_or_a_shell_would_split(self):
        for patch in ("p;q.patch", "p q.patch", "p[1].patch", "$(x).patch", "~/p.patch"):
            with self.subTest(patch=patch):
                (self.dir / patch.replace("~/", "")).write_text(DIFF)
                self.write(self.variant_doc(patch=patch))
                self.assertIn(f"patch '{patch}' must be a relative path inside {self.dir} (no '..'), of letters, "
                              "digits and . _ / -", self.error())

    def test_id_must_be_a_bug_id(self):
        for bad in ("Some-Bug", "some_bug", "somebug", "some bug"):
            with self.subTest(id=bad):
                d = self.tmp / bad
                d.mkdir()
                (d / "in").write_bytes(b"\x00")
                (d / "bug.json").write_text(json.dumps(dict(GOOD, id=bad)))
                with self.assertRaises(repro.BugJsonError) as cm:
                    repro.load(d)
                self.assertIn(f"id '{bad}' is not a bug id", str(cm.exception))

    def test_env_values_hold_no_nul(self):
        doc = json.loads(json.dumps(GOOD))
        doc["reproducers"][0]["env"] = {"UBSAN_OPTIONS": "a\u0000b"}
        self.write(doc)
        self.assertIn("'env' must map variable names (A-Z, 0-9, _) to strings (without NUL)", self.error())

    def test_patch_must_be_a_diff_of_plain_paths(self):
        (self.dir / "p.patch").write_text("not a diff\n+++ a/x\n")
        self.write(self.variant_doc(patch="p.patch"))
        self.assertIn("patch file 'p.patch' has no '+++ b/<file>' line", self.error())
        for touched in ("../x.c", "src/a;b.c", "/etc/passwd"):
            with self.subTest(touched=touched):
                (self.dir / "p.patch").write_text(f"--- a/{touched}\n+++ b/{touched}\n")
                self.assertIn(f"patch file 'p.patch' touches '{touched}', not a plain relative path", self.error())

    def test_missing_patch_file(self):
        self.write(self.variant_doc(patch="nope.patch"))
        self.assertIn("upstream_variant: patch file 'nope.patch' does not exist", self.error())

    def test_missing_variant_input(self):
        self.write(self.variant_doc(reproducers=[{"input": "nope", "expect": {"asan": {"type": "assert", "frame": "g"}}}]))
        self.assertIn("upstream_variant.reproducers[0]: input file 'nope' does not exist", self.error())

    def test_variant_signature_is_validated(self):
        self.write(self.variant_doc(reproducers=[{"input": "variant-in", "expect": {"msan": {"type": "x", "frame": "y"}}}]))
        self.assertIn("upstream_variant.reproducers[0]: expect.msan: unknown lane", self.error())
        self.write(self.variant_doc(reproducers=[{"input": "variant-in", "expect": {"asan": {"type": "assert"}}}]))
        self.assertIn("upstream_variant.reproducers[0]: expect.asan: needs 'frame'", self.error())

    def test_checked_in_reproducers_are_valid(self):
        root = Path(__file__).resolve().parents[2] / "repro"
        for d in sorted(p for p in root.iterdir() if p.is_dir()):
            with self.subTest(repro=d.name):
                repro.load(d)


if __name__ == "__main__":
    unittest.main()
