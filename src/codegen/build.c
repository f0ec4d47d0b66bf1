/* build.c: tir_build, lowering followed by codegen in one call. */
#include "minitir/codegen.h"
#include "minitir/lower.h"

tir_status tir_build(tir_ctx *ctx, const tir_prim_func *scheduled, const tir_codegen_opts *opts,
                     const tir_module **out) {
    const tir_prim_func *kernel;
    tir_status s = tir_lower(ctx, scheduled, NULL, &kernel);
    if (s != TIR_OK) return s;
    return tir_codegen(ctx, kernel, opts, out);
}
