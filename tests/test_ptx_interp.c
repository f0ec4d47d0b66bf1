/* test_ptx_interp.c: the PTX interpreter (ptx_interp.c) as an oracle.
 * Real kernels: the seed matmul schedules (Steps 1-8, ragged sizes, a
 * dynamic-shared-memory tile, the multistage cp.async pipeline, split-K
 * with a workspace and with atomic adds, fused epilogues, Steps 7-8 with
 * the direct_unroll annotation) are built with
 * minitir's API, compiled to PTX by tir_codegen (LLVM), run in the
 * interpreter at the module's launch dimensions and compared bit for bit
 * with the reference interpreter (tir_interp_run) on small-integer inputs,
 * where every summation order gives the same floats; the output starts as
 * NaN, so an element never written fails.  Hand-written PTX checks the
 * edge semantics (NaN min/max, cvt saturation and rounding, shifts,
 * div/rem, fma, denormals, predication, vectors, shared/local/dynamic
 * memory, cp.async zero fill, bfi, prmt, f16/bf16 cvt) and the errors
 * (barriers, bounds, alignment, division by zero, unsupported
 * instructions, step limit).  The warp-collectives: ldmatrix x1, x2, x4,
 * with and without .trans, on one and two warps with scattered rows, and
 * mma (bf16, f16, tf32) against the PTX ISA's fragment figures written
 * out here, shfl.sync's four modes, and their errors (a lane exited or at a barrier, a guard
 * that differs in the warp, misaligned rows, rows outside shared memory,
 * a partial warp);
 * where ptxas is installed, the valid snippets are assembled by it too, so
 * that the semantics are checked on PTX the real assembler takes.
 * direct_edges: lowered kernels (as text) at the edges of the direct
 * emitter's subset that the fuzzers found or could reach, compiled by it
 * alone and run in the interpreter against the SIMT simulator.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "minitir/codegen.h"
#include "minitir/lower.h"
#include "minitir/sim.h"
#include "direct_check.h"
#include "ptx_interp.h"
#include "ptxas_check.h"
#include "seed.h"
#include "sgemm.h"

#define OK(ctx, call)                                                                     \
    do {                                                                                  \
        tir_status st_ = (call);                                                          \
        if (st_ != TIR_OK) fail_msg("%s: %s", #call, tir_ctx_error(ctx));                 \
    } while (0)

/* ------------------------------------------------------------ real kernels */

typedef struct kcase {
    int step;              /* 1..8 */
    int64_t M, N, K;
    int epi;               /* -1: the plain matmul; else a seed_epi (fused) */
    int splitk;            /* > 1: Step 8 split-K */
    bool atomic;           /* split-K summed by atomic adds */
    int stages;            /* >= 2: Step 8's multistage cp.async pipeline */
    const seed_tiles *tiles;
} kcase;

static const seed_tiles big_tiles = {128, 128, 32, 8, 8}; /* 64 KiB: dynamic shared */

/* Schedules c's program f (as tirc does, tools/tirc/common.c); dunroll:
 * Step 8's configuration with the tuner's dunroll (the direct_unroll
 * annotation). */
static const tir_prim_func *schedule(tir_ctx *ctx, const kcase *c, const tir_prim_func *f,
                                     bool dunroll) {
    tir_schedule *s;
    OK(ctx, tir_sched_create(ctx, f, &s));
    if (c->epi >= 0) {
        OK(ctx, seed_fused(s, c->step, NULL, NULL));
    } else if (c->splitk > 1 || c->stages >= 2) {
        int nsm = c->splitk > 1 ? (132 + c->splitk - 1) / c->splitk : 132;
        sgemm_config cfg = sgemm_config_for(c->M, c->N, c->K, nsm);
        cfg.staging = c->splitk > 1 && cfg.stages < 2; /* (the default may pick stages) */
        if (c->splitk > 1) cfg.splitk = c->splitk, cfg.bk = 16, cfg.splitk_atomic = c->atomic;
        if (c->stages >= 2) cfg.stages = c->stages;
        cfg.dunroll = dunroll;
        OK(ctx, sgemm_schedule(s, &cfg, NULL, NULL));
    } else if (dunroll) { /* seed_schedule_tiles' Step 7 or 8, annotated */
        sgemm_config cfg = sgemm_config_for(c->M, c->N, c->K, 132);
        sgemm_config_step(&cfg, c->step);
        cfg.dunroll = true;
        OK(ctx, sgemm_schedule(s, &cfg, NULL, NULL));
    } else {
        OK(ctx, seed_schedule_tiles(s, c->step, c->tiles, NULL, NULL));
    }
    const tir_prim_func *out = tir_sched_func(s);
    tir_sched_destroy(s);
    return out;
}

/* Small integers in [-3, 3]: exact sums in any order. */
static void fill_ints(float *x, size_t n, uint32_t seed) {
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        x[i] = (float)((int)(seed >> 24) % 7 - 3);
    }
}

/* Runs module m of a set in the interpreter: the function's buffers, then
 * the workspace buffers. */
static void run_module(tir_ctx *ctx, const tir_module *m, void *const *bufs, const size_t *bytes,
                       int nbufs, ptx_interp_stats *st) {
    tir_arg targs[8];
    ptx_arg pargs[8];
    assert_true(m->nparams <= 8 && m->nparams <= nbufs);
    for (int i = 0; i < m->nparams; i++) {
        assert_int_equal(m->params[i].kind, TIR_PARAM_BUFFER);
        targs[i] = (tir_arg){bufs[i], 0};
        pargs[i] = (ptx_arg){true, bufs[i], bytes[i], 0};
    }
    int64_t grid[3], block[3];
    OK(ctx, tir_module_launch_dims(ctx, m, m->nparams, targs, grid, block));
    char err[512];
    int rc = ptx_interp_run_ex(m->ptx, m->kernel_name, grid, block, pargs, m->nparams,
                               m->dyn_shared_bytes, NULL, st, err, sizeof err);
    if (rc != 0) fail_msg("kernel %s: %s", m->kernel_name, err);
    assert_int_equal(st->blocks, grid[0] * grid[1] * grid[2]);
}

/* One case compiled by one pipeline: PTX through the interpreter equals
 * tir_interp_run bit for bit.  With TIR_CG_PIPELINE_DIRECT, the direct
 * emitter (src/codegen/cg_direct.c) must take every kernel of Steps 7-8
 * and, with its loops unrolled as LLVM's O3 would (not all_loops, which
 * leaves every loop rolled: direct_all_loops), the plain matmul's Steps
 * 1-3 (the seed's float32 kernels are all in its subset except the atomic
 * split-K's and those whose local arrays are indexed by loops that LLVM
 * too leaves rolled: Steps 4-6, the fused epilogue's Step 2).  dunroll:
 * Step 8 unrolled by its kernels' direct_unroll annotation instead of the
 * option (schedule). */
static void run_case_with(const kcase *c, tir_cg_pipeline pipeline, bool all_loops, bool dunroll) {
    tir_ctx *ctx = tir_ctx_create();
    int64_t M = c->M, N = c->N, K = c->K;
    const tir_prim_func *f = c->epi < 0 ? tir_def_matmul(ctx, M, N, K, TIR_F32)
                                        : seed_def_fused(ctx, (seed_epi)c->epi, M, N, K);
    assert_non_null(f);
    tir_module_set ms;
    tir_codegen_opts cg;
    tir_codegen_opts_init(&cg);
    cg.pipeline = pipeline;
    cg.direct_all_loops = all_loops;
    cg.direct_unroll = !all_loops && !dunroll;
    OK(ctx, tir_build_kernels_with(ctx, schedule(ctx, c, f, dunroll), NULL, &cg, &ms));
    for (int k = 0; k < ms.nmodules && pipeline == TIR_CG_PIPELINE_DIRECT; k++) {
        const tir_module *m = ms.modules[k];
        bool must = c->step >= 7 || (c->step <= 3 && c->epi < 0 && !all_loops);
        if (m->pipeline != TIR_CG_PIPELINE_DIRECT && must && !c->atomic)
            fail_msg("step %d: the direct emitter left %s to LLVM: %s", c->step, m->kernel_name,
                     m->direct_refusal);
    }
    int np = c->epi < 0 ? 3 : 4, nb = np + ms.nworkspace;
    size_t bytes[8] = {4 * (size_t)(M * K), 4 * (size_t)(K * N), 4 * (size_t)N, 4 * (size_t)(M * N)};
    if (c->epi < 0) bytes[2] = bytes[3];
    for (int i = 0; i < ms.nworkspace; i++) bytes[np + i] = 4 * (size_t)tir_buffer_const_size(ms.workspace[i]);
    void *bufs[8];
    for (int i = 0; i < nb; i++) bufs[i] = malloc(bytes[i]), memset(bufs[i], 0xff, bytes[i]);
    float *want = malloc(bytes[np - 1]);
    for (int i = 0; i < np - 1; i++) fill_ints(bufs[i], bytes[i] / 4, 7u + (uint32_t)i);
    tir_arg rargs[4];
    for (int i = 0; i < np; i++) rargs[i] = (tir_arg){bufs[i], 0};
    rargs[np - 1].data = want;
    tir_interp_opts io = {.uninit_params = 1ull << (np - 1)};
    OK(ctx, tir_interp_run(ctx, f, np, rargs, &io));
    ptx_interp_stats st;
    int64_t barriers = 0;
    for (int k = 0; k < ms.nmodules; k++) {
        assert_int_equal(ms.modules[k]->nparams, nb);
        run_module(ctx, ms.modules[k], bufs, bytes, nb, &st);
        barriers += st.barriers;
    }
    if (c->step >= 3) assert_true(barriers > 0);
    const float *got = bufs[np - 1];
    for (int64_t i = 0; i < M * N; i++)
        if (memcmp(&got[i], &want[i], 4))
            fail_msg("step %d %lldx%lldx%lld: element %lld is %g, want %g", c->step, (long long)M,
                     (long long)N, (long long)K, (long long)i, got[i], want[i]);
    for (int i = 0; i < nb; i++) free(bufs[i]);
    free(want);
    tir_ctx_destroy(ctx);
}

/* Both code generators: LLVM's (the short pipeline) and the direct one. */
static void run_case(const kcase *c) {
    run_case_with(c, TIR_CG_PIPELINE_SHORT, false, false);
    run_case_with(c, TIR_CG_PIPELINE_DIRECT, true, false);
    run_case_with(c, TIR_CG_PIPELINE_DIRECT, false, false);
}

static void matmul_steps(void **state) {
    (void)state;
    for (int step = 1; step <= SEED_NSTEPS; step++) {
        run_case(&(kcase){step, 64, 64, 32, -1, 0, false, 0, NULL});
        run_case(&(kcase){step, 65, 33, 17, -1, 0, false, 0, NULL});
    }
    run_case(&(kcase){8, 128, 128, 16, -1, 0, false, 0, NULL});
    /* k loops of several iterations: the direct emitter's induction
     * pointers (loop strength reduction) and hoisted addresses */
    run_case(&(kcase){8, 128, 128, 72, -1, 0, false, 0, NULL});
    run_case(&(kcase){8, 130, 66, 70, -1, 0, false, 0, NULL});
    run_case(&(kcase){7, 128, 128, 96, -1, 0, false, 0, NULL});
}

/* The default choice between the direct emitter and LLVM (tir_codegen's
 * defaults, no environment): the seed's Steps 1-3 have loops small enough
 * for LLVM's O3 unroller, whose kernels ran 35-65% faster than the direct
 * emitter's unrolled ones (docs/performance.md, run 160), so they go to
 * LLVM with that reason; Step 8's 1024^3 main kernel (k loop bodies of
 * 570+ instructions) stays the direct emitter's. */
static void default_direct_choice(void **state) {
    (void)state;
    const char *env = getenv("MINITIR_CG_PIPELINE");
    if (env && *env) skip(); /* an A/B run's other default */
    for (int step = 1; step <= 8; step += step == 3 ? 5 : 1) {
        int64_t n = step == 8 ? 1024 : 256;
        kcase c = {step, n, n, n, -1, 0, false, 0, NULL};
        tir_ctx *ctx = tir_ctx_create();
        tir_module_set ms;
        OK(ctx, tir_build_kernels(ctx, schedule(ctx, &c, tir_def_matmul(ctx, n, n, n, TIR_F32), false), NULL,
                                  &ms));
        const tir_module *m = ms.modules[0];
        if (step <= 3) {
            assert_int_not_equal(m->pipeline, TIR_CG_PIPELINE_DIRECT); /* short or fast */
            assert_non_null(m->direct_refusal);
            assert_non_null(strstr(m->direct_refusal, "small enough for LLVM to unroll"));
        } else {
            assert_int_equal(m->pipeline, TIR_CG_PIPELINE_DIRECT);
        }
        tir_ctx_destroy(ctx);
    }
}

/* Steps 7 and 8 where their configuration (sgemm_config_for) has a k loop
 * that the direct emitter leaves to LLVM by default (checked first; 100³
 * is a shape where its own unrolling ran faster, docs/performance.md run
 * 161): with the direct_unroll annotation it takes every kernel
 * (run_case_with's check) with its own unrolling, and the PTX equals the
 * reference interpreter, split-K too; with the short pipeline (LLVM) as
 * without the annotation. */
static void direct_unroll_attr(void **state) {
    (void)state;
    static const kcase cases[] = {{7, 64, 64, 64, -1, 0, false, 0, NULL},
                                  {8, 65, 33, 70, -1, 0, false, 0, NULL},
                                  {8, 65, 33, 70, -1, 2, false, 0, NULL},
                                  {8, 100, 100, 100, -1, 0, false, 0, NULL}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const kcase *c = &cases[i];
        tir_ctx *ctx = tir_ctx_create();
        const tir_prim_func *f = tir_def_matmul(ctx, c->M, c->N, c->K, TIR_F32);
        tir_codegen_opts o; /* the default, whatever the environment says */
        tir_codegen_opts_init(&o);
        o.pipeline = TIR_CG_PIPELINE_DIRECT, o.direct_unroll = o.direct_all_loops = false;
        tir_module_set ms;
        OK(ctx, tir_build_kernels(ctx, schedule(ctx, c, f, false), &o, &ms));
        const char *why = ms.modules[0]->direct_refusal;
        if (!why || !strstr(why, "small enough for LLVM to unroll"))
            fail_msg("case %zu: the default's main kernel: %s", i, why ? why : "direct");
        tir_ctx_destroy(ctx);
        run_case_with(c, TIR_CG_PIPELINE_DIRECT, false, true);
        run_case_with(c, TIR_CG_PIPELINE_SHORT, false, true);
    }
}

/* 128x128x32 tiles: a 64 KiB double buffer in dynamic shared memory. */
static void dynamic_shared(void **state) {
    (void)state;
    run_case(&(kcase){5, 130, 128, 40, -1, 0, false, 0, &big_tiles});
}

/* Step 8 with a 3-stage pipeline: cp.async with zero-filling src-size. */
static void multistage(void **state) {
    (void)state;
    run_case(&(kcase){8, 128, 128, 64, -1, 0, false, 3, NULL});
    run_case(&(kcase){8, 65, 33, 17, -1, 0, false, 3, NULL});
}

/* Split-K: two kernels and a workspace; atomic: a zeroing kernel and
 * atom.add of the partial sums. */
static void splitk(void **state) {
    (void)state;
    run_case(&(kcase){8, 128, 128, 64, -1, 2, false, 0, NULL});
    run_case(&(kcase){8, 65, 33, 70, -1, 3, false, 0, NULL});
    run_case(&(kcase){8, 65, 33, 70, -1, 2, true, 0, NULL});
}

static void fused(void **state) {
    (void)state;
    for (int e = 0; e < SEED_NEPI; e++) {
        run_case(&(kcase){6, 65, 33, 17, e, 0, false, 0, NULL});
        run_case(&(kcase){2, 40, 36, 9, e, 0, false, 0, NULL});
    }
}

/* ------------------------------------------------------------- snippets */

static const char *snippet_head =
    ".version 7.8\n.target sm_90\n.address_size 64\n"
    ".extern .shared .align 16 .b8 dyn[];\n"
    ".visible .entry k(.param .u64 k_param_0, .param .u64 k_param_1, .param .u32 k_param_2)\n"
    ".maxntid 64, 1, 1\n{\n"
    ".reg .pred %p<8>;\n.reg .b32 %r<32>;\n.reg .f32 %f<32>;\n.reg .b64 %rd<32>;\n"
    "ld.param.u64 %rd1, [k_param_0];\nld.param.u64 %rd2, [k_param_1];\n"
    "ld.param.u32 %r30, [k_param_2];\n"
    "mov.u32 %r31, %tid.x;\n";

/* Runs body (after the head, from line 16) on block threads with out[64]
 * and in[]; returns ptx_interp_run's value, the error in err. */
static int snippet(const char *body, int64_t block, uint32_t *out, const uint32_t *in, size_t nin,
                   int64_t dyn, bool assemble, char *err) {
    char *text = malloc(strlen(snippet_head) + strlen(body) + 16);
    if (!text) abort();
    sprintf(text, "%s%s\nret;\n}\n", snippet_head, body);
    if (assemble) { /* the valid snippets are PTX that ptxas takes, where installed */
        tir_module m = {.kernel_name = "k", .arch = "sm_90", .ptx = text, .ptx_len = strlen(text)};
        ptxas_check(&m);
    }
    ptx_arg args[3] = {{true, out, 64 * 4, 0}, {true, (void *)in, nin * 4, 0}, {false, NULL, 0, 5}};
    int64_t g[3] = {1, 1, 1}, b[3] = {block, 1, 1};
    ptx_interp_opts o = {.max_steps_per_thread = 10000};
    err[0] = 0;
    int rc = ptx_interp_run_ex(text, "k", g, b, args, 3, dyn, &o, NULL, err, 512);
    free(text);
    return rc;
}

/* Runs body on one thread and checks out[0..n) against want. */
static void expect_out(const char *body, const uint32_t *in, size_t nin, const uint32_t *want, int n) {
    _Alignas(16) uint32_t out[64] = {0};
    char err[512];
    if (snippet(body, 1, out, in, nin, 0, true, err) != 0) fail_msg("%s\n%s", err, body);
    for (int i = 0; i < n; i++)
        if (out[i] != want[i]) fail_msg("out[%d] = 0x%08x, want 0x%08x in\n%s", i, out[i], want[i], body);
}

static void expect_error(const char *body, int64_t block, const char *what) {
    _Alignas(16) uint32_t out[64] = {0}, in[64] = {0};
    char err[512];
    if (snippet(body, block, out, in, 64, 0, false, err) == 0) fail_msg("no error for\n%s", body);
    if (!strstr(err, what)) fail_msg("error '%s' lacks '%s'", err, what);
}

static uint32_t fbits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static float bits_float(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static void minmax_nan(void **state) {
    (void)state;
    _Alignas(16) uint32_t in[] = {0x7fc00000u, fbits(1.0f), fbits(-0.0f), fbits(0.0f), 0xffc00001u};
    const char *body =
        "ld.global.v4.f32 {%f1, %f2, %f3, %f4}, [%rd2];\nld.global.f32 %f5, [%rd2+16];\n"
        "min.f32 %f6, %f1, %f2;\nst.global.f32 [%rd1], %f6;\n"
        "max.f32 %f6, %f2, %f1;\nst.global.f32 [%rd1+4], %f6;\n"
        "min.f32 %f6, %f1, %f5;\nst.global.f32 [%rd1+8], %f6;\n"
        "min.f32 %f6, %f4, %f3;\nst.global.f32 [%rd1+12], %f6;\n"
        "max.f32 %f6, %f3, %f4;\nst.global.f32 [%rd1+16], %f6;\n"
        "add.rn.f32 %f6, %f5, %f2;\nst.global.f32 [%rd1+20], %f6;\n"
        "max.f32 %f6, %f2, 0f40000000;\nst.global.f32 [%rd1+24], %f6;\n";
    uint32_t want[] = {fbits(1), fbits(1), 0x7fffffffu, fbits(-0.0f), fbits(0.0f), 0x7fffffffu, fbits(2)};
    expect_out(body, in, 5, want, 7);
}

/* f32 to and from the 16-bit floats (LLVM's bf16 and f16 stores and
 * loads): to nearest even, ties both ways, overflow, subnormals, NaN. */
static void cvt_16bit(void **state) {
    (void)state;
    _Alignas(16) uint32_t in[] = {0x3f808000u, 0x3f818000u, fbits(65520.0f), fbits(65519.0f),
                                  fbits(0x1p-25f), fbits(0x3p-25f), fbits(1.0f / 3), 0x7fc00001u,
                                  0x0001u, 0xc0a0u, fbits(-0x1p-14f), 0x7f7fffffu};
    static const char *const op[12] = {"bf16", "bf16", "f16", "f16", "f16", "f16", "f16", "bf16",
                                       "f16", "bf16", "f16", "bf16"};
    char body[4096] = "";
    for (int i = 0; i < 12; i++) {
        size_t k = strlen(body);
        if (i == 8 || i == 9) /* from 16 bits */
            snprintf(body + k, sizeof body - k, "ld.global.b16 %%rs1, [%%rd2+%d];\n"
                     "cvt.f32.%s %%f1, %%rs1;\nst.global.f32 [%%rd1+%d], %%f1;\n", 4 * i, op[i], 4 * i);
        else
            snprintf(body + k, sizeof body - k, "ld.global.f32 %%f1, [%%rd2+%d];\n"
                     "cvt.rn.%s.f32 %%rs1, %%f1;\ncvt.u32.u16 %%r1, %%rs1;\nst.global.u32 [%%rd1+%d], %%r1;\n",
                     4 * i, op[i], 4 * i);
    }
    /* from integers: ties to even at 2049, 2051 (f16) and 257 (bf16),
     * -65520 to -Inf, 2^64 - 1 up to 2^64 */
    size_t k = strlen(body);
    snprintf(body + k, sizeof body - k,
             "mov.u32 %%r1, 2049;\ncvt.rn.f16.u32 %%rs1, %%r1;\ncvt.u32.u16 %%r2, %%rs1;\n"
             "st.global.u32 [%%rd1+48], %%r2;\n"
             "mov.u32 %%r1, 2051;\ncvt.rn.f16.u32 %%rs1, %%r1;\ncvt.u32.u16 %%r2, %%rs1;\n"
             "st.global.u32 [%%rd1+52], %%r2;\n"
             "mov.u32 %%r1, -65520;\ncvt.rn.f16.s32 %%rs1, %%r1;\ncvt.u32.u16 %%r2, %%rs1;\n"
             "st.global.u32 [%%rd1+56], %%r2;\n"
             "mov.u32 %%r1, 257;\ncvt.rn.bf16.s32 %%rs1, %%r1;\ncvt.u32.u16 %%r2, %%rs1;\n"
             "st.global.u32 [%%rd1+60], %%r2;\n"
             "mov.u64 %%rd3, -1;\ncvt.rn.bf16.u64 %%rs1, %%rd3;\ncvt.u32.u16 %%r2, %%rs1;\n"
             "st.global.u32 [%%rd1+64], %%r2;\n");
    char full[4200];
    snprintf(full, sizeof full, ".reg .b16 %%rs<2>;\n%s", body);
    uint32_t want[] = {0x3f80, 0x3f82, 0x7c00, 0x7bff, 0, 2, 0x3555, 0x7fff,
                       fbits(0x1p-24f), 0xc0a00000u, 0x8400, 0x7f80,
                       0x6800, 0x6802, 0xfc00, 0x4380, 0x5f80};
    expect_out(full, in, 12, want, 17);
}

static void cvt_semantics(void **state) {
    (void)state;
    _Alignas(16) uint32_t in[] = {fbits(3e9f), fbits(-3e9f), 0x7fc00000u, fbits(-2.7f), fbits(5e9f), fbits(2.5f),
                     16777217u, 0xffffffffu, (uint32_t)-5};
    const char *body =
        "ld.global.f32 %f1, [%rd2];\ncvt.rzi.s32.f32 %r1, %f1;\nst.global.u32 [%rd1], %r1;\n"
        "ld.global.f32 %f1, [%rd2+4];\ncvt.rzi.s32.f32 %r1, %f1;\nst.global.u32 [%rd1+4], %r1;\n"
        "ld.global.f32 %f1, [%rd2+8];\ncvt.rzi.s32.f32 %r1, %f1;\nst.global.u32 [%rd1+8], %r1;\n"
        "ld.global.f32 %f1, [%rd2+12];\ncvt.rzi.s32.f32 %r1, %f1;\nst.global.u32 [%rd1+12], %r1;\n"
        "cvt.rzi.u32.f32 %r1, %f1;\nst.global.u32 [%rd1+16], %r1;\n"
        "ld.global.f32 %f1, [%rd2+16];\ncvt.rzi.u32.f32 %r1, %f1;\nst.global.u32 [%rd1+20], %r1;\n"
        "ld.global.f32 %f1, [%rd2+20];\ncvt.rni.s32.f32 %r1, %f1;\nst.global.u32 [%rd1+24], %r1;\n"
        "ld.global.u32 %r2, [%rd2+24];\ncvt.rn.f32.s32 %f2, %r2;\nst.global.f32 [%rd1+28], %f2;\n"
        "ld.global.u32 %r2, [%rd2+28];\ncvt.rn.f32.u32 %f2, %r2;\nst.global.f32 [%rd1+32], %f2;\n"
        "ld.global.s32 %r2, [%rd2+32];\ncvt.s64.s32 %rd3, %r2;\nst.global.u64 [%rd1+40], %rd3;\n"
        "cvt.u64.u32 %rd3, %r2;\nst.global.u64 [%rd1+48], %rd3;\n"
        "ld.global.s8 %r3, [%rd2+32];\nst.global.u32 [%rd1+56], %r3;\n"
        "ld.global.u16 %r3, [%rd2+32];\nst.global.u32 [%rd1+60], %r3;\n";
    uint32_t want[] = {0x7fffffffu, 0x80000000u, 0, (uint32_t)-2, 0, 0xffffffffu, 2,
                       fbits(16777216.0f), fbits(4294967296.0f), 0, 0xfffffffbu, 0xffffffffu,
                       0xfffffffbu, 0, 0xfffffffbu, 0xfffbu};
    expect_out(body, in, 9, want, 16);
}


/* An integer cvt to a narrower type truncates to it and then sign- or
 * zero-extends to the register (LLVM's 8-bit code: cvt.s8.s32 into a
 * 16-bit register, then div.s16); the interpreter kept the source value
 * (248 for -8), seventh new-user review. */
static void cvt_narrow(void **state) {
    (void)state;
    _Alignas(16) uint32_t in[] = {248u, 0x1f8u, 0x18000u};
    const char *body =
        "ld.global.u32 %r2, [%rd2];\ncvt.s8.s32 %r1, %r2;\nst.global.u32 [%rd1], %r1;\n"
        "ld.global.u32 %r2, [%rd2+4];\ncvt.u8.s32 %r1, %r2;\nst.global.u32 [%rd1+4], %r1;\n"
        "ld.global.u32 %r2, [%rd2+8];\ncvt.s16.u32 %r1, %r2;\nst.global.u32 [%rd1+8], %r1;\n"
        "cvt.u16.u32 %r1, %r2;\nst.global.u32 [%rd1+12], %r1;\n";
    uint32_t want[] = {0xfffffff8u, 0xf8u, 0xffff8000u, 0x8000u};
    expect_out(body, in, 3, want, 4);
}

static void int_semantics(void **state) {
    (void)state;
    _Alignas(16) uint32_t in[] = {1, (uint32_t)-8, 0x80000000u, (uint32_t)-7, 2, 0xffffffffu, 33, 40};
    const char *body =
        "ld.global.v4.u32 {%r1, %r2, %r3, %r4}, [%rd2];\nld.global.v4.u32 {%r5, %r6, %r7, %r8}, [%rd2+16];\n"
        "shl.b32 %r10, %r1, %r7;\nst.global.u32 [%rd1], %r10;\n"      /* 1 << 33 = 0 */
        "shr.s32 %r10, %r2, %r8;\nst.global.u32 [%rd1+4], %r10;\n"    /* -8 >> 40 = -1 */
        "shr.u32 %r10, %r3, 31;\nst.global.u32 [%rd1+8], %r10;\n"     /* 1 */
        "shr.s32 %r10, %r2, 1;\nst.global.u32 [%rd1+12], %r10;\n"     /* -4 */
        "shr.b32 %r10, %r2, 1;\nst.global.u32 [%rd1+16], %r10;\n"     /* 0x7ffffffc */
        "div.s32 %r10, %r4, %r5;\nst.global.u32 [%rd1+20], %r10;\n"   /* -3 */
        "rem.s32 %r10, %r4, %r5;\nst.global.u32 [%rd1+24], %r10;\n"   /* -1 */
        "div.u32 %r10, %r6, %r5;\nst.global.u32 [%rd1+28], %r10;\n"   /* 0x7fffffff */
        "mul.wide.s32 %rd3, %r4, %r5;\nst.global.u64 [%rd1+32], %rd3;\n" /* -14 */
        "mul.wide.u32 %rd3, %r6, %r5;\nst.global.u64 [%rd1+40], %rd3;\n" /* 0x1fffffffe */
        "mul.hi.s32 %r10, %r3, %r5;\nst.global.u32 [%rd1+48], %r10;\n"   /* -1 */
        "mul.hi.u32 %r10, %r3, %r5;\nst.global.u32 [%rd1+52], %r10;\n"   /* 1 */
        "add.s32 %r10, %r6, %r5;\nst.global.u32 [%rd1+56], %r10;\n"      /* wraps: 1 */
        "bfe.u32 %r10, %r2, 2, 3;\nst.global.u32 [%rd1+60], %r10;\n"     /* (-8 >> 2) & 7 = 6 */
        "bfe.s32 %r10, %r2, 2, 3;\nst.global.u32 [%rd1+64], %r10;\n"     /* -2 */
        "mad.lo.s32 %r10, %r4, %r5, %r1;\nst.global.u32 [%rd1+68], %r10;\n" /* -13 */
        "min.s32 %r10, %r2, %r1;\nst.global.u32 [%rd1+72], %r10;\n"      /* -8 */
        "min.u32 %r10, %r2, %r1;\nst.global.u32 [%rd1+76], %r10;\n"      /* 1 */
        "setp.lt.s32 %p1, %r2, %r1;\nsetp.lo.u32 %p2, %r2, %r1;\n"
        "selp.b32 %r10, 10, 20, %p1;\nst.global.u32 [%rd1+80], %r10;\n"  /* 10 */
        "selp.b32 %r10, 10, 20, %p2;\nst.global.u32 [%rd1+84], %r10;\n"  /* 20 */
        "setp.gt.and.s32 %p3|%p4, %r1, 0, %p1;\nselp.b32 %r10, 1, 0, %p3;\nst.global.u32 [%rd1+88], %r10;\n"
        "selp.b32 %r10, 1, 0, %p4;\nst.global.u32 [%rd1+92], %r10;\n"    /* !(1>0) and p1 = 0 */
        "mov.b64 %rd4, {%r1, %r2};\nmov.b64 {%r11, %r12}, %rd4;\nst.global.v2.u32 [%rd1+96], {%r12, %r11};\n"
        "mul.lo.s32 %r10, %r30, 3;\nst.global.u32 [%rd1+104], %r10;\n"    /* scalar param 5 */
        "bfi.b32 %r10, %r4, %r6, 4, 8;\nst.global.u32 [%rd1+108], %r10;\n" /* 0xf9 into bits 4-11 */
        "bfi.b32 %r10, %r6, %r5, 28, 8;\nst.global.u32 [%rd1+112], %r10;\n" /* bits 28-31 only */
        /* bytes of b:a = 0x00000002:0xfffffff9 picked 4, 0, 3 (sign: ff), 1 (sign of f9: ff) */
        "prmt.b32 %r10, %r4, %r5, 0x9b04;\nst.global.u32 [%rd1+116], %r10;\n"
        /* LLVM's scoped temporary with a plain name */
        "{ .reg .b16 tmp, %rs1; mov.b32 {tmp, %rs1}, %r4; cvt.u32.u16 %r10, %rs1; }\n"
        "st.global.u32 [%rd1+120], %r10;\n";
    uint32_t want[] = {0, 0xffffffffu, 1, (uint32_t)-4, 0x7ffffffcu, (uint32_t)-3, (uint32_t)-1,
                       0x7fffffffu, (uint32_t)-14, 0xffffffffu, 0xfffffffeu, 1, 0xffffffffu, 1, 1,
                       6, (uint32_t)-2, (uint32_t)-13, (uint32_t)-8, 1, 10, 20, 1, 0,
                       (uint32_t)-8, 1, 15, 0xffffff9fu, 0xf0000002u, 0xfffff902u, 0xffffu};
    expect_out(body, in, 8, want, 31);
}

/* The int64 minimum as a negative literal (the direct emitter prints
 * int64 immediates in decimal): its negation wraps, not overflows. */
static void int64_min_literal(void **state) {
    (void)state;
    const char *body =
        "mov.b64 %rd3, -9223372036854775808;\nst.global.u64 [%rd1], %rd3;\n"
        "add.s64 %rd4, %rd3, -9223372036854775807;\nst.global.u64 [%rd1+8], %rd4;\n";
    uint32_t want[] = {0, 0x80000000u, 1, 0};
    expect_out(body, NULL, 0, want, 4);
}

static void float_semantics(void **state) {
    (void)state;
    float a = 1.0f + 0x1p-12f;
    _Alignas(16) uint32_t in[] = {fbits(a), fbits(-(1.0f + 0x1p-11f)), fbits(0x1p-126f), 0x7fc00000u, fbits(2.0f)};
    const char *body =
        "ld.global.v2.f32 {%f1, %f2}, [%rd2];\nld.global.v2.f32 {%f3, %f4}, [%rd2+8];\n"
        "fma.rn.f32 %f5, %f1, %f1, %f2;\nst.global.f32 [%rd1], %f5;\n"       /* 2^-24 */
        "mul.rn.f32 %f5, %f1, %f1;\nadd.rn.f32 %f5, %f5, %f2;\nst.global.f32 [%rd1+4], %f5;\n" /* 0 */
        "mul.rn.f32 %f5, %f3, 0f3F000000;\nst.global.f32 [%rd1+8], %f5;\n"   /* denormal 2^-127 */
        "setp.lt.f32 %p1, %f4, %f1;\nselp.u32 %r1, 1, 0, %p1;\nst.global.u32 [%rd1+12], %r1;\n"
        "setp.ltu.f32 %p1, %f4, %f1;\nselp.u32 %r1, 1, 0, %p1;\nst.global.u32 [%rd1+16], %r1;\n"
        "setp.nan.f32 %p1, %f4, %f1;\nselp.u32 %r1, 1, 0, %p1;\nst.global.u32 [%rd1+20], %r1;\n"
        "neg.f32 %f5, %f3;\nst.global.f32 [%rd1+24], %f5;\n"
        "ld.global.f32 %f6, [%rd2+16];\ndiv.rn.f32 %f5, 0f3F800000, %f6;\nst.global.f32 [%rd1+28], %f5;\n"
        "sqrt.rn.f32 %f5, %f6;\nst.global.f32 [%rd1+32], %f5;\n"
        "abs.f32 %f5, %f2;\nst.global.f32 [%rd1+36], %f5;\n";
    uint32_t want[] = {fbits(0x1p-24f), 0, 0x00400000u, 0, 1, 1, fbits(-0x1p-126f), fbits(0.5f),
                       fbits(1.41421353816986083984375f), fbits(1.0f + 0x1p-11f)};
    expect_out(body, in, 5, want, 10);
}

/* Predication, shared (static + dynamic) and local memory, cp.async. */
static void memory_semantics(void **state) {
    (void)state;
    _Alignas(16) uint32_t out[64] = {0}, in[64];
    for (int i = 0; i < 64; i++) in[i] = 100u + (uint32_t)i;
    char err[512];
    const char *body =
        ".shared .align 4 .b8 sa[256];\n"
        ".local .align 8 .b8 depot[16];\n"
        "mul.wide.u32 %rd3, %r31, 4;\nmov.u64 %rd4, sa;\nadd.s64 %rd5, %rd4, %rd3;\n"
        "st.shared.u32 [%rd5], %r31;\n"
        "mov.u64 %rd6, dyn;\nadd.s64 %rd7, %rd6, %rd3;\nadd.s64 %rd8, %rd2, %rd3;\n"
        "setp.eq.s32 %p1, %r31, 0;\n"
        "@%p1 cp.async.ca.shared.global [%rd6+256], [%rd2], 16, 8;\ncp.async.commit_group;\n"
        "cp.async.wait_group 0;\n"
        "cp.async.ca.shared.global [%rd7], [%rd8], 4;\ncp.async.wait_all;\n"
        "bar.sync 0;\n"
        "add.s32 %r1, %r31, 1;\nrem.u32 %r1, %r1, 64;\nmul.wide.u32 %rd9, %r1, 4;\n"
        "add.s64 %rd10, %rd4, %rd9;\nld.shared.u32 %r2, [%rd10];\n"
        "add.s64 %rd10, %rd6, %rd9;\nld.shared.u32 %r3, [%rd10];\n"
        "mov.u64 %rd11, depot;\nst.local.u32 [%rd11+4], %r3;\nld.local.u32 %r4, [%rd11+4];\n"
        "add.s32 %r5, %r2, %r4;\n"
        "add.s64 %rd12, %rd1, %rd3;\nst.global.u32 [%rd12], %r5;\n"
        "@!%p1 bra $L_end;\n"
        "ld.shared.v4.u32 {%r6, %r7, %r8, %r9}, [dyn+256];\n"
        "add.s32 %r6, %r6, %r7;\nadd.s32 %r6, %r6, %r8;\nadd.s32 %r6, %r6, %r9;\n"
        "st.global.u32 [%rd1], %r6;\n"
        "$L_end:\n"
        "@%p1 st.global.u32 [%rd1+4096], %r6;\n";  /* predicated off except thread 0: */
    /* thread 0 would store out of bounds: expect the error, then run without it */
    assert_int_equal(snippet(body, 64, out, in, 64, 512, false, err), -1);
    assert_non_null(strstr(err, "out-of-bounds"));
    char *b2 = strdup(body);
    *strstr(b2, "@%p1 st.global.u32 [%rd1+4096]") = 0;
    memset(out, 0, sizeof out);
    if (snippet(b2, 64, out, in, 64, 512, true, err) != 0) fail_msg("%s", err);
    for (uint32_t t = 1; t < 64; t++) assert_int_equal(out[t], (t + 1) % 64 + 100 + (t + 1) % 64);
    assert_int_equal(out[0], 100u + 101u); /* cp.async zero-filled the last 8 bytes */
    free(b2);
}

static void errors(void **state) {
    (void)state;
    expect_error("setp.eq.s32 %p1, %r31, 0;\n@%p1 ret;\nbar.sync 0;\n", 4, "exited without reaching");
    expect_error("setp.eq.s32 %p1, %r31, 0;\n@%p1 bra $L_a;\nbar.sync 0;\nbra.uni $L_b;\n"
                 "$L_a:\nbar.sync 0;\n$L_b:\n", 4, "divergent barriers");
    /* small absolute addresses: inside no buffer wherever the stack is */
    expect_error("mov.u64 %rd3, 64;\nst.global.u32 [%rd3], %r31;\n", 1, "out-of-bounds");
    expect_error("ld.global.u32 %r1, [%rd2+2];\n", 1, "misaligned");
    expect_error("mov.u64 %rd3, 64;\nld.global.u32 %r1, [%rd3+-4];\n", 1, "out-of-bounds");
    expect_error("ld.global.v2.u32 {%r1, %r2}, [16];\n", 1, "only for .local");
    expect_error(".extern .shared .b8 d2[];\n", 1, ".extern inside a function");
    expect_error("ld.shared.u32 %r1, [%rd2];\n", 1, "out-of-bounds");
    expect_error("mov.u32 %r1, 0;\ndiv.s32 %r2, %r31, %r1;\n", 1, "division by zero");
    expect_error("mov.u32 %r1, -1;\nmov.u32 %r2, 0x80000000;\ndiv.s32 %r2, %r2, %r1;\n", 1, "overflow");
    expect_error("vote.sync.all.pred %p1, %p2, -1;\n", 1, "line 16: unsupported instruction");
    expect_error("add.ftz.f32 %f1, %f2, %f3;\n", 1, "unsupported modifier '.ftz'");
    expect_error("ex2.approx.f32 %f1, %f2;\n", 1, "unsupported instruction");
    expect_error("div.f32 %f1, %f2, %f3;\n", 1, "rounding");
    expect_error("bar.sync 0, 32;\n", 1, "thread count");
    expect_error("add.s32 %r1, %r2\n", 1, "expected");
    expect_error("add.s32 %r1, %r2, %q9;\n", 1, "undeclared register");
    expect_error("$L_x:\nbra.uni $L_x;\n", 1, "step limit");
    expect_error("bra $L_nowhere;\n", 1, "undefined label");
    expect_error("mov.u32 %r1, %clock;\n", 1, "special register");
}

/* ----------------------------------------------- warp-collective ops */

/* ldmatrix and mma run once per warp with every lane's operands.  The
 * expected values come from the PTX ISA's fragment figures, written out
 * here independently of the interpreter's formulas. */
static const char *warp_head =
    ".version 7.8\n.target sm_90\n.address_size 64\n"
    ".visible .entry k(.param .u64 k_param_0, .param .u64 k_param_1)\n"
    ".maxntid 64, 1, 1\n{\n"
    ".reg .pred %p<8>;\n.reg .b32 %r<48>;\n.reg .f32 %f<16>;\n.reg .b64 %rd<32>;\n"
    ".shared .align 16 .b8 sm[512];\n"
    "ld.param.u64 %rd1, [k_param_0];\nld.param.u64 %rd2, [k_param_1];\n"
    "mov.u32 %r31, %tid.x;\n";

/* Runs body on `block` threads with out[256] and in[nin] (words). */
static int warp_run(const char *body, int64_t block, uint32_t *out, const uint32_t *in, size_t nin,
                    bool assemble, char *err) {
    char *text = malloc(strlen(warp_head) + strlen(body) + 16);
    if (!text) abort();
    sprintf(text, "%s%s\nret;\n}\n", warp_head, body);
    if (assemble) {
        tir_module m = {.kernel_name = "k", .arch = "sm_90", .ptx = text, .ptx_len = strlen(text)};
        ptxas_check(&m);
    }
    ptx_arg args[2] = {{true, out, 256 * 4, 0}, {true, (void *)in, nin * 4, 0}};
    int64_t g[3] = {1, 1, 1}, b[3] = {block, 1, 1};
    ptx_interp_opts o = {.max_steps_per_thread = 10000};
    ptx_interp_stats st;
    err[0] = 0;
    int rc = ptx_interp_run_ex(text, "k", g, b, args, 2, 0, &o, &st, err, 512);
    free(text);
    if (rc == 0 && st.warp_ops < 1) snprintf(err, 512, "no warp-collective ran");
    return rc == 0 && st.warp_ops < 1 ? -1 : rc;
}

/* The shared tile: 32 rows of 8 b16 elements, element j the half j of
 * in[] (little-endian words); thread t < 32 copies row t. */
static const char *ldm_fill =
    "setp.lt.u32 %p7, %r31, 32;\n"
    "mul.wide.u32 %rd3, %r31, 16;\nadd.s64 %rd4, %rd2, %rd3;\nmov.u64 %rd5, sm;\n"
    "add.s64 %rd6, %rd5, %rd3;\n"
    "@%p7 ld.global.v4.u32 {%r1, %r2, %r3, %r4}, [%rd4];\n"
    "@%p7 st.shared.v4.u32 [%rd6], {%r1, %r2, %r3, %r4};\nbar.sync 0;\n"
    /* the row of thread t: (5 t + 3 + t / 32) % 32, so rows are scattered */
    "mul.lo.s32 %r5, %r31, 5;\nadd.s32 %r5, %r5, 3;\nshr.u32 %r6, %r31, 5;\n"
    "add.s32 %r5, %r5, %r6;\nand.b32 %r5, %r5, 31;\n"
    "mul.wide.u32 %rd7, %r5, 16;\nadd.s64 %rd8, %rd5, %rd7;\n";

static int ldm_row_of(int t) { return (5 * t + 3 + t / 32) % 32; }

static uint16_t half_of_in(const uint32_t *in, int j) { return (uint16_t)(in[j / 2] >> (16 * (j % 2))); }

/* The body: fill, ldmatrix .x{num}[.trans] (extra: text before it), each
 * lane's registers to out[4 t + i]. */
static void ldm_body(char *b, size_t n, int num, bool trans, const char *extra, const char *addr) {
    char regs[64] = "", st[256] = "";
    for (int i = 0; i < num; i++) {
        size_t k = strlen(regs), q = strlen(st);
        snprintf(regs + k, sizeof regs - k, "%s%%r%d", i ? ", " : "", 10 + i);
        snprintf(st + q, sizeof st - q, "st.global.u32 [%%rd10+%d], %%r%d;\n", 4 * i, 10 + i);
    }
    snprintf(b, n, "%s%sldmatrix.sync.aligned.m8n8.x%d%s.shared.b16 {%s}, [%s];\n"
             "mul.wide.u32 %%rd9, %%r31, 16;\nadd.s64 %%rd10, %%rd1, %%rd9;\n%s",
             ldm_fill, extra, num, trans ? ".trans" : "", regs, addr, st);
}

static void ldm_input(uint32_t *in) {
    for (int w = 0; w < 128; w++) {
        uint32_t lo = (uint32_t)(w * 2 * 37 + 5) & 0xffff, hi = (uint32_t)((w * 2 + 1) * 37 + 5) & 0xffff;
        in[w] = lo | hi << 16;
    }
}

/* x1, x2, x4, with and without .trans, on one warp and on two. */
static void ldmatrix_forms(void **state) {
    (void)state;
    uint32_t in[128];
    ldm_input(in);
    static const int nums[] = {1, 2, 4};
    for (int k = 0; k < 3; k++)
        for (int trans = 0; trans < 2; trans++)
            for (int block = 32; block <= 64; block += 32) {
                int num = nums[k];
                char body[4096], err[512];
                _Alignas(16) uint32_t out[256];
                memset(out, 0xee, sizeof out);
                ldm_body(body, sizeof body, num, trans, "", "%rd8");
                if (warp_run(body, block, out, in, 128, true, err) != 0) fail_msg("%s\n%s", err, body);
                for (int t = 0; t < block; t++) {
                    int w0 = t / 32 * 32, l = t % 32;
                    for (int i = 0; i < num; i++) {
                        /* matrix i's row r is at the address of lane 8 i + r */
                        int r0 = l / 4, c0 = 2 * (l % 4);
                        uint32_t want = 0;
                        for (int h = 0; h < 2; h++) {
                            int row = trans ? c0 + h : r0, col = trans ? r0 : c0 + h;
                            int srow = ldm_row_of(w0 + 8 * i + row);
                            want |= (uint32_t)half_of_in(in, 8 * srow + col) << (16 * h);
                        }
                        if (out[4 * t + i] != want)
                            fail_msg("x%d%s block %d: thread %d register %d = 0x%08x, want 0x%08x", num,
                                     trans ? ".trans" : "", block, t, i, out[4 * t + i], want);
                    }
                    for (int i = num; i < 4; i++) assert_int_equal(out[4 * t + i], 0xeeeeeeeeu);
                }
            }
}

static void ldm_error(int num, const char *extra, const char *addr, int64_t block, const char *what) {
    uint32_t in[128];
    ldm_input(in);
    char body[4096], err[512];
    _Alignas(16) uint32_t out[256];
    ldm_body(body, sizeof body, num, false, extra, addr);
    if (warp_run(body, block, out, in, 128, false, err) == 0) fail_msg("no error for\n%s", body);
    if (!strstr(err, what) || !strstr(err, "line ")) fail_msg("error '%s' lacks '%s'", err, what);
}

static void ldmatrix_errors(void **state) {
    (void)state;
    /* a lane that branches past the instruction and exits, or waits at a barrier */
    ldm_error(4, "setp.eq.u32 %p1, %r31, 3;\n@%p1 ret;\n", "%rd8", 32, "exited without reaching");
    ldm_error(4, "setp.eq.u32 %p1, %r31, 3;\n@%p1 bar.sync 0;\n", "%rd8", 32, "divergent warp");
    ldm_error(4, "setp.eq.u32 %p1, %r31, 40;\n@%p1 ret;\n", "%rd8", 64, "exited without reaching");
    /* misaligned rows, a row outside shared memory (a global address; the
     * last row past the array's end) */
    ldm_error(4, "add.s64 %rd8, %rd8, 8;\n", "%rd8", 32, "not 16-byte aligned");
    ldm_error(1, "", "%rd2", 32, "not in shared memory");
    ldm_error(2, "add.s64 %rd8, %rd8, 512;\n", "%rd8", 32, "not in shared memory");
    /* .x4 on a partial warp; a guard that differs across the warp */
    ldm_error(4, "", "%rd8", 16, "needs the row addresses of lanes 0-31");
    ldm_error(1, "setp.lt.u32 %p2, %r31, 16;\n@%p2 ", "%rd8", 32, "differs across the warp");
    /* all lanes predicated off: skipped, the registers keep their values */
    uint32_t in[128];
    ldm_input(in);
    char body[4096], err[512];
    _Alignas(16) uint32_t out[256];
    ldm_body(body, sizeof body, 1, false, "mov.u32 %r10, 7;\nsetp.gt.u32 %p2, %r31, 99;\n@%p2 ", "%rd8");
    ptx_arg args[2] = {{true, out, sizeof out, 0}, {true, in, sizeof in, 0}};
    char *text = malloc(strlen(warp_head) + strlen(body) + 16);
    if (!text) abort();
    sprintf(text, "%s%s\nret;\n}\n", warp_head, body);
    int64_t g[3] = {1, 1, 1}, b[3] = {32, 1, 1};
    ptx_interp_stats st;
    if (ptx_interp_run_ex(text, "k", g, b, args, 2, 0, NULL, &st, err, sizeof err)) fail_msg("%s", err);
    assert_int_equal(st.warp_ops, 0);
    for (int t = 0; t < 32; t++) assert_int_equal(out[4 * t], 7);
    free(text);
    expect_error("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r1, %r2}, [%rd1];\n", 32,
                 "want {} of 4 registers");
    expect_error("ldmatrix.sync.aligned.m8n8.x2.shared.b32 {%r1, %r2}, [%rd1];\n", 32,
                 "only ldmatrix");
    expect_error("ldmatrix.sync.aligned.m8n8.x2.global.b16 {%r1, %r2}, [%rd1];\n", 32, "reads .shared");
}

/* shfl.sync in its four modes, with the clamp and a segment mask, and
 * the out-of-range predicate; a member mask that is not the warp, a lane
 * the warp does not have. */
static void shfl_forms(void **state) {
    (void)state;
    uint32_t in[32];
    for (int l = 0; l < 32; l++) in[l] = 1000u + 7u * (uint32_t)l;
    const char *body =
        "mul.wide.u32 %rd3, %r31, 4;\nadd.s64 %rd4, %rd2, %rd3;\nld.global.u32 %r1, [%rd4];\n"
        "shfl.sync.bfly.b32 %r10, %r1, 5, 31, -1;\n"
        "shfl.sync.down.b32 %r11|%p1, %r1, 3, 31, -1;\nselp.u32 %r12, 1, 0, %p1;\n"
        "shfl.sync.up.b32 %r13|%p2, %r1, 2, 0, -1;\nselp.u32 %r14, 1, 0, %p2;\n"
        "shfl.sync.idx.b32 %r15, %r1, 3, 0x181f, -1;\n"
        "mul.wide.u32 %rd5, %r31, 32;\nadd.s64 %rd6, %rd1, %rd5;\n"
        "st.global.v4.u32 [%rd6], {%r10, %r11, %r12, %r13};\nst.global.v2.u32 [%rd6+16], {%r14, %r15};\n";
    _Alignas(16) uint32_t out[256];
    char err[512];
    if (warp_run(body, 32, out, in, 32, true, err) != 0) fail_msg("%s\n%s", err, body);
    for (int l = 0; l < 32; l++) {
        /* the PTX ISA's source lanes: bfly l ^ 5; down l + 3 up to 31;
         * up l - 2 from 0 on (c = 0); idx the segment of 8's lane 3 */
        int dn = l + 3 <= 31 ? l + 3 : l, up = l - 2 >= 0 ? l - 2 : l;
        uint32_t want[6] = {in[l ^ 5], in[dn], l + 3 <= 31, in[up], l - 2 >= 0, in[(l & ~7) | 3]};
        for (int i = 0; i < 6; i++)
            if (out[8 * l + i] != want[i])
                fail_msg("lane %d value %d: %u, want %u", l, i, out[8 * l + i], want[i]);
    }
    assert_int_equal(warp_run("shfl.sync.bfly.b32 %r10, %r31, 1, 31, 0xffff;\n", 32, out, in, 32,
                              false, err), -1);
    assert_non_null(strstr(err, "member mask"));
    assert_int_equal(warp_run("shfl.sync.bfly.b32 %r10, %r31, 16, 31, 0xffff;\n", 16, out, in, 32,
                              false, err), -1);
    assert_non_null(strstr(err, "does not have"));
    expect_error("shfl.sync.bfly.aligned.b32 %r10, %r31, 1, 31, -1;\n", 32, "only shfl.sync");
}

/* f16 bits of v, a value exact in f16 (normal or zero). */
static uint16_t f16_bits(float v) {
    if (v == 0) return 0;
    uint16_t s = v < 0 ? 0x8000 : 0;
    int e;
    float m = frexpf(fabsf(v), &e); /* v = m 2^e, m in [0.5, 1) */
    return (uint16_t)(s | (uint32_t)(e - 1 + 15) << 10 | (uint32_t)((m * 2 - 1) * 1024));
}

/* The PTX ISA's fragments, element by element: m16n8k16 A (a0..a7), B
 * (b0..b3), C/D (c0..c3); m16n8k8 .tf32 A (a0..a3), B (b0, b1).  g: lane
 * / 4, t: lane % 4. */
static void figure_a16(int g, int t, int v, int *r, int *c) {
    static const int dr[8] = {0, 0, 8, 8, 0, 0, 8, 8}, dc[8] = {0, 1, 0, 1, 8, 9, 8, 9};
    *r = g + dr[v], *c = 2 * t + dc[v];
}
static void figure_b16(int g, int t, int v, int *r, int *c) {
    static const int dr[4] = {0, 1, 8, 9};
    *r = 2 * t + dr[v], *c = g;
}
static void figure_a8(int g, int t, int v, int *r, int *c) {
    static const int dr[4] = {0, 8, 0, 8}, dc[4] = {0, 0, 4, 4};
    *r = g + dr[v], *c = t + dc[v];
}
static void figure_b8(int g, int t, int v, int *r, int *c) { *r = t + 4 * v, *c = g; }

/* D = A B + C over a warp: ab 0 bf16, 1 f16, 2 tf32; frac: values with
 * fractions (then the sum is checked in the documented order: d = c,
 * then fmaf over k in order). */
static void mma_case(int ab, bool frac) {
    int K = ab == 2 ? 8 : 16;
    float A[16][16], B[16][8], C[16][8];
    uint32_t seed = 12345u + (uint32_t)ab * 7u + frac;
    for (int i = 0; i < 16 * 16 + 16 * 8 * 2; i++) {
        seed = seed * 1103515245u + 12345u;
        int v = (int)(seed >> 16) % 15 - 7;
        float x = frac ? (float)v / 8.0f + (float)((seed >> 8) % 3) * 0.001953125f : (float)v;
        /* A and B exact in their type (bf16: 8 significant bits, tf32 11) */
        if (ab != 1 && i < 384) x = bits_float(fbits(x) & (ab == 0 ? 0xffff0000u : 0xffffe000u));
        if (i < 256) A[i / 16][i % 16] = x;
        else if (i < 384) B[(i - 256) / 8][(i - 256) % 8] = x;
        else C[(i - 384) / 8][(i - 384) % 8] = frac ? x * 3.1f : x;
    }
    _Alignas(16) uint32_t in[384] = {0}; /* per lane: a0-3, b0-1, (pad), c0-3 */
    for (int l = 0; l < 32; l++) {
        int g = l / 4, t = l % 4, r, c;
        uint32_t *w = in + 12 * l;
        for (int v = 0; v < (K == 16 ? 8 : 4); v++) {
            K == 16 ? figure_a16(g, t, v, &r, &c) : figure_a8(g, t, v, &r, &c);
            uint32_t bits = ab == 0 ? fbits(A[r][c]) >> 16 : ab == 1 ? f16_bits(A[r][c]) : fbits(A[r][c]);
            w[K == 16 ? v / 2 : v] |= K == 16 ? bits << (16 * (v % 2)) : bits;
        }
        for (int v = 0; v < (K == 16 ? 4 : 2); v++) {
            K == 16 ? figure_b16(g, t, v, &r, &c) : figure_b8(g, t, v, &r, &c);
            uint32_t bits = ab == 0 ? fbits(B[r][c]) >> 16 : ab == 1 ? f16_bits(B[r][c]) : fbits(B[r][c]);
            w[4 + (K == 16 ? v / 2 : v)] |= K == 16 ? bits << (16 * (v % 2)) : bits;
        }
        for (int v = 0; v < 4; v++) w[8 + v] = fbits(C[g + 8 * (v / 2)][2 * t + v % 2]);
    }
    static const char *const ty[3] = {"m16n8k16.row.col.f32.bf16.bf16.f32",
                                      "m16n8k16.row.col.f32.f16.f16.f32",
                                      "m16n8k8.row.col.f32.tf32.tf32.f32"};
    char body[2048], err[512];
    snprintf(body, sizeof body,
             "mul.wide.u32 %%rd3, %%r31, 48;\nadd.s64 %%rd4, %%rd2, %%rd3;\n"
             "ld.global.v4.u32 {%%r1, %%r2, %%r3, %%r4}, [%%rd4];\n"
             "ld.global.v2.u32 {%%r5, %%r6}, [%%rd4+16];\n"
             "ld.global.v4.f32 {%%f1, %%f2, %%f3, %%f4}, [%%rd4+32];\n"
             "mma.sync.aligned.%s {%%f5, %%f6, %%f7, %%f8}, {%%r1, %%r2, %%r3, %%r4}, {%%r5, %%r6}, "
             "{%%f1, %%f2, %%f3, %%f4};\n"
             "mul.wide.u32 %%rd5, %%r31, 16;\nadd.s64 %%rd6, %%rd1, %%rd5;\n"
             "st.global.v4.f32 [%%rd6], {%%f5, %%f6, %%f7, %%f8};\n", ty[ab]);
    _Alignas(16) uint32_t out[256];
    memset(out, 0, sizeof out);
    if (warp_run(body, 32, out, in, 384, true, err) != 0) fail_msg("%s\n%s", err, body);
    for (int l = 0; l < 32; l++)
        for (int v = 0; v < 4; v++) {
            int i = l / 4 + 8 * (v / 2), j = 2 * (l % 4) + v % 2;
            float d = C[i][j];
            for (int q = 0; q < K; q++) d = fmaf(A[i][q], B[q][j], d);
            if (out[4 * l + v] != fbits(d))
                fail_msg("%s%s: lane %d d%d = %g, want %g", ty[ab], frac ? " (fractions)" : "", l, v,
                         (double)bits_float(out[4 * l + v]), (double)d);
        }
}

static void mma_forms(void **state) {
    (void)state;
    for (int ab = 0; ab < 3; ab++)
        for (int frac = 0; frac < 2; frac++) mma_case(ab, frac);
    char err[512];
    _Alignas(16) uint32_t out[256];
    uint32_t in[320] = {1};
    const char *half =
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%f5, %f6, %f7, %f8}, "
        "{%r1, %r2, %r3, %r4}, {%r5, %r6}, {%f1, %f2, %f3, %f4};\n";
    assert_int_equal(warp_run(half, 16, out, in, 320, false, err), -1);
    assert_non_null(strstr(err, "full warp"));
    const char *tf =
        "ld.global.u32 %r1, [%rd2];\n"
        "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%f5, %f6, %f7, %f8}, "
        "{%r1, %r2, %r3, %r4}, {%r5, %r6}, {%f1, %f2, %f3, %f4};\n";
    assert_int_equal(warp_run(tf, 32, out, in, 320, false, err), -1);
    assert_non_null(strstr(err, "low 13 bits"));
    expect_error("mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 {%r1, %r2}, {%r1, %r2, %r3, %r4}, "
                 "{%r5, %r6}, {%r7, %r8};\n", 32, "only mma");
    expect_error("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%f5, %f6, %f7, %f8}, "
                 "{%r1, %r2, %r3, %r4}, {%r5, %r6}, {%f1, %f2};\n", 32, "want {} of 4");
}

/* ----------------------------------------- the direct emitter's edges */

/* Lowered kernels at the edges of the direct emitter's subset (src/
 * codegen/cg_direct.c), with the int32/int64 scalar arguments they take
 * in order: each must be taken by the direct emitter, ptxas (where
 * installed) must take its PTX, and run in the PTX interpreter it must
 * leave every buffer as the SIMT simulator does, bit for bit, on two sets
 * of inputs (every buffer starts with them: int32, int64 or float32
 * elements, with gaps between the buffers so that an access past one is
 * in none). */
typedef struct dkernel {
    const char *text;
    int64_t scalars[4];
} dkernel;

static const dkernel direct_kernels[] = {
    /* a cp_async from a uint8 buffer (outside the emitter's load/store
     * dtypes): its addresses were scaled by 0 bytes an element, every
     * copy read A[0..16) (the copy fuzzer's PTX run, seed 23 case 26) */
    {"@T.prim_func\n"
     "def k(A: T.Buffer((256,), \"uint8\"), Y: T.Buffer((64,), \"int32\")):\n"
     "    for bx in T.thread_binding(0, 1, thread=\"blockIdx.x\"):\n"
     "        S = T.allocate((64,), \"int32\", scope=\"shared\")\n"
     "        for tx in T.thread_binding(0, 8, thread=\"threadIdx.x\"):\n"
     "            for j in T.serial(2):\n"
     "                T.cp_async(T.address_of(S[tx * 8 + j * 4]), T.address_of(A[tx * 32 + j * 16]), 16)\n"
     "            T.cp_async_commit()\n"
     "            T.cp_async_wait(0)\n"
     "        T.syncthreads()\n"
     "        for tx in T.thread_binding(0, 8, thread=\"threadIdx.x\"):\n"
     "            for i in T.serial(8):\n"
     "                Y[tx * 8 + i] = S[(tx * 8 + i + 3) % 64]\n", {0}},
    /* an overlapping copy within one local array: the lanes were moved
       one by one, so lane 1 read lane 0's new value */
    {"@T.prim_func\n"
     "def k(X: T.Buffer((64,), \"int32\"), Y: T.Buffer((64,), \"int32\")):\n"
     "    for t in T.thread_binding(0, 8, thread=\"threadIdx.x\"):\n"
     "        L = T.allocate((8,), \"int32\", scope=\"local\")\n"
     "        L[T.Ramp(0, 1, 4)] = X[T.Ramp(t * 8, 1, 4)]\n"
     "        L[T.Ramp(4, 1, 4)] = X[T.Ramp(t * 8 + 4, 1, 4)]\n"
     "        L[T.Ramp(1, 1, 4)] = L[T.Ramp(0, 1, 4)]\n"
     "        L[T.Ramp(4, 1, 4)] = L[T.Ramp(3, 1, 4)]\n"
     "        Y[T.Ramp(t * 8, 1, 4)] = L[T.Ramp(1, 1, 4)]\n"
     "        Y[T.Ramp(t * 8 + 4, 1, 4)] = L[T.Ramp(4, 1, 4)]\n",
     {0}},
    /* an index comparison moved its constants to one side, whose new sum
       wrapped for t >= 15 where neither of the program's did */
    {"@T.prim_func\n"
     "def k(X: T.Buffer((64,), \"int32\"), Y: T.Buffer((64,), \"int32\")):\n"
     "    for t in T.thread_binding(0, 64, thread=\"threadIdx.x\"):\n"
     "        Y[t] = T.Select(t * 33000000 - 1500000000 < t * 10000000 + 500000000, 1, 0) + "
     "T.Select(t * 10000000 + 500000000 > t * 33000000 - 1500000000, 2, 0)\n",
     {0}},
    /* a guarded store made a predicated store whose index, read from X,
       was loaded unguarded: past X's end in block 1 */
    {"@T.prim_func\n"
     "def k(X: T.Buffer((64,), \"int32\"), Y: T.Buffer((64,), \"int32\")):\n"
     "    for b in T.thread_binding(0, 2, thread=\"blockIdx.x\"):\n"
     "        for t in T.thread_binding(0, 64, thread=\"threadIdx.x\"):\n"
     "            if b * 64 + t < 64:\n"
     "                Y[T.floormod(X[b * 64 + t], 64)] = 7\n",
     {0}},
    /* a serial loop's end, L[0], was the local register itself, so the
       loop saw the body's writes to L[0] (min and extent are evaluated
       once); the unrolled loop's copies took u from L[1] as the body
       had changed it */
    {"@T.prim_func\n"
     "def k(X: T.Buffer((64,), \"int32\"), Y: T.Buffer((64,), \"int32\")):\n"
     "    for t in T.thread_binding(0, 8, thread=\"threadIdx.x\"):\n"
     "        L = T.allocate((3,), \"int32\", scope=\"local\")\n"
     "        L[0] = 3\n"
     "        L[1] = t\n"
     "        L[2] = 0\n"
     "        for i in T.serial(0, L[0]):\n"
     "            L[0] = L[0] + 1\n"
     "            L[2] = L[2] + 1\n"
     "            if L[2] > 20:\n"
     "                L[0] = 0\n"
     "        Y[t * 8] = L[2]\n"
     "        for u in T.unroll(L[1], L[1] + 2):\n"
     "            L[1] = L[1] + 10\n"
     "            Y[t * 8 + 1 + u - t] = L[1]\n",
     {0}},
    /* a zero-filling copy became a predicated load whose index, read
       from I, was loaded unguarded: past I's end in block 1 */
    {"@T.prim_func\n"
     "def k(X: T.Buffer((64,), \"float32\"), I: T.Buffer((64,), \"int32\"), Y: T.Buffer((128,), \"float32\")):\n"
     "    for b in T.thread_binding(0, 2, thread=\"blockIdx.x\"):\n"
     "        for t in T.thread_binding(0, 64, thread=\"threadIdx.x\"):\n"
     "            if b * 64 + t < 64:\n"
     "                Y[b * 64 + t] = X[T.floormod(I[b * 64 + t], 64)]\n"
     "            else:\n"
     "                Y[b * 64 + t] = T.float32(0)\n",
     {0}},
    /* an index split into its constant (the immediate offset) and the
       rest, whose sum wraps though the program's do not: 20 at t = 1,
       the rest t * 2147483658; and the same with the rest of an
       induction pointer (loop_strength_reduction), t * 2400000000 in a
       loop from -1953125 */
    {"@T.prim_func\n"
     "def k(X: T.Buffer((64,), \"int32\"), Y: T.Buffer((64,), \"int32\"), m: T.int32):\n"
     "    T.func_attr({\"loop_strength_reduction\": 1})\n"
     "    for t in T.thread_binding(0, 2, thread=\"threadIdx.x\"):\n"
     "        if t == 1:\n"
     "            Y[t * 1073741829 + -2147483648 + t * 1073741829 + 10] = 5\n"
     "            for k in T.serial(m, m + 1):\n"
     "                X[t * 1200000000 + k * 1024 + t * 1200000000 - 399999980] = 6\n",
     {-1953125}},
    /* a shared buffer in a branch that folds (t < 100) or a loop without
       iterations was never placed, and the layout assertion aborted */
    {"@T.prim_func\n"
     "def k(X: T.Buffer((64,), \"float32\"), Y: T.Buffer((64,), \"float32\")):\n"
     "    for t in T.thread_binding(0, 16, thread=\"threadIdx.x\"):\n"
     "        for i in T.serial(0, 0):\n"
     "            S0 = T.allocate((64,), \"float32\", scope=\"shared\")\n"
     "            S0[t] = X[t]\n"
     "            Y[t] = S0[t]\n"
     "        if t < 100:\n"
     "            S = T.allocate((64,), \"float32\", scope=\"shared\")\n"
     "            S[t] = X[t]\n"
     "            Y[t] = S[t] + 1.0\n"
     "        else:\n"
     "            S2 = T.allocate((64,), \"float32\", scope=\"shared\")\n"
     "            S2[t] = X[t]\n"
     "            Y[t] = S2[t]\n",
     {0}},
    /* two shared buffers of one name: ptxas rejected the second
       definition of S_shared */
    {"@T.prim_func\n"
     "def k(X: T.Buffer((64,), \"int32\"), Y: T.Buffer((64,), \"int32\")):\n"
     "    for t in T.thread_binding(0, 16, thread=\"threadIdx.x\"):\n"
     "        if X[t] > 0:\n"
     "            S = T.allocate((64,), \"int32\", scope=\"shared\")\n"
     "            S[t] = X[t]\n"
     "            Y[t] = S[t]\n"
     "        else:\n"
     "            S = T.allocate((64,), \"int32\", scope=\"shared\")\n"
     "            S[t] = X[t] + 1\n"
     "            Y[t] = S[t]\n",
     {0}},
    /* 5 < n + 5 is emitted as n + 5 > 5, but its predicate was kept under
       the key of n + 5 < 5, which then reused it */
    {"@T.prim_func\n"
     "def k(X: T.Buffer((64,), \"int32\"), Y: T.Buffer((64,), \"int32\"), n: T.int32):\n"
     "    for t in T.thread_binding(0, 64, thread=\"threadIdx.x\"):\n"
     "        Y[t] = T.Select(5 < n + 5, 1, 0) + T.Select(n + 5 < 5, 2, 0) + "
     "T.Select(7 <= n + 5, 4, 0) + T.Select(n + 5 <= 7, 8, 0)\n",
     {3}},
    /* an induction pointer without an invariant part: the constants'
       sum, 2147483668, wrapped to -2147483628 and went into the offset
       while the loop term kept k * 1024 = -2^31 exact */
    {"@T.prim_func\n"
     "def k(X: T.Buffer((64,), \"int32\"), Y: T.Buffer((64,), \"int32\"), m: T.int32):\n"
     "    T.func_attr({\"loop_strength_reduction\": 1})\n"
     "    for t in T.thread_binding(0, 2, thread=\"threadIdx.x\"):\n"
     "        for k in T.serial(m, m + 1):\n"
     "            Y[2147483647 + k * 1024 + 21] = 5\n",
     {-2097152}},
    /* index comparisons whose constant moves to the nearest member of
       the index's class mod 8 (class_bound): every operator, constants
       below, above and inside the class, a negative one */
    {"@T.prim_func\n"
     "def k(X: T.Buffer((64,), \"int32\"), Y: T.Buffer((64,), \"int32\")):\n"
     "    for t in T.thread_binding(0, 16, thread=\"threadIdx.x\"):\n"
     "        for j in T.unroll(0, 4):\n"
     "            Y[t * 4 + j] = T.Select(t * 8 + 3 + j < 61, 1, 0) + T.Select(t * 8 + j <= 50, 2, 0) + "
     "T.Select(t * 8 + 5 + j > 44, 4, 0) + T.Select(t * 8 + j >= 27, 8, 0) + "
     "T.Select(t * 8 - 3 + j < -2, 16, 0) + T.Select(t * 8 + j >= 40, 32, 0) + "
     "T.Select(t * 8 + 6 + j <= 70, 64, 0) + T.Select(t * 8 + 1 + j > 88, 128, 0)\n",
     {0}},
    /* int64 constants whose sum overflows (in a branch that never runs):
       signed overflow in the emitter itself (UBSan) */
    {"@T.prim_func\n"
     "def k(X: T.Buffer((64,), \"int64\"), Y: T.Buffer((64,), \"int64\")):\n"
     "    for t in T.thread_binding(0, 64, thread=\"threadIdx.x\"):\n"
     "        if X[t] == T.int64(12345678):\n"
     "            Y[T.Cast(\"int64\", t) + T.int64(-9223372036854775807) + "
     "T.int64(-9223372036854775807)] = X[t]\n",
     {0}},
};

/* Element i of input set v of a buffer of dtype t. */
static void direct_fill(void *p, tir_dtype t, int64_t n, int v) {
    for (int64_t i = 0; i < n; i++) {
        int64_t x = v ? (int64_t)((uint64_t)i * 0x9E3779B97F4A7C15ull) : i * 3 - 20;
        if (t.code == TIR_TYPE_FLOAT)
            ((float *)p)[i] = v ? (float)(x % 1000) / 8 : (float)x;
        else if (t.bits == 32)
            ((int32_t *)p)[i] = (int32_t)x;
        else if (t.bits == 8)
            ((uint8_t *)p)[i] = (uint8_t)x;
        else
            ((int64_t *)p)[i] = x;
    }
}

/* The rolled loops (back edges) in the direct emitter's PTX. */
static int back_edges(const char *ptx) {
    int n = 0;
    for (const char *p = ptx; (p = strstr(p, "bra \t$L__D")) != NULL; p++) {
        int l = atoi(p + strlen("bra \t$L__D"));
        char def[32];
        snprintf(def, sizeof def, "$L__D%d:", l);
        const char *at = strstr(ptx, def);
        n += at && at < p; /* its label before it: a loop */
    }
    return n;
}

/* Kernel text dk compiled by the direct emitter alone (its loops all
 * rolled, or unrolled as LLVM would) and run in the PTX interpreter on two
 * input sets against the SIMT simulator; loops >= 0: the rolled loops its
 * PTX must have (unrolled). */
static void direct_kernel(const dkernel *dk, size_t c, bool rolled, int loops) {
    enum { MAXP = 6 };
    for (int v = 0; v < 2; v++) {
        tir_ctx *ctx = tir_ctx_create();
        const tir_prim_func *k;
        OK(ctx, tir_parse_func(ctx, dk->text, strlen(dk->text), &k));
        assert_true(k->nparams <= MAXP);
        /* per buffer: the simulator's copy and the PTX's, gaps between */
        void *want[MAXP] = {NULL}, *got[MAXP] = {NULL};
        size_t bytes[MAXP] = {0};
        tir_arg sa[MAXP], da[MAXP];
        for (int i = 0, ns = 0; i < k->nparams; i++) {
            const tir_buffer *b = k->buffer_map[i];
            if (!b) {
                sa[i] = da[i] = (tir_arg){NULL, dk->scalars[ns++]};
                continue;
            }
            /* the buffers' own sizes: an access past them fails */
            bytes[i] = (size_t)tir_buffer_const_size(b) * (size_t)tir_dtype_bytes(b->dtype);
            want[i] = aligned_alloc(256, bytes[i] + 256), got[i] = aligned_alloc(256, bytes[i] + 256);
            direct_fill(want[i], b->dtype, tir_buffer_const_size(b), v);
            memcpy(got[i], want[i], bytes[i]);
            sa[i] = (tir_arg){want[i], 0}, da[i] = (tir_arg){got[i], 0};
        }
        OK(ctx, tir_sim_run(ctx, k, k->nparams, sa, NULL, NULL));
        dc_tally t = {.rolled = rolled};
        const tir_module *m;
        const char *err = NULL;
        if (dc_compile(ctx, &k, 1, true, &m, &t, &err) != 1)
            fail_msg("kernel %zu: not taken by the direct emitter: %s", c, err ? err : t.reasons[0].text);
        if (v == 0) ptxas_check(m);
        if (!rolled && loops >= 0 && back_edges(m->ptx) != loops)
            fail_msg("kernel %zu: %d rolled loops, want %d\n%s", c, back_edges(m->ptx), loops, m->ptx);
        char e[512];
        if (dc_run(ctx, m, da, bytes, e, sizeof e)) fail_msg("kernel %zu: %s\n%s", c, e, m->ptx);
        for (int i = 0; i < k->nparams; i++)
            for (size_t j = 0; j < bytes[i]; j += 4)
                if (memcmp((char *)got[i] + j, (char *)want[i] + j, 4))
                    fail_msg("kernel %zu inputs %d%s: %s at byte %zu: 0x%08x, the simulator 0x%08x\n%s", c, v,
                             rolled ? " (rolled)" : "", k->buffer_map[i]->name, j,
                             *(uint32_t *)((char *)got[i] + j), *(uint32_t *)((char *)want[i] + j), m->ptx);
        for (int i = 0; i < k->nparams; i++) free(want[i]), free(got[i]);
        tir_ctx_destroy(ctx);
    }
}

static void direct_edges(void **state) {
    (void)state;
    for (size_t c = 0; c < sizeof direct_kernels / sizeof *direct_kernels; c++) {
        direct_kernel(&direct_kernels[c], c, true, -1);
        direct_kernel(&direct_kernels[c], c, false, -1);
    }
}

/* Serial loops unrolled as LLVM's O3 would (cg_direct.c, partial_count):
 * each kernel with the rolled loops its PTX keeps.  A body of ~7 PTX
 * instructions (a load, an fma, a store and their addresses) gets 4
 * copies an iteration, so 37 iterations leave a remainder of 1. */
static const struct {
    dkernel k;
    int loops;
    bool local; /* a local array indexed by the loops: never all rolled */
} unroll_kernels[] = {
    /* full: 8 x 7 instructions, its guard folded in each copy */
    {{"@T.prim_func\n"
      "def k(X: T.Buffer((512,), \"float32\"), Y: T.Buffer((512,), \"float32\")):\n"
      "    for t in T.thread_binding(0, 16, thread=\"threadIdx.x\"):\n"
      "        for i in T.serial(0, 8):\n"
      "            if i < 5:\n"
      "                Y[t * 32 + i] = X[t * 32 + i] * 2.0 + 1.0\n",
      {0}},
     0,
     false},
    /* partial, 4 copies, and one unrolled after the loop */
    {{"@T.prim_func\n"
      "def k(X: T.Buffer((1024,), \"float32\"), Y: T.Buffer((1024,), \"float32\")):\n"
      "    for t in T.thread_binding(0, 16, thread=\"threadIdx.x\"):\n"
      "        for i in T.serial(0, 37):\n"
      "            Y[t * 64 + i] = X[t * 64 + i] * 2.0 + Y[t * 64 + i]\n",
      {0}},
     1,
     false},
    /* partial from a non-zero min, a variable one (t - 3) and a negative one */
    {{"@T.prim_func\n"
      "def k(X: T.Buffer((1024,), \"float32\"), Y: T.Buffer((1024,), \"float32\")):\n"
      "    for t in T.thread_binding(0, 16, thread=\"threadIdx.x\"):\n"
      "        for i in T.serial(3, 3 + 37):\n"
      "            Y[t * 64 + i] = X[t * 64 + i] * 2.0 + Y[t * 64 + i]\n"
      "        for j in T.serial(t - 3, t - 3 + 38):\n"
      "            X[t * 64 + j + 3] = Y[t * 64 + j + 3] * 3.0 + X[t * 64 + j + 3]\n"
      "        for u in T.serial(-5, -5 + 39):\n"
      "            Y[t * 64 + u + 5] = X[t * 64 + u + 5] * 0.5 + Y[t * 64 + u + 5]\n",
      {0}},
     3,
     false},
    /* runtime unrolling (the trip count n a parameter): 4 copies, then a
       rolled remainder loop; at n = 0, 1, 4, 13 and -3 (no iteration),
       from a variable min m */
    {{"@T.prim_func\n"
      "def k(X: T.Buffer((1024,), \"float32\"), Y: T.Buffer((1024,), \"float32\"), n: T.int32):\n"
      "    for t in T.thread_binding(0, 16, thread=\"threadIdx.x\"):\n"
      "        for i in T.serial(0, n):\n"
      "            Y[t * 64 + i] = X[t * 64 + i] * 2.0 + Y[t * 64 + i]\n",
      {13}},
     2,
     false},
    {{"@T.prim_func\n"
      "def k(X: T.Buffer((1024,), \"float32\"), Y: T.Buffer((1024,), \"float32\"), n: T.int32):\n"
      "    for t in T.thread_binding(0, 16, thread=\"threadIdx.x\"):\n"
      "        for i in T.serial(0, n):\n"
      "            Y[t * 64 + i] = X[t * 64 + i] * 2.0 + Y[t * 64 + i]\n",
      {0}},
     2,
     false},
    {{"@T.prim_func\n"
      "def k(X: T.Buffer((1024,), \"float32\"), Y: T.Buffer((1024,), \"float32\"), n: T.int32):\n"
      "    for t in T.thread_binding(0, 16, thread=\"threadIdx.x\"):\n"
      "        for i in T.serial(0, n):\n"
      "            Y[t * 64 + i] = X[t * 64 + i] * 2.0 + Y[t * 64 + i]\n",
      {-3}},
     2,
     false},
    {{"@T.prim_func\n"
      "def k(X: T.Buffer((1024,), \"float32\"), Y: T.Buffer((1024,), \"float32\"), n: T.int32, "
      "m: T.int32):\n"
      "    for t in T.thread_binding(0, 16, thread=\"threadIdx.x\"):\n"
      "        for i in T.serial(m + t, m + t + n):\n"
      "            Y[t * 64 + i - m - t] = X[t * 64 + i - m - t] * 2.0 + Y[t * 64 + i - m - t]\n"
      "        for j in T.serial(m, m + n + 3):\n"
      "            X[t * 64 + j - m] = Y[t * 64 + j - m] + 1.0\n",
      {1, -7}},
     4,
     false},
    {{"@T.prim_func\n"
      "def k(X: T.Buffer((1024,), \"float32\"), Y: T.Buffer((1024,), \"float32\"), n: T.int32):\n"
      "    for t in T.thread_binding(0, 16, thread=\"threadIdx.x\"):\n"
      "        for i in T.serial(0, n):\n"
      "            Y[t * 64 + i] = X[t * 64 + i] * 2.0 + Y[t * 64 + i]\n",
      {4}},
     2,
     false},
    /* zero trips: no code */
    {{"@T.prim_func\n"
      "def k(X: T.Buffer((64,), \"float32\"), Y: T.Buffer((64,), \"float32\")):\n"
      "    for t in T.thread_binding(0, 16, thread=\"threadIdx.x\"):\n"
      "        for i in T.serial(5, 5):\n"
      "            Y[t] = X[t]\n"
      "        Y[t + 16] = X[t] + 1.0\n",
      {0}},
     0,
     false},
    /* nested: the outer loop (3 x the inner's ~50 instructions)
       unrolled, each inner one partially (with its remainder unrolled) */
    {{"@T.prim_func\n"
      "def k(X: T.Buffer((4096,), \"float32\"), Y: T.Buffer((4096,), \"float32\")):\n"
      "    for t in T.thread_binding(0, 16, thread=\"threadIdx.x\"):\n"
      "        for i in T.serial(0, 3):\n"
      "            for j in T.serial(0, 37):\n"
      "                Y[t * 256 + i * 64 + j] = X[t * 256 + i * 64 + j] * 2.0 + Y[t * 256 + i * 64 + j]\n",
      {0}},
     3,
     false},
    /* a local array indexed by both loops of a nest, which must unroll
       for it to live in registers */
    {{"@T.prim_func\n"
      "def k(X: T.Buffer((1024,), \"float32\"), Y: T.Buffer((1024,), \"float32\")):\n"
      "    for t in T.thread_binding(0, 16, thread=\"threadIdx.x\"):\n"
      "        L = T.allocate((32,), \"float32\", scope=\"local\")\n"
      "        for i in T.serial(0, 8):\n"
      "            for j in T.serial(0, 4):\n"
      "                L[i * 4 + j] = X[t * 64 + i * 4 + j] * 2.0\n"
      "        for i2 in T.serial(0, 8):\n"
      "            for j2 in T.serial(0, 4):\n"
      "                Y[t * 64 + j2 * 8 + i2] = L[i2 * 4 + j2] + 1.0\n",
      {0}},
     0,
     true},
    /* a barrier in the body: LLVM gives a convergent loop no remainder, so
       37 iterations stay rolled */
    {{"@T.prim_func\n"
      "def k(X: T.Buffer((1024,), \"float32\"), Y: T.Buffer((1024,), \"float32\")):\n"
      "    for t in T.thread_binding(0, 16, thread=\"threadIdx.x\"):\n"
      "        S = T.allocate((16,), \"float32\", scope=\"shared\")\n"
      "        for i in T.serial(0, 37):\n"
      "            S[t] = X[t * 64 + i]\n"
      "            T.syncthreads()\n"
      "            Y[t * 64 + i] = S[15 - t]\n"
      "            T.syncthreads()\n",
      {0}},
     1,
     false},
};

static void direct_unrolling(void **state) {
    (void)state;
    for (size_t c = 0; c < sizeof unroll_kernels / sizeof *unroll_kernels; c++) {
        direct_kernel(&unroll_kernels[c].k, c, false, unroll_kernels[c].loops);
        if (!unroll_kernels[c].local) direct_kernel(&unroll_kernels[c].k, c, true, -1);
    }
}

/* LLVM's emitter had the direct emitter's rule too late: a guarded float32
 * store became a predicated store (cg_emit.c, masked_store) whose value,
 * a load of X, ran unguarded, past X's end in block 1.  Now only values
 * and indices that read no memory but local arrays are predicated. */

/* A zero-filling copy (relax_guards' `if c: S = G else: S = 0`) whose
 * load is a strided vector (a transposing fetch vectorized along the
 * global buffer's rows): LLVM's emitter loaded its lanes one by one with
 * neither the guard on their addresses nor the zero where the guard is
 * false, so the copy stored G's elements, or read past G's end, where it
 * must store 0 (found by the seventh new-user review running
 * test_user_workloads' kernels through LLVM's PTX in the interpreter:
 * a 35 x 31 transpose read past P's end). */
static void llvm_strided_zero_fill(void **state) {
    (void)state;
    static const char text[] =
        "@T.prim_func\n"
        "def k(X: T.Buffer((64,), \"float32\"), Y: T.Buffer((64,), \"float32\")):\n"
        "    for b in T.thread_binding(0, 1, thread=\"blockIdx.x\"):\n"
        "        for t in T.thread_binding(0, 16, thread=\"threadIdx.x\"):\n"
        "            if t < 12:\n"
        "                Y[T.Ramp(t * 4, 1, 4)] = X[T.Ramp(t, 16, 4)]\n"
        "            else:\n"
        "                Y[T.Ramp(t * 4, 1, 4)] = T.Broadcast(T.float32(0), 4)\n";
    tir_ctx *ctx = tir_ctx_create();
    const tir_prim_func *k;
    OK(ctx, tir_parse_func(ctx, text, strlen(text), &k));
    for (int pl = 0; pl < 2; pl++) {
        tir_codegen_opts o;
        tir_codegen_opts_init(&o);
        o.pipeline = pl ? TIR_CG_PIPELINE_SHORT : TIR_CG_PIPELINE_OPT;
        const tir_module *m;
        OK(ctx, tir_codegen(ctx, k, &o, &m));
        _Alignas(16) float x[64], y[64];
        for (int i = 0; i < 64; i++) x[i] = (float)i + 1, y[i] = -1;
        tir_arg a[2] = {{x, 0}, {y, 0}};
        size_t bytes[2] = {sizeof x, sizeof y};
        char e[512];
        if (dc_run(ctx, m, a, bytes, e, sizeof e)) fail_msg("%s\n%s", e, m->ptx);
        for (int t = 0; t < 16; t++)
            for (int l = 0; l < 4; l++) {
                float want = t < 12 ? x[t + 16 * l] : 0.0f;
                if (y[t * 4 + l] != want)
                    fail_msg("Y[%d] = %g, want %g\n%s", t * 4 + l, (double)y[t * 4 + l],
                             (double)want, m->ptx);
            }
    }
    tir_ctx_destroy(ctx);
}

static void llvm_guarded_store(void **state) {
    (void)state;
    static const char text[] =
        "@T.prim_func\n"
        "def k(X: T.Buffer((64,), \"float32\"), Y: T.Buffer((64,), \"float32\")):\n"
        "    for b in T.thread_binding(0, 2, thread=\"blockIdx.x\"):\n"
        "        for t in T.thread_binding(0, 64, thread=\"threadIdx.x\"):\n"
        "            if b * 64 + t < 64:\n"
        "                Y[b * 64 + t] = X[b * 64 + t] * 2.0\n";
    tir_ctx *ctx = tir_ctx_create();
    const tir_prim_func *k;
    OK(ctx, tir_parse_func(ctx, text, strlen(text), &k));
    tir_codegen_opts o;
    tir_codegen_opts_init(&o);
    o.pipeline = TIR_CG_PIPELINE_SHORT;
    const tir_module *m;
    OK(ctx, tir_codegen(ctx, k, &o, &m));
    /* X and Y with a gap between them, so that a read past X's end lies in
     * no buffer and the interpreter reports it */
    _Alignas(16) float mem[192];
    float *x = mem, *y = mem + 128;
    for (int i = 0; i < 64; i++) x[i] = (float)i, y[i] = -1;
    tir_arg a[2] = {{x, 0}, {y, 0}};
    size_t bytes[2] = {64 * sizeof(float), 64 * sizeof(float)};
    char e[512];
    if (dc_run(ctx, m, a, bytes, e, sizeof e)) fail_msg("%s\n%s", e, m->ptx);
    for (int i = 0; i < 64; i++) assert_true(y[i] == 2.0f * (float)i);
    tir_ctx_destroy(ctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(llvm_guarded_store),
        cmocka_unit_test(llvm_strided_zero_fill),
        cmocka_unit_test(minmax_nan),     cmocka_unit_test(cvt_semantics),
        cmocka_unit_test(cvt_narrow),     cmocka_unit_test(cvt_16bit),
        cmocka_unit_test(int_semantics),  cmocka_unit_test(int64_min_literal),
        cmocka_unit_test(float_semantics),
        cmocka_unit_test(memory_semantics), cmocka_unit_test(errors),
        cmocka_unit_test(ldmatrix_forms), cmocka_unit_test(ldmatrix_errors),
        cmocka_unit_test(mma_forms),      cmocka_unit_test(shfl_forms),
        cmocka_unit_test(matmul_steps),   cmocka_unit_test(dynamic_shared),
        cmocka_unit_test(multistage),     cmocka_unit_test(splitk),
        cmocka_unit_test(fused),          cmocka_unit_test(direct_edges),
        cmocka_unit_test(direct_unrolling),
        cmocka_unit_test(direct_unroll_attr),
        cmocka_unit_test(default_direct_choice),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
