/* analysis.c: checks and rewrites shared by the loop primitives.
 *
 * The well-formedness checks W1-W3 (documented in minitir/schedule.h) are
 * what TVM calls "complete or reduction blocks with affine bindings"; they
 * are what makes reordering or parallelising a loop keep the function's
 * meaning.  sch_rewrite_under is the common tail of split and fuse: put the
 * new loop expressions into the block bindings and simplify them.
 */
#include "sched_internal.h"

bool sch_is_const(const tir_expr *e, int64_t c) {
    int64_t v;
    return tir_expr_const_int(e, &v) && v == c;
}

const tir_stmt *sch_for_with(tir_ctx *ctx, const tir_for *f, tir_for_kind kind,
                             const char *tag, int nannots, const tir_annot *annots,
                             const tir_stmt *body) {
    return tir_for_new(ctx, f->var, f->min, f->extent, kind, tag, nannots, annots, body);
}

void sch_bind_ancestors(const tir_schedule *s, tir_analyzer *a, int i) {
    for (int p = i; p >= 0; p = s->srefs[p].parent) {
        const tir_for *f = sch_sref_for(s, p);
        if (f) {
            tir_analyzer_bind(a, f->var, f->min, f->extent);
            continue;
        }
        const tir_block *b = sch_sref_block(s, p);
        for (int k = 0; k < b->niters; k++)
            tir_analyzer_bind(a, b->iters[k].var, b->iters[k].dom.min, b->iters[k].dom.extent);
    }
}

/* ------------------------------------------------------------- rewriting */

typedef struct {
    tir_ctx *ctx;
    tir_analyzer *a;
    int n;
    const tir_var *const *vars;
    const tir_expr *const *values;
    const tir_expr *guard;
} rewrite_env;

static const tir_expr *subst(const rewrite_env *env, const tir_expr *e) {
    return (const tir_expr *)tir_substitute(env->ctx, e, env->n, env->vars, env->values);
}

/* Whether e divides by something that is not a non-zero constant. */
typedef struct {
    tir_visitor v;
    bool found;
} div_state;

static bool div_pre(tir_visitor *v, const tir_node *n) {
    div_state *d = (div_state *)v;
    tir_kind k = (tir_kind)n->kind;
    if (k == TIR_KIND_DIV || k == TIR_KIND_MOD || k == TIR_KIND_FLOORDIV ||
        k == TIR_KIND_FLOORMOD) {
        int64_t c;
        const tir_expr *den = ((const tir_binop *)n)->b;
        d->found |= !tir_expr_const_int(den, &c) || c == 0;
    }
    return !d->found;
}

static bool may_divide_by_zero(const tir_expr *e) {
    div_state d = {{div_pre, NULL, NULL}, false};
    tir_visit(&d.v, e);
    return d.found;
}

/* Substitutes, and simplifies only what the substitution touched, so
 * bindings the primitive has nothing to do with keep their form. */
static const tir_expr *subst_simplify(const rewrite_env *env, const tir_expr *e) {
    const tir_expr *r = subst(env, e);
    return r == e ? e : tir_analyzer_simplify(env->a, r);
}

static const tir_stmt *rewrite(const rewrite_env *env, const tir_stmt *st) {
    tir_ctx *ctx = env->ctx;
    switch ((tir_kind)st->kind) {
    case TIR_KIND_FOR: {
        const tir_for *f = (const tir_for *)st;
        const tir_expr *mn = subst_simplify(env, f->min), *ex = subst_simplify(env, f->extent);
        tir_analyzer_bind(env->a, f->var, mn, ex);
        const tir_stmt *body = rewrite(env, f->body);
        if (mn == f->min && ex == f->extent && body == f->body) return st;
        return tir_for_new(ctx, f->var, mn, ex, f->kind, f->thread_tag, f->nannots, f->annots,
                           body);
    }
    case TIR_KIND_SEQ: {
        const tir_seq *q = (const tir_seq *)st;
        const tir_stmt **out = IR_NEWN(ctx, const tir_stmt *, q->n);
        bool changed = false;
        for (int i = 0; i < q->n; i++) {
            out[i] = rewrite(env, q->stmts[i]);
            changed |= out[i] != q->stmts[i];
        }
        return changed ? tir_seq_new(ctx, q->n, out) : st;
    }
    case TIR_KIND_BLOCK_REALIZE: {
        const tir_block_realize *r = (const tir_block_realize *)st;
        const tir_expr **vals = IR_NEWN(ctx, const tir_expr *, r->nvalues);
        bool changed = false;
        for (int i = 0; i < r->nvalues; i++) {
            vals[i] = subst_simplify(env, r->values[i]);
            changed |= vals[i] != r->values[i];
        }
        const tir_expr *pred = subst(env, r->predicate);
        /* The guard goes last, unless the predicate divides by something
           that may be 0: its conjuncts were written for the loop's own
           range, and And evaluates only what decides it (a fused loop's
           f // i < 8 divides by 0 where the split's extra iterations meet
           i = 0; f < i * 10 first masks them). */
        if (env->guard)
            pred = sch_is_const(pred, 1)   ? env->guard
                   : may_divide_by_zero(pred) ? tir_and(ctx, env->guard, pred)
                                              : tir_and(ctx, pred, env->guard);
        if (pred != r->predicate) {
            pred = tir_analyzer_simplify(env->a, pred);
            changed = true;
        }
        /* Blocks normally do not see loop variables; an opaque use is
           still substituted so the result stays well formed. */
        const tir_block *b = (const tir_block *)tir_substitute(ctx, r->block, env->n, env->vars,
                                                               env->values);
        changed |= b != r->block;
        if (!changed) return st;
        return tir_block_realize_new(ctx, r->nvalues, vals, pred, b);
    }
    default: {
        const tir_stmt *s2 = (const tir_stmt *)tir_substitute(ctx, st, env->n, env->vars,
                                                              env->values);
        return env->guard ? tir_if_new(ctx, env->guard, s2, NULL) : s2;
    }
    }
}

const tir_stmt *sch_rewrite_under(tir_ctx *ctx, tir_analyzer *a, const tir_stmt *st, int n,
                                  const tir_var *const *vars, const tir_expr *const *values,
                                  const tir_expr *guard) {
    rewrite_env env = {ctx, a, n, vars, values, guard};
    return rewrite(&env, st);
}

/* ---------------------------------------------------------------- blocks */

static void collect(const tir_stmt *st, ir_vec *out) {
    if (!st) return;
    switch ((tir_kind)st->kind) {
    case TIR_KIND_FOR: collect(((const tir_for *)st)->body, out); break;
    case TIR_KIND_SEQ: {
        const tir_seq *q = (const tir_seq *)st;
        for (int i = 0; i < q->n; i++) collect(q->stmts[i], out);
        break;
    }
    case TIR_KIND_IF:
        collect(((const tir_if *)st)->then_s, out);
        collect(((const tir_if *)st)->else_s, out);
        break;
    case TIR_KIND_ALLOCATE: collect(((const tir_allocate *)st)->body, out); break;
    case TIR_KIND_BLOCK_REALIZE: ir_vec_push(out, st); break;
    default: break;
    }
}

void sch_collect_child_realizes(const tir_stmt *st, ir_vec *out) { collect(st, out); }

bool sch_is_quasi_affine(const tir_expr *e) {
    int64_t c;
    switch ((tir_kind)e->kind) {
    case TIR_KIND_INT_IMM:
    case TIR_KIND_VAR: return true;
    case TIR_KIND_ADD:
    case TIR_KIND_SUB: {
        const tir_binop *b = (const tir_binop *)e;
        return sch_is_quasi_affine(b->a) && sch_is_quasi_affine(b->b);
    }
    case TIR_KIND_MUL: {
        const tir_binop *b = (const tir_binop *)e;
        if (tir_expr_const_int(b->b, &c)) return sch_is_quasi_affine(b->a);
        if (tir_expr_const_int(b->a, &c)) return sch_is_quasi_affine(b->b);
        return false;
    }
    case TIR_KIND_FLOORDIV:
    case TIR_KIND_FLOORMOD: {
        const tir_binop *b = (const tir_binop *)e;
        return tir_expr_const_int(b->b, &c) && c > 0 && sch_is_quasi_affine(b->a);
    }
    default: return false;
    }
}

sch_block_class sch_classify_block(const tir_block *b) {
    bool has_reduce = false;
    for (int i = 0; i < b->niters; i++) has_reduce |= b->iters[i].kind == TIR_ITER_REDUCE;
    if (!has_reduce) {
        if (b->init) return SCH_BLOCK_OTHER;
        for (int w = 0; w < b->nwrites; w++)
            for (int r = 0; r < b->nreads; r++)
                if (b->writes[w].buffer == b->reads[r].buffer) return SCH_BLOCK_OTHER;
        return SCH_BLOCK_COMPLETE;
    }
    for (int w = 0; w < b->nwrites; w++)
        for (int d = 0; d < b->writes[w].ndim; d++)
            for (int i = 0; i < b->niters; i++) {
                if (b->iters[i].kind != TIR_ITER_REDUCE) continue;
                if (tir_uses_var(b->writes[w].ranges[d].min, b->iters[i].var) ||
                    tir_uses_var(b->writes[w].ranges[d].extent, b->iters[i].var))
                    return SCH_BLOCK_OTHER;
            }
    return SCH_BLOCK_REDUCTION;
}

/* W1: only loops, sequences and realizes outside blocks; the variables do
 * not occur inside the blocks.  Returns the offending node or NULL. */
static const void *find_opaque(const tir_stmt *st, int nvars, const tir_var *const *vars,
                               const char **why) {
    switch ((tir_kind)st->kind) {
    case TIR_KIND_FOR: return find_opaque(((const tir_for *)st)->body, nvars, vars, why);
    case TIR_KIND_SEQ: {
        const tir_seq *q = (const tir_seq *)st;
        for (int i = 0; i < q->n; i++) {
            const void *r = find_opaque(q->stmts[i], nvars, vars, why);
            if (r) return r;
        }
        return NULL;
    }
    case TIR_KIND_BLOCK_REALIZE: {
        const tir_block *b = ((const tir_block_realize *)st)->block;
        for (int i = 0; i < nvars; i++)
            if (tir_uses_var(b, vars[i])) {
                *why = vars[i]->name;
                return b;
            }
        return NULL;
    }
    default: *why = NULL; return st;
    }
}

tir_status sch_check_blocks_under(sch_call *c, uint32_t rv, const tir_stmt *st, int nvars,
                                  const tir_var *const *vars) {
    const char *why = NULL;
    const void *bad = find_opaque(st, nvars, vars, &why);
    if (bad && why)
        return sch_fail(c, TIR_ERR_SCHED_OPAQUE_USE, rv, bad,
                        "loop variable %s is used inside block \"%s\" instead of only in its "
                        "bindings",
                        why, ((const tir_block *)bad)->name);
    if (bad)
        return sch_fail(c, TIR_ERR_SCHED_OPAQUE_USE, rv, bad,
                        "a %s statement lies outside any block under the loop; only loops and "
                        "blocks may",
                        tir_kind_name((tir_kind)((const tir_node *)bad)->kind));
    ir_vec rs = {0};
    collect(st, &rs);
    tir_status ret = TIR_OK;
    for (int i = 0; i < rs.n && ret == TIR_OK; i++) {
        const tir_block_realize *r = rs.items[i];
        for (int k = 0; k < r->nvalues; k++)
            if (!sch_is_quasi_affine(r->values[k])) {
                ret = sch_fail(c, TIR_ERR_SCHED_NON_AFFINE_BINDING, rv, r->block,
                               "the binding of %s in block \"%s\" is not quasi-affine (only "
                               "+, -, * by a constant, floordiv/floormod by a positive "
                               "constant): %s",
                               r->block->iters[k].var->name, r->block->name,
                               tir_print(c->ctx, r->values[k]));
                break;
            }
    }
    for (int i = 0; i < rs.n && ret == TIR_OK; i++) {
        const tir_block_realize *r = rs.items[i];
        if (sch_classify_block(r->block) == SCH_BLOCK_OTHER)
            ret = sch_fail(c, TIR_ERR_SCHED_BLOCK_NOT_COMPLETE, rv, r->block,
                           "block \"%s\" is neither complete (spatial iterators only, no "
                           "init, reads no buffer it writes) nor a reduction (reduce "
                           "iterators do not index what it writes)",
                           r->block->name);
    }
    ir_vec_free(&rs);
    return ret;
}

tir_status sch_check_spatial_only(sch_call *c, uint32_t rv, const tir_for *loop) {
    ir_vec rs = {0};
    collect(loop->body, &rs);
    tir_status ret = TIR_OK;
    for (int i = 0; i < rs.n && ret == TIR_OK; i++) {
        const tir_block_realize *r = rs.items[i];
        for (int k = 0; k < r->nvalues; k++) {
            if (r->block->iters[k].kind != TIR_ITER_REDUCE) continue;
            if (!tir_uses_var(r->values[k], loop->var)) continue;
            ret = sch_fail(c, TIR_ERR_SCHED_REDUCTION_LOOP, rv, r->block,
                           "loop %s feeds reduce iterator %s of block \"%s\"; only loops "
                           "of spatial iterators may run in parallel",
                           loop->var->name, r->block->iters[k].var->name, r->block->name);
            break;
        }
    }
    ir_vec_free(&rs);
    return ret;
}

tir_status sch_check_parallelizable(sch_call *c, uint32_t rv, const tir_for *loop) {
    const tir_var *vars[1] = {loop->var};
    TIR_TRY(sch_check_blocks_under(c, rv, loop->body, 1, vars));
    return sch_check_spatial_only(c, rv, loop);
}

tir_status sch_check_serial(sch_call *c, uint32_t rv, const tir_for *loop, const char *what) {
    if (loop->kind == TIR_FOR_SERIAL) return TIR_OK;
    return sch_fail(c, TIR_ERR_SCHED_LOOP_NOT_SERIAL, rv, loop,
                    "only serial loops can be %s, but %s is already %s%s%s", what,
                    loop->var->name, tir_for_kind_name(loop->kind), loop->thread_tag ? " " : "",
                    loop->thread_tag ? loop->thread_tag : "");
}

tir_status sch_check_min_zero(sch_call *c, uint32_t rv, const tir_for *loop) {
    if (sch_is_const(loop->min, 0)) return TIR_OK;
    return sch_fail(c, TIR_ERR_SCHED_LOOP_MIN_NONZERO, rv, loop,
                    "the loop must start at 0, but %s starts at %s", loop->var->name,
                    tir_print(c->ctx, loop->min));
}

const tir_prim_func *sch_replace_loop_kind(sch_call *c, const tir_for *loop, tir_for_kind kind,
                                           const char *tag) {
    const tir_stmt *nf = sch_for_with(c->ctx, loop, kind, tag, loop->nannots, loop->annots,
                                      loop->body);
    const tir_stmt *o[1] = {&loop->base}, *n[1] = {nf};
    return sch_replace(c, 1, o, n);
}

void sch_conjuncts(const tir_expr *e, ir_vec *out) {
    if (e->kind == TIR_KIND_AND) {
        const tir_binop *b = (const tir_binop *)e;
        sch_conjuncts(b->a, out);
        sch_conjuncts(b->b, out);
        return;
    }
    if (!sch_is_const(e, 1)) ir_vec_push(out, e);
}

typedef struct {
    tir_visitor v;
    const tir_buffer *buf;
    bool found;
} loads_state;

static bool loads_pre(tir_visitor *v, const tir_node *n) {
    loads_state *l = (loads_state *)v;
    const tir_buffer_load *ld = tir_as_tir_buffer_load(n);
    if (ld && ld->buffer == l->buf) l->found = true;
    return !l->found;
}

bool sch_loads_buffer(const void *node, const tir_buffer *buf) {
    loads_state l = {{loads_pre, NULL, NULL}, buf, false};
    tir_visit(&l.v, node);
    return l.found;
}

typedef struct {
    const tir_stmt *old, *nw;
} swap_one;

static const tir_node *swap_realize(tir_mutator *m, const tir_node *n) {
    const swap_one *w = m->user;
    if (n == (const tir_node *)w->old) return (const tir_node *)w->nw;
    return tir_mutate_default(m, n);
}

static const tir_node *keep_expr(tir_mutator *m, const tir_node *n) {
    (void)m;
    return n;
}

const tir_stmt *sch_replace_realize(tir_ctx *ctx, const tir_stmt *root, const tir_stmt *old,
                                    const tir_stmt *nw) {
    swap_one w = {old, nw};
    tir_mutator m = {.ctx = ctx, .user = &w};
    for (int k = 0; k < TIR_KIND_COUNT; k++)
        if (tir_kind_is_expr((tir_kind)k)) m.on[k] = keep_expr;
    m.on[TIR_KIND_BLOCK_REALIZE] = swap_realize;
    return tir_mutate_stmt(&m, root);
}
