/* flatten.c: multi-dimensional buffers become 1-D (TVM: FlattenBuffer).
 * An access buf[i0, .., in] becomes flat[sum i_d * stride_d] with the
 * buffer's strides (padded ones from storage_align included) or, without
 * strides, the row-major products of the shape.  Parameter buffers keep
 * their elem_offset, alignment and scope; allocated buffers get the size
 * stride_0 * shape_0.
 *
 * Unpadded 2-D shared tiles that ldmatrix reads are swizzled here (unless
 * tir_lower_opts.no_smem_swizzle): within each 128-byte segment of a row,
 * the 16-byte chunk c of row i moves to chunk
 *     ((c / 2 + i) % 4) * 2 + (c % 2 + i / 4 % 2) % 2
 * (the sector pair c / 2 rotated by i, its halves exchanged on rows 4-7
 * of every 8).  Any 8 consecutive rows of one chunk then lie in 8
 * different chunks of their segments, so ldmatrix's 8 row reads meet no
 * bank conflict, without the padding storage_align adds for that; and a
 * 32-byte sector of global memory (chunks 2s, 2s + 1 of a row) stays one
 * 32-byte sector of shared memory.  A padded row (16 bytes past a multiple
 * of 32) splits every other row's sectors, and the H200 then moves 1.5x
 * the bytes from L2 for a bfloat16 tile (ncu, docs/tensor-cores.md).  The
 * map is applied to every access of the buffer, each by its own indices,
 * so it is a bijection of each row that nothing before flatten sees:
 * copies, ldmatrix's per-lane row addresses and single loads alike.
 *
 * A shared tile that wgmma_sync reads (rows of 32 floats, lower_fragments
 * checked) is swizzled the hardware's way instead: the descriptor's
 * 128-byte mode reads chunk c of row i at chunk c ^ (i % 8).  The IR has
 * no xor, so the chunk is the sum over bits b < 3 of ((c >> b) + (i >> b))
 * % 2 << b.  The hardware applies it to address bits, so such a buffer
 * must start 1024-byte aligned (codegen allocates it so) and its pipeline
 * versions stay 1024-byte multiples apart (8n rows of 128 bytes).
 */
#include "lower_internal.h"

typedef struct fl {
    lower_state *st;
    ir_vec olds, news;
    ir_vec swizzled; /* the buffers (unflattened) whose chunks are swizzled */
    ir_vec vector_indexed; /* buffers accessed at a vector index (not swizzled) */
    ir_vec xor_swizzled;   /* wgmma_sync's shared tiles (the hardware's swizzle) */
} fl;

/* Chunks of 16 bytes per 128-byte segment, and the swizzle's period in
 * rows. */
enum { SWZ_CHUNK = 16, SWZ_SEG = 8 };

/* Can b be swizzled: shared, two dimensions of constant extents, no
 * strides or element offset (storage_align's padding keeps its rows as
 * they are), rows a whole number of 128-byte segments, elements that
 * divide a chunk. */
static bool swizzle_ok(const tir_buffer *b) {
    int64_t rows, cols, off = -1, eb = tir_dtype_bytes(b->dtype);
    if (b->scope != TIR_SCOPE_SHARED || b->ndim != 2 || b->strides) return false;
    if (b->elem_offset && (!tir_expr_const_int(b->elem_offset, &off) || off != 0)) return false;
    if (!tir_expr_const_int(b->shape[0], &rows) || !tir_expr_const_int(b->shape[1], &cols))
        return false;
    return eb > 0 && SWZ_CHUNK % eb == 0 && rows >= 1 && (cols * eb) % (SWZ_CHUNK * SWZ_SEG) == 0;
}

/* A load or store at a vector index (a Ramp the schedule wrote) keeps its
 * buffer unswizzled: the map is built for scalar indices, and every access
 * of a buffer must go through the same layout. */
static bool find_vector_index(tir_visitor *v, const tir_node *n) {
    const tir_buffer *b;
    int ni;
    const tir_expr *const *idx;
    fl *c = v->user;
    if (!lower_access(n, &b, &ni, &idx)) return true;
    for (int d = 0; d < ni; d++)
        if (idx[d]->dtype.lanes > 1 && !ir_vec_has(&c->vector_indexed, b))
            ir_vec_push(&c->vector_indexed, b);
    return true;
}

static bool find_ldmatrix(tir_visitor *v, const tir_node *n) {
    if (n->kind != TIR_KIND_CALL) return true;
    const tir_call *call = (const tir_call *)n;
    const tir_buffer_load *src =
        call->op == TIR_INTRIN_LDMATRIX && call->nargs == 4 ? lower_addressed(call, 3) : NULL;
    fl *c = v->user;
    if (!src || !swizzle_ok(src->buffer) || ir_vec_has(&c->swizzled, src->buffer) ||
        ir_vec_has(&c->vector_indexed, src->buffer))
        return true;
    ir_vec_push(&c->swizzled, src->buffer);
    return true;
}

/* wgmma_sync's shared operands (every group's fourth argument). */
static bool find_wgmma(tir_visitor *v, const tir_node *n) {
    if (n->kind != TIR_KIND_CALL || ((const tir_call *)n)->op != TIR_INTRIN_WGMMA_SYNC) return true;
    const tir_call *call = (const tir_call *)n;
    fl *c = v->user;
    for (int g = 0; g + 4 < call->nargs; g += 5) {
        const tir_buffer_load *a = lower_addressed(call, g + 3);
        if (a && !ir_vec_has(&c->xor_swizzled, a->buffer)) ir_vec_push(&c->xor_swizzled, a->buffer);
    }
    return true;
}

/* Column j of row i of a wgmma tile (32 floats a row): chunk j / 4 at
 * (j / 4) ^ (i % 8), as three bits. */
static const tir_expr *xor_swizzle_col(tir_ctx *ctx, const tir_expr *i, const tir_expr *j) {
    tir_dtype t = j->dtype;
    if (!tir_dtype_eq(i->dtype, t)) i = tir_cast_new(ctx, t, i);
    const tir_expr *four = tir_int(ctx, t, 4), *two = tir_int(ctx, t, 2);
    const tir_expr *ch = tir_floordiv(ctx, j, four), *nc = NULL;
    for (int b = 0; b < 3; b++) {
        const tir_expr *p = tir_int(ctx, t, 1 << b);
        const tir_expr *bit = tir_floormod(
            ctx, tir_add(ctx, tir_floordiv(ctx, ch, p), tir_floordiv(ctx, i, p)), two);
        bit = b ? tir_mul(ctx, bit, p) : bit;
        nc = nc ? tir_add(ctx, nc, bit) : bit;
    }
    return tir_add(ctx, tir_mul(ctx, nc, four), tir_floormod(ctx, j, four));
}

/* Column j of row i of a swizzled buffer of element size eb: the chunk
 * j / E (E = 16 / eb elements) moved within its segment as above. */
const tir_expr *lower_swizzle_col(tir_ctx *ctx, const tir_expr *i, const tir_expr *j, int64_t eb) {
    tir_dtype t = j->dtype;
    if (!tir_dtype_eq(i->dtype, t)) i = tir_cast_new(ctx, t, i);
    const tir_expr *E = tir_int(ctx, t, SWZ_CHUNK / eb), *two = tir_int(ctx, t, 2),
                   *four = tir_int(ctx, t, 4), *seg = tir_int(ctx, t, SWZ_SEG);
    const tir_expr *ch = tir_floordiv(ctx, j, E), *c8 = tir_floormod(ctx, ch, seg);
    const tir_expr *sect = tir_floormod(ctx, tir_add(ctx, tir_floordiv(ctx, c8, two), i), four);
    const tir_expr *half = tir_floormod(
        ctx, tir_add(ctx, tir_floormod(ctx, c8, two), tir_floormod(ctx, tir_floordiv(ctx, i, four), two)),
        two);
    const tir_expr *nc = tir_add(ctx, tir_mul(ctx, tir_floordiv(ctx, ch, seg), seg),
                                 tir_add(ctx, tir_mul(ctx, sect, two), half));
    return tir_add(ctx, tir_mul(ctx, nc, E), tir_floormod(ctx, j, E));
}

static const tir_expr *stride_of(tir_ctx *ctx, const tir_buffer *b, int d) {
    if (b->strides) return b->strides[d];
    const tir_expr *s = NULL;
    for (int k = d + 1; k < b->ndim; k++) s = s ? tir_mul(ctx, s, b->shape[k]) : b->shape[k];
    return s ? s : tir_int(ctx, b->shape[0]->dtype, 1);
}

/* Whether b has more elements than an int32 flat index can name (constant
 * shapes; a 65536 x 65536 C): its flat index is then built in int64. */
static bool needs_i64(const tir_buffer *b) {
    int64_t n = 1, e;
    for (int d = 0; d < b->ndim; d++) {
        if (!tir_expr_const_int(b->shape[d], &e)) return false;
        if (e > 0 && n > INT32_MAX / e) return true;
        n *= e;
    }
    return false;
}

/* Stride d of b as an int64 constant (constant strides or shapes). */
static bool const_stride(const tir_buffer *b, int d, int64_t *out) {
    if (b->strides) return tir_expr_const_int(b->strides[d], out);
    int64_t s = 1, e;
    for (int k = d + 1; k < b->ndim; k++) {
        if (!tir_expr_const_int(b->shape[k], &e)) return false;
        s *= e;
    }
    *out = s;
    return true;
}

static const tir_buffer *flat_buffer(fl *c, const tir_buffer *b) {
    for (int i = 0; i < c->olds.n; i++)
        if (c->olds.items[i] == b) return c->news.items[i];
    tir_ctx *ctx = c->st->ctx;
    const tir_buffer *nb = b;
    if (b->ndim != 1 || (b->strides && !tir_struct_equal(b->strides[0], tir_i32(ctx, 1)))) {
        int64_t size_c;
        const tir_expr *size =
            b->ndim == 0 ? tir_i32(ctx, 1) : tir_mul(ctx, stride_of(ctx, b, 0), b->shape[0]);
        int64_t n;
        if (needs_i64(b) && b->ndim > 0 && const_stride(b, 0, &n) &&
            tir_expr_const_int(b->shape[0], &size_c))
            size = tir_int(ctx, TIR_I64, n * size_c); /* the size itself past int32 */
        size = tir_simplify(ctx, size);
        tir_buffer_desc d;
        tir_buffer_describe(b, &d);
        d.ndim = 1;
        d.shape = (const tir_expr *const[]){size};
        d.strides = NULL;
        nb = tir_buffer_new(ctx, &d);
    }
    ir_vec_push(&c->olds, b);
    ir_vec_push(&c->news, nb);
    return nb;
}

static const tir_expr *flat_index(const fl *c, tir_ctx *ctx, const tir_buffer *b, int nidx,
                                  const tir_expr *const *idx) {
    if (nidx == 0) return tir_i32(ctx, 0);
    const tir_expr *wide[8];
    if (needs_i64(b) && nidx <= 8) { /* the multiply and sum of int32 parts would overflow */
        for (int d = 0; d < nidx; d++) {
            tir_dtype t = idx[d]->dtype;
            wide[d] = t.bits < 64 && tir_dtype_is_int(t)
                          ? tir_cast_new(ctx, tir_dtype_with_lanes(TIR_I64, t.lanes), idx[d])
                          : idx[d];
        }
        idx = wide;
    }
    const tir_expr *sw[2];
    if (nidx == 2 && ir_vec_has(&c->xor_swizzled, b)) {
        sw[0] = idx[0], sw[1] = xor_swizzle_col(ctx, idx[0], idx[1]);
        idx = sw;
    } else if (nidx == 2 && ir_vec_has(&c->swizzled, b)) {
        sw[0] = idx[0], sw[1] = lower_swizzle_col(ctx, idx[0], idx[1], tir_dtype_bytes(b->dtype));
        idx = sw;
    }
    const tir_expr *sum = NULL;
    int lanes = 1; /* a vector index (a Ramp the schedule wrote): the others broadcast */
    for (int d = 0; d < nidx; d++)
        if (idx[d]->dtype.lanes > lanes) lanes = idx[d]->dtype.lanes;
    for (int d = 0; d < nidx; d++) {
        int64_t sc;
        const tir_expr *st = idx == wide && const_stride(b, d, &sc) ? tir_int(ctx, TIR_I64, sc)
                                                                    : stride_of(ctx, b, d);
        const tir_expr *i = idx[d];
        tir_dtype et = tir_dtype_with_lanes(i->dtype, 1);
        if (!tir_dtype_eq(st->dtype, et)) st = tir_cast_new(ctx, et, st);
        int64_t one;
        const tir_expr *t = tir_expr_const_int(st, &one) && one == 1 ? i : NULL;
        if (!t && i->dtype.lanes > 1) st = tir_broadcast_new(ctx, st, i->dtype.lanes);
        if (!t) t = tir_mul(ctx, i, st);
        if (sum && !tir_dtype_eq(tir_dtype_with_lanes(sum->dtype, 1), tir_dtype_with_lanes(t->dtype, 1)))
            t = tir_cast_new(ctx, tir_dtype_with_lanes(sum->dtype, t->dtype.lanes), t);
        if (t->dtype.lanes < lanes) t = tir_broadcast_new(ctx, t, lanes);
        sum = sum ? tir_add(ctx, sum, t) : t;
    }
    /* a Ramp again where it is one (the passes after flatten, thread_sync
       first, take Ramps, as vectorize makes them, and no other vectors) */
    const tir_expr *base, *stride;
    if (lanes > 1 && lower_ramp_parts(ctx, sum, &base, &stride))
        sum = tir_ramp_new(ctx, tir_simplify(ctx, base), tir_simplify(ctx, stride), lanes);
    return sum;
}

static const tir_node *on_load(tir_mutator *m, const tir_node *n) {
    const tir_buffer_load *l = (const tir_buffer_load *)tir_mutate_default(m, n);
    const tir_buffer *nb = flat_buffer(m->user, l->buffer);
    if (nb == l->buffer && !(l->nidx == 1 && l->indices[0]->dtype.lanes > 1))
        return (const tir_node *)l;
    const tir_expr *i = flat_index(m->user, m->ctx, l->buffer, l->nidx, l->indices);
    return (const tir_node *)tir_load(m->ctx, nb, 1, &i);
}

static const tir_node *on_store(tir_mutator *m, const tir_node *n) {
    const tir_buffer_store *s = (const tir_buffer_store *)tir_mutate_default(m, n);
    const tir_buffer *nb = flat_buffer(m->user, s->buffer);
    if (nb == s->buffer && !(s->nidx == 1 && s->indices[0]->dtype.lanes > 1))
        return (const tir_node *)s;
    const tir_expr *i = flat_index(m->user, m->ctx, s->buffer, s->nidx, s->indices);
    return (const tir_node *)tir_store(m->ctx, nb, s->value, 1, &i);
}

static const tir_node *on_alloc(tir_mutator *m, const tir_node *n) {
    const tir_allocate *a = (const tir_allocate *)tir_mutate_default(m, n);
    const tir_buffer *nb = flat_buffer(m->user, a->buffer);
    if (nb == a->buffer) return (const tir_node *)a;
    return (const tir_node *)lower_alloc_like(m->ctx, a, nb, a->body);
}

tir_status lower_flatten(lower_state *st, const tir_prim_func *in, const tir_prim_func **out) {
    fl c = {.st = st};
    tir_ctx *ctx = st->ctx;
    tir_mutator m = {.ctx = ctx, .user = &c};
    m.on[TIR_KIND_BUFFER_LOAD] = on_load;
    m.on[TIR_KIND_BUFFER_STORE] = on_store;
    m.on[TIR_KIND_ALLOCATE] = on_alloc;
    tir_visitor vi = {.pre = find_vector_index, .user = &c};
    tir_visit(&vi, in->body);
    if (!st->opts.no_smem_swizzle) {
        tir_visitor v = {.pre = find_ldmatrix, .user = &c};
        tir_visit(&v, in->body);
    }
    tir_visitor vw = {.pre = find_wgmma, .user = &c};
    tir_visit(&vw, in->body);
    for (int i = 0; i < c.xor_swizzled.n; i++) {
        const tir_buffer *b = c.xor_swizzled.items[i];
        if (ir_vec_has(&c.swizzled, b) || ir_vec_has(&c.vector_indexed, b)) {
            tir_status s = lower_fail_marked(st, in, 0, NULL, "flatten: shared buffer %s is read by wgmma_sync "
                                              "and also %s, which needs another layout",
                                      b->name, ir_vec_has(&c.swizzled, b)
                                                   ? "by ldmatrix"
                                                   : "at a vector index");
            ir_vec_free(&c.swizzled);
            ir_vec_free(&c.vector_indexed);
            ir_vec_free(&c.xor_swizzled);
            return s;
        }
    }
    const tir_stmt *body = tir_mutate_stmt(&m, in->body);
    const tir_buffer **bm = IR_NEWN(ctx, const tir_buffer *, in->nparams);
    for (int i = 0; i < in->nparams; i++)
        bm[i] = in->buffer_map[i] ? flat_buffer(&c, in->buffer_map[i]) : NULL;
    for (int i = 0; i < st->nsync_globals; i++) /* global_share's, now flat */
        for (int j = 0; j < c.olds.n; j++)
            if (c.olds.items[j] == st->sync_globals[i]) st->sync_globals[i] = c.news.items[j];
    ir_vec_free(&c.olds);
    ir_vec_free(&c.news);
    ir_vec_free(&c.swizzled);
    ir_vec_free(&c.vector_indexed);
    ir_vec_free(&c.xor_swizzled);
    *out =
        tir_prim_func_new(ctx, in->name, in->nparams, in->params, bm, body, in->nattrs, in->attrs);
    return TIR_OK;
}
