/* Tests of fuse: two and three loops, after a non-divisible split,
 * spatial with reduction loops; golden text, structural equality, trace
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

static const char chain_before[] =
    "@T.prim_func\n"
    "def elementwise_chain(A: T.Buffer((5, 7), \"float32\"), D: T.Buffer((5, 7), \"float32\")):\n"
    "    T.func_attr({\"global_symbol\": \"elementwise_chain\", \"tir.noalias\": 1})\n"
    "    with T.block(\"root\"):\n"
    "        B = T.alloc_buffer((5, 7), \"float32\")\n"
    "        C = T.alloc_buffer((5, 7), \"float32\")\n"
    "        for i, j in T.grid(5, 7):\n"
    "            with T.block(\"B\"):\n"
    "                vi, vj = T.axis.remap(\"SS\", [i, j])\n"
    "                T.reads(A[vi, vj])\n"
    "                T.writes(B[vi, vj])\n"
    "                B[vi, vj] = A[vi, vj] * T.float32(2)\n"
    "        for i_1, j_1 in T.grid(5, 7):\n"
    "            with T.block(\"C\"):\n"
    "                vi_1, vj_1 = T.axis.remap(\"SS\", [i_1, j_1])\n"
    "                T.reads(B[vi_1, vj_1])\n"
    "                T.writes(C[vi_1, vj_1])\n"
    "                C[vi_1, vj_1] = B[vi_1, vj_1] + T.float32(1)\n"
    "        for i_2, j_2 in T.grid(5, 7):\n"
    "            with T.block(\"D\"):\n"
    "                vi_2, vj_2 = T.axis.remap(\"SS\", [i_2, j_2])\n"
    "                T.reads(C[vi_2, vj_2])\n"
    "                T.writes(D[vi_2, vj_2])\n"
    "                D[vi_2, vj_2] = T.max(C[vi_2, vj_2], T.float32(0))\n";
static const char fuse_ij_after[] =
    "@T.prim_func\n"
    "def elementwise_chain(A: T.Buffer((5, 7), \"float32\"), D: T.Buffer((5, 7), \"float32\")):\n"
    "    T.func_attr({\"global_symbol\": \"elementwise_chain\", \"tir.noalias\": 1})\n"
    "    with T.block(\"root\"):\n"
    "        B = T.alloc_buffer((5, 7), \"float32\")\n"
    "        C = T.alloc_buffer((5, 7), \"float32\")\n"
    "        for i_j_fused in T.serial(35):\n"
    "            with T.block(\"B\"):\n"
    "                vi = T.axis.spatial(5, i_j_fused // 7)\n"
    "                vj = T.axis.spatial(7, i_j_fused % 7)\n"
    "                T.reads(A[vi, vj])\n"
    "                T.writes(B[vi, vj])\n"
    "                B[vi, vj] = A[vi, vj] * T.float32(2)\n"
    "        for i, j in T.grid(5, 7):\n"
    "            with T.block(\"C\"):\n"
    "                vi_1, vj_1 = T.axis.remap(\"SS\", [i, j])\n"
    "                T.reads(B[vi_1, vj_1])\n"
    "                T.writes(C[vi_1, vj_1])\n"
    "                C[vi_1, vj_1] = B[vi_1, vj_1] + T.float32(1)\n"
    "        for i_1, j_1 in T.grid(5, 7):\n"
    "            with T.block(\"D\"):\n"
    "                vi_2, vj_2 = T.axis.remap(\"SS\", [i_1, j_1])\n"
    "                T.reads(C[vi_2, vj_2])\n"
    "                T.writes(D[vi_2, vj_2])\n"
    "                D[vi_2, vj_2] = T.max(C[vi_2, vj_2], T.float32(0))\n";

static void test_fuse_two(void **st) {
    tir_ctx *ctx = *st;
    tir_schedule *s = sched_new(ctx, tir_def_elementwise_chain(ctx, 5, 7, TIR_F32));
    sched_expect_text(s, chain_before);
    tir_loop_rv l[16], f;
    sched_loops(s, "B", l);
    char want[128];
    snprintf(want, sizeof want, "%s_%s_fused", sched_for(s, l[0])->var->name,
             sched_for(s, l[1])->var->name);
    SCHED_OK(s, tir_sched_fuse(s, 2, l, &f));
    assert_int_equal(sched_extent(s, f), 35);
    assert_string_equal(sched_for(s, f)->var->name, want);
    /* Both old loops are gone. */
    bool stale;
    SCHED_OK(s, tir_sched_handle_info(s, l[0].id, NULL, &stale, NULL));
    assert_true(stale);
    SCHED_OK(s, tir_sched_handle_info(s, l[1].id, NULL, &stale, NULL));
    assert_true(stale);
    sched_expect_text(s, fuse_ij_after);
    sched_check_all(s);
    tir_sched_destroy(s);
}

static void test_fuse_three_and_reduction(void **st) {
    tir_ctx *ctx = *st;
    tir_schedule *s = sched_new(ctx, tir_def_batch_matmul(ctx, 3, 5, 7, 4, TIR_F32));
    tir_loop_rv l[16], f;
    assert_int_equal(sched_loops(s, "C", l), 4);
    SCHED_OK(s, tir_sched_fuse(s, 3, l, &f));
    assert_int_equal(sched_extent(s, f), 105);
    sched_check_all(s);
    tir_sched_destroy(s);

    /* A fused loop feeding both a spatial and a reduce iterator. */
    s = sched_new(ctx, tir_def_matmul(ctx, 5, 3, 7, TIR_F32));
    sched_loops(s, "C", l);
    SCHED_OK(s, tir_sched_fuse(s, 2, (const tir_loop_rv[]){l[1], l[2]}, &f));
    assert_int_equal(sched_extent(s, f), 21);
    sched_check_all(s);
    tir_sched_destroy(s);
}

static void test_fuse_after_split(void **st) {
    tir_ctx *ctx = *st;
    tir_schedule *s = sched_new(ctx, tir_def_elementwise_chain(ctx, 13, 7, TIR_F32));
    tir_loop_rv l[16], p[2], f, q[2];
    sched_loops(s, "C", l);
    SCHED_OK(s, tir_sched_split(s, l[0], 2, (const int64_t[]){TIR_SPLIT_INFER, 4}, p));
    SCHED_OK(s, tir_sched_fuse(s, 2, (const tir_loop_rv[]){p[1], l[1]}, &f));
    assert_int_equal(sched_extent(s, f), 28);
    /* and split the fused loop again, non-divisibly */
    SCHED_OK(s, tir_sched_split(s, f, 2, (const int64_t[]){TIR_SPLIT_INFER, 3}, q));
    sched_check_all(s);
    tir_sched_destroy(s);
}

static void test_fuse_preconditions(void **st) {
    tir_ctx *ctx = *st;
    tir_schedule *s = sched_new(ctx, tir_def_batch_matmul(ctx, 2, 3, 4, 5, TIR_F32));
    tir_loop_rv l[16], f;
    sched_loops(s, "C", l);
    /* 1: two loops at least */
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_LOOP_COUNT, "fuse", tir_sched_fuse(s, 1, l, &f));
    /* 2: no duplicates */
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_DUPLICATE_LOOP, "fuse",
                      tir_sched_fuse(s, 2, (const tir_loop_rv[]){l[1], l[1]}, &f));
    /* 3: directly nested, outermost first */
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_NOT_CONSECUTIVE, "fuse",
                      tir_sched_fuse(s, 2, (const tir_loop_rv[]){l[0], l[2]}, &f));
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_NOT_CONSECUTIVE, "fuse",
                      tir_sched_fuse(s, 2, (const tir_loop_rv[]){l[1], l[0]}, &f));
    /* 4: serial */
    SCHED_OK(s, tir_sched_unroll(s, l[3]));
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_LOOP_NOT_SERIAL, "fuse",
                      tir_sched_fuse(s, 2, (const tir_loop_rv[]){l[2], l[3]}, &f));
    /* 5: no annotations */
    SCHED_OK(s, tir_sched_annotate_loop_str(s, l[1], "k", "v"));
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_LOOP_ANNOTATED, "fuse",
                      tir_sched_fuse(s, 2, (const tir_loop_rv[]){l[0], l[1]}, &f));
    sched_check_all(s);
    tir_sched_destroy(s);

    /* 6: start at 0 */
    s = sched_new(ctx, tf_offset_loops(ctx));
    sched_loops(s, "B", l);
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_LOOP_MIN_NONZERO, "fuse", tir_sched_fuse(s, 2, l, &f));
    tir_sched_destroy(s);
    /* 7: independent extents */
    s = sched_new(ctx, tf_triangular(ctx));
    sched_loops(s, "B", l);
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_DEPENDENT_DOMAIN, "fuse", tir_sched_fuse(s, 2, l, &f));
    tir_sched_destroy(s);
    /* 8: one dtype */
    s = sched_new(ctx, tf_mixed_dtypes(ctx));
    sched_loops(s, "B", l);
    SCHED_EXPECT_FAIL(s, TIR_ERR_TYPE, "fuse", tir_sched_fuse(s, 2, l, &f));
    tir_sched_destroy(s);
}

static void test_fuse_odd_shapes(void **st) {
    tir_ctx *ctx = *st;
    tir_schedule *s = sched_new(ctx, tir_def_conv2d_nchw(ctx, 2, 3, 5, 7, 3, 3, 2, 1, 1, TIR_F32));
    tir_loop_rv l[16], f, g;
    int n = sched_loops(s, "conv", l);
    assert_int_equal(n, 7);
    SCHED_OK(s, tir_sched_fuse(s, 4, l, &f));      /* n, o, y, x */
    SCHED_OK(s, tir_sched_fuse(s, 3, l + 4, &g)); /* c, ry, rx */
    n = sched_loops(s, "pad", l);
    SCHED_OK(s, tir_sched_fuse(s, n, l, &f));
    sched_check_all(s);
    tir_sched_destroy(s);
}


/* Two loops of symbolic extents n and m that are both negative run no
 * iteration, but the product n * m is positive: fused over n * m, a
 * schedule ran n * m instances where the function runs none (seventh
 * new-user review: n = -1 gave one iteration, and lowered to a GPU
 * kernel the reduction below then summed A[t, 0, 0] where the function
 * leaves 0).  An extent not provably >= 0 enters the product as
 * max(e, 0) where another factor may be negative too. */
static const char sym_fuse_text[] =
    "@T.prim_func\n"
    "def f(A: T.Buffer((4, 8, 8), \"float32\"), Y: T.Buffer((4,), \"float32\"), n: T.int32, "
    "m: T.int32):\n"
    "    with T.block(\"root\"):\n"
    "        acc = T.alloc_buffer((4,), \"float32\")\n"
    "        for t in range(4):\n"
    "            with T.block(\"Z\"):\n"
    "                vt = T.axis.remap(\"S\", [t])\n"
    "                T.writes(acc[vt])\n"
    "                acc[vt] = T.float32(0)\n"
    "        for t, i, j in T.grid(4, n, m):\n"
    "            with T.block(\"S\"):\n"
    "                vt, vi, vj = T.axis.remap(\"SRR\", [t, i, j])\n"
    "                T.reads(acc[vt], A[vt, vi, vj])\n"
    "                T.writes(acc[vt])\n"
    "                with T.init():\n"
    "                    acc[vt] = T.float32(0)\n"
    "                acc[vt] = acc[vt] + A[vt, vi, vj]\n"
    "        for t in range(4):\n"
    "            with T.block(\"Y\"):\n"
    "                vt = T.axis.remap(\"S\", [t])\n"
    "                T.reads(acc[vt])\n"
    "                T.writes(Y[vt])\n"
    "                Y[vt] = acc[vt] + T.float32(1)\n";

/* Y of f (n, m given) in the interpreter. */
static void run_sym(tir_ctx *ctx, const tir_prim_func *f, int64_t n, int64_t m, float *y) {
    float a[4 * 8 * 8];
    for (int i = 0; i < 4 * 8 * 8; i++) a[i] = (float)(i % 7 + 1);
    tir_arg args[4] = {{a, 0}, {y, 0}, {NULL, n}, {NULL, m}};
    if (tir_interp_run(ctx, f, 4, args, NULL) != TIR_OK)
        fail_msg("n = %lld, m = %lld: %s", (long long)n, (long long)m, tir_ctx_error(ctx));
}

static void test_fuse_negative_extents(void **st) {
    tir_ctx *ctx = *st;
    const tir_prim_func *f = NULL;
    assert_int_equal(tir_parse_func(ctx, sym_fuse_text, strlen(sym_fuse_text), &f), TIR_OK);
    tir_schedule *s = sched_new(ctx, f);
    tir_loop_rv l[16], fl;
    sched_loops(s, "S", l);
    SCHED_OK(s, tir_sched_fuse(s, 2, &l[1], &fl));
    const int64_t ext[][2] = {{-1, -1}, {-2, -3}, {-1, 3}, {0, -2}, {3, 5}, {8, 8}};
    for (size_t k = 0; k < sizeof ext / sizeof *ext; k++) {
        float want[4], got[4];
        run_sym(ctx, f, ext[k][0], ext[k][1], want);
        run_sym(ctx, tir_sched_func(s), ext[k][0], ext[k][1], got);
        for (int i = 0; i < 4; i++)
            if (want[i] != got[i])
                fail_msg("n = %lld, m = %lld: Y[%d] %g, fused %g", (long long)ext[k][0],
                         (long long)ext[k][1], i, (double)want[i], (double)got[i]);
    }
    /* one factor that may be negative needs no clamp: the product's sign is its */
    tir_schedule *s2 = sched_new(ctx, f);
    sched_loops(s2, "S", l);
    SCHED_OK(s2, tir_sched_fuse(s2, 2, l, &fl));
    assert_null(strstr(tir_print(ctx, sched_for(s2, fl)->extent), "max"));
    tir_sched_destroy(s2);
    tir_sched_destroy(s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_fuse_two, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fuse_three_and_reduction, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fuse_after_split, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fuse_preconditions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fuse_odd_shapes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fuse_negative_extents, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
