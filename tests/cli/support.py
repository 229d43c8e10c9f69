"""What the CLI tests share: the project root, the interpreter the CLI runs on, and running a command."""
import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("LIFELINE_BUILD_DIR", ROOT / "build" / "asan"))
CLI = [str(ROOT / "lifeline")]
PY = "/usr/bin/python3"
# What an upstream-open finding's bug.json must say of its prior-art search (cli/lifeline/repro.py).
TRIAGE = {"date": "2026-11-26", "searched": ["issues corpus: the mechanism in words"]}


def run(cmd, cwd=None, env=None):
    p = subprocess.run([str(c) for c in cmd], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       errors="replace", cwd=cwd, env=env)
    return p.returncode, p.stdout


def run_apart(cmd, cwd=None, env=None):
    """(exit status, stdout, stderr) of cmd."""
    p = subprocess.run([str(c) for c in cmd], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       errors="replace", cwd=cwd, env=env)
    return p.returncode, p.stdout, p.stderr
