/* test_simplify_data_fuzz.c: the simplifier against the interpreter on
 * integer expressions of user data.
 *
 * Stored values wrap (the interpreter's arithmetic, and codegen's for
 * stored values); only index arithmetic may assume that signed sums do not
 * overflow.  So a simplified expression over loaded data must give what
 * the expression gives, for every input.  Each case draws a random integer
 * expression of int8, uint8, int32 or int64 over loads of four buffers of
 * those dtypes (casts, + - *, the four divisions and remainders by
 * constants (extremes included) and sometimes by expressions, min/max,
 * selects of comparisons, and/or/not, constants at and near the dtypes'
 * ends), simplifies it (tir_analyzer_simplify), and when that changed it,
 * runs both as `Y[0] = e` in the interpreter on 60 random input sets drawn
 * near the same extremes; a case whose expression itself fails (a
 * division by zero) is skipped.  A review helper's tester found five
 * unsound rules this way (docs/reliability.md).
 * MINITIR_FUZZ_CASES=N (or argv[1]) sets the number of cases (default
 * 20,000: about a second), MINITIR_FUZZ_SEED the seed.
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

static long g_cases = 20000;
static uint64_t g_seed = 20261205;

static tir_ctx *C;
static tir_dtype DT[4];
static const tir_buffer *B[4];

/* v as a value of t (wrapped). */
static int64_t norm(tir_dtype t, int64_t v) {
    if (t.code == TIR_TYPE_UINT) return (uint8_t)v;
    if (t.bits == 8) return (int8_t)v;
    if (t.bits == 32) return (int32_t)v;
    return v;
}

/* A value of t, often at or near its ends. */
static int64_t special(tir_dtype t) {
    bool u = t.code == TIR_TYPE_UINT;
    int64_t mn = u ? 0 : t.bits == 8 ? INT8_MIN : t.bits == 32 ? INT32_MIN : INT64_MIN;
    int64_t mx = u ? 255 : t.bits == 8 ? INT8_MAX : t.bits == 32 ? INT32_MAX : INT64_MAX;
    switch (pick(16)) {
    case 0: return mn;
    case 1: return mx;
    case 2: return mn + 1;
    case 3: return mx - 1;
    case 4: return 0;
    case 5: return 1;
    case 6: return u ? 2 : -1;
    case 7: return mn / 2;
    case 8: return mx / 2 + 1;
    case 9: return u ? 128 : -2;
    case 10: return mx - pick(4);
    case 11: return mn + pick(4);
    default: return norm(t, pick(3) == 0 ? (int64_t)rnd() : pick(20) - 10);
    }
}

static const tir_expr *cst(tir_dtype t) { return tir_int(C, t, special(t)); }
static const tir_expr *gen(tir_dtype t, int d);

static const tir_expr *gen_bool(int d) {
    int k = pick(d > 0 ? 9 : 6);
    if (k < 6) {
        static const tir_kind ks[] = {TIR_KIND_LT, TIR_KIND_LE, TIR_KIND_EQ,
                                      TIR_KIND_NE, TIR_KIND_GT, TIR_KIND_GE};
        tir_dtype t = DT[pick(4)];
        const tir_expr *a = gen(t, d - 1), *b = pick(3) == 0 ? cst(t) : gen(t, d - 1);
        return tir_binop_new(C, ks[k], a, b);
    }
    if (k == 6) return tir_not_new(C, gen_bool(d - 1));
    if (k == 7) return tir_and(C, gen_bool(d - 1), gen_bool(d - 1));
    return tir_or(C, gen_bool(d - 1), gen_bool(d - 1));
}

static const tir_expr *leaf(tir_dtype t) {
    if (pick(3) == 0) return cst(t);
    int b = pick(4);
    const tir_expr *idx = tir_int(C, TIR_I32, pick(4));
    const tir_expr *l = tir_load(C, B[b], 1, &idx);
    return tir_dtype_eq(DT[b], t) ? l : tir_cast_new(C, t, l);
}

/* A nonzero divisor: a constant (an extreme, or a small one) or, now and
 * then, an expression (a case dividing by zero is skipped). */
static const tir_expr *divisor(tir_dtype t, int d) {
    static const int64_t small[] = {2, 3, 4, 8, -2, -4, 16, 7, -1, 5, 6, 64};
    if (pick(6) == 0) return gen(t, d - 1);
    int64_t v = norm(t, pick(2) ? special(t) : small[pick(12)]);
    return tir_int(C, t, v ? v : 3);
}

static const tir_expr *gen(tir_dtype t, int d) {
    if (d <= 0 || pick(5) == 0) return leaf(t);
    const tir_expr *a = gen(t, d - 1);
    const tir_expr *b = pick(2) ? cst(t) : gen(t, d - 1);
    switch (pick(14)) {
    case 0:
    case 1: return tir_add(C, a, b);
    case 2:
    case 3: return pick(4) == 0 ? tir_sub(C, cst(t), a) : tir_sub(C, a, b);
    case 4: return tir_mul(C, a, b);
    case 5:
    case 6: {
        static const tir_kind ks[] = {TIR_KIND_FLOORDIV, TIR_KIND_FLOORMOD, TIR_KIND_DIV,
                                      TIR_KIND_MOD};
        return tir_binop_new(C, ks[pick(4)], a, divisor(t, d));
    }
    case 7: return tir_binop_new(C, TIR_KIND_MIN, a, b);
    case 8: return tir_binop_new(C, TIR_KIND_MAX, a, b);
    case 9:
    case 10: return tir_select_new(C, gen_bool(d - 1), a, gen(t, d - 1));
    case 11: {
        tir_dtype u = DT[pick(4)];
        return tir_dtype_eq(u, t) ? a : tir_cast_new(C, t, gen(u, d - 1));
    }
    default: return tir_add(C, a, gen(t, d - 1));
    }
}

static int8_t in8[4];
static uint8_t inu[4];
static int32_t in32[4];
static int64_t in64[4];

static void random_inputs(void) {
    for (int i = 0; i < 4; i++) {
        in8[i] = (int8_t)special(DT[0]);
        inu[i] = (uint8_t)special(DT[1]);
        in32[i] = (int32_t)special(DT[2]);
        in64[i] = special(DT[3]);
    }
}

/* `Y[0] = e` as a function of the four buffers and Y. */
static const tir_prim_func *as_func(const tir_buffer *y, const tir_expr *e) {
    const tir_buffer *bufs[5] = {B[0], B[1], B[2], B[3], y};
    const tir_var *params[5];
    for (int i = 0; i < 5; i++) params[i] = tir_var_new(C, bufs[i]->name, TIR_HANDLE);
    const tir_expr *zero = tir_int(C, TIR_I32, 0);
    return tir_prim_func_new(C, "f", 5, params, bufs, tir_store(C, y, e, 1, &zero), 0, NULL);
}

/* f in the interpreter: *out, or false when it fails. */
static bool run(const tir_prim_func *f, tir_dtype t, int64_t *out) {
    int64_t y = 0;
    tir_arg args[5] = {{in8, 0}, {inu, 0}, {in32, 0}, {in64, 0}, {&y, 0}};
    if (tir_interp_run(C, f, 5, args, NULL) != TIR_OK) return false;
    *out = norm(t, y);
    return true;
}

static void new_ctx(void) {
    if (C) tir_ctx_destroy(C);
    C = tir_ctx_create();
    static const char *const names[4] = {"A", "U", "X", "L"};
    const int64_t four = 4;
    for (int i = 0; i < 4; i++) B[i] = tir_buffer_simple(C, names[i], DT[i], 1, &four,
                                                         TIR_SCOPE_GLOBAL);
}

static void test_simplify_data(void **st) {
    (void)st;
    DT[0] = TIR_I8, DT[1] = TIR_U8, DT[2] = TIR_I32, DT[3] = TIR_I64;
    long changed = 0, evals = 0, failures = 0;
    for (long c = 0; c < g_cases && failures < 5; c++) {
        if (c % 200 == 0) new_ctx(); /* the arena grows with every case */
        fuzz_seed_case(g_seed, c);
        tir_dtype t = DT[pick(4)];
        const int64_t one = 1;
        const tir_buffer *y = tir_buffer_simple(C, "Y", t, 1, &one, TIR_SCOPE_GLOBAL);
        const tir_expr *e = gen(t, 1 + pick(4));
        tir_analyzer *a = tir_analyzer_create(C);
        const tir_expr *s = tir_analyzer_simplify(a, e);
        tir_analyzer_destroy(a);
        if (s == e) continue;
        changed++;
        assert_true(tir_dtype_eq(s->dtype, e->dtype));
        const tir_prim_func *fe = as_func(y, e), *fs = as_func(y, s);
        for (int it = 0; it < 60; it++) {
            random_inputs();
            int64_t ye, ys;
            if (!run(fe, t, &ye)) continue;
            evals++;
            bool ok = run(fs, t, &ys);
            if (ok && ye == ys) continue;
            failures++;
            printf("# FAILURE: MINITIR_FUZZ_SEED=%llu case %ld\n#   %s\n# simplified to\n#   %s\n"
                   "#   A = [%d %d %d %d], U = [%u %u %u %u], X = [%d %d %d %d], L = [%lld %lld "
                   "%lld %lld]: %lld, simplified %s%lld\n",
                   (unsigned long long)g_seed, c, tir_print(C, e), tir_print(C, s), in8[0], in8[1],
                   in8[2], in8[3], inu[0], inu[1], inu[2], inu[3], in32[0], in32[1], in32[2],
                   in32[3], (long long)in64[0], (long long)in64[1], (long long)in64[2],
                   (long long)in64[3], (long long)ye, ok ? "" : "failing, ", ok ? (long long)ys : 0);
            break;
        }
    }
    tir_ctx_destroy(C);
    C = NULL;
    printf("# simplify data fuzz seed %llu: %ld cases, %ld simplified, %ld evaluations, %ld "
           "failures\n",
           (unsigned long long)g_seed, g_cases, changed, evals, failures);
    assert_int_equal(failures, 0);
    /* the run must exercise the simplifier, or it tests little */
    assert_true(changed > g_cases / 4 || g_cases < 100);
}

int main(int argc, char **argv) {
    fuzz_args(argc, argv, &g_cases, &g_seed);
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_simplify_data)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
