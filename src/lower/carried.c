/* carried.c: whether one iteration of a loop may read, in a buffer, a
 * value an earlier iteration wrote (lower_reads_first).  plan_alloc does
 * not move such a buffer's Allocate into the loop (it would start
 * unwritten in every iteration) and sw_pipeline does not version it
 * (iteration k would read the copy of iteration k - V).
 *
 * The body is walked in execution order.  Writes to constant elements are
 * tracked one by one, and a read of a constant element that no earlier
 * write of this iteration covers answers yes; a write under an If whose
 * condition depends on the loop's variable (or in a loop whose bounds do)
 * may not happen in this iteration, so a constant element it writes is not
 * covered (`if k == 0: S[0] = 0` then `S[0] = S[0] + A[k]`).  A write under
 * another If covers: an element it skips is skipped in every iteration, so
 * reading it would read an element never written (the interpreter refuses
 * that).  A write whose elements we cannot name (an index that is not
 * constant, a fragment tile, ldmatrix, cp.async) covers everything after
 * it, conditional or not, and a read we cannot name is covered by any
 * earlier write: those are the tiles the schedule language writes whole
 * before reading them, and where they are not (some elements written,
 * others read that only an earlier iteration wrote), the answer is wrong
 * (docs/reliability.md lists it as known).  A store's value is read
 * before the store writes; an If's two branches start from the state
 * before it and merge; an mma's accumulator or an atomic add is read
 * first.
 */
#include <string.h>

#include "lower_internal.h"

enum { MAXW = 16, MAXD = 4 };

typedef struct cstate {
    bool all;             /* a write we cannot name the elements of */
    int nw;               /* constant elements written */
    int nd[MAXW];         /* their index counts */
    int64_t w[MAXW][MAXD];
} cstate;

typedef struct cwalk {
    const tir_buffer *buf;
    const tir_var *var; /* the loop's */
    int kdep;           /* Ifs and loops around that depend on var */
    cstate s;
    bool read_first;
    const tir_buffer_load *dst[8]; /* calls' destinations: written, not read */
    int ndst;
} cwalk;

/* The constant index of an access, or false. */
static bool const_index(int n, const tir_expr *const *idx, int64_t *out) {
    if (n > MAXD) return false;
    for (int i = 0; i < n; i++)
        if (!tir_expr_const_int(idx[i], &out[i])) return false;
    return true;
}

static bool covered(const cstate *s, int n, const int64_t *e) {
    for (int i = 0; i < s->nw; i++)
        if (s->nd[i] == n && !memcmp(s->w[i], e, sizeof(int64_t) * (size_t)n)) return true;
    return false;
}

static void add(cstate *s, int n, const int64_t *e) {
    if (covered(s, n, e)) return;
    if (s->nw == MAXW) {
        s->all = true; /* too many to follow: as a tile */
        return;
    }
    s->nd[s->nw] = n;
    memcpy(s->w[s->nw++], e, sizeof(int64_t) * (size_t)n);
}

static void on_read(cwalk *c, int n, const tir_expr *const *idx) {
    int64_t e[MAXD];
    if (c->s.all) return;
    if (n >= 0 && const_index(n, idx, e) ? !covered(&c->s, n, e) : c->s.nw == 0)
        c->read_first = true;
}

static void on_write(cwalk *c, int n, const tir_expr *const *idx) {
    int64_t e[MAXD];
    if (n < 0 || !const_index(n, idx, e)) c->s.all = true;
    else if (c->kdep == 0) add(&c->s, n, e);
}

static int varies(const cwalk *c, const tir_node *n) {
    if (n->kind == TIR_KIND_IF) return tir_uses_var(((const tir_if *)n)->cond, c->var) ? 1 : 0;
    const tir_for *f = (const tir_for *)n;
    return tir_uses_var(f->min, c->var) || tir_uses_var(f->extent, c->var) ? 1 : 0;
}

static bool c_pre(tir_visitor *v, const tir_node *n);

static void c_post(tir_visitor *v, const tir_node *n) {
    cwalk *c = v->user;
    if (n->kind == TIR_KIND_FOR) c->kdep -= varies(c, n);
}

static bool c_pre(tir_visitor *v, const tir_node *n) {
    cwalk *c = v->user;
    if (c->read_first || c->s.all) return false;
    switch ((tir_kind)n->kind) {
    case TIR_KIND_FOR: c->kdep += varies(c, n); break;
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
        /* each branch from the state before the If, then both merged:
         * walked one after the other, a write in the then branch hid a
         * read first in the else branch (`if k == 0: S = A[0] else:
         * S = S + A[k]`: plan_alloc moved S into the loop) */
        const tir_if *i = (const tir_if *)n;
        tir_visit(v, i->cond);
        int d = varies(c, n);
        c->kdep += d;
        cstate before = c->s;
        tir_visit(v, i->then_s);
        cstate after_then = c->s;
        c->s = before;
        if (i->else_s) tir_visit(v, i->else_s);
        c->kdep -= d;
        c->s.all = c->s.all || after_then.all;
        for (int j = 0; j < after_then.nw; j++) add(&c->s, after_then.nd[j], after_then.w[j]);
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

bool lower_reads_first(const void *body, const tir_buffer *buf, const tir_var *var) {
    cwalk c = {.buf = buf, .var = var};
    tir_visitor v = {.pre = c_pre, .post = c_post, .user = &c};
    tir_visit(&v, body);
    return c.read_first;
}
