/* test_seed_gpu.c: every seed schedule (examples/seed/seed.c, Steps 1-6) and
 * every fused epilogue (bias, bias+ReLU, clip through
 * fuse_reduction_epilogue) compiled to PTX and run on the GPU at several
 * sizes, including ones that are not multiples of the 32x32x32 tiles.
 * Outputs are poisoned with NaN first, inputs are fresh random values, and
 * each result is compared with cuBLAS (pure float32) followed, for the
 * fused programs, by the runtime's separate epilogue kernel, by relative
 * Frobenius error within the float32 GEMM tolerance.  The epilogue kernel
 * itself is checked against the host epilogue reference once per size.
 * The matmul also runs with 128x128x32 tiles, whose double buffer (64 KiB)
 * lives in dynamic shared memory past the static 48 KiB.
 *
 * Without a CUDA driver or GPU it prints "1..0 # SKIP no CUDA device".
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "minitir/codegen.h"
#include "minitir/runtime.h"
#include "seed.h"

static tir_ctx *ctx;
static tir_rt_device *dev;
static tir_rt_blas *blas;

static const int64_t sizes[][3] = {{128, 128, 128}, {257, 129, 67}, {1000, 520, 333},
                                   {33, 1000, 45}};
enum { NSIZES = sizeof sizes / sizeof *sizes };

#define OK(call)                                                                          \
    do {                                                                                  \
        tir_status st_ = (call);                                                          \
        if (st_ != TIR_OK) fail_msg("%s: %s", #call, tir_ctx_error(ctx));                 \
    } while (0)

static tir_rt_epilogue rt_epi(int e) {
    tir_rt_epilogue r = {TIR_RT_EPI_BIAS, 0, 0};
    if (e == SEED_EPI_RELU) r.kind = TIR_RT_EPI_BIAS_RELU;
    if (e == SEED_EPI_CLIP) r = (tir_rt_epilogue){TIR_RT_EPI_BIAS_CLIP, SEED_CLIP_LO, SEED_CLIP_HI};
    return r;
}

/* Builds, runs and verifies one program (e < 0: the matmul, with `tiles`,
 * NULL: the seed's) at one size; returns the relative error.  With
 * dyn_smem >= 0 the module must have exactly that much dynamic shared
 * memory. */
static double check_tiles(int e, int step, const seed_tiles *tiles, int64_t dyn_smem,
                          const int64_t sz[3], uint64_t seed) {
    int64_t M = sz[0], N = sz[1], K = sz[2];
    size_t na = (size_t)(M * K), nb = (size_t)(K * N), nc = (size_t)(M * N);
    const tir_prim_func *f = e < 0 ? tir_def_matmul(ctx, M, N, K, TIR_F32)
                                   : seed_def_fused(ctx, (seed_epi)e, M, N, K);
    assert_non_null(f);
    tir_schedule *s;
    OK(tir_sched_create(ctx, f, &s));
    OK(e < 0 ? seed_schedule_tiles(s, step, tiles, NULL, NULL) : seed_fused(s, step, NULL, NULL));
    /* Step 8's default splits K at small sizes: a second kernel sums */
    tir_module_set ms;
    OK(tir_build_kernels(ctx, tir_sched_func(s), NULL, &ms));
    tir_sched_destroy(s);
    const tir_module *m = ms.modules[0];
    if (dyn_smem >= 0) assert_int_equal(m->dyn_shared_bytes, dyn_smem);

    float *ha = malloc(na * 4), *hb = malloc(nb * 4), *hbias = malloc((size_t)N * 4);
    float *out = malloc(nc * 4), *ref = malloc(nc * 4);
    double *ref64 = malloc(nc * sizeof(double));
    assert_true(ha && hb && hbias && out && ref && ref64);
    OK(tir_rt_fill_random(ctx, TIR_F32, ha, na, seed));
    OK(tir_rt_fill_random(ctx, TIR_F32, hb, nb, seed + 1));
    OK(tir_rt_fill_random(ctx, TIR_F32, hbias, (size_t)N, seed + 2));
    tir_rt_ptr A, B, bias, D, R, T;
    OK(tir_rt_alloc(ctx, dev, na * 4, &A));
    OK(tir_rt_alloc(ctx, dev, nb * 4, &B));
    OK(tir_rt_alloc(ctx, dev, (size_t)N * 4, &bias));
    OK(tir_rt_alloc(ctx, dev, nc * 4, &D));
    OK(tir_rt_alloc(ctx, dev, nc * 4, &R));
    OK(tir_rt_alloc(ctx, dev, nc * 4, &T));
    OK(tir_rt_copy_h2d(ctx, dev, A, ha, na * 4));
    OK(tir_rt_copy_h2d(ctx, dev, B, hb, nb * 4));
    OK(tir_rt_copy_h2d(ctx, dev, bias, hbias, (size_t)N * 4));
    OK(tir_rt_memset8(ctx, dev, D, 0xFF, nc * 4));

    tir_rt_program_set *p;
    OK(tir_rt_program_set_create(ctx, dev, &ms, &p));
    tir_rt_arg args[4];
    assert_true(ms.nparams == (e < 0 ? 3 : 4));
    for (int i = 0; i < ms.nparams; i++) {
        const char *n = m->params[i].name;
        args[i] = tir_rt_arg_ptr(!strcmp(n, "A") ? A : !strcmp(n, "B") ? B : !strcmp(n, "bias") ? bias : D);
    }
    OK(tir_rt_program_set_launch(ctx, p, ms.nparams, args));
    if (e < 0) {
        OK(tir_rt_blas_gemm(ctx, blas, TIR_RT_GEMM_F32, M, N, K, A, B, TIR_RT_B_KN, R));
    } else {
        tir_rt_epilogue ep = rt_epi(e);
        OK(tir_rt_blas_gemm(ctx, blas, TIR_RT_GEMM_F32, M, N, K, A, B, TIR_RT_B_KN, T));
        OK(tir_rt_bias_epilogue(ctx, dev, M, N, T, bias, R, &ep));
        if (step == 1) { /* the epilogue kernel against its host reference */
            float *t = malloc(nc * 4), *want = malloc(nc * 4);
            assert_true(t && want);
            OK(tir_rt_copy_d2h(ctx, dev, t, T, nc * 4));
            OK(tir_rt_copy_d2h(ctx, dev, ref, R, nc * 4));
            tir_rt_bias_epilogue_ref(M, N, t, hbias, want, &ep);
            assert_memory_equal(want, ref, nc * 4);
            free(t);
            free(want);
        }
    }
    OK(tir_rt_copy_d2h(ctx, dev, out, D, nc * 4));
    OK(tir_rt_copy_d2h(ctx, dev, ref, R, nc * 4));
    for (size_t i = 0; i < nc; i++) ref64[i] = ref[i];
    char what[96];
    snprintf(what, sizeof what, "%s step %d %lldx%lldx%lld", e < 0 ? "matmul" : seed_epi_name((seed_epi)e),
             step, (long long)M, (long long)N, (long long)K);
    tir_rt_error_stats es;
    tir_status st = tir_rt_check(ctx, what, TIR_F32, out, ref64, M, N,
                                 tir_rt_gemm_tolerance(TIR_RT_GEMM_F32, K), &es);
    printf("# %-32s rel_err %.2e\n", what, es.rel_err);
    if (st != TIR_OK) fail_msg("%s", tir_ctx_error(ctx));
    assert_int_equal(es.nonfinite, 0);
    tir_rt_program_set_destroy(p);
    int64_t ptrs[] = {(int64_t)A, (int64_t)B, (int64_t)bias, (int64_t)D, (int64_t)R, (int64_t)T};
    for (int i = 0; i < 6; i++) OK(tir_rt_free(ctx, dev, (tir_rt_ptr)ptrs[i]));
    free(ha);
    free(hb);
    free(hbias);
    free(out);
    free(ref);
    free(ref64);
    return es.rel_err;
}

static double check_one(int e, int step, const int64_t sz[3], uint64_t seed) {
    return check_tiles(e, step, NULL, -1, sz, seed);
}

/* 128x128x32 block tiles, 8x8 per thread (256 threads): Steps 5 and 6
 * double-buffer 2 x (16 + 16) KiB of A and B tiles, past the static
 * 48 KiB, so the kernel runs with 64 KiB of dynamic shared memory that
 * tir_rt_program opts in to. */
static void big_tiles_dynamic_smem(void **state) {
    (void)state;
    const seed_tiles big = {.bm = 128, .bn = 128, .bk = 32, .tm = 8, .tn = 8};
    static const int64_t bsizes[][3] = {{1024, 1024, 1024}, {257, 129, 67}, {1000, 520, 333}};
    for (int si = 0; si < 3; si++)
        for (int step = 5; step <= SEED_NFUSED_STEPS; step++)
            assert_true(check_tiles(-1, step, &big, 65536, bsizes[si], 300 + (uint64_t)step) <=
                        1e-5);
}

static void seed_steps(void **state) {
    (void)state;
    for (int si = 0; si < NSIZES; si++)
        for (int step = 1; step <= SEED_NSTEPS; step++)
            assert_true(check_one(-1, step, sizes[si], 100 + (uint64_t)step) <= 1e-5);
}

static void fused(int e) {
    for (int si = 0; si < NSIZES; si++)
        for (int step = 1; step <= SEED_NFUSED_STEPS; step++)
            assert_true(check_one(e, step, sizes[si], 200 + (uint64_t)step) <= 1e-5);
}

static void fused_bias(void **state) {
    (void)state;
    fused(SEED_EPI_BIAS);
}
static void fused_relu(void **state) {
    (void)state;
    fused(SEED_EPI_RELU);
}
static void fused_clip(void **state) {
    (void)state;
    fused(SEED_EPI_CLIP);
}

int main(void) {
    ctx = tir_ctx_create();
    if (!ctx) return 1;
    tir_status s = tir_rt_device_create(ctx, 0, &dev);
    if (s == TIR_ERR_NO_DRIVER || s == TIR_ERR_NO_DEVICE) {
        printf("1..0 # SKIP no CUDA device (%s): %s\n", tir_status_name(s), tir_ctx_error(ctx));
        tir_ctx_destroy(ctx);
        return 0;
    }
    if (s == TIR_OK) s = tir_rt_blas_create(ctx, dev, &blas);
    if (s != TIR_OK) {
        printf("Bail out! %s\n", tir_ctx_error(ctx));
        tir_rt_device_destroy(dev);
        tir_ctx_destroy(ctx);
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(seed_steps),
        cmocka_unit_test(big_tiles_dynamic_smem),
        cmocka_unit_test(fused_bias),
        cmocka_unit_test(fused_relu),
        cmocka_unit_test(fused_clip),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    tir_rt_device_destroy(dev);
    tir_ctx_destroy(ctx);
    return rc;
}
