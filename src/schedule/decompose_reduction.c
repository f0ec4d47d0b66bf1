/* decompose_reduction.c: move a reduction's init into its own block
 * before a loop (TVM's DecomposeReduction).
 *
 * The init block gets a copy of the loops, from the given loop down, that
 * feed the reduction's spatial iterators, with fresh loop and iterator
 * variables (a variable is defined once in a function).  Predicate
 * conjuncts go with it (copying the loops they use), except those over
 * nothing but reduction-only loops below the decomposition point: they
 * restrict which reduction steps run, not which elements exist.  A copied loop that also
 * feeds a reduce iterator (fused spatial and reduce loops) just repeats
 * the same init store, which is harmless.  Repeated update instances are
 * not: the loops from the given one down must run each instance once.
 */
#include <string.h>

#include "sched_internal.h"

static void conjuncts(const tir_expr *e, ir_vec *out) {
    if (e->kind == TIR_KIND_AND) {
        const tir_binop *b = (const tir_binop *)e;
        conjuncts(b->a, out);
        conjuncts(b->b, out);
        return;
    }
    if (!sch_is_const(e, 1)) ir_vec_push(out, e);
}

/* Point regions of the loads in a statement, one per distinct access. */
typedef struct {
    tir_visitor v;
    ir_vec loads;
} loads_state;

static bool loads_pre(tir_visitor *v, const tir_node *n) {
    loads_state *l = (loads_state *)v;
    if (n->kind == TIR_KIND_BUFFER_LOAD) {
        for (int i = 0; i < l->loads.n; i++)
            if (tir_struct_equal(l->loads.items[i], n)) return true;
        ir_vec_push(&l->loads, n);
    }
    return true;
}

static tir_buffer_region *load_regions(tir_ctx *ctx, const void *node, int *n) {
    loads_state l = {{loads_pre, NULL, NULL}, {0}};
    tir_visit(&l.v, node);
    tir_buffer_region *r = IR_NEWN(ctx, tir_buffer_region, l.loads.n);
    for (int i = 0; i < l.loads.n; i++) {
        const tir_buffer_load *ld = l.loads.items[i];
        tir_range *rg = IR_NEWN(ctx, tir_range, ld->nidx);
        for (int d = 0; d < ld->nidx; d++)
            rg[d] = (tir_range){ld->indices[d], tir_int(ctx, ld->indices[d]->dtype, 1)};
        r[i] = tir_region_new(ctx, ld->buffer, ld->nidx, rg);
    }
    *n = l.loads.n;
    ir_vec_free(&l.loads);
    return r;
}

/* Whether a predicate conjunct guards the init too: unless every variable
 * in it is a path loop the init does not copy (a guard of the reduction's
 * own split loops), it may tie a loop above to the copied ones (a guard
 * j_1_0 * 5 + j_1_1 < 1 across the decomposition loop) and must go with
 * the init, or the init would run again where no update follows. */
typedef struct {
    tir_visitor v;
    int np;
    const tir_var *const *pv;
    const bool *rep;
    bool needed;
} conj_state;

static bool conj_pre(tir_visitor *v, const tir_node *n) {
    conj_state *c = (conj_state *)v;
    const tir_var *x = tir_as_tir_var(n);
    if (x) {
        bool dropped = false;
        for (int k = 0; k < c->np; k++)
            if (c->pv[k] == x) dropped = !c->rep[k];
        if (!dropped) c->needed = true;
    }
    return !c->needed;
}

static bool needs_init(const tir_expr *e, int np, const tir_var *const *pv, const bool *rep) {
    conj_state c = {{conj_pre, NULL, NULL}, np, pv, rep, false};
    tir_visit(&c.v, e);
    return c.needed;
}

typedef struct {
    tir_visitor v;
    const tir_buffer *buf;
    bool found;
} buf_state;

static bool buf_pre(tir_visitor *v, const tir_node *n) {
    buf_state *b = (buf_state *)v;
    const tir_buffer_load *ld = tir_as_tir_buffer_load(n);
    if (ld && ld->buffer == b->buf) b->found = true;
    return !b->found;
}

/* True when st loads buf. */
static bool body_loads(const tir_stmt *st, const tir_buffer *buf) {
    buf_state b = {{buf_pre, NULL, NULL}, buf, false};
    tir_visit(&b.v, st);
    return b.found;
}

typedef struct {
    const tir_stmt *old, *nw;
} swap_one;

static const tir_node *swap_realize(tir_mutator *m, const tir_node *n) {
    const swap_one *w = m->user;
    if (n == (const tir_node *)w->old) return (const tir_node *)w->nw;
    return tir_mutate_default(m, n);
}
static const tir_node *keep(tir_mutator *m, const tir_node *n) {
    (void)m;
    return n;
}

tir_status sch_prim_decompose_reduction(sch_call *c) {
    const tir_schedule *s = c->sch;
    tir_ctx *ctx = c->ctx;
    uint32_t brv = c->args[0].rv, lrv = c->args[1].rv;
    int bi = sch_block_sref(c, brv), li = sch_loop_sref(c, lrv);
    const tir_block *b = sch_sref_block(s, bi);
    const tir_block_realize *r = s->srefs[bi].realize;
    const tir_for *loop = sch_sref_for(s, li);

    if (!b->init || sch_classify_block(b) != SCH_BLOCK_REDUCTION)
        return sch_fail(c, TIR_ERR_SCHED_NOT_REDUCTION, brv, b,
                        "block \"%s\" is not a reduction with an init (it needs an init, a "
                        "reduce iterator, and reduce iterators must not index what it writes)",
                        b->name);
    if (!sch_is_ancestor(s, li, bi) || sch_scope_of(s, li) != sch_scope_of(s, bi)) {
        const void *marks[2] = {loop, b};
        return sch_fail_marks(c, TIR_ERR_SCHED_NOT_ANCESTOR, lrv, 2, marks,
                              "loop %s does not enclose block \"%s\" in the same scope",
                              loop->var->name, b->name);
    }
    /* The loops from `loop` down to the block, outermost first. */
    int np = 0;
    for (int p = s->srefs[bi].parent; p != li; p = s->srefs[p].parent) np++;
    np++;
    const tir_for **path = IR_NEWN(ctx, const tir_for *, np);
    {
        int k = np;
        for (int p = s->srefs[bi].parent;; p = s->srefs[p].parent) {
            path[--k] = sch_sref_for(s, p);
            if (p == li) break;
        }
    }
    /* 3: no reduction loop above `loop`. */
    for (int p = s->srefs[li].parent; p >= 0 && sch_sref_for(s, p); p = s->srefs[p].parent) {
        const tir_for *f = sch_sref_for(s, p);
        for (int k = 0; k < r->nvalues; k++)
            if (b->iters[k].kind == TIR_ITER_REDUCE && tir_uses_var(r->values[k], f->var))
                return sch_fail(c, TIR_ERR_SCHED_LOOP_HEIGHT, lrv, f,
                                "loop %s feeds reduce iterator %s of block \"%s\" but lies "
                                "above %s; the init would run again on each of its iterations",
                                f->var->name, b->iters[k].var->name, b->name, loop->var->name);
    }
    const tir_var **pv = IR_NEWN(ctx, const tir_var *, np);
    for (int k = 0; k < np; k++) pv[k] = path[k]->var;
    TIR_TRY(sch_check_blocks_under(c, lrv, &loop->base, np, pv));
    /* 7: with the init out of the block, an instance run twice would
       accumulate twice (compute_at recomputes a block over overlapping
       regions in successive iterations of the loops above it). */
    {
        tir_analyzer *a = tir_analyzer_new(ctx);
        sch_bind_ancestors(s, a, s->srefs[li].parent);
        bool once = sch_runs_once(s, a, bi, s->srefs[li].parent);
        tir_analyzer_free(a);
        if (!once)
            return sch_fail(c, TIR_ERR_SCHED_REPEATED_INSTANCES, lrv, loop,
                            "cannot prove that loop %s and the loops inside it run each "
                            "instance of block \"%s\" once (each loop of extent above 1 "
                            "must feed one iterator, with the dense strides split and fuse "
                            "make): a repeated instance would accumulate twice without its "
                            "init",
                            loop->var->name, b->name);
    }

    /* Which path loops the init needs: those of spatial bindings, closed
       over predicate conjuncts and loop ranges that mention them. */
    bool *rep = IR_NEWN(ctx, bool, np);
    for (int k = 0; k < np; k++)
        for (int i = 0; i < r->nvalues; i++)
            if (b->iters[i].kind != TIR_ITER_REDUCE && tir_uses_var(r->values[i], pv[k]))
                rep[k] = true;
    ir_vec conj = {0};
    conjuncts(r->predicate, &conj);
    for (bool changed = true; changed;) {
        changed = false;
        for (int j = 0; j < conj.n; j++) {
            if (!needs_init(conj.items[j], np, pv, rep)) continue;
            for (int k = 0; k < np; k++)
                if (!rep[k] && tir_uses_var(conj.items[j], pv[k])) rep[k] = changed = true;
        }
        for (int k = 0; k < np; k++) {
            if (!rep[k]) continue;
            for (int j = 0; j < np; j++)
                if (!rep[j] && (tir_uses_var(path[k]->min, pv[j]) ||
                                tir_uses_var(path[k]->extent, pv[j])))
                    rep[j] = changed = true;
        }
    }
    /* Fresh loop variables. */
    const tir_var **ov = IR_NEWN(ctx, const tir_var *, np + b->niters);
    const tir_expr **nv = IR_NEWN(ctx, const tir_expr *, np + b->niters);
    const tir_var **newloop = IR_NEWN(ctx, const tir_var *, np);
    int nmap = 0;
    for (int k = 0; k < np; k++)
        if (rep[k]) {
            newloop[k] = tir_var_new(ctx, pv[k]->name, pv[k]->base.dtype);
            ov[nmap] = pv[k];
            nv[nmap++] = &newloop[k]->base;
        }
    int nloopmap = nmap;
    const tir_expr *pred = NULL;
    for (int j = 0; j < conj.n; j++) {
        if (!needs_init(conj.items[j], np, pv, rep)) continue;
        const tir_expr *e = (const tir_expr *)tir_substitute(ctx, conj.items[j], nloopmap, ov, nv);
        pred = pred ? tir_and(ctx, pred, e) : e;
    }
    ir_vec_free(&conj);

    /* The init block: spatial iterators only, fresh variables. */
    tir_iter_var *iters = IR_NEWN(ctx, tir_iter_var, b->niters);
    const tir_expr **vals = IR_NEWN(ctx, const tir_expr *, b->niters);
    int ni = 0;
    for (int i = 0; i < b->niters; i++) {
        if (b->iters[i].kind == TIR_ITER_REDUCE) continue;
        const tir_var *v = tir_var_new(ctx, b->iters[i].var->name, b->iters[i].var->base.dtype);
        iters[ni] = (tir_iter_var){v, b->iters[i].dom, TIR_ITER_SPATIAL};
        vals[ni++] = (const tir_expr *)tir_substitute(ctx, r->values[i], nloopmap, ov, nv);
        ov[nmap] = b->iters[i].var;
        nv[nmap++] = &v->base;
    }
    const tir_var **iov = ov + nloopmap;
    const tir_expr **inv = nv + nloopmap;
    int nimap = nmap - nloopmap;
    const tir_stmt *ibody = (const tir_stmt *)tir_substitute(ctx, b->init, nimap, iov, inv);
    tir_buffer_region *writes = IR_NEWN(ctx, tir_buffer_region, b->nwrites);
    for (int w = 0; w < b->nwrites; w++) {
        tir_range *rg = IR_NEWN(ctx, tir_range, b->writes[w].ndim);
        for (int d = 0; d < b->writes[w].ndim; d++) {
            const tir_range *o = &b->writes[w].ranges[d];
            rg[d] = (tir_range){
                (const tir_expr *)tir_substitute(ctx, o->min, nimap, iov, inv),
                (const tir_expr *)tir_substitute(ctx, o->extent, nimap, iov, inv)};
        }
        writes[w] = tir_region_new(ctx, b->writes[w].buffer, b->writes[w].ndim, rg);
    }
    int nreads;
    tir_buffer_region *reads = load_regions(ctx, ibody, &nreads);
    char base[512];
    snprintf(base, sizeof base, "%s_init", b->name);
    const char *iname = sch_unique_block_name(s, base);
    tir_block_desc d = {.name = iname, .niters = ni, .iters = iters, .nreads = nreads,
                        .reads = reads, .nwrites = b->nwrites, .writes = writes,
                        .body = ibody};
    const tir_stmt *nest = tir_block_realize_new(ctx, ni, vals, pred, tir_block_new(ctx, &d));
    for (int k = np - 1; k >= 0; k--) {
        if (!rep[k]) continue;
        const tir_for *f = path[k];
        nest = tir_for_new(ctx, newloop[k],
                           (const tir_expr *)tir_substitute(ctx, f->min, nloopmap, ov, nv),
                           (const tir_expr *)tir_substitute(ctx, f->extent, nloopmap, ov, nv),
                           f->kind, f->thread_tag, 0, NULL, nest);
    }

    /* The update block: the same block without its init. */
    tir_block_desc ud;
    tir_block_describe(b, &ud);
    ud.init = NULL;
    /* Reads only the init made (a bias after fuse_reduction_epilogue) go. */
    tir_buffer_region *ureads = IR_NEWN(ctx, tir_buffer_region, b->nreads);
    ud.nreads = 0;
    for (int i = 0; i < b->nreads; i++) {
        bool used = false;
        for (int w = 0; w < b->nwrites; w++) used |= b->writes[w].buffer == b->reads[i].buffer;
        used |= body_loads(b->body, b->reads[i].buffer);
        if (used) ureads[ud.nreads++] = b->reads[i];
    }
    ud.reads = ureads;
    swap_one w = {&r->base, tir_block_realize_new(ctx, r->nvalues, r->values, r->predicate,
                                                  tir_block_new(ctx, &ud))};
    tir_mutator m = {.ctx = ctx, .user = &w};
    for (int k = 0; k < TIR_KIND_COUNT; k++)
        if (tir_kind_is_expr((tir_kind)k)) m.on[k] = keep;
    m.on[TIR_KIND_BLOCK_REALIZE] = swap_realize;
    const tir_stmt *nloop = tir_mutate_stmt(&m, &loop->base);
    const tir_stmt *both[2] = {nest, nloop};
    const tir_stmt *o[1] = {&loop->base}, *n[1] = {tir_seq_new(ctx, 2, both)};
    c->func = sch_replace(c, 1, o, n);
    sch_out_block(c, iname);
    return TIR_OK;
}

tir_status tir_sched_decompose_reduction(tir_schedule *s, tir_block_rv block, tir_loop_rv loop,
                                         tir_block_rv *out) {
    if (!s || !out) return sch_bad_arg(s, "decompose_reduction", "out is NULL");
    sch_arg args[2] = {SCH_RV(block), SCH_RV(loop)};
    const uint32_t *ids;
    int n;
    TIR_TRY(sch_run(s, SCH_INST_decompose_reduction, args, &ids, &n));
    *out = sch_block_rv(s, ids[0]);
    return TIR_OK;
}
