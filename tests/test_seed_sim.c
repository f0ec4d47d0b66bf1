/* test_seed_sim.c: every seed schedule (examples/seed/seed.c, Steps 1-6) and
 * every fused epilogue schedule (bias, bias+ReLU, clip) lowered with
 * tir_lower and run in the SIMT simulator at small sizes that are not
 * multiples of the tiles, against the reference interpreter running the
 * unscheduled program on the same random inputs.  The simulator also
 * reports races, barrier errors, out-of-bounds accesses and reads of
 * never-written shared or local memory; any of those fails the test.  The
 * output starts as NaN, so an element the kernel never writes fails too.
 * Checked on the side: the launch shape of Steps 1 and 2+.  The matmul
 * also runs with 128x128x32 tiles, whose double buffer (64 KiB) is past
 * the static 48 KiB: lowered, simulated, compiled to PTX with one dynamic
 * shared array (and assembled by ptxas where it is installed), and refused
 * with the buffers named where it passes a target's opt-in maximum.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "minitir/codegen.h"
#include "minitir/lower.h"
#include "minitir/sim.h"
#include "minitir/runtime.h"
#include "ptxas_check.h"
#include "seed.h"
#include "sgemm.h"

#define OK(ctx, call)                                                                     \
    do {                                                                                  \
        tir_status st_ = (call);                                                          \
        if (st_ != TIR_OK) fail_msg("%s: %s", #call, tir_ctx_error(ctx));                 \
    } while (0)

static int64_t last_barriers; /* barrier releases of sim_one's last run */
static int64_t last_shared;   /* shared bytes per block of sim_one's last run */

/* e < 0: the matmul, with tiles sz.  Returns the relative error. */
static double sim_tiles(int e, int step, const seed_tiles *sz, int64_t M, int64_t N, int64_t K) {
    tir_ctx *ctx = tir_ctx_create();
    const tir_prim_func *f = e < 0 ? tir_def_matmul(ctx, M, N, K, TIR_F32)
                                   : seed_def_fused(ctx, (seed_epi)e, M, N, K);
    assert_non_null(f);
    tir_schedule *s;
    OK(ctx, tir_sched_create(ctx, f, &s));
    OK(ctx, e < 0 ? seed_schedule_tiles(s, step, sz, NULL, NULL) : seed_fused(s, step, NULL, NULL));
    const tir_prim_func *kernel;
    OK(ctx, tir_lower(ctx, tir_sched_func(s), NULL, &kernel));
    tir_sched_destroy(s);
    size_t nc = (size_t)(M * N);
    float *a = malloc(sizeof(float) * (size_t)(M * K)), *b = malloc(sizeof(float) * (size_t)(K * N));
    float *bias = malloc(sizeof(float) * (size_t)N), *out = malloc(sizeof(float) * nc);
    float *want = malloc(sizeof(float) * nc);
    double *ref = malloc(sizeof(double) * nc);
    OK(ctx, tir_rt_fill_random(ctx, TIR_F32, a, (size_t)(M * K), 11 + (uint64_t)step));
    OK(ctx, tir_rt_fill_random(ctx, TIR_F32, b, (size_t)(K * N), 12 + (uint64_t)step));
    OK(ctx, tir_rt_fill_random(ctx, TIR_F32, bias, (size_t)N, 13));
    tir_rt_poison(out, sizeof(float) * nc);
    int nargs = e < 0 ? 3 : 4;
    tir_arg args[4] = {{a, 0}, {b, 0}, {bias, 0}, {out, 0}}, rargs[4];
    if (e < 0) args[2].data = out;
    memcpy(rargs, args, sizeof args);
    rargs[nargs - 1].data = want;
    tir_interp_opts io = {.uninit_params = 1ull << (nargs - 1)};
    OK(ctx, tir_interp_run(ctx, f, nargs, rargs, &io));
    tir_sim_opts so = {.uninit_params = 1ull << (nargs - 1), .check_uninit = true};
    tir_sim_report rep;
    OK(ctx, tir_sim_run(ctx, kernel, nargs, args, &so, &rep));
    last_barriers = rep.barriers;
    last_shared = rep.shared_bytes;
    const seed_tiles *z = sz ? sz : &seed_tiles_default;
    if (step == 1) {
        assert_int_equal(rep.grid[0], M);
        assert_int_equal(rep.block[0], N);
    } else if (step >= 7) { /* sgemm.c: j tiles on blockIdx.x */
        sgemm_config c = sgemm_config_for(M, N, K, 132);
        int64_t bm = c.warps_m * c.threads_m * c.tm, bn = c.warps_n * c.threads_n * c.tn;
        assert_int_equal(rep.grid[0], (N + bn - 1) / bn);
        assert_int_equal(rep.grid[1], (M + bm - 1) / bm);
        assert_int_equal(rep.block[0], 32 * c.warps_m * c.warps_n);
    } else {
        assert_int_equal(rep.grid[0], (M + z->bm - 1) / z->bm);
        assert_int_equal(rep.grid[1], (N + z->bn - 1) / z->bn);
        assert_int_equal(rep.block[0] * rep.block[1], (z->bm / z->tm) * (z->bn / z->tn));
    }
    if (step >= 3) assert_true(rep.barriers > 0 && rep.shared_bytes > 0);
    else assert_int_equal(rep.shared_bytes, 0);
    for (size_t i = 0; i < nc; i++) ref[i] = want[i];
    tir_rt_error_stats es;
    tir_status st = tir_rt_check(ctx, "seed", TIR_F32, out, ref, M, N, 1e-5, &es);
    if (st != TIR_OK)
        fail_msg("%s step %d %lldx%lldx%lld: %s", e < 0 ? "matmul" : seed_epi_name((seed_epi)e),
                 step, (long long)M, (long long)N, (long long)K, tir_ctx_error(ctx));
    assert_int_equal(es.nonfinite, 0);
    free(a);
    free(b);
    free(bias);
    free(out);
    free(want);
    free(ref);
    tir_ctx_destroy(ctx);
    return es.rel_err;
}

static double sim_one(int e, int step, int64_t M, int64_t N, int64_t K) {
    return sim_tiles(e, step, NULL, M, N, K);
}

static void matmul_steps(void **state) {
    (void)state;
    for (int step = 1; step <= SEED_NSTEPS; step++) {
        assert_true(sim_one(-1, step, 37, 29, 23) <= 1e-5);
        assert_true(sim_one(-1, step, 33, 41, 35) <= 1e-5);
    }
}

/* Steps 5 and 6 (the double-buffered pipeline) at odd sizes with several
 * k tiles, so that the steady-state loop runs more than once: right
 * results with race and uninitialised-read checks, and one barrier per k
 * tile in every block (the prologue's, then one per steady-state
 * iteration). */
static void pipeline_one_barrier_per_tile(void **state) {
    (void)state;
    static const int64_t sizes[][3] = {{37, 45, 131}, {65, 33, 97}, {33, 70, 200}};
    for (int step = 5; step <= 6; step++)
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
            int64_t M = sizes[i][0], N = sizes[i][1], K = sizes[i][2];
            assert_true(sim_one(-1, step, M, N, K) <= 1e-5);
            int64_t blocks = ((M + 31) / 32) * ((N + 31) / 32), tiles = (K + 31) / 32;
            assert_int_equal(last_barriers, blocks * tiles);
        }
}

static void fused_epilogues(void **state) {
    (void)state;
    for (int e = 0; e < SEED_NEPI; e++)
        for (int step = 1; step <= SEED_NFUSED_STEPS; step++)
            assert_true(sim_one(e, step, 35, 33, 37) <= 1e-5);
}

/* ---------------------------------------- shared memory past 48 KiB */

static const seed_tiles big_tiles = {.bm = 128, .bn = 128, .bk = 32, .tm = 8, .tn = 8};

/* 128x128x32 tiles: Steps 3-4 hold 2 x 16 KiB of A and B tiles, Steps 5-6
 * double-buffer them (64 KiB, past the static 48 KiB).  Lowered with the
 * default (sm_90) limits and simulated at sizes that are not multiples of
 * the tiles, with several k tiles, against the interpreter, with race and
 * uninitialised-read checks. */
static void big_tiles_sim(void **state) {
    (void)state;
    /* (M, N >= 128, or the tiles would be compacted to the matrix) */
    for (int step = 3; step <= SEED_NFUSED_STEPS; step++) { /* 7, 8: sgemm.c's tiles */
        assert_true(sim_tiles(-1, step, &big_tiles, 130, 131, 45) <= 1e-5);
        assert_int_equal(last_shared, step >= 5 ? 65536 : 32768);
    }
    assert_true(sim_tiles(-1, 6, &big_tiles, 129, 200, 100) <= 1e-5);
    assert_int_equal(last_shared, 65536);
    assert_int_equal(last_barriers, 4 * 4); /* 4 blocks, 4 k tiles */
}

/* The lowered kernel of the matmul with tiles sz at step, under limits lim
 * (NULL: the default target's); NULL with the error in ctx. */
static const tir_prim_func *lower_tiles(tir_ctx *ctx, const seed_tiles *sz, int step,
                                        const tir_target_limits *lim) {
    tir_schedule *s;
    OK(ctx, tir_sched_create(ctx, tir_def_matmul(ctx, 1000, 1000, 1000, TIR_F32), &s));
    OK(ctx, seed_schedule_tiles(s, step, sz, NULL, NULL));
    tir_lower_opts o;
    tir_lower_opts_init_target(&o, lim ? lim : &tir_target_default()->limits);
    const tir_prim_func *k = NULL;
    tir_status st = tir_lower(ctx, tir_sched_func(s), &o, &k);
    tir_sched_destroy(s);
    return st == TIR_OK ? k : NULL;
}

static int count(const char *s, const char *what) {
    int n = 0;
    for (const char *p = strstr(s, what); p; p = strstr(p + 1, what)) n++;
    return n;
}

/* The 64 KiB kernel in PTX: one extern dynamic array, no static shared
 * array, tir_module.dyn_shared_bytes 65536, float4 shared loads (the
 * alignment survived), and ptxas accepts it for sm_90 and sm_80. */
static void big_tiles_ptx(void **state) {
    (void)state;
    tir_ctx *ctx = tir_ctx_create();
    const tir_prim_func *k = lower_tiles(ctx, &big_tiles, 6, NULL);
    if (!k) fail_msg("%s", tir_ctx_error(ctx));
    const char *archs[] = {"sm_90", "sm_80"};
    for (int i = 0; i < 2; i++) {
        tir_codegen_opts o;
        tir_codegen_opts_init(&o);
        o.arch = archs[i];
        const tir_module *m;
        OK(ctx, tir_codegen(ctx, k, &o, &m));
        assert_int_equal(m->dyn_shared_bytes, 65536);
        assert_int_equal(m->shared_bytes, 0);
        assert_int_equal(count(m->ptx, ".shared .align"), 1);
        assert_non_null(strstr(m->ptx, ".extern .shared .align 64 .b8 minitir_dyn_shared[];"));
        assert_non_null(strstr(m->ptx, "ld.shared.v4.f32"));
        ptxas_check(m);
    }
    /* 128x128x64 double-buffered is 128 KiB: within sm_90's 227 KiB, past
     * sm_86's 99 KiB, so lowering for sm_86 refuses it */
    const seed_tiles k64 = {.bm = 128, .bn = 128, .bk = 64, .tm = 8, .tn = 8};
    assert_non_null(lower_tiles(ctx, &k64, 5, NULL));
    assert_null(lower_tiles(ctx, &k64, 5, &tir_target_find("sm_86")->limits));
    const char *e = tir_ctx_error(ctx);
    assert_non_null(strstr(e, "131072 bytes of shared memory"));
    assert_non_null(strstr(e, "limit 101376"));
    tir_ctx_destroy(ctx);
}

/* Past the opt-in maximum of the default target (sm_90, 227 KiB): 256x256
 * tiles with k tiles of 64, double-buffered, are 256 KiB; the message names
 * the buffers. */
static void big_tiles_over_limit(void **state) {
    (void)state;
    tir_ctx *ctx = tir_ctx_create();
    const seed_tiles huge = {.bm = 256, .bn = 256, .bk = 64, .tm = 16, .tn = 16};
    assert_null(lower_tiles(ctx, &huge, 5, NULL));
    const char *e = tir_ctx_error(ctx);
    assert_non_null(strstr(e, "262144 bytes of shared memory per block"));
    assert_non_null(strstr(e, "limit 232448"));
    assert_non_null(strstr(e, "A_shared"));
    assert_non_null(strstr(e, "B_shared"));
    /* the simulator checks the opt-in maximum of the limits it is given:
     * the 64 KiB kernel under a 60000-byte one stops at its second tile */
    const tir_prim_func *k = lower_tiles(ctx, &big_tiles, 5, NULL);
    assert_non_null(k);
    tir_target_limits lim = tir_target_default()->limits;
    lim.max_shared_dynamic = 60000;
    float *a = calloc(1000 * 1000, 4), *b = calloc(1000 * 1000, 4), *c = calloc(1000 * 1000, 4);
    tir_arg args[3] = {{a, 0}, {b, 0}, {c, 0}};
    tir_sim_opts so = {.limits = &lim};
    tir_sim_report rep;
    assert_int_equal(tir_sim_run(ctx, k, 3, args, &so, &rep), TIR_ERR_SIM_LAUNCH);
    assert_non_null(strstr(tir_ctx_error(ctx), "_shared takes the block's shared memory"));
    assert_non_null(strstr(tir_ctx_error(ctx), "(at most 60000)"));
    free(a);
    free(b);
    free(c);
    /* bad tiles are a user error */
    tir_schedule *s;
    OK(ctx, tir_sched_create(ctx, tir_def_matmul(ctx, 64, 64, 64, TIR_F32), &s));
    const seed_tiles bad = {.bm = 32, .bn = 32, .bk = 32, .tm = 5, .tn = 4};
    assert_int_equal(seed_schedule_tiles(s, 2, &bad, NULL, NULL), TIR_ERR_INVALID_ARG);
    assert_non_null(strstr(tir_ctx_error(ctx), "thread tile must divide"));
    tir_sched_destroy(s);
    tir_ctx_destroy(ctx);
}

/* A wrong step is a user error, not a crash. */
static void bad_step(void **state) {
    (void)state;
    tir_ctx *ctx = tir_ctx_create();
    tir_schedule *s;
    OK(ctx, tir_sched_create(ctx, tir_def_matmul(ctx, 8, 8, 8, TIR_F32), &s));
    assert_int_equal(seed_schedule(s, 9, NULL, NULL), TIR_ERR_INVALID_ARG);
    assert_non_null(strstr(tir_ctx_error(ctx), "0..6"));
    assert_int_equal(seed_epi_parse("relu"), SEED_EPI_RELU);
    assert_int_equal(seed_epi_parse("gelu"), -1);
    tir_sched_destroy(s);
    tir_ctx_destroy(ctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(matmul_steps),
        cmocka_unit_test(pipeline_one_barrier_per_tile),
        cmocka_unit_test(fused_epilogues),
        cmocka_unit_test(bad_step),
        cmocka_unit_test(big_tiles_sim),
        cmocka_unit_test(big_tiles_ptx),
        cmocka_unit_test(big_tiles_over_limit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
