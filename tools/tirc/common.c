/* common.c: what every tirc command does with an example: define its
 * program, schedule it with the seed library and compile it to PTX.
 */
#include <stdio.h>
#include <string.h>

#include "hgemm.h"
#include "sgemm.h"
#include "tirc.h"

bool tirc_is_fused(const opts *o) { return !strcmp(o->example, "fused"); }

/* The program of an example: the matmul, or the fused GEMM of epilogue e. */
const tir_prim_func *tirc_define(tir_ctx *ctx, const opts *o, int e, int64_t M, int64_t N,
                                 int64_t K) {
    if (tirc_is_fused(o)) return seed_def_fused(ctx, (seed_epi)e, M, N, K);
    return tir_def_matmul_mixed(ctx, M, N, K, tir_rt_gemm_kind_input(o->kind), TIR_F32);
}

typedef struct hook_state {
    tir_ctx *ctx;
} hook_state;

static void print_each(void *user, tir_schedule *s, const char *call) {
    hook_state *h = user;
    printf("---- after %s\n%s\n", call, tir_print(h->ctx, tir_sched_func(s)));
}

/* Schedules program f for step (fused: through seed_fused; unfused
 * matmul of a fused example: seed_schedule of the plain matmul). */
const seed_tiles *tirc_tiles(const opts *o) { return o->tile_given ? &o->tiles : NULL; }

const tir_tile_config *tirc_config(const opts *o) { return o->config_given ? &o->config : NULL; }

unsigned tirc_tc_off(const opts *o) {
    bool sm90 = tir_codegen_arch_has_wgmma(o->arch);
    return o->tc_off | o->tail | (o->no_swizzle ? TIRC_TC_OFF_SWIZZLE : 0) |
           (o->tc_on & TIRC_TC_ON_WGMMA ? TIRC_TC_WGMMA : 0) | (sm90 ? TIRC_TC_SM90 : 0);
}

/* Step 7 or 8 with a given configuration (NULL: sgemm_config_for's, with
 * staging in Step 8, as seed.c's) and stages >= 2: a multistage pipeline
 * instead of staging; no_swizzle: the blocks in raster order. */
static tir_status step78_config(tir_schedule *s, int step, const tir_tile_config *config,
                                int stages, unsigned tc_off, seed_hook hook, void *user) {
    int64_t M, N, K;
    tir_status st = sgemm_shape(s, &M, &N, &K);
    if (st != TIR_OK) return st;
    sgemm_config cfg = config ? *config : sgemm_config_for(M, N, K, 132);
    if (!config) sgemm_config_step(&cfg, step); /* as seed.c's */
    if (stages >= 2) cfg.stages = stages, cfg.staging = false;
    cfg.no_swizzle = tc_off & TIRC_TC_OFF_SWIZZLE;
    cfg.guard_tail = tc_off & TIRC_TAIL_GUARD;
    cfg.clamp_tail = tc_off & TIRC_TAIL_CLAMP;
    return sgemm_schedule(s, &cfg, hook, user);
}

tir_status tirc_schedule(tir_ctx *ctx, const tir_prim_func *f, bool fused, int step,
                         const seed_tiles *tiles, int splitk, bool atomic, int stages,
                         const tir_tile_config *config, unsigned tc_off, bool each,
                         tir_schedule **out) {
    hook_state h = {ctx};
    tir_status st = tir_sched_create(ctx, f, out);
    if (st != TIR_OK) return st;
    seed_hook hook = each ? print_each : NULL;
    if (step == TIRC_STEP_TC) { /* tensor cores, hgemm.c */
        int64_t M, N, K;
        if ((st = sgemm_shape(*out, &M, &N, &K)) == TIR_OK) {
            hgemm_config cfg = hgemm_config_for(f->buffer_map[0]->dtype, M, N, K, 132);
            /* on sm_90, TF32 by wgmma where it fits (tir_tune_tc_default_arch),
               unless the command line shapes the mma.sync kernel */
            const unsigned mma_only = TIRC_TC_OFF_BPAIRS | TIRC_TC_OFF_FRAGPIPE |
                                      TIRC_TC_OFF_LDM32 | TIRC_TC_OFF_ODDPAD |
                                      TIRC_TC_OFF_TF32SWAP | TIRC_TC_OFF_SMEMSWZ |
                                      TIRC_TC_OFF_WGMMA;
            if ((tc_off & TIRC_TC_SM90) && !(tc_off & mma_only) && !tiles && splitk <= 1 &&
                tir_dtype_eq(f->buffer_map[0]->dtype, TIR_F32)) {
                tir_tune_task t = {TIR_TUNE_MATMUL, 1, M, N, K, TIR_RT_GEMM_TF32};
                cfg = tir_tune_tc_default_arch(&t, 132, "sm_90");
            }
            if (tc_off & TIRC_TC_WGMMA) cfg = tir_tc_config_wgmma();
            if (tiles)
                cfg.bm = tiles->bm, cfg.bn = tiles->bn, cfg.bk = tiles->bk,
                cfg.warps_m = tiles->tm, cfg.warps_n = tiles->tn;
            if (stages) cfg.stages = stages;
            if (splitk > 1) cfg.splitk = splitk;
            cfg.no_b_pairs = tc_off & TIRC_TC_OFF_BPAIRS;
            cfg.no_frag_pipeline = tc_off & TIRC_TC_OFF_FRAGPIPE;
            cfg.no_swizzle = tc_off & TIRC_TC_OFF_SWIZZLE;
            cfg.same_pad = tc_off & TIRC_TC_OFF_ODDPAD;
            /* ldm32: no ldmatrix reads TF32 A, so flatten would not swizzle
               its unpadded rows: pad them (review of the swizzle) */
            cfg.no_smem_swizzle = tc_off & (TIRC_TC_OFF_SMEMSWZ | TIRC_TC_OFF_LDM32);
            st = hgemm_schedule(*out, &cfg, hook, &h);
        }
    } else if (step == 8 && !fused && (config || stages)) { /* --config, --stages */
        st = step78_config(*out, 8, config, stages, tc_off, hook, &h);
    } else if ((step == 7 || step == 8) && !fused && splitk <= 1 &&
               (tc_off & (TIRC_TC_OFF_SWIZZLE | TIRC_TAIL_GUARD |
                          TIRC_TAIL_CLAMP))) { /* seed.c's Steps 7-8, --no-swizzle, --tail */
        st = step78_config(*out, step, NULL, 0, tc_off, hook, &h);
    } else if (splitk > 1 && !fused && (step == 7 || step == 8)) { /* seed.c's Steps 7-8, split */
        int64_t M, N, K;
        if ((st = sgemm_shape(*out, &M, &N, &K)) != TIR_OK) {
            tir_sched_destroy(*out);
            *out = NULL;
            return st;
        }
        /* the tiles for the blocks of all splits (132: the H200's SMs) */
        sgemm_config cfg = sgemm_config_for(M, N, K, (132 + splitk - 1) / splitk);
        sgemm_config_step(&cfg, step); /* as seed.c's */
        cfg.splitk = splitk;
        cfg.bk = 16; /* fine slices (whole k tiles), valid for both tile shapes */
        cfg.splitk_atomic = atomic;
        cfg.no_swizzle = tc_off & TIRC_TC_OFF_SWIZZLE;
        st = sgemm_schedule(*out, &cfg, hook, &h);
    } else {
        st = fused ? seed_fused(*out, step, hook, &h)
                   : seed_schedule_tiles(*out, step, tiles, hook, &h);
    }
    if (st != TIR_OK) {
        tir_sched_destroy(*out);
        *out = NULL;
    }
    return st;
}

/* The lowering options of the command line (--peel-tail, --tc-off
 * interleave, prefetch, ldm32, tf32swap, --tc-on vecstore). */
void tirc_lower_opts(const opts *o, tir_lower_opts *lo) {
    tir_lower_opts_init(lo);
    lo->pipeline_peel_tail = o->peel_tail;
    lo->no_copy_interleave = o->tc_off & TIRC_TC_OFF_INTERLEAVE;
    lo->no_tile_prefetch = o->tc_off & TIRC_TC_OFF_PREFETCH;
    lo->no_ldmatrix_tf32 = o->tc_off & TIRC_TC_OFF_LDM32;
    lo->no_tf32_swap = o->tc_off & TIRC_TC_OFF_TF32SWAP;
    lo->vector_acc_store = o->tc_on & TIRC_TC_ON_VECSTORE;
}

/* Schedules and compiles; *ms is the schedule -> PTX wall time; sched_ms
 * (may be NULL) gets the schedule's share. */
tir_status tirc_compile(tir_ctx *ctx, const opts *o, const tir_prim_func *f, bool fused, int step,
                        tir_module_set *m, double *ms, double *sched_ms) {
    double t0 = mt_now_ms();
    tir_schedule *s;
    bool tuned;
    tir_status st = o->db && (step == 8 || step == TIRC_STEP_TC) && !fused && o->splitk <= 1
                        ? tirc_tuned_schedule(ctx, o, f, &s, &tuned)
                        : tirc_schedule(ctx, f, fused, step, tirc_tiles(o), o->splitk, o->atomic, o->stages,
                                        tirc_config(o), tirc_tc_off(o), false, &s);
    if (st != TIR_OK) return st;
    if (sched_ms) *sched_ms = mt_now_ms() - t0;
    tir_codegen_opts cg;
    tir_codegen_opts_init(&cg);
    cg.arch = o->arch;
    if (o->opt_given) cg.pipeline = o->pipeline;
    cg.no_cache = o->no_cache;
    tir_lower_opts lo;
    tirc_lower_opts(o, &lo);
    st = tir_build_kernels_with(ctx, tir_sched_func(s), &lo, &cg, m);
    tir_sched_destroy(s);
    if (ms) *ms = mt_now_ms() - t0;
    return st;
}
