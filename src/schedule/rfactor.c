/* rfactor.c: factorize a reduction over one of its reduction loops (TVM's
 * RFactor), the schedule half of split-K.
 *
 * Block C reducing into B over loops (..., ko, ..., ki) becomes two
 * blocks.  "C_rf" runs under the original loops (so every loop handle
 * keeps naming a loop of it) and reduces into a new global buffer B_rf,
 * B's shape with ko's extent inserted at factor_axis: ko turns from a
 * reduction loop into a spatial iterator of C_rf indexing B_rf there, and
 * the other reduction loops stay reductions.  C keeps its name and handle
 * and reduces B_rf over a reduce iterator bound to a fresh copy of ko, in
 * a new loop nest right after C_rf's (fresh copies of the loops feeding
 * C's spatial iterators, and of ko).  The partial sums are independent,
 * which is what lets a schedule bind ko to blockIdx.z.
 *
 * Like TVM, the reduce iterators whose bindings use ko are replaced in
 * C_rf by one iterator per loop they use (ko a spatial one), so bindings
 * stay plain loop variables and the body reads the old iterator's value
 * through its binding.  A slice of ko that runs no instance would leave a
 * slice of B_rf unwritten that C then reads, so that is refused (12);
 * where the whole reduce domain may be empty (K = 0), C runs only where it
 * is not (13).
 */
#include <math.h>
#include <string.h>

#include "sched_internal.h"

/* What the precondition checks find, for the rewrite. */
typedef struct {
    uint32_t lrv;
    int li, bi, scope;
    const tir_for *loop; /* the rfactor loop */
    const tir_block *b;
    const tir_block_realize *r;
    int np;               /* loops from the scope down to the block */
    const tir_for **path; /* [np], outermost first */
    const tir_var **pv;   /* [np] */
    char *feeds;          /* [np]: 0 nothing, 'S' spatial, 'R' reduce iterators */
    int kloop;            /* index of the rfactor loop in path */
    const tir_buffer *buf;           /* B */
    const tir_buffer_store *upd;     /* B[idx] = B[idx] op x */
    const tir_expr *init_value;      /* op's identity */
    tir_kind op;
    int axis; /* factor_axis, normalised to [0, ndim] */
    const tir_expr *nonempty; /* the reduce domain is not empty; NULL: always (13) */
} rf_plan;

static const tir_expr *var_expr(const tir_var *v) { return &v->base; }

/* 3, 4: the one block under the loop's nest. */
static tir_status find_block(sch_call *c, rf_plan *P) {
    const tir_schedule *s = c->sch;
    ir_vec rs = {0};
    sch_collect_child_realizes(&P->loop->base, &rs);
    int nunder = rs.n;
    const tir_block_realize *r = nunder == 1 ? rs.items[0] : NULL;
    ir_vec_free(&rs);
    if (!r)
        return sch_fail(c, TIR_ERR_SCHED_RFACTOR_NEST, P->lrv, P->loop,
                        "loop %s holds %d blocks; rfactor needs exactly one", P->loop->var->name,
                        nunder);
    P->bi = sch_find_block(s, r->block->name);
    P->scope = sch_scope_of(s, P->bi);
    int top = sch_top_sref(s, P->bi, P->scope);
    const tir_for *tf = sch_sref_for(s, top);
    sch_collect_child_realizes(&tf->base, &rs);
    nunder = rs.n;
    ir_vec_free(&rs);
    if (nunder != 1)
        return sch_fail(c, TIR_ERR_SCHED_RFACTOR_NEST, P->lrv, tf,
                        "loop %s, the outermost loop above block \"%s\", holds %d blocks; the "
                        "nest of the rfactor loop must hold only the reduction",
                        tf->var->name, r->block->name, nunder);
    P->b = r->block;
    P->r = r;
    if (!P->b->init || sch_classify_block(P->b) != SCH_BLOCK_REDUCTION)
        return sch_fail(c, TIR_ERR_SCHED_NOT_REDUCTION, P->lrv, P->b,
                        "block \"%s\" is not a reduction with an init", P->b->name);
    int np = 0;
    for (int p = s->srefs[P->bi].parent; p != P->scope; p = s->srefs[p].parent) np++;
    P->np = np;
    P->path = IR_NEWN(c->ctx, const tir_for *, np);
    P->pv = IR_NEWN(c->ctx, const tir_var *, np);
    P->feeds = IR_NEWN(c->ctx, char, np);
    int k = np;
    for (int p = s->srefs[P->bi].parent; p != P->scope; p = s->srefs[p].parent) {
        P->path[--k] = sch_sref_for(s, p);
        P->pv[k] = P->path[k]->var;
        if (p == P->li) P->kloop = k;
    }
    return sch_check_blocks_under(c, P->lrv, &tf->base, np, P->pv);
}

/* 8, 9: what each loop of the nest feeds. */
static tir_status check_loops(sch_call *c, rf_plan *P) {
    const tir_block *b = P->b;
    const tir_block_realize *r = P->r;
    for (int k = 0; k < P->np; k++) {
        bool sp = false, rd = false;
        for (int i = 0; i < r->nvalues; i++) {
            if (!tir_uses_var(r->values[i], P->pv[k])) continue;
            if (b->iters[i].kind == TIR_ITER_REDUCE)
                rd = true;
            else
                sp = true;
        }
        P->feeds[k] = sp ? 'S' : rd ? 'R' : 0;
        /* (a loop of extent 0 would give B_rf a dimension of 0) */
        if (k == P->kloop && (sp || !rd || !tir_as_tir_int_imm(P->loop->extent) ||
                              tir_as_tir_int_imm(P->loop->extent)->value < 1))
            return sch_fail(c, TIR_ERR_SCHED_RFACTOR_LOOP, P->lrv, P->loop,
                            "loop %s must have a constant extent of at least 1 and feed "
                            "reduce iterators of block \"%s\" only",
                            P->loop->var->name, b->name);
        if (sp && rd)
            return sch_fail(c, TIR_ERR_SCHED_MIXED_LOOP, P->lrv, P->path[k],
                            "loop %s feeds both spatial and reduce iterators of block \"%s\"",
                            P->pv[k]->name, b->name);
        if (!sp && !rd && !sch_is_const(P->path[k]->extent, 1))
            return sch_fail(c, TIR_ERR_SCHED_MIXED_LOOP, P->lrv, P->path[k],
                            "loop %s feeds no iterator of block \"%s\" but runs more than once",
                            P->pv[k]->name, b->name);
    }
    /* The loops feeding a reduce iterator with the rfactor loop become
       iterators of C_rf: their bounds must be constants. */
    for (int i = 0; i < r->nvalues; i++) {
        if (!tir_uses_var(r->values[i], P->loop->var)) continue;
        for (int k = 0; k < P->np; k++)
            if (tir_uses_var(r->values[i], P->pv[k]) &&
                (!tir_as_tir_int_imm(P->path[k]->min) || !tir_as_tir_int_imm(P->path[k]->extent)))
                return sch_fail(c, TIR_ERR_SCHED_RFACTOR_LOOP, P->lrv, P->path[k],
                                "loop %s feeds reduce iterator %s with the rfactor loop but "
                                "has bounds that are not constants",
                                P->pv[k]->name, b->iters[i].var->name);
    }
    return TIR_OK;
}

/* The identity of the combiner: 0 for +, 1 for *, +inf / the largest
 * value for min, -inf / the smallest for max. */
static bool is_identity(tir_kind op, const tir_expr *v) {
    const tir_float_imm *f = tir_as_tir_float_imm(v);
    const tir_int_imm *n = tir_as_tir_int_imm(v);
    if (!f && !n) return false;
    double x = f ? f->value : (double)n->value;
    tir_dtype t = v->dtype;
    bool is_signed = t.code == TIR_TYPE_INT;
    int64_t imax = is_signed ? (int64_t)((UINT64_C(1) << (t.bits - 1)) - 1)
                             : (t.bits >= 63 ? INT64_MAX : (int64_t)((UINT64_C(1) << t.bits) - 1));
    int64_t imin = is_signed ? -imax - 1 : 0;
    switch (op) {
    case TIR_KIND_ADD: return x == 0;
    case TIR_KIND_MUL: return x == 1;
    case TIR_KIND_MIN: return f ? isinf(x) && x > 0 : n->value == imax;
    case TIR_KIND_MAX: return f ? isinf(x) && x < 0 : n->value == imin;
    default: return false;
    }
}

/* True when the indices are provably the same. */
static bool same_indices(tir_ctx *ctx, int n, const tir_expr *const *x, int m,
                         const tir_expr *const *y) {
    if (n != m) return false;
    tir_analyzer *a = tir_analyzer_create(ctx);
    bool ok = true;
    for (int k = 0; k < n && ok; k++) ok = tir_analyzer_can_prove(a, tir_eq(ctx, x[k], y[k]));
    tir_analyzer_destroy(a);
    return ok;
}

/* 10: B[idx] = B[idx] op x, init B[idx] = identity. */
static tir_status check_reducer(sch_call *c, rf_plan *P) {
    const tir_block *b = P->b;
    const tir_buffer_store *u = tir_as_tir_buffer_store(b->body);
    const tir_buffer_store *in = tir_as_tir_buffer_store(b->init);
    const tir_binop *bo = u ? tir_as_tir_binop(u->value) : NULL;
    bool ok = b->nwrites == 1 && b->nallocs == 0 && u && in && bo &&
              u->buffer == b->writes[0].buffer && in->buffer == u->buffer;
    if (ok) {
        tir_kind k = (tir_kind)bo->base.kind;
        ok = k == TIR_KIND_ADD || k == TIR_KIND_MUL || k == TIR_KIND_MIN || k == TIR_KIND_MAX;
        P->op = k;
    }
    if (ok) {
        const tir_buffer_load *la = tir_as_tir_buffer_load(bo->a);
        const tir_buffer_load *lb = tir_as_tir_buffer_load(bo->b);
        const tir_buffer_load *self = la && la->buffer == u->buffer ? la : lb;
        const tir_expr *x = self == la ? bo->b : bo->a;
        ok = self && self->buffer == u->buffer &&
             same_indices(c->ctx, u->nidx, u->indices, self->nidx, self->indices) &&
             !sch_loads_buffer(x, u->buffer) &&
             same_indices(c->ctx, u->nidx, u->indices, in->nidx, in->indices) &&
             is_identity(P->op, in->value) && !sch_loads_buffer(in->value, u->buffer);
    }
    if (!ok)
        return sch_fail(c, TIR_ERR_SCHED_REDUCER_PATTERN, P->lrv, b,
                        "block \"%s\" is not B[i] = B[i] op x (op one of +, *, min, max; x not "
                        "reading B) with the init B[i] = the identity of op, writing one "
                        "buffer and allocating none",
                        b->name);
    P->buf = u->buffer;
    P->upd = u;
    P->init_value = in->value;
    return TIR_OK;
}

/* 12: with the other reduction loops at their start, each conjunct that
 * uses a reduction loop holds for every value of the rfactor loop. */
static tir_status check_slices(sch_call *c, rf_plan *P) {
    const tir_schedule *s = c->sch;
    tir_ctx *ctx = c->ctx;
    const tir_var **ov = IR_NEWN(ctx, const tir_var *, P->np);
    const tir_expr **nv = IR_NEWN(ctx, const tir_expr *, P->np);
    int n = 0;
    for (int k = 0; k < P->np; k++)
        if (P->feeds[k] == 'R' && k != P->kloop) {
            ov[n] = P->pv[k];
            nv[n++] = P->path[k]->min;
        }
    ir_vec conj = {0};
    sch_conjuncts(P->r->predicate, &conj);
    tir_analyzer *a = tir_analyzer_create(ctx);
    sch_bind_ancestors(s, a, s->srefs[P->bi].parent);
    const tir_expr *bad = NULL;
    for (int j = 0; j < conj.n && !bad; j++) {
        const tir_expr *e = conj.items[j];
        bool red = false;
        for (int k = 0; k < P->np; k++) red |= P->feeds[k] == 'R' && tir_uses_var(e, P->pv[k]);
        if (!red) continue;
        const tir_expr *w = (const tir_expr *)tir_substitute(ctx, e, n, ov, nv);
        if (!tir_analyzer_can_prove(a, w)) bad = e;
    }
    tir_analyzer_destroy(a);
    ir_vec_free(&conj);
    if (bad)
        return sch_fail(c, TIR_ERR_SCHED_RFACTOR_EMPTY_SLICE, P->lrv, P->loop,
                        "cannot prove that every iteration of loop %s runs block \"%s\": the "
                        "predicate conjunct %s may mask them all, leaving a slice of the "
                        "rfactor buffer unwritten",
                        P->loop->var->name, P->b->name, tir_print(ctx, bad));
    return TIR_OK;
}

/* Preconditions 1 to 13 (see schedule.h); fills P. */
static tir_status rf_check(sch_call *c, rf_plan *P) {
    P->lrv = c->args[0].rv;
    P->li = sch_loop_sref(c, P->lrv);
    P->loop = sch_sref_for(c->sch, P->li);
    TIR_TRY(sch_check_serial(c, P->lrv, P->loop, "rfactored"));
    TIR_TRY(sch_check_min_zero(c, P->lrv, P->loop));
    TIR_TRY(find_block(c, P));
    TIR_TRY(check_loops(c, P));
    TIR_TRY(check_reducer(c, P));
    int ndim = P->buf->ndim;
    int64_t ax = c->args[1].i;
    if (ax < -(ndim + 1) || ax > ndim)
        return sch_fail(c, TIR_ERR_SCHED_BAD_AXIS, P->lrv, P->b,
                        "factor_axis %lld is outside [%d, %d] for buffer %s of rank %d",
                        (long long)ax, -(ndim + 1), ndim, P->buf->name, ndim);
    P->axis = (int)(ax < 0 ? ax + ndim + 1 : ax);
    TIR_TRY(check_slices(c, P));
    /* 13: over an empty reduce domain (another reduction loop of extent
       K = 0) the block runs no instance and B keeps its values, but C_rf
       writes nothing and C would reduce its unwritten B_rf: C runs only
       where the domain is not empty, which must be said over parameters */
    bool other;
    P->nonempty = sch_reduce_nonempty(c->sch, P->bi, &other);
    if (other)
        return sch_fail(c, TIR_ERR_SCHED_RFACTOR_EMPTY_SLICE, P->lrv, P->b,
                        "block \"%s\" may run no instance (its reduce domain, %s, may be "
                        "empty and names more than the function's scalar parameters), and "
                        "\"%s\" would then reduce a rfactor buffer nothing wrote",
                        P->b->name, tir_print(c->ctx, P->nonempty), P->b->name);
    return TIR_OK;
}

/* ------------------------------------------------------------- rewrite */

/* idx with e inserted at position axis (n + 1 entries). */
static const tir_expr **insert_index(tir_ctx *ctx, int n, const tir_expr *const *idx, int axis,
                                     const tir_expr *e) {
    const tir_expr **out = IR_NEWN(ctx, const tir_expr *, n + 1);
    for (int k = 0, j = 0; k <= n; k++) out[k] = k == axis ? e : idx[j++];
    return out;
}

static tir_buffer_region insert_range(tir_ctx *ctx, const tir_buffer_region *reg,
                                      const tir_buffer *rfb, int axis, const tir_expr *e) {
    tir_range *rg = IR_NEWN(ctx, tir_range, reg->ndim + 1);
    for (int k = 0, j = 0; k <= reg->ndim; k++)
        rg[k] = k == axis ? (tir_range){e, tir_int(ctx, e->dtype, 1)} : reg->ranges[j++];
    return tir_region_new(ctx, rfb, reg->ndim + 1, rg);
}

/* Accesses of B become accesses of B_rf with the extra index. */
typedef struct {
    const tir_buffer *buf, *rfb;
    int axis;
    const tir_expr *e;
} to_rf;

static const tir_node *rf_load(tir_mutator *m, const tir_node *n) {
    const to_rf *t = m->user;
    const tir_buffer_load *ld = (const tir_buffer_load *)tir_mutate_default(m, n);
    if (ld->buffer != t->buf) return (const tir_node *)ld;
    const tir_expr **idx = insert_index(m->ctx, ld->nidx, ld->indices, t->axis, t->e);
    return (const tir_node *)tir_load(m->ctx, t->rfb, ld->nidx + 1, idx);
}

static const tir_node *rf_store(tir_mutator *m, const tir_node *n) {
    const to_rf *t = m->user;
    const tir_buffer_store *st = (const tir_buffer_store *)tir_mutate_default(m, n);
    if (st->buffer != t->buf) return (const tir_node *)st;
    const tir_expr **idx = insert_index(m->ctx, st->nidx, st->indices, t->axis, t->e);
    return (const tir_node *)tir_store(m->ctx, t->rfb, st->value, st->nidx + 1, idx);
}

static const tir_stmt *retarget(tir_ctx *ctx, const tir_stmt *st, const to_rf *t) {
    tir_mutator m = {.ctx = ctx, .user = (void *)t};
    m.on[TIR_KIND_BUFFER_LOAD] = rf_load;
    m.on[TIR_KIND_BUFFER_STORE] = rf_store;
    return tir_mutate_stmt(&m, st);
}

/* C_rf's iterators and bindings: C's, except that each reduce iterator
 * using the rfactor loop gives way to one iterator per loop it uses (the
 * rfactor loop's spatial); ov/nv map the replaced iterators to their
 * bindings in the new ones. */
typedef struct {
    tir_iter_var *iters;
    const tir_expr **vals;
    int n;
    const tir_var **ov;
    const tir_expr **nv;
    int nmap;
    const tir_var *vko;
} rf_iters;

static void make_rf_iters(tir_ctx *ctx, const rf_plan *P, rf_iters *I) {
    const tir_block *b = P->b;
    int cap = b->niters + P->np;
    I->iters = IR_NEWN(ctx, tir_iter_var, cap);
    I->vals = IR_NEWN(ctx, const tir_expr *, cap);
    I->ov = IR_NEWN(ctx, const tir_var *, cap);
    I->nv = IR_NEWN(ctx, const tir_expr *, cap);
    const tir_var **lv = IR_NEWN(ctx, const tir_var *, P->np); /* loop -> new iterator */
    const tir_var **lov = IR_NEWN(ctx, const tir_var *, P->np);
    const tir_expr **lnv = IR_NEWN(ctx, const tir_expr *, P->np);
    int nl = 0;
    for (int i = 0; i < b->niters; i++) {
        const tir_expr *val = P->r->values[i];
        if (b->iters[i].kind != TIR_ITER_REDUCE || !tir_uses_var(val, P->loop->var)) {
            I->iters[I->n] = b->iters[i];
            I->vals[I->n++] = val;
            continue;
        }
        for (int k = 0; k < P->np; k++) {
            if (lv[k] || !tir_uses_var(val, P->pv[k])) continue;
            const tir_for *f = P->path[k];
            const char *name = tir_ctx_sprintf(ctx, "v%s", f->var->name);
            lv[k] = tir_var_new(ctx, name, f->var->base.dtype);
            tir_iter_kind kind = k == P->kloop ? TIR_ITER_SPATIAL : TIR_ITER_REDUCE;
            I->iters[I->n] = (tir_iter_var){lv[k], {f->min, f->extent}, kind};
            I->vals[I->n++] = var_expr(f->var);
            lov[nl] = f->var;
            lnv[nl++] = var_expr(lv[k]);
        }
        I->ov[I->nmap] = b->iters[i].var;
        I->nv[I->nmap++] = (const tir_expr *)tir_substitute(ctx, val, nl, lov, lnv);
    }
    I->vko = lv[P->kloop];
}

/* The C_rf block realize, in place of C's. */
static const tir_stmt *rf_realize(sch_call *c, const rf_plan *P, const tir_buffer *rfb,
                                  const char *name) {
    tir_ctx *ctx = c->ctx;
    const tir_block *b = P->b;
    rf_iters I = {0};
    make_rf_iters(ctx, P, &I);
    to_rf t = {P->buf, rfb, P->axis, var_expr(I.vko)};
    const tir_stmt *body = (const tir_stmt *)tir_substitute(ctx, b->body, I.nmap, I.ov, I.nv);
    const tir_stmt *init = (const tir_stmt *)tir_substitute(ctx, b->init, I.nmap, I.ov, I.nv);
    tir_buffer_region *reads = IR_NEWN(ctx, tir_buffer_region, b->nreads);
    for (int i = 0; i < b->nreads; i++) {
        reads[i] = sch_subst_region(ctx, &b->reads[i], I.nmap, I.ov, I.nv);
        if (reads[i].buffer == P->buf)
            reads[i] = insert_range(ctx, &reads[i], rfb, P->axis, t.e);
    }
    tir_buffer_region w = sch_subst_region(ctx, &b->writes[0], I.nmap, I.ov, I.nv);
    tir_buffer_region *writes = IR_NEWN(ctx, tir_buffer_region, 1);
    writes[0] = insert_range(ctx, &w, rfb, P->axis, t.e);
    tir_block_desc d = {.name = name, .niters = I.n, .iters = I.iters, .nreads = b->nreads,
                        .reads = reads, .nwrites = 1, .writes = writes,
                        .init = retarget(ctx, init, &t), .body = retarget(ctx, body, &t)};
    return tir_block_realize_new(ctx, I.n, I.vals, P->r->predicate, tir_block_new(ctx, &d));
}

/* The original nest with C's realize replaced by C_rf's. */
static const tir_stmt *rf_nest(tir_ctx *ctx, const rf_plan *P, const tir_stmt *realize) {
    return sch_replace_realize(ctx, &P->path[0]->base, &P->r->base, realize);
}

/* The write-back block C: B[idx] = B[idx] op B_rf[.., vko, ..] over fresh
 * iterators; mp maps the copied loops' variables to their copies. */
static const tir_stmt *wb_realize(tir_ctx *ctx, const rf_plan *P, const tir_buffer *rfb, int nmp,
                                  const tir_var **mov, const tir_expr **mnv,
                                  const tir_expr *pred) {
    const tir_block *b = P->b;
    int cap = b->niters + 1, n = 0;
    tir_iter_var *iters = IR_NEWN(ctx, tir_iter_var, cap);
    const tir_expr **vals = IR_NEWN(ctx, const tir_expr *, cap);
    const tir_var **iov = IR_NEWN(ctx, const tir_var *, cap);
    const tir_expr **inv = IR_NEWN(ctx, const tir_expr *, cap);
    for (int i = 0; i < b->niters; i++) {
        if (b->iters[i].kind == TIR_ITER_REDUCE) continue;
        const tir_var *v = tir_var_new(ctx, b->iters[i].var->name, b->iters[i].var->base.dtype);
        iters[n] = (tir_iter_var){v, b->iters[i].dom, TIR_ITER_SPATIAL};
        vals[n] = (const tir_expr *)tir_substitute(ctx, P->r->values[i], nmp, mov, mnv);
        iov[n] = b->iters[i].var;
        inv[n++] = var_expr(v);
    }
    const tir_for *f = P->loop;
    const tir_var *vko = tir_var_new(ctx, tir_ctx_sprintf(ctx, "v%s", f->var->name),
                                     f->var->base.dtype);
    iters[n] = (tir_iter_var){vko, {f->min, f->extent}, TIR_ITER_REDUCE};
    vals[n] = (const tir_expr *)tir_substitute(ctx, var_expr(f->var), nmp, mov, mnv);
    int nsp = n++;
    const tir_buffer_store *u = P->upd;
    const tir_expr **idx = IR_NEWN(ctx, const tir_expr *, u->nidx);
    for (int k = 0; k < u->nidx; k++)
        idx[k] = (const tir_expr *)tir_substitute(ctx, u->indices[k], nsp, iov, inv);
    const tir_expr **ridx = insert_index(ctx, u->nidx, idx, P->axis, var_expr(vko));
    const tir_expr *sum = tir_binop_new(ctx, P->op, tir_load(ctx, P->buf, u->nidx, idx),
                                        tir_load(ctx, rfb, u->nidx + 1, ridx));
    tir_range *rr = IR_NEWN(ctx, tir_range, u->nidx + 1);
    for (int k = 0; k <= u->nidx; k++) rr[k] = (tir_range){ridx[k], tir_int(ctx, ridx[k]->dtype, 1)};
    tir_buffer_region *reads = IR_NEWN(ctx, tir_buffer_region, 1);
    reads[0] = tir_region_new(ctx, rfb, u->nidx + 1, rr);
    tir_buffer_region *writes = IR_NEWN(ctx, tir_buffer_region, 1);
    writes[0] = sch_subst_region(ctx, &b->writes[0], nsp, iov, inv);
    tir_block_desc d = {.name = b->name, .niters = n, .iters = iters, .nreads = 1,
                        .reads = reads, .nwrites = 1, .writes = writes,
                        .init = tir_store(ctx, P->buf, P->init_value, u->nidx, idx),
                        .body = tir_store(ctx, P->buf, sum, u->nidx, idx),
                        .nannots = b->nannots, .annots = b->annots};
    return tir_block_realize_new(ctx, n, vals, pred, tir_block_new(ctx, &d));
}

/* The write-back nest: fresh copies of the loops feeding spatial
 * iterators and of the rfactor loop, with the predicate's conjuncts over
 * only those loops, and the reduce domain's non-emptiness (13). */
static const tir_stmt *wb_nest(tir_ctx *ctx, const rf_plan *P, const tir_buffer *rfb) {
    int np = P->np, nmp = 0;
    const tir_var **mov = IR_NEWN(ctx, const tir_var *, np);
    const tir_expr **mnv = IR_NEWN(ctx, const tir_expr *, np);
    const tir_var **nl = IR_NEWN(ctx, const tir_var *, np);
    for (int k = 0; k < np; k++)
        if (P->feeds[k] == 'S' || k == P->kloop) {
            nl[k] = tir_var_new(ctx, P->pv[k]->name, P->pv[k]->base.dtype);
            mov[nmp] = P->pv[k];
            mnv[nmp++] = var_expr(nl[k]);
        }
    ir_vec conj = {0};
    sch_conjuncts(P->r->predicate, &conj);
    const tir_expr *pred = NULL;
    for (int j = 0; j < conj.n; j++) {
        bool dropped = false;
        for (int k = 0; k < np; k++) dropped |= !nl[k] && tir_uses_var(conj.items[j], P->pv[k]);
        if (dropped) continue;
        const tir_expr *e = (const tir_expr *)tir_substitute(ctx, conj.items[j], nmp, mov, mnv);
        pred = pred ? tir_and(ctx, pred, e) : e;
    }
    ir_vec_free(&conj);
    if (P->nonempty) pred = pred ? tir_and(ctx, P->nonempty, pred) : P->nonempty;
    const tir_stmt *nest = wb_realize(ctx, P, rfb, nmp, mov, mnv, pred);
    for (int k = np - 1; k >= 0; k--) {
        if (!nl[k]) continue;
        const tir_for *f = P->path[k];
        nest = tir_for_new(ctx, nl[k], (const tir_expr *)tir_substitute(ctx, f->min, nmp, mov, mnv),
                           (const tir_expr *)tir_substitute(ctx, f->extent, nmp, mov, mnv),
                           f->kind, f->thread_tag, 0, NULL, nest);
    }
    return nest;
}

/* B_rf: B's shape with the rfactor loop's extent at factor_axis. */
static const tir_buffer *rf_buffer(tir_ctx *ctx, const rf_plan *P) {
    const tir_buffer *b = P->buf;
    const tir_expr **shape = insert_index(ctx, b->ndim, b->shape, P->axis, P->loop->extent);
    tir_buffer_desc d = {.name = tir_ctx_sprintf(ctx, "%s_rf", b->name), .dtype = b->dtype,
                         .ndim = b->ndim + 1, .shape = shape, .scope = TIR_SCOPE_GLOBAL};
    return tir_buffer_new(ctx, &d);
}

tir_status sch_prim_rfactor(sch_call *c) {
    rf_plan P = {0};
    TIR_TRY(rf_check(c, &P));
    tir_ctx *ctx = c->ctx;
    const tir_buffer *rfb = rf_buffer(ctx, &P);
    char base[512];
    snprintf(base, sizeof base, "%s_rf", P.b->name);
    const char *name = sch_unique_block_name(c->sch, base);
    const tir_stmt *both[2] = {rf_nest(ctx, &P, rf_realize(c, &P, rfb, name)),
                               wb_nest(ctx, &P, rfb)};
    const tir_stmt *old = &P.path[0]->base, *nw = tir_seq_new(ctx, 2, both);
    sch_edit_spec e = {.ctx = ctx, .nrepl = 1, .olds = &old, .news = &nw,
                       .scope = sch_sref_block(c->sch, P.scope), .add_alloc = rfb};
    c->func = sch_edit(c, &e);
    sch_out_block(c, name);
    return TIR_OK;
}

tir_status tir_sched_rfactor(tir_schedule *s, tir_loop_rv loop, int factor_axis,
                             tir_block_rv *out) {
    if (!s || !out) return sch_bad_arg(s, "rfactor", "out is NULL");
    sch_arg args[2] = {SCH_RV(loop), {.i = factor_axis}};
    const uint32_t *ids;
    int n;
    TIR_TRY(sch_run(s, SCH_INST_rfactor, args, &ids, &n));
    *out = sch_block_rv(s, ids[0]);
    return TIR_OK;
}
