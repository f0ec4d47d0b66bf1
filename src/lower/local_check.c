/* local_check.c: a local buffer has one copy per thread, so lowering it is
 * only right when every element a thread reads was written by that same
 * thread.  The scheduled function guarantees that some writer wrote each
 * element read (in its sequential meaning); this pass proves that the
 * writer ran in the reading thread.  It runs after unify_threads, where
 * each thread tag has one variable in the whole kernel, so the writer's and
 * the reader's indices speak of the same hardware indices.
 *
 * For each thread variable t (blockIdx and threadIdx alike) of extent n and
 * each local buffer, one of two things must hold:
 *   - no writer's index mentions t, no writer runs under a condition or
 *     loop bound that mentions t and may be false, and no writer stores a
 *     value that mentions t or reads the buffer: every thread writes the
 *     same values to the same elements (the copy is replicated along t), or
 *   - t can be read back from the element the same way for every writer
 *     and reader: some fixed integer function X of the indices (one index,
 *     the row-major flat index, or i_d * w + floormod(i_{d+1}, w) for a
 *     floormod(., w) in i_{d+1}, which turns a fused-and-split copy's
 *     [o + floordiv(F, w), p + floormod(F, w)] back into an affine F) is,
 *     in every access, c * t + low + high with the same c > 0, low in
 *     [0, c) and high a multiple of c * n; then t = floormod(floordiv(X,
 *     c), n) is a function of the element, the same for writer and reader.
 *     Where every access runs under a condition that keeps t below some
 *     n' < n (a copy spread over more threads than it has elements), n'
 *     may stand for n; only then-branch conditions count, read as linear
 *     comparisons of signed scalars neither side of which can wrap.
 * Either way the element a thread reads was written by the reading thread.
 * Neither is needed for a t whose loop holds the buffer's Allocate: then
 * the function itself has one copy per thread.
 * Anything else is TIR_ERR_LOWER naming the buffer, the two accesses and
 * their thread mappings (a per-thread array cannot carry values between
 * threads; without this check the kernel reads garbage).  Conditions in
 * writers that mention a replicated t are refused even when the readers
 * have the same condition (conservative).
 */
#include <stdlib.h>
#include <string.h>

#include "lower_internal.h"

enum { MAXTHREADS = 8, MAXTERMS = 64, MAXCANDS = 24 };

typedef struct access {
    const tir_stmt *stmt; /* the statement holding the access (marked in errors) */
    const tir_buffer *buf;
    bool write;
    int nidx;
    const tir_expr *const *idx;
    int nloops, nconds, nfacts;
    const tir_for **loops;  /* enclosing loops, outermost first */
    const tir_expr **conds; /* enclosing conditions */
    const tir_expr **facts; /* the conditions of the enclosing then branches (true here) */
} access;

typedef struct lc {
    lower_state *st;
    const tir_prim_func *f;
    ir_vec locals;   /* local buffers allocated in the kernel */
    ir_vec accesses; /* access* (ctx arena) */
    const tir_for *threads[MAXTHREADS]; /* one loop per thread variable */
    int nthreads;
    ir_vec loops; /* enclosing loops, outermost first (any depth: user input) */
    ir_vec conds; /* enclosing conditions */
    ir_vec facts; /* enclosing then branches' conditions */
    const tir_stmt *cur; /* statement being walked */
    /* (buffer, thread variable) pairs: the buffer's Allocate sits inside
     * that thread loop, so each thread has its own copy in the function's
     * meaning too */
    ir_vec own_buf, own_var;
} lc;

/* ---- collecting the accesses */

static bool is_local(const lc *c, const tir_buffer *b) {
    for (int i = 0; i < c->locals.n; i++)
        if (c->locals.items[i] == b) return true;
    return false;
}

static void record(lc *c, const tir_buffer *b, bool write, int nidx,
                   const tir_expr *const *idx) {
    if (!is_local(c, b)) return;
    tir_ctx *ctx = c->st->ctx;
    access *a = IR_NEWN(ctx, access, 1);
    *a = (access){.stmt = c->cur, .buf = b, .write = write, .nidx = nidx, .idx = idx,
                  .nloops = c->loops.n, .nconds = c->conds.n, .nfacts = c->facts.n};
    /* ir_copy_array: an empty list (items NULL) copies to NULL */
    a->loops = ir_copy_array(ctx, c->loops.items, sizeof(const tir_for *), c->loops.n);
    a->conds = ir_copy_array(ctx, c->conds.items, sizeof(const tir_expr *), c->conds.n);
    a->facts = ir_copy_array(ctx, c->facts.items, sizeof(const tir_expr *), c->facts.n);
    ir_vec_push(&c->accesses, a);
}

static bool load_pre(tir_visitor *v, const tir_node *n) {
    if (n->kind == TIR_KIND_BUFFER_LOAD) {
        const tir_buffer_load *l = (const tir_buffer_load *)n;
        record(v->user, l->buffer, false, l->nidx, l->indices);
    }
    return true;
}

static void walk_expr(lc *c, const tir_expr *e) {
    if (!e) return;
    tir_visitor v = {.pre = load_pre, .user = c};
    tir_visit(&v, e);
}

static void walk(lc *c, const tir_stmt *s) {
    if (!s) return;
    c->cur = s;
    switch ((tir_kind)s->kind) {
    case TIR_KIND_FOR: {
        const tir_for *f = (const tir_for *)s;
        walk_expr(c, f->min);
        walk_expr(c, f->extent);
        if (f->kind == TIR_FOR_THREAD_BINDING) {
            bool seen = false;
            for (int i = 0; i < c->nthreads; i++) seen |= c->threads[i]->var == f->var;
            TIR_ASSERT(seen || c->nthreads < MAXTHREADS);
            if (!seen) c->threads[c->nthreads++] = f;
        }
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
        walk_expr(c, i->cond);
        ir_vec_push(&c->conds, i->cond); /* the else branch depends on it as much */
        ir_vec_push(&c->facts, i->cond); /* ... but only the then branch may assume it */
        walk(c, i->then_s);
        c->facts.n--;
        walk(c, i->else_s);
        c->conds.n--;
        break;
    }
    case TIR_KIND_ALLOCATE: {
        const tir_allocate *a = (const tir_allocate *)s;
        if (a->buffer->scope == TIR_SCOPE_LOCAL || a->buffer->scope == TIR_SCOPE_SHARED) {
            ir_vec_push(&c->locals, a->buffer);
            for (int i = 0; i < c->loops.n; i++) {
                const tir_for *f = c->loops.items[i];
                if (f->kind != TIR_FOR_THREAD_BINDING) continue;
                ir_vec_push(&c->own_buf, a->buffer);
                ir_vec_push(&c->own_var, f->var);
            }
        }
        walk(c, a->body);
        break;
    }
    case TIR_KIND_BUFFER_STORE: {
        const tir_buffer_store *st = (const tir_buffer_store *)s;
        record(c, st->buffer, true, st->nidx, st->indices);
        for (int i = 0; i < st->nidx; i++) walk_expr(c, st->indices[i]);
        walk_expr(c, st->value);
        break;
    }
    case TIR_KIND_EVALUATE: walk_expr(c, ((const tir_evaluate *)s)->value); break;
    default: TIR_ASSERT(!"block left before local_check"); break;
    }
}

/* ---- reading a thread variable back from an element */

/* A function of the indices: index d (w == 0, d >= 0), the row-major flat
 * index (d < 0), or idx[d] * w + floormod(idx[d + 1], w) (w > 0). */
typedef struct cand {
    int d;
    int64_t w;
} cand;

typedef struct term {
    int64_t coef;
    const tir_expr *atom; /* NULL: a constant */
} term;

/* e as a sum of coef * atom; false when there are too many terms. */
static bool split_terms(const tir_expr *e, int64_t sign, term *out, int *n) {
    int64_t k;
    if (tir_expr_const_int(e, &k)) {
        if (*n >= MAXTERMS) return false;
        out[(*n)++] = (term){sign * k, NULL};
        return true;
    }
    const tir_binop *b = (const tir_binop *)e;
    switch ((tir_kind)e->kind) {
    case TIR_KIND_ADD: return split_terms(b->a, sign, out, n) && split_terms(b->b, sign, out, n);
    case TIR_KIND_SUB: return split_terms(b->a, sign, out, n) && split_terms(b->b, -sign, out, n);
    case TIR_KIND_MUL:
        if (tir_expr_const_int(b->b, &k)) return split_terms(b->a, sign * k, out, n);
        if (tir_expr_const_int(b->a, &k)) return split_terms(b->b, sign * k, out, n);
        break;
    default: break;
    }
    if (*n >= MAXTERMS) return false;
    out[(*n)++] = (term){sign, e};
    return true;
}

static int64_t floormod64(int64_t x, int64_t m) {
    int64_t r = x % m;
    return r < 0 ? r + m : r;
}

/* c > 0 when X = c * t + low + high with low in [0, c) and high a multiple
 * of c * extent(t) (then t = floormod(floordiv(X, c), extent)); 0 when X
 * does not mention t; -1 otherwise. */
static int64_t decode(tir_ctx *ctx, tir_analyzer *an, const tir_expr *X, const tir_var *tv,
                      int64_t ext) {
    if (!tir_uses_var(X, tv)) return 0;
    term terms[MAXTERMS];
    int n = 0;
    if (!split_terms(X, 1, terms, &n)) return -1;
    int64_t ct = 0;
    for (int i = 0; i < n; i++) {
        if (terms[i].atom == (const tir_expr *)tv)
            ct += terms[i].coef;
        else if (terms[i].atom && tir_uses_var(terms[i].atom, tv))
            return -1;
    }
    if (ct <= 0) return -1;
    int64_t period = ext > 0 ? ct * ext : 0;
    const tir_expr *low = tir_int(ctx, X->dtype, 0);
    int64_t lowc = 0;
    for (int i = 0; i < n; i++) {
        const term *m = &terms[i];
        if (m->atom == (const tir_expr *)tv || (period && m->coef % period == 0)) continue;
        if (!m->atom)
            lowc += period ? floormod64(m->coef, period) : m->coef;
        else
            low = tir_add(ctx, low, tir_mul(ctx, m->atom, tir_int(ctx, X->dtype, m->coef)));
    }
    tir_int_bound bd =
        tir_analyzer_const_bound(an, tir_add(ctx, low, tir_int(ctx, X->dtype, lowc)));
    return bd.min >= 0 && bd.max < ct ? ct : -1;
}

/* X of candidate k for access a, simplified (NULL: k does not apply). */
static const tir_expr *cand_expr(tir_ctx *ctx, tir_analyzer *an, const access *a, cand k) {
    const tir_expr *x;
    if (k.d >= 0 && k.w == 0) {
        x = a->idx[k.d];
    } else if (k.d >= 0) {
        const tir_expr *w = tir_int(ctx, a->idx[k.d]->dtype, k.w);
        x = tir_add(ctx, tir_mul(ctx, a->idx[k.d], w), tir_floormod(ctx, a->idx[k.d + 1], w));
    } else {
        x = a->idx[0];
        for (int d = 1; d < a->nidx; d++) {
            int64_t ext;
            if (!tir_expr_const_int(a->buf->shape[d], &ext)) return NULL;
            x = tir_add(ctx, tir_mul(ctx, x, tir_int(ctx, x->dtype, ext)), a->idx[d]);
        }
    }
    return tir_analyzer_simplify(an, x);
}

typedef struct cands {
    cand k[MAXCANDS];
    int n;
} cands;

static void add_cand(cands *cs, int d, int64_t w) {
    for (int i = 0; i < cs->n; i++)
        if (cs->k[i].d == d && cs->k[i].w == w) return;
    if (cs->n < MAXCANDS) cs->k[cs->n++] = (cand){d, w};
}

typedef struct modfind {
    cands *cs;
    int d;
} modfind;

static bool mod_pre(tir_visitor *v, const tir_node *n) {
    modfind *m = v->user;
    int64_t w;
    if (n->kind == TIR_KIND_FLOORMOD && tir_expr_const_int(((const tir_binop *)n)->b, &w) && w > 1)
        add_cand(m->cs, m->d - 1, w);
    return true;
}

/* Every index, the flat index, and idx[d - 1] * w + floormod(idx[d], w)
 * for each floormod(., w) in some access's idx[d]. */
static void find_cands(const ir_vec *accs, cands *cs) {
    const access *a0 = accs->items[0];
    cs->n = 0;
    for (int d = 0; d < a0->nidx; d++) add_cand(cs, d, 0);
    if (a0->nidx > 1) add_cand(cs, -1, 0);
    for (int i = 0; i < accs->n; i++) {
        const access *a = accs->items[i];
        for (int d = 1; d < a->nidx; d++) {
            modfind m = {cs, d};
            tir_visitor v = {.pre = mod_pre, .user = &m};
            tir_visit(&v, a->idx[d]);
        }
    }
}

static void bind_loops(tir_analyzer *an, const access *a) {
    for (int i = 0; i < a->nloops; i++)
        tir_analyzer_bind(an, a->loops[i]->var, a->loops[i]->min, a->loops[i]->extent);
}

/* ---- threads that never touch the buffer
 *
 * A copy fused and split over more threads than it has elements runs
 * under a guard such as `t * 4 + v < 1024` (t of extent 512, v in
 * [0, 4)), so threads 256..511 neither write nor read the buffer, and a
 * staged tile's row `k * 8 + t // 32` then wraps into the next k tile's
 * rows only for threads that never run.  When every access runs only
 * where t < n' for some n' below t's extent, t may be read back modulo n'
 * instead (the tiling rule's 16-warp blocks with 8-deep staged tiles were
 * refused; twenty-ninth session).  Only the conditions of enclosing then
 * branches count: an else branch runs where its condition is false. */

/* Whether every value of e (its variables bound in an) lies strictly
 * inside its dtype's range (the analyzer gives the whole range for a sum
 * that may leave it, so the ends do not count). */
static bool fits_dtype(tir_analyzer *an, const tir_expr *e) {
    if (e->dtype.bits < 2 || e->dtype.bits > 64) return false;
    int64_t hi = e->dtype.bits == 64 ? INT64_MAX : ((int64_t)1 << (e->dtype.bits - 1)) - 1;
    tir_int_bound bd = tir_analyzer_const_bound(an, e);
    return bd.min > -hi - 1 && bd.max < hi;
}

/* The least n such that e, true where the access runs (its loops bound
 * in an), implies t < n; ext when it implies nothing tighter, 0 when it
 * holds for no t >= 0. */
static int64_t cond_limit(tir_ctx *ctx, tir_analyzer *an, const tir_expr *e, const tir_var *t,
                          int64_t ext) {
    e = lower_unmark_guard(e);
    const tir_binop *b = (const tir_binop *)e;
    const tir_expr *lhs, *rhs;
    int64_t slack; /* lhs - rhs <= -slack */
    switch ((tir_kind)e->kind) {
    case TIR_KIND_AND: {
        int64_t x = cond_limit(ctx, an, b->a, t, ext), y = cond_limit(ctx, an, b->b, t, ext);
        return x < y ? x : y;
    }
    case TIR_KIND_LT: lhs = b->a, rhs = b->b, slack = 1; break;
    case TIR_KIND_LE: lhs = b->a, rhs = b->b, slack = 0; break;
    case TIR_KIND_GT: lhs = b->b, rhs = b->a, slack = 1; break;
    case TIR_KIND_GE: lhs = b->b, rhs = b->a, slack = 0; break;
    default: return ext;
    }
    /* signed scalars only: an unsigned difference wraps, and the linear
       reading below would bound t where the condition does not */
    if (lhs->dtype.code != TIR_TYPE_INT || lhs->dtype.lanes != 1 || !tir_uses_var(e, t))
        return ext;
    /* ... and only where neither side can wrap: a sum that reads data
       wraps (docs/lowered-ir.md), so `t * 1073741824 + int32(U[0]) < 1`
       holds for t = 0, 2 and 3 of 4, where the linear reading below says
       t < 1 (review of the twenty-ninth session: accepted, the reader
       read an element it never wrote).  Adds, subtracts and constant
       multiples wrap modulo 2^bits, so a side whose value stays in the
       dtype has its unwrapped value whatever its partial sums do. */
    if (!fits_dtype(an, lhs) || !fits_dtype(an, rhs)) return ext;
    term terms[MAXTERMS];
    int n = 0;
    if (!split_terms(lhs, 1, terms, &n) || !split_terms(rhs, -1, terms, &n)) return ext;
    int64_t ct = 0;
    const tir_expr *rest = tir_int(ctx, lhs->dtype, 0);
    for (int i = 0; i < n; i++) {
        const term *m = &terms[i];
        if (m->atom == &t->base)
            ct += m->coef;
        else if (m->atom && tir_uses_var(m->atom, t))
            return ext;
        else
            rest = tir_add(ctx, rest,
                           m->atom ? tir_mul(ctx, m->atom, tir_int(ctx, lhs->dtype, m->coef))
                                   : tir_int(ctx, lhs->dtype, m->coef));
    }
    if (ct <= 0) return ext; /* no upper bound on t */
    tir_int_bound bd = tir_analyzer_const_bound(an, rest);
    if (bd.min <= INT32_MIN || bd.min >= INT32_MAX) return ext; /* unknown, or no room to reason */
    int64_t hi = -slack - bd.min; /* ct * t <= -slack - rest <= hi */
    if (hi < 0) return 0;
    int64_t lim = hi / ct + 1;
    return lim < ext ? lim : ext;
}

/* The number of values of t (extent ext) for which some access may run:
 * the largest limit the accesses' then-branch conditions put on t. */
static int64_t threads_touching(tir_ctx *ctx, tir_analyzer *an, const ir_vec *accs,
                                const tir_var *t, int64_t ext) {
    int64_t most = 1;
    for (int i = 0; i < accs->n && most < ext; i++) {
        const access *a = accs->items[i];
        bind_loops(an, a);
        int64_t lim = ext;
        for (int j = 0; j < a->nfacts; j++) {
            int64_t x = cond_limit(ctx, an, a->facts[j], t, ext);
            if (x < lim) lim = x;
        }
        if (lim > most) most = lim;
    }
    return most;
}

/* Narrows, in an, the range of each thread variable around access a to
 * the threads for which a's then-branch conditions may hold (a guard
 * `t * 4 + v < 256` keeps t < 64, which then bounds the `low` of another
 * thread variable's read-back: `A_local[b * 64 + t, ...]` tells b from
 * the element only where t < 64). */
static void bind_facts(tir_ctx *ctx, tir_analyzer *an, const access *a) {
    for (int i = 0; i < a->nloops; i++) {
        const tir_for *f = a->loops[i];
        int64_t lo, ext;
        if (f->kind != TIR_FOR_THREAD_BINDING || !tir_expr_const_int(f->min, &lo) || lo != 0 ||
            !tir_expr_const_int(f->extent, &ext) || ext <= 1)
            continue;
        int64_t lim = ext;
        for (int j = 0; j < a->nfacts; j++) {
            int64_t x = cond_limit(ctx, an, a->facts[j], f->var, ext);
            if (x < lim) lim = x;
        }
        if (lim < ext) tir_analyzer_bind_const(an, f->var, 0, lim > 0 ? lim : 1);
    }
}

/* code[i * cs->n + k]: decode of thread t from candidate k in access i. */
static int64_t *decode_all(lc *c, tir_analyzer *an, const ir_vec *accs, const cands *cs,
                           const tir_var *tv, int64_t ext) {
    int64_t *code = ir_xcalloc((size_t)(accs->n * cs->n), sizeof *code);
    for (int i = 0; i < accs->n; i++) {
        const access *a = accs->items[i];
        const tir_expr *x[MAXCANDS];
        bind_loops(an, a);
        for (int k = 0; k < cs->n; k++) x[k] = cand_expr(c->st->ctx, an, a, cs->k[k]);
        /* the guards' ranges bound `low` only: simplifying under them
           would drop a thread variable the guard pins to one value from
           this access's X and not from the others' */
        bind_facts(c->st->ctx, an, a);
        for (int k = 0; k < cs->n; k++)
            code[i * cs->n + k] = x[k] ? decode(c->st->ctx, an, x[k], tv, ext) : -1;
        bind_loops(an, a); /* the loops' own ranges again, for whoever simplifies next */
    }
    return code;
}

/* ---- messages */

/* "A_local[i, j] (blockIdx.x = i_0, threadIdx.x = tx)" */
static const char *describe(lc *c, const access *a) {
    ir_strbuf sb;
    ir_sb_init(&sb);
    ir_sb_printf(&sb, "%s[", a->buf->name);
    for (int d = 0; d < a->nidx; d++)
        ir_sb_printf(&sb, "%s%s", d ? ", " : "", tir_print(c->st->ctx, a->idx[d]));
    ir_sb_printf(&sb, "] under ");
    int n = 0;
    for (int i = 0; i < a->nloops; i++) {
        const tir_for *f = a->loops[i];
        if (f->kind != TIR_FOR_THREAD_BINDING) continue;
        ir_sb_printf(&sb, "%s%s = %s", n++ ? ", " : "", f->thread_tag, f->var->name);
    }
    if (!n) ir_sb_printf(&sb, "no thread loop");
    return ir_sb_finish(&sb, c->st->ctx);
}

/* "local (one copy per thread)" or "shared (one copy per thread block)". */
static const char *copy_kind(const tir_buffer *b) {
    return b->scope == TIR_SCOPE_SHARED ? "shared (one copy per thread block)"
                                        : "local (one copy per thread)";
}
static const char *other_scope(const tir_buffer *b) {
    return b->scope == TIR_SCOPE_SHARED ? "global" : "shared";
}
static const char *who(const tir_buffer *b) {
    return b->scope == TIR_SCOPE_SHARED ? "thread block" : "thread";
}

static tir_status fail_mapping(lc *c, const access *w, const access *r, const tir_for *t) {
    const char *how = r->write ? "also written" : "read";
    return lower_fail_marked(
        c->st, c->f, 2, (const void *[]){w->stmt, r->stmt},
        "local_check: buffer '%s' is %s but is written and %s under "
        "different thread mappings: written as %s, %s as %s; %s ('%s') cannot be told from "
        "the element the same way in both, so a %s would read elements another %s "
        "wrote.  Map threads onto the buffer the same way in both stages (the same loop "
        "order before fuse/split/bind) or make the buffer %s",
        w->buf->name, copy_kind(w->buf), how, describe(c, w), how, describe(c, r),
        t->thread_tag, t->var->name, who(w->buf), who(w->buf), other_scope(w->buf));
}

static tir_status fail_guard(lc *c, const access *w, const tir_expr *guard, const tir_for *t) {
    return lower_fail_marked(
        c->st, c->f, 1, (const void *[]){w->stmt},
        "local_check: buffer '%s' is %s; it is written as %s only "
        "where '%s', which depends on %s ('%s') while the element does not, so threads "
        "for which it is false would read elements they never wrote.  Bind the writer's "
        "loops so that %s picks its elements, or make the buffer %s",
        w->buf->name, copy_kind(w->buf), describe(c, w), tir_print(c->st->ctx, guard),
        t->thread_tag, t->var->name, t->thread_tag, other_scope(w->buf));
}

/* Whether b's Allocate sits inside the loop of thread variable t, and no
 * loop of t's tag nested in that Allocate was unified away (then the
 * function ran all of that loop's iterations on one array: review of the
 * eighteenth session, `L[t2] = A[t2]` under `for t2 in threadIdx.x` inside
 * a per-t L read back at L[t + 1]). */
static bool own_copy(const lc *c, const tir_buffer *b, const tir_var *t) {
    for (int i = 0; i < c->st->nlost; i++)
        if (c->st->lost_buf[i] == b && c->st->lost_var[i] == t) return false;
    for (int i = 0; i < c->own_buf.n; i++)
        if (c->own_buf.items[i] == b && c->own_var.items[i] == t) return true;
    return false;
}

static tir_status fail_value(lc *c, const access *w, const tir_for *t) {
    return lower_fail_marked(
        c->st, c->f, 1, (const void *[]){w->stmt},
        "local_check: buffer '%s' is %s; it is written as %s with "
        "the same element in every thread of %s ('%s') but a value that depends on it (or "
        "reads the buffer itself), so each copy would hold another value than the one the "
        "function means.  Index the buffer by %s, or make it %s",
        w->buf->name, copy_kind(w->buf), describe(c, w), t->thread_tag, t->var->name,
        t->thread_tag, other_scope(w->buf));
}

/* ---- the proof, per buffer and thread variable */

static bool idx_uses(const access *a, const tir_var *v) {
    for (int d = 0; d < a->nidx; d++)
        if (tir_uses_var(a->idx[d], v)) return true;
    return false;
}

/* A condition or loop bound around writer w that mentions t, or NULL.
 * Conditions that always hold (bounds predicates of a divisible shape) do
 * not count. */
static const tir_expr *guard_on(tir_analyzer *an, const access *w, const tir_var *t) {
    bind_loops(an, w);
    for (int i = 0; i < w->nconds; i++) {
        const tir_expr *c = lower_unmark_guard(w->conds[i]);
        if (tir_uses_var(c, t) && !tir_analyzer_can_prove(an, c)) return c;
    }
    for (int i = 0; i < w->nloops; i++) {
        const tir_for *f = w->loops[i];
        if (tir_uses_var(f->min, t)) return f->min;
        if (tir_uses_var(f->extent, t)) return f->extent;
    }
    return NULL;
}

/* True when a loop around a has a bound that mentions t. */
static bool bound_on(const access *a, const tir_var *t) {
    for (int i = 0; i < a->nloops; i++)
        if (tir_uses_var(a->loops[i]->min, t) || tir_uses_var(a->loops[i]->extent, t)) return true;
    return false;
}

/* True when candidate k reads t back the same way in accesses i and j. */
static bool agree(const int64_t *code, int ncand, int i, int j, int k) {
    return code[i * ncand + k] > 0 && code[i * ncand + k] == code[j * ncand + k];
}

static int64_t const_extent(const tir_for *t) {
    int64_t ext;
    return tir_expr_const_int(t->extent, &ext) && ext > 0 ? ext : 0;
}

/* True when some candidate function reads tv (of extent ext, 0: unknown)
 * back the same way from every access; otherwise *bad is an access that
 * agrees with writer w0 under no candidate (or a reader, or w0). */
static bool readable(lc *c, tir_analyzer *an, const ir_vec *accs, const tir_var *tv,
                     int64_t ext, int w0, int *bad) {
    cands cs;
    find_cands(accs, &cs);
    int64_t *code = decode_all(c, an, accs, &cs, tv, ext);
    bool ok = false;
    for (int k = 0; k < cs.n && !ok; k++) {
        ok = code[w0 * cs.n + k] > 0;
        for (int i = 0; i < accs->n && ok; i++) ok = agree(code, cs.n, w0, i, k);
    }
    *bad = -1;
    for (int i = 0; i < accs->n && !ok && *bad < 0; i++) {
        bool any = false;
        for (int k = 0; k < cs.n; k++) any |= agree(code, cs.n, w0, i, k);
        if (!any && i != w0) *bad = i;
    }
    free(code);
    if (ok) return true;
    if (*bad < 0) /* w0 itself, or only no single candidate for all: name a reader */
        for (int i = 0; i < accs->n && *bad < 0; i++)
            if (i != w0 && !((const access *)accs->items[i])->write) *bad = i;
    if (*bad < 0) *bad = w0;
    return false;
}

/* ---- thread variables read back digit by digit
 *
 * A fused thread index t = ((a * 4 + b) * 8 + c) * 4 + d bound to warps
 * and lanes is often split again across the buffer's dimensions (rows
 * from a and c, columns from b and d), so no one function of the element
 * reads t back whole.  Then t is cut into the mixed-radix digits its
 * floordiv / floormod uses name (breakpoints 4, 32, 128 above), each
 * access rewritten over the digits, and each digit must be read back
 * like a thread variable of its own; t is then a function of the
 * element too.  A digit that no writer's index mentions is replicated:
 * its writers must run in every thread, as for a whole t. */

typedef struct radix {
    const tir_var *t;
    int64_t ext;
    int64_t b[MAXCANDS]; /* breakpoints in (1, ext) */
    int n;
    bool full;
} radix;

static void add_break(radix *r, int64_t b) {
    if (b <= 1 || b >= r->ext) return;
    for (int i = 0; i < r->n; i++)
        if (r->b[i] == b) return;
    if (r->n < MAXCANDS)
        r->b[r->n++] = b;
    else
        r->full = true;
}

static bool radix_pre(tir_visitor *v, const tir_node *n) {
    radix *r = v->user;
    const tir_binop *b = (const tir_binop *)n;
    int64_t k, s;
    if ((n->kind != TIR_KIND_FLOORDIV && n->kind != TIR_KIND_FLOORMOD) ||
        !tir_expr_const_int(b->b, &k) || k <= 0)
        return true;
    if (b->a == &r->t->base) {
        add_break(r, k);
    } else if (n->kind == TIR_KIND_FLOORMOD && b->a->kind == TIR_KIND_FLOORDIV) {
        const tir_binop *d = (const tir_binop *)b->a;
        if (d->a == &r->t->base && tir_expr_const_int(d->b, &s) && s > 0) add_break(r, s * k);
    }
    return true;
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The breakpoints of t in the accesses, sorted, each dividing the next
 * and the extent; false when there are none or they do not chain. */
static bool find_radix(const ir_vec *accs, radix *r) {
    for (int i = 0; i < accs->n; i++) {
        const access *a = accs->items[i];
        for (int d = 0; d < a->nidx; d++) {
            tir_visitor v = {.pre = radix_pre, .user = r};
            tir_visit(&v, a->idx[d]);
        }
    }
    if (r->full || r->n == 0) return false;
    qsort(r->b, (size_t)r->n, sizeof *r->b, cmp_i64);
    int64_t prev = 1;
    for (int i = 0; i < r->n; prev = r->b[i++])
        if (r->b[i] % prev) return false;
    return r->ext % prev == 0;
}

/* The accesses with t replaced by sum(digit[k] * base[k]), simplified
 * with the digits bound (so t // 4 % 8 becomes one digit). */
static ir_vec rewrite_accesses(lc *c, tir_analyzer *an, const ir_vec *accs, const tir_var *t,
                               int nd,
                               const tir_var *const *digit, const int64_t *base) {
    tir_ctx *ctx = c->st->ctx;
    const tir_expr *value = tir_int(ctx, t->base.dtype, 0);
    for (int k = 0; k < nd; k++)
        value = tir_add(ctx, value, tir_mul(ctx, &digit[k]->base, tir_int(ctx, t->base.dtype, base[k])));
    ir_vec out = {0};
    for (int i = 0; i < accs->n; i++) {
        const access *a = accs->items[i];
        access *b = IR_NEW(ctx, access);
        *b = *a;
        const tir_expr **idx = IR_NEWN(ctx, const tir_expr *, a->nidx);
        for (int d = 0; d < a->nidx; d++)
            idx[d] = tir_analyzer_simplify(
                an, (const tir_expr *)tir_substitute(ctx, a->idx[d], 1, &t, &value));
        b->idx = idx;
        const tir_expr **conds = IR_NEWN(ctx, const tir_expr *, a->nconds);
        for (int j = 0; j < a->nconds; j++)
            conds[j] = tir_analyzer_simplify(
                an, (const tir_expr *)tir_substitute(ctx, a->conds[j], 1, &t, &value));
        b->conds = conds;
        const tir_expr **facts = IR_NEWN(ctx, const tir_expr *, a->nfacts);
        for (int j = 0; j < a->nfacts; j++)
            facts[j] = tir_analyzer_simplify(
                an, (const tir_expr *)tir_substitute(ctx, a->facts[j], 1, &t, &value));
        b->facts = facts;
        ir_vec_push(&out, b);
    }
    return out;
}

/* Whether writer a stores the same value whichever digit k of t is (and
 * does not read its own buffer): `X[t % 4] = A[t]` over 16 threads gave
 * each copy its own A[t] where the sequential meaning has the last
 * thread's (review of the sixteenth session). */
static bool same_value(lc *c, tir_analyzer *an, const access *a, const tir_var *t, int nd,
                       const tir_var *const *digit, const int64_t *base, int k) {
    const tir_buffer_store *st = tir_as_tir_buffer_store(a->stmt);
    if (!st) return true; /* an intrinsic's tile */
    if (lower_reads_buffer(st->value, a->buf)) return false;
    tir_ctx *ctx = c->st->ctx;
    const tir_expr *value = tir_int(ctx, t->base.dtype, 0);
    for (int j = 0; j < nd; j++)
        value = tir_add(ctx, value, tir_mul(ctx, &digit[j]->base, tir_int(ctx, t->base.dtype, base[j])));
    const tir_expr *v = tir_analyzer_simplify(
        an, (const tir_expr *)tir_substitute(ctx, st->value, 1, &t, &value));
    return !tir_uses_var(v, digit[k]);
}

static bool digits_readable(lc *c, tir_analyzer *an, const ir_vec *accs, const tir_for *t) {
    radix r = {.t = t->var, .ext = const_extent(t)};
    if (r.ext <= 1 || !find_radix(accs, &r)) return false;
    int nd = r.n + 1;
    int64_t base[MAXCANDS + 1], radix_of[MAXCANDS + 1];
    const tir_var *digit[MAXCANDS + 1];
    for (int k = 0; k < nd; k++) {
        base[k] = k ? r.b[k - 1] : 1;
        radix_of[k] = (k < r.n ? r.b[k] : r.ext) / base[k];
        digit[k] = tir_var_new(c->st->ctx, t->var->name, t->var->base.dtype);
        tir_analyzer_bind_const(an, digit[k], 0, radix_of[k]);
    }
    ir_vec subs = rewrite_accesses(c, an, accs, t->var, nd, digit, base);
    bool ok = true;
    for (int k = 0; k < nd && ok; k++) {
        int w0 = -1, bad;
        for (int i = 0; i < subs.n && w0 < 0; i++) {
            const access *a = subs.items[i];
            if (a->write && idx_uses(a, digit[k])) w0 = i;
        }
        if (w0 < 0) { /* replicated along this digit: no writer guarded on it */
            for (int i = 0; i < subs.n && ok; i++) {
                const access *a = subs.items[i];
                ok = !a->write || (!guard_on(an, a, digit[k]) && !bound_on(a, t->var) &&
                                   same_value(c, an, a, t->var, nd, digit, base, k));
            }
        } else {
            int64_t used = threads_touching(c->st->ctx, an, &subs, digit[k], radix_of[k]);
            ok = readable(c, an, &subs, digit[k], radix_of[k], w0, &bad) ||
                 (used < radix_of[k] && readable(c, an, &subs, digit[k], used, w0, &bad));
        }
    }
    for (int k = 0; k < nd; k++) tir_analyzer_unbind(an, digit[k]);
    ir_vec_free(&subs);
    return ok;
}

static tir_status check_thread(lc *c, tir_analyzer *an, const ir_vec *accs, const tir_for *t) {
    int64_t ext;
    if (tir_expr_const_int(t->extent, &ext) && ext == 1) return TIR_OK; /* one thread */
    /* Allocated inside t's loop: each thread has its own copy in the
     * function's meaning too (a fresh array per iteration), so no thread
     * can read what another wrote, whatever the indices, conditions and
     * values: a hand-written per-thread array (eighteenth session; these
     * were refused, `if X[t] > 0: L[0] = ...` among them) */
    if (accs->n && own_copy(c, ((const access *)accs->items[0])->buf, t->var)) return TIR_OK;
    int w0 = -1;
    for (int i = 0; i < accs->n && w0 < 0; i++) {
        const access *a = accs->items[i];
        if (a->write && idx_uses(a, t->var)) w0 = i;
    }
    if (w0 < 0) { /* replicated along t: every writer must run in every thread */
        for (int i = 0; i < accs->n; i++) {
            const access *a = accs->items[i];
            const tir_expr *g = a->write ? guard_on(an, a, t->var) : NULL;
            if (g) return fail_guard(c, a, g, t);
        }
        /* ... and store the same value in every thread: `X[0] = A[t]` left
         * each thread its own A[t] where the sequential meaning has the
         * last thread's, and `X[0] = X[0] + 1` added once per copy where it
         * adds once per thread (review of the sixteenth session) */
        for (int i = 0; i < accs->n; i++) {
            const access *a = accs->items[i];
            const tir_buffer_store *st = a->write ? tir_as_tir_buffer_store(a->stmt) : NULL;
            if (st && (tir_uses_var(st->value, t->var) || lower_reads_buffer(st->value, a->buf)))
                return fail_value(c, a, t);
        }
        return TIR_OK;
    }
    int bad = -1;
    int64_t n = const_extent(t);
    int64_t used = n > 1 ? threads_touching(c->st->ctx, an, accs, t->var, n) : n;
    if (readable(c, an, accs, t->var, n, w0, &bad) ||
        (used < n && readable(c, an, accs, t->var, used, w0, &bad)) ||
        digits_readable(c, an, accs, t))
        return TIR_OK;
    return fail_mapping(c, accs->items[w0], accs->items[bad], t);
}

/* Whether the accesses run under different loops of blockIdx variable t
 * (sibling nests that unify_threads gave one variable).  Within one loop
 * nest, compute_at proved that each block computes the tile it reads
 * (overlapping halos included); across nests nothing did: a block would
 * read shared elements that another block's copy of the buffer holds. */
static bool across_nests(const ir_vec *accs, const tir_var *t) {
    const tir_for *first = NULL;
    for (int i = 0; i < accs->n; i++) {
        const access *a = accs->items[i];
        const tir_for *l = NULL;
        for (int j = 0; j < a->nloops && !l; j++)
            if (a->loops[j]->var == t) l = a->loops[j];
        if (!l) return true; /* outside t's loops: every block runs it */
        if (!first) first = l;
        if (l != first) return true;
    }
    return false;
}

static tir_status check_buffer(lc *c, tir_analyzer *an, const tir_buffer *b) {
    ir_vec accs = {0};
    bool written = false;
    for (int i = 0; i < c->accesses.n; i++) {
        const access *a = c->accesses.items[i];
        if (a->buf != b) continue;
        ir_vec_push(&accs, a);
        written |= a->write;
    }
    tir_status s = TIR_OK;
    /* a shared buffer has one copy per thread block: only blockIdx
       matters (its threads share it; thread_sync orders them) */
    for (int t = 0; t < c->nthreads && s == TIR_OK && written; t++)
        if (b->scope != TIR_SCOPE_SHARED ||
            (lower_is_block_loop(c->threads[t]) && across_nests(&accs, c->threads[t]->var)))
            s = check_thread(c, an, &accs, c->threads[t]);
    ir_vec_free(&accs);
    return s;
}

tir_status lower_local_check(lower_state *st, const tir_prim_func *in, const tir_prim_func **out) {
    lc c = {.st = st, .f = in};
    walk(&c, in->body);
    tir_analyzer *an = tir_analyzer_create(st->ctx);
    tir_status s = TIR_OK;
    for (int i = 0; i < c.locals.n && s == TIR_OK; i++) s = check_buffer(&c, an, c.locals.items[i]);
    tir_analyzer_destroy(an);
    ir_vec_free(&c.locals);
    ir_vec_free(&c.accesses);
    ir_vec_free(&c.loops);
    ir_vec_free(&c.conds);
    ir_vec_free(&c.facts);
    ir_vec_free(&c.own_buf);
    ir_vec_free(&c.own_var);
    if (s == TIR_OK) *out = in;
    return s;
}
