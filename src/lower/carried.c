/* carried.c: whether one iteration of a loop may read, in a buffer, a
 * value an earlier iteration wrote (lower_reads_first).  plan_alloc does
 * not move such a buffer's Allocate into the loop (it would start
 * unwritten in every iteration) and sw_pipeline does not version it
 * (iteration k would read the copy of iteration k - V).
 *
 * Elements we can name are followed one by one: constant indices, or
 * indices of the variables of loops inside the body of constant bounds
 * (the walk steps through such a loop value by value, up to MAXWALKS
 * walks of a body, and decides conditions of those variables, also an
 * `and` one operand of which is false, or an `or` one is true, whatever
 * the other names: a block index, the loop's own variable), a Ramp lane
 * by lane.  A pre-pass notes, for each element the body writes, the
 * position of its last write and whether some write of it sits under a
 * condition (or in a loop) that may differ between iterations or between
 * runs of the loop: one that reads memory or uses a variable bound
 * outside the loop other than a thread's (the loop's own, an outer
 * loop's).  Then the body is walked in execution order with two sets:
 * what every path so far surely wrote (an If's branches both start from
 * the state before it and meet after it; a loop that may run no iteration
 * adds nothing after it), and what some path wrote under conditions alike
 * in every iteration and every run (of thread variables and inner loops).
 * A read of a named element answers no when every path wrote it; or when
 * such a path did and no write of it may differ or comes later in the
 * body: where those conditions fail they fail in every iteration of every
 * run, so nothing in the loop ever writes the element there (reading it
 * would read an element never written, which the interpreter refuses, or
 * one written before the loop, and then the buffer is used outside the
 * loop and the callers ask nothing), which is how the rules' warp guards
 * around fragment loads and their mma read.  Otherwise it answers yes
 * (`if k == 0: S[0] = 0` then `S[0] = S[0] + A[k]`; `D[0] = A[k]` then
 * `if D[0] <= 0: S[0] = A[k]` then a read; `if j == 0: U[1] = ...` then a
 * read, j an outer loop's variable: for j = 1 it reads what the run for
 * j = 0 wrote).
 *
 * A write whose elements we cannot name and that a thread variable (or
 * lane_id) indexes, or a call's (a fragment tile, ldmatrix, cp.async),
 * covers everything after it, conditional or not, and a read we cannot
 * name is covered by any earlier write: those are the tiles the schedule
 * language writes whole before reading them, and where they are not
 * (some elements written, others read that only an earlier iteration
 * wrote), the answer is wrong (docs/reliability.md lists it as known).
 * Any other write we cannot name (`S[j]`, j an outer loop's or the loop's
 * own; a nest past MAXWALKS) covers nothing and may write any element, so
 * no conditional write is counted after or around it.  A store's value is
 * read before the store writes; an mma's accumulator or an atomic add is
 * read first.
 */
#include <stdlib.h>
#include <string.h>

#include "ir/arith_internal.h"
#include "lower_internal.h"

enum { MAXW = 64, MAXD = 4, MAXLANES = 16, MAXLOOPS = 8, MAXWALKS = 64 };

/* Constant elements, each of nd[i] indices; past MAXW they are dropped
 * (every use below is then conservative). */
typedef struct elist {
    int n;
    int nd[MAXW];
    int64_t w[MAXW][MAXD];
} elist;

typedef struct cstate {
    bool all;   /* a write we cannot name the elements of */
    elist must; /* written on every path so far in this iteration */
    elist may;  /* written on some path, under conditions alike in every iteration */
} cstate;

/* The pre-pass's facts about each constant element the body writes. */
typedef struct winfo {
    elist el;
    int last[MAXW];  /* position of its last write */
    bool kvar[MAXW]; /* a write under a condition that may differ between iterations */
    /* writes of elements not named and not indexed by a thread (`S[j]`, j
     * an outer loop's): the position of the last, and whether one may
     * differ between iterations; they may write any element */
    int unnamed_last;
    bool unnamed_var;
} winfo;

typedef struct cwalk {
    const tir_buffer *buf;
    const tir_var *var; /* the loop's */
    bool pre;           /* collecting wi */
    const void *body;   /* the loop's */
    bool wi_ready;      /* wi collected (prepass) */
    int pos;            /* accesses of buf so far, in body order */
    int kdep;           /* Ifs and loops around that may differ between iterations */
    /* the loops inside the body around the walk that it steps through
     * value by value (constant bounds, every iteration), their values, and
     * how many walks of the innermost body that makes */
    const tir_var *loops[MAXLOOPS];
    int64_t val[MAXLOOPS];
    int nloops;
    const ir_vec *threads; /* the kernel's thread-binding variables */
    int64_t walks;
    cstate s;
    winfo wi;
    bool read_first;
    const tir_buffer_load *dst[8]; /* calls' destinations: written, not read */
    int ndst;
} cwalk;

static int64_t fdiv(int64_t a, int64_t b) {
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

static int64_t eval(const cwalk *c, const int64_t *vals, const tir_expr *e, bool *ok);

/* `a and b`, `a or b`: decided by one operand alone when it is false (and)
 * or true (or), whatever the other's value.  A ragged tile's mma guard
 * `i_0 * 2 + i_2 < 3 and j_2 < 3` (i_0 a block index) is false for every
 * block at j_2 = 3; left undecided, the walk read the fragment elements
 * of j_2 = 3.. that no load writes (a false refusal of the fragment
 * pipeline).  The other operand must read no memory: a decided If's
 * condition is not walked, and its reads would go unseen. */
static int64_t eval_logic(const cwalk *c, const int64_t *vals, const tir_binop *b, bool *ok) {
    bool oka = true, okb = true, dom = b->base.kind == TIR_KIND_OR;
    bool x = eval(c, vals, b->a, &oka) != 0, y = eval(c, vals, b->b, &okb) != 0;
    if (oka && okb) return dom ? x || y : x && y;
    if ((oka && x == dom && !tir_reads_buffer(b->b)) || (okb && y == dom && !tir_reads_buffer(b->a)))
        return dom;
    *ok = false;
    return 0;
}

/* The value of integer expression e with the variables of c's stepped
 * loops at vals; *ok cleared for anything else. */
static int64_t eval(const cwalk *c, const int64_t *vals, const tir_expr *e, bool *ok) {
    if (!*ok) return 0;
    switch ((tir_kind)e->kind) {
    case TIR_KIND_INT_IMM: return ((const tir_int_imm *)e)->value;
    case TIR_KIND_VAR:
        for (int i = 0; i < c->nloops; i++)
            if (c->loops[i] == (const tir_var *)e) return vals[i];
        break;
    case TIR_KIND_CAST: { /* to an integer width, wrapped as the hardware does */
        int64_t x = eval(c, vals, ((const tir_cast *)e)->value, ok);
        if (!tir_dtype_is_int(e->dtype) && !tir_dtype_is_bool(e->dtype)) break;
        return ar_wrap(e->dtype, x);
    }
    case TIR_KIND_NOT: return !eval(c, vals, ((const tir_not *)e)->a, ok);
    case TIR_KIND_CALL: /* a ragged tile's guard, as lower_blocks marks it */
        if (((const tir_call *)e)->op == TIR_INTRIN_DOMAIN_GUARD)
            return eval(c, vals, ((const tir_call *)e)->args[0], ok);
        break;
    case TIR_KIND_AND: case TIR_KIND_OR: return eval_logic(c, vals, (const tir_binop *)e, ok);
    case TIR_KIND_EQ: case TIR_KIND_NE: case TIR_KIND_LT: case TIR_KIND_LE: case TIR_KIND_GT:
    case TIR_KIND_GE: {
        const tir_binop *b = (const tir_binop *)e;
        int64_t x = eval(c, vals, b->a, ok), y = eval(c, vals, b->b, ok);
        switch ((tir_kind)e->kind) {
        case TIR_KIND_EQ: return x == y;
        case TIR_KIND_NE: return x != y;
        case TIR_KIND_LT: return x < y;
        case TIR_KIND_LE: return x <= y;
        case TIR_KIND_GT: return x > y;
        default: return x >= y;
        }
    }
    case TIR_KIND_ADD: case TIR_KIND_SUB: case TIR_KIND_MUL: case TIR_KIND_FLOORDIV:
    case TIR_KIND_FLOORMOD: case TIR_KIND_MIN: case TIR_KIND_MAX: {
        const tir_binop *b = (const tir_binop *)e;
        int64_t x = eval(c, vals, b->a, ok), y = eval(c, vals, b->b, ok), r;
        if (!*ok) return 0;
        /* in the expression's width, wrapped as the hardware does (uint8
         * 255 + 1 is 0: unwrapped, a condition was decided wrongly; review
         * of the sixteenth session); past int64, not evaluated */
        switch ((tir_kind)e->kind) {
        case TIR_KIND_ADD:
            if (__builtin_add_overflow(x, y, &r)) break;
            return ar_wrap(e->dtype, r);
        case TIR_KIND_SUB:
            if (__builtin_sub_overflow(x, y, &r)) break;
            return ar_wrap(e->dtype, r);
        case TIR_KIND_MUL:
            if (__builtin_mul_overflow(x, y, &r)) break;
            return ar_wrap(e->dtype, r);
        case TIR_KIND_MIN: return x < y ? x : y;
        case TIR_KIND_MAX: return x > y ? x : y;
        default:
            if (y == 0 || (x == INT64_MIN && y == -1)) break;
            return e->kind == TIR_KIND_FLOORDIV ? fdiv(x, y) : x - fdiv(x, y) * y;
        }
        break;
    }
    default: break;
    }
    *ok = false;
    return 0;
}

/* The elements of an access, each of n indices, with the inner loops'
 * variables at their values (a Ramp in the last index gives one per
 * lane).  0 when they cannot be named. */
static int const_elems(const cwalk *c, int n, const tir_expr *const *idx, int64_t out[][MAXD]) {
    if (n < 1 || n > MAXD) return 0;
    const tir_ramp *r = tir_as_tir_ramp(idx[n - 1]);
    int lanes = r ? r->lanes : 1;
    if (lanes > MAXLANES) return 0;
    bool ok = true;
    int64_t e[MAXD];
    for (int d = 0; d < n - 1; d++) e[d] = eval(c, c->val, idx[d], &ok);
    int64_t base = eval(c, c->val, r ? r->start : idx[n - 1], &ok);
    int64_t stride = r ? eval(c, c->val, r->stride, &ok) : 0;
    if (!ok) return 0;
    for (int l = 0; l < lanes; l++) {
        memcpy(out[l], e, sizeof(int64_t) * (size_t)(n - 1));
        out[l][n - 1] = base + l * stride;
    }
    return lanes;
}

static int el_find(const elist *l, int n, const int64_t *e) {
    for (int i = 0; i < l->n; i++)
        if (l->nd[i] == n && !memcmp(l->w[i], e, sizeof(int64_t) * (size_t)n)) return i;
    return -1;
}

static int el_add(elist *l, int n, const int64_t *e) {
    int i = el_find(l, n, e);
    if (i >= 0 || l->n == MAXW) return i;
    l->nd[l->n] = n;
    memcpy(l->w[l->n], e, sizeof(int64_t) * (size_t)n);
    return l->n++;
}

/* a := the elements of both (must after an If's two branches) */
static void el_meet(elist *a, const elist *b) {
    int k = 0;
    for (int i = 0; i < a->n; i++)
        if (el_find(b, a->nd[i], a->w[i]) >= 0) {
            a->nd[k] = a->nd[i];
            memcpy(a->w[k++], a->w[i], sizeof a->w[i]);
        }
    a->n = k;
}

static void el_join(elist *a, const elist *b) {
    for (int i = 0; i < b->n; i++) el_add(a, b->nd[i], b->w[i]);
}

/* Whether element e, read at the current position, holds a value this
 * iteration wrote: on every path, or on the paths where conditions that
 * are alike in every iteration hold, when no write of e may differ between
 * iterations or comes later in the body (where they fail, e is then never
 * written: `for j: if j > 0: L[3] = A[k]` then `C = L[3]` then
 * `L[3] = A[k] + 1` reads the previous iteration's L[3] where j == 0). */
static void prepass(cwalk *c);

static bool holds(cwalk *c, int n, const int64_t *e) {
    if (el_find(&c->s.must, n, e) >= 0) return true;
    if (el_find(&c->s.may, n, e) < 0) return false;
    if (!c->wi_ready) prepass(c);
    int i = el_find(&c->wi.el, n, e);
    return i >= 0 && !c->wi.kvar[i] && c->wi.last[i] < c->pos && !c->wi.unnamed_var &&
           c->wi.unnamed_last < c->pos;
}

static void on_read(cwalk *c, int n, const tir_expr *const *idx) {
    int64_t e[MAXLANES][MAXD];
    c->pos++;
    if (c->pre || c->s.all) return;
    int lanes = n >= 0 ? const_elems(c, n, idx, e) : 0;
    if (lanes == 0 && c->s.must.n == 0 && c->s.may.n == 0) c->read_first = true;
    for (int l = 0; l < lanes; l++)
        if (!holds(c, n, e[l])) c->read_first = true;
}

static bool bound_here(const cwalk *c, const tir_var *x);

/* Whether an index uses a thread variable: a cooperative tile's write, which
 * the schedule language makes whole (the known issue: it covers
 * everything).  Other writes we cannot name (`S[j]`, j an outer loop's or
 * the loop's own) cover nothing, and may write any element. */
static bool thread_pre(tir_visitor *v, const tir_node *n) {
    const cwalk *c = ((const void **)v->user)[0];
    bool *found = ((void **)v->user)[1];
    if (n->kind == TIR_KIND_VAR && c->threads && ir_vec_has(c->threads, n)) *found = true;
    if (n->kind == TIR_KIND_CALL && ((const tir_call *)n)->op == TIR_INTRIN_LANE_ID) *found = true;
    return !*found;
}

static bool uses_threads(const cwalk *c, int n, const tir_expr *const *idx) {
    bool found = false;
    const void *u[2] = {c, &found};
    tir_visitor v = {.pre = thread_pre, .user = (void *)u};
    for (int d = 0; d < n && !found; d++) tir_visit(&v, idx[d]);
    return found;
}

static void on_write(cwalk *c, int n, const tir_expr *const *idx) {
    int64_t e[MAXLANES][MAXD];
    c->pos++;
    int lanes = n >= 0 ? const_elems(c, n, idx, e) : 0;
    if (lanes == 0 && (n < 0 || uses_threads(c, n, idx))) c->s.all = true;
    if (lanes == 0 && c->pre) { /* another's elements: they may be any */
        c->wi.unnamed_last = c->pos;
        c->wi.unnamed_var |= c->kdep > 0;
    }
    for (int l = 0; l < lanes; l++) {
        if (c->pre) {
            int i = el_add(&c->wi.el, n, e[l]);
            if (i >= 0) c->wi.last[i] = c->pos, c->wi.kvar[i] |= c->kdep > 0;
            continue;
        }
        el_add(&c->s.must, n, e[l]);
        if (c->kdep == 0) el_add(&c->s.may, n, e[l]);
    }
}

/* Whether e reads memory, or uses a variable other than a thread
 * variable or one of a loop inside the body (the loop's own, an outer
 * loop's, a Let's). */
typedef struct fixed_scan {
    const cwalk *c;
    bool unfixed;
} fixed_scan;

static bool bound_here(const cwalk *c, const tir_var *x) {
    for (int i = 0; i < c->nloops; i++)
        if (c->loops[i] == x) return true;
    return c->threads && ir_vec_has(c->threads, x);
}

static bool fixed_pre(tir_visitor *v, const tir_node *n) {
    fixed_scan *f = v->user;
    if (n->kind == TIR_KIND_BUFFER_LOAD || (n->kind == TIR_KIND_VAR && !bound_here(f->c, (const tir_var *)n)))
        f->unfixed = true;
    return !f->unfixed;
}

/* Whether e may take another value in another iteration, or in another
 * run of the loop: it reads memory (`D[0] = A[k]` then `if D[0] <= 0`),
 * or uses the loop's variable or one bound outside the loop other than a
 * thread's (`if j > 0`, j an outer loop's: where it fails, the read sees
 * what the run of the loop for an earlier j wrote).  Conditions of thread
 * variables and of loops inside the body are alike in every run. */
static bool iter_varying(const cwalk *c, const tir_expr *e) {
    fixed_scan f = {c, false};
    tir_visitor v = {.pre = fixed_pre, .user = &f};
    tir_visit(&v, e);
    return f.unfixed;
}

/* Whether a statement touches buf at all, and with var in an index (or in
 * a condition or loop bound inside it). */
typedef struct bscan {
    const tir_buffer *buf;
    const tir_var *var;
    bool touches, indexed;
} bscan;

static bool bscan_pre(tir_visitor *v, const tir_node *n) {
    bscan *b = v->user;
    const tir_expr *const *idx = NULL;
    int nidx = 0;
    /* a condition or loop bound of var: the walk steps through var so
     * that it decides them (walked once, a write under `v == 1` hid a read
     * at v = 0 of the previous iteration's value) */
    if (n->kind == TIR_KIND_IF && tir_uses_var(((const tir_if *)n)->cond, b->var)) b->indexed = true;
    if (n->kind == TIR_KIND_FOR && (tir_uses_var(((const tir_for *)n)->min, b->var) ||
                                    tir_uses_var(((const tir_for *)n)->extent, b->var)))
        b->indexed = true;
    if (n->kind == TIR_KIND_BUFFER_LOAD && ((const tir_buffer_load *)n)->buffer == b->buf)
        idx = ((const tir_buffer_load *)n)->indices, nidx = ((const tir_buffer_load *)n)->nidx;
    if (n->kind == TIR_KIND_BUFFER_STORE && ((const tir_buffer_store *)n)->buffer == b->buf)
        idx = ((const tir_buffer_store *)n)->indices, nidx = ((const tir_buffer_store *)n)->nidx;
    if (idx) b->touches = true;
    for (int i = 0; i < nidx; i++) b->indexed = b->indexed || tir_uses_var(idx[i], b->var);
    return !(b->indexed && b->touches);
}

static bscan scan(const tir_stmt *s, const tir_buffer *buf, const tir_var *var) {
    bscan b = {buf, var, false, false};
    tir_visitor v = {.pre = bscan_pre, .user = &b};
    tir_visit(&v, s);
    return b;
}

static bool c_pre(tir_visitor *v, const tir_node *n) {
    cwalk *c = v->user;
    if (!c->pre && (c->read_first || c->s.all)) return false;
    switch ((tir_kind)n->kind) {
    case TIR_KIND_FOR: {
        const tir_for *f = (const tir_for *)n;
        bscan b = scan(f->body, c->buf, f->var);
        if (!b.touches && !iter_varying(c, f->min) && !iter_varying(c, f->extent))
            return false; /* nothing to see (bounds that read memory are reads) */
        bool known = true;
        int64_t lo = eval(c, c->val, f->min, &known), ext = eval(c, c->val, f->extent, &known);
        if (known && ext <= 0) return false; /* runs no iteration in this walk */
        if (known && b.indexed && c->nloops < MAXLOOPS && c->walks * ext <= MAXWALKS) {
            /* walked once per value, so that its body's elements can be
             * named and each read sees the writes of the values before
             * (`L[v] = x` then `C = L[2 - v]` reads the previous
             * iteration's L[2] at v = 0) */
            c->walks *= ext;
            c->loops[c->nloops++] = f->var;
            for (int64_t x = lo; x < lo + ext && !(!c->pre && (c->read_first || c->s.all)); x++) {
                c->val[c->nloops - 1] = x;
                tir_visit(v, f->body);
            }
            c->nloops--;
            c->walks /= ext;
            return false;
        }
        if (known) break; /* runs; its variable unnamed, so conditions on it vary */
        /* may run no iteration: after it, its writes are on no path for
         * sure; on some path alike in every iteration unless its bounds
         * vary */
        tir_visit(v, f->min);
        tir_visit(v, f->extent);
        int d = iter_varying(c, f->min) || iter_varying(c, f->extent);
        c->kdep += d;
        elist must = c->s.must;
        tir_visit(v, f->body);
        c->s.must = must;
        c->kdep -= d;
        return false;
    }
    case TIR_KIND_BUFFER_STORE: {
        const tir_buffer_store *st = (const tir_buffer_store *)n;
        if (st->buffer != c->buf) break;
        /* the value and indices are read first */
        tir_visit(v, st->value);
        for (int i = 0; i < st->nidx; i++) tir_visit(v, st->indices[i]);
        on_write(c, st->nidx, st->indices);
        return false;
    }
    case TIR_KIND_BUFFER_LOAD: {
        const tir_buffer_load *l = (const tir_buffer_load *)n;
        for (int i = 0; i < c->ndst; i++)
            if (c->dst[i] == l) return true;
        if (l->buffer == c->buf) on_read(c, l->nidx, l->indices);
        break;
    }
    case TIR_KIND_IF: {
        /* each branch from the state before the If, then merged (walked
         * one after the other, a write in the then branch hid a read
         * first in the else branch: `if k == 0: S = A[0] else: S = S +
         * A[k]`, review of the fifteenth session) */
        const tir_if *i = (const tir_if *)n;
        bool known = true;
        int64_t cv = eval(c, c->val, i->cond, &known);
        if (known) { /* decided in this walk: the branch taken only */
            tir_visit(v, cv ? i->then_s : i->else_s);
            return false;
        }
        tir_visit(v, i->cond);
        int d = iter_varying(c, i->cond);
        c->kdep += d;
        cstate before = c->s;
        tir_visit(v, i->then_s);
        cstate then_s = c->s;
        c->s = before;
        if (i->else_s) tir_visit(v, i->else_s);
        c->kdep -= d;
        el_meet(&c->s.must, &then_s.must);
        el_join(&c->s.may, &then_s.may);
        c->s.all = c->s.all || then_s.all; /* the known issue: conditional or not */
        return false;
    }
    case TIR_KIND_CALL: {
        bool rmw;
        int a = lower_dest_arg((const tir_call *)n, &rmw);
        const tir_buffer_load *l = a >= 0 ? lower_addressed((const tir_call *)n, a) : NULL;
        if (!l || l->buffer != c->buf) break;
        if (rmw) on_read(c, -1, NULL);
        if (c->ndst < 8) c->dst[c->ndst++] = l;
        /* the call's other operands are read before it writes */
        const tir_call *call = (const tir_call *)n;
        for (int i = 0; i < call->nargs; i++)
            if (i != a) tir_visit(v, call->args[i]);
        on_write(c, -1, NULL);
        return false;
    }
    default: break;
    }
    return true;
}

/* The pre-pass, on first need (most buffers are decided without it). */
static void prepass(cwalk *c) {
    cwalk *p = calloc(1, sizeof *p);
    c->wi_ready = true;
    if (!p) {
        c->wi.el.n = 0; /* out of memory: no element is known, every answer stays safe */
        return;
    }
    p->buf = c->buf, p->var = c->var, p->body = c->body, p->pre = true, p->walks = 1;
    p->threads = c->threads;
    tir_visitor v = {.pre = c_pre, .user = p};
    tir_visit(&v, c->body);
    c->wi = p->wi;
    free(p);
}

/* The loop's variable stays unnamed: the walk is of any iteration, so what
 * it decides (a condition of inner loops' variables) is decided alike in
 * every iteration.  (Walking each iteration with k known would name
 * k-indexed elements; but then a write another iteration makes under a
 * condition this one decides false escapes the pre-pass.) */
bool lower_reads_first(const tir_for *f, const tir_buffer *buf, const ir_vec *threads) {
    cwalk *c = calloc(1, sizeof *c);
    if (!c) return true; /* out of memory: the safe answer */
    c->buf = buf, c->var = f->var, c->body = f->body, c->walks = 1, c->threads = threads;
    tir_visitor v = {.pre = c_pre, .user = c};
    tir_visit(&v, f->body);
    bool r = c->read_first;
    free(c);
    return r;
}

static bool threads_pre(tir_visitor *v, const tir_node *n) {
    const tir_for *f = n->kind == TIR_KIND_FOR ? (const tir_for *)n : NULL;
    if (f && f->kind == TIR_FOR_THREAD_BINDING && !ir_vec_has(v->user, f->var)) ir_vec_push(v->user, f->var);
    return n->kind != TIR_KIND_BUFFER_STORE && n->kind != TIR_KIND_EVALUATE; /* statements only */
}

void lower_thread_vars(const void *root, ir_vec *out) {
    tir_visitor v = {.pre = threads_pre, .user = out};
    tir_visit(&v, root);
}
