"""A llama-runtime program (harness/programs/llama/codec.h, JSON) as a short standalone C reproducer on llama.h
(and the gguf.h it includes), in llama.cpp's terms: what `lifeline export` writes for llama_memory_differential.

The C builds the program's tiny model in the file, as harness/programs/llama/upstream/llama_models.cc does
(GGUF metadata through llama_model_init_from_user, no vocabulary, weights from a hash of each tensor's name and
element): only the model kind ("arch") the program uses. It creates one context with the program's parameters
(256 cells per stream, as the harness asks) and replays the ops with llama.h calls as
harness/programs/llama/upstream/llama_runtime.cc makes them: a decode's tokens (the format's token formula,
format.h TokensOf) go to llama_decode in calls of at most n_batch tokens, each sequence continuing from its
llama_memory_seq_pos_max + 1; states are saved into buffers and restored from them. The harness's guards are
not in the file (the finding's own is off in the program it decodes; a program that needs another is refused).

Every return the model predicts (the op's "model": {"expect"}) is checked against llama.h's contract, and so is
llama_memory_seq_keep's ("Removes all tokens that do not belong to the specified sequence": every other
sequence's llama_memory_seq_pos_max is -1 after it). A broken contract prints "actual:" and "verdict:" lines,
then assert()s in the function that checked it (a report with a stack where asserts are on: the reproducer's
"export" signature) and exits 1 where they are not.

generate(program, finding) -> C source. `finding`: {"id", "title", "report": {...}} from bug.json.
"""
from __future__ import annotations

from .ggml_c import Unexportable
from .ggml_c_file import _c_string

VOCAB = 64
# Per model kind: its GGUF metadata (llama_models.cc) beyond what every tiny model has, as (key, value) pairs
# under "<arch>."; jamba's per-layer head counts are arrays (layer 1 recurrent).
_COMMON = [("vocab_size", VOCAB), ("context_length", 4096), ("embedding_length", 64), ("block_count", 2),
           ("feed_forward_length", 128)]
_HEADS = [("attention.head_count", 2), ("attention.head_count_kv", 1)]
_SSM = [("ssm.conv_kernel", 4), ("ssm.inner_size", 128), ("ssm.state_size", 16), ("ssm.time_step_rank", 4)]
_ARCH = {"llama": _HEADS, "gemma2": _HEADS + [("attention.sliding_window", 8)],
         "mamba": [("attention.head_count", 0)] + _SSM, "jamba": _SSM}
_JAMBA_HEADS = [
    "    static const uint32_t heads[2] = {2, 0}, kv[2] = {1, 0};  /* layer 0 attention, layer 1 recurrent */",
    "    gguf_set_arr_data(g, \"jamba.attention.head_count\", GGUF_TYPE_UINT32, heads, 2);",
    "    gguf_set_arr_data(g, \"jamba.attention.head_count_kv\", GGUF_TYPE_UINT32, kv, 2);"]
# A sequence state's flag for the device form (llama.h: the tensor data stays in the context's buffers).
_DEVICE = "LLAMA_STATE_SEQ_FLAGS_ON_DEVICE"
# decode's flaws (format.h Flaw) as (position moved by, token outside the vocabulary) of the first token.
_FLAWS = {"none": (0, False), "gap": (1, False), "behind": (-1, False), "bad-token": (0, True)}
_FA = {"auto": "LLAMA_FLASH_ATTN_TYPE_AUTO", "off": "LLAMA_FLASH_ATTN_TYPE_DISABLED", "on": "LLAMA_FLASH_ATTN_TYPE_ENABLED"}
_TYPES = {"f16": "GGML_TYPE_F16", "q8_0": "GGML_TYPE_Q8_0"}

_CHECK = [
    "/* a contract of llama.h this program broke: what happened, then an assert (a report with a stack where",
    "   asserts are on) or exit 1 (where they are not) */",
    "static void check(int ok, const char * actual, long a, long b, long c) {",
    "    if (ok) return;",
    "    fprintf(stderr, \"actual: \"), fprintf(stderr, actual, a, b, c), fprintf(stderr, \"\\nverdict: the bug is there\\n\");",
    "    assert(ok && \"a contract of llama.h is broken\");",
    "    exit(1);",
    "}",
]

_KEEP_CHECK = ("check(s == {seq} || llama_memory_seq_pos_max(mem, s) < 0, \"after llama_memory_seq_keep(mem, %ld) \"\n"
               "              \"sequence %ld still holds positions up to %ld\", {seq}, s, llama_memory_seq_pos_max(mem, s));")


def _weights(recurrent: bool) -> list[str]:
    value = ("strstr(t->name, \"ssm_a\") ? -(0.1f + u) : u * 0.5f - 0.25f" if recurrent else "u * 0.5f - 0.25f")
    return [
        "/* F32 weights in [-0.25, 0.25) from a hash of the tensor's name and the element's index"
        + ("; Mamba's A negative */" if recurrent else " */"),
        "static void weights(struct ggml_tensor * t, void * ud) {",
        "    uint64_t h = 1469598103934665603ull, n = (uint64_t) ggml_nelements(t), x;",
        "    float * v = malloc(sizeof(float) * n), u;",
        "    for (const char * c = t->name; *c; ++c) h = (h ^ (uint8_t) *c) * 1099511628211ull;",
        "    for (uint64_t i = 0; i < n; ++i) {  /* splitmix64's finalizer of h + i */",
        "        x = h + i + 0x9e3779b97f4a7c15ull, x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;",
        "        x = (x ^ (x >> 27)) * 0x94d049bb133111ebull, x ^= x >> 31, u = (float) (x >> 40) / (float) (1 << 24);",
        f"        v[i] = {value};",
        "    }",
        "    ggml_backend_tensor_set(t, v, 0, ggml_nbytes(t)), free(v), (void) ud;",
        "}",
    ]


def _decode(n_seq: int, simple: bool, chunked: bool) -> list[str]:
    """The decode helper. `simple`: no shared token and no flaw in any decode of the program (each token one
    sequence's, at its last position + 1 + step); else the general one. `chunked`: some decode has more tokens than
    n_batch, which go in calls of at most n_batch."""
    head = ["/* steps x the sequences of the set, each continuing from its llama_memory_seq_pos_max + 1; the token",
            "   (seed + 7 step + 13 seq) mod 64" + ("" if simple else
                                                    ", or (seed + 7 step) mod 64 shared by the set; the first token's "
                                                    "position moved by `moved`, or a token outside the vocabulary (bad)")
            + ("; calls of at most n_batch tokens" if chunked else "") + " */"]
    if simple:
        head += ["static void decode(int set, int steps, int all_logits, int seed, long want) {",
                 f"    struct llama_batch b = llama_batch_init(steps * {n_seq}, 0, 1);",
                 "    for (int step = 0; step < steps; ++step)",
                 f"        for (int s = 0, n; s < {n_seq}; ++s) if (set >> s & 1) {{",
                 "            n = b.n_tokens++, b.token[n] = (seed + 7 * step + 13 * s) % 64, b.logits[n] = all_logits || step == steps - 1;",
                 "            b.pos[n] = llama_memory_seq_pos_max(mem, s) + 1 + step, b.n_seq_id[n] = 1, b.seq_id[n][0] = s;",
                 "        }"]
    else:
        head += ["static void decode(int set, int steps, int all_logits, int seed, int shared, int moved, int bad, long want) {",
                 f"    struct llama_batch b = llama_batch_init(steps * {n_seq}, 0, {n_seq});",
                 f"    int next[{n_seq}];",
                 f"    for (int s = 0; s < {n_seq}; ++s) next[s] = llama_memory_seq_pos_max(mem, s) + 1;",
                 "    for (int step = 0; step < steps; ++step)",
                 f"        for (int s = 0, n, pos = 0; s < {n_seq}; ++s, pos = 0) {{",
                 "            if (!(set >> s & 1) || (shared && (set & ((1 << s) - 1)))) continue;  /* shared: once */",
                 "            int seqs = shared ? set : 1 << s;",
                 f"            for (int t = 0; t < {n_seq}; ++t) if (seqs >> t & 1 && next[t] > pos) pos = next[t];",
                 "            n = b.n_tokens++, b.token[n] = n == 0 && bad ? 64 : (seed + 7 * step + (shared ? 0 : 13 * s)) % 64;",
                 "            b.pos[n] = pos + (n == 0 ? moved : 0), b.logits[n] = all_logits || step == steps - 1;",
                 f"            for (int t = b.n_seq_id[n] = 0; t < {n_seq}; ++t)",
                 "                if (seqs >> t & 1) b.seq_id[n][b.n_seq_id[n]++] = t, next[t] = b.pos[n] + 1;",
                 "        }"]
    if chunked:
        head += ["    long ret = 0;",
                 "    for (int i = 0, n = b.n_tokens; i < n && ret == 0; i += N_BATCH) {",
                 "        struct llama_batch c = b;",
                 "        c.token += i, c.pos += i, c.n_seq_id += i, c.seq_id += i, c.logits += i;",
                 "        c.n_tokens = n - i < N_BATCH ? n - i : N_BATCH, ret = llama_decode(ctx, c);",
                 "    }"]
    else:
        head += ["    long ret = llama_decode(ctx, b);"]
    return head + ["    llama_batch_free(b);",
                   "    check(ret == want, \"llama_decode returned %ld; expected %ld\", ret, want, 0);", "}"]


def _int(op: dict, key: str) -> int:
    v = op.get(key)
    if isinstance(v, bool) or not isinstance(v, int):
        raise Unexportable(f"#{op.get('id')} {op.get('op')}: operand {key!r} is {v!r}, not a number")
    return v


class Writer:
    def __init__(self, program: dict, finding: dict):
        self.program, self.finding = program, finding
        self.report = finding.get("report") or {}
        self.body: list[str] = []
        self.uses: set[str] = set()
        self.slots: dict[int, str] = {}  # slot -> the form of the state saved in it
        self.n_batch = int(program.get("n_batch", 1))
        self.n_seq = int(program.get("n_seq_max", 1))
        self.decodes: list[int] = []  # the body's decode lines, written once the helper's form is known

    def expect(self, call: str, what: str, got: str, want: str, label: str) -> None:
        """`got` (a C expression) checked against the model's `want`: the return llama.h's contract fixes."""
        self.uses.add("check")
        self.body.append(f"    r = {got}, check(r == {want}, \"{what} returned %ld; expected %ld\", r, {want}, 0);  {label}")

    def step(self, op: dict) -> None:
        kind, model = op.get("op"), op.get("model") or {}
        label = f"/* #{op.get('id')} {kind} */"
        expect = model.get("expect")
        if kind == "decode":
            flaw = op.get("flaw", "none")
            if flaw not in _FLAWS:
                raise Unexportable(f"#{op.get('id')} decode: flaw {flaw!r} is not exported (known: {', '.join(_FLAWS)})")
            seqs = op.get("seqs")
            if not isinstance(seqs, list) or not all(isinstance(q, int) and 0 <= q < 8 for q in seqs):
                raise Unexportable(f"#{op.get('id')} decode: 'seqs' is {seqs!r}, not a list of sequence ids")
            if not isinstance(expect, int) or isinstance(expect, bool):
                raise Unexportable(f"#{op.get('id')} decode: no prediction of llama_decode's return (model.expect)")
            mask, steps, shared = sum(1 << q for q in set(seqs)), _int(op, "steps"), bool(op.get("shared"))
            self.decodes.append(len(self.body))
            self.body.append([mask, steps, int(bool(op.get("all_logits"))), _int(op, "tokens"), int(shared),
                              _FLAWS[flaw][0], int(_FLAWS[flaw][1]), expect, label])
            if shared or flaw != "none":
                self.uses.add("general")
            if steps * (1 if shared else len(set(seqs))) > self.n_batch:
                self.uses.add("chunked")
        elif kind == "seq-rm":
            call = f"llama_memory_seq_rm(mem, {_int(op, 'seq')}, {_int(op, 'p0')}, {_int(op, 'p1')})"
            if expect is None:
                self.body.append(f"    {call};  {label}")
            else:
                self.expect(call, "llama_memory_seq_rm", call, str(int(bool(expect))), label)
        elif kind == "seq-cp":
            self.body.append(f"    llama_memory_seq_cp(mem, {_int(op, 'seq')}, {_int(op, 'dst')}, {_int(op, 'p0')}, "
                             f"{_int(op, 'p1')});  {label}")
        elif kind == "seq-keep":
            seq = _int(op, "seq")
            self.uses.add("check")
            self.body += [f"    llama_memory_seq_keep(mem, {seq});  {label[:-3]}: llama.h: it \"Removes all tokens that do "
                          "not belong to the specified sequence\" */",
                          f"    for (int s = 0; s < {self.n_seq}; ++s)",
                          "        " + _KEEP_CHECK.replace("{seq}", str(seq))]
        elif kind in ("seq-add", "seq-div"):
            fn = "llama_memory_seq_add" if kind == "seq-add" else "llama_memory_seq_div"
            self.body.append(f"    {fn}(mem, {_int(op, 'seq')}, {_int(op, 'p0')}, {_int(op, 'p1')}, "
                             f"{_int(op, 'delta')});  {label}")
        elif kind == "clear":
            self.body.append(f"    llama_memory_clear(mem, {'true' if op.get('data') else 'false'});  {label}")
        elif kind in ("save-seq", "save-all"):
            form = op.get("form", "buffer")
            if form not in ("buffer", "device") or (form == "device" and kind != "save-seq"):
                raise Unexportable(f"#{op.get('id')} {kind}: a state of form {form!r} is not exported; only states "
                                   "in buffers and a sequence's device states are")
            k = _int(op, "slot")
            self.slots[k] = form
            seq, part = (f", {_int(op, 'seq')}", "_seq") if kind == "save-seq" else ("", "")
            # A device state: the _ext calls with LLAMA_STATE_SEQ_FLAGS_ON_DEVICE (the tensor data stays in the context).
            ext, flags = ("_ext", f", {_DEVICE}") if form == "device" else ("", "")
            self.body += [f"    free(saved[{k}]), size[{k}] = llama_state{part}_get_size{ext}(ctx{seq}{flags});  {label}",
                          f"    llama_state{part}_get_data{ext}(ctx, saved[{k}] = malloc(size[{k}]), size[{k}]{seq}{flags});"]
        elif kind in ("load-seq", "load-all"):
            k = _int(op, "slot")
            if k not in self.slots:
                raise Unexportable(f"#{op.get('id')} {kind}: slot {k} holds no state saved by this program")
            part, seq = ("_seq", f", {_int(op, 'seq')}") if kind == "load-seq" else ("", "")
            ext, flags = ("_ext", f", {_DEVICE}") if self.slots[k] == "device" else ("", "")
            call = f"llama_state{part}_set_data{ext}(ctx, saved[{k}], size[{k}]{seq}{flags})"
            if expect is None:
                self.body.append(f"    {call};  {label}")
            else:  # restored: the whole saved size read back; refused: 0
                self.expect(call, f"llama_state{part}_set_data{ext}", f"(long) {call}",
                            f"(long) size[{k}]" if expect == "restored" else "0", label)
        elif kind == "set-threads":
            n = _int(op, "threads")
            self.body.append(f"    llama_set_n_threads(ctx, {n}, {n});  {label}")
        else:
            raise Unexportable(f"#{op.get('id')}: op {kind!r} is not one this exporter knows")

    def decode_lines(self) -> None:
        """Each decode op's call, with the arguments the program's form of the helper takes."""
        general = "general" in self.uses
        for at in self.decodes:
            mask, steps, logits, seed, shared, moved, bad, want, label = self.body[at]
            args = [mask, steps, logits, seed] + ([shared, moved, bad] if general else []) + [want]
            self.body[at] = f"    decode({', '.join(map(str, args))});  {label}"

    def run(self) -> str:
        p = self.program
        if p.get("format") != "llama":
            raise Unexportable(f"not a llama-runtime program (format {p.get('format')!r})")
        arch = p.get("arch")
        if arch not in _ARCH:
            raise Unexportable(f"model kind {arch!r} is not one this exporter builds")
        n_seq, n_batch, unified = int(p["n_seq_max"]), int(p["n_batch"]), bool(p["kv_unified"])
        for op in p.get("ops", []):
            self.step(op)
        self.decode_lines()
        body = self.body
        if self.decodes:
            self.uses.add("check")
        recurrent = arch in ("mamba", "jamba")
        pairs = _COMMON + _ARCH[arch]
        keys = [f'"{arch}.{k}"' for k, _ in pairs]
        title = self.finding.get("title", self.finding.get("id", ""))
        lines = [f"/* {self.finding.get('id')}: {title}",
                 " *",
                 " * Build against llama.cpp (sources S, built in B; the CPU backend is enough):",
                 " *   cc -g repro.c -IS/include -IS/ggml/include -LB/src -LB/ggml/src \\",
                 " *      -lllama -lggml -lggml-cpu -lggml-base -lstdc++ -lm -lpthread -o repro",
                 " * Run: ./repro   (no model file: it builds its tiny model, as llama.cpp's tests/test-llama-archs.cpp does)",
                 " */",
                 "#include <assert.h>", "#include <stdio.h>", "#include <stdlib.h>"] + (
                 ["#include <string.h>"] if recurrent else []) + [
                 "", "#include \"llama.h\"", "",
                 ] + ([f"#define N_BATCH {n_batch}", ""] if "chunked" in self.uses else []) + [
                 "static struct llama_context * ctx; static llama_memory_t mem;",
                 "static void quiet(enum ggml_log_level level, const char * text, void * ud) { (void) level, (void) text, (void) ud; }",
                 ""] + _weights(recurrent) + [""]
        if "check" in self.uses:
            lines += _CHECK + [""]
        if self.decodes:
            lines += _decode(n_seq, "general" not in self.uses, "chunked" in self.uses) + [""]
        lines += ["int main(void) {"]
        r = self.report
        said = [(k, r[k]) for k in ("contract", "expected") if r.get(k)]
        if said:
            fmt = "".join(f"{k}: %s\\n" for k, _ in said)
            lines.append(f"    fprintf(stderr, \"{fmt}\", " + ", ".join(_c_string(v) for _, v in said) + ");")
        # The tiny model (llama_models.cc): 2 layers, n_embd 64, 64 tokens without a tokenizer.
        lines += ["    llama_log_set(quiet, NULL), llama_backend_init();",
                  f"    /* a tiny {arch}: GGUF metadata under \"{arch}.\", weights from weights() */",
                  "    struct gguf_context * g = gguf_init_empty();",
                  "    static const char * keys[] = {"] + [
                  "        " + ", ".join(keys[i:i + 4]) + ("," if i + 4 < len(keys) else "};") for i in range(0, len(keys), 4)] + [
                  "    static const uint32_t values[] = {" + ", ".join(str(v) for _, v in pairs) + "};",
                  f"    gguf_set_val_str(g, \"general.architecture\", \"{arch}\"), gguf_set_val_str(g, \"tokenizer.ggml.model\", "
                  "\"no_vocab\");",
                  f"    gguf_set_val_f32(g, \"{arch}.attention.layer_norm_rms_epsilon\", 1e-5f);",
                  f"    for (int i = 0; i < {len(pairs)}; ++i) gguf_set_val_u32(g, keys[i], values[i]);"] + (_JAMBA_HEADS if arch == "jamba" else []) + [
                  "    struct llama_model * model = llama_model_init_from_user(g, weights, NULL, llama_model_default_params());",
                  "    gguf_free(g);"]
        # The context: the program's parameters where they are not llama_context_default_params()'s.
        sets = [f"cp.n_seq_max = {n_seq}", f"cp.n_ctx = {256 if unified else 256 * n_seq}", f"cp.n_batch = {n_batch}",
                f"cp.n_ubatch = {int(p['n_ubatch'])}"]
        sets2 = [f"cp.n_threads = cp.n_threads_batch = {int(p.get('threads', 1))}"] + (
            ["cp.kv_unified = true"] if unified else []) + (
            [f"cp.flash_attn_type = {_FA[p['flash_attn']]}"] if p.get("flash_attn", "auto") != "auto" else []) + (
            [f"cp.type_k = {_TYPES[p['type_k']]}"] if p.get("type_k", "f16") != "f16" else []) + (
            [f"cp.type_v = {_TYPES[p['type_v']]}"] if p.get("type_v", "f16") != "f16" else [])
        if n_seq > n_batch and self.finding.get("id") != "llama-context-seq-max-over-batch-abort":
            sets2.append(f"cp.n_outputs_max = {n_seq}")  # finding llama-context-seq-max-over-batch-abort's workaround
        lines += ["    /* the program's context parameters (256 cells per stream)"
                  + (", and an output per sequence:\n       n_seq_max > n_batch aborts (finding "
                     "llama-context-seq-max-over-batch-abort) */" if f"cp.n_outputs_max = {n_seq}" in sets2 else " */"),
                  "    struct llama_context_params cp = llama_context_default_params();",
                  "    " + ", ".join(sets) + ";",
                  "    " + ", ".join(sets2) + ";"]
        lines += ["    if (!model || !(ctx = llama_init_from_model(model, cp)) || !(mem = llama_get_memory(ctx))) return 2;"]
        if any(b.lstrip().startswith("r = ") for b in body):
            lines.append("    long r;")
        if self.slots:
            lines.append(f"    void * saved[{max(self.slots) + 1}] = {{NULL}}; size_t size[{max(self.slots) + 1}] = {{0}};")
        lines += body
        if self.slots:
            lines.append(f"    for (int i = 0; i < {max(self.slots) + 1}; ++i) free(saved[i]);")
        lines += ["    fprintf(stderr, \"the program ran to its end: the finding did not reproduce\\n\");",
                  "    llama_free(ctx), llama_model_free(model), llama_backend_free();",
                  "    return 0;", "}"]
        return "\n".join(lines) + "\n"


def generate(program: dict, finding: dict) -> str:
    return Writer(program, finding).run()
