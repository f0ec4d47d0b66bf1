/* Tests of decompose_reduction: the init block before each loop of a
 * matmul nest (fresh variables, only the loops of spatial iterators),
 * reductions split with predicates at odd shapes, thread-bound loops, a
 * conv2d; golden text, trace roundtrip, interpreter equivalence; one
 * negative test per precondition, each checking that nothing changed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

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

static const char matmul_before[] =
    "@T.prim_func\n"
    "def matmul(A: T.Buffer((8, 4), \"float32\"), B: T.Buffer((4, 6), \"float32\"), C: T.Buffer((8, 6), \"float32\")):\n"
    "    T.func_attr({\"global_symbol\": \"matmul\", \"tir.noalias\": 1})\n"
    "    for i, j, k in T.grid(8, 6, 4):\n"
    "        with T.block(\"C\"):\n"
    "            vi, vj, vk = T.axis.remap(\"SSR\", [i, j, k])\n"
    "            T.reads(A[vi, vk], B[vk, vj])\n"
    "            T.writes(C[vi, vj])\n"
    "            with T.init():\n"
    "                C[vi, vj] = T.float32(0)\n"
    "            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]\n";

static const char at_j_after[] =
    "@T.prim_func\n"
    "def matmul(A: T.Buffer((8, 4), \"float32\"), B: T.Buffer((4, 6), \"float32\"), C: T.Buffer((8, 6), \"float32\")):\n"
    "    T.func_attr({\"global_symbol\": \"matmul\", \"tir.noalias\": 1})\n"
    "    for i in T.serial(8):\n"
    "        for j in T.serial(6):\n"
    "            with T.block(\"C_init\"):\n"
    "                vi, vj = T.axis.remap(\"SS\", [i, j])\n"
    "                T.writes(C[vi, vj])\n"
    "                C[vi, vj] = T.float32(0)\n"
    "        for j_1, k in T.grid(6, 4):\n"
    "            with T.block(\"C\"):\n"
    "                vi_1, vj_1, vk = T.axis.remap(\"SSR\", [i, j_1, k])\n"
    "                T.reads(A[vi_1, vk], B[vk, vj_1])\n"
    "                T.writes(C[vi_1, vj_1])\n"
    "                C[vi_1, vj_1] = C[vi_1, vj_1] + A[vi_1, vk] * B[vk, vj_1]\n";

static const char at_k_after[] =
    "@T.prim_func\n"
    "def matmul(A: T.Buffer((8, 4), \"float32\"), B: T.Buffer((4, 6), \"float32\"), C: T.Buffer((8, 6), \"float32\")):\n"
    "    T.func_attr({\"global_symbol\": \"matmul\", \"tir.noalias\": 1})\n"
    "    for i, j in T.grid(8, 6):\n"
    "        with T.block(\"C_init\"):\n"
    "            vi, vj = T.axis.remap(\"SS\", [i, j])\n"
    "            T.writes(C[vi, vj])\n"
    "            C[vi, vj] = T.float32(0)\n"
    "        for k in T.serial(4):\n"
    "            with T.block(\"C\"):\n"
    "                vi_1, vj_1, vk = T.axis.remap(\"SSR\", [i, j, k])\n"
    "                T.reads(A[vi_1, vk], B[vk, vj_1])\n"
    "                T.writes(C[vi_1, vj_1])\n"
    "                C[vi_1, vj_1] = C[vi_1, vj_1] + A[vi_1, vk] * B[vk, vj_1]\n";

static void test_decompose_golden(void **st) {
    tir_ctx *ctx = *st;
    const char *goldens[3] = {NULL, at_j_after, at_k_after};
    for (int at = 0; at < 3; at++) {
        tir_schedule *s = sched_new(ctx, tir_def_matmul(ctx, 8, 6, 4, TIR_F32));
        sched_expect_text(s, matmul_before);
        tir_loop_rv l[16];
        sched_loops(s, "C", l);
        tir_block_rv c = sched_block(s, "C"), init;
        SCHED_OK(s, tir_sched_decompose_reduction(s, c, l[at], &init));
        if (goldens[at]) sched_expect_text(s, goldens[at]);
        const tir_block *ib, *cb;
        SCHED_OK(s, tir_sched_get_block_node(s, init, &ib));
        SCHED_OK(s, tir_sched_get_block_node(s, c, &cb));
        assert_string_equal(ib->name, "C_init");
        assert_null(ib->init);
        assert_int_equal(ib->niters, 2);
        assert_null(cb->init);
        /* fresh iterator variables */
        assert_ptr_not_equal(ib->iters[0].var, cb->iters[0].var);
        /* the init loops: i and j copied below the decomposition loop */
        tir_loop_rv il[16];
        assert_int_equal(sched_loops(s, "C_init", il), 2);
        /* the original loop handles still name the update's loops */
        assert_int_equal(sched_loops(s, "C", l), 3);
        sched_check_all(s);
        tir_sched_destroy(s);
    }
}

/* Split reductions and spatial loops with predicates, at odd shapes; the
 * init gets the spatial guards only. */
static void test_decompose_split(void **st) {
    tir_ctx *ctx = *st;
    for (int at = 0; at < 5; at++) {
        tir_schedule *s = sched_new(ctx, tir_def_matmul(ctx, 37, 29, 23, TIR_F32));
        tir_loop_rv l[16], pi[2], pk[2];
        sched_loops(s, "C", l);
        SCHED_OK(s, tir_sched_split(s, l[0], 2, (const int64_t[]){TIR_SPLIT_INFER, 8}, pi));
        SCHED_OK(s, tir_sched_split(s, l[2], 2, (const int64_t[]){TIR_SPLIT_INFER, 4}, pk));
        /* i_0, i_1, j, k_0, k_1 */
        assert_int_equal(sched_loops(s, "C", l), 5);
        if (at == 4) SCHED_OK(s, tir_sched_reorder(s, 2, (const tir_loop_rv[]){l[3], l[2]}));
        sched_loops(s, "C", l);
        tir_block_rv init;
        SCHED_OK(s, tir_sched_decompose_reduction(s, sched_block(s, "C"), l[at < 4 ? at : 2],
                                                  &init));
        const tir_block_realize *r = NULL;
        tir_loop_rv il[16];
        int n = sched_loops(s, "C_init", il);
        if (n > 0) r = tir_as_tir_block_realize(sched_for(s, il[n - 1])->body);
        if (r) assert_false(tir_uses_var(r->predicate, sched_for(s, pk[0])->var));
        sched_check_all(s);
        tir_sched_destroy(s);
    }
}

/* Split-K at a ragged K (23 in slices of 6, rfactor on the slice loop):
 * the rfactor block's guard k_0 * 6 + k_1 < 23 ties its spatial k_0 to
 * the reduction loop k_1.  The init ran with the first step, k_1 = 0,
 * where the guard is k_0 * 6 < 23, true for every k_0 < 4: the init nest
 * has i, j and k_0 and no guard (not a copy of k_1 and the guard on every
 * element, which kept relax_guards from dropping the compute's guards).
 * So with a guard that is not affine in k_1 (a floormod of a fused loop
 * whose min is k_1's first step), which once copied k_1 (precondition 10,
 * helper h64). */
static void test_decompose_projects_reduction_guard(void **st) {
    tir_ctx *ctx = *st;
    for (int affine = 1; affine >= 0; affine--) {
        tir_schedule *s = sched_new(ctx, tir_def_matmul(ctx, 8, 6, 23, TIR_F32));
        tir_loop_rv l[8], pk[2];
        sched_loops(s, "C", l);
        SCHED_OK(s, tir_sched_split(s, l[2], 2, (const int64_t[]){4, 6}, pk));
        tir_block_rv rf, init;
        SCHED_OK(s, tir_sched_rfactor(s, pk[0], 0, &rf));
        int n = sched_loops(s, "C_rf", l);
        assert_int_equal(n, 4); /* i, j, k_0, k_1 */
        if (!affine) { /* k_1 split [2, 3] and fused back: k_1 = (k_1_0 * 3 + k_1_1) */
            tir_loop_rv p2[2], fu;
            SCHED_OK(s, tir_sched_split(s, l[3], 2, (const int64_t[]){2, 3}, p2));
            SCHED_OK(s, tir_sched_reorder(s, 2, (const tir_loop_rv[]){p2[1], p2[0]}));
            SCHED_OK(s, tir_sched_fuse(s, 2, (const tir_loop_rv[]){p2[1], p2[0]}, &fu));
            sched_loops(s, "C_rf", l);
        }
        SCHED_OK(s, tir_sched_decompose_reduction(s, rf, l[0], &init));
        tir_loop_rv il[8];
        int ni = sched_loops(s, "C_rf_init", il);
        const tir_block_realize *r = tir_as_tir_block_realize(sched_for(s, il[ni - 1])->body);
        assert_non_null(r);
        assert_int_equal(ni, 3);
        int64_t v = 1;
        assert_true(!r->predicate || (tir_expr_const_int(r->predicate, &v) && v == 1));
        sched_check_all(s);
        tir_sched_destroy(s);
    }
}

/* Found by the fuzzer: a split guard ties a loop above the decomposition
 * point (j_1_0) to one below it (j_1_1) that feeds no iterator; the init
 * must keep that guard, or it runs again at j_1_0 = 1 after the update
 * and zeroes C. */
static void test_decompose_guard_across(void **st) {
    tir_ctx *ctx = *st;
    static const char trace[] = "b0 = get_block(\"C\")\n"
                                "[l1, l2, l3] = get_loops(b0)\n"
                                "[l4, l5] = split(l2, [3, None])\n"
                                "[l6, l7] = split(l5, [4, 5])\n"
                                "[l8, l9, l10] = split(l4, [2, 6, 6])\n"
                                "b11 = decompose_reduction(b0, l7)\n";
    for (int k = 1; k <= 9; k += 8) {
        tir_schedule *s = sched_new(ctx, tir_def_matmul(ctx, 7, 1, k, TIR_F32));
        SCHED_OK(s, tir_sched_replay(s, trace, strlen(trace)));
        sched_check_all(s);
        tir_sched_destroy(s);
    }
}

/* Bound loops are copied with their binding; batched matmul and conv2d. */
static void test_decompose_bound_and_others(void **st) {
    tir_ctx *ctx = *st;
    tir_schedule *s = sched_new(ctx, tir_def_matmul(ctx, 9, 14, 5, TIR_F32));
    tir_loop_rv l[16], pj[2];
    sched_loops(s, "C", l);
    SCHED_OK(s, tir_sched_split(s, l[1], 2, (const int64_t[]){TIR_SPLIT_INFER, 4}, pj));
    SCHED_OK(s, tir_sched_bind(s, l[0], "blockIdx.x"));
    SCHED_OK(s, tir_sched_bind(s, pj[1], "threadIdx.x"));
    sched_loops(s, "C", l);
    tir_block_rv init;
    SCHED_OK(s, tir_sched_decompose_reduction(s, sched_block(s, "C"), l[1], &init));
    tir_loop_rv il[16];
    assert_int_equal(sched_loops(s, "C_init", il), 3);
    assert_int_equal(sched_for(s, il[2])->kind, TIR_FOR_THREAD_BINDING);
    assert_string_equal(sched_for(s, il[2])->thread_tag, "threadIdx.x");
    sched_check_all(s);
    tir_sched_destroy(s);

    s = sched_new(ctx, tir_def_batch_matmul(ctx, 3, 5, 7, 3, TIR_F32));
    sched_loops(s, "C", l);
    SCHED_OK(s, tir_sched_decompose_reduction(s, sched_block(s, "C"), l[1], &init));
    sched_check_all(s);
    tir_sched_destroy(s);

    s = sched_new(ctx, tir_def_conv2d_nchw(ctx, 1, 3, 7, 5, 2, 3, 3, 2, 1, TIR_F32));
    int n = sched_loops(s, "conv", l);
    assert_true(n >= 5);
    SCHED_OK(s, tir_sched_decompose_reduction(s, sched_block(s, "conv"), l[4], &init));
    sched_check_all(s);
    tir_sched_destroy(s);
}

static const char nonaffine_red[] =
    "@T.prim_func\n"
    "def f(A: T.Buffer((16, 4), \"float32\"), C: T.Buffer((16,), \"float32\")):\n"
    "    for i, k in T.grid(4, 4):\n"
    "        with T.block(\"C\"):\n"
    "            vi = T.axis.spatial(16, i * i)\n"
    "            vk = T.axis.reduce(4, k)\n"
    "            T.reads(A[vi, vk])\n"
    "            T.writes(C[vi])\n"
    "            with T.init():\n"
    "                C[vi] = T.float32(0)\n"
    "            C[vi] = C[vi] + A[vi, vk]\n";

static const char opaque_red[] =
    "@T.prim_func\n"
    "def f(A: T.Buffer((4, 4), \"float32\"), C: T.Buffer((4,), \"float32\")):\n"
    "    for i, k in T.grid(4, 4):\n"
    "        with T.block(\"C\"):\n"
    "            vi, vk = T.axis.remap(\"SR\", [i, k])\n"
    "            T.reads(A[vi, vk])\n"
    "            T.writes(C[vi])\n"
    "            with T.init():\n"
    "                C[vi] = T.float32(0)\n"
    "            C[vi] = C[vi] + A[i, vk]\n";

static const char incomplete_sibling[] =
    "@T.prim_func\n"
    "def f(A: T.Buffer((4, 4), \"float32\"), C: T.Buffer((4,), \"float32\"), B: T.Buffer((4, 4), \"float32\")):\n"
    "    for i in T.serial(4):\n"
    "        for k in T.serial(4):\n"
    "            with T.block(\"C\"):\n"
    "                vi, vk = T.axis.remap(\"SR\", [i, k])\n"
    "                T.reads(A[vi, vk])\n"
    "                T.writes(C[vi])\n"
    "                with T.init():\n"
    "                    C[vi] = T.float32(0)\n"
    "                C[vi] = C[vi] + A[vi, vk]\n"
    "        for j in T.serial(4):\n"
    "            with T.block(\"B\"):\n"
    "                vi, vj = T.axis.remap(\"SS\", [i, j])\n"
    "                T.reads(B[vi, vj])\n"
    "                T.writes(B[vi, vj])\n"
    "                B[vi, vj] = B[vi, vj] + T.float32(1)\n";

static const tir_prim_func *parse(tir_ctx *ctx, const char *text) {
    const tir_prim_func *f = NULL;
    if (tir_parse_func(ctx, text, strlen(text), &f) != TIR_OK)
        fail_msg("parse: %s", tir_ctx_error(ctx));
    return f;
}

static void test_decompose_preconditions(void **st) {
    tir_ctx *ctx = *st;
    tir_schedule *s = sched_new(ctx, tir_def_matmul_bias(ctx, 6, 5, 4, TIR_F32));
    tir_loop_rv lc[16], ld[16];
    sched_loops(s, "C", lc);
    sched_loops(s, "D", ld);
    tir_block_rv c = sched_block(s, "C"), d = sched_block(s, "D"), out;
    /* 1: a reduction with an init */
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_NOT_REDUCTION, "decompose_reduction",
                      tir_sched_decompose_reduction(s, d, ld[0], &out));
    /* 2: the loop encloses the block */
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_NOT_ANCESTOR, "decompose_reduction",
                      tir_sched_decompose_reduction(s, c, ld[0], &out));
    /* 3: no reduction loop above the decomposition loop */
    SCHED_OK(s, tir_sched_reorder(s, 2, (const tir_loop_rv[]){lc[2], lc[1]})); /* i, k, j */
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_LOOP_HEIGHT, "decompose_reduction",
                      tir_sched_decompose_reduction(s, c, lc[1], &out));
    /* pointer argument */
    SCHED_EXPECT_FAIL(s, TIR_ERR_INVALID_ARG, "decompose_reduction",
                      tir_sched_decompose_reduction(s, c, lc[0], NULL));
    /* once decomposed, 1 again */
    SCHED_OK(s, tir_sched_decompose_reduction(s, c, lc[2], &out));
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_NOT_REDUCTION, "decompose_reduction",
                      tir_sched_decompose_reduction(s, c, lc[0], &out));
    sched_check_all(s);
    tir_sched_destroy(s);
    /* 2: the loop encloses the block, but block "C_o" lies in between
       (blockize at j keeps k inside, so C keeps its init) */
    s = sched_new(ctx, tir_def_matmul(ctx, 6, 5, 4, TIR_F32));
    sched_loops(s, "C", lc);
    c = sched_block(s, "C");
    tir_block_rv co;
    SCHED_OK(s, tir_sched_blockize(s, lc[1], &co));
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_NOT_ANCESTOR, "decompose_reduction",
                      tir_sched_decompose_reduction(s, c, lc[0], &out));
    assert_non_null(strstr(tir_ctx_error(ctx), "\"C\""));
    /* ... while j, inside C_o, is fine */
    SCHED_OK(s, tir_sched_decompose_reduction(s, c, lc[1], &out));
    sched_check_all(s);
    tir_sched_destroy(s);
    /* 4: W1, a loop variable used inside the block */
    s = sched_new(ctx, parse(ctx, opaque_red));
    sched_loops(s, "C", lc);
    c = sched_block(s, "C");
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_OPAQUE_USE, "decompose_reduction",
                      tir_sched_decompose_reduction(s, c, lc[0], &out));
    tir_sched_destroy(s);
    /* 5: W2, a binding that is not quasi-affine */
    s = sched_new(ctx, parse(ctx, nonaffine_red));
    sched_loops(s, "C", lc);
    c = sched_block(s, "C");
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_NON_AFFINE_BINDING, "decompose_reduction",
                      tir_sched_decompose_reduction(s, c, lc[0], &out));
    tir_sched_destroy(s);
    /* 6: W3, another block under the loop is neither complete nor a
       reduction */
    s = sched_new(ctx, parse(ctx, incomplete_sibling));
    sched_loops(s, "C", lc);
    c = sched_block(s, "C");
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_BLOCK_NOT_COMPLETE, "decompose_reduction",
                      tir_sched_decompose_reduction(s, c, lc[0], &out));
    /* ... while the loop of the reduction alone is fine */
    SCHED_OK(s, tir_sched_decompose_reduction(s, c, lc[1], &out));
    sched_check_roundtrip(s); /* B reads itself: no interpreter run */
    tir_sched_destroy(s);
}

/* 7: r feeds no iterator, so each instance of C runs twice; with the
 * init inside, the second run recomputes the same sum. */
static const char repeated_red[] =
    "@T.prim_func\n"
    "def matmul(A: T.Buffer((8, 4), \"float32\"), B: T.Buffer((4, 6), \"float32\"), C: T.Buffer((8, 6), \"float32\")):\n"
    "    T.func_attr({\"global_symbol\": \"matmul\", \"tir.noalias\": 1})\n"
    "    for r, i, j, k in T.grid(2, 8, 6, 4):\n"
    "        with T.block(\"C\"):\n"
    "            vi, vj, vk = T.axis.remap(\"SSR\", [i, j, k])\n"
    "            T.reads(A[vi, vk], B[vk, vj])\n"
    "            T.writes(C[vi, vj])\n"
    "            with T.init():\n"
    "                C[vi, vj] = T.float32(0)\n"
    "            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]\n";

static void test_decompose_repeated(void **st) {
    tir_ctx *ctx = *st;
    tir_schedule *s = sched_new(ctx, parse(ctx, repeated_red));
    tir_loop_rv lc[16];
    sched_loops(s, "C", lc);
    tir_block_rv c = sched_block(s, "C"), out;
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_REPEATED_INSTANCES, "decompose_reduction",
                      tir_sched_decompose_reduction(s, c, lc[0], &out));
    assert_non_null(strstr(tir_ctx_error(ctx), "\"C\""));
    /* below r, each iteration of r re-inits before its updates */
    SCHED_OK(s, tir_sched_decompose_reduction(s, c, lc[1], &out));
    sched_check_all(s);
    tir_sched_destroy(s);
}

/* The schedule fuzzer's matmul_bias case 20585 (MINITIR_FUZZ_SEED=
 * 7319002468, 200000 cases): D's i split [6, 1, 5], i_2 split [5, 5,
 * None], C computed at i_2_0.  C's region there ignores D's predicate, so
 * (i_0, i_2_0) = (0, 1) and (1, 0) both recompute rows 5-9 of C: harmless
 * with the init in the block, a double sum once decompose_reduction moves
 * the init before i_0.  compute_at now refuses to repeat a reduction's
 * instances (its precondition 12), so the state never arises; a repeat
 * loop written by hand is test_decompose_repeated's. */
static void test_decompose_after_overlapping_compute_at(void **st) {
    tir_ctx *ctx = *st;
    tir_schedule *s = sched_new(ctx, tir_def_matmul_bias_relu(ctx, 10, 4, 11, TIR_F32));
    tir_loop_rv ld[16], i[3], i2[3];
    sched_loops(s, "D", ld);
    SCHED_OK(s, tir_sched_split(s, ld[0], 3, (const int64_t[]){6, 1, 5}, i));
    SCHED_OK(s, tir_sched_split(s, i[2], 3, (const int64_t[]){5, 5, TIR_SPLIT_INFER}, i2));
    tir_block_rv c = sched_block(s, "C");
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_REPEATED_INSTANCES, "compute_at",
                      tir_sched_compute_at(s, c, i2[0], false));
    assert_non_null(strstr(tir_ctx_error(ctx), "\"C\""));
    sched_check_all(s);
    tir_sched_destroy(s);
}

/* 8: the init moved before loop i ran before R1, which (under i, before
 * the reduction) read C's old values: D 8 of 8 wrong before the check; the
 * same after the reduction reading C[(vi + 1) % 8], a parameter, saw the
 * init where it read the old values; an internal buffer read after the
 * reduction (the write-back of a cache_write) is fine. */
#define DR_SIBLING(name, cbuf, alloc, before, after)                                      \
    "@T.prim_func\n"                                                                      \
    "def " name "(A: T.Buffer((8, 4), \"float32\"), " cbuf "D: T.Buffer((8,), "          \
    "\"float32\")):\n"                                                                    \
    "    with T.block(\"root\"):\n" alloc                                                 \
    "        for i in range(8):\n" before                                                 \
    "            for k in range(4):\n"                                                    \
    "                with T.block(\"C\"):\n"                                              \
    "                    vi, vk = T.axis.remap(\"SR\", [i, k])\n"                         \
    "                    T.reads(A[vi, vk])\n"                                            \
    "                    T.writes(C[vi])\n"                                               \
    "                    with T.init():\n"                                                \
    "                        C[vi] = T.float32(0)\n"                                      \
    "                    C[vi] = C[vi] + A[vi, vk]\n" after
#define DR_READER(idx)                                                                    \
    "            with T.block(\"R1\"):\n"                                                 \
    "                vi = T.axis.remap(\"S\", [i])\n"                                     \
    "                T.reads(C[" idx "])\n"                                               \
    "                T.writes(D[vi])\n"                                                   \
    "                D[vi] = C[" idx "] + T.float32(1)\n"
#define DR_PARAM "C: T.Buffer((8,), \"float32\"), "
#define DR_ALLOC "        C = T.alloc_buffer((8,), \"float32\")\n"
static const char dr_before[] = DR_SIBLING("before", DR_PARAM, "", DR_READER("vi"), "");
static const char dr_after_param[] =
    DR_SIBLING("after_param", DR_PARAM, "", "", DR_READER("(vi + 1) % 8"));
static const char dr_after_internal[] =
    DR_SIBLING("after_internal", "", DR_ALLOC, "", DR_READER("vi"));

static void test_decompose_sibling_access(void **st) {
    tir_ctx *ctx = *st;
    const char *bad[] = {dr_before, dr_after_param};
    const char *why[] = {"reads C before the reduction", "whose old values it may read"};
    for (int t = 0; t < 2; t++) {
        tir_schedule *s = sched_new(ctx, parse(ctx, bad[t]));
        tir_loop_rv l[4];
        assert_int_equal(sched_loops(s, "C", l), 2);
        tir_block_rv c = sched_block(s, "C"), init;
        SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_NOT_STAGE_PIPELINE, "decompose_reduction",
                          tir_sched_decompose_reduction(s, c, l[0], &init));
        if (!strstr(tir_ctx_error(ctx), why[t]))
            fail_msg("no \"%s\" in:\n%s", why[t], tir_ctx_error(ctx));
        /* at the reduction's own loop the init stays inside loop i (the
           equivalence checker leaves parameters it takes for outputs
           unwritten, so the reading of C's old values is not run here) */
        SCHED_OK(s, tir_sched_decompose_reduction(s, c, l[1], &init));
        tir_sched_destroy(s);
    }
    tir_schedule *s = sched_new(ctx, parse(ctx, dr_after_internal));
    tir_loop_rv l[4];
    sched_loops(s, "C", l);
    tir_block_rv init;
    SCHED_OK(s, tir_sched_decompose_reduction(s, sched_block(s, "C"), l[0], &init));
    sched_check_all(s);
    tir_sched_destroy(s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_decompose_golden, setup, teardown),
        cmocka_unit_test_setup_teardown(test_decompose_split, setup, teardown),
        cmocka_unit_test_setup_teardown(test_decompose_projects_reduction_guard, setup, teardown),
        cmocka_unit_test_setup_teardown(test_decompose_guard_across, setup, teardown),
        cmocka_unit_test_setup_teardown(test_decompose_bound_and_others, setup, teardown),
        cmocka_unit_test_setup_teardown(test_decompose_preconditions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_decompose_repeated, setup, teardown),
        cmocka_unit_test_setup_teardown(test_decompose_sibling_access, setup, teardown),
        cmocka_unit_test_setup_teardown(test_decompose_after_overlapping_compute_at, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
