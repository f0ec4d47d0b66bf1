/* cache_write.c: compute a buffer into a cache in shared or local memory
 * and copy it back (TVM's CacheWrite).
 *
 * The block then writes a new buffer of the scope (allocated in the scope
 * block) and a new block, placed right after it in the scope, copies the
 * whole cache back to the original buffer.  Other readers keep reading
 * the original unless listed as consumers, so the block must have written
 * all of it (precondition 8).  The typical use is a register
 * accumulator: cache_write(C, 0, "local"), then reverse_compute_at of the
 * copy-back block under the thread loop.  Where the block's reduce
 * domain may be empty (a symbolic K), the write-back is predicated on it
 * not being so: over an empty domain the block writes nothing and the
 * buffer keeps its values (precondition 10); so is it on the block's
 * predicate where that names only scalar parameters, and a predicate
 * masking some of the elements is refused (precondition 11); consumers,
 * which would read the cache where the write-back does not run, are then
 * refused (precondition 12).
 */
#include "sched_internal.h"

/* 11: the block's predicate masks stores.  A conjunct over scalar
 * parameters alone (n > 0) masks all of them or none, so the write-back
 * runs under it too (*pred gets it).  One over loops must mask no element
 * the block writes nor the init of one: a bound of the bindings, or a
 * condition on the reduction's own loops that holds at its first step
 * (sch_conj_keeps_writes); otherwise the write-back would copy elements
 * of the cache nothing wrote over what the block left as it was. */
static tir_status masked_stores(sch_call *c, uint32_t rv, int bi, const tir_buffer *buf,
                                const tir_expr **pred) {
    const tir_schedule *s = c->sch;
    const tir_block_realize *r = s->srefs[bi].realize;
    if (!r) return TIR_OK;
    ir_vec conj = {0};
    sch_conjuncts(r->predicate, &conj);
    tir_status st = TIR_OK;
    for (int j = 0; j < conj.n && st == TIR_OK; j++) {
        const tir_expr *e = conj.items[j];
        if (sch_params_only(s->func, e))
            *pred = *pred ? tir_and(c->ctx, *pred, e) : e;
        else if (!sch_conj_keeps_writes(s, bi, e))
            st = sch_fail(c, TIR_ERR_SCHED_REGION_NOT_COVERED, rv, r->block,
                          "block \"%s\" runs under %s, which masks elements of %s it writes "
                          "(or the init of their reduction), and the write-back would copy "
                          "elements of the cache nothing wrote",
                          r->block->name, tir_print(c->ctx, e), buf->name);
    }
    ir_vec_free(&conj);
    return st;
}

/* Preconditions 9 to 11 for block sref wi, which writes buf: the cached
 * block bi or a block inside it; conjoins to *pred what the write-back
 * must run under. */
static tir_status writer_checks(sch_call *c, uint32_t rv, int bi, int wi,
                                const tir_buffer *buf, const tir_expr **pred) {
    const tir_schedule *s = c->sch;
    tir_ctx *ctx = c->ctx;
    const tir_block *b = sch_sref_block(s, wi);
    /* 9: the cache starts unwritten, so a block that reads the buffer's
       old values (an accumulation without init, `C[i] = C[i] + A[i, k]`)
       would read elements nothing wrote (a block inside the cached one
       gets its init from it: blockize of a reduction) */
    if (wi == bi && !b->init && sch_region_has(b->nreads, b->reads, buf))
        return sch_fail(c, TIR_ERR_SCHED_REGION_NOT_COVERED, rv, b,
                        "block \"%s\" reads the old values of %s (it has no init), and the "
                        "cache would start unwritten; give it an init, or cache another "
                        "buffer",
                        b->name, buf->name);
    /* 10: over an empty reduce domain (a symbolic K = 0) the block writes
       nothing and the buffer keeps its values, so the write-back runs only
       where the domain is not empty; it must be able to say where */
    bool other;
    const tir_expr *nonempty = sch_reduce_nonempty(s, wi, &other);
    if (other)
        return sch_fail(c, TIR_ERR_SCHED_REGION_NOT_COVERED, rv, b,
                        "block \"%s\" may run no instance (its reduce domain, %s, may be "
                        "empty and names more than the function's scalar parameters), and "
                        "the write-back would copy a cache nothing wrote",
                        b->name, tir_print(ctx, nonempty));
    if (nonempty) *pred = *pred ? tir_and(ctx, *pred, nonempty) : nonempty;
    return masked_stores(c, rv, wi, buf, pred);
}

tir_status sch_prim_cache_write(sch_call *c) {
    const tir_schedule *s = c->sch;
    tir_ctx *ctx = c->ctx;
    sch_cache_target t;
    TIR_TRY(sch_cache_args(c, false, &t));
    /* 7: the write-back copies the whole cache, which a block inside a
       tile block (blockize) writes only its tile of per instance. */
    if (s->srefs[t.sc].parent >= 0)
        return sch_fail(c, TIR_ERR_SCHED_DIFFERENT_SCOPE, t.rv, t.b,
                        "block \"%s\" lies inside block \"%s\", whose instances each write "
                        "part of the buffer; cache the write before blockize",
                        t.b->name, sch_sref_block(s, t.sc)->name);
    uint32_t rv = t.rv;
    int bi = t.bi, sc = t.sc;
    const tir_block *b = t.b;
    const tir_buffer *buf = t.buf;
    tir_scope scope = t.scope;
    int *cons = NULL, ncons = 0;
    if (c->args[3].n > 0)
        TIR_TRY(sch_cache_consumers(c, rv, bi, sc, &c->args[3], buf, false, &cons, &ncons));
    /* 5: the only writer. */
    int *all;
    int na = sch_scope_blocks(s, sc, &all);
    for (int k = 0; k < na; k++) {
        const tir_block *wb = sch_sref_block(s, all[k]);
        if (all[k] != bi && sch_region_has(wb->nwrites, wb->writes, buf)) {
            const void *marks[2] = {b, wb};
            return sch_fail_marks(c, TIR_ERR_SCHED_MULTIPLE_WRITERS, rv, 2, marks,
                                  "%s is also written by block \"%s\"; cache_write needs "
                                  "exactly one writer",
                                  buf->name, wb->name);
        }
    }
    /* 6: every reader comes in a later statement of the scope. */
    int wpos = sch_child_holding(s, sc, bi);
    for (int k = 0; k < na; k++) {
        const tir_block *rb = sch_sref_block(s, all[k]);
        if (all[k] == bi || !sch_region_has(rb->nreads, rb->reads, buf)) continue;
        if (sch_child_holding(s, sc, all[k]) <= wpos) {
            const void *marks[2] = {b, rb};
            return sch_fail_marks(c, TIR_ERR_SCHED_NOT_STAGE_PIPELINE, rv, 2, marks,
                                  "block \"%s\" reads %s in the same statement of the scope "
                                  "as its writer (or before it), so the copy back cannot go "
                                  "between them",
                                  rb->name, buf->name);
        }
    }

    /* 8: the write-back copies the whole cache, so the block must have
       written all of it (compute_at leaves a producer writing the region
       its consumers read: the schedule fuzzer's seed 1930500022 case 568
       copied back a column of pad nobody wrote; a strided writer, Y[2 * i]
       into 15 elements, left the odd ones to garbage) */
    const char *why = sch_writes_whole(s, bi, sc, buf);
    if (why)
        return sch_fail(c, TIR_ERR_SCHED_REGION_NOT_COVERED, rv, b,
                        "block \"%s\" writes only part of %s over its loops, and the "
                        "write-back copies the whole cache (%s)",
                        b->name, buf->name, why);
    /* 9-11 for the block and each block inside it (blockize leaves the
       update and its predicate inside) that writes the buffer */
    const tir_expr *nonempty = NULL;
    for (int k = 0; k < s->nsrefs; k++) {
        const tir_block *w = sch_sref_block(s, k);
        if (w && (k == bi || sch_is_ancestor(s, bi, k)) &&
            sch_region_has(w->nwrites, w->writes, buf))
            TIR_TRY(writer_checks(c, rv, bi, k, buf, &nonempty));
    }
    /* 12: where the write-back may not run, the consumers given would read
       a cache the block did not write */
    if (nonempty && ncons > 0) {
        const void *marks[2] = {b, sch_sref_block(s, cons[0])};
        return sch_fail_marks(c, TIR_ERR_SCHED_REGION_NOT_COVERED, rv, 2, marks,
                              "block \"%s\" may write nothing (where %s fails), and block "
                              "\"%s\" would read the cache instead of what %s kept; cache "
                              "the write without consumers",
                              b->name, tir_print(ctx, nonempty),
                              sch_sref_block(s, cons[0])->name, buf->name);
    }
    const tir_block *scope_b = sch_sref_block(s, sc);
    const tir_buffer *cache = sch_cache_buffer(ctx, buf, scope);
    const char *name = sch_unique_block_name(s, cache->name);
    const tir_stmt *nest = sch_copy_nest(ctx, name, cache, buf, nonempty);
    const tir_stmt **olds = IR_NEWN(ctx, const tir_stmt *, ncons + 1);
    const tir_stmt **news = IR_NEWN(ctx, const tir_stmt *, ncons + 1);
    for (int k = 0; k <= ncons; k++) {
        const tir_block_realize *r = s->srefs[k < ncons ? cons[k] : bi].realize;
        const tir_block *nb =
            (const tir_block *)tir_replace_buffers(ctx, r->block, 1, &buf, &cache);
        olds[k] = &r->base;
        news[k] = tir_block_realize_new(ctx, r->nvalues, r->values, r->predicate, nb);
    }
    bool after = true;
    const tir_stmt *anchor = sch_child_at(scope_b->body, wpos);
    sch_edit_spec e = {.ctx = ctx, .nrepl = ncons + 1, .olds = olds, .news = news, .nins = 1,
                       .anchors = &anchor, .inserts = &nest, .after = &after,
                       .scope = scope_b, .add_alloc = cache};
    c->func = sch_edit(c, &e);
    sch_out_block(c, name);
    return TIR_OK;
}

tir_status tir_sched_cache_write(tir_schedule *s, tir_block_rv block, int write_index,
                                 const char *scope, int nconsumers,
                                 const tir_block_rv *consumers, tir_block_rv *out) {
    if (!s || !out) return sch_bad_arg(s, "cache_write", "out is NULL");
    sch_arg args[4] = {SCH_RV(block), {.i = write_index}, {.s = scope},
                       sch_block_rv_list(s, nconsumers, consumers)};
    const uint32_t *ids;
    int n;
    TIR_TRY(sch_run(s, SCH_INST_cache_write, args, &ids, &n));
    *out = sch_block_rv(s, ids[0]);
    return TIR_OK;
}
