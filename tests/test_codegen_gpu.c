/* Runs every hand-built codegen test kernel (tests/cg_kernels.c) on the GPU
 * and compares with the reference interpreter (or, for the kernels whose
 * threads cooperate through shared memory, with the kernel's definition),
 * and the tensor-core kernels (tests/cg_tc_kernels.c) against a host
 * product.
 * Suite gpu: prints "1..0 # SKIP" without a CUDA device. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "cg_kernels.h"
#include "cg_tc_kernels.h"
#include "minitir/codegen.h"
#include "minitir/lower.h"
#include "minitir/runtime.h"
#include "minitir/tune.h"

static tir_rt_device *dev;

static bool has_shared(const tir_prim_func *f);

/* Elements of a 1-D buffer parameter; a symbolic extent is the scalar
 * parameter that defines it (SYM_N in these tests). */
#define SYM_N 1000
static int64_t buf_elems(const tir_buffer *b) {
    int64_t n = tir_buffer_const_size(b);
    return n >= 0 ? n : SYM_N;
}
static bool shared_pre(tir_visitor *v, const tir_node *n) {
    const tir_allocate *a = tir_as_tir_allocate(n);
    if (a && a->buffer->scope == TIR_SCOPE_SHARED) *(bool *)v->user = true;
    return true;
}
static bool has_shared(const tir_prim_func *f) {
    bool found = false;
    tir_visitor v = {shared_pre, NULL, &found};
    tir_visit(&v, f);
    return found;
}

static void fill(tir_rt_rng *r, tir_dtype t, void *data, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        float u = tir_rt_rng_uniform(r); /* [-1, 1) */
        float pos = 0.1f + 1.9f * (u + 1.0f) * 0.5f;
        if (t.code == TIR_TYPE_FLOAT && t.bits == 32) ((float *)data)[i] = pos;
        else if (t.code == TIR_TYPE_FLOAT && t.bits == 64) ((double *)data)[i] = pos;
        else if (t.code == TIR_TYPE_FLOAT && t.bits == 16) ((uint16_t *)data)[i] = tir_rt_f32_to_f16(u * 4);
        else if (t.code == TIR_TYPE_BFLOAT) ((uint16_t *)data)[i] = tir_rt_f32_to_bf16(u * 4);
        else if (t.code == TIR_TYPE_INT && t.bits == 32) {
            int32_t v = (int32_t)(u * 1000.0f);
            /* never 0: int32 buffers serve as divisors (floor_ops) */
            ((int32_t *)data)[i] = v == 0 ? 7 : v;
        } else
            fail_msg("unexpected dtype in a test kernel");
    }
}

static double as_f64(tir_dtype t, const void *data, int64_t i) {
    if (t.code == TIR_TYPE_FLOAT && t.bits == 32) return ((const float *)data)[i];
    if (t.code == TIR_TYPE_FLOAT && t.bits == 64) return ((const double *)data)[i];
    if (t.code == TIR_TYPE_FLOAT && t.bits == 16) return tir_rt_f16_to_f32(((const uint16_t *)data)[i]);
    if (t.code == TIR_TYPE_BFLOAT) return tir_rt_bf16_to_f32(((const uint16_t *)data)[i]);
    return ((const int32_t *)data)[i];
}

/* Runs f on the GPU with inputs `host` (one array per parameter, scalars in
 * scalar[]) and copies every buffer back into out[]. */
static void run_gpu(tir_ctx *ctx, const tir_prim_func *f, void **host, const int64_t *scalar,
                    void **out, double *compile_ms) {
    const tir_module *m = NULL;
    assert_int_equal(tir_codegen(ctx, f, NULL, &m), TIR_OK);
    *compile_ms = m->compile_ms;
    tir_rt_program *p = NULL;
    if (tir_rt_program_create(ctx, dev, m, &p) != TIR_OK) fail_msg("%s", tir_ctx_error(ctx));
    tir_rt_arg args[16];
    tir_rt_ptr ptrs[16] = {0};
    for (int i = 0; i < f->nparams; i++) {
        const tir_buffer *b = f->buffer_map[i];
        if (!b) {
            args[i] = tir_rt_arg_i32((int32_t)scalar[i]);
            continue;
        }
        size_t bytes = (size_t)buf_elems(b) * tir_dtype_bytes(b->dtype);
        assert_int_equal(tir_rt_alloc(ctx, dev, bytes, &ptrs[i]), TIR_OK);
        assert_int_equal(tir_rt_copy_h2d(ctx, dev, ptrs[i], host[i], bytes), TIR_OK);
        args[i] = tir_rt_arg_ptr(ptrs[i]);
    }
    if (tir_rt_program_launch(ctx, p, f->nparams, args) != TIR_OK ||
        tir_rt_sync(ctx, dev) != TIR_OK)
        fail_msg("%s: %s", f->name, tir_ctx_error(ctx));
    for (int i = 0; i < f->nparams; i++) {
        const tir_buffer *b = f->buffer_map[i];
        if (!b) continue;
        size_t bytes = (size_t)buf_elems(b) * tir_dtype_bytes(b->dtype);
        assert_int_equal(tir_rt_copy_d2h(ctx, dev, out[i], ptrs[i], bytes), TIR_OK);
        tir_rt_free(ctx, dev, ptrs[i]);
    }
    tir_rt_program_destroy(p);
}

/* Every entry: GPU vs interpreter (or the definition, for shared-memory
 * kernels, whose threads the sequential interpreter cannot run). */
static void test_kernels(void **st) {
    (void)st;
    printf("# %-22s %8s %12s %10s\n", "kernel", "elements", "max rel err", "compile ms");
    for (int e = 0; e < ck_nentries; e++) {
        tir_ctx *ctx = tir_ctx_create();
        const tir_prim_func *f = ck_entries[e].build(ctx);
        assert_non_null(f);
        tir_rt_rng rng = tir_rt_rng_seed(1234 + (uint64_t)e);
        void *in[16] = {0}, *ref[16] = {0}, *gpu[16] = {0};
        int64_t scalar[16] = {0};
        tir_arg iargs[16];
        int64_t nelem_out = 0;
        for (int i = 0; i < f->nparams; i++) {
            const tir_buffer *b = f->buffer_map[i];
            if (!b) {
                /* vector_add_sym: n = 1000 (not a multiple of the block). */
                scalar[i] = SYM_N;
                iargs[i].scalar = scalar[i];
                continue;
            }
            int64_t n = buf_elems(b);
            size_t bytes = (size_t)n * tir_dtype_bytes(b->dtype);
            in[i] = malloc(bytes);
            ref[i] = malloc(bytes);
            gpu[i] = malloc(bytes);
            fill(&rng, b->dtype, in[i], n);
            memcpy(ref[i], in[i], bytes);
            iargs[i].data = ref[i];
        }
        bool shared = has_shared(f);
        const char *name = ck_entries[e].name;
        bool is_mm = strncmp(name, "matmul_", 7) == 0;
        if (!shared && !is_mm) {
            if (tir_interp_run(ctx, f, f->nparams, iargs, NULL) != TIR_OK)
                fail_msg("%s: interpreter: %s", name, tir_ctx_error(ctx));
        } else if (is_mm) {
            /* The interpreter is too slow for the table's 1024^3 matmuls;
               lowered buffers are 1-D and both matmuls are square. */
            int64_t M = (int64_t)llround(sqrt((double)buf_elems(f->buffer_map[0])));
            int64_t K = M, N = M;
            assert_int_equal(M * M, buf_elems(f->buffer_map[0]));
            const float *a = in[0], *b = in[1];
            float *c = ref[2];
            for (int64_t i = 0; i < M; i++)
                for (int64_t j = 0; j < N; j++) {
                    double acc = 0;
                    for (int64_t k = 0; k < K; k++) acc += (double)a[i * K + k] * b[k * N + j];
                    c[i * N + j] = (float)acc;
                }
        } else if (strncmp(name, "cp_async", 8) == 0) {
            int64_t n = tir_buffer_const_size(f->buffer_map[0]);
            const float *a = in[0];
            float *b = ref[1];
            for (int64_t blk = 0; blk < n / 1024; blk++)
                for (int t = 0; t < 256; t++)
                    for (int j = 0; j < 4; j++)
                        b[blk * 1024 + 4 * t + j] = a[blk * 1024 + 4 * (255 - t) + j];
        } else
            fail_msg("%s: no reference for a shared-memory kernel", name);
        double ms = 0;
        run_gpu(ctx, f, in, scalar, gpu, &ms);
        double worst = 0;
        for (int i = 0; i < f->nparams; i++) {
            const tir_buffer *b = f->buffer_map[i];
            if (!b) continue;
            int64_t n = buf_elems(b);
            bool exact = tir_dtype_is_int(b->dtype);
            double tol = b->dtype.bits == 16 ? 1e-2 : (strncmp(name, "math", 4) == 0 ? 2e-6 : 1e-5);
            if (b->dtype.bits == 64) tol = strncmp(name, "math", 4) == 0 ? 1e-14 : 1e-12;
            for (int64_t k = 0; k < n; k++) {
                double r = as_f64(b->dtype, ref[i], k), g = as_f64(b->dtype, gpu[i], k);
                if (exact) {
                    if (r != g) fail_msg("%s: %s[%lld] = %g on the GPU, %g expected", name, b->name, (long long)k, g, r);
                    continue;
                }
                double err = fabs(r - g) / fmax(fabs(r), 1.0);
                if (!(err <= tol))
                    fail_msg("%s: %s[%lld] = %.9g on the GPU, %.9g expected", name, b->name, (long long)k, g, r);
                if (err > worst) worst = err;
            }
            nelem_out += n;
        }
        printf("# %-22s %8lld %12.3g %10.2f\n", name, (long long)nelem_out, worst, ms);
        for (int i = 0; i < 16; i++) {
            free(in[i]);
            free(ref[i]);
            free(gpu[i]);
        }
        tir_ctx_destroy(ctx);
    }
}

/* One warp's mma_sync (bf16, f16, tf32), fragments loaded per lane from
 * global memory or with ldmatrix from shared memory, against
 * tcg_reference: the products are exact on both sides, the GPU sums in
 * float32 in its own order (relative 1e-5 of max(|ref|, 1)). */
static void test_tc_kernels(void **st) {
    (void)st;
    const tcg_opts v[] = {
        {.in = TIR_BF16, .K = 32, .ntiles = 1},
        {.in = TIR_F16, .K = 32, .ntiles = 2, .unroll_k = true},
        {.in = TIR_F32, .K = 16, .ntiles = 1},
        {.in = TIR_F32, .K = 32, .ntiles = 2, .unroll_k = true},
        {.in = TIR_BF16, .K = 48, .ntiles = 2, .shared = true},
        {.in = TIR_F16, .K = 32, .ntiles = 1, .shared = true, .a_x1 = true, .unroll_k = true},
    };
    for (size_t e = 0; e < sizeof v / sizeof v[0]; e++) {
        tir_ctx *ctx = tir_ctx_create();
        const tir_prim_func *f = tcg_mma(ctx, &v[e]);
        tir_rt_rng rng = tir_rt_rng_seed(777 + (uint64_t)e);
        void *in[3], *gpu[3];
        float *val[3];
        for (int i = 0; i < 3; i++) {
            const tir_buffer *b = f->buffer_map[i];
            int64_t n = buf_elems(b);
            in[i] = malloc((size_t)n * tir_dtype_bytes(b->dtype));
            gpu[i] = malloc((size_t)n * tir_dtype_bytes(b->dtype));
            val[i] = malloc((size_t)n * sizeof(float));
            fill(&rng, b->dtype, in[i], n);
            for (int64_t k = 0; k < n; k++) val[i][k] = (float)as_f64(b->dtype, in[i], k);
        }
        tcg_reference(&v[e], val[0], val[1], val[2]);
        double ms = 0, worst = 0;
        int64_t scalar[3] = {0};
        run_gpu(ctx, f, in, scalar, gpu, &ms);
        const float *c = gpu[2];
        for (int64_t k = 0; k < buf_elems(f->buffer_map[2]); k++) {
            double err = fabs(val[2][k] - c[k]) / fmax(fabs(val[2][k]), 1.0);
            if (!(err <= 1e-5))
                fail_msg("tc variant %zu: C[%lld] = %.9g on the GPU, %.9g expected", e,
                         (long long)k, c[k], val[2][k]);
            if (err > worst) worst = err;
        }
        printf("# tc variant %zu (%s, K %lld, %d n tiles%s): max rel err %.3g, compile %.2f ms\n",
               e, tir_dtype_eq(v[e].in, TIR_F32) ? "tf32" : tir_dtype_eq(v[e].in, TIR_F16) ? "f16" : "bf16",
               (long long)v[e].K, v[e].ntiles, v[e].shared ? ", ldmatrix" : "", worst, ms);
        for (int i = 0; i < 3; i++) {
            free(in[i]);
            free(gpu[i]);
            free(val[i]);
        }
        tir_ctx_destroy(ctx);
    }
}

/* TF32 by wgmma (tir_tc_config.wgmma): the rule's kernel on the GPU
 * against the interpreter's run of the tensorized function, whose wgmma
 * truncates the shared operand and rounds the register one as the tensor
 * core does: a relative 1e-4 of max(|ref|, 1) leaves room for the GPU's
 * float32 sums and none for a lane or layout mistake (an O(1) error) or
 * for rounding A to nearest instead (about 1e-3 at K = 96).  Skipped on a
 * GPU before sm_90. */
static void test_wgmma_kernels(void **st) {
    (void)st;
    const tir_rt_props *pr = tir_rt_device_props(dev);
    if (pr->cc_major != 9) {
        printf("# wgmma: sm_%d%d is not sm_90, skipped\n", pr->cc_major, pr->cc_minor);
        return;
    }
    static const struct {
        int64_t M, N, K;
        int bm, bn, warps_n, stages;
    } v[] = {{128, 128, 96, 128, 128, 4, 3}, {128, 256, 64, 64, 256, 8, 2},
             {256, 128, 96, 256, 64, 4, 2}};
    for (size_t e = 0; e < sizeof v / sizeof v[0]; e++) {
        tir_ctx *ctx = tir_ctx_create();
        const tir_prim_func *f = tir_def_matmul_mixed(ctx, v[e].M, v[e].N, v[e].K, TIR_F32, TIR_F32);
        tir_schedule *s;
        assert_int_equal(tir_sched_create(ctx, f, &s), TIR_OK);
        tir_tc_config c = tir_tc_config_default();
        c.wgmma = true, c.bm = v[e].bm, c.bn = v[e].bn, c.bk = 32, c.warps_m = 1;
        c.warps_n = v[e].warps_n, c.stages = v[e].stages;
        if (tir_tune_tc_tiling(s, "C", &c, NULL, NULL) != TIR_OK) fail_msg("%s", tir_ctx_error(ctx));
        const tir_prim_func *k;
        if (tir_lower(ctx, tir_sched_func(s), NULL, &k) != TIR_OK) fail_msg("%s", tir_ctx_error(ctx));
        size_t na = (size_t)(v[e].M * v[e].K), nb = (size_t)(v[e].K * v[e].N);
        size_t nc = (size_t)(v[e].M * v[e].N);
        float *a = malloc(4 * na), *b = malloc(4 * nb), *want = malloc(4 * nc);
        float *ga = malloc(4 * na), *gb = malloc(4 * nb), *gc = malloc(4 * nc);
        tir_rt_rng rng = tir_rt_rng_seed(900 + (uint64_t)e);
        fill(&rng, TIR_F32, a, (int64_t)na);
        fill(&rng, TIR_F32, b, (int64_t)nb);
        tir_arg args[3] = {{a, 0}, {b, 0}, {want, 0}};
        tir_interp_opts io = {.uninit_params = 4};
        if (tir_interp_run(ctx, tir_sched_func(s), 3, args, &io) != TIR_OK)
            fail_msg("%s", tir_ctx_error(ctx));
        void *in[3] = {a, b, want}, *out[3] = {ga, gb, gc};
        double ms = 0, worst = 0;
        int64_t scalar[3] = {0};
        run_gpu(ctx, k, in, scalar, out, &ms);
        for (size_t i = 0; i < nc; i++) {
            double err = fabs((double)want[i] - gc[i]) / fmax(fabs(want[i]), 1.0);
            if (!(err <= 1e-4))
                fail_msg("wgmma case %zu: C[%zu] = %.9g on the GPU, %.9g interpreted", e, i,
                         (double)gc[i], (double)want[i]);
            if (err > worst) worst = err;
        }
        printf("# wgmma case %zu (%lldx%lldx%lld, %dx%d tiles): max rel err %.3g\n", e,
               (long long)v[e].M, (long long)v[e].N, (long long)v[e].K, v[e].bm, v[e].bn, worst);
        free(a), free(b), free(want), free(ga), free(gb), free(gc);
        tir_sched_destroy(s);
        tir_ctx_destroy(ctx);
    }
}

int main(void) {
    tir_ctx *ctx = tir_ctx_create();
    tir_status s = tir_rt_device_create(ctx, 0, &dev);
    if (s != TIR_OK) {
        printf("1..0 # SKIP no CUDA device (%s)\n", tir_ctx_error(ctx));
        tir_ctx_destroy(ctx);
        return 0;
    }
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_kernels),
                                       cmocka_unit_test(test_tc_kernels),
                                       cmocka_unit_test(test_wgmma_kernels)};
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    tir_rt_device_destroy(dev);
    tir_ctx_destroy(ctx);
    return rc;
}
