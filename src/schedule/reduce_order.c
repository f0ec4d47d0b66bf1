/* reduce_order.c: whether a primitive may change the order in which a
 * reduction block runs its steps.
 *
 * A reduction's steps for one spatial point run in the order its loops
 * visit the reduce iterators.  Primitives that permute loops (reorder) or
 * rebuild them (compute_at and reverse_compute_at make one loop per
 * iterator, in iterator order, increasing) change that order.  For an
 * update that combines with a commutative, associative operator (`C = C +
 * x`, `C = C * x`, min, max, chains of them, x not reading C) only the
 * rounding of floats can change, which minitir accepts as TVM does
 * (rfactor reassociates too).  Any other update is a recurrence whose
 * result depends on the order: Horner's `C = C * 3 + A[k]`, a hash `h = h
 * * 31 + s[k]`, a filter `y = y * a + x[k]`, an argmax whose ties go to the
 * first.  reorder moved their loops, and compute_at rebuilt them in
 * iterator order, silently computing something else (sixth new-user
 * review); these checks refuse that instead.
 */
#include <string.h>

#include "sched_internal.h"

/* The operands of the maximal tree of `op` nodes at e (ADD and SUB
 * together; a SUB's right operand is negated, so the accumulator may
 * not be there). */
typedef struct chain_ops {
    const tir_expr *items[64];
    bool negated[64];
    int n;
    bool overflow;
} chain_ops;

static bool same_op(tir_kind k, tir_kind op) {
    if (op == TIR_KIND_ADD) return k == TIR_KIND_ADD || k == TIR_KIND_SUB;
    return k == op;
}

static void flatten(const tir_expr *e, tir_kind op, bool neg, chain_ops *out) {
    const tir_binop *bo = tir_as_tir_binop(e);
    if (bo && same_op((tir_kind)e->kind, op)) {
        flatten(bo->a, op, neg, out);
        flatten(bo->b, op, e->kind == TIR_KIND_SUB ? !neg : neg, out);
        return;
    }
    if (out->n == 64) {
        out->overflow = true;
        return;
    }
    out->negated[out->n] = neg;
    out->items[out->n++] = e;
}

/* True when e loads u's element at u's indices. */
static bool is_self_load(const tir_expr *e, const tir_buffer_store *u) {
    const tir_buffer_load *l = tir_as_tir_buffer_load(e);
    if (!l || l->buffer != u->buffer || l->nidx != u->nidx) return false;
    for (int i = 0; i < u->nidx; i++)
        if (!tir_struct_equal(l->indices[i], u->indices[i])) return false;
    return true;
}

/* u = u op x1 op x2 ... with op +/- (u not negated), *, min or max, and
 * no xi reading u's buffer. */
static bool store_commutes(const tir_buffer_store *u) {
    const tir_binop *bo = tir_as_tir_binop(u->value);
    if (!bo) return false;
    tir_kind op = (tir_kind)u->value->kind;
    if (op == TIR_KIND_SUB) op = TIR_KIND_ADD;
    if (op != TIR_KIND_ADD && op != TIR_KIND_MUL && op != TIR_KIND_MIN && op != TIR_KIND_MAX)
        return false;
    chain_ops ch = {.n = 0};
    flatten(u->value, op, false, &ch);
    if (ch.overflow) return false;
    int self = 0;
    for (int i = 0; i < ch.n; i++) {
        if (is_self_load(ch.items[i], u) && !ch.negated[i]) {
            self++;
            continue;
        }
        if (sch_loads_buffer(ch.items[i], u->buffer)) return false;
    }
    return self == 1;
}

typedef struct nested_v {
    tir_visitor v;
    bool all_commute;
    int nblocks;
} nested_v;

static bool nested_pre(tir_visitor *v, const tir_node *n) {
    nested_v *nv = (nested_v *)v;
    if (n->kind != TIR_KIND_BLOCK) return true;
    nv->nblocks++;
    if (!sch_reduction_commutes((const tir_block *)n)) nv->all_commute = false;
    return false;
}

bool sch_reduction_commutes(const tir_block *b) {
    bool reduce = false;
    for (int i = 0; i < b->niters; i++) reduce |= b->iters[i].kind == TIR_ITER_REDUCE;
    if (!reduce) return true;
    const tir_buffer_store *u = tir_as_tir_buffer_store(b->body);
    if (u) return store_commutes(u);
    /* a tensorized tile operation accumulates (mma_sync) */
    if (b->body->kind == TIR_KIND_EVALUATE) return true;
    /* blockize's outer block: the steps of the blocks it holds */
    nested_v nv = {{nested_pre, NULL, NULL}, true, 0};
    tir_visit(&nv.v, b->body);
    return nv.nblocks > 0 && nv.all_commute;
}

/* e = sum coef[i] * vars[i] + (terms free of vars), coefficients
 * constant.  False for anything else. */
static bool linear(const tir_expr *e, int nv, const tir_var *const *vars, int64_t scale,
                   int64_t *coef) {
    const tir_var *v = tir_as_tir_var(e);
    if (v) {
        for (int i = 0; i < nv; i++)
            if (vars[i] == v && __builtin_add_overflow(coef[i], scale, &coef[i])) return false;
        return true;
    }
    if (tir_as_tir_int_imm(e)) return true;
    const tir_cast *c = tir_as_tir_cast(e);
    if (c) return tir_dtype_is_int(c->value->dtype) && linear(c->value, nv, vars, scale, coef);
    const tir_binop *bo = tir_as_tir_binop(e);
    if (!bo) return false;
    bool uses_a = false, uses_b = false;
    for (int i = 0; i < nv; i++) {
        uses_a |= tir_uses_var(bo->a, vars[i]);
        uses_b |= tir_uses_var(bo->b, vars[i]);
    }
    if (!uses_a && !uses_b) return true;
    int64_t k, s2;
    switch ((tir_kind)e->kind) {
    case TIR_KIND_ADD:
        return linear(bo->a, nv, vars, scale, coef) && linear(bo->b, nv, vars, scale, coef);
    case TIR_KIND_SUB:
        return linear(bo->a, nv, vars, scale, coef) && linear(bo->b, nv, vars, -scale, coef);
    case TIR_KIND_MUL:
        if (uses_a && uses_b) return false;
        if (!tir_expr_const_int(uses_a ? bo->b : bo->a, &k) ||
            __builtin_mul_overflow(scale, k, &s2))
            return false;
        return linear(uses_a ? bo->a : bo->b, nv, vars, s2, coef);
    default: return false;
    }
}

/* The odometer over the loops (constant ranges) in nesting order: each
 * step's reduce iterator values, compared with the last in iterator
 * order, must never decrease. */
static bool enumerate_increasing(tir_ctx *ctx, const tir_block_realize *r, int nf,
                                 const tir_for *const *f, int nfix, const tir_var *const *fix,
                                 const int64_t *fixv) {
    int nv = nf + nfix;
    const tir_var **vars = IR_NEWN(ctx, const tir_var *, nv + 1);
    int64_t *vals = IR_NEWN(ctx, int64_t, nv + 1), *ext = IR_NEWN(ctx, int64_t, nf + 1);
    int64_t *prev = IR_NEWN(ctx, int64_t, r->nvalues + 1);
    int64_t *cur = IR_NEWN(ctx, int64_t, r->nvalues + 1);
    bool ok = true, first = true;
    for (int i = 0; ok && i < nf; i++) {
        vars[i] = f[i]->var;
        ok = tir_expr_const_int(f[i]->min, &vals[i]) && tir_expr_const_int(f[i]->extent, &ext[i]);
        if (ok) ext[i] += vals[i]; /* the end */
    }
    for (int i = 0; i < nfix; i++) vars[nf + i] = fix[i], vals[nf + i] = fixv[i];
    while (ok) {
        for (int k = 0; ok && k < r->nvalues; k++) {
            if (r->block->iters[k].kind != TIR_ITER_REDUCE) continue;
            ok = sch_eval_int(r->values[k], nv, vars, vals, &cur[k]);
        }
        if (!ok) break;
        if (!first) {
            int k = 0;
            while (k < r->nvalues &&
                   (r->block->iters[k].kind != TIR_ITER_REDUCE || cur[k] == prev[k]))
                k++;
            if (k < r->nvalues && cur[k] < prev[k]) ok = false;
        }
        first = false;
        memcpy(prev, cur, (size_t)r->nvalues * sizeof *cur);
        int d = nf - 1;
        while (d >= 0 && ++vals[d] == ext[d]) {
            vals[d] = tir_as_tir_int_imm(f[d]->min)->value;
            d--;
        }
        if (d < 0) break;
    }
    return ok;
}

/* Without enumerating: each reduce binding linear in the loops, every
 * coefficient positive and larger than the span of the loops inside it
 * that feed the same iterator (so each iterator increases), and the
 * loops of iterator i above those of any later iterator. */
static bool affine_increasing(tir_ctx *ctx, const tir_block_realize *r, int nf,
                              const tir_for *const *f) {
    const tir_var **vars = IR_NEWN(ctx, const tir_var *, nf + 1);
    int64_t *coef = IR_NEWN(ctx, int64_t, nf + 1);
    int *owner = IR_NEWN(ctx, int, nf + 1);
    bool ok = true;
    for (int i = 0; ok && i < nf; i++) vars[i] = f[i]->var, owner[i] = -1;
    for (int k = 0; ok && k < r->nvalues; k++) {
        if (r->block->iters[k].kind != TIR_ITER_REDUCE) continue;
        memset(coef, 0, (size_t)nf * sizeof *coef);
        ok = linear(r->values[k], nf, vars, 1, coef);
        int64_t span = 0; /* of the loops inside, this iterator's */
        for (int i = nf - 1; ok && i >= 0; i--) {
            if (!coef[i]) continue;
            int64_t e;
            ok = owner[i] < 0 && coef[i] > span;
            owner[i] = k;
            if (ok && i > 0) {
                ok = tir_expr_const_int(f[i]->extent, &e) && e >= 1 &&
                     !__builtin_mul_overflow(coef[i], e - 1, &e) &&
                     !__builtin_add_overflow(span, e, &span);
            }
        }
    }
    /* iterators in index order from the outside in */
    for (int i = 0, last = -1; ok && i < nf; i++) {
        if (owner[i] < 0) continue;
        ok = owner[i] >= last;
        last = owner[i];
    }
    return ok;
}

bool sch_reduce_steps_in_order(const tir_schedule *s, int bi) {
    const tir_block_realize *r = (const tir_block_realize *)sch_sref_stmt(s, bi);
    const tir_block *b = r->block;
    if (sch_reduction_commutes(b)) return true;
    int sc = sch_scope_of(s, bi), np = 0;
    for (int p = s->srefs[bi].parent; p != sc && p >= 0; p = s->srefs[p].parent) np++;
    const tir_for **path = IR_NEWN(s->ctx, const tir_for *, np + 1);
    const tir_for **f = IR_NEWN(s->ctx, const tir_for *, np + 1);
    const tir_var **fix = IR_NEWN(s->ctx, const tir_var *, np + 1);
    int64_t *fixv = IR_NEWN(s->ctx, int64_t, np + 1);
    bool ok = true;
    int k = np, nf = 0, nfix = 0;
    for (int p = s->srefs[bi].parent; ok && p != sc && p >= 0; p = s->srefs[p].parent)
        path[--k] = sch_sref_for(s, p);
    /* the loops feeding reduce iterators (outermost first), none also
       feeding a spatial one; the others fixed at their first value */
    for (int i = 0; ok && i < np; i++) {
        bool red = false, sp = false;
        for (int j = 0; j < r->nvalues; j++)
            if (tir_uses_var(r->values[j], path[i]->var)) {
                if (b->iters[j].kind == TIR_ITER_REDUCE)
                    red = true;
                else
                    sp = true;
            }
        if (red && sp)
            ok = false;
        else if (red && !sch_is_const(path[i]->extent, 1))
            f[nf++] = path[i];
        else if (tir_expr_const_int(path[i]->min, &fixv[nfix]))
            fix[nfix++] = path[i]->var;
    }
    int64_t steps = 1;
    for (int i = 0; ok && i < nf && steps <= (1 << 16); i++) {
        int64_t e;
        if (!tir_expr_const_int(f[i]->extent, &e) || !tir_as_tir_int_imm(f[i]->min))
            steps = INT64_MAX;
        else
            steps *= e;
    }
    if (ok)
        ok = steps <= (1 << 16) ? enumerate_increasing(s->ctx, r, nf, f, nfix, fix, fixv)
                                : affine_increasing(s->ctx, r, nf, f);
    return ok;
}

tir_status sch_check_reduce_order(sch_call *c, uint32_t brv, int bi) {
    if (sch_reduce_steps_in_order(c->sch, bi)) return TIR_OK;
    const tir_block *b = sch_sref_block(c->sch, bi);
    return sch_fail(c, TIR_ERR_SCHED_REDUCTION_ORDER, brv, b,
                    "block \"%s\" would get one loop per iterator, running its reduction "
                    "steps in the order of its reduce iterators, which its loops do not "
                    "follow; its update is not C = C op x with a commutative op (+, *, "
                    "min, max) and x not reading C, so that would change the result",
                    b->name);
}
