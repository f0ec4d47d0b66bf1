/* unroll.c: mark a loop unrolled (TVM's Unroll).
 *
 * Unrolling keeps the iteration order, so it needs nothing of the blocks
 * below; it only refuses loops that are already bound, vectorized or
 * parallel, whose kind it would silently overwrite.
 */
#include "sched_internal.h"

tir_status sch_prim_unroll(sch_call *c) {
    uint32_t rv = c->args[0].rv;
    const tir_for *loop = sch_sref_for(c->sch, sch_loop_sref(c, rv));
    TIR_TRY(sch_check_serial(c, rv, loop, "unrolled"));
    c->func = sch_replace_loop_kind(c, loop, TIR_FOR_UNROLLED, NULL);
    return TIR_OK;
}

tir_status tir_sched_unroll(tir_schedule *s, tir_loop_rv loop) {
    if (!s) return sch_bad_arg(s, "unroll", "schedule is NULL");
    sch_arg args[1] = {SCH_RV(loop)};
    return sch_run(s, SCH_INST_unroll, args, NULL, NULL);
}
