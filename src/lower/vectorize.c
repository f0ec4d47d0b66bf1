/* vectorize.c: vectorized loops become vector expressions (TVM:
 * VectorizeLoop).  A loop `for v in vectorized(L)` whose body is one store
 * (possibly under a condition that does not use v) turns into one store of
 * L lanes (an if/else around stores, as relax_guards' zero fills, is kept
 * when its condition is the same for every lane, also a bound that is a
 * multiple of L around a copy into shared or local memory: on_lane_cmp):
 * v becomes Ramp(min, 1, L), a load whose flat index moves by a
 * constant c per step of v becomes a load at Ramp(base, c, L) (c == 0: a
 * Broadcast of the scalar load), scalar operands are broadcast.  The step is
 * found by simplifying idx(v+1) - idx(v) with v's range known, so indices
 * are affine within the vector; codegen then emits one 128-bit access when
 * it proves the alignment of a stride-1 ramp (docs/lowered-ir.md, 4).  Any
 * other body (several statements, a condition on v, a call, a non-constant
 * step, a store whose lanes would see each other: its value reading the
 * stored buffer at another element, `S[v + 1] = S[v]`, its index or its
 * guard reading it at all) falls back to an unrolled loop with the same
 * meaning: unrolled, so
 * that a per-thread array indexed by v keeps constant indices and stays in
 * registers (a serial loop would index it at run time, which puts it in
 * local memory).
 */
#include "lower_internal.h"

typedef struct vz {
    lower_state *st;
    tir_analyzer *an;
    const tir_prim_func *f;
    tir_status status; /* a malformed annotation */
} vz;

typedef struct vloop {
    vz *z;
    const tir_var *v;
    const tir_expr *min;
    int lanes;
    bool global_guarded; /* the vectorize_global_guarded annotation */
} vloop;

/* ---- floordiv/floormod of `multiple of g + lane part` (0 <= lane part < g):
 *   floordiv(g*y + r, g*k) = floordiv(y, k)
 *   floormod(g*y + r, g*k) = g*floormod(y, k) + r
 * which turns the fused-index arithmetic of a cooperative fetch into a form
 * whose step per lane is visible (and whose alignment codegen can prove). */

typedef struct term {
    int64_t coef;
    const tir_expr *e;
} term;

enum { MAXTERMS = 32 };

static bool lin(const tir_expr *e, int64_t coef, term *t, int *n) {
    int64_t c;
    if (*n >= MAXTERMS) return false;
    switch ((tir_kind)e->kind) {
    case TIR_KIND_ADD: {
        const tir_binop *b = (const tir_binop *)e;
        return lin(b->a, coef, t, n) && lin(b->b, coef, t, n);
    }
    case TIR_KIND_SUB: {
        const tir_binop *b = (const tir_binop *)e;
        return lin(b->a, coef, t, n) && lin(b->b, -coef, t, n);
    }
    case TIR_KIND_MUL: {
        const tir_binop *b = (const tir_binop *)e;
        if (tir_expr_const_int(b->b, &c)) return lin(b->a, coef * c, t, n);
        if (tir_expr_const_int(b->a, &c)) return lin(b->b, coef * c, t, n);
        break;
    }
    default: break;
    }
    t[(*n)++] = (term){coef, e};
    return true;
}

static const tir_expr *sum_terms(tir_ctx *ctx, tir_dtype t, const term *ts, int n, int64_t div) {
    const tir_expr *s = NULL;
    for (int i = 0; i < n; i++) {
        int64_t c = ts[i].coef / div;
        const tir_expr *x = c == 1 ? ts[i].e : tir_mul(ctx, ts[i].e, tir_int(ctx, t, c));
        s = s ? tir_add(ctx, s, x) : x;
    }
    return s ? s : tir_int(ctx, t, 0);
}

static const tir_node *on_divmod(tir_mutator *m, const tir_node *n) {
    vloop *l = m->user;
    const tir_binop *b = (const tir_binop *)tir_mutate_default(m, n);
    int64_t d;
    if (!tir_expr_const_int(b->b, &d) || d <= 0 || !tir_uses_var(b->a, l->v))
        return (const tir_node *)b;
    term ts[MAXTERMS], outer[MAXTERMS], lane[MAXTERMS];
    int nt = 0, no = 0, nl = 0;
    if (!lin(b->a, 1, ts, &nt)) return (const tir_node *)b;
    int64_t g = d;
    for (int i = 0; i < nt; i++) {
        int64_t c;
        if (tir_expr_const_int(ts[i].e, &c)) {
            ts[i] = (term){ts[i].coef * c, tir_int(m->ctx, b->a->dtype, 1)};
        }
        if (tir_uses_var(ts[i].e, l->v))
            lane[nl++] = ts[i];
        else {
            outer[no++] = ts[i];
            g = ir_gcd64(g, ts[i].coef);
        }
    }
    if (g <= 1 || nl == 0) return (const tir_node *)b;
    tir_ctx *ctx = m->ctx;
    const tir_expr *r = sum_terms(ctx, b->a->dtype, lane, nl, 1);
    tir_analyzer_bind(l->z->an, l->v, l->min, tir_int(ctx, l->min->dtype, l->lanes));
    tir_int_bound rb = tir_analyzer_const_bound(l->z->an, r);
    if (rb.min < 0 || rb.max >= g) return (const tir_node *)b;
    const tir_expr *y = sum_terms(ctx, b->a->dtype, outer, no, g);
    const tir_expr *k = tir_int(ctx, b->a->dtype, d / g);
    if (b->base.kind == TIR_KIND_FLOORDIV) return (const tir_node *)tir_floordiv(ctx, y, k);
    return (const tir_node *)tir_add(
        ctx, tir_mul(ctx, tir_floormod(ctx, y, k), tir_int(ctx, b->a->dtype, g)), r);
}

static const tir_expr *split_lanes(vloop *l, const tir_expr *idx) {
    tir_mutator m = {.ctx = l->z->st->ctx, .user = l};
    m.on[TIR_KIND_FLOORDIV] = on_divmod;
    m.on[TIR_KIND_FLOORMOD] = on_divmod;
    return tir_mutate_expr(&m, idx);
}

/* `a < c` (or `a <= c - 1`) with c a constant multiple of L is
 * `floordiv(a, L) < c / L`, for every integer a (floor division): with a =
 * L*y + v, v the lane, the guard of a ragged column tile at a column count
 * divisible by the vector (N = 4224, 256-wide tiles, 8 lanes) is then
 * y < c / L, the same for every lane, and the zero-filling copy stays one
 * vector (a cp.async with a source size) instead of L scalar loads. */
static const tir_node *on_lane_cmp(tir_mutator *m, const tir_node *n) {
    vloop *l = m->user;
    const tir_binop *b = (const tir_binop *)tir_mutate_default(m, n);
    int64_t c;
    if (!tir_uses_var(b->a, l->v) || !tir_expr_const_int(b->b, &c)) return (const tir_node *)b;
    if (b->base.kind == TIR_KIND_LE) c += 1;
    if (c % l->lanes) return (const tir_node *)b;
    tir_ctx *ctx = m->ctx;
    const tir_expr *q = tir_floordiv(ctx, b->a, tir_int(ctx, b->a->dtype, l->lanes));
    return (const tir_node *)tir_lt(ctx, q, tir_int(ctx, b->b->dtype, c / l->lanes));
}

static const tir_expr *lane_cmp(vloop *l, const tir_expr *cond) {
    tir_mutator m = {.ctx = l->z->st->ctx, .user = l};
    m.on[TIR_KIND_LT] = on_lane_cmp;
    m.on[TIR_KIND_LE] = on_lane_cmp;
    return tir_mutate_expr(&m, cond);
}

static const tir_expr *at(vloop *l, const tir_expr *e, const tir_expr *val) {
    return (const tir_expr *)tir_substitute(l->z->st->ctx, e, 1, &l->v, &val);
}

/* The constant step of idx per step of v, or false. */
static bool step_of(vloop *l, const tir_expr *idx, int64_t *c) {
    tir_ctx *ctx = l->z->st->ctx;
    const tir_expr *v = (const tir_expr *)l->v;
    const tir_expr *one = tir_int(ctx, v->dtype, 1);
    const tir_expr *d = tir_sub(ctx, at(l, idx, tir_add(ctx, v, one)), idx);
    /* v ranges over all but the last lane: the step from each lane to the next */
    tir_analyzer_bind(l->z->an, l->v, l->min, tir_int(ctx, v->dtype, l->lanes - 1));
    d = tir_analyzer_simplify(l->z->an, d);
    return tir_expr_const_int(d, c);
}

static const tir_expr *bcast(vloop *l, const tir_expr *e) {
    return e->dtype.lanes == 1 ? tir_broadcast_new(l->z->st->ctx, e, l->lanes) : e;
}

/* e with L lanes (or e itself when it does not depend on v), NULL when it
 * cannot be vectorized. */
static const tir_expr *vec(vloop *l, const tir_expr *e) {
    tir_ctx *ctx = l->z->st->ctx;
    if (!tir_uses_var(e, l->v)) return e;
    tir_kind k = (tir_kind)e->kind;
    if (k == TIR_KIND_VAR) return tir_ramp_new(ctx, l->min, tir_int(ctx, e->dtype, 1), l->lanes);
    if (tir_kind_is_binop(k) && !tir_kind_is_compare(k) && k != TIR_KIND_AND && k != TIR_KIND_OR) {
        const tir_binop *b = (const tir_binop *)e;
        if (k == TIR_KIND_FLOORDIV || k == TIR_KIND_FLOORMOD || k == TIR_KIND_DIV ||
            k == TIR_KIND_MOD) {
            if (tir_dtype_is_int(e->dtype)) return NULL; /* index math: handled via loads */
        }
        const tir_expr *a = vec(l, b->a), *c = vec(l, b->b);
        if (!a || !c) return NULL;
        return tir_binop_new(ctx, k, bcast(l, a), bcast(l, c));
    }
    if (k == TIR_KIND_CAST) {
        const tir_cast *c = (const tir_cast *)e;
        const tir_expr *a = vec(l, c->value);
        if (!a) return NULL;
        return tir_cast_new(ctx, tir_dtype_with_lanes(c->base.dtype, l->lanes), bcast(l, a));
    }
    if (k == TIR_KIND_BUFFER_LOAD) {
        const tir_buffer_load *ld = (const tir_buffer_load *)e;
        if (ld->nidx != 1 || ld->indices[0]->dtype.lanes != 1) return NULL;
        int64_t c;
        const tir_expr *idx = split_lanes(l, ld->indices[0]);
        if (!step_of(l, idx, &c)) return NULL;
        const tir_expr *base = tir_analyzer_simplify(l->z->an, at(l, idx, l->min));
        if (c == 0) return tir_load(ctx, ld->buffer, 1, &base);
        const tir_expr *r = tir_ramp_new(ctx, base, tir_int(ctx, base->dtype, c), l->lanes);
        return tir_load(ctx, ld->buffer, 1, &r);
    }
    return NULL;
}

/* A load of buf other than at the element `idx` names (same) in an
 * expression: the vector reads every lane before it writes any, the loop
 * lane after lane. */
typedef struct other_read {
    const tir_buffer *buf;
    const tir_expr *same;
    bool found;
} other_read;

static bool other_pre(tir_visitor *v, const tir_node *n) {
    other_read *o = v->user;
    const tir_buffer_load *ld = n->kind == TIR_KIND_BUFFER_LOAD ? (const tir_buffer_load *)n : NULL;
    if (ld && ld->buffer == o->buf &&
        !(o->same && ld->nidx == 1 && tir_struct_equal(ld->indices[0], o->same)))
        o->found = true;
    return !o->found;
}

static bool reads_other(const tir_expr *e, const tir_buffer *buf, const tir_expr *same) {
    other_read o = {buf, same, false};
    tir_visitor v = {.pre = other_pre, .user = &o};
    tir_visit(&v, e);
    return o.found;
}

/* Whether a guard reads what a store anywhere under it writes (lane v's
 * guard would see lane v - 1's store; an inner If hid it from a check of
 * the branches alone: review, sixteenth session). */
typedef struct guard_scan {
    const tir_expr *cond;
    bool found;
} guard_scan;

static bool guard_pre(tir_visitor *v, const tir_node *n) {
    guard_scan *g = v->user;
    if (n->kind == TIR_KIND_BUFFER_STORE &&
        lower_reads_buffer(g->cond, ((const tir_buffer_store *)n)->buffer))
        g->found = true;
    return !g->found && n->kind != TIR_KIND_BUFFER_STORE;
}

static bool guard_reads_stored(const tir_if *i) {
    guard_scan g = {i->cond, false};
    tir_visitor v = {.pre = guard_pre, .user = &g};
    tir_visit(&v, i->then_s);
    if (i->else_s) tir_visit(&v, i->else_s);
    return g.found;
}

static const tir_stmt *vec_store(vloop *l, const tir_stmt *s) {
    tir_ctx *ctx = l->z->st->ctx;
    const tir_buffer_store *st = tir_as_tir_buffer_store(s);
    if (st) {
        if (st->nidx != 1) return NULL;
        /* `S[v + 1] = S[v]`: lane v + 1 reads what lane v stored; a load
         * of the lane's own element (`S[v] = S[v] + x`) is safe */
        if (reads_other(st->value, st->buffer, st->indices[0])) return NULL;
        /* `S[S[0] + v] = x`: lane 0's store moves the others' element */
        if (lower_reads_buffer(st->indices[0], st->buffer)) return NULL;
        int64_t c;
        const tir_expr *idx = split_lanes(l, st->indices[0]);
        if (!step_of(l, idx, &c) || c == 0) return NULL;
        const tir_expr *val = vec(l, st->value);
        if (!val) return NULL;
        const tir_expr *base = tir_analyzer_simplify(l->z->an, at(l, idx, l->min));
        const tir_expr *r = tir_ramp_new(ctx, base, tir_int(ctx, base->dtype, c), l->lanes);
        return tir_store(ctx, st->buffer, bcast(l, val), 1, &r);
    }
    const tir_if *i = tir_as_tir_if(s);
    if (i && guard_reads_stored(i)) return NULL;
    if (i && !i->else_s) {
        /* bounds predicates that hold for every lane (divisible shapes) */
        tir_analyzer_bind(l->z->an, l->v, l->min, tir_int(ctx, l->min->dtype, l->lanes));
        int64_t cv;
        if (tir_expr_const_int(tir_analyzer_simplify(l->z->an, i->cond), &cv) && cv)
            return vec_store(l, i->then_s);
    }
    if (i) {
        /* A guard the same for every lane once its index arithmetic is
         * split (a row guard of a fused fetch, i*128 + (t*4 + v) // 8 <
         * M, is i*128 + t // 2 < M), around the store or a zero fill. */
        tir_analyzer_bind(l->z->an, l->v, l->min, tir_int(ctx, l->min->dtype, l->lanes));
        const tir_expr *cond = tir_analyzer_simplify(l->z->an, split_lanes(l, i->cond));
        /* Not around a store to global memory unless the loop says so
         * (vectorize_global_guarded): the guarded 16-byte stores of a
         * ragged C made ptxas spill at Step 8's 128-register cap
         * (4096 x 4100 x 4096: 0.92 -> 0.58x cuBLAS, run 56) where they
         * gained 2-75% elsewhere; copies into shared and local memory
         * only gain (docs/performance.md). */
        const tir_buffer_store *ts = tir_as_tir_buffer_store(i->then_s);
        bool global = ts && ts->buffer->scope == TIR_SCOPE_GLOBAL;
        if (tir_uses_var(cond, l->v) && (!global || l->global_guarded))
            cond = tir_analyzer_simplify(l->z->an, split_lanes(l, lane_cmp(l, i->cond)));
        if (tir_uses_var(cond, l->v)) return NULL;
        const tir_stmt *t = vec_store(l, i->then_s);
        const tir_stmt *e = i->else_s ? vec_store(l, i->else_s) : NULL;
        if (!t || (i->else_s && !e)) return NULL;
        return tir_if_new(ctx, cond, t, e);
    }
    return NULL;
}

static const tir_node *on_for(tir_mutator *m, const tir_node *n) {
    vz *z = m->user;
    const tir_for *f = (const tir_for *)n;
    tir_analyzer_bind(z->an, f->var, f->min, f->extent);
    const tir_for *r = (const tir_for *)tir_mutate_default(m, n);
    if (r->kind != TIR_FOR_VECTORIZED) return (const tir_node *)r;
    int64_t lanes;
    if (tir_expr_const_int(r->extent, &lanes) && lanes >= 2 && lanes <= 64) {
        const tir_annot *g =
            tir_annots_get(r->nannots, r->annots, TIR_ANN_VECTORIZE_GLOBAL_GUARDED);
        if (g && (g->kind != TIR_ANNOT_INT || (g->i != 0 && g->i != 1)) && z->status == TIR_OK)
            /* a misspelt intent should not silently change the code */
            z->status = lower_fail_marked(z->st, z->f, 1, (const void *[]){f},
                                          "vectorize: loop '%s': vectorize_global_guarded must "
                                          "be the int 0 or 1",
                                          f->var->name);
        vloop l = {z, r->var, r->min, (int)lanes, g && g->kind == TIR_ANNOT_INT && g->i == 1};
        const tir_stmt *s = vec_store(&l, r->body);
        tir_analyzer_bind(z->an, f->var, f->min, f->extent);
        if (s) return (const tir_node *)s;
    }
    return (const tir_node *)tir_for_new(m->ctx, r->var, r->min, r->extent, TIR_FOR_UNROLLED, NULL,
                                         r->nannots, r->annots, r->body);
}

tir_status lower_vectorize(lower_state *st, const tir_prim_func *in, const tir_prim_func **out) {
    vz z = {st, tir_analyzer_create(st->ctx), in, TIR_OK};
    tir_mutator m = {.ctx = st->ctx, .user = &z};
    m.on[TIR_KIND_FOR] = on_for;
    const tir_stmt *body = tir_mutate_stmt(&m, in->body);
    tir_analyzer_destroy(z.an);
    if (z.status != TIR_OK) return z.status;
    *out = lower_with_body(st->ctx, in, body);
    return TIR_OK;
}
