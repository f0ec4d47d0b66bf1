/* Tests of compute_inline and reverse_compute_inline: golden text, region
 * updates, stale handles of the removed blocks, trace roundtrip and
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

static const char chain_before[] =
    "@T.prim_func\n"
    "def elementwise_chain(A: T.Buffer((7, 5), \"float32\"), D: T.Buffer((7, 5), \"float32\")):\n"
    "    T.func_attr({\"global_symbol\": \"elementwise_chain\", \"tir.noalias\": 1})\n"
    "    with T.block(\"root\"):\n"
    "        B = T.alloc_buffer((7, 5), \"float32\")\n"
    "        C = T.alloc_buffer((7, 5), \"float32\")\n"
    "        for i, j in T.grid(7, 5):\n"
    "            with T.block(\"B\"):\n"
    "                vi, vj = T.axis.remap(\"SS\", [i, j])\n"
    "                T.reads(A[vi, vj])\n"
    "                T.writes(B[vi, vj])\n"
    "                B[vi, vj] = A[vi, vj] * T.float32(2)\n"
    "        for i_1, j_1 in T.grid(7, 5):\n"
    "            with T.block(\"C\"):\n"
    "                vi_1, vj_1 = T.axis.remap(\"SS\", [i_1, j_1])\n"
    "                T.reads(B[vi_1, vj_1])\n"
    "                T.writes(C[vi_1, vj_1])\n"
    "                C[vi_1, vj_1] = B[vi_1, vj_1] + T.float32(1)\n"
    "        for i_2, j_2 in T.grid(7, 5):\n"
    "            with T.block(\"D\"):\n"
    "                vi_2, vj_2 = T.axis.remap(\"SS\", [i_2, j_2])\n"
    "                T.reads(C[vi_2, vj_2])\n"
    "                T.writes(D[vi_2, vj_2])\n"
    "                D[vi_2, vj_2] = T.max(C[vi_2, vj_2], T.float32(0))\n";
static const char inline_after[] =
    "@T.prim_func\n"
    "def elementwise_chain(A: T.Buffer((7, 5), \"float32\"), D: T.Buffer((7, 5), \"float32\")):\n"
    "    T.func_attr({\"global_symbol\": \"elementwise_chain\", \"tir.noalias\": 1})\n"
    "    with T.block(\"root\"):\n"
    "        C = T.alloc_buffer((7, 5), \"float32\")\n"
    "        for i, j in T.grid(7, 5):\n"
    "            with T.block(\"C\"):\n"
    "                vi, vj = T.axis.remap(\"SS\", [i, j])\n"
    "                T.reads(A[vi, vj])\n"
    "                T.writes(C[vi, vj])\n"
    "                C[vi, vj] = A[vi, vj] * T.float32(2) + T.float32(1)\n"
    "        for i_1, j_1 in T.grid(7, 5):\n"
    "            with T.block(\"D\"):\n"
    "                vi_1, vj_1 = T.axis.remap(\"SS\", [i_1, j_1])\n"
    "                T.reads(C[vi_1, vj_1])\n"
    "                T.writes(D[vi_1, vj_1])\n"
    "                D[vi_1, vj_1] = T.max(C[vi_1, vj_1], T.float32(0))\n";

static void test_compute_inline_chain(void **st) {
    tir_ctx *ctx = *st;
    tir_schedule *s = sched_new(ctx, tir_def_elementwise_chain(ctx, 7, 5, TIR_F32));
    blk_expect_text(s, chain_before, "chain_before");
    tir_block_rv b = sched_block(s, "B"), c = sched_block(s, "C");
    SCHED_OK(s, tir_sched_compute_inline(s, b));
    const tir_block *nb;
    SCHED_OK(s, tir_sched_get_block_node(s, c, &nb));
    assert_int_equal(nb->nreads, 1);
    assert_string_equal(nb->reads[0].buffer->name, "A");
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_STALE_HANDLE, "compute_inline",
                      tir_sched_compute_inline(s, b));
    blk_expect_text(s, inline_after, "inline_after");
    sched_check_all(s);
    SCHED_OK(s, tir_sched_compute_inline(s, c));
    sched_check_all(s);
    tir_sched_destroy(s);
}

static void test_compute_inline_odd_shapes(void **st) {
    tir_ctx *ctx = *st;
    tir_schedule *s = sched_new(ctx, tir_def_conv2d_nchw(ctx, 1, 3, 7, 5, 2, 3, 3, 2, 1, TIR_F32));
    SCHED_OK(s, tir_sched_compute_inline(s, sched_block(s, "pad")));
    sched_check_all(s);
    tir_sched_destroy(s);
    /* after a split and a compute_at */
    s = sched_new(ctx, blk_parse(ctx, blk_two_readers));
    tir_loop_rv p[2];
    SCHED_OK(s,
             tir_sched_split(s, blk_loop(s, "B", 0), 2, (const int64_t[]){TIR_SPLIT_INFER, 4}, p));
    SCHED_OK(s, tir_sched_compute_inline(s, sched_block(s, "B")));
    sched_check_all(s);
    tir_sched_destroy(s);
}

static void test_compute_inline_preconditions(void **st) {
    tir_ctx *ctx = *st;
    tir_schedule *s = sched_new(ctx, tir_def_matmul_bias(ctx, 5, 3, 4, TIR_F32));
    /* 1 */
    {
        tir_block_rv h1 = sched_block(s, "root");
        SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_DIFFERENT_SCOPE, "compute_inline",
                      tir_sched_compute_inline(s, h1));
    }
    /* 2: a reduction */
    {
        tir_block_rv h2 = sched_block(s, "C");
        SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_BLOCK_NOT_COMPLETE, "compute_inline",
                      tir_sched_compute_inline(s, h2));
    }
    /* 5: D writes a parameter */
    {
        tir_block_rv h3 = sched_block(s, "D");
        SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_OUTPUT_BUFFER, "compute_inline",
                      tir_sched_compute_inline(s, h3));
    }
    sched_check_all(s);
    tir_sched_destroy(s);
    /* 3 */
    s = sched_new(ctx, blk_parse(ctx, blk_two_stores));
    {
        tir_block_rv h4 = sched_block(s, "B");
        SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_NOT_SINGLE_STORE, "compute_inline",
                      tir_sched_compute_inline(s, h4));
    }
    tir_sched_destroy(s);
    /* 4 */
    s = sched_new(ctx, blk_parse(ctx, blk_shifted));
    {
        tir_block_rv h5 = sched_block(s, "B");
        SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_NOT_TRIVIAL_ACCESS, "compute_inline",
                      tir_sched_compute_inline(s, h5));
    }
    tir_sched_destroy(s);
    /* 7: B2 rewrites P's input after P */
    s = sched_new(ctx, blk_parse(ctx, blk_rewritten));
    {
        tir_block_rv pb = sched_block(s, "P");
        SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_NOT_STAGE_PIPELINE, "compute_inline",
                          tir_sched_compute_inline(s, pb));
    }
    tir_sched_destroy(s);
    /* 6 */
    s = sched_new(ctx, blk_parse(ctx, blk_two_writers));
    {
        tir_block_rv h6 = sched_block(s, "B1");
        SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_MULTIPLE_WRITERS, "compute_inline",
                      tir_sched_compute_inline(s, h6));
    }
    tir_sched_destroy(s);
}

static const char reverse_inline_after[] =
    "@T.prim_func\n"
    "def elementwise_chain(A: T.Buffer((7, 5), \"float32\"), D: T.Buffer((7, 5), \"float32\")):\n"
    "    T.func_attr({\"global_symbol\": \"elementwise_chain\", \"tir.noalias\": 1})\n"
    "    with T.block(\"root\"):\n"
    "        B = T.alloc_buffer((7, 5), \"float32\")\n"
    "        for i, j in T.grid(7, 5):\n"
    "            with T.block(\"B\"):\n"
    "                vi, vj = T.axis.remap(\"SS\", [i, j])\n"
    "                T.reads(A[vi, vj])\n"
    "                T.writes(B[vi, vj])\n"
    "                B[vi, vj] = A[vi, vj] * T.float32(2)\n"
    "        for i_1, j_1 in T.grid(7, 5):\n"
    "            with T.block(\"C\"):\n"
    "                vi_1, vj_1 = T.axis.remap(\"SS\", [i_1, j_1])\n"
    "                T.reads(B[vi_1, vj_1])\n"
    "                T.writes(D[vi_1, vj_1])\n"
    "                D[vi_1, vj_1] = T.max(B[vi_1, vj_1] + T.float32(1), T.float32(0))\n";

static void test_reverse_compute_inline_chain(void **st) {
    tir_ctx *ctx = *st;
    tir_schedule *s = sched_new(ctx, tir_def_elementwise_chain(ctx, 7, 5, TIR_F32));
    tir_block_rv c = sched_block(s, "C"), d = sched_block(s, "D");
    SCHED_OK(s, tir_sched_reverse_compute_inline(s, d));
    const tir_block *nb;
    SCHED_OK(s, tir_sched_get_block_node(s, c, &nb));
    assert_string_equal(nb->writes[0].buffer->name, "D");
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_STALE_HANDLE, "reverse_compute_inline",
                      tir_sched_reverse_compute_inline(s, d));
    blk_expect_text(s, reverse_inline_after, "reverse_inline_after");
    sched_check_all(s);
    SCHED_OK(s, tir_sched_reverse_compute_inline(s, c));
    sched_check_all(s);
    tir_sched_destroy(s);
    /* a consumer that also reads an input, after the producer was split */
    s = sched_new(ctx, blk_parse(ctx, blk_two_producers));
    tir_loop_rv p[2];
    SCHED_OK(s,
             tir_sched_split(s, blk_loop(s, "E", 1), 2, (const int64_t[]){2, TIR_SPLIT_INFER}, p));
    SCHED_OK(s, tir_sched_compute_inline(s, sched_block(s, "B")));
    SCHED_OK(s, tir_sched_reverse_compute_inline(s, sched_block(s, "D")));
    sched_check_all(s);
    tir_sched_destroy(s);
    s = sched_new(ctx, tir_def_conv2d_nchw(ctx, 1, 2, 5, 6, 3, 3, 2, 1, 1, TIR_F32));
    tir_sched_destroy(s);
}

static void test_reverse_compute_inline_preconditions(void **st) {
    tir_ctx *ctx = *st;
    tir_schedule *s = sched_new(ctx, tir_def_matmul_bias(ctx, 5, 3, 4, TIR_F32));
    /* 1 */
    {
        tir_block_rv h7 = sched_block(s, "root");
        SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_DIFFERENT_SCOPE, "reverse_compute_inline",
                      tir_sched_reverse_compute_inline(s, h7));
    }
    /* 2 */
    {
        tir_block_rv h8 = sched_block(s, "C");
        SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_BLOCK_NOT_COMPLETE, "reverse_compute_inline",
                      tir_sched_reverse_compute_inline(s, h8));
    }
    /* 6: the producer C is a reduction */
    {
        tir_block_rv h9 = sched_block(s, "D");
        SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_NOT_SINGLE_STORE, "reverse_compute_inline",
                      tir_sched_reverse_compute_inline(s, h9));
    }
    sched_check_all(s);
    tir_sched_destroy(s);
    /* 3 */
    s = sched_new(ctx, blk_parse(ctx, blk_two_stores));
    {
        tir_block_rv h10 = sched_block(s, "B");
        SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_NOT_SINGLE_STORE, "reverse_compute_inline",
                      tir_sched_reverse_compute_inline(s, h10));
    }
    tir_sched_destroy(s);
    /* 4 */
    s = sched_new(ctx, blk_parse(ctx, blk_two_producers));
    {
        tir_block_rv h11 = sched_block(s, "D");
        SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_MULTIPLE_WRITERS, "reverse_compute_inline",
                      tir_sched_reverse_compute_inline(s, h11));
    }
    /* 5 */
    {
        tir_block_rv h12 = sched_block(s, "B");
        SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_NO_PRODUCER, "reverse_compute_inline",
                      tir_sched_reverse_compute_inline(s, h12));
    }
    tir_sched_destroy(s);
    /* 7 */
    s = sched_new(ctx, blk_parse(ctx, blk_two_loads));
    {
        tir_block_rv h13 = sched_block(s, "C");
        SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_NOT_TRIVIAL_ACCESS, "reverse_compute_inline",
                      tir_sched_reverse_compute_inline(s, h13));
    }
    tir_sched_destroy(s);
    /* 8 */
    s = sched_new(ctx, blk_parse(ctx, blk_param_mid));
    {
        tir_block_rv h14 = sched_block(s, "C");
        SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_OUTPUT_BUFFER, "reverse_compute_inline",
                      tir_sched_reverse_compute_inline(s, h14));
    }
    tir_sched_destroy(s);
    /* 9 */
    s = sched_new(ctx, blk_parse(ctx, blk_two_readers));
    {
        tir_block_rv h15 = sched_block(s, "C");
        SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_NOT_STAGE_PIPELINE, "reverse_compute_inline",
                      tir_sched_reverse_compute_inline(s, h15));
    }
    tir_sched_destroy(s);
    /* 10 */
    s = sched_new(ctx, blk_parse(ctx, blk_subdomain));
    {
        tir_block_rv h16 = sched_block(s, "C");
        SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_DOMAIN_MISMATCH, "reverse_compute_inline",
                      tir_sched_reverse_compute_inline(s, h16));
    }
    tir_sched_destroy(s);
}

/* reverse_compute_inline 11: Q's work moves to P's place, past the blocks
 * between them.  P = X (A * 2), W, Q: C = X + 1; W reads C (it saw the old
 * C, 8 of 8 wrong when inlined), W writes C (Q's values were overwritten
 * by W's), P itself reads C at another element (an in-place update whose
 * order inlining changed), P after Q. */
#define RCI_ORDER(name, wreads, wwrites, wbody, preads, pbody)                            \
    BLK_HDR(name, "A: " BLK_BUF ", Z: " BLK_BUF ", C: " BLK_BUF)                          \
    "        X = T.alloc_buffer((6, 5), \"float32\")\n"                                   \
    BLK_ELEM("P", "i", "j", preads, "X[vi, vj]", pbody)                                   \
    BLK_ELEM("W", "i1", "j1", wreads, wwrites, wbody)                                     \
    BLK_ELEM("Q", "i2", "j2", "X[vi, vj]", "C[vi, vj]", "C[vi, vj] = X[vi, vj] + T.float32(1)")
static const char rci_war[] = RCI_ORDER("war", "C[vi, vj]", "Z[vi, vj]",
                                        "Z[vi, vj] = C[vi, vj]", "A[vi, vj]",
                                        "X[vi, vj] = A[vi, vj] * T.float32(2)");
static const char rci_waw[] = RCI_ORDER("waw", "A[vi, vj]", "C[vi, vj]",
                                        "C[vi, vj] = A[vi, vj]", "A[vi, vj]",
                                        "X[vi, vj] = A[vi, vj] * T.float32(2)");
static const char rci_inplace[] = RCI_ORDER("inplace", "A[vi, vj]", "Z[vi, vj]",
                                            "Z[vi, vj] = A[vi, vj]", "C[vi, T.max(vj - 1, 0)]",
                                            "X[vi, vj] = C[vi, T.max(vj - 1, 0)]");
static const char rci_late[] =
    BLK_HDR("late", "A: " BLK_BUF ", C: " BLK_BUF)
    "        X = T.alloc_buffer((6, 5), \"float32\")\n"
    BLK_ELEM("Q", "i2", "j2", "X[vi, vj]", "C[vi, vj]", "C[vi, vj] = X[vi, vj] + T.float32(1)")
    BLK_ELEM("P", "i", "j", "A[vi, vj]", "X[vi, vj]", "X[vi, vj] = A[vi, vj] * T.float32(2)");
/* ... and W touching only other buffers is fine. */
static const char rci_other[] = RCI_ORDER("other", "A[vi, vj]", "Z[vi, vj]",
                                          "Z[vi, vj] = A[vi, vj]", "A[vi, vj]",
                                          "X[vi, vj] = A[vi, vj] * T.float32(2)");

static void test_reverse_compute_inline_order(void **st) {
    tir_ctx *ctx = *st;
    const char *bad[] = {rci_war, rci_waw, rci_inplace, rci_late};
    const char *who[] = {"\"W\"", "\"W\"", "\"P\"", "comes after"};
    for (int t = 0; t < 4; t++) {
        tir_schedule *s = sched_new(ctx, blk_parse(ctx, bad[t]));
        tir_block_rv q = sched_block(s, "Q");
        SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_NOT_STAGE_PIPELINE, "reverse_compute_inline",
                          tir_sched_reverse_compute_inline(s, q));
        assert_non_null(strstr(tir_ctx_error(ctx), who[t]));
        tir_sched_destroy(s);
    }
    tir_schedule *s = sched_new(ctx, blk_parse(ctx, rci_other));
    SCHED_OK(s, tir_sched_reverse_compute_inline(s, sched_block(s, "Q")));
    sched_check_all(s);
    tir_sched_destroy(s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_compute_inline_chain, setup, teardown),
        cmocka_unit_test_setup_teardown(test_compute_inline_odd_shapes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_compute_inline_preconditions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reverse_compute_inline_chain, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reverse_compute_inline_preconditions, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_reverse_compute_inline_order, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
