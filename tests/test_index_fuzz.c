/* test_index_fuzz.c: the analyzer on integer index expressions, against
 * an exact evaluator, at every point of the variables' ranges.
 *
 * Index arithmetic may assume that signed sums do not overflow (nsw,
 * docs/lowered-ir.md), so only points where the original expression is
 * defined count: no signed overflow of its dtype in any operation it
 * evaluates (a scalar select and and/or evaluate only what they need, as
 * the interpreter does), no division by zero, no truncating division of
 * the dtype's minimum by -1.  Casts between integer types wrap, as they
 * do everywhere.  Each case binds 1-3 int32/int64 variables to small
 * ranges (starts negative, zero, positive, and now and then near 2^31 or
 * 2^62; one may start at another's multiple, a symbolic range), draws a
 * random int32 or int64 expression over them (+ - * by constants and by
 * variables, the four divisions and remainders by constants and
 * sometimes by expressions, min/max, selects of comparisons, casts), and,
 * enumerating every point, checks that
 *   1. tir_analyzer_simplify gives the expression's value (an exact
 *      __int128 evaluation; the simplified form evaluates wrapping, as
 *      the interpreter does), and so does the simplified comparison c;
 *   2. tir_analyzer_const_bound contains every value;
 *   3. tir_analyzer_can_prove(c) true means c holds, for comparisons c of
 *      the expression with constants near its range or with another
 *      expression;
 *   4. tir_analyzer_relax over a subset of the variables gives [min, min
 *      + extent), free of those variables, holding every value (where e
 *      is defined for every value of the relaxed variables; the ends
 *      evaluate wrapping, and points where they overflow are counted);
 *   5. tir_analyzer_simplify_stmt of `for ...: if c: Y[p] = e else Y[p]
 *      = e2` stores what the statement stores.
 * A failure is shrunk (subexpressions replaced by their operands, by 0,
 * 1 or a variable while it still fails) and printed.
 * MINITIR_FUZZ_CASES=N (or argv[1]) sets the number of cases (default
 * 10,000: about a second), MINITIR_FUZZ_SEED the seed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "fuzz_args.h"
#include "fuzz_xorshift.h"

#include "minitir/ir.h"

static long g_cases = 10000;
static uint64_t g_seed = 20261205;

static tir_ctx *C;

/* ---------------------------------------------------------------- variables */

enum { MAXV = 3, MAXPTS = 4096 };
static int nv;
static const tir_var *VAR[MAXV];
static tir_dtype VT[MAXV];
static int64_t VMIN[MAXV], VEXT[MAXV];
/* dependent start: var k starts at VMIN[k] + VMUL[k] * value of var VDEP[k]
 * (VDEP[k] < k, or -1) */
static int VDEP[MAXV];
static int64_t VMUL[MAXV];
/* dependent extent: VEXT[k] + VEMUL[k] * value of var VDEP[k] (a
 * symbolic range like i in [0, n)); VEMUL[k] > 0 only for a VDEP[k] of
 * non-negative values */
static int64_t VEMUL[MAXV];
static int64_t CUR[MAXV];

static __int128 tmin(tir_dtype t) {
    return t.code == TIR_TYPE_BOOL ? 0 : -((__int128)1 << (t.bits - 1));
}
static __int128 tmax(tir_dtype t) {
    return t.code == TIR_TYPE_BOOL ? 1 : ((__int128)1 << (t.bits - 1)) - 1;
}
static int64_t wrapv(tir_dtype t, __int128 v) {
    if (t.code == TIR_TYPE_BOOL) return v != 0;
    if (t.bits == 32) return (int32_t)(uint32_t)(unsigned __int128)v;
    return (int64_t)(uint64_t)(unsigned __int128)v;
}

/* ------------------------------------------------------------ the evaluator */

typedef struct val {
    __int128 v;
    bool ok; /* false: undefined (overflow, division by zero) */
} val;

static bool g_wrap;     /* wrap on overflow (a simplified form) instead of undefined */
static bool g_overflow; /* an overflow was seen */
static bool g_foreign;  /* a variable not among VAR[] */

static val mk(tir_dtype t, __int128 v) {
    if (t.code == TIR_TYPE_BOOL) return (val){v != 0, true};
    if (v >= tmin(t) && v <= tmax(t)) return (val){v, true};
    g_overflow = true;
    if (g_wrap) return (val){wrapv(t, v), true};
    return (val){0, false};
}
static const val UNDEF = {0, false};

static __int128 fdiv(__int128 a, __int128 b) {
    __int128 q = a / b;
    if (a % b != 0 && ((a < 0) != (b < 0))) q--;
    return q;
}
static __int128 fmod_(__int128 a, __int128 b) { return a - fdiv(a, b) * b; }

static val ev(const tir_expr *e) {
    tir_dtype t = e->dtype;
    switch ((tir_kind)e->kind) {
    case TIR_KIND_INT_IMM: return (val){((const tir_int_imm *)e)->value, true};
    case TIR_KIND_VAR:
        for (int i = 0; i < nv; i++)
            if (&VAR[i]->base == e) return (val){CUR[i], true};
        g_foreign = true;
        return UNDEF;
    case TIR_KIND_AND:
    case TIR_KIND_OR: {
        const tir_binop *b = (const tir_binop *)e;
        val x = ev(b->a);
        if (!x.ok) return UNDEF;
        if ((e->kind == TIR_KIND_AND) != (x.v != 0)) return (val){x.v != 0, true};
        val y = ev(b->b);
        return y.ok ? (val){y.v != 0, true} : UNDEF;
    }
    case TIR_KIND_ADD: case TIR_KIND_SUB: case TIR_KIND_MUL: case TIR_KIND_DIV:
    case TIR_KIND_MOD: case TIR_KIND_FLOORDIV: case TIR_KIND_FLOORMOD: case TIR_KIND_MIN:
    case TIR_KIND_MAX: case TIR_KIND_EQ: case TIR_KIND_NE: case TIR_KIND_LT:
    case TIR_KIND_LE: case TIR_KIND_GT: case TIR_KIND_GE: {
        const tir_binop *b = (const tir_binop *)e;
        val x = ev(b->a), y = ev(b->b);
        if (!x.ok || !y.ok) return UNDEF;
        __int128 p = x.v, q = y.v;
        switch ((tir_kind)e->kind) {
        case TIR_KIND_ADD: return mk(t, p + q);
        case TIR_KIND_SUB: return mk(t, p - q);
        case TIR_KIND_MUL: return mk(t, p * q);
        case TIR_KIND_DIV:
        case TIR_KIND_MOD:
            if (q == 0) return UNDEF;
            if (q == -1 && p == tmin(t)) { /* undefined, as in C */
                g_overflow = true;
                if (!g_wrap) return UNDEF;
                return (val){e->kind == TIR_KIND_DIV ? p : 0, true};
            }
            return mk(t, e->kind == TIR_KIND_DIV ? p / q : p % q);
        case TIR_KIND_FLOORDIV: return q == 0 ? UNDEF : mk(t, fdiv(p, q));
        case TIR_KIND_FLOORMOD: return q == 0 ? UNDEF : mk(t, fmod_(p, q));
        case TIR_KIND_MIN: return (val){p < q ? p : q, true};
        case TIR_KIND_MAX: return (val){p > q ? p : q, true};
        case TIR_KIND_EQ: return (val){p == q, true};
        case TIR_KIND_NE: return (val){p != q, true};
        case TIR_KIND_LT: return (val){p < q, true};
        case TIR_KIND_LE: return (val){p <= q, true};
        case TIR_KIND_GT: return (val){p > q, true};
        default: return (val){p >= q, true};
        }
    }
    case TIR_KIND_NOT: {
        val x = ev(((const tir_not *)e)->a);
        return x.ok ? (val){x.v == 0, true} : UNDEF;
    }
    case TIR_KIND_SELECT: {
        const tir_select *s = (const tir_select *)e;
        val c = ev(s->cond);
        if (!c.ok) return UNDEF;
        return ev(c.v ? s->t : s->f);
    }
    case TIR_KIND_CAST: {
        val x = ev(((const tir_cast *)e)->value);
        if (!x.ok) return UNDEF;
        return (val){wrapv(t, x.v), true}; /* int -> int truncates or extends */
    }
    default:
        fprintf(stderr, "index fuzz: unexpected node %s\n", tir_print(C, e));
        abort();
    }
}

/* e at the current point: exact (undefined on overflow) or wrapping. */
static val eval_at(const tir_expr *e, bool wrap) {
    g_wrap = wrap;
    g_overflow = false;
    return ev(e);
}

/* --------------------------------------------------------------- the points */

static int npts;
static int64_t PTS[MAXPTS][MAXV];

static void enum_rec(int k) {
    if (k == nv) {
        if (npts < MAXPTS) memcpy(PTS[npts], CUR, sizeof CUR);
        npts++;
        return;
    }
    int64_t lo = VMIN[k] + (VDEP[k] >= 0 ? VMUL[k] * CUR[VDEP[k]] : 0);
    int64_t ext = VEXT[k] + (VDEP[k] >= 0 ? VEMUL[k] * CUR[VDEP[k]] : 0);
    for (int64_t i = 0; i < ext; i++) {
        CUR[k] = lo + i;
        enum_rec(k + 1);
    }
}
static void set_point(int p) { memcpy(CUR, PTS[p], sizeof CUR); }

/* ------------------------------------------------------------ the generator */

static const tir_expr *as_dt(tir_dtype t, const tir_expr *e) {
    return tir_dtype_eq(e->dtype, t) ? e : tir_cast_new(C, t, e);
}
static const tir_expr *var_expr(tir_dtype t) { return as_dt(t, &VAR[pick(nv)]->base); }

static int64_t small(void) { return pick(21) - 10; }

/* A constant of t: small, a power of two, near a variable's start (so a
 * large start can be taken off), or near the ends of the dtype. */
static int64_t cst_val(tir_dtype t) {
    int64_t mx = (int64_t)tmax(t), mn = (int64_t)tmin(t);
    switch (pick(12)) {
    case 0: {
        int k = pick(nv);
        int64_t v = -VMIN[k] + small();
        return v < mn ? mn : v > mx ? mx : v;
    }
    case 1: {
        int k = pick(nv);
        int64_t v = VMIN[k] + small();
        return v < mn ? mn : v > mx ? mx : v;
    }
    case 2: return pick(2) ? mx - pick(40) : mn + pick(40);
    case 3: return (int64_t)1 << pick(t.bits == 32 ? 31 : 63);
    case 4: return -((int64_t)1 << pick(t.bits == 32 ? 31 : 63));
    case 5: return pick(64) * (pick(2) ? 1 : -1);
    default: return small();
    }
}
static const tir_expr *cst(tir_dtype t) { return tir_int(C, t, cst_val(t)); }

static const tir_expr *gen(tir_dtype t, int d);

static const tir_expr *gen_cmp(int d) {
    static const tir_kind ks[] = {TIR_KIND_LT, TIR_KIND_LE, TIR_KIND_EQ,
                                  TIR_KIND_NE, TIR_KIND_GT, TIR_KIND_GE};
    tir_dtype t = pick(3) ? TIR_I32 : TIR_I64;
    const tir_expr *a = gen(t, d - 1), *b = pick(2) ? cst(t) : gen(t, d - 1);
    return tir_binop_new(C, ks[pick(6)], a, b);
}

static const tir_expr *gen_bool(int d) {
    int k = pick(d > 0 ? 10 : 6);
    if (k < 7) return gen_cmp(d);
    if (k == 7) return tir_not_new(C, gen_bool(d - 1));
    if (k == 8) return tir_and(C, gen_bool(d - 1), gen_bool(d - 1));
    return tir_or(C, gen_bool(d - 1), gen_bool(d - 1));
}

static const tir_expr *leaf(tir_dtype t) { return pick(3) == 0 ? cst(t) : var_expr(t); }

static const tir_expr *divisor(tir_dtype t, int d) {
    static const int64_t sm[] = {1, 2, 4, 8, 16, 32, 64, 3, 5, 7, 6, 12, 24,
                                 -1, -2, -4, -8, -3, -5, 2, 4, 8, 3};
    int k = pick(10);
    if (k == 0) return gen(t, d - 1);
    if (k == 1) return var_expr(t);
    int64_t v = k == 2 ? cst_val(t) : sm[pick((int)(sizeof sm / sizeof sm[0]))];
    return tir_int(C, t, v ? v : 3);
}

/* The index shapes split and fuse produce: a fused a*c + b (c often b's
 * extent), floordiv / floormod of it by powers of two and c, nested, and
 * sums of the pieces (which the merge rules put back together). */
static const tir_expr *gen_split(tir_dtype t) {
    static const int64_t ps[] = {1, 2, 4, 8, 16, 3, 6, 12};
    int ka = pick(nv), kb = pick(nv);
    int64_t c = pick(2) ? VEXT[kb] : ps[pick(8)];
    const tir_expr *a = var_expr(t), *b = as_dt(t, &VAR[kb]->base);
    (void)ka;
    const tir_expr *x = tir_add(C, tir_mul(C, a, tir_int(C, t, c)), b);
    if (pick(3) == 0) x = tir_add(C, x, tir_int(C, t, small()));
    int64_t l = ps[pick(8)], u = ps[pick(8)];
    const tir_expr *q = tir_floordiv(C, x, tir_int(C, t, l));
    const tir_expr *m = tir_floormod(C, x, tir_int(C, t, l));
    switch (pick(6)) {
    case 0: return tir_floormod(C, q, tir_int(C, t, u));
    case 1: return tir_floordiv(C, q, tir_int(C, t, u));
    case 2: /* x // l * l + x % l */
        return tir_add(C, tir_mul(C, q, tir_int(C, t, l)), m);
    case 3: /* (x // l) % u * l + x // (l*u) * l*u + x % l */
        return tir_add(C,
                       tir_add(C, tir_mul(C, tir_floormod(C, q, tir_int(C, t, u)),
                                          tir_int(C, t, l)),
                               tir_mul(C, tir_floordiv(C, x, tir_int(C, t, l * u)),
                                       tir_int(C, t, l * u))),
                       m);
    case 4: return tir_sub(C, x, tir_mul(C, q, tir_int(C, t, l)));
    default: return tir_floordiv(C, tir_floormod(C, x, tir_int(C, t, l * u)), tir_int(C, t, l));
    }
}

static const tir_expr *gen(tir_dtype t, int d) {
    if (d <= 0 || pick(6) == 0) return pick(8) ? leaf(t) : gen_split(t);
    const tir_expr *a = gen(t, d - 1);
    switch (pick(18)) {
    case 0:
    case 1: return tir_add(C, a, pick(2) ? cst(t) : gen(t, d - 1));
    case 2: return tir_add(C, a, gen(t, d - 1));
    case 3: return pick(3) == 0 ? tir_sub(C, cst(t), a) : tir_sub(C, a, gen(t, d - 1));
    case 4: return tir_mul(C, a, tir_int(C, t, pick(3) ? small() : cst_val(t)));
    case 5: return tir_mul(C, a, pick(2) ? var_expr(t) : gen(t, d - 1));
    case 6:
    case 7:
    case 8:
    case 9: {
        static const tir_kind ks[] = {TIR_KIND_FLOORDIV, TIR_KIND_FLOORMOD, TIR_KIND_DIV,
                                      TIR_KIND_MOD};
        return tir_binop_new(C, ks[pick(4)], a, divisor(t, d));
    }
    case 10: return tir_binop_new(C, TIR_KIND_MIN, a, pick(2) ? cst(t) : gen(t, d - 1));
    case 11: return tir_binop_new(C, TIR_KIND_MAX, a, pick(2) ? cst(t) : gen(t, d - 1));
    case 12:
    case 13: return tir_select_new(C, gen_bool(d - 1), a, gen(t, d - 1));
    case 14: {
        tir_dtype u = tir_dtype_eq(t, TIR_I32) ? TIR_I64 : TIR_I32;
        return tir_cast_new(C, t, gen(u, d - 1));
    }
    case 15: return tir_cast_new(C, t, gen_cmp(d - 1));
    default: return tir_add(C, tir_mul(C, a, tir_int(C, t, pick(40) - 8)), gen(t, d - 1));
    }
}

/* ---------------------------------------------------------- the analyzers */

/* Var k's start and extent as expressions. */
static const tir_expr *min_expr(int k) {
    const tir_expr *m = tir_int(C, VT[k], VMIN[k]);
    if (VDEP[k] < 0) return m;
    return tir_add(C, tir_mul(C, &VAR[VDEP[k]]->base, tir_int(C, VT[k], VMUL[k])), m);
}
static const tir_expr *ext_expr(int k) {
    const tir_expr *x = tir_int(C, VT[k], VEXT[k]);
    if (VDEP[k] < 0 || VEMUL[k] == 0) return x;
    return tir_add(C, tir_mul(C, &VAR[VDEP[k]]->base, tir_int(C, VT[k], VEMUL[k])), x);
}
/* The largest extent var k takes. */
static int64_t max_ext(int k) {
    if (VDEP[k] < 0 || VEMUL[k] == 0) return VEXT[k];
    return VEXT[k] + VEMUL[k] * (VMIN[VDEP[k]] + VEXT[VDEP[k]] - 1);
}

static tir_analyzer *bound_analyzer(void) {
    tir_analyzer *a = tir_analyzer_create(C);
    for (int k = 0; k < nv; k++) {
        if (VDEP[k] < 0)
            tir_analyzer_bind_const(a, VAR[k], VMIN[k], VEXT[k]);
        else
            tir_analyzer_bind(a, VAR[k], min_expr(k), ext_expr(k));
    }
    return a;
}

/* ----------------------------------------------------------------- checks */

enum { CK_SIMPLIFY, CK_BOUND, CK_PROVE, CK_RELAX, CK_STMT, CK_COUNT };
static const char *const ck_names[] = {"simplify", "const_bound", "can_prove", "relax", "stmt"};
static long ck_runs[CK_COUNT], ck_fail[CK_COUNT], ck_hits[CK_COUNT + 2];
static bool g_relax_strict; /* the range's ends evaluate exactly */
static long g_first; /* MINITIR_FUZZ_FIRST: the first case (to rerun one) */
static long g_show_ovf; /* MINITIR_FUZZ_SHOW_OVERFLOW=N: print N such points */
static long n_defined, n_simp_overflow;

static char msg[4096];
static void say(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
}

static const char *pt_str(void) {
    static char b[200];
    int n = 0;
    for (int k = 0; k < nv; k++)
        n += snprintf(b + n, sizeof b - (size_t)n, "%s%s=%lld", k ? ", " : "", VAR[k]->name,
                      (long long)CUR[k]);
    return b;
}

static const char *i128_str(__int128 v) {
    static char b[4][48];
    static int w;
    char *p = b[w++ & 3];
    snprintf(p, 48, "%lld", (long long)v);
    return p;
}

/* 1: the simplified form agrees wherever e is defined. */
static bool check_simplify(const tir_expr *e, bool quiet) {
    tir_analyzer *a = bound_analyzer();
    const tir_expr *s = tir_analyzer_simplify(a, e);
    tir_analyzer_destroy(a);
    if (!tir_dtype_eq(s->dtype, e->dtype)) {
        if (!quiet) say("dtype changed: %s", tir_print(C, s));
        return false;
    }
    for (int p = 0; p < npts; p++) {
        set_point(p);
        val x = eval_at(e, false);
        if (!x.ok) continue;
        if (!quiet) n_defined++;
        val y = eval_at(s, true);
        if (!quiet && g_overflow && n_simp_overflow++ < g_show_ovf)
            printf("# the simplified form overflows at %s:\n#   %s\n#   %s\n", pt_str(),
                   tir_print(C, e), tir_print(C, s));
        if (g_foreign || !y.ok || y.v != x.v) {
            if (!quiet)
                say("simplified to %s; at %s: %s, simplified %s", tir_print(C, s), pt_str(),
                    i128_str(x.v), g_foreign ? "uses another variable" : y.ok ? i128_str(y.v)
                                                                             : "undefined");
            g_foreign = false;
            return false;
        }
    }
    return true;
}

/* 2: tir_analyzer_const_bound holds every value. */
static bool check_bound(const tir_expr *e, bool quiet) {
    tir_analyzer *a = bound_analyzer();
    tir_int_bound b = tir_analyzer_const_bound(a, e);
    tir_analyzer_destroy(a);
    for (int p = 0; p < npts; p++) {
        set_point(p);
        val x = eval_at(e, false);
        if (!x.ok) continue;
        if (x.v < b.min || x.v > b.max) {
            if (!quiet)
                say("const_bound [%lld, %lld]; at %s: %s", (long long)b.min, (long long)b.max,
                    pt_str(), i128_str(x.v));
            return false;
        }
    }
    return true;
}

/* 3: can_prove(c) means c holds wherever it is defined. */
static bool check_prove(const tir_expr *c, bool quiet) {
    tir_analyzer *a = bound_analyzer();
    bool proved = tir_analyzer_can_prove(a, c);
    tir_analyzer_destroy(a);
    if (!proved) return true;
    if (!quiet) ck_hits[CK_PROVE]++;
    for (int p = 0; p < npts; p++) {
        set_point(p);
        val x = eval_at(c, false);
        if (x.ok && !x.v) {
            if (!quiet) say("proved, but false at %s", pt_str());
            return false;
        }
    }
    return true;
}

/* 4: relax over the variables in mask. */
static unsigned relax_mask;
static const tir_expr *relax_e;

/* e is defined at every point that shares p's values of the variables not
 * relaxed. */
static bool group_defined(int p) {
    int64_t keep[MAXV];
    memcpy(keep, PTS[p], sizeof keep);
    bool ok = true;
    for (int q = 0; q < npts && ok; q++) {
        bool same = true;
        for (int k = 0; k < nv; k++)
            if (!(relax_mask & (1u << k)) && PTS[q][k] != keep[k]) same = false;
        if (!same) continue;
        set_point(q);
        ok = eval_at(relax_e, false).ok;
    }
    set_point(p);
    return ok;
}
static bool check_relax(const tir_expr *e, bool quiet) {
    const tir_var *vs[MAXV];
    int n = 0;
    for (int k = 0; k < nv; k++)
        if (relax_mask & (1u << k)) vs[n++] = VAR[k];
    relax_e = e;
    tir_analyzer *a = bound_analyzer();
    tir_range r;
    bool ok = tir_analyzer_relax(a, e, n, vs, &r);
    tir_analyzer_destroy(a);
    if (!ok) return true;
    if (!quiet) ck_hits[CK_RELAX]++;
    for (int k = 0; k < n; k++) {
        if (tir_uses_var(r.min, vs[k]) || tir_uses_var(r.extent, vs[k])) {
            if (!quiet)
                say("relaxed over mask %u: [%s, +%s) uses %s", relax_mask, tir_print(C, r.min),
                    tir_print(C, r.extent), vs[k]->name);
            return false;
        }
    }
    for (int p = 0; p < npts; p++) {
        set_point(p);
        val x = eval_at(e, false);
        if (!x.ok) continue;
        /* the range's ends are analyzer output like a simplified form:
           they evaluate wrapping, and a point where they overflow is
           counted (MINITIR_FUZZ_RELAX_STRICT=1 evaluates them exactly and
           fails there); a range is about the whole domain of the relaxed
           variables, so a miss counts only where e is defined for every
           value of them (elsewhere its range may pass the dtype, and no
           range is right) */
        val lo = eval_at(r.min, g_relax_strict != 1);
        bool ovf = g_overflow;
        val ex = eval_at(r.extent, g_relax_strict != 1);
        ovf = ovf || g_overflow;
        if (ovf && !quiet) ck_hits[CK_COUNT + 1]++;
        if (g_foreign || !lo.ok || !ex.ok || x.v < lo.v || x.v >= lo.v + ex.v) {
            if (!g_foreign && !group_defined(p)) {
                if (!quiet) ck_hits[CK_COUNT]++;
                continue;
            }
            if (!quiet)
                say("relaxed over mask %u: [%s, +%s); at %s: %s, range [%s, +%s)%s", relax_mask,
                    tir_print(C, r.min), tir_print(C, r.extent), pt_str(), i128_str(x.v),
                    lo.ok ? i128_str(lo.v) : "undef", ex.ok ? i128_str(ex.v) : "undef",
                    ovf ? " (overflowed)" : "");
            g_foreign = false;
            return false;
        }
    }
    return true;
}

/* 5: simplify_stmt of for ...: if c: Y[p] = e else Y[p] = e2. */
static const tir_expr *stmt_e2;
static const tir_buffer *Y32, *Y64;
static int64_t sv_val[MAXPTS];
static unsigned char sv_state[MAXPTS]; /* 0 none, 1 defined value, 2 undefined */
static bool stmt_bad;

static void walk(const tir_stmt *s, bool simplified) {
    if (stmt_bad) return;
    switch ((tir_kind)s->kind) {
    case TIR_KIND_FOR: {
        const tir_for *f = (const tir_for *)s;
        int k = -1;
        for (int q = 0; q < nv; q++)
            if (VAR[q] == f->var) k = q;
        val mn = eval_at(f->min, true), ex = eval_at(f->extent, true);
        if (k < 0 || !mn.ok || !ex.ok || g_foreign) {
            stmt_bad = true;
            return;
        }
        int64_t save = CUR[k];
        for (__int128 i = 0; i < ex.v; i++) {
            CUR[k] = (int64_t)(mn.v + i);
            walk(f->body, simplified);
        }
        CUR[k] = save;
        return;
    }
    case TIR_KIND_IF: {
        const tir_if *f = (const tir_if *)s;
        val c = eval_at(f->cond, simplified);
        if (g_foreign) stmt_bad = true;
        if (!c.ok) return; /* undefined: a store of a defined point missing fails below */
        if (c.v) walk(f->then_s, simplified);
        else if (f->else_s) walk(f->else_s, simplified);
        return;
    }
    case TIR_KIND_BUFFER_STORE: {
        const tir_buffer_store *st = (const tir_buffer_store *)s;
        val i = eval_at(st->indices[0], true);
        if (!i.ok || i.v < 0 || i.v >= MAXPTS || g_foreign) {
            stmt_bad = true;
            return;
        }
        val x = eval_at(st->value, simplified);
        if (g_foreign) stmt_bad = true;
        if (!simplified) {
            sv_state[i.v] = x.ok ? 1 : 2;
            sv_val[i.v] = (int64_t)x.v;
        } else if (sv_state[i.v] == 1 && (!x.ok || x.v != sv_val[i.v])) {
            stmt_bad = true;
        } else if (sv_state[i.v] == 1) {
            sv_state[i.v] = 3; /* checked */
        }
        return;
    }
    case TIR_KIND_SEQ: {
        const tir_seq *q = (const tir_seq *)s;
        for (int i = 0; i < q->n; i++) walk(q->stmts[i], simplified);
        return;
    }
    case TIR_KIND_EVALUATE: return;
    default:
        fprintf(stderr, "index fuzz: unexpected statement\n%s\n", tir_print(C, s));
        abort();
    }
}

static bool check_stmt(const tir_expr *c, bool quiet) {
    const tir_expr *e = stmt_e2 ? ((const tir_binop *)stmt_e2)->a : NULL;
    const tir_expr *e2 = stmt_e2 ? ((const tir_binop *)stmt_e2)->b : NULL;
    tir_dtype t = e->dtype;
    const tir_buffer *y = t.bits == 32 ? Y32 : Y64;
    /* p = sum of (v_k - start_k) * stride_k, the point's number */
    const tir_expr *idx = tir_i32(C, 0);
    int64_t stride = 1;
    for (int k = nv - 1; k >= 0; k--) {
        const tir_expr *off = tir_sub(C, &VAR[k]->base, min_expr(k));
        if (!tir_dtype_eq(VT[k], TIR_I32)) off = tir_cast_new(C, TIR_I32, off);
        idx = tir_add(C, idx, tir_mul(C, off, tir_i32(C, stride)));
        stride *= max_ext(k);
    }
    if (stride > MAXPTS) return true; /* too many for Y */
    const tir_stmt *body = tir_if_new(C, c, tir_store(C, y, e, 1, &idx),
                                      tir_store(C, y, e2, 1, &idx));
    for (int k = nv - 1; k >= 0; k--)
        body = tir_for_new(C, VAR[k], min_expr(k), ext_expr(k), TIR_FOR_SERIAL, NULL, 0, NULL,
                           body);
    tir_analyzer *a = tir_analyzer_create(C);
    const tir_stmt *s = tir_analyzer_simplify_stmt(a, body);
    tir_analyzer_destroy(a);
    memset(sv_state, 0, sizeof sv_state);
    stmt_bad = false;
    g_foreign = false;
    walk(body, false);
    if (stmt_bad) return true; /* the original is ill-formed: nothing to check */
    walk(s, true);
    for (int p = 0; p < MAXPTS && !stmt_bad; p++)
        if (sv_state[p] == 1) stmt_bad = true; /* a defined store went missing */
    g_foreign = false;
    if (stmt_bad && !quiet) say("simplified to\n%s", tir_print(C, s));
    return !stmt_bad;
}

static bool run_check(int ck, const tir_expr *e, bool quiet) {
    switch (ck) {
    case CK_SIMPLIFY: return check_simplify(e, quiet);
    case CK_BOUND: return check_bound(e, quiet);
    case CK_PROVE: return check_prove(e, quiet);
    case CK_RELAX: return check_relax(e, quiet);
    default: return check_stmt(e, quiet);
    }
}

/* ----------------------------------------------------------------- shrinking */

static const tir_expr *rebuild(const tir_expr *e, int nk, const tir_expr *const *kids) {
    switch ((tir_kind)e->kind) {
    case TIR_KIND_NOT: return tir_not_new(C, kids[0]);
    case TIR_KIND_CAST: return tir_cast_new(C, e->dtype, kids[0]);
    case TIR_KIND_SELECT: return tir_select_new(C, kids[0], kids[1], kids[2]);
    default: (void)nk; return tir_binop_new(C, (tir_kind)e->kind, kids[0], kids[1]);
    }
}

static int children(const tir_expr *e, const tir_expr **kids) {
    switch ((tir_kind)e->kind) {
    case TIR_KIND_NOT: kids[0] = ((const tir_not *)e)->a; return 1;
    case TIR_KIND_CAST: kids[0] = ((const tir_cast *)e)->value; return 1;
    case TIR_KIND_SELECT: {
        const tir_select *s = (const tir_select *)e;
        kids[0] = s->cond, kids[1] = s->t, kids[2] = s->f;
        return 3;
    }
    case TIR_KIND_INT_IMM:
    case TIR_KIND_VAR: return 0;
    default:
        kids[0] = ((const tir_binop *)e)->a, kids[1] = ((const tir_binop *)e)->b;
        return 2;
    }
}

static int size_of(const tir_expr *e) {
    const tir_expr *k[3];
    int n = children(e, k), s = 1;
    for (int i = 0; i < n; i++) s += size_of(k[i]);
    return s;
}

/* Tries replacements of node e (its operands, 0, 1, a variable, a
 * smaller constant) through shrink_try, which rebuilds the whole
 * expression around it; returns what shrink_try accepted, or NULL. */
static const tir_expr *(*shrink_try)(const tir_expr *);
static const tir_expr *shrink_node(const tir_expr *e) {
    const tir_expr *k[3], *r;
    int n = children(e, k);
    for (int i = 0; i < n; i++)
        if (tir_dtype_eq(k[i]->dtype, e->dtype) && (r = shrink_try(k[i]))) return r;
    if (e->kind == TIR_KIND_CAST && k[0]->kind != TIR_KIND_INT_IMM &&
        !tir_dtype_is_bool(k[0]->dtype))
        for (int i = 0; i < nv; i++)
            if ((r = shrink_try(as_dt(e->dtype, &VAR[i]->base)))) return r;
    if (tir_dtype_is_bool(e->dtype)) {
        if (e->kind != TIR_KIND_INT_IMM)
            for (int v = 0; v < 2; v++)
                if ((r = shrink_try(tir_bool(C, v)))) return r;
        return NULL;
    }
    if (e->kind != TIR_KIND_INT_IMM) {
        for (int v = 0; v < 2; v++)
            if ((r = shrink_try(tir_int(C, e->dtype, v)))) return r;
        for (int i = 0; i < nv; i++)
            if (e != as_dt(e->dtype, &VAR[i]->base) &&
                (r = shrink_try(as_dt(e->dtype, &VAR[i]->base))))
                return r;
    } else {
        int64_t v = ((const tir_int_imm *)e)->value;
        int64_t cs[] = {0, 1, -1, v / 2, v > 0 ? v - 1 : v + 1};
        for (int i = 0; i < 5; i++)
            if (cs[i] != v && (r = shrink_try(tir_int(C, e->dtype, cs[i])))) return r;
    }
    return NULL;
}

/* The node numbered `at` in preorder, with its path of ancestors. */
static int path_to(const tir_expr *e, int at, const tir_expr **path, int *idx) {
    int depth = 0;
    for (;;) {
        path[depth] = e;
        if (at == 0) return depth;
        at--;
        const tir_expr *k[3];
        int n = children(e, k), i;
        for (i = 0; i < n; i++) {
            int sz = size_of(k[i]);
            if (at < sz) break;
            at -= sz;
        }
        idx[depth++] = i;
        e = k[i];
    }
}

static int shrink_ck;
static const tir_expr *g_path[64];
static int g_idx[64], g_depth;
static const tir_expr *g_accepted;

/* The whole expression with the node at the end of g_path replaced. */
static const tir_expr *with_replaced(const tir_expr *r) {
    for (int d = g_depth - 1; d >= 0; d--) {
        const tir_expr *k[3];
        int n = children(g_path[d], k);
        k[g_idx[d]] = r;
        r = rebuild(g_path[d], n, k);
    }
    return r;
}

static const tir_expr *try_repl(const tir_expr *r) {
    const tir_expr *w = with_replaced(r);
    if (!run_check(shrink_ck, w, true)) {
        g_accepted = w;
        return w;
    }
    return NULL;
}

static const tir_expr *shrink(int ck, const tir_expr *e) {
    shrink_ck = ck;
    shrink_try = try_repl;
    for (int rounds = 0; rounds < 200; rounds++) {
        int n = size_of(e);
        bool progress = false;
        for (int at = 0; at < n && !progress; at++) {
            g_depth = path_to(e, at, g_path, g_idx);
            if (g_depth >= 63) continue;
            g_accepted = NULL;
            shrink_node(g_path[g_depth]);
            if (g_accepted) {
                e = g_accepted;
                progress = true;
            }
        }
        if (!progress) break;
    }
    return e;
}

/* ---------------------------------------------------------------- the cases */

static void new_ctx(void) {
    if (C) tir_ctx_destroy(C);
    C = tir_ctx_create();
    int64_t n = MAXPTS;
    Y32 = tir_buffer_simple(C, "Y", TIR_I32, 1, &n, TIR_SCOPE_GLOBAL);
    Y64 = tir_buffer_simple(C, "Z", TIR_I64, 1, &n, TIR_SCOPE_GLOBAL);
}

static const tir_var *VAR32[MAXV], *VAR64[MAXV];

static void draw_vars(void) {
    nv = 1 + pick(3);
    int64_t budget = 2048;
    for (int k = 0; k < nv; k++) {
        VT[k] = pick(3) ? TIR_I32 : TIR_I64;
        VAR[k] = tir_dtype_eq(VT[k], TIR_I32) ? VAR32[k] : VAR64[k];
        int64_t cap = nv == 1 ? 40 : nv == 2 ? 40 : 12;
        VEXT[k] = 1 + pick((int)cap);
        if (VEXT[k] > budget) VEXT[k] = budget;
        budget /= VEXT[k];
        VDEP[k] = -1;
        VMUL[k] = 0;
        VEMUL[k] = 0;
        int64_t hi = (int64_t)tmax(VT[k]), lo = (int64_t)tmin(VT[k]);
        switch (pick(8)) {
        case 0: VMIN[k] = 0; break;
        case 1: VMIN[k] = -pick(40); break;
        case 2: VMIN[k] = pick(40); break;
        case 3: /* near the top of int32, or of 2^62 for int64 */
            VMIN[k] = tir_dtype_eq(VT[k], TIR_I32) ? hi - VEXT[k] + 1 - pick(40)
                                                   : ((int64_t)1 << 62) - pick(40);
            break;
        case 4:
            VMIN[k] = tir_dtype_eq(VT[k], TIR_I32) ? lo + pick(40)
                                                   : -((int64_t)1 << 62) + pick(40);
            break;
        case 5:
        case 6:
            if (k > 0 && tir_dtype_eq(VT[k - 1], VT[k]) && VMIN[k - 1] > -1000 &&
                VMIN[k - 1] < 1000) {
                VDEP[k] = pick(k);
                while (!tir_dtype_eq(VT[VDEP[k]], VT[k]) || VMIN[VDEP[k]] < -1000 ||
                       VMIN[VDEP[k]] > 1000)
                    VDEP[k] = k - 1;
                VMUL[k] = pick(9) - 2;
                VMIN[k] = pick(20) - 10;
                /* i in [0, n): an extent of the other variable */
                if (VDEP[VDEP[k]] < 0 && VMIN[VDEP[k]] >= 0 && pick(2)) {
                    VEMUL[k] = 1 + pick(2);
                    VEXT[k] = 1 + pick(4);
                    if (pick(2)) VMUL[k] = 0;
                }
                break;
            }
            VMIN[k] = pick(8) - 4;
            break;
        default: VMIN[k] = pick(16) - 8; break;
        }
    }
}

/* A comparison of e near its range of values, or with another expression. */
static const tir_expr *draw_cmp(const tir_expr *e, bool have, __int128 lo, __int128 hi) {
    tir_dtype t = e->dtype;
    static const tir_kind ks[] = {TIR_KIND_LT, TIR_KIND_LE, TIR_KIND_EQ,
                                  TIR_KIND_NE, TIR_KIND_GT, TIR_KIND_GE};
    tir_kind k = ks[pick(6)];
    if (!have || pick(4) == 0) {
        const tir_expr *o = pick(2) ? gen(t, 2) : cst(t);
        return pick(2) ? tir_binop_new(C, k, e, o) : tir_binop_new(C, k, o, e);
    }
    __int128 base = pick(2) ? lo : hi;
    __int128 v = base + pick(5) - 2;
    if (v < tmin(t) || v > tmax(t)) v = base;
    const tir_expr *o = tir_int(C, t, (int64_t)v);
    return pick(2) ? tir_binop_new(C, k, e, o) : tir_binop_new(C, k, o, e);
}

static long failures;

static void report(long c, int ck, const tir_expr *e) {
    failures++;
    ck_fail[ck]++;
    char rng[400];
    int n = 0;
    for (int k = 0; k < nv; k++) {
        char tb[16];
        n += snprintf(rng + n, sizeof rng - (size_t)n, "%s %s in [", k ? ";" : "",
                      tir_dtype_str(VT[k], tb, sizeof tb));
        if (VDEP[k] >= 0)
            n += snprintf(rng + n, sizeof rng - (size_t)n, "%s*%lld + ", VAR[VDEP[k]]->name,
                          (long long)VMUL[k]);
        n += snprintf(rng + n, sizeof rng - (size_t)n, "%lld, +", (long long)VMIN[k]);
        if (VDEP[k] >= 0 && VEMUL[k])
            n += snprintf(rng + n, sizeof rng - (size_t)n, "%s*%lld + ", VAR[VDEP[k]]->name,
                          (long long)VEMUL[k]);
        n += snprintf(rng + n, sizeof rng - (size_t)n, "%lld) %s", (long long)VEXT[k],
                      VAR[k]->name);
    }
    printf("# FAILURE (%s): MINITIR_FUZZ_SEED=%llu case %ld, %s\n#   %s\n#   %s\n",
           ck_names[ck], (unsigned long long)g_seed, c, rng, tir_print(C, e), msg);
    if (ck == CK_STMT) return;
    const tir_expr *m = shrink(ck, e);
    run_check(ck, m, false);
    printf("# shrunk:\n#   %s\n#   %s\n", tir_print(C, m), msg);
}

static void one_case(long c) {
    draw_vars();
    npts = 0;
    enum_rec(0);
    if (npts > MAXPTS) return;
    tir_dtype t = pick(3) ? TIR_I32 : TIR_I64;
    const tir_expr *e = gen(t, 1 + pick(4));
    /* the range of e's defined values */
    bool have = false;
    __int128 lo = 0, hi = 0;
    for (int p = 0; p < npts; p++) {
        set_point(p);
        val x = eval_at(e, false);
        if (!x.ok) continue;
        if (!have || x.v < lo) lo = x.v;
        if (!have || x.v > hi) hi = x.v;
        have = true;
    }
    if (!have) return; /* undefined everywhere */
    const tir_expr *cmp = draw_cmp(e, have, lo, hi);
    ck_runs[CK_SIMPLIFY] += 2;
    if (!check_simplify(e, false)) report(c, CK_SIMPLIFY, e);
    if (!check_simplify(cmp, false)) report(c, CK_SIMPLIFY, cmp);
    ck_runs[CK_BOUND]++;
    if (!check_bound(e, false)) report(c, CK_BOUND, e);
    ck_runs[CK_PROVE]++;
    if (!check_prove(cmp, false)) report(c, CK_PROVE, cmp);
    relax_mask = 1 + (unsigned)pick((1 << nv) - 1);
    ck_runs[CK_RELAX]++;
    if (!check_relax(e, false)) report(c, CK_RELAX, e);
    if (pick(3) == 0) {
        ck_runs[CK_STMT]++;
        stmt_e2 = tir_add(C, e, gen(t, 2)); /* carries e and e2 */
        if (!check_stmt(cmp, false)) report(c, CK_STMT, cmp);
    }
}

static void test_index_fuzz(void **st) {
    (void)st;
    for (long c = g_first; c < g_cases && failures < 10; c++) {
        if (c % 100 == 0 || c == g_first) {
            new_ctx();
            for (int k = 0; k < MAXV; k++) {
                static const char *const n32[MAXV] = {"i", "j", "k"};
                static const char *const n64[MAXV] = {"l", "m", "n"};
                VAR32[k] = tir_var_new(C, n32[k], TIR_I32);
                VAR64[k] = tir_var_new(C, n64[k], TIR_I64);
            }
        }
        fuzz_seed_case(g_seed, c);
        one_case(c);
    }
    tir_ctx_destroy(C);
    C = NULL;
    printf("# index fuzz seed %llu: %ld cases, %ld defined points simplified (%ld where the "
           "simplified form overflows), failures %ld:",
           (unsigned long long)g_seed, g_cases, n_defined, n_simp_overflow, failures);
    for (int k = 0; k < CK_COUNT; k++)
        printf(" %s %ld/%ld", ck_names[k], ck_fail[k], ck_runs[k]);
    printf("; proved %ld, relaxed %ld (%ld points outside, where e "
           "is undefined elsewhere in the relaxed domain; %ld where the range's ends "
           "overflow)\n",
           ck_hits[CK_PROVE], ck_hits[CK_RELAX], ck_hits[CK_COUNT], ck_hits[CK_COUNT + 1]);
    assert_int_equal(failures, 0);
}

int main(int argc, char **argv) {
    fuzz_args(argc, argv, &g_cases, &g_seed);
    const char *rx = getenv("MINITIR_FUZZ_RELAX_STRICT");
    g_relax_strict = rx && atoi(rx) > 0;
    const char *so = getenv("MINITIR_FUZZ_SHOW_OVERFLOW");
    g_show_ovf = so ? atol(so) : 0;
    const char *fc = getenv("MINITIR_FUZZ_FIRST");
    g_first = fc ? atol(fc) : 0;
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_index_fuzz)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
