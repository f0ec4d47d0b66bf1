/* bind.c: bind a loop to a GPU thread axis (TVM's Bind).
 *
 * Binding only changes the loop's kind: every iteration still runs, now
 * on its own block or thread.  That is sound only when the iterations are
 * independent, hence the checks shared with vectorize and parallel; binding
 * a loop that feeds a reduction (a cross-thread reduction) is refused
 * outright because lowering has no such reduction.
 */
#include <string.h>

#include "sched_internal.h"

/* An inner loop bound to the axis of an outer one stands for the same
 * hardware thread index.  That matches the sequential meaning when the
 * extents agree and nothing inside the inner loop depends on the outer
 * variable: every outer instance then does the same work, which the
 * threads share (a cooperative fetch under compute loops, after
 * compute_at relaxed the fetched region over the thread loops). */
static bool same_thread(tir_ctx *ctx, tir_analyzer *a, const tir_for *outer,
                        const tir_for *inner) {
    if (tir_uses_var(inner->min, outer->var) || tir_uses_var(inner->extent, outer->var) ||
        tir_uses_var(inner->body, outer->var))
        return false;
    return tir_analyzer_can_prove(a, tir_binop_new(ctx, TIR_KIND_EQ, outer->extent, inner->extent));
}

typedef struct {
    tir_visitor v;
    const char *tag;
    const tir_for *found;
    tir_analyzer *a;
    const tir_for *outer;
    tir_ctx *ctx;
} find_tag;

static bool find_tag_pre(tir_visitor *v, const tir_node *n) {
    find_tag *f = (find_tag *)v;
    if (f->found) return false;
    const tir_for *l = tir_as_tir_for(n);
    if (l && l->thread_tag == f->tag && !same_thread(f->ctx, f->a, f->outer, l)) f->found = l;
    /* Expressions cannot hold loops. */
    return !tir_kind_is_expr((tir_kind)n->kind) && !f->found;
}

tir_status sch_prim_bind(sch_call *c) {
    const tir_schedule *s = c->sch;
    uint32_t rv = c->args[0].rv;
    const char *axis = c->args[1].s;
    int li = sch_loop_sref(c, rv);
    const tir_for *loop = sch_sref_for(s, li);

    const char *tag = ir_thread_axis_find(axis);
    if (!tag)
        return sch_fail(c, TIR_ERR_SCHED_BAD_THREAD_AXIS, rv, loop,
                        "unknown thread axis \"%s\"; use one of%s", axis,
                        tir_thread_axis_tags(false));
    tag = tir_intern(c->ctx, tag);
    TIR_TRY(sch_check_serial(c, rv, loop, "bound"));
    TIR_TRY(sch_check_min_zero(c, rv, loop));
    tir_analyzer *a = tir_analyzer_create(c->ctx);
    sch_bind_ancestors(s, a, li);
    for (int p = s->srefs[li].parent; p >= 0; p = s->srefs[p].parent) {
        const tir_for *f = sch_sref_for(s, p);
        if (f && f->thread_tag == tag && !same_thread(c->ctx, a, f, loop)) {
            tir_analyzer_destroy(a);
            const void *marks[2] = {f, loop};
            return sch_fail_marks(c, TIR_ERR_SCHED_AXIS_REBOUND, rv, 2, marks,
                                  "enclosing loop %s is already bound to %s", f->var->name,
                                  tag);
        }
    }
    find_tag ft = {{find_tag_pre, NULL, NULL}, tag, NULL, a, loop, c->ctx};
    tir_visit(&ft.v, loop->body);
    tir_analyzer_destroy(a);
    if (ft.found) {
        const void *marks[2] = {loop, ft.found};
        return sch_fail_marks(c, TIR_ERR_SCHED_AXIS_REBOUND, rv, 2, marks,
                              "loop %s inside it is already bound to %s", ft.found->var->name,
                              tag);
    }
    TIR_TRY(sch_check_parallelizable(c, rv, loop));
    c->func = sch_replace_loop_kind(c, loop, TIR_FOR_THREAD_BINDING, tag);
    return TIR_OK;
}

tir_status tir_sched_bind(tir_schedule *s, tir_loop_rv loop, const char *thread_axis) {
    if (!s) return sch_bad_arg(s, "bind", "schedule is NULL");
    sch_arg args[2] = {SCH_RV(loop), {.s = thread_axis}};
    return sch_run(s, SCH_INST_bind, args, NULL, NULL);
}
