"""Bad arguments: UsageError is one line on stderr and exit status 2 (lifeline.main prints it)."""
import argparse
import os
from pathlib import Path


class UsageError(Exception):
    pass


def input_file(cmd: str, what: str, f: str, missing: str = "does not exist") -> Path:
    """The file `f` that `lifeline cmd` reads, as an absolute path; a UsageError says what else it is."""
    p = Path(f)
    if p.is_dir():
        raise UsageError(f"lifeline {cmd}: {what} '{f}' is a directory; give the files in it ('{f}/*')")
    if not p.exists():
        raise UsageError(f"lifeline {cmd}: {what} '{f}' {missing}")
    if not p.is_file():
        raise UsageError(f"lifeline {cmd}: {what} '{f}' is not a regular file")
    if not os.access(p, os.R_OK):
        raise UsageError(f"lifeline {cmd}: {what} '{f}' cannot be read (permission denied)")
    return p.absolute()


class Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2
        raise UsageError(f"{self.prog}: {message}")
