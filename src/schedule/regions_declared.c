/* regions_declared.c: tir_sched_create's check that every block accesses
 * only what its T.reads / T.writes regions declare.
 *
 * The primitives trust the declared regions: compute_inline asks "does a
 * later block write what it reads" of the regions, cache_read copies the
 * declared region, compute_at computes what the consumer's regions name.
 * The text parser takes a block without T.reads / T.writes as one that
 * accesses nothing (TVM's parser infers them), so a TVM user's natural
 * text, or a region written one element short, gave silently wrong
 * schedules (compute_inline moved a read past a write it did not see;
 * cache_read + compute_at copied one element where the block read
 * three).  Here each access of a block (a load or store in its body or
 * init, and the regions of a block nested in it, at its bindings) must
 * name a buffer the block declares (a load: a read or write region, since
 * a reduction's update reads what it writes; a store: a write region) and
 * lie inside one such region, proved with the analyzer over the block's
 * iterator domains and the loops inside it.  Buffers allocated in the
 * block (or inside it) are the block's own.  An index the analyzer cannot
 * reason about (it reads memory, calls a function or binds a Let) only
 * needs its buffer declared.  A block that only wraps blocks gets their
 * regions first (sch_fill_wrapper_regions, at the end).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched_internal.h"

typedef struct rd_state {
    tir_ctx *ctx;
    tir_analyzer *a;
    const tir_block *b;
    ir_vec own; /* const tir_buffer *: allocated in b */
    ir_vec vars; /* const tir_var *: b's iterators and the loops around the walk in b */
    bool wrapper; /* no iterators and no regions: nested blocks not checked */
    const tir_buffer *bad_buf;
    const char *why;
} rd_state;

static bool is_own(const rd_state *st, const tir_buffer *buf) {
    return ir_vec_has(&st->own, buf);
}

/* True when e reads memory, calls something or binds a Let: the analyzer
 * proves nothing useful about it. */
typedef struct opaque_v {
    tir_visitor v;
    bool found;
} opaque_v;
static bool opaque_pre(tir_visitor *v, const tir_node *n) {
    opaque_v *o = (opaque_v *)v;
    if (n->kind == TIR_KIND_BUFFER_LOAD || n->kind == TIR_KIND_CALL || n->kind == TIR_KIND_LET)
        o->found = true;
    return !o->found;
}
static bool is_opaque(const tir_expr *e) {
    opaque_v o = {{opaque_pre, NULL, NULL}, false};
    tir_visit(&o.v, e);
    return o.found;
}

/* The scalar ends of an index: itself, a ramp's first and last lanes, a
 * broadcast's value.  False for other vector forms. */
static bool index_ends(tir_ctx *ctx, const tir_expr *e, const tir_expr **lo, const tir_expr **hi) {
    if (e->dtype.lanes == 1) {
        *lo = *hi = e;
        return true;
    }
    const tir_ramp *r = tir_as_tir_ramp(e);
    if (r && r->start->dtype.lanes == 1) {
        *lo = r->start;
        *hi = tir_add(ctx, r->start,
                      tir_mul(ctx, r->stride, tir_int(ctx, r->stride->dtype, e->dtype.lanes - 1)));
        return true;
    }
    const tir_broadcast *bc = tir_as_tir_broadcast(e);
    if (bc && bc->value->dtype.lanes == 1) {
        *lo = *hi = bc->value;
        return true;
    }
    return false;
}

static const tir_expr *as_dtype(tir_ctx *ctx, const tir_expr *e, tir_dtype t) {
    if (e->dtype.code == t.code && e->dtype.bits == t.bits) return e;
    return tir_cast_new(ctx, t, e);
}

/* One end of an access inside [mn, end): e >= mn (upper false) or e <
 * end (upper true), compared in dtype t, directly or relaxed over the
 * block's iterators and the loops in it first.  The analyzer proves with
 * constant bounds only, so an access A[i] under `for i in range(n)` was
 * not proved inside A[0:n] (a wrapper around such a loop, given that
 * region, was refused); the relaxed range [0, n) is, its ends compared
 * symbolically.  Relaxing only widens the access, so a proof still holds
 * for every value.  A min or max is taken apart first (a clamp to the
 * edge, `A[T.max(vi - 1, 0)]`, whose relaxed range over a symbolic vi has
 * no end): max(x, y) >= mn where either is, < end where both are; min the
 * other way round.  The two ends are proved separately: each proof holds
 * for every value, so both together do. */
static bool end_inside(rd_state *st, tir_dtype t, const tir_expr *mn, const tir_expr *end,
                       const tir_expr *e, bool upper) {
    tir_ctx *ctx = st->ctx;
    if (e->kind == TIR_KIND_MAX || e->kind == TIR_KIND_MIN) {
        const tir_binop *m = (const tir_binop *)e;
        bool both = (e->kind == TIR_KIND_MAX) == upper;
        bool x = end_inside(st, t, mn, end, m->a, upper);
        if (both ? !x : x) return x;
        return end_inside(st, t, mn, end, m->b, upper);
    }
    const tir_expr *et = as_dtype(ctx, e, t);
    if (tir_analyzer_can_prove(st->a, upper ? tir_lt(ctx, et, end) : tir_le(ctx, mn, et)))
        return true;
    const tir_var *const *vs = (const tir_var *const *)st->vars.items;
    tir_range r;
    if (!st->vars.n || !tir_analyzer_relax(st->a, e, st->vars.n, vs, &r)) return false;
    if (!upper) return tir_analyzer_can_prove(st->a, tir_le(ctx, mn, as_dtype(ctx, r.min, t)));
    const tir_expr *rend = tir_add(ctx, as_dtype(ctx, r.min, t), as_dtype(ctx, r.extent, t));
    return tir_analyzer_can_prove(st->a, tir_le(ctx, rend, end));
}

/* lo..hi inside [r.min, r.min + r.extent), compared in dtype t. */
static bool inside_as(rd_state *st, tir_dtype t, const tir_range *r, const tir_expr *lo,
                      const tir_expr *hi) {
    const tir_expr *mn = as_dtype(st->ctx, r->min, t);
    const tir_expr *end = tir_add(st->ctx, mn, as_dtype(st->ctx, r->extent, t));
    return end_inside(st, t, mn, end, lo, false) && end_inside(st, t, mn, end, hi, true);
}

/* lo..hi (one dimension of an access) inside r's range d. */
static bool dim_inside(rd_state *st, const tir_range *r, const tir_expr *lo, const tir_expr *hi) {
    int64_t ext;
    if (lo == hi && tir_expr_const_int(r->extent, &ext) && ext == 1 && tir_struct_equal(lo, r->min))
        return true;
    if (!tir_dtype_is_int(lo->dtype) || !tir_dtype_is_int(hi->dtype) ||
        !tir_dtype_is_int(r->min->dtype) || !tir_dtype_is_int(r->extent->dtype))
        return false;
    /* Mixed dtypes are compared in int64.  Where the access and the
       region share one index dtype they are compared in it as well: in
       int64 a cast of a symbolic sum (`int64(vi + 2)`, `int64(n + 2)`)
       stays an atom, since the analyzer cannot rule out that the int32
       sum wrapped, so `A[vi + 2]` was not proved inside `A[vi:vi + 3]` nor
       inside `A[0:n + 2]` once vi's bound was symbolic (every stencil of
       dynamic shape was refused at create).  In the index dtype the sums
       are index arithmetic, whose overflow the contract leaves undefined
       (docs/lowered-ir.md), as the simplifier does everywhere else. */
    tir_dtype d = lo->dtype;
    d.lanes = 1;
    if (tir_dtype_eq(hi->dtype, lo->dtype) && tir_dtype_eq(r->min->dtype, d) &&
        tir_dtype_eq(r->extent->dtype, d) && inside_as(st, d, r, lo, hi))
        return true;
    return inside_as(st, TIR_I64, r, lo, hi);
}

/* One access of buf: per dimension the ends [lo, hi] (NULL: not known). */
static void check_access(rd_state *st, const tir_buffer *buf, int n, const tir_expr *const *lo,
                         const tir_expr *const *hi, bool is_store) {
    if (st->bad_buf || is_own(st, buf)) return;
    const tir_block *b = st->b;
    bool declared = false;
    for (int pass = 0; pass < 2; pass++) {
        int nr = pass == 0 ? b->nwrites : (is_store ? 0 : b->nreads);
        const tir_buffer_region *rs = pass == 0 ? b->writes : b->reads;
        for (int i = 0; i < nr; i++) {
            if (rs[i].buffer != buf || rs[i].ndim != n) continue;
            declared = true;
            bool in = true;
            for (int d = 0; d < n && in; d++)
                in = !lo[d] || dim_inside(st, &rs[i].ranges[d], lo[d], hi[d]);
            if (in) return;
        }
    }
    st->bad_buf = buf;
    st->why = declared ? (is_store ? "stores outside its T.writes regions of"
                                   : "loads outside its T.reads / T.writes regions of")
                       : (is_store ? "stores to a buffer missing from its T.writes:"
                                   : "loads a buffer missing from its T.reads:");
}

static void check_indices(rd_state *st, const tir_buffer *buf, int n,
                          const tir_expr *const *idx, bool is_store) {
    const tir_expr **lo = IR_NEWN(st->ctx, const tir_expr *, n + 1);
    const tir_expr **hi = IR_NEWN(st->ctx, const tir_expr *, n + 1);
    for (int d = 0; d < n; d++)
        if (is_opaque(idx[d]) || !index_ends(st->ctx, idx[d], &lo[d], &hi[d]))
            lo[d] = hi[d] = NULL;
    check_access(st, buf, n, lo, hi, is_store);
}

static void walk_stmt(rd_state *st, const tir_stmt *s);

typedef struct expr_v {
    tir_visitor v;
    rd_state *st;
} expr_v;
static bool expr_pre(tir_visitor *v, const tir_node *n) {
    rd_state *st = ((expr_v *)v)->st;
    const tir_buffer_load *l = tir_as_tir_buffer_load((const tir_expr *)n);
    if (n->kind == TIR_KIND_BUFFER_LOAD && l)
        check_indices(st, l->buffer, l->nidx, l->indices, false);
    return !st->bad_buf;
}
static void walk_expr(rd_state *st, const tir_expr *e) {
    if (!e) return;
    expr_v v = {{expr_pre, NULL, NULL}, st};
    tir_visit(&v.v, e);
}

/* A block nested in st->b: its regions at its bindings are accesses of
 * st->b; its body is checked on its own. */
static void walk_nested(rd_state *st, const tir_block_realize *r) {
    const tir_block *nb = r->block;
    if (st->wrapper) return;
    const tir_var **vars = IR_NEWN(st->ctx, const tir_var *, nb->niters + 1);
    for (int i = 0; i < nb->niters; i++) vars[i] = nb->iters[i].var;
    for (int i = 0; i < r->nvalues; i++) walk_expr(st, r->values[i]);
    walk_expr(st, r->predicate);
    for (int i = 0; i < nb->nallocs; i++) ir_vec_push(&st->own, nb->allocs[i]);
    for (int pass = 0; pass < 2 && !st->bad_buf; pass++) {
        int nr = pass == 0 ? nb->nreads : nb->nwrites;
        const tir_buffer_region *rs = pass == 0 ? nb->reads : nb->writes;
        for (int i = 0; i < nr && !st->bad_buf; i++) {
            int n = rs[i].ndim;
            const tir_expr **lo = IR_NEWN(st->ctx, const tir_expr *, n + 1);
            const tir_expr **hi = IR_NEWN(st->ctx, const tir_expr *, n + 1);
            for (int d = 0; d < n; d++) {
                const tir_range *g = &rs[i].ranges[d];
                const tir_expr *mn = (const tir_expr *)tir_substitute(
                    st->ctx, g->min, nb->niters, vars, r->values);
                const tir_expr *ex = (const tir_expr *)tir_substitute(
                    st->ctx, g->extent, nb->niters, vars, r->values);
                if (is_opaque(mn) || is_opaque(ex) || mn->dtype.lanes != 1) {
                    lo[d] = hi[d] = NULL;
                    continue;
                }
                lo[d] = mn;
                hi[d] = tir_sub(st->ctx, tir_add(st->ctx, mn, as_dtype(st->ctx, ex, mn->dtype)),
                                tir_int(st->ctx, mn->dtype, 1));
            }
            check_access(st, rs[i].buffer, n, lo, hi, pass == 1);
        }
    }
}

static void walk_stmt(rd_state *st, const tir_stmt *s) {
    if (!s || st->bad_buf) return;
    switch ((tir_kind)s->kind) {
    case TIR_KIND_FOR: {
        const tir_for *f = tir_as_tir_for(s);
        walk_expr(st, f->min);
        walk_expr(st, f->extent);
        tir_analyzer_bind(st->a, f->var, f->min, f->extent);
        ir_vec_push(&st->vars, f->var);
        walk_stmt(st, f->body);
        st->vars.n--;
        tir_analyzer_unbind(st->a, f->var);
        return;
    }
    case TIR_KIND_BLOCK_REALIZE: walk_nested(st, tir_as_tir_block_realize(s)); return;
    case TIR_KIND_BUFFER_STORE: {
        const tir_buffer_store *u = tir_as_tir_buffer_store(s);
        for (int d = 0; d < u->nidx; d++) walk_expr(st, u->indices[d]);
        walk_expr(st, u->value);
        check_indices(st, u->buffer, u->nidx, u->indices, true);
        return;
    }
    case TIR_KIND_SEQ: {
        const tir_seq *q = tir_as_tir_seq(s);
        for (int i = 0; i < q->n; i++) walk_stmt(st, q->stmts[i]);
        return;
    }
    case TIR_KIND_IF: {
        const tir_if *i = tir_as_tir_if(s);
        walk_expr(st, i->cond);
        walk_stmt(st, i->then_s);
        walk_stmt(st, i->else_s);
        return;
    }
    case TIR_KIND_ALLOCATE: {
        const tir_allocate *al = tir_as_tir_allocate(s);
        ir_vec_push(&st->own, al->buffer);
        walk_stmt(st, al->body);
        return;
    }
    case TIR_KIND_EVALUATE: walk_expr(st, tir_as_tir_evaluate(s)->value); return;
    default: return;
    }
}

/* Checks block realize r (not the root), with a holding the ranges of
 * the loops and iterators around it.  NULL when every access is declared,
 * else a message. */
static const char *check_block(tir_ctx *ctx, tir_analyzer *a, const tir_block_realize *r) {
    const tir_block *b = r->block;
    /* A block with no iterators and no regions that only wraps blocks (the
       software pipeline's wrapper, before sch_fill_wrapper_regions gives it
       its blocks' regions, or after when they access nothing) is opaque:
       its blocks declare what they access, and a direct access in it
       still has to be declared. */
    rd_state st = {.ctx = ctx, .a = a, .b = b,
                   .wrapper = b->niters == 0 && b->nreads == 0 && b->nwrites == 0};
    /* An iterator's extent that is a variable nothing bounds (a scalar
       parameter n: `T.axis.spatial(n, i)`) is at least 1 wherever the
       block runs, and accesses matter only there: a clamp to the edge,
       `A[T.min(vi + 1, n - 1)]` or `A[T.max(vi - 1, 0)]` inside
       `A[0:n]`, holds only for n >= 1 and was refused at create.  Such a
       variable is bound to [1, the dtype's max] while the block is
       checked. */
    const tir_var *ge1[16];
    int nge1 = 0;
    for (int i = 0; i < b->niters && nge1 < 16; i++) {
        const tir_var *n = tir_as_tir_var(b->iters[i].dom.extent);
        if (!n || !tir_dtype_is_int(n->base.dtype) || n->base.dtype.lanes != 1) continue;
        tir_int_bound nb = tir_analyzer_const_bound(a, (const tir_expr *)n);
        int bits = n->base.dtype.bits;
        int64_t hi = bits >= 64 ? INT64_MAX : (INT64_C(1) << (bits - 1)) - 1;
        bool seen = false;
        for (int j = 0; j < nge1; j++) seen = seen || ge1[j] == n;
        if (seen || nb.min > -hi - 1 || nb.max < hi) continue; /* bounded already */
        tir_analyzer_bind_const(a, n, 1, hi);
        ge1[nge1++] = n;
    }
    for (int i = 0; i < b->niters; i++) {
        tir_analyzer_bind(a, b->iters[i].var, b->iters[i].dom.min, b->iters[i].dom.extent);
        ir_vec_push(&st.vars, b->iters[i].var);
    }
    for (int i = 0; i < b->nallocs; i++) ir_vec_push(&st.own, b->allocs[i]);
    walk_stmt(&st, b->init);
    walk_stmt(&st, b->body);
    const char *msg = NULL;
    if (st.bad_buf) {
        ir_strbuf sb;
        ir_sb_init(&sb);
        ir_sb_printf(&sb,
                     "block \"%s\" %s %s (schedules trust a block's declared regions: write "
                     "T.reads and T.writes naming everything the block accesses)",
                     b->name, st.why, st.bad_buf->name);
        msg = ir_sb_finish(&sb, ctx);
    }
    for (int i = 0; i < nge1; i++) tir_analyzer_unbind(a, ge1[i]);
    ir_vec_free(&st.own);
    ir_vec_free(&st.vars);
    return msg;
}

typedef struct all_state {
    tir_ctx *ctx;
    tir_analyzer *a;
    const tir_stmt *root;
    const char *msg;
    const tir_block *bad;
    const tir_for *loops[64]; /* the loops around the walk, outermost first */
    int nloops;               /* (deeper ones are left out) */
    int deep;
} all_state;

/* Every block under s, binding loops and iterators on the way down. */
static void walk_all(all_state *w, const tir_stmt *s) {
    if (!s || w->msg) return;
    switch ((tir_kind)s->kind) {
    case TIR_KIND_FOR: {
        const tir_for *f = tir_as_tir_for(s);
        tir_analyzer_bind(w->a, f->var, f->min, f->extent);
        if (w->nloops < 64) w->loops[w->nloops++] = f;
        else w->deep++;
        walk_all(w, f->body);
        if (w->deep) w->deep--;
        else w->nloops--;
        tir_analyzer_unbind(w->a, f->var);
        return;
    }
    case TIR_KIND_BLOCK_REALIZE: {
        const tir_block_realize *r = tir_as_tir_block_realize(s);
        const tir_block *b = r->block;
        if (s != w->root &&
            ((w->msg = check_block(w->ctx, w->a, r)) ||
             (w->msg = sch_spatial_write_collision(w->ctx, r, w->loops, w->nloops)))) {
            w->bad = b;
            return;
        }
        for (int i = 0; i < b->niters; i++)
            tir_analyzer_bind(w->a, b->iters[i].var, b->iters[i].dom.min, b->iters[i].dom.extent);
        walk_all(w, b->init);
        walk_all(w, b->body);
        for (int i = 0; i < b->niters; i++) tir_analyzer_unbind(w->a, b->iters[i].var);
        return;
    }
    case TIR_KIND_SEQ: {
        const tir_seq *q = tir_as_tir_seq(s);
        for (int i = 0; i < q->n; i++) walk_all(w, q->stmts[i]);
        return;
    }
    case TIR_KIND_IF: {
        const tir_if *i = tir_as_tir_if(s);
        walk_all(w, i->then_s);
        walk_all(w, i->else_s);
        return;
    }
    case TIR_KIND_ALLOCATE: walk_all(w, tir_as_tir_allocate(s)->body); return;
    default: return;
    }
}

const char *sch_undeclared_access(tir_ctx *ctx, const tir_prim_func *f, const tir_block **bad) {
    all_state w = {ctx, tir_analyzer_create(ctx), f->body, NULL, NULL, {NULL}, 0, 0};
    walk_all(&w, f->body);
    tir_analyzer_destroy(w.a);
    *bad = w.bad;
    return w.msg;
}

/* ---- wrappers' regions
 *
 * A wrapper (a block other than the root with no iterators, no init and no
 * regions) declares nothing, so in its parent's scope it looked as if it
 * accessed nothing: cache_read copied a buffer before a wrapper whose
 * nested block wrote it, reverse_compute_inline and decompose_reduction
 * moved writes past a wrapper whose nested block read them.  The
 * primitives ask a block's regions what it touches, so a wrapper gets the
 * regions of the blocks it wraps, relaxed over the loops between (the
 * variables above it stay: the nested bindings use them already, so the
 * loop primitives refuse those loops either way).  Buffers allocated in
 * the wrapper are its own and left out.  sch_run recomputes them after
 * every primitive (by the names found here), and the scans over every
 * block skip wrappers (sch_is_wrapper): their nested blocks are scanned. */

typedef struct wfill {
    tir_ctx *ctx;
    tir_analyzer *a;
    ir_vec path;  /* const tir_var *: the loops between the wrapper and here */
    ir_vec own;   /* const tir_buffer *: allocated in the wrapper */
    ir_vec reads, writes; /* tir_buffer_region * (arena) */
} wfill;

/* Dimension d of region g at the nested block's bindings, relaxed over
 * the path's loops (the whole dimension where that is unbounded). */
static tir_range relax_dim(wfill *w, const tir_buffer_region *g, int d, int n,
                           const tir_var *const *vars, const tir_expr *const *vals) {
    tir_ctx *ctx = w->ctx;
    const tir_range *r = &g->ranges[d];
    const tir_expr *mn = (const tir_expr *)tir_substitute(ctx, r->min, n, vars, vals);
    const tir_expr *ex = (const tir_expr *)tir_substitute(ctx, r->extent, n, vars, vals);
    tir_range lo, hi;
    const tir_var *const *pv = (const tir_var *const *)w->path.items;
    if (!is_opaque(mn) && !is_opaque(ex) && mn->dtype.lanes == 1 && tir_dtype_is_int(mn->dtype) &&
        tir_dtype_is_int(ex->dtype)) {
        const tir_expr *last = tir_sub(ctx, tir_add(ctx, mn, as_dtype(ctx, ex, mn->dtype)),
                                       tir_int(ctx, mn->dtype, 1));
        if (tir_analyzer_relax(w->a, mn, w->path.n, pv, &lo) &&
            tir_analyzer_relax(w->a, last, w->path.n, pv, &hi)) {
            const tir_expr *end = tir_add(ctx, hi.min, as_dtype(ctx, hi.extent, hi.min->dtype));
            const tir_expr *m = as_dtype(ctx, lo.min, end->dtype);
            return (tir_range){tir_analyzer_simplify(w->a, m),
                               tir_analyzer_simplify(w->a, tir_sub(ctx, end, m))};
        }
    }
    return (tir_range){tir_int(ctx, g->buffer->shape[d]->dtype, 0), g->buffer->shape[d]};
}

static void add_regions(wfill *w, ir_vec *out, int nr, const tir_buffer_region *rs,
                        const tir_block_realize *r) {
    const tir_block *nb = r->block;
    const tir_var **vars = IR_NEWN(w->ctx, const tir_var *, nb->niters + 1);
    for (int i = 0; i < nb->niters; i++) vars[i] = nb->iters[i].var;
    for (int i = 0; i < nr; i++) {
        if (ir_vec_has(&w->own, rs[i].buffer)) continue;
        tir_range *rg = IR_NEWN(w->ctx, tir_range, rs[i].ndim + 1);
        for (int d = 0; d < rs[i].ndim; d++)
            rg[d] = relax_dim(w, &rs[i], d, r->nvalues, vars, r->values);
        tir_buffer_region *x = IR_NEW(w->ctx, tir_buffer_region);
        *x = tir_region_new(w->ctx, rs[i].buffer, rs[i].ndim, rg);
        ir_vec_push(out, x);
    }
}

/* The regions of the blocks directly under s (not inside blocks). */
static void gather(wfill *w, const tir_stmt *s) {
    if (!s) return;
    switch ((tir_kind)s->kind) {
    case TIR_KIND_FOR: {
        const tir_for *f = tir_as_tir_for(s);
        tir_analyzer_bind(w->a, f->var, f->min, f->extent);
        ir_vec_push(&w->path, f->var);
        gather(w, f->body);
        w->path.n--;
        tir_analyzer_unbind(w->a, f->var);
        return;
    }
    case TIR_KIND_SEQ: {
        const tir_seq *q = tir_as_tir_seq(s);
        for (int i = 0; i < q->n; i++) gather(w, q->stmts[i]);
        return;
    }
    case TIR_KIND_IF:
        gather(w, tir_as_tir_if(s)->then_s);
        gather(w, tir_as_tir_if(s)->else_s);
        return;
    case TIR_KIND_ALLOCATE:
        ir_vec_push(&w->own, tir_as_tir_allocate(s)->buffer);
        gather(w, tir_as_tir_allocate(s)->body);
        return;
    case TIR_KIND_BLOCK_REALIZE: {
        const tir_block_realize *r = tir_as_tir_block_realize(s);
        add_regions(w, &w->reads, r->block->nreads, r->block->reads, r);
        add_regions(w, &w->writes, r->block->nwrites, r->block->writes, r);
        return;
    }
    default: return;
    }
}

static tir_buffer_region *region_array(tir_ctx *ctx, const ir_vec *v) {
    tir_buffer_region *a = IR_NEWN(ctx, tir_buffer_region, v->n + 1);
    for (int i = 0; i < v->n; i++) a[i] = *(const tir_buffer_region *)v->items[i];
    return a;
}

typedef struct fill_env {
    const tir_stmt *root; /* never filled */
    const char **names;   /* the wrappers' (refill), or NULL (first fill) */
    int n;
    ir_vec found; /* const char *: the wrappers met (first fill) */
} fill_env;

static bool is_wrapper(fill_env *env, const tir_node *n, const tir_block *b) {
    if (n == (const tir_node *)env->root) return false;
    if (!env->names) return !b->niters && !b->init && !b->nreads && !b->nwrites;
    for (int i = 0; i < env->n; i++)
        if (strcmp(env->names[i], b->name) == 0) return true;
    return false;
}

/* Block realize n with its nested wrappers filled first; itself too when
 * it is a wrapper. */
static const tir_node *fill_realize(tir_mutator *m, const tir_node *n) {
    fill_env *env = m->user;
    const tir_block_realize *r = (const tir_block_realize *)tir_mutate_default(m, n);
    const tir_block *b = r->block;
    if (!is_wrapper(env, n, b)) return (const tir_node *)r;
    if (!env->names) ir_vec_push(&env->found, b->name);
    wfill w = {.ctx = m->ctx, .a = tir_analyzer_create(m->ctx)};
    for (int i = 0; i < b->nallocs; i++) ir_vec_push(&w.own, b->allocs[i]);
    gather(&w, b->body);
    const tir_node *out = (const tir_node *)r;
    if (w.reads.n || w.writes.n || b->nreads || b->nwrites) {
        tir_block_desc d;
        tir_block_describe(b, &d);
        d.nreads = w.reads.n;
        d.reads = region_array(m->ctx, &w.reads);
        d.nwrites = w.writes.n;
        d.writes = region_array(m->ctx, &w.writes);
        out = (const tir_node *)tir_block_realize_new(m->ctx, r->nvalues, r->values, r->predicate,
                                                      tir_block_new(m->ctx, &d));
    }
    tir_analyzer_destroy(w.a);
    ir_vec_free(&w.path);
    ir_vec_free(&w.own);
    ir_vec_free(&w.reads);
    ir_vec_free(&w.writes);
    return out;
}

const tir_prim_func *sch_fill_wrapper_regions(tir_ctx *ctx, const tir_prim_func *f,
                                              const char ***names, int *n) {
    fill_env env = {f->body, names ? *names : NULL, n ? *n : 0, {0}};
    if (env.names && env.n == 0) return f;
    tir_mutator m = {.ctx = ctx, .user = &env};
    m.on[TIR_KIND_BLOCK_REALIZE] = fill_realize;
    const tir_stmt *body = tir_mutate_stmt(&m, f->body);
    if (!env.names && names) {
        *names = IR_NEWN(ctx, const char *, env.found.n + 1);
        for (int i = 0; i < env.found.n; i++) (*names)[i] = env.found.items[i];
        *n = env.found.n;
    }
    ir_vec_free(&env.found);
    if (body == f->body) return f;
    return tir_prim_func_new(ctx, f->name, f->nparams, f->params, f->buffer_map, body, f->nattrs,
                             f->attrs);
}

bool sch_is_wrapper(const tir_schedule *s, const tir_block *b) {
    for (int i = 0; b && i < s->nwrappers; i++)
        if (strcmp(s->wrappers[i], b->name) == 0) return true;
    return false;
}
