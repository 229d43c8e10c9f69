"""The graphs of a graph program as the C exporter (ggml_c.py) follows them while it writes the C: each tensor
the program makes (Tensor, read from its op by tensor_of), the graphs it seals and the forms each takes as the
program changes it (Graph), and what the Writer asks of them (the Graphs mixin): a tensor or graph by its
reference, a graph's number in the file, a tensor's shape and type, the tensors a graph's outputs reach, and the
C name of a tensor by its role (`x`, `w`, `neg_x`, `x_plus_w`, `view_of_y`)."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional

MAX_NAME = 32

# The ops that make a tensor (the op's "op", before tensor_of reads the kind of a unary, binary or row op).
TENSOR_OPS = ("leaf", "unary", "binary", "copy", "concat", "view", "view-external", "row", "mul_mat", "transpose",
              "get_rows", "rope", "set_rows", "conv_2d_dw")


class Unexportable(ValueError):
    pass


@dataclass
class Tensor:
    id: int
    kind: str                 # leaf, scale, neg, add, mul, copy, concat, view, reshape, view-external, rms_norm,
    #                           soft_max, mul_mat, transpose, get_rows, rope, set_rows
    type: str = "f32"
    ne: tuple = (1, 1)
    src: list = field(default_factory=list)
    param: float = 0.0
    inplace: bool = False
    input: bool = False
    output: bool = False
    preallocated: bool = False
    cpu: bool = False
    permute: bool = False     # transpose: built with ggml_permute rather than ggml_transpose
    first: int = 0            # get_rows: rows first + j * step (mod the source's rows), ne[1] of them; set_rows:
    #                           row j of src[1] into row first + j * step (mod the destination src[0]'s rows)
    step: int = 0             # rope: positions first + j * step, one per token
    mode: str = "normal"      # rope: normal or neox
    n_dims: int = 0           # rope: the elements of each row it turns
    heads: int = 1            # rope: rows per token
    offset: int = 0
    of: Optional[int] = None  # view-external: the tensor (op id) of another graph
    stride: int = 1           # conv_2d_dw: src[0] the kernel, src[1] the input; stride and padding both directions
    pad: int = 0


@dataclass
class Graph:
    index: int
    tensors: dict = field(default_factory=dict)  # op id -> Tensor, in order
    seal: Optional[int] = None
    form: int = 1             # bumped by each change of a sealed graph (rewire, grow, a leaf's memory, a new output)


def tensor_of(op: dict) -> Tensor:
    """The tensor an op of TENSOR_OPS makes, as the program's op describes it (its sources by op id)."""
    kind = op["op"]
    t = Tensor(op["id"], kind)
    if kind == "leaf":
        t.type, t.ne = op["type"], tuple(op["ne"])
        t.input, t.preallocated = op["input"], op["preallocated"]
    elif kind == "unary":
        t.kind = op["fn"]
        t.src, t.param, t.inplace, t.cpu = [int(op["src"][1:])], op.get("param", 0.0), op["inplace"], op["cpu"]
    elif kind == "binary":
        t.kind = op["fn"]
        t.src, t.inplace, t.cpu = [int(r[1:]) for r in op["src"]], op["inplace"], op["cpu"]
    elif kind == "copy":
        t.src, t.type, t.cpu = [int(op["src"][1:])], op["type"], op["cpu"]
    elif kind == "concat":
        t.src = [int(r[1:]) for r in op["src"]]
    elif kind == "row":
        t.kind, t.src = op["fn"], [int(op["src"][1:])]
    elif kind == "mul_mat":
        t.src = [int(r[1:]) for r in op["src"]]
    elif kind == "transpose":
        if op.get("via") not in ("permute", "transpose"):
            raise Unexportable(f"op #{op['id']}: 'via' of a transpose is permute or transpose")
        t.src, t.permute = [int(op["src"][1:])], op["via"] == "permute"
    elif kind == "get_rows":
        t.src, t.ne, t.first, t.step = [int(op["src"][1:])], (1, op["n"]), op["first"], op["step"]
    elif kind == "rope":
        if op.get("mode") not in ("normal", "neox"):
            raise Unexportable(f"op #{op['id']}: 'mode' of a rope is normal or neox")
        t.src, t.mode, t.n_dims, t.heads = [int(op["src"][1:])], op["mode"], op["n_dims"], op["heads"]
        t.first, t.step = op["positions"]
    elif kind == "set_rows":
        t.src, t.first, t.step = [int(r[1:]) for r in op["src"]], op["first"], op["step"]
    elif kind == "conv_2d_dw":
        t.src, t.stride, t.pad = [int(r[1:]) for r in op["src"]], op["stride"], op["pad"]
    elif kind == "view":
        t.src = [int(op["src"][1:])]
        if op.get("reshape"):
            t.kind = "reshape"
        else:
            t.ne, t.offset = (op["n"], 1), op["offset"]
    else:
        t.of = int(op["of"][1:])
    return t


class Graphs:
    """The Writer's view of the program's graphs; it keeps `graphs`, `of_tensor` (op id -> its graph), `labels`,
    `taken` (the C names in use) and `base_role` (op id -> role) as it writes."""

    def graph_of_seal(self, ref: str) -> Graph:
        sid = int(ref[1:])
        for g in self.graphs:
            if g.seal == sid:
                return g
        raise Unexportable(f"no graph is sealed by {ref}")

    def tensor(self, ref: str) -> Tensor:
        tid = int(ref[1:])
        g = self.of_tensor.get(tid)
        if g is None:
            raise Unexportable(f"{ref} names no tensor")
        return g.tensors[tid]

    def label(self, g: Graph) -> int:
        """Graphs are numbered in the order the file first builds them (the program's order is its own)."""
        if g.index not in self.labels:
            self.labels[g.index] = len(self.labels) + 1
        return self.labels[g.index]

    def name(self, g: Graph) -> str:
        """"graph N", and its form once it has changed since sealed: a changed graph is not the graph it was."""
        return f"graph {self.label(g)}" + (f" (form {g.form})" if g.form > 1 else "")

    def open_graph(self) -> Graph:
        if not self.graphs or self.graphs[-1].seal is not None:
            self.graphs.append(Graph(len(self.graphs)))
        return self.graphs[-1]

    def add(self, g: Graph, t: Tensor) -> None:
        g.tensors[t.id] = t
        self.of_tensor[t.id] = g

    def shape(self, t: Tensor) -> tuple:
        if t.kind == "leaf":
            return t.ne
        if t.kind == "view-external":
            return self.shape(self.of_tensor[t.of].tensors[t.of])
        a = self.of_tensor[t.src[0]].tensors[t.src[0]]
        sa = self.shape(a)
        if t.kind == "concat":
            b = self.of_tensor[t.src[1]].tensors[t.src[1]]
            return (sa[0], sa[1] + self.shape(b)[1])
        if t.kind == "mul_mat":  # [K, M] x [K, N] -> [M, N]
            b = self.of_tensor[t.src[1]].tensors[t.src[1]]
            return (sa[1], self.shape(b)[1])
        if t.kind == "transpose":
            return (sa[1], sa[0])
        if t.kind == "get_rows":
            return (sa[0], t.ne[1])
        if t.kind == "conv_2d_dw":  # kernel [KW, KH] over input [W, H]
            sb = self.shape(self.of_tensor[t.src[1]].tensors[t.src[1]])
            return ((sb[0] + 2 * t.pad - sa[0]) // t.stride + 1, (sb[1] + 2 * t.pad - sa[1]) // t.stride + 1)
        if t.kind == "reshape":
            return (sa[0] * sa[1], 1)
        if t.kind == "view":
            return (t.ne[0], 1)
        return sa

    def dtype(self, t: Tensor) -> str:
        if t.kind in ("leaf", "copy"):
            return t.type
        if t.kind in ("mul_mat", "get_rows"):
            return "f32"
        if t.kind == "view-external":
            return self.dtype(self.of_tensor[t.of].tensors[t.of])
        if t.kind == "conv_2d_dw":  # the input's type, as ggml_conv_2d_dw_direct makes it
            return self.dtype(self.of_tensor[t.src[1]].tensors[t.src[1]])
        return self.dtype(self.of_tensor[t.src[0]].tensors[t.src[0]])

    def reachable(self, g: Graph) -> list[Tensor]:
        """The tensors of g that its outputs reach, in the order the adapter makes them: from each output (in
        the order they were added), sources first (GgmlGraphAdapter::Make)."""
        order: list[Tensor] = []
        seen: set[int] = set()

        def visit(i: int) -> None:
            if i in seen:
                return
            seen.add(i)
            for s in g.tensors[i].src:
                visit(s)
            order.append(g.tensors[i])

        for t in g.tensors.values():
            if t.output:
                visit(t.id)
        return order

    # ---- names -------------------------------------------------------------------------------------------

    def unique(self, base: str) -> str:
        base = re.sub(r"[^A-Za-z0-9_]", "_", base)[:MAX_NAME].strip("_") or "t"
        name, n = base, 2
        while name in self.taken:
            name, n = f"{base}{n}", n + 1
        self.taken.add(name)
        return name

    def role(self, t: Tensor, names: dict) -> str:
        def n(i):
            return names[i]
        if t.kind == "leaf":
            return "x" if t.input else ("w_own" if t.preallocated else "w")
        if t.kind == "view-external":
            return "view_of_" + self.role_of_placed(t.of)
        if t.kind in ("scale", "neg"):
            return f"{t.kind}d_{n(t.src[0])}" if t.kind == "scale" else f"neg_{n(t.src[0])}"
        if t.kind in ("add", "mul"):
            return f"{n(t.src[0])}_{'plus' if t.kind == 'add' else 'times'}_{n(t.src[1])}"
        if t.kind == "copy":
            return f"{n(t.src[0])}_{t.type}"
        if t.kind == "concat":
            return f"{n(t.src[0])}_cat_{n(t.src[1])}"
        if t.kind == "view":
            return f"view_of_{n(t.src[0])}"
        if t.kind in ("rms_norm", "soft_max"):
            return f"{t.kind}_{n(t.src[0])}"
        if t.kind == "mul_mat":
            return f"{n(t.src[0])}_x_{n(t.src[1])}"
        if t.kind == "transpose":
            return f"{n(t.src[0])}_T"
        if t.kind == "conv_2d_dw":
            return f"{n(t.src[1])}_conv_{n(t.src[0])}"
        if t.kind == "get_rows":
            return f"rows_of_{n(t.src[0])}"
        if t.kind == "rope":
            return f"rope_{n(t.src[0])}"
        if t.kind == "set_rows":
            return f"{n(t.src[0])}_set"
        return f"{n(t.src[0])}_flat"

    def role_of_placed(self, tid: int) -> str:
        return self.base_role.get(tid, "t")
