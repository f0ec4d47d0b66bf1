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
    LK_LOCAL_ACC = 1, /* C accumulated in a local C_local, written back per thread */
    LK_VEC_FETCH = 2, /* cooperative fetch with a vectorized loop of 4 */
    LK_PIPELINE = 4,  /* k_0: software_pipeline_stage [0, 0, 1], order [0, 1, 2] */
    LK_ASYNC = 8,     /* with LK_PIPELINE: software_pipeline_async_stages [0] */
    LK_UNROLL = 16,   /* k_1 unrolled */
    LK_ALIGN16 = 32,  /* A, B, C declared 16-byte aligned (cudaMalloc gives 256) */
    LK_REG_PIPE = 64, /* k_1 outside the 8x4 tile, A/B register caches (A_local,
                       * B_local) fetched per k_1 and pipelined [0, 0, 1]
                       * (double-buffered register fetch); text only */
};
/* The scheduled text (owned by ctx). */
const char *lk_shared_text(tir_ctx *ctx, int64_t M, int64_t N, int64_t K, int flags);
/* Parses lk_shared_text; NULL (error in ctx) on failure. */
const tir_prim_func *lk_shared(tir_ctx *ctx, int64_t M, int64_t N, int64_t K, int flags);

/* The same Steps 3-6 built with the schedule primitives (cache_read,
 * compute_at, fuse/split/bind, vectorize, cache_write,
 * reverse_compute_at, pipeline annotations, unroll); flags as above
 * (LK_ALIGN16 is not available: parameters keep tir_def_matmul's). */
const tir_prim_func *lk_shared_sched(tir_ctx *ctx, int64_t M, int64_t N, int64_t K, int flags);

/* A tiled matmul with one output element per thread: 8x8 block tiles on
 * 8x8 threads (i -> threadIdx.y, j -> threadIdx.x), k split by ktile, A
 * and B cached in shared memory at k_outer and fetched cooperatively with
 * the fused fetch loop split [_, 8, 8] bound to threadIdx.y/x.  With
 * ktile 8 every thread copies one element of each tile (the serial fetch
 * loop has extent 1); with ktile 16, two. */
const tir_prim_func *lk_one_per_thread(tir_ctx *ctx, int64_t M, int64_t N, int64_t K,
                                       int64_t ktile);

/* Hand-written tensorized matmul (the logical tile operations of
 * docs/tensor-cores.md, as tensorize leaves them, blocks already lowered):
 * C (M x N, float32) = A (M x K) * B (K x N), 32x16 block tiles, two warps
 * (threadIdx.y) of 16x16 each (two 16x8 accumulator tiles), k tiles of 16
 * (bfloat16) or 8 (LK_TC_TF32: float32 operands), A and B copied into
 * shared tiles by all 64 threads (threadIdx.x 32), zero past M / N.  K must
 * be a multiple of the k tile. */
enum {
    LK_TC_TF32 = 1,     /* float32 operands (m16n8k8) instead of bfloat16 */
    LK_TC_A_GLOBAL = 2, /* A's fragments loaded from global A directly */
};
const char *lk_tc_text(tir_ctx *ctx, int64_t M, int64_t N, int64_t K, int flags);
const tir_prim_func *lk_tc(tir_ctx *ctx, int64_t M, int64_t N, int64_t K, int flags);

/* Runs f in the interpreter and k (f lowered) in the simulator, the
 * uninitialised-read and global race checks on, on the same small integer
 * inputs (element j of parameter i: (7j + 3i) % 5 - 2; every parameter
 * float32 of a constant shape, at most 8): 0 when every parameter ends up
 * bitwise equal, else -1 with the reason on stderr. */
int lk_interp_sim_equal(tir_ctx *ctx, const tir_prim_func *f, const tir_prim_func *k);

#endif
