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
 * and j0 + 8) become one ldmatrix.x4.trans.  TF32 fragments whose every
 * tile operation handles whole 16-column units swap the instruction's
 * operands (C^T = B^T A^T; "TF32 with A and B swapped" below): B by two
 * ld.shared.v2 per unit and k step instead of four 4-byte loads.
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
    /* TF32 with the operands swapped ("TF32 with A and B swapped"): lay
     * is then the unit's (A 16x8, B 8x16, accumulator 16x16) */
    bool swap;
    /* vector_acc_store: 4 scratch registers beside an accumulator array,
     * allocated with it when a store used them (scratch_used) */
    const tir_buffer *scratch;
    bool scratch_used;
    tir_frag_layout lay;
} fbuf;

typedef struct lf {
    lower_state *st;
    const tir_var *group_q; /* the tile loop of the last unit split */
    ir_vec swaps;           /* sbuf* (arena): candidates of the swap */
    bool swapping;          /* some buffer swaps */
    const tir_prim_func *in;
    tir_analyzer *an;
    ir_vec bufs;         /* fbuf* (arena) */
    const tir_var *lane; /* lane_id() while simplifying */
    int in_tx;           /* threadIdx.x loops around */
    int in_if;           /* ifs around (a wgmma must run in every warp) */
    int in_wloop;        /* loops around whose bounds depend on the warp */
    ir_vec warp_vars;    /* threadIdx.y / z loop variables around */
    const tir_for *tx;   /* some threadIdx.x loop of the kernel */
    bool any;            /* a fragment or tensor intrinsic occurs */
    tir_status err;
} lf;

static bool is_tile_op(tir_intrin op) {
    return op == TIR_INTRIN_FRAG_FILL || op == TIR_INTRIN_FRAG_LOAD ||
           op == TIR_INTRIN_FRAG_STORE || op == TIR_INTRIN_MMA_SYNC || op == TIR_INTRIN_WGMMA;
}

static bool is_tensor_op(tir_intrin op) {
    return is_tile_op(op) || op == TIR_INTRIN_LDMATRIX || op == TIR_INTRIN_LANE_ID;
}

static bool buf_swaps(const lf *c, const tir_buffer *b);
static int swap_pos(int kind, int lane, int v, bool col);

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
        c->any |= tir_scope_is_frag(((const tir_allocate *)n)->buffer->scope);
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
    f->swap = buf_swaps(c, b);
    if (f->swap) { /* the unit of the swapped layout (checked whole by the scan) */
        if (f->lay.kind == TIR_FRAG_K8_B) f->lay.tile_cols = 16, f->lay.regs = 4;
        if (f->lay.kind == TIR_FRAG_ACC) f->lay.tile_cols = 16, f->lay.regs = 8;
    }
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
static const tir_expr *unit_offset(lf *c, const tir_stmt *s, const fbuf *f,
                                   const tir_buffer_load *l, const tir_expr *colsub) {
    tir_ctx *ctx = c->st->ctx;
    int n = l->nidx;
    const int tile[2] = {f->lay.tile_rows, f->lay.tile_cols};
    const tir_expr *q[2];
    for (int k = 0; k < 2; k++) {
        const tir_expr *x = i32(c, l->indices[n - 2 + k]);
        if (k == 1 && colsub) x = tir_analyzer_simplify(c->an, tir_sub(ctx, x, colsub));
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

static const tir_expr *tile_offset(lf *c, const tir_stmt *s, const fbuf *f,
                                   const tir_buffer_load *l) {
    return unit_offset(c, s, f, l, NULL);
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
static int pos_of(const fbuf *f, int lane, int v, bool col) {
    if (f->swap) return swap_pos(f->lay.kind, lane, v, col);
    return col ? tir_frag_col(&f->lay, lane, v) : tir_frag_row(&f->lay, lane, v);
}

static const tir_expr *lane_pos(lf *c, const fbuf *f, int v, bool col) {
    int base = pos_of(f, 0, v, col), a = pos_of(f, 4, v, col) - base, b = pos_of(f, 1, v, col) - base;
    for (int lane = 0; lane < 32; lane++)
        TIR_ASSERT(pos_of(f, lane, v, col) == base + a * (lane / 4) + b * (lane % 4));
    tir_ctx *ctx = c->st->ctx;
    const tir_expr *lane = (const tir_expr *)c->lane;
    const tir_expr *e = k32(c, base);
    if (a) e = tir_add(ctx, e, tir_mul(ctx, k32(c, a), tir_floordiv(ctx, lane, k32(c, 4))));
    if (b) e = tir_add(ctx, e, tir_mul(ctx, k32(c, b), tir_floormod(ctx, lane, k32(c, 4))));
    return e;
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

/* One register's copy: register ri = S[element] inside S's shape, else 0
 * (a load); or D[element] = register ri inside D's shape (store), where
 * the element is l (a tile origin) moved by (row, col) in its last two
 * dimensions. */
static const tir_stmt *copy_elem(lf *c, const fbuf *f, const tir_expr *ri,
                                 const tir_buffer_load *l, const tir_expr *row,
                                 const tir_expr *col, bool store) {
    tir_ctx *ctx = c->st->ctx;
    const tir_buffer *b = l->buffer;
    int n = l->nidx;
    const tir_expr **idx = IR_NEWN(ctx, const tir_expr *, n);
    for (int d = 0; d < n; d++) idx[d] = l->indices[d];
    idx[n - 2] = tir_add(ctx, i32(c, idx[n - 2]), row);
    idx[n - 1] = tir_add(ctx, i32(c, idx[n - 1]), col);
    const tir_expr *inside = tir_and(ctx, tir_lt(ctx, idx[n - 2], i32(c, b->shape[n - 2])),
                                     tir_lt(ctx, idx[n - 1], i32(c, b->shape[n - 1])));
    if (store) {
        const tir_expr *val = tir_load(ctx, f->local, 1, &ri);
        if (!tir_dtype_eq(b->dtype, val->dtype)) val = tir_cast_new(ctx, b->dtype, val);
        return tir_if_new(ctx, inside, tir_store(ctx, b, val, n, idx), NULL);
    }
    const tir_expr *val = tir_load(ctx, b, n, idx);
    if (!tir_dtype_eq(f->frag->dtype, val->dtype)) val = tir_cast_new(ctx, f->frag->dtype, val);
    const tir_expr *zero = tir_cast_new(ctx, f->frag->dtype, k32(c, 0));
    return tir_if_new(ctx, inside, tir_store(ctx, f->local, val, 1, &ri),
                      tir_store(ctx, f->local, zero, 1, &ri));
}

/* Per lane, every register v of the tile at o: copy_elem of element
 * (tir_frag_row(l, v), tir_frag_col(l, v)) of the tile at l. */
static const tir_stmt *expand_copy(lf *c, const fbuf *f, const tir_expr *o,
                                   const tir_buffer_load *l, bool store) {
    tir_ctx *ctx = c->st->ctx;
    const tir_stmt **st = IR_NEWN(ctx, const tir_stmt *, f->lay.regs);
    for (int v = 0; v < f->lay.regs; v++)
        st[v] = copy_elem(c, f, tir_add(ctx, o, k32(c, v)), l, lane_pos(c, f, v, false),
                          lane_pos(c, f, v, true), store);
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

static int row_elems(const fbuf *f) { return lower_ldmatrix_row(f->frag->dtype); }

/* Can the frag_load of f's tile from l (a tile origin in S) be one
 * ldmatrix: S shared and of f's type, f a 16-bit A or B tile or a TF32 A
 * tile (its four 8x4 quarters are ldmatrix's 8x8 16-bit matrices: no
 * .trans, so not TF32 B, whose registers run down a column; unless
 * tir_lower_opts.no_ldmatrix_tf32), rows contiguous and 16-byte aligned
 * (S's elem_offset and every stride but the last a multiple of 16 bytes,
 * the last 1; codegen aligns a shared allocation's start to 16 bytes), the
 * column a multiple of 16 bytes, and the whole tile inside S's shape (no
 * clipping). */
static bool ldmatrix_ok(lf *c, const fbuf *f, const tir_buffer_load *l) {
    const tir_buffer *b = l->buffer;
    int64_t off = 0;
    if (b->scope != TIR_SCOPE_SHARED || !tir_dtype_eq(b->dtype, f->frag->dtype) || l->nidx < 2)
        return false;
    if (b->elem_offset && (!tir_expr_const_int(b->elem_offset, &off) || off % row_elems(f)))
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
    if (f->swap) { /* matrix m = rows 8 (m / 2) .., columns 4 (m % 2) ..: swap_pos's order */
        idx[n - 2] = tir_add(ctx, i32(c, idx[n - 2]),
                             tir_add(ctx, tir_mul(ctx, k32(c, 8), tir_floordiv(ctx, lane, k32(c, 16))),
                                     tir_floormod(ctx, lane, k32(c, 8))));
        idx[n - 1] = tir_add(ctx, i32(c, idx[n - 1]),
                             tir_mul(ctx, k32(c, 4),
                                     tir_floormod(ctx, tir_floordiv(ctx, lane, k32(c, 8)), k32(c, 2))));
    } else {
        idx[n - 2] = tir_add(ctx, i32(c, idx[n - 2]), tir_floormod(ctx, lane, k32(c, 16)));
        if (x4)
            idx[n - 1] = tir_add(ctx, i32(c, idx[n - 1]),
                                 tir_mul(ctx, k32(c, row_elems(f)), tir_floordiv(ctx, lane, k32(c, 16))));
    }
    const tir_expr *args[4] = {k32(c, a ? 0 : 1), k32(c, x4 ? 4 : 2), reg_addr(c, f, o),
                               addr(c, l->buffer, n, idx)};
    const tir_stmt *s = lower_intrin_stmt(ctx, TIR_INTRIN_LDMATRIX, 4, args);
    return finish(c, 1, &s);
}

/* ------------------------------------------------ TF32 with A and B swapped */

/* mma.sync m16n8k8 takes its 16-row A operand as 4 registers and its B
 * operand as 2; a TF32 B tile (k rows, n contiguous in shared memory) can
 * only be read one element per register (ldmatrix does not transpose
 * 32-bit elements): 16 ld.shared.b32 per k step of a 64-column warp tile.
 * C = A B is also C^T = B^T A^T, so the instruction may take 16 columns of
 * B as its A operand and 8 rows of A as its B operand, writing a 16 (n) x
 * 8 (m) tile of C^T.  Which of the 16 columns is which row of the
 * instruction's A is free; taking row g as column 2g and row g + 8 as
 * column 2g + 1, the instruction's registers a0, a1 (rows g, g + 8 at k =
 * t) are two adjacent floats of one row of B and a2, a3 the two at k = t
 * + 4: two ld.shared.v2 per 16 columns into the register pairs the
 * instruction reads, instead of four ld.shared.b32.  A's 16x8 tile is the
 * instruction's B operand twice (rows 0-7, rows 8-15: b0 at k = t, b1 at
 * t + 4, column g), which one ldmatrix.x4 still loads, its 8x4 matrices in
 * another order.  Per lane (g = lane / 4, t = lane % 4), register v of
 *   A  16x8 unit,  4 regs: row g + 8 (v / 2),          col t + 4 (v % 2)
 *   B  8x16 unit,  4 regs: row t + 4 (v / 2),          col 2g + v % 2
 *   C  16x16 unit, 8 regs: row 8 (v / 4) + 2t + v % 2, col 2g + (v % 4) / 2
 * and the two instructions of a C unit are mma(C[4h ..], B unit, A[2h ..])
 * for h = 0, 1 (rows 8h .. 8h + 7).  A logical 8-column tile p of a B or
 * C unit is the registers whose column is 2g + p, so each tile operation
 * touches every other column of its unit, and the rewrite is only sound
 * where every tile operation on such a B or C fragment handles whole
 * units: the body of a loop x (serial or unrolled, from 0, an even
 * extent) over consecutive tiles (fragment column 8x + c with c a
 * multiple of 16, the other operand's column 8x + d, nothing else
 * depending on x, no index reading memory; an mma's A tile and a fill's
 * value independent of x; a guard around it free of x and of memory
 * reads).  The mma of tile 2x + 1
 * is then the second half of the two instructions emitted for tile 2x.
 * Every buffer an mma_sync links (its C, A and B) must qualify, else none
 * of them swaps.  tir_lower_opts.no_tf32_swap turns it off. */

typedef struct sbuf {
    const tir_buffer *b;
    int kind; /* TIR_FRAG_K8_A, _K8_B or _ACC */
    bool bad, linked;
} sbuf;

typedef struct sscan {
    lf *c;
    tir_analyzer *an;
    const tir_node *pending, *pending_if;
    const tir_for *loop;
    ir_vec links; /* (C, A, B) sbuf* of each mma_sync */
} sscan;

static int swap_pos(int kind, int lane, int v, bool col) {
    int g = lane / 4, t = lane % 4;
    switch (kind) {
    case TIR_FRAG_K8_A: return col ? t + 4 * (v % 2) : g + 8 * (v / 2);
    case TIR_FRAG_K8_B: return col ? 2 * g + v % 2 : t + 4 * (v / 2);
    default: return col ? 2 * g + (v % 4) / 2 : 8 * (v / 4) + 2 * t + v % 2;
    }
}

static sbuf *find_sbuf(const lf *c, const tir_buffer *b) {
    for (int i = 0; i < c->swaps.n; i++) {
        sbuf *e = (sbuf *)c->swaps.items[i];
        if (e->b == b) return e;
    }
    return NULL;
}

static bool buf_swaps(const lf *c, const tir_buffer *b) {
    const sbuf *e = c->swapping ? find_sbuf(c, b) : NULL;
    return e && !e->bad;
}

static bool load_pre(tir_visitor *v, const tir_node *n) {
    if (n->kind == TIR_KIND_BUFFER_LOAD) *(bool *)v->user = true;
    return true;
}

/* Does e read memory?  A guard or a store's index that does could differ
 * between a unit's two tiles (the first tile's store may change what the
 * second one's reads), which the swapped code evaluates once for both. */
static bool reads_memory(const tir_expr *e) {
    bool any = false;
    tir_visitor v = {.pre = load_pre, .user = &any};
    tir_visit(&v, e);
    return any;
}

/* e = 8 x + r, r free of x: r, or NULL. */
static const tir_expr *step8_rest(sscan *g, const tir_expr *e, const tir_var *x) {
    tir_ctx *ctx = g->c->st->ctx;
    const tir_expr *xe = (const tir_expr *)x;
    if (!tir_dtype_eq(xe->dtype, TIR_I32)) xe = tir_cast_new(ctx, TIR_I32, xe);
    const tir_expr *r =
        tir_analyzer_simplify(g->an, tir_sub(ctx, i32(g->c, e), tir_mul(ctx, k32(g->c, 8), xe)));
    return tir_uses_var(r, x) ? NULL : r;
}

/* Operand l in loop x: column 8x + r (r a multiple of 16 when aligned),
 * the other indices free of x. */
static bool unit_operand(sscan *g, const tir_buffer_load *l, const tir_var *x, bool aligned) {
    if (!l || l->nidx < 2) return false;
    for (int d = 0; d < l->nidx; d++)
        if ((d < l->nidx - 1 && tir_uses_var(l->indices[d], x)) || reads_memory(l->indices[d]))
            return false;
    const tir_expr *r = step8_rest(g, l->indices[l->nidx - 1], x);
    tir_ctx *ctx = g->c->st->ctx;
    return r && (!aligned || tir_analyzer_can_prove(g->an, tir_eq(ctx, tir_floormod(ctx, r, k32(g->c, 16)),
                                                                   k32(g->c, 0))));
}

/* Is `call`, run by loop f (NULL: not the whole body of a loop), in unit form? */
static bool unit_form(sscan *g, const tir_for *f, const tir_call *call) {
    int64_t lo = -1, ext = 0;
    if (!f || (f->kind != TIR_FOR_SERIAL && f->kind != TIR_FOR_UNROLLED) ||
        !tir_expr_const_int(f->min, &lo) || lo != 0 || !tir_expr_const_int(f->extent, &ext) ||
        ext <= 0 || ext % 2)
        return false;
    const tir_var *x = f->var;
    switch (call->op) {
    case TIR_INTRIN_FRAG_FILL:
        return unit_operand(g, addr_load(call, 0), x, true) && !tir_uses_var(call->args[1], x);
    case TIR_INTRIN_FRAG_LOAD:
    case TIR_INTRIN_FRAG_STORE:
        return unit_operand(g, addr_load(call, 0), x, true) &&
               unit_operand(g, addr_load(call, 1), x, false);
    default: {
        const tir_buffer_load *a = addr_load(call, 1);
        return a && !tir_uses_var((const tir_expr *)a, x) &&
               unit_operand(g, addr_load(call, 0), x, true) &&
               unit_operand(g, addr_load(call, 2), x, true);
    }
    }
}

/* The tile operation loop f runs as its whole body, possibly under a
 * guard free of f's variable and of memory reads, without else (*guard),
 * or NULL. */
static const tir_stmt *unit_body(const tir_for *f, const tir_if **guard) {
    const tir_stmt *b = f->body;
    *guard = NULL;
    if (b->kind == TIR_KIND_IF) {
        const tir_if *i = (const tir_if *)b;
        if (i->else_s || tir_uses_var(i->cond, f->var) || reads_memory(i->cond)) return NULL;
        *guard = i;
        b = i->then_s;
    }
    const tir_call *call =
        b->kind == TIR_KIND_EVALUATE ? tir_as_tir_call(((const tir_evaluate *)b)->value) : NULL;
    return call && is_tile_op(call->op) ? b : NULL;
}

static sbuf *operand_sbuf(const lf *c, const tir_call *call, int i) {
    const tir_buffer_load *l = addr_load(call, i);
    return l ? find_sbuf(c, l->buffer) : NULL;
}

/* wgmma: C and B must swap (its registers are the swapped layout's), and
 * it handles whole units by itself: C's and B's columns multiples of 16. */
static void swap_wgmma(sscan *g, const tir_call *call, sbuf *x) {
    sbuf *b = operand_sbuf(g->c, call, 2);
    const tir_buffer_load *lc = addr_load(call, 0), *lb = addr_load(call, 2);
    tir_ctx *ctx = g->c->st->ctx;
    bool ok = x && b && x->kind == TIR_FRAG_ACC && b->kind == TIR_FRAG_K8_B;
    for (int i = 0; ok && i < 2; i++) {
        const tir_buffer_load *l = i ? lb : lc;
        const tir_expr *col = i32(g->c, l->indices[l->nidx - 1]);
        ok = !reads_memory(col) &&
             tir_analyzer_can_prove(g->an, tir_eq(ctx, tir_floormod(ctx, col, k32(g->c, 16)),
                                                  k32(g->c, 0)));
    }
    sbuf *two[2] = {x, b};
    for (int i = 0; i < 2; i++)
        if (two[i]) two[i]->linked = true, two[i]->bad |= !ok;
    if (x && b) {
        ir_vec_push(&g->links, x);
        ir_vec_push(&g->links, b);
        ir_vec_push(&g->links, b);
    }
}

static void swap_op(sscan *g, const tir_call *call, bool direct) {
    sbuf *x = operand_sbuf(g->c, call, 0);
    if (call->op == TIR_INTRIN_WGMMA) {
        swap_wgmma(g, call, x);
        return;
    }
    if (call->op == TIR_INTRIN_MMA_SYNC) {
        sbuf *a = operand_sbuf(g->c, call, 1), *b = operand_sbuf(g->c, call, 2);
        bool ok = x && a && b && x->kind == TIR_FRAG_ACC && a->kind == TIR_FRAG_K8_A &&
                  b->kind == TIR_FRAG_K8_B && direct && unit_form(g, g->loop, call);
        sbuf *three[3] = {x, a, b};
        for (int i = 0; i < 3; i++) {
            if (!three[i]) continue;
            three[i]->linked = true;
            if (!ok) three[i]->bad = true;
        }
        if (x && a && b) {
            ir_vec_push(&g->links, x);
            ir_vec_push(&g->links, a);
            ir_vec_push(&g->links, b);
        }
        return;
    }
    /* A's own tile operations may take any form */
    if (x && x->kind != TIR_FRAG_K8_A && !(direct && unit_form(g, g->loop, call))) x->bad = true;
}

static bool swap_pre(tir_visitor *v, const tir_node *n) {
    sscan *g = v->user;
    bool direct = n == g->pending;
    if (tir_kind_is_stmt(n->kind) && n != g->pending_if) g->pending = NULL;
    if (n->kind == TIR_KIND_FOR) {
        const tir_if *guard = NULL;
        g->loop = (const tir_for *)n;
        g->pending = (const tir_node *)unit_body(g->loop, &guard);
        g->pending_if = (const tir_node *)guard;
    } else if (n->kind == TIR_KIND_ALLOCATE) {
        const tir_buffer *b = ((const tir_allocate *)n)->buffer;
        tir_frag_layout lay;
        int64_t w = 0;
        if (!tir_frag_layout_of(b->scope, b->dtype, &lay) || find_sbuf(g->c, b) ||
            (lay.kind != TIR_FRAG_K8_A && lay.kind != TIR_FRAG_K8_B && lay.kind != TIR_FRAG_ACC))
            return true;
        sbuf *e = IR_NEW(g->c->st->ctx, sbuf);
        e->b = b, e->kind = lay.kind;
        e->bad = b->ndim < 2 || b->strides || !tir_expr_const_int(b->shape[b->ndim - 1], &w) ||
                 (lay.kind != TIR_FRAG_K8_A && w % 16);
        ir_vec_push(&g->c->swaps, e);
    } else if (n->kind == TIR_KIND_EVALUATE) {
        const tir_call *call = tir_as_tir_call(((const tir_evaluate *)n)->value);
        if (call && is_tile_op(call->op)) swap_op(g, call, direct);
    }
    return true;
}

/* Decides c->swaps: true when some buffer swaps. */
static bool swap_scan(lf *c, const tir_stmt *body) {
    sscan g = {.c = c, .an = tir_analyzer_create(c->st->ctx)};
    tir_visitor v = {.pre = swap_pre, .user = &g};
    tir_visit(&v, body);
    for (bool changed = true; changed;) {
        changed = false;
        for (int i = 0; i + 2 < g.links.n; i += 3) {
            sbuf *t[3] = {(sbuf *)g.links.items[i], (sbuf *)g.links.items[i + 1],
                          (sbuf *)g.links.items[i + 2]};
            bool bad = t[0]->bad || t[1]->bad || t[2]->bad;
            for (int k = 0; k < 3; k++)
                if (bad && !t[k]->bad) t[k]->bad = changed = true;
        }
    }
    bool any = false;
    for (int i = 0; i < c->swaps.n; i++) {
        sbuf *e = (sbuf *)c->swaps.items[i];
        e->bad |= !e->linked;
        any |= !e->bad;
    }
    ir_vec_free(&g.links);
    tir_analyzer_destroy(g.an);
    return any;
}

/* Which 8-column half p (0 or 1) of its unit the tile at fragment column
 * fc is: floormod(fc / 8, 2), simplified. */
static const tir_expr *half_of(lf *c, const tir_expr *fc) {
    tir_ctx *ctx = c->st->ctx;
    return tir_analyzer_simplify(
        c->an, tir_floormod(ctx, tir_floordiv(ctx, i32(c, fc), k32(c, 8)), k32(c, 2)));
}

/* Half p of a swapped B or C unit at register o, the tile's origin in the
 * other buffer at l: per register, load (B) or store (C) the element
 * (row + r, column - 8p + 2g + p), clipped at l's buffer; fill: value. */
static const tir_stmt *expand_half(lf *c, const fbuf *f, const tir_expr *o, const tir_expr *p,
                                   const tir_buffer_load *l, const tir_expr *value, bool store) {
    tir_ctx *ctx = c->st->ctx;
    bool acc = f->lay.kind == TIR_FRAG_ACC;
    int nr = acc ? 4 : 2;
    const tir_stmt **st = IR_NEWN(ctx, const tir_stmt *, nr);
    const tir_expr *lane = (const tir_expr *)c->lane;
    const tir_expr *g = tir_floordiv(ctx, lane, k32(c, 4)), *t = tir_floormod(ctx, lane, k32(c, 4));
    for (int s = 0; s < nr; s++) {
        /* B: v = 2s + p (row t + 4s); C: v = 4h + 2p + e (row 8h + 2t + e) */
        int h = s / 2, e = s % 2;
        const tir_expr *vreg = acc ? tir_add(ctx, k32(c, 4 * h + e), tir_mul(ctx, k32(c, 2), p))
                                   : tir_add(ctx, k32(c, 2 * s), p);
        const tir_expr *ri = tir_add(ctx, o, vreg);
        if (value) {
            const tir_expr *val = value;
            if (!tir_dtype_eq(val->dtype, f->frag->dtype)) val = tir_cast_new(ctx, f->frag->dtype, val);
            st[s] = tir_store(ctx, f->local, val, 1, &ri);
            continue;
        }
        const tir_expr *row = acc ? tir_add(ctx, k32(c, 8 * h + e), tir_mul(ctx, k32(c, 2), t))
                                  : tir_add(ctx, t, k32(c, 4 * s));
        const tir_expr *col = tir_add(ctx, tir_mul(ctx, k32(c, 2), g), tir_mul(ctx, k32(c, -7), p));
        st[s] = copy_elem(c, f, ri, l, row, col, store);
    }
    return finish(c, nr, st);
}

/* A tile operation on swapped fragments (x its fragment operand). */
static const tir_stmt *expand_swapped(lf *c, const tir_stmt *s, const tir_call *call,
                                      const fbuf *f, const tir_buffer_load *x,
                                      const tir_buffer_load *y, const tir_buffer_load *z) {
    tir_ctx *ctx = c->st->ctx;
    const tir_expr *fc = x->indices[x->nidx - 1], *p = half_of(c, fc);
    const tir_expr *o = unit_offset(c, s, f, x, tir_mul(ctx, k32(c, 8), p));
    if (!o) return s;
    switch (call->op) {
    case TIR_INTRIN_FRAG_FILL: return expand_half(c, f, o, p, NULL, call->args[1], false);
    case TIR_INTRIN_FRAG_LOAD: return expand_half(c, f, o, p, y, NULL, false);
    case TIR_INTRIN_FRAG_STORE: return expand_half(c, f, o, p, y, NULL, true);
    default: break;
    }
    /* mma_sync of the unit's first tile: both instructions; the second
     * tile's (p = 1) is in them (unit form) */
    const fbuf *fa = find_fbuf(c, y->buffer), *fb = find_fbuf(c, z->buffer);
    const tir_expr *oa = tile_offset(c, s, fa, y);
    const tir_expr *pb = half_of(c, z->indices[z->nidx - 1]);
    const tir_expr *ob = oa ? unit_offset(c, s, fb, z, tir_mul(ctx, k32(c, 8), pb)) : NULL;
    if (!oa || !ob) return s;
    if (!provable(c, tir_eq(ctx, p, k32(c, 0))) || !provable(c, tir_eq(ctx, pb, k32(c, 0)))) {
        LF_FAIL(c, c->in, s, "lower_fragments: internal: a swapped mma_sync of the second tile "
                             "of a unit was not dropped");
        return s;
    }
    const tir_stmt *two[2];
    for (int h = 0; h < 2; h++) {
        const tir_expr *args[3] = {reg_addr(c, f, tir_add(ctx, o, k32(c, 4 * h))), reg_addr(c, fb, ob),
                                   reg_addr(c, fa, tir_add(ctx, oa, k32(c, 2 * h)))};
        two[h] = lower_intrin_stmt(ctx, TIR_INTRIN_MMA_SYNC, 3, args);
    }
    return tir_seq_new(ctx, 2, two);
}

/* A loop running a tile operation on swapped B or C fragments (unit form:
 * the scan checked it) as x = 2 xg + q: loads, stores and fills as a loop
 * q over the unit's two tiles inside (vector_group then makes one vector
 * access of each register pair), mma_sync as the first tile's only; NULL
 * for any other loop. */
static const tir_stmt *split_unit_loop(lf *c, const tir_for *f) {
    const tir_if *guard = NULL;
    const tir_stmt *op = unit_body(f, &guard);
    const tir_call *call = op ? tir_as_tir_call(((const tir_evaluate *)op)->value) : NULL;
    const tir_buffer_load *x = call ? addr_load(call, 0) : NULL;
    const fbuf *fx = x ? find_fbuf(c, x->buffer) : NULL;
    int64_t ext = 0;
    if (!fx || !fx->swap || fx->lay.kind == TIR_FRAG_K8_A || call->op == TIR_INTRIN_WGMMA ||
        !tir_expr_const_int(f->extent, &ext))
        return NULL;
    tir_ctx *ctx = c->st->ctx;
    tir_dtype vt = f->var->base.dtype;
    const tir_var *xg = tir_var_new(ctx, f->var->name, vt);
    const tir_expr *two_xg = tir_mul(ctx, tir_int(ctx, vt, 2), (const tir_expr *)xg);
    const tir_stmt *in;
    if (call->op == TIR_INTRIN_MMA_SYNC) {
        in = (const tir_stmt *)tir_substitute(ctx, op, 1, &f->var, &two_xg);
        c->group_q = xg; /* not split again */
    } else {
        const tir_var *q = tir_var_new(ctx, "q", vt);
        const tir_expr *val = tir_add(ctx, two_xg, (const tir_expr *)q);
        const tir_stmt *body = (const tir_stmt *)tir_substitute(ctx, op, 1, &f->var, &val);
        c->group_q = q;
        in = tir_for_new(ctx, q, tir_int(ctx, vt, 0), tir_int(ctx, vt, 2), f->kind, NULL, 0, NULL,
                         body);
    }
    const tir_stmt *out = tir_for_new(ctx, xg, f->min, tir_int(ctx, f->extent->dtype, ext / 2),
                                      f->kind, f->thread_tag, f->nannots, f->annots, in);
    return guard ? tir_if_new(ctx, guard->cond, out, NULL) : out;
}

/* The per-lane form of a unit's loads or stores (loop q over its two
 * tiles; its body the registers' statements) as one vectorized loop per
 * register pair: ld.shared.v2 into (a0, a1) and (a2, a3); st.global.v2 of
 * a C row's two columns 2g, 2g + 1.  With clipping left (an if per
 * element) the loop stays as it is. */
static const tir_stmt *vector_group(lf *c, const tir_for *q) {
    const tir_stmt *b = q->body;
    int n = b->kind == TIR_KIND_SEQ ? ((const tir_seq *)b)->n : 1;
    const tir_stmt *const *st = b->kind == TIR_KIND_SEQ ? ((const tir_seq *)b)->stmts : &b;
    for (int i = 0; i < n; i++)
        if (st[i]->kind != TIR_KIND_BUFFER_STORE) return (const tir_stmt *)q;
    tir_ctx *ctx = c->st->ctx;
    const tir_stmt **out = IR_NEWN(ctx, const tir_stmt *, n);
    for (int i = 0; i < n; i++) {
        const tir_var *v = tir_var_new(ctx, q->var->name, q->var->base.dtype);
        const tir_expr *ve = (const tir_expr *)v;
        const tir_stmt *s1 = (const tir_stmt *)tir_substitute(ctx, st[i], 1, &q->var, &ve);
        out[i] = tir_for_new(ctx, v, q->min, q->extent, TIR_FOR_VECTORIZED, NULL, 0, NULL, s1);
    }
    return tir_seq_new(ctx, n, out);
}

/* ------------------------------------------------------------ wgmma */

/* The four warps of a warpgroup issue one wgmma together, with one shared
 * tile: so it must run in every warp (no `if` around it) and its tile's
 * origin must not depend on the warp (threadIdx.y / z). */
static bool wgmma_uniform(lf *c, const tir_stmt *s, const tir_buffer_load *a) {
    tir_ctx *ctx = c->st->ctx;
    if (c->in_if || c->in_wloop) {
        LF_FAIL(c, c->in, s,
                "lower_fragments: wgmma %s: the four warps of a warpgroup issue it together, so "
                "it must run unconditionally, as often in every warp (a ragged tile needs its "
                "guard outside the k loop, or mma_sync)",
                c->in_if ? "under an if" : "in a loop whose bounds depend on the warp");
        return false;
    }
    for (int d = 0; d < a->nidx; d++)
        for (int w = 0; w < c->warp_vars.n; w++)
            if (tir_uses_var(a->indices[d], c->warp_vars.items[w])) {
                LF_FAIL(c, c->in, s,
                        "lower_fragments: wgmma reads %s at %s, which depends on the warp (%s): "
                        "the four warps of a warpgroup read one shared tile",
                        a->buffer->name, tir_print(ctx, a->indices[d]),
                        ((const tir_var *)c->warp_vars.items[w])->name);
                return false;
            }
    return true;
}

/* wgmma's shared operand a = S[.., i0, k0]: S float32 of (rows, 32) with
 * rows a multiple of 8 (flatten swizzles it for the descriptor's 128-byte
 * mode: 8-row groups of 1024 bytes), i0 a multiple of 8, k0 of 8, and the
 * R rows and 8 columns inside S. */
static bool wgmma_tile_ok(lf *c, const tir_stmt *s, const tir_buffer_load *a, int64_t R) {
    tir_ctx *ctx = c->st->ctx;
    const tir_buffer *b = a->buffer;
    int64_t rows = 0, cols = 0;
    const char *why = NULL;
    if (b->scope != TIR_SCOPE_SHARED || !tir_dtype_eq(b->dtype, TIR_F32))
        why = "a float32 buffer in shared memory";
    else if (b->ndim != 2 || b->strides || !tir_expr_const_int(b->shape[0], &rows) ||
             !tir_expr_const_int(b->shape[1], &cols) || cols != 32 || rows % 8)
        why = "of shape (8n, 32) without padding (rows of one 128-byte segment, swizzled for "
              "the descriptor)";
    else {
        const tir_expr *i0 = i32(c, a->indices[0]), *k0 = i32(c, a->indices[1]);
        if (!provable(c, tir_eq(ctx, tir_floormod(ctx, i0, k32(c, 8)), k32(c, 0))) ||
            !provable(c, tir_eq(ctx, tir_floormod(ctx, k0, k32(c, 8)), k32(c, 0))))
            why = "read from a row and a column that are multiples of 8";
        else if (!provable(c, tir_le(ctx, tir_add(ctx, i0, k32(c, R)), k32(c, rows))) ||
                 !provable(c, tir_le(ctx, k32(c, 0), i0)))
            why = "large enough for the R rows the wgmma reads";
        else if (!provable(c, tir_le(ctx, tir_add(ctx, k0, k32(c, 8)), k32(c, cols))) ||
                 !provable(c, tir_le(ctx, k32(c, 0), k0)))
            why = "read at a column k0 with k0 .. k0 + 7 inside its 32 (the 8 k of one wgmma)";
    }
    if (!why) return true;
    LF_FAIL(c, c->in, s, "lower_fragments: wgmma's shared operand %s (shape %s) must be %s",
            b->name, shape_str(ctx, b), why);
    return false;
}

/* wgmma(C[r0, c0], S[i0, k0], B[q0, c1], R) as wgmma_sync(address_of(L[o]),
 * cs, address_of(F[p]), address_of(S[i0, k0]), R): the R/16 accumulator
 * units of rows r0 .. r0 + R at register offsets o + u cs (swapped
 * layout: the wgmma's result registers of a 16-row unit are the unit's 8
 * registers in order, docs/tensor-cores.md), B's 8x16 unit at p. */
static const tir_stmt *expand_wgmma(lf *c, const tir_stmt *s, const tir_call *call) {
    tir_ctx *ctx = c->st->ctx;
    const tir_buffer_load *x = operand(c, s, call, 0, 1, TIR_SCOPE_FRAG_ACC);
    const tir_buffer_load *a = operand(c, s, call, 1, 0, 0);
    const tir_buffer_load *z = operand(c, s, call, 2, 1, TIR_SCOPE_FRAG_B);
    int64_t R = 0;
    if (!x || !a || !z || c->err != TIR_OK) return s;
    const fbuf *f = find_fbuf(c, x->buffer), *fb = find_fbuf(c, z->buffer);
    if (!tir_expr_const_int(call->args[3], &R) || R < 16 || R > 256 || R % 16) {
        LF_FAIL(c, c->in, s, "lower_fragments: wgmma of %s rows: this lowering takes 16 to 256 "
                             "rows in steps of 16",
                tir_print(ctx, call->args[3]));
        return s;
    }
    for (int i = 0; i < 2; i++) { /* whole 16-column strips, said as such */
        const tir_buffer_load *l = i ? z : x;
        const tir_expr *col = i32(c, l->indices[l->nidx - 1]);
        if (!provable(c, tir_eq(ctx, tir_floormod(ctx, col, k32(c, 16)), k32(c, 0)))) {
            LF_FAIL(c, c->in, s, "lower_fragments: wgmma's %s %s is read from column %s, which is "
                                 "not provably a multiple of 16 (a whole 16-column strip)",
                    i ? "operand" : "accumulator", l->buffer->name, tir_print(ctx, col));
            return s;
        }
    }
    if (!f->swap || !fb->swap || !tir_dtype_eq(fb->frag->dtype, TIR_F32)) {
        LF_FAIL(c, c->in, s,
                "lower_fragments: wgmma's accumulator %s and operand %s must be float32 "
                "fragments in the swapped TF32 layout: every tile operation on them must "
                "handle whole 16-column units (tir_lower_opts.no_tf32_swap unset)",
                x->buffer->name, z->buffer->name);
        return s;
    }
    if (!wgmma_uniform(c, s, a) || !wgmma_tile_ok(c, s, a, R)) return s;
    const tir_expr *o = tile_offset(c, s, f, x), *ob = o ? tile_offset(c, s, fb, z) : NULL;
    if (!ob) return s;
    /* unit u's offset, o + u cs with one constant cs */
    int64_t cs = 8;
    for (int u = 1; u < R / 16; u++) {
        const tir_expr **idx = IR_NEWN(ctx, const tir_expr *, x->nidx);
        memcpy(idx, x->indices, sizeof *idx * (size_t)x->nidx);
        idx[x->nidx - 2] = tir_add(ctx, i32(c, idx[x->nidx - 2]), k32(c, 16 * u));
        const tir_expr *ou =
            tile_offset(c, s, f, (const tir_buffer_load *)tir_load(ctx, x->buffer, x->nidx, idx));
        const tir_expr *d = ou ? tir_analyzer_simplify(c->an, tir_sub(ctx, ou, o)) : NULL;
        int64_t dv = 0;
        if (!d || !tir_expr_const_int(d, &dv) || (u > 1 && dv != u * cs) || dv < 8) {
            LF_FAIL(c, c->in, s, "lower_fragments: wgmma's accumulator %s: the units of its "
                                 "rows are not at one constant register stride",
                    x->buffer->name);
            return s;
        }
        if (u == 1) cs = dv;
    }
    const tir_expr *args[5] = {reg_addr(c, f, o), k32(c, cs), reg_addr(c, fb, ob),
                               addr(c, a->buffer, a->nidx, a->indices), k32(c, R)};
    return lower_intrin_stmt(ctx, TIR_INTRIN_WGMMA_SYNC, 5, args);
}

/* One tile operation: operands checked, then its per-lane form. */
static const tir_stmt *expand(lf *c, const tir_stmt *s, const tir_call *call) {
    const fbuf *f = NULL;
    const tir_buffer_load *x = NULL, *y = NULL, *z = NULL;
    if (call->op == TIR_INTRIN_WGMMA) return expand_wgmma(c, s, call);
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
    if (f && f->swap && f->lay.kind != TIR_FRAG_K8_A)
        return (call->op == TIR_INTRIN_FRAG_FILL || y) ? expand_swapped(c, s, call, f, x, y, z) : s;
    const tir_expr *o = tile_offset(c, s, f, x);
    if (!o) return s;
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
    const tir_stmt *split = c->swapping && f->var != c->group_q ? split_unit_loop(c, f) : NULL;
    if (split) return (const tir_node *)tir_mutate_stmt(m, split);
    tir_analyzer_bind(c->an, f->var, f->min, f->extent);
    bool tx = lower_is_thread_loop(f) && strcmp(f->thread_tag, "threadIdx.x") == 0;
    bool warp = lower_is_thread_loop(f) && (strcmp(f->thread_tag, "threadIdx.y") == 0 ||
                                            strcmp(f->thread_tag, "threadIdx.z") == 0);
    const tir_for *outer = c->tx;
    if (tx) c->in_tx++, c->tx = f;
    bool wloop = false;
    for (int w = 0; w < c->warp_vars.n; w++)
        wloop |= tir_uses_var(f->min, c->warp_vars.items[w]) ||
                 tir_uses_var(f->extent, c->warp_vars.items[w]);
    if (warp) ir_vec_push(&c->warp_vars, (void *)f->var);
    c->in_wloop += wloop;
    const tir_node *r = tir_mutate_default(m, n);
    c->in_wloop -= wloop;
    if (warp) c->warp_vars.n--;
    if (tx) c->in_tx--, c->tx = outer;
    if (f->var == c->group_q && r != n && c->err == TIR_OK)
        return (const tir_node *)vector_group(c, (const tir_for *)r);
    return r;
}

static const tir_node *on_if(tir_mutator *m, const tir_node *n) {
    lf *c = m->user;
    c->in_if++;
    const tir_node *r = tir_mutate_default(m, n);
    c->in_if--;
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
    c.tx = NULL;
    if (!st->opts.no_tf32_swap) c.swapping = swap_scan(&c, in->body);
    c.an = tir_analyzer_create(st->ctx);
    c.lane = tir_var_new(st->ctx, "lane", TIR_I32);
    tir_analyzer_bind_const(c.an, c.lane, 0, 32);
    tir_mutator m = {.ctx = st->ctx, .user = &c};
    m.on[TIR_KIND_FOR] = on_for;
    m.on[TIR_KIND_ALLOCATE] = on_alloc;
    m.on[TIR_KIND_EVALUATE] = on_eval;
    m.on[TIR_KIND_SEQ] = on_seq;
    m.on[TIR_KIND_IF] = on_if;
    m.on[TIR_KIND_BUFFER_LOAD] = on_access;
    m.on[TIR_KIND_BUFFER_STORE] = on_access;
    const tir_stmt *body = tir_mutate_stmt(&m, in->body);
    tir_analyzer_destroy(c.an);
    ir_vec_free(&c.bufs);
    ir_vec_free(&c.swaps);
    ir_vec_free(&c.warp_vars);
    if (c.err != TIR_OK) return c.err;
    *out = lower_with_body(st->ctx, in, body);
    return TIR_OK;
}
