/* Tests of compute_at and reverse_compute_at: golden text, regions
 * relaxed over the loops inside the target and (for shared buffers) over
 * thread loops above it, bounds predicates for non-divisible tiles, unit
 * loops kept or dropped, reduction blocks moved, trace roundtrip and
 * interpreter equivalence at odd shapes; one negative test per
 * precondition, each checking that nothing changed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "sched_block_util.h"

static int setup(void **st) {
    *st = tir_ctx_create();
    return *st ? 0 : -1;
}
static int teardown(void **st) {
    tir_ctx_destroy(*st);
    return 0;
}

static const char compute_at_row_after[] =
    "@T.prim_func\n"
    "def elementwise_chain(A: T.Buffer((7, 5), \"float32\"), D: T.Buffer((7, 5), \"float32\")):\n"
    "    T.func_attr({\"global_symbol\": \"elementwise_chain\", \"tir.noalias\": 1})\n"
    "    with T.block(\"root\"):\n"
    "        B = T.alloc_buffer((7, 5), \"float32\")\n"
    "        C = T.alloc_buffer((7, 5), \"float32\")\n"
    "        for i in T.serial(7):\n"
    "            for ax0 in T.serial(5):\n"
    "                with T.block(\"B\"):\n"
    "                    vi, vj = T.axis.remap(\"SS\", [i, ax0])\n"
    "                    T.reads(A[vi, vj])\n"
    "                    T.writes(B[vi, vj])\n"
    "                    B[vi, vj] = A[vi, vj] * T.float32(2)\n"
    "            for j in T.serial(5):\n"
    "                with T.block(\"C\"):\n"
    "                    vi_1, vj_1 = T.axis.remap(\"SS\", [i, j])\n"
    "                    T.reads(B[vi_1, vj_1])\n"
    "                    T.writes(C[vi_1, vj_1])\n"
    "                    C[vi_1, vj_1] = B[vi_1, vj_1] + T.float32(1)\n"
    "        for i_1, j_1 in T.grid(7, 5):\n"
    "            with T.block(\"D\"):\n"
    "                vi_2, vj_2 = T.axis.remap(\"SS\", [i_1, j_1])\n"
    "                T.reads(C[vi_2, vj_2])\n"
    "                T.writes(D[vi_2, vj_2])\n"
    "                D[vi_2, vj_2] = T.max(C[vi_2, vj_2], T.float32(0))\n";

/* B computed one row at a time under C's i loop. */
static void test_compute_at_row(void **st) {
    tir_ctx *ctx = *st;
    tir_schedule *s = sched_new(ctx, tir_def_elementwise_chain(ctx, 7, 5, TIR_F32));
    tir_block_rv b = sched_block(s, "B");
    tir_loop_rv old = blk_loop(s, "B", 0);
    SCHED_OK(s, tir_sched_compute_at(s, b, blk_loop(s, "C", 0), false));
    tir_loop_rv l[16];
    assert_int_equal(sched_loops(s, "B", l), 2);
    assert_int_equal(sched_extent(s, l[1]), 5);
    assert_string_equal(sched_for(s, l[1])->var->name, "ax0");
    /* B's old loops are gone */
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_STALE_HANDLE, "unroll", tir_sched_unroll(s, old));
    blk_expect_text(s, compute_at_row_after, "compute_at_row_after");
    sched_check_all(s);
    tir_sched_destroy(s);
}

static const char compute_at_tile_after[] =
    "@T.prim_func\n"
    "def elementwise_chain(A: T.Buffer((10, 3), \"float32\"), D: T.Buffer((10, 3), \"float32\")):\n"
    "    T.func_attr({\"global_symbol\": \"elementwise_chain\", \"tir.noalias\": 1})\n"
    "    with T.block(\"root\"):\n"
    "        B = T.alloc_buffer((10, 3), \"float32\")\n"
    "        C = T.alloc_buffer((10, 3), \"float32\")\n"
    "        for i_0 in T.serial(3):\n"
    "            for ax0, ax1 in T.grid(4, 3):\n"
    "                with T.block(\"B\"):\n"
    "                    vi = T.axis.spatial(10, i_0 * 4 + ax0)\n"
    "                    vj = T.axis.remap(\"S\", [ax1])\n"
    "                    T.where(i_0 * 4 + ax0 < 10)\n"
    "                    T.reads(A[vi, vj])\n"
    "                    T.writes(B[vi, vj])\n"
    "                    B[vi, vj] = A[vi, vj] * T.float32(2)\n"
    "            for i_1, j in T.grid(4, 3):\n"
    "                with T.block(\"C\"):\n"
    "                    vi_1 = T.axis.spatial(10, i_0 * 4 + i_1)\n"
    "                    vj_1 = T.axis.remap(\"S\", [j])\n"
    "                    T.where(i_0 * 4 + i_1 < 10)\n"
    "                    T.reads(B[vi_1, vj_1])\n"
    "                    T.writes(C[vi_1, vj_1])\n"
    "                    C[vi_1, vj_1] = B[vi_1, vj_1] + T.float32(1)\n"
    "        for i, j_1 in T.grid(10, 3):\n"
    "            with T.block(\"D\"):\n"
    "                vi_2, vj_2 = T.axis.remap(\"SS\", [i, j_1])\n"
    "                T.reads(C[vi_2, vj_2])\n"
    "                T.writes(D[vi_2, vj_2])\n"
    "                D[vi_2, vj_2] = T.max(C[vi_2, vj_2], T.float32(0))\n";

/* A tile of 4 rows of 10: the last tile exceeds the buffer and gets a
 * bounds predicate; unit loops kept or dropped. */
static void test_compute_at_tile_predicate(void **st) {
    tir_ctx *ctx = *st;
    tir_schedule *s = sched_new(ctx, tir_def_elementwise_chain(ctx, 10, 3, TIR_F32));
    tir_loop_rv p[2];
    SCHED_OK(s,
             tir_sched_split(s, blk_loop(s, "C", 0), 2, (const int64_t[]){TIR_SPLIT_INFER, 4}, p));
    SCHED_OK(s, tir_sched_compute_at(s, sched_block(s, "B"), p[0], false));
    tir_loop_rv l[16];
    assert_int_equal(sched_loops(s, "B", l), 3);
    assert_int_equal(sched_extent(s, l[1]), 4);
    const tir_block_realize *r = tir_as_tir_block_realize(sched_for(s, l[2])->body);
    assert_non_null(r);
    assert_false(tir_expr_const_int(r->predicate, NULL));
    blk_expect_text(s, compute_at_tile_after, "compute_at_tile_after");
    sched_check_all(s);
    /* one element per instance: no loops unless preserved */
    SCHED_OK(s, tir_sched_compute_at(s, sched_block(s, "C"), blk_loop(s, "D", 1), false));
    assert_int_equal(sched_loops(s, "C", l), 2);
    SCHED_OK(s, tir_sched_compute_at(s, sched_block(s, "B"), blk_loop(s, "C", 1), true));
    assert_int_equal(sched_loops(s, "B", l), 4);
    assert_int_equal(sched_extent(s, l[2]), 1);
    assert_int_equal(sched_extent(s, l[3]), 1);
    sched_check_all(s);
    tir_sched_destroy(s);
}

/* The seed's Step 3 shape at an odd size: the shared copy covers the
 * thread block's tile (relaxed over threadIdx loops); a local copy covers
 * one thread's part. */
static void test_compute_at_thread_relax(void **st) {
    tir_ctx *ctx = *st;
    for (int shared = 0; shared < 2; shared++) {
        tir_schedule *s = sched_new(ctx, tir_def_matmul(ctx, 37, 29, 23, TIR_F32));
        tir_block_rv c = sched_block(s, "C"), a;
        tir_loop_rv l[16], ib[3], jb[2], kb[2];
        sched_loops(s, "C", l);
        SCHED_OK(s, tir_sched_split(s, l[0], 3, (const int64_t[]){TIR_SPLIT_INFER, 4, 4}, ib));
        SCHED_OK(s, tir_sched_split(s, l[1], 2, (const int64_t[]){TIR_SPLIT_INFER, 8}, jb));
        SCHED_OK(s, tir_sched_split(s, l[2], 2, (const int64_t[]){TIR_SPLIT_INFER, 8}, kb));
        SCHED_OK(s, tir_sched_reorder(s, 6, (const tir_loop_rv[]){ib[0], jb[0], ib[1], kb[0],
                                                                 ib[2], jb[1]}));
        SCHED_OK(s, tir_sched_bind(s, ib[0], "blockIdx.x"));
        SCHED_OK(s, tir_sched_bind(s, ib[1], "threadIdx.x"));
        SCHED_OK(s, tir_sched_cache_read(s, c, 0, shared ? "shared" : "local", 0, NULL, &a));
        SCHED_OK(s, tir_sched_compute_at(s, a, kb[0], false));
        const char *name = shared ? "A_shared" : "A_local";
        assert_int_equal(sched_loops(s, name, l), 6);
        /* rows: 16 for the block (4 threads x 4) or 4 for one thread */
        assert_int_equal(sched_extent(s, l[4]), shared ? 16 : 4);
        assert_int_equal(sched_extent(s, l[5]), 8);
        if (shared) {
            /* cooperative fetch: bound to the compute's threadIdx.x */
            tir_loop_rv f, parts[2];
            SCHED_OK(s, tir_sched_fuse(s, 2, l + 4, &f));
            SCHED_OK(s, tir_sched_split(s, f, 2, (const int64_t[]){TIR_SPLIT_INFER, 4}, parts));
            SCHED_OK(s, tir_sched_bind(s, parts[1], "threadIdx.x"));
            SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_AXIS_REBOUND, "bind",
                              tir_sched_bind(s, parts[0], "threadIdx.x"));
        }
        sched_check_all(s);
        tir_sched_destroy(s);
    }
}

/* A reduction moved under its consumer's loop, and conv's padding under
 * the conv loops, at odd shapes. */
static void test_compute_at_reduction_and_conv(void **st) {
    tir_ctx *ctx = *st;
    tir_schedule *s = sched_new(ctx, tir_def_matmul_bias_relu(ctx, 7, 5, 3, TIR_F32));
    SCHED_OK(s, tir_sched_compute_at(s, sched_block(s, "C"), blk_loop(s, "D", 0), false));
    tir_loop_rv l[16];
    assert_int_equal(sched_loops(s, "C", l), 3);
    assert_int_equal(sched_extent(s, l[2]), 3); /* the whole k domain */
    sched_check_all(s);
    tir_sched_destroy(s);
    s = sched_new(ctx, tir_def_conv2d_nchw(ctx, 1, 3, 7, 5, 2, 3, 3, 2, 1, TIR_F32));
    SCHED_OK(s, tir_sched_compute_at(s, sched_block(s, "pad"), blk_loop(s, "conv", 2), false));
    sched_check_all(s);
    tir_sched_destroy(s);
    s = sched_new(ctx, tir_def_conv2d_nchw(ctx, 2, 2, 6, 7, 3, 3, 2, 1, 1, TIR_F32));
    SCHED_OK(s, tir_sched_compute_at(s, sched_block(s, "pad"), blk_loop(s, "conv", 1), true));
    sched_check_all(s);
    tir_sched_destroy(s);
}

static void test_compute_at_preconditions(void **st) {
    tir_ctx *ctx = *st;
    tir_schedule *s = sched_new(ctx, blk_parse(ctx, blk_two_readers));
    tir_block_rv b = sched_block(s, "B");
    /* 1: the root block is in no scope */
    {
        tir_block_rv h1 = sched_block(s, "root");
        tir_loop_rv h2 = blk_loop(s, "C", 0);
        SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_DIFFERENT_SCOPE, "compute_at",
                      tir_sched_compute_at(s, h1, h2, false));
    }
    /* 2 */
    {
        tir_loop_rv h3 = blk_loop(s, "B", 1);
        SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_LOOP_IS_ANCESTOR, "compute_at",
                      tir_sched_compute_at(s, b, h3, false));
    }
    /* 6: D also reads B */
    {
        tir_loop_rv h4 = blk_loop(s, "C", 0);
        SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_CONSUMER_OUTSIDE, "compute_at",
                      tir_sched_compute_at(s, b, h4, false));
    }
    /* 7: D has no consumer */
    {
        tir_block_rv h5 = sched_block(s, "D");
        tir_loop_rv h6 = blk_loop(s, "C", 0);
        SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_NO_CONSUMER, "compute_at",
                      tir_sched_compute_at(s, h5, h6, false));
    }
    sched_check_all(s);
    tir_sched_destroy(s);
    /* 1: a loop inside block "outer" is in another scope */
    s = sched_new(ctx, blk_parse(ctx, blk_nested));
    {
        tir_block_rv bb = sched_block(s, "B"), dd = sched_block(s, "D");
        tir_loop_rv j1 = blk_loop(s, "C", 0);
        SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_DIFFERENT_SCOPE, "compute_at",
                          tir_sched_compute_at(s, bb, j1, false));
        SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_DIFFERENT_SCOPE, "reverse_compute_at",
                          tir_sched_reverse_compute_at(s, dd, j1, false));
        /* at the root level, B's consumers are "outer" and D */
        tir_loop_rv i1 = blk_loop(s, "outer", 0);
        SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_CONSUMER_OUTSIDE, "compute_at",
                          tir_sched_compute_at(s, bb, i1, false));
        sched_check_all(s);
    }
    tir_sched_destroy(s);
    /* 3 */
    s = sched_new(ctx, blk_parse(ctx, blk_incomplete));
    {
        tir_block_rv h7 = sched_block(s, "B");
        tir_loop_rv h8 = blk_loop(s, "C", 0);
        SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_BLOCK_NOT_COMPLETE, "compute_at",
                      tir_sched_compute_at(s, h7, h8, false));
    }
    tir_sched_destroy(s);
    /* 4 */
    s = sched_new(ctx, blk_parse(ctx, blk_shifted));
    {
        tir_block_rv h9 = sched_block(s, "B");
        tir_loop_rv h10 = blk_loop(s, "C", 0);
        SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_NOT_TRIVIAL_ACCESS, "compute_at",
                      tir_sched_compute_at(s, h9, h10, false));
    }
    tir_sched_destroy(s);
    s = sched_new(ctx, blk_parse(ctx, blk_two_stores));
    {
        tir_block_rv h11 = sched_block(s, "B");
        tir_loop_rv h12 = blk_loop(s, "C", 0);
        SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_NOT_TRIVIAL_ACCESS, "compute_at",
                      tir_sched_compute_at(s, h11, h12, false));
    }
    tir_sched_destroy(s);
    /* 5 */
    s = sched_new(ctx, blk_parse(ctx, blk_two_writers));
    {
        tir_block_rv h13 = sched_block(s, "B2");
        tir_loop_rv h14 = blk_loop(s, "C", 0);
        SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_MULTIPLE_WRITERS, "compute_at",
                      tir_sched_compute_at(s, h13, h14, false));
    }
    tir_sched_destroy(s);
    /* 9 */
    s = sched_new(ctx, blk_parse(ctx, blk_unbounded));
    {
        tir_block_rv b = sched_block(s, "B");
        tir_loop_rv i = blk_loop(s, "C", 0);
        SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_REGION_UNBOUNDED, "compute_at",
                          tir_sched_compute_at(s, b, i, false));
    }
    tir_sched_destroy(s);
    /* 8: B2 rewrites P's input B between P and C's loop */
    s = sched_new(ctx, blk_parse(ctx, blk_rewritten));
    {
        tir_block_rv pb = sched_block(s, "P");
        tir_loop_rv i = blk_loop(s, "C", 0);
        SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_NOT_STAGE_PIPELINE, "compute_at",
                          tir_sched_compute_at(s, pb, i, false));
    }
    tir_sched_destroy(s);
    /* 8: under loop i, C's consumer D comes before C's producer B */
    s = sched_new(ctx, blk_parse(ctx, blk_misordered));
    {
        tir_block_rv h15 = sched_block(s, "C");
        tir_loop_rv h16 = blk_loop(s, "D", 0);
        SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_NOT_STAGE_PIPELINE, "compute_at",
                      tir_sched_compute_at(s, h15, h16, false));
    }
    tir_sched_destroy(s);
}

static const char reverse_row_after[] =
    "@T.prim_func\n"
    "def elementwise_chain(A: T.Buffer((7, 5), \"float32\"), D: T.Buffer((7, 5), \"float32\")):\n"
    "    T.func_attr({\"global_symbol\": \"elementwise_chain\", \"tir.noalias\": 1})\n"
    "    with T.block(\"root\"):\n"
    "        B = T.alloc_buffer((7, 5), \"float32\")\n"
    "        C = T.alloc_buffer((7, 5), \"float32\")\n"
    "        for i in T.serial(7):\n"
    "            for j in T.serial(5):\n"
    "                with T.block(\"B\"):\n"
    "                    vi, vj = T.axis.remap(\"SS\", [i, j])\n"
    "                    T.reads(A[vi, vj])\n"
    "                    T.writes(B[vi, vj])\n"
    "                    B[vi, vj] = A[vi, vj] * T.float32(2)\n"
    "            for ax0 in T.serial(5):\n"
    "                with T.block(\"C\"):\n"
    "                    vi_1, vj_1 = T.axis.remap(\"SS\", [i, ax0])\n"
    "                    T.reads(B[vi_1, vj_1])\n"
    "                    T.writes(C[vi_1, vj_1])\n"
    "                    C[vi_1, vj_1] = B[vi_1, vj_1] + T.float32(1)\n"
    "        for i_1, j_1 in T.grid(7, 5):\n"
    "            with T.block(\"D\"):\n"
    "                vi_2, vj_2 = T.axis.remap(\"SS\", [i_1, j_1])\n"
    "                T.reads(C[vi_2, vj_2])\n"
    "                T.writes(D[vi_2, vj_2])\n"
    "                D[vi_2, vj_2] = T.max(C[vi_2, vj_2], T.float32(0))\n";

static void test_reverse_compute_at_row(void **st) {
    tir_ctx *ctx = *st;
    tir_schedule *s = sched_new(ctx, tir_def_elementwise_chain(ctx, 7, 5, TIR_F32));
    SCHED_OK(s, tir_sched_reverse_compute_at(s, sched_block(s, "C"), blk_loop(s, "B", 0), false));
    tir_loop_rv l[16];
    assert_int_equal(sched_loops(s, "C", l), 2);
    assert_int_equal(sched_extent(s, l[1]), 5);
    blk_expect_text(s, reverse_row_after, "reverse_row_after");
    sched_check_all(s);
    SCHED_OK(s, tir_sched_reverse_compute_at(s, sched_block(s, "D"), blk_loop(s, "C", 1), true));
    assert_int_equal(sched_loops(s, "D", l), 4);
    sched_check_all(s);
    tir_sched_destroy(s);
}

/* The seed's Step 4: a local accumulator written back per thread. */
static void test_reverse_compute_at_accumulator(void **st) {
    tir_ctx *ctx = *st;
    tir_schedule *s = sched_new(ctx, tir_def_matmul(ctx, 37, 29, 23, TIR_F32));
    tir_block_rv c = sched_block(s, "C"), cl;
    tir_loop_rv l[16], ib[3], jb[3], kb[2];
    sched_loops(s, "C", l);
    SCHED_OK(s, tir_sched_split(s, l[0], 3, (const int64_t[]){TIR_SPLIT_INFER, 4, 4}, ib));
    SCHED_OK(s, tir_sched_split(s, l[1], 3, (const int64_t[]){TIR_SPLIT_INFER, 2, 4}, jb));
    SCHED_OK(s, tir_sched_split(s, l[2], 2, (const int64_t[]){TIR_SPLIT_INFER, 8}, kb));
    SCHED_OK(s, tir_sched_reorder(s, 8, (const tir_loop_rv[]){ib[0], jb[0], ib[1], jb[1], kb[0],
                                                             ib[2], jb[2], kb[1]}));
    SCHED_OK(s, tir_sched_bind(s, ib[1], "threadIdx.x"));
    SCHED_OK(s, tir_sched_bind(s, jb[1], "threadIdx.y"));
    SCHED_OK(s, tir_sched_cache_write(s, c, 0, "local", 0, NULL, &cl));
    /* 11: under k_outer the sums are partial */
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_REGION_NOT_COVERED, "reverse_compute_at",
                      tir_sched_reverse_compute_at(s, cl, kb[0], false));
    SCHED_OK(s, tir_sched_reverse_compute_at(s, cl, jb[1], false));
    assert_int_equal(sched_loops(s, "C_local", l), 6);
    assert_int_equal(sched_extent(s, l[4]), 4);
    assert_int_equal(sched_extent(s, l[5]), 4);
    sched_check_all(s);
    tir_sched_destroy(s);
}

static void test_reverse_compute_at_preconditions(void **st) {
    tir_ctx *ctx = *st;
    tir_schedule *s = sched_new(ctx, tir_def_elementwise_chain(ctx, 4, 3, TIR_F32));
    /* 1 */
    {
        tir_block_rv h17 = sched_block(s, "root");
        tir_loop_rv h18 = blk_loop(s, "B", 0);
        SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_DIFFERENT_SCOPE, "reverse_compute_at",
                      tir_sched_reverse_compute_at(s, h17, h18,
                                                   false));
    }
    /* 2 */
    {
        tir_block_rv h19 = sched_block(s, "C");
        tir_loop_rv h20 = blk_loop(s, "C", 0);
        SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_LOOP_IS_ANCESTOR, "reverse_compute_at",
                      tir_sched_reverse_compute_at(s, h19, h20,
                                                   false));
    }
    /* 5: D's producer C is not under B's loop */
    {
        tir_block_rv h21 = sched_block(s, "D");
        tir_loop_rv h22 = blk_loop(s, "B", 0);
        SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_PRODUCER_OUTSIDE, "reverse_compute_at",
                      tir_sched_reverse_compute_at(s, h21, h22,
                                                   false));
    }
    /* 6: B reads only the input A */
    {
        tir_block_rv h23 = sched_block(s, "B");
        tir_loop_rv h24 = blk_loop(s, "C", 0);
        SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_NO_PRODUCER, "reverse_compute_at",
                      tir_sched_reverse_compute_at(s, h23, h24,
                                                   false));
    }
    sched_check_all(s);
    tir_sched_destroy(s);
    /* 3 */
    s = sched_new(ctx, blk_parse(ctx, blk_incomplete));
    {
        tir_block_rv h25 = sched_block(s, "B");
        tir_loop_rv h26 = blk_loop(s, "C", 0);
        SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_BLOCK_NOT_COMPLETE, "reverse_compute_at",
                      tir_sched_reverse_compute_at(s, h25, h26,
                                                   false));
    }
    tir_sched_destroy(s);
    /* 4 */
    s = sched_new(ctx, blk_parse(ctx, blk_two_writers));
    {
        tir_block_rv h27 = sched_block(s, "B2");
        tir_loop_rv h28 = blk_loop(s, "C", 0);
        SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_MULTIPLE_WRITERS, "reverse_compute_at",
                      tir_sched_reverse_compute_at(s, h27, h28,
                                                   false));
    }
    tir_sched_destroy(s);
    /* 8: a split of a split part masks points inside C's domain */
    s = sched_new(ctx, tir_def_elementwise_chain(ctx, 11, 14, TIR_F32));
    {
        tir_loop_rv p3[3], p2[2];
        SCHED_OK(s, tir_sched_split(s, blk_loop(s, "C", 1), 3, (const int64_t[]){5, 2, 4}, p3));
        SCHED_OK(s, tir_sched_split(s, p3[1], 2, (const int64_t[]){4, 2}, p2));
        tir_block_rv d = sched_block(s, "D");
        SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_PREDICATED_PRODUCER, "reverse_compute_at",
                          tir_sched_reverse_compute_at(s, d, p2[0], false));
        /* at any loop: the mask would leave the region unwritten */
        SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_PREDICATED_PRODUCER, "reverse_compute_at",
                          tir_sched_reverse_compute_at(s, d, p3[0], false));
        sched_check_all(s);
    }
    tir_sched_destroy(s);
    /* 9 */
    s = sched_new(ctx, blk_parse(ctx, blk_misordered));
    {
        tir_block_rv h29 = sched_block(s, "C");
        tir_loop_rv h30 = blk_loop(s, "D", 0);
        SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_NOT_STAGE_PIPELINE, "reverse_compute_at",
                      tir_sched_reverse_compute_at(s, h29, h30,
                                                   false));
    }
    tir_sched_destroy(s);
    /* 10 */
    s = sched_new(ctx, blk_parse(ctx, blk_unbounded));
    {
        tir_block_rv f = sched_block(s, "F");
        tir_loop_rv i = blk_loop(s, "E", 0);
        SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_REGION_UNBOUNDED, "reverse_compute_at",
                          tir_sched_reverse_compute_at(s, f, i, false));
    }
    tir_sched_destroy(s);
    /* 7 */
    s = sched_new(ctx, blk_parse(ctx, blk_two_loads));
    {
        tir_block_rv h31 = sched_block(s, "C");
        tir_loop_rv h32 = blk_loop(s, "B", 0);
        SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_NOT_TRIVIAL_ACCESS, "reverse_compute_at",
                      tir_sched_reverse_compute_at(s, h31, h32,
                                                   false));
    }
    tir_sched_destroy(s);
}

/* The last failure's message names each of `names`. */
static void expect_names(tir_ctx *ctx, int n, const char *const *names) {
    const char *msg = tir_ctx_error(ctx);
    for (int i = 0; i < n; i++)
        if (!strstr(msg, names[i])) fail_msg("no \"%s\" in the message:\n%s", names[i], msg);
}

/* reverse_compute_at 13: moved under P's loop, Q's instances run before W
 * (between the loop and Q), which read the old C (8 of 8 of W's outputs
 * wrong before the check); a loop after Q holds a writer of what Q read
 * before it wrote it (X a parameter). */
static const char rca_war[] =
    BLK_HDR("war", "A: " BLK_BUF ", Z: " BLK_BUF ", C: " BLK_BUF)
    "        X = T.alloc_buffer((6, 5), \"float32\")\n"
    BLK_ELEM("P", "i", "j", "A[vi, vj]", "X[vi, vj]", "X[vi, vj] = A[vi, vj] * T.float32(2)")
    BLK_ELEM("W", "i1", "j1", "C[vi, vj]", "Z[vi, vj]", "Z[vi, vj] = C[vi, vj]")
    BLK_ELEM("Q", "i2", "j2", "X[vi, vj]", "C[vi, vj]", "C[vi, vj] = X[vi, vj] + T.float32(1)");
static const char rca_late[] =
    BLK_HDR("late", "X: " BLK_BUF ", C: " BLK_BUF)
    BLK_ELEM("Q", "i2", "j2", "X[vi, vj]", "C[vi, vj]", "C[vi, vj] = X[vi, vj] + T.float32(1)")
    BLK_ELEM("P", "i", "j", "", "X[vi, vj]", "X[vi, vj] = T.float32(7)");

static void test_reverse_compute_at_order(void **st) {
    tir_ctx *ctx = *st;
    const char *texts[] = {rca_war, rca_late};
    const char *names[][2] = {{"\"W\"", "C"}, {"loop i", "comes after"}};
    for (int t = 0; t < 2; t++) {
        tir_schedule *s = sched_new(ctx, blk_parse(ctx, texts[t]));
        tir_block_rv q = sched_block(s, "Q");
        tir_loop_rv i = blk_loop(s, "P", 0);
        SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_NOT_STAGE_PIPELINE, "reverse_compute_at",
                          tir_sched_reverse_compute_at(s, q, i, false));
        expect_names(ctx, 2, names[t]);
        tir_sched_destroy(s);
    }
}

/* compute_at 8: W, under Q's loop, writes A after P read it; moved under
 * the loop, P was placed after W and read W's values (8 of 8 of C wrong
 * before the check). */
static const char ca_writer_under[] =
    BLK_HDR("writer_under", "A: " BLK_BUF ", C: " BLK_BUF)
    "        X = T.alloc_buffer((6, 5), \"float32\")\n"
    BLK_ELEM("P", "i", "j", "A[vi, vj]", "X[vi, vj]", "X[vi, vj] = A[vi, vj] * T.float32(2)")
    "        for i1, j1 in T.grid(6, 5):\n"
    "            with T.block(\"W\"):\n"
    "                vi, vj = T.axis.remap(\"SS\", [i1, j1])\n"
    "                T.reads()\n"
    "                T.writes(A[vi, vj])\n"
    "                A[vi, vj] = T.float32(100)\n"
    "            with T.block(\"Q\"):\n"
    "                vi, vj = T.axis.remap(\"SS\", [i1, j1])\n"
    "                T.reads(X[vi, vj])\n"
    "                T.writes(C[vi, vj])\n"
    "                C[vi, vj] = X[vi, vj] + T.float32(1)\n";

static void test_compute_at_writer_under_loop(void **st) {
    tir_ctx *ctx = *st;
    tir_schedule *s = sched_new(ctx, blk_parse(ctx, ca_writer_under));
    tir_block_rv p = sched_block(s, "P");
    for (int l = 0; l < 2; l++) {
        tir_loop_rv loop = blk_loop(s, "Q", l);
        SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_NOT_STAGE_PIPELINE, "compute_at",
                          tir_sched_compute_at(s, p, loop, false));
        expect_names(ctx, 2, (const char *const[]){"\"W\"", "after it, under"});
    }
    tir_sched_destroy(s);
}

/* The case: after split(B.j, [_, 4]) and reorder(j_1, j_0), B
 * writes columns j_1, j_1 + 4, j_1 + 8 under j_1, not their bounding
 * interval, which C would read. */
static void test_reverse_compute_at_strided(void **st) {
    tir_ctx *ctx = *st;
    tir_schedule *s = sched_new(ctx, tir_def_elementwise_chain(ctx, 4, 11, TIR_F32));
    tir_loop_rv j[2];
    SCHED_OK(s, tir_sched_split(s, blk_loop(s, "B", 1), 2, (const int64_t[]){TIR_SPLIT_INFER, 4}, j));
    SCHED_OK(s, tir_sched_reorder(s, 2, (const tir_loop_rv[]){j[1], j[0]}));
    tir_block_rv c = sched_block(s, "C");
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_REGION_NOT_COVERED, "reverse_compute_at",
                      tir_sched_reverse_compute_at(s, c, j[1], true));
    expect_names(ctx, 4, (const char *const[]){"\"B\"", "\"C\"", " B ", "j_1"});
    sched_check_all(s);
    /* One element under j_0. */
    SCHED_OK(s, tir_sched_reverse_compute_at(s, c, j[0], false));
    tir_loop_rv l[16];
    assert_int_equal(sched_loops(s, "C", l), 3);
    sched_check_all(s);
    tir_sched_destroy(s);
    /* Under i, strides 1 (j_1, 4) and 4 (j_0, 3) make a dense 12 that the
       bounds predicate cuts to the row of 11. */
    s = sched_new(ctx, tir_def_elementwise_chain(ctx, 4, 11, TIR_F32));
    SCHED_OK(s, tir_sched_split(s, blk_loop(s, "B", 1), 2, (const int64_t[]){TIR_SPLIT_INFER, 4}, j));
    SCHED_OK(s, tir_sched_reorder(s, 2, (const tir_loop_rv[]){j[1], j[0]}));
    SCHED_OK(s, tir_sched_reverse_compute_at(s, sched_block(s, "C"), blk_loop(s, "B", 0), false));
    assert_int_equal(sched_loops(s, "C", l), 2);
    sched_check_all(s);
    tir_sched_destroy(s);
    /* Without the reorder, j_0 covers a dense tile of 4 (the last one
       partly, under the bounds predicate). */
    s = sched_new(ctx, tir_def_elementwise_chain(ctx, 4, 11, TIR_F32));
    SCHED_OK(s, tir_sched_split(s, blk_loop(s, "B", 1), 2, (const int64_t[]){TIR_SPLIT_INFER, 4}, j));
    SCHED_OK(s, tir_sched_reverse_compute_at(s, sched_block(s, "C"), j[0], false));
    assert_int_equal(sched_loops(s, "C", l), 3);
    assert_int_equal(sched_extent(s, l[2]), 4);
    sched_check_all(s);
    tir_sched_destroy(s);
}

/* Replays `prefix` (a trace), then expects reverse_compute_at(block, loop
 * `li` of block `lblk`) to be refused for not covering, s unchanged and
 * still computing what the definition does. */
static void refuse_after(tir_ctx *ctx, const tir_prim_func *f, const char *prefix,
                         const char *blk, const char *lblk, int li, const char *buf) {
    tir_schedule *s = sched_new(ctx, f);
    SCHED_OK(s, tir_sched_replay(s, prefix, strlen(prefix)));
    sched_check_all(s);
    tir_loop_rv loop = blk_loop(s, lblk, li);
    tir_block_rv b = sched_block(s, blk);
    const char *lname = sched_for(s, loop)->var->name;
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_REGION_NOT_COVERED, "reverse_compute_at",
                      tir_sched_reverse_compute_at(s, b, loop, false));
    char q[3][64];
    snprintf(q[0], sizeof q[0], "\"%s\"", blk);
    snprintf(q[1], sizeof q[1], "\"%s\"", lblk);
    snprintf(q[2], sizeof q[2], "%s", lname);
    expect_names(ctx, 4, (const char *const[]){q[0], q[1], q[2], buf});
    sched_check_all(s);
    tir_sched_destroy(s);
}

/* The schedule fuzzer's findings: elementwise_chain cases 5093 and 5744
 * of MINITIR_FUZZ_SEED=9127364501 (100000 cases), matmul_bias case 2167
 * of MINITIR_FUZZ_SEED=9127365501 (20000 cases). */
static void test_reverse_compute_at_fuzz_cases(void **st) {
    tir_ctx *ctx = *st;
    /* case 5093: the case, reached through reverse_compute_inline
       (C into B) and a reorder of B's split column loop. */
    refuse_after(ctx, tir_def_elementwise_chain(ctx, 4, 11, TIR_F32),
                 "b0 = get_block(\"root\")\n"
                 "[b1, b2, b3] = get_child_blocks(b0)\n"
                 "[l4, l5] = get_loops(b2)\n"
                 "reorder([l5, l4])\n"
                 "[l6, l7] = get_loops(b1)\n"
                 "[l8, l9] = split(l7, [None, 4])\n"
                 "reverse_compute_inline(b2)\n"
                 "reorder([l9, l8])\n",
                 "D", "B", 1, "C");
    /* case 5744: a fused i-j loop split in three, its last part in two;
       under i_j_fused_2_0, B writes 3 consecutive elements of the fused
       order, which floordiv/floormod spread over two rows. */
    refuse_after(ctx, tir_def_elementwise_chain(ctx, 12, 2, TIR_F32),
                 "b0 = get_block(\"root\")\n"
                 "[b1, b2, b3] = get_child_blocks(b0)\n"
                 "[l4, l5] = get_loops(b1)\n"
                 "l6 = fuse([l4, l5])\n"
                 "[l7, l8, l9] = split(l6, [2, 2, None])\n"
                 "[l10, l11] = get_loops(b3)\n"
                 "bind(l10, \"blockIdx.z\")\n"
                 "[l12, l13] = split(l9, [None, 3])\n"
                 "unroll(l11)\n"
                 "b14 = cache_read(b3, 0, \"shared\", [])\n",
                 "C", "B", 2, "B");
    /* case 2167: i, j and k fused and split by 3; under the outer part the
       reduction runs partial rows of C. */
    refuse_after(ctx, tir_def_matmul_bias_relu(ctx, 2, 3, 10, TIR_F32),
                 "b0 = get_block(\"root\")\n"
                 "[b1, b2] = get_child_blocks(b0)\n"
                 "annotate_block_ints(b2, \"pragma_auto_unroll_max_step\", [0, 0, 0])\n"
                 "[l3, l4, l5] = get_loops(b1)\n"
                 "l6 = fuse([l3, l4, l5])\n"
                 "[l7, l8] = split(l6, [3, None])\n",
                 "D", "C", 0, "C");
}

/* compute_at 10: B is a parameter that C reads only the first 3 rows of;
 * moved under C's loop, B would leave the caller rows 3-5 unwritten. */
static const char param_partial[] =
    BLK_HDR("param_partial", "A: " BLK_BUF ", B: " BLK_BUF ", C: T.Buffer((3, 5), \"float32\")")
    BLK_ELEM("B", "i", "j", "A[vi, vj]", "B[vi, vj]", "B[vi, vj] = A[vi, vj] + T.float32(1)")
    "        for i1, j1 in T.grid(3, 5):\n"
    "            with T.block(\"C\"):\n"
    "                vi, vj = T.axis.remap(\"SS\", [i1, j1])\n"
    "                T.reads(B[vi, vj])\n"
    "                T.writes(C[vi, vj])\n"
    "                C[vi, vj] = B[vi, vj] * T.float32(2)\n";

/* compute_at 10: C reads B one row down, masked by its predicate on the
 * last row; relaxed, the read reaches row 6, outside B's domain, which
 * cannot be proven unread. */
static const char masked_shift[] =
    BLK_HDR("masked_shift", "A: " BLK_BUF ", C: " BLK_BUF)
    "        B = T.alloc_buffer((7, 5), \"float32\")\n"
    BLK_ELEM("B", "i", "j", "A[vi, vj]", "B[vi, vj]", "B[vi, vj] = A[vi, vj] + T.float32(1)")
    "        for i1, j1 in T.grid(6, 5):\n"
    "            with T.block(\"C\"):\n"
    "                vi, vj = T.axis.remap(\"SS\", [i1, j1])\n"
    "                T.where(i1 < 5)\n"
    "                T.reads(B[vi + 1, vj])\n"
    "                T.writes(C[vi, vj])\n"
    "                C[vi, vj] = B[vi + 1, vj] * T.float32(2)\n";

static void test_compute_at_not_covered(void **st) {
    tir_ctx *ctx = *st;
    tir_schedule *s = sched_new(ctx, blk_parse(ctx, param_partial));
    tir_block_rv b = sched_block(s, "B");
    tir_loop_rv i1 = blk_loop(s, "C", 0);
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_REGION_NOT_COVERED, "compute_at",
                      tir_sched_compute_at(s, b, i1, false));
    expect_names(ctx, 3, (const char *const[]){"\"B\"", "parameter", "i1"});
    sched_check_all(s);
    tir_sched_destroy(s);
    s = sched_new(ctx, blk_parse(ctx, masked_shift));
    b = sched_block(s, "B");
    i1 = blk_loop(s, "C", 0);
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_REGION_NOT_COVERED, "compute_at",
                      tir_sched_compute_at(s, b, i1, false));
    expect_names(ctx, 4, (const char *const[]){"\"B\"", "\"C\"", " B ", "i1"});
    sched_check_all(s);
    tir_sched_destroy(s);
}

/* A fused j-k loop is a box too (vj = f // 9, vk = f % 9 are its digits):
 * under i, C runs whole rows with complete reductions. */
static void test_reverse_compute_at_fused_digits(void **st) {
    tir_ctx *ctx = *st;
    tir_schedule *s = sched_new(ctx, tir_def_matmul_bias(ctx, 4, 10, 9, TIR_F32));
    tir_loop_rv l[16], f;
    sched_loops(s, "C", l);
    SCHED_OK(s, tir_sched_fuse(s, 2, (const tir_loop_rv[]){l[1], l[2]}, &f));
    SCHED_OK(s, tir_sched_reverse_compute_at(s, sched_block(s, "D"), l[0], false));
    assert_int_equal(sched_loops(s, "D", l), 2);
    assert_int_equal(sched_extent(s, l[1]), 10);
    sched_check_all(s);
    tir_sched_destroy(s);
    /* Under the fused loop itself one C instance runs: a partial sum. */
    s = sched_new(ctx, tir_def_matmul_bias(ctx, 4, 10, 9, TIR_F32));
    sched_loops(s, "C", l);
    SCHED_OK(s, tir_sched_fuse(s, 2, (const tir_loop_rv[]){l[1], l[2]}, &f));
    tir_block_rv d = sched_block(s, "D");
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_REGION_NOT_COVERED, "reverse_compute_at",
                      tir_sched_reverse_compute_at(s, d, f, false));
    sched_check_all(s);
    tir_sched_destroy(s);
}

/* Padding reads its input under a select, at a declared region reaching
 * one element outside; the copy's domain spans the shape, so it covers
 * every load that runs. */
static void test_compute_at_padding(void **st) {
    tir_ctx *ctx = *st;
    tir_schedule *s = sched_new(ctx, tir_def_conv2d_nchw(ctx, 2, 3, 5, 7, 2, 2, 2, 1, 1,
                                                         TIR_F32));
    tir_block_rv sh;
    SCHED_OK(s, tir_sched_cache_read(s, sched_block(s, "pad"), 0, "shared", 0, NULL, &sh));
    SCHED_OK(s, tir_sched_compute_at(s, sh, blk_loop(s, "pad", 1), false));
    sched_check_all(s);
    tir_sched_destroy(s);
}

/* compute_at 11, the schedule fuzzer's elementwise_chain case 2064
 * (MINITIR_FUZZ_SEED=3, 20000 cases): B is computed one row per
 * threadIdx.z iteration i, D copies row i back, and C, moved under D's j,
 * would be relaxed over the thread loop (C is global) and read every row
 * of B while only row i is written. */
static const char thread_chain[] = "b0 = get_block(\"root\")\n"
                                   "[b1, b2, b3] = get_child_blocks(b0)\n"
                                   "[l4, l5] = get_loops(b2)\n"
                                   "bind(l4, \"threadIdx.z\")\n"
                                   "compute_at(b1, l4, 0)\n"
                                   "reverse_compute_at(b3, l4, 0)\n";

static void test_compute_at_unwritten_producer(void **st) {
    tir_ctx *ctx = *st;
    tir_schedule *s = sched_new(ctx, tir_def_elementwise_chain(ctx, 12, 16, TIR_F32));
    SCHED_OK(s, tir_sched_replay(s, thread_chain, strlen(thread_chain)));
    sched_check_all(s);
    tir_block_rv c = sched_block(s, "C");
    tir_loop_rv dj = blk_loop(s, "D", 1);
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_REGION_NOT_COVERED, "compute_at",
                      tir_sched_compute_at(s, c, dj, false));
    expect_names(ctx, 4, (const char *const[]){"\"B\"", "\"C\"", " B ", "ax0"});
    sched_check_all(s);
    tir_sched_destroy(s);
    /* Without the thread binding C is not relaxed over i: it reads B[i, j],
       which B has written during that iteration of i. */
    s = sched_new(ctx, tir_def_elementwise_chain(ctx, 12, 16, TIR_F32));
    tir_loop_rv i = blk_loop(s, "C", 0);
    SCHED_OK(s, tir_sched_compute_at(s, sched_block(s, "B"), i, false));
    SCHED_OK(s, tir_sched_reverse_compute_at(s, sched_block(s, "D"), i, false));
    SCHED_OK(s, tir_sched_compute_at(s, sched_block(s, "C"), blk_loop(s, "D", 1), false));
    assert_int_equal(sched_loops(s, "C", (tir_loop_rv[16]){0}), 2); /* i, D's ax0 */
    sched_check_all(s);
    tir_sched_destroy(s);
}

/* reverse_compute_at's moved block needs no further check: all its
 * producers lie under the loop, where precondition 11 proves they write
 * what it reads during the same iteration, and it is never relaxed over
 * thread loops.  Under threadIdx.z, C and D each read row i, which B (and
 * C) wrote in that iteration. */
static void test_reverse_compute_at_thread_producer(void **st) {
    tir_ctx *ctx = *st;
    tir_schedule *s = sched_new(ctx, tir_def_elementwise_chain(ctx, 12, 16, TIR_F32));
    tir_loop_rv i = blk_loop(s, "B", 0);
    SCHED_OK(s, tir_sched_bind(s, i, "threadIdx.z"));
    SCHED_OK(s, tir_sched_reverse_compute_at(s, sched_block(s, "C"), i, false));
    SCHED_OK(s, tir_sched_reverse_compute_at(s, sched_block(s, "D"), i, false));
    tir_loop_rv l[16];
    assert_int_equal(sched_loops(s, "D", l), 2);
    assert_true(tir_sched_same_loop(s, l[0], i));
    assert_int_equal(sched_extent(s, l[1]), 16);
    sched_check_all(s);
    tir_sched_destroy(s);
}

/* A fused i-j loop split by a factor not dividing M*N leaves the
 * predicate f_0 * c + f_1 < 35 on C, with vi = (f_0 * c + f_1) // 7: it
 * holds exactly when vi < 5, so it only bounds vi (precondition 8).  Under
 * the inner loop C writes one element; under the outer one a box only
 * when 7 divides c (precondition 11 refuses 8 without the predicate's
 * help: the rows there are partial). */
static tir_schedule *fused_split(tir_ctx *ctx, int64_t fac, bool cache, tir_block_rv *blk,
                                 tir_loop_rv *p) {
    tir_schedule *s = sched_new(ctx, tir_def_matmul_bias(ctx, 5, 7, 3, TIR_F32));
    tir_loop_rv l[16], f;
    *blk = sched_block(s, "D");
    if (cache)
        SCHED_OK(s, tir_sched_cache_write(s, sched_block(s, "C"), 0, "local", 0, NULL, blk));
    sched_loops(s, "C", l);
    SCHED_OK(s, tir_sched_fuse(s, 2, (const tir_loop_rv[]){l[0], l[1]}, &f));
    SCHED_OK(s, tir_sched_split(s, f, 2, (const int64_t[]){TIR_SPLIT_INFER, fac}, p));
    return s;
}

static void test_reverse_compute_at_fused_split_predicate(void **st) {
    tir_ctx *ctx = *st;
    tir_block_rv b;
    tir_loop_rv p[2], l[16];
    for (int cache = 0; cache < 2; cache++) {
        const char *name = cache ? "C_local" : "D";
        /* Under the inner loop: one element, predicate accepted. */
        tir_schedule *s = fused_split(ctx, 8, cache, &b, p);
        SCHED_OK(s, tir_sched_reverse_compute_at(s, b, p[1], false));
        assert_int_equal(sched_loops(s, name, l), 2);
        sched_check_all(s);
        tir_sched_destroy(s);
        /* Under the outer loop with c = 14: two whole rows. */
        s = fused_split(ctx, 14, cache, &b, p);
        SCHED_OK(s, tir_sched_reverse_compute_at(s, b, p[0], false));
        assert_int_equal(sched_loops(s, name, l), 3);
        assert_int_equal(sched_extent(s, l[1]), 2);
        sched_check_all(s);
        tir_sched_destroy(s);
        /* Under the outer loop with c = 8: partial rows, still refused. */
        s = fused_split(ctx, 8, cache, &b, p);
        SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_REGION_NOT_COVERED, "reverse_compute_at",
                          tir_sched_reverse_compute_at(s, b, p[0], false));
        sched_check_all(s);
        tir_sched_destroy(s);
    }
}

/* Precondition 8 with a fused bound that does not match: the predicate
 * f < 28 keeps vi = f // 7 below 4, masking row 4 of C's domain. */
static const char fused_masked[] =
    BLK_HDR("fused_masked", "A: T.Buffer((5, 7), \"float32\"), C: T.Buffer((5, 7), \"float32\")")
    "        B = T.alloc_buffer((5, 7), \"float32\")\n"
    "        for f in T.serial(35):\n"
    "            with T.block(\"B\"):\n"
    "                vi = T.axis.spatial(5, f // 7)\n"
    "                vj = T.axis.spatial(7, f % 7)\n"
    "                T.where(f < 28)\n"
    "                T.reads(A[vi, vj])\n"
    "                T.writes(B[vi, vj])\n"
    "                B[vi, vj] = A[vi, vj] + T.float32(1)\n"
    "        for i1, j1 in T.grid(5, 7):\n"
    "            with T.block(\"C\"):\n"
    "                vi, vj = T.axis.remap(\"SS\", [i1, j1])\n"
    "                T.reads(B[vi, vj])\n"
    "                T.writes(C[vi, vj])\n"
    "                C[vi, vj] = B[vi, vj] * T.float32(2)\n";

static void test_reverse_compute_at_fused_mask_refused(void **st) {
    tir_ctx *ctx = *st;
    tir_schedule *s = sched_new(ctx, blk_parse(ctx, fused_masked));
    tir_block_rv c = sched_block(s, "C");
    tir_loop_rv f = blk_loop(s, "B", 0);
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_PREDICATED_PRODUCER, "reverse_compute_at",
                      tir_sched_reverse_compute_at(s, c, f, false));
    expect_names(ctx, 2, (const char *const[]){"\"B\"", " f"});
    tir_sched_destroy(s);
}

int main(void) {

    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_compute_at_row, setup, teardown),
        cmocka_unit_test_setup_teardown(test_compute_at_tile_predicate, setup, teardown),
        cmocka_unit_test_setup_teardown(test_compute_at_thread_relax, setup, teardown),
        cmocka_unit_test_setup_teardown(test_compute_at_reduction_and_conv, setup, teardown),
        cmocka_unit_test_setup_teardown(test_compute_at_preconditions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reverse_compute_at_row, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reverse_compute_at_accumulator, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reverse_compute_at_preconditions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reverse_compute_at_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_compute_at_writer_under_loop, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reverse_compute_at_strided, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reverse_compute_at_fuzz_cases, setup, teardown),
        cmocka_unit_test_setup_teardown(test_compute_at_not_covered, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reverse_compute_at_fused_digits, setup, teardown),
        cmocka_unit_test_setup_teardown(test_compute_at_padding, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reverse_compute_at_fused_split_predicate, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_reverse_compute_at_fused_mask_refused, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_compute_at_unwritten_producer, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reverse_compute_at_thread_producer, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
