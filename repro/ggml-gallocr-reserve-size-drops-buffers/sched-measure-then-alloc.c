/* ggml-gallocr-reserve-size-drops-buffers, through the scheduler: ggml_backend_sched_reserve_size of a graph, then
 * ggml_backend_sched_alloc_graph of the same graph, on the CPU backend alone. The measure drops the gallocr buffer its
 * plan outgrows and keeps the plan; the placement takes the plan as it is and writes through the null buffer.
 * Build: cc -std=c11 sched-measure-then-alloc.c -I$GGML/include -L$GGML/build/src -lggml -lggml-cpu -lggml-base -lstdc++ -lm -lpthread
 * Run: ./a.out (dies of SIGSEGV while the bug is there, in any build; exits 0 once the placement works). */
#include <stdio.h>
#include "ggml.h"
#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"

int main(void) {
    fprintf(stderr, "expected: ggml_backend_sched_alloc_graph places a graph that ggml_backend_sched_reserve_size measured\n");
    ggml_backend_t cpu = ggml_backend_cpu_init();
    ggml_backend_sched_t sched = ggml_backend_sched_new(&cpu, NULL, 1, GGML_DEFAULT_GRAPH_SIZE, false, false);
    struct ggml_init_params p = {ggml_tensor_overhead() * 64 + ggml_graph_overhead(), NULL, true};
    struct ggml_context * ctx = ggml_init(p);
    struct ggml_cgraph * gf = ggml_new_graph(ctx);
    struct ggml_tensor * x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 1);
    ggml_set_input(x);
    struct ggml_tensor * y = ggml_neg(ctx, x);
    ggml_set_output(y);
    ggml_build_forward_expand(gf, y);
    size_t sizes[1] = {0};
    ggml_backend_sched_reserve_size(sched, gf, sizes);
    fprintf(stderr, "ggml_backend_sched_reserve_size: %zu bytes; now ggml_backend_sched_alloc_graph\n", sizes[0]);
    if (!ggml_backend_sched_alloc_graph(sched, gf)) {
        fprintf(stderr, "verdict: ggml_backend_sched_alloc_graph returned false\n");
        return 1;
    }
    fprintf(stderr, "the graph was placed: the bug is not there\n");
    ggml_backend_sched_free(sched); ggml_free(ctx); ggml_backend_free(cpu);
    return 0;
}
