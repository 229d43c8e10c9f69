"""The crash parser on saved reports (`lifeline classify`) and on a command's output (`lifeline
expect-crash`, the lane self-tests: the command must fail with the given crash)."""
from __future__ import annotations

import json
import subprocess

from . import crash as crashmod
from . import repro
from .usage import UsageError, input_file


def cmd_classify(args) -> int:
    rc = 0
    for f in args.files:
        p = input_file("classify", "report", f)
        try:
            text = p.read_text(errors="replace")
        except OSError as e:
            raise UsageError(f"lifeline classify: report '{f}' cannot be read ({e.strerror})")
        c = crashmod.parse(text)
        print(json.dumps({"file": f, "crash": c.to_json() if c else None}))
        rc |= 0 if c else 1
    return rc


def cmd_expect_crash(args) -> int:
    if not (args.frame or args.message):
        raise UsageError("lifeline expect-crash: give --frame or --message")
    if not args.launcher:
        raise UsageError("lifeline expect-crash: give the command after --")
    try:
        proc = subprocess.run(args.launcher, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              timeout=repro.RUN_TIMEOUT_S)
    except FileNotFoundError:
        raise UsageError(f"lifeline expect-crash: '{args.launcher[0]}' does not exist")
    except OSError as e:
        raise UsageError(f"lifeline expect-crash: cannot run {args.launcher[0]} ({e.strerror})")
    except subprocess.TimeoutExpired as e:
        print(f"FAIL expected a crash: the command ran past {repro.RUN_TIMEOUT_S} s")
        print(repro.tail((e.stdout or b"").decode("utf-8", "replace")))
        return 1
    out = proc.stdout.decode("utf-8", "replace")
    found = crashmod.parse(out)
    expect = {"type": args.type}
    if args.frame:
        expect["frame"] = args.frame
    if args.message:
        expect["message"] = args.message
    ok, why = crashmod.matches(found, expect)
    if ok and proc.returncode == 0:
        ok, why = False, "the process exited 0 after its report (findings must be fatal)"
    if ok:
        print(f"PASS {found.signature}")
        return 0
    print(f"FAIL expected {expect}: {why}")
    print(repro.tail(out))
    return 1
