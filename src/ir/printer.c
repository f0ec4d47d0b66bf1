/* printer.c: prints IR as TVMScript-style text (T.prim_func, T.grid,
 * T.block, T.axis.remap, ...), the form a TVM user reads without a manual.
 *
 * The text is lossless: parser.c reads it back into a structurally equal
 * function, and printing that again gives the same text.  Every choice
 * here that makes the text shorter (folding loop nests into T.grid, eliding
 * the trivial root block, T.axis.remap, `X = T.allocate(...)` without a
 * `with`) is made only when the parser's inverse rule rebuilds exactly the
 * same node; docs/text-format.md lists those rules.  Names are unique per
 * printed unit: two variables (or buffers) that share a name get suffixes
 * (`i`, `i_1`), because the parser binds one name to one object.
 *
 * tir_print_marked also records where each marked node starts (and, for
 * expressions, ends) in the output, and afterwards inserts a caret line
 * under every line holding one.
 */
#include <locale.h>
#include <math.h>
#include <string.h>

#include "text_internal.h"

/* ----------------------------------------------------------- small tables */

/* Set of names in use (the strings are owned by the name map). */
typedef struct name_set {
    const char **items;
    size_t n, cap;
} name_set;

static bool ns_has(const name_set *s, const char *k) {
    if (!s->cap) return false;
    size_t i = (size_t)ir_str_hash(k, strlen(k)) & (s->cap - 1);
    while (s->items[i]) {
        if (strcmp(s->items[i], k) == 0) return true;
        i = (i + 1) & (s->cap - 1);
    }
    return false;
}

static void ns_add(name_set *s, const char *k) {
    if (2 * (s->n + 1) > s->cap) {
        name_set ns = {0};
        ns.cap = s->cap ? s->cap * 2 : 64;
        ns.items = ir_xcalloc(ns.cap, sizeof *ns.items);
        for (size_t i = 0; i < s->cap; i++)
            if (s->items[i]) ns_add(&ns, s->items[i]);
        free(s->items);
        *s = ns;
    }
    size_t i = (size_t)ir_str_hash(k, strlen(k)) & (s->cap - 1);
    while (s->items[i]) {
        if (strcmp(s->items[i], k) == 0) return;
        i = (i + 1) & (s->cap - 1);
    }
    s->items[i] = k;
    s->n++;
}

/* ------------------------------------------------------- shared with parser */

/* printf and strtod follow LC_NUMERIC; the text always uses '.', so a
 * program that set a locale with a decimal comma gets the C locale for the
 * duration of the call. */
static locale_t numeric_c_begin(locale_t *old) {
    const char *dp = localeconv()->decimal_point;
    if (dp && dp[0] == '.' && dp[1] == '\0') return (locale_t)0;
    locale_t c = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
    if (c) *old = uselocale(c);
    return c;
}
static void numeric_c_end(locale_t c, locale_t old) {
    if (!c) return;
    uselocale(old);
    freelocale(c);
}

double ir_text_strtod(const char *s) {
    locale_t old = (locale_t)0, c = numeric_c_begin(&old);
    double v = strtod(s, NULL);
    numeric_c_end(c, old);
    return v;
}

void ir_text_format_double(double v, char *buf, size_t n) {
    locale_t old = (locale_t)0, c = numeric_c_begin(&old);
    int prec;
    for (prec = 1; prec <= 17; prec++) {
        snprintf(buf, n, "%.*g", prec, v);
        double back = strtod(buf, NULL);
        if (memcmp(&back, &v, sizeof v) == 0) break;
    }
    if (prec > 17) snprintf(buf, n, "%.17g", v);
    numeric_c_end(c, old);
}

/* Variables bound by enclosing Lets on both sides, paired. */
typedef struct let_pairs {
    const tir_var *a, *b;
    const struct let_pairs *up;
} let_pairs;

static bool same(const tir_expr *a, const tir_expr *b, const let_pairs *lp) {
    if (a == b) return true;
    if (!a || !b || a->kind != b->kind || !tir_dtype_eq(a->dtype, b->dtype)) return false;
    switch ((tir_kind)a->kind) {
    case TIR_KIND_INT_IMM: return ((const tir_int_imm *)a)->value == ((const tir_int_imm *)b)->value;
    case TIR_KIND_FLOAT_IMM: {
        double x = ((const tir_float_imm *)a)->value, y = ((const tir_float_imm *)b)->value;
        return memcmp(&x, &y, sizeof x) == 0;
    }
    case TIR_KIND_VAR:
        for (; lp; lp = lp->up)
            if (lp->a == (const tir_var *)a || lp->b == (const tir_var *)b)
                return lp->a == (const tir_var *)a && lp->b == (const tir_var *)b;
        return false; /* distinct free variables */
    case TIR_KIND_ADD: case TIR_KIND_SUB: case TIR_KIND_MUL: case TIR_KIND_DIV:
    case TIR_KIND_MOD: case TIR_KIND_FLOORDIV: case TIR_KIND_FLOORMOD: case TIR_KIND_MIN:
    case TIR_KIND_MAX: case TIR_KIND_EQ: case TIR_KIND_NE: case TIR_KIND_LT:
    case TIR_KIND_LE: case TIR_KIND_GT: case TIR_KIND_GE: case TIR_KIND_AND:
    case TIR_KIND_OR: {
        const tir_binop *x = (const void *)a, *y = (const void *)b;
        return same(x->a, y->a, lp) && same(x->b, y->b, lp);
    }
    case TIR_KIND_NOT: return same(((const tir_not *)a)->a, ((const tir_not *)b)->a, lp);
    case TIR_KIND_SELECT: {
        const tir_select *x = (const void *)a, *y = (const void *)b;
        return same(x->cond, y->cond, lp) && same(x->t, y->t, lp) && same(x->f, y->f, lp);
    }
    case TIR_KIND_CAST: return same(((const tir_cast *)a)->value, ((const tir_cast *)b)->value, lp);
    case TIR_KIND_BUFFER_LOAD: {
        const tir_buffer_load *x = (const void *)a, *y = (const void *)b;
        if (x->buffer != y->buffer || x->nidx != y->nidx) return false;
        for (int i = 0; i < x->nidx; i++)
            if (!same(x->indices[i], y->indices[i], lp)) return false;
        return true;
    }
    case TIR_KIND_RAMP: {
        const tir_ramp *x = (const void *)a, *y = (const void *)b;
        return x->lanes == y->lanes && same(x->start, y->start, lp) && same(x->stride, y->stride, lp);
    }
    case TIR_KIND_BROADCAST: {
        const tir_broadcast *x = (const void *)a, *y = (const void *)b;
        return x->lanes == y->lanes && same(x->value, y->value, lp);
    }
    case TIR_KIND_CALL: {
        const tir_call *x = (const void *)a, *y = (const void *)b;
        if (x->op != y->op || x->nargs != y->nargs) return false;
        for (int i = 0; i < x->nargs; i++)
            if (!same(x->args[i], y->args[i], lp)) return false;
        return true;
    }
    case TIR_KIND_LET: {
        /* The text defines a fresh variable per T.Let, so Lets are equal up
         * to renaming their own variable. */
        const tir_let *x = (const void *)a, *y = (const void *)b;
        if (!tir_dtype_eq(x->var->base.dtype, y->var->base.dtype) || !same(x->value, y->value, lp))
            return false;
        let_pairs in = {x->var, y->var, lp};
        return same(x->body, y->body, &in);
    }
    default: return false;
    }
}

bool ir_text_expr_same(const tir_expr *a, const tir_expr *b) { return same(a, b, NULL); }

tir_dtype ir_text_call_dtype(tir_intrin op, int nargs, const tir_expr *const *args) {
    switch (op) {
    case TIR_INTRIN_SYNCTHREADS:
    case TIR_INTRIN_CP_ASYNC:
    case TIR_INTRIN_CP_ASYNC_COMMIT:
    case TIR_INTRIN_CP_ASYNC_WAIT:
    case TIR_INTRIN_ATOMIC_ADD:
    case TIR_INTRIN_MMA_SYNC:
    case TIR_INTRIN_LDMATRIX:
    case TIR_INTRIN_WGMMA:
    case TIR_INTRIN_WGMMA_SYNC:
    case TIR_INTRIN_FRAG_FILL:
    case TIR_INTRIN_FRAG_LOAD:
    case TIR_INTRIN_FRAG_STORE: return TIR_VOID;
    case TIR_INTRIN_LANE_ID: return TIR_I32;
    case TIR_INTRIN_ADDRESS_OF: return TIR_HANDLE;
    default: return nargs > 0 ? args[0]->dtype : TIR_VOID;
    }
}

bool ir_text_int_fits(tir_dtype t, int64_t v) {
    switch ((tir_type_code)t.code) {
    case TIR_TYPE_BOOL: return v == 0 || v == 1;
    case TIR_TYPE_INT:
        if (t.bits == 8) return v >= INT8_MIN && v <= INT8_MAX;
        if (t.bits == 16) return v >= INT16_MIN && v <= INT16_MAX;
        if (t.bits == 32) return v >= INT32_MIN && v <= INT32_MAX;
        return true;
    case TIR_TYPE_UINT:
        if (t.bits == 8) return v >= 0 && v <= UINT8_MAX;
        if (t.bits == 16) return v >= 0 && v <= UINT16_MAX;
        if (t.bits == 32) return v >= 0 && v <= (int64_t)UINT32_MAX;
        return v >= 0;
    default: return false;
    }
}

/* ----------------------------------------------------------------- printer */

typedef struct span {
    size_t start, end; /* end == SIZE_MAX: to the end of the line */
} span;

typedef struct printer {
    tir_ctx *ctx;
    ir_strbuf out;
    int indent;
    ir_ptr_map names; /* object -> its name (heap string) */
    name_set used;
    ir_vec loops; /* enclosing tir_for, innermost last */
    int nmarks;
    const void *const *marks;
    span *spans;
    int nspans, capspans;
    const tir_prim_func *func; /* while printing a function */
    bool in_signature;
} printer;

static void put(printer *p, const char *s) { ir_sb_puts(&p->out, s); }
static void putc_(printer *p, char c) { ir_sb_putc(&p->out, c); }

static void newline(printer *p) {
    putc_(p, '\n');
}
static void begin_line(printer *p) {
    for (int i = 0; i < p->indent; i++) put(p, "    ");
}

static bool is_marked(const printer *p, const void *n) {
    for (int i = 0; i < p->nmarks; i++)
        if (p->marks[i] == n) return true;
    return false;
}

static void add_span(printer *p, size_t start, size_t end) {
    if (p->nspans == p->capspans) {
        int cap = p->capspans ? p->capspans * 2 : 8;
        span *s = ir_xrealloc(p->spans, sizeof *s * (size_t)cap);
        p->spans = s;
        p->capspans = cap;
    }
    p->spans[p->nspans].start = start;
    p->spans[p->nspans].end = end;
    p->nspans++;
}

/* A statement's mark covers the rest of the line it starts on. */
static void mark_line(printer *p, const void *n) {
    if (p->nmarks && is_marked(p, n)) add_span(p, p->out.len, SIZE_MAX);
}

/* A name for a variable or buffer: its own name made into an identifier,
 * with a suffix when another object already uses it. */
static const char *name_of(printer *p, const void *obj, const char *want) {
    char *have = ir_ptr_map_get(&p->names, obj);
    if (have) return have;
    char base[208];
    size_t n = 0;
    if (!want || !*want) want = "v";
    if (want[0] >= '0' && want[0] <= '9') {
        base[n++] = 'v';
        base[n++] = '_';
    }
    for (const char *s = want; *s && n < 200; s++) {
        char c = *s;
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '_';
        base[n++] = ok ? c : '_';
    }
    base[n] = '\0';
    char *cand = ir_xmalloc(n + 24);
    memcpy(cand, base, n + 1);
    for (unsigned k = 1; ir_text_reserved(cand, strlen(cand)) || ns_has(&p->used, cand); k++)
        snprintf(cand, n + 24, "%s_%u", base, k);
    ns_add(&p->used, cand);
    ir_ptr_map_put(&p->names, obj, cand);
    return cand;
}

static const char *var_name(printer *p, const tir_var *v) { return name_of(p, v, v->name); }
static const char *buf_name(printer *p, const tir_buffer *b) { return name_of(p, b, b->name); }

static void put_string(printer *p, const char *s) {
    putc_(p, '"');
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        switch (c) {
        case '"': put(p, "\\\""); break;
        case '\\': put(p, "\\\\"); break;
        case '\n': put(p, "\\n"); break;
        case '\r': put(p, "\\r"); break;
        case '\t': put(p, "\\t"); break;
        default:
            if (c < 0x20 || c == 0x7f)
                ir_sb_printf(&p->out, "\\x%02x", c);
            else
                putc_(p, (char)c);
        }
    }
    putc_(p, '"');
}

static void put_dtype(printer *p, tir_dtype t) {
    char buf[32];
    put(p, tir_dtype_str(t, buf, sizeof buf));
}

/* ------------------------------------------------------------- expressions */

enum { PREC_OR = 1, PREC_AND, PREC_NOT, PREC_CMP, PREC_ADD, PREC_MUL, PREC_UNARY, PREC_ATOM };

static int expr_prec(const tir_expr *e) {
    switch ((tir_kind)e->kind) {
    case TIR_KIND_INT_IMM: {
        const tir_int_imm *i = (const void *)e;
        return (tir_dtype_eq(e->dtype, TIR_I32) && i->value < 0 && ir_text_int_fits(TIR_I32, i->value))
                   ? PREC_UNARY
                   : PREC_ATOM;
    }
    case TIR_KIND_OR: return PREC_OR;
    case TIR_KIND_AND: return PREC_AND;
    case TIR_KIND_NOT: return PREC_NOT;
    case TIR_KIND_EQ: case TIR_KIND_NE: case TIR_KIND_LT: case TIR_KIND_LE:
    case TIR_KIND_GT: case TIR_KIND_GE: return PREC_CMP;
    case TIR_KIND_ADD: case TIR_KIND_SUB: return PREC_ADD;
    case TIR_KIND_MUL: case TIR_KIND_FLOORDIV: case TIR_KIND_FLOORMOD: return PREC_MUL;
    case TIR_KIND_DIV: return tir_dtype_is_float(e->dtype) ? PREC_MUL : PREC_ATOM;
    default: return PREC_ATOM;
    }
}

static void print_expr(printer *p, const tir_expr *e);

static void print_operand(printer *p, const tir_expr *e, int min_prec) {
    if (expr_prec(e) < min_prec) {
        putc_(p, '(');
        print_expr(p, e);
        putc_(p, ')');
    } else {
        print_expr(p, e);
    }
}

static void print_args(printer *p, int n, const tir_expr *const *args) {
    for (int i = 0; i < n; i++) {
        if (i) put(p, ", ");
        print_expr(p, args[i]);
    }
}

static void print_int_imm(printer *p, tir_dtype t, int64_t v) {
    if (tir_dtype_is_bool(t) && (v == 0 || v == 1)) {
        put(p, v ? "True" : "False");
    } else if (tir_dtype_eq(t, TIR_I32) && ir_text_int_fits(t, v)) {
        ir_sb_printf(&p->out, "%lld", (long long)v);
    } else {
        /* Out-of-range values print too, but do not parse back. */
        put(p, "T.");
        put_dtype(p, t);
        ir_sb_printf(&p->out, "(%lld)", (long long)v);
    }
}

static void print_float_imm(printer *p, tir_dtype t, double v) {
    put(p, "T.");
    put_dtype(p, t);
    putc_(p, '(');
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    if (isnan(v)) {
        if (bits == 0x7ff8000000000000ull)
            put(p, "\"nan\"");
        else
            ir_sb_printf(&p->out, "\"nan:0x%016llx\"", (unsigned long long)bits);
    } else if (isinf(v)) {
        put(p, v > 0 ? "\"inf\"" : "\"-inf\"");
    } else {
        char buf[64];
        ir_text_format_double(v, buf, sizeof buf);
        put(p, buf);
    }
    putc_(p, ')');
}

static const char *binop_infix(const tir_expr *e) {
    switch ((tir_kind)e->kind) {
    case TIR_KIND_ADD: return " + ";
    case TIR_KIND_SUB: return " - ";
    case TIR_KIND_MUL: return " * ";
    case TIR_KIND_DIV: return tir_dtype_is_float(e->dtype) ? " / " : NULL;
    case TIR_KIND_FLOORDIV: return " // ";
    case TIR_KIND_FLOORMOD: return " % ";
    case TIR_KIND_EQ: return " == ";
    case TIR_KIND_NE: return " != ";
    case TIR_KIND_LT: return " < ";
    case TIR_KIND_LE: return " <= ";
    case TIR_KIND_GT: return " > ";
    case TIR_KIND_GE: return " >= ";
    case TIR_KIND_AND: return " and ";
    case TIR_KIND_OR: return " or ";
    default: return NULL;
    }
}

static const char *binop_call(tir_kind k) {
    switch (k) {
    case TIR_KIND_DIV: return "T.truncdiv";
    case TIR_KIND_MOD: return "T.truncmod";
    case TIR_KIND_MIN: return "T.min";
    case TIR_KIND_MAX: return "T.max";
    default: return "?";
    }
}

static void print_expr_inner(printer *p, const tir_expr *e) {
    switch ((tir_kind)e->kind) {
    case TIR_KIND_INT_IMM: print_int_imm(p, e->dtype, ((const tir_int_imm *)e)->value); return;
    case TIR_KIND_FLOAT_IMM: print_float_imm(p, e->dtype, ((const tir_float_imm *)e)->value); return;
    case TIR_KIND_VAR: put(p, var_name(p, (const tir_var *)e)); return;
    case TIR_KIND_ADD: case TIR_KIND_SUB: case TIR_KIND_MUL: case TIR_KIND_DIV:
    case TIR_KIND_MOD: case TIR_KIND_FLOORDIV: case TIR_KIND_FLOORMOD: case TIR_KIND_MIN:
    case TIR_KIND_MAX: case TIR_KIND_EQ: case TIR_KIND_NE: case TIR_KIND_LT:
    case TIR_KIND_LE: case TIR_KIND_GT: case TIR_KIND_GE: case TIR_KIND_AND:
    case TIR_KIND_OR: {
        const tir_binop *b = (const void *)e;
        const char *op = binop_infix(e);
        if (!op) {
            put(p, binop_call((tir_kind)e->kind));
            putc_(p, '(');
            print_expr(p, b->a);
            put(p, ", ");
            print_expr(p, b->b);
            putc_(p, ')');
            return;
        }
        int prec = expr_prec(e);
        /* Left-associative; comparisons do not chain, so both sides of
         * one need parentheses at the same level. */
        print_operand(p, b->a, prec == PREC_CMP ? prec + 1 : prec);
        put(p, op);
        print_operand(p, b->b, prec + 1);
        return;
    }
    case TIR_KIND_NOT:
        put(p, "not ");
        print_operand(p, ((const tir_not *)e)->a, PREC_NOT);
        return;
    case TIR_KIND_SELECT: {
        const tir_select *s = (const void *)e;
        put(p, "T.Select(");
        print_expr(p, s->cond);
        put(p, ", ");
        print_expr(p, s->t);
        put(p, ", ");
        print_expr(p, s->f);
        putc_(p, ')');
        return;
    }
    case TIR_KIND_CAST:
        put(p, "T.Cast(\"");
        put_dtype(p, e->dtype);
        put(p, "\", ");
        print_expr(p, ((const tir_cast *)e)->value);
        putc_(p, ')');
        return;
    case TIR_KIND_BUFFER_LOAD: {
        const tir_buffer_load *l = (const void *)e;
        put(p, buf_name(p, l->buffer));
        putc_(p, '[');
        if (l->nidx == 0) put(p, "()");
        print_args(p, l->nidx, l->indices);
        putc_(p, ']');
        return;
    }
    case TIR_KIND_RAMP: {
        const tir_ramp *r = (const void *)e;
        put(p, "T.Ramp(");
        print_expr(p, r->start);
        put(p, ", ");
        print_expr(p, r->stride);
        ir_sb_printf(&p->out, ", %d)", r->lanes);
        return;
    }
    case TIR_KIND_BROADCAST: {
        const tir_broadcast *b = (const void *)e;
        put(p, "T.Broadcast(");
        print_expr(p, b->value);
        ir_sb_printf(&p->out, ", %d)", b->lanes);
        return;
    }
    case TIR_KIND_CALL: {
        const tir_call *c = (const void *)e;
        if (tir_dtype_eq(e->dtype, ir_text_call_dtype(c->op, c->nargs, c->args))) {
            ir_sb_printf(&p->out, "T.%s(", tir_intrin_name(c->op));
        } else {
            put(p, "T.call_intrin(\"");
            put_dtype(p, e->dtype);
            ir_sb_printf(&p->out, "\", \"%s\"%s", tir_intrin_name(c->op), c->nargs ? ", " : "");
        }
        print_args(p, c->nargs, c->args);
        putc_(p, ')');
        return;
    }
    case TIR_KIND_LET: {
        const tir_let *l = (const void *)e;
        put(p, "T.Let(");
        put(p, var_name(p, l->var));
        put(p, ", ");
        print_expr(p, l->value);
        put(p, ", ");
        print_expr(p, l->body);
        putc_(p, ')');
        return;
    }
    default: ir_sb_printf(&p->out, "<%s>", tir_kind_name((tir_kind)e->kind)); return;
    }
}

static void print_expr(printer *p, const tir_expr *e) {
    if (!e) {
        put(p, "None");
        return;
    }
    size_t start = p->out.len;
    /* A variable first met in a buffer parameter's shape is defined right
     * there; only int32 ones can be written as a bare name. */
    const tir_var *v = tir_as_tir_var(e);
    if (v && p->in_signature && !ir_ptr_map_get(&p->names, v) &&
        !tir_dtype_eq(v->base.dtype, TIR_I32)) {
        put(p, "T.var(\"");
        put_dtype(p, v->base.dtype);
        put(p, "\", \"");
        put(p, var_name(p, v));
        put(p, "\")");
    } else {
        print_expr_inner(p, e);
    }
    if (p->nmarks && is_marked(p, e)) add_span(p, start, p->out.len);
}

/* -------------------------------------------------------- ranges and stops */

static bool is_zero(const tir_expr *e) {
    int64_t v;
    return tir_expr_const_int(e, &v) && v == 0 && !tir_dtype_is_bool(e->dtype);
}

/* Prints the exclusive end of [min, min + extent).  The parser inverts
 * it: both constant -> the difference; min == 0 -> the stop itself;
 * stop == min + e (same min) -> e; else stop - min. */
static void print_stop(printer *p, const tir_expr *min, const tir_expr *extent) {
    int64_t a, b, s;
    if (is_zero(min)) {
        print_expr(p, extent);
        return;
    }
    if (tir_expr_const_int(min, &a) && tir_expr_const_int(extent, &b) &&
        tir_dtype_eq(min->dtype, extent->dtype) && tir_dtype_is_int(min->dtype) &&
        !__builtin_add_overflow(a, b, &s) && ir_text_int_fits(min->dtype, s)) {
        print_int_imm(p, min->dtype, s);
        return;
    }
    /* min + extent, parenthesised like an Add node */
    print_operand(p, min, PREC_ADD);
    put(p, " + ");
    print_operand(p, extent, PREC_ADD + 1);
}

/* "extent" when min is a zero of the same type, else "min, stop". */
static void print_min_stop(printer *p, const tir_expr *min, const tir_expr *extent) {
    if (is_zero(min) && tir_dtype_eq(min->dtype, extent->dtype)) {
        print_expr(p, extent);
        return;
    }
    print_expr(p, min);
    put(p, ", ");
    print_stop(p, min, extent);
}

static void print_region(printer *p, const tir_buffer_region *r) {
    put(p, buf_name(p, r->buffer));
    putc_(p, '[');
    if (r->ndim == 0) put(p, "()");
    for (int i = 0; i < r->ndim; i++) {
        if (i) put(p, ", ");
        const tir_range *g = &r->ranges[i];
        int64_t one;
        if (tir_expr_const_int(g->extent, &one) && one == 1 &&
            tir_dtype_eq(g->extent->dtype, g->min->dtype)) {
            print_expr(p, g->min);
        } else {
            print_expr(p, g->min);
            putc_(p, ':');
            print_stop(p, g->min, g->extent);
        }
    }
    putc_(p, ']');
}

static void print_annots(printer *p, int n, const tir_annot *a) {
    putc_(p, '{');
    for (int i = 0; i < n; i++) {
        if (i) put(p, ", ");
        put_string(p, a[i].key);
        put(p, ": ");
        switch (a[i].kind) {
        case TIR_ANNOT_INT: ir_sb_printf(&p->out, "%lld", (long long)a[i].i); break;
        case TIR_ANNOT_STR: put_string(p, a[i].s ? a[i].s : ""); break;
        case TIR_ANNOT_INTS:
            putc_(p, '[');
            for (int j = 0; j < a[i].nints; j++)
                ir_sb_printf(&p->out, "%s%lld", j ? ", " : "", (long long)a[i].ints[j]);
            putc_(p, ']');
            break;
        }
    }
    putc_(p, '}');
}

/* "(shape), "dtype"" plus the keyword arguments that differ from the
 * defaults: strides, elem_offset, scope, align. */
static void print_buffer_args(printer *p, const tir_buffer *b) {
    putc_(p, '(');
    print_args(p, b->ndim, b->shape);
    if (b->ndim == 1) putc_(p, ',');
    put(p, "), \"");
    put_dtype(p, b->dtype);
    putc_(p, '"');
    if (b->strides) {
        put(p, ", strides=(");
        print_args(p, b->ndim, b->strides);
        if (b->ndim == 1) putc_(p, ',');
        putc_(p, ')');
    }
    int64_t off;
    if (b->elem_offset && !(tir_expr_const_int(b->elem_offset, &off) && off == 0 &&
                            tir_dtype_eq(b->elem_offset->dtype, TIR_I32))) {
        put(p, ", elem_offset=");
        print_expr(p, b->elem_offset);
    }
    if (b->scope != TIR_SCOPE_GLOBAL) {
        put(p, ", scope=");
        put_string(p, tir_scope_name(b->scope));
    }
    if (b->align != ir_default_align(b->dtype)) ir_sb_printf(&p->out, ", align=%d", b->align);
}

/* T.allocate's arguments: the buffer's, then its annotations if any. */
static void print_alloc_args(printer *p, const tir_allocate *a) {
    print_buffer_args(p, a->buffer);
    if (a->nannots) {
        put(p, ", annotations=");
        print_annots(p, a->nannots, a->annots);
    }
}

/* -------------------------------------------------------------- statements */

static void print_stmts(printer *p, const tir_stmt *s);
static void print_stmt(printer *p, const tir_stmt *s, bool tail);

static void print_suite(printer *p, const tir_stmt *s) {
    p->indent++;
    print_stmts(p, s);
    p->indent--;
}

static bool plain_serial(const tir_for *f) {
    return f->kind == TIR_FOR_SERIAL && f->nannots == 0 && is_zero(f->min) &&
           tir_dtype_eq(f->min->dtype, f->extent->dtype);
}

static void print_for(printer *p, const tir_for *f) {
    const tir_for *chain[64];
    int n = 0;
    chain[n++] = f;
    if (plain_serial(f)) {
        const tir_for *g;
        /* T.grid evaluates every extent outside the nest, so an extent that
         * uses an outer loop's variable stops the folding. */
        while (n < 64 && (g = tir_as_tir_for(chain[n - 1]->body)) && plain_serial(g)) {
            bool uses = false;
            for (int i = 0; i < n && !uses; i++) uses = tir_uses_var(g->extent, chain[i]->var);
            if (uses) break;
            chain[n++] = g;
        }
    }
    begin_line(p);
    if (n > 1) {
        put(p, "for ");
        for (int i = 0; i < n; i++) {
            if (i) put(p, ", ");
            size_t at = p->out.len;
            put(p, var_name(p, chain[i]->var));
            if (p->nmarks && is_marked(p, chain[i])) add_span(p, at, p->out.len);
        }
        put(p, " in T.grid(");
        for (int i = 0; i < n; i++) {
            if (i) put(p, ", ");
            print_expr(p, chain[i]->extent);
        }
        put(p, "):");
    } else {
        mark_line(p, f);
        put(p, "for ");
        put(p, var_name(p, f->var));
        put(p, " in T.");
        put(p, tir_for_kind_name(f->kind));
        putc_(p, '(');
        if (f->kind == TIR_FOR_THREAD_BINDING) {
            print_expr(p, f->min);
            put(p, ", ");
            print_stop(p, f->min, f->extent);
            put(p, ", thread=");
            put_string(p, f->thread_tag ? f->thread_tag : "");
        } else {
            print_min_stop(p, f->min, f->extent);
        }
        if (f->nannots) {
            put(p, ", annotations=");
            print_annots(p, f->nannots, f->annots);
        }
        put(p, "):");
    }
    newline(p);
    for (int i = 0; i < n; i++) ir_vec_push(&p->loops, chain[i]);
    print_suite(p, chain[n - 1]->body);
    p->loops.n -= n;
}

/* The enclosing loop whose variable a block iterator can be remapped
 * from: bound to the loop var itself over exactly the loop's domain. */
static bool remappable(const printer *p, const tir_iter_var *iv, const tir_expr *value) {
    const tir_var *v = tir_as_tir_var(value);
    if (!v) return false;
    for (int i = p->loops.n - 1; i >= 0; i--) {
        const tir_for *f = p->loops.items[i];
        if (f->var == v)
            return ir_text_expr_same(iv->dom.min, f->min) &&
                   ir_text_expr_same(iv->dom.extent, f->extent);
    }
    return false;
}

static void print_iters(printer *p, const tir_block *b, const tir_expr *const *values) {
    int i = 0;
    while (i < b->niters) {
        int j = i;
        while (values && j < b->niters && remappable(p, &b->iters[j], values[j])) j++;
        begin_line(p);
        if (j > i) {
            for (int k = i; k < j; k++) {
                if (k > i) put(p, ", ");
                put(p, var_name(p, b->iters[k].var));
            }
            put(p, " = T.axis.remap(\"");
            for (int k = i; k < j; k++) putc_(p, b->iters[k].kind == TIR_ITER_REDUCE ? 'R' : 'S');
            put(p, "\", [");
            print_args(p, j - i, values + i);
            put(p, "])");
            i = j;
        } else {
            const tir_iter_var *iv = &b->iters[i];
            put(p, var_name(p, iv->var));
            put(p, iv->kind == TIR_ITER_REDUCE ? " = T.axis.reduce(" : " = T.axis.spatial(");
            if (is_zero(iv->dom.min) && tir_dtype_eq(iv->dom.min->dtype, iv->dom.extent->dtype)) {
                print_expr(p, iv->dom.extent);
            } else {
                putc_(p, '(');
                print_expr(p, iv->dom.min);
                put(p, ", ");
                print_stop(p, iv->dom.min, iv->dom.extent);
                putc_(p, ')');
            }
            if (values) {
                put(p, ", ");
                print_expr(p, values[i]);
            }
            putc_(p, ')');
            i++;
        }
        newline(p);
    }
}

static void print_regions(printer *p, const char *what, int n, const tir_buffer_region *r) {
    if (!n) return;
    begin_line(p);
    put(p, what);
    putc_(p, '(');
    for (int i = 0; i < n; i++) {
        if (i) put(p, ", ");
        print_region(p, &r[i]);
    }
    putc_(p, ')');
    newline(p);
}

/* realize may be NULL for a Block printed on its own. */
static void print_block(printer *p, const tir_block_realize *realize, const tir_block *b) {
    begin_line(p);
    if (realize) mark_line(p, realize);
    mark_line(p, b);
    put(p, "with T.block(");
    put_string(p, b->name);
    put(p, "):");
    newline(p);
    p->indent++;
    print_iters(p, b, realize ? realize->values : NULL);
    int64_t t;
    if (realize && !(tir_expr_const_int(realize->predicate, &t) && t == 1 &&
                     tir_dtype_is_bool(realize->predicate->dtype))) {
        begin_line(p);
        put(p, "T.where(");
        print_expr(p, realize->predicate);
        putc_(p, ')');
        newline(p);
    }
    print_regions(p, "T.reads", b->nreads, b->reads);
    print_regions(p, "T.writes", b->nwrites, b->writes);
    if (b->nannots) {
        begin_line(p);
        put(p, "T.block_attr(");
        print_annots(p, b->nannots, b->annots);
        putc_(p, ')');
        newline(p);
    }
    for (int i = 0; i < b->nallocs; i++) {
        begin_line(p);
        put(p, buf_name(p, b->allocs[i]));
        put(p, " = T.alloc_buffer(");
        print_buffer_args(p, b->allocs[i]);
        putc_(p, ')');
        newline(p);
    }
    if (b->init) {
        begin_line(p);
        put(p, "with T.init():");
        newline(p);
        print_suite(p, b->init);
    }
    print_stmts(p, b->body);
    p->indent--;
}

static void print_stmt(printer *p, const tir_stmt *s, bool tail) {
    switch ((tir_kind)s->kind) {
    case TIR_KIND_FOR: print_for(p, (const tir_for *)s); return;
    case TIR_KIND_BLOCK_REALIZE: {
        const tir_block_realize *r = (const void *)s;
        print_block(p, r, r->block);
        return;
    }
    case TIR_KIND_BLOCK: print_block(p, NULL, (const tir_block *)s); return;
    case TIR_KIND_BUFFER_STORE: {
        const tir_buffer_store *st = (const void *)s;
        begin_line(p);
        mark_line(p, s);
        put(p, buf_name(p, st->buffer));
        putc_(p, '[');
        if (st->nidx == 0) put(p, "()");
        print_args(p, st->nidx, st->indices);
        put(p, "] = ");
        print_expr(p, st->value);
        newline(p);
        return;
    }
    case TIR_KIND_SEQ: print_stmts(p, s); return;
    case TIR_KIND_IF: {
        const tir_if *f = (const void *)s;
        begin_line(p);
        mark_line(p, s);
        put(p, "if ");
        print_expr(p, f->cond);
        putc_(p, ':');
        newline(p);
        print_suite(p, f->then_s);
        if (f->else_s) {
            begin_line(p);
            put(p, "else:");
            newline(p);
            print_suite(p, f->else_s);
        }
        return;
    }
    case TIR_KIND_ALLOCATE: {
        /* In tail position the rest of the statement list is the body
         * (`X = T.allocate(...)`); elsewhere it needs a `with`. */
        const tir_allocate *a = (const void *)s;
        begin_line(p);
        mark_line(p, s);
        if (tail) {
            put(p, buf_name(p, a->buffer));
            put(p, " = T.allocate(");
            print_alloc_args(p, a);
            putc_(p, ')');
            newline(p);
            print_stmts(p, a->body);
        } else {
            put(p, "with T.allocate(");
            print_alloc_args(p, a);
            put(p, ") as ");
            put(p, buf_name(p, a->buffer));
            putc_(p, ':');
            newline(p);
            print_suite(p, a->body);
        }
        return;
    }
    case TIR_KIND_EVALUATE: {
        const tir_expr *v = ((const tir_evaluate *)s)->value;
        begin_line(p);
        mark_line(p, s);
        if (v->kind == TIR_KIND_CALL) {
            print_expr(p, v);
        } else {
            put(p, "T.evaluate(");
            print_expr(p, v);
            putc_(p, ')');
        }
        newline(p);
        return;
    }
    default:
        begin_line(p);
        ir_sb_printf(&p->out, "<%s>", tir_kind_name((tir_kind)s->kind));
        newline(p);
        return;
    }
}

static void print_stmts(printer *p, const tir_stmt *s) {
    const tir_seq *q = tir_as_tir_seq(s);
    /* A sequence has no line of its own: mark its first one. */
    if (q && p->nmarks && is_marked(p, s)) add_span(p, p->out.len + 4 * (size_t)p->indent, SIZE_MAX);
    if (!q) {
        print_stmt(p, s, true);
        return;
    }
    for (int i = 0; i < q->n; i++) print_stmt(p, q->stmts[i], i == q->n - 1);
}

/* --------------------------------------------------------------- functions */

static bool has_block_pre(tir_visitor *v, const tir_node *n) {
    if (n->kind == TIR_KIND_BLOCK || n->kind == TIR_KIND_BLOCK_REALIZE) *(bool *)v->user = true;
    return !*(bool *)v->user;
}

static bool contains_block(const tir_stmt *s) {
    bool found = false;
    tir_visitor v = {.pre = has_block_pre, .user = &found};
    tir_visit(&v, s);
    return found;
}

static const tir_block_realize *as_root(const tir_stmt *s) {
    const tir_block_realize *r = tir_as_tir_block_realize(s);
    return r && strcmp(r->block->name, "root") == 0 ? r : NULL;
}

/* The root block the parser adds by itself around a body with blocks. */
static bool implicit_root(const tir_block_realize *r) {
    const tir_block *b = r->block;
    int64_t t;
    return r->nvalues == 0 && tir_expr_const_int(r->predicate, &t) && t == 1 &&
           tir_dtype_is_bool(r->predicate->dtype) && b->niters == 0 && b->nreads == 0 &&
           b->nwrites == 0 && !b->init && b->nallocs == 0 && b->nannots == 0 &&
           !as_root(b->body) && contains_block(b->body);
}

static void print_func(printer *p, const tir_prim_func *f) {
    p->func = f;
    /* Parameters claim their names before anything in their shapes. */
    for (int i = 0; i < f->nparams; i++) {
        if (f->buffer_map[i])
            buf_name(p, f->buffer_map[i]);
        else
            var_name(p, f->params[i]);
    }
    const tir_stmt *body = f->body;
    const tir_block_realize *root = as_root(body);
    bool elide = root && implicit_root(root);
    bool no_implicit = !root && contains_block(body);
    bool name_ok = ir_text_is_ident(f->name);
    put(p, "@T.prim_func");
    if (no_implicit || !name_ok) {
        putc_(p, '(');
        if (no_implicit) put(p, "implicit_root=False");
        if (!name_ok) {
            if (no_implicit) put(p, ", ");
            put(p, "name=");
            put_string(p, f->name);
        }
        putc_(p, ')');
    }
    newline(p);
    put(p, "def ");
    put(p, name_ok ? f->name : name_of(p, f, f->name));
    putc_(p, '(');
    p->in_signature = true;
    for (int i = 0; i < f->nparams; i++) {
        if (i) put(p, ", ");
        if (f->buffer_map[i]) {
            put(p, buf_name(p, f->buffer_map[i]));
            put(p, ": T.Buffer(");
            print_buffer_args(p, f->buffer_map[i]);
            putc_(p, ')');
        } else {
            put(p, var_name(p, f->params[i]));
            put(p, ": T.");
            put_dtype(p, f->params[i]->base.dtype);
        }
    }
    p->in_signature = false;
    put(p, "):");
    newline(p);
    p->indent = 1;
    if (f->nattrs) {
        begin_line(p);
        put(p, "T.func_attr(");
        print_annots(p, f->nattrs, f->attrs);
        putc_(p, ')');
        newline(p);
    }
    print_stmts(p, elide ? root->block->body : body);
    p->indent = 0;
}

/* ------------------------------------------------------------ entry points */

static void print_node(printer *p, const void *node) {
    const tir_node *n = node;
    if (!n) {
        put(p, "None");
        return;
    }
    tir_kind k = (tir_kind)n->kind;
    if (tir_kind_is_expr(k)) {
        print_expr(p, node);
    } else if (tir_kind_is_stmt(k)) {
        print_stmts(p, node);
    } else if (k == TIR_KIND_BUFFER) {
        const tir_buffer *b = node;
        put(p, buf_name(p, b));
        put(p, ": T.Buffer(");
        print_buffer_args(p, b);
        putc_(p, ')');
    } else if (k == TIR_KIND_PRIM_FUNC) {
        print_func(p, node);
    } else {
        ir_sb_printf(&p->out, "<%s>", tir_kind_name(k));
    }
}

static int span_cmp(const void *a, const void *b) {
    const span *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

/* Inserts, after every line holding a marked node, a line with carets
 * under the marked text. */
static const char *add_carets(printer *p) {
    const char *s = p->out.data ? p->out.data : "";
    size_t len = p->out.len;
    qsort(p->spans, (size_t)p->nspans, sizeof *p->spans, span_cmp);
    ir_strbuf r, carets;
    ir_sb_init(&r);
    ir_sb_init(&carets);
    int si = 0;
    size_t ls = 0;
    while (ls < len) {
        const char *nl = memchr(s + ls, '\n', len - ls);
        size_t le = nl ? (size_t)(nl - s) : len;
        for (size_t i = ls; i < le; i++) ir_sb_putc(&r, s[i]);
        ir_sb_putc(&r, '\n');
        carets.len = 0;
        while (si < p->nspans && p->spans[si].start <= le) {
            size_t a = p->spans[si].start - ls, b = p->spans[si].end;
            b = (b > le ? le : b) - ls;
            if (b <= a) b = a + 1;
            while (carets.len < b) ir_sb_putc(&carets, ' ');
            for (size_t i = a; i < b; i++) carets.data[i] = '^';
            si++;
        }
        if (carets.len) {
            ir_sb_puts(&r, carets.data);
            ir_sb_putc(&r, '\n');
        }
        ls = le + 1;
    }
    ir_sb_free(&carets);
    return ir_sb_finish(&r, p->ctx);
}

static const char *print_impl(tir_ctx *ctx, const void *node, int nmarks,
                              const void *const *marks) {
    printer p;
    memset(&p, 0, sizeof p);
    p.ctx = ctx;
    p.nmarks = marks ? nmarks : 0;
    p.marks = marks;
    ir_sb_init(&p.out);
    print_node(&p, node);
    const char *r;
    if (p.nspans) {
        r = add_carets(&p);
        ir_sb_free(&p.out);
    } else {
        r = ir_sb_finish(&p.out, ctx);
    }
    for (size_t i = 0; i < p.names.cap; i++)
        if (p.names.keys[i]) free(p.names.vals[i]);
    ir_ptr_map_free(&p.names);
    free(p.used.items);
    ir_vec_free(&p.loops);
    free(p.spans);
    return r;
}

const char *tir_print(tir_ctx *ctx, const void *node) { return print_impl(ctx, node, 0, NULL); }

const char *tir_print_marked(tir_ctx *ctx, const void *node, int nmarks,
                             const void *const *marks) {
    return print_impl(ctx, node, nmarks, marks);
}
