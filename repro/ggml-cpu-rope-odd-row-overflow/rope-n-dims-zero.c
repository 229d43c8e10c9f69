/* ggml-cpu-rope-odd-row-overflow, second claim: ggml_rope_ext with n_dims == 0 (accepted: ggml_rope_impl and the CPU
 * kernel assert only n_dims % 2 == 0 and n_dims <= ne0) never returns from the CPU compute. The loop that copies the
 * channels past n_dims steps `i0 += n_dims - 2` at i0 == n_offs (0 here), and the loop's own `i0 += 2` brings i0
 * back to 0: it spins on the first pair of the first row.
 * Build: cc -std=c11 rope-n-dims-zero.c -I$GGML/include -L$GGML/build/src -lggml -lggml-cpu -lggml-base -lstdc++ -lm -lpthread
 * Run: ./a.out (exits 1 with its verdict after 10 s while the bug is there; 0 when the compute returns). */
#define _POSIX_C_SOURCE 200809L
#include <signal.h>
#include <stdio.h>
#include <unistd.h>
#include "ggml.h"
#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"

static void timed_out(int sig) {
    (void)sig;
    static const char msg[] = "actual: ggml_backend_graph_compute of a 4-element rope with n_dims 0 did not return in 10 s\n"
                              "verdict: the bug is there: the compute spins\n";
    write(2, msg, sizeof msg - 1);
    _exit(1);
}

int main(void) {
    fprintf(stderr, "expected: a rope with n_dims 0 copies every channel (rotates none) and returns, or is refused\n");
    struct ggml_init_params p = {ggml_tensor_overhead() * 8 + ggml_graph_overhead(), NULL, true};
    struct ggml_context * ctx = ggml_init(p);
    struct ggml_tensor * x = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 4, 1, 2);  /* [ne0, heads, tokens] */
    struct ggml_tensor * pos = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, 2);
    struct ggml_tensor * r = ggml_rope_ext(ctx, x, pos, NULL, 0 /* n_dims */, GGML_ROPE_TYPE_NORMAL, 0, 10000.0f, 1.0f,
                                           0.0f, 1.0f, 0.0f, 0.0f);
    struct ggml_cgraph * gf = ggml_new_graph(ctx);
    ggml_build_forward_expand(gf, r);
    ggml_backend_t cpu = ggml_backend_cpu_init();
    ggml_backend_cpu_set_n_threads(cpu, 1);
    ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors(ctx, cpu);
    ggml_backend_tensor_set(pos, (const int32_t[]){0, 1}, 0, ggml_nbytes(pos));
    signal(SIGALRM, timed_out);
    alarm(10);
    ggml_backend_graph_compute(cpu, gf);
    alarm(0);
    fprintf(stderr, "the compute returned: the bug is not there\n");
    ggml_backend_buffer_free(buf); ggml_backend_free(cpu); ggml_free(ctx);
    return 0;
}
