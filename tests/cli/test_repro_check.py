"""`lifeline list` and `lifeline repro-check` on upstream-open bugs and upstream variants (scratch project)."""
import os
import unittest

from scratch_project import ASSERT_SIG, ScratchProject, write_bug
from support import TRIAGE


class ReproCheck(ScratchProject):
    def test_list_shows_status_and_variant(self):
        rc, out = self.cli("list")
        self.assertEqual(rc, 0, out)
        self.assertRegex(out, r"reproducer: fake-upstream-open .* status=upstream-open\n")
        self.assertRegex(out, r"reproducer: fake-fixed-bug .* status=fixed  upstream variant: fake_target_upstream\n")

    def test_validate_only_names_status_and_variant(self):
        rc, out = self.cli("repro-check", "--validate-only", "--repro-dir", self.upstream_open)
        self.assertEqual(rc, 0, out)
        self.assertIn("valid (1 reproducer(s); status upstream-open)", out)
        rc, out = self.cli("repro-check", "--validate-only", "--repro-dir", self.fixed)
        self.assertIn("valid (1 reproducer(s); upstream variant fake_target_upstream: 1 reproducer(s))", out)

    def test_validate_only_fails_a_fixed_bug_without_a_switch(self):
        bug = write_bug(self.tmp / "elsewhere" / "fake-unswitched", {
            "target": "fake_target", "reproducers": [{"input": "in", "expect": {"asan": ASSERT_SIG}}]},
            {"in": "x"})
        rc, out = self.cli("repro-check", "--validate-only", "--repro-dir", bug)
        self.assertEqual(rc, 1, out)
        self.assertIn("id 'fake-unswitched' is no switch in core/bug_list.def", out)

    def test_a_binary_that_cannot_run_is_named(self):
        self.fake.chmod(0o644)
        rc, out = self.check(self.upstream_open, "pinned", self.fake)
        self.assertEqual(rc, 1, out)
        self.assertIn(f"FAIL in: cannot run {self.fake} (Permission denied)", out)
        rc, out, err = self.cli_apart("triage", self.input("uaf"), "--target", "fake_target")
        self.assertEqual(rc, 2, out + err)
        self.assertEqual(err.strip(), f"lifeline triage: cannot run {self.fake} (not executable)")
        rc, out, err = self.cli_apart("expect-crash", "--type", "x", "--frame", "f", "--", self.fake)
        self.assertEqual(rc, 2, out + err)
        self.assertEqual(err.strip(), f"lifeline expect-crash: cannot run {self.fake} (Permission denied)")

    def check(self, bug, mode, binary, *extra, lane="asan"):
        return self.cli("repro-check", "--repro-dir", bug, "--lane", lane, "--mode", mode, "--binary", binary, *extra)

    def test_pinned_passes_while_the_pinned_upstream_reproduces(self):
        rc, out = self.check(self.upstream_open, "pinned", self.fake)
        self.assertEqual(rc, 0, out)
        self.assertIn("PASS in: assert | ggml_gallocr_init_tensor / ggml_gallocr_alloc_graph", out)

    def test_pinned_fails_when_the_pinned_upstream_no_longer_reproduces(self):
        gone = write_bug(self.tmp / "elsewhere" / "fake-gone-upstream", {
            "status": "upstream-open", "triage": TRIAGE, "target": "fake_target",
            "reproducers": [{"input": "in", "expect": {"asan": ASSERT_SIG}}]}, {"in": "clean"})
        rc, out = self.check(gone, "pinned", self.fake)
        self.assertEqual(rc, 1, out)
        self.assertIn("FAIL in: the pinned upstream no longer reproduces it", out)
        self.assertIn("a version bump may have fixed it: revisit status 'upstream-open'", out)

    def test_on_another_source_a_clean_input_is_not_reproduced_and_skipped(self):
        gone = write_bug(self.tmp / "elsewhere" / "fake-fixed-there", {
            "status": "upstream-open", "triage": TRIAGE, "target": "fake_target",
            "reproducers": [{"input": "in", "expect": {"asan": ASSERT_SIG}},
                            {"input": "still", "expect": {"asan": ASSERT_SIG}}]}, {"in": "clean", "still": "assert"})
        source = "ggml 0.25.1 from /src/my ggml"
        rc, out = self.check(gone, "pinned", self.fake, "--other-source", source)
        self.assertEqual(rc, 77, out)  # ctest's SKIP_RETURN_CODE for these tests
        self.assertIn(f"NOT REPRODUCED in: ran clean on {source} (the pinned upstream gives", out)
        self.assertIn("PASS still: assert", out)
        self.assertIn(f"SKIPPED: not reproduced on this source: fixed? 1 of 2 input(s) ran clean on {source} (in)", out)
        # Another crash is still a failure there, and so is a source the option was not given for.
        other = write_bug(self.tmp / "elsewhere" / "fake-other-there", {
            "status": "upstream-open", "triage": TRIAGE, "target": "fake_target",
            "reproducers": [{"input": "in", "expect": {"asan": ASSERT_SIG}}]}, {"in": "uaf"})
        rc, out = self.check(other, "pinned", self.fake, "--other-source", source)
        self.assertEqual(rc, 1, out)
        self.assertNotIn("SKIPPED", out)
        rc, out = self.check(gone, "pinned", self.fake)
        self.assertEqual(rc, 1, out)
        rc, out, err = self.cli_apart("repro-check", "--repro-dir", gone, "--lane", "asan", "--mode", "guarded",
                                      "--binary", self.fake, "--other-source", source)
        self.assertEqual(rc, 2, out + err)
        self.assertIn("--other-source applies to --mode pinned", err)

    def test_pinned_fails_on_another_crash(self):
        other = write_bug(self.tmp / "elsewhere" / "fake-other-crash", {
            "status": "upstream-open", "triage": TRIAGE, "target": "fake_target",
            "reproducers": [{"input": "in", "expect": {"asan": ASSERT_SIG}}]}, {"in": "uaf"})
        rc, out = self.check(other, "pinned", self.fake)
        self.assertEqual(rc, 1, out)
        self.assertIn("the pinned upstream must still give", out)
        self.assertIn("crash type is 'heap-use-after-free', expected 'assert'", out)

    def test_pinned_on_a_lane_no_input_lists(self):
        rc, out = self.check(self.upstream_open, "pinned", self.fake, lane="tsan")
        self.assertEqual(rc, 1, out)
        self.assertIn("no reproducer lists lane 'tsan'", out)

    def test_fixed_and_reintroduced_refuse_an_upstream_open_bug(self):
        for mode in ("fixed", "reintroduced"):
            with self.subTest(mode=mode):
                rc, out = self.check(self.upstream_open, mode, self.fake)
                self.assertEqual(rc, 1, out)
                self.assertIn("FAIL fake-upstream-open: status is 'upstream-open'", out)
                self.assertIn(f"no '{mode}' run; check it with --mode pinned", out)

    def test_pinned_refuses_a_fixed_bug(self):
        rc, out = self.check(self.fixed, "pinned", self.fake)
        self.assertEqual(rc, 1, out)
        self.assertIn("--mode pinned applies to findings in upstream code; this one is 'fixed'", out)

    def test_fixed_bug_two_way_test_is_unchanged(self):
        rc, out = self.check(self.fixed, "fixed", self.fake)
        self.assertEqual(rc, 0, out)
        self.assertIn("PASS in: clean on the fixed code", out)
        rc, out = self.check(self.fixed, "reintroduced", self.fake)
        self.assertEqual(rc, 0, out)
        self.assertIn("PASS in: heap-use-after-free | lifeline::fake::FakeUse", out)

    def test_variant_fixed_is_clean_on_the_unpatched_upstream(self):
        rc, out = self.check(self.fixed, "fixed", self.unpatched, "--variant", "upstream")
        self.assertEqual(rc, 0, out)
        self.assertIn("PASS variant-in: clean on the unpatched upstream build", out)
        rc, out = self.check(self.fixed, "fixed", self.patched, "--variant", "upstream")
        self.assertEqual(rc, 1, out)
        self.assertIn("FAIL variant-in: the unpatched upstream build reported assert | ggml_gallocr_init_tensor", out)

    def test_variant_fixed_on_another_source_that_has_the_bug_is_skipped(self):
        # self.patched stands for an unpatched build of a version from before the fix: it gives the signature.
        source = "ggml 0.9.5 from /src/old ggml"
        rc, out = self.check(self.fixed, "fixed", self.patched, "--variant", "upstream", "--other-source", source)
        self.assertEqual(rc, 77, out)
        self.assertIn(f"HAS THE BUG variant-in: the unpatched build of {source} gives the finding's signature "
                      "(assert | ggml_gallocr_init_tensor", out)
        self.assertIn("SKIPPED: 1 input(s) of the upstream variant fail with its signature", out)
        # Clean there is still a pass, and another crash there is still a failure.
        rc, out = self.check(self.fixed, "fixed", self.unpatched, "--variant", "upstream", "--other-source", source)
        self.assertEqual(rc, 0, out)
        self.assertNotIn("SKIPPED", out)
        other = write_bug(self.tmp / "elsewhere" / "fake-fixed-bug", {  # the same switch, another variant input
            "target": "fake_target", "reproducers": [{"input": "in", "expect": {"asan": ASSERT_SIG}}],
            "upstream_variant": {"target": "fake_target_upstream", "source": "ggml 0.25.1",
                                 "patch": "reintroduce.patch",
                                 "reproducers": [{"input": "variant-in", "expect": {"asan": ASSERT_SIG}}]}},
            {"in": "uaf", "variant-in": "uaf", "reintroduce.patch": "--- a/x\n+++ b/x\n"})
        rc, out = self.check(other, "fixed", self.patched, "--variant", "upstream", "--other-source", source)
        self.assertEqual(rc, 1, out)
        self.assertIn("FAIL variant-in: the unpatched upstream build reported heap-use-after-free", out)
        self.assertNotIn("HAS THE BUG", out)

    def test_variant_reintroduced_fails_on_the_patched_build_without_a_switch(self):
        # The fake upstream build exits 2 if LIFELINE_REINTRODUCE is set at all.
        rc, out = self.check(self.fixed, "reintroduced", self.patched, "--variant", "upstream")
        self.assertEqual(rc, 0, out)
        self.assertIn("PASS variant-in: assert | ggml_gallocr_init_tensor", out)
        rc, out = self.check(self.fixed, "reintroduced", self.unpatched, "--variant", "upstream")
        self.assertEqual(rc, 1, out)
        self.assertIn("FAIL variant-in: the patched upstream build (reintroduce.patch) must give", out)

    def test_variant_needs_an_upstream_variant(self):
        rc, out = self.check(self.upstream_open, "fixed", self.unpatched, "--variant", "upstream")
        self.assertEqual(rc, 1, out)
        self.assertIn("FAIL fake-upstream-open: --variant upstream needs an 'upstream_variant'", out)
        self.assertIn("which has none", out)

    def test_variant_has_no_pinned_or_guarded_mode(self):
        for mode in ("pinned", "guarded"):
            with self.subTest(mode=mode):
                rc, out = self.check(self.fixed, mode, self.unpatched, "--variant", "upstream")
                self.assertEqual(rc, 1, out)
                self.assertIn(f"--mode {mode} checks a finding in upstream code", out)

    def test_variant_binary_missing(self):
        rc, out = self.check(self.fixed, "fixed", self.tmp / "nope", "--variant", "upstream")
        self.assertEqual(rc, 1, out)
        self.assertIn("is the upstream variant 'fake_target_upstream' built in this lane?", out)

    def test_bad_mode_and_variant_are_usage_errors(self):
        for args, text in ((["--mode", "open"], "invalid choice: 'open'"),
                           (["--mode", "fixed", "--variant", "downstream"], "invalid choice: 'downstream'")):
            with self.subTest(args=args):
                rc, out = self.cli("repro-check", "--repro-dir", self.fixed, "--lane", "asan", "--binary",
                                   self.fake, *args)
                self.assertEqual(rc, 2, out)
                self.assertIn(text, out)
                self.assertEqual(len(out.strip().splitlines()), 1, out)


class GuardedReproCheck(ScratchProject):
    """An upstream-open finding with a guard: clean with every guard on, its signature with its guard off."""

    def setUp(self):
        super().setUp()
        self.guarded = self.finding(self.root / "repro" / "fake-guarded", "fake-guarded", "guarded-assert")

    def finding(self, folder, guard, word):
        """An upstream-open finding with `guard`, whose one input is `word` (the fake target's behaviour)."""
        return write_bug(folder, {"status": "upstream-open", "triage": TRIAGE, "guard": guard, "target": "fake_target",
                                  "reproducers": [{"input": "in", "expect": {"asan": ASSERT_SIG}}]}, {"in": word})

    def check(self, bug, mode, env=None):
        return self.cli("repro-check", "--repro-dir", bug, "--lane", "asan", "--mode", mode, "--binary", self.fake,
                        env=env)

    def test_validate_only_names_the_guard(self):
        rc, out = self.cli("repro-check", "--validate-only", "--repro-dir", self.guarded)
        self.assertEqual(rc, 0, out)
        self.assertIn("status upstream-open; guard fake-guarded", out)

    def test_both_ways_pass_on_a_guarded_finding(self):
        rc, out = self.check(self.guarded, "guarded")
        self.assertEqual(rc, 0, out)
        self.assertIn("PASS in: clean with guard fake-guarded on", out)
        rc, out = self.check(self.guarded, "pinned")
        self.assertEqual(rc, 0, out)
        self.assertIn("PASS in: assert | ggml_gallocr_init_tensor", out)

    def test_an_inherited_unguard_reaches_neither_way(self):
        rc, out = self.check(self.guarded, "guarded", env=dict(os.environ, LIFELINE_UNGUARD="fake-guarded"))
        self.assertEqual(rc, 0, out)
        other = self.finding(self.tmp / "elsewhere" / "fake-other", "fake-other-guard", "guarded-assert")
        rc, out = self.check(other, "pinned", env=dict(os.environ, LIFELINE_UNGUARD="fake-guarded"))
        self.assertEqual(rc, 1, out)

    def test_pinned_fails_when_turning_the_named_guard_off_does_not_reproduce(self):
        other = self.finding(self.tmp / "elsewhere" / "fake-other", "fake-other-guard", "guarded-assert")
        rc, out = self.check(other, "pinned")
        self.assertEqual(rc, 1, out)
        self.assertIn("FAIL in: the pinned upstream no longer reproduces it with guard fake-other-guard off", out)

    def test_guarded_fails_when_the_guard_does_not_step_around_it(self):
        leaky = self.finding(self.tmp / "elsewhere" / "fake-leaky", "fake-guarded", "assert")
        rc, out = self.check(leaky, "guarded")
        self.assertEqual(rc, 1, out)
        self.assertIn("FAIL in: with every guard on (guard fake-guarded steps around this finding) it reported "
                      "assert", out)

    def test_guarded_needs_a_guard_and_an_upstream_open_bug(self):
        rc, out = self.check(self.upstream_open, "guarded")
        self.assertEqual(rc, 1, out)
        self.assertIn("--mode guarded needs a 'guard'", out)
        rc, out = self.check(self.fixed, "guarded")
        self.assertEqual(rc, 1, out)
        self.assertIn("--mode guarded applies to findings in upstream code", out)

    def test_a_guard_outside_the_guard_list_is_named(self):
        bad = self.finding(self.tmp / "elsewhere" / "fake-bad", "fake-unknown", "assert")
        rc, out = self.cli("repro-check", "--validate-only", "--repro-dir", bad)
        self.assertEqual(rc, 1, out)
        self.assertIn("guard 'fake-unknown' is not in core/guard_list.def (known: fake-guarded, fake-other-guard)", out)


if __name__ == "__main__":
    unittest.main()
