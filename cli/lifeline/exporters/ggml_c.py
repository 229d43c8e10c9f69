"""A graph program (harness/programs/graph/codec.h, JSON) as a short standalone C reproducer on ggml's public
API, in ggml's terms: what `lifeline export` writes for the findings of ggml_graph_topology (ggml's CPU
backend) and ggml_vulkan_graph_topology (ggml-vulkan, and ggml_backend_sched over ggml-vulkan and the CPU).

The C does what the harness's adapters do (harness/programs/graph/upstream/ggml_graph_build.cc and
ggml_graph_adapter.cc), step by step: every reserve and placement builds its graph afresh in a new ggml context; a
leaf view of another graph's tensor views that tensor as last placed; a pre-allocated leaf gets a backend buffer
of its own; a graph with an op marked for the CPU, or every graph of a "scheduled" program, goes to a
ggml_backend_sched (Vulkan only), whose every other placement is split alone first as the harness does
(ggml_backend_sched_split_graph of a build of its own, as llama.cpp counts a graph's splits); an allocator with
several threads computes on a ggml_threadpool of its own, kept for the program. Tensors are named by their role
(`x`, `w`, `neg_x`, `x_plus_w`, `view_of_y`), graphs and contexts by number, and the steps that only change what
the next build looks like (a rewired edge, a new output) are comments.

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

This module writes the program's steps; the graphs it follows while writing (tensors, graphs and their forms,
shapes, names) are ggml_c_graphs.py's, and the file around the steps (includes, helper functions, main's prelude
and teardown) is ggml_c_file.py's.
"""
from __future__ import annotations

from typing import Optional

from .ggml_c_file import CFile
from .ggml_c_graphs import TENSOR_OPS, Graph, Graphs, Tensor, Unexportable, tensor_of


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


def _c_float(v: float) -> str:
    s = repr(float(v))
    return (s if ("." in s or "e" in s) else s + ".0") + "f"


class Writer(Graphs, CFile):
    """The program's ops in order, each written as C steps: builds, placements, computes and the checks (the
    graphs it follows: Graphs, ggml_c_graphs.py; the file around the steps: CFile, ggml_c_file.py)."""

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
            if kind in TENSOR_OPS:
                g = self.open_graph()
                self.add(g, tensor_of(op))
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
