/* intset.c: symbolic interval analysis (like TVM's IntervalSet).
 *
 * Relaxing an expression over some variables gives expressions lo and hi,
 * free of those variables, with lo <= e <= hi for every value of them in
 * their bound domains; other variables stay symbolic.  The expression is
 * simplified first, so an affine one is a sum in which each relaxed
 * variable occurs once, and the interval is exact; floordiv, floormod,
 * min, max and select are handled conservatively, and what has no rule
 * falls back to constant bounds.  Schedule primitives use this for region
 * inference (compute_at, buffer compaction); the simplifier uses it to
 * prove facts over variables with symbolic ranges (i < n for i in [0, n)).
 */
#include "arith_internal.h"

/* lo/hi NULL: unbounded below/above.  point: the interval is e itself
 * (no relaxed variable occurs), with lo == hi == e. */
typedef struct iv {
    const tir_expr *lo, *hi;
    bool point;
} iv;

typedef struct relaxer {
    tir_analyzer *a;
    int nvars;
    const tir_var *const *vars;
    bool symbolic; /* relax every variable whose binding is symbolic */
    int depth;
} relaxer;

static iv iv_point(const tir_expr *e) { return (iv){e, e, true}; }
static iv iv_none(void) { return (iv){NULL, NULL, false}; }

static const tir_expr *bin(relaxer *r, tir_kind k, const tir_expr *x, const tir_expr *y) {
    if (!x || !y) return NULL;
    return tir_binop_new(r->a->ctx, k, x, y);
}
static const tir_expr *cst(relaxer *r, tir_dtype t, int64_t v) {
    return tir_int(r->a->ctx, t, v);
}

/* Constant bounds when no rule is exact enough.  Ends that only say "the
 * whole int32/int64 range" count as unbounded. */
static iv fallback(relaxer *r, const tir_expr *e) {
    tir_dtype t = e->dtype;
    if ((!tir_dtype_is_int(t) && !tir_dtype_is_bool(t)) || t.lanes != 1) return iv_none();
    tir_int_bound b = ar_bound(r->a, e), full = ar_dtype_bound(t);
    bool wide = tir_dtype_is_int(t) && t.bits >= 32;
    iv v = {NULL, NULL, false};
    if (b.min != AR_NEG_INF && !(wide && b.min <= full.min)) v.lo = cst(r, t, b.min);
    if (b.max != AR_POS_INF && !(wide && b.max >= full.max)) v.hi = cst(r, t, b.max);
    return v;
}

static bool is_relaxed(relaxer *r, const tir_var *v, const ar_bind **bind) {
    *bind = ar_lookup(r->a, v);
    if (r->symbolic) return *bind && (*bind)->symbolic;
    for (int i = 0; i < r->nvars; i++)
        if (r->vars[i] == v) return true;
    return false;
}

static iv iv_of(relaxer *r, const tir_expr *e);

/* The interval of every child is a point: then so is e's. */
static bool children_points(relaxer *r, const tir_expr *e) {
    switch ((tir_kind)e->kind) {
    case TIR_KIND_NOT: return iv_of(r, ((const tir_not *)e)->a).point;
    case TIR_KIND_CAST: return iv_of(r, ((const tir_cast *)e)->value).point;
    case TIR_KIND_BROADCAST: return iv_of(r, ((const tir_broadcast *)e)->value).point;
    case TIR_KIND_RAMP: {
        const tir_ramp *x = (const tir_ramp *)e;
        return iv_of(r, x->start).point && iv_of(r, x->stride).point;
    }
    case TIR_KIND_SELECT: {
        const tir_select *s = (const tir_select *)e;
        return iv_of(r, s->cond).point && iv_of(r, s->t).point && iv_of(r, s->f).point;
    }
    case TIR_KIND_BUFFER_LOAD: {
        const tir_buffer_load *l = (const tir_buffer_load *)e;
        for (int i = 0; i < l->nidx; i++)
            if (!iv_of(r, l->indices[i]).point) return false;
        return true;
    }
    case TIR_KIND_CALL: {
        const tir_call *c = (const tir_call *)e;
        for (int i = 0; i < c->nargs; i++)
            if (!iv_of(r, c->args[i]).point) return false;
        return true;
    }
    case TIR_KIND_LET: {
        const tir_let *l = (const tir_let *)e;
        return iv_of(r, l->value).point && iv_of(r, l->body).point;
    }
    default: break;
    }
    if (tir_kind_is_binop((tir_kind)e->kind)) {
        const tir_binop *b = (const tir_binop *)e;
        return iv_of(r, b->a).point && iv_of(r, b->b).point;
    }
    return true;
}

static iv iv_var(relaxer *r, const tir_var *v) {
    const ar_bind *b;
    if (!is_relaxed(r, v, &b)) return iv_point(&v->base);
    if (!b) return iv_none();
    if (!b->min) return fallback(r, &v->base); /* a let-style constant range */
    if (r->depth >= 16) return iv_none();      /* domains that refer to each other */
    r->depth++;
    const tir_expr *last =
        bin(r, TIR_KIND_ADD, b->min, bin(r, TIR_KIND_SUB, b->extent, cst(r, b->extent->dtype, 1)));
    iv lo = iv_of(r, b->min), hi = iv_of(r, last);
    r->depth--;
    return (iv){lo.lo, hi.hi, false};
}

/* Sign of a point expression from its constant bounds: 1, -1, or 0 (unknown). */
static int sign_of(relaxer *r, const tir_expr *e) {
    tir_int_bound b = ar_bound(r->a, e);
    if (b.min > 0) return 1;
    if (b.max < 0) return -1;
    return 0;
}

static iv iv_mul(relaxer *r, const tir_expr *e, iv x, iv y) {
    if (!y.point) {
        iv t = x;
        x = y;
        y = t;
    }
    if (!y.point) return fallback(r, e);
    tir_int_bound b = ar_bound(r->a, y.lo);
    const tir_expr *lo = bin(r, TIR_KIND_MUL, x.lo, y.lo), *hi = bin(r, TIR_KIND_MUL, x.hi, y.lo);
    if (b.min >= 0) return (iv){lo, hi, false};
    if (b.max <= 0) return (iv){hi, lo, false}; /* a negative factor swaps the ends */
    return fallback(r, e);
}

static iv iv_div(relaxer *r, const tir_binop *e, iv x, iv y) {
    tir_kind k = (tir_kind)e->base.kind;
    if (!y.point) return fallback(r, &e->base);
    int s = sign_of(r, y.lo);
    /* floor and truncating division are monotone in x for a fixed divisor */
    if (s > 0) return (iv){bin(r, k, x.lo, y.lo), bin(r, k, x.hi, y.lo), false};
    if (s < 0) return (iv){bin(r, k, x.hi, y.lo), bin(r, k, x.lo, y.lo), false};
    return fallback(r, &e->base);
}

static iv iv_mod(relaxer *r, const tir_binop *e, iv x, iv y) {
    tir_analyzer *a = r->a;
    if (!y.point || sign_of(r, y.lo) <= 0) return fallback(r, &e->base);
    if (e->base.kind == TIR_KIND_MOD && ar_bound(a, e->a).min < 0) return fallback(r, &e->base);
    tir_dtype t = e->base.dtype;
    const tir_expr *c = y.lo;
    if (x.lo && x.hi) {
        /* within one period the modulus is x shifted */
        const tir_expr *ql = ar_simplify(a, bin(r, TIR_KIND_FLOORDIV, x.lo, c));
        const tir_expr *qh = ar_simplify(a, bin(r, TIR_KIND_FLOORDIV, x.hi, c));
        if (ar_expr_eq(ql, qh)) {
            const tir_expr *lo = bin(r, TIR_KIND_FLOORMOD, x.lo, c);
            return (iv){lo, bin(r, TIR_KIND_ADD, lo, bin(r, TIR_KIND_SUB, x.hi, x.lo)), false};
        }
    }
    iv v = {cst(r, t, 0), bin(r, TIR_KIND_SUB, c, cst(r, t, 1)), false};
    /* a non-negative x smaller than the modulus bounds it too */
    if (x.hi && ar_bound(a, e->a).min >= 0) {
        const tir_expr *m = ar_simplify(a, bin(r, TIR_KIND_SUB, v.hi, x.hi));
        if (ar_bound(a, m).min >= 0) v.hi = x.hi;
    }
    return v;
}

static iv iv_of(relaxer *r, const tir_expr *e) {
    tir_kind k = (tir_kind)e->kind;
    switch (k) {
    case TIR_KIND_INT_IMM:
    case TIR_KIND_FLOAT_IMM: return iv_point(e);
    case TIR_KIND_VAR: return iv_var(r, (const tir_var *)e);
    case TIR_KIND_ADD:
    case TIR_KIND_SUB:
    case TIR_KIND_MUL:
    case TIR_KIND_DIV:
    case TIR_KIND_MOD:
    case TIR_KIND_FLOORDIV:
    case TIR_KIND_FLOORMOD:
    case TIR_KIND_MIN:
    case TIR_KIND_MAX: {
        if (!tir_dtype_is_int(e->dtype) || e->dtype.lanes != 1)
            return children_points(r, e) ? iv_point(e) : fallback(r, e);
        const tir_binop *b = (const tir_binop *)e;
        iv x = iv_of(r, b->a), y = iv_of(r, b->b);
        if (x.point && y.point) return iv_point(e);
        switch (k) {
        case TIR_KIND_ADD:
            return (iv){bin(r, k, x.lo, y.lo), bin(r, k, x.hi, y.hi), false};
        case TIR_KIND_SUB:
            return (iv){bin(r, k, x.lo, y.hi), bin(r, k, x.hi, y.lo), false};
        case TIR_KIND_MUL: return iv_mul(r, e, x, y);
        case TIR_KIND_DIV:
        case TIR_KIND_FLOORDIV: return iv_div(r, b, x, y);
        case TIR_KIND_MOD:
        case TIR_KIND_FLOORMOD: return iv_mod(r, b, x, y);
        case TIR_KIND_MIN: {
            /* an unbounded end of one side leaves the other side's */
            const tir_expr *hi = x.hi && y.hi ? bin(r, k, x.hi, y.hi) : x.hi ? x.hi : y.hi;
            return (iv){bin(r, k, x.lo, y.lo), hi, false};
        }
        default: {
            const tir_expr *lo = x.lo && y.lo ? bin(r, k, x.lo, y.lo) : x.lo ? x.lo : y.lo;
            return (iv){lo, bin(r, k, x.hi, y.hi), false};
        }
        }
    }
    case TIR_KIND_SELECT: {
        const tir_select *s = (const tir_select *)e;
        if (!tir_dtype_is_int(e->dtype) || e->dtype.lanes != 1)
            return children_points(r, e) ? iv_point(e) : fallback(r, e);
        iv c = iv_of(r, s->cond), t = iv_of(r, s->t), f = iv_of(r, s->f);
        if (c.point && t.point && f.point) return iv_point(e);
        return (iv){bin(r, TIR_KIND_MIN, t.lo, f.lo), bin(r, TIR_KIND_MAX, t.hi, f.hi), false};
    }
    case TIR_KIND_CAST: {
        const tir_cast *c = (const tir_cast *)e;
        iv x = iv_of(r, c->value);
        if (x.point) return iv_point(e);
        tir_dtype from = c->value->dtype, to = e->dtype;
        /* widening integer casts keep the order */
        if (to.lanes == 1 && to.code == TIR_TYPE_INT && from.code == TIR_TYPE_INT &&
            to.bits >= from.bits)
            return (iv){x.lo ? tir_cast_new(r->a->ctx, to, x.lo) : NULL,
                        x.hi ? tir_cast_new(r->a->ctx, to, x.hi) : NULL, false};
        return fallback(r, e);
    }
    default: return children_points(r, e) ? iv_point(e) : fallback(r, e);
    }
}

const tir_expr *ar_symbolic_bound(tir_analyzer *a, const tir_expr *e, bool upper) {
    relaxer r = {a, 0, NULL, true, 0};
    iv v = iv_of(&r, e);
    if (v.point) return NULL;
    return upper ? v.hi : v.lo;
}

/* Exact interval arithmetic (128 bits) on an expression the analyzer
 * built, from the variables' constant bounds, to tell whether one of its
 * operations can pass its dtype: 1 with [*lo, *hi], 0 when one can (the
 * simplifier would fold or bound it wrapping) or can divide by zero, -1
 * when it cannot tell (a variable of a huge or unknown range, a kind
 * without a rule).  Casts wrap by definition, and so does unsigned
 * arithmetic: those are not overflows. */
typedef __int128 i128;

static i128 i128_floordiv(i128 x, i128 y) {
    i128 q = x / y;
    if (x % y != 0 && ((x < 0) != (y < 0))) q--;
    return q;
}

static int exact_iv(tir_analyzer *a, const tir_expr *e, i128 *lo, i128 *hi) {
    tir_dtype t = e->dtype;
    if (e->kind == TIR_KIND_INT_IMM) {
        *lo = *hi = ((const tir_int_imm *)e)->value;
        return 1;
    }
    if (t.lanes != 1 || t.code == TIR_TYPE_UINT || (!tir_dtype_is_int(t) && !tir_dtype_is_bool(t)))
        return -1;
    tir_int_bound full = ar_dtype_bound(t);
    i128 x0, x1, y0, y1;
    int ox, oy;
    switch ((tir_kind)e->kind) {
    case TIR_KIND_VAR: {
        if (tir_dtype_is_bool(t)) return *lo = 0, *hi = 1, 1;
        tir_int_bound b = ar_bound(a, e);
        /* a range of a quarter of the dtype or more says little (i in [0,
           n) for an unknown n): unknown, not an overflow */
        if (!ar_bound_finite(b) || (i128)b.max - b.min >= ((i128)1 << (t.bits - 2))) return -1;
        *lo = b.min, *hi = b.max;
        return 1;
    }
    case TIR_KIND_CAST: {
        const tir_expr *c = ((const tir_cast *)e)->value;
        if (tir_dtype_is_bool(t) || (!tir_dtype_is_int(c->dtype) && !tir_dtype_is_bool(c->dtype)))
            return -1;
        if ((ox = exact_iv(a, c, &x0, &x1)) != 1) return ox;
        if (x0 < full.min || x1 > full.max) {
            /* wraps, by definition: still an interval when its ends wrap
               alike (int32(l) for l in [2^62, 2^62 + 40) is in [0, 39]) */
            int64_t w0 = ar_wrap(t, (int64_t)x0), w1 = ar_wrap(t, (int64_t)x1);
            if (x0 < INT64_MIN || x1 > INT64_MAX || x1 - x0 != (i128)w1 - w0)
                w0 = full.min, w1 = full.max; /* any value of t */
            x0 = w0, x1 = w1;
        }
        *lo = x0, *hi = x1;
        return 1;
    }
    case TIR_KIND_SELECT: {
        const tir_select *sl = (const tir_select *)e;
        int oc = exact_iv(a, sl->cond, &x0, &x1);
        if (oc == 0) return 0;
        if (oc == 1 && x0 == x1) return exact_iv(a, x0 ? sl->t : sl->f, lo, hi);
        ox = exact_iv(a, sl->t, &x0, &x1), oy = exact_iv(a, sl->f, &y0, &y1);
        if (ox == 0 || oy == 0) return 0;
        if (ox < 0 || oy < 0) return -1;
        *lo = x0 < y0 ? x0 : y0, *hi = x1 > y1 ? x1 : y1;
        return 1;
    }
    default: break;
    }
    const tir_binop *b = tir_as_tir_binop(e);
    if (!b) return -1;
    ox = exact_iv(a, b->a, &x0, &x1), oy = exact_iv(a, b->b, &y0, &y1);
    if (ox == 0 || oy == 0) return 0;
    if (tir_kind_is_compare((tir_kind)e->kind) || e->kind == TIR_KIND_AND ||
        e->kind == TIR_KIND_OR) {
        *lo = 0, *hi = 1;
        return 1;
    }
    if (ox < 0 || oy < 0) return -1;
    i128 c[4];
    switch ((tir_kind)e->kind) {
    case TIR_KIND_ADD: *lo = x0 + y0, *hi = x1 + y1; break;
    case TIR_KIND_SUB: *lo = x0 - y1, *hi = x1 - y0; break;
    case TIR_KIND_MUL:
    case TIR_KIND_MIN:
    case TIR_KIND_MAX:
    case TIR_KIND_DIV:
    case TIR_KIND_FLOORDIV: {
        bool div = e->kind == TIR_KIND_DIV || e->kind == TIR_KIND_FLOORDIV;
        /* an end that may divide by zero fails where e need not (an arm of
           a select relaxed over all of the domain: 2^54 // i for i in [0,
           39) in select(i > 1, 2^54 // i, ..)) */
        if (div && y0 <= 0 && y1 >= 0) return 0;
        i128 xs[2] = {x0, x1}, ys[2] = {y0, y1};
        for (int p = 0; p < 4; p++) {
            i128 u = xs[p / 2], v = ys[p % 2];
            c[p] = e->kind == TIR_KIND_MUL   ? u * v
                   : e->kind == TIR_KIND_MIN ? (u < v ? u : v)
                   : e->kind == TIR_KIND_MAX ? (u > v ? u : v)
                   : e->kind == TIR_KIND_DIV ? u / v
                                             : i128_floordiv(u, v);
        }
        *lo = *hi = c[0];
        for (int p = 1; p < 4; p++) {
            if (c[p] < *lo) *lo = c[p];
            if (c[p] > *hi) *hi = c[p];
        }
        break;
    }
    case TIR_KIND_FLOORMOD:
    case TIR_KIND_MOD: {
        if (y0 <= 0 && y1 >= 0) return 0; /* (as for a division) */
        i128 m = y0 > 0 ? y1 : -y0; /* largest |divisor| */
        if (e->kind == TIR_KIND_FLOORMOD) *lo = y0 > 0 ? 0 : 1 - m, *hi = y0 > 0 ? m - 1 : 0;
        else *lo = x0 >= 0 ? 0 : 1 - m, *hi = x1 <= 0 ? 0 : m - 1;
        return 1; /* never past the dtype (but INT_MIN % -1, which is 0) */
    }
    default: return -1;
    }
    return *lo < full.min || *hi > full.max ? 0 : 1;
}

bool ar_may_wrap(tir_analyzer *a, const tir_expr *e) {
    i128 lo, hi;
    return exact_iv(a, e, &lo, &hi) == 0;
}

static bool uses_relaxed(const relaxer *r, const tir_expr *e) {
    for (int i = 0; i < r->nvars; i++)
        if (tir_uses_var(e, r->vars[i])) return true;
    return false;
}

static bool relax_one(tir_analyzer *a, relaxer *r, const tir_expr *e, tir_range *out) {
    TIR_ASSERT(tir_dtype_is_int(e->dtype) && e->dtype.lanes == 1);
    const tir_expr *s = ar_simplify(a, e);
    iv v = iv_of(r, s);
    if (v.point) {
        out->min = s;
        out->extent = tir_int(a->ctx, s->dtype, 1);
        return true;
    }
    if (!v.lo || !v.hi) return false;
    /* the ends hold the relaxed variables' ends, and may pass the dtype
     * where e does not (an interval is wider than the values, an arm of a
     * select runs on part of the domain); the simplifier folds and bounds
     * them wrapping, so an end that may overflow gives up rather than give
     * a wrong range ((i // 64 * -2 + i * i) * 7 - 2147483622 for i in [-2,
     * 31): the lower end -434 - 2147483622 became 2147483254;
     * select(i != 2147483622, i, j) - 2147483646 relaxed over j in [-30,
     * 13) had min(i, -30) - 2147483646 for its lower end; the index
     * fuzzer). */
    if (ar_may_wrap(a, v.lo) || ar_may_wrap(a, v.hi)) return false;
    const tir_expr *lo = ar_simplify(a, v.lo), *hi = ar_simplify(a, v.hi);
    /* simplifying can bring a relaxed variable back: a variable of a
     * one-iteration range is its start (j in [i*6 - 5, +1) is i*6 - 5), so
     * k in [j*4 - 7, +8) relaxed over i and k gave i*24 - 27; relax such
     * an end again (the index fuzzer) */
    for (int it = 0; it < 4 && (uses_relaxed(r, lo) || uses_relaxed(r, hi)); it++) {
        iv l = iv_of(r, lo), h = iv_of(r, hi);
        if (!l.lo || !h.hi || ar_may_wrap(a, l.lo) || ar_may_wrap(a, h.hi)) return false;
        lo = ar_simplify(a, l.lo);
        hi = ar_simplify(a, h.hi);
    }
    if (uses_relaxed(r, lo) || uses_relaxed(r, hi)) return false;
    const tir_expr *n = tir_binop_new(a->ctx, TIR_KIND_SUB, hi, lo);
    n = tir_binop_new(a->ctx, TIR_KIND_ADD, n, tir_int(a->ctx, s->dtype, 1));
    /* hi - lo + 1 is at least 1; a range of more values than the dtype
     * holds (select(c, 8, -2147483642) in int32: 2^31 + 3 of them) wraps
     * to a count <= 0, and no extent is right: unbounded (the index
     * fuzzer); so does one that may, for the variables' bounds
     * (select(c, -2147483648, 3 * i) for i in [-3, 1)) */
    if (ar_may_wrap(a, n)) return false;
    n = ar_simplify(a, n);
    if (ar_bound(a, n).max < 1) return false;
    out->min = lo;
    out->extent = n;
    return true;
}

bool tir_analyzer_relax(tir_analyzer *a, const tir_expr *e, int nvars,
                        const tir_var *const *vars, tir_range *out) {
    ar_enter(a);
    relaxer r = {a, nvars, vars, false, 0};
    bool ok = relax_one(a, &r, e, out);
    ar_leave(a);
    return ok;
}

bool tir_analyzer_relax_region(tir_analyzer *a, int nidx, const tir_expr *const *indices,
                               int nvars, const tir_var *const *vars, tir_range *out) {
    ar_enter(a);
    relaxer r = {a, nvars, vars, false, 0};
    bool ok = true;
    for (int i = 0; i < nidx && ok; i++) ok = relax_one(a, &r, indices[i], &out[i]);
    ar_leave(a);
    return ok;
}
