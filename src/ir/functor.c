/* functor.c: generic traversal (visitor), rewriting (mutator), and the
 * substitutions built on them.
 *
 * The mutator rebuilds a node only when one of its children came back as a
 * different pointer; everything else is shared with the input, which keeps
 * schedule primitives cheap and lets callers detect "nothing changed" by
 * pointer comparison.
 */
#include <string.h>

#include "ir_internal.h"

/* ----------------------------------------------------------------- visitor */

static void visit_region(tir_visitor *v, const tir_buffer_region *r) {
    tir_visit(v, r->buffer);
    for (int i = 0; i < r->ndim; i++) {
        tir_visit(v, r->ranges[i].min);
        tir_visit(v, r->ranges[i].extent);
    }
}

void tir_visit(tir_visitor *v, const void *node) {
    const tir_node *n = node;
    if (!n) return;
    if (!v->pre(v, n)) return;
    switch ((tir_kind)n->kind) {
    case TIR_KIND_INT_IMM:
    case TIR_KIND_FLOAT_IMM:
    case TIR_KIND_VAR:
    case TIR_KIND_BUFFER: break;
    case TIR_KIND_ADD: case TIR_KIND_SUB: case TIR_KIND_MUL: case TIR_KIND_DIV:
    case TIR_KIND_MOD: case TIR_KIND_FLOORDIV: case TIR_KIND_FLOORMOD: case TIR_KIND_MIN:
    case TIR_KIND_MAX: case TIR_KIND_EQ: case TIR_KIND_NE: case TIR_KIND_LT:
    case TIR_KIND_LE: case TIR_KIND_GT: case TIR_KIND_GE: case TIR_KIND_AND:
    case TIR_KIND_OR: {
        const tir_binop *b = node;
        tir_visit(v, b->a);
        tir_visit(v, b->b);
        break;
    }
    case TIR_KIND_NOT: tir_visit(v, ((const tir_not *)node)->a); break;
    case TIR_KIND_SELECT: {
        const tir_select *s = node;
        tir_visit(v, s->cond);
        tir_visit(v, s->t);
        tir_visit(v, s->f);
        break;
    }
    case TIR_KIND_CAST: tir_visit(v, ((const tir_cast *)node)->value); break;
    case TIR_KIND_BUFFER_LOAD: {
        const tir_buffer_load *l = node;
        tir_visit(v, l->buffer);
        for (int i = 0; i < l->nidx; i++) tir_visit(v, l->indices[i]);
        break;
    }
    case TIR_KIND_RAMP: {
        const tir_ramp *r = node;
        tir_visit(v, r->start);
        tir_visit(v, r->stride);
        break;
    }
    case TIR_KIND_BROADCAST: tir_visit(v, ((const tir_broadcast *)node)->value); break;
    case TIR_KIND_CALL: {
        const tir_call *c = node;
        for (int i = 0; i < c->nargs; i++) tir_visit(v, c->args[i]);
        break;
    }
    case TIR_KIND_LET: {
        const tir_let *l = node;
        tir_visit(v, l->var);
        tir_visit(v, l->value);
        tir_visit(v, l->body);
        break;
    }
    case TIR_KIND_FOR: {
        const tir_for *f = node;
        tir_visit(v, f->var);
        tir_visit(v, f->min);
        tir_visit(v, f->extent);
        tir_visit(v, f->body);
        break;
    }
    case TIR_KIND_BLOCK_REALIZE: {
        const tir_block_realize *r = node;
        for (int i = 0; i < r->nvalues; i++) tir_visit(v, r->values[i]);
        tir_visit(v, r->predicate);
        tir_visit(v, r->block);
        break;
    }
    case TIR_KIND_BLOCK: {
        const tir_block *b = node;
        for (int i = 0; i < b->niters; i++) {
            tir_visit(v, b->iters[i].var);
            tir_visit(v, b->iters[i].dom.min);
            tir_visit(v, b->iters[i].dom.extent);
        }
        for (int i = 0; i < b->nreads; i++) visit_region(v, &b->reads[i]);
        for (int i = 0; i < b->nwrites; i++) visit_region(v, &b->writes[i]);
        for (int i = 0; i < b->nallocs; i++) tir_visit(v, b->allocs[i]);
        tir_visit(v, b->init);
        tir_visit(v, b->body);
        break;
    }
    case TIR_KIND_BUFFER_STORE: {
        const tir_buffer_store *s = node;
        tir_visit(v, s->buffer);
        tir_visit(v, s->value);
        for (int i = 0; i < s->nidx; i++) tir_visit(v, s->indices[i]);
        break;
    }
    case TIR_KIND_SEQ: {
        const tir_seq *q = node;
        for (int i = 0; i < q->n; i++) tir_visit(v, q->stmts[i]);
        break;
    }
    case TIR_KIND_IF: {
        const tir_if *s = node;
        tir_visit(v, s->cond);
        tir_visit(v, s->then_s);
        tir_visit(v, s->else_s);
        break;
    }
    case TIR_KIND_ALLOCATE: {
        const tir_allocate *a = node;
        tir_visit(v, a->buffer);
        tir_visit(v, a->body);
        break;
    }
    case TIR_KIND_EVALUATE: tir_visit(v, ((const tir_evaluate *)node)->value); break;
    case TIR_KIND_PRIM_FUNC: {
        const tir_prim_func *f = node;
        for (int i = 0; i < f->nparams; i++) {
            tir_visit(v, f->params[i]);
            tir_visit(v, f->buffer_map[i]);
        }
        tir_visit(v, f->body);
        break;
    }
    case TIR_KIND_COUNT: TIR_UNREACHABLE();
    }
    if (v->post) v->post(v, n);
}

/* ----------------------------------------------------------------- mutator */

const tir_node *tir_mutate(tir_mutator *m, const void *node) {
    const tir_node *n = node;
    if (!n) return NULL;
    TIR_ASSERT(n->kind < TIR_KIND_COUNT);
    if (m->on[n->kind]) return m->on[n->kind](m, n);
    return tir_mutate_default(m, n);
}

#define MX(e) tir_mutate_expr(m, (e))
#define MS(s) tir_mutate_stmt(m, (s))

/* Copy on write: the arena copy of orig (n elements of elem bytes) made the
 * first time an element changes; copy once made. */
static void *cow_array(tir_ctx *ctx, void *copy, const void *orig, size_t elem, int n) {
    if (copy) return copy;
    copy = tir_ctx_alloc(ctx, elem * (size_t)(n > 0 ? n : 1));
    memcpy(copy, orig, elem * (size_t)n);
    return copy;
}

/* Mutates an array of expressions; returns NULL if nothing changed, else a
 * fresh arena array. */
static const tir_expr **mutate_exprs(tir_mutator *m, int n, const tir_expr *const *in) {
    const tir_expr **out = NULL;
    for (int i = 0; i < n; i++) {
        const tir_expr *e = MX(in[i]);
        if (e != in[i]) out = cow_array(m->ctx, out, in, sizeof *out, n);
        if (out) out[i] = e;
    }
    return out;
}

static const tir_buffer *mutate_buffer(tir_mutator *m, const tir_buffer *b) {
    const tir_node *r = tir_mutate(m, b);
    TIR_ASSERT(r && r->kind == TIR_KIND_BUFFER);
    return (const tir_buffer *)r;
}

/* Returns true if any region changed; *out then holds a fresh array. */
static bool mutate_regions(tir_mutator *m, int n, const tir_buffer_region *in,
                           const tir_buffer_region **out) {
    tir_buffer_region *res = NULL;
    for (int i = 0; i < n; i++) {
        const tir_buffer *b = mutate_buffer(m, in[i].buffer);
        tir_range *rs = NULL;
        for (int d = 0; d < in[i].ndim; d++) {
            const tir_expr *mn = MX(in[i].ranges[d].min), *ex = MX(in[i].ranges[d].extent);
            if (mn != in[i].ranges[d].min || ex != in[i].ranges[d].extent)
                rs = cow_array(m->ctx, rs, in[i].ranges, sizeof *rs, in[i].ndim);
            if (rs) rs[d] = (tir_range){mn, ex};
        }
        if (b != in[i].buffer || rs) res = cow_array(m->ctx, res, in, sizeof *res, n);
        if (res) {
            res[i].buffer = b;
            res[i].ndim = in[i].ndim;
            res[i].ranges = rs ? rs : in[i].ranges;
        }
    }
    *out = res;
    return res != NULL;
}

/* The default rebuilds a node from its mutated children and returns the
 * node itself when none changed (so unchanged subtrees stay shared). */
static const tir_node *mutate_expr_node(tir_mutator *m, const tir_node *n) {
    tir_ctx *ctx = m->ctx;
    const void *node = n;
    switch ((tir_kind)n->kind) {
    case TIR_KIND_INT_IMM:
    case TIR_KIND_FLOAT_IMM:
    case TIR_KIND_VAR:
    case TIR_KIND_BUFFER: return n;
    case TIR_KIND_ADD: case TIR_KIND_SUB: case TIR_KIND_MUL: case TIR_KIND_DIV:
    case TIR_KIND_MOD: case TIR_KIND_FLOORDIV: case TIR_KIND_FLOORMOD: case TIR_KIND_MIN:
    case TIR_KIND_MAX: case TIR_KIND_EQ: case TIR_KIND_NE: case TIR_KIND_LT:
    case TIR_KIND_LE: case TIR_KIND_GT: case TIR_KIND_GE: case TIR_KIND_AND:
    case TIR_KIND_OR: {
        const tir_binop *b = node;
        const tir_expr *a = MX(b->a), *c = MX(b->b);
        if (a == b->a && c == b->b) return n;
        return (const tir_node *)tir_binop_new(ctx, (tir_kind)n->kind, a, c);
    }
    case TIR_KIND_NOT: {
        const tir_not *x = node;
        const tir_expr *a = MX(x->a);
        return a == x->a ? n : (const tir_node *)tir_not_new(ctx, a);
    }
    case TIR_KIND_SELECT: {
        const tir_select *s = node;
        const tir_expr *c = MX(s->cond), *t = MX(s->t), *f = MX(s->f);
        if (c == s->cond && t == s->t && f == s->f) return n;
        return (const tir_node *)tir_select_new(ctx, c, t, f);
    }
    case TIR_KIND_CAST: {
        const tir_cast *c = node;
        const tir_expr *v = MX(c->value);
        return v == c->value ? n : (const tir_node *)tir_cast_new(ctx, c->base.dtype, v);
    }
    case TIR_KIND_BUFFER_LOAD: {
        const tir_buffer_load *l = node;
        const tir_buffer *b = mutate_buffer(m, l->buffer);
        const tir_expr **idx = mutate_exprs(m, l->nidx, l->indices);
        if (b == l->buffer && !idx) return n;
        return (const tir_node *)tir_load(ctx, b, l->nidx, idx ? idx : l->indices);
    }
    case TIR_KIND_RAMP: {
        const tir_ramp *r = node;
        const tir_expr *s = MX(r->start), *st = MX(r->stride);
        if (s == r->start && st == r->stride) return n;
        return (const tir_node *)tir_ramp_new(ctx, s, st, r->lanes);
    }
    case TIR_KIND_BROADCAST: {
        const tir_broadcast *b = node;
        const tir_expr *v = MX(b->value);
        return v == b->value ? n : (const tir_node *)tir_broadcast_new(ctx, v, b->lanes);
    }
    case TIR_KIND_CALL: {
        const tir_call *c = node;
        const tir_expr **args = mutate_exprs(m, c->nargs, c->args);
        if (!args) return n;
        return (const tir_node *)tir_call_new(ctx, c->base.dtype, c->op, c->nargs, args);
    }
    case TIR_KIND_LET: {
        const tir_let *l = node;
        const tir_expr *v = MX(l->value), *b = MX(l->body);
        if (v == l->value && b == l->body) return n;
        return (const tir_node *)tir_let_new(ctx, l->var, v, b);
    }
    default: return NULL; /* not an expression */
    }
}

static const tir_node *mutate_block(tir_mutator *m, const tir_block *b) {
    tir_ctx *ctx = m->ctx;
    const tir_node *n = (const tir_node *)b;
    tir_block_desc d;
    tir_block_describe(b, &d);
    bool changed = false;
    tir_iter_var *iters = NULL;
    for (int i = 0; i < b->niters; i++) {
        const tir_expr *mn = MX(b->iters[i].dom.min), *ex = MX(b->iters[i].dom.extent);
        if (mn != b->iters[i].dom.min || ex != b->iters[i].dom.extent)
            iters = cow_array(ctx, iters, b->iters, sizeof *iters, b->niters);
        if (iters) iters[i].dom = (tir_range){mn, ex};
    }
    if (iters) {
        d.iters = iters;
        changed = true;
    }
    const tir_buffer_region *rs;
    if (mutate_regions(m, b->nreads, b->reads, &rs)) {
        d.reads = rs;
        changed = true;
    }
    if (mutate_regions(m, b->nwrites, b->writes, &rs)) {
        d.writes = rs;
        changed = true;
    }
    const tir_buffer **allocs = NULL;
    for (int i = 0; i < b->nallocs; i++) {
        const tir_buffer *nb = mutate_buffer(m, b->allocs[i]);
        if (nb != b->allocs[i])
            allocs = cow_array(ctx, allocs, b->allocs, sizeof *allocs, b->nallocs);
        if (allocs) allocs[i] = nb;
    }
    if (allocs) {
        d.allocs = allocs;
        changed = true;
    }
    d.init = b->init ? MS(b->init) : NULL;
    d.body = MS(b->body);
    if (d.init != b->init || d.body != b->body) changed = true;
    return changed ? (const tir_node *)tir_block_new(ctx, &d) : n;
}

static const tir_node *mutate_func(tir_mutator *m, const tir_prim_func *f) {
    tir_ctx *ctx = m->ctx;
    const tir_node *n = (const tir_node *)f;
    const tir_buffer **bm = NULL;
    for (int i = 0; i < f->nparams; i++) {
        const tir_buffer *b = f->buffer_map[i] ? mutate_buffer(m, f->buffer_map[i]) : NULL;
        if (b != f->buffer_map[i]) bm = cow_array(ctx, bm, f->buffer_map, sizeof *bm, f->nparams);
        if (bm) bm[i] = b;
    }
    const tir_stmt *body = MS(f->body);
    if (!bm && body == f->body) return n;
    return (const tir_node *)tir_prim_func_new(ctx, f->name, f->nparams, f->params,
                                               bm ? bm : f->buffer_map, body, f->nattrs,
                                               f->attrs);
}

static const tir_node *mutate_stmt_node(tir_mutator *m, const tir_node *n) {
    tir_ctx *ctx = m->ctx;
    const void *node = n;
    switch ((tir_kind)n->kind) {
    case TIR_KIND_FOR: {
        const tir_for *f = node;
        const tir_expr *mn = MX(f->min), *ex = MX(f->extent);
        const tir_stmt *body = MS(f->body);
        if (mn == f->min && ex == f->extent && body == f->body) return n;
        return (const tir_node *)tir_for_new(ctx, f->var, mn, ex, f->kind, f->thread_tag,
                                             f->nannots, f->annots, body);
    }
    case TIR_KIND_BLOCK_REALIZE: {
        const tir_block_realize *r = node;
        const tir_expr **vals = mutate_exprs(m, r->nvalues, r->values);
        const tir_expr *p = MX(r->predicate);
        const tir_node *b = tir_mutate(m, r->block);
        TIR_ASSERT(b && b->kind == TIR_KIND_BLOCK);
        if (!vals && p == r->predicate && b == (const tir_node *)r->block) return n;
        return (const tir_node *)tir_block_realize_new(ctx, r->nvalues, vals ? vals : r->values,
                                                       p, (const tir_block *)b);
    }
    case TIR_KIND_BUFFER_STORE: {
        const tir_buffer_store *s = node;
        const tir_buffer *b = mutate_buffer(m, s->buffer);
        const tir_expr *v = MX(s->value);
        const tir_expr **idx = mutate_exprs(m, s->nidx, s->indices);
        if (b == s->buffer && v == s->value && !idx) return n;
        return (const tir_node *)tir_store(ctx, b, v, s->nidx, idx ? idx : s->indices);
    }
    case TIR_KIND_SEQ: {
        const tir_seq *q = node;
        const tir_stmt **out = NULL;
        for (int i = 0; i < q->n; i++) {
            const tir_stmt *s = MS(q->stmts[i]);
            if (s != q->stmts[i]) out = cow_array(ctx, out, q->stmts, sizeof *out, q->n);
            if (out) out[i] = s;
        }
        return out ? (const tir_node *)tir_seq_new(ctx, q->n, out) : n;
    }
    case TIR_KIND_IF: {
        const tir_if *s = node;
        const tir_expr *c = MX(s->cond);
        const tir_stmt *t = MS(s->then_s), *e = s->else_s ? MS(s->else_s) : NULL;
        if (c == s->cond && t == s->then_s && e == s->else_s) return n;
        return (const tir_node *)tir_if_new(ctx, c, t, e);
    }
    case TIR_KIND_ALLOCATE: {
        const tir_allocate *a = node;
        const tir_buffer *b = mutate_buffer(m, a->buffer);
        const tir_stmt *body = MS(a->body);
        if (b == a->buffer && body == a->body) return n;
        return (const tir_node *)tir_allocate_annotated(ctx, b, a->nannots, a->annots, body);
    }
    case TIR_KIND_EVALUATE: {
        const tir_evaluate *e = node;
        const tir_expr *v = MX(e->value);
        return v == e->value ? n : (const tir_node *)tir_evaluate_new(ctx, v);
    }
    case TIR_KIND_BLOCK: return mutate_block(m, node);
    case TIR_KIND_PRIM_FUNC: return mutate_func(m, node);
    default: break;
    }
    TIR_UNREACHABLE();
}

const tir_node *tir_mutate_default(tir_mutator *m, const void *node) {
    const tir_node *r = mutate_expr_node(m, node);
    return r ? r : mutate_stmt_node(m, node);
}

/* ------------------------------------------------------------ substitution */

typedef struct {
    int n;
    const void *const *from;
    const void *const *to;
} subst_map;

static const tir_node *subst_var(tir_mutator *m, const tir_node *n) {
    const subst_map *s = m->user;
    for (int i = 0; i < s->n; i++)
        if (s->from[i] == (const void *)n) return s->to[i];
    return n;
}

const tir_node *tir_substitute(tir_ctx *ctx, const void *node, int n,
                               const tir_var *const *vars, const tir_expr *const *values) {
    for (int i = 0; i < n; i++)
        TIR_ASSERT(tir_dtype_eq(vars[i]->base.dtype, values[i]->dtype));
    subst_map s = {n, (const void *const *)vars, (const void *const *)values};
    tir_mutator m = {.ctx = ctx, .user = &s};
    m.on[TIR_KIND_VAR] = subst_var;
    return tir_mutate(&m, node);
}

const tir_node *tir_replace_buffers(tir_ctx *ctx, const void *node, int n,
                                    const tir_buffer *const *old_bufs,
                                    const tir_buffer *const *new_bufs) {
    subst_map s = {n, (const void *const *)old_bufs, (const void *const *)new_bufs};
    tir_mutator m = {.ctx = ctx, .user = &s};
    m.on[TIR_KIND_BUFFER] = subst_var;
    return tir_mutate(&m, node);
}

typedef struct {
    tir_visitor v;
    const tir_var *var;
    bool found;
} uses_state;

static bool uses_pre(tir_visitor *v, const tir_node *n) {
    uses_state *s = (uses_state *)v;
    if (s->found) return false;
    if (n == (const tir_node *)s->var) s->found = true;
    return !s->found;
}

bool tir_uses_var(const void *node, const tir_var *var) {
    uses_state s = {{uses_pre, NULL, NULL}, var, false};
    tir_visit(&s.v, node);
    return s.found;
}

static bool load_pre(tir_visitor *v, const tir_node *n) {
    if (n->kind == TIR_KIND_BUFFER_LOAD) *(bool *)v->user = true;
    return !*(bool *)v->user;
}

bool tir_reads_buffer(const void *node) {
    bool found = false;
    tir_visitor v = {.pre = load_pre, .user = &found};
    tir_visit(&v, node);
    return found;
}
