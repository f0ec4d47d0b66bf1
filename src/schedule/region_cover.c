/* region_cover.c: proofs that what a block writes during one iteration of
 * a loop covers what another block reads there (TVM's region-cover
 * check of compute_at / reverse_compute_at).
 *
 * Relaxing a region over loops gives its bounding box, which is all that
 * is needed to place a block that reads (compute_at recomputes the box)
 * but not to place one after blocks that write: a producer whose inner
 * loops step by 4 writes columns j, j+4, j+8 under a loop, and a consumer
 * placed over their bounding interval reads columns never written.  So
 * the instances a block runs during one iteration are taken as exact only
 * when the proof below goes through, and the placement is refused
 * otherwise: each binding is affine in the loops inside the target loop
 * (no floordiv/floormod of them, as fuse leaves), each such loop feeds one
 * iterator only, and per iterator the coefficients and constant extents
 * form a dense mixed radix (1, e1, e1*e2, ...), so the iterator runs over
 * one interval with no hole.  With a predicate that only bounds bindings
 * to their domains, the instances run are then that box intersected with
 * the block's domain (schedules run every instance of a block once).
 */
#include "sched_internal.h"

/* Coefficients are the products of loop extents; past this, refuse. */
#define COEF_LIMIT ((int64_t)1 << 40)

/* Adds scale * e to the linear form over vars (coef[], *rest).  False
 * when e is not affine in vars. */
static bool linear(tir_ctx *ctx, const tir_expr *e, int nv, const tir_var *const *vars,
                   int64_t scale, int64_t *coef, const tir_expr **rest) {
    bool uses = false;
    for (int i = 0; i < nv && !uses; i++) uses = tir_uses_var(e, vars[i]);
    if (!uses) {
        const tir_expr *t = scale == 1 ? e : tir_mul(ctx, e, tir_int(ctx, e->dtype, scale));
        *rest = *rest ? tir_add(ctx, *rest, t) : t;
        return true;
    }
    const tir_binop *b = tir_as_tir_binop(e);
    int64_t c;
    switch ((tir_kind)e->kind) {
    case TIR_KIND_VAR:
        for (int i = 0; i < nv; i++)
            if (&vars[i]->base == e) coef[i] += scale;
        return true;
    case TIR_KIND_ADD:
        return linear(ctx, b->a, nv, vars, scale, coef, rest) &&
               linear(ctx, b->b, nv, vars, scale, coef, rest);
    case TIR_KIND_SUB:
        return linear(ctx, b->a, nv, vars, scale, coef, rest) &&
               linear(ctx, b->b, nv, vars, -scale, coef, rest);
    case TIR_KIND_MUL:
        if (tir_expr_const_int(b->b, &c) || tir_expr_const_int(b->a, &c)) {
            if (c > COEF_LIMIT || c < -COEF_LIMIT || scale > COEF_LIMIT ||
                scale < -COEF_LIMIT)
                return false;
            return linear(ctx, tir_expr_const_int(b->b, &c) ? b->a : b->b, nv, vars,
                          scale * c, coef, rest);
        }
        return false;
    default: return false;
    }
}

bool sch_pred_bounds_only(tir_ctx *ctx, tir_analyzer *a, const tir_block_realize *r,
                          const tir_expr *e) {
    const tir_binop *b = tir_as_tir_binop(e);
    if (b && e->kind == TIR_KIND_AND)
        return sch_pred_bounds_only(ctx, a, r, b->a) && sch_pred_bounds_only(ctx, a, r, b->b);
    int64_t v;
    if (tir_expr_const_int(e, &v)) return v != 0;
    if (!b || e->kind != TIR_KIND_LT) return false;
    for (int k = 0; k < r->nvalues; k++) {
        const tir_iter_var *it = &r->block->iters[k];
        const tir_expr *d1 = tir_sub(ctx, b->a, r->values[k]);
        const tir_expr *d2 = tir_sub(ctx, b->b, tir_add(ctx, it->dom.min, it->dom.extent));
        if (sch_is_const(tir_analyzer_simplify(a, d1), 0) &&
            sch_is_const(tir_analyzer_simplify(a, d2), 0))
            return true;
    }
    return false;
}

/* One iterator's binding = rest + sum coef[i] * loops[i]->var: checks
 * that the coefficients form a dense mixed radix and sets *box.
 * owner[i] records which iterator uses loop i (a loop feeding two
 * iterators runs a diagonal, not a box). */
static bool dense(tir_ctx *ctx, tir_analyzer *a, int k, int nv, const tir_for *const *loops,
                  const int64_t *coef, int *owner, const tir_expr *rest, sch_bound *box) {
    int64_t *ext = IR_NEWN(ctx, int64_t, nv + 1);
    bool *done = IR_NEWN(ctx, bool, nv + 1);
    int left = 0;
    for (int i = 0; i < nv; i++) {
        if (coef[i] == 0) continue;
        if (coef[i] < 0 || owner[i] >= 0 || !tir_expr_const_int(loops[i]->extent, &ext[i]) ||
            ext[i] < 1)
            return false;
        owner[i] = k;
        left++;
        /* The loop runs min .. min + ext - 1: fold min into the rest. */
        rest = tir_add(ctx, rest, tir_mul(ctx, loops[i]->min,
                                          tir_int(ctx, rest->dtype, coef[i])));
    }
    int64_t want = 1;
    while (left > 0) {
        int pick = -1;
        for (int i = 0; i < nv; i++) {
            if (coef[i] != want || owner[i] != k || done[i]) continue;
            if (pick >= 0) return false; /* two loops, one stride: overlap */
            pick = i;
        }
        if (pick < 0 || ext[pick] > COEF_LIMIT / want) return false; /* a hole */
        done[pick] = true;
        want *= ext[pick];
        left--;
    }
    box->lo = tir_analyzer_simplify(a, rest);
    box->hi = tir_analyzer_simplify(a, tir_add(ctx, rest, tir_int(ctx, rest->dtype, want)));
    return true;
}

bool sch_exec_box(const tir_schedule *s, tir_analyzer *a, int bi, int loop, sch_bound *box) {
    tir_ctx *ctx = s->ctx;
    const tir_block_realize *r = s->srefs[bi].realize;
    if (!sch_pred_bounds_only(ctx, a, r, r->predicate)) return false;
    const tir_var **vars = IR_NEWN(ctx, const tir_var *, s->nsrefs + 1);
    const tir_for **loops = IR_NEWN(ctx, const tir_for *, s->nsrefs + 1);
    int nv = 0;
    for (int p = s->srefs[bi].parent; p >= 0 && p != loop; p = s->srefs[p].parent)
        if (sch_sref_for(s, p)) {
            loops[nv] = sch_sref_for(s, p);
            vars[nv] = loops[nv]->var;
            nv++;
        }
    int *owner = IR_NEWN(ctx, int, nv + 1);
    for (int i = 0; i < nv; i++) owner[i] = -1;
    for (int k = 0; k < r->nvalues; k++) {
        int64_t *coef = IR_NEWN(ctx, int64_t, nv + 1);
        const tir_expr *v = tir_analyzer_simplify(a, r->values[k]);
        const tir_expr *rest = NULL;
        if (!linear(ctx, v, nv, vars, 1, coef, &rest)) return false;
        if (!rest) rest = tir_int(ctx, v->dtype, 0);
        if (!dense(ctx, a, k, nv, loops, coef, owner, rest, &box[k])) return false;
    }
    return true;
}

bool sch_prove_le(tir_ctx *ctx, tir_analyzer *a, const tir_expr *x, const tir_expr *y) {
    if (!x || !y || !tir_dtype_eq(x->dtype, y->dtype)) return false;
    return tir_analyzer_can_prove(a, tir_binop_new(ctx, TIR_KIND_LE, x, y));
}
