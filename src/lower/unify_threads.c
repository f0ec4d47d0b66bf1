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
 * gpu_check already made sure that the extents agree.
 */
#include <string.h>

#include "lower_internal.h"

enum { MAXTAGS = 8 };

typedef struct ut {
    const tir_for *first[MAXTAGS]; /* first loop of each tag, in pre-order */
    bool active[MAXTAGS];          /* inside a loop of that tag */
    int n;
} ut;

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
    if (u->active[t]) return tir_mutate(m, body);
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
    *out = lower_with_body(st->ctx, in, tir_mutate_stmt(&m, in->body));
    return TIR_OK;
}
