/* Runtime tests that need no GPU: missing driver and cuBLAS give clear
 * statuses, the verification helpers (random fill, conversions, poison,
 * relative error, float64 GEMM, tolerances, epilogue reference) compute
 * what they claim, and the benchmark's sampling logic is right, driven by a
 * fake clock.  Where the CUDA toolkit is installed, also checks the stub
 * driver library and the hand-written PTX with ptxas.
 *
 * Test order matters for the first tests: a library that loaded stays
 * loaded, so the "missing library" cases run before anything loads one.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "minitir/runtime.h"
#include "runtime/rt_internal.h"
#include "rt_test_kernels.h"

static void test_status_names(void **st) {
    (void)st;
    assert_string_equal(tir_status_name(TIR_ERR_NO_DRIVER), "ERR_NO_DRIVER");
    assert_string_equal(tir_status_name(TIR_ERR_NO_DEVICE), "ERR_NO_DEVICE");
    assert_string_equal(tir_status_name(TIR_ERR_CUDA), "ERR_CUDA");
    assert_string_equal(tir_status_name(TIR_ERR_NO_CUBLAS), "ERR_NO_CUBLAS");
    assert_string_equal(tir_status_name(TIR_ERR_VERIFY_MISMATCH), "ERR_VERIFY_MISMATCH");
}

static void test_no_driver(void **st) {
    (void)st;
    tir_ctx *ctx = tir_ctx_create();
    setenv("MINITIR_CUDA_LIB", "/nonexistent/libcuda.so.1", 1);
    tir_rt_device *dev = (tir_rt_device *)1;
    assert_int_equal(tir_rt_device_create(ctx, 0, &dev), TIR_ERR_NO_DRIVER);
    assert_null(dev);
    const char *msg = tir_ctx_error(ctx);
    assert_non_null(strstr(msg, "cannot load the CUDA driver library"));
    assert_non_null(strstr(msg, "/nonexistent/libcuda.so.1"));
    assert_non_null(strstr(msg, "MINITIR_CUDA_LIB"));
    int n = -1;
    assert_int_equal(tir_rt_device_count(ctx, &n), TIR_ERR_NO_DRIVER);
    assert_int_equal(n, 0);
    /* A library that is not a driver at all. */
    setenv("MINITIR_CUDA_LIB", "libm.so.6", 1);
    assert_int_equal(tir_rt_device_create(ctx, 0, &dev), TIR_ERR_NO_DRIVER);
    assert_non_null(strstr(tir_ctx_error(ctx), "lacks cuGetErrorName"));
    unsetenv("MINITIR_CUDA_LIB");
    tir_ctx_destroy(ctx);
}

/* The JIT level's checks need no driver: no device, or a level out of range. */
static void test_jit_level_args(void **st) {
    (void)st;
    tir_ctx *ctx = tir_ctx_create();
    assert_int_equal(tir_rt_device_set_jit_opt_level(ctx, NULL, 0), TIR_ERR_INVALID_ARG);
    assert_non_null(strstr(tir_ctx_error(ctx), "no device"));
    tir_rt_device *bogus = (tir_rt_device *)8; /* never dereferenced for a bad level */
    assert_int_equal(tir_rt_device_set_jit_opt_level(ctx, bogus, 5), TIR_ERR_INVALID_ARG);
    assert_int_equal(tir_rt_device_set_jit_opt_level(ctx, bogus, -2), TIR_ERR_INVALID_ARG);
    assert_non_null(strstr(tir_ctx_error(ctx), "level -2"));
    tir_ctx_destroy(ctx);
}

/* The toolkit's stub libcuda resolves every symbol and fails cuInit. */
static void test_stub_driver(void **st) {
    (void)st;
    tir_ctx *ctx = tir_ctx_create();
    setenv("MINITIR_CUDA_LIB", getenv("MINITIR_TEST_CUDA_STUB"), 1);
    tir_rt_device *dev = NULL;
    assert_int_equal(tir_rt_device_create(ctx, 0, &dev), TIR_ERR_NO_DRIVER);
    assert_null(dev);
    assert_non_null(strstr(tir_ctx_error(ctx), "stub library"));
    assert_non_null(strstr(tir_ctx_error(ctx), "CUDA_ERROR_STUB_LIBRARY"));
    unsetenv("MINITIR_CUDA_LIB");
    tir_ctx_destroy(ctx);
}

static void test_no_cublas(void **st) {
    (void)st;
    tir_ctx *ctx = tir_ctx_create();
    setenv("MINITIR_CUBLAS_LIB", "/nonexistent/libcublas.so.13", 1);
    int version = -1;
    assert_int_equal(tir_rt_blas_probe(ctx, &version), TIR_ERR_NO_CUBLAS);
    assert_int_equal(version, 0);
    assert_non_null(strstr(tir_ctx_error(ctx), "cannot load cuBLAS"));
    assert_non_null(strstr(tir_ctx_error(ctx), "/nonexistent/libcublas.so.13"));
    tir_rt_blas *b = (tir_rt_blas *)1;
    assert_int_equal(tir_rt_blas_create(ctx, NULL, &b), TIR_ERR_INVALID_ARG);
    assert_null(b);
    setenv("MINITIR_CUBLAS_LIB", "libm.so.6", 1);
    assert_int_equal(tir_rt_blas_probe(ctx, NULL), TIR_ERR_NO_CUBLAS);
    assert_non_null(strstr(tir_ctx_error(ctx), "lacks cublasGetProperty"));
    unsetenv("MINITIR_CUBLAS_LIB");
    tir_ctx_destroy(ctx);
}

/* Whatever this machine has: either cuBLAS loads and reports a version 12
 * or later, or the failure is the clean status. */
static void test_cublas_probe_default(void **st) {
    (void)st;
    tir_ctx *ctx = tir_ctx_create();
    int version = -1;
    tir_status s = tir_rt_blas_probe(ctx, &version);
    if (s == TIR_OK) {
        assert_true(version >= 120000);
        printf("# cuBLAS %d.%d.%d found\n", version / 10000, version / 100 % 100,
               version % 100);
    } else {
        assert_int_equal(s, TIR_ERR_NO_CUBLAS);
        assert_int_equal(version, 0);
        assert_non_null(strstr(tir_ctx_error(ctx), "libcublas.so.12"));
        printf("# no cuBLAS here: %s\n", tir_ctx_error(ctx));
    }
    tir_ctx_destroy(ctx);
}

static void test_rng(void **st) {
    (void)st;
    tir_rt_rng a = tir_rt_rng_seed(42), b = tir_rt_rng_seed(42), c = tir_rt_rng_seed(43);
    int same_c = 0;
    for (int i = 0; i < 100; i++) {
        uint64_t x = tir_rt_rng_next(&a);
        assert_true(x == tir_rt_rng_next(&b));
        same_c += x == tir_rt_rng_next(&c);
    }
    assert_int_equal(same_c, 0);
    tir_rt_rng z = tir_rt_rng_seed(0);
    assert_true(z.state != 0);
    double sum = 0, lo = 1, hi = -1;
    const int n = 100000;
    for (int i = 0; i < n; i++) {
        float v = tir_rt_rng_uniform(&a);
        assert_true(v >= -1.0f && v < 1.0f);
        /* a multiple of 2^-23 */
        double k = ((double)v + 1.0) * 8388608.0;
        assert_true(k == floor(k));
        sum += v;
        if (v < lo) lo = v;
        if (v > hi) hi = v;
    }
    assert_true(fabs(sum / n) < 0.01);
    assert_true(lo < -0.999 && hi > 0.999);
}

static void test_f16_conversions(void **st) {
    (void)st;
    assert_int_equal(tir_rt_f32_to_f16(1.0f), 0x3c00);
    assert_int_equal(tir_rt_f32_to_f16(-2.0f), 0xc000);
    assert_int_equal(tir_rt_f32_to_f16(0.0f), 0x0000);
    assert_int_equal(tir_rt_f32_to_f16(-0.0f), 0x8000);
    assert_int_equal(tir_rt_f32_to_f16(65504.0f), 0x7bff);
    assert_int_equal(tir_rt_f32_to_f16(65520.0f), 0x7c00); /* tie, rounds up to inf */
    assert_int_equal(tir_rt_f32_to_f16(65519.0f), 0x7bff);
    assert_int_equal(tir_rt_f32_to_f16(1e10f), 0x7c00);
    assert_int_equal(tir_rt_f32_to_f16(-INFINITY), 0xfc00);
    assert_int_equal(tir_rt_f32_to_f16(0x1p-24f), 0x0001);
    assert_int_equal(tir_rt_f32_to_f16(0x1p-25f), 0x0000);         /* tie to even */
    assert_int_equal(tir_rt_f32_to_f16(0x1.8p-25f), 0x0001);       /* above the tie */
    assert_int_equal(tir_rt_f32_to_f16(0x1.8p-24f), 0x0002);       /* tie to even */
    assert_int_equal(tir_rt_f32_to_f16(0x1p-14f), 0x0400);         /* smallest normal */
    assert_int_equal(tir_rt_f32_to_f16(0x1.ff8p-15f), 0x03ff);     /* largest subnormal */
    assert_int_equal(tir_rt_f32_to_f16(0x1.ffcp-15f), 0x0400);     /* tie, up into normal */
    assert_int_equal(tir_rt_f32_to_f16(0x1.ffap-15f), 0x03ff);     /* below the tie */
    assert_int_equal(tir_rt_f32_to_f16(1.0f + 0x1p-11f), 0x3c00);  /* tie to even */
    assert_int_equal(tir_rt_f32_to_f16(1.0f + 0x3p-11f), 0x3c02);  /* tie to even */
    assert_int_equal(tir_rt_f32_to_f16(1.0f + 0x1.2p-11f), 0x3c01);
    assert_true((tir_rt_f32_to_f16(NAN) & 0x7c00) == 0x7c00 && (tir_rt_f32_to_f16(NAN) & 0x3ff));
    /* Every non-NaN float16 survives the round trip. */
    for (uint32_t h = 0; h < 0x10000; h++) {
        float f = tir_rt_f16_to_f32((uint16_t)h);
        if (isnan(f)) {
            assert_true((h & 0x7c00) == 0x7c00 && (h & 0x3ff));
            continue;
        }
        assert_int_equal(tir_rt_f32_to_f16(f), h);
    }
    assert_true(tir_rt_f16_to_f32(0x0001) == 0x1p-24f);
    assert_true(tir_rt_f16_to_f32(0x3555) == 0x1.554p-2f);
}

static void test_bf16_conversions(void **st) {
    (void)st;
    assert_int_equal(tir_rt_f32_to_bf16(1.0f), 0x3f80);
    assert_int_equal(tir_rt_f32_to_bf16(-3.0f), 0xc040);
    assert_int_equal(tir_rt_f32_to_bf16(1.0f + 0x1p-8f), 0x3f80);  /* tie to even */
    assert_int_equal(tir_rt_f32_to_bf16(1.0f + 0x3p-8f), 0x3f82);  /* tie to even */
    assert_int_equal(tir_rt_f32_to_bf16(1.0f + 0x1.2p-8f), 0x3f81);
    assert_int_equal(tir_rt_f32_to_bf16(3.4e38f), 0x7f80);          /* overflows */
    uint16_t qn = tir_rt_f32_to_bf16(NAN);
    assert_true((qn & 0x7f80) == 0x7f80 && (qn & 0x7f));
    for (uint32_t h = 0; h < 0x10000; h++) {
        float f = tir_rt_bf16_to_f32((uint16_t)h);
        if (isnan(f)) continue;
        assert_int_equal(tir_rt_f32_to_bf16(f), h);
    }
}

static void test_fill_random(void **st) {
    (void)st;
    tir_ctx *ctx = tir_ctx_create();
    enum { N = 4096 };
    float f[N];
    uint16_t h[N], b[N];
    double d[N];
    assert_int_equal(tir_rt_fill_random(ctx, TIR_F32, f, N, 7), TIR_OK);
    assert_int_equal(tir_rt_fill_random(ctx, TIR_F16, h, N, 7), TIR_OK);
    assert_int_equal(tir_rt_fill_random(ctx, TIR_BF16, b, N, 7), TIR_OK);
    assert_int_equal(tir_rt_fill_random(ctx, TIR_F64, d, N, 7), TIR_OK);
    int distinct = 0;
    for (int i = 0; i < N; i++) {
        assert_true(f[i] >= -1.0f && f[i] < 1.0f);
        assert_int_equal(h[i], tir_rt_f32_to_f16(f[i]));
        assert_int_equal(b[i], tir_rt_f32_to_bf16(f[i]));
        assert_true(d[i] == (double)f[i]);
        distinct += i > 0 && f[i] != f[i - 1];
    }
    assert_true(distinct > N - 10);
    /* another seed, other values */
    float g[N];
    assert_int_equal(tir_rt_fill_random(ctx, TIR_F32, g, N, 8), TIR_OK);
    assert_true(memcmp(f, g, sizeof f) != 0);
    int32_t ints[4];
    assert_int_equal(tir_rt_fill_random(ctx, TIR_I32, ints, 4, 1), TIR_ERR_INVALID_ARG);
    assert_non_null(strstr(tir_ctx_error(ctx), "int32"));
    double back[N];
    assert_int_equal(tir_rt_to_f64(ctx, TIR_BF16, b, N, back), TIR_OK);
    for (int i = 0; i < N; i++) assert_true(back[i] == (double)tir_rt_bf16_to_f32(b[i]));
    tir_ctx_destroy(ctx);
}

static void test_poison_and_compare(void **st) {
    (void)st;
    tir_ctx *ctx = tir_ctx_create();
    float out[6];
    double ref[6] = {1, 2, 3, 4, 5, 6};
    tir_rt_error_stats es;
    tir_rt_poison(out, sizeof out);
    for (int i = 0; i < 6; i++) assert_true(isnan(out[i]));
    /* poisoned float16 / bfloat16 / float64 are NaN too */
    uint16_t h = 0;
    double dd = 0;
    tir_rt_poison(&h, sizeof h);
    tir_rt_poison(&dd, sizeof dd);
    assert_true(isnan(tir_rt_f16_to_f32(h)) && isnan(tir_rt_bf16_to_f32(h)) && isnan(dd));

    assert_int_equal(tir_rt_compare(ctx, TIR_F32, out, ref, 6, &es), TIR_OK);
    assert_int_equal(es.nonfinite, 6);
    assert_int_equal(es.first_nonfinite, 0);
    assert_true(isinf(es.rel_err));
    assert_int_equal(tir_rt_check(ctx, "C", TIR_F32, out, ref, 2, 3, 1e300, NULL),
                     TIR_ERR_VERIFY_MISMATCH);
    assert_non_null(strstr(tir_ctx_error(ctx), "verify C: 6 of 6 elements are NaN"));

    /* all written but one: fails whatever the tolerance */
    for (int i = 0; i < 6; i++) out[i] = (float)ref[i];
    assert_int_equal(tir_rt_check(ctx, "C", TIR_F32, out, ref, 2, 3, 0.0, &es), TIR_OK);
    assert_true(es.rel_err == 0.0);
    tir_rt_poison(&out[4], sizeof out[4]);
    assert_int_equal(tir_rt_check(ctx, "C", TIR_F32, out, ref, 2, 3, 1e300, &es),
                     TIR_ERR_VERIFY_MISMATCH);
    assert_int_equal(es.nonfinite, 1);
    assert_non_null(strstr(tir_ctx_error(ctx), "first at [1, 1]"));
    out[4] = INFINITY;
    assert_int_equal(tir_rt_check(ctx, "C", TIR_F32, out, ref, 2, 3, 1e300, NULL),
                     TIR_ERR_VERIFY_MISMATCH);

    /* ||(0, 0.05)|| / ||(3, 4)|| = 0.01 */
    float o2[2] = {3.0f, 4.05f};
    double r2[2] = {3.0, 4.0};
    assert_int_equal(tir_rt_compare(ctx, TIR_F32, o2, r2, 2, &es), TIR_OK);
    assert_true(fabs(es.rel_err - 0.01) < 1e-6);
    assert_true(fabs(es.max_abs_err - 0.05) < 1e-6);
    assert_int_equal(es.max_abs_index, 1);
    assert_true(es.ref_norm == 5.0);
    assert_int_equal(tir_rt_check(ctx, "D", TIR_F32, o2, r2, 1, 2, 0.0101, NULL), TIR_OK);
    assert_int_equal(tir_rt_check(ctx, "D", TIR_F32, o2, r2, 1, 2, 0.0099, NULL),
                     TIR_ERR_VERIFY_MISMATCH);
    const char *msg = tir_ctx_error(ctx);
    assert_non_null(strstr(msg, "verify D: relative error 1.000e-02 exceeds"));
    assert_non_null(strstr(msg, "at [0, 1]: got 4.0"));

    /* a zero reference: the absolute norm */
    double zero[2] = {0, 0};
    float o3[2] = {0.0f, 0.5f};
    assert_int_equal(tir_rt_compare(ctx, TIR_F32, o3, zero, 2, &es), TIR_OK);
    assert_true(es.rel_err == 0.5);

    /* a broken reference is the caller's bug */
    double bad[2] = {1, NAN};
    assert_int_equal(tir_rt_compare(ctx, TIR_F32, o2, bad, 2, &es), TIR_ERR_INVALID_ARG);

    /* 16-bit outputs */
    uint16_t hb[2] = {tir_rt_f32_to_bf16(3.0f), tir_rt_f32_to_bf16(4.0f)};
    assert_int_equal(tir_rt_check(ctx, "E", TIR_BF16, hb, r2, 1, 2, 0.0, NULL), TIR_OK);
    tir_ctx_destroy(ctx);
}

static void test_gemm_ref(void **st) {
    (void)st;
    tir_ctx *ctx = tir_ctx_create();
    /* by hand */
    float a[4] = {1, 2, 3, 4}, b[4] = {5, 6, 7, 8};
    double c[4];
    assert_int_equal(tir_rt_gemm_ref(ctx, TIR_F32, 2, 2, 2, a, b, TIR_RT_B_KN, c), TIR_OK);
    assert_true(c[0] == 19 && c[1] == 22 && c[2] == 43 && c[3] == 50);
    /* B[N,K] = the transpose: C = A·Bᵀ = [[17, 23], [39, 53]] */
    assert_int_equal(tir_rt_gemm_ref(ctx, TIR_F32, 2, 2, 2, a, b, TIR_RT_B_NK, c), TIR_OK);
    assert_true(c[0] == 17 && c[1] == 23 && c[2] == 39 && c[3] == 53);

    /* random, non-square, against a naive triple loop */
    enum { M = 7, N = 5, K = 3 };
    float A[M * K], B[K * N], Bt[N * K];
    double C1[M * N], C2[M * N];
    tir_rt_fill_random(ctx, TIR_F32, A, M * K, 1);
    tir_rt_fill_random(ctx, TIR_F32, B, K * N, 2);
    for (int k = 0; k < K; k++)
        for (int j = 0; j < N; j++) Bt[j * K + k] = B[k * N + j];
    assert_int_equal(tir_rt_gemm_ref(ctx, TIR_F32, M, N, K, A, B, TIR_RT_B_KN, C1), TIR_OK);
    assert_int_equal(tir_rt_gemm_ref(ctx, TIR_F32, M, N, K, A, Bt, TIR_RT_B_NK, C2), TIR_OK);
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double acc = 0;
            for (int k = 0; k < K; k++) acc += (double)A[i * K + k] * (double)B[k * N + j];
            assert_true(C1[i * N + j] == acc);
            assert_true(C2[i * N + j] == acc);
        }
    /* 16-bit inputs are read exactly */
    uint16_t Ah[M * K], Bh[K * N];
    float Af[M * K], Bf[K * N];
    tir_rt_fill_random(ctx, TIR_F16, Ah, M * K, 3);
    tir_rt_fill_random(ctx, TIR_F16, Bh, K * N, 4);
    for (int i = 0; i < M * K; i++) Af[i] = tir_rt_f16_to_f32(Ah[i]);
    for (int i = 0; i < K * N; i++) Bf[i] = tir_rt_f16_to_f32(Bh[i]);
    assert_int_equal(tir_rt_gemm_ref(ctx, TIR_F16, M, N, K, Ah, Bh, TIR_RT_B_KN, C1), TIR_OK);
    assert_int_equal(tir_rt_gemm_ref(ctx, TIR_F32, M, N, K, Af, Bf, TIR_RT_B_KN, C2), TIR_OK);
    assert_memory_equal(C1, C2, sizeof C1);
    assert_int_equal(tir_rt_gemm_ref(ctx, TIR_I32, M, N, K, A, B, TIR_RT_B_KN, C1),
                     TIR_ERR_INVALID_ARG);
    assert_int_equal(tir_rt_gemm_ref(ctx, TIR_F32, 0, N, K, A, B, TIR_RT_B_KN, C1),
                     TIR_ERR_INVALID_ARG);
    tir_ctx_destroy(ctx);
}

static void test_tolerances(void **st) {
    (void)st;
    assert_true(tir_rt_gemm_tolerance(TIR_RT_GEMM_F32, 64) == 1e-5);
    assert_true(tir_rt_gemm_tolerance(TIR_RT_GEMM_F32, 8192) == 1e-5);
    assert_true(fabs(tir_rt_gemm_tolerance(TIR_RT_GEMM_F32, 32768) - 2e-5) < 1e-12);
    assert_true(tir_rt_gemm_tolerance(TIR_RT_GEMM_F32_PEDANTIC, 100) == 1e-5);
    assert_true(tir_rt_gemm_tolerance(TIR_RT_GEMM_BF16, 4096) == 1e-4);
    assert_true(tir_rt_gemm_tolerance(TIR_RT_GEMM_F16, 4096) == 1e-4);
    assert_true(tir_rt_gemm_tolerance(TIR_RT_GEMM_TF32, 4096) == 5e-3);
    assert_string_equal(tir_rt_gemm_kind_name(TIR_RT_GEMM_BF16), "bf16");
    assert_true(tir_dtype_eq(tir_rt_gemm_kind_input(TIR_RT_GEMM_F16), TIR_F16));
    assert_true(tir_dtype_eq(tir_rt_gemm_kind_input(TIR_RT_GEMM_TF32), TIR_F32));
    assert_true(fabs(tir_rt_gemm_tflops(1024, 1024, 1024, 1.0) - 2.147483648) < 1e-9);
    assert_true(tir_rt_gemm_tflops(1, 1, 1, 0.0) == 0.0);
}

/* The host epilogue reference: bias, ReLU, clip, and NaN kept. */
static void test_epilogue_ref(void **st) {
    (void)st;
    float C[6] = {1.0f, -2.0f, 0.25f, -0.5f, 3.0f, NAN};
    float bias[3] = {0.5f, 1.0f, -1.0f};
    float D[6];
    tir_rt_epilogue e = {TIR_RT_EPI_BIAS, 0, 0};
    tir_rt_bias_epilogue_ref(2, 3, C, bias, D, &e);
    assert_true(D[0] == 1.5f && D[1] == -1.0f && D[2] == -0.75f && D[3] == 0.0f &&
                D[4] == 4.0f && isnan(D[5]));
    e.kind = TIR_RT_EPI_BIAS_RELU;
    tir_rt_bias_epilogue_ref(2, 3, C, bias, D, &e);
    assert_true(D[0] == 1.5f && D[1] == 0.0f && D[2] == 0.0f && D[3] == 0.0f &&
                D[4] == 4.0f && isnan(D[5]));
    e = (tir_rt_epilogue){TIR_RT_EPI_BIAS_CLIP, -0.5f, 2.0f};
    tir_rt_bias_epilogue_ref(2, 3, C, bias, D, &e);
    assert_true(D[0] == 1.5f && D[1] == -0.5f && D[2] == -0.5f && D[3] == 0.0f &&
                D[4] == 2.0f && isnan(D[5]));
    /* in place */
    tir_rt_bias_epilogue_ref(2, 3, C, bias, C, &e);
    assert_true(C[0] == 1.5f && C[4] == 2.0f);
}

/* ------------------------------------------------------ bench, fake clock */

typedef struct fake {
    double now;
    double marks[2 * 512];
    int prepared, released, flushes, calls;
    int sets[4096];
    int fail_at; /* call index at which fn fails, -1 never */
    double host, host_per_call; /* the host's clock, advanced by each call */
    double holds[8];            /* the holds asked for */
    int nholds, hold_fail_at;   /* hold_fail_at: the hold that fails, 0 none */
    double hold_start;          /* host time of the last hold */
} fake;

static tir_status fk_prepare(void *self, tir_ctx *ctx, int n) {
    (void)ctx;
    fake *f = self;
    f->prepared = n;
    return TIR_OK;
}
static tir_status fk_flush(void *self, tir_ctx *ctx) {
    (void)ctx;
    fake *f = self;
    f->flushes++;
    f->now += 1000; /* a flush takes time, outside the samples */
    return TIR_OK;
}
static tir_status fk_mark(void *self, tir_ctx *ctx, int sample, int end) {
    (void)ctx;
    fake *f = self;
    f->marks[2 * sample + end] = f->now;
    return TIR_OK;
}
static tir_status fk_elapsed(void *self, tir_ctx *ctx, int sample, double *ms) {
    (void)ctx;
    fake *f = self;
    *ms = f->marks[2 * sample + 1] - f->marks[2 * sample];
    return TIR_OK;
}
static void fk_release(void *self) { ((fake *)self)->released++; }
static tir_status fk_hold(void *self, tir_ctx *ctx, double ms) {
    fake *f = self;
    if (++f->nholds == f->hold_fail_at) return tir_ctx_fail(ctx, TIR_ERR_CUDA, "hold failed");
    if (f->nholds <= 8) f->holds[f->nholds - 1] = ms;
    f->hold_start = f->host;
    return TIR_OK;
}
/* The GPU is still in the hold while less host time than the hold passed. */
static tir_status fk_held(void *self, tir_ctx *ctx, bool *still) {
    (void)ctx;
    fake *f = self;
    *still = f->host - f->hold_start < f->holds[(f->nholds - 1) % 8];
    return TIR_OK;
}
static double fk_host_ms(void *self) { return ((fake *)self)->host; }

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Call c takes (c * 7) % 23 + 1 ms. */
static double fk_duration(int c) { return (double)((c * 7) % 23 + 1); }

static tir_status fk_fn(tir_ctx *ctx, void *user, int set) {
    fake *f = user;
    if (f->calls == f->fail_at) return tir_ctx_fail(ctx, TIR_ERR_EVAL, "fn failed on purpose");
    f->sets[f->calls] = set;
    f->now += fk_duration(f->calls);
    f->host += f->host_per_call;
    f->calls++;
    return TIR_OK;
}

static void test_bench_stats(void **st) {
    (void)st;
    tir_rt_bench_result r;
    double odd[5] = {5, 1, 4, 2, 3};
    rt_bench_stats(odd, 5, 1, &r);
    assert_true(r.median_ms == 3 && r.min_ms == 1 && r.max_ms == 5 && r.mean_ms == 3);
    double even[4] = {10, 40, 20, 30};
    rt_bench_stats(even, 4, 2, &r);
    assert_true(r.median_ms == 12.5 && r.min_ms == 5 && r.max_ms == 20 && r.mean_ms == 12.5);
    assert_int_equal(r.runs, 4);
    assert_int_equal(r.inner, 2);
}

static void test_bench_fake_clock(void **st) {
    (void)st;
    tir_ctx *ctx = tir_ctx_create();
    fake f;
    memset(&f, 0, sizeof f);
    f.fail_at = -1;
    rt_bench_clock clock = {&f,         fk_prepare, fk_flush, fk_mark, fk_elapsed,
                            fk_release, NULL,       NULL,     NULL};
    tir_rt_bench_opts o = {3, 21, 2, 3, true};
    tir_rt_bench_result r;
    assert_int_equal(rt_bench_run(ctx, &clock, fk_fn, &f, &o, &r), TIR_OK);
    assert_int_equal(f.prepared, 21);
    assert_int_equal(f.released, 1);
    assert_int_equal(f.flushes, 21);
    assert_int_equal(f.calls, 3 + 21 * 2);
    for (int c = 0; c < f.calls; c++) assert_int_equal(f.sets[c], c % 3);
    /* expected: sample i is calls 3+2i and 4+2i, halved per call */
    double want[21];
    for (int i = 0; i < 21; i++)
        want[i] = (fk_duration(3 + 2 * i) + fk_duration(4 + 2 * i)) / 2;
    double lo = want[0], hi = want[0], sum = 0;
    for (int i = 0; i < 21; i++) {
        lo = want[i] < lo ? want[i] : lo;
        hi = want[i] > hi ? want[i] : hi;
        sum += want[i];
    }
    qsort(want, 21, sizeof want[0], cmp_double);
    assert_true(r.median_ms == want[10]);
    assert_true(r.min_ms == lo && r.max_ms == hi);
    assert_true(fabs(r.mean_ms - sum / 21) < 1e-12);
    assert_int_equal(r.runs, 21);
    assert_int_equal(r.inner, 2);

    /* no flush, one set: no flushes and set 0 always */
    memset(&f, 0, sizeof f);
    f.fail_at = -1;
    o = (tir_rt_bench_opts){0, 20, 1, 1, false};
    assert_int_equal(rt_bench_run(ctx, &clock, fk_fn, &f, &o, &r), TIR_OK);
    assert_int_equal(f.flushes, 0);
    assert_int_equal(f.calls, 20);
    for (int c = 0; c < 20; c++) assert_int_equal(f.sets[c], 0);

    /* fn's error stops the run, is returned, and the clock is released */
    memset(&f, 0, sizeof f);
    f.fail_at = 7;
    o = TIR_RT_BENCH_DEFAULTS;
    assert_int_equal(rt_bench_run(ctx, &clock, fk_fn, &f, &o, &r), TIR_ERR_EVAL);
    assert_int_equal(f.calls, 7);
    assert_int_equal(f.released, 1);
    assert_string_equal(tir_ctx_error(ctx), "fn failed on purpose");

    /* bad options */
    o.runs = 19;
    assert_int_equal(rt_bench_run(ctx, &clock, fk_fn, &f, &o, &r), TIR_ERR_INVALID_ARG);
    assert_non_null(strstr(tir_ctx_error(ctx), "20 <= runs"));
    o = TIR_RT_BENCH_DEFAULTS;
    o.nsets = 0;
    assert_int_equal(rt_bench_run(ctx, &clock, fk_fn, &f, &o, &r), TIR_ERR_INVALID_ARG);
    assert_int_equal(tir_rt_bench(ctx, NULL, fk_fn, &f, NULL, &r), TIR_ERR_INVALID_ARG);
    tir_ctx_destroy(ctx);
}

/* The hold: one where queuing is quick; longer holds (twice the last, at
 * least twice the time queuing took) where it is slow, up to 4 tries, and
 * back_to_back false when the last one was still too short. */
/* A fresh fake whose calls take host_per_call ms of the host's time. */
static void fk_reset(fake *f, double host_per_call) {
    memset(f, 0, sizeof *f);
    f->fail_at = -1;
    f->host_per_call = host_per_call;
}

static void test_bench_hold(void **st) {
    (void)st;
    tir_ctx *ctx = tir_ctx_create();
    fake f;
    fk_reset(&f, 0.05); /* 20 calls: 1 ms */
    rt_bench_clock clock = {&f,         fk_prepare, fk_flush, fk_mark,   fk_elapsed,
                            fk_release, fk_hold,    fk_held,  fk_host_ms};
    tir_rt_bench_opts o = {0, 20, 1, 1, false};
    tir_rt_bench_result r;
    assert_int_equal(rt_bench_run(ctx, &clock, fk_fn, &f, &o, &r), TIR_OK);
    assert_int_equal(f.nholds, 1);
    assert_true(f.holds[0] == 2.0 && r.hold_ms == 2.0 && r.back_to_back);
    assert_int_equal(f.calls, 20);
    /* 20 calls take 3 ms: a second try behind 6 ms */
    fk_reset(&f, 0.15);
    assert_int_equal(rt_bench_run(ctx, &clock, fk_fn, &f, &o, &r), TIR_OK);
    assert_int_equal(f.nholds, 2);
    assert_true(fabs(f.holds[1] - 6.0) < 1e-9 && r.hold_ms == f.holds[1] && r.back_to_back);
    assert_int_equal(f.calls, 40);
    /* the figures are the second try's: calls 20..39 */
    double want[20];
    for (int i = 0; i < 20; i++) want[i] = fk_duration(20 + i);
    qsort(want, 20, sizeof want[0], cmp_double);
    assert_true(r.median_ms == (want[9] + want[10]) / 2);
    /* 20 calls take 20 s: 4 tries, the last hold capped, not back to back */
    fk_reset(&f, 1000);
    assert_int_equal(rt_bench_run(ctx, &clock, fk_fn, &f, &o, &r), TIR_OK);
    assert_int_equal(f.nholds, 2);
    assert_true(f.holds[1] == 200.0 && !r.back_to_back);
    /* fn failing in a retry: returned, released */
    fk_reset(&f, 0.15);
    f.fail_at = 25;
    assert_int_equal(rt_bench_run(ctx, &clock, fk_fn, &f, &o, &r), TIR_ERR_EVAL);
    assert_int_equal(f.released, 1);
    assert_false(r.back_to_back);
    assert_true(r.hold_ms == 0);
    /* 250 samples: chunks of 100, 100 and 50, each behind its own hold */
    fk_reset(&f, 0.01);
    o.runs = 250;
    assert_int_equal(rt_bench_run(ctx, &clock, fk_fn, &f, &o, &r), TIR_OK);
    assert_int_equal(f.nholds, 3);
    assert_int_equal(f.calls, 250);
    assert_true(r.back_to_back && r.hold_ms == 2.0 && r.runs == 250);
    /* a slow chunk retries alone: 100 calls of 0.03 ms (3 ms) then 50 (1.5) */
    fk_reset(&f, 0.03);
    o.runs = 150;
    assert_int_equal(rt_bench_run(ctx, &clock, fk_fn, &f, &o, &r), TIR_OK);
    assert_int_equal(f.nholds, 3);
    assert_true(fabs(f.holds[1] - 6.0) < 1e-9 && f.holds[2] == 2.0 && r.hold_ms == f.holds[1] &&
                r.back_to_back);
    assert_int_equal(f.calls, 250);
    o.runs = 20;
    /* the hold fails, first or on a retry: returned, released, nothing set */
    for (int at = 1; at <= 2; at++) {
        fk_reset(&f, 0.15);
        f.hold_fail_at = at;
        assert_int_equal(rt_bench_run(ctx, &clock, fk_fn, &f, &o, &r), TIR_ERR_CUDA);
        assert_int_equal(f.released, 1);
        assert_true(!r.back_to_back && r.hold_ms == 0 && r.median_ms == 0);
        assert_int_equal(f.calls, at == 1 ? 0 : 20);
    }
    /* without a hold (a clock that has none), never back to back */
    clock.hold = NULL;
    fk_reset(&f, 0);
    assert_int_equal(rt_bench_run(ctx, &clock, fk_fn, &f, &o, &r), TIR_OK);
    assert_true(!r.back_to_back && r.hold_ms == 0);
    assert_int_equal(f.calls, 20);
    tir_ctx_destroy(ctx);
}

/* ----------------------------------------------------- PTX through ptxas */

static int run_ptxas(const char *ptx) {
    char path[] = "/tmp/minitir_ptx_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    size_t n = strlen(ptx);
    assert_true(write(fd, ptx, n) == (ssize_t)n);
    close(fd);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "'%s' -arch=sm_90 '%s' -o /dev/null 2>/dev/null",
             getenv("MINITIR_TEST_PTXAS"), path);
    int rc = system(cmd);
    unlink(path);
    return rc;
}

static void test_ptxas(void **st) {
    (void)st;
    assert_int_equal(run_ptxas(rt_builtin_ptx()), 0);
    assert_int_equal(run_ptxas(rt_test_ptx), 0);
    assert_int_not_equal(run_ptxas(rt_bad_ptx), 0);
}

int main(void) {
    const char *stub = getenv("MINITIR_TEST_CUDA_STUB");
    const char *ptxas = getenv("MINITIR_TEST_PTXAS");
    bool have_stub = stub && *stub && access(stub, R_OK) == 0;
    bool have_ptxas = ptxas && *ptxas && access(ptxas, X_OK) == 0;
    struct CMUnitTest all[] = {
        cmocka_unit_test(test_status_names),
        cmocka_unit_test(test_no_driver),
        cmocka_unit_test(test_jit_level_args),
        cmocka_unit_test(test_stub_driver),
        cmocka_unit_test(test_no_cublas),
        cmocka_unit_test(test_cublas_probe_default),
        cmocka_unit_test(test_rng),
        cmocka_unit_test(test_f16_conversions),
        cmocka_unit_test(test_bf16_conversions),
        cmocka_unit_test(test_fill_random),
        cmocka_unit_test(test_poison_and_compare),
        cmocka_unit_test(test_gemm_ref),
        cmocka_unit_test(test_tolerances),
        cmocka_unit_test(test_epilogue_ref),
        cmocka_unit_test(test_bench_stats),
        cmocka_unit_test(test_bench_fake_clock),
        cmocka_unit_test(test_bench_hold),
        cmocka_unit_test(test_ptxas),
    };
    /* Leave out what this machine cannot check (the CUDA toolkit's stub
       library, ptxas), saying so. */
    struct CMUnitTest tests[sizeof all / sizeof all[0]];
    size_t n = 0;
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        if (all[i].test_func == test_stub_driver && !have_stub) {
            printf("# not run here: test_stub_driver (no CUDA stub library)\n");
            continue;
        }
        if (all[i].test_func == test_ptxas && !have_ptxas) {
            printf("# not run here: test_ptxas (no ptxas)\n");
            continue;
        }
        tests[n++] = all[i];
    }
    return _cmocka_run_group_tests("runtime_nogpu", tests, n, NULL, NULL);
}
