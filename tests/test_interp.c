/* Tests of the reference interpreter.
 *
 * Every ready definition runs on random inputs in every dtype, at tiny,
 * odd and medium shapes, against straightforward C loops that do the same
 * operations in the same order with the dtype's rounding (float math in
 * float, float16 / bfloat16 rounded after each operation, integers
 * wrapped).  Outputs must be equal bit for bit, floats included: the
 * interpreter promises the op order and precision of the definition, so
 * there is nothing to tolerate.  Then the semantics one by one (integer
 * wraparound and division, casts, 16-bit float rounding, vectors, init,
 * predicates, thread loops, cp_async), the errors (out of bounds, reads of
 * unwritten elements, division by zero, argument mistakes), and the
 * internal API a SIMT simulator would use (hooks, shared parameters,
 * thread-indexed loops). */
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "interp_internal.h"
#include "minitir/ir.h"

static int setup(void **st) {
    *st = tir_ctx_create();
    return *st ? 0 : -1;
}
static int teardown(void **st) {
    tir_ctx_destroy(*st);
    return 0;
}

static const tir_dtype all_types[9] = {TIR_BOOL, TIR_I8,   TIR_I32, TIR_I64, TIR_U8,
                                       TIR_F16,  TIR_BF16, TIR_F32, TIR_F64};

/* ================================================= reference arithmetic */

/* A value of any dtype: i for bool / ints, f (exactly representable in the
 * dtype) for floats. */
typedef union val {
    int64_t i;
    double f;
} val;

static bool isf(tir_dtype t) { return tir_dtype_is_float(t); }

static int64_t wrapi(tir_dtype t, int64_t v) {
    if (t.code == TIR_TYPE_BOOL) return v & 1;
    if (t.code == TIR_TYPE_UINT) return (uint8_t)v;
    if (t.bits == 8) return (int8_t)v;
    if (t.bits == 32) return (int32_t)v;
    return v;
}

static double rnd(tir_dtype t, float x) {
    if (t.code == TIR_TYPE_BFLOAT) return ir_bf16_to_float(ir_bf16_from_double(x));
    if (t.bits == 16) return ir_f16_to_float(ir_f16_from_double(x));
    return x;
}

static val r_add(tir_dtype t, val a, val b) {
    val r;
    if (!isf(t))
        r.i = wrapi(t, (int64_t)((uint64_t)a.i + (uint64_t)b.i));
    else if (t.bits == 64)
        r.f = a.f + b.f;
    else
        r.f = rnd(t, (float)a.f + (float)b.f);
    return r;
}

static val r_mul(tir_dtype t, val a, val b) {
    val r;
    if (!isf(t))
        r.i = wrapi(t, (int64_t)((uint64_t)a.i * (uint64_t)b.i));
    else if (t.bits == 64)
        r.f = a.f * b.f;
    else
        r.f = rnd(t, (float)a.f * (float)b.f);
    return r;
}

/* The reduction's (and the bias epilogue's) sum: Or for bool. */
static val r_acc(tir_dtype t, val a, val b) {
    if (t.code == TIR_TYPE_BOOL) {
        val r = {.i = a.i | b.i};
        return r;
    }
    return r_add(t, a, b);
}

static val r_max(tir_dtype t, val a, val b) {
    if (isf(t)) return a.f >= b.f ? a : b;
    return a.i >= b.i ? a : b;
}

static val r_const(tir_dtype t, int v) {
    val r;
    if (isf(t))
        r.f = v;
    else
        r.i = t.code == TIR_TYPE_BOOL ? v != 0 : v;
    return r;
}

static val getv(tir_dtype t, const void *p, int64_t i) {
    val v;
    const unsigned char *b = p;
    switch (t.code) {
    case TIR_TYPE_BOOL: v.i = b[i] != 0; break;
    case TIR_TYPE_UINT: v.i = b[i]; break;
    case TIR_TYPE_INT:
        if (t.bits == 8) v.i = (int8_t)b[i];
        else if (t.bits == 32) v.i = ((const int32_t *)p)[i];
        else v.i = ((const int64_t *)p)[i];
        break;
    case TIR_TYPE_BFLOAT: v.f = ir_bf16_to_float(((const uint16_t *)p)[i]); break;
    default:
        if (t.bits == 16) v.f = ir_f16_to_float(((const uint16_t *)p)[i]);
        else if (t.bits == 32) v.f = ((const float *)p)[i];
        else v.f = ((const double *)p)[i];
        break;
    }
    return v;
}

static void setv(tir_dtype t, void *p, int64_t i, val v) {
    unsigned char *b = p;
    switch (t.code) {
    case TIR_TYPE_BOOL: b[i] = v.i != 0; break;
    case TIR_TYPE_UINT: b[i] = (unsigned char)v.i; break;
    case TIR_TYPE_INT:
        if (t.bits == 8) b[i] = (unsigned char)v.i;
        else if (t.bits == 32) ((int32_t *)p)[i] = (int32_t)v.i;
        else ((int64_t *)p)[i] = v.i;
        break;
    case TIR_TYPE_BFLOAT: ((uint16_t *)p)[i] = ir_bf16_from_double(v.f); break;
    default:
        if (t.bits == 16) ((uint16_t *)p)[i] = ir_f16_from_double(v.f);
        else if (t.bits == 32) ((float *)p)[i] = (float)v.f;
        else ((double *)p)[i] = v.f;
        break;
    }
}

static uint32_t rng_state = 12345;
static uint32_t rng(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 17;
    rng_state ^= rng_state << 5;
    return rng_state;
}

/* Random values: full-range int8 / uint8 (so products wrap), moderate
 * int32 / int64, signed floats with full float32 / float64 mantissas
 * (rounded into 16-bit types). */
static void *rand_array(tir_dtype t, int64_t n) {
    void *p = malloc((size_t)(n ? n : 1) * tir_dtype_bytes(t));
    assert_non_null(p);
    for (int64_t i = 0; i < n; i++) {
        val v;
        if (isf(t))
            v.f = ((double)rng() / 4294967296.0 - 0.45) * 4.0;
        else if (t.code == TIR_TYPE_BOOL)
            v.i = rng() & 1;
        else if (t.bits == 8)
            v.i = (int64_t)(rng() & 0xff);
        else
            v.i = (int64_t)(rng() % 2001) - 1000;
        if (t.bits == 32 && isf(t)) v.f = (float)v.f;
        setv(t, p, i, v);
    }
    return p;
}

static void *garbage_array(tir_dtype t, int64_t n) {
    size_t bytes = (size_t)(n ? n : 1) * tir_dtype_bytes(t);
    void *p = malloc(bytes);
    assert_non_null(p);
    memset(p, 0xab, bytes);
    return p;
}

static void expect_equal(tir_dtype t, const void *got, const void *want, int64_t n,
                         const char *what) {
    size_t eb = tir_dtype_bytes(t);
    for (int64_t i = 0; i < n; i++) {
        if (memcmp((const char *)got + i * eb, (const char *)want + i * eb, eb) != 0) {
            char b[32];
            val g = getv(t, got, i), w = getv(t, want, i);
            if (isf(t))
                fail_msg("%s (%s): element %lld is %.9g, want %.9g", what,
                         tir_dtype_str(t, b, sizeof b), (long long)i, g.f, w.f);
            else
                fail_msg("%s (%s): element %lld is %lld, want %lld", what,
                         tir_dtype_str(t, b, sizeof b), (long long)i, (long long)g.i,
                         (long long)w.i);
        }
    }
}

static void run_ok(tir_ctx *ctx, const tir_prim_func *f, int n, tir_arg *args, uint64_t uninit) {
    tir_interp_opts o = {.uninit_params = uninit};
    tir_status s = tir_interp_run(ctx, f, n, args, &o);
    if (s != TIR_OK) fail_msg("interp failed: %s: %s", tir_status_name(s), tir_ctx_error(ctx));
}

/* ================================================ ready definitions */

/* C[b, i, j] = sum_k A[b, i, k] * B[b, k, j] (B[b, j, k] when nt). */
static void ref_matmul(tir_dtype t, int64_t batch, int64_t M, int64_t N, int64_t K, bool nt,
                       const void *A, const void *B, void *C) {
    for (int64_t b = 0; b < batch; b++)
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                val c = r_const(t, 0);
                for (int64_t k = 0; k < K; k++) {
                    val a = getv(t, A, (b * M + i) * K + k);
                    val bb = getv(t, B, nt ? (b * N + j) * K + k : (b * K + k) * N + j);
                    c = r_acc(t, c, r_mul(t, a, bb));
                }
                setv(t, C, (b * M + i) * N + j, c);
            }
}

static void check_matmul(tir_ctx *ctx, tir_dtype t, int64_t batch, int64_t M, int64_t N,
                         int64_t K, int kind /* 0 nn, 1 nt, 2 batch */) {
    const tir_prim_func *f = kind == 0   ? tir_def_matmul(ctx, M, N, K, t)
                             : kind == 1 ? tir_def_matmul_nt(ctx, M, N, K, t)
                                         : tir_def_batch_matmul(ctx, batch, M, N, K, t);
    assert_non_null(f);
    void *A = rand_array(t, batch * M * K), *B = rand_array(t, batch * K * N);
    void *C = garbage_array(t, batch * M * N), *R = garbage_array(t, batch * M * N);
    tir_arg args[3] = {{A, 0}, {B, 0}, {C, 0}};
    run_ok(ctx, f, 3, args, 1u << 2); /* C starts unwritten: init must run first */
    ref_matmul(t, batch, M, N, K, kind == 1, A, B, R);
    char what[96];
    snprintf(what, sizeof what, "%s %lldx%lldx%lldx%lld", f->name, (long long)batch,
             (long long)M, (long long)N, (long long)K);
    expect_equal(t, C, R, batch * M * N, what);
    free(A);
    free(B);
    free(C);
    free(R);
}

static const int64_t mm_sizes[3][3] = {{1, 1, 1}, {7, 5, 3}, {17, 13, 11}};

static void test_matmul_all_dtypes(void **st) {
    for (int ti = 0; ti < 9; ti++)
        for (int s = 0; s < 3; s++) {
            check_matmul(*st, all_types[ti], 1, mm_sizes[s][0], mm_sizes[s][1], mm_sizes[s][2], 0);
            check_matmul(*st, all_types[ti], 1, mm_sizes[s][0], mm_sizes[s][1], mm_sizes[s][2], 1);
            check_matmul(*st, all_types[ti], 1 + s, mm_sizes[s][0], mm_sizes[s][1],
                         mm_sizes[s][2], 2);
        }
}

static void check_matmul_bias(tir_ctx *ctx, tir_dtype t, int64_t M, int64_t N, int64_t K,
                              bool relu) {
    const tir_prim_func *f = relu ? tir_def_matmul_bias_relu(ctx, M, N, K, t)
                                  : tir_def_matmul_bias(ctx, M, N, K, t);
    assert_non_null(f);
    void *A = rand_array(t, M * K), *B = rand_array(t, K * N), *bias = rand_array(t, N);
    void *D = garbage_array(t, M * N), *C = garbage_array(t, M * N), *R = garbage_array(t, M * N);
    tir_arg args[4] = {{A, 0}, {B, 0}, {bias, 0}, {D, 0}};
    run_ok(ctx, f, 4, args, 1u << 3);
    ref_matmul(t, 1, M, N, K, false, A, B, C);
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            val d = r_acc(t, getv(t, C, i * N + j), getv(t, bias, j));
            if (relu) d = r_max(t, d, r_const(t, 0));
            setv(t, R, i * N + j, d);
        }
    expect_equal(t, D, R, M * N, f->name);
    free(A);
    free(B);
    free(bias);
    free(C);
    free(D);
    free(R);
}

static void test_matmul_bias_all_dtypes(void **st) {
    for (int ti = 0; ti < 9; ti++)
        for (int s = 0; s < 3; s++)
            for (int relu = 0; relu < 2; relu++)
                check_matmul_bias(*st, all_types[ti], mm_sizes[s][0], mm_sizes[s][1],
                                  mm_sizes[s][2], relu);
}

typedef struct conv_case {
    int64_t n, c, h, w, o, kh, kw, stride, pad;
} conv_case;

static void check_conv(tir_ctx *ctx, tir_dtype t, conv_case k) {
    const tir_prim_func *f =
        tir_def_conv2d_nchw(ctx, k.n, k.c, k.h, k.w, k.o, k.kh, k.kw, k.stride, k.pad, t);
    assert_non_null(f);
    int64_t ph = k.h + 2 * k.pad, pw = k.w + 2 * k.pad;
    int64_t oh = (ph - k.kh) / k.stride + 1, ow = (pw - k.kw) / k.stride + 1;
    int64_t nout = k.n * k.o * oh * ow;
    void *I = rand_array(t, k.n * k.c * k.h * k.w), *W = rand_array(t, k.o * k.c * k.kh * k.kw);
    void *Out = garbage_array(t, nout), *R = garbage_array(t, nout);
    tir_arg args[3] = {{I, 0}, {W, 0}, {Out, 0}};
    run_ok(ctx, f, 3, args, 1u << 2);
    for (int64_t n = 0; n < k.n; n++)
        for (int64_t o = 0; o < k.o; o++)
            for (int64_t y = 0; y < oh; y++)
                for (int64_t x = 0; x < ow; x++) {
                    val acc = r_const(t, 0);
                    for (int64_t c = 0; c < k.c; c++)
                        for (int64_t ry = 0; ry < k.kh; ry++)
                            for (int64_t rx = 0; rx < k.kw; rx++) {
                                int64_t iy = y * k.stride + ry - k.pad, ix = x * k.stride + rx - k.pad;
                                val p = (iy >= 0 && iy < k.h && ix >= 0 && ix < k.w)
                                            ? getv(t, I, ((n * k.c + c) * k.h + iy) * k.w + ix)
                                            : r_const(t, 0);
                                val w = getv(t, W, ((o * k.c + c) * k.kh + ry) * k.kw + rx);
                                acc = r_acc(t, acc, r_mul(t, p, w));
                            }
                    setv(t, R, ((n * k.o + o) * oh + y) * ow + x, acc);
                }
    expect_equal(t, Out, R, nout, "conv2d_nchw");
    free(I);
    free(W);
    free(Out);
    free(R);
}

static const conv_case conv_cases[] = {
    {1, 1, 1, 1, 1, 1, 1, 1, 0},  /* all ones */
    {2, 3, 7, 9, 4, 3, 3, 2, 1},  /* stride 2, padding 1, odd sizes */
    {1, 2, 8, 6, 3, 2, 3, 1, 2},  /* padding 2, non-square kernel */
    {1, 3, 5, 5, 2, 5, 5, 3, 0},  /* kernel as large as the input */
    {1, 1, 6, 7, 1, 1, 1, 2, 1},  /* 1x1 kernel over the padding */
};

static void test_conv2d_all_dtypes(void **st) {
    for (int ti = 0; ti < 9; ti++)
        for (size_t c = 0; c < sizeof conv_cases / sizeof conv_cases[0]; c++)
            check_conv(*st, all_types[ti], conv_cases[c]);
}

static void check_chain(tir_ctx *ctx, tir_dtype t, int64_t M, int64_t N) {
    const tir_prim_func *f = tir_def_elementwise_chain(ctx, M, N, t);
    assert_non_null(f);
    void *A = rand_array(t, M * N), *D = garbage_array(t, M * N), *R = garbage_array(t, M * N);
    tir_arg args[2] = {{A, 0}, {D, 0}};
    run_ok(ctx, f, 2, args, 1u << 1);
    for (int64_t i = 0; i < M * N; i++) {
        val b = r_mul(t, getv(t, A, i), r_const(t, 2));
        val c = r_add(t, b, r_const(t, 1));
        setv(t, R, i, r_max(t, c, r_const(t, 0)));
    }
    expect_equal(t, D, R, M * N, "elementwise_chain");
    free(A);
    free(D);
    free(R);
}

static void test_elementwise_chain_all_dtypes(void **st) {
    for (int ti = 0; ti < 9; ti++) {
        check_chain(*st, all_types[ti], 1, 1);
        check_chain(*st, all_types[ti], 7, 5);
        check_chain(*st, all_types[ti], 17, 13);
    }
}

/* float32 with plain C float loops, no helpers in between: the claim is
 * bitwise equality with `c = c + a * b`. */
static void test_f32_plain_c_bitwise(void **st) {
    tir_ctx *ctx = *st;
    enum { M = 64, N = 64, K = 64 };
    const tir_prim_func *f = tir_def_matmul(ctx, M, N, K, TIR_F32);
    assert_non_null(f);
    float *A = malloc(sizeof(float) * M * K), *B = malloc(sizeof(float) * K * N);
    float *C = malloc(sizeof(float) * M * N), *R = malloc(sizeof(float) * M * N);
    for (int i = 0; i < M * K; i++) A[i] = (float)rng() / 4294967296.0f - 0.5f;
    for (int i = 0; i < K * N; i++) B[i] = (float)rng() / 4294967296.0f - 0.5f;
    tir_arg args[3] = {{A, 0}, {B, 0}, {C, 0}};
    clock_t t0 = clock();
    run_ok(ctx, f, 3, args, 1u << 2);
    double secs = (double)(clock() - t0) / CLOCKS_PER_SEC;
    printf("# matmul 64^3 f32 in the interpreter: %.1f ms\n", secs * 1e3);
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            float c = 0.0f;
            for (int k = 0; k < K; k++) {
                float p = A[i * K + k] * B[k * N + j];
                c = c + p;
            }
            R[i * N + j] = c;
        }
    assert_memory_equal(C, R, sizeof(float) * M * N);
    free(A);
    free(B);
    free(C);
    free(R);

    /* a medium conv too (timed) */
    conv_case k = {1, 8, 17, 17, 8, 3, 3, 2, 1};
    t0 = clock();
    check_conv(ctx, TIR_F32, k);
    printf("# conv2d 1x8x17x17 -> 8, 3x3 s2 p1, f32 (with the C reference): %.1f ms\n",
           (double)(clock() - t0) / CLOCKS_PER_SEC * 1e3);
}

/* =================================================== hand-built IR */

static const tir_buffer *buf1(tir_ctx *ctx, const char *name, tir_dtype t, int64_t n) {
    return tir_buffer_simple(ctx, name, t, 1, &n, TIR_SCOPE_GLOBAL);
}

/* for i in range(n): with T.block(name): vi = i (spatial [0, n)); body */
static const tir_stmt *over(tir_ctx *ctx, const char *name, int64_t n, const tir_var *vi,
                            const tir_stmt *body) {
    const tir_var *i = tir_var_new(ctx, "i", TIR_I32);
    tir_iter_var it = {vi, {tir_i32(ctx, 0), tir_i32(ctx, n)}, TIR_ITER_SPATIAL};
    tir_block_desc d = {0};
    d.name = name;
    d.niters = 1;
    d.iters = &it;
    d.body = body;
    const tir_expr *v = &i->base;
    const tir_stmt *r = tir_block_realize_new(ctx, 1, &v, NULL, tir_block_new(ctx, &d));
    return tir_for_new(ctx, i, tir_i32(ctx, 0), tir_i32(ctx, n), TIR_FOR_SERIAL, NULL, 0, NULL, r);
}

static const tir_prim_func *mkfunc(tir_ctx *ctx, int nb, const tir_buffer *const *bufs,
                                   const tir_stmt *body, int nallocs,
                                   const tir_buffer *const *allocs) {
    tir_block_desc d = {0};
    d.name = "root";
    d.body = body;
    d.nallocs = nallocs;
    d.allocs = allocs;
    const tir_stmt *root = tir_block_realize_new(ctx, 0, NULL, NULL, tir_block_new(ctx, &d));
    const tir_var *params[8];
    for (int i = 0; i < nb; i++) params[i] = tir_var_new(ctx, bufs[i]->name, TIR_HANDLE);
    return tir_prim_func_new(ctx, "f", nb, params, bufs, root, 0, NULL);
}

static const tir_expr *ld1(tir_ctx *ctx, const tir_buffer *b, const tir_expr *i) {
    return tir_load(ctx, b, 1, &i);
}
static const tir_stmt *st1(tir_ctx *ctx, const tir_buffer *b, const tir_expr *i,
                           const tir_expr *v) {
    return tir_store(ctx, b, v, 1, &i);
}

static void expect_error(tir_ctx *ctx, tir_status got, tir_status want, const char *const *subs) {
    if (got != want)
        fail_msg("got %s (%s), want %s", tir_status_name(got), tir_ctx_error(ctx),
                 tir_status_name(want));
    assert_int_equal(tir_ctx_error_code(ctx), want);
    for (; *subs; subs++)
        if (!strstr(tir_ctx_error(ctx), *subs))
            fail_msg("message lacks \"%s\":\n%s", *subs, tir_ctx_error(ctx));
    tir_ctx_clear_error(ctx);
}

static void test_out_of_bounds(void **st) {
    tir_ctx *ctx = *st;
    const tir_buffer *A = buf1(ctx, "A", TIR_F32, 4), *B = buf1(ctx, "B", TIR_F32, 5);
    const tir_var *vi = tir_var_new(ctx, "vi", TIR_I32);
    /* read: B[vi] = A[vi] for vi < 5, A has 4 */
    const tir_buffer *bufs[2] = {A, B};
    const tir_prim_func *f =
        mkfunc(ctx, 2, bufs, over(ctx, "copy", 5, vi, st1(ctx, B, &vi->base, ld1(ctx, A, &vi->base))), 0, NULL);
    float a[4] = {1, 2, 3, 4}, b[5] = {0};
    tir_arg args[2] = {{a, 0}, {b, 0}};
    const char *rd[] = {"load of A[4]", "shape [4]", "outside [0, 4)", "block \"copy\"",
                        "B[vi] = A[vi]", NULL};
    expect_error(ctx, tir_interp_run(ctx, f, 2, args, NULL), TIR_ERR_OUT_OF_BOUNDS, rd);
    /* the in-bounds iterations ran before the error */
    assert_true(b[3] == 4.0f);

    /* write: B[vi + 1] = A[vi] for vi < 4 with B of 4 */
    const tir_buffer *B4 = buf1(ctx, "B", TIR_F32, 4);
    const tir_buffer *bufs4[2] = {A, B4};
    const tir_var *vj = tir_var_new(ctx, "vj", TIR_I32);
    const tir_expr *j1 = tir_add(ctx, &vj->base, tir_i32(ctx, 1));
    f = mkfunc(ctx, 2, bufs4, over(ctx, "shift", 4, vj, st1(ctx, B4, j1, ld1(ctx, A, &vj->base))), 0,
               NULL);
    const char *wr[] = {"store of B[4]", "shape [4]", "block \"shift\"", "B[(vj + 1)] = A[vj]",
                        NULL};
    expect_error(ctx, tir_interp_run(ctx, f, 2, args, NULL), TIR_ERR_OUT_OF_BOUNDS, wr);

    /* negative index, 2-D */
    int64_t sh[2] = {3, 4};
    const tir_buffer *M = tir_buffer_simple(ctx, "M", TIR_I32, 2, sh, TIR_SCOPE_GLOBAL);
    const tir_buffer *bm[1] = {M};
    const tir_expr *idx[2] = {tir_i32(ctx, 1), tir_i32(ctx, -1)};
    f = mkfunc(ctx, 1, bm, tir_store(ctx, M, tir_i32(ctx, 7), 2, idx), 0, NULL);
    int32_t m[12];
    tir_arg am[1] = {{m, 0}};
    const char *neg[] = {"M[1, -1]", "shape [3, 4]", "dimension 1", NULL};
    expect_error(ctx, tir_interp_run(ctx, f, 1, am, NULL), TIR_ERR_OUT_OF_BOUNDS, neg);
}

static void test_uninit_reads(void **st) {
    tir_ctx *ctx = *st;
    /* C[vi] = C[vi] + A[vi]: fine when C is an input, an error when C is
     * marked as an unwritten output */
    const tir_buffer *A = buf1(ctx, "A", TIR_I32, 3), *C = buf1(ctx, "C", TIR_I32, 3);
    const tir_var *vi = tir_var_new(ctx, "vi", TIR_I32);
    const tir_expr *i = &vi->base;
    const tir_buffer *bufs[2] = {A, C};
    const tir_prim_func *f = mkfunc(
        ctx, 2, bufs, over(ctx, "acc", 3, vi, st1(ctx, C, i, tir_add(ctx, ld1(ctx, C, i), ld1(ctx, A, i)))),
        0, NULL);
    int32_t a[3] = {1, 2, 3}, c[3] = {10, 20, 30};
    tir_arg args[2] = {{a, 0}, {c, 0}};
    run_ok(ctx, f, 2, args, 0);
    assert_int_equal(c[0], 11);
    assert_int_equal(c[2], 33);
    tir_interp_opts o = {.uninit_params = 1u << 1};
    const char *msg[] = {"load of C[0]", "never written", "block \"acc\"", "C[vi] = (C[vi] + A[vi])",
                         NULL};
    expect_error(ctx, tir_interp_run(ctx, f, 2, args, &o), TIR_ERR_UNINIT_READ, msg);
    assert_int_equal(c[0], 11); /* nothing stored */

    /* a root-allocated buffer written at 0..2 and read at 0..3 */
    const tir_buffer *T = buf1(ctx, "T", TIR_I32, 4), *B = buf1(ctx, "B", TIR_I32, 4);
    const tir_var *v1 = tir_var_new(ctx, "vi", TIR_I32), *v2 = tir_var_new(ctx, "vi", TIR_I32);
    const tir_stmt *s[2] = {
        over(ctx, "fill", 3, v1, st1(ctx, T, &v1->base, tir_mul(ctx, &v1->base, tir_i32(ctx, 5)))),
        over(ctx, "use", 4, v2, st1(ctx, B, &v2->base, ld1(ctx, T, &v2->base))),
    };
    const tir_buffer *bb[2] = {A, B}, *allocs[1] = {T};
    f = mkfunc(ctx, 2, bb, tir_seq_new(ctx, 2, s), 1, allocs);
    int32_t b[4] = {-1, -1, -1, -1};
    tir_arg ab[2] = {{a, 0}, {b, 0}};
    const char *msg2[] = {"load of T[3]", "never written", "block \"use\"", NULL};
    expect_error(ctx, tir_interp_run(ctx, f, 2, ab, NULL), TIR_ERR_UNINIT_READ, msg2);
    assert_int_equal(b[2], 10);
    assert_int_equal(b[3], -1);

    /* the same with an Allocate statement, and fresh storage on each entry:
     * the second run of the Allocate body must not see the first's data */
    const tir_buffer *L = buf1(ctx, "L", TIR_I32, 1);
    const tir_var *w = tir_var_new(ctx, "w", TIR_I32);
    const tir_expr *z = tir_i32(ctx, 0);
    /* for w in 2: allocate L: if w == 0: L[0] = 1; B[w] = L[0] */
    const tir_stmt *inner[2] = {
        tir_if_new(ctx, tir_binop_new(ctx, TIR_KIND_EQ, &w->base, z), st1(ctx, L, z, tir_i32(ctx, 1)),
                   NULL),
        st1(ctx, B, &w->base, ld1(ctx, L, z)),
    };
    const tir_stmt *loop = tir_for_new(ctx, w, z, tir_i32(ctx, 2), TIR_FOR_SERIAL, NULL, 0, NULL,
                                       tir_allocate_new(ctx, L, tir_seq_new(ctx, 2, inner)));
    f = mkfunc(ctx, 2, bb, loop, 0, NULL);
    const char *msg3[] = {"load of L[0]", "never written", "B[w] = L[0]", NULL};
    expect_error(ctx, tir_interp_run(ctx, f, 2, ab, NULL), TIR_ERR_UNINIT_READ, msg3);
    assert_int_equal(b[0], 1);
}

static void test_division_by_zero(void **st) {
    tir_ctx *ctx = *st;
    const tir_kind kinds[4] = {TIR_KIND_FLOORDIV, TIR_KIND_FLOORMOD, TIR_KIND_DIV, TIR_KIND_MOD};
    const tir_dtype types[3] = {TIR_I32, TIR_I8, TIR_I64};
    for (int t = 0; t < 3; t++)
        for (int k = 0; k < 4; k++) {
            const tir_buffer *A = buf1(ctx, "A", types[t], 4), *B = buf1(ctx, "B", types[t], 4);
            const tir_var *vi = tir_var_new(ctx, "vi", TIR_I32);
            const tir_expr *d = tir_sub(ctx, &vi->base, tir_i32(ctx, 2));
            if (!tir_dtype_eq(types[t], TIR_I32)) d = tir_cast_new(ctx, types[t], d);
            const tir_buffer *bufs[2] = {A, B};
            const tir_prim_func *f = mkfunc(
                ctx, 2, bufs,
                over(ctx, "div", 4, vi, st1(ctx, B, &vi->base, tir_binop_new(ctx, kinds[k], ld1(ctx, A, &vi->base), d))),
                0, NULL);
            int64_t a[4] = {7, 7, 7, 7}, b[4] = {0};
            tir_arg args[2] = {{a, 0}, {b, 0}};
            const char *msg[] = {"division by zero", "block \"div\"", NULL};
            expect_error(ctx, tir_interp_run(ctx, f, 2, args, NULL), TIR_ERR_EVAL, msg);
        }
    /* float division by zero is IEEE: inf */
    const tir_buffer *F = buf1(ctx, "F", TIR_F32, 1);
    const tir_buffer *fb[1] = {F};
    const tir_expr *z = tir_i32(ctx, 0);
    const tir_prim_func *f = mkfunc(
        ctx, 1, fb, st1(ctx, F, z, tir_binop_new(ctx, TIR_KIND_DIV, tir_f32(ctx, 1), tir_f32(ctx, 0))), 0,
        NULL);
    float fv[1] = {0};
    tir_arg fa[1] = {{fv, 0}};
    run_ok(ctx, f, 1, fa, 0);
    assert_true(isinf(fv[0]) && fv[0] > 0);
}

static void test_argument_errors(void **st) {
    tir_ctx *ctx = *st;
    const tir_prim_func *f = tir_def_matmul(ctx, 2, 2, 2, TIR_F32);
    float a[4] = {0}, b[4] = {0}, c[4];
    tir_arg args[3] = {{a, 0}, {b, 0}, {c, 0}};
    const char *m1[] = {"takes 3 arguments, 2 given", NULL};
    expect_error(ctx, tir_interp_run(ctx, f, 2, args, NULL), TIR_ERR_INVALID_ARG, m1);
    const char *m2[] = {"takes 3 arguments, 4 given", NULL};
    expect_error(ctx, tir_interp_run(ctx, f, 4, args, NULL), TIR_ERR_INVALID_ARG, m2);
    args[1].data = NULL;
    const char *m3[] = {"argument 1", "no data", NULL};
    expect_error(ctx, tir_interp_run(ctx, f, 3, args, NULL), TIR_ERR_INVALID_ARG, m3);
    const char *m4[] = {"no function", NULL};
    expect_error(ctx, tir_interp_run(ctx, NULL, 0, NULL, NULL), TIR_ERR_INVALID_ARG, m4);

    /* an undefined variable is caught before anything runs */
    const tir_buffer *B = buf1(ctx, "B", TIR_I32, 2);
    const tir_var *ghost = tir_var_new(ctx, "ghost", TIR_I32);
    const tir_buffer *bufs[1] = {B};
    f = mkfunc(ctx, 1, bufs, st1(ctx, B, tir_i32(ctx, 0), &ghost->base), 0, NULL);
    int32_t bv[2] = {5, 5};
    tir_arg ab[1] = {{bv, 0}};
    const char *m5[] = {"'ghost'", "not defined", NULL};
    expect_error(ctx, tir_interp_run(ctx, f, 1, ab, NULL), TIR_ERR_EVAL, m5);
    assert_int_equal(bv[0], 5);

    /* a buffer used outside of its allocation */
    const tir_buffer *T = buf1(ctx, "T", TIR_I32, 2);
    f = mkfunc(ctx, 1, bufs, st1(ctx, B, tir_i32(ctx, 0), ld1(ctx, T, tir_i32(ctx, 0))), 0, NULL);
    const char *m6[] = {"buffer T", "not allocated", NULL};
    expect_error(ctx, tir_interp_run(ctx, f, 1, ab, NULL), TIR_ERR_EVAL, m6);
}

/* =============================================================== semantics */

/* Out[k] = (int64) e_k for a list of expressions. */
static void eval_i64(tir_ctx *ctx, int n, const tir_expr *const *es, int64_t *out) {
    const tir_buffer *O = buf1(ctx, "O", TIR_I64, n);
    const tir_stmt *ss[64];
    for (int k = 0; k < n; k++) {
        const tir_expr *v = es[k];
        if (!tir_dtype_eq(v->dtype, TIR_I64)) v = tir_cast_new(ctx, TIR_I64, v);
        ss[k] = st1(ctx, O, tir_i32(ctx, k), v);
    }
    const tir_buffer *bufs[1] = {O};
    const tir_prim_func *f = mkfunc(ctx, 1, bufs, tir_seq_new(ctx, n, ss), 0, NULL);
    tir_arg a[1] = {{out, 0}};
    run_ok(ctx, f, 1, a, 1);
}

static void test_integer_semantics(void **st) {
    tir_ctx *ctx = *st;
#define I32(v) tir_i32(ctx, v)
#define I8(v) tir_int(ctx, TIR_I8, v)
#define U8(v) tir_int(ctx, TIR_U8, v)
#define I64(v) tir_int(ctx, TIR_I64, v)
#define BIN(k, a, b) tir_binop_new(ctx, TIR_KIND_##k, a, b)
    const tir_expr *es[] = {
        BIN(ADD, I32(INT32_MAX), I32(1)),      /* wraps */
        BIN(MUL, I8(100), I8(3)),               /* 300 -> 44 */
        BIN(SUB, U8(3), U8(5)),                 /* 254 */
        BIN(MUL, I64(INT64_MAX), I64(2)),       /* -2 */
        BIN(FLOORDIV, I32(-7), I32(2)),         /* -4 */
        BIN(FLOORMOD, I32(-7), I32(2)),         /* 1 */
        BIN(FLOORDIV, I32(7), I32(-2)),         /* -4 */
        BIN(FLOORMOD, I32(7), I32(-2)),         /* -1 */
        BIN(DIV, I32(-7), I32(2)),              /* -3 */
        BIN(MOD, I32(-7), I32(2)),              /* -1 */
        BIN(DIV, I32(INT32_MIN), I32(-1)),      /* wraps to INT32_MIN */
        BIN(FLOORDIV, I64(INT64_MIN), I64(-1)), /* wraps to INT64_MIN */
        BIN(DIV, I8(-128), I8(-1)),             /* -128 */
        BIN(MAX, U8(200), U8(100)),             /* 200: unsigned compare */
        BIN(MIN, I8(-5), I8(3)),                /* -5 */
        tir_cast_new(ctx, TIR_I32, tir_f32(ctx, 3.9)),   /* 3 */
        tir_cast_new(ctx, TIR_I32, tir_f32(ctx, -3.9)),  /* -3 */
        tir_cast_new(ctx, TIR_I32, tir_f32(ctx, 1e10)),  /* saturates */
        tir_cast_new(ctx, TIR_U8, tir_f32(ctx, -7)),     /* 0 */
        tir_cast_new(ctx, TIR_U8, I32(300)),             /* 44 */
        tir_cast_new(ctx, TIR_I8, I32(200)),             /* -56 */
        tir_cast_new(ctx, TIR_BOOL, I32(-4)),            /* true */
        tir_cast_new(ctx, TIR_I32, tir_cast_new(ctx, TIR_BOOL, tir_f32(ctx, 0.0))), /* 0 */
        BIN(ADD, tir_bool(ctx, true), tir_bool(ctx, true)),  /* i1: 0 */
        BIN(LT, I32(-1), I32(0)),                            /* 1 */
        tir_select_new(ctx, BIN(GT, I8(1), I8(2)), I32(10), I32(20)), /* 20 */
    };
    const int64_t want[] = {INT32_MIN, 44, 254, -2, -4, 1, -4, -1, -3, -1, INT32_MIN, INT64_MIN,
                            -128, 200, -5, 3, -3, INT32_MAX, 0, 44, -56, 1, 0, 0, 1, 20};
    int n = (int)(sizeof es / sizeof es[0]);
    assert_int_equal(n, (int)(sizeof want / sizeof want[0]));
    int64_t out[64];
    eval_i64(ctx, n, es, out);
    for (int k = 0; k < n; k++)
        if (out[k] != want[k]) fail_msg("expression %d: got %lld, want %lld", k, (long long)out[k], (long long)want[k]);
#undef I32
#undef I8
#undef U8
#undef I64
#undef BIN
}

static void test_half_rounding(void **st) {
    (void)st;
    const struct {
        double x;
        uint16_t f16, bf16;
    } cases[] = {
        {1.0, 0x3c00, 0x3f80},
        {-2.0, 0xc000, 0xc000},
        {65504.0, 0x7bff, 0x4780 /* rounds up to 65536 */},
        {65519.0, 0x7bff, 0x4780},
        {65520.0, 0x7c00, 0x4780}, /* f16: the tie rounds up to inf */
        {ldexp(1, -24), 0x0001, 0x3380},
        {ldexp(1, -25), 0x0000, 0x3300}, /* f16: tie to even (0) */
        {ldexp(3, -26), 0x0001, 0x3340},
        {ldexp(1023, -24), 0x03ff, 0x3880 /* rounds up to 2^-14 */},
        {1.0 + ldexp(1, -11), 0x3c00, 0x3f80}, /* f16: tie to even */
        {1.0 + ldexp(3, -11), 0x3c02, 0x3f80},
        {1.0 + ldexp(1, -8), 0x3c04, 0x3f80}, /* bf16: tie to even */
        {1.0 + ldexp(3, -8), 0x3c0c, 0x3f82},
        {(double)FLT_MAX, 0x7c00, 0x7f80},
        {3.3895313892515355e+38, 0x7c00, 0x7f7f},
        {INFINITY, 0x7c00, 0x7f80},
        {-INFINITY, 0xfc00, 0xff80},
        {0.0, 0x0000, 0x0000},
        {-0.0, 0x8000, 0x8000},
        {1e-300, 0x0000, 0x0000},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (ir_f16_from_double(cases[i].x) != cases[i].f16)
            fail_msg("f16(%.17g) = 0x%04x, want 0x%04x", cases[i].x, ir_f16_from_double(cases[i].x),
                     cases[i].f16);
        if (ir_bf16_from_double(cases[i].x) != cases[i].bf16)
            fail_msg("bf16(%.17g) = 0x%04x, want 0x%04x", cases[i].x,
                     ir_bf16_from_double(cases[i].x), cases[i].bf16);
    }
    uint16_t nan16 = ir_f16_from_double(NAN), nanb = ir_bf16_from_double(NAN);
    assert_true((nan16 & 0x7c00) == 0x7c00 && (nan16 & 0x3ff));
    assert_true((nanb & 0x7f80) == 0x7f80 && (nanb & 0x7f));
    /* every finite pattern survives a round trip; values between two
     * neighbours round to the nearer one */
    for (uint32_t h = 0; h < 0x10000; h++) {
        float f = ir_f16_to_float((uint16_t)h);
        if (isnan(f)) continue;
        assert_int_equal(ir_f16_from_double(f), h);
        float g = ir_bf16_to_float((uint16_t)h);
        if (!isnan(g)) assert_int_equal(ir_bf16_from_double(g), h);
        if ((h & 0x7fff) < 0x7bff) {
            float up = ir_f16_to_float((uint16_t)(h + 1));
            double q = f + (up - (double)f) * 0.25;
            assert_int_equal(ir_f16_from_double(q), h);
            q = f + (up - (double)f) * 0.75;
            assert_int_equal(ir_f16_from_double(q), h + 1);
        }
    }
}

/* An int64 converts to a narrower float with one rounding, as the hardware
 * converts: through a plain double, 2^60 + 2^52 + 1 became 2^60 + 2^52, a
 * bfloat16 tie, then 2^60 (and 2^60 + 2^36 + 1 likewise 2^60 in float32). */
static void test_int_to_narrow_float(void **st) {
    tir_ctx *ctx = *st;
    const int64_t big = (INT64_C(1) << 60) + (INT64_C(1) << 52) + 1;
    assert_true(ir_bf16_from_double(ir_int_to_double_odd(big, false)) ==
                ir_bf16_from_double(0x1p60 + 0x1p53));
    assert_true(ir_bf16_from_double(ir_int_to_double_odd(-big, false)) ==
                ir_bf16_from_double(-0x1p60 - 0x1p53));
    assert_true(ir_int_to_double_odd(INT64_MAX, false) == 0x1p63 - 0x1p10); /* odd, below */
    assert_true(ir_int_to_double_odd(-1, true) == 0x1p64 - 0x1p11);         /* 2^64 - 1 */
    assert_true(ir_int_to_double_odd(12345, false) == 12345.0);              /* exact */
    static const char text[] =
        "@T.prim_func\n"
        "def f(X: T.Buffer((3,), \"int64\"), Y: T.Buffer((3,), \"bfloat16\"), Z: T.Buffer((3,), \"float32\")):\n"
        "    for i in range(3):\n"
        "        with T.block(\"Y\"):\n"
        "            vi = T.axis.spatial(3, i)\n"
        "            Y[vi] = T.Cast(\"bfloat16\", X[vi])\n"
        "            Z[vi] = T.Cast(\"float32\", X[vi])\n";
    const tir_prim_func *f = NULL;
    if (tir_parse_func(ctx, text, strlen(text), &f) != TIR_OK) fail_msg("%s", tir_ctx_error(ctx));
    int64_t x[3] = {big, -big, (INT64_C(1) << 60) + (INT64_C(1) << 36) + 1};
    uint16_t y[3];
    float z[3];
    tir_arg args[3] = {{x, 0}, {y, 0}, {z, 0}};
    if (tir_interp_run(ctx, f, 3, args, NULL) != TIR_OK) fail_msg("%s", tir_ctx_error(ctx));
    assert_int_equal(y[0], ir_bf16_from_double(0x1p60 + 0x1p53));
    assert_int_equal(y[1], ir_bf16_from_double(-0x1p60 - 0x1p53));
    assert_true(z[2] == (float)x[2] && z[2] == 0x1p60f + 0x1p37f);
}

/* f16 rounds after each operation: 1 + 2^-11 is a tie that rounds to 1,
 * so (1 + e) + e stays 1 while float32 would give 1 + 2^-10. */
static void test_half_arithmetic(void **st) {
    tir_ctx *ctx = *st;
    const tir_buffer *H = buf1(ctx, "H", TIR_F16, 2), *G = buf1(ctx, "G", TIR_BF16, 1);
    const tir_expr *one = tir_float(ctx, TIR_F16, 1.0), *e = tir_float(ctx, TIR_F16, ldexp(1, -11));
    const tir_expr *bone = tir_float(ctx, TIR_BF16, 1.0), *be = tir_float(ctx, TIR_BF16, ldexp(1, -8));
    const tir_stmt *ss[3] = {
        st1(ctx, H, tir_i32(ctx, 0), tir_add(ctx, tir_add(ctx, one, e), e)),
        st1(ctx, H, tir_i32(ctx, 1),
            tir_cast_new(ctx, TIR_F16, tir_add(ctx, tir_add(ctx, tir_f32(ctx, 1.0), tir_f32(ctx, ldexp(1, -11))),
                                               tir_f32(ctx, ldexp(1, -11))))),
        st1(ctx, G, tir_i32(ctx, 0), tir_add(ctx, tir_add(ctx, bone, be), be)),
    };
    const tir_buffer *bufs[2] = {H, G};
    const tir_prim_func *f = mkfunc(ctx, 2, bufs, tir_seq_new(ctx, 3, ss), 0, NULL);
    uint16_t h[2], g[1];
    tir_arg a[2] = {{h, 0}, {g, 0}};
    run_ok(ctx, f, 2, a, 3);
    assert_int_equal(h[0], 0x3c00);
    assert_int_equal(h[1], 0x3c01); /* computed in f32, rounded once */
    assert_int_equal(g[0], 0x3f80);
}

/* fma on float16 rounds once: 92.625 * 2.5 + 2^-24 is just above the tie
 * 231.5625 between 231.5 and 231.625; fmaf in float then rounding to half
 * loses the 2^-24 and rounds the tie to even (231.5).  Min / max: a NaN
 * operand loses, from either side. */
static void test_half_fma_minmax(void **st) {
    tir_ctx *ctx = *st;
    const tir_buffer *H = buf1(ctx, "H", TIR_F16, 1), *F = buf1(ctx, "F", TIR_F32, 4),
                     *G = buf1(ctx, "G", TIR_BF16, 1);
    /* bfloat16: 1.75 * 0.578125 - 1.5 * 2^-53 lies just below the midpoint
     * 259/256, one double step beside it once summed in double (review) */
    const tir_expr *bargs[3] = {tir_float(ctx, TIR_BF16, 1.75), tir_float(ctx, TIR_BF16, 0.578125),
                                tir_float(ctx, TIR_BF16, -0x1.8p-53)};
    const tir_expr *args[3] = {tir_float(ctx, TIR_F16, 92.625), tir_float(ctx, TIR_F16, 2.5),
                               tir_float(ctx, TIR_F16, ldexp(1, -24))};
    const tir_expr *one = tir_f32(ctx, 1.0), *nan = tir_f32(ctx, NAN);
    const tir_stmt *ss[6] = {
        st1(ctx, H, tir_i32(ctx, 0), tir_call_new(ctx, TIR_F16, TIR_INTRIN_FMA, 3, args)),
        st1(ctx, G, tir_i32(ctx, 0), tir_call_new(ctx, TIR_BF16, TIR_INTRIN_FMA, 3, bargs)),
        st1(ctx, F, tir_i32(ctx, 0), tir_max(ctx, one, nan)),
        st1(ctx, F, tir_i32(ctx, 1), tir_max(ctx, nan, one)),
        st1(ctx, F, tir_i32(ctx, 2), tir_min(ctx, one, nan)),
        st1(ctx, F, tir_i32(ctx, 3), tir_min(ctx, nan, one)),
    };
    const tir_buffer *bufs[3] = {H, F, G};
    const tir_prim_func *f = mkfunc(ctx, 3, bufs, tir_seq_new(ctx, 6, ss), 0, NULL);
    uint16_t h[1], gb[1];
    float o[4];
    tir_arg a[3] = {{h, 0}, {o, 0}, {gb, 0}};
    run_ok(ctx, f, 3, a, 3);
    assert_int_equal(h[0], 0x5b3d);  /* 231.625 */
    assert_int_equal(gb[0], 0x3f81); /* 1.0078125 */
    for (int k = 0; k < 4; k++) assert_true(o[k] == 1.0f);
}

/* A signaling NaN operand of a float min/max loses like any NaN, as in
 * codegen (`a < b or b is NaN ? a : b`): C's fmaxf (glibc) returns a NaN
 * for one (IEEE 754-2008 maxNum), and the simplifier's float fuzzer found
 * max(inf, sNaN) NaN where max(inf, cast(float16, sNaN)) (the cast quiets
 * it) was inf.  Of two equal operands (zeros of either sign) the second. */
static void test_minmax_signaling_nan(void **st) {
    tir_ctx *ctx = *st;
    const tir_buffer *S = buf1(ctx, "S", TIR_F32, 4), *D = buf1(ctx, "D", TIR_F64, 2),
                     *H = buf1(ctx, "H", TIR_F16, 2), *O = buf1(ctx, "O", TIR_F32, 8),
                     *P = buf1(ctx, "P", TIR_F64, 4), *Q = buf1(ctx, "Q", TIR_F16, 4);
    const tir_stmt *ss[16];
    int n = 0;
    const tir_buffer *in[3] = {S, D, H}, *out[3] = {O, P, Q};
    for (int b = 0; b < 3; b++) {
        const tir_expr *x = tir_load(ctx, in[b], 1, (const tir_expr *[]){tir_i32(ctx, 0)});
        const tir_expr *y = tir_load(ctx, in[b], 1, (const tir_expr *[]){tir_i32(ctx, 1)});
        ss[n++] = st1(ctx, out[b], tir_i32(ctx, 0), tir_max(ctx, x, y));
        ss[n++] = st1(ctx, out[b], tir_i32(ctx, 1), tir_max(ctx, y, x));
        ss[n++] = st1(ctx, out[b], tir_i32(ctx, 2), tir_min(ctx, x, y));
        ss[n++] = st1(ctx, out[b], tir_i32(ctx, 3), tir_min(ctx, y, x));
    }
    const tir_expr *z0 = tir_load(ctx, S, 1, (const tir_expr *[]){tir_i32(ctx, 2)});
    const tir_expr *z1 = tir_load(ctx, S, 1, (const tir_expr *[]){tir_i32(ctx, 3)});
    ss[n++] = st1(ctx, O, tir_i32(ctx, 4), tir_min(ctx, z0, z1));
    ss[n++] = st1(ctx, O, tir_i32(ctx, 5), tir_min(ctx, z1, z0));
    ss[n++] = st1(ctx, O, tir_i32(ctx, 6), tir_max(ctx, z0, z1));
    ss[n++] = st1(ctx, O, tir_i32(ctx, 7), tir_max(ctx, z1, z0));
    const tir_buffer *bufs[6] = {S, D, H, O, P, Q};
    const tir_prim_func *f = mkfunc(ctx, 6, bufs, tir_seq_new(ctx, n, ss), 0, NULL);
    uint32_t s[4] = {0x40000000u /* 2 */, 0x7f800001u /* sNaN */, 0x00000000u, 0x80000000u};
    uint64_t d[2] = {0x4000000000000000ull, 0x7ff0000000000001ull};
    uint16_t h[2] = {0x4000, 0x7c01}, q[4];
    float o[8];
    double p[4];
    tir_arg a[6] = {{s, 0}, {d, 0}, {h, 0}, {o, 0}, {p, 0}, {q, 0}};
    run_ok(ctx, f, 6, a, 0x38);
    for (int k = 0; k < 4; k++) {
        if (o[k] != 2.0f) fail_msg("float32 min/max %d with a signaling NaN: %g", k, o[k]);
        if (p[k] != 2.0) fail_msg("float64 min/max %d with a signaling NaN: %g", k, p[k]);
        if (q[k] != 0x4000) fail_msg("float16 min/max %d with a signaling NaN: 0x%x", k, q[k]);
    }
    /* min(+0, -0), min(-0, +0), max(+0, -0), max(-0, +0): the second */
    assert_true(o[4] == 0 && signbit(o[4]) && o[5] == 0 && !signbit(o[5]));
    assert_true(o[6] == 0 && signbit(o[6]) && o[7] == 0 && !signbit(o[7]));
}

static void test_math_intrinsics(void **st) {
    tir_ctx *ctx = *st;
    const tir_buffer *O = buf1(ctx, "O", TIR_F32, 9), *D = buf1(ctx, "D", TIR_F64, 2);
    const tir_expr *x = tir_f32(ctx, 0.7), *y = tir_f32(ctx, 1.3), *z = tir_f32(ctx, -0.2);
    const tir_expr *a1[1] = {x}, *a2[2] = {x, y}, *a3[3] = {x, y, z}, *an[1] = {z};
#define CALL(op, n, args) tir_call_new(ctx, TIR_F32, TIR_INTRIN_##op, n, args)
    const tir_expr *es[9] = {CALL(EXP, 1, a1),  CALL(LOG, 1, a1),  CALL(TANH, 1, a1),
                             CALL(SQRT, 1, a1), CALL(FABS, 1, an), CALL(FMA, 3, a3),
                             CALL(POW, 2, a2),  CALL(SIGMOID, 1, a1),
                             tir_binop_new(ctx, TIR_KIND_FLOORMOD, tir_f32(ctx, -7.5), tir_f32(ctx, 2))};
#undef CALL
    const tir_expr *dx[1] = {tir_float(ctx, TIR_F64, 0.7)};
    const tir_stmt *ss[11];
    for (int k = 0; k < 9; k++) ss[k] = st1(ctx, O, tir_i32(ctx, k), es[k]);
    ss[9] = st1(ctx, D, tir_i32(ctx, 0), tir_call_new(ctx, TIR_F64, TIR_INTRIN_EXP, 1, dx));
    ss[10] = st1(ctx, D, tir_i32(ctx, 1), tir_call_new(ctx, TIR_F64, TIR_INTRIN_SIGMOID, 1, dx));
    const tir_buffer *bufs[2] = {O, D};
    const tir_prim_func *f = mkfunc(ctx, 2, bufs, tir_seq_new(ctx, 11, ss), 0, NULL);
    float o[9];
    double d[2];
    tir_arg a[2] = {{o, 0}, {d, 0}};
    run_ok(ctx, f, 2, a, 3);
    /* volatile: the compiler must not fold these with its own (correctly
     * rounded) math; the interpreter calls the C library */
    volatile float fx = 0.7f, fy = 1.3f, fz = -0.2f;
    const float want[9] = {expf(fx),      logf(fx),      tanhf(fx),
                           sqrtf(fx),     fabsf(fz),     fmaf(fx, fy, fz),
                           powf(fx, fy),  1.0f / (1.0f + expf(-fx)), 0.5f};
    for (int k = 0; k < 9; k++)
        if (o[k] != want[k]) fail_msg("intrinsic %d: %.9g, want %.9g", k, o[k], want[k]);
    volatile double dv = 0.7;
    assert_true(d[0] == exp(dv));
    assert_true(d[1] == 1.0 / (1.0 + exp(-dv)));
}

static void test_vectors(void **st) {
    tir_ctx *ctx = *st;
    /* for i in range(4) (vectorized kind too): B[i*4 : i*4+4] = A[...] * 2 + 1 */
    const tir_buffer *A = buf1(ctx, "A", TIR_F32, 16), *B = buf1(ctx, "B", TIR_F32, 16);
    const tir_var *i = tir_var_new(ctx, "i", TIR_I32);
    const tir_expr *base = tir_mul(ctx, &i->base, tir_i32(ctx, 4));
    const tir_expr *ramp = tir_ramp_new(ctx, base, tir_i32(ctx, 1), 4);
    const tir_expr *v = tir_add(ctx, tir_mul(ctx, ld1(ctx, A, ramp), tir_broadcast_new(ctx, tir_f32(ctx, 2), 4)),
                                tir_broadcast_new(ctx, tir_f32(ctx, 1), 4));
    const tir_stmt *loop = tir_for_new(ctx, i, tir_i32(ctx, 0), tir_i32(ctx, 4), TIR_FOR_UNROLLED, NULL,
                                       0, NULL, st1(ctx, B, ramp, v));
    /* C[0:8] = Select(Ramp(0,1,8) < 5, A5[Ramp(0,1,8)], 0): lanes 5..7 must
     * not load A5 (5 elements) at all; strided Ramp gathers too. */
    const tir_buffer *A5 = buf1(ctx, "A5", TIR_F32, 5), *C = buf1(ctx, "C", TIR_F32, 8);
    const tir_expr *r8 = tir_ramp_new(ctx, tir_i32(ctx, 0), tir_i32(ctx, 1), 8);
    const tir_expr *cond = tir_lt(ctx, r8, tir_broadcast_new(ctx, tir_i32(ctx, 5), 8));
    const tir_expr *sel = tir_select_new(ctx, cond, ld1(ctx, A5, r8), tir_broadcast_new(ctx, tir_f32(ctx, 0), 8));
    const tir_expr *r2 = tir_ramp_new(ctx, tir_i32(ctx, 14), tir_i32(ctx, -2), 2);
    const tir_var *lv = tir_var_new(ctx, "lv", tir_dtype_with_lanes(TIR_F32, 2));
    const tir_expr *let = tir_let_new(ctx, lv, ld1(ctx, A, r2), tir_add(ctx, &lv->base, &lv->base));
    const tir_stmt *ss[3] = {loop, st1(ctx, C, r8, sel),
                             st1(ctx, C, tir_ramp_new(ctx, tir_i32(ctx, 6), tir_i32(ctx, 1), 2), let)};
    const tir_buffer *bufs[4] = {A, B, A5, C};
    const tir_prim_func *f = mkfunc(ctx, 4, bufs, tir_seq_new(ctx, 3, ss), 0, NULL);
    float a[16], b[16], a5[5] = {1, 2, 3, 4, 5}, c[8];
    for (int k = 0; k < 16; k++) a[k] = (float)k * 0.25f;
    tir_arg args[4] = {{a, 0}, {b, 0}, {a5, 0}, {c, 0}};
    run_ok(ctx, f, 4, args, (1u << 1) | (1u << 3));
    for (int k = 0; k < 16; k++) assert_true(b[k] == a[k] * 2 + 1);
    for (int k = 0; k < 5; k++) assert_true(c[k] == a5[k]);
    assert_true(c[5] == 0.0f);
    assert_true(c[6] == a[14] + a[14]);
    assert_true(c[7] == a[12] + a[12]);

    /* a vector lane out of bounds is reported with its indices */
    const tir_expr *r5 = tir_ramp_new(ctx, tir_i32(ctx, 2), tir_i32(ctx, 1), 4);
    f = mkfunc(ctx, 4, bufs, st1(ctx, C, tir_ramp_new(ctx, tir_i32(ctx, 0), tir_i32(ctx, 1), 4), ld1(ctx, A5, r5)), 0,
               NULL);
    const char *m[] = {"load of A5[5]", "shape [5]", NULL};
    expect_error(ctx, tir_interp_run(ctx, f, 4, args, NULL), TIR_ERR_OUT_OF_BOUNDS, m);
}

/* A reduce iter with domain [2, 6) bound to k + 2: init runs only when it
 * equals 2, once per spatial point, whatever the loop order. */
static void test_init_semantics(void **st) {
    tir_ctx *ctx = *st;
    const tir_buffer *A = buf1(ctx, "A", TIR_I32, 8), *C = buf1(ctx, "C", TIR_I32, 3);
    for (int order = 0; order < 2; order++) {
        const tir_var *i = tir_var_new(ctx, "i", TIR_I32), *k = tir_var_new(ctx, "k", TIR_I32);
        const tir_var *vi = tir_var_new(ctx, "vi", TIR_I32), *vk = tir_var_new(ctx, "vk", TIR_I32);
        tir_iter_var its[2] = {{vi, {tir_i32(ctx, 0), tir_i32(ctx, 3)}, TIR_ITER_SPATIAL},
                               {vk, {tir_i32(ctx, 2), tir_i32(ctx, 4)}, TIR_ITER_REDUCE}};
        tir_block_desc d = {0};
        d.name = "R";
        d.niters = 2;
        d.iters = its;
        d.init = st1(ctx, C, &vi->base, tir_i32(ctx, 100));
        d.body = st1(ctx, C, &vi->base, tir_add(ctx, ld1(ctx, C, &vi->base), ld1(ctx, A, &vk->base)));
        const tir_expr *vals[2] = {&i->base, tir_add(ctx, &k->base, tir_i32(ctx, 2))};
        const tir_stmt *s = tir_block_realize_new(ctx, 2, vals, NULL, tir_block_new(ctx, &d));
        const tir_var *outer = order ? k : i, *inner = order ? i : k;
        s = tir_for_new(ctx, inner, tir_i32(ctx, 0), tir_i32(ctx, inner == i ? 3 : 4), TIR_FOR_SERIAL,
                        NULL, 0, NULL, s);
        s = tir_for_new(ctx, outer, tir_i32(ctx, 0), tir_i32(ctx, outer == i ? 3 : 4), TIR_FOR_SERIAL,
                        NULL, 0, NULL, s);
        const tir_buffer *bufs[2] = {A, C};
        const tir_prim_func *f = mkfunc(ctx, 2, bufs, s, 0, NULL);
        int32_t a[8] = {1, 2, 3, 4, 5, 6, 7, 8}, c[3] = {-1, -1, -1};
        tir_arg args[2] = {{a, 0}, {c, 0}};
        run_ok(ctx, f, 2, args, 1u << 1);
        for (int x = 0; x < 3; x++) assert_int_equal(c[x], 100 + 3 + 4 + 5 + 6);
    }
}

/* Thread-bound, parallel and unrolled loops run as loops; a block
 * predicate guards its block. */
static void test_loop_kinds_and_predicate(void **st) {
    tir_ctx *ctx = *st;
    const tir_buffer *A = buf1(ctx, "A", TIR_I32, 10), *B = buf1(ctx, "B", TIR_I32, 10);
    const tir_var *bx = tir_var_new(ctx, "bx", TIR_I32), *tx = tir_var_new(ctx, "tx", TIR_I32);
    const tir_var *vi = tir_var_new(ctx, "vi", TIR_I32);
    const tir_expr *idx = tir_add(ctx, tir_mul(ctx, &bx->base, tir_i32(ctx, 4)), &tx->base);
    tir_iter_var it = {vi, {tir_i32(ctx, 0), tir_i32(ctx, 10)}, TIR_ITER_SPATIAL};
    tir_block_desc d = {0};
    d.name = "B";
    d.niters = 1;
    d.iters = &it;
    d.body = st1(ctx, B, &vi->base, tir_mul(ctx, ld1(ctx, A, &vi->base), tir_i32(ctx, 3)));
    const tir_stmt *s =
        tir_block_realize_new(ctx, 1, &idx, tir_lt(ctx, idx, tir_i32(ctx, 10)), tir_block_new(ctx, &d));
    s = tir_for_new(ctx, tx, tir_i32(ctx, 0), tir_i32(ctx, 4), TIR_FOR_THREAD_BINDING, "threadIdx.x", 0,
                    NULL, s);
    s = tir_for_new(ctx, bx, tir_i32(ctx, 0), tir_i32(ctx, 3), TIR_FOR_THREAD_BINDING, "blockIdx.x", 0,
                    NULL, s);
    /* for p in parallel(2): for v in vectorized(5): E[p * 5 + v] = p * 5 + v */
    const tir_buffer *E = buf1(ctx, "E", TIR_I32, 10);
    const tir_var *p = tir_var_new(ctx, "p", TIR_I32), *vv = tir_var_new(ctx, "v", TIR_I32);
    const tir_expr *pe = tir_add(ctx, tir_mul(ctx, &p->base, tir_i32(ctx, 5)), &vv->base);
    const tir_stmt *vec = tir_for_new(ctx, vv, tir_i32(ctx, 0), tir_i32(ctx, 5), TIR_FOR_VECTORIZED,
                                      NULL, 0, NULL, st1(ctx, E, pe, pe));
    const tir_stmt *par =
        tir_for_new(ctx, p, tir_i32(ctx, 0), tir_i32(ctx, 2), TIR_FOR_PARALLEL, NULL, 0, NULL, vec);
    const tir_stmt *ss[2] = {par, s};
    const tir_buffer *bufs[3] = {A, B, E};
    const tir_prim_func *f = mkfunc(ctx, 3, bufs, tir_seq_new(ctx, 2, ss), 0, NULL);
    int32_t a[10], b[10], ev[10];
    for (int k = 0; k < 10; k++) a[k] = k - 3;
    tir_arg args[3] = {{a, 0}, {b, 0}, {ev, 0}};
    run_ok(ctx, f, 3, args, 6);
    for (int k = 0; k < 10; k++) assert_int_equal(b[k], (k - 3) * 3);
    for (int k = 0; k < 10; k++) assert_int_equal(ev[k], k);
}

/* A binding outside its iter var's domain is an error even when every
 * access stays in bounds (a split without its predicate); the predicate
 * makes the same nest fine. */
static void test_iter_domain(void **st) {
    tir_ctx *ctx = *st;
    const tir_buffer *B = buf1(ctx, "B", TIR_I32, 8);
    for (int guarded = 0; guarded < 2; guarded++) {
        const tir_var *i = tir_var_new(ctx, "i", TIR_I32), *vi = tir_var_new(ctx, "vi", TIR_I32);
        tir_iter_var it = {vi, {tir_i32(ctx, 0), tir_i32(ctx, 3)}, TIR_ITER_SPATIAL};
        tir_block_desc d = {0};
        d.name = "S";
        d.niters = 1;
        d.iters = &it;
        d.body = st1(ctx, B, &vi->base, &vi->base);
        const tir_expr *v = &i->base;
        const tir_expr *pred = guarded ? tir_lt(ctx, v, tir_i32(ctx, 3)) : NULL;
        const tir_stmt *s = tir_for_new(ctx, i, tir_i32(ctx, 0), tir_i32(ctx, 4), TIR_FOR_SERIAL, NULL,
                                        0, NULL, tir_block_realize_new(ctx, 1, &v, pred, tir_block_new(ctx, &d)));
        const tir_buffer *bufs[1] = {B};
        const tir_prim_func *f = mkfunc(ctx, 1, bufs, s, 0, NULL);
        int32_t b[8] = {0};
        tir_arg args[1] = {{b, 0}};
        if (guarded) {
            run_ok(ctx, f, 1, args, 0);
            assert_int_equal(b[2], 2);
            assert_int_equal(b[3], 0);
        } else {
            const char *m[] = {"in block \"S\"", "iter var vi is bound to 3", "domain [0, 3)", NULL};
            expect_error(ctx, tir_interp_run(ctx, f, 1, args, NULL), TIR_ERR_EVAL, m);
        }
    }
}

/* Where the predicate masks a block, its bindings are not evaluated:
 * 6 // i at i = 0 is no division by zero under i > 0 (lowering puts the
 * bindings under the guard; the schedule fuzzer's fuse of a triangle's
 * loops then split by factors past its extent, helper h64). */
static void test_binding_under_predicate(void **st) {
    tir_ctx *ctx = *st;
    const tir_buffer *B = buf1(ctx, "B", TIR_I32, 8);
    const tir_var *i = tir_var_new(ctx, "i", TIR_I32), *vi = tir_var_new(ctx, "vi", TIR_I32);
    tir_iter_var it = {vi, {tir_i32(ctx, 0), tir_i32(ctx, 7)}, TIR_ITER_SPATIAL};
    tir_block_desc d = {0};
    d.name = "S";
    d.niters = 1;
    d.iters = &it;
    d.body = st1(ctx, B, &vi->base, &vi->base);
    const tir_expr *v = tir_floordiv(ctx, tir_i32(ctx, 6), &i->base);
    const tir_expr *pred = tir_gt(ctx, &i->base, tir_i32(ctx, 0));
    const tir_stmt *r = tir_block_realize_new(ctx, 1, &v, pred, tir_block_new(ctx, &d));
    const tir_stmt *s =
        tir_for_new(ctx, i, tir_i32(ctx, 0), tir_i32(ctx, 4), TIR_FOR_SERIAL, NULL, 0, NULL, r);
    const tir_buffer *bufs[1] = {B};
    const tir_prim_func *f = mkfunc(ctx, 1, bufs, s, 0, NULL);
    int32_t b[8] = {0};
    tir_arg args[1] = {{b, 0}};
    run_ok(ctx, f, 1, args, 0);
    assert_int_equal(b[6], 6); /* i = 1 */
    assert_int_equal(b[3], 3); /* i = 2 */
    assert_int_equal(b[2], 2); /* i = 3 */
    assert_int_equal(b[0], 0);
}

/* cp_async copies at once through address_of tokens; syncthreads and the
 * commit / wait calls are no-ops. */
static void test_cp_async(void **st) {
    tir_ctx *ctx = *st;
    const tir_buffer *A = buf1(ctx, "A", TIR_F32, 8), *B = buf1(ctx, "B", TIR_F32, 8);
    int64_t eight = 8;
    const tir_buffer *S = tir_buffer_simple(ctx, "S", TIR_F32, 1, &eight, TIR_SCOPE_SHARED);
    for (int variant = 0; variant < 4; variant++) {
        const tir_var *i = tir_var_new(ctx, "i", TIR_I32), *j = tir_var_new(ctx, "j", TIR_I32);
        const tir_expr *off = tir_mul(ctx, &i->base, tir_i32(ctx, 4));
        if (variant == 2) off = tir_add(ctx, off, tir_i32(ctx, 1)); /* misaligned */
        const tir_expr *ad = ld1(ctx, S, off), *as = ld1(ctx, A, off);
        const tir_expr *args3[3] = {tir_call_new(ctx, TIR_HANDLE, TIR_INTRIN_ADDRESS_OF, 1, &ad),
                                    tir_call_new(ctx, TIR_HANDLE, TIR_INTRIN_ADDRESS_OF, 1, &as),
                                    tir_i32(ctx, 16)};
        /* variant 3: a source size of 8 of the 16 bytes, the rest zero-filled */
        const tir_expr *args4[4] = {args3[0], args3[1], args3[2], tir_i32(ctx, 8)};
        const tir_stmt *cp = tir_evaluate_new(
            ctx, tir_call_new(ctx, TIR_VOID, TIR_INTRIN_CP_ASYNC, variant == 3 ? 4 : 3,
                              variant == 3 ? args4 : args3));
        /* variant 1 copies only the first half */
        const tir_stmt *copy = tir_for_new(ctx, i, tir_i32(ctx, 0), tir_i32(ctx, variant == 1 ? 1 : 2),
                                           TIR_FOR_SERIAL, NULL, 0, NULL, cp);
        const tir_expr *zero = tir_i32(ctx, 0);
        const tir_stmt *ss[5] = {
            copy,
            tir_evaluate_new(ctx, tir_call_new(ctx, TIR_VOID, TIR_INTRIN_CP_ASYNC_COMMIT, 0, NULL)),
            tir_evaluate_new(ctx, tir_call_new(ctx, TIR_VOID, TIR_INTRIN_CP_ASYNC_WAIT, 1, &zero)),
            tir_evaluate_new(ctx, tir_call_new(ctx, TIR_VOID, TIR_INTRIN_SYNCTHREADS, 0, NULL)),
            tir_for_new(ctx, j, zero, tir_i32(ctx, 8), TIR_FOR_SERIAL, NULL, 0, NULL,
                        st1(ctx, B, &j->base, tir_mul(ctx, ld1(ctx, S, &j->base), tir_f32(ctx, 2)))),
        };
        const tir_buffer *bufs[2] = {A, B};
        const tir_prim_func *f =
            mkfunc(ctx, 2, bufs, tir_allocate_new(ctx, S, tir_seq_new(ctx, 5, ss)), 0, NULL);
        float a[8], b[8];
        for (int k = 0; k < 8; k++) a[k] = (float)k + 0.5f;
        tir_arg args[2] = {{a, 0}, {b, 0}};
        if (variant == 0) {
            run_ok(ctx, f, 2, args, 1u << 1);
            for (int k = 0; k < 8; k++) assert_true(b[k] == a[k] * 2);
        } else if (variant == 3) {
            run_ok(ctx, f, 2, args, 1u << 1);
            for (int k = 0; k < 8; k++) assert_true(b[k] == (k % 4 < 2 ? a[k] * 2 : 0));
        } else if (variant == 1) {
            const char *m[] = {"load of S[4]", "never written", NULL};
            expect_error(ctx, tir_interp_run(ctx, f, 2, args, NULL), TIR_ERR_UNINIT_READ, m);
        } else {
            const char *m[] = {"cp_async", "misaligned", NULL};
            expect_error(ctx, tir_interp_run(ctx, f, 2, args, NULL), TIR_ERR_EVAL, m);
        }
    }
}

/* ============================================= the internal API (SIMT use) */

typedef struct simt_user {
    int syncs;
    int allocs;
    ir_mbuf shared; /* one storage for every thread's S */
    unsigned char data[64];
    uint8_t written[16];
} simt_user;

static tir_status hook_alloc(ir_env *e, ir_mbuf *m) {
    simt_user *u = e->user;
    u->allocs++;
    assert_true(m->size * m->elem_bytes <= (int64_t)sizeof u->data);
    m->data = u->data;
    m->written = u->written;
    m->owner = u;
    return TIR_OK;
}
static void hook_release(ir_env *e, ir_mbuf *m) {
    (void)e;
    (void)m;
}
static bool hook_intrin(ir_env *e, const ir_cexpr *call, const ir_val *args, ir_val *r) {
    (void)args;
    (void)r;
    simt_user *u = e->user;
    if (call->u.call.op == TIR_INTRIN_SYNCTHREADS) {
        u->syncs++;
        return true;
    }
    return false;
}

/* for tx in thread_binding(4, "threadIdx.x"): allocate S (shared):
 *   S[tx] = A[tx] + 1; syncthreads(); B[tx] = S[max(tx - 1, 0)]
 * One env per thread, all sharing the parameters and (through the alloc
 * hook) one storage for S, run whole in thread order: thread t reads what
 * threads t-1 and t wrote.  A real simulator would also switch threads at
 * the barrier (the intrin hook); here the hook counts barriers. */
static void test_internal_api(void **st) {
    tir_ctx *ctx = *st;
    const tir_buffer *A = buf1(ctx, "A", TIR_I32, 4), *B = buf1(ctx, "B", TIR_I32, 4);
    int64_t four = 4;
    const tir_buffer *S = tir_buffer_simple(ctx, "S", TIR_I32, 1, &four, TIR_SCOPE_SHARED);
    const tir_var *tx = tir_var_new(ctx, "tx", TIR_I32);
    const tir_expr *t = &tx->base, *rev = tir_max(ctx, tir_sub(ctx, t, tir_i32(ctx, 1)), tir_i32(ctx, 0));
    const tir_stmt *ss[3] = {
        st1(ctx, S, t, tir_add(ctx, ld1(ctx, A, t), tir_i32(ctx, 1))),
        tir_evaluate_new(ctx, tir_call_new(ctx, TIR_VOID, TIR_INTRIN_SYNCTHREADS, 0, NULL)),
        st1(ctx, B, t, ld1(ctx, S, rev)),
    };
    const tir_stmt *body = tir_for_new(ctx, tx, tir_i32(ctx, 0), tir_i32(ctx, 4), TIR_FOR_THREAD_BINDING,
                                       "threadIdx.x", 0, NULL,
                                       tir_allocate_new(ctx, S, tir_seq_new(ctx, 3, ss)));
    const tir_buffer *bufs[2] = {A, B};
    const tir_prim_func *f = mkfunc(ctx, 2, bufs, body, 0, NULL);
    ir_prog *p;
    assert_int_equal(ir_prog_compile(ctx, f, &p), TIR_OK);
    assert_int_equal(p->nbufs, 3);
    simt_user u;
    memset(&u, 0, sizeof u);
    ir_hooks hooks = {hook_alloc, hook_release, hook_intrin, NULL};
    int32_t a[4] = {10, 20, 30, 40}, b[4] = {0, 0, 0, 0};
    tir_arg args[2] = {{a, 0}, {b, 0}};
    ir_env *env[4];
    for (int k = 0; k < 4; k++) {
        env[k] = ir_env_new(p, ctx, &hooks, &u);
        assert_non_null(env[k]);
        env[k]->simt = true;
        env[k]->thread_idx[IR_THREAD_X] = k;
    }
    assert_int_equal(ir_env_bind_params(env[0], 2, args, 1u << 1), TIR_OK);
    for (int k = 1; k < 4; k++)
        for (int s = 0; s < 2; s++) {
            int slot = p->params[s].slot;
            ir_env_set_buf(env[k], slot, env[0]->bufs[slot]);
        }
    for (int k = 0; k < 4; k++) assert_int_equal(ir_exec(env[k]), TIR_OK);
    assert_int_equal(u.syncs, 4);
    assert_int_equal(u.allocs, 4);
    const int32_t want[4] = {11, 11, 21, 31};
    for (int k = 0; k < 4; k++) assert_int_equal(b[k], want[k]);
    /* B's written bytes are shared too: all four threads stored */
    const ir_mbuf *mb = env[0]->bufs[p->params[1].slot];
    for (int k = 0; k < 4; k++) assert_int_equal(mb->written[k], 1);
    for (int k = 0; k < 4; k++) ir_env_free(env[k]);
    ir_prog_free(p);

    /* a thread index past the loop's extent skips the body */
    assert_int_equal(ir_prog_compile(ctx, f, &p), TIR_OK);
    ir_env *e = ir_env_new(p, ctx, &hooks, &u);
    e->simt = true;
    e->thread_idx[IR_THREAD_X] = 4;
    assert_int_equal(ir_env_bind_params(e, 2, args, 0), TIR_OK);
    int before = u.syncs;
    assert_int_equal(ir_exec(e), TIR_OK);
    assert_int_equal(u.syncs, before);
    ir_env_free(e);
    ir_prog_free(p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_matmul_all_dtypes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_matmul_bias_all_dtypes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_conv2d_all_dtypes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_elementwise_chain_all_dtypes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_f32_plain_c_bitwise, setup, teardown),
        cmocka_unit_test_setup_teardown(test_out_of_bounds, setup, teardown),
        cmocka_unit_test_setup_teardown(test_uninit_reads, setup, teardown),
        cmocka_unit_test_setup_teardown(test_division_by_zero, setup, teardown),
        cmocka_unit_test_setup_teardown(test_argument_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_integer_semantics, setup, teardown),
        cmocka_unit_test_setup_teardown(test_half_rounding, setup, teardown),
        cmocka_unit_test_setup_teardown(test_int_to_narrow_float, setup, teardown),
        cmocka_unit_test_setup_teardown(test_half_arithmetic, setup, teardown),
        cmocka_unit_test_setup_teardown(test_half_fma_minmax, setup, teardown),
        cmocka_unit_test_setup_teardown(test_minmax_signaling_nan, setup, teardown),
        cmocka_unit_test_setup_teardown(test_math_intrinsics, setup, teardown),
        cmocka_unit_test_setup_teardown(test_vectors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_init_semantics, setup, teardown),
        cmocka_unit_test_setup_teardown(test_loop_kinds_and_predicate, setup, teardown),
        cmocka_unit_test_setup_teardown(test_iter_domain, setup, teardown),
        cmocka_unit_test_setup_teardown(test_binding_under_predicate, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cp_async, setup, teardown),
        cmocka_unit_test_setup_teardown(test_internal_api, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
