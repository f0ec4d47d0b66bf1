/* Tests of storage_align: padded strides (stride[axis] % factor ==
 * offset, the smallest such value) on 2-D and 4-D allocated buffers, the
 * "buffer_dim_align" record (a later request for an axis replacing the
 * earlier one, requests on two axes combining), golden text, trace
 * roundtrip, interpreter equivalence with the padded layout; one negative
 * test per precondition, each checking that nothing changed. */
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
    "        B = T.alloc_buffer((5, 3), \"float32\", strides=(9, 1))\n"
    "        C = T.alloc_buffer((5, 3), \"float32\")\n"
    "        for i, j in T.grid(5, 3):\n"
    "            with T.block(\"B\"):\n"
    "                vi, vj = T.axis.remap(\"SS\", [i, j])\n"
    "                T.reads(A[vi, vj])\n"
    "                T.writes(B[vi, vj])\n"
    "                T.block_attr({\"buffer_dim_align\": [0, 0, 8, 1]})\n"
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

static const tir_buffer *written(tir_schedule *s, const char *block) {
    const tir_block *b = NULL;
    SCHED_OK(s, tir_sched_get_block_node(s, sched_block(s, block), &b));
    return b->writes[0].buffer;
}

static int64_t stride(const tir_buffer *b, int d) {
    int64_t v = -1;
    assert_non_null(b->strides);
    assert_true(tir_expr_const_int(b->strides[d], &v));
    return v;
}

static void test_storage_align(void **st) {
    tir_ctx *ctx = *st;
    tir_schedule *s = sched_new(ctx, tir_def_elementwise_chain(ctx, 5, 3, TIR_F32));
    tir_block_rv b = sched_block(s, "B");
    SCHED_OK(s, tir_sched_storage_align(s, b, 0, 0, 8, 1));
    sched_expect_text(s, chain_after);
    sched_check_all(s);
    /* already aligned: 3 % 3 == 0, the stride stays */
    SCHED_OK(s, tir_sched_storage_align(s, b, 0, 0, 3, 0));
    assert_int_equal(stride(written(s, "B"), 0), 3);
    sched_check_all(s);
    tir_sched_destroy(s);

    /* 4-D: the padded buffer of a conv2d, two axes aligned; the outer
       strides grow with the padded inner ones */
    s = sched_new(ctx, tir_def_conv2d_nchw(ctx, 2, 3, 7, 5, 2, 3, 3, 1, 1, TIR_F32));
    tir_block_rv pad = sched_block(s, "pad");
    const tir_buffer *p0 = written(s, "pad");
    int64_t h = 0, w = 0;
    assert_true(tir_expr_const_int(p0->shape[2], &h));
    assert_true(tir_expr_const_int(p0->shape[3], &w));
    SCHED_OK(s, tir_sched_storage_align(s, pad, 0, 2, 16, 3));
    SCHED_OK(s, tir_sched_storage_align(s, pad, 0, 1, 32, 0));
    const tir_buffer *p = written(s, "pad");
    assert_int_equal(stride(p, 3), 1);
    assert_int_equal(stride(p, 2) % 16, 3);
    assert_true(stride(p, 2) >= w && stride(p, 2) < w + 16);
    assert_int_equal(stride(p, 1) % 32, 0);
    assert_true(stride(p, 1) >= stride(p, 2) * h && stride(p, 1) < stride(p, 2) * h + 32);
    int64_t c = 0;
    assert_true(tir_expr_const_int(p->shape[1], &c));
    assert_int_equal(stride(p, 0), stride(p, 1) * c);
    sched_check_all(s);
    /* a new request for axis 2 replaces the old one */
    SCHED_OK(s, tir_sched_storage_align(s, pad, 0, 2, 4, 1));
    p = written(s, "pad");
    assert_int_equal(stride(p, 2) % 4, 1);
    const tir_block *pb = NULL;
    SCHED_OK(s, tir_sched_get_block_node(s, pad, &pb));
    const tir_annot *a = tir_annots_find(pb->nannots, pb->annots, "buffer_dim_align");
    assert_non_null(a);
    assert_int_equal(a->nints, 8);
    assert_int_equal(stride(p, 1) % 32, 0);
    sched_check_all(s);
    tir_sched_destroy(s);

    /* random factors and offsets on the chain's second buffer */
    uint64_t rng = 7;
    for (int t = 0; t < 20; t++) {
        s = sched_new(ctx, tir_def_elementwise_chain(ctx, 3 + t % 5, 1 + t % 7, TIR_F32));
        int64_t f = 1 + (int64_t)(sched_rand(&rng) % 33);
        int64_t o = (int64_t)(sched_rand(&rng) % (uint64_t)f);
        SCHED_OK(s, tir_sched_storage_align(s, sched_block(s, "C"), 0, 0, f, o));
        assert_int_equal(stride(written(s, "C"), 0) % f, o);
        sched_check_all(s);
        tir_sched_destroy(s);
    }
}

static void test_storage_align_preconditions(void **st) {
    tir_ctx *ctx = *st;
    tir_schedule *s = sched_new(ctx, tir_def_elementwise_chain(ctx, 4, 4, TIR_F32));
    tir_block_rv b = sched_block(s, "B"), d = sched_block(s, "D");
    /* 1: the buffer index */
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_INDEX_OUT_OF_RANGE, "storage_align",
                      tir_sched_storage_align(s, b, 1, 0, 8, 1));
    /* 2: an allocated buffer, not a parameter */
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_OUTPUT_BUFFER, "storage_align",
                      tir_sched_storage_align(s, d, 0, 0, 8, 1));
    /* 3: the axis */
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_BAD_AXIS, "storage_align",
                      tir_sched_storage_align(s, b, 0, 2, 8, 1));
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_BAD_AXIS, "storage_align",
                      tir_sched_storage_align(s, b, 0, -1, 8, 1));
    /* 4: factor and offset */
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_BAD_ALIGNMENT, "storage_align",
                      tir_sched_storage_align(s, b, 0, 0, 0, 0));
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_BAD_ALIGNMENT, "storage_align",
                      tir_sched_storage_align(s, b, 0, 0, 8, 8));
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_BAD_ALIGNMENT, "storage_align",
                      tir_sched_storage_align(s, b, 0, 0, 8, -1));
    tir_sched_destroy(s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_storage_align, setup, teardown),
        cmocka_unit_test_setup_teardown(test_storage_align_preconditions, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
