/* sw_pipeline.c: software pipelining of loops annotated with
 * "software_pipeline_stage" / "software_pipeline_order" and optionally
 * "software_pipeline_async_stages" (TVM: InjectSoftwarePipeline +
 * InjectPTXAsyncCopy).  It runs after flatten and vectorize, so it sees
 * flat buffers and vector copies.
 *
 * The components are the statements of the loop body (Allocate wrappers
 * looked through).  Component i runs in stage s_i; with S the largest
 * stage, "time" t runs over [min, min + extent + S) and at time t component
 * i executes iteration k = t - s_i when that is a real iteration, the
 * components of one time step emitted in `order`.  The times [min + S,
 * min + extent) form the steady-state loop, where every component is
 * valid; the S times before are the prologue and the S after the epilogue,
 * emitted statically (constant min and extent are required).  With
 * versioned buffers the steady-state loop is unrolled by the versions'
 * common multiple U, so that versions are constants (emit_steady).
 *
 * Clamped tail ("software_pipeline_clamp_tail" = 1, unless
 * tir_lower_opts.pipeline_peel_tail): the loop covers the epilogue's times
 * as with a guarded tail (below), but the components of stages < S run
 * there unguarded, on iteration min(k, min + extent - 1): they load the
 * last tile again into the version that iteration k would use, which no
 * component of stage S reads any more (no run-time branch in the loop, so
 * its body is exactly the steady state's).  Only sound where those
 * components write nothing but the pipeline's own buffers (used only
 * inside the loop; an atomic add into a global would run again):
 * refused otherwise (clamp_ok).
 *
 * Guarded tail ("software_pipeline_guard_tail" = 1, unless
 * tir_lower_opts.pipeline_peel_tail): the loop runs over the epilogue's
 * times too, [min + S, min + extent + S), and component i of a stage
 * s_i < S runs under `if (t - s_i < min + extent)` (as CUTLASS's main loop
 * clears its global loads' predicates on the last k tiles), so that the
 * last iterations' compute is not emitted a second time.  Waits and
 * commits stay unguarded: a commit of no copies is an empty group, so
 * every time step commits one group per async stage, in the tail as in
 * the steady state, and the steady state's wait counts stay exact.  With
 * U > 1 the times after the last whole group of U are emitted statically,
 * and a loop with extent <= S (no steady state) is emitted statically as
 * without the annotation; so is a loop whose stage-S components have
 * conditions the steady state decides and the tail does not (a ragged
 * last k tile's compute: tail_costs).
 *
 * Before any of that, the stages and order must keep every dependence of
 * the loop body (deps_ok, unversioned_ok, not_carried: a buffer that is
 * not versioned keeps its accesses' order across iterations, a versioned
 * one within an iteration and carries no value between them); otherwise
 * TIR_ERR_LOWER names the buffer.
 *
 * A shared/local buffer used only inside the loop gets one version per
 * stage between its first writer and its last reader (a flat buffer of V
 * times the size, version floormod(k - min, V) for iteration k); two
 * versions drop to one unless some writer precedes a reader both in order
 * and in stage (otherwise the reader consumes the data before it is
 * overwritten), as in TVM.
 *
 * Async stages: their global->shared copies become cp_async (16/8/4 bytes
 * for vector copies whose element offsets are proven multiples of the
 * width on both sides and whose buffers are aligned that much, else one
 * 4-byte copy per element; other element sizes stay synchronous, and so do
 * copies into a buffer the component itself reads), followed
 * by one cp_async_commit per time step after the stage's last component.
 * Before the first component that reads what an async stage wrote, a
 * cp_async_wait(n) lets through the n groups committed after the one it
 * needs; when that reader is in the async stage itself (it needs the copies
 * of this time step), the copies issued so far are committed first and it
 * waits for all (n = 0).  thread_sync then adds the barriers (it counts
 * cp_async as a shared write where it is issued).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lower_internal.h"

enum { MAXC = 32, MAXB = 32 };

typedef struct pbuf {
    const tir_buffer *buf, *nbuf;
    int versions;
    int64_t size;
} pbuf;

typedef struct pl {
    lower_state *st;
    const tir_prim_func *f;
    tir_status status;
    tir_analyzer *an;
    ir_vec threads; /* the kernel's thread-binding variables (lower_reads_first) */
    pbuf bufs[MAXB];
    int nbufs;
    /* per expansion */
    const tir_expr *version_k; /* iteration of the component being emitted */
    const ir_vec *self_reads;  /* reads of the component made async */
    int64_t min, extent;       /* the pipelined loop's */
    int64_t maxs;              /* its last stage, S */
    bool guard;                /* guarded tail: the loop covers the epilogue */
    bool clamp;                /* ... with clamped iterations, no guards */
    /* the guarded If last pushed (index in the time step's output) and the
     * components in it */
    int gidx, grp[32], ngrp;
} pl;

/* ---- buffer use counting */

typedef struct cnt {
    const tir_buffer *buf;
    int n;
} cnt;

static bool cnt_pre(tir_visitor *v, const tir_node *n) {
    cnt *c = v->user;
    if (n == (const tir_node *)c->buf) c->n++;
    return true;
}

static int uses(const void *node, const tir_buffer *b) {
    cnt c = {b, 0};
    tir_visitor v = {.pre = cnt_pre, .user = &c};
    tir_visit(&v, node);
    return c.n;
}

typedef struct rw {
    ir_vec reads, writes; /* buffers */
    /* buffers whose values are read: reads less an ldmatrix's destination
     * (plan_versions: a component that reads a value of a buffer it also
     * writes may carry it from one iteration to the next) */
    ir_vec vreads;
    const tir_buffer_load *dst; /* the written-only destination being visited */
} rw;

/* Loads read, stores write; so do the calls that write through an address
 * (lower_dest_arg: ldmatrix's destination, mma_sync's accumulator,
 * cp_async's, an atomic add's; their address_of is also seen as a read
 * below): without that, fragment registers an ldmatrix fills in one
 * stage and an mma_sync reads in the next got one version, and the next
 * k step's ldmatrix overwrote them before the mma read them. */
static bool rw_pre(tir_visitor *v, const tir_node *n) {
    rw *r = v->user;
    if (n->kind == TIR_KIND_BUFFER_LOAD) {
        ir_vec_push(&r->reads, ((const tir_buffer_load *)n)->buffer);
        if ((const tir_buffer_load *)n != r->dst)
            ir_vec_push(&r->vreads, ((const tir_buffer_load *)n)->buffer);
    } else if (n->kind == TIR_KIND_BUFFER_STORE) {
        ir_vec_push(&r->writes, ((const tir_buffer_store *)n)->buffer);
    } else if (n->kind == TIR_KIND_CALL) {
        const tir_call *c = (const tir_call *)n;
        bool rmw;
        int dst = lower_dest_arg(c, &rmw);
        const tir_buffer_load *l = dst >= 0 ? lower_addressed(c, dst) : NULL;
        if (l) ir_vec_push(&r->writes, l->buffer);
        if (l && !rmw) r->dst = l;
    }
    return true;
}

/* ---- versioned accesses */

/* The distance between versions, in elements: the buffer's size rounded up
 * to 16 bytes, so that version v starts as aligned as version 0 and an
 * 8- or 16-byte access proven aligned in the unversioned buffer (vectorize
 * ran before) stays aligned in every version (a 7-float tile with 8-byte
 * cp.async copies was misaligned in its odd versions: GPU-path fuzzer, seed
 * 1796300007 case 463). */
static int64_t version_stride(const tir_buffer *b) {
    int64_t size = tir_buffer_const_size(b);
    size_t bytes = tir_dtype_bytes(b->dtype);
    int64_t unit = bytes > 0 && bytes < 16 && 16 % bytes == 0 ? (int64_t)(16 / bytes) : 1;
    return (size + unit - 1) / unit * unit;
}

static pbuf *find_pbuf(pl *p, const tir_buffer *b) {
    for (int i = 0; i < p->nbufs; i++)
        if (p->bufs[i].buf == b) return &p->bufs[i];
    return NULL;
}

static const tir_expr *versioned(pl *p, pbuf *b, const tir_expr *idx) {
    tir_ctx *ctx = p->st->ctx;
    const tir_expr *ver = tir_floormod(ctx, tir_sub(ctx, p->version_k, tir_i32(ctx, p->min)),
                                       tir_i32(ctx, b->versions));
    const tir_expr *off = tir_analyzer_simplify(p->an, tir_mul(ctx, ver, tir_i32(ctx, b->size)));
    const tir_ramp *r = tir_as_tir_ramp(idx);
    if (r) return tir_ramp_new(ctx, tir_add(ctx, r->start, off), r->stride, r->lanes);
    if (idx->dtype.lanes > 1) off = tir_broadcast_new(ctx, off, idx->dtype.lanes);
    return tir_add(ctx, idx, off);
}

static const tir_node *ver_load(tir_mutator *m, const tir_node *n) {
    pl *p = m->user;
    const tir_buffer_load *l = (const tir_buffer_load *)tir_mutate_default(m, n);
    pbuf *b = find_pbuf(p, l->buffer);
    if (!b || b->versions == 1) return (const tir_node *)l;
    const tir_expr *i = versioned(p, b, l->indices[0]);
    return (const tir_node *)tir_load(m->ctx, b->nbuf, 1, &i);
}

static const tir_node *ver_store(tir_mutator *m, const tir_node *n) {
    pl *p = m->user;
    const tir_buffer_store *s = (const tir_buffer_store *)tir_mutate_default(m, n);
    pbuf *b = find_pbuf(p, s->buffer);
    if (!b || b->versions == 1) return (const tir_node *)s;
    const tir_expr *i = versioned(p, b, s->indices[0]);
    return (const tir_node *)tir_store(m->ctx, b->nbuf, s->value, 1, &i);
}

/* ---- async copies */

static bool multiple_of(pl *p, const tir_expr *e, int64_t k) {
    tir_ctx *ctx = p->st->ctx;
    const tir_expr *c =
        tir_binop_new(ctx, TIR_KIND_EQ, tir_floormod(ctx, e, tir_int(ctx, e->dtype, k)),
                      tir_int(ctx, e->dtype, 0));
    return tir_analyzer_can_prove(p->an, c);
}

/* cp_async(&dst[di], &src[si], bytes); with a predicate `pred` (a zero
 * fill) the source size is pred ? bytes : 0 and the source index
 * pred ? si : 0, so that no address past the source is formed. */
static const tir_stmt *cp(tir_ctx *ctx, const tir_buffer *dst, const tir_expr *di,
                          const tir_buffer *src, const tir_expr *si, int64_t bytes,
                          const tir_expr *pred) {
    if (pred) si = tir_select_new(ctx, pred, si, tir_int(ctx, si->dtype, 0));
    const tir_expr *d = tir_call_new(ctx, TIR_HANDLE, TIR_INTRIN_ADDRESS_OF, 1,
                                     (const tir_expr *const[]){tir_load(ctx, dst, 1, &di)});
    const tir_expr *s = tir_call_new(ctx, TIR_HANDLE, TIR_INTRIN_ADDRESS_OF, 1,
                                     (const tir_expr *const[]){tir_load(ctx, src, 1, &si)});
    if (!pred)
        return lower_intrin_stmt(ctx, TIR_INTRIN_CP_ASYNC, 3,
                                 (const tir_expr *const[]){d, s, tir_i32(ctx, bytes)});
    const tir_expr *sb = tir_select_new(ctx, pred, tir_i32(ctx, bytes), tir_i32(ctx, 0));
    return lower_intrin_stmt(ctx, TIR_INTRIN_CP_ASYNC, 4,
                             (const tir_expr *const[]){d, s, tir_i32(ctx, bytes), sb});
}

/* The store s as cp_async (predicated by pred, may be NULL), or NULL when
 * it is not a copy cp.async can do. */
static const tir_stmt *async_copy(pl *p, const tir_buffer_store *s, const tir_expr *pred) {
    tir_ctx *ctx = p->st->ctx;
    const tir_buffer_load *l = tir_as_tir_buffer_load(s->value);
    if (s->buffer->scope != TIR_SCOPE_SHARED || !l || l->buffer->scope != TIR_SCOPE_GLOBAL)
        return NULL;
    /* the component reads the copy itself: no wait could come between */
    if (ir_vec_has(p->self_reads, s->buffer)) return NULL;
    int64_t eb = (int64_t)tir_dtype_bytes(s->buffer->dtype);
    const tir_ramp *dr = tir_as_tir_ramp(s->indices[0]), *sr = tir_as_tir_ramp(l->indices[0]);
    int lanes = s->value->dtype.lanes;
    if (lanes == 1) {
        if (eb != 4 && eb != 8 && eb != 16) return NULL;
        return cp(ctx, s->buffer, s->indices[0], l->buffer, l->indices[0], eb, pred);
    }
    int64_t ds, ss;
    if (!dr || !sr || !tir_expr_const_int(dr->stride, &ds) || !tir_expr_const_int(sr->stride, &ss))
        return NULL;
    if (pred && pred->dtype.lanes != 1) return NULL; /* a per-lane predicate */
    int64_t bytes = eb * lanes;
    if (ds == 1 && ss == 1 && (bytes == 4 || bytes == 8 || bytes == 16) &&
        l->buffer->align >= bytes && multiple_of(p, dr->start, lanes) &&
        multiple_of(p, tir_add(ctx, sr->start, l->buffer->elem_offset), lanes))
        return cp(ctx, s->buffer, dr->start, l->buffer, sr->start, bytes, pred);
    if (eb != 4 && eb != 8 && eb != 16) return NULL;
    const tir_stmt **v = IR_NEWN(ctx, const tir_stmt *, lanes);
    for (int i = 0; i < lanes; i++)
        v[i] = cp(ctx, s->buffer, tir_add(ctx, dr->start, tir_i32(ctx, ds * i)), l->buffer,
                  tir_add(ctx, sr->start, tir_i32(ctx, ss * i)), eb, pred);
    return tir_seq_new(ctx, lanes, v);
}

static const tir_node *async_store(tir_mutator *m, const tir_node *n) {
    const tir_stmt *s = async_copy(m->user, (const tir_buffer_store *)n, NULL);
    return s ? (const tir_node *)s : n;
}

/* Whether two indices (scalars or ramps) are provably the same. */
static bool same_index(pl *p, const tir_expr *a, const tir_expr *b) {
    if (a == b) return true;
    const tir_ramp *ra = tir_as_tir_ramp(a), *rb = tir_as_tir_ramp(b);
    if (ra || rb) {
        return ra && rb && ra->lanes == rb->lanes &&
               same_index(p, ra->start, rb->start) && same_index(p, ra->stride, rb->stride);
    }
    int64_t d;
    return a->dtype.lanes == 1 && b->dtype.lanes == 1 &&
           tir_expr_const_int(tir_analyzer_simplify(p->an, tir_sub(p->st->ctx, a, b)), &d) &&
           d == 0;
}

/* relax_guards' zero fill, `if c: S[i] = G[j] else: S[i] = 0`, as one
 * cp_async whose source size is 0 where c is false (the PTX zero fill):
 * a ragged tile's copies stay asynchronous. */
static const tir_node *async_zero_fill(tir_mutator *m, const tir_node *n) {
    const tir_if *i = (const tir_if *)n;
    const tir_buffer_store *a = tir_as_tir_buffer_store(i->then_s),
                           *z = i->else_s ? tir_as_tir_buffer_store(i->else_s) : NULL;
    if (a && z && a->buffer == z->buffer && a->nidx == 1 && z->nidx == 1 &&
        same_index(m->user, a->indices[0], z->indices[0]) && ir_is_zero_bits(z->value)) {
        const tir_stmt *s = async_copy(m->user, a, i->cond);
        if (s) return (const tir_node *)s;
    }
    return tir_mutate_default(m, n);
}

/* Stores left in s that are not cp_async (after async_store). */
static bool store_pre(tir_visitor *v, const tir_node *n) {
    if (n->kind == TIR_KIND_BUFFER_STORE) (*(int *)v->user)++;
    return true;
}

/* ---- expansion */

typedef struct comp {
    const tir_stmt *s;
    int64_t stage, order;
    rw acc;
    bool async;
} comp;

static tir_status fail(pl *p, const tir_for *f, const char *msg) {
    return lower_fail_marked(p->st, p->f, 1, (const void *[]){f}, "sw_pipeline: loop '%s': %s",
                             f->var->name, msg);
}

static const tir_annot *ints(const tir_for *f, tir_annot_key key) {
    const tir_annot *a = tir_annots_get(f->nannots, f->annots, key);
    return a && a->kind == TIR_ANNOT_INTS ? a : NULL;
}

/* Is stage s (below the last) a stage of copies that can all be
 * asynchronous, in a loop without software_pipeline_async_stages?  Inside
 * one warp a synchronous pipelined copy overlaps nothing: its shared store
 * waits for its global load right away, so the warp stalls on every tile
 * as it would without the pipeline (the seed's Step 5 was no faster than
 * Step 4, docs/performance.md runs 16-24).  A stage qualifies when every
 * component in it is made only of global->shared copies that cp.async can
 * do (async_store converts all of them) and no component of the same stage
 * reads what they write (that reader would wait right away).  The result
 * is the same as the annotation would give; tir_lower_opts
 * .sync_pipeline_copies keeps such copies synchronous. */
static bool auto_async(pl *p, const comp *c, int n, int64_t s) {
    bool any = false;
    for (int i = 0; i < n; i++) {
        if (c[i].stage != s) continue;
        for (int j = 0; j < n; j++)
            if (j != i && c[j].stage == s)
                for (int b = 0; b < c[i].acc.writes.n; b++)
                    if (ir_vec_has(&c[j].acc.reads, c[i].acc.writes.items[b])) return false;
        tir_mutator m = {.ctx = p->st->ctx, .user = p};
        m.on[TIR_KIND_BUFFER_STORE] = async_store;
        m.on[TIR_KIND_IF] = async_zero_fill;
        p->self_reads = &c[i].acc.reads;
        const tir_stmt *t = tir_mutate_stmt(&m, c[i].s);
        int left = 0;
        tir_visitor v = {.pre = store_pre, .user = &left};
        tir_visit(&v, t);
        if (t == c[i].s || left) return false;
        any = true;
    }
    return any;
}

/* Does component i read what an async component of stage `as` writes? */
static bool reads_async(const comp *c, int n, int i, int64_t as) {
    for (int j = 0; j < n; j++)
        if (j != i && c[j].stage == as && c[j].async)
            for (int b = 0; b < c[j].acc.writes.n; b++)
                if (ir_vec_has(&c[i].acc.reads, c[j].acc.writes.items[b])) return true;
    return false;
}

/* Waits at the start of time step t (t_const when t is NULL) for the async
 * stages whose consumers at t all run in later stages: the group they need
 * was committed in an earlier time step, so waiting before this step's
 * copies are issued waits for the same data (n = groups committed after it
 * before this step, for the consumer of the smallest stage: the newest
 * group needed).  Issued after the wait, the copies of this step come
 * after the barrier that publishes the landed data, which also orders them
 * after the previous step's reads of the version they overwrite: one
 * barrier per time step (thread_sync proves the rest disjoint).  Sets
 * waited[a] for the stages it waits for. */
static void emit_early_waits(pl *p, const comp *c, int n, const tir_expr *t, int64_t t_const,
                             int64_t min, int64_t extent, const int64_t *async, int nasync,
                             bool *waited, ir_vec *out) {
    tir_ctx *ctx = p->st->ctx;
    for (int a = 0; a < nasync; a++) {
        int64_t as = async[a], first = INT64_MAX;
        bool late_only = true;
        for (int i = 0; i < n; i++) {
            int64_t k = t_const - c[i].stage;
            if ((!t && (k < min || k >= min + extent)) || !reads_async(c, n, i, as)) continue;
            if (c[i].stage <= as) late_only = false;
            else if (c[i].stage < first) first = c[i].stage;
        }
        if (!late_only || first == INT64_MAX) continue;
        /* the group of time t - first + as; the last one before t */
        int64_t pending = first - as - 1;
        if (!t) {
            int64_t last = t_const - 1, last_valid = min + extent - 1 + as;
            pending = (last < last_valid ? last : last_valid) - (t_const - first + as);
        }
        if (pending < 0) pending = 0;
        ir_vec_push(out, lower_intrin_stmt(ctx, TIR_INTRIN_CP_ASYNC_WAIT, 1,
                                           (const tir_expr *const[]){tir_i32(ctx, pending)}));
        waited[a] = true;
    }
}

/* Component s of stage `stage` at iteration k (an expression) in the
 * loop of a guarded tail: under `if (k < min + extent)` where the loop's
 * last times would take k past the end (stages < S). */
static const tir_stmt *guarded(pl *p, int64_t stage, const tir_expr *k, const tir_stmt *s) {
    if (!p->guard || p->clamp || stage >= p->maxs) return s;
    tir_ctx *ctx = p->st->ctx;
    const tir_expr *cond = tir_lt(ctx, k, tir_int(ctx, k->dtype, p->min + p->extent));
    cond = tir_analyzer_simplify(p->an, cond);
    int64_t v;
    /* valid at every time of the loop (an unrolled group before the tail) */
    if (tir_expr_const_int(cond, &v) && v) return s;
    return tir_if_new(ctx, cond, s, NULL);
}

/* Does component a write a buffer b reads or writes, or the reverse? */
static bool conflict(const comp *a, const comp *b) {
    for (int w = 0; w < a->acc.writes.n; w++)
        if (ir_vec_has(&b->acc.reads, a->acc.writes.items[w]) ||
            ir_vec_has(&b->acc.writes, a->acc.writes.items[w]))
            return true;
    for (int w = 0; w < b->acc.writes.n; w++)
        if (ir_vec_has(&a->acc.reads, b->acc.writes.items[w])) return true;
    return false;
}

/* Pushes component i (statement s, iteration k) of the loop's time step t
 * (NULL: static, no guard).  A guarded component right after the guarded If
 * of another component of the same stage joins that If when it conflicts
 * with none of the components in it (so no barrier can be needed between
 * them): one branch instead of two (Step 8's A and B loads, its A and B
 * stores). */
static void push_comp(pl *p, const comp *c, int i, const tir_expr *t, const tir_expr *k,
                      const tir_stmt *s, ir_vec *out) {
    const tir_stmt *g = t ? guarded(p, c[i].stage, k, s) : s;
    if (g == s) {
        ir_vec_push(out, s);
        return;
    }
    bool join = p->ngrp > 0 && p->gidx == out->n - 1 && c[p->grp[0]].stage == c[i].stage;
    for (int j = 0; join && j < p->ngrp; j++) join = !conflict(&c[p->grp[j]], &c[i]);
    if (!join) {
        p->gidx = out->n, p->ngrp = 0;
        p->grp[p->ngrp++] = i;
        ir_vec_push(out, g);
        return;
    }
    const tir_if *prev = out->items[p->gidx];
    const tir_stmt *both = tir_seq_new(p->st->ctx, 2, (const tir_stmt *const[]){prev->then_s, s});
    out->items[p->gidx] = tir_if_new(p->st->ctx, prev->cond, both, NULL);
    p->grp[p->ngrp++] = i;
}

/* Emits the components valid at time t (t_const when t is NULL). */
static void emit_time(pl *p, const tir_for *f, comp *c, int n, const int *by_order,
                      const tir_expr *t, int64_t t_const, int64_t min, int64_t extent,
                      const int64_t *async, int nasync, ir_vec *out) {
    tir_ctx *ctx = p->st->ctx;
    bool waited[MAXC] = {false};
    p->ngrp = 0;
    emit_early_waits(p, c, n, t, t_const, min, extent, async, nasync, waited, out);
    /* copies of async stage a issued in this time step and not committed */
    bool open[MAXC] = {false};
    for (int oi = 0; oi < n; oi++) {
        int i = by_order[oi];
        int64_t k_const = t_const - c[i].stage;
        if (!t && (k_const < min || k_const >= min + extent)) continue;
        /* a wait before the first reader of each async stage's buffers */
        for (int a = 0; a < nasync; a++) {
            if (waited[a]) continue;
            int64_t as = async[a];
            if (!reads_async(c, n, i, as)) continue;
            waited[a] = true;
            /* a consumer in the async stage itself needs this time step's
             * copies: commit them first (a wait does not cover copies
             * not yet committed), then wait for everything */
            if (c[i].stage == as && open[a]) {
                ir_vec_push(out, lower_intrin_stmt(ctx, TIR_INTRIN_CP_ASYNC_COMMIT, 0, NULL));
                open[a] = false;
            }
            /* the producer iteration needed: k_i = t - s_i, produced at time
             * k_i + as; groups committed after it, up to now */
            int64_t needed_time = (t ? 0 : k_const) + as;
            /* the producer's position relative to this component */
            int prod_pos = -1;
            for (int oj = 0; oj < n; oj++)
                if (c[by_order[oj]].stage == as && c[by_order[oj]].async) prod_pos = oj;
            int64_t last_time = prod_pos < oi ? 0 : -1; /* relative to t */
            int64_t pending;
            if (t) {
                pending = last_time - (-(c[i].stage - as));
            } else {
                int64_t last = t_const + last_time;
                /* last time step with an issued group of this stage */
                int64_t last_valid = min + extent - 1 + as;
                if (last > last_valid) last = last_valid;
                pending = last - needed_time;
            }
            if (pending < 0 || c[i].stage == as) pending = 0;
            ir_vec_push(out, lower_intrin_stmt(ctx, TIR_INTRIN_CP_ASYNC_WAIT, 1,
                                               (const tir_expr *const[]){tir_i32(ctx, pending)}));
        }
        const tir_expr *k = t ? tir_sub(ctx, t, tir_i32(ctx, c[i].stage)) : tir_i32(ctx, k_const);
        k = tir_analyzer_simplify(p->an, k);
        /* a clamped tail: the iteration's data, the unclamped version */
        const tir_expr *kd = k;
        if (t && p->clamp && c[i].stage < p->maxs)
            kd = tir_analyzer_simplify(
                p->an, tir_min(ctx, k, tir_int(ctx, k->dtype, min + extent - 1)));
        const tir_stmt *s = (const tir_stmt *)tir_substitute(ctx, c[i].s, 1, &f->var, &kd);
        p->version_k = k;
        tir_mutator m = {.ctx = ctx, .user = p};
        m.on[TIR_KIND_BUFFER_LOAD] = ver_load;
        m.on[TIR_KIND_BUFFER_STORE] = ver_store;
        s = tir_mutate_stmt(&m, s);
        push_comp(p, c, i, t, k, s, out);
        /* commit after the last component of an async stage */
        if (c[i].async) {
            int a = 0;
            while (async[a] != c[i].stage) a++;
            open[a] = true;
            bool last = true;
            for (int oj = oi + 1; oj < n; oj++)
                if (c[by_order[oj]].stage == c[i].stage) last = false;
            if (last) {
                ir_vec_push(out, lower_intrin_stmt(ctx, TIR_INTRIN_CP_ASYNC_COMMIT, 0, NULL));
                open[a] = false;
            }
        }
    }
}

/* Whether the stages and order respect the dependences (as TVM's
 * ValidatePipelineBody; schedules get it from software_pipeline's
 * preconditions 6-7, this catches annotations written by hand): a
 * component reading what an earlier one writes runs in a later stage, or
 * in the same stage later in the order.  Sets p->status otherwise. */
static bool deps_ok(pl *p, const tir_for *f, const comp *c, int n) {
    for (int j = 0; j < n; j++)
        for (int i = 0; i < j; i++) {
            if (c[i].stage < c[j].stage || (c[i].stage == c[j].stage && c[i].order < c[j].order))
                continue;
            for (int b = 0; b < c[j].acc.reads.n; b++) {
                const tir_buffer *buf = c[j].acc.reads.items[b];
                if (!ir_vec_has(&c[i].acc.writes, buf)) continue;
                p->status = lower_fail_marked(
                    p->st, p->f, 1, (const void *[]){f},
                    "sw_pipeline: loop '%s': component %d (stage %lld, order %lld) reads %s, "
                    "which component %d (stage %lld, order %lld) writes: it must come in a "
                    "later stage, or later in the order of the same stage",
                    f->var->name, j, (long long)c[j].stage, (long long)c[j].order, buf->name,
                    i, (long long)c[i].stage, (long long)c[i].order);
                return false;
            }
        }
    return true;
}

/* The versions of the buffers written in the pipeline and used only inside
 * the loop (p->bufs): one per stage between the first writer and the last
 * reader or writer, two dropping to one unless a writer precedes a reader
 * in order but not in stage.  False (p->status set) past MAXB buffers. */
/* A buffer the pipeline would version (one copy per stage in flight)
 * must not carry a value from one iteration to the next: iteration k
 * would read the copy of iteration k - V, not k - 1 (a running sum kept in
 * a buffer used only inside the loop, its first value written under
 * `k == 0`: silently wrong before this check).  It may when the body reads
 * it before writing it (lower_reads_first), or when one component reads a
 * value of it and writes it (the running sum after a conditional first
 * value).  Then the pipeline is refused (TIR_ERR_LOWER, p->status), naming
 * the buffer.  An ldmatrix's destination is written, not read. */
static bool not_carried(pl *p, const tir_for *f, const comp *c, int n, const tir_buffer *b) {
    int rmw = -1;
    for (int j = 0; j < n && rmw < 0; j++)
        if (ir_vec_has(&c[j].acc.writes, b) && ir_vec_has(&c[j].acc.vreads, b)) rmw = j;
    if (rmw < 0 && !lower_reads_first(f, b, &p->threads)) return true;
    char msg[512], who[64] = "the loop body reads it before writing it";
    if (rmw >= 0) snprintf(who, sizeof who, "component %d reads and writes it", rmw);
    snprintf(msg, sizeof msg,
             "%s, so an iteration may read a value of '%s' that an earlier one wrote, and the "
             "pipeline would keep the buffer in several versions (one per stage in flight) and "
             "read the wrong one (do not pipeline this loop, or keep the value elsewhere)",
             who, b->name);
    p->status = fail(p, f, msg);
    return false;
}

static bool plan_versions(pl *p, const tir_for *f, comp *c, int n) {
    tir_ctx *ctx = p->st->ctx;
    p->nbufs = 0;
    for (int i = 0; i < n; i++)
        for (int w = 0; w < c[i].acc.writes.n; w++) {
            const tir_buffer *b = c[i].acc.writes.items[w];
            if (b->scope == TIR_SCOPE_GLOBAL || find_pbuf(p, b)) continue;
            if (p->nbufs == MAXB) {
                p->status = fail(p, f, "too many buffers written in the pipeline (at most 32)");
                return false;
            }
            /* only the Allocate may be outside the loop */
            if (uses(p->f->body, b) - uses(f->body, b) > 1) continue;
            int64_t def = INT64_MAX, use = -1;
            bool need = false;
            for (int j = 0; j < n; j++) {
                if (ir_vec_has(&c[j].acc.writes, b) && c[j].stage < def) def = c[j].stage;
                /* a writer in a later stage than every reader counts: with
                 * versions up to the readers' only, iteration k's late
                 * write landed in the version iteration k + V had just
                 * written (found by the pipeline fuzz family) */
                if ((ir_vec_has(&c[j].acc.reads, b) || ir_vec_has(&c[j].acc.writes, b)) &&
                    c[j].stage > use)
                    use = c[j].stage;
            }
            for (int wj = 0; wj < n; wj++)
                for (int rj = 0; rj < n; rj++)
                    if (ir_vec_has(&c[wj].acc.writes, b) && ir_vec_has(&c[rj].acc.reads, b) &&
                        c[wj].order < c[rj].order && c[wj].stage < c[rj].stage)
                        need = true;
            int v = use < def ? 1 : (int)(use - def + 1);
            if (v == 2 && !need) v = 1;
            if (v < 1) v = 1;
            if (v > 1 && !not_carried(p, f, c, n, b)) return false;
            pbuf *pb = &p->bufs[p->nbufs++];
            pb->buf = b;
            pb->versions = v;
            pb->size = version_stride(b);
            pb->nbuf = b;
            if (v > 1) {
                tir_buffer_desc d;
                tir_buffer_describe(b, &d);
                d.shape = (const tir_expr *const[]){tir_i32(ctx, pb->size * v)};
                pb->nbuf = tir_buffer_new(ctx, &d);
            }
        }
    return true;
}

/* Does a, before b in the loop body, keep its order with b on a buffer
 * that is not versioned, in every pair of iterations of the pipelined
 * loop (iteration-major order in the source, time-major there, component
 * i of iteration k at time k + s_i)?  Within one iteration a_k must come
 * before b_k, and b_k before a_{k+1}: the same stage with a earlier in
 * the order, or b one stage later and earlier in the order (Step 8's
 * register staging: the shared store of tile k + 1 after the compute of
 * tile k). */
static bool keeps_order(const comp *a, const comp *b) {
    return (a->stage == b->stage && a->order < b->order) ||
           (b->stage == a->stage + 1 && b->order < a->order);
}

/* Every buffer one component writes and another reads or writes, and that
 * is not versioned (global, used outside the loop, or one version): the
 * two components must keep their order (keeps_order); on a versioned
 * buffer they must keep it within an iteration (an earlier writer in a
 * later stage overwrote the later one's value; a reader in a later stage
 * saw a value written after it in the loop body).  Otherwise
 * some iteration reads or overwrites another's value: a stage-0 `D[0] = A[k]` and a
 * stage-1 `C[k] = D[0]`, D global, gave C[k] = A[k + 1] before this
 * check (deps_ok sees only a reader after its writer in one iteration).
 * Sets p->status naming the buffer and components otherwise. */
static bool unversioned_ok(pl *p, const tir_for *f, const comp *c, int n) {
    for (int i = 0; i < n; i++)
        for (int w = 0; w < c[i].acc.writes.n; w++) {
            const tir_buffer *b = c[i].acc.writes.items[w];
            const pbuf *pb = find_pbuf(p, b);
            bool versioned = pb && pb->versions > 1;
            for (int j = 0; j < n; j++) {
                bool jw = ir_vec_has(&c[j].acc.writes, b);
                if (j == i || !(ir_vec_has(&c[j].acc.vreads, b) || jw)) continue;
                const comp *a = &c[i < j ? i : j], *z = &c[i < j ? j : i];
                /* versioned: iterations have their own copies, but the
                 * accesses of one iteration must keep their order */
                if (versioned ? a->stage < z->stage || (a->stage == z->stage && a->order < z->order)
                              : keeps_order(a, z))
                    continue;
                char msg[480];
                snprintf(msg, sizeof msg,
                         "components %d (stage %lld, order %lld) and %d (stage %lld, order %lld) "
                         "both use '%s', which one of them writes%s: their stages and order "
                         "would let one iteration see another's value, or reorder two writes",
                         i < j ? i : j, (long long)a->stage, (long long)a->order, i < j ? j : i,
                         (long long)z->stage, (long long)z->order, b->name,
                         versioned ? "" : " and the pipeline does not version (it is global or "
                                          "used outside the loop)");
                p->status = fail(p, f, msg);
                return false;
            }
        }
    return true;
}

static void free_comps(comp *c, int n) {
    for (int j = 0; j < n; j++) {
        ir_vec_free(&c[j].acc.reads);
        ir_vec_free(&c[j].acc.writes);
        ir_vec_free(&c[j].acc.vreads);
    }
}

/* The unroll factor of the steady-state loop: the least common multiple of
 * the buffers' version counts (1 without versioned buffers, or when it
 * exceeds MAX_UNROLL), so that every time step of the unrolled body uses
 * constant versions. */
enum { MAX_UNROLL = 8 };

static int64_t steady_unroll(const pl *p) {
    int64_t l = 1;
    for (int i = 0; i < p->nbufs; i++) {
        int64_t v = p->bufs[i].versions;
        l = l / ir_gcd64(l, v) * v;
        if (l > MAX_UNROLL) return 1;
    }
    return l;
}

/* The loop over times [lo, hi): the steady state, all components valid,
 * or with a guarded tail also the epilogue's times.  With U =
 * steady_unroll(p) > 1 the loop runs (hi - lo) / U times over U time steps
 * each, t = lo + U*g + r, so that a version floormod(t - s - min, V) (V
 * divides U) folds to a constant: with a run-time floormod in every index
 * LLVM no longer proved the compute's consecutive shared loads contiguous
 * and aligned, and Step 5's four-wide ld.shared became four scalar loads,
 * each a 4-way bank conflict.  The (hi - lo) % U times left are emitted
 * statically after the loop, and so is a loop that would run once. */
static void emit_steady(pl *p, const tir_for *f, comp *c, int n, const int *by_order,
                        int64_t lo, int64_t hi, const int64_t *async, int nasync, ir_vec *out) {
    tir_ctx *ctx = p->st->ctx;
    int64_t min = p->min, extent = p->extent;
    int64_t u = steady_unroll(p), groups = (hi - lo) / u;
    if (groups == 0) u = 1, groups = hi - lo;
    if (groups == 1) { /* a loop that runs once: its times, statically */
        for (int64_t t = lo; t < hi; t++)
            emit_time(p, f, c, n, by_order, NULL, t, min, extent, async, nasync, out);
        return;
    }
    const tir_var *g = tir_var_new(ctx, f->var->name, f->var->base.dtype);
    /* without unrolling the loop keeps its times: t = g over [lo, hi) */
    const tir_expr *gmin = tir_i32(ctx, u > 1 ? 0 : lo);
    tir_analyzer_bind(p->an, g, gmin, tir_i32(ctx, groups));
    ir_vec bv = {0};
    for (int64_t r = 0; r < u; r++) {
        const tir_expr *t = (const tir_expr *)g;
        if (u > 1) t = tir_add(ctx, tir_mul(ctx, t, tir_i32(ctx, u)), tir_i32(ctx, lo + r));
        emit_time(p, f, c, n, by_order, tir_analyzer_simplify(p->an, t), 0, min, extent, async,
                  nasync, &bv);
    }
    const tir_stmt *lb = tir_seq_new(ctx, bv.n, (const tir_stmt *const *)bv.items);
    ir_vec_free(&bv);
    int na = 0;
    tir_annot *annots = IR_NEWN(ctx, tir_annot, f->nannots);
    for (int i = 0; i < f->nannots; i++)
        if (strncmp(f->annots[i].key, TIR_ANN_PIPELINE_PREFIX, strlen(TIR_ANN_PIPELINE_PREFIX)))
            annots[na++] = f->annots[i];
    ir_vec_push(out, tir_for_new(ctx, g, gmin, tir_i32(ctx, groups), TIR_FOR_SERIAL, NULL, na, annots, lb));
    for (int64_t t = lo + groups * u; t < hi; t++)
        emit_time(p, f, c, n, by_order, NULL, t, min, extent, async, nasync, out);
}

/* The int 0 or 1 of a tail annotation on loop f (0 without it); another
 * value or kind is refused (p->status set, false): a misspelt intent
 * should not silently change the code. */
static bool tail_flag(pl *p, const tir_for *f, tir_annot_key key, bool *on) {
    const tir_annot *a = tir_annots_get(f->nannots, f->annots, key);
    *on = false;
    if (!a) return true;
    if (a->kind != TIR_ANNOT_INT || (a->i != 0 && a->i != 1)) {
        char msg[96];
        snprintf(msg, sizeof msg, "%s must be the int 0 or 1", tir_annot_key_str(key));
        p->status = fail(p, f, msg);
        return false;
    }
    *on = a->i == 1;
    return true;
}

/* The tail loop f asks for: guarded ("software_pipeline_guard_tail" 1),
 * clamped ("software_pipeline_clamp_tail" 1) or peeled (neither, or
 * tir_lower_opts.pipeline_peel_tail).  Both at 1 is refused (p->status
 * set, false), with or without pipeline_peel_tail: two tails for one loop
 * is a mistake, not a preference. */
static bool tail_mode(pl *p, const tir_for *f, bool *guard, bool *clamp) {
    if (!tail_flag(p, f, TIR_ANN_SOFTWARE_PIPELINE_GUARD_TAIL, guard) ||
        !tail_flag(p, f, TIR_ANN_SOFTWARE_PIPELINE_CLAMP_TAIL, clamp))
        return false;
    if (*guard && *clamp) {
        p->status = fail(p, f,
                         "software_pipeline_clamp_tail and software_pipeline_guard_tail are "
                         "both 1: one tail only");
        return false;
    }
    if (p->st->opts.pipeline_peel_tail) *guard = *clamp = false;
    return true;
}

/* Whether the components of stages < S may run again on the last
 * iteration (a clamped tail): every buffer they write, by a store or
 * through a call's address (an atomic add into a global included), is one
 * of the pipeline's (used only inside the loop: plan_versions), whose
 * extra version nobody reads.  Sets p->status, naming the component and
 * the buffer, otherwise. */
static bool clamp_ok(pl *p, const tir_for *f, const comp *c, int n, int64_t maxs) {
    for (int i = 0; i < n; i++) {
        if (c[i].stage >= maxs) continue;
        for (int w = 0; w < c[i].acc.writes.n; w++) {
            const tir_buffer *b = c[i].acc.writes.items[w];
            if (find_pbuf(p, b)) continue;
            char msg[256];
            snprintf(msg, sizeof msg,
                     "software_pipeline_clamp_tail: component %d (stage %lld) writes '%s', "
                     "which is used outside the loop; a clamped tail would write it again "
                     "(use software_pipeline_guard_tail)",
                     i, (long long)c[i].stage, b->name);
            p->status = fail(p, f, msg);
            return false;
        }
    }
    return true;
}

/* ---- where a guarded tail would cost: conditions on the loop variable */

typedef struct tailc {
    pl *p;
    const tir_var *var;          /* the pipelined loop's */
    const tir_var *steady, *all; /* t over the steady state, over the loop */
    int64_t stage;
    bool costs;
} tailc;

/* Is cond (of a component of stage c->stage) decided over the steady
 * state but not over the guarded loop's times? */
static bool decided_only_steady(tailc *c, const tir_expr *cond) {
    tir_ctx *ctx = c->p->st->ctx;
    int64_t v;
    const tir_expr *at[2];
    const tir_var *ts[2] = {c->steady, c->all};
    for (int i = 0; i < 2; i++) {
        const tir_expr *k = tir_sub(ctx, (const tir_expr *)ts[i], tir_i32(ctx, c->stage));
        at[i] = tir_analyzer_simplify(
            c->p->an, (const tir_expr *)tir_substitute(ctx, cond, 1, &c->var, &k));
    }
    return tir_expr_const_int(at[0], &v) && !tir_expr_const_int(at[1], &v);
}

static bool tailc_pre(tir_visitor *v, const tir_node *n) {
    tailc *c = v->user;
    const tir_expr *cond = n->kind == TIR_KIND_IF       ? ((const tir_if *)n)->cond
                           : n->kind == TIR_KIND_SELECT ? ((const tir_select *)n)->cond
                                                        : NULL;
    if (cond && lower_uses_any(cond, 1, &c->var) && decided_only_steady(c, cond)) c->costs = true;
    return !c->costs;
}

/* Would the guarded tail make the loop body slower than the steady state:
 * a component of stage S (unguarded in the tail) with a condition on the
 * loop variable that the steady state decides statically but the tail's
 * times do not (the compute of a ragged last k tile: its k guards)?  Such
 * a loop is peeled as without the annotation: the last tile's compute is
 * different code either way, and in the loop its guards would run on
 * every iteration (Step 8 1000x520x333: 24 selp per k tile, 55 registers
 * instead of 47). */
static bool tail_costs(pl *p, const tir_for *f, const comp *c, int n, int64_t min,
                       int64_t extent, int64_t maxs) {
    tir_ctx *ctx = p->st->ctx;
    tailc tc = {p, f->var, tir_var_new(ctx, "t_steady", f->var->base.dtype),
                tir_var_new(ctx, "t_all", f->var->base.dtype), maxs, false};
    tir_analyzer_bind(p->an, tc.steady, tir_i32(ctx, min + maxs), tir_i32(ctx, extent - maxs));
    tir_analyzer_bind(p->an, tc.all, tir_i32(ctx, min + maxs), tir_i32(ctx, extent));
    tir_visitor v = {.pre = tailc_pre, .user = &tc};
    for (int i = 0; i < n && !tc.costs; i++)
        if (c[i].stage == maxs) tir_visit(&v, c[i].s);
    return tc.costs;
}

static const tir_stmt *expand(pl *p, const tir_for *f) {
    tir_ctx *ctx = p->st->ctx;
    const tir_annot *sa = ints(f, TIR_ANN_SOFTWARE_PIPELINE_STAGE),
                    *oa = ints(f, TIR_ANN_SOFTWARE_PIPELINE_ORDER);
    const tir_annot *aa =
        tir_annots_get(f->nannots, f->annots, TIR_ANN_SOFTWARE_PIPELINE_ASYNC_STAGES);
    if (!sa) {
        p->status = fail(p, f, "software_pipeline_stage must be a list of ints");
        return NULL;
    }
    int64_t min, extent;
    if (f->kind != TIR_FOR_SERIAL || !tir_expr_const_int(f->min, &min) ||
        !tir_expr_const_int(f->extent, &extent) || extent <= 0) {
        p->status = fail(p, f, "a pipelined loop must be serial with a constant min and extent");
        return NULL;
    }
    bool guard, clamp;
    if (!tail_mode(p, f, &guard, &clamp)) return NULL;
    /* components, through Allocate wrappers */
    const tir_stmt *body = f->body;
    ir_vec allocs = {0};
    while (body->kind == TIR_KIND_ALLOCATE) {
        ir_vec_push(&allocs, body);
        body = ((const tir_allocate *)body)->body;
    }
    const tir_seq *q = tir_as_tir_seq(body);
    int n = q ? q->n : 1;
    if (n > MAXC || sa->nints != n || (oa && oa->nints != n)) {
        ir_vec_free(&allocs);
        p->status = lower_fail_marked(
            p->st, p->f, 1, (const void *[]){f},
            "sw_pipeline: loop '%s' has %d components but software_pipeline_stage has %d "
            "entries%s",
            f->var->name, n, sa->nints,
            oa && oa->nints != n ? " (or the order a different count)" : "");
        return NULL;
    }
    comp c[MAXC];
    int by_order[MAXC];
    int64_t maxs = 0;
    for (int i = 0; i < n; i++) by_order[i] = -1;
    for (int i = 0; i < n; i++) {
        c[i] = (comp){q ? q->stmts[i] : body, sa->ints[i], oa ? oa->ints[i] : i, (rw){.dst = NULL}, false};
        if (c[i].stage < 0 || c[i].order < 0 || c[i].order >= n || by_order[c[i].order] >= 0) {
            free_comps(c, i + 1);
            ir_vec_free(&allocs);
            p->status = fail(p, f, "stages must be >= 0 and the order a permutation of 0..n-1");
            return NULL;
        }
        by_order[c[i].order] = i;
        if (c[i].stage > maxs) maxs = c[i].stage;
        tir_visitor v = {.pre = rw_pre, .user = &c[i].acc};
        tir_visit(&v, c[i].s);
    }
    if (!deps_ok(p, f, c, n)) {
        free_comps(c, n);
        ir_vec_free(&allocs);
        return NULL;
    }
    int nasync = aa && aa->kind == TIR_ANNOT_INTS ? aa->nints : 0;
    const int64_t *async = nasync ? aa->ints : NULL;
    int64_t autos[MAXC];
    if (!aa && !p->st->opts.sync_pipeline_copies) {
        for (int64_t s = 0; s < maxs; s++)
            if (auto_async(p, c, n, s)) autos[nasync++] = s;
        async = autos;
    }
    for (int i = 0; i < n; i++)
        for (int a = 0; a < nasync; a++)
            if (c[i].stage == async[a]) c[i].async = true;
    /* a clamped tail's precondition */
    if (!plan_versions(p, f, c, n) || !unversioned_ok(p, f, c, n) ||
        (clamp && !clamp_ok(p, f, c, n, maxs))) {
        free_comps(c, n);
        ir_vec_free(&allocs);
        return NULL;
    }
    /* async copies */
    for (int i = 0; i < n; i++)
        if (c[i].async) {
            tir_mutator m = {.ctx = ctx, .user = p};
            m.on[TIR_KIND_BUFFER_STORE] = async_store;
            m.on[TIR_KIND_IF] = async_zero_fill;
            p->self_reads = &c[i].acc.reads;
            c[i].s = tir_mutate_stmt(&m, c[i].s);
        }
    /* emit */
    ir_vec out = {0};
    int64_t t_end = min + extent + maxs;
    int64_t body_lo = min + maxs, body_hi = min + extent; /* steady state [lo, hi) */
    p->extent = extent, p->maxs = maxs;
    /* without a steady state the prologue's times lack some commits that
     * the loop's wait counts assume: all static then */
    p->guard = (guard || clamp) && body_hi > body_lo && !tail_costs(p, f, c, n, min, extent, maxs);
    p->clamp = clamp && p->guard;
    for (int64_t t = min; t < (body_hi > body_lo ? body_lo : t_end); t++)
        emit_time(p, f, c, n, by_order, NULL, t, min, extent, async, nasync, &out);
    if (body_hi > body_lo) {
        emit_steady(p, f, c, n, by_order, body_lo, p->guard ? t_end : body_hi, async, nasync,
                    &out);
        for (int64_t t = p->guard ? t_end : body_hi; t < t_end; t++)
            emit_time(p, f, c, n, by_order, NULL, t, min, extent, async, nasync, &out);
    }
    /* a clamped tail's last copies (of the last tile, again) may still be
     * in flight after the loop: drained here, so that nothing after the
     * pipeline (or a later reuse of its shared memory) races with them */
    if (p->clamp && nasync > 0)
        ir_vec_push(&out, lower_intrin_stmt(ctx, TIR_INTRIN_CP_ASYNC_WAIT, 1,
                                            (const tir_expr *const[]){tir_i32(ctx, 0)}));
    const tir_stmt *res = tir_seq_new(ctx, out.n, (const tir_stmt *const *)out.items);
    ir_vec_free(&out);
    for (int i = allocs.n - 1; i >= 0; i--) {
        const tir_allocate *a = allocs.items[i];
        pbuf *pb = find_pbuf(p, a->buffer);
        res = lower_alloc_like(ctx, a, pb ? pb->nbuf : a->buffer, res);
    }
    ir_vec_free(&allocs);
    free_comps(c, n);
    return res;
}

typedef struct walk {
    pl *p;
    pbuf all[MAXB * 4];
    int nall;
} walk;

static const tir_node *on_for(tir_mutator *m, const tir_node *n) {
    walk *w = m->user;
    pl *p = w->p;
    const tir_for *f = (const tir_for *)n;
    tir_analyzer_bind(p->an, f->var, f->min, f->extent);
    const tir_for *r = (const tir_for *)tir_mutate_default(m, n);
    if (p->status != TIR_OK ||
        !tir_annots_get(r->nannots, r->annots, TIR_ANN_SOFTWARE_PIPELINE_STAGE))
        return (const tir_node *)r;
    p->min = 0;
    tir_expr_const_int(r->min, &p->min);
    const tir_stmt *s = expand(p, r);
    if (!s) return (const tir_node *)r;
    for (int i = 0; i < p->nbufs && w->nall < MAXB * 4; i++) w->all[w->nall++] = p->bufs[i];
    return (const tir_node *)s;
}

static const tir_node *on_alloc_all(tir_mutator *m, const tir_node *n) {
    walk *w = m->user;
    const tir_allocate *a = (const tir_allocate *)tir_mutate_default(m, n);
    for (int i = 0; i < w->nall; i++)
        if (w->all[i].buf == a->buffer && w->all[i].nbuf != a->buffer)
            return (const tir_node *)lower_alloc_like(m->ctx, a, w->all[i].nbuf, a->body);
    return (const tir_node *)a;
}

tir_status lower_sw_pipeline(lower_state *st, const tir_prim_func *in, const tir_prim_func **out) {
    pl p = {.st = st, .f = in, .an = tir_analyzer_create(st->ctx)};
    lower_thread_vars(in->body, &p.threads);
    walk w = {.p = &p};
    tir_mutator m = {.ctx = st->ctx, .user = &w};
    m.on[TIR_KIND_FOR] = on_for;
    const tir_stmt *body = tir_mutate_stmt(&m, in->body);
    tir_analyzer_destroy(p.an);
    ir_vec_free(&p.threads);
    if (p.status != TIR_OK) return p.status;
    if (w.nall) {
        tir_mutator am = {.ctx = st->ctx, .user = &w};
        am.on[TIR_KIND_ALLOCATE] = on_alloc_all;
        body = tir_mutate_stmt(&am, body);
    }
    *out = lower_with_body(st->ctx, in, body);
    return TIR_OK;
}
