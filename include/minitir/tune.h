/* minitir/tune.h: the autotuner's layer (docs/tuning.md).
 */
#ifndef MINITIR_TUNE_H
#define MINITIR_TUNE_H

#include <stdio.h>

#include "minitir/ir.h"
#include "minitir/runtime.h"
#include "minitir/schedule.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------ the multi-level tiling rule */

/* The knobs of the tiling rule (tir_tune_tiling).  Per thread block a
 * BM x BN tile of the output with BM = warps_m * threads_m * tm and
 * BN = warps_n * threads_n * tn; the k loop in tiles of bk. */
typedef struct tir_tile_config {
    int warps_m, warps_n;     /* warps per block along i and j */
    int threads_m, threads_n; /* lanes per warp along i and j (product 32) */
    int tm, tn;               /* outputs per thread along i and j */
    int bk;                   /* k tile */
    int vec;                  /* global, shared and output access width; divides tm, tn */
    bool staging;             /* register staging pipeline (global loads of the next k
                                 tile in flight during the compute) */
    int pad;                  /* elements of padding after each shared row (mod 32) */
    int splitk;               /* split-K slices (1: none); no batch loops then */
    bool lsr;                 /* LLVM loop strength reduction (the
                                 loop_strength_reduction annotation) */
} tir_tile_config;

/* 128 x 128 x 8: 2 x 4 warps of 8 x 4 lanes, 8 x 8 outputs per thread,
 * float4 accesses, staging, padding 4, no split-K, LSR on. */
TIR_API tir_tile_config tir_tile_config_default(void);
/* Threads per block, and the shared bytes of one version of both tiles
 * for elements of dtype_bytes. */
TIR_API int tir_tile_config_threads(const tir_tile_config *c);
TIR_API int64_t tir_tile_config_shared_bytes(const tir_tile_config *c, int dtype_bytes);

/* Applies the multi-level tiling rule with cfg to block `block` of s: a
 * block whose iterators are spatial ones (the last two the output's rows i
 * and columns j, any before them batch loops, bound to blockIdx.z) and
 * one reduction iterator k last, reading an input indexed by (i, k) and
 * one by (k, j) in either order (a matmul, matmul_nt, batch matmul, or a
 * matmul whose epilogue fuse_reduction_epilogue has fused).  It is the
 * schedule described in src/tune/tiling.c: warp and lane tiles, a k tile
 * in shared memory stored k-major, register fragments, an accumulator in
 * registers, a register-staging pipeline, split-K by rfactor.  Every step
 * is a traced primitive.  hook (may be NULL) is called after each one
 * with the call as written.  Errors: TIR_ERR_INVALID_ARG (the block does
 * not fit the rule, or cfg is invalid: non-positive sizes, threads_m *
 * threads_n != 32, vec not dividing tm and tn, split-K with batch loops;
 * the message names the block), or a primitive's error.  On error the
 * schedule holds the primitives applied before it (as with any sequence
 * of primitives; callers tune on a copy). */
TIR_API tir_status tir_tune_tiling(tir_schedule *s, const char *block, const tir_tile_config *cfg,
                                   void (*hook)(void *user, tir_schedule *s, const char *call),
                                   void *user);

#ifdef __cplusplus
}
#endif
#endif
