"""A graph program (harness/programs/graph/codec.h, JSON) as a short standalone C reproducer on ggml's public
API, in ggml's terms: what `lifeline export` writes for the findings of ggml_graph_topology (ggml's CPU
backend) and ggml_vulkan_graph_topology (ggml-vulkan, and ggml_backend_sched over ggml-vulkan and the CPU).

The C does what the harness's adapters do (harness/programs/graph/upstream/ggml_graph_adapter.cc), step by
step: every reserve and placement builds its graph afresh in a new ggml context; a leaf view of another
graph's tensor views that tensor as last placed; a pre-allocated leaf gets a backend buffer of its own; a
graph with an op marked for the CPU, or every graph of a "scheduled" program, goes to a ggml_backend_sched (Vulkan
only), whose every other placement is split alone first as the harness does (ggml_backend_sched_split_graph of a
build of its own, as llama.cpp counts a graph's splits); an allocator with several
threads computes on a ggml_threadpool of its own, kept for the program. Tensors are named by their role
(`x`, `w`, `neg_x`, `x_plus_w`, `view_of_y`), graphs and contexts by number, and the steps that only change
what the next build looks like (a rewired edge, a new output) are comments.

What the finding's report (bug.json "report") says goes in too: the contract broken, quoted, and what is
expected, printed when the program starts; "check" adds what shows it: "supports-op" asks
ggml_backend_supports_op about every node before each compute and prints the answers; "fresh-gallocr" places
each computed graph again with a new gallocr and compares the outputs (an assert with expected vs actual,
for a finding whose outputs come out wrong without a crash); "pool-computes": N computes the threadpool
makes before the program's first (how many graphs a long-lived process computes on one pool); "canary" computes
the program's last graph once more first, in a buffer of its own (ggml_backend_alloc_ctx_tensors) with a canary
tensor after its last one and every byte outside its tensors set to 0x5A, and checks those bytes after the
compute: a write past a tensor shows without a sanitizer (the program goes on to its placement as the fuzzer made
it, where ASan reports, and exits 1 at its end when a byte was overwritten).

generate(program, finding) -> C source. `finding`: {"id", "title", "report": {...}} from bug.json, and
"backend": "cpu" or "vulkan".
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional

MAX_NAME = 32



# The program options (harness/programs/graph/format.h: Program::weights, shared_pool, chunked, reuse) this
# exporter does not write yet: the C says what the program did and what the file does instead.
UNWRITTEN_OPTIONS = {
    "weights": "the program placed its pre-allocated leafs as weights (ggml_backend_alloc_ctx_tensors*, in chunks); "
               "this file gives each its own buffer instead",
    "shared_pool": "the program computed on one CPU thread pool for every thread count; this file makes one pool per "
                   "count",
    "chunked": "the program's host buffer types said a maximum size of 256 bytes (gallocr in chunks); this file uses "
               "ggml_backend_cpu_buffer_type(), which has none",
    "reuse": "the program computed unchanged graphs again without building them anew (graph reuse); this file "
             "builds every placement",
}

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


def _c_float(v: float) -> str:
    s = repr(float(v))
    return (s if ("." in s or "e" in s) else s + ".0") + "f"


def _c_string(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


class Writer:
    def __init__(self, program: dict, finding: dict):
        self.program, self.finding = program, finding
        self.report = finding.get("report") or {}
        self.backend = finding.get("backend", "cpu")
        check = self.report.get("check")
        self.checks = set(check if isinstance(check, list) else [check] if check else [])
        self.graphs: list[Graph] = []
        self.of_tensor: dict[int, Graph] = {}
        self.placed: dict[int, str] = {}   # tensor op id -> C name of its latest placed build
        self.taken: set[str] = set()
        self.body: list[str] = []
        self.builds = 0
        # The last build's get_rows indices and rope positions: (tensor, its values), set once placed.
        self.row_sets: list[tuple[str, str]] = []
        self.allocators_used: set[int] = set()
        self.threads_now = 1
        self.pools: dict[int, str] = {}
        self.split_graphs_placed: dict[int, bool] = {}
        self.sched_placements = 0  # placements by the scheduler so far: every other one is split alone first
        self.buffers: list[str] = []
        self.contexts: list[str] = []
        self.uses = set()  # helpers the body calls
        self.depth = 1      # indentation of emitted lines
        self.base_role: dict[int, str] = {}  # tensor id -> its role, before a build's number is added
        self.labels: dict[int, int] = {}  # graph index -> its number in the file
        self.frees: list[str] = []  # what the end frees besides the allocators, contexts and backends
        self.loop_outputs: Optional[str] = None  # the fresh-gallocr loop's array of outputs, while it is emitted

    # ---- the program's graphs ----------------------------------------------------------------------

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

    # ---- emitting ----------------------------------------------------------------------------------------

    def emit(self, line: str = "") -> None:
        self.body.append(("    " * self.depth + line) if line else "")

    def ggml_type(self, ty: str) -> str:
        return "GGML_TYPE_F16" if ty == "f16" else "GGML_TYPE_F32"

    def build(self, g: Graph, why: str, ctx: Optional[str] = None) -> tuple[str, str, dict]:
        """Emits a build of graph g in a new context (`ctx`: an lvalue to hold it, else a variable of its own);
        returns (context, graph variable, names by tensor id)."""
        self.prebuild_sources(g)
        self.builds += 1
        gf = f"gf{self.builds}"
        if why:
            self.emit(f"/* {why} */")
        if ctx is None:
            ctx = f"ctx{self.builds}"
            self.contexts.append(ctx)
            self.emit(f"struct ggml_context * {ctx} = new_context();")
        else:
            self.emit(f"{ctx} = new_context();")
        names: dict[int, str] = {}
        self.row_sets = []
        gf_decl = f"struct ggml_cgraph * {gf} = ggml_new_graph({ctx});"
        self.emit(gf_decl)
        roots = {t.id for t in g.tensors.values() if t.output}
        outs = [t for t in g.tensors.values() if t.output]
        expanded: set[int] = set()
        for t in self.reachable(g):
            self.base_role[t.id] = self.role(t, names)
            name = self.unique(self.base_role[t.id])
            names[t.id] = name
            ne0, ne1 = self.shape(t)
            src = [names[s] for s in t.src]
            ip = "_inplace" if t.inplace else ""
            if t.kind == "leaf":
                expr = f"ggml_new_tensor_2d({ctx}, {self.ggml_type(t.type)}, {t.ne[0]}, {t.ne[1]})"
            elif t.kind == "view-external":
                if t.of not in self.placed:
                    raise Unexportable(f"the view of #{t.of} needs a placement of its graph first")
                expr = f"ggml_view_tensor({ctx}, {self.placed[t.of]})"
            elif t.kind == "scale":
                expr = f"ggml_scale{ip}({ctx}, {src[0]}, {_c_float(t.param)})"
            elif t.kind == "neg":
                expr = f"ggml_neg{ip}({ctx}, {src[0]})"
            elif t.kind in ("add", "mul"):
                expr = f"ggml_{t.kind}{ip}({ctx}, {src[0]}, {src[1]})"
            elif t.kind == "copy":
                expr = (f"ggml_cpy({ctx}, {src[0]}, ggml_new_tensor_2d({ctx}, {self.ggml_type(t.type)}, "
                        f"{ne0}, {ne1}))")
            elif t.kind == "concat":
                expr = f"ggml_concat({ctx}, {src[0]}, {src[1]}, 1)"
            elif t.kind == "view":
                expr = f"ggml_view_1d({ctx}, {src[0]}, {t.ne[0]}, {t.offset} * ggml_type_size({src[0]}->type))"
            elif t.kind == "rms_norm":
                expr = f"ggml_rms_norm({ctx}, {src[0]}, 1e-6f)"
            elif t.kind == "soft_max":
                expr = f"ggml_soft_max({ctx}, {src[0]})"
            elif t.kind == "mul_mat":  # the program's 2-D tensors are ggml's: [K, M] x [K, N] -> [M, N]
                expr = f"ggml_mul_mat({ctx}, {src[0]}, {src[1]})"
            elif t.kind == "transpose":  # a view that is not contiguous, copied out in order
                view = (f"ggml_permute({ctx}, {src[0]}, 1, 0, 2, 3)" if t.permute
                        else f"ggml_transpose({ctx}, {src[0]})")
                expr = f"ggml_cont({ctx}, {view})"
            elif t.kind == "get_rows":  # the rows from an int32 input, set once the graph is placed (place)
                source_rows = self.shape(self.of_tensor[t.src[0]].tensors[t.src[0]])[1]
                rows = ", ".join(str((t.first + j * t.step) % source_rows) for j in range(ne1))
                idx = self.unique(f"{name}_idx")
                self.emit(f"struct ggml_tensor * {idx} = ggml_new_tensor_1d({ctx}, GGML_TYPE_I32, {ne1});")
                self.emit(f"ggml_set_input({idx});")
                self.row_sets.append((idx, rows))
                expr = f"ggml_get_rows({ctx}, {src[0]}, {idx})"
            elif t.kind == "rope":  # [ne0, heads, tokens], one position per token from an int32 input (as get_rows)
                tokens = ne1 // t.heads
                pos = self.unique(f"{name}_pos")
                self.emit(f"struct ggml_tensor * {pos} = ggml_new_tensor_1d({ctx}, GGML_TYPE_I32, {tokens});")
                self.emit(f"ggml_set_input({pos});")
                self.row_sets.append((pos, ", ".join(str(t.first + j * t.step) for j in range(tokens))))
                turned = self.unique(f"{name}_turned")
                mode = "GGML_ROPE_TYPE_NEOX" if t.mode == "neox" else "GGML_ROPE_TYPE_NORMAL"
                expr = self.reshaped(ctx, turned, t, ne0, ne1,
                                     f"ggml_rope_ext({ctx}, ggml_reshape_3d({ctx}, {src[0]}, {ne0}, {t.heads}, {tokens}), "
                                     f"{pos}, NULL, {t.n_dims}, {mode}, 0, 10000.0f, 1.0f, 0.0f, 1.0f, 0.0f, 0.0f)")
            elif t.kind == "conv_2d_dw":  # one channel: the program's [W, H] read as ggml's [W, H, 1, 1]
                ks, xs = self.shape(self.of_tensor[t.src[0]].tensors[t.src[0]]), self.shape(
                    self.of_tensor[t.src[1]].tensors[t.src[1]])
                conv = self.unique(f"{name}_4d")
                expr = self.reshaped(ctx, conv, t, ne0, ne1,
                                     f"ggml_conv_2d_dw_direct({ctx}, ggml_reshape_4d({ctx}, {src[0]}, {ks[0]}, {ks[1]}, 1, 1), "
                                     f"ggml_reshape_4d({ctx}, {src[1]}, {xs[0]}, {xs[1]}, 1, 1), {t.stride}, {t.stride}, "
                                     f"{t.pad}, {t.pad}, 1, 1)")
            elif t.kind == "set_rows":  # a view of the destination src[0]; the rows' places from an int32 input
                n_rows = self.shape(self.of_tensor[t.src[1]].tensors[t.src[1]])[1]
                idx = self.unique(f"{name}_idx")
                self.emit(f"struct ggml_tensor * {idx} = ggml_new_tensor_1d({ctx}, GGML_TYPE_I32, {n_rows});")
                self.emit(f"ggml_set_input({idx});")
                self.row_sets.append((idx, ", ".join(str((t.first + j * t.step) % ne1) for j in range(n_rows))))
                expr = f"ggml_set_rows({ctx}, {src[0]}, {src[1]}, {idx})"
            else:
                expr = f"ggml_reshape_1d({ctx}, {src[0]}, {ne0 * ne1})"
            slot = self.out_slot(t, outs)
            if t.output:  # an output is flagged and expanded as it is made, as the adapter does
                self.uses.add("output")
                expr = f"output({gf}, {expr})"
            self.emit(f"struct ggml_tensor * {name} = {slot}{expr};")
            if t.kind == "leaf" and t.input:
                self.emit(f"ggml_set_input({name});")
            if t.kind == "leaf" and t.preallocated:
                buf = f"{name}_buf"
                self.buffers.append(buf)
                self.emit(f"ggml_backend_buffer_t {buf} = ggml_backend_alloc_buffer({self.backend_var()}, "
                          f"ggml_nbytes({name}) + 64); /* memory of its own */")
                self.emit(f"ggml_backend_tensor_alloc({buf}, {name}, ggml_backend_buffer_get_base({buf}));")
        return ctx, gf, names

    def reshaped(self, ctx: str, var: str, t: Tensor, ne0: int, ne1: int, call: str) -> str:
        """An op ggml computes in a layout of its own (rope, conv_2d_dw): `var` = `call`, flagged an output when the
        program's tensor is one (its own bytes are the output, as the adapter flags them), read back as the program's
        [ne0, ne1]."""
        self.emit(f"struct ggml_tensor * {var} = {call};")
        if t.output:
            self.emit(f"ggml_set_output({var});")
        return f"ggml_reshape_2d({ctx}, {var}, {ne0}, {ne1})"

    def out_slot(self, t: Tensor, outs: list) -> str:
        """In the fresh-gallocr loop, an output's tensor also goes to the pass's row of outputs."""
        if self.loop_outputs is None or not t.output:
            return ""
        return f"{self.loop_outputs}[pass][{[o.id for o in outs].index(t.id)}] = "

    def prebuild_sources(self, g: Graph) -> None:
        """A leaf view of a tensor whose graph was never placed views a build of that graph that is not placed
        either (GgmlGraphAdapter::Source): built first."""
        for t in self.reachable(g):
            if t.kind == "view-external" and t.of not in self.placed:
                h = self.of_tensor[t.of]
                _, _, hn = self.build(h, f"{self.name(h)}, built and never placed: the next graph views it")
                self.placed[t.of] = hn[t.of]

    def backend_var(self) -> str:
        return "vk" if self.backend == "vulkan" else "cpu"

    def galloc(self, k: int) -> str:
        self.allocators_used.add(k)
        return f"galloc{k}" if len(self.program.get("allocators", [])) > 1 and self.multi_alloc else "galloc"

    def set_threads(self, k: int) -> None:
        n = self.program["allocators"][k]["threads"]
        if n == self.threads_now:
            return
        self.threads_now = n
        if n > 1 and n not in self.pools:
            pool = f"pool{n}" if len(self.distinct_threads) > 1 else "pool"
            self.pools[n] = pool
            self.emit(f"struct ggml_threadpool_params {pool}_params = ggml_threadpool_params_default({n});")
            self.emit(f"struct ggml_threadpool * {pool} = ggml_threadpool_new(&{pool}_params);")
        self.emit(f"ggml_backend_cpu_set_threadpool(cpu, {self.pools[n] if n > 1 else 'NULL'});")
        self.emit(f"ggml_backend_cpu_set_n_threads(cpu, {n});")

    def split(self, g: Graph) -> bool:
        if self.backend != "vulkan":
            return False
        if self.program.get("scheduled") or any(t.cpu for t in self.reachable(g)):
            return True
        return any(self.split_graphs_placed.get(self.of_tensor[t.of].index, False)
                   for t in self.reachable(g) if t.kind == "view-external")

    def assign_backends(self, g: Graph, names: dict) -> None:
        """The scheduler reset, and the backends the harness sets by hand (SchedulerFor): the CPU for an op marked
        for it, ggml-vulkan for a plain leaf (no memory, not an input)."""
        self.emit("ggml_backend_sched_reset(sched);")
        for t in self.reachable(g):
            if t.cpu:
                self.emit(f"ggml_backend_sched_set_tensor_backend(sched, {names[t.id]}, cpu);")
            elif t.kind == "leaf" and not t.input and not t.preallocated:
                self.emit(f"ggml_backend_sched_set_tensor_backend(sched, {names[t.id]}, vk);")

    def place(self, k: int, g: Graph, compute: bool, last: bool = False) -> None:
        """A reserve (`compute` false) or a placement and compute of graph g by allocator k. With check
        "fresh-gallocr", the program's `last` placement is made twice in a loop: by the allocator, and by a new
        gallocr whose outputs are the expected ones."""
        self.prebuild_sources(g)
        what = self.name(g)
        split = self.split(g)
        fresh = compute and last and "fresh-gallocr" in self.checks and not split
        if compute and last and "canary" in self.checks and not split and self.backend == "cpu":
            self.canary(k, g)
        ga = None if split else self.galloc(k)
        nbuf = len(self.program["allocators"][k]["buffers"])
        why = (f"{'placed and computed' if compute else 'planned'}: {what}"
               + (" (split between ggml-vulkan and the CPU by ggml_backend_sched)" if split else ""))
        if fresh:
            outs = [t for t in g.tensors.values() if t.output]
            self.emit(f"/* {why}; then, to compare, the same graph placed by a new gallocr */")
            self.emit(f"ggml_gallocr_t fresh = ggml_gallocr_new({self.buft()});")
            n = self.builds + 1
            self.emit(f"struct ggml_context * ctx{n}[2];")
            self.emit(f"struct ggml_tensor * out{n}[2][{len(outs)}];")
            self.emit("for (int pass = 0; pass < 2; ++pass) {")
            self.depth += 1
            self.fresh_ctx = f"ctx{n}"
            self.loop_outputs = f"out{n}"
            ctx, gf, names = self.build(g, "", ctx=f"ctx{n}[pass]")
            self.loop_outputs = None
        else:
            ctx, gf, names = self.build(g, why)
        if split:
            self.uses.add("sched")
            if compute:
                self.sched_placements += 1
            if compute and self.sched_placements % 2 == 0:
                _, probe, probe_names = self.build(g, f"{what} split alone first, on a build of its own "
                                                      "(ggml_backend_sched_split_graph: \"Split graph without "
                                                      "allocating it\")")
                self.assign_backends(g, probe_names)
                self.emit(f"ggml_backend_sched_split_graph(sched, {probe});")
                self.emit(f"/* then {what} itself */")
            self.assign_backends(g, names)
            call = f"ggml_backend_sched_{'alloc_graph' if compute else 'reserve'}(sched, {gf})"
        elif not compute:
            call = (f"ggml_gallocr_reserve_n({ga}, {gf}, buffer_ids, buffer_ids)" if nbuf > 1
                    else f"ggml_gallocr_reserve({ga}, {gf})")
            if nbuf > 1:
                self.uses.add("buffer_ids")
        else:
            call = f"ggml_gallocr_alloc_graph({'pass == 0 ? ' + ga + ' : fresh' if fresh else ga}, {gf})"
        if not compute:
            self.emit(f"{call};")
            return
        self.emit(f"if (!{call}) {{ fprintf(stderr, \"{call.split('(')[0]} failed\\n\"); return 1; }}")
        for idx, rows in self.row_sets:
            self.emit(f"ggml_backend_tensor_set({idx}, (const int32_t[]){{{rows}}}, 0, ggml_nbytes({idx}));")
        if "fresh-gallocr" in self.checks:
            for t in self.reachable(g):
                if t.kind == "leaf" and not t.preallocated:
                    self.emit(f"ggml_set_f32({names[t.id]}, 1.5f); /* the inputs' values */")
        if self.backend == "cpu" or split:
            self.set_threads(k)
        if "supports-op" in self.checks:
            self.uses.add("ask_supports_op")
            self.emit(f"ask_supports_op({self.backend_var()}, {gf});")
        if "pool-computes" in self.checks and self.report.get("pool_computes") and not self.pool_aged:
            self.pool_aged = True
            n = int(self.report["pool_computes"])
            self.emit(f"/* a long-lived process: the pool has computed {n:,} graphs before this one */")
            self.emit(f"for (int i = 0; i < {n}; ++i) ggml_backend_graph_compute(cpu, {gf});")
        if split:
            self.emit(f"ggml_backend_sched_graph_compute(sched, {gf});")
        else:
            self.emit(f"ggml_backend_graph_compute({self.backend_var()}, {gf});")
        if fresh:
            n = self.fresh_ctx[3:]
            self.depth -= 1
            self.emit("}")
            self.uses.add("fresh")
            self.emit(f"same_outputs(out{n}[0], out{n}[1], {len(outs)});")
            self.frees.append("ggml_gallocr_free(fresh);")
            self.contexts += [f"{self.fresh_ctx}[0]", f"{self.fresh_ctx}[1]"]
            return
        for t in self.reachable(g):
            self.placed[t.id] = names[t.id]
        self.split_graphs_placed[g.index] = split

    def canary(self, k: int, g: Graph) -> None:
        """Graph g built and computed once in a buffer of its own, a canary tensor after its last tensor, the
        bytes outside its tensors set to 0x5A before the compute and checked after (see the module's docstring)."""
        ctx, gf, names = self.build(g, f"first, to see the bug without a sanitizer: {self.name(g)} in a buffer "
                                       "of its own, a canary tensor after its last tensor, every byte outside its "
                                       "tensors set to 0x5A")
        self.uses.update({"canary", "output"})
        self.emit(f"ggml_set_name(ggml_new_tensor_1d({ctx}, GGML_TYPE_F32, 16), \"canary\");")
        buf = f"canary_buf"
        self.buffers.append(buf)
        self.emit(f"ggml_backend_buffer_t {buf} = ggml_backend_alloc_ctx_tensors({ctx}, cpu);")
        for idx, rows in self.row_sets:
            self.emit(f"ggml_backend_tensor_set({idx}, (const int32_t[]){{{rows}}}, 0, ggml_nbytes({idx}));")
        self.emit(f"outside_tensors({ctx}, {buf}, 0);")
        self.set_threads(k)
        self.emit(f"ggml_backend_graph_compute(cpu, {gf});")
        self.emit(f"int overwritten = outside_tensors({ctx}, {buf}, 1);")
        self.emit()

    def measure(self, k: int, g: Graph) -> None:
        """ggml_gallocr_reserve_n_size of graph g by allocator k (a split graph: its scheduler's reserve, as the
        adapter does), then what the allocator's buffers hold, as ggml_gallocr_get_buffer_size reads them."""
        if self.split(g):
            self.place(k, g, compute=False)
            return
        ga = self.galloc(k)
        nbuf = len(self.program["allocators"][k]["buffers"])
        ctx, gf, _ = self.build(g, f"measured: {self.name(g)} (the sizes a reserve would allocate)")
        sizes = f"sizes{self.builds}"
        ids = "buffer_ids, buffer_ids" if nbuf > 1 else "NULL, NULL"
        if nbuf > 1:
            self.uses.add("buffer_ids")
        self.emit(f"size_t {sizes}[{nbuf}];")
        self.emit(f"ggml_gallocr_reserve_n_size({ga}, {gf}, {ids}, {sizes});")
        for b in range(nbuf):
            self.emit(f"fprintf(stderr, \"ggml_gallocr_reserve_n_size: buffer {b} needs %zu bytes; "
                      f"ggml_gallocr_get_buffer_size: %zu\\n\", {sizes}[{b}], ggml_gallocr_get_buffer_size({ga}, {b}));")

    def buft(self) -> str:
        return "ggml_backend_vk_buffer_type(0)" if self.backend == "vulkan" else "ggml_backend_cpu_buffer_type()"

    # ---- the program -------------------------------------------------------------------------------------

    def run(self) -> str:
        ops = self.program["ops"]
        allocators = self.program["allocators"]
        used = {op["allocator"] for op in ops if op["op"] in ("reserve", "alloc+compute", "measure")}
        self.multi_alloc = len(used) > 1
        self.distinct_threads = {allocators[k]["threads"] for k in used} - {1}
        self.pool_aged = False
        placements = [op["id"] for op in ops if op["op"] in ("reserve", "alloc+compute")]
        last_placement = placements[-1] if placements else None
        for option, what in UNWRITTEN_OPTIONS.items():
            if self.program.get(option):
                self.emit(f"/* {what} */")
        for op in ops:
            kind = op["op"]
            refused = (op.get("model") or {}).get("expect")
            if refused and kind in ("reserve", "alloc+compute", "rewire", "measure"):
                # The harness predicts ggml (or the program's own rules) refuses this step, and it changes
                # nothing: the C leaves it out, saying so.
                self.emit(f"/* a {kind} the program predicts to be refused ({refused}): left out */")
                continue
            if kind in ("leaf", "unary", "binary", "copy", "concat", "view", "view-external", "row", "mul_mat",
                        "transpose", "get_rows", "rope", "set_rows", "conv_2d_dw"):
                g = self.open_graph()
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
                self.add(g, t)
            elif kind == "mark-output":
                t = self.tensor(op["tensor"])
                if not t.output:
                    t.output = True
                    h = self.of_tensor[t.id]
                    if h.seal is not None:
                        h.form += 1
                        self.emit(f"/* the last tensor of graph {self.label(h)} becomes an output too (same counts, new "
                                  f"flag): form {h.form} */")
            elif kind == "seal":
                g = self.open_graph()
                g.seal = op["id"]
                if not any(t.output for t in g.tensors.values()):
                    list(g.tensors.values())[-1].output = True
            elif kind in ("reserve", "alloc+compute"):
                self.place(op["allocator"], self.graph_of_seal(op["graph"]), compute=kind == "alloc+compute",
                           last=op["id"] == last_placement)
                self.emit()
            elif kind == "measure":
                self.measure(op["allocator"], self.graph_of_seal(op["graph"]))
                self.emit()
            elif kind == "rewire":
                g = self.graph_of_seal(op["graph"])
                node = self.tensor(op["tensor"])
                to = int(op["to"][1:])
                self.emit(f"/* graph {self.label(g)} changes: input {op['slot']} of a {node.kind} now reads another "
                          f"tensor of the same shape (same node and leaf counts): form {g.form + 1} */")
                node.src[op["slot"]] = to
                g.form += 1
            elif kind == "grow":
                g = self.graph_of_seal(op["graph"])
                t = Tensor(op["id"], "neg", src=[int(op["of"][1:])], output=True)
                self.add(g, t)
                g.form += 1
                self.emit(f"/* graph {self.label(g)} gains a node: the negation of an output, itself an output: "
                          f"form {g.form} */")
            elif kind == "toggle-prealloc":
                t = self.tensor(op["tensor"])
                t.preallocated = not t.preallocated
                h = self.of_tensor[t.id]
                h.form += 1
                self.emit(f"/* a leaf of graph {self.label(h)} "
                          f"{'now brings memory of its own' if t.preallocated else 'no longer has memory of its own'}: "
                          f"form {h.form} */")
                for other, name in list(self.placed.items()):
                    if other == t.id:
                        del self.placed[other]
            else:
                raise Unexportable(f"op {op['op']} of #{op['id']}")
        return self.assemble()

    def assemble(self) -> str:
        r, f = self.report, self.finding
        lines = [f"/* {f['id']}: {r.get('title') or f.get('title', '')}",
                 f" * Generated by `lifeline export` from a reduced program; uses ggml's public API only.",
                 f" * Build: see report.md. Run: ./a.out (exits non-zero or aborts while the bug is there). */",
                 "#include <stdio.h>", "#include \"ggml.h\"", "#include \"ggml-alloc.h\"", "#include \"ggml-backend.h\"",
                 "#include \"ggml-cpu.h\""]
        if self.backend == "vulkan":
            lines.append("#include \"ggml-vulkan.h\"")
        if "same_outputs" in "".join(self.body):
            lines.insert(4, "#include <assert.h>")
        lines += ["", "static struct ggml_context * new_context(void) {",
                  "    struct ggml_init_params p = {ggml_tensor_overhead() * 64 + ggml_graph_overhead(), NULL, true};",
                  "    return ggml_init(p);", "}"]
        if "fill" in self.uses:
            lines += ["", "static void fill(struct ggml_tensor * t) { /* inputs: small multiples of 1/4 */",
                      "    float v[4096]; ggml_fp16_t h[4096];",
                      "    for (int64_t i = 0; i < ggml_nelements(t); ++i) v[i] = (float)(i % 9 - 4) / 4;",
                      "    if (t->type == GGML_TYPE_F16) ggml_fp32_to_fp16_row(v, h, ggml_nelements(t));",
                      "    ggml_backend_tensor_set(t, t->type == GGML_TYPE_F16 ? (void *)h : (void *)v, 0, ggml_nbytes(t));",
                      "}"]
        if "output" in self.uses:
            lines += ["", "static struct ggml_tensor * output(struct ggml_cgraph * gf, struct ggml_tensor * t) {",
                      "    ggml_set_output(t);", "    ggml_build_forward_expand(gf, t);", "    return t;", "}"]
        if "fresh" in self.uses:
            lines += ["", "/* Each output as placed (got) against the same graph's as a new gallocr placed it (want). */",
                      "static void same_outputs(struct ggml_tensor ** got, struct ggml_tensor ** want, int n) {",
                      "    for (int o = 0; o < n; ++o) {",
                      "        for (int i = 0; i < ggml_nelements(got[o]); ++i) {",
                      "            float a = ggml_get_f32_1d(got[o], i), b = ggml_get_f32_1d(want[o], i);",
                      "            if (a != b) fprintf(stderr, \"actual: output %d (%s) element %d is %g; expected %g\\n\",",
                      "                                o, ggml_op_desc(got[o]), i, a, b);",
                      "            assert(a == b && \"an output differs from the same graph placed by a new gallocr\");",
                      "        }", "    }", "}"]
        if "canary" in self.uses:
            lines[4:4] = ["#include <string.h>"]
            lines += ["", "/* Sets (check 0) or checks (check 1) every byte of buf outside the context's tensors: the gaps the",
                      "   buffer's alignment leaves and the tensor named canary. Returns how many were overwritten. */",
                      "static int outside_tensors(struct ggml_context * ctx, ggml_backend_buffer_t buf, int check) {",
                      "    unsigned char * base = ggml_backend_buffer_get_base(buf);",
                      "    int changed = 0;",
                      "    for (size_t i = 0; i < ggml_backend_buffer_get_size(buf); ++i) {",
                      "        struct ggml_tensor * before = NULL; /* the tensor that ends nearest below byte i */",
                      "        int inside = 0;",
                      "        for (struct ggml_tensor * t = ggml_get_first_tensor(ctx); t; t = ggml_get_next_tensor(ctx, t)) {",
                      "            unsigned char * d = t->data;",
                      "            if (t->view_src || !d || strcmp(t->name, \"canary\") == 0) continue;",
                      "            if (d <= base + i && base + i < d + ggml_nbytes(t)) inside = 1;",
                      "            if (d + ggml_nbytes(t) <= base + i && (!before || (unsigned char *)before->data + ggml_nbytes(before) < d + ggml_nbytes(t))) before = t;",
                      "        }",
                      "        if (inside) continue;",
                      "        if (!check) { base[i] = 0x5A; continue; }",
                      "        if (base[i] != 0x5A && changed++ == 0)",
                      "            fprintf(stderr, \"actual: byte %zu of the buffer, outside every tensor, was written (0x5a -> 0x%02x): \"",
                      "                    \"%zu bytes past the end of %s (%s)\\n\", i, base[i],",
                      "                    before ? (size_t)(base + i - ((unsigned char *)before->data + ggml_nbytes(before))) : i,",
                      "                    before ? ggml_op_desc(before) : \"the buffer's start\", before ? before->name : \"\");",
                      "    }",
                      "    return changed;",
                      "}"]
        if "ask_supports_op" in self.uses:
            lines += ["", "static void ask_supports_op(ggml_backend_t backend, struct ggml_cgraph * gf) {",
                      "    for (int i = 0; i < ggml_graph_n_nodes(gf); ++i) {",
                      "        struct ggml_tensor * n = ggml_graph_node(gf, i);",
                      "        printf(\"ggml_backend_supports_op(%s, %s on %s) = %d\\n\", ggml_backend_name(backend),",
                      "               ggml_op_desc(n), ggml_type_name(n->src[0] ? n->src[0]->type : n->type),",
                      "               ggml_backend_supports_op(backend, n));",
                      "    }", "}"]
        lines += ["", "int main(void) {"]
        said = [(k, r[k]) for k in ("contract", "expected") if r.get(k)]
        if said:  # on stderr, in order with ggml's log and the sanitizer's report
            fmt = "".join(f"{k}: %s\\n" for k, _ in said)
            lines.append(f"    fprintf(stderr, \"{fmt}\", " + ", ".join(_c_string(v) for _, v in said) + ");")
        lines.append("    ggml_backend_t cpu = ggml_backend_cpu_init();")
        if self.backend == "vulkan":
            lines.append("    ggml_backend_t vk = ggml_backend_vk_init(0);")
        if "sched" in self.uses:
            lines += ["    ggml_backend_t backends[2] = {vk, cpu};",
                      "    ggml_backend_buffer_type_t bufts[2] = {ggml_backend_vk_buffer_type(0), ggml_backend_cpu_buffer_type()};",
                      "    ggml_backend_sched_t sched = ggml_backend_sched_new(backends, bufts, 2, 2048, false, false);"]
        if "buffer_ids" in self.uses:
            lines.append("    int buffer_ids[256]; /* tensor i goes to buffer i % 2, as the program's allocator does */")
            lines.append("    for (int i = 0; i < 256; ++i) buffer_ids[i] = i % 2;")
        for k in sorted(self.allocators_used):
            n = len(self.program["allocators"][k]["buffers"])
            name = f"galloc{k}" if self.multi_alloc else "galloc"
            if n == 1:
                lines.append(f"    ggml_gallocr_t {name} = ggml_gallocr_new({self.buft()});")
            else:
                lines.append(f"    ggml_backend_buffer_type_t {name}_types[{n}] = {{"
                             + ", ".join([self.buft()] * n) + "};")
                lines.append(f"    ggml_gallocr_t {name} = ggml_gallocr_new_n({name}_types, {n});")
        lines.append("")
        lines += self.body
        while lines and lines[-1] == "":
            lines.pop()
        lines.append("")
        if "canary" in self.uses:
            lines += ["    if (overwritten) {",
                      "        fprintf(stderr, \"verdict: the bug is there: %d bytes outside every tensor were written\\n\", overwritten);",
                      "        return 1;",
                      "    }"]
        lines.append("    fprintf(stderr, \"the program ran to its end: the finding did not reproduce\\n\");")
        frees = [f"ggml_backend_buffer_free({buf});" for buf in self.buffers]
        frees += [f"ggml_gallocr_free({'galloc' + str(k) if self.multi_alloc else 'galloc'});"
                  for k in sorted(self.allocators_used)] + self.frees
        frees += [f"ggml_free({ctx});" for ctx in self.contexts]
        if "sched" in self.uses:
            frees.append("ggml_backend_sched_free(sched);")
        frees += (["ggml_backend_free(vk);"] if self.backend == "vulkan" else []) + ["ggml_backend_free(cpu);"]
        frees += [f"ggml_threadpool_free({pool});" for pool in self.pools.values()]
        line = "   "
        for f in frees:  # the teardown, a few to a line
            if len(line) + len(f) + 1 > 116:
                lines.append(line)
                line = "   "
            line += " " + f
        lines.append(line)
        lines += ["    return 0;", "}"]
        return "\n".join(lines) + "\n"


def generate(program: dict, finding: dict) -> str:
    if program.get("format") != "graph":
        raise Unexportable(f"not a graph program (format {program.get('format')!r})")
    return Writer(program, finding).run()


def code_lines(source: str) -> int:
    """Lines of code: neither blank nor only a comment."""
    n, in_comment = 0, False
    for line in source.splitlines():
        s = line.strip()
        if in_comment:
            if "*/" in s:
                in_comment = False
                s = s.split("*/", 1)[1].strip()
            else:
                continue
        if s.startswith("/*") and "*/" not in s:
            in_comment = True
            continue
        if not s or (s.startswith("/*") and s.endswith("*/")) or s.startswith("//"):
            continue
        n += 1
    return n
