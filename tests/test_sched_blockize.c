/* Tests of blockize: the golden of a matmul tile (split iterators, the
 * init moved into "C_init"), a conv2d, ragged splits (predicates kept
 * inside, a bound added outside), iterators moving wholly out or staying
 * in, an update after decompose_reduction, blockize twice, and scheduling
 * of the loops around the new block (cache_read + compute_at, thread
 * binding) lowered and run in the simulator against the interpreter;
 * trace roundtrip and interpreter equivalence throughout; one negative
 * test per checkable precondition, each checking that nothing changed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "minitir/lower.h"
#include "minitir/runtime.h"
#include "minitir/sim.h"
#include "sched_check.h"
#include "sched_testfuncs.h"

static int setup(void **st) {
    *st = tir_ctx_create();
    return *st ? 0 : -1;
}
static int teardown(void **st) {
    tir_ctx_destroy(*st);
    return 0;
}

/* Splits the three loops of block "C" of a matmul by fi, fj, fk (inner
 * factors) and reorders them i_0, j_0, k_0, i_1, j_1, k_1; out gets the
 * six loops in that order. */
static void tile(tir_schedule *s, int64_t fi, int64_t fj, int64_t fk, tir_loop_rv *out) {
    tir_loop_rv l[16], i2[2], j2[2], k2[2];
    sched_loops(s, "C", l);
    SCHED_OK(s, tir_sched_split(s, l[0], 2, (const int64_t[]){TIR_SPLIT_INFER, fi}, i2));
    SCHED_OK(s, tir_sched_split(s, l[1], 2, (const int64_t[]){TIR_SPLIT_INFER, fj}, j2));
    SCHED_OK(s, tir_sched_split(s, l[2], 2, (const int64_t[]){TIR_SPLIT_INFER, fk}, k2));
    tir_loop_rv o[6] = {i2[0], j2[0], k2[0], i2[1], j2[1], k2[1]};
    SCHED_OK(s, tir_sched_reorder(s, 6, o));
    memcpy(out, o, sizeof o);
}

static const char tile_golden[] =
    "@T.prim_func\n"
    "def matmul(A: T.Buffer((32, 32), \"float32\"), B: T.Buffer((32, 16), \"float32\"), C: T.Buffer((32, 16), \"float32\")):\n"
    "    T.func_attr({\"global_symbol\": \"matmul\", \"tir.noalias\": 1})\n"
    "    for i_0, j_0, k_0 in T.grid(2, 2, 2):\n"
    "        with T.block(\"C_o\"):\n"
    "            vi_o, vj_o, vk_o = T.axis.remap(\"SSR\", [i_0, j_0, k_0])\n"
    "            T.reads(A[vi_o * 16:vi_o * 16 + 16, vk_o * 16:vk_o * 16 + 16], B[vk_o * 16:vk_o * 16 + 16, vj_o * 8:vj_o * 8 + 8])\n"
    "            T.writes(C[vi_o * 16:vi_o * 16 + 16, vj_o * 8:vj_o * 8 + 8])\n"
    "            with T.init():\n"
    "                for i_1, j_1 in T.grid(16, 8):\n"
    "                    with T.block(\"C_init\"):\n"
    "                        vi_init, vj_init = T.axis.remap(\"SS\", [i_1, j_1])\n"
    "                        T.writes(C[vi_o * 16 + vi_init, vj_o * 8 + vj_init])\n"
    "                        C[vi_o * 16 + vi_init, vj_o * 8 + vj_init] = T.float32(0)\n"
    "            for i_1_1, j_1_1, k_1 in T.grid(16, 8, 16):\n"
    "                with T.block(\"C\"):\n"
    "                    vi, vj, vk = T.axis.remap(\"SSR\", [i_1_1, j_1_1, k_1])\n"
    "                    T.reads(A[vi_o * 16 + vi, vk_o * 16 + vk], B[vk_o * 16 + vk, vj_o * 8 + vj])\n"
    "                    T.writes(C[vi_o * 16 + vi, vj_o * 8 + vj])\n"
    "                    C[vi_o * 16 + vi, vj_o * 8 + vj] = C[vi_o * 16 + vi, vj_o * 8 + vj] + A[vi_o * 16 + vi, vk_o * 16 + vk] * B[vk_o * 16 + vk, vj_o * 8 + vj]\n";

/* The tensor-core tile shape (16 x 8 x 16): golden, handles, the trace. */
static void test_blockize_golden(void **st) {
    tir_ctx *ctx = *st;
    tir_schedule *s = sched_new(ctx, tir_def_matmul(ctx, 32, 16, 32, TIR_F32));
    tir_loop_rv l[6], in[16], out[16];
    tile(s, 16, 8, 16, l);
    tir_block_rv o;
    SCHED_OK(s, tir_sched_blockize(s, l[3], &o));
    sched_expect_text(s, tile_golden);
    assert_true(tir_sched_same_block(s, o, sched_block(s, "C_o")));
    /* The loops keep their handles: three above C_o, three above C. */
    assert_int_equal(sched_loops(s, "C_o", out), 3);
    assert_int_equal(sched_loops(s, "C", in), 3);
    for (int k = 0; k < 3; k++) {
        assert_true(tir_sched_same_loop(s, out[k], l[k]));
        assert_true(tir_sched_same_loop(s, in[k], l[3 + k]));
    }
    const char *tr = tir_sched_trace_text(s);
    assert_non_null(strstr(tr, "blockize("));
    sched_check_all(s);
    tir_sched_destroy(s);
}

/* conv2d: the output tile (o, y, x split) with every reduction loop
 * inside, and with the channel reduction split across the boundary. */
static void test_blockize_conv2d(void **st) {
    tir_ctx *ctx = *st;
    for (int variant = 0; variant < 2; variant++) {
        tir_schedule *s =
            sched_new(ctx, tir_def_conv2d_nchw(ctx, 1, 4, 6, 6, 8, 3, 3, 1, 1, TIR_F32));
        tir_loop_rv l[16], o2[2], y2[2], rc2[2];
        assert_int_equal(sched_loops(s, "conv", l), 7);
        SCHED_OK(s, tir_sched_split(s, l[1], 2, (const int64_t[]){2, 4}, o2));
        SCHED_OK(s, tir_sched_split(s, l[2], 2, (const int64_t[]){3, 2}, y2));
        SCHED_OK(s, tir_sched_split(s, l[4], 2, (const int64_t[]){2, 2}, rc2));
        /* n, o_0, y_0, rc_0 | o_1, y_1, x, rc_1, ry, rx */
        tir_loop_rv ord[10] = {l[0], o2[0], y2[0], rc2[0], o2[1], y2[1], l[3], rc2[1], l[5], l[6]};
        if (variant == 1) { /* rc whole inside */
            ord[3] = o2[1];
            ord[4] = rc2[0];
        }
        SCHED_OK(s, tir_sched_reorder(s, 10, ord));
        tir_block_rv b;
        SCHED_OK(s, tir_sched_blockize(s, ord[4], &b));
        sched_check_all(s);
        tir_sched_destroy(s);
    }
}

/* Ragged shapes: a split not dividing the extent leaves a predicate over
 * inner loops (it stays on the inner block); factors whose product
 * exceeds the extent also need the outer bound. */
static void test_blockize_ragged(void **st) {
    tir_ctx *ctx = *st;
    static const int64_t fi[][2] = {{TIR_SPLIT_INFER, 16}, {3, 16}};
    for (int v = 0; v < 2; v++) {
        tir_schedule *s = sched_new(ctx, tir_def_matmul(ctx, 30, 13, 20, TIR_F32));
        tir_loop_rv l[16], i2[2], j2[2];
        sched_loops(s, "C", l);
        SCHED_OK(s, tir_sched_split(s, l[0], 2, fi[v], i2));
        SCHED_OK(s, tir_sched_split(s, l[1], 2, (const int64_t[]){TIR_SPLIT_INFER, 8}, j2));
        SCHED_OK(s, tir_sched_reorder(s, 5, (const tir_loop_rv[]){i2[0], j2[0], i2[1], j2[1], l[2]}));
        tir_block_rv o;
        SCHED_OK(s, tir_sched_blockize(s, i2[1], &o));
        const char *txt = tir_print(ctx, tir_sched_func(s));
        /* the split guards stay on C, the loops above read as iterators */
        assert_non_null(strstr(txt, "T.where(vi_o * 16 + i_1 < 30 and vj_o * 8 + j_1 < 13)"));
        /* the outer bound only when 3 x 16 exceeds ceil(30 / 16) tiles */
        assert_true((strstr(txt, "T.where(i_0 < 2)") != NULL) == (v == 1));
        sched_check_all(s);
        tir_sched_destroy(s);
    }
}

/* A fused loop split past its extent: the iterator that moves out whole
 * (j, bound to the outer loop) was kept in its domain only by the inner
 * guard; the outer block bounds it (the schedule fuzzer's matmul case,
 * seed 1797600010 case 13725, and the conv2d one, seed 1797600009). */
static void test_blockize_outer_bound(void **st) {
    tir_ctx *ctx = *st;
    tir_schedule *s = sched_new(ctx, tir_def_matmul(ctx, 12, 4, 4, TIR_F32));
    tir_loop_rv l[16], jk, f[3];
    sched_loops(s, "C", l);
    SCHED_OK(s, tir_sched_fuse(s, 2, (const tir_loop_rv[]){l[1], l[2]}, &jk));
    SCHED_OK(s, tir_sched_split(s, jk, 3, (const int64_t[]){6, TIR_SPLIT_INFER, 2}, f));
    tir_block_rv o;
    SCHED_OK(s, tir_sched_blockize(s, f[1], &o));
    const char *txt = tir_print(ctx, tir_sched_func(s));
    assert_non_null(strstr(txt, "vj = T.axis.spatial(4, j_k_fused_0)"));
    assert_non_null(strstr(txt, "T.where(j_k_fused_0 < 4)"));
    sched_check_all(s);
    tir_sched_destroy(s);
}

/* The whole nest (every iterator stays inside, the outer block has none)
 * and the innermost reduction loop only (vi, vj move out unchanged). */
static void test_blockize_outer_inner(void **st) {
    tir_ctx *ctx = *st;
    tir_schedule *s = sched_new(ctx, tir_def_matmul(ctx, 8, 6, 4, TIR_F32));
    tir_loop_rv l[16];
    sched_loops(s, "C", l);
    tir_block_rv o, o2;
    SCHED_OK(s, tir_sched_blockize(s, l[2], &o));
    const tir_block *b;
    SCHED_OK(s, tir_sched_get_block_node(s, o, &b));
    assert_int_equal(b->niters, 2); /* vi, vj */
    assert_null(b->init); /* no reduce iterator outside: the init stays on C */
    sched_check_all(s);
    SCHED_OK(s, tir_sched_blockize(s, l[0], &o2));
    SCHED_OK(s, tir_sched_get_block_node(s, o2, &b));
    assert_int_equal(b->niters, 0);
    assert_string_equal(b->name, "C_o_o");
    sched_check_all(s);
    tir_sched_destroy(s);
}

/* decompose_reduction first (the tensor-core flow): the init and the
 * update blockized separately; then blockize of a blockized tile's outer
 * loops again. */
static void test_blockize_decomposed(void **st) {
    tir_ctx *ctx = *st;
    tir_schedule *s = sched_new(ctx, tir_def_matmul(ctx, 32, 16, 48, TIR_F32));
    tir_loop_rv l[6], il[16];
    tile(s, 16, 8, 16, l);
    tir_block_rv init, o, io;
    SCHED_OK(s, tir_sched_decompose_reduction(s, sched_block(s, "C"), l[2], &init));
    SCHED_OK(s, tir_sched_blockize(s, l[3], &o));
    assert_int_equal(sched_loops(s, "C_init", il), 4);
    SCHED_OK(s, tir_sched_blockize(s, il[2], &io));
    const tir_block *b;
    SCHED_OK(s, tir_sched_get_block_node(s, io, &b));
    assert_string_equal(b->name, "C_init_o");
    SCHED_OK(s, tir_sched_get_block_node(s, o, &b));
    assert_null(b->init);
    sched_check_all(s);
    /* C_o again, from k_0 down: vi_o and vj_o move out, vk_o stays */
    tir_block_rv oo;
    SCHED_OK(s, tir_sched_blockize(s, l[2], &oo));
    SCHED_OK(s, tir_sched_get_block_node(s, oo, &b));
    assert_int_equal(b->niters, 2);
    sched_check_all(s);
    tir_sched_destroy(s);
}

/* Blockize of a block whose init an earlier blockize made a loop nest
 * reading another buffer through the nested block's iterator (the bias of
 * a fused epilogue): the new init block's reads are relaxed over that
 * nest (schedule fuzzer, seed 1810100011 case 852: `bias[vj_init]` named
 * an iterator the new block does not have, an internal error). */
static void test_blockize_init_nest(void **st) {
    tir_ctx *ctx = *st;
    static const int64_t shapes[][3] = {{1, 2, 1}, {3, 6, 4}};
    for (int i = 0; i < 2; i++) {
        tir_schedule *s =
            sched_new(ctx, tir_def_matmul_bias(ctx, shapes[i][0], shapes[i][1], shapes[i][2], TIR_F32));
        tir_loop_rv dl[16], cl[16];
        sched_loops(s, "D", dl);
        SCHED_OK(s, tir_sched_compute_at(s, sched_block(s, "C"), dl[1], 0));
        bool fused;
        SCHED_OK(s, tir_sched_fuse_reduction_epilogue(s, sched_block(s, "C"), sched_block(s, "D"), &fused));
        assert_true(fused);
        int n = sched_loops(s, "C", cl); /* 2 at K = 1, else 3 (k under i, j) */
        assert_true(n >= 2);
        tir_block_rv o, oo;
        SCHED_OK(s, tir_sched_blockize(s, cl[n - 1], &o));
        sched_check_all(s);
        SCHED_OK(s, tir_sched_blockize(s, cl[0], &oo));
        sched_check_all(s);
        tir_sched_destroy(s);
    }
}

/* After blockize, the loops around the tile are scheduled as usual: A is
 * cached per thread at k_0 for the tile (compute_at with the tile as its
 * consumer), i_0 and j_0 are bound to blockIdx.x and threadIdx.x; the
 * kernel runs in the simulator (race and uninitialised-read checks) and
 * matches the interpreter on the unscheduled matmul. */
static void test_blockize_sim(void **st) {
    tir_ctx *ctx = *st;
    const int64_t M = 40, N = 32, K = 48;
    const tir_prim_func *f = tir_def_matmul(ctx, M, N, K, TIR_F32);
    tir_schedule *s = sched_new(ctx, f);
    tir_loop_rv l[6];
    tile(s, 16, 8, 16, l);
    tir_block_rv o, al;
    SCHED_OK(s, tir_sched_blockize(s, l[3], &o));
    SCHED_OK(s, tir_sched_cache_read(s, o, 0, "local", 0, NULL, &al));
    SCHED_OK(s, tir_sched_compute_at(s, al, l[2], false));
    SCHED_OK(s, tir_sched_bind(s, l[0], "blockIdx.x"));
    SCHED_OK(s, tir_sched_bind(s, l[1], "threadIdx.x"));
    sched_check_all(s);
    const tir_prim_func *kernel;
    SCHED_OK(s, tir_lower(ctx, tir_sched_func(s), NULL, &kernel));
    size_t na = (size_t)(M * K), nb = (size_t)(K * N), nc = (size_t)(M * N);
    float *a = malloc(sizeof(float) * na), *b = malloc(sizeof(float) * nb);
    float *out = malloc(sizeof(float) * nc), *want = malloc(sizeof(float) * nc);
    double *ref = malloc(sizeof(double) * nc);
    assert_int_equal(tir_rt_fill_random(ctx, TIR_F32, a, na, 31), TIR_OK);
    assert_int_equal(tir_rt_fill_random(ctx, TIR_F32, b, nb, 32), TIR_OK);
    tir_rt_poison(out, sizeof(float) * nc);
    tir_arg args[3] = {{a, 0}, {b, 0}, {out, 0}}, rargs[3] = {{a, 0}, {b, 0}, {want, 0}};
    tir_interp_opts io = {.uninit_params = 1u << 2};
    SCHED_OK(s, tir_interp_run(ctx, f, 3, rargs, &io));
    tir_sim_opts so = {.uninit_params = 1u << 2, .check_uninit = true};
    tir_sim_report rep;
    if (tir_sim_run(ctx, kernel, 3, args, &so, &rep) != TIR_OK)
        fail_msg("simulator: %s", tir_ctx_error(ctx));
    for (size_t i = 0; i < nc; i++) ref[i] = want[i];
    tir_rt_error_stats es;
    if (tir_rt_check(ctx, "blockize", TIR_F32, out, ref, M, N, 1e-5, &es) != TIR_OK)
        fail_msg("%s", tir_ctx_error(ctx));
    free(a);
    free(b);
    free(out);
    free(want);
    free(ref);
    tir_sched_destroy(s);
}

/* Precondition 7: the predicate i1 + j < 10 uses j (from the blockized
 * loop down) and i1, which feeds vi together with i0 (not bound alone),
 * so the inner block could not read it. */
static const char pred_above_text[] =
    "@T.prim_func\n"
    "def pred_above(A: T.Buffer((8, 8), \"float32\"), B: T.Buffer((8, 8), \"float32\")):\n"
    "    for i0, i1, j in T.grid(2, 4, 8):\n"
    "        with T.block(\"B\"):\n"
    "            vi = T.axis.spatial(8, i0 * 4 + i1)\n"
    "            vj = T.axis.spatial(8, j)\n"
    "            T.where(i1 + j < 10)\n"
    "            T.reads(A[vi, vj])\n"
    "            T.writes(B[vi, vj])\n"
    "            B[vi, vj] = A[vi, vj] * T.float32(2)\n";

/* Precondition 8: A is read at I[vi], a region no relaxation over vi
 * bounds. */
static const char gather_text[] =
    "@T.prim_func\n"
    "def gather(A: T.Buffer((8,), \"float32\"), I: T.Buffer((8,), \"int32\"), B: T.Buffer((8,), \"float32\")):\n"
    "    for i in T.serial(8):\n"
    "        with T.block(\"B\"):\n"
    "            vi = T.axis.spatial(8, i)\n"
    "            T.reads(I[vi], A[I[vi]])\n"
    "            T.writes(B[vi])\n"
    "            B[vi] = A[I[vi]]\n";

static const tir_prim_func *parse_text(tir_ctx *ctx, const char *text) {
    const tir_prim_func *f = NULL;
    if (tir_parse_func(ctx, text, strlen(text), &f) != TIR_OK)
        fail_msg("parse: %s", tir_ctx_error(ctx));
    return f;
}

/* Expects blockize of loop li of block `name` of f to fail with want. */
static void expect_fail(tir_ctx *ctx, const tir_prim_func *f, const char *name, int li,
                        tir_status want) {
    tir_schedule *s = sched_new(ctx, f);
    tir_loop_rv l[16];
    sched_loops(s, name, l);
    tir_block_rv out;
    SCHED_EXPECT_FAIL(s, want, "blockize", tir_sched_blockize(s, l[li], &out));
    tir_sched_destroy(s);
}

static void test_blockize_preconditions(void **st) {
    tir_ctx *ctx = *st;
    tir_block_rv out;
    /* 1: two blocks under i (and under j a loop and a block); a store
       beside the block */
    expect_fail(ctx, tf_branching(ctx), "B", 0, TIR_ERR_SCHED_BLOCKIZE_NEST);
    expect_fail(ctx, tf_branching(ctx), "B", 1, TIR_ERR_SCHED_BLOCKIZE_NEST);
    expect_fail(ctx, tf_opaque_stmt(ctx), "B", 1, TIR_ERR_SCHED_BLOCKIZE_NEST);
    /* 7: a conjunct over j and i1, i1 not bound alone to an iterator */
    expect_fail(ctx, parse_text(ctx, pred_above_text), "B", 2, TIR_ERR_SCHED_BLOCKIZE_BINDING);
    assert_non_null(strstr(tir_ctx_error(ctx), "block \"B\""));
    assert_non_null(strstr(tir_ctx_error(ctx), "i1 + j < 10"));
    /* 8: a gather's region is unbounded over the inner iterator */
    expect_fail(ctx, parse_text(ctx, gather_text), "B", 0, TIR_ERR_SCHED_REGION_UNBOUNDED);
    assert_non_null(strstr(tir_ctx_error(ctx), "block \"B\""));
    /* 3-5: W1-W3 */
    expect_fail(ctx, tf_opaque_in_block(ctx), "B", 0, TIR_ERR_SCHED_OPAQUE_USE);
    expect_fail(ctx, tf_nonaffine(ctx), "B", 0, TIR_ERR_SCHED_NON_AFFINE_BINDING);
    expect_fail(ctx, tf_incomplete(ctx), "B", 0, TIR_ERR_SCHED_BLOCK_NOT_COMPLETE);
    tir_schedule *s = sched_new(ctx, tir_def_matmul(ctx, 32, 16, 32, TIR_F32));
    tir_loop_rv l[6], i2[2];
    tile(s, 16, 8, 16, l);
    /* the pointer argument */
    SCHED_EXPECT_FAIL(s, TIR_ERR_INVALID_ARG, "blockize", tir_sched_blockize(s, l[3], NULL));
    /* 6: i_1 split again and reordered, i_1_0 * 4 in [0, 5) under a stride
       8 outer part and i_1_1 above it: not a multiple of 5 */
    SCHED_OK(s, tir_sched_split(s, l[3], 2, (const int64_t[]){2, 8}, i2));
    SCHED_OK(s, tir_sched_reorder(s, 2, (const tir_loop_rv[]){i2[1], i2[0]}));
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_BLOCKIZE_BINDING, "blockize",
                      tir_sched_blockize(s, i2[0], &out));
    /* 2: a thread-bound loop inside (and the loop itself) */
    SCHED_OK(s, tir_sched_bind(s, l[4], "threadIdx.x"));
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_BLOCKIZE_THREAD, "blockize",
                      tir_sched_blockize(s, i2[1], &out));
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_BLOCKIZE_THREAD, "blockize",
                      tir_sched_blockize(s, l[4], &out));
    /* ... while below it the tile is fine */
    SCHED_OK(s, tir_sched_blockize(s, l[5], &out));
    sched_check_all(s);
    /* cache_write 7: not inside a tile block (its write-back would copy
       the whole cache per tile) */
    tir_block_rv cw, c = sched_block(s, "C");
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_DIFFERENT_SCOPE, "cache_write",
                      tir_sched_cache_write(s, c, 0, "local", 0, NULL, &cw));
    /* cache_read 7: likewise (its copy would read the whole buffer, parts
       of which a producer computed at a tile never writes: the fuzzer's
       conv2d case, seed 1797700003) */
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_DIFFERENT_SCOPE, "cache_read",
                      tir_sched_cache_read(s, c, 0, "local", 0, NULL, &cw));
    tir_sched_destroy(s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_blockize_golden, setup, teardown),
        cmocka_unit_test_setup_teardown(test_blockize_conv2d, setup, teardown),
        cmocka_unit_test_setup_teardown(test_blockize_ragged, setup, teardown),
        cmocka_unit_test_setup_teardown(test_blockize_outer_bound, setup, teardown),
        cmocka_unit_test_setup_teardown(test_blockize_outer_inner, setup, teardown),
        cmocka_unit_test_setup_teardown(test_blockize_decomposed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_blockize_init_nest, setup, teardown),
        cmocka_unit_test_setup_teardown(test_blockize_sim, setup, teardown),
        cmocka_unit_test_setup_teardown(test_blockize_preconditions, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
