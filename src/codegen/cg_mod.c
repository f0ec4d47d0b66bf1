/* cg_mod.c: the modular analysis behind the alignment codegen promises for
 * vector accesses: an index expression's values as {coeff * k + base}
 * (docs/lowered-ir.md), shared by the LLVM emitter (cg_emit.c) and the
 * direct PTX emitter (cg_direct.c).  Variables' sets come from the
 * caller's environment through a callback.
 */
#include "cg_internal.h"

int64_t cg_floordiv64(int64_t a, int64_t b) {
    int64_t q = a / b;
    return (a % b != 0 && ((a % b < 0) != (b < 0))) ? q - 1 : q;
}

int64_t cg_floormod64(int64_t a, int64_t b) { return a - cg_floordiv64(a, b) * b; }

const cg_mod CG_MOD_ANY = {1, 0};

cg_mod cg_mod_norm(int64_t coeff, int64_t base) {
    if (coeff < 0) coeff = -coeff;
    if (coeff > 0) base = cg_floormod64(base, coeff);
    return (cg_mod){coeff, base};
}

/* The set {c1*k + b1} united with {c2*k + b2}. */
static cg_mod mod_union(cg_mod x, cg_mod y) {
    int64_t d;
    if (__builtin_sub_overflow(x.base, y.base, &d)) return CG_MOD_ANY;
    return cg_mod_norm(ir_gcd64(ir_gcd64(x.coeff, y.coeff), d), x.base);
}

cg_mod cg_mod_of(const tir_expr *e, cg_var_mod_fn var_mod, void *env) {
    if (!tir_dtype_is_int(e->dtype) || e->dtype.lanes != 1) return CG_MOD_ANY;
    switch ((tir_kind)e->kind) {
    case TIR_KIND_INT_IMM: return (cg_mod){0, tir_as_tir_int_imm(e)->value};
    case TIR_KIND_VAR: {
        return var_mod(env, tir_as_tir_var(e));
    }
    case TIR_KIND_ADD:
    case TIR_KIND_SUB: {
        const tir_binop *b = tir_as_tir_binop(e);
        cg_mod x = cg_mod_of(b->a, var_mod, env), y = cg_mod_of(b->b, var_mod, env);
        int64_t s;
        bool ovf = e->kind == TIR_KIND_ADD ? __builtin_add_overflow(x.base, y.base, &s)
                                           : __builtin_sub_overflow(x.base, y.base, &s);
        return ovf ? CG_MOD_ANY : cg_mod_norm(ir_gcd64(x.coeff, y.coeff), s);
    }
    case TIR_KIND_MUL: {
        const tir_binop *b = tir_as_tir_binop(e);
        cg_mod x = cg_mod_of(b->a, var_mod, env), y = cg_mod_of(b->b, var_mod, env);
        int64_t p, c1, c2, c3;
        if (__builtin_mul_overflow(x.base, y.base, &p) ||
            __builtin_mul_overflow(x.coeff, y.coeff, &c1) ||
            __builtin_mul_overflow(x.coeff, y.base, &c2) ||
            __builtin_mul_overflow(y.coeff, x.base, &c3))
            return CG_MOD_ANY;
        return cg_mod_norm(ir_gcd64(c1, ir_gcd64(c2, c3)), p);
    }
    case TIR_KIND_FLOORDIV:
    case TIR_KIND_FLOORMOD: {
        const tir_binop *b = tir_as_tir_binop(e);
        int64_t k;
        if (!tir_expr_const_int(b->b, &k) || k <= 0) return CG_MOD_ANY;
        cg_mod x = cg_mod_of(b->a, var_mod, env);
        if (e->kind == TIR_KIND_FLOORDIV)
            return x.coeff % k == 0 ? cg_mod_norm(x.coeff / k, cg_floordiv64(x.base, k)) : CG_MOD_ANY;
        if (x.coeff % k == 0) return (cg_mod){0, cg_floormod64(x.base, k)};
        int64_t d = ir_gcd64(x.coeff, k);
        return cg_mod_norm(d, x.base);
    }
    case TIR_KIND_MIN:
    case TIR_KIND_MAX: {
        const tir_binop *b = tir_as_tir_binop(e);
        return mod_union(cg_mod_of(b->a, var_mod, env), cg_mod_of(b->b, var_mod, env));
    }
    case TIR_KIND_SELECT: {
        const tir_select *s = tir_as_tir_select(e);
        return mod_union(cg_mod_of(s->t, var_mod, env), cg_mod_of(s->f, var_mod, env));
    }
    case TIR_KIND_CAST: {
        const tir_cast *c = tir_as_tir_cast(e);
        /* Only widening keeps the value. */
        if (tir_dtype_is_int(c->value->dtype) && c->value->dtype.bits <= e->dtype.bits &&
            (c->value->dtype.code == e->dtype.code || c->value->dtype.bits < e->dtype.bits))
            return cg_mod_of(c->value, var_mod, env);
        return CG_MOD_ANY;
    }
    default: return CG_MOD_ANY;
    }
}

/* The alignment in bytes of an element at index m (+ elem_offset o) of a
 * buffer of elem-byte elements whose data pointer is aligned to align. */
unsigned cg_access_align(cg_mod m, cg_mod o, unsigned elem, unsigned align) {
    int64_t s;
    if (__builtin_add_overflow(m.base, o.base, &s)) return elem < align ? elem : align;
    int64_t v = ir_gcd64(ir_gcd64(m.coeff, o.coeff), s);
    uint64_t pow2 = v == 0 ? 4096 : ((uint64_t)v & (~(uint64_t)v + 1));
    if (pow2 > 4096) pow2 = 4096;
    uint64_t a = pow2 * elem;
    return a < align ? (unsigned)a : align;
}
