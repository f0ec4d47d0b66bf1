/* blockize.c: the loops under a loop and the one block at their bottom
 * become the body of a new outer block "<name>_o" placed where the loop
 * was (TVM's Blockize), so that tensorize can match the inner nest as one
 * tile operation and later primitives treat the tile as one block instance.
 *
 * The iterators are divided as TVM's SubspaceDivide does for the simple
 * case of a sum: a binding that uses only loops above the loop moves with
 * its iterator (the same variable) to the outer block; one that uses only
 * loops from the loop down stays on the inner block; one that uses both
 * must be outer_part + inner_part, the inner part in [0, e) and the outer
 * part a multiple of e: its iterator v then gives an outer iterator v_o
 * (bound to outer_part / e, extent ceil(extent / e)) and keeps, on the
 * inner block, the domain [0, e) and the binding inner_part, while the
 * inner block's body and regions read v_o * e + v.  The outer block's
 * regions are the inner block's relaxed over its iterators; its init (for
 * a reduction with one) is the original init in a loop nest over the
 * inner loops that feed spatial iterators, as TVM's "<name>_init" block.
 */
#include <string.h>

#include "sched_internal.h"

/* How an iterator is divided. */
typedef enum { BZ_OUTER, BZ_INNER, BZ_SPLIT } bz_part;

typedef struct bz_plan {
    const tir_for *loop;
    const tir_block_realize *r;
    const tir_block *b;
    int nin;             /* loops from `loop` down, outermost first */
    const tir_for **in;
    const tir_var **inv;
    bz_part *part;       /* per iterator */
    int64_t *e;          /* BZ_SPLIT: the inner extent */
    const tir_expr **ob; /* BZ_OUTER: the binding; BZ_SPLIT: outer_part / e */
    const tir_expr **ib; /* BZ_INNER, BZ_SPLIT: the inner binding */
    const tir_var **vo;  /* BZ_SPLIT: the outer iterator */
    const tir_expr **oext;
    /* Loops above `loop` bound alone to an outer iterator, and that
     * iterator: how the inner block's predicate refers to them. */
    int nmap;
    const tir_var **mvars;
    const tir_expr **mvals;
} bz_plan;

/* True when every variable e uses is one of vars. */
typedef struct {
    tir_visitor v;
    int n;
    const tir_var *const *vars;
    bool other;
} only_state;

static bool only_pre(tir_visitor *v, const tir_node *n) {
    only_state *o = (only_state *)v;
    const tir_var *x = tir_as_tir_var(n);
    if (x) {
        bool in = false;
        for (int k = 0; k < o->n; k++) in |= o->vars[k] == x;
        if (!in) o->other = true;
    }
    return !o->other;
}

static bool uses_only(const tir_expr *e, int n, const tir_var *const *vars) {
    only_state o = {{only_pre, NULL, NULL}, n, vars, false};
    tir_visit(&o.v, e);
    return !o.other;
}

static bool uses_any(const void *e, int n, const tir_var *const *vars) {
    for (int k = 0; k < n; k++)
        if (tir_uses_var(e, vars[k])) return true;
    return false;
}

/* Preconditions 1 and 2: the loops down to one block realize, none bound
 * to a thread. */
static tir_status bz_nest(sch_call *c, uint32_t lrv, bz_plan *P) {
    tir_ctx *ctx = c->ctx;
    int cap = 1;
    for (const tir_stmt *st = P->loop->body; tir_as_tir_for(st); st = tir_as_tir_for(st)->body)
        cap++;
    P->in = IR_NEWN(ctx, const tir_for *, cap);
    P->inv = IR_NEWN(ctx, const tir_var *, cap);
    const tir_stmt *st = &P->loop->base;
    for (const tir_for *f; (f = tir_as_tir_for(st)) != NULL; st = f->body) {
        P->inv[P->nin] = f->var;
        P->in[P->nin++] = f;
    }
    P->r = tir_as_tir_block_realize(st);
    if (!P->r)
        return sch_fail(c, TIR_ERR_SCHED_BLOCKIZE_NEST, lrv, st,
                        "the loops from %s down must end in exactly one block, with no other "
                        "statement, but a %s statement lies there",
                        P->loop->var->name, tir_kind_name((tir_kind)((const tir_node *)st)->kind));
    P->b = P->r->block;
    for (int k = 0; k < P->nin; k++)
        if (P->in[k]->kind == TIR_FOR_THREAD_BINDING)
            return sch_fail(c, TIR_ERR_SCHED_BLOCKIZE_THREAD, lrv, P->in[k],
                            "loop %s is bound to %s; the loops a block is made of must not be "
                            "bound to threads",
                            P->inv[k]->name, P->in[k]->thread_tag);
    return TIR_OK;
}

/* Precondition 6 for iterator k: the division of its binding. */
static tir_status bz_divide(sch_call *c, uint32_t lrv, tir_analyzer *a, bz_plan *P, int k) {
    tir_ctx *ctx = c->ctx;
    const tir_iter_var *it = &P->b->iters[k];
    const tir_expr *v = P->r->values[k];
    tir_dtype dt = it->var->base.dtype;
    if (!uses_any(v, P->nin, P->inv)) {
        P->part[k] = BZ_OUTER;
        P->ob[k] = v;
        return TIR_OK;
    }
    if (uses_only(v, P->nin, P->inv)) {
        P->part[k] = BZ_INNER;
        P->ib[k] = v;
        return TIR_OK;
    }
    const tir_expr **zero = IR_NEWN(ctx, const tir_expr *, P->nin);
    for (int i = 0; i < P->nin; i++) zero[i] = tir_int(ctx, P->inv[i]->base.dtype, 0);
    const tir_expr *rest = tir_analyzer_simplify(
        a, (const tir_expr *)tir_substitute(ctx, v, P->nin, P->inv, zero));
    const tir_expr *inner = tir_analyzer_simplify(a, tir_sub(ctx, v, rest));
    tir_int_bound ib = tir_analyzer_const_bound(a, inner);
    const char *why = NULL;
    int64_t e = 0;
    if (!uses_only(inner, P->nin, P->inv))
        why = "its part over the inner loops depends on the loops above";
    else if (ib.min < 0 || ib.max == INT64_MAX || ib.max >= INT32_MAX)
        why = "its part over the inner loops is not bounded within [0, e)";
    else if (!sch_is_const(it->dom.min, 0))
        why = "its domain does not start at 0";
    if (!why) {
        e = ib.max + 1;
        const tir_expr *m = tir_analyzer_simplify(
            a, tir_binop_new(ctx, TIR_KIND_FLOORMOD, rest, tir_int(ctx, dt, e)));
        if (!sch_is_const(m, 0)) why = "its part over the loops above is not a multiple of e";
    }
    if (why)
        return sch_fail(c, TIR_ERR_SCHED_BLOCKIZE_BINDING, lrv, P->b,
                        "the binding %s of iterator %s of block \"%s\" does not divide into a "
                        "part over the loops above %s and a part in [0, e) over the loops "
                        "from it down: %s",
                        tir_print(ctx, v), it->var->name, P->b->name, P->loop->var->name, why);
    const tir_expr *ec = tir_int(ctx, dt, e);
    P->part[k] = BZ_SPLIT;
    P->e[k] = e;
    P->ib[k] = inner;
    P->ob[k] = tir_analyzer_simplify(a, tir_floordiv(ctx, rest, ec));
    P->oext[k] = tir_analyzer_simplify(
        a, tir_floordiv(ctx, tir_add(ctx, it->dom.extent, tir_int(ctx, dt, e - 1)), ec));
    P->vo[k] = tir_var_new(ctx, tir_ctx_sprintf(ctx, "%s_o", it->var->name), dt);
    return TIR_OK;
}

/* A conjunct `L < R` whose L is the binding of a split iterator v up to a
 * constant offset (the guard a non-dividing split adds, over any loops
 * above: a fused warp index included) reads `v_o * e + inner + offset`
 * inside; any other conjunct reads the loops above bound alone through
 * their iterators. */
static const tir_expr *inner_conjunct(tir_ctx *ctx, const bz_plan *P, const tir_expr *e) {
    if (((const tir_node *)e)->kind == TIR_KIND_LT) {
        const tir_binop *lt = (const tir_binop *)e;
        tir_analyzer *a = tir_analyzer_create(ctx);
        const tir_expr *out = NULL;
        for (int k = 0; k < P->b->niters && !out; k++) {
            if (P->part[k] != BZ_SPLIT) continue;
            int64_t off;
            const tir_expr *d = tir_analyzer_simplify(a, tir_sub(ctx, lt->a, P->r->values[k]));
            if (!tir_expr_const_int(d, &off)) continue;
            tir_dtype dt = P->vo[k]->base.dtype;
            const tir_expr *l = tir_add(
                ctx, tir_mul(ctx, &P->vo[k]->base, tir_int(ctx, dt, P->e[k])), P->ib[k]);
            if (off) l = tir_add(ctx, l, tir_int(ctx, dt, off));
            out = tir_lt(ctx, l, lt->b);
        }
        tir_analyzer_destroy(a);
        if (out) return out;
    }
    return (const tir_expr *)tir_substitute(ctx, e, P->nmap, P->mvars, P->mvals);
}

/* Precondition 7: the inner block's conjuncts (those using loops from
 * `loop` down) use the loops above only where a loop is bound alone to an
 * outer iterator; they then read that iterator (the loop is not visible
 * from inside the outer block). */
static tir_status bz_check_pred(sch_call *c, uint32_t lrv, bz_plan *P) {
    tir_ctx *ctx = c->ctx;
    int n = P->b->niters;
    P->mvars = IR_NEWN(ctx, const tir_var *, n);
    P->mvals = IR_NEWN(ctx, const tir_expr *, n);
    for (int k = 0; k < n; k++) {
        const tir_var *x = P->part[k] == BZ_INNER ? NULL : tir_as_tir_var(P->ob[k]);
        bool dup = false;
        for (int j = 0; j < P->nmap; j++) dup |= P->mvars[j] == x;
        if (!x || dup) continue;
        P->mvars[P->nmap] = x;
        P->mvals[P->nmap++] = P->part[k] == BZ_SPLIT ? &P->vo[k]->base : &P->b->iters[k].var->base;
    }
    ir_vec conj = {0};
    sch_conjuncts(P->r->predicate, &conj);
    tir_status st = TIR_OK;
    for (int i = 0; i < conj.n && st == TIR_OK; i++) {
        const tir_expr *e = conj.items[i];
        if (!uses_any(e, P->nin, P->inv)) continue;
        e = inner_conjunct(ctx, P, e);
        const tir_var **ok = IR_NEWN(ctx, const tir_var *, P->nin + 2 * n + P->nmap);
        int nok = 0;
        for (int j = 0; j < P->nin; j++) ok[nok++] = P->inv[j];
        for (int j = 0; j < P->nmap; j++) ok[nok++] = tir_as_tir_var(P->mvals[j]);
        for (int j = 0; j < n; j++)
            if (P->part[j] == BZ_SPLIT) ok[nok++] = P->vo[j];
        if (!uses_only(e, nok, ok))
            st = sch_fail(c, TIR_ERR_SCHED_BLOCKIZE_BINDING, lrv, P->b,
                          "the predicate %s of block \"%s\" uses loops from %s down and loops "
                          "above it that are not bound alone to an iterator, so the inner block "
                          "could not express it",
                          tir_print(ctx, conj.items[i]), P->b->name, P->loop->var->name);
    }
    ir_vec_free(&conj);
    return st;
}

/* Preconditions 1 to 7 (see schedule.h); fills P. */
static tir_status bz_check(sch_call *c, bz_plan *P) {
    const tir_schedule *s = c->sch;
    tir_ctx *ctx = c->ctx;
    uint32_t lrv = c->args[0].rv;
    int li = sch_loop_sref(c, lrv);
    P->loop = sch_sref_for(s, li);
    TIR_TRY(bz_nest(c, lrv, P));
    TIR_TRY(sch_check_blocks_under(c, lrv, &P->loop->base, P->nin, P->inv));
    int n = P->b->niters;
    P->part = IR_NEWN(ctx, bz_part, n);
    P->e = IR_NEWN(ctx, int64_t, n);
    P->ob = IR_NEWN(ctx, const tir_expr *, n);
    P->ib = IR_NEWN(ctx, const tir_expr *, n);
    P->vo = IR_NEWN(ctx, const tir_var *, n);
    P->oext = IR_NEWN(ctx, const tir_expr *, n);
    tir_analyzer *a = tir_analyzer_create(ctx);
    sch_bind_ancestors(s, a, li);
    for (int k = 1; k < P->nin; k++)
        tir_analyzer_bind(a, P->inv[k], P->in[k]->min, P->in[k]->extent);
    tir_status st = TIR_OK;
    for (int k = 0; k < n && st == TIR_OK; k++) st = bz_divide(c, lrv, a, P, k);
    tir_analyzer_destroy(a);
    TIR_TRY(st);
    return bz_check_pred(c, lrv, P);
}

/* The substitution of the inner block's body: v -> v_o * e + v for split
 * iterators (the inner block keeps v, now over [0, e)). */
typedef struct bz_subst {
    int n;
    const tir_var **vars;
    const tir_expr **vals;
} bz_subst;

static bz_subst split_subst(tir_ctx *ctx, const bz_plan *P) {
    bz_subst m = {0, IR_NEWN(ctx, const tir_var *, P->b->niters),
                  IR_NEWN(ctx, const tir_expr *, P->b->niters)};
    for (int k = 0; k < P->b->niters; k++) {
        if (P->part[k] != BZ_SPLIT) continue;
        const tir_var *v = P->b->iters[k].var;
        m.vars[m.n] = v;
        m.vals[m.n++] = tir_add(ctx, tir_mul(ctx, &P->vo[k]->base, tir_int(ctx, v->base.dtype,
                                                                           P->e[k])),
                                &v->base);
    }
    return m;
}

static tir_buffer_region *subst_regions(tir_ctx *ctx, int n, const tir_buffer_region *rs,
                                        const bz_subst *m) {
    tir_buffer_region *out = IR_NEWN(ctx, tir_buffer_region, n);
    for (int i = 0; i < n; i++) out[i] = sch_subst_region(ctx, &rs[i], m->n, m->vars, m->vals);
    return out;
}

/* True when a reduce iterator is split or moves out: then the init moves
 * to the outer block.  Otherwise each outer instance runs a whole
 * reduction, and the init stays on the inner block (the outer block is
 * then complete, so later primitives still take it). */
static bool init_moves(const bz_plan *P) {
    for (int k = 0; k < P->b->niters; k++)
        if (P->b->iters[k].kind == TIR_ITER_REDUCE && P->part[k] != BZ_INNER) return true;
    return false;
}

/* Whether inner loop j feeds a reduce (red) or a spatial iterator. */
static bool inner_feeds(const bz_plan *P, int j, bool red) {
    for (int k = 0; k < P->b->niters; k++)
        if ((P->b->iters[k].kind == TIR_ITER_REDUCE) == red &&
            tir_uses_var(P->r->values[k], P->inv[j]))
            return true;
    return false;
}

/* Precondition 9, where the init moves out: it then runs with the outer
 * block's first reduce step, before the inner steps, where the original
 * ran it with the first step of every reduce iterator and only if the
 * predicate held there.  So the inner part must have a first step (each
 * reduce iterator that does not move out has a domain provably not
 * empty, each inner loop feeding only reduce iterators runs), and each
 * conjunct using an inner loop that feeds a reduce iterator must be a
 * bound of the bindings, or use no inner loop feeding a spatial iterator
 * and hold with the inner loops feeding only reduce iterators at their
 * mins (it then skips later steps only). */
static tir_status bz_check_init(sch_call *c, uint32_t lrv, const bz_plan *P) {
    const tir_schedule *s = c->sch;
    tir_ctx *ctx = c->ctx;
    int bi = 0;
    while (bi < s->nsrefs && s->srefs[bi].realize != P->r) bi++;
    tir_analyzer *a = tir_analyzer_create(ctx);
    sch_bind_ancestors(s, a, s->srefs[bi].parent);
    const char *why = NULL;
    const tir_var **rv = IR_NEWN(ctx, const tir_var *, P->nin);
    const tir_expr **rmin = IR_NEWN(ctx, const tir_expr *, P->nin);
    int nr = 0;
    for (int j = 0; j < P->nin && !why; j++) {
        if (!inner_feeds(P, j, true) || inner_feeds(P, j, false)) continue;
        rv[nr] = P->inv[j];
        rmin[nr++] = P->in[j]->min;
        const tir_expr *ext = P->in[j]->extent;
        if (!tir_analyzer_can_prove(a, tir_gt(ctx, ext, tir_int(ctx, ext->dtype, 0))))
            why = tir_ctx_sprintf(ctx, "its reduce loop %s, of extent %s, may be empty",
                                  P->inv[j]->name, tir_print(ctx, ext));
    }
    for (int k = 0; k < P->b->niters && !why; k++) {
        const tir_expr *ext = P->b->iters[k].dom.extent;
        if (P->b->iters[k].kind == TIR_ITER_REDUCE && P->part[k] != BZ_OUTER &&
            !tir_analyzer_can_prove(a, tir_gt(ctx, ext, tir_int(ctx, ext->dtype, 0))))
            why = tir_ctx_sprintf(ctx, "reduce iterator %s, of extent %s, may be empty",
                                  P->b->iters[k].var->name, tir_print(ctx, ext));
    }
    ir_vec conj = {0};
    sch_conjuncts(P->r->predicate, &conj);
    for (int i = 0; i < conj.n && !why; i++) {
        const tir_expr *e = conj.items[i];
        bool red = false, spatial = false;
        for (int j = 0; j < P->nin; j++) {
            if (!tir_uses_var(e, P->inv[j])) continue;
            red |= inner_feeds(P, j, true);
            spatial |= inner_feeds(P, j, false);
        }
        if (!red || sch_pred_bounds_only(ctx, a, P->r, e)) continue;
        const tir_expr *at_min = (const tir_expr *)tir_substitute(ctx, e, nr, rv, rmin);
        if (spatial || !tir_analyzer_can_prove(a, at_min))
            why = tir_ctx_sprintf(ctx, "its predicate %s may decide whether the first step "
                                  "runs", tir_print(ctx, e));
    }
    ir_vec_free(&conj);
    tir_analyzer_destroy(a);
    if (!why) return TIR_OK;
    return sch_fail(c, TIR_ERR_SCHED_NOT_REDUCTION, lrv, P->b,
                    "the init of block \"%s\" would move to the outer block and run before "
                    "every inner step, but the block ran it only with its first step, and %s",
                    P->b->name, why);
}

/* The inner block: the iterators that do not move out, the body, regions
 * and (unless it moves out) init in v_o * e + v. */
static const tir_stmt *inner_realize(tir_ctx *ctx, const bz_plan *P, const bz_subst *m,
                                     const tir_expr *pred) {
    const tir_block *b = P->b;
    tir_iter_var *iters = IR_NEWN(ctx, tir_iter_var, b->niters);
    const tir_expr **vals = IR_NEWN(ctx, const tir_expr *, b->niters);
    int ni = 0;
    for (int k = 0; k < b->niters; k++) {
        if (P->part[k] == BZ_OUTER) continue;
        iters[ni] = b->iters[k];
        if (P->part[k] == BZ_SPLIT) {
            tir_dtype dt = b->iters[k].var->base.dtype;
            iters[ni].dom = (tir_range){tir_int(ctx, dt, 0), tir_int(ctx, dt, P->e[k])};
        }
        vals[ni++] = P->ib[k];
    }
    tir_block_desc d;
    tir_block_describe(b, &d);
    d.niters = ni;
    d.iters = iters;
    d.reads = subst_regions(ctx, b->nreads, b->reads, m);
    d.writes = subst_regions(ctx, b->nwrites, b->writes, m);
    d.body = (const tir_stmt *)tir_substitute(ctx, b->body, m->n, m->vars, m->vals);
    d.init = b->init && !init_moves(P)
                 ? (const tir_stmt *)tir_substitute(ctx, b->init, m->n, m->vars, m->vals)
                 : NULL;
    return tir_block_realize_new(ctx, ni, vals, pred, tir_block_new(ctx, &d));
}

/* True when conjunct e uses an inner loop marked in rep. */
static bool uses_copied(const bz_plan *P, const bool *rep, const void *e) {
    for (int j = 0; j < P->nin; j++)
        if (rep[j] && tir_uses_var(e, P->inv[j])) return true;
    return false;
}

/* Which inner loops the init nest copies: those feeding spatial
 * iterators of the inner block, closed over the predicate conjuncts that
 * use them (a conjunct over only the others guards reduction steps). */
static bool *init_loops(tir_ctx *ctx, const bz_plan *P, const ir_vec *iconj) {
    bool *rep = IR_NEWN(ctx, bool, P->nin);
    for (int k = 0; k < P->b->niters; k++)
        if (P->part[k] != BZ_OUTER && P->b->iters[k].kind == TIR_ITER_SPATIAL)
            for (int j = 0; j < P->nin; j++) rep[j] |= tir_uses_var(P->ib[k], P->inv[j]);
    for (bool changed = true; changed;) {
        changed = false;
        for (int i = 0; i < iconj->n; i++) {
            bool uses = uses_copied(P, rep, iconj->items[i]);
            for (int j = 0; j < P->nin && uses; j++)
                if (!rep[j] && tir_uses_var(iconj->items[i], P->inv[j])) rep[j] = changed = true;
        }
    }
    return rep;
}

/* The loop variables and block iterators defined inside an init (an init
 * that an earlier blockize made a loop nest: blockize of blockize). */
typedef struct inner_defs {
    tir_visitor v;
    tir_analyzer *a;
    ir_vec vars;
} inner_defs;

static bool inner_pre(tir_visitor *v, const tir_node *n) {
    inner_defs *d = (inner_defs *)v;
    if (n->kind == TIR_KIND_FOR) {
        const tir_for *f = (const tir_for *)n;
        tir_analyzer_bind(d->a, f->var, f->min, f->extent);
        ir_vec_push(&d->vars, f->var);
    } else if (n->kind == TIR_KIND_BLOCK) {
        const tir_block *b = (const tir_block *)n;
        for (int k = 0; k < b->niters; k++) {
            tir_analyzer_bind(d->a, b->iters[k].var, b->iters[k].dom.min, b->iters[k].dom.extent);
            ir_vec_push(&d->vars, b->iters[k].var);
        }
    }
    return true;
}

/* What the init body reads, in the new init block's iterators: its loads,
 * relaxed over the loops and block iterators inside it (which the block's
 * regions cannot name); NULL when one is unbounded. */
static tir_buffer_region *init_reads(tir_ctx *ctx, const tir_stmt *body, int *n) {
    tir_buffer_region *r = sch_load_regions(ctx, body, n);
    inner_defs d = {{inner_pre, NULL, NULL}, tir_analyzer_create(ctx), {0}};
    tir_visit(&d.v, body);
    bool ok = true;
    for (int i = 0; i < *n && d.vars.n && ok; i++) {
        tir_range *rg = IR_NEWN(ctx, tir_range, r[i].ndim);
        for (int k = 0; k < r[i].ndim && ok; k++)
            ok = tir_analyzer_relax(d.a, r[i].ranges[k].min, d.vars.n,
                                    (const tir_var *const *)d.vars.items, &rg[k]);
        r[i].ranges = rg;
    }
    tir_analyzer_destroy(d.a);
    ir_vec_free(&d.vars);
    return ok ? r : NULL;
}

/* The outer block's init: the init in a block "<name>_init" over fresh
 * copies of the inner loops that feed spatial iterators (TVM's form). */
static const tir_stmt *init_nest(sch_call *c, const bz_plan *P, const ir_vec *iconj) {
    tir_ctx *ctx = c->ctx;
    const tir_block *b = P->b;
    bool *rep = init_loops(ctx, P, iconj);
    bz_subst lm = {0, IR_NEWN(ctx, const tir_var *, P->nin),
                   IR_NEWN(ctx, const tir_expr *, P->nin)};
    const tir_var **nl = IR_NEWN(ctx, const tir_var *, P->nin);
    for (int j = 0; j < P->nin; j++)
        if (rep[j]) {
            nl[j] = tir_var_new(ctx, P->inv[j]->name, P->inv[j]->base.dtype);
            lm.vars[lm.n] = P->inv[j];
            lm.vals[lm.n++] = &nl[j]->base;
        }
    tir_iter_var *iters = IR_NEWN(ctx, tir_iter_var, b->niters);
    const tir_expr **vals = IR_NEWN(ctx, const tir_expr *, b->niters);
    bz_subst im = {0, IR_NEWN(ctx, const tir_var *, b->niters),
                   IR_NEWN(ctx, const tir_expr *, b->niters)};
    int ni = 0;
    for (int k = 0; k < b->niters; k++) {
        if (P->part[k] == BZ_OUTER || b->iters[k].kind != TIR_ITER_SPATIAL) continue;
        const tir_var *v = b->iters[k].var;
        tir_dtype dt = v->base.dtype;
        const tir_var *nv = tir_var_new(ctx, tir_ctx_sprintf(ctx, "%s_init", v->name), dt);
        iters[ni] = (tir_iter_var){nv, b->iters[k].dom, TIR_ITER_SPATIAL};
        im.vars[im.n] = v;
        im.vals[im.n++] = &nv->base;
        if (P->part[k] == BZ_SPLIT) {
            iters[ni].dom = (tir_range){tir_int(ctx, dt, 0), tir_int(ctx, dt, P->e[k])};
            const tir_expr *outer = tir_mul(ctx, &P->vo[k]->base, tir_int(ctx, dt, P->e[k]));
            im.vals[im.n - 1] = tir_add(ctx, outer, &nv->base);
        }
        vals[ni++] = (const tir_expr *)tir_substitute(ctx, P->ib[k], lm.n, lm.vars, lm.vals);
    }
    const tir_stmt *body = (const tir_stmt *)tir_substitute(ctx, b->init, im.n, im.vars, im.vals);
    int nreads;
    tir_buffer_region *reads = init_reads(ctx, body, &nreads);
    if (!reads) return NULL;
    const tir_expr *pred = NULL;
    for (int i = 0; i < iconj->n; i++) {
        if (!uses_copied(P, rep, iconj->items[i])) continue;
        const tir_expr *e =
            (const tir_expr *)tir_substitute(ctx, iconj->items[i], lm.n, lm.vars, lm.vals);
        pred = pred ? tir_and(ctx, pred, e) : e;
    }
    tir_block_desc d = {.name = sch_unique_block_name(c->sch, tir_ctx_sprintf(ctx, "%s_init",
                                                                              b->name)),
                        .niters = ni, .iters = iters, .nreads = nreads, .reads = reads,
                        .nwrites = b->nwrites,
                        .writes = subst_regions(ctx, b->nwrites, b->writes, &im), .body = body};
    const tir_stmt *nest = tir_block_realize_new(ctx, ni, vals, pred, tir_block_new(ctx, &d));
    for (int j = P->nin - 1; j >= 0; j--) {
        if (!rep[j]) continue;
        const tir_for *f = P->in[j];
        nest = tir_for_new(ctx, nl[j],
                           (const tir_expr *)tir_substitute(ctx, f->min, lm.n, lm.vars, lm.vals),
                           (const tir_expr *)tir_substitute(ctx, f->extent, lm.n, lm.vars,
                                                            lm.vals),
                           f->kind, f->thread_tag, 0, NULL, nest);
    }
    return nest;
}

/* The inner block's regions relaxed over its iterators (a holds every
 * iterator's domain); false when unbounded. */
static bool outer_regions(tir_ctx *ctx, tir_analyzer *a, const tir_block *ib, int n,
                          const tir_buffer_region *rs, tir_buffer_region **out) {
    const tir_var **iv = IR_NEWN(ctx, const tir_var *, ib->niters);
    for (int k = 0; k < ib->niters; k++) iv[k] = ib->iters[k].var;
    *out = IR_NEWN(ctx, tir_buffer_region, n);
    for (int i = 0; i < n; i++) {
        const tir_buffer_region *r = &rs[i];
        tir_range *rg = IR_NEWN(ctx, tir_range, r->ndim);
        for (int dd = 0; dd < r->ndim; dd++) {
            const tir_expr *mn = r->ranges[dd].min;
            const tir_expr *last =
                tir_sub(ctx, tir_add(ctx, mn, r->ranges[dd].extent), tir_int(ctx, mn->dtype, 1));
            tir_range lo, hi;
            if (!tir_analyzer_relax(a, mn, ib->niters, iv, &lo) ||
                !tir_analyzer_relax(a, last, ib->niters, iv, &hi))
                return false;
            rg[dd].min = tir_analyzer_simplify(a, lo.min);
            rg[dd].extent = tir_analyzer_simplify(
                a, tir_sub(ctx, tir_add(ctx, hi.min, hi.extent), lo.min));
        }
        (*out)[i] = (tir_buffer_region){r->buffer, r->ndim, rg};
    }
    return true;
}

/* The outer block's iterators, bindings and predicate: the outer
 * conjuncts, and for a split iterator whose outer binding is not provably
 * inside [0, ceil(extent / e)) (a split by factors whose product exceeds
 * the extent) a bound, which masks only instances the inner predicate
 * masked already. */
typedef struct bz_outer {
    int n;
    tir_iter_var *iters;
    const tir_expr **vals;
    const tir_expr *pred;
} bz_outer;

static bz_outer outer_iters(const tir_schedule *s, int li, const bz_plan *P, const ir_vec *oconj) {
    tir_ctx *ctx = s->ctx;
    const tir_block *b = P->b;
    bz_outer o = {0, IR_NEWN(ctx, tir_iter_var, b->niters),
                  IR_NEWN(ctx, const tir_expr *, b->niters), NULL};
    for (int i = 0; i < oconj->n; i++)
        o.pred = o.pred ? tir_and(ctx, o.pred, oconj->items[i]) : oconj->items[i];
    tir_analyzer *a = tir_analyzer_create(ctx);
    sch_bind_ancestors(s, a, s->srefs[li].parent);
    for (int k = 0; k < b->niters; k++) {
        if (P->part[k] == BZ_INNER) continue;
        o.iters[o.n] = b->iters[k];
        o.vals[o.n++] = P->ob[k];
        if (P->part[k] != BZ_SPLIT) {
            /* an iterator whose binding only the inner predicate kept in
               its domain (a fused loop split past its extent) */
            const tir_range *d = &b->iters[k].dom;
            const tir_expr *hi = tir_lt(
                ctx, P->ob[k], tir_analyzer_simplify(a, tir_add(ctx, d->min, d->extent)));
            if (!tir_analyzer_can_prove(a, hi)) o.pred = o.pred ? tir_and(ctx, o.pred, hi) : hi;
            continue;
        }
        tir_dtype dt = P->vo[k]->base.dtype;
        o.iters[o.n - 1].var = P->vo[k];
        o.iters[o.n - 1].dom = (tir_range){tir_int(ctx, dt, 0), P->oext[k]};
        const tir_expr *lt = tir_lt(ctx, P->ob[k], P->oext[k]);
        if (!tir_analyzer_can_prove(a, lt)) o.pred = o.pred ? tir_and(ctx, o.pred, lt) : lt;
    }
    tir_analyzer_destroy(a);
    return o;
}

tir_status sch_prim_blockize(sch_call *c) {
    bz_plan P = {0};
    TIR_TRY(bz_check(c, &P));
    if (P.b->init && init_moves(&P)) TIR_TRY(bz_check_init(c, c->args[0].rv, &P));
    tir_ctx *ctx = c->ctx;
    const tir_schedule *s = c->sch;
    int li = sch_loop_sref(c, c->args[0].rv);
    /* Conjuncts over the loops above go out; the others stay in. */
    ir_vec conj = {0}, oconj = {0}, iconj = {0};
    sch_conjuncts(P.r->predicate, &conj);
    for (int i = 0; i < conj.n; i++) {
        const tir_expr *e = conj.items[i];
        if (!uses_any(e, P.nin, P.inv)) {
            ir_vec_push(&oconj, e);
            continue;
        }
        ir_vec_push(&iconj, inner_conjunct(ctx, &P, e));
    }
    const tir_expr *ipred = NULL;
    for (int i = 0; i < iconj.n; i++)
        ipred = ipred ? tir_and(ctx, ipred, iconj.items[i]) : iconj.items[i];
    bz_subst m = split_subst(ctx, &P);
    const tir_stmt *inner = inner_realize(ctx, &P, &m, ipred);
    const tir_block *ib = tir_as_tir_block_realize(inner)->block;
    bz_outer o = outer_iters(s, li, &P, &oconj);
    const tir_stmt *init = P.b->init && init_moves(&P) ? init_nest(c, &P, &iconj) : NULL;
    bool init_ok = !(P.b->init && init_moves(&P)) || init;
    ir_vec_free(&conj);
    ir_vec_free(&oconj);
    ir_vec_free(&iconj);
    /* 8: the outer regions. */
    tir_analyzer *a = tir_analyzer_create(ctx);
    for (int k = 0; k < o.n; k++)
        tir_analyzer_bind(a, o.iters[k].var, o.iters[k].dom.min, o.iters[k].dom.extent);
    for (int k = 0; k < ib->niters; k++)
        tir_analyzer_bind(a, ib->iters[k].var, ib->iters[k].dom.min, ib->iters[k].dom.extent);
    tir_buffer_region *reads, *writes;
    bool ok = outer_regions(ctx, a, ib, ib->nreads, ib->reads, &reads) &&
              outer_regions(ctx, a, ib, ib->nwrites, ib->writes, &writes);
    tir_analyzer_destroy(a);
    if (!ok || !init_ok)
        return sch_fail(c, TIR_ERR_SCHED_REGION_UNBOUNDED, c->args[0].rv, P.b,
                        "the regions block \"%s\" accesses cannot be bounded over its inner "
                        "iterators",
                        P.b->name);
    const char *name = sch_unique_block_name(s, tir_ctx_sprintf(ctx, "%s_o", P.b->name));
    tir_block_desc d = {.name = name, .niters = o.n, .iters = o.iters, .nreads = ib->nreads,
                        .reads = reads, .nwrites = ib->nwrites, .writes = writes,
                        .init = init,
                        .body = sch_replace_realize(ctx, &P.loop->base, &P.r->base, inner)};
    const tir_stmt *outer = tir_block_realize_new(ctx, o.n, o.vals, o.pred, tir_block_new(ctx, &d));
    const tir_stmt *olds[1] = {&P.loop->base}, *news[1] = {outer};
    c->func = sch_replace(c, 1, olds, news);
    sch_out_block(c, name);
    return TIR_OK;
}

tir_status tir_sched_blockize(tir_schedule *s, tir_loop_rv loop, tir_block_rv *out) {
    if (!s || !out) return sch_bad_arg(s, "blockize", "out is NULL");
    sch_arg args[1] = {SCH_RV(loop)};
    const uint32_t *ids;
    int n;
    TIR_TRY(sch_run(s, SCH_INST_blockize, args, &ids, &n));
    *out = sch_block_rv(s, ids[0]);
    return TIR_OK;
}
