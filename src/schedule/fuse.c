/* fuse.c: fuse directly nested loops into one (TVM's Fuse).
 *
 * The fused variable runs over the product of the extents; each old
 * variable is recovered as floormod(floordiv(fused, inner product),
 * extent), with the outermost keeping no floormod and the innermost no
 * floordiv, and the analyzer then folds what it can.
 */
#include <string.h>

#include "sched_internal.h"

/* The fused extent.  A loop of negative extent runs no iteration, but two
 * negative extents multiply to a positive one (n = m = -1 fused ran one
 * instance where the loops run none), so where two or more factors are
 * not provably >= 0 each of those enters as max(e, 0).  One such factor
 * alone needs no clamp: the product then has its sign. */
static const tir_expr *fused_extent(tir_ctx *ctx, tir_analyzer *a, const tir_for *const *loops,
                                    int n) {
    bool *maybe_neg = IR_NEWN(ctx, bool, n);
    int nneg = 0;
    for (int i = 0; i < n; i++) {
        const tir_expr *e = loops[i]->extent;
        const tir_expr *zero = tir_int(ctx, e->dtype, 0);
        maybe_neg[i] = !tir_analyzer_can_prove(a, tir_binop_new(ctx, TIR_KIND_GE, e, zero));
        nneg += maybe_neg[i];
    }
    const tir_expr *total = NULL;
    for (int i = 0; i < n; i++) {
        const tir_expr *e = loops[i]->extent;
        if (nneg > 1 && maybe_neg[i]) e = tir_max(ctx, e, tir_int(ctx, e->dtype, 0));
        total = total ? tir_mul(ctx, total, e) : e;
    }
    return tir_analyzer_simplify(a, total);
}

tir_status sch_prim_fuse(sch_call *c) {
    const tir_schedule *s = c->sch;
    tir_ctx *ctx = c->ctx;
    int n = c->args[0].n;
    const uint32_t *rvs = c->args[0].rvs;

    int *sr;
    TIR_TRY(sch_loop_list(c, "fuse", &sr));
    const tir_for **loops = IR_NEWN(ctx, const tir_for *, n);
    for (int i = 0; i < n; i++) loops[i] = sch_sref_for(s, sr[i]);
    for (int i = 0; i + 1 < n; i++)
        if (loops[i]->body != &loops[i + 1]->base) {
            const void *marks[2] = {loops[i], loops[i + 1]};
            return sch_fail_marks(c, TIR_ERR_SCHED_NOT_CONSECUTIVE, rvs[i + 1], 2, marks,
                                  "loop %s must be the whole body of loop %s, outermost "
                                  "first, with nothing in between",
                                  loops[i + 1]->var->name, loops[i]->var->name);
        }
    for (int i = 0; i < n; i++)
        if (loops[i]->kind != TIR_FOR_SERIAL)
            return sch_fail(c, TIR_ERR_SCHED_LOOP_NOT_SERIAL, rvs[i], loops[i],
                            "only serial loops can be fused, but %s is %s", loops[i]->var->name,
                            tir_for_kind_name(loops[i]->kind));
    for (int i = 0; i < n; i++)
        if (loops[i]->nannots > 0)
            return sch_fail(c, TIR_ERR_SCHED_LOOP_ANNOTATED, rvs[i], loops[i],
                            "loops with annotations cannot be fused, but %s has \"%s\"",
                            loops[i]->var->name, loops[i]->annots[0].key);
    for (int i = 0; i < n; i++)
        if (!sch_is_const(loops[i]->min, 0))
            return sch_fail(c, TIR_ERR_SCHED_LOOP_MIN_NONZERO, rvs[i], loops[i],
                            "the loops must start at 0, but %s starts at %s",
                            loops[i]->var->name, tir_print(ctx, loops[i]->min));
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            if (i != j && tir_uses_var(loops[i]->extent, loops[j]->var))
                return sch_fail(c, TIR_ERR_SCHED_DEPENDENT_DOMAIN, rvs[i], loops[i],
                                "the extent of %s uses %s, another loop being fused",
                                loops[i]->var->name, loops[j]->var->name);
    tir_dtype dt = loops[0]->var->base.dtype;
    for (int i = 1; i < n; i++)
        if (!tir_dtype_eq(loops[i]->var->base.dtype, dt)) {
            char a[32], b[32];
            return sch_fail(c, TIR_ERR_TYPE, rvs[i], loops[i],
                            "loop variables must share one dtype, but %s is %s and %s is %s",
                            loops[0]->var->name, tir_dtype_str(dt, a, sizeof a),
                            loops[i]->var->name,
                            tir_dtype_str(loops[i]->var->base.dtype, b, sizeof b));
        }

    tir_analyzer *a = tir_analyzer_create(ctx);
    int outer = sch_loop_sref(c, rvs[0]);
    sch_bind_ancestors(s, a, s->srefs[outer].parent);
    /* 9: a loop that provably never runs (range(x) where x is 0) would be
       recovered dividing by 0 (simplified to 0 // 0), an expression later
       primitives copy where it runs; nothing runs under it to fuse */
    for (int i = 1; i < n; i++) {
        const tir_expr *e = loops[i]->extent;
        if (tir_analyzer_can_prove(a, tir_le(ctx, e, tir_int(ctx, e->dtype, 0)))) {
            tir_analyzer_destroy(a);
            return sch_fail(c, TIR_ERR_SCHED_DEPENDENT_DOMAIN, rvs[i], loops[i],
                            "loop %s never runs (its extent, %s, is not positive): its "
                            "variable would be recovered from the fused one dividing by 0",
                            loops[i]->var->name, tir_print(ctx, e));
        }
    }
    ir_strbuf name;
    ir_sb_init(&name);
    for (int i = 0; i < n; i++) ir_sb_printf(&name, "%s_", loops[i]->var->name);
    ir_sb_puts(&name, "fused");
    const tir_var *fv = tir_var_new(ctx, name.data, dt);
    ir_sb_free(&name);

    const tir_expr *total = fused_extent(ctx, a, loops, n);
    tir_analyzer_bind(a, fv, tir_int(ctx, dt, 0), total);

    const tir_var **olds = IR_NEWN(ctx, const tir_var *, n);
    const tir_expr **vals = IR_NEWN(ctx, const tir_expr *, n);
    const tir_expr *inner = NULL; /* product of the extents inside loop i */
    for (int i = n - 1; i >= 0; i--) {
        const tir_expr *v = &fv->base;
        if (inner) v = tir_floordiv(ctx, v, inner);
        if (i > 0) v = tir_floormod(ctx, v, loops[i]->extent);
        olds[i] = loops[i]->var;
        vals[i] = tir_analyzer_simplify(a, v);
        inner = inner ? tir_mul(ctx, loops[i]->extent, inner) : loops[i]->extent;
    }
    const tir_stmt *body = sch_rewrite_under(ctx, a, loops[n - 1]->body, n, olds, vals, NULL);
    tir_analyzer_destroy(a);
    body = tir_for_new(ctx, fv, tir_int(ctx, dt, 0), total, TIR_FOR_SERIAL, NULL, 0, NULL, body);
    const tir_stmt *o[1] = {&loops[0]->base}, *nw[1] = {body};
    c->func = sch_replace(c, 1, o, nw);
    sch_out_loop(c, fv);
    return TIR_OK;
}

tir_status tir_sched_fuse(tir_schedule *s, int nloops, const tir_loop_rv *loops,
                          tir_loop_rv *out) {
    if (!s || !out) return sch_bad_arg(s, "fuse", "out is NULL");
    sch_arg args[1] = {sch_rv_list(s, nloops, loops)};
    const uint32_t *ids;
    TIR_TRY(sch_run(s, SCH_INST_fuse, args, &ids, NULL));
    *out = sch_loop_rv(s, ids[0]);
    return TIR_OK;
}
