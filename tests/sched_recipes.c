/* sched_recipes.c: schedules covering every instruction kind, every
 * argument type (handles, handle lists, ints, strings with escapes, int
 * lists, empty lists) and every output shape, for the C trace test. */
#include "sched_recipes.h"

#define TRY(x)                                                                            \
    do {                                                                                  \
        tir_status st_ = (x);                                                             \
        if (st_ != TIR_OK) return st_;                                                    \
    } while (0)

static const tir_prim_func *matmul(tir_ctx *ctx) {
    return tir_def_matmul(ctx, 70, 50, 40, TIR_F32);
}
static const tir_prim_func *chain(tir_ctx *ctx) {
    return tir_def_elementwise_chain(ctx, 13, 7, TIR_F32);
}
static const tir_prim_func *conv(tir_ctx *ctx) {
    return tir_def_conv2d_nchw(ctx, 1, 3, 9, 9, 4, 3, 3, 1, 1, TIR_F32);
}

/* The seed blog's Step 2 tiling at an odd size. */
static tir_status step2(tir_schedule *s) {
    tir_block_rv c;
    const tir_loop_rv *l;
    int n;
    TRY(tir_sched_get_block(s, "C", &c));
    TRY(tir_sched_get_loops(s, c, &l, &n));
    tir_loop_rv i = l[0], j = l[1], k = l[2], i2[2], j2[2], k2[2], i3[2], j3[2];
    TRY(tir_sched_split(s, i, 2, (const int64_t[]){TIR_SPLIT_INFER, 32}, i2));
    TRY(tir_sched_split(s, j, 2, (const int64_t[]){TIR_SPLIT_INFER, 32}, j2));
    TRY(tir_sched_split(s, k, 2, (const int64_t[]){TIR_SPLIT_INFER, 32}, k2));
    TRY(tir_sched_split(s, i2[1], 2, (const int64_t[]){4, TIR_SPLIT_INFER}, i3));
    TRY(tir_sched_split(s, j2[1], 2, (const int64_t[]){8, TIR_SPLIT_INFER}, j3));
    TRY(tir_sched_reorder(s, 8, (const tir_loop_rv[]){i2[0], j2[0], i3[0], j3[0], k2[0], i3[1],
                                                      j3[1], k2[1]}));
    TRY(tir_sched_bind(s, i2[0], "blockIdx.x"));
    TRY(tir_sched_bind(s, j2[0], "blockIdx.y"));
    TRY(tir_sched_bind(s, i3[0], "threadIdx.x"));
    TRY(tir_sched_bind(s, j3[0], "threadIdx.y"));
    TRY(tir_sched_annotate_loop_ints(s, k2[0], "software_pipeline_stage", 3,
                                     (const int64_t[]){0, 0, 1}));
    TRY(tir_sched_annotate_loop_int(s, k2[1], "pragma_auto_unroll_max_step", 16));
    TRY(tir_sched_unroll(s, k2[1]));
    return TIR_OK;
}

static tir_status chain_sched(tir_schedule *s) {
    tir_block_rv root, b;
    const tir_block_rv *kids, *prod, *cons;
    int nk, np, nc;
    TRY(tir_sched_get_block(s, "root", &root));
    TRY(tir_sched_get_child_blocks(s, root, &kids, &nk));
    TRY(tir_sched_get_block(s, "B", &b));
    TRY(tir_sched_get_producers(s, b, &prod, &np)); /* none: an empty list */
    TRY(tir_sched_get_consumers(s, b, &cons, &nc));
    const tir_loop_rv *l;
    int n;
    TRY(tir_sched_get_loops(s, cons[0], &l, &n));
    tir_loop_rv f, parts[3];
    TRY(tir_sched_fuse(s, 2, l, &f));
    TRY(tir_sched_split(s, f, 3, (const int64_t[]){TIR_SPLIT_INFER, 4, 2}, parts));
    TRY(tir_sched_parallel(s, parts[0]));
    TRY(tir_sched_vectorize(s, parts[2]));
    TRY(tir_sched_annotate_block_str(s, b, "note", "a \"quoted\" \\ value\nwith */ inside"));
    TRY(tir_sched_annotate_block_int(s, kids[nk - 1], "priority", -9000000000LL));
    TRY(tir_sched_annotate_block_ints(s, kids[0], "empty", 0, NULL));
    TRY(tir_sched_annotate_loop_str(s, parts[1], "tag", ""));
    /* Trigraphs: "??=" printed as is in C compiles to "#", and "??/" to a
       backslash escaping the closing quote; "/ *" opens a comment in one. */
    TRY(tir_sched_annotate_loop_str(s, parts[2], "trigraphs", "a?\?=b?\?/c?\?!/*d?"));
    TRY(tir_sched_unannotate_block(s, kids[0], "empty"));
    const tir_block_rv *under;
    int nu;
    TRY(tir_sched_get_loop_child_blocks(s, parts[0], &under, &nu));
    TRY(tir_sched_annotate_block_int(s, under[0], "under", nu));
    return TIR_OK;
}

static tir_status conv_sched(tir_schedule *s) {
    tir_block_rv c;
    const tir_block_rv *prod;
    int np;
    TRY(tir_sched_get_block(s, "conv", &c));
    TRY(tir_sched_get_producers(s, c, &prod, &np));
    const tir_loop_rv *l;
    int n;
    TRY(tir_sched_get_loops(s, c, &l, &n));
    /* n, o, y, x, c, ry, rx */
    TRY(tir_sched_reorder(s, 3, (const tir_loop_rv[]){l[3], l[1], l[2]}));
    TRY(tir_sched_parallel(s, l[1]));
    TRY(tir_sched_unroll(s, l[6]));
    TRY(tir_sched_annotate_loop_int(s, l[4], "k", 1));
    TRY(tir_sched_unannotate_loop(s, l[4], "k"));
    const tir_loop_rv *pl;
    int npl;
    TRY(tir_sched_get_loops(s, prod[0], &pl, &npl));
    tir_loop_rv f;
    TRY(tir_sched_fuse(s, npl, pl, &f));
    return TIR_OK;
}

/* Block primitives: the seed's Steps 3-4 on top of Step 2 (block lists, caches,
 * compute_at at both ends), and the inlines on the chain. */
static tir_status step4(tir_schedule *s) {
    TRY(step2(s));
    tir_block_rv c, a_sh, b_sh, c_loc;
    const tir_loop_rv *l;
    int n;
    TRY(tir_sched_get_block(s, "C", &c));
    TRY(tir_sched_get_loops(s, c, &l, &n));
    tir_loop_rv j_thread = l[3], k_outer = l[4];
    TRY(tir_sched_cache_read(s, c, 0, "shared", 1, (const tir_block_rv[]){c}, &a_sh));
    TRY(tir_sched_cache_read(s, c, 1, "shared", 0, NULL, &b_sh));
    TRY(tir_sched_compute_at(s, a_sh, k_outer, false));
    TRY(tir_sched_compute_at(s, b_sh, k_outer, true));
    TRY(tir_sched_cache_write(s, c, 0, "local", 0, NULL, &c_loc));
    TRY(tir_sched_reverse_compute_at(s, c_loc, j_thread, false));
    return TIR_OK;
}

static tir_status chain_inline(tir_schedule *s) {
    tir_block_rv b, d;
    TRY(tir_sched_get_block(s, "B", &b));
    TRY(tir_sched_get_block(s, "D", &d));
    TRY(tir_sched_compute_inline(s, b));
    TRY(tir_sched_reverse_compute_inline(s, d));
    tir_block_rv c;
    const tir_loop_rv *l;
    int n;
    TRY(tir_sched_get_block(s, "C", &c));
    TRY(tir_sched_get_loops(s, c, &l, &n));
    tir_loop_rv parts[2];
    TRY(tir_sched_split(s, l[0], 2, (const int64_t[]){TIR_SPLIT_INFER, 4}, parts));
    return TIR_OK;
}

/* Fusion, reductions, buffers and pipelining: fuse_reduction_epilogue,
 * decompose_reduction, storage_align, set_scope, software_pipeline (three
 * int lists, one empty). */
static const tir_prim_func *bias_relu(tir_ctx *ctx) {
    return tir_def_matmul_bias_relu(ctx, 37, 29, 23, TIR_F32);
}

static tir_status bias_relu_sched(tir_schedule *s) {
    tir_block_rv c, d, init;
    TRY(tir_sched_get_block(s, "C", &c));
    TRY(tir_sched_get_block(s, "D", &d));
    TRY(tir_sched_fuse_reduction_epilogue(s, c, d, NULL));
    const tir_loop_rv *l;
    int n;
    TRY(tir_sched_get_loops(s, c, &l, &n));
    tir_loop_rv j = l[1], k = l[2], k2[2];
    TRY(tir_sched_split(s, k, 2, (const int64_t[]){TIR_SPLIT_INFER, 8}, k2));
    TRY(tir_sched_decompose_reduction(s, c, k2[0], &init));
    TRY(tir_sched_storage_align(s, c, 0, 0, 32, 1));
    TRY(tir_sched_set_scope(s, c, 0, "local"));
    TRY(tir_sched_software_pipeline(s, k2[0], 1, (const int64_t[]){0}, 1, (const int64_t[]){0},
                                    0, NULL));
    TRY(tir_sched_software_pipeline(s, j, 2, (const int64_t[]){0, 1}, 2,
                                    (const int64_t[]){0, 1}, 1, (const int64_t[]){1}));
    return TIR_OK;
}

/* transform_layout: Step 4 with a k-major A tile (through the consumer's
 * read index), a rotated B tile, and a reshaped accumulator. */
static tir_status layout_sched(tir_schedule *s) {
    TRY(step4(s));
    tir_block_rv c, b_sh, c_loc;
    TRY(tir_sched_get_block(s, "C", &c));
    TRY(tir_sched_get_block(s, "B_shared", &b_sh));
    TRY(tir_sched_get_block(s, "C_local", &c_loc));
    TRY(tir_sched_transform_layout(s, c, 0, false, "lambda i, k: (k, i)"));
    TRY(tir_sched_transform_layout(s, b_sh, 0, true, "lambda k, j: (k, (j + k) % 50)"));
    TRY(tir_sched_transform_layout(s, c_loc, 0, false, "lambda i, j: [i * 50 + j]"));
    return TIR_OK;
}

/* rfactor: split-K of a matmul at odd sizes, the partial sums' loop bound
 * to blockIdx.z and a negative factor_axis. */
static const tir_prim_func *splitk(tir_ctx *ctx) {
    return tir_def_matmul(ctx, 33, 45, 200, TIR_F32);
}

static tir_status splitk_sched(tir_schedule *s) {
    tir_block_rv c, rf;
    const tir_loop_rv *l;
    int n;
    TRY(tir_sched_get_block(s, "C", &c));
    TRY(tir_sched_get_loops(s, c, &l, &n));
    tir_loop_rv i = l[0], k2[2];
    TRY(tir_sched_split(s, l[2], 2, (const int64_t[]){3, TIR_SPLIT_INFER}, k2));
    TRY(tir_sched_rfactor(s, k2[0], -3, &rf));
    TRY(tir_sched_bind(s, k2[0], "blockIdx.z"));
    TRY(tir_sched_bind(s, i, "blockIdx.x"));
    return TIR_OK;
}

/* Sampling: a tiling of a ragged matmul from sampled factors (a perfect
 * tile of M, a covering tile of N, one forced decision), the block bound
 * and an unroll depth and a block annotation picked by
 * sample_categorical.  The direct calls sample with a fixed seed; the
 * printed C passes the decisions they took. */
static tir_status sampled_sched(tir_schedule *s) {
    tir_block_rv c;
    const tir_loop_rv *l;
    int n;
    tir_sched_seed(s, 2026);
    TRY(tir_sched_get_block(s, "C", &c));
    TRY(tir_sched_get_loops(s, c, &l, &n));
    tir_loop_rv i = l[0], j = l[1], k = l[2], i3[3], j2[2], k2[2];
    tir_value_rv fi[3], fj[2], fk[2], unroll, vec;
    TRY(tir_sched_sample_perfect_tile(s, i, 3, 8, 0, NULL, fi));
    TRY(tir_sched_split_rv(s, i, 3, fi, i3));
    TRY(tir_sched_sample_tile(s, j, 2, 16, 30, 0, NULL, fj));
    TRY(tir_sched_split_rv(s, j, 2, fj, j2));
    TRY(tir_sched_sample_perfect_tile(s, k, 2, 8, 2, (const int64_t[]){5, 8}, fk));
    TRY(tir_sched_split_rv(s, k, 2, fk, k2));
    TRY(tir_sched_bind(s, i3[0], "blockIdx.x"));
    TRY(tir_sched_sample_categorical(s, 4, (const int64_t[]){0, 16, 64, 512},
                                     (const double[]){0.1, 0.2, 0.3, 0.4}, 0, NULL, &unroll));
    TRY(tir_sched_annotate_loop_rv(s, k2[1], "pragma_auto_unroll_max_step", unroll));
    TRY(tir_sched_sample_categorical(s, 3, (const int64_t[]){1, 2, 4},
                                     (const double[]){1.0 / 3, 1.0 / 3, 1.0 / 3}, 0, NULL, &vec));
    TRY(tir_sched_annotate_block_rv(s, c, "note", vec));
    return TIR_OK;
}

/* blockize: a 16 x 8 x 16 tile of a ragged matmul after
 * decompose_reduction, the update and the init blockized, the tile loops
 * bound. */
static const tir_prim_func *tiles(tir_ctx *ctx) {
    return tir_def_matmul(ctx, 40, 20, 32, TIR_F32);
}

static tir_status tiles_sched(tir_schedule *s) {
    tir_block_rv c, init, co, io;
    const tir_loop_rv *l, *il;
    int n;
    TRY(tir_sched_get_block(s, "C", &c));
    TRY(tir_sched_get_loops(s, c, &l, &n));
    tir_loop_rv i = l[0], j = l[1], k = l[2], i2[2], j2[2], k2[2];
    TRY(tir_sched_split(s, i, 2, (const int64_t[]){TIR_SPLIT_INFER, 16}, i2));
    TRY(tir_sched_split(s, j, 2, (const int64_t[]){TIR_SPLIT_INFER, 8}, j2));
    TRY(tir_sched_split(s, k, 2, (const int64_t[]){TIR_SPLIT_INFER, 16}, k2));
    TRY(tir_sched_reorder(s, 6, (const tir_loop_rv[]){i2[0], j2[0], k2[0], i2[1], j2[1], k2[1]}));
    TRY(tir_sched_decompose_reduction(s, c, k2[0], &init));
    TRY(tir_sched_blockize(s, i2[1], &co));
    TRY(tir_sched_get_loops(s, init, &il, &n));
    TRY(tir_sched_blockize(s, il[n - 2], &io));
    TRY(tir_sched_bind(s, i2[0], "blockIdx.x"));
    TRY(tir_sched_bind(s, j2[0], "threadIdx.x"));
    return TIR_OK;
}

const sched_recipe sched_recipes[] = {
    {"matmul_step2", matmul, step2},
    {"chain", chain, chain_sched},
    {"conv", conv, conv_sched},
    {"matmul_step4", matmul, step4},
    {"chain_inline", chain, chain_inline},
    {"bias_relu_fused", bias_relu, bias_relu_sched},
    {"layout", matmul, layout_sched},
    {"splitk", splitk, splitk_sched},
    {"sampled", matmul, sampled_sched},
    {"blockize", tiles, tiles_sched},
};
const int sched_nrecipes = sizeof sched_recipes / sizeof *sched_recipes;
