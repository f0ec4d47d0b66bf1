/* test_sched_trace_c.c: traces printed as C compile and reproduce their
 * schedule.  gen_trace_c printed each recipe's trace as a C function at
 * build time; here each generated function runs on a fresh schedule and
 * must give a structurally equal function and the same trace text as the
 * recipe applied directly. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "sched_check.h"
#include "sched_recipes.h"

typedef tir_status (*gen_fn)(tir_schedule *);
extern const gen_fn gen_traces[];

static void test_generated_c(void **st) {
    (void)st;
    for (int i = 0; i < sched_nrecipes; i++) {
        tir_ctx *ctx = tir_ctx_create();
        const tir_prim_func *f = sched_recipes[i].func(ctx);
        assert_non_null(f);
        tir_schedule *direct, *gen;
        assert_int_equal(tir_sched_create(ctx, f, &direct), TIR_OK);
        assert_int_equal(tir_sched_create(ctx, f, &gen), TIR_OK);
        SCHED_OK(direct, sched_recipes[i].apply(direct));
        SCHED_OK(gen, gen_traces[i](gen));
        char diff[1024];
        if (!tir_struct_equal_explain(tir_sched_func(gen), tir_sched_func(direct), diff,
                                      sizeof diff))
            fail_msg("recipe %s: generated C gives another function: %s", sched_recipes[i].name,
                     diff);
        assert_string_equal(tir_sched_trace_text(gen), tir_sched_trace_text(direct));
        assert_true(tir_sched_trace_len(gen) > 5);
        sched_check_all(direct);
        tir_sched_destroy(direct);
        tir_sched_destroy(gen);
        tir_ctx_destroy(ctx);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_generated_c)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
