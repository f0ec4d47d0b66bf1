/* cg_kernels.c: the hand-built lowered kernels of cg_kernels.h.
 *
 * They are written the way the lowering passes are expected to produce
 * them (docs/lowered-ir.md): flattened buffers, thread-binding loops for
 * the launch, Allocate for shared and local arrays.
 */
#include "cg_kernels.h"

#include <stdio.h>

/* --------------------------------------------------------------- helpers */

static const tir_buffer *gbuf_e(tir_ctx *ctx, const char *name, tir_dtype t, const tir_expr *extent,
                                int align) {
    tir_buffer_desc d = {name, t, 1, &extent, NULL, NULL, TIR_SCOPE_GLOBAL, align};
    return tir_buffer_new(ctx, &d);
}
static const tir_buffer *gbuf(tir_ctx *ctx, const char *name, tir_dtype t, int64_t n) {
    return gbuf_e(ctx, name, t, tir_i32(ctx, n), 64);
}
static const tir_buffer *abuf(tir_ctx *ctx, const char *name, tir_dtype t, int64_t n,
                              tir_scope scope) {
    return tir_buffer_simple(ctx, name, t, 1, &n, scope);
}
static const tir_expr *I(tir_ctx *ctx, int64_t v) { return tir_i32(ctx, v); }
static const tir_expr *V(const tir_var *v) { return &v->base; }
static const tir_expr *add(tir_ctx *ctx, const tir_expr *a, const tir_expr *b) {
    return tir_add(ctx, a, b);
}
static const tir_expr *muli(tir_ctx *ctx, const tir_expr *a, int64_t c) {
    return tir_mul(ctx, a, I(ctx, c));
}
static const tir_expr *ld(tir_ctx *ctx, const tir_buffer *b, const tir_expr *i) {
    return tir_load(ctx, b, 1, &i);
}
static const tir_stmt *st(tir_ctx *ctx, const tir_buffer *b, const tir_expr *i, const tir_expr *v) {
    return tir_store(ctx, b, v, 1, &i);
}
static const tir_stmt *loop(tir_ctx *ctx, const tir_var *v, int64_t ext, tir_for_kind k,
                            const tir_stmt *body) {
    return tir_for_new(ctx, v, I(ctx, 0), I(ctx, ext), k, NULL, 0, NULL, body);
}
static const tir_stmt *bind(tir_ctx *ctx, const tir_var *v, const tir_expr *ext, const char *tag,
                            const tir_stmt *body) {
    return tir_for_new(ctx, v, I(ctx, 0), ext, TIR_FOR_THREAD_BINDING, tag, 0, NULL, body);
}
static const tir_stmt *seq(tir_ctx *ctx, int n, const tir_stmt *const *s) {
    return tir_seq_new(ctx, n, s);
}
static const tir_var *iv(tir_ctx *ctx, const char *name) { return tir_var_new(ctx, name, TIR_I32); }

/* A function over the buffers bufs[0..nb) then the scalars sc[0..ns). */
static const tir_prim_func *func(tir_ctx *ctx, const char *name, int nb,
                                 const tir_buffer *const *bufs, int ns, const tir_var *const *sc,
                                 const tir_stmt *body) {
    const tir_var *params[16];
    const tir_buffer *map[16];
    for (int i = 0; i < nb; i++) {
        params[i] = tir_var_new(ctx, bufs[i]->name, TIR_HANDLE);
        map[i] = bufs[i];
    }
    for (int i = 0; i < ns; i++) {
        params[nb + i] = sc[i];
        map[nb + i] = NULL;
    }
    return tir_prim_func_new(ctx, name, nb + ns, params, map, body, 0, NULL);
}

/* bx in blockIdx.x(nblocks), tx in threadIdx.x(nthreads): body(i = bx*nthreads + tx) */
static const tir_stmt *grid1d(tir_ctx *ctx, const tir_var *bx, const tir_var *tx, int64_t nblocks,
                              int64_t nthreads, const tir_stmt *body) {
    return bind(ctx, bx, I(ctx, nblocks), "blockIdx.x",
                bind(ctx, tx, I(ctx, nthreads), "threadIdx.x", body));
}

/* --------------------------------------------------------------- kernels */

const tir_prim_func *ck_vector_add(tir_ctx *ctx, int64_t n) {
    const tir_buffer *A = gbuf(ctx, "A", TIR_F32, n), *B = gbuf(ctx, "B", TIR_F32, n),
                     *C = gbuf(ctx, "C", TIR_F32, n);
    const tir_var *bx = iv(ctx, "bx"), *tx = iv(ctx, "tx");
    const tir_expr *i = add(ctx, muli(ctx, V(bx), 256), V(tx));
    const tir_stmt *body = st(ctx, C, i, tir_add(ctx, ld(ctx, A, i), ld(ctx, B, i)));
    const tir_buffer *bufs[] = {A, B, C};
    return func(ctx, "vector_add", 3, bufs, 0, NULL, grid1d(ctx, bx, tx, n / 256, 256, body));
}

const tir_prim_func *ck_vector_add_sym(tir_ctx *ctx) {
    const tir_var *n = iv(ctx, "n");
    const tir_buffer *A = gbuf_e(ctx, "A", TIR_F32, V(n), 64),
                     *B = gbuf_e(ctx, "B", TIR_F32, V(n), 64),
                     *C = gbuf_e(ctx, "C", TIR_F32, V(n), 64);
    const tir_var *bx = iv(ctx, "bx"), *tx = iv(ctx, "tx");
    const tir_expr *i = add(ctx, muli(ctx, V(bx), 256), V(tx));
    const tir_stmt *body = tir_if_new(
        ctx, tir_lt(ctx, i, V(n)), st(ctx, C, i, tir_add(ctx, ld(ctx, A, i), ld(ctx, B, i))), NULL);
    const tir_expr *nblocks = tir_floordiv(ctx, add(ctx, V(n), I(ctx, 255)), I(ctx, 256));
    const tir_stmt *launch =
        bind(ctx, bx, nblocks, "blockIdx.x", bind(ctx, tx, I(ctx, 256), "threadIdx.x", body));
    const tir_buffer *bufs[] = {A, B, C};
    return func(ctx, "vector_add_sym", 3, bufs, 1, &n, launch);
}

const tir_prim_func *ck_matmul_naive(tir_ctx *ctx, int64_t M, int64_t N, int64_t K) {
    const tir_buffer *A = gbuf(ctx, "A", TIR_F32, M * K), *B = gbuf(ctx, "B", TIR_F32, K * N),
                     *C = gbuf(ctx, "C", TIR_F32, M * N);
    const tir_buffer *acc = abuf(ctx, "acc", TIR_F32, 1, TIR_SCOPE_LOCAL);
    const tir_var *bx = iv(ctx, "bx"), *by = iv(ctx, "by"), *tx = iv(ctx, "tx"),
                  *ty = iv(ctx, "ty"), *k = iv(ctx, "k");
    const tir_expr *row = add(ctx, muli(ctx, V(by), 16), V(ty));
    const tir_expr *col = add(ctx, muli(ctx, V(bx), 16), V(tx));
    const tir_expr *zero = I(ctx, 0);
    const tir_expr *prod = tir_mul(ctx, ld(ctx, A, add(ctx, muli(ctx, row, K), V(k))),
                                   ld(ctx, B, add(ctx, muli(ctx, V(k), N), col)));
    const tir_stmt *body[] = {
        st(ctx, acc, zero, tir_f32(ctx, 0.0)),
        loop(ctx, k, K, TIR_FOR_SERIAL, st(ctx, acc, zero, tir_add(ctx, ld(ctx, acc, zero), prod))),
        st(ctx, C, add(ctx, muli(ctx, row, N), col), ld(ctx, acc, zero)),
    };
    const tir_stmt *s = tir_allocate_new(ctx, acc, seq(ctx, 3, body));
    s = bind(ctx, tx, I(ctx, 16), "threadIdx.x", s);
    s = bind(ctx, ty, I(ctx, 16), "threadIdx.y", s);
    s = bind(ctx, bx, I(ctx, N / 16), "blockIdx.x", s);
    s = bind(ctx, by, I(ctx, M / 16), "blockIdx.y", s);
    const tir_buffer *bufs[] = {A, B, C};
    return func(ctx, "matmul_naive", 3, bufs, 0, NULL, s);
}

const tir_prim_func *ck_matmul_tiled(tir_ctx *ctx, int64_t M, int64_t N, int64_t K) {
    const tir_buffer *A = gbuf(ctx, "A", TIR_F32, M * K), *B = gbuf(ctx, "B", TIR_F32, K * N),
                     *C = gbuf(ctx, "C", TIR_F32, M * N);
    const tir_buffer *As = abuf(ctx, "As", TIR_F32, 64 * 16, TIR_SCOPE_SHARED);
    const tir_buffer *Bs = abuf(ctx, "Bs", TIR_F32, 16 * 64, TIR_SCOPE_SHARED);
    const tir_buffer *acc = abuf(ctx, "acc", TIR_F32, 16, TIR_SCOPE_LOCAL);
    const tir_var *bx = iv(ctx, "bx"), *by = iv(ctx, "by"), *tx = iv(ctx, "tx"),
                  *ty = iv(ctx, "ty");
    const tir_expr *tid = add(ctx, muli(ctx, V(ty), 16), V(tx));

    /* acc[i*4+j] = 0 */
    const tir_var *i0 = iv(ctx, "i0"), *j0 = iv(ctx, "j0");
    const tir_stmt *init =
        loop(ctx, i0, 4, TIR_FOR_UNROLLED,
             loop(ctx, j0, 4, TIR_FOR_UNROLLED,
                  st(ctx, acc, add(ctx, muli(ctx, V(i0), 4), V(j0)), tir_f32(ctx, 0.0))));

    /* Stage the A tile (64 x 16) and B tile (16 x 64): 4 elements per thread. */
    const tir_var *ko = iv(ctx, "ko"), *la = iv(ctx, "la"), *lb = iv(ctx, "lb");
    const tir_expr *ia = add(ctx, muli(ctx, V(la), 256), tid);
    const tir_expr *am = tir_floordiv(ctx, ia, I(ctx, 16)), *ak = tir_floormod(ctx, ia, I(ctx, 16));
    const tir_expr *a_src = add(ctx, muli(ctx, add(ctx, muli(ctx, V(by), 64), am), K),
                                add(ctx, muli(ctx, V(ko), 16), ak));
    const tir_stmt *load_a = loop(ctx, la, 4, TIR_FOR_UNROLLED, st(ctx, As, ia, ld(ctx, A, a_src)));
    const tir_expr *ib = add(ctx, muli(ctx, V(lb), 256), tid);
    const tir_expr *bk = tir_floordiv(ctx, ib, I(ctx, 64)), *bn = tir_floormod(ctx, ib, I(ctx, 64));
    const tir_expr *b_src = add(ctx, muli(ctx, add(ctx, muli(ctx, V(ko), 16), bk), N),
                                add(ctx, muli(ctx, V(bx), 64), bn));
    const tir_stmt *load_b = loop(ctx, lb, 4, TIR_FOR_UNROLLED, st(ctx, Bs, ib, ld(ctx, B, b_src)));

    /* acc[i*4+j] += As[(ty*4+i)*16 + kk] * Bs[kk*64 + tx*4 + j] */
    const tir_var *kk = iv(ctx, "kk"), *i1 = iv(ctx, "i1"), *j1 = iv(ctx, "j1");
    const tir_expr *ai = add(ctx, muli(ctx, V(i1), 4), V(j1));
    const tir_expr *a_sh = add(ctx, muli(ctx, add(ctx, muli(ctx, V(ty), 4), V(i1)), 16), V(kk));
    const tir_expr *b_sh = add(ctx, muli(ctx, V(kk), 64), add(ctx, muli(ctx, V(tx), 4), V(j1)));
    const tir_stmt *upd =
        st(ctx, acc, ai,
           tir_add(ctx, ld(ctx, acc, ai), tir_mul(ctx, ld(ctx, As, a_sh), ld(ctx, Bs, b_sh))));
    const tir_stmt *compute =
        loop(ctx, kk, 16, TIR_FOR_UNROLLED,
             loop(ctx, i1, 4, TIR_FOR_UNROLLED, loop(ctx, j1, 4, TIR_FOR_UNROLLED, upd)));
    const tir_expr *sync = tir_call_new(ctx, TIR_VOID, TIR_INTRIN_SYNCTHREADS, 0, NULL);
    const tir_stmt *kbody[] = {load_a, load_b, tir_evaluate_new(ctx, sync), compute,
                               tir_evaluate_new(ctx, sync)};
    const tir_stmt *kloop = loop(ctx, ko, K / 16, TIR_FOR_SERIAL, seq(ctx, 5, kbody));

    /* C[(by*64 + ty*4 + i)*N + bx*64 + tx*4 + j] = acc[i*4+j] */
    const tir_var *i2 = iv(ctx, "i2"), *j2 = iv(ctx, "j2");
    const tir_expr *crow = add(ctx, add(ctx, muli(ctx, V(by), 64), muli(ctx, V(ty), 4)), V(i2));
    const tir_expr *ccol = add(ctx, add(ctx, muli(ctx, V(bx), 64), muli(ctx, V(tx), 4)), V(j2));
    const tir_stmt *out = loop(ctx, i2, 4, TIR_FOR_UNROLLED,
                               loop(ctx, j2, 4, TIR_FOR_UNROLLED,
                                    st(ctx, C, add(ctx, muli(ctx, crow, N), ccol),
                                       ld(ctx, acc, add(ctx, muli(ctx, V(i2), 4), V(j2))))));

    const tir_stmt *all[] = {init, kloop, out};
    const tir_stmt *s = tir_allocate_new(
        ctx, acc, tir_allocate_new(ctx, As, tir_allocate_new(ctx, Bs, seq(ctx, 3, all))));
    s = bind(ctx, tx, I(ctx, 16), "threadIdx.x", s);
    s = bind(ctx, ty, I(ctx, 16), "threadIdx.y", s);
    s = bind(ctx, bx, I(ctx, N / 64), "blockIdx.x", s);
    s = bind(ctx, by, I(ctx, M / 64), "blockIdx.y", s);
    const tir_buffer *bufs[] = {A, B, C};
    return func(ctx, "matmul_tiled", 3, bufs, 0, NULL, s);
}

const tir_prim_func *ck_vec4_scale(tir_ctx *ctx, int64_t n, int offset, int align) {
    int64_t size = offset ? n + 4 : n;
    const tir_buffer *A = gbuf_e(ctx, "A", TIR_F32, I(ctx, size), align);
    const tir_buffer *B = gbuf_e(ctx, "B", TIR_F32, I(ctx, size), align);
    const tir_var *bx = iv(ctx, "bx"), *tx = iv(ctx, "tx");
    const tir_expr *base =
        add(ctx, muli(ctx, add(ctx, muli(ctx, V(bx), 256), V(tx)), 4), I(ctx, offset));
    const tir_expr *r = tir_ramp_new(ctx, base, I(ctx, 1), 4);
    const tir_expr *two = tir_broadcast_new(ctx, tir_f32(ctx, 2.0), 4);
    const tir_stmt *body = st(ctx, B, r, tir_mul(ctx, ld(ctx, A, r), two));
    const tir_buffer *bufs[] = {A, B};
    return func(ctx, offset ? "vec4_scale_misaligned" : "vec4_scale", 2, bufs, 0, NULL,
                grid1d(ctx, bx, tx, n / 1024, 256, body));
}

const tir_prim_func *ck_cp_async(tir_ctx *ctx, int64_t n, int bytes) {
    const tir_buffer *A = gbuf(ctx, "A", TIR_F32, n), *B = gbuf(ctx, "B", TIR_F32, n);
    const tir_buffer *S = abuf(ctx, "S", TIR_F32, 1024, TIR_SCOPE_SHARED);
    const tir_var *bx = iv(ctx, "bx"), *tx = iv(ctx, "tx"), *c = iv(ctx, "c"), *j = iv(ctx, "j");
    int per = bytes / 4; /* floats per copy */
    /* copy c of this thread: 4*tx + c*per */
    const tir_expr *off = add(ctx, muli(ctx, V(tx), 4), muli(ctx, V(c), per));
    const tir_expr *args[3] = {
        tir_call_new(ctx, TIR_HANDLE, TIR_INTRIN_ADDRESS_OF, 1,
                     (const tir_expr *[]){ld(ctx, S, off)}),
        tir_call_new(ctx, TIR_HANDLE, TIR_INTRIN_ADDRESS_OF, 1,
                     (const tir_expr *[]){ld(ctx, A, add(ctx, muli(ctx, V(bx), 1024), off))}),
        I(ctx, bytes)};
    const tir_stmt *copy =
        loop(ctx, c, 4 / per, TIR_FOR_UNROLLED,
             tir_evaluate_new(ctx, tir_call_new(ctx, TIR_VOID, TIR_INTRIN_CP_ASYNC, 3, args)));
    const tir_expr *zero = I(ctx, 0);
    const tir_expr *rd = add(ctx, muli(ctx, tir_sub(ctx, I(ctx, 255), V(tx)), 4), V(j));
    const tir_expr *wr = add(ctx, add(ctx, muli(ctx, V(bx), 1024), muli(ctx, V(tx), 4)), V(j));
    const tir_stmt *body[] = {
        copy,
        tir_evaluate_new(ctx, tir_call_new(ctx, TIR_VOID, TIR_INTRIN_CP_ASYNC_COMMIT, 0, NULL)),
        tir_evaluate_new(ctx, tir_call_new(ctx, TIR_VOID, TIR_INTRIN_CP_ASYNC_WAIT, 1, &zero)),
        tir_evaluate_new(ctx, tir_call_new(ctx, TIR_VOID, TIR_INTRIN_SYNCTHREADS, 0, NULL)),
        loop(ctx, j, 4, TIR_FOR_UNROLLED, st(ctx, B, wr, ld(ctx, S, rd))),
    };
    const tir_stmt *s = tir_allocate_new(ctx, S, seq(ctx, 5, body));
    const tir_buffer *bufs[] = {A, B};
    char name[32];
    snprintf(name, sizeof name, "cp_async_%d", bytes);
    return func(ctx, name, 2, bufs, 0, NULL, grid1d(ctx, bx, tx, n / 1024, 256, s));
}

const tir_prim_func *ck_half(tir_ctx *ctx, int64_t n) {
    const tir_buffer *X = gbuf(ctx, "X", TIR_F16, n), *Z = gbuf(ctx, "Z", TIR_BF16, n),
                     *Y = gbuf(ctx, "Y", TIR_F16, n), *W = gbuf(ctx, "W", TIR_BF16, n),
                     *F = gbuf(ctx, "F", TIR_F32, n);
    const tir_var *bx = iv(ctx, "bx"), *tx = iv(ctx, "tx");
    const tir_expr *i = add(ctx, muli(ctx, V(bx), 256), V(tx));
    const tir_expr *x = ld(ctx, X, i), *z = ld(ctx, Z, i);
    const tir_stmt *body[] = {
        st(ctx, Y, i, tir_add(ctx, tir_mul(ctx, x, x), x)),
        st(ctx, W, i, tir_sub(ctx, tir_mul(ctx, z, z), z)),
        st(ctx, F, i, tir_add(ctx, tir_cast_new(ctx, TIR_F32, x), tir_cast_new(ctx, TIR_F32, z))),
    };
    const tir_buffer *bufs[] = {X, Z, Y, W, F};
    return func(ctx, "half_ops", 5, bufs, 0, NULL,
                grid1d(ctx, bx, tx, n / 256, 256, seq(ctx, 3, body)));
}

const tir_prim_func *ck_floor(tir_ctx *ctx, int64_t n) {
    const tir_buffer *A = gbuf(ctx, "A", TIR_I32, n), *D = gbuf(ctx, "D", TIR_I32, n);
    const tir_buffer *o[6];
    static const char *const names[6] = {"Q1", "R1", "Q2", "R2", "Q3", "R3"};
    for (int k = 0; k < 6; k++) o[k] = gbuf(ctx, names[k], TIR_I32, n);
    const tir_var *bx = iv(ctx, "bx"), *tx = iv(ctx, "tx");
    const tir_expr *i = add(ctx, muli(ctx, V(bx), 256), V(tx));
    const tir_expr *a = ld(ctx, A, i), *d = ld(ctx, D, i);
    const tir_stmt *body[] = {
        st(ctx, o[0], i, tir_floordiv(ctx, a, d)),
        st(ctx, o[1], i, tir_floormod(ctx, a, d)),
        st(ctx, o[2], i, tir_floordiv(ctx, a, I(ctx, 8))),
        st(ctx, o[3], i, tir_floormod(ctx, a, I(ctx, 8))),
        st(ctx, o[4], i, tir_floordiv(ctx, a, I(ctx, 7))),
        st(ctx, o[5], i, tir_floormod(ctx, a, I(ctx, 7))),
    };
    const tir_buffer *bufs[] = {A, D, o[0], o[1], o[2], o[3], o[4], o[5]};
    return func(ctx, "floor_ops", 8, bufs, 0, NULL,
                grid1d(ctx, bx, tx, n / 256, 256, seq(ctx, 6, body)));
}

const tir_prim_func *ck_math(tir_ctx *ctx, int64_t n, tir_dtype t) {
    const tir_buffer *X = gbuf(ctx, "X", t, n), *Y = gbuf(ctx, "Y", t, n);
    static const char *const names[6] = {"E", "L", "T", "S", "P", "Q"};
    static const tir_intrin ops[6] = {TIR_INTRIN_EXP,     TIR_INTRIN_LOG, TIR_INTRIN_TANH,
                                      TIR_INTRIN_SIGMOID, TIR_INTRIN_POW, TIR_INTRIN_SQRT};
    const tir_buffer *o[6];
    for (int k = 0; k < 6; k++) o[k] = gbuf(ctx, names[k], t, n);
    const tir_var *bx = iv(ctx, "bx"), *tx = iv(ctx, "tx");
    const tir_expr *i = add(ctx, muli(ctx, V(bx), 256), V(tx));
    const tir_expr *args[2] = {ld(ctx, X, i), ld(ctx, Y, i)};
    const tir_stmt *body[6];
    for (int k = 0; k < 6; k++)
        body[k] =
            st(ctx, o[k], i, tir_call_new(ctx, t, ops[k], ops[k] == TIR_INTRIN_POW ? 2 : 1, args));
    const tir_buffer *bufs[] = {X, Y, o[0], o[1], o[2], o[3], o[4], o[5]};
    return func(ctx, t.bits == 64 ? "math_f64" : "math_f32", 8, bufs, 0, NULL,
                grid1d(ctx, bx, tx, n / 256, 256, seq(ctx, 6, body)));
}

/* ---------------------------------------------------------- fixed sizes */

static const tir_prim_func *e_vector_add(tir_ctx *c) { return ck_vector_add(c, 1 << 20); }
static const tir_prim_func *e_matmul_naive(tir_ctx *c) {
    return ck_matmul_naive(c, 1024, 1024, 1024);
}
static const tir_prim_func *e_matmul_tiled(tir_ctx *c) {
    return ck_matmul_tiled(c, 1024, 1024, 1024);
}
static const tir_prim_func *e_vec4(tir_ctx *c) { return ck_vec4_scale(c, 1 << 20, 0, 64); }
static const tir_prim_func *e_vec4_mis(tir_ctx *c) { return ck_vec4_scale(c, 1 << 20, 1, 64); }
static const tir_prim_func *e_cp16(tir_ctx *c) { return ck_cp_async(c, 1 << 20, 16); }
static const tir_prim_func *e_cp4(tir_ctx *c) { return ck_cp_async(c, 1 << 20, 4); }
static const tir_prim_func *e_half(tir_ctx *c) { return ck_half(c, 1 << 20); }
static const tir_prim_func *e_floor(tir_ctx *c) { return ck_floor(c, 1 << 16); }
static const tir_prim_func *e_math32(tir_ctx *c) { return ck_math(c, 1 << 16, TIR_F32); }
static const tir_prim_func *e_math64(tir_ctx *c) { return ck_math(c, 1 << 16, TIR_F64); }

const ck_entry ck_entries[] = {
    {"vector_add", "C[i] = A[i] + B[i]; float32 A, B, C of 1048576 elements; grid 4096, block 256.",
     e_vector_add},
    {"vector_add_sym",
     "C[i] = A[i] + B[i] for i < n; float32 A, B, C of n elements, int32 n; grid ceil(n/256), "
     "block 256.",
     ck_vector_add_sym},
    {"matmul_naive",
     "C = A B, row-major float32 1024x1024 matrices, one thread per output; grid (64, 64), block "
     "(16, 16).",
     e_matmul_naive},
    {"matmul_tiled",
     "C = A B, row-major float32 1024x1024 matrices, 64x64 tiles, shared memory, 4x4 per "
     "thread; grid (16, 16), block (16, 16).",
     e_matmul_tiled},
    {"vec4_scale",
     "B[i] = 2 A[i] with float4 accesses; float32 A, B of 1048576 elements; grid "
     "1024, block 256.",
     e_vec4},
    {"vec4_scale_misaligned",
     "B[i] = 2 A[i] for 1 <= i <= 1048576 (float4 ramps starting at 4t+1, so scalar accesses); "
     "float32 A, B of 1048580 elements; grid 1024, block 256.",
     e_vec4_mis},
    {"cp_async_16",
     "B[b*1024 + 4t + j] = A[b*1024 + 4(255-t) + j] via 16-byte cp.async into shared memory; "
     "float32 A, B of 1048576 elements; grid 1024, block 256.",
     e_cp16},
    {"cp_async_4", "as cp_async_16 with 4-byte cp.async copies.", e_cp4},
    {"half_ops",
     "Y = X*X + X (float16), W = Z*Z - Z (bfloat16), F = float(X) + float(Z) (float32); X "
     "float16, Z bfloat16, 1048576 elements each; grid 4096, block 256.",
     e_half},
    {"floor_ops",
     "Q1 = floordiv(A, D), R1 = floormod(A, D), Q2/R2 by 8, Q3/R3 by 7; int32 A, D and outputs "
     "of 65536 elements; grid 256, block 256.",
     e_floor},
    {"math_f32",
     "E = exp(X), L = log(X), T = tanh(X), S = sigmoid(X), P = pow(X, Y), Q = sqrt(X); float32, "
     "65536 elements; grid 256, block 256.",
     e_math32},
    {"math_f64", "as math_f32 in float64.", e_math64},
};
const int ck_nentries = (int)(sizeof ck_entries / sizeof ck_entries[0]);
