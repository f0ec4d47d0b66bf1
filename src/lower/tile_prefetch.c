/* tile_prefetch.c: loads the first fragments of a pipeline's next k tile
 * before the last mma of the current one, as CUTLASS's mainloop does
 * ("warp-level fragment prefetch across the k tile boundary").  After
 * sw_pipeline, unroll and interleave a tensor-core main loop is a sequence
 * of time steps, each
 *     cp_async_wait(n)  X  where X = Allocate(fragments){ loads, mma, ... }
 * so every warp leaves the k tile's barrier (thread_sync puts it after the
 * wait) with nothing to do but load fragments: the tensor pipe idles while
 * the first ldmatrix of the tile are in flight (ncu, run 39: 4.7% of the
 * stall samples at the barrier, short-scoreboard waits on the first mma).
 *
 * In a statement sequence  X  cp_async_wait(n)  Y  where X and Y are the
 * same Allocates (the unrolled copies of one time step) around statement
 * sequences that call mma_sync, the rewrite is one Allocate around
 *     X's statements but its tail S, cp_async_wait(n - c), P, S,
 *     Y's statements but P
 * where P is the leading fragment loads of Y, the first for each buffer
 * they write (the operands of Y's first mma), and S the longest tail of X
 * that P may pass: no barrier, wait, atomic or memory read (only register
 * work, cp_async copies and commits, c of them, none in a loop, so that c
 * counts every commit that runs), no local element that P writes read or
 * written, and at least one mma.  thread_sync then puts the tile's
 * barrier after the moved wait, so the mma of S run while P's loads are
 * in flight.  The same rewrite applies to the result and the
 * next wait and time step, so an unrolled main loop becomes one Allocate,
 * and then across the loop's back edge (rotate: the first time step's P
 * once before the loop, the next iteration's P before the last S; P must
 * not use the loop's variable, since the last iteration runs it for an
 * iteration that does not exist).
 *
 * Measured (H200, run 41, tirc bench, A/B in one run, 4096^3): bf16 448
 * -> 456 TFLOP/s, f16 439 -> 450, tf32 187 -> 199; without the rotation
 * 452, 444, 189.
 *
 * Why it is allowed: S's mma and address arithmetic touch registers only,
 * and none that P writes.  S's copies are younger than every group the
 * wait covers: with c <= n, the original wait(n) after S left S's groups
 * possibly in flight, so P, which the pipeline runs after that wait, never
 * reads what they write; wait(n - c) before S's c commits covers exactly
 * the groups wait(n) covered.  Merging the two Allocates only widens the
 * lifetime of registers Y writes before it reads them.  race_check checks
 * the barriers thread_sync places for the new order; so that it can, the
 * shared indices of P and of S's copies must not use the variable of a
 * serial loop around them (constant versions, as an unrolled pipeline has).
 * Only in pipelines of three or more stages (a wait of a count of at least
 * 1 in the sequence, the drain's last waits after it): with two the wait
 * needs the copies of the time step itself, and waiting before S would
 * leave less compute to hide them.  tir_lower_opts.no_tile_prefetch turns
 * it off.
 */
#include <stdlib.h>

#include "lower_internal.h"

enum { TP_MAX_FOOT = 256, TP_MAX_ALLOCS = 8 };

/* A local buffer's elements [lo, hi) read or written. */
typedef struct foot {
    const tir_buffer *buf;
    int64_t lo, hi;
    bool write;
} foot;

enum { TP_MAX_LOOPS = 32 };

/* The serial loops around the statements looked at. */
typedef struct loops {
    const tir_var *v[TP_MAX_LOOPS];
    int n;
} loops;

/* What a statement does, as far as the rewrite cares. */
typedef struct facts {
    tir_analyzer *an;
    const loops *outer;
    foot f[TP_MAX_FOOT];
    int nf;
    bool overflow;
    bool mma, mem_read, barrier, other_store, copy;
    bool outer_shared; /* a shared index uses an outer serial loop's variable */
    int commits;
    int loops; /* loops of the statement around the node visited */
} facts;

/* race_check proves a moved load and a passed copy apart by their shared
 * index ranges: with a version index such as k % 4 of the loop around
 * them the ranges meet (it refused a 4-stage tf32 pipeline of two
 * iterations, not unrolled, in the fuzzer), so the rewrite wants indices
 * free of the outer serial loops' variables (constant versions). */
static void shared_index(facts *x, const tir_buffer_load *l) {
    if (l && l->buffer->scope == TIR_SCOPE_SHARED &&
        lower_uses_any(l, x->outer->n, x->outer->v))
        x->outer_shared = true;
}

static void add_foot(facts *x, const tir_buffer *b, const tir_expr *index, int64_t len,
                     bool write) {
    if (x->nf == TP_MAX_FOOT) {
        x->overflow = true;
        return;
    }
    tir_int_bound r = tir_analyzer_const_bound(x->an, index);
    foot *f = &x->f[x->nf++];
    f->buf = b, f->write = write;
    if (r.min == INT64_MIN || r.max == INT64_MAX) f->lo = INT64_MIN, f->hi = INT64_MAX;
    else f->lo = r.min, f->hi = r.max + len;
}

/* The local element range at address_of argument i of call, len elements
 * from it, or memory access facts when the buffer is not local. */
static void add_operand(facts *x, const tir_call *call, int i, int64_t len, bool write) {
    const tir_buffer_load *l = lower_addressed(call, i);
    if (!l || l->nidx != 1) {
        x->overflow = true;
        return;
    }
    if (l->buffer->scope != TIR_SCOPE_LOCAL) {
        if (!write) x->mem_read = true;
        else x->other_store = true;
        shared_index(x, l);
        return;
    }
    add_foot(x, l->buffer, l->indices[0], len, write);
}

static int64_t per_reg(const tir_call *call, int i) {
    const tir_buffer_load *l = lower_addressed(call, i);
    return l && l->buffer->dtype.bits == 16 ? 2 : 1;
}

/* The footprint of one lowered tensor-core call (intrinsics.def):
 * mma_sync(d, a, b) reads 4 registers of a, 2 of b and reads and writes
 * 4 floats of d; ldmatrix(trans, num, dst, src) writes num registers.
 * False: the caller visits the rest of the call (call_operands). */
static bool on_call(facts *x, const tir_call *c) {
    switch (c->op) {
    case TIR_INTRIN_MMA_SYNC:
        x->mma = true;
        add_operand(x, c, 0, 4, false);
        add_operand(x, c, 0, 4, true);
        add_operand(x, c, 1, 4 * per_reg(c, 1), false);
        add_operand(x, c, 2, 2 * per_reg(c, 2), false);
        return false;
    case TIR_INTRIN_WGMMA_SYNC: /* warpgroup-wide, reads shared memory: never moved */
        x->overflow = true;
        return false;
    case TIR_INTRIN_LDMATRIX: {
        int64_t num = 0;
        if (!tir_expr_const_int(c->args[1], &num)) x->overflow = true;
        add_operand(x, c, 2, num * per_reg(c, 2), true);
        shared_index(x, lower_addressed(c, 3));
        x->mem_read = true;
        return false;
    }
    case TIR_INTRIN_CP_ASYNC:
        x->copy = true;
        shared_index(x, lower_addressed(c, 0));
        return false;
    case TIR_INTRIN_CP_ASYNC_COMMIT:
        /* c must not undercount: a commit in a loop runs any number of
           times (one under an if that does not run only makes the moved
           wait wait for more) */
        if (x->loops) x->overflow = true;
        else x->commits++;
        return false;
    case TIR_INTRIN_SYNCTHREADS:
    case TIR_INTRIN_CP_ASYNC_WAIT:
    case TIR_INTRIN_ATOMIC_ADD: x->barrier = true; return false;
    case TIR_INTRIN_ADDRESS_OF: x->overflow = true; return false; /* an unknown user */
    default: return true;
    }
}

static const tir_expr *first_index(const tir_expr *const *idx, int n, int64_t *lanes) {
    *lanes = 1;
    if (n != 1) return NULL;
    const tir_ramp *r = tir_as_tir_ramp(idx[0]);
    int64_t stride;
    if (!r) return idx[0];
    if (!tir_expr_const_int(r->stride, &stride) || stride != 1) return NULL;
    *lanes = r->lanes;
    return r->start;
}

/* The rest of a call on_call knows: the indices under its address_of
 * operands and its other arguments (cp_async's byte counts), whose
 * accesses count as well. */
static void call_operands(tir_visitor *v, const tir_call *c) {
    for (int i = 0; i < c->nargs; i++) {
        const tir_buffer_load *l = lower_addressed(c, i);
        if (!l) tir_visit(v, c->args[i]);
        for (int d = 0; l && d < l->nidx; d++) tir_visit(v, l->indices[d]);
    }
}

static bool f_pre(tir_visitor *v, const tir_node *n) {
    facts *x = v->user;
    int64_t lanes;
    switch ((tir_kind)n->kind) {
    case TIR_KIND_FOR: {
        const tir_for *f = (const tir_for *)n;
        tir_analyzer_bind(x->an, f->var, f->min, f->extent);
        x->loops++;
        return true;
    }
    case TIR_KIND_CALL:
        if (on_call(x, (const tir_call *)n)) return true;
        call_operands(v, (const tir_call *)n);
        return false;
    case TIR_KIND_BUFFER_LOAD: {
        const tir_buffer_load *l = (const tir_buffer_load *)n;
        if (l->buffer->scope != TIR_SCOPE_LOCAL) {
            x->mem_read = true;
            shared_index(x, l);
            return true;
        }
        const tir_expr *i = first_index(l->indices, l->nidx, &lanes);
        if (!i) x->overflow = true;
        else add_foot(x, l->buffer, i, lanes, false);
        return true;
    }
    case TIR_KIND_BUFFER_STORE: {
        const tir_buffer_store *s = (const tir_buffer_store *)n;
        if (s->buffer->scope != TIR_SCOPE_LOCAL) {
            x->other_store = true;
            return true;
        }
        const tir_expr *i = first_index(s->indices, s->nidx, &lanes);
        if (!i) x->overflow = true;
        else add_foot(x, s->buffer, i, lanes, true);
        return true;
    }
    default: return true;
    }
}

static void f_post(tir_visitor *v, const tir_node *n) {
    facts *x = v->user;
    if (n->kind != TIR_KIND_FOR) return;
    tir_analyzer_unbind(x->an, ((const tir_for *)n)->var);
    x->loops--;
}

static facts *facts_of(tir_analyzer *an, const loops *outer, const tir_stmt *s) {
    facts *x = ir_xcalloc(1, sizeof *x);
    x->an = an, x->outer = outer;
    tir_visitor v = {.pre = f_pre, .post = f_post, .user = x};
    tir_visit(&v, s);
    return x;
}

/* A fragment load: reads memory, writes local registers only. */
static bool is_load(const facts *x) {
    bool writes = false;
    for (int i = 0; i < x->nf; i++) writes |= x->f[i].write;
    return writes && x->mem_read && !x->overflow && !x->mma && !x->barrier && !x->other_store &&
           !x->copy && !x->commits && !x->outer_shared;
}

/* May P pass the statement with facts s: register work, copies, commits. */
static bool passable(const facts *s) {
    return !s->overflow && !s->mem_read && !s->barrier && !s->other_store && !s->outer_shared;
}

static bool writes_buffer(const facts *x, const tir_buffer *b) {
    for (int i = 0; i < x->nf; i++)
        if (x->f[i].write && x->f[i].buf == b) return true;
    return false;
}

/* Some element of a written in one and touched in the other. */
static bool conflict(const facts *a, const facts *b) {
    for (int i = 0; i < a->nf; i++)
        for (int j = 0; j < b->nf; j++) {
            const foot *p = &a->f[i], *q = &b->f[j];
            if (p->buf == q->buf && (p->write || q->write) && p->lo < q->hi && q->lo < p->hi)
                return true;
        }
    return false;
}

/* s's Allocates (outermost first) and its statement sequence. */
static bool unwrap(const tir_stmt *s, const tir_allocate **allocs, int *na, const tir_seq **q) {
    *na = 0;
    while (s->kind == TIR_KIND_ALLOCATE) {
        if (*na == TP_MAX_ALLOCS) return false;
        allocs[(*na)++] = (const tir_allocate *)s;
        s = ((const tir_allocate *)s)->body;
    }
    *q = tir_as_tir_seq(s);
    return *q != NULL && *na > 0;
}

static bool same_allocs(const tir_allocate *const *a, int na, const tir_allocate *const *b,
                        int nb) {
    if (na != nb) return false;
    for (int i = 0; i < na; i++)
        if (a[i]->buffer != b[i]->buffer) return false;
    return true;
}

typedef struct step {
    const tir_allocate *allocs[TP_MAX_ALLOCS];
    int na;
    const tir_seq *q;
} step;

/* Where the rewrite of x, wait(n), y cuts: y's statements [0, np) are P,
 * x's statements [s0, end) are S with `commits` commits.  False when
 * nothing qualifies. */
typedef struct cut {
    step a, b;
    int np, s0, commits;
} cut;

static bool find_cut(tir_analyzer *an, const loops *outer, const tir_stmt *x, int64_t n,
                     const tir_stmt *y, cut *c) {
    if (!unwrap(x, c->a.allocs, &c->a.na, &c->a.q) || !unwrap(y, c->b.allocs, &c->b.na, &c->b.q) ||
        !same_allocs(c->a.allocs, c->a.na, c->b.allocs, c->b.na))
        return false;
    /* P: the leading loads of y, the first for each buffer they write. */
    facts *p = ir_xcalloc(1, sizeof *p);
    p->an = an;
    int np = 0;
    for (; np < c->b.q->n; np++) {
        facts *l = facts_of(an, outer, c->b.q->stmts[np]);
        bool take = is_load(l) && p->nf + l->nf <= TP_MAX_FOOT;
        for (int i = 0; take && i < l->nf; i++)
            if (l->f[i].write && writes_buffer(p, l->f[i].buf)) take = false;
        for (int i = 0; take && i < l->nf; i++) p->f[p->nf++] = l->f[i];
        free(l);
        if (!take) break;
    }
    /* S: the tail of x that P may pass. */
    int s0 = c->a.q->n, commits = 0;
    bool mma = false;
    while (np > 0 && s0 > 0) {
        facts *s = facts_of(an, outer, c->a.q->stmts[s0 - 1]);
        bool ok = passable(s) && !conflict(p, s) && commits + s->commits <= n;
        if (ok) commits += s->commits, mma |= s->mma, s0--;
        free(s);
        if (!ok) break;
    }
    free(p);
    c->np = np, c->s0 = s0, c->commits = commits;
    return np > 0 && mma;
}

/* The wait that goes before S. */
static const tir_stmt *moved_wait(tir_ctx *ctx, const cut *c, int64_t n, const tir_stmt *wait) {
    const tir_expr *cnt = tir_int(ctx, TIR_I32, n - c->commits);
    return c->commits ? lower_intrin_stmt(ctx, TIR_INTRIN_CP_ASYNC_WAIT, 1, &cnt) : wait;
}

static const tir_stmt *wrap(tir_ctx *ctx, const step *a, const tir_stmt *body) {
    for (int i = a->na - 1; i >= 0; i--)
        body = lower_alloc_like(ctx, a->allocs[i], a->allocs[i]->buffer, body);
    return body;
}

/* The rewrite of x, wait(n), y into one statement, or NULL. */
static const tir_stmt *prefetch(tir_ctx *ctx, tir_analyzer *an, const loops *outer,
                                const tir_stmt *x, int64_t n, const tir_stmt *wait,
                                const tir_stmt *y) {
    cut c;
    if (!find_cut(an, outer, x, n, y, &c)) return NULL;
    const tir_seq *qa = c.a.q, *qb = c.b.q;
    int k = 0;
    const tir_stmt **out = IR_NEWN(ctx, const tir_stmt *, qa->n + 1 + qb->n);
    for (int i = 0; i < c.s0; i++) out[k++] = qa->stmts[i];
    out[k++] = moved_wait(ctx, &c, n, wait);
    for (int i = 0; i < c.np; i++) out[k++] = qb->stmts[i];
    for (int i = c.s0; i < qa->n; i++) out[k++] = qa->stmts[i];
    for (int i = c.np; i < qb->n; i++) out[k++] = qb->stmts[i];
    return wrap(ctx, &c.a, tir_seq_new(ctx, k, out));
}

/* The same across a loop's back edge: a serial loop of constant extent
 * >= 1 whose body is wait(n), x, with x's next iteration as y, becomes
 *     Allocates{ wait(n), P[v := min],
 *                for v: { x's statements but P and S, wait(n - c),
 *                         P[v := v + 1], S } }
 * (the loop rotated).  P must not use v: the last iteration runs it for
 * an iteration that does not exist, and then loads what every iteration
 * loads, into registers the Allocate drops. */
static const tir_stmt *rotate(tir_ctx *ctx, tir_analyzer *an, const loops *outer,
                             const tir_for *f) {
    int64_t ext, n;
    const tir_seq *q = tir_as_tir_seq(f->body);
    if (f->kind != TIR_FOR_SERIAL || !tir_expr_const_int(f->extent, &ext) || ext < 1 || !q ||
        q->n != 2 || !lower_is_intrin_stmt(q->stmts[0], TIR_INTRIN_CP_ASYNC_WAIT) ||
        !tir_expr_const_int(((const tir_call *)((const tir_evaluate *)q->stmts[0])->value)->args[0],
                            &n) ||
        n < 1)
        return NULL;
    const tir_expr *next = tir_add(ctx, (const tir_expr *)f->var, tir_int(ctx, f->var->base.dtype, 1));
    const tir_stmt *x = q->stmts[1];
    const tir_stmt *y = (const tir_stmt *)tir_substitute(ctx, x, 1, &f->var, &next);
    cut c;
    if (!find_cut(an, outer, x, n, y, &c) || c.s0 < c.np) return NULL;
    const tir_seq *qa = c.a.q, *qb = c.b.q;
    /* the last iteration runs P for an iteration that does not exist: with
       an index of v it could read past its buffer (a shared one of v is
       refused already, a global one is not) */
    for (int i = 0; i < c.np; i++)
        if (lower_uses_any(qa->stmts[i], 1, &f->var)) return NULL;
    int k = 0;
    const tir_stmt **body = IR_NEWN(ctx, const tir_stmt *, qa->n + 1);
    for (int i = c.np; i < c.s0; i++) body[k++] = qa->stmts[i];
    body[k++] = moved_wait(ctx, &c, n, q->stmts[0]);
    for (int i = 0; i < c.np; i++) body[k++] = qb->stmts[i];
    for (int i = c.s0; i < qa->n; i++) body[k++] = qa->stmts[i];
    const tir_stmt *loop = tir_for_new(ctx, f->var, f->min, f->extent, f->kind, f->thread_tag,
                                       f->nannots, f->annots, tir_seq_new(ctx, k, body));
    const tir_stmt **pre = IR_NEWN(ctx, const tir_stmt *, c.np + 2);
    pre[0] = q->stmts[0];
    for (int i = 0; i < c.np; i++)
        pre[i + 1] = (const tir_stmt *)tir_substitute(ctx, qa->stmts[i], 1, &f->var, &f->min);
    pre[c.np + 1] = loop;
    return wrap(ctx, &c.a, tir_seq_new(ctx, c.np + 2, pre));
}

typedef struct tp_mutator {
    tir_mutator m;
    tir_analyzer *an;
    loops outer;
} tp_mutator;

static const tir_node *on_seq(tir_mutator *m, const tir_node *n) {
    tp_mutator *t = (tp_mutator *)m;
    const tir_seq *q = (const tir_seq *)tir_mutate_default(m, n);
    const tir_stmt **out = IR_NEWN(m->ctx, const tir_stmt *, q->n);
    int k = 0;
    bool changed = false, deep = false;
    for (int i = 0; i < q->n; i++) {
        int64_t cnt;
        const tir_stmt *w = q->stmts[i];
        if (lower_is_intrin_stmt(w, TIR_INTRIN_CP_ASYNC_WAIT) &&
            tir_expr_const_int(((const tir_call *)((const tir_evaluate *)w)->value)->args[0], &cnt)) {
            deep |= cnt >= 1;
        } else {
            cnt = -1;
        }
        if (deep && cnt >= 0 && k > 0 && i + 1 < q->n) {
            const tir_stmt *r = prefetch(m->ctx, t->an, &t->outer, out[k - 1], cnt, w, q->stmts[i + 1]);
            if (r) {
                out[k - 1] = r;
                i++;
                changed = true;
                continue;
            }
        }
        out[k++] = w;
    }
    if (!changed) return (const tir_node *)q;
    return (const tir_node *)(k == 1 ? out[0] : tir_seq_new(m->ctx, k, out));
}

static const tir_node *on_for(tir_mutator *m, const tir_node *n) {
    tp_mutator *t = (tp_mutator *)m;
    const tir_for *f = (const tir_for *)n;
    if (f->kind == TIR_FOR_THREAD_BINDING) return tir_mutate_default(m, n);
    if (t->outer.n == TP_MAX_LOOPS) return n; /* deeper: left as it is */
    t->outer.v[t->outer.n++] = f->var;
    f = (const tir_for *)tir_mutate_default(m, n);
    const tir_stmt *r = rotate(m->ctx, t->an, &t->outer, f);
    t->outer.n--;
    return r ? (const tir_node *)r : (const tir_node *)f;
}

tir_status lower_tile_prefetch(lower_state *st, const tir_prim_func *in, const tir_prim_func **out) {
    if (st->opts.no_tile_prefetch) {
        *out = in;
        return TIR_OK;
    }
    tp_mutator t = {.m = {.ctx = st->ctx}, .an = tir_analyzer_create(st->ctx)};
    t.m.on[TIR_KIND_SEQ] = on_seq;
    t.m.on[TIR_KIND_FOR] = on_for;
    *out = lower_with_body(st->ctx, in, tir_mutate_stmt(&t.m, in->body));
    tir_analyzer_destroy(t.an);
    return TIR_OK;
}
