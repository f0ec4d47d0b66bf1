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
 * reduction.  A bounding box is not enough for a reader: the placement
 * is accepted only when the producers provably write all of it during
 * the iteration (region_cover.c).
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

/* True when writer sref wi writes, during one iteration of loop sref li,
 * exactly the elements the consumer b (placed over rng) reads at its
 * trivial access with iterator k on dimension dim_of[k]: the writer runs
 * a box of instances (sch_exec_box), writes buf at its own iterators,
 * runs every other iterator (reduce ones included) over its whole domain
 * so the elements are final, and the box is b's new range per iterator.
 * With b's domain inside the writer's, every instance of b still runs,
 * once (the writer's boxes over the iterations are disjoint and cover its
 * domain). */
static bool writer_covers(const tir_schedule *s, tir_analyzer *a, int wi, int li,
                          const tir_block *b, const int *dim_of, const sch_bound *rng,
                          const tir_buffer *buf) {
    tir_ctx *ctx = s->ctx;
    const tir_block *o = sch_sref_block(s, wi);
    int *pdim = IR_NEWN(ctx, int, o->niters + 1);
    sch_bound *box = IR_NEWN(ctx, sch_bound, o->niters + 1);
    if (!sch_writer_box(s, a, wi, li, buf, pdim, box)) return false;
    for (int kc = 0; kc < b->niters; kc++) {
        if (dim_of[kc] < 0) continue;
        int k = 0;
        while (pdim[k] != dim_of[kc]) k++;
        const tir_range *cd = &b->iters[kc].dom, *pd = &o->iters[k].dom;
        if (!rng[kc].lo || !sch_prove_le(ctx, a, pd->min, cd->min) ||
            !sch_prove_le(ctx, a, tir_add(ctx, cd->min, cd->extent),
                          tir_add(ctx, pd->min, pd->extent)) ||
            !sch_prove_le(ctx, a, rng[kc].lo, box[k].lo) ||
            !sch_prove_le(ctx, a, box[k].lo, rng[kc].lo) ||
            !sch_prove_le(ctx, a, rng[kc].hi, box[k].hi) ||
            !sch_prove_le(ctx, a, box[k].hi, rng[kc].hi))
            return false;
    }
    return true;
}

/* Precondition 11: every writer of every produced buffer b reads covers
 * what b reads there (writer_covers); the first one that does not, or -1. */
static int uncovered_writer(const tir_schedule *s, int li, int *all, int na, int bi,
                            const sch_bound *rng, int *bad_read) {
    tir_ctx *ctx = s->ctx;
    const tir_block *b = sch_sref_block(s, bi);
    int *dim_of = IR_NEWN(ctx, int, b->niters + 1);
    tir_analyzer *a = tir_analyzer_create(ctx);
    sch_bind_ancestors(s, a, li);
    int bad = -1;
    for (int r = 0; r < b->nreads && bad < 0; r++) {
        const tir_buffer *buf = b->reads[r].buffer;
        for (int k = 0; k < na && bad < 0; k++) {
            const tir_block *o = sch_sref_block(s, all[k]);
            if (all[k] == bi || !sch_region_has(o->nwrites, o->writes, buf)) continue;
            sch_trivial_dim(b, &b->reads[r], dim_of);
            if (!writer_covers(s, a, all[k], li, b, dim_of, rng, buf)) {
                bad = all[k];
                *bad_read = r;
            }
        }
    }
    tir_analyzer_destroy(a);
    return bad;
}

/* Precondition 16: the loop and the loops above it in the scope that
 * feed no spatial iterator of a producer under the loop run at least
 * once.  Region cover (11) proves the producers' elements final in one
 * iteration of the loop (a reduce loop of extent min(j, 1) completes its
 * reduction there); where such a loop is empty the producers still ran
 * their spatial instances, with nothing to reduce, and the block placed
 * in it would run none of its own.  The first such loop, or NULL. */
static const tir_for *empty_path_loop(const tir_schedule *s, int li, int sc, int *all, int na,
                                      int bi) {
    tir_ctx *ctx = s->ctx;
    const tir_block *b = sch_sref_block(s, bi);
    tir_analyzer *a = tir_analyzer_create(ctx);
    const tir_for *bad = NULL;
    for (int p = li; p >= 0 && p != sc && !bad; p = s->srefs[p].parent) {
        const tir_for *f = sch_sref_for(s, p);
        if (!f) break;
        bool spatial = false;
        for (int k = 0; k < na && !spatial; k++) {
            const tir_block_realize *r = s->srefs[all[k]].realize;
            if (all[k] == bi || !sch_is_ancestor(s, p, all[k]) || !feeds(r->block, b)) continue;
            for (int v = 0; v < r->nvalues; v++)
                spatial |= r->block->iters[v].kind == TIR_ITER_SPATIAL &&
                           tir_uses_var(r->values[v], f->var);
        }
        sch_bind_ancestors(s, a, s->srefs[p].parent);
        if (!spatial &&
            !tir_analyzer_can_prove(a, tir_gt(ctx, f->extent, tir_int(ctx, f->extent->dtype, 0))))
            bad = f;
    }
    tir_analyzer_destroy(a);
    return bad;
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
    /* 17: the new loops run each iterator over its domain or a part of it */
    TIR_TRY(sch_check_dom_local(c, brv, bi));
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
    /* 8: producers' predicates mask no point they write. */
    for (int k = 0; k < na; k++) {
        const tir_block *o = sch_sref_block(s, all[k]);
        if (all[k] == bi || !feeds(o, b)) continue;
        if (!sch_pred_keeps_writes(s, all[k]))
            return sch_fail(c, TIR_ERR_SCHED_PREDICATED_PRODUCER, brv, o,
                            "the predicate of producer \"%s\" masks points inside the region "
                            "it writes, so the region it writes under loop %s is not known",
                            o->name, loop->var->name);
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
    tir_analyzer *a = tir_analyzer_create(ctx);
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
    tir_analyzer_destroy(a);
    if (!ok)
        return sch_fail(c, TIR_ERR_SCHED_REGION_UNBOUNDED, brv, loop,
                        "the region the producers of \"%s\" write under loop %s cannot be "
                        "bounded",
                        b->name, loop->var->name);
    /* 11 */
    int bad_read = 0, bad = uncovered_writer(s, li, all, na, bi, rng, &bad_read);
    if (bad >= 0) {
        const tir_block *o = sch_sref_block(s, bad);
        const void *marks[2] = {loop, o};
        return sch_fail_marks(c, TIR_ERR_SCHED_REGION_NOT_COVERED, brv, 2, marks,
                              "cannot prove that producer \"%s\" writes, during one "
                              "iteration of loop %s, all of %s that block \"%s\" would read "
                              "there: its bindings must be affine in the loops inside %s "
                              "with a dense stride pattern (no strided or partial writes), "
                              "its other iterators must run in full, and the domain of "
                              "\"%s\" must lie inside its own",
                              o->name, loop->var->name, b->reads[bad_read].buffer->name,
                              b->name, loop->var->name, b->name);
    }
    const tir_for *empty = empty_path_loop(s, li, sc, all, na, bi);
    if (empty) {
        const void *marks[2] = {empty, b};
        return sch_fail_marks(c, TIR_ERR_SCHED_REGION_NOT_COVERED, brv, 2, marks,
                              "loop %s, of extent %s, feeds no spatial iterator of the "
                              "producers of \"%s\" and may run no iteration, where the block "
                              "placed under loop %s would run none of its instances",
                              empty->var->name, tir_print(ctx, empty->extent), b->name,
                              loop->var->name);
    }
    /* 12 */
    if (!sch_reduce_pred_bounds_only(s, bi))
        return sch_fail(c, TIR_ERR_SCHED_PREDICATED_PRODUCER, brv, b,
                        "the predicate of block \"%s\" masks reduction steps inside its "
                        "domain, which moving it would drop",
                        b->name);
    /* 13: the move changes the order of the block's instances only against
       the blocks under the loop and between it and the block, which must
       then not read what it writes (they saw the old values); the loop
       must precede the block (its writers there ran after the block read). */
    if (li > bi)
        return sch_fail(c, TIR_ERR_SCHED_NOT_STAGE_PIPELINE, brv, loop,
                        "loop %s comes after block \"%s\": the block read what the "
                        "blocks under it write before they wrote it",
                        loop->var->name, b->name);
    for (int k = 0; k < na; k++) {
        const tir_block *o = sch_sref_block(s, all[k]);
        if (all[k] <= li || all[k] >= bi) continue;
        for (int w = 0; w < b->nwrites; w++)
            if (sch_region_has(o->nreads, o->reads, b->writes[w].buffer)) {
                const void *marks[2] = {b, o};
                return sch_fail_marks(c, TIR_ERR_SCHED_NOT_STAGE_PIPELINE, brv, 2, marks,
                                      "block \"%s\" reads %s before \"%s\" writes it; "
                                      "under loop %s it would read the new values",
                                      o->name, b->writes[w].buffer->name, b->name,
                                      loop->var->name);
            }
    }
    /* 14: as compute_at 14 */
    TIR_TRY(sch_check_reduce_order(c, brv, bi));
    const tir_stmt *moved;
    TIR_TRY(sch_regen_moved(c, brv, li, bi, rng, preserve, &moved));
    c->func = sch_move_block(c, bi, li, pos, moved);
    return TIR_OK;
}

tir_status tir_sched_reverse_compute_at(tir_schedule *s, tir_block_rv block, tir_loop_rv loop,
                                        bool preserve_unit_loops) {
    if (!s) return sch_bad_arg(s, "reverse_compute_at", "schedule is NULL");
    sch_arg args[3] = {SCH_RV(block), SCH_RV(loop), {.i = preserve_unit_loops ? 1 : 0}};
    return sch_run(s, SCH_INST_reverse_compute_at, args, NULL, NULL);
}
