/* tc_sim_check.h: one tensor-core matmul kernel in the SIMT simulator
 * against the reference interpreter, for the tests of the rule and of
 * lowering that share it (test_tune_tc, test_smem_swizzle). */
#ifndef TC_SIM_CHECK_H
#define TC_SIM_CHECK_H

#include "minitir/lower.h"
#include "minitir/runtime.h"
#include "minitir/sim.h"

/* Runs f (a matmul of kind at M x N x K: A, B, C) in the interpreter and
 * k (f lowered) in the simulator, uninitialised reads checked, on random
 * inputs of the kind's type (seeds seed and seed + 1), and compares C
 * within the kind's tolerance.  TIR_OK, or the failing call's status with
 * its message in ctx (what names the check).  *rep (may be NULL) gets the
 * simulator's report. */
tir_status tc_sim_check(tir_ctx *ctx, tir_rt_gemm_kind kind, int64_t M, int64_t N, int64_t K,
                        const tir_prim_func *f, const tir_prim_func *k, uint64_t seed,
                        const char *what, tir_sim_report *rep);

/* The same for the kernels of a tir_kernel_set (split-K: the partial
 * sums, then their sum), run in order with their workspace; *rep gets
 * the first kernel's report. */
tir_status tc_sim_check_set(tir_ctx *ctx, tir_rt_gemm_kind kind, int64_t M, int64_t N, int64_t K,
                            const tir_prim_func *f, const tir_kernel_set *ks, uint64_t seed,
                            const char *what, tir_sim_report *rep);

#endif
