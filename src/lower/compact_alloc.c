/* compact_alloc.c: each shared/local buffer shrinks to the region its
 * accesses really touch, and its indices are rebased to that region (TVM:
 * CompactBufferAllocation).  The region of an access is relaxed over the
 * loops between the Allocate and the access; for shared buffers also over
 * every threadIdx loop (the threads of a block share one copy, so a
 * cooperative fetch covers the union of all threads' parts), never over
 * blockIdx loops; local buffers are per thread, so thread loops are never
 * relaxed.  A copy through an address (a tile operand, cp_async, ldmatrix)
 * counts every element it covers, and a buffer a cp_async or ldmatrix
 * addresses is only cut at its end (those need aligned addresses;
 * lower_fragments, later, checks its own), or not at all where it has
 * several dimensions and a copy's span may run past a row (check_span).
 * A dimension
 * keeps its full extent when the relaxed extent has no constant bound
 * below it.  The LOWER_DIM_ALIGN annotation lower_blocks
 * put on an Allocate (storage_align) turns into padded strides here and is
 * dropped, the strides now saying it.  Finally shared Allocates
 * move out of the threadIdx loops to the thread-block level, where the
 * lowered form says they live (one array per block).
 */
#include <stdlib.h>
#include <string.h>

#include "lower_internal.h"

typedef struct entry {
    const tir_buffer *buf;
    int depth;         /* loops enclosing the Allocate */
    bool seen, bad;    /* accessed at all / a region was unbounded */
    tir_range *region; /* union of accessed ranges, buf->ndim */
    const tir_annot *align; /* LOWER_DIM_ALIGN of its Allocate, or NULL */
    const tir_buffer *nbuf;
    const tir_expr **mins; /* rebase offsets per dim (NULL: unchanged) */
    bool covered;          /* every access in bounds for all loop values */
    bool guarded;          /* accessed under a domain_guard (relax_guards) */
    bool addressed;        /* a copy's operand (cp_async, ldmatrix): its addresses stay */
} entry;

typedef struct cs {
    lower_state *st;
    const tir_prim_func *f;
    tir_status err; /* the first span past its dimension (check_span) */
    tir_analyzer *an;
    ir_vec entries; /* entry* (heap) */
    ir_vec loops; /* tir_for*, outermost first: text nests loops ~200 deep */
    int in_guard; /* domain_guard ifs around the statement being walked */
} cs;

static entry *find_entry(cs *c, const tir_buffer *b) {
    for (int i = 0; i < c->entries.n; i++) {
        entry *e = (entry *)c->entries.items[i];
        if (e->buf == b) return e;
    }
    return NULL;
}

static void record(cs *c, const tir_buffer *b, int nidx, const tir_expr *const *idx) {
    entry *e = find_entry(c, b);
    if (!e || e->bad) return;
    e->guarded |= c->in_guard > 0;
    tir_ctx *ctx = c->st->ctx;
    const tir_var **vars = IR_NEWN(ctx, const tir_var *, c->loops.n);
    int nv = 0;
    for (int i = 0; i < c->loops.n; i++) {
        const tir_for *f = c->loops.items[i];
        if (lower_is_block_loop(f)) continue;
        bool thread = f->kind == TIR_FOR_THREAD_BINDING;
        bool inside = i >= e->depth;
        /* a fragment is per warp: like a local buffer, since tensor
         * intrinsics never run under a threadIdx.x loop */
        bool per_thread = b->scope == TIR_SCOPE_LOCAL || tir_scope_is_frag(b->scope);
        if (per_thread ? (inside && !thread) : (inside || thread))
            vars[nv++] = f->var;
    }
    tir_range *r = IR_NEWN(ctx, tir_range, nidx); /* any rank: user input */
    TIR_ASSERT(nidx == b->ndim);
    for (int d = 0; d < nidx; d++)
        if (idx[d]->dtype.lanes > 1) {
            e->bad = true;
            return;
        }
    if (!tir_analyzer_relax_region(c->an, nidx, idx, nv, vars, r)) {
        e->bad = true;
        return;
    }
    if (!e->seen) {
        e->seen = true;
        memcpy(e->region, r, sizeof(tir_range) * (size_t)nidx);
        return;
    }
    for (int d = 0; d < nidx; d++) {
        tir_range *u = &e->region[d];
        /* the same values with the same variables (not tir_struct_equal, which
         * equates i_0 * 32 and j_0 * 32: equal up to renaming) */
        int64_t d0, d1;
        if (tir_expr_const_int(tir_analyzer_simplify(c->an, tir_sub(ctx, u->min, r[d].min)), &d0) &&
            d0 == 0 &&
            tir_expr_const_int(tir_analyzer_simplify(c->an, tir_sub(ctx, u->extent, r[d].extent)),
                               &d1) &&
            d1 == 0)
            continue;
        const tir_expr *lo = tir_analyzer_simplify(c->an, tir_min(ctx, u->min, r[d].min));
        const tir_expr *hi =
            tir_analyzer_simplify(c->an, tir_max(ctx, tir_add(ctx, u->min, u->extent),
                                                 tir_add(ctx, r[d].min, r[d].extent)));
        *u = (tir_range){lo, tir_analyzer_simplify(c->an, tir_sub(ctx, hi, lo))};
    }
}

static bool load_pre(tir_visitor *v, const tir_node *n) {
    if (n->kind == TIR_KIND_BUFFER_LOAD) {
        const tir_buffer_load *l = (const tir_buffer_load *)n;
        record(v->user, l->buffer, l->nidx, l->indices);
    }
    return true;
}

/* A tile operand address_of(F[.., r0, c0]) of a tensor intrinsic touches
 * the whole tile from there (lower_tile_shape): its far corner is
 * recorded besides the origin, which the plain walk records. */
static void walk_tile_op(cs *c, const tir_call *call) {
    for (int i = 0; call && i < call->nargs; i++) {
        const tir_buffer_load *l = NULL;
        int rows = 0, cols = 0;
        if (!lower_tile_operand(call, i, &l, &rows, &cols) || l->nidx < 2) continue;
        tir_ctx *ctx = c->st->ctx;
        const tir_expr **idx = IR_NEWN(ctx, const tir_expr *, l->nidx);
        memcpy(idx, l->indices, sizeof idx[0] * (size_t)l->nidx);
        const tir_expr **r = &idx[l->nidx - 2], **q = &idx[l->nidx - 1];
        *r = tir_add(ctx, *r, tir_int(ctx, (*r)->dtype, rows - 1));
        *q = tir_add(ctx, *q, tir_int(ctx, (*q)->dtype, cols - 1));
        record(c, l->buffer, l->nidx, idx);
    }
}

/* A copy whose element is inside the last dimension of its declared
 * buffer for every loop value but whose span is not (a cp_async of 16
 * bytes into S[tx * 4] of a 126-float S) would write or read past it on a
 * GPU: an error.  An element that may itself lie outside is the
 * interpreter's to report, as for a plain store; a guard around the copy
 * is not taken into account (the bound is over the loops' ranges).  Where
 * the guard keeps it inside, the span may still run on into the next
 * rows, which the interpreter takes (a copy is flat): a buffer of more
 * than one dimension then keeps its shape (S[0, tx * 4] of a (2, 6) S
 * under `if tx < 2` of 4 threads kept row 0 only, and thread 1's copy
 * passed its end). */
static void check_span(cs *c, const tir_stmt *s, const tir_call *call, int i,
                       const tir_buffer_load *l, int64_t span) {
    int64_t ext, sb;
    const tir_expr *x = l->indices[l->nidx - 1];
    if (c->err != TIR_OK || !tir_expr_const_int(l->buffer->shape[l->nidx - 1], &ext)) return;
    /* a source of src_bytes reads only those (a ragged tile's zero fill) */
    if (call->op == TIR_INTRIN_CP_ASYNC && i == 1 && call->nargs == 4) {
        if (!tir_expr_const_int(call->args[3], &sb)) return;
        span = sb / tir_dtype_bytes(l->buffer->dtype);
    }
    tir_int_bound b = tir_analyzer_const_bound(c->an, x);
    if (span < 1) return;
    if (b.max >= ext) {
        entry *e = l->nidx > 1 ? find_entry(c, l->buffer) : NULL;
        if (e) e->bad = true;
        return;
    }
    if (b.max + span <= ext) return;
    bool rmw;
    c->err = lower_fail_marked(
        c->st, c->f, 1, (const void *[]){s},
        "compact_alloc: T.%s %s %lld elements of '%s' from index %s, past the end of its last "
        "dimension (extent %lld) where that index is %lld; a copy must stay within the "
        "buffer's row (the bound is over the loops' ranges: a guard around the copy is not "
        "taken into account)",
        tir_intrin_name(call->op), lower_dest_arg(call, &rmw) == i ? "writes" : "reads",
        (long long)span, l->buffer->name, tir_print(c->st->ctx, x), (long long)ext,
        (long long)b.max);
}

/* An operand copying span elements from address_of(S[.., i]) (cp_async's
 * destination and source, ldmatrix's row and registers:
 * lower_span_operand) touches S[.., i + span - 1] too, recorded besides
 * the element the plain walk records; a count that is not a constant
 * keeps the whole buffer. */
static void walk_span_op(cs *c, const tir_stmt *s, const tir_call *call) {
    for (int i = 0; call && i < call->nargs; i++) {
        const tir_buffer_load *l;
        int64_t span = lower_span_operand(call, i, &l);
        entry *e = l ? find_entry(c, l->buffer) : NULL;
        if (e && span != 0) e->addressed = true;
        if (span == 0 || span == 1) continue;
        if (span < 0) {
            if (e) e->bad = true;
            continue;
        }
        check_span(c, s, call, i, l, span);
        tir_ctx *ctx = c->st->ctx;
        const tir_expr **idx = IR_NEWN(ctx, const tir_expr *, l->nidx);
        memcpy(idx, l->indices, sizeof idx[0] * (size_t)l->nidx);
        const tir_expr **q = &idx[l->nidx - 1];
        *q = tir_add(ctx, *q, tir_int(ctx, (*q)->dtype, span - 1));
        record(c, l->buffer, l->nidx, idx);
    }
}

static void walk_expr(cs *c, const tir_expr *e) {
    if (!e) return;
    tir_visitor v = {.pre = load_pre, .user = c};
    tir_visit(&v, e);
}

static void walk(cs *c, const tir_stmt *s) {
    if (!s) return;
    switch ((tir_kind)s->kind) {
    case TIR_KIND_FOR: {
        const tir_for *f = (const tir_for *)s;
        walk_expr(c, f->min);
        walk_expr(c, f->extent);
        tir_analyzer_bind(c->an, f->var, f->min, f->extent);
        ir_vec_push(&c->loops, f);
        walk(c, f->body);
        c->loops.n--;
        break;
    }
    case TIR_KIND_SEQ: {
        const tir_seq *q = (const tir_seq *)s;
        for (int i = 0; i < q->n; i++) walk(c, q->stmts[i]);
        break;
    }
    case TIR_KIND_IF: {
        const tir_if *i = (const tir_if *)s;
        bool g = lower_unmark_guard(i->cond) != i->cond;
        walk_expr(c, i->cond);
        c->in_guard += g;
        walk(c, i->then_s);
        walk(c, i->else_s);
        c->in_guard -= g;
        break;
    }
    case TIR_KIND_ALLOCATE: {
        const tir_allocate *a = (const tir_allocate *)s;
        if (a->buffer->scope != TIR_SCOPE_GLOBAL && !find_entry(c, a->buffer)) {
            entry *e = ir_xcalloc(1, sizeof *e);
            e->buf = a->buffer;
            e->depth = c->loops.n;
            e->align = tir_annots_get(a->nannots, a->annots, TIR_ANN_DIM_ALIGN);
            e->region = IR_NEWN(c->st->ctx, tir_range, a->buffer->ndim);
            ir_vec_push(&c->entries, e);
        }
        walk(c, a->body);
        break;
    }
    case TIR_KIND_BUFFER_STORE: {
        const tir_buffer_store *st = (const tir_buffer_store *)s;
        record(c, st->buffer, st->nidx, st->indices);
        for (int i = 0; i < st->nidx; i++) walk_expr(c, st->indices[i]);
        walk_expr(c, st->value);
        break;
    }
    case TIR_KIND_EVALUATE: {
        const tir_expr *v = ((const tir_evaluate *)s)->value;
        walk_tile_op(c, tir_as_tir_call(v));
        walk_span_op(c, s, tir_as_tir_call(v));
        walk_expr(c, v);
        break;
    }
    default: break;
    }
}

/* Dimension d of a buffer a copy addresses (e->addressed): cp_async and
 * ldmatrix need their addresses 4-16 byte aligned, and a rebase (or a
 * shorter row, a narrower middle dimension) moves them: a copy into
 * S[4 + tx * 4] rebased by 2 floats became misaligned.  Only the end of
 * dimension 0 is cut, which moves no address.  Whether d changed. */
static bool trim_end(cs *c, entry *e, int d, int64_t full, const tir_expr **shape) {
    tir_ctx *ctx = c->st->ctx;
    tir_int_bound lo = tir_analyzer_const_bound(c->an, e->region[d].min);
    tir_int_bound hi =
        tir_analyzer_const_bound(c->an, tir_add(ctx, e->region[d].min, e->region[d].extent));
    e->covered &= lo.min >= 0 && hi.max <= full;
    if (d > 0 || lo.min < 0 || hi.max >= full || hi.max <= 0) return false;
    shape[d] = tir_int(ctx, e->buf->shape[d]->dtype, hi.max);
    return true;
}

/* The new buffer of e: compacted shape, padded strides. */
static void make_buffer(cs *c, entry *e) {
    tir_ctx *ctx = c->st->ctx;
    const tir_buffer *b = e->buf;
    int nd = b->ndim;
    const tir_expr **shape = IR_NEWN(ctx, const tir_expr *, nd);
    bool changed = false;
    e->mins = IR_NEWN(ctx, const tir_expr *, nd);
    e->covered = e->seen && !e->bad;
    for (int d = 0; d < nd; d++) {
        shape[d] = b->shape[d];
        e->mins[d] = NULL;
        int64_t full;
        if (!e->seen || e->bad) {
            e->covered = false;
            continue;
        }
        if (!tir_expr_const_int(b->shape[d], &full)) {
            /* A symbolic dimension (an intermediate of dynamic shape, a
               cache of `A[0:n]`) shrinks to the constant bound of the
               region its accesses touch where there is one (a row per
               thread: 1; a tile of 8: 8), which is all that a kernel
               allocates; without one it stays symbolic and is refused
               below.  Whether every access lies inside the shape is not
               decided (covered stays false). */
            e->covered = false;
            tir_int_bound eb = tir_analyzer_const_bound(c->an, e->region[d].extent);
            if (e->addressed || eb.max <= 0 || eb.max > (INT64_C(1) << 31)) continue;
            shape[d] = tir_int(ctx, b->shape[d]->dtype, eb.max);
            e->mins[d] = e->region[d].min;
            changed = true;
            continue;
        }
        tir_int_bound eb = tir_analyzer_const_bound(c->an, e->region[d].extent);
        if (e->addressed) {
            changed |= trim_end(c, e, d, full, shape);
            continue;
        }
        /* A tile larger than the buffer (a 64-row tile of 33 rows) whose
         * accesses relax_guards may unguard: allocate the whole tile, so
         * that the elements past the shape exist (at most 4x the shape). */
        bool frag = tir_scope_is_frag(b->scope); /* tiles past the shape: clipped later */
        if (eb.max > full && (frag || (e->guarded && eb.max <= 4 * full)) && e->seen &&
            !e->bad) {
            shape[d] = tir_int(ctx, b->shape[d]->dtype, eb.max);
            e->mins[d] = e->region[d].min;
            changed = true;
            continue;
        }
        if (eb.max >= full || eb.max <= 0) {
            tir_int_bound lo = tir_analyzer_const_bound(c->an, e->region[d].min);
            tir_int_bound hi = tir_analyzer_const_bound(
                c->an, tir_add(c->st->ctx, e->region[d].min, e->region[d].extent));
            e->covered &= lo.min >= 0 && hi.max <= full;
            continue;
        }
        shape[d] = tir_int(ctx, b->shape[d]->dtype, eb.max);
        e->mins[d] = e->region[d].min;
        changed = true;
    }
    bool symbolic = false;
    for (int d = 0; d < nd; d++) symbolic |= !tir_expr_const_int(shape[d], &(int64_t){0});
    if (symbolic) { /* refused in lower_compact_alloc (sym_find) */
        e->nbuf = b;
        return;
    }
    const tir_expr **strides = NULL;
    if (e->align) {
        const tir_annot *al = e->align;
        strides = IR_NEWN(ctx, const tir_expr *, nd);
        int64_t stride = 1;
        for (int d = nd - 1; d >= 0; d--) {
            if (d < nd - 1) {
                int64_t ext;
                TIR_ASSERT(tir_expr_const_int(shape[d + 1], &ext));
                stride *= ext;
            }
            for (int i = 0; i < al->nints; i += 3) {
                int64_t factor = al->ints[i + 1], offset = al->ints[i + 2];
                if (al->ints[i] != d) continue;
                stride += ((offset - stride % factor) % factor + factor) % factor;
            }
            strides[d] = tir_i32(ctx, stride);
        }
        changed = true;
    }
    if (!changed) {
        e->nbuf = b;
        return;
    }
    tir_buffer_desc desc;
    tir_buffer_describe(b, &desc);
    desc.shape = shape;
    desc.strides = strides;
    e->nbuf = tir_buffer_new(ctx, &desc);
}

static const tir_expr *const *rebase(cs *c, entry *e, int nidx, const tir_expr *const *idx) {
    const tir_expr **n = IR_NEWN(c->st->ctx, const tir_expr *, nidx);
    for (int d = 0; d < nidx; d++)
        n[d] = e->mins[d] ? tir_analyzer_simplify(c->an, tir_sub(c->st->ctx, idx[d], e->mins[d]))
                          : idx[d];
    return n;
}

static const tir_node *on_load(tir_mutator *m, const tir_node *n) {
    cs *c = m->user;
    const tir_buffer_load *l = (const tir_buffer_load *)tir_mutate_default(m, n);
    entry *e = find_entry(c, l->buffer);
    if (!e || e->nbuf == e->buf) return (const tir_node *)l;
    return (const tir_node *)tir_load(m->ctx, e->nbuf, l->nidx, rebase(c, e, l->nidx, l->indices));
}

static const tir_node *on_store(tir_mutator *m, const tir_node *n) {
    cs *c = m->user;
    const tir_buffer_store *s = (const tir_buffer_store *)tir_mutate_default(m, n);
    entry *e = find_entry(c, s->buffer);
    if (!e || e->nbuf == e->buf) return (const tir_node *)s;
    return (const tir_node *)tir_store(m->ctx, e->nbuf, s->value, s->nidx,
                                       rebase(c, e, s->nidx, s->indices));
}

/* a's annotations without LOWER_DIM_ALIGN (into *n). */
static const tir_annot *without_align(tir_ctx *ctx, const tir_allocate *a, int *n) {
    tir_annot *v = IR_NEWN(ctx, tir_annot, a->nannots);
    *n = 0;
    for (int i = 0; i < a->nannots; i++)
        if (strcmp(a->annots[i].key, LOWER_DIM_ALIGN) != 0) v[(*n)++] = a->annots[i];
    return v;
}

static const tir_node *on_alloc(tir_mutator *m, const tir_node *n) {
    cs *c = m->user;
    const tir_allocate *a = (const tir_allocate *)tir_mutate_default(m, n);
    entry *e = find_entry(c, a->buffer);
    const tir_buffer *nb = e ? e->nbuf : a->buffer;
    bool aligned = tir_annots_get(a->nannots, a->annots, TIR_ANN_DIM_ALIGN) != NULL;
    if (nb == a->buffer && !aligned) return (const tir_node *)a;
    int nannots;
    const tir_annot *annots = without_align(m->ctx, a, &nannots);
    return (const tir_node *)tir_allocate_annotated(m->ctx, nb, nannots, annots, a->body);
}

/* Every LOWER_DIM_ALIGN is [axis, factor, offset] triples in range: one
 * written by hand in the text form reaches here unchecked. */
typedef struct align_check {
    lower_state *st;
    const tir_prim_func *f;
    tir_status status;
} align_check;

static bool bad_align(const tir_allocate *a, const tir_annot *al) {
    if (al->kind != TIR_ANNOT_INTS || al->nints % 3 != 0) return true;
    for (int i = 0; i < al->nints; i += 3)
        if (al->ints[i] < 0 || al->ints[i] >= a->buffer->ndim || al->ints[i + 1] <= 0 ||
            al->ints[i + 2] < 0 || al->ints[i + 2] >= al->ints[i + 1])
            return true;
    /* make_buffer pads strides from constant inner extents and stores them
       as int32: with the uncompacted shape (an upper bound of the compacted
       one) every padded stride must be computable and fit. */
    const tir_buffer *b = a->buffer;
    int64_t stride = 1;
    for (int d = b->ndim - 1; d >= 0; d--) {
        int64_t ext;
        if (d < b->ndim - 1 && (!tir_expr_const_int(b->shape[d + 1], &ext) ||
                                __builtin_mul_overflow(stride, ext, &stride)))
            return true;
        for (int i = 0; i < al->nints; i += 3)
            if (al->ints[i] == d && __builtin_add_overflow(stride, al->ints[i + 1], &stride))
                return true;
        if (stride > INT32_MAX) return true;
    }
    return false;
}

static bool check_align_pre(tir_visitor *v, const tir_node *n) {
    align_check *k = v->user;
    if (k->status != TIR_OK) return false;
    const tir_allocate *a = tir_as_tir_allocate(n);
    const tir_annot *al = a ? tir_annots_get(a->nannots, a->annots, TIR_ANN_DIM_ALIGN) : NULL;
    if (al && bad_align(a, al))
        k->status = lower_fail_marked(k->st, k->f, 1, (const void *[]){a},
                                      "compact_alloc: the Allocate of '%s': annotation "
                                      "\"%s\" must be groups of 3 ints [axis, "
                                      "factor, offset] with 0 <= axis < %d, factor > 0 and "
                                      "0 <= offset < factor, over constant inner extents, "
                                      "and the padded strides must fit in int32",
                                      a->buffer->name, LOWER_DIM_ALIGN, a->buffer->ndim);
    return k->status == TIR_OK;
}

/* ---- shared Allocates to the thread-block level */

typedef struct hoist {
    ir_vec allocs; /* tir_allocate* taken out of the thread loops */
    int in_thread;
} hoist;

static const tir_node *hoist_alloc(tir_mutator *m, const tir_node *n) {
    hoist *h = m->user;
    const tir_allocate *a = (const tir_allocate *)n;
    if (h->in_thread && a->buffer->scope == TIR_SCOPE_SHARED) {
        ir_vec_push(&h->allocs, a);
        return tir_mutate(m, a->body);
    }
    return tir_mutate_default(m, n);
}

static const tir_node *hoist_for(tir_mutator *m, const tir_node *n) {
    hoist *h = m->user;
    const tir_for *f = (const tir_for *)n;
    if (!lower_is_thread_loop(f) || h->in_thread) return tir_mutate_default(m, n);
    int first = h->allocs.n;
    h->in_thread++;
    const tir_stmt *s = (const tir_stmt *)tir_mutate_default(m, n);
    h->in_thread--;
    for (int i = h->allocs.n - 1; i >= first; i--) {
        const tir_allocate *a = h->allocs.items[i];
        s = lower_alloc_like(m->ctx, a, a->buffer, s);
    }
    h->allocs.n = first;
    return (const tir_node *)s;
}

typedef struct sym_find {
    tir_visitor v;
    const tir_allocate *alloc; /* the first Allocate of symbolic size */
} sym_find;

static bool sym_find_pre(tir_visitor *v, const tir_node *n) {
    sym_find *f = v->user;
    if (f->alloc) return false;
    if (n->kind == TIR_KIND_ALLOCATE &&
        tir_buffer_const_size(((const tir_allocate *)n)->buffer) < 0)
        f->alloc = (const tir_allocate *)n;
    return !f->alloc;
}

tir_status lower_compact_alloc(lower_state *st, const tir_prim_func *in,
                               const tir_prim_func **out) {
    align_check k = {st, in, TIR_OK};
    tir_visitor v = {.pre = check_align_pre, .user = &k};
    tir_visit(&v, in->body);
    if (k.status != TIR_OK) return k.status;
    cs c = {.st = st, .f = in, .an = tir_analyzer_create(st->ctx)};
    walk(&c, in->body);
    if (c.err != TIR_OK) {
        for (int i = 0; i < c.entries.n; i++) free((void *)c.entries.items[i]);
        ir_vec_free(&c.entries);
        ir_vec_free(&c.loops);
        tir_analyzer_destroy(c.an);
        return c.err;
    }
    st->covered = IR_NEWN(st->ctx, const tir_buffer *, c.entries.n);
    st->ncovered = 0;
    for (int i = 0; i < c.entries.n; i++) {
        entry *e = (entry *)c.entries.items[i];
        make_buffer(&c, e);
        if (e->covered) st->covered[st->ncovered++] = e->nbuf;
    }
    tir_mutator m = {.ctx = st->ctx, .user = &c};
    m.on[TIR_KIND_BUFFER_LOAD] = on_load;
    m.on[TIR_KIND_BUFFER_STORE] = on_store;
    m.on[TIR_KIND_ALLOCATE] = on_alloc;
    const tir_stmt *body = tir_mutate_stmt(&m, in->body);
    for (int i = 0; i < c.entries.n; i++) free((void *)c.entries.items[i]);
    ir_vec_free(&c.entries);
    ir_vec_free(&c.loops);
    tir_analyzer_destroy(c.an);

    /* An intermediate of symbolic shape that compaction left symbolic:
       a kernel allocates its shared and local memory at a size fixed at
       compile time. */
    sym_find sf = {{.pre = sym_find_pre}, NULL};
    sf.v.user = &sf;
    tir_visit(&sf.v, body);
    if (sf.alloc) {
        const tir_buffer *b = sf.alloc->buffer;
        return lower_fail_marked(st, lower_with_body(st->ctx, in, body), 1,
                                 (const void *[]){sf.alloc},
                                 "compact_alloc: buffer '%s' (scope %s) has a symbolic shape that "
                                 "compaction to the region its accesses touch leaves symbolic; "
                                 "GPU kernels need static sizes (compute it at a loop inside "
                                 "which the region has a constant bound, e.g. a tile)",
                                 b->name, tir_scope_name(b->scope));
    }
    hoist h = {{0}, 0};
    tir_mutator hm = {.ctx = st->ctx, .user = &h};
    hm.on[TIR_KIND_ALLOCATE] = hoist_alloc;
    hm.on[TIR_KIND_FOR] = hoist_for;
    body = tir_mutate_stmt(&hm, body);
    ir_vec_free(&h.allocs);
    *out = lower_with_body(st->ctx, in, body);
    return TIR_OK;
}
