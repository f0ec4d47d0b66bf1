/* Tests of set_scope: allocated buffers moved to shared and local memory
 * (allocation, regions, loads and stores all follow), golden text, trace
 * roundtrip, interpreter equivalence; one negative test per precondition,
 * each checking that nothing changed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "sched_check.h"

static int setup(void **st) {
    *st = tir_ctx_create();
    return *st ? 0 : -1;
}
static int teardown(void **st) {
    tir_ctx_destroy(*st);
    return 0;
}

static const char chain_after[] =
    "@T.prim_func\n"
    "def elementwise_chain(A: T.Buffer((5, 3), \"float32\"), D: T.Buffer((5, 3), \"float32\")):\n"
    "    T.func_attr({\"global_symbol\": \"elementwise_chain\", \"tir.noalias\": 1})\n"
    "    with T.block(\"root\"):\n"
    "        B = T.alloc_buffer((5, 3), \"float32\", scope=\"shared\")\n"
    "        C = T.alloc_buffer((5, 3), \"float32\", scope=\"local\")\n"
    "        for i, j in T.grid(5, 3):\n"
    "            with T.block(\"B\"):\n"
    "                vi, vj = T.axis.remap(\"SS\", [i, j])\n"
    "                T.reads(A[vi, vj])\n"
    "                T.writes(B[vi, vj])\n"
    "                B[vi, vj] = A[vi, vj] * T.float32(2)\n"
    "        for i_1, j_1 in T.grid(5, 3):\n"
    "            with T.block(\"C\"):\n"
    "                vi_1, vj_1 = T.axis.remap(\"SS\", [i_1, j_1])\n"
    "                T.reads(B[vi_1, vj_1])\n"
    "                T.writes(C[vi_1, vj_1])\n"
    "                C[vi_1, vj_1] = B[vi_1, vj_1] + T.float32(1)\n"
    "        for i_2, j_2 in T.grid(5, 3):\n"
    "            with T.block(\"D\"):\n"
    "                vi_2, vj_2 = T.axis.remap(\"SS\", [i_2, j_2])\n"
    "                T.reads(C[vi_2, vj_2])\n"
    "                T.writes(D[vi_2, vj_2])\n"
    "                D[vi_2, vj_2] = T.max(C[vi_2, vj_2], T.float32(0))\n";

/* Every use names the one new buffer. */
typedef struct {
    tir_visitor v;
    const char *name;
    const tir_buffer *seen;
    bool mixed;
} same_state;

static bool same_pre(tir_visitor *v, const tir_node *n) {
    same_state *s = (same_state *)v;
    const tir_buffer *b = tir_as_tir_buffer(n);
    if (b && strcmp(b->name, s->name) == 0) {
        if (s->seen && s->seen != b) s->mixed = true;
        s->seen = b;
    }
    return true;
}

static void test_set_scope(void **st) {
    tir_ctx *ctx = *st;
    tir_schedule *s = sched_new(ctx, tir_def_elementwise_chain(ctx, 5, 3, TIR_F32));
    tir_block_rv b = sched_block(s, "B"), c = sched_block(s, "C");
    SCHED_OK(s, tir_sched_set_scope(s, b, 0, "shared"));
    SCHED_OK(s, tir_sched_set_scope(s, c, 0, "local"));
    sched_expect_text(s, chain_after);
    same_state ss = {{same_pre, NULL, NULL}, "B", NULL, false};
    tir_visit(&ss.v, tir_sched_func(s));
    assert_non_null(ss.seen);
    assert_false(ss.mixed);
    assert_int_equal(ss.seen->scope, TIR_SCOPE_SHARED);
    sched_check_all(s);
    /* the same scope again changes nothing but is traced */
    const tir_prim_func *f = tir_sched_func(s);
    int n = tir_sched_trace_len(s);
    SCHED_OK(s, tir_sched_set_scope(s, c, 0, "local"));
    assert_ptr_equal(tir_sched_func(s), f);
    assert_int_equal(tir_sched_trace_len(s), n + 1);
    /* and back to global */
    SCHED_OK(s, tir_sched_set_scope(s, b, 0, "global"));
    SCHED_OK(s, tir_sched_set_scope(s, c, 0, "global"));
    assert_true(tir_struct_equal(tir_sched_func(s), tir_sched_orig_func(s)));
    sched_check_all(s);
    tir_sched_destroy(s);
    /* conv2d's padded input at odd shapes */
    s = sched_new(ctx, tir_def_conv2d_nchw(ctx, 1, 3, 7, 5, 2, 3, 3, 2, 1, TIR_F32));
    SCHED_OK(s, tir_sched_set_scope(s, sched_block(s, "pad"), 0, "shared"));
    sched_check_all(s);
    tir_sched_destroy(s);
}

static void test_set_scope_preconditions(void **st) {
    tir_ctx *ctx = *st;
    tir_schedule *s = sched_new(ctx, tir_def_elementwise_chain(ctx, 4, 4, TIR_F32));
    tir_block_rv b = sched_block(s, "B"), d = sched_block(s, "D");
    /* 1: the buffer index */
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_INDEX_OUT_OF_RANGE, "set_scope",
                      tir_sched_set_scope(s, b, 1, "shared"));
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_INDEX_OUT_OF_RANGE, "set_scope",
                      tir_sched_set_scope(s, b, -1, "shared"));
    /* 2: the scope name */
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_UNKNOWN_SCOPE, "set_scope",
                      tir_sched_set_scope(s, b, 0, "warp"));
    assert_non_null(strstr(tir_ctx_error(tir_sched_ctx(s)), "\"warp\""));
    /* ... and not a fragment scope, which the parser knows: a 4x4 float32
       frag.a buffer would hold no whole tile of a type frag.a takes */
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_UNKNOWN_SCOPE, "set_scope",
                      tir_sched_set_scope(s, b, 0, "frag.a"));
    assert_non_null(strstr(tir_ctx_error(tir_sched_ctx(s)), "\"frag.a\""));
    assert_non_null(strstr(tir_ctx_error(tir_sched_ctx(s)), "block \"B\""));
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_UNKNOWN_SCOPE, "set_scope",
                      tir_sched_set_scope(s, b, 0, "frag.acc"));
    /* 3: a parameter keeps its scope */
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_OUTPUT_BUFFER, "set_scope",
                      tir_sched_set_scope(s, d, 0, "shared"));
    SCHED_EXPECT_FAIL(s, TIR_ERR_INVALID_ARG, "set_scope", tir_sched_set_scope(s, b, 0, NULL));
    tir_sched_destroy(s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_set_scope, setup, teardown),
        cmocka_unit_test_setup_teardown(test_set_scope_preconditions, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
