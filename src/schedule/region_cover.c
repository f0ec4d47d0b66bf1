/* region_cover.c: proofs that what a block writes during one iteration of
 * a loop covers what another block reads there (TVM's region-cover
 * check of compute_at / reverse_compute_at).
 *
 * Relaxing a region over loops gives its bounding box, which is all that
 * is needed to place a block that reads (compute_at recomputes the box)
 * but not to place one after blocks that write: a producer whose inner
 * loops step by 4 writes columns j, j+4, j+8 under a loop, and a consumer
 * placed over their bounding interval reads columns never written.  So
 * the instances a block runs during one iteration are taken as exact only
 * when the proof below goes through, and the placement is refused
 * otherwise: each binding is affine in the loops inside the target loop
 * (a fused loop f may appear only as the digits floordiv(f, c) and
 * floormod(f, c) of one divisor c of its extent; any other floordiv or
 * floormod of them, as fuse then split leaves, fails), each feeds one
 * iterator only, and per iterator the coefficients and constant extents
 * form a dense mixed radix (1, e1, e1*e2, ...; the last, largest digit may
 * be a loop of symbolic extent), so the iterator runs over
 * one interval with no hole.  With a predicate that only bounds bindings
 * to their domains, the instances run are then that box intersected with
 * the block's domain (schedules run every instance of a block once).
 * The same proof serves compute_at's check that the producers of what a
 * moved block reads have written it (sch_writer_box), and, with every loop
 * of extent above 1 feeding an iterator, decompose_reduction's that no
 * update instance runs twice once the init is out (sch_runs_once).
 */
#include "sched_internal.h"

/* Coefficients are the products of loop extents; past this, refuse. */
#define COEF_LIMIT ((int64_t)1 << 40)

/* Adds scale * e to the linear form over vars (coef[], *rest).  False
 * when e is not affine in vars. */
static bool linear(tir_ctx *ctx, const tir_expr *e, int nv, const tir_var *const *vars,
                   int64_t scale, int64_t *coef, const tir_expr **rest) {
    bool uses = false;
    for (int i = 0; i < nv && !uses; i++) uses = tir_uses_var(e, vars[i]);
    if (!uses) {
        const tir_expr *t = scale == 1 ? e : tir_mul(ctx, e, tir_int(ctx, e->dtype, scale));
        *rest = *rest ? tir_add(ctx, *rest, t) : t;
        return true;
    }
    const tir_binop *b = tir_as_tir_binop(e);
    int64_t c;
    switch ((tir_kind)e->kind) {
    case TIR_KIND_VAR:
        for (int i = 0; i < nv; i++)
            if (&vars[i]->base == e) coef[i] += scale;
        return true;
    case TIR_KIND_ADD:
        return linear(ctx, b->a, nv, vars, scale, coef, rest) &&
               linear(ctx, b->b, nv, vars, scale, coef, rest);
    case TIR_KIND_SUB:
        return linear(ctx, b->a, nv, vars, scale, coef, rest) &&
               linear(ctx, b->b, nv, vars, -scale, coef, rest);
    case TIR_KIND_MUL: {
        const tir_expr *x = b->a;
        if (!tir_expr_const_int(b->b, &c)) {
            if (!tir_expr_const_int(b->a, &c)) return false;
            x = b->b;
        }
        int64_t ac = c < 0 ? -c : c, as = scale < 0 ? -scale : scale;
        if (ac > COEF_LIMIT || (ac != 0 && as > COEF_LIMIT / ac)) return false;
        return linear(ctx, x, nv, vars, scale * c, coef, rest);
    }
    default: return false;
    }
}

/* True when `f < end` holds exactly when binding v < dom's end, for every
 * value of the loops: v is f itself and end dom's end, or (a fused loop
 * split by a factor not dividing its extent: f = f_0 * c + f_1 < M * N,
 * v = f // N) v is floordiv(f, d) and end is d times dom's end, d > 0,
 * since floordiv(f, d) < e if and only if f < e * d for every integer f. */
static bool bounds_fused(tir_ctx *ctx, tir_analyzer *a, const tir_expr *v,
                         const tir_range *dom, const tir_expr *f, const tir_expr *end) {
    const tir_expr *dend = tir_analyzer_simplify(a, tir_add(ctx, dom->min, dom->extent));
    const tir_expr *fend = tir_analyzer_simplify(a, end);
    int64_t de, fe, d = 1;
    if (tir_expr_const_int(dend, &de) && tir_expr_const_int(fend, &fe)) {
        if (fe != de && (de <= 0 || fe % de != 0 || fe / de <= 0)) return false;
        d = fe == de ? 1 : fe / de;
    } else if (!sch_is_const(tir_analyzer_simplify(a, tir_sub(ctx, fend, dend)), 0)) {
        return false;
    }
    const tir_expr *fd = d == 1 ? f : tir_floordiv(ctx, f, tir_int(ctx, f->dtype, d));
    return sch_is_const(tir_analyzer_simplify(a, tir_sub(ctx, fd, v)), 0);
}

/* The conjuncts of e that use a loop above block sref bi feeding a reduce
 * iterator of it are bounds (sch_pred_bounds_only). */
static bool reduce_conj_bounds(const tir_schedule *s, tir_analyzer *a, int bi,
                               const tir_expr *e) {
    const tir_block_realize *r = s->srefs[bi].realize;
    const tir_binop *b = tir_as_tir_binop(e);
    if (b && e->kind == TIR_KIND_AND)
        return reduce_conj_bounds(s, a, bi, b->a) && reduce_conj_bounds(s, a, bi, b->b);
    bool red = false;
    for (int p = s->srefs[bi].parent; p >= 0 && sch_sref_for(s, p) && !red;
         p = s->srefs[p].parent) {
        const tir_var *v = sch_sref_for(s, p)->var;
        if (!tir_uses_var(e, v)) continue;
        for (int k = 0; k < r->nvalues && !red; k++)
            red = r->block->iters[k].kind == TIR_ITER_REDUCE && tir_uses_var(r->values[k], v);
    }
    return !red || sch_pred_bounds_only(s->ctx, a, r, e);
}

bool sch_reduce_pred_bounds_only(const tir_schedule *s, int bi) {
    tir_analyzer *a = tir_analyzer_create(s->ctx);
    sch_bind_ancestors(s, a, s->srefs[bi].parent);
    bool ok = reduce_conj_bounds(s, a, bi, s->srefs[bi].realize->predicate);
    tir_analyzer_destroy(a);
    return ok;
}

bool sch_pred_bounds_only(tir_ctx *ctx, tir_analyzer *a, const tir_block_realize *r,
                          const tir_expr *e) {
    const tir_binop *b = tir_as_tir_binop(e);
    if (b && e->kind == TIR_KIND_AND)
        return sch_pred_bounds_only(ctx, a, r, b->a) && sch_pred_bounds_only(ctx, a, r, b->b);
    int64_t v;
    if (tir_expr_const_int(e, &v)) return v != 0;
    if (!b || e->kind != TIR_KIND_LT) return false;
    for (int k = 0; k < r->nvalues; k++)
        if (bounds_fused(ctx, a, r->values[k], &r->block->iters[k].dom, b->a, b->b))
            return true;
    return false;
}

/* Whether loop variable v feeds a reduce (red) or spatial iterator of r. */
static bool feeds_kind(const tir_block_realize *r, const tir_var *v, bool red) {
    for (int k = 0; k < r->nvalues; k++)
        if ((r->block->iters[k].kind == TIR_ITER_REDUCE) == red && tir_uses_var(r->values[k], v))
            return true;
    return false;
}

/* One conjunct for sch_pred_keeps_writes: nv loops (vars, mins) feed only
 * reduce iterators; a is bound to the enclosing loops. */
static bool conj_keeps_writes(const tir_schedule *s, tir_analyzer *a,
                              const tir_block_realize *r, int nv, const tir_var *const *vars,
                              const tir_expr *const *mins, const tir_expr *e) {
    const tir_binop *b = tir_as_tir_binop(e);
    if (b && e->kind == TIR_KIND_AND)
        return conj_keeps_writes(s, a, r, nv, vars, mins, b->a) &&
               conj_keeps_writes(s, a, r, nv, vars, mins, b->b);
    if (sch_pred_bounds_only(s->ctx, a, r, e)) return true;
    bool uses = false;
    for (int i = 0; i < nv; i++) uses = uses || tir_uses_var(e, vars[i]);
    if (!uses) return false;
    const tir_expr *at_min = (const tir_expr *)tir_substitute(s->ctx, e, nv, vars, mins);
    int64_t v;
    return tir_expr_const_int(tir_analyzer_simplify(a, at_min), &v) && v != 0;
}

bool sch_pred_keeps_writes(const tir_schedule *s, int bi) {
    return sch_conj_keeps_writes(s, bi, s->srefs[bi].realize->predicate);
}

bool sch_conj_keeps_writes(const tir_schedule *s, int bi, const tir_expr *e) {
    const tir_block_realize *r = s->srefs[bi].realize;
    int cap = 0;
    for (int p = s->srefs[bi].parent; p >= 0 && sch_sref_for(s, p); p = s->srefs[p].parent) cap++;
    const tir_var **vars = IR_NEWN(s->ctx, const tir_var *, cap + 1);
    const tir_expr **mins = IR_NEWN(s->ctx, const tir_expr *, cap + 1);
    int nv = 0;
    for (int p = s->srefs[bi].parent; p >= 0 && sch_sref_for(s, p); p = s->srefs[p].parent) {
        const tir_for *f = sch_sref_for(s, p);
        if (feeds_kind(r, f->var, true) && !feeds_kind(r, f->var, false)) {
            vars[nv] = f->var;
            mins[nv++] = f->min;
        }
    }
    tir_analyzer *a = tir_analyzer_create(s->ctx);
    sch_bind_ancestors(s, a, s->srefs[bi].parent);
    bool ok = conj_keeps_writes(s, a, r, nv, vars, mins, e);
    tir_analyzer_destroy(a);
    return ok;
}

/* The loops inside the target loop, as variables with a min and a
 * constant extent (-1: not constant; ext_e keeps every extent as an
 * expression).  A fused loop f of extent E that the
 * bindings use only as floordiv(f, c) and floormod(f, c), c dividing E,
 * is replaced by two digit variables of extents E / c and c: fuse then
 * leaves a box too. */
typedef struct inner_loops {
    int n;
    const tir_var **vars;
    const tir_expr **mins;
    int64_t *exts;
    const tir_expr **ext_e;
    int64_t *digit;        /* per original loop: c, 0 none, -1 not splittable */
    const tir_var **q, **r; /* its digit variables */
} inner_loops;

static int inner_index(const inner_loops *in, const tir_expr *e) {
    for (int i = 0; i < in->n; i++)
        if (&in->vars[i]->base == e) return i;
    return -1;
}

/* e with floordiv(f, c) / floormod(f, c) of inner loops replaced by their
 * digits (NULL: two divisors for one loop, or one not dividing it). */
static const tir_expr *split_digits(tir_ctx *ctx, inner_loops *in, const tir_expr *e) {
    const tir_binop *b = tir_as_tir_binop(e);
    if (!b) return e;
    int64_t c;
    int i = inner_index(in, b->a);
    if ((e->kind == TIR_KIND_FLOORDIV || e->kind == TIR_KIND_FLOORMOD) && i >= 0 &&
        tir_expr_const_int(b->b, &c) && c > 0) {
        if (in->digit[i] == 0) {
            if (in->exts[i] < 0 || in->exts[i] % c != 0 || !sch_is_const(in->mins[i], 0))
                return NULL;
            in->digit[i] = c;
            in->q[i] = tir_var_new(ctx, "q", e->dtype);
            in->r[i] = tir_var_new(ctx, "r", e->dtype);
        }
        if (in->digit[i] != c) return NULL;
        return &(e->kind == TIR_KIND_FLOORDIV ? in->q[i] : in->r[i])->base;
    }
    const tir_expr *x = split_digits(ctx, in, b->a), *y = split_digits(ctx, in, b->b);
    if (!x || !y) return NULL;
    return x == b->a && y == b->b ? e : tir_binop_new(ctx, (tir_kind)e->kind, x, y);
}

/* Appends the digit variables of the split loops, which must not be used
 * whole any more (values[0..nv)). */
static bool add_digits(tir_ctx *ctx, inner_loops *in, int nv, const tir_expr *const *values) {
    int n0 = in->n;
    for (int i = 0; i < n0; i++) {
        if (in->digit[i] <= 0) continue;
        for (int k = 0; k < nv; k++)
            if (tir_uses_var(values[k], in->vars[i])) return false;
        const tir_expr *zero = tir_int(ctx, in->q[i]->base.dtype, 0);
        in->vars[in->n] = in->q[i];
        in->mins[in->n] = zero;
        in->ext_e[in->n] = tir_int(ctx, zero->dtype, in->exts[i] / in->digit[i]);
        in->exts[in->n++] = in->exts[i] / in->digit[i];
        in->vars[in->n] = in->r[i];
        in->mins[in->n] = zero;
        in->ext_e[in->n] = tir_int(ctx, zero->dtype, in->digit[i]);
        in->exts[in->n++] = in->digit[i];
    }
    return true;
}

/* One iterator's binding = rest + sum coef[i] * in->vars[i]: checks that
 * the coefficients form a dense mixed radix and sets *box.  owner[i]
 * records which iterator uses variable i (one feeding two iterators runs
 * a diagonal, not a box).  A loop of symbolic extent (a dynamic shape's
 * row loop, `(n + 7) // 8` blocks) may be the last digit, the one of the
 * largest stride: nothing above it needs its extent, and the box ends at
 * rest + stride * extent. */
static bool dense(tir_ctx *ctx, tir_analyzer *a, int k, const inner_loops *in,
                  const int64_t *coef, int *owner, const tir_expr *rest, sch_bound *box) {
    int nv = in->n, left = 0;
    bool *done = IR_NEWN(ctx, bool, nv + 1);
    for (int i = 0; i < nv; i++) {
        if (coef[i] == 0) continue;
        if (coef[i] < 0 || owner[i] >= 0 || (in->exts[i] < 1 && in->exts[i] != -1))
            return false;
        owner[i] = k;
        left++;
        /* The variable runs min .. min + ext - 1: fold min into the rest. */
        rest = tir_add(ctx, rest, tir_mul(ctx, in->mins[i], tir_int(ctx, rest->dtype, coef[i])));
    }
    int64_t want = 1;
    while (left > 0) {
        int pick = -1;
        for (int i = 0; i < nv; i++) {
            if (coef[i] != want || owner[i] != k || done[i]) continue;
            if (pick >= 0) return false; /* two variables, one stride: overlap */
            pick = i;
        }
        if (pick < 0) return false; /* a hole */
        if (in->exts[pick] < 0) {
            /* symbolic: only as the last digit */
            const tir_expr *e = in->ext_e[pick];
            int64_t neg;
            if (left != 1 || !e || tir_expr_const_int(e, &neg) ||
                !tir_dtype_eq(e->dtype, rest->dtype))
                return false;
            box->lo = tir_analyzer_simplify(a, rest);
            box->hi = tir_analyzer_simplify(
                a, tir_add(ctx, rest, tir_mul(ctx, e, tir_int(ctx, rest->dtype, want))));
            return true;
        }
        if (in->exts[pick] > COEF_LIMIT / want) return false;
        done[pick] = true;
        want *= in->exts[pick];
        left--;
    }
    box->lo = tir_analyzer_simplify(a, rest);
    box->hi = tir_analyzer_simplify(a, tir_add(ctx, rest, tir_int(ctx, rest->dtype, want)));
    return true;
}

static void collect_inner(const tir_schedule *s, int bi, int loop, inner_loops *in) {
    tir_ctx *ctx = s->ctx;
    int cap = 3 * s->nsrefs + 1;
    in->vars = IR_NEWN(ctx, const tir_var *, cap);
    in->mins = IR_NEWN(ctx, const tir_expr *, cap);
    in->exts = IR_NEWN(ctx, int64_t, cap);
    in->ext_e = IR_NEWN(ctx, const tir_expr *, cap);
    in->digit = IR_NEWN(ctx, int64_t, cap);
    in->q = IR_NEWN(ctx, const tir_var *, cap);
    in->r = IR_NEWN(ctx, const tir_var *, cap);
    in->n = 0;
    for (int p = s->srefs[bi].parent; p >= 0 && p != loop; p = s->srefs[p].parent) {
        const tir_for *f = sch_sref_for(s, p);
        if (!f) continue;
        in->vars[in->n] = f->var;
        in->mins[in->n] = f->min;
        in->ext_e[in->n] = f->extent;
        if (!tir_expr_const_int(f->extent, &in->exts[in->n])) in->exts[in->n] = -1;
        in->n++;
    }
}

/* True when a conjunct x < y of predicate e lets inner loop i run only at
 * its min: x is affine in the inner loops with coefficients >= 0, that
 * of i positive, and x >= y once i is past its min (a split guard such as
 * j_1_0 * 5 + j_1_1 < 1, whose binding the simplifier dropped as the
 * iterator's domain is one point, runs j_1_1 = 0 only). */
static bool pinned(tir_ctx *ctx, tir_analyzer *a, const inner_loops *in, int i,
                   const tir_expr *e) {
    const tir_binop *b = tir_as_tir_binop(e);
    if (!b) return false;
    if (e->kind == TIR_KIND_AND)
        return pinned(ctx, a, in, i, b->a) || pinned(ctx, a, in, i, b->b);
    if (e->kind != TIR_KIND_LT) return false;
    int64_t *coef = IR_NEWN(ctx, int64_t, in->n + 1);
    const tir_expr *rest = NULL;
    if (!linear(ctx, b->a, in->n, in->vars, 1, coef, &rest) || coef[i] <= 0) return false;
    if (!rest) rest = tir_int(ctx, b->a->dtype, 0);
    for (int j = 0; j < in->n; j++) {
        if (coef[j] < 0) return false;
        const tir_expr *m = j == i ? tir_add(ctx, in->mins[j], tir_int(ctx, rest->dtype, 1))
                                   : in->mins[j];
        if (coef[j] > 0)
            rest = tir_add(ctx, rest, tir_mul(ctx, m, tir_int(ctx, rest->dtype, coef[j])));
    }
    return sch_prove_le(ctx, a, b->b, tir_analyzer_simplify(a, rest));
}

/* The box of instances the bindings of block sref bi run over the loops
 * inside `loop` (predicate ignored).  *all_fed (when not NULL): every one
 * of those loops of extent above 1 feeds an iterator, so that with the
 * dense radix no instance runs twice. */
static bool binding_box(const tir_schedule *s, tir_analyzer *a, int bi, int loop, sch_bound *box,
                        bool *all_fed) {
    tir_ctx *ctx = s->ctx;
    const tir_block_realize *r = s->srefs[bi].realize;
    inner_loops in;
    collect_inner(s, bi, loop, &in);
    int n0 = in.n;
    const tir_expr **vals = IR_NEWN(ctx, const tir_expr *, r->nvalues + 1);
    for (int k = 0; k < r->nvalues; k++) {
        vals[k] = split_digits(ctx, &in, tir_analyzer_simplify(a, r->values[k]));
        if (!vals[k]) return false;
    }
    if (!add_digits(ctx, &in, r->nvalues, vals)) return false;
    int *owner = IR_NEWN(ctx, int, in.n + 1);
    for (int i = 0; i < in.n; i++) owner[i] = -1;
    for (int k = 0; k < r->nvalues; k++) {
        int64_t *coef = IR_NEWN(ctx, int64_t, in.n + 1);
        const tir_expr *rest = NULL;
        if (!linear(ctx, vals[k], in.n, in.vars, 1, coef, &rest)) return false;
        if (!rest) rest = tir_int(ctx, vals[k]->dtype, 0);
        if (!dense(ctx, a, k, &in, coef, owner, rest, &box[k])) return false;
    }
    if (all_fed) {
        *all_fed = true;
        for (int i = 0; i < in.n; i++)
            if (owner[i] < 0 && !(i < n0 && in.digit[i] > 0) && in.exts[i] != 1 &&
                !pinned(ctx, a, &in, i, r->predicate))
                *all_fed = false;
    }
    return true;
}

bool sch_exec_box(const tir_schedule *s, tir_analyzer *a, int bi, int loop, sch_bound *box) {
    const tir_block_realize *r = s->srefs[bi].realize;
    if (!sch_pred_bounds_only(s->ctx, a, r, r->predicate)) return false;
    return binding_box(s, a, bi, loop, box, NULL);
}

bool sch_runs_once(const tir_schedule *s, tir_analyzer *a, int bi, int loop) {
    const tir_block_realize *r = s->srefs[bi].realize;
    sch_bound *box = IR_NEWN(s->ctx, sch_bound, r->nvalues + 1);
    bool all_fed = false;
    return binding_box(s, a, bi, loop, box, &all_fed) && all_fed;
}

bool sch_writer_box(const tir_schedule *s, tir_analyzer *a, int wi, int loop,
                    const tir_buffer *buf, int *pdim, sch_bound *box) {
    tir_ctx *ctx = s->ctx;
    const tir_block *o = sch_sref_block(s, wi);
    int w = 0;
    while (o->writes[w].buffer != buf) w++;
    /* A predicate that only skips reduction steps (every written element
     * still runs one) leaves the written box and the final values as they
     * are in the whole nest. */
    if (sch_trivial_dim(o, &o->writes[w], pdim) >= 0 || !sch_pred_keeps_writes(s, wi) ||
        !binding_box(s, a, wi, loop, box, NULL))
        return false;
    for (int k = 0; k < o->niters; k++) {
        const tir_range *d = &o->iters[k].dom;
        if (pdim[k] < 0 && !(sch_prove_le(ctx, a, box[k].lo, d->min) &&
                             sch_prove_le(ctx, a, tir_add(ctx, d->min, d->extent), box[k].hi)))
            return false;
    }
    return true;
}

bool sch_prove_le(tir_ctx *ctx, tir_analyzer *a, const tir_expr *x, const tir_expr *y) {
    if (!x || !y || !tir_dtype_eq(x->dtype, y->dtype)) return false;
    return tir_analyzer_can_prove(a, tir_binop_new(ctx, TIR_KIND_LE, x, y));
}
