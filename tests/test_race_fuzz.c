/* test_race_fuzz.c: bounded random check of the static race check
 * (tir_lower_check_races, the last pass of tir_lower) against the SIMT
 * simulator.  Each case draws a shared-memory matmul schedule (the seed's
 * Steps 3-6 with or without a fused epilogue, lk_shared_sched with a random
 * set of flags, the one-element-per-thread fetch with a random k tile, or
 * an elementwise chain whose shared intermediates cross thread mappings
 * under one blockIdx loop)
 * at random sizes, lowers it and checks that
 *   - the kernel as lowered passes the check and runs in the simulator
 *     without error (no false reject of a race-free kernel), and
 *   - with any one barrier removed, a kernel in which the simulator finds
 *     a race (or a read of a cp_async in flight) is refused by the check
 *     (soundness).  A refused kernel the simulator runs cleanly is
 *     counted (the check is conservative), not an error.
 * MINITIR_FUZZ_CASES=N runs N cases (default 24), MINITIR_FUZZ_SEED picks
 * the first seed. */
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
#include "minitir/schedule.h"
#include "seed.h"

static unsigned rnd(unsigned *s) {
    *s = *s * 1103515245u + 12345u;
    return *s >> 8;
}

/* Removes the n-th syncthreads (pre-order); *total: how many there are. */
typedef struct rm {
    int n, seen;
} rm;
static const tir_node *rm_eval(tir_mutator *m, const tir_node *n) {
    rm *r = m->user;
    const tir_call *c = tir_as_tir_call(((const tir_evaluate *)n)->value);
    if (c && c->op == TIR_INTRIN_SYNCTHREADS && r->seen++ == r->n)
        return (const tir_node *)tir_evaluate_new(m->ctx, tir_i32(m->ctx, 0));
    return n;
}
static const tir_prim_func *remove_sync(tir_ctx *ctx, const tir_prim_func *k, int n, int *total) {
    rm r = {n, 0};
    tir_mutator m;
    memset(&m, 0, sizeof m);
    m.ctx = ctx;
    m.user = &r;
    m.on[TIR_KIND_EVALUATE] = rm_eval;
    const tir_stmt *body = tir_mutate_stmt(&m, k->body);
    *total = r.seen;
    return tir_prim_func_new(ctx, k->name, k->nparams, k->params, k->buffer_map, body, k->nattrs,
                             k->attrs);
}

/* An intermediate in shared memory produced and consumed under one
 * blockIdx loop by different thread mappings (twenty-second session):
 * the elementwise chain B -> C -> D, B's i and j split over blocks and
 * threads; C and D placed at the block tile (reverse_compute_at), each
 * nest fused and split over the same thread extents in another order (C:
 * threads inside a serial loop; D: threads outermost), B and C shared.
 * Every element of B and C crosses threads, so each barrier between the
 * nests matters.  NULL when a primitive refuses. */
static const tir_prim_func *chain_shared(tir_ctx *ctx, unsigned *s, int64_t M, int64_t N,
                                         char *desc, size_t n) {
    int64_t ti = 1 + rnd(s) % 4, tj = 1 + rnd(s) % 4, ei = 1 + rnd(s) % 3, ej = 1 + rnd(s) % 3;
    snprintf(desc, n, "chain_shared threads %lldx%lld tile %lldx%lld, %lldx%lld", (long long)ti,
             (long long)tj, (long long)ei, (long long)ej, (long long)M, (long long)N);
    const tir_prim_func *f = tir_def_elementwise_chain(ctx, M, N, TIR_F32), *r = NULL;
    tir_schedule *sc = NULL;
    assert_int_equal(tir_sched_create(ctx, f, &sc), TIR_OK);
    tir_block_rv b, c, d;
    const tir_loop_rv *ls;
    int nl;
    tir_loop_rv ip[3], jp[3], fused, parts[3];
    bool ok = tir_sched_get_block(sc, "B", &b) == TIR_OK &&
              tir_sched_get_block(sc, "C", &c) == TIR_OK &&
              tir_sched_get_block(sc, "D", &d) == TIR_OK &&
              tir_sched_get_loops(sc, b, &ls, &nl) == TIR_OK && nl == 2;
    tir_loop_rv l0 = ok ? ls[0] : (tir_loop_rv){0}, l1 = ok ? ls[1] : (tir_loop_rv){0};
    ok = ok &&
         tir_sched_split(sc, l0, 3, (const int64_t[]){TIR_SPLIT_INFER, ti, ei}, ip) == TIR_OK &&
         tir_sched_split(sc, l1, 3, (const int64_t[]){TIR_SPLIT_INFER, tj, ej}, jp) == TIR_OK &&
         tir_sched_reorder(sc, 6, (const tir_loop_rv[]){ip[0], jp[0], ip[1], jp[1], ip[2], jp[2]}) ==
             TIR_OK &&
         tir_sched_bind(sc, ip[0], "blockIdx.x") == TIR_OK &&
         tir_sched_bind(sc, jp[0], "blockIdx.y") == TIR_OK &&
         tir_sched_bind(sc, ip[1], "threadIdx.x") == TIR_OK &&
         tir_sched_bind(sc, jp[1], "threadIdx.y") == TIR_OK;
    for (int k = 0; k < 2 && ok; k++) {
        tir_block_rv blk = k ? d : c;
        ok = tir_sched_reverse_compute_at(sc, blk, jp[0], false) == TIR_OK &&
             tir_sched_get_loops(sc, blk, &ls, &nl) == TIR_OK && nl == 4;
        tir_loop_rv own[2] = {ok ? ls[2] : (tir_loop_rv){0}, ok ? ls[3] : (tir_loop_rv){0}};
        const int64_t *fac = k ? (const int64_t[]){tj, ti, TIR_SPLIT_INFER}
                               : (const int64_t[]){TIR_SPLIT_INFER, tj, ti};
        ok = ok && tir_sched_fuse(sc, 2, own, &fused) == TIR_OK &&
             tir_sched_split(sc, fused, 3, fac, parts) == TIR_OK &&
             tir_sched_bind(sc, parts[k ? 0 : 1], "threadIdx.y") == TIR_OK &&
             tir_sched_bind(sc, parts[k ? 1 : 2], "threadIdx.x") == TIR_OK;
    }
    ok = ok && tir_sched_set_scope(sc, b, 0, "shared") == TIR_OK &&
         tir_sched_set_scope(sc, c, 0, "shared") == TIR_OK;
    if (ok) r = tir_sched_func(sc);
    tir_sched_destroy(sc);
    return r;
}

/* One random schedule; NULL when the draw has no schedule (a seed step
 * that does not apply). */
static const tir_prim_func *draw(tir_ctx *ctx, unsigned *s, int *nargs, char *desc, size_t n) {
    int64_t M = 1 + rnd(s) % 80, N = 1 + rnd(s) % 80, K = 1 + rnd(s) % 100;
    int kind = (int)(rnd(s) % 4);
    *nargs = 3;
    if (kind == 3) {
        *nargs = 2;
        return chain_shared(ctx, s, 1 + M % 24, 1 + N % 24, desc, n);
    }
    if (kind == 0) {
        int step = 3 + (int)(rnd(s) % 4), epi = (int)(rnd(s) % 4) - 1;
        const tir_prim_func *f = epi < 0 ? tir_def_matmul(ctx, M, N, K, TIR_F32)
                                         : seed_def_fused(ctx, (seed_epi)epi, M, N, K);
        tir_schedule *sc = NULL;
        assert_int_equal(tir_sched_create(ctx, f, &sc), TIR_OK);
        tir_status st = epi < 0 ? seed_schedule(sc, step, NULL, NULL)
                                : seed_fused(sc, step, NULL, NULL);
        const tir_prim_func *r = st == TIR_OK ? tir_sched_func(sc) : NULL;
        tir_sched_destroy(sc);
        *nargs = epi < 0 ? 3 : 4;
        snprintf(desc, n, "seed step %d epilogue %d, %lldx%lldx%lld", step, epi, (long long)M,
                 (long long)N, (long long)K);
        return r;
    }
    if (kind == 1) {
        static const int flags[] = {0, LK_LOCAL_ACC, LK_LOCAL_ACC | LK_VEC_FETCH,
                                    LK_LOCAL_ACC | LK_PIPELINE,
                                    LK_LOCAL_ACC | LK_VEC_FETCH | LK_PIPELINE,
                                    LK_LOCAL_ACC | LK_PIPELINE | LK_ASYNC,
                                    LK_LOCAL_ACC | LK_VEC_FETCH | LK_PIPELINE | LK_ASYNC,
                                    LK_LOCAL_ACC | LK_UNROLL};
        int fl = flags[rnd(s) % (sizeof flags / sizeof flags[0])];
        snprintf(desc, n, "lk_shared_sched flags %d, %lldx%lldx%lld", fl, (long long)M,
                 (long long)N, (long long)K);
        return lk_shared_sched(ctx, M, N, K, fl);
    }
    static const int64_t kts[] = {1, 2, 4, 8, 16, 24};
    int64_t kt = kts[rnd(s) % 6];
    snprintf(desc, n, "lk_one_per_thread k tile %lld, %lldx%lldx%lld", (long long)kt,
             (long long)M, (long long)N, (long long)K);
    return lk_one_per_thread(ctx, M, N, K, kt);
}

static int64_t param_elems(const tir_prim_func *k, int i) {
    return tir_buffer_const_size(k->buffer_map[i]);
}

typedef struct tally {
    int kernels, removed, sim_races, refused_clean;
    int chain; /* kernels from chain_shared */
} tally;

static void one_case(unsigned seed, tally *t) {
    tir_ctx *ctx = tir_ctx_create();
    unsigned s = seed * 7919u + 1u;
    int nargs;
    char desc[160];
    const tir_prim_func *f = draw(ctx, &s, &nargs, desc, sizeof desc);
    if (!f) {
        tir_ctx_destroy(ctx);
        return;
    }
    const tir_prim_func *k = NULL;
    tir_status st = tir_lower(ctx, f, NULL, &k);
    if (st != TIR_OK) fail_msg("seed %u (%s): tir_lower: %s", seed, desc, tir_ctx_error(ctx));
    t->kernels++;
    t->chain += !strncmp(desc, "chain_shared", 12);
    float *bufs[4];
    tir_arg args[4];
    for (int i = 0; i < nargs; i++) {
        int64_t ne = param_elems(k, i);
        bufs[i] = calloc((size_t)(ne > 0 ? ne : 1), sizeof(float));
        for (int64_t j = 0; j < ne; j++) bufs[i][j] = (float)(rnd(&s) % 7);
        args[i] = (tir_arg){bufs[i], 0};
    }
    tir_sim_opts so = {0};
    st = tir_sim_run(ctx, k, nargs, args, &so, NULL);
    if (st != TIR_OK) fail_msg("seed %u (%s): simulator: %s", seed, desc, tir_ctx_error(ctx));
    int total = 0;
    remove_sync(ctx, k, -1, &total);
    for (int j = 0; j < total; j++) {
        const tir_prim_func *broken = remove_sync(ctx, k, j, &(int){0});
        tir_status stat = tir_lower_check_races(ctx, broken);
        if (stat != TIR_OK)
            assert_non_null(strstr(tir_ctx_error(ctx), "race_check: shared buffer "));
        tir_status sim = tir_sim_run(ctx, broken, nargs, args, &so, NULL);
        bool race = sim == TIR_ERR_SIM_RACE || sim == TIR_ERR_SIM_CP_ASYNC_PENDING;
        t->removed++;
        t->sim_races += race;
        t->refused_clean += !race && stat != TIR_OK;
        if (race && stat == TIR_OK)
            fail_msg("seed %u (%s) without barrier %d: the simulator finds %s, the static "
                     "check passes:\n%s",
                     seed, desc, j, tir_status_name(sim), tir_print(ctx, broken));
    }
    for (int i = 0; i < nargs; i++) free(bufs[i]);
    tir_ctx_destroy(ctx);
}

static void test_race_check_vs_simulator(void **state) {
    (void)state;
    const char *e = getenv("MINITIR_FUZZ_CASES");
    const char *sd = getenv("MINITIR_FUZZ_SEED");
    int cases = e ? atoi(e) : 24;
    unsigned first = sd ? (unsigned)strtoul(sd, NULL, 10) : 0;
    tally t = {0};
    for (int i = 0; i < cases; i++) one_case(first + (unsigned)i, &t);
    printf("# %d cases from seed %u: %d kernels (%d chain_shared), %d barriers removed, %d "
           "races found by the simulator (all refused), %d refused without a simulated race\n",
           cases, first, t.kernels, t.chain, t.removed, t.sim_races, t.refused_clean);
    assert_true(t.kernels > 0 && t.sim_races > 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_race_check_vs_simulator),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
