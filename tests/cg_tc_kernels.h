/* cg_tc_kernels.h: hand-built lowered tensor-core kernels for the codegen
 * tests (tests/test_codegen_tc.c: PTX and ptxas; tests/test_codegen_gpu.c:
 * results on a GPU).
 *
 * One warp (threadIdx.x 32, one block) computes C += A * B with mma_sync,
 * in the lowered form of docs/lowered-ir.md that lower_fragments makes:
 * fragments are local arrays, each lane loads and stores its registers at
 * rows and columns computed from lane_id() (tir_frag_row/col), and with
 * `shared` the tiles are staged in shared memory and the A and B
 * fragments loaded with ldmatrix.  A is 16 x K, B is K x N, C is 16 x N
 * (row-major, C float32).
 */
#ifndef CG_TC_KERNELS_H
#define CG_TC_KERNELS_H

#include "minitir/ir.h"

typedef struct tcg_opts {
    tir_dtype in;  /* A and B: TIR_F16, TIR_BF16, or TIR_F32 (m16n8k8 tf32) */
    int64_t K;     /* a multiple of the k tile: 16 (8 for float32) */
    int ntiles;    /* N = 8 * ntiles, 1 or 2 (two mma_sync per k step) */
    bool unroll_k; /* the k-tile loop unrolled (else serial) */
    bool shared;   /* 16-bit only: A, B staged in shared memory, ldmatrix
                    * x4 for A and x2.trans (ntiles 1) or x4.trans (2) for B */
    bool a_x1;     /* shared: A by four ldmatrix x1 instead of one x4 */
} tcg_opts;

/* The kernel "tc_mma" with params A, B, C. */
const tir_prim_func *tcg_mma(tir_ctx *ctx, const tcg_opts *o);

/* C += A * B on the host: exact products (float32 inputs rounded to TF32
 * first, to nearest, ties to even), summed in double, rounded once. */
void tcg_reference(const tcg_opts *o, const float *A, const float *B, float *C);

/* x rounded to TF32 as cvt.rn.tf32.f32 does (and codegen's integer
 * emulation of it for targets before sm_90), in C. */
float tcg_tf32(float x);

#endif
