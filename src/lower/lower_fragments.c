/* lower_fragments.c: warp fragments from tile operations to per-lane code
 * (docs/tensor-cores.md, "Two levels of IR"; /work/notes/tc-design.md).
 *
 * Before this pass a fragment buffer (scope frag.a / frag.b / frag.acc) is
 * an ordinary multi-dimensional buffer of whole tiles that one warp owns,
 * and the tensor intrinsics frag_fill / frag_load / frag_store / mma_sync
 * name tiles by address_of(F[.., r0, c0]).  After it every fragment buffer
 * is a `local` array of prod(shape) / 32 registers per lane, tile-major
 * (tile (.., r0, c0) starts at ((lead * R/tr + r0/tr) * C/tc + c0/tc) *
 * regs), mma_sync takes address_of(L[o]) of those arrays, and the three
 * per-lane operations are plain loads and stores with lane_id(): register
 * v of lane l holds tile element (tir_frag_row(l, v), tir_frag_col(l, v)),
 * whose formulas are affine in g = l / 4 and t = l % 4, so they become
 * expressions.  The clipping of frag_load (zero fill) and frag_store (no
 * store) outside the source/destination's shape are `if`s, simplified
 * away where the analyzer proves them (lane_id() stands for a variable of
 * range [0, 32) while simplifying).  A frag_load of a whole in-bounds tile
 * from a shared 16-bit buffer with contiguous, 16-byte aligned rows becomes
 * one ldmatrix (A: x4; B: x2.trans; a TF32 A tile too: x4 of 32-bit
 * elements as 16-bit pairs); two such loads of B tiles side by
 * side (frag_load_b_16x16 makes them: consecutive statements, columns j0
 * and j0 + 8) become one ldmatrix.x4.trans.
 *
 * Clipping is against the shapes the buffers have here, after
 * compact_alloc: a global buffer keeps its shape; a shared tile shrinks to
 * the region its accesses cover (compact_alloc counts a tile operand's
 * whole tile), so a tile past the logical edge reads elements the
 * (guarded or zero-filled) copy left there, which only feed rows/columns
 * that frag_store clips.
 *
 * The pass runs after relax_guards (which still reasons about the logical
 * buffers compact_alloc recorded) and before flatten (tile offsets and
 * clipping need the multi-dimensional indices and shapes).  User errors:
 * blockDim.x other than 32 in a kernel with fragments, a tensor intrinsic
 * under a threadIdx.x loop, a fragment touched by anything but the tile
 * operations, wrong operand scopes, a fragment shape that is not whole
 * tiles, a tile origin not proven tile-aligned.
 */
#include <string.h>

#include "lower_internal.h"

typedef struct fbuf {
    const tir_buffer *frag, *local;
    /* vector_acc_store: 4 scratch registers beside an accumulator array,
     * allocated with it when a store used them (scratch_used) */
    const tir_buffer *scratch;
    bool scratch_used;
    tir_frag_layout lay;
} fbuf;

typedef struct lf {
    lower_state *st;
    const tir_prim_func *in;
    tir_analyzer *an;
    ir_vec bufs;         /* fbuf* (arena) */
    const tir_var *lane; /* lane_id() while simplifying */
    int in_tx;           /* threadIdx.x loops around */
    const tir_for *tx;   /* some threadIdx.x loop of the kernel */
    bool any;            /* a fragment or tensor intrinsic occurs */
    bool tf32_b, b16_b;  /* frag.b buffers of float32 (TF32) / 16-bit elements */
    /* TF32 B column groups (see "TF32 B column groups" below): tried in a
     * first walk; where any operation cannot take them (sigma_failed),
     * the walk is redone without. */
    bool sigma, sigma_failed;
    int in_group;        /* inside a group loop of mma_sync / frag_fill */
    tir_status err;
} lf;

static bool is_tile_op(tir_intrin op) {
    return op == TIR_INTRIN_FRAG_FILL || op == TIR_INTRIN_FRAG_LOAD ||
           op == TIR_INTRIN_FRAG_STORE || op == TIR_INTRIN_MMA_SYNC;
}

static bool is_tensor_op(tir_intrin op) {
    return is_tile_op(op) || op == TIR_INTRIN_LDMATRIX || op == TIR_INTRIN_LANE_ID;
}

static const fbuf *find_fbuf(const lf *c, const tir_buffer *b) {
    for (int i = 0; i < c->bufs.n; i++) {
        const fbuf *f = c->bufs.items[i];
        if (f->frag == b) return f;
    }
    return NULL;
}

/* The first error wins; later ones are not recorded. */
#define LF_FAIL(c, where, mark, ...)                                                              \
    do {                                                                                           \
        if ((c)->err == TIR_OK)                                                                    \
            (c)->err = lower_fail_marked((c)->st, (where), 1, (const void *const[]){(mark)},       \
                                         __VA_ARGS__);                                             \
    } while (0)

/* ------------------------------------------------------------- first look */

static bool scan_pre(tir_visitor *v, const tir_node *n) {
    lf *c = v->user;
    if (n->kind == TIR_KIND_FOR) {
        const tir_for *f = (const tir_for *)n;
        if (lower_is_thread_loop(f) && strcmp(f->thread_tag, "threadIdx.x") == 0 && !c->tx)
            c->tx = f;
    } else if (n->kind == TIR_KIND_ALLOCATE) {
        const tir_buffer *b = ((const tir_allocate *)n)->buffer;
        c->any |= tir_scope_is_frag(b->scope);
        if (b->scope == TIR_SCOPE_FRAG_B) {
            c->tf32_b |= tir_dtype_eq(b->dtype, TIR_F32);
            c->b16_b |= tir_dtype_bytes(b->dtype) == 2;
        }
    } else if (n->kind == TIR_KIND_CALL) {
        c->any |= is_tensor_op(((const tir_call *)n)->op);
    }
    return true;
}

/* -------------------------------------------------------------- buffers */

/* "(d0, d1, ...)" of b's shape. */
static const char *shape_str(tir_ctx *ctx, const tir_buffer *b) {
    char buf[256];
    size_t n = 0;
    buf[n++] = '(';
    for (int d = 0; d < b->ndim && n < sizeof buf - 8; d++)
        n += (size_t)snprintf(buf + n, sizeof buf - n, "%s%s", d ? ", " : "",
                              tir_print(ctx, b->shape[d]));
    snprintf(buf + (n < sizeof buf - 2 ? n : sizeof buf - 2), 2, ")");
    char *r = tir_ctx_alloc(ctx, strlen(buf) + 1);
    strcpy(r, buf);
    return r;
}

/* The local register array of fragment buffer b, or an error. */
static const tir_stmt *lower_alloc(lf *c, const tir_allocate *a, tir_mutator *m) {
    const tir_buffer *b = a->buffer;
    fbuf *f = IR_NEW(c->st->ctx, fbuf);
    f->frag = b;
    const char *why = NULL;
    int64_t size = tir_buffer_const_size(b), R = 0, C = 0;
    if (!tir_frag_layout_of(b->scope, b->dtype, &f->lay))
        why = "its element type is not an operand type of the scope (frag.a/frag.b: float16, "
              "bfloat16 or float32; frag.acc: float32)";
    else if (b->ndim < 2 || size < 0)
        why = "a fragment needs a constant shape of at least two dimensions";
    else if (!tir_expr_const_int(b->shape[b->ndim - 2], &R) ||
             !tir_expr_const_int(b->shape[b->ndim - 1], &C) || R % f->lay.tile_rows ||
             C % f->lay.tile_cols)
        why = "its last two dimensions are not whole tiles";
    else if (b->strides)
        why = "a fragment cannot have strides (storage_align)";
    if (why) {
        char dt[32];
        LF_FAIL(c, c->in, a,
                "lower_fragments: fragment buffer %s (scope %s, %s, shape after compaction %s): "
                "%s (tile %dx%d)",
                b->name, tir_scope_name(b->scope), tir_dtype_str(b->dtype, dt, sizeof dt),
                shape_str(c->st->ctx, b), why, f->lay.tile_rows, f->lay.tile_cols);
        return (const tir_stmt *)a;
    }
    /* column groups need whole groups of 4 tiles in B and accumulators */
    if (c->sigma && (f->lay.kind == TIR_FRAG_K8_B || b->scope == TIR_SCOPE_FRAG_ACC) && C % 32)
        c->sigma_failed = true;
    tir_buffer_desc d = {.name = b->name, .dtype = b->dtype, .ndim = 1,
                         .shape = (const tir_expr *[]){tir_i32(c->st->ctx, size / 32)},
                         .scope = TIR_SCOPE_LOCAL};
    f->local = tir_buffer_new(c->st->ctx, &d);
    if (c->st->opts.vector_acc_store && b->scope == TIR_SCOPE_FRAG_ACC) {
        char name[128];
        snprintf(name, sizeof name, "%s_x", b->name);
        d.name = name;
        d.shape = (const tir_expr *[]){tir_i32(c->st->ctx, 4)};
        f->scratch = tir_buffer_new(c->st->ctx, &d);
    }
    ir_vec_push(&c->bufs, f);
    const tir_stmt *body = tir_mutate_stmt(m, a->body);
    if (f->scratch_used) body = tir_allocate_new(c->st->ctx, f->scratch, body);
    return lower_alloc_like(c->st->ctx, a, f->local, body);
}

/* ------------------------------------------------------------- operands */

static const tir_expr *i32(lf *c, const tir_expr *e) {
    return tir_dtype_eq(e->dtype, TIR_I32) ? e : tir_cast_new(c->st->ctx, TIR_I32, e);
}

static const tir_expr *k32(lf *c, int64_t v) {
    return tir_i32(c->st->ctx, v);
}

/* The element operand i of call is address_of, or NULL; records nothing. */
static const tir_buffer_load *addr_load(const tir_call *call, int i) {
    const tir_buffer_load *l = lower_addressed(call, i);
    return l && ((const tir_expr *)l)->dtype.lanes == 1 ? l : NULL;
}

/* The element whose address operand i of call is, or NULL (error
 * recorded).  frag: 1 a fragment (of scope `scope`, or any when
 * TIR_SCOPE_GLOBAL), 0 any other buffer. */
static const tir_buffer_load *operand(lf *c, const tir_stmt *s, const tir_call *call, int i,
                                      int frag, tir_scope scope) {
    const char *name = tir_intrin_name(call->op);
    const tir_buffer_load *l = addr_load(call, i);
    if (!l) {
        LF_FAIL(c, c->in, s,
                "lower_fragments: argument %d of %s must be address_of(an element of a buffer)",
                i, name);
        return NULL;
    }
    const tir_buffer *b = l->buffer;
    bool isf = tir_scope_is_frag(b->scope);
    bool ok = frag ? isf && (scope == TIR_SCOPE_GLOBAL || b->scope == scope) : !isf;
    if (!ok) {
        char want[64];
        if (frag)
            snprintf(want, sizeof want, "a fragment of scope %s",
                     scope == TIR_SCOPE_GLOBAL ? "frag.*" : tir_scope_name(scope));
        else
            snprintf(want, sizeof want, "a buffer that is not a fragment");
        LF_FAIL(c, c->in, s, "lower_fragments: argument %d of %s is in %s (scope %s); it must be %s",
                i, name, b->name, tir_scope_name(b->scope), want);
        return NULL;
    }
    if (frag && !find_fbuf(c, b)) return NULL; /* its Allocate failed: error recorded */
    return l;
}

/* The register offset of the tile at l (a fragment element), proven
 * tile-aligned; NULL on error. */
static const tir_expr *tile_offset(lf *c, const tir_stmt *s, const fbuf *f,
                                   const tir_buffer_load *l) {
    tir_ctx *ctx = c->st->ctx;
    int n = l->nidx;
    const int tile[2] = {f->lay.tile_rows, f->lay.tile_cols};
    const tir_expr *q[2];
    for (int k = 0; k < 2; k++) {
        const tir_expr *x = i32(c, l->indices[n - 2 + k]);
        if (!tir_analyzer_can_prove(c->an, tir_eq(ctx, tir_floormod(ctx, x, k32(c, tile[k])),
                                                  k32(c, 0)))) {
            LF_FAIL(c, c->in, s,
                    "lower_fragments: %s[..., %s] is not provably the origin of a tile of "
                    "fragment %s (its %s index must be a multiple of %d; tile %dx%d)",
                    f->frag->name, tir_print(ctx, x), f->frag->name, k ? "column" : "row",
                    tile[k], tile[0], tile[1]);
            return NULL;
        }
        q[k] = tir_floordiv(ctx, x, k32(c, tile[k]));
    }
    const tir_expr *lead = k32(c, 0);
    for (int d = 0; d < n - 2; d++)
        lead = tir_add(ctx, tir_mul(ctx, lead, i32(c, f->frag->shape[d])), i32(c, l->indices[d]));
    int64_t R = 0, C = 0;
    tir_expr_const_int(f->frag->shape[n - 2], &R);
    tir_expr_const_int(f->frag->shape[n - 1], &C);
    const tir_expr *t = tir_add(ctx, tir_mul(ctx, lead, k32(c, R / tile[0])), q[0]);
    t = tir_add(ctx, tir_mul(ctx, t, k32(c, C / tile[1])), q[1]);
    return tir_analyzer_simplify(c->an, tir_mul(ctx, t, k32(c, f->lay.regs)));
}

static const tir_expr *addr(lf *c, const tir_buffer *b, int n, const tir_expr *const *idx) {
    const tir_expr *el = tir_load(c->st->ctx, b, n, idx);
    return tir_call_new(c->st->ctx, TIR_HANDLE, TIR_INTRIN_ADDRESS_OF, 1, &el);
}

static const tir_expr *reg_addr(lf *c, const fbuf *f, const tir_expr *o) {
    return addr(c, f->local, 1, &o);
}

/* ------------------------------------------------------- lane layouts */

/* Row (col false) or column of register v in the tile, as an expression
 * of the lane: tir_frag_row/col are affine in g = lane / 4 and t = lane %
 * 4 (asserted for every lane), so base + a * g + b * t. */
static const tir_expr *lane_pos(lf *c, const tir_frag_layout *l, int v, bool col) {
    int (*pos)(const tir_frag_layout *, int, int) = col ? tir_frag_col : tir_frag_row;
    int base = pos(l, 0, v), a = pos(l, 4, v) - base, b = pos(l, 1, v) - base;
    for (int lane = 0; lane < 32; lane++)
        TIR_ASSERT(pos(l, lane, v) == base + a * (lane / 4) + b * (lane % 4));
    tir_ctx *ctx = c->st->ctx;
    const tir_expr *lane = (const tir_expr *)c->lane;
    const tir_expr *e = k32(c, base);
    if (a) e = tir_add(ctx, e, tir_mul(ctx, k32(c, a), tir_floordiv(ctx, lane, k32(c, 4))));
    if (b) e = tir_add(ctx, e, tir_mul(ctx, k32(c, b), tir_floormod(ctx, lane, k32(c, 4))));
    return e;
}

/* The element of S (at l, a tile origin) that register v holds, and the
 * condition that it lies inside S's shape. */
static const tir_expr **elem_of(lf *c, const tir_buffer_load *l, const fbuf *f, int v,
                                const tir_expr **inside) {
    tir_ctx *ctx = c->st->ctx;
    int n = l->nidx;
    const tir_expr **idx = IR_NEWN(ctx, const tir_expr *, n);
    for (int d = 0; d < n; d++) idx[d] = l->indices[d];
    *inside = NULL;
    for (int k = 0; k < 2; k++) {
        int d = n - 2 + k;
        idx[d] = tir_add(ctx, i32(c, idx[d]), lane_pos(c, &f->lay, v, k == 1));
        const tir_expr *in = tir_lt(ctx, idx[d], i32(c, l->buffer->shape[d]));
        *inside = *inside ? tir_and(ctx, *inside, in) : in;
    }
    return idx;
}

/* ------------------------------------------------------------ expansion */

/* s simplified with the enclosing loops and the lane known, then the lane
 * variable replaced by lane_id(). */
static const tir_stmt *finish(lf *c, int n, const tir_stmt *const *stmts) {
    tir_ctx *ctx = c->st->ctx;
    const tir_stmt *s = tir_analyzer_simplify_stmt(c->an, tir_seq_new(ctx, n, stmts));
    const tir_expr *lane = tir_call_new(ctx, TIR_I32, TIR_INTRIN_LANE_ID, 0, NULL);
    return (const tir_stmt *)tir_substitute(ctx, s, 1, &c->lane, &lane);
}

static const tir_stmt *expand_fill(lf *c, const fbuf *f, const tir_expr *o,
                                   const tir_expr *value) {
    tir_ctx *ctx = c->st->ctx;
    const tir_stmt **st = IR_NEWN(ctx, const tir_stmt *, f->lay.regs);
    if (!tir_dtype_eq(value->dtype, f->frag->dtype)) value = tir_cast_new(ctx, f->frag->dtype, value);
    for (int v = 0; v < f->lay.regs; v++) {
        const tir_expr *i = tir_add(ctx, o, k32(c, v));
        st[v] = tir_store(ctx, f->local, value, 1, &i);
    }
    return finish(c, f->lay.regs, st);
}

/* Per lane: register v = S[element] inside S's shape, else 0; or
 * D[element] = register v inside D's shape (store). */
static const tir_stmt *expand_copy(lf *c, const fbuf *f, const tir_expr *o,
                                   const tir_buffer_load *l, bool store) {
    tir_ctx *ctx = c->st->ctx;
    const tir_stmt **st = IR_NEWN(ctx, const tir_stmt *, f->lay.regs);
    const tir_buffer *b = l->buffer;
    for (int v = 0; v < f->lay.regs; v++) {
        const tir_expr *inside, *i = tir_add(ctx, o, k32(c, v));
        const tir_expr **idx = elem_of(c, l, f, v, &inside);
        if (store) {
            const tir_expr *val = tir_load(ctx, f->local, 1, &i);
            if (!tir_dtype_eq(b->dtype, val->dtype)) val = tir_cast_new(ctx, b->dtype, val);
            st[v] = tir_if_new(ctx, inside, tir_store(ctx, b, val, l->nidx, idx), NULL);
        } else {
            const tir_expr *val = tir_load(ctx, b, l->nidx, idx);
            if (!tir_dtype_eq(f->frag->dtype, val->dtype))
                val = tir_cast_new(ctx, f->frag->dtype, val);
            const tir_expr *zero = tir_cast_new(ctx, f->frag->dtype, k32(c, 0));
            st[v] = tir_if_new(ctx, inside, tir_store(ctx, f->local, val, 1, &i),
                               tir_store(ctx, f->local, zero, 1, &i));
        }
    }
    return finish(c, f->lay.regs, st);
}

static bool provable(lf *c, const tir_expr *cond) {
    return tir_analyzer_can_prove(c->an, cond);
}

/* Are b's rows contiguous and their starts `k` elements aligned: every
 * stride but the last a constant multiple of k, the last 1? */
static bool rows_aligned(const tir_buffer *b, int64_t k) {
    int n = b->ndim;
    for (int d = 0; d < n; d++) {
        int64_t st = 1, x = 0;
        if (b->strides) {
            if (!tir_expr_const_int(b->strides[d], &st)) return false;
        } else {
            for (int e = d + 1; e < n; e++) {
                if (!tir_expr_const_int(b->shape[e], &x)) return false;
                st *= x;
            }
        }
        if (d == n - 1 ? st != 1 : st % k != 0) return false;
    }
    return true;
}

/* Does the tile of f at l (a tile origin in S) lie inside S's shape (no
 * clipping), its column a multiple of `col_align`? */
static bool tile_inside(lf *c, const fbuf *f, const tir_buffer_load *l, int col_align) {
    tir_ctx *ctx = c->st->ctx;
    const tir_buffer *b = l->buffer;
    int n = l->nidx;
    const tir_expr *j0 = i32(c, l->indices[n - 1]), *i0 = i32(c, l->indices[n - 2]);
    if (!provable(c, tir_eq(ctx, tir_floormod(ctx, j0, k32(c, col_align)), k32(c, 0))))
        return false;
    return provable(c, tir_le(ctx, tir_add(ctx, i0, k32(c, f->lay.tile_rows)),
                              i32(c, b->shape[n - 2]))) &&
           provable(c, tir_le(ctx, tir_add(ctx, j0, k32(c, f->lay.tile_cols)),
                              i32(c, b->shape[n - 1])));
}

/* Elements of f's type in a 16-byte ldmatrix row: 8 (16-bit), 4 (TF32). */
static int row_elems(const fbuf *f) { return 16 / tir_dtype_bytes(f->frag->dtype); }

/* Can the frag_load of f's tile from l (a tile origin in S) be one
 * ldmatrix: S shared and of f's type, f a 16-bit A or B tile or a TF32 A
 * tile (its four 8x4 quarters are ldmatrix's 8x8 16-bit matrices: no
 * .trans, so not TF32 B, whose registers run down a column; unless
 * tir_lower_opts.no_ldmatrix_tf32), rows contiguous and 16-byte aligned
 * (every stride but the last a multiple of 16 bytes, the last 1), the
 * column a multiple of 16 bytes, and the whole tile inside S's shape (no
 * clipping). */
static bool ldmatrix_ok(lf *c, const fbuf *f, const tir_buffer_load *l) {
    const tir_buffer *b = l->buffer;
    if (b->scope != TIR_SCOPE_SHARED || !tir_dtype_eq(b->dtype, f->frag->dtype) || l->nidx < 2)
        return false;
    bool b16 = tir_dtype_bytes(b->dtype) == 2 &&
               (f->lay.kind == TIR_FRAG_K16_A || f->lay.kind == TIR_FRAG_K16_B);
    bool tf32 = f->lay.kind == TIR_FRAG_K8_A && !c->st->opts.no_ldmatrix_tf32;
    if (!b16 && !tf32) return false;
    return rows_aligned(b, row_elems(f)) && tile_inside(c, f, l, row_elems(f));
}

/* Can the frag_store of f's tile to l (a tile origin in D) be the
 * vector form (tir_lower_opts.vector_acc_store): the option on, f a
 * float32 accumulator (16x8, 4 registers), D float32 with rows a multiple
 * of 4 elements apart (16-byte aligned when D is), the tile's column a
 * multiple of 4 and the whole tile inside D's shape, so no lane clips. */
static bool vec_store_ok(lf *c, const fbuf *f, const tir_buffer_load *l) {
    const tir_buffer *b = l->buffer;
    if (!f->scratch || f->lay.regs != 4 || f->lay.tile_rows != 16 || f->lay.tile_cols != 8 ||
        !tir_dtype_eq(b->dtype, TIR_F32) || l->nidx < 2)
        return false;
    return rows_aligned(b, 4) && tile_inside(c, f, l, 4);
}

/* The frag_store of f's accumulator tile (registers A[o .. o+3]: c0, c1
 * at row g = lane / 4, columns 2t, 2t + 1 (t = lane % 4), c2, c3 at row
 * g + 8) to l as one 4-float store per lane.  Lanes t and t ^ 1 swap:
 * even t sends c2, c3 and receives its partner's c0, c1, so it holds
 * row g, columns 2t .. 2t + 3; odd t sends c0, c1 and receives the
 * partner's c2, c3: row g + 8, columns 2t - 2 .. 2t + 1.  In the 4
 * scratch registers X (constant indices keep them in registers):
 *   X[0] = shfl_xor(even ? c2 : c0, 1); X[1] = shfl_xor(even ? c3 : c1, 1)
 *   X[2] = even ? X[0] : c2;  X[3] = even ? X[1] : c3
 *   X[0] = even ? c0 : X[0];  X[1] = even ? c1 : X[1]
 *   for v in vectorized(4): D[i0 + g + 8 (t % 2), j0 + 4 (t / 2) + v] = X[v]
 * Every lane runs both shuffles (the selects are on their operands). */
static const tir_stmt *expand_vec_store(lf *c, fbuf *f, const tir_expr *o,
                                        const tir_buffer_load *l) {
    tir_ctx *ctx = c->st->ctx;
    const tir_expr *lane = (const tir_expr *)c->lane;
    const tir_expr *even = tir_eq(ctx, tir_floormod(ctx, lane, k32(c, 2)), k32(c, 0));
    const tir_expr *a[4], *x[4];
    for (int v = 0; v < 4; v++) {
        const tir_expr *i = tir_add(ctx, o, k32(c, v)), *k = k32(c, v);
        a[v] = tir_load(ctx, f->local, 1, &i);
        x[v] = tir_load(ctx, f->scratch, 1, &k);
    }
    const tir_stmt *st[7];
    for (int j = 0; j < 2; j++) {
        const tir_expr *args[2] = {tir_select_new(ctx, even, a[2 + j], a[j]), k32(c, 1)};
        const tir_expr *sh = tir_call_new(ctx, TIR_F32, TIR_INTRIN_SHFL_XOR, 2, args);
        const tir_expr *kj = k32(c, j), *kj2 = k32(c, 2 + j);
        st[j] = tir_store(ctx, f->scratch, sh, 1, &kj);
        st[2 + j] = tir_store(ctx, f->scratch, tir_select_new(ctx, even, x[j], a[2 + j]), 1, &kj2);
        st[4 + j] = tir_store(ctx, f->scratch, tir_select_new(ctx, even, a[j], x[j]), 1, &kj);
    }
    int n = l->nidx;
    const tir_expr **idx = IR_NEWN(ctx, const tir_expr *, n);
    for (int d = 0; d < n; d++) idx[d] = l->indices[d];
    const tir_var *v = tir_var_new(ctx, "vs", TIR_I32);
    const tir_expr *g = tir_floordiv(ctx, lane, k32(c, 4)), *t = tir_floormod(ctx, lane, k32(c, 4));
    idx[n - 2] = tir_add(ctx, i32(c, idx[n - 2]),
                         tir_add(ctx, g, tir_mul(ctx, k32(c, 8), tir_floormod(ctx, t, k32(c, 2)))));
    idx[n - 1] = tir_add(ctx, i32(c, idx[n - 1]),
                         tir_add(ctx, tir_mul(ctx, k32(c, 4), tir_floordiv(ctx, t, k32(c, 2))),
                                 (const tir_expr *)v));
    const tir_expr *xv = tir_load(ctx, f->scratch, 1, (const tir_expr *[]){(const tir_expr *)v});
    st[6] = tir_for_new(ctx, v, k32(c, 0), k32(c, 4), TIR_FOR_VECTORIZED, NULL, 0, NULL,
                        tir_store(ctx, l->buffer, xv, n, idx));
    f->scratch_used = true;
    return finish(c, 7, st);
}

/* ldmatrix(trans, num, address_of(L[o]), address_of(S[.., i0 + lane % 16,
 * j0 + 8 * (lane / 16)])): lane l gives row l % 8 of matrix l / 8, that
 * is row i0 + 8 * (m % 2) + l % 8, columns j0 + 8 * (m / 2) of matrix m
 * = l / 8, whose two elements of each lane land in registers 2m, 2m + 1.
 * A (16x16): x4, matrices (rows 0-7, cols 0-7), (8-15, 0-7), (0-7, 8-15),
 * (8-15, 8-15) = registers 0-1, 2-3, 4-5, 6-7.  TF32 A (16x8): the same
 * with 4-float rows (columns j0 + 4 * (lane / 16)): matrix m is rows
 * 8 (m % 2) .., columns 4 (m / 2) .., and lane l's one element of it,
 * (l / 4, l % 4), is register m = (g + 8 (m % 2), t + 4 (m / 2)): the
 * m16n8k8 A layout (tir_frag_row/col).  B (16x8, rows k):
 * x2.trans, matrices k 0-7 and 8-15; lanes 16-31 are unused and pass row
 * lane % 16 of column j0 (a valid address: j0 + 8 may be past the
 * buffer).  A pair of B tiles side by side (pair: columns j0 and j0 + 8,
 * registers o .. o + 7, tile-major storage makes them adjacent):
 * x4.trans with A's addresses, matrices (k 0-7, n 0-7), (k 8-15, n 0-7)
 * = the first tile's registers 0-1, 2-3, then (k 0-7, n 8-15), (k 8-15,
 * n 8-15) = the second tile's. */
static const tir_stmt *expand_ldmatrix(lf *c, const fbuf *f, const tir_expr *o,
                                       const tir_buffer_load *l, bool pair) {
    tir_ctx *ctx = c->st->ctx;
    int n = l->nidx;
    bool a = f->lay.kind == TIR_FRAG_K16_A || f->lay.kind == TIR_FRAG_K8_A, x4 = a || pair;
    const tir_expr **idx = IR_NEWN(ctx, const tir_expr *, n);
    for (int d = 0; d < n; d++) idx[d] = l->indices[d];
    const tir_expr *lane = (const tir_expr *)c->lane;
    idx[n - 2] = tir_add(ctx, i32(c, idx[n - 2]), tir_floormod(ctx, lane, k32(c, 16)));
    if (x4)
        idx[n - 1] = tir_add(ctx, i32(c, idx[n - 1]), tir_mul(ctx, k32(c, row_elems(f)),
                                                               tir_floordiv(ctx, lane, k32(c, 16))));
    const tir_expr *args[4] = {k32(c, a ? 0 : 1), k32(c, x4 ? 4 : 2), reg_addr(c, f, o),
                               addr(c, l->buffer, n, idx)};
    const tir_stmt *s = lower_intrin_stmt(ctx, TIR_INTRIN_LDMATRIX, 4, args);
    return finish(c, 1, &s);
}

/* ------------------------------------------------ TF32 B column groups
 *
 * A TF32 B tile (8x8, k x n) gives lane (g, t) the elements (t, g) and
 * (t + 4, g): two per-lane loads down a column, since ldmatrix cannot
 * transpose 32-bit elements.  Within a group of 4 tiles side by side
 * (32 columns, tiles i = 0..3) the columns can be dealt out differently,
 * as long as the accumulators that the tiles' mma write are dealt out the
 * same way: tile i's column position p holds group column 4p + i instead
 * of 8i + p.  Lane g then reads columns 4g .. 4g + 3 of rows t and t + 4
 * for the four tiles: two 16-byte loads instead of eight 4-byte ones, and
 * after the mma lane (g, t) holds 8 consecutive columns 8t .. 8t + 7 of
 * rows g and g + 8 (registers c0 of tiles 0..3, then c1 of them): four
 * 16-byte stores instead of eight 8-byte ones.  Each output element is
 * the same sum over the same k steps of the same products, only in
 * another register, so the kernel computes bit for bit what it did.
 *
 * It is sound when the kernel treats the 4 tiles of every group alike:
 * every frag_load of a TF32 B fragment, frag_store and frag_fill of an
 * accumulator and mma_sync is the whole body of a group loop (below:
 * whole groups of consecutive tiles, unguarded, each iteration one tile
 * further, the rest alike: loads and stores move 8 columns of memory, an
 * mma keeps its A tile and takes the B tile at the accumulator's position
 * of its group, a fill writes one value), and every fragment column
 * count is a multiple of 32.  A tile skipped at a ragged edge (an `if`
 * around one tile's operation) breaks it: its columns are spread over the
 * group.  lower_fragments tries the groups in TF32 kernels (no 16-bit B
 * fragments) and, where any of this fails, lowers the kernel again
 * without (sigma_failed).  Off with tir_lower_opts.no_tf32_b_groups. */

/* e with v replaced by val. */
static const tir_expr *subst(lf *c, const tir_expr *e, const tir_var *v, const tir_expr *val) {
    return (const tir_expr *)tir_substitute(c->st->ctx, e, 1, &v, &val);
}

/* Is e(v + 1) - e(v) = d for every v? */
static bool steps_by(lf *c, const tir_expr *e, const tir_var *v, int64_t d) {
    tir_ctx *ctx = c->st->ctx;
    const tir_expr *e1 = subst(c, e, v, tir_add(ctx, (const tir_expr *)v, k32(c, 1)));
    return provable(c, tir_eq(ctx, tir_sub(ctx, i32(c, e1), i32(c, e)), k32(c, d)));
}

/* An element's indices move along its last dimension by 8 per step of v
 * (the others not at all). */
static bool tile_steps(lf *c, const tir_buffer_load *l, const tir_var *v) {
    for (int d = 0; d < l->nidx; d++)
        if (!steps_by(c, l->indices[d], v, d == l->nidx - 1 ? 8 : 0)) return false;
    return true;
}

/* The operation of a group loop (op: its intrinsic). */
typedef struct grp {
    const tir_call *call;
    const fbuf *f;
    tir_intrin op;
} grp;

/* Does e stay the same from one step of v to the next? */
static bool fixed(lf *c, const tir_expr *e, const tir_var *v) {
    tir_ctx *ctx = c->st->ctx;
    const tir_expr *e1 = subst(c, e, v, tir_add(ctx, (const tir_expr *)v, k32(c, 1)));
    return tir_struct_equal(e1, e) || provable(c, tir_eq(ctx, e1, e));
}

/* The column of l at v = 0, a multiple of 32 (or NULL)? */
static const tir_expr *col_at0(lf *c, const tir_buffer_load *l, const tir_var *v) {
    return subst(c, i32(c, l->indices[l->nidx - 1]), v, k32(c, 0));
}

static bool mod32(lf *c, const tir_expr *e) {
    tir_ctx *ctx = c->st->ctx;
    return provable(c, tir_eq(ctx, tir_floormod(ctx, e, k32(c, 32)), k32(c, 0)));
}

/* The per-operation conditions of a group loop over v (x: the fragment
 * tile its group is of). */
static bool group_op_ok(lf *c, const tir_call *call, const tir_buffer_load *x, const tir_var *v) {
    tir_ctx *ctx = c->st->ctx;
    if (!tile_steps(c, x, v) || !mod32(c, col_at0(c, x, v))) return false;
    switch (call->op) {
    case TIR_INTRIN_FRAG_FILL: return call->nargs == 2 && fixed(c, call->args[1], v);
    case TIR_INTRIN_MMA_SYNC: {
        const tir_buffer_load *a = addr_load(call, 1), *b = addr_load(call, 2);
        if (!a || !b || b->nidx < 2) return false;
        for (int d = 0; d < a->nidx; d++)
            if (!fixed(c, a->indices[d], v)) return false;
        return tile_steps(c, b, v) &&
               mod32(c, tir_sub(ctx, col_at0(c, b, v), col_at0(c, x, v)));
    }
    default: {
        const tir_buffer_load *y = addr_load(call, 1);
        return y && !tir_scope_is_frag(y->buffer->scope) && y->nidx >= 2 && tile_steps(c, y, v);
    }
    }
}

/* Is f (v bound in the analyzer) a group loop: serial or unrolled from
 * 0, its extent a multiple of 4, its body one frag_load of a TF32 B
 * fragment, or frag_store, frag_fill or mma_sync of an accumulator, whose
 * fragment tile (column a multiple of 32 at v = 0) moves 8 columns a
 * step, the operation's other operands as group_op_ok says? */
static bool group_loop(lf *c, const tir_for *f, grp *g) {
    int64_t mn = -1, ext = 0;
    if ((f->kind != TIR_FOR_SERIAL && f->kind != TIR_FOR_UNROLLED) ||
        !tir_expr_const_int(f->min, &mn) || mn != 0 || !tir_expr_const_int(f->extent, &ext) ||
        ext <= 0 || ext % 4 || f->body->kind != TIR_KIND_EVALUATE)
        return false;
    const tir_call *call = tir_as_tir_call(((const tir_evaluate *)f->body)->value);
    if (!call || !is_tile_op(call->op)) return false;
    const tir_buffer_load *x = addr_load(call, 0);
    const fbuf *fb = x && x->nidx >= 2 ? find_fbuf(c, x->buffer) : NULL;
    if (!fb) return false;
    bool b = call->op == TIR_INTRIN_FRAG_LOAD;
    if (b ? fb->lay.kind != TIR_FRAG_K8_B : fb->frag->scope != TIR_SCOPE_FRAG_ACC) return false;
    if (!group_op_ok(c, call, x, f->var)) return false;
    *g = (grp){call, fb, call->op};
    return true;
}

/* An operation on the groups' fragments outside a group loop: no column
 * groups. */
static void sigma_check(lf *c, const tir_call *call, const fbuf *f) {
    if (c->in_group) return;
    if (call->op == TIR_INTRIN_FRAG_LOAD ? f->lay.kind == TIR_FRAG_K8_B
                                         : f->frag->scope == TIR_SCOPE_FRAG_ACC)
        c->sigma_failed = true;
}

/* l with its last index moved by `col` and the one before by `row`. */
static const tir_expr **moved(lf *c, const tir_buffer_load *l, const tir_expr *row,
                              const tir_expr *col) {
    tir_ctx *ctx = c->st->ctx;
    int n = l->nidx;
    const tir_expr **idx = IR_NEWN(ctx, const tir_expr *, n);
    for (int d = 0; d < n; d++) idx[d] = l->indices[d];
    idx[n - 2] = tir_add(ctx, i32(c, idx[n - 2]), row);
    idx[n - 1] = tir_add(ctx, i32(c, idx[n - 1]), col);
    return idx;
}

/* The condition that an element (indices idx) lies inside b's shape. */
static const tir_expr *inside_of(lf *c, const tir_buffer *b, int n, const tir_expr *const *idx) {
    tir_ctx *ctx = c->st->ctx;
    const tir_expr *r = tir_lt(ctx, idx[n - 2], i32(c, b->shape[n - 2]));
    return tir_and(ctx, r, tir_lt(ctx, idx[n - 1], i32(c, b->shape[n - 1])));
}

/* Can 16-byte accesses serve the group at m (memory origin of tile 0):
 * m's buffer float32, rows 16-byte aligned, the column a multiple of 4,
 * and all `rows` x 32 elements inside its shape? */
static bool group_vec_ok(lf *c, const tir_buffer_load *m, int rows) {
    tir_ctx *ctx = c->st->ctx;
    const tir_buffer *b = m->buffer;
    int n = m->nidx;
    const tir_expr *i0 = i32(c, m->indices[n - 2]), *j0 = i32(c, m->indices[n - 1]);
    return tir_dtype_eq(b->dtype, TIR_F32) && rows_aligned(b, 4) &&
           provable(c, tir_eq(ctx, tir_floormod(ctx, j0, k32(c, 4)), k32(c, 0))) &&
           provable(c, tir_le(ctx, tir_add(ctx, i0, k32(c, rows)), i32(c, b->shape[n - 2]))) &&
           provable(c, tir_le(ctx, tir_add(ctx, j0, k32(c, 32)), i32(c, b->shape[n - 1])));
}

/* for i in vectorized(4): dst[di + i] = src[si + i], with di / si the
 * element indices of i = 0 given as index arrays (the last one moves). */
static const tir_stmt *vec4(lf *c, const tir_buffer *dst, int dn, const tir_expr *const *di,
                            const tir_buffer *src, int sn, const tir_expr *const *si) {
    tir_ctx *ctx = c->st->ctx;
    const tir_var *v = tir_var_new(ctx, "vg", TIR_I32);
    const tir_expr *ve = (const tir_expr *)v;
    const tir_expr **d2 = IR_NEWN(ctx, const tir_expr *, dn), **s2 = IR_NEWN(ctx, const tir_expr *, sn);
    for (int d = 0; d < dn; d++) d2[d] = d == dn - 1 ? tir_add(ctx, di[d], ve) : di[d];
    for (int d = 0; d < sn; d++) s2[d] = d == sn - 1 ? tir_add(ctx, si[d], ve) : si[d];
    const tir_stmt *st = tir_store(ctx, dst, tir_load(ctx, src, sn, s2), dn, d2);
    return tir_for_new(ctx, v, k32(c, 0), k32(c, 4), TIR_FOR_VECTORIZED, NULL, 0, NULL, st);
}

static const tir_buffer *scratch4(lf *c, const fbuf *f) {
    char name[128];
    snprintf(name, sizeof name, "%s_g", f->frag->name);
    tir_buffer_desc d = {.name = name, .dtype = TIR_F32, .ndim = 1,
                         .shape = (const tir_expr *[]){k32(c, 4)}, .scope = TIR_SCOPE_LOCAL};
    return tir_buffer_new(c->st->ctx, &d);
}

/* The 4 tiles' register offsets and memory elements of a group loop's
 * operation with v = base + i; false on an error (recorded). */
static bool group_tiles(lf *c, const grp *g, const tir_var *v, const tir_expr *base,
                        const tir_expr *o[4], const tir_buffer_load *m[4]) {
    tir_ctx *ctx = c->st->ctx;
    for (int i = 0; i < 4; i++) {
        const tir_call *ci = (const tir_call *)subst(c, (const tir_expr *)g->call, v,
                                                     tir_add(ctx, base, k32(c, i)));
        const tir_stmt *si = tir_evaluate_new(ctx, (const tir_expr *)ci);
        o[i] = tile_offset(c, si, g->f, addr_load(ci, 0));
        m[i] = addr_load(ci, 1);
        if (!o[i]) return false;
    }
    return true;
}

/* A group's B registers: per row t + 4r (r = 0, 1) of the tiles, lane g's
 * 4 columns G0 + 4g .. + 3 (one 16-byte load where group_vec_ok, else 4
 * guarded loads, zero outside) into register r of tiles 0..3. */
static const tir_stmt *group_load(lf *c, const grp *g, const tir_expr *const o[4],
                                  const tir_buffer_load *const m[4]) {
    tir_ctx *ctx = c->st->ctx;
    const tir_expr *lane = (const tir_expr *)c->lane;
    const tir_expr *gl = tir_floordiv(ctx, lane, k32(c, 4)), *tl = tir_floormod(ctx, lane, k32(c, 4));
    const tir_buffer *S = m[0]->buffer, *L = g->f->local;
    int n = m[0]->nidx;
    bool vec = group_vec_ok(c, m[0], 8) && tir_dtype_eq(S->dtype, g->f->frag->dtype);
    const tir_stmt *rows[2];
    for (int r = 0; r < 2; r++) {
        const tir_expr *row = tir_add(ctx, tl, k32(c, 4 * r)), *col = tir_mul(ctx, gl, k32(c, 4));
        const tir_expr **si = moved(c, m[0], row, col);
        const tir_stmt *st[5];
        const tir_buffer *X = vec ? scratch4(c, g->f) : NULL;
        if (vec) st[0] = vec4(c, X, 1, (const tir_expr *[]){k32(c, 0)}, S, n, si);
        for (int i = 0; i < 4; i++) {
            const tir_expr *ri = tir_add(ctx, o[i], k32(c, r)), *ki = k32(c, i), *val;
            if (vec) {
                val = tir_load(ctx, X, 1, &ki);
            } else {
                const tir_expr **ei = moved(c, m[0], row, tir_add(ctx, col, ki));
                val = tir_load(ctx, S, n, ei);
                if (!tir_dtype_eq(val->dtype, L->dtype)) val = tir_cast_new(ctx, L->dtype, val);
                val = tir_select_new(ctx, inside_of(c, S, n, ei), val,
                                     tir_cast_new(ctx, L->dtype, k32(c, 0)));
            }
            st[vec + i] = tir_store(ctx, L, val, 1, &ri);
        }
        rows[r] = tir_seq_new(ctx, 4 + vec, st + !vec);
        if (vec) rows[r] = tir_allocate_new(ctx, X, rows[r]);
    }
    return finish(c, 2, rows);
}

/* A group's accumulators: register 2h + j of tile i holds row g + 8h,
 * group column 8t + 4j + i, so per (h, j) lane (g, t) stores columns
 * D0 + 8t + 4j .. + 3 of row g + 8h: one 16-byte store where
 * group_vec_ok (rows of 16), else 4 guarded stores. */
static const tir_stmt *group_store(lf *c, const grp *g, const tir_expr *const o[4],
                                   const tir_buffer_load *const m[4]) {
    tir_ctx *ctx = c->st->ctx;
    const tir_expr *lane = (const tir_expr *)c->lane;
    const tir_expr *gl = tir_floordiv(ctx, lane, k32(c, 4)), *tl = tir_floormod(ctx, lane, k32(c, 4));
    const tir_buffer *D = m[0]->buffer, *L = g->f->local;
    int n = m[0]->nidx;
    bool vec = group_vec_ok(c, m[0], 16);
    const tir_stmt *parts[4];
    for (int h = 0; h < 2; h++)
        for (int j = 0; j < 2; j++) {
            const tir_expr *row = tir_add(ctx, gl, k32(c, 8 * h));
            const tir_expr *col = tir_add(ctx, tir_mul(ctx, tl, k32(c, 8)), k32(c, 4 * j));
            const tir_stmt *st[5];
            const tir_buffer *X = vec ? scratch4(c, g->f) : NULL;
            for (int i = 0; i < 4; i++) {
                const tir_expr *ri = tir_add(ctx, o[i], k32(c, 2 * h + j)), *ki = k32(c, i);
                const tir_expr *val = tir_load(ctx, L, 1, &ri);
                if (vec) {
                    st[i] = tir_store(ctx, X, val, 1, &ki);
                    continue;
                }
                const tir_expr **ei = moved(c, m[0], row, tir_add(ctx, col, ki));
                if (!tir_dtype_eq(D->dtype, val->dtype)) val = tir_cast_new(ctx, D->dtype, val);
                st[i] = tir_if_new(ctx, inside_of(c, D, n, ei), tir_store(ctx, D, val, n, ei), NULL);
            }
            if (vec) st[4] = vec4(c, D, n, moved(c, m[0], row, col), X, 1,
                                  (const tir_expr *[]){k32(c, 0)});
            parts[2 * h + j] = tir_seq_new(ctx, 4 + vec, st);
            if (vec) parts[2 * h + j] = tir_allocate_new(ctx, X, parts[2 * h + j]);
        }
    return finish(c, 4, parts);
}

/* A group loop over E tiles as a loop over E / 4 groups. */
static const tir_stmt *group_expand(lf *c, const tir_for *f, const grp *g) {
    tir_ctx *ctx = c->st->ctx;
    int64_t ext = 0;
    tir_expr_const_int(f->extent, &ext);
    char name[128];
    snprintf(name, sizeof name, "%s_g", f->var->name);
    const tir_var *u = tir_var_new(ctx, name, TIR_I32);
    tir_analyzer_bind(c->an, u, k32(c, 0), k32(c, ext / 4));
    const tir_expr *base = tir_mul(ctx, (const tir_expr *)u, k32(c, 4)), *o[4];
    const tir_buffer_load *m[4];
    if (!group_tiles(c, g, f->var, base, o, m)) return (const tir_stmt *)f;
    const tir_stmt *body =
        g->op == TIR_INTRIN_FRAG_LOAD ? group_load(c, g, o, m) : group_store(c, g, o, m);
    return tir_for_new(ctx, u, k32(c, 0), k32(c, ext / 4), f->kind, f->thread_tag, f->nannots,
                       f->annots, body);
}

/* One tile operation: operands checked, then its per-lane form. */
static const tir_stmt *expand(lf *c, const tir_stmt *s, const tir_call *call) {
    const fbuf *f = NULL;
    const tir_buffer_load *x = NULL, *y = NULL, *z = NULL;
    switch (call->op) {
    case TIR_INTRIN_FRAG_FILL: x = operand(c, s, call, 0, 1, TIR_SCOPE_GLOBAL); break;
    case TIR_INTRIN_FRAG_LOAD:
        x = operand(c, s, call, 0, 1, TIR_SCOPE_GLOBAL);
        if (x && x->buffer->scope == TIR_SCOPE_FRAG_ACC) {
            LF_FAIL(c, c->in, s,
                    "lower_fragments: frag_load into %s: it must be a frag.a or frag.b "
                    "fragment (an accumulator is filled with frag_fill and written by mma_sync)",
                    x->buffer->name);
            return s;
        }
        y = operand(c, s, call, 1, 0, 0);
        break;
    case TIR_INTRIN_FRAG_STORE:
        x = operand(c, s, call, 0, 1, TIR_SCOPE_FRAG_ACC);
        y = operand(c, s, call, 1, 0, 0);
        break;
    default:
        x = operand(c, s, call, 0, 1, TIR_SCOPE_FRAG_ACC);
        y = operand(c, s, call, 1, 1, TIR_SCOPE_FRAG_A);
        z = operand(c, s, call, 2, 1, TIR_SCOPE_FRAG_B);
        if (y && z && !tir_dtype_eq(y->buffer->dtype, z->buffer->dtype)) {
            char ta[32], tb[32];
            LF_FAIL(c, c->in, s, "lower_fragments: mma_sync of %s (%s) and %s (%s): A and B "
                                 "must have one element type",
                    y->buffer->name, tir_dtype_str(y->buffer->dtype, ta, sizeof ta),
                    z->buffer->name, tir_dtype_str(z->buffer->dtype, tb, sizeof tb));
        }
        break;
    }
    if (c->err != TIR_OK || !x) return s;
    f = find_fbuf(c, x->buffer);
    const tir_expr *o = tile_offset(c, s, f, x);
    if (!o) return s;
    if (c->sigma) sigma_check(c, call, f);
    switch (call->op) {
    case TIR_INTRIN_FRAG_FILL: return expand_fill(c, f, o, call->args[1]);
    case TIR_INTRIN_FRAG_LOAD:
        if (!y) return s;
        return ldmatrix_ok(c, f, y) ? expand_ldmatrix(c, f, o, y, false)
                                     : expand_copy(c, f, o, y, false);
    case TIR_INTRIN_FRAG_STORE:
        if (!y) return s;
        return vec_store_ok(c, f, y) ? expand_vec_store(c, (fbuf *)f, o, y)
                                     : expand_copy(c, f, o, y, true);
    default: {
        const fbuf *fa = y ? find_fbuf(c, y->buffer) : NULL, *fb = z ? find_fbuf(c, z->buffer) : NULL;
        const tir_expr *oa = fa ? tile_offset(c, s, fa, y) : NULL;
        const tir_expr *ob = fb ? tile_offset(c, s, fb, z) : NULL;
        if (!oa || !ob || c->err != TIR_OK) return s;
        const tir_expr *args[3] = {reg_addr(c, f, o), reg_addr(c, fa, oa), reg_addr(c, fb, ob)};
        return lower_intrin_stmt(c->st->ctx, TIR_INTRIN_MMA_SYNC, 3, args);
    }
    }
}

/* ------------------------------------------------------------ B pairs */

static const tir_call *frag_load_of(const tir_stmt *s) {
    if (s->kind != TIR_KIND_EVALUATE) return NULL;
    const tir_call *call = tir_as_tir_call(((const tir_evaluate *)s)->value);
    return call && call->op == TIR_INTRIN_FRAG_LOAD ? call : NULL;
}

/* Is q the element 8 columns right of p (same buffer, other indices equal)? */
static bool right_of(lf *c, const tir_buffer_load *p, const tir_buffer_load *q) {
    tir_ctx *ctx = c->st->ctx;
    if (p->buffer != q->buffer || p->nidx != q->nidx) return false;
    for (int d = 0; d < p->nidx; d++) {
        const tir_expr *diff = tir_sub(ctx, i32(c, q->indices[d]), i32(c, p->indices[d]));
        if (!provable(c, tir_eq(ctx, diff, k32(c, d == p->nidx - 1 ? 8 : 0)))) return false;
    }
    return true;
}

/* s1; s2 as one ldmatrix.x4.trans when they are frag_loads of two B tiles
 * side by side (fragment columns c0 and c0 + 8 from source columns j0 and
 * j0 + 8, the same rows), both of which would be an ldmatrix; else NULL.
 * s2 may be `if (cond) load` (frag_load_b_16x16's guard on a last pair
 * with one tile; cond does not depend on the lane: tile operations run
 * outside threadIdx.x loops): then `if (cond) x4.trans else s1`, unless
 * cond is proven (x4 alone) or disproven (NULL: s1 alone).  Anything odd
 * is left to expand(), which reports it. */
static const tir_stmt *merge_b_pair(lf *c, const tir_stmt *s1, const tir_stmt *s2) {
    const tir_if *g = s2->kind == TIR_KIND_IF ? (const tir_if *)s2 : NULL;
    const tir_expr *cond = g && !g->else_s ? g->cond : NULL;
    if (cond) s2 = g->then_s;
    if (cond && provable(c, cond)) cond = NULL;
    else if (cond && provable(c, tir_not_new(c->st->ctx, cond))) return NULL;
    const tir_call *c1 = frag_load_of(s1), *c2 = c1 ? frag_load_of(s2) : NULL;
    if (!c2 || c->in_tx || c->err != TIR_OK) return NULL;
    const tir_buffer_load *x1 = addr_load(c1, 0), *y1 = addr_load(c1, 1);
    const tir_buffer_load *x2 = addr_load(c2, 0), *y2 = addr_load(c2, 1);
    if (!x1 || !y1 || !x2 || !y2 || tir_scope_is_frag(y1->buffer->scope)) return NULL;
    const fbuf *f = find_fbuf(c, x1->buffer);
    if (!f || f->lay.kind != TIR_FRAG_K16_B || !right_of(c, x1, x2) || !right_of(c, y1, y2) ||
        !ldmatrix_ok(c, f, y1) || !ldmatrix_ok(c, f, y2))
        return NULL;
    const tir_expr *o1 = tile_offset(c, s1, f, x1), *o2 = o1 ? tile_offset(c, s2, f, x2) : NULL;
    tir_ctx *ctx = c->st->ctx;
    if (!o2 || !provable(c, tir_eq(ctx, o2, tir_add(ctx, o1, k32(c, f->lay.regs))))) return NULL;
    const tir_stmt *x4 = expand_ldmatrix(c, f, o1, y1, true);
    if (!cond) return x4;
    const tir_stmt *one = expand(c, s1, c1);
    return c->err == TIR_OK ? tir_if_new(ctx, cond, x4, one) : NULL;
}

/* ---------------------------------------------------------------- walk */

static const tir_node *on_for(tir_mutator *m, const tir_node *n) {
    lf *c = m->user;
    const tir_for *f = (const tir_for *)n;
    tir_analyzer_bind(c->an, f->var, f->min, f->extent);
    grp g;
    if (c->sigma && !c->in_tx && c->err == TIR_OK && group_loop(c, f, &g)) {
        if (g.op == TIR_INTRIN_FRAG_LOAD || g.op == TIR_INTRIN_FRAG_STORE)
            return (const tir_node *)group_expand(c, f, &g);
        c->in_group++; /* mma_sync, frag_fill: tile by tile as ever */
        const tir_node *r = tir_mutate_default(m, n);
        c->in_group--;
        return r;
    }
    bool tx = lower_is_thread_loop(f) && strcmp(f->thread_tag, "threadIdx.x") == 0;
    const tir_for *outer = c->tx;
    if (tx) c->in_tx++, c->tx = f;
    const tir_node *r = tir_mutate_default(m, n);
    if (tx) c->in_tx--, c->tx = outer;
    return r;
}

static const tir_node *on_alloc(tir_mutator *m, const tir_node *n) {
    const tir_allocate *a = (const tir_allocate *)n;
    if (!tir_scope_is_frag(a->buffer->scope)) return tir_mutate_default(m, n);
    return (const tir_node *)lower_alloc(m->user, a, m);
}

static const tir_node *on_eval(tir_mutator *m, const tir_node *n) {
    lf *c = m->user;
    const tir_call *call = tir_as_tir_call(((const tir_evaluate *)n)->value);
    if (!call || !is_tile_op(call->op)) return tir_mutate_default(m, n);
    if (c->in_tx) {
        LF_FAIL(c, c->in, n,
                "lower_fragments: %s runs under threadIdx.x loop %s: tensor intrinsics are "
                "executed by the whole warp (threadIdx.x is the lane); bind the loops around "
                "them to threadIdx.y/z or leave them serial",
                tir_intrin_name(call->op), c->tx->var->name);
        return n;
    }
    return (const tir_node *)expand(c, (const tir_stmt *)n, call);
}

/* Adjacent frag_loads of a B pair become one ldmatrix.x4.trans; the rest
 * as usual. */
static const tir_node *on_seq(tir_mutator *m, const tir_node *n) {
    lf *c = m->user;
    const tir_seq *q = (const tir_seq *)n;
    const tir_stmt **out = IR_NEWN(c->st->ctx, const tir_stmt *, q->n);
    int k = 0;
    bool changed = false;
    for (int i = 0; i < q->n; i++) {
        const tir_stmt *pair = i + 1 < q->n ? merge_b_pair(c, q->stmts[i], q->stmts[i + 1]) : NULL;
        out[k] = pair ? pair : tir_mutate_stmt(m, q->stmts[i]);
        changed |= pair || out[k] != q->stmts[i];
        k++, i += pair != NULL;
    }
    return changed ? (const tir_node *)tir_seq_new(c->st->ctx, k, out) : n;
}

/* A fragment reached other than as a tile operand. */
static const tir_node *on_access(tir_mutator *m, const tir_node *n) {
    lf *c = m->user;
    const tir_buffer *b = n->kind == TIR_KIND_BUFFER_LOAD ? ((const tir_buffer_load *)n)->buffer
                                                          : ((const tir_buffer_store *)n)->buffer;
    if (tir_scope_is_frag(b->scope))
        LF_FAIL(c, c->in, n,
                "lower_fragments: fragment %s (scope %s) is %s outside the tensor intrinsics; "
                "its elements are spread over the lanes of a warp, so only frag_fill, "
                "frag_load, frag_store and mma_sync may touch it",
                b->name, tir_scope_name(b->scope),
                n->kind == TIR_KIND_BUFFER_LOAD ? "read" : "written");
    return tir_mutate_default(m, n);
}

/* One walk over the kernel (a fresh analyzer and fragment list). */
static const tir_stmt *walk(lf *c, const tir_stmt *body) {
    c->tx = NULL;
    c->bufs = (ir_vec){0};
    c->an = tir_analyzer_create(c->st->ctx);
    c->lane = tir_var_new(c->st->ctx, "lane", TIR_I32);
    tir_analyzer_bind_const(c->an, c->lane, 0, 32);
    tir_mutator m = {.ctx = c->st->ctx, .user = c};
    m.on[TIR_KIND_FOR] = on_for;
    m.on[TIR_KIND_ALLOCATE] = on_alloc;
    m.on[TIR_KIND_EVALUATE] = on_eval;
    m.on[TIR_KIND_SEQ] = on_seq;
    m.on[TIR_KIND_BUFFER_LOAD] = on_access;
    m.on[TIR_KIND_BUFFER_STORE] = on_access;
    const tir_stmt *r = tir_mutate_stmt(&m, body);
    tir_analyzer_destroy(c->an);
    ir_vec_free(&c->bufs);
    return r;
}

tir_status lower_fragments(lower_state *st, const tir_prim_func *in, const tir_prim_func **out) {
    lf c = {.st = st, .in = in};
    tir_visitor v = {.pre = scan_pre, .user = &c};
    tir_visit(&v, in->body);
    if (!c.any) {
        *out = in;
        return TIR_OK;
    }
    int64_t ext = 0;
    if (!c.tx || !tir_expr_const_int(c.tx->extent, &ext) || ext != 32)
        return lower_fail_marked(
            st, in, c.tx ? 1 : 0, (const void *const[]){c.tx},
            "lower_fragments: the kernel uses warp fragments, so blockDim.x must be 32 "
            "(threadIdx.x is the lane in the warp; warps are threadIdx.y/z), but %s%s",
            c.tx ? "threadIdx.x has extent " : "no loop is bound to threadIdx.x",
            c.tx ? tir_print(st->ctx, c.tx->extent) : "");
    c.sigma = c.tf32_b && !c.b16_b && !st->opts.no_tf32_b_groups;
    const tir_stmt *body = walk(&c, in->body);
    if (c.err == TIR_OK && c.sigma && c.sigma_failed) {
        c.sigma = false;
        body = walk(&c, in->body);
    }
    if (c.err != TIR_OK) return c.err;
    *out = lower_with_body(st->ctx, in, body);
    return TIR_OK;
}
