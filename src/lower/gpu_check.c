/* gpu_check.c: can this schedule run on a GPU at all?  (TVM: VerifyGPUCode,
 * checked here on the scheduled form so that messages can name the loops
 * and blocks the user wrote.)  Every store must run under a blockIdx and a
 * threadIdx binding, each thread axis has one constant extent in the
 * kernel, threads per block stay within the target limits, parallel and
 * vthread loops are refused, and blocks allocate only buffers of constant
 * shape in shared or local scope.  The shared/local size limits are checked
 * on the compacted buffers by check_kernel.  A vector index written in the
 * schedule (T.Ramp) into shared or local memory must be affine in the lane
 * (Ramps, Broadcasts, their sums and products by a Broadcast): thread_sync
 * and race_check take no gathers there (they aborted on one before this
 * check); global memory takes any.  T.domain_guard, lowering's own mark
 * of a ragged tile's guard, is refused in the input, and so is an index
 * of another type than int32 or int64.  A hand-written cp_async copies 4,
 * 8 or 16 bytes, whole elements of both sides, from a global element into
 * a shared one.
 */

#include "lower_internal.h"

/* The launch axes of minitir/thread_axes.def: blockIdx x, y, z, then
 * threadIdx x, y, z. */
enum { NTAGS = TIR_NLAUNCH_AXES };

typedef struct gc {
    lower_state *st;
    const tir_prim_func *f;
    const tir_for *first[NTAGS]; /* first loop seen per tag */
    int nblock, nthread;         /* enclosing blockIdx / threadIdx loops */
    const tir_block *block;      /* innermost enclosing block */
    const tir_stmt *block_stmt;  /* its BlockRealize */
} gc;

static tir_status check(gc *c, const tir_stmt *s);

static tir_status check_for(gc *c, const tir_for *f) {
    lower_state *st = c->st;
    if (f->kind == TIR_FOR_PARALLEL)
        return lower_fail_marked(st, c->f, 1, (const void *[]){f},
                                 "gpu_check: loop '%s' is parallel; on a GPU bind it to "
                                 "blockIdx/threadIdx instead",
                                 f->var->name);
    if (f->kind != TIR_FOR_THREAD_BINDING) return check(c, f->body);
    int t = tir_launch_axis(f->thread_tag);
    if (t < 0)
        return lower_fail_marked(st, c->f, 1, (const void *[]){f},
                                 "gpu_check: loop '%s' is bound to '%s', which this target "
                                 "does not support (only%s)",
                                 f->var->name, f->thread_tag ? f->thread_tag : "?",
                                 tir_thread_axis_tags(true));
    int64_t v;
    if (!tir_expr_const_int(f->min, &v) || v != 0)
        return lower_fail_marked(st, c->f, 1, (const void *[]){f},
                                 "gpu_check: thread-bound loop '%s' must start at 0", f->var->name);
    bool is_thread = tir_thread_axis_kind(t) == TIR_AXIS_KIND_THREAD;
    if (is_thread) {
        if (!tir_expr_const_int(f->extent, &v) || v <= 0)
            return lower_fail_marked(st, c->f, 1, (const void *[]){f},
                                     "gpu_check: loop '%s' bound to %s needs a constant "
                                     "positive extent",
                                     f->var->name, f->thread_tag);
        if (v > st->opts.max_thread_extent[tir_thread_axis_dim(t)])
            return lower_fail_marked(st, c->f, 1, (const void *[]){f},
                                     "gpu_check: loop '%s' bound to %s has extent %lld, "
                                     "more than the limit %d of that axis",
                                     f->var->name, f->thread_tag, (long long)v,
                                     st->opts.max_thread_extent[tir_thread_axis_dim(t)]);
    }
    if (c->first[t] && !tir_struct_equal(c->first[t]->extent, f->extent))
        return lower_fail_marked(
            st, c->f, 2, (const void *[]){c->first[t], f},
            "gpu_check: %s is bound with two different extents (%s in loop '%s', %s in loop "
            "'%s'); one kernel has one launch size per axis",
            f->thread_tag, tir_print(st->ctx, c->first[t]->extent), c->first[t]->var->name,
            tir_print(st->ctx, f->extent), f->var->name);
    if (!c->first[t]) c->first[t] = f;
    if (is_thread)
        c->nthread++;
    else
        c->nblock++;
    tir_status s = check(c, f->body);
    if (is_thread)
        c->nthread--;
    else
        c->nblock--;
    return s;
}

static tir_status check(gc *c, const tir_stmt *s) {
    if (!s) return TIR_OK;
    lower_state *st = c->st;
    switch ((tir_kind)s->kind) {
    case TIR_KIND_FOR: return check_for(c, (const tir_for *)s);
    case TIR_KIND_SEQ: {
        const tir_seq *q = (const tir_seq *)s;
        for (int i = 0; i < q->n; i++) TIR_TRY(check(c, q->stmts[i]));
        return TIR_OK;
    }
    case TIR_KIND_IF: {
        const tir_if *i = (const tir_if *)s;
        TIR_TRY(check(c, i->then_s));
        return check(c, i->else_s);
    }
    case TIR_KIND_ALLOCATE: return check(c, ((const tir_allocate *)s)->body);
    case TIR_KIND_BLOCK_REALIZE: {
        const tir_block_realize *r = (const tir_block_realize *)s;
        const tir_block *b = r->block;
        for (int i = 0; i < b->nallocs; i++) {
            const tir_buffer *buf = b->allocs[i];
            /* a shared or local buffer of symbolic shape may still
               compact to a constant one: compact_alloc decides */
            if (tir_buffer_const_size(buf) < 0 && buf->scope == TIR_SCOPE_GLOBAL)
                return lower_fail_marked(st, c->f, 1, (const void *[]){s},
                                         "gpu_check: buffer '%s' allocated in block '%s' has "
                                         "a symbolic shape; GPU kernels need static sizes",
                                         buf->name, b->name);
            if (buf->scope == TIR_SCOPE_GLOBAL)
                return lower_fail_marked(st, c->f, 1, (const void *[]){s},
                                         "gpu_check: buffer '%s' allocated in block '%s' is "
                                         "global; kernels cannot allocate global memory (make "
                                         "it shared or local, e.g. with cache_read/"
                                         "cache_write, or inline it)",
                                         buf->name, b->name);
        }
        const tir_block *ob = c->block;
        const tir_stmt *os = c->block_stmt;
        c->block = b;
        c->block_stmt = s;
        tir_status r2 = check(c, b->init);
        if (r2 == TIR_OK) r2 = check(c, b->body);
        c->block = ob;
        c->block_stmt = os;
        return r2;
    }
    case TIR_KIND_BUFFER_STORE:
        if (c->nblock == 0 || c->nthread == 0) {
            const void *mark = c->block_stmt ? (const void *)c->block_stmt : (const void *)s;
            return lower_fail_marked(
                st, c->f, 1, (const void *[]){mark},
                "gpu_check: block '%s' runs outside %s loops: all work of a GPU kernel must be "
                "under blockIdx and threadIdx bindings (bind its loops with tir_sched_bind)",
                c->block ? c->block->name : "?",
                c->nblock == 0 ? "blockIdx-bound" : "threadIdx-bound");
        }
        return TIR_OK;
    default: return TIR_OK;
    }
}

/* The first load or store at a vector index that is not affine in the
 * lane, and the innermost block around it. */
typedef struct vec_find {
    const tir_block *blocks[64];
    int n;
    const tir_node *bad;
    const tir_block *bad_block;
    const tir_node *guard; /* a T.domain_guard written in the input */
    const tir_node *narrow; /* an access indexed by another type than int32/int64 */
} vec_find;

static bool vec_pre(tir_visitor *v, const tir_node *n) {
    vec_find *f = v->user;
    if (f->bad || f->guard || f->narrow) return false;
    if (n->kind == TIR_KIND_CALL && ((const tir_call *)n)->op == TIR_INTRIN_DOMAIN_GUARD) {
        f->guard = n;
        return false;
    }
    if (n->kind == TIR_KIND_BLOCK_REALIZE) {
        if (f->n < 64) f->blocks[f->n] = ((const tir_block_realize *)n)->block;
        f->n++;
        return true;
    }
    int ni;
    const tir_expr *const *idx;
    const tir_buffer *b;
    if (!lower_access(n, &b, &ni, &idx)) return true;
    for (int d = 0; d < ni; d++)
        if (idx[d]->dtype.code != TIR_TYPE_INT || idx[d]->dtype.bits < 32) {
            f->narrow = n;
            f->bad_block = f->n > 0 && f->n <= 64 ? f->blocks[f->n - 1] : NULL;
            return false;
        }
    if (b->scope == TIR_SCOPE_GLOBAL) return true; /* gathers from global memory lower */
    for (int d = 0; d < ni; d++)
        if (idx[d]->dtype.lanes > 1 && !lower_ramp_parts(NULL, idx[d], NULL, NULL)) {
            f->bad = n;
            f->bad_block = f->n > 0 && f->n <= 64 ? f->blocks[f->n - 1] : NULL;
            return false;
        }
    return true;
}

static void vec_post(tir_visitor *v, const tir_node *n) {
    if (n->kind == TIR_KIND_BLOCK_REALIZE) ((vec_find *)v->user)->n--;
}

/* ---- hand-written cp_async
 *
 * The passes take a cp_async's operands in the form sw_pipeline makes
 * them: thread_sync asserted an address as destination, and compact_alloc,
 * thread_sync and race_check count bytes / element size elements from
 * each address.  A size of 6 bytes between float32 buffers copied one
 * element and a half, silently on a GPU (codegen took any 4, 8 or 16, the
 * interpreter and the simulator report it when they run). */
typedef struct copy_find {
    lower_state *st;
    const tir_prim_func *f;
    tir_status err;
} copy_find;

/* Why operand i of copy k is wrong, or NULL. */
static const char *copy_operand_err(tir_ctx *ctx, const tir_call *k, int i, int64_t bytes) {
    const tir_buffer_load *l = lower_addressed(k, i);
    const char *what = i == 0 ? "destination" : "source";
    tir_scope want = i == 0 ? TIR_SCOPE_SHARED : TIR_SCOPE_GLOBAL;
    if (!l) return tir_ctx_sprintf(ctx, "its %s must be T.address_of(an element)", what);
    if (l->buffer->scope != want)
        return tir_ctx_sprintf(ctx, "its %s '%s' is %s, not %s", what, l->buffer->name,
                               tir_scope_name(l->buffer->scope), tir_scope_name(want));
    int64_t eb = tir_dtype_bytes(l->buffer->dtype), st;
    if (bytes % eb)
        return tir_ctx_sprintf(ctx, "%lld bytes are not whole elements of its %s '%s' (%lld "
                               "bytes each)",
                               (long long)bytes, what, l->buffer->name, (long long)eb);
    const tir_expr *x = l->nidx ? l->indices[l->nidx - 1] : NULL;
    const tir_ramp *r = x ? tir_as_tir_ramp(x) : NULL;
    if (x && x->dtype.lanes > 1 &&
        !(r && tir_expr_const_int(r->stride, &st) && st == 1 && x->dtype.lanes * eb == bytes))
        return tir_ctx_sprintf(ctx, "a vector %s index must be a T.Ramp of stride 1 over the "
                               "%lld elements copied",
                               what, (long long)(bytes / eb));
    return NULL;
}

static bool copy_pre(tir_visitor *v, const tir_node *n) {
    copy_find *k = v->user;
    const tir_evaluate *ev = tir_as_tir_evaluate(n);
    const tir_call *cp = ev ? tir_as_tir_call(ev->value) : NULL;
    if (k->err != TIR_OK) return false;
    if (!cp || cp->op != TIR_INTRIN_CP_ASYNC) return true;
    tir_ctx *ctx = k->st->ctx;
    int64_t bytes = 0, sb;
    const char *why = NULL;
    if (!tir_expr_const_int(cp->args[2], &bytes) || (bytes != 4 && bytes != 8 && bytes != 16))
        why = "its size must be the constant 4, 8 or 16 (bytes)";
    for (int i = 0; i < 2 && !why; i++) why = copy_operand_err(ctx, cp, i, bytes);
    if (!why && cp->nargs == 4) {
        int64_t eb = tir_dtype_bytes(lower_addressed(cp, 1)->buffer->dtype);
        if (!tir_dtype_eq(cp->args[3]->dtype, TIR_I32))
            why = "its src_bytes must be int32";
        else if (tir_expr_const_int(cp->args[3], &sb) && (sb < 0 || sb > bytes || sb % eb))
            why = tir_ctx_sprintf(ctx, "its src_bytes %lld must be whole source elements "
                                       "from 0 to %lld",
                                  (long long)sb, (long long)bytes);
    }
    if (why)
        k->err = lower_fail_marked(k->st, k->f, 1, (const void *[]){n},
                                   "gpu_check: T.cp_async copies bytes from a global element "
                                   "into a shared one, but %s",
                                   why);
    return false;
}

/* ---- global stores repeated along a launch axis
 *
 * A store outside every loop bound to a launch axis that the kernel uses
 * with more than one index runs once per index of that axis (every block,
 * or every thread, repeats it).  That is harmless for a pure store of the
 * same value, but not when the repeated store reads the buffer it writes
 * (each repetition adds again) or when the buffer is also stored under
 * that axis: decompose_reduction's init, left outside the loop later bound
 * to threadIdx.y or blockIdx.y, zeroed C in every thread or block while
 * the others accumulated into it (a race the sequential meaning has not). */
typedef struct rep_store {
    const tir_buffer_store *st;
    const tir_stmt *mark;
    const char *block;
    unsigned mask; /* enclosing launch axes */
} rep_store;

typedef struct rep {
    ir_vec stores; /* rep_store* */
    int depth[NTAGS];
    const tir_stmt *block_stmt;
    const char *block;
} rep;

static void rep_walk(rep *r, const tir_stmt *s) {
    if (!s) return;
    switch ((tir_kind)s->kind) {
    case TIR_KIND_FOR: {
        const tir_for *f = (const tir_for *)s;
        int t = f->kind == TIR_FOR_THREAD_BINDING ? tir_launch_axis(f->thread_tag) : -1;
        if (t >= 0) r->depth[t]++;
        rep_walk(r, f->body);
        if (t >= 0) r->depth[t]--;
        return;
    }
    case TIR_KIND_SEQ: {
        const tir_seq *q = (const tir_seq *)s;
        for (int i = 0; i < q->n; i++) rep_walk(r, q->stmts[i]);
        return;
    }
    case TIR_KIND_IF:
        rep_walk(r, ((const tir_if *)s)->then_s);
        rep_walk(r, ((const tir_if *)s)->else_s);
        return;
    case TIR_KIND_ALLOCATE: rep_walk(r, ((const tir_allocate *)s)->body); return;
    case TIR_KIND_BLOCK_REALIZE: {
        const tir_block *b = ((const tir_block_realize *)s)->block;
        const tir_stmt *os = r->block_stmt;
        const char *ob = r->block;
        r->block_stmt = s;
        r->block = b->name;
        rep_walk(r, b->init);
        rep_walk(r, b->body);
        r->block_stmt = os;
        r->block = ob;
        return;
    }
    case TIR_KIND_BUFFER_STORE: {
        const tir_buffer_store *st = (const tir_buffer_store *)s;
        if (st->buffer->scope != TIR_SCOPE_GLOBAL) return;
        rep_store *e = ir_xcalloc(1, sizeof *e);
        e->st = st;
        e->mark = r->block_stmt ? r->block_stmt : s;
        e->block = r->block;
        for (int t = 0; t < NTAGS; t++)
            if (r->depth[t]) e->mask |= 1u << t;
        ir_vec_push(&r->stores, e);
        return;
    }
    default: return;
    }
}

static tir_status check_repeated(gc *c, const tir_prim_func *in) {
    unsigned used = 0;
    for (int t = 0; t < NTAGS; t++) {
        int64_t v;
        if (c->first[t] && !(tir_expr_const_int(c->first[t]->extent, &v) && v == 1))
            used |= 1u << t;
    }
    rep r = {.stores = {0}};
    rep_walk(&r, in->body);
    tir_status s = TIR_OK;
    for (int i = 0; i < r.stores.n && s == TIR_OK; i++) {
        const rep_store *a = r.stores.items[i];
        unsigned missing = used & ~a->mask;
        for (int t = 0; t < NTAGS && missing && s == TIR_OK; t++) {
            if (!(missing >> t & 1)) continue;
            const rep_store *other = NULL;
            if (lower_reads_buffer(a->st->value, a->st->buffer)) other = a;
            for (int j = 0; j < r.stores.n && !other; j++) {
                const rep_store *b = r.stores.items[j];
                if (b->st->buffer == a->st->buffer && (b->mask >> t & 1)) other = b;
            }
            if (!other) continue;
            const tir_for *axis = c->first[t];
            s = lower_fail_marked(
                c->st, in, other == a ? 1 : 2, (const void *[]){a->mark, other->mark},
                "gpu_check: block '%s' stores global buffer '%s' outside every loop bound to "
                "%s (loop '%s'), so each %s repeats the store, %s; bind or move that "
                "block's loops under the %s loop too (e.g. decompose_reduction after the "
                "binds, or at a loop inside it)",
                a->block ? a->block : "?", a->st->buffer->name, axis->thread_tag,
                axis->var->name,
                tir_thread_axis_kind(t) == TIR_AXIS_KIND_THREAD ? "thread" : "thread block",
                other == a ? "adding its value again each time"
                           : tir_ctx_sprintf(c->st->ctx,
                                             "racing with block '%s', which stores it under %s",
                                             other->block ? other->block : "?",
                                             axis->thread_tag),
                axis->thread_tag);
        }
    }
    for (int i = 0; i < r.stores.n; i++) free((void *)r.stores.items[i]);
    ir_vec_free(&r.stores);
    return s;
}

tir_status lower_gpu_check(lower_state *st, const tir_prim_func *in, const tir_prim_func **out) {
    gc c = {.st = st, .f = in};
    vec_find vf = {.n = 0};
    tir_visitor v = {.pre = vec_pre, .post = vec_post, .user = &vf};
    tir_visit(&v, in->body);
    if (vf.bad) {
        const tir_buffer *b;
        int ni;
        const tir_expr *const *idx;
        lower_access(vf.bad, &b, &ni, &idx);
        return lower_fail_marked(st, in, 0, NULL,
                                 "gpu_check: block '%s' indexes %s buffer '%s' with a vector "
                                 "that is not affine in the lane (a gather); lowering takes T.Ramp "
                                 "and T.Broadcast indices, their sums and products by a "
                                 "T.Broadcast; write a loop instead (tir_sched_vectorize makes "
                                 "the vectors)",
                                 vf.bad_block ? vf.bad_block->name : "?",
                                 tir_scope_name(b->scope), b->name);
    }
    if (vf.narrow) {
        /* the lowered form indexes with int32 or int64 (lowered-ir.md);
         * `S[T.uint8(3)]` beside `S[3]` aborted compact_alloc (review of
         * the sixteenth session) */
        const tir_buffer *b;
        int ni;
        const tir_expr *const *idx;
        lower_access(vf.narrow, &b, &ni, &idx);
        int d = 0;
        while (d < ni - 1 && idx[d]->dtype.code == TIR_TYPE_INT && idx[d]->dtype.bits >= 32) d++;
        char dt[32];
        tir_dtype_str(tir_dtype_with_lanes(idx[d]->dtype, 1), dt, sizeof dt);
        return lower_fail_marked(st, in, 1, (const void *[]){vf.narrow},
                                 "gpu_check: buffer '%s' is indexed with a %s value (index %d); "
                                 "indices must be int32 or int64: cast it (T.Cast(\"int32\", ...))",
                                 b->name, dt, d);
    }
    if (vf.guard)
        /* relax_guards drops or zero-fills what such a guard guards,
         * trusting lower_blocks that it guards a ragged tile: written by a
         * user, `if T.domain_guard(tx < 2, 0): C[tx] = ...` stored C[2]
         * and C[3] too (silently, before the sixteenth session) */
        return lower_fail_marked(st, in, 1, (const void *[]){vf.guard},
                                 "gpu_check: T.domain_guard is lowering's own mark of a ragged "
                                 "tile's guard (lower_blocks makes it, relax_guards drops or "
                                 "zero-fills what it guards); a function given to tir_lower "
                                 "cannot contain it: write the condition itself");
    copy_find cf = {st, in, TIR_OK};
    tir_visitor cv = {.pre = copy_pre, .user = &cf};
    tir_visit(&cv, in->body);
    TIR_TRY(cf.err);
    TIR_TRY(check(&c, in->body));
    TIR_TRY(check_repeated(&c, in));
    int64_t threads = 1;
    for (int t = TIR_AXIS_THREAD_X; t < NTAGS; t++) {
        int64_t v;
        if (c.first[t] && tir_expr_const_int(c.first[t]->extent, &v)) threads *= v;
    }
    if (threads > st->opts.max_threads_per_block) {
        const void *marks[3];
        int n = 0;
        for (int t = TIR_AXIS_THREAD_X; t < NTAGS; t++)
            if (c.first[t]) marks[n++] = c.first[t];
        return lower_fail_marked(st, in, n, marks,
                                 "gpu_check: %lld threads per block, more than the limit %d "
                                 "(the product of the threadIdx extents)",
                                 (long long)threads, st->opts.max_threads_per_block);
    }
    *out = in;
    return TIR_OK;
}
