"""The objects of a capsule program as the torch exporter (torch_py.py) follows them (Obj: a producer, a torch
tensor, a NumPy array or a capsule, with the names the script binds to it), and how the script makes the arrays
of create-array (the Arrays mixin): a torch tensor in the op's layout and flavor (conj, neg, requires-grad) as a
root tensor a weak reference sees exactly, or a NumPy array in the op's layout. An op the public API cannot
express raises Unexportable naming it (where)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from .torch_py_values import (COMPLEX, DTYPES, FLOATING, NEG_VIA_COMPLEX, OFFSET_ELEMENTS, literal, nest, numel,
                              pattern, pattern_at, period, place, torch_storage_elements)


FLAVOR_SUFFIX = {"plain": "", "conj": "_conj", "neg": "_neg", "requires-grad": "_grad"}


class Unexportable(ValueError):
    pass


def where(op: dict) -> str:
    return f"op #{op.get('id')} {op.get('op')}"



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



class Arrays:
    """The Writer's create-array ops: torch tensors and NumPy arrays (see the module docstring)."""

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
