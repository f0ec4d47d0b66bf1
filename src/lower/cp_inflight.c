/* cp_inflight.c: which cp_async copies may still be in flight at each
 * cp_async_wait of a lowered kernel, for thread_sync and race_check.
 *
 * Both passes model a copy's data as landing at a wait (a shared write with
 * the index).  Landing every copy of the kernel at every wait made
 * a version that was already waited for "land" again where the compute
 * reads it, so a multi-buffered cp.async pipeline needed a second barrier
 * per k tile (the back edge) that it does not need.  Here a forward walk in
 * program order keeps the set of copies issued and not yet covered:
 * cp_async adds its call (uncommitted), cp_async_commit commits the
 * uncommitted ones, a wait records the whole set as landing there and a
 * wait(n) removes every committed group but the newest n (wait_group n:
 * at most n groups pending).  The groups are tracked one by one, oldest
 * first: with a wait(n > 0) covering nothing, as before, a 3- or 4-stage
 * pipeline's copies of every version landed at every wait, so thread_sync
 * put a barrier before each wait (those landings met the compute's reads
 * just before).  Conditions join both branches (uncommitted copies
 * united, groups aligned at the newest and united: a copy is covered only
 * where it is old enough on every path); a serial loop is walked from its
 * head state, joined with each walk's end state, until that no longer
 * grows (a loop may run zero times, so the entry state survives it too;
 * at most MAX_LOOP_WALKS walks, else conservatively; a loop without
 * copies or waits is walked once, and loops nested deeper than
 * MAX_EXACT_DEPTH conservatively).  Thread-binding loops are one
 * execution of their body per thread, walked once.
 */
#include <stdlib.h>

#include "lower_internal.h"

/* Loops with copies or waits nested deeper than this are walked once,
 * with every copy of the loop in flight throughout (no wait removes any):
 * two walks per level would cost 2^depth. */
enum { MAX_EXACT_DEPTH = 4 };

/* Committed groups tracked one by one (oldest first); past this many the
 * two oldest merge into one (its copies then count as younger than some
 * are: covered later, which is sound). */
enum { MAX_GROUPS = 16, MAX_LOOP_WALKS = 8 };

/* The copies in flight: uncommitted, and the committed groups. */
typedef struct flight {
    ir_vec unc;
    ir_vec grp[MAX_GROUPS]; /* grp[0] oldest */
    int ng;
} flight;

typedef struct walker {
    lower_inflight *out;
    flight f;
    int seen;   /* copies, commits and waits met so far */
    int depth;  /* loops with copies or waits around the walk */
    int nokill; /* inside a loop walked conservatively: waits remove nothing */
} walker;

static void add_unique(ir_vec *v, const void *x) {
    for (int i = 0; i < v->n; i++)
        if (v->items[i] == x) return;
    ir_vec_push(v, x);
}

static void add_set(ir_vec *v, const ir_vec *w) {
    for (int i = 0; i < w->n; i++) add_unique(v, w->items[i]);
}

static void copy_set(ir_vec *dst, const ir_vec *src) {
    dst->n = 0;
    add_set(dst, src);
}

static bool subset(const ir_vec *a, const ir_vec *b) {
    for (int i = 0; i < a->n; i++) {
        bool found = false;
        for (int j = 0; j < b->n && !found; j++) found = a->items[i] == b->items[j];
        if (!found) return false;
    }
    return true;
}

static void flight_free(flight *f) {
    ir_vec_free(&f->unc);
    for (int i = 0; i < MAX_GROUPS; i++) ir_vec_free(&f->grp[i]);
    f->ng = 0;
}

static void flight_copy(flight *dst, const flight *src) {
    copy_set(&dst->unc, &src->unc);
    for (int i = 0; i < MAX_GROUPS; i++) dst->grp[i].n = 0;
    for (int i = 0; i < src->ng; i++) copy_set(&dst->grp[i], &src->grp[i]);
    dst->ng = src->ng;
}

/* dst = dst joined with src (either may have happened): uncommitted
 * copies united, groups aligned at the newest and united, so a copy is
 * covered by a wait only where it is old enough on both paths. */
static void flight_join(flight *dst, const flight *src) {
    add_set(&dst->unc, &src->unc);
    int n = dst->ng > src->ng ? dst->ng : src->ng;
    int sd = n - dst->ng, ss = n - src->ng;
    if (sd > 0) { /* shift dst's groups towards the newest end */
        for (int i = dst->ng - 1; i >= 0; i--) copy_set(&dst->grp[i + sd], &dst->grp[i]);
        for (int i = 0; i < sd; i++) dst->grp[i].n = 0;
    }
    for (int i = 0; i < src->ng; i++) add_set(&dst->grp[i + ss], &src->grp[i]);
    dst->ng = n;
}

/* Is a contained in b (no copy of a in a group of b as old or older)? */
static bool flight_within(const flight *a, const flight *b) {
    if (!subset(&a->unc, &b->unc) || a->ng > b->ng) return false;
    for (int i = 0; i < a->ng; i++)
        if (!subset(&a->grp[i], &b->grp[b->ng - a->ng + i])) return false;
    return true;
}

static void commit(flight *f) {
    if (f->ng == MAX_GROUPS) { /* merge the two oldest */
        add_set(&f->grp[1], &f->grp[0]);
        for (int i = 1; i < f->ng; i++) copy_set(&f->grp[i - 1], &f->grp[i]);
        f->ng--;
    }
    copy_set(&f->grp[f->ng++], &f->unc); /* an empty commit is a group too */
    f->unc.n = 0;
}

/* wait_group n: every group but the newest n has completed. */
static void cover(flight *f, int64_t n) {
    if (n >= f->ng) return;
    int drop = f->ng - (int)n;
    for (int i = 0; i < (int)n; i++) copy_set(&f->grp[i], &f->grp[i + drop]);
    for (int i = (int)n; i < f->ng; i++) f->grp[i].n = 0;
    f->ng = (int)n;
}

/* The landing set of wait w (created on first use). */
static ir_vec *at(lower_inflight *f, const tir_call *w) {
    for (int i = 0; i < f->nwaits; i++)
        if (f->waits[i].wait == w) return &f->waits[i].copies;
    if (f->nwaits == f->cap) {
        f->cap = f->cap ? 2 * f->cap : 8;
        f->waits = ir_xrealloc(f->waits, sizeof *f->waits * (size_t)f->cap);
    }
    f->waits[f->nwaits] = (lower_inflight_wait){w, {0}};
    return &f->waits[f->nwaits++].copies;
}

static void walk(walker *w, const tir_stmt *s);

static void walk_call(walker *w, const tir_call *c) {
    if (c->op == TIR_INTRIN_CP_ASYNC || c->op == TIR_INTRIN_CP_ASYNC_COMMIT ||
        c->op == TIR_INTRIN_CP_ASYNC_WAIT)
        w->seen++;
    if (c->op == TIR_INTRIN_CP_ASYNC) {
        add_unique(&w->f.unc, c);
    } else if (c->op == TIR_INTRIN_CP_ASYNC_COMMIT) {
        commit(&w->f);
    } else if (c->op == TIR_INTRIN_CP_ASYNC_WAIT) {
        ir_vec *land = at(w->out, c);
        for (int i = 0; i < w->f.ng; i++) add_set(land, &w->f.grp[i]);
        add_set(land, &w->f.unc);
        int64_t n;
        if (!w->nokill && c->nargs == 1 && tir_expr_const_int(c->args[0], &n) && n >= 0)
            cover(&w->f, n);
    }
}

static void walk_branches(walker *w, const tir_if *i) {
    walker e = *w;
    e.f = (flight){0};
    flight_copy(&e.f, &w->f);
    walk(w, i->then_s);
    e.seen = w->seen;
    if (i->else_s) walk(&e, i->else_s);
    flight_join(&w->f, &e.f);
    w->seen = e.seen > w->seen ? e.seen : w->seen;
    flight_free(&e.f);
}

static bool copy_pre(tir_visitor *v, const tir_node *n) {
    const tir_call *c = tir_as_tir_call(n);
    if (c && c->op == TIR_INTRIN_CP_ASYNC) add_unique(v->user, c);
    return true;
}

/* The loop walked conservatively: every copy of its body in flight
 * throughout, waits inside remove nothing. */
static void walk_loop_once(walker *w, const tir_for *f) {
    tir_visitor v = {.pre = copy_pre, .user = &w->f.unc};
    tir_visit(&v, f->body);
    w->nokill++;
    walk(w, f->body);
    w->nokill--;
}

/* Zero or more iterations: the state at the loop head is the least fixed
 * point of head = entry joined with body(head), reached by walking the
 * body from the growing head state; each walk records landing sets that
 * only grow, so the last walk's (from the fixed point) contain them all.
 * A loop that does not settle within MAX_LOOP_WALKS is walked
 * conservatively. */
static void walk_loop(walker *w, const tir_for *f) {
    if (f->kind == TIR_FOR_THREAD_BINDING) {
        walk(w, f->body);
        return;
    }
    if (w->depth >= MAX_EXACT_DEPTH || w->nokill) {
        walk_loop_once(w, f);
        return;
    }
    flight head = {0};
    flight_copy(&head, &w->f);
    int seen = w->seen;
    bool settled = false;
    w->depth++;
    for (int k = 0; k < MAX_LOOP_WALKS && !settled; k++) {
        flight_copy(&w->f, &head);
        walk(w, f->body);
        settled = w->seen == seen || flight_within(&w->f, &head);
        flight_join(&head, &w->f);
    }
    w->depth--;
    flight_copy(&w->f, &head); /* after the loop: the head state (it may exit there) */
    flight_free(&head);
    if (!settled) walk_loop_once(w, f);
}

static void walk(walker *w, const tir_stmt *s) {
    switch ((tir_kind)s->kind) {
    case TIR_KIND_SEQ: {
        const tir_seq *q = (const tir_seq *)s;
        for (int i = 0; i < q->n; i++) walk(w, q->stmts[i]);
        return;
    }
    case TIR_KIND_ALLOCATE: walk(w, ((const tir_allocate *)s)->body); return;
    case TIR_KIND_FOR: walk_loop(w, (const tir_for *)s); return;
    case TIR_KIND_IF: walk_branches(w, (const tir_if *)s); return;
    case TIR_KIND_EVALUATE: {
        const tir_call *c = tir_as_tir_call(((const tir_evaluate *)s)->value);
        if (c) walk_call(w, c);
        return;
    }
    default: return; /* stores: no copies or waits in them */
    }
}

void lower_inflight_compute(const tir_stmt *body, lower_inflight *out) {
    *out = (lower_inflight){0};
    walker w = {.out = out};
    walk(&w, body);
    flight_free(&w.f);
}

const ir_vec *lower_inflight_at(const lower_inflight *f, const tir_call *wait) {
    for (int i = 0; i < f->nwaits; i++)
        if (f->waits[i].wait == wait) return &f->waits[i].copies;
    return NULL;
}

bool lower_inflight_has(const lower_inflight *f, const tir_call *wait, const tir_call *copy) {
    const ir_vec *v = lower_inflight_at(f, wait);
    for (int i = 0; v && i < v->n; i++)
        if (v->items[i] == copy) return true;
    return false;
}

void lower_inflight_free(lower_inflight *f) {
    for (int i = 0; i < f->nwaits; i++) ir_vec_free(&f->waits[i].copies);
    free(f->waits);
    *f = (lower_inflight){0};
}
