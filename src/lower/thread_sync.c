/* thread_sync.c: barrier insertion (TVM: ThreadSync for shared memory).
 *
 * Threads of a block see each other's shared-memory writes only across a
 * syncthreads.  Two accesses to one shared buffer conflict when one writes,
 * the other reads and their (flat) indices are not the same expression (the
 * same expression is the same element of the same thread).  "The same"
 * means the same variables, not equal up to renaming as tir_struct_equal
 * has it: `i*8 + j` written and `i*8 + k` read are different elements (a
 * cooperative fetch of one element per thread against the compute's reads
 * looked alike that way, and lost both barriers).  Each statement
 * is summarised by the accesses before its first barrier (head), those
 * after its last one (tail) and whether it always executes a barrier.  In a
 * sequence a barrier goes before a statement whose head conflicts with what
 * is pending since the last barrier; in a loop whose body contains a barrier
 * a barrier is added at the end of the body when the next iteration's head
 * conflicts with this iteration's tail (e.g. the copies of the next k tile
 * overwrite what the compute just read).  A body without any barrier has no
 * conflicting pair at all (the sequence rule would have placed one), so it
 * needs none across iterations either.  Barriers are never put under a
 * condition or into a loop whose bounds depend on threadIdx (not every
 * thread would reach them); such statements count as one access set.
 * A cp_async counts as a write where it is issued (it must not overwrite
 * what others still read) and again, of every element of every cp_async
 * target, at each cp_async_wait (where the data lands: readers in other
 * threads need a barrier after the wait).  An ldmatrix reads the 16
 * bytes of shared memory from its address (this lane's row) like
 * ordinary loads; mma_sync touches registers only.
 *
 * Disjoint elements.  Two accesses whose element ranges (every variable
 * relaxed over its loop, lane_id() over [0, 32)) do not meet never
 * conflict.  Between two barriers
 * every thread runs the same iteration of each enclosing serial loop, so
 * the ranges may also be compared with such a loop's variable k fixed: the
 * versions floormod(k, 2)*S and floormod(k + 1, 2)*S of a multi-buffered
 * pipeline are then disjoint, and a 2-stage pipeline gets one barrier per
 * iteration (write the next version, compute the current one, barrier).
 * That comparison only holds within one iteration, so a loop whose body
 * has no barrier compares its accesses again with k free (any two
 * iterations) and gets a barrier at the end of the body when they
 * conflict; across the back edge of a body with a barrier the next
 * iteration's head is compared at k + 1.
 */
#include <string.h>

#include "lower_internal.h"
#include "ir/text_internal.h"

enum { TS_MAX_LOOPS = 8, TS_MAX_ITERS = 1024 };

/* The elements an index reaches with every variable but k relaxed: the
 * range [min, min + extent) with min an expression in k. */
typedef struct krange {
    const tir_var *k;
    const tir_expr *min;
    int64_t extent;
} krange;

typedef struct acc {
    const tir_buffer *buf;
    bool write;
    const tir_expr *idx;
    bool bounded; /* every element lies in [lo, hi] */
    int64_t lo, hi;
    krange per[TS_MAX_LOOPS]; /* one per enclosing serial loop, where known */
    int nper;
} acc;

/* A serial loop being processed, with a constant range [lo, hi]. */
typedef struct sloop {
    const tir_var *var;
    int64_t lo, hi;
} sloop;

typedef struct summ {
    ir_vec head, tail; /* acc* */
    bool barrier;
} summ;

typedef struct ts {
    lower_state *st;
    lower_inflight inflight; /* the copies that may land at each wait */
    const tir_var *tvars[8]; /* enclosing threadIdx loop vars */
    int ntvars;
    ir_vec allt; /* every threadIdx loop var of the kernel */
    int nbarriers;
    tir_analyzer *an; /* every enclosing loop's range, and lane's */
    const tir_var *lane; /* stands for lane_id() in element ranges: [0, 32) */
    sloop loops[TS_MAX_LOOPS]; /* enclosing serial loops (see krange) */
    int nloops;
    ir_ptr_map binds;  /* var -> its tsbind, what ts_bind told the analyzer */
    int nsym;          /* bindings that are not two int constants */
    ir_ptr_map ranges; /* idx -> its erange list (elem_range's results) */
    ir_vec allocs;     /* tsbinds and eranges, freed at the end */
} ts;

/* What ts_bind last bound a variable to. */
typedef struct tsbind {
    int64_t min, extent;
    bool sym; /* not two int constants of the variable's dtype */
} tsbind;

/* One result of elem_range and the bindings it was computed under. */
typedef struct erange {
    struct erange *next; /* another k or other bindings, same idx */
    const tir_var *k;
    int nvars;
    const tir_var **vars; /* the index's variables (lane for lane_id()) */
    int64_t *min, *extent; /* their bindings */
    bool ok;
    krange r;
} erange;

static void *ts_alloc(ts *t, size_t size) {
    void *p = ir_xcalloc(1, size);
    ir_vec_push(&t->allocs, p);
    return p;
}

/* Every binding of t->an goes through here, so that t->binds knows it. */
static void ts_bind(ts *t, const tir_var *v, const tir_expr *min, const tir_expr *extent) {
    tir_analyzer_bind(t->an, v, min, extent);
    tsbind *b = ir_ptr_map_get(&t->binds, v);
    if (!b) {
        b = ts_alloc(t, sizeof *b);
        ir_ptr_map_put(&t->binds, v, b);
    } else if (b->sym) {
        t->nsym--;
    }
    b->sym = !(min->kind == TIR_KIND_INT_IMM && extent->kind == TIR_KIND_INT_IMM &&
               tir_dtype_eq(min->dtype, v->base.dtype) &&
               tir_dtype_eq(extent->dtype, v->base.dtype));
    b->min = b->sym ? 0 : ((const tir_int_imm *)min)->value;
    b->extent = b->sym ? 0 : ((const tir_int_imm *)extent)->value;
    if (b->sym) t->nsym++;
}

static void add(ir_vec *v, const acc *a) {
    for (int i = 0; i < v->n; i++) {
        const acc *b = v->items[i];
        if (b->buf == a->buf && b->write == a->write && b->idx == a->idx &&
            b->bounded == a->bounded && b->lo == a->lo && b->hi == a->hi && b->nper == a->nper)
            return;
    }
    ir_vec_push(v, a);
}

static void add_all(ir_vec *v, const ir_vec *w) {
    for (int i = 0; i < w->n; i++) add(v, w->items[i]);
}

static const krange *krange_of(const acc *a, const tir_var *k) {
    for (int i = 0; i < a->nper; i++)
        if (a->per[i].k == k) return &a->per[i];
    return NULL;
}

/* r's min at k = v, or false when it does not fold to a constant. */
static bool min_at(ts *t, const krange *r, int64_t v, int64_t *out) {
    const tir_expr *val = tir_int(t->st->ctx, ((const tir_expr *)r->k)->dtype, v);
    const tir_node *m = tir_substitute(t->st->ctx, r->min, 1, &r->k, &val);
    return tir_expr_const_int(tir_simplify(t->st->ctx, (const tir_expr *)m), out);
}

/* Do a at k and b at k + shift touch no common element, for every k of l
 * (where k + shift is an iteration too)? */
static bool disjoint_at(ts *t, const acc *a, const acc *b, const sloop *l, int64_t shift) {
    const krange *x = krange_of(a, l->var), *y = krange_of(b, l->var);
    if (!x || !y || l->hi - shift - l->lo >= TS_MAX_ITERS) return false;
    for (int64_t v = l->lo; v + shift <= l->hi; v++) {
        int64_t mx, my;
        if (!min_at(t, x, v, &mx) || !min_at(t, y, v + shift, &my)) return false;
        if (mx + x->extent > my && my + y->extent > mx) return false;
    }
    return true;
}

static bool thread_dependent(const ts *t, const tir_expr *idx) {
    return lower_uses_lane(idx) ||
           lower_uses_any(idx, t->allt.n, (const tir_var *const *)t->allt.items);
}

/* May x and y (access sets) conflict?  The first nfixed enclosing serial
 * loops are in the same iteration for both; next, if not NULL, is a loop
 * whose next iteration y is in (x in the current one). */
static bool conflict_in(ts *t, const ir_vec *x, const ir_vec *y, int nfixed,
                        const sloop *next) {
    for (int i = 0; i < x->n; i++)
        for (int j = 0; j < y->n; j++) {
            const acc *a = x->items[i], *b = y->items[j];
            if (a->buf != b->buf || a->write == b->write) continue;
            if (!a->idx || !b->idx) return true;
            /* The same expression is the same element of the same thread
               only when it depends on the thread: Mean[0], written by one
               thread and read by all, is one element of every thread. */
            if (ir_text_expr_same(a->idx, b->idx) && thread_dependent(t, a->idx)) continue;
            if (a->bounded && b->bounded && (a->hi < b->lo || b->hi < a->lo)) continue;
            bool apart = next && disjoint_at(t, a, b, next, 1);
            for (int l = 0; !apart && l < nfixed; l++)
                apart = disjoint_at(t, a, b, &t->loops[l], 0);
            if (!apart) return true;
        }
    return false;
}

/* Within one iteration of every enclosing serial loop. */
static bool conflict(ts *t, const ir_vec *x, const ir_vec *y) {
    return conflict_in(t, x, y, t->nloops, NULL);
}

typedef struct coll {
    ts *t;
    ir_vec *out;
    bool landing; /* adding copies that land at a wait */
} coll;

static const tir_node *lane_to_var(tir_mutator *m, const tir_node *n) {
    const tir_call *c = (const tir_call *)n;
    if (c->op == TIR_INTRIN_LANE_ID) return (const tir_node *)((const ts *)m->user)->lane;
    return tir_mutate_default(m, n);
}

/* The elements idx reaches with every variable but k (NULL: all) relaxed
 * over its range; false when unbounded or not of constant extent.
 * lane_id() (an ldmatrix row address per lane) is a variable of [0, 32):
 * without it an ldmatrix's rows had no range, met every copy, and the
 * Step 9 pipeline got three barriers per k tile instead of one.  *vars
 * gets the variables of the relaxed expression, k's and lane's included. */
static bool elem_range_of(ts *t, const tir_expr *idx, const tir_var *k, krange *out,
                          ir_vec *vars) {
    const tir_ramp *r = tir_as_tir_ramp(idx);
    const tir_broadcast *bc = tir_as_tir_broadcast(idx);
    int64_t stride = 0;
    if (r && !tir_expr_const_int(r->stride, &stride)) return false;
    const tir_expr *e = r ? r->start : bc ? bc->value : idx;
    tir_mutator lm = {.ctx = t->st->ctx, .user = t};
    lm.on[TIR_KIND_CALL] = lane_to_var;
    e = tir_mutate_expr(&lm, e);
    lower_collect_vars(e, vars);
    ir_vec relax = {0};
    for (int i = 0; i < vars->n; i++)
        if (vars->items[i] != k) ir_vec_push(&relax, vars->items[i]);
    tir_range rg;
    bool ok = tir_analyzer_relax(t->an, e, relax.n, (const tir_var *const *)relax.items, &rg) &&
              tir_expr_const_int(rg.extent, &out->extent);
    ir_vec_free(&relax);
    if (!ok) return false;
    int64_t span = r ? (r->lanes - 1) * stride : 0; /* the other lanes */
    out->k = k;
    out->min = span < 0 ? tir_add(t->st->ctx, rg.min, tir_int(t->st->ctx, rg.min->dtype, span))
                        : rg.min;
    out->extent += span < 0 ? -span : span;
    return true;
}

/* Are r's variables bound as they were when it was computed? */
static bool same_binds(const ts *t, const erange *r) {
    for (int i = 0; i < r->nvars; i++) {
        const tsbind *b = ir_ptr_map_get(&t->binds, r->vars[i]);
        if (!b || b->sym || b->min != r->min[i] || b->extent != r->extent[i]) return false;
    }
    return true;
}

/* elem_range_of, each (idx, k) relaxed once per bindings of its
 * variables: the landing copies of every wait, wait_feeds_later's second
 * look at the statements after a wait and each enclosing loop's k made
 * three relaxations of the same swizzled index in four (most of this
 * pass's time in Step 9).  Exact while every binding is two constants
 * (t->nsym == 0): the analyzer then bounds an expression from the ranges
 * of its own variables alone, and those are the key (idx and k fix the
 * expression relaxed and the variables relaxed).  The callers read a
 * result's min only through min_at, as a constant. */
static bool elem_range(ts *t, const tir_expr *idx, const tir_var *k, krange *out) {
    erange *head = ir_ptr_map_get(&t->ranges, idx);
    for (erange *r = head; t->nsym == 0 && r; r = r->next)
        if (r->k == k && same_binds(t, r)) {
            if (r->ok) *out = r->r;
            return r->ok;
        }
    ir_vec vars = {0};
    krange kr;
    bool ok = elem_range_of(t, idx, k, &kr, &vars);
    if (ok) *out = kr;
    bool keep = t->nsym == 0;
    for (int i = 0; keep && i < vars.n; i++) {
        const tsbind *b = ir_ptr_map_get(&t->binds, vars.items[i]);
        keep = b && !b->sym;
    }
    if (keep) {
        erange *r = ts_alloc(t, sizeof *r);
        *r = (erange){.next = head, .k = k, .nvars = vars.n, .ok = ok, .r = kr};
        r->vars = ts_alloc(t, sizeof r->vars[0] * (size_t)(vars.n + 1));
        r->min = ts_alloc(t, sizeof r->min[0] * (size_t)(vars.n + 1));
        r->extent = ts_alloc(t, sizeof r->extent[0] * (size_t)(vars.n + 1));
        for (int i = 0; i < vars.n; i++) {
            const tsbind *b = ir_ptr_map_get(&t->binds, vars.items[i]);
            r->vars[i] = vars.items[i];
            r->min[i] = b->min;
            r->extent[i] = b->extent;
        }
        ir_ptr_map_put(&t->ranges, idx, r);
    }
    ir_vec_free(&vars);
    return ok;
}

/* span: elements from each index value (an ldmatrix row: 16 bytes). */
static void add_access_span(coll *c, const tir_buffer *b, bool write, const tir_expr *idx,
                            int64_t span) {
    if (b->scope != TIR_SCOPE_SHARED && !lower_sync_global(c->t->st, b)) return;
    ts *t = c->t;
    acc *a = IR_NEW(t->st->ctx, acc);
    *a = (acc){.buf = b, .write = write, .idx = idx};
    krange all;
    if (idx && elem_range(t, idx, NULL, &all) && tir_expr_const_int(all.min, &a->lo)) {
        a->bounded = true;
        a->hi = a->lo + all.extent - 1 + (span - 1);
    }
    /* a landing copy may have been issued in an earlier iteration of any
     * enclosing loop: its variables are never fixed */
    for (int i = 0; idx && !c->landing && i < t->nloops; i++)
        if (tir_uses_var(idx, t->loops[i].var) &&
            elem_range(t, idx, t->loops[i].var, &a->per[a->nper]))
            a->per[a->nper++].extent += span - 1;
    add(c->out, a);
}

static void add_access(coll *c, const tir_buffer *b, bool write, const tir_expr *idx) {
    add_access_span(c, b, write, idx, 1);
}

/* Operand i of a cp_async (0: the shared element it writes, 1: the
 * source) and in *span the elements it copies from that index: a
 * hand-written scalar destination of 16 bytes is 4 floats (seen as one,
 * no barrier went between it and a read of the other three, and
 * race_check refused the kernel).  The source may be no address (NULL);
 * the destination is one (gpu_check). */
static const tir_buffer_load *copy_operand(const tir_call *cp, int i, int64_t *span) {
    const tir_buffer_load *l;
    *span = lower_span_operand(cp, i, &l);
    if (*span < 1) *span = 1; /* a constant 4, 8 or 16 bytes: gpu_check */
    TIR_ASSERT(l || i == 1);
    return l;
}

static bool coll_pre(tir_visitor *v, const tir_node *n) {
    coll *c = v->user;
    if (n->kind == TIR_KIND_FOR) {
        const tir_for *f = (const tir_for *)n;
        ts_bind(c->t, f->var, f->min, f->extent);
    } else if (n->kind == TIR_KIND_BUFFER_LOAD) {
        const tir_buffer_load *l = (const tir_buffer_load *)n;
        add_access(c, l->buffer, false, l->indices[0]);
    } else if (n->kind == TIR_KIND_BUFFER_STORE) {
        const tir_buffer_store *s = (const tir_buffer_store *)n;
        add_access(c, s->buffer, true, s->indices[0]);
    } else if (n->kind == TIR_KIND_CALL) {
        const tir_call *call = (const tir_call *)n;
        if (call->op == TIR_INTRIN_CP_ASYNC_WAIT) {
            /* the copies that may be in flight land here: writes with
             * their issue's index */
            const ir_vec *land = lower_inflight_at(&c->t->inflight, call);
            c->landing = true;
            for (int i = 0; land && i < land->n; i++) {
                int64_t span;
                const tir_buffer_load *l = copy_operand(land->items[i], 0, &span);
                add_access_span(c, l->buffer, true, l->indices[0], span);
            }
            c->landing = false;
            return false;
        }
        if (call->op == TIR_INTRIN_WGMMA_SYNC) { /* the warpgroup reads whole rows */
            for (int g = 0; g * 5 < call->nargs; g++) {
                const tir_expr *lo;
                int64_t span;
                const tir_buffer_load *l = lower_wgmma_tile(c->t->st->ctx, call, g, &lo, &span);
                TIR_ASSERT(l); /* lower_fragments' form, flattened */
                add_access_span(c, l->buffer, false, lo, span);
            }
            return false;
        }
        if (call->op == TIR_INTRIN_LDMATRIX) {
            const tir_call *src = tir_as_tir_call(call->args[3]);
            const tir_buffer_load *l = src ? tir_as_tir_buffer_load(src->args[0]) : NULL;
            TIR_ASSERT(l); /* lower_fragments' form */
            add_access_span(c, l->buffer, false, l->indices[0], lower_ldmatrix_row(l->buffer->dtype));
            return false;
        }
        if (call->op == TIR_INTRIN_CP_ASYNC) {
            int64_t span;
            const tir_buffer_load *l = copy_operand(call, 0, &span);
            add_access_span(c, l->buffer, true, l->indices[0], span);
            const tir_buffer_load *src = copy_operand(call, 1, &span);
            if (src) { /* a global written in this kernel (global_share) */
                add_access_span(c, src->buffer, false, src->indices[0], span);
                for (int d = 0; d < src->nidx; d++) tir_visit(v, src->indices[d]);
            } else {
                tir_visit(v, call->args[1]);
            }
            return false;
        }
    }
    return true;
}

/* Every shared access in s, as one set. */
static void leaf(ts *t, const tir_stmt *s, summ *r) {
    coll c = {t, &r->head, false};
    tir_visitor v = {.pre = coll_pre, .user = &c};
    tir_visit(&v, s);
    add_all(&r->tail, &r->head);
    r->barrier = false;
}

static void summ_free(summ *r) {
    ir_vec_free(&r->head);
    ir_vec_free(&r->tail);
}

static const tir_stmt *barrier(ts *t) {
    t->nbarriers++;
    return lower_intrin_stmt(t->st->ctx, TIR_INTRIN_SYNCTHREADS, 0, NULL);
}

static const tir_stmt *process(ts *t, const tir_stmt *s, summ *r);

/* Does a statement after the wait stmts[i], before the next barrier of the
 * sequence, touch what lands at the wait (its head, `land`)?  Then the
 * barrier goes right after the wait rather than before that statement, so
 * that the statements between (a pipeline's next copies, issued after the
 * wait) are ordered after everything before the wait too: with the
 * barrier before the reader instead, the next time step's copies would
 * meet this one's reads with no barrier between, and need one more. */
static bool wait_feeds_later(ts *t, int n, const tir_stmt *const *stmts, int i,
                             const ir_vec *land) {
    if (!lower_is_intrin_stmt(stmts[i], TIR_INTRIN_CP_ASYNC_WAIT)) return false;
    for (int j = i + 1; j < n && !lower_is_intrin_stmt(stmts[j], TIR_INTRIN_SYNCTHREADS); j++) {
        summ later = {{0}, {0}, false};
        leaf(t, stmts[j], &later);
        bool hit = conflict(t, land, &later.head);
        summ_free(&later);
        if (hit) return true;
    }
    return false;
}

/* The statements of a sequence (or one statement), barriers inserted. */
static const tir_stmt *process_seq(ts *t, int n, const tir_stmt *const *stmts, summ *r) {
    tir_ctx *ctx = t->st->ctx;
    ir_vec out = {0};
    ir_vec pending = {0};
    for (int i = 0; i < n; i++) {
        summ cr = {{0}, {0}, false};
        const tir_stmt *ns = process(t, stmts[i], &cr);
        if (conflict(t, &cr.head, &pending)) {
            ir_vec_push(&out, barrier(t));
            r->barrier = true;
            pending.n = 0;
        }
        if (!r->barrier) add_all(&r->head, &cr.head);
        if (cr.barrier) {
            r->barrier = true;
            pending.n = 0;
        }
        add_all(&pending, &cr.tail);
        ir_vec_push(&out, ns);
        if (wait_feeds_later(t, n, stmts, i, &cr.head)) {
            ir_vec_push(&out, barrier(t));
            r->barrier = true;
            pending.n = 0;
        }
        summ_free(&cr);
    }
    add_all(&r->tail, &pending);
    const tir_stmt *res = tir_seq_new(ctx, out.n, (const tir_stmt *const *)out.items);
    ir_vec_free(&out);
    ir_vec_free(&pending);
    return res;
}

/* The body of serial loop f (its variable fixed while it is processed),
 * and a barrier at its end when the next iteration would conflict. */
static const tir_stmt *process_loop_body(ts *t, const tir_for *f, summ *r) {
    sloop l = {f->var, 1, 0}; /* no constant range: never fixed */
    int64_t min, ext;
    if (tir_expr_const_int(f->min, &min) && tir_expr_const_int(f->extent, &ext))
        l = (sloop){f->var, min, min + ext - 1};
    bool push = l.lo <= l.hi && t->nloops < TS_MAX_LOOPS;
    if (push) t->loops[t->nloops++] = l;
    const tir_stmt *b = process(t, f->body, r);
    if (push) t->nloops--;
    bool again = l.lo > l.hi || l.hi > l.lo; /* may run more than once */
    /* with a barrier: this iteration's tail against the next one's head;
     * without: any two iterations (k was fixed in the body's rules) */
    bool need = !again ? false
                : r->barrier ? conflict_in(t, &r->tail, &r->head, t->nloops, push ? &l : NULL)
                             : conflict_in(t, &r->head, &r->head, t->nloops, NULL);
    if (need) {
        b = lower_seq2(t->st->ctx, b, barrier(t));
        r->barrier = true;
        r->tail.n = 0;
    }
    return b;
}

static const tir_stmt *process(ts *t, const tir_stmt *s, summ *r) {
    tir_ctx *ctx = t->st->ctx;
    switch ((tir_kind)s->kind) {
    case TIR_KIND_SEQ: {
        const tir_seq *q = (const tir_seq *)s;
        return process_seq(t, q->n, q->stmts, r);
    }
    case TIR_KIND_ALLOCATE: {
        const tir_allocate *a = (const tir_allocate *)s;
        const tir_stmt *b = process(t, a->body, r);
        return b == a->body ? s : lower_alloc_like(ctx, a, a->buffer, b);
    }
    case TIR_KIND_FOR: {
        const tir_for *f = (const tir_for *)s;
        ts_bind(t, f->var, f->min, f->extent);
        if (f->kind == TIR_FOR_THREAD_BINDING) {
            bool th = lower_is_thread_loop(f);
            if (th) {
                TIR_ASSERT(t->ntvars < 8);
                t->tvars[t->ntvars++] = f->var;
            }
            const tir_stmt *b = process(t, f->body, r);
            if (th) t->ntvars--;
            return b == f->body ? s
                                : tir_for_new(ctx, f->var, f->min, f->extent, f->kind,
                                              f->thread_tag, f->nannots, f->annots, b);
        }
        if (lower_uses_any(f->min, t->ntvars, t->tvars) ||
            lower_uses_any(f->extent, t->ntvars, t->tvars)) {
            leaf(t, s, r);
            return s;
        }
        const tir_stmt *b = process_loop_body(t, f, r);
        return b == f->body ? s
                            : tir_for_new(ctx, f->var, f->min, f->extent, f->kind, f->thread_tag,
                                          f->nannots, f->annots, b);
    }
    case TIR_KIND_IF: {
        const tir_if *i = (const tir_if *)s;
        if (lower_uses_any(i->cond, t->ntvars, t->tvars)) {
            leaf(t, s, r);
            return s;
        }
        summ a = {{0}, {0}, false}, b = {{0}, {0}, false};
        const tir_stmt *ts_ = process(t, i->then_s, &a);
        const tir_stmt *es = i->else_s ? process(t, i->else_s, &b) : NULL;
        r->barrier = a.barrier && b.barrier;
        add_all(&r->head, &a.head);
        add_all(&r->head, &b.head);
        add_all(&r->tail, &a.tail);
        add_all(&r->tail, &b.tail);
        if (!r->barrier) {
            add_all(&r->tail, &a.head);
            add_all(&r->tail, &b.head);
        }
        summ_free(&a);
        summ_free(&b);
        if (ts_ == i->then_s && es == i->else_s) return s;
        return tir_if_new(ctx, i->cond, ts_, es);
    }
    default:
        if (lower_is_intrin_stmt(s, TIR_INTRIN_SYNCTHREADS)) {
            r->barrier = true;
            return s;
        }
        leaf(t, s, r);
        return s;
    }
}

/* Binds every loop's range first: a copy landing at a wait may have been
 * issued later in the loop body (in the previous iteration), under loops
 * not yet visited. */
static bool bind_pre(tir_visitor *v, const tir_node *n) {
    ts *t = v->user;
    if (n->kind == TIR_KIND_FOR) {
        const tir_for *f = (const tir_for *)n;
        ts_bind(t, f->var, f->min, f->extent);
        if (f->kind == TIR_FOR_THREAD_BINDING && lower_is_thread_loop(f))
            ir_vec_push(&t->allt, (void *)f->var);
    }
    return true;
}

tir_status lower_thread_sync(lower_state *st, const tir_prim_func *in, const tir_prim_func **out) {
    ts t = {.st = st, .an = tir_analyzer_create(st->ctx),
            .lane = tir_var_new(st->ctx, "lane", TIR_I32)};
    ts_bind(&t, t.lane, tir_int(st->ctx, TIR_I32, 0), tir_int(st->ctx, TIR_I32, 32));
    tir_visitor bv = {.pre = bind_pre, .user = &t};
    tir_visit(&bv, in->body);
    lower_inflight_compute(in->body, &t.inflight);
    summ r = {{0}, {0}, false};
    const tir_stmt *body = process(&t, in->body, &r);
    summ_free(&r);
    lower_inflight_free(&t.inflight);
    tir_analyzer_destroy(t.an);
    for (int i = 0; i < t.allocs.n; i++) free((void *)t.allocs.items[i]);
    ir_vec_free(&t.allocs);
    ir_vec_free(&t.allt);
    ir_ptr_map_free(&t.binds);
    ir_ptr_map_free(&t.ranges);
    *out = lower_with_body(st->ctx, in, body);
    return TIR_OK;
}
