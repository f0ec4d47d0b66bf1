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

static const char *const axes[] = {"blockIdx.x",  "blockIdx.y",  "blockIdx.z",
                                   "threadIdx.x", "threadIdx.y", "threadIdx.z",
                                   "vthread.x",   "vthread.y",   "vthread.z"};

typedef struct {
    tir_visitor v;
    const char *tag;
    const tir_for *found;
} find_tag;

static bool find_tag_pre(tir_visitor *v, const tir_node *n) {
    find_tag *f = (find_tag *)v;
    if (f->found) return false;
    const tir_for *l = tir_as_tir_for(n);
    if (l && l->thread_tag == f->tag) f->found = l;
    /* Expressions cannot hold loops. */
    return !tir_kind_is_expr((tir_kind)n->kind) && !f->found;
}

tir_status sch_prim_bind(sch_call *c) {
    const tir_schedule *s = c->sch;
    uint32_t rv = c->args[0].rv;
    const char *axis = c->args[1].s;
    int li = sch_loop_sref(c, rv);
    const tir_for *loop = sch_sref_for(s, li);

    const char *tag = NULL;
    for (size_t i = 0; i < sizeof axes / sizeof *axes; i++)
        if (strcmp(axes[i], axis) == 0) tag = tir_intern(c->ctx, axes[i]);
    if (!tag)
        return sch_fail(c, TIR_ERR_SCHED_BAD_THREAD_AXIS, rv, loop,
                        "unknown thread axis \"%s\"; use blockIdx.x/y/z, threadIdx.x/y/z or "
                        "vthread.x/y/z",
                        axis);
    TIR_TRY(sch_check_serial(c, rv, loop, "bound"));
    TIR_TRY(sch_check_min_zero(c, rv, loop));
    for (int p = s->srefs[li].parent; p >= 0; p = s->srefs[p].parent) {
        const tir_for *f = sch_sref_for(s, p);
        if (f && f->thread_tag == tag) {
            const void *marks[2] = {f, loop};
            return sch_fail_marks(c, TIR_ERR_SCHED_AXIS_REBOUND, rv, 2, marks,
                                  "enclosing loop %s is already bound to %s", f->var->name,
                                  tag);
        }
    }
    find_tag ft = {{find_tag_pre, NULL, NULL}, tag, NULL};
    tir_visit(&ft.v, loop->body);
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
