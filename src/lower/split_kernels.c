/* split_kernels.c: a scheduled function that needs several kernels (TVM's
 * split_host_device, reduced to what minitir needs).
 *
 * A global buffer that the root block allocates (rfactor's C_rf) cannot
 * live inside one kernel: it is workspace the caller allocates, passed to
 * every kernel as an extra buffer parameter after the function's own.
 * The root block's top-level statements run in order; one that loads a
 * workspace buffer stored by an earlier statement of the kernel being
 * built starts a new kernel, since only the end of a launch orders the
 * writes of one thread block before the reads of another (stream order is
 * the grid-wide barrier).  A function without global intermediates is one
 * kernel, exactly tir_lower's.  Each kernel then goes through tir_lower.
 */
#include <string.h>

#include "lower_internal.h"

typedef struct {
    tir_visitor v;
    const tir_buffer *buf;
    lower_use u;
} use_state;

static bool use_pre(tir_visitor *v, const tir_node *n) {
    use_state *u = (use_state *)v;
    if (n == (const tir_node *)u->buf) u->u.any = true;
    const tir_buffer_load *ld = tir_as_tir_buffer_load(n);
    if (ld && ld->buffer == u->buf) u->u.load = true;
    const tir_buffer_store *st = tir_as_tir_buffer_store(n);
    if (st && st->buffer == u->buf) u->u.store = true;
    /* an element passed by address to a call may be written through it:
     * frag_store (tensor cores with split-K) stores C_rf's tiles that way,
     * and a sum reading them in the same kernel would race across blocks */
    const tir_call *call = tir_as_tir_call(n);
    for (int i = 0; call && i < call->nargs; i++) {
        const tir_buffer_load *a = lower_addressed(call, i);
        if (a && a->buffer == u->buf) u->u.store = true;
    }
    return true;
}

lower_use lower_buffer_use(const tir_stmt *st, const tir_buffer *buf) {
    use_state u = {{use_pre, NULL, NULL}, buf, {false, false, false}};
    tir_visit(&u.v, st);
    return u.u;
}

/* The kernel running stmts[0..n) of root block rb: rb with that body and
 * the allocations it uses, the workspace as extra parameters. */
static const tir_prim_func *kernel_func(tir_ctx *ctx, const tir_prim_func *f,
                                        const tir_block_realize *rr, int n,
                                        const tir_stmt *const *stmts, const tir_var *const *wvars,
                                        const tir_kernel_set *ks, const char *name) {
    const tir_block *rb = rr->block;
    const tir_stmt *body = tir_seq_new(ctx, n, stmts);
    const tir_buffer **allocs = tir_ctx_alloc(ctx, sizeof *allocs * (size_t)(rb->nallocs + 1));
    int na = 0;
    for (int i = 0; i < rb->nallocs; i++)
        if (rb->allocs[i]->scope != TIR_SCOPE_GLOBAL && lower_buffer_use(body, rb->allocs[i]).any)
            allocs[na++] = rb->allocs[i];
    tir_block_desc d;
    tir_block_describe(rb, &d);
    d.body = body;
    d.nallocs = na;
    d.allocs = allocs;
    const tir_stmt *root = tir_block_realize_new(ctx, rr->nvalues, rr->values, rr->predicate,
                                                 tir_block_new(ctx, &d));
    int np = f->nparams + ks->nworkspace;
    const tir_var **params = tir_ctx_alloc(ctx, sizeof *params * (size_t)np);
    const tir_buffer **bmap = tir_ctx_alloc(ctx, sizeof *bmap * (size_t)np);
    for (int i = 0; i < f->nparams; i++) {
        params[i] = f->params[i];
        bmap[i] = f->buffer_map[i];
    }
    for (int w = 0; w < ks->nworkspace; w++) {
        params[f->nparams + w] = wvars[w];
        bmap[f->nparams + w] = ks->workspace[w];
    }
    return tir_prim_func_new(ctx, name, np, params, bmap, root, f->nattrs, f->attrs);
}

/* Splits the root's statements into kernels (see the top of the file):
 * start[k] is the first statement of kernel k; returns the count.  With
 * alone_first the first statement is a kernel of its own (the atomic
 * split-K's zero fill of its output). */
static int plan_kernels(const tir_kernel_set *ks, int n, const tir_stmt *const *stmts,
                        bool alone_first, int *start) {
    int nk = 0, first = 0;
    for (int i = 0; i < n; i++) {
        bool cut = i == 0 || (alone_first && i == 1);
        for (int w = 0; w < ks->nworkspace && !cut; w++) {
            if (!lower_buffer_use(stmts[i], ks->workspace[w]).load) continue;
            for (int j = first; j < i && !cut; j++)
                cut = lower_buffer_use(stmts[j], ks->workspace[w]).store;
        }
        if (cut) start[nk++] = first = i;
    }
    return nk;
}

tir_status tir_lower_kernels(tir_ctx *ctx, const tir_prim_func *scheduled,
                             const tir_lower_opts *opts, tir_kernel_set *out) {
    if (!ctx) return TIR_ERR_INVALID_ARG;
    if (!scheduled || !out)
        return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG, "tir_lower_kernels: NULL function or result");
    memset(out, 0, sizeof *out);
    const tir_block_realize *rr = tir_as_tir_block_realize(scheduled->body);
    tir_kernel_set ks = {0};
    int n = 1;
    const tir_stmt *const *stmts = &scheduled->body;
    if (rr) {
        const tir_block *rb = rr->block;
        const tir_buffer **ws = tir_ctx_alloc(ctx, sizeof *ws * (size_t)(rb->nallocs + 1));
        for (int i = 0; i < rb->nallocs; i++)
            if (rb->allocs[i]->scope == TIR_SCOPE_GLOBAL) ws[ks.nworkspace++] = rb->allocs[i];
        ks.workspace = ws;
        const tir_seq *seq = tir_as_tir_seq(rb->body);
        n = seq ? seq->n : 1;
        stmts = seq ? seq->stmts : &rb->body;
    }
    bool atomic = lower_has_atomic_reduction(scheduled);
    if (atomic && !rr)
        return tir_ctx_fail(ctx, TIR_ERR_LOWER, "tir_lower_kernels: %s: an atomic_reduction "
                                                "block needs a root block",
                            scheduled->name);
    if (atomic) TIR_TRY(lower_atomic_split(ctx, scheduled, &ks, &n, &stmts));
    if (!atomic && (!rr || ks.nworkspace == 0)) {
        const tir_prim_func **k = tir_ctx_alloc(ctx, sizeof *k);
        TIR_TRY(tir_lower(ctx, scheduled, opts, k));
        out->nkernels = 1;
        out->kernels = k;
        return TIR_OK;
    }
    const tir_var **wvars = tir_ctx_alloc(ctx, sizeof *wvars * (size_t)ks.nworkspace);
    for (int w = 0; w < ks.nworkspace; w++)
        wvars[w] = tir_var_new(ctx, ks.workspace[w]->name, TIR_HANDLE);
    int *start = tir_ctx_alloc(ctx, sizeof *start * (size_t)(n + 1));
    int nk = plan_kernels(&ks, n, stmts, atomic, start);
    start[nk] = n;
    /* A shared or local buffer of the root lives in one kernel: what an
       earlier kernel stored there is gone when a later one loads it. */
    for (int i = 0; rr && nk > 1 && i < rr->block->nallocs; i++) {
        const tir_buffer *b = rr->block->allocs[i];
        if (b->scope == TIR_SCOPE_GLOBAL) continue;
        int stored = -1;
        for (int k = 0; k < nk; k++) {
            lower_use u = {false, false, false};
            for (int j = start[k]; j < start[k + 1]; j++) {
                lower_use v = lower_buffer_use(stmts[j], b);
                u.load |= v.load;
                u.store |= v.store;
            }
            if (u.load && stored >= 0)
                return tir_ctx_fail(
                    ctx, TIR_ERR_LOWER,
                    "tir_lower_kernels: %s: %s buffer '%s' is stored in kernel %d (top-level "
                    "statements %d to %d of the root block) and loaded in kernel %d (statements "
                    "%d to %d), but %s memory does not outlive a kernel: make it global, or "
                    "keep its writers and readers in one kernel",
                    scheduled->name, tir_scope_name(b->scope), b->name, stored, start[stored],
                    start[stored + 1] - 1, k, start[k], start[k + 1] - 1,
                    tir_scope_name(b->scope));
            if (u.store && stored < 0) stored = k;
        }
    }
    const tir_prim_func **kernels = tir_ctx_alloc(ctx, sizeof *kernels * (size_t)nk);
    for (int k = 0; k < nk; k++) {
        const char *name = nk == 1 ? scheduled->name
                                   : tir_ctx_sprintf(ctx, "%s_k%d", scheduled->name, k);
        const tir_prim_func *kf = kernel_func(ctx, scheduled, rr, start[k + 1] - start[k],
                                              stmts + start[k], wvars, &ks, name);
        tir_status s = tir_lower(ctx, kf, opts, &kernels[k]);
        if (s != TIR_OK) {
            const char *msg = tir_ctx_sprintf(ctx, "%s", tir_ctx_error(ctx));
            return tir_ctx_fail(ctx, s, "kernel %d of %d (%s, top-level statements %d to %d of "
                                        "the root block): %s",
                                k, nk, name, start[k], start[k + 1] - 1, msg);
        }
    }
    /* The caller allocates the workspace by its shape: a workspace
       buffer with padded strides (storage_align) spans more elements than
       its shape holds, so hand out the flattened parameter the kernels
       index (its footprint) instead. */
    for (int w = 0; w < ks.nworkspace; w++) {
        int64_t need = tir_buffer_const_size(ks.workspace[w]);
        for (int k = 0; k < nk; k++) {
            const tir_buffer *b = kernels[k]->nparams > scheduled->nparams + w
                                      ? kernels[k]->buffer_map[scheduled->nparams + w]
                                      : NULL;
            int64_t n = b ? tir_buffer_const_size(b) : -1;
            if (b && !b->strides && n > need) {
                need = n;
                ((const tir_buffer **)ks.workspace)[w] = b;
            }
        }
    }
    ks.nkernels = nk;
    ks.kernels = kernels;
    *out = ks;
    return TIR_OK;
}
