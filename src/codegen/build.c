/* build.c: tir_build and tir_build_kernels(_with), lowering followed by codegen
 * in one call, and tir_codegen_kernels, one module per kernel of a kernel
 * set (separate modules keep tir_codegen and tir_module as they are: each
 * kernel's entry, launch dimensions and parameters stay its own). */
#include <string.h>

#include "minitir/codegen.h"
#include "minitir/lower.h"

tir_status tir_build(tir_ctx *ctx, const tir_prim_func *scheduled, const tir_codegen_opts *opts,
                     const tir_module **out) {
    const tir_prim_func *kernel;
    tir_status s = tir_lower(ctx, scheduled, NULL, &kernel);
    if (s != TIR_OK) return s;
    return tir_codegen(ctx, kernel, opts, out);
}

tir_status tir_codegen_kernels(tir_ctx *ctx, const tir_kernel_set *ks, int nparams,
                               const tir_codegen_opts *opts, tir_module_set *out) {
    memset(out, 0, sizeof *out);
    if (!ks || ks->nkernels < 1 || nparams < 0)
        return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG, "tir_codegen_kernels: no kernels");
    const tir_module **mods = tir_ctx_alloc(ctx, sizeof *mods * (size_t)ks->nkernels);
    for (int k = 0; k < ks->nkernels; k++) {
        tir_status s = tir_codegen(ctx, ks->kernels[k], opts, &mods[k]);
        if (s != TIR_OK) {
            if (ks->nkernels > 1) {
                const char *msg = tir_ctx_error(ctx);
                size_t n = strlen(msg) + 1;
                char *copy = tir_ctx_alloc(ctx, n);
                memcpy(copy, msg, n);
                tir_ctx_fail(ctx, s, "kernel %d of %d (%s): %s", k, ks->nkernels,
                             ks->kernels[k]->name, copy);
            }
            return s;
        }
    }
    out->nmodules = ks->nkernels;
    out->modules = mods;
    out->nparams = nparams;
    out->nworkspace = ks->nworkspace;
    out->workspace = ks->workspace;
    return TIR_OK;
}

tir_status tir_build_kernels(tir_ctx *ctx, const tir_prim_func *scheduled,
                             const tir_codegen_opts *opts, tir_module_set *out) {
    return tir_build_kernels_with(ctx, scheduled, NULL, opts, out);
}

tir_status tir_build_kernels_with(tir_ctx *ctx, const tir_prim_func *scheduled,
                                  const tir_lower_opts *lower, const tir_codegen_opts *opts,
                                  tir_module_set *out) {
    memset(out, 0, sizeof *out);
    tir_kernel_set ks;
    tir_status s = tir_lower_kernels(ctx, scheduled, lower, &ks);
    if (s != TIR_OK) return s;
    return tir_codegen_kernels(ctx, &ks, scheduled->nparams, opts, out);
}
