/* thread_sync.c: barrier insertion (TVM: ThreadSync for shared memory).
 *
 * Threads of a block see each other's shared-memory writes only across a
 * syncthreads.  Two accesses to one shared buffer conflict when one writes,
 * the other reads and their (flat) indices are not the same expression (the
 * same expression is the same element of the same thread).  "The same"
 * means the same variables, not equal up to renaming as tir_struct_equal
 * has it: `i*8 + j` written and `i*8 + k` read are different elements (a
 * cooperative fetch of one element per thread against the compute's reads
 * looked alike that way, and lost both barriers).  Each statement
 * is summarised by the accesses before its first barrier (head), those
 * after its last one (tail) and whether it always executes a barrier.  In a
 * sequence a barrier goes before a statement whose head conflicts with what
 * is pending since the last barrier; in a loop whose body contains a barrier
 * a barrier is added at the end of the body when the next iteration's head
 * conflicts with this iteration's tail (e.g. the copies of the next k tile
 * overwrite what the compute just read).  A body without any barrier has no
 * conflicting pair at all (the sequence rule would have placed one), so it
 * needs none across iterations either.  Barriers are never put under a
 * condition or into a loop whose bounds depend on threadIdx (not every
 * thread would reach them); such statements count as one access set.
 * A cp_async counts as a write where it is issued (it must not overwrite
 * what others still read) and again, of every element of every cp_async
 * target, at each cp_async_wait (where the data lands: readers in other
 * threads need a barrier after the wait).
 */
#include <string.h>

#include "lower_internal.h"
#include "ir/text_internal.h"

typedef struct acc {
    const tir_buffer *buf;
    bool write;
    const tir_expr *idx;
} acc;

typedef struct summ {
    ir_vec head, tail; /* acc* */
    bool barrier;
} summ;

typedef struct ts {
    lower_state *st;
    ir_vec async_dsts;       /* shared buffers written by cp_async anywhere */
    const tir_var *tvars[8]; /* enclosing threadIdx loop vars */
    int ntvars;
    int nbarriers;
} ts;

static void add(ir_vec *v, const acc *a) {
    for (int i = 0; i < v->n; i++) {
        const acc *b = v->items[i];
        if (b->buf == a->buf && b->write == a->write && b->idx == a->idx) return;
    }
    ir_vec_push(v, a);
}

static void add_all(ir_vec *v, const ir_vec *w) {
    for (int i = 0; i < w->n; i++) add(v, w->items[i]);
}

static bool conflict(const ir_vec *x, const ir_vec *y) {
    for (int i = 0; i < x->n; i++)
        for (int j = 0; j < y->n; j++) {
            const acc *a = x->items[i], *b = y->items[j];
            if (a->buf != b->buf || a->write == b->write) continue;
            if (!a->idx || !b->idx || !ir_text_expr_same(a->idx, b->idx)) return true;
        }
    return false;
}

typedef struct coll {
    tir_ctx *ctx;
    ir_vec *out;
    const ir_vec *async_dsts;
} coll;

static void add_access(coll *c, const tir_buffer *b, bool write, const tir_expr *idx) {
    if (b->scope != TIR_SCOPE_SHARED) return;
    acc *a = IR_NEW(c->ctx, acc);
    *a = (acc){b, write, idx};
    add(c->out, a);
}

static bool coll_pre(tir_visitor *v, const tir_node *n) {
    coll *c = v->user;
    if (n->kind == TIR_KIND_BUFFER_LOAD) {
        const tir_buffer_load *l = (const tir_buffer_load *)n;
        add_access(c, l->buffer, false, l->indices[0]);
    } else if (n->kind == TIR_KIND_BUFFER_STORE) {
        const tir_buffer_store *s = (const tir_buffer_store *)n;
        add_access(c, s->buffer, true, s->indices[0]);
    } else if (n->kind == TIR_KIND_CALL) {
        const tir_call *call = (const tir_call *)n;
        if (call->op == TIR_INTRIN_CP_ASYNC_WAIT && c->async_dsts) {
            /* the copies land here: a write of every element of each target */
            for (int i = 0; i < c->async_dsts->n; i++)
                add_access(c, c->async_dsts->items[i], true, NULL);
            return false;
        }
        if (call->op == TIR_INTRIN_CP_ASYNC) {
            const tir_call *dst = tir_as_tir_call(call->args[0]);
            const tir_buffer_load *l = dst ? tir_as_tir_buffer_load(dst->args[0]) : NULL;
            TIR_ASSERT(l);
            add_access(c, l->buffer, true, l->indices[0]);
            tir_visit(v, call->args[1]);
            return false;
        }
    }
    return true;
}

/* Every shared access in s, as one set. */
static void leaf(ts *t, const tir_stmt *s, summ *r) {
    coll c = {t->st->ctx, &r->head, &t->async_dsts};
    tir_visitor v = {.pre = coll_pre, .user = &c};
    tir_visit(&v, s);
    add_all(&r->tail, &r->head);
    r->barrier = false;
}

static void summ_free(summ *r) {
    ir_vec_free(&r->head);
    ir_vec_free(&r->tail);
}

static bool is_sync(const tir_stmt *s) {
    const tir_evaluate *e = tir_as_tir_evaluate(s);
    const tir_call *c = e ? tir_as_tir_call(e->value) : NULL;
    return c && c->op == TIR_INTRIN_SYNCTHREADS;
}

static const tir_stmt *barrier(ts *t) {
    t->nbarriers++;
    return lower_intrin_stmt(t->st->ctx, TIR_INTRIN_SYNCTHREADS, 0, NULL);
}

static const tir_stmt *process(ts *t, const tir_stmt *s, summ *r);

/* The statements of a sequence (or one statement), barriers inserted. */
static const tir_stmt *process_seq(ts *t, int n, const tir_stmt *const *stmts, summ *r) {
    tir_ctx *ctx = t->st->ctx;
    ir_vec out = {0};
    ir_vec pending = {0};
    for (int i = 0; i < n; i++) {
        summ cr = {{0}, {0}, false};
        const tir_stmt *ns = process(t, stmts[i], &cr);
        if (conflict(&cr.head, &pending)) {
            ir_vec_push(&out, barrier(t));
            r->barrier = true;
            pending.n = 0;
        }
        if (!r->barrier) add_all(&r->head, &cr.head);
        if (cr.barrier) {
            r->barrier = true;
            pending.n = 0;
        }
        add_all(&pending, &cr.tail);
        ir_vec_push(&out, ns);
        summ_free(&cr);
    }
    add_all(&r->tail, &pending);
    const tir_stmt *res = tir_seq_new(ctx, out.n, (const tir_stmt *const *)out.items);
    ir_vec_free(&out);
    ir_vec_free(&pending);
    return res;
}

static const tir_stmt *process(ts *t, const tir_stmt *s, summ *r) {
    tir_ctx *ctx = t->st->ctx;
    switch ((tir_kind)s->kind) {
    case TIR_KIND_SEQ: {
        const tir_seq *q = (const tir_seq *)s;
        return process_seq(t, q->n, q->stmts, r);
    }
    case TIR_KIND_ALLOCATE: {
        const tir_allocate *a = (const tir_allocate *)s;
        const tir_stmt *b = process(t, a->body, r);
        return b == a->body ? s : lower_alloc_like(ctx, a, a->buffer, b);
    }
    case TIR_KIND_FOR: {
        const tir_for *f = (const tir_for *)s;
        if (f->kind == TIR_FOR_THREAD_BINDING) {
            bool th = lower_is_thread_loop(f);
            if (th) {
                TIR_ASSERT(t->ntvars < 8);
                t->tvars[t->ntvars++] = f->var;
            }
            const tir_stmt *b = process(t, f->body, r);
            if (th) t->ntvars--;
            return b == f->body ? s
                                : tir_for_new(ctx, f->var, f->min, f->extent, f->kind,
                                              f->thread_tag, f->nannots, f->annots, b);
        }
        if (lower_uses_any(f->min, t->ntvars, t->tvars) ||
            lower_uses_any(f->extent, t->ntvars, t->tvars)) {
            leaf(t, s, r);
            return s;
        }
        const tir_stmt *b = process(t, f->body, r);
        if (r->barrier && conflict(&r->head, &r->tail)) {
            b = lower_seq2(ctx, b, barrier(t));
            r->tail.n = 0;
        }
        return b == f->body ? s
                            : tir_for_new(ctx, f->var, f->min, f->extent, f->kind, f->thread_tag,
                                          f->nannots, f->annots, b);
    }
    case TIR_KIND_IF: {
        const tir_if *i = (const tir_if *)s;
        if (lower_uses_any(i->cond, t->ntvars, t->tvars)) {
            leaf(t, s, r);
            return s;
        }
        summ a = {{0}, {0}, false}, b = {{0}, {0}, false};
        const tir_stmt *ts_ = process(t, i->then_s, &a);
        const tir_stmt *es = i->else_s ? process(t, i->else_s, &b) : NULL;
        r->barrier = a.barrier && b.barrier;
        add_all(&r->head, &a.head);
        add_all(&r->head, &b.head);
        add_all(&r->tail, &a.tail);
        add_all(&r->tail, &b.tail);
        if (!r->barrier) {
            add_all(&r->tail, &a.head);
            add_all(&r->tail, &b.head);
        }
        summ_free(&a);
        summ_free(&b);
        if (ts_ == i->then_s && es == i->else_s) return s;
        return tir_if_new(ctx, i->cond, ts_, es);
    }
    default:
        if (is_sync(s)) {
            r->barrier = true;
            return s;
        }
        leaf(t, s, r);
        return s;
    }
}

static bool dst_pre(tir_visitor *v, const tir_node *n) {
    ts *t = v->user;
    const tir_call *c = tir_as_tir_call(n);
    if (c && c->op == TIR_INTRIN_CP_ASYNC) {
        const tir_call *d = tir_as_tir_call(c->args[0]);
        const tir_buffer_load *l = d ? tir_as_tir_buffer_load(d->args[0]) : NULL;
        TIR_ASSERT(l);
        for (int i = 0; i < t->async_dsts.n; i++)
            if (t->async_dsts.items[i] == l->buffer) return true;
        ir_vec_push(&t->async_dsts, l->buffer);
    }
    return true;
}

tir_status lower_thread_sync(lower_state *st, const tir_prim_func *in, const tir_prim_func **out) {
    ts t = {.st = st};
    tir_visitor dv = {.pre = dst_pre, .user = &t};
    tir_visit(&dv, in->body);
    summ r = {{0}, {0}, false};
    const tir_stmt *body = process(&t, in->body, &r);
    summ_free(&r);
    ir_vec_free(&t.async_dsts);
    *out = lower_with_body(st->ctx, in, body);
    return TIR_OK;
}
