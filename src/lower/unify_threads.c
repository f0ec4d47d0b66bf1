/* unify_threads.c: a thread-binding loop nested inside a loop of the same
 * tag (the usual cooperative-fetch pattern: a cache block moved under the
 * compute's threadIdx loops, its own fused loop bound to threadIdx again)
 * denotes the same hardware index, so its variable is replaced by the outer
 * loop's and the inner loop disappears (TVM: UnifyThreadBinding).
 * gpu_check already made sure that the extents agree.
 */
#include <string.h>

#include "lower_internal.h"

enum { MAXDEPTH = 16 };

typedef struct ut {
    const tir_for *outer[MAXDEPTH];
    int n;
} ut;

static const tir_node *on_for(tir_mutator *m, const tir_node *n) {
    ut *u = m->user;
    const tir_for *f = (const tir_for *)n;
    if (f->kind != TIR_FOR_THREAD_BINDING) return tir_mutate_default(m, n);
    for (int i = 0; i < u->n; i++)
        if (strcmp(u->outer[i]->thread_tag, f->thread_tag) == 0) {
            TIR_ASSERT(tir_struct_equal(u->outer[i]->extent, f->extent));
            const tir_expr *v = (const tir_expr *)u->outer[i]->var;
            const tir_stmt *body = (const tir_stmt *)tir_substitute(m->ctx, f->body, 1,
                                                                    &f->var, &v);
            return tir_mutate(m, body);
        }
    TIR_ASSERT(u->n < MAXDEPTH);
    u->outer[u->n++] = f;
    const tir_node *r = tir_mutate_default(m, n);
    u->n--;
    return r;
}

tir_status lower_unify_threads(lower_state *st, const tir_prim_func *in,
                               const tir_prim_func **out) {
    ut u = {.n = 0};
    tir_mutator m = {.ctx = st->ctx, .user = &u};
    m.on[TIR_KIND_FOR] = on_for;
    *out = lower_with_body(st->ctx, in, tir_mutate_stmt(&m, in->body));
    return TIR_OK;
}
