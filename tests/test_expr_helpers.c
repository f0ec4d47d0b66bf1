/* Tests of the binary expression helpers of minitir/ir.h (tir_add ..
 * tir_or): each builds its node kind with the operands in order and the
 * documented dtype, and the division helpers round as documented (tir_div
 * and tir_mod floor, as TVM's defaults; tir_truncdiv/tir_truncmod toward
 * zero), checked by constant folding over operands of every sign. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "minitir/ir.h"

typedef const tir_expr *(*binop_fn)(tir_ctx *, const tir_expr *, const tir_expr *);

static const struct {
    binop_fn fn;
    tir_kind kind;
    bool cmp, logic;
} helpers[] = {
    {tir_add, TIR_KIND_ADD, false, false},
    {tir_sub, TIR_KIND_SUB, false, false},
    {tir_mul, TIR_KIND_MUL, false, false},
    {tir_floordiv, TIR_KIND_FLOORDIV, false, false},
    {tir_floormod, TIR_KIND_FLOORMOD, false, false},
    {tir_div, TIR_KIND_FLOORDIV, false, false},
    {tir_mod, TIR_KIND_FLOORMOD, false, false},
    {tir_truncdiv, TIR_KIND_DIV, false, false},
    {tir_truncmod, TIR_KIND_MOD, false, false},
    {tir_min, TIR_KIND_MIN, false, false},
    {tir_max, TIR_KIND_MAX, false, false},
    {tir_eq, TIR_KIND_EQ, true, false},
    {tir_ne, TIR_KIND_NE, true, false},
    {tir_lt, TIR_KIND_LT, true, false},
    {tir_le, TIR_KIND_LE, true, false},
    {tir_gt, TIR_KIND_GT, true, false},
    {tir_ge, TIR_KIND_GE, true, false},
    {tir_and, TIR_KIND_AND, false, true},
    {tir_or, TIR_KIND_OR, false, true},
};

static int setup(void **st) {
    *st = tir_ctx_create();
    return *st ? 0 : -1;
}
static int teardown(void **st) {
    tir_ctx_destroy(*st);
    return 0;
}

static void test_kinds_and_dtypes(void **state) {
    tir_ctx *ctx = *state;
    const tir_expr *x = &tir_var_new(ctx, "x", TIR_I32)->base;
    const tir_expr *y = &tir_var_new(ctx, "y", TIR_I32)->base;
    const tir_expr *p = &tir_var_new(ctx, "p", TIR_BOOL)->base;
    const tir_expr *q = &tir_var_new(ctx, "q", TIR_BOOL)->base;
    for (size_t i = 0; i < sizeof helpers / sizeof *helpers; i++) {
        const tir_expr *a = helpers[i].logic ? p : x, *b = helpers[i].logic ? q : y;
        const tir_expr *e = helpers[i].fn(ctx, a, b);
        assert_int_equal(e->kind, helpers[i].kind);
        const tir_binop *n = tir_as_tir_binop(e);
        assert_non_null(n);
        assert_ptr_equal(n->a, a);
        assert_ptr_equal(n->b, b);
        bool want_bool = helpers[i].cmp || helpers[i].logic;
        assert_true(tir_dtype_eq(e->dtype, want_bool ? TIR_BOOL : TIR_I32));
    }
}

/* Folds f(a, b) over int32 constants. */
static int64_t fold(tir_ctx *ctx, binop_fn f, int64_t a, int64_t b) {
    int64_t v = 0;
    const tir_expr *e = f(ctx, tir_i32(ctx, a), tir_i32(ctx, b));
    assert_true(tir_expr_const_int(tir_simplify(ctx, e), &v));
    return v;
}

static void test_division_rounding(void **state) {
    tir_ctx *ctx = *state;
    static const struct {
        int64_t a, b, div, mod, tdiv, tmod;
    } cases[] = {
        {7, 2, 3, 1, 3, 1},
        {-7, 2, -4, 1, -3, -1},
        {7, -2, -4, -1, -3, 1},
        {-7, -2, 3, -1, 3, -1},
        {6, 3, 2, 0, 2, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        assert_int_equal(fold(ctx, tir_div, cases[i].a, cases[i].b), cases[i].div);
        assert_int_equal(fold(ctx, tir_mod, cases[i].a, cases[i].b), cases[i].mod);
        assert_int_equal(fold(ctx, tir_truncdiv, cases[i].a, cases[i].b), cases[i].tdiv);
        assert_int_equal(fold(ctx, tir_truncmod, cases[i].a, cases[i].b), cases[i].tmod);
    }
}

static void test_comparisons_fold(void **state) {
    tir_ctx *ctx = *state;
    /* (a, b) in {1, 2}^2 against C's operators */
    for (int64_t a = 1; a <= 2; a++)
        for (int64_t b = 1; b <= 2; b++) {
            assert_int_equal(fold(ctx, tir_eq, a, b), a == b);
            assert_int_equal(fold(ctx, tir_ne, a, b), a != b);
            assert_int_equal(fold(ctx, tir_lt, a, b), a < b);
            assert_int_equal(fold(ctx, tir_le, a, b), a <= b);
            assert_int_equal(fold(ctx, tir_gt, a, b), a > b);
            assert_int_equal(fold(ctx, tir_ge, a, b), a >= b);
        }
    for (int a = 0; a <= 1; a++)
        for (int b = 0; b <= 1; b++) {
            int64_t v = -1;
            assert_true(tir_expr_const_int(
                tir_simplify(ctx, tir_or(ctx, tir_bool(ctx, a), tir_bool(ctx, b))), &v));
            assert_int_equal(v, a || b);
        }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_kinds_and_dtypes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_division_rounding, setup, teardown),
        cmocka_unit_test_setup_teardown(test_comparisons_fold, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
