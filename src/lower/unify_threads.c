/* unify_threads.c: every loop bound to one thread tag denotes the same
 * hardware index, so the kernel gets one variable per tag (TVM:
 * UnifyThreadBinding).  A thread-binding loop nested inside a loop of the
 * same tag (the usual cooperative-fetch pattern: a cache block moved under
 * the compute's threadIdx loops, its own fused loop bound to threadIdx
 * again) disappears, its variable replaced by the outer loop's.  Sibling
 * loops of one tag (the loop nests of several stages, one after the other)
 * stay, but all take the variable of the first loop of that tag: then an
 * index of a local or shared buffer names the same thread in every stage,
 * which compact_alloc (regions united across stages) and local_check (the
 * thread that reads a local element is the one that wrote it) rely on.
 * gpu_check already made sure that the extents agree.  A removed loop
 * inside a local buffer's Allocate is recorded (lower_state.lost_buf):
 * local_check must not take that buffer as one copy per thread.  A nested
 * loop whose body reads the outer variable is refused: after the merge it
 * would run only the iterations where the two are equal.
 */
#include <string.h>

#include "lower_internal.h"

enum { MAXTAGS = 8, MAXALLOC = 32, MAXLOST = 64 };

typedef struct ut {
    const tir_for *first[MAXTAGS]; /* first loop of each tag, in pre-order */
    bool active[MAXTAGS];          /* inside a loop of that tag */
    int n;
    /* local Allocates around the walk, and lower_state's lost pairs */
    const tir_buffer *allocs[MAXALLOC];
    int nalloc;
    const tir_buffer *lost_buf[MAXLOST];
    const tir_var *lost_var[MAXLOST];
    int nlost;
    bool lost_all;
    /* the first nested loop whose body reads the outer loop's variable */
    const tir_for *bad_nest;
    const tir_var *bad_outer;
} ut;

/* A nested loop of var's tag goes: every local buffer allocated around it
 * loses its "one copy per thread" meaning along var (lower_state.lost_buf) */
static void lose(ut *u, const tir_var *var) {
    for (int i = 0; i < u->nalloc; i++) {
        if (u->nlost == MAXLOST) {
            u->lost_all = true;
            return;
        }
        u->lost_buf[u->nlost] = u->allocs[i];
        u->lost_var[u->nlost++] = var;
    }
}

static const tir_node *on_allocate(tir_mutator *m, const tir_node *n) {
    ut *u = m->user;
    const tir_allocate *a = (const tir_allocate *)n;
    bool local = a->buffer->scope == TIR_SCOPE_LOCAL;
    if (local && u->nalloc == MAXALLOC) u->lost_all = true; /* not tracked: lose all */
    if (local && u->nalloc < MAXALLOC) u->allocs[u->nalloc++] = a->buffer;
    const tir_node *r = tir_mutate_default(m, n);
    if (local && u->nalloc && u->allocs[u->nalloc - 1] == a->buffer) u->nalloc--;
    return r;
}

static int tag_slot(ut *u, const tir_for *f) {
    for (int i = 0; i < u->n; i++)
        if (strcmp(u->first[i]->thread_tag, f->thread_tag) == 0) return i;
    TIR_ASSERT(u->n < MAXTAGS);
    u->first[u->n] = f;
    u->active[u->n] = false;
    return u->n++;
}

static const tir_node *on_for(tir_mutator *m, const tir_node *n) {
    ut *u = m->user;
    const tir_for *f = (const tir_for *)n;
    if (f->kind != TIR_FOR_THREAD_BINDING) return tir_mutate_default(m, n);
    int t = tag_slot(u, f);
    const tir_for *canon = u->first[t];
    TIR_ASSERT(tir_struct_equal(canon->extent, f->extent));
    const tir_expr *v = (const tir_expr *)canon->var;
    const tir_stmt *body =
        f == canon ? f->body : (const tir_stmt *)tir_substitute(m->ctx, f->body, 1, &f->var, &v);
    if (u->active[t]) {
        /* in the function's meaning the nested loop runs all its
         * iterations for each outer one; as one hardware index it runs one,
         * t2 = t, so a body that reads t would miss t's other values
         * (`for t: for t2: D[t2] = A[t]` stored A[t2]) */
        if (!u->bad_nest && tir_uses_var(f->body, canon->var)) {
            u->bad_nest = f;
            u->bad_outer = canon->var;
        }
        lose(u, canon->var);
        return tir_mutate(m, body);
    }
    u->active[t] = true;
    body = tir_mutate_stmt(m, body);
    u->active[t] = false;
    if (f == canon && body == f->body) return n;
    return (const tir_node *)tir_for_new(m->ctx, canon->var, f->min, f->extent, f->kind,
                                         f->thread_tag, f->nannots, f->annots, body);
}

tir_status lower_unify_threads(lower_state *st, const tir_prim_func *in,
                               const tir_prim_func **out) {
    ut u = {.n = 0};
    tir_mutator m = {.ctx = st->ctx, .user = &u};
    m.on[TIR_KIND_FOR] = on_for;
    m.on[TIR_KIND_ALLOCATE] = on_allocate;
    const tir_stmt *body = tir_mutate_stmt(&m, in->body);
    if (u.bad_nest)
        return lower_fail_marked(
            st, in, 1, (const void *[]){u.bad_nest},
            "unify_threads: the %s loop over '%s' is nested in another %s loop (over '%s'): "
            "both are the same hardware index, so each thread runs one iteration of the inner "
            "loop (the one equal to its own), but its body reads the outer variable '%s', so "
            "the function's other pairs of values are never computed.  Write the body over "
            "the inner variable only, or bind the inner loop to another axis",
            u.bad_nest->thread_tag, u.bad_nest->var->name, u.bad_nest->thread_tag,
            u.bad_outer->name, u.bad_outer->name);
    *out = lower_with_body(st->ctx, in, body);
    st->lost_buf = IR_NEWN(st->ctx, const tir_buffer *, u.nlost + 1);
    st->lost_var = IR_NEWN(st->ctx, const tir_var *, u.nlost + 1);
    for (int i = 0; i < u.nlost; i++) st->lost_buf[i] = u.lost_buf[i], st->lost_var[i] = u.lost_var[i];
    st->nlost = u.nlost;
    st->lost_all = u.lost_all;
    return TIR_OK;
}
