/* test_sim_lowered.c: the SIMT simulator on kernels produced by the
 * lowering pipeline (tir_lower) from the seed blog's matmul schedules
 * (tests/lower_kernels.c: Steps 1-6, including the software pipeline with
 * and without cp.async, at sizes that are and are not multiples of the
 * tiles).  Each kernel must run in the simulator without a race,
 * barrier or memory error and give C bit for bit equal to the reference
 * interpreter running the unscheduled matmul; the shared-memory kernels
 * with a barrier removed must be reported as races.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lower_kernels.h"
#include "minitir/lower.h"
#include "minitir/sim.h"

static void fill(float *a, int64_t n, unsigned seed) {
    for (int64_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        a[i] = (float)((seed >> 8) % 2001) / 1000.0f - 1.0f;
    }
}

/* Lowering keeps unannotated pipelined copies synchronous while set
 * (tir_lower_opts.sync_pipeline_copies); by default they become cp.async. */
static bool sync_copies;

static const tir_prim_func *lower(tir_ctx *ctx, const tir_prim_func *f) {
    assert_non_null(f);
    const tir_prim_func *k = NULL;
    tir_lower_opts o;
    tir_lower_opts_init(&o);
    o.sync_pipeline_copies = sync_copies;
    tir_status st = tir_lower(ctx, f, &o, &k);
    if (st != TIR_OK) fprintf(stderr, "tir_lower: %s\n", tir_ctx_error(ctx));
    assert_int_equal(st, TIR_OK);
    return k;
}

typedef struct mats {
    int64_t M, N, K;
    float *a, *b, *want;
} mats;

static mats make_mats(tir_ctx *ctx, int64_t M, int64_t N, int64_t K) {
    mats m = {M, N, K, malloc(sizeof(float) * (size_t)(M * K)),
              malloc(sizeof(float) * (size_t)(K * N)), calloc((size_t)(M * N), sizeof(float))};
    fill(m.a, M * K, 21);
    fill(m.b, K * N, 22);
    tir_arg args[3] = {{m.a, 0}, {m.b, 0}, {m.want, 0}};
    tir_interp_opts o = {.uninit_params = 1u << 2};
    assert_int_equal(tir_interp_run(ctx, tir_def_matmul(ctx, M, N, K, TIR_F32), 3, args, &o),
                     TIR_OK);
    return m;
}

static void free_mats(mats *m) {
    free(m->a);
    free(m->b);
    free(m->want);
}

/* Simulates kernel k on m's inputs; returns the status, checks C on OK. */
static tir_status simulate(tir_ctx *ctx, const tir_prim_func *k, const mats *m,
                           tir_sim_report *rep) {
    float *c = calloc((size_t)(m->M * m->N), sizeof(float));
    tir_arg args[3] = {{m->a, 0}, {m->b, 0}, {c, 0}};
    tir_sim_opts opts = {.uninit_params = 1u << 2, .check_uninit = true,
                         .check_global_races = true};
    tir_status st = tir_sim_run(ctx, k, 3, args, &opts, rep);
    if (st == TIR_OK) {
        int bad = memcmp(c, m->want, sizeof(float) * (size_t)(m->M * m->N));
        free(c);
        assert_int_equal(bad, 0);
    } else {
        free(c);
    }
    return st;
}

static void check_ok(tir_ctx *ctx, const tir_prim_func *k, const mats *m, tir_sim_report *rep) {
    tir_status st = simulate(ctx, k, m, rep);
    if (st != TIR_OK) fprintf(stderr, "%s:\n%s\n", tir_status_name(st), tir_ctx_error(ctx));
    assert_int_equal(st, TIR_OK);
}

static void test_step1_step2(void **state) {
    (void)state;
    static const int64_t sizes[2][3] = {{64, 64, 64}, {48, 40, 40}};
    for (int s = 0; s < 2; s++) {
        tir_ctx *ctx = tir_ctx_create();
        int64_t M = sizes[s][0], N = sizes[s][1], K = sizes[s][2];
        mats m = make_mats(ctx, M, N, K);
        tir_sim_report rep;
        check_ok(ctx, lower(ctx, lk_step1(ctx, M, N, K)), &m, &rep);
        assert_int_equal(rep.grid[0], M);
        assert_int_equal(rep.block[0], N);
        assert_int_equal(rep.threads_run, M * N);
        check_ok(ctx, lower(ctx, lk_step2(ctx, M, N, K)), &m, &rep);
        assert_int_equal(rep.grid[0] * rep.grid[1], ((M + 31) / 32) * ((N + 31) / 32));
        assert_int_equal(rep.block[0] * rep.block[1], 32);
        free_mats(&m);
        tir_ctx_destroy(ctx);
    }
}

/* Steps 3, 4 and 6: shared tiles, cooperative fetch, barriers. */
static void test_shared_steps(void **state) {
    (void)state;
    static const int flags[4] = {0, LK_LOCAL_ACC, LK_LOCAL_ACC | LK_VEC_FETCH,
                                 LK_LOCAL_ACC | LK_UNROLL};
    static const int64_t sizes[2][3] = {{64, 64, 64}, {48, 40, 40}};
    for (int s = 0; s < 2; s++)
        for (int f = 0; f < 4; f++) {
            tir_ctx *ctx = tir_ctx_create();
            int64_t M = sizes[s][0], N = sizes[s][1], K = sizes[s][2];
            mats m = make_mats(ctx, M, N, K);
            sync_copies = !(flags[f] & LK_ASYNC);
            const tir_prim_func *k = lower(ctx, lk_shared(ctx, M, N, K, flags[f]));
            sync_copies = false;
            tir_sim_report rep;
            check_ok(ctx, k, &m, &rep);
            assert_true(rep.coroutines);
            assert_int_equal(rep.shared_bytes, 8192);
            /* two barriers per k step of 32, in every block */
            assert_int_equal(rep.barriers, rep.blocks_run * 2 * ((K + 31) / 32));
            free_mats(&m);
            tir_ctx_destroy(ctx);
        }
}

/* One element of each tile per thread (8x8 threads, 8x8 tiles, k tile 8:
 * the cooperative fetch loop has extent 1), and two (k tile 16): the same
 * two barriers per k step, no race, C as the interpreter's. */
static void test_one_element_per_thread(void **state) {
    (void)state;
    static const int64_t sizes[2][3] = {{64, 64, 64}, {44, 52, 40}};
    for (int s = 0; s < 2; s++)
        for (int64_t kt = 8; kt <= 16; kt += 8) {
            tir_ctx *ctx = tir_ctx_create();
            int64_t M = sizes[s][0], N = sizes[s][1], K = sizes[s][2];
            mats m = make_mats(ctx, M, N, K);
            const tir_prim_func *k = lower(ctx, lk_one_per_thread(ctx, M, N, K, kt));
            tir_sim_report rep;
            check_ok(ctx, k, &m, &rep);
            assert_int_equal(rep.block[0] * rep.block[1], 64);
            assert_int_equal(rep.blocks_run, ((M + 7) / 8) * ((N + 7) / 8));
            assert_int_equal(rep.barriers, rep.blocks_run * 2 * ((K + kt - 1) / kt));
            free_mats(&m);
            tir_ctx_destroy(ctx);
        }
}

static const tir_node *drop_wait(tir_mutator *mu, const tir_node *n);

/* Step 5: the software pipeline (double-buffered shared tiles), with
 * plain copies and with cp.async (16-byte copies need the 16-byte
 * aligned parameters of LK_ALIGN16), and Steps 3-6 built with the
 * schedule primitives instead of text. */
static void test_pipelined_steps(void **state) {
    (void)state;
    static const int flags[4] = {
        LK_LOCAL_ACC | LK_PIPELINE,
        LK_LOCAL_ACC | LK_PIPELINE | LK_ASYNC,
        LK_LOCAL_ACC | LK_VEC_FETCH | LK_PIPELINE | LK_ASYNC | LK_ALIGN16,
        LK_LOCAL_ACC | LK_VEC_FETCH | LK_PIPELINE | LK_ASYNC | LK_UNROLL,
    };
    static const int64_t sizes[2][3] = {{64, 64, 128}, {48, 40, 72}};
    for (int s = 0; s < 2; s++)
        for (int f = 0; f < 4; f++) {
            if ((flags[f] & LK_ALIGN16) && s == 1) continue; /* rows not 16-byte aligned */
            tir_ctx *ctx = tir_ctx_create();
            int64_t M = sizes[s][0], N = sizes[s][1], K = sizes[s][2];
            mats m = make_mats(ctx, M, N, K);
            sync_copies = !(flags[f] & LK_ASYNC);
            const tir_prim_func *k = lower(ctx, lk_shared(ctx, M, N, K, flags[f]));
            sync_copies = false;
            tir_sim_report rep;
            check_ok(ctx, k, &m, &rep);
            assert_true(rep.coroutines);
            /* two versions of each 32x32 tile */
            assert_int_equal(rep.shared_bytes, 2 * 8192);
            if (flags[f] & LK_ASYNC)
                assert_true(rep.cp_async_copies > 0);
            else
                assert_int_equal(rep.cp_async_copies, 0);
            if (flags[f] & LK_ASYNC) {
                /* every cp_async_wait removed: a tile is read in flight */
                const tir_prim_func *broken = k;
                tir_status st;
                int n = 0;
                for (;;) {
                    int w = 0;
                    tir_mutator mu;
                    memset(&mu, 0, sizeof mu);
                    mu.ctx = ctx;
                    mu.user = &w;
                    mu.on[TIR_KIND_EVALUATE] = drop_wait;
                    const tir_stmt *body = tir_mutate_stmt(&mu, broken->body);
                    if (body == broken->body) break;
                    broken = tir_prim_func_new(ctx, k->name, k->nparams, k->params,
                                               k->buffer_map, body, k->nattrs, k->attrs);
                    n++;
                }
                assert_true(n > 0);
                st = simulate(ctx, broken, &m, NULL);
                assert_int_equal(st, TIR_ERR_SIM_CP_ASYNC_PENDING);
                assert_non_null(strstr(tir_ctx_error(ctx), "that has not completed"));
            }
            free_mats(&m);
            tir_ctx_destroy(ctx);
        }
    /* the same steps from the schedule primitives */
    /* (the last unannotated: its copies become cp.async by default) */
    static const int sflags[4] = {LK_LOCAL_ACC, LK_LOCAL_ACC | LK_VEC_FETCH | LK_UNROLL,
                                  LK_LOCAL_ACC | LK_PIPELINE | LK_ASYNC,
                                  LK_LOCAL_ACC | LK_VEC_FETCH | LK_PIPELINE};
    for (int f = 0; f < 4; f++) {
        tir_ctx *ctx = tir_ctx_create();
        mats m = make_mats(ctx, 64, 64, 64);
        tir_sim_report rep;
        check_ok(ctx, lower(ctx, lk_shared_sched(ctx, 64, 64, 64, sflags[f])), &m, &rep);
        assert_true(rep.barriers > 0);
        if (sflags[f] & LK_PIPELINE) assert_true(rep.cp_async_copies > 0);
        free_mats(&m);
        tir_ctx_destroy(ctx);
    }
}

/* Either barrier of the lowered Step 3 removed: a race (or, for the first
 * one, a read of a tile element nobody fetched yet). */
static const tir_node *drop_sync(tir_mutator *mu, const tir_node *n) {
    int *which = mu->user;
    const tir_call *c = tir_as_tir_call(((const tir_evaluate *)n)->value);
    if (c && c->op == TIR_INTRIN_SYNCTHREADS && *which >= 0 && (*which)-- == 0)
        return (const tir_node *)tir_evaluate_new(mu->ctx, tir_i32(mu->ctx, 0));
    return n;
}

/* Removes the first cp_async_wait met (user: a counter, 0 before). */
static const tir_node *drop_wait(tir_mutator *mu, const tir_node *n) {
    int *done = mu->user;
    const tir_call *c = tir_as_tir_call(((const tir_evaluate *)n)->value);
    if (c && c->op == TIR_INTRIN_CP_ASYNC_WAIT && !*done) {
        *done = 1;
        return (const tir_node *)tir_evaluate_new(mu->ctx, tir_i32(mu->ctx, 0));
    }
    return n;
}

static void test_shared_step_missing_barrier(void **state) {
    (void)state;
    for (int which = 0; which < 2; which++) {
        tir_ctx *ctx = tir_ctx_create();
        mats m = make_mats(ctx, 64, 64, 64);
        const tir_prim_func *k = lower(ctx, lk_shared(ctx, 64, 64, 64, LK_LOCAL_ACC));
        int w = which;
        tir_mutator mu;
        memset(&mu, 0, sizeof mu);
        mu.ctx = ctx;
        mu.user = &w;
        mu.on[TIR_KIND_EVALUATE] = drop_sync;
        const tir_stmt *body = tir_mutate_stmt(&mu, k->body);
        assert_int_equal(w, -1);
        const tir_prim_func *broken = tir_prim_func_new(ctx, k->name, k->nparams, k->params,
                                                        k->buffer_map, body, k->nattrs, k->attrs);
        /* the static check of tir_lower refuses it too, naming the buffer */
        assert_int_equal(tir_lower_check_races(ctx, k), TIR_OK);
        assert_int_equal(tir_lower_check_races(ctx, broken), TIR_ERR_LOWER);
        assert_non_null(strstr(tir_ctx_error(ctx), "race_check: shared buffer "));
        assert_non_null(strstr(tir_ctx_error(ctx), "_shared"));
        tir_sim_report rep;
        tir_status st = simulate(ctx, broken, &m, &rep);
        assert_int_equal(st, which == 0 ? TIR_ERR_UNINIT_READ : TIR_ERR_SIM_RACE);
        assert_true(rep.has_thread);
        assert_non_null(strstr(tir_ctx_error(ctx), "blockIdx ("));
        /* without the uninitialised-read check it is always a race */
        float *c = calloc(64 * 64, sizeof(float));
        tir_arg args[3] = {{m.a, 0}, {m.b, 0}, {c, 0}};
        assert_int_equal(tir_sim_run(ctx, broken, 3, args, NULL, NULL), TIR_ERR_SIM_RACE);
        assert_non_null(strstr(tir_ctx_error(ctx), "shared-memory race on shared "));
        free(c);
        free_mats(&m);
        tir_ctx_destroy(ctx);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_step1_step2),
        cmocka_unit_test(test_shared_steps),
        cmocka_unit_test(test_one_element_per_thread),
        cmocka_unit_test(test_pipelined_steps),
        cmocka_unit_test(test_shared_step_missing_barrier),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
