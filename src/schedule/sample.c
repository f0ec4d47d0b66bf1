/* sample.c: the sampling instructions (TVM's sample_perfect_tile and
 * sample_categorical, plus sample_tile for ragged extents) and the
 * instructions that consume their value handles (split_rv,
 * annotate_loop_rv, annotate_block_rv).
 *
 * A sampling instruction changes no IR: it makes value handles and
 * records the decision it took, so the trace alone reproduces a sampled
 * schedule.  Draws come from the schedule's splitmix64 state, which the
 * primitive advances in its sch_call (c->rng) and sch_run commits only on
 * success; a given decision is checked instead of drawn and leaves the
 * state alone, so replaying a trace with its decisions consumes nothing.
 */
#include <math.h>
#include <string.h>

#include "sched_internal.h"

/* ------------------------------------------------------------ randomness */

static uint64_t splitmix64(uint64_t *state) {
    uint64_t z = (*state += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

/* Uniform in [0, n), n >= 1, without modulo bias (rejecting the top
 * partial range), so every candidate has exactly its share. */
static int64_t rand_below(uint64_t *state, int64_t n) {
    uint64_t un = (uint64_t)n, limit = UINT64_MAX - UINT64_MAX % un;
    uint64_t x;
    do x = splitmix64(state);
    while (x >= limit);
    return (int64_t)(x % un);
}

/* Uniform in [0, 1) with 53 random bits. */
static double rand_unit(uint64_t *state) {
    return (double)(splitmix64(state) >> 11) * (1.0 / 9007199254740992.0);
}

void tir_sched_seed(tir_schedule *s, uint64_t seed) {
    if (s) s->rng = seed;
}

uint64_t tir_sched_rand_state(const tir_schedule *s) { return s ? s->rng : 0; }

tir_status tir_sched_value(tir_schedule *s, tir_value_rv v, int64_t *out) {
    if (!s || !out) return sch_bad_arg(s, "value", "out is NULL");
    if (v.sched != s->serial || v.id < 1 || (int)v.id > s->nentries ||
        s->entries[v.id - 1].kind != 'v')
        return tir_ctx_fail(s->ctx, TIR_ERR_SCHED_INVALID_HANDLE,
                            "value: handle #%u is not a value handle of this schedule", v.id);
    *out = s->entries[v.id - 1].value;
    return TIR_OK;
}

/* ------------------------------------------------------- shared checks */

/* Precondition 1 of the tile samplers: the loop's extent, a constant in
 * [1, 2^31) (the bound keeps factoring by trial division fast and every
 * product of factors far from overflow). */
static tir_status const_extent(sch_call *c, int64_t *ext) {
    uint32_t rv = c->args[0].rv;
    const tir_for *loop = sch_sref_for(c->sch, sch_loop_sref(c, rv));
    if (!tir_expr_const_int(loop->extent, ext) || *ext < 1 || *ext > INT32_MAX)
        return sch_fail(c, TIR_ERR_SCHED_NON_CONST_EXTENT, rv, loop,
                        "tiles are sampled for a constant extent in [1, 2^31), but %s has "
                        "extent %s",
                        loop->var->name, tir_print(c->ctx, loop->extent));
    return TIR_OK;
}

/* Preconditions 2 and 3 of the tile samplers. */
static tir_status check_tile_params(sch_call *c, int64_t ext, int64_t n, int64_t maxin,
                                    int64_t waste) {
    uint32_t rv = c->args[0].rv;
    const tir_for *loop = sch_sref_for(c->sch, sch_loop_sref(c, rv));
    if (n < 1 || n > TIR_SAMPLE_MAX_FACTORS)
        return sch_fail(c, TIR_ERR_SCHED_FACTOR_COUNT, rv, loop,
                        "the number of factors must be in [1, %d], got %lld",
                        TIR_SAMPLE_MAX_FACTORS, (long long)n);
    if (maxin < 1)
        return sch_fail(c, TIR_ERR_SCHED_BAD_SAMPLE, rv, loop,
                        "max_innermost must be >= 1, got %lld", (long long)maxin);
    if (waste < 0)
        return sch_fail(c, TIR_ERR_SCHED_BAD_SAMPLE, rv, loop,
                        "max_waste_pct must be >= 0, got %lld", (long long)waste);
    if (n == 1 && ext > maxin)
        return sch_fail(c, TIR_ERR_SCHED_BAD_SAMPLE, rv, loop,
                        "one factor must be the extent %lld of %s, which exceeds max_innermost "
                        "%lld",
                        (long long)ext, loop->var->name, (long long)maxin);
    return TIR_OK;
}

static const char *ints_text(tir_ctx *ctx, int n, const int64_t *v) {
    ir_strbuf sb;
    ir_sb_init(&sb);
    ir_sb_putc(&sb, '[');
    for (int i = 0; i < n; i++) ir_sb_printf(&sb, "%s%lld", i ? ", " : "", (long long)v[i]);
    ir_sb_putc(&sb, ']');
    return ir_sb_finish(&sb, ctx);
}

/* TIR_ERR_SCHED_BAD_DECISION for the decision in c's 'd' argument. */
static tir_status bad_decision(sch_call *c, const sch_arg *d, const char *why) {
    uint32_t rv = c->args[0].rv;
    const void *mark = NULL;
    if (c->kind != SCH_INST_sample_categorical)
        mark = sch_sref_for(c->sch, sch_loop_sref(c, rv));
    else
        rv = 0;
    return sch_fail(c, TIR_ERR_SCHED_BAD_DECISION, rv, mark, "decision %s: %s",
                    ints_text(c->ctx, d->n, d->ints), why);
}

/* Records the decision and makes one value handle per factor. */
static tir_status out_factors(sch_call *c, int n, int64_t *f) {
    c->decision = f;
    c->ndecision = n;
    for (int i = 0; i < n; i++) sch_out_value(c, f[i]);
    return TIR_OK;
}

/* ---------------------------------------------------- sample_perfect_tile */

/* Divisors of ext (< 2^31, so at most 1600 of them) that are <= maxin,
 * ascending, into out (arena); returns the count. */
static int divisors_upto(tir_ctx *ctx, int64_t ext, int64_t maxin, int64_t **out) {
    int64_t lo[1600], hi[1600];
    int nlo = 0, nhi = 0;
    for (int64_t d = 1; d * d <= ext; d++) {
        if (ext % d) continue;
        if (d <= maxin) lo[nlo++] = d;
        if (d != ext / d && ext / d <= maxin) hi[nhi++] = ext / d;
    }
    int64_t *r = IR_NEWN(ctx, int64_t, nlo + nhi);
    memcpy(r, lo, sizeof *lo * (size_t)nlo);
    for (int i = 0; i < nhi; i++) r[nlo + i] = hi[nhi - 1 - i];
    *out = r;
    return nlo + nhi;
}

/* TVM's draw: the innermost among the divisors <= maxin, then each prime
 * factor of the rest into a uniformly chosen outer factor. */
static void draw_perfect(sch_call *c, int64_t ext, int n, int64_t maxin, int64_t *f) {
    for (int i = 0; i < n; i++) f[i] = 1;
    if (n == 1) {
        f[0] = ext;
        return;
    }
    int64_t *divs;
    int nd = divisors_upto(c->ctx, ext, maxin, &divs);
    f[n - 1] = divs[rand_below(&c->rng, nd)];
    int64_t rest = ext / f[n - 1];
    for (int64_t p = 2; rest > 1; p++) {
        if (p * p > rest) p = rest; /* what is left is prime */
        while (rest % p == 0) {
            f[rand_below(&c->rng, n - 1)] *= p;
            rest /= p;
        }
    }
}

static tir_status check_perfect(sch_call *c, const sch_arg *d, int64_t ext, int n,
                                int64_t maxin) {
    if (d->n != n)
        return bad_decision(c, d, tir_ctx_sprintf(c->ctx, "it has %d factors, not %d", d->n, n));
    int64_t prod = 1;
    for (int i = 0; i < n; i++) {
        if (d->ints[i] < 1 || d->ints[i] > ext)
            return bad_decision(c, d, tir_ctx_sprintf(c->ctx, "factor %d is not in [1, %lld]",
                                                      i, (long long)ext));
        prod *= d->ints[i];
        if (prod > ext) break; /* product of factors >= 1: no overflow */
    }
    if (prod != ext)
        return bad_decision(c, d,
                            tir_ctx_sprintf(c->ctx, "the product is not the extent %lld",
                                            (long long)ext));
    if (d->ints[n - 1] > maxin)
        return bad_decision(c, d, tir_ctx_sprintf(c->ctx, "the innermost exceeds %lld",
                                                  (long long)maxin));
    return TIR_OK;
}

tir_status sch_prim_sample_perfect_tile(sch_call *c) {
    int64_t ext, n = c->args[1].i, maxin = c->args[2].i;
    const sch_arg *d = &c->args[3];
    TIR_TRY(const_extent(c, &ext));
    TIR_TRY(check_tile_params(c, ext, n, maxin, 0));
    int64_t *f = IR_NEWN(c->ctx, int64_t, n);
    if (d->n > 0) {
        TIR_TRY(check_perfect(c, d, ext, (int)n, maxin));
        memcpy(f, d->ints, sizeof *f * (size_t)n);
    } else {
        draw_perfect(c, ext, (int)n, maxin, f);
    }
    return out_factors(c, (int)n, f);
}

/* ------------------------------------------------------------ sample_tile */

/* Whether inner factors of product p cover ext within the waste bound
 * (percent, clamped so the products below stay in range: p <= 2^40). */
static bool tile_fits(int64_t ext, int64_t p, int64_t waste_pct) {
    if (waste_pct > INT32_MAX) waste_pct = INT32_MAX;
    int64_t outer = (ext + p - 1) / p, waste = outer * p - ext;
    return waste <= INT64_MAX / 128 && waste * 100 <= waste_pct * ext;
}

/* The inner product 2^t uniformly among the allowed t (t <= 32: beyond,
 * p > 2 * ext and the outer factor is 1 with ever more waste), the
 * innermost's exponent uniformly within maxin, the other factors of two
 * into uniformly chosen middle factors, the outermost ceildiv. */
static void draw_tile(sch_call *c, int64_t ext, int n, int64_t maxin, int64_t waste, int64_t *f) {
    for (int i = 0; i < n; i++) f[i] = 1;
    if (n == 1) {
        f[0] = ext;
        return;
    }
    int lmax = 0;
    while (lmax < 32 && (INT64_C(2) << lmax) <= maxin) lmax++;
    int ts[33], nt = 0;
    for (int t = 0; t <= 32; t++)
        if ((n > 2 || t <= lmax) && tile_fits(ext, INT64_C(1) << t, waste)) ts[nt++] = t;
    int t = ts[rand_below(&c->rng, nt)]; /* t = 0 always fits */
    int ein = n == 2 ? t : (int)rand_below(&c->rng, (t < lmax ? t : lmax) + 1);
    f[n - 1] = INT64_C(1) << ein;
    for (int k = ein; k < t; k++) f[1 + rand_below(&c->rng, n - 2)] *= 2;
    f[0] = (ext + (INT64_C(1) << t) - 1) >> t;
}

static tir_status check_tile(sch_call *c, const sch_arg *d, int64_t ext, int n, int64_t maxin,
                             int64_t waste) {
    if (d->n != n)
        return bad_decision(c, d, tir_ctx_sprintf(c->ctx, "it has %d factors, not %d", d->n, n));
    int64_t p = 1;
    for (int i = 0; i < n; i++) {
        if (d->ints[i] < 1 || d->ints[i] > INT32_MAX)
            return bad_decision(c, d, tir_ctx_sprintf(c->ctx, "factor %d is not in [1, 2^31)",
                                                      i));
        if (i > 0 && (p *= d->ints[i]) > (INT64_C(1) << 40))
            return bad_decision(c, d, "the inner factors' product exceeds 2^40");
    }
    if (d->ints[0] != (ext + p - 1) / p)
        return bad_decision(c, d, tir_ctx_sprintf(c->ctx,
                                                  "the outermost must be ceildiv(%lld, %lld) = "
                                                  "%lld",
                                                  (long long)ext, (long long)p,
                                                  (long long)((ext + p - 1) / p)));
    if (d->ints[n - 1] > maxin)
        return bad_decision(c, d, tir_ctx_sprintf(c->ctx, "the innermost exceeds %lld",
                                                  (long long)maxin));
    if (!tile_fits(ext, p, waste))
        return bad_decision(c, d, tir_ctx_sprintf(c->ctx,
                                                  "it wastes more than %lld%% of the extent %lld",
                                                  (long long)waste, (long long)ext));
    return TIR_OK;
}

tir_status sch_prim_sample_tile(sch_call *c) {
    int64_t ext, n = c->args[1].i, maxin = c->args[2].i, waste = c->args[3].i;
    const sch_arg *d = &c->args[4];
    TIR_TRY(const_extent(c, &ext));
    TIR_TRY(check_tile_params(c, ext, n, maxin, waste));
    int64_t *f = IR_NEWN(c->ctx, int64_t, n);
    if (d->n > 0) {
        TIR_TRY(check_tile(c, d, ext, (int)n, maxin, waste));
        memcpy(f, d->ints, sizeof *f * (size_t)n);
    } else {
        draw_tile(c, ext, (int)n, maxin, waste, f);
    }
    return out_factors(c, (int)n, f);
}

/* ----------------------------------------------------- sample_categorical */

tir_status sch_prim_sample_categorical(sch_call *c) {
    int n = c->args[0].n;
    const int64_t *cands = c->args[0].ints;
    const double *probs = c->args[1].dbls;
    const sch_arg *d = &c->args[2];
    if (n < 1)
        return sch_fail(c, TIR_ERR_SCHED_BAD_SAMPLE, 0, NULL, "there are no candidates");
    double sum = 0;
    for (int i = 0; i < n; i++) {
        if (!isfinite(probs[i]) || probs[i] < 0)
            return sch_fail(c, TIR_ERR_SCHED_BAD_SAMPLE, 0, NULL,
                            "probability %d is %g; each must be finite and >= 0", i, probs[i]);
        sum += probs[i];
    }
    if (!(sum > 0) || !isfinite(sum))
        return sch_fail(c, TIR_ERR_SCHED_BAD_SAMPLE, 0, NULL,
                        "the probabilities sum to %g; the sum must be positive and finite", sum);
    int64_t *pick = IR_NEWN(c->ctx, int64_t, 1);
    if (d->n > 0) {
        if (d->n != 1 || d->ints[0] < 0 || d->ints[0] >= n)
            return bad_decision(c, d, tir_ctx_sprintf(c->ctx, "it must be one index in [0, %d)",
                                                      n));
        pick[0] = d->ints[0];
    } else {
        /* The first index whose cumulative weight passes the draw; the
           last positive one if rounding leaves the draw past them all. */
        double r = rand_unit(&c->rng) * sum, acc = 0;
        pick[0] = -1;
        for (int i = 0; i < n && pick[0] < 0; i++)
            if (probs[i] > 0 && r < (acc += probs[i])) pick[0] = i;
        for (int i = n - 1; pick[0] < 0; i--)
            if (probs[i] > 0) pick[0] = i;
    }
    c->decision = pick;
    c->ndecision = 1;
    sch_out_value(c, cands[pick[0]]);
    return TIR_OK;
}

/* ------------------------------------------------------- value consumers */

/* Runs primitive impl with the value handles of argument `at` (one 'v',
 * or a 'V' list) replaced by their integers, as the int or int-list
 * argument impl expects; c->args is restored for the record. */
static tir_status with_values(sch_call *c, int at, bool list, sch_prim_fn impl) {
    const sch_arg *orig = c->args;
    sch_arg *args = IR_NEWN(c->ctx, sch_arg, c->nargs);
    memcpy(args, orig, sizeof *args * (size_t)c->nargs);
    const sch_arg *a = &orig[at];
    if (!list) {
        args[at] = (sch_arg){.i = sch_value(c->sch, a->rv)};
    } else {
        int64_t *v = IR_NEWN(c->ctx, int64_t, a->n);
        for (int i = 0; i < a->n; i++) v[i] = sch_value(c->sch, a->rvs[i]);
        args[at] = (sch_arg){.n = a->n, .ints = v};
    }
    c->args = args;
    tir_status st = impl(c);
    c->args = orig;
    return st;
}

tir_status sch_prim_split_rv(sch_call *c) { return with_values(c, 1, true, sch_prim_split); }
tir_status sch_prim_annotate_loop_rv(sch_call *c) {
    return with_values(c, 2, false, sch_prim_annotate_loop_int);
}
tir_status sch_prim_annotate_block_rv(sch_call *c) {
    return with_values(c, 2, false, sch_prim_annotate_block_int);
}

/* --------------------------------------------------------------- wrappers */

static tir_status run_values(tir_schedule *s, sch_inst_kind k, const sch_arg *args,
                             tir_value_rv *out) {
    const uint32_t *ids;
    int n;
    TIR_TRY(sch_run(s, k, args, &ids, &n));
    for (int i = 0; i < n; i++) out[i] = sch_value_rv(s, ids[i]);
    return TIR_OK;
}

tir_status tir_sched_sample_perfect_tile(tir_schedule *s, tir_loop_rv loop, int n,
                                         int64_t max_innermost, int ndecision,
                                         const int64_t *decision, tir_value_rv *out) {
    if (!s || !out) return sch_bad_arg(s, "sample_perfect_tile", "out is NULL");
    sch_arg args[4] = {SCH_RV(loop), {.i = n}, {.i = max_innermost},
                       {.n = ndecision, .ints = decision}};
    return run_values(s, SCH_INST_sample_perfect_tile, args, out);
}

tir_status tir_sched_sample_tile(tir_schedule *s, tir_loop_rv loop, int n, int64_t max_innermost,
                                 int64_t max_waste_pct, int ndecision, const int64_t *decision,
                                 tir_value_rv *out) {
    if (!s || !out) return sch_bad_arg(s, "sample_tile", "out is NULL");
    sch_arg args[5] = {SCH_RV(loop), {.i = n}, {.i = max_innermost}, {.i = max_waste_pct},
                       {.n = ndecision, .ints = decision}};
    return run_values(s, SCH_INST_sample_tile, args, out);
}

tir_status tir_sched_sample_categorical(tir_schedule *s, int n, const int64_t *candidates,
                                        const double *probs, int ndecision,
                                        const int64_t *decision, tir_value_rv *out) {
    if (!s || !out) return sch_bad_arg(s, "sample_categorical", "out is NULL");
    sch_arg args[3] = {{.n = n, .ints = candidates}, {.dbls = probs},
                       {.n = ndecision, .ints = decision}};
    return run_values(s, SCH_INST_sample_categorical, args, out);
}

tir_status tir_sched_split_rv(tir_schedule *s, tir_loop_rv loop, int nfactors,
                              const tir_value_rv *factors, tir_loop_rv *out) {
    if (!s || !out) return sch_bad_arg(s, "split_rv", "out is NULL");
    sch_arg args[2] = {SCH_RV(loop), sch_value_rv_list(s, nfactors, factors)};
    const uint32_t *ids;
    int n;
    TIR_TRY(sch_run(s, SCH_INST_split_rv, args, &ids, &n));
    for (int i = 0; i < n; i++) out[i] = sch_loop_rv(s, ids[i]);
    return TIR_OK;
}

tir_status tir_sched_annotate_loop_rv(tir_schedule *s, tir_loop_rv loop, const char *key,
                                      tir_value_rv value) {
    if (!s) return sch_bad_arg(s, "annotate_loop_rv", "schedule is NULL");
    sch_arg args[3] = {SCH_RV(loop), {.s = key}, SCH_RV(value)};
    return sch_run(s, SCH_INST_annotate_loop_rv, args, NULL, NULL);
}

tir_status tir_sched_annotate_block_rv(tir_schedule *s, tir_block_rv block, const char *key,
                                       tir_value_rv value) {
    if (!s) return sch_bad_arg(s, "annotate_block_rv", "schedule is NULL");
    sch_arg args[3] = {SCH_RV(block), {.s = key}, SCH_RV(value)};
    return sch_run(s, SCH_INST_annotate_block_rv, args, NULL, NULL);
}
