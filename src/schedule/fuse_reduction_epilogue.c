/* fuse_reduction_epilogue.c: fuse an elementwise epilogue into the
 * reduction that feeds it, exactly (the idea of TVM's
 * FuseReductionEpilogue, without its semantic changes).
 *
 * The epilogue's value g is split at the reduction buffer's load into the
 * additive chain around it, temp + c, and the rest h: g = h(temp + c).
 * Only c may enter the reduction, through its init (for a sum, (i0 + c) +
 * sum f = (i0 + sum f) + c); h is never put inside the reduction, since
 * applying max/min/scaling on every step changes the result (TVM's
 * clip([6, -2]) to [-5, 5] gives 5 then 3 instead of 4).  When h is the
 * identity the reduction writes D directly and the epilogue disappears;
 * otherwise the epilogue stays as D = h(acc), run once per element after
 * the reduction, where acc is temp itself or, when temp must keep its
 * values for another reader, a new buffer the reduction also accumulates.
 * A max or min reduction moves nothing into the init.
 */
#include <math.h>
#include <string.h>

#include "sched_internal.h"

typedef enum { RED_SUM, RED_MAX, RED_MIN } red_kind;

/* ------------------------------------------------------------- helpers */

typedef struct {
    tir_visitor v;
    const tir_buffer *buf;
    int loads;
    const tir_buffer_load *load;
    bool any;
} buf_use;

static bool buf_use_pre(tir_visitor *v, const tir_node *n) {
    buf_use *u = (buf_use *)v;
    const tir_buffer_load *ld = tir_as_tir_buffer_load(n);
    if (ld && ld->buffer == u->buf) {
        u->loads++;
        u->load = ld;
    }
    if (n == (const tir_node *)u->buf) u->any = true;
    return true;
}

static buf_use scan_buffer(const void *node, const tir_buffer *buf) {
    buf_use u = {{buf_use_pre, NULL, NULL}, buf, 0, NULL, false};
    if (node) tir_visit(&u.v, node);
    return u;
}

/* Replaces one node (by identity) inside an expression or statement. */
typedef struct {
    const void *old, *nw;
} swap_map;

static const tir_node *swap_fn(tir_mutator *m, const tir_node *n) {
    const swap_map *w = m->user;
    if (n == w->old) return w->nw;
    return tir_mutate_default(m, n);
}

static const tir_expr *swap_expr(tir_ctx *ctx, const tir_expr *e, const void *old,
                                 const void *nw) {
    swap_map w = {old, nw};
    tir_mutator m = {.ctx = ctx, .user = &w};
    for (int k = 0; k < TIR_KIND_COUNT; k++)
        if (tir_kind_is_expr((tir_kind)k)) m.on[k] = swap_fn;
    return tir_mutate_expr(&m, e);
}

/* True when x + e is x for every x: integer 0, or float -0.0 (not +0.0:
 * +0.0 + -0.0 is +0.0, so a sum from +0.0 never ends at -0.0, while one
 * from a -0.0 bias can). */
static bool is_add_identity(const tir_expr *e) {
    const tir_float_imm *f = tir_as_tir_float_imm(e);
    if (f) return f->value == 0 && signbit(f->value);
    return sch_is_const(e, 0);
}

/* True when h (the epilogue's value, with u = temp + c in it) gives one
 * value for u = +0.0 and u = -0.0 alike, and for any NaN: h = max(u, k)
 * with k >= 0 (ReLU) or min(u, k) with k <= 0, k a number.  MAX(a, b) is
 * a > b || b is NaN ? a : b (the interpreter's, the simulator's and
 * codegen's), so max(+-0, k) and max(NaN, k) are k there. */
static bool ignores_zero_sign(const tir_expr *h, const tir_expr *u) {
    const tir_binop *b = tir_as_tir_binop(h);
    if (!b || b->a != u || (b->base.kind != TIR_KIND_MAX && b->base.kind != TIR_KIND_MIN))
        return false;
    const tir_float_imm *k = tir_as_tir_float_imm(b->b);
    if (!k || isnan(k->value)) return false;
    return b->base.kind == TIR_KIND_MAX ? !(0.0 > k->value) : !(0.0 < k->value);
}

static bool is_float_zero(const tir_expr *e) {
    const tir_float_imm *f = tir_as_tir_float_imm(e);
    return f && f->value == 0;
}

static bool region_eq(const tir_buffer_region *a, const tir_buffer_region *b) {
    if (a->buffer != b->buffer || a->ndim != b->ndim) return false;
    for (int d = 0; d < a->ndim; d++)
        if (!tir_struct_equal(a->ranges[d].min, b->ranges[d].min) ||
            !tir_struct_equal(a->ranges[d].extent, b->ranges[d].extent))
            return false;
    return true;
}

/* Appends r to the list unless an equal region is there. */
static void add_region(tir_buffer_region *list, int *n, tir_buffer_region r) {
    for (int i = 0; i < *n; i++)
        if (region_eq(&list[i], &r)) return;
    list[(*n)++] = r;
}

/* The path from e down to target (arena array, e first); false if absent. */
static bool find_path(const tir_expr *e, const tir_expr *target, const tir_expr **path, int *n,
                      int cap) {
    if (*n >= cap) return false;
    path[(*n)++] = e;
    if (e == target) return true;
    const tir_expr *kids[3] = {0};
    const tir_binop *b = tir_as_tir_binop(e);
    if (b) {
        kids[0] = b->a;
        kids[1] = b->b;
    } else if (tir_as_tir_cast(e)) {
        kids[0] = tir_as_tir_cast(e)->value;
    } else if (tir_as_tir_select(e)) {
        kids[0] = tir_as_tir_select(e)->cond;
        kids[1] = tir_as_tir_select(e)->t;
        kids[2] = tir_as_tir_select(e)->f;
    } else if (tir_as_tir_not(e)) {
        kids[0] = tir_as_tir_not(e)->a;
    } else if (tir_as_tir_call(e)) {
        const tir_call *c = tir_as_tir_call(e);
        for (int i = 0; i < c->nargs; i++)
            if (find_path(c->args[i], target, path, n, cap)) return true;
    } else if (tir_as_tir_let(e)) {
        kids[0] = tir_as_tir_let(e)->value;
        kids[1] = tir_as_tir_let(e)->body;
    }
    for (int i = 0; i < 3 && kids[i]; i++)
        if (find_path(kids[i], target, path, n, cap)) return true;
    (*n)--;
    return false;
}

static bool contains_pre(tir_visitor *v, const tir_node *n) {
    buf_use *u = (buf_use *)v;
    if (n == (const tir_node *)u->load) u->any = true;
    return !u->any;
}

/* True when target occurs in e. */
static bool contains(const tir_expr *e, const tir_expr *target) {
    buf_use u = {{contains_pre, NULL, NULL}, NULL, 0, (const tir_buffer_load *)target, false};
    tir_visit(&u.v, e);
    return u.any;
}

/* The start of a negation: -0.0 - x is -x exactly, so temp - x = temp +
 * (-0.0 - x) for every x; +0.0 - x is +0.0, not -0.0, for x = +0.0. */
static const tir_expr *neg_zero(tir_ctx *ctx, tir_dtype t) {
    return tir_dtype_is_float(t) ? tir_float(ctx, t, -0.0) : tir_int(ctx, t, 0);
}

/* u without the temp load: the additive part c of u = temp + c (u is a
 * chain of Add, and Sub with the load on the left); NULL when u is the
 * load itself. */
static const tir_expr *rest(tir_ctx *ctx, const tir_expr *u, const tir_expr *load) {
    if (u == load) return NULL;
    const tir_binop *b = tir_as_tir_binop(u);
    bool in_a = contains(b->a, load);
    if (u->kind == TIR_KIND_ADD) {
        const tir_expr *r = rest(ctx, in_a ? b->a : b->b, load);
        const tir_expr *other = in_a ? b->b : b->a;
        return r ? tir_add(ctx, r, other) : other;
    }
    const tir_expr *r = rest(ctx, b->a, load);
    return tir_sub(ctx, r ? r : neg_zero(ctx, u->dtype), b->b);
}

/* ------------------------------------------------------------ rewriting */

typedef struct {
    const tir_stmt *r_old, *r_new;  /* the reduction's realize */
    const tir_stmt *e_old, *e_new;  /* the epilogue's realize (e_new NULL: drop) */
    const tir_stmt *drop;           /* statement to remove from its sequence */
    const tir_block *alloc_blk;     /* block whose allocations change */
    const tir_buffer *drop_alloc;   /* ... losing this one */
    const tir_buffer *add_alloc;    /* ... gaining this one */
    int hits;
} fuse_env;

static const tir_node *keep(tir_mutator *m, const tir_node *n) {
    (void)m;
    return n;
}

static const tir_node *on_realize(tir_mutator *m, const tir_node *n) {
    fuse_env *e = m->user;
    if (n == (const tir_node *)e->r_old) {
        e->hits++;
        return (const tir_node *)e->r_new;
    }
    if (n == (const tir_node *)e->e_old && e->e_new) {
        e->hits++;
        return (const tir_node *)e->e_new;
    }
    const tir_block_realize *r = (const tir_block_realize *)tir_mutate_default(m, n);
    if (((const tir_block_realize *)n)->block != e->alloc_blk) return (const tir_node *)r;
    tir_block_desc d;
    tir_block_describe(r->block, &d);
    const tir_buffer **al = IR_NEWN(m->ctx, const tir_buffer *, d.nallocs + 1);
    int k = 0;
    for (int i = 0; i < d.nallocs; i++)
        if (d.allocs[i] != e->drop_alloc) al[k++] = d.allocs[i];
    if (e->add_alloc) al[k++] = e->add_alloc;
    d.nallocs = k;
    d.allocs = al;
    return (const tir_node *)tir_block_realize_new(m->ctx, r->nvalues, r->values, r->predicate,
                                                   tir_block_new(m->ctx, &d));
}

static const tir_node *on_seq(tir_mutator *m, const tir_node *n) {
    fuse_env *e = m->user;
    const tir_seq *q = (const tir_seq *)n;
    const tir_stmt **out = IR_NEWN(m->ctx, const tir_stmt *, q->n);
    int k = 0;
    bool changed = false;
    for (int i = 0; i < q->n; i++) {
        if (q->stmts[i] == e->drop) {
            e->hits++;
            changed = true;
            continue;
        }
        out[k] = tir_mutate_stmt(m, q->stmts[i]);
        changed |= out[k] != q->stmts[i];
        k++;
    }
    return changed ? (const tir_node *)tir_seq_new(m->ctx, k, out) : n;
}

/* --------------------------------------------------------------- the primitive */

/* What the precondition checks find, for the rewrite. */
typedef struct {
    int ri, ei;
    const tir_block *R, *E;
    const tir_block_realize *Rr, *Er;
    const tir_buffer *temp, *D;
    const tir_buffer_store *ist, *ust, *est; /* R's init and update, E's store */
    red_kind rk;
    const tir_expr *uload;     /* the update's load of temp */
    const tir_buffer_load *tl; /* the epilogue's load of temp */
    const tir_stmt *drop;      /* the statement that holds E alone */
    int nd;                    /* temp's rank */
    const tir_var **ev;        /* E's iterators ... */
    const tir_expr **rvv;      /* ... and R's spatial iterators they map to */
    bool keep_temp;            /* temp must keep its values */
    const tir_block *alloc_blk; /* the block allocating temp, or NULL */
} fre_plan;

/* The update's value b = op(temp[...], f): the load of temp, or NULL. */
static const tir_expr *update_load(const fre_plan *P, const tir_binop *b) {
    for (int side = 0; side < 2; side++) {
        const tir_expr *acc = side ? b->b : b->a, *other = side ? b->a : b->b;
        const tir_buffer_load *ld = tir_as_tir_buffer_load(acc);
        if (!ld || ld->buffer != P->temp || ld->nidx != P->ust->nidx) continue;
        bool same = true;
        for (int d = 0; d < ld->nidx; d++)
            same &= tir_struct_equal(ld->indices[d], P->ust->indices[d]);
        if (same && !scan_buffer(other, P->temp).any) return acc;
    }
    return NULL;
}

/* 1: the reduction */
static bool is_reduction(fre_plan *P) {
    const tir_block *R = P->R;
    P->temp = R->nwrites == 1 ? R->writes[0].buffer : NULL;
    P->ist = tir_as_tir_buffer_store(R->init);
    P->ust = tir_as_tir_buffer_store(R->body);
    const tir_buffer_store *ist = P->ist, *ust = P->ust;
    bool ok = P->temp && ist && ust && sch_classify_block(R) == SCH_BLOCK_REDUCTION &&
              ist->buffer == P->temp && ust->buffer == P->temp && ist->nidx == ust->nidx;
    for (int d = 0; ok && d < ist->nidx; d++)
        ok = tir_struct_equal(ist->indices[d], ust->indices[d]);
    if (!ok) return false;
    const tir_binop *b = tir_as_tir_binop(ust->value);
    if (!b || (b->base.kind != TIR_KIND_ADD && b->base.kind != TIR_KIND_MAX &&
               b->base.kind != TIR_KIND_MIN))
        return false;
    P->rk = b->base.kind == TIR_KIND_ADD   ? RED_SUM
            : b->base.kind == TIR_KIND_MAX ? RED_MAX
                                           : RED_MIN;
    P->uload = update_load(P, b);
    return P->uload && !scan_buffer(ist->value, P->temp).any;
}

/* Why E's form does not fit (precondition 3), or NULL; sets P->drop. */
static const char *epilogue_form_error(const tir_schedule *s, fre_plan *P, buf_use eu) {
    const tir_block *E = P->E;
    const tir_buffer_store *est = P->est;
    const char *why = NULL;
    if (sch_classify_block(E) != SCH_BLOCK_COMPLETE)
        why = "is not complete (spatial iterators only, no init, reads no buffer it writes)";
    else if (!sch_is_const(P->Er->predicate, 1))
        why = "has a predicate";
    else if (!est || E->nwrites != 1 || E->writes[0].buffer != est->buffer)
        why = "is not a single store to the one buffer it writes";
    else if (est->buffer == P->temp)
        why = "writes the reduction's buffer";
    else if (eu.loads != 1 || scan_buffer(est, P->temp).loads != 1)
        why = "does not load the reduction's buffer exactly once";
    else {
        for (int p = s->srefs[P->ei].parent; p >= 0 && sch_sref_for(s, p);
             p = s->srefs[p].parent)
            if (tir_uses_var(E, sch_sref_for(s, p)->var)) why = "uses a loop variable directly";
    }
    /* The statement that holds E alone must sit in a sequence. */
    P->drop = &P->Er->base;
    int p = s->srefs[P->ei].parent;
    while (p >= 0 && sch_sref_for(s, p) && sch_sref_for(s, p)->body == P->drop) {
        P->drop = &sch_sref_for(s, p)->base;
        p = s->srefs[p].parent;
    }
    if (why) return why;
    const tir_stmt *holder =
        sch_sref_for(s, p) ? sch_sref_for(s, p)->body : sch_sref_block(s, p)->body;
    const tir_seq *q = tir_as_tir_seq(holder);
    bool in = false;
    for (int i = 0; q && i < q->n; i++) in |= q->stmts[i] == P->drop;
    return in ? NULL : "is not an element of a statement sequence (an if or allocation holds it)";
}

/* Why temp's indices do not map E's iterators one to one onto R's spatial
 * ones (precondition 4), or NULL; fills P->ev and P->rvv. */
static const char *index_map_error(tir_ctx *ctx, fre_plan *P) {
    const tir_block *R = P->R, *E = P->E;
    int nd = P->nd = P->temp->ndim;
    int nspatial = 0;
    for (int i = 0; i < R->niters; i++) nspatial += R->iters[i].kind == TIR_ITER_SPATIAL;
    P->ev = IR_NEWN(ctx, const tir_var *, nd);
    P->rvv = IR_NEWN(ctx, const tir_expr *, nd);
    if (E->niters != nd || nspatial != nd) return "the iterator counts differ from temp's rank";
    for (int d = 0; d < nd; d++) {
        const tir_var *a = tir_as_tir_var(P->tl->indices[d]);
        const tir_var *b = tir_as_tir_var(P->ust->indices[d]);
        int ea = -1, rb = -1;
        for (int i = 0; i < E->niters; i++)
            if (a && E->iters[i].var == a) ea = i;
        for (int i = 0; i < R->niters; i++)
            if (b && R->iters[i].var == b && R->iters[i].kind == TIR_ITER_SPATIAL) rb = i;
        for (int e = 0; e < d && ea >= 0 && rb >= 0; e++)
            if (P->ev[e] == a || P->rvv[e] == &b->base) ea = -1;
        if (ea < 0 || rb < 0) return "an index of temp is not a distinct iterator";
        if (!tir_struct_equal(E->iters[ea].dom.min, R->iters[rb].dom.min) ||
            !tir_struct_equal(E->iters[ea].dom.extent, R->iters[rb].dom.extent))
            return "an epilogue iterator's domain differs from the reduction's";
        P->ev[d] = a;
        P->rvv[d] = &b->base;
    }
    return NULL;
}

/* 5: nothing in between (nor R itself) touches the buffers involved. */
static tir_status check_no_intervening(sch_call *c, const fre_plan *P, uint32_t erv) {
    const tir_schedule *s = c->sch;
    const tir_block *R = P->R, *E = P->E;
    for (int j = P->ri + 1; j < P->ei; j++) {
        const tir_block *o = sch_sref_block(s, j);
        if (!o || sch_is_ancestor(s, P->ri, j)) continue;
        const char *bad = NULL;
        for (int w = 0; w < o->nwrites && !bad; w++) {
            const tir_buffer *wb = o->writes[w].buffer;
            if (wb == P->temp || wb == P->D) bad = wb->name;
            for (int k = 0; k < E->nreads && !bad; k++)
                if (E->reads[k].buffer == o->writes[w].buffer) bad = o->writes[w].buffer->name;
        }
        for (int k = 0; k < o->nreads && !bad; k++)
            if (o->reads[k].buffer == P->D) bad = P->D->name;
        if (bad) {
            const void *marks[3] = {R, o, E};
            return sch_fail_marks(c, TIR_ERR_SCHED_INTERVENING_ACCESS, erv, 3, marks,
                                  "block \"%s\", between \"%s\" and \"%s\", accesses %s",
                                  o->name, R->name, E->name, bad);
        }
    }
    if (scan_buffer(R, P->D).any) {
        const void *marks[2] = {R, E};
        return sch_fail_marks(c, TIR_ERR_SCHED_INTERVENING_ACCESS, erv, 2, marks,
                              "block \"%s\" itself accesses %s, which the epilogue writes",
                              R->name, P->D->name);
    }
    return TIR_OK;
}

/* Preconditions 1 to 5 (see schedule.h); fills P. */
static tir_status fre_check(sch_call *c, fre_plan *P) {
    const tir_schedule *s = c->sch;
    uint32_t rrv = c->args[0].rv, erv = c->args[1].rv;
    P->ri = sch_block_sref(c, rrv);
    P->ei = sch_block_sref(c, erv);
    const tir_block *R = P->R = sch_sref_block(s, P->ri), *E = P->E = sch_sref_block(s, P->ei);
    P->Rr = s->srefs[P->ri].realize;
    P->Er = s->srefs[P->ei].realize;
    if (!is_reduction(P))
        return sch_fail(c, TIR_ERR_SCHED_NOT_REDUCTION, rrv, R,
                        "block \"%s\" is not a reduction of the form init: temp[...] = value, "
                        "update: temp[...] = temp[...] + f (or max / min) writing one buffer",
                        R->name);
    /* 2: a later consumer in the same scope */
    bool reads_temp = false;
    for (int i = 0; i < E->nreads; i++) reads_temp |= E->reads[i].buffer == P->temp;
    if (P->ei == P->ri || sch_scope_of(s, P->ei) != sch_scope_of(s, P->ri) || P->ei < P->ri ||
        !reads_temp) {
        const void *marks[2] = {R, E};
        return sch_fail_marks(c, TIR_ERR_SCHED_EPILOGUE_NOT_CONSUMER, erv, 2, marks,
                              "block \"%s\" is not a later block of the same scope reading %s, "
                              "the buffer block \"%s\" reduces into",
                              E->name, P->temp->name, R->name);
    }
    P->est = tir_as_tir_buffer_store(E->body);
    buf_use eu = scan_buffer(P->est ? (const void *)P->est->value : NULL, P->temp);
    const char *why = epilogue_form_error(s, P, eu);
    if (why)
        return sch_fail(c, TIR_ERR_SCHED_EPILOGUE_PATTERN, erv, E, "epilogue block \"%s\" %s",
                        E->name, why);
    P->D = P->est->buffer;
    P->tl = eu.load;
    why = index_map_error(c->ctx, P);
    if (why) {
        const void *marks[2] = {R, E};
        return sch_fail_marks(c, TIR_ERR_SCHED_INDEX_MAP, erv, 2, marks,
                              "blocks \"%s\" and \"%s\" do not map one to one through %s: %s",
                              R->name, E->name, P->temp->name, why);
    }
    return check_no_intervening(c, P, erv);
}

/* Does temp have to keep its values (a parameter, another block uses it,
 * or no block allocates it)? */
static void find_temp_use(const tir_schedule *s, fre_plan *P) {
    const tir_buffer *temp = P->temp;
    bool keep = false;
    for (int i = 0; i < s->func->nparams; i++) keep |= s->func->buffer_map[i] == temp;
    for (int j = 0; j < s->nsrefs && !keep; j++) {
        const tir_block *o = sch_sref_block(s, j);
        if (!o || o == P->R || o == P->E || sch_is_wrapper(s, o)) continue; /* its blocks count */
        for (int k = 0; k < o->nreads; k++) keep |= o->reads[k].buffer == temp;
        for (int k = 0; k < o->nwrites; k++) keep |= o->writes[k].buffer == temp;
    }
    P->alloc_blk = NULL;
    for (int j = 0; j < s->nsrefs && !P->alloc_blk; j++) {
        const tir_block *o = sch_sref_block(s, j);
        for (int k = 0; o && k < o->nallocs; k++)
            if (o->allocs[k] == temp) P->alloc_blk = o;
    }
    P->keep_temp = keep || !P->alloc_blk;
}

/* The split g = h(u), u = temp + c: sets *u; false when g is too deep. */
static bool split_epilogue(tir_ctx *ctx, const fre_plan *P, const tir_expr **u) {
    const tir_expr *g = P->est->value, *load = &P->tl->base;
    enum { CAP = 4096 };
    const tir_expr **path = IR_NEWN(ctx, const tir_expr *, CAP);
    int np = 0;
    if (!find_path(g, load, path, &np, CAP)) return false;
    int k = np - 2;
    if (P->rk == RED_SUM)
        while (k >= 0 && (path[k]->kind == TIR_KIND_ADD ||
                          (path[k]->kind == TIR_KIND_SUB &&
                           ((const tir_binop *)path[k])->a == path[k + 1])))
            k--;
    *u = path[k + 1];
    return true;
}

/* The accumulator the new reduction writes: D itself (identity epilogue),
 * temp, or a new buffer temp_acc. */
typedef struct {
    const tir_buffer *X, *acc_new;
    const tir_expr *const *xidx;
    int nx;
    tir_buffer_region xreg;
} fre_acc;

static fre_acc choose_acc(tir_ctx *ctx, const fre_plan *P, bool identity) {
    fre_acc a = {0};
    if (identity) {
        const tir_buffer_store *est = P->est;
        a.X = P->D;
        const tir_expr **ix = IR_NEWN(ctx, const tir_expr *, est->nidx);
        for (int d = 0; d < est->nidx; d++)
            ix[d] = (const tir_expr *)tir_substitute(ctx, est->indices[d], P->nd, P->ev, P->rvv);
        a.xidx = ix;
        a.nx = est->nidx;
        a.xreg = sch_subst_region(ctx, &P->E->writes[0], P->nd, P->ev, P->rvv);
        return a;
    }
    if (P->keep_temp) {
        tir_buffer_desc bd;
        tir_buffer_describe(P->temp, &bd);
        bd.name = tir_ctx_sprintf(ctx, "%s_acc", P->temp->name);
        a.acc_new = a.X = tir_buffer_new(ctx, &bd);
    } else {
        a.X = P->temp;
    }
    a.xidx = P->ust->indices;
    a.nx = P->ust->nidx;
    a.xreg = P->R->writes[0];
    a.xreg.buffer = a.X;
    return a;
}

/* The new reduction block: it accumulates into X from init_val (and into
 * temp as before when temp keeps its values).  The init is init + c, or c
 * alone where init is the exact identity (-0.0) or, with sign_free (h
 * ignores the sign of a zero), a zero: a sum from c and one from 0 + c,
 * added or fused-multiply-added in any order, are equal or both zeros
 * (they differ only while both are zeros), which h maps to one value.
 * The tiling rule's fused matmul + bias + ReLU kernel then starts from
 * bias[j] itself (4096^3: 127 registers instead of 128). */
static const tir_stmt *new_reduction(tir_ctx *ctx, const fre_plan *P, const fre_acc *a,
                                     const tir_expr *cR, bool sign_free) {
    const tir_block *R = P->R;
    const tir_expr *init_val = P->ist->value;
    if (cR)
        init_val = is_add_identity(init_val) || (sign_free && is_float_zero(init_val))
                       ? cR
                       : tir_add(ctx, init_val, cR);
    const tir_expr *xload = tir_load(ctx, a->X, a->nx, a->xidx);
    const tir_stmt *x_init = tir_store(ctx, a->X, init_val, a->nx, a->xidx);
    const tir_stmt *x_upd =
        tir_store(ctx, a->X, swap_expr(ctx, P->ust->value, P->uload, xload), a->nx, a->xidx);
    tir_block_desc rd;
    tir_block_describe(R, &rd);
    bool dual = P->keep_temp && a->X != P->temp;
    if (dual) {
        const tir_stmt *i2[2] = {R->init, x_init}, *u2[2] = {R->body, x_upd};
        rd.init = tir_seq_new(ctx, 2, i2);
        rd.body = tir_seq_new(ctx, 2, u2);
        tir_buffer_region *w = IR_NEWN(ctx, tir_buffer_region, 2);
        w[0] = R->writes[0];
        w[1] = a->xreg;
        rd.writes = w;
        rd.nwrites = 2;
    } else {
        rd.init = x_init;
        rd.body = x_upd;
        rd.writes = &a->xreg;
        rd.nwrites = 1;
    }
    int nc, nr = 0;
    const tir_buffer_region *creads = sch_load_regions(ctx, cR, &nc);
    tir_buffer_region *reads = IR_NEWN(ctx, tir_buffer_region, R->nreads + nc + 2);
    for (int i = 0; i < nc; i++) add_region(reads, &nr, creads[i]);
    for (int i = 0; i < R->nreads; i++) {
        if (R->reads[i].buffer == P->temp && a->X != P->temp) {
            if (dual) add_region(reads, &nr, R->reads[i]);
            add_region(reads, &nr, a->xreg);
        } else {
            add_region(reads, &nr, R->reads[i]);
        }
    }
    rd.reads = reads;
    rd.nreads = nr;
    return tir_block_realize_new(ctx, P->Rr->nvalues, P->Rr->values, P->Rr->predicate,
                                 tir_block_new(ctx, &rd));
}

/* E' = D = h(X[E's indices]) */
static const tir_stmt *new_epilogue(tir_ctx *ctx, const fre_plan *P, const fre_acc *a,
                                    const tir_expr *u) {
    const tir_expr *xe = tir_load(ctx, a->X, P->tl->nidx, P->tl->indices);
    const tir_expr *hv = swap_expr(ctx, P->est->value, u, xe);
    tir_block_desc ed;
    tir_block_describe(P->E, &ed);
    ed.body = tir_store(ctx, P->D, hv, P->est->nidx, P->est->indices);
    ed.reads = sch_load_regions(ctx, hv, &ed.nreads);
    return tir_block_realize_new(ctx, P->Er->nvalues, P->Er->values, P->Er->predicate,
                                 tir_block_new(ctx, &ed));
}

/* The rewrite: swaps in the new blocks and drops or adds allocations. */
static void fre_rewrite(sch_call *c, const fre_plan *P, const tir_expr *u,
                        const tir_expr *cpart) {
    const tir_schedule *s = c->sch;
    tir_ctx *ctx = c->ctx;
    bool identity = u == P->est->value;
    /* E's iterators -> R's spatial iterators */
    const tir_expr *cR =
        cpart ? (const tir_expr *)tir_substitute(ctx, cpart, P->nd, P->ev, P->rvv) : NULL;
    fre_acc a = choose_acc(ctx, P, identity);
    bool sign_free = !identity && ignores_zero_sign(P->est->value, u);
    fuse_env env = {.r_old = &P->Rr->base, .r_new = new_reduction(ctx, P, &a, cR, sign_free)};
    int want_hits = 1;
    if (identity) {
        env.drop = P->drop;
        want_hits++;
        if (!P->keep_temp) {
            env.alloc_blk = P->alloc_blk;
            env.drop_alloc = P->temp;
        }
    } else {
        env.e_old = &P->Er->base;
        env.e_new = new_epilogue(ctx, P, &a, u);
        want_hits++;
        if (a.acc_new) {
            env.alloc_blk = sch_sref_block(s, sch_scope_of(s, P->ri));
            env.add_alloc = a.acc_new;
        }
    }
    tir_mutator m = {.ctx = ctx, .user = &env};
    for (int kk = 0; kk < TIR_KIND_COUNT; kk++)
        if (tir_kind_is_expr((tir_kind)kk)) m.on[kk] = keep;
    m.on[TIR_KIND_BLOCK_REALIZE] = on_realize;
    m.on[TIR_KIND_SEQ] = on_seq;
    c->func = (const tir_prim_func *)tir_mutate(&m, s->func);
    TIR_ASSERT(env.hits == want_hits);
}

/* 6: the epilogue ran for every element; the fused init runs only with
 * the reduction's first step, so that step must run for every element:
 * a reduce domain that may be empty (K = 0) or a predicate masking
 * elements or their first step (T.where(i % 2 == 0), n > 0) would leave
 * D as it was where the epilogue wrote it. */
static tir_status first_step_everywhere(sch_call *c, const fre_plan *P) {
    const tir_schedule *s = c->sch;
    bool other;
    const tir_expr *nonempty = sch_reduce_nonempty(s, P->ri, &other);
    const char *why = NULL;
    if (nonempty)
        why = tir_ctx_sprintf(c->ctx, "its reduce domain is empty where %s fails",
                              tir_print(c->ctx, nonempty));
    else if (!sch_pred_keeps_writes(s, P->ri))
        why = tir_ctx_sprintf(c->ctx, "its predicate %s masks elements or their first step",
                              tir_print(c->ctx, P->Rr->predicate));
    if (!why) return TIR_OK;
    const void *marks[2] = {P->R, P->E};
    return sch_fail_marks(c, TIR_ERR_SCHED_PREDICATED_PRODUCER, c->args[0].rv, 2, marks,
                          "block \"%s\" may skip elements of %s (%s), which epilogue \"%s\" "
                          "computes from their old values; fused into the init it would not",
                          P->R->name, P->temp->name, why, P->E->name);
}

tir_status sch_prim_fuse_reduction_epilogue(sch_call *c) {
    fre_plan P = {0};
    TIR_TRY(fre_check(c, &P));
    find_temp_use(c->sch, &P);
    const tir_expr *u = NULL;
    if (!split_epilogue(c->ctx, &P, &u))
        return sch_fail(c, TIR_ERR_SCHED_EPILOGUE_PATTERN, c->args[1].rv, P.E,
                        "epilogue block \"%s\" is too deep to analyse", P.E->name);
    const tir_expr *cpart = rest(c->ctx, u, &P.tl->base);
    if (u != P.est->value && !cpart) { /* nothing moves: not traced, and the caller is told */
        c->unchanged = true;
        return TIR_OK;
    }
    TIR_TRY(first_step_everywhere(c, &P));
    fre_rewrite(c, &P, u, cpart);
    return TIR_OK;
}

tir_status tir_sched_fuse_reduction_epilogue(tir_schedule *s, tir_block_rv reduction_block,
                                             tir_block_rv epilogue_block, bool *changed) {
    if (!s) return sch_bad_arg(s, "fuse_reduction_epilogue", "schedule is NULL");
    sch_arg args[2] = {SCH_RV(reduction_block), SCH_RV(epilogue_block)};
    return sch_run_flag(s, SCH_INST_fuse_reduction_epilogue, args, changed);
}
