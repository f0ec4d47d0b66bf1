/* global_share.c: which global buffers do the threads of a kernel share?
 *
 * A global buffer that a kernel writes is shared memory too: when one
 * thread writes an element that another thread reads or writes, the two
 * need a barrier between them (threads of one block) or cannot be ordered
 * at all (different blocks: only the end of a launch orders them), and
 * two stores of one element by two threads leave either value where the
 * function means the last.  thread_sync and race_check treat shared
 * buffers so; this pass names the global buffers they must treat so as
 * well, in lower_state.sync_globals, and leaves out those it proves
 * race-free, so that an output (or one accumulated in place, C[i, j] =
 * C[i, j] + ... after an init in other loops) costs neither a barrier nor
 * an enumeration of its millions of elements.
 *
 * The proof, per pair of a write and another access of the buffer (the
 * write itself included): every element both touch is touched by one
 * (block, thread) only.  It runs on the multi-dimensional indices (before
 * flatten), so that a ragged tile's columns stay a dimension of their own;
 * two dimensions indexed (e // c, e % c), a fused loop's bindings, count
 * as one, e.  Each index must be affine in the digits of loop variables
 * (of a constant range, or of any value: a symbolic grid or a dynamic M,
 * whose slot is forced only while every other slot is bounded): a
 * variable used as v // d, v % m or v // d % m splits at
 * those boundaries (each dividing the next) into digits, each a variable
 * of its own (a fused thread index, lane_id() % 4, a swizzled block
 * index); lane_id() is threadIdx.x's variable and a Ramp's lane one more.
 * In dimension d, a shared element means
 *     sum c (x1 - x2) + (a's other terms) - (b's other terms) + k = 0
 * with one slot c (x1 - x2) per digit of a launch axis that both sides
 * have with one coefficient, and per pair of loop digits of equal
 * coefficient.  A slot whose coefficient exceeds, in absolute value,
 * everything the other slots and k can add up to must be zero; a forced
 * slot is zero in every dimension, so this repeats until nothing changes.
 * When every digit of every launch axis of more than one index is forced,
 * the two (block, thread)s are equal; when a dimension cannot reach zero,
 * the two never meet; more than IR_FORCED_MAX forced pairs give up.
 * The digits, the affine forms and the forcing step are ir/digits.c's,
 * shared with the schedule's spatial_writes.c; what a variable is and
 * which terms pair into a slot are this pass's.  Anything else (a
 * division of a sum, an access through an address, different splits or
 * coefficients of an axis on the two sides) leaves the buffer to thread_sync's
 * barriers and race_check's enumeration, which refuses what it cannot
 * enumerate.  The 19 benchmark kernels' outputs, the split-K workspaces
 * and sums, and Steps 1-3's C accumulated in place are all proved.
 */
#include <stdlib.h>
#include <string.h>

#include "ir/digits_internal.h"
#include "lower_internal.h"

/* GS_MAX_TERMS: variables of one pair of accesses, and terms of one
 * index's affine form; GS_MAX_SLOTS: slots of one dimension's equation. */
enum { GS_MAX_TERMS = 24, GS_MAX_LOOPS = 32, GS_MAX_SLOTS = 64 };

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
        int64_t min, ext;
        /* ranges within 2^40, so that a slot's difference of two fits */
        bool c = tir_expr_const_int(f->min, &min) && tir_expr_const_int(f->extent, &ext) &&
                 ext > 0 && ext < (INT64_C(1) << 40) && min > -(INT64_C(1) << 40) &&
                 min < (INT64_C(1) << 40);
        int axis = f->kind == TIR_FOR_THREAD_BINDING ? tir_launch_axis(f->thread_tag) : -1;
        /* every launch loop counts, a deep one too (an axis left at 0 is
           absent, its threads one); no constant extent (-1) stays so */
        if (axis >= 0)
            g->ext[axis] = !c || g->ext[axis] < 0 ? -1 : g->ext[axis] > ext ? g->ext[axis] : ext;
        if (g->nstack == GS_MAX_LOOPS) {
            g->deep++;
            return true;
        }
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

/* --------------------------------------------------------------- digits */

/* A variable's digits (ir/digits.c): a loop variable, or a launch axis
 * with one entry for all its variables, so that both sides split it
 * alike (a fused thread index `f // 4 % 8`, lane_id() % 4, a swizzled
 * block index).  dv's range is the loop's (lo > hi: no constant range, any
 * value), its tag the launch axis, so that a term knows it. */
typedef struct dvar {
    const void *var; /* a loop variable (axis < 0), or NULL */
    int axis;
    ir_digit_var dv;
} dvar;

typedef struct digits {
    dvar d[GS_MAX_TERMS];
    int n;
    bool bad; /* too many, a split of a variable not starting at 0, ... */
} digits;

/* The innermost enclosing loop of v in a's context, or NULL. */
static const gs_loop *loop_of(const gs_acc *a, const tir_var *v) {
    for (int i = a->nloops - 1; i >= 0; i--)
        if (a->loops[i].var == v) return &a->loops[i];
    return NULL;
}

/* The entry of e (a Var or lane_id()) in a's context, made if new. */
static dvar *entry(digits *dg, const gs_acc *a, const tir_expr *e) {
    const void *var = e;
    int64_t lo = 0, hi = 31;
    int axis = tir_launch_axis("threadIdx.x");
    if (e->kind == TIR_KIND_VAR) { /* lo > hi: a loop of no constant range, any value */
        const gs_loop *lp = loop_of(a, (const tir_var *)e);
        if (!lp) return NULL;
        lo = lp->lo, hi = lp->hi, axis = lp->axis;
    } else if (!(e->kind == TIR_KIND_CALL && ((const tir_call *)e)->op == TIR_INTRIN_LANE_ID)) {
        return NULL;
    }
    if (axis >= 0) var = NULL;
    for (int i = 0; i < dg->n; i++) {
        dvar *d = &dg->d[i];
        if (d->var == var && d->axis == axis) {
            if (d->dv.lo != lo || d->dv.hi != hi) dg->bad = true; /* two ranges of one axis */
            return d;
        }
    }
    if (dg->n == GS_MAX_TERMS) return NULL;
    dvar *d = &dg->d[dg->n++];
    *d = (dvar){.var = var, .axis = axis, .dv = ir_digit_var_make(lo, hi, lo > hi, axis)};
    return d;
}

static void add_boundary(digits *dg, dvar *d, int64_t v) {
    if (!d || !ir_digit_split(&d->dv, v)) dg->bad = true;
}

/* The variables of this pass: loop variables and lane_id(). */
static bool is_atom(const tir_expr *e) {
    return e->kind == TIR_KIND_VAR ||
           (e->kind == TIR_KIND_CALL && ((const tir_call *)e)->op == TIR_INTRIN_LANE_ID);
}

/* The boundaries the divisions of variables in an index ask for: v // c,
 * v % c and (v // m) % c of an atom v (spatial_writes.c takes nested
 * divisions more generally; this pass never did). */
typedef struct split_note {
    digits *dg;
    const gs_acc *a;
} split_note;

static bool note_pre(tir_visitor *v, const tir_node *n) {
    split_note *sn = v->user;
    const tir_expr *e = (const tir_expr *)n;
    int64_t c, m;
    if (n->kind == TIR_KIND_FLOORDIV || n->kind == TIR_KIND_FLOORMOD) {
        const tir_binop *bo = (const tir_binop *)n;
        if (!ir_const_int(bo->b, &c)) return true;
        if (is_atom(bo->a)) {
            add_boundary(sn->dg, entry(sn->dg, sn->a, bo->a), c);
            return false;
        }
        const tir_binop *in = bo->a->kind == TIR_KIND_FLOORDIV ? (const tir_binop *)bo->a : NULL;
        if (n->kind == TIR_KIND_FLOORMOD && in && is_atom(in->a) &&
            ir_const_int(in->b, &m) && !__builtin_mul_overflow(m, c, &c)) {
            dvar *d = entry(sn->dg, sn->a, in->a);
            add_boundary(sn->dg, d, m);
            add_boundary(sn->dg, d, c);
            return false;
        }
        return true;
    }
    if (is_atom(e)) entry(sn->dg, sn->a, e);
    return true;
}

static void note_splits(digits *dg, const gs_acc *a, const tir_expr *e) {
    split_note sn = {dg, a};
    tir_visitor v = {.pre = note_pre, .user = &sn};
    tir_visit(&v, e);
}

/* Every boundary divides the next. */
static bool digits_ok(const digits *dg) {
    if (dg->bad) return false;
    for (int i = 0; i < dg->n; i++)
        if (!ir_digits_nested(&dg->d[i].dv)) return false;
    return true;
}

/* --------------------------------------------------------------- affine */

/* l += scale * e, the atoms and their divisions of one side (a's). */
typedef struct lin_ctx {
    digits *dg;
    const gs_acc *a;
} lin_ctx;

static bool lin_add(digits *dg, const gs_acc *a, const tir_expr *e, int64_t scale, ir_lin *l);

/* ir_lin_add's leaf: an atom, its v // c, v % c or (v // m) % c, a
 * Broadcast's value, or a Ramp (start + lane * stride, the lane a
 * variable of its own). */
static bool lin_leaf(void *user, const tir_expr *e, int64_t scale, ir_lin *l) {
    const lin_ctx *lc = user;
    digits *dg = lc->dg;
    const gs_acc *a = lc->a;
    int64_t c, m;
    switch ((tir_kind)e->kind) {
    case TIR_KIND_VAR: case TIR_KIND_CALL: {
        const dvar *d = is_atom(e) ? entry(dg, a, e) : NULL;
        return d && ir_lin_add_digits(l, &d->dv, 0, d->dv.nb, scale);
    }
    case TIR_KIND_FLOORDIV: case TIR_KIND_FLOORMOD: {
        const tir_binop *b = (const tir_binop *)e;
        if (!ir_const_int(b->b, &c)) return false;
        const dvar *d = is_atom(b->a) ? entry(dg, a, b->a) : NULL;
        int j = d ? ir_digit_at(&d->dv, c) : -1;
        if (j >= 0) /* v / b[j]: digits j..; v % b[j]: digits ..j */
            return e->kind == TIR_KIND_FLOORDIV ? ir_lin_add_digits(l, &d->dv, j, d->dv.nb, scale)
                                                 : ir_lin_add_digits(l, &d->dv, 0, j, scale);
        const tir_binop *in = b->a->kind == TIR_KIND_FLOORDIV ? (const tir_binop *)b->a : NULL;
        if (e->kind != TIR_KIND_FLOORMOD || !in || !is_atom(in->a) ||
            !ir_const_int(in->b, &m) || __builtin_mul_overflow(m, c, &c))
            return false;
        d = entry(dg, a, in->a);
        int lo = d ? ir_digit_at(&d->dv, m) : -1, hi = d ? ir_digit_at(&d->dv, c) : -1;
        return lo >= 0 && hi > lo && ir_lin_add_digits(l, &d->dv, lo, hi, scale);
    }
    case TIR_KIND_BROADCAST: return lin_add(dg, a, ((const tir_broadcast *)e)->value, scale, l);
    case TIR_KIND_RAMP: { /* start + lane * stride, the lane a variable of its own */
        const tir_ramp *r = (const tir_ramp *)e;
        return ir_const_int(r->stride, &c) && !__builtin_mul_overflow(c, scale, &c) &&
               lin_add(dg, a, r->start, scale, l) &&
               ir_lin_add_term(l, r, c, 0, r->lanes - 1, false, -1);
    }
    default: return false;
    }
}

/* l += scale * e; false when e is not affine in the digits of variables
 * of constant range, or a product overflows. */
static bool lin_add(digits *dg, const gs_acc *a, const tir_expr *e, int64_t scale, ir_lin *l) {
    lin_ctx lc = {dg, a};
    return ir_lin_add(e, scale, l, lin_leaf, &lc);
}

/* ---------------------------------------------------------------- proof */

/* A slot (ir_slot) here: (key1, key2) is one digit of a launch axis
 * (key1 == key2), or a pair of loop digits of equal coefficient.  A full
 * table of forced slots (ir_forced.full) gives the proof up. */

static bool push_slot(ir_slot *s, int *n, ir_slot v) {
    if (*n == GS_MAX_SLOTS) return false;
    s[(*n)++] = v;
    return true;
}

/* The slots of dimension la = lb (a's terms minus b's): a launch axis's
 * digit pairs with the same digit, a loop digit with any loop digit of
 * equal coefficient; false when there are too many. */
static bool slots_of(const ir_lin *la, const ir_lin *lb, ir_slot *s, int *n) {
    bool used[IR_LIN_TERMS] = {false};
    *n = 0;
    for (int i = 0; i < la->n; i++) {
        const ir_lin_term *x = &la->t[i];
        int j = 0;
        for (; j < lb->n; j++) {
            const ir_lin_term *y = &lb->t[j];
            if (used[j] || y->coef != x->coef) continue;
            if (x->tag >= 0 ? y->key == x->key : y->tag < 0) break; /* tag: the axis */
        }
        ir_slot v = {x->coef, x->lo, x->hi, x->any, NULL, NULL};
        if (j < lb->n) {
            const ir_lin_term *y = &lb->t[j];
            used[j] = true;
            v = (ir_slot){x->coef, x->lo - y->hi, x->hi - y->lo, x->any || y->any, x->key, y->key};
        }
        if (!push_slot(s, n, v)) return false;
    }
    for (int j = 0; j < lb->n; j++) {
        const ir_lin_term *y = &lb->t[j];
        if (!used[j] && !push_slot(s, n, (ir_slot){-y->coef, y->lo, y->hi, y->any, NULL, NULL}))
            return false;
    }
    return true;
}

/* Is every digit of launch axis x that can differ forced (the two
 * coordinates equal)?  An axis no index mentions is not. */
static bool axis_forced(const digits *dg, const ir_forced *f, int x) {
    for (int i = 0; i < dg->n; i++) {
        const dvar *d = &dg->d[i];
        if (d->axis != x) continue;
        for (int j = 0; j < d->dv.nb; j++) {
            int64_t lo, hi;
            bool any;
            ir_digit_range(&d->dv, j, &lo, &hi, &any);
            if ((any || lo != hi) && !ir_forced_has(f, &d->dv.b[j], &d->dv.b[j])) return false;
        }
        return true;
    }
    return false;
}

/* The values l takes lie in [lo, hi], but for its terms of any value:
 * such a term counts as its coefficient times [0, 1] here, as it has since
 * this pass marked it lo = 1 > hi = 0 (merged_dims asks only whether y
 * stays in [0, c), which decides where a pair merges, not whether the
 * proof holds: e // c = x and e % c = y give e = x c + y either way). */
static void lin_range(const ir_lin *l, ir_wide *lo, ir_wide *hi) {
    *lo = *hi = l->k;
    for (int i = 0; i < l->n; i++) {
        const ir_lin_term *t = &l->t[i];
        ir_wide x, y;
        ir_wide_scaled(t->coef, t->any ? 0 : t->lo, t->any ? 1 : t->hi, &x, &y);
        *lo += x, *hi += y;
    }
}

/* Dimensions d and d + 1 as one, when one side indexes them (e // c,
 * e % c) (a fused loop's bindings): the element is then e on that side,
 * and on the other either its own such e or x * c + y with y in [0, c).
 * 1 when merged into *la, *lb; 0 when not; -1 when not affine. */
static int merged_dims(digits *dg, const gs_acc *a, const gs_acc *b, int d, ir_lin *la,
                       ir_lin *lb) {
    if (d + 1 >= a->nidx) return 0;
    const tir_expr *ea, *eb;
    int64_t ca, cb;
    bool pa = ir_divmod_pair(a->idx[d], a->idx[d + 1], &ea, &ca);
    bool pb = ir_divmod_pair(b->idx[d], b->idx[d + 1], &eb, &cb);
    if (!pa && !pb) return 0;
    if (pa && pb) {
        if (ca != cb) return 0;
        return lin_add(dg, a, ea, 1, la) && lin_add(dg, b, eb, 1, lb) ? 1 : -1;
    }
    const gs_acc *p = pa ? a : b, *o = pa ? b : a; /* the pair's side, the other */
    ir_lin *lp = pa ? la : lb, *lo = pa ? lb : la;
    int64_t c = pa ? ca : cb;
    ir_lin y;
    ir_wide ylo, yhi;
    ir_lin_init(&y, GS_MAX_TERMS);
    if (!lin_add(dg, o, o->idx[d + 1], 1, &y)) return -1;
    lin_range(&y, &ylo, &yhi);
    if (ylo < 0 || yhi >= c) return 0;
    return lin_add(dg, p, pa ? ea : eb, 1, lp) && lin_add(dg, o, o->idx[d], c, lo) &&
                   lin_add(dg, o, o->idx[d + 1], 1, lo)
               ? 1
               : -1;
}

/* Does every element that a and b both touch have one (block, thread)? */
static bool same_thread(const gs *g, const gs_acc *a, const gs_acc *b) {
    if (a->odd || b->odd || a->nidx != b->nidx || a->nidx > 8) return false;
    digits dg;
    memset(&dg, 0, sizeof dg);
    for (int d = 0; d < a->nidx; d++) {
        note_splits(&dg, a, a->idx[d]);
        note_splits(&dg, b, b->idx[d]);
    }
    if (!digits_ok(&dg)) return false;
    ir_lin la[8], lb[8];
    int nd = 0;
    for (int d = 0; d < a->nidx; d++, nd++) {
        ir_lin_init(&la[nd], GS_MAX_TERMS), ir_lin_init(&lb[nd], GS_MAX_TERMS);
        int m = merged_dims(&dg, a, b, d, &la[nd], &lb[nd]);
        if (m < 0) return false;
        if (m) {
            d++;
            continue;
        }
        if (!lin_add(&dg, a, a->idx[d], 1, &la[nd]) || !lin_add(&dg, b, b->idx[d], 1, &lb[nd]))
            return false;
    }
    if (dg.bad) return false;
    ir_forced f;
    memset(&f, 0, sizeof f);
    bool changed = true, never = false;
    while (changed && !never) {
        changed = false;
        for (int d = 0; d < nd && !never; d++) {
            ir_slot s[GS_MAX_SLOTS];
            int n;
            if (!slots_of(&la[d], &lb[d], s, &n)) return false;
            changed |= ir_force_dim(s, n, (ir_wide)la[d].k - lb[d].k, &f, &never);
            if (f.full) return false; /* more forced pairs than it keeps: give up */
        }
    }
    if (never) return true;
    for (int x = 0; x < TIR_NLAUNCH_AXES; x++)
        if (g->ext[x] != 0 && g->ext[x] != 1 && !axis_forced(&dg, &f, x)) return false;
    return true;
}

/* ----------------------------------------------------------------- pass */

static bool listed(const lower_state *st, const tir_buffer *b) {
    for (int i = 0; i < st->nsync_globals; i++)
        if (st->sync_globals[i] == b) return true;
    return false;
}

/* Is b written in the kernel, with some write not proven to meet the
 * other accesses (itself included) in one thread? */
static bool needs_sync(const gs *g, const tir_buffer *b) {
    bool w = false, r = false;
    for (int i = 0; i < g->accs.n; i++) {
        const gs_acc *a = g->accs.items[i];
        if (a->buf != b) continue;
        w |= a->write;
        r |= !a->write || a->odd;
    }
    if (!w) return false;
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
