/* show.c: `tirc show`: the unscheduled IR, then the IR after each seed step
 * (--each: after every primitive; --trace: the schedule trace as C).
 */
#include <stdio.h>

#include "tirc.h"

int tirc_cmd_show(tir_ctx *ctx, const opts *o) {
    int nepi = tirc_is_fused(o) ? (o->epi < 0 ? SEED_NEPI : 1) : 1;
    for (int ei = 0; ei < nepi; ei++) {
        int e = o->epi < 0 ? ei : o->epi;
        const tir_prim_func *f = tirc_define(ctx, o, e, o->M, o->N, o->K);
        if (!f) {
            fprintf(stderr, "tirc: %s\n", tir_ctx_error(ctx));
            return EXIT_COMPILE;
        }
        printf("==== %s%s%s %lldx%lldx%lld: unscheduled\n%s\n", o->example,
               tirc_is_fused(o) ? " " : "", tirc_is_fused(o) ? seed_epi_name((seed_epi)e) : "",
               (long long)o->M, (long long)o->N, (long long)o->K, tir_print(ctx, f));
        for (int step = o->step_lo; step <= o->step_hi; step++) {
            if (o->each) printf("==== %s\n", seed_step_title(step));
            tir_schedule *s;
            if (tirc_schedule(ctx, f, tirc_is_fused(o), step, tirc_tiles(o), o->splitk, o->atomic, o->stages, tirc_config(o), tirc_tc_off(o), o->each, &s) != TIR_OK) {
                fprintf(stderr, "tirc: step %d: %s\n", step, tir_ctx_error(ctx));
                return EXIT_COMPILE;
            }
            printf("==== %s%s\n%s\n", seed_step_title(step),
                   tirc_is_fused(o) ? " (after fusion)" : "", tir_print(ctx, tir_sched_func(s)));
            if (o->trace) {
                char fn[32];
                snprintf(fn, sizeof fn, "seed_step%d", step);
                printf("==== Step %d trace as C\n%s\n", step, tir_sched_trace_c(s, fn));
            }
            tir_sched_destroy(s);
        }
    }
    return EXIT_OK;
}
