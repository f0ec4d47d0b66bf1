/* Tests of vectorize: innermost loops, after a non-divisible split;
 * golden text, structural equality, trace roundtrip, interpreter
 * equivalence; one negative test per precondition, each checking that
 * nothing changed. */
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

static const char vectorize_before[] =
    "@T.prim_func\n"
    "def elementwise_chain(A: T.Buffer((3, 8), \"float32\"), D: T.Buffer((3, 8), \"float32\")):\n"
    "    T.func_attr({\"global_symbol\": \"elementwise_chain\", \"tir.noalias\": 1})\n"
    "    with T.block(\"root\"):\n"
    "        B = T.alloc_buffer((3, 8), \"float32\")\n"
    "        C = T.alloc_buffer((3, 8), \"float32\")\n"
    "        for i, j in T.grid(3, 8):\n"
    "            with T.block(\"B\"):\n"
    "                vi, vj = T.axis.remap(\"SS\", [i, j])\n"
    "                T.reads(A[vi, vj])\n"
    "                T.writes(B[vi, vj])\n"
    "                B[vi, vj] = A[vi, vj] * T.float32(2)\n"
    "        for i_1, j_1 in T.grid(3, 8):\n"
    "            with T.block(\"C\"):\n"
    "                vi_1, vj_1 = T.axis.remap(\"SS\", [i_1, j_1])\n"
    "                T.reads(B[vi_1, vj_1])\n"
    "                T.writes(C[vi_1, vj_1])\n"
    "                C[vi_1, vj_1] = B[vi_1, vj_1] + T.float32(1)\n"
    "        for i_2, j_2 in T.grid(3, 8):\n"
    "            with T.block(\"D\"):\n"
    "                vi_2, vj_2 = T.axis.remap(\"SS\", [i_2, j_2])\n"
    "                T.reads(C[vi_2, vj_2])\n"
    "                T.writes(D[vi_2, vj_2])\n"
    "                D[vi_2, vj_2] = T.max(C[vi_2, vj_2], T.float32(0))\n";

static const char vectorize_after[] =
    "@T.prim_func\n"
    "def elementwise_chain(A: T.Buffer((3, 8), \"float32\"), D: T.Buffer((3, 8), \"float32\")):\n"
    "    T.func_attr({\"global_symbol\": \"elementwise_chain\", \"tir.noalias\": 1})\n"
    "    with T.block(\"root\"):\n"
    "        B = T.alloc_buffer((3, 8), \"float32\")\n"
    "        C = T.alloc_buffer((3, 8), \"float32\")\n"
    "        for i in T.serial(3):\n"
    "            for j in T.vectorized(8):\n"
    "                with T.block(\"B\"):\n"
    "                    vi, vj = T.axis.remap(\"SS\", [i, j])\n"
    "                    T.reads(A[vi, vj])\n"
    "                    T.writes(B[vi, vj])\n"
    "                    B[vi, vj] = A[vi, vj] * T.float32(2)\n"
    "        for i_1, j_1 in T.grid(3, 8):\n"
    "            with T.block(\"C\"):\n"
    "                vi_1, vj_1 = T.axis.remap(\"SS\", [i_1, j_1])\n"
    "                T.reads(B[vi_1, vj_1])\n"
    "                T.writes(C[vi_1, vj_1])\n"
    "                C[vi_1, vj_1] = B[vi_1, vj_1] + T.float32(1)\n"
    "        for i_2, j_2 in T.grid(3, 8):\n"
    "            with T.block(\"D\"):\n"
    "                vi_2, vj_2 = T.axis.remap(\"SS\", [i_2, j_2])\n"
    "                T.reads(C[vi_2, vj_2])\n"
    "                T.writes(D[vi_2, vj_2])\n"
    "                D[vi_2, vj_2] = T.max(C[vi_2, vj_2], T.float32(0))\n";

static void test_vectorize(void **st) {
    tir_ctx *ctx = *st;
    tir_schedule *s = sched_new(ctx, tir_def_elementwise_chain(ctx, 3, 8, TIR_F32));
    sched_expect_text(s, vectorize_before);
    tir_loop_rv l[16], p[2];
    sched_loops(s, "B", l);
    SCHED_OK(s, tir_sched_vectorize(s, l[1]));
    assert_int_equal(sched_for(s, l[1])->kind, TIR_FOR_VECTORIZED);
    sched_expect_text(s, vectorize_after);
    sched_check_all(s);
    /* after a non-divisible split; a spatial loop of a reduction block */
    sched_loops(s, "C", l);
    SCHED_OK(s, tir_sched_split(s, l[1], 2, (const int64_t[]){TIR_SPLIT_INFER, 3}, p));
    SCHED_OK(s, tir_sched_vectorize(s, p[1]));
    sched_check_all(s);
    tir_sched_destroy(s);
    s = sched_new(ctx, tir_def_matmul(ctx, 5, 7, 3, TIR_F32));
    sched_loops(s, "C", l);
    SCHED_OK(s, tir_sched_vectorize(s, l[1]));
    sched_check_all(s);
    tir_sched_destroy(s);
}

static void test_vectorize_preconditions(void **st) {
    tir_ctx *ctx = *st;
    tir_schedule *s = sched_new(ctx, tir_def_matmul(ctx, 5, 7, 3, TIR_F32));
    tir_loop_rv l[16];
    sched_loops(s, "C", l);
    /* 7: no reduction loop */
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_REDUCTION_LOOP, "vectorize", tir_sched_vectorize(s, l[2]));
    /* 1: serial */
    SCHED_OK(s, tir_sched_parallel(s, l[0]));
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_LOOP_NOT_SERIAL, "vectorize", tir_sched_vectorize(s, l[0]));
    sched_check_all(s);
    tir_sched_destroy(s);
    /* 2: start at 0 */
    s = sched_new(ctx, tf_offset_loops(ctx));
    sched_loops(s, "B", l);
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_LOOP_MIN_NONZERO, "vectorize", tir_sched_vectorize(s, l[1]));
    tir_sched_destroy(s);
    /* 3: constant extent */
    s = sched_new(ctx, tf_triangular(ctx));
    sched_loops(s, "B", l);
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_NON_CONST_EXTENT, "vectorize", tir_sched_vectorize(s, l[1]));
    tir_sched_destroy(s);
    /* 4 (W1) */
    s = sched_new(ctx, tf_opaque_stmt(ctx));
    sched_loops(s, "B", l);
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_OPAQUE_USE, "vectorize", tir_sched_vectorize(s, l[1]));
    tir_sched_destroy(s);
    /* 5 (W2) */
    s = sched_new(ctx, tf_nonaffine(ctx));
    sched_loops(s, "B", l);
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_NON_AFFINE_BINDING, "vectorize", tir_sched_vectorize(s, l[0]));
    tir_sched_destroy(s);
    /* 6 (W3) */
    s = sched_new(ctx, tf_incomplete(ctx));
    sched_loops(s, "B", l);
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_BLOCK_NOT_COMPLETE, "vectorize", tir_sched_vectorize(s, l[1]));
    tir_sched_destroy(s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_vectorize, setup, teardown),
        cmocka_unit_test_setup_teardown(test_vectorize_preconditions, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
