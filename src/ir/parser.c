/* parser.c: reads one T.prim_func written in the TVMScript-style text that
 * printer.c writes (and the hand-written variations below) back into IR.
 *
 * It is a recursive descent parser over the tokens of lexer.c.  Every
 * check a node constructor would assert on is made here first and reported
 * as "line:col: message" (TIR_ERR_TYPE for ill-typed text, TIR_ERR_PARSE
 * for the rest); nesting is bounded (IR_TEXT_MAX_DEPTH) so hostile input
 * cannot exhaust the stack.  Nodes and the temporary lists used to build
 * them live in the ctx arena; the token array and the symbol table are the
 * only heap memory and are freed on every path in tir_parse_func.
 *
 * Grammar (a subset of Python; docs/text-format.md has the prose):
 *
 *   file      := [import-line]* decorator 'def' NAME '(' params ')' ['->' 'None'] ':'
 *                NEWLINE INDENT ['T.func_attr' '(' dict ')' NEWLINE]* stmt+ DEDENT
 *   decorator := '@' 'T.prim_func' ['(' [kwarg (',' kwarg)*] ')'] NEWLINE
 *                kwargs: implicit_root=True|False, name="..."
 *   params    := [param (',' param)* [',']]
 *   param     := NAME ':' 'T.Buffer' '(' bufargs ')' | NAME ':' 'T.' DTYPE
 *   bufargs   := shape ',' STRING [',' STRING] (',' KEY '=' value)*
 *                shape: '(' [expr (',' expr)* [',']] ')' | '[' ... ']' | expr
 *                keys: strides=shape, elem_offset=expr, scope=STRING, align=INT;
 *                the second STRING (a scope) and annotations=dict only for
 *                T.allocate.  In a buffer parameter, 'T.var' '(' STRING ','
 *                STRING ')' defines a shape variable of a given dtype and name.
 *   stmt      := 'for' NAME (',' NAME)* 'in' loop ':' suite
 *              | 'if' expr ':' suite [('else' ':' suite) | ('elif' ...)]
 *              | 'with' 'T.block' '(' STRING ')' ':' block_suite
 *              | 'with' 'T.allocate' '(' bufargs ')' 'as' NAME ':' suite
 *              | NAME '=' 'T.allocate' '(' bufargs ')' NEWLINE stmt*   (the rest of the
 *                suite is the allocation's body)
 *              | NAME '[' indices ']' '=' expr NEWLINE
 *              | 'T.evaluate' '(' expr ')' NEWLINE
 *              | call NEWLINE                                (an intrinsic call)
 *   loop      := 'T.serial' | 'T.parallel' | 'T.vectorized' | 'T.unroll'
 *                   '(' [start ','] stop [',' 'annotations' '=' dict] ')'
 *              | 'T.thread_binding' '(' [start ','] stop ',' 'thread' '=' STRING
 *                   [',' 'annotations' '=' dict] ')'
 *              | 'T.grid' '(' extent (',' extent)* ')' | 'range' '(' [start ','] stop ')'
 *   block_suite := NEWLINE INDENT header* stmt* DEDENT, header being
 *                NAME (',' NAME)* '=' 'T.axis.remap' '(' STRING ',' '[' NAME (',' NAME)* ']' ')'
 *              | NAME '=' ('T.axis.spatial' | 'T.axis.reduce' | 'T.axis.S' | 'T.axis.R')
 *                   '(' dom ',' expr ')'   dom: extent | '(' start ',' stop ')'
 *              | 'T.where' '(' expr ')' | 'T.reads' '(' regions ')' | 'T.writes' '(' regions ')'
 *              | 'T.block_attr' '(' dict ')' | NAME '=' 'T.alloc_buffer' '(' bufargs ')'
 *              | 'with' 'T.init' '(' ')' ':' suite
 *   region    := NAME '[' (expr | [expr] ':' [expr]) (',' ...)* ']'  |  NAME '[' '(' ')' ']'
 *   dict      := '{' [STRING ':' (INT | '-' INT | True | False | STRING | '[' ints ']') ...] '}'
 *   expr      := Python precedence: or < and < not < comparisons (no chaining)
 *                < '+' '-' < '*' '/' '//' '%' < unary '-' < atoms
 *   atom      := NAME | NAME '[' indices ']' | INT (int32) | FLOAT (float32) | True | False
 *              | '(' expr ')' | 'T.' DTYPE '(' literal-or-expr ')' | 'T.Cast' '(' STRING ',' expr ')'
 *              | 'T.Select' '(' e ',' e ',' e ')' | 'T.Let' '(' NAME ',' e ',' e ')'
 *              | 'T.Ramp' '(' e ',' e ',' INT ')' | 'T.Broadcast' '(' e ',' INT ')'
 *              | 'T.min' | 'T.max' | 'T.truncdiv' | 'T.truncmod' | 'T.floordiv'
 *              | 'T.floormod' | 'T.And' | 'T.Or' '(' e ',' e ')' | 'T.Not' '(' e ')'
 *              | 'T.' INTRINSIC '(' args ')' | 'T.call_intrin' '(' STRING ',' STRING (',' e)* ')'
 *
 * Semantics worth knowing: there are no implicit conversions (int32 + int64
 * and int32 + float32 are type errors; write T.int64(1), T.float32(1)); a
 * range written as (start, stop) becomes min = start and extent = stop -
 * start, taken literally when stop is spelled `start + extent`; a body that
 * holds blocks but no `with T.block("root")` is wrapped in a root block
 * unless the decorator says implicit_root=False; an undefined name in a
 * buffer parameter's shape defines an int32 variable there (T.var("int64",
 * "n") defines one of another type); every definition (loop, iterator,
 * buffer) creates a fresh object, scoped to its suite, except that all
 * T.Let of one name and type share one variable (Lets are pure, and IR that
 * shares a Let node prints it twice).
 */
#include <stdarg.h>
#include <math.h>
#include <string.h>

#include "text_internal.h"

/* ------------------------------------------------------------------ state */

enum { SYM_VAR, SYM_BUFFER };

typedef struct sym {
    const char *name; /* interned */
    int kind;
    const tir_var *var;
    const tir_buffer *buf;
    const tir_expr *loop_min, *loop_extent; /* set for loop variables */
} sym;

/* Arena-backed growable arrays: cheap to abandon on an error path. */
typedef struct gvec {
    void *items;
    int n, cap;
} gvec;

typedef struct parser {
    tir_ctx *ctx;
    const char *src;
    ir_token *toks;
    int ntoks, i;
    sym *syms;
    int nsyms, capsyms;
    int scope_base; /* first symbol of the innermost scope */
    int depth;
    int expr_nest; /* parse_expr calls in progress */
    bool failed;
    bool in_signature;
    const char *const *param_names; /* interned, while reading the signature */
    int nparam_names;
    char dbuf[4][32];
    int dnext;
    gvec lets; /* every T.Let variable so far */
} parser;

static void *gv_push(parser *P, gvec *v, size_t elem) {
    if (v->n == v->cap) {
        int cap = v->cap ? v->cap * 2 : 4;
        void *items = tir_ctx_alloc(P->ctx, elem * (size_t)cap);
        if (v->n) memcpy(items, v->items, elem * (size_t)v->n);
        v->items = items;
        v->cap = cap;
    }
    return (char *)v->items + elem * (size_t)v->n++;
}
#define GV_PUSH(P, v, T, x) (*(T *)gv_push((P), (v), sizeof(T)) = (x))

static const ir_token *cur(const parser *P) { return &P->toks[P->i]; }
static const ir_token *peek(const parser *P, int k) {
    int j = P->i + k;
    return &P->toks[j < P->ntoks ? j : P->ntoks - 1];
}
static void advance(parser *P) {
    if (P->i < P->ntoks - 1) P->i++;
}

static const char *dstr(parser *P, tir_dtype t) {
    char *b = P->dbuf[P->dnext++ & 3];
    return tir_dtype_str(t, b, sizeof P->dbuf[0]);
}

TIR_PRINTF(4, 5)
static void *fail_at(parser *P, const ir_token *t, tir_status code, const char *fmt, ...) {
    if (P->failed) return NULL;
    P->failed = true;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    tir_ctx_fail(P->ctx, code, "%d:%d: %s", t->line, t->col, msg);
    return NULL;
}
#define PERR(P, t, ...) fail_at((P), (t), TIR_ERR_PARSE, __VA_ARGS__)
#define TERR(P, t, ...) fail_at((P), (t), TIR_ERR_TYPE, __VA_ARGS__)

static bool tok_is(const parser *P, const ir_token *t, const char *s) {
    size_t n = strlen(s);
    return t->kind == TK_NAME && t->len == n && memcmp(P->src + t->pos, s, n) == 0;
}

static const char *tok_desc(parser *P, const ir_token *t) {
    char *b = P->dbuf[P->dnext++ & 3];
    return ir_tok_describe(P->src, t, b, sizeof P->dbuf[0]);
}

static bool accept(parser *P, ir_tok_kind k) {
    if (cur(P)->kind != k) return false;
    advance(P);
    return true;
}

static const char *const tok_names[] = {
    [TK_EOF] = "end of input", [TK_NEWLINE] = "end of line", [TK_INDENT] = "an indented block",
    [TK_DEDENT] = "a dedent", [TK_NAME] = "a name", [TK_INT] = "an integer",
    [TK_FLOAT] = "a number", [TK_STRING] = "a string", [TK_LPAREN] = "'('",
    [TK_RPAREN] = "')'", [TK_LBRACK] = "'['", [TK_RBRACK] = "']'", [TK_LBRACE] = "'{'",
    [TK_RBRACE] = "'}'", [TK_COMMA] = "','", [TK_COLON] = "':'", [TK_DOT] = "'.'",
    [TK_ASSIGN] = "'='", [TK_AT] = "'@'", [TK_ARROW] = "'->'", [TK_PLUS] = "'+'",
    [TK_MINUS] = "'-'", [TK_STAR] = "'*'", [TK_SLASH] = "'/'", [TK_DSLASH] = "'//'",
    [TK_PERCENT] = "'%'", [TK_EQ] = "'=='", [TK_NE] = "'!='", [TK_LT] = "'<'",
    [TK_LE] = "'<='", [TK_GT] = "'>'", [TK_GE] = "'>='",
};

static bool expect(parser *P, ir_tok_kind k) {
    if (accept(P, k)) return true;
    PERR(P, cur(P), "expected %s, got %s", tok_names[k], tok_desc(P, cur(P)));
    return false;
}

static bool expect_kw(parser *P, const char *kw) {
    if (tok_is(P, cur(P), kw)) {
        advance(P);
        return true;
    }
    PERR(P, cur(P), "expected '%s', got %s", kw, tok_desc(P, cur(P)));
    return false;
}

/* "T" "." NAME at the cursor: returns the NAME token without moving. */
static const ir_token *t_attr_at(const parser *P, int k) {
    if (tok_is(P, peek(P, k), "T") && peek(P, k + 1)->kind == TK_DOT &&
        peek(P, k + 2)->kind == TK_NAME)
        return peek(P, k + 2);
    return NULL;
}
static bool at_t(const parser *P, const char *name) {
    const ir_token *t = t_attr_at(P, 0);
    return t && tok_is(P, t, name);
}

static const char *tok_name(parser *P, const ir_token *t) {
    return tir_intern_n(P->ctx, P->src + t->pos, t->len);
}

/* Decodes a string token into an interned string. */
static const char *tok_string(parser *P, const ir_token *t) {
    char *tmp = ir_xmalloc(t->len + 1);
    size_t n = ir_lex_string(P->src, t, tmp);
    const char *s = tir_intern_n(P->ctx, tmp, n);
    free(tmp);
    return s;
}

static const char *expect_string(parser *P, const char *what) {
    const ir_token *t = cur(P);
    if (t->kind != TK_STRING) return PERR(P, t, "expected %s (a string), got %s", what, tok_desc(P, t));
    advance(P);
    return tok_string(P, t);
}

static bool enter(parser *P) {
    if (++P->depth > IR_TEXT_MAX_DEPTH) {
        PERR(P, cur(P), "nesting too deep (more than %d levels)", IR_TEXT_MAX_DEPTH);
        return false;
    }
    return true;
}
static void leave(parser *P) { P->depth--; }

/* ---------------------------------------------------------------- symbols */

static const sym *sym_find(const parser *P, const char *name) {
    for (int k = P->nsyms - 1; k >= 0; k--)
        if (P->syms[k].name == name) return &P->syms[k];
    return NULL;
}

/* Defines name in the innermost scope; a clash inside that scope or with
 * a reserved word is an error. */
static sym *sym_define(parser *P, const ir_token *t, const char *name) {
    if (ir_text_reserved(name, strlen(name)))
        return PERR(P, t, "'%s' is reserved and cannot be defined", name);
    for (int k = P->scope_base; k < P->nsyms; k++)
        if (P->syms[k].name == name) return PERR(P, t, "'%s' is already defined", name);
    if (P->nsyms == P->capsyms) {
        int cap = P->capsyms ? P->capsyms * 2 : 64;
        sym *s = ir_xrealloc(P->syms, sizeof *s * (size_t)cap);
        P->syms = s;
        P->capsyms = cap;
    }
    sym *s = &P->syms[P->nsyms++];
    memset(s, 0, sizeof *s);
    s->name = name;
    return s;
}

static const tir_var *define_var(parser *P, const ir_token *t, tir_dtype dt) {
    const char *name = tok_name(P, t);
    sym *s = sym_define(P, t, name);
    if (!s) return NULL;
    s->kind = SYM_VAR;
    s->var = tir_var_new(P->ctx, name, dt);
    return s->var;
}

typedef struct scope {
    int nsyms, base;
} scope;
static scope scope_open(parser *P) {
    scope s = {P->nsyms, P->scope_base};
    P->scope_base = P->nsyms;
    return s;
}
static void scope_close(parser *P, scope s) {
    P->nsyms = s.nsyms;
    P->scope_base = s.base;
}

/* ------------------------------------------------------------ expressions */

static const tir_expr *parse_expr(parser *P);

static bool is_arith(tir_dtype t) { return tir_dtype_is_int(t) || tir_dtype_is_float(t) || tir_dtype_is_bool(t); }

static const char *kind_op(tir_kind k) {
    switch (k) {
    case TIR_KIND_ADD: return "+";
    case TIR_KIND_SUB: return "-";
    case TIR_KIND_MUL: return "*";
    case TIR_KIND_DIV: return "/";
    case TIR_KIND_MOD: return "T.truncmod";
    case TIR_KIND_FLOORDIV: return "//";
    case TIR_KIND_FLOORMOD: return "%";
    case TIR_KIND_MIN: return "T.min";
    case TIR_KIND_MAX: return "T.max";
    case TIR_KIND_EQ: return "==";
    case TIR_KIND_NE: return "!=";
    case TIR_KIND_LT: return "<";
    case TIR_KIND_LE: return "<=";
    case TIR_KIND_GT: return ">";
    case TIR_KIND_GE: return ">=";
    case TIR_KIND_AND: return "and";
    case TIR_KIND_OR: return "or";
    default: return "?";
    }
}

/* Type-checks and builds a binary node; t is the operator (for errors). */
static const tir_expr *mk_binop(parser *P, const ir_token *t, tir_kind k, const tir_expr *a,
                                const tir_expr *b) {
    if (!a || !b) return NULL;
    if (!tir_dtype_eq(a->dtype, b->dtype))
        return TERR(P, t, "operand types differ: %s %s %s", dstr(P, a->dtype), kind_op(k),
                    dstr(P, b->dtype));
    if (k == TIR_KIND_AND || k == TIR_KIND_OR) {
        if (!tir_dtype_is_bool(a->dtype))
            return TERR(P, t, "operands of '%s' must be bool, got %s", kind_op(k), dstr(P, a->dtype));
    } else if (!is_arith(a->dtype)) {
        return TERR(P, t, "operator '%s' does not apply to %s", kind_op(k), dstr(P, a->dtype));
    }
    return tir_binop_new(P->ctx, k, a, b);
}

static const tir_expr *int_literal(parser *P, const ir_token *t, tir_dtype dt, bool neg) {
    uint64_t mag = t->ival;
    int64_t v;
    if (neg) {
        if (mag > (uint64_t)INT64_MAX + 1) goto range;
        v = mag == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)mag;
    } else {
        if (mag > (uint64_t)INT64_MAX) goto range;
        v = (int64_t)mag;
    }
    if (!ir_text_int_fits(dt, v)) goto range;
    return tir_int(P->ctx, dt, v);
range:
    if (tir_dtype_eq(dt, TIR_I32))
        return PERR(P, t, "integer literal %s%.*s out of range for int32 (write T.int64(...))",
                    neg ? "-" : "", (int)t->len, P->src + t->pos);
    return PERR(P, t, "integer literal %s%.*s out of range for %s", neg ? "-" : "", (int)t->len,
                P->src + t->pos, dstr(P, dt));
}

/* Reads a float literal: [-] number, or "inf", "-inf", "nan", "nan:0x<bits>". */
static bool float_literal(parser *P, double *out) {
    const ir_token *t = cur(P);
    if (t->kind == TK_STRING) {
        char buf[40];
        if (t->len - 2 >= sizeof buf) goto bad_string;
        size_t n = ir_lex_string(P->src, t, buf);
        buf[n] = '\0';
        uint64_t bits;
        if (strcmp(buf, "inf") == 0) *out = INFINITY;
        else if (strcmp(buf, "-inf") == 0) *out = -INFINITY;
        else if (strcmp(buf, "nan") == 0) {
            bits = 0x7ff8000000000000ull;
            memcpy(out, &bits, sizeof bits);
        } else if (strncmp(buf, "nan:0x", 6) == 0 && n == 22) {
            bits = 0;
            for (int k = 6; k < 22; k++) {
                char c = buf[k];
                int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
                if (d < 0) goto bad_string;
                bits = bits << 4 | (uint64_t)d;
            }
            memcpy(out, &bits, sizeof bits);
            if (!isnan(*out)) goto bad_string;
        } else {
            goto bad_string;
        }
        advance(P);
        return true;
    bad_string:
        PERR(P, t, "expected \"inf\", \"-inf\", \"nan\" or \"nan:0x<16 hex digits>\"");
        return false;
    }
    bool neg = false;
    if (t->kind == TK_MINUS) {
        neg = true;
        advance(P);
        t = cur(P);
    }
    if (t->kind != TK_INT && t->kind != TK_FLOAT) {
        PERR(P, t, "expected a number, got %s", tok_desc(P, t));
        return false;
    }
    char buf[420];
    snprintf(buf, sizeof buf, "%s%.*s", neg ? "-" : "", (int)t->len, P->src + t->pos);
    *out = ir_text_strtod(buf);
    advance(P);
    return true;
}

/* Is the token run at the cursor a literal followed by ')'? */
static bool literal_arg_follows(const parser *P) {
    int k = 0;
    if (peek(P, 0)->kind == TK_MINUS) k = 1;
    ir_tok_kind kk = peek(P, k)->kind;
    if (kk == TK_STRING && k == 0) return peek(P, 1)->kind == TK_RPAREN;
    return (kk == TK_INT || kk == TK_FLOAT) && peek(P, k + 1)->kind == TK_RPAREN;
}

/* T.int64(5), T.float32(0.5), T.float32("inf"), T.bool(True); anything
 * else inside is converted with a Cast. */
static const tir_expr *parse_typed(parser *P, const ir_token *name, tir_dtype dt) {
    if (dt.lanes != 1)
        return PERR(P, name, "T.%s(...) is not a scalar; use T.Broadcast", dstr(P, dt));
    if (dt.code == TIR_TYPE_HANDLE || dt.code == TIR_TYPE_VOID)
        return PERR(P, name, "there are no %s values", dstr(P, dt));
    if (!expect(P, TK_LPAREN)) return NULL;
    const tir_expr *r;
    if (tir_dtype_is_float(dt) && literal_arg_follows(P)) {
        double v;
        if (!float_literal(P, &v)) return NULL;
        r = tir_float(P->ctx, dt, v);
    } else if (tir_dtype_is_bool(dt) && (tok_is(P, cur(P), "True") || tok_is(P, cur(P), "False")) &&
               peek(P, 1)->kind == TK_RPAREN) {
        r = tir_bool(P->ctx, tok_is(P, cur(P), "True"));
        advance(P);
    } else if (literal_arg_follows(P) && cur(P)->kind != TK_STRING) {
        bool neg = accept(P, TK_MINUS);
        const ir_token *t = cur(P);
        if (t->kind != TK_INT) return PERR(P, t, "expected an integer for T.%s", dstr(P, dt));
        advance(P);
        r = int_literal(P, t, dt, neg);
    } else {
        const ir_token *at = cur(P);
        if (at->kind == TK_STRING) return PERR(P, at, "unexpected string");
        const tir_expr *v = parse_expr(P);
        if (!v) return NULL;
        if (v->dtype.lanes != 1)
            return TERR(P, at, "cannot convert %s to %s", dstr(P, v->dtype), dstr(P, dt));
        r = tir_cast_new(P->ctx, dt, v);
    }
    if (!r || !expect(P, TK_RPAREN)) return NULL;
    return r;
}

/* Comma-separated expressions up to the closing token (consumed). */
static bool parse_expr_list(parser *P, ir_tok_kind close, gvec *out) {
    while (cur(P)->kind != close) {
        const tir_expr *e = parse_expr(P);
        if (!e) return false;
        GV_PUSH(P, out, const tir_expr *, e);
        if (!accept(P, TK_COMMA)) break;
    }
    return expect(P, close);
}

static bool parse_args_n(parser *P, const ir_token *fn, int n, const tir_expr **args) {
    const ir_token *open = cur(P);
    if (!expect(P, TK_LPAREN)) return false;
    gvec v = {0};
    if (!parse_expr_list(P, TK_RPAREN, &v)) return false;
    if (v.n != n) {
        PERR(P, open, "T.%.*s takes %d argument%s, got %d", (int)fn->len, P->src + fn->pos, n,
             n == 1 ? "" : "s", v.n);
        return false;
    }
    for (int k = 0; k < n; k++) args[k] = ((const tir_expr **)v.items)[k];
    return true;
}

static bool parse_lanes(parser *P, int *lanes) {
    const ir_token *t = cur(P);
    if (t->kind != TK_INT) {
        PERR(P, t, "expected the number of lanes (an integer), got %s", tok_desc(P, t));
        return false;
    }
    if (t->ival < 2 || t->ival > 4096) {
        PERR(P, t, "lanes must be between 2 and 4096");
        return false;
    }
    *lanes = (int)t->ival;
    advance(P);
    return true;
}

static const tir_expr *mk_call(parser *P, const ir_token *t, tir_intrin op, int has_dtype,
                               tir_dtype dt, gvec *args) {
    int want = tir_intrin_nargs(op);
    const tir_expr *const *a = args->items;
    if (!tir_intrin_nargs_ok(op, args->n))
        return PERR(P, t, "T.%s takes %d argument%s%s, got %d", tir_intrin_name(op), want,
                    want == 1 ? "" : "s", op == TIR_INTRIN_CP_ASYNC ? " (or 4)" : "", args->n);
    switch (op) {
    case TIR_INTRIN_EXP: case TIR_INTRIN_LOG: case TIR_INTRIN_TANH: case TIR_INTRIN_SQRT:
    case TIR_INTRIN_FABS: case TIR_INTRIN_FMA: case TIR_INTRIN_POW: case TIR_INTRIN_SIGMOID:
        for (int k = 0; k < args->n; k++) {
            if (!is_arith(a[k]->dtype))
                return TERR(P, t, "T.%s does not apply to %s", tir_intrin_name(op), dstr(P, a[k]->dtype));
            if (!tir_dtype_eq(a[k]->dtype, a[0]->dtype))
                return TERR(P, t, "arguments of T.%s differ in type: %s and %s", tir_intrin_name(op),
                            dstr(P, a[0]->dtype), dstr(P, a[k]->dtype));
        }
        break;
    default: break;
    }
    if (!has_dtype) dt = ir_text_call_dtype(op, args->n, a);
    return tir_call_new(P->ctx, dt, op, args->n, a);
}

static const tir_expr *parse_load(parser *P, const ir_token *name, const tir_buffer *b);

/* T.<name>(...) in an expression; the cursor is on "T". */
static const tir_expr *parse_t_call(parser *P) {
    advance(P);
    advance(P);
    const ir_token *fn = cur(P);
    advance(P);
    tir_dtype dt;
    if (tir_dtype_parse(P->src + fn->pos, fn->len, &dt)) return parse_typed(P, fn, dt);
    const tir_expr *a[3];
    static const struct {
        const char *name;
        tir_kind kind;
    } binfns[] = {
        {"min", TIR_KIND_MIN},           {"max", TIR_KIND_MAX},
        {"truncdiv", TIR_KIND_DIV},      {"truncmod", TIR_KIND_MOD},
        {"floordiv", TIR_KIND_FLOORDIV}, {"floormod", TIR_KIND_FLOORMOD},
        {"And", TIR_KIND_AND},           {"Or", TIR_KIND_OR},
    };
    for (size_t k = 0; k < sizeof binfns / sizeof binfns[0]; k++) {
        if (tok_is(P, fn, binfns[k].name)) {
            if (!parse_args_n(P, fn, 2, a)) return NULL;
            return mk_binop(P, fn, binfns[k].kind, a[0], a[1]);
        }
    }
    if (tok_is(P, fn, "Not")) {
        if (!parse_args_n(P, fn, 1, a)) return NULL;
        if (!tir_dtype_is_bool(a[0]->dtype))
            return TERR(P, fn, "operand of T.Not must be bool, got %s", dstr(P, a[0]->dtype));
        return tir_not_new(P->ctx, a[0]);
    }
    if (tok_is(P, fn, "Select")) {
        if (!parse_args_n(P, fn, 3, a)) return NULL;
        if (!tir_dtype_is_bool(a[0]->dtype))
            return TERR(P, fn, "T.Select condition must be bool, got %s", dstr(P, a[0]->dtype));
        if (!tir_dtype_eq(a[1]->dtype, a[2]->dtype))
            return TERR(P, fn, "T.Select branches differ in type: %s and %s", dstr(P, a[1]->dtype),
                        dstr(P, a[2]->dtype));
        if (a[0]->dtype.lanes != 1 && a[0]->dtype.lanes != a[1]->dtype.lanes)
            return TERR(P, fn, "T.Select condition has %d lanes, values have %d",
                        a[0]->dtype.lanes, a[1]->dtype.lanes);
        return tir_select_new(P->ctx, a[0], a[1], a[2]);
    }
    if (tok_is(P, fn, "Cast")) {
        if (!expect(P, TK_LPAREN)) return NULL;
        const ir_token *st = cur(P);
        const char *ds = expect_string(P, "a dtype");
        if (!ds || !expect(P, TK_COMMA)) return NULL;
        if (!tir_dtype_parse(ds, strlen(ds), &dt)) return PERR(P, st, "unknown dtype \"%s\"", ds);
        const tir_expr *v = parse_expr(P);
        if (!v) return NULL;
        accept(P, TK_COMMA);
        if (!expect(P, TK_RPAREN)) return NULL;
        if (v->dtype.lanes != dt.lanes)
            return TERR(P, st, "cannot cast %s to %s (lanes differ)", dstr(P, v->dtype), dstr(P, dt));
        return tir_cast_new(P->ctx, dt, v);
    }
    if (tok_is(P, fn, "Ramp") || tok_is(P, fn, "Broadcast")) {
        bool ramp = tok_is(P, fn, "Ramp");
        if (!expect(P, TK_LPAREN)) return NULL;
        const tir_expr *base = parse_expr(P), *stride = NULL;
        if (!base || !expect(P, TK_COMMA)) return NULL;
        if (ramp && (!(stride = parse_expr(P)) || !expect(P, TK_COMMA))) return NULL;
        int lanes;
        if (!parse_lanes(P, &lanes) || !expect(P, TK_RPAREN)) return NULL;
        if (base->dtype.lanes != 1 || !is_arith(base->dtype))
            return TERR(P, fn, "T.%s needs a scalar number, got %s", ramp ? "Ramp" : "Broadcast",
                        dstr(P, base->dtype));
        if (!ramp) return tir_broadcast_new(P->ctx, base, lanes);
        if (!tir_dtype_eq(base->dtype, stride->dtype))
            return TERR(P, fn, "T.Ramp start and stride differ in type: %s and %s",
                        dstr(P, base->dtype), dstr(P, stride->dtype));
        return tir_ramp_new(P->ctx, base, stride, lanes);
    }
    if (tok_is(P, fn, "Let")) {
        if (!expect(P, TK_LPAREN)) return NULL;
        const ir_token *vt = cur(P);
        if (vt->kind != TK_NAME) return PERR(P, vt, "expected the let variable's name");
        advance(P);
        if (!expect(P, TK_COMMA)) return NULL;
        const tir_expr *value = parse_expr(P);
        if (!value || !expect(P, TK_COMMA)) return NULL;
        scope sc = scope_open(P);
        const tir_var *v = define_var(P, vt, value->dtype);
        if (v) {
            /* One variable per Let name and type: a Let printed twice
             * because the IR shares it (a DAG) reads back as one. */
            const char *name = v->name;
            const tir_var *prev = NULL;
            for (int k = 0; k < P->lets.n && !prev; k++) {
                const tir_var *w = ((const tir_var **)P->lets.items)[k];
                if (w->name == name && tir_dtype_eq(w->base.dtype, value->dtype)) prev = w;
            }
            if (prev)
                P->syms[P->nsyms - 1].var = v = prev;
            else
                GV_PUSH(P, &P->lets, const tir_var *, v);
        }
        const tir_expr *body = v ? parse_expr(P) : NULL;
        scope_close(P, sc);
        if (!body || !expect(P, TK_RPAREN)) return NULL;
        return tir_let_new(P->ctx, v, value, body);
    }
    if (tok_is(P, fn, "var")) {
        if (!P->in_signature)
            return PERR(P, fn, "T.var(...) may only define a variable in a buffer parameter's shape");
        if (!expect(P, TK_LPAREN)) return NULL;
        const ir_token *dt_tok = cur(P);
        const char *ds = expect_string(P, "a dtype");
        if (!ds || !expect(P, TK_COMMA)) return NULL;
        if (!tir_dtype_parse(ds, strlen(ds), &dt)) return PERR(P, dt_tok, "unknown dtype \"%s\"", ds);
        const ir_token *nt = cur(P);
        const char *name = expect_string(P, "the variable's name");
        if (!name || !expect(P, TK_RPAREN)) return NULL;
        if (!ir_text_is_ident(name)) return PERR(P, nt, "'%s' is not a valid variable name", name);
        if (sym_find(P, name)) return PERR(P, nt, "'%s' is already defined", name);
        sym *s = sym_define(P, nt, name);
        if (!s) return NULL;
        s->kind = SYM_VAR;
        s->var = tir_var_new(P->ctx, name, dt);
        return &s->var->base;
    }
    bool explicit_dt = tok_is(P, fn, "call_intrin");
    const ir_token *op_tok = fn;
    tir_intrin op;
    gvec args = {0};
    if (explicit_dt) {
        if (!expect(P, TK_LPAREN)) return NULL;
        const ir_token *st = cur(P);
        const char *ds = expect_string(P, "a dtype");
        if (!ds || !expect(P, TK_COMMA)) return NULL;
        if (!tir_dtype_parse(ds, strlen(ds), &dt)) return PERR(P, st, "unknown dtype \"%s\"", ds);
        op_tok = cur(P);
        const char *name = expect_string(P, "an intrinsic name");
        if (!name) return NULL;
        op = tir_intrin_lookup(name, strlen(name));
        if (op == TIR_INTRIN_COUNT) return PERR(P, op_tok, "unknown intrinsic \"%s\"", name);
        if (accept(P, TK_COMMA)) {
            if (!parse_expr_list(P, TK_RPAREN, &args)) return NULL;
        } else if (!expect(P, TK_RPAREN)) {
            return NULL;
        }
    } else {
        op = tir_intrin_lookup(P->src + fn->pos, fn->len);
        if (op == TIR_INTRIN_COUNT)
            return PERR(P, fn, "unknown function T.%.*s", (int)fn->len, P->src + fn->pos);
        if (!expect(P, TK_LPAREN) || !parse_expr_list(P, TK_RPAREN, &args)) return NULL;
    }
    return mk_call(P, op_tok, op, explicit_dt, dt, &args);
}

static const tir_expr *parse_atom(parser *P) {
    const ir_token *t = cur(P);
    switch (t->kind) {
    case TK_INT:
        advance(P);
        return int_literal(P, t, TIR_I32, false);
    case TK_FLOAT: {
        double v;
        if (!float_literal(P, &v)) return NULL;
        return tir_float(P->ctx, TIR_F32, v);
    }
    case TK_LPAREN: {
        advance(P);
        const tir_expr *e = parse_expr(P);
        if (!e) return NULL;
        if (cur(P)->kind == TK_COMMA) return PERR(P, cur(P), "tuples are not values here");
        return expect(P, TK_RPAREN) ? e : NULL;
    }
    case TK_NAME: {
        if (tok_is(P, t, "True") || tok_is(P, t, "False")) {
            advance(P);
            return tir_bool(P->ctx, tok_is(P, t, "True"));
        }
        if (tok_is(P, t, "T")) {
            if (!t_attr_at(P, 0)) return PERR(P, t, "expected T.<name> after 'T'");
            return parse_t_call(P);
        }
        if (ir_text_reserved(P->src + t->pos, t->len))
            return PERR(P, t, "unexpected '%.*s' in an expression", (int)t->len, P->src + t->pos);
        const char *name = tok_name(P, t);
        const sym *s = sym_find(P, name);
        advance(P);
        if (!s) {
            if (P->in_signature) {
                /* A shape variable is defined at its first use. */
                for (int k = 0; k < P->nparam_names; k++)
                    if (P->param_names[k] == name)
                        return PERR(P, t, "'%s' is a buffer parameter, not a variable", name);
                const tir_var *v = define_var(P, t, TIR_I32);
                return v ? &v->base : NULL;
            }
            return PERR(P, t, "name '%s' is not defined", name);
        }
        if (s->kind == SYM_BUFFER) {
            if (cur(P)->kind != TK_LBRACK)
                return PERR(P, t, "buffer '%s' used as a value (index it: %s[...])", name, name);
            return parse_load(P, t, s->buf);
        }
        if (cur(P)->kind == TK_LBRACK) return PERR(P, cur(P), "'%s' is not a buffer", name);
        return &s->var->base;
    }
    case TK_STRING: return PERR(P, t, "unexpected string in an expression");
    default: return PERR(P, t, "expected an expression, got %s", tok_desc(P, t));
    }
}

static const tir_expr *zero_like(parser *P, tir_dtype t) {
    tir_dtype s = tir_dtype_element(t);
    const tir_expr *z = tir_dtype_is_float(s) ? tir_float(P->ctx, s, 0.0) : tir_int(P->ctx, s, 0);
    return t.lanes > 1 ? tir_broadcast_new(P->ctx, z, t.lanes) : z;
}

static const tir_expr *parse_unary(parser *P) {
    const ir_token *t = cur(P);
    if (t->kind != TK_MINUS) return parse_atom(P);
    if (!enter(P)) return NULL;
    advance(P);
    const ir_token *n = cur(P);
    const tir_expr *r;
    if (n->kind == TK_INT) {
        advance(P);
        r = int_literal(P, n, TIR_I32, true);
    } else if (n->kind == TK_FLOAT) {
        P->i--; /* back onto '-': float_literal reads the sign */
        double v;
        r = float_literal(P, &v) ? tir_float(P->ctx, TIR_F32, v) : NULL;
    } else {
        const tir_expr *a = parse_unary(P);
        if (!a) {
            r = NULL;
        } else if (!tir_dtype_is_int(a->dtype) && !tir_dtype_is_float(a->dtype)) {
            r = TERR(P, t, "cannot negate %s", dstr(P, a->dtype));
        } else {
            r = tir_sub(P->ctx, zero_like(P, a->dtype), a);
        }
    }
    leave(P);
    return r;
}

static const tir_expr *parse_term(parser *P) {
    const tir_expr *a = parse_unary(P);
    for (;;) {
        if (!a) return NULL;
        const ir_token *t = cur(P);
        tir_kind k;
        switch (t->kind) {
        case TK_STAR: k = TIR_KIND_MUL; break;
        case TK_SLASH: k = TIR_KIND_DIV; break;
        case TK_DSLASH: k = TIR_KIND_FLOORDIV; break;
        case TK_PERCENT: k = TIR_KIND_FLOORMOD; break;
        default: return a;
        }
        advance(P);
        const tir_expr *b = parse_unary(P);
        if (!b) return NULL;
        if (k == TIR_KIND_DIV && tir_dtype_eq(a->dtype, b->dtype) && !tir_dtype_is_float(a->dtype))
            return TERR(P, t, "'/' needs float operands, got %s (use // or T.truncdiv)",
                        dstr(P, a->dtype));
        a = mk_binop(P, t, k, a, b);
    }
}

static const tir_expr *parse_arith(parser *P) {
    const tir_expr *a = parse_term(P);
    for (;;) {
        if (!a) return NULL;
        const ir_token *t = cur(P);
        tir_kind k;
        if (t->kind == TK_PLUS) k = TIR_KIND_ADD;
        else if (t->kind == TK_MINUS) k = TIR_KIND_SUB;
        else return a;
        advance(P);
        a = mk_binop(P, t, k, a, parse_term(P));
    }
}

static bool cmp_kind(ir_tok_kind t, tir_kind *k) {
    switch (t) {
    case TK_EQ: *k = TIR_KIND_EQ; return true;
    case TK_NE: *k = TIR_KIND_NE; return true;
    case TK_LT: *k = TIR_KIND_LT; return true;
    case TK_LE: *k = TIR_KIND_LE; return true;
    case TK_GT: *k = TIR_KIND_GT; return true;
    case TK_GE: *k = TIR_KIND_GE; return true;
    default: return false;
    }
}

static const tir_expr *parse_cmp(parser *P) {
    const tir_expr *a = parse_arith(P);
    if (!a) return NULL;
    tir_kind k;
    const ir_token *t = cur(P);
    if (!cmp_kind(t->kind, &k)) return a;
    advance(P);
    const tir_expr *r = mk_binop(P, t, k, a, parse_arith(P));
    if (r && cmp_kind(cur(P)->kind, &k))
        return PERR(P, cur(P), "chained comparisons are not supported; use parentheses");
    return r;
}

static const tir_expr *parse_not(parser *P) {
    const ir_token *t = cur(P);
    if (!tok_is(P, t, "not")) return parse_cmp(P);
    if (!enter(P)) return NULL;
    advance(P);
    const tir_expr *a = parse_not(P);
    const tir_expr *r = NULL;
    if (a && !tir_dtype_is_bool(a->dtype))
        r = TERR(P, t, "operand of 'not' must be bool, got %s", dstr(P, a->dtype));
    else if (a)
        r = tir_not_new(P->ctx, a);
    leave(P);
    return r;
}

static const tir_expr *parse_and(parser *P) {
    const tir_expr *a = parse_not(P);
    while (a && tok_is(P, cur(P), "and")) {
        const ir_token *t = cur(P);
        advance(P);
        a = mk_binop(P, t, TIR_KIND_AND, a, parse_not(P));
    }
    return a;
}

/* The operator loops above build chains like a + b + c + ... as deep
 * left-leaning trees without recursing, so enter() alone does not bound
 * the depth of what the parser builds; the outermost expression's tree is
 * measured once it is complete (one walk per expression, without
 * recursion) against TIR_MAX_EXPR_DEPTH, the depth every later walker is
 * tested to. */
static const tir_expr *parse_expr(parser *P) {
    if (!enter(P)) return NULL;
    const ir_token *start = cur(P);
    P->expr_nest++;
    const tir_expr *a = parse_and(P);
    while (a && tok_is(P, cur(P), "or")) {
        const ir_token *t = cur(P);
        advance(P);
        a = mk_binop(P, t, TIR_KIND_OR, a, parse_and(P));
    }
    P->expr_nest--;
    if (a && P->expr_nest == 0 && tir_expr_depth(a, TIR_MAX_EXPR_DEPTH) > TIR_MAX_EXPR_DEPTH)
        a = PERR(P, start, "expression nested too deeply (more than %d levels; each operator of a chain like a + b + c is one)",
                 TIR_MAX_EXPR_DEPTH);
    leave(P);
    return a;
}

/* --------------------------------------------------- ranges and subscripts */

/* (start, stop) -> (min, extent); the inverse of printer.c's print_stop. */
static bool range_from_stop(parser *P, const ir_token *t, const tir_expr *start,
                            const tir_expr *stop, tir_range *out) {
    if (!tir_dtype_is_int(start->dtype) || start->dtype.lanes != 1)
        return TERR(P, t, "range bounds must be integers, got %s", dstr(P, start->dtype)), false;
    if (!tir_dtype_is_int(stop->dtype) || stop->dtype.lanes != 1)
        return TERR(P, t, "range bounds must be integers, got %s", dstr(P, stop->dtype)), false;
    int64_t a, b, d;
    out->min = start;
    const tir_binop *add = stop->kind == TIR_KIND_ADD ? (const tir_binop *)stop : NULL;
    if (tir_expr_const_int(start, &a) && tir_expr_const_int(stop, &b) &&
        tir_dtype_eq(start->dtype, stop->dtype)) {
        if (__builtin_sub_overflow(b, a, &d) || !ir_text_int_fits(start->dtype, d))
            return PERR(P, t, "range extent out of range for %s", dstr(P, start->dtype)), false;
        out->extent = tir_int(P->ctx, start->dtype, d);
    } else if (tir_expr_const_int(start, &a) && a == 0) {
        out->extent = stop;
    } else if (add && ir_text_expr_same(add->a, start)) {
        out->extent = add->b;
    } else {
        out->extent = mk_binop(P, t, TIR_KIND_SUB, stop, start);
        if (!out->extent) return false;
    }
    return true;
}

/* Indices of a load or store: count, integer types, vector only last. */
static bool check_indices(parser *P, const ir_token *t, const tir_buffer *b, int n,
                          const tir_expr *const *idx, int *lanes) {
    if (n != b->ndim)
        return TERR(P, t, "buffer '%s' has %d dimension%s, got %d ind%s", b->name, b->ndim,
                    b->ndim == 1 ? "" : "s", n, n == 1 ? "ex" : "ices"),
               false;
    *lanes = 1;
    for (int k = 0; k < n; k++) {
        if (!tir_dtype_is_int(idx[k]->dtype))
            return TERR(P, t, "index %d of '%s' must be an integer, got %s", k, b->name,
                        dstr(P, idx[k]->dtype)),
                   false;
        if (idx[k]->dtype.lanes > 1) {
            if (k != n - 1)
                return TERR(P, t, "only the last index of '%s' may be a vector", b->name), false;
            *lanes = idx[k]->dtype.lanes;
        }
    }
    return true;
}

/* '[' indices ']' with the cursor on '['. */
static bool parse_indices(parser *P, gvec *out) {
    if (!expect(P, TK_LBRACK)) return false;
    if (cur(P)->kind == TK_LPAREN && peek(P, 1)->kind == TK_RPAREN) {
        advance(P);
        advance(P);
        return expect(P, TK_RBRACK);
    }
    if (cur(P)->kind == TK_RBRACK) return PERR(P, cur(P), "empty subscript (write [()] for a 0-d buffer)"), false;
    for (;;) {
        const tir_expr *e = parse_expr(P);
        if (!e) return false;
        if (cur(P)->kind == TK_COLON)
            return PERR(P, cur(P), "slices are only allowed in T.reads and T.writes"), false;
        GV_PUSH(P, out, const tir_expr *, e);
        if (!accept(P, TK_COMMA) || cur(P)->kind == TK_RBRACK) break;
    }
    return expect(P, TK_RBRACK);
}

static const tir_expr *parse_load(parser *P, const ir_token *name, const tir_buffer *b) {
    gvec idx = {0};
    if (!parse_indices(P, &idx)) return NULL;
    int lanes;
    if (!check_indices(P, name, b, idx.n, idx.items, &lanes)) return NULL;
    return tir_load(P->ctx, b, idx.n, idx.items);
}

static const tir_buffer *expect_buffer(parser *P, const ir_token **tt) {
    const ir_token *t = cur(P);
    *tt = t;
    if (t->kind != TK_NAME) return PERR(P, t, "expected a buffer name, got %s", tok_desc(P, t));
    const char *name = tok_name(P, t);
    const sym *s = sym_find(P, name);
    if (!s) return PERR(P, t, "name '%s' is not defined", name);
    if (s->kind != SYM_BUFFER) return PERR(P, t, "'%s' is not a buffer", name);
    advance(P);
    return s->buf;
}

/* A buffer region: A[i, 0:16, lo:hi, :]. */
static bool parse_region(parser *P, tir_buffer_region *out) {
    const ir_token *bt;
    const tir_buffer *b = expect_buffer(P, &bt);
    if (!b || !expect(P, TK_LBRACK)) return false;
    gvec ranges = {0};
    if (cur(P)->kind == TK_LPAREN && peek(P, 1)->kind == TK_RPAREN) {
        advance(P);
        advance(P);
    } else {
        for (;;) {
            const ir_token *t = cur(P);
            if (ranges.n >= b->ndim)
                return TERR(P, t, "buffer '%s' has %d dimension%s", b->name, b->ndim,
                            b->ndim == 1 ? "" : "s"),
                       false;
            const tir_expr *dimext = b->shape[ranges.n];
            tir_range r;
            const tir_expr *lo = NULL, *hi = NULL;
            if (t->kind != TK_COLON && !(lo = parse_expr(P))) return false;
            if (accept(P, TK_COLON)) {
                if (cur(P)->kind != TK_COMMA && cur(P)->kind != TK_RBRACK && !(hi = parse_expr(P)))
                    return false;
                if (!lo) lo = tir_int(P->ctx, dimext->dtype, 0);
                if (!hi) hi = dimext;
                if (!range_from_stop(P, t, lo, hi, &r)) return false;
            } else {
                if (!tir_dtype_is_int(lo->dtype) || lo->dtype.lanes != 1)
                    return TERR(P, t, "region bounds must be integers, got %s", dstr(P, lo->dtype)), false;
                r.min = lo;
                r.extent = tir_int(P->ctx, lo->dtype, 1);
            }
            GV_PUSH(P, &ranges, tir_range, r);
            if (!accept(P, TK_COMMA) || cur(P)->kind == TK_RBRACK) break;
        }
    }
    if (!expect(P, TK_RBRACK)) return false;
    if (ranges.n != b->ndim)
        return TERR(P, bt, "buffer '%s' has %d dimension%s, got %d in the region", b->name,
                    b->ndim, b->ndim == 1 ? "" : "s", ranges.n),
               false;
    *out = tir_region_new(P->ctx, b, ranges.n, ranges.items);
    return true;
}

/* ------------------------------------------------------------ annotations */

static bool parse_signed_int(parser *P, int64_t *v) {
    bool neg = accept(P, TK_MINUS);
    const ir_token *t = cur(P);
    if (t->kind != TK_INT) {
        PERR(P, t, "expected an integer, got %s", tok_desc(P, t));
        return false;
    }
    advance(P);
    const tir_expr *e = int_literal(P, t, TIR_I64, neg);
    if (!e) return false;
    *v = ((const tir_int_imm *)e)->value;
    return true;
}

/* '{' "key": value, ... '}' into annots (appended; duplicates rejected). */
static bool parse_dict(parser *P, gvec *annots) {
    if (!expect(P, TK_LBRACE)) return false;
    while (cur(P)->kind != TK_RBRACE) {
        const ir_token *kt = cur(P);
        tir_annot a;
        memset(&a, 0, sizeof a);
        if (!(a.key = expect_string(P, "an annotation key")) || !expect(P, TK_COLON)) return false;
        for (int k = 0; k < annots->n; k++)
            if (((tir_annot *)annots->items)[k].key == a.key)
                return PERR(P, kt, "duplicate annotation key \"%s\"", a.key), false;
        const ir_token *t = cur(P);
        if (t->kind == TK_STRING) {
            a.kind = TIR_ANNOT_STR;
            a.s = expect_string(P, "a string");
        } else if (tok_is(P, t, "True") || tok_is(P, t, "False")) {
            a.kind = TIR_ANNOT_INT;
            a.i = tok_is(P, t, "True");
            advance(P);
        } else if (t->kind == TK_LBRACK) {
            advance(P);
            gvec ints = {0};
            while (cur(P)->kind != TK_RBRACK) {
                int64_t v;
                if (!parse_signed_int(P, &v)) return false;
                GV_PUSH(P, &ints, int64_t, v);
                if (!accept(P, TK_COMMA)) break;
            }
            if (!expect(P, TK_RBRACK)) return false;
            a.kind = TIR_ANNOT_INTS;
            a.nints = ints.n;
            a.ints = ints.items;
        } else {
            a.kind = TIR_ANNOT_INT;
            if (!parse_signed_int(P, &a.i)) return false;
        }
        GV_PUSH(P, annots, tir_annot, a);
        if (!accept(P, TK_COMMA)) break;
    }
    return expect(P, TK_RBRACE);
}

/* ---------------------------------------------------------------- buffers */

/* A shape: (a, b), (a,), (), [a, b] or a bare expression. */
static bool parse_shape(parser *P, gvec *out, const char *what) {
    const ir_token *t = cur(P);
    ir_tok_kind close;
    if (t->kind == TK_LPAREN) {
        /* (e) alone is a parenthesised expression, (e,) a 1-tuple. */
        int depth = 0, k = 0;
        bool tuple = peek(P, 1)->kind == TK_RPAREN;
        for (k = 0; !tuple; k++) {
            ir_tok_kind kk = peek(P, k)->kind;
            if (kk == TK_EOF) break;
            if (kk == TK_LPAREN || kk == TK_LBRACK || kk == TK_LBRACE) depth++;
            if (kk == TK_RPAREN || kk == TK_RBRACK || kk == TK_RBRACE) {
                if (--depth == 0) break;
            }
            if (kk == TK_COMMA && depth == 1) tuple = true;
        }
        if (!tuple) goto single;
        close = TK_RPAREN;
    } else if (t->kind == TK_LBRACK) {
        close = TK_RBRACK;
    } else {
        goto single;
    }
    advance(P);
    if (!parse_expr_list(P, close, out)) return false;
    goto check;
single: {
    const tir_expr *e = parse_expr(P);
    if (!e) return false;
    GV_PUSH(P, out, const tir_expr *, e);
}
check:
    for (int k = 0; k < out->n; k++) {
        const tir_expr *e = ((const tir_expr **)out->items)[k];
        if (!tir_dtype_is_int(e->dtype) || e->dtype.lanes != 1)
            return TERR(P, t, "%s must be integers, got %s", what, dstr(P, e->dtype)), false;
    }
    return true;
}

/* bufargs (see the grammar) up to and including ')'; name is the buffer's.
 * alloc_annots is non-NULL for T.allocate, which alone takes a positional
 * scope and annotations= (appended there). */
static const tir_buffer *parse_buffer_args(parser *P, const char *name, gvec *alloc_annots) {
    bool positional_scope = alloc_annots != NULL;
    tir_buffer_desc d;
    memset(&d, 0, sizeof d);
    d.name = name;
    gvec shape = {0}, strides = {0};
    const ir_token *shape_tok = cur(P);
    if (!parse_shape(P, &shape, "shape dimensions")) return NULL;
    for (int k = 0; k < shape.n; k++) {
        int64_t v;
        if (tir_expr_const_int(((const tir_expr **)shape.items)[k], &v) && !ir_extent_ok(v))
            return PERR(P, shape_tok, "dimension %d of '%s' is %lld; it must be in [1, 2^31)", k,
                        name, (long long)v);
    }
    if (!expect(P, TK_COMMA)) return NULL;
    const ir_token *dt_tok = cur(P);
    const char *ds = expect_string(P, "the buffer's dtype");
    if (!ds) return NULL;
    if (!tir_dtype_parse(ds, strlen(ds), &d.dtype)) return PERR(P, dt_tok, "unknown dtype \"%s\"", ds);
    if (d.dtype.lanes != 1)
        return TERR(P, dt_tok, "buffer elements must be scalars, got \"%s\"", ds);
    if (d.dtype.code == TIR_TYPE_VOID) return TERR(P, dt_tok, "buffer elements cannot be void");
    bool have_strides = false, have_scope = false, have_off = false, have_align = false,
         have_annots = false;
    while (accept(P, TK_COMMA)) {
        const ir_token *k = cur(P);
        if (k->kind == TK_RPAREN) break;
        if (positional_scope && k->kind == TK_STRING && !have_scope) {
            const char *sc = expect_string(P, "a scope");
            if (!tir_scope_parse(sc, strlen(sc), &d.scope))
                return PERR(P, k, "unknown storage scope \"%s\"", sc);
            have_scope = true;
            continue;
        }
        if (k->kind != TK_NAME || peek(P, 1)->kind != TK_ASSIGN)
            return PERR(P, k, "expected a keyword argument (strides=, elem_offset=, scope=, align=), got %s",
                        tok_desc(P, k));
        advance(P);
        advance(P);
        bool *seen;
        if (tok_is(P, k, "strides")) seen = &have_strides;
        else if (tok_is(P, k, "scope")) seen = &have_scope;
        else if (tok_is(P, k, "elem_offset")) seen = &have_off;
        else if (tok_is(P, k, "align")) seen = &have_align;
        else if (alloc_annots && tok_is(P, k, "annotations")) seen = &have_annots;
        else return PERR(P, k, "unknown buffer argument '%.*s'", (int)k->len, P->src + k->pos);
        if (*seen) return PERR(P, k, "argument '%.*s' given twice", (int)k->len, P->src + k->pos);
        *seen = true;
        if (seen == &have_strides) {
            if (!parse_shape(P, &strides, "strides")) return NULL;
            if (strides.n != shape.n)
                return TERR(P, k, "%d strides for a %d-dimensional buffer", strides.n, shape.n);
        } else if (seen == &have_scope) {
            const ir_token *st = cur(P);
            const char *sc = expect_string(P, "a scope");
            if (!sc) return NULL;
            if (!tir_scope_parse(sc, strlen(sc), &d.scope))
                return PERR(P, st, "unknown storage scope \"%s\"", sc);
        } else if (seen == &have_annots) {
            if (!parse_dict(P, alloc_annots)) return NULL;
        } else if (seen == &have_off) {
            const ir_token *st = cur(P);
            const tir_expr *e = parse_expr(P);
            if (!e) return NULL;
            if (!tir_dtype_is_int(e->dtype) || e->dtype.lanes != 1)
                return TERR(P, st, "elem_offset must be an integer, got %s", dstr(P, e->dtype));
            d.elem_offset = e;
        } else {
            const ir_token *at = cur(P);
            if (at->kind != TK_INT || at->ival < 1 || at->ival > (1u << 30))
                return PERR(P, at, "align must be a positive integer");
            d.align = (int)at->ival;
            advance(P);
        }
    }
    if (!expect(P, TK_RPAREN)) return NULL;
    d.ndim = shape.n;
    d.shape = shape.items;
    d.strides = have_strides ? strides.items : NULL;
    return tir_buffer_new(P->ctx, &d);
}

/* ------------------------------------------------------------- statements */

typedef struct block_state {
    gvec iters, values, reads, writes, allocs, annots;
    const tir_expr *predicate;
    const tir_stmt *init;
    bool have_reads, have_writes, have_attr;
} block_state;

static const tir_stmt *parse_stmt_list(parser *P);
static const tir_stmt *parse_stmt(parser *P, bool *rest_taken);

static bool end_of_line(parser *P) {
    if (accept(P, TK_NEWLINE)) return true;
    if (cur(P)->kind == TK_EOF || cur(P)->kind == TK_DEDENT) return true;
    PERR(P, cur(P), "expected end of line, got %s", tok_desc(P, cur(P)));
    return false;
}

static bool suite_open(parser *P) {
    if (!expect(P, TK_COLON)) return false;
    if (cur(P)->kind != TK_NEWLINE) {
        PERR(P, cur(P), "expected a new line after ':' (statements go on their own indented lines)");
        return false;
    }
    advance(P);
    if (cur(P)->kind != TK_INDENT) {
        PERR(P, cur(P), "expected an indented block");
        return false;
    }
    advance(P);
    return true;
}

static bool suite_close(parser *P) {
    if (accept(P, TK_DEDENT) || cur(P)->kind == TK_EOF) return true;
    PERR(P, cur(P), "expected a dedent, got %s", tok_desc(P, cur(P)));
    return false;
}

/* ':' NEWLINE INDENT stmt+ DEDENT */
static const tir_stmt *parse_suite(parser *P) {
    if (!suite_open(P)) return NULL;
    scope sc = scope_open(P);
    const tir_stmt *s = parse_stmt_list(P);
    scope_close(P, sc);
    if (!s || !suite_close(P)) return NULL;
    return s;
}

/* Statements up to a DEDENT or the end (not consumed). */
static const tir_stmt *parse_stmt_list(parser *P) {
    gvec v = {0};
    while (cur(P)->kind != TK_DEDENT && cur(P)->kind != TK_EOF) {
        bool rest = false;
        const tir_stmt *s = parse_stmt(P, &rest);
        if (!s) return NULL;
        GV_PUSH(P, &v, const tir_stmt *, s);
        if (rest) break;
    }
    if (v.n == 0)
        return PERR(P, cur(P), "expected a statement, got %s",
                    cur(P)->kind == TK_DEDENT ? "the end of the block" : tok_desc(P, cur(P)));
    return tir_seq_new(P->ctx, v.n, v.items);
}

/* Positional args and keyword args of a loop call: T.serial(a[, b], k=v). */
static const tir_stmt *parse_for(parser *P) {
    advance(P);
    /* Arena arrays, not stack ones: this frame recurses through the body. */
    const ir_token **targets = IR_NEWN(P->ctx, const ir_token *, 64);
    int ntargets = 0;
    for (;;) {
        const ir_token *t = cur(P);
        if (t->kind != TK_NAME) return PERR(P, t, "expected a loop variable name, got %s", tok_desc(P, t));
        if (ntargets == 64) return PERR(P, t, "too many loop variables");
        targets[ntargets++] = t;
        advance(P);
        if (!accept(P, TK_COMMA)) break;
    }
    if (!expect_kw(P, "in")) return NULL;
    const ir_token *it = cur(P);
    bool is_range = tok_is(P, it, "range");
    const ir_token *kt = is_range ? it : t_attr_at(P, 0);
    if (!kt) return PERR(P, it, "expected T.serial, T.parallel, T.vectorized, T.unroll, T.thread_binding, T.grid or range");
    tir_for_kind kind = TIR_FOR_SERIAL;
    bool grid = false;
    if (is_range || tok_is(P, kt, "serial")) kind = TIR_FOR_SERIAL;
    else if (tok_is(P, kt, "parallel")) kind = TIR_FOR_PARALLEL;
    else if (tok_is(P, kt, "vectorized")) kind = TIR_FOR_VECTORIZED;
    else if (tok_is(P, kt, "unroll")) kind = TIR_FOR_UNROLLED;
    else if (tok_is(P, kt, "thread_binding")) kind = TIR_FOR_THREAD_BINDING;
    else if (tok_is(P, kt, "grid")) grid = true;
    else return PERR(P, kt, "unknown loop kind T.%.*s", (int)kt->len, P->src + kt->pos);
    P->i += is_range ? 1 : 3;
    const ir_token *open = cur(P);
    if (!expect(P, TK_LPAREN)) return NULL;
    gvec pos = {0}, annots = {0};
    const char *thread = NULL;
    bool have_annots = false;
    while (cur(P)->kind != TK_RPAREN) {
        const ir_token *k = cur(P);
        if (k->kind == TK_NAME && peek(P, 1)->kind == TK_ASSIGN) {
            advance(P);
            advance(P);
            if (tok_is(P, k, "annotations") && !grid && !is_range && !have_annots) {
                have_annots = true;
                if (!parse_dict(P, &annots)) return NULL;
            } else if (tok_is(P, k, "thread") && kind == TIR_FOR_THREAD_BINDING && !thread) {
                const ir_token *st = cur(P);
                if (!(thread = expect_string(P, "a thread tag"))) return NULL;
                if (!*thread) return PERR(P, st, "empty thread tag");
                if (!ir_thread_axis_find(thread))
                    return PERR(P, st, "unknown thread tag \"%s\"; use one of%s", thread,
                                tir_thread_axis_tags(false));
            } else {
                return PERR(P, k, "unexpected argument '%.*s'", (int)k->len, P->src + k->pos);
            }
        } else {
            if (have_annots || thread) return PERR(P, k, "positional argument after keyword argument");
            const tir_expr *e = parse_expr(P);
            if (!e) return NULL;
            if (!tir_dtype_is_int(e->dtype) || e->dtype.lanes != 1)
                return TERR(P, k, "loop bounds must be integers, got %s", dstr(P, e->dtype));
            GV_PUSH(P, &pos, const tir_expr *, e);
        }
        if (!accept(P, TK_COMMA)) break;
    }
    if (!expect(P, TK_RPAREN)) return NULL;
    const tir_expr *const *args = pos.items;
    tir_range *rg = IR_NEWN(P->ctx, tir_range, ntargets);
    int nloops = 1;
    if (grid) {
        if (pos.n != ntargets)
            return PERR(P, open, "T.grid has %d extent%s for %d loop variable%s", pos.n,
                        pos.n == 1 ? "" : "s", ntargets, ntargets == 1 ? "" : "s");
        nloops = ntargets;
        for (int k = 0; k < nloops; k++) {
            rg[k].min = tir_int(P->ctx, args[k]->dtype, 0);
            rg[k].extent = args[k];
        }
    } else {
        if (ntargets != 1)
            return PERR(P, targets[1], "only T.grid binds several loop variables");
        if (kind == TIR_FOR_THREAD_BINDING && !thread)
            return PERR(P, open, "T.thread_binding needs thread=\"...\"");
        if (pos.n == 1) {
            rg[0].min = tir_int(P->ctx, args[0]->dtype, 0);
            rg[0].extent = args[0];
        } else if (pos.n == 2) {
            if (!tir_dtype_eq(args[0]->dtype, args[1]->dtype))
                return TERR(P, open, "loop bounds differ in type: %s and %s", dstr(P, args[0]->dtype),
                            dstr(P, args[1]->dtype));
            if (!range_from_stop(P, open, args[0], args[1], &rg[0])) return NULL;
        } else {
            return PERR(P, open, "expected 1 or 2 loop bounds, got %d", pos.n);
        }
    }
    scope sc = scope_open(P);
    const tir_var **vars = IR_NEWN(P->ctx, const tir_var *, nloops);
    for (int k = 0; k < nloops; k++) {
        if (!(vars[k] = define_var(P, targets[k], rg[k].extent->dtype))) return NULL;
        sym *s = &P->syms[P->nsyms - 1];
        s->loop_min = rg[k].min;
        s->loop_extent = rg[k].extent;
    }
    if (!suite_open(P)) return NULL;
    const tir_stmt *body = parse_stmt_list(P);
    scope_close(P, sc);
    if (!body || !suite_close(P)) return NULL;
    for (int k = nloops - 1; k >= 0; k--)
        body = tir_for_new(P->ctx, vars[k], rg[k].min, rg[k].extent, kind, grid ? NULL : thread,
                           grid ? 0 : annots.n, annots.items, body);
    return body;
}

static const tir_stmt *parse_if(parser *P) {
    const ir_token *t = cur(P);
    advance(P);
    const tir_expr *c = parse_expr(P);
    if (!c) return NULL;
    if (!tir_dtype_eq(c->dtype, TIR_BOOL))
        return TERR(P, t, "'if' condition must be bool, got %s", dstr(P, c->dtype));
    const tir_stmt *then_s = parse_suite(P), *else_s = NULL;
    if (!then_s) return NULL;
    if (tok_is(P, cur(P), "else")) {
        advance(P);
        if (!(else_s = parse_suite(P))) return NULL;
    } else if (tok_is(P, cur(P), "elif")) {
        if (!enter(P)) return NULL;
        else_s = parse_if(P);
        leave(P);
        if (!else_s) return NULL;
    }
    return tir_if_new(P->ctx, c, then_s, else_s);
}

/* Is the token run at the cursor "a, b = T.axis...." / "a = T.alloc_buffer"?
 * Returns the token of the T.<name> call's attribute after '='. */
static const ir_token *assign_rhs(const parser *P, int *nlhs) {
    int k = 0;
    *nlhs = 0;
    for (;;) {
        if (peek(P, k)->kind != TK_NAME) return NULL;
        (*nlhs)++;
        k++;
        if (peek(P, k)->kind == TK_COMMA) {
            k++;
            continue;
        }
        break;
    }
    if (peek(P, k)->kind != TK_ASSIGN) return NULL;
    const ir_token *a = t_attr_at(P, k + 1);
    if (!a) return NULL;
    if (tok_is(P, a, "axis")) {
        if (peek(P, k + 4)->kind == TK_DOT && peek(P, k + 5)->kind == TK_NAME) return peek(P, k + 5);
        return NULL;
    }
    return a;
}

static bool is_axis_name(const parser *P, const ir_token *a) {
    return tok_is(P, a, "remap") || tok_is(P, a, "spatial") || tok_is(P, a, "reduce") ||
           tok_is(P, a, "S") || tok_is(P, a, "R");
}

/* Iterator declarations: the cursor is on the first target name. */
static bool parse_axis(parser *P, block_state *bs, int nlhs, const ir_token *kind_tok) {
    const ir_token *targets[64];
    if (nlhs > 64) return PERR(P, cur(P), "too many iterators in one declaration"), false;
    for (int k = 0; k < nlhs; k++) {
        targets[k] = cur(P);
        advance(P);
        if (k + 1 < nlhs) advance(P); /* ',' */
    }
    advance(P); /* '=' */
    P->i += 5;  /* T . axis . name */
    const ir_token *open = cur(P);
    if (!expect(P, TK_LPAREN)) return false;
    if (tok_is(P, kind_tok, "remap")) {
        const ir_token *st = cur(P);
        const char *kinds = expect_string(P, "the iterator kinds (\"SSR\")");
        if (!kinds || !expect(P, TK_COMMA) || !expect(P, TK_LBRACK)) return false;
        if ((int)strlen(kinds) != nlhs)
            return PERR(P, st, "%d iterator kinds for %d variable%s", (int)strlen(kinds), nlhs,
                        nlhs == 1 ? "" : "s"), false;
        for (int k = 0; k < nlhs; k++) {
            if (kinds[k] != 'S' && kinds[k] != 'R')
                return PERR(P, st, "iterator kinds are 'S' (spatial) or 'R' (reduce), got '%c'", kinds[k]), false;
        }
        const sym *loops[64];
        int n = 0;
        while (cur(P)->kind != TK_RBRACK) {
            const ir_token *t = cur(P);
            if (t->kind != TK_NAME) return PERR(P, t, "T.axis.remap expects loop variables"), false;
            const sym *s = sym_find(P, tok_name(P, t));
            if (!s) return PERR(P, t, "name '%.*s' is not defined", (int)t->len, P->src + t->pos), false;
            if (s->kind != SYM_VAR || !s->loop_min)
                return PERR(P, t, "'%s' is not a loop variable (use T.axis.spatial/reduce)", s->name), false;
            if (n == 64) return PERR(P, t, "too many iterators"), false;
            loops[n++] = s;
            advance(P);
            if (!accept(P, TK_COMMA)) break;
        }
        if (!expect(P, TK_RBRACK) || !expect(P, TK_RPAREN)) return false;
        if (n != nlhs) return PERR(P, open, "%d loop variables for %d iterators", n, nlhs), false;
        tir_iter_var ivs[64];
        for (int k = 0; k < nlhs; k++) {
            ivs[k].dom.min = loops[k]->loop_min;
            ivs[k].dom.extent = loops[k]->loop_extent;
            ivs[k].kind = kinds[k] == 'R' ? TIR_ITER_REDUCE : TIR_ITER_SPATIAL;
        }
        for (int k = 0; k < nlhs; k++) {
            if (!(ivs[k].var = define_var(P, targets[k], loops[k]->var->base.dtype))) return false;
            GV_PUSH(P, &bs->iters, tir_iter_var, ivs[k]);
            GV_PUSH(P, &bs->values, const tir_expr *, &loops[k]->var->base);
        }
        return true;
    }
    if (nlhs != 1) return PERR(P, targets[1], "T.axis.%.*s defines one iterator", (int)kind_tok->len,
                               P->src + kind_tok->pos), false;
    tir_iter_var iv;
    iv.kind = tok_is(P, kind_tok, "reduce") || tok_is(P, kind_tok, "R") ? TIR_ITER_REDUCE : TIR_ITER_SPATIAL;
    const ir_token *dt = cur(P);
    gvec dom = {0};
    if (!parse_shape(P, &dom, "iterator bounds")) return false;
    if (dom.n == 1) {
        iv.dom.extent = ((const tir_expr **)dom.items)[0];
        iv.dom.min = tir_int(P->ctx, iv.dom.extent->dtype, 0);
    } else if (dom.n == 2) {
        const tir_expr *const *d = dom.items;
        if (!range_from_stop(P, dt, d[0], d[1], &iv.dom)) return false;
    } else {
        return PERR(P, dt, "an iterator domain is an extent or (start, stop)"), false;
    }
    if (!accept(P, TK_COMMA) || cur(P)->kind == TK_RPAREN)
        return PERR(P, cur(P), "T.axis.%.*s needs a binding value", (int)kind_tok->len,
                    P->src + kind_tok->pos), false;
    const ir_token *vt = cur(P);
    const tir_expr *value = parse_expr(P);
    if (!value) return false;
    accept(P, TK_COMMA);
    if (!expect(P, TK_RPAREN)) return false;
    if (!tir_dtype_is_int(value->dtype) || value->dtype.lanes != 1)
        return TERR(P, vt, "iterator bindings must be integers, got %s", dstr(P, value->dtype)), false;
    if (!(iv.var = define_var(P, targets[0], value->dtype))) return false;
    GV_PUSH(P, &bs->iters, tir_iter_var, iv);
    GV_PUSH(P, &bs->values, const tir_expr *, value);
    return true;
}

static bool parse_regions(parser *P, gvec *out) {
    if (!expect(P, TK_LPAREN)) return false;
    bool list = accept(P, TK_LBRACK);
    ir_tok_kind close = list ? TK_RBRACK : TK_RPAREN;
    while (cur(P)->kind != close) {
        tir_buffer_region r;
        if (!parse_region(P, &r)) return false;
        GV_PUSH(P, out, tir_buffer_region, r);
        if (!accept(P, TK_COMMA)) break;
    }
    if (!expect(P, close)) return false;
    if (list && !expect(P, TK_RPAREN)) return false;
    return end_of_line(P);
}

/* One block header item, or false with *done when the body starts. */
static bool parse_block_header(parser *P, block_state *bs, bool *done) {
    *done = false;
    const ir_token *t = cur(P);
    int nlhs;
    const ir_token *rhs = assign_rhs(P, &nlhs);
    if (rhs && is_axis_name(P, rhs) && tok_is(P, peek(P, 2 * nlhs + 2), "axis")) {
        if (!parse_axis(P, bs, nlhs, rhs)) return false;
        return end_of_line(P);
    }
    if (rhs && nlhs == 1 && tok_is(P, rhs, "alloc_buffer")) {
        const char *name = tok_name(P, t);
        P->i += 5;
        if (!expect(P, TK_LPAREN)) return false;
        const tir_buffer *b = parse_buffer_args(P, name, NULL);
        if (!b) return false;
        sym *s = sym_define(P, t, name);
        if (!s) return false;
        s->kind = SYM_BUFFER;
        s->buf = b;
        GV_PUSH(P, &bs->allocs, const tir_buffer *, b);
        return end_of_line(P);
    }
    const ir_token *a = t_attr_at(P, 0);
    if (a && tok_is(P, a, "where")) {
        if (bs->predicate) return PERR(P, t, "T.where given twice"), false;
        P->i += 3;
        const tir_expr *e;
        if (!parse_args_n(P, a, 1, &e)) return false;
        if (!tir_dtype_eq(e->dtype, TIR_BOOL))
            return TERR(P, a, "T.where needs a bool condition, got %s", dstr(P, e->dtype)), false;
        bs->predicate = e;
        return end_of_line(P);
    }
    if (a && (tok_is(P, a, "reads") || tok_is(P, a, "writes"))) {
        bool reads = tok_is(P, a, "reads");
        bool *have = reads ? &bs->have_reads : &bs->have_writes;
        if (*have) return PERR(P, t, "T.%s given twice", reads ? "reads" : "writes"), false;
        *have = true;
        P->i += 3;
        return parse_regions(P, reads ? &bs->reads : &bs->writes);
    }
    if (a && tok_is(P, a, "block_attr")) {
        if (bs->have_attr) return PERR(P, t, "T.block_attr given twice"), false;
        bs->have_attr = true;
        P->i += 3;
        if (!expect(P, TK_LPAREN) || !parse_dict(P, &bs->annots) || !expect(P, TK_RPAREN))
            return false;
        return end_of_line(P);
    }
    if (tok_is(P, t, "with") && t_attr_at(P, 1) && tok_is(P, t_attr_at(P, 1), "init")) {
        if (bs->init) return PERR(P, t, "a block has one T.init()"), false;
        P->i += 4;
        if (!expect(P, TK_LPAREN) || !expect(P, TK_RPAREN)) return false;
        if (!enter(P)) return false;
        bs->init = parse_suite(P);
        leave(P);
        return bs->init != NULL;
    }
    *done = true;
    return false;
}

static const tir_stmt *parse_block(parser *P) {
    P->i += 4; /* with T . block */
    if (!expect(P, TK_LPAREN)) return NULL;
    const char *name = expect_string(P, "the block name");
    if (!name) return NULL;
    accept(P, TK_COMMA);
    if (!expect(P, TK_RPAREN) || !suite_open(P)) return NULL;
    scope sc = scope_open(P);
    block_state bs;
    memset(&bs, 0, sizeof bs);
    for (;;) {
        bool done;
        if (cur(P)->kind == TK_DEDENT || cur(P)->kind == TK_EOF) break;
        if (!parse_block_header(P, &bs, &done)) {
            if (!done) {
                scope_close(P, sc);
                return NULL;
            }
            break;
        }
    }
    const tir_stmt *body;
    if (cur(P)->kind == TK_DEDENT || cur(P)->kind == TK_EOF)
        body = tir_evaluate_new(P->ctx, tir_i32(P->ctx, 0));
    else
        body = parse_stmt_list(P);
    scope_close(P, sc);
    if (!body || !suite_close(P)) return NULL;
    tir_block_desc d;
    memset(&d, 0, sizeof d);
    d.name = name;
    d.niters = bs.iters.n;
    d.iters = bs.iters.items;
    d.nreads = bs.reads.n;
    d.reads = bs.reads.items;
    d.nwrites = bs.writes.n;
    d.writes = bs.writes.items;
    d.init = bs.init;
    d.body = body;
    d.nallocs = bs.allocs.n;
    d.allocs = bs.allocs.items;
    d.nannots = bs.annots.n;
    d.annots = bs.annots.items;
    const tir_block *b = tir_block_new(P->ctx, &d);
    return tir_block_realize_new(P->ctx, bs.values.n, bs.values.items, bs.predicate, b);
}

static const tir_stmt *parse_with(parser *P) {
    const ir_token *t = cur(P);
    const ir_token *a = t_attr_at(P, 1);
    if (a && tok_is(P, a, "block")) return parse_block(P);
    if (a && tok_is(P, a, "allocate")) {
        P->i += 4;
        if (!expect(P, TK_LPAREN)) return NULL;
        /* The name comes after 'as': read the arguments once to find it. */
        int args_at = P->i, depth = 1;
        while (depth > 0 && cur(P)->kind != TK_EOF) {
            ir_tok_kind k = cur(P)->kind;
            if (k == TK_LPAREN || k == TK_LBRACK || k == TK_LBRACE) depth++;
            if (k == TK_RPAREN || k == TK_RBRACK || k == TK_RBRACE) depth--;
            advance(P);
        }
        if (!expect_kw(P, "as")) return NULL;
        const ir_token *nt = cur(P);
        if (nt->kind != TK_NAME) return PERR(P, nt, "expected the buffer's name after 'as'");
        int after = P->i + 1;
        P->i = args_at;
        const char *name = tok_name(P, nt);
        gvec annots = {0};
        const tir_buffer *b = parse_buffer_args(P, name, &annots);
        if (!b) return NULL;
        if (P->i != after - 2) return PERR(P, cur(P), "expected 'as' after T.allocate(...)");
        P->i = after;
        scope sc = scope_open(P);
        sym *s = sym_define(P, nt, name);
        if (!s) return NULL;
        s->kind = SYM_BUFFER;
        s->buf = b;
        if (!suite_open(P)) return NULL;
        const tir_stmt *body = parse_stmt_list(P);
        scope_close(P, sc);
        if (!body || !suite_close(P)) return NULL;
        return tir_allocate_annotated(P->ctx, b, annots.n, annots.items, body);
    }
    if (a && tok_is(P, a, "init"))
        return PERR(P, t, "with T.init() must come right after a block's declarations");
    return PERR(P, t, "expected 'with T.block(...)' or 'with T.allocate(...) as name'");
}

static const tir_stmt *parse_stmt_inner(parser *P, bool *rest_taken) {
    const ir_token *t = cur(P);
    if (t->kind == TK_INDENT) return PERR(P, t, "unexpected indent");
    if (tok_is(P, t, "for")) return parse_for(P);
    if (tok_is(P, t, "if")) return parse_if(P);
    if (tok_is(P, t, "with")) return parse_with(P);
    if (tok_is(P, t, "else") || tok_is(P, t, "elif"))
        return PERR(P, t, "'%.*s' without a matching 'if'", (int)t->len, P->src + t->pos);
    int nlhs;
    const ir_token *rhs = assign_rhs(P, &nlhs);
    if (rhs) {
        if (nlhs == 1 && tok_is(P, rhs, "allocate")) {
            /* X = T.allocate(...): the rest of the suite is the body. */
            const char *name = tok_name(P, t);
            P->i += 5;
            if (!expect(P, TK_LPAREN)) return NULL;
            gvec annots = {0};
            const tir_buffer *b = parse_buffer_args(P, name, &annots);
            if (!b || !end_of_line(P)) return NULL;
            sym *s = sym_define(P, t, name);
            if (!s) return NULL;
            s->kind = SYM_BUFFER;
            s->buf = b;
            if (cur(P)->kind == TK_DEDENT || cur(P)->kind == TK_EOF)
                return PERR(P, t, "T.allocate must be followed by the statements that use '%s'", name);
            const tir_stmt *body = parse_stmt_list(P);
            if (!body) return NULL;
            *rest_taken = true;
            return tir_allocate_annotated(P->ctx, b, annots.n, annots.items, body);
        }
        bool axis = is_axis_name(P, rhs) && tok_is(P, peek(P, 2 * nlhs + 2), "axis");
        if (tok_is(P, rhs, "alloc_buffer") || axis)
            return PERR(P, t, "T.%s is only allowed at the start of a block, before its body",
                        axis ? "axis" : "alloc_buffer");
    }
    if (t->kind == TK_NAME && peek(P, 1)->kind == TK_LBRACK) {
        const ir_token *bt;
        const tir_buffer *b = expect_buffer(P, &bt);
        if (!b) return NULL;
        gvec idx = {0};
        if (!parse_indices(P, &idx)) return NULL;
        const ir_token *eq = cur(P);
        if (!expect(P, TK_ASSIGN)) return NULL;
        const tir_expr *v = parse_expr(P);
        if (!v) return NULL;
        int lanes;
        if (!check_indices(P, bt, b, idx.n, idx.items, &lanes)) return NULL;
        tir_dtype want = tir_dtype_with_lanes(b->dtype, lanes);
        if (!tir_dtype_eq(v->dtype, want))
            return TERR(P, eq, "cannot store %s into '%s' (needs %s)", dstr(P, v->dtype), b->name,
                        dstr(P, want));
        if (!end_of_line(P)) return NULL;
        return tir_store(P->ctx, b, v, idx.n, idx.items);
    }
    const ir_token *a = t_attr_at(P, 0);
    if (a) {
        if (tok_is(P, a, "evaluate")) {
            P->i += 3;
            const tir_expr *e;
            if (!parse_args_n(P, a, 1, &e) || !end_of_line(P)) return NULL;
            return tir_evaluate_new(P->ctx, e);
        }
        static const char *const header[] = {"reads", "writes", "where", "block_attr", "init"};
        for (size_t k = 0; k < sizeof header / sizeof header[0]; k++)
            if (tok_is(P, a, header[k]))
                return PERR(P, t, "T.%s is only allowed at the start of a block, before its body",
                            header[k]);
        if (tok_is(P, a, "func_attr"))
            return PERR(P, t, "T.func_attr must be the first statement of the function");
        const tir_expr *e = parse_expr(P);
        if (!e) return NULL;
        if (e->kind != TIR_KIND_CALL)
            return PERR(P, t, "an expression statement must be a call; use T.evaluate(...)");
        if (!end_of_line(P)) return NULL;
        return tir_evaluate_new(P->ctx, e);
    }
    if (t->kind == TK_NAME && peek(P, 1)->kind == TK_ASSIGN)
        return PERR(P, peek(P, 1), "only T.allocate, T.alloc_buffer and T.axis.* can be assigned to a name");
    return PERR(P, t, "expected a statement, got %s", tok_desc(P, t));
}

static const tir_stmt *parse_stmt(parser *P, bool *rest_taken) {
    if (!enter(P)) return NULL;
    const tir_stmt *s = parse_stmt_inner(P, rest_taken);
    leave(P);
    return s;
}

/* -------------------------------------------------------------- functions */

static bool body_has_block_pre(tir_visitor *v, const tir_node *n) {
    if (n->kind == TIR_KIND_BLOCK || n->kind == TIR_KIND_BLOCK_REALIZE) *(bool *)v->user = true;
    return !*(bool *)v->user;
}

/* Skips a balanced bracket group starting at the cursor ('(' ... ')'). */
static bool skip_group(parser *P) {
    int depth = 0;
    do {
        ir_tok_kind k = cur(P)->kind;
        if (k == TK_EOF) return PERR(P, cur(P), "unexpected end of input in the parameter list"), false;
        if (k == TK_LPAREN || k == TK_LBRACK || k == TK_LBRACE) depth++;
        if (k == TK_RPAREN || k == TK_RBRACK || k == TK_RBRACE) depth--;
        advance(P);
    } while (depth > 0);
    return true;
}

typedef struct param_info {
    const ir_token *name;
    int buf_at; /* token index of T.Buffer's '(' or -1 */
    const tir_var *var;
    const tir_buffer *buf;
} param_info;

static const tir_prim_func *parse_func(parser *P) {
    /* `from tvm.script import tir as T` and similar lines are allowed. */
    while (tok_is(P, cur(P), "from") || tok_is(P, cur(P), "import")) {
        while (cur(P)->kind != TK_NEWLINE && cur(P)->kind != TK_EOF) advance(P);
        accept(P, TK_NEWLINE);
    }
    if (cur(P)->kind == TK_INDENT) return PERR(P, cur(P), "unexpected indent");
    if (cur(P)->kind != TK_AT || !tok_is(P, peek(P, 1), "T") || peek(P, 2)->kind != TK_DOT ||
        !tok_is(P, peek(P, 3), "prim_func"))
        return PERR(P, cur(P), "expected '@T.prim_func'");
    P->i += 4;
    bool implicit_root = true;
    const char *fname = NULL;
    if (accept(P, TK_LPAREN)) {
        while (cur(P)->kind != TK_RPAREN) {
            const ir_token *k = cur(P);
            if (k->kind != TK_NAME || peek(P, 1)->kind != TK_ASSIGN)
                return PERR(P, k, "expected a keyword argument of T.prim_func");
            P->i += 2;
            if (tok_is(P, k, "implicit_root")) {
                const ir_token *v = cur(P);
                if (!tok_is(P, v, "True") && !tok_is(P, v, "False"))
                    return PERR(P, v, "implicit_root must be True or False");
                implicit_root = tok_is(P, v, "True");
                advance(P);
            } else if (tok_is(P, k, "name")) {
                if (!(fname = expect_string(P, "the function name"))) return NULL;
            } else {
                return PERR(P, k, "unknown T.prim_func argument '%.*s'", (int)k->len, P->src + k->pos);
            }
            if (!accept(P, TK_COMMA)) break;
        }
        if (!expect(P, TK_RPAREN)) return NULL;
    }
    if (!expect(P, TK_NEWLINE) || !expect_kw(P, "def")) return NULL;
    const ir_token *nt = cur(P);
    if (nt->kind != TK_NAME || ir_text_reserved(P->src + nt->pos, nt->len))
        return PERR(P, nt, "expected the function name, got %s", tok_desc(P, nt));
    if (!fname) fname = tok_name(P, nt);
    advance(P);
    if (!expect(P, TK_LPAREN)) return NULL;

    /* Pass 1: names and scalar parameters, so buffer shapes may use
     * scalars declared later in the list. */
    gvec params = {0}, pnames = {0};
    scope fscope = scope_open(P);
    while (cur(P)->kind != TK_RPAREN) {
        const ir_token *pt = cur(P);
        if (pt->kind != TK_NAME) return PERR(P, pt, "expected a parameter name, got %s", tok_desc(P, pt));
        const char *pname = tok_name(P, pt);
        if (ir_text_reserved(pname, strlen(pname)))
            return PERR(P, pt, "'%s' is reserved and cannot be defined", pname);
        for (int k = 0; k < pnames.n; k++)
            if (((const char **)pnames.items)[k] == pname)
                return PERR(P, pt, "duplicate parameter '%s'", pname);
        GV_PUSH(P, &pnames, const char *, pname);
        advance(P);
        if (!expect(P, TK_COLON)) return NULL;
        param_info pi = {pt, -1, NULL, NULL};
        const ir_token *a = t_attr_at(P, 0);
        if (!a) return PERR(P, cur(P), "expected a parameter type (T.Buffer(...) or T.<dtype>)");
        if (tok_is(P, a, "Buffer")) {
            P->i += 3;
            if (cur(P)->kind != TK_LPAREN) return PERR(P, cur(P), "expected '(' after T.Buffer");
            pi.buf_at = P->i;
            if (!skip_group(P)) return NULL;
        } else {
            tir_dtype dt;
            if (!tir_dtype_parse(P->src + a->pos, a->len, &dt))
                return PERR(P, a, "unknown parameter type T.%.*s", (int)a->len, P->src + a->pos);
            P->i += 3;
            if (!(pi.var = define_var(P, pt, dt))) return NULL;
        }
        GV_PUSH(P, &params, param_info, pi);
        if (!accept(P, TK_COMMA)) break;
    }
    if (!expect(P, TK_RPAREN)) return NULL;
    int after_params = P->i;

    /* Pass 2: buffer parameters, in order. */
    P->in_signature = true;
    P->param_names = pnames.items;
    P->nparam_names = pnames.n;
    param_info *pis = params.items;
    for (int k = 0; k < params.n; k++) {
        if (pis[k].buf_at < 0) continue;
        P->i = pis[k].buf_at + 1;
        const char *pname = tok_name(P, pis[k].name);
        const tir_buffer *b = parse_buffer_args(P, pname, NULL);
        if (!b) return NULL;
        sym *s = sym_define(P, pis[k].name, pname);
        if (!s) return NULL;
        s->kind = SYM_BUFFER;
        s->buf = b;
        pis[k].buf = b;
        pis[k].var = tir_var_new(P->ctx, pname, TIR_HANDLE);
    }
    P->in_signature = false;
    P->i = after_params;

    if (accept(P, TK_ARROW) && !expect_kw(P, "None")) return NULL;
    if (!suite_open(P)) return NULL;
    gvec attrs = {0};
    while (at_t(P, "func_attr")) {
        P->i += 3;
        if (!expect(P, TK_LPAREN) || !parse_dict(P, &attrs) || !expect(P, TK_RPAREN)) return NULL;
        if (!end_of_line(P)) return NULL;
    }
    const tir_stmt *body = parse_stmt_list(P);
    if (!body || !suite_close(P)) return NULL;
    if (cur(P)->kind != TK_EOF)
        return PERR(P, cur(P), "unexpected %s after the function", tok_desc(P, cur(P)));
    scope_close(P, fscope);

    const tir_block_realize *r = tir_as_tir_block_realize(body);
    bool is_root = r && strcmp(r->block->name, "root") == 0;
    if (implicit_root && !is_root) {
        bool has_block = false;
        tir_visitor v = {.pre = body_has_block_pre, .user = &has_block};
        tir_visit(&v, body);
        if (has_block) {
            tir_block_desc d;
            memset(&d, 0, sizeof d);
            d.name = "root";
            d.body = body;
            body = tir_block_realize_new(P->ctx, 0, NULL, NULL, tir_block_new(P->ctx, &d));
        }
    }
    const tir_var **pv = IR_NEWN(P->ctx, const tir_var *, params.n);
    const tir_buffer **pb = IR_NEWN(P->ctx, const tir_buffer *, params.n);
    for (int k = 0; k < params.n; k++) {
        pv[k] = pis[k].var;
        pb[k] = pis[k].buf;
    }
    return tir_prim_func_new(P->ctx, fname, params.n, pv, pb, body, attrs.n, attrs.items);
}

tir_status tir_parse_func(tir_ctx *ctx, const char *text, size_t len, const tir_prim_func **out) {
    *out = NULL;
    parser P;
    memset(&P, 0, sizeof P);
    P.ctx = ctx;
    P.src = text ? text : "";
    tir_status s = ir_lex(ctx, P.src, text ? len : 0, &P.toks, &P.ntoks);
    if (s != TIR_OK) return s;
    const tir_prim_func *f = parse_func(&P);
    free(P.toks);
    free(P.syms);
    if (!f) {
        TIR_ASSERT(P.failed);
        return tir_ctx_error_code(ctx);
    }
    *out = f;
    return TIR_OK;
}

/* ------------------------------------------------------------- index maps */

/* The index of the token closing the bracket at token `open`. */
static int matching_close(const parser *P, int open) {
    int depth = 0;
    for (int k = open; k < P->ntoks; k++) {
        ir_tok_kind t = P->toks[k].kind;
        if (t == TK_LPAREN || t == TK_LBRACK) depth++;
        if ((t == TK_RPAREN || t == TK_RBRACK) && --depth == 0) return k;
    }
    return -1;
}

static bool at_end(const parser *P) {
    const ir_token *t = cur(P);
    return t->kind == TK_EOF || (t->kind == TK_NEWLINE && peek(P, 1)->kind == TK_EOF);
}

/* lambda-form body: the outputs as a tuple, a list, or bare commas. */
static bool parse_index_map_body(parser *P, gvec *outs) {
    const ir_token *t = cur(P);
    if (t->kind == TK_LPAREN || t->kind == TK_LBRACK) {
        int close = matching_close(P, P->i);
        bool whole = close > 0 && (P->toks[close + 1].kind == TK_EOF ||
                                   (P->toks[close + 1].kind == TK_NEWLINE &&
                                    P->toks[close + 2].kind == TK_EOF));
        if (whole) {
            advance(P);
            return parse_expr_list(P, t->kind == TK_LPAREN ? TK_RPAREN : TK_RBRACK, outs);
        }
    }
    while (!at_end(P)) {
        const tir_expr *e = parse_expr(P);
        if (!e) return false;
        GV_PUSH(P, outs, const tir_expr *, e);
        if (!accept(P, TK_COMMA)) break;
    }
    return true;
}

static bool parse_index_map(parser *P, tir_dtype dt, gvec *vars, gvec *outs) {
    if (!expect_kw(P, "lambda")) return false;
    while (cur(P)->kind == TK_NAME) {
        const tir_var *v = define_var(P, cur(P), dt);
        if (!v) return false;
        advance(P);
        GV_PUSH(P, vars, const tir_var *, v);
        if (!accept(P, TK_COMMA)) break;
    }
    if (!expect(P, TK_COLON) || !parse_index_map_body(P, outs)) return false;
    for (int k = 0; k < outs->n; k++) {
        const tir_expr *e = ((const tir_expr **)outs->items)[k];
        if (!tir_dtype_eq(e->dtype, dt))
        {
            TERR(P, cur(P), "output %d of the index map is %s, not %s", k, dstr(P, e->dtype),
                 dstr(P, dt));
            return false;
        }
    }
    accept(P, TK_NEWLINE);
    if (cur(P)->kind == TK_EOF) return true;
    PERR(P, cur(P), "expected the end of the index map, got %s", tok_desc(P, cur(P)));
    return false;
}

tir_status ir_parse_index_map(tir_ctx *ctx, const char *text, size_t len, tir_dtype dt,
                              ir_index_map *out) {
    memset(out, 0, sizeof *out);
    parser P;
    memset(&P, 0, sizeof P);
    P.ctx = ctx;
    P.src = text ? text : "";
    tir_status s = ir_lex(ctx, P.src, text ? len : 0, &P.toks, &P.ntoks);
    if (s != TIR_OK) return s;
    gvec vars = {0}, outs = {0};
    bool ok = parse_index_map(&P, dt, &vars, &outs);
    free(P.toks);
    free(P.syms);
    if (!ok) {
        TIR_ASSERT(P.failed);
        return tir_ctx_error_code(ctx);
    }
    out->nvars = vars.n;
    out->vars = vars.items;
    out->nouts = outs.n;
    out->outs = outs.items;
    return TIR_OK;
}
