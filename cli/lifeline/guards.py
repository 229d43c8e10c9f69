"""The guard counter file a target writes under LIFELINE_GUARD_COUNTS=<file> (core/guards.h, core/guards.cc):
how many inputs its processes ran and in how many each guard fired. `lifeline fuzz` sets it per target job
and reads it here.

Layout, little-endian: bytes 0..7 "LLGUARD1"; 8..15 uint64 inputs; 16..23 uint64 n; then n entries of 64
bytes: char id[56] (the guard id, NUL-padded), uint64 count (inputs in which that guard fired at least once).
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path

MAGIC = b"LLGUARD1"
HEADER = struct.Struct("<8sQQ")
ENTRY = struct.Struct("<56sQ")
ID_BYTES = 56
MAX_ENTRIES = 1024  # the C++ side keeps one bit per guard in a uint32_t; anything near this is garbage


class GuardFileError(ValueError):
    """The file is there but is not a guard counter file of this layout (the message says how)."""


@dataclass
class GuardCounts:
    inputs: int
    fired: dict = field(default_factory=dict)  # guard id -> inputs it fired in, in the file's order

    def to_json(self) -> dict:
        return {"inputs": self.inputs, "fired": dict(self.fired)}


def parse(data: bytes) -> GuardCounts:
    """The counts in `data`; GuardFileError when it is not exactly the layout above."""
    if len(data) < HEADER.size:
        raise GuardFileError(f"{len(data)} bytes, shorter than the {HEADER.size}-byte header")
    magic, inputs, n = HEADER.unpack_from(data, 0)
    if magic != MAGIC:
        raise GuardFileError(f"magic {magic!r}, not {MAGIC!r}")
    if n > MAX_ENTRIES:
        raise GuardFileError(f"{n} entries claimed (more than {MAX_ENTRIES})")
    want = HEADER.size + ENTRY.size * n
    if len(data) != want:
        raise GuardFileError(f"{len(data)} bytes, but {n} entries make {want}")
    fired: dict[str, int] = {}
    for i in range(n):
        raw, count = ENTRY.unpack_from(data, HEADER.size + ENTRY.size * i)
        name, nul, pad = raw.partition(b"\0")
        if not name or not nul or pad.strip(b"\0"):
            raise GuardFileError(f"entry {i}: its id is not a NUL-padded name of at most {ID_BYTES - 1} bytes")
        try:
            gid = name.decode("ascii")
        except UnicodeDecodeError:
            raise GuardFileError(f"entry {i}: its id is not ASCII") from None
        if not gid.isprintable():
            raise GuardFileError(f"entry {i}: its id holds control characters")
        if gid in fired:
            raise GuardFileError(f"entry {i}: guard {gid} listed twice")
        if count > inputs:
            raise GuardFileError(f"entry {i}: {gid} fired in {count} inputs of {inputs}")
        fired[gid] = count
    return GuardCounts(inputs, fired)


def read(path: Path) -> GuardCounts | None:
    """The counts in `path`; None when there is no such file (a target without guards, or one that ran
    nothing); GuardFileError when it cannot be read or is not the layout."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        return None
    except OSError as e:
        raise GuardFileError(f"cannot read it ({e.strerror})") from None
    return parse(data)


def build(inputs: int, fired: list[tuple[str, int]]) -> bytes:
    """The bytes of a guard counter file (tests, and the layout written out once more)."""
    out = HEADER.pack(MAGIC, inputs, len(fired))
    for gid, count in fired:
        out += ENTRY.pack(gid.encode("ascii"), count)
    return out


def summary_json(path: Path) -> dict | None:
    """summary.json's "guards" of a job: None without a file, {"file", "inputs", "fired"} or {"file",
    "unreadable": why}."""
    try:
        counts = read(path)
    except GuardFileError as e:
        return {"file": str(path), "unreadable": str(e)}
    if counts is None:
        return None
    return dict({"file": str(path)}, **counts.to_json())


def describe(g: dict | None) -> str | None:
    """One line for the screen: "guards: <id> 812/40210 inputs (2.0%), ..." (most often fired first), or
    None when the job wrote no counter file."""
    if g is None:
        return None
    if "unreadable" in g:
        return f"guards: {g['file']} is unreadable ({g['unreadable']})"
    inputs = g["inputs"]
    fired = sorted(((c, gid) for gid, c in g["fired"].items() if c), key=lambda x: (-x[0], x[1]))
    if not fired:
        return f"guards: none fired in {inputs} inputs"
    return "guards: " + ", ".join(f"{gid} {c}/{inputs} inputs ({100.0 * c / inputs:.1f}%)" for c, gid in fired)
