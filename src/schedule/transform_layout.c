/* transform_layout.c: change the layout of an allocated buffer through an
 * index map (TVM's TransformLayout), e.g. "lambda i, k: (k, i)" to make a
 * shared tile k-major, "lambda i: (i // 8, i % 8)" to reshape, or
 * "lambda i, j: (i, (j + i) % 8 + j // 8 * 8)" for a rotation swizzle (the
 * IR has no xor).  The buffer gets the map's image as its new shape and
 * every access to it, in every block (loads, stores, read and write
 * regions, the allocation), goes through the map.
 *
 * Soundness needs the map to be injective on the buffer's domain, so that
 * distinct elements stay distinct.  The map is proven injective by
 * evaluating it at every point of the (constant, bounded) domain and
 * marking a bitmap of the image's bounding box; a pure permutation of the
 * variables needs no enumeration.  The same walk gives the box, which is
 * the new shape, which the image must fill: padding (a box with holes) is
 * refused, because the holes are never written, and cache_read and
 * cache_write copy whole buffers, so a later cache of the buffer would
 * read them (TVM fills them with a pad_value; that would need a fill
 * block, a second writer).  Parameters are refused: their layout is the
 * caller's.
 */
#include <stdlib.h>
#include <string.h>

#include "ir/text_internal.h"
#include "sched_internal.h"

/* Enumeration limits: domain points evaluated, image box bits marked. */
#define LAY_MAX_POINTS (1 << 22)
#define LAY_MAX_BOX (INT64_C(1) << 26)

/* ------------------------------------------------------- map evaluation */

/* True when e is integer arithmetic the evaluator below understands. */
static bool lay_supported(const tir_expr *e) {
    switch (e->kind) {
    case TIR_KIND_INT_IMM:
    case TIR_KIND_VAR: return true;
    case TIR_KIND_ADD:
    case TIR_KIND_SUB:
    case TIR_KIND_MUL:
    case TIR_KIND_FLOORDIV:
    case TIR_KIND_FLOORMOD:
    case TIR_KIND_MIN:
    case TIR_KIND_MAX: {
        const tir_binop *b = (const tir_binop *)e;
        return lay_supported(b->a) && lay_supported(b->b);
    }
    default: return false;
    }
}

typedef struct lay_pt {
    const ir_index_map *m;
    const int64_t *at; /* the point, one value per map variable */
    bool failed;       /* overflow or division by zero */
} lay_pt;

static int64_t lay_floordiv(int64_t x, int64_t y) {
    int64_t q = x / y;
    return (x % y != 0 && (x < 0) != (y < 0)) ? q - 1 : q;
}

static int64_t lay_eval(lay_pt *p, const tir_expr *e) {
    if (p->failed) return 0;
    if (e->kind == TIR_KIND_INT_IMM) return ((const tir_int_imm *)e)->value;
    if (e->kind == TIR_KIND_VAR) {
        for (int k = 0; k < p->m->nvars; k++)
            if (&p->m->vars[k]->base == e) return p->at[k];
        TIR_ASSERT(!"index map variable not found");
    }
    const tir_binop *b = (const tir_binop *)e;
    int64_t x = lay_eval(p, b->a), y = lay_eval(p, b->b), r = 0;
    switch (e->kind) {
    case TIR_KIND_ADD: p->failed |= __builtin_add_overflow(x, y, &r); break;
    case TIR_KIND_SUB: p->failed |= __builtin_sub_overflow(x, y, &r); break;
    case TIR_KIND_MUL: p->failed |= __builtin_mul_overflow(x, y, &r); break;
    case TIR_KIND_MIN: r = x < y ? x : y; break;
    case TIR_KIND_MAX: r = x > y ? x : y; break;
    case TIR_KIND_FLOORDIV:
    case TIR_KIND_FLOORMOD:
        if (y == 0 || (y == -1 && x == INT64_MIN)) {
            p->failed = true;
            break;
        }
        r = lay_floordiv(x, y);
        if (e->kind == TIR_KIND_FLOORMOD) r = x - r * y;
        break;
    default: TIR_ASSERT(!"unsupported index map node");
    }
    /* Values outside int32 would wrap in the lowered code. */
    if (r < INT32_MIN || r > INT32_MAX) p->failed = true;
    return r;
}

/* Advances pt through the box [0, ext) in row-major order; false when done. */
static bool lay_next(int n, const int64_t *ext, int64_t *pt) {
    for (int d = n - 1; d >= 0; d--) {
        if (++pt[d] < ext[d]) return true;
        pt[d] = 0;
    }
    return false;
}

/* What proving the map finds. */
typedef struct lay_image {
    int64_t *hi;      /* per output: largest value + 1 (the new shape) */
    int64_t box;      /* product of hi */
    int64_t npoints;  /* domain size */
    bool bad_point;   /* overflow or division by zero at `at` */
    bool negative;    /* some output < 0 at `at` */
    int64_t *at, *at2; /* the offending point(s) */
} lay_image;

/* True when every output is a distinct map variable. */
static bool lay_is_permutation(const ir_index_map *m, int *perm) {
    if (m->nouts != m->nvars) return false;
    for (int k = 0; k < m->nouts; k++) {
        perm[k] = -1;
        for (int v = 0; v < m->nvars; v++)
            if (m->outs[k] == &m->vars[v]->base) perm[k] = v;
        if (perm[k] < 0) return false;
        for (int j = 0; j < k; j++)
            if (perm[j] == perm[k]) return false;
    }
    return true;
}

/* Pass 1: the image's bounding box (every output must be >= 0). */
static bool lay_bounds(const ir_index_map *m, const int64_t *ext, lay_image *im) {
    int64_t *pt = im->at;
    memset(pt, 0, sizeof *pt * (size_t)m->nvars);
    for (int k = 0; k < m->nouts; k++) im->hi[k] = 0;
    do {
        lay_pt p = {m, pt, false};
        for (int k = 0; k < m->nouts; k++) {
            int64_t v = lay_eval(&p, m->outs[k]);
            if (p.failed) return !(im->bad_point = true);
            if (v < 0) return !(im->negative = true);
            if (v + 1 > im->hi[k]) im->hi[k] = v + 1;
        }
    } while (lay_next(m->nvars, ext, pt));
    return true;
}

/* Pass 2: marks each image point; false at the first collision, with the
 * two points that collide in at and at2. */
static bool lay_mark(const ir_index_map *m, const int64_t *ext, lay_image *im) {
    uint8_t *bits = ir_xcalloc((size_t)(im->box / 8 + 1), 1);
    int64_t *pt = im->at;
    memset(pt, 0, sizeof *pt * (size_t)m->nvars);
    bool ok = true;
    do {
        lay_pt p = {m, pt, false};
        int64_t lin = 0;
        for (int k = 0; k < m->nouts; k++) lin = lin * im->hi[k] + lay_eval(&p, m->outs[k]);
        if (bits[lin / 8] & (1u << (lin % 8))) {
            ok = false;
            break;
        }
        bits[lin / 8] |= (uint8_t)(1u << (lin % 8));
    } while (lay_next(m->nvars, ext, pt));
    free(bits);
    if (ok) return true;
    /* Find the earlier point with the same image, for the message. */
    int64_t *q = im->at2;
    memset(q, 0, sizeof *q * (size_t)m->nvars);
    do {
        lay_pt a = {m, pt, false}, b = {m, q, false};
        bool same = true;
        for (int k = 0; k < m->nouts && same; k++)
            same = lay_eval(&a, m->outs[k]) == lay_eval(&b, m->outs[k]);
        if (same) break;
    } while (lay_next(m->nvars, ext, q));
    return false;
}

static const char *lay_point_str(tir_ctx *ctx, int n, const int64_t *pt) {
    char buf[256];
    size_t len = 0;
    buf[len++] = '(';
    for (int d = 0; d < n && len < sizeof buf - 32; d++)
        len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%lld", d ? ", " : "",
                                (long long)pt[d]);
    snprintf(buf + len, sizeof buf - len, ")");
    return tir_intern(ctx, buf);
}

/* ------------------------------------------------------------ rewriting */

typedef struct lay_rw {
    const ir_index_map *m;
    const tir_buffer *old, *nb;
} lay_rw;

/* The map applied to old indices. */
static const tir_expr *const *lay_apply(tir_ctx *ctx, const lay_rw *r,
                                        const tir_expr *const *idx) {
    const tir_expr **n = IR_NEWN(ctx, const tir_expr *, r->m->nouts);
    for (int k = 0; k < r->m->nouts; k++)
        n[k] = tir_simplify(ctx, (const tir_expr *)tir_substitute(ctx, r->m->outs[k],
                                                                  r->m->nvars, r->m->vars, idx));
    return n;
}

/* The map's image of a region: exact for a point, else a bounding box by
 * relaxing fresh variables over the ranges (the whole buffer when that
 * fails). */
static tir_buffer_region lay_region(tir_ctx *ctx, const lay_rw *r, const tir_buffer_region *reg) {
    int n = reg->ndim, no = r->m->nouts;
    const tir_expr **at = IR_NEWN(ctx, const tir_expr *, n);
    const tir_var **fresh = IR_NEWN(ctx, const tir_var *, n);
    int nfresh = 0;
    tir_analyzer *a = tir_analyzer_create(ctx);
    for (int d = 0; d < n; d++) {
        const tir_range *rg = &reg->ranges[d];
        if (sch_is_const(rg->extent, 1)) {
            at[d] = rg->min;
            continue;
        }
        const tir_var *v = tir_var_new(ctx, r->m->vars[d]->name, r->m->vars[d]->base.dtype);
        tir_analyzer_bind(a, v, rg->min, rg->extent);
        fresh[nfresh++] = v;
        at[d] = &v->base;
    }
    const tir_expr *const *outs = lay_apply(ctx, r, at);
    tir_range *rs = IR_NEWN(ctx, tir_range, no);
    bool ok = true;
    for (int k = 0; k < no && ok; k++) {
        if (nfresh == 0)
            rs[k] = (tir_range){outs[k], tir_int(ctx, outs[k]->dtype, 1)};
        else
            ok = tir_analyzer_relax(a, outs[k], nfresh, fresh, &rs[k]);
    }
    tir_analyzer_destroy(a);
    if (!ok) return tir_region_full(ctx, r->nb);
    return tir_region_new(ctx, r->nb, no, rs);
}

static const tir_node *lay_on_load(tir_mutator *m, const tir_node *n) {
    const lay_rw *r = m->user;
    const tir_buffer_load *l = (const tir_buffer_load *)tir_mutate_default(m, n);
    if (l->buffer != r->old) return (const tir_node *)l;
    return (const tir_node *)tir_load(m->ctx, r->nb, r->m->nouts, lay_apply(m->ctx, r, l->indices));
}

static const tir_node *lay_on_store(tir_mutator *m, const tir_node *n) {
    const lay_rw *r = m->user;
    const tir_buffer_store *s = (const tir_buffer_store *)tir_mutate_default(m, n);
    if (s->buffer != r->old) return (const tir_node *)s;
    return (const tir_node *)tir_store(m->ctx, r->nb, s->value, r->m->nouts,
                                       lay_apply(m->ctx, r, s->indices));
}

static const tir_buffer_region *lay_regions(tir_ctx *ctx, const lay_rw *r, int n,
                                            const tir_buffer_region *regs) {
    if (!sch_region_has(n, regs, r->old)) return regs;
    tir_buffer_region *out = IR_NEWN(ctx, tir_buffer_region, n);
    for (int i = 0; i < n; i++)
        out[i] = regs[i].buffer == r->old ? lay_region(ctx, r, &regs[i]) : regs[i];
    return out;
}

static const tir_node *lay_on_block(tir_mutator *m, const tir_node *n) {
    const lay_rw *r = m->user;
    const tir_block *b = (const tir_block *)tir_mutate_default(m, n);
    tir_block_desc d;
    tir_block_describe(b, &d);
    d.reads = lay_regions(m->ctx, r, b->nreads, b->reads);
    d.writes = lay_regions(m->ctx, r, b->nwrites, b->writes);
    const tir_buffer **allocs = IR_NEWN(m->ctx, const tir_buffer *, b->nallocs);
    bool any = false;
    for (int i = 0; i < b->nallocs; i++) {
        allocs[i] = b->allocs[i] == r->old ? r->nb : b->allocs[i];
        any |= b->allocs[i] == r->old;
    }
    if (any) d.allocs = allocs;
    if (!any && d.reads == b->reads && d.writes == b->writes) return (const tir_node *)b;
    return (const tir_node *)tir_block_new(m->ctx, &d);
}

/* ---------------------------------------------------------- the primitive */

/* Preconditions 1-2: the buffer, allocated in the function. */
static tir_status lay_buffer(sch_call *c, const tir_block *b, const tir_buffer **out) {
    uint32_t rv = c->args[0].rv;
    int64_t idx = c->args[1].i;
    bool is_write = c->args[2].i != 0;
    int n = is_write ? b->nwrites : b->nreads;
    if (idx < 0 || idx >= n)
        return sch_fail(c, TIR_ERR_SCHED_INDEX_OUT_OF_RANGE, rv, b,
                        "buffer index %lld is out of range: block \"%s\" %s %d buffer%s",
                        (long long)idx, b->name, is_write ? "writes" : "reads", n,
                        n == 1 ? "" : "s");
    *out = is_write ? b->writes[idx].buffer : b->reads[idx].buffer;
    if (sch_is_param_buffer(c->sch->func, *out))
        return sch_fail(c, TIR_ERR_SCHED_OUTPUT_BUFFER, rv, b,
                        "buffer %s is a parameter of %s, whose layout the caller fixes; only "
                        "buffers allocated by a block can be transformed",
                        (*out)->name, c->sch->func->name);
    return TIR_OK;
}

/* The map's variables' dtype: the shape's (int32 for a rank-0 buffer). */
static tir_dtype lay_index_dtype(const tir_buffer *buf) {
    return buf->ndim ? buf->shape[0]->dtype : TIR_I32;
}

/* Preconditions 3-5: the map parses, fits the buffer, which is dense and
 * of constant shape (ext receives it). */
static tir_status lay_map(sch_call *c, const tir_block *b, const tir_buffer *buf,
                          ir_index_map *m, int64_t *ext) {
    uint32_t rv = c->args[0].rv;
    const char *text = c->args[3].s;
    tir_dtype dt = lay_index_dtype(buf);
    if (ir_parse_index_map(c->ctx, text, strlen(text), dt, m) != TIR_OK) {
        const char *why = tir_intern(c->ctx, tir_ctx_error(c->ctx));
        return sch_fail(c, TIR_ERR_SCHED_BAD_INDEX_MAP, rv, b, "index map \"%s\" of buffer %s: %s",
                        text, buf->name, why);
    }
    for (int k = 0; k < m->nouts; k++)
        if (!lay_supported(m->outs[k]))
            return sch_fail(c, TIR_ERR_SCHED_BAD_INDEX_MAP, rv, b,
                            "index map \"%s\": output %d is not built from integers, its "
                            "variables, + - * // %% min and max",
                            text, k);
    if (m->nvars != buf->ndim || m->nouts == 0)
        return sch_fail(c, TIR_ERR_SCHED_MAP_ARITY, rv, b,
                        "index map \"%s\" takes %d index%s and gives %d, but buffer %s has "
                        "rank %d (and the result needs at least one dimension)",
                        text, m->nvars, m->nvars == 1 ? "" : "es", m->nouts, buf->name,
                        buf->ndim);
    for (int d = 0; d < buf->ndim; d++) {
        const tir_expr *sh = buf->shape[d];
        ext[d] = sh->kind == TIR_KIND_INT_IMM ? ((const tir_int_imm *)sh)->value : -1;
        if (ext[d] <= 0 || !tir_dtype_eq(sh->dtype, dt) || buf->strides ||
            (buf->elem_offset && !sch_is_const(buf->elem_offset, 0)))
            return sch_fail(c, TIR_ERR_SCHED_LAYOUT_BUFFER, rv, b,
                            "buffer %s must have a positive constant shape of one index type "
                            "and no explicit strides or offset (storage_align it after "
                            "transform_layout)",
                            buf->name);
    }
    return TIR_OK;
}

/* Preconditions 6-8: the image, injective, filling its box.  Fills im->hi
 * (the new shape). */
static tir_status lay_prove(sch_call *c, const tir_block *b, const tir_buffer *buf,
                            const ir_index_map *m, const int64_t *ext, lay_image *im) {
    uint32_t rv = c->args[0].rv;
    const char *text = c->args[3].s;
    int n = m->nvars, no = m->nouts;
    int *perm = IR_NEWN(c->ctx, int, no);
    im->npoints = 1;
    for (int d = 0; d < n; d++) im->npoints *= ext[d]; /* each <= INT32_MAX: checked below */
    if (lay_is_permutation(m, perm)) {
        for (int k = 0; k < no; k++) im->hi[k] = ext[perm[k]];
        im->box = im->npoints;
        return TIR_OK;
    }
    bool ok = im->npoints <= LAY_MAX_POINTS && lay_bounds(m, ext, im);
    im->box = 1;
    for (int k = 0; ok && k < no; k++)
        ok = !__builtin_mul_overflow(im->box, im->hi[k], &im->box) && im->box <= LAY_MAX_BOX;
    if (!ok)
        return sch_fail(c, TIR_ERR_SCHED_LAYOUT_LIMIT, rv, b,
                        "index map \"%s\" on buffer %s: %s", text, buf->name,
                        im->bad_point  ? tir_ctx_sprintf(c->ctx, "overflows or divides by zero "
                                                                "at %s",
                                                        lay_point_str(c->ctx, n, im->at))
                        : im->negative ? tir_ctx_sprintf(c->ctx, "gives a negative index at %s",
                                                        lay_point_str(c->ctx, n, im->at))
                                       : "the domain or the image has too many elements to "
                                         "prove the map injective");
    if (!lay_mark(m, ext, im))
        return sch_fail(c, TIR_ERR_SCHED_MAP_NOT_INJECTIVE, rv, b,
                        "index map \"%s\" sends elements %s and %s of buffer %s to one place",
                        text, lay_point_str(c->ctx, n, im->at2),
                        lay_point_str(c->ctx, n, im->at), buf->name);
    if (im->box != im->npoints)
        return sch_fail(c, TIR_ERR_SCHED_LAYOUT_PADDING, rv, b,
                        "index map \"%s\" maps the %lld elements of buffer %s into a box of "
                        "%lld: padding would leave elements that are never written",
                        text, (long long)im->npoints, buf->name, (long long)im->box);
    return TIR_OK;
}

/* Precondition 9: no call takes the buffer's address (address_of of one
 * of its elements) other than atomic_add's: the tile intrinsics
 * (frag_load, frag_store, mma_sync, frag_fill) and cp_async read or write
 * a region laid out row-major from that address, which the map would not
 * follow (a k-major or swizzled tile read as a row-major one). */
typedef struct lay_addr {
    const tir_buffer *buf;
    const tir_call *hit;
} lay_addr;

static bool lay_addr_pre(tir_visitor *v, const tir_node *n) {
    lay_addr *a = v->user;
    if (a->hit || n->kind != TIR_KIND_CALL) return !a->hit;
    const tir_call *call = (const tir_call *)n;
    if (call->op == TIR_INTRIN_ATOMIC_ADD) return true;
    for (int i = 0; i < call->nargs; i++) {
        const tir_call *ad = tir_as_tir_call(call->args[i]);
        const tir_buffer_load *l =
            ad && ad->op == TIR_INTRIN_ADDRESS_OF && ad->nargs == 1
                ? tir_as_tir_buffer_load(ad->args[0])
                : NULL;
        if (l && l->buffer == a->buf) {
            a->hit = call;
            return false;
        }
    }
    return true;
}

tir_status sch_prim_transform_layout(sch_call *c) {
    const tir_schedule *s = c->sch;
    tir_ctx *ctx = c->ctx;
    const tir_block *b = sch_sref_block(s, sch_block_sref(c, c->args[0].rv));
    const tir_buffer *buf = NULL;
    tir_status st = lay_buffer(c, b, &buf);
    if (st != TIR_OK) return st;
    ir_index_map m;
    int64_t *ext = IR_NEWN(ctx, int64_t, buf->ndim + 1);
    if ((st = lay_map(c, b, buf, &m, ext)) != TIR_OK) return st;
    lay_image im = {.hi = IR_NEWN(ctx, int64_t, m.nouts),
                    .at = IR_NEWN(ctx, int64_t, m.nvars + 1),
                    .at2 = IR_NEWN(ctx, int64_t, m.nvars + 1)};
    if ((st = lay_prove(c, b, buf, &m, ext, &im)) != TIR_OK) return st;
    lay_addr la = {buf, NULL};
    tir_visitor av = {.pre = lay_addr_pre, .user = &la};
    tir_visit(&av, s->func);
    if (la.hit)
        return sch_fail(c, TIR_ERR_SCHED_LAYOUT_BUFFER, c->args[0].rv, b,
                        "buffer %s is passed by address to %s, which accesses a row-major "
                        "region from that address that index map \"%s\" would not follow "
                        "(transform the layout before tensorize)",
                        buf->name, tir_print(ctx, la.hit), c->args[3].s);

    tir_dtype dt = lay_index_dtype(buf);
    const tir_expr **shape = IR_NEWN(ctx, const tir_expr *, m.nouts);
    for (int k = 0; k < m.nouts; k++) shape[k] = tir_int(ctx, dt, im.hi[k]);
    tir_buffer_desc d;
    tir_buffer_describe(buf, &d);
    d.ndim = m.nouts;
    d.shape = shape;
    d.strides = NULL;
    lay_rw r = {&m, buf, tir_buffer_new(ctx, &d)};
    tir_mutator mu = {.ctx = ctx, .user = &r};
    mu.on[TIR_KIND_BUFFER_LOAD] = lay_on_load;
    mu.on[TIR_KIND_BUFFER_STORE] = lay_on_store;
    mu.on[TIR_KIND_BLOCK] = lay_on_block;
    c->func = (const tir_prim_func *)tir_mutate(&mu, s->func);
    return TIR_OK;
}

tir_status tir_sched_transform_layout(tir_schedule *s, tir_block_rv block, int64_t buffer_index,
                                      bool is_write, const char *index_map) {
    if (!s) return sch_bad_arg(s, "transform_layout", "schedule is NULL");
    if (!index_map) return sch_bad_arg(s, "transform_layout", "index_map is NULL");
    sch_arg args[4] = {SCH_RV(block), {.i = buffer_index}, {.i = is_write}, {.s = index_map}};
    return sch_run(s, SCH_INST_transform_layout, args, NULL, NULL);
}
