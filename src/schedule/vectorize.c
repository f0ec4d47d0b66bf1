/* vectorize.c: mark a loop vectorized (TVM's Vectorize).
 *
 * Lanes must be known when code is generated, hence the constant extent;
 * whether the body really becomes vector instructions is lowering's call,
 * the schedule only promises that the iterations are independent.
 */
#include "sched_internal.h"

tir_status sch_prim_vectorize(sch_call *c) {
    uint32_t rv = c->args[0].rv;
    const tir_for *loop = sch_sref_for(c->sch, sch_loop_sref(c, rv));
    TIR_TRY(sch_check_serial(c, rv, loop, "vectorized"));
    TIR_TRY(sch_check_min_zero(c, rv, loop));
    int64_t e;
    if (!tir_expr_const_int(loop->extent, &e))
        return sch_fail(c, TIR_ERR_SCHED_NON_CONST_EXTENT, rv, loop,
                        "a vectorized loop needs a constant extent, but %s runs to %s",
                        loop->var->name, tir_print(c->ctx, loop->extent));
    TIR_TRY(sch_check_parallelizable(c, rv, loop));
    c->func = sch_replace_loop_kind(c, loop, TIR_FOR_VECTORIZED, NULL);
    return TIR_OK;
}

tir_status tir_sched_vectorize(tir_schedule *s, tir_loop_rv loop) {
    if (!s) return sch_bad_arg(s, "vectorize", "schedule is NULL");
    sch_arg args[1] = {SCH_RV(loop)};
    return sch_run(s, SCH_INST_vectorize, args, NULL, NULL);
}
