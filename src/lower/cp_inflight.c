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
 * wait(0) removes the committed ones (wait_group 0 covers every committed
 * group; a wait(n > 0) covers some, which ones is not tracked: they stay,
 * so they may land again later, which is sound).  Conditions take the
 * union of both branches; a serial loop is walked twice, the second time
 * from the union of its entry set and what its body leaves (a loop may run
 * zero times, so the entry set survives it too): the transfer function is
 * of the form "keep or kill the set, then add", so two walks reach the
 * fixed point (a loop without copies or waits is walked once, and loops
 * nested deeper than MAX_EXACT_DEPTH conservatively).  Thread-binding
 * loops are one execution of their body per thread, walked once.
 */
#include <stdlib.h>

#include "lower_internal.h"

/* Loops with copies or waits nested deeper than this are walked once,
 * with every copy of the loop in flight throughout (no wait removes any):
 * two walks per level would cost 2^depth. */
enum { MAX_EXACT_DEPTH = 4 };

typedef struct walker {
    lower_inflight *out;
    ir_vec unc, com; /* the uncommitted and committed copies in flight */
    int seen;        /* copies, commits and waits met so far */
    int depth;       /* loops with copies or waits around the walk */
    int nokill;      /* inside a loop walked once: waits remove nothing */
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
        add_unique(&w->unc, c);
    } else if (c->op == TIR_INTRIN_CP_ASYNC_COMMIT) {
        add_set(&w->com, &w->unc);
        w->unc.n = 0;
    } else if (c->op == TIR_INTRIN_CP_ASYNC_WAIT) {
        ir_vec *land = at(w->out, c);
        add_set(land, &w->com);
        add_set(land, &w->unc);
        int64_t n;
        if (!w->nokill && c->nargs == 1 && tir_expr_const_int(c->args[0], &n) && n == 0)
            w->com.n = 0;
    }
}

/* Runs `s` from the state in w, then unites the state with `keep`. */
static void walk_join(walker *w, const tir_stmt *s, const walker *keep) {
    if (s) walk(w, s);
    add_set(&w->unc, &keep->unc);
    add_set(&w->com, &keep->com);
}

static void walk_branches(walker *w, const tir_if *i) {
    walker e = *w;
    e.unc = (ir_vec){0};
    e.com = (ir_vec){0};
    copy_set(&e.unc, &w->unc);
    copy_set(&e.com, &w->com);
    walk(w, i->then_s);
    e.seen = w->seen;
    walk_join(&e, i->else_s, w); /* e = else-branch state + then-branch state */
    w->seen = e.seen;
    copy_set(&w->unc, &e.unc);
    copy_set(&w->com, &e.com);
    ir_vec_free(&e.unc);
    ir_vec_free(&e.com);
}

static bool copy_pre(tir_visitor *v, const tir_node *n) {
    const tir_call *c = tir_as_tir_call(n);
    if (c && c->op == TIR_INTRIN_CP_ASYNC) add_unique(v->user, c);
    return true;
}

static void walk_loop(walker *w, const tir_for *f) {
    if (f->kind == TIR_FOR_THREAD_BINDING) {
        walk(w, f->body);
        return;
    }
    if (w->depth >= MAX_EXACT_DEPTH || w->nokill) {
        tir_visitor v = {.pre = copy_pre, .user = &w->unc};
        tir_visit(&v, f->body);
        w->nokill++;
        walk(w, f->body);
        w->nokill--;
        return;
    }
    walker entry = {0};
    copy_set(&entry.unc, &w->unc);
    copy_set(&entry.com, &w->com);
    int seen = w->seen;
    w->depth++;
    walk(w, f->body);
    walk_join(w, NULL, &entry); /* zero or more iterations */
    if (w->seen != seen) {      /* not a no-op: the second iteration */
        walk(w, f->body);
        walk_join(w, NULL, &entry);
    }
    w->depth--;
    ir_vec_free(&entry.unc);
    ir_vec_free(&entry.com);
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
    walker w = {out, {0}, {0}, 0, 0, 0};
    walk(&w, body);
    ir_vec_free(&w.unc);
    ir_vec_free(&w.com);
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
