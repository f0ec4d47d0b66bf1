/* reverse_compute_at.c: move a consumer block under a loop of its
 * producers (TVM's ReverseComputeAt).
 *
 * The mirror of compute_at: the block gets new loops, at the end of the
 * loop's body (before any of its own consumers there), covering the
 * region its producers write during one iteration of the loop, relaxed
 * over the loops inside it only (never over thread-bound loops above it:
 * in sequential order, one thread's copy would read what later threads
 * have not produced yet).  Placed under a thread loop, the copy-back of a
 * local accumulator (cache_write) runs once per thread after its
 * reduction.
 */
#include "sched_internal.h"

tir_status sch_check_target_loop(sch_call *c, uint32_t brv, uint32_t lrv, int bi, int li,
                                 int *scope);
const tir_prim_func *sch_move_block(sch_call *c, int bi, int li, int pos,
                                    const tir_stmt *moved);

/* True if block o writes a buffer block b reads. */
static bool feeds(const tir_block *o, const tir_block *b) {
    for (int r = 0; r < b->nreads; r++)
        if (sch_region_has(o->nwrites, o->writes, b->reads[r].buffer)) return true;
    return false;
}

/* True when every conjunct of r's predicate is a bound `binding < end` of
 * one of its iterators: then it masks only points outside the block's
 * domain, and the region relaxed without it is exactly what is produced
 * inside the domain.  A split of a split part leaves conjuncts such as
 * j_1_0 * 2 + j_1_1 < 2, which mask points inside the domain. */
static bool bounds_only(tir_ctx *ctx, tir_analyzer *a, const tir_block_realize *r,
                        const tir_expr *e) {
    const tir_binop *b = tir_as_tir_binop(e);
    if (b && e->kind == TIR_KIND_AND)
        return bounds_only(ctx, a, r, b->a) && bounds_only(ctx, a, r, b->b);
    int64_t v;
    if (tir_expr_const_int(e, &v)) return v != 0;
    if (!b || e->kind != TIR_KIND_LT) return false;
    for (int k = 0; k < r->nvalues; k++) {
        const tir_iter_var *it = &r->block->iters[k];
        const tir_expr *d1 = tir_sub(ctx, b->a, r->values[k]);
        const tir_expr *d2 = tir_sub(ctx, b->b,
                                     tir_add(ctx, it->dom.min, it->dom.extent));
        if (sch_is_const(tir_analyzer_simplify(a, d1), 0) &&
            sch_is_const(tir_analyzer_simplify(a, d2), 0))
            return true;
    }
    return false;
}

tir_status sch_prim_reverse_compute_at(sch_call *c) {
    const tir_schedule *s = c->sch;
    tir_ctx *ctx = c->ctx;
    uint32_t brv = c->args[0].rv, lrv = c->args[1].rv;
    bool preserve = c->args[2].i != 0;
    int bi = sch_block_sref(c, brv), li = sch_loop_sref(c, lrv);
    const tir_block *b = sch_sref_block(s, bi);
    const tir_for *loop = sch_sref_for(s, li);
    int sc;
    TIR_TRY(sch_check_target_loop(c, brv, lrv, bi, li, &sc));
    /* 3 */
    if (sch_classify_block(b) == SCH_BLOCK_OTHER)
        return sch_fail(c, TIR_ERR_SCHED_BLOCK_NOT_COMPLETE, brv, b,
                        "block \"%s\" is neither complete nor a reduction, so recomputing "
                        "part of it could change what it writes",
                        b->name);
    /* 4: the only writer of what it writes. */
    int *all;
    int na = sch_scope_blocks(s, sc, &all);
    for (int k = 0; k < na; k++) {
        const tir_block *o = sch_sref_block(s, all[k]);
        if (all[k] == bi) continue;
        for (int w = 0; w < b->nwrites; w++)
            if (sch_region_has(o->nwrites, o->writes, b->writes[w].buffer)) {
                const void *marks[2] = {b, o};
                return sch_fail_marks(c, TIR_ERR_SCHED_MULTIPLE_WRITERS, brv, 2, marks,
                                      "%s is also written by block \"%s\"",
                                      b->writes[w].buffer->name, o->name);
            }
    }
    /* 5-6: producers, all under the loop. */
    int nunder = 0;
    for (int k = 0; k < na; k++) {
        const tir_block *o = sch_sref_block(s, all[k]);
        if (all[k] == bi || !feeds(o, b)) continue;
        if (!sch_is_ancestor(s, li, all[k])) {
            const void *marks[2] = {loop, o};
            return sch_fail_marks(c, TIR_ERR_SCHED_PRODUCER_OUTSIDE, brv, 2, marks,
                                  "producer \"%s\" of \"%s\" lies outside loop %s", o->name,
                                  b->name, loop->var->name);
        }
        nunder++;
    }
    if (nunder == 0)
        return sch_fail(c, TIR_ERR_SCHED_NO_PRODUCER, brv, b,
                        "block \"%s\" has no producer in its scope under loop %s", b->name,
                        loop->var->name);
    /* 7: reads of produced buffers are trivial. */
    int *dim_of = IR_NEWN(ctx, int, b->niters);
    for (int r = 0; r < b->nreads; r++) {
        bool produced = false;
        for (int k = 0; k < na; k++)
            if (all[k] != bi && sch_region_has(sch_sref_block(s, all[k])->nwrites,
                                               sch_sref_block(s, all[k])->writes,
                                               b->reads[r].buffer))
                produced = true;
        if (produced && sch_trivial_dim(b, &b->reads[r], dim_of) >= 0)
            return sch_fail(c, TIR_ERR_SCHED_NOT_TRIVIAL_ACCESS, brv, b,
                            "block \"%s\" must read %s at distinct spatial iterators (one "
                            "element each), so that the region produced gives the "
                            "iterators' ranges",
                            b->name, b->reads[r].buffer->name);
    }
    /* 8: producers' predicates only bound their domains. */
    {
        tir_analyzer *pa = tir_analyzer_new(ctx);
        for (int k = 0; k < na; k++) {
            const tir_block *o = sch_sref_block(s, all[k]);
            if (all[k] == bi || !feeds(o, b)) continue;
            const tir_block_realize *pr = s->srefs[all[k]].realize;
            if (!bounds_only(ctx, pa, pr, pr->predicate)) {
                tir_analyzer_free(pa);
                return sch_fail(c, TIR_ERR_SCHED_PREDICATED_PRODUCER, brv, o,
                                "the predicate of producer \"%s\" masks points inside its "
                                "domain, so the region it writes under loop %s is not known",
                                o->name, loop->var->name);
            }
        }
        tir_analyzer_free(pa);
    }
    /* 9: position at the end, before any consumer of the block. */
    int nch = sch_num_children(loop->body), pos = nch, last_prod = -1;
    for (int k = 0; k < na; k++) {
        const tir_block *o = sch_sref_block(s, all[k]);
        if (all[k] == bi || !sch_is_ancestor(s, li, all[k])) continue;
        int ch = sch_child_holding(s, li, all[k]);
        if (feeds(b, o) && ch < pos) pos = ch;
        if (feeds(o, b) && ch > last_prod) last_prod = ch;
    }
    if (last_prod >= pos)
        return sch_fail(c, TIR_ERR_SCHED_NOT_STAGE_PIPELINE, brv, loop,
                        "under loop %s a consumer of \"%s\" comes before its last producer, "
                        "so there is no place for it",
                        loop->var->name, b->name);
    /* 10: the region, intersected over the produced buffers it reads. */
    tir_analyzer *a = tir_analyzer_new(ctx);
    sch_bound *rng = IR_NEWN(ctx, sch_bound, b->niters);
    bool ok = true;
    for (int r = 0; r < b->nreads && ok; r++) {
        const tir_buffer *buf = b->reads[r].buffer;
        sch_bound *acc = IR_NEWN(ctx, sch_bound, buf->ndim);
        bool any = false;
        for (int k = 0; k < na && ok; k++) {
            const tir_block *o = sch_sref_block(s, all[k]);
            if (all[k] == bi) continue;
            for (int w = 0; w < o->nwrites && ok; w++)
                if (o->writes[w].buffer == buf) {
                    sch_bind_ancestors(s, a, s->srefs[all[k]].parent);
                    /* Never across threads: a thread's copy would read
                       elements other threads have not produced yet. */
                    ok = sch_relax_access(s, a, all[k], li, sc, &o->writes[w],
                                          TIR_SCOPE_LOCAL, acc);
                    any = true;
                }
        }
        if (!any || !ok) continue;
        sch_trivial_dim(b, &b->reads[r], dim_of);
        sch_bind_ancestors(s, a, li);
        for (int k = 0; k < b->niters; k++) {
            if (dim_of[k] < 0) continue;
            sch_bound x = acc[dim_of[k]];
            if (rng[k].lo) {
                x.lo = tir_analyzer_simplify(a, tir_max(ctx, rng[k].lo, x.lo));
                x.hi = tir_analyzer_simplify(a, tir_min(ctx, rng[k].hi, x.hi));
            }
            rng[k] = x;
        }
    }
    tir_analyzer_free(a);
    if (!ok)
        return sch_fail(c, TIR_ERR_SCHED_REGION_UNBOUNDED, brv, loop,
                        "the region the producers of \"%s\" write under loop %s cannot be "
                        "bounded",
                        b->name, loop->var->name);
    const tir_stmt *moved = sch_regen_loops(c, li, b, rng, preserve);
    c->func = sch_move_block(c, bi, li, pos, moved);
    return TIR_OK;
}

tir_status tir_sched_reverse_compute_at(tir_schedule *s, tir_block_rv block, tir_loop_rv loop,
                                        bool preserve_unit_loops) {
    if (!s) return sch_bad_arg(s, "reverse_compute_at", "schedule is NULL");
    sch_arg args[3] = {SCH_RV(block), SCH_RV(loop), {.i = preserve_unit_loops ? 1 : 0}};
    return sch_run(s, SCH_INST_reverse_compute_at, args, NULL, NULL);
}
