/* digits.c: the digits of affine indices and the forcing step of the
 * proofs over them (digits_internal.h), written once for the two proofs
 * that accesses touch elements of their own: spatial_writes.c in the
 * schedule (two instances of a block) and global_share.c in lowering (two
 * threads of a kernel).  The pieces here are the ones both proofs mean
 * alike; each keeps its own rules of what a variable is and which terms
 * of the two sides pair.
 *
 * Ranges: callers give variables ranges within 2^40, so that a digit's
 * range and the difference of two fit in int64, and sums of up to 64
 * products of a coefficient and such a difference fit in ir_wide.
 */
#include <string.h>

#include "digits_internal.h"
#include "text_internal.h"

/* ---------------------------------------------------------------- digits */

ir_digit_var ir_digit_var_make(int64_t lo, int64_t hi, bool any, int tag) {
    return (ir_digit_var){.lo = lo, .hi = hi, .any = any, .tag = tag, .b = {1}, .nb = 1};
}

bool ir_digit_split(ir_digit_var *d, int64_t v) {
    if (v < 1) return false;
    int i = 0;
    while (i < d->nb && d->b[i] < v) i++;
    if (i < d->nb && d->b[i] == v) return true;
    if (d->nb == IR_DIGIT_BOUNDS) return false;
    memmove(&d->b[i + 1], &d->b[i], sizeof d->b[0] * (size_t)(d->nb - i));
    d->b[i] = v;
    d->nb++;
    return true;
}

bool ir_digits_nested(const ir_digit_var *d) {
    for (int j = 0; j + 1 < d->nb; j++)
        if (d->b[j + 1] % d->b[j]) return false;
    return true;
}

int ir_digit_at(const ir_digit_var *d, int64_t v) {
    for (int i = 0; i < d->nb; i++)
        if (d->b[i] == v) return i;
    return -1;
}

static int64_t fdiv(int64_t a, int64_t b) {
    return a / b - (a % b != 0 && (a < 0) != (b < 0));
}

void ir_digit_range(const ir_digit_var *d, int i, int64_t *lo, int64_t *hi, bool *any) {
    *any = false;
    if (i + 1 < d->nb) *lo = 0, *hi = d->b[i + 1] / d->b[i] - 1;
    else if (d->any) *lo = 0, *hi = 0, *any = true;
    else *lo = fdiv(d->lo, d->b[i]), *hi = fdiv(d->hi, d->b[i]);
}

/* ---------------------------------------------------------------- affine */

void ir_lin_init(ir_lin *l, int max) {
    l->n = 0, l->k = 0;
    l->max = max < IR_LIN_TERMS ? max : IR_LIN_TERMS;
}

bool ir_lin_add_term(ir_lin *l, const void *key, int64_t coef, int64_t lo, int64_t hi, bool any,
                     int tag) {
    for (int i = 0; i < l->n; i++)
        if (l->t[i].key == key) return !__builtin_add_overflow(l->t[i].coef, coef, &l->t[i].coef);
    if (l->n >= l->max) return false;
    l->t[l->n++] = (ir_lin_term){key, coef, lo, hi, any, tag};
    return true;
}

bool ir_lin_add_digits(ir_lin *l, const ir_digit_var *d, int from, int to, int64_t scale) {
    for (int i = from; i < to; i++) {
        int64_t c, lo, hi;
        bool any;
        if (__builtin_mul_overflow(d->b[i] / d->b[from], scale, &c)) return false;
        ir_digit_range(d, i, &lo, &hi, &any);
        if (!ir_lin_add_term(l, &d->b[i], c, lo, hi, any, d->tag)) return false;
    }
    return true;
}

bool ir_lin_add(const tir_expr *e, int64_t scale, ir_lin *l, ir_lin_leaf_fn leaf, void *user) {
    int64_t c;
    switch ((tir_kind)e->kind) {
    case TIR_KIND_INT_IMM:
        return !__builtin_mul_overflow(tir_as_tir_int_imm(e)->value, scale, &c) &&
               !__builtin_add_overflow(l->k, c, &l->k);
    case TIR_KIND_CAST: { /* a widening integer cast keeps the value */
        const tir_expr *v = tir_as_tir_cast(e)->value;
        return tir_dtype_is_int(v->dtype) && tir_dtype_is_int(e->dtype) &&
               e->dtype.bits >= v->dtype.bits && ir_lin_add(v, scale, l, leaf, user);
    }
    case TIR_KIND_ADD: case TIR_KIND_SUB: {
        const tir_binop *b = tir_as_tir_binop(e);
        return ir_lin_add(b->a, scale, l, leaf, user) &&
               ir_lin_add(b->b, e->kind == TIR_KIND_SUB ? -scale : scale, l, leaf, user);
    }
    case TIR_KIND_MUL: {
        const tir_binop *b = tir_as_tir_binop(e);
        if (ir_const_int(b->b, &c))
            return !__builtin_mul_overflow(c, scale, &c) && ir_lin_add(b->a, c, l, leaf, user);
        if (ir_const_int(b->a, &c))
            return !__builtin_mul_overflow(c, scale, &c) && ir_lin_add(b->b, c, l, leaf, user);
        return false;
    }
    default: return leaf(user, e, scale, l);
    }
}

bool ir_const_int(const tir_expr *e, int64_t *out) {
    if (tir_expr_const_int(e, out)) return true;
    if (e->kind != TIR_KIND_ADD && e->kind != TIR_KIND_SUB && e->kind != TIR_KIND_MUL)
        return false;
    const tir_binop *b = tir_as_tir_binop(e);
    int64_t x, y;
    if (!ir_const_int(b->a, &x) || !ir_const_int(b->b, &y)) return false;
    return e->kind == TIR_KIND_ADD   ? !__builtin_add_overflow(x, y, out)
           : e->kind == TIR_KIND_SUB ? !__builtin_sub_overflow(x, y, out)
                                     : !__builtin_mul_overflow(x, y, out);
}

bool ir_divmod_pair(const tir_expr *x, const tir_expr *y, const tir_expr **e, int64_t *c) {
    int64_t c1, c2;
    if (x->kind != TIR_KIND_FLOORDIV || y->kind != TIR_KIND_FLOORMOD) return false;
    const tir_binop *p = tir_as_tir_binop(x), *q = tir_as_tir_binop(y);
    if (!ir_const_int(p->b, &c1) || !ir_const_int(q->b, &c2) || c1 != c2 || c1 < 1 ||
        !ir_text_expr_same(p->a, q->a))
        return false;
    *e = p->a, *c = c1;
    return true;
}

/* ----------------------------------------------------------------- proof */

void ir_wide_scaled(int64_t c, int64_t lo, int64_t hi, ir_wide *rlo, ir_wide *rhi) {
    ir_wide x = (ir_wide)c * lo, y = (ir_wide)c * hi;
    *rlo = x < y ? x : y;
    *rhi = x < y ? y : x;
}

bool ir_forced_has(const ir_forced *f, const void *k1, const void *k2) {
    for (int i = 0; k1 && i < f->n; i++)
        if (f->k1[i] == k1 && f->k2[i] == k2) return true;
    return false;
}

bool ir_force_dim(const ir_slot *s, int n, ir_wide k, ir_forced *f, bool *never) {
    bool changed = false, again = true;
    while (again) {
        again = false;
        ir_wide lo = k, hi = k; /* the sum of every unforced slot of a range */
        int nany = 0;           /* and the unforced slots of any value */
        for (int i = 0; i < n; i++) {
            if (ir_forced_has(f, s[i].key1, s[i].key2)) {
                if (!s[i].any && (s[i].dlo > 0 || s[i].dhi < 0))
                    *never = true; /* zero out of its range */
                continue;
            }
            if (s[i].coef == 0) continue; /* adds nothing */
            if (s[i].any) {
                nany++;
                continue;
            }
            ir_wide x, y;
            ir_wide_scaled(s[i].coef, s[i].dlo, s[i].dhi, &x, &y);
            lo += x, hi += y;
        }
        if (!nany && (lo > 0 || hi < 0)) *never = true;
        if (*never) return changed;
        for (int i = 0; i < n && !again; i++) {
            if (!s[i].key1 || s[i].coef == 0 || ir_forced_has(f, s[i].key1, s[i].key2)) continue;
            if (nany - s[i].any > 0) continue; /* another of any value */
            ir_wide x = 0, y = 0, c = s[i].coef < 0 ? -(ir_wide)s[i].coef : s[i].coef;
            if (!s[i].any) ir_wide_scaled(s[i].coef, s[i].dlo, s[i].dhi, &x, &y);
            if (lo - x > -c && hi - y < c) { /* the others cannot reach c */
                if (f->n == IR_FORCED_MAX) {
                    f->full = true;
                    return changed;
                }
                f->k1[f->n] = s[i].key1, f->k2[f->n++] = s[i].key2;
                changed = again = true;
            }
        }
    }
    return changed;
}
