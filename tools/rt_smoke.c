/* rt_smoke: a standalone check of the runtime on a real GPU.
 *
 *   rt_smoke [ordinal [N]]
 *
 * Opens the device and prints its properties, runs the vector-add PTX
 * kernel on 16 N^2 floats (checked, and timed as bandwidth), then each cuBLAS GEMM kind at
 * N x N x N (default 1024) checked against the GPU float64 reference
 * kernel and timed three ways (warm L2, L2 flushed before each sample, and
 * 20 back-to-back calls per sample), and the bias+ReLU epilogue on the
 * SGEMM result, checked bit for bit against the host.  Exit status 0 when
 * every check passed (or there is no GPU: then it says so), 1 otherwise.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "minitir/runtime.h"
#include "rt_test_kernels.h"

static tir_ctx *ctx;
static tir_rt_device *dev;
static int failures;

#define CHECK(call)                                                                       \
    do {                                                                                  \
        tir_status s_ = (call);                                                           \
        if (s_ != TIR_OK) {                                                               \
            fprintf(stderr, "rt_smoke: %s failed: %s: %s\n", #call, tir_status_name(s_),  \
                    tir_ctx_error(ctx));                                                  \
            exit(1);                                                                      \
        }                                                                                 \
    } while (0)

static void *xmalloc(size_t n) {
    void *p = malloc(n);
    if (!p) {
        fprintf(stderr, "rt_smoke: out of memory\n");
        exit(1);
    }
    return p;
}

static void verdict(bool ok, const char *what) {
    printf("  %-6s %s\n", ok ? "PASS" : "FAIL", what);
    failures += !ok;
}

static void print_props(void) {
    const tir_rt_props *p = tir_rt_device_props(dev);
    printf("device %d: %s (%s, compute capability %d.%d)\n", p->ordinal, p->name, p->arch,
           p->cc_major, p->cc_minor);
    printf("  driver             %d.%d\n", p->driver_version / 1000,
           p->driver_version % 1000 / 10);
    printf("  SMs                %d\n", p->sm_count);
    printf("  SM clock           %d MHz\n", p->clock_khz / 1000);
    printf("  memory             %.1f GiB, %d-bit bus, %d MHz\n",
           p->total_mem / (1024.0 * 1024 * 1024), p->mem_bus_bits, p->mem_clock_khz / 1000);
    printf("  L2                 %d KiB\n", p->l2_bytes / 1024);
    printf("  threads per block  %d (dims %d x %d x %d), per SM %d, warp %d\n",
           p->max_threads_per_block, p->max_block_dim[0], p->max_block_dim[1],
           p->max_block_dim[2], p->max_threads_per_sm, p->warp_size);
    printf("  grid               %d x %d x %d\n", p->max_grid_dim[0], p->max_grid_dim[1],
           p->max_grid_dim[2]);
    printf("  shared memory      %d B per block, %d B opt-in, %d B per SM\n", p->smem_per_block,
           p->smem_per_block_optin, p->smem_per_sm);
    printf("  registers          %d per block, %d per SM\n", p->max_regs_per_block,
           p->max_regs_per_sm);
    /* fp32 FMA throughput: 128 lanes per SM on sm_80 .. sm_90 */
    if (p->clock_khz > 0)
        printf("  fp32 peak          %.1f TFLOP/s (128 FMA/clk/SM at the reported clock)\n",
               p->sm_count * 128.0 * 2 * p->clock_khz * 1e3 / 1e12);
}

/* ------------------------------------------------------------ vector add */

typedef struct vadd_job {
    tir_rt_kernel *k;
    tir_rt_ptr a, b, c;
    unsigned n;
} vadd_job;

static tir_status vadd_launch(tir_ctx *c, void *user, int set) {
    (void)set;
    vadd_job *j = user;
    unsigned grid[3] = {(j->n + 255) / 256, 1, 1}, block[3] = {256, 1, 1};
    tir_rt_arg args[] = {tir_rt_arg_ptr(j->a), tir_rt_arg_ptr(j->b), tir_rt_arg_ptr(j->c),
                         tir_rt_arg_i32((int32_t)j->n)};
    return tir_rt_launch(c, j->k, grid, block, 0, 4, args);
}

static void run_vadd(unsigned n) {
    printf("\nvector add, %u floats\n", n);
    tir_rt_module *m;
    CHECK(tir_rt_module_create(ctx, dev, rt_test_ptx, &m));
    vadd_job j = {.n = n};
    CHECK(tir_rt_kernel_get(ctx, m, "vadd", &j.k));
    size_t bytes = (size_t)j.n * 4;
    float *a = xmalloc(bytes), *b = xmalloc(bytes), *c = xmalloc(bytes);
    double *ref = xmalloc(j.n * sizeof(double));
    CHECK(tir_rt_fill_random(ctx, TIR_F32, a, j.n, 1));
    CHECK(tir_rt_fill_random(ctx, TIR_F32, b, j.n, 2));
    for (unsigned i = 0; i < j.n; i++) ref[i] = (double)(a[i] + b[i]);
    CHECK(tir_rt_alloc(ctx, dev, bytes, &j.a));
    CHECK(tir_rt_alloc(ctx, dev, bytes, &j.b));
    CHECK(tir_rt_alloc(ctx, dev, bytes, &j.c));
    CHECK(tir_rt_copy_h2d(ctx, dev, j.a, a, bytes));
    CHECK(tir_rt_copy_h2d(ctx, dev, j.b, b, bytes));
    CHECK(tir_rt_memset8(ctx, dev, j.c, 0xff, bytes));
    CHECK(vadd_launch(ctx, &j, 0));
    CHECK(tir_rt_copy_d2h(ctx, dev, c, j.c, bytes));
    tir_rt_error_stats st;
    tir_status s = tir_rt_check(ctx, "vadd", TIR_F32, c, ref, 1, j.n, 0.0, &st);
    verdict(s == TIR_OK, s == TIR_OK ? "exact" : tir_ctx_error(ctx));
    tir_rt_bench_result warm, cold;
    CHECK(tir_rt_bench(ctx, dev, vadd_launch, &j, NULL, &warm));
    tir_rt_bench_opts o = TIR_RT_BENCH_DEFAULTS;
    o.flush_l2 = true;
    CHECK(tir_rt_bench(ctx, dev, vadd_launch, &j, &o, &cold));
    printf("  warm       median %.4f ms  min %.4f ms  %.0f GB/s\n", warm.median_ms, warm.min_ms,
           3.0 * bytes / (warm.median_ms * 1e6));
    printf("  L2 flushed median %.4f ms  min %.4f ms  %.0f GB/s\n", cold.median_ms, cold.min_ms,
           3.0 * bytes / (cold.median_ms * 1e6));
    tir_rt_module_destroy(m);
    CHECK(tir_rt_free(ctx, dev, j.a));
    CHECK(tir_rt_free(ctx, dev, j.b));
    CHECK(tir_rt_free(ctx, dev, j.c));
    free(a);
    free(b);
    free(c);
    free(ref);
}

/* ------------------------------------------------------------------ GEMM */

typedef struct gemm_job {
    tir_rt_blas *blas;
    tir_rt_gemm_kind kind;
    int64_t n;
    tir_rt_ptr A, B, C;
} gemm_job;

static tir_status gemm_launch(tir_ctx *c, void *user, int set) {
    (void)set;
    gemm_job *g = user;
    return tir_rt_blas_gemm(c, g->blas, g->kind, g->n, g->n, g->n, g->A, g->B, TIR_RT_B_KN,
                            g->C);
}

static void run_gemm(tir_rt_blas *blas, tir_rt_gemm_kind kind, int64_t n, bool epilogue) {
    tir_dtype in = tir_rt_gemm_kind_input(kind);
    size_t es = tir_dtype_bytes(in), nn = (size_t)(n * n);
    printf("\ncuBLAS gemm %s, %lld^3, row-major, B[K,N]\n", tir_rt_gemm_kind_name(kind),
           (long long)n);
    gemm_job g = {blas, kind, n, 0, 0, 0};
    void *hA = xmalloc(nn * es), *hB = xmalloc(nn * es);
    float *hC = xmalloc(nn * 4);
    double *ref = xmalloc(nn * 8);
    CHECK(tir_rt_fill_random(ctx, in, hA, nn, 10 + (uint64_t)kind));
    CHECK(tir_rt_fill_random(ctx, in, hB, nn, 20 + (uint64_t)kind));
    tir_rt_ptr dR;
    CHECK(tir_rt_alloc(ctx, dev, nn * es, &g.A));
    CHECK(tir_rt_alloc(ctx, dev, nn * es, &g.B));
    CHECK(tir_rt_alloc(ctx, dev, nn * 4, &g.C));
    CHECK(tir_rt_alloc(ctx, dev, nn * 8, &dR));
    CHECK(tir_rt_copy_h2d(ctx, dev, g.A, hA, nn * es));
    CHECK(tir_rt_copy_h2d(ctx, dev, g.B, hB, nn * es));
    CHECK(tir_rt_memset8(ctx, dev, g.C, 0xff, nn * 4));
    CHECK(tir_rt_memset8(ctx, dev, dR, 0xff, nn * 8));
    CHECK(gemm_launch(ctx, &g, 0));
    CHECK(tir_rt_gemm_ref_device(ctx, dev, in, n, n, n, g.A, g.B, TIR_RT_B_KN, dR));
    CHECK(tir_rt_copy_d2h(ctx, dev, hC, g.C, nn * 4));
    CHECK(tir_rt_copy_d2h(ctx, dev, ref, dR, nn * 8));
    double tol = tir_rt_gemm_tolerance(kind, n);
    tir_rt_error_stats st;
    tir_status s = tir_rt_check(ctx, "C", TIR_F32, hC, ref, n, n, tol, &st);
    char what[256];
    snprintf(what, sizeof what, "vs GPU float64 reference: rel err %.2e (tol %.0e)%s%s",
             st.rel_err, tol, s == TIR_OK ? "" : ": ", s == TIR_OK ? "" : tir_ctx_error(ctx));
    verdict(s == TIR_OK, what);

    tir_rt_bench_result r[3];
    tir_rt_bench_opts warm = TIR_RT_BENCH_DEFAULTS, cold = warm, b2b = warm;
    cold.flush_l2 = true;
    b2b.inner = 20;
    b2b.runs = 20;
    CHECK(tir_rt_bench(ctx, dev, gemm_launch, &g, &warm, &r[0]));
    CHECK(tir_rt_bench(ctx, dev, gemm_launch, &g, &cold, &r[1]));
    CHECK(tir_rt_bench(ctx, dev, gemm_launch, &g, &b2b, &r[2]));
    const char *label[] = {"warm L2", "L2 flushed", "20 back-to-back"};
    for (int i = 0; i < 3; i++)
        printf("  %-16s median %.4f ms (%.2f TFLOP/s)  min %.4f ms (%.2f TFLOP/s)  [%d runs]\n",
               label[i], r[i].median_ms, tir_rt_gemm_tflops(n, n, n, r[i].median_ms),
               r[i].min_ms, tir_rt_gemm_tflops(n, n, n, r[i].min_ms), r[i].runs);

    if (epilogue) {
        float *bias = xmalloc((size_t)n * 4), *want = xmalloc(nn * 4), *got = xmalloc(nn * 4);
        tir_rt_ptr dbias, dD;
        CHECK(tir_rt_fill_random(ctx, TIR_F32, bias, (size_t)n, 30));
        CHECK(tir_rt_alloc(ctx, dev, (size_t)n * 4, &dbias));
        CHECK(tir_rt_alloc(ctx, dev, nn * 4, &dD));
        CHECK(tir_rt_copy_h2d(ctx, dev, dbias, bias, (size_t)n * 4));
        CHECK(tir_rt_memset8(ctx, dev, dD, 0xff, nn * 4));
        tir_rt_epilogue relu = {TIR_RT_EPI_BIAS_RELU, 0, 0};
        CHECK(tir_rt_bias_epilogue(ctx, dev, n, n, g.C, dbias, dD, &relu));
        CHECK(tir_rt_copy_d2h(ctx, dev, got, dD, nn * 4));
        tir_rt_bias_epilogue_ref(n, n, hC, bias, want, &relu);
        size_t bad = 0;
        for (size_t i = 0; i < nn; i++) bad += !(got[i] == want[i]);
        snprintf(what, sizeof what, "bias+relu epilogue kernel: %zu of %zu differ from the host",
                 bad, nn);
        verdict(bad == 0, what);
        CHECK(tir_rt_free(ctx, dev, dbias));
        CHECK(tir_rt_free(ctx, dev, dD));
        free(bias);
        free(want);
        free(got);
    }
    CHECK(tir_rt_free(ctx, dev, g.A));
    CHECK(tir_rt_free(ctx, dev, g.B));
    CHECK(tir_rt_free(ctx, dev, g.C));
    CHECK(tir_rt_free(ctx, dev, dR));
    free(hA);
    free(hB);
    free(hC);
    free(ref);
}

int main(int argc, char **argv) {
    int ordinal = argc > 1 ? atoi(argv[1]) : 0;
    int64_t n = argc > 2 ? atoll(argv[2]) : 1024;
    if (n < 1 || n > 16384) {
        fprintf(stderr, "usage: rt_smoke [ordinal [N <= 16384]]\n");
        return 2;
    }
    ctx = tir_ctx_create();
    if (!ctx) return 1;
    tir_status s = tir_rt_device_create(ctx, ordinal, &dev);
    if (s == TIR_ERR_NO_DRIVER || s == TIR_ERR_NO_DEVICE) {
        printf("SKIP: no CUDA device (%s): %s\n", tir_status_name(s), tir_ctx_error(ctx));
        tir_ctx_destroy(ctx);
        return 0;
    }
    CHECK(s);
    print_props();
    /* 16M floats for N = 1024 */
    run_vadd((unsigned)(16 * n * n < ((int64_t)1 << 26) ? 16 * n * n : (int64_t)1 << 26));
    int version = 0;
    tir_rt_blas *blas = NULL;
    s = tir_rt_blas_probe(ctx, &version);
    if (s == TIR_OK) s = tir_rt_blas_create(ctx, dev, &blas);
    if (s != TIR_OK) {
        printf("\ncuBLAS: not available: %s\n", tir_ctx_error(ctx));
        failures++;
    } else {
        printf("\ncuBLAS %d.%d.%d\n", version / 10000, version / 100 % 100, version % 100);
        run_gemm(blas, TIR_RT_GEMM_F32, n, true);
        run_gemm(blas, TIR_RT_GEMM_F32_PEDANTIC, n, false);
        run_gemm(blas, TIR_RT_GEMM_TF32, n, false);
        run_gemm(blas, TIR_RT_GEMM_BF16, n, false);
        run_gemm(blas, TIR_RT_GEMM_F16, n, false);
    }
    printf("\n%s: %d check%s failed\n", failures ? "FAILED" : "ALL PASSED", failures,
           failures == 1 ? "" : "s");
    tir_rt_device_destroy(dev);
    tir_ctx_destroy(ctx);
    return failures ? 1 : 0;
}
