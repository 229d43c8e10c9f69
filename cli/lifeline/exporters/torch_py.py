"""A capsule program (harness/programs/capsule/codec.h, JSON) as a short standalone Python reproducer on PyTorch's
and NumPy's public API: what `lifeline export` writes for the findings of torch_capsule_lifecycle. The file
imports torch, numpy and the standard library only (ctypes, gc, struct, sys, weakref), no lifeline code and no
private torch API (no torch._neg_view, no torch._C): DLPack goes through Tensor.__dlpack__,
torch.utils.dlpack.to_dlpack, torch.from_dlpack and numpy.from_dlpack.

What each op becomes (the harness's side in brackets):
  create-array (torch)   a tensor made as torch_peer.py makes it, holding the producer pattern (PatternValue,
                         layers/interop/dlpack_types.cc) in the op's layout: contiguous `torch.tensor(...)`,
                         transposed and strided `torch.empty_strided(...)`, offset `set_` on a longer storage,
                         so the tensor is a root (no view base) and a weak reference to it is exact. Flavors:
                         conj `t.conj()`; requires-grad `requires_grad_()`; neg by the public route
                         `torch.complex(zeros_like(v), -v).conj().imag` (its values are v, its memory holds -v,
                         is_neg() is set), which exists for float32 and float16 only: neg of bfloat16, int8 or
                         complex64 has no public construction and is refused (ValueError). A conj or neg tensor
                         is checked to carry its bit, else the file exits with status 1 and "setup: ..." (never
                         an AssertionError: a construction that stopped working must not pass for the finding)
  create-array (numpy)   `np.array(...)` in the op's layout (order="F", a strided or offset view); read-only on
                         request
  create-tensor          this layer's producer [layers/interop/dlpack_producer.cc] rebuilt with ctypes: a
                         `Producer` whose __dlpack__ hands out a DLManagedTensor (dlpack.h 0.6's ABI) in a
                         PyCapsule named "dltensor", with the op's strides and, for the offset layout,
                         `byte_offset` = 3 elements and `data` at the start of the storage
  export-tensor, export-array    `producer.__dlpack__()`, `x.__dlpack__()`, `torch.utils.dlpack.to_dlpack(x)`
  peer-from-tensor, peer-from-array, peer-from-capsule    `torch.from_dlpack(...)`, `np.from_dlpack(...)` (a bare
                         capsule reaches NumPy 1.24 through a small holder object with __dlpack__)
  peer-malformed         the producer's export with one thing wrong (capsule name, CUDA device, opaque dtype,
                         NULL deleter) handed to the peer's from_dlpack
  read                   the object's values against the producer's logical values (the value oracle)
  drop, collect          `del name`, `gc.collect()`
This layer's consumer (import-capsule, import-from-tensor, import-from-array, view-buffer, make-cycle,
malformed) has no public equivalent: generate() raises ValueError (Unexportable) naming the op.

Checks, as the harness makes them (executor.cc) where a maintainer can see them: every object an import makes
is compared with the producer's logical values at once (`expect(what, want, got)`: prints expected and actual,
then asserts); an op the lifetime model predicts to succeed that is refused with BufferError or RuntimeError
ends the script with status 0 (the DLPack protocol lets any party refuse); an op it predicts to be refused
may be refused, and if it succeeds, what it made must hold the logical values (or, for a consumed capsule and
a malformed export, it must be refused); with report "check": "leak", a weak reference is taken to every
producer object as it is made (a lazy view's root tensor, so the reference is exact), and after the program
drops every reference and runs gc.collect() each must be gone (the message says how many storage bytes stay
held). In that mode the ctypes producer's capsules also get DLPack's capsule destructor (an unconsumed capsule
releases its export), and the producer keeps every capsule it hands out until the teardown: a consumer that
refuses one drops it with its exception pending, when the destructor, a ctypes callback, cannot run safely.

generate(program, finding) -> Python source. `finding` (bug.json, as cli/lifeline/export_source.py hands it on):
  "id"       the finding id (header)
  "title"    one line of what happens (header), unless report "title" is given
  "input"    optional: the reproducer input's name, so the header says `python3 <input>.py`
  "report":
    "contract"   the contract the script shows broken, quoted with its source (printed first)
    "expected"   what a conforming implementation does (printed after the contract)
    "title"      optional: the header's line in upstream's words
    "check"      "leak": add the weak-reference check at the end; "abort": the header says the file aborts (an
                 exception out of a noexcept function of torch) rather than failing an assertion, as it does when
                 a reproducer expects an `uncaught-exception`; anything else ("values") adds none. Absent,
                 it is "leak" when a reproducer of the finding ("reproducers" in bug.json, where given) expects
                 the accounting oracle's message ("still held"), or the finding's title or report title says
                 it leaks.

This module writes the program's steps; the values it writes and checks are torch_py_values.py's, the
program's objects and the making of its arrays torch_py_objects.py's, and the file around the steps (imports,
the ctypes producer, expect()) torch_py_file.py's.
"""
from __future__ import annotations

import re
from typing import Optional

from .torch_py_file import PyFile
from .torch_py_objects import Arrays, Obj, Unexportable, where
from .torch_py_values import DTYPES, LAYOUTS, element_offset, literal, numel, period, place, q

CONSUMER_OPS = ("import-capsule", "import-from-tensor", "import-from-array", "view-buffer", "make-cycle", "malformed")
# peer-malformed kinds -> the keyword that breaks the producer's export.
MALFORMED = {"wrong-name": 'name=b"not_dltensor"', "used-name": 'name=b"used_dltensor"', "device": "device=2",
             "dtype": "dtype=(3, 7)", "null-deleter": "deleter=False", "lanes": "lanes=2"}
REFUSALS = ("BufferError", "RuntimeError")  # what the DLPack protocol lets a producer or consumer raise


def export_call(obj: str, export_args: str) -> str:
    """obj.__dlpack__(...) with the keyword arguments the decoder gave the exported object (its create op's)."""
    return f"{obj}.__dlpack__({export_args})"



class Writer(Arrays, PyFile):
    """The program's ops in order, each written as Python steps with its checks (the objects and the making of
    its arrays: Arrays, torch_py_objects.py; the file around the steps: PyFile, torch_py_file.py)."""

    def __init__(self, program: dict, finding: dict):
        if program.get("format") != "capsule":
            raise Unexportable(f"not a capsule program (format {program.get('format')!r})")
        self.program, self.finding = program, finding
        self.report = finding.get("report") or {}
        self.peers = program.get("peers") or ["numpy"]
        self.leak = self.report.get("check", self._inferred_check()) == "leak"
        # A finding whose reproducers end in std::terminate (an exception out of a noexcept upstream function):
        # its file aborts rather than failing an assertion.
        self.aborts = self.report.get("check") == "abort" or any(
            isinstance(sig, dict) and sig.get("type") == "uncaught-exception"
            for rep in self.finding.get("reproducers") or [] for sig in (rep.get("expect") or {}).values())
        self.objs: dict[int, Obj] = {}
        self.taken: dict[str, int] = {}
        self.body: list[str] = []
        self.uses: set[str] = set()
        self.producers: list[Obj] = []   # weakly referenced for the leak check

    def _inferred_check(self) -> str:
        """"leak" for a finding whose reproducers expect the accounting oracle's message, or whose title says
        it leaks; else "values"."""
        for rep in self.finding.get("reproducers") or []:
            for sig in (rep.get("expect") or {}).values():
                if isinstance(sig, dict) and "still held" in str(sig.get("message", "")):
                    return "leak"
        titles = f"{self.finding.get('title', '')} {self.report.get('title', '')}"
        return "leak" if re.search(r"\bleak", titles, re.IGNORECASE) else "values"

    # -- names and lines --
    def name(self, base: str) -> str:
        n = self.taken.get(base, 0) + 1
        self.taken[base] = n
        return base if n == 1 else f"{base}{n}"

    def emit(self, line: str, indent: int = 0):
        self.body.append("    " * indent + line)

    def expect(self, what: str, want: str, got: str, indent: int = 0):
        self.uses.add("expect")
        self.emit(f"expect({q(what)}, {want}, {got})", indent)

    def obj(self, op: dict, key: str = "src") -> Obj:
        ref = str(op.get(key, ""))
        try:
            return self.objs[int(ref.lstrip("#"))]
        except (ValueError, KeyError):
            raise Unexportable(f"{where(op)}: {key} {ref!r} names no object the program holds")

    def peer_of(self, op: dict) -> str:
        peer = op.get("peer") or self.peers[0]
        if peer not in ("torch", "numpy"):
            raise Unexportable(f"{where(op)}: peer {peer!r} (this exporter writes torch and numpy)")
        self.uses.add(peer)
        return peer

    # -- ops --
    def run(self) -> str:
        for op in self.program.get("ops", []):
            kind = op.get("op")
            if kind in CONSUMER_OPS:
                raise Unexportable(f"{where(op)}: lifeline's own consumer (layers/interop) has no "
                                   f"public equivalent in PyTorch or NumPy")
            handler = {"create-tensor": self.create_tensor, "create-array": self.create_array,
                       "export-tensor": self.export, "export-array": self.export,
                       "peer-from-tensor": self.peer_import, "peer-from-array": self.peer_import,
                       "peer-from-capsule": self.peer_import, "peer-malformed": self.peer_import,
                       "read": self.read, "drop": self.drop, "collect": self.collect}.get(kind)
            if handler is None:
                raise Unexportable(f"op #{op.get('id')} {kind!r}: not an op of the capsule programs")
            handler(op)
        if self.leak:
            self.teardown()
        return self.assemble()

    def operands(self, op: dict):
        dtype, layout, shape = op.get("dtype"), op.get("layout", "contiguous"), tuple(op.get("shape", ()))
        if dtype not in DTYPES:
            raise Unexportable(f"{where(op)}: dtype {dtype!r}")
        if layout not in LAYOUTS:
            raise Unexportable(f"{where(op)}: layout {layout!r}")
        return dtype, layout, shape, int(op.get("seed", 0))

    def watch(self, o: Obj):
        if self.leak:
            self.uses.add("weakref")
            self.producers.append(o)
            self.emit(f"{o.root}_alive = weakref.ref({o.root})")

    def create_tensor(self, op: dict):
        dtype, layout, shape, seed = self.operands(op)
        fmt, code = DTYPES[dtype][2], DTYPES[dtype][3]
        if dtype not in ("float32", "float16", "int8", "bool"):
            raise Unexportable(f"{where(op)}: dtype {dtype} (this layer's producer makes float32, "
                               f"float16, int8 and bool)")
        strides, offset, elements = place(shape, layout)
        item = DTYPES[dtype][4]
        o = Obj("producer", self.name("producer"), dtype, shape, seed, layout=layout, storage_bytes=elements * item,
                period=period(shape, layout))
        storage = [False if dtype == "bool" else (0.0 if fmt in "fe" else 0)] * elements
        for i, v in enumerate(o.flat()):
            storage[element_offset(shape, strides, offset, i)] = v
        o.names, o.root = [o.name], o.name
        self.objs[op["id"]] = o
        o.export_args = op.get("export_args", "")
        self.uses.add("producer")
        packed = f'struct.pack("<{elements}{fmt}", {", ".join(literal(v) for v in storage)})' if elements else 'b""'
        note = f"{o.describe()} {literal(o.values())}"
        if offset:
            note += f", {offset * item} bytes into its storage (DLTensor.byte_offset)"
        elif layout != "contiguous" and len(shape) > (0 if layout == "strided" else 1):
            note += f", {layout}"
        if layout == "null-strides":
            note += ", exported with DLTensor.strides NULL (compact row-major, as dlpack.h 0.6 allows)"
            self.uses.add("null-strides")
        if op.get("readonly"):
            note += "; read-only (DLPack 0.6 cannot say so)"
        self.emit(f"# {note}")
        shown = "None" if layout == "null-strides" else str(tuple(strides))
        self.emit(f"{o.name} = Producer({packed}, dtype={code}, shape={tuple(shape)}, strides={shown}, "
                  f"byte_offset={offset * item})")
        self.watch(o)

    def create_array(self, op: dict):
        dtype, layout, shape, seed = self.operands(op)
        peer = self.peer_of(op)
        (self.create_torch if peer == "torch" else self.create_numpy)(op, dtype, layout, shape, seed)


    def export(self, op: dict):
        src = self.obj(op)
        if op["op"] == "export-tensor":
            if src.kind != "producer":
                raise Unexportable(f"{where(op)}: {op.get('src')} is not this layer's tensor")
            # This layer's producer refuses a stream other than None (BufferError); the script's takes any.
            if src.export_args.startswith("stream=") and src.export_args != "stream=None":
                raise Unexportable(f"{where(op)}: an export of this layer's tensor with {src.export_args}")
            expr = export_call(src.name, src.export_args)
        else:
            if src.kind not in ("torch", "numpy"):
                raise Unexportable(f"{where(op)}: {op.get('src')} is not an array")
            if op.get("via") == "to_dlpack":
                if src.kind != "torch":
                    raise Unexportable(f"{where(op)} via to_dlpack of a NumPy array")
                self.uses.add("torch.utils.dlpack")
                expr = f"torch.utils.dlpack.to_dlpack({src.name})"
            else:
                expr = export_call(src.name, src.export_args)
        o = Obj("capsule", self.name("capsule"), src.dtype, src.shape, src.seed, period=src.period)
        o.names = [o.name]
        self.uses.add("torch")  # a capsule's values are read with torch.from_dlpack
        self.outcome(op, o, expr, read=f"torch.from_dlpack({o.name}).tolist()", label=f"torch.from_dlpack({expr})",
                     refusable=op["op"] != "export-tensor")

    def peer_import(self, op: dict):
        peer = self.peer_of(op)
        src = self.obj(op)
        kind = op["op"]
        want_src = {"peer-from-tensor": ("producer",), "peer-from-array": ("torch", "numpy"),
                    "peer-from-capsule": ("capsule",), "peer-malformed": ("producer",)}[kind]
        if src.kind not in want_src:
            raise Unexportable(f"{where(op)}: {op.get('src')} is a {src.kind}, not a {' or '.join(want_src)}")
        arg, must_refuse = src.name, False
        if kind == "peer-malformed":
            broken = MALFORMED.get(op.get("kind"))
            if broken is None:
                raise Unexportable(f"{where(op)}: kind {op.get('kind')!r}")
            self.uses.add("malformed")
            if op.get("kind") == "null-deleter":
                self.uses.add("parked")
            arg = f"{src.name}.__dlpack__({broken})"
            must_refuse = op.get("kind") != "null-deleter"
        if kind == "peer-from-capsule":
            must_refuse = src.consumed
            src.consumed = src.consumed or not (op.get("model") or {}).get("raises")
        if peer == "numpy" and (kind in ("peer-from-capsule", "peer-malformed")):
            self.uses.add("holder")
            arg = f"Holder({arg})"  # NumPy 1.24's from_dlpack takes an object with __dlpack__, not a bare capsule
        expr = f"torch.from_dlpack({arg})" if peer == "torch" else f"np.from_dlpack({arg})"
        o = Obj(peer, self.name("y" if peer == "torch" else "arr"), src.dtype, src.shape, src.seed, period=src.period)
        o.names = [o.name]
        self.outcome(op, o, expr, read=f"{o.name}.tolist()", label=expr, refusable=True, check=True,
                     must_refuse=must_refuse)

    def outcome(self, op: dict, o: Obj, expr: str, read: str, label: str, refusable: bool, check: bool = False,
                must_refuse: bool = False):
        """`o.name = expr` as the model predicts it. Predicted to succeed: a refusal the protocol allows ends the
        script (status 0); else, when `check`, `read` must give the logical values. Predicted to be refused: it
        may be; if not, `read` must give the logical values (`label` says what it read), or with `must_refuse`
        the success itself is the failure; either way the object does not join the program."""
        raises = (op.get("model") or {}).get("raises")
        want = literal(o.values())
        if not raises:
            self.objs[op["id"]] = o
            if not refusable:
                self.emit(f"{o.name} = {expr}")
                return
            self.uses.add("sys")
            self.emit("try:")
            self.emit(f"{o.name} = {expr}", 1)
            self.emit(f"except {self.caught(None)} as e:")
            self.emit(f'print(f"{self.fstring(expr)} refused ({{e!r}}): the DLPack protocol allows it")', 1)
            self.emit("sys.exit(0)", 1)
            if check:
                self.expect(label, want, read)
            return
        self.emit("try:")
        self.emit(f"{o.name} = {expr}", 1)
        self.emit(f"except {self.caught(raises)} as e:")
        self.emit(f'print(f"{self.fstring(expr)} refused: {{e!r}}")', 1)
        self.emit("else:")
        if must_refuse:
            self.expect(expr, '"refused"', '"accepted"', 1)
        else:
            self.expect(label, want, read, 1)
        self.emit(f"del {o.name}", 1)

    @staticmethod
    def caught(raises: Optional[str]) -> str:
        types = list(REFUSALS) + ([raises] if raises and raises not in REFUSALS else [])
        return "(" + ", ".join(types) + ")"

    @staticmethod
    def fstring(text: str) -> str:
        return text.replace("{", "{{").replace("}", "}}").replace('"', '\\"')

    def read(self, op: dict):
        o = self.obj(op)
        if o.kind == "capsule":
            raise Unexportable(f"{where(op)}: {op.get('src')} is a capsule, which has no values until imported")
        if o.kind == "producer":
            self.uses.add("struct")
            fmt, item = DTYPES[o.dtype][2], DTYPES[o.dtype][4]
            strides, offset, _ = place(o.shape, o.layout)
            offsets = [element_offset(o.shape, strides, offset, i) * item for i in range(numel(o.shape))]
            if not o.shape:
                got = f'struct.unpack_from("<{fmt}", {o.name}.storage, {offsets[0]})[0]'
                self.expect(f"{o.name}'s memory", literal(o.values()), got)
            else:
                flat = o.flat()
                got = f'[struct.unpack_from("<{fmt}", {o.name}.storage, b)[0] for b in {tuple(offsets)}]'
                self.expect(f"{o.name}'s memory (C order)", literal(flat), got)
            return
        self.expect(o.name, literal(o.values()), f"{o.name}.tolist()")

    def drop(self, op: dict):
        o = self.obj(op)
        self.emit(f"del {', '.join(o.names)}")
        del self.objs[int(str(op['src']).lstrip('#'))]

    def collect(self, op: dict):
        self.uses.add("gc")
        self.emit("gc.collect()")

    def teardown(self):
        self.uses.add("gc")
        names = [n for o in self.objs.values() for n in o.names]
        if names:
            self.emit(f"del {', '.join(names)}  # every reference the program holds")
        if "producer" in self.uses:
            self.emit("Producer.capsules.clear()  # the capsules handed out: an unconsumed one releases its export")
        if "parked" in self.uses:
            self.emit("Producer.parked.clear()  # the producer releases its NULL-deleter exports itself")
        self.emit("gc.collect()")
        for o in self.producers:
            held = f"alive, with its {o.storage_bytes}-byte storage"
            got = f'"freed" if {o.root}_alive() is None else "{held}"'
            self.expect(f"{o.root} after del and gc.collect()", '"freed"', got)



def generate(program: dict, finding: dict) -> str:
    """The standalone Python reproducer of `program` (a decoded capsule program) for `finding` (bug.json, with
    its "report"); raises Unexportable (a ValueError) naming the op the public API cannot express."""
    return Writer(program, finding).run()
