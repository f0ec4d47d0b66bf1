/* Tests of rfactor: the golden of a split-K matmul, every factor_axis,
 * divisible and non-divisible splits (the rfactor loop outer or inner,
 * spatial splits with predicates), batched matmul and conv2d, the four
 * combiners, scheduling after rfactor (bind the partial-sum loop to
 * blockIdx.z); trace roundtrip and interpreter equivalence throughout; one
 * negative test per precondition, each checking that nothing changed. */
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

static const tir_prim_func *parse(tir_ctx *ctx, const char *text) {
    const tir_prim_func *f = NULL;
    if (tir_parse_func(ctx, text, strlen(text), &f) != TIR_OK)
        fail_msg("parse: %s", tir_ctx_error(ctx));
    return f;
}

static const char splitk_golden[] =
    "@T.prim_func\n"
    "def matmul(A: T.Buffer((8, 12), \"float32\"), B: T.Buffer((12, 6), \"float32\"), C: T.Buffer((8, 6), \"float32\")):\n"
    "    T.func_attr({\"global_symbol\": \"matmul\", \"tir.noalias\": 1})\n"
    "    with T.block(\"root\"):\n"
    "        C_rf = T.alloc_buffer((3, 8, 6), \"float32\")\n"
    "        for i, j, k_0, k_1 in T.grid(8, 6, 3, 4):\n"
    "            with T.block(\"C_rf\"):\n"
    "                vi, vj, vk_0, vk_1 = T.axis.remap(\"SSSR\", [i, j, k_0, k_1])\n"
    "                T.reads(A[vi, vk_0 * 4 + vk_1], B[vk_0 * 4 + vk_1, vj])\n"
    "                T.writes(C_rf[vk_0, vi, vj])\n"
    "                with T.init():\n"
    "                    C_rf[vk_0, vi, vj] = T.float32(0)\n"
    "                C_rf[vk_0, vi, vj] = C_rf[vk_0, vi, vj] + A[vi, vk_0 * 4 + vk_1] * B[vk_0 * 4 + vk_1, vj]\n"
    "        for i_1, j_1, k_0_1 in T.grid(8, 6, 3):\n"
    "            with T.block(\"C\"):\n"
    "                vi_1, vj_1, vk_0_1 = T.axis.remap(\"SSR\", [i_1, j_1, k_0_1])\n"
    "                T.reads(C_rf[vk_0_1, vi_1, vj_1])\n"
    "                T.writes(C[vi_1, vj_1])\n"
    "                with T.init():\n"
    "                    C[vi_1, vj_1] = T.float32(0)\n"
    "                C[vi_1, vj_1] = C[vi_1, vj_1] + C_rf[vk_0_1, vi_1, vj_1]\n";

/* The split-K shape: handles, names, the golden. */
static void test_rfactor_golden(void **st) {
    tir_ctx *ctx = *st;
    tir_schedule *s = sched_new(ctx, tir_def_matmul(ctx, 8, 6, 12, TIR_F32));
    tir_loop_rv l[16], k[2];
    sched_loops(s, "C", l);
    SCHED_OK(s, tir_sched_split(s, l[2], 2, (const int64_t[]){3, TIR_SPLIT_INFER}, k));
    tir_block_rv c = sched_block(s, "C"), rf;
    SCHED_OK(s, tir_sched_rfactor(s, k[0], 0, &rf));
    sched_expect_text(s, splitk_golden);
    const tir_block *rb, *cb;
    SCHED_OK(s, tir_sched_get_block_node(s, rf, &rb));
    SCHED_OK(s, tir_sched_get_block_node(s, c, &cb));
    assert_string_equal(rb->name, "C_rf");
    assert_string_equal(cb->name, "C");
    /* the loop handles name C_rf's loops; C has fresh ones */
    tir_loop_rv rl[16], cl[16];
    assert_int_equal(sched_loops(s, "C_rf", rl), 4);
    assert_true(tir_sched_same_loop(s, rl[2], k[0]));
    assert_true(tir_sched_same_loop(s, rl[0], l[0]));
    assert_int_equal(sched_loops(s, "C", cl), 3);
    assert_false(tir_sched_same_loop(s, cl[2], k[0]));
    sched_check_all(s);
    tir_sched_destroy(s);
}

/* Every factor_axis, negative ones included, puts the new dimension
 * where numpy would. */
static void test_rfactor_axes(void **st) {
    tir_ctx *ctx = *st;
    for (int ax = -3; ax <= 2; ax++) {
        tir_schedule *s = sched_new(ctx, tir_def_matmul(ctx, 5, 7, 12, TIR_F32));
        tir_loop_rv l[16], k[2];
        sched_loops(s, "C", l);
        SCHED_OK(s, tir_sched_split(s, l[2], 2, (const int64_t[]){4, TIR_SPLIT_INFER}, k));
        tir_block_rv rf;
        SCHED_OK(s, tir_sched_rfactor(s, k[0], ax, &rf));
        const tir_block *rb;
        SCHED_OK(s, tir_sched_get_block_node(s, rf, &rb));
        const tir_buffer *buf = rb->writes[0].buffer;
        assert_int_equal(buf->ndim, 3);
        int pos = ax < 0 ? ax + 3 : ax;
        int64_t e = -1;
        assert_true(tir_expr_const_int(buf->shape[pos], &e));
        assert_int_equal(e, 4);
        sched_check_all(s);
        tir_sched_destroy(s);
    }
}

/* Non-divisible splits at odd sizes, the rfactor loop outer or inner, with
 * split spatial loops (predicates the write-back keeps). */
static void test_rfactor_odd(void **st) {
    tir_ctx *ctx = *st;
    static const int64_t splits[][2] = {
        {3, TIR_SPLIT_INFER}, {4, TIR_SPLIT_INFER}, {TIR_SPLIT_INFER, 7}, {TIR_SPLIT_INFER, 16}};
    for (int sp = 0; sp < 4; sp++)
        for (int inner = 0; inner < 2; inner++) {
            tir_schedule *s = sched_new(ctx, tir_def_matmul(ctx, 33, 45, 200, TIR_F32));
            tir_loop_rv l[16], k[2], i[2];
            sched_loops(s, "C", l);
            SCHED_OK(s, tir_sched_split(s, l[0], 2, (const int64_t[]){TIR_SPLIT_INFER, 8}, i));
            SCHED_OK(s, tir_sched_split(s, l[2], 2, splits[sp], k));
            tir_block_rv rf;
            SCHED_OK(s, tir_sched_rfactor(s, k[inner], 1, &rf));
            sched_check_all(s);
            tir_sched_destroy(s);
        }
}

/* The rfactor loop above the spatial loops; an unsplit reduction loop;
 * batched matmul; conv2d over one of its three reduction loops. */
static void test_rfactor_others(void **st) {
    tir_ctx *ctx = *st;
    tir_schedule *s = sched_new(ctx, tir_def_matmul(ctx, 9, 5, 13, TIR_F32));
    tir_loop_rv l[16], k[2];
    sched_loops(s, "C", l);
    SCHED_OK(s, tir_sched_split(s, l[2], 2, (const int64_t[]){TIR_SPLIT_INFER, 5}, k));
    SCHED_OK(s, tir_sched_reorder(s, 3, (const tir_loop_rv[]){k[0], l[0], l[1]}));
    tir_block_rv rf;
    SCHED_OK(s, tir_sched_rfactor(s, k[0], 2, &rf));
    sched_check_all(s);
    tir_sched_destroy(s);

    s = sched_new(ctx, tir_def_matmul(ctx, 4, 3, 6, TIR_F32));
    sched_loops(s, "C", l);
    SCHED_OK(s, tir_sched_rfactor(s, l[2], 0, &rf));
    sched_check_all(s);
    tir_sched_destroy(s);

    s = sched_new(ctx, tir_def_batch_matmul(ctx, 3, 5, 7, 9, TIR_F32));
    int n = sched_loops(s, "C", l);
    SCHED_OK(s, tir_sched_split(s, l[n - 1], 2, (const int64_t[]){2, TIR_SPLIT_INFER}, k));
    SCHED_OK(s, tir_sched_rfactor(s, k[0], 3, &rf));
    sched_check_all(s);
    tir_sched_destroy(s);

    for (int r = 4; r < 7; r++) {
        s = sched_new(ctx, tir_def_conv2d_nchw(ctx, 1, 3, 7, 5, 2, 3, 3, 2, 1, TIR_F32));
        n = sched_loops(s, "conv", l);
        assert_int_equal(n, 7);
        SCHED_OK(s, tir_sched_rfactor(s, l[r], 0, &rf));
        sched_check_all(s);
        tir_sched_destroy(s);
    }
}

/* Combiners other than +, with their identities as inits. */
static const char mul_red[] =
    "@T.prim_func\n"
    "def f(A: T.Buffer((4, 6), \"float32\"), C: T.Buffer((4,), \"float32\")):\n"
    "    for i, k in T.grid(4, 6):\n"
    "        with T.block(\"C\"):\n"
    "            vi, vk = T.axis.remap(\"SR\", [i, k])\n"
    "            T.reads(A[vi, vk])\n"
    "            T.writes(C[vi])\n"
    "            with T.init():\n"
    "                C[vi] = T.float32(1)\n"
    "            C[vi] = A[vi, vk] * C[vi]\n";

static const char min_red[] =
    "@T.prim_func\n"
    "def f(A: T.Buffer((4, 6), \"int32\"), C: T.Buffer((4,), \"int32\")):\n"
    "    for i, k in T.grid(4, 6):\n"
    "        with T.block(\"C\"):\n"
    "            vi, vk = T.axis.remap(\"SR\", [i, k])\n"
    "            T.reads(A[vi, vk])\n"
    "            T.writes(C[vi])\n"
    "            with T.init():\n"
    "                C[vi] = 2147483647\n"
    "            C[vi] = T.min(C[vi], A[vi, vk])\n";

static const char max_red[] =
    "@T.prim_func\n"
    "def f(A: T.Buffer((4, 6), \"int32\"), C: T.Buffer((4,), \"int32\")):\n"
    "    for i, k in T.grid(4, 6):\n"
    "        with T.block(\"C\"):\n"
    "            vi, vk = T.axis.remap(\"SR\", [i, k])\n"
    "            T.reads(A[vi, vk])\n"
    "            T.writes(C[vi])\n"
    "            with T.init():\n"
    "                C[vi] = -2147483648\n"
    "            C[vi] = T.max(C[vi], A[vi, vk])\n";

static void test_rfactor_combiners(void **st) {
    tir_ctx *ctx = *st;
    const char *texts[3] = {mul_red, min_red, max_red};
    for (int t = 0; t < 3; t++) {
        tir_schedule *s = sched_new(ctx, parse(ctx, texts[t]));
        tir_loop_rv l[16], k[2];
        sched_loops(s, "C", l);
        SCHED_OK(s, tir_sched_split(s, l[1], 2, (const int64_t[]){TIR_SPLIT_INFER, 4}, k));
        tir_block_rv rf;
        SCHED_OK(s, tir_sched_rfactor(s, k[0], -1, &rf));
        sched_check_all(s);
        tir_sched_destroy(s);
    }
}

/* After rfactor the partial sums are independent: the rfactor loop binds
 * to blockIdx.z, and the write-back nest schedules on its own. */
static void test_rfactor_then_bind(void **st) {
    tir_ctx *ctx = *st;
    tir_schedule *s = sched_new(ctx, tir_def_matmul(ctx, 33, 45, 200, TIR_F32));
    tir_loop_rv l[16], k[2];
    sched_loops(s, "C", l);
    SCHED_OK(s, tir_sched_split(s, l[2], 2, (const int64_t[]){4, TIR_SPLIT_INFER}, k));
    tir_block_rv rf;
    SCHED_OK(s, tir_sched_rfactor(s, k[0], 0, &rf));
    SCHED_OK(s, tir_sched_bind(s, k[0], "blockIdx.z"));
    SCHED_OK(s, tir_sched_bind(s, l[0], "blockIdx.x"));
    SCHED_OK(s, tir_sched_bind(s, l[1], "threadIdx.x"));
    tir_loop_rv cl[16];
    assert_int_equal(sched_loops(s, "C", cl), 3);
    SCHED_OK(s, tir_sched_bind(s, cl[0], "blockIdx.x"));
    SCHED_OK(s, tir_sched_bind(s, cl[1], "threadIdx.x"));
    sched_check_all(s);
    tir_sched_destroy(s);
}

static const char offset_red[] =
    "@T.prim_func\n"
    "def f(A: T.Buffer((4, 6), \"float32\"), C: T.Buffer((4,), \"float32\")):\n"
    "    for i in T.serial(4):\n"
    "        for k in T.serial(1, 7):\n"
    "            with T.block(\"C\"):\n"
    "                vi = T.axis.spatial(4, i)\n"
    "                vk = T.axis.reduce(6, k - 1)\n"
    "                T.reads(A[vi, vk])\n"
    "                T.writes(C[vi])\n"
    "                with T.init():\n"
    "                    C[vi] = T.float32(0)\n"
    "                C[vi] = C[vi] + A[vi, vk]\n";

static const char two_blocks[] =
    "@T.prim_func\n"
    "def f(A: T.Buffer((4, 4), \"float32\"), C: T.Buffer((4,), \"float32\"), B: T.Buffer((4, 4), \"float32\")):\n"
    "    for i in T.serial(4):\n"
    "        for k in T.serial(4):\n"
    "            with T.block(\"C\"):\n"
    "                vi, vk = T.axis.remap(\"SR\", [i, k])\n"
    "                T.reads(A[vi, vk])\n"
    "                T.writes(C[vi])\n"
    "                with T.init():\n"
    "                    C[vi] = T.float32(0)\n"
    "                C[vi] = C[vi] + A[vi, vk]\n"
    "        for j in T.serial(4):\n"
    "            with T.block(\"B\"):\n"
    "                vi, vj = T.axis.remap(\"SS\", [i, j])\n"
    "                T.reads(A[vi, vj])\n"
    "                T.writes(B[vi, vj])\n"
    "                B[vi, vj] = A[vi, vj]\n";

static const char opaque_red[] =
    "@T.prim_func\n"
    "def f(A: T.Buffer((4, 4), \"float32\"), C: T.Buffer((4,), \"float32\")):\n"
    "    for i, k in T.grid(4, 4):\n"
    "        with T.block(\"C\"):\n"
    "            vi, vk = T.axis.remap(\"SR\", [i, k])\n"
    "            T.reads(A[vi, vk])\n"
    "            T.writes(C[vi])\n"
    "            with T.init():\n"
    "                C[vi] = T.float32(0)\n"
    "            C[vi] = C[vi] + A[i, vk]\n";

static const char nonaffine_red[] =
    "@T.prim_func\n"
    "def f(A: T.Buffer((16, 4), \"float32\"), C: T.Buffer((16,), \"float32\")):\n"
    "    for i, k in T.grid(4, 4):\n"
    "        with T.block(\"C\"):\n"
    "            vi = T.axis.spatial(16, i * i)\n"
    "            vk = T.axis.reduce(4, k)\n"
    "            T.reads(A[vi, vk])\n"
    "            T.writes(C[vi])\n"
    "            with T.init():\n"
    "                C[vi] = T.float32(0)\n"
    "            C[vi] = C[vi] + A[vi, vk]\n";

/* r feeds no iterator. */
static const char repeated_red[] =
    "@T.prim_func\n"
    "def f(A: T.Buffer((4, 4), \"float32\"), C: T.Buffer((4,), \"float32\")):\n"
    "    for r, i, k in T.grid(2, 4, 4):\n"
    "        with T.block(\"C\"):\n"
    "            vi, vk = T.axis.remap(\"SR\", [i, k])\n"
    "            T.reads(A[vi, vk])\n"
    "            T.writes(C[vi])\n"
    "            with T.init():\n"
    "                C[vi] = T.float32(0)\n"
    "            C[vi] = C[vi] + A[vi, vk]\n";

/* f feeds both vi and vk (a spatial and a reduce loop fused). */
static const char mixed_red[] =
    "@T.prim_func\n"
    "def f(A: T.Buffer((4, 8), \"float32\"), C: T.Buffer((4,), \"float32\")):\n"
    "    for f, k1 in T.grid(16, 2):\n"
    "        with T.block(\"C\"):\n"
    "            vi = T.axis.spatial(4, f // 4)\n"
    "            vk = T.axis.reduce(8, f % 4 * 2 + k1)\n"
    "            T.reads(A[vi, vk])\n"
    "            T.writes(C[vi])\n"
    "            with T.init():\n"
    "                C[vi] = T.float32(0)\n"
    "            C[vi] = C[vi] + A[vi, vk]\n";

/* k0, feeding vk with k1, runs n times: not a constant bound. */
static const char var_bound_red[] =
    "@T.prim_func\n"
    "def f(A: T.Buffer((4, 8), \"float32\"), C: T.Buffer((4,), \"float32\"), n: T.int32):\n"
    "    for i in T.serial(4):\n"
    "        for k0 in T.serial(n):\n"
    "            for k1 in T.serial(2):\n"
    "                with T.block(\"C\"):\n"
    "                    vi = T.axis.spatial(4, i)\n"
    "                    vk = T.axis.reduce(8, k0 * 2 + k1)\n"
    "                    T.reads(A[vi, vk])\n"
    "                    T.writes(C[vi])\n"
    "                    with T.init():\n"
    "                        C[vi] = T.float32(0)\n"
    "                    C[vi] = C[vi] + A[vi, vk]\n";

/* The init is not the identity of +. */
static const char bad_init[] =
    "@T.prim_func\n"
    "def f(A: T.Buffer((4, 4), \"float32\"), C: T.Buffer((4,), \"float32\")):\n"
    "    for i, k in T.grid(4, 4):\n"
    "        with T.block(\"C\"):\n"
    "            vi, vk = T.axis.remap(\"SR\", [i, k])\n"
    "            T.reads(A[vi, vk])\n"
    "            T.writes(C[vi])\n"
    "            with T.init():\n"
    "                C[vi] = T.float32(1)\n"
    "            C[vi] = C[vi] + A[vi, vk]\n";

/* A combiner that is not one of the four. */
static const char sub_red[] =
    "@T.prim_func\n"
    "def f(A: T.Buffer((4, 4), \"float32\"), C: T.Buffer((4,), \"float32\")):\n"
    "    for i, k in T.grid(4, 4):\n"
    "        with T.block(\"C\"):\n"
    "            vi, vk = T.axis.remap(\"SR\", [i, k])\n"
    "            T.reads(A[vi, vk])\n"
    "            T.writes(C[vi])\n"
    "            with T.init():\n"
    "                C[vi] = T.float32(0)\n"
    "            C[vi] = C[vi] - A[vi, vk]\n";

/* Expects rfactor of loop index li of block `name` of f to fail. */
static void expect_fail(tir_ctx *ctx, const tir_prim_func *f, const char *name, int li,
                        int axis, tir_status want) {
    tir_schedule *s = sched_new(ctx, f);
    tir_loop_rv l[16];
    sched_loops(s, name, l);
    tir_block_rv out;
    SCHED_EXPECT_FAIL(s, want, "rfactor", tir_sched_rfactor(s, l[li], axis, &out));
    tir_sched_destroy(s);
}

static void test_rfactor_preconditions(void **st) {
    tir_ctx *ctx = *st;
    tir_schedule *s = sched_new(ctx, tir_def_matmul(ctx, 8, 6, 12, TIR_F32));
    tir_loop_rv l[16], k[2];
    sched_loops(s, "C", l);
    SCHED_OK(s, tir_sched_split(s, l[2], 2, (const int64_t[]){3, TIR_SPLIT_INFER}, k));
    tir_block_rv out;
    /* pointer argument */
    SCHED_EXPECT_FAIL(s, TIR_ERR_INVALID_ARG, "rfactor", tir_sched_rfactor(s, k[0], 0, NULL));
    /* 1: serial */
    SCHED_OK(s, tir_sched_unroll(s, k[0]));
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_LOOP_NOT_SERIAL, "rfactor",
                      tir_sched_rfactor(s, k[0], 0, &out));
    /* 8: a spatial loop */
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_RFACTOR_LOOP, "rfactor",
                      tir_sched_rfactor(s, l[1], 0, &out));
    /* 11: factor_axis in [-3, 2] */
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_BAD_AXIS, "rfactor", tir_sched_rfactor(s, k[1], 3, &out));
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_BAD_AXIS, "rfactor", tir_sched_rfactor(s, k[1], -4, &out));
    /* once rfactored, C reduces over a loop that feeds nothing else: fine
       again, but C_rf's former rfactor loop is now spatial (8) */
    tir_block_rv rf;
    SCHED_OK(s, tir_sched_rfactor(s, k[1], -3, &rf));
    tir_loop_rv rl[16];
    sched_loops(s, "C_rf", rl);
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_RFACTOR_LOOP, "rfactor",
                      tir_sched_rfactor(s, rl[3], 0, &out));
    sched_check_all(s);
    tir_sched_destroy(s);
    /* 2: starts at 0 */
    expect_fail(ctx, parse(ctx, offset_red), "C", 1, 0, TIR_ERR_SCHED_LOOP_MIN_NONZERO);
    /* 3: one block under the loop, and under its nest */
    expect_fail(ctx, parse(ctx, two_blocks), "C", 0, 0, TIR_ERR_SCHED_RFACTOR_NEST);
    expect_fail(ctx, parse(ctx, two_blocks), "C", 1, 0, TIR_ERR_SCHED_RFACTOR_NEST);
    /* 4: a reduction */
    expect_fail(ctx, tir_def_matmul_bias(ctx, 6, 5, 4, TIR_F32), "D", 1, 0,
                TIR_ERR_SCHED_NOT_REDUCTION);
    /* 5, 6: W1 and W2 */
    expect_fail(ctx, parse(ctx, opaque_red), "C", 1, 0, TIR_ERR_SCHED_OPAQUE_USE);
    expect_fail(ctx, parse(ctx, nonaffine_red), "C", 1, 0, TIR_ERR_SCHED_NON_AFFINE_BINDING);
    /* 9: a loop feeding nothing */
    expect_fail(ctx, parse(ctx, repeated_red), "C", 2, 0, TIR_ERR_SCHED_MIXED_LOOP);
    /* 9: a loop feeding both kinds */
    expect_fail(ctx, parse(ctx, mixed_red), "C", 1, 0, TIR_ERR_SCHED_MIXED_LOOP);
    assert_non_null(strstr(tir_ctx_error(ctx), "loop f feeds both spatial and reduce"));
    /* 8: a loop feeding vk with the rfactor loop k1 has no constant extent */
    expect_fail(ctx, parse(ctx, var_bound_red), "C", 2, 0, TIR_ERR_SCHED_RFACTOR_LOOP);
    assert_non_null(strstr(tir_ctx_error(ctx), "loop k0 feeds reduce iterator vk"));
    /* 10: the combiner and its identity */
    expect_fail(ctx, parse(ctx, bad_init), "C", 1, 0, TIR_ERR_SCHED_REDUCER_PATTERN);
    expect_fail(ctx, parse(ctx, sub_red), "C", 1, 0, TIR_ERR_SCHED_REDUCER_PATTERN);
    s = sched_new(ctx, tir_def_matmul_bias(ctx, 6, 5, 4, TIR_F32));
    tir_block_rv c = sched_block(s, "C");
    SCHED_OK(s, tir_sched_fuse_reduction_epilogue(s, c, sched_block(s, "D"), NULL));
    sched_loops(s, "C", l);
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_REDUCER_PATTERN, "rfactor",
                      tir_sched_rfactor(s, l[2], 0, &out));
    tir_sched_destroy(s);
    /* 12: a split [4, None] of 9 leaves k_0 = 3 with no instance */
    s = sched_new(ctx, tir_def_matmul(ctx, 5, 3, 9, TIR_F32));
    sched_loops(s, "C", l);
    SCHED_OK(s, tir_sched_split(s, l[2], 2, (const int64_t[]){4, TIR_SPLIT_INFER}, k));
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_RFACTOR_EMPTY_SLICE, "rfactor",
                      tir_sched_rfactor(s, k[0], 0, &out));
    /* ... while k_1 has an instance at every value */
    SCHED_OK(s, tir_sched_rfactor(s, k[1], 0, &out));
    sched_check_all(s);
    tir_sched_destroy(s);
}


/* C[i] = sum_k A[i, k] * D[i], D computed first. */
#define SCALED_RED(K)                                                                        \
    "@T.prim_func\n"                                                                        \
    "def f(A: T.Buffer((4, " #K "), \"float32\"), E: T.Buffer((4,), \"float32\"), C: T.Buffer((4,), \"float32\")):\n" \
    "    with T.block(\"root\"):\n"                                                           \
    "        D = T.alloc_buffer((4,), \"float32\")\n"                                         \
    "        for i in T.serial(4):\n"                                                         \
    "            with T.block(\"D\"):\n"                                                      \
    "                vi = T.axis.spatial(4, i)\n"                                             \
    "                T.reads(E[vi])\n"                                                         \
    "                T.writes(D[vi])\n"                                                        \
    "                D[vi] = E[vi] * T.float32(2)\n"                                           \
    "        for i, k in T.grid(4, " #K "):\n"                                                 \
    "            with T.block(\"C\"):\n"                                                      \
    "                vi, vk = T.axis.remap(\"SR\", [i, k])\n"                                 \
    "                T.reads(A[vi, vk], D[vi])\n"                                              \
    "                T.writes(C[vi])\n"                                                        \
    "                with T.init():\n"                                                        \
    "                    C[vi] = T.float32(0)\n"                                               \
    "                C[vi] = C[vi] + A[vi, vk] * D[vi]\n"
static const char scaled_red9[] = SCALED_RED(9);
static const char scaled_red10[] = SCALED_RED(10);

/* compute_at 13 and reverse_compute_at 12: after a split that does not
 * divide the reduction, C_rf's predicate masks reduction steps inside its
 * domain (vk_0 * 5 + vk_1 >= 9), so it cannot be moved; after one that
 * does, it can (the fuzzer found compute_at dropping that predicate). */
static void test_rfactor_then_move(void **st) {
    tir_ctx *ctx = *st;
    for (int K = 9; K <= 10; K++) {
        tir_schedule *s = sched_new(ctx, tir_def_matmul(ctx, 3, 6, K, TIR_F32));
        tir_loop_rv l[16], k[2], cl[16];
        sched_loops(s, "C", l);
        SCHED_OK(s, tir_sched_split(s, l[2], 2, (const int64_t[]){2, TIR_SPLIT_INFER}, k));
        tir_block_rv rf;
        SCHED_OK(s, tir_sched_rfactor(s, k[0], 2, &rf));
        sched_loops(s, "C", cl);
        if (K == 9)
            SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_PREDICATED_PRODUCER, "compute_at",
                              tir_sched_compute_at(s, rf, cl[1], false));
        else
            SCHED_OK(s, tir_sched_compute_at(s, rf, cl[1], false));
        sched_check_all(s);
        tir_sched_destroy(s);
        /* C_rf as the consumer of D */
        s = sched_new(ctx, parse(ctx, K == 9 ? scaled_red9 : scaled_red10));
        sched_loops(s, "C", l);
        SCHED_OK(s, tir_sched_split(s, l[1], 2, (const int64_t[]){2, TIR_SPLIT_INFER}, k));
        SCHED_OK(s, tir_sched_rfactor(s, k[0], 0, &rf));
        tir_block_rv out;
        sched_loops(s, "D", cl);
        if (K == 9)
            SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_PREDICATED_PRODUCER, "reverse_compute_at",
                              tir_sched_reverse_compute_at(s, rf, cl[0], false));
        else
            SCHED_OK(s, tir_sched_reverse_compute_at(s, rf, cl[0], false));
        (void)out;
        sched_check_all(s);
        tir_sched_destroy(s);
        /* A consumer of C_rf can move under C_rf's loops either way: the
         * predicate only skips reduction steps, every C_rf element is
         * still written (reverse_compute_at 8, split-K's accumulator). */
        s = sched_new(ctx, tir_def_matmul(ctx, 3, 6, K, TIR_F32));
        sched_loops(s, "C", l);
        SCHED_OK(s, tir_sched_split(s, l[2], 2, (const int64_t[]){2, TIR_SPLIT_INFER}, k));
        SCHED_OK(s, tir_sched_rfactor(s, k[0], 0, &rf));
        tir_block_rv acc;
        SCHED_OK(s, tir_sched_cache_write(s, rf, 0, "local", 0, NULL, &acc));
        SCHED_OK(s, tir_sched_reverse_compute_at(s, acc, l[1], false));
        sched_check_all(s);
        tir_sched_destroy(s);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_rfactor_golden, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rfactor_axes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rfactor_odd, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rfactor_others, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rfactor_combiners, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rfactor_then_bind, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rfactor_preconditions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rfactor_then_move, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
