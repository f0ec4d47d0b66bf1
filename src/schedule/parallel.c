/* parallel.c: mark a loop parallel across CPU threads (TVM's Parallel).
 *
 * Same soundness conditions as bind: independent iterations, no
 * reduction fed by the loop.
 */
#include "sched_internal.h"

tir_status sch_prim_parallel(sch_call *c) {
    uint32_t rv = c->args[0].rv;
    const tir_for *loop = sch_sref_for(c->sch, sch_loop_sref(c, rv));
    TIR_TRY(sch_check_serial(c, rv, loop, "parallelized"));
    TIR_TRY(sch_check_min_zero(c, rv, loop));
    TIR_TRY(sch_check_parallelizable(c, rv, loop));
    c->func = sch_replace_loop_kind(c, loop, TIR_FOR_PARALLEL, NULL);
    return TIR_OK;
}

tir_status tir_sched_parallel(tir_schedule *s, tir_loop_rv loop) {
    if (!s) return sch_bad_arg(s, "parallel", "schedule is NULL");
    sch_arg args[1] = {SCH_RV(loop)};
    return sch_run(s, SCH_INST_parallel, args, NULL, NULL);
}
