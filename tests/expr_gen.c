/* expr_gen.c: the random elementwise functions of expr_gen.h.
 *
 * Signed integer subexpressions carry an interval that holds for every
 * input the case can draw; an operation is emitted only when its interval
 * fits the dtype (signed overflow is undefined: the simplifier assumes none), so
 * a wider tree comes from casts and min/max/select rather than from
 * overflowing arithmetic.  uint8 wraps (defined), so it takes any
 * operation.  Divisors that may be 0 (or -1 where the dividend may be the
 * dtype's minimum) are replaced by a constant through a select, which the
 * IR evaluates lazily.  A float reaches an int only through a select that
 * keeps it inside the int's range (NaN fails the test and gives 0).
 */
#include "expr_gen.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "minitir/runtime.h"
#include "minitir/schedule.h"

typedef __int128 i128;

typedef struct gen {
    tir_ctx *ctx;
    uint64_t s;
    eg_case *c;
    const tir_buffer *bufs[EG_MAX_IN];
    int64_t lo[EG_MAX_IN], hi[EG_MAX_IN]; /* integer inputs' ranges */
    const tir_expr *idx;                  /* the element index */
    /* EG_GATHER: the stream of random input indices (NULL: inputs are
     * read at idx), and the loop variables they are built from */
    struct gen *gather;
    const tir_var *bv, *tv, *vv; /* vv NULL unless vectorized */
    int tx;
    int ngathered; /* (the stream's) inputs read at a random index */
    /* EG_LOCALS: the local array leaves may read (NULL: none), and the
     * innermost serial/unrolled loop variable (NULL: none) */
    const tir_buffer *L;
    const tir_var *jv;
    /* let-bound variables in scope */
    int nlet;
    const tir_var *lv[8];
    int64_t llo[8], lhi[8];
} gen;

typedef struct gv {
    const tir_expr *e;
    int64_t lo, hi; /* integers: every value is in [lo, hi] */
} gv;

static uint64_t rnd(gen *g) {
    uint64_t z = (g->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static int pick(gen *g, int n) { return (int)(rnd(g) % (uint64_t)n); }

static const tir_dtype all_t[] = {TIR_I8, TIR_U8, TIR_I32, TIR_I64,
                                  TIR_F16, TIR_BF16, TIR_F32, TIR_F64};
enum { NT = (int)(sizeof all_t / sizeof all_t[0]) };

static bool is_float(tir_dtype t) { return tir_dtype_is_float(t); }
static bool is_bool(tir_dtype t) { return t.code == TIR_TYPE_BOOL; }
static bool is_u8(tir_dtype t) { return t.code == TIR_TYPE_UINT; }
static bool same_t(tir_dtype a, tir_dtype b) {
    return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes;
}
static int64_t tmin(tir_dtype t) {
    if (is_bool(t) || is_u8(t)) return 0;
    return t.bits == 64 ? INT64_MIN : -((int64_t)1 << (t.bits - 1));
}
static int64_t tmax(tir_dtype t) {
    if (is_bool(t)) return 1;
    if (is_u8(t)) return 255;
    return t.bits == 64 ? INT64_MAX : ((int64_t)1 << (t.bits - 1)) - 1;
}
static bool fits(tir_dtype t, i128 lo, i128 hi) { return lo >= tmin(t) && hi <= tmax(t); }
static gv full(tir_dtype t, const tir_expr *e) { return (gv){e, tmin(t), tmax(t)}; }

int eg_bytes(tir_dtype t) { return t.bits <= 8 ? 1 : t.bits / 8; }

void *eg_alloc(size_t bytes) {
    void *p = aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (p) memset(p, 0, bytes);
    return p;
}

static const tir_expr *iconst(gen *g, tir_dtype t, int64_t v) { return tir_int(g->ctx, t, v); }

/* An integer constant of t: small, or one of the extremes. */
static gv int_leaf_const(gen *g, tir_dtype t) {
    int64_t v;
    switch (pick(g, 6)) {
    case 0: v = tmin(t); break;
    case 1: v = tmax(t); break;
    case 2: v = is_u8(t) ? 200 + pick(g, 56) : -(int64_t)pick(g, 10); break;
    default: v = pick(g, 10); break;
    }
    return (gv){iconst(g, t, v), v, v};
}

static const double fmenu[] = {0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 7.75, -100.25, 1e-3,
                               65504.0, -65504.0, 1e30, -1e30, 1e-40, 6e-8, 1e300,
                               INFINITY, -INFINITY, NAN};
enum { NFM = (int)(sizeof fmenu / sizeof fmenu[0]) };

/* A float constant as t can hold it (a value past its range rounds as a
 * conversion would; tir_float rounds to t). */
static const tir_expr *float_const(gen *g, tir_dtype t) {
    double v = pick(g, 3) ? fmenu[pick(g, NFM)] : (double)(pick(g, 2001) - 1000) / 8.0;
    return tir_float(g->ctx, t, v);
}

static gv gen_t(gen *g, tir_dtype t, int depth);
static const tir_expr *gen_bool(gen *g, int depth);

static tir_dtype any_t(gen *g) { return all_t[pick(g, NT)]; }

/* floor(a / b) and a - b * floor(a / b) for b != 0 */
static i128 floor_div(i128 a, i128 b) {
    i128 q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

/* A random int32 expression over the loop variables b, t (and v), with
 * bounds: every value is in [lo, hi]. */
static gv index_expr(gen *g, int depth) {
    tir_ctx *C = g->ctx;
    int op = depth <= 0 ? 0 : pick(g, 8);
    if (op == 0) { /* a variable, the element index, or a constant */
        int k = pick(g, g->vv ? 5 : 4);
        if (k == 0) return (gv){&g->bv->base, 0, 1};
        if (k == 1) return (gv){&g->tv->base, 0, g->tx - 1};
        if (k == 2) return (gv){g->idx, 0, EG_N - 1};
        if (k == 4) return (gv){&g->vv->base, 0, 3};
        int64_t c = (int64_t)pick(g, 141) - 70;
        return (gv){tir_i32(C, (int32_t)c), c, c};
    }
    gv a = index_expr(g, depth - 1);
    if (op <= 2) { /* add, sub */
        gv b = index_expr(g, depth - 1);
        if (op == 1) return (gv){tir_add(C, a.e, b.e), a.lo + b.lo, a.hi + b.hi};
        return (gv){tir_sub(C, a.e, b.e), a.lo - b.hi, a.hi - b.lo};
    }
    int64_t c = 1 + pick(g, 9);
    if (pick(g, 3) == 0) c = -c;
    if (op == 3) { /* times a constant */
        int64_t p = a.lo * c, q = a.hi * c;
        return (gv){tir_mul(C, a.e, tir_i32(C, (int32_t)c)), p < q ? p : q, p < q ? q : p};
    }
    if (op <= 6) { /* floordiv, floormod, truncdiv, truncmod by a constant */
        static const tir_kind ks[] = {TIR_KIND_FLOORDIV, TIR_KIND_FLOORMOD, TIR_KIND_DIV,
                                      TIR_KIND_MOD};
        tir_kind k = ks[op - 4 + (op == 6 ? pick(g, 2) : 0)];
        const tir_expr *e = tir_binop_new(C, k, a.e, tir_i32(C, (int32_t)c));
        int64_t m = c < 0 ? -c : c, p, q;
        if (k == TIR_KIND_FLOORDIV || k == TIR_KIND_DIV) { /* monotone in a */
            p = (int64_t)(k == TIR_KIND_DIV ? a.lo / c : floor_div(a.lo, c));
            q = (int64_t)(k == TIR_KIND_DIV ? a.hi / c : floor_div(a.hi, c));
            return (gv){e, p < q ? p : q, p < q ? q : p};
        }
        if (k == TIR_KIND_FLOORMOD) return (gv){e, c > 0 ? 0 : c + 1, c > 0 ? c - 1 : 0};
        return (gv){e, a.lo >= 0 ? 0 : -(m - 1), a.hi <= 0 ? 0 : m - 1}; /* sign of a */
    }
    gv b = index_expr(g, depth - 1);
    int64_t lo = a.lo < b.lo ? a.lo : b.lo, hi = a.hi > b.hi ? a.hi : b.hi;
    switch (pick(g, 3)) {
    case 0: return (gv){tir_min(C, a.e, b.e), lo, a.hi < b.hi ? a.hi : b.hi};
    case 1: return (gv){tir_max(C, a.e, b.e), a.lo > b.lo ? a.lo : b.lo, hi};
    default: {
        gv x = index_expr(g, depth - 1), y = index_expr(g, depth - 1);
        return (gv){tir_select_new(C, tir_lt(C, x.e, y.e), a.e, b.e), lo, hi};
    }
    }
}

/* An input index in [0, EG_N): a random expression, through a floormod
 * unless its bounds already prove it in range. */
static const tir_expr *gather_index(gen *g) {
    gv h = index_expr(g, 1 + pick(g, 3));
    if (h.lo >= 0 && h.hi < EG_N) return h.e;
    return tir_binop_new(g->ctx, TIR_KIND_FLOORMOD, h.e, tir_i32(g->ctx, EG_N));
}

/* An element of the local array: a constant index, or one of the loop
 * variable (mod 8). */
static gv local_leaf(gen *g) {
    tir_ctx *C = g->ctx;
    const tir_expr *i = tir_i32(C, pick(g, 8));
    if (g->jv && pick(g, 2))
        i = tir_binop_new(C, TIR_KIND_FLOORMOD, tir_add(C, &g->jv->base, tir_i32(C, pick(g, 8))),
                          tir_i32(C, 8));
    return full(g->L->dtype, tir_load(C, g->L, 1, &i));
}

/* Inputs and let variables of type t. */
static bool leaf_var(gen *g, tir_dtype t, gv *out) {
    if (g->L && same_t(g->L->dtype, t) && pick(g, 3) == 0) {
        *out = local_leaf(g);
        return true;
    }
    int cand[EG_MAX_IN + 8], n = 0;
    for (int k = 0; k < g->c->nin; k++)
        if (same_t(g->c->in_t[k], t)) cand[n++] = k;
    for (int k = 0; k < g->nlet; k++)
        if (same_t(g->lv[k]->base.dtype, t)) cand[n++] = EG_MAX_IN + k;
    if (!n) return false;
    int k = cand[pick(g, n)];
    if (k < EG_MAX_IN) {
        const tir_expr *i = g->idx;
        if (g->gather && pick(g->gather, 3) != 0) {
            i = gather_index(g->gather);
            g->gather->ngathered++;
        }
        *out = (gv){tir_load(g->ctx, g->bufs[k], 1, &i), g->lo[k], g->hi[k]};
    } else {
        k -= EG_MAX_IN;
        *out = (gv){&g->lv[k]->base, g->llo[k], g->lhi[k]};
    }
    return true;
}

/* A float of type `from` cast to integer type t: only in-range values
 * reach the cast, others (and NaN) give 0. */
static gv float_to_int(gen *g, tir_dtype t, int depth, tir_dtype from) {
    tir_ctx *C = g->ctx;
    const tir_expr *x = gen_t(g, from, depth - 1).e;
    /* truncation of any x with lo < x < hi is in range */
    double lo = (double)tmin(t) - 1.0, hi = (double)tmax(t) + 1.0;
    if (t.bits >= 32 && !is_u8(t)) lo = (double)tmin(t), hi = -(double)tmin(t);
    /* bounds t's float type cannot hold become its largest finite values;
     * a bound that rounded inward would let an out-of-range value pass */
    double fmax = from.bits == 16 ? (from.code == TIR_TYPE_BFLOAT ? 3.3895313892515355e38 : 65504.0)
                                  : from.bits == 32 ? 3.4028234663852886e38 : 1.79e308;
    if (hi > fmax) hi = fmax;
    if (lo < -fmax) lo = -fmax;
    const tir_expr *ok;
    if (t.bits >= 32 && !is_u8(t))
        ok = tir_and(C, tir_ge(C, x, tir_float(C, from, lo)), tir_lt(C, x, tir_float(C, from, hi)));
    else
        ok = tir_and(C, tir_gt(C, x, tir_float(C, from, lo)), tir_lt(C, x, tir_float(C, from, hi)));
    const tir_expr *safe = tir_select_new(C, ok, x, tir_float(C, from, 0.0));
    return full(t, tir_cast_new(C, t, safe));
}

/* A value of t from another type. */
static gv cast_to(gen *g, tir_dtype t, int depth) {
    tir_ctx *C = g->ctx;
    if (pick(g, 6) == 0) { /* from bool */
        const tir_expr *b = gen_bool(g, depth - 1);
        return is_float(t) ? (gv){tir_cast_new(C, t, b), 0, 0} : (gv){tir_cast_new(C, t, b), 0, 1};
    }
    tir_dtype from = any_t(g);
    if (is_float(t)) return (gv){tir_cast_new(C, t, gen_t(g, from, depth - 1).e), 0, 0};
    if (is_float(from)) return float_to_int(g, t, depth, from);
    gv v = gen_t(g, from, depth - 1);
    const tir_expr *e = tir_cast_new(C, t, v.e);
    return fits(t, v.lo, v.hi) ? (gv){e, v.lo, v.hi} : full(t, e);
}

static gv leaf(gen *g, tir_dtype t, int depth) {
    gv v;
    if (pick(g, 4) && leaf_var(g, t, &v)) return v;
    if (depth > 0 && pick(g, 2)) return cast_to(g, t, depth);
    if (is_float(t)) return (gv){float_const(g, t), 0, 0};
    return int_leaf_const(g, t);
}

/* A divisor of t that is never 0, nor -1 when the dividend may be t's
 * minimum (that quotient overflows). */
static gv divisor(gen *g, tir_dtype t, int depth, bool no_minus1) {
    tir_ctx *C = g->ctx;
    gv d = gen_t(g, t, depth);
    bool zero = d.lo <= 0 && d.hi >= 0, m1 = no_minus1 && d.lo <= -1 && d.hi >= -1;
    if (!zero && !m1) return d;
    static const int64_t cs[] = {1, 2, 3, 5, 7, -3, -1};
    int64_t c = cs[pick(g, is_u8(t) ? 5 : (no_minus1 ? 6 : 7))];
    const tir_expr *bad = tir_eq(C, d.e, iconst(g, t, 0));
    if (m1) bad = tir_or(C, bad, tir_eq(C, d.e, iconst(g, t, -1)));
    const tir_expr *e = tir_select_new(C, bad, iconst(g, t, c), d.e);
    return (gv){e, d.lo < c ? d.lo : c, d.hi > c ? d.hi : c};
}

static i128 maxabs(gv v) {
    i128 a = v.lo < 0 ? -(i128)v.lo : v.lo, b = v.hi < 0 ? -(i128)v.hi : v.hi;
    return a > b ? a : b;
}

static gv clampi(tir_dtype t, const tir_expr *e, i128 lo, i128 hi) {
    if (lo < tmin(t)) lo = tmin(t);
    if (hi > tmax(t)) hi = tmax(t);
    return (gv){e, (int64_t)lo, (int64_t)hi};
}

static gv int_op(gen *g, tir_dtype t, int depth) {
    tir_ctx *C = g->ctx;
    for (int tries = 0; tries < 4; tries++) {
        int op = pick(g, 9);
        gv a = gen_t(g, t, depth - 1);
        if (op <= 2) { /* add, sub, mul */
            gv b = gen_t(g, t, depth - 1);
            i128 lo, hi;
            if (op == 0) lo = (i128)a.lo + b.lo, hi = (i128)a.hi + b.hi;
            else if (op == 1) lo = (i128)a.lo - b.hi, hi = (i128)a.hi - b.lo;
            else {
                i128 p[4] = {(i128)a.lo * b.lo, (i128)a.lo * b.hi, (i128)a.hi * b.lo,
                             (i128)a.hi * b.hi};
                lo = hi = p[0];
                for (int q = 1; q < 4; q++) {
                    if (p[q] < lo) lo = p[q];
                    if (p[q] > hi) hi = p[q];
                }
            }
            const tir_expr *e = op == 0 ? tir_add(C, a.e, b.e)
                                : op == 1 ? tir_sub(C, a.e, b.e)
                                          : tir_mul(C, a.e, b.e);
            if (fits(t, lo, hi)) return (gv){e, (int64_t)lo, (int64_t)hi};
            if (is_u8(t)) return full(t, e); /* wraps */
            continue;
        }
        if (op <= 6) { /* truncdiv, truncmod, floordiv, floormod */
            gv d = divisor(g, t, depth - 1, !is_u8(t) && a.lo == tmin(t));
            static const tir_kind ks[] = {TIR_KIND_DIV, TIR_KIND_MOD, TIR_KIND_FLOORDIV,
                                          TIR_KIND_FLOORMOD};
            tir_kind k = ks[op - 3];
            const tir_expr *e = tir_binop_new(C, k, a.e, d.e);
            if (is_u8(t)) return (gv){e, 0, a.hi};
            i128 m = maxabs(a), dm = maxabs(d);
            if (k == TIR_KIND_DIV || k == TIR_KIND_FLOORDIV) {
                if (m < 1) m = 1;
                return clampi(t, e, -m, m);
            }
            i128 r = dm - 1 < m ? dm - 1 : m;
            if (k == TIR_KIND_FLOORMOD) r = dm - 1;
            return clampi(t, e, -r, r);
        }
        gv b = gen_t(g, t, depth - 1);
        int64_t lo = a.lo < b.lo ? a.lo : b.lo, hi = a.hi > b.hi ? a.hi : b.hi;
        if (op == 7) return (gv){tir_select_new(C, gen_bool(g, depth - 1), a.e, b.e), lo, hi};
        if (pick(g, 2))
            return (gv){tir_min(C, a.e, b.e), a.lo < b.lo ? a.lo : b.lo, a.hi < b.hi ? a.hi : b.hi};
        return (gv){tir_max(C, a.e, b.e), a.lo > b.lo ? a.lo : b.lo, a.hi > b.hi ? a.hi : b.hi};
    }
    return leaf(g, t, 0);
}

static gv float_op(gen *g, tir_dtype t, int depth) {
    tir_ctx *C = g->ctx;
    int op = pick(g, 13);
    const tir_expr *a = gen_t(g, t, depth - 1).e;
    if (op <= 8) {
        static const tir_kind ks[] = {TIR_KIND_ADD,      TIR_KIND_SUB,      TIR_KIND_MUL,
                                      TIR_KIND_DIV,      TIR_KIND_MOD,      TIR_KIND_FLOORDIV,
                                      TIR_KIND_FLOORMOD, TIR_KIND_MIN,      TIR_KIND_MAX};
        const tir_expr *e = tir_binop_new(C, ks[op], a, gen_t(g, t, depth - 1).e);
        /* min and max of zeros of both signs may give either sign (C's
         * fmin, LLVM's minnum, PTX min); adding +0 makes every zero +0 and
         * leaves any other value as it is */
        if (ks[op] == TIR_KIND_MIN || ks[op] == TIR_KIND_MAX) {
            e = tir_add(C, e, tir_float(C, t, 0.0));
            g->c->zero_sign_free = true;
        }
        return (gv){e, 0, 0};
    }
    if (op == 9) return (gv){tir_select_new(C, gen_bool(g, depth - 1), a, gen_t(g, t, depth - 1).e), 0, 0};
    if (op == 10) return (gv){tir_call_new(C, t, TIR_INTRIN_SQRT, 1, &a), 0, 0};
    if (op == 11) return (gv){tir_call_new(C, t, TIR_INTRIN_FABS, 1, &a), 0, 0};
    const tir_expr *args[3] = {a, gen_t(g, t, depth - 1).e, gen_t(g, t, depth - 1).e};
    return (gv){tir_call_new(C, t, TIR_INTRIN_FMA, 3, args), 0, 0};
}

/* let l = value in body (the variable is a leaf of body) */
static gv let_of(gen *g, tir_dtype t, int depth) {
    tir_dtype vt = any_t(g);
    gv v = gen_t(g, vt, depth - 1);
    char name[8];
    snprintf(name, sizeof name, "l%d", g->nlet);
    const tir_var *var = tir_var_new(g->ctx, name, vt);
    g->lv[g->nlet] = var, g->llo[g->nlet] = v.lo, g->lhi[g->nlet] = v.hi;
    g->nlet++;
    gv body = gen_t(g, t, depth - 1);
    g->nlet--;
    return (gv){tir_let_new(g->ctx, var, v.e, body.e), body.lo, body.hi};
}

static gv gen_t(gen *g, tir_dtype t, int depth) {
    if (depth <= 0 || pick(g, 6) == 0) return leaf(g, t, depth);
    if (g->nlet < 8 && pick(g, 12) == 0) return let_of(g, t, depth);
    if (pick(g, 7) == 0) return cast_to(g, t, depth);
    return is_float(t) ? float_op(g, t, depth) : int_op(g, t, depth);
}

static const tir_expr *gen_bool(gen *g, int depth) {
    tir_ctx *C = g->ctx;
    int op = depth <= 0 ? 0 : pick(g, 9);
    if (op <= 4) {
        tir_dtype t = any_t(g);
        const tir_expr *a = gen_t(g, t, depth - 1).e, *b = gen_t(g, t, depth - 1).e;
        static const tir_kind ks[] = {TIR_KIND_EQ, TIR_KIND_NE, TIR_KIND_LT,
                                      TIR_KIND_LE, TIR_KIND_GT, TIR_KIND_GE};
        return tir_binop_new(C, ks[pick(g, 6)], a, b);
    }
    if (op == 5) return tir_and(C, gen_bool(g, depth - 1), gen_bool(g, depth - 1));
    if (op == 6) return tir_or(C, gen_bool(g, depth - 1), gen_bool(g, depth - 1));
    if (op == 7) return tir_not_new(C, gen_bool(g, depth - 1));
    return tir_cast_new(C, TIR_BOOL, gen_t(g, any_t(g), depth - 1).e);
}

/* ------------------------------------------------------------- inputs */

static void put(tir_dtype t, void *data, int i, double f, int64_t v) {
    unsigned char *p = (unsigned char *)data + (size_t)i * (size_t)eg_bytes(t);
    if (t.code == TIR_TYPE_BFLOAT) {
        uint16_t h = tir_rt_f32_to_bf16((float)f);
        memcpy(p, &h, 2);
    } else if (is_float(t) && t.bits == 16) {
        uint16_t h = tir_rt_f32_to_f16((float)f);
        memcpy(p, &h, 2);
    } else if (is_float(t) && t.bits == 32) {
        float x = (float)f;
        memcpy(p, &x, 4);
    } else if (is_float(t)) {
        memcpy(p, &f, 8);
    } else if (t.bits == 8) {
        *p = (unsigned char)v;
    } else if (t.bits == 32) {
        int32_t x = (int32_t)v;
        memcpy(p, &x, 4);
    } else {
        memcpy(p, &v, 8);
    }
}

/* An integer range for an input: small, medium or the whole dtype. */
static void int_range(gen *g, tir_dtype t, int64_t *lo, int64_t *hi) {
    switch (pick(g, 3)) {
    case 0: *lo = is_u8(t) ? 0 : -8, *hi = 8; break;
    case 1: *lo = is_u8(t) ? 0 : -1000, *hi = is_u8(t) ? 255 : 1000; break;
    default: *lo = tmin(t), *hi = tmax(t); break;
    }
    if (*lo < tmin(t)) *lo = tmin(t);
    if (*hi > tmax(t)) *hi = tmax(t);
}

static void fill(gen *g, int k) {
    tir_dtype t = g->c->in_t[k];
    for (int i = 0; i < EG_N; i++) {
        if (is_float(t)) {
            double f = pick(g, 2) ? fmenu[pick(g, NFM)]
                                  : (double)(int64_t)(rnd(g) % 4001 - 2000) / (double)(1 << pick(g, 8));
            put(t, g->c->in[k], i, f, 0);
        } else {
            int64_t lo = g->lo[k], hi = g->hi[k], v;
            uint64_t span = (uint64_t)hi - (uint64_t)lo;
            int w = pick(g, 5);
            if (w == 0) v = lo;
            else if (w == 1) v = hi;
            else if (span == UINT64_MAX) v = (int64_t)rnd(g);
            else v = (int64_t)((uint64_t)lo + rnd(g) % (span + 1));
            put(t, g->c->in[k], i, 0, v);
        }
    }
}

/* The parameters X0..X{nin-1} (random dtypes, filled) and Y (its dtype is
 * the output's) of an elementwise or local-array case. */
static void make_params(gen *g, const tir_var **params, const tir_buffer **map) {
    eg_case *c = g->c;
    int64_t n = EG_N;
    for (int k = 0; k <= c->nin; k++) {
        tir_dtype t = any_t(g);
        char name[16];
        snprintf(name, sizeof name, k < c->nin ? "X%d" : "Y", k);
        map[k] = tir_buffer_simple(g->ctx, name, t, 1, &n, TIR_SCOPE_GLOBAL);
        params[k] = tir_var_new(g->ctx, name, TIR_HANDLE);
        if (k == c->nin) {
            c->out_t = t;
            break;
        }
        c->in_t[k] = t;
        g->bufs[k] = map[k];
        if (!is_float(t)) int_range(g, t, &g->lo[k], &g->hi[k]);
        c->in[k] = eg_alloc((size_t)EG_N * (size_t)eg_bytes(t));
        fill(g, k);
    }
}

/* The inputs X0..X{nin-1} of a TE-defined case as placeholders (random
 * dtypes, filled). */
static void te_inputs(gen *g, tir_te_tensor **args) {
    int64_t n = EG_N;
    for (int k = 0; k < g->c->nin; k++) {
        tir_dtype t = any_t(g);
        char name[16];
        snprintf(name, sizeof name, "X%d", k);
        args[k] = tir_te_placeholder(g->ctx, name, t, 1, &n);
        g->c->in_t[k] = t;
        g->bufs[k] = tir_te_buffer(args[k]);
        if (!is_float(t)) int_range(g, t, &g->lo[k], &g->hi[k]);
        g->c->in[k] = eg_alloc((size_t)EG_N * (size_t)eg_bytes(t));
        fill(g, k);
    }
}

/* ------------------------------------------------------- reduction cases */

typedef struct red_user {
    gen *g;
    tir_te_reducer r;
    int64_t K;
    tir_dtype t;
    int depth;
} red_user;

/* The reduced value e(X0[m K + k], ...); for a signed integer sum, clamped
 * so that K terms cannot overflow (undefined). */
static const tir_expr *red_body(tir_ctx *ctx, const tir_var *const *ax,
                                const tir_var *const *rx, void *user) {
    red_user *u = user;
    gen *g = u->g;
    g->idx = tir_add(ctx, tir_mul(ctx, &ax[0]->base, tir_i32(ctx, (int32_t)u->K)), &rx[0]->base);
    gv v = gen_t(g, u->t, u->depth);
    if (u->r != TIR_TE_SUM || is_float(u->t) || is_u8(u->t)) return v.e;
    int64_t lo = tmin(u->t) / u->K, hi = tmax(u->t) / u->K;
    const tir_expr *e = v.e;
    if (v.lo < lo) e = tir_max(ctx, e, iconst(g, u->t, lo));
    if (v.hi > hi) e = tir_min(ctx, e, iconst(g, u->t, hi));
    return e;
}

/* Y[m] = reduce over k < K of e(...), M K = 64, reducer sum, max or min,
 * over any dtype but bool; the interpreter runs it as TE defines it (c->ref),
 * the rest after a schedule: m split over blockIdx.x and threadIdx.x, and
 * at random the accumulator cached in a register (cache_write "local",
 * written back under the thread loop), k split
 * (a factor that may not divide K: a guard), its inner loop unrolled, and
 * the init decomposed out of the k loop. */
static void make_reduce(tir_ctx *ctx, uint64_t seed, uint64_t index, eg_case *c) {
    gen g = {.ctx = ctx,
             .s = seed * 0xd6e8feb86659fd93ull + index * 0x100000001b3ull + 0x7ed,
             .c = c};
    static const int64_t Ms[] = {1, 2, 4, 8, 16, 32, 64};
    int64_t M = Ms[pick(&g, 7)], K = EG_N / M;
    c->nin = 1 + pick(&g, EG_MAX_IN);
    c->nout = (int)M;
    tir_te_tensor *args[EG_MAX_IN + 1];
    te_inputs(&g, args);
    /* mostly an input's dtype, so that the reduced value reads inputs (a
     * dtype no input has is reached through casts and constants only: 58%
     * of the reductions read no input before; review) */
    c->out_t = c->in_t[pick(&g, c->nin)];
    while (is_bool(c->out_t) || pick(&g, 4) == 0) c->out_t = any_t(&g);
    red_user u = {.g = &g, .r = (tir_te_reducer)pick(&g, 3), .K = K, .t = c->out_t,
                  .depth = 1 + pick(&g, 4)};
    if (u.r != TIR_TE_SUM && is_float(c->out_t)) c->zero_sign_free = true;
    args[c->nin] = tir_te_reduce(ctx, "Y", 1, &M, u.r, 1, &K, red_body, &u);
    c->ref = tir_te_create_prim_func(ctx, "reduce", c->nin + 1, args);
    c->reduce = true;
    /* the schedule */
    tir_schedule *s = NULL;
    tir_block_rv b;
    const tir_loop_rv *lp = NULL;
    int nl = 0;
    bool ok = c->ref && tir_sched_create(ctx, c->ref, &s) == TIR_OK &&
              tir_sched_get_block(s, "Y", &b) == TIR_OK &&
              tir_sched_get_loops(s, b, &lp, &nl) == TIR_OK && nl == 2;
    tir_loop_rv ml = ok ? lp[0] : (tir_loop_rv){0}, kl = ok ? lp[1] : (tir_loop_rv){0};
    /* m = blockIdx.x * T + threadIdx.x, T any (a guard where it does not divide M) */
    int64_t ms[2] = {TIR_SPLIT_INFER, 1 + pick(&g, (int)M)};
    tir_loop_rv mp[2];
    ok = ok && tir_sched_split(s, ml, 2, ms, mp) == TIR_OK &&
         tir_sched_bind(s, mp[0], "blockIdx.x") == TIR_OK &&
         tir_sched_bind(s, mp[1], "threadIdx.x") == TIR_OK;
    /* accumulate in a register, written back under the thread loop */
    tir_block_rv wb;
    if (ok && pick(&g, 2))
        ok = tir_sched_cache_write(s, b, 0, "local", 0, NULL, &wb) == TIR_OK &&
             tir_sched_reverse_compute_at(s, wb, mp[1], pick(&g, 2)) == TIR_OK;
    if (ok && K > 1 && pick(&g, 2)) {
        int64_t f = 2 + pick(&g, (int)(K < 9 ? K - 1 : 8));
        tir_loop_rv parts[2];
        int64_t fs[2] = {TIR_SPLIT_INFER, f};
        ok = tir_sched_split(s, kl, 2, fs, parts) == TIR_OK;
        if (ok && pick(&g, 2)) ok = tir_sched_unroll(s, parts[1]) == TIR_OK;
        kl = parts[0];
    }
    tir_block_rv init;
    if (ok && pick(&g, 2)) ok = tir_sched_decompose_reduction(s, b, kl, &init) == TIR_OK;
    c->func = ok ? tir_sched_func(s) : NULL;
    c->sched_error = ok ? NULL : tir_ctx_error(ctx);
    tir_sched_destroy(s);
}

/* ----------------------------------------------------- scheduled cases */

typedef struct sched_user {
    gen *g;
    int depth;
} sched_user;

static const tir_expr *sched_body(tir_ctx *ctx, const tir_var *const *ax,
                                  const tir_var *const *rx, void *user) {
    (void)ctx, (void)rx;
    sched_user *u = user;
    u->g->idx = &ax[0]->base;
    return gen_t(u->g, u->g->c->out_t, u->depth).e;
}

/* The block's loops, innermost last; n 0 on failure. */
static const tir_loop_rv *loops_of(tir_schedule *s, tir_block_rv b, int *n) {
    const tir_loop_rv *lp = NULL;
    *n = 0;
    if (tir_sched_get_loops(s, b, &lp, n) != TIR_OK) *n = 0;
    return lp;
}

/* A cache block at `at`: a local one is the thread's own elements; a
 * shared one is fetched cooperatively (its loop split over the compute's
 * T threads, the inner part bound). */
static bool place_cache(gen *g, tir_schedule *s, tir_block_rv cache, bool shared,
                        tir_loop_rv at, int64_t T) {
    if (tir_sched_compute_at(s, cache, at, pick(g, 2)) != TIR_OK) return false;
    if (!shared) return true;
    int n;
    const tir_loop_rv *lp = loops_of(s, cache, &n);
    if (n < 2) return n == 1; /* at the block loop only: nothing of its own */
    tir_loop_rv parts[2];
    int64_t fs[2] = {TIR_SPLIT_INFER, T};
    return tir_sched_split(s, lp[n - 1], 2, fs, parts) == TIR_OK &&
           tir_sched_bind(s, parts[1], "threadIdx.x") == TIR_OK;
}

/* Y[i] = e(X0[i], ...) defined through TE and scheduled as a GPU user
 * would: i split into blockIdx.x, T threads (any T up to 32: a guard where
 * it does not divide 64) and, at random, a vectorized or unrolled inner
 * loop of V <= 4; inputs cached at random in registers (local, at the
 * thread loop) or in shared memory (at the block loop, fetched by the T
 * threads); the output at random through a register (cache_write local,
 * written back under the thread loop).  The interpreter runs it as TE
 * defines it (c->ref); a schedule call or the lowering may refuse (counted
 * as refused): what is compared is every accepted kernel, with caches and
 * vectors of every dtype (bool in shared memory, float64 vectors, ...). */
static void make_sched(tir_ctx *ctx, uint64_t seed, uint64_t index, eg_case *c) {
    gen g = {.ctx = ctx,
             .s = seed * 0xff51afd7ed558ccdull + index * 0xc4ceb9fe1a85ec53ull + 0x5c4,
             .c = c};
    int64_t n = EG_N;
    c->nin = 1 + pick(&g, EG_MAX_IN);
    c->scheduled = true;
    tir_te_tensor *args[EG_MAX_IN + 1];
    te_inputs(&g, args);
    c->out_t = any_t(&g);
    sched_user u = {.g = &g, .depth = 1 + pick(&g, 4)};
    args[c->nin] = tir_te_compute(ctx, "Y", 1, &n, sched_body, &u);
    c->ref = args[c->nin] ? tir_te_create_prim_func(ctx, "sched", c->nin + 1, args) : NULL;
    tir_schedule *s = NULL;
    tir_block_rv b;
    const tir_block *bn = NULL;
    int nl = 0;
    bool ok = c->ref && tir_sched_create(ctx, c->ref, &s) == TIR_OK &&
              tir_sched_get_block(s, "Y", &b) == TIR_OK &&
              tir_sched_get_block_node(s, b, &bn) == TIR_OK;
    const tir_loop_rv *lp = ok ? loops_of(s, b, &nl) : NULL;
    ok = ok && nl == 1;
    int64_t T = 1 + pick(&g, 32), V = pick(&g, 2) ? 1 : 2 + pick(&g, 3);
    tir_loop_rv parts[3];
    int64_t fs[3] = {TIR_SPLIT_INFER, T, V};
    ok = ok && tir_sched_split(s, lp[0], V > 1 ? 3 : 2, fs, parts) == TIR_OK &&
         tir_sched_bind(s, parts[0], "blockIdx.x") == TIR_OK &&
         tir_sched_bind(s, parts[1], "threadIdx.x") == TIR_OK;
    if (ok && V > 1)
        ok = (pick(&g, 3) ? tir_sched_vectorize(s, parts[2]) : tir_sched_unroll(s, parts[2])) ==
             TIR_OK;
    /* caches of the inputs the block reads */
    int nreads = ok ? bn->nreads : 0;
    for (int r = 0; ok && r < nreads; r++) {
        if (pick(&g, 2)) continue;
        bool shared = pick(&g, 2);
        tir_block_rv cache;
        ok = tir_sched_cache_read(s, b, r, shared ? "shared" : "local", 0, NULL, &cache) ==
                 TIR_OK &&
             place_cache(&g, s, cache, shared, shared ? parts[0] : parts[1], T);
    }
    tir_block_rv wb;
    if (ok && pick(&g, 3) == 0)
        ok = tir_sched_cache_write(s, b, 0, "local", 0, NULL, &wb) == TIR_OK &&
             tir_sched_reverse_compute_at(s, wb, parts[1], pick(&g, 2)) == TIR_OK;
    c->func = ok ? tir_sched_func(s) : NULL;
    c->sched_error = ok ? NULL : tir_ctx_error(ctx);
    tir_sched_destroy(s);
}

/* ---------------------------------------------------- local-array cases */

/* One random statement on the local array L (see make_locals). */
static const tir_stmt *local_stmt(gen *g, const tir_expr *base, int depth) {
    tir_ctx *C = g->ctx;
    tir_dtype t = g->L->dtype;
    int kind = pick(g, 5);
    if (kind == 4) { /* L[c0:c0+4] = Xk[base+c1 : +4], an input of L's dtype */
        int cand[EG_MAX_IN], n = 0;
        for (int k = 0; k < g->c->nin; k++)
            if (same_t(g->c->in_t[k], t) && !is_bool(t)) cand[n++] = k;
        if (n) {
            const tir_expr *li = tir_ramp_new(C, tir_i32(C, pick(g, 5)), tir_i32(C, 1), 4);
            const tir_expr *xi =
                tir_ramp_new(C, tir_add(C, base, tir_i32(C, pick(g, 5))), tir_i32(C, 1), 4);
            return tir_store(C, g->L, tir_load(C, g->bufs[cand[pick(g, n)]], 1, &xi), 1, &li);
        }
        kind = 0;
    }
    if (kind == 3) { /* for j in serial/unrolled(n): a statement over j */
        if (g->jv) kind = 0; /* one level of loops */
        else {
            const tir_var *jv = tir_var_new(C, "j", TIR_I32);
            int64_t n = 1 + pick(g, 8);
            g->jv = jv;
            const tir_expr *old = g->idx;
            g->idx = tir_add(C, base, tir_binop_new(C, TIR_KIND_FLOORMOD, &jv->base, tir_i32(C, 8)));
            const tir_stmt *body = local_stmt(g, base, depth);
            g->idx = old;
            g->jv = NULL;
            return tir_for_new(C, jv, tir_i32(C, 0), tir_i32(C, (int32_t)n),
                               pick(g, 2) ? TIR_FOR_UNROLLED : TIR_FOR_SERIAL, NULL, 0, NULL, body);
        }
    }
    if (kind == 2 && depth <= 0) kind = 0;
    if (kind == 2) { /* if c: <a statement> else: <a statement> */
        const tir_expr *cond = gen_bool(g, depth);
        const tir_stmt *a = local_stmt(g, base, depth - 1);
        return tir_if_new(C, cond, a, pick(g, 2) ? local_stmt(g, base, depth - 1) : NULL);
    }
    /* L[i] = e: i a constant (kind 0), or, in a loop, (a j + c) mod 8 or
     * (a j) // 2 mod 8 (kind 1).  Not over the thread variables: a local
     * array is one per thread, and local_check refuses an element that
     * depends on the thread (docs/lowering.md) */
    const tir_expr *i = tir_i32(C, pick(g, 8));
    if (kind == 1 && g->jv) {
        const tir_expr *aj = tir_mul(C, &g->jv->base, tir_i32(C, pick(g, 7) - 3));
        const tir_expr *h = pick(g, 2) ? tir_add(C, aj, tir_i32(C, pick(g, 21)))
                                       : tir_binop_new(C, TIR_KIND_FLOORDIV, aj, tir_i32(C, 2));
        i = tir_binop_new(C, TIR_KIND_FLOORMOD, h, tir_i32(C, 8));
    }
    return tir_store(C, g->L, gen_t(g, t, depth).e, 1, &i);
}

/* A thread's local array L[8] of the output's dtype (threads t < 4 of
 * blocks b < 2 own Y[32 b + 8 t ...]):
 *   L[u] = e_u for u < 8 (unrolled)
 *   2-6 random statements: L[c] = e, if c: ... else: ..., for j in
 *     serial/unrolled(n): one of those, or L[h(j) % 8] = e, with
 *     L[(j + k) % 8] and the inputs at 32 b + 8 t + j % 8 among its
 *     leaves, L[c:c+4] = X[...] (vectors)
 *   Y[32 b + 8 t + u] = L[u] for u < 8 (unrolled)
 * where every expression may read L.  This is codegen's local-array path
 * (elements kept as SSA values while emitting: cache_slot, ssa_locals,
 * stored before branches and variable indices) and the lowering's local
 * buffers, in every dtype, bool included (stored as bytes). */
static void make_locals(tir_ctx *ctx, uint64_t seed, uint64_t index, eg_case *c) {
    gen g = {.ctx = ctx,
             .s = seed * 0xbf58476d1ce4e5b9ull + index * 0x94d049bb133111ebull + 0x10c,
             .c = c};
    c->nin = 1 + pick(&g, EG_MAX_IN);
    c->locals = true;
    const tir_var *params[EG_MAX_IN + 1];
    const tir_buffer *map[EG_MAX_IN + 1];
    int64_t n8 = 8;
    make_params(&g, params, map);
    const tir_buffer *L = tir_buffer_simple(ctx, "L", c->out_t, 1, &n8, TIR_SCOPE_LOCAL);
    const tir_var *bv = tir_var_new(ctx, "b", TIR_I32), *tv = tir_var_new(ctx, "t", TIR_I32),
                  *uv = tir_var_new(ctx, "u", TIR_I32);
    const tir_expr *base = tir_add(ctx, tir_mul(ctx, &bv->base, tir_i32(ctx, 32)),
                                   tir_mul(ctx, &tv->base, tir_i32(ctx, 8)));
    const tir_expr *bu = tir_add(ctx, base, &uv->base);
    g.bv = bv, g.tv = tv, g.vv = NULL, g.tx = 4;
    /* the init: every element written before any is read */
    g.idx = bu;
    const tir_stmt *st[8];
    int ns = 0;
    const tir_expr *ue = &uv->base;
    st[ns++] = tir_for_new(ctx, uv, tir_i32(ctx, 0), tir_i32(ctx, 8), TIR_FOR_UNROLLED, NULL, 0,
                           NULL, tir_store(ctx, L, gen_t(&g, c->out_t, 1 + pick(&g, 3)).e, 1, &ue));
    g.L = L;
    g.idx = tir_add(ctx, base, tir_i32(ctx, pick(&g, 8)));
    for (int q = 2 + pick(&g, 5); q > 0; q--) st[ns++] = local_stmt(&g, base, 1 + pick(&g, 3));
    const tir_var *wv = tir_var_new(ctx, "w", TIR_I32);
    const tir_expr *we = &wv->base, *bw = tir_add(ctx, base, we);
    st[ns++] = tir_for_new(ctx, wv, tir_i32(ctx, 0), tir_i32(ctx, 8), TIR_FOR_UNROLLED, NULL, 0,
                           NULL, tir_store(ctx, map[c->nin], tir_load(ctx, L, 1, &we), 1, &bw));
    const tir_stmt *body = tir_allocate_new(ctx, L, tir_seq_new(ctx, ns, st));
    body = tir_for_new(ctx, tv, tir_i32(ctx, 0), tir_i32(ctx, 4), TIR_FOR_THREAD_BINDING,
                       "threadIdx.x", 0, NULL, body);
    body = tir_for_new(ctx, bv, tir_i32(ctx, 0), tir_i32(ctx, 2), TIR_FOR_THREAD_BINDING,
                       "blockIdx.x", 0, NULL, body);
    c->func = tir_prim_func_new(ctx, "locals", c->nin + 1, params, map, body, 0, NULL);
}

/* ------------------------------------------------------------- the case */

void eg_make(tir_ctx *ctx, uint64_t seed, uint64_t index, unsigned flags, eg_case *c) {
    memset(c, 0, sizeof *c);
    c->nout = EG_N;
    gen g4 = {.s = seed * 0x94d049bb133111ebull + index + 0x4ed};
    int mode = pick(&g4, 6); /* 0-2 the other kinds; 3-5 elementwise */
    if ((flags & EG_REDUCE) && mode == 0) {
        make_reduce(ctx, seed, index, c);
        return;
    }
    if ((flags & EG_LOCALS) && mode == 1) {
        make_locals(ctx, seed, index, c);
        return;
    }
    if ((flags & EG_SCHED) && mode == 2) {
        make_sched(ctx, seed, index, c);
        return;
    }
    gen g = {.ctx = ctx, .s = seed * 0x100000001b3ull + index, .c = c};
    c->nin = 1 + pick(&g, EG_MAX_IN);
    c->vector = pick(&g, 3) == 0;
    const tir_var *params[EG_MAX_IN + 1];
    const tir_buffer *map[EG_MAX_IN + 1];
    make_params(&g, params, map);
    /* for b in blockIdx.x(2): for t in threadIdx.x(32 or 8): [for v in vectorized(4):] */
    const tir_var *bv = tir_var_new(ctx, "b", TIR_I32), *tv = tir_var_new(ctx, "t", TIR_I32),
                  *vv = tir_var_new(ctx, "v", TIR_I32);
    int tx = c->vector ? 8 : 32;
    const tir_expr *i = tir_add(ctx, tir_mul(ctx, &bv->base, tir_i32(ctx, 32)), &tv->base);
    if (c->vector)
        i = tir_add(ctx, tir_add(ctx, tir_mul(ctx, &bv->base, tir_i32(ctx, 32)),
                                 tir_mul(ctx, &tv->base, tir_i32(ctx, 4))),
                    &vv->base);
    g.idx = i;
    g.bv = bv, g.tv = tv, g.vv = c->vector ? vv : NULL, g.tx = tx;
    /* the random indices' own stream (EG_GATHER), drawn from only when an
     * input is read, so the tree is what it is without them */
    gen g3 = g;
    g3.s = seed * 0xc2b2ae3d27d4eb4full + index * 0x9e3779b97f4a7c15ull + 0x9a7;
    bool gather = (flags & EG_GATHER) && pick(&g3, 2) == 0;
    if (gather) g.gather = &g3;
    const tir_expr *e = gen_t(&g, c->out_t, 1 + pick(&g, 5)).e;
    /* and a third of those store at a permutation of the elements,
     * (a i + c) mod 64 with a odd: each still written once */
    const tir_expr *si = i;
    if (gather && pick(&g3, 3) == 0) {
        int64_t a = 2 * (int64_t)pick(&g3, 32) + 1, off = (int64_t)pick(&g3, 200) - 100;
        if (pick(&g3, 2)) a = -a;
        si = tir_binop_new(ctx, TIR_KIND_FLOORMOD,
                           tir_add(ctx, tir_mul(ctx, i, tir_i32(ctx, (int32_t)a)),
                                   tir_i32(ctx, (int32_t)off)),
                           tir_i32(ctx, EG_N));
        g3.ngathered++;
    }
    const tir_stmt *body = tir_store(ctx, map[c->nin], e, 1, &si);
    /* A quarter of the cases store under an if/else on a random condition,
     * drawn from a second stream so that the first draws what it drew
     * before (the replayed cases keep their expressions); conditions are
     * emitted apart from stored values (branches, nsw: docs/lowered-ir.md) */
    gen g2 = g;
    g2.s = seed * 0x9e3779b97f4a7c15ull + index * 0x100000001b3ull + 0x51ed;
    if (pick(&g2, 4) == 0) {
        const tir_expr *cond = gen_bool(&g2, 1 + pick(&g2, 4));
        const tir_expr *e2 = gen_t(&g2, c->out_t, 1 + pick(&g2, 3)).e;
        body = tir_if_new(ctx, cond, body, tir_store(ctx, map[c->nin], e2, 1, &si));
        c->branch = true;
    }
    c->gather = g3.ngathered > 0;
    if (c->vector)
        body = tir_for_new(ctx, vv, tir_i32(ctx, 0), tir_i32(ctx, 4), TIR_FOR_VECTORIZED, NULL, 0,
                           NULL, body);
    body = tir_for_new(ctx, tv, tir_i32(ctx, 0), tir_i32(ctx, tx), TIR_FOR_THREAD_BINDING,
                       "threadIdx.x", 0, NULL, body);
    body = tir_for_new(ctx, bv, tir_i32(ctx, 0), tir_i32(ctx, 2), TIR_FOR_THREAD_BINDING,
                       "blockIdx.x", 0, NULL, body);
    c->func = tir_prim_func_new(ctx, "expr", c->nin + 1, params, map, body, 0, NULL);
}

void eg_tally_add(eg_tally *t, const eg_case *c) {
    t->gathered += c->gather;
    t->reduced += c->reduce;
    t->localized += c->locals;
    t->scheduled += c->scheduled;
}

void eg_tally_text(const eg_tally *t, char *buf, size_t n) {
    snprintf(buf, n,
             "%ld with random input indices, %ld reductions, %ld local arrays, %ld scheduled",
             t->gathered, t->reduced, t->localized, t->scheduled);
}

static bool visit_bf16(tir_visitor *v, const tir_node *n) {
    const tir_expr *e = (const tir_expr *)n;
    if (tir_kind_is_expr((tir_kind)e->kind) && e->dtype.code == TIR_TYPE_BFLOAT) *(bool *)v->user = true;
    return true;
}

bool eg_uses_bf16(const eg_case *c) {
    bool any = false;
    tir_visitor v = {visit_bf16, NULL, &any};
    tir_visit(&v, c->func->body);
    return any;
}

void eg_free(eg_case *c) {
    for (int k = 0; k < c->nin; k++) free(c->in[k]);
}

static double as_double(tir_dtype t, const void *data, int i, int64_t *iv) {
    const unsigned char *p = (const unsigned char *)data + (size_t)i * (size_t)eg_bytes(t);
    *iv = 0;
    if (is_float(t)) {
        if (t.bits == 16) {
            uint16_t h;
            memcpy(&h, p, 2);
            return t.code == TIR_TYPE_BFLOAT ? tir_rt_bf16_to_f32(h) : tir_rt_f16_to_f32(h);
        }
        if (t.bits == 32) {
            float f;
            memcpy(&f, p, 4);
            return f;
        }
        double d;
        memcpy(&d, p, 8);
        return d;
    }
    if (t.bits == 8) *iv = is_u8(t) || is_bool(t) ? (int64_t)*p : (int64_t)(int8_t)*p;
    else if (t.bits == 32) {
        int32_t x;
        memcpy(&x, p, 4);
        *iv = x;
    } else memcpy(iv, p, 8);
    return 0;
}

int eg_diff(const eg_case *c, const void *a, const void *b, int n) {
    tir_dtype t = c->out_t;
    int w = eg_bytes(t);
    for (int i = 0; i < n; i++) {
        const unsigned char *x = (const unsigned char *)a + (size_t)i * (size_t)w,
                            *y = (const unsigned char *)b + (size_t)i * (size_t)w;
        if (!memcmp(x, y, (size_t)w)) continue;
        if (is_float(t)) {
            int64_t dummy;
            double p = as_double(t, a, i, &dummy), q = as_double(t, b, i, &dummy);
            if (isnan(p) && isnan(q)) continue;
            /* a zero's sign, and an infinity's from dividing by that zero */
            if (c->zero_sign_free && ((p == 0 && q == 0) || (isinf(p) && isinf(q)))) continue;
        }
        return i;
    }
    return -1;
}

void eg_show(char *buf, size_t n, tir_dtype t, const void *data, int i) {
    int64_t iv;
    double d = as_double(t, data, i, &iv);
    char ts[32];
    tir_dtype_str(t, ts, sizeof ts);
    if (is_float(t)) snprintf(buf, n, "%s %.17g (%a)", ts, d, d);
    else snprintf(buf, n, "%s %lld", ts, (long long)iv);
}

void eg_report(const eg_case *c, int i, int nres, const char *const *names, void *const *outs) {
    char s[96];
    if (c->branch) printf("#   (the store is under the if/else)\n");
    for (int k = 0; k < c->nin; k++) {
        eg_show(s, sizeof s, c->in_t[k], c->in[k], i);
        printf("#   X%d[%d] = %s\n", k, i, s);
    }
    for (int r = 0; r < nres; r++) {
        eg_show(s, sizeof s, c->out_t, outs[r], i);
        printf("#   %s: Y[%d] = %s\n", names[r], i, s);
    }
}

/* Cases that once failed, replayed by test_expr_fuzz and (where gpu) by
 * test_expr_fuzz_gpu; this file must not change what a seed draws, or
 * these stop meaning anything. */
const eg_regression eg_regressions[] = {
    {20261204, 35345, true, 0},  /* float16 fma rounded twice in the interpreter */
    {20261204, 7643, true, 0},   /* a bound wrapped at INT64_MIN: a divisor's guard dropped */
    {20261204, 1820, true, 0},   /* the same, in a min/max bound */
    {20261207, 1008, true, 0},   /* LLVM: fabs(maxnum(-65536, NaN)) folded to -65536, fmod looped */
    {20261205, 10, true, 0},     /* NVPTX frem: x - trunc(x / y) * y, not fmod */
    {20261205, 104, true, 0},
    {20261205, 165, true, 0},
    {20261205, 184, true, 0},
    {20261205, 234, true, 0},
    {20261206, 65, true, 0},
    {20261207, 0, true, 0},
    {1918000000, 354, true, 0},  /* nsw on a stored value: the simplifier's reordered sum overflowed */
    {1918000004, 3598, true, 0}, /* LLVM: fptosi of bfloat16 taken as exact in half */
    {1918000004, 2505, true, 0},
    {1918300007, 1766, true, 0}, /* floormod(-1 - x, 2^63 - 1) normalized to a wrapping operand */
    {1919000000, 19314, true, 0}, /* min(x - 5, INT64_MAX): the offset moved out, INT64_MAX + 5 wrapped */
    {1918300006, 1300, true, 0}, /* ptxas: max.s16(x, 0) == 0 taken as false (cg_ptxas.c) */
    {1918500002, 4764, true, 0}, /* ptxas: |x| > -55.5 taken as true for NaN (cg_ptxas.c) */
    /* codegen's zero fill took `else: Y[i] = -0.0` for a zero store (+0) */
    {1922400001, 175, true, EG_GATHER | EG_REDUCE | EG_LOCALS | EG_SCHED},
    /* the simplifier decided s + INT32_MIN != 0 (s data) by unwrapped bounds */
    {1922900003, 7410, true, EG_GATHER | EG_REDUCE | EG_LOCALS | EG_SCHED},
    /* ptxas: |floor(8 / y)| in bfloat16 (and.b16 0x7fff) kept its sign */
    {1930000013, 2075, true, EG_GATHER | EG_REDUCE | EG_LOCALS | EG_SCHED},
    /* run 119: ptxas, an int32 min-reduction of truncdiv(x, -2) with
     * INT32_MIN among x gave -1073741824 where -1073741823 is right (right
     * at JIT level 0); cg_ptxas.c pattern 4 (inline div.s32) is meant to
     * steer round it, not yet run on the GPU (docs/reliability.md) */
    {1930200005, 672, true, EG_GATHER | EG_REDUCE | EG_LOCALS | EG_SCHED},
    /* ptxas (run 125, H100): an int32 min-reduction of x // -1, neg.s32
     * into min.s32, gave another operand; cg_ptxas.c pattern 5 (not + add
     * 1) steers round it, confirmed on the GPU (run 127) */
    {1936300006, 1080, true, EG_GATHER | EG_REDUCE | EG_LOCALS | EG_SCHED},
    /* ptxas (run 127, H100), open: a float16 kernel of fma, truncmod,
     * min and max with X3 = -inf, NaN wanted, -193.625 got (right at JIT
     * level 0); test_expr_fuzz_gpu fails on it until a rewrite steers
     * round it (docs/reliability.md, "The PTX assembler") */
    {1936400003, 775, true, EG_GATHER | EG_REDUCE | EG_LOCALS | EG_SCHED},
};
const int eg_nregressions = (int)(sizeof eg_regressions / sizeof eg_regressions[0]);
