/* tc_kernels.h: hand-written LOWERED tensor-core kernels (the form
 * lower_fragments produces, docs/lowered-ir.md): fragments are per-thread
 * local arrays, lane_id() gives the lane, mma_sync and ldmatrix are warp
 * collectives.  For the simulator's tests (tests/test_sim_tc.c) and, later,
 * the codegen and GPU tests.
 *
 * All compute C (M x N, float32) = A (M x K) . B (K x N), row-major, flat
 * buffer parameters A, B, C in that order, with C overwritten (it may
 * start uninitialised).  A warp is threadIdx.x (32 lanes); warps are
 * threadIdx.y.  The layouts are those of ir.h (tir_frag_row / col) with
 * g = lane_id() / 4, t = lane_id() % 4.
 */
#ifndef TC_KERNELS_H
#define TC_KERNELS_H

#include "minitir/ir.h"

/* Variants that break a kernel on purpose, for negative tests. */
enum {
    TCK_DIVERGE = 1,    /* mma_sync under `if lane_id() < 16` */
    TCK_HALF_WARP = 2,  /* threadIdx.x extent 16 instead of 32 */
    TCK_MISALIGN = 4,   /* (ldmatrix) A's row addresses one element further: not 16-byte aligned */
    TCK_LDM_GLOBAL = 8, /* (ldmatrix) A's rows read from global A instead of shared */
    TCK_NO_COPY = 16,   /* (ldmatrix) A is never copied to shared: unwritten rows */
    TCK_RACE = 32,      /* (ldmatrix) after the barrier lane 0 stores As[5 * 16] (row 5,
                         * which lane 5 supplies) before the ldmatrix: a race */
    TCK_A_TRANS = 64,   /* (ldmatrix) A loaded with .trans */
};

/* Per-lane loads from global into the fragment arrays, mma_sync, per-lane
 * stores: dtype t (bfloat16 / float16: m16n8k16; float32: m16n8k8 with
 * TF32).  grid_m blocks (blockIdx.x) of warps_m x warps_n warps
 * (threadIdx.y = wm * warps_n + wn), each warp one 16x8 tile of C,
 * accumulating over ksteps k steps of 16 (8 for float32):
 * M = 16 grid_m warps_m, N = 8 warps_n, K = ksteps * 16 (8).
 * (1) one warp: (t, 1, 1, 1, 1); (5) several warps and a k loop:
 * (t, 2, 2, 2, 4).  flags: TCK_DIVERGE, TCK_HALF_WARP. */
const tir_prim_func *tck_mma_lanes(tir_ctx *ctx, tir_dtype t, int grid_m, int warps_m,
                                   int warps_n, int ksteps, int flags);

/* One warp, M = 16, N = 8, K = 16, dtype t (bfloat16 / float16): A and B
 * copied cooperatively to shared As (16x16) and Bs (16x8), syncthreads,
 * A fragment by ldmatrix x4 (lane l passes As row l % 16, column
 * 8 (l / 16)), B fragment by ldmatrix x2.trans (lane l passes Bs row
 * l % 16: lanes 16-31 repeat rows 0-15, unused), mma_sync, per-lane
 * stores.  flags: all TCK_*. */
const tir_prim_func *tck_mma_ldmatrix(tir_ctx *ctx, tir_dtype t, int flags);

/* The text of the kernels above (owned by ctx; NULL on error). */
const char *tck_mma_lanes_text(tir_ctx *ctx, tir_dtype t, int grid_m, int warps_m, int warps_n,
                               int ksteps, int flags);
const char *tck_mma_ldmatrix_text(tir_ctx *ctx, tir_dtype t, int flags);

/* Test data helpers.  The 16-bit encoding of v, which must be exactly
 * representable (normal or zero) in float16 / bfloat16 (aborts if not). */
uint16_t tck_to_half(double v, bool bf16);
/* float32 rounded to TF32 (10 mantissa bits), to nearest with ties to
 * even, Inf and NaN as they are, written independently of the
 * interpreter's bit trick (in double arithmetic). */
float tck_tf32(float x);
/* C (M x N) = A (M x K) . B (K x N), row-major floats, each element the
 * double sum of the products (of TF32-rounded inputs with tf32) rounded
 * once to float: the simulator's and interpreter's mma semantics. */
void tck_ref_matmul(const float *a, const float *b, float *c, int M, int N, int K, bool tf32);

#endif
