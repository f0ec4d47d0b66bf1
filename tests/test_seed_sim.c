/* test_seed_sim.c: every seed schedule (examples/seed/seed.c, Steps 1-6) and
 * every fused epilogue schedule (bias, bias+ReLU, clip) lowered with
 * tir_lower and run in the SIMT simulator at small sizes that are not
 * multiples of the tiles, against the reference interpreter running the
 * unscheduled program on the same random inputs.  The simulator also
 * reports races, barrier errors, out-of-bounds accesses and reads of
 * never-written shared or local memory; any of those fails the test.  The
 * output starts as NaN, so an element the kernel never writes fails too.
 * Checked on the side: the launch shape of Steps 1 and 2+.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "minitir/lower.h"
#include "minitir/sim.h"
#include "minitir/runtime.h"
#include "seed.h"

#define OK(ctx, call)                                                                     \
    do {                                                                                  \
        tir_status st_ = (call);                                                          \
        if (st_ != TIR_OK) fail_msg("%s: %s", #call, tir_ctx_error(ctx));                 \
    } while (0)

static int64_t last_barriers; /* barrier releases of sim_one's last run */

/* e < 0: the matmul.  Returns the relative error. */
static double sim_one(int e, int step, int64_t M, int64_t N, int64_t K) {
    tir_ctx *ctx = tir_ctx_create();
    const tir_prim_func *f = e < 0 ? tir_def_matmul(ctx, M, N, K, TIR_F32)
                                   : seed_def_fused(ctx, (seed_epi)e, M, N, K);
    assert_non_null(f);
    tir_schedule *s;
    OK(ctx, tir_sched_create(ctx, f, &s));
    OK(ctx, e < 0 ? seed_schedule(s, step, NULL, NULL) : seed_fused(s, step, NULL, NULL));
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
    if (step == 1) {
        assert_int_equal(rep.grid[0], M);
        assert_int_equal(rep.block[0], N);
    } else if (step >= 7) { /* sgemm.c: j tiles on blockIdx.x, 256 threads */
        assert_int_equal(rep.grid[0], (N + 127) / 128);
        assert_int_equal(rep.grid[1], (M + 127) / 128);
        assert_int_equal(rep.block[0], 256);
    } else {
        assert_int_equal(rep.grid[0], (M + 31) / 32);
        assert_int_equal(rep.grid[1], (N + 31) / 32);
        assert_int_equal(rep.block[0] * rep.block[1], 32);
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
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
