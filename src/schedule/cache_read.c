/* cache_read.c: read a buffer through a cache in shared or local memory
 * (TVM's CacheRead).
 *
 * A new block copies the whole buffer into a new buffer of the scope,
 * allocated in the scope block, right after the buffer's writer (or first
 * in the scope for an input); the chosen consumers then read the copy.
 * The copy covers the whole buffer so the result is correct wherever it
 * stands; compute_at then shrinks it to the tile a loop needs.
 */
#include <string.h>

#include "sched_internal.h"

/* The argument preconditions cache_read and cache_write share (1-3): the
 * block lies in a scope, the index names one of its reads (writes), and
 * the storage scope is known.  Shared with cache_write.c. */
tir_status sch_cache_args(sch_call *c, bool is_read, sch_cache_target *t) {
    const tir_schedule *s = c->sch;
    int64_t index = c->args[1].i;
    const char *scope_name = c->args[2].s;
    t->rv = c->args[0].rv;
    t->bi = sch_block_sref(c, t->rv);
    t->b = sch_sref_block(s, t->bi);
    t->sc = sch_scope_of(s, t->bi);
    if (t->sc < 0)
        return sch_fail(c, TIR_ERR_SCHED_DIFFERENT_SCOPE, t->rv, t->b,
                        "the root block has no scope to hold a cache");
    int n = is_read ? t->b->nreads : t->b->nwrites;
    if (index < 0 || index >= n)
        return sch_fail(c, TIR_ERR_SCHED_INDEX_OUT_OF_RANGE, t->rv, t->b,
                        "%s index %lld is out of range: block \"%s\" %s %d buffers",
                        is_read ? "read" : "write", (long long)index, t->b->name,
                        is_read ? "reads" : "writes", n);
    t->buf = is_read ? t->b->reads[index].buffer : t->b->writes[index].buffer;
    if (!sch_parse_scope(scope_name, &t->scope))
        return sch_fail(c, TIR_ERR_SCHED_BAD_SCOPE, t->rv, t->b,
                        "unknown storage scope \"%s\"; use \"shared\", \"local\" or a fragment "
                        "scope (\"frag.a\", \"frag.b\", \"frag.acc\")",
                        scope_name);
    return TIR_OK;
}

tir_status sch_cache_consumers(sch_call *c, uint32_t rv, int bi, int scope,
                               const sch_arg *list, const tir_buffer *buf, bool default_all,
                               int **cons, int *ncons) {
    const tir_schedule *s = c->sch;
    int n = 0;
    int *v;
    if (list->n > 0) {
        v = IR_NEWN(c->ctx, int, list->n);
        for (int j = 0; j < list->n; j++) {
            int ci = sch_block_sref(c, list->rvs[j]);
            const tir_block *cb = sch_sref_block(s, ci);
            if (sch_scope_of(s, ci) != scope) {
                const void *marks[2] = {cb, sch_sref_block(s, bi)};
                return sch_fail_marks(c, TIR_ERR_SCHED_DIFFERENT_SCOPE, list->rvs[j], 2, marks,
                                      "consumer block \"%s\" must lie in the scope of block "
                                      "\"%s\"",
                                      cb->name, sch_sref_block(s, bi)->name);
            }
            if (!sch_region_has(cb->nreads, cb->reads, buf) ||
                sch_region_has(cb->nwrites, cb->writes, buf))
                return sch_fail(c, TIR_ERR_SCHED_NOT_CONSUMER, list->rvs[j], cb,
                                "block \"%s\" is not a consumer of %s: it must read it and not "
                                "write it",
                                cb->name, buf->name);
            for (int k = 0; k < n; k++)
                if (v[k] == ci) ci = -1;
            if (ci >= 0) v[n++] = ci;
        }
    } else {
        int *all;
        int na = sch_scope_blocks(s, scope, &all);
        v = IR_NEWN(c->ctx, int, na);
        for (int k = 0; k < na; k++) {
            const tir_block *cb = sch_sref_block(s, all[k]);
            if (!sch_region_has(cb->nreads, cb->reads, buf)) continue;
            if (all[k] == bi && !default_all) continue;
            if (sch_region_has(cb->nwrites, cb->writes, buf))
                return sch_fail(c, TIR_ERR_SCHED_NOT_CONSUMER, rv, cb,
                                "block \"%s\" reads %s but also writes it, so it cannot read "
                                "a cache of it",
                                cb->name, buf->name);
            v[n++] = all[k];
        }
    }
    *cons = v;
    *ncons = n;
    return TIR_OK;
}

/* The last compute_at or reverse_compute_at in the trace that moved
 * block w or block r (NULL: none). */
static const sch_inst *last_move(const tir_schedule *s, const tir_block *w,
                                 const tir_block *r, const tir_block **moved) {
    for (int t = s->ntrace - 1; t >= 0; t--) {
        const sch_inst *in = &s->trace[t];
        if (in->kind != SCH_INST_compute_at && in->kind != SCH_INST_reverse_compute_at)
            continue;
        const char *name = s->entries[in->args[0].rv - 1].block_name;
        if (name && (!strcmp(name, w->name) || !strcmp(name, r->name))) {
            *moved = !strcmp(name, w->name) ? w : r;
            return in;
        }
    }
    return NULL;
}

/* 6: consumer ci does not come after writer wi in the scope.  The cache
 * copies the whole buffer, so it can only stand between whole statements;
 * when compute_at or reverse_compute_at put both under one loop, the way
 * out is to create the cache first (compute_at then moves it along). */
static tir_status no_place(sch_call *c, uint32_t rv, int wi, int ci, const tir_buffer *buf) {
    const tir_schedule *s = c->sch;
    const tir_block *w = sch_sref_block(s, wi), *r = sch_sref_block(s, ci);
    const void *marks[2] = {w, r};
    const tir_block *moved = NULL;
    const sch_inst *in = last_move(s, w, r, &moved);
    const char *what =
        in && in->kind == SCH_INST_compute_at ? "compute_at" : "reverse_compute_at";
    if (in)
        return sch_fail_marks(c, TIR_ERR_SCHED_NOT_STAGE_PIPELINE, rv, 2, marks,
                              "the writer \"%s\" of %s and its consumer \"%s\" lie in one "
                              "statement of the scope since %s of \"%s\", so there is no place "
                              "for a whole-buffer cache between them: create the cache "
                              "(cache_read of %s for \"%s\") before %s of \"%s\"",
                              w->name, buf->name, r->name, what, moved->name, buf->name,
                              r->name, what, moved->name);
    return sch_fail_marks(c, TIR_ERR_SCHED_NOT_STAGE_PIPELINE, rv, 2, marks,
                          "consumer \"%s\" does not come after the writer \"%s\" of %s "
                          "in the scope, so there is no place for the cache between them",
                          r->name, w->name, buf->name);
}

tir_status sch_prim_cache_read(sch_call *c) {
    const tir_schedule *s = c->sch;
    tir_ctx *ctx = c->ctx;
    sch_cache_target t;
    TIR_TRY(sch_cache_args(c, true, &t));
    /* 7: the copy reads the whole buffer, of which a block inside a tile
       block (blockize) may see only the part its producers wrote. */
    if (s->srefs[t.sc].parent >= 0)
        return sch_fail(c, TIR_ERR_SCHED_DIFFERENT_SCOPE, t.rv, t.b,
                        "block \"%s\" lies inside block \"%s\": a cache there would copy the "
                        "whole buffer, elements its producers may not write; cache the read "
                        "before blockize",
                        t.b->name, sch_sref_block(s, t.sc)->name);
    uint32_t rv = t.rv;
    int bi = t.bi, sc = t.sc;
    const tir_buffer *buf = t.buf;
    tir_scope scope = t.scope;
    int *cons, ncons;
    TIR_TRY(sch_cache_consumers(c, rv, bi, sc, &c->args[3], buf, true, &cons, &ncons));
    /* 5-6: one writer, before every consumer. */
    int *all;
    int na = sch_scope_blocks(s, sc, &all), writer = -1;
    for (int k = 0; k < na; k++) {
        const tir_block *wb = sch_sref_block(s, all[k]);
        if (!sch_region_has(wb->nwrites, wb->writes, buf)) continue;
        if (writer >= 0) {
            const void *marks[2] = {sch_sref_block(s, writer), wb};
            return sch_fail_marks(c, TIR_ERR_SCHED_MULTIPLE_WRITERS, rv, 2, marks,
                                  "%s is written by blocks \"%s\" and \"%s\"; cache_read "
                                  "needs at most one writer",
                                  buf->name, sch_sref_block(s, writer)->name, wb->name);
        }
        writer = all[k];
    }
    /* 8: the copy reads the whole buffer, so its writer must have written
       all of it (compute_at narrows a producer to what its consumers read) */
    const char *why = writer >= 0 ? sch_writes_whole(s, writer, sc, buf) : NULL;
    if (why)
        return sch_fail(c, TIR_ERR_SCHED_REGION_NOT_COVERED, rv, sch_sref_block(s, writer),
                        "block \"%s\" writes only part of %s over its loops, and the cache "
                        "copies the whole buffer (%s)",
                        sch_sref_block(s, writer)->name, buf->name, why);
    /* 9: nor may it skip elements of an allocation (a parameter's are the
       caller's values): a predicate or an empty reduce domain leaves them
       unwritten, and the copy would read them where the consumers did not */
    why = writer >= 0 && !sch_is_param_buffer(s->func, buf)
              ? sch_may_skip_elements(s, writer, buf)
              : NULL;
    if (why)
        return sch_fail(c, TIR_ERR_SCHED_REGION_NOT_COVERED, rv, sch_sref_block(s, writer),
                        "%s may leave elements of %s unwritten (%s), and the cache copies "
                        "the whole buffer",
                        sch_sref_block(s, writer)->name, buf->name, why);
    const tir_block *scope_b = sch_sref_block(s, sc);
    int wpos = writer >= 0 ? sch_child_holding(s, sc, writer) : -1;
    for (int k = 0; k < ncons; k++)
        if (sch_child_holding(s, sc, cons[k]) <= wpos)
            return no_place(c, rv, writer, cons[k], buf);

    const tir_buffer *cache = sch_cache_buffer(ctx, buf, scope);
    const char *name = sch_unique_block_name(s, cache->name);
    const tir_stmt *nest = sch_copy_nest(ctx, name, buf, cache, NULL);
    const tir_stmt **olds = IR_NEWN(ctx, const tir_stmt *, ncons);
    const tir_stmt **news = IR_NEWN(ctx, const tir_stmt *, ncons);
    for (int k = 0; k < ncons; k++) {
        const tir_block_realize *r = s->srefs[cons[k]].realize;
        const tir_block *nb =
            (const tir_block *)tir_replace_buffers(ctx, r->block, 1, &buf, &cache);
        olds[k] = &r->base;
        news[k] = tir_block_realize_new(ctx, r->nvalues, r->values, r->predicate, nb);
    }
    bool after = wpos >= 0;
    const tir_stmt *anchor = sch_child_at(scope_b->body, after ? wpos : 0);
    sch_edit_spec e = {.ctx = ctx, .nrepl = ncons, .olds = olds, .news = news, .nins = 1,
                       .anchors = &anchor, .inserts = &nest, .after = &after,
                       .scope = scope_b, .add_alloc = cache};
    c->func = sch_edit(c, &e);
    sch_out_block(c, name);
    return TIR_OK;
}

tir_status tir_sched_cache_read(tir_schedule *s, tir_block_rv block, int read_index,
                                const char *scope, int nconsumers,
                                const tir_block_rv *consumers, tir_block_rv *out) {
    if (!s || !out) return sch_bad_arg(s, "cache_read", "out is NULL");
    sch_arg args[4] = {SCH_RV(block), {.i = read_index}, {.s = scope},
                       sch_block_rv_list(s, nconsumers, consumers)};
    const uint32_t *ids;
    int n;
    TIR_TRY(sch_run(s, SCH_INST_cache_read, args, &ids, &n));
    *out = sch_block_rv(s, ids[0]);
    return TIR_OK;
}
