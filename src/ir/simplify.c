/* simplify.c: the expression simplifier (constant folding, the canonical
 * form of integer arithmetic, and rewrite rules that use known ranges).
 *
 * Integer +, -, * are put in a linear canonical form: a sum of terms
 * coef * atom plus a constant, where atoms are the non-linear pieces
 * (variables, products of non-constants, floordiv/floormod, min/max,
 * loads...), merged when equal and ordered by ar_expr_cmp (variables by
 * creation id), so equal expressions print the same.  Coefficients and
 * constants wrap like the dtype does, which keeps +, -, * exact under
 * two's complement.  Rules that reason with ranges (division, comparison,
 * min/max) assume, as TVM's arith module does, that index arithmetic does
 * not overflow.  Floordiv/floormod by positive constants pull out the
 * terms divisible by the divisor, and pairs of floordiv/floormod atoms
 * over the same value are merged back (floordiv(x,c)*c + floormod(x,c)
 * -> x, and the split-of-a-split forms that split/fuse produce).
 *
 * Floating-point and other non-integer arithmetic is only constant folded,
 * each result rounded to its dtype's precision.
 */
#include <math.h>
#include <string.h>

#include "arith_internal.h"

/* ---------------------------------------------------------- constant values */

int64_t ar_wrap(tir_dtype t, int64_t v) {
    switch ((tir_type_code)t.code) {
    case TIR_TYPE_BOOL: return v != 0;
    case TIR_TYPE_INT: {
        if (t.bits >= 64) return v;
        uint64_t m = 1ull << (t.bits - 1);
        uint64_t u = (uint64_t)v & ((m << 1) - 1);
        return (int64_t)(u ^ m) - (int64_t)m;
    }
    case TIR_TYPE_UINT:
        if (t.bits >= 64) return v;
        return (int64_t)((uint64_t)v & ((1ull << t.bits) - 1));
    default: return v;
    }
}

static int64_t wadd(tir_dtype t, int64_t x, int64_t y) {
    return ar_wrap(t, (int64_t)((uint64_t)x + (uint64_t)y));
}
static int64_t wmul(tir_dtype t, int64_t x, int64_t y) {
    return ar_wrap(t, (int64_t)((uint64_t)x * (uint64_t)y));
}
static int64_t wneg(tir_dtype t, int64_t x) { return ar_wrap(t, (int64_t)(0 - (uint64_t)x)); }

/* Rounds v to the nearest value (ties to even) with `mant` significant bits,
 * the smallest normal exponent `emin` and the largest finite value vmax. */
static double round_fp(double v, int mant, int emin, double vmax) {
    if (isnan(v) || isinf(v) || v == 0) return v;
    int e;
    (void)frexp(v, &e);
    int q = e - mant; /* exponent of one unit in the last place */
    if (e - 1 < emin) q = emin - (mant - 1);
    double r = ldexp(nearbyint(ldexp(v, -q)), q);
    if (fabs(r) > vmax) return copysign(INFINITY, v);
    return r;
}

static double round_to(tir_dtype t, double v) {
    if (t.code == TIR_TYPE_BFLOAT) return round_fp(v, 8, -126, 0x1.fep127);
    switch (t.bits) {
    case 16: return round_fp(v, 11, -14, 65504.0);
    case 32: return round_fp(v, 24, -126, 0x1.fffffep127);
    default: return v;
    }
}

static const tir_expr *mk_int(tir_analyzer *a, tir_dtype t, int64_t v) {
    return tir_int(a->ctx, t, ar_wrap(t, v));
}
static const tir_expr *mk_bool(tir_analyzer *a, bool v) { return tir_bool(a->ctx, v); }
static const tir_expr *mk_float(tir_analyzer *a, tir_dtype t, double v) {
    return tir_float(a->ctx, t, round_to(t, v));
}
static const tir_expr *mk_bin(tir_analyzer *a, tir_kind k, const tir_expr *x, const tir_expr *y) {
    return tir_binop_new(a->ctx, k, x, y);
}

static bool is_int_scalar(tir_dtype t) { return t.code == TIR_TYPE_INT && t.lanes == 1; }
static bool is_const(const tir_expr *e, int64_t v) {
    const tir_int_imm *i = tir_as_tir_int_imm(e);
    return i && i->value == v;
}
static bool const_of(const tir_expr *e, int64_t *v) { return tir_expr_const_int(e, v); }

/* Folds a binary operation of two constants; NULL when it cannot (not
 * constants, division by zero, NaN in min/max). */
static const tir_expr *fold_binop(tir_analyzer *a, tir_kind k, const tir_expr *x,
                                  const tir_expr *y) {
    const tir_int_imm *ix = tir_as_tir_int_imm(x), *iy = tir_as_tir_int_imm(y);
    tir_dtype t = x->dtype;
    if (ix && iy) {
        int64_t p = ix->value, q = iy->value;
        switch (k) {
        case TIR_KIND_ADD: return mk_int(a, t, wadd(t, p, q));
        case TIR_KIND_SUB: return mk_int(a, t, wadd(t, p, wneg(t, q)));
        case TIR_KIND_MUL: return mk_int(a, t, wmul(t, p, q));
        case TIR_KIND_DIV: return q == 0 ? NULL : mk_int(a, t, ar_truncdiv(p, q));
        case TIR_KIND_MOD: return q == 0 ? NULL : mk_int(a, t, ar_truncmod(p, q));
        case TIR_KIND_FLOORDIV: return q == 0 ? NULL : mk_int(a, t, ar_floordiv(p, q));
        case TIR_KIND_FLOORMOD: return q == 0 ? NULL : mk_int(a, t, ar_floormod(p, q));
        case TIR_KIND_MIN: return p <= q ? x : y;
        case TIR_KIND_MAX: return p >= q ? x : y;
        case TIR_KIND_EQ: return mk_bool(a, p == q);
        case TIR_KIND_NE: return mk_bool(a, p != q);
        case TIR_KIND_LT: return mk_bool(a, p < q);
        case TIR_KIND_LE: return mk_bool(a, p <= q);
        case TIR_KIND_GT: return mk_bool(a, p > q);
        case TIR_KIND_GE: return mk_bool(a, p >= q);
        case TIR_KIND_AND: return mk_bool(a, p && q);
        case TIR_KIND_OR: return mk_bool(a, p || q);
        default: return NULL;
        }
    }
    const tir_float_imm *fx = tir_as_tir_float_imm(x), *fy = tir_as_tir_float_imm(y);
    if (fx && fy) {
        /* a constant means its value rounded to its dtype, as everywhere
         * else (T.float16(1e30) is inf); 16- and 32-bit floor division
         * runs in float32, as the interpreter and codegen run it */
        double p = round_to(t, fx->value), q = round_to(t, fy->value);
        bool narrow = t.bits <= 32;
        float fp = (float)p, fq = (float)q;
        switch (k) {
        case TIR_KIND_ADD: return mk_float(a, t, p + q);
        case TIR_KIND_SUB: return mk_float(a, t, p - q);
        case TIR_KIND_MUL: return mk_float(a, t, p * q);
        case TIR_KIND_DIV: return q == 0 ? NULL : mk_float(a, t, p / q);
        case TIR_KIND_MOD: return q == 0 ? NULL : mk_float(a, t, fmod(p, q));
        case TIR_KIND_FLOORDIV:
            if (q == 0) return NULL;
            return mk_float(a, t, narrow ? (double)floorf(fp / fq) : floor(p / q));
        case TIR_KIND_FLOORMOD:
            if (q == 0) return NULL;
            return mk_float(a, t, narrow ? (double)(fp - floorf(fp / fq) * fq) : p - floor(p / q) * q);
        /* of two equal ones (+0 and -0) the second, as the interpreter
           and codegen compute min/max (`a < b or b is NaN ? a : b`): the
           first (p <= q) gave +0 for min(+0, -0) where they give -0 */
        case TIR_KIND_MIN:
            return isnan(p) || isnan(q) ? NULL : p < q ? x : y;
        case TIR_KIND_MAX:
            return isnan(p) || isnan(q) ? NULL : p > q ? x : y;
        case TIR_KIND_EQ: return mk_bool(a, p == q);
        case TIR_KIND_NE: return mk_bool(a, p != q);
        case TIR_KIND_LT: return mk_bool(a, p < q);
        case TIR_KIND_LE: return mk_bool(a, p <= q);
        case TIR_KIND_GT: return mk_bool(a, p > q);
        case TIR_KIND_GE: return mk_bool(a, p >= q);
        default: return NULL;
        }
    }
    return NULL;
}

/* Folds cast(t, c) of a constant; NULL when it cannot (float -> uint64
 * out of int64's range, NaN -> bool). */
static const tir_expr *fold_cast(tir_analyzer *a, tir_dtype t, const tir_expr *c) {
    if (t.lanes != 1) return NULL;
    const tir_int_imm *i = tir_as_tir_int_imm(c);
    const tir_float_imm *f = tir_as_tir_float_imm(c);
    if (i) {
        if (tir_dtype_is_int(t) || tir_dtype_is_bool(t)) return mk_int(a, t, i->value);
        if (tir_dtype_is_float(t)) {
            /* rounded once, as the interpreter and the hardware convert:
               to float64 directly, to a narrower float from the double
               rounded to odd (plain (double) first could round twice) */
            bool u = c->dtype.code == TIR_TYPE_UINT && c->dtype.bits == 64;
            double v = t.bits == 64 ? (u ? (double)(uint64_t)i->value : (double)i->value)
                                    : ir_int_to_double_odd(i->value, u);
            return mk_float(a, t, v);
        }
        return NULL;
    }
    if (f) {
        double fv = round_to(c->dtype, f->value); /* the constant's value in its dtype */
        if (tir_dtype_is_float(t)) return mk_float(a, t, fv);
        if (tir_dtype_is_bool(t)) return isnan(fv) ? NULL : mk_bool(a, fv != 0);
        if (tir_dtype_is_int(t)) {
            /* truncated and saturated to the range, NaN to 0, as the
             * interpreter and codegen convert (llvm.fptosi.sat /
             * fptoui.sat, PTX cvt.rzi; lowered-ir.md).  Left unfolded,
             * int32(T.float32("inf")) was an atom of unknown value that the
             * rules take for an index, which does not overflow: once a
             * select of it and a load folded to it (the data gone),
             * max(int32(inf) + INT32_MAX, INT32_MAX) became
             * max(int32(inf), 0) + INT32_MAX, -2 where the value is
             * INT32_MAX (the float fuzzer, seed 214 case 56432) */
            double v = trunc(fv);
            bool u64 = t.code == TIR_TYPE_UINT && t.bits >= 64;
            if (isnan(v)) return u64 ? NULL : mk_int(a, t, 0);
            if (t.bits >= 64) {
                /* (double)INT64_MAX rounds up to 2^63, which does not convert */
                if (v >= 0x1p63) return u64 ? NULL : mk_int(a, t, INT64_MAX);
                if (v < -0x1p63) return u64 ? mk_int(a, t, 0) : mk_int(a, t, INT64_MIN);
                if (u64 && v < 0) return mk_int(a, t, 0);
                return mk_int(a, t, (int64_t)v);
            }
            tir_int_bound r = ar_dtype_bound(t);
            if (v <= (double)r.min) return mk_int(a, t, r.min);
            if (v >= (double)r.max) return mk_int(a, t, r.max);
            return mk_int(a, t, (int64_t)v);
        }
    }
    return NULL;
}

/* ---------------------------------------------------------------- ordering */

static int cmp_i64(int64_t x, int64_t y) { return (x > y) - (x < y); }

static int cmp_exprs(int n, const tir_expr *const *x, const tir_expr *const *y) {
    for (int i = 0; i < n; i++) {
        int c = ar_expr_cmp(x[i], y[i]);
        if (c) return c;
    }
    return 0;
}

int ar_expr_cmp(const tir_expr *x, const tir_expr *y) {
    if (x == y) return 0;
    if (x->kind != y->kind) return x->kind < y->kind ? -1 : 1;
    int c = cmp_i64(x->dtype.code, y->dtype.code);
    if (!c) c = cmp_i64(x->dtype.bits, y->dtype.bits);
    if (!c) c = cmp_i64(x->dtype.lanes, y->dtype.lanes);
    if (c) return c;
    switch ((tir_kind)x->kind) {
    case TIR_KIND_INT_IMM:
        return cmp_i64(((const tir_int_imm *)x)->value, ((const tir_int_imm *)y)->value);
    case TIR_KIND_FLOAT_IMM: {
        double p = ((const tir_float_imm *)x)->value, q = ((const tir_float_imm *)y)->value;
        uint64_t u, v;
        memcpy(&u, &p, sizeof u);
        memcpy(&v, &q, sizeof v);
        return (u > v) - (u < v);
    }
    case TIR_KIND_VAR: return cmp_i64(((const tir_var *)x)->id, ((const tir_var *)y)->id);
    case TIR_KIND_ADD: case TIR_KIND_SUB: case TIR_KIND_MUL: case TIR_KIND_DIV:
    case TIR_KIND_MOD: case TIR_KIND_FLOORDIV: case TIR_KIND_FLOORMOD: case TIR_KIND_MIN:
    case TIR_KIND_MAX: case TIR_KIND_EQ: case TIR_KIND_NE: case TIR_KIND_LT:
    case TIR_KIND_LE: case TIR_KIND_GT: case TIR_KIND_GE: case TIR_KIND_AND:
    case TIR_KIND_OR: {
        const tir_binop *p = (const tir_binop *)x, *q = (const tir_binop *)y;
        c = ar_expr_cmp(p->a, q->a);
        return c ? c : ar_expr_cmp(p->b, q->b);
    }
    case TIR_KIND_NOT: return ar_expr_cmp(((const tir_not *)x)->a, ((const tir_not *)y)->a);
    case TIR_KIND_SELECT: {
        const tir_select *p = (const tir_select *)x, *q = (const tir_select *)y;
        if ((c = ar_expr_cmp(p->cond, q->cond))) return c;
        if ((c = ar_expr_cmp(p->t, q->t))) return c;
        return ar_expr_cmp(p->f, q->f);
    }
    case TIR_KIND_CAST:
        return ar_expr_cmp(((const tir_cast *)x)->value, ((const tir_cast *)y)->value);
    case TIR_KIND_BUFFER_LOAD: {
        const tir_buffer_load *p = (const tir_buffer_load *)x, *q = (const tir_buffer_load *)y;
        if ((c = cmp_i64(p->buffer->id, q->buffer->id))) return c;
        if ((c = cmp_i64(p->nidx, q->nidx))) return c;
        return cmp_exprs(p->nidx, p->indices, q->indices);
    }
    case TIR_KIND_RAMP: {
        const tir_ramp *p = (const tir_ramp *)x, *q = (const tir_ramp *)y;
        if ((c = ar_expr_cmp(p->start, q->start))) return c;
        return ar_expr_cmp(p->stride, q->stride);
    }
    case TIR_KIND_BROADCAST:
        return ar_expr_cmp(((const tir_broadcast *)x)->value, ((const tir_broadcast *)y)->value);
    case TIR_KIND_CALL: {
        const tir_call *p = (const tir_call *)x, *q = (const tir_call *)y;
        if ((c = cmp_i64(p->op, q->op))) return c;
        if ((c = cmp_i64(p->nargs, q->nargs))) return c;
        return cmp_exprs(p->nargs, p->args, q->args);
    }
    case TIR_KIND_LET: {
        const tir_let *p = (const tir_let *)x, *q = (const tir_let *)y;
        if ((c = cmp_i64(p->var->id, q->var->id))) return c;
        if ((c = ar_expr_cmp(p->value, q->value))) return c;
        return ar_expr_cmp(p->body, q->body);
    }
    default: break;
    }
    TIR_UNREACHABLE();
}

/* ------------------------------------------------------ linear canonical form */

typedef struct term {
    const tir_expr *atom;
    int64_t coef;
} term;

/* sum of t[i].coef * t[i].atom + k; terms sorted by atom, no zero coefs.
 * Lives in scratch memory and is never modified once built. */
typedef struct lsum {
    tir_dtype dt;
    int n;
    term *t;
    int64_t k;
} lsum;

static lsum sum_const(tir_dtype dt, int64_t k) { return (lsum){dt, 0, NULL, ar_wrap(dt, k)}; }

static lsum sum_atom(tir_analyzer *a, const tir_expr *atom, int64_t coef) {
    tir_dtype dt = atom->dtype;
    coef = ar_wrap(dt, coef);
    if (coef == 0) return sum_const(dt, 0);
    term *t = ar_scratch(a, sizeof *t);
    t->atom = atom;
    t->coef = coef;
    return (lsum){dt, 1, t, 0};
}

/* x + ys * y */
static lsum sum_add(tir_analyzer *a, lsum x, lsum y, int64_t ys) {
    tir_dtype dt = x.dt;
    lsum r = {dt, 0, NULL, wadd(dt, x.k, wmul(dt, ys, y.k))};
    if (x.n + y.n == 0) return r;
    r.t = ar_scratch(a, sizeof(term) * (size_t)(x.n + y.n));
    int i = 0, j = 0;
    while (i < x.n || j < y.n) {
        int c = i == x.n ? 1 : j == y.n ? -1 : ar_expr_cmp(x.t[i].atom, y.t[j].atom);
        term t;
        if (c < 0) {
            t = x.t[i++];
        } else if (c > 0) {
            t = y.t[j++];
            t.coef = wmul(dt, t.coef, ys);
        } else {
            t = x.t[i++];
            t.coef = wadd(dt, t.coef, wmul(dt, y.t[j++].coef, ys));
        }
        if (t.coef != 0) r.t[r.n++] = t;
    }
    return r;
}

/* sum_add in int64 arithmetic that must not wrap: *ok becomes false when a
 * coefficient or the constant overflows (bounds and proofs cannot use a
 * wrapped sum: -1 * INT64_MIN is INT64_MIN). */
static lsum sum_add_exact(tir_analyzer *a, lsum x, lsum y, int64_t ys, bool *ok) {
    int64_t t;
    if (__builtin_mul_overflow(y.k, ys, &t) || __builtin_add_overflow(x.k, t, &t)) *ok = false;
    for (int i = 0; i < y.n && *ok; i++)
        if (__builtin_mul_overflow(y.t[i].coef, ys, &t)) *ok = false;
    for (int i = 0, j = 0; i < x.n && *ok; i++) { /* like terms: their coefficients add */
        while (j < y.n && ar_expr_cmp(y.t[j].atom, x.t[i].atom) < 0) j++;
        if (j < y.n && !ar_expr_cmp(y.t[j].atom, x.t[i].atom) &&
            __builtin_add_overflow(x.t[i].coef, y.t[j].coef * ys, &t))
            *ok = false;
    }
    return sum_add(a, x, y, ys);
}

/* True when x + ys * y, in mathematical integers, keeps its constant and
 * every coefficient in the range of its dtype: then the sum sum_add builds
 * did not wrap, and it is the value of what it stands for wherever that
 * is defined.  A signed index sum is read as its value (bounds, proofs,
 * the division rules), so one that wrapped must not be built: in int32
 * i - (-2147483648) became i + -2147483648, whose bounds said "negative"
 * where the value (i < 0) is i + 2^31; floormod(j, 64) for j near
 * INT32_MIN became j + 2^31, wrapped to j - 2^31 (the index fuzzer). */
static bool sum_add_fits(lsum x, lsum y, int64_t ys) {
    tir_int_bound r = ar_dtype_bound(x.dt);
    int64_t v, t;
    if (__builtin_mul_overflow(y.k, ys, &t) || __builtin_add_overflow(x.k, t, &v) ||
        v < r.min || v > r.max)
        return false;
    int i = 0, j = 0;
    while (i < x.n || j < y.n) {
        int c = i == x.n ? 1 : j == y.n ? -1 : ar_expr_cmp(x.t[i].atom, y.t[j].atom);
        if (c < 0) {
            i++; /* x's coefficient as it is */
            continue;
        }
        if (__builtin_mul_overflow(y.t[j++].coef, ys, &v)) return false;
        if (c == 0 && __builtin_add_overflow(x.t[i++].coef, v, &v)) return false;
        if (v < r.min || v > r.max) return false;
    }
    return true;
}

static bool sum_reads_data(const tir_analyzer *a, lsum s);

/* A signed sum of indices (not of loaded data, which wraps by definition)
 * with terms: one that must not wrap (sum_add_fits).  Constants alone fold
 * wrapping, right for data and for indices alike (an overflowing index is
 * undefined). */
static bool index_sum(const tir_analyzer *a, lsum x, lsum y) {
    return x.dt.code == TIR_TYPE_INT && x.n + y.n > 0 && !sum_reads_data(a, x) &&
           !sum_reads_data(a, y);
}

static lsum sum_scale(tir_analyzer *a, lsum x, int64_t c) {
    tir_dtype dt = x.dt;
    lsum r = {dt, 0, NULL, wmul(dt, x.k, c)};
    if (!x.n || wmul(dt, c, 1) == 0) return r;
    r.t = ar_scratch(a, sizeof(term) * (size_t)x.n);
    for (int i = 0; i < x.n; i++) {
        term t = x.t[i];
        t.coef = wmul(dt, t.coef, c);
        if (t.coef) r.t[r.n++] = t;
    }
    return r;
}

/* The sum without terms i and j (-1: none). */
static lsum sum_without(tir_analyzer *a, lsum s, int i, int j) {
    lsum r = s;
    r.n = 0;
    r.t = ar_scratch(a, sizeof(term) * (size_t)(s.n ? s.n : 1));
    for (int m = 0; m < s.n; m++)
        if (m != i && m != j) r.t[r.n++] = s.t[m];
    return r;
}

/* gcd of the coefficients (not the constant); 0 for no terms. */
static int64_t sum_gcd(lsum s) {
    int64_t g = 0;
    for (int i = 0; i < s.n; i++) g = ir_gcd64(g, s.t[i].coef);
    return g;
}

static bool negatable(tir_dtype dt, int64_t c) {
    return c != INT64_MIN && ar_wrap(dt, -c) == -c;
}

static const tir_expr *term_expr(tir_analyzer *a, tir_dtype dt, const tir_expr *atom, int64_t c) {
    return c == 1 ? atom : mk_bin(a, TIR_KIND_MUL, atom, mk_int(a, dt, c));
}

/* Positive terms first (in order), then negative ones subtracted, then the
 * constant; with no positive term a nonzero constant leads (`5 - x`). */
static const tir_expr *sum_to_expr(tir_analyzer *a, lsum s) {
    tir_dtype dt = s.dt;
    const tir_expr *acc = NULL;
    bool kdone = false;
    for (int i = 0; i < s.n; i++) {
        if (s.t[i].coef > 0 || !negatable(dt, s.t[i].coef)) {
            const tir_expr *t = term_expr(a, dt, s.t[i].atom, s.t[i].coef);
            acc = acc ? mk_bin(a, TIR_KIND_ADD, acc, t) : t;
        }
    }
    if (!acc && s.k != 0) {
        acc = mk_int(a, dt, s.k);
        kdone = true;
    }
    for (int i = 0; i < s.n; i++) {
        int64_t c = s.t[i].coef;
        if (c > 0 || !negatable(dt, c)) continue;
        if (acc)
            acc = mk_bin(a, TIR_KIND_SUB, acc, term_expr(a, dt, s.t[i].atom, -c));
        else
            acc = term_expr(a, dt, s.t[i].atom, c);
    }
    if (!acc) return mk_int(a, dt, s.k);
    if (!kdone && s.k != 0) {
        if (s.k < 0 && negatable(dt, s.k))
            acc = mk_bin(a, TIR_KIND_SUB, acc, mk_int(a, dt, -s.k));
        else
            acc = mk_bin(a, TIR_KIND_ADD, acc, mk_int(a, dt, s.k));
    }
    return acc;
}

static tir_int_bound sum_bound(tir_analyzer *a, lsum s) {
    /* summed exactly (128 bits), with infinite ends apart: a partial sum
     * past int64 is no infinity when later terms bring it back (2*m +
     * int64(i) for m in [2^62, 2^62 + 1], i near -2^31 is below INT64_MAX,
     * but 2*m saturated to +inf, which made the lower end +inf and decided
     * i + select(.., m, ..) + m <= 2^63 - 2147483509 false; the index
     * fuzzer), and INT64_MIN / INT64_MAX as the constant is a value, not an
     * infinite end (v == -INT64_MAX for v in [-INT64_MAX, -1], as v +
     * INT64_MAX == 0, was decided false from [+inf, +inf]) */
    __int128 lo = s.k, hi = s.k;
    bool lo_inf = false, hi_inf = false;
    for (int i = 0; i < s.n && !(lo_inf && hi_inf); i++) {
        tir_int_bound b = ar_bound(a, s.t[i].atom);
        int64_t c = s.t[i].coef;
        int64_t l = c > 0 ? b.min : b.max, h = c > 0 ? b.max : b.min;
        if (l == AR_NEG_INF || l == AR_POS_INF) lo_inf = true;
        else lo += (__int128)l * c;
        if (h == AR_NEG_INF || h == AR_POS_INF) hi_inf = true;
        else hi += (__int128)h * c;
    }
    /* an end past int64 saturates there (still a bound of the value) */
    tir_int_bound r;
    r.min = lo_inf || lo < INT64_MIN ? AR_NEG_INF : lo > INT64_MAX ? AR_POS_INF : (int64_t)lo;
    r.max = hi_inf || hi > INT64_MAX ? AR_POS_INF : hi < INT64_MIN ? AR_NEG_INF : (int64_t)hi;
    return r;
}

static lsum linear(tir_analyzer *a, const tir_expr *e);

/* Factors of a product, flattened, constants folded into *coef. */
static bool collect_factors(const tir_expr *e, const tir_expr **fs, int *n, int cap,
                            int64_t *coef, tir_dtype dt) {
    const tir_binop *m = e->kind == TIR_KIND_MUL ? (const tir_binop *)e : NULL;
    if (m) return collect_factors(m->a, fs, n, cap, coef, dt) &&
                  collect_factors(m->b, fs, n, cap, coef, dt);
    int64_t v;
    if (const_of(e, &v)) {
        *coef = wmul(dt, *coef, v);
        return true;
    }
    if (*n == cap) return false;
    fs[(*n)++] = e;
    return true;
}

static int cmp_expr_ptr(const void *x, const void *y) {
    return ar_expr_cmp(*(const tir_expr *const *)x, *(const tir_expr *const *)y);
}

/* x * y with neither constant: a single term coef * (sorted product). */
static lsum sum_product(tir_analyzer *a, lsum x, lsum y) {
    tir_dtype dt = x.dt;
    int64_t coef = 1;
    const tir_expr *fx, *fy;
    if (x.n == 1 && x.k == 0) {
        coef = wmul(dt, coef, x.t[0].coef);
        fx = x.t[0].atom;
    } else {
        fx = sum_to_expr(a, x);
    }
    if (y.n == 1 && y.k == 0) {
        coef = wmul(dt, coef, y.t[0].coef);
        fy = y.t[0].atom;
    } else {
        fy = sum_to_expr(a, y);
    }
    enum { CAP = 16 };
    const tir_expr *fs[CAP];
    int n = 0;
    const tir_expr *prod;
    if (collect_factors(fx, fs, &n, CAP, &coef, dt) &&
        collect_factors(fy, fs, &n, CAP, &coef, dt)) {
        if (n == 0) return sum_const(dt, coef);
        qsort(fs, (size_t)n, sizeof *fs, cmp_expr_ptr);
        prod = fs[0];
        for (int i = 1; i < n; i++) prod = mk_bin(a, TIR_KIND_MUL, prod, fs[i]);
    } else {
        prod = ar_expr_cmp(fx, fy) <= 0 ? mk_bin(a, TIR_KIND_MUL, fx, fy)
                                        : mk_bin(a, TIR_KIND_MUL, fy, fx);
    }
    return sum_atom(a, prod, coef);
}

static lsum linear(tir_analyzer *a, const tir_expr *e) {
    switch ((tir_kind)e->kind) {
    case TIR_KIND_INT_IMM: return sum_const(e->dtype, ((const tir_int_imm *)e)->value);
    case TIR_KIND_ADD:
    case TIR_KIND_SUB: {
        const tir_binop *b = (const tir_binop *)e;
        lsum x = linear(a, b->a), y = linear(a, b->b);
        int64_t ys = e->kind == TIR_KIND_ADD ? 1 : -1;
        /* a signed index sum that would wrap stays one atom (sum_add_fits) */
        if (!sum_add_fits(x, y, ys) && index_sum(a, x, y))
            return sum_atom(a, mk_bin(a, (tir_kind)e->kind, sum_to_expr(a, x), sum_to_expr(a, y)),
                            1);
        return sum_add(a, x, y, ys);
    }
    case TIR_KIND_MUL: {
        const tir_binop *b = (const tir_binop *)e;
        lsum x = linear(a, b->a), y = linear(a, b->b);
        if (!y.n || !x.n) {
            lsum v = y.n ? y : x;
            int64_t c = y.n ? x.k : y.k;
            /* (i + 2^30) * 2 is 2i + 2^31, which int32 cannot hold */
            if (!sum_add_fits(sum_const(v.dt, 0), v, c) && index_sum(a, v, v))
                return sum_atom(a, mk_bin(a, TIR_KIND_MUL, sum_to_expr(a, x), sum_to_expr(a, y)),
                                1);
            return sum_scale(a, v, c);
        }
        return sum_product(a, x, y);
    }
    default: {
        const tir_expr *s = ar_simplify(a, e);
        if (s != e && (s->kind == TIR_KIND_ADD || s->kind == TIR_KIND_SUB ||
                       s->kind == TIR_KIND_MUL || s->kind == TIR_KIND_INT_IMM))
            return linear(a, s);
        return sum_atom(a, s, 1);
    }
    }
}

/* ---- merging floordiv / floormod atoms over the same value ---- */

/* An atom read as floormod(floordiv(x, l), u); u == 0 means no modulus,
 * so a plain atom is (atom, 1, 0). */
typedef struct split {
    const tir_expr *x;
    int64_t l, u;
} split;

static bool divmod_by_const(const tir_expr *e, tir_kind k, const tir_expr **x, int64_t *c) {
    if (e->kind != k) return false;
    const tir_binop *b = (const tir_binop *)e;
    if (!const_of(b->b, c) || *c <= 0) return false;
    *x = b->a;
    return true;
}

static split parse_split(const tir_expr *atom) {
    split s = {atom, 1, 0};
    const tir_expr *x, *y;
    int64_t c, l;
    if (divmod_by_const(atom, TIR_KIND_FLOORDIV, &x, &c)) {
        s = (split){x, c, 0};
    } else if (divmod_by_const(atom, TIR_KIND_FLOORMOD, &x, &c)) {
        s = (split){x, 1, c};
        if (divmod_by_const(x, TIR_KIND_FLOORDIV, &y, &l)) s = (split){y, l, c};
    }
    return s;
}

static const tir_expr *split_expr(tir_analyzer *a, split s) {
    tir_dtype dt = s.x->dtype;
    const tir_expr *e = s.x;
    if (s.l != 1) e = mk_bin(a, TIR_KIND_FLOORDIV, e, mk_int(a, dt, s.l));
    if (s.u != 0) e = mk_bin(a, TIR_KIND_FLOORMOD, e, mk_int(a, dt, s.u));
    return ar_simplify(a, e);
}

/* True when s holds every term of x with coefficient k * (x's coefficient). */
static bool sum_contains_scaled(lsum s, lsum x, int64_t k) {
    int i = 0;
    for (int j = 0; j < x.n; j++) {
        while (i < s.n && ar_expr_cmp(s.t[i].atom, x.t[j].atom) < 0) i++;
        if (i == s.n || ar_expr_cmp(s.t[i].atom, x.t[j].atom) != 0) return false;
        if (s.t[i].coef != wmul(s.dt, k, x.t[j].coef)) return false;
    }
    return true;
}

static bool has_divmod(lsum s) {
    for (int i = 0; i < s.n; i++)
        if (s.t[i].atom->kind == TIR_KIND_FLOORDIV || s.t[i].atom->kind == TIR_KIND_FLOORMOD)
            return true;
    return false;
}

/* One merge step; returns true and updates *ps when a rule applied. */
static bool merge_step(tir_analyzer *a, lsum *ps) {
    lsum s = *ps;
    tir_dtype dt = s.dt;
    /* floormod(floordiv(x,l),u)*c + floormod(floordiv(x,l*u),u2)*c*u
     *   -> floormod(floordiv(x,l),u*u2)*c   (u2 == 0: no modulus) */
    for (int i = 0; i < s.n; i++) {
        split p = parse_split(s.t[i].atom);
        if (p.u == 0) continue;
        for (int j = 0; j < s.n; j++) {
            if (j == i) continue;
            split q = parse_split(s.t[j].atom);
            int64_t lu, cu, uu = 0;
            if (__builtin_mul_overflow(p.l, p.u, &lu) || q.l != lu) continue;
            if (__builtin_mul_overflow(s.t[i].coef, p.u, &cu) || s.t[j].coef != ar_wrap(dt, cu))
                continue;
            if (q.u != 0 && __builtin_mul_overflow(p.u, q.u, &uu)) continue;
            if (!ar_expr_eq(p.x, q.x)) continue;
            /* an index sum's c*u and u*u2 are values, not wrapped images */
            bool idx = index_sum(a, s, s);
            if (idx && (ar_wrap(dt, cu) != cu || ar_wrap(dt, uu) != uu)) continue;
            const tir_expr *m = split_expr(a, (split){p.x, p.l, uu});
            lsum rest = sum_without(a, s, i, j), lm = linear(a, m);
            if (idx && !sum_add_fits(rest, lm, s.t[i].coef)) continue;
            *ps = sum_add(a, rest, lm, s.t[i].coef);
            return true;
        }
    }
    /* k1*x + k2*floordiv(x,c) with k2 == -k1*c  ->  k1*floormod(x,c)
     * k1*x + k2*floormod(x,c) with k2 == -k1    ->  k1*c*floordiv(x,c) */
    for (int i = 0; i < s.n; i++) {
        const tir_expr *x;
        int64_t c, k2 = s.t[i].coef, k1;
        bool is_div = divmod_by_const(s.t[i].atom, TIR_KIND_FLOORDIV, &x, &c);
        if (!is_div && !divmod_by_const(s.t[i].atom, TIR_KIND_FLOORMOD, &x, &c)) continue;
        if (c <= 1) continue;
        if (is_div) {
            if (k2 % c != 0) continue;
            k1 = -(k2 / c);
        } else {
            if (!negatable(dt, k2)) continue;
            k1 = -k2;
        }
        lsum lx = linear(a, x);
        if (lx.n == 0 || !sum_contains_scaled(s, lx, k1)) continue;
        tir_kind other = is_div ? TIR_KIND_FLOORMOD : TIR_KIND_FLOORDIV;
        const tir_expr *m = ar_simplify(a, mk_bin(a, other, x, mk_int(a, dt, c)));
        /* in an index sum each step must not wrap (sum_add_fits): for i in
         * [-2147483614, +26), floormod(i, 64) - i became -64 * floordiv(i,
         * 64), whose floordiv folds to -33554432, and -64 * -33554432 = 2^31
         * wrapped to INT32_MIN, which proved i > floormod(i, 64) (the index
         * fuzzer); sum_contains_scaled also compares wrapped products */
        bool idx = index_sum(a, s, s);
        int64_t km = is_div ? k1 : wmul(dt, k1, c);
        if (idx && !is_div && (__builtin_mul_overflow(k1, c, &km) || ar_wrap(dt, km) != km))
            continue;
        lsum rest = sum_without(a, s, i, -1), lm = linear(a, m);
        if (idx && !sum_add_fits(rest, lx, -k1)) continue;
        lsum r = sum_add(a, rest, lx, -k1);
        if (idx && !sum_add_fits(r, lm, km)) continue;
        *ps = sum_add(a, r, lm, km);
        return true;
    }
    return false;
}

/* linear(e) with floordiv/floormod pairs merged: the canonical sum. */
static lsum canon(tir_analyzer *a, const tir_expr *e) {
    lsum s = linear(a, e);
    for (int iter = 0; iter < 8 && s.n >= 2 && has_divmod(s); iter++)
        if (!merge_step(a, &s)) break;
    return s;
}

/* True when s, as a mathematical integer, lies in its dtype's range for
 * every value of its atoms.  A sum is built in its dtype and wraps, so it
 * agrees with its expression modulo 2^bits; inside the range the two are
 * then equal, and arithmetic on the sum means arithmetic on the values. */
static bool sum_in_dtype(tir_analyzer *a, lsum s) {
    tir_int_bound b = sum_bound(a, s), r = ar_dtype_bound(s.dt);
    return ar_bound_finite(b) && b.min >= r.min && b.max <= r.max;
}

/* Whether a term of s reads a buffer: a value of the user's data, which
 * wraps as a stored value does, not an index (signed overflow undefined). */
static bool sum_reads_data(const tir_analyzer *a, lsum s) {
    if (a->wrap_values > 0) return true; /* a stored value wraps as a whole */
    for (int i = 0; i < s.n; i++)
        if (tir_reads_buffer(s.t[i].atom)) return true;
    return false;
}

/* x - y as a sum of int64 terms: the difference of the values, not of their
 * dtype's wrapped images (int8: x - (-128) is x + 128, which int8 wraps to
 * x - 128), or n = -1 when it cannot be had.  A signed sum of indices is
 * its value (signed overflow is undefined there, docs/lowered-ir.md); an
 * unsigned one wraps by definition (uint8 x + 200), and so does one that
 * reads data (a stored value wraps), so those must be known not to:
 * linear() keeps constants in the dtype, so their sum is the value only
 * modulo 2^bits (int32 s - INT32_MIN, s a select of loaded data, became
 * s + INT32_MIN, whose bounds [2 INT32_MIN, INT32_MIN - 2] for s in {-2,
 * INT32_MIN} said "never 0" where s - INT32_MIN is 0: the expression
 * fuzzer's seed 1922900003 case 7410 dropped a divisor's guard); within
 * the dtype's range the two agree. */
static lsum canon_diff(tir_analyzer *a, const tir_expr *x, const tir_expr *y) {
    lsum lx = linear(a, x), ly = linear(a, y), none = {lx.dt, -1, NULL, 0};
    bool wraps = lx.dt.code != TIR_TYPE_INT || sum_reads_data(a, lx) || sum_reads_data(a, ly);
    if (wraps && (!sum_in_dtype(a, lx) || !sum_in_dtype(a, ly))) return none;
    bool ok = true;
    lsum s = sum_add_exact(a, lx, ly, -1, &ok);
    if (!ok) return none;
    if (!(s.n >= 2 && has_divmod(s))) {
        if (lx.dt.bits < 64) lx.dt = ly.dt = TIR_I64;
        return sum_add(a, lx, ly, -1);
    }
    /* s's constant is kept in the dtype: a signed index sum's must be the
     * difference's (2147483644 - (i // 2 + j - 5) had 2147483649 wrap to -2147483647 in
     * int32, and max(i // 2 + j - 5, 2147483644) lost its constant) */
    int64_t kd;
    if (!wraps && (__builtin_sub_overflow(lx.k, ly.k, &kd) || s.k != kd)) return none;
    /* and so must its coefficients, which sum_add wraps too: b - a for a =
     * i * -2147483622 and b = 42i - 8 * floordiv(41i, 8) has 2147483664 for
     * i's, which int32 wrapped, and min(a, b) became b (the index fuzzer) */
    if (!wraps && !sum_add_fits(lx, ly, -1)) return none;
    /* merges build their atoms in the dtype, so s wraps there; unsigned, it
     * is the difference when its range and the difference's fit in one span
     * of 2^bits (they agree modulo 2^bits) */
    for (int iter = 0; iter < 8 && s.n >= 2 && has_divmod(s); iter++)
        if (!merge_step(a, &s)) break;
    if (s.dt.bits < 64) {
        if (wraps) {
            tir_int_bound bs = sum_bound(a, s), bx = sum_bound(a, lx), by = sum_bound(a, ly);
            if (!ar_bound_finite(bs)) return none;
            int64_t lo = bx.min - by.max, hi = bx.max - by.min;
            if (bs.min < lo) lo = bs.min;
            if (bs.max > hi) hi = bs.max;
            if (hi - lo >= (int64_t)1 << s.dt.bits) return none;
        }
        s.dt = TIR_I64;
    }
    return s;
}

static bool has_minmax(lsum s) {
    for (int i = 0; i < s.n; i++)
        if (s.t[i].atom->kind == TIR_KIND_MIN || s.t[i].atom->kind == TIR_KIND_MAX) return true;
    return false;
}

/* An end of s's bound (upper or lower) that also tries replacing a min or
 * max term by one of its operands where that moves the term the right way:
 * min(a, b) <= a, so c*min(a, b) with c > 0 is at most c*a. */
static int64_t sum_end(tir_analyzer *a, lsum s, bool upper, int depth) {
    tir_int_bound b0 = sum_bound(a, s);
    int64_t best = upper ? b0.max : b0.min;
    if (depth == 0) return best;
    for (int t = 0; t < s.n; t++) {
        const tir_expr *at = s.t[t].atom;
        int64_t c = s.t[t].coef;
        bool is_min = at->kind == TIR_KIND_MIN;
        if (!is_min && at->kind != TIR_KIND_MAX) continue;
        if ((is_min == (c > 0)) != upper) continue;
        const tir_binop *mb = (const tir_binop *)at;
        for (int side = 0; side < 2; side++) {
            bool ok = true;
            lsum op = linear(a, side ? mb->b : mb->a);
            /* an operand of data wraps: its sum stands for it only in the
               dtype (max(x, min(x - 1, 2048)) for x = INT32_MIN is 2048) */
            if (sum_reads_data(a, op) && !sum_in_dtype(a, op)) continue;
            lsum r = sum_add_exact(a, sum_without(a, s, t, -1), op, c, &ok);
            if (!ok) continue;
            int64_t e = sum_end(a, r, upper, depth - 1);
            if (upper ? e < best : e > best) best = e;
        }
    }
    return best;
}

/* Bound of a canonical sum, helped by min/max operands and, when variables
 * have symbolic ranges, by relaxing them (i < n given i in [0, n)). */
static tir_int_bound sum_bound_strong(tir_analyzer *a, lsum s, bool want_lo, bool want_hi) {
    tir_int_bound b = sum_bound(a, s);
    if (has_minmax(s)) {
        if (want_hi) b.max = sum_end(a, s, true, 3);
        if (want_lo) b.min = sum_end(a, s, false, 3);
    }
    if (a->nsymbolic == 0 || a->sym_depth > 0 || s.n == 0) return b;
    /* a difference from canon_diff is an int64 sum of narrower atoms: as an
     * expression it computes in theirs, so it must fit there */
    tir_dtype adt = s.t[0].atom->dtype;
    if (adt.bits != s.dt.bits || adt.code != s.dt.code) {
        s.dt = adt;
        if (ar_wrap(adt, s.k) != s.k || !sum_in_dtype(a, s)) return b;
        for (int i = 0; i < s.n; i++)
            if (ar_wrap(adt, s.t[i].coef) != s.t[i].coef) return b;
    } else if (!sum_in_dtype(a, s)) {
        /* the ends relaxed below compute in the dtype too, and fold
         * wrapping: an int64 sum that may pass int64 (-8*int64(j) +
         * 2^63 - 79 for j in [i*0 - 10, +11)) had its upper end 80 +
         * (2^63 - 80) fold to a negative constant, which proved
         * -9223372036854775729 >= int64(j) * -8 (the index fuzzer) */
        return b;
    }
    const tir_expr *e = sum_to_expr(a, s);
    a->sym_depth++;
    a->sym_gen++;
    /* an end that may pass the dtype would be folded and bounded wrapping:
     * int64(j*j + j - 2147483631) for j in [i*0 - 7, +34) had the lower end
     * (-182 + (i*0 - 7)) - 2147483631, which proved it greater than 1 (the
     * index fuzzer) */
    if (want_hi) {
        const tir_expr *hi = ar_symbolic_bound(a, e, true);
        if (hi && !ar_may_wrap(a, hi)) {
            tir_int_bound h = ar_bound(a, ar_simplify(a, hi));
            if (h.max < b.max) b.max = h.max;
        }
    }
    if (want_lo) {
        const tir_expr *lo = ar_symbolic_bound(a, e, false);
        if (lo && !ar_may_wrap(a, lo)) {
            tir_int_bound l = ar_bound(a, ar_simplify(a, lo));
            if (l.min > b.min) b.min = l.min;
        }
    }
    a->sym_depth--;
    return b;
}

/* True when x <= y is provable. */
static bool prove_le(tir_analyzer *a, const tir_expr *x, const tir_expr *y) {
    if (ar_expr_eq(x, y)) return true;
    lsum d = canon_diff(a, x, y);
    if (d.n < 0) return false;
    if (d.n == 0) return d.k <= 0;
    return sum_bound_strong(a, d, false, true).max <= 0;
}

/* ------------------------------------------------------------------- rules */

static const tir_expr *simp_add_sub_mul(tir_analyzer *a, const tir_expr *e) {
    return sum_to_expr(a, canon(a, e));
}

static const tir_expr *rebuild_bin(tir_analyzer *a, const tir_binop *b, const tir_expr *x,
                                   const tir_expr *y) {
    if (x == b->a && y == b->b) return &b->base;
    return mk_bin(a, (tir_kind)b->base.kind, x, y);
}

/* floordiv(r, c) for a sum r holding no term divisible by c; as a sum. */
static lsum floordiv_rest(tir_analyzer *a, lsum r, int64_t c) {
    tir_dtype dt = r.dt;
    if (c == 1) return r;
    tir_int_bound b = sum_bound(a, r);
    if (ar_bound_finite(b) && ar_floordiv(b.min, c) == ar_floordiv(b.max, c))
        return sum_const(dt, ar_floordiv(b.min, c));
    if (r.n == 1 && r.k == 0 && r.t[0].coef == 1) {
        const tir_expr *y;
        int64_t d, dc;
        /* floordiv(floordiv(y, d), c) -> floordiv(y, d*c) */
        if (divmod_by_const(r.t[0].atom, TIR_KIND_FLOORDIV, &y, &d) &&
            !__builtin_mul_overflow(d, c, &dc) && ar_wrap(dt, dc) == dc)
            return linear(a, ar_simplify(a, mk_bin(a, TIR_KIND_FLOORDIV, y, mk_int(a, dt, dc))));
        /* floordiv(floormod(y, d), c) with c | d -> floormod(floordiv(y, c), d/c) */
        if (divmod_by_const(r.t[0].atom, TIR_KIND_FLOORMOD, &y, &d) && d % c == 0) {
            const tir_expr *q = mk_bin(a, TIR_KIND_FLOORDIV, y, mk_int(a, dt, c));
            return linear(a, ar_simplify(a, mk_bin(a, TIR_KIND_FLOORMOD, q, mk_int(a, dt, d / c))));
        }
    }
    return sum_atom(a, mk_bin(a, TIR_KIND_FLOORDIV, sum_to_expr(a, r), mk_int(a, dt, c)), 1);
}

/* floormod(r, c) for a sum r holding no term divisible by c; as a sum. */
static lsum floormod_rest(tir_analyzer *a, lsum r, int64_t c) {
    tir_dtype dt = r.dt;
    if (c == 1) return sum_const(dt, 0);
    tir_int_bound b = sum_bound(a, r);
    /* (r - c*q must not wrap: floormod(j, 64) for j in [-2147483610,
       -2147483605] is j + 2^31, not j - 2^31; sum_add_fits) */
    if (ar_bound_finite(b) && ar_floordiv(b.min, c) == ar_floordiv(b.max, c) &&
        (sum_add_fits(r, sum_const(dt, ar_floordiv(b.min, c)), -c) || !index_sum(a, r, r)))
        return sum_add(a, r, sum_const(dt, ar_floordiv(b.min, c)), -c);
    if (r.n == 1 && r.k == 0 && r.t[0].coef == 1) {
        const tir_expr *y;
        int64_t d;
        /* floormod(floormod(y, d), c) with c | d -> floormod(y, c) */
        if (divmod_by_const(r.t[0].atom, TIR_KIND_FLOORMOD, &y, &d) && d % c == 0)
            return linear(a, ar_simplify(a, mk_bin(a, TIR_KIND_FLOORMOD, y, mk_int(a, dt, c))));
    }
    return sum_atom(a, mk_bin(a, TIR_KIND_FLOORMOD, sum_to_expr(a, r), mk_int(a, dt, c)), 1);
}

/* r = g*big + small with g = gcd(c, the largest coefficient), big the
 * terms g divides and small the others and the constant, when 0 <= small
 * < g: then floordiv(r, c) = floordiv(big, c/g) and floormod(r, c) =
 * g*floormod(big, c/g) + small (small never carries into big's digits).
 * E.g. floordiv(t*4 + f, 8) = floordiv(t, 2) for f in [0, 4), which puts
 * the per-thread copies of a fused-and-split fetch back at constant
 * indices.  NULL when this does not apply. */
static const tir_expr *divmod_low(tir_analyzer *a, bool is_div, lsum q, lsum r, int64_t c) {
    int64_t big = 0;
    for (int i = 0; i < r.n; i++)
        if (llabs(r.t[i].coef) > llabs(big)) big = r.t[i].coef;
    int64_t g = ir_gcd64(llabs(big), c);
    if (g <= 1 || g == c) return NULL;
    lsum hi = {r.dt, 0, ar_scratch(a, sizeof(term) * (size_t)r.n), 0};
    lsum lo = {r.dt, 0, ar_scratch(a, sizeof(term) * (size_t)r.n), r.k};
    for (int i = 0; i < r.n; i++) {
        if (r.t[i].coef % g == 0)
            hi.t[hi.n++] = (term){r.t[i].atom, r.t[i].coef / g};
        else
            lo.t[lo.n++] = r.t[i];
    }
    tir_int_bound b = sum_bound(a, lo);
    if (!ar_bound_finite(b) || b.min < 0 || b.max >= g) return NULL;
    /* the pieces' sums must not wrap in an index sum (sum_add_fits): for m
     * in [-2^62 + 21, +33), floormod(2m, 128) = 2 * floormod(m, 64) became
     * 2 * (m + 2^62), which wrapped to 2m + INT64_MIN (the index fuzzer) */
    if (is_div) {
        lsum f = floordiv_rest(a, hi, c / g);
        if (index_sum(a, q, f) && !sum_add_fits(q, f, 1)) return NULL;
        return sum_to_expr(a, sum_add(a, q, f, 1));
    }
    lsum f = floormod_rest(a, hi, c / g);
    if (index_sum(a, f, lo) && (!sum_add_fits(sum_const(f.dt, 0), f, g) ||
                             !sum_add_fits(sum_scale(a, f, g), lo, 1)))
        return NULL;
    return sum_to_expr(a, sum_add(a, sum_scale(a, f, g), lo, 1));
}

/* True when s with its constant replaced by k stays in the dtype wherever
 * s does: k between 0 and s's constant moves toward the terms' value, and
 * past the constant on either side the terms' bounds must allow it. */
static bool shift_keeps_dtype(tir_analyzer *a, lsum s, int64_t k) {
    tir_int_bound r = ar_dtype_bound(s.dt);
    lsum t = s;
    t.k = 0;
    tir_int_bound b = sum_bound(a, t);
    bool up = k <= s.k || (b.max != AR_POS_INF && (__int128)b.max + k <= r.max);
    bool down = k >= s.k || (b.min != AR_NEG_INF && (__int128)b.min + k >= r.min);
    return up && down;
}

/* floordiv / floormod of an int scalar by a positive constant c. */
static const tir_expr *divmod_const(tir_analyzer *a, bool is_div, const tir_expr *x, int64_t c) {
    tir_dtype dt = x->dtype;
    if (c == 1) return is_div ? x : mk_int(a, dt, 0);
    lsum s = canon(a, x);
    /* x, when it reads data, wraps as a stored value does: its sum is its
     * value only within the dtype (floordiv(int32(u) + INT32_MAX, 4), u a
     * uint8, became floordiv(u + 3, 4) + 536870911: 536870912 for u = 1,
     * where INT32_MIN // 4 is -536870912); a floormod by a power of two
     * divides 2^bits and does not see the wrap */
    if (sum_reads_data(a, s) && !sum_in_dtype(a, s) && !((c & (c - 1)) == 0 && !is_div))
        return NULL;
    /* x = c*q + r, with r's constant in [0, c) */
    lsum q = {dt, 0, ar_scratch(a, sizeof(term) * (size_t)(s.n ? s.n : 1)), ar_floordiv(s.k, c)};
    lsum r = {dt, 0, ar_scratch(a, sizeof(term) * (size_t)(s.n ? s.n : 1)), ar_floormod(s.k, c)};
    for (int i = 0; i < s.n; i++) {
        if (s.t[i].coef % c == 0)
            q.t[q.n++] = (term){s.t[i].atom, s.t[i].coef / c};
        else
            r.t[r.n++] = s.t[i];
    }
    if (r.n == 0) return sum_to_expr(a, is_div ? q : sum_const(dt, r.k));
    /* r's constant moved by a multiple of c, or terms moved out to q, so r
     * can pass the dtype's range where x does not: floormod(-1 - x,
     * 2^63 - 1) became floormod(2^63 - 2 - x, ...), which wraps for x < -1;
     * int8 floordiv(3 a + b + c, 3) became floordiv(b + c, 3) + a, and
     * b + c wraps for a = -32, b = c = 100 (review).  A floormod by a
     * power of two does not see the wrap (it divides 2^bits); otherwise r
     * must fit by bounds, or x stays as it is. */
    bool pow2 = (c & (c - 1)) == 0;
    /* ... but an index sum that may wrap where x does not is no index, and
     * a merge reads floormod(i + 30, 32) as i + 30 - 32 * floordiv(i + 30,
     * 32), which is wrong where i + 30 wraps (floormod(i - 2, 32) for i
     * near INT32_MAX became it, and max(i - 2147483585, floormod(i - 1,
     * 32)) lost its first operand; the index fuzzer): for an index sum
     * only a constant that moves toward x's is free (x + 7 -> x + 3), and
     * one that moves away must keep r in the dtype by bounds */
    bool data = sum_reads_data(a, s) || dt.code != TIR_TYPE_INT;
    bool shift_ok = pow2 && !is_div && (data || (q.n == 0 && shift_keeps_dtype(a, s, r.k)));
    if ((r.k != s.k || q.n > 0) && !shift_ok && !sum_in_dtype(a, r)) return NULL;

    const tir_expr *lo = divmod_low(a, is_div, q, r, c);
    if (lo) return lo;
    /* r = g*r' + r1 with g = gcd(coefs, c): floordiv(r, c) = floordiv(r'+q1, c/g) */
    int64_t g = ir_gcd64(sum_gcd(r), c);
    lsum rr = r;
    int64_t r1 = 0;
    if (g > 1) {
        rr.t = ar_scratch(a, sizeof(term) * (size_t)r.n);
        for (int i = 0; i < r.n; i++) rr.t[i] = (term){r.t[i].atom, r.t[i].coef / g};
        rr.k = r.k / g;
        r1 = r.k % g;
    }
    /* (as in divmod_low: an index sum must not wrap) */
    if (is_div) {
        lsum f = floordiv_rest(a, rr, c / g);
        if (index_sum(a, q, f) && !sum_add_fits(q, f, 1)) return NULL;
        return sum_to_expr(a, sum_add(a, q, f, 1));
    }
    lsum f = floormod_rest(a, rr, c / g);
    if (index_sum(a, f, f) && (!sum_add_fits(sum_const(dt, 0), f, g) ||
                            !sum_add_fits(sum_scale(a, f, g), sum_const(dt, r1), 1)))
        return NULL;
    lsum m = sum_scale(a, f, g);
    m.k = wadd(dt, m.k, r1);
    return sum_to_expr(a, m);
}

static const tir_expr *simp_divmod(tir_analyzer *a, const tir_binop *b) {
    tir_kind k = (tir_kind)b->base.kind;
    const tir_expr *x = ar_simplify(a, b->a), *y = ar_simplify(a, b->b);
    const tir_expr *f = fold_binop(a, k, x, y);
    if (f) return f;
    tir_dtype dt = b->base.dtype;
    int64_t c;
    bool cst = const_of(y, &c);
    if (!tir_dtype_is_int(dt) || dt.lanes != 1) {
        if (tir_dtype_is_int(dt) && tir_as_tir_broadcast(x) && tir_as_tir_broadcast(y))
            return tir_broadcast_new(
                a->ctx,
                ar_simplify(a, mk_bin(a, k, ((const tir_broadcast *)x)->value,
                                      ((const tir_broadcast *)y)->value)),
                dt.lanes);
        return rebuild_bin(a, b, x, y);
    }
    if (dt.code == TIR_TYPE_UINT) {
        if (cst && c == 1)
            return (k == TIR_KIND_DIV || k == TIR_KIND_FLOORDIV) ? x : mk_int(a, dt, 0);
        return rebuild_bin(a, b, x, y);
    }
    bool is_div = k == TIR_KIND_DIV || k == TIR_KIND_FLOORDIV;
    if (cst && c > 0) {
        /* truncating division agrees with floor division on x >= 0 */
        if (k == TIR_KIND_FLOORDIV || k == TIR_KIND_FLOORMOD || ar_bound(a, x).min >= 0) {
            const tir_expr *d = divmod_const(a, is_div, x, c);
            return d ? d : rebuild_bin(a, b, x, y);
        }
        if (c == 1) return is_div ? x : mk_int(a, dt, 0);
        return rebuild_bin(a, b, x, y);
    }
    if (cst && c == -1 && (k == TIR_KIND_FLOORDIV || k == TIR_KIND_DIV)) {
        lsum s = canon(a, x);
        /* -(a + INT32_MIN) is -a + 2^31, not -a - 2^31 (sum_add_fits) */
        if (sum_add_fits(sum_const(dt, 0), s, -1) || !index_sum(a, s, s))
            return sum_to_expr(a, sum_scale(a, s, -1));
        return rebuild_bin(a, b, x, y);
    }
    if (cst && c == -1) return mk_int(a, dt, 0);
    if (!cst) {
        /* 0 <= x < y: floordiv -> 0, floormod -> x */
        tir_int_bound bx = ar_bound(a, x), by = ar_bound(a, y);
        if (bx.min >= 0 && by.min > 0 && bx.max < by.min) return is_div ? mk_int(a, dt, 0) : x;
    }
    return rebuild_bin(a, b, x, y);
}

/* ---- min / max ---- */

/* Flattens nested min (or max) before simplifying: only the leaves are
 * simplified on their own, so a chain this function built comes back the
 * same (simplifying a sub-chain alone could pull out a constant that the
 * whole chain does not share). */
static void push_operands(tir_analyzer *a, tir_kind k, const tir_expr *e, const tir_expr **ops,
                          int *n, int cap, bool *overflow) {
    if (e->kind != k) e = ar_simplify(a, e);
    if (e->kind == k) {
        push_operands(a, k, ((const tir_binop *)e)->a, ops, n, cap, overflow);
        push_operands(a, k, ((const tir_binop *)e)->b, ops, n, cap, overflow);
        return;
    }
    if (*n == cap) {
        *overflow = true;
        return;
    }
    ops[(*n)++] = e;
}

/* True when the min (is_min) of {x, y} is x for every value. */
static bool dominates(tir_analyzer *a, bool is_min, const tir_expr *x, const tir_expr *y) {
    /* min(x, max(x, z)) = x and max(x, min(x, z)) = x */
    tir_kind other = is_min ? TIR_KIND_MAX : TIR_KIND_MIN;
    if (y->kind == other) {
        const tir_binop *o = (const tir_binop *)y;
        if (ar_expr_eq(o->a, x) || ar_expr_eq(o->b, x)) return true;
    }
    return is_min ? prove_le(a, x, y) : prove_le(a, y, x);
}

static int cmp_minmax_operand(const void *p, const void *q) {
    const tir_expr *x = *(const tir_expr *const *)p, *y = *(const tir_expr *const *)q;
    bool cx = x->kind == TIR_KIND_INT_IMM, cy = y->kind == TIR_KIND_INT_IMM;
    if (cx != cy) return cx ? 1 : -1;
    return ar_expr_cmp(x, y);
}

static const tir_expr *simp_int_minmax(tir_analyzer *a, const tir_binop *b) {
    tir_kind k = (tir_kind)b->base.kind;
    bool is_min = k == TIR_KIND_MIN;
    tir_dtype dt = b->base.dtype;
    enum { CAP = 16 };
    const tir_expr *ops[CAP];
    int n = 0;
    bool overflow = false;
    push_operands(a, k, b->a, ops, &n, CAP, &overflow);
    push_operands(a, k, b->b, ops, &n, CAP, &overflow);
    if (overflow) return rebuild_bin(a, b, ar_simplify(a, b->a), ar_simplify(a, b->b));
    /* fold the constants into one */
    int64_t cval = 0;
    bool has_c = false;
    int m = 0;
    for (int i = 0; i < n; i++) {
        int64_t v;
        if (const_of(ops[i], &v)) {
            cval = !has_c ? v : is_min ? (v < cval ? v : cval) : (v > cval ? v : cval);
            has_c = true;
        } else {
            ops[m++] = ops[i];
        }
    }
    n = m;
    if (has_c) ops[n++] = mk_int(a, dt, cval);
    /* drop operands another one dominates */
    bool alive[CAP];
    for (int i = 0; i < n; i++) alive[i] = true;
    for (int i = 0; i < n; i++) {
        if (!alive[i]) continue;
        for (int j = i + 1; j < n && alive[i]; j++) {
            if (!alive[j]) continue;
            if (dominates(a, is_min, ops[i], ops[j]))
                alive[j] = false;
            else if (dominates(a, is_min, ops[j], ops[i]))
                alive[i] = false;
        }
    }
    m = 0;
    for (int i = 0; i < n; i++)
        if (alive[i]) ops[m++] = ops[i];
    n = m;
    if (n == 1) return ops[0];
    /* a shared additive constant moves out: min(x + 2, y + 2) -> min(x, y) + 2 */
    int64_t off = 0;
    bool same_off = true, first = true;
    for (int i = 0; i < n && same_off; i++) {
        if (ops[i]->kind == TIR_KIND_INT_IMM) continue;
        lsum s = linear(a, ops[i]);
        if (first) off = s.k;
        else if (s.k != off) same_off = false;
        first = false;
    }
    /* each operand without the offset must fit the dtype by bounds: in
     * max(0 - s + -8, 0) with s = INT32_MIN possible, 0 - s wraps and
     * max(0 - s, 8) - 8 gave 0 where the value is 2^31 - 8 */
    for (int i = 0; i < n && same_off && off != 0; i++) {
        /* exact: min(x - 5, INT64_MAX) moved INT64_MAX + 5, which wrapped */
        bool ok = true;
        lsum li = linear(a, ops[i]);
        lsum w = sum_add_exact(a, li, sum_const(dt, off), -1, &ok);
        if (!ok || !sum_in_dtype(a, w)) same_off = false;
        /* sum_add keeps w's constant in the dtype: it must not have wrapped
           there (max(i // 2 + j - 5, 2147483644) moved 2147483644 + 5) */
        int64_t k2;
        if (__builtin_sub_overflow(li.k, off, &k2) || ar_wrap(dt, k2) != k2) same_off = false;
        /* and an operand of data must not wrap itself: max(int32(x) +
           INT32_MAX, 0) for a uint8 x is 0 for x = 1, where max(x,
           -INT32_MAX) + INT32_MAX gave INT32_MIN (canon_diff) */
        if (sum_reads_data(a, li) && !sum_in_dtype(a, li)) same_off = false;
    }
    if (same_off && off != 0 && negatable(dt, off)) {
        /* the operands without the offset may flatten and dominate further
         * (max(max(y, 3) + 3, y + 3) -> max(y, 3) + 3): simplify again */
        const tir_expr *r = NULL;
        for (int i = 0; i < n; i++) {
            lsum without = sum_add(a, linear(a, ops[i]), sum_const(dt, off), -1);
            const tir_expr *o = sum_to_expr(a, without);
            r = r ? mk_bin(a, k, r, o) : o;
        }
        return sum_to_expr(a, sum_add(a, linear(a, ar_simplify(a, r)), sum_const(dt, off), 1));
    }
    qsort(ops, (size_t)n, sizeof *ops, cmp_minmax_operand);
    const tir_expr *r = ops[0];
    for (int i = 1; i < n; i++) r = mk_bin(a, k, r, ops[i]);
    return r;
}

static const tir_expr *simp_minmax(tir_analyzer *a, const tir_binop *b) {
    tir_kind k = (tir_kind)b->base.kind;
    tir_dtype dt = b->base.dtype;
    if (is_int_scalar(dt)) return simp_int_minmax(a, b);
    const tir_expr *x = ar_simplify(a, b->a), *y = ar_simplify(a, b->b);
    const tir_expr *f = fold_binop(a, k, x, y);
    if (f) return f;
    if (tir_as_tir_broadcast(x) && tir_as_tir_broadcast(y))
        return tir_broadcast_new(a->ctx,
                                 ar_simplify(a, mk_bin(a, k, ((const tir_broadcast *)x)->value,
                                                       ((const tir_broadcast *)y)->value)),
                                 dt.lanes);
    if (tir_dtype_is_int(dt) && ar_expr_eq(x, y)) return x;
    return rebuild_bin(a, b, x, y);
}


/* ---- comparisons ---- */

static lsum sum_pick(tir_analyzer *a, lsum s, bool positive, bool negate) {
    lsum r = {s.dt, 0, ar_scratch(a, sizeof(term) * (size_t)(s.n ? s.n : 1)), 0};
    for (int i = 0; i < s.n; i++)
        if ((s.t[i].coef > 0) == positive)
            r.t[r.n++] = (term){s.t[i].atom, negate ? -s.t[i].coef : s.t[i].coef};
    return r;
}

/* Integer comparisons become d < 0, d == 0 or d != 0 for a canonical d,
 * decided by bounds when possible, and otherwise written back as
 * P < N + c (P <= N when c is 1), c <= N, or P == N + c (P and N: the
 * positive and the negated negative terms of d, so every coefficient is
 * positive). */
static const tir_expr *simp_int_compare(tir_analyzer *a, tir_kind k, const tir_expr *x,
                                        const tir_expr *y) {
    tir_dtype dt = x->dtype;
    if (k == TIR_KIND_GT || k == TIR_KIND_GE) {
        const tir_expr *t = x;
        x = y;
        y = t;
        k = k == TIR_KIND_GT ? TIR_KIND_LT : TIR_KIND_LE;
    }
    const tir_kind k0 = k; /* for giving up: k changes below with d */
    lsum d = canon_diff(a, x, y);
    if (d.n < 0) return mk_bin(a, k, x, y);
    if (k == TIR_KIND_LE) {
        /* integers: d <= 0  <=>  d - 1 < 0 */
        if (d.k == INT64_MIN || ar_wrap(d.dt, d.k - 1) != d.k - 1) return mk_bin(a, k0, x, y);
        d.k = d.k - 1;
        k = TIR_KIND_LT;
    }
    if (d.n == 0) {
        bool v = k == TIR_KIND_LT ? d.k < 0 : k == TIR_KIND_EQ ? d.k == 0 : d.k != 0;
        return mk_bool(a, v);
    }
    tir_int_bound bd = sum_bound_strong(a, d, true, true);
    if (k == TIR_KIND_LT) {
        if (bd.max < 0) return mk_bool(a, true);
        if (bd.min >= 0) return mk_bool(a, false);
    } else {
        bool never = bd.min > 0 || bd.max < 0, always = bd.min == 0 && bd.max == 0;
        if (never || always) return mk_bool(a, (k == TIR_KIND_EQ) == always);
    }
    int64_t g = sum_gcd(d);
    if (g > 1) {
        if (k != TIR_KIND_LT && d.k % g != 0) return mk_bool(a, k == TIR_KIND_NE);
        lsum r = d;
        r.t = ar_scratch(a, sizeof(term) * (size_t)d.n);
        for (int i = 0; i < d.n; i++) r.t[i] = (term){d.t[i].atom, d.t[i].coef / g};
        r.k = ar_floordiv(d.k, g); /* g*s + k < 0  <=>  s + floor(k/g) < 0 */
        d = r;
    }
    /* d holds the values' difference (canon_diff); the sides written back
     * compute in dt, so each constant and each side must fit dt */
    for (int t = 0; t < d.n; t++)
        if (!negatable(dt, d.t[t].coef) || !negatable(dt, d.k) || ar_wrap(dt, d.k) != d.k)
            return mk_bin(a, k0, x, y);
    lsum p = sum_pick(a, d, true, false), nn = sum_pick(a, d, false, true);
    p.dt = nn.dt = dt;
    if (k != TIR_KIND_LT && p.n == 0) {
        lsum t = p;
        p = nn;
        nn = t;
        d.k = -d.k;
    }
    if (k == TIR_KIND_LT && p.n == 0) { /* k - N < 0  <=>  k + 1 <= N */
        if (d.k == INT64_MAX || ar_wrap(dt, d.k + 1) != d.k + 1 || !sum_in_dtype(a, nn))
            return mk_bin(a, k0, x, y);
        return mk_bin(a, TIR_KIND_LE, mk_int(a, dt, d.k + 1), sum_to_expr(a, nn));
    }
    nn.k = -d.k;
    /* P < N + 1 reads better as P <= N (it is what negating N < P gives) */
    if (k == TIR_KIND_LT && nn.n > 0 && nn.k == 1) {
        nn.k = 0;
        k = TIR_KIND_LE;
    }
    if (!sum_in_dtype(a, p) || !sum_in_dtype(a, nn)) return mk_bin(a, k0, x, y);
    return mk_bin(a, k, sum_to_expr(a, p), sum_to_expr(a, nn));
}

static const tir_expr *simp_compare(tir_analyzer *a, const tir_binop *b) {
    tir_kind k = (tir_kind)b->base.kind;
    const tir_expr *x = ar_simplify(a, b->a), *y = ar_simplify(a, b->b);
    const tir_expr *f = fold_binop(a, k, x, y);
    if (f) return f;
    tir_dtype dt = x->dtype;
    if (dt.lanes > 1) {
        if (tir_as_tir_broadcast(x) && tir_as_tir_broadcast(y))
            return tir_broadcast_new(
                a->ctx,
                ar_simplify(a, mk_bin(a, k, ((const tir_broadcast *)x)->value,
                                      ((const tir_broadcast *)y)->value)),
                dt.lanes);
        return rebuild_bin(a, b, x, y);
    }
    if (is_int_scalar(dt)) return simp_int_compare(a, k, x, y);
    if ((tir_dtype_is_int(dt) || tir_dtype_is_bool(dt)) && ar_expr_eq(x, y))
        return mk_bool(a, k == TIR_KIND_EQ || k == TIR_KIND_LE || k == TIR_KIND_GE);
    return rebuild_bin(a, b, x, y);
}

/* ---- booleans ---- */

static bool is_true(const tir_expr *e) { return is_const(e, 1) && tir_dtype_is_bool(e->dtype); }
static bool is_false(const tir_expr *e) { return is_const(e, 0) && tir_dtype_is_bool(e->dtype); }

static const tir_expr *negate_compare(tir_analyzer *a, const tir_expr *e) {
    const tir_binop *c = tir_as_tir_binop(e);
    if (!c || !tir_kind_is_compare((tir_kind)e->kind) || !tir_dtype_is_int(c->a->dtype))
        return NULL;
    switch ((tir_kind)e->kind) {
    case TIR_KIND_LT: return mk_bin(a, TIR_KIND_LE, c->b, c->a);
    case TIR_KIND_LE: return mk_bin(a, TIR_KIND_LT, c->b, c->a);
    case TIR_KIND_GT: return mk_bin(a, TIR_KIND_LE, c->a, c->b);
    case TIR_KIND_GE: return mk_bin(a, TIR_KIND_LT, c->a, c->b);
    case TIR_KIND_EQ: return mk_bin(a, TIR_KIND_NE, c->a, c->b);
    case TIR_KIND_NE: return mk_bin(a, TIR_KIND_EQ, c->a, c->b);
    default: return NULL;
    }
}

static bool is_negation(const tir_expr *x, const tir_expr *y) {
    const tir_not *n = tir_as_tir_not(y);
    if (n && ar_expr_eq(n->a, x)) return true;
    n = tir_as_tir_not(x);
    return n && ar_expr_eq(n->a, y);
}

/* A normalized bound on one expression: `x < c` (upper) or `c <= x`. */
typedef struct cmp_bound {
    const tir_expr *x;
    int64_t c;
    bool upper;
} cmp_bound;

static bool as_cmp_bound(const tir_expr *e, cmp_bound *out) {
    const tir_binop *b = tir_as_tir_binop(e);
    if (!b || !is_int_scalar(b->a->dtype)) return false;
    int64_t c;
    if (e->kind == TIR_KIND_LT && const_of(b->b, &c) && !const_of(b->a, NULL)) {
        *out = (cmp_bound){b->a, c, true};
        return true;
    }
    if (e->kind == TIR_KIND_LE && const_of(b->a, &c) && !const_of(b->b, NULL)) {
        *out = (cmp_bound){b->b, c, false};
        return true;
    }
    return false;
}

/* and/or of two bounds on the same expression; NULL if no rule applies. */
static const tir_expr *combine_bounds(tir_analyzer *a, bool is_and, const tir_expr *x,
                                      const tir_expr *y) {
    cmp_bound p, q;
    if (!as_cmp_bound(x, &p) || !as_cmp_bound(y, &q) || !ar_expr_eq(p.x, q.x)) return NULL;
    if (p.upper == q.upper) {
        /* x < 3 && x < 5 -> x < 3;  x < 3 || x < 5 -> x < 5 (dually for lower) */
        bool take_p = (p.c <= q.c) == (p.upper == is_and);
        return take_p ? x : y;
    }
    cmp_bound up = p.upper ? p : q, lo = p.upper ? q : p;
    /* lo.c <= v < up.c */
    if (is_and && lo.c >= up.c) return mk_bool(a, false);
    if (!is_and && lo.c <= up.c) return mk_bool(a, true);
    return NULL;
}

static const tir_expr *simp_and_or(tir_analyzer *a, const tir_binop *b) {
    bool is_and = b->base.kind == TIR_KIND_AND;
    const tir_expr *x = ar_simplify(a, b->a);
    /* the dominating constant short-cuts: false && _ , true || _ */
    if (is_and ? is_false(x) : is_true(x)) return x;
    const tir_expr *y = ar_simplify(a, b->b);
    if (is_and ? is_false(y) : is_true(y)) return y;
    if (is_and ? is_true(x) : is_false(x)) return y;
    if (is_and ? is_true(y) : is_false(y)) return x;
    if (ar_expr_eq(x, y)) return x;
    /* with the operands' lanes: a scalar for `not v and v` of a vector v
       made a cast of it fail its lanes check (the float fuzzer, seed 102
       case 27110) */
    if (is_negation(x, y)) {
        const tir_expr *r = mk_bool(a, !is_and);
        return x->dtype.lanes == 1 ? r : tir_broadcast_new(a->ctx, r, x->dtype.lanes);
    }
    const tir_expr *c = combine_bounds(a, is_and, x, y);
    if (c) return c;
    return rebuild_bin(a, b, x, y);
}

static const tir_expr *simp_not(tir_analyzer *a, const tir_not *n) {
    const tir_expr *x = ar_simplify(a, n->a);
    int64_t v;
    if (const_of(x, &v)) return mk_bool(a, !v);
    const tir_not *inner = tir_as_tir_not(x);
    if (inner) return inner->a;
    const tir_expr *neg = negate_compare(a, x);
    if (neg) return ar_simplify(a, neg);
    return x == n->a ? &n->base : tir_not_new(a->ctx, x);
}

static const tir_expr *simp_select(tir_analyzer *a, const tir_select *s) {
    const tir_expr *c = ar_simplify(a, s->cond);
    if (is_true(c)) return ar_simplify(a, s->t);
    if (is_false(c)) return ar_simplify(a, s->f);
    const tir_expr *t = ar_simplify(a, s->t), *f = ar_simplify(a, s->f);
    if (ar_expr_eq(t, f)) return t;
    const tir_not *nc = tir_as_tir_not(c);
    if (nc) return ar_simplify(a, tir_select_new(a->ctx, nc->a, f, t));
    if (tir_dtype_eq(t->dtype, TIR_BOOL) && c->dtype.lanes == 1) {
        if (is_true(t) && is_false(f)) return c;
        if (is_false(t) && is_true(f)) return simp_not(a, (const tir_not *)tir_not_new(a->ctx, c));
    }
    if (c == s->cond && t == s->t && f == s->f) return &s->base;
    return tir_select_new(a->ctx, c, t, f);
}

/* ---- casts, lets, vectors ---- */

/* cast(t, v) for a canonical sum v as a sum of casts; NULL when a partial
 * sum might leave v's dtype (then the narrow arithmetic wraps, and the
 * cast must stay outside). */
static const tir_expr *cast_sum(tir_analyzer *a, tir_dtype t, const tir_expr *v) {
    lsum s = canon(a, v);
    /* a lone atom (a product) has nothing to distribute over */
    if (s.n == 1 && s.k == 0 && s.t[0].coef == 1) return NULL;
    tir_int_bound full = ar_dtype_bound(v->dtype);
    int64_t neg = s.k < 0 ? s.k : 0, pos = s.k > 0 ? s.k : 0;
    for (int i = 0; i < s.n; i++) {
        tir_int_bound b = ar_bound(a, s.t[i].atom);
        int64_t c = s.t[i].coef;
        int64_t lo = c > 0 ? ar_sat_mul(b.min, c) : ar_sat_mul(b.max, c);
        int64_t hi = c > 0 ? ar_sat_mul(b.max, c) : ar_sat_mul(b.min, c);
        if (lo < 0) neg = ar_sat_add(neg, lo, false);
        if (hi > 0) pos = ar_sat_add(pos, hi, true);
        if (neg < full.min || pos > full.max) return NULL;
    }
    lsum r = sum_const(t, s.k);
    for (int i = 0; i < s.n; i++) {
        const tir_expr *ca = ar_simplify(a, tir_cast_new(a->ctx, t, s.t[i].atom));
        r = sum_add(a, r, linear(a, ca), s.t[i].coef);
    }
    return sum_to_expr(a, r);
}

static const tir_expr *simp_cast(tir_analyzer *a, const tir_cast *c) {
    tir_dtype t = c->base.dtype;
    const tir_expr *v = ar_simplify(a, c->value);
    if (tir_dtype_eq(t, v->dtype)) return v;
    const tir_expr *f = fold_cast(a, t, v);
    if (f) return f;
    const tir_broadcast *bc = tir_as_tir_broadcast(v);
    if (bc)
        return tir_broadcast_new(
            a->ctx, ar_simplify(a, tir_cast_new(a->ctx, tir_dtype_element(t), bc->value)),
            bc->lanes);
    /* a widening cast of a sum that cannot overflow distributes over it,
     * so that int64(i*32 + 31) - int64(i*32) is 31 */
    if (t.code == TIR_TYPE_INT && t.lanes == 1 && is_int_scalar(v->dtype) &&
        t.bits > v->dtype.bits &&
        (v->kind == TIR_KIND_ADD || v->kind == TIR_KIND_SUB || v->kind == TIR_KIND_MUL)) {
        const tir_expr *r = cast_sum(a, t, v);
        if (r) return r;
    }
    /* cast(T, cast(U, x)) -> x when x has type T and U holds every T value */
    const tir_cast *inner = tir_as_tir_cast(v);
    if (inner && tir_dtype_eq(inner->value->dtype, t) && t.code == TIR_TYPE_INT &&
        v->dtype.code == TIR_TYPE_INT && v->dtype.bits >= t.bits)
        return inner->value;
    return v == c->value ? &c->base : tir_cast_new(a->ctx, t, v);
}

static const tir_expr *simp_let(tir_analyzer *a, const tir_let *l) {
    const tir_expr *v = ar_simplify(a, l->value);
    if (v->kind == TIR_KIND_INT_IMM || v->kind == TIR_KIND_FLOAT_IMM || v->kind == TIR_KIND_VAR) {
        const tir_expr *body =
            (const tir_expr *)tir_substitute(a->ctx, l->body, 1, &l->var, &v);
        return ar_simplify(a, body);
    }
    const tir_expr *body;
    if (tir_dtype_is_int(v->dtype) && v->dtype.lanes == 1) {
        ar_bind saved = ar_bind_save(a, l->var);
        ar_bind_bound(a, l->var, ar_bound(a, v));
        body = ar_simplify(a, l->body);
        ar_bind_restore(a, &saved);
    } else {
        body = ar_simplify(a, l->body);
    }
    if (!tir_uses_var(body, l->var)) return body;
    if (v == l->value && body == l->body) return &l->base;
    return tir_let_new(a->ctx, l->var, v, body);
}

/* Elementwise +, -, * on int vectors built from Ramp and Broadcast. */
static const tir_expr *simp_vector_arith(tir_analyzer *a, const tir_binop *b, const tir_expr *x,
                                         const tir_expr *y) {
    tir_kind k = (tir_kind)b->base.kind;
    int lanes = b->base.dtype.lanes;
    const tir_broadcast *bx = tir_as_tir_broadcast(x), *by = tir_as_tir_broadcast(y);
    const tir_ramp *rx = tir_as_tir_ramp(x), *ry = tir_as_tir_ramp(y);
    if (bx && by)
        return tir_broadcast_new(a->ctx, ar_simplify(a, mk_bin(a, k, bx->value, by->value)),
                                 lanes);
    if (!tir_dtype_is_int(b->base.dtype)) return rebuild_bin(a, b, x, y);
    const tir_expr *start = NULL, *stride = NULL;
    if (k == TIR_KIND_ADD || k == TIR_KIND_SUB) {
        if (rx && by) {
            start = mk_bin(a, k, rx->start, by->value);
            stride = rx->stride;
        } else if (bx && ry) {
            start = mk_bin(a, k, bx->value, ry->start);
            stride = k == TIR_KIND_ADD ? ry->stride
                                       : mk_bin(a, TIR_KIND_SUB, mk_int(a, ry->stride->dtype, 0),
                                                ry->stride);
        } else if (rx && ry) {
            start = mk_bin(a, k, rx->start, ry->start);
            stride = mk_bin(a, k, rx->stride, ry->stride);
        }
    } else if (k == TIR_KIND_MUL) {
        if (rx && by) {
            start = mk_bin(a, k, rx->start, by->value);
            stride = mk_bin(a, k, rx->stride, by->value);
        } else if (bx && ry) {
            start = mk_bin(a, k, bx->value, ry->start);
            stride = mk_bin(a, k, bx->value, ry->stride);
        }
    }
    if (!start) return rebuild_bin(a, b, x, y);
    return ar_simplify(a, tir_ramp_new(a->ctx, start, stride, lanes));
}

static const tir_expr *simp_arith_other(tir_analyzer *a, const tir_binop *b) {
    tir_kind k = (tir_kind)b->base.kind;
    const tir_expr *x = ar_simplify(a, b->a), *y = ar_simplify(a, b->b);
    const tir_expr *f = fold_binop(a, k, x, y);
    if (f) return f;
    tir_dtype dt = b->base.dtype;
    if (dt.lanes > 1) return simp_vector_arith(a, b, x, y);
    if (tir_dtype_is_int(dt)) {
        /* unsigned: identities only (x - y < 0 style rewrites are wrong here) */
        if ((k == TIR_KIND_ADD || k == TIR_KIND_SUB) && is_const(y, 0)) return x;
        if (k == TIR_KIND_ADD && is_const(x, 0)) return y;
        if (k == TIR_KIND_MUL && is_const(y, 1)) return x;
        if (k == TIR_KIND_MUL && is_const(x, 1)) return y;
        if (k == TIR_KIND_MUL && (is_const(x, 0) || is_const(y, 0))) return mk_int(a, dt, 0);
        if (k == TIR_KIND_SUB && ar_expr_eq(x, y)) return mk_int(a, dt, 0);
    }
    return rebuild_bin(a, b, x, y);
}

/* Simplifies an array; *out is NULL when nothing changed. */
static void simp_exprs(tir_analyzer *a, int n, const tir_expr *const *in, const tir_expr ***out) {
    const tir_expr **r = NULL;
    for (int i = 0; i < n; i++) {
        const tir_expr *e = ar_simplify(a, in[i]);
        if (e != in[i] && !r) {
            r = IR_NEWN(a->ctx, const tir_expr *, n);
            memcpy(r, in, sizeof(*in) * (size_t)i);
        }
        if (r) r[i] = e;
    }
    *out = r;
}

static const tir_expr *simp_impl(tir_analyzer *a, const tir_expr *e) {
    switch ((tir_kind)e->kind) {
    case TIR_KIND_INT_IMM:
    case TIR_KIND_FLOAT_IMM: return e;
    case TIR_KIND_VAR: {
        if (!tir_dtype_is_int(e->dtype) || e->dtype.lanes != 1) return e;
        const ar_bind *bd = ar_lookup(a, (const tir_var *)e);
        if (!bd) return e;
        if (bd->bound.min == bd->bound.max) return mk_int(a, e->dtype, bd->bound.min);
        /* a variable of a one-iteration range is its start */
        if (bd->min && is_const(bd->extent, 1) && !tir_uses_var(bd->min, (const tir_var *)e))
            return ar_simplify(a, bd->min);
        return e;
    }
    case TIR_KIND_ADD:
    case TIR_KIND_SUB:
    case TIR_KIND_MUL:
        if (is_int_scalar(e->dtype)) return simp_add_sub_mul(a, e);
        return simp_arith_other(a, (const tir_binop *)e);
    case TIR_KIND_DIV:
    case TIR_KIND_MOD:
    case TIR_KIND_FLOORDIV:
    case TIR_KIND_FLOORMOD: return simp_divmod(a, (const tir_binop *)e);
    case TIR_KIND_MIN:
    case TIR_KIND_MAX: return simp_minmax(a, (const tir_binop *)e);
    case TIR_KIND_EQ: case TIR_KIND_NE: case TIR_KIND_LT:
    case TIR_KIND_LE: case TIR_KIND_GT: case TIR_KIND_GE:
        return simp_compare(a, (const tir_binop *)e);
    case TIR_KIND_AND:
    case TIR_KIND_OR: return simp_and_or(a, (const tir_binop *)e);
    case TIR_KIND_NOT: return simp_not(a, (const tir_not *)e);
    case TIR_KIND_SELECT: return simp_select(a, (const tir_select *)e);
    case TIR_KIND_CAST: return simp_cast(a, (const tir_cast *)e);
    case TIR_KIND_LET: return simp_let(a, (const tir_let *)e);
    case TIR_KIND_BUFFER_LOAD: {
        /* a load's indices are index arithmetic, also in a stored value */
        const tir_buffer_load *l = (const tir_buffer_load *)e;
        const tir_expr **idx;
        int w = a->wrap_values;
        ar_set_wrap(a, 0);
        simp_exprs(a, l->nidx, l->indices, &idx);
        ar_set_wrap(a, w);
        return idx ? tir_load(a->ctx, l->buffer, l->nidx, idx) : e;
    }
    case TIR_KIND_RAMP: {
        const tir_ramp *r = (const tir_ramp *)e;
        const tir_expr *s = ar_simplify(a, r->start), *st = ar_simplify(a, r->stride);
        if (is_const(st, 0)) return tir_broadcast_new(a->ctx, s, r->lanes);
        if (s == r->start && st == r->stride) return e;
        return tir_ramp_new(a->ctx, s, st, r->lanes);
    }
    case TIR_KIND_BROADCAST: {
        const tir_broadcast *b = (const tir_broadcast *)e;
        const tir_expr *v = ar_simplify(a, b->value);
        return v == b->value ? e : tir_broadcast_new(a->ctx, v, b->lanes);
    }
    case TIR_KIND_CALL: {
        const tir_call *c = (const tir_call *)e;
        const tir_expr **args;
        simp_exprs(a, c->nargs, c->args, &args);
        return args ? tir_call_new(a->ctx, c->base.dtype, c->op, c->nargs, args) : e;
    }
    default: break;
    }
    TIR_UNREACHABLE();
}

const tir_expr *ar_simplify(tir_analyzer *a, const tir_expr *e) {
    ar_memo_ent *m;
    if (ar_memo_get(&a->simp_memo, a->gen, e, &m)) return m->expr;
    /* inside a symbolic proof nested proofs are off, so results there can
     * be weaker: they go to their own table, or answers would depend on
     * the order of queries */
    bool sym = a->sym_depth > 0;
    ar_memo *memo = sym ? &a->sym_memo : &a->simp_memo;
    uint32_t gen = sym ? a->sym_gen : a->gen;
    if (sym && ar_memo_get(memo, gen, e, &m)) return m->expr;
    const tir_expr *r = simp_impl(a, e);
    if (r != e && ar_expr_eq(r, e)) r = e;
    ar_memo_put(memo, gen, e)->expr = r;
    if (r != e) ar_memo_put(memo, gen, r)->expr = r;
    return r;
}
