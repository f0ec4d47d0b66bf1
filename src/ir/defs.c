/* defs.c: the ready definitions (matmul and friends, conv2d, an
 * elementwise chain), built with the TE layer so they look exactly like
 * what TVM's te.create_prim_func gives for the same computes.
 *
 * Buffer names equal stage (block) names, as in TE.  Stages that are not
 * outputs (matmul_bias's C, conv2d's pad, the chain's B and C) are
 * allocated in the root block; the parameters are the inputs followed by
 * the one output.  For bool, products are And and sums are Or (the boolean
 * semiring); elsewhere arithmetic is the dtype's own (integers wrap).
 */
#include "ir_internal.h"
#include "te_internal.h"

static bool shapes_ok(tir_ctx *ctx, const char *what, int n, const int64_t *v) {
    for (int i = 0; i < n; i++)
        if (!ir_extent_ok(v[i])) {
            tir_ctx_fail(ctx, TIR_ERR_SHAPE, "%s: dimension %d is %lld; it must be in [1, 2^31)",
                         what, i, (long long)v[i]);
            return false;
        }
    return true;
}

static const tir_expr *v(const tir_var *x) { return &x->base; }

static const tir_expr *mul(tir_ctx *ctx, const tir_expr *a, const tir_expr *b) {
    return tir_dtype_is_bool(a->dtype) ? tir_and(ctx, a, b) : tir_mul(ctx, a, b);
}

/* -------------------------------------------------------------- matmuls */

typedef struct mm_info {
    tir_te_tensor *A, *B;
    bool trans_b; /* B is [N, K] */
    bool batch;   /* a leading batch axis on everything */
    bool widen;   /* products in `acc` (inputs cast up): mixed precision */
    tir_dtype acc;
} mm_info;

static const tir_expr *mm_body(tir_ctx *ctx, const tir_var *const *ax, const tir_var *const *rx,
                               void *user) {
    const mm_info *m = user;
    int o = m->batch ? 1 : 0;
    const tir_expr *ia[3], *ib[3];
    if (m->batch) ia[0] = ib[0] = v(ax[0]);
    ia[o] = v(ax[o]);
    ia[o + 1] = v(rx[0]);
    ib[o] = m->trans_b ? v(ax[o + 1]) : v(rx[0]);
    ib[o + 1] = m->trans_b ? v(rx[0]) : v(ax[o + 1]);
    const tir_expr *a = tir_te_at(ctx, m->A, 2 + o, ia), *b = tir_te_at(ctx, m->B, 2 + o, ib);
    if (m->widen) {
        a = tir_cast_new(ctx, m->acc, a);
        b = tir_cast_new(ctx, m->acc, b);
    }
    return mul(ctx, a, b);
}

static tir_te_tensor *matmul_stage(tir_ctx *ctx, mm_info *m, int64_t M, int64_t N, int64_t K,
                                   tir_dtype t) {
    int64_t sa[2] = {M, K}, sb_nn[2] = {K, N}, sb_nt[2] = {N, K}, sc[2] = {M, N};
    m->A = tir_te_placeholder(ctx, "A", t, 2, sa);
    if (!m->A) return NULL;
    m->B = tir_te_placeholder(ctx, "B", t, 2, m->trans_b ? sb_nt : sb_nn);
    if (!m->B) return NULL;
    return tir_te_reduce(ctx, "C", 2, sc, TIR_TE_SUM, 1, &K, mm_body, m);
}

const tir_prim_func *tir_def_matmul(tir_ctx *ctx, int64_t M, int64_t N, int64_t K,
                                    tir_dtype t) {
    int64_t dims[3] = {M, N, K};
    if (!shapes_ok(ctx, "matmul", 3, dims)) return NULL;
    mm_info m = {0};
    tir_te_tensor *C = matmul_stage(ctx, &m, M, N, K, t);
    if (!C) return NULL;
    tir_te_tensor *args[3] = {m.A, m.B, C};
    return tir_te_create_prim_func(ctx, "matmul", 3, args);
}

const tir_prim_func *tir_def_matmul_mixed(tir_ctx *ctx, int64_t M, int64_t N, int64_t K,
                                          tir_dtype in, tir_dtype acc) {
    int64_t dims[3] = {M, N, K};
    if (!shapes_ok(ctx, "matmul", 3, dims)) return NULL;
    mm_info m = {.widen = !tir_dtype_eq(in, acc), .acc = acc};
    tir_te_tensor *C = matmul_stage(ctx, &m, M, N, K, in);
    if (!C) return NULL;
    tir_te_tensor *args[3] = {m.A, m.B, C};
    return tir_te_create_prim_func(ctx, "matmul", 3, args);
}

const tir_prim_func *tir_def_matmul_nt(tir_ctx *ctx, int64_t M, int64_t N, int64_t K,
                                       tir_dtype t) {
    int64_t dims[3] = {M, N, K};
    if (!shapes_ok(ctx, "matmul_nt", 3, dims)) return NULL;
    mm_info m = {.trans_b = true};
    tir_te_tensor *C = matmul_stage(ctx, &m, M, N, K, t);
    if (!C) return NULL;
    tir_te_tensor *args[3] = {m.A, m.B, C};
    return tir_te_create_prim_func(ctx, "matmul_nt", 3, args);
}

typedef struct bias_info {
    tir_te_tensor *C, *bias;
    bool relu;
} bias_info;

static const tir_expr *bias_body(tir_ctx *ctx, const tir_var *const *ax,
                                 const tir_var *const *rx, void *user) {
    (void)rx;
    const bias_info *b = user;
    const tir_expr *ic[2] = {v(ax[0]), v(ax[1])}, *ib[1] = {v(ax[1])};
    const tir_expr *c = tir_te_at(ctx, b->C, 2, ic), *bias = tir_te_at(ctx, b->bias, 1, ib);
    const tir_expr *s = tir_dtype_is_bool(c->dtype) ? tir_binop_new(ctx, TIR_KIND_OR, c, bias)
                                                    : tir_add(ctx, c, bias);
    return b->relu ? tir_max(ctx, s, ir_te_const(ctx, s->dtype, 0)) : s;
}

static const tir_prim_func *matmul_bias(tir_ctx *ctx, const char *name, int64_t M, int64_t N,
                                        int64_t K, tir_dtype t, bool relu) {
    int64_t dims[3] = {M, N, K};
    if (!shapes_ok(ctx, name, 3, dims)) return NULL;
    mm_info m = {0};
    bias_info b = {.relu = relu};
    b.C = matmul_stage(ctx, &m, M, N, K, t);
    if (!b.C) return NULL;
    b.bias = tir_te_placeholder(ctx, "bias", t, 1, &N);
    int64_t sd[2] = {M, N};
    tir_te_tensor *D = tir_te_compute(ctx, "D", 2, sd, bias_body, &b);
    if (!D) return NULL;
    tir_te_tensor *args[4] = {m.A, m.B, b.bias, D};
    return tir_te_create_prim_func(ctx, name, 4, args);
}

const tir_prim_func *tir_def_matmul_bias(tir_ctx *ctx, int64_t M, int64_t N, int64_t K,
                                         tir_dtype t) {
    return matmul_bias(ctx, "matmul_bias", M, N, K, t, false);
}

const tir_prim_func *tir_def_matmul_bias_relu(tir_ctx *ctx, int64_t M, int64_t N, int64_t K,
                                              tir_dtype t) {
    return matmul_bias(ctx, "matmul_bias_relu", M, N, K, t, true);
}

const tir_prim_func *tir_def_batch_matmul(tir_ctx *ctx, int64_t batch, int64_t M, int64_t N,
                                          int64_t K, tir_dtype t) {
    int64_t dims[4] = {batch, M, N, K};
    if (!shapes_ok(ctx, "batch_matmul", 4, dims)) return NULL;
    mm_info m = {.batch = true};
    int64_t sa[3] = {batch, M, K}, sb[3] = {batch, K, N}, sc[3] = {batch, M, N};
    m.A = tir_te_placeholder(ctx, "A", t, 3, sa);
    m.B = m.A ? tir_te_placeholder(ctx, "B", t, 3, sb) : NULL;
    if (!m.B) return NULL;
    static const char *const names[3] = {"b", "i", "j"};
    tir_te_tensor *C = ir_te_reduce_named(ctx, "C", 3, sc, names, TIR_TE_SUM, 1, &K, NULL,
                                          mm_body, &m);
    if (!C) return NULL;
    tir_te_tensor *args[3] = {m.A, m.B, C};
    return tir_te_create_prim_func(ctx, "batch_matmul", 3, args);
}

/* ---------------------------------------------------------------- conv2d */

typedef struct conv_info {
    tir_te_tensor *I, *W, *pad;
    int64_t h, w, stride, padding;
} conv_info;

static const tir_expr *pad_body(tir_ctx *ctx, const tir_var *const *ax, const tir_var *const *rx,
                                void *user) {
    (void)rx;
    const conv_info *c = user;
    const tir_expr *p = tir_i32(ctx, c->padding);
    const tir_expr *idx[4] = {v(ax[0]), v(ax[1]), v(ax[2]), v(ax[3])};
    if (c->padding == 0) return tir_te_at(ctx, c->I, 4, idx);
    idx[2] = tir_sub(ctx, v(ax[2]), p);
    idx[3] = tir_sub(ctx, v(ax[3]), p);
    const tir_expr *in = tir_te_at(ctx, c->I, 4, idx);
    /* p <= h < H + p && p <= w < W + p */
    const tir_expr *conds[4] = {
        tir_binop_new(ctx, TIR_KIND_LE, p, v(ax[2])),
        tir_lt(ctx, v(ax[2]), tir_i32(ctx, c->h + c->padding)),
        tir_binop_new(ctx, TIR_KIND_LE, p, v(ax[3])),
        tir_lt(ctx, v(ax[3]), tir_i32(ctx, c->w + c->padding)),
    };
    const tir_expr *cond = conds[0];
    for (int i = 1; i < 4; i++) cond = tir_and(ctx, cond, conds[i]);
    return tir_select_new(ctx, cond, in, ir_te_const(ctx, in->dtype, 0));
}

static const tir_expr *conv_body(tir_ctx *ctx, const tir_var *const *ax,
                                 const tir_var *const *rx, void *user) {
    const conv_info *c = user;
    /* ax = n, o, y, x; rx = rc, ry, rx */
    const tir_expr *y = v(ax[2]), *x = v(ax[3]);
    if (c->stride != 1) {
        y = tir_mul(ctx, y, tir_i32(ctx, c->stride));
        x = tir_mul(ctx, x, tir_i32(ctx, c->stride));
    }
    const tir_expr *ip[4] = {v(ax[0]), v(rx[0]), tir_add(ctx, y, v(rx[1])),
                             tir_add(ctx, x, v(rx[2]))};
    const tir_expr *iw[4] = {v(ax[1]), v(rx[0]), v(rx[1]), v(rx[2])};
    return mul(ctx, tir_te_at(ctx, c->pad, 4, ip), tir_te_at(ctx, c->W, 4, iw));
}

const tir_prim_func *tir_def_conv2d_nchw(tir_ctx *ctx, int64_t n, int64_t c, int64_t h,
                                         int64_t w, int64_t o, int64_t kh, int64_t kw,
                                         int64_t stride, int64_t pad, tir_dtype t) {
    int64_t dims[8] = {n, c, h, w, o, kh, kw, stride};
    if (!shapes_ok(ctx, "conv2d_nchw", 8, dims)) return NULL;
    if (pad < 0 || pad > INT32_MAX / 4) {
        tir_ctx_fail(ctx, TIR_ERR_SHAPE, "conv2d_nchw: padding %lld is negative or too large",
                     (long long)pad);
        return NULL;
    }
    int64_t ph = h + 2 * pad, pw = w + 2 * pad;
    if (ph < kh || pw < kw) {
        tir_ctx_fail(ctx, TIR_ERR_SHAPE,
                     "conv2d_nchw: kernel %lldx%lld is larger than the padded input %lldx%lld",
                     (long long)kh, (long long)kw, (long long)ph, (long long)pw);
        return NULL;
    }
    int64_t oh = (ph - kh) / stride + 1, ow = (pw - kw) / stride + 1;
    conv_info ci = {.h = h, .w = w, .stride = stride, .padding = pad};
    int64_t si[4] = {n, c, h, w}, sw[4] = {o, c, kh, kw}, sp[4] = {n, c, ph, pw},
            so[4] = {n, o, oh, ow}, sr[3] = {c, kh, kw};
    ci.I = tir_te_placeholder(ctx, "I", t, 4, si);
    ci.W = ci.I ? tir_te_placeholder(ctx, "W", t, 4, sw) : NULL;
    if (!ci.W) return NULL;
    static const char *const pad_names[4] = {"n", "c", "h", "w"};
    static const char *const conv_names[4] = {"n", "o", "y", "x"};
    static const char *const red_names[3] = {"rc", "ry", "rx"};
    ci.pad = ir_te_compute_named(ctx, "pad", 4, sp, pad_names, pad_body, &ci);
    if (!ci.pad) return NULL;
    tir_te_tensor *out =
        ir_te_reduce_named(ctx, "conv", 4, so, conv_names, TIR_TE_SUM, 3, sr, red_names,
                           conv_body, &ci);
    if (!out) return NULL;
    tir_te_tensor *args[3] = {ci.I, ci.W, out};
    return tir_te_create_prim_func(ctx, "conv2d_nchw", 3, args);
}

/* ------------------------------------------------------ elementwise chain */

typedef struct chain_info {
    tir_te_tensor *in;
    int step; /* 0: *2, 1: +1, 2: max(., 0) */
} chain_info;

static const tir_expr *chain_body(tir_ctx *ctx, const tir_var *const *ax,
                                  const tir_var *const *rx, void *user) {
    (void)rx;
    const chain_info *c = user;
    const tir_expr *idx[2] = {v(ax[0]), v(ax[1])};
    const tir_expr *x = tir_te_at(ctx, c->in, 2, idx);
    switch (c->step) {
    case 0: return tir_mul(ctx, x, ir_te_const(ctx, x->dtype, 2));
    case 1: return tir_add(ctx, x, ir_te_const(ctx, x->dtype, 1));
    default: return tir_max(ctx, x, ir_te_const(ctx, x->dtype, 0));
    }
}

const tir_prim_func *tir_def_elementwise_chain(tir_ctx *ctx, int64_t M, int64_t N,
                                               tir_dtype t) {
    int64_t s[2] = {M, N};
    if (!shapes_ok(ctx, "elementwise_chain", 2, s)) return NULL;
    chain_info c[3];
    tir_te_tensor *A = tir_te_placeholder(ctx, "A", t, 2, s);
    if (!A) return NULL;
    static const char *const names[3] = {"B", "C", "D"};
    tir_te_tensor *prev = A;
    for (int i = 0; i < 3; i++) {
        c[i].in = prev;
        c[i].step = i;
        prev = tir_te_compute(ctx, names[i], 2, s, chain_body, &c[i]);
        if (!prev) return NULL;
    }
    tir_te_tensor *args[2] = {A, prev};
    return tir_te_create_prim_func(ctx, "elementwise_chain", 2, args);
}
