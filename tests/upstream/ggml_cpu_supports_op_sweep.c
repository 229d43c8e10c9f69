/*
 * ggml_cpu_supports_op_sweep: does ggml's CPU backend compute every op it says it supports?
 *
 * The contract (ggml/src/ggml-backend-impl.h, supports_op): "check if the backend can compute an operation";
 * ggml_backend_sched places a node on the first backend that says yes. This program measures that promise
 * for the CPU backend, one op at a time, on the pinned ggml: for every row of kCases it builds the op in a
 * fresh no_alloc context, asks ggml_backend_supports_op(cpu, node), places the one-node graph with
 * ggml_backend_alloc_ctx_tensors and runs ggml_backend_graph_compute on one thread. Each (op, type) runs in
 * its own forked child, so a kernel's GGML_ABORT (or a constructor's GGML_ASSERT) ends only that child.
 * It prints one line per (op, type), in table order, and nothing else on stdout:
 *
 *   <OP> <type> supports_op=<0|1> compute=<ok | abort "<msg>" | assert "<expr>" | asan <kind> in <function>
 *                                          | ubsan <check> in <function> | status N | signal N | exit N>
 *   <OP> <type> build=<assert "<expr>" | abort "<msg>" | signal N | exit N>     (the constructor itself failed)
 *
 * <OP> is ggml_op_name(), or UNARY:<ggml_unary_op_name()> / GLU:<ggml_glu_op_name()>. <type> says which
 * type the float sources have: `f32` (all F32: the control), `f16` (all F16), `f16-src0` (src0 F16, the
 * other float sources F32; only for ops with another float source whose type the constructor leaves
 * free). Sources whose type the API fixes (indices, rope positions, the optimizer's parameter vector,
 * add_rel_pos's pw/ph, flash attention's and the lightning indexer's F16 mask) keep it in every variant.
 * A message is ggml_abort's text without its "file:line: " prefix, so moved source lines change nothing.
 * `asan`/`ubsan`: the child's first sanitizer report, by kind (UBSan's check name needs
 * UBSAN_OPTIONS=report_error_type=1, else "undefined-behavior") and frame #0's function; the report itself
 * goes to stderr under a "---- <OP> <type>" line.
 *
 * Not swept: NONE, ARANGE (no source to type), and the user-kernel ops MAP_CUSTOM1..3 and CUSTOM (the CPU
 * backend runs the caller's function, whatever the type).
 *
 * Deterministic: fixed shapes and parameters, float inputs 0.25 + (i % 8)/8 (finite and positive, so log,
 * sqrt and the float-to-int conversions UBSan checks stay defined), integer inputs 0 (a valid row, position
 * and expert index everywhere). Exit status: 0 when every row was measured; 1 when a row's constructor
 * built another op than its row names, or more than one compute node (a broken table, named on stderr).
 *
 * Uses ggml's public API only. Its table of ops is ggml_cpu_supports_op_sweep_cases.inc, which it includes
 * (keep the two side by side). Build (the asan lane's flags) and run, all rows or one (`./sweep SCALE`):
 *   clang-14 -fsanitize=address,undefined -O1 -g -UNDEBUG -I<ggml>/include -c ggml_cpu_supports_op_sweep.c
 *   clang++-14 -fsanitize=address,undefined ggml_cpu_supports_op_sweep.o libggml.a libggml-cpu.a \
 *       libggml-base.a -lm -lpthread -o sweep
 *   ASAN_OPTIONS=handle_abort=0 UBSAN_OPTIONS=report_error_type=1:suppressions=core/suppressions/ubsan-upstream.supp \
 *       ./sweep > out.txt
 * ctest upstream.ggml-cpu.supports-op-sweep (tests/upstream/CMakeLists.txt, with the options it explains)
 * compares the output with ggml_cpu_supports_op_sweep.expected and checks the summary table that
 * sweep_table.py makes of it (repro/ggml-cpu-scale-f16-unsupported/supports-op-sweep.md).
 */
#define _POSIX_C_SOURCE 200809L /* fileno, ftruncate, alarm, fork under -std=c11 */
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ggml.h"
#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"

#define kMaxTensors 32        /* per case context */
#define kGraphSize 16         /* the one-node graph's capacity (its sources are leafs) */
#define kChildSeconds 20      /* a child still running after this is killed (SIGALRM): `signal 14` */
#define kReportBytes 4096     /* what one child may report through its pipe */

/* ---- the cases ------------------------------------------------------------------------------------- */

struct op_case;
/* Builds the case's op in `ctx`: src0 of type `t0`, the other free float sources of type `t`. */
typedef struct ggml_tensor * (*build_fn)(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0,
                                         enum ggml_type t);

struct op_case {
    enum ggml_op op;
    int sub;        /* the ggml_unary_op or ggml_glu_op for UNARY and GLU rows, else -1 */
    bool mixed;     /* another float source with a free type: also sweep `f16-src0` */
    build_fn build;
};

/* Each op's constructor and kCases, the table of rows (one per op, UNARY and GLU sub-op), in a file of their own. */
#include "ggml_cpu_supports_op_sweep_cases.inc"

/* ---- one (op, type) in a child ----------------------------------------------------------------------- */

/* The child reports through a pipe, one record per line: "B" (built and checked), "S<0|1>" (supports_op),
   "C<status>" (ggml_backend_graph_compute returned), "A<ggml_abort message>", "W<why>" (a broken row). Its
   stderr goes to a file the parent reads afterwards, for a sanitizer's report. */
static int g_report_fd = -1;
static size_t g_case_ctx_bytes; /* set once in main, before any fork */

static void report(const char * tag, const char * text) {
    char line[kReportBytes];
    int n = snprintf(line, sizeof line, "%s%s\n", tag, text);
    if (n > (int) sizeof line - 1) {
        n = (int) sizeof line - 1;
        line[n - 1] = '\n';
    }
    ssize_t w = write(g_report_fd, line, (size_t) n);
    (void) w; /* a parent that stopped reading sees the exit status instead */
}

/* ggml_abort's hook: report the message and end the child here. The kernels' GGML_ABORT and the
   constructors' GGML_ASSERT never reach abort(), so no SIGABRT is raised for them at all. */
static void on_ggml_abort(const char * message) {
    report("A", message);
    _exit(3);
}

#define kMaxInput 4096 /* elements of one input tensor */

static void fill_inputs(struct ggml_context * ctx) {
    static float values[kMaxInput];
    static ggml_fp16_t halves[kMaxInput];
    for (int i = 0; i < kMaxInput; ++i) {
        values[i] = 0.25f + (float) (i % 8) / 8.0f;
    }
    ggml_fp32_to_fp16_row(values, halves, kMaxInput);
    for (struct ggml_tensor * t = ggml_get_first_tensor(ctx); t != NULL; t = ggml_get_next_tensor(ctx, t)) {
        if (t->op != GGML_OP_NONE || t->view_src != NULL) {
            continue; /* the result, and views: not inputs */
        }
        const int64_t n = ggml_nelements(t);
        if (n > kMaxInput) {
            report("W", "an input has more than kMaxInput elements");
            _exit(4);
        }
        if (t->type == GGML_TYPE_F32) {
            ggml_backend_tensor_set(t, values, 0, (size_t) n * sizeof(float));
        } else if (t->type == GGML_TYPE_F16) {
            ggml_backend_tensor_set(t, halves, 0, (size_t) n * sizeof(ggml_fp16_t));
        } /* integer inputs keep the cleared buffer's zeros */
    }
}

static void run_child(ggml_backend_t cpu, const struct op_case * c, enum ggml_type t0, enum ggml_type t) {
    struct rlimit no_core = {0, 0};
    setrlimit(RLIMIT_CORE, &no_core); /* an abort() outside ggml_abort (assert(), terminate) dumps nothing */
    alarm(kChildSeconds);
    ggml_set_abort_callback(on_ggml_abort);

    struct ggml_init_params params = {.mem_size = g_case_ctx_bytes, .mem_buffer = NULL, .no_alloc = true};
    struct ggml_context * ctx = ggml_init(params);
    struct ggml_tensor * node = c->build(ctx, c, t0, t);

    /* The row must build the op it names, as the only compute node (a PARAM leaf counts as a node). */
    char why[256] = "";
    if (node->op != c->op) {
        snprintf(why, sizeof why, "built %s", ggml_op_name(node->op));
    } else if (c->op == GGML_OP_UNARY && (int) ggml_get_unary_op(node) != c->sub) {
        snprintf(why, sizeof why, "built UNARY:%s", ggml_unary_op_name(ggml_get_unary_op(node)));
    } else if (c->op == GGML_OP_GLU && (int) ggml_get_glu_op(node) != c->sub) {
        snprintf(why, sizeof why, "built GLU:%s", ggml_glu_op_name(ggml_get_glu_op(node)));
    }
    struct ggml_cgraph * graph = ggml_new_graph_custom(ctx, kGraphSize, false);
    ggml_build_forward_expand(graph, node);
    for (int i = 0; why[0] == '\0' && i < ggml_graph_n_nodes(graph); ++i) {
        struct ggml_tensor * n = ggml_graph_node(graph, i);
        if (n != node && n->op != GGML_OP_NONE) {
            snprintf(why, sizeof why, "graph also computes %s", ggml_op_name(n->op));
        }
    }
    if (why[0] != '\0') {
        report("W", why);
        _exit(4);
    }
    report("B", "");
    report("S", ggml_backend_supports_op(cpu, node) ? "1" : "0");

    ggml_backend_buffer_t buffer = ggml_backend_alloc_ctx_tensors(ctx, cpu);
    if (buffer == NULL) {
        report("W", "ggml_backend_alloc_ctx_tensors returned NULL");
        _exit(4);
    }
    ggml_backend_buffer_clear(buffer, 0);
    fill_inputs(ctx);
    char status[16];
    snprintf(status, sizeof status, "%d", (int) ggml_backend_graph_compute(cpu, graph));
    report("C", status);
    _exit(0); /* the parent owns nothing of this; no leak check, no atexit handlers in the child */
}

/* ---- the parent ------------------------------------------------------------------------------------ */

/* ggml_abort's "file:line: message" as ` <stage>=assert "<x>"` for GGML_ASSERT's "GGML_ASSERT(x) failed",
   else ` <stage>=abort "<message>"`. */
static void print_abort(const char * stage, const char * message) {
    const char * text = strstr(message, ": ");
    text = text ? text + 2 : message;
    const char * prefix = "GGML_ASSERT(";
    const char * suffix = ") failed";
    size_t n = strlen(text);
    if (strncmp(text, prefix, strlen(prefix)) == 0 && n > strlen(prefix) + strlen(suffix) &&
        strcmp(text + n - strlen(suffix), suffix) == 0) {
        printf(" %s=assert \"%.*s\"", stage, (int) (n - strlen(prefix) - strlen(suffix)), text + strlen(prefix));
    } else {
        printf(" %s=abort \"%s\"", stage, text);
    }
}

/* The word after `key` in `text` (up to a space or '('), into out; false when `key` is not there. */
static bool word_after(const char * text, const char * key, char * out, size_t size) {
    const char * at = strstr(text, key);
    if (at == NULL) {
        return false;
    }
    at += strlen(key);
    size_t n = strcspn(at, " (\n");
    snprintf(out, size, "%.*s", (int) n, at);
    return true;
}

/* A sanitizer's report in the child's stderr as ` <stage>=asan <kind> in <frame #0's function>` or
   ` <stage>=ubsan <check> in <function>` (the check's name with UBSAN_OPTIONS=report_error_type=1, else
   "undefined-behavior"); false when there is none. Addresses, lines and pids stay out of the line. */
static bool print_sanitizer(const char * stage, const char * err) {
    char kind[128], func[256] = "?";
    const char * tool = NULL;
    const char * report_start = NULL;
    if ((report_start = strstr(err, "ERROR: AddressSanitizer: ")) != NULL) {
        tool = "asan";
        word_after(report_start, "ERROR: AddressSanitizer: ", kind, sizeof kind);
    } else if ((report_start = strstr(err, "SUMMARY: UndefinedBehaviorSanitizer: ")) != NULL) {
        tool = "ubsan";
        word_after(report_start, "SUMMARY: UndefinedBehaviorSanitizer: ", kind, sizeof kind);
        report_start = strstr(err, "runtime error: "); /* UBSan's stack comes before its summary */
    } else {
        return false;
    }
    const char * frame = report_start ? strstr(report_start, "#0 0x") : NULL;
    if (frame != NULL) {
        word_after(frame, " in ", func, sizeof func);
    }
    printf(" %s=%s %s in %s", stage, tool, kind, func);
    return true;
}

static void print_death(const char * stage, int wstatus) {
    if (WIFSIGNALED(wstatus)) {
        printf(" %s=signal %d", stage, WTERMSIG(wstatus));
    } else {
        printf(" %s=exit %d", stage, WEXITSTATUS(wstatus));
    }
}

/* How a child that did not finish ended: ggml_abort's message, else a sanitizer's report, else its status. */
static void print_failure(const char * stage, const char * abort_message, const char * err, int wstatus) {
    if (abort_message != NULL) {
        print_abort(stage, abort_message);
    } else if (!print_sanitizer(stage, err)) {
        print_death(stage, wstatus);
    }
}

static size_t read_all(int fd, char * buf, size_t size) {
    size_t len = 0;
    for (;;) {
        ssize_t r = read(fd, buf + len, size - 1 - len);
        if (r <= 0 || (len += (size_t) r) == size - 1) {
            break;
        }
    }
    buf[len] = '\0';
    return len;
}

static int g_err_fd = -1; /* an unlinked temporary file: each child's stderr */

/* Runs one (op, type) in a child and prints its line. Returns false for a broken row. */
static bool sweep_one(ggml_backend_t cpu, const struct op_case * c, const char * only, const char * type_name,
                      enum ggml_type t0, enum ggml_type t) {
    char name[64];
    if (c->op == GGML_OP_UNARY) {
        snprintf(name, sizeof name, "UNARY:%s", ggml_unary_op_name((enum ggml_unary_op) c->sub));
    } else if (c->op == GGML_OP_GLU) {
        snprintf(name, sizeof name, "GLU:%s", ggml_glu_op_name((enum ggml_glu_op) c->sub));
    } else {
        snprintf(name, sizeof name, "%s", ggml_op_name(c->op));
    }
    if (only != NULL && strcmp(only, name) != 0) {
        return true;
    }

    int fds[2];
    if (pipe(fds) != 0 || ftruncate(g_err_fd, 0) != 0 || lseek(g_err_fd, 0, SEEK_SET) != 0) {
        perror("ggml_cpu_supports_op_sweep: pipe/ftruncate");
        exit(2);
    }
    fflush(stdout); /* the child must not inherit unwritten output */
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        perror("ggml_cpu_supports_op_sweep: fork");
        exit(2);
    }
    if (pid == 0) {
        close(fds[0]);
        g_report_fd = fds[1];
        dup2(g_err_fd, STDERR_FILENO);
        run_child(cpu, c, t0, t);
    }
    close(fds[1]);
    static char buf[kReportBytes * 4];
    read_all(fds[0], buf, sizeof buf);
    close(fds[0]);
    int wstatus = 0;
    while (waitpid(pid, &wstatus, 0) < 0) {
    }
    static char err[1 << 16];
    lseek(g_err_fd, 0, SEEK_SET);
    if (read_all(g_err_fd, err, sizeof err) > 0) {
        /* the report itself, for whoever reads a failing test's log (stdout holds only the verdict) */
        fprintf(stderr, "---- %s %s: the child's stderr\n%s", name, type_name, err);
    }

    bool built = false, computed = false;
    char supports = '?';
    const char * abort_message = NULL;
    const char * wrong = NULL;
    int status = 0;
    for (char * line = strtok(buf, "\n"); line != NULL; line = strtok(NULL, "\n")) {
        switch (line[0]) {
            case 'B': built = true; break;
            case 'S': supports = line[1]; break;
            case 'C': computed = true; status = atoi(line + 1); break;
            case 'A': abort_message = line + 1; break;
            case 'W': wrong = line + 1; break;
            default: break;
        }
    }

    printf("%s %s", name, type_name);
    if (wrong != NULL) {
        printf(" broken-row \"%s\"\n", wrong);
        fprintf(stderr, "ggml_cpu_supports_op_sweep: %s %s: %s\n", name, type_name, wrong);
        return false;
    }
    if (!built) {
        print_failure("build", abort_message, err, wstatus);
    } else {
        printf(" supports_op=%c", supports);
        if (computed && WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0) {
            if (status == GGML_STATUS_SUCCESS) {
                printf(" compute=ok");
            } else {
                printf(" compute=status %d", status);
            }
        } else {
            print_failure("compute", abort_message, err, wstatus);
        }
    }
    printf("\n");
    return true;
}

int main(int argc, char ** argv) {
    const char * only = argc > 1 ? argv[1] : NULL; /* one row by name, e.g. SCALE or UNARY:ABS (replay by hand) */

    /* Once, before any fork: ggml's and the CPU backend's tables, the backend itself (no threads yet:
       ggml_backend_graph_compute makes them, and only the children compute), and the size of each case's
       context. ggml_graph_overhead_custom() also meets UBSan's known report in ggml_graph_nbytes here, once: UBSan
       then marks that check site done, and the children never pay for symbolizing it again (its
       suppression, core/suppressions/ubsan-upstream.supp, needs the function's name). */
    struct ggml_init_params params = {.mem_size = 1024, .mem_buffer = NULL, .no_alloc = true};
    ggml_free(ggml_init(params));
    ggml_cpu_init();
    g_case_ctx_bytes = kMaxTensors * ggml_tensor_overhead() + ggml_graph_overhead_custom(kGraphSize, false);
    ggml_backend_t cpu = ggml_backend_cpu_init();
    if (cpu == NULL) {
        fprintf(stderr, "ggml_cpu_supports_op_sweep: ggml_backend_cpu_init returned NULL\n");
        return 2;
    }
    ggml_backend_cpu_set_n_threads(cpu, 1); /* one thread: a kernel's abort is the child's only thread */
    FILE * err_file = tmpfile();
    if (err_file == NULL) {
        perror("ggml_cpu_supports_op_sweep: tmpfile");
        return 2;
    }
    g_err_fd = fileno(err_file);

    bool ok = true;
    for (size_t i = 0; i < sizeof kCases / sizeof kCases[0]; ++i) {
        const struct op_case * c = &kCases[i];
        ok &= sweep_one(cpu, c, only, "f32", GGML_TYPE_F32, GGML_TYPE_F32);
        ok &= sweep_one(cpu, c, only, "f16", GGML_TYPE_F16, GGML_TYPE_F16);
        if (c->mixed) {
            ok &= sweep_one(cpu, c, only, "f16-src0", GGML_TYPE_F16, GGML_TYPE_F32);
        }
    }
    fclose(err_file);
    ggml_backend_free(cpu);
    fflush(stdout);
    return ok ? 0 : 1;
}
