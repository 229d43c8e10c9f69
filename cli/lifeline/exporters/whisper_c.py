"""A string-handoff program (harness/programs/handoff/codec.h, JSON) as a short standalone C reproducer on
whisper.h, in whisper.cpp's terms: what `lifeline export` writes for the findings of whisper_string_handoff that
are whisper.cpp's own (not its whisper.wasm binding's thread handoff, which is not in whisper.h).

The C does what the whisper.wasm binding does for each op (examples/whisper.wasm/emscripten.cpp, as
harness/programs/handoff/upstream/whisper_wasm_binding.cc drives it), on the calling thread: a bind loads a
model into a context (WHISPER_MODEL, a multilingual model, or WHISPER_MODEL_EN, an English-only one); a job's
whisper_full runs when the program starts it (or joins it unstarted), a cancelled one never runs, a synchronous
submit runs at once; each call gets the language bytes up to their NUL ("en" on an English-only model, as the
binding passes it), the program's thread count and translate flag, and the page's audio: one program sample
stands for a clip of 100 samples, more for 400 samples each (whisper_caller.h), in a heap block of exactly that
many floats. Ops the binding refuses (an unbound slot, no threads) reach no whisper call and are comments.
With report "check": "guard-page" the clip lies at the end of a page whose next page is not readable, unless the
file is built with ASan (whose redzone after a heap block shows the same read): a read past the samples then
faults without any sanitizer, and a SIGSEGV handler prints the verdict and exits 1.

generate(program, finding) -> C source. `finding`: {"id", "title", "report": {...}} from bug.json.
"""
from __future__ import annotations

from .ggml_c import Unexportable
from .ggml_c_file import _c_string

SHORT_CLIP = 100
PER_SAMPLE = 400
SLOTS = 4


def _bytes_literal(language: str) -> str:
    """The language's bytes up to the first NUL as a C string literal (octal escapes: no hex run-on)."""
    out = []
    for ch in language:
        b = ord(ch)
        if b == 0:
            break
        if b > 0xFF:
            raise Unexportable(f"language character U+{b:04X} is not a byte")
        if ch in '"\\':
            out.append("\\" + ch)
        elif 0x20 <= b < 0x7F:
            out.append(ch)
        else:
            out.append(f"\\{b:03o}")
    return '"' + "".join(out) + '"'


def _float(v: float) -> str:
    text = repr(float(v))
    return text + "f" if ("." in text or "e" in text) else text + ".0f"


class Writer:
    def __init__(self, program: dict, finding: dict):
        self.program, self.finding = program, finding
        self.report = finding.get("report") or {}
        self.guard_page = self.report.get("check") == "guard-page"
        self.body: list[str] = []
        self.jobs: dict[str, dict] = {}  # "#id" of the submit -> {"op", "ran", "cancelled"}
        self.multilingual: dict[int, bool] = {}  # bound slots
        self.uses_en = False

    def call(self, op: dict, why: str) -> None:
        slot = int(op["slot"])
        audio = [float(v) for v in op.get("audio", [])]
        language = "\"en\"" if not self.multilingual.get(slot, True) else _bytes_literal(op.get("language", ""))
        if len(audio) == 1:
            clip = f"clip(1, (const float[]){{{_float(audio[0])}}}, {SHORT_CLIP})"
            n = SHORT_CLIP
        elif audio:
            clip = f"clip({len(audio)}, (const float[]){{{', '.join(_float(v) for v in audio)}}}, {PER_SAMPLE})"
            n = len(audio) * PER_SAMPLE
        else:
            clip, n = "NULL", 0
        self.body += [f"    /* {why} */",
                      f"    transcribe(ctx[{slot}], {language}, {int(op.get('threads', 1))}, "
                      f"{'true' if op.get('translate') else 'false'}, {clip}, {n});"]

    def step(self, op: dict) -> None:
        kind = op.get("op")
        model = op.get("model") or {}
        expect = model.get("expect", "OK")
        label = f"#{op.get('id')} {kind}"
        if expect != "OK" and kind != "cancel":
            self.body.append(f"    /* {label}: the binding refuses it ({expect}); whisper is not called */")
            return
        if kind in ("bind", "rebind"):
            slot = int(model.get("slot", op.get("slot", 0)))
            ml = bool(op.get("multilingual"))
            self.uses_en |= not ml
            if kind == "rebind":
                old = int(op["slot"])
                self.body.append(f"    whisper_free(ctx[{old}]); ctx[{old}] = NULL;"
                                 f"  /* {label}: its jobs joined first */")
            self.body.append(f"    ctx[{slot}] = load({1 if ml else 0});  /* {label} "
                             f"{'multilingual' if ml else 'english-only'} -> slot {slot} */")
            self.multilingual[slot] = ml
        elif kind == "submit-sync":
            self.call(op, f"{label} slot={op['slot']}: whisper_full before the call returns")
        elif kind == "submit-async":
            self.jobs[f"#{op['id']}"] = {"op": op, "ran": False, "cancelled": False}
        elif kind in ("start", "join", "cancel"):
            job = self.jobs.get(op.get("job"))
            if job is None:
                raise Unexportable(f"{label} names no submitted job ({op.get('job')})")
            if kind == "cancel":
                job["cancelled"] |= expect == "OK"
            elif not job["ran"] and not job["cancelled"]:
                job["ran"] = True
                self.call(job["op"], f"{label} of the job submitted by {op['job']}: its worker's whisper_full")
        else:
            raise Unexportable(f"{label}: an op this exporter does not know")

    def run(self) -> str:
        if self.program.get("format") != "handoff":
            raise Unexportable(f"not a string-handoff program (format {self.program.get('format')!r})")
        for op in self.program.get("ops", []):
            self.step(op)
        for key, job in self.jobs.items():  # the program's end joins every job
            if not job["ran"] and not job["cancelled"]:
                job["ran"] = True
                self.call(job["op"], f"the program's end joins the job submitted by {key}")
        r = self.report
        title = self.finding.get("title", self.finding.get("id", ""))
        lines = [f"/* {self.finding.get('id')}: {title}",
                 " *",
                 " * Build (whisper.cpp's build folder B, its sources S):",
                 " *   cc -g -fsanitize=address,undefined repro.c -IS/include -IS/ggml/include -LB/src -LB/ggml/src \\",
                 " *      -lwhisper -lggml -lggml-cpu -lggml-base -lstdc++ -lm -lpthread -o repro",
                 " * Run: WHISPER_MODEL=ggml-tiny.bin ./repro   (any multilingual model"
                 + ("; WHISPER_MODEL_EN=ggml-tiny.en.bin, an English-only one" if self.uses_en else "") + ")",
                 " */",
                 ] + (["#define _DEFAULT_SOURCE", "#include <signal.h>"] if self.guard_page else []) + [
                 "#include <stdbool.h>", "#include <stdio.h>", "#include <stdlib.h>"] + (
                 ["#include <sys/mman.h>", "#include <unistd.h>"] if self.guard_page else []) + [
                 "", "#include \"whisper.h\"", "",
                 "static struct whisper_context * load(int multilingual) {",
                 "    const char * path = getenv(multilingual ? \"WHISPER_MODEL\" : \"WHISPER_MODEL_EN\");",
                 "    if (path == NULL) {",
                 "        fprintf(stderr, \"set %s to a whisper.cpp model file\\n\",",
                 "                multilingual ? \"WHISPER_MODEL\" : \"WHISPER_MODEL_EN\");",
                 "        exit(2);", "    }",
                 "    struct whisper_context_params cparams = whisper_context_default_params();",
                 "    cparams.use_gpu = false;",
                 "    struct whisper_context * ctx = whisper_init_from_file_with_params(path, cparams);",
                 "    if (ctx == NULL) {", "        fprintf(stderr, \"cannot load %s\\n\", path);",
                 "        exit(2);", "    }",
                 "    return ctx;", "}", "",
] + (GUARD_PAGE_CLIP if self.guard_page else [
                 "/* n values, each held for `per` samples, in a heap block of exactly that many floats */",
                 "static float * clip(int n, const float * values, int per) {",
                 "    float * pcm = malloc(sizeof(float) * (size_t) (n * per));",
                 "    for (int i = 0; i < n * per; ++i) pcm[i] = values[i / per];",
                 "    return pcm;", "}", "",
                 "static void release(float * pcm) { free(pcm); }", ""]) + [
                 "static void transcribe(struct whisper_context * ctx, const char * language, int n_threads,",
                 "                       bool translate, float * pcm, int n_samples) {",
                 "    struct whisper_full_params params = whisper_full_default_params(WHISPER_SAMPLING_GREEDY);",
                 "    params.language = language;",
                 "    params.n_threads = n_threads;",
                 "    params.translate = translate;",
                 "    params.print_progress = false;",
                 "    int rc = whisper_full(ctx, params, pcm, n_samples);",
                 "    fprintf(stderr, \"whisper_full(%d samples, language \\\"%s\\\") returned %d\\n\",",
                 "            n_samples, language, rc);",
                 "    release(pcm);", "}", "", "int main(void) {"]
        said = [(k, r[k]) for k in ("contract", "expected") if r.get(k)]
        if said:
            fmt = "".join(f"{k}: %s\\n" for k, _ in said)
            lines.append(f"    fprintf(stderr, \"{fmt}\", " + ", ".join(_c_string(v) for _, v in said) + ");")
        if self.guard_page:
            lines += ["    struct sigaction on_segv = {0};", "    on_segv.sa_sigaction = read_past_the_samples;",
                      "    on_segv.sa_flags = SA_SIGINFO;", "    sigaction(SIGSEGV, &on_segv, NULL);"]
        lines.append(f"    struct whisper_context * ctx[{SLOTS}] = {{NULL}};")
        lines += self.body
        lines += ["    fprintf(stderr, \"the program ran to its end: the finding did not reproduce\\n\");",
                  f"    for (int i = 0; i < {SLOTS}; ++i) whisper_free(ctx[i]);",
                  "    return 0;", "}"]
        return "\n".join(lines) + "\n"


GUARD_PAGE_CLIP = [
    "#if defined(__has_feature)",
    "#if __has_feature(address_sanitizer)",
    "#define UNDER_ASAN 1",
    "#endif",
    "#endif",
    "#if defined(__SANITIZE_ADDRESS__)",
    "#define UNDER_ASAN 1",
    "#endif",
    "",
    "/* n values, each held for `per` samples: under ASan in a heap block of exactly that many floats (its redzone",
    "   shows a read past them); otherwise at the very end of a page whose next page is not readable, so that a read",
    "   past them faults in any build */",
    "static char * guard_lo, * guard_hi;  /* the last unreadable page after a clip */",
    "",
    "static float * clip(int n, const float * values, int per) {",
    "    size_t bytes = sizeof(float) * (size_t) (n * per);",
    "#ifdef UNDER_ASAN",
    "    float * pcm = malloc(bytes);",
    "#else",
    "    size_t page = (size_t) sysconf(_SC_PAGESIZE), span = (bytes + page - 1) / page * page;",
    "    char * base = mmap(NULL, span + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);",
    "    if (base == MAP_FAILED || mprotect(base + span, page, PROT_NONE) != 0) { perror(\"mmap\"); exit(2); }",
    "    float * pcm = (float *) (base + span - bytes);",
    "    guard_lo = base + span, guard_hi = base + span + page;",
    "#endif",
    "    for (int i = 0; i < n * per; ++i) pcm[i] = values[i / per];",
    "    return pcm;",
    "}",
    "",
    "static void release(float * pcm) {",
    "#ifdef UNDER_ASAN",
    "    free(pcm);",
    "#else",
    "    (void) pcm;  /* its pages stay mapped */",
    "#endif",
    "}",
    "",
    "static void read_past_the_samples(int sig, siginfo_t * info, void * context) {",
    "    (void) sig, (void) context;",
    "    static const char past[] = \"actual: SIGSEGV at an address in the page right after the samples given\\n\"",
    "                               \"verdict: the bug is there: whisper_full read past the caller's samples\\n\";",
    "    static const char other[] = \"SIGSEGV elsewhere than after the samples: not this finding\\n\";",
    "    const char * at = (const char *) info->si_addr;",
    "    int ours = at >= guard_lo && at < guard_hi;",
    "    write(2, ours ? past : other, ours ? sizeof past - 1 : sizeof other - 1);",
    "    _exit(ours ? 1 : 3);",
    "}",
    "",
]


def generate(program: dict, finding: dict) -> str:
    return Writer(program, finding).run()
