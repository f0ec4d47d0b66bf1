/* test_interp_tc.c: the reference interpreter's tile-level semantics of
 * the logical tensor-core intrinsics (frag_fill, frag_load, frag_store,
 * mma_sync on fragment buffers of scope frag.a / frag.b / frag.acc).
 *
 * Hand-built functions tile a small matmul by hand with these calls and
 * are compared with C loops: bit for bit, with inputs (small integers,
 * powers of two) whose products and sums are exact, so that any order of
 * summation gives the same float.  Then the points where an inexact
 * choice shows: one rounding of a double sum (not a float running sum),
 * TF32 rounding of float32 inputs to nearest with ties to even (edge
 * cases, then random bit patterns against the test's own reference),
 * clipping of loads (zero fill) and stores at ragged edges.  Then the
 * user errors: misaligned tile origins, wrong scopes and dtypes, operands
 * that are not address_of, unwritten fragments, the lowered-only lane_id
 * and ldmatrix.
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

#include "minitir/ir.h"
#include "tc_kernels.h"

static int setup(void **st) {
    *st = tir_ctx_create();
    return *st ? 0 : -1;
}
static int teardown(void **st) {
    tir_ctx_destroy(*st);
    return 0;
}

/* ============================================================== helpers */

#define to_half tck_to_half
#define tf32 tck_tf32

static const tir_expr *I(tir_ctx *ctx, int64_t v) { return tir_i32(ctx, v); }

static const tir_expr *addr2(tir_ctx *ctx, const tir_buffer *b, const tir_expr *i,
                             const tir_expr *j) {
    const tir_expr *idx[2] = {i, j};
    const tir_expr *ld = tir_load(ctx, b, 2, idx);
    return tir_call_new(ctx, TIR_HANDLE, TIR_INTRIN_ADDRESS_OF, 1, &ld);
}

static const tir_stmt *call_stmt(tir_ctx *ctx, tir_intrin op, int n, const tir_expr *const *a) {
    return tir_evaluate_new(ctx, tir_call_new(ctx, TIR_VOID, op, n, a));
}

static const tir_stmt *fill(tir_ctx *ctx, const tir_buffer *f, const tir_expr *r,
                            const tir_expr *c, double v) {
    const tir_expr *a[2] = {addr2(ctx, f, r, c), tir_f32(ctx, v)};
    return call_stmt(ctx, TIR_INTRIN_FRAG_FILL, 2, a);
}

static const tir_stmt *move(tir_ctx *ctx, tir_intrin op, const tir_buffer *f, const tir_expr *fr,
                            const tir_expr *fc, const tir_buffer *m, const tir_expr *mr,
                            const tir_expr *mc) {
    const tir_expr *a[2] = {addr2(ctx, f, fr, fc), addr2(ctx, m, mr, mc)};
    return call_stmt(ctx, op, 2, a);
}

static const tir_stmt *mma(tir_ctx *ctx, const tir_buffer *c, const tir_expr *ci,
                           const tir_expr *cj, const tir_buffer *a, const tir_expr *ai,
                           const tir_expr *ak, const tir_buffer *b, const tir_expr *bk,
                           const tir_expr *bj) {
    const tir_expr *x[3] = {addr2(ctx, c, ci, cj), addr2(ctx, a, ai, ak), addr2(ctx, b, bk, bj)};
    return call_stmt(ctx, TIR_INTRIN_MMA_SYNC, 3, x);
}

static const tir_buffer *buf2(tir_ctx *ctx, const char *name, tir_dtype t, int64_t r, int64_t c,
                              tir_scope s) {
    int64_t sh[2] = {r, c};
    return tir_buffer_simple(ctx, name, t, 2, sh, s);
}

static const tir_stmt *loop(tir_ctx *ctx, const tir_var *v, int64_t n, const tir_stmt *body) {
    return tir_for_new(ctx, v, I(ctx, 0), I(ctx, n), TIR_FOR_SERIAL, NULL, 0, NULL, body);
}

/* A function of the buffer parameters whose body is one root block that
 * allocates `allocs`. */
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

static void expect_error(tir_ctx *ctx, tir_status got, tir_status want, const char *const *subs) {
    if (got != want)
        fail_msg("got %s (%s), want %s", tir_status_name(got), tir_ctx_error(ctx),
                 tir_status_name(want));
    for (; *subs; subs++)
        if (!strstr(tir_ctx_error(ctx), *subs))
            fail_msg("message lacks \"%s\":\n%s", *subs, tir_ctx_error(ctx));
    tir_ctx_clear_error(ctx);
}

/* ============================================================ the matmul */

/* C (M x N, float32) = A (M x K) . B (K x N) of dtype t, tiled by hand:
 *   for ti, tj: frag_fill(Cf tile, 0)
 *               for tk: frag_load(Af tile, A), frag_load(Bf tile, B),
 *                       mma_sync(Cf tile, Af tile, Bf tile)
 *               frag_store(Cf tile, C)
 * Fragments cover A, B, C rounded up to whole tiles: ragged M, N, K are
 * handled by the clipping of frag_load (zero fill) and frag_store. */
static const tir_prim_func *tiled_matmul(tir_ctx *ctx, tir_dtype t, int64_t M, int64_t N,
                                         int64_t K) {
    int tk = tir_dtype_eq(t, TIR_F32) ? 8 : 16;
    int64_t MT = (M + 15) / 16, NT = (N + 7) / 8, KT = (K + tk - 1) / tk;
    const tir_buffer *A = buf2(ctx, "A", t, M, K, TIR_SCOPE_GLOBAL);
    const tir_buffer *B = buf2(ctx, "B", t, K, N, TIR_SCOPE_GLOBAL);
    const tir_buffer *C = buf2(ctx, "C", TIR_F32, M, N, TIR_SCOPE_GLOBAL);
    const tir_buffer *Af = buf2(ctx, "Af", t, MT * 16, KT * tk, TIR_SCOPE_FRAG_A);
    const tir_buffer *Bf = buf2(ctx, "Bf", t, KT * tk, NT * 8, TIR_SCOPE_FRAG_B);
    const tir_buffer *Cf = buf2(ctx, "Cf", TIR_F32, MT * 16, NT * 8, TIR_SCOPE_FRAG_ACC);
    const tir_var *ti = tir_var_new(ctx, "ti", TIR_I32), *tj = tir_var_new(ctx, "tj", TIR_I32);
    const tir_var *kk = tir_var_new(ctx, "tk", TIR_I32);
    const tir_expr *i0 = tir_mul(ctx, &ti->base, I(ctx, 16));
    const tir_expr *j0 = tir_mul(ctx, &tj->base, I(ctx, 8));
    const tir_expr *k0 = tir_mul(ctx, &kk->base, I(ctx, tk));
    const tir_stmt *kbody[3] = {
        move(ctx, TIR_INTRIN_FRAG_LOAD, Af, i0, k0, A, i0, k0),
        move(ctx, TIR_INTRIN_FRAG_LOAD, Bf, k0, j0, B, k0, j0),
        mma(ctx, Cf, i0, j0, Af, i0, k0, Bf, k0, j0),
    };
    const tir_stmt *tile[3] = {
        fill(ctx, Cf, i0, j0, 0.0),
        loop(ctx, kk, KT, tir_seq_new(ctx, 3, kbody)),
        move(ctx, TIR_INTRIN_FRAG_STORE, Cf, i0, j0, C, i0, j0),
    };
    const tir_stmt *body = loop(ctx, ti, MT, loop(ctx, tj, NT, tir_seq_new(ctx, 3, tile)));
    const tir_buffer *params[3] = {A, B, C}, *allocs[3] = {Af, Bf, Cf};
    return mkfunc(ctx, 3, params, body, 3, allocs);
}

/* Runs tiled_matmul on a, b (float values exactly representable in t)
 * and checks every C element against a double sum rounded once (TF32
 * inputs for float32).  C starts uninitialised: every element must be
 * stored (frag_store covers it) and none outside it (bounds). */
static void check_matmul(tir_ctx *ctx, tir_dtype t, int64_t M, int64_t N, int64_t K,
                         const float *a, const float *b) {
    const tir_prim_func *f = tiled_matmul(ctx, t, M, N, K);
    bool half = !tir_dtype_eq(t, TIR_F32), bf = tir_dtype_eq(t, TIR_BF16);
    size_t es = half ? 2 : 4;
    unsigned char *A = malloc((size_t)(M * K) * es), *B = malloc((size_t)(K * N) * es);
    float *C = malloc(sizeof(float) * (size_t)(M * N));
    for (int64_t i = 0; i < M * K; i++) {
        if (half) ((uint16_t *)A)[i] = to_half(a[i], bf);
        else ((float *)A)[i] = a[i];
    }
    for (int64_t i = 0; i < K * N; i++) {
        if (half) ((uint16_t *)B)[i] = to_half(b[i], bf);
        else ((float *)B)[i] = b[i];
    }
    for (int64_t i = 0; i < M * N; i++) C[i] = NAN;
    tir_arg args[3] = {{A, 0}, {B, 0}, {C, 0}};
    tir_interp_opts o = {1u << 2};
    tir_status st = tir_interp_run(ctx, f, 3, args, &o);
    if (st) fail_msg("%s", tir_ctx_error(ctx));
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            double s = 0;
            for (int64_t k = 0; k < K; k++)
                s += half ? (double)a[i * K + k] * b[k * N + j]
                          : (double)tf32(a[i * K + k]) * tf32(b[k * N + j]);
            if (C[i * N + j] != (float)s)
                fail_msg("C[%lld, %lld] = %.9g, want %.9g", (long long)i, (long long)j,
                         C[i * N + j], (float)s);
        }
    free(A);
    free(B);
    free(C);
}

static uint32_t seed = 12345;
static int small_int(int lo, int hi) {
    seed = seed * 1664525u + 1013904223u;
    return lo + (int)((seed >> 8) % (uint32_t)(hi - lo + 1));
}

/* Small integers: every product and sum is exact in float, so the C loop
 * and the interpreter agree bit for bit whatever the order. */
static void check_random(tir_ctx *ctx, tir_dtype t, int64_t M, int64_t N, int64_t K) {
    float *a = malloc(sizeof(float) * (size_t)(M * K)), *b = malloc(sizeof(float) * (size_t)(K * N));
    for (int64_t i = 0; i < M * K; i++) a[i] = (float)small_int(-8, 8);
    for (int64_t i = 0; i < K * N; i++) b[i] = (float)small_int(-8, 8) * 0.25f;
    check_matmul(ctx, t, M, N, K, a, b);
    free(a);
    free(b);
}

static void test_matmul_exact(void **st) {
    tir_ctx *ctx = *st;
    const tir_dtype ts[3] = {TIR_BF16, TIR_F16, TIR_F32};
    for (int i = 0; i < 3; i++) {
        check_random(ctx, ts[i], 16, 8, 16);  /* one tile (two k steps for tf32) */
        check_random(ctx, ts[i], 32, 24, 48); /* several tiles and k steps */
    }
}

/* Ragged M, N and K: loads clip with zero fill (the padding of A's columns
 * and B's rows contributes 0), stores clip (C has no room for the rest:
 * a store outside it would be an out-of-bounds error). */
static void test_matmul_ragged(void **st) {
    tir_ctx *ctx = *st;
    check_random(ctx, TIR_BF16, 20, 12, 20);
    check_random(ctx, TIR_F16, 5, 3, 7);
    check_random(ctx, TIR_F32, 17, 9, 13);
}

/* The sum is formed in double and rounded once: 2^24 + 1 + 1 is 2^24 + 2
 * (a float running sum would give 2^24 twice, ties to even). */
static void test_one_rounding(void **st) {
    tir_ctx *ctx = *st;
    float a[16 * 16] = {0}, b[16 * 8] = {0};
    a[0] = 4096, a[1] = 1, a[2] = 1;
    b[0] = 4096, b[8] = 1, b[16] = 1;
    /* check_matmul's reference is the double sum: C[0, 0] = 16777218 */
    check_matmul(ctx, TIR_BF16, 16, 8, 16, a, b);
    assert_true((float)(16777216.0 + 2.0) != (16777216.0f + 1.0f) + 1.0f);
}

/* TF32: float32 inputs keep 10 mantissa bits, rounded to nearest with
 * ties to even (cvt.rn.tf32.f32) before multiplying; Inf and NaN stay, a
 * finite value past the largest TF32 value becomes Inf.  Bit patterns in,
 * bit patterns wanted. */
static const struct {
    uint32_t in, want;
} tf32_cases[] = {
    {0x3f801000u, 0x3f800000u}, /* 1 + 2^-11, a tie with the kept bit even: down to 1 */
    {0x3f803000u, 0x3f804000u}, /* 1 + 3 2^-11, a tie with the kept bit odd: up, 1 + 2^-9 */
    {0xbf801000u, 0xbf800000u}, /* the negative ties: the same magnitudes */
    {0xbf803000u, 0xbf804000u},
    {0x3f800fffu, 0x3f800000u}, /* just below half a TF32 ulp: down */
    {0x3f801001u, 0x3f802000u}, /* just above: up */
    {0x3ffff000u, 0x40000000u}, /* a tie under 2 (kept bits all ones): carries into the exponent */
    {0xbfffffffu, 0xc0000000u}, /* above half under -2: -2 */
    {0x7f7fe000u, 0x7f7fe000u}, /* the largest TF32 value stays */
    {0x7f7fffffu, 0x7f800000u}, /* the largest float32 rounds up, to Inf */
    {0xff7ff000u, 0xff800000u}, /* a tie above -(the largest TF32 value), odd: -Inf */
    {0x7f800000u, 0x7f800000u}, /* Inf and -Inf stay */
    {0xff800000u, 0xff800000u},
    {0x00003000u, 0x00004000u}, /* subnormals round at the same bit: a tie, odd, up */
    {0x00001000u, 0x00000000u}, /* a tie, even: to 0 */
    {0x007ff000u, 0x00800000u}, /* a tie up into the smallest normal */
};
enum { NCASES = sizeof tf32_cases / sizeof tf32_cases[0] };
/* NaNs stay NaN: quiet, all ones (an added carry would reach the sign), a
 * payload only below TF32's bits (truncating it would give Inf). */
static const uint32_t tf32_nans[] = {0x7fc00000u, 0xffffffffu, 0x7f800001u, 0xff801fffu};
enum { NNANS = sizeof tf32_nans / sizeof tf32_nans[0] };

static float from_bits(uint32_t u) {
    float x;
    memcpy(&x, &u, 4);
    return x;
}
static uint32_t to_bits(float x) {
    uint32_t u;
    memcpy(&u, &x, 4);
    return u;
}

/* C = A . B through the interpreter's mma_sync (tiled_matmul, float32). */
static void run_tf32(tir_ctx *ctx, int64_t M, int64_t N, int64_t K, float *a, float *b, float *c) {
    const tir_prim_func *f = tiled_matmul(ctx, TIR_F32, M, N, K);
    tir_arg args[3] = {{a, 0}, {b, 0}, {c, 0}};
    if (tir_interp_run(ctx, f, 3, args, NULL) != TIR_OK) fail_msg("%s", tir_ctx_error(ctx));
}

/* The cases through the test's own reference (tck_tf32, double arithmetic)
 * and through the interpreter: A's column 0 holds them, B[0, 0] = 1 and
 * the rest 0, so C[i, 0] = tf32(A[i, 0]) exactly. */
static void test_tf32_rounding(void **st) {
    tir_ctx *ctx = *st;
    for (int i = 0; i < NCASES; i++)
        if (to_bits(tf32(from_bits(tf32_cases[i].in))) != tf32_cases[i].want)
            fail_msg("reference: tf32(0x%08x) = 0x%08x, want 0x%08x", tf32_cases[i].in,
                     to_bits(tf32(from_bits(tf32_cases[i].in))), tf32_cases[i].want);
    for (int i = 0; i < NNANS; i++) assert_true(isnan(tf32(from_bits(tf32_nans[i]))));
    enum { M = 32 };
    float a[M * 8] = {0}, b[8 * 8] = {0}, c[M * 8];
    for (int i = 0; i < NCASES + NNANS; i++)
        a[i * 8] = from_bits(i < NCASES ? tf32_cases[i].in : tf32_nans[i - NCASES]);
    b[0] = 1;
    run_tf32(ctx, M, 8, 8, a, b, c);
    for (int i = 0; i < NCASES; i++)
        if (to_bits(c[i * 8]) != tf32_cases[i].want)
            fail_msg("interpreter: tf32(0x%08x) = 0x%08x, want 0x%08x", tf32_cases[i].in,
                     to_bits(c[i * 8]), tf32_cases[i].want);
    for (int i = NCASES; i < NCASES + NNANS; i++) assert_true(isnan(c[i * 8]));
    /* bfloat16 / float16 inputs are not rounded further: an f16 mantissa
     * bit below TF32's 10 bits does not exist, so 1 + 2^-10 stays. */
    float ah[16 * 16] = {0}, bh[16 * 8] = {0};
    ah[0] = 1.0f + 0x1p-10f;
    bh[0] = 1;
    check_matmul(ctx, TIR_F16, 16, 8, 16, ah, bh);
}

/* The interpreter's rounding against the reference on random bit
 * patterns: A (M x 8) of random finite floats below 2^127 (their TF32
 * values stay finite, so the zero products stay 0), B the identity, so
 * C = tf32(A) element by element; every eighth has a mantissa that ends in
 * a tie. */
static void test_tf32_random(void **st) {
    tir_ctx *ctx = *st;
    enum { M = 2048, RUNS = 4 };
    float *a = malloc(sizeof(float) * M * 8), *c = malloc(sizeof(float) * M * 8), b[64] = {0};
    for (int i = 0; i < 8; i++) b[i * 8 + i] = 1;
    uint32_t x = 0x9e3779b9u; /* xorshift32 */
    printf("# seed 0x%08x, %d values\n", x, RUNS * M * 8);
    for (int r = 0; r < RUNS; r++) {
        for (int i = 0; i < M * 8; i++) {
            uint32_t u;
            do {
                x ^= x << 13, x ^= x >> 17, x ^= x << 5;
                u = x;
                if (i % 8 == 0) u = (u & ~0x1fffu) | 0x1000u;
            } while (((u >> 23) & 0xff) >= 0xfe);
            a[i] = from_bits(u);
        }
        run_tf32(ctx, M, 8, 8, a, b, c);
        for (int i = 0; i < M * 8; i++)
            if (c[i] != tf32(a[i]))
                fail_msg("tf32(0x%08x): interpreter 0x%08x, reference 0x%08x", to_bits(a[i]),
                         to_bits(c[i]), to_bits(tf32(a[i])));
    }
    free(a);
    free(c);
}

/* frag_fill fills exactly its tile; frag_load / frag_store of a tile in
 * the middle of a fragment with leading dimensions touch only that tile. */
static void test_fill_and_leading_dims(void **st) {
    tir_ctx *ctx = *st;
    int64_t fsh[3] = {2, 32, 16}, dsh[3] = {2, 32, 16};
    const tir_buffer *Cf = tir_buffer_simple(ctx, "Cf", TIR_F32, 3, fsh, TIR_SCOPE_FRAG_ACC);
    const tir_buffer *D = tir_buffer_simple(ctx, "D", TIR_F32, 3, dsh, TIR_SCOPE_GLOBAL);
    const tir_expr *fi[3] = {I(ctx, 1), I(ctx, 16), I(ctx, 8)};
    const tir_expr *fl = tir_load(ctx, Cf, 3, fi);
    const tir_expr *di[3] = {I(ctx, 0), I(ctx, 3), I(ctx, 5)};
    const tir_expr *dl = tir_load(ctx, D, 3, di);
    const tir_expr *fa = tir_call_new(ctx, TIR_HANDLE, TIR_INTRIN_ADDRESS_OF, 1, &fl);
    const tir_expr *da = tir_call_new(ctx, TIR_HANDLE, TIR_INTRIN_ADDRESS_OF, 1, &dl);
    const tir_expr *fa2[2] = {fa, tir_f32(ctx, 2.5)}, *st2[2] = {fa, da};
    const tir_stmt *ss[2] = {call_stmt(ctx, TIR_INTRIN_FRAG_FILL, 2, fa2),
                             call_stmt(ctx, TIR_INTRIN_FRAG_STORE, 2, st2)};
    const tir_buffer *params[1] = {D}, *allocs[1] = {Cf};
    const tir_prim_func *f = mkfunc(ctx, 1, params, tir_seq_new(ctx, 2, ss), 1, allocs);
    float d[2 * 32 * 16];
    for (int i = 0; i < 2 * 32 * 16; i++) d[i] = -1;
    tir_arg args[1] = {{d, 0}};
    assert_int_equal(tir_interp_run(ctx, f, 1, args, NULL), TIR_OK);
    for (int l = 0; l < 2; l++)
        for (int r = 0; r < 32; r++)
            for (int c = 0; c < 16; c++) {
                bool in = l == 0 && r >= 3 && r < 19 && c >= 5 && c < 13;
                assert_true(d[(l * 32 + r) * 16 + c] == (in ? 2.5f : -1.0f));
            }
}

/* ================================================================ errors */

/* Runs one statement after filling the fragments Af (frag.a bfloat16
 * 32x32), Bf (frag.b bfloat16 32x16) and Cf (frag.acc float32 32x16)
 * wholly with 1, 1, 0; the other buffers below are there for the
 * statement to misuse.  o: the float32 parameter O (32x16, zeros before). */
static tir_status run_stmt(tir_ctx *ctx, const tir_stmt *(*mk)(tir_ctx *, const tir_buffer *const *),
                           float *o) {
    const tir_buffer *bufs[7] = {
        buf2(ctx, "Af", TIR_BF16, 32, 32, TIR_SCOPE_FRAG_A),
        buf2(ctx, "Bf", TIR_BF16, 32, 16, TIR_SCOPE_FRAG_B),
        buf2(ctx, "Cf", TIR_F32, 32, 16, TIR_SCOPE_FRAG_ACC),
        buf2(ctx, "Hf", TIR_F16, 32, 16, TIR_SCOPE_FRAG_B),   /* another dtype */
        buf2(ctx, "Xf", TIR_F16, 32, 16, TIR_SCOPE_FRAG_ACC), /* not an acc dtype */
        buf2(ctx, "G", TIR_BF16, 32, 32, TIR_SCOPE_GLOBAL),
        buf2(ctx, "O", TIR_F32, 32, 16, TIR_SCOPE_GLOBAL),
    };
    const tir_stmt *fa[4], *ss[3];
    for (int k = 0; k < 4; k++) fa[k] = fill(ctx, bufs[0], I(ctx, k / 2 * 16), I(ctx, k % 2 * 16), 1.0);
    const tir_var *r = tir_var_new(ctx, "r", TIR_I32), *c = tir_var_new(ctx, "c", TIR_I32);
    const tir_expr *r16 = tir_mul(ctx, &r->base, I(ctx, 16)), *c8 = tir_mul(ctx, &c->base, I(ctx, 8));
    const tir_stmt *fb[2] = {fill(ctx, bufs[1], r16, c8, 1.0), fill(ctx, bufs[2], r16, c8, 0.0)};
    ss[0] = tir_seq_new(ctx, 4, fa);
    ss[1] = loop(ctx, r, 2, loop(ctx, c, 2, tir_seq_new(ctx, 2, fb)));
    ss[2] = mk(ctx, bufs);
    const tir_buffer *params[2] = {bufs[5], bufs[6]};
    const tir_buffer *allocs[5] = {bufs[0], bufs[1], bufs[2], bufs[3], bufs[4]};
    const tir_prim_func *f = mkfunc(ctx, 2, params, tir_seq_new(ctx, 3, ss), 5, allocs);
    uint16_t g[32 * 32];
    for (int i = 0; i < 32 * 32; i++) g[i] = to_half(i % 7 + 1, true);
    for (int i = 0; i < 32 * 16; i++) o[i] = 0;
    tir_arg args[2] = {{g, 0}, {o, 0}};
    return tir_interp_run(ctx, f, 2, args, NULL);
}

static void expect_stmt_error(tir_ctx *ctx, const tir_stmt *(*mk)(tir_ctx *, const tir_buffer *const *),
                              tir_status want, const char *const *subs) {
    float o[32 * 16];
    expect_error(ctx, run_stmt(ctx, mk, o), want, subs);
}

#define A_ bufs[0]
#define B_ bufs[1]
#define C_ bufs[2]
static const tir_stmt *e_misaligned_load(tir_ctx *ctx, const tir_buffer *const *bufs) {
    return move(ctx, TIR_INTRIN_FRAG_LOAD, A_, I(ctx, 8), I(ctx, 0), bufs[5], I(ctx, 0), I(ctx, 0));
}
static const tir_stmt *e_misaligned_mma(tir_ctx *ctx, const tir_buffer *const *bufs) {
    return mma(ctx, C_, I(ctx, 0), I(ctx, 4), A_, I(ctx, 0), I(ctx, 0), B_, I(ctx, 0), I(ctx, 0));
}
static const tir_stmt *e_partial_tile(tir_ctx *ctx, const tir_buffer *const *bufs) {
    /* Bf is 32x16: a tile at column 8 is aligned (8 wide) and whole; at
     * row 32 it would start past the end */
    return mma(ctx, C_, I(ctx, 0), I(ctx, 0), A_, I(ctx, 0), I(ctx, 0), B_, I(ctx, 32), I(ctx, 8));
}
static const tir_stmt *e_scope_acc(tir_ctx *ctx, const tir_buffer *const *bufs) {
    return mma(ctx, A_, I(ctx, 0), I(ctx, 0), A_, I(ctx, 0), I(ctx, 0), B_, I(ctx, 0), I(ctx, 0));
}
static const tir_stmt *e_swapped_ab(tir_ctx *ctx, const tir_buffer *const *bufs) {
    return mma(ctx, C_, I(ctx, 0), I(ctx, 0), B_, I(ctx, 0), I(ctx, 0), A_, I(ctx, 0), I(ctx, 0));
}
static const tir_stmt *e_load_into_acc(tir_ctx *ctx, const tir_buffer *const *bufs) {
    return move(ctx, TIR_INTRIN_FRAG_LOAD, C_, I(ctx, 0), I(ctx, 0), bufs[6], I(ctx, 0), I(ctx, 0));
}
static const tir_stmt *e_load_from_frag(tir_ctx *ctx, const tir_buffer *const *bufs) {
    return move(ctx, TIR_INTRIN_FRAG_LOAD, A_, I(ctx, 0), I(ctx, 0), A_, I(ctx, 16), I(ctx, 16));
}
static const tir_stmt *e_store_global(tir_ctx *ctx, const tir_buffer *const *bufs) {
    return move(ctx, TIR_INTRIN_FRAG_STORE, bufs[6], I(ctx, 0), I(ctx, 0), bufs[6], I(ctx, 0),
                I(ctx, 0));
}
static const tir_stmt *e_dtype_ab(tir_ctx *ctx, const tir_buffer *const *bufs) {
    return mma(ctx, C_, I(ctx, 0), I(ctx, 0), A_, I(ctx, 0), I(ctx, 0), bufs[3], I(ctx, 0),
               I(ctx, 0));
}
static const tir_stmt *e_dtype_acc(tir_ctx *ctx, const tir_buffer *const *bufs) {
    return fill(ctx, bufs[4], I(ctx, 0), I(ctx, 0), 0.0);
}
static const tir_stmt *e_dtype_src(tir_ctx *ctx, const tir_buffer *const *bufs) {
    /* frag.b float16 from the bfloat16 G */
    return move(ctx, TIR_INTRIN_FRAG_LOAD, bufs[3], I(ctx, 0), I(ctx, 0), bufs[5], I(ctx, 0),
                I(ctx, 0));
}
static const tir_stmt *e_dtype_dst(tir_ctx *ctx, const tir_buffer *const *bufs) {
    /* frag.acc float32 to the bfloat16 G */
    return move(ctx, TIR_INTRIN_FRAG_STORE, C_, I(ctx, 0), I(ctx, 0), bufs[5], I(ctx, 0),
                I(ctx, 0));
}
static const tir_stmt *e_not_address(tir_ctx *ctx, const tir_buffer *const *bufs) {
    const tir_expr *a[2] = {tir_f32(ctx, 1), tir_f32(ctx, 0)};
    (void)bufs;
    return call_stmt(ctx, TIR_INTRIN_FRAG_FILL, 2, a);
}
static const tir_stmt *e_unwritten(tir_ctx *ctx, const tir_buffer *const *bufs) {
    /* a fresh accumulator, never filled */
    const tir_buffer *Z = buf2(ctx, "Zf", TIR_F32, 16, 8, TIR_SCOPE_FRAG_ACC);
    const tir_stmt *s = move(ctx, TIR_INTRIN_FRAG_STORE, Z, I(ctx, 0), I(ctx, 0), bufs[6],
                             I(ctx, 0), I(ctx, 0));
    return tir_allocate_new(ctx, Z, s);
}
static const tir_stmt *e_lane_id(tir_ctx *ctx, const tir_buffer *const *bufs) {
    (void)bufs;
    const tir_expr *idx[2] = {I(ctx, 0), tir_call_new(ctx, TIR_I32, TIR_INTRIN_LANE_ID, 0, NULL)};
    return tir_store(ctx, bufs[6], tir_f32(ctx, 0), 2, idx);
}
static const tir_stmt *e_ldmatrix(tir_ctx *ctx, const tir_buffer *const *bufs) {
    const tir_expr *a[4] = {I(ctx, 0), I(ctx, 4), addr2(ctx, A_, I(ctx, 0), I(ctx, 0)),
                            addr2(ctx, bufs[5], I(ctx, 0), I(ctx, 0))};
    return call_stmt(ctx, TIR_INTRIN_LDMATRIX, 4, a);
}

static void test_errors(void **st) {
    tir_ctx *ctx = *st;
    struct {
        const tir_stmt *(*mk)(tir_ctx *, const tir_buffer *const *);
        tir_status code;
        const char *subs[4];
    } cases[] = {
        {e_misaligned_load, TIR_ERR_EVAL, {"frag_load: operand 0", "Af[.., 8, 0]", "16x16 tile"}},
        {e_misaligned_mma, TIR_ERR_EVAL, {"mma_sync: operand 0", "Cf[.., 0, 4]", "16x8 tile"}},
        {e_partial_tile, TIR_ERR_EVAL, {"mma_sync", "Bf[.., 32, 8]", "whole 16x8 tile"}},
        {e_scope_acc, TIR_ERR_EVAL, {"mma_sync: operand 0 must be a fragment of scope frag.acc",
                                     "Af is frag.a"}},
        {e_swapped_ab, TIR_ERR_EVAL, {"operand 1 must be a fragment of scope frag.a", "Bf is frag.b"}},
        {e_load_into_acc, TIR_ERR_EVAL, {"frag_load: operand 0", "frag.a or frag.b", "Cf is frag.acc"}},
        {e_load_from_frag, TIR_ERR_EVAL, {"frag_load: operand 1 (Af) must not be a fragment"}},
        {e_store_global, TIR_ERR_EVAL, {"frag_store: operand 0 must be a fragment of scope frag.acc",
                                        "O is global"}},
        {e_dtype_ab, TIR_ERR_EVAL, {"mma_sync: A (Af, bfloat16) and B (Hf, float16)"}},
        {e_dtype_acc, TIR_ERR_EVAL, {"frag_fill: fragment Xf has dtype float16", "frag.acc: float32"}},
        {e_dtype_src, TIR_ERR_EVAL, {"frag_load: G has dtype bfloat16 but fragment Hf has float16"}},
        {e_dtype_dst, TIR_ERR_EVAL, {"frag_store: G has dtype bfloat16 but fragment Cf has float32"}},
        {e_not_address, TIR_ERR_EVAL, {"frag_fill: operand 0 must be address_of(BufferLoad)"}},
        {e_unwritten, TIR_ERR_UNINIT_READ, {"load of Zf[0, 0]", "never written"}},
        {e_lane_id, TIR_ERR_UNSUPPORTED, {"lane_id is an intrinsic of lowered kernels", "tir_sim_run"}},
        {e_ldmatrix, TIR_ERR_UNSUPPORTED, {"ldmatrix is an intrinsic of lowered kernels"}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        print_message("# case %zu\n", i);
        expect_stmt_error(ctx, cases[i].mk, cases[i].code, cases[i].subs);
    }
}

/* The same statements without the error are accepted: the error cases
 * above differ from a valid call only in what they test. */
static const tir_stmt *ok_mma(tir_ctx *ctx, const tir_buffer *const *bufs) {
    const tir_stmt *ss[3] = {
        mma(ctx, C_, I(ctx, 16), I(ctx, 8), A_, I(ctx, 16), I(ctx, 16), B_, I(ctx, 16), I(ctx, 8)),
        move(ctx, TIR_INTRIN_FRAG_LOAD, A_, I(ctx, 16), I(ctx, 0), bufs[5], I(ctx, 20), I(ctx, 0)),
        move(ctx, TIR_INTRIN_FRAG_STORE, C_, I(ctx, 16), I(ctx, 8), bufs[6], I(ctx, 20), I(ctx, 12)),
    };
    return tir_seq_new(ctx, 3, ss);
}

static void test_valid_variant(void **st) {
    tir_ctx *ctx = *st;
    float o[32 * 16];
    tir_status rc = run_stmt(ctx, ok_mma, o);
    if (rc) fail_msg("%s", tir_ctx_error(ctx));
    /* The store of tile (16, 8) of Cf = 16 (sixteen 1 x 1 terms) at
     * O[20.., 12..], clipped to O's 32x16: rows 20..31, columns 12..15. */
    for (int r = 0; r < 32; r++)
        for (int c = 0; c < 16; c++)
            assert_true(o[r * 16 + c] == (r >= 20 && c >= 12 ? 16.0f : 0.0f));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_matmul_exact, setup, teardown),
        cmocka_unit_test_setup_teardown(test_matmul_ragged, setup, teardown),
        cmocka_unit_test_setup_teardown(test_one_rounding, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tf32_rounding, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tf32_random, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fill_and_leading_dims, setup, teardown),
        cmocka_unit_test_setup_teardown(test_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_valid_variant, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
