/* interp.c: the reference interpreter.
 *
 * A function is first compiled (ir_prog_compile) into a private tree whose
 * variables are slots and whose nodes carry their type class, then run in
 * an environment (ir_env) that holds variable values and buffer storage;
 * see interp_internal.h for the design and for what a SIMT simulator may
 * reuse.
 *
 * Semantics, chosen to be those of the GPU code we compare against:
 *  - Integers wrap at their width (two's complement); Div / Mod truncate,
 *    FloorDiv / FloorMod round toward minus infinity; an integer division
 *    by zero is TIR_ERR_EVAL.  bool arithmetic is 1-bit (Add is xor, Mul
 *    is and), as LLVM's i1.
 *  - float32 is computed in float, float64 in double, float16 and bfloat16
 *    in float with the result of every operation rounded back to the
 *    16-bit type (nearest even).  Min / Max are codegen's `a < b or b is
 *    NaN ? a : b` (a NaN operand, signaling or quiet, loses; of two equal
 *    operands, such as +0 and -0, the second), not C's fminf / fmaxf.  So
 *    an f32 matmul equals a C loop `c = c + a * b` in float bit for bit
 *    (with no FMA contraction).
 *  - Float to int casts truncate and saturate to the target range (NaN
 *    gives 0), as PTX cvt.rzi.sat; int to bool and float to bool test != 0.
 *  - Select, And and Or evaluate only what decides the result, lane by
 *    lane: the untaken side of a Select is never evaluated, so the padding
 *    stage's guarded load (TVM writes T.if_then_else) reads no element out
 *    of bounds.
 *  - A block's iter vars take their bound values; the predicate guards the
 *    block (bindings included: they are evaluated only where it holds); a
 *    binding outside its iter var's domain (when the predicate
 *    holds) is TIR_ERR_EVAL, since it means ill-formed IR even where no
 *    access leaves its buffer.  The init runs when every reduce iter var
 *    equals its domain min.
 *  - Scalar parameters take tir_arg.scalar converted to their dtype (a
 *    float parameter gets the integer's value).
 *  - Buffer accesses check every index against its dimension's extent and
 *    the element against the "written" bytes of its storage; parameters
 *    start written unless opts->uninit_params says otherwise, allocations
 *    start unwritten.
 */
#include <math.h>
#include <stdarg.h>
#include <string.h>

#include "interp_internal.h"

/* The printer lives in another file of the layer and may not be linked into
 * every build of this one; when it is, error messages show the enclosing
 * block printed with the failing statement marked. */
#pragma weak tir_print_marked

static inline float round_f(ir_tc tc, float x) {
    if (tc == IR_TC_F16) return ir_f16_to_float(ir_f16_from_double(x));
    if (tc == IR_TC_BF16) return ir_bf16_to_float(ir_bf16_from_double(x));
    return x;
}

/* ============================================================ type classes */

static int tc_of(tir_dtype t) {
    switch ((tir_type_code)t.code) {
    case TIR_TYPE_BOOL: return IR_TC_BOOL;
    case TIR_TYPE_INT:
        return t.bits == 8 ? IR_TC_I8 : t.bits == 32 ? IR_TC_I32 : t.bits == 64 ? IR_TC_I64 : -1;
    case TIR_TYPE_UINT: return t.bits == 8 ? IR_TC_U8 : -1;
    case TIR_TYPE_FLOAT:
        return t.bits == 16 ? IR_TC_F16 : t.bits == 32 ? IR_TC_F32 : t.bits == 64 ? IR_TC_F64 : -1;
    case TIR_TYPE_BFLOAT: return t.bits == 16 ? IR_TC_BF16 : -1;
    case TIR_TYPE_HANDLE: return IR_TC_HANDLE;
    case TIR_TYPE_VOID: return IR_TC_VOID;
    }
    return -1;
}

static inline bool tc_int(int tc) { return tc <= IR_TC_U8; } /* bool included */
static inline bool tc_flt(int tc) { return tc >= IR_TC_F16 && tc <= IR_TC_F32; }

static inline int64_t wrap(int tc, int64_t v) {
    switch (tc) {
    case IR_TC_BOOL: return v & 1;
    case IR_TC_I8: return (int8_t)v;
    case IR_TC_I32: return (int32_t)v;
    case IR_TC_U8: return (uint8_t)v;
    default: return v;
    }
}

static int elem_bytes(int tc) {
    switch (tc) {
    case IR_TC_BOOL:
    case IR_TC_I8:
    case IR_TC_U8: return 1;
    case IR_TC_F16:
    case IR_TC_BF16: return 2;
    case IR_TC_I32:
    case IR_TC_F32: return 4;
    default: return 8;
    }
}

static inline double as_double(int tc, ir_val v) {
    if (tc_int(tc)) return (double)v.i;
    if (tc == IR_TC_F64) return v.d;
    return v.f;
}

/* ============================================================ messages */

static void put_expr(ir_strbuf *sb, const tir_expr *e);

static const char *binop_sym(tir_kind k) {
    switch (k) {
    case TIR_KIND_ADD: return "+";
    case TIR_KIND_SUB: return "-";
    case TIR_KIND_MUL: return "*";
    case TIR_KIND_DIV: return "/";
    case TIR_KIND_MOD: return "%";
    case TIR_KIND_FLOORDIV: return "//";
    case TIR_KIND_EQ: return "==";
    case TIR_KIND_NE: return "!=";
    case TIR_KIND_LT: return "<";
    case TIR_KIND_LE: return "<=";
    case TIR_KIND_GT: return ">";
    case TIR_KIND_GE: return ">=";
    case TIR_KIND_AND: return "and";
    case TIR_KIND_OR: return "or";
    default: return NULL;
    }
}

static void put_exprs(ir_strbuf *sb, int n, const tir_expr *const *es) {
    for (int i = 0; i < n; i++) {
        if (i) ir_sb_puts(sb, ", ");
        put_expr(sb, es[i]);
    }
}

/* A one-line TVMScript-like rendering for error messages. */
static void put_expr(ir_strbuf *sb, const tir_expr *e) {
    char dt[32];
    tir_kind k = (tir_kind)e->kind;
    if (tir_kind_is_binop(k)) {
        const tir_binop *b = (const tir_binop *)e;
        if (k == TIR_KIND_MIN || k == TIR_KIND_MAX || k == TIR_KIND_FLOORMOD || k == TIR_KIND_DIV ||
            k == TIR_KIND_MOD) {
            ir_sb_printf(sb, "T.%s(", k == TIR_KIND_MIN   ? "min"
                                      : k == TIR_KIND_MAX ? "max"
                                      : k == TIR_KIND_DIV ? "Div"
                                      : k == TIR_KIND_MOD ? "truncmod"
                                                          : "floormod");
            put_expr(sb, b->a);
            ir_sb_puts(sb, ", ");
            put_expr(sb, b->b);
            ir_sb_putc(sb, ')');
            return;
        }
        ir_sb_putc(sb, '(');
        put_expr(sb, b->a);
        ir_sb_printf(sb, " %s ", binop_sym(k));
        put_expr(sb, b->b);
        ir_sb_putc(sb, ')');
        return;
    }
    switch (k) {
    case TIR_KIND_INT_IMM:
        if (tir_dtype_is_bool(e->dtype))
            ir_sb_puts(sb, ((const tir_int_imm *)e)->value ? "True" : "False");
        else
            ir_sb_printf(sb, "%lld", (long long)((const tir_int_imm *)e)->value);
        return;
    case TIR_KIND_FLOAT_IMM:
        ir_sb_printf(sb, "T.%s(%.9g)", tir_dtype_str(e->dtype, dt, sizeof dt),
                     ((const tir_float_imm *)e)->value);
        return;
    case TIR_KIND_VAR: ir_sb_puts(sb, ((const tir_var *)e)->name); return;
    case TIR_KIND_NOT:
        ir_sb_puts(sb, "not ");
        put_expr(sb, ((const tir_not *)e)->a);
        return;
    case TIR_KIND_SELECT: {
        const tir_select *s = (const tir_select *)e;
        const tir_expr *a[3] = {s->cond, s->t, s->f};
        ir_sb_puts(sb, "T.Select(");
        put_exprs(sb, 3, a);
        ir_sb_putc(sb, ')');
        return;
    }
    case TIR_KIND_CAST:
        ir_sb_printf(sb, "T.Cast(\"%s\", ", tir_dtype_str(e->dtype, dt, sizeof dt));
        put_expr(sb, ((const tir_cast *)e)->value);
        ir_sb_putc(sb, ')');
        return;
    case TIR_KIND_BUFFER_LOAD: {
        const tir_buffer_load *l = (const tir_buffer_load *)e;
        ir_sb_printf(sb, "%s[", l->buffer->name);
        put_exprs(sb, l->nidx, l->indices);
        ir_sb_putc(sb, ']');
        return;
    }
    case TIR_KIND_RAMP: {
        const tir_ramp *r = (const tir_ramp *)e;
        ir_sb_puts(sb, "T.Ramp(");
        put_expr(sb, r->start);
        ir_sb_puts(sb, ", ");
        put_expr(sb, r->stride);
        ir_sb_printf(sb, ", %d)", r->lanes);
        return;
    }
    case TIR_KIND_BROADCAST: {
        const tir_broadcast *b = (const tir_broadcast *)e;
        ir_sb_puts(sb, "T.Broadcast(");
        put_expr(sb, b->value);
        ir_sb_printf(sb, ", %d)", b->lanes);
        return;
    }
    case TIR_KIND_CALL: {
        const tir_call *c = (const tir_call *)e;
        ir_sb_printf(sb, "T.%s(", tir_intrin_name(c->op));
        put_exprs(sb, c->nargs, c->args);
        ir_sb_putc(sb, ')');
        return;
    }
    case TIR_KIND_LET: {
        const tir_let *l = (const tir_let *)e;
        ir_sb_printf(sb, "T.Let(%s, ", l->var->name);
        put_expr(sb, l->value);
        ir_sb_puts(sb, ", ");
        put_expr(sb, l->body);
        ir_sb_putc(sb, ')');
        return;
    }
    default: ir_sb_printf(sb, "<%s>", tir_kind_name(k)); return;
    }
}

static void put_stmt(ir_strbuf *sb, const tir_stmt *s) {
    switch ((tir_kind)s->kind) {
    case TIR_KIND_BUFFER_STORE: {
        const tir_buffer_store *st = (const tir_buffer_store *)s;
        ir_sb_printf(sb, "%s[", st->buffer->name);
        put_exprs(sb, st->nidx, st->indices);
        ir_sb_puts(sb, "] = ");
        put_expr(sb, st->value);
        return;
    }
    case TIR_KIND_FOR: {
        const tir_for *f = (const tir_for *)s;
        ir_sb_printf(sb, "for %s in range(", f->var->name);
        put_expr(sb, f->min);
        ir_sb_puts(sb, ", ");
        put_expr(sb, f->min);
        ir_sb_puts(sb, " + ");
        put_expr(sb, f->extent);
        ir_sb_puts(sb, "):");
        return;
    }
    case TIR_KIND_IF:
        ir_sb_puts(sb, "if ");
        put_expr(sb, ((const tir_if *)s)->cond);
        ir_sb_putc(sb, ':');
        return;
    case TIR_KIND_EVALUATE: put_expr(sb, ((const tir_evaluate *)s)->value); return;
    case TIR_KIND_ALLOCATE:
        ir_sb_printf(sb, "allocate %s", ((const tir_allocate *)s)->buffer->name);
        return;
    case TIR_KIND_BLOCK_REALIZE: {
        const tir_block_realize *r = (const tir_block_realize *)s;
        ir_sb_printf(sb, "with T.block(\"%s\"):", r->block->name);
        for (int i = 0; i < r->nvalues; i++) {
            ir_sb_printf(sb, " %s = ", r->block->iters[i].var->name);
            put_expr(sb, r->values[i]);
            if (i + 1 < r->nvalues) ir_sb_putc(sb, ';');
        }
        if (!tir_expr_const_int(r->predicate, NULL) ||
            ((const tir_int_imm *)r->predicate)->value != 1) {
            ir_sb_puts(sb, " where ");
            put_expr(sb, r->predicate);
        }
        return;
    }
    case TIR_KIND_BLOCK:
        ir_sb_printf(sb, "with T.block(\"%s\"):", ((const tir_block *)s)->name);
        return;
    default: ir_sb_printf(sb, "<%s>", tir_kind_name((tir_kind)s->kind)); return;
    }
}

tir_status ir_env_fail(ir_env *e, tir_status code, const char *fmt, ...) {
    if (e->status != TIR_OK) return e->status;
    ir_strbuf sb;
    ir_sb_init(&sb);
    /* GCC 12 with -fsanitize=undefined warns "null format string" below
     * (-Wformat-truncation) unless it knows fmt is not NULL. */
    if (!fmt) fmt = "";
    if (e->cur_block) ir_sb_printf(&sb, "in block \"%s\": ", e->cur_block->name);
    va_list ap;
    va_start(ap, fmt);
    ir_sb_vprintf(&sb, fmt, ap);
    va_end(ap);
    if (e->cur_stmt) {
        ir_sb_puts(&sb, "\n  at: ");
        put_stmt(&sb, e->cur_stmt);
        if (tir_print_marked) {
            const void *root = e->cur_block ? (const void *)e->cur_block : (const void *)e->prog->func;
            const void *mark = e->cur_stmt;
            ir_sb_printf(&sb, "\n%s", tir_print_marked(e->ctx, root, 1, &mark));
        }
    }
    tir_ctx_fail(e->ctx, code, "%s", sb.data);
    ir_sb_free(&sb);
    e->status = code;
    return code;
}

/* "A[1, 2] (shape [4, 4])" */
static void put_access(ir_strbuf *sb, const ir_mbuf *m, int n, const int64_t *idx) {
    ir_sb_printf(sb, "%s[", m->buffer->name);
    for (int d = 0; d < n; d++) ir_sb_printf(sb, "%s%lld", d ? ", " : "", (long long)idx[d]);
    ir_sb_puts(sb, "] (shape [");
    for (int d = 0; d < m->ndim; d++)
        ir_sb_printf(sb, "%s%lld", d ? ", " : "", (long long)m->shape[d]);
    ir_sb_puts(sb, "])");
}

static void fail_access(ir_env *e, tir_status code, bool store, const ir_mbuf *m, int n,
                        const int64_t *idx, const char *why) {
    ir_strbuf sb;
    ir_sb_init(&sb);
    ir_sb_printf(&sb, "%s of ", store ? "store" : "load");
    put_access(&sb, m, n, idx);
    ir_sb_printf(&sb, ": %s", why);
    ir_env_fail(e, code, "%s", sb.data);
    ir_sb_free(&sb);
}

/* ============================================================== compile */

typedef struct comp {
    tir_ctx *ctx;
    ir_arena *arena;
    tir_status st;
    /* var -> current slot + 1 (NULL: out of scope); buffer -> slot + 1 */
    ir_ptr_map vars, bufs;
    int nslots;
    int bn; /* buffer slots */
} comp;

#define CNEW(c, T) ((T *)ir_arena_alloc((c)->arena, sizeof(T)))
#define CNEWN(c, T, n) ((T *)ir_arena_alloc((c)->arena, sizeof(T) * (size_t)((n) > 0 ? (n) : 1)))

/* Slots live in the maps as slot + 1, so a missing key reads as -1. */
static int slot_get(const ir_ptr_map *m, const void *k) {
    return (int)(intptr_t)ir_ptr_map_get(m, k) - 1;
}
static void slot_put(ir_ptr_map *m, const void *k, int slot) {
    ir_ptr_map_put(m, k, (void *)(intptr_t)(slot + 1));
}

static int var_lookup(comp *c, const tir_var *v) { return slot_get(&c->vars, v); }

/* Gives v a fresh slot (lanes of them) and returns the previous binding,
 * to be restored with var_undefine when its scope ends. */
static int var_define(comp *c, const tir_var *v) {
    int old = slot_get(&c->vars, v);
    slot_put(&c->vars, v, c->nslots);
    c->nslots += v->base.dtype.lanes;
    return old;
}

static void var_undefine(comp *c, const tir_var *v, int old) { slot_put(&c->vars, v, old); }

static int buf_slot(comp *c, const tir_buffer *b) {
    int i = slot_get(&c->bufs, b);
    if (i < 0) slot_put(&c->bufs, b, i = c->bn++);
    return i;
}

static tir_status cfail(comp *c, tir_status code, const char *fmt, ...) TIR_PRINTF(3, 4);
static tir_status cfail(comp *c, tir_status code, const char *fmt, ...) {
    if (c->st != TIR_OK) return c->st;
    va_list ap;
    va_start(ap, fmt);
    char buf[512];
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    c->st = tir_ctx_fail(c->ctx, code, "%s", buf);
    return c->st;
}

static int check_dtype(comp *c, tir_dtype t, const char *where) {
    int tc = tc_of(t);
    if (tc < 0 || (tc == IR_TC_VOID && t.lanes != 1)) {
        char b[32];
        cfail(c, TIR_ERR_UNSUPPORTED, "interpreter: unsupported dtype %s in %s",
              tir_dtype_str(t, b, sizeof b), where);
        return -1;
    }
    if (t.lanes > IR_MAX_LANES) {
        cfail(c, TIR_ERR_UNSUPPORTED, "interpreter: %d lanes in %s (at most %d)", t.lanes, where,
              IR_MAX_LANES);
        return -1;
    }
    return tc;
}

static const ir_cexpr *cexpr(comp *c, const tir_expr *e);

static const ir_cexpr *const *cexprs(comp *c, int n, const tir_expr *const *es) {
    const ir_cexpr **out = CNEWN(c, const ir_cexpr *, n);
    for (int i = 0; i < n; i++) out[i] = cexpr(c, es[i]);
    return out;
}

static const ir_cexpr *cload(comp *c, const tir_buffer_load *l, bool addr) {
    ir_cexpr *x = CNEW(c, ir_cexpr);
    x->kind = TIR_KIND_BUFFER_LOAD;
    x->src = &l->base;
    x->lanes = addr ? 1 : l->base.dtype.lanes;
    int tc = check_dtype(c, l->buffer->dtype, l->buffer->name);
    if (tc < 0) return x;
    x->tc = (uint8_t)(addr ? IR_TC_HANDLE : tc);
    if (l->nidx != l->buffer->ndim) {
        cfail(c, TIR_ERR_EVAL, "buffer %s has rank %d but is accessed with %d indices",
              l->buffer->name, l->buffer->ndim, l->nidx);
        return x;
    }
    x->u.ld.buf = buf_slot(c, l->buffer);
    x->u.ld.nidx = l->nidx;
    x->u.ld.idx = cexprs(c, l->nidx, l->indices);
    x->u.ld.addr = addr;
    return x;
}

static const ir_cexpr *cexpr(comp *c, const tir_expr *e) {
    ir_cexpr *x = CNEW(c, ir_cexpr);
    x->kind = e->kind;
    x->src = e;
    x->lanes = e->dtype.lanes;
    int tc = check_dtype(c, e->dtype, tir_kind_name((tir_kind)e->kind));
    if (tc < 0) return x;
    x->tc = (uint8_t)tc;
    tir_kind k = (tir_kind)e->kind;
    if (tir_kind_is_binop(k)) {
        const tir_binop *b = (const tir_binop *)e;
        x->a = cexpr(c, b->a);
        x->b = cexpr(c, b->b);
        int otc = tc_of(b->a->dtype);
        if (otc == IR_TC_HANDLE && k != TIR_KIND_EQ && k != TIR_KIND_NE)
            cfail(c, TIR_ERR_UNSUPPORTED, "interpreter: %s on handles", tir_kind_name(k));
        x->otc = (uint8_t)(otc < 0 ? 0 : otc);
        return x;
    }
    switch (k) {
    case TIR_KIND_INT_IMM: {
        int64_t v = ((const tir_int_imm *)e)->value;
        if (tc == IR_TC_BOOL) v = v != 0;
        x->u.k.i = wrap(tc, v);
        return x;
    }
    case TIR_KIND_FLOAT_IMM: {
        double v = ((const tir_float_imm *)e)->value;
        if (tc == IR_TC_F64)
            x->u.k.d = v;
        else if (tc == IR_TC_F16)
            x->u.k.f = ir_f16_to_float(ir_f16_from_double(v));
        else if (tc == IR_TC_BF16)
            x->u.k.f = ir_bf16_to_float(ir_bf16_from_double(v));
        else
            x->u.k.f = (float)v;
        return x;
    }
    case TIR_KIND_VAR: {
        int s = var_lookup(c, (const tir_var *)e);
        if (s < 0)
            cfail(c, TIR_ERR_EVAL, "variable '%s' is used where it is not defined",
                  ((const tir_var *)e)->name);
        x->u.slot = s;
        return x;
    }
    case TIR_KIND_NOT: x->a = cexpr(c, ((const tir_not *)e)->a); return x;
    case TIR_KIND_SELECT: {
        const tir_select *s = (const tir_select *)e;
        x->a = cexpr(c, s->cond);
        x->b = cexpr(c, s->t);
        x->c = cexpr(c, s->f);
        return x;
    }
    case TIR_KIND_CAST: {
        const tir_expr *v = ((const tir_cast *)e)->value;
        x->a = cexpr(c, v);
        int otc = tc_of(v->dtype);
        if ((otc == IR_TC_HANDLE) != (tc == IR_TC_HANDLE) || tc == IR_TC_VOID)
            cfail(c, TIR_ERR_UNSUPPORTED, "interpreter: cast between a handle and a value");
        x->otc = (uint8_t)(otc < 0 ? 0 : otc);
        return x;
    }
    case TIR_KIND_BUFFER_LOAD: return cload(c, (const tir_buffer_load *)e, false);
    case TIR_KIND_RAMP: {
        const tir_ramp *r = (const tir_ramp *)e;
        x->a = cexpr(c, r->start);
        x->b = cexpr(c, r->stride);
        return x;
    }
    case TIR_KIND_BROADCAST: x->a = cexpr(c, ((const tir_broadcast *)e)->value); return x;
    case TIR_KIND_CALL: {
        const tir_call *call = (const tir_call *)e;
        x->u.call.op = call->op;
        x->u.call.nargs = call->nargs;
        if (call->op == TIR_INTRIN_ADDRESS_OF) {
            const tir_buffer_load *l = tir_as_tir_buffer_load(call->nargs == 1 ? call->args[0] : NULL);
            if (!l) {
                cfail(c, TIR_ERR_EVAL, "address_of needs one BufferLoad argument");
                return x;
            }
            const ir_cexpr **a = CNEWN(c, const ir_cexpr *, 1);
            a[0] = cload(c, l, true);
            x->u.call.args = a;
            return x;
        }
        if (call->nargs > (call->op == TIR_INTRIN_WGMMA_SYNC ? IR_MAX_CALL_ARGS : 8)) {
            cfail(c, TIR_ERR_UNSUPPORTED, "interpreter: call to %s with %d arguments",
                  tir_intrin_name(call->op), call->nargs);
            return x;
        }
        x->u.call.args = cexprs(c, call->nargs, call->args);
        return x;
    }
    case TIR_KIND_LET: {
        const tir_let *l = (const tir_let *)e;
        x->a = cexpr(c, l->value);
        int old = var_define(c, l->var);
        x->u.slot = var_lookup(c, l->var);
        x->b = cexpr(c, l->body);
        var_undefine(c, l->var, old);
        return x;
    }
    default:
        cfail(c, TIR_ERR_EVAL, "interpreter: unexpected %s in an expression", tir_kind_name(k));
        return x;
    }
}

/* A scalar integer expression (loop bounds, shapes, conditions). */
static const ir_cexpr *cscalar(comp *c, const tir_expr *e, bool want_bool, const char *what) {
    const ir_cexpr *x = cexpr(c, e);
    if (c->st == TIR_OK && (x->lanes != 1 || !tc_int(x->tc) || want_bool != (x->tc == IR_TC_BOOL)))
        cfail(c, TIR_ERR_EVAL, "%s must be a scalar %s", what, want_bool ? "bool" : "integer");
    return x;
}

static void cbuf(comp *c, const tir_buffer *b, ir_cbuf *out) {
    out->slot = buf_slot(c, b);
    out->buffer = b;
    if (b->ndim > IR_MAX_DIMS) {
        cfail(c, TIR_ERR_UNSUPPORTED, "interpreter: buffer %s has rank %d (at most %d)", b->name,
              b->ndim, IR_MAX_DIMS);
        return;
    }
    if (check_dtype(c, b->dtype, b->name) < 0) return;
    if (tc_of(b->dtype) >= IR_TC_HANDLE) {
        cfail(c, TIR_ERR_UNSUPPORTED, "interpreter: buffer %s of handles", b->name);
        return;
    }
    const ir_cexpr **sh = CNEWN(c, const ir_cexpr *, b->ndim);
    for (int d = 0; d < b->ndim; d++) sh[d] = cscalar(c, b->shape[d], false, "a buffer extent");
    out->shape = sh;
    if (b->strides) {
        const ir_cexpr **st = CNEWN(c, const ir_cexpr *, b->ndim);
        for (int d = 0; d < b->ndim; d++) st[d] = cscalar(c, b->strides[d], false, "a stride");
        out->strides = st;
    }
    out->elem_offset = cscalar(c, b->elem_offset, false, "an elem_offset");
}

static const ir_cstmt *cstmt(comp *c, const tir_stmt *s);

static void cblock(comp *c, const tir_block *b, int nvalues, const tir_expr *const *values,
                   const tir_expr *pred, ir_cblock *out) {
    out->block = b;
    if (nvalues != b->niters) {
        cfail(c, TIR_ERR_EVAL, "block \"%s\" has %d iter vars but %d bindings", b->name,
              b->niters, nvalues);
        return;
    }
    out->niters = b->niters;
    out->values = cexprs(c, nvalues, values);
    for (int i = 0; i < nvalues && c->st == TIR_OK; i++)
        if (out->values[i]->lanes != 1 || !tc_int(out->values[i]->tc))
            cfail(c, TIR_ERR_EVAL, "block \"%s\": binding %d is not a scalar integer", b->name, i);
    int64_t pv;
    if (pred && !(tir_expr_const_int(pred, &pv) && pv))
        out->predicate = cscalar(c, pred, true, "a block predicate");
    int *slots = CNEWN(c, int, b->niters), *olds = ir_xcalloc((size_t)b->niters + 1, sizeof(int));
    bool *reduce = CNEWN(c, bool, b->niters);
    const ir_cexpr **mins = CNEWN(c, const ir_cexpr *, b->niters);
    const ir_cexpr **exts = CNEWN(c, const ir_cexpr *, b->niters);
    for (int i = 0; i < b->niters; i++) {
        /* Domains are in the block's outer scope: compile them before any
         * iter var of this block is defined. */
        mins[i] = cscalar(c, b->iters[i].dom.min, false, "an iter var's domain min");
        exts[i] = cscalar(c, b->iters[i].dom.extent, false, "an iter var's domain extent");
        reduce[i] = b->iters[i].kind == TIR_ITER_REDUCE;
    }
    for (int i = 0; i < b->niters; i++) {
        olds[i] = var_define(c, b->iters[i].var);
        slots[i] = var_lookup(c, b->iters[i].var);
    }
    out->iter_slots = slots;
    out->iter_reduce = reduce;
    out->dom_mins = mins;
    out->dom_extents = exts;
    bool all_const = true;
    int64_t *lo = CNEWN(c, int64_t, b->niters), *ext = CNEWN(c, int64_t, b->niters);
    for (int i = 0; i < b->niters; i++)
        all_const &= tir_expr_const_int(b->iters[i].dom.min, &lo[i]) &&
                     tir_expr_const_int(b->iters[i].dom.extent, &ext[i]);
    if (all_const) {
        out->dom_lo = lo;
        out->dom_ext = ext;
    }
    ir_cbuf *allocs = CNEWN(c, ir_cbuf, b->nallocs);
    for (int i = 0; i < b->nallocs; i++) cbuf(c, b->allocs[i], &allocs[i]);
    out->nallocs = b->nallocs;
    out->allocs = allocs;
    out->init = b->init ? cstmt(c, b->init) : NULL;
    out->body = cstmt(c, b->body);
    for (int i = b->niters - 1; i >= 0; i--) var_undefine(c, b->iters[i].var, olds[i]);
    free(olds);
}

static const ir_cstmt *cstmt(comp *c, const tir_stmt *s) {
    ir_cstmt *x = CNEW(c, ir_cstmt);
    x->kind = s->kind;
    x->src = s;
    switch ((tir_kind)s->kind) {
    case TIR_KIND_FOR: {
        const tir_for *f = (const tir_for *)s;
        x->u.loop.min = cscalar(c, f->min, false, "a loop min");
        x->u.loop.extent = cscalar(c, f->extent, false, "a loop extent");
        x->u.loop.axis = f->kind == TIR_FOR_THREAD_BINDING ? tir_launch_axis(f->thread_tag) : -1;
        int old = var_define(c, f->var);
        x->u.loop.slot = var_lookup(c, f->var);
        x->u.loop.body = cstmt(c, f->body);
        var_undefine(c, f->var, old);
        return x;
    }
    case TIR_KIND_BLOCK_REALIZE: {
        const tir_block_realize *r = (const tir_block_realize *)s;
        cblock(c, r->block, r->nvalues, r->values, r->predicate, &x->u.block);
        return x;
    }
    case TIR_KIND_BLOCK:
        cblock(c, (const tir_block *)s, 0, NULL, NULL, &x->u.block);
        return x;
    case TIR_KIND_BUFFER_STORE: {
        const tir_buffer_store *st = (const tir_buffer_store *)s;
        int tc = check_dtype(c, st->buffer->dtype, st->buffer->name);
        if (tc < 0) return x;
        if (st->nidx != st->buffer->ndim) {
            cfail(c, TIR_ERR_EVAL, "buffer %s has rank %d but is stored with %d indices",
                  st->buffer->name, st->buffer->ndim, st->nidx);
            return x;
        }
        x->u.store.buf = buf_slot(c, st->buffer);
        x->u.store.nidx = st->nidx;
        x->u.store.idx = cexprs(c, st->nidx, st->indices);
        x->u.store.value = cexpr(c, st->value);
        for (int i = 0; i < st->nidx && c->st == TIR_OK; i++) {
            int l = x->u.store.idx[i]->lanes;
            if (l != 1 && l != x->u.store.value->lanes)
                cfail(c, TIR_ERR_EVAL, "store to %s: index %d has %d lanes, the value %d",
                      st->buffer->name, i, l, x->u.store.value->lanes);
        }
        return x;
    }
    case TIR_KIND_SEQ: {
        const tir_seq *q = (const tir_seq *)s;
        const ir_cstmt **ss = CNEWN(c, const ir_cstmt *, q->n);
        for (int i = 0; i < q->n; i++) ss[i] = cstmt(c, q->stmts[i]);
        x->u.seq.n = q->n;
        x->u.seq.stmts = ss;
        return x;
    }
    case TIR_KIND_IF: {
        const tir_if *f = (const tir_if *)s;
        x->u.ifs.cond = cscalar(c, f->cond, true, "an if condition");
        x->u.ifs.then_s = cstmt(c, f->then_s);
        x->u.ifs.else_s = f->else_s ? cstmt(c, f->else_s) : NULL;
        return x;
    }
    case TIR_KIND_ALLOCATE: {
        const tir_allocate *a = (const tir_allocate *)s;
        cbuf(c, a->buffer, &x->u.alloc.buf);
        x->u.alloc.body = cstmt(c, a->body);
        return x;
    }
    case TIR_KIND_EVALUATE: x->u.eval = cexpr(c, ((const tir_evaluate *)s)->value); return x;
    default:
        cfail(c, TIR_ERR_EVAL, "interpreter: unexpected %s as a statement",
              tir_kind_name((tir_kind)s->kind));
        return x;
    }
}

tir_status ir_prog_compile(tir_ctx *ctx, const tir_prim_func *f, ir_prog **out) {
    *out = NULL;
    if (!f) return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG, "interpreter: no function");
    ir_arena arena = {.chunk_size = 65536};
    comp c = {0};
    c.ctx = ctx;
    c.arena = &arena;
    ir_prog *p = ir_arena_alloc(&arena, sizeof *p);
    p->func = f;
    int *pslots = CNEWN(&c, int, f->nparams);
    ir_cbuf *params = CNEWN(&c, ir_cbuf, f->nparams);
    for (int i = 0; i < f->nparams; i++) {
        var_define(&c, f->params[i]);
        pslots[i] = var_lookup(&c, f->params[i]);
        params[i].slot = -1;
        if (!f->buffer_map[i] && check_dtype(&c, f->params[i]->base.dtype, "a parameter") >= 0 &&
            f->params[i]->base.dtype.lanes != 1)
            cfail(&c, TIR_ERR_UNSUPPORTED, "interpreter: vector parameter %s",
                  f->params[i]->name);
    }
    /* Buffer shapes may use scalar parameters, so all of those come first. */
    for (int i = 0; i < f->nparams; i++)
        if (f->buffer_map[i]) cbuf(&c, f->buffer_map[i], &params[i]);
    p->params = params;
    p->param_slots = pslots;
    p->body = cstmt(&c, f->body);
    p->nslots = c.nslots;
    p->nbufs = c.bn;
    ir_ptr_map_free(&c.vars);
    ir_ptr_map_free(&c.bufs);
    if (c.st != TIR_OK) {
        ir_arena_free(&arena);
        return c.st;
    }
    p->arena = arena;
    *out = p;
    return TIR_OK;
}

void ir_prog_free(ir_prog *p) {
    if (!p) return;
    ir_arena arena = p->arena; /* p lives in it */
    ir_arena_free(&arena);
}

/* ================================================================= memory */

static const char own_param_tag, own_malloc_tag;

/* Evaluates decl's shape, strides and offset into m and its storage size. */
static tir_status setup_mbuf(ir_env *e, const ir_cbuf *decl, ir_mbuf *m) {
    const tir_buffer *b = decl->buffer;
    memset(m, 0, sizeof *m);
    m->buffer = b;
    m->tc = (ir_tc)tc_of(b->dtype);
    m->elem_bytes = elem_bytes(m->tc);
    m->ndim = b->ndim;
    m->elem_offset = ir_eval(e, decl->elem_offset).i;
    for (int d = 0; d < b->ndim; d++) m->shape[d] = ir_eval(e, decl->shape[d]).i;
    if (decl->strides)
        for (int d = 0; d < b->ndim; d++) m->strides[d] = ir_eval(e, decl->strides[d]).i;
    if (e->status) return e->status;
    int64_t size = 1;
    bool empty = false, ovf = false;
    for (int d = b->ndim - 1; d >= 0; d--) {
        if (m->shape[d] < 0)
            return ir_env_fail(e, TIR_ERR_EVAL, "buffer %s: negative extent %lld", b->name,
                               (long long)m->shape[d]);
        if (m->shape[d] == 0) empty = true;
        if (!decl->strides) {
            m->strides[d] = size;
            ovf |= __builtin_mul_overflow(size, m->shape[d] ? m->shape[d] : 1, &size);
        } else if (m->strides[d] < 0) {
            return ir_env_fail(e, TIR_ERR_EVAL, "buffer %s: negative stride", b->name);
        }
    }
    int64_t span = 1; /* 1 + the largest offset from elem_offset */
    if (empty)
        span = 0;
    else
        for (int d = 0; d < b->ndim; d++) {
            int64_t t;
            ovf |= __builtin_mul_overflow(m->shape[d] - 1, m->strides[d], &t);
            ovf |= __builtin_add_overflow(span, t, &span);
        }
    if (m->elem_offset < 0)
        return ir_env_fail(e, TIR_ERR_EVAL, "buffer %s: negative elem_offset", b->name);
    ovf |= __builtin_add_overflow(span, m->elem_offset, &m->size);
    if (ovf || m->size > ((int64_t)1 << 40) / m->elem_bytes)
        return ir_env_fail(e, TIR_ERR_EVAL, "buffer %s is too large", b->name);
    return TIR_OK;
}

static tir_status alloc_buf(ir_env *e, const ir_cbuf *decl) {
    int slot = decl->slot;
    if (e->bufs[slot])
        return ir_env_fail(e, TIR_ERR_EVAL, "buffer %s is allocated again while it is live",
                           decl->buffer->name);
    ir_mbuf *m = &e->own[slot];
    TIR_TRY(setup_mbuf(e, decl, m));
    if (e->hooks && e->hooks->alloc) {
        TIR_TRY(e->hooks->alloc(e, m));
    } else {
        size_t n = (size_t)(m->size ? m->size : 1);
        m->data = malloc(n * (size_t)m->elem_bytes);
        m->written = calloc(n, 1);
        m->owner = (void *)&own_malloc_tag;
        if (!m->data || !m->written) {
            free(m->data);
            free(m->written);
            return ir_env_fail(e, TIR_ERR_NOMEM, "cannot allocate buffer %s (%lld elements)",
                               decl->buffer->name, (long long)m->size);
        }
    }
    e->bufs[slot] = m;
    return TIR_OK;
}

static void release_own(ir_env *e, int slot) {
    ir_mbuf *m = &e->own[slot];
    if (m->owner == &own_malloc_tag) {
        free(m->data);
        free(m->written);
    } else if (m->owner == &own_param_tag) {
        free(m->written);
    } else if (e->hooks && e->hooks->release) {
        e->hooks->release(e, m);
    }
    memset(m, 0, sizeof *m);
    e->bufs[slot] = NULL;
}

ir_env *ir_env_new(const ir_prog *p, tir_ctx *ctx, const ir_hooks *hooks, void *user) {
    ir_env *e = calloc(1, sizeof *e);
    if (!e) return NULL;
    e->prog = p;
    e->ctx = ctx;
    e->hooks = hooks;
    e->user = user;
    e->vars = calloc((size_t)p->nslots + 1, sizeof *e->vars);
    e->bufs = calloc((size_t)p->nbufs + 1, sizeof *e->bufs);
    e->own = calloc((size_t)p->nbufs + 1, sizeof *e->own);
    if (!e->vars || !e->bufs || !e->own) {
        ir_env_free(e);
        return NULL;
    }
    return e;
}

void ir_env_free(ir_env *e) {
    if (!e) return;
    if (e->bufs && e->own)
        for (int i = 0; i < e->prog->nbufs; i++)
            if (e->bufs[i] == &e->own[i]) release_own(e, i);
    free(e->vars);
    free(e->bufs);
    free(e->own);
    free(e);
}

void ir_env_set_buf(ir_env *e, int slot, ir_mbuf *m) { e->bufs[slot] = m; }

static void set_scalar(ir_val *slot, int tc, int64_t v) {
    if (tc_int(tc))
        slot->i = tc == IR_TC_BOOL ? v != 0 : wrap(tc, v);
    else if (tc == IR_TC_F64)
        slot->d = (double)v;
    else if (tc_flt(tc))
        slot->f = round_f((ir_tc)tc, (float)v);
    else
        slot->i = v;
}

tir_status ir_env_bind_params(ir_env *e, int nargs, const tir_arg *args, uint64_t uninit) {
    const tir_prim_func *f = e->prog->func;
    if (nargs != f->nparams)
        return tir_ctx_fail(e->ctx, TIR_ERR_INVALID_ARG,
                            "function '%s' takes %d arguments, %d given", f->name, f->nparams,
                            nargs);
    if (nargs > 0 && !args)
        return tir_ctx_fail(e->ctx, TIR_ERR_INVALID_ARG, "function '%s': no arguments", f->name);
    for (int i = 0; i < nargs; i++)
        if (!f->buffer_map[i])
            set_scalar(&e->vars[e->prog->param_slots[i]], tc_of(f->params[i]->base.dtype),
                       args[i].scalar);
    for (int i = 0; i < nargs; i++) {
        const ir_cbuf *decl = &e->prog->params[i];
        if (!f->buffer_map[i]) continue;
        if (!args[i].data)
            return tir_ctx_fail(e->ctx, TIR_ERR_INVALID_ARG,
                                "function '%s': argument %d (buffer %s) has no data", f->name, i,
                                decl->buffer->name);
        if (e->bufs[decl->slot])
            return tir_ctx_fail(e->ctx, TIR_ERR_INVALID_ARG,
                                "function '%s': buffer %s is bound to two parameters", f->name,
                                decl->buffer->name);
        ir_mbuf *m = &e->own[decl->slot];
        TIR_TRY(setup_mbuf(e, decl, m));
        m->data = args[i].data;
        m->owner = (void *)&own_param_tag;
        if (i < 64 && (uninit >> i) & 1) {
            m->written = calloc((size_t)(m->size ? m->size : 1), 1);
            if (!m->written) return tir_ctx_fail(e->ctx, TIR_ERR_NOMEM, "out of memory");
        }
        e->bufs[decl->slot] = m;
    }
    return TIR_OK;
}

/* ============================================================ evaluation */

static inline ir_val read_elem(const ir_mbuf *m, int64_t off) {
    const unsigned char *p = m->data + off * m->elem_bytes;
    ir_val v;
    switch (m->tc) {
    case IR_TC_BOOL: v.i = *p != 0; break;
    case IR_TC_I8: v.i = (int8_t)*p; break;
    case IR_TC_U8: v.i = *p; break;
    case IR_TC_I32: {
        int32_t x;
        memcpy(&x, p, 4);
        v.i = x;
        break;
    }
    case IR_TC_I64: memcpy(&v.i, p, 8); break;
    case IR_TC_F16:
    case IR_TC_BF16: {
        uint16_t h;
        memcpy(&h, p, 2);
        v.f = m->tc == IR_TC_F16 ? ir_f16_to_float(h) : ir_bf16_to_float(h);
        break;
    }
    case IR_TC_F32: memcpy(&v.f, p, 4); break;
    case IR_TC_F64: memcpy(&v.d, p, 8); break;
    default: v.i = 0; break;
    }
    return v;
}

static inline void write_elem(const ir_mbuf *m, int64_t off, ir_val v) {
    unsigned char *p = m->data + off * m->elem_bytes;
    switch (m->tc) {
    case IR_TC_BOOL: *p = v.i != 0; break;
    case IR_TC_I8:
    case IR_TC_U8: *p = (unsigned char)v.i; break;
    case IR_TC_I32: {
        int32_t x = (int32_t)v.i;
        memcpy(p, &x, 4);
        break;
    }
    case IR_TC_I64: memcpy(p, &v.i, 8); break;
    case IR_TC_F16:
    case IR_TC_BF16: {
        uint16_t h = m->tc == IR_TC_F16 ? ir_f16_from_double(v.f) : ir_bf16_from_double(v.f);
        memcpy(p, &h, 2);
        break;
    }
    case IR_TC_F32: memcpy(p, &v.f, 4); break;
    case IR_TC_F64: memcpy(p, &v.d, 8); break;
    default: break;
    }
}

static void eval_v(ir_env *e, const ir_cexpr *x, ir_val *out, uint64_t mask);

static ir_mbuf *need_buf(ir_env *e, int slot, const tir_buffer *b) {
    ir_mbuf *m = e->bufs[slot];
    if (!m) ir_env_fail(e, TIR_ERR_EVAL, "buffer %s is used where it is not allocated", b->name);
    return m;
}

ir_mbuf *ir_need_buf(ir_env *e, int slot, const tir_buffer *b) { return need_buf(e, slot, b); }

/* The storage offset of m[idx], or -1 after recording an error. */
static int64_t elem_offset(ir_env *e, const ir_mbuf *m, const int64_t *idx, bool store) {
    int64_t off = m->elem_offset;
    for (int d = 0; d < m->ndim; d++) {
        if ((uint64_t)idx[d] >= (uint64_t)m->shape[d]) {
            char why[160];
            snprintf(why, sizeof why, "index %lld of dimension %d is outside [0, %lld)",
                     (long long)idx[d], d, (long long)m->shape[d]);
            fail_access(e, TIR_ERR_OUT_OF_BOUNDS, store, m, m->ndim, idx, why);
            return -1;
        }
        off += idx[d] * m->strides[d];
    }
    if (off < 0 || off >= m->size) {
        fail_access(e, TIR_ERR_OUT_OF_BOUNDS, store, m, m->ndim, idx,
                    "the element is outside the buffer's storage");
        return -1;
    }
    return off;
}

static ir_val load_at(ir_env *e, const ir_mbuf *m, const int64_t *idx, bool addr) {
    ir_val v = {0};
    int64_t off = elem_offset(e, m, idx, false);
    if (off < 0) return v;
    if (addr) {
        v.p = m->data + off * m->elem_bytes;
        return v;
    }
    if (m->watch && e->hooks && e->hooks->access) {
        e->hooks->access(e, (ir_mbuf *)m, off, false);
        if (e->status) return v;
    }
    if (m->written && !m->written[off]) {
        fail_access(e, TIR_ERR_UNINIT_READ, false, m, m->ndim, idx,
                    "the element was never written");
        return v;
    }
    return read_elem(m, off);
}

ir_val ir_load_idx(ir_env *e, ir_mbuf *m, const int64_t *idx) { return load_at(e, m, idx, false); }

ir_val ir_load_off(ir_env *e, ir_mbuf *m, int64_t off) {
    ir_val v = {0};
    if (m->watch && e->hooks && e->hooks->access) {
        e->hooks->access(e, m, off, false);
        if (e->status) return v;
    }
    if (m->written && !m->written[off]) {
        ir_env_fail(e, TIR_ERR_UNINIT_READ, "load of element %lld of %s's storage: the element "
                    "was never written", (long long)(off - m->elem_offset), m->buffer->name);
        return v;
    }
    return read_elem(m, off);
}

/* Evaluates vector x for the lanes in mask and returns lane 0 (address_of
 * a vector load needs only that; a vector Evaluate drops the value). */
static __attribute__((noinline)) int64_t first_lane(ir_env *e, const ir_cexpr *x,
                                                    uint64_t mask) {
    ir_val t[IR_MAX_LANES];
    t[0].i = 0;
    eval_v(e, x, t, mask);
    return t[0].i;
}

static ir_val load_s(ir_env *e, const ir_cexpr *x) {
    ir_val zero = {0};
    ir_mbuf *m = need_buf(e, x->u.ld.buf, ((const tir_buffer_load *)x->src)->buffer);
    if (!m) return zero;
    int64_t idx[IR_MAX_DIMS];
    for (int d = 0; d < x->u.ld.nidx; d++) {
        const ir_cexpr *ix = x->u.ld.idx[d];
        if (ix->lanes > 1) { /* address_of a vector load: its first element */
            idx[d] = first_lane(e, ix, 1);
        } else {
            idx[d] = ix->kind == TIR_KIND_VAR ? e->vars[ix->u.slot].i : ir_eval(e, ix).i;
        }
    }
    if (e->status) return zero;
    return load_at(e, m, idx, x->u.ld.addr);
}

static ir_val int_binop(ir_env *e, const ir_cexpr *x, int64_t a, int64_t b) {
    ir_val r;
    uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
    int tc = x->otc;
    switch ((tir_kind)x->kind) {
    case TIR_KIND_ADD: r.i = wrap(tc, (int64_t)(ua + ub)); return r;
    case TIR_KIND_SUB: r.i = wrap(tc, (int64_t)(ua - ub)); return r;
    case TIR_KIND_MUL: r.i = wrap(tc, (int64_t)(ua * ub)); return r;
    case TIR_KIND_DIV:
    case TIR_KIND_MOD:
    case TIR_KIND_FLOORDIV:
    case TIR_KIND_FLOORMOD: {
        if (b == 0) {
            ir_strbuf sb;
            ir_sb_init(&sb);
            put_expr(&sb, x->src);
            ir_env_fail(e, TIR_ERR_EVAL, "integer division by zero in %s (%lld by 0)", sb.data,
                        (long long)a);
            ir_sb_free(&sb);
            r.i = 0;
            return r;
        }
        bool div = x->kind == TIR_KIND_DIV || x->kind == TIR_KIND_FLOORDIV;
        if (a == INT64_MIN && b == -1) { /* the one overflowing quotient wraps */
            r.i = div ? INT64_MIN : 0;
            return r;
        }
        int64_t q = a / b, m = a % b;
        if ((x->kind == TIR_KIND_FLOORDIV || x->kind == TIR_KIND_FLOORMOD) && m != 0 &&
            ((m < 0) != (b < 0))) {
            q -= 1;
            m += b;
        }
        r.i = wrap(tc, div ? q : m);
        return r;
    }
    case TIR_KIND_MIN: r.i = a < b ? a : b; return r;
    case TIR_KIND_MAX: r.i = a > b ? a : b; return r;
    case TIR_KIND_EQ: r.i = a == b; return r;
    case TIR_KIND_NE: r.i = a != b; return r;
    case TIR_KIND_LT: r.i = a < b; return r;
    case TIR_KIND_LE: r.i = a <= b; return r;
    case TIR_KIND_GT: r.i = a > b; return r;
    case TIR_KIND_GE: r.i = a >= b; return r;
    case TIR_KIND_AND: r.i = a && b; return r;
    case TIR_KIND_OR: r.i = a || b; return r;
    default: TIR_UNREACHABLE();
    }
}

static ir_val flt_binop(const ir_cexpr *x, float a, float b) {
    ir_val r;
    float v;
    switch ((tir_kind)x->kind) {
    case TIR_KIND_ADD: v = a + b; break;
    case TIR_KIND_SUB: v = a - b; break;
    case TIR_KIND_MUL: v = a * b; break;
    case TIR_KIND_DIV: v = a / b; break;
    case TIR_KIND_MOD: v = fmodf(a, b); break;
    case TIR_KIND_FLOORDIV: v = floorf(a / b); break;
    case TIR_KIND_FLOORMOD: v = a - floorf(a / b) * b; break;
    /* codegen's fmin / fmax, not C's fminf / fmaxf: glibc lets a
       signaling NaN win (IEEE 754-2008 minNum), and the zero of two zeros
       it takes depends on how the C compiler expands the call */
    case TIR_KIND_MIN: v = a < b || b != b ? a : b; break;
    case TIR_KIND_MAX: v = a > b || b != b ? a : b; break;
    case TIR_KIND_EQ: r.i = a == b; return r;
    case TIR_KIND_NE: r.i = a != b; return r;
    case TIR_KIND_LT: r.i = a < b; return r;
    case TIR_KIND_LE: r.i = a <= b; return r;
    case TIR_KIND_GT: r.i = a > b; return r;
    case TIR_KIND_GE: r.i = a >= b; return r;
    default: TIR_UNREACHABLE();
    }
    r.f = round_f((ir_tc)x->otc, v);
    return r;
}

static ir_val dbl_binop(const ir_cexpr *x, double a, double b) {
    ir_val r;
    switch ((tir_kind)x->kind) {
    case TIR_KIND_ADD: r.d = a + b; return r;
    case TIR_KIND_SUB: r.d = a - b; return r;
    case TIR_KIND_MUL: r.d = a * b; return r;
    case TIR_KIND_DIV: r.d = a / b; return r;
    case TIR_KIND_MOD: r.d = fmod(a, b); return r;
    case TIR_KIND_FLOORDIV: r.d = floor(a / b); return r;
    case TIR_KIND_FLOORMOD: r.d = a - floor(a / b) * b; return r;
    case TIR_KIND_MIN: r.d = a < b || b != b ? a : b; return r; /* as flt_binop */
    case TIR_KIND_MAX: r.d = a > b || b != b ? a : b; return r;
    case TIR_KIND_EQ: r.i = a == b; return r;
    case TIR_KIND_NE: r.i = a != b; return r;
    case TIR_KIND_LT: r.i = a < b; return r;
    case TIR_KIND_LE: r.i = a <= b; return r;
    case TIR_KIND_GT: r.i = a > b; return r;
    case TIR_KIND_GE: r.i = a >= b; return r;
    default: TIR_UNREACHABLE();
    }
}

static inline ir_val binop(ir_env *e, const ir_cexpr *x, ir_val a, ir_val b) {
    if (tc_int(x->otc)) return int_binop(e, x, a.i, b.i);
    if (x->otc == IR_TC_F64) return dbl_binop(x, a.d, b.d);
    if (x->otc == IR_TC_HANDLE) {
        ir_val r;
        r.i = x->kind == TIR_KIND_EQ ? a.p == b.p : a.p != b.p;
        return r;
    }
    return flt_binop(x, a.f, b.f);
}

static ir_val cast(int from, int to, ir_val v) {
    ir_val r;
    if (to == IR_TC_HANDLE) return v;
    if (tc_int(from)) {
        if (to == IR_TC_BOOL)
            r.i = v.i != 0;
        else if (tc_int(to))
            r.i = wrap(to, v.i);
        else if (to == IR_TC_F64)
            r.d = (double)v.i;
        else if (to == IR_TC_F32)
            r.f = (float)v.i;
        else if (to == IR_TC_F16) /* rounded once, see ir_int_to_double_odd */
            r.f = ir_f16_to_float(ir_f16_from_double(ir_int_to_double_odd(v.i, false)));
        else
            r.f = ir_bf16_to_float(ir_bf16_from_double(ir_int_to_double_odd(v.i, false)));
        return r;
    }
    double d = from == IR_TC_F64 ? v.d : v.f;
    switch (to) {
    case IR_TC_BOOL: r.i = d != 0; return r;
    case IR_TC_F64: r.d = d; return r;
    case IR_TC_F32: r.f = (float)d; return r;
    case IR_TC_F16: r.f = ir_f16_to_float(ir_f16_from_double(d)); return r;
    case IR_TC_BF16: r.f = ir_bf16_to_float(ir_bf16_from_double(d)); return r;
    default: break;
    }
    /* float -> int: truncate and saturate to the target's range */
    double lo, hi;
    switch (to) {
    case IR_TC_I8: lo = -128, hi = 127; break;
    case IR_TC_U8: lo = 0, hi = 255; break;
    case IR_TC_I32: lo = -2147483648.0, hi = 2147483647.0; break;
    default: lo = -9223372036854775808.0, hi = 9223372036854775807.0; break;
    }
    if (d != d)
        r.i = 0;
    else if (d <= lo)
        r.i = to == IR_TC_I64 ? INT64_MIN : (int64_t)lo;
    else if (d >= hi)
        r.i = to == IR_TC_I64 ? INT64_MAX : (int64_t)hi;
    else
        r.i = (int64_t)d;
    return r;
}

ir_val ir_cast_val(int from, int to, ir_val v) { return cast(from, to, v); }

static float to16(ir_tc tc, double d) {
    return tc == IR_TC_F16 ? ir_f16_to_float(ir_f16_from_double(d))
                           : ir_bf16_to_float(ir_bf16_from_double(d));
}

/* fma on float16 / bfloat16, rounded once to the type (as fma.rn.f16 and
 * .bf16): fmaf then rounding to 16 bits rounds twice (231.5625 + 2^-24 in
 * float is the tie 231.5625, which rounds down).  a*b is exact in double
 * and TwoSum gives p + c's exact residual, so only a double sum that is
 * exactly a midpoint of the 16-bit grid needs the residual's sign. */
static float fma16(ir_tc tc, float a, float b, float c) {
    double p = (double)a * (double)b, s = p + (double)c;
    if (!isfinite(s)) return to16(tc, s);
    double bb = s - p, err = (p - (s - bb)) + ((double)c - bb);
    float up = to16(tc, nextafter(s, INFINITY)), dn = to16(tc, nextafter(s, -INFINITY));
    if (err == 0 || up == dn) return to16(tc, s);
    /* up and dn also differ one double step beside a midpoint (review: a
     * bfloat16 fma just below 259/256 went up): only s exactly on it is
     * decided by the residual */
    double half = ldexp(1.0, ilogb(dn) - (tc == IR_TC_F16 ? 11 : 8));
    double mid = isinf(up) ? (double)dn + half : ((double)up + (double)dn) / 2;
    if (s != mid) return to16(tc, s);
    return err > 0 ? up : dn;
}

static ir_val math(int tc, tir_intrin op, const ir_val *a) {
    ir_val r;
    if (tc == IR_TC_F64 || tc_int(tc)) {
        double x = as_double(tc, a[0]), y = 0, z = 0, v;
        if (op == TIR_INTRIN_POW || op == TIR_INTRIN_FMA) y = as_double(tc, a[1]);
        if (op == TIR_INTRIN_FMA) z = as_double(tc, a[2]);
        switch (op) {
        case TIR_INTRIN_EXP: v = exp(x); break;
        case TIR_INTRIN_LOG: v = log(x); break;
        case TIR_INTRIN_TANH: v = tanh(x); break;
        case TIR_INTRIN_SQRT: v = sqrt(x); break;
        case TIR_INTRIN_FABS: v = fabs(x); break;
        case TIR_INTRIN_FMA: v = fma(x, y, z); break;
        case TIR_INTRIN_POW: v = pow(x, y); break;
        case TIR_INTRIN_SIGMOID: v = 1.0 / (1.0 + exp(-x)); break;
        default: TIR_UNREACHABLE();
        }
        if (tc == IR_TC_F64) {
            r.d = v;
            return r;
        }
        r.d = v;
        return cast(IR_TC_F64, tc, r);
    }
    float x = a[0].f, y = 0, z = 0, v;
    if (op == TIR_INTRIN_POW || op == TIR_INTRIN_FMA) y = a[1].f;
    if (op == TIR_INTRIN_FMA) z = a[2].f;
    if (op == TIR_INTRIN_FMA && (tc == IR_TC_F16 || tc == IR_TC_BF16)) {
        r.f = fma16((ir_tc)tc, x, y, z);
        return r;
    }
    switch (op) {
    case TIR_INTRIN_EXP: v = expf(x); break;
    case TIR_INTRIN_LOG: v = logf(x); break;
    case TIR_INTRIN_TANH: v = tanhf(x); break;
    case TIR_INTRIN_SQRT: v = sqrtf(x); break;
    case TIR_INTRIN_FABS: v = fabsf(x); break;
    case TIR_INTRIN_FMA: v = fmaf(x, y, z); break;
    case TIR_INTRIN_POW: v = powf(x, y); break;
    case TIR_INTRIN_SIGMOID: v = 1.0f / (1.0f + expf(-x)); break;
    default: TIR_UNREACHABLE();
    }
    r.f = round_f((ir_tc)tc, v);
    return r;
}

ir_mbuf *ir_resolve_addr(ir_env *e, const void *p, int64_t *byte_off) {
    const unsigned char *q = p;
    for (int i = 0; i < e->prog->nbufs; i++) {
        ir_mbuf *m = e->bufs[i];
        if (m && m->data && q >= m->data && q < m->data + m->size * m->elem_bytes) {
            *byte_off = q - m->data;
            return m;
        }
    }
    return NULL;
}

static void cp_async(ir_env *e, const ir_val *args, int nargs) {
    int64_t bytes = args[2].i, doff, soff, sb = nargs == 4 ? args[3].i : bytes;
    if ((nargs != 3 && nargs != 4) || sb < 0 || sb > bytes) {
        ir_env_fail(e, TIR_ERR_EVAL, "cp_async: %d arguments, src_bytes %lld of %lld", nargs,
                    (long long)sb, (long long)bytes);
        return;
    }
    ir_mbuf *dst = ir_resolve_addr(e, args[0].p, &doff);
    ir_mbuf *src = ir_resolve_addr(e, args[1].p, &soff);
    if (!dst || !src) {
        ir_env_fail(e, TIR_ERR_EVAL, "cp_async: the %s address is not inside any buffer",
                    dst ? "source" : "destination");
        return;
    }
    if (bytes <= 0 || bytes % dst->elem_bytes || bytes % src->elem_bytes) {
        ir_env_fail(e, TIR_ERR_EVAL, "cp_async of %lld bytes between %s and %s elements",
                    (long long)bytes, dst->buffer->name, src->buffer->name);
        return;
    }
    if (doff % bytes || soff % bytes) {
        ir_env_fail(e, TIR_ERR_EVAL,
                    "cp_async of %lld bytes from %s (byte %lld) to %s (byte %lld) is misaligned",
                    (long long)bytes, src->buffer->name, (long long)soff, dst->buffer->name,
                    (long long)doff);
        return;
    }
    if (sb % src->elem_bytes) {
        ir_env_fail(e, TIR_ERR_EVAL, "cp_async: src_bytes %lld is not whole %s elements",
                    (long long)sb, src->buffer->name);
        return;
    }
    if (doff + bytes > dst->size * dst->elem_bytes || soff + sb > src->size * src->elem_bytes) {
        ir_env_fail(e, TIR_ERR_OUT_OF_BOUNDS, "cp_async of %lld bytes from %s (byte %lld) to %s "
                    "(byte %lld) runs past the end of a buffer",
                    (long long)bytes, src->buffer->name, (long long)soff, dst->buffer->name,
                    (long long)doff);
        return;
    }
    if (src->written)
        for (int64_t i = soff / src->elem_bytes; i < (soff + sb) / src->elem_bytes; i++)
            if (!src->written[i]) {
                ir_env_fail(e, TIR_ERR_UNINIT_READ,
                            "cp_async reads element %lld of %s's storage, which was never "
                            "written",
                            (long long)i, src->buffer->name);
                return;
            }
    memmove(dst->data + doff, src->data + soff, (size_t)sb);
    memset(dst->data + doff + sb, 0, (size_t)(bytes - sb));
    if (dst->written)
        memset(dst->written + doff / dst->elem_bytes, 1, (size_t)(bytes / dst->elem_bytes));
}

ir_mbuf *ir_atomic_target(ir_env *e, const ir_val *args, int64_t *off) {
    int64_t byte = 0;
    ir_mbuf *m = ir_resolve_addr(e, args[0].p, &byte);
    if (!m) {
        ir_env_fail(e, TIR_ERR_EVAL, "atomic_add: the address is not inside any buffer");
        return NULL;
    }
    if (m->tc != IR_TC_F32 || m->buffer->scope != TIR_SCOPE_GLOBAL || byte % m->elem_bytes) {
        char dt[32];
        ir_env_fail(e, TIR_ERR_UNSUPPORTED,
                    "atomic_add on %s (%s %s): only float32 elements of global buffers",
                    m->buffer->name, tir_scope_name(m->buffer->scope),
                    tir_dtype_str(m->buffer->dtype, dt, sizeof dt));
        return NULL;
    }
    *off = byte / m->elem_bytes;
    return m;
}

void ir_atomic_apply(ir_env *e, ir_mbuf *m, int64_t off, ir_val v) {
    if (m->written && !m->written[off]) {
        ir_env_fail(e, TIR_ERR_UNINIT_READ,
                    "atomic_add reads element %lld of %s, which was never written",
                    (long long)(off - m->elem_offset), m->buffer->name);
        return;
    }
    ir_val x = read_elem(m, off);
    x.f = x.f + v.f;
    write_elem(m, off, x);
}

/* atomic_add without a hook: one thread at a time, so a plain add. */
static void atomic_add(ir_env *e, const ir_val *args) {
    int64_t off;
    ir_mbuf *m = ir_atomic_target(e, args, &off);
    if (m) ir_atomic_apply(e, m, off, args[1]);
}

/* Tensor-core intrinsics.  A simulator's hook gets the lowered per-lane
 * forms (lane_id, mma_sync, ldmatrix, shfl_xor: warp collectives; wgmma_sync:
 * a warpgroup collective) with evaluated
 * operands.  Otherwise the logical tile forms read their operands'
 * indices themselves (interp_tc.c): a clipped frag_load / frag_store
 * origin may lie outside its buffer, so address_of is not evaluated.
 * Not inlined: wgmma_sync's argument array stays out of call_s's frame,
 * which every nested call expression repeats on a simulator thread's
 * small stack. */
static __attribute__((noinline)) ir_val tc_call(ir_env *e, const ir_cexpr *x) {
    tir_intrin op = x->u.call.op;
    ir_val args[IR_MAX_CALL_ARGS], r = {0};
    if (e->hooks && e->hooks->intrin &&
        (op == TIR_INTRIN_LANE_ID || op == TIR_INTRIN_MMA_SYNC || op == TIR_INTRIN_LDMATRIX ||
         op == TIR_INTRIN_SHFL_XOR || op == TIR_INTRIN_WGMMA_SYNC)) {
        for (int i = 0; i < x->u.call.nargs; i++) args[i] = ir_eval(e, x->u.call.args[i]);
        if (e->status || e->hooks->intrin(e, x, args, &r)) return r;
    }
    return ir_tc_call(e, x);
}

static ir_val call_s(ir_env *e, const ir_cexpr *x) {
    ir_val args[8], r = {0};
    int n = x->u.call.nargs;
    switch (x->u.call.op) {
    case TIR_INTRIN_LANE_ID:
    case TIR_INTRIN_MMA_SYNC:
    case TIR_INTRIN_LDMATRIX:
    case TIR_INTRIN_SHFL_XOR:
    case TIR_INTRIN_WGMMA:
    case TIR_INTRIN_WGMMA_SYNC:
    case TIR_INTRIN_FRAG_FILL:
    case TIR_INTRIN_FRAG_LOAD:
    case TIR_INTRIN_FRAG_STORE: return tc_call(e, x);
    default: break;
    }
    for (int i = 0; i < n; i++) args[i] = ir_eval(e, x->u.call.args[i]);
    if (e->status) return r;
    tir_intrin op = x->u.call.op;
    switch (op) {
    case TIR_INTRIN_ADDRESS_OF: return args[0];
    case TIR_INTRIN_DOMAIN_GUARD: return args[0];
    case TIR_INTRIN_SYNCTHREADS:
    case TIR_INTRIN_CP_ASYNC:
    case TIR_INTRIN_CP_ASYNC_COMMIT:
    case TIR_INTRIN_CP_ASYNC_WAIT:
    case TIR_INTRIN_ATOMIC_ADD:
        if (e->hooks && e->hooks->intrin && e->hooks->intrin(e, x, args, &r)) return r;
        if (op == TIR_INTRIN_CP_ASYNC) cp_async(e, args, n);
        if (op == TIR_INTRIN_ATOMIC_ADD) atomic_add(e, args);
        return r;
    default: break;
    }
    if ((unsigned)op > TIR_INTRIN_SIGMOID) {
        ir_env_fail(e, TIR_ERR_UNSUPPORTED, "interpreter: intrinsic %s", tir_intrin_name(op));
        return r;
    }
    return math(x->u.call.args[0]->tc, op, args);
}

ir_val ir_eval(ir_env *e, const ir_cexpr *x) {
    ir_val a, b;
    switch ((tir_kind)x->kind) {
    case TIR_KIND_INT_IMM:
    case TIR_KIND_FLOAT_IMM: return x->u.k;
    case TIR_KIND_VAR: return e->vars[x->u.slot];
    case TIR_KIND_AND:
    case TIR_KIND_OR:
        a = ir_eval(e, x->a);
        if ((x->kind == TIR_KIND_AND) != (a.i != 0)) return a;
        return ir_eval(e, x->b);
    case TIR_KIND_ADD:
    case TIR_KIND_SUB:
    case TIR_KIND_MUL:
    case TIR_KIND_DIV:
    case TIR_KIND_MOD:
    case TIR_KIND_FLOORDIV:
    case TIR_KIND_FLOORMOD:
    case TIR_KIND_MIN:
    case TIR_KIND_MAX:
    case TIR_KIND_EQ:
    case TIR_KIND_NE:
    case TIR_KIND_LT:
    case TIR_KIND_LE:
    case TIR_KIND_GT:
    case TIR_KIND_GE:
        a = ir_eval(e, x->a);
        b = ir_eval(e, x->b);
        if (e->status) {
            a.i = 0;
            return a;
        }
        return binop(e, x, a, b);
    case TIR_KIND_NOT:
        a = ir_eval(e, x->a);
        a.i = !a.i;
        return a;
    case TIR_KIND_SELECT:
        a = ir_eval(e, x->a);
        return ir_eval(e, a.i ? x->b : x->c);
    case TIR_KIND_CAST: return cast(x->otc, x->tc, ir_eval(e, x->a));
    case TIR_KIND_BUFFER_LOAD: return load_s(e, x);
    case TIR_KIND_CALL: return call_s(e, x);
    case TIR_KIND_LET:
        if (x->a->lanes == 1)
            e->vars[x->u.slot] = ir_eval(e, x->a);
        else
            eval_v(e, x->a, &e->vars[x->u.slot], ~0ull);
        return ir_eval(e, x->b);
    default:
        /* Ramp and Broadcast are vectors: never scalar. */
        TIR_UNREACHABLE();
    }
}

static inline uint64_t lane_mask(int lanes) {
    return lanes >= 64 ? ~0ull : (1ull << lanes) - 1;
}

/* Evaluates index or operand x for every lane (scalars are broadcast). */
static void eval_lanes(ir_env *e, const ir_cexpr *x, ir_val *out, int lanes, uint64_t mask) {
    if (x->lanes == 1) {
        ir_val v = ir_eval(e, x);
        for (int l = 0; l < lanes; l++) out[l] = v;
    } else {
        eval_v(e, x, out, mask);
    }
}

/* The vector cases with big temporaries live in functions of their own,
 * so that eval_v's frame (one per level of a vector expression) stays
 * small: environments may run on small coroutine stacks. */
static void eval_v(ir_env *e, const ir_cexpr *x, ir_val *out, uint64_t mask);

static __attribute__((noinline)) void load_v(ir_env *e, const ir_cexpr *x, ir_val *out,
                                             uint64_t mask) {
    ir_mbuf *m = need_buf(e, x->u.ld.buf, ((const tir_buffer_load *)x->src)->buffer);
    if (!m) return;
    int nd = x->u.ld.nidx, n = x->lanes;
    ir_val idx[IR_MAX_DIMS][IR_MAX_LANES];
    for (int d = 0; d < nd; d++) eval_lanes(e, x->u.ld.idx[d], idx[d], n, mask);
    if (e->status) return;
    for (int l = 0; l < n; l++) {
        if (!(mask >> l & 1)) continue;
        int64_t ix[IR_MAX_DIMS];
        for (int d = 0; d < nd; d++) ix[d] = idx[d][l].i;
        out[l] = load_at(e, m, ix, false);
        if (e->status) return;
    }
}

static __attribute__((noinline)) void call_v(ir_env *e, const ir_cexpr *x, ir_val *out,
                                             uint64_t mask) {
    int na = x->u.call.nargs, n = x->lanes;
    if (x->u.call.op > TIR_INTRIN_SIGMOID || na > 3) {
        ir_env_fail(e, TIR_ERR_UNSUPPORTED, "interpreter: vector %s",
                    tir_intrin_name(x->u.call.op));
        return;
    }
    ir_val args[3][IR_MAX_LANES];
    for (int i = 0; i < na; i++) eval_lanes(e, x->u.call.args[i], args[i], n, mask);
    if (e->status) return;
    for (int l = 0; l < n; l++) {
        if (!(mask >> l & 1)) continue;
        ir_val al[3];
        for (int i = 0; i < na; i++) al[i] = args[i][l];
        out[l] = math(x->u.call.args[0]->tc, x->u.call.op, al);
    }
}

/* Select, And, Or: the second operand(s) only for the lanes that need them. */
static __attribute__((noinline)) void lazy_v(ir_env *e, const ir_cexpr *x, ir_val *out,
                                             uint64_t mask) {
    int n = x->lanes;
    ir_val c[IR_MAX_LANES];
    if (x->kind == TIR_KIND_SELECT) {
        if (x->a->lanes == 1) {
            eval_v(e, ir_eval(e, x->a).i ? x->b : x->c, out, mask);
            return;
        }
        eval_v(e, x->a, c, mask);
        uint64_t mt = 0;
        for (int l = 0; l < n; l++)
            if ((mask >> l & 1) && c[l].i) mt |= 1ull << l;
        eval_v(e, x->b, out, mask & mt);
        eval_v(e, x->c, out, mask & ~mt);
        return;
    }
    bool is_and = x->kind == TIR_KIND_AND;
    eval_v(e, x->a, c, mask);
    uint64_t need = 0;
    for (int l = 0; l < n; l++)
        if ((mask >> l & 1) && (is_and == (c[l].i != 0))) need |= 1ull << l;
    for (int l = 0; l < n; l++)
        if (mask >> l & 1) out[l].i = c[l].i != 0;
    eval_v(e, x->b, out, need);
    for (int l = 0; l < n; l++)
        if (need >> l & 1) out[l].i = out[l].i != 0;
}

/* Evaluates vector x into out[0..lanes) for the lanes set in mask; the
 * other lanes are left as they are and nothing is evaluated for them. */
static void eval_v(ir_env *e, const ir_cexpr *x, ir_val *out, uint64_t mask) {
    int n = x->lanes;
    mask &= lane_mask(n);
    if (!mask || e->status) return;
    tir_kind k = (tir_kind)x->kind;
    switch (k) {
    case TIR_KIND_VAR:
        for (int l = 0; l < n; l++)
            if (mask >> l & 1) out[l] = e->vars[x->u.slot + l];
        return;
    case TIR_KIND_RAMP: {
        ir_val s = ir_eval(e, x->a), st = ir_eval(e, x->b);
        for (int l = 0; l < n; l++)
            if (mask >> l & 1)
                out[l].i = wrap(x->tc, (int64_t)((uint64_t)s.i + (uint64_t)l * (uint64_t)st.i));
        return;
    }
    case TIR_KIND_BROADCAST: {
        ir_val v = ir_eval(e, x->a);
        for (int l = 0; l < n; l++)
            if (mask >> l & 1) out[l] = v;
        return;
    }
    case TIR_KIND_AND:
    case TIR_KIND_OR:
    case TIR_KIND_SELECT: lazy_v(e, x, out, mask); return;
    case TIR_KIND_NOT:
        eval_v(e, x->a, out, mask);
        for (int l = 0; l < n; l++)
            if (mask >> l & 1) out[l].i = !out[l].i;
        return;
    case TIR_KIND_CAST:
        eval_v(e, x->a, out, mask);
        for (int l = 0; l < n; l++)
            if (mask >> l & 1) out[l] = cast(x->otc, x->tc, out[l]);
        return;
    case TIR_KIND_BUFFER_LOAD: load_v(e, x, out, mask); return;
    case TIR_KIND_CALL: call_v(e, x, out, mask); return;
    case TIR_KIND_LET:
        if (x->a->lanes == 1)
            e->vars[x->u.slot] = ir_eval(e, x->a);
        else
            eval_v(e, x->a, &e->vars[x->u.slot], ~0ull);
        eval_v(e, x->b, out, mask);
        return;
    default: {
        if (!tir_kind_is_binop(k)) TIR_UNREACHABLE();
        ir_val b[IR_MAX_LANES];
        eval_v(e, x->a, out, mask);
        eval_v(e, x->b, b, mask);
        if (e->status) return;
        for (int l = 0; l < n; l++) {
            if (!(mask >> l & 1)) continue;
            out[l] = binop(e, x, out[l], b[l]);
            if (e->status) return;
        }
        return;
    }
    }
}

/* ============================================================= execution */

static __attribute__((noinline)) tir_status store_v(ir_env *e, const ir_cstmt *s, ir_mbuf *m) {
    int nd = s->u.store.nidx, n = s->u.store.value->lanes;
    uint64_t mask = lane_mask(n);
    ir_val idx[IR_MAX_DIMS][IR_MAX_LANES], v[IR_MAX_LANES];
    for (int d = 0; d < nd; d++) eval_lanes(e, s->u.store.idx[d], idx[d], n, mask);
    eval_v(e, s->u.store.value, v, mask);
    if (e->status) return e->status;
    for (int l = 0; l < n; l++) {
        int64_t ix[IR_MAX_DIMS];
        for (int d = 0; d < nd; d++) ix[d] = idx[d][l].i;
        int64_t off = elem_offset(e, m, ix, true);
        if (off < 0) return e->status;
        if (m->watch && e->hooks && e->hooks->access) {
            e->hooks->access(e, m, off, true);
            if (e->status) return e->status;
        }
        write_elem(m, off, v[l]);
        if (m->written) m->written[off] = 1;
    }
    return TIR_OK;
}

tir_status ir_store_idx(ir_env *e, ir_mbuf *m, const int64_t *idx, ir_val v) {
    int64_t off = elem_offset(e, m, idx, true);
    if (off < 0) return e->status;
    return ir_store_off(e, m, off, v);
}

tir_status ir_store_off(ir_env *e, ir_mbuf *m, int64_t off, ir_val v) {
    if (m->watch && e->hooks && e->hooks->access) {
        e->hooks->access(e, m, off, true);
        if (e->status) return e->status;
    }
    write_elem(m, off, v);
    if (m->written) m->written[off] = 1;
    return TIR_OK;
}

static tir_status exec_store(ir_env *e, const ir_cstmt *s) {
    ir_mbuf *m = need_buf(e, s->u.store.buf, ((const tir_buffer_store *)s->src)->buffer);
    if (!m) return e->status;
    if (s->u.store.value->lanes > 1) return store_v(e, s, m);
    int64_t idx[IR_MAX_DIMS];
    for (int d = 0; d < s->u.store.nidx; d++) {
        const ir_cexpr *ix = s->u.store.idx[d];
        idx[d] = ix->kind == TIR_KIND_VAR ? e->vars[ix->u.slot].i : ir_eval(e, ix).i;
    }
    ir_val v = ir_eval(e, s->u.store.value);
    if (e->status) return e->status;
    return ir_store_idx(e, m, idx, v);
}

static tir_status exec_block(ir_env *e, const ir_cstmt *s) {
    const ir_cblock *b = &s->u.block;
    /* The predicate first (it names loops, not the iterators): where it
       masks the block, the bindings are not evaluated, as lowering puts
       them under the guard (a fused loop's f // i at i = 0, split). */
    if (b->predicate && !ir_eval(e, b->predicate).i) return e->status;
    for (int i = 0; i < b->niters; i++) e->vars[b->iter_slots[i]] = ir_eval(e, b->values[i]);
    if (e->status) return e->status;
    const tir_block *saved = e->cur_block;
    e->cur_block = b->block;
    /* A binding outside its domain is ill-formed IR (a split without its
     * predicate, say) even when no access goes out of bounds.  The init
     * runs when every reduce iter is at its domain min. */
    bool first = true;
    for (int i = 0; i < b->niters; i++) {
        int64_t v = e->vars[b->iter_slots[i]].i, lo, ext;
        if (b->dom_lo) {
            lo = b->dom_lo[i];
            ext = b->dom_ext[i];
        } else {
            lo = ir_eval(e, b->dom_mins[i]).i;
            ext = ir_eval(e, b->dom_extents[i]).i;
            if (e->status) break;
        }
        if (v < lo || v - lo >= ext) {
            ir_env_fail(e, TIR_ERR_EVAL, "iter var %s is bound to %lld, outside its domain [%lld, %lld)",
                        b->block->iters[i].var->name, (long long)v, (long long)lo,
                        (long long)(lo + ext));
            break;
        }
        if (b->iter_reduce[i] && v != lo) first = false;
    }
    tir_status st = e->status;
    int nalloc = 0;
    while (st == TIR_OK && nalloc < b->nallocs &&
           (st = alloc_buf(e, &b->allocs[nalloc])) == TIR_OK)
        nalloc++;
    if (st == TIR_OK && b->init && first) st = ir_exec_stmt(e, b->init);
    if (st == TIR_OK) st = ir_exec_stmt(e, b->body);
    while (nalloc > 0) release_own(e, b->allocs[--nalloc].slot);
    e->cur_block = saved;
    return st;
}

tir_status ir_exec_stmt(ir_env *e, const ir_cstmt *s) {
    e->cur_stmt = s->src;
    switch ((tir_kind)s->kind) {
    case TIR_KIND_FOR: {
        int64_t mn = ir_eval(e, s->u.loop.min).i, ext = ir_eval(e, s->u.loop.extent).i;
        if (e->status) return e->status;
        ir_val *v = &e->vars[s->u.loop.slot];
        if (e->simt && s->u.loop.axis >= 0) {
            int64_t t = e->thread_idx[s->u.loop.axis];
            if (t < 0 || t >= ext) return TIR_OK;
            v->i = mn + t;
            return ir_exec_stmt(e, s->u.loop.body);
        }
        for (int64_t i = 0; i < ext; i++) {
            v->i = mn + i;
            TIR_TRY(ir_exec_stmt(e, s->u.loop.body));
        }
        return TIR_OK;
    }
    case TIR_KIND_BLOCK_REALIZE:
    case TIR_KIND_BLOCK: return exec_block(e, s);
    case TIR_KIND_BUFFER_STORE: return exec_store(e, s);
    case TIR_KIND_SEQ:
        for (int i = 0; i < s->u.seq.n; i++) TIR_TRY(ir_exec_stmt(e, s->u.seq.stmts[i]));
        return TIR_OK;
    case TIR_KIND_IF: {
        bool c = ir_eval(e, s->u.ifs.cond).i != 0;
        if (e->status) return e->status;
        if (c) return ir_exec_stmt(e, s->u.ifs.then_s);
        return s->u.ifs.else_s ? ir_exec_stmt(e, s->u.ifs.else_s) : TIR_OK;
    }
    case TIR_KIND_ALLOCATE: {
        TIR_TRY(alloc_buf(e, &s->u.alloc.buf));
        tir_status st = ir_exec_stmt(e, s->u.alloc.body);
        release_own(e, s->u.alloc.buf.slot);
        return st;
    }
    case TIR_KIND_EVALUATE:
        if (s->u.eval->lanes == 1)
            ir_eval(e, s->u.eval);
        else
            first_lane(e, s->u.eval, ~0ull);
        return e->status;
    default: TIR_UNREACHABLE();
    }
}

tir_status ir_exec(ir_env *e) {
    e->status = TIR_OK;
    e->cur_block = NULL;
    e->cur_stmt = NULL;
    return ir_exec_stmt(e, e->prog->body);
}

/* ============================================================ public API */

tir_status tir_interp_run(tir_ctx *ctx, const tir_prim_func *f, int nargs, const tir_arg *args,
                          const tir_interp_opts *opts) {
    if (!f) return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG, "tir_interp_run: no function");
    if (nargs != f->nparams)
        return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG, "function '%s' takes %d arguments, %d given",
                            f->name, f->nparams, nargs);
    ir_prog *p;
    TIR_TRY(ir_prog_compile(ctx, f, &p));
    ir_env *e = ir_env_new(p, ctx, NULL, NULL);
    tir_status st;
    if (!e) {
        st = tir_ctx_fail(ctx, TIR_ERR_NOMEM, "interpreter: out of memory");
    } else {
        st = ir_env_bind_params(e, nargs, args, opts ? opts->uninit_params : 0);
        if (st == TIR_OK) st = e->status;
        if (st == TIR_OK) st = ir_exec(e);
    }
    ir_env_free(e);
    ir_prog_free(p);
    return st;
}
