/* Tests of fuse_reduction_epilogue: every epilogue (bias, bias+ReLU, the
 * five commutative forms of clip, scaling, an arbitrary expression, a
 * transposed store) gives, in the interpreter on random inputs at odd
 * shapes, exactly the values of the unfused program (never TVM's
 * per-iteration non-linearity); a second reader of the reduction keeps
 * its values; max and min reductions keep their own init; TVM's
 * per-step clip is shown to differ in the interpreter; golden text
 * before and after, trace roundtrip, one negative test per precondition,
 * each checking that nothing changed. */
#include <setjmp.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "sched_check.h"

static int setup(void **st) {
    *st = tir_ctx_create();
    return *st ? 0 : -1;
}
static int teardown(void **st) {
    tir_ctx_destroy(*st);
    return 0;
}

/* ------------------------------------------------- TE-built programs */

enum epi {
    EPI_BIAS,        /* t + bias */
    EPI_BIAS_RELU,   /* max(t + bias, 0) */
    EPI_CLIP0,       /* min(max(u, lo), hi), u = t + bias */
    EPI_CLIP1,       /* min(hi, max(u, lo)) */
    EPI_CLIP2,       /* min(max(lo, u), hi) */
    EPI_CLIP3,       /* max(min(u, hi), lo) */
    EPI_CLIP4,       /* max(lo, min(u, hi)) */
    EPI_SCALE,       /* t * 2 + bias */
    EPI_ARBITRARY,   /* max((bias + t) - 2, 0) * bias + 1 */
    EPI_CLIP_NOBIAS, /* min(max(t, lo), hi) */
    EPI_COPY,        /* t */
    EPI_SQUARE,      /* t * t + bias (t loaded twice) */
    EPI_COLUMN,      /* D[i] = t[i, 1] */
    EPI_TRANSPOSE,   /* D[j, i] = t[i, j] + bias[i]... built as D[a, b] = t[b, a] + bias[b] */
};

typedef struct {
    tir_te_tensor *A, *B, *bias, *T;
    enum epi e;
} prog;

static const tir_expr *mm(tir_ctx *ctx, const tir_var *const *ax, const tir_var *const *rx,
                          void *user) {
    prog *p = user;
    const tir_expr *ia[2] = {&ax[0]->base, &rx[0]->base}, *ib[2] = {&rx[0]->base, &ax[1]->base};
    return tir_mul(ctx, tir_te_at(ctx, p->A, 2, ia), tir_te_at(ctx, p->B, 2, ib));
}

static const tir_expr *f32(tir_ctx *ctx, double v) { return tir_f32(ctx, v); }

static const tir_expr *epilogue(tir_ctx *ctx, const tir_var *const *ax, const tir_var *const *rx,
                                void *user) {
    (void)rx;
    prog *p = user;
    if (p->e == EPI_COLUMN) { /* a 1-D stage: ax[1] does not exist */
        const tir_expr *i1[2] = {&ax[0]->base, tir_i32(ctx, 1)};
        return tir_te_at(ctx, p->T, 2, i1);
    }
    const tir_expr *ij[2] = {&ax[0]->base, &ax[1]->base};
    const tir_expr *j[1] = {&ax[1]->base};
    if (p->e == EPI_TRANSPOSE) {
        const tir_expr *ji[2] = {&ax[1]->base, &ax[0]->base};
        const tir_expr *b[1] = {&ax[0]->base};
        return tir_add(ctx, tir_te_at(ctx, p->T, 2, ji), tir_te_at(ctx, p->bias, 1, b));
    }
    const tir_expr *t = tir_te_at(ctx, p->T, 2, ij);
    const tir_expr *bias = tir_te_at(ctx, p->bias, 1, j);
    const tir_expr *u = tir_add(ctx, t, bias);
    const tir_expr *lo = f32(ctx, -4), *hi = f32(ctx, 5);
    switch (p->e) {
    case EPI_BIAS: return u;
    case EPI_BIAS_RELU: return tir_max(ctx, u, f32(ctx, 0));
    case EPI_CLIP0: return tir_min(ctx, tir_max(ctx, u, lo), hi);
    case EPI_CLIP1: return tir_min(ctx, hi, tir_max(ctx, u, lo));
    case EPI_CLIP2: return tir_min(ctx, tir_max(ctx, lo, u), hi);
    case EPI_CLIP3: return tir_max(ctx, tir_min(ctx, u, hi), lo);
    case EPI_CLIP4: return tir_max(ctx, lo, tir_min(ctx, u, hi));
    case EPI_SCALE: return tir_add(ctx, tir_mul(ctx, t, f32(ctx, 2)), bias);
    case EPI_ARBITRARY:
        return tir_add(ctx,
                       tir_mul(ctx, tir_max(ctx, tir_sub(ctx, tir_add(ctx, bias, t), f32(ctx, 2)),
                                            f32(ctx, 0)),
                               bias),
                       f32(ctx, 1));
    case EPI_CLIP_NOBIAS: return tir_min(ctx, tir_max(ctx, t, lo), hi);
    case EPI_COPY: return t;
    case EPI_SQUARE: return tir_add(ctx, tir_mul(ctx, t, t), bias);
    default: return NULL;
    }
}

static const tir_expr *times3(tir_ctx *ctx, const tir_var *const *ax, const tir_var *const *rx,
                              void *user) {
    (void)rx;
    prog *p = user;
    const tir_expr *ij[2] = {&ax[0]->base, &ax[1]->base};
    return tir_mul(ctx, tir_te_at(ctx, p->T, 2, ij), f32(ctx, 3));
}

/* temp[M,N] = reduce_k A[M,K] B[K,N]; D = epilogue(temp, bias); with
 * second, also E2 = temp * 3 (a second reader). */
static const tir_prim_func *build(tir_ctx *ctx, int64_t M, int64_t N, int64_t K, enum epi e,
                                  tir_te_reducer red, bool second) {
    static prog p; /* fcompute user data must outlive the calls only */
    p.e = e;
    int64_t sa[2] = {M, K}, sb[2] = {K, N}, sc[2] = {M, N}, sd[2] = {M, N};
    int64_t bn = e == EPI_TRANSPOSE ? N : N;
    p.A = tir_te_placeholder(ctx, "A", TIR_F32, 2, sa);
    p.B = tir_te_placeholder(ctx, "B", TIR_F32, 2, sb);
    p.bias = tir_te_placeholder(ctx, "bias", TIR_F32, 1, &bn);
    p.T = tir_te_reduce(ctx, "temp", 2, sc, red, 1, &K, mm, &p);
    tir_te_tensor *D;
    if (e == EPI_COLUMN) {
        D = tir_te_compute(ctx, "D", 1, sd, epilogue, &p);
    } else if (e == EPI_TRANSPOSE) {
        int64_t st[2] = {N, M};
        D = tir_te_compute(ctx, "D", 2, st, epilogue, &p);
    } else {
        D = tir_te_compute(ctx, "D", 2, sd, epilogue, &p);
    }
    assert_non_null(D);
    tir_te_tensor *args[5] = {p.A, p.B, p.bias, D, NULL};
    int n = 4;
    if (second) args[n++] = tir_te_compute(ctx, "E2", 2, sd, times3, &p);
    const tir_prim_func *f = tir_te_create_prim_func(ctx, "fused", n, args);
    assert_non_null(f);
    return f;
}

/* Fuses block e into r and checks *changed against want: a change is
 * traced (as one text line and as a C call passing NULL for the flag); no
 * change leaves the function, the handles and the trace exactly as they
 * were. */
static tir_schedule *fuse_expect(tir_ctx *ctx, const tir_prim_func *f, const char *r,
                                 const char *e, bool want) {
    tir_schedule *s = sched_new(ctx, f);
    tir_block_rv rb = sched_block(s, r), eb = sched_block(s, e);
    sched_snap snap;
    sched_snap_take(s, &snap);
    int len = tir_sched_trace_len(s), nh = tir_sched_num_handles(s);
    bool changed = !want;
    SCHED_OK(s, tir_sched_fuse_reduction_epilogue(s, rb, eb, &changed));
    assert_int_equal(changed, want);
    assert_int_equal(tir_sched_num_handles(s), nh);
    if (want) {
        sched_snap_free(&snap);
        assert_ptr_not_equal(tir_sched_func(s), f);
        assert_int_equal(tir_sched_trace_len(s), len + 1);
        const char *text = tir_sched_trace_text(s);
        assert_non_null(strstr(text, "\nfuse_reduction_epilogue(b0, b1)\n"));
        assert_non_null(strstr(tir_sched_trace_c(s, "f"),
                               "tir_sched_fuse_reduction_epilogue(sch, b0, b1, NULL)"));
    } else {
        char why[4096];
        if (!sched_snap_same(s, &snap, why, sizeof why))
            fail_msg("an unchanged call changed s: %s", why);
        assert_ptr_equal(tir_sched_func(s), f);
        assert_int_equal(tir_sched_trace_len(s), len);
    }
    sched_check_all(s);
    return s;
}

static tir_schedule *fuse(tir_ctx *ctx, const tir_prim_func *f, const char *r, const char *e) {
    return fuse_expect(ctx, f, r, e, true);
}

static int block_count(tir_schedule *s) {
    const tir_block_rv *kids;
    int n = 0;
    SCHED_OK(s, tir_sched_get_child_blocks(s, sched_block(s, "root"), &kids, &n));
    return n;
}

static const tir_block *node(tir_schedule *s, const char *name) {
    const tir_block *b = NULL;
    SCHED_OK(s, tir_sched_get_block_node(s, sched_block(s, name), &b));
    return b;
}

/* --------------------------------------------------------------- goldens */

static const char bias_before[] =
    "@T.prim_func\n"
    "def matmul_bias(A: T.Buffer((5, 7), \"float32\"), B: T.Buffer((7, 3), \"float32\"), bias: T.Buffer((3,), \"float32\"), D: T.Buffer((5, 3), \"float32\")):\n"
    "    T.func_attr({\"global_symbol\": \"matmul_bias\", \"tir.noalias\": 1})\n"
    "    with T.block(\"root\"):\n"
    "        C = T.alloc_buffer((5, 3), \"float32\")\n"
    "        for i, j, k in T.grid(5, 3, 7):\n"
    "            with T.block(\"C\"):\n"
    "                vi, vj, vk = T.axis.remap(\"SSR\", [i, j, k])\n"
    "                T.reads(A[vi, vk], B[vk, vj])\n"
    "                T.writes(C[vi, vj])\n"
    "                with T.init():\n"
    "                    C[vi, vj] = T.float32(0)\n"
    "                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]\n"
    "        for i_1, j_1 in T.grid(5, 3):\n"
    "            with T.block(\"D\"):\n"
    "                vi_1, vj_1 = T.axis.remap(\"SS\", [i_1, j_1])\n"
    "                T.reads(C[vi_1, vj_1], bias[vj_1])\n"
    "                T.writes(D[vi_1, vj_1])\n"
    "                D[vi_1, vj_1] = C[vi_1, vj_1] + bias[vj_1]\n";

static const char bias_after[] =
    "@T.prim_func\n"
    "def matmul_bias(A: T.Buffer((5, 7), \"float32\"), B: T.Buffer((7, 3), \"float32\"), bias: T.Buffer((3,), \"float32\"), D: T.Buffer((5, 3), \"float32\")):\n"
    "    T.func_attr({\"global_symbol\": \"matmul_bias\", \"tir.noalias\": 1})\n"
    "    for i, j, k in T.grid(5, 3, 7):\n"
    "        with T.block(\"C\"):\n"
    "            vi, vj, vk = T.axis.remap(\"SSR\", [i, j, k])\n"
    "            T.reads(bias[vj], A[vi, vk], B[vk, vj])\n"
    "            T.writes(D[vi, vj])\n"
    "            with T.init():\n"
    "                D[vi, vj] = T.float32(0) + bias[vj]\n"
    "            D[vi, vj] = D[vi, vj] + A[vi, vk] * B[vk, vj]\n";

/* D = temp + bias: the reduction writes D with init bias; the epilogue
 * block and the temp allocation are gone. */
static void test_fre_bias(void **st) {
    tir_ctx *ctx = *st;
    tir_schedule *s = sched_new(ctx, tir_def_matmul_bias(ctx, 5, 3, 7, TIR_F32));
    sched_expect_text(s, bias_before);
    tir_block_rv c = sched_block(s, "C"), d = sched_block(s, "D");
    SCHED_OK(s, tir_sched_fuse_reduction_epilogue(s, c, d, NULL));
    sched_expect_text(s, bias_after);
    sched_check_all(s);
    /* the epilogue's handle is stale, the reduction's is live */
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_STALE_HANDLE, "fuse_reduction_epilogue",
                      tir_sched_fuse_reduction_epilogue(s, c, d, NULL));
    assert_int_equal(block_count(s), 1);
    tir_sched_destroy(s);
    /* odd shapes, after splitting the reduction's loops */
    s = sched_new(ctx, tir_def_matmul_bias(ctx, 13, 11, 9, TIR_F32));
    tir_loop_rv l[16], out[2];
    sched_loops(s, "C", l);
    SCHED_OK(s, tir_sched_split(s, l[0], 2, (const int64_t[]){TIR_SPLIT_INFER, 4}, out));
    SCHED_OK(s, tir_sched_split(s, l[2], 2, (const int64_t[]){TIR_SPLIT_INFER, 2}, out));
    SCHED_OK(s, tir_sched_fuse_reduction_epilogue(s, sched_block(s, "C"), sched_block(s, "D"),
                                                  NULL));
    sched_check_all(s);
    tir_sched_destroy(s);
}

static const tir_prim_func *parse(tir_ctx *ctx, const char *text);

/* D of f (a matmul_bias: A 4x4 of 0, B 4x4 of -1, so every product is
 * -0.0, and bias of the given zero) in the interpreter. */
static void zero_sign_run(tir_ctx *ctx, const tir_prim_func *f, float bias0, float *d) {
    float a[16], b[16], bias[4];
    for (int i = 0; i < 16; i++) a[i] = 0.0f, b[i] = -1.0f;
    for (int i = 0; i < 4; i++) bias[i] = bias0;
    tir_arg args[4] = {{a, 0}, {b, 0}, {bias, 0}, {d, 0}};
    if (tir_interp_run(ctx, f, 4, args, NULL) != TIR_OK) fail_msg("%s", tir_ctx_error(ctx));
}

/* text with its first `from` replaced by `to` (the caller frees it). */
static char *replace1(const char *text, const char *from, const char *to) {
    const char *at = strstr(text, from);
    assert_non_null(at);
    char *out = malloc(strlen(text) + strlen(to) + 1);
    memcpy(out, text, (size_t)(at - text));
    strcpy(out + (at - text), to);
    strcat(out, at + strlen(from));
    return out;
}

/* The sign of a zero, in all eight cases (init +0.0 / -0.0, epilogue
 * t + bias / t - bias, bias +0.0 / -0.0) with every product -0.0: the
 * fused D must equal the unfused one bit for bit.  A +0.0 init is not the
 * additive identity, so the bias joins it as 0 + bias[j] (with bias[j]
 * alone, D was -0.0 where the unfused function gives +0.0); -0.0 is, so
 * from it bias[j] alone; a subtracted bias enters as -0.0 - bias[j] (-x
 * exactly; 0 - bias[j] gave +0.0 for a +0.0 bias where t - bias is
 * -0.0). */
static void test_fre_zero_sign(void **st) {
    tir_ctx *ctx = *st;
    for (int c = 0; c < 8; c++) {
        bool neg_init = c & 1, minus = c & 2;
        float bias0 = c & 4 ? -0.0f : 0.0f;
        char *text = replace1(tir_print(ctx, tir_def_matmul_bias(ctx, 4, 4, 4, TIR_F32)),
                              "= T.float32(0)", neg_init ? "= T.float32(-0.0)" : "= T.float32(0)");
        if (minus) {
            char *t2 =
                replace1(text, "C[vi_1, vj_1] + bias[vj_1]", "C[vi_1, vj_1] - bias[vj_1]");
            free(text);
            text = t2;
        }
        const tir_prim_func *f = parse(ctx, text);
        free(text);
        float want[16], got[16];
        zero_sign_run(ctx, f, bias0, want);
        tir_schedule *s = sched_new(ctx, f);
        SCHED_OK(s, tir_sched_fuse_reduction_epilogue(s, sched_block(s, "C"), sched_block(s, "D"),
                                                      NULL));
        const char *after = tir_print(ctx, tir_sched_func(s));
        const char *init = minus ? (neg_init ? "D[vi, vj] = T.float32(-0) - bias[vj]\n"
                                             : "D[vi, vj] = T.float32(0) + (T.float32(-0) - bias[vj])\n")
                                 : (neg_init ? "D[vi, vj] = bias[vj]\n"
                                             : "D[vi, vj] = T.float32(0) + bias[vj]\n");
        if (!strstr(after, init)) fail_msg("case %d: no \"%s\" in\n%s", c, init, after);
        zero_sign_run(ctx, tir_sched_func(s), bias0, got);
        if (memcmp(want, got, sizeof want) != 0)
            fail_msg("case %d (init %s0.0, t %c bias, bias %g): D[0] %g fused, %g before", c,
                     neg_init ? "-" : "+", minus ? '-' : '+', bias0, got[0], want[0]);
        tir_sched_destroy(s);
    }
}

/* The sign of a zero through an epilogue h: with every product -0.0 and
 * bias[j] = +-0.0, the fused D equals the unfused one bit for bit for each
 * h, and the init is bias[j] alone exactly where h ignores the sign of a
 * zero (max(x, k >= 0), min(x, k <= 0)); elsewhere (k < 0 for max, k > 0
 * for min, k NaN, k first) it stays 0 + bias[j], which the test shows is
 * needed: a -0.0 bias there gives -0.0 where the unfused D is +0.0. */
static void test_fre_zero_sign_epilogue(void **st) {
    tir_ctx *ctx = *st;
    static const struct {
        const char *h; /* the epilogue's value */
        bool alone;    /* the init is bias[vj] alone */
    } hs[] = {
        {"T.max(C[vi_1, vj_1] + bias[vj_1], T.float32(0))", true},
        {"T.max(C[vi_1, vj_1] + bias[vj_1], T.float32(-0.0))", true},
        {"T.max(C[vi_1, vj_1] + bias[vj_1], T.float32(0.5))", true},
        {"T.min(C[vi_1, vj_1] + bias[vj_1], T.float32(0))", true},
        {"T.min(C[vi_1, vj_1] + bias[vj_1], T.float32(-2))", true},
        {"T.max(C[vi_1, vj_1] + bias[vj_1], T.float32(-1))", false},
        {"T.min(C[vi_1, vj_1] + bias[vj_1], T.float32(1))", false},
        {"T.max(C[vi_1, vj_1] + bias[vj_1], T.float32(\"nan\"))", false},
        {"T.max(T.float32(0.5), C[vi_1, vj_1] + bias[vj_1])", false},
        {"(C[vi_1, vj_1] + bias[vj_1]) * T.float32(2)", false},
    };
    for (size_t i = 0; i < sizeof hs / sizeof hs[0]; i++) {
        for (int neg = 1; neg >= 0; neg--) {
            char *text = replace1(tir_print(ctx, tir_def_matmul_bias(ctx, 4, 4, 4, TIR_F32)),
                                  "C[vi_1, vj_1] + bias[vj_1]", hs[i].h);
            const tir_prim_func *f = parse(ctx, text);
            free(text);
            float want[16], got[16];
            zero_sign_run(ctx, f, neg ? -0.0f : 0.0f, want);
            tir_schedule *s = sched_new(ctx, f);
            SCHED_OK(s, tir_sched_fuse_reduction_epilogue(s, sched_block(s, "C"),
                                                          sched_block(s, "D"), NULL));
            zero_sign_run(ctx, tir_sched_func(s), neg ? -0.0f : 0.0f, got);
            if (memcmp(want, got, sizeof want) != 0)
                fail_msg("h %s, bias %s0.0: D[0] %g fused, %g before", hs[i].h, neg ? "-" : "+",
                         got[0], want[0]);
            const char *after = tir_print(ctx, tir_sched_func(s));
            const char *init = hs[i].alone ? "C[vi, vj] = bias[vj]\n"
                                           : "C[vi, vj] = T.float32(0) + bias[vj]\n";
            if (!strstr(after, init)) fail_msg("h %s: no \"%s\" in\n%s", hs[i].h, init, after);
            tir_sched_destroy(s);
        }
    }
}

static const char relu_after[] =
    "@T.prim_func\n"
    "def matmul_bias_relu(A: T.Buffer((5, 7), \"float32\"), B: T.Buffer((7, 3), \"float32\"), bias: T.Buffer((3,), \"float32\"), D: T.Buffer((5, 3), \"float32\")):\n"
    "    T.func_attr({\"global_symbol\": \"matmul_bias_relu\", \"tir.noalias\": 1})\n"
    "    with T.block(\"root\"):\n"
    "        C = T.alloc_buffer((5, 3), \"float32\")\n"
    "        for i, j, k in T.grid(5, 3, 7):\n"
    "            with T.block(\"C\"):\n"
    "                vi, vj, vk = T.axis.remap(\"SSR\", [i, j, k])\n"
    "                T.reads(bias[vj], A[vi, vk], B[vk, vj])\n"
    "                T.writes(C[vi, vj])\n"
    "                with T.init():\n"
    "                    C[vi, vj] = bias[vj]\n"
    "                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]\n"
    "        for i_1, j_1 in T.grid(5, 3):\n"
    "            with T.block(\"D\"):\n"
    "                vi_1, vj_1 = T.axis.remap(\"SS\", [i_1, j_1])\n"
    "                T.reads(C[vi_1, vj_1])\n"
    "                T.writes(D[vi_1, vj_1])\n"
    "                D[vi_1, vj_1] = T.max(C[vi_1, vj_1], T.float32(0))\n";

/* D = max(temp + bias, 0): the bias moves into the init; the ReLU stays in
 * its own block, applied once after the reduction. */
static void test_fre_bias_relu(void **st) {
    tir_ctx *ctx = *st;
    tir_schedule *s = fuse(ctx, tir_def_matmul_bias_relu(ctx, 5, 3, 7, TIR_F32), "C", "D");
    sched_expect_text(s, relu_after);
    tir_sched_destroy(s);
    s = fuse(ctx, tir_def_matmul_bias_relu(ctx, 17, 9, 13, TIR_F32), "C", "D");
    /* the remaining epilogue is an ordinary complete block */
    assert_null(node(s, "D")->init);
    assert_int_equal(node(s, "D")->nreads, 1);
    tir_sched_destroy(s);
}

/* Every epilogue of the brief, at odd shapes, against the unfused program
 * (sched_check_all runs both in the interpreter on two seeds; sums reach
 * +-63, so clipping to [-4, 5] per step instead of once would differ). */
static void test_fre_epilogues(void **st) {
    tir_ctx *ctx = *st;
    const enum epi all[] = {EPI_BIAS,  EPI_BIAS_RELU, EPI_CLIP0, EPI_CLIP1,
                            EPI_CLIP2, EPI_CLIP3,     EPI_CLIP4, EPI_SCALE,
                            EPI_ARBITRARY, EPI_CLIP_NOBIAS, EPI_COPY, EPI_TRANSPOSE};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        const tir_prim_func *f = build(ctx, 7, 5, 9, all[i], TIR_TE_SUM, false);
        bool moves = all[i] != EPI_SCALE && all[i] != EPI_CLIP_NOBIAS;
        tir_schedule *s = fuse_expect(ctx, f, "temp", "D", moves);
        const tir_block *r = node(s, "temp");
        switch (all[i]) {
        case EPI_BIAS:
        case EPI_COPY:
        case EPI_TRANSPOSE:
            /* the reduction writes D; nothing else is left */
            assert_int_equal(block_count(s), 1);
            assert_string_equal(r->writes[0].buffer->name, "D");
            break;
        case EPI_SCALE:
        case EPI_CLIP_NOBIAS:
            /* nothing additive to move: unchanged */
            assert_ptr_equal(tir_sched_func(s), f);
            break;
        default: {
            /* the init adds the bias; the epilogue no longer reads it */
            assert_int_equal(block_count(s), 2);
            assert_non_null(strstr(tir_print(ctx, r->init), "bias"));
            const tir_block *d = node(s, "D");
            for (int k = 0; k < d->nreads; k++)
                if (all[i] != EPI_ARBITRARY)
                    assert_string_not_equal(d->reads[k].buffer->name, "bias");
        }
        }
        tir_sched_destroy(s);
    }
}

/* A second reader of temp: temp keeps its values (the reduction also
 * writes the accumulator), never a reader of memory nothing writes. */
static void test_fre_two_consumers(void **st) {
    tir_ctx *ctx = *st;
    tir_schedule *s = fuse(ctx, build(ctx, 7, 5, 9, EPI_BIAS, TIR_TE_SUM, true), "temp", "D");
    const tir_block *r = node(s, "temp");
    assert_int_equal(r->nwrites, 2);
    assert_string_equal(r->writes[0].buffer->name, "temp");
    assert_string_equal(r->writes[1].buffer->name, "D");
    assert_int_equal(block_count(s), 2); /* temp, E2 */
    tir_sched_destroy(s);
    s = fuse(ctx, build(ctx, 7, 5, 9, EPI_BIAS_RELU, TIR_TE_SUM, true), "temp", "D");
    r = node(s, "temp");
    assert_int_equal(r->nwrites, 2);
    assert_string_equal(r->writes[1].buffer->name, "temp_acc");
    assert_string_equal(node(s, "D")->reads[0].buffer->name, "temp_acc");
    assert_int_equal(block_count(s), 3);
    tir_sched_destroy(s);
}

/* Max and min reductions keep their own init (TVM would start at 0). */
static void test_fre_max_min(void **st) {
    tir_ctx *ctx = *st;
    const tir_prim_func *f = build(ctx, 6, 5, 7, EPI_COPY, TIR_TE_MAX, false);
    tir_schedule *s = fuse(ctx, f, "temp", "D");
    const tir_block *r = node(s, "temp");
    assert_string_equal(r->writes[0].buffer->name, "D");
    const tir_buffer_store *init = tir_as_tir_buffer_store(r->init);
    assert_non_null(init);
    assert_true(tir_as_tir_float_imm(init->value)->value < -1e30);
    tir_sched_destroy(s);
    /* an additive epilogue after a min: nothing may move, unchanged */
    f = build(ctx, 6, 5, 7, EPI_BIAS_RELU, TIR_TE_MIN, false);
    s = fuse_expect(ctx, f, "temp", "D", false);
    assert_ptr_equal(tir_sched_func(s), f);
    tir_sched_destroy(s);
}

/* Fusion composes with the other primitives: decompose the bias init. */
static void test_fre_then_decompose(void **st) {
    tir_ctx *ctx = *st;
    tir_schedule *s = fuse(ctx, tir_def_matmul_bias_relu(ctx, 9, 7, 5, TIR_F32), "C", "D");
    tir_loop_rv l[16];
    sched_loops(s, "C", l);
    tir_block_rv init;
    SCHED_OK(s, tir_sched_decompose_reduction(s, sched_block(s, "C"), l[2], &init));
    sched_check_all(s);
    tir_sched_destroy(s);
}

/* The design goal: the remaining epilogue is an ordinary consumer, so
 * it moves into the thread tile (reverse_compute_at) and the accumulator
 * becomes a local buffer, as a GEMM kernel wants. */
static void test_fre_then_thread_tile(void **st) {
    tir_ctx *ctx = *st;
    tir_schedule *s = fuse(ctx, tir_def_matmul_bias_relu(ctx, 13, 11, 9, TIR_F32), "C", "D");
    tir_block_rv c = sched_block(s, "C"), d = sched_block(s, "D");
    tir_loop_rv l[16], pi[2], pj[2];
    sched_loops(s, "C", l);
    SCHED_OK(s, tir_sched_split(s, l[0], 2, (const int64_t[]){TIR_SPLIT_INFER, 4}, pi));
    SCHED_OK(s, tir_sched_split(s, l[1], 2, (const int64_t[]){TIR_SPLIT_INFER, 4}, pj));
    SCHED_OK(s, tir_sched_reorder(s, 3, (const tir_loop_rv[]){pi[0], pj[0], pi[1]}));
    SCHED_OK(s, tir_sched_bind(s, pi[0], "blockIdx.x"));
    SCHED_OK(s, tir_sched_bind(s, pj[0], "threadIdx.x"));
    SCHED_OK(s, tir_sched_reverse_compute_at(s, d, pj[0], false));
    SCHED_OK(s, tir_sched_set_scope(s, c, 0, "local"));
    tir_block_rv init;
    SCHED_OK(s, tir_sched_decompose_reduction(s, c, pi[1], &init));
    /* D now lies under the thread loop, after the reduction */
    tir_loop_rv dl[16];
    assert_true(sched_loops(s, "D", dl) >= 2);
    assert_ptr_equal(sched_for(s, dl[1])->var, sched_for(s, pj[0])->var);
    sched_check_all(s);
    tir_sched_destroy(s);
}

/* The checks above have teeth: TVM's fused clip (the clip applied on
 * every reduction step, init clip(bias)) differs from the unfused program
 * in the interpreter. */
static const char clip_unfused[] =
    "@T.prim_func\n"
    "def f(A: T.Buffer((3, 9), \"float32\"), bias: T.Buffer((3,), \"float32\"), D: T.Buffer((3,), \"float32\")):\n"
    "    with T.block(\"root\"):\n"
    "        C = T.alloc_buffer((3,), \"float32\")\n"
    "        for i, k in T.grid(3, 9):\n"
    "            with T.block(\"C\"):\n"
    "                vi, vk = T.axis.remap(\"SR\", [i, k])\n"
    "                T.reads(A[vi, vk])\n"
    "                T.writes(C[vi])\n"
    "                with T.init():\n"
    "                    C[vi] = T.float32(0)\n"
    "                C[vi] = C[vi] + A[vi, vk] * T.float32(3)\n"
    "        for i in T.serial(3):\n"
    "            with T.block(\"D\"):\n"
    "                vi = T.axis.remap(\"S\", [i])\n"
    "                T.reads(C[vi], bias[vi])\n"
    "                T.writes(D[vi])\n"
    "                D[vi] = T.min(T.max(C[vi] + bias[vi], T.float32(-4)), T.float32(5))\n";
static const char clip_tvm[] =
    "@T.prim_func\n"
    "def f(A: T.Buffer((3, 9), \"float32\"), bias: T.Buffer((3,), \"float32\"), D: T.Buffer((3,), \"float32\")):\n"
    "    for i, k in T.grid(3, 9):\n"
    "        with T.block(\"C\"):\n"
    "            vi, vk = T.axis.remap(\"SR\", [i, k])\n"
    "            T.reads(bias[vi], A[vi, vk])\n"
    "            T.writes(D[vi])\n"
    "            with T.init():\n"
    "                D[vi] = T.min(T.max(bias[vi], T.float32(-4)), T.float32(5))\n"
    "            D[vi] = T.min(T.max(D[vi] + A[vi, vk] * T.float32(3), T.float32(-4)), T.float32(5))\n";

static const tir_prim_func *parse(tir_ctx *ctx, const char *text);

static void test_fre_per_step_differs(void **st) {
    tir_ctx *ctx = *st;
    const tir_prim_func *f = parse(ctx, clip_unfused);
    char why[16384];
    /* steps of -9..9: clipping each partial sum loses what later steps undo */
    const tir_prim_func *tvm = parse(ctx, clip_tvm);
    int differ = 0;
    for (uint64_t seed = 1; seed <= 8; seed++) {
        if (sched_equiv_ok(ctx, f, tvm, seed, why, sizeof why)) continue;
        if (!strstr(why, "outputs differ")) fail_msg("%s", why);
        differ++;
    }
    assert_true(differ >= 4);
    tir_schedule *s = fuse(ctx, f, "C", "D");
    assert_true(sched_equiv_ok(ctx, f, tir_sched_func(s), 2, why, sizeof why));
    tir_sched_destroy(s);
}

/* ---------------------------------------------------------- negatives */

static const char intervening[] =
    "@T.prim_func\n"
    "def f(A: T.Buffer((4, 4), \"float32\"), D: T.Buffer((4, 4), \"float32\")):\n"
    "    with T.block(\"root\"):\n"
    "        C = T.alloc_buffer((4, 4), \"float32\")\n"
    "        W = T.alloc_buffer((4, 4), \"float32\")\n"
    "        for i, j, k in T.grid(4, 4, 4):\n"
    "            with T.block(\"C\"):\n"
    "                vi, vj, vk = T.axis.remap(\"SSR\", [i, j, k])\n"
    "                T.reads(A[vi, vk])\n"
    "                T.writes(C[vi, vj])\n"
    "                with T.init():\n"
    "                    C[vi, vj] = T.float32(0)\n"
    "                C[vi, vj] = C[vi, vj] + A[vi, vk]\n"
    "        for i, j in T.grid(4, 4):\n"
    "            with T.block(\"W\"):\n"
    "                vi, vj = T.axis.remap(\"SS\", [i, j])\n"
    "                T.reads(A[vi, vj])\n"
    "                T.writes(W[vi, vj])\n"
    "                W[vi, vj] = A[vi, vj]\n"
    "        for i, j in T.grid(4, 4):\n"
    "            with T.block(\"D\"):\n"
    "                vi, vj = T.axis.remap(\"SS\", [i, j])\n"
    "                T.reads(C[vi, vj], W[vi, vj])\n"
    "                T.writes(D[vi, vj])\n"
    "                D[vi, vj] = C[vi, vj] + W[vi, vj]\n";

/* Precondition 5: W, between C and D, reads D (which C would then write
 * before W reads it). */
static const char intervening_reads_d[] =
    "@T.prim_func\n"
    "def f(A: T.Buffer((4, 4), \"float32\"), D: T.Buffer((4, 4), \"float32\"), E: T.Buffer((4, 4), \"float32\")):\n"
    "    with T.block(\"root\"):\n"
    "        C = T.alloc_buffer((4, 4), \"float32\")\n"
    "        for i, j, k in T.grid(4, 4, 4):\n"
    "            with T.block(\"C\"):\n"
    "                vi, vj, vk = T.axis.remap(\"SSR\", [i, j, k])\n"
    "                T.reads(A[vi, vk])\n"
    "                T.writes(C[vi, vj])\n"
    "                with T.init():\n"
    "                    C[vi, vj] = T.float32(0)\n"
    "                C[vi, vj] = C[vi, vj] + A[vi, vk]\n"
    "        for i, j in T.grid(4, 4):\n"
    "            with T.block(\"W\"):\n"
    "                vi, vj = T.axis.remap(\"SS\", [i, j])\n"
    "                T.reads(D[vi, vj])\n"
    "                T.writes(E[vi, vj])\n"
    "                E[vi, vj] = D[vi, vj]\n"
    "        for i, j in T.grid(4, 4):\n"
    "            with T.block(\"D\"):\n"
    "                vi, vj = T.axis.remap(\"SS\", [i, j])\n"
    "                T.reads(C[vi, vj], A[vi, vj])\n"
    "                T.writes(D[vi, vj])\n"
    "                D[vi, vj] = C[vi, vj] + A[vi, vj]\n";

/* Precondition 5: the reduction itself reads D, which the epilogue
 * writes. */
static const char reduction_reads_d[] =
    "@T.prim_func\n"
    "def f(A: T.Buffer((4, 4), \"float32\"), D: T.Buffer((4, 4), \"float32\")):\n"
    "    with T.block(\"root\"):\n"
    "        C = T.alloc_buffer((4, 4), \"float32\")\n"
    "        for i, j, k in T.grid(4, 4, 4):\n"
    "            with T.block(\"C\"):\n"
    "                vi, vj, vk = T.axis.remap(\"SSR\", [i, j, k])\n"
    "                T.reads(A[vi, vk], D[vi, vk])\n"
    "                T.writes(C[vi, vj])\n"
    "                with T.init():\n"
    "                    C[vi, vj] = T.float32(0)\n"
    "                C[vi, vj] = C[vi, vj] + A[vi, vk] * D[vi, vk]\n"
    "        for i, j in T.grid(4, 4):\n"
    "            with T.block(\"D\"):\n"
    "                vi, vj = T.axis.remap(\"SS\", [i, j])\n"
    "                T.reads(C[vi, vj], A[vi, vj])\n"
    "                T.writes(D[vi, vj])\n"
    "                D[vi, vj] = C[vi, vj] + A[vi, vj]\n";

/* Precondition 4: the epilogue covers 2 of the reduction's 4 rows. */
static const char half_epilogue[] =
    "@T.prim_func\n"
    "def f(A: T.Buffer((4, 4), \"float32\"), B: T.Buffer((4, 4), \"float32\"), D: T.Buffer((2, 4), \"float32\")):\n"
    "    with T.block(\"root\"):\n"
    "        C = T.alloc_buffer((4, 4), \"float32\")\n"
    "        for i, j, k in T.grid(4, 4, 4):\n"
    "            with T.block(\"C\"):\n"
    "                vi, vj, vk = T.axis.remap(\"SSR\", [i, j, k])\n"
    "                T.reads(A[vi, vk])\n"
    "                T.writes(C[vi, vj])\n"
    "                with T.init():\n"
    "                    C[vi, vj] = T.float32(0)\n"
    "                C[vi, vj] = C[vi, vj] + A[vi, vk]\n"
    "        for i, j in T.grid(2, 4):\n"
    "            with T.block(\"D\"):\n"
    "                vi, vj = T.axis.remap(\"SS\", [i, j])\n"
    "                T.reads(C[vi, vj], B[vi, vj])\n"
    "                T.writes(D[vi, vj])\n"
    "                D[vi, vj] = C[vi, vj] + B[vi, vj]\n";

static const char not_a_sum[] =
    "@T.prim_func\n"
    "def g(A: T.Buffer((4, 4), \"float32\"), D: T.Buffer((4,), \"float32\")):\n"
    "    with T.block(\"root\"):\n"
    "        C = T.alloc_buffer((4,), \"float32\")\n"
    "        for i, k in T.grid(4, 4):\n"
    "            with T.block(\"C\"):\n"
    "                vi, vk = T.axis.remap(\"SR\", [i, k])\n"
    "                T.reads(A[vi, vk])\n"
    "                T.writes(C[vi])\n"
    "                with T.init():\n"
    "                    C[vi] = T.float32(0)\n"
    "                C[vi] = C[vi] * A[vi, vk]\n"
    "        for i in T.serial(4):\n"
    "            with T.block(\"D\"):\n"
    "                vi = T.axis.remap(\"S\", [i])\n"
    "                T.reads(C[vi])\n"
    "                T.writes(D[vi])\n"
    "                D[vi] = C[vi] + T.float32(1)\n";

static const tir_prim_func *parse(tir_ctx *ctx, const char *text) {
    const tir_prim_func *f = NULL;
    if (tir_parse_func(ctx, text, strlen(text), &f) != TIR_OK)
        fail_msg("parse: %s", tir_ctx_error(ctx));
    return f;
}

/* The blocks' handles are made before the call, which must change nothing. */
static void expect_fail(tir_schedule *s, tir_status want, const char *r, const char *e) {
    tir_block_rv rb = sched_block(s, r), eb = sched_block(s, e);
    bool changed = true; /* a failure clears it */
    SCHED_EXPECT_FAIL(s, want, "fuse_reduction_epilogue",
                      tir_sched_fuse_reduction_epilogue(s, rb, eb, &changed));
    assert_false(changed);
}

static void test_fre_preconditions(void **st) {
    tir_ctx *ctx = *st;
    tir_schedule *s = sched_new(ctx, tir_def_matmul_bias(ctx, 4, 5, 3, TIR_F32));
    tir_block_rv c = sched_block(s, "C"), d = sched_block(s, "D");
    /* 1: the first block is a reduction */
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_NOT_REDUCTION, "fuse_reduction_epilogue",
                      tir_sched_fuse_reduction_epilogue(s, d, c, NULL));
    /* 2: the second is a later consumer */
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_EPILOGUE_NOT_CONSUMER, "fuse_reduction_epilogue",
                      tir_sched_fuse_reduction_epilogue(s, c, c, NULL));
    /* after decomposing, C has no init: 1 again */
    tir_loop_rv l[16];
    sched_loops(s, "C", l);
    tir_block_rv init;
    SCHED_OK(s, tir_sched_decompose_reduction(s, c, l[0], &init));
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_NOT_REDUCTION, "fuse_reduction_epilogue",
                      tir_sched_fuse_reduction_epilogue(s, c, d, NULL));
    tir_sched_destroy(s);
    /* 1: a product is not a supported reduction */
    s = sched_new(ctx, parse(ctx, not_a_sum));
    expect_fail(s, TIR_ERR_SCHED_NOT_REDUCTION, "C", "D");
    tir_sched_destroy(s);
    /* 2: the padding block of a conv2d comes before the conv and does not
       read its result */
    s = sched_new(ctx, tir_def_conv2d_nchw(ctx, 1, 2, 5, 5, 2, 3, 3, 1, 1, TIR_F32));
    expect_fail(s, TIR_ERR_SCHED_EPILOGUE_NOT_CONSUMER, "conv", "pad");
    tir_sched_destroy(s);
    /* 3: temp loaded twice */
    s = sched_new(ctx, build(ctx, 3, 4, 5, EPI_SQUARE, TIR_TE_SUM, false));
    expect_fail(s, TIR_ERR_SCHED_EPILOGUE_PATTERN, "temp", "D");
    assert_non_null(strstr(tir_ctx_error(ctx), "exactly once"));
    tir_sched_destroy(s);
    /* 3: a predicate on the epilogue (a split that does not divide) */
    s = sched_new(ctx, build(ctx, 3, 5, 5, EPI_BIAS_RELU, TIR_TE_SUM, false));
    sched_loops(s, "D", l);
    tir_loop_rv out[2];
    SCHED_OK(s, tir_sched_split(s, l[1], 2, (const int64_t[]){TIR_SPLIT_INFER, 2}, out));
    expect_fail(s, TIR_ERR_SCHED_EPILOGUE_PATTERN, "temp", "D");
    assert_non_null(strstr(tir_ctx_error(ctx), "predicate"));
    tir_sched_destroy(s);
    /* 4: D[i] = temp[i, 1] does not map one to one */
    s = sched_new(ctx, build(ctx, 3, 4, 5, EPI_COLUMN, TIR_TE_SUM, false));
    expect_fail(s, TIR_ERR_SCHED_INDEX_MAP, "temp", "D");
    tir_sched_destroy(s);
    /* 5: a block in between writes what the epilogue reads */
    s = sched_new(ctx, parse(ctx, intervening));
    expect_fail(s, TIR_ERR_SCHED_INTERVENING_ACCESS, "C", "D");
    assert_non_null(strstr(tir_ctx_error(ctx), "\"W\""));
    tir_sched_destroy(s);
    /* 5: a block in between reads D */
    s = sched_new(ctx, parse(ctx, intervening_reads_d));
    expect_fail(s, TIR_ERR_SCHED_INTERVENING_ACCESS, "C", "D");
    assert_non_null(strstr(tir_ctx_error(ctx), "block \"W\", between \"C\" and \"D\", accesses D"));
    tir_sched_destroy(s);
    /* 5: the reduction itself reads D */
    s = sched_new(ctx, parse(ctx, reduction_reads_d));
    expect_fail(s, TIR_ERR_SCHED_INTERVENING_ACCESS, "C", "D");
    assert_non_null(strstr(tir_ctx_error(ctx), "block \"C\" itself accesses D"));
    tir_sched_destroy(s);
    /* 4: the epilogue's domain does not cover the reduction's */
    s = sched_new(ctx, parse(ctx, half_epilogue));
    expect_fail(s, TIR_ERR_SCHED_INDEX_MAP, "C", "D");
    assert_non_null(strstr(tir_ctx_error(ctx), "domain differs"));
    tir_sched_destroy(s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_fre_bias, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fre_zero_sign_epilogue, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fre_zero_sign, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fre_bias_relu, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fre_epilogues, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fre_two_consumers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fre_max_min, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fre_then_decompose, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fre_then_thread_tile, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fre_per_step_differs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fre_preconditions, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
