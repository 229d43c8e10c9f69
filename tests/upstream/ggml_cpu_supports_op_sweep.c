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
 * Uses ggml's public API only. Build (the asan lane's flags) and run, all rows or one (`./sweep SCALE`):
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

static struct ggml_tensor * T(struct ggml_context * ctx, enum ggml_type type, int64_t ne0, int64_t ne1, int64_t ne2,
                              int64_t ne3) {
    return ggml_new_tensor_4d(ctx, type, ne0, ne1, ne2, ne3);
}
#define M(t, a, b) T(ctx, t, a, b, 1, 1) /* a matrix [a, b] */

/* One source, [8, 4]. */
static struct ggml_tensor * b_dup(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) { (void) c; (void) t; return ggml_dup(ctx, M(t0, 8, 4)); }
static struct ggml_tensor * b_sqr(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) { (void) c; (void) t; return ggml_sqr(ctx, M(t0, 8, 4)); }
static struct ggml_tensor * b_sqrt(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) { (void) c; (void) t; return ggml_sqrt(ctx, M(t0, 8, 4)); }
static struct ggml_tensor * b_log(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) { (void) c; (void) t; return ggml_log(ctx, M(t0, 8, 4)); }
static struct ggml_tensor * b_sin(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) { (void) c; (void) t; return ggml_sin(ctx, M(t0, 8, 4)); }
static struct ggml_tensor * b_cos(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) { (void) c; (void) t; return ggml_cos(ctx, M(t0, 8, 4)); }
static struct ggml_tensor * b_sum(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) { (void) c; (void) t; return ggml_sum(ctx, M(t0, 8, 4)); }
static struct ggml_tensor * b_sum_rows(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) { (void) c; (void) t; return ggml_sum_rows(ctx, M(t0, 8, 4)); }
static struct ggml_tensor * b_cumsum(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) { (void) c; (void) t; return ggml_cumsum(ctx, M(t0, 8, 4)); }
static struct ggml_tensor * b_mean(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) { (void) c; (void) t; return ggml_mean(ctx, M(t0, 8, 4)); }
static struct ggml_tensor * b_argmax(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) { (void) c; (void) t; return ggml_argmax(ctx, M(t0, 8, 4)); }
static struct ggml_tensor * b_norm(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) { (void) c; (void) t; return ggml_norm(ctx, M(t0, 8, 4), 1e-5f); }
static struct ggml_tensor * b_rms_norm(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) { (void) c; (void) t; return ggml_rms_norm(ctx, M(t0, 8, 4), 1e-5f); }
static struct ggml_tensor * b_l2_norm(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) { (void) c; (void) t; return ggml_l2_norm(ctx, M(t0, 8, 4), 1e-5f); }
static struct ggml_tensor * b_scale(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) { (void) c; (void) t; return ggml_scale(ctx, M(t0, 8, 4), 0.25f); }
static struct ggml_tensor * b_cont(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) { (void) c; (void) t; return ggml_cont(ctx, M(t0, 8, 4)); }
static struct ggml_tensor * b_reshape(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) { (void) c; (void) t; return ggml_reshape_2d(ctx, M(t0, 8, 4), 4, 8); }
static struct ggml_tensor * b_view(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) {
    (void) c; (void) t;
    struct ggml_tensor * a = M(t0, 8, 4);
    return ggml_view_2d(ctx, a, 4, 4, a->nb[1], 0);
}
static struct ggml_tensor * b_permute(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) { (void) c; (void) t; return ggml_permute(ctx, M(t0, 8, 4), 1, 0, 2, 3); }
static struct ggml_tensor * b_transpose(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) { (void) c; (void) t; return ggml_transpose(ctx, M(t0, 8, 4)); }
static struct ggml_tensor * b_diag(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) { (void) c; (void) t; return ggml_diag(ctx, M(t0, 4, 1)); }
static struct ggml_tensor * b_diag_mask_inf(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) { (void) c; (void) t; return ggml_diag_mask_inf(ctx, M(t0, 4, 4), 0); }
static struct ggml_tensor * b_diag_mask_zero(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) { (void) c; (void) t; return ggml_diag_mask_zero(ctx, M(t0, 4, 4), 0); }
static struct ggml_tensor * b_soft_max(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) { (void) c; (void) t; return ggml_soft_max(ctx, M(t0, 8, 4)); }
static struct ggml_tensor * b_clamp(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) { (void) c; (void) t; return ggml_clamp(ctx, M(t0, 8, 4), -1.0f, 1.0f); }
static struct ggml_tensor * b_pool_1d(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) { (void) c; (void) t; return ggml_pool_1d(ctx, M(t0, 8, 4), GGML_OP_POOL_AVG, 2, 2, 0); }
static struct ggml_tensor * b_pool_2d(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) { (void) c; (void) t; return ggml_pool_2d(ctx, T(ctx, t0, 4, 4, 2, 1), GGML_OP_POOL_AVG, 2, 2, 2, 2, 0, 0); }
static struct ggml_tensor * b_upscale(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) { (void) c; (void) t; return ggml_upscale(ctx, M(t0, 4, 4), 2, GGML_SCALE_MODE_NEAREST); }
static struct ggml_tensor * b_pad(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) { (void) c; (void) t; return ggml_pad(ctx, M(t0, 8, 4), 1, 1, 0, 0); }
static struct ggml_tensor * b_pad_reflect_1d(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) { (void) c; (void) t; return ggml_pad_reflect_1d(ctx, M(t0, 8, 4), 1, 1); }
static struct ggml_tensor * b_roll(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) { (void) c; (void) t; return ggml_roll(ctx, M(t0, 8, 4), 1, 1, 0, 0); }
static struct ggml_tensor * b_timestep_embedding(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) { (void) c; (void) t; return ggml_timestep_embedding(ctx, T(ctx, t0, 3, 1, 1, 1), 8, 10000); }
static struct ggml_tensor * b_argsort(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) { (void) c; (void) t; return ggml_argsort(ctx, M(t0, 8, 4), GGML_SORT_ORDER_ASC); }
static struct ggml_tensor * b_top_k(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) { (void) c; (void) t; return ggml_top_k(ctx, M(t0, 8, 4), 2); }
static struct ggml_tensor * b_leaky_relu(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) { (void) c; (void) t; return ggml_leaky_relu(ctx, M(t0, 8, 4), 0.1f, false); }
static struct ggml_tensor * b_tri(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) { (void) c; (void) t; return ggml_tri(ctx, M(t0, 4, 4), GGML_TRI_TYPE_LOWER); }
static struct ggml_tensor * b_fill(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) { (void) c; (void) t; return ggml_fill(ctx, M(t0, 8, 4), 1.0f); }
static struct ggml_tensor * b_col2im_1d(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) {
    (void) c; (void) t;
    return ggml_col2im_1d(ctx, M(t0, 3 * 2, 4), /*s0=*/1, /*oc=*/2, /*p0=*/0); /* K=3, OC=2, T_in=4 */
}
static struct ggml_tensor * b_win_part(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) { (void) c; (void) t; return ggml_win_part(ctx, T(ctx, t0, 4, 4, 4, 1), 2); }
static struct ggml_tensor * b_win_unpart(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) { (void) c; (void) t; return ggml_win_unpart(ctx, T(ctx, t0, 4, 2, 2, 4), 4, 4, 2); }
static struct ggml_tensor * b_get_rel_pos(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) { (void) c; (void) t; return ggml_get_rel_pos(ctx, M(t0, 4, 2 * 2 - 1), 2, 2); }
static struct ggml_tensor * b_unary(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) { (void) t; return ggml_unary(ctx, M(t0, 8, 4), (enum ggml_unary_op) c->sub); }
/* The GLU ops without parameters on one tensor (gate in the second half of each row). */
static struct ggml_tensor * b_glu(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) { (void) t; return ggml_glu(ctx, M(t0, 8, 4), (enum ggml_glu_op) c->sub, false); }
/* SWIGLU_OAI and SWIGLU_CLAMP have parameters and only split forms; ggml_glu_impl requires b->type == a->type. */
static struct ggml_tensor * b_swiglu_oai(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) { (void) c; (void) t; return ggml_swiglu_oai(ctx, M(t0, 8, 4), M(t0, 8, 4), 1.702f, 7.0f); }
static struct ggml_tensor * b_swiglu_clamp(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) { (void) c; (void) t; return ggml_swiglu_clamp(ctx, M(t0, 8, 4), M(t0, 8, 4), 7.0f); }
/* ggml_concat requires a->type == b->type. */
static struct ggml_tensor * b_concat(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) { (void) c; (void) t; return ggml_concat(ctx, M(t0, 8, 4), M(t0, 8, 4), 1); }
/* b only gives the shape. */
static struct ggml_tensor * b_repeat(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) { (void) c; (void) t; return ggml_repeat(ctx, M(t0, 8, 1), M(t0, 8, 4)); }
static struct ggml_tensor * b_repeat_back(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) { (void) c; (void) t; return ggml_repeat_back(ctx, M(t0, 8, 4), M(t0, 8, 1)); }
static struct ggml_tensor * b_group_norm(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) { (void) c; (void) t; return ggml_group_norm(ctx, T(ctx, t0, 4, 4, 4, 1), 2, 1e-5f); }
static struct ggml_tensor * b_get_rows(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) { (void) c; (void) t; return ggml_get_rows(ctx, M(t0, 8, 4), T(ctx, GGML_TYPE_I32, 2, 1, 1, 1)); }
/* c (the forward data) only gives the shape. */
static struct ggml_tensor * b_get_rows_back(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) {
    (void) c; (void) t;
    return ggml_get_rows_back(ctx, M(t0, 8, 2), T(ctx, GGML_TYPE_I32, 2, 1, 1, 1), M(t0, 8, 4));
}
static struct ggml_tensor * b_rope(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) {
    (void) c; (void) t; /* head_dim 8, 2 heads, 3 tokens; positions I32 */
    return ggml_rope_ext(ctx, T(ctx, t0, 8, 2, 3, 1), T(ctx, GGML_TYPE_I32, 3, 1, 1, 1), NULL, 8, 0, 0, 10000.0f, 1.0f,
                         0.0f, 1.0f, 32.0f, 1.0f);
}
static struct ggml_tensor * b_rope_back(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) {
    (void) c; (void) t;
    return ggml_rope_ext_back(ctx, T(ctx, t0, 8, 2, 3, 1), T(ctx, GGML_TYPE_I32, 3, 1, 1, 1), NULL, 8, 0, 0, 10000.0f,
                              1.0f, 0.0f, 1.0f, 32.0f, 1.0f);
}
/* ggml_flash_attn_back GGML_ABORTs before it reads its arguments ("TODO: adapt to ggml_flash_attn_ext()"). */
static struct ggml_tensor * b_flash_attn_back(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) {
    (void) c;
    return ggml_flash_attn_back(ctx, T(ctx, t0, 8, 2, 2, 1), T(ctx, t, 8, 4, 2, 1), T(ctx, t, 4, 8, 2, 1),
                                T(ctx, t, 8, 2, 2, 1), false);
}
static struct ggml_tensor * b_add_rel_pos(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) {
    (void) c; (void) t; /* pw, ph: F32 (asserted) [2, 2, 2, 1]; a: [2*2, 2*2, 1] */
    return ggml_add_rel_pos(ctx, T(ctx, t0, 4, 4, 1, 1), T(ctx, GGML_TYPE_F32, 2, 2, 2, 1), T(ctx, GGML_TYPE_F32, 2, 2, 2, 1));
}
static struct ggml_tensor * b_lightning_indexer(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) {
    (void) c; /* q [4, 2 heads, 3 batch], k [4, 1, 5 kv], weights [2, 3], mask F16 (asserted) [5, 3] */
    return ggml_lightning_indexer(ctx, T(ctx, t0, 4, 2, 3, 1), T(ctx, t, 4, 1, 5, 1), M(t, 2, 3), M(GGML_TYPE_F16, 5, 3));
}

/* Two or more float sources with a free type: src0 is t0, the others t. */
static struct ggml_tensor * b_add(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) { (void) c; return ggml_add(ctx, M(t0, 8, 4), M(t, 8, 4)); }
static struct ggml_tensor * b_sub(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) { (void) c; return ggml_sub(ctx, M(t0, 8, 4), M(t, 8, 4)); }
static struct ggml_tensor * b_mul(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) { (void) c; return ggml_mul(ctx, M(t0, 8, 4), M(t, 8, 4)); }
static struct ggml_tensor * b_div(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) { (void) c; return ggml_div(ctx, M(t0, 8, 4), M(t, 8, 4)); }
static struct ggml_tensor * b_add_id(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) {
    (void) c; /* a [8, 4 experts used, 2 tokens], b [8, 3 experts], ids I32 [4, 2] */
    return ggml_add_id(ctx, T(ctx, t0, 8, 4, 2, 1), M(t, 8, 3), M(GGML_TYPE_I32, 4, 2));
}
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations" /* ggml_add1 is the only constructor of GGML_OP_ADD1 */
static struct ggml_tensor * b_add1(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) { (void) c; return ggml_add1(ctx, M(t0, 8, 4), T(ctx, t, 1, 1, 1, 1)); }
#pragma GCC diagnostic pop
static struct ggml_tensor * b_acc(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) {
    (void) c;
    struct ggml_tensor * a = M(t0, 8, 4);
    return ggml_acc(ctx, a, M(t, 4, 2), a->nb[1], a->nb[2], a->nb[3], 0);
}
static struct ggml_tensor * b_count_equal(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) { (void) c; return ggml_count_equal(ctx, M(t0, 8, 4), M(t, 8, 4)); }
static struct ggml_tensor * b_silu_back(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) { (void) c; return ggml_silu_back(ctx, M(t0, 8, 4), M(t, 8, 4)); }
static struct ggml_tensor * b_rms_norm_back(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) { (void) c; return ggml_rms_norm_back(ctx, M(t0, 8, 4), M(t, 8, 4), 1e-5f); }
static struct ggml_tensor * b_mul_mat(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) { (void) c; return ggml_mul_mat(ctx, M(t0, 8, 4), M(t, 8, 3)); }
static struct ggml_tensor * b_mul_mat_id(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) {
    (void) c; /* 3 experts of [8, 4]; b [8, 2 used, 2 tokens]; ids I32 [2, 2] */
    return ggml_mul_mat_id(ctx, T(ctx, t0, 8, 4, 3, 1), T(ctx, t, 8, 2, 2, 1), M(GGML_TYPE_I32, 2, 2));
}
static struct ggml_tensor * b_out_prod(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) { (void) c; return ggml_out_prod(ctx, M(t0, 4, 3), M(t, 5, 3)); }
static struct ggml_tensor * b_set(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) {
    (void) c;
    struct ggml_tensor * a = M(t0, 8, 4);
    return ggml_set(ctx, a, M(t, 4, 2), a->nb[1], a->nb[2], a->nb[3], 0);
}
/* ggml_cpy: b is the destination, so `f16-src0` is an F16 -> F32 copy. */
static struct ggml_tensor * b_cpy(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) { (void) c; return ggml_cpy(ctx, M(t0, 8, 4), M(t, 8, 4)); }
static struct ggml_tensor * b_set_rows(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) {
    (void) c; /* one source row into destination row 0 */
    return ggml_set_rows(ctx, M(t0, 8, 4), M(t, 8, 1), T(ctx, GGML_TYPE_I64, 1, 1, 1, 1));
}
static struct ggml_tensor * b_soft_max_back(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) { (void) c; return ggml_soft_max_ext_back(ctx, M(t0, 8, 4), M(t, 8, 4), 1.0f, 0.0f); }
static struct ggml_tensor * b_conv_transpose_1d(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) {
    (void) c; /* kernel [K 3, OC 2, IC 4], data [L 5, IC 4] */
    return ggml_conv_transpose_1d(ctx, T(ctx, t0, 3, 2, 4, 1), M(t, 5, 4), 1, 0, 1);
}
static struct ggml_tensor * b_im2col(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) {
    (void) c; /* kernel [3, 3, IC 2, OC 2], data [5, 5, 2, 1]; dst of src0's type */
    return ggml_im2col(ctx, T(ctx, t0, 3, 3, 2, 2), T(ctx, t, 5, 5, 2, 1), 1, 1, 0, 0, 1, 1, true, t0);
}
/* ggml.h names a "convolution kernel" and b the gradient, but ggml's own backward pass (ggml.c,
   ggml_compute_backward) and the CPU kernel take a = the gradient of im2col's output, b = the kernel. */
static struct ggml_tensor * b_im2col_back(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) {
    (void) c; /* gradient [IC*KH*KW 18, OW 3, OH 3, 1] of a [5, 5, IC 2, 1] input; kernel [3, 3, 2, 2] */
    int64_t ne[4] = {5, 5, 2, 1};
    return ggml_im2col_back(ctx, T(ctx, t0, 18, 3, 3, 1), T(ctx, t, 3, 3, 2, 2), ne, 1, 1, 0, 0, 1, 1, true);
}
static struct ggml_tensor * b_im2col_3d(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) {
    (void) c; /* kernel [2, 2, 2, IC 2 * OC 1], data [3, 3, 3, IC 2 * N 1] */
    return ggml_im2col_3d(ctx, T(ctx, t0, 2, 2, 2, 2), T(ctx, t, 3, 3, 3, 2), 2, 1, 1, 1, 0, 0, 0, 1, 1, 1, t0);
}
static struct ggml_tensor * b_conv_2d(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) {
    (void) c; /* kernel [3, 3, IC 2, OC 2], data [5, 5, 2, 1] */
    return ggml_conv_2d_direct(ctx, T(ctx, t0, 3, 3, 2, 2), T(ctx, t, 5, 5, 2, 1), 1, 1, 0, 0, 1, 1);
}
static struct ggml_tensor * b_conv_3d(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) {
    (void) c; /* kernel [2, 2, 2, IC 2 * OC 2], data [3, 3, 3, IC 2 * N 1] */
    return ggml_conv_3d_direct(ctx, T(ctx, t0, 2, 2, 2, 4), T(ctx, t, 3, 3, 3, 2), 1, 1, 1, 0, 0, 0, 1, 1, 1, 2, 1, 2);
}
static struct ggml_tensor * b_conv_2d_dw(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) {
    (void) c; /* kernel [3, 3, 1, C 2], data [5, 5, 2, 1] */
    return ggml_conv_2d_dw_direct(ctx, T(ctx, t0, 3, 3, 1, 2), T(ctx, t, 5, 5, 2, 1), 1, 1, 0, 0, 1, 1);
}
static struct ggml_tensor * b_conv_transpose_2d(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) {
    (void) c; /* kernel [3, 3, OC 2, IC 4], data [5, 5, IC 4, 1] */
    return ggml_conv_transpose_2d_p0(ctx, T(ctx, t0, 3, 3, 2, 4), T(ctx, t, 5, 5, 4, 1), 1);
}
static struct ggml_tensor * b_pool_2d_back(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) {
    (void) c; /* MAX reads the forward input af */
    return ggml_pool_2d_back(ctx, T(ctx, t0, 2, 2, 2, 1), T(ctx, t, 4, 4, 2, 1), GGML_OP_POOL_MAX, 2, 2, 2, 2, 0, 0);
}
static struct ggml_tensor * b_flash_attn_ext(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) {
    (void) c; /* q [D 8, 2 batch, 2 heads], k, v [8, 4 kv, 2 heads]; no mask */
    return ggml_flash_attn_ext(ctx, T(ctx, t0, 8, 2, 2, 1), T(ctx, t, 8, 4, 2, 1), T(ctx, t, 8, 4, 2, 1), NULL, 1.0f,
                               0.0f, 0.0f);
}
static struct ggml_tensor * b_ssm_conv(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) {
    (void) c; /* sx [d_conv-1 + n_t = 3 + 2, d_inner 4, 1 seq], c [d_conv 4, d_inner 4] */
    return ggml_ssm_conv(ctx, T(ctx, t0, 5, 4, 1, 1), M(t, 4, 4));
}
static struct ggml_tensor * b_ssm_scan(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) {
    (void) c; /* Mamba-2 shapes: d_state 4, head_dim 2, 2 heads, 3 tokens, 1 seq, 1 group; K = 1 */
    return ggml_ssm_scan(ctx, T(ctx, t0, 4, 2, 2, 1), T(ctx, t, 2, 2, 3, 1), T(ctx, t, 2, 3, 1, 1), M(t, 1, 2),
                         T(ctx, t, 4, 1, 3, 1), T(ctx, t, 4, 1, 3, 1), T(ctx, GGML_TYPE_I32, 1, 1, 1, 1), 1);
}
static struct ggml_tensor * b_rwkv_wkv6(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) {
    (void) c; /* S 2, H 2, 3 tokens, 1 seq */
    return ggml_rwkv_wkv6(ctx, T(ctx, t0, 2, 2, 3, 1), T(ctx, t, 2, 2, 3, 1), T(ctx, t, 2, 2, 3, 1), M(t, 2, 2),
                          T(ctx, t, 2, 2, 3, 1), M(t, 2 * 2 * 2, 1));
}
static struct ggml_tensor * b_gated_linear_attn(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) {
    (void) c;
    return ggml_gated_linear_attn(ctx, T(ctx, t0, 2, 2, 3, 1), T(ctx, t, 2, 2, 3, 1), T(ctx, t, 2, 2, 3, 1),
                                  T(ctx, t, 2, 2, 3, 1), M(t, 2 * 2 * 2, 1), 1.0f);
}
/* The F32 kernel steps through a head in whole SIMD vectors (GGML_F32_STEP floats, 64 at most) and reads past
   a smaller head, so the head size is 64 here (test-backend-ops uses 64 too): 1 head, 2 tokens, 1 seq. */
static struct ggml_tensor * b_rwkv_wkv7(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) {
    (void) c;
    return ggml_rwkv_wkv7(ctx, T(ctx, t0, 64, 1, 2, 1), T(ctx, t, 64, 1, 2, 1), T(ctx, t, 64, 1, 2, 1),
                          T(ctx, t, 64, 1, 2, 1), T(ctx, t, 64, 1, 2, 1), T(ctx, t, 64, 1, 2, 1), M(t, 64 * 64, 1));
}
static struct ggml_tensor * b_solve_tri(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) {
    (void) c; /* A [3, 3] lower, B [2 columns, 3 rows] */
    return ggml_solve_tri(ctx, M(t0, 3, 3), M(t, 2, 3), true, true, false);
}
static struct ggml_tensor * b_gated_delta_net(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) {
    (void) c; /* S 2, H 2, 3 tokens, 1 seq, scalar gate; K = 1 */
    return ggml_gated_delta_net(ctx, T(ctx, t0, 2, 2, 3, 1), T(ctx, t, 2, 2, 3, 1), T(ctx, t, 2, 2, 3, 1),
                                T(ctx, t, 1, 2, 3, 1), T(ctx, t, 1, 2, 3, 1), T(ctx, t, 2, 2, 2, 1), 1);
}
static struct ggml_tensor * b_dsv4_hc_comb(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) {
    (void) c; /* hc 4: mixes [(2 + 4)*4, 2 tokens], scale [3], base [24] */
    return ggml_dsv4_hc_comb(ctx, M(t0, 24, 2), M(t, 3, 1), M(t, 24, 1), 1e-6f, 1);
}
static struct ggml_tensor * b_dsv4_hc_pre(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) {
    (void) c; /* x [n_embd 4, hc 4, 2 tokens], weights [4, 2] */
    return ggml_dsv4_hc_pre(ctx, T(ctx, t0, 4, 4, 2, 1), M(t, 4, 2));
}
static struct ggml_tensor * b_dsv4_hc_post(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) {
    (void) c; /* x [4, 2 tokens], residual [4, hc 4, 2], post [4, 2], no comb */
    return ggml_dsv4_hc_post(ctx, M(t0, 4, 2), T(ctx, t, 4, 4, 2, 1), M(t, 4, 2), NULL);
}
static struct ggml_tensor * b_cross_entropy_loss(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) { (void) c; return ggml_cross_entropy_loss(ctx, M(t0, 8, 4), M(t, 8, 4)); }
static struct ggml_tensor * b_cross_entropy_loss_back(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) {
    (void) c; /* src0 is the scalar gradient of the loss; then logits and labels */
    return ggml_cross_entropy_loss_back(ctx, T(ctx, t0, 1, 1, 1, 1), M(t, 8, 4), M(t, 8, 4));
}
static struct ggml_tensor * b_opt_step_adamw(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) {
    (void) c; /* the parameter vector is F32 [7] (asserted) */
    struct ggml_tensor * a = M(t0, 8, 4);
    ggml_set_param(a);
    return ggml_opt_step_adamw(ctx, a, M(t, 8, 4), M(t, 8, 4), M(t, 8, 4), T(ctx, GGML_TYPE_F32, 7, 1, 1, 1));
}
static struct ggml_tensor * b_opt_step_sgd(struct ggml_context * ctx, const struct op_case * c, enum ggml_type t0, enum ggml_type t) {
    (void) c; /* the parameter vector is F32 [2] (asserted) */
    struct ggml_tensor * a = M(t0, 8, 4);
    ggml_set_param(a);
    return ggml_opt_step_sgd(ctx, a, M(t, 8, 4), T(ctx, GGML_TYPE_F32, 2, 1, 1, 1));
}

#define ONE(op, fn) {GGML_OP_##op, -1, false, fn}
#define TWO(op, fn) {GGML_OP_##op, -1, true, fn}
#define UNARY(u) {GGML_OP_UNARY, GGML_UNARY_OP_##u, false, b_unary}
#define GLU(g, fn) {GGML_OP_GLU, GGML_GLU_OP_##g, false, fn}

/* In ggml_op order (ggml.h), then the UNARY and GLU sub-ops in theirs. */
static const struct op_case kCases[] = {
    ONE(DUP, b_dup),
    TWO(ADD, b_add),
    TWO(ADD_ID, b_add_id),
    TWO(ADD1, b_add1),
    TWO(ACC, b_acc),
    TWO(SUB, b_sub),
    TWO(MUL, b_mul),
    TWO(DIV, b_div),
    ONE(SQR, b_sqr),
    ONE(SQRT, b_sqrt),
    ONE(LOG, b_log),
    ONE(SIN, b_sin),
    ONE(COS, b_cos),
    ONE(SUM, b_sum),
    ONE(SUM_ROWS, b_sum_rows),
    ONE(CUMSUM, b_cumsum),
    ONE(MEAN, b_mean),
    ONE(ARGMAX, b_argmax),
    TWO(COUNT_EQUAL, b_count_equal),
    ONE(REPEAT, b_repeat),
    ONE(REPEAT_BACK, b_repeat_back),
    ONE(CONCAT, b_concat),
    TWO(SILU_BACK, b_silu_back),
    ONE(NORM, b_norm),
    ONE(RMS_NORM, b_rms_norm),
    TWO(RMS_NORM_BACK, b_rms_norm_back),
    ONE(GROUP_NORM, b_group_norm),
    ONE(L2_NORM, b_l2_norm),
    TWO(MUL_MAT, b_mul_mat),
    TWO(MUL_MAT_ID, b_mul_mat_id),
    TWO(OUT_PROD, b_out_prod),
    ONE(SCALE, b_scale),
    TWO(SET, b_set),
    TWO(CPY, b_cpy),
    ONE(CONT, b_cont),
    ONE(RESHAPE, b_reshape),
    ONE(VIEW, b_view),
    ONE(PERMUTE, b_permute),
    ONE(TRANSPOSE, b_transpose),
    ONE(GET_ROWS, b_get_rows),
    ONE(GET_ROWS_BACK, b_get_rows_back),
    TWO(SET_ROWS, b_set_rows),
    ONE(DIAG, b_diag),
    ONE(DIAG_MASK_INF, b_diag_mask_inf),
    ONE(DIAG_MASK_ZERO, b_diag_mask_zero),
    ONE(SOFT_MAX, b_soft_max),
    TWO(SOFT_MAX_BACK, b_soft_max_back),
    ONE(ROPE, b_rope),
    ONE(ROPE_BACK, b_rope_back),
    ONE(CLAMP, b_clamp),
    TWO(CONV_TRANSPOSE_1D, b_conv_transpose_1d),
    TWO(IM2COL, b_im2col),
    TWO(IM2COL_BACK, b_im2col_back),
    TWO(IM2COL_3D, b_im2col_3d),
    ONE(COL2IM_1D, b_col2im_1d),
    TWO(CONV_2D, b_conv_2d),
    TWO(CONV_3D, b_conv_3d),
    TWO(CONV_2D_DW, b_conv_2d_dw),
    TWO(CONV_TRANSPOSE_2D, b_conv_transpose_2d),
    ONE(POOL_1D, b_pool_1d),
    ONE(POOL_2D, b_pool_2d),
    TWO(POOL_2D_BACK, b_pool_2d_back),
    ONE(UPSCALE, b_upscale),
    ONE(PAD, b_pad),
    ONE(PAD_REFLECT_1D, b_pad_reflect_1d),
    ONE(ROLL, b_roll),
    ONE(TIMESTEP_EMBEDDING, b_timestep_embedding),
    ONE(ARGSORT, b_argsort),
    ONE(TOP_K, b_top_k),
    ONE(LEAKY_RELU, b_leaky_relu),
    ONE(TRI, b_tri),
    ONE(FILL, b_fill),
    TWO(FLASH_ATTN_EXT, b_flash_attn_ext),
    TWO(FLASH_ATTN_BACK, b_flash_attn_back),
    TWO(SSM_CONV, b_ssm_conv),
    TWO(SSM_SCAN, b_ssm_scan),
    ONE(WIN_PART, b_win_part),
    ONE(WIN_UNPART, b_win_unpart),
    ONE(GET_REL_POS, b_get_rel_pos),
    ONE(ADD_REL_POS, b_add_rel_pos),
    TWO(RWKV_WKV6, b_rwkv_wkv6),
    TWO(GATED_LINEAR_ATTN, b_gated_linear_attn),
    TWO(RWKV_WKV7, b_rwkv_wkv7),
    TWO(SOLVE_TRI, b_solve_tri),
    TWO(GATED_DELTA_NET, b_gated_delta_net),
    TWO(LIGHTNING_INDEXER, b_lightning_indexer),
    TWO(DSV4_HC_COMB, b_dsv4_hc_comb),
    TWO(DSV4_HC_PRE, b_dsv4_hc_pre),
    TWO(DSV4_HC_POST, b_dsv4_hc_post),
    TWO(CROSS_ENTROPY_LOSS, b_cross_entropy_loss),
    TWO(CROSS_ENTROPY_LOSS_BACK, b_cross_entropy_loss_back),
    TWO(OPT_STEP_ADAMW, b_opt_step_adamw),
    TWO(OPT_STEP_SGD, b_opt_step_sgd),
    UNARY(ABS), UNARY(SGN), UNARY(NEG), UNARY(STEP), UNARY(TANH), UNARY(ELU), UNARY(RELU), UNARY(SIGMOID),
    UNARY(GELU), UNARY(GELU_QUICK), UNARY(SILU), UNARY(HARDSWISH), UNARY(HARDSIGMOID), UNARY(EXP), UNARY(EXPM1),
    UNARY(SOFTPLUS), UNARY(GELU_ERF), UNARY(XIELU), UNARY(FLOOR), UNARY(CEIL), UNARY(ROUND), UNARY(TRUNC),
    GLU(REGLU, b_glu), GLU(GEGLU, b_glu), GLU(SWIGLU, b_glu), GLU(SWIGLU_OAI, b_swiglu_oai),
    GLU(GEGLU_ERF, b_glu), GLU(GEGLU_QUICK, b_glu), GLU(SWIGLU_CLAMP, b_swiglu_clamp),
};

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
