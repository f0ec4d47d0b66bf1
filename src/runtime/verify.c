/* verify.c: host-side helpers for checking GPU results: a seeded random
 * generator, float16/bfloat16 conversions, NaN poison, the relative
 * Frobenius error and its verdict, per-kind GEMM tolerances and a float64
 * GEMM reference.  None of it needs a GPU.
 *
 * Why these choices: zeros or small integers as inputs hide indexing bugs
 * (many wrong sums are still right), so inputs are random; an output
 * element a kernel forgot to write must fail, so outputs start as NaN and
 * NaN never compares as close; one relative norm over the whole matrix is
 * robust to the cancellation that makes per-element relative errors
 * meaningless near zero.
 */
#include <math.h>
#include <string.h>

#include "rt_internal.h"

/* ---------------------------------------------------------------- random */

tir_rt_rng tir_rt_rng_seed(uint64_t seed) {
    /* splitmix64 spreads similar seeds apart and never yields the all-zero
       state xorshift cannot leave. */
    uint64_t z = seed + 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (tir_rt_rng){z ? z : 0x2545F4914F6CDD1Dull};
}

uint64_t tir_rt_rng_next(tir_rt_rng *r) {
    uint64_t x = r->state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    r->state = x;
    return x * 0x2545F4914F6CDD1Dull;
}

float tir_rt_rng_uniform(tir_rt_rng *r) {
    /* The top 24 bits, k in [0, 2^24): k / 2^23 - 1 is exact in float. */
    uint32_t k = (uint32_t)(tir_rt_rng_next(r) >> 40);
    return (float)k * 0x1p-23f - 1.0f;
}

/* ------------------------------------------------------------ conversions */

/* The IR layer's rounding, so the interpreter, the runtime and the tests
 * agree to the bit (a float converts to double exactly). */
uint16_t tir_rt_f32_to_f16(float f) { return ir_f16_from_double(f); }
float tir_rt_f16_to_f32(uint16_t h) { return ir_f16_to_float(h); }
uint16_t tir_rt_f32_to_bf16(float f) { return ir_bf16_from_double(f); }
float tir_rt_bf16_to_f32(uint16_t h) { return ir_bf16_to_float(h); }

/* ----------------------------------------------------------- fill, poison */

static bool float_dtype(tir_dtype t) {
    return tir_dtype_eq(t, TIR_F32) || tir_dtype_eq(t, TIR_F64) || tir_dtype_eq(t, TIR_F16) ||
           tir_dtype_eq(t, TIR_BF16);
}

static tir_status not_float(tir_ctx *ctx, const char *what, tir_dtype t) {
    char buf[32];
    return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG,
                        "%s: dtype %s is not float32, float64, float16 or bfloat16", what,
                        tir_dtype_str(t, buf, sizeof buf));
}

tir_status tir_rt_fill_random(tir_ctx *ctx, tir_dtype t, void *data, size_t n, uint64_t seed) {
    if (!float_dtype(t)) return not_float(ctx, "fill_random", t);
    tir_rt_rng r = tir_rt_rng_seed(seed);
    for (size_t i = 0; i < n; i++) {
        float v = tir_rt_rng_uniform(&r);
        if (t.bits == 32) ((float *)data)[i] = v;
        else if (t.bits == 64) ((double *)data)[i] = v;
        else if (t.code == TIR_TYPE_BFLOAT) ((uint16_t *)data)[i] = tir_rt_f32_to_bf16(v);
        else ((uint16_t *)data)[i] = tir_rt_f32_to_f16(v);
    }
    return TIR_OK;
}

void tir_rt_poison(void *data, size_t bytes) { memset(data, 0xff, bytes); }

static double load_f64(tir_dtype t, const void *p, size_t i) {
    if (t.bits == 32) return ((const float *)p)[i];
    if (t.bits == 64) return ((const double *)p)[i];
    if (t.code == TIR_TYPE_BFLOAT) return tir_rt_bf16_to_f32(((const uint16_t *)p)[i]);
    return tir_rt_f16_to_f32(((const uint16_t *)p)[i]);
}

tir_status tir_rt_to_f64(tir_ctx *ctx, tir_dtype t, const void *src, size_t n, double *dst) {
    if (!float_dtype(t)) return not_float(ctx, "to_f64", t);
    for (size_t i = 0; i < n; i++) dst[i] = load_f64(t, src, i);
    return TIR_OK;
}

/* ---------------------------------------------------------------- compare */

tir_status tir_rt_compare(tir_ctx *ctx, tir_dtype t, const void *out, const double *ref,
                          size_t n, tir_rt_error_stats *st) {
    memset(st, 0, sizeof *st);
    st->max_abs_index = st->first_nonfinite = -1;
    if (!float_dtype(t)) return not_float(ctx, "compare", t);
    double diff2 = 0, ref2 = 0;
    for (size_t i = 0; i < n; i++) {
        double r = ref[i], o = load_f64(t, out, i);
        if (!isfinite(r))
            return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG,
                                "compare: reference element %zu is %g: the reference is broken",
                                i, r);
        ref2 += r * r;
        if (!isfinite(o)) {
            if (st->nonfinite++ == 0) st->first_nonfinite = (int64_t)i;
            continue;
        }
        double d = fabs(o - r);
        diff2 += d * d;
        if (st->max_abs_index < 0 || d > st->max_abs_err) {
            st->max_abs_err = d;
            st->max_abs_index = (int64_t)i;
        }
    }
    st->ref_norm = sqrt(ref2);
    if (st->nonfinite) st->rel_err = INFINITY;
    else st->rel_err = st->ref_norm > 0 ? sqrt(diff2) / st->ref_norm : sqrt(diff2);
    return TIR_OK;
}

tir_status tir_rt_check(tir_ctx *ctx, const char *what, tir_dtype t, const void *out,
                        const double *ref, int64_t rows, int64_t cols, double tol,
                        tir_rt_error_stats *st_out) {
    tir_rt_error_stats st;
    if (rows < 0 || cols < 1)
        return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG, "check %s: bad shape %lld x %lld",
                            what ? what : "", (long long)rows, (long long)cols);
    tir_status s = tir_rt_compare(ctx, t, out, ref, (size_t)rows * (size_t)cols, &st);
    if (st_out) *st_out = st;
    if (s != TIR_OK) return s;
    if (!what) what = "output";
    if (st.nonfinite) {
        int64_t i = st.first_nonfinite;
        return tir_ctx_fail(ctx, TIR_ERR_VERIFY_MISMATCH,
                            "verify %s: %lld of %lld elements are NaN or infinite (first at "
                            "[%lld, %lld]: got %g, expected %.9g): never written, or overflowed",
                            what, (long long)st.nonfinite, (long long)(rows * cols),
                            (long long)(i / cols), (long long)(i % cols),
                            load_f64(t, out, (size_t)i), ref[i]);
    }
    if (!(st.rel_err <= tol)) {
        int64_t i = st.max_abs_index;
        return tir_ctx_fail(ctx, TIR_ERR_VERIFY_MISMATCH,
                            "verify %s: relative error %.3e exceeds the tolerance %.1e (largest "
                            "difference %.3e at [%lld, %lld]: got %.9g, expected %.9g)",
                            what, st.rel_err, tol, st.max_abs_err, (long long)(i / cols),
                            (long long)(i % cols), load_f64(t, out, (size_t)i), ref[i]);
    }
    return TIR_OK;
}

double tir_rt_gemm_tolerance(tir_rt_gemm_kind kind, int64_t K) {
    double base;
    switch (kind) {
    case TIR_RT_GEMM_F16:
    case TIR_RT_GEMM_BF16: base = 1e-4; break;
    case TIR_RT_GEMM_TF32: base = 5e-3; break;
    default: base = 1e-5; break;
    }
    return K > 8192 ? base * sqrt((double)K / 8192.0) : base;
}

/* ------------------------------------------------------------- references */

tir_status tir_rt_gemm_ref(tir_ctx *ctx, tir_dtype in, int64_t M, int64_t N, int64_t K,
                           const void *A, const void *B, tir_rt_b_layout layout, double *C) {
    if (!float_dtype(in)) return not_float(ctx, "gemm_ref", in);
    if (M < 1 || N < 1 || K < 1)
        return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG, "gemm_ref: sizes must be positive");
    if (layout != TIR_RT_B_KN && layout != TIR_RT_B_NK)
        return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG, "gemm_ref: unknown B layout");
    size_t mk = (size_t)M * (size_t)K, kn = (size_t)K * (size_t)N;
    double *a = malloc(mk * sizeof *a), *b = malloc(kn * sizeof *b);
    if (!a || !b) {
        free(a);
        free(b);
        return tir_ctx_fail(ctx, TIR_ERR_NOMEM, "gemm_ref: out of host memory");
    }
    for (size_t i = 0; i < mk; i++) a[i] = load_f64(in, A, i);
    for (size_t i = 0; i < kn; i++) b[i] = load_f64(in, B, i);
    for (int64_t i = 0; i < M; i++) {
        double *c = C + i * N;
        const double *ai = a + i * K;
        if (layout == TIR_RT_B_NK) {
            for (int64_t j = 0; j < N; j++) {
                const double *bj = b + j * K;
                double acc = 0;
                for (int64_t k = 0; k < K; k++) acc += ai[k] * bj[k];
                c[j] = acc;
            }
        } else {
            /* i-k-j order walks B and C by rows. */
            for (int64_t j = 0; j < N; j++) c[j] = 0;
            for (int64_t k = 0; k < K; k++) {
                const double aik = ai[k], *bk = b + k * N;
                for (int64_t j = 0; j < N; j++) c[j] += aik * bk[j];
            }
        }
    }
    free(a);
    free(b);
    return TIR_OK;
}

void tir_rt_bias_epilogue_ref(int64_t M, int64_t N, const float *C, const float *bias, float *D,
                              const tir_rt_epilogue *epi) {
    float lo = -INFINITY, hi = INFINITY;
    if (epi->kind == TIR_RT_EPI_BIAS_RELU) lo = 0.0f;
    if (epi->kind == TIR_RT_EPI_BIAS_CLIP) {
        lo = epi->lo;
        hi = epi->hi;
    }
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            /* One float32 rounding, as add.rn.f32 on the device; NaN stays
               NaN through the clamps, as max.NaN / min.NaN. */
            float y = C[i * N + j] + bias[j];
            if (!isnan(y)) {
                if (y < lo) y = lo;
                if (y > hi) y = hi;
            }
            D[i * N + j] = y;
        }
}
