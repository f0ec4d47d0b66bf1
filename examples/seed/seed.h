/* seed.h: the seed blog's matmul schedules (Steps 1-6) and the fused GEMM
 * epilogue schedules as reusable functions over the public API.  Used by
 * the examples (matmul_steps, fused_gemm), the tirc command and the tests,
 * so that every consumer runs the very same schedules.
 *
 *   Step 1: i -> blockIdx.x, j -> threadIdx.x, k serial in each thread.
 *   Step 2: 32x32x32 block tiles, 8x4 thread tiles (4 x 8 threads), k
 *           innermost; blockIdx.x/y, threadIdx.x/y bound.
 *   Step 3: A and B tiles cached in shared memory at k_outer, fetched
 *           cooperatively by the block's 32 threads.
 *   Step 4: C accumulated in registers (local cache written back once per
 *           thread); the fetch vectorized by 4.
 *   Step 5: software pipeline annotation on k_outer (fetch stage 0,
 *           compute stage 1).
 *   Step 6: k_inner unrolled.
 *   Step 7: the cuBLAS-class tiling of ../sgemm.h: 128x128x8 block tiles,
 *           8 warps of 8x4 threads, 8x8 outputs per thread, A's shared
 *           tile k-major (transform_layout), float4 accesses.
 *   Step 8: Step 7 with register staging (sgemm_default_config): the next
 *           k tile is loaded into registers while this one is computed.
 * Step 0 is the unscheduled function (not runnable on a GPU).
 */
#ifndef MINITIR_EXAMPLES_SEED_H
#define MINITIR_EXAMPLES_SEED_H

#include "minitir/ir.h"
#include "minitir/schedule.h"

#ifdef __cplusplus
extern "C" {
#endif

enum {
    SEED_NSTEPS = 8,      /* Steps 1-8 of the plain matmul */
    SEED_NFUSED_STEPS = 6 /* Steps 1-6 of the fused GEMMs (seed_fused) */
};

/* Title of step 1..8 ("Step 3: shared memory"); "" otherwise. */
const char *seed_step_title(int step);

/* Called after every schedule primitive a recipe applies, with the call as
 * written in C (e.g. "tir_sched_split(s, i, ...)").  May be NULL. */
typedef void (*seed_hook)(void *user, tir_schedule *s, const char *call);

/* Applies Steps 1..step to a schedule of tir_def_matmul (block "C"), or
 * of a fused GEMM whose reduction block is "C".  On error returns the
 * status; the message is in the ctx. */
tir_status seed_schedule(tir_schedule *s, int step, seed_hook hook, void *user);

/* The tiles of the schedules: a bm x bn block tile (bm along i, bound to
 * blockIdx.x), k tiles of bk, and a tm x tn tile per thread, so
 * (bm / tm) x (bn / tn) threads.  The seed's are 32x32x32 and 8x4
 * (seed_tiles_default).  Larger tiles need more shared memory: Step 5's
 * double buffer holds 2 (bm + bn) bk floats, 64 KiB for 128x128x32, which
 * codegen places in dynamic shared memory (past 48 KiB). */
typedef struct seed_tiles {
    int bm, bn, bk, tm, tn;
} seed_tiles;
extern const seed_tiles seed_tiles_default;

/* seed_schedule with other tiles (NULL: seed_tiles_default).
 * TIR_ERR_INVALID_ARG when a size is not positive or the thread tile does
 * not divide the block tile. */
tir_status seed_schedule_tiles(tir_schedule *s, int step, const seed_tiles *tiles, seed_hook hook,
                               void *user);

/* The fused GEMM epilogues: D = epi(A·B + bias[j]). */
typedef enum seed_epi { SEED_EPI_BIAS, SEED_EPI_RELU, SEED_EPI_CLIP, SEED_NEPI } seed_epi;
#define SEED_CLIP_LO (-4.0f)
#define SEED_CLIP_HI 5.0f
/* "bias", "bias+relu", "clip". */
const char *seed_epi_name(seed_epi e);
/* Parses a name as above (also "relu"); -1 if unknown. */
int seed_epi_parse(const char *name);
/* The program C = A·B; D = epi(C + bias) with params [A, B, bias, D]
 * (clip: min(max(C + bias, SEED_CLIP_LO), SEED_CLIP_HI), built with the
 * TE API).  NULL with the error in ctx. */
const tir_prim_func *seed_def_fused(tir_ctx *ctx, seed_epi e, int64_t M, int64_t N, int64_t K);
/* The epilogue on one float, as the fused program defines it. */
float seed_epi_apply(seed_epi e, float v);

/* Schedules a seed_def_fused program: fuse_reduction_epilogue(C, D), then
 * the seed Steps 1..step on the reduction.  step 0: the fusion only.
 * Where the epilogue block survives the fusion (ReLU, clip) it is moved
 * into each thread's tile (reverse_compute_at under the innermost thread
 * loop) and the accumulator C set to local scope, which replaces Step 4's
 * cache_write. */
tir_status seed_fused(tir_schedule *s, int step, seed_hook hook, void *user);

#ifdef __cplusplus
}
#endif
#endif
