/* reverse_compute_inline.c: inline a consumer block into its producer
 * (TVM's ReverseComputeInline).
 *
 * With a producer P: X[u...] = e(u...) and a consumer Q: Y[g(v...)] =
 * f(X[v...], ...), where Q runs over exactly X's shape, Q disappears and P
 * becomes Y[g(u...)] = f(e(u...), ...): P keeps its name, loops and
 * bindings and now writes Y.  X and its allocation disappear.
 */
#include "sched_internal.h"

typedef struct {
    const tir_buffer *x;
    const tir_expr *value; /* e */
    int n;
    const tir_var **qvars;
    const tir_expr **pvals;
} rinline_env;

static const tir_node *on_load(tir_mutator *m, const tir_node *n) {
    rinline_env *e = m->user;
    const tir_buffer_load *ld = (const tir_buffer_load *)n;
    if (ld->buffer != e->x) return tir_mutate_default(m, n);
    return (const tir_node *)e->value;
}

/* Index d of the X access is iterator qit[d] of block b (each iterator
 * once, all of them); false otherwise. */
static bool permutation(const tir_block *b, int nidx, const tir_expr *const *idx, int *qit) {
    if (nidx != b->niters) return false;
    for (int d = 0; d < nidx; d++) {
        const tir_var *v = tir_as_tir_var(idx[d]);
        int k = 0;
        while (k < b->niters && (!v || b->iters[k].var != v)) k++;
        if (k == b->niters) return false;
        for (int j = 0; j < d; j++)
            if (qit[j] == k) return false;
        qit[d] = k;
    }
    return true;
}

typedef struct {
    tir_visitor v;
    const tir_buffer *x;
    const tir_buffer_load *first;
    bool differ;
} load_finder;

static bool find_pre(tir_visitor *v, const tir_node *n) {
    load_finder *f = (load_finder *)v;
    const tir_buffer_load *ld = tir_as_tir_buffer_load(n);
    if (ld && ld->buffer == f->x) {
        if (!f->first)
            f->first = ld;
        else if (!tir_struct_equal(f->first, ld))
            f->differ = true;
    }
    return true;
}

tir_status sch_prim_reverse_compute_inline(sch_call *c) {
    const tir_schedule *s = c->sch;
    tir_ctx *ctx = c->ctx;
    uint32_t rv = c->args[0].rv;
    int qi = sch_block_sref(c, rv);
    const tir_block *q = sch_sref_block(s, qi);
    int sc = sch_scope_of(s, qi);
    if (sc < 0)
        return sch_fail(c, TIR_ERR_SCHED_DIFFERENT_SCOPE, rv, q,
                        "the root block cannot be inlined");
    /* 1-2: the consumer. */
    if (sch_classify_block(q) != SCH_BLOCK_COMPLETE)
        return sch_fail(c, TIR_ERR_SCHED_BLOCK_NOT_COMPLETE, rv, q,
                        "block \"%s\" is not complete (spatial iterators only, no init, "
                        "reads nothing it writes)",
                        q->name);
    const tir_buffer_store *qst = tir_as_tir_buffer_store(q->body);
    if (!qst || q->nwrites != 1 || q->writes[0].buffer != qst->buffer || q->nallocs)
        return sch_fail(c, TIR_ERR_SCHED_NOT_SINGLE_STORE, rv, q,
                        "the body of block \"%s\" must be a single store to the one buffer it "
                        "writes",
                        q->name);
    /* 3: exactly one produced buffer, one producer. */
    int *all;
    int na = sch_scope_blocks(s, sc, &all), pi = -1;
    const tir_buffer *x = NULL;
    for (int r = 0; r < q->nreads; r++)
        for (int k = 0; k < na; k++) {
            const tir_block *o = sch_sref_block(s, all[k]);
            if (all[k] == qi || !sch_region_has(o->nwrites, o->writes, q->reads[r].buffer))
                continue;
            if (pi >= 0 && (x != q->reads[r].buffer || pi != all[k])) {
                const void *marks[2] = {sch_sref_block(s, pi), o};
                return sch_fail_marks(c, TIR_ERR_SCHED_MULTIPLE_WRITERS, rv, 2, marks,
                                      "block \"%s\" reads what blocks \"%s\" and \"%s\" write; "
                                      "it needs exactly one producer",
                                      q->name, sch_sref_block(s, pi)->name, o->name);
            }
            pi = all[k];
            x = q->reads[r].buffer;
        }
    if (pi < 0)
        return sch_fail(c, TIR_ERR_SCHED_NO_PRODUCER, rv, q,
                        "block \"%s\" has no producer in its scope to inline into", q->name);
    const tir_block *p = sch_sref_block(s, pi);
    /* 4: the producer too is a single complete store. */
    const tir_buffer_store *pst = tir_as_tir_buffer_store(p->body);
    if (sch_classify_block(p) != SCH_BLOCK_COMPLETE || !pst || p->nwrites != 1 ||
        pst->buffer != x || p->nallocs) {
        const void *marks[2] = {p, q};
        return sch_fail_marks(c, TIR_ERR_SCHED_NOT_SINGLE_STORE, rv, 2, marks,
                              "producer \"%s\" must be complete with a body that is a single "
                              "store to %s",
                              p->name, x->name);
    }
    /* 5: trivial accesses on both sides. */
    load_finder lf = {{find_pre, NULL, NULL}, x, NULL, false};
    tir_visit(&lf.v, q->body);
    int *qit = IR_NEWN(ctx, int, x->ndim + q->niters + 1);
    int *pit = IR_NEWN(ctx, int, x->ndim + p->niters + 1);
    if (!lf.first || lf.differ || !permutation(q, lf.first->nidx, lf.first->indices, qit) ||
        !permutation(p, pst->nidx, pst->indices, pit)) {
        const void *marks[2] = {p, q};
        return sch_fail_marks(c, TIR_ERR_SCHED_NOT_TRIVIAL_ACCESS, rv, 2, marks,
                              "\"%s\" must store %s and \"%s\" load it at their iterators, "
                              "each once, all of them, and always at the same indices",
                              p->name, x->name, q->name);
    }
    /* 6 */
    if (sch_is_param_buffer(s->func, x))
        return sch_fail(c, TIR_ERR_SCHED_OUTPUT_BUFFER, rv, q,
                        "%s is a parameter of the function and must stay written", x->name);
    /* 7: no other reader of X. */
    for (int i = 0; i < s->nsrefs; i++) {
        const tir_block *o = sch_sref_block(s, i);
        if (o && i != qi && i != pi && sch_region_has(o->nreads, o->reads, x)) {
            const void *marks[2] = {q, o};
            return sch_fail_marks(c, TIR_ERR_SCHED_NOT_STAGE_PIPELINE, rv, 2, marks,
                                  "%s is also read by block \"%s\", which would lose it",
                                  x->name, o->name);
        }
    }
    /* 8: the consumer runs over exactly X's shape. */
    for (int d = 0; d < x->ndim; d++) {
        const tir_iter_var *it = &q->iters[qit[d]];
        if (!sch_is_const(it->dom.min, 0) || !tir_struct_equal(it->dom.extent, x->shape[d]))
            return sch_fail(c, TIR_ERR_SCHED_DOMAIN_MISMATCH, rv, q,
                            "iterator %s of \"%s\" runs over [%s, %s + %s), not over the "
                            "extent %s of dimension %d of %s",
                            it->var->name, q->name, tir_print(ctx, it->dom.min),
                            tir_print(ctx, it->dom.min), tir_print(ctx, it->dom.extent),
                            tir_print(ctx, x->shape[d]), d, x->name);
    }

    /* Q's iterator qit[d] becomes P's store index d. */
    rinline_env env = {x, pst->value, q->niters, IR_NEWN(ctx, const tir_var *, q->niters),
                       IR_NEWN(ctx, const tir_expr *, q->niters)};
    for (int d = 0; d < x->ndim; d++) {
        env.qvars[d] = q->iters[qit[d]].var;
        env.pvals[d] = pst->indices[d];
    }
    tir_mutator m = {.ctx = ctx, .user = &env};
    m.on[TIR_KIND_BUFFER_LOAD] = on_load;
    const tir_stmt *body = tir_mutate_stmt(&m, &qst->base);
    body = (const tir_stmt *)tir_substitute(ctx, body, env.n, env.qvars, env.pvals);
    tir_buffer_region *reads = IR_NEWN(ctx, tir_buffer_region, p->nreads + q->nreads);
    int nr = 0;
    for (int r = 0; r < p->nreads; r++) reads[nr++] = p->reads[r];
    for (int r = 0; r < q->nreads; r++) {
        if (q->reads[r].buffer == x) continue;
        tir_range *rg = IR_NEWN(ctx, tir_range, q->reads[r].ndim);
        for (int d = 0; d < q->reads[r].ndim; d++) {
            rg[d].min = (const tir_expr *)tir_substitute(ctx, q->reads[r].ranges[d].min, env.n,
                                                         env.qvars, env.pvals);
            rg[d].extent = (const tir_expr *)tir_substitute(
                ctx, q->reads[r].ranges[d].extent, env.n, env.qvars, env.pvals);
        }
        reads[nr++] = tir_region_new(ctx, q->reads[r].buffer, q->reads[r].ndim, rg);
    }
    tir_range *wg = IR_NEWN(ctx, tir_range, q->writes[0].ndim);
    for (int d = 0; d < q->writes[0].ndim; d++) {
        wg[d].min = (const tir_expr *)tir_substitute(ctx, q->writes[0].ranges[d].min, env.n,
                                                     env.qvars, env.pvals);
        wg[d].extent = (const tir_expr *)tir_substitute(ctx, q->writes[0].ranges[d].extent,
                                                        env.n, env.qvars, env.pvals);
    }
    tir_buffer_region write = tir_region_new(ctx, q->writes[0].buffer, q->writes[0].ndim, wg);
    tir_block_desc d;
    tir_block_describe(p, &d);
    d.nreads = nr;
    d.reads = reads;
    d.nwrites = 1;
    d.writes = &write;
    d.body = body;
    const tir_block *nb = tir_block_new(ctx, &d);
    const tir_block_realize *pr = s->srefs[pi].realize;

    const tir_block *owner = NULL;
    for (int i = 0; i < s->nsrefs && !owner; i++) {
        const tir_block *o = sch_sref_block(s, i);
        for (int k = 0; o && k < o->nallocs; k++)
            if (o->allocs[k] == x) owner = o;
    }
    const tir_stmt *olds[2] = {sch_sref_stmt(s, sch_removable_root(s, qi)), &pr->base};
    const tir_stmt *news[2] = {
        NULL, tir_block_realize_new(ctx, pr->nvalues, pr->values, pr->predicate, nb)};
    sch_edit_spec e = {.ctx = ctx, .nrepl = 2, .olds = olds, .news = news, .scope = owner,
                       .drop_alloc = x};
    c->func = sch_edit(c, &e);
    sch_retire_block(c, q->name);
    return TIR_OK;
}

tir_status tir_sched_reverse_compute_inline(tir_schedule *s, tir_block_rv block) {
    if (!s) return sch_bad_arg(s, "reverse_compute_inline", "schedule is NULL");
    sch_arg args[1] = {SCH_RV(block)};
    return sch_run(s, SCH_INST_reverse_compute_inline, args, NULL, NULL);
}
