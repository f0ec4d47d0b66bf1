/* lower_blocks.c: blocks become plain statements (TVM: ConvertBlocksToOpaque
 * + LowerOpaqueBlock).  Iter vars are replaced by their bindings, a
 * non-trivial predicate becomes an IfThenElse, and the block's
 * alloc_buffers become Allocate statements around its body (plan_alloc
 * moves them later).  A "buffer_dim_align" annotation (storage_align,
 * groups of [write_index, axis, factor, offset]) is recorded in the state
 * for compact_alloc, which computes the padded strides.
 */
#include <stdlib.h>

#include "lower_internal.h"

typedef struct lb {
    lower_state *st;
    tir_status status;
} lb;

static void add_align(lower_state *st, const tir_buffer *b, int axis, int64_t factor,
                      int64_t offset) {
    if (st->naligns == st->aligns_cap) {
        st->aligns_cap = st->aligns_cap ? st->aligns_cap * 2 : 8;
        lower_dim_align *n = realloc(st->aligns, sizeof *n * (size_t)st->aligns_cap);
        TIR_ASSERT(n);
        st->aligns = n;
    }
    st->aligns[st->naligns++] = (lower_dim_align){b, axis, factor, offset};
}

static tir_status record_align(lower_state *st, const tir_block *b, const tir_stmt *where) {
    const tir_annot *a = tir_annots_find(b->nannots, b->annots, "buffer_dim_align");
    if (!a) return TIR_OK;
    if (a->kind != TIR_ANNOT_INTS || a->nints % 4 != 0)
        return lower_fail_marked(st, st->scheduled, 1, (const void *[]){where},
                                 "lower_blocks: block '%s': annotation buffer_dim_align must "
                                 "be groups of 4 ints [write_index, axis, factor, offset]",
                                 b->name);
    for (int i = 0; i < a->nints; i += 4) {
        int64_t wi = a->ints[i], axis = a->ints[i + 1], factor = a->ints[i + 2],
                off = a->ints[i + 3];
        if (wi < 0 || wi >= b->nwrites || axis < 0 ||
            axis >= b->writes[wi].buffer->ndim || factor <= 0 || off < 0 || off >= factor)
            return lower_fail_marked(st, st->scheduled, 1, (const void *[]){where},
                                     "lower_blocks: block '%s': buffer_dim_align entry "
                                     "[%lld, %lld, %lld, %lld] is out of range",
                                     b->name, (long long)wi, (long long)axis,
                                     (long long)factor, (long long)off);
        add_align(st, b->writes[wi].buffer, (int)axis, factor, off);
    }
    return TIR_OK;
}

static const tir_node *on_realize(tir_mutator *m, const tir_node *n) {
    lb *c = m->user;
    tir_ctx *ctx = m->ctx;
    const tir_block_realize *r = (const tir_block_realize *)n;
    const tir_block *b = r->block;
    if (c->status == TIR_OK) c->status = record_align(c->st, b, (const tir_stmt *)n);
    TIR_ASSERT(!b->init); /* lower_init ran before */
    const tir_stmt *body = tir_mutate_stmt(m, b->body);
    if (b->niters > 0) {
        const tir_var **vars = IR_NEWN(ctx, const tir_var *, b->niters);
        for (int i = 0; i < b->niters; i++) vars[i] = b->iters[i].var;
        body = (const tir_stmt *)tir_substitute(ctx, body, b->niters, vars, r->values);
    }
    for (int i = b->nallocs - 1; i >= 0; i--) body = tir_allocate_new(ctx, b->allocs[i], body);
    int64_t pv;
    if (r->predicate && !(tir_expr_const_int(r->predicate, &pv) && pv))
        body = tir_if_new(ctx, r->predicate, body, NULL);
    return (const tir_node *)body;
}

tir_status lower_blocks(lower_state *st, const tir_prim_func *in, const tir_prim_func **out) {
    lb c = {.st = st};
    tir_mutator m = {.ctx = st->ctx, .user = &c};
    m.on[TIR_KIND_BLOCK_REALIZE] = on_realize;
    const tir_stmt *body = tir_mutate_stmt(&m, in->body);
    if (c.status != TIR_OK) return c.status;
    *out = lower_with_body(st->ctx, in, body);
    return TIR_OK;
}
