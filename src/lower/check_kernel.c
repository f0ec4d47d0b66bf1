/* check_kernel.c: the last pass checks that the result has the lowered form
 * of docs/lowered-ir.md (no blocks, no vectorized or parallel loops left,
 * 1-D buffers, constant-size shared/local allocations) and that shared
 * memory per block (up to the target's opt-in maximum: codegen puts a
 * kernel over 48 KiB in dynamic shared memory) and local memory per thread
 * stay within the target limits; a violation of the form is a lowering bug (assertion), an
 * allocation over the limit a user error naming the buffers.  The launch
 * sizes go through the one launch check every later layer uses
 * (tir_launch_check, launch.c), so a kernel lowering accepts is one that
 * codegen and the simulator accept.
 */
#include <string.h>

#include "lower_internal.h"

typedef struct ck {
    lower_state *st;
    const tir_prim_func *f;
    ir_vec shared, local; /* distinct buffers */
} ck;

static void add_unique(ir_vec *v, const tir_buffer *b) {
    for (int i = 0; i < v->n; i++)
        if (v->items[i] == b) return;
    ir_vec_push(v, b);
}

static bool pre(tir_visitor *v, const tir_node *n) {
    ck *c = v->user;
    switch ((tir_kind)n->kind) {
    case TIR_KIND_BLOCK:
    case TIR_KIND_BLOCK_REALIZE: TIR_ASSERT(!"block left after lowering"); break;
    case TIR_KIND_FOR: {
        const tir_for *f = (const tir_for *)n;
        TIR_ASSERT(f->kind != TIR_FOR_VECTORIZED && f->kind != TIR_FOR_PARALLEL);
        break;
    }
    case TIR_KIND_ALLOCATE: {
        const tir_buffer *b = ((const tir_allocate *)n)->buffer;
        TIR_ASSERT(b->ndim == 1 && tir_buffer_const_size(b) >= 0);
        add_unique(b->scope == TIR_SCOPE_SHARED ? &c->shared : &c->local, b);
        break;
    }
    case TIR_KIND_BUFFER_LOAD: TIR_ASSERT(((const tir_buffer_load *)n)->nidx == 1); break;
    case TIR_KIND_BUFFER_STORE: TIR_ASSERT(((const tir_buffer_store *)n)->nidx == 1); break;
    default: break;
    }
    return true;
}

static int64_t total(const ir_vec *v, bool round16) {
    int64_t t = 0;
    for (int i = 0; i < v->n; i++) {
        const tir_buffer *b = v->items[i];
        int64_t bytes = tir_buffer_const_size(b) * (int64_t)tir_dtype_bytes(b->dtype);
        int64_t al = round16 ? (b->align > 16 ? b->align : 16) : 1;
        t = (t + al - 1) / al * al + bytes;
    }
    return t;
}

static const char *names(tir_ctx *ctx, const ir_vec *v) {
    ir_strbuf sb;
    ir_sb_init(&sb);
    for (int i = 0; i < v->n; i++) {
        const tir_buffer *b = v->items[i];
        ir_sb_printf(&sb, "%s%s (%lld bytes)", i ? ", " : "", b->name,
                     (long long)(tir_buffer_const_size(b) * (int64_t)tir_dtype_bytes(b->dtype)));
    }
    return ir_sb_finish(&sb, ctx);
}

static tir_status check_launch(lower_state *st, const tir_prim_func *in) {
    tir_target_limits lim;
    lower_opts_limits(&st->opts, &lim);
    tir_launch l;
    if (tir_launch_check(st->ctx, in, &lim, &l) == TIR_OK) return TIR_OK;
    /* (tir_ctx_fail formats before it drops the old message) */
    return tir_ctx_fail(st->ctx, TIR_ERR_LOWER, "check_kernel: %s", tir_ctx_error(st->ctx));
}

tir_status lower_check_kernel(lower_state *st, const tir_prim_func *in, const tir_prim_func **out) {
    ck c = {.st = st, .f = in};
    tir_visitor v = {.pre = pre, .user = &c};
    tir_visit(&v, in->body);
    for (int i = 0; i < in->nparams; i++)
        if (in->buffer_map[i]) TIR_ASSERT(in->buffer_map[i]->ndim == 1);
    int64_t sh = total(&c.shared, true), lo = total(&c.local, false);
    tir_status s = TIR_OK;
    if (sh > st->opts.max_shared_bytes)
        s = tir_ctx_fail(st->ctx, TIR_ERR_LOWER,
                         "check_kernel: %lld bytes of shared memory per block, more than the "
                         "limit %lld (the target's opt-in maximum): %s (smaller tiles, or "
                         "fewer pipeline stages)",
                         (long long)sh, (long long)st->opts.max_shared_bytes,
                         names(st->ctx, &c.shared));
    else if (lo > st->opts.max_local_bytes)
        s = tir_ctx_fail(st->ctx, TIR_ERR_LOWER,
                         "check_kernel: %lld bytes of local memory per thread, more than the "
                         "limit %lld: %s",
                         (long long)lo, (long long)st->opts.max_local_bytes,
                         names(st->ctx, &c.local));
    ir_vec_free(&c.shared);
    ir_vec_free(&c.local);
    if (s == TIR_OK) s = check_launch(st, in);
    /* tir_lower verifies every pass's result (variables and buffers defined
     * where they are used), this one's included */
    if (s == TIR_OK) *out = in;
    return s;
}
