/* relax_guards.c: ragged tiles without a predicate on every instruction.
 *
 * A split that does not divide its loop guards the blocks below it with
 * `binding(v) < extent(v)`.  Kept as written, that test runs around every
 * FMA of a matmul's thread tile and every element of a vectorized copy.
 * Two rewrites take it off where it provably changes nothing the program
 * can observe (Triton's masked loads with zero fill, computing the full
 * tile and masking only the store):
 *
 *   relax      a block that reads and writes only local and shared
 *              buffers runs unguarded;
 *   zero fill  a block that copies a global buffer into a shared or local
 *              one writes 0 where the guard is false
 *              (if g: S[..] = G[..] else: S[..] = 0).
 *
 * Both apply to a conjunct `e < E` of the predicate only when e is the
 * binding of a spatial iterator v of domain [0, E) and every store of the
 * block indexes some dimension of extent E with v itself: where the guard
 * is false the block writes outside the buffer's logical shape, elements
 * no unguarded access of the program ever touches, so whatever lands there
 * (garbage, zeros) stays there.  The reduction guard (k past K) is never
 * dropped by `relax`; zero fill makes the shared tiles 0 past K, and
 * unrolled k loops fold that guard to constants.
 *
 * A tensorized tile block (frag_fill, frag_load, mma_sync: it writes
 * fragments only) is relaxed by the same argument at the tile's scale: its
 * conjunct `e < E` bounds a spatial iterator v whose tile [t*v, t*v + t)
 * in some dimension of each fragment it writes starts past that
 * dimension's extent once v >= E (t*E >= extent).  Its out-of-domain
 * instances then compute whole tiles of garbage (or zeros) that only
 * other out-of-domain tiles read, and frag_store, which keeps its guard,
 * never writes them out.  Tile operands must be shared or local (a global
 * one could be read before or past the buffer), and a tile reader past the
 * shape needs the other writers' element ranges (noted per guard, over
 * every loop value) to span its own.  A ragged tile of a tensor-core
 * kernel then has no branch around its ldmatrix and mma, which otherwise
 * costs 2-3x (phis of 16-bit fragment halves; docs/tensor-cores.md).
 *
 * lower_blocks calls lower_guard_predicate to mark such conjuncts with the
 * domain_guard(cond, kind) intrinsic; this pass, after compact_alloc
 * (where every allocation has its final shape), checks that each marked
 * statement's accesses to shared and local buffers stay inside the
 * allocations for every value of the enclosing loops, and that what a
 * relaxed block reads was written unguarded (or zero-filled) everywhere,
 * as far past the shape as it reads (the elements noted per guard),
 * then drops the guard, adds the zero-filling else, or keeps the plain
 * `if` (unmarked) when a check fails.
 */
#include <stdlib.h>
#include <string.h>

#include "lower_internal.h"

enum { GUARD_RELAX = 0, GUARD_ZERO_FILL = 1 };

/* ---- marking, in lower_blocks */

typedef struct scan {
    bool global_load, global_store, other;
    int nstores;
    const tir_buffer_store *store;
} scan;

static bool scan_expr_pre(tir_visitor *v, const tir_node *n) {
    scan *s = v->user;
    if (n->kind == TIR_KIND_BUFFER_LOAD &&
        ((const tir_buffer_load *)n)->buffer->scope == TIR_SCOPE_GLOBAL)
        s->global_load = true;
    if (n->kind == TIR_KIND_CALL) s->other = true;
    return true;
}

static bool scan_stmt_pre(tir_visitor *v, const tir_node *n) {
    scan *s = v->user;
    if (n->kind == TIR_KIND_BUFFER_STORE) {
        const tir_buffer_store *st = (const tir_buffer_store *)n;
        s->nstores++;
        s->store = st;
        if (st->buffer->scope == TIR_SCOPE_GLOBAL) s->global_store = true;
    } else if (n->kind == TIR_KIND_EVALUATE || n->kind == TIR_KIND_ALLOCATE ||
               n->kind == TIR_KIND_BLOCK_REALIZE) {
        s->other = true;
    }
    return scan_expr_pre(v, n);
}

/* True when every store in body indexes some dimension of constant
 * extent E with the variable v itself. */
typedef struct outside {
    const tir_var *v;
    int64_t E;
    bool ok;
} outside;

static bool outside_pre(tir_visitor *vis, const tir_node *n) {
    outside *o = vis->user;
    if (n->kind != TIR_KIND_BUFFER_STORE) return true;
    const tir_buffer_store *st = (const tir_buffer_store *)n;
    bool hit = false;
    for (int d = 0; d < st->nidx && !hit; d++) {
        int64_t ext;
        hit = st->indices[d] == &o->v->base && tir_expr_const_int(st->buffer->shape[d], &ext) &&
              ext == o->E;
    }
    o->ok &= hit;
    return true;
}

/* The spatial iterator of b whose binding is e and domain [0, E), or -1. */
static int guarded_iter(tir_ctx *ctx, tir_analyzer *an, const tir_block_realize *r,
                        const tir_expr *e, int64_t E) {
    const tir_block *b = r->block;
    for (int i = 0; i < b->niters; i++) {
        int64_t lo, ext;
        const tir_iter_var *it = &b->iters[i];
        if (it->kind != TIR_ITER_SPATIAL || !tir_expr_const_int(it->dom.min, &lo) || lo != 0 ||
            !tir_expr_const_int(it->dom.extent, &ext) || ext != E)
            continue;
        /* the same value with the same variables (tir_struct_equal would
         * equate `ax1 < 1` with a binding `ax0`: equal up to renaming;
         * GPU-path fuzzer, seed 1796900016) */
        int64_t d;
        const tir_expr *diff = tir_analyzer_simplify(an, tir_sub(ctx, r->values[i], e));
        if (tir_expr_const_int(diff, &d) && d == 0) return i;
    }
    return -1;
}

/* The spatial iterator of r that conjunct c, `binding < E` (*E), bounds,
 * or -1. */
static int guarded_conj(tir_ctx *ctx, tir_analyzer *an, const tir_block_realize *r,
                        const tir_expr *c, int64_t *E) {
    if (c->kind != TIR_KIND_LT) return -1;
    const tir_binop *lt = (const tir_binop *)c;
    if (!tir_expr_const_int(lt->b, E)) return -1;
    return guarded_iter(ctx, an, r, lt->a, *E);
}

static bool conj_relaxable(tir_ctx *ctx, tir_analyzer *an, const tir_block_realize *r,
                           const tir_expr *c) {
    int64_t E;
    int i = guarded_conj(ctx, an, r, c, &E);
    if (i < 0) return false;
    outside o = {r->block->iters[i].var, E, true};
    tir_visitor v = {.pre = outside_pre, .user = &o};
    tir_visit(&v, r->block->body);
    return o.ok;
}

/* ---- tensor tiles */

/* Whether a is address_of(buffer[...]), the form of a tile operand. */
static bool tile_addr(const tir_expr *a) {
    const tir_call *c = (const tir_call *)a;
    return a->kind == TIR_KIND_CALL && c->op == TIR_INTRIN_ADDRESS_OF && c->nargs == 1 &&
           c->args[0]->kind == TIR_KIND_BUFFER_LOAD;
}

/* The call of statement s when it is op with its first n operands tile
 * addresses, or NULL (hand-written IR may hold anything: lower_fragments,
 * later, names what is wrong). */
static const tir_call *call_of(const tir_stmt *s, tir_intrin op, int n) {
    if (s->kind != TIR_KIND_EVALUATE) return NULL;
    const tir_call *c = (const tir_call *)((const tir_evaluate *)s)->value;
    if (c->base.kind != TIR_KIND_CALL || c->op != op || c->nargs < n) return NULL;
    for (int i = 0; i < n; i++)
        if (!tile_addr(c->args[i])) return NULL;
    return c;
}

/* The call of a tile statement (frag_fill, frag_load, mma_sync), or NULL. */
static const tir_call *tile_call(const tir_stmt *s) {
    const tir_call *c = call_of(s, TIR_INTRIN_FRAG_FILL, 1);
    if (!c) c = call_of(s, TIR_INTRIN_FRAG_LOAD, 2);
    if (!c) c = call_of(s, TIR_INTRIN_MMA_SYNC, 3);
    return c;
}

/* Whether s is tile calls only, possibly under ifs without else. */
static bool tile_body(const tir_stmt *s) {
    if (s->kind == TIR_KIND_SEQ) {
        const tir_seq *q = (const tir_seq *)s;
        for (int i = 0; i < q->n; i++)
            if (!tile_body(q->stmts[i])) return false;
        return q->n > 0;
    }
    if (s->kind == TIR_KIND_IF) {
        const tir_if *i = (const tir_if *)s;
        return !i->else_s && tile_body(i->then_s);
    }
    return tile_call(s) != NULL;
}

/* The buffer access under address_of operand a of a tile call (checked
 * by tile_call / call_of). */
static const tir_buffer_load *tile_operand(const tir_expr *a) {
    TIR_ASSERT(tile_addr(a));
    return (const tir_buffer_load *)((const tir_call *)a)->args[0];
}

/* Conjunct c of tile block r: binding(v) < E, v spatial, and every region
 * r writes is a fragment's with a dimension [t*v, t*v + t), t*E >= its
 * extent. */
static bool conj_tile_relaxable(tir_ctx *ctx, tir_analyzer *an, const tir_block_realize *r,
                                const tir_expr *c) {
    int64_t E;
    int i = guarded_conj(ctx, an, r, c, &E);
    if (i < 0 || r->block->nwrites == 0) return false;
    const tir_var *v = r->block->iters[i].var;
    for (int w = 0; w < r->block->nwrites; w++) {
        const tir_buffer_region *x = &r->block->writes[w];
        bool hit = false;
        if (!tir_scope_is_frag(x->buffer->scope)) return false;
        for (int d = 0; d < x->ndim && !hit; d++) {
            int64_t t, ext, diff;
            if (!tir_expr_const_int(x->ranges[d].extent, &t) || t < 1 ||
                !tir_expr_const_int(x->buffer->shape[d], &ext) || t * E < ext)
                continue;
            const tir_expr *tv = tir_mul(ctx, (const tir_expr *)v, tir_int(ctx, v->base.dtype, t));
            const tir_expr *e = tir_analyzer_simplify(an, tir_sub(ctx, x->ranges[d].min, tv));
            hit = tir_expr_const_int(e, &diff) && diff == 0;
        }
        if (!hit) return false;
    }
    return true;
}

/* Whether s is tile calls each writing, at index e in some dimension, a
 * fragment of extent <= S there. */
static bool writes_at(tir_ctx *ctx, tir_analyzer *an, const tir_stmt *s, const tir_expr *e,
                      int64_t S) {
    if (s->kind == TIR_KIND_SEQ) {
        const tir_seq *q = (const tir_seq *)s;
        for (int i = 0; i < q->n; i++)
            if (!writes_at(ctx, an, q->stmts[i], e, S)) return false;
        return q->n > 0;
    }
    const tir_call *k = tile_call(s);
    if (!k) return false;
    const tir_buffer_load *d = tile_operand(k->args[0]);
    for (int i = 0; i < d->nidx; i++) {
        int64_t ext, diff;
        if (!tir_expr_const_int(d->buffer->shape[i], &ext) || ext > S) continue;
        const tir_expr *x = tir_analyzer_simplify(an, tir_sub(ctx, d->indices[i], e));
        if (tir_expr_const_int(x, &diff) && diff == 0) return true;
    }
    return false;
}

typedef struct inner {
    tir_analyzer *an;
} inner;

/* An if inside a tile block, `e < S` around tile calls that each write a
 * fragment at index e (in some dimension of extent <= S): where it is
 * false they write past the shape (the second tile of a B pair at a
 * ragged N: tiling_tc.c), so it is marked like a domain guard, and
 * dropped where the pass proves it safe. */
static const tir_node *mark_inner(tir_mutator *m, const tir_node *n) {
    inner *in = m->user;
    const tir_if *i = (const tir_if *)tir_mutate_default(m, n);
    const tir_binop *lt = (const tir_binop *)i->cond;
    int64_t S;
    if (i->else_s || i->cond->kind != TIR_KIND_LT || !tir_expr_const_int(lt->b, &S) ||
        !writes_at(m->ctx, in->an, i->then_s, lt->a, S))
        return (const tir_node *)i;
    const tir_expr *args[2] = {i->cond, tir_i32(m->ctx, GUARD_RELAX)};
    const tir_expr *g = tir_call_new(m->ctx, TIR_BOOL, TIR_INTRIN_DOMAIN_GUARD, 2, args);
    return (const tir_node *)tir_if_new(m->ctx, g, i->then_s, NULL);
}

static void split_and(const tir_expr *e, ir_vec *out) {
    if (e->kind == TIR_KIND_AND) {
        split_and(((const tir_binop *)e)->a, out);
        split_and(((const tir_binop *)e)->b, out);
    } else {
        ir_vec_push(out, e);
    }
}

static const tir_expr *and_all(tir_ctx *ctx, const ir_vec *v) {
    const tir_expr *r = NULL;
    for (int i = 0; i < v->n; i++) r = r ? tir_and(ctx, r, v->items[i]) : v->items[i];
    return r;
}

/* The kind of rewrite b's body allows, or -1. */
static int body_kind(const tir_block *b) {
    scan s = {0};
    tir_visitor v = {.pre = scan_stmt_pre, .user = &s};
    tir_visit(&v, b->body);
    if (s.other || s.nstores == 0) return -1;
    if (!s.global_load && !s.global_store) return GUARD_RELAX;
    if (s.global_load && s.nstores == 1 && !s.global_store &&
        (const tir_stmt *)s.store == b->body)
        return GUARD_ZERO_FILL;
    return -1;
}

const tir_stmt *lower_guard_predicate(tir_ctx *ctx, const tir_block_realize *r,
                                      const tir_stmt *body) {
    bool tile = tile_body(r->block->body);
    if (tile) {
        inner in = {tir_analyzer_create(ctx)};
        tir_mutator m = {.ctx = ctx, .user = &in};
        m.on[TIR_KIND_IF] = mark_inner;
        body = tir_mutate_stmt(&m, body);
        tir_analyzer_destroy(in.an);
    }
    int64_t pv;
    if (!r->predicate || (tir_expr_const_int(r->predicate, &pv) && pv)) return body;
    int kind = tile ? GUARD_RELAX : body_kind(r->block);
    if (kind < 0) return tir_if_new(ctx, r->predicate, body, NULL);
    ir_vec conj = {0}, keep = {0}, relax = {0};
    split_and(r->predicate, &conj);
    tir_analyzer *an = tir_analyzer_create(ctx);
    for (int i = 0; i < conj.n; i++) {
        bool ok = tile ? conj_tile_relaxable(ctx, an, r, conj.items[i])
                       : conj_relaxable(ctx, an, r, conj.items[i]);
        ir_vec_push(ok ? &relax : &keep, conj.items[i]);
    }
    tir_analyzer_destroy(an);
    const tir_stmt *s = body;
    if (relax.n) {
        const tir_expr *args[2] = {and_all(ctx, &relax), tir_i32(ctx, kind)};
        s = tir_if_new(ctx, tir_call_new(ctx, TIR_BOOL, TIR_INTRIN_DOMAIN_GUARD, 2, args), s,
                       NULL);
    }
    if (keep.n) s = tir_if_new(ctx, and_all(ctx, &keep), s, NULL);
    ir_vec_free(&conj);
    ir_vec_free(&keep);
    ir_vec_free(&relax);
    return s;
}

const tir_expr *lower_unmark_guard(const tir_expr *c) {
    const tir_call *k = (const tir_call *)c;
    return c->kind == TIR_KIND_CALL && k->op == TIR_INTRIN_DOMAIN_GUARD ? k->args[0] : c;
}

/* ---- the pass */

/* The elements a tile guard's calls read or write in one buffer: per
 * dimension the least and greatest index (tile extents included), over
 * every value of the loops around and inside the guard. */
enum { TR_DIMS = 4 };
typedef struct trange {
    const tir_buffer *buf;
    bool write;
    int64_t lo[TR_DIMS], hi[TR_DIMS];
} trange;

typedef struct guard {
    const tir_if *node;
    int kind;
    bool safe;
    bool always;   /* the guard provably holds: drop it whatever the kind */
    ir_vec ranges; /* trange* (heap), tile calls only */
} guard;

typedef struct rg {
    lower_state *st;
    tir_analyzer *an;
    ir_vec guards; /* guard* (heap) */
    bool inb;      /* in_bounds result */
    ir_vec caps;   /* cap* (heap): kept guards' `linear < C` around the walk */
    guard *cur;    /* the marked guard in_bounds walks, or NULL */
} rg;

/* A kept guard's conjunct e < C, e linear in several variables: while its
 * body is walked, a linear part x of an index with e = a * x + rest (a > 0,
 * rest in the other variables) is at most (C - 1 - min rest) / a. */
typedef struct cap {
    const tir_expr *e;
    int64_t C;
} cap;

static bool marked(const tir_if *i, const tir_expr **cond, int *kind) {
    const tir_call *c = (const tir_call *)i->cond;
    int64_t k;
    if (i->cond->kind != TIR_KIND_CALL || c->op != TIR_INTRIN_DOMAIN_GUARD) return false;
    TIR_ASSERT(c->nargs == 2 && tir_expr_const_int(c->args[1], &k));
    *cond = c->args[0];
    *kind = (int)k;
    return true;
}

static guard *find_guard(rg *c, const tir_if *i) {
    for (int k = 0; k < c->guards.n; k++) {
        guard *g = (guard *)c->guards.items[k];
        if (g->node == i) return g;
    }
    return NULL;
}

static const tir_expr *uncap(rg *c, const tir_expr *x);

/* Every index of an access to a non-global buffer within its shape. */
static void check_access(rg *c, const tir_buffer *b, int nidx, const tir_expr *const *idx) {
    if (b->scope == TIR_SCOPE_GLOBAL) return;
    for (int i = 0; i < c->st->ncovered; i++)
        if (c->st->covered[i] == b) return; /* compact_alloc's region holds it */
    for (int d = 0; d < nidx && c->inb; d++) {
        int64_t ext;
        tir_int_bound bd = tir_analyzer_const_bound(c->an, uncap(c, idx[d]));
        c->inb = idx[d]->dtype.lanes == 1 && tir_expr_const_int(b->shape[d], &ext) &&
                 bd.min >= 0 && bd.max < ext;
    }
}

static void note_scalar(rg *c, const tir_buffer *b, int n, const tir_expr *const *idx,
                        bool write);

static bool inb_expr_pre(tir_visitor *v, const tir_node *n) {
    rg *c = v->user;
    if (n->kind == TIR_KIND_BUFFER_LOAD) {
        const tir_buffer_load *l = (const tir_buffer_load *)n;
        check_access(c, l->buffer, l->nidx, l->indices);
        note_scalar(c, l->buffer, l->nidx, l->indices, false);
    }
    return c->inb;
}

/* The tile of a fragment buffer: rows and columns of its last two
 * dimensions. */
static bool frag_tile(const tir_buffer *b, int *rows, int *cols) {
    tir_frag_layout l;
    if (!tir_frag_layout_of(b->scope, b->dtype, &l)) return false;
    *rows = l.tile_rows, *cols = l.tile_cols;
    return true;
}

/* Widens the guard's range of buf (read or written) by the element or
 * tile at idx (rows x cols in the last two dimensions). */
static void note_range(rg *c, const tir_buffer *buf, int n, const tir_expr *const *idx, bool write,
                       int rows, int cols) {
    if (!c->cur || !c->inb) return;
    if (n > TR_DIMS) {
        c->inb = false;
        return;
    }
    trange *t = NULL;
    for (int i = 0; i < c->cur->ranges.n && !t; i++) {
        trange *x = (trange *)c->cur->ranges.items[i];
        if (x->buf == buf && x->write == write) t = x;
    }
    if (!t) {
        t = ir_xcalloc(1, sizeof *t);
        *t = (trange){.buf = buf, .write = write};
        for (int d = 0; d < TR_DIMS; d++) t->lo[d] = INT64_MAX, t->hi[d] = INT64_MIN;
        ir_vec_push(&c->cur->ranges, t);
    }
    for (int d = 0; d < n; d++) {
        tir_int_bound b = tir_analyzer_const_bound(c->an, uncap(c, idx[d]));
        int64_t ext = d == n - 2 ? rows : d == n - 1 ? cols : 1;
        if (b.min < t->lo[d]) t->lo[d] = b.min;
        if (b.max + ext - 1 > t->hi[d]) t->hi[d] = b.max + ext - 1;
    }
}

/* The element a scalar load or store of a shared or local buffer
 * touches, into the guard's ranges: a reader past the shape must find
 * what it reads written by the others past it as far (spans); ranks
 * above TR_DIMS are left unnoted, so such a reader keeps its guard. */
static void note_scalar(rg *c, const tir_buffer *b, int n, const tir_expr *const *idx,
                        bool write) {
    if (b->scope != TIR_SCOPE_GLOBAL && n >= 1 && n <= TR_DIMS)
        note_range(c, b, n, idx, write, 1, 1);
}

/* Tile operand a, a rows x cols tile at its index: both corners within
 * the buffer's shape. */
static void check_tile(rg *c, const tir_expr *a, int rows, int cols) {
    const tir_buffer_load *l = tile_operand(a);
    /* a global operand (a frag_load straight from memory) could read
     * before or past the buffer for the extra tiles: never relaxed */
    if (l->buffer->scope == TIR_SCOPE_GLOBAL || l->nidx < 2) {
        c->inb = false;
        return;
    }
    check_access(c, l->buffer, l->nidx, l->indices);
    if (!c->inb) return;
    tir_ctx *ctx = c->st->ctx;
    const tir_expr **far = IR_NEWN(ctx, const tir_expr *, l->nidx);
    for (int d = 0; d < l->nidx; d++) far[d] = l->indices[d];
    int n = l->nidx;
    far[n - 2] = tir_add(ctx, far[n - 2], tir_int(ctx, far[n - 2]->dtype, rows - 1));
    far[n - 1] = tir_add(ctx, far[n - 1], tir_int(ctx, far[n - 1]->dtype, cols - 1));
    check_access(c, l->buffer, n, far);
}

/* A tile call's operands: the destination fragment's tile (frag_fill,
 * frag_load, whose source has the same tile) or each fragment's own (mma). */
static void tile_in_bounds(rg *c, const tir_call *k) {
    int r, q;
    bool mma = k->op == TIR_INTRIN_MMA_SYNC;
    int n = mma ? 3 : k->op == TIR_INTRIN_FRAG_LOAD ? 2 : 1; /* a fill's value is no tile */
    for (int i = 0; i < n && c->inb; i++) {
        const tir_buffer *own = tile_operand(k->args[i])->buffer;
        const tir_buffer *shape = mma ? own : tile_operand(k->args[0])->buffer;
        if (!frag_tile(shape, &r, &q)) {
            c->inb = false;
            return;
        }
        check_tile(c, k->args[i], r, q);
        const tir_buffer_load *l = tile_operand(k->args[i]);
        note_range(c, l->buffer, l->nidx, l->indices, i == 0, r, q);
        if (i == 0 && mma) /* the accumulator is read too */
            note_range(c, l->buffer, l->nidx, l->indices, false, r, q);
    }
}

/* Walks s checking every shared/local access, the loops inside bound. */
static void in_bounds(rg *c, const tir_stmt *s) {
    if (!s || !c->inb) return;
    tir_visitor v = {.pre = inb_expr_pre, .user = c};
    switch ((tir_kind)s->kind) {
    case TIR_KIND_FOR: {
        const tir_for *f = (const tir_for *)s;
        tir_analyzer_bind(c->an, f->var, f->min, f->extent);
        in_bounds(c, f->body);
        break;
    }
    case TIR_KIND_SEQ: {
        const tir_seq *q = (const tir_seq *)s;
        for (int i = 0; i < q->n; i++) in_bounds(c, q->stmts[i]);
        break;
    }
    case TIR_KIND_IF: {
        const tir_if *i = (const tir_if *)s;
        tir_visit(&v, i->cond);
        in_bounds(c, i->then_s);
        in_bounds(c, i->else_s);
        break;
    }
    case TIR_KIND_BUFFER_STORE: {
        const tir_buffer_store *st = (const tir_buffer_store *)s;
        check_access(c, st->buffer, st->nidx, st->indices);
        note_scalar(c, st->buffer, st->nidx, st->indices, true);
        tir_visit(&v, s);
        break;
    }
    case TIR_KIND_EVALUATE: {
        const tir_call *k = tile_call(s);
        if (k) tile_in_bounds(c, k);
        else c->inb = false;
        break;
    }
    default: c->inb = false; break;
    }
}

/* ---- bounds under a kept guard
 *
 * A kept guard narrows its variables: a copy split over more threads than
 * the tile has elements runs `if (ty * 256 + tx * 8 + v < 256)` around the
 * domain guard of its block, so only ty = 0 runs it.  Without that fact
 * in_bounds sees ty = 1 write past the tile and keeps the domain guard as a
 * plain `if`, and the tile's elements past the shape are never written:
 * harmless on the GPU when only clipped outputs read them (a tensorized
 * B tile at N = 12), but an uninitialised read in the simulator.  So a
 * conjunct `sum a_i * v_i + c < C` with constant a_i bounds each v_i with
 * a_i > 0 by the others' minima while the guard's body is collected. */

enum { MAXLIN = 8 };

typedef struct lin {
    const tir_var *v[MAXLIN];
    int64_t a[MAXLIN];
    int n;
    int64_t c;
} lin;

/* e * scale added to l; false when e is not linear in variables. */
static bool linear(const tir_expr *e, int64_t scale, lin *l) {
    int64_t k;
    if (tir_expr_const_int(e, &k)) return l->c += k * scale, true;
    const tir_binop *b = (const tir_binop *)e;
    switch ((tir_kind)e->kind) {
    case TIR_KIND_VAR:
        if (l->n == MAXLIN) return false;
        l->v[l->n] = (const tir_var *)e, l->a[l->n++] = scale;
        return true;
    case TIR_KIND_ADD: return linear(b->a, scale, l) && linear(b->b, scale, l);
    case TIR_KIND_SUB: return linear(b->a, scale, l) && linear(b->b, -scale, l);
    case TIR_KIND_MUL:
        if (tir_expr_const_int(b->b, &k)) return linear(b->a, scale * k, l);
        if (tir_expr_const_int(b->a, &k)) return linear(b->b, scale * k, l);
        return false;
    default: return false;
    }
}

static void push_cap(rg *c, const tir_expr *e, int64_t C) {
    cap *k = ir_xcalloc(1, sizeof *k);
    *k = (cap){e, C};
    ir_vec_push(&c->caps, k);
}

static void pop_caps(rg *c, int to) {
    while (c->caps.n > to) free((void *)c->caps.items[--c->caps.n]);
}

/* l with each variable once (coefficients summed). */
static void merge_terms(lin *l) {
    int n = 0;
    for (int i = 0; i < l->n; i++) {
        int j = 0;
        while (j < n && l->v[j] != l->v[i]) j++;
        if (j < n) l->a[j] += l->a[i];
        else l->v[n] = l->v[i], l->a[n++] = l->a[i];
    }
    l->n = n;
}

/* The largest value x can take under cap k, or INT64_MAX. */
static int64_t cap_max(rg *c, const lin *x, const cap *k) {
    lin e = {0};
    if (!linear(k->e, 1, &e)) return INT64_MAX;
    merge_terms(&e);
    int64_t ratio = 0, rest = e.c;
    bool used[MAXLIN] = {false};
    for (int i = 0; i < x->n; i++) {
        int j = 0;
        while (j < e.n && e.v[j] != x->v[i]) j++;
        if (j == e.n || x->a[i] == 0 || e.a[j] % x->a[i]) return INT64_MAX;
        int64_t r = e.a[j] / x->a[i];
        if (r <= 0 || (ratio && r != ratio)) return INT64_MAX;
        ratio = r, used[j] = true;
    }
    for (int j = 0; j < e.n; j++) {
        if (used[j]) continue;
        tir_int_bound b = tir_analyzer_const_bound(c->an, (const tir_expr *)e.v[j]);
        if (b.min <= -(1 << 30) || b.max >= (1 << 30)) return INT64_MAX;
        rest += e.a[j] * (e.a[j] > 0 ? b.min : b.max);
    }
    rest -= ratio * x->c; /* e = ratio * x + rest, x's constant inside x */
    int64_t num = k->C - 1 - rest;
    return num >= 0 ? num / ratio : -((-num + ratio - 1) / ratio);
}

/* x, or a new variable standing for it when some cap bounds it more
 * tightly than its variables do. */
static const tir_node *uncap_one(tir_mutator *m, const tir_node *n) {
    rg *c = m->user;
    const tir_expr *x = (const tir_expr *)n;
    lin l = {0};
    if (linear(x, 1, &l)) {
        merge_terms(&l);
        tir_int_bound b = tir_analyzer_const_bound(c->an, x);
        int64_t hi = b.max;
        for (int i = 0; l.n >= 2 && i < c->caps.n; i++) {
            int64_t h = cap_max(c, &l, c->caps.items[i]);
            if (h < hi) hi = h;
        }
        if (hi < b.max && hi >= b.min) {
            const tir_var *w = tir_var_new(m->ctx, "cap", x->dtype);
            tir_analyzer_bind_const(c->an, w, b.min, hi - b.min + 1);
            return (const tir_node *)w;
        }
    }
    return tir_mutate_default(m, n);
}

static const tir_expr *uncap(rg *c, const tir_expr *x) {
    if (!c->caps.n) return x;
    tir_mutator m = {.ctx = c->st->ctx, .user = c};
    m.on[TIR_KIND_ADD] = m.on[TIR_KIND_SUB] = m.on[TIR_KIND_MUL] = uncap_one;
    return tir_mutate_expr(&m, x);
}

typedef struct saved {
    const tir_var *v;
    tir_int_bound old;
} saved;

/* Narrows the variables of cond's `linear < constant` conjuncts; the old
 * bounds go to out (at most cap), their count is returned. */
static int narrow(rg *c, const tir_expr *cond, saved *out, int cap) {
    ir_vec conj = {0};
    split_and(cond, &conj);
    int ns = 0;
    for (int j = 0; j < conj.n; j++) {
        const tir_expr *e = conj.items[j];
        int64_t C;
        lin l = {0};
        if (e->kind != TIR_KIND_LT || !tir_expr_const_int(((const tir_binop *)e)->b, &C) ||
            !linear(((const tir_binop *)e)->a, 1, &l))
            continue;
        tir_int_bound bd[MAXLIN];
        bool finite = true;
        for (int i = 0; i < l.n; i++) {
            bd[i] = tir_analyzer_const_bound(c->an, (const tir_expr *)l.v[i]);
            finite &= bd[i].min > -(1 << 30) && bd[i].max < (1 << 30);
        }
        if (!finite) continue;
        if (l.n >= 2) push_cap(c, ((const tir_binop *)e)->a, C);
        for (int i = 0; i < l.n && ns < cap; i++) {
            if (l.a[i] <= 0 || l.a[i] > (1 << 20)) continue;
            int64_t rest = l.c;
            for (int k = 0; k < l.n; k++)
                if (k != i) rest += l.a[k] * (l.a[k] > 0 ? bd[k].min : bd[k].max);
            int64_t num = C - 1 - rest, hi = num >= 0 ? num / l.a[i] : -((-num + l.a[i] - 1) / l.a[i]);
            if (hi >= bd[i].max || hi < bd[i].min) continue; /* nothing new, or never runs */
            out[ns++] = (saved){l.v[i], bd[i]};
            tir_analyzer_bind_const(c->an, l.v[i], bd[i].min, hi - bd[i].min + 1);
            bd[i].max = hi;
        }
    }
    ir_vec_free(&conj);
    return ns;
}

static void restore(rg *c, const saved *s, int n) {
    for (int i = n - 1; i >= 0; i--)
        tir_analyzer_bind_const(c->an, s[i].v, s[i].old.min, s[i].old.max - s[i].old.min + 1);
}

/* Pass 1: every marked guard, safe when its accesses stay in bounds. */
static void collect(rg *c, const tir_stmt *s) {
    if (!s) return;
    switch ((tir_kind)s->kind) {
    case TIR_KIND_FOR: {
        const tir_for *f = (const tir_for *)s;
        tir_analyzer_bind(c->an, f->var, f->min, f->extent);
        collect(c, f->body);
        break;
    }
    case TIR_KIND_SEQ: {
        const tir_seq *q = (const tir_seq *)s;
        for (int i = 0; i < q->n; i++) collect(c, q->stmts[i]);
        break;
    }
    case TIR_KIND_ALLOCATE: collect(c, ((const tir_allocate *)s)->body); break;
    case TIR_KIND_IF: {
        const tir_if *i = (const tir_if *)s;
        const tir_expr *cond;
        int kind;
        if (marked(i, &cond, &kind)) {
            guard *g = ir_xcalloc(1, sizeof *g);
            c->inb = true;
            c->cur = g;
            in_bounds(c, i->then_s);
            c->cur = NULL;
            g->node = i, g->kind = kind, g->safe = c->inb && !i->else_s;
            g->always = tir_analyzer_can_prove(c->an, cond);
            ir_vec_push(&c->guards, g);
            collect(c, i->then_s);
        } else {
            saved sv[16];
            int ncaps = c->caps.n, ns = narrow(c, i->cond, sv, 16);
            collect(c, i->then_s);
            restore(c, sv, ns);
            pop_caps(c, ncaps);
        }
        collect(c, i->else_s);
        break;
    }
    default: break;
    }
}

/* ---- pass 2: what a relaxed block reads must be written unguarded */

typedef struct ws {
    rg *c;
    ir_vec stores; /* wstore* (heap) */
} ws;

typedef struct wstore {
    const tir_buffer *buf;
    const guard *owner; /* the safe guard whose block holds the store, or NULL */
    bool guarded;       /* under an if that stays */
    int nidx;           /* the store's index, or the tile's origin */
    const tir_expr *const *idx;
} wstore;

static void push_store(ws *w, const tir_buffer *b, int nidx, const tir_expr *const *idx,
                       const guard *owner, bool guarded) {
    if (b->scope == TIR_SCOPE_GLOBAL) return;
    wstore *x = ir_xcalloc(1, sizeof *x);
    *x = (wstore){b, owner, guarded, nidx, idx};
    ir_vec_push(&w->stores, x);
}

static void stores(ws *w, const tir_stmt *s, const guard *owner, bool guarded) {
    if (!s) return;
    switch ((tir_kind)s->kind) {
    case TIR_KIND_FOR: stores(w, ((const tir_for *)s)->body, owner, guarded); break;
    case TIR_KIND_ALLOCATE: stores(w, ((const tir_allocate *)s)->body, owner, guarded); break;
    case TIR_KIND_SEQ: {
        const tir_seq *q = (const tir_seq *)s;
        for (int i = 0; i < q->n; i++) stores(w, q->stmts[i], owner, guarded);
        break;
    }
    case TIR_KIND_IF: {
        const tir_if *i = (const tir_if *)s;
        guard *g = find_guard(w->c, i);
        if (g && g->safe) {
            stores(w, i->then_s, g, guarded);
        } else {
            /* ifs inside a relaxed block run for its extra instances too
             * (a k guard around an update); but a kept if around tile
             * calls leaves their tiles unwritten */
            bool inner = owner != NULL && !tile_body(i->then_s);
            stores(w, i->then_s, owner, guarded || !inner);
            stores(w, i->else_s, owner, guarded || !inner);
        }
        break;
    }
    case TIR_KIND_BUFFER_STORE: {
        const tir_buffer_store *st = (const tir_buffer_store *)s;
        push_store(w, st->buffer, st->nidx, st->indices, owner, guarded);
        break;
    }
    case TIR_KIND_EVALUATE: {
        /* a tile call writes its first operand (mma_sync reads it too),
         * frag_store its second (clipped to the shape: a relaxed reader
         * past it finds it unwritten) */
        const tir_call *k = tile_call(s);
        bool store = !k && (k = call_of(s, TIR_INTRIN_FRAG_STORE, 2)) != NULL;
        if (!k) break;
        const tir_buffer_load *d = tile_operand(k->args[store ? 1 : 0]);
        push_store(w, d->buffer, d->nidx, d->indices, owner, guarded);
        break;
    }
    default: break;
    }
}

typedef struct readck {
    const ws *w;
    const guard *g;
    ir_vec vars; /* the variables of the dropped guard */
    bool ok;
} readck;

static bool var_pre(tir_visitor *v, const tir_node *n) {
    ir_vec *vars = v->user;
    if (n->kind != TIR_KIND_VAR) return true;
    for (int i = 0; i < vars->n; i++)
        if (vars->items[i] == n) return true;
    ir_vec_push(vars, n);
    return true;
}

static bool uses_any(const tir_expr *e, const ir_vec *vars) {
    for (int i = 0; i < vars->n; i++)
        if (tir_uses_var(e, (const tir_var *)vars->items[i])) return true;
    return false;
}

static void guard_vars(const guard *g, ir_vec *vars) {
    const tir_expr *cond;
    int kind;
    TIR_ASSERT(marked(g->node, &cond, &kind));
    tir_visitor cv = {.pre = var_pre, .user = vars};
    tir_visit(&cv, cond);
}

/* Whether store x, in a relaxed or zero-filled block, also writes past
 * the shape along every dimension d in which load l may read past it
 * (l's index uses the dropped guard's variables): x's index in d uses
 * its own dropped guard's variables. */
static bool writes_past(const readck *r, const tir_buffer_load *l, const wstore *x) {
    ir_vec xv = {0};
    guard_vars(x->owner, &xv);
    bool ok = x->nidx == l->nidx;
    for (int d = 0; d < l->nidx && ok; d++)
        if (uses_any(l->indices[d], &r->vars)) ok = uses_any(x->idx[d], &xv);
    ir_vec_free(&xv);
    return ok;
}

static const trange *find_range(const guard *g, const tir_buffer *b, bool write) {
    for (int i = 0; g && i < g->ranges.n; i++) {
        const trange *t = g->ranges.items[i];
        if (t->buf == b && t->write == write) return t;
    }
    return NULL;
}

/* A reader's extra instances must read what other blocks' extra
 * instances wrote: where r noted the elements it reads of l's buffer
 * (tile calls and scalar loads), the elements the other writers noted
 * (every one must have) span them in each dimension in which r may read
 * past the shape.  (A fill of 4 tiles and an mma of 5 under the same
 * bound fail; the two halves of a B pair together span the mma's
 * columns; a relaxed C reading B[0..3] of a B zero-filled over [0..2]
 * fails: GPU-path fuzzer, seed 2220000000 case 10473.) */
static bool spans(const readck *r, const tir_buffer_load *l) {
    const trange *rd = find_range(r->g, l->buffer, false);
    if (!rd) return l->nidx <= TR_DIMS; /* unnoted: a global load, or too high a rank */
    int64_t lo[TR_DIMS], hi[TR_DIMS];
    int others = 0;
    for (int d = 0; d < TR_DIMS; d++) lo[d] = INT64_MAX, hi[d] = INT64_MIN;
    for (int i = 0; i < r->w->stores.n; i++) {
        const wstore *x = r->w->stores.items[i];
        if (x->buf != l->buffer || x->owner == r->g) continue;
        const trange *wr = find_range(x->owner, l->buffer, true);
        if (!wr) return false;
        others++;
        for (int d = 0; d < TR_DIMS; d++) {
            if (wr->lo[d] < lo[d]) lo[d] = wr->lo[d];
            if (wr->hi[d] > hi[d]) hi[d] = wr->hi[d];
        }
    }
    if (!others) return true; /* only r's own instances write it (an accumulator) */
    for (int d = 0; d < l->nidx && d < TR_DIMS; d++)
        if (uses_any(l->indices[d], &r->vars) && (lo[d] > rd->lo[d] || hi[d] < rd->hi[d]))
            return false;
    return true;
}

/* A relaxed block's load that may read past the shape needs every other
 * store to that buffer inside a relaxed or zero-filled block (which
 * writes past the shape too): a store under a kept guard, or one with no
 * guard at all (it writes the shape only), would leave the elements the
 * load reads unwritten (GPU-path fuzzer, seed 1797100006: a relaxed C
 * read B[11] of a 11-wide B written by an exact loop). */
static bool read_pre(tir_visitor *v, const tir_node *n) {
    readck *r = v->user;
    const tir_call *k = (const tir_call *)n;
    if (n->kind == TIR_KIND_CALL && (k->op == TIR_INTRIN_FRAG_LOAD || k->op == TIR_INTRIN_FRAG_FILL)) {
        /* the destination (operand 0) is written, not read */
        for (int i = 1; i < k->nargs; i++) tir_visit(v, k->args[i]);
        return false;
    }
    if (n->kind != TIR_KIND_BUFFER_LOAD) return r->ok;
    const tir_buffer_load *l = (const tir_buffer_load *)n;
    bool past = false;
    for (int d = 0; d < l->nidx; d++) past |= uses_any(l->indices[d], &r->vars);
    for (int i = 0; i < r->w->stores.n && r->ok; i++) {
        const wstore *x = r->w->stores.items[i];
        if (x->buf != l->buffer || x->owner == r->g) continue;
        if (x->guarded || (past && (!x->owner || !writes_past(r, l, x)))) r->ok = false;
    }
    if (r->ok && past && !spans(r, l)) r->ok = false;
    return r->ok;
}

/* Marks unsafe each relaxed guard that reads a buffer some store leaves
 * unwritten past the guard, until nothing changes. */
static void settle(rg *c, const tir_stmt *body) {
    for (bool changed = true; changed;) {
        changed = false;
        ws w = {c, {0}};
        stores(&w, body, NULL, false);
        for (int k = 0; k < c->guards.n; k++) {
            guard *g = (guard *)c->guards.items[k];
            if (!g->safe || g->kind != GUARD_RELAX) continue;
            readck r = {&w, g, {0}, true};
            guard_vars(g, &r.vars);
            tir_visitor v = {.pre = read_pre, .user = &r};
            tir_visit(&v, g->node->then_s);
            ir_vec_free(&r.vars);
            if (!r.ok) g->safe = false, changed = true;
        }
        for (int i = 0; i < w.stores.n; i++) free((void *)w.stores.items[i]);
        ir_vec_free(&w.stores);
    }
}

/* ---- pass 3: the rewrite */

static const tir_node *on_if(tir_mutator *m, const tir_node *n) {
    rg *c = m->user;
    const tir_if *i = (const tir_if *)n;
    const tir_expr *cond;
    int kind;
    if (!marked(i, &cond, &kind)) return tir_mutate_default(m, n);
    const guard *g = find_guard(c, i);
    TIR_ASSERT(g);
    const tir_stmt *then_s = tir_mutate_stmt(m, i->then_s);
    if (g->always) return (const tir_node *)then_s;
    if (!g->safe) return (const tir_node *)tir_if_new(m->ctx, cond, then_s, NULL);
    if (kind == GUARD_RELAX) return (const tir_node *)then_s;
    const tir_buffer_store *st = (const tir_buffer_store *)then_s;
    tir_dtype t = st->value->dtype;
    const tir_expr *zero = tir_dtype_is_float(t) ? tir_float(m->ctx, t, 0) : tir_int(m->ctx, t, 0);
    const tir_stmt *fill = tir_store(m->ctx, st->buffer, zero, st->nidx, st->indices);
    return (const tir_node *)tir_if_new(m->ctx, cond, then_s, fill);
}

tir_status lower_relax_guards(lower_state *st, const tir_prim_func *in,
                              const tir_prim_func **out) {
    rg c = {.st = st, .an = tir_analyzer_create(st->ctx)};
    collect(&c, in->body);
    for (int k = 0; k < c.guards.n; k++) {
        guard *g = (guard *)c.guards.items[k];
        if (g->kind == GUARD_ZERO_FILL && g->node->then_s->kind != TIR_KIND_BUFFER_STORE)
            g->safe = false;
    }
    settle(&c, in->body);
    tir_mutator m = {.ctx = st->ctx, .user = &c};
    m.on[TIR_KIND_IF] = on_if;
    const tir_stmt *body = tir_mutate_stmt(&m, in->body);
    for (int k = 0; k < c.guards.n; k++) {
        guard *g = (guard *)c.guards.items[k];
        for (int i = 0; i < g->ranges.n; i++) free((void *)g->ranges.items[i]);
        ir_vec_free(&g->ranges);
        free(g);
    }
    ir_vec_free(&c.guards);
    TIR_ASSERT(c.caps.n == 0);
    ir_vec_free(&c.caps);
    tir_analyzer_destroy(c.an);
    *out = body == in->body ? in
                            : tir_prim_func_new(st->ctx, in->name, in->nparams, in->params,
                                                in->buffer_map, body, in->nattrs, in->attrs);
    return TIR_OK;
}
