/* simplify.c: arithmetic simplification of the whole kernel with the loop
 * ranges known (tir_analyzer_simplify_stmt): indices fold into the
 * `... + ty * 64 + tx * 4` form the codegen proves alignment from, and the
 * bounds predicates of non-divisible shapes that are provably true inside a
 * tile disappear, while the others stay.  A condition that does not
 * depend on a serial or unrolled loop's variable and is the loop's whole
 * body moves out of it (`for j: if c: S` becomes `if c: for j: S`, c
 * without loads or calls): a guard on the reduction index of a split-K
 * thread tile was otherwise tested (a select in the PTX) at each of the
 * tile's FMAs.
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

typedef struct purity {
    bool pure;
} purity;

static bool pure_pre(tir_visitor *v, const tir_node *n) {
    purity *p = v->user;
    if (n->kind == TIR_KIND_BUFFER_LOAD || n->kind == TIR_KIND_CALL) p->pure = false;
    return p->pure;
}

static bool is_pure(const tir_expr *e) {
    purity p = {true};
    tir_visitor v = {.pre = pure_pre, .user = &p};
    tir_visit(&v, e);
    return p.pure;
}

static const tir_node *on_for(tir_mutator *m, const tir_node *n) {
    const tir_for *f = (const tir_for *)tir_mutate_default(m, n);
    const tir_if *i = f->body->kind == TIR_KIND_IF ? (const tir_if *)f->body : NULL;
    if (!i || i->else_s || (f->kind != TIR_FOR_SERIAL && f->kind != TIR_FOR_UNROLLED) ||
        f->thread_tag || tir_uses_var(i->cond, f->var) || !is_pure(i->cond))
        return (const tir_node *)f;
    const tir_stmt *loop = tir_for_new(m->ctx, f->var, f->min, f->extent, f->kind, f->thread_tag,
                                       f->nannots, f->annots, i->then_s);
    return (const tir_node *)tir_if_new(m->ctx, i->cond, loop, NULL);
}

tir_status lower_simplify(lower_state *st, const tir_prim_func *in, const tir_prim_func **out) {
    tir_analyzer *a = tir_analyzer_create(st->ctx);
    const tir_stmt *body = tir_analyzer_simplify_stmt(a, in->body);
    tir_analyzer_destroy(a);
    tir_mutator m = {.ctx = st->ctx};
    m.on[TIR_KIND_IF] = on_if;
    m.on[TIR_KIND_SEQ] = on_seq;
    m.on[TIR_KIND_FOR] = on_for;
    body = tir_mutate_stmt(&m, body);
    *out = lower_with_body(st->ctx, in, body);
    return TIR_OK;
}
