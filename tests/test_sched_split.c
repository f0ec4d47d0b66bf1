/* Tests of split: exact and non-divisible splits (with the bounds
 * predicate), inferred factors in any position, reduction loops; golden
 * text before and after, structural equality with the parsed golden, trace
 * roundtrip, interpreter equivalence at odd shapes; one negative test per
 * precondition, each checking that nothing changed. */
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

static const tir_block_realize *realize_of(tir_schedule *s, tir_loop_rv innermost) {
    const tir_block_realize *r = tir_as_tir_block_realize(sched_for(s, innermost)->body);
    assert_non_null(r);
    return r;
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
static const char split_exact_after[] =
    "@T.prim_func\n"
    "def matmul(A: T.Buffer((8, 4), \"float32\"), B: T.Buffer((4, 6), \"float32\"), C: T.Buffer((8, 6), \"float32\")):\n"
    "    T.func_attr({\"global_symbol\": \"matmul\", \"tir.noalias\": 1})\n"
    "    for i_0, i_1, j, k in T.grid(2, 4, 6, 4):\n"
    "        with T.block(\"C\"):\n"
    "            vi = T.axis.spatial(8, i_0 * 4 + i_1)\n"
    "            vj, vk = T.axis.remap(\"SR\", [j, k])\n"
    "            T.reads(A[vi, vk], B[vk, vj])\n"
    "            T.writes(C[vi, vj])\n"
    "            with T.init():\n"
    "                C[vi, vj] = T.float32(0)\n"
    "            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]\n";

static void test_split_exact(void **st) {
    tir_ctx *ctx = *st;
    tir_schedule *s = sched_new(ctx, tir_def_matmul(ctx, 8, 6, 4, TIR_F32));
    sched_expect_text(s, matmul_before);
    tir_loop_rv l[16], parts[2];
    assert_int_equal(sched_loops(s, "C", l), 3);
    const char *iname = sched_for(s, l[0])->var->name;
    SCHED_OK(s, tir_sched_split(s, l[0], 2, (const int64_t[]){TIR_SPLIT_INFER, 4}, parts));
    assert_int_equal(sched_extent(s, parts[0]), 2);
    assert_int_equal(sched_extent(s, parts[1]), 4);
    char want[64];
    snprintf(want, sizeof want, "%s_0", iname);
    assert_string_equal(sched_for(s, parts[0])->var->name, want);
    snprintf(want, sizeof want, "%s_1", iname);
    assert_string_equal(sched_for(s, parts[1])->var->name, want);
    /* Exact: no predicate. */
    assert_true(tir_expr_const_int(realize_of(s, l[2])->predicate, NULL));
    sched_expect_text(s, split_exact_after);
    sched_check_all(s);
    tir_sched_destroy(s);
}

static const char split_1000_after[] =
    "@T.prim_func\n"
    "def elementwise_chain(A: T.Buffer((1000, 1), \"float32\"), D: T.Buffer((1000, 1), \"float32\")):\n"
    "    T.func_attr({\"global_symbol\": \"elementwise_chain\", \"tir.noalias\": 1})\n"
    "    with T.block(\"root\"):\n"
    "        B = T.alloc_buffer((1000, 1), \"float32\")\n"
    "        C = T.alloc_buffer((1000, 1), \"float32\")\n"
    "        for i_0, i_1, j in T.grid(32, 32, 1):\n"
    "            with T.block(\"B\"):\n"
    "                vi = T.axis.spatial(1000, i_0 * 32 + i_1)\n"
    "                vj = T.axis.remap(\"S\", [j])\n"
    "                T.where(i_0 * 32 + i_1 < 1000)\n"
    "                T.reads(A[vi, vj])\n"
    "                T.writes(B[vi, vj])\n"
    "                B[vi, vj] = A[vi, vj] * T.float32(2)\n"
    "        for i, j_1 in T.grid(1000, 1):\n"
    "            with T.block(\"C\"):\n"
    "                vi_1, vj_1 = T.axis.remap(\"SS\", [i, j_1])\n"
    "                T.reads(B[vi_1, vj_1])\n"
    "                T.writes(C[vi_1, vj_1])\n"
    "                C[vi_1, vj_1] = B[vi_1, vj_1] + T.float32(1)\n"
    "        for i_2, j_2 in T.grid(1000, 1):\n"
    "            with T.block(\"D\"):\n"
    "                vi_2, vj_2 = T.axis.remap(\"SS\", [i_2, j_2])\n"
    "                T.reads(C[vi_2, vj_2])\n"
    "                T.writes(D[vi_2, vj_2])\n"
    "                D[vi_2, vj_2] = T.max(C[vi_2, vj_2], T.float32(0))\n";

/* 1000 split by 32: 32 x 32 = 1024 iterations, the last 24 masked. */
static void test_split_non_divisible(void **st) {
    tir_ctx *ctx = *st;
    tir_schedule *s = sched_new(ctx, tir_def_elementwise_chain(ctx, 1000, 1, TIR_F32));
    tir_loop_rv l[16], parts[2];
    assert_int_equal(sched_loops(s, "B", l), 2);
    SCHED_OK(s, tir_sched_split(s, l[0], 2, (const int64_t[]){TIR_SPLIT_INFER, 32}, parts));
    assert_int_equal(sched_extent(s, parts[0]), 32);
    assert_int_equal(sched_extent(s, parts[1]), 32);
    const tir_block_realize *r = realize_of(s, l[1]);
    assert_false(tir_expr_const_int(r->predicate, NULL));
    assert_true(tir_uses_var(r->predicate, sched_for(s, parts[0])->var));
    sched_expect_text(s, split_1000_after);
    sched_check_all(s);
    tir_sched_destroy(s);
}

/* Three factors with the middle inferred on a reduction loop of odd
 * extent: 23 -> 2 x 3 x 4 = 24, masked. */
static void test_split_reduction_infer_middle(void **st) {
    tir_ctx *ctx = *st;
    tir_schedule *s = sched_new(ctx, tir_def_matmul(ctx, 37, 29, 23, TIR_F32));
    tir_loop_rv l[16], parts[3];
    sched_loops(s, "C", l);
    SCHED_OK(s, tir_sched_split(s, l[2], 3, (const int64_t[]){2, TIR_SPLIT_INFER, 4}, parts));
    assert_int_equal(sched_extent(s, parts[0]), 2);
    assert_int_equal(sched_extent(s, parts[1]), 3);
    assert_int_equal(sched_extent(s, parts[2]), 4);
    assert_false(tir_expr_const_int(realize_of(s, parts[2])->predicate, NULL));
    /* Splitting again below keeps working (the predicate is carried). */
    tir_loop_rv again[2];
    SCHED_OK(s, tir_sched_split(s, l[0], 2, (const int64_t[]){5, 8}, again));
    assert_int_equal(sched_extent(s, again[0]), 5);
    sched_check_all(s);
    tir_sched_destroy(s);
}

/* A factor larger than the extent, and explicit factors whose product
 * overshoots. */
static void test_split_overshoot(void **st) {
    tir_ctx *ctx = *st;
    tir_schedule *s = sched_new(ctx, tir_def_elementwise_chain(ctx, 7, 3, TIR_F32));
    tir_loop_rv l[16], parts[2], p2[2];
    sched_loops(s, "C", l);
    SCHED_OK(s, tir_sched_split(s, l[1], 2, (const int64_t[]){TIR_SPLIT_INFER, 32}, parts));
    assert_int_equal(sched_extent(s, parts[0]), 1);
    assert_int_equal(sched_extent(s, parts[1]), 32);
    SCHED_OK(s, tir_sched_split(s, l[0], 2, (const int64_t[]){3, 3}, p2));
    sched_check_all(s);
    tir_sched_destroy(s);
}

/* Statements outside blocks are guarded by an if instead of a predicate;
 * loop variables used inside a block body are substituted there too. */
static void test_split_opaque(void **st) {
    tir_ctx *ctx = *st;
    tir_schedule *s = sched_new(ctx, tf_opaque_stmt(ctx));
    tir_loop_rv l[16], p[2];
    sched_loops(s, "B", l);
    SCHED_OK(s, tir_sched_split(s, l[1], 2, (const int64_t[]){TIR_SPLIT_INFER, 4}, p));
    const tir_seq *q = tir_as_tir_seq(sched_for(s, p[1])->body);
    assert_non_null(q);
    assert_int_equal(q->n, 2);
    assert_non_null(tir_as_tir_if(q->stmts[0]));
    assert_non_null(tir_as_tir_block_realize(q->stmts[1]));
    sched_check_all(s);
    tir_sched_destroy(s);
    s = sched_new(ctx, tf_opaque_in_block(ctx));
    sched_loops(s, "B", l);
    SCHED_OK(s, tir_sched_split(s, l[0], 2, (const int64_t[]){3, TIR_SPLIT_INFER}, p));
    sched_check_all(s);
    tir_sched_destroy(s);
    /* An inner loop whose extent uses the split variable. */
    s = sched_new(ctx, tf_triangular(ctx));
    sched_loops(s, "B", l);
    SCHED_OK(s, tir_sched_split(s, l[0], 2, (const int64_t[]){TIR_SPLIT_INFER, 3}, p));
    sched_check_all(s);
    tir_sched_destroy(s);
}

static void test_split_preconditions(void **st) {
    tir_ctx *ctx = *st;
    tir_schedule *s = sched_new(ctx, tir_def_matmul(ctx, 16, 12, 10, TIR_F32));
    tir_loop_rv l[16], out[3];
    sched_loops(s, "C", l);
    /* 1: serial */
    SCHED_OK(s, tir_sched_bind(s, l[0], "blockIdx.x"));
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_LOOP_NOT_SERIAL, "split",
                      tir_sched_split(s, l[0], 2, (const int64_t[]){TIR_SPLIT_INFER, 4}, out));
    assert_non_null(strstr(tir_ctx_error(ctx), "thread_binding blockIdx.x") ||
                    strstr(tir_ctx_error(ctx), "blockIdx.x"));
    /* 2: no annotations */
    SCHED_OK(s, tir_sched_annotate_loop_int(s, l[1], "hint", 1));
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_LOOP_ANNOTATED, "split",
                      tir_sched_split(s, l[1], 2, (const int64_t[]){TIR_SPLIT_INFER, 4}, out));
    /* 4: at least two factors */
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_FACTOR_COUNT, "split",
                      tir_sched_split(s, l[2], 1, (const int64_t[]){10}, out));
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_FACTOR_COUNT, "split", tir_sched_split(s, l[2], 0, NULL, out));
    /* 5: one inferred factor at most */
    enum { I = TIR_SPLIT_INFER };
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_MULTIPLE_INFER, "split",
                      tir_sched_split(s, l[2], 3, (const int64_t[]){I, 2, I}, out));
    assert_non_null(strstr(tir_ctx_error(ctx), "factors 0 and 2"));
    /* 6: no negative factor (more in test_split_nonpositive) */
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_NONPOSITIVE_FACTOR, "split",
                      tir_sched_split(s, l[2], 2, (const int64_t[]){-2, I}, out));
    /* 7: the product covers the extent */
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_FACTOR_MISMATCH, "split",
                      tir_sched_split(s, l[2], 2, (const int64_t[]){3, 3}, out));
    /* 8: each factor below 2^31 (here with an inferred one, which 7 does
     * not check), and their product in range */
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_FACTOR_MISMATCH, "split",
                      tir_sched_split(s, l[2], 2, (const int64_t[]){(int64_t)1 << 31, I}, out));
    assert_non_null(strstr(tir_ctx_error(ctx), "overflows"));
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_FACTOR_MISMATCH, "split",
                      tir_sched_split(s, l[2], 3,
                                      (const int64_t[]){INT32_MAX, INT32_MAX, INT32_MAX}, out));
    assert_non_null(strstr(tir_ctx_error(ctx), "overflows"));
    /* ... and the new loops' values in the loop's int32: [None, 3, 2^30]
     * of 10 ran i_1 * 1073741824 for i_1 = 2 (seventh new-user review);
     * [None, 2^30] and [1, 2, 2^30] stay within */
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_FACTOR_MISMATCH, "split",
                      tir_sched_split(s, l[2], 3, (const int64_t[]){I, 3, 1 << 30}, out));
    assert_non_null(strstr(tir_ctx_error(ctx), "past its int32"));
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_FACTOR_MISMATCH, "split",
                      tir_sched_split(s, l[2], 3, (const int64_t[]){3, 1 << 30, 2}, out));
    tir_schedule *s2 = sched_new(ctx, tir_def_matmul(ctx, 16, 12, 10, TIR_F32));
    tir_loop_rv l2[16];
    sched_loops(s2, "C", l2);
    SCHED_OK(s2, tir_sched_split(s2, l2[2], 2, (const int64_t[]){I, 1 << 30}, out));
    SCHED_OK(s2, tir_sched_split(s2, l2[0], 3, (const int64_t[]){1, 2, 1 << 30}, out));
    tir_sched_destroy(s2);
    /* a split loop's handle is stale */
    SCHED_OK(s, tir_sched_split(s, l[2], 2, (const int64_t[]){5, 2}, out));
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_STALE_HANDLE, "split",
                      tir_sched_split(s, l[2], 2, (const int64_t[]){5, 2}, out));
    sched_check_all(s);
    tir_sched_destroy(s);

    /* 3: starts at 0 */
    s = sched_new(ctx, tf_offset_loops(ctx));
    sched_loops(s, "B", l);
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_LOOP_MIN_NONZERO, "split",
                      tir_sched_split(s, l[0], 2, (const int64_t[]){TIR_SPLIT_INFER, 2}, out));
    assert_non_null(strstr(tir_ctx_error(ctx), "starts at 2"));
    tir_sched_destroy(s);
}

/* Precondition 6: 0 (once the infer marker) and every negative value
 * other than TIR_SPLIT_INFER are refused in every position, naming the
 * loop and the factor, and change nothing; the marker itself infers. */
static void test_split_nonpositive(void **st) {
    tir_ctx *ctx = *st;
    tir_schedule *s = sched_new(ctx, tir_def_matmul(ctx, 16, 12, 10, TIR_F32));
    tir_loop_rv l[16], out[3];
    sched_loops(s, "C", l);
    enum { I = TIR_SPLIT_INFER };
    const int64_t bad[] = {0, -2, -5, INT64_MIN};
    for (size_t b = 0; b < sizeof bad / sizeof bad[0]; b++)
        for (int pos = 0; pos < 3; pos++) {
            int64_t f[3] = {2, I, 3};
            f[pos] = bad[b];
            SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_NONPOSITIVE_FACTOR, "split",
                              tir_sched_split(s, l[1], 3, f, out));
            const char *msg = tir_ctx_error(ctx);
            char want[128];
            snprintf(want, sizeof want, "factor %d of the split of j is %lld: ", pos,
                     (long long)bad[b]);
            assert_non_null(strstr(msg, want));
            assert_non_null(strstr(msg, "split factor must be positive (or TIR_SPLIT_INFER)"));
            assert_true((strstr(msg, "0 does not mean infer") != NULL) == (bad[b] == 0));
            assert_non_null(strstr(msg, "(l2, loop j)"));
        }
    /* the status text says the same */
    assert_string_equal(tir_status_str(TIR_ERR_SCHED_NONPOSITIVE_FACTOR),
                        "split factor must be positive (or TIR_SPLIT_INFER)");
    /* the literal value of the marker is the marker */
    assert_int_equal(TIR_SPLIT_INFER, -1);
    SCHED_OK(s, tir_sched_split(s, l[1], 2, (const int64_t[]){-1, 5}, out));
    assert_int_equal(sched_extent(s, out[0]), 3);
    sched_check_all(s);
    tir_sched_destroy(s);
}

/* Text traces write the marker None and read it back; C traces write
 * TIR_SPLIT_INFER; an old trace's 0 is refused with its line number. */
static void test_split_trace_marker(void **st) {
    tir_ctx *ctx = *st;
    const tir_prim_func *f = tir_def_matmul(ctx, 16, 12, 10, TIR_F32);
    tir_schedule *s = sched_new(ctx, f);
    tir_loop_rv l[16], out[3];
    sched_loops(s, "C", l);
    SCHED_OK(s, tir_sched_split(s, l[0], 3, (const int64_t[]){2, TIR_SPLIT_INFER, 4}, out));
    SCHED_OK(s, tir_sched_annotate_loop_ints(s, l[2], "k", 2, (const int64_t[]){-1, 0}));
    const char *text = tir_sched_trace_text(s);
    assert_non_null(strstr(text, "split(l1, [2, None, 4])"));
    assert_non_null(strstr(text, "annotate_loop_ints(l3, \"k\", [-1, 0])")); /* not a factor list */
    assert_non_null(strstr(tir_sched_trace_c(s, "f"), "(const int64_t[]){2, TIR_SPLIT_INFER, 4}"));
    sched_check_all(s); /* replays the text and compares */

    static const char head[] = "b0 = get_block(\"C\")\n[l1, l2, l3] = get_loops(b0)\n";
    char buf[512];
    /* -1 is the marker's value, and prints back as None */
    tir_schedule *t = sched_new(ctx, f);
    snprintf(buf, sizeof buf, "%s[l4, l5] = split(l2, [-1, 5])\n", head);
    SCHED_OK(t, tir_sched_replay(t, buf, strlen(buf)));
    assert_non_null(strstr(tir_sched_trace_text(t), "split(l2, [None, 5])"));
    sched_check_all(t);
    tir_sched_destroy(t);
    /* an old trace's 0, then 0 elsewhere, None twice, None outside a factor
       list: all refused, nothing changed */
    t = sched_new(ctx, f);
    snprintf(buf, sizeof buf, "%s[l4, l5] = split(l1, [0, 4])\n", head);
    SCHED_EXPECT_FAIL(t, TIR_ERR_SCHED_NONPOSITIVE_FACTOR, "trace line 3",
                      tir_sched_replay(t, buf, strlen(buf)));
    assert_non_null(strstr(tir_ctx_error(ctx), "split factor must be positive"));
    snprintf(buf, sizeof buf, "%s[l4, l5, l6] = split(l1, [None, 0, 4])\n", head);
    SCHED_EXPECT_FAIL(t, TIR_ERR_SCHED_NONPOSITIVE_FACTOR, "trace line 3",
                      tir_sched_replay(t, buf, strlen(buf)));
    snprintf(buf, sizeof buf, "%s[l4, l5] = split(l1, [None, None])\n", head);
    SCHED_EXPECT_FAIL(t, TIR_ERR_SCHED_MULTIPLE_INFER, "trace line 3",
                      tir_sched_replay(t, buf, strlen(buf)));
    snprintf(buf, sizeof buf, "%sannotate_loop_ints(l1, \"k\", [None])\n", head);
    assert_int_equal(tir_sched_replay(t, buf, strlen(buf)), TIR_ERR_PARSE);
    assert_non_null(strstr(tir_ctx_error(ctx), "3:30: expected an integer"));
    snprintf(buf, sizeof buf, "%s[l4, l5] = split(l1, [Nope, 4])\n", head);
    assert_int_equal(tir_sched_replay(t, buf, strlen(buf)), TIR_ERR_PARSE);
    assert_non_null(strstr(tir_ctx_error(ctx), "expected an integer or None"));
    assert_int_equal(tir_sched_trace_len(t), 0);
    tir_sched_destroy(t);
    tir_sched_destroy(s);
}

/* Splits of every loop at odd shapes, compared in the interpreter. */
static void test_split_odd_shapes(void **st) {
    tir_ctx *ctx = *st;
    enum { I = TIR_SPLIT_INFER }; /* unused third entries too */
    const int64_t f[][3] = {{I, 2, I}, {3, I, I}, {I, 5, I}, {2, I, 2}, {I, 7, I}};
    for (int c = 0; c < 5; c++) {
        tir_schedule *s = sched_new(ctx, tir_def_batch_matmul(ctx, 3, 7, 5, 9, TIR_F32));
        tir_loop_rv l[16], out[3];
        assert_int_equal(sched_loops(s, "C", l), 4);
        int nf = c == 3 ? 3 : 2;
        for (int i = 0; i < 4; i++) SCHED_OK(s, tir_sched_split(s, l[i], nf, f[c], out));
        sched_check_all(s);
        tir_sched_destroy(s);
    }
    tir_schedule *s = sched_new(ctx, tir_def_conv2d_nchw(ctx, 1, 3, 7, 5, 2, 3, 3, 2, 1, TIR_F32));
    tir_loop_rv l[16], out[2];
    int n = sched_loops(s, "conv", l);
    for (int i = 0; i < n; i++)
        SCHED_OK(s, tir_sched_split(s, l[i], 2, (const int64_t[]){TIR_SPLIT_INFER, 2}, out));
    n = sched_loops(s, "pad", l);
    for (int i = 0; i < n; i++)
        SCHED_OK(s, tir_sched_split(s, l[i], 2, (const int64_t[]){2, TIR_SPLIT_INFER}, out));
    sched_check_all(s);
    tir_sched_destroy(s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_split_exact, setup, teardown),
        cmocka_unit_test_setup_teardown(test_split_non_divisible, setup, teardown),
        cmocka_unit_test_setup_teardown(test_split_reduction_infer_middle, setup, teardown),
        cmocka_unit_test_setup_teardown(test_split_overshoot, setup, teardown),
        cmocka_unit_test_setup_teardown(test_split_opaque, setup, teardown),
        cmocka_unit_test_setup_teardown(test_split_preconditions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_split_nonpositive, setup, teardown),
        cmocka_unit_test_setup_teardown(test_split_trace_marker, setup, teardown),
        cmocka_unit_test_setup_teardown(test_split_odd_shapes, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
