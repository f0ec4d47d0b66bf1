/* user_sched.h: the scheduling harness of the new-user reviews'
 * workload tests (test_user_workloads.c, test_user_dynamic.c): one
 * schedule variant in progress, whose primitives run until one refuses.
 *
 * TRY runs a primitive call unless an earlier one refused; a refusal must
 * be clean (sched_fail_ok: status, a message naming the primitive with
 * marked IR, the schedule unchanged), and then ends the variant as
 * refused (st, where) with every later TRY skipped.  us_loops / us_block
 * give zero handles once refused, and us_split / us_split3 split a loop by
 * constant inner factors (the outer inferred).  The tests start and
 * finish a variant themselves (their oracles differ); each sets verbose,
 * and a variant >= 0 is printed after the label as label/variant. */
#ifndef MINITIR_TESTS_USER_SCHED_H
#define MINITIR_TESTS_USER_SCHED_H

#include <stdbool.h>
#include <stdint.h>

#include "minitir/schedule.h"
#include "sched_check.h"

typedef struct user_sched {
    tir_ctx *ctx;
    tir_schedule *s;
    const char *label;
    int variant;       /* printed as label/variant when >= 0 */
    tir_status st;     /* the first refusal, or TIR_OK */
    const char *where; /* the refused call */
    double rtol;       /* the file's oracles' relative tolerance; 0: bit-exact */
    bool inexact;      /* rtol on small integers too (T.exp) */
    bool verbose;      /* print each refusal */
} user_sched;

/* Ends the variant as refused by call (prim's), after checking that the
 * refusal is clean against the snapshot taken before it. */
void us_refused(user_sched *u, sched_snap *snap, tir_status st, const char *prim, const char *call);

#define TRY(u, prim, call)                                                                         \
    do {                                                                                           \
        if ((u)->st != TIR_OK) break;                                                              \
        sched_snap snap_;                                                                          \
        sched_snap_take((u)->s, &snap_);                                                           \
        tir_status st_ = (call);                                                                   \
        if (st_ != TIR_OK)                                                                         \
            us_refused((u), &snap_, st_, (prim), #call);                                           \
        else                                                                                       \
            sched_snap_free(&snap_);                                                               \
    } while (0)

/* Handles for the loops of a block into out[16] (zero handles once
 * refused: every later TRY is skipped); their count. */
int us_loops(user_sched *u, const char *block, tir_loop_rv *out);
tir_block_rv us_block(user_sched *u, const char *name);
/* l split into out[0..2) with the inner extent inner. */
void us_split(user_sched *u, tir_loop_rv l, int64_t inner, tir_loop_rv *out);
/* l split into out[0..3) with the inner extents mid and inner. */
void us_split3(user_sched *u, tir_loop_rv l, int64_t mid, int64_t inner, tir_loop_rv *out);

#endif
