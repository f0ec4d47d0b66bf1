/* Regression tests for two software_pipeline soundness bugs the GPU fuzzer
 * found (tests/test_gpu_fuzz.c, CI slice cases 72 and 738), on the trace
 * below over tir_def_matmul(4, 3, 4): a B_shared fetch computed at the
 * reduction's outer loop l7, whose body then has two components, the fetch
 * (0) and the compute (1).
 *
 *   N1: stages [0, 0] with order [1, 0] emitted the compute before the
 *       fetch of the same stage (uninitialised read of B_shared); the
 *       primitive now refuses it (precondition 7), and order [0, 1] lowers.
 *   N2: stages [0, 0], order [0, 1], async stages [0]: sw_pipeline emitted
 *       cp_async_wait before the stage's cp_async_commit, so the compute read
 *       a pending cp.async destination; it now commits before that wait.
 *   N2b: one async component holding both the fetch and the compute (found
 *       by the fuzzer while testing N2's fix): its copies now stay
 *       synchronous.
 *
 * tir_lower refuses such orders when written as plain annotations.
 * Each accepted schedule is lowered (with its static race check) and run in
 * the simulator with race and uninitialised-read checks; its output must
 * equal the interpreter's on the unscheduled matmul, bit for bit.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "minitir/lower.h"
#include "minitir/sim.h"
#include "minitir/runtime.h"
#include "sched_check.h"

static int setup(void **st) {
    *st = tir_ctx_create();
    return *st ? 0 : -1;
}
static int teardown(void **st) {
    tir_ctx_destroy(*st);
    return 0;
}

/* The fuzzer's prefix, the fetch computed at l7 (at_j: at the loop j
 * below it, so that l7's body is one component holding fetch and compute);
 * returns the schedule, *l7 the pipelined loop. */
static tir_schedule *prefix_at(tir_ctx *ctx, bool at_j, tir_loop_rv *l7) {
    tir_schedule *s = sched_new(ctx, tir_def_matmul(ctx, 4, 3, 4, TIR_F32));
    tir_block_rv b0 = sched_block(s, "C"), b12;
    tir_loop_rv l[16], i2[2], k2[2], f;
    sched_loops(s, "C", l);
    SCHED_OK(s, tir_sched_split(s, l[0], 2, (const int64_t[]){TIR_SPLIT_INFER, 2}, i2));
    SCHED_OK(s, tir_sched_split(s, l[2], 2, (const int64_t[]){TIR_SPLIT_INFER, 2}, k2));
    SCHED_OK(s, tir_sched_reorder(s, 5, (const tir_loop_rv[]){i2[0], i2[1], k2[0], l[1], k2[1]}));
    SCHED_OK(s, tir_sched_bind(s, i2[0], "blockIdx.x"));
    SCHED_OK(s, tir_sched_bind(s, i2[1], "threadIdx.x"));
    SCHED_OK(s, tir_sched_cache_read(s, b0, 1, "shared", 0, NULL, &b12));
    SCHED_OK(s, tir_sched_compute_at(s, b12, at_j ? l[1] : k2[0], at_j));
    int nl = sched_loops(s, "B_shared", l);
    assert_int_equal(nl, at_j ? 6 : 5);
    SCHED_OK(s, tir_sched_fuse(s, 2, (const tir_loop_rv[]){l[nl - 2], l[nl - 1]}, &f));
    SCHED_OK(s, tir_sched_split(s, f, 2, (const int64_t[]){TIR_SPLIT_INFER, 2}, l));
    SCHED_OK(s, tir_sched_bind(s, l[1], "threadIdx.x"));
    *l7 = k2[0];
    return s;
}
static tir_schedule *prefix(tir_ctx *ctx, tir_loop_rv *l7) {
    return prefix_at(ctx, false, l7);
}

/* Lowers the schedule, simulates it with all checks on small-integer
 * inputs and compares with the interpreter on the original matmul; returns
 * the number of cp.async copies the simulator completed. */
static int64_t lower_and_simulate(tir_ctx *ctx, tir_schedule *s) {
    const tir_prim_func *k = NULL, *f0 = tir_def_matmul(ctx, 4, 3, 4, TIR_F32);
    tir_status st = tir_lower(ctx, tir_sched_func(s), NULL, &k);
    if (st != TIR_OK) fail_msg("tir_lower: %s: %s", tir_status_name(st), tir_ctx_error(ctx));
    enum { NP = 3 };
    static const size_t n[NP] = {16, 12, 12};
    float a[16], b[12], want[12], got[12];
    for (size_t i = 0; i < n[0]; i++) a[i] = (float)((int)(i * 5 % 7) - 3);
    for (size_t i = 0; i < n[1]; i++) b[i] = (float)((int)(i * 3 % 5) - 2);
    tir_rt_poison(got, sizeof got);
    tir_arg ref[NP] = {{a, 0}, {b, 0}, {want, 0}}, sim[NP] = {{a, 0}, {b, 0}, {got, 0}};
    tir_interp_opts io = {.uninit_params = 1u << 2};
    assert_int_equal(tir_interp_run(ctx, f0, NP, ref, &io), TIR_OK);
    tir_sim_opts so = {.uninit_params = 1u << 2, .check_uninit = true,
                       .check_global_races = true};
    tir_sim_report rep;
    st = tir_sim_run(ctx, k, NP, sim, &so, &rep);
    if (st != TIR_OK)
        fail_msg("simulator: %s: %s\nkernel:\n%s", tir_status_name(st), tir_ctx_error(ctx),
                 tir_print(ctx, k));
    assert_memory_equal(want, got, sizeof want);
    return rep.cp_async_copies;
}

/* N1: the compute may not be emitted before the fetch of its stage. */
static void test_order_within_stage(void **st) {
    tir_ctx *ctx = *st;
    tir_loop_rv l7;
    tir_schedule *s = prefix(ctx, &l7);
    const int64_t stages[2] = {0, 0};
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_PIPELINE_ORDER_DEPENDENCE, "software_pipeline",
                      tir_sched_software_pipeline(s, l7, 2, stages, 2,
                                                  (const int64_t[]){1, 0}, 0, NULL));
    assert_non_null(strstr(tir_ctx_error(ctx), "B_shared"));
    SCHED_OK(s, tir_sched_software_pipeline(s, l7, 2, stages, 2, (const int64_t[]){0, 1}, 0,
                                            NULL));
    sched_check_all(s);
    assert_int_equal(lower_and_simulate(ctx, s), 0);
    tir_sched_destroy(s);
}

/* The same order written as plain annotations (bypassing the primitive's
 * preconditions): tir_lower refuses it, naming the loop and the buffer;
 * and a compute one stage before its fetch likewise. */
static void test_lower_refuses_hand_annotations(void **st) {
    tir_ctx *ctx = *st;
    static const int64_t stages[2][2] = {{0, 0}, {1, 0}}, orders[2][2] = {{1, 0}, {0, 1}};
    static const char *why[2] = {"component 1 (stage 0, order 0) reads B_shared",
                                 "component 1 (stage 0, order 1) reads B_shared"};
    for (int v = 0; v < 2; v++) {
        tir_loop_rv l7;
        tir_schedule *s = prefix(ctx, &l7);
        SCHED_OK(s, tir_sched_annotate_loop_ints(s, l7, "software_pipeline_stage", 2,
                                                 stages[v]));
        SCHED_OK(s, tir_sched_annotate_loop_ints(s, l7, "software_pipeline_order", 2,
                                                 orders[v]));
        const tir_prim_func *k = NULL;
        assert_int_equal(tir_lower(ctx, tir_sched_func(s), NULL, &k), TIR_ERR_LOWER);
        const char *msg = tir_ctx_error(ctx);
        if (!strstr(msg, why[v]) || !strstr(msg, "loop 'k_0'")) fail_msg("message: %s", msg);
        tir_sched_destroy(s);
    }
}

/* N2: an async stage that also holds the consumer of its copies; and the
 * usual form, the consumer one stage later, for comparison. */
static void test_async_stage_with_consumer(void **st) {
    tir_ctx *ctx = *st;
    static const int64_t stages[2][2] = {{0, 0}, {0, 1}};
    for (int v = 0; v < 2; v++) {
        tir_loop_rv l7;
        tir_schedule *s = prefix(ctx, &l7);
        SCHED_OK(s, tir_sched_software_pipeline(s, l7, 2, stages[v], 2,
                                                (const int64_t[]){0, 1}, 1,
                                                (const int64_t[]){0}));
        sched_check_all(s);
        /* the fetch really went through cp.async */
        assert_true(lower_and_simulate(ctx, s) > 0);
        tir_sched_destroy(s);
    }
}

/* One async component that fetches and reads the fetch itself (GPU fuzz
 * seed 4051977 case 6634): no wait can come between, so its copies stay
 * synchronous. */
static void test_async_component_reads_own_copy(void **st) {
    tir_ctx *ctx = *st;
    tir_loop_rv l7;
    tir_schedule *s = prefix_at(ctx, true, &l7);
    const int64_t zero[1] = {0};
    SCHED_OK(s, tir_sched_software_pipeline(s, l7, 1, zero, 1, zero, 1, zero));
    sched_check_all(s);
    assert_int_equal(lower_and_simulate(ctx, s), 0);
    tir_sched_destroy(s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_order_within_stage, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lower_refuses_hand_annotations, setup, teardown),
        cmocka_unit_test_setup_teardown(test_async_stage_with_consumer, setup, teardown),
        cmocka_unit_test_setup_teardown(test_async_component_reads_own_copy, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
