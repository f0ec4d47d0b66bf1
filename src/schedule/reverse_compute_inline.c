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

/* What the precondition checks find, for the rewrite. */
typedef struct {
    int qi, pi;
    const tir_block *q, *p; /* the consumer and its producer */
    const tir_buffer_store *qst, *pst;
    const tir_buffer *x; /* the buffer between them */
    int *qit;            /* index d of the X load is q's iterator qit[d] */
} rci_plan;

/* 2-3: the consumer is a single complete store. */
static tir_status check_consumer(sch_call *c, uint32_t rv, rci_plan *P) {
    const tir_block *q = P->q;
    if (sch_classify_block(q) != SCH_BLOCK_COMPLETE)
        return sch_fail(c, TIR_ERR_SCHED_BLOCK_NOT_COMPLETE, rv, q,
                        "block \"%s\" is not complete (spatial iterators only, no init, "
                        "reads nothing it writes)",
                        q->name);
    P->qst = tir_as_tir_buffer_store(q->body);
    if (!P->qst || q->nwrites != 1 || q->writes[0].buffer != P->qst->buffer || q->nallocs)
        return sch_fail(c, TIR_ERR_SCHED_NOT_SINGLE_STORE, rv, q,
                        "the body of block \"%s\" must be a single store to the one buffer it "
                        "writes",
                        q->name);
    return TIR_OK;
}

/* 4-5: exactly one produced buffer, one producer in scope sc. */
static tir_status find_producer(sch_call *c, uint32_t rv, int sc, rci_plan *P) {
    const tir_schedule *s = c->sch;
    const tir_block *q = P->q;
    int *all;
    int na = sch_scope_blocks(s, sc, &all);
    P->pi = -1;
    for (int r = 0; r < q->nreads; r++)
        for (int k = 0; k < na; k++) {
            const tir_block *o = sch_sref_block(s, all[k]);
            if (all[k] == P->qi || !sch_region_has(o->nwrites, o->writes, q->reads[r].buffer))
                continue;
            if (P->pi >= 0 && (P->x != q->reads[r].buffer || P->pi != all[k])) {
                const void *marks[2] = {sch_sref_block(s, P->pi), o};
                return sch_fail_marks(c, TIR_ERR_SCHED_MULTIPLE_WRITERS, rv, 2, marks,
                                      "block \"%s\" reads what blocks \"%s\" and \"%s\" write; "
                                      "it needs exactly one producer",
                                      q->name, sch_sref_block(s, P->pi)->name, o->name);
            }
            P->pi = all[k];
            P->x = q->reads[r].buffer;
        }
    if (P->pi < 0)
        return sch_fail(c, TIR_ERR_SCHED_NO_PRODUCER, rv, q,
                        "block \"%s\" has no producer in its scope to inline into", q->name);
    P->p = sch_sref_block(s, P->pi);
    return TIR_OK;
}

/* 6-7: the producer too is a single complete store, and both access X
 * trivially. */
static tir_status check_producer(sch_call *c, uint32_t rv, rci_plan *P) {
    const tir_block *p = P->p, *q = P->q;
    const tir_buffer *x = P->x;
    const tir_buffer_store *pst = P->pst = tir_as_tir_buffer_store(p->body);
    if (sch_classify_block(p) != SCH_BLOCK_COMPLETE || !pst || p->nwrites != 1 ||
        pst->buffer != x || p->nallocs) {
        const void *marks[2] = {p, q};
        return sch_fail_marks(c, TIR_ERR_SCHED_NOT_SINGLE_STORE, rv, 2, marks,
                              "producer \"%s\" must be complete with a body that is a single "
                              "store to %s",
                              p->name, x->name);
    }
    load_finder lf = {{find_pre, NULL, NULL}, x, NULL, false};
    tir_visit(&lf.v, q->body);
    P->qit = IR_NEWN(c->ctx, int, x->ndim + q->niters + 1);
    int *pit = IR_NEWN(c->ctx, int, x->ndim + p->niters + 1);
    if (!lf.first || lf.differ || !permutation(q, lf.first->nidx, lf.first->indices, P->qit) ||
        !permutation(p, pst->nidx, pst->indices, pit)) {
        const void *marks[2] = {p, q};
        return sch_fail_marks(c, TIR_ERR_SCHED_NOT_TRIVIAL_ACCESS, rv, 2, marks,
                              "\"%s\" must store %s and \"%s\" load it at their iterators, "
                              "each once, all of them, and always at the same indices",
                              p->name, x->name, q->name);
    }
    return TIR_OK;
}

/* 8-10: X is internal, read by q alone, and q runs over exactly its shape. */
static tir_status check_buffer(sch_call *c, uint32_t rv, const rci_plan *P) {
    const tir_schedule *s = c->sch;
    const tir_block *q = P->q;
    const tir_buffer *x = P->x;
    if (sch_is_param_buffer(s->func, x))
        return sch_fail(c, TIR_ERR_SCHED_OUTPUT_BUFFER, rv, q,
                        "%s is a parameter of the function and must stay written", x->name);
    for (int i = 0; i < s->nsrefs; i++) { /* a wrapper: its blocks are scanned */
        const tir_block *o = sch_sref_block(s, i);
        if (o && i != P->qi && i != P->pi && !sch_is_wrapper(s, o) &&
            sch_region_has(o->nreads, o->reads, x)) {
            const void *marks[2] = {q, o};
            return sch_fail_marks(c, TIR_ERR_SCHED_NOT_STAGE_PIPELINE, rv, 2, marks,
                                  "%s is also read by block \"%s\", which would lose it",
                                  x->name, o->name);
        }
    }
    for (int d = 0; d < x->ndim; d++) {
        const tir_iter_var *it = &q->iters[P->qit[d]];
        if (!sch_is_const(it->dom.min, 0) || !tir_struct_equal(it->dom.extent, x->shape[d]))
            return sch_fail(c, TIR_ERR_SCHED_DOMAIN_MISMATCH, rv, q,
                            "iterator %s of \"%s\" runs over [%s, %s + %s), not over the "
                            "extent %s of dimension %d of %s",
                            it->var->name, q->name, tir_print(c->ctx, it->dom.min),
                            tir_print(c->ctx, it->dom.min), tir_print(c->ctx, it->dom.extent),
                            tir_print(c->ctx, x->shape[d]), d, x->name);
    }
    return TIR_OK;
}

/* 11: q's work moves to p's place: p must come first, and nothing that
   runs from p's place up to q (p itself included) may read or write what q
   writes, since it would then see q's values, or have its own overwritten
   by q's. */
static tir_status check_order(sch_call *c, uint32_t rv, int sc, const rci_plan *P) {
    const tir_schedule *s = c->sch;
    const tir_block *q = P->q;
    if (P->pi > P->qi)
        return sch_fail(c, TIR_ERR_SCHED_NOT_STAGE_PIPELINE, rv, q,
                        "producer \"%s\" comes after block \"%s\"", P->p->name, q->name);
    /* The outermost statement holding p but not q. */
    int start = P->pi;
    while (s->srefs[start].parent >= 0 && !sch_is_ancestor(s, s->srefs[start].parent, P->qi))
        start = s->srefs[start].parent;
    int *all;
    int na = sch_scope_blocks(s, sc, &all);
    for (int k = 0; k < na; k++) {
        if (all[k] < start || all[k] >= P->qi) continue;
        const tir_block *o = sch_sref_block(s, all[k]);
        for (int w = 0; w < q->nwrites; w++)
            if (sch_region_has(o->nreads, o->reads, q->writes[w].buffer) ||
                sch_region_has(o->nwrites, o->writes, q->writes[w].buffer)) {
                const void *marks[2] = {q, o};
                return sch_fail_marks(c, TIR_ERR_SCHED_NOT_STAGE_PIPELINE, rv, 2, marks,
                                      "block \"%s\" accesses %s, which \"%s\" writes, "
                                      "between the producer's place and its own",
                                      o->name, q->writes[w].buffer->name, q->name);
            }
    }
    return TIR_OK;
}

/* 12: Q's stores move into P under P's predicate, so Q's own may only
   bound its iterators to their domains (which 10 makes X's shape, all of
   which P covers): a condition beyond that, T.where(i % 2 == 0) or n > 0,
   would be dropped and Q's masked stores run. */
static tir_status check_predicate(sch_call *c, uint32_t rv, const rci_plan *P) {
    const tir_schedule *s = c->sch;
    const tir_block_realize *r = s->srefs[P->qi].realize;
    if (!r->predicate) return TIR_OK;
    tir_analyzer *a = tir_analyzer_create(c->ctx);
    sch_bind_ancestors(s, a, s->srefs[P->qi].parent);
    bool bounds = sch_pred_bounds_only(c->ctx, a, r, r->predicate);
    tir_analyzer_destroy(a);
    if (!bounds)
        return sch_fail(c, TIR_ERR_SCHED_PREDICATED_PRODUCER, rv, P->q,
                        "the predicate of block \"%s\", %s, masks stores inside its domain, "
                        "which inlining it into \"%s\" would drop",
                        P->q->name, tir_print(c->ctx, r->predicate), P->p->name);
    return TIR_OK;
}

/* Preconditions 1 to 12 (see schedule.h); fills P. */
static tir_status rci_check(sch_call *c, rci_plan *P) {
    const tir_schedule *s = c->sch;
    uint32_t rv = c->args[0].rv;
    P->qi = sch_block_sref(c, rv);
    P->q = sch_sref_block(s, P->qi);
    int sc = sch_scope_of(s, P->qi);
    if (sc < 0)
        return sch_fail(c, TIR_ERR_SCHED_DIFFERENT_SCOPE, rv, P->q,
                        "the root block cannot be inlined");
    TIR_TRY(check_consumer(c, rv, P));
    TIR_TRY(find_producer(c, rv, sc, P));
    TIR_TRY(check_producer(c, rv, P));
    TIR_TRY(check_buffer(c, rv, P));
    TIR_TRY(check_order(c, rv, sc, P));
    return check_predicate(c, rv, P);
}

/* The producer block rewritten: it stores q's value, with X's loads
 * replaced by its own value, at q's indices in its own iterators. */
static const tir_block *inlined_block(tir_ctx *ctx, const rci_plan *P) {
    const tir_block *p = P->p, *q = P->q;
    const tir_buffer *x = P->x;
    /* Q's iterator qit[d] becomes P's store index d. */
    rinline_env env = {x, P->pst->value, q->niters, IR_NEWN(ctx, const tir_var *, q->niters),
                       IR_NEWN(ctx, const tir_expr *, q->niters)};
    for (int d = 0; d < x->ndim; d++) {
        env.qvars[d] = q->iters[P->qit[d]].var;
        env.pvals[d] = P->pst->indices[d];
    }
    tir_mutator m = {.ctx = ctx, .user = &env};
    m.on[TIR_KIND_BUFFER_LOAD] = on_load;
    const tir_stmt *body = tir_mutate_stmt(&m, &P->qst->base);
    body = (const tir_stmt *)tir_substitute(ctx, body, env.n, env.qvars, env.pvals);
    tir_buffer_region *reads = IR_NEWN(ctx, tir_buffer_region, p->nreads + q->nreads);
    int nr = 0;
    for (int r = 0; r < p->nreads; r++) reads[nr++] = p->reads[r];
    for (int r = 0; r < q->nreads; r++)
        if (q->reads[r].buffer != x)
            reads[nr++] = sch_subst_region(ctx, &q->reads[r], env.n, env.qvars, env.pvals);
    tir_buffer_region write = sch_subst_region(ctx, &q->writes[0], env.n, env.qvars, env.pvals);
    tir_block_desc d;
    tir_block_describe(p, &d);
    d.nreads = nr;
    d.reads = reads;
    d.nwrites = 1;
    d.writes = &write;
    d.body = body;
    return tir_block_new(ctx, &d);
}

tir_status sch_prim_reverse_compute_inline(sch_call *c) {
    rci_plan P = {0};
    TIR_TRY(rci_check(c, &P));
    const tir_schedule *s = c->sch;
    tir_ctx *ctx = c->ctx;
    const tir_block_realize *pr = s->srefs[P.pi].realize;
    const tir_block *owner = NULL;
    for (int i = 0; i < s->nsrefs && !owner; i++) {
        const tir_block *o = sch_sref_block(s, i);
        for (int k = 0; o && k < o->nallocs; k++)
            if (o->allocs[k] == P.x) owner = o;
    }
    const tir_stmt *olds[2] = {sch_sref_stmt(s, sch_removable_root(s, P.qi)), &pr->base};
    const tir_stmt *news[2] = {NULL, tir_block_realize_new(ctx, pr->nvalues, pr->values,
                                                           pr->predicate, inlined_block(ctx, &P))};
    sch_edit_spec e = {.ctx = ctx, .nrepl = 2, .olds = olds, .news = news, .scope = owner,
                       .drop_alloc = P.x};
    c->func = sch_edit(c, &e);
    sch_retire_block(c, P.q->name);
    return TIR_OK;
}

tir_status tir_sched_reverse_compute_inline(tir_schedule *s, tir_block_rv block) {
    if (!s) return sch_bad_arg(s, "reverse_compute_inline", "schedule is NULL");
    sch_arg args[1] = {SCH_RV(block)};
    return sch_run(s, SCH_INST_reverse_compute_inline, args, NULL, NULL);
}
