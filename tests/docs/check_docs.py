#!/usr/bin/env python3
"""Checks that the guides cannot rot: their links resolve and their runnable blocks still run.

  check_docs.py links [--root DIR]
      Every relative link `[text](path)` or `[text](path#anchor)` (images too) in README.md and docs/*.md must
      lead to an existing file or folder, and an anchor to a heading of the Markdown file it names, by GitHub's
      rule (lowercased; every character but letters, digits, blanks, `-` and `_` dropped; blanks to `-`; a
      repeated heading gets `-1`, `-2`, ...). Links inside code (fenced blocks, `spans`) are not links. Prints
      `FILE:LINE: broken link 'TARGET' (why)` for each broken one; exit 1 if there is any.

  check_docs.py run GUIDE [--root DIR] [--timeout S]
      Runs every block of GUIDE whose fence's info string is `sh runnable` (a plain `sh` block is not run):
      with `bash -e -o pipefail`, in a scratch copy of the checkout's tracked files (`git ls-files`) in a
      temporary folder whose path holds a space, with `build` there a link to the checkout's `build/`, no
      LIFELINE_* variable inherited, and a time limit per block (default 60 s). The blocks run in order in the
      same copy, so a block may use what an earlier one wrote. A block passes when it exits 0 and, if a
      `text output` block follows it, its output has the quoted shape: every non-blank quoted line that starts
      with a letter must equal a line of the output once runs of blanks are collapsed (ends trimmed) and every
      number (digits, with `.` or `,` between them) may be any number; other quoted lines are not compared.
      Prints `ok` or `FAIL` per block with the guide's line and the block's first line; exit 1 if a block
      failed, and also if the guide has no runnable block (a guide test that ran nothing is a failure).

--root is the checkout (default: the one this file is in). Bad arguments, a missing guide or a root that is not
a git checkout: one line on stderr, exit 2. docs/README.md says the same for the guides' writers.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse
from pathlib import Path

DEFAULT_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_TIMEOUT_S = 60.0
FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})\s*(.*?)\s*$")
HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
HTML_ANCHOR = re.compile(r"""<a\s+(?:name|id)\s*=\s*["']([^"']+)["']""", re.I)
CODE_SPAN = re.compile(r"(`+)(?!`)[\s\S]*?[^`]\1(?!`)")
LINK = re.compile(r"!?\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\(\s*<?([^()\s<>]*(?:\([^()\s]*\)[^()\s<>]*)*)>?(?:\s+\"[^\"]*\")?\s*\)")
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
NUMBER = re.compile(r"(\d+(?:[.,]\d+)*)")
OUTPUT_TAIL_LINES = 25


class UsageError(Exception):
    """A bad argument or a missing input: one line, exit 2."""


class Parser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(f"{message} (usage: check_docs.py links [--root DIR] | "
                         "check_docs.py run GUIDE [--root DIR] [--timeout S])")


# ---- Markdown ----------------------------------------------------------------------------------------------

def fence_mask(lines: list[str]) -> list[bool]:
    """For each line, whether it belongs to a fenced code block (fence lines included)."""
    mask, fence = [], None
    for line in lines:
        m = FENCE.match(line)
        if fence is None:
            if m:
                fence = m.group(1)
            mask.append(fence is not None)
        else:
            mask.append(True)
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and not m.group(2):
                fence = None
    return mask


def slug(text: str) -> str:
    """GitHub's anchor for a heading's text."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)  # a link in a heading counts by its text
    text = text.replace("`", "").strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    lines = path.read_text(encoding="utf-8", errors="replace").split("\n")
    found, seen = set(), {}
    for line, in_code in zip(lines, fence_mask(lines)):
        if in_code:
            continue
        m = HEADING.match(line)
        if m:
            s = slug(m.group(2))
            n = seen.get(s, 0)
            seen[s] = n + 1
            found.add(s if n == 0 else f"{s}-{n}")
        for a in HTML_ANCHOR.findall(line):
            found.add(a)
    return found


def prose(text: str) -> str:
    """`text` with fenced blocks and code spans blanked out, line breaks kept (so offsets keep their lines)."""
    lines = text.split("\n")
    kept = "\n".join("" if in_code else line for line, in_code in zip(lines, fence_mask(lines)))
    return CODE_SPAN.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), kept)


def link_files(root: Path) -> list[Path]:
    readme = root / "README.md"
    if not readme.is_file():
        raise UsageError(f"no README.md in {root}")
    return [readme] + sorted((root / "docs").glob("*.md"))


def broken_links(root: Path, files: list[Path]) -> tuple[int, list[str]]:
    """(how many relative links were checked, one line per broken one)."""
    checked, broken, cache = 0, [], {}
    for f in files:
        text = prose(f.read_text(encoding="utf-8", errors="replace"))
        rel = f.relative_to(root) if f.is_relative_to(root) else f
        for m in LINK.finditer(text):
            target = m.group(2)
            if not target or SCHEME.match(target) or target.startswith("//"):
                continue
            checked += 1
            line = text.count("\n", 0, m.start()) + 1
            path_part, _, anchor = target.partition("#")
            path_part = urllib.parse.unquote(path_part)
            if path_part.startswith("/"):
                dest = root / path_part.lstrip("/")
            elif path_part:
                dest = f.parent / path_part
            else:
                dest = f
            why = None
            if not dest.exists():
                why = "no such file"
            elif anchor and dest.is_file() and dest.suffix == ".md":
                key = dest.resolve()
                if key not in cache:
                    cache[key] = anchors(dest)
                if urllib.parse.unquote(anchor) not in cache[key]:
                    why = f"no heading with anchor '#{anchor}' in {os.path.relpath(dest, root)}"
            elif anchor and dest.is_dir():
                why = "an anchor on a folder"
            if why:
                broken.append(f"{rel}:{line}: broken link '{target}' ({why})")
    return checked, broken


def cmd_links(root: Path) -> int:
    files = link_files(root)
    checked, broken = broken_links(root, files)
    for b in broken:
        print(b)
    if broken:
        print(f"links: {len(broken)} of {checked} relative links in {len(files)} files are broken")
        return 1
    print(f"links: {checked} relative links in {len(files)} files resolve")
    return 0


# ---- runnable blocks ---------------------------------------------------------------------------------------

class Block:
    def __init__(self, line: int, script: str, expected: list[str] | None):
        self.line, self.script, self.expected = line, script, expected

    @property
    def first_line(self) -> str:
        for line in self.script.split("\n"):
            if line.strip():
                return line.strip()
        return "(empty)"


def runnable_blocks(text: str) -> list[Block]:
    """The `sh runnable` blocks of a guide, each with the `text output` block that follows it, if one does."""
    lines = text.split("\n")
    blocks, i = [], 0

    def read_fence(start):  # -> (info, body lines, index after the closing fence)
        m = FENCE.match(lines[start])
        fence, body, j = m.group(1), [], start + 1
        while j < len(lines):
            c = FENCE.match(lines[j])
            if c and c.group(1)[0] == fence[0] and len(c.group(1)) >= len(fence) and not c.group(2):
                return m.group(2), body, j + 1
            body.append(lines[j])
            j += 1
        return m.group(2), body, j

    while i < len(lines):
        if not FENCE.match(lines[i]):
            i += 1
            continue
        info, body, after = read_fence(i)
        if info.split() == ["sh", "runnable"]:
            expected, j = None, after
            while j < len(lines) and not lines[j].strip():
                j += 1
            if j < len(lines) and FENCE.match(lines[j]):
                out_info, out_body, out_after = read_fence(j)
                if out_info.split() == ["text", "output"]:
                    expected, after = out_body, out_after
            blocks.append(Block(i + 1, "\n".join(body) + "\n", expected))
        i = after
    return blocks


def normalize(line: str) -> str:
    return " ".join(line.split())


def shape_pattern(quoted: str) -> re.Pattern:
    parts = NUMBER.split(normalize(quoted))
    return re.compile("".join(r"\d+(?:[.,]\d+)*" if k % 2 else re.escape(p) for k, p in enumerate(parts)))


def missing_lines(expected: list[str], output: str) -> list[str]:
    actual = [normalize(line) for line in output.split("\n")]
    missing = []
    for q in expected:
        s = q.strip()
        if not s or not s[0].isalpha():
            continue
        pat = shape_pattern(s)
        if not any(pat.fullmatch(a) for a in actual):
            missing.append(normalize(s))
    return missing


def scratch_copy(root: Path) -> Path:
    try:
        listing = subprocess.run(["git", "-C", str(root), "ls-files", "-z"], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, check=False)
    except OSError as e:
        raise UsageError(f"cannot run git: {e.strerror}")
    if listing.returncode != 0:
        raise UsageError(f"{root} is not a git checkout (git ls-files failed)")
    scratch = Path(tempfile.mkdtemp(prefix="lifeline docs "))
    made = set()
    for name in listing.stdout.decode("utf-8", "surrogateescape").split("\0"):
        if not name:
            continue
        src, dst = root / name, scratch / name
        if not (src.is_symlink() or src.is_file()):
            continue  # deleted in the work tree, or a submodule: not part of the copy
        if dst.parent not in made:
            dst.parent.mkdir(parents=True, exist_ok=True)
            made.add(dst.parent)
        if src.is_symlink():
            os.symlink(os.readlink(src), dst)
        else:
            shutil.copyfile(src, dst)
            shutil.copymode(src, dst)
    if (root / "build").exists() and not (scratch / "build").exists():
        os.symlink(root / "build", scratch / "build")
    return scratch


def run_block(block: Block, cwd: Path, timeout_s: float) -> tuple[bool, str, str, float]:
    """(passed, why not, output, seconds)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LIFELINE_")}
    t0 = time.monotonic()
    proc = subprocess.Popen(["bash", "-e", "-o", "pipefail", "-c", block.script], cwd=cwd, env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        raw, _ = proc.communicate(timeout=timeout_s)
        timed_out = False
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        raw, _ = proc.communicate()
        timed_out = True
    seconds = time.monotonic() - t0
    output = raw.decode("utf-8", "replace")
    if timed_out:
        return False, f"no exit within {timeout_s:g} s", output, seconds
    if proc.returncode != 0:
        return False, f"exit status {proc.returncode}", output, seconds
    if block.expected is not None:
        missing = missing_lines(block.expected, output)
        if missing:
            return False, "output lacks the quoted line(s): " + "; ".join(f"'{m}'" for m in missing), output, seconds
    return True, "", output, seconds


def find_guide(root: Path, guide: str) -> Path:
    p = Path(guide)
    for candidate in ([p] if p.is_absolute() else [root / p, p]):
        if candidate.is_file():
            return candidate.resolve()
    raise UsageError(f"no guide '{guide}' (looked in {root})")


def cmd_run(root: Path, guide_arg: str, timeout_s: float) -> int:
    guide = find_guide(root, guide_arg)
    shown = os.path.relpath(guide, root) if guide.is_relative_to(root.resolve()) else str(guide)
    blocks = runnable_blocks(guide.read_text(encoding="utf-8", errors="replace"))
    if not blocks:
        print(f"{shown}: no `sh runnable` block: a guide test that ran nothing is a failure")
        return 1
    scratch = scratch_copy(root)
    failed, t_all = 0, time.monotonic()
    try:
        for b in blocks:
            passed, why, output, seconds = run_block(b, scratch, timeout_s)
            print(f"{'ok  ' if passed else 'FAIL'} {shown}:{b.line}  {b.first_line}  ({seconds:.1f} s)", flush=True)
            if not passed:
                failed += 1
                print(f"     {why}; the output's last lines:")
                for line in output.rstrip("\n").split("\n")[-OUTPUT_TAIL_LINES:]:
                    print(f"     | {line}")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"{shown}: {len(blocks)} runnable blocks, {len(blocks) - failed} ok, {failed} failed "
          f"({time.monotonic() - t_all:.1f} s)")
    return 1 if failed else 0


def main(argv: list[str]) -> int:
    parser = Parser(prog="check_docs.py", add_help=True)
    sub = parser.add_subparsers(dest="mode")
    p_links = sub.add_parser("links")
    p_links.add_argument("--root", default=str(DEFAULT_ROOT))
    p_run = sub.add_parser("run")
    p_run.add_argument("guide")
    p_run.add_argument("--root", default=str(DEFAULT_ROOT))
    p_run.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S)
    for p in (p_links, p_run):
        p.error = parser.error
    args = parser.parse_args(argv)
    if args.mode is None:
        parser.error("give a mode, links or run")
    root = Path(args.root)
    if not root.is_dir():
        raise UsageError(f"--root '{args.root}' is not a folder")
    if args.mode == "links":
        return cmd_links(root.resolve())
    if not args.timeout > 0:
        raise UsageError(f"--timeout must be a positive number of seconds, not {args.timeout:g}")
    return cmd_run(root.resolve(), args.guide, args.timeout)


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except UsageError as e:
        print(f"check_docs.py: {e}", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:
        sys.exit(130)
    except OSError as e:
        print(f"check_docs.py: {e.filename or ''}: {e.strerror}", file=sys.stderr)
        sys.exit(2)
