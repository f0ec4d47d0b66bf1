/* Tests of the depth limits that keep the recursive IR walkers on the C
 * stack safe (TIR_MAX_EXPR_DEPTH in minitir/ir.h, docs/text-format.md).
 *
 * The deepest tree the parser accepts -- a TIR_MAX_EXPR_DEPTH-deep
 * expression inside statements nested as deep as the parser allows -- is
 * built both from text and with the constructors, and goes through every
 * walker: printer, parse round trip, structural equality and hash,
 * simplifier, verifier, interpreter, lowering with the SIMT simulator, and
 * codegen.  CI runs this under ASan with the default 8 MB stack, where
 * frames are largest.  Then hand-made extremes (a 10^5-term sum, 10^5
 * nested parentheses, 10^4 nested statements, `not`/minus chains, long
 * identifiers) must fail with a clean "line:col: message" or round-trip.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "minitir/codegen.h"
#include "minitir/ir.h"
#include "minitir/lower.h"
#include "minitir/sim.h"

static int setup(void **st) {
    *st = tir_ctx_create();
    return *st ? 0 : -1;
}
static int teardown(void **st) {
    tir_ctx_destroy(*st);
    return 0;
}

/* A heap string builder for large texts. */
typedef struct text {
    char *p;
    size_t n, cap;
} text;

static void add(text *t, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (t->n + (size_t)k + 1 > t->cap) {
        t->cap = (t->n + (size_t)k + 1) * 2;
        t->p = realloc(t->p, t->cap);
        assert_non_null(t->p);
    }
    va_start(ap, fmt);
    vsnprintf(t->p + t->n, (size_t)k + 1, fmt, ap);
    va_end(ap);
    t->n += (size_t)k;
}

static void indent(text *t, int level) { add(t, "%*s", 4 * level, ""); }

static tir_status parse(tir_ctx *ctx, const text *t, const tir_prim_func **f) {
    return tir_parse_func(ctx, t->p, t->n, f);
}

static void expect_error(tir_ctx *ctx, const text *t, const char *want) {
    const tir_prim_func *f = (const void *)ctx;
    tir_status s = parse(ctx, t, &f);
    if (s != TIR_ERR_PARSE || strncmp(tir_ctx_error(ctx), want, strlen(want)) != 0)
        print_error("want '%s'\n got %s '%.300s'\n", want, tir_status_name(s), tir_ctx_error(ctx));
    assert_int_equal(s, TIR_ERR_PARSE);
    assert_null(f);
    assert_int_equal(strncmp(tir_ctx_error(ctx), want, strlen(want)), 0);
}

/* ------------------------------------------------------- the deepest tree */

enum { NA = 8 };
#define SIG "@T.prim_func\ndef deep(A: T.Buffer((8,), \"int32\"), B: T.Buffer((1,), \"int32\")):\n"

/* A[0] + A[1] + ... with `terms` loads: a left-leaning chain whose depth is
 * terms + 1 (terms - 1 Adds, then a load and its index). */
static void add_sum(text *t, int terms) {
    add(t, "A[0]");
    for (int i = 1; i < terms; i++) add(t, " + A[%d]", i % NA);
}

/* (A[lo] + ... + A[hi - 1]) as a balanced tree. */
static void add_balanced(text *t, int lo, int hi) {
    if (hi - lo == 1) {
        add(t, "A[%d]", lo % NA);
        return;
    }
    int mid = lo + (hi - lo) / 2;
    add(t, "(");
    add_balanced(t, lo, mid);
    add(t, " + ");
    add_balanced(t, mid, hi);
    add(t, ")");
}

/* The function: blockIdx and threadIdx loops, then `loops` serial loops of
 * extent 1, then B[0] = the sum. */
static void deep_func(text *t, int loops, int terms) {
    t->n = 0;
    add(t, SIG "    for b in T.thread_binding(1, thread=\"blockIdx.x\"):\n");
    add(t, "        for t in T.thread_binding(1, thread=\"threadIdx.x\"):\n");
    for (int i = 0; i < loops; i++) {
        indent(t, 3 + i);
        add(t, "for i%d in T.serial(1):\n", i);
    }
    indent(t, 3 + loops);
    add(t, "B[0] = ");
    add_sum(t, terms);
    add(t, "\n");
}

/* The same function through the constructors. */
static const tir_prim_func *deep_func_api(tir_ctx *ctx, int loops, int terms) {
    const tir_var *pa = tir_var_new(ctx, "A", TIR_HANDLE), *pb = tir_var_new(ctx, "B", TIR_HANDLE);
    const tir_buffer *A = tir_buffer_simple(ctx, "A", TIR_I32, 1, (int64_t[]){NA}, TIR_SCOPE_GLOBAL);
    const tir_buffer *B = tir_buffer_simple(ctx, "B", TIR_I32, 1, (int64_t[]){1}, TIR_SCOPE_GLOBAL);
    const tir_expr *sum = tir_load(ctx, A, 1, (const tir_expr *[]){tir_i32(ctx, 0)});
    for (int i = 1; i < terms; i++)
        sum = tir_add(ctx, sum, tir_load(ctx, A, 1, (const tir_expr *[]){tir_i32(ctx, i % NA)}));
    const tir_stmt *body = tir_store(ctx, B, sum, 1, (const tir_expr *[]){tir_i32(ctx, 0)});
    for (int i = loops - 1; i >= -2; i--) {
        char name[16];
        snprintf(name, sizeof name, "i%d", i);
        const char *tag = i == -1 ? "threadIdx.x" : i == -2 ? "blockIdx.x" : NULL;
        body = tir_for_new(ctx, tir_var_new(ctx, i == -1 ? "t" : i == -2 ? "b" : name, TIR_I32),
                           tir_i32(ctx, 0), tir_i32(ctx, 1),
                           tag ? TIR_FOR_THREAD_BINDING : TIR_FOR_SERIAL, tag, 0, NULL, body);
    }
    return tir_prim_func_new(ctx, "deep", 2, (const tir_var *[]){pa, pb},
                             (const tir_buffer *[]){A, B}, body, 0, NULL);
}

static const tir_expr *stored_value(const tir_prim_func *f) {
    const tir_stmt *s = f->body;
    const tir_for *l;
    while ((l = tir_as_tir_for(s))) s = l->body;
    const tir_buffer_store *st = tir_as_tir_buffer_store(s);
    assert_non_null(st);
    return st->value;
}

/* The deepest statement nest the parser takes around the deepest sum:
 * found by search, so the test follows the parser's limit. */
static int deepest_loops(tir_ctx *ctx, text *t, int terms) {
    for (int loops = 200; loops > 0; loops--) {
        deep_func(t, loops, terms);
        const tir_prim_func *f = NULL;
        if (parse(ctx, t, &f) == TIR_OK) return loops;
        assert_int_equal(tir_ctx_error_code(ctx), TIR_ERR_PARSE);
    }
    return 0;
}

static void run_walkers(tir_ctx *ctx, const tir_prim_func *f, int terms) {
    /* printer and round trip */
    const char *printed = tir_print(ctx, f);
    const tir_prim_func *g = NULL;
    assert_int_equal(tir_parse_func(ctx, printed, strlen(printed), &g), TIR_OK);
    assert_true(tir_struct_equal(f, g));
    assert_string_equal(tir_print(ctx, g), printed);
    assert_true(tir_struct_hash(f) == tir_struct_hash(g));
    /* verifier, visitor-based analyses, simplifier (mutator) */
    assert_int_equal(tir_verify(ctx, f), TIR_OK);
    tir_analyzer *a = tir_analyzer_create(ctx);
    assert_non_null(tir_analyzer_simplify_stmt(a, f->body));
    tir_analyzer_destroy(a);
    assert_non_null(tir_simplify(ctx, stored_value(f)));
    /* interpreter */
    int32_t A[NA] = {3, -1, 4, 1, -5, 9, 2, -6}, B[1] = {0}, want = 0;
    for (int i = 0; i < terms; i++) want += A[i % NA];
    tir_arg args[2] = {{.data = A}, {.data = B}};
    assert_int_equal(tir_interp_run(ctx, f, 2, args, NULL), TIR_OK);
    assert_int_equal(B[0], want);
    /* lowering, the simulator, codegen */
    const tir_prim_func *k = NULL;
    tir_status s = tir_lower(ctx, f, NULL, &k);
    if (s != TIR_OK) print_error("%.400s\n", tir_ctx_error(ctx));
    assert_int_equal(s, TIR_OK);
    B[0] = 0;
    assert_int_equal(tir_sim_run(ctx, k, 2, args, NULL, NULL), TIR_OK);
    assert_int_equal(B[0], want);
    const tir_module *m = NULL;
    s = tir_codegen(ctx, k, NULL, &m);
    if (s != TIR_OK) print_error("%.400s\n", tir_ctx_error(ctx));
    assert_int_equal(s, TIR_OK);
    assert_non_null(m->ptx);
}

static void test_deepest_accepted(void **st) {
    tir_ctx *ctx = *st;
    text t = {0};
    int terms = TIR_MAX_EXPR_DEPTH - 1; /* depth exactly TIR_MAX_EXPR_DEPTH */
    int loops = deepest_loops(ctx, &t, terms);
    assert_true(loops >= 150);
    deep_func(&t, loops, terms);
    const tir_prim_func *f = NULL;
    assert_int_equal(parse(ctx, &t, &f), TIR_OK);
    assert_int_equal(tir_expr_depth(stored_value(f), 1 << 30), TIR_MAX_EXPR_DEPTH);
    run_walkers(ctx, f, terms);
    /* the same tree through the constructors is equal and goes through too */
    const tir_prim_func *h = deep_func_api(ctx, loops, terms);
    assert_true(tir_struct_equal(f, h));
    assert_true(tir_struct_hash(f) == tir_struct_hash(h));
    run_walkers(ctx, h, terms);
    /* one term more is refused, at the start of the expression */
    deep_func(&t, 1, terms + 1);
    char want[128];
    snprintf(want, sizeof want, "6:24: expression nested too deeply (more than %d levels", TIR_MAX_EXPR_DEPTH);
    expect_error(ctx, &t, want);
    free(t.p);
}

/* ------------------------------------------------------------- extremes */

static void test_flat_sum_1e5(void **st) {
    tir_ctx *ctx = *st;
    text t = {0};
    add(&t, SIG "    B[0] = ");
    add_sum(&t, 100000);
    add(&t, "\n");
    expect_error(ctx, &t, "3:12: expression nested too deeply");
    /* the same inside parentheses, an index and a call: still refused */
    t.n = 0;
    add(&t, SIG "    B[0] = A[T.max(0, (");
    add_sum(&t, 100000);
    add(&t, ") %% 8)]\n");
    expect_error(ctx, &t, "3:12: expression nested too deeply");
    /* a balanced sum of 10^5 terms is shallow: it round-trips */
    t.n = 0;
    add(&t, SIG "    B[0] = ");
    add_balanced(&t, 0, 100000);
    add(&t, "\n");
    const tir_prim_func *f = NULL;
    assert_int_equal(parse(ctx, &t, &f), TIR_OK);
    assert_int_equal(tir_expr_depth(stored_value(f), 100), 19);
    const char *p = tir_print(ctx, f);
    const tir_prim_func *g = NULL;
    assert_int_equal(tir_parse_func(ctx, p, strlen(p), &g), TIR_OK);
    assert_true(tir_struct_equal(f, g));
    assert_string_equal(tir_print(ctx, g), p);
    t.n = 0;
    add(&t, SIG "    B[0] = ");
    for (int i = 0; i < 100000; i += 100) {
        add(&t, "%sT.max(", i ? " + " : "");
        add_sum(&t, 99);
        add(&t, ", 0)");
    }
    add(&t, "\n");
    /* 1000 groups of a 99-term sum: 1000 + 100 levels */
    expect_error(ctx, &t, "3:12: expression nested too deeply");
    free(t.p);
}

static void test_nested_parens_1e5(void **st) {
    tir_ctx *ctx = *st;
    text t = {0};
    add(&t, SIG "    B[0] = ");
    for (int i = 0; i < 100000; i++) add(&t, "(");
    add(&t, "A[0]");
    for (int i = 0; i < 100000; i++) add(&t, ")");
    add(&t, "\n");
    expect_error(ctx, &t, "3:");
    assert_non_null(strstr(tir_ctx_error(ctx), "nested too deeply"));
    /* brackets of every kind, and unclosed ones */
    const char *opens[] = {"[", "{", "T.exp(", "T.Cast(\"int32\", "};
    for (size_t k = 0; k < sizeof opens / sizeof *opens; k++) {
        t.n = 0;
        add(&t, SIG "    B[0] = ");
        for (int i = 0; i < 100000; i++) add(&t, "%s", opens[k]);
        add(&t, "\n");
        expect_error(ctx, &t, "3:");
    }
    free(t.p);
}

static void test_unary_chains_1e5(void **st) {
    tir_ctx *ctx = *st;
    text t = {0};
    add(&t, SIG "    B[0] = ");
    for (int i = 0; i < 100000; i++) add(&t, "- ");
    add(&t, "A[0]\n");
    expect_error(ctx, &t, "3:");
    assert_non_null(strstr(tir_ctx_error(ctx), "nesting too deep"));
    t.n = 0;
    add(&t, SIG "    B[0] = T.Select(");
    for (int i = 0; i < 100000; i++) add(&t, "not ");
    add(&t, "True, 1, 0)\n");
    expect_error(ctx, &t, "3:");
    t.n = 0;
    add(&t, SIG "    B[0] = T.Select(A[0] < 1");
    for (int i = 0; i < 100000; i++) add(&t, i % 2 ? " and A[1] < 2" : " or A[2] > 3");
    add(&t, ", 1, 0)\n");
    expect_error(ctx, &t, "3:12: expression nested too deeply"); /* the outermost expression */
    free(t.p);
}

static void test_nested_statements(void **st) {
    tir_ctx *ctx = *st;
    text t = {0};
    const char *heads[] = {"for i%d in T.serial(1):", "if A[%d] > 0:", "with T.block(\"b%d\"):",
                           "X%d = T.allocate((1,), \"int32\", scope=\"local\")"};
    for (size_t k = 0; k < sizeof heads / sizeof *heads; k++) {
        t.n = 0;
        add(&t, SIG);
        for (int i = 0; i < 10000; i++) {
            indent(&t, 1 + (k == 3 ? 0 : i));
            add(&t, heads[k], i % (k == 1 ? NA : 100000));
            add(&t, "\n");
        }
        indent(&t, k == 3 ? 1 : 10001);
        add(&t, "B[0] = 1\n");
        expect_error(ctx, &t, "");
        int line = 0, col = 0;
        assert_int_equal(sscanf(tir_ctx_error(ctx), "%d:%d:", &line, &col), 2);
        assert_true(line > 2 && line < 10004 && col >= 1);
    }
    free(t.p);
}

/* Identifiers of up to 255 characters round-trip; longer ones (up to
 * 10^5) are refused where they start. */
static void test_long_names(void **st) {
    tir_ctx *ctx = *st;
    text t = {0};
    enum { LEN = 100000 };
    char *name = malloc(LEN + 1);
    const int lens[] = {255, 256, LEN};
    for (int k = 0; k < 3; k++) {
        for (int i = 0; i < lens[k]; i++) name[i] = (char)('a' + i % 26);
        name[lens[k]] = '\0';
        t.n = 0;
        add(&t, "@T.prim_func\ndef f(%s: T.Buffer((4,), \"float32\")):\n", name);
        add(&t, "    for i in T.serial(4):\n        %s[i] = T.float32(1)\n", name);
        const tir_prim_func *f = NULL;
        tir_status s = parse(ctx, &t, &f);
        if (lens[k] > 255) {
            assert_int_equal(s, TIR_ERR_PARSE);
            assert_string_equal(tir_ctx_error(ctx), "2:7: identifier too long");
            continue;
        }
        if (s != TIR_OK) print_error("%.300s\n", tir_ctx_error(ctx));
        assert_non_null(f);
        const char *p = tir_print(ctx, f);
        const tir_prim_func *g = NULL;
        assert_int_equal(tir_parse_func(ctx, p, strlen(p), &g), TIR_OK);
        assert_true(tir_struct_equal(f, g));
        assert_string_equal(tir_print(ctx, g), p);
    }
    free(name);
    free(t.p);
}

/* --------------------------------------------------------- tir_expr_depth */

static void test_expr_depth(void **st) {
    tir_ctx *ctx = *st;
    assert_int_equal(tir_expr_depth(NULL, 10), 0);
    const tir_expr *x = tir_i32(ctx, 1);
    assert_int_equal(tir_expr_depth(x, 10), 1);
    /* a right-leaning chain built through the API, far past the limit:
     * measured without recursion, and the walk stops at the limit */
    const tir_expr *e = x;
    for (int i = 0; i < 1000000; i++) e = tir_add(ctx, x, e);
    assert_int_equal(tir_expr_depth(e, 5), 6);
    assert_int_equal(tir_expr_depth(e, TIR_MAX_EXPR_DEPTH), TIR_MAX_EXPR_DEPTH + 1);
    assert_int_equal(tir_expr_depth(e, 2000000), 1000001);
    /* the deepest operand counts, in any position */
    const tir_expr *deep = tir_cast_new(ctx, TIR_I32, tir_not_new(ctx, tir_lt(ctx, x, x)));
    assert_int_equal(tir_expr_depth(deep, 100), 4);
    const tir_expr *sel = tir_select_new(ctx, tir_bool(ctx, true), x, deep);
    assert_int_equal(tir_expr_depth(sel, 100), 5);
    const tir_var *v = tir_var_new(ctx, "v", TIR_I32);
    assert_int_equal(tir_expr_depth(tir_let_new(ctx, v, x, sel), 100), 6);
    assert_int_equal(tir_expr_depth(tir_let_new(ctx, v, sel, x), 100), 6);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_expr_depth, setup, teardown),
        cmocka_unit_test_setup_teardown(test_deepest_accepted, setup, teardown),
        cmocka_unit_test_setup_teardown(test_flat_sum_1e5, setup, teardown),
        cmocka_unit_test_setup_teardown(test_nested_parens_1e5, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unary_chains_1e5, setup, teardown),
        cmocka_unit_test_setup_teardown(test_nested_statements, setup, teardown),
        cmocka_unit_test_setup_teardown(test_long_names, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
