/* atomic_reduce.c: the atomic option of a split-K cross-block reduction,
 * for tir_lower_kernels (split_kernels.c).
 *
 * After rfactor, block C (the write-back) sums the partial results
 * C_rf[.., s, ..] over the split s: C[i, j] = C[i, j] + C_rf[s, i, j], a
 * second kernel since no barrier orders one thread block's C_rf stores
 * before another's loads.  With the block annotated atomic_reduction
 * (TIR_ANN_ATOMIC_REDUCTION, non-zero) the write-back is not lowered at
 * all: every store of a partial result C_rf[s, i, j] = v (made once per
 * element, after the thread's slice of k) becomes
 * atomic_add(address_of(C[i, j]), v), and C is zeroed by a kernel of its
 * own before them.  C_rf disappears (no workspace), and the kernels are
 * [zero C, the rest].  The sum over s then happens in whatever order the
 * blocks' adds arrive: the result is not bitwise reproducible.
 *
 * What is refused, each with the block and the function's IR: a block
 * that is not a reduction, a combiner other than +, a reduction that does
 * not sum a global buffer of the root block (C_rf) into a parameter with
 * a zero init, a dtype other than float32 (the GPU's atomic float add),
 * a write-back sharing its top-level loop nest with other blocks (it is
 * not lowered: leave it unscheduled), C_rf read anywhere else (a partial
 * sum accumulated in global memory would be added once per step), and
 * more than one annotated block.
 */
#include <string.h>

#include "lower_internal.h"

enum { AR_MAX_DIMS = 16 };

/* The annotated write-back out[..] = out[..] + rf[..]: for each dimension
 * d of out, map[d] is the dimension of rf indexed by the same iterator. */
typedef struct atomic_wb {
    tir_ctx *ctx;
    const tir_prim_func *f;
    const tir_block *wb;
    int stmt; /* its top-level statement */
    const tir_buffer *rf, *out;
    const tir_expr *zero; /* the init's zero, of its sign: the zero kernel stores it */
    int map[AR_MAX_DIMS];
} atomic_wb;

static tir_status refuse(const atomic_wb *a, const char *what, const char *detail) {
    const char *text = tir_print_marked(a->ctx, a->f, 1, (const void *[]){a->wb});
    return tir_ctx_fail(a->ctx, TIR_ERR_LOWER, "block %s (annotated %s): %s%s\n%s", a->wb->name,
                        tir_annot_key_str(TIR_ANN_ATOMIC_REDUCTION), what, detail ? detail : "",
                        text);
}

/* ----------------------------------------------------- finding the block */

typedef struct {
    tir_visitor v;
    const tir_block *found[2];
    int n, nblocks;
} find_state;

static bool find_pre(tir_visitor *v, const tir_node *n) {
    find_state *fs = (find_state *)v;
    if (n->kind != TIR_KIND_BLOCK) return true;
    const tir_block *b = (const tir_block *)n;
    fs->nblocks++;
    const tir_annot *an = tir_annots_get(b->nannots, b->annots, TIR_ANN_ATOMIC_REDUCTION);
    if (an && an->kind == TIR_ANNOT_INT && an->i != 0 && fs->n < 2) fs->found[fs->n++] = b;
    return true;
}

static find_state find_annotated(const void *node) {
    find_state fs = {{find_pre, NULL, NULL}, {NULL, NULL}, 0, 0};
    tir_visit(&fs.v, node);
    return fs;
}

bool lower_has_atomic_reduction(const tir_prim_func *f) {
    return find_annotated(f->body).n > 0;
}

/* ------------------------------------------------------- preconditions */

static int iter_of(const tir_block *b, const tir_expr *e) {
    const tir_var *v = tir_as_tir_var(e);
    for (int i = 0; v && i < b->niters; i++)
        if (b->iters[i].var == v) return i;
    return -1;
}

/* x in the update out[idx] = out[idx] + x or x + out[idx], or NULL. */
static const tir_expr *summand(const tir_buffer_store *st) {
    const tir_binop *add = tir_as_tir_binop(st->value);
    const tir_buffer_load *x = tir_as_tir_buffer_load(add->a), *y = tir_as_tir_buffer_load(add->b);
    if (x && x->buffer == st->buffer) return add->b;
    if (y && y->buffer == st->buffer) return add->a;
    return NULL;
}

/* The block is a sum into a parameter with a zero init. */
static tir_status check_sum(atomic_wb *a, const tir_buffer_store **out_st) {
    const tir_block *b = a->wb;
    bool reduce = false;
    for (int i = 0; i < b->niters; i++) reduce |= b->iters[i].kind == TIR_ITER_REDUCE;
    const tir_buffer_store *st = tir_as_tir_buffer_store(b->body);
    if (!reduce || !b->init || !st)
        return refuse(a, "not a reduction block (a reduce iterator, an init and one store); "
                         "annotate the write-back block that rfactor leaves",
                      NULL);
    if (st->value->kind != TIR_KIND_ADD)
        return refuse(a, tir_ctx_sprintf(a->ctx, "its combiner is %s, not Add (atomic adds only "
                                                 "sum)",
                                         tir_kind_name(st->value->kind)),
                      NULL);
    if (!summand(st)) return refuse(a, "its update is not out[...] = out[...] + x", NULL);
    char dt[32];
    if (!tir_dtype_eq(st->buffer->dtype, TIR_F32))
        return refuse(a, "atomic adds are float32 only; the output is ",
                      tir_dtype_str(st->buffer->dtype, dt, sizeof dt));
    bool param = false;
    for (int i = 0; i < a->f->nparams; i++) param |= a->f->buffer_map[i] == st->buffer;
    if (!param)
        return refuse(a, "its output is not a parameter of the function: ", st->buffer->name);
    const tir_buffer_store *init = tir_as_tir_buffer_store(b->init);
    const tir_float_imm *z = init ? tir_as_tir_float_imm(init->value) : NULL;
    if (!z || z->value != 0 || init->buffer != st->buffer)
        return refuse(a, "its init is not a zero store of its output (the zero kernel replaces "
                         "it)",
                      NULL);
    a->zero = init->value;
    *out_st = st;
    return TIR_OK;
}

/* The summand is a load of a root-allocated global buffer (rfactor's
 * partial results), out's indices are spatial iterators found among its
 * indices, and its other indices are reduce iterators. */
static tir_status check_operand(atomic_wb *a, const tir_buffer_store *st,
                                const tir_kernel_set *ks) {
    const tir_block *b = a->wb;
    const tir_buffer_load *ld = tir_as_tir_buffer_load(summand(st));
    bool ws = false;
    for (int w = 0; ld && w < ks->nworkspace; w++) ws |= ks->workspace[w] == ld->buffer;
    if (!ws)
        return refuse(a, "it does not sum a global buffer that the root block allocates "
                         "(rfactor's partial results)",
                      NULL);
    a->out = st->buffer;
    a->rf = ld->buffer;
    if (st->nidx > AR_MAX_DIMS) return refuse(a, "too many dimensions", NULL);
    for (int d = 0; d < st->nidx; d++) {
        int k = iter_of(b, st->indices[d]);
        a->map[d] = -1;
        for (int p = 0; k >= 0 && p < ld->nidx; p++)
            if (iter_of(b, ld->indices[p]) == k) a->map[d] = p;
        if (k < 0 || b->iters[k].kind != TIR_ITER_SPATIAL || a->map[d] < 0)
            return refuse(a, "the output's indices must be spatial iterators that also index ",
                          a->rf->name);
    }
    for (int p = 0; p < ld->nidx; p++) {
        int k = iter_of(b, ld->indices[p]);
        bool mapped = false;
        for (int d = 0; d < st->nidx; d++) mapped |= a->map[d] == p;
        if (k < 0 || (!mapped && b->iters[k].kind != TIR_ITER_REDUCE))
            return refuse(a, "each index of the summand must be an iterator: ", a->rf->name);
    }
    return TIR_OK;
}

/* The write-back is the only block of its top-level statement (which is
 * not lowered: nothing scheduled in it would take effect). */
static tir_status check_alone(atomic_wb *a, int n, const tir_stmt *const *stmts) {
    a->stmt = -1;
    for (int i = 0; i < n && a->stmt < 0; i++) {
        find_state fs = find_annotated(stmts[i]);
        if (fs.n == 0) continue;
        if (fs.nblocks != 1)
            return refuse(a, "its loop nest holds other blocks; the write-back is not lowered "
                             "with atomic adds, so leave it unscheduled (no cache_write, "
                             "reverse_compute_at or decompose_reduction)",
                          NULL);
        a->stmt = i;
    }
    if (a->stmt < 0) return refuse(a, "it is not in a top-level loop nest of the root block", NULL);
    return TIR_OK;
}

/* The partial results are not read outside the write-back: each is
 * stored once and becomes one atomic add. */
static tir_status check_rf_reads(atomic_wb *a, int n, const tir_stmt *const *stmts) {
    for (int i = 0; i < n; i++)
        if (i != a->stmt && lower_buffer_use(stmts[i], a->rf).load)
            return refuse(a, "the partial results are read by another loop nest (e.g. "
                             "accumulated in global memory): each must be stored once, e.g. "
                             "from a cache_write to local, to become one atomic add; read: ",
                          a->rf->name);
    return TIR_OK;
}

/* ------------------------------------------------------------ rewriting */

typedef struct {
    tir_mutator m;
    const atomic_wb *a;
} rw_state;

/* out's indices (or ranges) from rf's: element map[d] of src. */
static const void *mapped(tir_ctx *ctx, const atomic_wb *a, const void *src, size_t size) {
    char *dst = tir_ctx_alloc(ctx, size * (size_t)a->out->ndim);
    for (int d = 0; d < a->out->ndim; d++)
        memcpy(dst + size * (size_t)d, (const char *)src + size * (size_t)a->map[d], size);
    return dst;
}

/* rf[idx] = v  ->  atomic_add(address_of(out[mapped idx]), v) */
static const tir_node *rw_store(tir_mutator *m, const tir_node *n) {
    const atomic_wb *a = ((rw_state *)m)->a;
    const tir_buffer_store *st = (const tir_buffer_store *)tir_mutate_default(m, n);
    if (st->buffer != a->rf) return (const tir_node *)st;
    tir_ctx *ctx = m->ctx;
    const tir_expr *el = tir_load(ctx, a->out, a->out->ndim,
                                  mapped(ctx, a, st->indices, sizeof st->indices[0]));
    const tir_expr *args[2] = {tir_call_new(ctx, TIR_HANDLE, TIR_INTRIN_ADDRESS_OF, 1, &el),
                               st->value};
    const tir_expr *call = tir_call_new(ctx, TIR_VOID, TIR_INTRIN_ATOMIC_ADD, 2, args);
    return (const tir_node *)tir_evaluate_new(ctx, call);
}

static const tir_buffer_region *rw_regions(tir_ctx *ctx, const atomic_wb *a, int n,
                                           const tir_buffer_region *rs) {
    tir_buffer_region *out = NULL;
    for (int i = 0; i < n; i++) {
        if (rs[i].buffer != a->rf) continue;
        if (!out) {
            out = tir_ctx_alloc(ctx, sizeof *out * (size_t)n);
            memcpy(out, rs, sizeof *out * (size_t)n);
        }
        out[i] = tir_region_new(ctx, a->out, a->out->ndim,
                                mapped(ctx, a, rs[i].ranges, sizeof rs[i].ranges[0]));
    }
    return out ? out : rs;
}

/* A block's regions of rf become out's. */
static const tir_node *rw_block(tir_mutator *m, const tir_node *n) {
    const atomic_wb *a = ((rw_state *)m)->a;
    const tir_block *b = (const tir_block *)tir_mutate_default(m, n);
    tir_block_desc d;
    tir_block_describe(b, &d);
    d.reads = rw_regions(m->ctx, a, d.nreads, d.reads);
    d.writes = rw_regions(m->ctx, a, d.nwrites, d.writes);
    if (d.reads == b->reads && d.writes == b->writes) return (const tir_node *)b;
    return (const tir_node *)tir_block_new(m->ctx, &d);
}

/* ------------------------------------------------------------ zero nest */

/* C[...] = 0 over all of out, one element per thread, 256 threads per
 * block (fewer for a smaller constant size), blockIdx.x over the rest. */
static const tir_stmt *zero_nest(tir_ctx *ctx, const tir_buffer *out, const tir_expr *zero) {
    int nd = out->ndim;
    tir_dtype it = out->shape[0]->dtype;
    int64_t size = tir_buffer_const_size(out), threads = size > 0 && size < 256 ? size : 256;
    const tir_expr *total = out->shape[0];
    for (int d = 1; d < nd; d++) total = tir_mul(ctx, total, out->shape[d]);
    if (size > 0) total = tir_int(ctx, it, size);
    const tir_expr *nt = tir_int(ctx, it, threads);
    const tir_var *bx = tir_var_new(ctx, "zero_bx", it), *tx = tir_var_new(ctx, "zero_tx", it);
    const tir_expr *flat = tir_add(ctx, tir_mul(ctx, &bx->base, nt), &tx->base);
    tir_iter_var *iters = tir_ctx_alloc(ctx, sizeof *iters * (size_t)nd);
    const tir_expr **values = tir_ctx_alloc(ctx, sizeof *values * (size_t)nd);
    const tir_expr **idx = tir_ctx_alloc(ctx, sizeof *idx * (size_t)nd);
    tir_range *pt = tir_ctx_alloc(ctx, sizeof *pt * (size_t)nd);
    const tir_expr *stride = tir_int(ctx, it, 1);
    for (int d = nd - 1; d >= 0; d--) {
        const tir_var *v = tir_var_new(ctx, "v", it);
        iters[d] = (tir_iter_var){v, {tir_int(ctx, it, 0), out->shape[d]}, TIR_ITER_SPATIAL};
        const tir_expr *q = d == nd - 1 ? flat : tir_floordiv(ctx, flat, stride);
        values[d] = d == 0 ? q : tir_floormod(ctx, q, out->shape[d]);
        stride = tir_mul(ctx, stride, out->shape[d]);
        idx[d] = &v->base;
        pt[d] = (tir_range){&v->base, tir_int(ctx, it, 1)};
    }
    tir_buffer_region w = tir_region_new(ctx, out, nd, pt);
    tir_block_desc bd = {.name = tir_ctx_sprintf(ctx, "%s_zero", out->name),
                         .niters = nd, .iters = iters, .nwrites = 1, .writes = &w,
                         .body = tir_store(ctx, out, zero, nd, idx)};
    bool exact = size > 0 && size % threads == 0;
    const tir_stmt *s = tir_block_realize_new(ctx, nd, values,
                                              exact ? NULL : tir_lt(ctx, flat, total),
                                              tir_block_new(ctx, &bd));
    s = tir_for_new(ctx, tx, tir_int(ctx, it, 0), nt, TIR_FOR_THREAD_BINDING,
                    tir_intern(ctx, "threadIdx.x"), 0, NULL, s);
    const tir_expr *nb = tir_floordiv(ctx, tir_add(ctx, total, tir_int(ctx, it, threads - 1)), nt);
    if (size > 0) nb = tir_int(ctx, it, (size + threads - 1) / threads);
    return tir_for_new(ctx, bx, tir_int(ctx, it, 0), nb, TIR_FOR_THREAD_BINDING,
                       tir_intern(ctx, "blockIdx.x"), 0, NULL, s);
}

/* ---------------------------------------------------------------- entry */

tir_status lower_atomic_split(tir_ctx *ctx, const tir_prim_func *f, tir_kernel_set *ks,
                              int *n, const tir_stmt *const **stmts) {
    find_state fs = find_annotated(f->body);
    atomic_wb a = {ctx, f, fs.found[0], -1, NULL, NULL, NULL, {0}};
    if (fs.n > 1) {
        a.wb = fs.found[1];
        return refuse(&a, "a second annotated block (at most one per function)", NULL);
    }
    const tir_buffer_store *st = NULL;
    TIR_TRY(check_alone(&a, *n, *stmts));
    TIR_TRY(check_sum(&a, &st));
    TIR_TRY(check_operand(&a, st, ks));
    TIR_TRY(check_rf_reads(&a, *n, *stmts));
    rw_state rw = {{ctx, {0}, NULL}, &a};
    rw.m.on[TIR_KIND_BUFFER_STORE] = rw_store;
    rw.m.on[TIR_KIND_BLOCK] = rw_block;
    const tir_stmt **out = tir_ctx_alloc(ctx, sizeof *out * (size_t)(*n));
    out[0] = zero_nest(ctx, a.out, a.zero);
    for (int i = 0, k = 1; i < *n; i++)
        if (i != a.stmt) out[k++] = tir_mutate_stmt(&rw.m, (*stmts)[i]);
    const tir_buffer **ws = tir_ctx_alloc(ctx, sizeof *ws * (size_t)(ks->nworkspace + 1));
    int nw = 0;
    for (int w = 0; w < ks->nworkspace; w++)
        if (ks->workspace[w] != a.rf) ws[nw++] = ks->workspace[w];
    ks->workspace = ws;
    ks->nworkspace = nw;
    *stmts = out;
    return TIR_OK;
}
