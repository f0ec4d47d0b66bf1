/* split.c: split one loop into nested loops (TVM's Split).
 *
 * The old variable becomes the mixed-radix sum of the new ones.  When the
 * factors' product may exceed the extent (1000 split by 32 gives 32 x 32 =
 * 1024 iterations), the extra iterations are masked by a predicate on the
 * blocks directly below rather than by shrinking a loop, so every new loop
 * keeps a constant extent, which thread binding and vectorizing want.
 */
#include <string.h>

#include "sched_internal.h"

tir_status sch_prim_split(sch_call *c) {
    const tir_schedule *s = c->sch;
    tir_ctx *ctx = c->ctx;
    uint32_t rv = c->args[0].rv;
    int li = sch_loop_sref(c, rv);
    const tir_for *loop = sch_sref_for(s, li);
    int nf = c->args[1].n;
    const int64_t *factors = c->args[1].ints;

    if (loop->kind != TIR_FOR_SERIAL)
        return sch_fail(c, TIR_ERR_SCHED_LOOP_NOT_SERIAL, rv, loop,
                        "only serial loops can be split, but %s is %s%s%s", loop->var->name,
                        tir_for_kind_name(loop->kind), loop->thread_tag ? " " : "",
                        loop->thread_tag ? loop->thread_tag : "");
    if (loop->nannots > 0)
        return sch_fail(c, TIR_ERR_SCHED_LOOP_ANNOTATED, rv, loop,
                        "loops with annotations cannot be split, but %s has \"%s\"",
                        loop->var->name, loop->annots[0].key);
    if (!sch_is_const(loop->min, 0))
        return sch_fail(c, TIR_ERR_SCHED_LOOP_MIN_NONZERO, rv, loop,
                        "the loop must start at 0, but %s starts at %s", loop->var->name,
                        tir_print(ctx, loop->min));
    if (nf < 2)
        return sch_fail(c, TIR_ERR_SCHED_FACTOR_COUNT, rv, loop,
                        "split needs at least two factors, got %d", nf);
    int infer = -1;
    for (int i = 0; i < nf; i++) {
        if (factors[i] != TIR_SPLIT_INFER) continue;
        if (infer >= 0)
            return sch_fail(c, TIR_ERR_SCHED_MULTIPLE_INFER, rv, loop,
                            "at most one factor of the split of %s may be TIR_SPLIT_INFER, "
                            "but factors %d and %d are",
                            loop->var->name, infer, i);
        infer = i;
    }
    /* 0 meant "infer" once; saying so helps a caller written for that. */
    for (int i = 0; i < nf; i++)
        if (i != infer && factors[i] <= 0)
            return sch_fail(c, TIR_ERR_SCHED_NONPOSITIVE_FACTOR, rv, loop,
                            "factor %d of the split of %s is %lld: a split factor must be "
                            "positive (or TIR_SPLIT_INFER)%s",
                            i, loop->var->name, (long long)factors[i],
                            factors[i] == 0 ? "; 0 does not mean infer" : "");

    tir_dtype dt = loop->var->base.dtype;
    int64_t prod = 1;
    for (int i = 0; i < nf; i++) {
        if (i == infer) continue;
        if (factors[i] > INT32_MAX || prod > INT64_MAX / 4 / factors[i])
            return sch_fail(c, TIR_ERR_SCHED_FACTOR_MISMATCH, rv, loop,
                            "the factors' product overflows");
        prod *= factors[i];
    }

    tir_analyzer *a = tir_analyzer_create(ctx);
    sch_bind_ancestors(s, a, s->srefs[li].parent);
    const tir_expr *extent = loop->extent;
    const tir_expr **ext = IR_NEWN(ctx, const tir_expr *, nf);
    for (int i = 0; i < nf; i++)
        if (i != infer) ext[i] = tir_int(ctx, dt, factors[i]);
    if (infer >= 0) {
        int64_t e;
        if (tir_expr_const_int(extent, &e))
            ext[infer] = tir_int(ctx, dt, (e + prod - 1) / prod);
        else
            ext[infer] = tir_analyzer_simplify(
                a, tir_floordiv(ctx, tir_add(ctx, extent, tir_int(ctx, dt, prod - 1)),
                                tir_int(ctx, dt, prod)));
    } else {
        const tir_expr *cover = tir_binop_new(ctx, TIR_KIND_GE, tir_int(ctx, dt, prod), extent);
        if (!tir_analyzer_can_prove(a, cover)) {
            tir_analyzer_destroy(a);
            return sch_fail(c, TIR_ERR_SCHED_FACTOR_MISMATCH, rv, loop,
                            "the factors' product %lld does not cover the extent %s of %s",
                            (long long)prod, tir_print(ctx, extent), loop->var->name);
        }
    }

    /* The new loops' mixed-radix value runs to the product of their
     * extents minus 1, which must stay in the loop variable's dtype:
     * [None, 3, 2^30] of an int32 loop of 10 made i_1 * 1073741824 wrap
     * at i_1 = 2, a negative index under a guard it passes. */
    int64_t all = prod, outer;
    if (infer >= 0 && tir_expr_const_int(ext[infer], &outer)) all = outer > 0 ? prod * outer : 0;
    if (dt.bits < 64 && all - 1 > (int64_t)(((uint64_t)1 << (dt.bits - 1)) - 1)) {
        tir_analyzer_destroy(a);
        return sch_fail(c, TIR_ERR_SCHED_FACTOR_MISMATCH, rv, loop,
                        "the split loops of %s would reach %lld, past its int%d dtype: the "
                        "factors' product overflows",
                        loop->var->name, (long long)(all - 1), dt.bits);
    }

    /* New variables, outermost first, and the mixed-radix substitute. */
    const tir_var **vars = IR_NEWN(ctx, const tir_var *, nf);
    const tir_expr *sum = NULL;
    for (int i = 0; i < nf; i++) {
        char name[256];
        snprintf(name, sizeof name, "%s_%d", loop->var->name, i);
        vars[i] = tir_var_new(ctx, name, dt);
        tir_analyzer_bind(a, vars[i], tir_int(ctx, dt, 0), ext[i]);
        const tir_expr *v = &vars[i]->base;
        sum = sum ? tir_add(ctx, tir_mul(ctx, sum, ext[i]), v) : v;
    }
    const tir_expr *value = tir_analyzer_simplify(a, sum);
    const tir_expr *inside = tir_lt(ctx, value, extent);
    const tir_expr *guard = NULL;
    if (!tir_analyzer_can_prove(a, inside)) guard = tir_analyzer_simplify(a, inside);

    const tir_var *old[1] = {loop->var};
    const tir_expr *val[1] = {value};
    const tir_stmt *body = sch_rewrite_under(ctx, a, loop->body, 1, old, val, guard);
    tir_analyzer_destroy(a);
    for (int i = nf - 1; i >= 0; i--)
        body = tir_for_new(ctx, vars[i], tir_int(ctx, dt, 0), ext[i], TIR_FOR_SERIAL, NULL, 0,
                           NULL, body);
    const tir_stmt *olds[1] = {&loop->base}, *news[1] = {body};
    c->func = sch_replace(c, 1, olds, news);
    for (int i = 0; i < nf; i++) sch_out_loop(c, vars[i]);
    return TIR_OK;
}

tir_status tir_sched_split(tir_schedule *s, tir_loop_rv loop, int nfactors,
                           const int64_t *factors, tir_loop_rv *out) {
    if (!s || !out) return sch_bad_arg(s, "split", "out is NULL");
    sch_arg args[2] = {SCH_RV(loop), {.n = nfactors, .ints = factors}};
    const uint32_t *ids;
    int n;
    TIR_TRY(sch_run(s, SCH_INST_split, args, &ids, &n));
    for (int i = 0; i < n; i++) out[i] = sch_loop_rv(s, ids[i]);
    return TIR_OK;
}
