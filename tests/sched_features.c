/* sched_features.c: predicates, empty reduce domains and accumulations
 * added to one block of a definition (see sched_features.h).
 *
 * The definitions the fuzzer draws are a root block whose body holds one
 * loop nest per block, each loop bound to one iterator; the features are
 * written on that shape: a site is a block with the loops around it, and
 * the rewrite rebuilds that block, the reduce loop whose extent changes,
 * the root block (an allocation promoted to a parameter) and the
 * function (the new parameters).
 */
#include <string.h>

#include "sched_check.h"
#include "sched_features.h"

enum { MAX_SITES = 16, MAX_LOOPS = 16 };

static int64_t rnd(uint64_t *r, int64_t lo, int64_t hi) {
    return lo + (int64_t)(sched_rand(r) % (uint64_t)(hi - lo + 1));
}

/* ------------------------------------------------------------ the sites */

typedef struct {
    const tir_block_realize *br;
    const tir_for *loops[MAX_LOOPS];
    int nloops;
} feat_site;

typedef struct {
    tir_visitor v;
    const tir_for *stack[MAX_LOOPS];
    int depth;
    feat_site sites[MAX_SITES];
    int nsites;
} site_walk;

static bool site_pre(tir_visitor *v, const tir_node *n) {
    site_walk *w = (site_walk *)v;
    if (n->kind == TIR_KIND_FOR) {
        if (w->depth < MAX_LOOPS) w->stack[w->depth] = (const tir_for *)n;
        w->depth++;
    } else if (n->kind == TIR_KIND_BLOCK_REALIZE && w->nsites < MAX_SITES &&
               w->depth <= MAX_LOOPS) {
        feat_site *s = &w->sites[w->nsites++];
        s->br = (const tir_block_realize *)n;
        s->nloops = w->depth;
        memcpy(s->loops, w->stack, sizeof *s->loops * (size_t)w->depth);
    }
    return !tir_kind_is_expr((tir_kind)n->kind);
}

static void site_post(tir_visitor *v, const tir_node *n) {
    if (n->kind == TIR_KIND_FOR) ((site_walk *)v)->depth--;
}

static bool is_param(const tir_prim_func *f, const tir_buffer *b) {
    for (int p = 0; p < f->nparams; p++)
        if (f->buffer_map[p] == b) return true;
    return false;
}

static bool is_alloc(const tir_block *root, const tir_buffer *b) {
    for (int i = 0; i < root->nallocs; i++)
        if (root->allocs[i] == b) return true;
    return false;
}

/* A block can take the features when everything it writes is the
 * caller's or can become the caller's (a root allocation): its old values
 * are then data, not an unwritten intermediate. */
static bool site_ok(const tir_prim_func *f, const tir_block *root, const feat_site *s) {
    const tir_block *b = s->br->block;
    if (b->nwrites < 1 || b->niters < 1) return false;
    for (int i = 0; i < b->nwrites; i++)
        if (!is_param(f, b->writes[i].buffer) && !is_alloc(root, b->writes[i].buffer))
            return false;
    return true;
}

/* -------------------------------------------------------------- choices */

/* What to do to the site's block, filled by the draws below. */
typedef struct {
    tir_ctx *ctx;
    const feat_site *site;
    const tir_var *n;          /* the scalar parameter, once needed */
    const tir_expr *pred;      /* conjoined to the realize's predicate */
    const tir_for *red_loop;   /* the reduce loop whose extent changes */
    const tir_expr *red_ext;   /* its new extent (and its iterator's) */
    int red_iter;              /* that iterator's index */
    bool accumulate;
    unsigned what;
} feat_plan;

static const tir_var *scalar_n(feat_plan *p) {
    if (!p->n) p->n = tir_var_new(p->ctx, "n", TIR_I32);
    return p->n;
}

static int64_t const_or(const tir_expr *e, int64_t dflt) {
    int64_t v;
    return tir_expr_const_int(e, &v) ? v : dflt;
}

/* The index of the iterator bound to exactly the loop var of l, or -1. */
static int iter_of_loop(const tir_block_realize *br, const tir_for *l) {
    for (int i = 0; i < br->nvalues; i++)
        if (br->values[i] == &l->var->base) return i;
    return -1;
}

/* One term: n > c, l % 2 == p or l < c (c up to the loop's extent, so
 * that a term may also only bound the loop). */
static const tir_expr *pred_term(feat_plan *p, uint64_t *r) {
    tir_ctx *ctx = p->ctx;
    const feat_site *s = p->site;
    int kind = s->nloops ? (int)rnd(r, 0, 2) : 0;
    if (kind == 0) {
        const tir_var *n = scalar_n(p);
        return tir_gt(ctx, &n->base, tir_int(ctx, n->base.dtype, rnd(r, 0, 2)));
    }
    const tir_for *l = s->loops[rnd(r, 0, s->nloops - 1)];
    const tir_expr *v = &l->var->base;
    tir_dtype t = v->dtype;
    if (kind == 1)
        return tir_eq(ctx, tir_mod(ctx, v, tir_int(ctx, t, 2)), tir_int(ctx, t, rnd(r, 0, 1)));
    int64_t ext = const_or(l->extent, 1);
    return tir_lt(ctx, v, tir_int(ctx, t, rnd(r, 1, ext > 1 ? ext : 1)));
}

static void plan_pred(feat_plan *p, uint64_t *r) {
    p->pred = pred_term(p, r);
    if (rnd(r, 0, 2) == 0) p->pred = tir_and(p->ctx, p->pred, pred_term(p, r));
    p->what |= SCHED_FEAT_PRED;
}

/* A reduce loop of extent K bound alone to its iterator's [0, K) gets the
 * extent n (K >= 3: n runs at 0..3) or a spatial loop i outside it,
 * min(i, K) where i may pass K.  False where the block has none. */
static bool plan_empty(feat_plan *p, uint64_t *r) {
    const feat_site *s = p->site;
    const tir_block *b = s->br->block;
    int cands[MAX_LOOPS], nc = 0;
    for (int li = 0; li < s->nloops; li++) {
        int it = iter_of_loop(s->br, s->loops[li]);
        if (it >= 0 && b->iters[it].kind == TIR_ITER_REDUCE &&
            const_or(s->loops[li]->min, -1) == 0 && const_or(b->iters[it].dom.min, -1) == 0 &&
            const_or(b->iters[it].dom.extent, -1) == const_or(s->loops[li]->extent, -2))
            cands[nc++] = li;
    }
    if (!nc) return false;
    int li = cands[rnd(r, 0, nc - 1)];
    const tir_for *l = s->loops[li];
    int64_t K = const_or(l->extent, 0);
    /* spatial loops outside l, bound alone to a spatial iterator */
    int outer[MAX_LOOPS], no = 0;
    for (int o = 0; o < li; o++) {
        int it = iter_of_loop(s->br, s->loops[o]);
        if (it >= 0 && b->iters[it].kind == TIR_ITER_SPATIAL &&
            const_or(s->loops[o]->min, -1) == 0 &&
            tir_dtype_eq(s->loops[o]->var->base.dtype, l->var->base.dtype))
            outer[no++] = o;
    }
    bool scalar = K >= 3 && tir_dtype_eq(l->var->base.dtype, TIR_I32) && (!no || rnd(r, 0, 1));
    if (!scalar && !no) return false;
    p->red_loop = l;
    p->red_iter = iter_of_loop(s->br, l);
    if (scalar) {
        p->red_ext = &scalar_n(p)->base;
        p->what |= SCHED_FEAT_SCALAR_EXT;
        return true;
    }
    const tir_for *i = s->loops[outer[rnd(r, 0, no - 1)]];
    const tir_expr *iv = &i->var->base;
    p->red_ext = const_or(i->extent, K + 2) - 1 <= K
                     ? iv
                     : tir_min(p->ctx, iv, tir_int(p->ctx, iv->dtype, K));
    p->what |= SCHED_FEAT_TRIANGLE;
    return true;
}

/* A reduction's init dropped, or an elementwise store made X = X + v. */
static bool plan_accumulate(feat_plan *p) {
    const tir_block *b = p->site->br->block;
    bool ok = b->init != NULL;
    if (!ok && b->body->kind == TIR_KIND_BUFFER_STORE) {
        const tir_buffer_store *st = (const tir_buffer_store *)b->body;
        tir_dtype t = st->value->dtype;
        ok = st->buffer == b->writes[0].buffer && t.lanes == 1 &&
             (t.code == TIR_TYPE_FLOAT || t.code == TIR_TYPE_INT);
    }
    if (ok) {
        p->accumulate = true;
        p->what |= SCHED_FEAT_ACCUMULATE;
    }
    return ok;
}

/* ----------------------------------------------------------- rewriting */

/* The block with the plan's changes: the new reduce domain, no init (or
 * the accumulating store) and its outputs among its reads. */
static const tir_block *rewrite_block(const feat_plan *p, const tir_block *b) {
    tir_ctx *ctx = p->ctx;
    tir_block_desc d;
    tir_block_describe(b, &d);
    tir_iter_var iters[MAX_LOOPS + 8];
    if (b->niters > (int)(sizeof iters / sizeof *iters)) return b;
    memcpy(iters, b->iters, sizeof *iters * (size_t)b->niters);
    if (p->red_loop) iters[p->red_iter].dom.extent = p->red_ext;
    d.iters = iters;
    tir_buffer_region reads[32];
    if (p->accumulate && b->nreads + b->nwrites <= 32) {
        memcpy(reads, b->reads, sizeof *reads * (size_t)b->nreads);
        int nr = b->nreads;
        for (int w = 0; w < b->nwrites; w++) {
            bool have = false;
            for (int i = 0; i < b->nreads; i++) have |= b->reads[i].buffer == b->writes[w].buffer;
            if (!have) reads[nr++] = b->writes[w];
        }
        d.reads = reads;
        d.nreads = nr;
        if (b->init) {
            d.init = NULL;
        } else {
            const tir_buffer_store *st = (const tir_buffer_store *)b->body;
            const tir_expr *old = tir_load(ctx, st->buffer, st->nidx, st->indices);
            d.body = tir_store(ctx, st->buffer, tir_add(ctx, old, st->value), st->nidx,
                               st->indices);
        }
    }
    return tir_block_new(ctx, &d);
}

static const tir_node *mut_for(tir_mutator *m, const tir_node *n) {
    const feat_plan *p = m->user;
    const tir_for *x = (const tir_for *)tir_mutate_default(m, n);
    if ((const tir_node *)p->red_loop != n) return (const tir_node *)x;
    return (const tir_node *)tir_for_new(m->ctx, x->var, x->min, p->red_ext, x->kind,
                                         x->thread_tag, x->nannots, x->annots, x->body);
}

static const tir_node *mut_realize(tir_mutator *m, const tir_node *n) {
    const feat_plan *p = m->user;
    const tir_block_realize *br = (const tir_block_realize *)n;
    if (br != p->site->br) return tir_mutate_default(m, n);
    const tir_expr *pred = br->predicate;
    if (p->pred) pred = const_or(pred, 0) == 1 ? p->pred : tir_and(m->ctx, pred, p->pred);
    return (const tir_node *)tir_block_realize_new(m->ctx, br->nvalues, br->values, pred,
                                                   rewrite_block(p, br->block));
}

/* The function with the rewritten root body, the block's allocated
 * outputs moved to the parameters and n after them. */
static const tir_prim_func *rebuild(feat_plan *p, const tir_prim_func *f,
                                    const tir_block_realize *rr) {
    tir_ctx *ctx = p->ctx;
    const tir_block *root = rr->block, *b = p->site->br->block;
    tir_mutator m = {.ctx = ctx, .user = p};
    m.on[TIR_KIND_FOR] = mut_for;
    m.on[TIR_KIND_BLOCK_REALIZE] = mut_realize;
    tir_block_desc d;
    tir_block_describe(root, &d);
    d.body = tir_mutate_stmt(&m, root->body);
    enum { MAXP = 64 };
    const tir_buffer *allocs[MAXP], *bmap[MAXP];
    const tir_var *params[MAXP];
    int na = 0, np = f->nparams;
    if (np + b->nwrites + 1 > MAXP || root->nallocs > MAXP) return f;
    memcpy(params, f->params, sizeof *params * (size_t)np);
    memcpy(bmap, f->buffer_map, sizeof *bmap * (size_t)np);
    for (int i = 0; i < root->nallocs; i++) {
        bool out = false;
        for (int w = 0; w < b->nwrites; w++) out |= b->writes[w].buffer == root->allocs[i];
        if (!out) {
            allocs[na++] = root->allocs[i];
            continue;
        }
        params[np] = tir_var_new(ctx, root->allocs[i]->name, TIR_HANDLE);
        bmap[np++] = root->allocs[i];
        p->what |= SCHED_FEAT_PROMOTED;
    }
    d.allocs = allocs;
    d.nallocs = na;
    if (p->n) {
        params[np] = p->n;
        bmap[np++] = NULL;
    }
    const tir_stmt *body = tir_block_realize_new(ctx, rr->nvalues, rr->values, rr->predicate,
                                                 tir_block_new(ctx, &d));
    return tir_prim_func_new(ctx, f->name, np, params, bmap, body, f->nattrs, f->attrs);
}

const tir_prim_func *sched_add_features(tir_ctx *ctx, const tir_prim_func *f, uint64_t *rng,
                                        unsigned *what) {
    *what = 0;
    const tir_block_realize *rr = tir_as_tir_block_realize(f->body);
    for (int p = 0; p < f->nparams; p++)
        if (!f->buffer_map[p]) return f; /* one scalar n per function */
    if (!rr) return f;
    site_walk w = {{site_pre, site_post, NULL}, {0}, 0, {{0}}, 0};
    tir_visit(&w.v, rr->block->body);
    int ok[MAX_SITES], nok = 0;
    for (int i = 0; i < w.nsites; i++)
        if (site_ok(f, rr->block, &w.sites[i])) ok[nok++] = i;
    if (!nok) return f;
    feat_plan p = {.ctx = ctx, .site = &w.sites[ok[rnd(rng, 0, nok - 1)]]};
    bool pred = rnd(rng, 0, 1), empty = rnd(rng, 0, 1), acc = rnd(rng, 0, 2) == 0;
    if (empty) empty = plan_empty(&p, rng);
    if (acc) acc = plan_accumulate(&p);
    if (pred || (!empty && !acc)) plan_pred(&p, rng);
    const tir_prim_func *g = rebuild(&p, f, rr);
    if (tir_verify(ctx, g) != TIR_OK) return NULL;
    *what = p.what;
    return g;
}
