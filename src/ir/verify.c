/* verify.c: well-formedness checks of a function (tir_verify).
 *
 * One walk keeps stacks of the variables and buffers in scope (parameters,
 * variables of parameter buffer shapes, loop / let / block iter variables,
 * block and Allocate buffers) and of the enclosing loops, and stops at the
 * first problem.  Messages name the offending variable, buffer or block
 * and say where it is: the function, the innermost block and the loops
 * around the spot.
 */
#include <stdarg.h>

#include "arith_internal.h"

typedef struct vstate {
    tir_ctx *ctx;
    const tir_prim_func *f;
    ir_vec vars;  /* const tir_var * in scope */
    ir_vec bufs;  /* const tir_buffer * in scope */
    ir_vec loops; /* const tir_for * around the current spot */
    const tir_block *block;
    bool failed;
} vstate;

static void vfail(vstate *s, const char *fmt, ...) TIR_PRINTF(2, 3);
static void vfail(vstate *s, const char *fmt, ...) {
    if (s->failed) return;
    s->failed = true;
    ir_strbuf sb;
    ir_sb_init(&sb);
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    ir_sb_puts(&sb, msg);
    ir_sb_printf(&sb, " (in function \"%s\"", s->f->name);
    if (s->block) ir_sb_printf(&sb, ", block \"%s\"", s->block->name);
    if (s->loops.n) {
        ir_sb_puts(&sb, s->loops.n == 1 ? ", under loop " : ", under loops ");
        for (int i = 0; i < s->loops.n; i++)
            ir_sb_printf(&sb, "%s%s", i ? ", " : "",
                         ((const tir_for *)s->loops.items[i])->var->name);
    }
    ir_sb_putc(&sb, ')');
    tir_ctx_fail(s->ctx, TIR_ERR_VERIFY, "%s", sb.data);
    ir_sb_free(&sb);
}

static bool in_vec(const ir_vec *v, const void *p) {
    for (int i = v->n - 1; i >= 0; i--)
        if (v->items[i] == p) return true;
    return false;
}

static void define_var(vstate *s, const tir_var *v, const char *what) {
    if (in_vec(&s->vars, v))
        vfail(s, "%s '%s' is defined again inside its own scope", what, v->name);
    ir_vec_push(&s->vars, v);
}

static void check_expr(vstate *s, const tir_expr *e);

static void check_buffer_use(vstate *s, const tir_buffer *b, int nidx, const char *what) {
    if (!in_vec(&s->bufs, b))
        vfail(s,
              "buffer '%s' is %s but is neither a parameter nor allocated by an enclosing "
              "block or Allocate",
              b->name, what);
    else if (nidx != b->ndim)
        vfail(s, "buffer '%s' is %s with %d indices but has %d dimensions", b->name, what, nidx,
              b->ndim);
}

static void check_exprs(vstate *s, int n, const tir_expr *const *es) {
    for (int i = 0; i < n && !s->failed; i++) check_expr(s, es[i]);
}

static void check_expr(vstate *s, const tir_expr *e) {
    if (s->failed || !e) return;
    switch ((tir_kind)e->kind) {
    case TIR_KIND_INT_IMM:
    case TIR_KIND_FLOAT_IMM: return;
    case TIR_KIND_VAR: {
        const tir_var *v = (const tir_var *)e;
        if (!in_vec(&s->vars, v)) vfail(s, "variable '%s' is used but not defined", v->name);
        return;
    }
    case TIR_KIND_NOT: check_expr(s, ((const tir_not *)e)->a); return;
    case TIR_KIND_SELECT: {
        const tir_select *x = (const tir_select *)e;
        check_expr(s, x->cond);
        check_expr(s, x->t);
        check_expr(s, x->f);
        return;
    }
    case TIR_KIND_CAST: check_expr(s, ((const tir_cast *)e)->value); return;
    case TIR_KIND_BUFFER_LOAD: {
        const tir_buffer_load *l = (const tir_buffer_load *)e;
        check_buffer_use(s, l->buffer, l->nidx, "loaded");
        check_exprs(s, l->nidx, l->indices);
        return;
    }
    case TIR_KIND_RAMP:
        check_expr(s, ((const tir_ramp *)e)->start);
        check_expr(s, ((const tir_ramp *)e)->stride);
        return;
    case TIR_KIND_BROADCAST: check_expr(s, ((const tir_broadcast *)e)->value); return;
    case TIR_KIND_CALL:
        check_exprs(s, ((const tir_call *)e)->nargs, ((const tir_call *)e)->args);
        return;
    case TIR_KIND_LET: {
        const tir_let *l = (const tir_let *)e;
        check_expr(s, l->value);
        int n = s->vars.n;
        define_var(s, l->var, "let variable");
        check_expr(s, l->body);
        s->vars.n = n;
        return;
    }
    default:
        if (tir_kind_is_binop((tir_kind)e->kind)) {
            check_expr(s, ((const tir_binop *)e)->a);
            check_expr(s, ((const tir_binop *)e)->b);
            return;
        }
        break;
    }
    TIR_UNREACHABLE();
}

/* Shapes, strides and offsets of a buffer being allocated must only use
 * variables in scope. */
static void check_buffer_def(vstate *s, const tir_buffer *b) {
    check_exprs(s, b->ndim, b->shape);
    if (b->strides) check_exprs(s, b->ndim, b->strides);
    check_expr(s, b->elem_offset);
}

static void check_region(vstate *s, const tir_buffer_region *r, bool is_read) {
    if (!in_vec(&s->bufs, r->buffer))
        vfail(s,
              "buffer '%s' is in a %s region but is neither a parameter nor allocated by an "
              "enclosing block or Allocate",
              r->buffer->name, is_read ? "read" : "write");
    else if (r->ndim != r->buffer->ndim)
        vfail(s, "%s region of buffer '%s' has %d ranges but the buffer has %d dimensions",
              is_read ? "read" : "write", r->buffer->name, r->ndim, r->buffer->ndim);
    for (int i = 0; i < r->ndim && !s->failed; i++) {
        check_expr(s, r->ranges[i].min);
        check_expr(s, r->ranges[i].extent);
    }
}

typedef struct update_finder {
    tir_visitor v;
    bool found;
} update_finder;

typedef struct self_load_finder {
    tir_visitor v;
    const tir_buffer_store *st;
    bool found;
} self_load_finder;

static bool self_load_pre(tir_visitor *v, const tir_node *n) {
    self_load_finder *f = (self_load_finder *)v;
    if (f->found) return false;
    const tir_buffer_load *l = tir_as_tir_buffer_load(n);
    if (l && l->buffer == f->st->buffer && l->nidx == f->st->nidx) {
        bool same = true;
        for (int i = 0; i < l->nidx && same; i++)
            same = ar_expr_eq(l->indices[i], f->st->indices[i]);
        if (same) f->found = true;
    }
    return !f->found;
}

static bool has_self_load(const tir_expr *e, const tir_buffer_store *st) {
    self_load_finder f = {{self_load_pre, NULL, NULL}, st, false};
    tir_visit(&f.v, e);
    return f.found;
}

/* A reduction update stores an element computed from that same element;
 * a nested block with an init counts too (the outer block of a blockize),
 * and so does mma_sync (D += A * B on a fragment tile, after tensorize). */
static bool update_pre(tir_visitor *v, const tir_node *n) {
    update_finder *f = (update_finder *)v;
    if (f->found) return false;
    const tir_buffer_store *st = tir_as_tir_buffer_store(n);
    if (st && has_self_load(st->value, st)) f->found = true;
    const tir_block *b = tir_as_tir_block(n);
    if (b && b->init) f->found = true;
    /* mma_sync and wgmma accumulate in place: a tensorized reduction's update. */
    const tir_evaluate *ev = tir_as_tir_evaluate(n);
    const tir_call *call = ev ? tir_as_tir_call(ev->value) : NULL;
    if (call && (call->op == TIR_INTRIN_MMA_SYNC || call->op == TIR_INTRIN_WGMMA)) f->found = true;
    return !f->found && (tir_kind_is_stmt((tir_kind)n->kind));
}

static bool has_reduction_update(const tir_stmt *body) {
    update_finder f = {{update_pre, NULL, NULL}, false};
    tir_visit(&f.v, body);
    return f.found;
}

static void check_stmt(vstate *s, const tir_stmt *st);

static void check_block(vstate *s, const tir_block *b) {
    const tir_block *outer = s->block;
    s->block = b;
    int nv = s->vars.n, nb = s->bufs.n;
    for (int i = 0; i < b->niters && !s->failed; i++) {
        check_expr(s, b->iters[i].dom.min);
        check_expr(s, b->iters[i].dom.extent);
    }
    const tir_iter_var *reduce = NULL;
    for (int i = 0; i < b->niters && !s->failed; i++) {
        define_var(s, b->iters[i].var, "block iter var");
        if (b->iters[i].kind == TIR_ITER_REDUCE && !reduce) reduce = &b->iters[i];
    }
    for (int i = 0; i < b->nallocs && !s->failed; i++) {
        check_buffer_def(s, b->allocs[i]);
        ir_vec_push(&s->bufs, b->allocs[i]);
    }
    for (int i = 0; i < b->nreads && !s->failed; i++) check_region(s, &b->reads[i], true);
    for (int i = 0; i < b->nwrites && !s->failed; i++) check_region(s, &b->writes[i], false);
    if (!s->failed && reduce && !b->init && !has_reduction_update(b->body))
        vfail(s,
              "block \"%s\" has reduction iter var '%s' but neither an init nor a reduction "
              "update",
              b->name, reduce->var->name);
    if (b->init) check_stmt(s, b->init);
    check_stmt(s, b->body);
    s->vars.n = nv;
    s->bufs.n = nb;
    s->block = outer;
}

static void check_stmt(vstate *s, const tir_stmt *st) {
    if (s->failed || !st) return;
    switch ((tir_kind)st->kind) {
    case TIR_KIND_FOR: {
        const tir_for *f = (const tir_for *)st;
        check_expr(s, f->min);
        check_expr(s, f->extent);
        int nv = s->vars.n;
        define_var(s, f->var, "loop variable");
        ir_vec_push(&s->loops, f);
        check_stmt(s, f->body);
        s->loops.n--;
        s->vars.n = nv;
        return;
    }
    case TIR_KIND_BLOCK_REALIZE: {
        const tir_block_realize *r = (const tir_block_realize *)st;
        const tir_block *b = r->block;
        check_exprs(s, r->nvalues, r->values);
        check_expr(s, r->predicate);
        if (s->failed) return;
        if (r->nvalues != b->niters) {
            vfail(s, "block \"%s\" has %d iter vars but is bound to %d values", b->name,
                  b->niters, r->nvalues);
            return;
        }
        for (int i = 0; i < b->niters; i++) {
            const tir_var *v = b->iters[i].var;
            if (!tir_dtype_eq(r->values[i]->dtype, v->base.dtype)) {
                char x[32], y[32];
                vfail(s, "block \"%s\": iter var '%s' is %s but is bound to a value of type %s",
                      b->name, v->name, tir_dtype_str(v->base.dtype, x, sizeof x),
                      tir_dtype_str(r->values[i]->dtype, y, sizeof y));
                return;
            }
        }
        check_block(s, b);
        return;
    }
    case TIR_KIND_BLOCK: check_block(s, (const tir_block *)st); return;
    case TIR_KIND_BUFFER_STORE: {
        const tir_buffer_store *x = (const tir_buffer_store *)st;
        check_buffer_use(s, x->buffer, x->nidx, "stored to");
        check_exprs(s, x->nidx, x->indices);
        check_expr(s, x->value);
        return;
    }
    case TIR_KIND_SEQ: {
        const tir_seq *q = (const tir_seq *)st;
        for (int i = 0; i < q->n; i++) check_stmt(s, q->stmts[i]);
        return;
    }
    case TIR_KIND_IF: {
        const tir_if *x = (const tir_if *)st;
        check_expr(s, x->cond);
        check_stmt(s, x->then_s);
        check_stmt(s, x->else_s);
        return;
    }
    case TIR_KIND_ALLOCATE: {
        const tir_allocate *x = (const tir_allocate *)st;
        check_buffer_def(s, x->buffer);
        int nb = s->bufs.n;
        ir_vec_push(&s->bufs, x->buffer);
        check_stmt(s, x->body);
        s->bufs.n = nb;
        return;
    }
    case TIR_KIND_EVALUATE: check_expr(s, ((const tir_evaluate *)st)->value); return;
    default: break;
    }
    TIR_UNREACHABLE();
}

/* Variables in a parameter buffer's shape are defined by the call. */
static bool shape_var_pre(tir_visitor *v, const tir_node *n) {
    if (n->kind == TIR_KIND_VAR) {
        vstate *s = v->user;
        if (!in_vec(&s->vars, n)) ir_vec_push(&s->vars, n);
    }
    return true;
}

static void define_shape_vars(vstate *s, const tir_buffer *b) {
    tir_visitor v = {shape_var_pre, NULL, s};
    for (int i = 0; i < b->ndim; i++) {
        tir_visit(&v, b->shape[i]);
        if (b->strides) tir_visit(&v, b->strides[i]);
    }
    tir_visit(&v, b->elem_offset);
}

tir_status tir_verify(tir_ctx *ctx, const tir_prim_func *f) {
    if (!f) return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG, "tir_verify: no function");
    vstate s = {.ctx = ctx, .f = f};
    for (int i = 0; i < f->nparams && !s.failed; i++) {
        if (in_vec(&s.vars, f->params[i]))
            vfail(&s, "parameter '%s' appears twice", f->params[i]->name);
        ir_vec_push(&s.vars, f->params[i]);
    }
    for (int i = 0; i < f->nparams && !s.failed; i++) {
        const tir_buffer *b = f->buffer_map[i];
        if (!b) continue;
        if (in_vec(&s.bufs, b)) vfail(&s, "buffer '%s' is bound to two parameters", b->name);
        ir_vec_push(&s.bufs, b);
        define_shape_vars(&s, b);
    }
    check_stmt(&s, f->body);
    ir_vec_free(&s.vars);
    ir_vec_free(&s.bufs);
    ir_vec_free(&s.loops);
    return s.failed ? TIR_ERR_VERIFY : TIR_OK;
}
