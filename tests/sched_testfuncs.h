/* sched_testfuncs.h: small hand-built functions with the shapes the ready
 * definitions never have, for the negative tests of schedule primitives.
 * Each is a two-deep loop nest `for i: for j: block "B"` (unless noted)
 * with one irregularity.  Built with the node constructors so they do not
 * depend on the text format.  Buffers are float32. */
#ifndef MINITIR_TESTS_SCHED_TESTFUNCS_H
#define MINITIR_TESTS_SCHED_TESTFUNCS_H

#include "minitir/ir.h"

/* A[6,7] -> B[6,7]: for i in range(2, 6): for j in range(1, 7):
 *     block B: vi, vj = i, j; B[vi, vj] = A[vi, vj] + 1 */
const tir_prim_func *tf_offset_loops(tir_ctx *ctx);
/* A[16,4] -> B[16,4]: for i in range(4): for j in range(4): vi = i * i */
const tir_prim_func *tf_nonaffine(tir_ctx *ctx);
/* A[4,6] -> B[4,6], C[4,6]: for i, j: { C[i, j] = 0.0; block B } */
const tir_prim_func *tf_opaque_stmt(tir_ctx *ctx);
/* A[4,6] -> B[4,6]: for i, j: block B: B[vi, vj] = A[i, vj]  (i used inside) */
const tir_prim_func *tf_opaque_in_block(tir_ctx *ctx);
/* A[4,6] -> B[4,6]: for i, j: block B: B[vi, vj] = B[vi, vj] + A[vi, vj] */
const tir_prim_func *tf_incomplete(tir_ctx *ctx);
/* A[4,6] -> B[4,6]: i is an int32 loop, j an int64 loop */
const tir_prim_func *tf_mixed_dtypes(tir_ctx *ctx);
/* A[8,8] -> B[8,8]: for i in range(8): for j in range(i + 1) */
const tir_prim_func *tf_triangular(tir_ctx *ctx);
/* A[4,5,6] -> B[4,5,6], C[4,5]: for i in range(4): for j in range(5):
 *     { for k in range(6): block B;  block C: C[vi, vj] = A[vi, vj, 0] } */
const tir_prim_func *tf_branching(tir_ctx *ctx);
/* Two blocks both named "B" (schedules refuse this). */
const tir_prim_func *tf_duplicate_names(tir_ctx *ctx);

#endif
