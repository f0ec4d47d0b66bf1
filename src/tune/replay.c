/* replay.c: the pool a replayed search (tir_tune_replay, search.c) runs
 * over: the distinct decisions recorded for a workload in a tuning
 * database, parsed back into the rule's configurations, each with the
 * first measurement recorded for it.  A replay evaluates a search
 * strategy (its cost model above all) on real measurements without a GPU:
 * the search can propose only what was measured, so the pool is the space
 * (a point never measured has no honest result to replay).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

typedef struct pool_builder {
    tir_ctx *ctx;
    bool tc;
    tune_pool *p;
    int cap;
    char **texts; /* each point's decisions, normalised (printed back) */
    tir_status st;
} pool_builder;

static bool grow(pool_builder *b) {
    int cap = b->cap ? 2 * b->cap : 64;
    tune_pool *p = b->p;
    void *c = b->tc ? realloc(p->sp.tc_configs, (size_t)cap * sizeof *p->sp.tc_configs)
                    : realloc(p->sp.configs, (size_t)cap * sizeof *p->sp.configs);
    if (c && b->tc) p->sp.tc_configs = c;
    if (c && !b->tc) p->sp.configs = c;
    double *g = c ? realloc(p->gflops, (size_t)cap * sizeof *g) : NULL;
    if (g) p->gflops = g;
    double *ms = g ? realloc(p->median_ms, (size_t)cap * sizeof *ms) : NULL;
    if (ms) p->median_ms = ms;
    char **t = ms ? realloc(b->texts, (size_t)cap * sizeof *t) : NULL;
    if (t) b->texts = t, b->cap = cap;
    return t != NULL;
}

/* One record: parsed, normalised, added unless its decisions are there. */
static bool add_record(void *user, const tir_tune_record *r) {
    pool_builder *b = user;
    tune_pool *p = b->p;
    if (!r->decisions || !r->decisions[0]) return true; /* not a rule's candidate */
    char text[256];
    tir_tile_config c;
    tir_tc_config ct;
    b->st = b->tc ? tir_tc_config_parse(b->ctx, r->decisions, &ct)
                  : tir_tile_config_parse(b->ctx, r->decisions, &c);
    if (b->st != TIR_OK) {
        b->st = tir_ctx_fail(b->ctx, b->st, "tune replay: record %lld: %s", (long long)r->id,
                             tir_ctx_error(b->ctx));
        return false;
    }
    if (b->tc)
        tir_tc_config_text(&ct, text, sizeof text);
    else
        tir_tile_config_text(&c, text, sizeof text);
    for (int i = 0; i < p->sp.n; i++)
        if (!strcmp(b->texts[i], text)) return true; /* the first record counts */
    if (p->sp.n == b->cap && !grow(b)) {
        b->st = tir_ctx_fail(b->ctx, TIR_ERR_NOMEM, "tune replay: out of memory");
        return false;
    }
    if (!(b->texts[p->sp.n] = strdup(text))) {
        b->st = tir_ctx_fail(b->ctx, TIR_ERR_NOMEM, "tune replay: out of memory");
        return false;
    }
    bool ok = !r->error && isfinite(r->median_ms) && r->median_ms > 0 && isfinite(r->gflops);
    if (b->tc)
        p->sp.tc_configs[p->sp.n] = ct;
    else
        p->sp.configs[p->sp.n] = c;
    p->gflops[p->sp.n] = ok ? r->gflops : 0;
    p->median_ms[p->sp.n] = ok ? r->median_ms : NAN;
    p->sp.n++;
    return true;
}

tir_status tune_pool_load(tir_ctx *ctx, tir_tune_db *db, const tir_tune_target *target,
                          const char *workload, bool tc, tune_pool *out) {
    memset(out, 0, sizeof *out);
    pool_builder b = {.ctx = ctx, .tc = tc, .p = out};
    tir_status st = tir_tune_db_foreach(ctx, db, workload, target, add_record, &b);
    if (st == TIR_OK) st = b.st;
    for (int i = 0; i < out->sp.n; i++) free(b.texts[i]);
    free(b.texts);
    if (st == TIR_OK && out->sp.n == 0)
        st = tir_ctx_fail(ctx, TIR_ERR_TUNE_NO_RECORD,
                          "tune replay: no record with decisions of %s%s%s", workload,
                          target ? " on " : "", target ? target->gpu : "");
    if (st != TIR_OK) tune_pool_free(out);
    return st;
}

void tune_pool_free(tune_pool *p) {
    tir_tune_space_free(&p->sp);
    free(p->gflops);
    free(p->median_ms);
    memset(p, 0, sizeof *p);
}
