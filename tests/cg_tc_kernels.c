/* cg_tc_kernels.c: the lowered tensor-core kernels of cg_tc_kernels.h.
 *
 * Register v of a fragment tile sits at a row and column that are affine
 * in g = lane / 4 and t = lane % 4 (ir.h); the coefficients are read off
 * tir_frag_row/col (and checked for every lane) rather than written out
 * again here, so these kernels follow the one copy of the layouts.
 */
#include "cg_tc_kernels.h"

#include <assert.h>
#include <stdint.h>
#include <string.h>

static const tir_expr *I(tir_ctx *ctx, int64_t v) { return tir_i32(ctx, v); }
/* a + b, without adding a constant 0 */
static const tir_expr *add(tir_ctx *ctx, const tir_expr *a, const tir_expr *b) {
    int64_t k;
    if (tir_expr_const_int(b, &k) && k == 0) return a;
    if (tir_expr_const_int(a, &k) && k == 0) return b;
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
static const tir_expr *addr(tir_ctx *ctx, const tir_buffer *b, const tir_expr *i) {
    const tir_expr *l = ld(ctx, b, i);
    return tir_call_new(ctx, TIR_HANDLE, TIR_INTRIN_ADDRESS_OF, 1, &l);
}
static const tir_stmt *eval(tir_ctx *ctx, tir_intrin op, int n, const tir_expr *const *args) {
    return tir_evaluate_new(ctx, tir_call_new(ctx, TIR_VOID, op, n, args));
}
static const tir_expr *lane(tir_ctx *ctx) {
    return tir_call_new(ctx, TIR_I32, TIR_INTRIN_LANE_ID, 0, NULL);
}

/* a * x, simplified as lowering's simplifier would: 0, x or a * x. */
static const tir_expr *term(tir_ctx *ctx, const tir_expr *x, int a) {
    return a == 0 ? I(ctx, 0) : a == 1 ? x : muli(ctx, x, a);
}

/* Row (col false: column) of register v of layout l as an expression of
 * lane_id(): a*g + b*t + c. */
static const tir_expr *frag_pos(tir_ctx *ctx, const tir_frag_layout *l, int v, bool row) {
    int (*f)(const tir_frag_layout *, int, int) = row ? tir_frag_row : tir_frag_col;
    int c = f(l, 0, v), a = f(l, 4, v) - c, b = f(l, 1, v) - c;
    for (int ln = 0; ln < 32; ln++) assert(f(l, ln, v) == a * (ln / 4) + b * (ln % 4) + c);
    const tir_expr *g = tir_floordiv(ctx, lane(ctx), I(ctx, 4));
    const tir_expr *t = tir_floormod(ctx, lane(ctx), I(ctx, 4));
    return add(ctx, add(ctx, term(ctx, g, a), term(ctx, t, b)), I(ctx, c));
}

typedef struct tcg {
    tir_ctx *ctx;
    const tcg_opts *o;
    int64_t N, kt; /* k tile */
    tir_frag_layout la, lb, lc;
    const tir_buffer *A, *B, *C, *La, *Lb, *Lc, *As, *Bs;
    const tir_var *ko;
} tcg;

/* Each lane's registers of the tiles of L from global G: register v of
 * tile nt at G[(r0 + row) * ld + c0 + 8 nt + col], as lower_fragments
 * expands frag_load / frag_store (store: G = L's values instead). */
static const tir_stmt *lane_copy(tcg *k, const tir_buffer *L, const tir_frag_layout *l,
                                 const tir_buffer *G, const tir_expr *r0, const tir_expr *c0,
                                 int64_t ldg, int ntiles, bool store) {
    tir_ctx *ctx = k->ctx;
    const tir_stmt *s[64];
    int n = 0;
    for (int nt = 0; nt < ntiles; nt++)
        for (int v = 0; v < l->regs; v++) {
            const tir_expr *row = add(ctx, r0, frag_pos(ctx, l, v, true));
            const tir_expr *col = add(ctx, add(ctx, c0, I(ctx, 8 * nt)), frag_pos(ctx, l, v, false));
            const tir_expr *gi = add(ctx, muli(ctx, row, ldg), col);
            const tir_expr *li = I(ctx, nt * l->regs + v);
            s[n++] = store ? st(ctx, G, gi, ld(ctx, L, li)) : st(ctx, L, li, ld(ctx, G, gi));
        }
    return tir_seq_new(ctx, n, s);
}

/* ldmatrix(trans, num, address_of(L[o]), address_of(S[i])). */
static const tir_stmt *ldm(tcg *k, int trans, int num, const tir_buffer *L, int64_t o,
                           const tir_buffer *S, const tir_expr *i) {
    tir_ctx *ctx = k->ctx;
    const tir_expr *args[4] = {I(ctx, trans), I(ctx, num), addr(ctx, L, I(ctx, o)), addr(ctx, S, i)};
    return eval(ctx, TIR_INTRIN_LDMATRIX, 4, args);
}

/* The A and B fragments of k step ko from shared memory: lane l gives row
 * l % 8 of matrix l / 8 (docs/lowered-ir.md). */
static const tir_stmt *shared_frags(tcg *k) {
    tir_ctx *ctx = k->ctx;
    const tir_expr *kk = muli(ctx, &k->ko->base, 16);
    const tir_expr *l16 = tir_floormod(ctx, lane(ctx), I(ctx, 16));
    const tir_expr *half = muli(ctx, tir_floordiv(ctx, lane(ctx), I(ctx, 16)), 8);
    const tir_stmt *s[6];
    int n = 0;
    if (k->o->a_x1) {
        /* matrix i: rows 8 (i % 2) .., columns 8 (i / 2) .. of the 16x16 tile */
        for (int i = 0; i < 4; i++) {
            const tir_expr *row = add(ctx, tir_floormod(ctx, lane(ctx), I(ctx, 8)), I(ctx, 8 * (i % 2)));
            const tir_expr *col = add(ctx, kk, I(ctx, 8 * (i / 2)));
            s[n++] = ldm(k, 0, 1, k->La, 2 * i, k->As, add(ctx, muli(ctx, row, k->o->K), col));
        }
    } else {
        s[n++] = ldm(k, 0, 4, k->La, 0, k->As, add(ctx, muli(ctx, l16, k->o->K), add(ctx, kk, half)));
    }
    const tir_expr *brow = muli(ctx, add(ctx, kk, l16), k->N);
    if (k->o->ntiles == 1)
        s[n++] = ldm(k, 1, 2, k->Lb, 0, k->Bs, brow);
    else
        s[n++] = ldm(k, 1, 4, k->Lb, 0, k->Bs, add(ctx, brow, half));
    return tir_seq_new(ctx, n, s);
}

/* S[i * 32 + tx] = G[i * 32 + tx] for the whole buffer. */
static const tir_stmt *stage(tcg *k, const tir_buffer *S, const tir_buffer *G, const tir_var *tx,
                             const char *name) {
    tir_ctx *ctx = k->ctx;
    const tir_var *i = tir_var_new(ctx, name, TIR_I32);
    const tir_expr *e = add(ctx, muli(ctx, &i->base, 32), &tx->base);
    return tir_for_new(ctx, i, I(ctx, 0), I(ctx, tir_buffer_const_size(S) / 32), TIR_FOR_SERIAL,
                       NULL, 0, NULL, st(ctx, S, e, ld(ctx, G, e)));
}

static const tir_stmt *k_loop(tcg *k) {
    tir_ctx *ctx = k->ctx;
    const tir_stmt *s[4];
    int n = 0;
    if (k->o->shared) {
        s[n++] = shared_frags(k);
    } else {
        const tir_expr *kk = muli(ctx, &k->ko->base, k->kt);
        s[n++] = lane_copy(k, k->La, &k->la, k->A, I(ctx, 0), kk, k->o->K, 1, false);
        s[n++] = lane_copy(k, k->Lb, &k->lb, k->B, kk, I(ctx, 0), k->N, k->o->ntiles, false);
    }
    const tir_stmt *mma[2];
    for (int nt = 0; nt < k->o->ntiles; nt++) {
        const tir_expr *args[3] = {addr(ctx, k->Lc, I(ctx, 4 * nt)), addr(ctx, k->La, I(ctx, 0)),
                                   addr(ctx, k->Lb, I(ctx, nt * k->lb.regs))};
        mma[nt] = eval(ctx, TIR_INTRIN_MMA_SYNC, 3, args);
    }
    s[n++] = tir_seq_new(ctx, k->o->ntiles, mma);
    return tir_for_new(ctx, k->ko, I(ctx, 0), I(ctx, k->o->K / k->kt),
                       k->o->unroll_k ? TIR_FOR_UNROLLED : TIR_FOR_SERIAL, NULL, 0, NULL,
                       tir_seq_new(ctx, n, s));
}

static const tir_buffer *buf(tir_ctx *ctx, const char *name, tir_dtype t, int64_t n, tir_scope s) {
    return tir_buffer_simple(ctx, name, t, 1, &n, s);
}

const tir_prim_func *tcg_mma(tir_ctx *ctx, const tcg_opts *o) {
    tcg k = {.ctx = ctx, .o = o, .N = 8 * o->ntiles};
    bool ok = tir_frag_layout_of(TIR_SCOPE_FRAG_A, o->in, &k.la) &&
              tir_frag_layout_of(TIR_SCOPE_FRAG_B, o->in, &k.lb) &&
              tir_frag_layout_of(TIR_SCOPE_FRAG_ACC, TIR_F32, &k.lc);
    assert(ok && (o->ntiles == 1 || o->ntiles == 2));
    (void)ok;
    k.kt = k.la.tile_cols;
    assert(o->K % k.kt == 0 && (!o->shared || k.kt == 16));
    k.A = buf(ctx, "A", o->in, 16 * o->K, TIR_SCOPE_GLOBAL);
    k.B = buf(ctx, "B", o->in, o->K * k.N, TIR_SCOPE_GLOBAL);
    k.C = buf(ctx, "C", TIR_F32, 16 * k.N, TIR_SCOPE_GLOBAL);
    k.La = buf(ctx, "La", o->in, k.la.regs, TIR_SCOPE_LOCAL);
    k.Lb = buf(ctx, "Lb", o->in, k.lb.regs * o->ntiles, TIR_SCOPE_LOCAL);
    k.Lc = buf(ctx, "Lc", TIR_F32, k.lc.regs * o->ntiles, TIR_SCOPE_LOCAL);
    k.ko = tir_var_new(ctx, "ko", TIR_I32);
    const tir_var *tx = tir_var_new(ctx, "tx", TIR_I32);
    const tir_stmt *s[5];
    int n = 0;
    if (o->shared) {
        k.As = buf(ctx, "As", o->in, 16 * o->K, TIR_SCOPE_SHARED);
        k.Bs = buf(ctx, "Bs", o->in, o->K * k.N, TIR_SCOPE_SHARED);
        s[n++] = stage(&k, k.As, k.A, tx, "ia");
        s[n++] = stage(&k, k.Bs, k.B, tx, "ib");
        s[n++] = tir_evaluate_new(ctx, tir_call_new(ctx, TIR_VOID, TIR_INTRIN_SYNCTHREADS, 0, NULL));
    }
    s[n++] = lane_copy(&k, k.Lc, &k.lc, k.C, I(ctx, 0), I(ctx, 0), k.N, o->ntiles, false);
    s[n++] = k_loop(&k);
    const tir_stmt *body = tir_seq_new(ctx, n, s);
    const tir_stmt *out = lane_copy(&k, k.Lc, &k.lc, k.C, I(ctx, 0), I(ctx, 0), k.N, o->ntiles, true);
    const tir_stmt *both[2] = {body, out};
    body = tir_seq_new(ctx, 2, both);
    const tir_buffer *allocs[] = {k.La, k.Lb, k.Lc, k.As, k.Bs};
    for (int i = o->shared ? 4 : 2; i >= 0; i--) body = tir_allocate_new(ctx, allocs[i], body);
    body = tir_for_new(ctx, tx, I(ctx, 0), I(ctx, 32), TIR_FOR_THREAD_BINDING, "threadIdx.x", 0,
                       NULL, body);
    const tir_buffer *params[3] = {k.A, k.B, k.C};
    const tir_var *pv[3];
    for (int i = 0; i < 3; i++) pv[i] = tir_var_new(ctx, params[i]->name, TIR_HANDLE);
    return tir_prim_func_new(ctx, "tc_mma", 3, pv, params, body, 0, NULL);
}

float tcg_tf32(float x) {
    uint32_t u;
    memcpy(&u, &x, 4);
    /* cg_tf32_round_ints, step by step: finite values get half an ulp of
     * TF32 less one plus the lowest kept bit, then lose the 13 low bits. */
    if ((u & 0x7f800000u) != 0x7f800000u) u = (u + 0xfffu + ((u >> 13) & 1u)) & 0xffffe000u;
    memcpy(&x, &u, 4);
    return x;
}

void tcg_reference(const tcg_opts *o, const float *A, const float *B, float *C) {
    int64_t N = 8 * o->ntiles;
    bool tf32 = tir_dtype_eq(o->in, TIR_F32);
    for (int64_t i = 0; i < 16; i++)
        for (int64_t j = 0; j < N; j++) {
            double s = C[i * N + j];
            for (int64_t kk = 0; kk < o->K; kk++) {
                float a = A[i * o->K + kk], b = B[kk * N + j];
                if (tf32) a = tcg_tf32(a), b = tcg_tf32(b);
                s += (double)a * b;
            }
            C[i * N + j] = (float)s;
        }
}
