/* writes_whole.c: whether a block writes every element of a buffer over
 * the loops of its scope: cache_read's and cache_write's precondition 8,
 * whose whole-buffer copies read every element.
 *
 * Three tests, the first that decides wins.  Where the loops and the
 * buffer are small and constant, the instances are enumerated and the
 * elements they write marked: exact (a strided writer, `Y[2 * i]`, and
 * one that writes some elements twice and so misses others,
 * `Y[2 * (i // 2)]`, both fail).  Otherwise the bounding box of the
 * writes, by relaxation, must span the buffer (it catches a block that
 * compute_at narrowed to what its consumers read; exact instance sets,
 * sch_writer_box, fail on the tiling rules' fused thread loops), and the
 * number of elements written, counted with repeats, must reach the
 * buffer's (pigeonhole: it catches a strided writer of any size).  Only a
 * writer with repeats over a large or symbolic domain passes unproved (a
 * spatial one tir_sched_create mostly refuses already: spatial_writes.c).
 * Its integer evaluator serves spatial_writes.c's witnesses too.
 */
#include <stdint.h>
#include <stdlib.h>

#include "sched_internal.h"

/* Enumeration limits: instances and buffer elements (the bitmap). */
#define ENUM_POINTS ((int64_t)1 << 16)
#define ENUM_ELEMS ((int64_t)1 << 16)
/* ... and elements marked, repeats counted */
#define ENUM_MARKS ((int64_t)1 << 20)

/* The loops from block sref bi up to (not including) sref top. */
typedef struct loop_nest {
    int n;
    const tir_var **vars;
    int64_t *mins, *exts;
    int64_t points; /* product of exts, saturating */
} loop_nest;

/* The loops of bi under top; false where a bound is not constant. */
static bool nest_of(const tir_schedule *s, int bi, int top, loop_nest *ln) {
    ln->n = 0;
    ln->points = 1;
    ln->vars = IR_NEWN(s->ctx, const tir_var *, s->nsrefs + 1);
    ln->mins = IR_NEWN(s->ctx, int64_t, s->nsrefs + 1);
    ln->exts = IR_NEWN(s->ctx, int64_t, s->nsrefs + 1);
    for (int p = s->srefs[bi].parent; p >= 0 && p != top; p = s->srefs[p].parent) {
        const tir_for *f = sch_sref_for(s, p);
        if (!f) continue;
        int64_t mn, ex;
        if (!tir_expr_const_int(f->min, &mn) || !tir_expr_const_int(f->extent, &ex) || ex < 0)
            return false;
        ln->vars[ln->n] = f->var, ln->mins[ln->n] = mn, ln->exts[ln->n] = ex;
        ln->n++;
        ln->points = ln->points > INT64_MAX / (ex ? ex : 1) ? INT64_MAX : ln->points * ex;
    }
    return true;
}

/* Elements of buf (saturating), or -1 for a symbolic shape. */
static int64_t elements(const tir_buffer *buf) {
    int64_t n = 1, e;
    for (int d = 0; d < buf->ndim; d++) {
        if (!tir_expr_const_int(buf->shape[d], &e) || e < 0) return -1;
        n = n > INT64_MAX / (e ? e : 1) ? INT64_MAX : n * e;
    }
    return n;
}

/* The integer value of e with vars[i] = vals[i]; false where e holds
 * anything else (a load, a float) or a step overflows e's type (also
 * spatial_writes.c's, for its witnesses). */
bool sch_eval_int(const tir_expr *e, int nv, const tir_var *const *vars, const int64_t *vals,
                  int64_t *out) {
    int64_t a, b, r = 0;
    tir_kind k = (tir_kind)e->kind;
    if (!tir_dtype_is_int(e->dtype) && !tir_dtype_is_bool(e->dtype)) return false;
    if (e->dtype.lanes != 1) return false;
    if (k == TIR_KIND_INT_IMM) return *out = tir_as_tir_int_imm(e)->value, true;
    if (k == TIR_KIND_VAR) {
        for (int i = 0; i < nv; i++)
            if (&vars[i]->base == e) return *out = vals[i], true;
        return false;
    }
    if (k == TIR_KIND_NOT) {
        if (!sch_eval_int(tir_as_tir_not(e)->a, nv, vars, vals, &a)) return false;
        return *out = !a, true;
    }
    if (k == TIR_KIND_SELECT) {
        const tir_select *sl = tir_as_tir_select(e);
        if (!sch_eval_int(sl->cond, nv, vars, vals, &a)) return false;
        return sch_eval_int(a ? sl->t : sl->f, nv, vars, vals, out);
    }
    if (k == TIR_KIND_CAST) {
        if (!sch_eval_int(tir_as_tir_cast(e)->value, nv, vars, vals, &a)) return false;
        r = a;
    } else {
        if (!tir_kind_is_binop(k)) return false;
        const tir_binop *bo = tir_as_tir_binop(e);
        if (!sch_eval_int(bo->a, nv, vars, vals, &a) || !sch_eval_int(bo->b, nv, vars, vals, &b))
            return false;
        bool bad = false, divide = k == TIR_KIND_DIV || k == TIR_KIND_MOD ||
                                   k == TIR_KIND_FLOORDIV || k == TIR_KIND_FLOORMOD;
        if (divide && (b == 0 || (a == INT64_MIN && b == -1))) return false;
        switch (k) {
        case TIR_KIND_ADD: bad = __builtin_add_overflow(a, b, &r); break;
        case TIR_KIND_SUB: bad = __builtin_sub_overflow(a, b, &r); break;
        case TIR_KIND_MUL: bad = __builtin_mul_overflow(a, b, &r); break;
        case TIR_KIND_DIV: r = a / b; break;
        case TIR_KIND_MOD: r = a % b; break;
        case TIR_KIND_FLOORDIV: r = a / b - (a % b != 0 && (a % b < 0) != (b < 0)); break;
        case TIR_KIND_FLOORMOD: r = a % b + (a % b != 0 && (a % b < 0) != (b < 0) ? b : 0); break;
        case TIR_KIND_MIN: r = a < b ? a : b; break;
        case TIR_KIND_MAX: r = a > b ? a : b; break;
        case TIR_KIND_EQ: r = a == b; break;
        case TIR_KIND_NE: r = a != b; break;
        case TIR_KIND_LT: r = a < b; break;
        case TIR_KIND_LE: r = a <= b; break;
        case TIR_KIND_GT: r = a > b; break;
        case TIR_KIND_GE: r = a >= b; break;
        case TIR_KIND_AND: r = a && b; break;
        case TIR_KIND_OR: r = a || b; break;
        default: return false;
        }
        if (bad) return false;
    }
    /* a value its type cannot hold: a cast wraps, which index arithmetic
     * does not mean; give up rather than guess */
    int bits = e->dtype.bits;
    if (tir_dtype_is_bool(e->dtype)) return *out = r != 0, true;
    if (bits < 64) {
        bool uns = e->dtype.code == TIR_TYPE_UINT;
        int64_t lo = uns ? 0 : -((int64_t)1 << (bits - 1));
        int64_t hi = uns ? ((int64_t)1 << bits) - 1 : ((int64_t)1 << (bits - 1)) - 1;
        if (r < lo || r > hi) return false;
    }
    return *out = r, true;
}

/* Marks in seen (row-major over shape) the elements of the box [lo, lo +
 * ext) that lie inside the buffer. */
static void mark(unsigned char *seen, int nd, const int64_t *lo, const int64_t *ext,
                 const int64_t *shape) {
    int64_t idx[8], total = 1; /* nd <= 8: enumerate's limit */
    for (int d = 0; d < nd; d++) total = ext[d] > 0 ? total * ext[d] : 0; /* <= ENUM_MARKS */
    for (int64_t q = 0; q < total; q++) {
        int64_t rest = q, flat = 0;
        bool in = true;
        for (int d = nd - 1; d >= 0; d--) {
            idx[d] = lo[d] + rest % ext[d];
            rest /= ext[d];
            in = in && idx[d] >= 0 && idx[d] < shape[d];
        }
        if (!in) continue;
        for (int d = 0; d < nd; d++) flat = flat * shape[d] + idx[d];
        seen[flat] = 1;
    }
}

/* Whether the instances of block sref bi under the loops ln write every
 * element of buf through its write regions regs of buf (a block may name
 * buf in several; per elements an instance, over all of them): 1 yes,
 * 0 no, -1 not decided here (too large, or an index this evaluator does
 * not take). */
static int enumerate(const tir_schedule *s, int bi, const loop_nest *ln,
                     const tir_buffer_region *regs, const tir_buffer *buf, int64_t nelem,
                     int64_t per) {
    if (ln->points > ENUM_POINTS || nelem > ENUM_ELEMS || buf->ndim > 8 || per > ENUM_MARKS ||
        ln->points * per > ENUM_MARKS)
        return -1;
    tir_ctx *ctx = s->ctx;
    const tir_block_realize *r = s->srefs[bi].realize;
    const tir_block *b = r->block;
    const tir_var **iv = IR_NEWN(ctx, const tir_var *, b->niters + 1);
    for (int k = 0; k < b->niters; k++) iv[k] = b->iters[k].var;
    int nd = buf->ndim, nr = 0; /* the block's write regions of buf, nr of them */
    for (int w = 0; w < b->nwrites; w++) nr += b->writes[w].buffer == buf;
    const tir_expr **mins = IR_NEWN(ctx, const tir_expr *, nr * nd + 1);
    int64_t *ext = IR_NEWN(ctx, int64_t, nr * nd + 1), *shape = IR_NEWN(ctx, int64_t, nd + 1);
    for (int d = 0; d < nd; d++)
        tir_expr_const_int(buf->shape[d], &shape[d]); /* constant: nelem >= 0 */
    for (int w = 0, q = 0; w < b->nwrites; w++) {
        const tir_buffer_region *reg = &regs[w];
        if (reg->buffer != buf) continue;
        for (int d = 0; d < nd; d++, q++) {
            mins[q] = (const tir_expr *)tir_substitute(ctx, reg->ranges[d].min, b->niters, iv,
                                                       r->values);
            if (!tir_expr_const_int(reg->ranges[d].extent, &ext[q]) || ext[q] < 0) return -1;
        }
    }
    /* The predicate's conjuncts but those over scalar parameters alone
       (n > 0), which mask every instance or none: where they fail the
       block writes nothing, which its callers say (cache_write 11,
       cache_read 9); read as true, the others are enumerated. */
    ir_vec conj = {0};
    sch_conjuncts(r->predicate, &conj);
    const tir_expr *pred = NULL;
    for (int j = 0; j < conj.n; j++)
        if (!sch_params_only(s->func, conj.items[j]))
            pred = pred ? tir_and(ctx, pred, conj.items[j]) : conj.items[j];
    ir_vec_free(&conj);
    int64_t *at = IR_NEWN(ctx, int64_t, ln->n + 1), *lo = IR_NEWN(ctx, int64_t, nd + 1);
    unsigned char *seen = calloc((size_t)nelem + 1, 1); /* not the arena: 64 KiB per call */
    if (!seen) return -1;
    int whole = 1;
    for (int64_t p = 0; p < ln->points && whole > 0; p++) {
        int64_t rest = p; /* p's mixed-radix digits */
        for (int i = 0; i < ln->n; i++) {
            at[i] = ln->mins[i] + rest % ln->exts[i];
            rest /= ln->exts[i];
        }
        int64_t run = 1;
        if (pred && !sch_eval_int(pred, ln->n, ln->vars, at, &run)) whole = -1;
        for (int q = 0; q < nr && whole > 0 && run; q++) {
            for (int d = 0; d < nd && whole > 0; d++)
                if (!sch_eval_int(mins[q * nd + d], ln->n, ln->vars, at, &lo[d])) whole = -1;
            if (whole > 0) mark(seen, nd, lo, ext + q * nd, shape);
        }
    }
    for (int64_t i = 0; i < nelem && whole > 0; i++)
        if (!seen[i]) whole = 0;
    free(seen);
    return whole;
}

/* Elements of one instance's region, or -1 where an extent is symbolic. */
static int64_t region_elements(const tir_buffer_region *reg) {
    int64_t n = 1, e;
    for (int d = 0; d < reg->ndim; d++) {
        if (!tir_expr_const_int(reg->ranges[d].extent, &e) || e < 0) return -1;
        n = n > INT64_MAX / (e ? e : 1) ? INT64_MAX : n * e;
    }
    return n;
}

/* Whether the bounding box of the union of the block's write regions of
 * buf spans it: in each dimension some region reaches 0 and some the
 * extent (a block may name buf in several write regions, `T.writes(Y[2 *
 * i], Y[2 * i + 1])`, and need all of them). */
static bool boxes_span(const tir_schedule *s, int bi, int sc, const tir_block *o,
                       const tir_buffer *buf) {
    tir_ctx *ctx = s->ctx;
    int nd = buf->ndim;
    bool *lo_ok = IR_NEWN(ctx, bool, nd + 1), *hi_ok = IR_NEWN(ctx, bool, nd + 1);
    sch_bound *acc = IR_NEWN(ctx, sch_bound, nd + 1);
    for (int w = 0; w < o->nwrites; w++) {
        if (o->writes[w].buffer != buf) continue;
        tir_analyzer *a = tir_analyzer_create(ctx);
        sch_bind_ancestors(s, a, s->srefs[bi].parent);
        if (sch_relax_access(s, a, bi, sc, sc, &o->writes[w], TIR_SCOPE_LOCAL, acc))
            for (int d = 0; d < nd; d++) {
                const tir_expr *zero = tir_int(ctx, buf->shape[d]->dtype, 0);
                lo_ok[d] = lo_ok[d] || sch_prove_le(ctx, a, acc[d].lo, zero);
                hi_ok[d] = hi_ok[d] || sch_prove_le(ctx, a, buf->shape[d], acc[d].hi);
            }
        tir_analyzer_destroy(a);
    }
    for (int d = 0; d < nd; d++)
        if (!lo_ok[d] || !hi_ok[d]) return false;
    return true;
}

const char *sch_writes_whole(const tir_schedule *s, int bi, int sc, const tir_buffer *buf) {
    const tir_block *o = sch_sref_block(s, bi);
    if (!boxes_span(s, bi, sc, o, buf))
        return "compute_at narrows a producer to what its consumers read; cache it before "
               "compute_at";
    loop_nest ln;
    /* per: elements of one instance's regions of buf, all of them */
    int64_t nelem = elements(buf), per = 0;
    for (int w = 0; w < o->nwrites && per >= 0; w++) {
        int64_t e = o->writes[w].buffer == buf ? region_elements(&o->writes[w]) : 0;
        per = e < 0 ? -1 : per > INT64_MAX - e ? INT64_MAX : per + e;
    }
    if (nelem < 0 || per < 0 || !nest_of(s, bi, sc, &ln)) return NULL; /* the box alone */
    int whole = enumerate(s, bi, &ln, o->writes, buf, nelem, per);
    if (whole == 0)
        return "it leaves elements inside its bounding box unwritten: a strided write, or one "
               "that writes some elements twice";
    /* too large to enumerate: fewer elements written, with repeats, than
     * the buffer has leave holes (pigeonhole) */
    int64_t have = ln.points > INT64_MAX / (per ? per : 1) ? INT64_MAX : ln.points * per;
    if (whole < 0 && have < nelem)
        return "it writes fewer elements than the buffer has: a strided write leaves holes";
    return NULL;
}

/* Whether every variable in an expression is a scalar parameter of f. */
typedef struct {
    tir_visitor v;
    const tir_prim_func *f;
    bool other;
} params_only;

static bool params_pre(tir_visitor *v, const tir_node *n) {
    params_only *p = (params_only *)v;
    const tir_var *x = tir_as_tir_var(n);
    if (x) p->other |= !sch_is_scalar_param(p->f, x);
    return !p->other;
}

bool sch_params_only(const tir_prim_func *f, const tir_expr *e) {
    params_only p = {{.pre = params_pre}, f, false};
    tir_visit(&p.v, e);
    return !p.other;
}

const tir_expr *sch_reduce_nonempty(const tir_schedule *s, int bi, bool *other) {
    tir_ctx *ctx = s->ctx;
    const tir_block *b = sch_sref_block(s, bi);
    tir_analyzer *a = tir_analyzer_create(ctx);
    sch_bind_ancestors(s, a, s->srefs[bi].parent);
    const tir_expr *cond = NULL;
    *other = false;
    for (int i = 0; i < b->niters; i++) {
        if (b->iters[i].kind != TIR_ITER_REDUCE) continue;
        const tir_expr *ext = b->iters[i].dom.extent;
        const tir_expr *pos = tir_gt(ctx, ext, tir_int(ctx, ext->dtype, 0));
        if (tir_analyzer_can_prove(a, pos)) continue;
        *other |= !sch_params_only(s->func, ext);
        cond = cond ? tir_and(ctx, cond, pos) : pos;
    }
    tir_analyzer_destroy(a);
    return cond;
}

const char *sch_may_skip_elements(const tir_schedule *s, int wi, const tir_buffer *buf) {
    tir_ctx *ctx = s->ctx;
    for (int k = 0; k < s->nsrefs; k++) {
        const tir_block *w = sch_sref_block(s, k);
        if (!w || (k != wi && !sch_is_ancestor(s, wi, k)) ||
            !sch_region_has(w->nwrites, w->writes, buf))
            continue;
        bool other;
        const tir_expr *nonempty = sch_reduce_nonempty(s, k, &other);
        if (nonempty)
            return tir_ctx_sprintf(ctx, "block \"%s\" writes nothing where %s fails", w->name,
                                   tir_print(ctx, nonempty));
        ir_vec conj = {0};
        sch_conjuncts(s->srefs[k].realize->predicate, &conj);
        const char *why = NULL;
        for (int j = 0; j < conj.n && !why; j++)
            if (!sch_conj_keeps_writes(s, k, conj.items[j]))
                why = tir_ctx_sprintf(ctx, "block \"%s\" runs under %s", w->name,
                                      tir_print(ctx, conj.items[j]));
        ir_vec_free(&conj);
        if (why) return why;
    }
    return NULL;
}
