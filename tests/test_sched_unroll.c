/* Tests of unroll: reduction loops and loops of non-constant extent are
 * fine (unrolling keeps the order); golden text, structural equality, trace
 * roundtrip, interpreter equivalence; the one precondition's negative
 * test, checking that nothing changed. */
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

static const char unroll_before[] =
    "@T.prim_func\n"
    "def matmul(A: T.Buffer((3, 7), \"float32\"), B: T.Buffer((7, 5), \"float32\"), C: T.Buffer((3, 5), \"float32\")):\n"
    "    T.func_attr({\"global_symbol\": \"matmul\", \"tir.noalias\": 1})\n"
    "    for i, j, k in T.grid(3, 5, 7):\n"
    "        with T.block(\"C\"):\n"
    "            vi, vj, vk = T.axis.remap(\"SSR\", [i, j, k])\n"
    "            T.reads(A[vi, vk], B[vk, vj])\n"
    "            T.writes(C[vi, vj])\n"
    "            with T.init():\n"
    "                C[vi, vj] = T.float32(0)\n"
    "            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]\n";

static const char unroll_after[] =
    "@T.prim_func\n"
    "def matmul(A: T.Buffer((3, 7), \"float32\"), B: T.Buffer((7, 5), \"float32\"), C: T.Buffer((3, 5), \"float32\")):\n"
    "    T.func_attr({\"global_symbol\": \"matmul\", \"tir.noalias\": 1})\n"
    "    for i, j, k_0 in T.grid(3, 5, 2):\n"
    "        for k_1 in T.unroll(4):\n"
    "            with T.block(\"C\"):\n"
    "                vi, vj = T.axis.remap(\"SS\", [i, j])\n"
    "                vk = T.axis.reduce(7, k_0 * 4 + k_1)\n"
    "                T.where(k_0 * 4 + k_1 < 7)\n"
    "                T.reads(A[vi, vk], B[vk, vj])\n"
    "                T.writes(C[vi, vj])\n"
    "                with T.init():\n"
    "                    C[vi, vj] = T.float32(0)\n"
    "                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]\n";

static void test_unroll(void **st) {
    tir_ctx *ctx = *st;
    tir_schedule *s = sched_new(ctx, tir_def_matmul(ctx, 3, 5, 7, TIR_F32));
    sched_expect_text(s, unroll_before);
    tir_loop_rv l[16], p[2];
    sched_loops(s, "C", l);
    SCHED_OK(s, tir_sched_split(s, l[2], 2, (const int64_t[]){TIR_SPLIT_INFER, 4}, p));
    SCHED_OK(s, tir_sched_unroll(s, p[1]));
    assert_int_equal(sched_for(s, p[1])->kind, TIR_FOR_UNROLLED);
    sched_expect_text(s, unroll_after);
    sched_check_all(s);
    tir_sched_destroy(s);
    /* non-constant extent, non-zero start, opaque statements: all fine */
    const tir_prim_func *(*fs[3])(tir_ctx *) = {tf_triangular, tf_offset_loops, tf_opaque_stmt};
    for (int i = 0; i < 3; i++) {
        s = sched_new(ctx, fs[i](ctx));
        sched_loops(s, "B", l);
        SCHED_OK(s, tir_sched_unroll(s, l[1]));
        SCHED_OK(s, tir_sched_unroll(s, l[0]));
        sched_check_all(s);
        tir_sched_destroy(s);
    }
}

static void test_unroll_preconditions(void **st) {
    tir_ctx *ctx = *st;
    tir_schedule *s = sched_new(ctx, tir_def_matmul(ctx, 3, 5, 7, TIR_F32));
    tir_loop_rv l[16];
    sched_loops(s, "C", l);
    /* 1: serial (bound, already unrolled) */
    SCHED_OK(s, tir_sched_bind(s, l[0], "blockIdx.x"));
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_LOOP_NOT_SERIAL, "unroll", tir_sched_unroll(s, l[0]));
    SCHED_OK(s, tir_sched_unroll(s, l[2]));
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_LOOP_NOT_SERIAL, "unroll", tir_sched_unroll(s, l[2]));
    sched_check_all(s);
    tir_sched_destroy(s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_unroll, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unroll_preconditions, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
