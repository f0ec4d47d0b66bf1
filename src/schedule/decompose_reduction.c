/* decompose_reduction.c: move a reduction's init into its own block
 * before a loop (TVM's DecomposeReduction).
 *
 * The init block gets a copy of the loops, from the given loop down, that
 * feed the reduction's spatial iterators, with fresh loop and iterator
 * variables (a variable is defined once in a function).  Predicate
 * conjuncts go with it (copying the loops they use), except those over
 * nothing but reduction-only loops below the decomposition point: they
 * restrict which reduction steps run, not which elements exist.  A copied loop that also
 * feeds a reduce iterator (fused spatial and reduce loops) just repeats
 * the same init store, which is harmless.  Repeated update instances are
 * not: the loops from the given one down must run each instance once.
 * Where the reduce domain may be empty (a symbolic K), the init block is
 * predicated on it not being so: the reduction then runs no instance and
 * no init (precondition 9).
 */
#include <string.h>

#include "sched_internal.h"

/* Whether a predicate conjunct guards the init too: unless every variable
 * in it is a path loop the init does not copy (a guard of the reduction's
 * own split loops), it may tie a loop above to the copied ones (a guard
 * j_1_0 * 5 + j_1_1 < 1 across the decomposition loop) and must go with
 * the init, or the init would run again where no update follows. */
typedef struct {
    tir_visitor v;
    int np;
    const tir_var *const *pv;
    const bool *rep;
    bool needed, any_var;
} conj_state;

static bool conj_pre(tir_visitor *v, const tir_node *n) {
    conj_state *c = (conj_state *)v;
    const tir_var *x = tir_as_tir_var(n);
    if (x) {
        bool dropped = false;
        for (int k = 0; k < c->np; k++)
            if (c->pv[k] == x) dropped = !c->rep[k];
        if (!dropped) c->needed = true;
        c->any_var = true;
    }
    return !c->needed;
}

/* A conjunct with no variable at all (a predicate the simplifier folded
 * to False) masks the init as much as the update. */
static bool needs_init(const tir_expr *e, int np, const tir_var *const *pv, const bool *rep) {
    conj_state c = {{conj_pre, NULL, NULL}, np, pv, rep, false, false};
    tir_visit(&c.v, e);
    return c.needed || !c.any_var;
}

/* What the precondition checks find, for the rewrite. */
typedef struct {
    const tir_block *b;
    const tir_block_realize *r;
    const tir_for *loop;
    int li;              /* loop's sref */
    int np;              /* loops from `loop` down to the block */
    const tir_for **path; /* [np], outermost first */
    const tir_var **pv;   /* [np], their variables */
    const tir_expr *nonempty; /* the reduce domain is not empty; NULL: always */
    ir_vec conj;              /* the predicate's conjuncts, at the first step (10) */
} dr_plan;

/* The loops from li down to block sref bi, outermost first. */
static void loop_path(tir_ctx *ctx, const tir_schedule *s, int li, int bi, dr_plan *P) {
    int np = 1;
    for (int p = s->srefs[bi].parent; p != li; p = s->srefs[p].parent) np++;
    P->np = np;
    P->path = IR_NEWN(ctx, const tir_for *, np);
    P->pv = IR_NEWN(ctx, const tir_var *, np);
    int k = np;
    for (int p = s->srefs[bi].parent;; p = s->srefs[p].parent) {
        P->path[--k] = sch_sref_for(s, p);
        if (p == li) break;
    }
    for (k = 0; k < np; k++) P->pv[k] = P->path[k]->var;
}

/* Whether loop variable v feeds a reduce (red) or a spatial iterator. */
static bool feeds(const dr_plan *P, const tir_var *v, bool red) {
    for (int k = 0; k < P->r->nvalues; k++)
        if ((P->b->iters[k].kind == TIR_ITER_REDUCE) == red && tir_uses_var(P->r->values[k], v))
            return true;
    return false;
}

/* 10: the init ran with the reduction's first step (every reduce
 * iterator at its min) and only where the predicate held there; the init
 * block runs before every step, so each conjunct using a loop that feeds
 * a reduce iterator must say what it said at that step.  A bound of the
 * bindings holds there (the init keeps or drops it as before); another
 * (T.where(k % 2 == 1), which skips the init; split-K's
 * k_0 * 96 + k_1 < 333) is replaced by its value with the loops feeding
 * only reduce iterators at their mins, where those mins are that step
 * (the reduce bindings are then their domain mins) and no other loop
 * feeding a reduce iterator (a fused spatial and reduce loop) is left in
 * it.  Fills P->conj. */
static tir_status first_step(sch_call *c, dr_plan *P, int bi) {
    tir_ctx *ctx = c->ctx;
    const tir_var **rv = IR_NEWN(ctx, const tir_var *, P->np + 1);
    const tir_expr **rmin = IR_NEWN(ctx, const tir_expr *, P->np + 1);
    int nr = 0;
    for (int k = 0; k < P->np; k++)
        if (feeds(P, P->pv[k], true) && !feeds(P, P->pv[k], false))
            rv[nr] = P->pv[k], rmin[nr++] = P->path[k]->min;
    tir_analyzer *a = tir_analyzer_create(ctx);
    sch_bind_ancestors(c->sch, a, c->sch->srefs[bi].parent);
    bool at_first = true;
    for (int i = 0; i < P->r->nvalues && at_first; i++) {
        const tir_iter_var *it = &P->b->iters[i];
        if (it->kind != TIR_ITER_REDUCE) continue;
        const tir_expr *v0 = (const tir_expr *)tir_substitute(ctx, P->r->values[i], nr, rv, rmin);
        at_first = tir_analyzer_can_prove(a, tir_eq(ctx, v0, it->dom.min));
    }
    sch_conjuncts(P->r->predicate, &P->conj);
    tir_status st = TIR_OK;
    for (int j = 0; j < P->conj.n && st == TIR_OK; j++) {
        const tir_expr *e = P->conj.items[j];
        bool red = false, other_red = false;
        for (int k = 0; k < P->np; k++) {
            if (!tir_uses_var(e, P->pv[k]) || !feeds(P, P->pv[k], true)) continue;
            red = true;
            other_red |= feeds(P, P->pv[k], false);
        }
        if (!red || sch_pred_bounds_only(ctx, a, P->r, e)) continue;
        if (at_first && !other_red) {
            e = (const tir_expr *)tir_substitute(ctx, e, nr, rv, rmin);
            P->conj.items[j] = tir_analyzer_simplify(a, e);
            continue;
        }
        st = sch_fail(c, TIR_ERR_SCHED_PREDICATED_PRODUCER, c->args[0].rv, P->b,
                      "block \"%s\" runs under %s, which decides per reduction step whether "
                      "it runs, and the init of its first step cannot be told apart from the "
                      "other steps here; the init moved out would run where it did not",
                      P->b->name, tir_print(ctx, e));
    }
    tir_analyzer_destroy(a);
    if (st != TIR_OK) ir_vec_free(&P->conj);
    return st;
}

/* Preconditions 1 to 10 (see schedule.h); fills P. */
static tir_status dr_check(sch_call *c, dr_plan *P) {
    const tir_schedule *s = c->sch;
    uint32_t brv = c->args[0].rv, lrv = c->args[1].rv;
    int bi = sch_block_sref(c, brv), li = sch_loop_sref(c, lrv);
    const tir_block *b = P->b = sch_sref_block(s, bi);
    const tir_block_realize *r = P->r = s->srefs[bi].realize;
    const tir_for *loop = P->loop = sch_sref_for(s, li);
    P->li = li;
    if (!b->init || sch_classify_block(b) != SCH_BLOCK_REDUCTION)
        return sch_fail(c, TIR_ERR_SCHED_NOT_REDUCTION, brv, b,
                        "block \"%s\" is not a reduction with an init (it needs an init, a "
                        "reduce iterator, and reduce iterators must not index what it writes)",
                        b->name);
    if (!sch_is_ancestor(s, li, bi) || sch_scope_of(s, li) != sch_scope_of(s, bi)) {
        const void *marks[2] = {loop, b};
        return sch_fail_marks(c, TIR_ERR_SCHED_NOT_ANCESTOR, lrv, 2, marks,
                              "loop %s does not enclose block \"%s\" in the same scope",
                              loop->var->name, b->name);
    }
    loop_path(c->ctx, s, li, bi, P);
    /* 3: no reduction loop above `loop`. */
    for (int p = s->srefs[li].parent; p >= 0 && sch_sref_for(s, p); p = s->srefs[p].parent) {
        const tir_for *f = sch_sref_for(s, p);
        for (int k = 0; k < r->nvalues; k++)
            if (b->iters[k].kind == TIR_ITER_REDUCE && tir_uses_var(r->values[k], f->var))
                return sch_fail(c, TIR_ERR_SCHED_LOOP_HEIGHT, lrv, f,
                                "loop %s feeds reduce iterator %s of block \"%s\" but lies "
                                "above %s; the init would run again on each of its iterations",
                                f->var->name, b->iters[k].var->name, b->name, loop->var->name);
    }
    TIR_TRY(sch_check_blocks_under(c, lrv, &loop->base, P->np, P->pv));
    /* 7: with the init out of the block, an instance run twice would
       accumulate twice (compute_at recomputes a block over overlapping
       regions in successive iterations of the loops above it). */
    tir_analyzer *a = tir_analyzer_create(c->ctx);
    sch_bind_ancestors(s, a, s->srefs[li].parent);
    bool once = sch_runs_once(s, a, bi, s->srefs[li].parent);
    tir_analyzer_destroy(a);
    if (!once)
        return sch_fail(c, TIR_ERR_SCHED_REPEATED_INSTANCES, lrv, loop,
                        "cannot prove that loop %s and the loops inside it run each "
                        "instance of block \"%s\" once (each loop of extent above 1 "
                        "must feed one iterator, with the dense strides split and fuse "
                        "make): a repeated instance would accumulate twice without its "
                        "init",
                        loop->var->name, b->name);
    /* 8: the init now runs before the whole loop, so the other blocks
       under it must not see the early init: none writes what the block
       writes, none reads it before the block, and none reads it after the
       block where its old values mean something (a parameter, or a buffer
       another block writes), since elements of later iterations now hold
       the init. */
    int sc = sch_scope_of(s, bi), *all;
    int na = sch_scope_blocks(s, sc, &all);
    for (int w = 0; w < b->nwrites; w++) {
        const tir_buffer *buf = b->writes[w].buffer;
        bool old_values = sch_is_param_buffer(s->func, buf);
        for (int k = 0; k < na && !old_values; k++) {
            const tir_block *o = sch_sref_block(s, all[k]);
            old_values = all[k] != bi && sch_region_has(o->nwrites, o->writes, buf);
        }
        for (int k = 0; k < na; k++) {
            const tir_block *o = sch_sref_block(s, all[k]);
            if (all[k] == bi || !sch_is_ancestor(s, li, all[k])) continue;
            bool writes = sch_region_has(o->nwrites, o->writes, buf);
            bool reads = sch_region_has(o->nreads, o->reads, buf);
            if (writes || (reads && (all[k] < bi || old_values))) {
                const void *marks[2] = {b, o};
                return sch_fail_marks(c, TIR_ERR_SCHED_NOT_STAGE_PIPELINE, lrv, 2, marks,
                                      "block \"%s\" under loop %s %s %s%s, so the init of "
                                      "\"%s\" cannot run before the loop",
                                      o->name, loop->var->name, writes ? "writes" : "reads",
                                      buf->name,
                                      writes ? ""
                                      : all[k] < bi ? " before the reduction"
                                                    : ", whose old values it may read",
                                      b->name);
            }
        }
    }
    /* 9: over an empty reduce domain (a symbolic K = 0) the block runs no
       instance and leaves what it writes as it was, so the init block runs
       only where the domain is not empty; it must be able to say where. */
    bool other;
    P->nonempty = sch_reduce_nonempty(s, bi, &other);
    if (other)
        return sch_fail(c, TIR_ERR_SCHED_NOT_REDUCTION, brv, b,
                        "block \"%s\" may run no instance (its reduce domain, %s, may be "
                        "empty and names more than the function's scalar parameters), where "
                        "the init moved out would still run",
                        b->name, tir_print(c->ctx, P->nonempty));
    return first_step(c, P, bi);
}

static bool uses_any(const void *e, int n, const tir_var *const *vars) {
    for (int i = 0; i < n; i++)
        if (tir_uses_var(e, vars[i])) return true;
    return false;
}

/* e is affine in vars: sums and differences of terms, a term that uses
 * them being one of them, or one times an integer constant. */
static bool affine_in(const tir_expr *e, int n, const tir_var *const *vars) {
    if (!uses_any(e, n, vars)) return true;
    const tir_binop *b = (const tir_binop *)e;
    switch ((tir_kind)e->kind) {
    case TIR_KIND_VAR: return true;
    case TIR_KIND_ADD:
    case TIR_KIND_SUB: return affine_in(b->a, n, vars) && affine_in(b->b, n, vars);
    case TIR_KIND_MUL:
        return (b->a->kind == TIR_KIND_INT_IMM && affine_in(b->b, n, vars)) ||
               (b->b->kind == TIR_KIND_INT_IMM && affine_in(b->a, n, vars));
    default: return false;
    }
}

/* Conjunct j with the path loops the init does not copy projected out,
 * or NULL.  The init must run when the update runs for some iteration of
 * those loops: for `a < b` (or <=) with b free of them and a affine in
 * them, over constant ranges, that is `min(a) < b` exactly (the minimum
 * of an affine function over a box), provided no other conjunct and no
 * loop range uses them (their values are then independent of the rest).
 * So a ragged reduction split under a loop the init needs (split-K's
 * k_0 * 96 + k_1 < 333, k_0 spatial after rfactor) does not copy the
 * reduction loops into the init nest. */
static const tir_expr *project(tir_ctx *ctx, const dr_plan *P, const bool *rep,
                               const ir_vec *conj, int j) {
    const tir_expr *e = conj->items[j];
    if (e->kind != TIR_KIND_LT && e->kind != TIR_KIND_LE) return NULL;
    const tir_binop *cmp = (const tir_binop *)e;
    const tir_var **xs = IR_NEWN(ctx, const tir_var *, P->np);
    int nx = 0;
    tir_analyzer *a = tir_analyzer_create(ctx);
    bool ok = true;
    for (int k = 0; k < P->np && ok; k++) {
        if (rep[k] || !tir_uses_var(e, P->pv[k])) continue;
        int64_t min, ext;
        ok = tir_expr_const_int(P->path[k]->min, &min) &&
             tir_expr_const_int(P->path[k]->extent, &ext) && ext >= 1;
        for (int i = 0; i < conj->n && ok; i++) ok = i == j || !tir_uses_var(conj->items[i], P->pv[k]);
        for (int i = 0; i < P->np && ok; i++)
            ok = !tir_uses_var(P->path[i]->min, P->pv[k]) && !tir_uses_var(P->path[i]->extent, P->pv[k]);
        if (ok) tir_analyzer_bind_const(a, P->pv[k], min, ext);
        xs[nx++] = P->pv[k];
    }
    tir_range r;
    ok = ok && nx > 0 && !uses_any(cmp->b, nx, xs) && affine_in(cmp->a, nx, xs) &&
         tir_analyzer_relax(a, cmp->a, nx, xs, &r) && !uses_any(r.min, nx, xs);
    tir_analyzer_destroy(a);
    return ok ? tir_binop_new(ctx, (tir_kind)e->kind, r.min, cmp->b) : NULL;
}

/* Which path loops the init needs: those of spatial bindings, closed over
 * predicate conjuncts (projected where project() can) and loop ranges that
 * mention them.  conj's projected conjuncts are replaced. */
static bool *init_loops(tir_ctx *ctx, const dr_plan *P, ir_vec *conj) {
    int np = P->np;
    const tir_var **pv = P->pv;
    bool *rep = IR_NEWN(ctx, bool, np);
    for (int k = 0; k < np; k++)
        for (int i = 0; i < P->r->nvalues; i++)
            if (P->b->iters[i].kind != TIR_ITER_REDUCE && tir_uses_var(P->r->values[i], pv[k]))
                rep[k] = true;
    for (bool changed = true; changed;) {
        changed = false;
        for (int j = 0; j < conj->n; j++) {
            if (!needs_init(conj->items[j], np, pv, rep)) continue;
            const tir_expr *pj = project(ctx, P, rep, conj, j);
            if (pj) conj->items[j] = pj;
            for (int k = 0; k < np; k++)
                if (!rep[k] && tir_uses_var(conj->items[j], pv[k])) rep[k] = changed = true;
        }
        for (int k = 0; k < np; k++) {
            if (!rep[k]) continue;
            for (int j = 0; j < np; j++)
                if (!rep[j] && (tir_uses_var(P->path[k]->min, pv[j]) ||
                                tir_uses_var(P->path[k]->extent, pv[j])))
                    rep[j] = changed = true;
        }
    }
    return rep;
}

/* A variable map old -> new, the loops' entries first. */
typedef struct {
    const tir_var **ov;
    const tir_expr **nv;
    int n, nloop;
} dr_map;

/* The init block (spatial iterators only, fresh variables) under the
 * loops it needs, with fresh loop variables; extends map by its iterators. */
static const tir_stmt *init_block(sch_call *c, const dr_plan *P, dr_map *mp,
                                  const tir_expr *pred, const char **iname) {
    tir_ctx *ctx = c->ctx;
    const tir_block *b = P->b;
    tir_iter_var *iters = IR_NEWN(ctx, tir_iter_var, b->niters);
    const tir_expr **vals = IR_NEWN(ctx, const tir_expr *, b->niters);
    int ni = 0;
    for (int i = 0; i < b->niters; i++) {
        if (b->iters[i].kind == TIR_ITER_REDUCE) continue;
        const tir_var *v = tir_var_new(ctx, b->iters[i].var->name, b->iters[i].var->base.dtype);
        iters[ni] = (tir_iter_var){v, b->iters[i].dom, TIR_ITER_SPATIAL};
        vals[ni++] = (const tir_expr *)tir_substitute(ctx, P->r->values[i], mp->nloop, mp->ov,
                                                      mp->nv);
        mp->ov[mp->n] = b->iters[i].var;
        mp->nv[mp->n++] = &v->base;
    }
    const tir_var **iov = mp->ov + mp->nloop;
    const tir_expr **inv = mp->nv + mp->nloop;
    int nimap = mp->n - mp->nloop;
    const tir_stmt *ibody = (const tir_stmt *)tir_substitute(ctx, b->init, nimap, iov, inv);
    tir_buffer_region *writes = IR_NEWN(ctx, tir_buffer_region, b->nwrites);
    for (int w = 0; w < b->nwrites; w++)
        writes[w] = sch_subst_region(ctx, &b->writes[w], nimap, iov, inv);
    int nreads;
    tir_buffer_region *reads = sch_load_regions(ctx, ibody, &nreads);
    char base[512];
    snprintf(base, sizeof base, "%s_init", b->name);
    *iname = sch_unique_block_name(c->sch, base);
    tir_block_desc d = {.name = *iname, .niters = ni, .iters = iters, .nreads = nreads,
                        .reads = reads, .nwrites = b->nwrites, .writes = writes,
                        .body = ibody};
    return tir_block_realize_new(ctx, ni, vals, pred, tir_block_new(ctx, &d));
}

/* The init nest: fresh copies of the loops it needs around the init block,
 * predicated by the conjuncts that concern only those loops. */
static const tir_stmt *init_nest(sch_call *c, const dr_plan *P, const char **iname) {
    tir_ctx *ctx = c->ctx;
    int np = P->np, nit = P->b->niters;
    ir_vec conj = P->conj;
    bool *rep = init_loops(ctx, P, &conj);
    dr_map mp = {IR_NEWN(ctx, const tir_var *, np + nit), IR_NEWN(ctx, const tir_expr *, np + nit),
                 0, 0};
    const tir_var **newloop = IR_NEWN(ctx, const tir_var *, np);
    for (int k = 0; k < np; k++)
        if (rep[k]) {
            newloop[k] = tir_var_new(ctx, P->pv[k]->name, P->pv[k]->base.dtype);
            mp.ov[mp.n] = P->pv[k];
            mp.nv[mp.n++] = &newloop[k]->base;
        }
    mp.nloop = mp.n;
    /* a conjunct true for every iteration of the loops around the init
       goes (a projected split-K guard k_0 * 96 < 333 with k_0 < 4) */
    tir_analyzer *a = tir_analyzer_create(ctx);
    sch_bind_ancestors(c->sch, a, c->sch->srefs[P->li].parent);
    for (int k = 0; k < np; k++)
        if (rep[k]) tir_analyzer_bind(a, P->pv[k], P->path[k]->min, P->path[k]->extent);
    const tir_expr *pred = NULL;
    for (int j = 0; j < conj.n; j++) {
        if (!needs_init(conj.items[j], np, P->pv, rep) || tir_analyzer_can_prove(a, conj.items[j]))
            continue;
        const tir_expr *e =
            (const tir_expr *)tir_substitute(ctx, conj.items[j], mp.nloop, mp.ov, mp.nv);
        pred = pred ? tir_and(ctx, pred, e) : e;
    }
    tir_analyzer_destroy(a);
    ir_vec_free(&conj);
    if (P->nonempty) pred = pred ? tir_and(ctx, P->nonempty, pred) : P->nonempty;
    const tir_stmt *nest = init_block(c, P, &mp, pred, iname);
    for (int k = np - 1; k >= 0; k--) {
        if (!rep[k]) continue;
        const tir_for *f = P->path[k];
        nest = tir_for_new(ctx, newloop[k],
                           (const tir_expr *)tir_substitute(ctx, f->min, mp.nloop, mp.ov, mp.nv),
                           (const tir_expr *)tir_substitute(ctx, f->extent, mp.nloop, mp.ov,
                                                            mp.nv),
                           f->kind, f->thread_tag, 0, NULL, nest);
    }
    return nest;
}

/* `loop` with the update block: the same block without its init. */
static const tir_stmt *update_loop(tir_ctx *ctx, const dr_plan *P) {
    const tir_block *b = P->b;
    const tir_block_realize *r = P->r;
    tir_block_desc ud;
    tir_block_describe(b, &ud);
    ud.init = NULL;
    /* Reads only the init made (a bias after fuse_reduction_epilogue) go. */
    tir_buffer_region *ureads = IR_NEWN(ctx, tir_buffer_region, b->nreads);
    ud.nreads = 0;
    for (int i = 0; i < b->nreads; i++) {
        bool used = false;
        for (int w = 0; w < b->nwrites; w++) used |= b->writes[w].buffer == b->reads[i].buffer;
        used |= sch_loads_buffer(b->body, b->reads[i].buffer);
        if (used) ureads[ud.nreads++] = b->reads[i];
    }
    ud.reads = ureads;
    const tir_stmt *nw = tir_block_realize_new(ctx, r->nvalues, r->values, r->predicate,
                                               tir_block_new(ctx, &ud));
    return sch_replace_realize(ctx, &P->loop->base, &r->base, nw);
}

tir_status sch_prim_decompose_reduction(sch_call *c) {
    dr_plan P = {0};
    TIR_TRY(dr_check(c, &P));
    const char *iname = NULL;
    const tir_stmt *both[2] = {init_nest(c, &P, &iname), update_loop(c->ctx, &P)};
    const tir_stmt *o[1] = {&P.loop->base}, *n[1] = {tir_seq_new(c->ctx, 2, both)};
    c->func = sch_replace(c, 1, o, n);
    sch_out_block(c, iname);
    return TIR_OK;
}

tir_status tir_sched_decompose_reduction(tir_schedule *s, tir_block_rv block, tir_loop_rv loop,
                                         tir_block_rv *out) {
    if (!s || !out) return sch_bad_arg(s, "decompose_reduction", "out is NULL");
    sch_arg args[2] = {SCH_RV(block), SCH_RV(loop)};
    const uint32_t *ids;
    int n;
    TIR_TRY(sch_run(s, SCH_INST_decompose_reduction, args, &ids, &n));
    *out = sch_block_rv(s, ids[0]);
    return TIR_OK;
}
