/* lower_util.c: small helpers shared by the lowering passes. */
#include <stdarg.h>
#include <string.h>

#include "lower_internal.h"

const tir_prim_func *lower_with_body(tir_ctx *ctx, const tir_prim_func *f, const tir_stmt *body) {
    if (body == f->body) return f;
    return tir_prim_func_new(ctx, f->name, f->nparams, f->params, f->buffer_map, body, f->nattrs,
                             f->attrs);
}

bool lower_is_thread_loop(const tir_for *f) {
    return f && f->kind == TIR_FOR_THREAD_BINDING &&
           tir_thread_axis_kind(tir_thread_axis_lookup(f->thread_tag)) == TIR_AXIS_KIND_THREAD;
}

bool lower_is_block_loop(const tir_for *f) {
    return f && f->kind == TIR_FOR_THREAD_BINDING &&
           tir_thread_axis_kind(tir_thread_axis_lookup(f->thread_tag)) == TIR_AXIS_KIND_BLOCK;
}

tir_status lower_fail_marked(lower_state *st, const void *where, int nmarks,
                             const void *const *marks, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const char *text = tir_print_marked(st->ctx, where, nmarks, marks);
    return tir_ctx_fail(st->ctx, TIR_ERR_LOWER, "%s\n%s", msg, text);
}

const tir_stmt *lower_alloc_like(tir_ctx *ctx, const tir_allocate *a, const tir_buffer *buf,
                                 const tir_stmt *body) {
    return tir_allocate_annotated(ctx, buf, a->nannots, a->annots, body);
}

const tir_stmt *lower_seq2(tir_ctx *ctx, const tir_stmt *a, const tir_stmt *b) {
    if (!a) return b;
    if (!b) return a;
    const tir_stmt *v[2] = {a, b};
    return tir_seq_new(ctx, 2, v);
}

const tir_stmt *lower_intrin_stmt(tir_ctx *ctx, tir_intrin op, int nargs,
                                  const tir_expr *const *args) {
    return tir_evaluate_new(ctx, tir_call_new(ctx, TIR_VOID, op, nargs, args));
}

static bool var_pre(tir_visitor *v, const tir_node *n) {
    ir_vec *vars = v->user;
    if (n->kind == TIR_KIND_VAR) {
        for (int i = 0; i < vars->n; i++)
            if (vars->items[i] == n) return true;
        ir_vec_push(vars, n);
    }
    return true;
}

void lower_collect_vars(const void *node, ir_vec *vars) {
    tir_visitor v = {.pre = var_pre, .user = vars};
    tir_visit(&v, node);
}

bool lower_is_intrin_stmt(const tir_stmt *s, tir_intrin op) {
    const tir_evaluate *e = tir_as_tir_evaluate(s);
    const tir_call *c = e ? tir_as_tir_call(e->value) : NULL;
    return c && c->op == op;
}

bool lower_uses_any(const void *node, int nvars, const tir_var *const *vars) {
    for (int i = 0; i < nvars; i++)
        if (tir_uses_var(node, vars[i])) return true;
    return false;
}

const tir_buffer_load *lower_addressed(const tir_call *call, int i) {
    const tir_call *a = i < call->nargs ? tir_as_tir_call(call->args[i]) : NULL;
    return a && a->op == TIR_INTRIN_ADDRESS_OF && a->nargs == 1 ? tir_as_tir_buffer_load(a->args[0])
                                                                : NULL;
}

int lower_dest_arg(const tir_call *c, bool *rmw) {
    *rmw = c->op == TIR_INTRIN_MMA_SYNC || c->op == TIR_INTRIN_ATOMIC_ADD ||
           c->op == TIR_INTRIN_WGMMA || c->op == TIR_INTRIN_WGMMA_SYNC;
    switch (c->op) {
    case TIR_INTRIN_WGMMA:
    case TIR_INTRIN_WGMMA_SYNC: /* its first group's accumulator (the rule's groups share one) */
    case TIR_INTRIN_FRAG_FILL:
    case TIR_INTRIN_FRAG_LOAD:
    case TIR_INTRIN_CP_ASYNC:
    case TIR_INTRIN_MMA_SYNC:
    case TIR_INTRIN_ATOMIC_ADD: return 0;
    case TIR_INTRIN_FRAG_STORE: return 1;
    case TIR_INTRIN_LDMATRIX: return 2;
    default: return -1;
    }
}

int lower_ldmatrix_row(tir_dtype dtype) { return 16 / tir_dtype_bytes(dtype); }

const tir_buffer_load *lower_wgmma_tile(tir_ctx *ctx, const tir_call *call, int g,
                                        const tir_expr **lo, int64_t *span) {
    const tir_buffer_load *l = 5 * g + 4 < call->nargs ? lower_addressed(call, 5 * g + 3) : NULL;
    int64_t R = 0;
    if (!l || l->nidx != 1 || !tir_expr_const_int(call->args[5 * g + 4], &R) || R < 1) return NULL;
    const tir_expr *x = l->indices[0];
    *lo = tir_simplify(ctx, tir_sub(ctx, x, tir_floormod(ctx, x, tir_int(ctx, x->dtype, 32))));
    *span = 32 * R;
    return l;
}

int64_t lower_span_operand(const tir_call *call, int i, const tir_buffer_load **load) {
    const tir_buffer_load *l = call ? lower_addressed(call, i) : NULL;
    *load = l;
    if (!l || l->nidx < 1) return 0;
    int64_t eb = tir_dtype_bytes(l->buffer->dtype), n = 0;
    bool vec = l->indices[l->nidx - 1]->dtype.lanes > 1; /* its lanes say it */
    switch (call->op) {
    case TIR_INTRIN_CP_ASYNC:
        /* the source reads src_bytes of them (bytes bounds it) */
        if (i > 1 || call->nargs < 3) return 0;
        if (vec) return 1;
        return tir_expr_const_int(call->args[2], &n) && n > 0 && n % eb == 0 ? n / eb : -1;
    case TIR_INTRIN_LDMATRIX: {
        if (call->nargs != 4 || i < 2) return 0;
        if (i == 3) return eb == 2 || eb == 4 ? lower_ldmatrix_row(l->buffer->dtype) : -1;
        /* each matrix gives a lane two 16-bit elements or one 32-bit one */
        if (!tir_expr_const_int(call->args[1], &n) || n < 1 || n > 4) return -1;
        return eb == 4 ? n : 2 * n;
    }
    default: return 0;
    }
}

/* wgmma(c, a, b, R): C's region R x 16, A's R x 8, B's 8 x 16. */
static bool wgmma_operand(const tir_call *call, int i, const tir_buffer_load **load, int *rows,
                          int *cols) {
    int64_t R = 0;
    const tir_buffer_load *l = i < 3 ? lower_addressed(call, i) : NULL;
    if (!l || call->nargs != 4 || !tir_expr_const_int(call->args[3], &R) || R < 1 || R > 256)
        return false;
    *load = l;
    *rows = i == 2 ? 8 : (int)R;
    *cols = i == 1 ? 8 : 16;
    return true;
}

bool lower_tile_operand(const tir_call *call, int i, const tir_buffer_load **load, int *rows,
                        int *cols) {
    if (call && call->op == TIR_INTRIN_WGMMA) return wgmma_operand(call, i, load, rows, cols);
    if (!call || (call->op != TIR_INTRIN_FRAG_FILL && call->op != TIR_INTRIN_FRAG_LOAD &&
                  call->op != TIR_INTRIN_FRAG_STORE && call->op != TIR_INTRIN_MMA_SYNC))
        return false;
    if (call->op == TIR_INTRIN_FRAG_FILL && i != 0) return false;
    const tir_buffer_load *l = lower_addressed(call, i);
    /* the non-fragment side of a load or store covers the fragment's tile */
    const tir_buffer_load *f = call->op == TIR_INTRIN_MMA_SYNC ? l : lower_addressed(call, 0);
    tir_frag_layout lay;
    if (!l || !f || !tir_frag_layout_of(f->buffer->scope, f->buffer->dtype, &lay)) return false;
    *load = l;
    *rows = lay.tile_rows;
    *cols = lay.tile_cols;
    return true;
}

static bool lane_pre(tir_visitor *v, const tir_node *n) {
    bool *found = v->user;
    if (n->kind == TIR_KIND_CALL && ((const tir_call *)n)->op == TIR_INTRIN_LANE_ID) *found = true;
    return !*found;
}

bool lower_uses_lane(const void *node) {
    bool found = false;
    tir_visitor v = {.pre = lane_pre, .user = &found};
    tir_visit(&v, node);
    return found;
}

typedef struct kind_find {
    uint16_t kind;
    bool found;
} kind_find;

static bool kind_pre(tir_visitor *v, const tir_node *n) {
    kind_find *k = v->user;
    if (n->kind == k->kind) k->found = true;
    return !k->found;
}

bool lower_has_kind(const void *node, tir_kind kind) {
    kind_find k = {(uint16_t)kind, false};
    tir_visitor v = {.pre = kind_pre, .user = &k};
    tir_visit(&v, node);
    return k.found;
}

bool lower_ramp_parts(tir_ctx *ctx, const tir_expr *e, const tir_expr **base,
                      const tir_expr **stride) {
    bool build = base != NULL;
    const tir_expr *b1 = NULL, *s1 = NULL, *b2 = NULL, *s2 = NULL;
    switch ((tir_kind)e->kind) {
    case TIR_KIND_RAMP: {
        const tir_ramp *r = (const tir_ramp *)e;
        if (build) *base = r->start, *stride = r->stride;
        return true;
    }
    case TIR_KIND_BROADCAST:
        if (build)
            *base = ((const tir_broadcast *)e)->value,
            *stride = tir_int(ctx, tir_dtype_with_lanes(e->dtype, 1), 0);
        return true;
    case TIR_KIND_ADD: {
        const tir_binop *b = (const tir_binop *)e;
        if (!lower_ramp_parts(ctx, b->a, build ? &b1 : NULL, build ? &s1 : NULL) ||
            !lower_ramp_parts(ctx, b->b, build ? &b2 : NULL, build ? &s2 : NULL))
            return false;
        if (build) *base = tir_add(ctx, b1, b2), *stride = tir_add(ctx, s1, s2);
        return true;
    }
    case TIR_KIND_MUL: {
        const tir_binop *b = (const tir_binop *)e;
        if (b->b->kind != TIR_KIND_BROADCAST ||
            !lower_ramp_parts(ctx, b->a, build ? &b1 : NULL, build ? &s1 : NULL))
            return false;
        const tir_expr *k = ((const tir_broadcast *)b->b)->value;
        if (build) *base = tir_mul(ctx, b1, k), *stride = tir_mul(ctx, s1, k);
        return true;
    }
    default: return false;
    }
}

bool lower_access(const tir_node *n, const tir_buffer **b, int *nidx,
                  const tir_expr *const **idx) {
    if (n->kind == TIR_KIND_BUFFER_LOAD) {
        const tir_buffer_load *l = (const tir_buffer_load *)n;
        *b = l->buffer, *nidx = l->nidx, *idx = l->indices;
        return true;
    }
    if (n->kind == TIR_KIND_BUFFER_STORE) {
        const tir_buffer_store *s = (const tir_buffer_store *)n;
        *b = s->buffer, *nidx = s->nidx, *idx = s->indices;
        return true;
    }
    return false;
}

typedef struct buf_read {
    const tir_buffer *b;
    bool found;
} buf_read;

static bool buf_read_pre(tir_visitor *v, const tir_node *n) {
    buf_read *r = v->user;
    if (n->kind == TIR_KIND_BUFFER_LOAD && ((const tir_buffer_load *)n)->buffer == r->b)
        r->found = true;
    return !r->found;
}

bool lower_reads_buffer(const void *node, const tir_buffer *b) {
    buf_read r = {b, false};
    tir_visitor v = {.pre = buf_read_pre, .user = &r};
    tir_visit(&v, node);
    return r.found;
}
