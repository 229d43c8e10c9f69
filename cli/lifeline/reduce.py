"""`lifeline reduce INPUT [--bug ID] [--target T] [--lane L] [--variant upstream] [--out FILE | --in-place]`:
delta debugging on the decoded program, not on the bytes.

The target (as the asan lane builds it: codecs are built there; llama_memory_differential as the fuzz lane does,
CODEC_LANE_OF) decodes the input (`<target> --program decode`,
harness/replay_main.cc) into its program as JSON
(harness/programs/common/codec.h), in which an operand that names an object another op made is that op's
"#<id>". The reducer edits the program and has the target encode each candidate back into an input
(`--program encode`), which is what runs, so every candidate is an ordinary input of the target and the
result decodes back to itself. A candidate the format cannot express (an op no longer legal where it
stands, an operand the model does not offer) is refused by the encoder and counts as uninteresting.

A candidate is interesting when it fails with the finding's signature:
  --bug ID     the signature bug.json records for the input (the reproducer whose file it is, else the
               first one listing the lane), run as its two-way test runs it: LIFELINE_REINTRODUCE=ID for a
               fixed bug, the guard off for an upstream-open one, the patched build for --variant upstream;
               the other side must hold too for every step kept (clean on fixed code, clean with every guard
               on, clean on the unpatched build)
  otherwise    the crash type and top frame of the input's own first run (or the digit-free wording of a
               check's message), as `promote` records them

Steps, until nothing changes: delete ops (ddmin over the ops, each deletion taking every op that names a
deleted one with it), then simplify each op's operands and the header toward defaults (false flags, small
numbers, fewer and smaller extents, the family's plainest types and kinds, fewer list elements). After each
step kept, the program is decoded afresh, so ids stay the ops' positions.

Prints the program's op count before and after and the reduced program's trace; writes the reduced input to
--out (default: INPUT.reduced), or over INPUT with --in-place. Exit 0 when the result still reproduces
(always: it is checked last), 1 when the input does not reproduce to begin with, 2 on bad arguments.
"""
from __future__ import annotations

import copy
import hashlib
import json
import re
import subprocess
import tempfile
from pathlib import Path
from typing import Callable, Optional

from . import crash as crashmod
from . import repro
from .bug_signature import signature_for_bug_json
from .bugs import BUG_ID, switch_env
from .paths import LANES, ROOT, source_targets
from .usage import UsageError

RUN_TIMEOUT_S = 120
CODEC_LANE = "asan"  # the lane whose targets serve --program (harness/CMakeLists.txt, LIFELINE_PROGRAM_CODEC)
# Targets the codec lane does not build, and the lane that serves their --program instead (harness/CMakeLists.txt:
# LIFELINE_LLAMA_CODEC; llama.cpp is built in the fuzz and tsan lanes only).
CODEC_LANE_OF = {"llama_memory_differential": "fuzz"}


def codec_lane(target: str) -> str:
    return CODEC_LANE_OF.get(target, CODEC_LANE)


REF = re.compile(r"^#-?\d+$")
# Operands a reducer leaves alone: what the op is, its id, the model's output, which parties a target has.
FIXED_KEYS = {"id", "op", "model", "format", "peers", "ops"}
# The plainest value of an operand that names a kind, per key: tried first when simplifying.
PLAIN = {
    "type": ["f32"], "dtype": ["float32"], "layout": ["contiguous"], "flavor": ["plain"], "fn": ["neg", "add"],
    "kernel": ["fill", "copy"], "via": ["__dlpack__"], "peer": ["numpy"], "param": [2.0], "value": [1.0, 2.0],
    "kind": ["wrong-name"],
    # llama programs (harness/programs/llama/codec.h): the plain model and cache, no decode flaw
    "arch": ["llama"], "flash_attn": ["auto"], "type_k": ["f16"], "type_v": ["f16"], "flaw": ["none"],
}


class Codec:
    """A target's `--program decode|encode`, run as the reproducer's runs are (same environment: guards
    change what capsule programs decode to)."""

    def __init__(self, binary: Path, env: dict, work: Path):
        # Encoding runs no program: no leak check at exit (LeakSanitizer stops the process to scan it, which is
        # most of a short run's time).
        self.binary, self.work = binary, work
        self.env = dict(env, ASAN_OPTIONS=(env.get("ASAN_OPTIONS", "") + ":detect_leaks=0").lstrip(":"),
                        LSAN_OPTIONS=(env.get("LSAN_OPTIONS", "") + ":detect_leaks=0").lstrip(":"))
        self._n = 0

    def decode(self, data: bytes) -> dict:
        path = self._file(data)
        proc = subprocess.run([str(self.binary), "--program", "decode", str(path)], env=self.env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=RUN_TIMEOUT_S)
        if proc.returncode != 0:
            raise UsageError(f"lifeline reduce: {self.binary.name} cannot decode its programs: "
                             f"{proc.stderr.decode('utf-8', 'replace').strip().splitlines()[-1:]}")
        return json.loads(proc.stdout)

    def encode(self, program: dict) -> tuple[Optional[bytes], str]:
        """The input whose program is `program`, or (None, why) when the format cannot express it."""
        self._n += 1
        src = self.work / f"candidate-{self._n}.json"
        out = self.work / f"candidate-{self._n}.bin"
        src.write_text(json.dumps(program))
        proc = subprocess.run([str(self.binary), "--program", "encode", str(src), str(out)], env=self.env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=RUN_TIMEOUT_S)
        src.unlink()
        if proc.returncode != 0:
            return None, proc.stderr.decode("utf-8", "replace").strip()
        data = out.read_bytes()
        out.unlink()
        return data, ""

    def _file(self, data: bytes) -> Path:
        self._n += 1
        p = self.work / f"input-{self._n}.bin"
        p.write_bytes(data)
        return p


class Oracle:
    """Whether an input is interesting: `bad` fails with `expect`, and `clean` (if any) runs clean."""

    def __init__(self, binary: Path, bad_env: dict, expect: dict, work: Path, launcher: list,
                 clean: Optional[tuple[Path, dict]] = None, what: str = ""):
        self.binary, self.bad_env, self.expect, self.work = binary, bad_env, expect, work
        self.launcher, self.clean, self.what = launcher, clean, what
        self.cache: dict[str, bool] = {}
        self.runs = 0

    def _run(self, binary: Path, env: dict, data: bytes) -> tuple[int, str]:
        self.runs += 1
        path = self.work / "run.bin"
        path.write_bytes(data)
        try:
            proc = subprocess.run(self.launcher + [str(binary), str(path)], env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, timeout=RUN_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return -1, "timeout"
        return proc.returncode, proc.stdout.decode("utf-8", "replace")

    def bad(self, data: bytes) -> tuple[bool, str]:
        rc, out = self._run(self.binary, self.bad_env, data)
        found = crashmod.parse(out)
        ok, why = crashmod.matches(found, self.expect)
        if ok and rc == 0:
            return False, "the report was printed but the process exited 0"
        return ok, why

    def is_clean(self, data: bytes) -> bool:
        if self.clean is None:
            return True
        binary, env = self.clean
        rc, out = self._run(binary, env, data)
        return rc == 0 and crashmod.parse(out) is None

    def __call__(self, data: bytes) -> bool:
        key = hashlib.sha1(data).hexdigest()
        if key not in self.cache:
            self.cache[key] = self.bad(data)[0] and self.is_clean(data)
        return self.cache[key]


# ---- the program as JSON: references and deletion --------------------------------------------------------

def refs_in(value) -> set[int]:
    """The op ids `value` names ("#<id>" strings), outside "id" and "model"."""
    out: set[int] = set()
    if isinstance(value, str):
        if REF.match(value):
            out.add(int(value[1:]))
    elif isinstance(value, list):
        for v in value:
            out |= refs_in(v)
    elif isinstance(value, dict):
        for k, v in value.items():
            if k not in ("id", "model"):
                out |= refs_in(v)
    return out


def without(program: dict, ids: set[int]) -> dict:
    """`program` without the ops `ids` and every op that names a deleted one (transitively)."""
    gone = set(ids)
    ops = program["ops"]
    changed = True
    while changed:
        changed = False
        for op in ops:
            if op["id"] not in gone and refs_in(op) & gone:
                gone.add(op["id"])
                changed = True
    out = dict(program)
    out["ops"] = [op for op in ops if op["id"] not in gone]
    return out


# ---- simplification ------------------------------------------------------------------------------------

def _plainer(key: str, value) -> list:
    """The plain values of `key` (PLAIN, plainest first) before `value` in that order: only strictly plainer
    ones, so that a simplification never undoes another."""
    plain = PLAIN.get(key, [])
    return plain[:plain.index(value)] if value in plain else list(plain)


def simpler(key: str, value) -> list:
    """Values simpler than `value` for operand `key`, simplest first: each strictly simpler than `value` (a
    total order per kind of value), so reduction always ends."""
    if isinstance(value, bool):
        return [False] if value else []
    if isinstance(value, int):
        out = []
        for v in (0, 1, value // 2, value - 1):
            if 0 <= v < value and v not in out:
                out.append(v)
        if value < 0:
            out += [0, 1]
        return out
    if isinstance(value, float):
        # Plain values first (in PLAIN's order), then smaller magnitudes.
        plain = _plainer(key, value)
        return plain + [v for v in (0.0, 1.0) if v not in plain and value not in PLAIN.get(key, [])
                        and abs(v) < abs(value)]
    if isinstance(value, str):
        if REF.match(value):
            return []
        if key in PLAIN:
            return _plainer(key, value)
        # Bytes handed over (a language): shorter.
        cands = ["", value[: len(value) // 2], value[:-1]] if value else []
        return [c for c in dict.fromkeys(cands) if len(c) < len(value)]
    return []


def variants(value, key: str = ""):
    """Every one-step simplification of a JSON value: an element of a list dropped, a simpler scalar, or the
    same within a list element or an object's operand (FIXED_KEYS excepted), simplest first."""
    if isinstance(value, list):
        for i in range(len(value)):
            yield value[:i] + value[i + 1:]
        for i, v in enumerate(value):
            for w in variants(v, key):
                yield value[:i] + [w] + value[i + 1:]
    elif isinstance(value, dict):
        for k, v in value.items():
            if k in FIXED_KEYS:
                continue
            for w in variants(v, k):
                d = dict(value)
                d[k] = w
                yield d
    else:
        yield from simpler(key, value)


# ---- the loop ---------------------------------------------------------------------------------------------

class Reducer:
    def __init__(self, codec: Codec, interesting: Callable[[bytes], bool], log: Callable[[str], None]):
        self.codec, self.interesting, self.log = codec, interesting, log
        self.tried = 0
        self.current: Optional[bytes] = None  # the input of the program kept so far

    def attempt(self, candidate: dict) -> Optional[tuple[dict, bytes]]:
        """The candidate, decoded afresh from its encoding, with its bytes, when it is interesting and not the
        input it came from (an edit of something the format does not read encodes to the same bytes: no step)."""
        self.tried += 1
        data, _ = self.codec.encode(candidate)
        if data is None or data == self.current or not self.interesting(data):
            return None
        self.current = data
        return self.codec.decode(data), data

    def delete_ops(self, program: dict, data: bytes) -> tuple[dict, bytes]:
        """ddmin over the ops: chunks of the ops deleted (with what names them), halving the chunks."""
        n = 2
        while len(program["ops"]) >= 1:
            ids = [op["id"] for op in program["ops"]]
            size = max(1, -(-len(ids) // n))
            chunks = [set(ids[i:i + size]) for i in range(0, len(ids), size)]
            for chunk in chunks:
                got = self.attempt(without(program, chunk))
                if got:
                    program, data = got
                    n = max(n - 1, 2)
                    break
            else:
                if size == 1:
                    break
                n = min(n * 2, len(ids))
        return program, data

    def simplify(self, program: dict, data: bytes) -> tuple[dict, bytes, bool]:
        """One pass over the header and each op, keeping the first simpler variant of each that reproduces."""
        changed = False
        for key in [k for k in program if k not in FIXED_KEYS]:
            for v in variants(program[key], key):
                got = self.attempt(dict(program, **{key: v}))
                if got:
                    program, data = got
                    changed = True
                    break
        i = 0
        while i < len(program["ops"]):
            op = program["ops"][i]
            for v in variants(op):
                candidate = copy.deepcopy(program)
                candidate["ops"][i] = v
                got = self.attempt(candidate)
                if got:
                    program, data = got
                    changed = True
                    break
            i += 1
        return program, data, changed

    def run(self, program: dict, data: bytes) -> tuple[dict, bytes]:
        self.current = data
        while True:
            before = json.dumps(program)
            program, data = self.delete_ops(program, data)
            self.log(f"reduce: {len(program['ops'])} ops after deleting ({self.tried} candidates so far)")
            program, data, changed = self.simplify(program, data)
            if not changed and json.dumps(program) == before:
                return program, data


def describe(program: dict) -> str:
    lines = []
    for op in program["ops"]:
        fields = {k: v for k, v in op.items() if k not in ("id", "op", "model")}
        model = op.get("model")
        text = f"#{op['id']} {op['op']} " + " ".join(f"{k}={json.dumps(v)}" for k, v in fields.items())
        lines.append(text.rstrip() + (f"   [{json.dumps(model)}]" if model else ""))
    return "\n".join(lines)


# ---- the command --------------------------------------------------------------------------------------------

VALGRIND = ["valgrind", "--tool=memcheck", "--error-exitcode=99", "--leak-check=full",
            "--show-leak-kinds=definite", "--errors-for-leak-kinds=definite", "--num-callers=40", "--quiet"]


def _codec_binary(binary: Path) -> Path:
    if not binary.is_file():
        lane = binary.parent.parent.name
        raise UsageError(f"lifeline reduce: {binary} is not built: programs are decoded and encoded by the "
                         f"{lane} lane's targets (cmake --preset {lane} && cmake --build --preset {lane})")
    return binary


def launcher_of(lane: str) -> list:
    """What the lane's tests run under (cmake/LifelineLane.cmake, LIFELINE_TEST_LAUNCHER)."""
    return VALGRIND if lane == "valgrind" else []


class AllOf:
    """Interesting for every oracle, cheapest (first) first."""

    def __init__(self, oracles: list):
        self.oracles = oracles
        self.what = ", ".join(o.what for o in oracles)
        self.cache: dict[str, bool] = {}

    @property
    def runs(self) -> int:
        return sum(o.runs for o in self.oracles)

    def bad(self, data: bytes) -> tuple[bool, str]:
        for o in self.oracles:
            ok, why = o.bad(data)
            if not ok:
                return False, f"{o.what}: {why}"
        return True, ""

    def __call__(self, data: bytes) -> bool:
        key = hashlib.sha1(data).hexdigest()
        if key not in self.cache:
            self.cache[key] = all(o(data) for o in self.oracles)
        return self.cache[key]


def _reproducer_for(bug: repro.Bug, reproducers: list, input_path: Path, lane: str,
                    gives: Callable[[dict], bool]) -> repro.Reproducer:
    """The reproducer whose file `input_path` is, else the first listing `lane` whose signature the input gives
    (`gives(expect)` runs it)."""
    for r in reproducers:
        if r.input.resolve() == input_path.resolve():
            if lane not in r.expect:
                raise UsageError(f"lifeline reduce: {input_path} is a reproducer of {bug.id} that lists no "
                                 f"expectation for lane '{lane}' (it lists {', '.join(sorted(r.expect))})")
            return r
    listing = [r for r in reproducers if lane in r.expect]
    if not listing:
        raise UsageError(f"lifeline reduce: no reproducer of {bug.id} lists lane '{lane}'")
    for r in listing:
        if gives(r):
            return r
    raise UsageError(f"lifeline reduce: {input_path} gives none of the signatures {bug.id} records for lane '{lane}'")


def oracle_for_bug(bug: repro.Bug, input_path: Path, lane: str, variant: Optional[str], work: Path,
                   only_lane: bool) -> tuple[Path, dict, AllOf]:
    """The binary and environment to decode with, and the oracle of the bug's two-way test for this input:
    in `lane` and, unless `only_lane`, in every other lane the reproducer lists whose build is there."""
    if variant:
        if bug.variant is None:
            raise UsageError(f"lifeline reduce: {bug.id} has no upstream_variant")
        target, reproducers = bug.variant.target, bug.variant.reproducers
    else:
        if not bug.reproducers:
            raise UsageError(f"lifeline reduce: {bug.id} ({bug.status}) has no reproducers of its own: reduce its "
                             "upstream variant (--variant upstream)")
        target, reproducers = bug.target, bug.reproducers
    def gives(r: repro.Reproducer) -> bool:  # the input, run as r's check runs it in `lane`
        binary, env, _ = side(lane, r)
        if not binary.is_file():
            raise UsageError(f"lifeline reduce: {binary} is not built (cmake --build --preset {lane})")
        return Oracle(binary, env, r.expect[lane], work, launcher_of(lane)).bad(input_path.read_bytes())[0]

    def side(ln: str, r: repro.Reproducer):
        """(binary that must fail, its environment, the clean side or None) of r's check in lane `ln`."""
        lane_dir = ROOT / "build" / ln
        binary = lane_dir / "targets" / target
        extra = dict(r.env)
        clean_env = switch_env(None, unguard=None, **extra)
        if variant and bug.variant.patch:
            # The patched build with the finding's guard off (as repro-check runs it), the unpatched one clean.
            return (lane_dir / "upstream-variants" / bug.id / target, switch_env(None, unguard=bug.guard, **extra),
                    (binary, clean_env))
        if bug.status in repro.UPSTREAM_STATUSES:
            return binary, switch_env(None, unguard=bug.guard, **extra), (binary, clean_env) if bug.guard else None
        return binary, switch_env(bug.id, unguard=None, **extra), (binary, clean_env)

    rep = _reproducer_for(bug, reproducers, input_path, lane, gives)
    lanes = [lane] + ([] if only_lane else [x for x in sorted(rep.expect) if x != lane])
    oracles = []
    for ln in lanes:
        binary = ROOT / "build" / ln / "targets" / target
        bad_binary, bad_env, clean = side(ln, rep)
        missing = [b for b in (binary, bad_binary) if not b.is_file()]
        if missing:
            if ln == lane:
                raise UsageError(f"lifeline reduce: {missing[0]} is not built (cmake --build --preset {ln})")
            print(f"reduce: lane {ln} is not built; the result is not checked there")
            continue
        oracles.append(Oracle(bad_binary, bad_env, rep.expect[ln], work, launcher_of(ln), clean,
                              what=f"{bug.id} in {ln}"))
    codec_binary, codec_env, _ = side(codec_lane(target), rep)
    return _codec_binary(codec_binary), codec_env, AllOf(oracles)


def cmd_reduce(args) -> int:
    input_path = Path(args.input)
    if not input_path.is_file():
        raise UsageError(f"lifeline reduce: '{args.input}' is not a file")
    if args.lane not in LANES:
        raise UsageError(f"lifeline reduce: unknown lane '{args.lane}' (known: {', '.join(LANES)})")
    if args.in_place and args.out:
        raise UsageError("lifeline reduce: --in-place and --out exclude each other")
    with tempfile.TemporaryDirectory(prefix="lifeline-reduce-") as tmp:
        work = Path(tmp)
        if args.bug:
            d = ROOT / "repro" / args.bug
            if not BUG_ID.fullmatch(args.bug) or not d.is_dir():
                raise UsageError(f"lifeline reduce: unknown bug id '{args.bug}' (no folder {d})")
            try:
                bug = repro.load(d)
            except repro.BugJsonError as e:
                raise UsageError(f"lifeline reduce: {e}")
            binary, env, oracle = oracle_for_bug(bug, input_path, args.lane, args.variant, work, args.only_lane)
        else:
            if not args.target:
                raise UsageError("lifeline reduce: name the target (--target) or the bug (--bug)")
            if args.target not in source_targets():
                raise UsageError(f"lifeline reduce: unknown target '{args.target}' (known: {', '.join(source_targets())})")
            binary = ROOT / "build" / args.lane / "targets" / args.target
            if not binary.is_file():
                raise UsageError(f"lifeline reduce: {binary} is not built (cmake --build --preset {args.lane})")
            env = switch_env(args.reintroduce)
            probe = Oracle(binary, env, {}, work, launcher_of(args.lane))
            rc, out = probe._run(binary, env, input_path.read_bytes())
            found = crashmod.parse(out)
            if found is None or rc == 0:
                print(f"reduce: {input_path} runs clean on {args.target}: nothing to keep while reducing")
                return 1
            expect = signature_for_bug_json(found.to_json())
            oracle = AllOf([Oracle(binary, env, expect, work, launcher_of(args.lane), what=json.dumps(expect))])
            binary = _codec_binary(ROOT / "build" / codec_lane(args.target) / "targets" / args.target)
        result = reduce_input(binary, env, oracle, input_path.read_bytes(), work, str(input_path))
        if result is None:
            return 1
        data, before, after, first_size = result
        out = input_path if args.in_place else Path(args.out or f"{input_path}.reduced")
        out.write_bytes(data)
        print(f"reduce: {before} -> {len(after['ops'])} ops, {first_size} -> {len(data)} bytes; wrote {out}")
        print(describe(after))
    return 0


def reduce_input(binary: Path, env: dict, oracle, data: bytes, work: Path, name: str):
    """(reduced input, ops before, the reduced program, the size of the input as its program encodes) of `data`,
    decoded and encoded by `binary` in `env`; None, said why, when the decoded program does not reproduce."""
    codec = Codec(binary, env, work)
    program = codec.decode(data)
    first, _ = codec.encode(program)
    if first is None or not oracle(first):
        ok, why = oracle.bad(first) if first is not None else (False, "its program does not encode")
        print(f"reduce: {name} does not reproduce {oracle.what} as its decoded program"
              f" ({why or 'the other side of the two-way test fails'})")
        return None
    before = len(program["ops"])
    print(f"reduce: {name}: {before} ops, reproducing {oracle.what}", flush=True)
    reducer = Reducer(codec, oracle, lambda m: print(m, flush=True))
    program, reduced = reducer.run(program, first)
    if not oracle(reduced):  # never: every step kept was checked; this is the last word
        print("reduce: the reduced input no longer reproduces (a flaky finding?); nothing written")
        return None
    print(f"reduce: {reducer.tried} candidates, {oracle.runs} runs")
    return reduced, before, program, len(first)


def reduce_for_promote(target: str, data: bytes, reintroduce: str, expect: dict) -> Optional[tuple[bytes, int, int]]:
    """`promote`'s reduction of a minimized crash: on the asan lane's `target` (the replay driver serves the
    codec), failing with `expect` when `reintroduce` is on and clean when it is off. (reduced input, ops before,
    ops after), or None when the asan lane is not built or the program does not reproduce."""
    binary = ROOT / "build" / "asan" / "targets" / target
    if not binary.is_file():
        print(f"promote: {binary} is not built: the input is kept as libFuzzer minimized it (no program reduction)")
        return None
    with tempfile.TemporaryDirectory(prefix="lifeline-reduce-") as tmp:
        work = Path(tmp)
        bad_env = switch_env(reintroduce, unguard=None)
        oracle = AllOf([Oracle(binary, bad_env, expect, work, [], (binary, switch_env(None, unguard=None)),
                               what=f"{reintroduce} (asan)")])
        result = reduce_input(binary, bad_env, oracle, data, work, "the minimized input")
        if result is None:
            return None
        reduced, before, program, _ = result
        return reduced, before, len(program["ops"])


def add_parser(sub) -> None:
    r = sub.add_parser("reduce", help="reduce an input's decoded program while its finding holds")
    r.add_argument("input")
    r.add_argument("--bug", help="the bug whose two-way test the result must keep passing (repro/<ID>/)")
    r.add_argument("--target", help="the target to run (without --bug)")
    r.add_argument("--reintroduce", help="without --bug: LIFELINE_REINTRODUCE for the runs")
    r.add_argument("--lane", default="asan", help="the lane whose binaries run (default asan)")
    r.add_argument("--variant", choices=["upstream"], help="reduce against the bug's upstream variant")
    r.add_argument("--only-lane", action="store_true", help="with --bug: check the result in --lane only, not in "
                   "every built lane the reproducer lists")
    r.add_argument("--out", help="where the reduced input goes (default INPUT.reduced)")
    r.add_argument("--in-place", action="store_true", help="write the reduced input over INPUT")
