/* cg_kernels.h: lowered kernels built by hand, for the codegen tests and
 * tools/cg_dump (which writes their PTX for running on a GPU).
 *
 * All are in the lowered form of docs/lowered-ir.md.  Buffer parameters
 * come first, in the order listed, then scalar parameters.  Global buffers
 * are aligned to 64 bytes unless said otherwise.
 */
#ifndef CG_KERNELS_H
#define CG_KERNELS_H

#include "minitir/ir.h"

/* C[i] = A[i] + B[i], float32, n a multiple of 256; grid n/256, block 256. */
const tir_prim_func *ck_vector_add(tir_ctx *ctx, int64_t n);
/* The same with a symbolic size: params A, B, C (extent n), int32 n;
 * grid ceil(n/256), block 256, guarded by i < n. */
const tir_prim_func *ck_vector_add_sym(tir_ctx *ctx);
/* C[M,N] = A[M,K] B[K,N] row-major float32, one thread per output with a
 * serial k loop and a one-element local accumulator; M, N multiples of 16;
 * grid (N/16, M/16), block (16, 16). */
const tir_prim_func *ck_matmul_naive(tir_ctx *ctx, int64_t M, int64_t N, int64_t K);
/* The same product tiled: 64x64 tiles of C per block, A and B tiles of
 * depth 16 staged in shared memory, syncthreads, and a 4x4 register tile per
 * thread (local array, unrolled loops); M, N multiples of 64, K of 16;
 * grid (N/64, M/64), block (16, 16). */
const tir_prim_func *ck_matmul_tiled(tir_ctx *ctx, int64_t M, int64_t N, int64_t K);
/* B[i] = A[i] * 2 with float4 loads and stores (Ramp index, lanes 4), each
 * thread doing 4 consecutive elements starting at 4*t + offset; n a multiple
 * of 1024, offset 0 (aligned) or 1 (misaligned, must not use v4); the
 * buffers are aligned to `align` bytes; grid n/1024, block 256.  With
 * offset 1 the last thread writes B[n], so B (and A) have n + 4 elements. */
const tir_prim_func *ck_vec4_scale(tir_ctx *ctx, int64_t n, int offset, int align);
/* Copies A into shared memory with cp.async (`bytes` 4, 8 or 16 per copy),
 * commit, wait(0), syncthreads, then B[blk*1024 + 4t + j] =
 * S[4*(255 - t) + j]: reverses the 4-element chunks of each 1024-element
 * block; n a multiple of 1024; grid n/1024, block 256. */
const tir_prim_func *ck_cp_async(tir_ctx *ctx, int64_t n, int bytes);
/* X float16, Z bfloat16 -> Y = X*X + X (float16), W = Z*Z - Z (bfloat16),
 * F = float(X) + float(Z) (float32); n a multiple of 256; grid n/256. */
const tir_prim_func *ck_half(tir_ctx *ctx, int64_t n);
/* int32 A, D -> Q1 = floordiv(A, D), R1 = floormod(A, D), Q2/R2 by 8,
 * Q3/R3 by 7; n a multiple of 256. */
const tir_prim_func *ck_floor(tir_ctx *ctx, int64_t n);
/* X, Y of dtype t (float32 or float64) -> E = exp(X), L = log(X),
 * T = tanh(X), S = sigmoid(X), P = pow(X, Y), Q = sqrt(X);
 * n a multiple of 256. */
const tir_prim_func *ck_math(tir_ctx *ctx, int64_t n, tir_dtype t);

/* The kernels above with fixed sizes, for cg_dump. */
typedef struct ck_entry {
    const char *name;
    const char *what; /* semantics and launch, one paragraph */
    const tir_prim_func *(*build)(tir_ctx *ctx);
} ck_entry;
extern const ck_entry ck_entries[];
extern const int ck_nentries;

#endif
