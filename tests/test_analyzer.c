/* Tests of the analyzer: proofs (provable and not provable facts),
 * constant bounds, symbolic relaxation (tir_analyzer_relax), binding
 * semantics and statement simplification. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "arith_test_util.h"

static const tir_expr *x, *y, *i, *j, *n, *b, *x64;

static int setup(void **st) {
    (void)st;
    C = tir_ctx_create();
    if (!C) return -1;
    npinned = 0;
    const tir_var *vs[] = {
        tir_var_new(C, "x", TIR_I32), tir_var_new(C, "y", TIR_I32), tir_var_new(C, "i", TIR_I32),
        tir_var_new(C, "j", TIR_I32), tir_var_new(C, "n", TIR_I32), tir_var_new(C, "b", TIR_BOOL),
        tir_var_new(C, "x64", TIR_I64),
    };
    const tir_expr **dst[] = {&x, &y, &i, &j, &n, &b, &x64};
    for (size_t q = 0; q < sizeof vs / sizeof vs[0]; q++) {
        *dst[q] = V(vs[q]);
        pin(vs[q]);
    }
    return 0;
}

static int teardown(void **st) {
    (void)st;
    tir_ctx_destroy(C);
    return 0;
}

#define VAR(e) tir_as_tir_var(e)

/* The range sets rows run under. */
enum { R_NONE, R_IJ, R_X, R_SYM, R_NEST, R_COUNT };
static const char *const range_names[] = {
    "no ranges", "i, j in [0, 32)", "x in [-8, 8)", "n in [1, 1000), i in [0, n), j in [0, 4)",
    "i in [0, 8), j in [i*4, i*4 + 4)"};

static tir_analyzer *analyzer_for(int r) {
    tir_analyzer *a = tir_analyzer_create(C);
    switch (r) {
    case R_IJ:
        tir_analyzer_bind_const(a, VAR(i), 0, 32);
        tir_analyzer_bind_const(a, VAR(j), 0, 32);
        break;
    case R_X: tir_analyzer_bind_const(a, VAR(x), -8, 16); break;
    case R_SYM:
        tir_analyzer_bind_const(a, VAR(n), 1, 999);
        tir_analyzer_bind(a, VAR(i), I(0), n);
        tir_analyzer_bind_const(a, VAR(j), 0, 4);
        break;
    case R_NEST:
        tir_analyzer_bind_const(a, VAR(i), 0, 8);
        tir_analyzer_bind(a, VAR(j), MUL(i, I(4)), I(4));
        break;
    default: break;
    }
    return a;
}

/* ------------------------------------------------------------------ proofs */

typedef struct proof_row {
    const char *text;
    int ranges;
    const tir_expr *fact;
    bool provable;
} proof_row;

static proof_row prows[128];
static int nprows;
#define PROOF(r, fact, want) (prows[nprows++] = (proof_row){#fact, (r), (fact), (want)})

static void build_proofs(void) {
    nprows = 0;
    const tir_expr *ij = ADD(MUL(i, I(32)), j);
    PROOF(R_IJ, LT(ij, I(1024)), true);
    PROOF(R_IJ, LT(ij, I(1023)), false);
    PROOF(R_IJ, LE(ij, I(1023)), true);
    PROOF(R_IJ, GE(ij, I(0)), true);
    PROOF(R_IJ, GT(ij, I(0)), false);
    PROOF(R_IJ, LT(i, I(32)), true);
    PROOF(R_IJ, LT(i, I(31)), false);
    PROOF(R_IJ, EQ(FDIV(ij, I(32)), i), true);
    PROOF(R_IJ, EQ(FMOD(ij, I(32)), j), true);
    PROOF(R_IJ, EQ(FMOD(ij, I(32)), i), false);
    PROOF(R_IJ, LT(FDIV(i, I(8)), I(4)), true);
    PROOF(R_IJ, LT(FDIV(i, I(8)), I(3)), false);
    PROOF(R_IJ, LE(MIN(i, j), i), true);
    PROOF(R_IJ, LT(MIN(i, j), i), false);
    PROOF(R_IJ, GE(MAX(i, j), j), true);
    PROOF(R_IJ, LT(SUB(i, j), I(32)), true);
    PROOF(R_IJ, LT(SUB(i, j), I(31)), false);
    PROOF(R_IJ, LT(MUL(i, j), I(1024)), true);
    PROOF(R_IJ, LT(MUL(i, j), I(900)), false);
    PROOF(R_IJ, LT(SEL(b, i, j), I(32)), true);
    PROOF(R_IJ, LT(SEL(b, i, I(40)), I(32)), false);
    PROOF(R_IJ, LT(CAST(TIR_I64, i), I64(32)), true);
    PROOF(R_IJ, EQ(ADD(MUL(FDIV(i, I(4)), I(4)), FMOD(i, I(4))), i), true);
    PROOF(R_IJ, AND(LT(i, I(32)), LT(j, I(32))), true);
    PROOF(R_IJ, AND(LT(i, I(16)), LT(j, I(32))), false);
    PROOF(R_IJ, OR(LT(i, I(16)), GE(i, I(16))), true);
    PROOF(R_IJ, OR(LT(i, I(16)), GE(i, I(17))), false);
    PROOF(R_IJ, LT(TDIV(i, I(4)), I(8)), true);
    PROOF(R_IJ, NOT(LT(I(32), i)), true);
    PROOF(R_IJ, LT(x, ADD(x, I(1))), true);
    PROOF(R_NONE, LE(MUL(FDIV(x, I(4)), I(4)), x), true);
    PROOF(R_NONE, LT(MUL(FDIV(x, I(4)), I(4)), x), false);
    PROOF(R_NONE, LE(SUB(x, FMOD(x, I(4))), x), true);
    PROOF(R_NONE, GE(FMOD(x, I(4)), I(0)), true);
    PROOF(R_NONE, LT(FMOD(x, I(4)), I(4)), true);
    PROOF(R_NONE, LT(FMOD(x, I(4)), I(3)), false);
    PROOF(R_NONE, LT(x, y), false);
    PROOF(R_NONE, EQ(x, x), true);
    PROOF(R_NONE, LT(x64, ADD(x64, I64(1))), true);
    PROOF(R_X, GE(FDIV(x, I(4)), I(-2)), true);
    PROOF(R_X, GE(FDIV(x, I(4)), I(-1)), false);
    PROOF(R_X, GE(TDIV(x, I(4)), I(-2)), true);
    PROOF(R_X, GT(TMOD(x, I(4)), I(-4)), true);
    PROOF(R_X, GE(TMOD(x, I(4)), I(0)), false);
    PROOF(R_X, LT(MUL(x, x), I(65)), true);
    PROOF(R_X, LT(MUL(x, x), I(64)), false);
    PROOF(R_SYM, LT(i, n), true);
    PROOF(R_SYM, LT(i, SUB(n, I(1))), false);
    PROOF(R_SYM, LE(ADD(i, I(1)), n), true);
    PROOF(R_SYM, LT(MUL(i, I(2)), MUL(n, I(2))), true);
    PROOF(R_SYM, LT(ADD(MUL(i, I(4)), j), MUL(n, I(4))), true);
    PROOF(R_SYM, LT(ADD(MUL(i, I(4)), j), SUB(MUL(n, I(4)), I(1))), false);
    PROOF(R_SYM, LT(i, I(999)), true);
    PROOF(R_SYM, LT(i, I(998)), false);
    PROOF(R_NEST, LT(j, I(32)), true);
    PROOF(R_NEST, LT(SUB(j, MUL(i, I(4))), I(4)), true);
    PROOF(R_NEST, LT(SUB(j, MUL(i, I(4))), I(3)), false);
    PROOF(R_NEST, GE(j, MUL(i, I(4))), true);
    {
        const tir_var *v = tir_var_new(C, "v", TIR_I32);
        PROOF(R_IJ, tir_let_new(C, v, MUL(i, I(2)), LT(V(v), I(64))), true);
        PROOF(R_IJ, tir_let_new(C, v, MUL(i, I(2)), LT(V(v), I(62))), false);
    }
}

static void test_proofs(void **st) {
    (void)st;
    build_proofs();
    int no = 0, failures = 0;
    for (int q = 0; q < nprows; q++) no += !prows[q].provable;
    assert_true(nprows >= 25 && no >= 10);
    for (int r = 0; r < R_COUNT; r++) {
        tir_analyzer *a = analyzer_for(r);
        for (int q = 0; q < nprows; q++) {
            if (prows[q].ranges != r) continue;
            bool got = tir_analyzer_can_prove(a, prows[q].fact);
            if (got != prows[q].provable) {
                print_message("proof row %d (%s): %s: got %s, want %s (simplified: %s)\n", q,
                              range_names[r], prows[q].text, got ? "proven" : "not proven",
                              prows[q].provable ? "proven" : "not proven",
                              show(tir_analyzer_simplify(a, prows[q].fact)));
                failures++;
            }
        }
        tir_analyzer_destroy(a);
    }
    assert_int_equal(failures, 0);
}

/* ------------------------------------------------------------------ bounds */

typedef struct bound_row {
    const char *text;
    int ranges;
    const tir_expr *e;
    int64_t min, max;
} bound_row;

static void test_const_bounds(void **st) {
    (void)st;
    bound_row rs[64];
    int nr = 0;
#define BOUND(r, e, lo, hi) (rs[nr++] = (bound_row){#e, (r), (e), (lo), (hi)})
    BOUND(R_IJ, ADD(MUL(i, I(32)), j), 0, 1023);
    BOUND(R_IJ, FDIV(i, I(4)), 0, 7);
    BOUND(R_IJ, MUL(i, I(-3)), -93, 0);
    BOUND(R_IJ, SUB(i, j), -31, 31);
    BOUND(R_IJ, MIN(i, I(10)), 0, 10);
    BOUND(R_IJ, MAX(i, I(10)), 10, 31);
    BOUND(R_IJ, SEL(b, i, I(100)), 0, 100);
    BOUND(R_IJ, CAST(TIR_I8, MUL(i, I(8))), -128, 127);
    BOUND(R_IJ, CAST(TIR_I8, i), 0, 31);
    BOUND(R_IJ, CAST(TIR_I64, i), 0, 31);
    BOUND(R_IJ, FMOD(ADD(i, I(64)), I(128)), 64, 95);
    BOUND(R_IJ, FDIV(I(100), ADD(i, I(1))), 3, 100);
    BOUND(R_IJ, FMOD(x, ADD(i, I(1))), 0, 31);
    BOUND(R_IJ, LT(i, j), 0, 1);
    BOUND(R_NONE, FMOD(x, I(4)), 0, 3);
    BOUND(R_NONE, FMOD(x, I(-4)), -3, 0);
    BOUND(R_NONE, SUB(x, x), 0, 0);
    BOUND(R_NONE, x, INT32_MIN, INT32_MAX);
    BOUND(R_NONE, x64, INT64_MIN, INT64_MAX);
    BOUND(R_NONE, ADD(x64, I64(1)), INT64_MIN, INT64_MAX);
    BOUND(R_NONE, CAST(TIR_I32, tir_f32(C, 2.5)), 2, 2);
    BOUND(R_NONE, CAST(TIR_U8, x), 0, 255);
    BOUND(R_X, FMOD(x, I(4)), 0, 3);
    BOUND(R_X, FDIV(x, I(4)), -2, 1);
    BOUND(R_X, TDIV(x, I(4)), -2, 1);
    BOUND(R_X, TMOD(x, I(4)), -3, 3);
    BOUND(R_X, FDIV(x, I(-4)), -2, 2);
    BOUND(R_X, MUL(x, x), -56, 64);
    BOUND(R_SYM, i, 0, 998);
    BOUND(R_SYM, ADD(MUL(i, I(4)), j), 0, 3995);
    BOUND(R_NEST, j, 0, 31);
#undef BOUND
    int failures = 0;
    for (int r = 0; r < R_COUNT; r++) {
        tir_analyzer *a = analyzer_for(r);
        for (int q = 0; q < nr; q++) {
            if (rs[q].ranges != r) continue;
            tir_int_bound got = tir_analyzer_const_bound(a, rs[q].e);
            if (got.min != rs[q].min || got.max != rs[q].max) {
                print_message("bound of %s (%s): got [%lld, %lld], want [%lld, %lld]\n",
                              rs[q].text, range_names[r], (long long)got.min,
                              (long long)got.max, (long long)rs[q].min, (long long)rs[q].max);
                failures++;
            }
        }
        tir_analyzer_destroy(a);
    }
    assert_int_equal(failures, 0);
}

/* ------------------------------------------------------------------- relax */

typedef struct relax_row {
    const char *text;
    int ranges;
    const tir_expr *e;
    int nvars;
    const tir_var *vars[2];
    bool ok;
    const tir_expr *min, *extent;
} relax_row;

static void test_relax(void **st) {
    (void)st;
    relax_row rs[32];
    int nr = 0;
#define RELAX(r, e, nv, v0, v1, ok, mn, ex)                                                 \
    (rs[nr++] = (relax_row){#e, (r), (e), (nv), {VAR(v0), VAR(v1)}, (ok), (mn), (ex)})
    const tir_expr *ij = ADD(MUL(i, I(32)), j);
    RELAX(R_IJ, ij, 1, j, j, true, MUL(i, I(32)), I(32));
    RELAX(R_IJ, ij, 2, i, j, true, I(0), I(1024));
    RELAX(R_IJ, ij, 1, i, i, true, j, I(993));
    RELAX(R_IJ, ij, 0, i, i, true, ij, I(1));
    RELAX(R_IJ, FDIV(ij, I(8)), 1, j, j, true, MUL(i, I(4)), I(4));
    RELAX(R_IJ, FMOD(ij, I(32)), 1, i, i, true, j, I(1));
    RELAX(R_IJ, FMOD(ADD(MUL(i, I(8)), FDIV(j, I(4))), I(16)), 1, j, j, true,
          MUL(FMOD(i, I(2)), I(8)), I(8));
    RELAX(R_IJ, FMOD(ADD(i, j), I(16)), 1, j, j, true, I(0), I(16));
    RELAX(R_IJ, MIN(i, I(10)), 1, i, i, true, I(0), I(11));
    RELAX(R_IJ, MAX(SUB(i, I(4)), I(0)), 1, i, i, true, I(0), I(28));
    RELAX(R_IJ, SUB(I(31), i), 1, i, i, true, I(0), I(32));
    RELAX(R_IJ, MUL(j, I(-2)), 1, j, j, true, I(-62), I(63));
    RELAX(R_IJ, ADD(x, j), 1, j, j, true, x, I(32));
    RELAX(R_IJ, MUL(i, y), 1, i, i, false, NULL, NULL);
    RELAX(R_IJ, ADD(i, x), 1, x, x, false, NULL, NULL);
    RELAX(R_IJ, SEL(LT(i, I(4)), i, I(40)), 1, i, i, true, I(0), I(41));
    RELAX(R_IJ, CAST(TIR_I64, ij), 1, j, j, true, MUL(CAST(TIR_I64, i), I64(32)), I64(32));
    RELAX(R_NONE, FDIV(x, I(4)), 0, x, x, true, FDIV(x, I(4)), I(1));
    RELAX(R_X, FDIV(x, I(4)), 1, x, x, true, I(-2), I(4));
    RELAX(R_X, FMOD(x, I(4)), 1, x, x, true, I(0), I(4));
    RELAX(R_SYM, ADD(MUL(i, I(4)), j), 1, j, j, true, MUL(i, I(4)), I(4));
    RELAX(R_SYM, ADD(MUL(i, I(4)), j), 2, i, j, true, I(0), MUL(n, I(4)));
    RELAX(R_NEST, j, 1, j, j, true, MUL(i, I(4)), I(4));
    RELAX(R_NEST, j, 2, i, j, true, I(0), I(32));
    RELAX(R_NEST, SUB(j, MUL(i, I(4))), 1, j, j, true, I(0), I(4));
#undef RELAX
    int failures = 0;
    char msg[2048];
    for (int r = 0; r < R_COUNT; r++) {
        tir_analyzer *a = analyzer_for(r);
        for (int q = 0; q < nr; q++) {
            if (rs[q].ranges != r) continue;
            tir_range out = {NULL, NULL};
            bool ok = tir_analyzer_relax(a, rs[q].e, rs[q].nvars, rs[q].vars, &out);
            if (ok != rs[q].ok) {
                print_message("relax %s over %d vars (%s): got %s\n", rs[q].text, rs[q].nvars,
                              range_names[r], ok ? "bounded" : "unbounded");
                failures++;
                continue;
            }
            if (!ok) continue;
            if (!same_expr(out.min, rs[q].min, msg, sizeof msg) ||
                !same_expr(out.extent, rs[q].extent, msg, sizeof msg)) {
                print_message("relax %s over %d vars (%s): [%s, +%s): %s\n", rs[q].text,
                              rs[q].nvars, range_names[r], show(out.min), show(out.extent), msg);
                failures++;
            }
        }
        tir_analyzer_destroy(a);
    }
    assert_int_equal(failures, 0);

    /* the region helper relaxes each index */
    tir_analyzer *a = analyzer_for(R_IJ);
    const tir_expr *idx[2] = {FDIV(ij, I(32)), FMOD(ij, I(32))};
    const tir_var *vars[1] = {VAR(j)};
    tir_range out[2];
    assert_true(tir_analyzer_relax_region(a, 2, idx, 1, vars, out));
    assert_true(same_expr(out[0].min, i, msg, sizeof msg));
    assert_true(same_expr(out[0].extent, I(1), msg, sizeof msg));
    assert_true(same_expr(out[1].min, I(0), msg, sizeof msg));
    assert_true(same_expr(out[1].extent, I(32), msg, sizeof msg));
    const tir_expr *bad[2] = {i, MUL(j, x)};
    assert_false(tir_analyzer_relax_region(a, 2, bad, 1, vars, out));
    tir_analyzer_destroy(a);
}

/* Soundness of relax on random points: every value lies in the range. */
static void test_relax_sound(void **st) {
    (void)st;
    tir_analyzer *a = analyzer_for(R_IJ);
    const tir_expr *es[] = {
        ADD(MUL(i, I(7)), MUL(j, I(-3))), FDIV(ADD(MUL(i, I(5)), j), I(6)),
        FMOD(ADD(MUL(i, I(4)), j), I(24)), MIN(ADD(i, j), I(40)),
        MAX(SUB(i, j), FDIV(j, I(3))),   SEL(LT(i, j), MUL(i, I(2)), j),
    };
    const tir_var *vars[1] = {VAR(j)};
    for (size_t q = 0; q < sizeof es / sizeof es[0]; q++) {
        tir_range out;
        assert_true(tir_analyzer_relax(a, es[q], 1, vars, &out));
        for (int iv = 0; iv < 32; iv++) {
            /* substitute i, then check every j */
            const tir_var *iv_var = VAR(i);
            const tir_expr *ival = I(iv);
            const tir_expr *lo =
                tir_simplify(C, (const tir_expr *)tir_substitute(C, out.min, 1, &iv_var, &ival));
            const tir_expr *ext =
                tir_simplify(C, (const tir_expr *)tir_substitute(C, out.extent, 1, &iv_var, &ival));
            int64_t l, e;
            assert_true(tir_expr_const_int(lo, &l));
            assert_true(tir_expr_const_int(ext, &e));
            for (int jv = 0; jv < 32; jv++) {
                const tir_var *vs[2] = {VAR(i), VAR(j)};
                const tir_expr *vals[2] = {I(iv), I(jv)};
                int64_t v;
                assert_true(tir_expr_const_int(
                    tir_simplify(C, (const tir_expr *)tir_substitute(C, es[q], 2, vs, vals)), &v));
                if (v < l || v >= l + e)
                    fail_msg("%s at i=%d j=%d is %lld, outside [%lld, %lld)", show(es[q]), iv, jv,
                             (long long)v, (long long)l, (long long)(l + e));
            }
        }
    }
    tir_analyzer_destroy(a);
}

/* --------------------------------------------------------------- bindings */

static void test_bind_unbind(void **st) {
    (void)st;
    tir_analyzer *a = tir_analyzer_create(C);
    const tir_expr *f = LT(i, I(10));
    assert_false(tir_analyzer_can_prove(a, f));
    tir_analyzer_bind_const(a, VAR(i), 0, 10);
    assert_true(tir_analyzer_can_prove(a, f));
    tir_analyzer_bind_const(a, VAR(i), 0, 11); /* rebinding replaces */
    assert_false(tir_analyzer_can_prove(a, f));
    tir_analyzer_bind_const(a, VAR(i), 2, 5);
    assert_true(tir_analyzer_can_prove(a, f));
    tir_int_bound bd = tir_analyzer_const_bound(a, i);
    assert_int_equal(bd.min, 2);
    assert_int_equal(bd.max, 6);
    tir_analyzer_unbind(a, VAR(i));
    assert_false(tir_analyzer_can_prove(a, f));
    bd = tir_analyzer_const_bound(a, i);
    assert_int_equal(bd.min, INT32_MIN);
    /* a binding through another variable's symbolic range */
    tir_analyzer_bind_const(a, VAR(n), 0, 16);
    tir_analyzer_bind(a, VAR(i), I(0), n);
    assert_true(tir_analyzer_can_prove(a, LT(i, I(15))));
    assert_true(tir_analyzer_can_prove(a, LT(i, n)));
    tir_analyzer_destroy(a);
    tir_analyzer_destroy(NULL);
}

/* ------------------------------------------------------- statement simplify */

static void test_simplify_stmt(void **st) {
    (void)st;
    int64_t shape[2] = {32, 32}, flat[1] = {1024};
    const tir_buffer *A = tir_buffer_simple(C, "A", TIR_F32, 1, flat, TIR_SCOPE_GLOBAL);
    const tir_buffer *B = tir_buffer_simple(C, "B", TIR_F32, 2, shape, TIR_SCOPE_GLOBAL);
    const tir_var *fi = tir_var_new(C, "f", TIR_I32);
    const tir_expr *f = V(fi);
    /* for f in [0, 1000 + 24): for u in [0, 1): if f < 1024:
     *     B[f // 32, f % 32] = A[(f // 32) * 32 + f % 32 + u] */
    const tir_var *ui = tir_var_new(C, "u", TIR_I32);
    const tir_expr *fidx[2] = {FDIV(f, I(32)), FMOD(f, I(32))};
    const tir_expr *aidx = ADD(ADD(MUL(FDIV(f, I(32)), I(32)), FMOD(f, I(32))), V(ui));
    const tir_stmt *store = tir_store(C, B, tir_load(C, A, 1, &aidx), 2, fidx);
    const tir_stmt *guard = tir_if_new(C, LT(f, I(1024)), store, NULL);
    const tir_stmt *inner = tir_for_new(C, ui, I(0), I(1), TIR_FOR_SERIAL, NULL, 0, NULL, guard);
    const tir_stmt *loop = tir_for_new(C, fi, I(0), ADD(I(1000), I(24)), TIR_FOR_SERIAL, NULL, 0,
                                       NULL, inner);

    const tir_expr *aidx2 = f;
    const tir_stmt *want_store = tir_store(C, B, tir_load(C, A, 1, &aidx2), 2, fidx);
    const tir_stmt *want = tir_for_new(
        C, fi, I(0), I(1024), TIR_FOR_SERIAL, NULL, 0, NULL,
        tir_for_new(C, ui, I(0), I(1), TIR_FOR_SERIAL, NULL, 0, NULL, want_store));

    tir_analyzer *a = tir_analyzer_create(C);
    const tir_stmt *got = tir_analyzer_simplify_stmt(a, loop);
    char why[512];
    if (!tir_struct_equal_explain(got, want, why, sizeof why)) fail_msg("stmt: %s", why);
    /* simplifying again changes nothing and returns the same node */
    assert_ptr_equal(tir_analyzer_simplify_stmt(a, got), got);
    /* loop variables are unbound again afterwards */
    assert_false(tir_analyzer_can_prove(a, LT(f, I(1024))));

    /* a block: iter var domains bind, predicates and regions simplify */
    const tir_var *vi = tir_var_new(C, "vi", TIR_I32);
    const tir_var *io = tir_var_new(C, "io", TIR_I32), *ii = tir_var_new(C, "ii", TIR_I32);
    const tir_expr *vidx = FMOD(V(vi), I(1024));
    const tir_stmt *bstore = tir_store(C, A, tir_f32(C, 1.0), 1, &vidx);
    tir_range rg = {ADD(V(vi), I(0)), I(1)};
    tir_buffer_region wr = tir_region_new(C, A, 1, &rg);
    tir_iter_var it = {vi, {I(0), I(1024)}, TIR_ITER_SPATIAL};
    tir_block_desc d = {.name = "blk", .niters = 1, .iters = &it, .nwrites = 1, .writes = &wr,
                        .body = bstore};
    const tir_block *blk = tir_block_new(C, &d);
    const tir_expr *bind = ADD(MUL(V(io), I(32)), V(ii));
    const tir_stmt *real = tir_block_realize_new(C, 1, &bind, LT(bind, I(1024)), blk);
    const tir_stmt *nest = tir_for_new(
        C, io, I(0), I(32), TIR_FOR_SERIAL, NULL, 0, NULL,
        tir_for_new(C, ii, I(0), I(32), TIR_FOR_SERIAL, NULL, 0, NULL, real));

    const tir_expr *vidx2 = V(vi);
    tir_range rg2 = {V(vi), I(1)};
    tir_buffer_region wr2 = tir_region_new(C, A, 1, &rg2);
    tir_block_desc d2 = d;
    d2.writes = &wr2;
    d2.body = tir_store(C, A, tir_f32(C, 1.0), 1, &vidx2);
    const tir_stmt *want2 = tir_for_new(
        C, io, I(0), I(32), TIR_FOR_SERIAL, NULL, 0, NULL,
        tir_for_new(C, ii, I(0), I(32), TIR_FOR_SERIAL, NULL, 0, NULL,
                    tir_block_realize_new(C, 1, &bind, TRUE_, tir_block_new(C, &d2))));
    got = tir_analyzer_simplify_stmt(a, nest);
    if (!tir_struct_equal_explain(got, want2, why, sizeof why)) fail_msg("block: %s", why);
    tir_analyzer_destroy(a);
}

/* A stored value wraps as a whole (docs/lowered-ir.md), also where it
 * reads no buffer or a fold removed its loads: simplify_stmt may not move
 * a max's offset out past the wrap (the float fuzzer's case, and the same
 * with a loop variable: max(i * 10^9 + 2 * 10^9, 5) became the sum for i =
 * 1, 2).  A load's indices inside it stay index arithmetic: S's index
 * still simplifies.  Each function is run by the interpreter before and
 * after. */
static void test_stored_values_wrap(void **st) {
    (void)st;
    static const char *const vals[] = {
        "T.max(i * 1000000000 + 2000000000, 5)",
        "T.max(T.Select(1 < 2, T.Cast(\"int32\", T.sqrt(T.float32(\"inf\"))), S[i]) + "
        "2147483647, 2147483647)",
        "T.min(i * -1000000000 - 2000000000, -5) + S[(i * 4 + 8) // 4 - 2]",
    };
    for (size_t k = 0; k < sizeof vals / sizeof *vals; k++) {
        tir_ctx *ctx = tir_ctx_create();
        char text[800];
        snprintf(text, sizeof text,
                 "@T.prim_func\n"
                 "def f(S: T.Buffer((4,), \"int32\"), Y: T.Buffer((4,), \"int32\")):\n"
                 "    for i in T.serial(4):\n"
                 "        Y[i] = %s\n",
                 vals[k]);
        const tir_prim_func *f;
        assert_int_equal(tir_parse_func(ctx, text, strlen(text), &f), TIR_OK);
        tir_analyzer *a = tir_analyzer_create(ctx);
        tir_prim_func g = *f;
        g.body = tir_analyzer_simplify_stmt(a, f->body);
        tir_analyzer_destroy(a);
        int32_t sv[4] = {7, -3, 11, 0}, y1[4], y2[4];
        tir_arg args[2] = {{sv, 0}, {y1, 0}};
        assert_int_equal(tir_interp_run(ctx, f, 2, args, NULL), TIR_OK);
        args[1].data = y2;
        assert_int_equal(tir_interp_run(ctx, &g, 2, args, NULL), TIR_OK);
        if (memcmp(y1, y2, sizeof y1))
            fail_msg("%s: %d %d %d %d before, %d %d %d %d simplified:\n%s", vals[k], y1[0],
                     y1[1], y1[2], y1[3], y2[0], y2[1], y2[2], y2[3], tir_print(ctx, &g));
        if (k == 2 && !strstr(tir_print(ctx, &g), "S[i]"))
            fail_msg("the load's index was not simplified:\n%s", tir_print(ctx, &g));
        tir_ctx_destroy(ctx);
    }
}

/* Keep the analyzer cheap enough for schedule primitives that call it a lot. */
static void test_many_queries(void **st) {
    (void)st;
    tir_analyzer *a = analyzer_for(R_IJ);
    int proven = 0, want = 0;
    for (int q = 0; q < 20000; q++) {
        /* max is 31*c + 8: below 1100 exactly for c <= 35 */
        const tir_expr *e = ADD(MUL(i, I(32 + q % 7)), FDIV(ADD(j, I(q % 5)), I(4)));
        proven += tir_analyzer_can_prove(a, LT(e, I(1100)));
        want += q % 7 <= 3;
        tir_analyzer_bind_const(a, VAR(j), 0, 32 - q % 3);
    }
    assert_int_equal(proven, want);
    tir_analyzer_destroy(a);
}

/* Index sums near the ends of their dtype (tests/test_index_fuzz.c found
 * each): a canonical sum of indices is read as the value, so its constant
 * must not wrap, and an int64 constant at an end is a value, not an
 * infinity.  Each fact here is false (or the bound missed a value) before
 * the fix it names. */
static void test_index_fuzz_rows(void **st) {
    (void)st;
    int failures = 0;
#define CHECK(c) ((c) ? (void)0 : (void)(failures++, print_message("failed: %s\n", #c)))
    const tir_var *v = tir_var_new(C, "v", TIR_I32), *w = tir_var_new(C, "w", TIR_I32);
    const tir_expr *ve = V(v), *we = V(w);
    tir_analyzer *a = tir_analyzer_create(C);
    /* x - INT32_MIN is x + 2^31 for x in [-8, 0): it was folded to
       x + INT32_MIN, "always negative", so 1 >= it was proved (linear) */
    tir_analyzer_bind_const(a, VAR(x), -8, 8);
    CHECK(!tir_analyzer_can_prove(a, GE(I(1), SUB(x, I(INT32_MIN)))));
    CHECK(!tir_analyzer_can_prove(a, LT(SUB(x, I(INT32_MIN)), I(0))));
    /* (v + 2^30) * 2 for v in [-2^30 - 4, +8) is in [-8, 6]; it became
       2v + 2^31, wrapped to 2v - 2^31 (linear, MUL by a constant) */
    tir_analyzer_bind_const(a, v, -(1 << 30) - 4, 8);
    const tir_expr *twice = MUL(ADD(ve, I(1 << 30)), I(2));
    CHECK(tir_analyzer_can_prove(a, GE(twice, I(-8))));
    CHECK(!tir_analyzer_can_prove(a, LT(twice, I(-8))));
    /* floordiv(v + INT32_MIN, -1) for v in [1, 9) is 2^31 - v > 0: it
       became -v + INT32_MIN, wrapped (floordiv by -1) */
    tir_analyzer_bind_const(a, v, 1, 8);
    const tir_expr *neg = FDIV(ADD(ve, I(INT32_MIN)), I(-1));
    CHECK(tir_analyzer_can_prove(a, GT(neg, I(0))));
    CHECK(!tir_analyzer_can_prove(a, LT(neg, I(0))));
    /* floormod(w, 64) for w in [INT32_MIN + 38, +6) is w + 2^31, in [38,
       43]; floormod_rest made it w - 2^31 */
    tir_analyzer_bind_const(a, w, (int64_t)INT32_MIN + 38, 6);
    CHECK(tir_analyzer_can_prove(a, GE(FMOD(we, I(64)), I(38))));
    CHECK(!tir_analyzer_can_prove(a, LT(FMOD(we, I(64)), I(1))));
    /* an int64 constant at an end of int64 is a value (bound_of): INT64_MAX
       + -4 was bounded by [INT64_MAX, INT64_MAX], int64(x) + INT64_MIN for
       x in [0, 16) by [INT64_MIN, INT64_MIN] */
    tir_analyzer_bind_const(a, VAR(x), 0, 16);
    tir_int_bound bd = tir_analyzer_const_bound(a, ADD(I64(INT64_MAX), I64(-4)));
    CHECK(bd.min <= INT64_MAX - 4 && bd.max >= INT64_MAX - 4);
    bd = tir_analyzer_const_bound(a, ADD(CAST(TIR_I64, x), I64(INT64_MIN)));
    CHECK(bd.min <= INT64_MIN && bd.max >= INT64_MIN + 15);
    /* relaxing select(x > 7, 8, INT32_MIN + 6) over x spans more values
       than int32 counts: the extent wrapped to a negative number */
    const tir_var *xv = VAR(x);
    tir_range r;
    if (tir_analyzer_relax(a, SEL(GT(x, I(7)), I(8), I(INT32_MIN + 6)), 1, &xv, &r)) {
        int64_t ex;
        CHECK(tir_expr_const_int(r.extent, &ex) && ex > 0);
    }
    /* x*x - 2147483600 for x in [-2, 31) is at least -2147483600, but the
       interval of x*x starts at -62, and the relaxed lower end -62 -
       2147483600 folded wrapping to 2147483634 (relax_one) */
    tir_analyzer_bind_const(a, VAR(x), -2, 33);
    if (tir_analyzer_relax(a, SUB(MUL(x, x), I(2147483600)), 1, &xv, &r)) {
        int64_t lo, ex;
        CHECK(tir_expr_const_int(r.min, &lo) && tir_expr_const_int(r.extent, &ex) &&
              lo <= -2147483600 && lo + ex > -2147483600 + 900);
    }
    tir_analyzer_destroy(a);
    /* an int64 sum that may pass int64 gets no symbolic bound: for w in
       [v*0 - 10, +11) the upper end of -8*int64(w) + 2^63 - 79 folded 80 +
       (2^63 - 80) to a negative constant (sum_bound_strong) */
    a = tir_analyzer_create(C);
    tir_analyzer_bind_const(a, v, 0, 8);
    tir_analyzer_bind(a, w, SUB(MUL(ve, I(0)), I(10)), I(11));
    CHECK(!tir_analyzer_can_prove(
        a, GE(I64(INT64_MIN + 79), MUL(CAST(TIR_I64, we), I64(-8)))));
    tir_analyzer_destroy(a);

    /* merge_step: floormod(w, 64) - w is -64 * floordiv(w, 64), and for w
       near INT32_MIN the floordiv folds to -33554432: -64 times it is 2^31,
       which wrapped to INT32_MIN and proved w > floormod(w, 64), and
       min(floormod(w, 32), w) dropped w */
    a = tir_analyzer_create(C);
    tir_analyzer_bind_const(a, w, (int64_t)INT32_MIN + 34, 26);
    CHECK(!tir_analyzer_can_prove(a, GT(we, FMOD(we, I(64)))));
    CHECK(tir_analyzer_can_prove(a, LT(we, FMOD(we, I(64)))));
    tir_analyzer_bind_const(a, w, (int64_t)INT32_MIN + 7, 11);
    CHECK(!tir_analyzer_can_prove(a, LE(FMOD(we, I(32)), we)));
    /* divmod_low: floormod(2m, 128) = 2 * floormod(m, 64) for m in [-2^62 +
       21, +33) is 2 * (m + 2^62), which wrapped to 2m + INT64_MIN */
    const tir_var *m = tir_var_new(C, "m", TIR_I64);
    const tir_expr *me = V(m);
    tir_analyzer_bind_const(a, m, -(INT64_C(1) << 62) + 21, 33);
    CHECK(tir_analyzer_can_prove(a, GE(FMOD(ADD(me, me), I64(128)), I64(42))));
    CHECK(!tir_analyzer_can_prove(a, LT(FMOD(ADD(me, me), I64(128)), I64(0))));
    /* sum_bound: 2m + int64(w) for m in [2^62, +2) is below INT64_MAX, but
       the term 2m saturated to +inf and made the lower end +inf */
    tir_analyzer_bind_const(a, m, INT64_C(1) << 62, 2);
    tir_analyzer_bind_const(a, w, (int64_t)INT32_MIN + 10, 22);
    const tir_expr *wmm = ADD(ADD(CAST(TIR_I64, we), me), me);
    CHECK(tir_analyzer_can_prove(a, LE(wmm, I64(INT64_MAX - 2147483508))));
    CHECK(!tir_analyzer_can_prove(a, GT(wmm, I64(INT64_MAX - 2147483508))));
    tir_analyzer_destroy(a);
    /* sum_bound_strong: the symbolic lower end of int64(w*w + w -
       2147483631) for w in [v*0 - 7, +34) passes int32 */
    a = tir_analyzer_create(C);
    tir_analyzer_bind_const(a, v, 0, 8);
    tir_analyzer_bind(a, w, SUB(MUL(ve, I(0)), I(7)), I(34));
    CHECK(!tir_analyzer_can_prove(
        a, LT(I64(1), CAST(TIR_I64, ADD(MUL(we, we), SUB(we, I(2147483631)))))));
    tir_analyzer_destroy(a);
    /* relax: j in [i*6 - 5, +1) simplifies to its start, so relaxing k in
       [j*4 - 7, +8) over i and k brought i back into the range */
    a = tir_analyzer_create(C);
    const tir_var *vi = VAR(i), *vj = VAR(j), *vk = tir_var_new(C, "k", TIR_I32);
    tir_analyzer_bind_const(a, vi, -6, 6);
    tir_analyzer_bind(a, vj, SUB(MUL(i, I(6)), I(5)), I(1));
    tir_analyzer_bind(a, vk, SUB(MUL(j, I(4)), I(7)), I(8));
    const tir_var *ik[2] = {vi, vk};
    if (tir_analyzer_relax(a, V(vk), 2, ik, &r))
        CHECK(!tir_uses_var(r.min, vi) && !tir_uses_var(r.extent, vi));
    tir_analyzer_destroy(a);
    /* relax: select(i != 2147483622, i, w) - 2147483646 over w in [-30,
       13), i in [2147483612, +15): the lower end min(i, -30) - 2147483646
       passes int32 and was folded to 2147483620, above the values */
    a = tir_analyzer_create(C);
    tir_analyzer_bind_const(a, vi, 2147483612, 15);
    tir_analyzer_bind_const(a, w, -30, 13);
    const tir_expr *sw = SUB(SEL(NE(i, I(2147483622)), i, we), I(2147483646));
    if (tir_analyzer_relax(a, sw, 1, &w, &r)) {
        const tir_expr *at = I(2147483618);
        const tir_expr *lo = (const tir_expr *)tir_substitute(C, r.min, 1, &vi, &at);
        int64_t l;
        CHECK(tir_expr_const_int(tir_simplify(C, lo), &l) && l <= -28);
    }
    /* relax: select(w != 5, INT32_MIN, 3 * v) over w, v in [-3, 4): for v
       >= 0 the range has more values than int32 counts, and its extent 3v
       + 2^31 + 1 wrapped */
    tir_analyzer_bind_const(a, v, -3, 7);
    tir_analyzer_bind_const(a, w, 0, 8);
    CHECK(!tir_analyzer_relax(a, SEL(NE(we, I(5)), I(INT32_MIN), MUL(I(3), ve)), 1, &w, &r));
    /* relax: select(v > 1, 2^54 // int64(v), int64(w)) over w, v in [0,
       39): the end max(2^54 // int64(v), ..) divides by zero at v = 0, where
       e does not */
    tir_analyzer_bind_const(a, v, 0, 39);
    const tir_expr *dz = SEL(GT(ve, I(1)), tir_floordiv(C, I64(INT64_C(1) << 54), CAST(TIR_I64, ve)),
                             CAST(TIR_I64, we));
    if (tir_analyzer_relax(a, dz, 1, &w, &r)) {
        const tir_expr *at = I(0);
        const tir_expr *hi = tir_add(C, r.min, r.extent);
        hi = (const tir_expr *)tir_substitute(C, hi, 1, &v, &at);
        CHECK(tir_expr_const_int(tir_simplify(C, hi), NULL));
    }
    tir_analyzer_destroy(a);
    /* relax: select(w > 3, int32(l), INT32_MIN + 5) over w, for l in [2^62,
       +40): int32(l) is in [0, 39], and the extent int32(l) - INT32_MIN - 4
       wraps for int32(l) >= 4; ar_may_wrap could not see through the
       narrowing cast */
    a = tir_analyzer_create(C);
    const tir_var *l = tir_var_new(C, "l", TIR_I64);
    tir_analyzer_bind_const(a, l, INT64_C(1) << 62, 40);
    tir_analyzer_bind_const(a, w, 0, 8);
    CHECK(!tir_analyzer_relax(a, SEL(GT(we, I(3)), CAST(TIR_I32, V(l)), I(INT32_MIN + 5)), 1, &w,
                              &r));
    tir_analyzer_destroy(a);
    /* divmod_const: floormod(w - 1, 32) for w near INT32_MAX became
       floormod(w + 31, 32), whose argument wraps, and a merge read it as
       w + 31 - 32 * floordiv(w + 31, 32): w - 2147483585 <= floormod(w - 1,
       32) was proved (it is 32..37 against 0..5 for the last w) */
    a = tir_analyzer_create(C);
    tir_analyzer_bind_const(a, w, 2147483606, 17);
    CHECK(!tir_analyzer_can_prove(a, LE(SUB(we, I(2147483585)), FMOD(SUB(we, I(1)), I(32)))));
    /* canon_diff: 42w - 8 * floordiv(41w, 8) - w * -2147483622 has the
       coefficient 2147483664 for w, which int32 wrapped in the merge path:
       the difference was proved <= 0 (2 against -2147483622 at w = 1) */
    tir_analyzer_bind_const(a, w, 0, 40);
    const tir_expr *w41 = MUL(we, I(41));
    CHECK(!tir_analyzer_can_prove(a, LE(SUB(MUL(we, I(42)), MUL(FDIV(w41, I(8)), I(8))),
                                        MUL(we, I(-2147483622)))));
    tir_analyzer_destroy(a);
    /* ar_may_wrap: int32(int64(v) * -52776558133248) for v in [-6, 10)
       wraps to any int32 value, so the extent of a range holding it and
       v + k for k near INT32_MIN may pass int32; it was "unknown" */
    a = tir_analyzer_create(C);
    tir_analyzer_bind_const(a, v, -6, 16);
    tir_analyzer_bind_const(a, w, 0, 4);
    tir_analyzer_bind_const(a, vk, INT32_MIN + 13, 7);
    const tir_expr *big = CAST(TIR_I32, MUL(CAST(TIR_I64, ve), I64(-52776558133248)));
    CHECK(!tir_analyzer_relax(a, SEL(EQ(we, I(1)), ADD(ve, V(vk)), big), 1, &w, &r));
    tir_analyzer_destroy(a);
#undef CHECK
    assert_int_equal(failures, 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_index_fuzz_rows),
        cmocka_unit_test(test_proofs),        cmocka_unit_test(test_const_bounds),
        cmocka_unit_test(test_relax),         cmocka_unit_test(test_relax_sound),
        cmocka_unit_test(test_bind_unbind),   cmocka_unit_test(test_simplify_stmt),
        cmocka_unit_test(test_stored_values_wrap),
        cmocka_unit_test(test_many_queries),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
