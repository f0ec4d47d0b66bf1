/* analyzer.c: the analyzer object (variable ranges, memo tables, scratch
 * memory), constant integer bounds, proofs, and statement simplification.
 *
 * Bounds are plain interval arithmetic over the expression as written
 * (with INT64_MIN / INT64_MAX as -inf / +inf, saturating); the public
 * tir_analyzer_const_bound also bounds the simplified form, whose merged
 * terms give tighter intervals (x - x is 0 there, not [-r, r]).
 */
#include <string.h>

#include "arith_internal.h"

/* ------------------------------------------------------------ scratch memory */

#define SCRATCH_CHUNK (64 * 1024)

void *ar_scratch(tir_analyzer *a, size_t size) { return ir_arena_alloc(&a->scratch, size); }

void ar_enter(tir_analyzer *a) { a->depth++; }

void ar_leave(tir_analyzer *a) {
    TIR_ASSERT(a->depth > 0);
    if (--a->depth) return;
    ir_arena_rewind(&a->scratch);
}

/* ---------------------------------------------------------------- memo tables */

bool ar_memo_get(const ar_memo *m, uint32_t gen, const void *key, ar_memo_ent **out) {
    if (!m->cap) return false;
    size_t i = ir_ptr_hash(key) & (m->cap - 1);
    while (m->ents[i].key) {
        if (m->ents[i].key == key) {
            if (m->ents[i].gen != gen) return false;
            *out = &m->ents[i];
            return true;
        }
        i = (i + 1) & (m->cap - 1);
    }
    return false;
}

/* Rebuilds the table keeping only entries of the current generation. */
static void memo_rehash(ar_memo *m, uint32_t gen) {
    size_t live = 0;
    for (size_t i = 0; i < m->cap; i++)
        if (m->ents[i].key && m->ents[i].gen == gen) live++;
    size_t cap = 256;
    while (cap < 4 * (live + 1)) cap *= 2;
    ar_memo_ent *ents = ir_xcalloc(cap, sizeof *ents);
    for (size_t i = 0; i < m->cap; i++) {
        const ar_memo_ent *e = &m->ents[i];
        if (!e->key || e->gen != gen) continue;
        size_t j = ir_ptr_hash(e->key) & (cap - 1);
        while (ents[j].key) j = (j + 1) & (cap - 1);
        ents[j] = *e;
    }
    free(m->ents);
    m->ents = ents;
    m->cap = cap;
    m->used = live;
}

ar_memo_ent *ar_memo_put(ar_memo *m, uint32_t gen, const void *key) {
    if (2 * (m->used + 1) > m->cap) memo_rehash(m, gen);
    size_t i = ir_ptr_hash(key) & (m->cap - 1);
    while (m->ents[i].key && m->ents[i].key != key) i = (i + 1) & (m->cap - 1);
    if (!m->ents[i].key) m->used++;
    m->ents[i].key = key;
    m->ents[i].gen = gen;
    return &m->ents[i];
}

/* ------------------------------------------------------------------ bindings */

static ar_bind *bind_slot(tir_analyzer *a, const tir_var *v, bool create) {
    if (!a->bind_cap) {
        if (!create) return NULL;
        a->bind_cap = 64;
        a->binds = ir_xcalloc(a->bind_cap, sizeof *a->binds);
    }
    if (create && 2 * (a->bind_used + 1) > a->bind_cap) {
        size_t cap = a->bind_cap * 2;
        ar_bind *nb = ir_xcalloc(cap, sizeof *nb);
        for (size_t i = 0; i < a->bind_cap; i++) {
            if (!a->binds[i].var) continue;
            size_t j = ir_ptr_hash(a->binds[i].var) & (cap - 1);
            while (nb[j].var) j = (j + 1) & (cap - 1);
            nb[j] = a->binds[i];
        }
        free(a->binds);
        a->binds = nb;
        a->bind_cap = cap;
    }
    size_t i = ir_ptr_hash(v) & (a->bind_cap - 1);
    while (a->binds[i].var && a->binds[i].var != v) i = (i + 1) & (a->bind_cap - 1);
    if (!a->binds[i].var) {
        if (!create) return NULL;
        a->binds[i].var = v;
        a->bind_used++;
    }
    return &a->binds[i];
}

const ar_bind *ar_lookup(const tir_analyzer *a, const tir_var *v) {
    ar_bind *b = bind_slot((tir_analyzer *)a, v, false);
    return b && b->active ? b : NULL;
}

static void bind_set(tir_analyzer *a, const ar_bind *nb) {
    ar_bind *b = bind_slot(a, nb->var, true);
    if (b->active && b->symbolic) a->nsymbolic--;
    *b = *nb;
    if (b->active && b->symbolic) a->nsymbolic++;
    a->gen++;
    a->sym_gen++;
}

void ar_set_wrap(tir_analyzer *a, int w) {
    if (a->wrap_values == w) return;
    a->wrap_values = w;
    a->gen++;
    a->sym_gen++;
}

bool ar_wraps(const tir_analyzer *a, const tir_expr *e) {
    return a->wrap_values > 0 || tir_reads_buffer(e);
}

ar_bind ar_bind_save(const tir_analyzer *a, const tir_var *v) {
    const ar_bind *b = ar_lookup(a, v);
    if (b) return *b;
    ar_bind none = {.var = v};
    return none;
}

void ar_bind_restore(tir_analyzer *a, const ar_bind *saved) { bind_set(a, saved); }

tir_int_bound ar_dtype_bound(tir_dtype t) {
    switch ((tir_type_code)t.code) {
    case TIR_TYPE_BOOL: return (tir_int_bound){0, 1};
    case TIR_TYPE_INT:
        if (t.bits >= 64) break;
        return (tir_int_bound){-((int64_t)1 << (t.bits - 1)), ((int64_t)1 << (t.bits - 1)) - 1};
    case TIR_TYPE_UINT:
        if (t.bits >= 64) return (tir_int_bound){0, AR_POS_INF};
        return (tir_int_bound){0, ((int64_t)1 << t.bits) - 1};
    default: break;
    }
    return (tir_int_bound){AR_NEG_INF, AR_POS_INF};
}

/* Intersection with the range of a dtype.  An empty result means the
 * arithmetic overflowed (we assume it does not, but must stay sound when it
 * does), so it gives the whole range. */
static tir_int_bound clip_to(tir_int_bound x, tir_int_bound full) {
    tir_int_bound r = {x.min > full.min ? x.min : full.min, x.max < full.max ? x.max : full.max};
    return r.min > r.max ? full : r;
}

/* A variable over an empty range (extent <= 0) takes no value at all;
 * any point is as good as another, so keep the start. */
static tir_int_bound nonempty(tir_int_bound b) {
    if (b.min > b.max) b.max = b.min;
    return b;
}

void ar_bind_bound(tir_analyzer *a, const tir_var *v, tir_int_bound b) {
    ar_bind nb = {.var = v, .active = true};
    nb.bound = clip_to(nonempty(b), ar_dtype_bound(v->base.dtype));
    bind_set(a, &nb);
}

/* ------------------------------------------------------------------- bounds */

static tir_int_bound bound_of(tir_analyzer *a, const tir_expr *e);

static tir_int_bound b_add(tir_int_bound x, tir_int_bound y) {
    return (tir_int_bound){ar_sat_add(x.min, y.min, false), ar_sat_add(x.max, y.max, true)};
}
static tir_int_bound b_neg(tir_int_bound x) {
    return (tir_int_bound){ar_sat_neg(x.max), ar_sat_neg(x.min)};
}
static tir_int_bound b_mul(tir_int_bound x, tir_int_bound y) {
    int64_t c[4] = {ar_sat_mul(x.min, y.min), ar_sat_mul(x.min, y.max), ar_sat_mul(x.max, y.min),
                    ar_sat_mul(x.max, y.max)};
    tir_int_bound r = {c[0], c[0]};
    for (int i = 1; i < 4; i++) {
        if (c[i] < r.min) r.min = c[i];
        if (c[i] > r.max) r.max = c[i];
    }
    return r;
}

static int64_t inf_div(int64_t x, int64_t d, bool floor_div) {
    /* d > 0 */
    if (x == AR_NEG_INF || x == AR_POS_INF) return x;
    if (d == AR_POS_INF) return (floor_div && x < 0) ? -1 : 0;
    return floor_div ? ar_floordiv(x, d) : ar_truncdiv(x, d);
}

/* x / y for y > 0 throughout (floor or truncating): monotone in both. */
static tir_int_bound b_div_pos(tir_int_bound x, tir_int_bound y, bool floor_div) {
    tir_int_bound r;
    r.min = x.min >= 0 ? inf_div(x.min, y.max, floor_div) : inf_div(x.min, y.min, floor_div);
    r.max = x.max >= 0 ? inf_div(x.max, y.min, floor_div) : inf_div(x.max, y.max, floor_div);
    return r;
}

static tir_int_bound bound_div(tir_int_bound x, tir_int_bound y, bool floor_div,
                               tir_int_bound full) {
    if (y.min > 0) return b_div_pos(x, y, floor_div);
    /* x / y == (-x) / (-y) for both floor and truncating division */
    if (y.max < 0) return b_div_pos(b_neg(x), b_neg(y), floor_div);
    return full;
}

static tir_int_bound bound_floormod(tir_int_bound x, tir_int_bound y, tir_int_bound full) {
    if (y.min > 0) {
        if (y.min == y.max && ar_bound_finite(x) &&
            ar_floordiv(x.min, y.min) == ar_floordiv(x.max, y.min)) {
            int64_t q = ar_floordiv(x.min, y.min) * y.min;
            return (tir_int_bound){x.min - q, x.max - q};
        }
        tir_int_bound r = {0, ar_sat_add(y.max, -1, true)};
        if (x.min >= 0 && x.max < r.max) r.max = x.max;
        return r;
    }
    if (y.max < 0) return (tir_int_bound){ar_sat_add(y.min, 1, false), 0};
    return full;
}

static tir_int_bound bound_truncmod(tir_int_bound x, tir_int_bound y, tir_int_bound full) {
    if (y.min <= 0 && y.max >= 0) return full;
    int64_t m = y.min > 0 ? y.max : ar_sat_neg(y.min); /* largest |divisor| */
    m = ar_sat_add(m, -1, true);
    if (x.min >= 0) return (tir_int_bound){0, x.max < m ? x.max : m};
    if (x.max <= 0) return (tir_int_bound){x.min > -m ? x.min : -m, 0};
    return (tir_int_bound){-m, m};
}

static tir_int_bound bound_impl(tir_analyzer *a, const tir_expr *e) {
    tir_dtype t = e->dtype;
    tir_int_bound full = ar_dtype_bound(t);
    if (!tir_dtype_is_int(t) && !tir_dtype_is_bool(t)) return full;
    switch ((tir_kind)e->kind) {
    case TIR_KIND_ADD:
    case TIR_KIND_SUB:
    case TIR_KIND_MUL:
    case TIR_KIND_DIV:
    case TIR_KIND_MOD:
    case TIR_KIND_FLOORDIV:
    case TIR_KIND_FLOORMOD:
    case TIR_KIND_MIN:
    case TIR_KIND_MAX: {
        const tir_binop *b = (const tir_binop *)e;
        tir_int_bound x = bound_of(a, b->a), y = bound_of(a, b->b);
        switch ((tir_kind)e->kind) {
        case TIR_KIND_ADD: return b_add(x, y);
        case TIR_KIND_SUB: return b_add(x, b_neg(y));
        case TIR_KIND_MUL: return b_mul(x, y);
        case TIR_KIND_DIV: return bound_div(x, y, false, full);
        case TIR_KIND_FLOORDIV: return bound_div(x, y, true, full);
        case TIR_KIND_MOD: return bound_truncmod(x, y, full);
        case TIR_KIND_FLOORMOD: return bound_floormod(x, y, full);
        case TIR_KIND_MIN:
            return (tir_int_bound){x.min < y.min ? x.min : y.min, x.max < y.max ? x.max : y.max};
        default:
            return (tir_int_bound){x.min > y.min ? x.min : y.min, x.max > y.max ? x.max : y.max};
        }
    }
    case TIR_KIND_SELECT: {
        const tir_select *s = (const tir_select *)e;
        tir_int_bound c = bound_of(a, s->cond);
        if (c.min == c.max && s->cond->dtype.lanes == 1) return bound_of(a, c.min ? s->t : s->f);
        tir_int_bound x = bound_of(a, s->t), y = bound_of(a, s->f);
        return (tir_int_bound){x.min < y.min ? x.min : y.min, x.max > y.max ? x.max : y.max};
    }
    case TIR_KIND_CAST: {
        const tir_cast *c = (const tir_cast *)e;
        tir_dtype vt = c->value->dtype;
        if (tir_dtype_is_bool(t)) return full;
        if (!tir_dtype_is_int(vt) && !tir_dtype_is_bool(vt)) return full;
        tir_int_bound v = bound_of(a, c->value);
        if (v.min >= full.min && v.max <= full.max) return v;
        return full;
    }
    case TIR_KIND_LET: {
        const tir_let *l = (const tir_let *)e;
        if (!tir_dtype_is_int(l->value->dtype) || l->value->dtype.lanes != 1)
            return bound_of(a, l->body);
        ar_bind saved = ar_bind_save(a, l->var);
        ar_bind_bound(a, l->var, bound_of(a, l->value));
        tir_int_bound r = bound_of(a, l->body);
        ar_bind_restore(a, &saved);
        return r;
    }
    case TIR_KIND_BROADCAST: return bound_of(a, ((const tir_broadcast *)e)->value);
    case TIR_KIND_RAMP: {
        const tir_ramp *r = (const tir_ramp *)e;
        tir_int_bound s = bound_of(a, r->start), st = bound_of(a, r->stride);
        tir_int_bound span = b_mul(st, (tir_int_bound){0, r->lanes - 1});
        return b_add(s, span);
    }
    case TIR_KIND_EQ: case TIR_KIND_NE: case TIR_KIND_LT: case TIR_KIND_LE:
    case TIR_KIND_GT: case TIR_KIND_GE: case TIR_KIND_AND: case TIR_KIND_OR:
    case TIR_KIND_NOT: return (tir_int_bound){0, 1};
    default: return full;
    }
}

static tir_int_bound bound_of(tir_analyzer *a, const tir_expr *e) {
    const tir_int_imm *imm = tir_as_tir_int_imm(e);
    if (imm) return (tir_int_bound){imm->value, imm->value};
    tir_int_bound full = ar_dtype_bound(e->dtype);
    if (e->kind == TIR_KIND_VAR) {
        const ar_bind *b = ar_lookup(a, (const tir_var *)e);
        return b ? b->bound : full;
    }
    ar_memo_ent *m;
    if (ar_memo_get(&a->bound_memo, a->gen, e, &m)) return m->bound;
    tir_int_bound r = bound_impl(a, e);
    /* INT64_MIN / INT64_MAX stand for infinities, so a constant at an end
     * of int64 reads as one: INT64_MAX + -4 gave [+inf, +inf], taken as
     * [INT64_MAX, INT64_MAX], and int64(i) + INT64_MIN for i in [1, 35]
     * [INT64_MIN, INT64_MIN] (the index fuzzer).  A lower end at +inf or
     * an upper end at -inf is no bound at all (the values can only have
     * come from such a constant), so it is the whole range. */
    if (r.min == AR_POS_INF || r.max == AR_NEG_INF) r = full;
    /* an unsigned value wraps (lowered-ir.md): a range past the dtype's is
     * any value, not the part inside (uint8(v) + 254 for v in [0, 2] is
     * 254, 255 or 0; clipped to [254, 255], the simplifier dropped a live
     * branch and compact_alloc shrank a buffer past an index: review of
     * the sixteenth session).  So does a signed value of the user's data,
     * as stored values do (int32(x) + INT32_MAX for a uint8 x clipped to
     * [INT32_MAX, INT32_MAX] let max(., 0) go, where x = 1 gives
     * INT32_MIN); a signed index cannot overflow (undefined), so a range
     * past the dtype's is any value there too, as good as clipping for
     * what the bounds decide. */
    if (tir_dtype_is_int(e->dtype) && (r.min < full.min || r.max > full.max))
        r = full;
    /* in 64 bits the sums saturate at the dtype's own ends instead of
       passing them: for data, an end reached that way is a wrap (int64
       K - int64(a) for K near INT64_MAX looked non-negative) */
    else if (e->dtype.code == TIR_TYPE_INT && e->dtype.bits == 64 &&
             (r.min == AR_NEG_INF) != (r.max == AR_POS_INF) && ar_wraps(a, e))
        r = full;
    else if (tir_dtype_is_int(e->dtype) || tir_dtype_is_bool(e->dtype))
        r = clip_to(r, full);
    ar_memo_put(&a->bound_memo, a->gen, e)->bound = r;
    return r;
}

tir_int_bound ar_bound(tir_analyzer *a, const tir_expr *e) { return bound_of(a, e); }

/* --------------------------------------------------------------- public API */

tir_analyzer *tir_analyzer_create(tir_ctx *ctx) {
    tir_analyzer *a = calloc(1, sizeof *a);
    if (!a) return NULL;
    a->ctx = ctx;
    a->scratch.chunk_size = SCRATCH_CHUNK;
    a->gen = 1;
    return a;
}

void tir_analyzer_destroy(tir_analyzer *a) {
    if (!a) return;
    free(a->binds);
    free(a->simp_memo.ents);
    free(a->bound_memo.ents);
    free(a->sym_memo.ents);
    ir_arena_free(&a->scratch);
    free(a);
}

void tir_analyzer_bind(tir_analyzer *a, const tir_var *v, const tir_expr *min,
                       const tir_expr *extent) {
    TIR_ASSERT(a && v && min && extent);
    TIR_ASSERT(tir_dtype_is_int(min->dtype) && tir_dtype_is_int(extent->dtype));
    /* ranges are kept in the variable's dtype so they combine with it */
    tir_dtype t = v->base.dtype;
    if (!tir_dtype_eq(min->dtype, t)) min = tir_cast_new(a->ctx, t, min);
    if (!tir_dtype_eq(extent->dtype, t)) extent = tir_cast_new(a->ctx, t, extent);
    ar_enter(a);
    tir_int_bound bm = bound_of(a, min), be = bound_of(a, extent);
    ar_bind nb = {.var = v, .min = min, .extent = extent, .active = true};
    nb.bound.min = bm.min;
    nb.bound.max = ar_sat_add(bm.max, ar_sat_add(be.max, -1, true), true);
    nb.bound = clip_to(nonempty(nb.bound), ar_dtype_bound(v->base.dtype));
    nb.symbolic = min->kind != TIR_KIND_INT_IMM || extent->kind != TIR_KIND_INT_IMM;
    bind_set(a, &nb);
    ar_leave(a);
}

void tir_analyzer_bind_const(tir_analyzer *a, const tir_var *v, int64_t min, int64_t extent) {
    tir_dtype t = v->base.dtype;
    tir_analyzer_bind(a, v, tir_int(a->ctx, t, min), tir_int(a->ctx, t, extent));
}

void tir_analyzer_unbind(tir_analyzer *a, const tir_var *v) {
    ar_bind none = {.var = v};
    bind_set(a, &none);
}

const tir_expr *tir_analyzer_simplify(tir_analyzer *a, const tir_expr *e) {
    ar_enter(a);
    const tir_expr *r = ar_simplify(a, e);
    ar_leave(a);
    return r;
}

bool tir_analyzer_can_prove(tir_analyzer *a, const tir_expr *cond) {
    TIR_ASSERT(tir_dtype_is_bool(cond->dtype));
    ar_enter(a);
    int64_t v;
    bool r = tir_expr_const_int(ar_simplify(a, cond), &v) && v != 0;
    ar_leave(a);
    return r;
}

tir_int_bound tir_analyzer_const_bound(tir_analyzer *a, const tir_expr *e) {
    ar_enter(a);
    tir_int_bound r = bound_of(a, e);
    if (tir_dtype_is_int(e->dtype) && e->dtype.lanes == 1 && r.min != r.max) {
        const tir_expr *s = ar_simplify(a, e);
        if (s != e) {
            tir_int_bound b = bound_of(a, s);
            if (b.min > r.min) r.min = b.min;
            if (b.max < r.max) r.max = b.max;
        }
    }
    ar_leave(a);
    return r;
}

const tir_expr *tir_simplify(tir_ctx *ctx, const tir_expr *e) {
    tir_analyzer *a = tir_analyzer_create(ctx);
    TIR_ASSERT(a && "out of memory");
    const tir_expr *r = tir_analyzer_simplify(a, e);
    tir_analyzer_destroy(a);
    return r;
}

/* ------------------------------------------------------ statement simplifier */

static const tir_node *ss_expr(tir_mutator *m, const tir_node *n) {
    return (const tir_node *)ar_simplify(m->user, (const tir_expr *)n);
}

static const tir_node *ss_for(tir_mutator *m, const tir_node *n) {
    tir_analyzer *a = m->user;
    const tir_for *f = (const tir_for *)n;
    const tir_expr *mn = ar_simplify(a, f->min), *ex = ar_simplify(a, f->extent);
    ar_bind saved = ar_bind_save(a, f->var);
    tir_analyzer_bind(a, f->var, mn, ex);
    const tir_stmt *body = tir_mutate_stmt(m, f->body);
    ar_bind_restore(a, &saved);
    if (mn == f->min && ex == f->extent && body == f->body) return n;
    return (const tir_node *)tir_for_new(m->ctx, f->var, mn, ex, f->kind, f->thread_tag,
                                         f->nannots, f->annots, body);
}

static const tir_node *ss_block(tir_mutator *m, const tir_node *n) {
    tir_analyzer *a = m->user;
    const tir_block *b = (const tir_block *)n;
    ar_bind *saved = ar_scratch(a, sizeof(ar_bind) * (size_t)(b->niters ? b->niters : 1));
    for (int i = 0; i < b->niters; i++) {
        const tir_iter_var *it = &b->iters[i];
        saved[i] = ar_bind_save(a, it->var);
        tir_analyzer_bind(a, it->var, ar_simplify(a, it->dom.min),
                          ar_simplify(a, it->dom.extent));
    }
    const tir_node *r = tir_mutate_default(m, n);
    for (int i = b->niters - 1; i >= 0; i--) ar_bind_restore(a, &saved[i]);
    return r;
}

/* A store: its value wraps (docs/lowered-ir.md: stored values are the
 * user's arithmetic, index arithmetic alone may assume no signed
 * overflow), also where a fold has removed every load from it (the float
 * fuzzer: select(1 < 2, int32(sqrt(inf)), int32(S[0])) + INT32_MAX inside a
 * max lost its load, and the max's offset moved out past the wrap). */
static const tir_node *ss_store(tir_mutator *m, const tir_node *n) {
    tir_analyzer *a = m->user;
    const tir_buffer_store *s = (const tir_buffer_store *)n;
    int w = a->wrap_values;
    ar_set_wrap(a, 1);
    const tir_expr *v = ar_simplify(a, s->value);
    ar_set_wrap(a, w);
    const tir_expr **idx = ar_scratch(a, sizeof *idx * (size_t)s->nidx);
    bool same = v == s->value;
    for (int i = 0; i < s->nidx; i++) {
        idx[i] = ar_simplify(a, s->indices[i]);
        same = same && idx[i] == s->indices[i];
    }
    if (same) return n;
    return (const tir_node *)tir_store(m->ctx, s->buffer, v, s->nidx, idx);
}

static const tir_node *ss_if(tir_mutator *m, const tir_node *n) {
    const tir_if *s = (const tir_if *)n;
    const tir_expr *c = ar_simplify(m->user, s->cond);
    int64_t v;
    /* a branch that always runs replaces the If; the dead one goes with it */
    if (tir_expr_const_int(c, &v) && v) return tir_mutate(m, s->then_s);
    if (tir_expr_const_int(c, &v) && !v && s->else_s) return tir_mutate(m, s->else_s);
    return tir_mutate_default(m, n);
}

const tir_stmt *tir_analyzer_simplify_stmt(tir_analyzer *a, const tir_stmt *s) {
    ar_enter(a);
    tir_mutator m = {.ctx = a->ctx, .user = a};
    for (int k = 0; k < TIR_KIND_COUNT; k++)
        if (tir_kind_is_expr((tir_kind)k)) m.on[k] = ss_expr;
    m.on[TIR_KIND_FOR] = ss_for;
    m.on[TIR_KIND_BLOCK] = ss_block;
    m.on[TIR_KIND_IF] = ss_if;
    m.on[TIR_KIND_BUFFER_STORE] = ss_store;
    const tir_stmt *r = tir_mutate_stmt(&m, s);
    ar_leave(a);
    return r;
}
