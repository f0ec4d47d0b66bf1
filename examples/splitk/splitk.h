/* splitk.h: the split-K SGEMM schedule (rfactor), over the public API, for
 * the examples, tirc and the tests.  Meant to be merged with the Step 8
 * tiles of examples/sgemm.c later: the split count is a parameter. */
#ifndef MINITIR_EXAMPLES_SPLITK_H
#define MINITIR_EXAMPLES_SPLITK_H

#include "minitir/schedule.h"

/* Schedules tir_def_matmul's block "C" (C[i, j] += A[i, k] * B[k, j]) as
 * split-K with `split` partial sums: k splits into [split, None], rfactor
 * on the outer part (C_rf[split, M, N], factor_axis 0) bound to
 * blockIdx.z, each partial sum computed by one thread per element of a
 * 16x16 thread block (blockIdx.y/x over row and column tiles), then C's
 * write-back nest (a second kernel) summing the split partial results with
 * the same tiling.  Non-divisible sizes give predicates.  split >= 1;
 * errors are the primitives'. */
tir_status splitk_schedule(tir_schedule *s, int split);

#endif
