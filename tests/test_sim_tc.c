/* test_sim_tc.c: the simulator's warp collectives (lane_id, mma_sync,
 * ldmatrix) on the hand-written lowered kernels of tests/tc_kernels.c.
 *
 * Each kernel runs with every check on (uninitialised reads, C marked
 * unwritten, shared and global races) against a C reference: a double
 * sum of the products rounded once (TF32 inputs for float32), the
 * semantics the simulator shares with the interpreter.  Inputs are small
 * integers (float32 A: small integers times 1 + 2^-11 and 1 + 3 2^-11, so
 * that TF32 rounding, ties to even, changes them) whose sums are exact in
 * float32 however they are grouped (one rounding per mma over a k loop),
 * so results must agree bit for bit.  Then the errors: a
 * divergent collective, a block that is not whole warps, a misaligned
 * ldmatrix row, ldmatrix from global memory, ldmatrix of unwritten shared
 * memory, a race between a store and another lane's ldmatrix, and a
 * logical frag_fill that lowering should have expanded.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "minitir/sim.h"
#include "tc_kernels.h"

static uint32_t seed = 2024;
static int small_int(int lo, int hi) {
    seed = seed * 1664525u + 1013904223u;
    return lo + (int)((seed >> 8) % (uint32_t)(hi - lo + 1));
}

/* Inputs of dtype t as floats (exactly representable in t) and in t's
 * storage; with low_bits, float32 inputs have bits below TF32's (B stays
 * small integers, so that the products of TF32 values, and their sums over
 * any grouping, are exact in float32). */
static void make_input(tir_dtype t, int n, bool low_bits, float *vals, void *store) {
    bool f32 = tir_dtype_eq(t, TIR_F32), bf = tir_dtype_eq(t, TIR_BF16);
    for (int i = 0; i < n; i++) {
        float v = (float)small_int(-8, 8);
        if (f32 && low_bits)
            v *= i % 3 == 0 ? 1.0f : i % 3 == 1 ? 1.0f + 0x1p-11f : 1.0f + 0x1.8p-11f;
        vals[i] = v;
        if (f32) ((float *)store)[i] = v;
        else ((uint16_t *)store)[i] = tck_to_half(v, bf);
    }
}

/* Runs f (C = A . B, M x N x K, dtype t) in the simulator with all checks
 * and returns its status; on success compares C with the reference.
 * *rep: the report. */
static tir_status run(tir_ctx *ctx, const tir_prim_func *f, tir_dtype t, int M, int N, int K,
                      tir_sim_report *rep) {
    if (!f) fail_msg("kernel: %s", tir_ctx_error(ctx));
    float *a = malloc(sizeof(float) * (size_t)(M * K)), *b = malloc(sizeof(float) * (size_t)(K * N));
    void *as = malloc(4 * (size_t)(M * K)), *bs = malloc(4 * (size_t)(K * N));
    float *c = malloc(sizeof(float) * (size_t)(M * N)), *r = malloc(sizeof(float) * (size_t)(M * N));
    make_input(t, M * K, true, a, as);
    make_input(t, K * N, false, b, bs);
    for (int i = 0; i < M * N; i++) c[i] = NAN;
    tir_arg args[3] = {{as, 0}, {bs, 0}, {c, 0}};
    tir_sim_opts o = {.uninit_params = 1u << 2, .check_uninit = true, .check_global_races = true};
    tir_status st = tir_sim_run(ctx, f, 3, args, &o, rep);
    if (st == TIR_OK) {
        tck_ref_matmul(a, b, r, M, N, K, tir_dtype_eq(t, TIR_F32));
        for (int i = 0; i < M * N; i++)
            if (c[i] != r[i])
                fail_msg("C[%d, %d] = %.9g, want %.9g", i / N, i % N, c[i], r[i]);
    }
    free(a);
    free(b);
    free(as);
    free(bs);
    free(c);
    free(r);
    return st;
}

static void run_ok(tir_ctx *ctx, const tir_prim_func *f, tir_dtype t, int M, int N, int K,
                   int64_t warp_ops) {
    tir_sim_report rep;
    if (run(ctx, f, t, M, N, K, &rep) != TIR_OK) fail_msg("%s", tir_ctx_error(ctx));
    assert_true(rep.coroutines);
    assert_int_equal(rep.warp_ops, warp_ops);
}

static int setup(void **st) {
    *st = tir_ctx_create();
    return *st ? 0 : -1;
}
static int teardown(void **st) {
    tir_ctx_destroy(*st);
    return 0;
}

/* (1), (3), (4): one warp, per-lane loads, one mma. */
static void test_one_warp(void **st) {
    tir_ctx *ctx = *st;
    run_ok(ctx, tck_mma_lanes(ctx, TIR_BF16, 1, 1, 1, 1, 0), TIR_BF16, 16, 8, 16, 1);
    run_ok(ctx, tck_mma_lanes(ctx, TIR_F16, 1, 1, 1, 1, 0), TIR_F16, 16, 8, 16, 1);
    run_ok(ctx, tck_mma_lanes(ctx, TIR_F32, 1, 1, 1, 1, 0), TIR_F32, 16, 8, 8, 1);
}

/* The TF32 inputs really are rounded, ties to even: a reference without
 * the rounding differs, and so would ties away from zero, so the exact
 * comparison above means something. */
static void test_tf32_matters(void **st) {
    (void)st;
    float a[16 * 8], b[8 * 8], r1[16 * 8], r2[16 * 8];
    /* per row, k < 4: 1 + 2^-11, a tie with the kept bit even, gives 1
     * (ties away: 1 + 2^-10); k >= 4: 1 + 3 2^-12, above the tie, gives
     * 1 + 2^-10 */
    for (int i = 0; i < 16 * 8; i++) a[i] = i % 8 < 4 ? 1.0f + 0x1p-11f : 1.0f + 0x1.8p-11f;
    for (int i = 0; i < 8 * 8; i++) b[i] = 1.0f;
    tck_ref_matmul(a, b, r1, 16, 8, 8, true);
    tck_ref_matmul(a, b, r2, 16, 8, 8, false);
    assert_true(r1[0] == 4 * 1.0f + 4 * (1.0f + 0x1p-10f));
    assert_true(r1[0] != 8 * (1.0f + 0x1p-10f)); /* what ties away would give */
    assert_true(r1[0] != r2[0]);
}

/* (2): shared tiles loaded by ldmatrix (A x4, B x2.trans). */
static void test_ldmatrix(void **st) {
    tir_ctx *ctx = *st;
    run_ok(ctx, tck_mma_ldmatrix(ctx, TIR_BF16, 0), TIR_BF16, 16, 8, 16, 3);
    run_ok(ctx, tck_mma_ldmatrix(ctx, TIR_F16, 0), TIR_F16, 16, 8, 16, 3);
    /* TF32 A: ldmatrix.x4 of 4-float rows, register m = matrix m */
    run_ok(ctx, tck_mma_ldmatrix(ctx, TIR_F32, 0), TIR_F32, 16, 8, 8, 2);
}

/* (5): 2 blocks of 4 warps (2 x 2), 4 k steps each: 32 mma.  And the
 * float32 (TF32) variant. */
static void test_warps_and_k_loop(void **st) {
    tir_ctx *ctx = *st;
    run_ok(ctx, tck_mma_lanes(ctx, TIR_BF16, 2, 2, 2, 4, 0), TIR_BF16, 64, 16, 64, 32);
    run_ok(ctx, tck_mma_lanes(ctx, TIR_F32, 2, 2, 2, 4, 0), TIR_F32, 64, 16, 32, 32);
    run_ok(ctx, tck_mma_lanes(ctx, TIR_F16, 1, 3, 1, 2, 0), TIR_F16, 48, 8, 32, 6);
}

static void expect_error(tir_ctx *ctx, tir_status got, tir_status want, const char *const *subs) {
    if (got != want)
        fail_msg("got %s (%s), want %s", tir_status_name(got), tir_ctx_error(ctx),
                 tir_status_name(want));
    for (; *subs; subs++)
        if (!strstr(tir_ctx_error(ctx), *subs))
            fail_msg("message lacks \"%s\":\n%s", *subs, tir_ctx_error(ctx));
    tir_ctx_clear_error(ctx);
}

static void test_errors(void **st) {
    tir_ctx *ctx = *st;
    tir_sim_report rep;
    struct {
        const tir_prim_func *f;
        tir_status code;
        const char *subs[5];
    } cases[] = {
        {tck_mma_lanes(ctx, TIR_BF16, 1, 1, 1, 1, TCK_DIVERGE), TIR_ERR_SIM_BARRIER,
         {"divergent warp: lanes 0-15", "wait at mma_sync", "lane 16 finished", "mma_sync"}},
        {tck_mma_lanes(ctx, TIR_BF16, 1, 1, 1, 1, TCK_HALF_WARP), TIR_ERR_SIM_LAUNCH,
         {"lane_id", "16 threads, not a multiple of 32"}},
        {tck_mma_ldmatrix(ctx, TIR_BF16, TCK_HALF_WARP), TIR_ERR_SIM_LAUNCH,
         {"not a multiple of 32"}},
        {tck_mma_ldmatrix(ctx, TIR_BF16, TCK_MISALIGN), TIR_ERR_EVAL,
         {"threadIdx (0, 0, 0)", "ldmatrix: the row address As[1]", "16-byte aligned"}},
        {tck_mma_ldmatrix(ctx, TIR_BF16, TCK_LDM_GLOBAL), TIR_ERR_EVAL,
         {"ldmatrix: operand 3 points into global buffer A", "must point into a shared buffer"}},
        {tck_mma_ldmatrix(ctx, TIR_BF16, TCK_NO_COPY), TIR_ERR_UNINIT_READ,
         {"threadIdx (0, 0, 0)", "As", "never written", "ldmatrix"}},
        {tck_mma_ldmatrix(ctx, TIR_BF16, TCK_RACE), TIR_ERR_SIM_RACE,
         {"threadIdx (5, 0, 0)", "shared-memory race on shared As[80]", "reads it",
          "threadIdx (0, 0, 0) wrote it"}},
    };
    /* .trans moves 16-bit elements: a 32-bit matrix has none */
    expect_error(ctx, run(ctx, tck_mma_ldmatrix(ctx, TIR_F32, TCK_A_TRANS), TIR_F32, 16, 8, 8, &rep),
                 TIR_ERR_EVAL, (const char *[5]){".trans transposes 16-bit elements", "float32"});
    /* a 32-bit row 4 bytes off a 16-byte boundary (the hardware reads
       16-byte aligned rows) */
    expect_error(ctx, run(ctx, tck_mma_ldmatrix(ctx, TIR_F32, TCK_MISALIGN), TIR_F32, 16, 8, 8, &rep),
                 TIR_ERR_EVAL, (const char *[5]){"must be a 16-byte aligned element", "(float32)"});
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        print_message("# case %zu\n", i);
        expect_error(ctx, run(ctx, cases[i].f, TIR_BF16, 16, 8, 16, &rep), cases[i].code,
                     cases[i].subs);
    }
    /* The divergent warp is reported at lane 16 (the first lane missing). */
    (void)run(ctx, cases[0].f, TIR_BF16, 16, 8, 16, &rep);
    tir_ctx_clear_error(ctx);
    assert_true(rep.has_thread);
    assert_int_equal(rep.thread_idx[0], 16);
}

/* The lanes of a warp must meet at the same call: two mma_sync calls on
 * the two sides of an if diverge, though they do the same. */
static const char *two_calls_text =
    "@T.prim_func\n"
    "def two_calls(A: T.Buffer((256,), \"bfloat16\"), B: T.Buffer((128,), \"bfloat16\"), "
    "C: T.Buffer((128,), \"float32\")):\n"
    "    for tx in T.thread_binding(0, 32, thread=\"threadIdx.x\"):\n"
    "        Af = T.allocate((8,), \"bfloat16\", \"local\")\n"
    "        Bf = T.allocate((4,), \"bfloat16\", \"local\")\n"
    "        Cf = T.allocate((4,), \"float32\", \"local\")\n"
    "        for v in T.unroll(8):\n"
    "            Af[v] = A[v]\n"
    "        for v in T.unroll(4):\n"
    "            Bf[v] = B[v]\n"
    "            Cf[v] = T.float32(0)\n"
    "        if tx < 8:\n"
    "            T.call_intrin(\"void\", \"mma_sync\", T.address_of(Cf[0]), T.address_of(Af[0]), "
    "T.address_of(Bf[0]))\n"
    "        else:\n"
    "            T.call_intrin(\"void\", \"mma_sync\", T.address_of(Cf[0]), T.address_of(Af[0]), "
    "T.address_of(Bf[0]))\n";

static const char *logical_text =
    "@T.prim_func\n"
    "def logical(C: T.Buffer((128,), \"float32\")):\n"
    "    for tx in T.thread_binding(0, 32, thread=\"threadIdx.x\"):\n"
    "        Cf = T.allocate((16, 8), \"float32\", \"frag.acc\")\n"
    "        T.call_intrin(\"void\", \"frag_fill\", T.address_of(Cf[0, 0]), T.float32(0))\n";

static void test_other_errors(void **st) {
    tir_ctx *ctx = *st;
    const tir_prim_func *f = NULL;
    assert_int_equal(tir_parse_func(ctx, two_calls_text, strlen(two_calls_text), &f), TIR_OK);
    uint16_t a[256] = {0}, b[128] = {0};
    float c[128];
    tir_arg args[3] = {{a, 0}, {b, 0}, {c, 0}};
    const char *m1[] = {"divergent warp: lanes 0-7", "lane 8 waits at another warp collective",
                        NULL};
    expect_error(ctx, tir_sim_run(ctx, f, 3, args, NULL, NULL), TIR_ERR_SIM_BARRIER, m1);
    assert_int_equal(tir_parse_func(ctx, logical_text, strlen(logical_text), &f), TIR_OK);
    const char *m2[] = {"calls frag_fill, a logical tile intrinsic", "lower_fragments", NULL};
    expect_error(ctx, tir_sim_run(ctx, f, 1, args + 2, NULL, NULL), TIR_ERR_UNSUPPORTED, m2);
}

/* shfl_xor(value, MASK) in every lane of one warp; MASK is replaced. */
static const char *shfl_text =
    "@T.prim_func\n"
    "def shfl(X: T.Buffer((32,), \"float32\"), Y: T.Buffer((32,), \"float32\")):\n"
    "    for tx in T.thread_binding(0, 32, thread=\"threadIdx.x\"):\n"
    "        COND\n"
    "            Y[tx] = T.call_intrin(\"float32\", \"shfl_xor\", X[tx] + T.float32(1), MASK)\n";

static const tir_prim_func *shfl_func(tir_ctx *ctx, const char *cond, const char *mask) {
    char text[1024];
    const char *c = strstr(shfl_text, "COND"), *m = strstr(shfl_text, "MASK");
    snprintf(text, sizeof text, "%.*s%s%.*s%s%s", (int)(c - shfl_text), shfl_text, cond,
             (int)(m - c - 4), c + 4, mask, m + 4);
    const tir_prim_func *f = NULL;
    if (tir_parse_func(ctx, text, strlen(text), &f) != TIR_OK)
        fail_msg("%s\n%s", tir_ctx_error(ctx), text);
    return f;
}

/* shfl_xor: lane l gets lane l ^ mask's value, for each mask; refused
 * with a lane mask that is no power of two up to 16 or differs between
 * lanes, in a divergent warp, and by the interpreter. */
static void test_shfl_xor(void **st) {
    tir_ctx *ctx = *st;
    float x[32], y[32];
    for (int i = 0; i < 32; i++) x[i] = (float)(i * i);
    tir_arg args[2] = {{x, 0}, {y, 0}};
    static const char *const masks[] = {"1", "2", "4", "8", "16"};
    for (int k = 0; k < 5; k++) {
        const tir_prim_func *f = shfl_func(ctx, "if True:", masks[k]);
        tir_sim_report rep;
        for (int i = 0; i < 32; i++) y[i] = -1;
        if (tir_sim_run(ctx, f, 2, args, NULL, &rep) != TIR_OK) fail_msg("%s", tir_ctx_error(ctx));
        assert_int_equal(rep.warp_ops, 1);
        for (int i = 0; i < 32; i++) assert_true(y[i] == x[i ^ (1 << k)] + 1);
    }
    const char *m1[] = {"shfl_xor(.., 3)", "must be 1, 2, 4, 8 or 16", NULL};
    expect_error(ctx, tir_sim_run(ctx, shfl_func(ctx, "if True:", "3"), 2, args, NULL, NULL),
                 TIR_ERR_EVAL, m1);
    const char *m2[] = {"shfl_xor(.., 2)", "the same in every lane (lane 0 has 1)", NULL};
    expect_error(ctx,
                 tir_sim_run(ctx, shfl_func(ctx, "if True:", "tx % 2 + 1"), 2, args, NULL, NULL),
                 TIR_ERR_EVAL, m2);
    const char *m3[] = {"divergent warp: lanes 0-15", "wait at shfl_xor", NULL};
    expect_error(ctx, tir_sim_run(ctx, shfl_func(ctx, "if tx < 16:", "1"), 2, args, NULL, NULL),
                 TIR_ERR_SIM_BARRIER, m3);
    const char *m4[] = {"shfl_xor is an intrinsic of lowered kernels", NULL};
    expect_error(ctx, tir_interp_run(ctx, shfl_func(ctx, "if True:", "1"), 2, args, NULL),
                 TIR_ERR_UNSUPPORTED, m4);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_shfl_xor, setup, teardown),
        cmocka_unit_test_setup_teardown(test_one_warp, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tf32_matters, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ldmatrix, setup, teardown),
        cmocka_unit_test_setup_teardown(test_warps_and_k_loop, setup, teardown),
        cmocka_unit_test_setup_teardown(test_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_other_errors, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
