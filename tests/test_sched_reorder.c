/* Tests of reorder: full and partial permutations, loops left in place,
 * after splits with predicates; golden text, structural equality, trace
 * roundtrip, interpreter equivalence; one negative test per precondition,
 * each checking that nothing changed. */
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

/* The loop variables from outermost down to the block, as names. */
static void expect_order(tir_schedule *s, tir_loop_rv top, int n, const tir_loop_rv *want) {
    const tir_stmt *st = &sched_for(s, top)->base;
    for (int i = 0; i < n; i++) {
        const tir_for *f = tir_as_tir_for(st);
        assert_non_null(f);
        assert_ptr_equal(f, sched_for(s, want[i]));
        st = f->body;
    }
}

static const char reorder_before[] =
    "@T.prim_func\n"
    "def matmul(A: T.Buffer((5, 7), \"float32\"), B: T.Buffer((7, 6), \"float32\"), C: T.Buffer((5, 6), \"float32\")):\n"
    "    T.func_attr({\"global_symbol\": \"matmul\", \"tir.noalias\": 1})\n"
    "    for i, j, k in T.grid(5, 6, 7):\n"
    "        with T.block(\"C\"):\n"
    "            vi, vj, vk = T.axis.remap(\"SSR\", [i, j, k])\n"
    "            T.reads(A[vi, vk], B[vk, vj])\n"
    "            T.writes(C[vi, vj])\n"
    "            with T.init():\n"
    "                C[vi, vj] = T.float32(0)\n"
    "            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]\n";

static const char reorder_after[] =
    "@T.prim_func\n"
    "def matmul(A: T.Buffer((5, 7), \"float32\"), B: T.Buffer((7, 6), \"float32\"), C: T.Buffer((5, 6), \"float32\")):\n"
    "    T.func_attr({\"global_symbol\": \"matmul\", \"tir.noalias\": 1})\n"
    "    for k, j, i in T.grid(7, 6, 5):\n"
    "        with T.block(\"C\"):\n"
    "            vi, vj, vk = T.axis.remap(\"SSR\", [i, j, k])\n"
    "            T.reads(A[vi, vk], B[vk, vj])\n"
    "            T.writes(C[vi, vj])\n"
    "            with T.init():\n"
    "                C[vi, vj] = T.float32(0)\n"
    "            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]\n";

static void test_reorder_partial(void **st) {
    tir_ctx *ctx = *st;
    tir_schedule *s = sched_new(ctx, tir_def_matmul(ctx, 5, 6, 7, TIR_F32));
    sched_expect_text(s, reorder_before);
    tir_loop_rv l[16];
    sched_loops(s, "C", l);
    /* k, i: the slots of i and k swap; j stays in the middle. */
    SCHED_OK(s, tir_sched_reorder(s, 2, (const tir_loop_rv[]){l[2], l[0]}));
    expect_order(s, l[2], 3, (const tir_loop_rv[]){l[2], l[1], l[0]});
    sched_expect_text(s, reorder_after);
    sched_check_all(s);
    /* all handles stay valid; reorder back */
    SCHED_OK(s, tir_sched_reorder(s, 3, l));
    expect_order(s, l[0], 3, l);
    assert_true(tir_struct_equal(tir_sched_func(s), tir_sched_orig_func(s)));
    sched_check_all(s);
    tir_sched_destroy(s);
}

/* The seed's Step 2 order after five splits, at a non-multiple size. */
static void test_reorder_tiles(void **st) {
    tir_ctx *ctx = *st;
    tir_schedule *s = sched_new(ctx, tir_def_matmul(ctx, 45, 37, 41, TIR_F32));
    tir_loop_rv l[16], i2[2], j2[2], k2[2], i3[2], j3[2];
    sched_loops(s, "C", l);
    SCHED_OK(s, tir_sched_split(s, l[0], 2, (const int64_t[]){TIR_SPLIT_INFER, 16}, i2));
    SCHED_OK(s, tir_sched_split(s, l[1], 2, (const int64_t[]){TIR_SPLIT_INFER, 16}, j2));
    SCHED_OK(s, tir_sched_split(s, l[2], 2, (const int64_t[]){TIR_SPLIT_INFER, 8}, k2));
    SCHED_OK(s, tir_sched_split(s, i2[1], 2, (const int64_t[]){4, TIR_SPLIT_INFER}, i3));
    SCHED_OK(s, tir_sched_split(s, j2[1], 2, (const int64_t[]){2, TIR_SPLIT_INFER}, j3));
    const tir_loop_rv order[8] = {i2[0], j2[0], i3[0], j3[0], k2[0], i3[1], j3[1], k2[1]};
    SCHED_OK(s, tir_sched_reorder(s, 8, order));
    expect_order(s, i2[0], 8, order);
    sched_check_all(s);
    tir_sched_destroy(s);
}

static void test_reorder_odd_shapes(void **st) {
    tir_ctx *ctx = *st;
    tir_schedule *s = sched_new(ctx, tir_def_conv2d_nchw(ctx, 1, 2, 6, 5, 3, 3, 3, 1, 1, TIR_F32));
    tir_loop_rv l[16];
    int n = sched_loops(s, "conv", l);
    assert_int_equal(n, 7);
    /* reduction loops outermost, spatial innermost, reversed */
    SCHED_OK(s, tir_sched_reorder(s, 7, (const tir_loop_rv[]){l[6], l[5], l[4], l[3], l[2], l[1], l[0]}));
    sched_check_all(s);
    tir_sched_destroy(s);
    s = sched_new(ctx, tir_def_batch_matmul(ctx, 2, 3, 5, 7, TIR_F32));
    sched_loops(s, "C", l);
    SCHED_OK(s, tir_sched_reorder(s, 3, (const tir_loop_rv[]){l[3], l[1], l[0]}));
    expect_order(s, l[3], 4, (const tir_loop_rv[]){l[3], l[1], l[2], l[0]});
    sched_check_all(s);
    tir_sched_destroy(s);
}

static void test_reorder_preconditions(void **st) {
    tir_ctx *ctx = *st;
    tir_schedule *s = sched_new(ctx, tir_def_elementwise_chain(ctx, 4, 5, TIR_F32));
    tir_loop_rv b[16], c[16];
    sched_loops(s, "B", b);
    sched_loops(s, "C", c);
    /* 1: two loops at least */
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_LOOP_COUNT, "reorder", tir_sched_reorder(s, 1, b));
    /* 2: no duplicates */
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_DUPLICATE_LOOP, "reorder",
                      tir_sched_reorder(s, 3, (const tir_loop_rv[]){b[0], b[1], b[0]}));
    /* 3: one nest */
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_NOT_NESTED, "reorder",
                      tir_sched_reorder(s, 2, (const tir_loop_rv[]){b[1], c[0]}));
    tir_sched_destroy(s);
    /* 3: one path, but block "C_o" (blockize at j) lies between i and k */
    s = sched_new(ctx, tir_def_matmul(ctx, 4, 5, 6, TIR_F32));
    {
        tir_loop_rv m[16];
        tir_block_rv co;
        sched_loops(s, "C", m);
        SCHED_OK(s, tir_sched_blockize(s, m[1], &co));
        SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_NOT_NESTED, "reorder",
                          tir_sched_reorder(s, 2, (const tir_loop_rv[]){m[2], m[0]}));
        assert_non_null(strstr(tir_ctx_error(ctx), "block \"C_o\" lies between the loops"));
        /* the loops inside C_o still reorder */
        SCHED_OK(s, tir_sched_reorder(s, 2, (const tir_loop_rv[]){m[2], m[1]}));
        sched_check_all(s);
    }
    tir_sched_destroy(s);
    /* 4: a single branch */
    s = sched_new(ctx, tf_branching(ctx));
    tir_loop_rv l[16];
    assert_int_equal(sched_loops(s, "B", l), 3);
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_CHAIN_BRANCHES, "reorder",
                      tir_sched_reorder(s, 2, (const tir_loop_rv[]){l[2], l[0]}));
    /* i and j alone are fine: j's body is not on the chain */
    SCHED_OK(s, tir_sched_reorder(s, 2, (const tir_loop_rv[]){l[1], l[0]}));
    sched_check_all(s);
    tir_sched_destroy(s);
    /* 5: independent ranges */
    s = sched_new(ctx, tf_triangular(ctx));
    sched_loops(s, "B", l);
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_DEPENDENT_DOMAIN, "reorder",
                      tir_sched_reorder(s, 2, (const tir_loop_rv[]){l[1], l[0]}));
    tir_sched_destroy(s);
    /* 6 (W1): nothing but loops and blocks, loop variables only in bindings */
    s = sched_new(ctx, tf_opaque_stmt(ctx));
    sched_loops(s, "B", l);
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_OPAQUE_USE, "reorder",
                      tir_sched_reorder(s, 2, (const tir_loop_rv[]){l[1], l[0]}));
    tir_sched_destroy(s);
    s = sched_new(ctx, tf_opaque_in_block(ctx));
    sched_loops(s, "B", l);
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_OPAQUE_USE, "reorder",
                      tir_sched_reorder(s, 2, (const tir_loop_rv[]){l[1], l[0]}));
    tir_sched_destroy(s);
    /* 7 (W2): quasi-affine bindings */
    s = sched_new(ctx, tf_nonaffine(ctx));
    sched_loops(s, "B", l);
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_NON_AFFINE_BINDING, "reorder",
                      tir_sched_reorder(s, 2, (const tir_loop_rv[]){l[1], l[0]}));
    tir_sched_destroy(s);
    /* 8 (W3): complete or reduction blocks */
    s = sched_new(ctx, tf_incomplete(ctx));
    sched_loops(s, "B", l);
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_BLOCK_NOT_COMPLETE, "reorder",
                      tir_sched_reorder(s, 2, (const tir_loop_rv[]){l[1], l[0]}));
    tir_sched_destroy(s);
    /* 9: the parts of a loop fused from spatial and reduce loops keep
       their order.  Swapping the parts of fused (j, k) would visit k = 1
       before k = 0 for j = 1. */
    s = sched_new(ctx, tir_def_matmul(ctx, 3, 2, 3, TIR_F32));
    tir_loop_rv jk, p[2];
    sched_loops(s, "C", l);
    SCHED_OK(s, tir_sched_fuse(s, 2, (const tir_loop_rv[]){l[1], l[2]}, &jk));
    SCHED_OK(s, tir_sched_split(s, jk, 2, (const int64_t[]){TIR_SPLIT_INFER, 2}, p));
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_MIXED_LOOP, "reorder",
                      tir_sched_reorder(s, 2, (const tir_loop_rv[]){p[1], p[0]}));
    /* the pure loop i may move, as long as the two parts keep their order */
    SCHED_OK(s, tir_sched_reorder(s, 2, (const tir_loop_rv[]){p[0], l[0]}));
    sched_check_all(s);
    tir_loop_rv ii[2];
    SCHED_OK(s, tir_sched_split(s, l[0], 2, (const int64_t[]){TIR_SPLIT_INFER, 2}, ii));
    SCHED_OK(s, tir_sched_reorder(s, 2, (const tir_loop_rv[]){ii[1], ii[0]}));
    sched_check_all(s);
    tir_sched_destroy(s);
}

/* 9, tangled loops (the schedule fuzzer's seed 1921900010, matmul case
 * 4934): after fuse(i, j, k) of a 13x1x4 matmul and splits into
 * f0 (3), f1_0 (5), f1_1 (2), f2 (2), vi = f1_0 + (f0 * 9 + f1_1) // 2 and
 * vk = f2 + (f0 * 9 + f1_1) % 2 * 2: only f1_1 feeds both, yet moving the
 * pure loops f1_0 and f2 round it visited (vi 5, vk 2) before (vi 5, vk 0),
 * so C[5] was read before its init: f1_0, f1_1 and f2 form one tangled
 * group, whose order among themselves decides which instance runs first.
 * Moving loops outside a group, or a group's loop past them, is fine. */
static void test_reorder_tangled(void **st) {
    tir_ctx *ctx = *st;
    tir_loop_rv l[8], f, p[3], q[2];
    tir_schedule *s = sched_new(ctx, tir_def_matmul(ctx, 13, 1, 4, TIR_F32));
    assert_int_equal(sched_loops(s, "C", l), 3);
    SCHED_OK(s, tir_sched_fuse(s, 3, l, &f));
    SCHED_OK(s, tir_sched_split(s, f, 3, (const int64_t[]){3, TIR_SPLIT_INFER, 2}, p));
    SCHED_OK(s, tir_sched_split(s, p[1], 2, (const int64_t[]){TIR_SPLIT_INFER, 2}, q));
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_MIXED_LOOP, "reorder",
                      tir_sched_reorder(s, 2, (const tir_loop_rv[]){p[2], q[0]}));
    const char *msg = tir_ctx_error(ctx);
    if (!strstr(msg, "\"C\"") || !strstr(msg, "would swap") || !strstr(msg, "init"))
        fail_msg("message: %s", msg);
    /* the loops already in that order: nothing moves */
    SCHED_OK(s, tir_sched_reorder(s, 3, (const tir_loop_rv[]){q[0], q[1], p[2]}));
    sched_check_all(s);
    tir_sched_destroy(s);

    /* a mixed loop above the chain: the pure loops under it may move */
    s = sched_new(ctx, tir_def_matmul(ctx, 4, 6, 4, TIR_F32));
    assert_int_equal(sched_loops(s, "C", l), 3);
    SCHED_OK(s, tir_sched_reorder(s, 2, (const tir_loop_rv[]){l[2], l[1]}));
    SCHED_OK(s, tir_sched_fuse(s, 2, (const tir_loop_rv[]){l[0], l[2]}, &f));
    SCHED_OK(s, tir_sched_split(s, l[1], 2, (const int64_t[]){TIR_SPLIT_INFER, 2}, q));
    SCHED_OK(s, tir_sched_reorder(s, 2, (const tir_loop_rv[]){q[1], q[0]}));
    sched_check_all(s);
    /* and the mixed loop may pass them: it is its group's only loop */
    SCHED_OK(s, tir_sched_reorder(s, 2, (const tir_loop_rv[]){q[1], f}));
    sched_check_all(s);
    tir_sched_destroy(s);

    /* a mixed loop below the chain (the review's case): the outer tiles
       i_0 and j swap over it */
    s = sched_new(ctx, tir_def_matmul(ctx, 7, 5, 4, TIR_F32));
    assert_int_equal(sched_loops(s, "C", l), 3);
    SCHED_OK(s, tir_sched_split(s, l[0], 2, (const int64_t[]){TIR_SPLIT_INFER, 3}, q));
    SCHED_OK(s, tir_sched_reorder(s, 4, (const tir_loop_rv[]){q[0], l[1], q[1], l[2]}));
    SCHED_OK(s, tir_sched_fuse(s, 2, (const tir_loop_rv[]){q[1], l[2]}, &f));
    SCHED_OK(s, tir_sched_reorder(s, 2, (const tir_loop_rv[]){l[1], q[0]}));
    sched_check_all(s);
    /* q[0] (i_0) and f (i_1, k) feed vi together: one group, so f may not
       move above q[0] */
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_MIXED_LOOP, "reorder",
                      tir_sched_reorder(s, 2, (const tir_loop_rv[]){f, q[0]}));
    tir_sched_destroy(s);

    /* two pure loops of one group, neither of them mixed: i_0 feeds vi
       and k_0 vk, both with the mixed loop i_1_k_1_fused below them */
    s = sched_new(ctx, tir_def_matmul(ctx, 4, 1, 4, TIR_F32));
    assert_int_equal(sched_loops(s, "C", l), 3);
    SCHED_OK(s, tir_sched_split(s, l[0], 2, (const int64_t[]){2, 2}, q));
    SCHED_OK(s, tir_sched_split(s, l[2], 2, (const int64_t[]){2, 2}, p));
    SCHED_OK(s, tir_sched_reorder(s, 4, (const tir_loop_rv[]){q[0], p[0], q[1], p[1]}));
    SCHED_OK(s, tir_sched_fuse(s, 2, (const tir_loop_rv[]){q[1], p[1]}, &f));
    sched_check_all(s);
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_MIXED_LOOP, "reorder",
                      tir_sched_reorder(s, 2, (const tir_loop_rv[]){p[0], q[0]}));
    assert_non_null(strstr(tir_ctx_error(ctx), "loops i_0 and k_0 of block \"C\" would swap, "
                                               "and both are tied to loop i_1_k_1_fused"));
    tir_sched_destroy(s);
}

/* 10: r feeds no iterator of C, so it repeats every instance (compute_at
 * used to leave such loops: the schedule fuzzer's seed 31415930, matmul_bias
 * case 10194, a vthread loop).  Harmless while each repetition starts from
 * the init; with k moved above r every update would accumulate twice.
 * Moving k below r, or moving loops that feed spatial iterators, is fine. */
static const char repeat_loop[] =
    "@T.prim_func\n"
    "def matmul(A: T.Buffer((5, 4), \"float32\"), B: T.Buffer((4, 3), \"float32\"), C: T.Buffer((5, 3), \"float32\")):\n"
    "    T.func_attr({\"global_symbol\": \"matmul\", \"tir.noalias\": 1})\n"
    "    for r, i, j, k in T.grid(2, 5, 3, 4):\n"
    "        with T.block(\"C\"):\n"
    "            vi, vj, vk = T.axis.remap(\"SSR\", [i, j, k])\n"
    "            T.reads(A[vi, vk], B[vk, vj])\n"
    "            T.writes(C[vi, vj])\n"
    "            with T.init():\n"
    "                C[vi, vj] = T.float32(0)\n"
    "            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]\n";

static void test_reorder_repeated_instances(void **st) {
    tir_ctx *ctx = *st;
    const tir_prim_func *f = NULL;
    assert_int_equal(tir_parse_func(ctx, repeat_loop, strlen(repeat_loop), &f), TIR_OK);
    tir_schedule *s = sched_new(ctx, f);
    tir_loop_rv l[16];
    assert_int_equal(sched_loops(s, "C", l), 4); /* r, i, j, k */
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_REPEATED_INSTANCES, "reorder",
                      tir_sched_reorder(s, 2, (const tir_loop_rv[]){l[3], l[0]}));
    const char *msg = tir_ctx_error(ctx);
    if (!strstr(msg, "\"C\"") || !strstr(msg, "repeats every instance"))
        fail_msg("message: %s", msg);
    SCHED_OK(s, tir_sched_reorder(s, 3, (const tir_loop_rv[]){l[0], l[3], l[2]}));
    sched_check_all(s);
    SCHED_OK(s, tir_sched_reorder(s, 2, (const tir_loop_rv[]){l[1], l[0]}));
    sched_check_all(s);
    tir_sched_destroy(s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_reorder_partial, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reorder_tiles, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reorder_odd_shapes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reorder_preconditions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reorder_repeated_instances, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reorder_tangled, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
