/* lower_init.c: a block's init statement becomes an ordinary conditional at
 * the start of its body, `if (every reduce iter var == its domain min)
 * init`, so the first reduction step of each output element initialises it
 * (TVM: LowerInitBlock).  A block without reduce iter vars runs its init
 * every time.
 */
#include "lower_internal.h"

static const tir_node *on_block(tir_mutator *m, const tir_node *n) {
    const tir_block *b = (const tir_block *)tir_mutate_default(m, n);
    if (!b->init) return (const tir_node *)b;
    tir_ctx *ctx = m->ctx;
    const tir_expr *cond = NULL;
    for (int i = 0; i < b->niters; i++) {
        const tir_iter_var *iv = &b->iters[i];
        if (iv->kind != TIR_ITER_REDUCE) continue;
        const tir_expr *eq = tir_binop_new(ctx, TIR_KIND_EQ, (const tir_expr *)iv->var,
                                           iv->dom.min);
        cond = cond ? tir_and(ctx, cond, eq) : eq;
    }
    const tir_stmt *init = cond ? tir_if_new(ctx, cond, b->init, NULL) : b->init;
    tir_block_desc d;
    tir_block_describe(b, &d);
    d.init = NULL;
    d.body = lower_seq2(ctx, init, b->body);
    return (const tir_node *)tir_block_new(ctx, &d);
}

tir_status lower_init_block(lower_state *st, const tir_prim_func *in,
                            const tir_prim_func **out) {
    tir_mutator m = {.ctx = st->ctx};
    m.on[TIR_KIND_BLOCK] = on_block;
    *out = lower_with_body(st->ctx, in, tir_mutate_stmt(&m, in->body));
    return TIR_OK;
}
