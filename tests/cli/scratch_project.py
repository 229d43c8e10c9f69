"""A scratch project for the CLI tests of upstream-open bugs, upstream variants, triage and fuzz jobs."""
import json
import shutil
import tempfile
import unittest
from pathlib import Path

from support import TRIAGE, PY, ROOT, run, run_apart


# A copy of cli/ in a temporary project root whose "fuzz target" is a script: each input's first word
# says what it does when replayed, and run with libFuzzer's -artifact_prefix= it writes the artifacts listed
# in fake-artifacts.json beside it (or, with a file fake-idle there, runs nothing; with fake-interrupt, ends
# as a fork-mode job whose child was interrupted: only a child's ERROR line, no stack; with fake-exit-leak,
# ends with LeakSanitizer's report of the whole run after "Done", then, as libFuzzer's death handler does
# when that report aborts, writes the current (empty) unit as an artifact; exit status 1). It records the
# LIFELINE_GUARD_COUNTS it got (fake-guard-env.json) and copies fake-guards.bin there when that exists.
# With -fork=N it starts its job as libFuzzer's fork mode does: its argv without -fork, a corpus in $TMPDIR and a `> log`, joined
# with blanks and run by system() (compiler-rt FuzzerFork.cpp, FuzzerCommand.h, FuzzerUtilLinux.cpp). The
# job records its argv and, for each path in it, the path it names (fake-job.json); with a file fake-fork-sleeps
# beside it, fork mode then sleeps its -max_total_time, as a job that runs its time does; -merge=1 and
# -minimize_crash=1 go through system() too. Nothing here needs a built lane.

FAKE_TARGET = r"""#!/usr/bin/python3
import json, os, shutil, sys

ASSERT = '''fake_target: /x/ggml/src/ggml-alloc.c:975: ggml_gallocr_init_tensor: Assertion `tensor_alloc->addr.offset == SIZE_MAX' failed.
==77== ERROR: libFuzzer: deadly signal
    #0 0x560001 in __sanitizer_print_stack_trace (/b/fake_target+0xe9d01)
    #1 0x560002 in fuzzer::PrintStackTrace() (/b/fake_target+0x5c658)
    #2 0x7f0003  (/lib/x86_64-linux-gnu/libc.so.6+0x3c04f)
    #3 0x7f0004 in raise signal/../sysdeps/posix/raise.c:26:13
    #4 0x7f0005 in abort stdlib/abort.c:79:7
    #5 0x7f0006 in __assert_fail assert/assert.c:103:3
    #6 0x560007 in ggml_gallocr_init_tensor /x/ggml/src/ggml-alloc.c:975:13
    #7 0x560008 in ggml_gallocr_alloc_graph /x/ggml/src/ggml-alloc.c:1081:9
'''
UAF = '''==77==ERROR: AddressSanitizer: heap-use-after-free on address 0x602000000010 at pc 0x560001 bp 0x7ffd sp 0x7ffd
READ of size 1 at 0x602000000010 thread T0
    #0 0x560001 in lifeline::fake::FakeUse(int) /w/fake.cc:12:5
    #1 0x560002 in LLVMFuzzerTestOneInput /w/fake.cc:30:3
'''

EXIT_LEAK = '''=================================================================
==77==ERROR: LeakSanitizer: detected memory leaks

Direct leak of 48 byte(s) in 2 object(s) allocated from:
    #0 0x560001 in operator new(unsigned long) (/b/fake_target+0x15bdbd)
    #1 0x560002 in lifeline::fake::KeepFrame(int) /w/fake.cc:41:10
    #2 0x560003 in LLVMFuzzerTestOneInput /w/fake.cc:30:3

SUMMARY: AddressSanitizer: 48 byte(s) leaked in 2 allocation(s).
'''

def crash(report):
    sys.stderr.write(report)
    sys.exit(1)

args = sys.argv[1:]
here = os.path.dirname(os.path.realpath(__file__))
fork = [a for a in args if a.startswith("-fork=")]
if fork:
    json.dump(args, open(os.path.join(here, "fake-argv.json"), "w"))
    tmp = os.path.join(os.environ.get("TMPDIR", "/tmp"), "libFuzzerTemp.FuzzWithFork%d.dir" % os.getpid())
    os.makedirs(os.path.join(tmp, "C1"))
    job = [sys.argv[0]] + [a for a in args if a != fork[0]] + ["-features_dir=" + tmp + "/F1", tmp + "/C1"]
    os.system(" ".join(job) + " > " + tmp + "/1.log 2>&1")
    log = open(tmp + "/1.log").read() if os.path.exists(tmp + "/1.log") else ""
    runs = sum(int(l.split()[-1]) for l in log.splitlines() if l.startswith("stat::number_of_executed_units:"))
    print("INFO: %s: fuzzing in separate process(s)" % fork[0])
    # As libFuzzer's: the job's own exec/s (0: it crashed within its first second), the time since the start.
    print("#%d: cov: 3 ft: 3 corp: 7 exec/s 0 oom/timeout/crash: 0/0/0 time: 2s job: 1 dft_time: 0" % runs)
    print("\n".join(l for l in log.splitlines() if "ERROR:" in l))
    shutil.rmtree(tmp)
    if os.path.exists(os.path.join(here, "fake-fork-sleeps")):  # fork mode runs its time (-max_total_time)
        import time
        time.sleep(int(next(a.split("=", 1)[1] for a in args if a.startswith("-max_total_time="))))
    if os.path.exists(os.path.join(here, "fake-interrupt")):  # a child got SIGINT: fork mode passes it on
        print("==9== ERROR: libFuzzer: deadly signal\n==9== libFuzzer: run interrupted; exiting")
        sys.exit(72)
    sys.exit(0)
prefix = next((a.split("=", 1)[1] for a in args if a.startswith("-artifact_prefix=")), None)
if "-minimize_crash=1" in args:
    if "-fake_minimize_inner=1" not in args:  # libFuzzer runs each attempt through system() too
        if os.environ.get("FAKE_MINIMIZE_MKDIR"):  # something else makes this folder meanwhile
            os.mkdir(os.environ["FAKE_MINIMIZE_MKDIR"])
        sys.exit(os.system(" ".join([sys.argv[0]] + args + ["-fake_minimize_inner=1"])) >> 8)
    # The inner attempt: the input's first word is the smallest input that does the same.
    out = next(a.split("=", 1)[1] for a in args if a.startswith("-exact_artifact_path="))
    words = open([a for a in args if not a.startswith("-")][-1]).read().split()
    open(out, "w").write(words[0] if words else "")
    sys.exit(0)
if "-merge=1" in args:
    if "-merge_inner=1" not in args:  # the outer process: the inner one through system(), as libFuzzer does
        sys.exit(os.system(" ".join([sys.argv[0]] + args + ["-merge_inner=1"])) >> 8)
    # The inner process: inputs of the other folders that do not crash go into the first, named by their
    # SHA-1 (each adds coverage here); one that crashes is written to the artifact prefix (default: the
    # current folder), and libFuzzer goes on past it.
    import hashlib
    dirs = [a for a in args if not a.startswith("-")]
    for d in dirs[1:]:
        for name in sorted(os.listdir(d)):
            data = open(os.path.join(d, name), "rb").read()
            sha = hashlib.sha1(data).hexdigest()
            dest = (prefix if prefix is not None else "./") + "crash-" + sha if data.split()[:1] in (
                [b"uaf"], [b"assert"]) else os.path.join(dirs[0], sha)
            open(dest, "wb").write(data)
    print("MERGE-OUTER: done")
    sys.exit(0)
if prefix is not None:
    if any(a.startswith("-features_dir=") for a in args):  # a fork-mode job
        paths = [a.split("=", 1)[-1] for a in args if a.startswith(("/", "-artifact_prefix=", "-dict="))]
        json.dump({"argv": [sys.argv[0]] + args, "TMPDIR": os.environ.get("TMPDIR"),
                   "names": {p: os.path.realpath(p) for p in [sys.argv[0]] + paths}},
                  open(os.path.join(here, "fake-job.json"), "w"))
    else:
        json.dump(args, open(os.path.join(here, "fake-argv.json"), "w"))
    counts = os.environ.get("LIFELINE_GUARD_COUNTS")
    json.dump(counts, open(os.path.join(here, "fake-guard-env.json"), "w"))
    if counts and os.path.exists(os.path.join(here, "fake-guards.bin")):  # a target with guards
        shutil.copyfile(os.path.join(here, "fake-guards.bin"), counts)
    for p in [os.path.dirname(prefix)] + [a for a in args if a.startswith("/")]:
        if not os.path.exists(p):
            print('ERROR: The required directory "%s" does not exist' % p)
            sys.exit(1)
    if os.path.exists(os.path.join(here, "fake-idle")):
        print("ERROR: fake_target: told to run nothing")
        sys.exit(0)
    if os.path.exists(os.path.join(here, "fake-exit-leak")):  # as libFuzzer with abort_on_error=1
        print("#2\tINITED cov: 3 ft: 3 corp: 1/1b exec/s: 0 rss: 30Mb", flush=True)
        print("Done 42 runs in 1 second(s)\nstat::number_of_executed_units: 42", flush=True)
        sys.stderr.write(EXIT_LEAK)
        sys.stderr.write("==77== ERROR: libFuzzer: deadly signal\n")
        open(prefix + "crash-da39a3ee5e6b4b0d3255bfef95601890afd80709", "w").close()
        print("Test unit written to " + prefix + "crash-da39a3ee5e6b4b0d3255bfef95601890afd80709", flush=True)
        sys.exit(1)
    arts = json.load(open(os.path.join(here, "fake-artifacts.json")))
    print("#2\tINITED cov: 3 ft: 3 corp: 1/1b exec/s: 0 rss: 30Mb", flush=True)
    for name, word in arts.items():
        with open(prefix + name, "w") as f:
            f.write(word)
    print("stat::number_of_executed_units: 42")
    first = next(iter(arts.values()), None)  # libFuzzer prints the report of the crash it stopped on
    if first == "assert" or (first == "guarded-assert" and
                             "fake-guarded" in os.environ.get("LIFELINE_UNGUARD", "").split(",")):
        crash(ASSERT)
    sys.exit(1 if arts else 0)

switch = os.environ.get("LIFELINE_REINTRODUCE")
if "-help=1" in args:
    print("Usage: fake_target [-flag1=val1 [-flag2=val2 ...] ] [dir1 [dir2 ...] ]")
    sys.exit(0)
inputs = [a for a in args if not a.startswith("-")]  # as in libFuzzer, an argument led by '-' is a flag
if not inputs:  # libFuzzer fuzzes from scratch and writes what it finds into the current folder
    open("crash-from-scratch", "w").write("other")
    crash(UAF.replace("FakeUse", "ScratchUse"))
words = open(inputs[-1]).read().split()
word = words[0] if words else ""
if word == "patched-assert":  # an upstream build: no switches; crashes only when built with the patch
    if switch:
        print("fake_target: this upstream build has no switch " + switch)
        sys.exit(2)
    if os.path.basename(sys.argv[0]).endswith("_patched"):
        crash(ASSERT)
    sys.exit(0)
if word == "guarded-assert":  # an upstream-open finding with a guard: reproduces only with the guard off
    if "fake-guarded" in os.environ.get("LIFELINE_UNGUARD", "").split(","):
        crash(ASSERT)
    sys.exit(0)
if switch and switch != "fake-fixed-bug":
    print("fake_target: unknown bug id " + switch)
    sys.exit(2)
if word == "assert":
    crash(ASSERT)
if word == "uaf" or (word == "switch-uaf" and switch == "fake-fixed-bug"):
    crash(UAF)
if word == "other":
    crash(UAF.replace("FakeUse", "OtherUse"))
if word == "silent":
    sys.exit(1)
if word == "flaky":  # the assert on every other run
    count = inputs[-1] + ".runs"
    n = int(open(count).read()) + 1 if os.path.exists(count) else 1
    open(count, "w").write(str(n))
    if n % 2:
        crash(ASSERT)
sys.exit(0)
"""

ASSERT_SIG = {"type": "assert", "frame": "ggml_gallocr_init_tensor"}
UAF_SIG = {"type": "heap-use-after-free", "frame": "FakeUse"}


def write_bug(d: Path, doc: dict, files: dict) -> Path:
    d.mkdir(parents=True)
    for name, text in files.items():
        (d / name).write_text(text)
    (d / "bug.json").write_text(json.dumps(dict({"id": d.name, "title": "t", "upstream": []}, **doc)))
    return d


class ScratchProject(unittest.TestCase):
    ROOT_NAME = "root"  # the checkout's folder name

    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp())
        self.root = self.tmp / self.ROOT_NAME
        shutil.copytree(ROOT / "cli", self.root / "cli",
                        ignore=shutil.ignore_patterns("__pycache__"))
        (self.root / "core").mkdir()
        (self.root / "core" / "bug_list.def").write_text('LIFELINE_BUG(kFakeFixedBug, "fake-fixed-bug")\n')
        (self.root / "core" / "guard_list.def").write_text('LIFELINE_GUARD(kFakeGuarded, "fake-guarded")\n'
                                                           'LIFELINE_GUARD(kFakeOther, "fake-other-guard")\n')
        (self.root / "targets").mkdir()
        (self.root / "corpus").mkdir()
        (self.root / "targets" / "fake_target.cc").write_text("")
        self.fake = self.install_fake(self.root / "build" / "fuzz" / "targets" / "fake_target")
        self.unpatched = self.install_fake(self.root / "build" / "asan" / "upstream" / "fake_target_upstream")
        self.patched = self.install_fake(self.root / "build" / "asan" / "upstream" / "fake_target_upstream_patched")
        self.artifacts({})
        self.upstream_open = write_bug(self.root / "repro" / "fake-upstream-open", {
            "status": "upstream-open", "triage": TRIAGE, "target": "fake_target",
            "reproducers": [{"input": "in", "expect": {"asan": ASSERT_SIG, "fuzz": ASSERT_SIG}}]}, {"in": "assert"})
        # A fixed bug forward-ported into upstream: its variant's expectation (an assert) must not make triage
        # call the upstream-open assert a known fixed bug.
        self.fixed = write_bug(self.root / "repro" / "fake-fixed-bug", {
            "target": "fake_target",
            "reproducers": [{"input": "in", "expect": {"asan": UAF_SIG}}],
            "upstream_variant": {"target": "fake_target_upstream", "source": "ggml 0.25.1",
                                 "patch": "reintroduce.patch",
                                 "reproducers": [{"input": "variant-in", "expect": {"asan": ASSERT_SIG}}]}},
            {"in": "switch-uaf", "variant-in": "patched-assert", "reintroduce.patch": "--- a/x\n+++ b/x\n"})

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def install_fake(self, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(FAKE_TARGET)
        path.chmod(0o755)
        return path

    def artifacts(self, arts: dict):
        (self.fake.parent / "fake-artifacts.json").write_text(json.dumps(arts))

    def cli(self, *args, cwd=None, env=None):
        return run([PY, self.root / "cli" / "lifeline_main.py", *args], cwd=cwd, env=env)

    def cli_apart(self, *args, cwd=None, env=None):
        """(exit status, stdout, stderr)."""
        return run_apart([PY, self.root / "cli" / "lifeline_main.py", *args], cwd=cwd, env=env)

    def input(self, word: str, name: str = None) -> Path:
        d = self.tmp / "inputs"
        d.mkdir(exist_ok=True)
        p = d / (name or f"crash-{word}")
        p.write_text(word)
        return p
