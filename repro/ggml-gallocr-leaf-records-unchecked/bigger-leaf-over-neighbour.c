/* ggml-gallocr-leaf-records-unchecked, its second case in a release build (-DNDEBUG, where assert() is compiled out):
 * graph 1 has three float32 leafs of 1, 1 and 64 elements (outputs, no nodes) and is reserved; graph 2 has the same
 * counts and leafs of 16, 1 and 64 elements. ggml_gallocr_needs_realloc compares no leaf records, so
 * ggml_gallocr_alloc_graph places graph 2 from graph 1's plan: the 16-element leaf A at the offset planned for 1
 * element, over leaf B's bytes.
 * Build: cc -std=c11 bigger-leaf-over-neighbour.c -I$GGML/include -L$GGML/build/src -lggml -lggml-cpu -lggml-base -lstdc++ -lm -lpthread
 * Run: ./a.out (with ggml's asserts on, its assert(size <= size_max) aborts; in a release build it exits 1 with its
 * verdict while the bug is there; 0 once graph 2 is re-planned). */
#include <stdio.h>
#include "ggml.h"
#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"

static struct ggml_context * new_context(void) {
    struct ggml_init_params p = {ggml_tensor_overhead() * 64 + ggml_graph_overhead(), NULL, true};
    return ggml_init(p);
}

static struct ggml_tensor * leaf(struct ggml_context * ctx, struct ggml_cgraph * gf, int64_t n) {
    struct ggml_tensor * t = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, n);
    ggml_set_output(t);
    ggml_build_forward_expand(gf, t);
    return t;
}

int main(void) {
    fprintf(stderr, "expected: ggml_gallocr_alloc_graph re-plans graph 2 (its leaf needs more than its record) and places "
                    "each leaf in bytes of its own\n");
    ggml_backend_t cpu = ggml_backend_cpu_init();
    ggml_gallocr_t galloc = ggml_gallocr_new(ggml_backend_cpu_buffer_type());
    struct ggml_context * ctx1 = new_context();
    struct ggml_cgraph * gf1 = ggml_new_graph(ctx1);
    leaf(ctx1, gf1, 1); leaf(ctx1, gf1, 1); leaf(ctx1, gf1, 64);
    ggml_gallocr_reserve(galloc, gf1);

    struct ggml_context * ctx2 = new_context();
    struct ggml_cgraph * gf2 = ggml_new_graph(ctx2);
    struct ggml_tensor * a = leaf(ctx2, gf2, 16);
    struct ggml_tensor * b = leaf(ctx2, gf2, 1);
    leaf(ctx2, gf2, 64);
    if (!ggml_gallocr_alloc_graph(galloc, gf2)) { fprintf(stderr, "ggml_gallocr_alloc_graph failed\n"); return 1; }
    float seven = 7.0f, ones[16], b_after;
    for (int i = 0; i < 16; ++i) ones[i] = 1.0f;
    ggml_backend_tensor_set(b, &seven, 0, sizeof seven);
    ggml_backend_tensor_set(a, ones, 0, sizeof ones);
    ggml_backend_tensor_get(b, &b_after, 0, sizeof b_after);
    const char * base = (const char *) a->data < (const char *) b->data ? (const char *) a->data : (const char *) b->data;
    fprintf(stderr, "actual: A (%zu bytes) at offset %td, B (%zu bytes) at offset %td; B was set to 7 and reads %g after A "
                    "was written\n", ggml_nbytes(a), (const char *) a->data - base, ggml_nbytes(b),
            (const char *) b->data - base, b_after);
    int overlap = b_after != 7.0f;
    ggml_gallocr_free(galloc); ggml_free(ctx1); ggml_free(ctx2); ggml_backend_free(cpu);
    if (overlap) {
        fprintf(stderr, "verdict: the bug is there: leaf A was placed over leaf B\n");
        return 1;
    }
    fprintf(stderr, "the leafs have bytes of their own: the bug is not there\n");
    return 0;
}
