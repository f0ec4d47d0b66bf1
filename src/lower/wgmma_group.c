/* wgmma_group.c: consecutive wgmma_sync statements become one.
 *
 * lower_fragments makes one wgmma_sync per wgmma, each synchronous as a
 * whole (fence, the instruction, commit, wait 0: intrinsics.def).  After
 * unroll, the k steps and column strips of a k tile are a run of such
 * statements with nothing between them; as one call, codegen issues all
 * of them behind one fence and waits once, so the tensor core works on
 * the next instruction while the last one's results are not yet needed.
 * Merging a run changes no result: each statement's instructions read and
 * write only their own operands, in the same order, and nothing else runs
 * between them.  Codegen unrolls `T.unroll` loops, not this pass's input,
 * so a loop nest marked unrolled (constant bounds) whose body is one
 * wgmma_sync is expanded here into one wgmma_sync of a group per
 * iteration, in iteration order; nested sequences are flattened, so a run
 * crosses them.  A merged call has at most IR_WGMMA_MAX_GROUPS groups (the
 * interpreter's and the simulator's argument arrays): a longer run is
 * several calls of that many, in order.
 */
#include "lower_internal.h"

/* The wgmma_sync call of s, or NULL. */
static const tir_call *wgmma_of(const tir_stmt *s) {
    const tir_evaluate *e = tir_as_tir_evaluate(s);
    const tir_call *c = e ? tir_as_tir_call(e->value) : NULL;
    return c && c->op == TIR_INTRIN_WGMMA_SYNC ? c : NULL;
}

/* s's statements, nested seqs inlined, appended to out. */
static void flat_stmts(const tir_stmt *s, ir_vec *out) {
    if (s->kind != TIR_KIND_SEQ) {
        ir_vec_push(out, s);
        return;
    }
    const tir_seq *q = (const tir_seq *)s;
    for (int i = 0; i < q->n; i++) flat_stmts(q->stmts[i], out);
}

/* The n arguments (whole groups) as wgmma_sync calls of at most
 * IR_WGMMA_MAX_GROUPS groups each, in order, pushed to out. */
static void push_calls(tir_ctx *ctx, const tir_expr **args, int n, ir_vec *out) {
    for (int at = 0; at < n; at += 5 * IR_WGMMA_MAX_GROUPS) {
        int k = n - at < 5 * IR_WGMMA_MAX_GROUPS ? n - at : 5 * IR_WGMMA_MAX_GROUPS;
        ir_vec_push(out, lower_intrin_stmt(ctx, TIR_INTRIN_WGMMA_SYNC, k, args + at));
    }
}

/* The statement of the calls in out (one, or a sequence); frees out. */
static const tir_stmt *calls_stmt(tir_ctx *ctx, ir_vec *out) {
    const tir_stmt *r = out->n == 1 ? out->items[0]
                                    : tir_seq_new(ctx, out->n, (const tir_stmt *const *)out->items);
    ir_vec_free(out);
    return r;
}

/* The arguments of items[i .. j) as calls (push_calls). */
static void merged(tir_ctx *ctx, const void *const *items, int i, int j, ir_vec *out) {
    int n = 0;
    for (int k = i; k < j; k++) n += wgmma_of(items[k])->nargs;
    const tir_expr **args = IR_NEWN(ctx, const tir_expr *, n);
    n = 0;
    for (int k = i; k < j; k++) {
        const tir_call *c = wgmma_of(items[k]);
        for (int a = 0; a < c->nargs; a++) args[n++] = c->args[a];
    }
    push_calls(ctx, args, n, out);
}

/* `for v in T.unroll(lo, lo + E): wgmma_sync(args(v))` as
 * wgmma_sync(args(lo), ..., args(lo + E - 1)) (push_calls); other loops as
 * they are. */
static const tir_node *on_for(tir_mutator *m, const tir_node *n) {
    const tir_for *f = (const tir_for *)tir_mutate_default(m, n);
    const tir_call *c = wgmma_of(f->body);
    int64_t lo = 0, ext = 0;
    if (!c || f->kind != TIR_FOR_UNROLLED || !tir_expr_const_int(f->min, &lo) ||
        !tir_expr_const_int(f->extent, &ext) || ext < 1 || ext > 64)
        return (const tir_node *)f;
    const tir_expr **args = IR_NEWN(m->ctx, const tir_expr *, c->nargs * ext);
    for (int64_t i = 0; i < ext; i++) {
        const tir_expr *v = tir_int(m->ctx, f->var->base.dtype, lo + i);
        for (int a = 0; a < c->nargs; a++)
            args[i * c->nargs + a] =
                tir_simplify(m->ctx, (const tir_expr *)tir_substitute(m->ctx, c->args[a], 1, &f->var, &v));
    }
    ir_vec out = {0};
    push_calls(m->ctx, args, (int)(c->nargs * ext), &out);
    return (const tir_node *)calls_stmt(m->ctx, &out);
}

static const tir_node *on_seq(tir_mutator *m, const tir_node *n) {
    const tir_seq *q = (const tir_seq *)tir_mutate_default(m, n);
    ir_vec all = {0}, out = {0};
    flat_stmts((const tir_stmt *)q, &all);
    bool changed = false;
    for (int i = 0; i < all.n;) {
        int j = i + 1;
        if (wgmma_of(all.items[i]))
            while (j < all.n && wgmma_of(all.items[j])) j++;
        if (j - i > 1) merged(m->ctx, all.items, i, j, &out);
        else ir_vec_push(&out, all.items[i]);
        changed |= j - i > 1;
        i = j;
    }
    const tir_node *r = (const tir_node *)q;
    if (changed)
        r = (const tir_node *)tir_seq_new(m->ctx, out.n, (const tir_stmt *const *)out.items);
    ir_vec_free(&all);
    ir_vec_free(&out);
    return r;
}

static bool has_wgmma(tir_visitor *v, const tir_node *n) {
    if (n->kind == TIR_KIND_CALL && ((const tir_call *)n)->op == TIR_INTRIN_WGMMA_SYNC)
        *(bool *)v->user = true;
    return !*(bool *)v->user;
}

tir_status lower_wgmma_group(lower_state *st, const tir_prim_func *in, const tir_prim_func **out) {
    bool any = false;
    tir_visitor v = {.pre = has_wgmma, .user = &any};
    tir_visit(&v, in->body);
    if (!any) {
        *out = in;
        return TIR_OK;
    }
    tir_mutator m = {.ctx = st->ctx};
    m.on[TIR_KIND_SEQ] = on_seq;
    m.on[TIR_KIND_FOR] = on_for;
    *out = lower_with_body(st->ctx, in, tir_mutate_stmt(&m, in->body));
    return TIR_OK;
}
