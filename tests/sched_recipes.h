/* sched_recipes.h: a few complete schedules written against the public
 * API, shared by the trace-to-C generator (gen_trace_c) and the test that
 * compiles its output (test_sched_trace_c). */
#ifndef MINITIR_TESTS_SCHED_RECIPES_H
#define MINITIR_TESTS_SCHED_RECIPES_H

#include "minitir/schedule.h"

typedef struct sched_recipe {
    const char *name;
    /* The unscheduled function. */
    const tir_prim_func *(*func)(tir_ctx *ctx);
    /* Applies the schedule by direct API calls. */
    tir_status (*apply)(tir_schedule *s);
} sched_recipe;

extern const sched_recipe sched_recipes[];
extern const int sched_nrecipes;

#endif
