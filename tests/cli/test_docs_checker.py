"""tests/docs/check_docs.py can fail: a broken link, a failing runnable block, an output whose shape changed and a
guide with no runnable block each fail it, and bad arguments are one line with exit status 2. Each test makes a
small git checkout of its own in a temporary folder; nothing is built."""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest
from pathlib import Path

CHECKER = Path(__file__).resolve().parents[1] / "docs" / "check_docs.py"
_spec = importlib.util.spec_from_file_location("check_docs", CHECKER)
check_docs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check_docs)


class Checkout:
    """A throwaway git checkout with README.md, docs/ and whatever else a test writes (all `git add`ed)."""

    def __init__(self, files: dict[str, str], build: bool = True):
        self._tmp = tempfile.TemporaryDirectory(prefix="docs-checker-")
        self.root = Path(self._tmp.name)
        files = {"README.md": "# r\n", **files}
        for name, text in files.items():
            p = self.root / name
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(textwrap.dedent(text))
        if build:
            (self.root / "build").mkdir()
            (self.root / "build" / "marker").write_text("built\n")
        subprocess.run(["git", "init", "-q", str(self.root)], check=True)
        subprocess.run(["git", "-C", str(self.root), "add", *files], check=True)

    def check(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, str(CHECKER), *args, "--root", str(self.root)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)

    def close(self):
        self._tmp.cleanup()


class DocsCheckerTest(unittest.TestCase):
    def checkout(self, files: dict[str, str], **kw) -> Checkout:
        c = Checkout(files, **kw)
        self.addCleanup(c.close)
        return c

    # ---- links ---------------------------------------------------------------------------------------------

    def test_links_that_resolve_pass(self):
        c = self.checkout({
            "README.md": """\
                # lifeline
                See [the guide](docs/guide.md), [its setup](docs/guide.md#set-up-the-machine-once),
                [a repro](repro/x/) and ![a plot](bench/p.png); [web](https://example.org/nothing) is not checked.
                """,
            "docs/guide.md": """\
                # Guide
                ## Set up: the machine (once)
                Back to [the top](#guide) and [the front door](../README.md).
                ```sh
                [not a link](nowhere.md)
                ```
                Nor is `[this](nowhere.md)`.
                """,
            "repro/x/bug.json": "{}\n",
            "bench/p.png": "png\n",
        })
        r = c.check("links")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("links: 6 relative links in 2 files resolve", r.stdout)

    def test_a_missing_file_fails_with_file_and_line(self):
        c = self.checkout({"README.md": "# r\n\ntext\nsee [it](docs/missing.md)\n"})
        r = c.check("links")
        self.assertEqual(r.returncode, 1)
        self.assertIn("README.md:4: broken link 'docs/missing.md'", r.stdout)

    def test_a_missing_anchor_fails(self):
        c = self.checkout({
            "README.md": "# r\n[x](docs/a.md#no-such-heading)\n",
            "docs/a.md": "# A\n## Some heading\n",
        })
        r = c.check("links")
        self.assertEqual(r.returncode, 1)
        self.assertIn("README.md:2: broken link 'docs/a.md#no-such-heading'", r.stdout)

    def test_a_broken_link_inside_a_guide_fails(self):
        c = self.checkout({"docs/a.md": "# A\n\n[up](../READ.md)\n"})
        r = c.check("links")
        self.assertEqual(r.returncode, 1)
        self.assertIn("docs/a.md:3: broken link '../READ.md'", r.stdout)

    def test_slugs_follow_github(self):
        self.assertEqual(check_docs.slug("Scaling out: ClusterFuzzLite / OSS-Fuzz and AFL++"),
                         "scaling-out-clusterfuzzlite--oss-fuzz-and-afl")
        self.assertEqual(check_docs.slug("libFuzzer's settings per target"), "libfuzzers-settings-per-target")
        self.assertEqual(check_docs.slug("With `--ggml-source`"), "with---ggml-source")
        self.assertEqual(check_docs.slug("bug.json reference"), "bugjson-reference")

    # ---- run -----------------------------------------------------------------------------------------------

    def test_passing_blocks_run_in_a_scratch_copy_with_a_space_and_build_linked(self):
        c = self.checkout({"docs/g.md": """\
            # G
            ```sh runnable
            pwd | grep -q ' '
            test -L build && cat build/marker
            test -f docs/g.md && echo "total: 12 items"
            ```

            ```text output
            built
            total:   5  items
            /this/line/is/not/compared
            ```

            ```sh runnable
            touch made-by-block-2
            ```
            ```sh
            false  # a plain block is not run
            ```
            """})
        r = c.check("run", "docs/g.md")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("ok   docs/g.md:2  pwd | grep -q ' '", r.stdout)
        self.assertIn("ok   docs/g.md:14  touch made-by-block-2", r.stdout)
        self.assertIn("docs/g.md: 2 runnable blocks, 2 ok, 0 failed", r.stdout)
        self.assertFalse((c.root / "made-by-block-2").exists(), "a block ran in the checkout itself")

    def test_a_failing_block_fails(self):
        c = self.checkout({"docs/g.md": """\
            # G
            ```sh runnable
            echo fine
            ```

            ```sh runnable
            ls no-such-file | cat
            echo "after the failure"
            ```
            """})
        r = c.check("run", "docs/g.md")
        self.assertEqual(r.returncode, 1)
        self.assertIn("ok   docs/g.md:2  echo fine", r.stdout)
        self.assertIn("FAIL docs/g.md:6  ls no-such-file | cat", r.stdout)
        self.assertIn("exit status", r.stdout)
        self.assertNotIn("| after the failure", r.stdout, "bash -e -o pipefail did not stop at the failure")

    def test_an_output_whose_shape_changed_fails(self):
        c = self.checkout({"docs/g.md": """\
            # G
            ```sh runnable
            printf 'target   execs  exec/s\\nalloc  1,234  56.5\\n'
            ```

            ```text output
            target execs exec/s
            alloc 99 7
            ```

            ```sh runnable
            printf 'target   runs  exec/s\\n'
            ```

            ```text output
            target execs exec/s
            ```
            """})
        r = c.check("run", "docs/g.md")
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertIn("ok   docs/g.md:2", r.stdout)
        self.assertIn("FAIL docs/g.md:11", r.stdout)
        self.assertIn("output lacks the quoted line(s): 'target execs exec/s'", r.stdout)

    def test_a_guide_with_no_runnable_block_fails(self):
        c = self.checkout({"docs/g.md": "# G\n\n```sh\n./lifeline list\n```\n"})
        r = c.check("run", "docs/g.md")
        self.assertEqual(r.returncode, 1)
        self.assertIn("docs/g.md: no `sh runnable` block: a guide test that ran nothing is a failure", r.stdout)

    def test_a_block_past_its_time_limit_fails(self):
        c = self.checkout({"docs/g.md": "# G\n```sh runnable\nsleep 30\n```\n"})
        r = c.check("run", "docs/g.md", "--timeout", "1")
        self.assertEqual(r.returncode, 1)
        self.assertIn("FAIL docs/g.md:2  sleep 30", r.stdout)
        self.assertIn("no exit within 1 s", r.stdout)

    def test_inherited_lifeline_variables_do_not_reach_a_block(self):
        c = self.checkout({"docs/g.md": "# G\n```sh runnable\ntest -z \"${LIFELINE_REINTRODUCE:-}\"\n```\n"})
        env = dict(os.environ, LIFELINE_REINTRODUCE="wasm-lang-dangling")
        r = subprocess.run([sys.executable, str(CHECKER), "run", "docs/g.md", "--root", str(c.root)], env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stdout)

    # ---- usage ---------------------------------------------------------------------------------------------

    def assert_usage_error(self, r: subprocess.CompletedProcess, text: str):
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertEqual(len(r.stderr.strip().split("\n")), 1, r.stderr)
        self.assertIn(text, r.stderr)
        self.assertNotIn("Traceback", r.stderr)

    def test_a_missing_guide_is_one_line_and_exit_2(self):
        c = self.checkout({})
        self.assert_usage_error(c.check("run", "docs/nope.md"), "no guide 'docs/nope.md'")

    def test_bad_arguments_are_one_line_and_exit_2(self):
        c = self.checkout({"docs/g.md": "# G\n"})
        self.assert_usage_error(c.check("lint"), "check_docs.py:")
        self.assert_usage_error(c.check("run"), "check_docs.py:")
        self.assert_usage_error(c.check("run", "docs/g.md", "--timeout", "soon"), "check_docs.py:")
        self.assert_usage_error(c.check("run", "docs/g.md", "--timeout", "0"), "--timeout must be a positive")
        r = subprocess.run([sys.executable, str(CHECKER), "links", "--root", "/nonexistent/root"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.assert_usage_error(r, "is not a folder")

    def test_a_root_that_is_not_a_checkout_is_one_line_and_exit_2(self):
        with tempfile.TemporaryDirectory() as d:
            (Path(d) / "docs").mkdir()
            (Path(d) / "docs" / "g.md").write_text("# G\n```sh runnable\ntrue\n```\n")
            r = subprocess.run([sys.executable, str(CHECKER), "run", "docs/g.md", "--root", d],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
        self.assert_usage_error(r, "is not a git checkout")


if __name__ == "__main__":
    unittest.main()
