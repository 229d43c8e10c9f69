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

generate(program, finding) -> Python source. `finding` (bug.json, as cli/lifeline/export.py hands it on):
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
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Optional

# dtype -> torch name, numpy name (None: NumPy makes none), struct format, DLPack (code, bits), item size.
DTYPES = {
    "float32": ("torch.float32", "np.float32", "f", (2, 32), 4),
    "float16": ("torch.float16", "np.float16", "e", (2, 16), 2),
    "int8": ("torch.int8", "np.int8", "b", (0, 8), 1),
    "bool": ("torch.bool", "np.bool_", "?", (6, 8), 1),  # code 6: DLPack >= 0.8 kDLBool, as the producer uses
    "uint8": ("torch.uint8", "np.uint8", "B", (1, 8), 1),
    "bfloat16": ("torch.bfloat16", None, None, (4, 16), 2),
    "complex64": ("torch.complex64", "np.complex64", None, (5, 64), 8),
    "int16": ("torch.int16", "np.int16", "h", (0, 16), 2),
    "int32": ("torch.int32", "np.int32", "i", (0, 32), 4),
    "int64": ("torch.int64", "np.int64", "q", (0, 64), 8),
    "uint16": (None, "np.uint16", "H", (1, 16), 2),  # PyTorch 1.13 has no uint16, uint32, uint64
    "uint32": (None, "np.uint32", "I", (1, 32), 4),
    "uint64": (None, "np.uint64", "Q", (1, 64), 8),
    "float64": ("torch.float64", "np.float64", "d", (2, 64), 8),
    "complex128": ("torch.complex128", "np.complex128", None, (5, 128), 16),
}
COMPLEX = ("complex64", "complex128")
FLOATING = ("float32", "float16", "bfloat16", "float64") + COMPLEX
# The complex dtype whose imaginary part is a `dtype` tensor: the public route to a negated view.
NEG_VIA_COMPLEX = {"float32": ("torch.complex64", 8), "float16": ("torch.complex32", 4)}
OFFSET_ELEMENTS = 3  # layers/interop/dlpack_types.h kOffsetElements
UNIT_STRIDE = 4099  # layers/interop/dlpack_types.h kUnitStride
LAYOUTS = ("contiguous", "transposed", "strided", "offset", "reversed", "broadcast", "null-strides", "reversed-all",
           "unit-strides")
FLAVOR_SUFFIX = {"plain": "", "conj": "_conj", "neg": "_neg", "requires-grad": "_grad"}
CONSUMER_OPS = ("import-capsule", "import-from-tensor", "import-from-array", "view-buffer", "make-cycle", "malformed")
# peer-malformed kinds -> the keyword that breaks the producer's export.
MALFORMED = {"wrong-name": 'name=b"not_dltensor"', "used-name": 'name=b"used_dltensor"', "device": "device=2",
             "dtype": "dtype=(3, 7)", "null-deleter": "deleter=False", "lanes": "lanes=2"}
REFUSALS = ("BufferError", "RuntimeError")  # what the DLPack protocol lets a producer or consumer raise


class Unexportable(ValueError):
    pass


def where(op: dict) -> str:
    return f"op #{op.get('id')} {op.get('op')}"


# ---- the producer pattern and placement (layers/interop) -------------------------------------------------

def pattern(dtype: str, seed: int, i: int):
    """PatternValue (+ PatternImag for complex64): element i of what a producer filled with `seed` holds."""
    k = (seed * 31 + i * 7) % 97
    if dtype in ("float32", "float16", "bfloat16", "float64"):
        return (k - 48) * 0.5
    if dtype in COMPLEX:
        return complex((k - 48) * 0.5, ((seed * 17 + i * 11 + 5) % 89 - 44) * 0.25)
    if dtype in ("int8", "int16", "int32", "int64"):
        return k - 48
    if dtype == "bool":
        return k % 3 == 0
    return k  # uint8 to uint64


def numel(shape) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def place(shape, layout: str):
    """PlaceTensor: (element strides, element offset, storage elements) of this layer's producer."""
    ndim, strides, stride = len(shape), [0] * len(shape), 1
    if layout == "transposed":
        for i in range(ndim):
            strides[i], stride = stride, stride * shape[i]
    else:
        widen = 2 if layout == "strided" else 1
        for i in reversed(range(ndim)):
            if i == 0 and layout == "broadcast":  # axis 0 takes no memory: one row, seen shape[0] times
                break
            if layout == "unit-strides" and shape[i] == 1:  # an axis of extent 1: its stride steps by nothing
                strides[i] = 0 if i % 2 == 0 else UNIT_STRIDE
                continue
            last = widen if i == ndim - 1 else 1
            strides[i], stride = stride * last, stride * shape[i] * last
    offset = OFFSET_ELEMENTS if layout == "offset" else 0
    if layout == "reversed" and ndim:  # each row's element 0 is the last of its memory
        strides[-1] = -1
        return strides, max(shape[-1] - 1, 0), numel(shape)
    if layout == "reversed-all":  # the C-order strides negated: logical element 0 is the storage's last
        return [-st for st in strides], max(numel(shape) - 1, 0), numel(shape)
    return strides, offset, (0 if numel(shape) == 0 else offset + stride)


def period(shape, layout: str) -> int:
    """PatternPeriod: the elements of one row of a broadcast (its rows are one memory, so element i holds pattern
    element i modulo this), or 0."""
    return numel(shape) // shape[0] if layout == "broadcast" and len(shape) >= 1 and shape[0] > 1 else 0


def pattern_at(dtype: str, seed: int, every: int, i: int):
    """The pattern element logical element i holds, for a period as period() gives it."""
    return pattern(dtype, seed, i % every if every else i)


def element_offset(shape, strides, offset: int, index: int) -> int:
    for i in reversed(range(len(shape))):
        offset += (index % shape[i]) * strides[i]
        index //= shape[i]
    return offset


def q(text: str) -> str:
    """A double-quoted Python string literal."""
    return json.dumps(text, ensure_ascii=False)


def literal(v) -> str:
    """Python source of a value as tolist() gives it (floats, ints, bools, complex numbers, nested lists)."""
    if isinstance(v, list):
        return "[" + ", ".join(literal(e) for e in v) + "]"
    return repr(v)


def nest(flat: list, shape):
    """C-order elements as tolist() gives them: a scalar for 0-d."""
    if not shape:
        return flat[0]
    if len(shape) == 1:
        return list(flat)
    step = numel(shape[1:])
    return [nest(flat[i * step:(i + 1) * step], shape[1:]) for i in range(shape[0])]


def torch_storage_elements(shape, strides) -> int:
    """What torch.empty_strided allocates."""
    return 0 if numel(shape) == 0 else 1 + sum((s - 1) * st for s, st in zip(shape, strides))


def export_call(obj: str, export_args: str) -> str:
    """obj.__dlpack__(...) with the keyword arguments the decoder gave the exported object (its create op's)."""
    return f"{obj}.__dlpack__({export_args})"


# ---- the program's objects --------------------------------------------------------------------------------

@dataclass
class Obj:
    kind: str                 # producer (create-tensor), torch, numpy, capsule
    name: str
    dtype: str
    shape: tuple
    seed: int
    names: list = field(default_factory=list)   # every name the script binds to it (a conj view and its base)
    root: Optional[str] = None                  # the name whose weak reference is exact (leak check)
    storage_bytes: int = 0
    flavor: str = "plain"
    layout: str = "contiguous"
    consumed: bool = False                      # capsule
    period: int = 0                             # a broadcast's row (period()); imports keep their source's
    export_args: str = ""                       # what its exports through __dlpack__ pass (the create op's)

    def values(self):
        return nest(self.flat(), self.shape)

    def flat(self) -> list:
        return [pattern_at(self.dtype, self.seed, self.period, i) for i in range(numel(self.shape))]

    def describe(self) -> str:
        return f"{self.dtype}[{','.join(str(d) for d in self.shape)}]"


class Writer:
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

    @staticmethod
    def torch_container(dt: str, shape, layout: str, item: int):
        """(a root tensor of `shape` in `layout` to copy values into, or None where torch.tensor(...) already has
        that layout; its storage bytes)."""
        n, shp = numel(shape), tuple(shape)
        if layout == "offset":
            return (f"torch.empty(0, dtype={dt}).set_(torch.zeros({n + OFFSET_ELEMENTS}, dtype={dt}).storage(), "
                    f"{OFFSET_ELEMENTS}, {shp})", (n + OFFSET_ELEMENTS) * item)
        strides = place(shape, layout)[0]
        if strides != place(shape, "contiguous")[0]:
            nbytes = torch_storage_elements(shape, strides) * item
            return f"torch.empty_strided({shp}, {tuple(strides)}, dtype={dt})", nbytes
        return None, n * item

    def torch_tensor(self, dt: str, shape, layout: str, item: int, nested):
        """(expression, storage bytes) of a root tensor of `shape` in `layout` holding `nested` (tolist()'s form)."""
        if period(shape, layout):  # a root over one row's storage, its axis 0 of stride 0 (as expand() makes it)
            row_strides = tuple(place(shape, "contiguous")[0][1:])
            return (f"torch.empty(0, dtype={dt}).set_(torch.tensor({literal(nested[0])}, dtype={dt}).storage(), 0, "
                    f"{tuple(shape)}, {(0,) + row_strides})", period(shape, layout) * item)
        values = literal(nested)
        container, nbytes = self.torch_container(dt, shape, layout, item)
        filled = f"torch.tensor({values}, dtype={dt})" if numel(shape) else f"torch.zeros({tuple(shape)}, dtype={dt})"
        if container is None:
            return filled, nbytes
        return (container + f".copy_({filled})" if numel(shape) else container), nbytes

    def create_numpy(self, op, dtype, layout, shape, seed):
        dt, item = DTYPES[dtype][1], DTYPES[dtype][4]
        if dt is None:
            raise Unexportable(f"{where(op)}: NumPy has no {dtype}")
        if layout == "null-strides":
            raise Unexportable(f"{where(op)}: NumPy's exports always carry strides (the decoder makes it contiguous)")
        o = Obj("numpy", self.name("a"), dtype, shape, seed, layout=layout, period=period(shape, layout))
        o.names, o.root = [o.name], o.name
        self.objs[op["id"]] = o
        o.export_args = op.get("export_args", "")
        n, shp, values = numel(shape), tuple(shape), literal(o.values())
        if n == 0:
            self.emit(f"{o.name} = np.zeros({shp}, dtype={dt})")
        elif o.period:  # one row seen shape[0] times (stride 0), writable unlike np.broadcast_to's
            row = self.name("row")
            self.emit(f"{row} = np.array({literal(o.values()[0])}, dtype={dt})")
            self.emit(f"{o.name} = np.lib.stride_tricks.as_strided({row}, {shp}, (0,) + {row}.strides)")
            o.storage_bytes = o.period * item
        elif layout == "reversed" and shape:  # a view with a negative stride on its last axis, as a[..., ::-1]
            self.emit(f"{o.name} = np.array({values}, dtype={dt})[..., ::-1].copy()[..., ::-1]")
        elif layout == "reversed-all" and shape:  # a view with a negative stride on every axis, as np.flip(a)
            self.emit(f"{o.name} = np.flip(np.flip(np.array({values}, dtype={dt})).copy())")
        elif layout == "unit-strides" and place(shape, layout)[0] != place(shape, "contiguous")[0]:
            strides = tuple(st * item for st in place(shape, layout)[0])  # extent-1 axes: strides no element uses
            self.emit(f"{o.name} = np.lib.stride_tricks.as_strided(np.array({values}, dtype={dt}), {shp}, {strides})")
        elif layout == "offset" or (layout == "strided" and shape):
            if layout == "offset":
                elements = n + OFFSET_ELEMENTS
                self.emit(f"{o.name} = np.zeros({elements}, dtype={dt})[{OFFSET_ELEMENTS}:].reshape({shp})")
            else:
                elements = 2 * n
                self.emit(f"{o.name} = np.zeros({shp[:-1] + (shp[-1] * 2,)}, dtype={dt})[..., ::2]")
            self.emit(f"{o.name}[...] = {values}")
            o.storage_bytes = elements * item
        else:
            order = ', order="F"' if layout == "transposed" and len(shape) > 1 else ""
            self.emit(f"{o.name} = np.array({values}, dtype={dt}{order})")
        o.storage_bytes = o.storage_bytes or n * item
        if op.get("readonly"):
            self.emit(f"{o.name}.flags.writeable = False")
        self.watch(o)

    def create_torch(self, op, dtype, layout, shape, seed):
        flavor = op.get("flavor", "plain")
        if flavor not in FLAVOR_SUFFIX:
            raise Unexportable(f"{where(op)}: flavor {flavor!r}")
        dt, item = DTYPES[dtype][0], DTYPES[dtype][4]
        if dt is None:
            raise Unexportable(f"{where(op)}: PyTorch 1.13 has no {dtype}")
        if layout in ("reversed", "null-strides", "reversed-all"):
            raise Unexportable(f"{where(op)}: torch makes no {layout} tensor (the decoder makes it contiguous)")
        o = Obj("torch", self.name("x" + FLAVOR_SUFFIX[flavor]), dtype, shape, seed, flavor=flavor, layout=layout,
                period=period(shape, layout))
        self.objs[op["id"]] = o
        o.export_args = op.get("export_args", "")
        values = o.values()
        o.names, o.root = [o.name], o.name
        if flavor == "conj":
            if dtype not in COMPLEX:
                raise Unexportable(f"{where(op)}: a conjugate view of {dtype}")
            memory = nest([pattern(dtype, seed, i).conjugate() for i in range(numel(shape))], shape)
            expr, o.storage_bytes = self.torch_tensor(dt, shape, layout, item, memory)
            note = (f"# {o.name}: a lazily conjugated view (is_conj()) whose memory holds {literal(memory)}, "
                    f"its values {literal(values)}")
            self.view_of_root(o, "x", expr, ".conj()", note, separate=not expr.startswith("torch.tensor("))
            self.setup(o, "is_conj", "conjugate")
        elif flavor == "neg":
            if o.period:
                raise Unexportable(f"{where(op)}: a negated broadcast (its memory cannot be copied into)")
            if dtype not in NEG_VIA_COMPLEX:
                raise Unexportable(f"{where(op)}: a negated view of {dtype}: PyTorch's only public "
                                   f"route to one, Tensor.conj().imag, gives float32 and float16 (torch._neg_view is "
                                   f"private)")
            cdt, citem = NEG_VIA_COMPLEX[dtype]
            v = self.name("v")
            self.emit(f"{v} = " + (f"torch.tensor({literal(values)}, dtype={dt})" if numel(shape)
                                   else f"torch.zeros({tuple(shape)}, dtype={dt})"))
            made = f"torch.complex(torch.zeros_like({v}), -{v})"
            container, o.storage_bytes = self.torch_container(cdt, shape, layout, citem)
            if container is not None:  # the layout, counted in the complex tensor's elements
                made = container + (f".copy_({made})" if numel(shape) else "")
            note = f"# {o.name}: a lazily negated view (is_neg()) whose values are {v}, its memory -{v}"
            if cdt == "torch.complex32":
                note += " (torch warns that ComplexHalf is experimental)"
            self.view_of_root(o, "x_complex", made, ".conj().imag", note, separate=container is not None)
            self.setup(o, "is_neg", "negative")
        else:
            expr, o.storage_bytes = self.torch_tensor(dt, shape, layout, item, values)
            if flavor == "requires-grad":
                if dtype not in FLOATING:
                    raise Unexportable(f"{where(op)}: requires grad on {dtype}")
                expr += ".requires_grad_()"
            self.emit(f"{o.name} = {expr}")
        self.watch(o)

    def view_of_root(self, o: Obj, base: str, root_expr: str, view: str, note: str, separate: bool):
        """`o` is a lazy view (`view`) of a root tensor; the root gets a name of its own where the leak check
        watches it or the line would be long."""
        self.emit(note)
        if self.leak or separate:
            base = self.name(base)
            self.emit(f"{base} = {root_expr}")
            self.emit(f"{o.name} = {base}{view}")
            o.names, o.root = [o.name, base], base
        else:
            self.emit(f"{o.name} = {root_expr}{view}")

    def setup(self, o: Obj, method: str, bit: str):
        self.uses.add("sys")
        self.emit(f"if not {o.name}.{method}():")
        self.emit(f'sys.exit("setup: {o.name} has no {bit} bit on this torch")', 1)

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

    # -- the file --
    def assemble(self) -> str:
        f, r = self.finding, self.report
        title = r.get("title") or f.get("title", "")
        run = f"python3 {f['input']}.py" if f.get("input") else "python3 <this file>"
        lines = [f"# {f.get('id', 'finding')}{' (' + f['input'] + ')' if f.get('input') else ''}, written by "
                 f"`lifeline export`: PyTorch and NumPy only, no lifeline code.",
                 f"# {title}",
                 f"# Run: {run}. " + ("Aborts (std::terminate) while the bug is there" if self.aborts else
                                       "Fails with AssertionError (expected vs actual) while the bug is there")
                 + "; exits 0 once it is fixed."]
        stdlib = [f"import {m}" for m in ("ctypes", "gc", "struct", "sys", "weakref") if self.needs(m)]
        numpy = "numpy" in self.uses or "holder" in self.uses
        lines += stdlib + ([""] if stdlib else []) + (["import numpy as np"] if numpy else []) + ["import torch"]
        if "torch.utils.dlpack" in self.uses:
            lines.append("import torch.utils.dlpack")
        blocks = []
        if "producer" in self.uses:
            blocks.append(self.producer_source())
        if "holder" in self.uses:
            blocks.append(["class Holder:  # NumPy 1.24's from_dlpack takes an object with __dlpack__, "
                           "not a bare capsule",
                           "    def __init__(self, capsule):",
                           "        self.capsule = capsule", "",
                           "    def __dlpack__(self, stream=None):",
                           "        return self.capsule", "",
                           "    def __dlpack_device__(self):",
                           "        return (1, 0)"])
        if "expect" in self.uses:
            blocks.append(["def expect(what, want, got):",
                           '    print(f"{what}: expected {want}, got {got}")',
                           '    assert got == want, f"{what}: expected {want}, got {got}"'])
        for block in blocks:
            lines += ["", ""] + block
        lines += ["", "", 'print("torch", torch.__version__' + (', "numpy", np.__version__)' if numpy else ")")]
        contract = r.get("contract") or f.get("contract")
        for key, text in (("contract", contract), ("expected", r.get("expected"))):
            if text:
                lines.append(f"print({q(key + ':')}, {q(text)})")
        return "\n".join(lines + self.body) + "\n"

    def needs(self, module: str) -> bool:
        if module == "ctypes":
            return "producer" in self.uses
        if module == "struct":
            return "struct" in self.uses or any("struct.pack(" in line for line in self.body)
        return module in self.uses

    def producer_source(self) -> list:
        """The ctypes producer: only the parts this program uses."""
        # With the leak check, capsules get DLPack's destructor (an unconsumed capsule releases its export), and the
        # producer keeps every capsule it hands out until the teardown drops them: a consumer that refuses one drops
        # it with its exception pending, when no Python code (the destructor is a ctypes callback) can run safely.
        leak, malformed, parked = self.leak, "malformed" in self.uses, "parked" in self.uses
        name = "name" if malformed else 'b"dltensor"'
        src = [
            "class DLManagedTensor(ctypes.Structure):  # dlpack.h 0.6: DLTensor (DLDevice, DLDataType inlined), "
            "manager_ctx, deleter",
            '    _fields_ = [("data", ctypes.c_void_p), ("device", ctypes.c_int32 * 2), ("ndim", ctypes.c_int32),',
            '                ("dtype", ctypes.c_uint8 * 2), ("lanes", ctypes.c_uint16), ("shape", ctypes.c_void_p),',
            '                ("strides", ctypes.c_void_p), ("byte_offset", ctypes.c_uint64), ("manager_ctx", ctypes.c_void_p),',
            '                ("deleter", ctypes.c_void_p)]',
            "",
            "",
            "class Producer:  # on the CPU; each __dlpack__() is a DLManagedTensor over `storage` (strides in elements)",
            "    live = {}  # the address of each export whose deleter has not run -> what it holds",
        ]
        if parked:
            src.append("    parked = {}  # NULL-deleter exports: the producer keeps them until it releases them itself")
        if leak:
            src.append("    capsules = []  # every capsule handed out, until the teardown drops them")
        src += ["",
                "    def __init__(self, storage, dtype, shape, strides, byte_offset):",
                "        self.storage = ctypes.create_string_buffer(storage, len(storage) or 1)",
                "        self.dtype, self.shape, self.strides, self.byte_offset = dtype, shape, strides, byte_offset",
                "",
                "    def __dlpack_device__(self):",
                "        return (1, 0)  # kDLCPU",
                "",
                ('    def __dlpack__(self, stream=None, name=b"dltensor", device=1, dtype=None, deleter=True, '
                 'lanes=1):' if malformed
                 else "    def __dlpack__(self, stream=None):"),
                "        n = len(self.shape)",
                "        shape, strides = (ctypes.c_int64 * n)(*self.shape), (ctypes.c_int64 * n)(*self.strides)"]
        null_strides = "null-strides" in self.uses  # a producer made with strides=None exports DLTensor.strides NULL
        if null_strides:
            src[-1] = src[-1].replace("(*self.strides)", "(*(self.strides or ()))")
            src.append("        pointer = ctypes.addressof(strides) if self.strides is not None else None")
        made = len(src)
        if malformed:
            src += ["        dtype = dtype or (self.dtype[0], self.dtype[1] // lanes)  # lanes 2: the same bytes",
                    "        m = DLManagedTensor(ctypes.addressof(self.storage), (device, 0), n, dtype, lanes,",
                    "                            ctypes.addressof(shape), ctypes.addressof(strides), self.byte_offset, None,",
                    "                            DELETER if deleter else None)"]
        else:
            src += ["        m = DLManagedTensor(ctypes.addressof(self.storage), (1, 0), n, self.dtype, 1, ctypes.addressof(shape),",
                    "                            ctypes.addressof(strides), self.byte_offset, None, DELETER)"]
        if null_strides:
            src[made:] = [line.replace("ctypes.addressof(strides)", "pointer") for line in src[made:]]
        held = "Producer.live" if not parked else "(Producer.live if deleter else Producer.parked)"
        src.append(f"        {held}[ctypes.addressof(m)] = (m, shape, strides, self, {name})")
        create = f"api.PyCapsule_New(ctypes.addressof(m), {name}, {'DESTRUCTOR' if leak else 'None'})"
        if leak:
            src += [f"        Producer.capsules.append({create})", "        return Producer.capsules[-1]"]
        else:
            src.append(f"        return {create}")
        src += ["",
                "",
                "api = ctypes.pythonapi",
                "api.PyCapsule_New.restype, api.PyCapsule_New.argtypes = ctypes.py_object, [ctypes.c_void_p, "
                "ctypes.c_char_p, ctypes.c_void_p]",
                "delete = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(lambda address, live=Producer.live: live.pop(address))  "
                "# the deleter",
                "DELETER = ctypes.cast(delete, ctypes.c_void_p).value"]
        if leak:
            src += ["api.PyCapsule_GetName.restype, api.PyCapsule_GetName.argtypes = ctypes.c_char_p, [ctypes.c_void_p]",
                    "api.PyCapsule_GetPointer.restype, api.PyCapsule_GetPointer.argtypes = ctypes.c_void_p, "
                    "[ctypes.c_void_p, ctypes.c_char_p]",
                    "",
                    "",
                    "@ctypes.CFUNCTYPE(None, ctypes.c_void_p)",
                    "def destructor(capsule, api=api, live=Producer.live):",
                    '    """DLPack: a capsule still under the name it was made with was never consumed: release its export."""',
                    "    name = api.PyCapsule_GetName(capsule)",
                    "    address = api.PyCapsule_GetPointer(capsule, name)",
                    "    if address in live and live[address][-1] == name:",
                    "        live.pop(address)",
                    "",
                    "",
                    "DESTRUCTOR = ctypes.cast(destructor, ctypes.c_void_p).value"]
        return src


def generate(program: dict, finding: dict) -> str:
    """The standalone Python reproducer of `program` (a decoded capsule program) for `finding` (bug.json, with
    its "report"); raises Unexportable (a ValueError) naming the op the public API cannot express."""
    return Writer(program, finding).run()
