/* lower_blocks.c: blocks become plain statements (TVM: ConvertBlocksToOpaque
 * + LowerOpaqueBlock).  Iter vars are replaced by their bindings, a
 * non-trivial predicate becomes an IfThenElse, and the block's
 * alloc_buffers become Allocate statements around its body (plan_alloc
 * moves them later).  A block's "buffer_dim_align" annotation (storage_align,
 * groups of [write_index, axis, factor, offset]) moves to the Allocate of
 * the buffer it names, as LOWER_DIM_ALIGN [axis, factor, offset] triples,
 * for compact_alloc, which computes the padded strides.  The requests are
 * gathered over the whole function first, since the writing block need not
 * be the allocating one.  The root block's occupancy annotations
 * (launch_bounds_max_threads, launch_bounds_min_blocks_per_sm,
 * max_registers) and codegen switches (loop_strength_reduction,
 * direct_unroll) describe the whole kernel, so they move to the function's
 * attrs, where codegen reads them; a root annotation replaces a function
 * attr of the same key.
 */
#include <string.h>

#include "lower_internal.h"

/* One storage_align request, arena-allocated. */
typedef struct align_req {
    const tir_buffer *buffer;
    int64_t axis, factor, offset;
} align_req;

typedef struct lb {
    lower_state *st;
    tir_status status;
    ir_vec reqs; /* align_req*, in the order the blocks come */
} lb;

static tir_status record_align(lb *c, const tir_block *b, const tir_stmt *where) {
    lower_state *st = c->st;
    const tir_annot *a = tir_annots_get(b->nannots, b->annots, TIR_ANN_BUFFER_DIM_ALIGN);
    if (!a) return TIR_OK;
    if (a->kind != TIR_ANNOT_INTS || a->nints % 4 != 0)
        return lower_fail_marked(st, st->scheduled, 1, (const void *[]){where},
                                 "lower_blocks: block '%s': annotation buffer_dim_align must "
                                 "be groups of 4 ints [write_index, axis, factor, offset]",
                                 b->name);
    for (int i = 0; i < a->nints; i += 4) {
        int64_t wi = a->ints[i], axis = a->ints[i + 1], factor = a->ints[i + 2],
                off = a->ints[i + 3];
        if (wi < 0 || wi >= b->nwrites || axis < 0 || axis >= b->writes[wi].buffer->ndim ||
            factor <= 0 || off < 0 || off >= factor)
            return lower_fail_marked(st, st->scheduled, 1, (const void *[]){where},
                                     "lower_blocks: block '%s': buffer_dim_align entry "
                                     "[%lld, %lld, %lld, %lld] is out of range",
                                     b->name, (long long)wi, (long long)axis, (long long)factor,
                                     (long long)off);
        align_req *r = IR_NEW(st->ctx, align_req);
        *r = (align_req){b->writes[wi].buffer, axis, factor, off};
        ir_vec_push(&c->reqs, r);
    }
    return TIR_OK;
}

static bool gather_pre(tir_visitor *v, const tir_node *n) {
    lb *c = v->user;
    if (c->status != TIR_OK) return false;
    if (n->kind == TIR_KIND_BLOCK_REALIZE)
        c->status = record_align(c, ((const tir_block_realize *)n)->block, (const tir_stmt *)n);
    return c->status == TIR_OK;
}

/* An Allocate of buf around body, annotated with buf's align requests. */
static const tir_stmt *allocate(lb *c, const tir_buffer *buf, const tir_stmt *body) {
    tir_ctx *ctx = c->st->ctx;
    int n = 0;
    for (int i = 0; i < c->reqs.n; i++) n += ((const align_req *)c->reqs.items[i])->buffer == buf;
    if (n == 0) return tir_allocate_new(ctx, buf, body);
    int64_t *ints = IR_NEWN(ctx, int64_t, 3 * n);
    int k = 0;
    for (int i = 0; i < c->reqs.n; i++) {
        const align_req *r = c->reqs.items[i];
        if (r->buffer != buf) continue;
        ints[k++] = r->axis;
        ints[k++] = r->factor;
        ints[k++] = r->offset;
    }
    tir_annot an = {.key = LOWER_DIM_ALIGN, .kind = TIR_ANNOT_INTS, .nints = k, .ints = ints};
    return tir_allocate_annotated(ctx, buf, 1, &an, body);
}

static const tir_node *on_realize(tir_mutator *m, const tir_node *n) {
    lb *c = m->user;
    tir_ctx *ctx = m->ctx;
    const tir_block_realize *r = (const tir_block_realize *)n;
    const tir_block *b = r->block;
    TIR_ASSERT(!b->init); /* lower_init ran before */
    const tir_stmt *body = tir_mutate_stmt(m, b->body);
    if (b->niters > 0) {
        const tir_var **vars = IR_NEWN(ctx, const tir_var *, b->niters);
        for (int i = 0; i < b->niters; i++) vars[i] = b->iters[i].var;
        body = (const tir_stmt *)tir_substitute(ctx, body, b->niters, vars, r->values);
    }
    for (int i = b->nallocs - 1; i >= 0; i--) body = allocate(c, b->allocs[i], body);
    return (const tir_node *)lower_guard_predicate(ctx, r, body);
}

static const tir_annot_key occupancy_keys[] = {TIR_ANN_LAUNCH_BOUNDS_MAX_THREADS,
                                               TIR_ANN_LAUNCH_BOUNDS_MIN_BLOCKS_PER_SM,
                                               TIR_ANN_MAX_REGISTERS,
                                               TIR_ANN_LOOP_STRENGTH_REDUCTION,
                                               TIR_ANN_DIRECT_UNROLL};
enum { NOCC = sizeof occupancy_keys / sizeof occupancy_keys[0] };

/* f with the root block's occupancy annotations among its attrs. */
static const tir_prim_func *root_attrs(tir_ctx *ctx, const tir_prim_func *f,
                                       const tir_block *root) {
    tir_annot *attrs = IR_NEWN(ctx, tir_annot, f->nattrs + NOCC);
    int n = 0;
    for (int i = 0; i < f->nattrs; i++) {
        const tir_annot *r = tir_annots_find(root->nannots, root->annots, f->attrs[i].key);
        bool occ = false;
        for (int k = 0; k < NOCC; k++)
            occ |= r && strcmp(f->attrs[i].key, tir_annot_key_str(occupancy_keys[k])) == 0;
        if (!occ) attrs[n++] = f->attrs[i];
    }
    int n0 = n;
    for (int k = 0; k < NOCC; k++) {
        const tir_annot *a = tir_annots_get(root->nannots, root->annots, occupancy_keys[k]);
        if (a) attrs[n++] = *a;
    }
    if (n == n0) return f; /* the root has none */
    return tir_prim_func_new(ctx, f->name, f->nparams, f->params, f->buffer_map, f->body, n,
                             attrs);
}

tir_status lower_blocks(lower_state *st, const tir_prim_func *in, const tir_prim_func **out) {
    lb c = {.st = st};
    tir_visitor v = {.pre = gather_pre, .user = &c};
    tir_visit(&v, in->body);
    if (c.status != TIR_OK) {
        ir_vec_free(&c.reqs);
        return c.status;
    }
    const tir_block_realize *root = tir_as_tir_block_realize(in->body);
    if (root) in = root_attrs(st->ctx, in, root->block);
    tir_mutator m = {.ctx = st->ctx, .user = &c};
    m.on[TIR_KIND_BLOCK_REALIZE] = on_realize;
    const tir_stmt *body = tir_mutate_stmt(&m, in->body);
    ir_vec_free(&c.reqs);
    *out = lower_with_body(st->ctx, in, body);
    return TIR_OK;
}
