/* storage_align.c: pad a buffer's strides so that one axis' stride is
 * offset modulo factor (TVM's StorageAlign), e.g. rows of a shared-memory
 * tile padded by one element so that a warp reading a column does not hit
 * one bank 32 times.
 *
 * Like TVM, the request is recorded on the block as the annotation
 * "buffer_dim_align" (flat [buffer_index, axis, factor, offset] quadruples);
 * unlike TVM, which applies it late in lowering, the strides are applied
 * at once to the allocated buffer, recomputed from every request of the
 * block for that buffer.  The schedule's result therefore already has the
 * padded layout: the interpreter runs it, and lowering only flattens with
 * the strides it finds (docs/lowered-ir.md).
 */
#include <string.h>

#include "sched_internal.h"

#define KEY tir_annot_key_str(TIR_ANN_BUFFER_DIM_ALIGN)

static bool is_param(const tir_prim_func *f, const tir_buffer *b) {
    for (int i = 0; i < f->nparams; i++)
        if (f->buffer_map[i] == b) return true;
    return false;
}

tir_status sch_prim_storage_align(sch_call *c) {
    const tir_schedule *s = c->sch;
    tir_ctx *ctx = c->ctx;
    uint32_t rv = c->args[0].rv;
    int bi = sch_block_sref(c, rv);
    const tir_block *b = sch_sref_block(s, bi);
    int64_t idx = c->args[1].i, axis = c->args[2].i, factor = c->args[3].i,
            offset = c->args[4].i;

    if (idx < 0 || idx >= b->nwrites)
        return sch_fail(c, TIR_ERR_SCHED_INDEX_OUT_OF_RANGE, rv, b,
                        "buffer index %lld is out of range: block \"%s\" writes %d buffer%s",
                        (long long)idx, b->name, b->nwrites, b->nwrites == 1 ? "" : "s");
    const tir_buffer *buf = b->writes[idx].buffer;
    if (is_param(s->func, buf))
        return sch_fail(c, TIR_ERR_SCHED_OUTPUT_BUFFER, rv, b,
                        "buffer %s is a parameter of %s, whose layout the caller fixes; only "
                        "buffers allocated by a block can be aligned",
                        buf->name, s->func->name);
    if (axis < 0 || axis >= buf->ndim)
        return sch_fail(c, TIR_ERR_SCHED_BAD_AXIS, rv, b,
                        "axis %lld is out of range: buffer %s has %d dimension%s",
                        (long long)axis, buf->name, buf->ndim, buf->ndim == 1 ? "" : "s");
    if (factor <= 0 || factor > INT32_MAX || offset < 0 || offset >= factor)
        return sch_fail(c, TIR_ERR_SCHED_BAD_ALIGNMENT, rv, b,
                        "factor %lld and offset %lld: the factor must be positive and "
                        "0 <= offset < factor",
                        (long long)factor, (long long)offset);

    /* The block's requests, this one replacing an older one for the same
       buffer and axis. */
    const tir_annot *old = tir_annots_get(b->nannots, b->annots, TIR_ANN_BUFFER_DIM_ALIGN);
    int nold = old && old->kind == TIR_ANNOT_INTS ? old->nints / 4 : 0;
    int64_t *q = IR_NEWN(ctx, int64_t, 4 * (nold + 1));
    int nq = 0;
    for (int i = 0; i < nold; i++) {
        const int64_t *o = old->ints + 4 * i;
        if (o[0] == idx && o[1] == axis) continue;
        memcpy(q + 4 * nq++, o, 4 * sizeof *q);
    }
    q[4 * nq] = idx;
    q[4 * nq + 1] = axis;
    q[4 * nq + 2] = factor;
    q[4 * nq + 3] = offset;
    nq++;

    /* Strides, innermost axis first. */
    int nd = buf->ndim;
    tir_dtype it = TIR_I32;
    for (int d = 0; d < nd; d++)
        if (buf->shape[d]->dtype.bits == 64) it = TIR_I64;
    const tir_expr **strides = IR_NEWN(ctx, const tir_expr *, nd);
    const tir_expr *next = tir_int(ctx, it, 1);
    for (int d = nd - 1; d >= 0; d--) {
        const tir_expr *st = next;
        for (int k = 0; k < nq; k++) {
            const int64_t *r = q + 4 * k;
            if (r[0] != idx || r[1] != d) continue;
            /* the smallest value >= st that is r[3] modulo r[2] */
            const tir_expr *f = tir_int(ctx, it, r[2]);
            st = tir_add(ctx, st, tir_floormod(ctx, tir_sub(ctx, tir_int(ctx, it, r[3]), st), f));
        }
        strides[d] = tir_simplify(ctx, st);
        const tir_expr *sh = buf->shape[d];
        if (!tir_dtype_eq(sh->dtype, it)) sh = tir_cast_new(ctx, it, sh);
        next = tir_simplify(ctx, tir_mul(ctx, strides[d], sh));
    }

    tir_buffer_desc bd;
    tir_buffer_describe(buf, &bd);
    bd.strides = strides;
    const tir_buffer *nb = tir_buffer_new(ctx, &bd);

    tir_annot a = {.key = tir_intern(ctx, KEY), .kind = TIR_ANNOT_INTS, .nints = 4 * nq,
                   .ints = q};
    tir_annot *na = IR_NEWN(ctx, tir_annot, b->nannots + 1);
    int nn = 0;
    for (int i = 0; i < b->nannots; i++)
        if (strcmp(b->annots[i].key, KEY) != 0) na[nn++] = b->annots[i];
    na[nn++] = a;
    const tir_block_realize *r = s->srefs[bi].realize;
    tir_block_desc d;
    tir_block_describe(b, &d);
    d.nannots = nn;
    d.annots = na;
    const tir_stmt *o[1] = {&r->base};
    const tir_stmt *n[1] = {
        tir_block_realize_new(ctx, r->nvalues, r->values, r->predicate, tir_block_new(ctx, &d))};
    const tir_prim_func *f = sch_replace(c, 1, o, n);
    c->func = (const tir_prim_func *)tir_replace_buffers(ctx, f, 1, &buf, &nb);
    return TIR_OK;
}

tir_status tir_sched_storage_align(tir_schedule *s, tir_block_rv block, int64_t buffer_index,
                                   int64_t axis, int64_t factor, int64_t offset) {
    if (!s) return sch_bad_arg(s, "storage_align", "schedule is NULL");
    sch_arg args[5] = {SCH_RV(block), {.i = buffer_index}, {.i = axis}, {.i = factor},
                       {.i = offset}};
    return sch_run(s, SCH_INST_storage_align, args, NULL, NULL);
}
