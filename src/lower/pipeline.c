/* pipeline.c: the lowering pipeline, from a scheduled function to a kernel
 * in the form of docs/lowered-ir.md.  lower_passes[] below is the one list
 * of passes and their order; docs/lowering.md explains each.  TIR_DUMP
 * names passes whose output is printed to stderr.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "lower_internal.h"

static const struct {
    const char *name;
    lower_pass_fn fn;
} lower_passes[] = {
    {"gpu_check", lower_gpu_check},         /* legality: thread bindings, limits */
    {"lower_init", lower_init_block},       /* block init -> if (reduce vars at min) */
    {"lower_blocks", lower_blocks},         /* blocks -> plain statements */
    {"unify_threads", lower_unify_threads}, /* nested loops of one thread tag */
    {"local_check", lower_local_check},     /* local buffers: reader thread = writer */
    {"plan_alloc", lower_plan_alloc},       /* Allocate at the accesses' LCA */
    {"compact_alloc", lower_compact_alloc}, /* shrink to the region used */
    {"relax_guards", lower_relax_guards},   /* ragged tiles: unguarded, zero fill */
    {"lower_fragments", lower_fragments},   /* warp fragments -> per-lane registers */
    {"global_share", lower_global_share}, /* global buffers threads share */
    {"flatten", lower_flatten},             /* 1-D buffers */
    {"vectorize", lower_vectorize},         /* Ramp/Broadcast accesses */
    {"sw_pipeline", lower_sw_pipeline},     /* software pipelines, cp.async */
    {"unroll", lower_unroll},               /* unroll pragmas */
    {"wgmma_group", lower_wgmma_group},     /* runs of wgmma_sync as one */
    {"interleave", lower_interleave},       /* async copies among the mma */
    {"tile_prefetch", lower_tile_prefetch}, /* next k tile's fragments early */
    {"thread_sync", lower_thread_sync},     /* syncthreads */
    {"simplify", lower_simplify},           /* arithmetic and dead branches */
    {"check_kernel", lower_check_kernel},   /* the lowered form, memory limits */
    {"race_check", lower_race_check},       /* no shared race between barriers */
};
enum { NPASSES = sizeof lower_passes / sizeof lower_passes[0] };

int tir_lower_num_passes(void) {
    return NPASSES;
}

const char *tir_lower_pass_name(int i) {
    return i >= 0 && i < NPASSES ? lower_passes[i].name : NULL;
}

void tir_lower_opts_init_target(tir_lower_opts *o, const tir_target_limits *lim) {
    memset(o, 0, sizeof *o);
    o->max_threads_per_block = lim->max_threads_per_block;
    for (int d = 0; d < 3; d++) o->max_thread_extent[d] = lim->max_block_dim[d];
    o->max_shared_bytes = lim->max_shared_dynamic;
    o->max_local_bytes = lim->max_local_bytes;
}

void lower_opts_limits(const tir_lower_opts *o, tir_target_limits *out) {
    *out = tir_target_default()->limits;
    out->max_threads_per_block = o->max_threads_per_block;
    for (int d = 0; d < 3; d++) out->max_block_dim[d] = o->max_thread_extent[d];
    out->max_shared_dynamic = o->max_shared_bytes;
    if (out->max_shared_static > o->max_shared_bytes) out->max_shared_static = o->max_shared_bytes;
    out->max_local_bytes = o->max_local_bytes;
}

void tir_lower_opts_init(tir_lower_opts *o) {
    tir_lower_opts_init_target(o, &tir_target_default()->limits);
}

/* Every pass must leave a well-formed function.  One that does not is a
 * lowering bug, but the user's process must not die of it: the status says
 * which pass broke the function and shows it. */
static tir_status verify_pass(tir_ctx *ctx, const char *pass, const tir_prim_func *f) {
    if (tir_verify(ctx, f) == TIR_OK) return TIR_OK;
    return tir_ctx_fail(ctx, TIR_ERR_LOWER,
                        "internal error in pass %s (a minitir bug): its result fails "
                        "tir_verify: %s\n%s",
                        pass, tir_ctx_error(ctx), tir_print(ctx, f));
}

tir_status tir_lower(tir_ctx *ctx, const tir_prim_func *scheduled, const tir_lower_opts *opts,
                     const tir_prim_func **kernel) {
    if (!ctx) return TIR_ERR_INVALID_ARG;
    if (!scheduled || !kernel)
        return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG, "tir_lower: NULL function or result");
    *kernel = NULL;
    lower_state st = {.ctx = ctx, .scheduled = scheduled};
    if (opts)
        st.opts = *opts;
    else
        tir_lower_opts_init(&st.opts);
    tir_status s = tir_verify(ctx, scheduled);
    if (s != TIR_OK)
        return tir_ctx_fail(ctx, s, "tir_lower: the scheduled function is not well formed: %s",
                            tir_ctx_error(ctx));
    const tir_prim_func *f = scheduled;
    for (int i = 0; i < NPASSES; i++) {
        const tir_prim_func *next = NULL;
        if (st.opts.no_race_check && lower_passes[i].fn == lower_race_check) continue;
        s = lower_passes[i].fn(&st, f, &next);
        if (s != TIR_OK) break;
        TIR_ASSERT(next);
        f = next;
        s = verify_pass(ctx, lower_passes[i].name, f);
        if (s != TIR_OK) break;
        if (ir_dump_wanted(lower_passes[i].name, true))
            fprintf(stderr, "---- IR after %s\n%s\n", lower_passes[i].name, tir_print(ctx, f));
        if (st.opts.stop_after && strcmp(st.opts.stop_after, lower_passes[i].name) == 0) break;
    }
    if (s == TIR_OK) *kernel = f;
    return s;
}

tir_status tir_lower_check_races(tir_ctx *ctx, const tir_prim_func *kernel) {
    if (!ctx) return TIR_ERR_INVALID_ARG;
    if (!kernel)
        return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG, "tir_lower_check_races: NULL kernel");
    lower_state st = {.ctx = ctx};
    tir_lower_opts_init(&st.opts);
    const tir_prim_func *out = NULL;
    return lower_race_check(&st, kernel, &out);
}
