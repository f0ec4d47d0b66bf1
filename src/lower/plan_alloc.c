/* plan_alloc.c: every shared/local buffer is allocated at the lowest common
 * ancestor of its accesses (TVM: PlanAndUpdateBufferAllocationLocation), so
 * that compact_alloc shrinks it to what one iteration of the enclosing
 * loops uses.  Allocations start wherever their block was (often the root
 * block); they are taken out and put back around the deepest statement that
 * still contains every access, but not into a loop whose iterations may
 * carry a value in the buffer from one to the next (lower_reads_first:
 * a running sum kept in a local, its first value written under `k == 0`,
 * lost its sum before; found by the GPU-path fuzzer's pipeline family).  A buffer
 * never accessed is dropped.
 */
#include "lower_internal.h"

typedef struct finder {
    const tir_buffer *buf;
    bool found;
} finder;

static bool find_pre(tir_visitor *v, const tir_node *n) {
    finder *f = v->user;
    if (f->found) return false;
    if (n == (const tir_node *)f->buf) f->found = true;
    return !f->found;
}

static bool uses_buf(const void *node, const tir_buffer *b) {
    if (!node) return false;
    finder fd = {b, false};
    tir_visitor v = {.pre = find_pre, .user = &fd};
    tir_visit(&v, node);
    return fd.found;
}

static bool is_container(const tir_stmt *s) {
    tir_kind k = (tir_kind)s->kind;
    return k == TIR_KIND_FOR || k == TIR_KIND_SEQ || k == TIR_KIND_IF || k == TIR_KIND_ALLOCATE;
}

/* Allocates al's buffer (with al's annotations) around the deepest part of
 * s (which uses the buffer) holding all its accesses. */
static const tir_stmt *place(tir_ctx *ctx, const tir_stmt *s, const tir_allocate *al,
                            const ir_vec *threads) {
    const tir_buffer *buf = al->buffer;
    switch ((tir_kind)s->kind) {
    case TIR_KIND_FOR: {
        const tir_for *f = (const tir_for *)s;
        if (uses_buf(f->min, buf) || uses_buf(f->extent, buf)) break;
        /* inside, the buffer would start unwritten in every iteration */
        if (f->kind != TIR_FOR_THREAD_BINDING && lower_reads_first(f, buf, threads)) break;
        const tir_stmt *body = is_container(f->body) ? place(ctx, f->body, al, threads)
                                                     : lower_alloc_like(ctx, al, buf, f->body);
        return tir_for_new(ctx, f->var, f->min, f->extent, f->kind, f->thread_tag, f->nannots,
                           f->annots, body);
    }
    case TIR_KIND_SEQ: {
        const tir_seq *q = (const tir_seq *)s;
        int users = 0, which = -1;
        for (int i = 0; i < q->n; i++)
            if (uses_buf(q->stmts[i], buf)) users++, which = i;
        if (users != 1) break;
        const tir_stmt **v = IR_NEWN(ctx, const tir_stmt *, q->n);
        for (int i = 0; i < q->n; i++) v[i] = q->stmts[i];
        v[which] = is_container(v[which]) ? place(ctx, v[which], al, threads)
                                          : lower_alloc_like(ctx, al, buf, v[which]);
        return tir_seq_new(ctx, q->n, v);
    }
    case TIR_KIND_IF: {
        const tir_if *i = (const tir_if *)s;
        if (uses_buf(i->cond, buf)) break;
        bool t = uses_buf(i->then_s, buf), e = uses_buf(i->else_s, buf);
        if (t && e) break;
        const tir_stmt *br = t ? i->then_s : i->else_s;
        br = is_container(br) ? place(ctx, br, al, threads) : lower_alloc_like(ctx, al, buf, br);
        return tir_if_new(ctx, i->cond, t ? br : i->then_s, t ? i->else_s : br);
    }
    case TIR_KIND_ALLOCATE: {
        const tir_allocate *a = (const tir_allocate *)s;
        return lower_alloc_like(ctx, a, a->buffer, place(ctx, a->body, al, threads));
    }
    default: break;
    }
    return lower_alloc_like(ctx, al, buf, s);
}

typedef struct strip {
    ir_vec allocs; /* tir_allocate*, outermost first */
} strip;

static const tir_node *on_alloc(tir_mutator *m, const tir_node *n) {
    strip *s = m->user;
    const tir_allocate *a = (const tir_allocate *)n;
    if (a->buffer->scope == TIR_SCOPE_GLOBAL) return tir_mutate_default(m, n);
    ir_vec_push(&s->allocs, a);
    return tir_mutate(m, a->body);
}

tir_status lower_plan_alloc(lower_state *st, const tir_prim_func *in, const tir_prim_func **out) {
    strip s = {{0}};
    tir_mutator m = {.ctx = st->ctx, .user = &s};
    m.on[TIR_KIND_ALLOCATE] = on_alloc;
    const tir_stmt *body = tir_mutate_stmt(&m, in->body);
    ir_vec threads = {0};
    lower_thread_vars(body, &threads);
    /* Innermost first, so that outer buffers end up outside inner ones at
     * the same point, as they were. */
    for (int i = s.allocs.n - 1; i >= 0; i--) {
        const tir_allocate *a = s.allocs.items[i];
        if (uses_buf(body, a->buffer)) body = place(st->ctx, body, a, &threads);
    }
    ir_vec_free(&s.allocs);
    ir_vec_free(&threads);
    *out = lower_with_body(st->ctx, in, body);
    return TIR_OK;
}
