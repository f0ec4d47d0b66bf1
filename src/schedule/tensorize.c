/* tensorize.c: replace a block's computation by a tensor intrinsic (TVM's
 * Tensorize, src/tir/schedule/primitive/blockize_tensorize.cc).
 *
 * The block (normally the outer block blockize made of a 16x8x16 tile) must
 * hold exactly what the intrinsic's description holds: the same loops
 * (extents, order, kind), one block with the same iterators (kinds,
 * domains, bindings) and the same body (statements, operators, dtypes,
 * casts, constants), each description buffer standing for one program
 * buffer of the same dtype and scope (a description buffer of scope global
 * stands for any non-fragment scope), accessed at the description's index
 * plus the origin of the program buffer's region in the block (its
 * reads/writes), checked with the analyzer.  Program buffers may have more
 * dimensions than the description's: the leading ones stay at the origin
 * (TVM's match_buffer offset).  On a match the block keeps its iterators,
 * bindings and regions, and its body becomes the implementation's
 * statement.  The inner block's predicate may only bound spatial
 * iterators (a ragged tile: the tile intrinsics clip, docs/tensor-cores.md);
 * fragment buffers must be touched at tile origins and are padded to whole
 * tiles, so that the logical intrinsics (which read and write whole tiles)
 * stay inside them.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched_internal.h"

/* Overloads of one name tried at most. */
#define TZ_MAX_OVERLOADS 8
/* Loops and iterators of a description at most. */
#define TZ_MAX_VARS 64

typedef struct tz {
    tir_ctx *ctx;
    tir_analyzer *a;
    const tir_block *ob; /* the block tensorized */
    const tir_prim_func *desc;
    int nd;                      /* description buffer parameters */
    const tir_buffer **dbuf;     /* [nd] */
    const tir_buffer **pbuf;     /* [nd] the program buffer each matched, or NULL */
    const tir_expr *const **org; /* [nd] its region's origin (pbuf ndim entries) */
    int nv;
    const tir_var *dv[TZ_MAX_VARS]; /* description loop / iter vars ... */
    const tir_var *pv[TZ_MAX_VARS]; /* ... and the program's they stand for */
    int ninner;
    const tir_var *inner[TZ_MAX_VARS]; /* the program's loop vars below the block */
    char why[768];
    const void *mark; /* the program node that differs */
} tz;

static bool miss(tz *t, const void *mark, const char *fmt, ...) TIR_PRINTF(3, 4);
static bool miss(tz *t, const void *mark, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->why, sizeof t->why, fmt, ap);
    va_end(ap);
    t->mark = mark;
    return false;
}

static const char *dt_str(tir_ctx *ctx, tir_dtype d) {
    char buf[32];
    return tir_intern(ctx, tir_dtype_str(d, buf, sizeof buf));
}

static bool map_var(tz *t, const tir_var *d, const tir_var *p) {
    if (t->nv == TZ_MAX_VARS) return miss(t, NULL, "the intrinsic has too many loops");
    t->dv[t->nv] = d;
    t->pv[t->nv++] = p;
    return true;
}

/* The description expression in program variables. */
static const tir_expr *in_program(tz *t, const tir_expr *e) {
    const tir_expr *vals[TZ_MAX_VARS];
    for (int i = 0; i < t->nv; i++) vals[i] = &t->pv[i]->base;
    return (const tir_expr *)tir_substitute(t->ctx, e, t->nv, t->dv, vals);
}

/* ------------------------------------------------------------ the buffers */

/* The origin of buffer p's region in the block (writes first). */
static const tir_expr *const *origin_of(tz *t, const tir_buffer *p) {
    const tir_block *b = t->ob;
    const tir_buffer_region *r = NULL;
    for (int i = 0; i < b->nwrites && !r; i++)
        if (b->writes[i].buffer == p) r = &b->writes[i];
    for (int i = 0; i < b->nreads && !r; i++)
        if (b->reads[i].buffer == p) r = &b->reads[i];
    if (!r) return NULL;
    const tir_expr **o = IR_NEWN(t->ctx, const tir_expr *, r->ndim);
    for (int k = 0; k < r->ndim; k++) o[k] = r->ranges[k].min;
    return o;
}

/* Binds description buffer d to program buffer p (or checks the binding);
 * the index of d among the parameters, -1 on a mismatch. */
static int map_buffer(tz *t, const tir_buffer *d, const tir_buffer *p, const void *mark) {
    int i = 0;
    while (i < t->nd && t->dbuf[i] != d) i++;
    if (i == t->nd)
        return miss(t, mark, "the intrinsic's buffer %s is not a parameter of its description",
                    d->name),
               -1;
    if (t->pbuf[i]) {
        if (t->pbuf[i] == p) return i;
        return miss(t, mark, "buffer %s stands for the intrinsic's %s, which is %s elsewhere",
                    p->name, d->name, t->pbuf[i]->name),
               -1;
    }
    for (int j = 0; j < t->nd; j++)
        if (t->pbuf[j] == p)
            return miss(t, mark, "buffer %s stands for both %s and %s of the intrinsic", p->name,
                        t->dbuf[j]->name, d->name),
                   -1;
    if (!tir_dtype_eq(d->dtype, p->dtype))
        return miss(t, mark, "buffer %s: dtype %s, the intrinsic wants %s", p->name,
                    dt_str(t->ctx, p->dtype), dt_str(t->ctx, d->dtype)),
               -1;
    bool scope_ok = d->scope == TIR_SCOPE_GLOBAL ? !tir_scope_is_frag(p->scope)
                                                 : d->scope == p->scope;
    if (!scope_ok)
        return miss(t, mark, "buffer %s: scope %s, the intrinsic wants %s", p->name,
                    tir_scope_name(p->scope),
                    d->scope == TIR_SCOPE_GLOBAL ? "a non-fragment scope"
                                                 : tir_scope_name(d->scope)),
               -1;
    if (p->ndim < d->ndim)
        return miss(t, mark, "buffer %s has %d dimensions, the intrinsic's %s %d", p->name,
                    p->ndim, d->name, d->ndim),
               -1;
    const tir_expr *const *o = origin_of(t, p);
    if (!o)
        return miss(t, mark, "buffer %s is not in the reads or writes of block \"%s\"", p->name,
                    t->ob->name),
               -1;
    t->pbuf[i] = p;
    t->org[i] = o;
    return i;
}

/* Index k of an access to p (description buffer parameter i): origin +
 * the description's index (the origin alone on leading dimensions). */
static bool match_index(tz *t, const char *what, int i, int k, const tir_expr *didx,
                        const tir_expr *pidx, const void *mark) {
    const tir_buffer *p = t->pbuf[i];
    int lead = p->ndim - t->dbuf[i]->ndim;
    const tir_expr *want = t->org[i][k];
    if (k >= lead) {
        const tir_expr *d = in_program(t, didx);
        if (!tir_dtype_eq(d->dtype, want->dtype)) d = tir_cast_new(t->ctx, want->dtype, d);
        want = tir_add(t->ctx, want, d);
    }
    want = tir_analyzer_simplify(t->a, want);
    const tir_expr *p2 = pidx;
    if (!tir_dtype_eq(p2->dtype, want->dtype)) p2 = tir_cast_new(t->ctx, want->dtype, p2);
    if (sch_is_const(tir_analyzer_simplify(t->a, tir_sub(t->ctx, p2, want)), 0)) return true;
    return miss(t, mark, "%s: index %d of %s is %s, the intrinsic's is %s", what, k, p->name,
                tir_print(t->ctx, pidx), tir_print(t->ctx, want));
}

static bool match_access(tz *t, const char *what, const tir_buffer *d, int dn,
                         const tir_expr *const *didx, const tir_buffer *p, int pn,
                         const tir_expr *const *pidx, const void *mark) {
    int i = map_buffer(t, d, p, mark);
    if (i < 0) return false;
    TIR_ASSERT(pn == p->ndim && dn == d->ndim);
    int lead = p->ndim - d->ndim;
    for (int k = 0; k < pn; k++)
        if (!match_index(t, what, i, k, k >= lead ? didx[k - lead] : NULL, pidx[k], mark))
            return false;
    return true;
}

/* ------------------------------------------------------- the expressions */

static bool match_expr(tz *t, const char *what, const tir_expr *d, const tir_expr *p);

static bool kind_miss(tz *t, const char *what, const tir_expr *d, const tir_expr *p) {
    return miss(t, p, "%s: %s expected, found %s", what, tir_print(t->ctx, in_program(t, d)),
                tir_print(t->ctx, p));
}

static bool match_var(tz *t, const char *what, const tir_var *d, const tir_expr *p) {
    for (int i = 0; i < t->nv; i++)
        if (t->dv[i] == d)
            return &t->pv[i]->base == p ||
                   miss(t, p, "%s: %s expected, found %s", what, t->pv[i]->name,
                        tir_print(t->ctx, p));
    return miss(t, p, "%s: the intrinsic's variable %s is not one of its loops or iterators",
                what, d->name);
}

static bool match_operands(tz *t, const char *what, int n, const tir_expr *const *d,
                           const tir_expr *const *p) {
    for (int k = 0; k < n; k++) {
        const char *sub = tir_ctx_sprintf(t->ctx, "%s, operand %d", what, k);
        if (!match_expr(t, sub, d[k], p[k])) return false;
    }
    return true;
}

static bool match_expr(tz *t, const char *what, const tir_expr *d, const tir_expr *p) {
    if (d->kind != p->kind) return kind_miss(t, what, d, p);
    const tir_buffer_load *dl = tir_as_tir_buffer_load(d), *pl = tir_as_tir_buffer_load(p);
    if (dl) /* first, so that a wrong dtype is blamed on the buffer */
        return match_access(t, what, dl->buffer, dl->nidx, dl->indices, pl->buffer, pl->nidx,
                            pl->indices, p);
    if (!tir_dtype_eq(d->dtype, p->dtype))
        return miss(t, p, "%s: dtype %s, the intrinsic's is %s (%s)", what,
                    dt_str(t->ctx, p->dtype), dt_str(t->ctx, d->dtype), tir_print(t->ctx, p));
    if (tir_kind_is_binop((tir_kind)d->kind)) {
        const tir_binop *x = (const void *)d, *y = (const void *)p;
        const tir_expr *dx[2] = {x->a, x->b}, *px[2] = {y->a, y->b};
        return match_operands(t, what, 2, dx, px);
    }
    switch ((tir_kind)d->kind) {
    case TIR_KIND_INT_IMM:
        return ((const tir_int_imm *)d)->value == ((const tir_int_imm *)p)->value ||
               kind_miss(t, what, d, p);
    case TIR_KIND_FLOAT_IMM: {
        /* the bits: -0.0 is not the 0.0 of a fill, whose implementation
           stores +0.0 (== took them as one) */
        double x = ((const tir_float_imm *)d)->value, y = ((const tir_float_imm *)p)->value;
        return memcmp(&x, &y, sizeof x) == 0 || kind_miss(t, what, d, p);
    }
    case TIR_KIND_VAR: return match_var(t, what, (const tir_var *)d, p);
    case TIR_KIND_CAST:
        return match_expr(t, what, ((const tir_cast *)d)->value, ((const tir_cast *)p)->value);
    case TIR_KIND_NOT:
        return match_expr(t, what, ((const tir_not *)d)->a, ((const tir_not *)p)->a);
    case TIR_KIND_SELECT: {
        const tir_select *x = (const void *)d, *y = (const void *)p;
        const tir_expr *dx[3] = {x->cond, x->t, x->f}, *px[3] = {y->cond, y->t, y->f};
        return match_operands(t, what, 3, dx, px);
    }
    case TIR_KIND_CALL: {
        const tir_call *x = (const void *)d, *y = (const void *)p;
        if (x->op != y->op || x->nargs != y->nargs) return kind_miss(t, what, d, p);
        return match_operands(t, what, x->nargs, x->args, y->args);
    }
    default:
        return miss(t, p, "%s: %s is not supported in a tensor intrinsic's description", what,
                    tir_kind_name((tir_kind)d->kind));
    }
}

/* ------------------------------------------------------- the statements */

static bool match_stmt(tz *t, const tir_stmt *d, const tir_stmt *p) {
    if (d->kind != p->kind)
        return miss(t, p, "body: %s expected, found %s", tir_kind_name((tir_kind)d->kind),
                    tir_kind_name((tir_kind)p->kind));
    switch ((tir_kind)d->kind) {
    case TIR_KIND_BUFFER_STORE: {
        const tir_buffer_store *x = (const void *)d, *y = (const void *)p;
        return match_access(t, "store", x->buffer, x->nidx, x->indices, y->buffer, y->nidx,
                            y->indices, p) &&
               match_expr(t, "store value", x->value, y->value);
    }
    case TIR_KIND_EVALUATE:
        return match_expr(t, "evaluate", ((const tir_evaluate *)d)->value,
                          ((const tir_evaluate *)p)->value);
    case TIR_KIND_SEQ: {
        const tir_seq *x = (const void *)d, *y = (const void *)p;
        if (x->n != y->n)
            return miss(t, p, "body: %d statements, the intrinsic's has %d", y->n, x->n);
        for (int i = 0; i < x->n; i++)
            if (!match_stmt(t, x->stmts[i], y->stmts[i])) return false;
        return true;
    }
    default:
        return miss(t, p, "body: %s is not supported in a tensor intrinsic's description",
                    tir_kind_name((tir_kind)d->kind));
    }
}

/* The description's loops and inner realize: its body, or the body of its
 * root block, is a chain of loops ending in one block realize. */
static bool desc_inner(const tir_prim_func *f, const tir_stmt **loops_top,
                       const tir_block_realize **inner) {
    const tir_stmt *st = f->body;
    const tir_block_realize *r = tir_as_tir_block_realize(st);
    if (r && r->block->niters == 0 && tir_as_tir_for(r->block->body)) st = r->block->body;
    *loops_top = st;
    while (tir_as_tir_for(st)) st = tir_as_tir_for(st)->body;
    *inner = tir_as_tir_block_realize(st);
    return *inner != NULL;
}

static bool match_iters(tz *t, const tir_block_realize *dr, const tir_block_realize *pr) {
    const tir_block *db = dr->block, *pb = pr->block;
    if (db->niters != pb->niters)
        return miss(t, pb, "block \"%s\" has %d iterators, the intrinsic's %d", pb->name,
                    pb->niters, db->niters);
    for (int k = 0; k < db->niters; k++) {
        const tir_iter_var *x = &db->iters[k], *y = &pb->iters[k];
        int64_t de = 0, pe = -1;
        tir_expr_const_int(x->dom.extent, &de);
        if (x->kind != y->kind)
            return miss(t, pb, "iterator %d (%s): %s, the intrinsic's is %s", k, y->var->name,
                        y->kind == TIR_ITER_REDUCE ? "reduce" : "spatial",
                        x->kind == TIR_ITER_REDUCE ? "reduce" : "spatial");
        if (!sch_is_const(y->dom.min, 0) || !tir_expr_const_int(y->dom.extent, &pe) || pe != de)
            return miss(t, pb, "iterator %d (%s): domain [%s, %s + %s), the intrinsic's is [0, %lld)",
                        k, y->var->name, tir_print(t->ctx, y->dom.min),
                        tir_print(t->ctx, y->dom.min), tir_print(t->ctx, y->dom.extent),
                        (long long)de);
        const tir_expr *want = in_program(t, dr->values[k]);
        if (!sch_is_const(tir_analyzer_simplify(t->a, tir_sub(t->ctx, pr->values[k], want)), 0))
            return miss(t, pb, "iterator %d (%s): bound to %s, the intrinsic's to %s", k,
                        y->var->name, tir_print(t->ctx, pr->values[k]),
                        tir_print(t->ctx, want));
        tir_analyzer_bind_const(t->a, y->var, 0, pe);
    }
    for (int k = 0; k < db->niters; k++)
        if (!map_var(t, db->iters[k].var, pb->iters[k].var)) return false;
    return true;
}

static bool match_loops(tz *t, const tir_stmt *d, const tir_stmt *p,
                        const tir_block_realize **dinner, const tir_block_realize **pinner) {
    for (int depth = 0; tir_as_tir_for(d); depth++) {
        const tir_for *x = tir_as_tir_for(d), *y = tir_as_tir_for(p);
        if (!y)
            return miss(t, p, "loop %d: %s found where the intrinsic has a loop of extent %s",
                        depth, tir_kind_name((tir_kind)p->kind), tir_print(t->ctx, x->extent));
        int64_t de = 0, pe = -1;
        tir_expr_const_int(x->extent, &de);
        if (!tir_expr_const_int(y->extent, &pe) || pe != de)
            return miss(t, y, "loop %d (%s): extent %s, the intrinsic's is %lld", depth,
                        y->var->name, tir_print(t->ctx, y->extent), (long long)de);
        if (!sch_is_const(y->min, 0))
            return miss(t, y, "loop %d (%s): starts at %s, not 0", depth, y->var->name,
                        tir_print(t->ctx, y->min));
        if (y->kind != TIR_FOR_SERIAL && y->kind != TIR_FOR_UNROLLED)
            return miss(t, y, "loop %d (%s): %s, the intrinsic's loops are serial", depth,
                        y->var->name, tir_for_kind_name(y->kind));
        if (!map_var(t, x->var, y->var)) return false;
        tir_analyzer_bind_const(t->a, y->var, 0, pe);
        t->inner[t->ninner++] = y->var;
        d = x->body;
        p = y->body;
    }
    *dinner = tir_as_tir_block_realize(d);
    *pinner = tir_as_tir_block_realize(p);
    if (!*pinner)
        return miss(t, p, "%s found where the intrinsic has its block",
                    tir_kind_name((tir_kind)p->kind));
    return true;
}

/* Matches the block's body against one description; t->why on failure. */
static bool match_desc(tz *t, const tir_block_realize **pinner) {
    const tir_stmt *dtop;
    const tir_block_realize *dr;
    TIR_ASSERT(desc_inner(t->desc, &dtop, &dr)); /* checked by the caller */
    if (!match_loops(t, dtop, t->ob->body, &dr, pinner)) return false;
    const tir_block_realize *pr = *pinner;
    if (pr->block->init)
        return miss(t, pr->block, "block \"%s\" has an init: decompose_reduction first",
                    pr->block->name);
    if (pr->block->nallocs)
        return miss(t, pr->block, "block \"%s\" allocates buffers", pr->block->name);
    return match_iters(t, dr, pr) && match_stmt(t, dr->block->body, pr->block->body);
}

/* ------------------------------------------------------------- the entry */

typedef struct tz_call {
    sch_call *c;
    uint32_t rv;
    int bi;
    const tir_block_realize *realize;
    const char *name;
} tz_call;

static tz *tz_new(tz_call *k, const tir_prim_func *desc) {
    tir_ctx *ctx = k->c->ctx;
    tz *t = IR_NEWN(ctx, tz, 1);
    t->ctx = ctx;
    t->ob = k->realize->block;
    t->desc = desc;
    for (int i = 0; i < desc->nparams; i++) t->nd += desc->buffer_map[i] != NULL;
    t->dbuf = IR_NEWN(ctx, const tir_buffer *, t->nd);
    t->pbuf = IR_NEWN(ctx, const tir_buffer *, t->nd);
    t->org = IR_NEWN(ctx, const tir_expr *const *, t->nd);
    int n = 0;
    for (int i = 0; i < desc->nparams; i++)
        if (desc->buffer_map[i]) t->dbuf[n++] = desc->buffer_map[i];
    t->a = tir_analyzer_create(ctx);
    sch_bind_ancestors(k->c->sch, t->a, k->bi);
    for (int i = 0; i < t->ob->niters; i++)
        tir_analyzer_bind(t->a, t->ob->iters[i].var, t->ob->iters[i].dom.min,
                          t->ob->iters[i].dom.extent);
    return t;
}

/* The ragged rule: every conjunct of the inner predicate is X < E with X
 * = (something outside the tile) + the binding of a spatial iterator. */
static tir_status check_predicate(tz_call *k, tz *t, const tir_block_realize *pr) {
    ir_vec conj = {0};
    sch_conjuncts(pr->predicate, &conj);
    tir_status st = TIR_OK;
    for (int j = 0; j < conj.n && st == TIR_OK; j++) {
        const tir_expr *e = conj.items[j];
        const tir_binop *lt = e->kind == TIR_KIND_LT ? (const tir_binop *)e : NULL;
        bool inner_rhs = false;
        for (int v = 0; lt && v < t->ninner; v++) inner_rhs |= tir_uses_var(lt->b, t->inner[v]);
        int it = -1;
        for (int v = 0; lt && !inner_rhs && v < pr->nvalues && it < 0; v++) {
            const tir_expr *rest = tir_analyzer_simplify(t->a, tir_sub(t->ctx, lt->a, pr->values[v]));
            bool uses = false;
            for (int w = 0; w < t->ninner; w++) uses |= tir_uses_var(rest, t->inner[w]);
            bool any = false;
            for (int w = 0; w < t->ninner; w++) any |= tir_uses_var(pr->values[v], t->inner[w]);
            if (!uses && any) it = v;
        }
        if (it < 0)
            st = sch_fail(k->c, TIR_ERR_SCHED_TENSORIZE_PREDICATE, k->rv, pr->block,
                          "the predicate %s of block \"%s\" does not bound one spatial iterator "
                          "(only the bounds a non-dividing split adds may be dropped)",
                          tir_print(t->ctx, e), pr->block->name);
        else if (pr->block->iters[it].kind == TIR_ITER_REDUCE)
            st = sch_fail(k->c, TIR_ERR_SCHED_TENSORIZE_PREDICATE, k->rv, pr->block,
                          "the predicate %s of block \"%s\" bounds reduction iterator %s: split "
                          "that loop by a factor dividing its extent",
                          tir_print(t->ctx, e), pr->block->name, pr->block->iters[it].var->name);
    }
    ir_vec_free(&conj);
    return st;
}

/* Fragment buffers: tile-aligned origins, constant shapes; *pad gets the
 * buffer padded to whole tiles where it is not (NULL: as is). */
static tir_status check_tiles(tz_call *k, tz *t, const tir_buffer **pad) {
    for (int i = 0; i < t->nd; i++) {
        const tir_buffer *p = t->pbuf[i];
        pad[i] = NULL;
        if (!tir_scope_is_frag(p->scope)) continue;
        tir_frag_layout l;
        int64_t sh[2];
        if (!tir_frag_layout_of(p->scope, p->dtype, &l) || p->ndim < 2 ||
            !tir_expr_const_int(p->shape[p->ndim - 2], &sh[0]) ||
            !tir_expr_const_int(p->shape[p->ndim - 1], &sh[1]))
            return sch_fail(k->c, TIR_ERR_SCHED_FRAG_TILE, k->rv, t->ob,
                            "fragment %s needs two constant trailing dimensions and a dtype its "
                            "scope %s holds (%s)",
                            p->name, tir_scope_name(p->scope), dt_str(t->ctx, p->dtype));
        int tile[2] = {l.tile_rows, l.tile_cols};
        for (int d = 0; d < 2; d++) {
            const tir_expr *o = t->org[i][p->ndim - 2 + d];
            const tir_expr *m = tir_floormod(t->ctx, o, tir_int(t->ctx, o->dtype, tile[d]));
            if (!sch_is_const(tir_analyzer_simplify(t->a, m), 0))
                return sch_fail(k->c, TIR_ERR_SCHED_FRAG_TILE, k->rv, t->ob,
                                "fragment %s is accessed from %s in dimension %d, which is not "
                                "provably a multiple of its %dx%d tile",
                                p->name, tir_print(t->ctx, o), p->ndim - 2 + d, l.tile_rows,
                                l.tile_cols);
        }
        if (sh[0] % tile[0] == 0 && sh[1] % tile[1] == 0) continue;
        if (sch_is_param_buffer(k->c->sch->func, p))
            return sch_fail(k->c, TIR_ERR_SCHED_FRAG_TILE, k->rv, t->ob,
                            "fragment parameter %s does not hold whole %dx%d tiles", p->name,
                            l.tile_rows, l.tile_cols);
        tir_buffer_desc bd;
        tir_buffer_describe(p, &bd);
        const tir_expr **shape = IR_NEWN(t->ctx, const tir_expr *, p->ndim);
        memcpy(shape, p->shape, sizeof *shape * (size_t)p->ndim);
        for (int d = 0; d < 2; d++) {
            int64_t r = (sh[d] + tile[d] - 1) / tile[d] * tile[d];
            shape[p->ndim - 2 + d] = tir_int(t->ctx, p->shape[p->ndim - 2 + d]->dtype, r);
        }
        bd.shape = shape;
        pad[i] = tir_buffer_new(t->ctx, &bd);
    }
    return TIR_OK;
}

/* Tries each overload; the first that matches is left in *out. */
static tir_status find_match(tz_call *k, tz **out, tir_intrin_impl_fn *impl_out) {
    tir_intrin_desc_fn descs[TZ_MAX_OVERLOADS];
    tir_intrin_impl_fn impls[TZ_MAX_OVERLOADS];
    int n = sch_intrin_lookup(k->name, TZ_MAX_OVERLOADS, descs, impls);
    if (n == 0)
        return sch_fail(k->c, TIR_ERR_SCHED_UNKNOWN_INTRIN, k->rv, k->realize->block,
                        "no tensor intrinsic is registered as \"%s\"", k->name);
    const tir_block *ob = k->realize->block;
    if (ob->init)
        return sch_fail(k->c, TIR_ERR_SCHED_TENSORIZE_INIT, k->rv, ob,
                        "block \"%s\" has an init: decompose_reduction first", ob->name);
    char why[2048] = "";
    const void *mark = ob;
    for (int o = 0; o < n; o++) {
        const tir_prim_func *desc = descs[o](k->c->ctx);
        const tir_stmt *top;
        const tir_block_realize *dr;
        if (!desc || !desc_inner(desc, &top, &dr))
            return sch_fail(k->c, TIR_ERR_SCHED_BAD_INTRIN, k->rv, ob,
                            "the description of \"%s\" is not loops around one block", k->name);
        tz *t = tz_new(k, desc);
        const tir_block_realize *pr = NULL;
        if (match_desc(t, &pr)) {
            *out = t;
            *impl_out = impls[o];
            return check_predicate(k, t, pr);
        }
        tir_analyzer_destroy(t->a);
        if (pr && pr->block->init)
            return sch_fail(k->c, TIR_ERR_SCHED_TENSORIZE_INIT, k->rv, pr->block, "%s", t->why);
        if (o == 0 && t->mark) mark = t->mark;
        size_t len = strlen(why);
        snprintf(why + len, sizeof why - len, "%s%s", o ? "; or " : "", t->why);
    }
    return sch_fail(k->c, TIR_ERR_SCHED_TENSORIZE_MISMATCH, k->rv, mark,
                    "block \"%s\" does not match tensor intrinsic \"%s\": %s", ob->name, k->name,
                    why);
}

static tir_status tensorize_block(tz_call *k) {
    tz *t = NULL;
    tir_intrin_impl_fn impl = NULL;
    tir_status st = find_match(k, &t, &impl);
    const tir_buffer **pad = NULL;
    if (st == TIR_OK) {
        pad = IR_NEWN(k->c->ctx, const tir_buffer *, t->nd);
        st = check_tiles(k, t, pad);
    }
    if (t) tir_analyzer_destroy(t->a);
    if (st != TIR_OK) return st;
    tir_ctx *ctx = k->c->ctx;
    const tir_stmt *body = impl(ctx, t->pbuf, t->org);
    TIR_ASSERT(body);
    tir_block_desc bd;
    tir_block_describe(t->ob, &bd);
    bd.body = body;
    const tir_block_realize *r = k->realize;
    const tir_stmt *nr =
        tir_block_realize_new(ctx, r->nvalues, r->values, r->predicate, tir_block_new(ctx, &bd));
    const tir_stmt *olds[1] = {&r->base}, *news[1] = {nr};
    const tir_prim_func *f = sch_replace(k->c, 1, olds, news);
    const tir_buffer **po = IR_NEWN(ctx, const tir_buffer *, t->nd);
    const tir_buffer **pn = IR_NEWN(ctx, const tir_buffer *, t->nd);
    int np = 0;
    for (int i = 0; i < t->nd; i++)
        if (pad[i]) {
            po[np] = t->pbuf[i];
            pn[np++] = pad[i];
        }
    if (np) f = (const tir_prim_func *)tir_replace_buffers(ctx, f, np, po, pn);
    k->c->func = f;
    return TIR_OK;
}

tir_status sch_prim_tensorize(sch_call *c) {
    uint32_t rv = c->args[0].rv;
    int bi = sch_block_sref(c, rv);
    tz_call k = {c, rv, bi, c->sch->srefs[bi].realize, c->args[1].s};
    if (!k.realize)
        return sch_fail(c, TIR_ERR_SCHED_TENSORIZE_MISMATCH, rv, sch_sref_block(c->sch, bi),
                        "the root block cannot be tensorized");
    return tensorize_block(&k);
}

tir_status tir_sched_tensorize(tir_schedule *s, tir_block_rv block, const char *intrin) {
    if (!s || !intrin) return sch_bad_arg(s, "tensorize", "intrin is NULL");
    sch_arg args[2] = {SCH_RV(block), {.s = intrin}};
    return sch_run(s, SCH_INST_tensorize, args, NULL, NULL);
}

tir_status tir_sched_tensorize_loop(tir_schedule *s, tir_loop_rv loop, const char *intrin) {
    if (!s || !intrin) return sch_bad_arg(s, "tensorize", "intrin is NULL");
    /* blockize, then tensorize the new block; all or nothing */
    sch_snapshot snap;
    sch_snapshot_take(s, &snap);
    tir_block_rv b;
    tir_status st = tir_sched_blockize(s, loop, &b);
    if (st == TIR_OK) st = tir_sched_tensorize(s, b, intrin);
    if (st != TIR_OK) {
        tir_ctx *ctx = s->ctx;
        char *msg = strdup(tir_ctx_error(ctx));
        sch_snapshot_restore(s, &snap);
        tir_ctx_fail(ctx, st, "%s", msg ? msg : "");
        free(msg);
        return st;
    }
    sch_snapshot_free(&snap);
    return TIR_OK;
}
