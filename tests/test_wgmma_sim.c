/* test_wgmma_sim.c: Hopper's warpgroup MMA (TF32, RS form, operands
 * swapped) in the two CPU oracles: the interpreter's logical
 * wgmma(c, a, b, rows) and the simulator's lowered wgmma_sync (groups of
 * 5 operands, a warpgroup collective), both against plain C references
 * written here from intrinsics.def's description, not from the oracles'
 * code.
 *
 * The inputs are random float32 values with all 23 mantissa bits (and
 * some exact TF32 ties), so that the rounding of each operand (S
 * truncated, the register operand to nearest, ties to even), the double
 * sum in k order and the one final rounding all show in the result bits:
 * results must agree bit for bit.  test_reference_power checks that the
 * comparison would catch the wrong roundings, test_sum_order the order
 * and precision of the sum (on values worked out by hand).  The references compute
 * the layouts their own way: the interpreter's as whole regions of C, S
 * and B; the simulator's from the (m, n) side of each result (which lane
 * and register holds it) and S's swizzle as "16-byte chunk c of row r at
 * c ^ (r % 8)", where the simulator maps registers to (m, n) and XORs
 * byte offsets.
 *
 * Then the errors, each with its status and message: a block of 96
 * threads, the warps of a warpgroup passing different shared tiles, a
 * warp that skips the call, a misaligned tile start, a tile past the end
 * of S, a result register past its array, and in the interpreter a region
 * outside S, a misaligned C origin, a bad row count and the lowered
 * wgmma_sync.
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

#include "minitir/sim.h"
#include "text_builder.h"

static int setup(void **st) {
    *st = tir_ctx_create();
    return *st ? 0 : -1;
}
static int teardown(void **st) {
    tir_ctx_destroy(*st);
    return 0;
}

/* ====================================================== the references */

static uint32_t seed = 4511;
static uint32_t rnd(void) {
    seed = seed * 1664525u + 1013904223u;
    return seed >> 8;
}

/* A random float in [-8, 8) with a random 23-bit mantissa; one in eight
 * an exact TF32 tie (the low 13 bits 0x1000), where to nearest even and
 * truncation differ by the parity of the kept bits. */
static float rnd_float(void) {
    uint32_t sign = (rnd() & 1) << 31, ex = 124 + rnd() % 6, man = rnd() & 0x7fffff;
    if (rnd() % 8 == 0) man = (man & ~0x1fffu) | 0x1000u;
    uint32_t u = sign | ex << 23 | man;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static void rnd_fill(float *a, size_t n) {
    for (size_t i = 0; i < n; i++) a[i] = rnd_float();
}

/* TF32 (11 significant bits) in double arithmetic: toward zero, and to
 * nearest with ties to even.  The inputs are normal and finite. */
static float ref_trunc(float x) {
    if (x == 0) return x;
    int e;
    (void)frexp(x, &e);
    return (float)ldexp(trunc(ldexp(x, 11 - e)), e - 11);
}
static float ref_rn(float x) {
    if (x == 0) return x;
    int e;
    (void)frexp(x, &e);
    double s = ldexp(x, 11 - e), r = floor(s), f = s - r;
    if (f > 0.5 || (f == 0.5 && fmod(r, 2.0) != 0)) r += 1;
    return (float)ldexp(r, e - 11);
}

/* Rounding modes of a reference, so that a wrong one can be shown to be
 * caught: the right one truncates the shared operand and rounds the
 * register operand to nearest. */
typedef enum { RIGHT, BOTH_RN, SWAPPED } ref_mode;

/* c + sum over k of s[k] b[k] with the roundings of `mode`, in double, k
 * in order, rounded once. */
static float ref_dot(float c, const float *s, int ss, const float *b, int bs, ref_mode mode) {
    double acc = c;
    for (int k = 0; k < 8; k++) {
        float x = s[k * ss], y = b[k * bs];
        float xs = mode == RIGHT ? ref_trunc(x) : ref_rn(x);
        float yr = mode == SWAPPED ? ref_trunc(y) : ref_rn(y);
        acc += (double)xs * (double)yr;
    }
    return (float)acc;
}

static void check_same(const float *got, const float *want, size_t n, const char *what) {
    for (size_t i = 0; i < n; i++)
        if (memcmp(&got[i], &want[i], 4))
            fail_msg("%s[%zu] = %a, want %a", what, i, (double)got[i], (double)want[i]);
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

static const tir_prim_func *parse(tir_ctx *ctx, tb *t) {
    const tir_prim_func *f = NULL;
    tir_status st = tir_parse_func(ctx, t->buf, strlen(t->buf), &f);
    if (st != TIR_OK) fail_msg("parse: %s\n%s", tir_ctx_error(ctx), t->buf);
    free(t->buf);
    return f;
}

/* ====================================================== the interpreter */

/* One logical wgmma: C (cr x 48, frag.acc) from C0, S (sr x 32, shared)
 * from Sg, B (16 x 48, frag.b) from Bg, then
 * wgmma(C[r0, c0], S[i0, k0], B[q0, c1], R) and C copied to Cout. */
typedef struct icase {
    int R, cr, sr, r0, c0, i0, k0, q0, c1;
} icase;

enum { IC_COLS = 48, IS_COLS = 32, IB_ROWS = 16 };

static void copy_in(tb *t, const char *dst, const char *src, int rows, int cols) {
    put(t, 1, "for i in T.serial(%d):", rows);
    put(t, 2, "for j in T.serial(%d):", cols);
    put(t, 3, "%s[i, j] = %s[i, j]", dst, src);
}

static const tir_prim_func *interp_kernel(tir_ctx *ctx, const icase *c, const char *op) {
    tb t = {0};
    put(&t, 0, "@T.prim_func");
    put(&t, 0,
        "def wg(Sg: T.Buffer((%d, %d), \"float32\"), Bg: T.Buffer((%d, %d), \"float32\"), "
        "C0: T.Buffer((%d, %d), \"float32\"), Cout: T.Buffer((%d, %d), \"float32\")):",
        c->sr, IS_COLS, IB_ROWS, IC_COLS, c->cr, IC_COLS, c->cr, IC_COLS);
    put(&t, 1, "S = T.allocate((%d, %d), \"float32\", scope=\"shared\")", c->sr, IS_COLS);
    put(&t, 1, "Bf = T.allocate((%d, %d), \"float32\", scope=\"frag.b\")", IB_ROWS, IC_COLS);
    put(&t, 1, "Cf = T.allocate((%d, %d), \"float32\", scope=\"frag.acc\")", c->cr, IC_COLS);
    copy_in(&t, "S", "Sg", c->sr, IS_COLS);
    copy_in(&t, "Bf", "Bg", IB_ROWS, IC_COLS);
    copy_in(&t, "Cf", "C0", c->cr, IC_COLS);
    put(&t, 1,
        "T.call_intrin(\"void\", \"%s\", T.address_of(Cf[%d, %d]), T.address_of(S[%d, %d]), "
        "T.address_of(Bf[%d, %d]), %d)",
        op, c->r0, c->c0, c->i0, c->k0, c->q0, c->c1, c->R);
    copy_in(&t, "Cout", "Cf", c->cr, IC_COLS);
    return parse(ctx, &t);
}

/* The reference: C0 with the region updated, C[r0+i, c0+j] += sum_k
 * S[i0+i, k0+k] B[q0+k, c1+j]. */
static void interp_ref(const icase *c, const float *s, const float *b, const float *c0, float *out,
                       ref_mode mode) {
    memcpy(out, c0, sizeof(float) * (size_t)(c->cr * IC_COLS));
    for (int i = 0; i < c->R; i++)
        for (int j = 0; j < 16; j++) {
            float *d = &out[(c->r0 + i) * IC_COLS + c->c0 + j];
            *d = ref_dot(*d, &s[(c->i0 + i) * IS_COLS + c->k0], 1,
                         &b[c->q0 * IC_COLS + c->c1 + j], IC_COLS, mode);
        }
}

typedef struct idata {
    float *s, *b, *c0, *out;
} idata;

static idata idata_new(const icase *c) {
    idata d = {malloc(sizeof(float) * (size_t)(c->sr * IS_COLS)),
               malloc(sizeof(float) * IB_ROWS * IC_COLS),
               malloc(sizeof(float) * (size_t)(c->cr * IC_COLS)),
               malloc(sizeof(float) * (size_t)(c->cr * IC_COLS))};
    rnd_fill(d.s, (size_t)(c->sr * IS_COLS));
    rnd_fill(d.b, IB_ROWS * IC_COLS);
    rnd_fill(d.c0, (size_t)(c->cr * IC_COLS));
    return d;
}

static void idata_free(idata *d) {
    free(d->s);
    free(d->b);
    free(d->c0);
    free(d->out);
}

static tir_status interp_run(tir_ctx *ctx, const icase *c, const char *op, idata *d) {
    tir_arg args[4] = {{d->s, 0}, {d->b, 0}, {d->c0, 0}, {d->out, 0}};
    tir_interp_opts o = {.uninit_params = 1u << 3};
    return tir_interp_run(ctx, interp_kernel(ctx, c, op), 4, args, &o);
}

/* R = 8, 16, 64, 128 at nonzero origins (C's row origin 8 past a
 * multiple of 16 where R is 8), and at zero origins. */
static void test_interp_wgmma(void **st) {
    tir_ctx *ctx = *st;
    static const icase cases[] = {
        {8, 32, 24, 8, 16, 5, 24, 8, 32},    {8, 16, 8, 0, 0, 0, 0, 0, 0},
        {16, 48, 24, 32, 32, 3, 8, 8, 16},   {64, 96, 80, 16, 16, 16, 17, 0, 32},
        {128, 128, 128, 0, 0, 0, 0, 0, 0},   {128, 160, 136, 32, 32, 8, 24, 8, 16},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const icase *c = &cases[i];
        idata d = idata_new(c);
        float *want = malloc(sizeof(float) * (size_t)(c->cr * IC_COLS));
        tir_status st = interp_run(ctx, c, "wgmma", &d);
        if (st != TIR_OK) fail_msg("R %d: %s", c->R, tir_ctx_error(ctx));
        interp_ref(c, d.s, d.b, d.c0, want, RIGHT);
        check_same(d.out, want, (size_t)(c->cr * IC_COLS), "Cout");
        free(want);
        idata_free(&d);
    }
}

/* The exact comparison catches the roundings: references that round S
 * to nearest too, or swap the two roundings, differ from the
 * interpreter's result, and so does one without the update. */
static void test_reference_power(void **st) {
    tir_ctx *ctx = *st;
    icase c = {64, 96, 80, 16, 16, 16, 17, 0, 32};
    idata d = idata_new(&c);
    size_t n = (size_t)(c.cr * IC_COLS);
    float *want = malloc(sizeof(float) * n);
    assert_int_equal(interp_run(ctx, &c, "wgmma", &d), TIR_OK);
    for (int mode = BOTH_RN; mode <= SWAPPED; mode++) {
        interp_ref(&c, d.s, d.b, d.c0, want, (ref_mode)mode);
        int differ = 0;
        for (size_t i = 0; i < n; i++) differ += memcmp(&d.out[i], &want[i], 4) != 0;
        assert_true(differ > 0);
    }
    assert_true(memcmp(d.out, d.c0, sizeof(float) * n) != 0);
    free(want);
    idata_free(&d);
}

/* The sum itself, with TF32-exact values whose result is worked out by
 * hand (random inputs cannot show it: their double sums are exact in any
 * order): C[i][i] from row i of S and column i of B, the rest zero.
 *   i = 0, k order: 0 + 1 + 2^60 - 2^60 = 0 in double (reversed: 1);
 *   i = 1, C first: 1 + 2^60 - 2^60 = 0 (C added last: 1);
 *   i = 2, one rounding: 1 + 2^-24 + 2^-24 = 1 + 2^-23 (a float running
 *          sum rounds 1 + 2^-24 to 1, ties to even, twice). */
static void test_sum_order(void **st) {
    tir_ctx *ctx = *st;
    icase c = {8, 16, 8, 0, 0, 0, 0, 0, 0};
    idata d = idata_new(&c);
    memset(d.s, 0, sizeof(float) * 8 * IS_COLS);
    memset(d.b, 0, sizeof(float) * IB_ROWS * IC_COLS);
    memset(d.c0, 0, sizeof(float) * 16 * IC_COLS);
    const float big = 0x1p30f, tiny = 0x1p-12f;
    float *s0 = &d.s[0], *s1 = &d.s[IS_COLS], *s2 = &d.s[2 * IS_COLS];
    s0[0] = 1, s0[1] = big, s0[2] = -big;
    d.b[0] = 1, d.b[IC_COLS] = big, d.b[2 * IC_COLS] = big;
    s1[0] = big, s1[1] = -big;
    d.b[1] = big, d.b[IC_COLS + 1] = big;
    d.c0[IC_COLS + 1] = 1;
    s2[0] = tiny, s2[1] = tiny;
    d.b[2] = tiny, d.b[IC_COLS + 2] = tiny;
    d.c0[2 * IC_COLS + 2] = 1;
    assert_int_equal(interp_run(ctx, &c, "wgmma", &d), TIR_OK);
    assert_true(d.out[0] == 0.0f);
    assert_true(d.out[IC_COLS + 1] == 0.0f);
    assert_true(d.out[2 * IC_COLS + 2] == 1.0f + 0x1p-23f);
    idata_free(&d);
}

static void test_interp_errors(void **st) {
    tir_ctx *ctx = *st;
    /* S region past S's rows: 16 + 16 > 24 */
    icase out_s = {16, 48, 24, 32, 32, 16, 8, 8, 16};
    /* C's column origin 8: not two whole tiles of C */
    icase mis_c = {16, 48, 24, 16, 8, 0, 0, 0, 0};
    /* C's row origin 8 with R = 16 */
    icase mis_r = {16, 48, 24, 8, 0, 0, 0, 0, 0};
    icase bad_r = {12, 48, 24, 0, 0, 0, 0, 0, 0};
    icase ok = {16, 48, 24, 0, 0, 0, 0, 0, 0};
    idata d = idata_new(&out_s);
    expect_error(ctx, interp_run(ctx, &out_s, "wgmma", &d), TIR_ERR_OUT_OF_BOUNDS,
                 (const char *[]){"wgmma", "S[.., 16, 8]", "does not lie inside S", NULL});
    expect_error(ctx, interp_run(ctx, &mis_c, "wgmma", &d), TIR_ERR_EVAL,
                 (const char *[]){"wgmma", "Cf[.., 16, 8]", "multiple of 16", NULL});
    expect_error(ctx, interp_run(ctx, &mis_r, "wgmma", &d), TIR_ERR_EVAL,
                 (const char *[]){"wgmma", "Cf[.., 8, 0]", NULL});
    expect_error(ctx, interp_run(ctx, &bad_r, "wgmma", &d), TIR_ERR_EVAL,
                 (const char *[]){"wgmma: rows must be a multiple of 8", "not 12", NULL});
    /* the lowered form is the simulator's */
    tb t = {0};
    put(&t, 0, "@T.prim_func");
    put(&t, 0, "def f(X: T.Buffer((8,), \"float32\")):");
    put(&t, 1, "S = T.allocate((256,), \"float32\", \"shared\")");
    put(&t, 1, "T.call_intrin(\"void\", \"wgmma_sync\", T.address_of(X[0]), 8, "
               "T.address_of(X[4]), T.address_of(S[0]), 8)");
    tir_arg a = {d.out, 0};
    expect_error(ctx, tir_interp_run(ctx, parse(ctx, &t), 1, &a, NULL), TIR_ERR_UNSUPPORTED,
                 (const char *[]){"wgmma_sync", "lowered", NULL});
    /* ... and the simulator refuses the logical one */
    tir_arg args[4] = {{d.s, 0}, {d.b, 0}, {d.c0, 0}, {d.out, 0}};
    expect_error(ctx, tir_sim_run(ctx, interp_kernel(ctx, &ok, "wgmma"), 4, args, NULL, NULL),
                 TIR_ERR_UNSUPPORTED, (const char *[]){"wgmma", "logical tile intrinsic", NULL});
    idata_free(&d);
}

/* ======================================================= the simulator */

/* One group of a wgmma_sync: R rows of S from row `row` (a multiple of 8)
 * and column k0 (0, 8, 16, 24) of warpgroup q's part of S (q * xq
 * elements in: rows of 32 floats), registers Af[p ..] and Cf[o + u cs +
 * e]. */
typedef struct sgroup {
    int R, row, k0, o, cs, p;
} sgroup;

enum { NA = 8 }; /* A registers per thread: two groups' */

/* Breakages for the negative tests. */
enum {
    SK_OTHER_TILE = 1,  /* warps 2 and 3 pass a tile 8 rows further */
    SK_SKIP_WARP = 2,   /* warp 1 skips the call */
    SK_EXTRA_SHFL = 4,  /* warp 0 does a shfl_xor first (not an error) */
    SK_MISALIGN = 8,    /* the first group's tile starts 4 floats later */
    SK_SHORT_CF = 16,   /* Cf 8 elements shorter than the registers need */
};

typedef struct scase {
    int threads, ngroups, xq, ns; /* ns: S's elements */
    sgroup g[2];
    int flags;
} scase;

/* Cf's elements: past the last register of every group. */
static int sim_nc(const scase *c) {
    int nc = 0;
    for (int i = 0; i < c->ngroups; i++) {
        const sgroup *g = &c->g[i];
        int last = g->R / 2 - 1, end = g->o + last / 8 * g->cs + last % 8 + 1;
        if (end > nc) nc = end;
    }
    return nc;
}

/* Each thread loads Af and Cf from Ag and Cin (NA and nc consecutive
 * floats from tid * NA, tid * nc), the block copies Sg to S as it is
 * (the test swizzled it), syncthreads, one wgmma_sync with the groups,
 * Cf to Cout. */
static const tir_prim_func *sim_kernel(tir_ctx *ctx, const scase *c) {
    int T = c->threads, nc = sim_nc(c) - (c->flags & SK_SHORT_CF ? 8 : 0);
    tb t = {0};
    put(&t, 0, "@T.prim_func");
    put(&t, 0,
        "def wg(Ag: T.Buffer((%d,), \"float32\"), Sg: T.Buffer((%d,), \"float32\"), "
        "Cin: T.Buffer((%d,), \"float32\"), Cout: T.Buffer((%d,), \"float32\")):",
        T * NA, c->ns, T * nc, T * nc);
    put(&t, 1, "for tx in T.thread_binding(0, %d, thread=\"threadIdx.x\"):", T);
    put(&t, 2, "S = T.allocate((%d,), \"float32\", \"shared\")", c->ns);
    put(&t, 2, "Af = T.allocate((%d,), \"float32\", \"local\")", NA);
    put(&t, 2, "Cf = T.allocate((%d,), \"float32\", \"local\")", nc);
    put(&t, 2, "X = T.allocate((1,), \"float32\", \"local\")");
    put(&t, 2, "for j in T.serial(%d):", (c->ns + T - 1) / T);
    put(&t, 3, "if j * %d + tx < %d:", T, c->ns);
    put(&t, 4, "S[j * %d + tx] = Sg[j * %d + tx]", T, T);
    put(&t, 2, "for i in T.serial(%d):", NA);
    put(&t, 3, "Af[i] = Ag[tx * %d + i]", NA);
    put(&t, 2, "for i in T.serial(%d):", nc);
    put(&t, 3, "Cf[i] = Cin[tx * %d + i]", nc);
    put(&t, 2, "T.syncthreads()");
    int d = 2;
    if (c->flags & SK_EXTRA_SHFL) {
        put(&t, 2, "if tx %% 128 // 32 == 0:");
        put(&t, 3, "X[0] = T.call_intrin(\"float32\", \"shfl_xor\", T.float32(1), 1)");
    }
    if (c->flags & SK_SKIP_WARP) put(&t, d++, "if tx %% 128 // 32 != 1:");
    char call[1024];
    int n = snprintf(call, sizeof call, "T.call_intrin(\"void\", \"wgmma_sync\"");
    for (int i = 0; i < c->ngroups; i++) {
        const sgroup *g = &c->g[i];
        int x = g->row * 32 + g->k0 + (i == 0 && (c->flags & SK_MISALIGN) ? 4 : 0);
        n += snprintf(call + n, sizeof call - (size_t)n,
                      ", T.address_of(Cf[%d]), %d, T.address_of(Af[%d]), "
                      "T.address_of(S[tx // 128 * %d + %d%s]), %d",
                      g->o, g->cs, g->p, c->xq, x,
                      i == 0 && (c->flags & SK_OTHER_TILE) ? " + tx % 128 // 64 * 256" : "",
                      g->R);
    }
    put(&t, d, "%s)", call);
    put(&t, 2, "for i in T.serial(%d):", nc);
    put(&t, 3, "Cout[tx * %d + i] = Cf[i]", nc);
    return parse(ctx, &t);
}

/* The reference from intrinsics.def, per result: D[m][n] of warp w of
 * warpgroup q is register r = 4 (n / 8) + 2 (m / 8) + n % 2 of lane
 * 4 (m % 8) + (n % 8) / 2; A[m][k] is register (m / 8) + 2 (k / 4) of
 * lane 4 (m % 8) + k % 4; B[k][n] is S's element (row + n, k0 + k) of
 * 32-float rows whose 16-byte chunk c of row r is stored at c ^ (r % 8). */
static void sim_ref(const scase *c, const float *ag, const float *sg, float *cio, ref_mode mode) {
    int nc = sim_nc(c);
    for (int q = 0; q < c->threads / 128; q++)
        for (int gi = 0; gi < c->ngroups; gi++) {
            const sgroup *g = &c->g[gi];
            for (int w = 0; w < 4; w++) {
                int base = 128 * q + 32 * w;
                float a[16][8], b[8][256];
                for (int m = 0; m < 16; m++)
                    for (int k = 0; k < 8; k++) {
                        int lane = 4 * (m % 8) + k % 4, i = m / 8 + 2 * (k / 4);
                        a[m][k] = ag[(base + lane) * NA + g->p + i];
                    }
                for (int k = 0; k < 8; k++)
                    for (int n = 0; n < g->R; n++) {
                        int r = g->row + n, col = g->k0 + k;
                        b[k][n] = sg[q * c->xq + r * 32 + ((col / 4) ^ (r % 8)) * 4 + col % 4];
                    }
                for (int m = 0; m < 16; m++)
                    for (int n = 0; n < g->R; n++) {
                        int lane = 4 * (m % 8) + (n % 8) / 2, r = 4 * (n / 8) + 2 * (m / 8) + n % 2;
                        float *d = &cio[(base + lane) * nc + g->o + r / 8 * g->cs + r % 8];
                        /* S is the shared (truncated) operand, A the register one */
                        *d = ref_dot(*d, &b[0][n], 256, a[m], 1, mode);
                    }
            }
        }
}

typedef struct sdata {
    float *ag, *sg, *cin, *cout;
    size_t nc_all;
} sdata;

static sdata sdata_new(const scase *c) {
    size_t nc = (size_t)(c->threads * sim_nc(c));
    sdata d = {malloc(sizeof(float) * (size_t)(c->threads * NA)),
               malloc(sizeof(float) * (size_t)c->ns), malloc(sizeof(float) * nc),
               malloc(sizeof(float) * nc), nc};
    rnd_fill(d.ag, (size_t)(c->threads * NA));
    rnd_fill(d.sg, (size_t)c->ns);
    rnd_fill(d.cin, nc);
    return d;
}

static void sdata_free(sdata *d) {
    free(d->ag);
    free(d->sg);
    free(d->cin);
    free(d->cout);
}

static tir_status sim_run(tir_ctx *ctx, const scase *c, sdata *d, tir_sim_report *rep) {
    tir_arg args[4] = {{d->ag, 0}, {d->sg, 0}, {d->cin, 0}, {d->cout, 0}};
    tir_sim_opts o = {.uninit_params = 1u << 3, .check_uninit = true, .check_global_races = true};
    return tir_sim_run(ctx, sim_kernel(ctx, c), 4, args, &o, rep);
}

/* Runs c in the simulator and compares every thread's registers with
 * the reference, bit for bit; the wrong roundings must differ. */
static void sim_ok(tir_ctx *ctx, const scase *c, int64_t warp_ops) {
    sdata d = sdata_new(c);
    tir_sim_report rep;
    tir_status st = sim_run(ctx, c, &d, &rep);
    if (st != TIR_OK) fail_msg("%s: %s", tir_status_name(st), tir_ctx_error(ctx));
    assert_int_equal(rep.warp_ops, warp_ops);
    float *want = malloc(sizeof(float) * d.nc_all);
    memcpy(want, d.cin, sizeof(float) * d.nc_all);
    sim_ref(c, d.ag, d.sg, want, RIGHT);
    check_same(d.cout, want, d.nc_all, "Cout");
    for (int mode = BOTH_RN; mode <= SWAPPED; mode++) {
        memcpy(want, d.cin, sizeof(float) * d.nc_all);
        sim_ref(c, d.ag, d.sg, want, (ref_mode)mode);
        assert_true(memcmp(d.cout, want, sizeof(float) * d.nc_all) != 0);
    }
    free(want);
    sdata_free(&d);
}

/* One warpgroup: R = 8 then 64 (other registers, cs 12, tile rows 8..71
 * at k0 8); then R = 256 and 128 on the same registers (the second adds
 * to the first's result: in order), k0 24 and 16. */
static void test_sim_one_warpgroup(void **st) {
    tir_ctx *ctx = *st;
    scase a = {128, 2, 0, 80 * 32, {{8, 0, 0, 0, 8, 0}, {64, 8, 8, 8, 12, 4}}, 0};
    sim_ok(ctx, &a, 1);
    scase b = {128, 2, 0, 256 * 32, {{256, 0, 24, 0, 8, 4}, {128, 64, 16, 0, 8, 0}}, 0};
    sim_ok(ctx, &b, 1);
}

/* Two warpgroups (256 threads), each with its own part of S (xq) or the
 * same one; and one warp doing a shfl_xor before the call (the
 * warpgroup waits for it: two warp collectives in all). */
static void test_sim_two_warpgroups(void **st) {
    tir_ctx *ctx = *st;
    scase a = {256, 2, 72 * 32, 144 * 32, {{64, 8, 16, 16, 16, 0}, {8, 64, 24, 0, 16, 4}}, 0};
    sim_ok(ctx, &a, 2);
    scase b = {256, 2, 0, 128 * 32, {{128, 0, 0, 3, 9, 4}, {16, 16, 8, 0, 8, 0}}, 0};
    sim_ok(ctx, &b, 2);
    scase c = {256, 1, 16 * 32, 32 * 32, {{16, 0, 0, 0, 8, 0}}, SK_EXTRA_SHFL};
    sim_ok(ctx, &c, 2 + 2);
}

static void sim_fails(tir_ctx *ctx, const scase *c, tir_status want, const char *const *subs) {
    sdata d = sdata_new(c);
    expect_error(ctx, sim_run(ctx, c, &d, NULL), want, subs);
    sdata_free(&d);
}

static void test_sim_errors(void **st) {
    tir_ctx *ctx = *st;
    scase c96 = {96, 1, 0, 16 * 32, {{8, 0, 0, 0, 8, 0}}, 0};
    sim_fails(ctx, &c96, TIR_ERR_SIM_LAUNCH,
              (const char *[]){"wgmma_sync", "96 threads", "multiple of 128", NULL});
    scase other = {128, 1, 0, 32 * 32, {{16, 0, 0, 0, 8, 0}}, SK_OTHER_TILE};
    sim_fails(ctx, &other, TIR_ERR_EVAL,
              (const char *[]){"wgmma_sync: the warps of warpgroup 0 pass different shared tiles",
                               "S[256]", "S[0]", "threadIdx (64, 0, 0)", NULL});
    scase skip = {256, 1, 16 * 32, 32 * 32, {{16, 0, 0, 0, 8, 0}}, SK_SKIP_WARP};
    sim_fails(ctx, &skip, TIR_ERR_SIM_BARRIER,
              (const char *[]){"divergent warpgroup", "96 of the 128 threads of warpgroup 0",
                               "threadIdx (32, 0, 0) finished without reaching it", NULL});
    scase mis = {128, 1, 0, 32 * 32, {{16, 0, 8, 0, 8, 0}}, SK_MISALIGN};
    sim_fails(ctx, &mis, TIR_ERR_EVAL,
              (const char *[]){"wgmma_sync: group 0", "S[12]", "4x = 48", "0, 32, 64 or 96",
                               NULL});
    /* rows 8..39 of an S of 32 rows */
    scase oob = {128, 1, 0, 32 * 32, {{32, 8, 0, 0, 8, 0}}, 0};
    sim_fails(ctx, &oob, TIR_ERR_OUT_OF_BOUNDS,
              (const char *[]){"wgmma_sync: the shared tile S[256] with 32 rows", "row 24",
                               "past its end (1024 elements)", NULL});
    /* group 2 (R 64: 32 registers, cs 8) from Cf[16] needs 48 elements,
     * Cf has 40 (group 1's 32 fit) */
    scase reg = {128, 2, 0, 64 * 32, {{64, 0, 0, 0, 8, 0}, {64, 0, 8, 16, 8, 4}}, SK_SHORT_CF};
    sim_fails(ctx, &reg, TIR_ERR_OUT_OF_BOUNDS,
              (const char *[]){"wgmma_sync: result register 24", "Cf[16 + 3 * 8 + 0]",
                               "outside Cf (40 elements)", NULL});
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_interp_wgmma, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reference_power, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sum_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_interp_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sim_one_warpgroup, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sim_two_warpgroups, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sim_errors, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
