/* flatten.c: multi-dimensional buffers become 1-D (TVM: FlattenBuffer).
 * An access buf[i0, .., in] becomes flat[sum i_d * stride_d] with the
 * buffer's strides (padded ones from storage_align included) or, without
 * strides, the row-major products of the shape.  Parameter buffers keep
 * their elem_offset, alignment and scope; allocated buffers get the size
 * stride_0 * shape_0.
 */
#include "lower_internal.h"

typedef struct fl {
    lower_state *st;
    ir_vec olds, news;
} fl;

static const tir_expr *stride_of(tir_ctx *ctx, const tir_buffer *b, int d) {
    if (b->strides) return b->strides[d];
    const tir_expr *s = NULL;
    for (int k = d + 1; k < b->ndim; k++) s = s ? tir_mul(ctx, s, b->shape[k]) : b->shape[k];
    return s ? s : tir_int(ctx, b->shape[0]->dtype, 1);
}

static const tir_buffer *flat_buffer(fl *c, const tir_buffer *b) {
    for (int i = 0; i < c->olds.n; i++)
        if (c->olds.items[i] == b) return c->news.items[i];
    tir_ctx *ctx = c->st->ctx;
    const tir_buffer *nb = b;
    if (b->ndim != 1 || (b->strides && !tir_struct_equal(b->strides[0], tir_i32(ctx, 1)))) {
        const tir_expr *size =
            b->ndim == 0 ? tir_i32(ctx, 1) : tir_mul(ctx, stride_of(ctx, b, 0), b->shape[0]);
        size = tir_simplify(ctx, size);
        tir_buffer_desc d;
        tir_buffer_describe(b, &d);
        d.ndim = 1;
        d.shape = (const tir_expr *const[]){size};
        d.strides = NULL;
        nb = tir_buffer_new(ctx, &d);
    }
    ir_vec_push(&c->olds, b);
    ir_vec_push(&c->news, nb);
    return nb;
}

static const tir_expr *flat_index(tir_ctx *ctx, const tir_buffer *b, int nidx,
                                  const tir_expr *const *idx) {
    if (nidx == 0) return tir_i32(ctx, 0);
    const tir_expr *sum = NULL;
    for (int d = 0; d < nidx; d++) {
        const tir_expr *st = stride_of(ctx, b, d);
        if (!tir_dtype_eq(st->dtype, idx[d]->dtype)) st = tir_cast_new(ctx, idx[d]->dtype, st);
        int64_t one;
        const tir_expr *t =
            tir_expr_const_int(st, &one) && one == 1 ? idx[d] : tir_mul(ctx, idx[d], st);
        if (sum && !tir_dtype_eq(sum->dtype, t->dtype)) t = tir_cast_new(ctx, sum->dtype, t);
        sum = sum ? tir_add(ctx, sum, t) : t;
    }
    return sum;
}

static const tir_node *on_load(tir_mutator *m, const tir_node *n) {
    const tir_buffer_load *l = (const tir_buffer_load *)tir_mutate_default(m, n);
    const tir_buffer *nb = flat_buffer(m->user, l->buffer);
    if (nb == l->buffer) return (const tir_node *)l;
    const tir_expr *i = flat_index(m->ctx, l->buffer, l->nidx, l->indices);
    return (const tir_node *)tir_load(m->ctx, nb, 1, &i);
}

static const tir_node *on_store(tir_mutator *m, const tir_node *n) {
    const tir_buffer_store *s = (const tir_buffer_store *)tir_mutate_default(m, n);
    const tir_buffer *nb = flat_buffer(m->user, s->buffer);
    if (nb == s->buffer) return (const tir_node *)s;
    const tir_expr *i = flat_index(m->ctx, s->buffer, s->nidx, s->indices);
    return (const tir_node *)tir_store(m->ctx, nb, s->value, 1, &i);
}

static const tir_node *on_alloc(tir_mutator *m, const tir_node *n) {
    const tir_allocate *a = (const tir_allocate *)tir_mutate_default(m, n);
    const tir_buffer *nb = flat_buffer(m->user, a->buffer);
    if (nb == a->buffer) return (const tir_node *)a;
    return (const tir_node *)lower_alloc_like(m->ctx, a, nb, a->body);
}

tir_status lower_flatten(lower_state *st, const tir_prim_func *in, const tir_prim_func **out) {
    fl c = {.st = st};
    tir_ctx *ctx = st->ctx;
    tir_mutator m = {.ctx = ctx, .user = &c};
    m.on[TIR_KIND_BUFFER_LOAD] = on_load;
    m.on[TIR_KIND_BUFFER_STORE] = on_store;
    m.on[TIR_KIND_ALLOCATE] = on_alloc;
    const tir_stmt *body = tir_mutate_stmt(&m, in->body);
    const tir_buffer **bm = IR_NEWN(ctx, const tir_buffer *, in->nparams);
    for (int i = 0; i < in->nparams; i++)
        bm[i] = in->buffer_map[i] ? flat_buffer(&c, in->buffer_map[i]) : NULL;
    ir_vec_free(&c.olds);
    ir_vec_free(&c.news);
    *out =
        tir_prim_func_new(ctx, in->name, in->nparams, in->params, bm, body, in->nattrs, in->attrs);
    return TIR_OK;
}
