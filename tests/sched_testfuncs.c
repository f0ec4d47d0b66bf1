/* sched_testfuncs.c: the hand-built functions of sched_testfuncs.h. */
#include "sched_testfuncs.h"

static const tir_buffer *buf(tir_ctx *ctx, const char *name, int ndim, const int64_t *shape) {
    return tir_buffer_simple(ctx, name, TIR_F32, ndim, shape, TIR_SCOPE_GLOBAL);
}

static const tir_expr *v(const tir_var *x) { return &x->base; }

/* A block with spatial iters `iv` over [0, dom[i]), bound to `bind`,
 * reading whole `reads`, writing whole `write`. */
static const tir_stmt *block(tir_ctx *ctx, const char *name, int n, const tir_var *const *iv,
                             const int64_t *dom, const tir_expr *const *bind, int nreads,
                             const tir_buffer *const *reads, const tir_buffer *write,
                             const tir_stmt *body) {
    tir_iter_var iters[4];
    for (int i = 0; i < n; i++)
        iters[i] = (tir_iter_var){iv[i],
                                  {tir_int(ctx, iv[i]->base.dtype, 0),
                                   tir_int(ctx, iv[i]->base.dtype, dom[i])},
                                  TIR_ITER_SPATIAL};
    tir_buffer_region rr[4], wr[1];
    for (int i = 0; i < nreads; i++) rr[i] = tir_region_full(ctx, reads[i]);
    wr[0] = tir_region_full(ctx, write);
    tir_block_desc d = {.name = name, .niters = n, .iters = iters, .nreads = nreads,
                        .reads = rr, .nwrites = 1, .writes = wr, .body = body};
    return tir_block_realize_new(ctx, n, bind, NULL, tir_block_new(ctx, &d));
}

static const tir_prim_func *func(tir_ctx *ctx, int nbufs, const tir_buffer *const *bufs,
                                 const tir_stmt *body) {
    const tir_var *params[4];
    for (int i = 0; i < nbufs; i++) params[i] = tir_var_new(ctx, bufs[i]->name, TIR_HANDLE);
    tir_block_desc root = {.name = "root", .body = body};
    const tir_stmt *rb = tir_block_realize_new(ctx, 0, NULL, NULL, tir_block_new(ctx, &root));
    return tir_prim_func_new(ctx, "main", nbufs, params, bufs, rb, 0, NULL);
}

static const tir_stmt *loop(tir_ctx *ctx, const tir_var *i, int64_t min, int64_t ext,
                            const tir_stmt *body) {
    return tir_for_new(ctx, i, tir_int(ctx, i->base.dtype, min), tir_int(ctx, i->base.dtype, ext),
                       TIR_FOR_SERIAL, NULL, 0, NULL, body);
}

typedef struct {
    const tir_var *i, *j, *vi, *vj;
    const tir_buffer *A, *B;
} nest;

static nest mk(tir_ctx *ctx, const int64_t *shape) {
    nest n;
    n.i = tir_var_new(ctx, "i", TIR_I32);
    n.j = tir_var_new(ctx, "j", TIR_I32);
    n.vi = tir_var_new(ctx, "vi", TIR_I32);
    n.vj = tir_var_new(ctx, "vj", TIR_I32);
    n.A = buf(ctx, "A", 2, shape);
    n.B = buf(ctx, "B", 2, shape);
    return n;
}

/* B[vi, vj] = A[vi, vj] + 1 as block "B" bound to (bi, bj). */
static const tir_stmt *copy_block(tir_ctx *ctx, const nest *n, const int64_t *dom,
                                  const tir_expr *bi, const tir_expr *bj) {
    const tir_expr *idx[2] = {v(n->vi), v(n->vj)};
    const tir_stmt *body =
        tir_store(ctx, n->B, tir_add(ctx, tir_load(ctx, n->A, 2, idx), tir_f32(ctx, 1)), 2, idx);
    const tir_var *iv[2] = {n->vi, n->vj};
    const tir_expr *bind[2] = {bi, bj};
    const tir_buffer *reads[1] = {n->A};
    return block(ctx, "B", 2, iv, dom, bind, 1, reads, n->B, body);
}

static const tir_prim_func *func2(tir_ctx *ctx, const nest *n, const tir_stmt *body) {
    const tir_buffer *bufs[2] = {n->A, n->B};
    return func(ctx, 2, bufs, body);
}

const tir_prim_func *tf_offset_loops(tir_ctx *ctx) {
    int64_t sh[2] = {6, 7};
    nest n = mk(ctx, sh);
    const tir_stmt *b = copy_block(ctx, &n, sh, v(n.i), v(n.j));
    return func2(ctx, &n, loop(ctx, n.i, 2, 4, loop(ctx, n.j, 1, 6, b)));
}

const tir_prim_func *tf_nonaffine(tir_ctx *ctx) {
    int64_t sh[2] = {16, 4};
    nest n = mk(ctx, sh);
    const tir_stmt *b = copy_block(ctx, &n, sh, tir_mul(ctx, v(n.i), v(n.i)), v(n.j));
    return func2(ctx, &n, loop(ctx, n.i, 0, 4, loop(ctx, n.j, 0, 4, b)));
}

const tir_prim_func *tf_opaque_stmt(tir_ctx *ctx) {
    int64_t sh[2] = {4, 6};
    nest n = mk(ctx, sh);
    const tir_buffer *C = buf(ctx, "C", 2, sh);
    const tir_expr *ci[2] = {v(n.i), v(n.j)};
    const tir_stmt *seq[2] = {tir_store(ctx, C, tir_f32(ctx, 0), 2, ci),
                              copy_block(ctx, &n, sh, v(n.i), v(n.j))};
    const tir_buffer *bufs[3] = {n.A, n.B, C};
    return func(ctx, 3, bufs,
                loop(ctx, n.i, 0, 4, loop(ctx, n.j, 0, 6, tir_seq_new(ctx, 2, seq))));
}

const tir_prim_func *tf_opaque_in_block(tir_ctx *ctx) {
    int64_t sh[2] = {4, 6};
    nest n = mk(ctx, sh);
    const tir_expr *ai[2] = {v(n.i), v(n.vj)}, *bi[2] = {v(n.vi), v(n.vj)};
    const tir_stmt *body = tir_store(ctx, n.B, tir_load(ctx, n.A, 2, ai), 2, bi);
    const tir_var *iv[2] = {n.vi, n.vj};
    const tir_expr *bind[2] = {v(n.i), v(n.j)};
    const tir_buffer *reads[1] = {n.A};
    const tir_stmt *b = block(ctx, "B", 2, iv, sh, bind, 1, reads, n.B, body);
    return func2(ctx, &n, loop(ctx, n.i, 0, 4, loop(ctx, n.j, 0, 6, b)));
}

const tir_prim_func *tf_incomplete(tir_ctx *ctx) {
    int64_t sh[2] = {4, 6};
    nest n = mk(ctx, sh);
    const tir_expr *idx[2] = {v(n.vi), v(n.vj)};
    const tir_stmt *body = tir_store(
        ctx, n.B, tir_add(ctx, tir_load(ctx, n.B, 2, idx), tir_load(ctx, n.A, 2, idx)), 2, idx);
    const tir_var *iv[2] = {n.vi, n.vj};
    const tir_expr *bind[2] = {v(n.i), v(n.j)};
    const tir_buffer *reads[2] = {n.A, n.B};
    const tir_stmt *b = block(ctx, "B", 2, iv, sh, bind, 2, reads, n.B, body);
    return func2(ctx, &n, loop(ctx, n.i, 0, 4, loop(ctx, n.j, 0, 6, b)));
}

const tir_prim_func *tf_mixed_dtypes(tir_ctx *ctx) {
    int64_t sh[2] = {4, 6};
    nest n = mk(ctx, sh);
    n.j = tir_var_new(ctx, "j", TIR_I64);
    n.vj = tir_var_new(ctx, "vj", TIR_I64);
    const tir_stmt *b = copy_block(ctx, &n, sh, v(n.i), v(n.j));
    return func2(ctx, &n, loop(ctx, n.i, 0, 4, loop(ctx, n.j, 0, 6, b)));
}

const tir_prim_func *tf_triangular(tir_ctx *ctx) {
    int64_t sh[2] = {8, 8};
    nest n = mk(ctx, sh);
    const tir_stmt *b = copy_block(ctx, &n, sh, v(n.i), v(n.j));
    const tir_stmt *inner = tir_for_new(ctx, n.j, tir_i32(ctx, 0),
                                        tir_add(ctx, v(n.i), tir_i32(ctx, 1)), TIR_FOR_SERIAL,
                                        NULL, 0, NULL, b);
    return func2(ctx, &n, loop(ctx, n.i, 0, 8, inner));
}

const tir_prim_func *tf_branching(tir_ctx *ctx) {
    int64_t sh3[3] = {4, 5, 6}, sh2[2] = {4, 5};
    const tir_buffer *A = buf(ctx, "A", 3, sh3), *B = buf(ctx, "B", 3, sh3);
    const tir_buffer *C = buf(ctx, "C", 2, sh2);
    const tir_var *i = tir_var_new(ctx, "i", TIR_I32), *j = tir_var_new(ctx, "j", TIR_I32),
                  *k = tir_var_new(ctx, "k", TIR_I32);
    const tir_var *bv[3] = {tir_var_new(ctx, "vi", TIR_I32), tir_var_new(ctx, "vj", TIR_I32),
                            tir_var_new(ctx, "vk", TIR_I32)};
    const tir_var *cv[2] = {tir_var_new(ctx, "vi", TIR_I32), tir_var_new(ctx, "vj", TIR_I32)};
    const tir_expr *bbind[3] = {v(i), v(j), v(k)}, *cbind[2] = {v(i), v(j)};
    const tir_expr *bidx[3] = {v(bv[0]), v(bv[1]), v(bv[2])};
    const tir_expr *cidx[2] = {v(cv[0]), v(cv[1])};
    const tir_expr *aidx[3] = {v(cv[0]), v(cv[1]), tir_i32(ctx, 0)};
    const tir_buffer *reads[1] = {A};
    const tir_stmt *bb = block(ctx, "B", 3, bv, sh3, bbind, 1, reads, B,
                               tir_store(ctx, B, tir_load(ctx, A, 3, bidx), 3, bidx));
    const tir_stmt *cb = block(ctx, "C", 2, cv, sh2, cbind, 1, reads, C,
                               tir_store(ctx, C, tir_load(ctx, A, 3, aidx), 2, cidx));
    const tir_stmt *seq[2] = {loop(ctx, k, 0, 6, bb), cb};
    const tir_buffer *bufs[3] = {A, B, C};
    return func(ctx, 3, bufs, loop(ctx, i, 0, 4, loop(ctx, j, 0, 5, tir_seq_new(ctx, 2, seq))));
}

const tir_prim_func *tf_duplicate_names(tir_ctx *ctx) {
    int64_t sh[2] = {4, 6};
    nest n = mk(ctx, sh);
    nest m = mk(ctx, sh);
    m.A = n.A;
    m.B = buf(ctx, "C", 2, sh);
    const tir_stmt *loops[2] = {
        loop(ctx, n.i, 0, 4, loop(ctx, n.j, 0, 6, copy_block(ctx, &n, sh, v(n.i), v(n.j)))),
        loop(ctx, m.i, 0, 4, loop(ctx, m.j, 0, 6, copy_block(ctx, &m, sh, v(m.i), v(m.j))))};
    const tir_buffer *bufs[3] = {n.A, n.B, m.B};
    return func(ctx, 3, bufs, tir_seq_new(ctx, 2, loops));
}
