/* simplify.c: arithmetic simplification of the whole kernel with the loop
 * ranges known (tir_analyzer_simplify_stmt): indices fold into the
 * `... + ty * 64 + tx * 4` form the codegen proves alignment from, and the
 * bounds predicates of non-divisible shapes that are provably true inside a
 * tile disappear, while the others stay.
 */
#include "lower_internal.h"

static bool is_nop(const tir_stmt *s) {
    const tir_evaluate *e = tir_as_tir_evaluate(s);
    int64_t v;
    return e && tir_expr_const_int(e->value, &v);
}

/* `if False` without else (left by the analyzer) and no-op statements go. */
static const tir_node *on_if(tir_mutator *m, const tir_node *n) {
    const tir_if *i = (const tir_if *)tir_mutate_default(m, n);
    int64_t v;
    if (tir_expr_const_int(i->cond, &v) && !v && (!i->else_s || is_nop(i->else_s)))
        return (const tir_node *)tir_evaluate_new(m->ctx, tir_i32(m->ctx, 0));
    return (const tir_node *)i;
}

static const tir_node *on_seq(tir_mutator *m, const tir_node *n) {
    const tir_seq *q = (const tir_seq *)tir_mutate_default(m, n);
    if (q->base.kind != TIR_KIND_SEQ) return (const tir_node *)q;
    const tir_stmt **v = IR_NEWN(m->ctx, const tir_stmt *, q->n);
    int k = 0;
    for (int i = 0; i < q->n; i++)
        if (!is_nop(q->stmts[i])) v[k++] = q->stmts[i];
    if (k == q->n) return (const tir_node *)q;
    return (const tir_node *)tir_seq_new(m->ctx, k, v);
}

tir_status lower_simplify(lower_state *st, const tir_prim_func *in, const tir_prim_func **out) {
    tir_analyzer *a = tir_analyzer_create(st->ctx);
    const tir_stmt *body = tir_analyzer_simplify_stmt(a, in->body);
    tir_analyzer_destroy(a);
    tir_mutator m = {.ctx = st->ctx};
    m.on[TIR_KIND_IF] = on_if;
    m.on[TIR_KIND_SEQ] = on_seq;
    body = tir_mutate_stmt(&m, body);
    *out = lower_with_body(st->ctx, in, body);
    return TIR_OK;
}
