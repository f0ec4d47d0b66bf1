/* minitir/codegen.h: code generation through LLVM (NVPTX).
 *
 * This layer is the only one that sees LLVM.  LLVM 19 is linked statically
 * into libminitir with its symbols hidden, so programs that use minitir do
 * not need LLVM installed.
 */
#ifndef MINITIR_CODEGEN_H
#define MINITIR_CODEGEN_H

#include "minitir/ir.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The version of the LLVM linked into the library ("19.1.7"). */
TIR_API const char *tir_llvm_version(void);

/* Checks that `arch` ("sm_80", "sm_90", "sm_90a") names a GPU the linked
 * LLVM can generate code for.  Returns TIR_OK, or TIR_ERR_UNSUPPORTED with a
 * message listing what is supported. */
TIR_API tir_status tir_codegen_check_arch(tir_ctx *ctx, const char *arch);

#ifdef __cplusplus
}
#endif
#endif
