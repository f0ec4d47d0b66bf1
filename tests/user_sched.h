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
 * and a variant >= 0 is printed after the label as label/variant.  Also
 * the data helpers the reviews' tests (test_user_ops.c too) share:
 * FAILF, parsing, elements by dtype, a buffer's element count at given
 * scalar parameters, the parameters a function writes, and the text of a
 * row reduction of symbolic shape (test_user_dynamic's row sum and row
 * max, test_user_ops's row sum). */
#ifndef MINITIR_TESTS_USER_SCHED_H
#define MINITIR_TESTS_USER_SCHED_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "minitir/ir.h"
#include "minitir/schedule.h"
#include "sched_check.h"

/* Prints the message and fails the test (cmocka's fail(), which the file
 * using it includes). */
#define FAILF(...)                                                                                 \
    do {                                                                                           \
        fprintf(stderr, __VA_ARGS__);                                                              \
        fputc('\n', stderr);                                                                       \
        fail();                                                                                    \
    } while (0)

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

/* text parsed (a parse error fails the test). */
const tir_prim_func *us_parse(tir_ctx *ctx, const char *text);

/* Element i of data in dtype t as a double: float32, float16 (through the
 * runtime's conversions, round to nearest even, as the GPU's reference
 * does), int32, int8; other dtypes store zero bytes and load 0. */
void us_store_elem(void *data, tir_dtype t, int64_t i, double v);
double us_load_elem(const void *data, tir_dtype t, int64_t i);

/* Elements of buffer b with the scalar parameters of f at scalars (in
 * order, at most 16); -1 when a dimension is not a constant, or is
 * negative, then. */
int64_t us_buf_count(tir_ctx *ctx, const tir_prim_func *f, const tir_buffer *b,
                     const int64_t *scalars);

/* Which parameters of f the function writes (bit i: parameter i < 64):
 * those named in a block's T.writes. */
uint64_t us_written_params(tir_ctx *ctx, const tir_prim_func *f);

/* A row reduction of symbolic shape into buf (1024 bytes), returned:
 * name(A (n, m), B (n,), n, m) with B[i] = T.float32(init), then
 * B[vi] = update (of B[vi] and A[vi, vk]) for each k. */
const char *us_rowred_text(char *buf, const char *name, const char *init, const char *update);

#endif
