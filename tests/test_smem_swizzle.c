/* Tests of the shared-tile swizzle flatten applies (src/lower/flatten.c,
 * docs/lowering.md): the column map's properties, then tensor-core
 * kernels whose tiles it swizzles, simulated against the interpreter.
 *
 * The map moves the 16-byte chunk c of row i within its 128-byte segment
 * to ((c / 2 + i) % 4) * 2 + (c % 2 + i / 4 % 2) % 2.  What it must give,
 * checked at every row and column of two segments for 2- and 4-byte
 * elements: a bijection of each row that keeps a chunk's elements
 * together and in order and keeps the segment; 8 consecutive rows of one
 * chunk in 8 different chunks of their segments (ldmatrix's 8 row reads of
 * a phase meet no bank conflict: the segment is the 32 banks); and the
 * chunk pair of a 32-byte sector in one sector (a global sector stays one
 * shared sector, the point of swizzling instead of padding).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <cmocka.h>

#include "lower/lower_internal.h"
#include "minitir/codegen.h"
#include "minitir/runtime.h"
#include "minitir/sim.h"
#include "minitir/tune.h"
#include "tc_sim_check.h"

#define OK(ctx, call)                                                                      \
    do {                                                                                   \
        tir_status st_ = (call);                                                           \
        if (st_ != TIR_OK) fail_msg("%s: %s", #call, tir_ctx_error(ctx));                   \
    } while (0)

/* The swizzled column of (i, j), folded to a constant. */
static int64_t col(tir_ctx *ctx, int64_t i, int64_t j, int64_t eb) {
    const tir_expr *e = lower_swizzle_col(ctx, tir_i32(ctx, i), tir_i32(ctx, j), eb);
    int64_t v;
    e = tir_simplify(ctx, e);
    if (!tir_expr_const_int(e, &v)) fail_msg("swizzled column of (%lld, %lld) is not a constant",
                                            (long long)i, (long long)j);
    return v;
}

static void test_map(void **st) {
    (void)st;
    tir_ctx *ctx = tir_ctx_create();
    enum { ROWS = 40 };
    for (int64_t eb = 2; eb <= 4; eb += 2) {
        int64_t E = 16 / eb, cols = 2 * 8 * E; /* two 128-byte segments */
        static int64_t to[ROWS][2 * 8 * 8];
        for (int64_t i = 0; i < ROWS; i++) {
            bool seen[2 * 8 * 8] = {false};
            for (int64_t j = 0; j < cols; j++) {
                int64_t k = col(ctx, i, j, eb);
                assert_true(k >= 0 && k < cols);
                assert_false(seen[k]); /* a bijection of the row */
                seen[k] = true;
                assert_int_equal(k % E, j % E);             /* the chunk's elements in order */
                assert_int_equal(k / (8 * E), j / (8 * E)); /* the same segment */
                to[i][j] = k;
            }
            for (int64_t c = 0; c < 16; c += 2) /* a sector's two chunks: one sector */
                assert_int_equal(to[i][c * E] / E / 2, to[i][(c + 1) * E] / E / 2);
        }
        for (int64_t i0 = 0; i0 + 8 <= ROWS; i0++)
            for (int64_t c = 0; c < 16; c++) {
                unsigned groups = 0; /* bank groups of 16 bytes: chunk mod 8 */
                for (int64_t r = i0; r < i0 + 8; r++) groups |= 1u << (to[r][c * E] / E % 8);
                assert_int_equal(groups, 0xffu);
            }
    }
    /* symbolic indices stay symbolic (flatten builds the map for any i, j) */
    const tir_var *i = tir_var_new(ctx, "i", TIR_I32), *j = tir_var_new(ctx, "j", TIR_I32);
    int64_t v;
    assert_false(tir_expr_const_int(
        tir_simplify(ctx, lower_swizzle_col(ctx, (const tir_expr *)i, (const tir_expr *)j, 2)), &v));
    tir_ctx_destroy(ctx);
}

/* The kernel of the tensor-core rule for cfg at M x N x K, lowered with or
 * without the swizzle; *text its printed form. */
static const tir_prim_func *kernel_of(tir_ctx *ctx, tir_rt_gemm_kind kind, int64_t M, int64_t N,
                                      int64_t K, const tir_tc_config *cfg, bool no_swizzle,
                                      const tir_prim_func **f, const char **text) {
    tir_tune_task t = {TIR_TUNE_MATMUL, 1, M, N, K, kind};
    *f = tir_tune_task_func(ctx, &t);
    tir_schedule *s = NULL;
    OK(ctx, tir_sched_create(ctx, *f, &s));
    OK(ctx, tir_tune_tc_tiling(s, "C", cfg, NULL, NULL));
    tir_lower_opts o;
    tir_lower_opts_init(&o);
    o.no_smem_swizzle = no_swizzle;
    const tir_prim_func *k;
    OK(ctx, tir_lower(ctx, tir_sched_func(s), &o, &k));
    *text = tir_print(ctx, k);
    tir_sched_destroy(s);
    return k;
}

/* Tiles of whole 128-byte rows: the rule leaves them unpadded and flatten
 * swizzles them (the kernel differs from the one lowered without the
 * swizzle, whose shared memory is the same size); both compute the
 * product.  Rows of 96 and 64 bytes are padded and not swizzled. */
static void test_kernels(void **st) {
    (void)st;
    static const struct {
        tir_rt_gemm_kind kind;
        int64_t m, n, k;
        int bm, bn, bk, wm, wn, stages;
        bool swizzled;
    } cases[] = {
        {TIR_RT_GEMM_BF16, 130, 260, 128, 64, 128, 64, 2, 2, 3, true}, /* A and B: 128, 256 B */
        {TIR_RT_GEMM_F16, 70, 136, 64, 64, 64, 64, 2, 2, 2, true},
        {TIR_RT_GEMM_TF32, 70, 136, 64, 64, 128, 32, 2, 2, 3, true}, /* A only */
        {TIR_RT_GEMM_BF16, 64, 64, 96, 64, 64, 48, 2, 2, 2, true},   /* B only (A: 96 B) */
        {TIR_RT_GEMM_BF16, 64, 64, 96, 64, 32, 48, 2, 1, 2, false},  /* rows of 96, 64 B */
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        tir_ctx *ctx = tir_ctx_create();
        tir_tc_config cfg = tir_tc_config_default();
        cfg.bm = cases[c].bm, cfg.bn = cases[c].bn, cfg.bk = cases[c].bk;
        cfg.warps_m = cases[c].wm, cfg.warps_n = cases[c].wn, cfg.stages = cases[c].stages;
        tir_tune_task t = {TIR_TUNE_MATMUL, 1, cases[c].m, cases[c].n, cases[c].k, cases[c].kind};
        assert_true(tir_tune_tc_config_valid(&t, &tir_target_find("sm_90")->limits, &cfg));
        const tir_prim_func *f, *on, *off;
        const char *ton, *toff;
        on = kernel_of(ctx, cases[c].kind, cases[c].m, cases[c].n, cases[c].k, &cfg, false, &f, &ton);
        off = kernel_of(ctx, cases[c].kind, cases[c].m, cases[c].n, cases[c].k, &cfg, true, &f, &toff);
        if ((strcmp(ton, toff) != 0) != cases[c].swizzled)
            fail_msg("case %zu: %s", c, cases[c].swizzled ? "not swizzled" : "swizzled");
        const tir_module *m1, *m2;
        OK(ctx, tir_codegen(ctx, on, NULL, &m1));
        OK(ctx, tir_codegen(ctx, off, NULL, &m2));
        int eb = tir_dtype_bytes(tir_rt_gemm_kind_input(cases[c].kind));
        if (m1->dyn_shared_bytes + m1->shared_bytes != tir_tc_config_shared_bytes(&cfg, eb))
            fail_msg("case %zu: %lld shared bytes, the rule says %lld", c,
                     (long long)(m1->dyn_shared_bytes + m1->shared_bytes),
                     (long long)tir_tc_config_shared_bytes(&cfg, eb));
        assert_int_equal(m1->dyn_shared_bytes + m1->shared_bytes,
                         m2->dyn_shared_bytes + m2->shared_bytes);
        OK(ctx, tc_sim_check(ctx, cases[c].kind, cases[c].m, cases[c].n, cases[c].k, f, on,
                             11, "swizzled tiles", NULL));
        OK(ctx, tc_sim_check(ctx, cases[c].kind, cases[c].m, cases[c].n, cases[c].k, f, off,
                             11, "unswizzled tiles", NULL));
        /* the rule's padded rows (no_smem_swizzle): not swizzled either way */
        cfg.no_smem_swizzle = true;
        on = kernel_of(ctx, cases[c].kind, cases[c].m, cases[c].n, cases[c].k, &cfg, false, &f, &ton);
        off = kernel_of(ctx, cases[c].kind, cases[c].m, cases[c].n, cases[c].k, &cfg, true, &f, &toff);
        assert_string_equal(ton, toff);
        OK(ctx, tc_sim_check(ctx, cases[c].kind, cases[c].m, cases[c].n, cases[c].k, f, on,
                             11, "padded tiles", NULL));
        tir_ctx_destroy(ctx);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_map),
        cmocka_unit_test(test_kernels),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
