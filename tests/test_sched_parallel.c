/* Tests of parallel: outer spatial loops; golden text, structural
 * equality, trace roundtrip, interpreter equivalence; one negative test
 * per precondition, each checking that nothing changed. */
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

static const char parallel_before[] =
    "@T.prim_func\n"
    "def matmul(A: T.Buffer((5, 3), \"float32\"), B: T.Buffer((3, 7), \"float32\"), C: T.Buffer((5, 7), \"float32\")):\n"
    "    T.func_attr({\"global_symbol\": \"matmul\", \"tir.noalias\": 1})\n"
    "    for i, j, k in T.grid(5, 7, 3):\n"
    "        with T.block(\"C\"):\n"
    "            vi, vj, vk = T.axis.remap(\"SSR\", [i, j, k])\n"
    "            T.reads(A[vi, vk], B[vk, vj])\n"
    "            T.writes(C[vi, vj])\n"
    "            with T.init():\n"
    "                C[vi, vj] = T.float32(0)\n"
    "            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]\n";

static const char parallel_after[] =
    "@T.prim_func\n"
    "def matmul(A: T.Buffer((5, 3), \"float32\"), B: T.Buffer((3, 7), \"float32\"), C: T.Buffer((5, 7), \"float32\")):\n"
    "    T.func_attr({\"global_symbol\": \"matmul\", \"tir.noalias\": 1})\n"
    "    for i_j_fused in T.parallel(35):\n"
    "        for k in T.serial(3):\n"
    "            with T.block(\"C\"):\n"
    "                vi = T.axis.spatial(5, i_j_fused // 7)\n"
    "                vj = T.axis.spatial(7, i_j_fused % 7)\n"
    "                vk = T.axis.remap(\"R\", [k])\n"
    "                T.reads(A[vi, vk], B[vk, vj])\n"
    "                T.writes(C[vi, vj])\n"
    "                with T.init():\n"
    "                    C[vi, vj] = T.float32(0)\n"
    "                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]\n";

static void test_parallel(void **st) {
    tir_ctx *ctx = *st;
    tir_schedule *s = sched_new(ctx, tir_def_matmul(ctx, 5, 7, 3, TIR_F32));
    sched_expect_text(s, parallel_before);
    tir_loop_rv l[16], f;
    sched_loops(s, "C", l);
    SCHED_OK(s, tir_sched_fuse(s, 2, l, &f));
    SCHED_OK(s, tir_sched_parallel(s, f));
    assert_int_equal(sched_for(s, f)->kind, TIR_FOR_PARALLEL);
    sched_expect_text(s, parallel_after);
    sched_check_all(s);
    tir_sched_destroy(s);
    s = sched_new(ctx, tir_def_conv2d_nchw(ctx, 2, 2, 5, 5, 3, 3, 3, 2, 1, TIR_F32));
    sched_loops(s, "pad", l);
    SCHED_OK(s, tir_sched_parallel(s, l[1]));
    sched_loops(s, "conv", l);
    SCHED_OK(s, tir_sched_parallel(s, l[0]));
    SCHED_OK(s, tir_sched_parallel(s, l[2]));
    sched_check_all(s);
    tir_sched_destroy(s);
}

static void test_parallel_preconditions(void **st) {
    tir_ctx *ctx = *st;
    tir_schedule *s = sched_new(ctx, tir_def_matmul(ctx, 5, 7, 3, TIR_F32));
    tir_loop_rv l[16];
    sched_loops(s, "C", l);
    /* 6: no reduction loop */
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_REDUCTION_LOOP, "parallel", tir_sched_parallel(s, l[2]));
    /* 1: serial */
    SCHED_OK(s, tir_sched_vectorize(s, l[1]));
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_LOOP_NOT_SERIAL, "parallel", tir_sched_parallel(s, l[1]));
    sched_check_all(s);
    tir_sched_destroy(s);
    /* 2: start at 0 */
    s = sched_new(ctx, tf_offset_loops(ctx));
    sched_loops(s, "B", l);
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_LOOP_MIN_NONZERO, "parallel", tir_sched_parallel(s, l[0]));
    tir_sched_destroy(s);
    /* 3 (W1) */
    s = sched_new(ctx, tf_opaque_stmt(ctx));
    sched_loops(s, "B", l);
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_OPAQUE_USE, "parallel", tir_sched_parallel(s, l[0]));
    tir_sched_destroy(s);
    /* 4 (W2) */
    s = sched_new(ctx, tf_nonaffine(ctx));
    sched_loops(s, "B", l);
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_NON_AFFINE_BINDING, "parallel", tir_sched_parallel(s, l[0]));
    tir_sched_destroy(s);
    /* 5 (W3) */
    s = sched_new(ctx, tf_incomplete(ctx));
    sched_loops(s, "B", l);
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_BLOCK_NOT_COMPLETE, "parallel", tir_sched_parallel(s, l[0]));
    tir_sched_destroy(s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_parallel, setup, teardown),
        cmocka_unit_test_setup_teardown(test_parallel_preconditions, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
