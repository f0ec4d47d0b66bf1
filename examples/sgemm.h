/* sgemm.h: "Step 8", a cuBLAS-class fp32 matmul schedule written on the
 * plain tir_def_matmul definition with the public API only (sgemm.c).
 *
 * Per thread block a BM x BN tile of C, the k loop in tiles of BK; the
 * block's threads are warps_m x warps_n warps, each warp a grid of
 * threads_m x threads_n threads, each thread a TM x TN tile of C in
 * registers.  A's shared tile is stored k-major (transform_layout), so the
 * inner loop reads TM and TN consecutive floats of the two tiles (float4
 * shared loads); global loads are float4 where the proof allows; the next
 * k tile is loaded into registers while the current one is computed and
 * stored to shared memory after it (register staging: a software pipeline
 * with the global loads in stage 0, the compute in stage 1).
 */
#ifndef MINITIR_EXAMPLES_SGEMM_H
#define MINITIR_EXAMPLES_SGEMM_H

#include "minitir/schedule.h"
#include "minitir/tune.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The tiling rule's knobs (minitir/tune.h, tir_tile_config): warps,
 * lanes, thread tile, k tile, vector width, staging, padding, split-K,
 * loop strength reduction. */
typedef tir_tile_config sgemm_config;

/* Split-K (splitk > 1): k is split into [splitk, None] and rfactored
 * first, so the tiles above compute C_rf[s, i, j], the partial sum of the
 * s-th slice of k, with s bound to blockIdx.z; block C then sums C_rf over
 * s in a second kernel (tir_lower_kernels): i and j fused, 256 threads per
 * block, one element per thread, coalesced.
 *
 * With splitk_atomic, block C is annotated atomic_reduction instead
 * (docs/lowering.md): each block adds its partial sums to C with atomic
 * float adds after a kernel that zeroes C, no C_rf and no second pass over
 * it; the summation order, hence the rounding, varies from run to run.
 * Its C_rf stores are then scalar (no vector atomic add). */

/* The configuration above: 128 x 128 x 8, 256 threads, 8 x 8 per thread. */
sgemm_config sgemm_default_config(void);

/* The configuration for an M x N x K matmul on a GPU with nsm
 * multiprocessors: the library's rule-based default (tir_tune_default:
 * 128 x 128 tiles when they give about a wave of blocks, split-K for long
 * K, else 64 x 64).  (Choosing by measurement is tir_tune's job.) */
sgemm_config sgemm_config_for(int64_t M, int64_t N, int64_t K, int nsm);

/* c made the seed's Step `step` (7 or 8): Step 7 without a pipeline,
 * Step 8 with c's own (register staging, or the multistage pipeline the
 * default picks for long split-K slices). */
void sgemm_config_step(sgemm_config *c, int step);

/* The M x N x K of block "C" of s (from the buffer it writes and its
 * reduce iterator), for sgemm_config_for. */
tir_status sgemm_shape(tir_schedule *s, int64_t *M, int64_t *N, int64_t *K);

/* The index of buffer `name` among block b's reads (A and B are reads 0
 * and 1 of a plain matmul, but a fused reduction also reads the bias, in
 * its init, first); an error naming both otherwise. */
tir_status sgemm_read_index(tir_schedule *s, tir_block_rv b, const char *name, int *out);

/* Schedules tir_def_matmul (block "C", any M, N, K) with cfg.  On error
 * returns the status; the message is in the schedule's ctx.  hook (may be
 * NULL) is called after each primitive with the call as written. */
tir_status sgemm_schedule(tir_schedule *s, const sgemm_config *cfg,
                          void (*hook)(void *user, tir_schedule *s, const char *call),
                          void *user);

#ifdef __cplusplus
}
#endif
#endif
