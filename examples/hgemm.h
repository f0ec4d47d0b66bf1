/* hgemm.h: "Step 9", a tensor-core matmul schedule (mma.sync) on
 * tir_def_matmul_mixed: a thin wrapper of the library's tensor-core rule
 * (tir_tune_tc_tiling, src/tune/tiling_tc.c) and its default.
 *
 * C[M,N] (float32) = A[M,K] . B[K,N] with A and B float16 or bfloat16
 * (m16n8k16) or float32 rounded to TF32 (m16n8k8).  Per thread block a
 * BM x BN tile of C, the k loop in tiles of BK; the block's warps_m x
 * warps_n warps (threadIdx.y; threadIdx.x is the lane) each own a
 * BM/warps_m x BN/warps_n tile of C in accumulator fragments.  Per k tile
 * the A and B tiles are copied to shared memory (16-byte vectors; cp.async
 * in a software pipeline of `stages` stages), rows padded so that ldmatrix
 * is conflict-free; per 16-deep (8 for TF32) step each warp loads its A
 * and B fragments (ldmatrix) and issues one mma.sync per 16 x 8 tile of
 * its output.  The accumulators are stored to C directly (clipped at
 * ragged edges).
 */
#ifndef MINITIR_EXAMPLES_HGEMM_H
#define MINITIR_EXAMPLES_HGEMM_H

#include "minitir/schedule.h"
#include "minitir/tune.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The knobs (tune.h): bm, bn, bk, warps_m, warps_n, stages, async_copy, pad. */
typedef tir_tc_config hgemm_config;

/* 128 x 128 x 32, 2 x 4 warps (64 x 32 each), double-buffered cp.async. */
hgemm_config hgemm_default_config(void);

/* A configuration for an M x N x K matmul of inputs of type in (float16,
 * bfloat16, or float32 as TF32) on a GPU with nsm multiprocessors
 * (tir_tune_tc_default): the largest of 128 x 256 tiles in 4 stages,
 * 64 x 128 and 64 x 64 tiles in 3 stages that gives half a wave of
 * blocks, and BK dividing K (tensorize refuses a ragged k tile). */
hgemm_config hgemm_config_for(tir_dtype in, int64_t M, int64_t N, int64_t K, int nsm);

/* Schedules tir_def_matmul_mixed (block "C") with cfg.  On error returns
 * the status; the message is in the schedule's ctx.  hook (may be NULL) is
 * called after each primitive with the call as written. */
tir_status hgemm_schedule(tir_schedule *s, const hgemm_config *cfg,
                          void (*hook)(void *user, tir_schedule *s, const char *call),
                          void *user);

#ifdef __cplusplus
}
#endif
#endif
