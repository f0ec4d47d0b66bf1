/* query.c: reading records back: the best of a workload on a target, the
 * k best, every record (the cost model's training data), counts, and
 * applying the best record to a schedule.
 *
 * All of them run one SELECT (tune_query) whose filters are bound as
 * parameters, NULL meaning "any", so there is one statement to get right
 * rather than one per combination of filters.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tune_internal.h"

#define SELECT_RECORDS                                                                       \
    "SELECT r.id, w.key, t.gpu, t.arch, t.driver, r.trace, r.decisions, r.median_ms,"        \
    " r.gflops, r.error, r.compile_ms, r.timestamp"                                          \
    " FROM record r JOIN workload w ON w.id = r.workload_id JOIN target t ON t.id = r.target_id"
#define WHERE_KEYS                                                                           \
    " WHERE (?1 IS NULL OR w.key = ?1)"                                                      \
    " AND (?2 IS NULL OR (t.gpu = ?2 AND t.arch = ?3 AND t.driver = ?4))"
#define WHERE_OK " AND r.error IS NULL AND r.median_ms IS NOT NULL"

static void bind_keys(sqlite3_stmt *q, const char *workload, const tir_tune_target *target) {
    if (workload) sqlite3_bind_text(q, 1, workload, -1, SQLITE_STATIC);
    if (!target) return;
    sqlite3_bind_text(q, 2, target->gpu, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 3, target->arch, -1, SQLITE_STATIC);
    sqlite3_bind_int(q, 4, target->driver_version);
}

static double column_measure(sqlite3_stmt *q, int i) {
    return sqlite3_column_type(q, i) == SQLITE_NULL ? NAN : sqlite3_column_double(q, i);
}

/* The current row; its strings are SQLite's, valid until the next step. */
static void row_record(sqlite3_stmt *q, tir_tune_record *r) {
    tir_tune_record_init(r);
    r->id = sqlite3_column_int64(q, 0);
    r->workload = (const char *)sqlite3_column_text(q, 1);
    snprintf(r->target.gpu, sizeof r->target.gpu, "%s", (const char *)sqlite3_column_text(q, 2));
    snprintf(r->target.arch, sizeof r->target.arch, "%s",
             (const char *)sqlite3_column_text(q, 3));
    r->target.driver_version = sqlite3_column_int(q, 4);
    r->trace = (const char *)sqlite3_column_text(q, 5);
    r->decisions = (const char *)sqlite3_column_text(q, 6);
    r->median_ms = column_measure(q, 7);
    r->gflops = column_measure(q, 8);
    r->error = (const char *)sqlite3_column_text(q, 9); /* NULL stays NULL */
    r->compile_ms = column_measure(q, 10);
    r->timestamp = sqlite3_column_int64(q, 11);
}

tir_status tune_query(tir_ctx *ctx, tir_tune_db *db, const char *workload,
                      const tir_tune_target *target, tune_order order, int64_t limit,
                      tir_tune_record_fn fn, void *user) {
    static const char *const sql[] = {
        [TUNE_ALL_BY_ID] = SELECT_RECORDS WHERE_KEYS " ORDER BY r.id LIMIT ?5",
        [TUNE_OK_BY_SPEED] = SELECT_RECORDS WHERE_KEYS WHERE_OK
        " ORDER BY r.median_ms, r.id LIMIT ?5",
    };
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(db->h, sql[order], -1, &q, NULL) != SQLITE_OK)
        return tune_fail(ctx, db, "reading records");
    bind_keys(q, workload, target);
    sqlite3_bind_int64(q, 5, limit);
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        tir_tune_record r;
        row_record(q, &r);
        if (!fn(user, &r)) {
            rc = SQLITE_DONE;
            break;
        }
    }
    tir_status st = rc == SQLITE_DONE ? TIR_OK : tune_fail(ctx, db, "reading records");
    sqlite3_finalize(q);
    return st;
}

tir_status tir_tune_db_foreach(tir_ctx *ctx, tir_tune_db *db, const char *workload,
                               const tir_tune_target *target, tir_tune_record_fn fn, void *user) {
    return tune_query(ctx, db, workload, target, TUNE_ALL_BY_ID, -1, fn, user);
}

tir_status tir_tune_db_top(tir_ctx *ctx, tir_tune_db *db, const char *workload,
                           const tir_tune_target *target, int k, tir_tune_record_fn fn,
                           void *user) {
    if (k < 1) return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG, "tune db: top %d records", k);
    return tune_query(ctx, db, workload, target, TUNE_OK_BY_SPEED, k, fn, user);
}

tir_status tir_tune_db_count(tir_ctx *ctx, tir_tune_db *db, const char *workload,
                             const tir_tune_target *target, int64_t *out) {
    static const char *const sql =
        "SELECT count(*) FROM record r JOIN workload w ON w.id = r.workload_id"
        " JOIN target t ON t.id = r.target_id" WHERE_KEYS;
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(db->h, sql, -1, &q, NULL) != SQLITE_OK)
        return tune_fail(ctx, db, "counting records");
    bind_keys(q, workload, target);
    tir_status st = TIR_OK;
    if (sqlite3_step(q) == SQLITE_ROW)
        *out = sqlite3_column_int64(q, 0);
    else
        st = tune_fail(ctx, db, "counting records");
    sqlite3_finalize(q);
    return st;
}

/* ----------------------------------------------------------------- best */

typedef struct copy_out {
    tir_ctx *ctx;
    tir_tune_record *out;
    bool found;
} copy_out;

static const char *ctx_copy(tir_ctx *ctx, const char *s) {
    return s ? tir_ctx_sprintf(ctx, "%s", s) : NULL;
}

/* Copies the (first) record into ctx-owned strings. */
static bool copy_record(void *user, const tir_tune_record *r) {
    copy_out *c = user;
    *c->out = *r;
    c->out->workload = ctx_copy(c->ctx, r->workload);
    c->out->trace = ctx_copy(c->ctx, r->trace);
    c->out->decisions = ctx_copy(c->ctx, r->decisions);
    c->out->error = ctx_copy(c->ctx, r->error);
    c->found = true;
    return false;
}

tir_status tir_tune_db_best(tir_ctx *ctx, tir_tune_db *db, const char *workload,
                            const tir_tune_target *target, tir_tune_record *out) {
    if (!workload || !target || !out)
        return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG, "tune db: best needs a workload and target");
    copy_out c = {ctx, out, false};
    tir_status st = tune_query(ctx, db, workload, target, TUNE_OK_BY_SPEED, 1, copy_record, &c);
    if (st != TIR_OK) return st;
    if (!c.found)
        return tir_ctx_fail(ctx, TIR_ERR_TUNE_NO_RECORD,
                            "tune db %s: no error-free record of workload %s on %s %s (driver %d)",
                            db->path, workload, target->gpu, target->arch,
                            target->driver_version);
    return TIR_OK;
}

/* The records apply_best tries, fastest first: a best record that no
 * longer replays (written by a minitir whose primitives refused less)
 * falls back to the next instead of leaving the workload untuned. */
enum { APPLY_TRIES = 32 };

typedef struct collect {
    tir_ctx *ctx;
    tir_tune_record recs[APPLY_TRIES];
    int n;
} collect;

static bool collect_record(void *user, const tir_tune_record *r) {
    collect *c = user;
    copy_out one = {c->ctx, &c->recs[c->n], false};
    copy_record(&one, r);
    return ++c->n < APPLY_TRIES;
}

/* Whether f rounds float32 inputs to TF32: it holds a float32 frag.a
 * buffer, which only the m16n8k8 TF32 mma reads (tir_frag_layout_of), so
 * this holds whichever intrinsic, built-in or registered by the user,
 * tensorized the kernel. */
static bool alloc_rounds_tf32(const tir_buffer *b) {
    return b->scope == TIR_SCOPE_FRAG_A && b->dtype.code == TIR_TYPE_FLOAT && b->dtype.bits == 32;
}

static bool tf32_pre(tir_visitor *v, const tir_node *n) {
    bool *found = v->user;
    if (n->kind == TIR_KIND_BLOCK) {
        const tir_block *b = (const tir_block *)n;
        for (int i = 0; i < b->nallocs; i++) *found |= alloc_rounds_tf32(b->allocs[i]);
    } else if (n->kind == TIR_KIND_ALLOCATE) {
        *found |= alloc_rounds_tf32(((const tir_allocate *)n)->buffer);
    }
    return !*found;
}

static bool rounds_tf32(const tir_prim_func *f) {
    bool found = false;
    tir_visitor v = {.pre = tf32_pre, .user = &found};
    tir_visit(&v, f->body);
    return found;
}

/* Replays record r into s when its kernel's TF32 rounding is what the
 * workload key asks for: the keys keep float32 and TF32 apart, but a
 * record imported or edited under the other key would otherwise give a
 * float32 workload a TF32 kernel.  The kernel is read from a scratch
 * replay, not the trace's text, so no intrinsic name is trusted.  On
 * failure s is as it was and *msg says why. */
static tir_status replay_checked(tir_ctx *ctx, const char *workload, const tir_tune_record *r,
                                 tir_schedule *s, const char **msg) {
    size_t n = strlen(workload);
    bool want = n >= 5 && strcmp(workload + n - 5, "+tf32") == 0;
    tir_ctx *sctx = tir_sched_ctx(s);
    tir_schedule *scratch = NULL;
    /* The scratch replay must take what s's will: the same function and
     * the same random state, which a sampling line without a decision
     * draws from (a seeded s drew another split factor than a fresh
     * schedule, and the replay into s failed the assertion below). */
    tir_status st = tir_sched_create(sctx, tir_sched_func(s), &scratch);
    if (st == TIR_OK) {
        tir_sched_seed(scratch, tir_sched_rand_state(s));
        st = tir_sched_replay(scratch, r->trace, strlen(r->trace));
    }
    if (st != TIR_OK) {
        *msg = tir_ctx_sprintf(ctx, "%s", tir_ctx_error(sctx));
    } else if (rounds_tf32(tir_sched_func(scratch)) != want) {
        st = TIR_ERR_TUNE_DB;
        *msg = want ? "its kernel does not round to TF32 as the workload key asks"
                    : "its kernel rounds to TF32 (the workload key is float32): its TF32 rounding "
                      "does not match the workload key";
    } else {
        st = tir_sched_replay(s, r->trace, strlen(r->trace));
        TIR_ASSERT(st == TIR_OK); /* the same trace, function and random state */
    }
    tir_sched_destroy(scratch);
    return st;
}

tir_status tir_tune_apply_best_key(tir_ctx *ctx, tir_tune_db *db, const tir_tune_target *target,
                                   const char *workload, tir_schedule *s,
                                   tir_tune_record *used) {
    if (!s || tir_sched_trace_len(s) != 0)
        return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG,
                            "tune db: apply_best needs a fresh schedule (this one has a trace of "
                            "%d instructions)",
                            s ? tir_sched_trace_len(s) : 0);
    if (!workload) return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG, "tune db: apply_best: no workload");
    if (!target) return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG, "tune db: apply_best: no target");
    collect c = {.ctx = ctx};
    tir_status st = tune_query(ctx, db, workload, target, TUNE_OK_BY_SPEED, APPLY_TRIES,
                               collect_record, &c);
    if (st != TIR_OK) return st;
    if (c.n == 0)
        return tir_ctx_fail(ctx, TIR_ERR_TUNE_NO_RECORD,
                            "tune db %s: no error-free record of workload %s on %s %s (driver %d)",
                            db->path, workload, target->gpu, target->arch,
                            target->driver_version);
    /* A failed record leaves s as it was, so the next starts fresh. */
    tir_status first = TIR_OK;
    const char *why = NULL;
    for (int i = 0; i < c.n; i++) {
        const tir_tune_record *r = &c.recs[i];
        const char *msg = NULL;
        tir_status rs = replay_checked(ctx, workload, r, s, &msg);
        if (rs == TIR_OK) {
            if (used) *used = *r;
            return TIR_OK;
        }
        if (!why) {
            first = rs;
            why = tir_ctx_sprintf(ctx, "record %lld of %s does not replay: %s", (long long)r->id,
                                  workload, msg);
        }
    }
    return tir_ctx_fail(ctx, first, "tune db %s: none of the %d best records applies; the best, %s",
                        db->path, c.n, why);
}

tir_status tir_tune_apply_best(tir_ctx *ctx, tir_tune_db *db, const tir_tune_target *target,
                               tir_schedule *s, tir_tune_record *used) {
    const char *workload = NULL;
    tir_status st = s ? tir_tune_workload_key(ctx, tir_sched_orig_func(s), &workload) : TIR_OK;
    if (st != TIR_OK) return st;
    return tir_tune_apply_best_key(ctx, db, target, workload, s, used);
}
