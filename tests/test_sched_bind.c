/* Tests of bind: the seed's Step 1 (i -> blockIdx.x, j -> threadIdx.x),
 * thread tiles after non-divisible splits, vthread; golden text,
 * structural equality, trace roundtrip, interpreter equivalence; one
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

static const char step1_before[] =
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

static const char step1_after[] =
    "@T.prim_func\n"
    "def matmul(A: T.Buffer((8, 4), \"float32\"), B: T.Buffer((4, 6), \"float32\"), C: T.Buffer((8, 6), \"float32\")):\n"
    "    T.func_attr({\"global_symbol\": \"matmul\", \"tir.noalias\": 1})\n"
    "    for i in T.thread_binding(0, 8, thread=\"blockIdx.x\"):\n"
    "        for j in T.thread_binding(0, 6, thread=\"threadIdx.x\"):\n"
    "            for k in T.serial(4):\n"
    "                with T.block(\"C\"):\n"
    "                    vi, vj, vk = T.axis.remap(\"SSR\", [i, j, k])\n"
    "                    T.reads(A[vi, vk], B[vk, vj])\n"
    "                    T.writes(C[vi, vj])\n"
    "                    with T.init():\n"
    "                        C[vi, vj] = T.float32(0)\n"
    "                    C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]\n";

static void test_bind_step1(void **st) {
    tir_ctx *ctx = *st;
    tir_schedule *s = sched_new(ctx, tir_def_matmul(ctx, 8, 6, 4, TIR_F32));
    sched_expect_text(s, step1_before);
    tir_loop_rv l[16];
    sched_loops(s, "C", l);
    SCHED_OK(s, tir_sched_bind(s, l[0], "blockIdx.x"));
    SCHED_OK(s, tir_sched_bind(s, l[1], "threadIdx.x"));
    assert_int_equal(sched_for(s, l[0])->kind, TIR_FOR_THREAD_BINDING);
    assert_string_equal(sched_for(s, l[0])->thread_tag, "blockIdx.x");
    assert_string_equal(sched_for(s, l[1])->thread_tag, "threadIdx.x");
    assert_int_equal(sched_for(s, l[2])->kind, TIR_FOR_SERIAL);
    sched_expect_text(s, step1_after);
    sched_check_all(s);
    tir_sched_destroy(s);
}

static void test_bind_tiles(void **st) {
    tir_ctx *ctx = *st;
    tir_schedule *s = sched_new(ctx, tir_def_batch_matmul(ctx, 3, 13, 11, 5, TIR_F32));
    tir_loop_rv l[16], i[2], j[2];
    sched_loops(s, "C", l);
    SCHED_OK(s, tir_sched_split(s, l[1], 2, (const int64_t[]){TIR_SPLIT_INFER, 4}, i));
    SCHED_OK(s, tir_sched_split(s, l[2], 2, (const int64_t[]){TIR_SPLIT_INFER, 4}, j));
    SCHED_OK(s, tir_sched_reorder(s, 2, (const tir_loop_rv[]){j[0], i[1]}));
    SCHED_OK(s, tir_sched_bind(s, l[0], "blockIdx.z"));
    SCHED_OK(s, tir_sched_bind(s, i[0], "blockIdx.y"));
    SCHED_OK(s, tir_sched_bind(s, j[0], "blockIdx.x"));
    SCHED_OK(s, tir_sched_bind(s, i[1], "threadIdx.y"));
    SCHED_OK(s, tir_sched_bind(s, j[1], "threadIdx.x"));
    sched_check_all(s);
    tir_sched_destroy(s);
    /* vthread, and every axis name */
    s = sched_new(ctx, tir_def_elementwise_chain(ctx, 6, 5, TIR_F32));
    const char *blocks[3] = {"B", "C", "D"};
    const char *axes[3][2] = {{"vthread.x", "threadIdx.z"},
                              {"blockIdx.z", "vthread.y"},
                              {"vthread.z", "threadIdx.y"}};
    for (int b = 0; b < 3; b++) {
        sched_loops(s, blocks[b], l);
        SCHED_OK(s, tir_sched_bind(s, l[0], axes[b][0]));
        SCHED_OK(s, tir_sched_bind(s, l[1], axes[b][1]));
    }
    sched_check_all(s);
    tir_sched_destroy(s);
}

static void test_bind_preconditions(void **st) {
    tir_ctx *ctx = *st;
    tir_schedule *s = sched_new(ctx, tir_def_matmul(ctx, 8, 6, 4, TIR_F32));
    tir_loop_rv l[16];
    sched_loops(s, "C", l);
    /* 1: a known axis */
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_BAD_THREAD_AXIS, "bind", tir_sched_bind(s, l[0], "threadIdx.w"));
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_BAD_THREAD_AXIS, "bind", tir_sched_bind(s, l[0], ""));
    /* 8: no reduction loop */
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_REDUCTION_LOOP, "bind", tir_sched_bind(s, l[2], "threadIdx.x"));
    /* 2: serial */
    SCHED_OK(s, tir_sched_bind(s, l[0], "threadIdx.x"));
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_LOOP_NOT_SERIAL, "bind", tir_sched_bind(s, l[0], "threadIdx.y"));
    /* 4: no axis twice on one path (enclosing, then enclosed) */
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_AXIS_REBOUND, "bind", tir_sched_bind(s, l[1], "threadIdx.x"));
    sched_check_all(s);
    tir_sched_destroy(s);
    s = sched_new(ctx, tir_def_matmul(ctx, 8, 6, 4, TIR_F32));
    sched_loops(s, "C", l);
    SCHED_OK(s, tir_sched_bind(s, l[1], "blockIdx.y"));
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_AXIS_REBOUND, "bind", tir_sched_bind(s, l[0], "blockIdx.y"));
    tir_sched_destroy(s);
    /* 3: start at 0 */
    s = sched_new(ctx, tf_offset_loops(ctx));
    sched_loops(s, "B", l);
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_LOOP_MIN_NONZERO, "bind", tir_sched_bind(s, l[1], "threadIdx.x"));
    tir_sched_destroy(s);
    /* 5 (W1) */
    s = sched_new(ctx, tf_opaque_stmt(ctx));
    sched_loops(s, "B", l);
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_OPAQUE_USE, "bind", tir_sched_bind(s, l[0], "blockIdx.x"));
    tir_sched_destroy(s);
    s = sched_new(ctx, tf_opaque_in_block(ctx));
    sched_loops(s, "B", l);
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_OPAQUE_USE, "bind", tir_sched_bind(s, l[0], "blockIdx.x"));
    /* ... but j, unused inside the block, may be bound */
    SCHED_OK(s, tir_sched_bind(s, l[1], "threadIdx.x"));
    sched_check_all(s);
    tir_sched_destroy(s);
    /* 6 (W2) */
    s = sched_new(ctx, tf_nonaffine(ctx));
    sched_loops(s, "B", l);
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_NON_AFFINE_BINDING, "bind", tir_sched_bind(s, l[0], "blockIdx.x"));
    tir_sched_destroy(s);
    /* 7 (W3) */
    s = sched_new(ctx, tf_incomplete(ctx));
    sched_loops(s, "B", l);
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_BLOCK_NOT_COMPLETE, "bind", tir_sched_bind(s, l[0], "blockIdx.x"));
    tir_sched_destroy(s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_bind_step1, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bind_tiles, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bind_preconditions, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
