/* interleave.c: spreads the asynchronous copies of a software pipeline's
 * time step over the tensor-core compute of the same time step, as
 * CUTLASS's mainloop issues the next stage's global->shared copies between
 * its warp-level mma.  sw_pipeline emits a time step as the copies of the
 * async stage, their cp_async_commit, then the compute of a later stage.
 * All warps of a block leave the k tile's barrier together, so with the
 * copies first every warp queues its copies at the same moment (ncu, run
 * 35: lg_throttle 1.7 and barrier 0.6 of 12.3 stall cycles per
 * instruction) while the tensor pipe idles.
 *
 * In a statement sequence, a run of copy statements (every leaf a
 * cp_async), the cp_async_commit right after them and the statement X
 * right after that, when X (Allocates looked through) is a sequence that
 * calls mma_sync: the copies become pieces (an unrolled loop of constant
 * extent one per iteration, its variable substituted), X's statements
 * slots (an unrolled loop that calls mma_sync one per iteration, as
 * well), and piece j goes after the mma slot number (j + 1) q / (n + 1)
 * of the q mma slots, the commit after the last piece.  Copies under a
 * condition stay before X (has_if).  Only where the
 * time step's wait (the last cp_async_wait before the copies in the
 * sequence) lets a group stay in flight (a count of at least 1, three or
 * more stages): with two stages the next wait needs these very copies, and
 * issuing them later made tf32 at 128x256x32 16% slower (run 36).
 *
 * Why it is allowed: the copies are asynchronous, so no thread may read
 * what they write before a later cp_async_wait and barrier; X must have
 * neither (nor a commit, a barrier, a cp_async, an atomic, or a store to a
 * buffer that is not local), so moving a copy past part of X moves no
 * ordering a correct program relies on.  sw_pipeline's versions keep the
 * compute of a time step off the version its copies write (a one-version
 * buffer puts the copies after the compute, or a wait between, and does
 * not match).  thread_sync, which runs next, places the barriers for the
 * new order and race_check checks them.  tir_lower_opts.no_copy_interleave
 * turns it off.
 */
#include <assert.h>
#include <stdlib.h>

#include "lower_internal.h"

enum { IL_MAX = 512 };

/* Every leaf of s is a cp_async (loops, conditions and sequences of
 * them). */
static bool only_copies(const tir_stmt *s) {
    if (!s) return true;
    switch ((tir_kind)s->kind) {
    case TIR_KIND_EVALUATE: return lower_is_intrin_stmt(s, TIR_INTRIN_CP_ASYNC);
    case TIR_KIND_FOR: return only_copies(((const tir_for *)s)->body);
    case TIR_KIND_IF: {
        const tir_if *i = (const tir_if *)s;
        return only_copies(i->then_s) && only_copies(i->else_s);
    }
    case TIR_KIND_SEQ: {
        const tir_seq *q = (const tir_seq *)s;
        for (int i = 0; i < q->n; i++)
            if (!only_copies(q->stmts[i])) return false;
        return true;
    }
    default: return false;
    }
}

/* A copy under a condition (a kept bounds guard, a guarded pipeline
 * tail): thread_sync relaxes its index without the guard, so next to the
 * compute's reads it can look like a conflict and cost a barrier per
 * piece (tf32 at M < BM: 14 barriers per steady iteration instead of 11;
 * review of run 36's pass). */
static bool has_if(const tir_stmt *s) {
    return lower_has_kind(s, TIR_KIND_IF);
}

typedef struct xscan {
    bool mma, bad;
} xscan;

static bool x_pre(tir_visitor *v, const tir_node *n) {
    xscan *x = v->user;
    if (n->kind == TIR_KIND_CALL) {
        tir_intrin op = ((const tir_call *)n)->op;
        if (op == TIR_INTRIN_MMA_SYNC) x->mma = true;
        if (op == TIR_INTRIN_SYNCTHREADS || op == TIR_INTRIN_CP_ASYNC ||
            op == TIR_INTRIN_CP_ASYNC_COMMIT || op == TIR_INTRIN_CP_ASYNC_WAIT ||
            op == TIR_INTRIN_ATOMIC_ADD)
            x->bad = true;
    } else if (n->kind == TIR_KIND_BUFFER_STORE) {
        if (((const tir_buffer_store *)n)->buffer->scope != TIR_SCOPE_LOCAL) x->bad = true;
    }
    return !x->bad;
}

static xscan scan(const void *node) {
    xscan x = {0};
    tir_visitor v = {.pre = x_pre, .user = &x};
    tir_visit(&v, node);
    return x;
}

/* The iterations of an unrolled loop of constant extent (at most cap), its
 * variable substituted; 0 when s is not one. */
static int unrolled(tir_ctx *ctx, const tir_stmt *s, const tir_stmt **out, int cap) {
    if (s->kind != TIR_KIND_FOR) return 0;
    const tir_for *f = (const tir_for *)s;
    int64_t min, ext;
    if (f->kind != TIR_FOR_UNROLLED || !tir_expr_const_int(f->min, &min) ||
        !tir_expr_const_int(f->extent, &ext) || ext < 1 || ext > cap)
        return 0;
    for (int64_t i = 0; i < ext; i++) {
        const tir_expr *val = tir_int(ctx, f->var->base.dtype, min + i);
        out[i] = (const tir_stmt *)tir_substitute(ctx, f->body, 1, &f->var, &val);
    }
    return (int)ext;
}

/* X's statement list (its Allocates looked through) in *q, the Allocates
 * outermost first in allocs; false when X is not such a sequence. */
static bool x_seq(const tir_stmt *x, const tir_seq **q, const tir_allocate **allocs, int *na) {
    *na = 0;
    while (x->kind == TIR_KIND_ALLOCATE && *na < 8) {
        allocs[(*na)++] = (const tir_allocate *)x;
        x = ((const tir_allocate *)x)->body;
    }
    if (x->kind != TIR_KIND_SEQ) return false;
    *q = (const tir_seq *)x;
    return true;
}

typedef struct slots {
    const tir_stmt *s[IL_MAX];
    bool mma[IL_MAX];
    int n, nmma;
} slots;

static bool add_slot(slots *sl, const tir_stmt *s, bool mma) {
    if (sl->n == IL_MAX) return false;
    sl->s[sl->n] = s;
    sl->mma[sl->n++] = mma;
    sl->nmma += mma;
    return true;
}

/* X's statements as slots, an unrolled loop calling mma_sync split into its
 * iterations. */
static bool make_slots(tir_ctx *ctx, const tir_seq *q, slots *sl) {
    const tir_stmt *it[64];
    for (int i = 0; i < q->n; i++) {
        bool mma = scan(q->stmts[i]).mma;
        int k = mma ? unrolled(ctx, q->stmts[i], it, 64) : 0;
        for (int j = 0; j < k; j++)
            if (!add_slot(sl, it[j], true)) return false;
        if (!k && !add_slot(sl, q->stmts[i], mma)) return false;
    }
    return sl->nmma >= 2;
}

/* X rebuilt with the pieces and the commit spread over its mma slots. */
static const tir_stmt *merge(tir_ctx *ctx, const slots *sl, const tir_stmt *const *pc, int np,
                             const tir_stmt *commit, const tir_allocate *const *allocs, int na) {
    const tir_stmt **out = IR_NEWN(ctx, const tir_stmt *, sl->n + np + 1);
    int n = 0, m = 0, j = 0;
    for (int i = 0; i < sl->n; i++) {
        out[n++] = sl->s[i];
        if (!sl->mma[i]) continue;
        for (; j < np && (int64_t)(j + 1) * sl->nmma / (np + 1) == m; j++) out[n++] = pc[j];
        if (j == np && commit) out[n++] = commit, commit = NULL;
        m++;
    }
    assert(j == np && !commit);
    const tir_stmt *body = tir_seq_new(ctx, n, out);
    for (int a = na - 1; a >= 0; a--) body = lower_alloc_like(ctx, allocs[a], allocs[a]->buffer, body);
    return body;
}

/* Rewrites copies stmts[c0, c1), commit stmts[c1], X stmts[c1 + 1] into one
 * statement, or returns NULL when they do not qualify. */
static const tir_stmt *interleave(tir_ctx *ctx, const tir_stmt *const *stmts, int c0, int c1) {
    const tir_stmt *x = stmts[c1 + 1];
    const tir_seq *q;
    const tir_allocate *allocs[8];
    int na;
    xscan xs = scan(x);
    if (!xs.mma || xs.bad || !x_seq(x, &q, allocs, &na)) return NULL;
    slots *sl = calloc(1, sizeof *sl);
    const tir_stmt *r = NULL, **pc = calloc(IL_MAX, sizeof *pc);
    int np = 0;
    const tir_stmt **pre = calloc((size_t)(c1 - c0 + 1), sizeof *pre);
    int npre = 0;
    if (!make_slots(ctx, q, sl)) goto done;
    for (int i = c0; i < c1; i++) {
        if (has_if(stmts[i])) { /* stays before X */
            pre[npre++] = stmts[i];
            continue;
        }
        if (np + 64 > IL_MAX) goto done;
        int k = unrolled(ctx, stmts[i], pc + np, 64);
        np += k ? k : (pc[np] = stmts[i], 1);
    }
    if (np == 0) goto done;
    pre[npre++] = merge(ctx, sl, pc, np, stmts[c1], allocs, na);
    r = npre == 1 ? pre[0] : tir_seq_new(ctx, npre, pre);
done:
    free(pre);
    free(sl);
    free(pc);
    return r;
}

/* *count = n when s is cp_async_wait(n) with a constant n. */
static void wait_count(const tir_stmt *s, int64_t *count) {
    if (lower_is_intrin_stmt(s, TIR_INTRIN_CP_ASYNC_WAIT))
        tir_expr_const_int(((const tir_call *)((const tir_evaluate *)s)->value)->args[0], count);
}

static const tir_node *on_seq(tir_mutator *m, const tir_node *n) {
    const tir_seq *q = (const tir_seq *)tir_mutate_default(m, n);
    const tir_stmt **out = IR_NEWN(m->ctx, const tir_stmt *, q->n);
    int k = 0;
    bool changed = false;
    int64_t waited = -1; /* the last cp_async_wait's count before stmts[i] */
    for (int i = 0; i < q->n;) {
        int c1 = i;
        while (c1 < q->n && only_copies(q->stmts[c1]) && q->stmts[c1]->kind != TIR_KIND_SEQ) c1++;
        const tir_stmt *r = NULL;
        if (c1 > i && c1 + 1 < q->n && waited >= 1 &&
            lower_is_intrin_stmt(q->stmts[c1], TIR_INTRIN_CP_ASYNC_COMMIT))
            r = interleave(m->ctx, q->stmts, i, c1);
        if (r) {
            out[k++] = r;
            i = c1 + 2;
            changed = true;
        } else { /* stmts[c1] may be the wait that ends a run of copies */
            for (int j = i; j <= c1 && j < q->n; j++) {
                out[k++] = q->stmts[j];
                wait_count(q->stmts[j], &waited);
            }
            i = c1 + 1;
        }
    }
    return changed ? (const tir_node *)tir_seq_new(m->ctx, k, out) : (const tir_node *)q;
}

tir_status lower_interleave(lower_state *st, const tir_prim_func *in, const tir_prim_func **out) {
    if (st->opts.no_copy_interleave) {
        *out = in;
        return TIR_OK;
    }
    tir_mutator m = {.ctx = st->ctx};
    m.on[TIR_KIND_SEQ] = on_seq;
    *out = lower_with_body(st->ctx, in, tir_mutate_stmt(&m, in->body));
    return TIR_OK;
}
