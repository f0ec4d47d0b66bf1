/* tc_kernels.c: see tc_kernels.h.  The kernels are written as TVMScript
 * text (readable, and what tirc prints) and parsed. */
#include "tc_kernels.h"
#include "text_builder.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *finish(tir_ctx *ctx, tb *t) {
    const char *r = tir_intern(ctx, t->buf);
    free(t->buf);
    return r;
}

static const tir_prim_func *parse(tir_ctx *ctx, const char *text) {
    const tir_prim_func *f = NULL;
    if (!text || tir_parse_func(ctx, text, strlen(text), &f) != TIR_OK) return NULL;
    return f;
}

#define LANE "T.call_intrin(\"int32\", \"lane_id\")"
#define G "(" LANE " // 4)"
#define TT "(" LANE " % 4)"

static const char *dt_name(tir_dtype t) {
    return tir_dtype_eq(t, TIR_F32) ? "float32" : tir_dtype_eq(t, TIR_F16) ? "float16" : "bfloat16";
}

/* The tile row / column of register v (a loop variable) of this lane, as
 * in ir.h's tir_frag_row / tir_frag_col. */
static const char *const k16_a[2] = {G " + 8 * (v // 2 % 2)", "2 * " TT " + v % 2 + 8 * (v // 4)"};
static const char *const k16_b[2] = {"2 * " TT " + v % 2 + 8 * (v // 2)", G};
static const char *const k8_a[2] = {G " + 8 * (v % 2)", TT " + 4 * (v // 2)"};
static const char *const k8_b[2] = {TT " + 4 * v", G};
static const char *const acc[2] = {G " + 8 * (v // 2)", "2 * " TT " + v % 2"};

static void signature(tb *t, const char *name, tir_dtype dt, long long M, long long N,
                      long long K) {
    put(t, 0, "@T.prim_func");
    put(t, 0,
        "def %s(A: T.Buffer((%lld,), \"%s\"), B: T.Buffer((%lld,), \"%s\"), C: "
        "T.Buffer((%lld,), \"float32\")):",
        name, M * K, dt_name(dt), K * N, dt_name(dt), M * N);
}

static void mma_call(tb *t, int d, int flags) {
    if (flags & TCK_DIVERGE) put(t, d++, "if " LANE " < 16:");
    put(t, d,
        "T.call_intrin(\"void\", \"mma_sync\", T.address_of(Cf[0]), T.address_of(Af[0]), "
        "T.address_of(Bf[0]))");
}

/* Cf = 0 (d: indentation) */
static void zero_acc(tb *t, int d) {
    put(t, d, "for v in T.unroll(4):");
    put(t, d + 1, "Cf[v] = T.float32(0)");
}

/* C tile at (i0, j0) = Cf, per lane */
static void store_acc(tb *t, int d, const char *i0, const char *j0, long long N) {
    put(t, d, "for v in T.unroll(4):");
    put(t, d + 1, "C[(%s + %s) * %lld + %s + %s] = Cf[v]", i0, acc[0], N, j0, acc[1]);
}

const char *tck_mma_lanes_text(tir_ctx *ctx, tir_dtype dt, int grid_m, int warps_m, int warps_n,
                               int ksteps, int flags) {
    bool f32 = tir_dtype_eq(dt, TIR_F32);
    int kt = f32 ? 8 : 16, ra = f32 ? 4 : 8, rb = f32 ? 2 : 4;
    const char *const *la = f32 ? k8_a : k16_a, *const *lb = f32 ? k8_b : k16_b;
    long long M = 16LL * grid_m * warps_m, N = 8LL * warps_n, K = (long long)kt * ksteps;
    tb t = {0};
    signature(&t, "tc_mma_lanes", dt, M, N, K);
    put(&t, 1, "for bx in T.thread_binding(0, %d, thread=\"blockIdx.x\"):", grid_m);
    put(&t, 2, "for ty in T.thread_binding(0, %d, thread=\"threadIdx.y\"):", warps_m * warps_n);
    put(&t, 3, "for tx in T.thread_binding(0, %d, thread=\"threadIdx.x\"):",
        flags & TCK_HALF_WARP ? 16 : 32);
    put(&t, 4, "Af = T.allocate((%d,), \"%s\", \"local\")", ra, dt_name(dt));
    put(&t, 4, "Bf = T.allocate((%d,), \"%s\", \"local\")", rb, dt_name(dt));
    put(&t, 4, "Cf = T.allocate((4,), \"float32\", \"local\")");
    char i0[96], j0[64];
    snprintf(i0, sizeof i0, "(bx * %d + ty // %d * 16)", 16 * warps_m, warps_n);
    snprintf(j0, sizeof j0, "(ty %% %d * 8)", warps_n);
    zero_acc(&t, 4);
    put(&t, 4, "for ko in T.serial(%d):", ksteps);
    put(&t, 5, "for v in T.unroll(%d):", ra);
    put(&t, 6, "Af[v] = A[(%s + %s) * %lld + ko * %d + %s]", i0, la[0], K, kt, la[1]);
    put(&t, 5, "for v in T.unroll(%d):", rb);
    put(&t, 6, "Bf[v] = B[(ko * %d + %s) * %lld + %s + %s]", kt, lb[0], N, j0, lb[1]);
    mma_call(&t, 5, flags);
    store_acc(&t, 4, i0, j0, N);
    return finish(ctx, &t);
}

const tir_prim_func *tck_mma_lanes(tir_ctx *ctx, tir_dtype t, int grid_m, int warps_m,
                                   int warps_n, int ksteps, int flags) {
    return parse(ctx, tck_mma_lanes_text(ctx, t, grid_m, warps_m, warps_n, ksteps, flags));
}

const char *tck_mma_ldmatrix_text(tir_ctx *ctx, tir_dtype dt, int flags) {
    const char *d = dt_name(dt);
    /* float32 (TF32): A 16x8 by ldmatrix.x4 of 4-float rows, B 8x8 per
     * lane (no .trans of 32-bit elements) */
    bool f32 = tir_dtype_eq(dt, TIR_F32);
    int kt = f32 ? 8 : 16;
    tb t = {0};
    signature(&t, "tc_mma_ldmatrix", dt, 16, 8, kt);
    put(&t, 1, "for tx in T.thread_binding(0, %d, thread=\"threadIdx.x\"):",
        flags & TCK_HALF_WARP ? 16 : 32);
    put(&t, 2, "As = T.allocate((%d,), \"%s\", \"shared\")", 16 * kt, d);
    put(&t, 2, "Bs = T.allocate((%d,), \"%s\", \"shared\")", 8 * kt, d);
    put(&t, 2, "Af = T.allocate((%d,), \"%s\", \"local\")", f32 ? 4 : 8, d);
    put(&t, 2, "Bf = T.allocate((%d,), \"%s\", \"local\")", f32 ? 2 : 4, d);
    put(&t, 2, "Cf = T.allocate((4,), \"float32\", \"local\")");
    if (!(flags & TCK_NO_COPY)) {
        put(&t, 2, "for i in T.serial(%d):", kt / 2);
        put(&t, 3, "As[i * 32 + tx] = A[i * 32 + tx]");
    }
    put(&t, 2, "for i in T.serial(%d):", kt / 4);
    put(&t, 3, "Bs[i * 32 + tx] = B[i * 32 + tx]");
    put(&t, 2, "T.syncthreads()");
    if (flags & TCK_RACE) {
        put(&t, 2, "if " LANE " == 0:");
        put(&t, 3, "As[80] = A[0]");
    }
    put(&t, 2,
        "T.call_intrin(\"void\", \"ldmatrix\", %d, 4, T.address_of(Af[0]), T.address_of(%s[("
        LANE " %% 16) * %d + %d * (" LANE " // 16)%s]))",
        flags & TCK_A_TRANS ? 1 : 0, flags & TCK_LDM_GLOBAL ? "A" : "As", kt, kt / 2,
        flags & TCK_MISALIGN ? " + 1" : "");
    if (f32) {
        put(&t, 2, "for v in T.unroll(2):");
        put(&t, 3, "Bf[v] = Bs[(%s) * 8 + %s]", k8_b[0], k8_b[1]);
    } else {
        put(&t, 2,
            "T.call_intrin(\"void\", \"ldmatrix\", 1, 2, T.address_of(Bf[0]), T.address_of(Bs[("
            LANE " %% 16) * 8]))");
    }
    zero_acc(&t, 2);
    mma_call(&t, 2, flags);
    store_acc(&t, 2, "0", "0", 8);
    return finish(ctx, &t);
}

const tir_prim_func *tck_mma_ldmatrix(tir_ctx *ctx, tir_dtype t, int flags) {
    return parse(ctx, tck_mma_ldmatrix_text(ctx, t, flags));
}

uint16_t tck_to_half(double v, bool bf16) {
    if (v == 0) return 0;
    uint16_t sign = v < 0 ? 0x8000 : 0;
    int e;
    double m = frexp(fabs(v), &e); /* |v| = m 2^e, m in [0.5, 1) */
    int mbits = bf16 ? 7 : 10, bias = bf16 ? 127 : 15;
    double frac = (m * 2 - 1) * (1 << mbits);
    if (frac != floor(frac) || e - 1 + bias <= 0 || e - 1 + bias >= (bf16 ? 255 : 31)) {
        fprintf(stderr, "tck_to_half: %g is not a normal %s\n", v, bf16 ? "bfloat16" : "float16");
        abort();
    }
    return (uint16_t)(sign | (uint16_t)((e - 1 + bias) << mbits) | (uint16_t)frac);
}

float tck_tf32(float x) {
    if (x == 0 || !isfinite(x)) return x;
    int e;
    (void)frexp(x, &e); /* |x| in [2^(e-1), 2^e) */
    /* TF32's ulp: 2^(e-11) for 11 significant bits; below the smallest
     * normal (e < -125) fixed at 2^-136, bit 13 of a subnormal float32. */
    int q = (e < -125 ? -125 : e) - 11;
    double s = ldexp(x, -q); /* exact: x in units of the ulp */
    double r = floor(s), f = s - r;
    if (f > 0.5 || (f == 0.5 && fmod(r, 2.0) != 0)) r += 1; /* ties to even */
    double y = ldexp(r, q);
    /* past the largest TF32 value (2^128 after rounding): Inf, made here
     * since converting an out-of-range double to float is undefined in C */
    return fabs(y) >= 0x1p128 ? copysignf(INFINITY, x) : (float)y;
}

void tck_ref_matmul(const float *a, const float *b, float *c, int M, int N, int K, bool tf32) {
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double s = 0;
            for (int k = 0; k < K; k++) {
                float x = a[i * K + k], y = b[k * N + j];
                if (tf32) {
                    x = tck_tf32(x);
                    y = tck_tf32(y);
                }
                s += (double)x * y;
            }
            c[i * N + j] = (float)s;
        }
}
