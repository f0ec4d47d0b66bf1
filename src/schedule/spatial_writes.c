/* spatial_writes.c: tir_sched_create's check that the instances of a
 * block that differ in a spatial iterator write distinct elements.
 *
 * Primitives take a block whose iterators are all spatial as one whose
 * instances are independent: reorder, bind and reverse_compute_inline run
 * them in any order.  A block storing C[vi + vj] (or C[vi // 2]) from
 * several instances means "the last one wins", which any reordering
 * changes silently (on a GPU, threads race on the element).  A reduction
 * is the same along its spatial iterators: instances that differ only in
 * reduce iterators accumulate into one element (they may store it, and
 * the proof leaves their digits free), but C[vi // 2] += A[vi, vk] with vi
 * spatial is a mislabelled reduction that bind and parallel race on.  The
 * init's stores count as the block's (at the reduce iterators' minimum,
 * where the init runs).  A reduce iterator in an output index is taken as
 * it is (C[vi, vk] proved, C[vi + vk] refused); the primitives that need a
 * reduction refuse such a block anyway.  Per block, three outcomes:
 *
 * - proved injective (accepted): each store's indices are affine in the
 *   "digits" of the block's iterators (v // c and v % c split an iterator
 *   at c, as global_share.c does for loop variables; the digits, affine
 *   forms and forcing step are ir/digits.c's, shared with it), and for two
 *   instances x1, x2 writing one element every digit difference is
 *   forced to zero: in each dimension, sum c (x1 - x2) + (the rest) = 0,
 *   and a slot whose coefficient exceeds what all other slots can add up
 *   to must be zero; forced slots are zero in every dimension, so this
 *   repeats.  It needs no enumeration and takes symbolic extents (a slot
 *   of unknown range is forced only when all others are bounded).  A
 *   Ramp index (a vector store) is start + stride * lane, the lane a
 *   variable of [0, lanes) free within one instance, like a loop inside
 *   the block.  Two stores to one buffer are proved the same way: they
 *   never meet, or only from one instance; only when their merged (e //
 *   c, e % c) pairs are at the same places with the same c (pairs of
 *   different c, e1 // 4 and e2 // 8, meet where e1 != e2).  A predicate
 *   only drops instances, so a proof over the whole domain holds under
 *   it;
 * - proved colliding (refused): a witness, two instances that differ in a
 *   spatial iterator storing one element, found from the affine form (a
 *   spatial digit no index uses, or two digits whose coefficient columns
 *   are proportional, vi + vj, vi + vk, or an iterator's and a loop's
 *   inside the block, vi + t, the loop moved the other way in the second
 *   instance; for two stores whose forms differ in their constants only,
 *   B[vi] and B[vi + 1], a digit making up the difference) and checked by
 *   evaluation (indices, the loops' ranges, the predicate and the body's
 *   conditions), or found by enumerating constant domains (every instance
 *   when there are at most 2^16 (fewer with many stores, lanes or inner
 *   iterations), else a corner: the first values of each iterator; every
 *   lane of a vector store; every value of the loops inside the block,
 *   of constant ranges, where the store's conditions hold; a reduce
 *   iterator no index uses held at one value).
 *   A witness needs instances that surely run: every iterator bound to
 *   loops of its own as densely as mixed radix digits (vi = i, vi = i_0 *
 *   32 + i_1), its values those the loops give (the predicate is
 *   evaluated at the loops' values);
 * - an iterator whose loop also runs other statements (a hand-written
 *   staging copy `AS[vi] = A[vk, vi]` under k, rewriting AS on each step
 *   for a consumer of the same step: software_pipeline's tests) is held at
 *   one value: the instances must write distinct elements within one step
 *   of that loop;
 * - neither (accepted, the documented rule of docs/text-format.md): an
 *   index through memory (a scatter), a symbolic coefficient, a division
 *   of a sum that no dimension pair undoes, with no witness found (past
 *   2^16 instances, when the corner holds none, an iterator bound
 *   otherwise (f // 4, a loop shared by two iterators), a store under an
 *   else or an inner loop of no constant range past the affine witness,
 *   more than SW_STORES (256) stores); the
 *   block is then the author's promise that its instances (those that
 *   differ in a spatial iterator) write distinct elements, as in TVM.
 *
 * A nested block's stores are the block's too (each nested block is also
 * checked on its own): its iterators replaced by their bindings, so the
 * loops between the blocks are inner variables, free within one instance
 * of the outer block, the nested block's predicate a condition and its
 * init's stores under a condition not evaluated (seen by the proof, never
 * a witness).  Stores to a buffer allocated inside the block or a nested
 * one (each instance has its own) are left out; writes through calls (a
 * tensor intrinsic) are not seen.
 */
#include <stdlib.h>
#include <string.h>

#include "ir/digits_internal.h"
#include "sched_internal.h"

/* Enumeration limit: instances of the block. */
#define ENUM_POINTS ((int64_t)1 << 16)

enum { SW_STORES = 256, SW_VARS = 24, SW_TERMS = 32, SW_DIMS = 8, SW_SLOTS = 64, SW_NEST = 8,
       SW_SUBS = 32 };

/* A variable of the indices: one of the block's iterators (its digits
 * must be told apart), a loop inside the block's body (free within one
 * instance) or anything else (a parameter: one value for both). */
typedef enum { V_ITER, V_INNER, V_FIXED } vkind;

/* A variable and its digits (ir/digits.c): dv's range is its domain's or
 * loop's (any: no constant range), its tag the kind, so that a term of
 * its digits tells whether it is fixed. */
typedef struct dvar {
    const tir_var *var;
    vkind kind;
    int it; /* the iterator's index (V_ITER) */
    ir_digit_var dv;
} dvar;

/* One store of the block's body, with the loops and conditions inside the
 * block around it. */
typedef struct wstore {
    const tir_buffer_store *st;
    const tir_for *loops[SW_NEST];
    const tir_expr *conds[SW_NEST]; /* NULL: below the else of an if (not evaluated) */
    const tir_buffer *allocs[SW_NEST]; /* allocated inside the block (while collecting) */
 /* (while collecting) nested blocks' iterators and their bindings, in
     * the outer block's terms */
    const tir_var *sub_v[SW_SUBS];
    const tir_expr *sub_e[SW_SUBS];
    int nloops, nconds, nallocs, nsub;
    int nd;          /* dimensions after merging (e // c, e % c) pairs */
    unsigned merged; /* bit d: indices d and d + 1 were merged */
    int64_t mdiv[SW_DIMS]; /* dimension k merged from (e // c, e % c): c, else 0 */
    ir_lin dims[SW_DIMS];
    bool affine;
    bool init; /* a store of the block's T.init() (runs with the reduce iterators at their min) */
} wstore;

/* An iterator bound to sum c[j] * loop j + k over loops of its own, as
 * dense as mixed radix digits: sorted by c, c[0] = 1 and c[j + 1] = c[j]
 * times loop j's extent (vi = i, vi = i_0 * 32 + i_1).  Its values are
 * then exactly [base, base + span) (span -1: the outermost loop's extent
 * is not constant). */
enum { SW_BLOOPS = 4 };
typedef struct binding {
    const tir_for *l[SW_BLOOPS];
    int64_t c[SW_BLOOPS];
    int nl;
    int64_t base, span;
} binding;

typedef struct sw {
    tir_ctx *ctx;
    const tir_block_realize *r;
    const tir_block *b;
    binding bind[8]; /* iterator i's binding (a witness's instances run) */
    bool held[8];    /* one of iterator i's loops holds other statements too */
    dvar d[SW_VARS];
    int nd;
    bool bad; /* too many variables, digits or stores */
    wstore *s; /* on the heap, grown as stores are found (at most SW_STORES) */
    int ns, cap;
    const wstore *cur;
} sw;

/* ---------------------------------------------------------------- stores */

static void collect(sw *w, const tir_stmt *s, wstore *at) {
    if (!s || w->bad) return;
    switch ((tir_kind)s->kind) {
    case TIR_KIND_BUFFER_STORE:
        for (int i = 0; i < w->b->nallocs; i++) /* each instance has its own */
            if (w->b->allocs[i] == tir_as_tir_buffer_store(s)->buffer) return;
        for (int i = 0; i < at->nallocs; i++)
            if (at->allocs[i] == tir_as_tir_buffer_store(s)->buffer) return;
        if (w->ns == w->cap) {
            int cap = w->cap ? 2 * w->cap : 8;
            wstore *ns = w->ns < SW_STORES ? realloc(w->s, sizeof *ns * (size_t)cap) : NULL;
            if (!ns) {
                w->bad = true;
                return;
            }
            w->s = ns, w->cap = cap;
        }
        w->s[w->ns] = *at;
        /* a nested block's store in the outer block's terms */
        w->s[w->ns++].st = at->nsub ? tir_as_tir_buffer_store(tir_substitute(
                                          w->ctx, s, at->nsub, at->sub_v, at->sub_e))
                                    : tir_as_tir_buffer_store(s);
        return;
    case TIR_KIND_SEQ: {
        const tir_seq *q = tir_as_tir_seq(s);
        for (int i = 0; i < q->n; i++) collect(w, q->stmts[i], at);
        return;
    }
    case TIR_KIND_FOR: case TIR_KIND_IF: {
        if (at->nloops == SW_NEST || at->nconds == SW_NEST) {
            w->bad = true;
            return;
        }
        wstore in = *at;
        if (s->kind == TIR_KIND_FOR) {
            in.loops[in.nloops++] = tir_as_tir_for(s);
            collect(w, tir_as_tir_for(s)->body, &in);
            return;
        }
        const tir_if *f = tir_as_tir_if(s);
        in.conds[in.nconds++] = in.nsub ? (const tir_expr *)tir_substitute(
                                              w->ctx, f->cond, in.nsub, in.sub_v, in.sub_e)
                                        : f->cond;
        collect(w, f->then_s, &in);
        in.conds[in.nconds - 1] = NULL;
        collect(w, f->else_s, &in);
        return;
    }
    case TIR_KIND_ALLOCATE: {
        if (at->nallocs == SW_NEST) {
            w->bad = true;
            return;
        }
        wstore in = *at;
        in.allocs[in.nallocs++] = tir_as_tir_allocate(s)->buffer;
        collect(w, tir_as_tir_allocate(s)->body, &in);
        return;
    }
    case TIR_KIND_BLOCK_REALIZE: {
        /* A nested block's stores are the outer instance's too: its
         * iterators replaced by their bindings (in the loops inside the
         * outer block, free within one outer instance), its predicate a
         * condition, its allocations its own; its init's stores under a
         * condition not evaluated (they run at its reduce iterators'
         * minimum), so only the proof sees them. */
        const tir_block_realize *r = tir_as_tir_block_realize(s);
        const tir_block *nb = r->block;
        if (at->nconds + 2 > SW_NEST || at->nallocs + nb->nallocs > SW_NEST ||
            at->nsub + nb->niters > SW_SUBS) {
            w->bad = true;
            return;
        }
        wstore in = *at;
        for (int i = 0; i < nb->niters; i++) {
            const tir_expr *v = r->values[i];
            if (at->nsub) v = (const tir_expr *)tir_substitute(w->ctx, v, at->nsub, at->sub_v, at->sub_e);
            in.sub_v[in.nsub] = nb->iters[i].var, in.sub_e[in.nsub++] = v;
        }
        for (int i = 0; i < nb->nallocs; i++) in.allocs[in.nallocs++] = nb->allocs[i];
        if (r->predicate)
            in.conds[in.nconds++] = at->nsub ? (const tir_expr *)tir_substitute(
                                                   w->ctx, r->predicate, at->nsub, at->sub_v,
                                                   at->sub_e)
                                             : r->predicate;
        collect(w, nb->body, &in);
        in.conds[in.nconds++] = NULL;
        collect(w, nb->init, &in);
        return;
    }
    default: return;
    }
}

/* ---------------------------------------------------------------- digits */

/* Whether iterator i is a reduce iterator: its instances may store one
 * element (they accumulate into it), so no proof or witness is about it. */
static bool reduce_iter(const sw *w, int i) {
    return i >= 0 && w->b->iters[i].kind == TIR_ITER_REDUCE;
}

/* The entry of variable v, made if new. */
static dvar *entry(sw *w, const tir_var *v) {
    for (int i = 0; i < w->nd; i++)
        if (w->d[i].var == v) return &w->d[i];
    if (w->nd == SW_VARS) {
        w->bad = true;
        return NULL;
    }
    dvar *d = &w->d[w->nd];
    *d = (dvar){.var = v, .kind = V_FIXED, .it = -1};
    int64_t mn, ex, lo = 0, hi = 0;
    bool any = true;
    const tir_expr *emin = NULL, *eext = NULL;
    for (int i = 0; i < w->b->niters; i++)
        if (w->b->iters[i].var == v && !w->held[i]) {
            d->kind = V_ITER, d->it = i;
            emin = w->b->iters[i].dom.min, eext = w->b->iters[i].dom.extent;
        }
    for (int i = 0; w->cur && d->kind == V_FIXED && i < w->cur->nloops; i++)
        if (w->cur->loops[i]->var == v) {
            d->kind = V_INNER;
            emin = w->cur->loops[i]->min, eext = w->cur->loops[i]->extent;
        }
    /* ranges within 2^40, so that sums of products stay in 128 bits */
    if (emin && tir_expr_const_int(emin, &mn) && tir_expr_const_int(eext, &ex) && ex > 0 &&
        ex < (INT64_C(1) << 40) && mn > -(INT64_C(1) << 40) && mn < (INT64_C(1) << 40))
        lo = mn, hi = mn + ex - 1, any = false;
    d->dv = ir_digit_var_make(lo, hi, any, d->kind);
    w->nd++;
    return d;
}

/* The lane of a Ramp index (start + stride * lane): a variable of one
 * instance, like a loop inside the block, of range [0, lanes); the ramp
 * node names it. */
static dvar *lane_entry(sw *w, const tir_ramp *ramp) {
    const tir_var *key = (const tir_var *)(const void *)ramp; /* compared, never read */
    for (int i = 0; i < w->nd; i++)
        if (w->d[i].var == key) return &w->d[i];
    if (w->nd == SW_VARS) {
        w->bad = true;
        return NULL;
    }
    dvar *d = &w->d[w->nd++];
    *d = (dvar){.var = key, .kind = V_INNER, .it = -1,
                .dv = ir_digit_var_make(0, ramp->lanes - 1, false, V_INNER)};
    return d;
}

static void add_boundary(sw *w, dvar *d, int64_t v) {
    if (!d || !ir_digit_split(&d->dv, v)) w->bad = true;
}

/* The variables of this check and their divisions, nested any way that
 * stays digits (global_share.c takes v // c, v % c and (v // m) % c of a
 * variable only): e as ((v % H) // L) (H == 0: no modulus) for a variable
 * v and constants L, H: v, v // c, v % c, (v // m) % c, (v % m) // c, ... */
static bool dpat(const tir_expr *e, const tir_var **v, int64_t *L, int64_t *H) {
    if (e->kind == TIR_KIND_VAR) {
        *v = tir_as_tir_var(e), *L = 1, *H = 0;
        return true;
    }
    int64_t c, l0, h0;
    if (e->kind != TIR_KIND_FLOORDIV && e->kind != TIR_KIND_FLOORMOD) return false;
    const tir_binop *bo = tir_as_tir_binop(e);
    if (!ir_const_int(bo->b, &c) || c < 1 || !dpat(bo->a, v, &l0, &h0)) return false;
    if (e->kind == TIR_KIND_FLOORDIV) { /* ((v % h0) // l0) // c = (v % h0) // (l0 c) */
        if (__builtin_mul_overflow(l0, c, L) || (h0 && (*L >= h0 || h0 % *L))) return false;
        *H = h0;
        return true;
    }
    /* ((v % h0) // l0) % c = (v % (l0 c)) // l0 */
    if (__builtin_mul_overflow(l0, c, H)) return false;
    if (h0 && *H >= h0) *H = h0; /* the value is below c already */
    else if (h0 && h0 % *H) return false;
    *L = l0;
    return true;
}

static bool note_pre(tir_visitor *v, const tir_node *n) {
    sw *w = v->user;
    const tir_var *var;
    int64_t L, H;
    if (dpat((const tir_expr *)n, &var, &L, &H)) {
        dvar *d = entry(w, var);
        add_boundary(w, d, L);
        if (H) add_boundary(w, d, H);
        return false;
    }
    return true;
}

/* Every boundary divides the next. */
static bool digits_ok(const sw *w) {
    if (w->bad) return false;
    for (int i = 0; i < w->nd; i++)
        if (!ir_digits_nested(&w->d[i].dv)) return false;
    return true;
}

/* ---------------------------------------------------------------- affine */

/* ir_lin_add's leaf: ((v % H) // L) of a variable (dpat), digits L up to
 * H of v (H == 0: up to the last). */
static bool lin_leaf(void *user, const tir_expr *e, int64_t scale, ir_lin *l) {
    sw *w = user;
    int64_t L, H;
    const tir_var *var;
    if (!dpat(e, &var, &L, &H)) return false;
    const dvar *d = entry(w, var);
    int from = d ? ir_digit_at(&d->dv, L) : -1;
    int to = !d ? -1 : H ? ir_digit_at(&d->dv, H) : d->dv.nb;
    return from >= 0 && to > from && ir_lin_add_digits(l, &d->dv, from, to, scale);
}

/* l += scale * e; false when e is not affine in the digits. */
static bool lin_add(sw *w, const tir_expr *e, int64_t scale, ir_lin *l) {
    return ir_lin_add(e, scale, l, lin_leaf, w);
}

/* The store's dimensions as affine forms; a pair (e // c, e % c) (a
 * reshape of a sum) is one dimension e, the same element exactly when e
 * is. */
static void store_forms(sw *w, wstore *s) {
    const tir_buffer_store *st = s->st;
    w->cur = s;
    s->affine = true, s->nd = 0, s->merged = 0;
    for (int d = 0; d < st->nidx && s->affine; d++) {
        const tir_expr *e = st->indices[d];
        int64_t div = 0;
        if (d + 1 < st->nidx && ir_divmod_pair(st->indices[d], st->indices[d + 1], &e, &div))
            s->merged |= 1u << d++;
        int64_t stride;
        const tir_ramp *ramp = e->kind == TIR_KIND_RAMP ? tir_as_tir_ramp(e) : NULL;
        if (s->nd == SW_DIMS ||
            (ramp ? !(tir_expr_const_int(ramp->stride, &stride) && ramp->lanes >= 1 &&
                      ramp->start->dtype.lanes == 1)
                  : e->dtype.lanes != 1)) {
            s->affine = false;
            break;
        }
        s->mdiv[s->nd] = div;
        ir_lin *l = &s->dims[s->nd++];
        ir_lin_init(l, SW_TERMS);
        s->affine = lin_add(w, ramp ? ramp->start : e, 1, l);
        if (ramp && s->affine) { /* + stride * lane, lane free in [0, lanes) */
            dvar *lane = lane_entry(w, ramp);
            s->affine = lane && ir_lin_add_digits(l, &lane->dv, 0, 1, stride);
        }
    }
    w->cur = NULL;
}

/* ----------------------------------------------------------------- proof */

/* A slot (ir_slot) here: key1 == key2 names a digit both sides have with
 * one coefficient (x its difference), NULL a term of one side only (never
 * forced).  A full table of forced slots (ir_forced.full) only stops the
 * forcing: what is forced by then still counts. */

/* The slots of la = lb; false when there are too many.  A fixed variable
 * (a parameter) has one value on both sides: with one coefficient it
 * cancels. */
static bool slots_of(const ir_lin *la, const ir_lin *lb, ir_slot *s, int *n) {
    bool used[SW_TERMS] = {false};
    *n = 0;
    for (int i = 0; i < la->n + lb->n; i++) {
        bool left = i < la->n;
        const ir_lin_term *x = left ? &la->t[i] : &lb->t[i - la->n];
        if (!left && used[i - la->n]) continue;
        ir_slot v = {left ? x->coef : -x->coef, x->lo, x->hi, x->any, NULL, NULL};
        for (int j = 0; left && j < lb->n; j++) {
            const ir_lin_term *y = &lb->t[j];
            if (used[j] || y->key != x->key || y->coef != x->coef) continue;
            used[j] = true;
            v = (ir_slot){x->coef, x->lo - y->hi, x->hi - y->lo, x->any, x->key, x->key};
            break;
        }
        if (v.key1 && x->tag == V_FIXED) continue; /* tag: the variable's kind */
        if (*n == SW_SLOTS) return false;
        s[(*n)++] = v;
    }
    return true;
}

/* Is every digit of every spatial iterator that can vary forced?  (The
 * reduce iterators' digits may differ: those instances accumulate.) */
static bool iters_forced(const sw *w, const ir_forced *f) {
    for (int i = 0; i < w->nd; i++) {
        const dvar *d = &w->d[i];
        for (int j = 0; d->kind == V_ITER && !reduce_iter(w, d->it) && j < d->dv.nb; j++) {
            int64_t lo, hi;
            bool any;
            ir_digit_range(&d->dv, j, &lo, &hi, &any);
            if ((any || lo != hi) && !ir_forced_has(f, &d->dv.b[j], &d->dv.b[j])) return false;
        }
    }
    /* an iterator no index mentions has no entry: it is not forced */
    for (int i = 0; i < w->b->niters; i++) {
        int64_t e;
        bool seen = false;
        for (int j = 0; j < w->nd; j++) seen = seen || w->d[j].it == i;
        if (!seen && !w->held[i] && !reduce_iter(w, i) &&
            !(tir_expr_const_int(w->b->iters[i].dom.extent, &e) && e <= 1))
            return false;
    }
    return true;
}

/* Whether stores a and b have the same dimensions: merged pairs at the
 * same places and of the same divisor, so that an element is the same
 * exactly when every merged form is ((e1 // 4, e1 % 4) and (e2 // 8, e2 %
 * 8) meet at e1 = 8, e2 = 16). */
static bool same_dims(const wstore *a, const wstore *b) {
    if (!a->affine || !b->affine || a->nd != b->nd || a->merged != b->merged) return false;
    for (int d = 0; d < a->nd; d++)
        if (a->mdiv[d] != b->mdiv[d]) return false;
    return true;
}

/* 1: stores a and b (a == b: one store) meet only from one instance, or
 * never; 0: not proved. */
static int pair_proved(const sw *w, const wstore *a, const wstore *b) {
    if (!same_dims(a, b)) return 0;
    ir_slot sl[SW_DIMS][SW_SLOTS];
    int ns[SW_DIMS];
    for (int d = 0; d < a->nd; d++)
        if (!slots_of(&a->dims[d], &b->dims[d], sl[d], &ns[d])) return 0;
    ir_forced f = {.n = 0};
    bool never = false, changed = true;
    while (changed && !never) {
        changed = false;
        for (int d = 0; d < a->nd && !never; d++)
            changed |=
                ir_force_dim(sl[d], ns[d], (ir_wide)a->dims[d].k - b->dims[d].k, &f, &never);
    }
    return never || iters_forced(w, &f);
}

/* --------------------------------------------------------------- witness */

/* Iterator values of two instances and what they store. */
typedef struct pointpair {
    int64_t v1[8], v2[8];
    int64_t need[8]; /* > 0: iterator i's extent, not constant, must reach it */
} pointpair;

/* Whether loop f, one of loops, runs the block alone: each loop from f
 * down is the whole body of the one above, the block the innermost's. */
static bool exclusive(const sw *w, const tir_for *f, const tir_for *const *loops, int nloops) {
    int j = 0;
    while (j < nloops && loops[j] != f) j++;
    for (; j < nloops; j++)
        if (loops[j]->body != (j + 1 < nloops ? &loops[j + 1]->base : &w->r->base)) return false;
    return true;
}

/* bd += scale * e over the loops; false where e is not such a sum. */
static bool bind_add(const tir_expr *e, int64_t scale, binding *bd, const tir_for *const *loops,
                     int nloops) {
    int64_t c;
    switch ((tir_kind)e->kind) {
    case TIR_KIND_INT_IMM:
        return !__builtin_mul_overflow(tir_as_tir_int_imm(e)->value, scale, &c) &&
               !__builtin_add_overflow(bd->base, c, &bd->base);
    case TIR_KIND_VAR: {
        const tir_for *f = NULL;
        for (int j = 0; j < nloops; j++)
            if (&loops[j]->var->base == e) f = loops[j];
        for (int j = 0; f && j < bd->nl; j++)
            if (bd->l[j] == f) return !__builtin_add_overflow(bd->c[j], scale, &bd->c[j]);
        if (!f || bd->nl == SW_BLOOPS) return false;
        bd->l[bd->nl] = f, bd->c[bd->nl++] = scale;
        return true;
    }
    case TIR_KIND_ADD: case TIR_KIND_SUB: {
        const tir_binop *b = tir_as_tir_binop(e);
        return bind_add(b->a, scale, bd, loops, nloops) &&
               bind_add(b->b, e->kind == TIR_KIND_SUB ? -scale : scale, bd, loops, nloops);
    }
    case TIR_KIND_MUL: {
        const tir_binop *b = tir_as_tir_binop(e);
        const tir_expr *x = tir_expr_const_int(b->b, &c) ? b->a : b->b;
        return (x == b->a || tir_expr_const_int(b->a, &c)) &&
               !__builtin_mul_overflow(c, scale, &c) && bind_add(x, c, bd, loops, nloops);
    }
    default: return false;
    }
}

/* Whether binding e is dense (see binding) and fills bd. */
static bool dense(const tir_expr *e, binding *bd, const tir_for *const *loops, int nloops) {
    *bd = (binding){.nl = 0, .base = 0, .span = 1};
    if (!bind_add(e, 1, bd, loops, nloops)) return false;
    for (int j = 1; j < bd->nl; j++) /* sort by coefficient */
        for (int k = j; k > 0 && bd->c[k] < bd->c[k - 1]; k--) {
            const tir_for *f = bd->l[k];
            int64_t c = bd->c[k];
            bd->l[k] = bd->l[k - 1], bd->c[k] = bd->c[k - 1];
            bd->l[k - 1] = f, bd->c[k - 1] = c;
        }
    for (int j = 0; j < bd->nl; j++) {
        int64_t mn, ex, m;
        if (!tir_expr_const_int(bd->l[j]->min, &mn) || bd->c[j] != (j ? bd->span : 1) ||
            __builtin_mul_overflow(bd->c[j], mn, &m) ||
            __builtin_add_overflow(bd->base, m, &bd->base))
            return false;
        bool known = tir_expr_const_int(bd->l[j]->extent, &ex);
        if (known && ex < 1) return false; /* never runs */
        if (!known || ex >= (INT64_C(1) << 40)) {
            if (j + 1 < bd->nl) return false;
            bd->span = -1; /* the outermost of no constant extent */
        } else if (__builtin_mul_overflow(bd->span, ex, &bd->span) ||
                   bd->span >= (INT64_C(1) << 40)) {
            return false;
        }
    }
    return true;
}

/* Whether every iterator's binding is dense over loops of its own, so
 * that every value in [base, base + span) is an instance's. */
static bool bindings_dense(sw *w, const tir_for *const *loops, int nloops) {
    const tir_block *b = w->b;
    for (int i = 0; i < b->niters; i++) {
        binding *bd = &w->bind[i];
        if (!dense(w->r->values[i], bd, loops, nloops)) return false;
        for (int j = 0; j < bd->nl; j++)
            for (int k = 0; k < i; k++)
                for (int q = 0; q < w->bind[k].nl; q++)
                    if (w->bind[k].l[q] == bd->l[j]) return false;
    }
    for (int i = 0; i < b->niters; i++)
        for (int j = 0; j < w->bind[i].nl; j++)
            w->held[i] = w->held[i] || !exclusive(w, w->bind[i].l[j], loops, nloops);
    return true;
}

/* The loops' values giving iterator values v (appended to vars, vals at
 * *n); false where a value is no instance's. */
static bool loop_values(const sw *w, const int64_t *v, const tir_var **vars, int64_t *vals,
                        int *n) {
    for (int i = 0; i < w->b->niters; i++) {
        const binding *bd = &w->bind[i];
        int64_t r = v[i] - bd->base;
        if (r < 0 || (bd->span >= 0 && r >= bd->span)) return false;
        for (int j = 0; j < bd->nl; j++) {
            int64_t mn, ex, d = r / bd->c[j];
            tir_expr_const_int(bd->l[j]->min, &mn); /* constant: dense */
            if (j + 1 < bd->nl && tir_expr_const_int(bd->l[j]->extent, &ex)) d %= ex;
            vars[*n] = bd->l[j]->var, vals[(*n)++] = mn + d;
        }
    }
    return true;
}

/* The block's predicate at iterator values v: 1 true, 0 false or no
 * instance's values, -1 not evaluated. */
static int pred_at(const sw *w, const int64_t *v) {
    const tir_var *vars[8 * SW_BLOOPS];
    int64_t vals[8 * SW_BLOOPS], t;
    int n = 0;
    if (!loop_values(w, v, vars, vals, &n)) return 0;
    if (!w->r->predicate) return 1;
    return sch_eval_int(w->r->predicate, n, vars, vals, &t) ? t != 0 : -1;
}

/* Whether the init runs at iterator values v: every reduce iterator at
 * its domain's min (the interpreter's rule); false where a min is not
 * constant. */
static bool init_runs(const sw *w, const int64_t *v) {
    for (int i = 0; i < w->b->niters; i++) {
        int64_t mn;
        if (reduce_iter(w, i) && !(tir_expr_const_int(w->b->iters[i].dom.min, &mn) && v[i] == mn))
            return false;
    }
    return true;
}

/* Index e of a store at lane `lane` (a Ramp's start + stride * lane, a
 * Broadcast's value); false where it does not evaluate. */
static bool index_at(const tir_expr *e, int lane, int n, const tir_var *const *vars,
                     const int64_t *vals, int64_t *out) {
    int64_t a, st;
    if (e->kind == TIR_KIND_RAMP) {
        const tir_ramp *r = tir_as_tir_ramp(e);
        return lane < r->lanes && sch_eval_int(r->start, n, vars, vals, &a) &&
               sch_eval_int(r->stride, n, vars, vals, &st) &&
               !__builtin_mul_overflow(st, (int64_t)lane, &st) &&
               !__builtin_add_overflow(a, st, out);
    }
    if (e->kind == TIR_KIND_BROADCAST)
        return sch_eval_int(tir_as_tir_broadcast(e)->value, n, vars, vals, out);
    return e->dtype.lanes == 1 && sch_eval_int(e, n, vars, vals, out);
}

/* The lanes of store s (1 for a scalar store). */
static int store_lanes(const wstore *s) {
    int l = 1;
    for (int d = 0; d < s->st->nidx; d++)
        if (s->st->indices[d]->dtype.lanes > l) l = s->st->indices[d]->dtype.lanes;
    return l;
}

/* The indices of store s at iterator values v and inner loop i at its
 * first value plus in[i] (in NULL: every inner loop at its first value),
 * its conditions and the predicate all true there (and, for the init's,
 * the init running); false where something does not evaluate, is false or
 * an inner value is past its loop's range. */
static bool store_at(const sw *w, const wstore *s, const int64_t *v, const int64_t *in,
                     int64_t *idx) {
    const tir_block *b = w->b;
    const tir_var *vars[8 + SW_NEST];
    int64_t vals[8 + SW_NEST], t;
    int n = 0;
    if (s->st->nidx > 2 * SW_DIMS || pred_at(w, v) != 1) return false; /* idx's room */
    if (s->init && !init_runs(w, v)) return false;
    for (int i = 0; i < b->niters; i++) vars[n] = b->iters[i].var, vals[n++] = v[i];
    for (int i = 0; i < s->nloops; i++) { /* inner loop i at its min + in[i], in its range */
        int64_t ex, off = in ? in[i] : 0;
        if (!tir_expr_const_int(s->loops[i]->extent, &ex) || off < 0 || off >= ex ||
            !tir_expr_const_int(s->loops[i]->min, &vals[n]) ||
            __builtin_add_overflow(vals[n], off, &vals[n]))
            return false;
        vars[n++] = s->loops[i]->var;
    }
    for (int i = 0; i < s->nconds; i++)
        if (!s->conds[i] || !(sch_eval_int(s->conds[i], n, vars, vals, &t) && t)) return false;
    for (int d = 0; d < s->st->nidx; d++) /* lane 0 of a vector store */
        if (!index_at(s->st->indices[d], 0, n, vars, vals, &idx[d])) return false;
    return true;
}

/* Whether store sa of instance pp->v1 and sb of pp->v2 store one element
 * with the inner loops of the second (sa == sb) at the first's plus
 * din[j]: the first's inner values from the loops' first values (shifted
 * by -din[j] where that is negative), or, for a store under a condition
 * (which may hold elsewhere only: `if t >= 2`), every combination of the
 * inner loops' values while there are at most SW_INNER_TRIES.  Different
 * stores are compared at their inner loops' first values. */
enum { SW_INNER_TRIES = 256 };
static bool inner_pair(const sw *w, const wstore *sa, const wstore *sb, const pointpair *pp,
                       const int64_t *din) {
    int64_t i1[SW_DIMS * 2], i2[SW_DIMS * 2], u1[SW_NEST] = {0}, u2[SW_NEST] = {0};
    int64_t ex[SW_NEST], tries = 1;
    int nl = sa == sb ? sa->nloops : 0;
    for (int j = 0; j < nl; j++) {
        if (!tir_expr_const_int(sa->loops[j]->extent, &ex[j]) || ex[j] < 1) return false;
        tries = tries > SW_INNER_TRIES / ex[j] ? SW_INNER_TRIES + 1 : tries * ex[j];
    }
    if (!nl || !sa->nconds || tries > SW_INNER_TRIES) tries = 1;
    for (int64_t q = 0; q < tries; q++) {
        int64_t rest = q;
        for (int j = 0; j < nl; j++) {
            u1[j] = tries == 1 ? (din[j] < 0 ? -din[j] : 0) : rest % ex[j];
            rest /= ex[j];
            if (__builtin_add_overflow(u1[j], din[j], &u2[j])) return false;
        }
        if (!store_at(w, sa, pp->v1, nl ? u1 : NULL, i1) ||
            !store_at(w, sb, pp->v2, nl ? u2 : NULL, i2))
            continue;
        bool same = true;
        for (int d = 0; d < sa->st->nidx && same; d++) same = i1[d] == i2[d];
        if (same) return true;
    }
    return false;
}

/* Instances differing by z[k] in digit dig[k] of dv[k] (an iterator's, or
 * an inner loop's of sa == sb, the second instance's loop moved), from the loops'
 * first values, and in a spatial iterator: both run (the outermost loop's
 * extent not constant: pp->need is the count it must reach, at least 1),
 * store sa of the first and sb of the second store one element. */
static bool witness_from(const sw *w, const wstore *sa, const wstore *sb, const dvar *const *dv,
                         const int *dig, const int64_t *z, int nz, pointpair *pp) {
    const tir_block *b = w->b;
    int64_t delta[8] = {0}, din[SW_NEST] = {0}, step;
    for (int k = 0; k < nz; k++) {
        int64_t *at = NULL;
        if (dv[k]->kind == V_ITER) at = &delta[dv[k]->it];
        for (int j = 0; dv[k]->kind == V_INNER && sa == sb && j < sa->nloops; j++)
            if (sa->loops[j]->var == dv[k]->var) at = &din[j];
        if (!at || __builtin_mul_overflow(z[k], dv[k]->dv.b[dig[k]], &step) ||
            __builtin_add_overflow(*at, step, at))
            return false;
    }
    bool differ = false;
    for (int i = 0; i < b->niters; i++) {
        const binding *bd = &w->bind[i];
        pp->need[i] = 0;
        pp->v1[i] = bd->base + (delta[i] < 0 ? -delta[i] : 0);
        pp->v2[i] = pp->v1[i] + delta[i];
        differ = differ || (delta[i] && !reduce_iter(w, i)); /* a spatial iterator */
        int64_t top = (pp->v1[i] > pp->v2[i] ? pp->v1[i] : pp->v2[i]) - bd->base;
        if (bd->span < 0) /* the outermost loop's count (>= 1: the instances run) */
            pp->need[i] = top / bd->c[bd->nl - 1] + 1;
    }
    /* (the instances' loop values are checked in store_at, a need aside) */
    return differ && inner_pair(w, sa, sb, pp, din);
}

static int64_t gcd64(int64_t a, int64_t b) {
    while (b) {
        int64_t t = a % b;
        a = b, b = t;
    }
    return a < 0 ? -a : a;
}

/* The coefficient of digit (d, i) in each dimension of s. */
static void column(const wstore *s, const dvar *d, int i, int64_t *c) {
    for (int k = 0; k < s->nd; k++) {
        c[k] = 0;
        for (int j = 0; j < s->dims[k].n; j++)
            if (s->dims[k].t[j].key == &d->dv.b[i]) c[k] = s->dims[k].t[j].coef;
    }
}

typedef struct digit_ref {
    const dvar *d;
    int i;
} digit_ref;

/* The iterators' digits, and iterators no index mentions (digit 0 of a
 * made entry). */
static int iter_digits(sw *w, digit_ref *out, int max) {
    int n = 0;
    for (int k = 0; k < w->b->niters; k++) entry(w, w->b->iters[k].var);
    for (int i = 0; i < w->nd; i++)
        for (int j = 0; w->d[i].kind == V_ITER && j < w->d[i].dv.nb && n < max; j++)
            out[n++] = (digit_ref){&w->d[i], j};
    return n;
}

/* A witness for store s from its affine form: a spatial iterator's digit
 * absent from every dimension, or two digits whose columns are
 * proportional (vi + vj; vi + vk with vk a reduce iterator; vi + t with t
 * a loop inside the block, moved the other way in the second instance). */
static bool affine_witness(sw *w, const wstore *s, pointpair *pp) {
    digit_ref dr[SW_VARS * 3];
    int n = iter_digits(w, dr, SW_VARS * 2);
    if (w->bad) return false;
    /* the digits of the loops inside the block around s, after the
     * iterators': paired with an iterator's (vi + t: vi = 0, t = 1 and vi
     * = 1, t = 0), never with each other (one instance) */
    int ni = n;
    for (int i = 0; i < w->nd; i++)
        for (int l = 0; w->d[i].kind == V_INNER && l < s->nloops; l++)
            for (int j = 0; s->loops[l]->var == w->d[i].var && j < w->d[i].dv.nb &&
                            n < SW_VARS * 3; j++)
                dr[n++] = (digit_ref){&w->d[i], j};
    int64_t ca[SW_DIMS], cb[SW_DIMS];
    for (int x = 0; x < ni; x++) {
        column(s, dr[x].d, dr[x].i, ca);
        bool zero = true;
        for (int k = 0; k < s->nd; k++) zero = zero && !ca[k];
        const dvar *dv[2] = {dr[x].d, NULL};
        int dig[2] = {dr[x].i, 0};
        int64_t z[2] = {1, 0};
        if (zero && !reduce_iter(w, dr[x].d->it) && witness_from(w, s, s, dv, dig, z, 1, pp))
            return true;
        for (int y = x + 1; !zero && y < n; y++) {
            column(s, dr[y].d, dr[y].i, cb);
            int k0 = 0;
            while (k0 < s->nd && !ca[k0] && !cb[k0]) k0++;
            if (k0 == s->nd || !ca[k0] || !cb[k0]) continue;
            int64_t g = gcd64(ca[k0], cb[k0]), p = cb[k0] / g, q = ca[k0] / g;
            bool prop = true; /* ca p = cb q in every dimension */
            for (int k = 0; k < s->nd && prop; k++) {
                ir_wide l = (ir_wide)ca[k] * p, r = (ir_wide)cb[k] * q;
                prop = l == r;
            }
            dv[1] = dr[y].d, dig[1] = dr[y].i, z[0] = p, z[1] = -q;
            if (prop && witness_from(w, s, s, dv, dig, z, 2, pp)) return true;
        }
    }
    return false;
}

/* Whether la and lb have the same terms (constants aside). */
static bool same_terms(const ir_lin *la, const ir_lin *lb) {
    if (la->n != lb->n) return false;
    for (int i = 0; i < la->n; i++) {
        bool found = false;
        for (int j = 0; j < lb->n && !found; j++)
            found = lb->t[j].key == la->t[i].key && lb->t[j].coef == la->t[i].coef;
        if (!found) return false;
    }
    return true;
}

/* A witness for two stores a and b of one buffer whose forms differ in
 * their constants only (B[vi] and B[vi + 1]): one digit's column times t
 * makes up the difference, and instance x of a meets x - t of b. */
static bool pair_witness(sw *w, const wstore *a, const wstore *b, pointpair *pp) {
    if (!same_dims(a, b)) return false;
    for (int d = 0; d < a->nd; d++)
        if (!same_terms(&a->dims[d], &b->dims[d])) return false;
    digit_ref dr[SW_VARS * 2];
    int n = iter_digits(w, dr, SW_VARS * 2);
    int64_t c[SW_DIMS];
    for (int x = 0; x < n && !w->bad; x++) {
        column(a, dr[x].d, dr[x].i, c);
        int64_t t = 0;
        bool ok = true;
        for (int d = 0; d < a->nd && ok; d++) {
            int64_t delta;
            if (__builtin_sub_overflow(b->dims[d].k, a->dims[d].k, &delta)) return false;
            if (!c[d]) ok = delta == 0;
            else if (delta % c[d]) ok = false;
            else if (t && delta / c[d] != t) ok = false;
            else t = delta / c[d];
        }
        const dvar *dv[1] = {dr[x].d};
        int dig[1] = {dr[x].i};
        int64_t z[1] = {-t};
        if (ok && t && witness_from(w, a, b, dv, dig, z, 1, pp)) return true;
    }
    return false;
}

/* ----------------------------------------------------------- enumeration */

typedef struct hit {
    int store, buf;
    int64_t idx[SW_DIMS];
    int64_t spatial; /* the instance's spatial iterators, numbered */
    int64_t inst;
} hit;

static int cmp_hit(const void *a, const void *b) {
    const hit *x = a, *y = b;
    if (x->buf != y->buf) return x->buf < y->buf ? -1 : 1;
    for (int d = 0; d < SW_DIMS; d++)
        if (x->idx[d] != y->idx[d]) return x->idx[d] < y->idx[d] ? -1 : 1;
    if (x->spatial != y->spatial) return x->spatial < y->spatial ? -1 : 1;
    return (x->inst > y->inst) - (x->inst < y->inst);
}

/* Whether some store's index uses iterator i. */
static bool indexed_by(const sw *w, int i) {
    for (int k = 0; k < w->ns; k++)
        for (int d = 0; d < w->s[k].st->nidx; d++)
            if (tir_uses_var(w->s[k].st->indices[d], w->b->iters[i].var)) return true;
    return false;
}

/* Small constant domains: every instance's stores, sorted; two of one
 * element from instances differing in a spatial iterator are a witness (a
 * reduce iterator no index uses is held at its first value; the init's
 * stores count where the init runs; a store under loops inside the block
 * at every value of them, of constant ranges, where its conditions hold,
 * so that one instance may store an element twice).  1 found, 0 none, -1
 * not decided (too large, an inner loop of no constant range, a store
 * below an else, a condition or an index that does not evaluate). */
static int enumerate(const sw *w, pointpair *pp, int *store, int *store0) {
    const tir_block *b = w->b;
    int64_t mins[8], exts[8], points = 1, lanes = 0;
    for (int k = 0; k < w->ns; k++) { /* lanes: the hits of one instance */
        const wstore *s = &w->s[k];
        if (s->st->nidx > SW_DIMS || s->nloops + b->niters > 8 + SW_NEST) return -1;
        for (int c = 0; c < s->nconds; c++)
            if (!s->conds[c]) return -1; /* below an else: not evaluated */
        int64_t iters = 1, mn, ex;
        for (int j = 0; j < s->nloops; j++) {
            if (!tir_expr_const_int(s->loops[j]->min, &mn) ||
                !tir_expr_const_int(s->loops[j]->extent, &ex) || ex < 1 || ex > ENUM_POINTS)
                return -1;
            iters *= ex;
            if (iters > ENUM_POINTS) return -1;
        }
        lanes += store_lanes(s) * iters;
        if (lanes > ENUM_POINTS) return -1;
    }
    if (lanes > ENUM_POINTS) return -1;
    /* the instances to look at: all of them, or a corner of the domain
     * (the first values of each iterator: a collision among them is one,
     * none is no proof) */
    int64_t limit = 2 * ENUM_POINTS / lanes;
    if (limit > ENUM_POINTS) limit = ENUM_POINTS;
    bool whole = true;
    for (int i = 0; i < b->niters; i++) {
        mins[i] = w->bind[i].base, exts[i] = w->bind[i].span;
        if (exts[i] <= 0) return -1;
        if ((reduce_iter(w, i) && !indexed_by(w, i)) || w->held[i])
            exts[i] = 1; /* its value changes no index; one step of its loop */
    }
    for (;;) {
        int big = 0;
        points = 1;
        for (int i = 0; i < b->niters; i++) {
            if (exts[i] > exts[big]) big = i;
            points = points > limit / exts[i] ? limit + 1 : points * exts[i];
        }
        if (points <= limit) break;
        exts[big] = (exts[big] + 1) / 2, whole = false;
    }
    hit *h = malloc(sizeof *h * (size_t)(points * lanes)); /* not the arena: large, short */
    if (!h) return -1;
    int64_t nh = 0, v[8];
    int res = 0;
    for (int64_t q = 0; q < points && res == 0; q++) {
        int64_t rest = q;
        for (int i = b->niters - 1; i >= 0; i--) v[i] = mins[i] + rest % exts[i], rest /= exts[i];
        const tir_var *vars[8 + SW_NEST];
        int64_t vals[8 + SW_NEST], t = 0;
        for (int i = 0; i < b->niters; i++) vars[i] = b->iters[i].var, vals[i] = v[i];
        int run = pred_at(w, v);
        if (run < 0) res = -1;
        if (run != 1) continue;
        int64_t spatial = 0;
        for (int i = 0; i < b->niters; i++)
            if (!reduce_iter(w, i)) spatial = spatial * exts[i] + (v[i] - mins[i]);
        for (int k = 0; k < w->ns && !res; k++) {
            const wstore *s = &w->s[k];
            if (s->init && !init_runs(w, v)) continue;
            /* every value of the loops inside the block around s (constant
             * ranges, checked above) where its conditions hold */
            int n = b->niters + s->nloops;
            int64_t iters = 1, mn, ex;
            for (int j = 0; j < s->nloops; j++) {
                tir_expr_const_int(s->loops[j]->extent, &ex);
                iters *= ex;
                vars[b->niters + j] = s->loops[j]->var;
            }
            for (int64_t u = 0; u < iters && !res; u++) {
                int64_t r = u;
                for (int j = s->nloops - 1; j >= 0; j--) {
                    tir_expr_const_int(s->loops[j]->min, &mn);
                    tir_expr_const_int(s->loops[j]->extent, &ex);
                    vals[b->niters + j] = mn + r % ex, r /= ex;
                }
                bool on = true;
                for (int c = 0; c < s->nconds && on && !res; c++) {
                    if (!sch_eval_int(s->conds[c], n, vars, vals, &t)) res = -1;
                    on = t != 0;
                }
                for (int lane = 0, nl = store_lanes(s); on && lane < nl && !res; lane++) {
                    hit *x = &h[nh++]; /* every lane of a vector store */
                    memset(x, 0, sizeof *x);
                    x->store = k, x->inst = q, x->spatial = spatial;
                    for (int j = 0; j < w->ns; j++) /* the first store of its buffer */
                        if (w->s[j].st->buffer == s->st->buffer) {
                            x->buf = j;
                            break;
                        }
                    for (int d = 0; d < s->st->nidx && !res; d++)
                        if (!index_at(s->st->indices[d], lane, n, vars, vals, &x->idx[d]))
                            res = -1;
                }
            }
        }
    }
    if (res == 0) qsort(h, (size_t)nh, sizeof *h, cmp_hit);
    for (int64_t q = 1; q < nh && res == 0; q++) {
        const hit *x = &h[q - 1], *y = &h[q];
        if (x->buf != y->buf || memcmp(x->idx, y->idx, sizeof x->idx) ||
            x->spatial == y->spatial)
            continue;
        int64_t i1 = x->inst, i2 = y->inst;
        for (int i = b->niters - 1; i >= 0; i--) {
            pp->v1[i] = mins[i] + i1 % exts[i], i1 /= exts[i];
            pp->v2[i] = mins[i] + i2 % exts[i], i2 /= exts[i];
            pp->need[i] = 0;
        }
        *store0 = x->store, *store = y->store;
        res = 1;
    }
    free(h);
    return res == 0 && !whole ? -1 : res;
}

/* --------------------------------------------------------------- message */

/* The store as one line (the printer ends a statement with a newline). */
static const char *store_text(tir_ctx *ctx, const tir_buffer_store *st) {
    const char *t = tir_print(ctx, &st->base);
    size_t n = strlen(t);
    while (n > 0 && t[n - 1] == '\n') n--;
    char *c = IR_NEWN(ctx, char, n + 1);
    memcpy(c, t, n);
    c[n] = 0;
    return c;
}

static void put_point(ir_strbuf *sb, const tir_block *b, const int64_t *v) {
    for (int i = 0; i < b->niters; i++)
        ir_sb_printf(sb, "%s%s = %lld", i ? ", " : "(", b->iters[i].var->name, (long long)v[i]);
    ir_sb_printf(sb, ")");
}

static bool has_reduce(const tir_block *b) {
    for (int i = 0; i < b->niters; i++)
        if (b->iters[i].kind == TIR_ITER_REDUCE) return true;
    return false;
}

static const char *refusal(const sw *w, const wstore *s, const wstore *s2, const pointpair *pp) {
    ir_strbuf sb;
    ir_sb_init(&sb);
    bool red = has_reduce(w->b);
    ir_sb_printf(&sb, "block \"%s\" stores %s from two instances %s, ", w->b->name,
                 s->st->buffer->name,
                 red ? "that differ in a spatial iterator" : "of its spatial iterators");
    put_point(&sb, w->b, pp->v1);
    ir_sb_printf(&sb, " and ");
    put_point(&sb, w->b, pp->v2);
    const char *sep = " whenever ";
    for (int i = 0; i < w->b->niters; i++)
        if (pp->need[i] > 0) {
            const binding *bd = &w->bind[i];
            ir_sb_printf(&sb, "%s%s >= %lld", sep, tir_print(w->ctx, bd->l[bd->nl - 1]->extent),
                         (long long)pp->need[i]);
            sep = " and ";
        }
    ir_sb_printf(&sb, ", at %s", store_text(w->ctx, s->st));
    if (s2 != s) ir_sb_printf(&sb, " and %s", store_text(w->ctx, s2->st));
    if (red)
        ir_sb_printf(&sb, ": a reduction's instances that differ in a spatial iterator must "
                          "write their own elements, only those differing in reduce iterators "
                          "accumulate into one (bind, parallel and reorder run the spatial "
                          "iterators' instances at once or in any order; label an iterator "
                          "that accumulates T.axis.reduce)");
    else
        ir_sb_printf(&sb,
                     ": each instance of a spatial block must write its own elements "
                     "(schedules run a spatial block's instances in any order, which would "
                     "change the one that writes last)");
    return ir_sb_finish(&sb, w->ctx);
}

/* ------------------------------------------------------------------ entry */

/* Every store (and pair of stores of one buffer) proved. */
static bool all_proved(const sw *w) {
    for (int i = 0; i < w->ns; i++)
        for (int j = i; j < w->ns; j++)
            if (w->s[i].st->buffer == w->s[j].st->buffer && !pair_proved(w, &w->s[i], &w->s[j]))
                return false;
    return true;
}

/* The decision for the block of w (see the head of this file). */
static const char *decide(sw *w, const tir_for *const *loops, int nloops) {
    const tir_block *b = w->b;
    bool runs = bindings_dense(w, loops, nloops);
    wstore top = {0};
    collect(w, b->body, &top);
    top.init = true;
    collect(w, b->init, &top);
    if (w->bad || w->ns == 0) return NULL;
    tir_visitor nv = {.pre = note_pre, .user = w};
    for (int k = 0; k < w->ns; k++) {
        w->cur = &w->s[k];
        for (int d = 0; d < w->s[k].st->nidx; d++) tir_visit(&nv, w->s[k].st->indices[d]);
    }
    w->cur = NULL;
    bool digits = digits_ok(w);
    for (int k = 0; digits && k < w->ns; k++) store_forms(w, &w->s[k]);
    if (digits && !w->bad && all_proved(w)) return NULL;
    /* not proved: look for two instances storing one element */
    if (!runs) return NULL;
    pointpair pp;
    memset(&pp, 0, sizeof pp);
    int k = 0, k0 = 0;
    for (k = 0; digits && !w->bad && k < w->ns; k++)
        if (w->s[k].affine && affine_witness(w, &w->s[k], &pp))
            return refusal(w, &w->s[k], &w->s[k], &pp);
    for (k = 0; digits && !w->bad && k < w->ns; k++)
        for (k0 = 0; k0 < w->ns; k0++)
            if (k0 != k && w->s[k0].st->buffer == w->s[k].st->buffer &&
                pair_witness(w, &w->s[k0], &w->s[k], &pp))
                return refusal(w, &w->s[k0], &w->s[k], &pp);
    if (enumerate(w, &pp, &k, &k0) == 1) return refusal(w, &w->s[k0], &w->s[k], &pp);
    return NULL; /* neither: the author's promise */
}

const char *sch_spatial_write_collision(tir_ctx *ctx, const tir_block_realize *r,
                                        const tir_for *const *loops, int nloops) {
    const tir_block *b = r->block;
    if (b->niters == 0 || b->niters > 8) return NULL;
    sw *w = calloc(1, sizeof *w); /* not the arena: freed per block, each create */
    if (!w) return NULL;
    w->ctx = ctx, w->r = r, w->b = b;
    const char *msg = decide(w, loops, nloops);
    free(w->s);
    free(w);
    return msg;
}
