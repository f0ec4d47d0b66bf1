/* arith_test_util.h: compact expression builders, a tiny expression
 * printer for failure messages (the real printer lives elsewhere), and a
 * strict structural comparison for the arithmetic tests.
 *
 * tir_struct_equal pairs variables up to renaming, so `x + y` would equal
 * `y + x`.  expect_same() pins every test variable to itself first (by
 * comparing a sequence that evaluates each of them before the expression),
 * which makes the comparison exact about which variable is where.
 */
#ifndef ARITH_TEST_UTIL_H
#define ARITH_TEST_UTIL_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "minitir/ir.h"

static tir_ctx *C;

#define V(v) (&(v)->base)
#define I(c) tir_i32(C, (c))
#define I64(c) tir_int(C, TIR_I64, (c))
#define ADD(a, b) tir_add(C, (a), (b))
#define SUB(a, b) tir_sub(C, (a), (b))
#define MUL(a, b) tir_mul(C, (a), (b))
#define FDIV(a, b) tir_floordiv(C, (a), (b))
#define FMOD(a, b) tir_floormod(C, (a), (b))
#define TDIV(a, b) tir_binop_new(C, TIR_KIND_DIV, (a), (b))
#define TMOD(a, b) tir_binop_new(C, TIR_KIND_MOD, (a), (b))
#define MIN(a, b) tir_min(C, (a), (b))
#define MAX(a, b) tir_max(C, (a), (b))
#define LT(a, b) tir_binop_new(C, TIR_KIND_LT, (a), (b))
#define LE(a, b) tir_binop_new(C, TIR_KIND_LE, (a), (b))
#define GT(a, b) tir_binop_new(C, TIR_KIND_GT, (a), (b))
#define GE(a, b) tir_binop_new(C, TIR_KIND_GE, (a), (b))
#define EQ(a, b) tir_binop_new(C, TIR_KIND_EQ, (a), (b))
#define NE(a, b) tir_binop_new(C, TIR_KIND_NE, (a), (b))
#define AND(a, b) tir_binop_new(C, TIR_KIND_AND, (a), (b))
#define OR(a, b) tir_binop_new(C, TIR_KIND_OR, (a), (b))
#define NOT(a) tir_not_new(C, (a))
#define SEL(c, a, b) tir_select_new(C, (c), (a), (b))
#define CAST(t, v) tir_cast_new(C, (t), (v))
#define TRUE_ tir_bool(C, true)
#define FALSE_ tir_bool(C, false)

/* ---- a small printer, only for failure messages ---- */

typedef struct sbuf {
    char *p;
    size_t n, len;
} sbuf;

static void app(sbuf *b, const char *fmt, ...) {
    if (b->len >= b->n) return;
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(b->p + b->len, b->n - b->len, fmt, ap);
    va_end(ap);
    if (w > 0) b->len += (size_t)w;
}

static void show_rec(sbuf *b, const tir_expr *e) {
    static const char *const ops[] = {"+",   "-",   "*",  "/",  "%",  "//", "%",  "min", "max",
                                      "==",  "!=",  "<",  "<=", ">",  ">=", "&&", "||"};
    const tir_int_imm *i = tir_as_tir_int_imm(e);
    const tir_float_imm *f = tir_as_tir_float_imm(e);
    const tir_var *v = tir_as_tir_var(e);
    const tir_binop *bo = tir_as_tir_binop(e);
    char t[32];
    if (!e) {
        app(b, "NULL");
    } else if (i) {
        if (tir_dtype_is_bool(e->dtype)) app(b, "%s", i->value ? "T" : "F");
        else app(b, "%lld", (long long)i->value);
    } else if (f) {
        app(b, "%.17gf", f->value);
    } else if (v) {
        app(b, "%s", v->name);
    } else if (bo && (e->kind == TIR_KIND_MIN || e->kind == TIR_KIND_MAX)) {
        app(b, "%s(", ops[e->kind - TIR_KIND_ADD]);
        show_rec(b, bo->a);
        app(b, ", ");
        show_rec(b, bo->b);
        app(b, ")");
    } else if (bo) {
        app(b, "(");
        show_rec(b, bo->a);
        app(b, " %s ", ops[e->kind - TIR_KIND_ADD]);
        show_rec(b, bo->b);
        app(b, ")");
    } else if (e->kind == TIR_KIND_NOT) {
        app(b, "!");
        show_rec(b, ((const tir_not *)e)->a);
    } else if (e->kind == TIR_KIND_SELECT) {
        const tir_select *s = (const tir_select *)e;
        app(b, "select(");
        show_rec(b, s->cond);
        app(b, ", ");
        show_rec(b, s->t);
        app(b, ", ");
        show_rec(b, s->f);
        app(b, ")");
    } else if (e->kind == TIR_KIND_CAST) {
        app(b, "%s(", tir_dtype_str(e->dtype, t, sizeof t));
        show_rec(b, ((const tir_cast *)e)->value);
        app(b, ")");
    } else {
        app(b, "<%s>", tir_kind_name((tir_kind)e->kind));
    }
}

static const char *show(const tir_expr *e) {
    static char bufs[4][1024];
    static int next;
    sbuf b = {bufs[next++ & 3], sizeof bufs[0], 0};
    b.p[0] = '\0';
    show_rec(&b, e);
    return b.p;
}

/* ---- strict comparison ---- */

#define MAX_PINNED 16
static const tir_var *pinned[MAX_PINNED];
static int npinned;

static void pin(const tir_var *v) {
    if (npinned < MAX_PINNED) pinned[npinned++] = v;
}

static const tir_stmt *pinned_seq(const tir_expr *e) {
    const tir_stmt *s[MAX_PINNED + 1];
    for (int i = 0; i < npinned; i++) s[i] = tir_evaluate_new(C, V(pinned[i]));
    s[npinned] = tir_evaluate_new(C, e);
    return tir_seq_new(C, npinned + 1, s);
}

/* True when got and want are the same expression over the same variables;
 * otherwise writes a message into msg. */
static bool same_expr(const tir_expr *got, const tir_expr *want, char *msg, size_t n) {
    char why[512];
    if (tir_struct_equal_explain(pinned_seq(got), pinned_seq(want), why, sizeof why)) return true;
    snprintf(msg, n, "got %s, want %s (%s)", show(got), show(want), why);
    return false;
}

#endif
