/* text_samples.c: hand-built functions for the text format tests (see
 * text_samples.h).  They need not compute anything sensible, only hold
 * every construct the printer and parser must agree on. */
#include "text_samples.h"

#include <math.h>
#include <stdarg.h>
#include <string.h>

#define X(v) (&(v)->base)

static const tir_expr *I(tir_ctx *ctx, int64_t v) { return tir_i32(ctx, v); }

static const tir_stmt *loop(tir_ctx *ctx, const tir_var *v, const tir_expr *min,
                            const tir_expr *ext, tir_for_kind k, const char *tag,
                            const tir_stmt *body) {
    return tir_for_new(ctx, v, min, ext, k, tag, 0, NULL, body);
}

static const tir_stmt *seq(tir_ctx *ctx, int n, ...) {
    const tir_stmt *s[16];
    va_list ap;
    va_start(ap, n);
    for (int i = 0; i < n; i++) s[i] = va_arg(ap, const tir_stmt *);
    va_end(ap);
    return tir_seq_new(ctx, n, s);
}

static const tir_expr *load(tir_ctx *ctx, const tir_buffer *b, int n, ...) {
    const tir_expr *idx[8];
    va_list ap;
    va_start(ap, n);
    for (int i = 0; i < n; i++) idx[i] = va_arg(ap, const tir_expr *);
    va_end(ap);
    return tir_load(ctx, b, n, idx);
}

static const tir_stmt *store(tir_ctx *ctx, const tir_buffer *b, const tir_expr *v, int n, ...) {
    const tir_expr *idx[8];
    va_list ap;
    va_start(ap, n);
    for (int i = 0; i < n; i++) idx[i] = va_arg(ap, const tir_expr *);
    va_end(ap);
    return tir_store(ctx, b, v, n, idx);
}

/* A region of points (extent 1 in every dimension). */
static tir_buffer_region point(tir_ctx *ctx, const tir_buffer *b, int n, ...) {
    tir_range r[8];
    va_list ap;
    va_start(ap, n);
    for (int i = 0; i < n; i++) {
        r[i].min = va_arg(ap, const tir_expr *);
        r[i].extent = tir_int(ctx, r[i].min->dtype, 1);
    }
    va_end(ap);
    return tir_region_new(ctx, b, n, r);
}

static const tir_stmt *root(tir_ctx *ctx, const tir_stmt *body) {
    tir_block_desc d = {.name = "root", .body = body};
    return tir_block_realize_new(ctx, 0, NULL, NULL, tir_block_new(ctx, &d));
}

static const tir_prim_func *func(tir_ctx *ctx, const char *name, int n,
                                 const tir_buffer *const *bufs, const tir_var *const *scalars,
                                 const tir_stmt *body, int nattrs, const tir_annot *attrs) {
    const tir_var *params[8];
    for (int i = 0; i < n; i++)
        params[i] = bufs[i] ? tir_var_new(ctx, bufs[i]->name, TIR_HANDLE) : scalars[i];
    return tir_prim_func_new(ctx, name, n, params, bufs, body, nattrs, attrs);
}

const tir_prim_func *ts_matmul(tir_ctx *ctx) {
    int64_t sh[2] = {128, 128};
    const tir_buffer *A = tir_buffer_simple(ctx, "A", TIR_F32, 2, sh, TIR_SCOPE_GLOBAL);
    const tir_buffer *B = tir_buffer_simple(ctx, "B", TIR_F32, 2, sh, TIR_SCOPE_GLOBAL);
    const tir_buffer *C = tir_buffer_simple(ctx, "C", TIR_F32, 2, sh, TIR_SCOPE_GLOBAL);
    const tir_var *i = tir_var_new(ctx, "i", TIR_I32), *j = tir_var_new(ctx, "j", TIR_I32),
                  *k = tir_var_new(ctx, "k", TIR_I32);
    const tir_var *vi = tir_var_new(ctx, "vi", TIR_I32), *vj = tir_var_new(ctx, "vj", TIR_I32),
                  *vk = tir_var_new(ctx, "vk", TIR_I32);
    const tir_expr *n128 = I(ctx, 128), *zero = I(ctx, 0);
    tir_iter_var iv[3] = {{vi, {zero, n128}, TIR_ITER_SPATIAL},
                          {vj, {zero, n128}, TIR_ITER_SPATIAL},
                          {vk, {zero, n128}, TIR_ITER_REDUCE}};
    tir_buffer_region reads[2] = {point(ctx, A, 2, X(vi), X(vk)), point(ctx, B, 2, X(vk), X(vj))};
    tir_buffer_region w = point(ctx, C, 2, X(vi), X(vj));
    const tir_stmt *init = store(ctx, C, tir_f32(ctx, 0), 2, X(vi), X(vj));
    const tir_expr *upd = tir_add(ctx, load(ctx, C, 2, X(vi), X(vj)),
                                  tir_mul(ctx, load(ctx, A, 2, X(vi), X(vk)),
                                          load(ctx, B, 2, X(vk), X(vj))));
    tir_block_desc d = {.name = "C", .niters = 3, .iters = iv, .nreads = 2, .reads = reads,
                        .nwrites = 1, .writes = &w, .init = init,
                        .body = store(ctx, C, upd, 2, X(vi), X(vj))};
    const tir_expr *vals[3] = {X(i), X(j), X(k)};
    const tir_stmt *s = tir_block_realize_new(ctx, 3, vals, NULL, tir_block_new(ctx, &d));
    s = loop(ctx, k, zero, n128, TIR_FOR_SERIAL, NULL, s);
    s = loop(ctx, j, zero, n128, TIR_FOR_SERIAL, NULL, s);
    s = loop(ctx, i, zero, n128, TIR_FOR_SERIAL, NULL, s);
    const tir_buffer *bufs[3] = {A, B, C};
    return func(ctx, "matmul", 3, bufs, NULL, root(ctx, s), 0, NULL);
}

const tir_prim_func *ts_blocks(tir_ctx *ctx) {
    const tir_var *n = tir_var_new(ctx, "n", TIR_I32);
    const tir_expr *c64 = I(ctx, 64), *zero = I(ctx, 0), *one = I(ctx, 1);
    const tir_expr *shA[2] = {X(n), c64};
    tir_buffer_desc da = {"A", TIR_F32, 2, shA, NULL, NULL, TIR_SCOPE_GLOBAL, 0};
    const tir_buffer *A = tir_buffer_new(ctx, &da);
    const tir_expr *strides[2] = {c64, one};
    tir_buffer_desc db = {"B", TIR_F16, 2, shA, strides, NULL, TIR_SCOPE_GLOBAL, 0};
    const tir_buffer *B = tir_buffer_new(ctx, &db);
    const tir_expr *shC[1] = {X(n)};
    tir_buffer_desc dc = {"C", TIR_F32, 1, shC, NULL, NULL, TIR_SCOPE_GLOBAL, 0};
    const tir_buffer *C = tir_buffer_new(ctx, &dc);
    int64_t shS[2] = {64, 64};
    const tir_buffer *S = tir_buffer_simple(ctx, "S", TIR_F32, 2, shS, TIR_SCOPE_SHARED);

    /* block "S": remapped vi, explicit vj over [4, 68) */
    const tir_var *i = tir_var_new(ctx, "i", TIR_I32), *j = tir_var_new(ctx, "j", TIR_I32);
    const tir_var *vi = tir_var_new(ctx, "vi", TIR_I32), *vj = tir_var_new(ctx, "vj", TIR_I32);
    tir_iter_var iv[2] = {{vi, {zero, X(n)}, TIR_ITER_SPATIAL},
                          {vj, {I(ctx, 4), c64}, TIR_ITER_SPATIAL}};
    tir_buffer_region rd = point(ctx, A, 2, X(vi), tir_sub(ctx, X(vj), I(ctx, 4)));
    tir_buffer_region wr = point(ctx, S, 2, tir_floormod(ctx, X(vi), c64), tir_sub(ctx, X(vj), I(ctx, 4)));
    tir_annot battr[2] = {{.key = "note", .kind = TIR_ANNOT_STR, .s = "say \"hi\"\n\tok\\"},
                          {.key = "stage", .kind = TIR_ANNOT_INT, .i = -3}};
    tir_block_desc ds = {
        .name = "S", .niters = 2, .iters = iv, .nreads = 1, .reads = &rd, .nwrites = 1,
        .writes = &wr,
        .body = store(ctx, S, load(ctx, A, 2, X(vi), tir_sub(ctx, X(vj), I(ctx, 4))), 2,
                      tir_floormod(ctx, X(vi), c64), tir_sub(ctx, X(vj), I(ctx, 4))),
        .nannots = 2, .annots = battr};
    const tir_expr *vals[2] = {X(i), tir_add(ctx, X(j), I(ctx, 4))};
    const tir_expr *pred = tir_lt(ctx, X(i), tir_sub(ctx, X(n), one));
    const tir_stmt *bs = tir_block_realize_new(ctx, 2, vals, pred, tir_block_new(ctx, &ds));
    int64_t arr[3] = {0, 0, 1};
    tir_annot la[3] = {{.key = "pragma_unroll", .kind = TIR_ANNOT_INT, .i = 1},
                       {.key = "s", .kind = TIR_ANNOT_STR, .s = "x"},
                       {.key = "arr", .kind = TIR_ANNOT_INTS, .nints = 3, .ints = arr}};
    bs = tir_for_new(ctx, j, zero, c64, TIR_FOR_SERIAL, NULL, 3, la, bs);
    bs = loop(ctx, i, zero, X(n), TIR_FOR_PARALLEL, NULL, bs);

    /* block "red": C[vi] = sum over vk in [2, 10) of B[vi, vk*4 : vk*4+4] */
    const tir_var *i2 = tir_var_new(ctx, "i", TIR_I32), *k = tir_var_new(ctx, "k", TIR_I32);
    const tir_var *wi = tir_var_new(ctx, "vi", TIR_I32), *vk = tir_var_new(ctx, "vk", TIR_I32);
    tir_iter_var iv2[2] = {{wi, {zero, X(n)}, TIR_ITER_SPATIAL},
                           {vk, {I(ctx, 2), I(ctx, 8)}, TIR_ITER_REDUCE}};
    tir_range rr[2] = {{X(wi), I(ctx, 4)}, {zero, c64}};
    tir_buffer_region rd2[2] = {tir_region_new(ctx, B, 2, rr), point(ctx, C, 1, X(wi))};
    tir_buffer_region wr2 = point(ctx, C, 1, X(wi));
    const tir_expr *b16 = load(ctx, B, 2, X(wi), tir_mul(ctx, X(vk), I(ctx, 4)));
    const tir_expr *acc = tir_add(ctx, load(ctx, C, 1, X(wi)), tir_cast_new(ctx, TIR_F32, b16));
    const tir_stmt *body2 = tir_if_new(
        ctx, tir_and(ctx, tir_lt(ctx, X(vk), I(ctx, 9)), tir_not_new(ctx, tir_lt(ctx, X(wi), one))),
        store(ctx, C, acc, 1, X(wi)),
        seq(ctx, 2, tir_evaluate_new(ctx, I(ctx, 0)),
            store(ctx, C, tir_f32(ctx, -1.5), 1, X(wi))));
    tir_block_desc dr = {.name = "red", .niters = 2, .iters = iv2, .nreads = 2, .reads = rd2,
                         .nwrites = 1, .writes = &wr2,
                         .init = store(ctx, C, tir_f32(ctx, 0.0), 1, X(wi)), .body = body2};
    const tir_expr *vals2[2] = {X(i2), tir_add(ctx, X(k), I(ctx, 2))};
    const tir_stmt *br = tir_block_realize_new(ctx, 2, vals2, NULL, tir_block_new(ctx, &dr));
    br = loop(ctx, k, zero, I(ctx, 8), TIR_FOR_SERIAL, NULL, br);
    br = loop(ctx, i2, zero, X(n), TIR_FOR_SERIAL, NULL, br);

    tir_annot rattr = {.key = "root_note", .kind = TIR_ANNOT_INT, .i = 7};
    tir_block_desc droot = {.name = "root", .body = seq(ctx, 2, bs, br), .nallocs = 1,
                            .allocs = &S, .nannots = 1, .annots = &rattr};
    const tir_stmt *body = tir_block_realize_new(ctx, 0, NULL, NULL, tir_block_new(ctx, &droot));
    int64_t ints[3] = {1, -2, 3};
    tir_annot fattr[3] = {{.key = "global_symbol", .kind = TIR_ANNOT_STR, .s = "blocks"},
                          {.key = "tir.noalias", .kind = TIR_ANNOT_INT, .i = 1},
                          {.key = "arr", .kind = TIR_ANNOT_INTS, .nints = 3, .ints = ints}};
    const tir_buffer *bufs[4] = {A, B, C, NULL};
    const tir_var *scalars[4] = {NULL, NULL, NULL, n};
    return func(ctx, "blocks", 4, bufs, scalars, body, 3, fattr);
}

const tir_prim_func *ts_lowered(tir_ctx *ctx) {
    int64_t sh[1] = {1024};
    const tir_buffer *A = tir_buffer_simple(ctx, "A", TIR_F32, 1, sh, TIR_SCOPE_GLOBAL);
    const tir_buffer *B = tir_buffer_simple(ctx, "B", TIR_F32, 1, sh, TIR_SCOPE_GLOBAL);
    const tir_var *m = tir_var_new(ctx, "m", TIR_I64), *x = tir_var_new(ctx, "x", TIR_F32);
    int64_t s128[1] = {128}, s4[1] = {4};
    const tir_buffer *Sh = tir_buffer_simple(ctx, "Sh", TIR_F32, 1, s128, TIR_SCOPE_SHARED);
    const tir_buffer *L = tir_buffer_simple(ctx, "L", TIR_F32, 1, s4, TIR_SCOPE_LOCAL);
    const tir_var *bx = tir_var_new(ctx, "bx", TIR_I32), *tx = tir_var_new(ctx, "tx", TIR_I32);
    const tir_var *v = tir_var_new(ctx, "v", TIR_I32), *u = tir_var_new(ctx, "u", TIR_I32);
    const tir_var *q = tir_var_new(ctx, "q", TIR_I64), *t = tir_var_new(ctx, "t", TIR_F32);
    const tir_expr *zero = I(ctx, 0);
    const tir_expr *base = tir_add(ctx, tir_mul(ctx, X(bx), I(ctx, 128)), tir_mul(ctx, X(tx), I(ctx, 4)));
    const tir_expr *r4 = tir_ramp_new(ctx, zero, I(ctx, 1), 4);
    const tir_expr *ra = tir_ramp_new(ctx, base, I(ctx, 1), 4);
    const tir_stmt *in_l = store(ctx, L, tir_add(ctx, load(ctx, A, 1, ra),
                                                 tir_broadcast_new(ctx, X(x), 4)),
                                 1, r4);
    const tir_stmt *with_l = tir_allocate_new(
        ctx, L, seq(ctx, 2, in_l, store(ctx, Sh, load(ctx, L, 1, r4), 1,
                                        tir_ramp_new(ctx, tir_mul(ctx, X(tx), I(ctx, 4)), I(ctx, 1), 4))));
    const tir_expr *addr[3] = {tir_call_new(ctx, TIR_HANDLE, TIR_INTRIN_ADDRESS_OF, 1,
                                            (const tir_expr *[]){load(ctx, Sh, 1, X(tx))}),
                               tir_call_new(ctx, TIR_HANDLE, TIR_INTRIN_ADDRESS_OF, 1,
                                            (const tir_expr *[]){load(ctx, A, 1, base)}),
                               I(ctx, 16)};
    const tir_stmt *cp = seq(ctx, 3, tir_evaluate_new(ctx, tir_call_new(ctx, TIR_VOID, TIR_INTRIN_CP_ASYNC, 3, addr)),
                             tir_evaluate_new(ctx, tir_call_new(ctx, TIR_VOID, TIR_INTRIN_CP_ASYNC_COMMIT, 0, NULL)),
                             tir_evaluate_new(ctx, tir_call_new(ctx, TIR_VOID, TIR_INTRIN_CP_ASYNC_WAIT, 1,
                                                                (const tir_expr *[]){zero})));
    const tir_stmt *sync = tir_evaluate_new(ctx, tir_call_new(ctx, TIR_VOID, TIR_INTRIN_SYNCTHREADS, 0, NULL));
    const tir_expr *sh_v = load(ctx, Sh, 1, tir_add(ctx, tir_mul(ctx, X(tx), I(ctx, 4)), X(v)));
    const tir_expr *e = tir_call_new(ctx, TIR_F32, TIR_INTRIN_EXP, 1, &sh_v);
    const tir_expr *fma_args[3] = {X(t), X(t), X(x)};
    const tir_expr *let = tir_let_new(ctx, t, e, tir_call_new(ctx, TIR_F32, TIR_INTRIN_FMA, 3, fma_args));
    const tir_stmt *vec = loop(ctx, v, zero, I(ctx, 4), TIR_FOR_VECTORIZED, NULL,
                               store(ctx, B, let, 1, tir_add(ctx, base, X(v))));
    const tir_expr *sel = tir_select_new(ctx, tir_lt(ctx, X(u), I(ctx, 1)), X(x),
                                         tir_cast_new(ctx, TIR_F32, X(u)));
    const tir_stmt *unr = loop(ctx, u, I(ctx, 2), I(ctx, 2), TIR_FOR_UNROLLED, NULL,
                               store(ctx, B, sel, 1, X(u)));
    const tir_stmt *iff = tir_if_new(ctx, tir_lt(ctx, X(tx), I(ctx, 16)), unr,
                                     tir_if_new(ctx, tir_binop_new(ctx, TIR_KIND_GE, X(tx), I(ctx, 30)), vec, NULL));
    const tir_expr *q32 = tir_cast_new(ctx, TIR_I32, X(q));
    const tir_stmt *q_loop = loop(ctx, q, tir_int(ctx, TIR_I64, 0), X(m), TIR_FOR_SERIAL, NULL,
                                  store(ctx, B, tir_f32(ctx, 1), 1, q32));
    const tir_stmt *q_loop2 = loop(ctx, tir_var_new(ctx, "p", TIR_I64), tir_int(ctx, TIR_I64, 1), tir_int(ctx, TIR_I64, 4),
                                   TIR_FOR_PARALLEL, NULL, tir_evaluate_new(ctx, tir_int(ctx, TIR_I64, 0)));
    const tir_stmt *inner = tir_allocate_new(ctx, Sh, seq(ctx, 6, with_l, cp, sync, iff, q_loop, q_loop2));
    const tir_stmt *s = loop(ctx, tx, zero, I(ctx, 32), TIR_FOR_THREAD_BINDING, "threadIdx.x", inner);
    s = loop(ctx, bx, zero, I(ctx, 8), TIR_FOR_THREAD_BINDING, "blockIdx.x", s);
    const tir_buffer *bufs[4] = {A, B, NULL, NULL};
    const tir_var *scalars[4] = {NULL, NULL, m, x};
    return func(ctx, "lowered", 4, bufs, scalars, s, 0, NULL);
}

const tir_prim_func *ts_exprs(tir_ctx *ctx) {
    int64_t sh[1] = {64};
    const tir_buffer *F = tir_buffer_simple(ctx, "F", TIR_F32, 1, sh, TIR_SCOPE_GLOBAL);
    const tir_buffer *Iv = tir_buffer_simple(ctx, "I", TIR_I32, 1, sh, TIR_SCOPE_GLOBAL);
    const tir_buffer *Bo = tir_buffer_simple(ctx, "Bo", TIR_BOOL, 1, sh, TIR_SCOPE_GLOBAL);
    const tir_buffer *D = tir_buffer_simple(ctx, "D", TIR_F64, 1, sh, TIR_SCOPE_GLOBAL);
    const tir_buffer *H = tir_buffer_simple(ctx, "H", TIR_F16, 1, sh, TIR_SCOPE_GLOBAL);
    const tir_buffer *G = tir_buffer_simple(ctx, "G", TIR_BF16, 1, sh, TIR_SCOPE_GLOBAL);
    const tir_buffer *L = tir_buffer_simple(ctx, "L", TIR_I64, 1, sh, TIR_SCOPE_GLOBAL);
    const tir_buffer *U = tir_buffer_simple(ctx, "U", TIR_U8, 1, sh, TIR_SCOPE_GLOBAL);
    const tir_buffer *C = tir_buffer_simple(ctx, "C", TIR_I8, 1, sh, TIR_SCOPE_GLOBAL);
    const tir_buffer *Z = tir_buffer_simple(ctx, "Z", TIR_F32, 0, NULL, TIR_SCOPE_GLOBAL);
    const tir_var *a = tir_var_new(ctx, "a", TIR_I32), *b = tir_var_new(ctx, "b", TIR_I32),
                  *c = tir_var_new(ctx, "c", TIR_I32), *x = tir_var_new(ctx, "x", TIR_F32),
                  *y = tir_var_new(ctx, "y", TIR_F32), *p = tir_var_new(ctx, "p", TIR_BOOL);
    const tir_expr *A = X(a), *Bv = X(b), *Cv = X(c);
    const tir_stmt *st[32];
    int n = 0;
    /* (a - (b - c)) * (a + b) // (c % 3) - -5, with T.min / T.max */
    const tir_expr *e1 = tir_sub(
        ctx,
        tir_floordiv(ctx, tir_mul(ctx, tir_sub(ctx, A, tir_sub(ctx, Bv, Cv)), tir_add(ctx, A, Bv)),
                     tir_floormod(ctx, Cv, I(ctx, 3))),
        I(ctx, -5));
    st[n++] = store(ctx, Iv, e1, 1, I(ctx, 0));
    st[n++] = store(ctx, Iv, tir_add(ctx, A, tir_add(ctx, Bv, Cv)), 1, I(ctx, 1));
    st[n++] = store(ctx, Iv, tir_mul(ctx, I(ctx, -2147483648LL), tir_min(ctx, A, tir_max(ctx, Bv, I(ctx, 2147483647)))), 1, I(ctx, 2));
    st[n++] = store(ctx, Iv, tir_binop_new(ctx, TIR_KIND_DIV, A, tir_binop_new(ctx, TIR_KIND_MOD, Bv, Cv)), 1, I(ctx, 3));
    st[n++] = store(ctx, Iv, tir_sub(ctx, I(ctx, 0), tir_sub(ctx, I(ctx, 0), A)), 1, I(ctx, 4));
    /* comparisons, and/or/not precedence */
    const tir_expr *cmp = tir_binop_new(ctx, TIR_KIND_EQ, tir_lt(ctx, A, Bv), tir_binop_new(ctx, TIR_KIND_NE, Bv, Cv));
    const tir_expr *lg = tir_binop_new(
        ctx, TIR_KIND_OR, tir_and(ctx, X(p), tir_binop_new(ctx, TIR_KIND_OR, cmp, X(p))),
        tir_not_new(ctx, tir_and(ctx, tir_binop_new(ctx, TIR_KIND_LE, A, Cv),
                                 tir_binop_new(ctx, TIR_KIND_GE, Cv, tir_i32(ctx, 0)))));
    st[n++] = store(ctx, Bo, lg, 1, I(ctx, 5));
    st[n++] = store(ctx, Bo, tir_not_new(ctx, tir_not_new(ctx, tir_binop_new(ctx, TIR_KIND_GT, X(x), X(y)))), 1, I(ctx, 6));
    st[n++] = store(ctx, Bo, tir_binop_new(ctx, TIR_KIND_EQ, tir_not_new(ctx, X(p)), tir_bool(ctx, false)), 1, I(ctx, 7));
    /* floats: true division, special values */
    st[n++] = store(ctx, F, tir_binop_new(ctx, TIR_KIND_DIV, X(x), tir_binop_new(ctx, TIR_KIND_DIV, X(y), tir_f32(ctx, 0.1))), 1, I(ctx, 8));
    st[n++] = store(ctx, F, tir_add(ctx, tir_f32(ctx, INFINITY), tir_f32(ctx, -INFINITY)), 1, I(ctx, 9));
    double qnan, pnan;
    uint64_t bits = 0x7ff8000000000000ull, pbits = 0xfff8000000000001ull;
    memcpy(&qnan, &bits, sizeof bits);
    memcpy(&pnan, &pbits, sizeof pbits);
    st[n++] = store(ctx, F, tir_sub(ctx, tir_f32(ctx, qnan), tir_f32(ctx, pnan)), 1, I(ctx, 10));
    st[n++] = store(ctx, F, tir_mul(ctx, tir_f32(ctx, -0.0), tir_f32(ctx, 1e30)), 1, I(ctx, 11));
    st[n++] = store(ctx, D, tir_add(ctx, tir_float(ctx, TIR_F64, 5e-324), tir_float(ctx, TIR_F64, 1.0 / 3.0)), 1, I(ctx, 12));
    st[n++] = store(ctx, H, tir_float(ctx, TIR_F16, 65504), 1, I(ctx, 13));
    st[n++] = store(ctx, G, tir_float(ctx, TIR_BF16, -2.5e-3), 1, I(ctx, 14));
    st[n++] = store(ctx, F, tir_binop_new(ctx, TIR_KIND_FLOORDIV, X(x), tir_binop_new(ctx, TIR_KIND_FLOORMOD, X(y), tir_f32(ctx, 2))), 1, I(ctx, 15));
    /* other integer types */
    st[n++] = store(ctx, L, tir_add(ctx, tir_int(ctx, TIR_I64, INT64_MIN), tir_int(ctx, TIR_I64, 9000000000LL)), 1, I(ctx, 16));
    st[n++] = store(ctx, U, tir_int(ctx, TIR_U8, 255), 1, I(ctx, 17));
    st[n++] = store(ctx, C, tir_int(ctx, TIR_I8, -128), 1, I(ctx, 18));
    /* select, casts, calls with explicit dtype, zero-dim buffer */
    const tir_expr *sqrt_arg = tir_cast_new(ctx, TIR_F32, A);
    st[n++] = store(ctx, F, tir_select_new(ctx, X(p), tir_call_new(ctx, TIR_F32, TIR_INTRIN_SQRT, 1, &sqrt_arg),
                                           tir_call_new(ctx, TIR_F32, TIR_INTRIN_FABS, 1, (const tir_expr *[]){X(y)})),
                    1, I(ctx, 19));
    const tir_expr *pw[2] = {X(x), X(y)};
    st[n++] = store(ctx, D, tir_call_new(ctx, TIR_F64, TIR_INTRIN_POW, 2, pw), 1, I(ctx, 20));
    st[n++] = store(ctx, Z, tir_call_new(ctx, TIR_F32, TIR_INTRIN_TANH, 1, (const tir_expr *[]){load(ctx, Z, 0)}), 0);
    st[n++] = store(ctx, Bo, tir_cast_new(ctx, TIR_BOOL, tir_int(ctx, TIR_I8, 3)), 1, I(ctx, 21));
    /* vector lanes on bool and select */
    const tir_expr *vb = tir_lt(ctx, tir_ramp_new(ctx, A, I(ctx, 2), 8), tir_broadcast_new(ctx, Bv, 8));
    const tir_expr *vf = tir_select_new(ctx, vb, tir_broadcast_new(ctx, X(x), 8), load(ctx, F, 1, tir_ramp_new(ctx, I(ctx, 0), I(ctx, 1), 8)));
    st[n++] = store(ctx, F, vf, 1, tir_ramp_new(ctx, I(ctx, 8), I(ctx, 1), 8));
    const tir_stmt *body = tir_seq_new(ctx, n, st);
    const tir_var *ss[3] = {a, b, c};
    for (int i = 0; i < 3; i++)
        body = loop(ctx, ss[i], I(ctx, -4), I(ctx, 4), TIR_FOR_SERIAL, NULL, body);
    const tir_buffer *bufs[8] = {F, Iv, Bo, D, H, G, L, U};
    const tir_var *sc[8] = {0};
    const tir_prim_func *f0 = func(ctx, "exprs", 8, bufs, sc, body, 0, NULL);
    /* append C, Z and the scalars x, y, p */
    const tir_var *params[13];
    const tir_buffer *bm[13];
    for (int i = 0; i < 8; i++) {
        params[i] = f0->params[i];
        bm[i] = f0->buffer_map[i];
    }
    params[8] = tir_var_new(ctx, "C", TIR_HANDLE);
    bm[8] = C;
    params[9] = tir_var_new(ctx, "Z", TIR_HANDLE);
    bm[9] = Z;
    params[10] = x, bm[10] = NULL;
    params[11] = y, bm[11] = NULL;
    params[12] = p, bm[12] = NULL;
    return tir_prim_func_new(ctx, "exprs", 13, params, bm, body, 0, NULL);
}

const tir_prim_func *ts_no_root(tir_ctx *ctx) {
    int64_t sh[1] = {16};
    const tir_buffer *A = tir_buffer_simple(ctx, "A", TIR_F32, 1, sh, TIR_SCOPE_GLOBAL);
    const tir_var *i = tir_var_new(ctx, "i", TIR_I32), *vi = tir_var_new(ctx, "vi", TIR_I32);
    tir_iter_var iv = {vi, {I(ctx, 0), I(ctx, 16)}, TIR_ITER_SPATIAL};
    tir_buffer_region w = point(ctx, A, 1, X(vi));
    tir_block_desc d = {.name = "B", .niters = 1, .iters = &iv, .nwrites = 1, .writes = &w,
                        .body = store(ctx, A, tir_f32(ctx, 2), 1, X(vi))};
    const tir_expr *val = X(i);
    const tir_stmt *s = tir_block_realize_new(ctx, 1, &val, NULL, tir_block_new(ctx, &d));
    s = loop(ctx, i, I(ctx, 0), I(ctx, 16), TIR_FOR_SERIAL, NULL, s);
    const tir_buffer *bufs[1] = {A};
    return func(ctx, "no_root", 1, bufs, NULL, s, 0, NULL);
}

const tir_prim_func *ts_names(tir_ctx *ctx) {
    int64_t sh[1] = {8};
    const tir_buffer *A = tir_buffer_simple(ctx, "A", TIR_F32, 1, sh, TIR_SCOPE_GLOBAL);
    const tir_buffer *A2 = tir_buffer_simple(ctx, "A", TIR_F32, 1, sh, TIR_SCOPE_LOCAL);
    const tir_buffer *Tb = tir_buffer_simple(ctx, "T", TIR_F32, 1, sh, TIR_SCOPE_LOCAL);
    const tir_var *i1 = tir_var_new(ctx, "i", TIR_I32), *i2 = tir_var_new(ctx, "i", TIR_I32);
    const tir_var *i_1 = tir_var_new(ctx, "i_1", TIR_I32), *kw = tir_var_new(ctx, "for", TIR_I32);
    const tir_var *dot = tir_var_new(ctx, "i.outer", TIR_I32), *dig = tir_var_new(ctx, "0abc", TIR_I32);
    const tir_var *empty = tir_var_new(ctx, "", TIR_I32);
    const tir_stmt *s1 = loop(ctx, i1, I(ctx, 0), I(ctx, 8), TIR_FOR_SERIAL, NULL,
                              store(ctx, A, tir_f32(ctx, 1), 1, X(i1)));
    const tir_stmt *s2 = loop(ctx, i2, I(ctx, 0), I(ctx, 8), TIR_FOR_SERIAL, NULL,
                              loop(ctx, i_1, I(ctx, 0), X(i2), TIR_FOR_SERIAL, NULL,
                                   store(ctx, A2, load(ctx, A, 1, X(i_1)), 1, X(i2))));
    const tir_stmt *s3 = loop(ctx, kw, I(ctx, 0), I(ctx, 2), TIR_FOR_SERIAL, NULL,
                              loop(ctx, dot, I(ctx, 0), I(ctx, 2), TIR_FOR_SERIAL, NULL,
                                   loop(ctx, dig, I(ctx, 0), I(ctx, 2), TIR_FOR_SERIAL, NULL,
                                        loop(ctx, empty, I(ctx, 0), I(ctx, 2), TIR_FOR_SERIAL, NULL,
                                             store(ctx, Tb, tir_f32(ctx, 0), 1,
                                                   tir_add(ctx, tir_add(ctx, X(kw), X(dot)),
                                                           tir_add(ctx, X(dig), X(empty))))))));
    const tir_stmt *body = tir_allocate_new(ctx, A2, tir_allocate_new(ctx, Tb, seq(ctx, 3, s1, s2, s3)));
    const tir_buffer *bufs[1] = {A};
    return func(ctx, "my-func.v2", 1, bufs, NULL, body, 0, NULL);
}

const tir_prim_func *ts_layouts(tir_ctx *ctx) {
    const tir_var *n = tir_var_new(ctx, "n", TIR_I32), *m = tir_var_new(ctx, "m", TIR_I64);
    const tir_var *off = tir_var_new(ctx, "off", TIR_I32), *k = tir_var_new(ctx, "k", TIR_I32);
    const tir_expr *shA[2] = {X(n), I(ctx, 16)};
    const tir_expr *stA[2] = {I(ctx, 32), I(ctx, 1)};
    tir_buffer_desc da = {"A", TIR_F32, 2, shA, stA, X(off), TIR_SCOPE_GLOBAL, 128};
    const tir_buffer *A = tir_buffer_new(ctx, &da);
    const tir_expr *shB[1] = {X(m)};
    tir_buffer_desc db = {"B", TIR_U8, 1, shB, NULL, tir_int(ctx, TIR_I64, 8), TIR_SCOPE_LOCAL, 0};
    const tir_buffer *B = tir_buffer_new(ctx, &db);
    const tir_expr *shC[2] = {X(n), X(k)};
    tir_buffer_desc dc = {"C", TIR_I32, 2, shC, NULL, NULL, TIR_SCOPE_GLOBAL, 0};
    const tir_buffer *C = tir_buffer_new(ctx, &dc);
    const tir_var *i = tir_var_new(ctx, "i", TIR_I32), *j = tir_var_new(ctx, "j", TIR_I64);
    const tir_stmt *s = store(ctx, C, tir_cast_new(ctx, TIR_I32, load(ctx, B, 1, X(j))), 2, X(i),
                              tir_cast_new(ctx, TIR_I32, X(j)));
    s = loop(ctx, j, tir_int(ctx, TIR_I64, 0), X(m), TIR_FOR_SERIAL, NULL, s);
    s = loop(ctx, i, I(ctx, 0), X(n), TIR_FOR_SERIAL, NULL, s);
    s = loop(ctx, tir_var_new(ctx, "t", TIR_I32), I(ctx, 0), tir_floordiv(ctx, X(k), I(ctx, 2)),
             TIR_FOR_SERIAL, NULL, s);
    const tir_buffer *bufs[4] = {A, B, C, NULL};
    const tir_var *sc[4] = {NULL, NULL, NULL, k};
    return func(ctx, "layouts", 4, bufs, sc, s, 0, NULL);
}

const ts_sample ts_samples[] = {
    {"matmul", ts_matmul},   {"blocks", ts_blocks}, {"lowered", ts_lowered},
    {"exprs", ts_exprs},     {"no_root", ts_no_root}, {"names", ts_names},
    {"layouts", ts_layouts},
};
const int ts_nsamples = sizeof ts_samples / sizeof ts_samples[0];
