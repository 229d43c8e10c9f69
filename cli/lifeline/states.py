"""`lifeline coverage --states`: which (operation, state) pairs the inputs reach, against the pairs the model allows.

  lifeline coverage --states [TARGET...] [--corpus DIR...] [--inputs seeds,regression,repro] [--check]
                    [--build-dir DIR] [--no-build]

Every op a program decodes to acts on an object in some state of the family's model: a graph unbound, planned,
placed, mutated, evicted; a capsule consumed, or the only way to a tensor whose slot was dropped; a job queued,
started or cancelled (each model's StateOf names them; harness/programs/*/states*.txt lists them). The decoder
records the state it found each op's object in; `<target> --program states` prints the pairs of its inputs
(asan lane, where the codecs are built). Decoding is what fuzzing runs: an op decoded is an op executed, unless
an earlier one crashed.

The golden list of a family (harness/programs/<family>/states*.txt, `# format: <name>` on its first line) holds
one legal pair per line:

  OP STATE [only=TARGET,...] [not=TARGET,...] [gap=TARGET,...]

only/not: the targets whose allocator or peers allow the pair (default: every target of the family); gap: the
targets whose checked-in inputs (seeds and regression corpus) do not reach it. The report prints, per target
and op, the legal states reached and the ones never reached; a pair reached that the list does not hold is an
error (the model allows what the list says it does not: one of the two is wrong) and exits 1. --check (the
`unit.states` test) also fails when the gap marks are stale: a pair marked gap that the inputs reach, or a pair
not marked that they miss.
"""
from __future__ import annotations

import json
import subprocess
from collections import Counter
from pathlib import Path

from .coverage_inputs import repro_inputs, targets_and_sets
from .paths import ROOT, fuzz_targets
from .usage import UsageError

GOLDEN_GLOB = "harness/programs/*/states*.txt"
STATE_SETS = ("seeds", "regression", "repro")
DEFAULT_SETS = ("seeds", "regression")  # the checked-in inputs, which --check accounts for


def _err(msg: str) -> UsageError:
    return UsageError(f"lifeline coverage --states: {msg}")


class Golden:
    """One family's states*.txt."""

    def __init__(self, path: Path):
        self.path = path
        self.format = None
        self.pairs: list[tuple[str, str, dict]] = []  # (op, state, {"only": set, "not": set, "gap": set})
        for n, raw in enumerate(path.read_text().splitlines(), 1):
            line = raw.strip()
            if line.startswith("# format:"):
                self.format = line.partition(":")[2].strip()
                continue
            if not line or line.startswith("#"):
                continue
            words = line.split()
            if len(words) < 2:
                raise _err(f"{path}:{n}: a line is 'OP STATE [only=...] [not=...] [gap=...]', not '{line}'")
            marks = {"only": None, "not": set(), "gap": set()}
            for w in words[2:]:
                key, eq, value = w.partition("=")
                if not eq or key not in marks or not value:
                    raise _err(f"{path}:{n}: unknown mark '{w}' (only=, not=, gap= with target names)")
                marks[key] = set(value.split(","))
            self.pairs.append((words[0], words[1], marks))
        if not self.format:
            raise _err(f"{path}: no '# format: <name>' line")

    def legal(self, target: str) -> dict[tuple[str, str], bool]:
        """The pairs legal for `target`, each with whether it is marked a gap of target's checked-in inputs."""
        out = {}
        for op, state, m in self.pairs:
            if (m["only"] is not None and target not in m["only"]) or target in m["not"]:
                continue
            out[(op, state)] = target in m["gap"]
        return out


def goldens() -> dict[str, Golden]:
    out = {}
    for path in sorted(ROOT.glob(GOLDEN_GLOB)):
        g = Golden(path)
        out[g.format] = g
    return out


def _files(d: Path) -> list[Path]:
    return sorted(p for p in d.iterdir() if p.is_file()) if d.is_dir() else []


def input_files(target: str, sets: list[str], corpus: list[Path]) -> dict[str, list[Path]]:
    out = {}
    if "seeds" in sets:
        out["seeds"] = _files(ROOT / "corpus" / target)
    if "regression" in sets:
        out["regression"] = _files(ROOT / "corpus" / "regression" / target)
    if "repro" in sets:
        out["repro"] = sorted({f for f, _ in repro_inputs(target)})
    for d in corpus:
        sub = d / target / "corpus" if (d / target / "corpus").is_dir() else d / target if (d / target).is_dir() else d
        out[str(d)] = _files(sub)
    return out


def decode_states(binary: Path, files: list[Path]) -> tuple[str, Counter]:
    """The family's format and the (op, state) counts of `files`, decoded by `binary --program`."""
    fmt = json.loads(subprocess.run([str(binary), "--program", "decode", str(files[0])], capture_output=True,
                                    text=True, check=True).stdout)["format"]
    counts: Counter = Counter()
    for i in range(0, len(files), 500):  # argv stays short
        r = subprocess.run([str(binary), "--program", "states", *map(str, files[i:i + 500])], capture_output=True,
                           text=True)
        if r.returncode != 0:
            raise _err(f"{binary.name} --program states failed (exit {r.returncode}):\n{r.stderr[-2000:]}")
        for line in r.stdout.splitlines():
            op, _, state = line.partition("\t")
            counts[(op, state)] += 1
    return fmt, counts


def report(target: str, golden: Golden, counts: Counter, inputs: dict[str, int], check: bool) -> tuple[list[str], int]:
    legal = golden.legal(target)
    lines = [f"{target}: {golden.format} programs ({golden.path.relative_to(ROOT)}); inputs: "
             + ", ".join(f"{k} {v}" for k, v in inputs.items())]
    ops = sorted({op for op, _ in legal} | {op for op, _ in counts})
    width = max([len(o) for o in ops] + [2])
    lines.append(f"  {'op':<{width}}  reached/legal  never reached")
    for op in ops:
        states = [s for (o, s) in legal if o == op]
        reached = [s for s in states if counts[(op, s)]]
        missing = [s for s in states if not counts[(op, s)]]
        lines.append(f"  {op:<{width}}  {len(reached):>7}/{len(states):<5}  {', '.join(missing)}")
    n_reached = sum(1 for p in legal if counts[p])
    lines.append(f"  total: {n_reached}/{len(legal)} legal pairs reached")
    errors = 0
    for p, n in sorted(counts.items()):
        if p not in legal:
            lines.append(f"  ERROR: {p[0]} in state {p[1]} ({n}x) is not legal for {target} in {golden.path.name}: "
                         "the model allows it and the list does not; one of the two is wrong")
            errors += 1
    if check:
        for p, gap in sorted(legal.items()):
            if gap and counts[p]:
                lines.append(f"  STALE: {p[0]} {p[1]} is marked gap={target} and the inputs reach it ({counts[p]}x): "
                             "drop the mark")
                errors += 1
            elif not gap and not counts[p]:
                lines.append(f"  LOST: the inputs no longer reach {p[0]} {p[1]}, which the list says they do "
                             f"(mark it gap={target} only if that is meant)")
                errors += 1
    return lines, errors


def cmd_states(args) -> int:
    sets = targets_and_sets(args, DEFAULT_SETS, STATE_SETS, _err)
    corpus = [Path(d) for d in args.corpus or []]
    for d in corpus:
        if not d.is_dir():
            raise _err(f"--corpus '{d}' is not a directory")
    if args.check and (sorted(sets) != sorted(DEFAULT_SETS) or corpus):
        raise _err("--check accounts for the checked-in inputs: it takes no --corpus and no --inputs but "
                   + ",".join(DEFAULT_SETS))
    lane_dir = Path(args.build_dir).absolute() if args.build_dir else ROOT / "build" / "asan"
    if not args.no_build and not args.build_dir:
        from .build import configure_and_build, ensure_deps, ensure_upstream
        ensure_deps()
        ensure_upstream()
        if not configure_and_build("asan", targets=args.targets or None):
            return 1
    built = fuzz_targets(lane_dir)
    targets = args.targets or built
    if not targets:
        raise _err(f"no target binaries in {lane_dir}; build the asan lane first (drop --no-build)")
    by_format = goldens()
    errors = 0
    for t in targets:
        binary = lane_dir / "targets" / t
        if t not in built or not binary.is_file():
            raise _err(f"target '{t}' is not built in {lane_dir}")
        files = input_files(t, sets, corpus)
        everything = [f for fs in files.values() for f in fs]
        if not everything:
            raise _err(f"{t}: no input in the sets asked for ({', '.join(files) or 'none'})")
        fmt, counts = decode_states(binary, everything)
        if fmt not in by_format:
            raise _err(f"{t}: its programs are '{fmt}' and no {GOLDEN_GLOB} says '# format: {fmt}'")
        lines, e = report(t, by_format[fmt], counts, {k: len(v) for k, v in files.items()}, args.check)
        print("\n".join(lines) + "\n", flush=True)
        errors += e
    if errors:
        print(f"lifeline coverage --states: {errors} disagreement(s) between the inputs, the model and the lists")
        return 1
    return 0
