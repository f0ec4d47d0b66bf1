/* global_share.c: which global buffers do the threads of a kernel share?
 *
 * A global buffer that a kernel both writes and reads (an intermediate
 * computed at a block loop, or an output accumulated in place) is shared
 * memory too: when one thread writes an element that another thread reads
 * or writes, the two need a barrier between them (threads of one block)
 * or cannot be ordered at all (different blocks: only the end of a launch
 * orders them).  thread_sync and race_check treat shared buffers so; this
 * pass names the global buffers they must treat so as well, in
 * lower_state.sync_globals, and leaves out those it proves race-free, so
 * that an output accumulated in place (C[i, j] = C[i, j] + ..., after an
 * init C[i, j] = 0 in other loops) costs neither a barrier nor an
 * enumeration of its millions of elements.
 *
 * The proof, per pair of a write and another access of the buffer: every
 * element both touch is touched by one (block, thread) only.  It runs on
 * the multi-dimensional indices (before flatten), so that a ragged
 * tile's columns stay a dimension of their own.  Each index must be
 * affine in loop variables of constant range (lane_id() and a Ramp's lane
 * count as such variables).  In dimension d, a shared element means
 *     sum_x c_x (t1_x - t2_x) + sum (the loop terms of a) - sum (those of b) + k = 0,
 * t1, t2 the two (block, thread) coordinates, one slot per launch axis x
 * with the same coefficient on both sides.  Loop terms of equal
 * coefficient pair up into one slot (i1 - i2).  A slot whose coefficient
 * exceeds, in absolute value, everything the other slots and k can add
 * up to must be zero there; a forced slot is zero in every dimension, so
 * this repeats until nothing changes.  When every launch axis of more
 * than one index is forced, the two coordinates are equal; when a
 * dimension cannot reach zero, the two never meet.  Anything else (a
 * floordiv, a symbolic range, an access through an address, a different
 * coefficient for an axis) leaves the buffer to thread_sync's barriers
 * and race_check's enumeration, which refuses what it cannot enumerate.
 *
 * Limits: a global buffer written but never read in the kernel is not
 * looked at (two threads storing one element of an output is gpu_check's
 * repeated-store rule, or a race left to the simulator).
 */
#include <stdlib.h>
#include <string.h>

#include "lower_internal.h"

enum { GS_MAX_TERMS = 24, GS_MAX_LOOPS = 32, GS_MAX_SLOTS = 64 };

/* The pseudo variable lane_id() stands for (only its address is used). */
static const tir_var gs_lane;

typedef struct gs_loop {
    const tir_var *var;
    int64_t lo, hi; /* lo > hi: no constant range */
    int axis;       /* launch axis 0..5, or -1 */
} gs_loop;

typedef struct gs_acc {
    const tir_buffer *buf;
    bool write, atomic, odd; /* odd: through an address (a copy's span) */
    int nidx;
    const tir_expr *const *idx;
    gs_loop loops[GS_MAX_LOOPS];
    int nloops;
} gs_acc;

typedef struct gs {
    lower_state *st;
    gs_loop stack[GS_MAX_LOOPS];
    int nstack, deep; /* deep: loops past GS_MAX_LOOPS (their variables unknown) */
    int64_t ext[TIR_NLAUNCH_AXES]; /* 0: not used; -1: no constant extent */
    ir_vec accs;                   /* gs_acc* */
} gs;

/* -------------------------------------------------------------- collect */

static void add_acc(gs *g, const tir_buffer *b, bool write, int nidx,
                    const tir_expr *const *idx) {
    if (b->scope != TIR_SCOPE_GLOBAL) return;
    gs_acc *a = ir_xcalloc(1, sizeof *a);
    *a = (gs_acc){.buf = b, .write = write, .nidx = nidx, .idx = idx, .nloops = g->nstack};
    memcpy(a->loops, g->stack, sizeof(gs_loop) * (size_t)g->nstack);
    ir_vec_push(&g->accs, a);
}

/* A global element whose address a call takes: touched, maybe written, by
 * a width the index does not show. */
static void add_addressed(gs *g, const tir_call *call) {
    for (int i = 0; i < call->nargs; i++) {
        const tir_buffer_load *l = lower_addressed(call, i);
        int n0 = g->accs.n;
        if (l) add_acc(g, l->buffer, true, l->nidx, l->indices);
        if (g->accs.n > n0) ((gs_acc *)g->accs.items[n0])->odd = true;
    }
}

static bool coll_pre(tir_visitor *v, const tir_node *n) {
    gs *g = v->user;
    switch ((tir_kind)n->kind) {
    case TIR_KIND_FOR: {
        const tir_for *f = (const tir_for *)n;
        if (g->nstack == GS_MAX_LOOPS) {
            g->deep++;
            return true;
        }
        int64_t min, ext;
        /* ranges within 2^40, so that a slot's difference of two fits */
        bool c = tir_expr_const_int(f->min, &min) && tir_expr_const_int(f->extent, &ext) &&
                 ext > 0 && ext < (INT64_C(1) << 40) && min > -(INT64_C(1) << 40) &&
                 min < (INT64_C(1) << 40);
        int axis = f->kind == TIR_FOR_THREAD_BINDING ? tir_launch_axis(f->thread_tag) : -1;
        if (axis >= 0) g->ext[axis] = !c ? -1 : g->ext[axis] > ext ? g->ext[axis] : ext;
        g->stack[g->nstack++] = (gs_loop){f->var, c ? min : 1, c ? min + ext - 1 : 0, axis};
        return true;
    }
    case TIR_KIND_BUFFER_LOAD: {
        const tir_buffer_load *l = (const tir_buffer_load *)n;
        add_acc(g, l->buffer, false, l->nidx, l->indices);
        return true;
    }
    case TIR_KIND_BUFFER_STORE: {
        const tir_buffer_store *s = (const tir_buffer_store *)n;
        add_acc(g, s->buffer, true, s->nidx, s->indices);
        return true;
    }
    case TIR_KIND_CALL: {
        const tir_call *call = (const tir_call *)n;
        if (call->op == TIR_INTRIN_ATOMIC_ADD && lower_addressed(call, 0)) {
            const tir_buffer_load *l = lower_addressed(call, 0);
            int n0 = g->accs.n;
            add_acc(g, l->buffer, true, l->nidx, l->indices);
            if (g->accs.n > n0) ((gs_acc *)g->accs.items[n0])->atomic = true;
            tir_visit(v, call->args[1]);
            return false;
        }
        if (call->op == TIR_INTRIN_ADDRESS_OF) return true; /* a plain load below */
        int n0 = g->accs.n;
        add_addressed(g, call);
        if (call->op == TIR_INTRIN_CP_ASYNC) { /* its source spans bytes */
            tir_visit(v, call->args[1]);
            for (int i = n0; i < g->accs.n; i++) ((gs_acc *)g->accs.items[i])->odd = true;
            for (int i = 0; i < call->nargs; i++)
                if (i != 1) tir_visit(v, call->args[i]);
            return false;
        }
        return true;
    }
    default: return true;
    }
}

static void coll_post(tir_visitor *v, const tir_node *n) {
    gs *g = v->user;
    if (n->kind != TIR_KIND_FOR) return;
    if (g->deep) g->deep--;
    else g->nstack--;
}

/* --------------------------------------------------------------- affine */

typedef struct term {
    const void *var;
    int64_t coef, lo, hi;
    int axis;
} term;

typedef struct lin {
    term t[GS_MAX_TERMS];
    int n;
    int64_t k;
} lin;

static const gs_loop *loop_of(const gs_acc *a, const tir_var *v) {
    for (int i = a->nloops - 1; i >= 0; i--)
        if (a->loops[i].var == v) return &a->loops[i];
    return NULL;
}

static bool add_term(lin *l, const void *var, int64_t coef, int64_t lo, int64_t hi, int axis) {
    for (int i = 0; i < l->n; i++)
        if (l->t[i].var == var) return !__builtin_add_overflow(l->t[i].coef, coef, &l->t[i].coef);
    if (l->n == GS_MAX_TERMS) return false;
    l->t[l->n++] = (term){var, coef, lo, hi, axis};
    return true;
}

/* l += scale * e; false when e is not affine in variables of constant
 * range, or a product overflows. */
static bool lin_add(const gs *g, const gs_acc *a, const tir_expr *e, int64_t scale, lin *l) {
    int64_t c;
    switch ((tir_kind)e->kind) {
    case TIR_KIND_INT_IMM:
        return !__builtin_mul_overflow(((const tir_int_imm *)e)->value, scale, &c) &&
               !__builtin_add_overflow(l->k, c, &l->k);
    case TIR_KIND_VAR: {
        const gs_loop *lp = loop_of(a, (const tir_var *)e);
        if (!lp || lp->lo > lp->hi) return false;
        return add_term(l, e, scale, lp->lo, lp->hi, lp->axis);
    }
    case TIR_KIND_CAST: {
        const tir_expr *v = ((const tir_cast *)e)->value;
        return tir_dtype_is_int(v->dtype) && tir_dtype_is_int(e->dtype) &&
               e->dtype.bits >= v->dtype.bits && lin_add(g, a, v, scale, l);
    }
    case TIR_KIND_ADD: case TIR_KIND_SUB: {
        const tir_binop *b = (const tir_binop *)e;
        return lin_add(g, a, b->a, scale, l) &&
               lin_add(g, a, b->b, e->kind == TIR_KIND_SUB ? -scale : scale, l);
    }
    case TIR_KIND_MUL: {
        const tir_binop *b = (const tir_binop *)e;
        if (tir_expr_const_int(b->b, &c))
            return !__builtin_mul_overflow(c, scale, &c) && lin_add(g, a, b->a, c, l);
        if (tir_expr_const_int(b->a, &c))
            return !__builtin_mul_overflow(c, scale, &c) && lin_add(g, a, b->b, c, l);
        return false;
    }
    case TIR_KIND_BROADCAST: return lin_add(g, a, ((const tir_broadcast *)e)->value, scale, l);
    case TIR_KIND_RAMP: { /* start + lane * stride, the lane a variable of its own */
        const tir_ramp *r = (const tir_ramp *)e;
        return tir_expr_const_int(r->stride, &c) && !__builtin_mul_overflow(c, scale, &c) &&
               lin_add(g, a, r->start, scale, l) && add_term(l, r, c, 0, r->lanes - 1, -1);
    }
    case TIR_KIND_CALL:
        if (((const tir_call *)e)->op != TIR_INTRIN_LANE_ID) return false;
        return add_term(l, &gs_lane, scale, 0, 31, tir_launch_axis("threadIdx.x"));
    default: return false;
    }
}

/* ---------------------------------------------------------------- proof */

/* A slot of one dimension's equation: coef * d with d in [dlo, dhi];
 * key names it across dimensions (a launch axis, or a pair of loop
 * variables), NULL for a term that is never forced. */
typedef struct slot {
    int64_t coef, dlo, dhi;
    int axis; /* the launch axis (key2 NULL), or -1 */
    const void *key1, *key2;
} slot;

typedef struct forced {
    bool axis[TIR_NLAUNCH_AXES];
    const void *k1[GS_MAX_SLOTS], *k2[GS_MAX_SLOTS];
    int n;
} forced;

static bool is_forced(const forced *f, const slot *s) {
    if (s->axis >= 0) return f->axis[s->axis];
    for (int i = 0; s->key1 && i < f->n; i++)
        if (f->k1[i] == s->key1 && f->k2[i] == s->key2) return true;
    return false;
}

static void force(forced *f, const slot *s) {
    if (s->axis >= 0) f->axis[s->axis] = true;
    else if (f->n < GS_MAX_SLOTS) f->k1[f->n] = s->key1, f->k2[f->n++] = s->key2;
}

/* Sums of slots in 128 bits: 64 products of two int64 cannot overflow. */
typedef __int128 wide;

/* c * [lo, hi] as an interval. */
static void scaled(int64_t c, int64_t lo, int64_t hi, wide *rlo, wide *rhi) {
    wide x = (wide)c * lo, y = (wide)c * hi;
    *rlo = x < y ? x : y;
    *rhi = x < y ? y : x;
}

static bool push_slot(slot *s, int *n, slot v) {
    if (*n == GS_MAX_SLOTS) return false;
    s[(*n)++] = v;
    return true;
}

/* The slots of dimension la = lb (a's terms minus b's); false when there
 * are too many. */
static bool slots_of(const lin *la, const lin *lb, bool *used_b, slot *s, int *n) {
    *n = 0;
    memset(used_b, 0, sizeof(bool) * GS_MAX_TERMS);
    for (int i = 0; i < la->n; i++) {
        const term *x = &la->t[i];
        int j = 0; /* the partner: the same axis, or a loop term of equal coefficient */
        for (; j < lb->n; j++) {
            const term *y = &lb->t[j];
            if (used_b[j] || y->coef != x->coef) continue;
            if (x->axis >= 0 ? y->axis == x->axis : y->axis < 0) break;
        }
        if (j < lb->n) {
            const term *y = &lb->t[j];
            used_b[j] = true;
            slot v = {x->coef, x->lo - y->hi, x->hi - y->lo, x->axis, x->var, y->var};
            if (x->axis >= 0) v.key1 = v.key2 = NULL;
            if (!push_slot(s, n, v)) return false;
        } else if (!push_slot(s, n, (slot){x->coef, x->lo, x->hi, -1, NULL, NULL})) {
            return false;
        }
    }
    for (int j = 0; j < lb->n; j++) {
        const term *y = &lb->t[j];
        if (!used_b[j] && !push_slot(s, n, (slot){-y->coef, y->lo, y->hi, -1, NULL, NULL}))
            return false;
    }
    return true;
}

/* One pass over a dimension: forces what it can; *never when the
 * dimension cannot be zero. */
static bool force_dim(const slot *s, int n, wide k, forced *f, bool *never) {
    bool changed = false, again = true;
    while (again) {
        again = false;
        wide lo = k, hi = k; /* the sum of every unforced slot */
        for (int i = 0; i < n; i++) {
            if (is_forced(f, &s[i]) && (s[i].key1 || s[i].axis >= 0)) {
                if (s[i].dlo > 0 || s[i].dhi < 0) *never = true; /* zero out of its range */
                continue;
            }
            wide x, y;
            scaled(s[i].coef, s[i].dlo, s[i].dhi, &x, &y);
            lo += x, hi += y;
        }
        if (lo > 0 || hi < 0) *never = true;
        if (*never) return changed;
        for (int i = 0; i < n && !again; i++) {
            if ((!s[i].key1 && s[i].axis < 0) || is_forced(f, &s[i])) continue;
            wide x, y, c = s[i].coef < 0 ? -(wide)s[i].coef : s[i].coef;
            scaled(s[i].coef, s[i].dlo, s[i].dhi, &x, &y);
            wide rlo = lo - x, rhi = hi - y; /* the others */
            if (c > 0 && rlo > -c && rhi < c) {
                force(f, &s[i]);
                changed = again = true;
            }
        }
    }
    return changed;
}

/* Does every element that a and b both touch have one (block, thread)? */
static bool same_thread(const gs *g, const gs_acc *a, const gs_acc *b) {
    if (a->odd || b->odd || a->nidx != b->nidx) return false;
    lin la[8], lb[8];
    if (a->nidx > 8) return false;
    for (int d = 0; d < a->nidx; d++) {
        la[d] = (lin){.n = 0}, lb[d] = (lin){.n = 0};
        if (!lin_add(g, a, a->idx[d], 1, &la[d]) || !lin_add(g, b, b->idx[d], 1, &lb[d]))
            return false;
    }
    forced f;
    memset(&f, 0, sizeof f);
    for (int x = 0; x < TIR_NLAUNCH_AXES; x++) f.axis[x] = g->ext[x] == 0 || g->ext[x] == 1;
    bool changed = true, never = false;
    while (changed && !never) {
        changed = false;
        for (int d = 0; d < a->nidx && !never; d++) {
            slot s[GS_MAX_SLOTS];
            bool used[GS_MAX_TERMS];
            int n;
            if (!slots_of(&la[d], &lb[d], used, s, &n)) return false;
            changed |= force_dim(s, n, (wide)la[d].k - lb[d].k, &f, &never);
        }
    }
    if (never) return true;
    for (int x = 0; x < TIR_NLAUNCH_AXES; x++)
        if (!f.axis[x]) return false;
    return true;
}

/* ----------------------------------------------------------------- pass */

static bool listed(const lower_state *st, const tir_buffer *b) {
    for (int i = 0; i < st->nsync_globals; i++)
        if (st->sync_globals[i] == b) return true;
    return false;
}

/* Is b written and read (or touched through an address) in the kernel,
 * with some write not proven to meet the other accesses in one thread? */
static bool needs_sync(const gs *g, const tir_buffer *b) {
    bool w = false, r = false;
    for (int i = 0; i < g->accs.n; i++) {
        const gs_acc *a = g->accs.items[i];
        if (a->buf != b) continue;
        w |= a->write;
        r |= !a->write || a->odd;
    }
    if (!w || !r) return false;
    for (int i = 0; i < g->accs.n; i++) {
        const gs_acc *a = g->accs.items[i];
        if (a->buf != b || !a->write) continue;
        for (int j = 0; j < g->accs.n; j++) {
            const gs_acc *o = g->accs.items[j];
            if (o->buf != b || (a->atomic && o->atomic)) continue;
            if (!same_thread(g, a, o)) return true;
        }
    }
    return false;
}

tir_status lower_global_share(lower_state *st, const tir_prim_func *in,
                              const tir_prim_func **out) {
    gs g = {.st = st};
    tir_visitor v = {.pre = coll_pre, .post = coll_post, .user = &g};
    tir_visit(&v, in->body);
    int tx = tir_launch_axis("threadIdx.x");
    if (lower_uses_lane(in->body) && g.ext[tx] >= 0 && g.ext[tx] < 32) g.ext[tx] = 32;
    ir_vec list = {0};
    for (int i = 0; i < g.accs.n; i++) {
        const tir_buffer *b = ((const gs_acc *)g.accs.items[i])->buf;
        bool seen = false;
        for (int j = 0; j < list.n && !seen; j++) seen = list.items[j] == b;
        if (!seen && !listed(st, b) && needs_sync(&g, b)) ir_vec_push(&list, (void *)b);
    }
    st->nsync_globals = list.n;
    st->sync_globals = IR_NEWN(st->ctx, const tir_buffer *, list.n ? list.n : 1);
    for (int i = 0; i < list.n; i++) st->sync_globals[i] = list.items[i];
    for (int i = 0; i < g.accs.n; i++) free((void *)g.accs.items[i]);
    ir_vec_free(&g.accs);
    ir_vec_free(&list);
    *out = in;
    return TIR_OK;
}

bool lower_sync_global(const lower_state *st, const tir_buffer *b) {
    return b->scope == TIR_SCOPE_GLOBAL && listed(st, b);
}
