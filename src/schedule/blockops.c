/* blockops.c: helpers of the primitives that create, move and remove
 * blocks (cache_read/write, compute_at, reverse_compute_at, the inlines).
 *
 * Those primitives reason about the blocks of one scope (the blocks whose
 * nearest enclosing block is the same) and about the scope's top-level
 * statements, which is where TVM's stage pipeline lives: a buffer's writer
 * must come before its readers.  The one editing pass (sch_edit) removes a
 * statement (and the loops it leaves empty), replaces statements, inserts
 * statements next to anchors and changes a scope block's allocations, all
 * at once, so a primitive builds its result from the current function in
 * a single rewrite.
 */
#include <string.h>

#include "sched_internal.h"

bool sch_region_has(int n, const tir_buffer_region *rs, const tir_buffer *buf) {
    for (int i = 0; i < n; i++)
        if (rs[i].buffer == buf) return true;
    return false;
}

tir_buffer_region sch_subst_region(tir_ctx *ctx, const tir_buffer_region *r, int n,
                                   const tir_var *const *vars, const tir_expr *const *vals) {
    tir_range *rg = IR_NEWN(ctx, tir_range, r->ndim);
    for (int d = 0; d < r->ndim; d++)
        rg[d] = (tir_range){
            (const tir_expr *)tir_substitute(ctx, r->ranges[d].min, n, vars, vals),
            (const tir_expr *)tir_substitute(ctx, r->ranges[d].extent, n, vars, vals)};
    return tir_region_new(ctx, r->buffer, r->ndim, rg);
}

/* Distinct buffer loads in a node, in visit order. */
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

tir_buffer_region *sch_load_regions(tir_ctx *ctx, const void *node, int *n) {
    loads_state l = {{loads_pre, NULL, NULL}, {0}};
    if (node) tir_visit(&l.v, node);
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

int sch_scope_blocks(const tir_schedule *s, int scope, int **out) {
    int n = 0;
    for (int i = 0; i < s->nsrefs; i++)
        if (sch_sref_block(s, i) && i != scope && sch_scope_of(s, i) == scope) n++;
    int *v = IR_NEWN(s->ctx, int, n);
    n = 0;
    for (int i = 0; i < s->nsrefs; i++)
        if (sch_sref_block(s, i) && i != scope && sch_scope_of(s, i) == scope) v[n++] = i;
    *out = v;
    return n;
}

int sch_top_sref(const tir_schedule *s, int i, int scope) {
    while (s->srefs[i].parent != scope) i = s->srefs[i].parent;
    return i;
}

int sch_child_index(const tir_stmt *body, const tir_stmt *st) {
    const tir_seq *q = tir_as_tir_seq(body);
    if (!q) return body == st ? 0 : -1;
    for (int i = 0; i < q->n; i++)
        if (q->stmts[i] == st) return i;
    return -1;
}

int sch_num_children(const tir_stmt *body) {
    const tir_seq *q = tir_as_tir_seq(body);
    return q ? q->n : 1;
}

const tir_stmt *sch_child_at(const tir_stmt *body, int i) {
    const tir_seq *q = tir_as_tir_seq(body);
    return q ? q->stmts[i] : body;
}

int sch_child_holding(const tir_schedule *s, int loop_or_scope, int i) {
    while (s->srefs[i].parent != loop_or_scope) {
        i = s->srefs[i].parent;
        if (i < 0) return -1;
    }
    const tir_stmt *body = sch_sref_for(s, loop_or_scope)
                               ? sch_sref_for(s, loop_or_scope)->body
                               : sch_sref_block(s, loop_or_scope)->body;
    return sch_child_index(body, sch_sref_stmt(s, i));
}

int sch_removable_root(const tir_schedule *s, int bi) {
    int top = bi;
    for (int p = s->srefs[bi].parent; p >= 0 && sch_sref_for(s, p); p = s->srefs[p].parent) {
        /* The loop's body must be exactly the statement we would remove. */
        if (sch_sref_for(s, p)->body != sch_sref_stmt(s, top)) break;
        top = p;
    }
    return top;
}

/* ------------------------------------------------------------- editing */

static const tir_stmt *edit(const sch_edit_spec *e, const tir_stmt *st);

static const tir_block *edit_block(const sch_edit_spec *e, const tir_block *b) {
    const tir_stmt *init = b->init ? edit(e, b->init) : NULL;
    const tir_stmt *body = edit(e, b->body);
    if (!body) body = tir_evaluate_new(e->ctx, tir_i32(e->ctx, 0));
    bool scope = b == e->scope;
    if (init == b->init && body == b->body && !scope) return b;
    tir_block_desc d;
    tir_block_describe(b, &d);
    d.init = init;
    d.body = body;
    if (scope) {
        const tir_buffer **allocs = IR_NEWN(e->ctx, const tir_buffer *, b->nallocs + 1);
        int n = 0;
        for (int i = 0; i < b->nallocs; i++)
            if (b->allocs[i] != e->drop_alloc) allocs[n++] = b->allocs[i];
        if (e->add_alloc) allocs[n++] = e->add_alloc;
        d.nallocs = n;
        d.allocs = allocs;
    }
    return tir_block_new(e->ctx, &d);
}

static const tir_stmt *edit(const sch_edit_spec *e, const tir_stmt *st) {
    tir_ctx *ctx = e->ctx;
    const tir_stmt *out = st;
    for (int i = 0; i < e->nrepl; i++)
        if (e->olds[i] == st) {
            out = e->news[i];
            goto inserts;
        }
    switch ((tir_kind)st->kind) {
    case TIR_KIND_FOR: {
        const tir_for *f = (const tir_for *)st;
        const tir_stmt *body = edit(e, f->body);
        if (!body) return NULL;
        if (body != f->body)
            out = tir_for_new(ctx, f->var, f->min, f->extent, f->kind, f->thread_tag,
                              f->nannots, f->annots, body);
        break;
    }
    case TIR_KIND_SEQ: {
        const tir_seq *q = (const tir_seq *)st;
        const tir_stmt **v = IR_NEWN(ctx, const tir_stmt *, q->n);
        bool changed = false;
        int n = 0;
        for (int i = 0; i < q->n; i++) {
            const tir_stmt *x = edit(e, q->stmts[i]);
            changed |= x != q->stmts[i];
            if (x) v[n++] = x;
        }
        if (n == 0) return NULL;
        if (changed) out = tir_seq_new(ctx, n, v);
        break;
    }
    case TIR_KIND_BLOCK_REALIZE: {
        const tir_block_realize *r = (const tir_block_realize *)st;
        const tir_block *b = edit_block(e, r->block);
        if (b != r->block)
            out = tir_block_realize_new(ctx, r->nvalues, r->values, r->predicate, b);
        break;
    }
    case TIR_KIND_IF: {
        const tir_if *x = (const tir_if *)st;
        const tir_stmt *t = edit(e, x->then_s);
        const tir_stmt *f = x->else_s ? edit(e, x->else_s) : NULL;
        if (!t && !f) return NULL;
        if (!t) t = tir_evaluate_new(ctx, tir_i32(ctx, 0));
        if (t != x->then_s || f != x->else_s) out = tir_if_new(ctx, x->cond, t, f);
        break;
    }
    case TIR_KIND_ALLOCATE: {
        const tir_allocate *x = (const tir_allocate *)st;
        const tir_stmt *body = edit(e, x->body);
        if (!body) body = tir_evaluate_new(ctx, tir_i32(ctx, 0));
        if (body != x->body)
            out = tir_allocate_annotated(ctx, x->buffer, x->nannots, x->annots, body);
        break;
    }
    default: break;
    }
inserts:
    for (int i = 0; i < e->nins; i++)
        if (e->anchors[i] == st) {
            const tir_stmt *two[2] = {e->after[i] ? out : e->inserts[i],
                                      e->after[i] ? e->inserts[i] : out};
            out = tir_seq_new(ctx, 2, two);
        }
    return out;
}

const tir_prim_func *sch_edit(sch_call *c, const sch_edit_spec *e) {
    const tir_prim_func *f = c->sch->func;
    const tir_stmt *body = edit(e, f->body);
    TIR_ASSERT(body);
    if (body == f->body) return f;
    return tir_prim_func_new(c->ctx, f->name, f->nparams, f->params, f->buffer_map, body,
                             f->nattrs, f->attrs);
}

/* -------------------------------------------------------------- regions */

/* Loops strictly between sref `from` (exclusive) and sref `top`. */
static int loops_between(const tir_schedule *s, int from, int top, const tir_var **out) {
    int n = 0;
    for (int p = s->srefs[from].parent; p >= 0 && p != top; p = s->srefs[p].parent)
        if (sch_sref_for(s, p)) out[n++] = sch_sref_for(s, p)->var;
    return n;
}

static bool thread_relaxed(const tir_for *f, tir_scope scope) {
    if (f->kind != TIR_FOR_THREAD_BINDING || !f->thread_tag) return false;
    if (scope == TIR_SCOPE_LOCAL) return false;
    /* A fragment belongs to a warp: its lanes (threadIdx.x) share it, the
     * warps (threadIdx.y, z) and blocks each have their own. */
    if (tir_scope_is_frag(scope)) return !strcmp(f->thread_tag, "threadIdx.x");
    if (scope == TIR_SCOPE_SHARED) {
        int kind = tir_thread_axis_kind(tir_thread_axis_lookup(f->thread_tag));
        return kind == TIR_AXIS_KIND_THREAD || kind == TIR_AXIS_KIND_VTHREAD;
    }
    return true;
}

/* Whether e holds an integer constant of half its type's range or more.
 * Relaxing i_0 * ((n + 1) // 2) over i_0 bounds the unknown sign of
 * (n + 1) // 2 by the range of n's type (-2^30): a true bound, but loops
 * and bindings built from it (extent (n + 1) // 2 + 2147483647) wrap. */
typedef struct {
    tir_visitor v;
    bool near;
} limit_state;

static bool limit_pre(tir_visitor *v, const tir_node *n) {
    limit_state *l = (limit_state *)v;
    const tir_int_imm *c = tir_as_tir_int_imm(n);
    if (c && c->base.dtype.bits >= 2 && c->base.dtype.bits < 64) {
        int64_t half = (int64_t)1 << (c->base.dtype.bits - 2);
        l->near |= c->value >= half || c->value <= -half;
    }
    return !l->near;
}

static bool near_type_limit(const tir_expr *e) {
    limit_state l = {{limit_pre, NULL, NULL}, false};
    tir_visit(&l.v, e);
    return l.near;
}

/* Whether e divides by something a cannot prove non-zero.  The loops
 * relaxed over run at least once wherever the region is read, which a
 * bound like f // min(y, 1) (a fused loop of extent min(y, 1)) takes for
 * granted; moved where they may not run, it divides by 0. */
typedef struct {
    tir_visitor v;
    tir_analyzer *a;
    bool found;
} zero_div_state;

static bool zero_div_pre(tir_visitor *v, const tir_node *n) {
    zero_div_state *z = (zero_div_state *)v;
    tir_kind k = (tir_kind)n->kind;
    if (k == TIR_KIND_DIV || k == TIR_KIND_MOD || k == TIR_KIND_FLOORDIV ||
        k == TIR_KIND_FLOORMOD) {
        const tir_expr *den = ((const tir_binop *)n)->b;
        tir_int_bound b = tir_analyzer_const_bound(z->a, den);
        z->found |= b.min <= 0 && b.max >= 0;
    }
    return !z->found;
}

static bool may_divide_by_zero(tir_analyzer *a, const tir_expr *e) {
    zero_div_state z = {{zero_div_pre, NULL, NULL}, a, false};
    tir_visit(&z.v, e);
    return z.found;
}

bool sch_relax_access(const tir_schedule *s, tir_analyzer *a, int bi, int loop, int scope_sref,
                      const tir_buffer_region *reg, tir_scope buf_scope, sch_bound *acc) {
    tir_ctx *ctx = s->ctx;
    const tir_block_realize *r = s->srefs[bi].realize;
    const tir_block *b = r->block;
    const tir_var **vars = IR_NEWN(ctx, const tir_var *, s->nsrefs + 1);
    int nv = loops_between(s, bi, loop, vars);
    for (int p = loop; p >= 0 && p != scope_sref; p = s->srefs[p].parent) {
        const tir_for *f = sch_sref_for(s, p);
        if (f && p != loop && thread_relaxed(f, buf_scope)) vars[nv++] = f->var;
    }
    const tir_var **iv = IR_NEWN(ctx, const tir_var *, b->niters);
    for (int k = 0; k < b->niters; k++) iv[k] = b->iters[k].var;
    for (int d = 0; d < reg->ndim; d++) {
        const tir_expr *mn = (const tir_expr *)tir_substitute(ctx, reg->ranges[d].min,
                                                              b->niters, iv, r->values);
        const tir_expr *ex = (const tir_expr *)tir_substitute(ctx, reg->ranges[d].extent,
                                                              b->niters, iv, r->values);
        const tir_expr *last = tir_sub(ctx, tir_add(ctx, mn, ex), tir_int(ctx, mn->dtype, 1));
        tir_range lo, hi;
        if (!tir_analyzer_relax(a, mn, nv, vars, &lo) ||
            !tir_analyzer_relax(a, last, nv, vars, &hi) || near_type_limit(lo.min) ||
            near_type_limit(hi.min) || near_type_limit(hi.extent) ||
            may_divide_by_zero(a, lo.min) || may_divide_by_zero(a, hi.min) ||
            may_divide_by_zero(a, hi.extent))
            return false;
        const tir_expr *l = lo.min, *h = tir_add(ctx, hi.min, hi.extent);
        if (acc[d].lo) {
            l = tir_min(ctx, acc[d].lo, l);
            h = tir_max(ctx, acc[d].hi, h);
        }
        acc[d].lo = tir_analyzer_simplify(a, l);
        acc[d].hi = tir_analyzer_simplify(a, h);
    }
    return true;
}

int sch_trivial_dim(const tir_block *b, const tir_buffer_region *reg, int *dim_of_iter) {
    for (int k = 0; k < b->niters; k++) dim_of_iter[k] = -1;
    for (int d = 0; d < reg->ndim; d++) {
        if (!sch_is_const(reg->ranges[d].extent, 1)) return d;
        const tir_var *v = tir_as_tir_var(reg->ranges[d].min);
        int k = 0;
        while (k < b->niters && b->iters[k].var != v) k++;
        if (k == b->niters || b->iters[k].kind != TIR_ITER_SPATIAL || dim_of_iter[k] >= 0)
            return d;
        dim_of_iter[k] = d;
    }
    return -1;
}

/* Whether variable v may stay in a predicate placed under loop sref
 * `loop`: a scalar parameter, or the variable of that loop or one around
 * it. */
static bool visible_at(const tir_schedule *s, int loop, const tir_var *v) {
    if (sch_is_scalar_param(s->func, v)) return true;
    for (int p = loop; p >= 0; p = s->srefs[p].parent) {
        const tir_for *f = sch_sref_for(s, p);
        if (f && f->var == v) return true;
    }
    return false;
}

typedef struct {
    tir_visitor v;
    const tir_schedule *s;
    int loop;
    const tir_block_realize *r;
    bool lost;
} carry_state;

/* Every variable of a conjunct is visible at the new place or is the
 * whole binding of an iterator (a remap, vi = i_2). */
static bool carry_pre(tir_visitor *v, const tir_node *n) {
    carry_state *st = (carry_state *)v;
    const tir_var *x = tir_as_tir_var(n);
    if (!x || visible_at(st->s, st->loop, x)) return !st->lost;
    bool remap = false;
    for (int k = 0; k < st->r->nvalues; k++) remap |= st->r->values[k] == &x->base;
    st->lost |= !remap;
    return !st->lost;
}

/* The conjuncts of block sref bi's predicate that are not bounds of its
 * iterators (those the new loops regenerate), for its new place under
 * loop sref `loop` with bindings vals: a user's T.where(i % 2 == 0), or a
 * cache_write's write-back over a reduce domain that may be empty, K > 0
 * (compute_at used to drop them and run instances the original masked).
 * A remapped loop becomes its iterator's new binding.  NULL: none; a
 * conjunct naming any other variable (a loop of a fused or split
 * binding) is returned in *lost. */
static const tir_expr *carried_pred(sch_call *c, int bi, int loop, const tir_expr *const *vals,
                                    const tir_expr **lost) {
    const tir_schedule *s = c->sch;
    tir_ctx *ctx = c->ctx;
    const tir_block_realize *r = s->srefs[bi].realize;
    *lost = NULL;
    if (!r->predicate) return NULL;
    tir_analyzer *a = tir_analyzer_create(ctx);
    sch_bind_ancestors(s, a, s->srefs[bi].parent);
    ir_vec conj = {0};
    sch_conjuncts(r->predicate, &conj);
    const tir_var **ov = IR_NEWN(ctx, const tir_var *, r->nvalues + 1);
    const tir_expr **nv = IR_NEWN(ctx, const tir_expr *, r->nvalues + 1);
    int nmap = 0;
    for (int k = 0; k < r->nvalues; k++) {
        const tir_var *x = tir_as_tir_var(r->values[k]);
        if (x && !visible_at(s, loop, x)) ov[nmap] = x, nv[nmap++] = vals[k];
    }
    const tir_expr *kept = NULL;
    for (int j = 0; j < conj.n && !*lost; j++) {
        const tir_expr *e = conj.items[j];
        if (sch_pred_bounds_only(ctx, a, r, e)) continue;
        carry_state st = {{.pre = carry_pre}, s, loop, r, false};
        tir_visit(&st.v, e);
        if (st.lost) {
            *lost = e;
            break;
        }
        e = (const tir_expr *)tir_substitute(ctx, e, nmap, ov, nv);
        kept = kept ? tir_and(ctx, kept, e) : e;
    }
    ir_vec_free(&conj);
    tir_analyzer_destroy(a);
    return kept;
}

const tir_iter_var *sch_dom_names_loops(const tir_schedule *s, int bi) {
    const tir_block *b = sch_sref_block(s, bi);
    for (int k = 0; k < b->niters; k++)
        if (!sch_params_only(s->func, b->iters[k].dom.min) ||
            !sch_params_only(s->func, b->iters[k].dom.extent))
            return &b->iters[k];
    return NULL;
}

tir_status sch_check_dom_local(sch_call *c, uint32_t brv, int bi) {
    const tir_iter_var *named = sch_dom_names_loops(c->sch, bi);
    if (!named) return TIR_OK;
    const tir_block *b = sch_sref_block(c->sch, bi);
    return sch_fail(c, TIR_ERR_SCHED_DEPENDENT_DOMAIN, brv, b,
                    "iterator %s of block \"%s\" has a domain (min %s, extent %s) naming "
                    "loops of its nest, which the loops made at the new place would not "
                    "define",
                    named->var->name, b->name, tir_print(c->ctx, named->dom.min),
                    tir_print(c->ctx, named->dom.extent));
}

const tir_stmt *sch_regen_loops(sch_call *c, int loop, int bi, const sch_bound *rng,
                                bool preserve_unit_loops, const tir_expr **lost) {
    const tir_block *b = sch_sref_block(c->sch, bi);
    const tir_schedule *s = c->sch;
    tir_ctx *ctx = c->ctx;
    tir_analyzer *a = tir_analyzer_create(ctx);
    sch_bind_ancestors(s, a, loop);
    int n = b->niters;
    const tir_var **lv = IR_NEWN(ctx, const tir_var *, n);
    const tir_expr **ext = IR_NEWN(ctx, const tir_expr *, n);
    const tir_expr **vals = IR_NEWN(ctx, const tir_expr *, n);
    const tir_expr *pred = NULL;
    int nl = 0;
    for (int k = 0; k < n; k++) {
        const tir_iter_var *it = &b->iters[k];
        tir_dtype dt = it->var->base.dtype;
        const tir_expr *lo = rng[k].lo ? rng[k].lo : it->dom.min;
        const tir_expr *e = rng[k].lo ? tir_analyzer_simplify(a, tir_sub(ctx, rng[k].hi, lo))
                                      : it->dom.extent;
        lv[k] = NULL;
        if (!preserve_unit_loops && sch_is_const(e, 1)) {
            vals[k] = lo;
        } else {
            lv[k] = tir_var_new(ctx, tir_ctx_sprintf(ctx, "ax%d", nl++), dt);
            ext[k] = e;
            tir_analyzer_bind(a, lv[k], tir_int(ctx, dt, 0), e);
            vals[k] = tir_analyzer_simplify(a, tir_add(ctx, lo, &lv[k]->base));
        }
        if (!rng[k].lo) continue;
        const tir_expr *ge = tir_binop_new(ctx, TIR_KIND_GE, vals[k], it->dom.min);
        const tir_expr *lt = tir_lt(ctx, vals[k], tir_add(ctx, it->dom.min, it->dom.extent));
        if (!tir_analyzer_can_prove(a, ge)) pred = pred ? tir_and(ctx, pred, ge) : ge;
        if (!tir_analyzer_can_prove(a, lt)) pred = pred ? tir_and(ctx, pred, lt) : lt;
    }
    const tir_expr *kept = carried_pred(c, bi, loop, vals, lost);
    if (kept) pred = pred ? tir_and(ctx, pred, kept) : kept;
    if (pred) pred = tir_analyzer_simplify(a, pred);
    tir_analyzer_destroy(a);
    if (*lost) return NULL;
    const tir_stmt *body = tir_block_realize_new(ctx, n, vals, pred, b);
    for (int k = n - 1; k >= 0; k--)
        if (lv[k])
            body = tir_for_new(ctx, lv[k], tir_int(ctx, lv[k]->base.dtype, 0), ext[k],
                               TIR_FOR_SERIAL, NULL, 0, NULL, body);
    return body;
}

tir_status sch_regen_moved(sch_call *c, uint32_t brv, int loop, int bi, const sch_bound *rng,
                           bool preserve_unit_loops, const tir_stmt **out) {
    const tir_expr *lost;
    *out = sch_regen_loops(c, loop, bi, rng, preserve_unit_loops, &lost);
    if (*out) return TIR_OK;
    const tir_block *b = sch_sref_block(c->sch, bi);
    return sch_fail(c, TIR_ERR_SCHED_PREDICATED_PRODUCER, brv, b,
                    "the predicate of block \"%s\" has a condition, %s, over loops that the "
                    "loops made at the new place cannot express (only bounds of its "
                    "iterators, parameters, loops around the target and loops bound alone to "
                    "an iterator can move with it)",
                    b->name, tir_print(c->ctx, lost));
}

const tir_stmt *sch_copy_nest(tir_ctx *ctx, const char *name, const tir_buffer *src,
                              const tir_buffer *dst, const tir_expr *pred) {
    int nd = src->ndim;
    const tir_var **lv = IR_NEWN(ctx, const tir_var *, nd);
    tir_iter_var *iters = IR_NEWN(ctx, tir_iter_var, nd);
    const tir_expr **idx = IR_NEWN(ctx, const tir_expr *, nd);
    const tir_expr **vals = IR_NEWN(ctx, const tir_expr *, nd);
    tir_range *pt = IR_NEWN(ctx, tir_range, nd);
    for (int d = 0; d < nd; d++) {
        tir_dtype dt = src->shape[d]->dtype;
        lv[d] = tir_var_new(ctx, tir_ctx_sprintf(ctx, "ax%d", d), dt);
        const tir_var *v = tir_var_new(ctx, tir_ctx_sprintf(ctx, "v%d", d), dt);
        iters[d] = (tir_iter_var){v, {tir_int(ctx, dt, 0), src->shape[d]}, TIR_ITER_SPATIAL};
        idx[d] = &v->base;
        vals[d] = &lv[d]->base;
        pt[d] = (tir_range){&v->base, tir_int(ctx, dt, 1)};
    }
    tir_buffer_region rd = tir_region_new(ctx, src, nd, pt);
    tir_buffer_region wr = tir_region_new(ctx, dst, nd, pt);
    tir_block_desc d = {0};
    d.name = name;
    d.niters = nd;
    d.iters = iters;
    d.nreads = 1;
    d.reads = &rd;
    d.nwrites = 1;
    d.writes = &wr;
    d.body = tir_store(ctx, dst, tir_load(ctx, src, nd, idx), nd, idx);
    const tir_stmt *body = tir_block_realize_new(ctx, nd, vals, pred, tir_block_new(ctx, &d));
    for (int k = nd - 1; k >= 0; k--)
        body = tir_for_new(ctx, lv[k], tir_int(ctx, lv[k]->base.dtype, 0), src->shape[k],
                           TIR_FOR_SERIAL, NULL, 0, NULL, body);
    return body;
}

const tir_buffer *sch_cache_buffer(tir_ctx *ctx, const tir_buffer *b, tir_scope scope) {
    tir_buffer_desc d;
    tir_buffer_describe(b, &d);
    /* "A_frag.a" -> "A_frag_a": names stay identifiers in the text form */
    char *name = (char *)tir_ctx_sprintf(ctx, "%s_%s", b->name, tir_scope_name(scope));
    for (char *p = name; *p; p++)
        if (*p == '.') *p = '_';
    d.name = name;
    d.scope = scope;
    d.strides = NULL;
    d.elem_offset = NULL;
    return tir_buffer_new(ctx, &d);
}

bool sch_parse_scope(const char *name, tir_scope *out) {
    /* Any storage scope but global (a cache is never a new parameter). */
    tir_scope sc;
    if (!tir_scope_parse(name, strlen(name), &sc) || sc == TIR_SCOPE_GLOBAL) return false;
    *out = sc;
    return true;
}

bool sch_is_param_buffer(const tir_prim_func *f, const tir_buffer *b) {
    for (int i = 0; i < f->nparams; i++)
        if (f->buffer_map[i] == b) return true;
    return false;
}

bool sch_is_scalar_param(const tir_prim_func *f, const tir_var *v) {
    for (int i = 0; i < f->nparams; i++)
        if (f->params[i] == v && !f->buffer_map[i]) return true;
    return false;
}
