/* cg_hostjit.h: running lowered kernels on the host CPU, for tests only.
 * Implemented in cg_hostjit.c, which is linked into test programs (with
 * LLVM's ORC JIT and native target), not into libminitir.  This header
 * includes no LLVM header, so tests can use it.
 */
#ifndef MINITIR_CG_HOSTJIT_H
#define MINITIR_CG_HOSTJIT_H

#include "minitir/codegen.h"

/* Compiles f for the host: the IR codegen emits for the GPU, with
 * thread-binding loops run as serial loops, generic pointers and shared
 * arrays on the stack.  Kernels whose threads cooperate (syncthreads,
 * cp_async) give TIR_ERR_UNSUPPORTED.  opts may be NULL (its arch is
 * ignored; fma_contract and opt_level apply). */
typedef struct cg_jit cg_jit;
tir_status cg_jit_compile(tir_ctx *ctx, const tir_prim_func *f, const tir_codegen_opts *opts,
                          cg_jit **out);
/* Runs the kernel: args[i] is the data of buffer parameter i, or points to
 * the value of scalar parameter i. */
void cg_jit_call(cg_jit *j, void **args);
void cg_jit_free(cg_jit *j);

#endif
