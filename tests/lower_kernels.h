/* lower_kernels.h: the seed blog's matmul schedules as inputs for lowering
 * tests (and for the SIMT simulator's tests): Steps 1-2 built with the
 * schedule API, Steps 3-6 (shared memory, local accumulator, vectorized
 * fetch, software pipeline, unroll) as TVMScript text in the form TVM
 * prints after cache_read / compute_at / cache_write / reverse_compute_at,
 * until those primitives exist here.
 */
#ifndef LOWER_KERNELS_H
#define LOWER_KERNELS_H

#include "minitir/ir.h"

/* Step 1: i -> blockIdx.x, j -> threadIdx.x. */
const tir_prim_func *lk_step1(tir_ctx *ctx, int64_t M, int64_t N, int64_t K);
/* Step 2: 32x32x32 block tiles, 8x4 thread tiles (threadIdx.x 4,
 * threadIdx.y 8), k innermost. */
const tir_prim_func *lk_step2(tir_ctx *ctx, int64_t M, int64_t N, int64_t K);

/* Steps 3-6 on top of Step 2's loops.  Flags: */
enum {
    LK_LOCAL_ACC = 1,   /* C accumulated in a local C_local, written back per thread */
    LK_VEC_FETCH = 2,   /* cooperative fetch with a vectorized loop of 4 */
    LK_PIPELINE = 4,    /* k_0: software_pipeline_stage [0, 0, 1], order [0, 1, 2] */
    LK_ASYNC = 8,       /* with LK_PIPELINE: software_pipeline_async_stages [0] */
    LK_UNROLL = 16,     /* k_1 unrolled */
    LK_ALIGN16 = 32,    /* A, B, C declared 16-byte aligned (cudaMalloc gives 256) */
};
/* The scheduled text (owned by ctx). */
const char *lk_shared_text(tir_ctx *ctx, int64_t M, int64_t N, int64_t K, int flags);
/* Parses lk_shared_text; NULL (error in ctx) on failure. */
const tir_prim_func *lk_shared(tir_ctx *ctx, int64_t M, int64_t N, int64_t K, int flags);

#endif
