/* compute_inline.c: inline a block's value into its consumers (TVM's
 * ComputeInline).
 *
 * The block must be a plain elementwise definition X[v...] = f(v...): then
 * every load X[i...] anywhere in the function becomes f(i...), readers'
 * declared regions read f's inputs instead, and the block, the loops it
 * leaves empty and the allocation of X disappear.
 */
#include "sched_internal.h"

/* The store of a single-store body (through no other statement). */
static const tir_buffer_store *single_store(const tir_block *b) {
    return tir_as_tir_buffer_store(b->body);
}

/* Preconditions 1-7; fills *st. */
static tir_status check(sch_call *c, uint32_t rv, int bi, const tir_buffer_store **st) {
    const tir_schedule *s = c->sch;
    const tir_block *b = sch_sref_block(s, bi);
    if (sch_scope_of(s, bi) < 0)
        return sch_fail(c, TIR_ERR_SCHED_DIFFERENT_SCOPE, rv, b,
                        "the root block cannot be inlined");
    if (sch_classify_block(b) != SCH_BLOCK_COMPLETE)
        return sch_fail(c, TIR_ERR_SCHED_BLOCK_NOT_COMPLETE, rv, b,
                        "block \"%s\" is not complete (spatial iterators only, no init, "
                        "reads nothing it writes); only such blocks can be inlined",
                        b->name);
    const tir_buffer_store *x = single_store(b);
    if (!x || b->nwrites != 1 || b->writes[0].buffer != x->buffer || b->nallocs)
        return sch_fail(c, TIR_ERR_SCHED_NOT_SINGLE_STORE, rv, b,
                        "the body of block \"%s\" must be a single store to the one buffer it "
                        "writes",
                        b->name);
    bool ok = x->nidx == b->niters;
    for (int d = 0; d < x->nidx && ok; d++) {
        const tir_var *v = tir_as_tir_var(x->indices[d]);
        int k = 0;
        while (k < b->niters && (!v || b->iters[k].var != v)) k++;
        ok = k < b->niters;
        for (int e = 0; e < d && ok; e++) ok = x->indices[e] != x->indices[d];
    }
    if (!ok)
        return sch_fail(c, TIR_ERR_SCHED_NOT_TRIVIAL_ACCESS, rv, b,
                        "block \"%s\" must store %s at its iterators, each once: %s",
                        b->name, x->buffer->name, tir_print(c->ctx, x));
    if (sch_is_param_buffer(s->func, x->buffer))
        return sch_fail(c, TIR_ERR_SCHED_OUTPUT_BUFFER, rv, b,
                        "%s is a parameter of the function; its block cannot be inlined",
                        x->buffer->name);
    /* (a wrapper's regions are its blocks', each of them scanned here) */
    for (int i = 0; i < s->nsrefs; i++) {
        const tir_block *o = sch_sref_block(s, i);
        if (o && i != bi && !sch_is_wrapper(s, o) &&
            sch_region_has(o->nwrites, o->writes, x->buffer)) {
            const void *marks[2] = {b, o};
            return sch_fail_marks(c, TIR_ERR_SCHED_MULTIPLE_WRITERS, rv, 2, marks,
                                  "%s is also written by block \"%s\"", x->buffer->name,
                                  o->name);
        }
    }
    /* Inlined, f reads its inputs where the consumers are: no block may
       write them after the block (srefs are in program order). */
    for (int i = bi + 1; i < s->nsrefs; i++) {
        const tir_block *o = sch_sref_block(s, i);
        if (sch_is_wrapper(s, o)) continue;
        for (int r = 0; o && r < b->nreads; r++)
            if (sch_region_has(o->nwrites, o->writes, b->reads[r].buffer)) {
                const void *marks[2] = {b, o};
                return sch_fail_marks(c, TIR_ERR_SCHED_NOT_STAGE_PIPELINE, rv, 2, marks,
                                      "block \"%s\" writes %s, which \"%s\" reads, after it; "
                                      "the inlined value would read the new contents",
                                      o->name, b->reads[r].buffer->name, b->name);
            }
    }
    *st = x;
    return TIR_OK;
}

typedef struct {
    const tir_block *b;
    const tir_buffer_store *st;
    const tir_var **vars; /* the store's index variables */
} inline_env;

static const tir_node *on_load(tir_mutator *m, const tir_node *n) {
    inline_env *e = m->user;
    const tir_buffer_load *ld = (const tir_buffer_load *)tir_mutate_default(m, n);
    if (ld->buffer != e->st->buffer) return (const tir_node *)ld;
    return tir_substitute(m->ctx, e->st->value, ld->nidx, e->vars, ld->indices);
}

static bool same_region(const tir_buffer_region *a, const tir_buffer_region *b) {
    if (a->buffer != b->buffer) return false;
    for (int d = 0; d < a->ndim; d++)
        if (!tir_struct_equal(a->ranges[d].min, b->ranges[d].min) ||
            !tir_struct_equal(a->ranges[d].extent, b->ranges[d].extent))
            return false;
    return true;
}

static const tir_node *on_block(tir_mutator *m, const tir_node *n) {
    inline_env *e = m->user;
    const tir_block *b = (const tir_block *)tir_mutate_default(m, n);
    const tir_buffer *x = e->st->buffer;
    if (!sch_region_has(b->nreads, b->reads, x)) return (const tir_node *)b;
    tir_ctx *ctx = m->ctx;
    int cap = b->nreads + 8;
    tir_buffer_region *rs = IR_NEWN(ctx, tir_buffer_region, cap);
    int nr = 0;
    for (int r = 0; r < b->nreads; r++) {
        const tir_buffer_region *reg = &b->reads[r];
        if (reg->buffer != x) {
            rs[nr++] = *reg;
            continue;
        }
        bool point = true;
        for (int d = 0; d < reg->ndim; d++) point &= sch_is_const(reg->ranges[d].extent, 1);
        const tir_expr **mins = IR_NEWN(ctx, const tir_expr *, reg->ndim);
        for (int d = 0; d < reg->ndim; d++) mins[d] = reg->ranges[d].min;
        for (int k = 0; k < e->b->nreads; k++) {
            tir_buffer_region nrg;
            if (point) {
                tir_range *rg = IR_NEWN(ctx, tir_range, e->b->reads[k].ndim);
                for (int d = 0; d < e->b->reads[k].ndim; d++) {
                    const tir_range *o = &e->b->reads[k].ranges[d];
                    rg[d].min = (const tir_expr *)tir_substitute(ctx, o->min, reg->ndim,
                                                                 e->vars, mins);
                    rg[d].extent = (const tir_expr *)tir_substitute(ctx, o->extent, reg->ndim,
                                                                    e->vars, mins);
                }
                nrg = tir_region_new(ctx, e->b->reads[k].buffer, e->b->reads[k].ndim, rg);
            } else {
                nrg = tir_region_full(ctx, e->b->reads[k].buffer);
            }
            bool dup = false;
            for (int j = 0; j < nr && !dup; j++) dup = same_region(&rs[j], &nrg);
            if (dup) continue;
            if (nr == cap) {
                tir_buffer_region *g = IR_NEWN(ctx, tir_buffer_region, 2 * cap);
                for (int j = 0; j < nr; j++) g[j] = rs[j];
                rs = g;
                cap *= 2;
            }
            rs[nr++] = nrg;
        }
    }
    tir_block_desc d;
    tir_block_describe(b, &d);
    d.nreads = nr;
    d.reads = rs;
    return (const tir_node *)tir_block_new(ctx, &d);
}

tir_status sch_prim_compute_inline(sch_call *c) {
    const tir_schedule *s = c->sch;
    tir_ctx *ctx = c->ctx;
    uint32_t rv = c->args[0].rv;
    int bi = sch_block_sref(c, rv);
    const tir_buffer_store *st = NULL;
    TIR_TRY(check(c, rv, bi, &st));
    const tir_block *b = sch_sref_block(s, bi);

    /* Drop the block and the allocation of its buffer (wherever it is). */
    const tir_block *owner = NULL;
    for (int i = 0; i < s->nsrefs && !owner; i++) {
        const tir_block *o = sch_sref_block(s, i);
        for (int k = 0; o && k < o->nallocs; k++)
            if (o->allocs[k] == st->buffer) owner = o;
    }
    const tir_stmt *olds[1] = {sch_sref_stmt(s, sch_removable_root(s, bi))};
    const tir_stmt *news[1] = {NULL};
    sch_edit_spec e = {.ctx = ctx, .nrepl = 1, .olds = olds, .news = news, .scope = owner,
                       .drop_alloc = st->buffer};
    const tir_prim_func *f = sch_edit(c, &e);

    inline_env env = {b, st, IR_NEWN(ctx, const tir_var *, st->nidx)};
    for (int d = 0; d < st->nidx; d++) env.vars[d] = tir_as_tir_var(st->indices[d]);
    tir_mutator m = {.ctx = ctx, .user = &env};
    m.on[TIR_KIND_BUFFER_LOAD] = on_load;
    m.on[TIR_KIND_BLOCK] = on_block;
    c->func = (const tir_prim_func *)tir_mutate(&m, f);
    sch_retire_block(c, b->name);
    return TIR_OK;
}

tir_status tir_sched_compute_inline(tir_schedule *s, tir_block_rv block) {
    if (!s) return sch_bad_arg(s, "compute_inline", "schedule is NULL");
    sch_arg args[1] = {SCH_RV(block)};
    return sch_run(s, SCH_INST_compute_inline, args, NULL, NULL);
}
