/* compute_at.c: move a producer block under a loop of its consumers (TVM's
 * ComputeAt).
 *
 * The block leaves its loops (loops left empty go with it) and gets new
 * loops under the target loop, covering the region its consumers read
 * during one iteration of that loop: the read regions with the loops
 * between the loop and each consumer relaxed.  Loops above the target
 * that are bound to threads sharing the written buffer are relaxed as
 * well, so a shared-memory copy computes the whole thread block's tile
 * (ready to be split and bound for a cooperative fetch) instead of one
 * thread's part.  Where that region pokes out of the block's domain
 * (non-divisible tiles), the realize gets a bounds predicate; each
 * consumer must then provably read only inside the domain, and the buffer
 * must not be a parameter, whose caller reads all of it.  What the moved
 * block reads must be there when it runs: a producer sharing a loop with
 * its new place must write all of it earlier in the same iteration of
 * the innermost shared loop (a thread loop counts: relaxed over one, a
 * block reads what other threads' producers write later).
 */
#include "sched_internal.h"

/* Preconditions 1-3 of both compute_at and reverse_compute_at. */
tir_status sch_check_target_loop(sch_call *c, uint32_t brv, uint32_t lrv, int bi, int li,
                                 int *scope);
/* The edit moving block sref bi to new statement `moved`, inserted before
 * child `pos` of loop li's body (after the last child when pos is the
 * number of children). */
const tir_prim_func *sch_move_block(sch_call *c, int bi, int li, int pos,
                                    const tir_stmt *moved);

tir_status sch_check_target_loop(sch_call *c, uint32_t brv, uint32_t lrv, int bi, int li,
                                 int *scope) {
    const tir_schedule *s = c->sch;
    const tir_block *b = sch_sref_block(s, bi);
    const tir_for *loop = sch_sref_for(s, li);
    int sc = sch_scope_of(s, bi);
    if (sc < 0 || sch_scope_of(s, li) != sc) {
        const void *marks[2] = {b, loop};
        return sch_fail_marks(c, TIR_ERR_SCHED_DIFFERENT_SCOPE, lrv, 2, marks,
                              "loop %s and block \"%s\" are not in the same scope (the same "
                              "enclosing block)",
                              loop->var->name, b->name);
    }
    if (sch_is_ancestor(s, li, bi)) {
        const void *marks[2] = {loop, b};
        return sch_fail_marks(c, TIR_ERR_SCHED_LOOP_IS_ANCESTOR, brv, 2, marks,
                              "loop %s already encloses block \"%s\"", loop->var->name,
                              b->name);
    }
    if (sch_classify_block(b) == SCH_BLOCK_OTHER)
        return sch_fail(c, TIR_ERR_SCHED_BLOCK_NOT_COMPLETE, brv, b,
                        "block \"%s\" is neither complete nor a reduction, so recomputing "
                        "part of it could change what it writes",
                        b->name);
    *scope = sc;
    return TIR_OK;
}

const tir_prim_func *sch_move_block(sch_call *c, int bi, int li, int pos,
                                    const tir_stmt *moved) {
    const tir_schedule *s = c->sch;
    const tir_for *loop = sch_sref_for(s, li);
    int nch = sch_num_children(loop->body);
    const tir_stmt *olds[1] = {sch_sref_stmt(s, sch_removable_root(s, bi))};
    const tir_stmt *news[1] = {NULL};
    bool after = pos >= nch;
    const tir_stmt *anchor = sch_child_at(loop->body, after ? nch - 1 : pos);
    sch_edit_spec e = {.ctx = c->ctx, .nrepl = 1, .olds = olds, .news = news, .nins = 1,
                       .anchors = &anchor, .inserts = &moved, .after = &after};
    return sch_edit(c, &e);
}

/* Precondition 10 for one read `rd` of buf by consumer sref ci: what it
 * reads during one iteration of loop sref li stays inside the domain of
 * the producer b (dim_of: b's iterator per dimension), where the
 * regenerated producer writes all of the relaxed region (outside it, the
 * bounds predicate masks the writes).  What it reads is inside its
 * relaxed region, its access over its own iterators' domains (a block runs
 * only instances inside its domain) and the buffer's shape (a declared
 * region may reach outside where a select guards the load, as padding
 * does), so any of the three bounds will do. */
static bool read_inside(const tir_schedule *s, int sc, int li, int ci,
                        const tir_buffer_region *rd, const tir_block *b, const int *dim_of) {
    tir_ctx *ctx = s->ctx;
    const tir_block *o = sch_sref_block(s, ci);
    const tir_buffer *buf = rd->buffer;
    sch_bound *rel = IR_NEWN(ctx, sch_bound, buf->ndim + 1);
    tir_analyzer *a = tir_analyzer_create(ctx);
    sch_bind_ancestors(s, a, s->srefs[ci].parent);
    bool ok = sch_relax_access(s, a, ci, li, sc, rd, buf->scope, rel);
    const tir_var **iv = IR_NEWN(ctx, const tir_var *, o->niters + 1);
    for (int k = 0; k < o->niters; k++) {
        iv[k] = o->iters[k].var;
        tir_analyzer_bind(a, iv[k], o->iters[k].dom.min, o->iters[k].dom.extent);
    }
    for (int k = 0; k < b->niters && ok; k++) {
        int d = dim_of[k];
        if (d < 0) continue;
        const tir_expr *mn = rd->ranges[d].min;
        const tir_expr *last = tir_sub(ctx, tir_add(ctx, mn, rd->ranges[d].extent),
                                       tir_int(ctx, mn->dtype, 1));
        tir_range lo, hi;
        const tir_range *pd = &b->iters[k].dom;
        const tir_expr *pend = tir_add(ctx, pd->min, pd->extent);
        ok = tir_analyzer_relax(a, mn, o->niters, iv, &lo) &&
             tir_analyzer_relax(a, last, o->niters, iv, &hi);
        ok = ok && (sch_prove_le(ctx, a, pd->min, rel[d].lo) ||
                    sch_prove_le(ctx, a, pd->min, lo.min) ||
                    sch_prove_le(ctx, a, pd->min, tir_int(ctx, pd->min->dtype, 0)));
        ok = ok && (sch_prove_le(ctx, a, rel[d].hi, pend) ||
                    sch_prove_le(ctx, a, tir_add(ctx, hi.min, hi.extent), pend) ||
                    sch_prove_le(ctx, a, buf->shape[d], pend));
    }
    tir_analyzer_destroy(a);
    return ok;
}

/* The innermost loop from li up (li included, inside scope sref sc) that
 * also encloses sref wi, or -1. */
static int common_loop(const tir_schedule *s, int sc, int li, int wi) {
    for (int p = li; p >= 0 && p != sc; p = s->srefs[p].parent)
        if (sch_sref_for(s, p) && sch_is_ancestor(s, p, wi)) return p;
    return -1;
}

/* The extremes of what b, moved under loop sref li over rng, reads of
 * dimension d of rd during one iteration of loop sref top: b's iterators
 * run over rng inside their domains, then li and the loops between it and
 * top (top excluded) over theirs.  The analyzer knows the loops above li. */
static bool moved_read(const tir_schedule *s, tir_analyzer *a, int li, int top,
                       const tir_block *b, const sch_bound *rng, const tir_range *rd,
                       const tir_expr **lo, const tir_expr **end) {
    tir_ctx *ctx = s->ctx;
    const tir_var **iv = IR_NEWN(ctx, const tir_var *, b->niters + 1);
    for (int k = 0; k < b->niters; k++) {
        const tir_range *dom = &b->iters[k].dom;
        const tir_expr *mn = dom->min, *hi = tir_add(ctx, dom->min, dom->extent);
        if (rng[k].lo) {
            mn = tir_max(ctx, mn, rng[k].lo);
            hi = tir_min(ctx, hi, rng[k].hi);
        }
        iv[k] = b->iters[k].var;
        tir_analyzer_bind(a, iv[k], tir_analyzer_simplify(a, mn),
                          tir_analyzer_simplify(a, tir_sub(ctx, hi, mn)));
    }
    const tir_var **lv = IR_NEWN(ctx, const tir_var *, s->nsrefs + 1);
    int nl = 0;
    for (int p = li; p != top; p = s->srefs[p].parent)
        if (sch_sref_for(s, p)) lv[nl++] = sch_sref_for(s, p)->var;
    const tir_expr *one = tir_int(ctx, rd->min->dtype, 1);
    const tir_expr *last = tir_sub(ctx, tir_add(ctx, rd->min, rd->extent), one);
    tir_range l1, h1, l2, h2;
    if (!tir_analyzer_relax(a, rd->min, b->niters, iv, &l1) ||
        !tir_analyzer_relax(a, last, b->niters, iv, &h1) ||
        !tir_analyzer_relax(a, l1.min, nl, lv, &l2) ||
        !tir_analyzer_relax(a, tir_sub(ctx, tir_add(ctx, h1.min, h1.extent), one), nl, lv, &h2))
        return false;
    *lo = l2.min;
    *end = tir_add(ctx, h2.min, h2.extent);
    return true;
}

/* Precondition 11 for writer sref wi of what b reads at rd, b moved under
 * loop sref li over rng: the writer runs in a loop nest before li's
 * (no common loop), or during one iteration of the innermost loop it
 * shares with li it writes, before b, final values of all that b reads
 * there.  Sequentially, a thread-bound loop is a loop like any other: b's
 * region relaxed over one holds what other threads' writers produce only
 * in later iterations. */
static bool written_before(const tir_schedule *s, int sc, int li, int wi, const tir_block *b,
                           const sch_bound *rng, const tir_buffer_region *rd) {
    tir_ctx *ctx = s->ctx;
    int top = common_loop(s, sc, li, wi);
    if (top < 0) return true;
    if (top != li && sch_child_holding(s, top, wi) >= sch_child_holding(s, top, li))
        return false;
    const tir_block *o = sch_sref_block(s, wi);
    int *pdim = IR_NEWN(ctx, int, o->niters + 1);
    sch_bound *box = IR_NEWN(ctx, sch_bound, o->niters + 1);
    tir_analyzer *a = tir_analyzer_create(ctx);
    sch_bind_ancestors(s, a, li);
    bool ok = sch_writer_box(s, a, wi, top, rd->buffer, pdim, box);
    for (int k = 0; k < o->niters && ok; k++) {
        if (pdim[k] < 0) continue;
        const tir_range *pd = &o->iters[k].dom;
        const tir_expr *lo, *end;
        ok = moved_read(s, a, li, top, b, rng, &rd->ranges[pdim[k]], &lo, &end) &&
             sch_prove_le(ctx, a, box[k].lo, lo) && sch_prove_le(ctx, a, pd->min, lo) &&
             sch_prove_le(ctx, a, end, box[k].hi) &&
             sch_prove_le(ctx, a, end, tir_add(ctx, pd->min, pd->extent));
    }
    tir_analyzer_destroy(a);
    return ok;
}

/* The first writer sref of what b reads (b moved under li over rng) that
 * written_before cannot prove, or -1; *bad_read: which read. */
static int unready_writer(const tir_schedule *s, int sc, int li, int bi, const int *all, int na,
                          const sch_bound *rng, int *bad_read) {
    const tir_block *b = sch_sref_block(s, bi);
    for (int r = 0; r < b->nreads; r++)
        for (int k = 0; k < na; k++) {
            const tir_block *o = sch_sref_block(s, all[k]);
            if (all[k] == bi || !sch_region_has(o->nwrites, o->writes, b->reads[r].buffer))
                continue;
            if (!written_before(s, sc, li, all[k], b, rng, &b->reads[r])) {
                *bad_read = r;
                return all[k];
            }
        }
    return -1;
}

/* Precondition 12: in function f, the loops from block `name`'s scope down
 * to it run each of its instances once (sch_runs_once), proved on a
 * schedule state of f. */
static bool runs_once_in(tir_ctx *ctx, const tir_prim_func *f, const char *name) {
    tir_schedule *t = NULL;
    if (tir_sched_create(ctx, f, &t) != TIR_OK) return false;
    int bi = sch_find_block(t, name);
    bool once = false;
    if (bi >= 0) {
        tir_analyzer *a = tir_analyzer_create(ctx);
        once = sch_runs_once(t, a, bi, sch_scope_of(t, bi));
        tir_analyzer_destroy(a);
    }
    tir_sched_destroy(t);
    return once;
}

tir_status sch_prim_compute_at(sch_call *c) {
    const tir_schedule *s = c->sch;
    tir_ctx *ctx = c->ctx;
    uint32_t brv = c->args[0].rv, lrv = c->args[1].rv;
    bool preserve = c->args[2].i != 0;
    int bi = sch_block_sref(c, brv), li = sch_loop_sref(c, lrv);
    const tir_block *b = sch_sref_block(s, bi);
    const tir_for *loop = sch_sref_for(s, li);
    int sc;
    TIR_TRY(sch_check_target_loop(c, brv, lrv, bi, li, &sc));
    /* 16: the new loops run each iterator over its domain or a part of it */
    TIR_TRY(sch_check_dom_local(c, brv, bi));
    /* 4 */
    int *dim_of = IR_NEWN(ctx, int, b->niters);
    if (b->nwrites != 1 || sch_trivial_dim(b, &b->writes[0], dim_of) >= 0)
        return sch_fail(c, TIR_ERR_SCHED_NOT_TRIVIAL_ACCESS, brv, b,
                        "block \"%s\" must write one buffer indexed by distinct spatial "
                        "iterators (one element each), so that the region its consumers "
                        "need gives the iterators' ranges",
                        b->name);
    const tir_buffer *buf = b->writes[0].buffer;
    /* 5-6: consumers, all under the loop; 4b: the only writer. */
    int *all;
    int na = sch_scope_blocks(s, sc, &all), nunder = 0;
    for (int k = 0; k < na; k++) {
        const tir_block *o = sch_sref_block(s, all[k]);
        if (all[k] == bi) continue;
        if (sch_region_has(o->nwrites, o->writes, buf)) {
            const void *marks[2] = {b, o};
            return sch_fail_marks(c, TIR_ERR_SCHED_MULTIPLE_WRITERS, brv, 2, marks,
                                  "%s is also written by block \"%s\"", buf->name, o->name);
        }
    }
    for (int k = 0; k < na; k++) {
        const tir_block *o = sch_sref_block(s, all[k]);
        if (all[k] == bi || !sch_region_has(o->nreads, o->reads, buf)) continue;
        if (!sch_is_ancestor(s, li, all[k])) {
            const void *marks[2] = {loop, o};
            return sch_fail_marks(c, TIR_ERR_SCHED_CONSUMER_OUTSIDE, brv, 2, marks,
                                  "consumer \"%s\" of \"%s\" lies outside loop %s, and would "
                                  "miss what is no longer computed",
                                  o->name, b->name, loop->var->name);
        }
        nunder++;
    }
    if (nunder == 0)
        return sch_fail(c, TIR_ERR_SCHED_NO_CONSUMER, brv, b,
                        "block \"%s\" has no consumer in its scope (under loop %s), so there "
                        "is no region to compute there",
                        b->name, loop->var->name);
    /* 7: position before the first child holding a consumer, after every
       child holding a producer. */
    int nch = sch_num_children(loop->body), pos = nch, last_prod = -1;
    for (int k = 0; k < na; k++) {
        const tir_block *o = sch_sref_block(s, all[k]);
        if (!sch_is_ancestor(s, li, all[k])) continue;
        int ch = sch_child_holding(s, li, all[k]);
        if (sch_region_has(o->nreads, o->reads, buf) && ch < pos) pos = ch;
        for (int r = 0; r < b->nreads; r++)
            if (sch_region_has(o->nwrites, o->writes, b->reads[r].buffer) && ch > last_prod)
                last_prod = ch;
    }
    /* Writers of its inputs must already precede it (srefs are in program
       order): moving it past one would change what it reads, whether the
       writer lies between its place and the loop or under the loop (where
       the block would be placed after it). */
    for (int k = 0; k < na; k++) {
        const tir_block *o = sch_sref_block(s, all[k]);
        if (all[k] <= bi) continue;
        for (int r = 0; r < b->nreads; r++)
            if (sch_region_has(o->nwrites, o->writes, b->reads[r].buffer)) {
                const void *marks[2] = {b, o};
                return sch_fail_marks(c, TIR_ERR_SCHED_NOT_STAGE_PIPELINE, brv, 2, marks,
                                      "block \"%s\" writes %s, which \"%s\" reads, %s "
                                      "loop %s",
                                      o->name, b->reads[r].buffer->name, b->name,
                                      sch_is_ancestor(s, li, all[k]) ? "after it, under"
                                                                     : "between its place and",
                                      loop->var->name);
            }
    }
    if (last_prod >= pos)
        return sch_fail(c, TIR_ERR_SCHED_NOT_STAGE_PIPELINE, brv, loop,
                        "under loop %s a producer of \"%s\" comes after its first consumer, "
                        "so there is no place for it",
                        loop->var->name, b->name);
    /* 8: the region. */
    tir_analyzer *a = tir_analyzer_create(ctx);
    sch_bound *acc = IR_NEWN(ctx, sch_bound, buf->ndim);
    bool ok = true;
    for (int k = 0; k < na && ok; k++) {
        const tir_block *o = sch_sref_block(s, all[k]);
        if (all[k] == bi || !sch_is_ancestor(s, li, all[k])) continue;
        sch_bind_ancestors(s, a, s->srefs[all[k]].parent);
        for (int r = 0; r < o->nreads && ok; r++)
            if (o->reads[r].buffer == buf)
                ok = sch_relax_access(s, a, all[k], li, sc, &o->reads[r], buf->scope, acc);
    }
    tir_analyzer_destroy(a);
    if (!ok)
        return sch_fail(c, TIR_ERR_SCHED_REGION_UNBOUNDED, brv, loop,
                        "the region of %s that the consumers read under loop %s cannot be "
                        "bounded",
                        buf->name, loop->var->name);
    /* 10: the caller reads all of a parameter, and each consumer reads
       only what the regenerated block writes. */
    if (sch_is_param_buffer(s->func, buf))
        return sch_fail(c, TIR_ERR_SCHED_REGION_NOT_COVERED, brv, b,
                        "block \"%s\" writes %s, a function parameter: the caller reads all "
                        "of it, but under loop %s only what the consumers read would be "
                        "written",
                        b->name, buf->name, loop->var->name);
    for (int k = 0; k < na; k++) {
        const tir_block *o = sch_sref_block(s, all[k]);
        if (all[k] == bi || !sch_is_ancestor(s, li, all[k])) continue;
        for (int r = 0; r < o->nreads; r++)
            if (o->reads[r].buffer == buf &&
                !read_inside(s, sc, li, all[k], &o->reads[r], b, dim_of)) {
                const void *marks[2] = {loop, o};
                return sch_fail_marks(c, TIR_ERR_SCHED_REGION_NOT_COVERED, brv, 2, marks,
                                      "cannot prove that consumer \"%s\" reads, under loop "
                                      "%s, only elements of %s inside the domain of block "
                                      "\"%s\", which is all its copy there writes",
                                      o->name, loop->var->name, buf->name, b->name);
            }
    }
    sch_bound *rng = IR_NEWN(ctx, sch_bound, b->niters);
    for (int k = 0; k < b->niters; k++)
        if (dim_of[k] >= 0) rng[k] = acc[dim_of[k]];
    /* 11 */
    int bad_read = 0, bad = unready_writer(s, sc, li, bi, all, na, rng, &bad_read);
    if (bad >= 0) {
        const tir_block *o = sch_sref_block(s, bad);
        const void *marks[2] = {b, o};
        return sch_fail_marks(c, TIR_ERR_SCHED_REGION_NOT_COVERED, brv, 2, marks,
                              "cannot prove that producer \"%s\" has written all of %s that "
                              "block \"%s\" would read under loop %s: they share a loop, "
                              "and during one iteration of the innermost one the producer "
                              "must write (as a box, in full) every element read there",
                              o->name, b->reads[bad_read].buffer->name, b->name,
                              loop->var->name);
    }
    /* 14 */
    TIR_TRY(sch_check_reduce_order(c, brv, bi));
    const tir_stmt *moved;
    TIR_TRY(sch_regen_moved(c, brv, li, bi, rng, preserve, &moved));
    const tir_prim_func *out = sch_move_block(c, bi, li, pos, moved);
    /* 12 */
    if (b->init && !runs_once_in(ctx, out, b->name))
        return sch_fail(c, TIR_ERR_SCHED_REPEATED_INSTANCES, brv, b,
                        "under loop %s the reduction \"%s\" would run some of its "
                        "instances more than once (its region is relaxed over loops it "
                        "does not depend on, or overlaps between iterations); a later "
                        "reorder or decompose_reduction would then accumulate twice",
                        loop->var->name, b->name);
    /* 13 */
    if (!sch_reduce_pred_bounds_only(s, bi))
        return sch_fail(c, TIR_ERR_SCHED_PREDICATED_PRODUCER, brv, b,
                        "the predicate of block \"%s\" masks reduction steps inside its "
                        "domain, which moving it would drop",
                        b->name);
    c->func = out;
    return TIR_OK;
}

tir_status tir_sched_compute_at(tir_schedule *s, tir_block_rv block, tir_loop_rv loop,
                                bool preserve_unit_loops) {
    if (!s) return sch_bad_arg(s, "compute_at", "schedule is NULL");
    sch_arg args[3] = {SCH_RV(block), SCH_RV(loop), {.i = preserve_unit_loops ? 1 : 0}};
    return sch_run(s, SCH_INST_compute_at, args, NULL, NULL);
}
