/* test_simplify_float_fuzz.c: the simplifier against the interpreter on
 * floating-point expressions of user data, bit for bit.
 *
 * The simplifier only constant folds floating-point arithmetic (each
 * result rounded to its dtype, src/ir/simplify.c), but it also folds the
 * integer and boolean expressions around it (casts of floats to integers,
 * comparisons of floats, selects, lets), so a simplified expression must
 * give the interpreter's bits: the sign of a zero, infinities, NaN or not
 * (any NaN equals any NaN), subnormals and the rounding of float16,
 * bfloat16, float32 and float64 alike.  Each case draws a random
 * expression of one of those dtypes (or an integer one through float to
 * int casts and float comparisons) over loads of float buffers of the four
 * dtypes and of int32 / int64 / int8 / uint8 buffers cast to float, with
 * constants drawn from the special values (±0, ±inf, NaN, the smallest
 * subnormals, the largest finite values, the smallest normals, ±1, 0.5,
 * values at and near the integer casts' limits, random bits), simplifies
 * it (tir_analyzer_simplify, or, for a third of the cases, the statement
 * `Y[0] = e` or `if c: Y[0] = e else: Y[0] = e2` with
 * tir_analyzer_simplify_stmt), and when that changed it, runs both in the
 * interpreter on 40 random input sets drawn from the same special values.
 * An eighth of the cases are vectors of 4 lanes (`Y[0:4] = e`, loads of
 * ramps, broadcast constants and scalar subexpressions) and an eighth a
 * loop `for i in range(4): Y[i] = e` (simplified as a statement, with i's
 * range known) whose loads index by i and whose ints take i * k + c; a
 * quarter draw their leaves mostly constant, so that whole subtrees fold.  A case whose expression
 * itself fails (an integer division by zero) is skipped.
 *
 * The sign of the zero that a float min/max returns for two zeros is
 * unspecified (docs/lowered-ir.md: the GPU's min.f32 takes -0 as the
 * smaller), but the interpreter and the simplifier's folding both take
 * the second operand, so the comparison is strict there too.
 * MINITIR_FUZZ_CASES=N (or argv[1]) sets the number of cases (default
 * 12,000: about a second), MINITIR_FUZZ_SEED the seed; MINITIR_FUZZ_TRACE
 * prints each case's expression before it is simplified (to stderr).
 */
#include <math.h>
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

static long g_cases = 12000;
static uint64_t g_seed = 20261205;
static bool g_trace; /* MINITIR_FUZZ_TRACE: each case's expression, to stderr */

static tir_ctx *C;

/* The buffers: four float ones (F16, BF16, F32, F64) and four int ones. */
enum { NB = 8, NE = 4 };
static tir_dtype DT[NB];
static const tir_buffer *B[NB];
static const char *const LVN[4] = {"vh", "vg", "vs", "vd"}; /* let variables */
#define FT(i) DT[i]          /* i < 4: the float dtypes */
#define IT(i) DT[4 + (i)]    /* i < 4: the int dtypes */

static int fidx(tir_dtype t) {
    for (int i = 0; i < 4; i++)
        if (tir_dtype_eq(DT[i], t)) return i;
    return -1;
}
static bool is_flt(tir_dtype t) { return fidx(t) >= 0; }

/* ------------------------------------------------ float formats and values */

/* stored mantissa bits, exponent bits */
static const int MB[4] = {10, 7, 23, 52}, EB[4] = {5, 8, 8, 11};

/* x rounded to format f (nearest even), as its bits; NaN stays quiet. */
static uint64_t to_bits(int f, double x) {
    uint64_t b;
    memcpy(&b, &x, sizeof b);
    if (f == 3) return b;
    if (f == 2) {
        float v = (float)x;
        uint32_t u;
        memcpy(&u, &v, sizeof u);
        return u;
    }
    int mbits = MB[f], ebits = EB[f];
    uint64_t sign = (b >> 63) << (mbits + ebits);
    int bias = (1 << (ebits - 1)) - 1, emax = (1 << ebits) - 1;
    int e = (int)((b >> 52) & 0x7ff);
    uint64_t m = b & ((1ull << 52) - 1);
    uint64_t inf = (uint64_t)emax << mbits;
    if (e == 0x7ff) return sign | inf | (m ? (1ull << (mbits - 1)) | (m >> (52 - mbits)) : 0);
    if (e == 0) return sign;
    int ue = e - 1023;
    if (ue + bias >= emax) return sign | inf;
    uint64_t full = m | (1ull << 52);
    bool normal = ue >= 1 - bias;
    int shift = 52 - mbits + (normal ? 0 : 1 - bias - ue);
    if (shift >= 64) return sign;
    uint64_t q = full >> shift, rem = full & ((1ull << shift) - 1), half = 1ull << (shift - 1);
    if (rem > half || (rem == half && (q & 1))) q++;
    uint64_t r = normal ? ((uint64_t)(ue + bias) << mbits) + (q - (1ull << mbits)) : q;
    if (r > inf) r = inf;
    return sign | r;
}

static double from_bits(int f, uint64_t u) {
    if (f == 3) {
        double d;
        memcpy(&d, &u, sizeof d);
        return d;
    }
    if (f == 2) {
        uint32_t w = (uint32_t)u;
        float v;
        memcpy(&v, &w, sizeof v);
        return v;
    }
    int mbits = MB[f], ebits = EB[f], emax = (1 << ebits) - 1, bias = emax >> 1;
    bool neg = (u >> (mbits + ebits)) & 1;
    int e = (int)((u >> mbits) & (uint64_t)emax);
    uint64_t m = u & ((1ull << mbits) - 1);
    double v;
    if (e == emax)
        v = m ? NAN : INFINITY;
    else if (e == 0)
        v = ldexp((double)m, 1 - bias - mbits);
    else
        v = ldexp((double)(m | (1ull << mbits)), e - bias - mbits);
    return neg ? -v : v;
}

static bool is_nan_bits(int f, uint64_t u) {
    int mbits = MB[f], ebits = EB[f];
    uint64_t emax = (1ull << ebits) - 1;
    return ((u >> mbits) & emax) == emax && (u & ((1ull << mbits) - 1)) != 0;
}

static uint64_t rand_bits(int f) {
    int w = f == 3 ? 64 : f == 2 ? 32 : 16;
    return w == 64 ? rnd() : rnd() & ((1ull << w) - 1);
}

/* A value (a double, rounded to format f by the caller where it is a
 * constant), often special. */
static double special_val(int f) {
    double maxv = f == 0 ? 65504.0 : f == 1 ? 0x1.fep127 : f == 2 ? 0x1.fffffep127 : 0x1.fffffffffffffp1023;
    double dmin = ldexp(1.0, f == 0 ? -24 : f == 1 ? -133 : f == 2 ? -149 : -1074);
    double nmin = ldexp(1.0, f == 0 ? -14 : f == 3 ? -1022 : -126);
    double s = pick(2) ? 1.0 : -1.0;
    switch (pick(30)) {
    case 0: return 0.0;
    case 1: return -0.0;
    case 2: return s * INFINITY;
    case 3: return NAN;
    case 4: return s * dmin;
    case 5: return s * maxv;
    case 6: return s * nmin;
    case 7: return s * (nmin - dmin); /* the largest subnormal */
    case 8: return 1.0;
    case 9: return -1.0;
    case 10: return s * 0.5;
    case 11: return s * 2.0;
    /* at and near the limits of float -> int casts */
    case 12: return s * (127.0 + 0.5 * pick(4));
    case 13: return s * (255.0 + 0.5 * pick(4));
    case 14: return -128.0 - 0.5 * pick(4);
    case 15: return s * (0x1p31 + (double)(pick(5) - 2) * (f == 3 ? 0.5 : 128.0));
    case 16: return s * (0x1p63 + (double)(pick(5) - 2) * (f == 3 ? 1024.0 : 0x1p40));
    case 17: return s * (0x1p24 + pick(5) - 2);
    case 18: return s * (0x1p11 + pick(5) - 2);
    case 19: return s * (0x1p8 + pick(5) - 2);
    case 20: return -NAN;
    case 21: return s * (pick(2) ? 0.1 : 1e30); /* not exact in most dtypes */
    case 22: return s * (nmin * (1 + pick(3)) / 4); /* subnormals */
    case 23: return (double)(pick(33) - 16) / 4;
    case 24: return s * ldexp(1.0 + (double)pick(8) / 8, pick(40) - 20);
    default: return from_bits(f, rand_bits(f));
    }
}

/* ------------------------------------------------------------ expressions */

/* The shape of the case: L lanes (a vector store Y[0:4] = e) or, with IV
 * set, a loop `for i in range(4): Y[i] = e` whose body may use i. */
static int L = 1;
static const tir_expr *IV;

static tir_dtype VT(tir_dtype t) { return tir_dtype_with_lanes(t, L); }
static const tir_expr *bc(const tir_expr *e) { return L > 1 ? tir_broadcast_new(C, e, L) : e; }

static const tir_expr *fcst(tir_dtype t) {
    double v = special_val(fidx(t));
    /* a constant holds a double; most are rounded to the dtype, some not */
    if (pick(3)) v = from_bits(fidx(t), to_bits(fidx(t), v));
    return bc(tir_float(C, t, v));
}

static int64_t int_special(tir_dtype t) {
    bool u = t.code == TIR_TYPE_UINT;
    int64_t mn = u ? 0 : t.bits == 8 ? INT8_MIN : t.bits == 32 ? INT32_MIN : INT64_MIN;
    int64_t mx = u ? 255 : t.bits == 8 ? INT8_MAX : t.bits == 32 ? INT32_MAX : INT64_MAX;
    switch (pick(10)) {
    case 0: return mn;
    case 1: return mx;
    case 2: return mn + pick(3);
    case 3: return mx - pick(3);
    case 4: return 0;
    case 5: return u ? 1 : -1;
    /* in uint64: a 64-bit draw plus INT64_MIN wraps (as intended) */
    case 6: return (int64_t)((rnd() >> (64 - t.bits)) + (uint64_t)mn);
    case 7: return t.bits == 64 ? (int64_t)(0x1p53) + pick(5) - 2 : pick(20) - (u ? 0 : 10);
    case 8: return t.bits >= 32 ? (INT64_C(1) << 24) + pick(5) - 2 : pick(7);
    default: return pick(20) - (u ? 0 : 10);
    }
}

static const tir_expr *gen(tir_dtype t, int d);
static const tir_expr *gen_int(tir_dtype t, int d);
static const tir_expr *gen_bool(int d);

static const tir_expr *load(int b) {
    const tir_expr *idx = tir_int(C, TIR_I32, pick(NE));
    if (L > 1)
        idx = pick(2) ? tir_ramp_new(C, tir_i32(C, 0), tir_i32(C, 1), L)
                      : tir_ramp_new(C, tir_i32(C, L - 1), tir_i32(C, -1), L);
    else if (IV && pick(3))
        idx = pick(2) ? IV : tir_sub(C, tir_i32(C, NE - 1), IV);
    return tir_load(C, B[b], 1, &idx);
}

/* A float leaf: a constant, a load of t, or a cast of a load of another
 * float or an int buffer. */
static bool g_consts; /* a case of mostly constants: whole subtrees fold */

static const tir_expr *leaf(tir_dtype t) {
    int k = pick(8);
    if (k < 3 || (g_consts && pick(8))) return fcst(t);
    if (k < 6) return load(fidx(t));
    int b = k == 6 ? pick(4) : 4 + pick(4);
    const tir_expr *l = load(b);
    return tir_dtype_eq(DT[b], t) ? l : tir_cast_new(C, VT(t), l);
}

/* Expressions the simplifier might take for identities. */
static const tir_expr *ident(tir_dtype t, int d) {
    const tir_expr *a = gen(t, d - 1);
    const tir_expr *z = bc(tir_float(C, t, pick(2) ? 0.0 : -0.0));
    const tir_expr *one = bc(tir_float(C, t, pick(2) ? 1.0 : -1.0));
    switch (pick(12)) {
    case 0: return tir_sub(C, a, a);
    case 1: return pick(2) ? tir_add(C, a, z) : tir_add(C, z, a);
    case 2: return pick(2) ? tir_sub(C, a, z) : tir_sub(C, z, a);
    case 3: return pick(2) ? tir_mul(C, a, z) : tir_mul(C, z, a);
    case 4: return pick(2) ? tir_mul(C, a, one) : tir_mul(C, one, a);
    case 5: return tir_binop_new(C, TIR_KIND_DIV, a, one);
    case 6: return tir_sub(C, z, tir_sub(C, z, a));
    case 7: return tir_binop_new(C, pick(2) ? TIR_KIND_MIN : TIR_KIND_MAX, a, a);
    case 8: return tir_binop_new(C, TIR_KIND_DIV, a, a);
    case 9: return tir_select_new(C, gen_bool(d - 1), a, a);
    case 10: return tir_cast_new(C, VT(t), tir_cast_new(C, VT(FT(pick(4))), a));
    default: return tir_binop_new(C, TIR_KIND_DIV, a, bc(tir_float(C, t, pick(2) ? 2.0 : 0.5)));
    }
}

static const tir_expr *gen(tir_dtype t, int d) {
    if (d <= 0 || pick(6) == 0) return leaf(t);
    if (L > 1 && pick(8) == 0) { /* a scalar expression broadcast */
        L = 1;
        const tir_expr *e = gen(t, d - 1);
        L = 4;
        return bc(e);
    }
    const tir_expr *a = gen(t, d - 1);
    const tir_expr *b = pick(2) ? fcst(t) : gen(t, d - 1);
    if (pick(2)) { /* constants on both sides fold */
        const tir_expr *s = a;
        a = b, b = s;
    }
    switch (pick(24)) {
    case 0:
    case 1: return tir_add(C, a, b);
    case 2:
    case 3: return tir_sub(C, a, b);
    case 4:
    case 5: return tir_mul(C, a, b);
    case 6: return tir_binop_new(C, TIR_KIND_DIV, a, b);
    case 7: return tir_binop_new(C, TIR_KIND_MOD, a, b);
    case 8: return tir_binop_new(C, TIR_KIND_FLOORDIV, a, b);
    case 9: return tir_binop_new(C, TIR_KIND_FLOORMOD, a, b);
    case 10: return tir_binop_new(C, TIR_KIND_MIN, a, b);
    case 11: return tir_binop_new(C, TIR_KIND_MAX, a, b);
    case 12:
    case 13: return tir_select_new(C, gen_bool(d - 1), a, b);
    case 14: { /* a cast from another float dtype */
        tir_dtype u = FT(pick(4));
        return tir_dtype_eq(u, t) ? a : tir_cast_new(C, VT(t), gen(u, d - 1));
    }
    case 15: return tir_cast_new(C, VT(t), gen_int(IT(pick(4)), d - 1));
    case 16: return tir_cast_new(C, VT(t), gen_bool(d - 1));
    case 17:
    case 18: return ident(t, d);
    case 19: {
        const tir_expr *args[3] = {a, b, pick(2) ? fcst(t) : gen(t, d - 1)};
        return tir_call_new(C, VT(t), TIR_INTRIN_FMA, 3, args);
    }
    case 20: {
        static const tir_intrin ops[] = {TIR_INTRIN_FABS, TIR_INTRIN_SQRT};
        return tir_call_new(C, VT(t), ops[pick(2)], 1, &a);
    }
    case 21: { /* a let of t, used in its body */
        const tir_var *v = tir_var_new(C, LVN[fidx(t)], VT(t)); /* each let its own */
        const tir_expr *ve = (const tir_expr *)v;
        const tir_expr *body = pick(2) ? tir_add(C, ve, b) : tir_mul(C, b, ve);
        if (pick(2)) body = tir_select_new(C, tir_lt(C, ve, b), ve, body);
        return tir_let_new(C, v, pick(2) ? fcst(t) : a, body);
    }
    default: return tir_add(C, tir_mul(C, a, b), pick(2) ? fcst(t) : gen(t, d - 1));
    }
}

static const tir_expr *int_cst(tir_dtype t) { return bc(tir_int(C, t, int_special(t))); }

/* An integer expression: mostly casts of float expressions. */
static const tir_expr *gen_int(tir_dtype t, int d) {
    int k = pick(d > 0 ? 10 : 3);
    if (g_consts && k == 1 && pick(4)) k = 0;
    switch (k) {
    case 0: return int_cst(t);
    case 1: {
        int b = 4 + pick(4);
        const tir_expr *l = load(b);
        if (IV && L == 1 && pick(2)) /* the loop's index: i * k + c, in range */
            l = tir_add(C, tir_mul(C, IV, tir_i32(C, pick(9) - 4)), tir_i32(C, pick(41) - 20));
        return tir_dtype_eq(l->dtype, t) ? l : tir_cast_new(C, VT(t), l);
    }
    case 2:
    case 3:
    case 4:
    case 5: return tir_cast_new(C, VT(t), d > 0 ? gen(FT(pick(4)), d - 1) : leaf(FT(pick(4))));
    case 6: {
        /* a sum of no data is index arithmetic, whose overflow is undefined
           (docs/lowered-ir.md: int32(T.bfloat16(-1e24)) + -5 may become
           anything), so only data gets a constant added */
        const tir_expr *a = gen_int(t, d - 1);
        return pick(2) || !tir_reads_buffer(a) ? tir_sub(C, a, a) : tir_add(C, a, int_cst(t));
    }
    case 7: return tir_binop_new(C, pick(2) ? TIR_KIND_MIN : TIR_KIND_MAX, gen_int(t, d - 1),
                                 pick(2) ? int_cst(t) : gen_int(t, d - 1));
    case 8: return tir_select_new(C, gen_bool(d - 1), gen_int(t, d - 1), gen_int(t, d - 1));
    default: return tir_cast_new(C, VT(t), gen_bool(d - 1));
    }
}

static const tir_expr *gen_bool(int d) {
    int k = pick(d > 0 ? 11 : 7);
    static const tir_kind ks[] = {TIR_KIND_LT, TIR_KIND_LE, TIR_KIND_EQ,
                                  TIR_KIND_NE, TIR_KIND_GT, TIR_KIND_GE};
    if (k < 6) {
        tir_dtype t = FT(pick(4));
        const tir_expr *a = gen(t, d - 1);
        const tir_expr *b = pick(4) == 0 ? a : pick(2) ? fcst(t) : gen(t, d - 1);
        return tir_binop_new(C, ks[k], a, b);
    }
    if (k == 6) {
        tir_dtype t = IT(pick(4));
        return tir_binop_new(C, ks[pick(6)], gen_int(t, d - 1), int_cst(t));
    }
    if (k == 7 || k == 8) return tir_not_new(C, gen_bool(d - 1));
    if (k == 9) return tir_and(C, gen_bool(d - 1), gen_bool(d - 1));
    return tir_or(C, gen_bool(d - 1), gen_bool(d - 1));
}

/* ------------------------------------------------------------------ running */

static uint16_t in16[NE], inb16[NE];
static uint32_t in32f[NE];
static uint64_t in64f[NE];
static int32_t ini32[NE];
static int64_t ini64[NE];
static int8_t ini8[NE];
static uint8_t inu8[NE];

static uint64_t special_bits(int f) {
    if (pick(4) == 0) return rand_bits(f);
    return to_bits(f, special_val(f));
}

static void random_inputs(void) {
    for (int i = 0; i < NE; i++) {
        in16[i] = (uint16_t)special_bits(0);
        inb16[i] = (uint16_t)special_bits(1);
        in32f[i] = (uint32_t)special_bits(2);
        in64f[i] = special_bits(3);
        ini32[i] = (int32_t)int_special(IT(0));
        ini64[i] = int_special(IT(1));
        ini8[i] = (int8_t)int_special(IT(2));
        inu8[i] = (uint8_t)int_special(IT(3));
    }
}

static const tir_prim_func *as_func(const tir_buffer *y, const tir_stmt *body) {
    const tir_buffer *bufs[NB + 1];
    const tir_var *params[NB + 1];
    for (int i = 0; i < NB; i++) bufs[i] = B[i];
    bufs[NB] = y;
    for (int i = 0; i <= NB; i++) params[i] = tir_var_new(C, bufs[i]->name, TIR_HANDLE);
    return tir_prim_func_new(C, "f", NB + 1, params, bufs, body, 0, NULL);
}

/* Y[0] = e, Y[i] = e in the loop, or Y[0:4] = e for a vector. */
static const tir_stmt *store(const tir_buffer *y, const tir_expr *e) {
    const tir_expr *idx = tir_int(C, TIR_I32, 0);
    if (L > 1) idx = tir_ramp_new(C, idx, tir_i32(C, 1), L);
    else if (IV) idx = IV;
    return tir_store(C, y, e, 1, &idx);
}

/* f in the interpreter: the bits of Y's NE elements (t's width), or false
 * when it fails. */
static bool run(const tir_prim_func *f, tir_dtype t, uint64_t *out) {
    unsigned char y[NE * 8];
    memset(y, 0x5a, sizeof y); /* what is not written stays */
    tir_arg args[NB + 1] = {{in16, 0},  {inb16, 0}, {in32f, 0}, {in64f, 0}, {ini32, 0},
                            {ini64, 0}, {ini8, 0},  {inu8, 0},  {y, 0}};
    if (tir_interp_run(C, f, NB + 1, args, NULL) != TIR_OK) return false;
    int w = t.bits / 8;
    for (int k = 0; k < NE; k++) {
        out[k] = 0;
        memcpy(&out[k], y + k * w, (size_t)w); /* little-endian */
    }
    return true;
}

static bool same(tir_dtype t, uint64_t p, uint64_t q) {
    if (p == q) return true;
    int f = fidx(t);
    return f >= 0 && is_nan_bits(f, p) && is_nan_bits(f, q);
}

static const char *show(tir_dtype t, uint64_t v) {
    static char buf[4][64];
    static int k;
    char *s = buf[k++ & 3];
    int f = fidx(t);
    if (f >= 0)
        snprintf(s, 64, "%a (0x%llx)", from_bits(f, v), (unsigned long long)v);
    else
        snprintf(s, 64, "%lld (0x%llx)", (long long)v, (unsigned long long)v);
    return s;
}

static void print_inputs(void) {
    printf("#   F16 =");
    for (int i = 0; i < NE; i++) printf(" %a", from_bits(0, in16[i]));
    printf("; BF16 =");
    for (int i = 0; i < NE; i++) printf(" %a", from_bits(1, inb16[i]));
    printf("; F32 =");
    for (int i = 0; i < NE; i++) printf(" %a", from_bits(2, in32f[i]));
    printf("; F64 =");
    for (int i = 0; i < NE; i++) printf(" %a", from_bits(3, in64f[i]));
    printf("\n#   X =");
    for (int i = 0; i < NE; i++) printf(" %d", ini32[i]);
    printf("; L =");
    for (int i = 0; i < NE; i++) printf(" %lld", (long long)ini64[i]);
    printf("; A =");
    for (int i = 0; i < NE; i++) printf(" %d", ini8[i]);
    printf("; U =");
    for (int i = 0; i < NE; i++) printf(" %u", inu8[i]);
    printf("\n");
}

static void new_ctx(void) {
    if (C) tir_ctx_destroy(C);
    C = tir_ctx_create();
    static const char *const names[NB] = {"H", "G", "S", "D", "X", "L", "A", "U"};
    const int64_t ne = NE;
    for (int i = 0; i < NB; i++)
        B[i] = tir_buffer_simple(C, names[i], DT[i], 1, &ne, TIR_SCOPE_GLOBAL);
}

static void test_simplify_float(void **st) {
    (void)st;
    DT[0] = TIR_F16, DT[1] = TIR_BF16, DT[2] = TIR_F32, DT[3] = TIR_F64;
    DT[4] = TIR_I32, DT[5] = TIR_I64, DT[6] = TIR_I8, DT[7] = TIR_U8;
    long changed = 0, evals = 0, failures = 0, nvec = 0, nloop = 0;
    for (long c = 0; c < g_cases && failures < 5; c++) {
        if (c % 200 == 0) new_ctx(); /* the arena grows with every case */
        fuzz_seed_case(g_seed, c);
        /* mostly a float result; now and then an int one of floats */
        tir_dtype t = pick(5) ? FT(pick(4)) : IT(pick(4));
        int shape = pick(8); /* 0: a vector of 4 lanes, 1: a loop, else scalar */
        g_consts = pick(4) == 0;
        L = shape == 0 ? NE : 1;
        const tir_var *iv = shape == 1 ? tir_var_new(C, "i", TIR_I32) : NULL;
        IV = iv ? (const tir_expr *)iv : NULL;
        nvec += shape == 0, nloop += shape == 1;
        const int64_t ne = NE;
        const tir_buffer *y = tir_buffer_simple(C, "Y", t, 1, &ne, TIR_SCOPE_GLOBAL);
        int depth = 1 + pick(4);
        const tir_expr *e = is_flt(t) ? gen(t, depth) : gen_int(t, depth);
        const tir_stmt *body, *sbody;
        const char *how;
        if (g_trace) /* a case that crashes the simplifier shows itself */
            fprintf(stderr, "# case %ld: %s\n", c, tir_print(C, e));
        tir_analyzer *a = tir_analyzer_create(C);
        if (iv || pick(3) == 0) {
            body = store(y, e);
            if (pick(2)) {
                const tir_expr *e2 = is_flt(t) ? gen(t, depth) : gen_int(t, depth);
                /* the condition is a scalar: a vector case takes lane 0's */
                const tir_expr *cond = gen_bool(depth);
                if (L > 1) {
                    L = 1;
                    cond = gen_bool(depth);
                    L = NE;
                }
                body = tir_if_new(C, cond, body, store(y, e2));
            }
            if (iv)
                body = tir_for_new(C, iv, tir_i32(C, 0), tir_i32(C, NE), TIR_FOR_SERIAL, NULL, 0,
                                   NULL, body);
            sbody = tir_analyzer_simplify_stmt(a, body);
            how = "tir_analyzer_simplify_stmt";
        } else {
            const tir_expr *s = tir_analyzer_simplify(a, e);
            assert_true(tir_dtype_eq(s->dtype, e->dtype));
            body = store(y, e);
            sbody = s == e ? body : store(y, s);
            how = "tir_analyzer_simplify";
        }
        tir_analyzer_destroy(a);
        if (sbody == body) continue;
        changed++;
        const tir_prim_func *fe = as_func(y, body), *fs = as_func(y, sbody);
        for (int it = 0; it < 40; it++) {
            random_inputs();
            uint64_t ye[NE], ys[NE];
            if (!run(fe, t, ye)) continue;
            evals++;
            bool ok = run(fs, t, ys);
            int k = 0;
            while (ok && k < NE && same(t, ye[k], ys[k])) k++;
            if (ok && k == NE) continue;
            failures++;
            printf("# FAILURE: MINITIR_FUZZ_SEED=%llu case %ld (%s)\n%s\n# simplified to\n%s\n",
                   (unsigned long long)g_seed, c, how, tir_print(C, body), tir_print(C, sbody));
            print_inputs();
            printf("#   Y[%d]: %s, simplified %s%s\n", k, show(t, ye[k % NE]),
                   ok ? "" : "failing, ", ok ? show(t, ys[k]) : "-");
            break;
        }
    }
    tir_ctx_destroy(C);
    C = NULL;
    L = 1, IV = NULL;
    printf("# simplify float fuzz seed %llu: %ld cases (%ld vectors, %ld loops), %ld simplified, "
           "%ld evaluations, %ld failures\n",
           (unsigned long long)g_seed, g_cases, nvec, nloop, changed, evals, failures);
    assert_int_equal(failures, 0);
    /* the run must exercise the simplifier, or it tests little */
    assert_true(changed > g_cases / 4 || g_cases < 100);
}

int main(int argc, char **argv) {
    fuzz_args(argc, argv, &g_cases, &g_seed);
    g_trace = getenv("MINITIR_FUZZ_TRACE") != NULL;
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_simplify_float)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
