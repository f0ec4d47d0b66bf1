/* cg_occupancy.c: the kernel's occupancy controls, checked before codegen.
 *
 * The function attrs launch_bounds_max_threads, launch_bounds_min_blocks_per_sm
 * and max_registers (set on the root block; lower_blocks moves them to the
 * function) become PTX .maxntid, .minnctapersm and .maxnreg (cg_emit.c),
 * as CUDA's __launch_bounds__ and -maxrregcount do.  They only steer ptxas's
 * register allocation, never the values computed, but a .maxntid below the
 * threads the kernel is launched with makes every launch fail, so the values
 * are checked here against the kernel's launch and the target's limits.
 * loop_strength_reduction (0 or 1) is read here too: it steers the backend
 * the same way (codegen.c); so is direct_unroll (0 or 1), which steers the
 * direct emitter's choice of small loops (cg_direct.c).
 */
#include "cg_internal.h"

/* The int value of attr `key` in *out (0 when absent); an error naming the
 * kernel when it is not an int in 1..max. */
static tir_status occ_value(tir_ctx *ctx, const tir_prim_func *f, tir_annot_key key,
                            int64_t max, const char *what, int64_t *out) {
    *out = 0;
    const tir_annot *a = tir_annots_get(f->nattrs, f->attrs, key);
    if (!a) return TIR_OK;
    const char *k = tir_annot_key_str(key);
    if (a->kind != TIR_ANNOT_INT)
        return tir_ctx_fail(ctx, TIR_ERR_UNSUPPORTED, "codegen: kernel '%s': %s must be an int",
                            f->name, k);
    if (a->i < 1 || a->i > max)
        return tir_ctx_fail(ctx, TIR_ERR_UNSUPPORTED,
                            "codegen: kernel '%s': %s = %lld is not in 1..%lld (%s)", f->name, k,
                            (long long)a->i, (long long)max, what);
    *out = a->i;
    return TIR_OK;
}

/* The switch attr `key` in *out: true for 1, false for 0 or absent; an
 * error naming the kernel for any other value or kind. */
static tir_status switch_value(tir_ctx *ctx, const tir_prim_func *f, tir_annot_key key,
                               bool *out) {
    const tir_annot *a = tir_annots_get(f->nattrs, f->attrs, key);
    if (a && (a->kind != TIR_ANNOT_INT || (a->i != 0 && a->i != 1)))
        return tir_ctx_fail(ctx, TIR_ERR_UNSUPPORTED,
                            "codegen: kernel '%s': %s must be the int 0 or 1", f->name,
                            tir_annot_key_str(key));
    *out = a && a->i == 1;
    return TIR_OK;
}

tir_status cg_check_occupancy(tir_ctx *ctx, const tir_prim_func *f, const tir_target_limits *lim,
                              cg_info *info) {
    TIR_TRY(occ_value(ctx, f, TIR_ANN_LAUNCH_BOUNDS_MAX_THREADS, lim->max_threads_per_block,
                      "the target's threads per block", &info->max_threads));
    TIR_TRY(occ_value(ctx, f, TIR_ANN_LAUNCH_BOUNDS_MIN_BLOCKS_PER_SM, lim->max_blocks_per_sm,
                      "the target's resident blocks per multiprocessor", &info->min_blocks));
    TIR_TRY(occ_value(ctx, f, TIR_ANN_MAX_REGISTERS, lim->max_registers_per_thread,
                      "the target's registers per thread", &info->max_regs));
    TIR_TRY(switch_value(ctx, f, TIR_ANN_LOOP_STRENGTH_REDUCTION, &info->lsr));
    TIR_TRY(switch_value(ctx, f, TIR_ANN_DIRECT_UNROLL, &info->direct_unroll));
    int64_t threads = cg_threads_per_block(info);
    if (info->max_threads && info->max_threads < threads)
        return tir_ctx_fail(ctx, TIR_ERR_UNSUPPORTED,
                            "codegen: kernel '%s': launch_bounds_max_threads = %lld is below the "
                            "%lld threads per block it is launched with",
                            f->name, (long long)info->max_threads, (long long)threads);
    return TIR_OK;
}

int64_t cg_threads_per_block(const cg_info *info) {
    int64_t n = 1;
    for (int i = 3; i < CG_NAXES; i++) {
        int64_t v = 1;
        if (info->dims[i]) tir_expr_const_int(info->dims[i], &v); /* cg_check: constant */
        n *= v;
    }
    return n;
}
