/* unroll.c: unrolling (TVM: UnrollLoop).  Loops the schedule marked
 * unrolled stay TIR_FOR_UNROLLED (codegen unrolls constant extents).  The
 * annotation "pragma_auto_unroll_max_step" = N on a loop unrolls every
 * serial loop in its subtree (itself included) whose total number of
 * iterations (its extent times that of the constant loops inside it) is at
 * most N; the annotation "pragma_unroll_explicit" is accepted and
 * dropped.  Codegen gets only the annotations it knows.
 */
#include <string.h>

#include "lower_internal.h"

typedef struct ur {
    int64_t max_step; /* 0: no enclosing pragma */
} ur;

/* Iterations of the constant loop nest rooted at s (1 for no loop). */
static int64_t steps(const tir_stmt *s) {
    if (!s) return 1;
    switch ((tir_kind)s->kind) {
    case TIR_KIND_FOR: {
        const tir_for *f = (const tir_for *)s;
        int64_t e;
        if (!tir_expr_const_int(f->extent, &e)) return INT64_MAX / 4;
        int64_t in = steps(f->body);
        return in > INT64_MAX / 4 / (e > 0 ? e : 1) ? INT64_MAX / 4 : e * in;
    }
    case TIR_KIND_SEQ: {
        const tir_seq *q = (const tir_seq *)s;
        int64_t m = 1;
        for (int i = 0; i < q->n; i++) {
            int64_t x = steps(q->stmts[i]);
            if (x > m) m = x;
        }
        return m;
    }
    case TIR_KIND_IF: {
        const tir_if *i = (const tir_if *)s;
        int64_t a = steps(i->then_s), b = steps(i->else_s);
        return a > b ? a : b;
    }
    case TIR_KIND_ALLOCATE: return steps(((const tir_allocate *)s)->body);
    default: return 1;
    }
}

static bool is_unroll_pragma(const char *k) {
    return strcmp(k, tir_annot_key_str(TIR_ANN_PRAGMA_AUTO_UNROLL_MAX_STEP)) == 0 ||
           strcmp(k, tir_annot_key_str(TIR_ANN_PRAGMA_UNROLL_EXPLICIT)) == 0;
}

static const tir_node *on_for(tir_mutator *m, const tir_node *n) {
    ur *u = m->user;
    const tir_for *f = (const tir_for *)n;
    int64_t saved = u->max_step;
    const tir_annot *a = tir_annots_get(f->nannots, f->annots, TIR_ANN_PRAGMA_AUTO_UNROLL_MAX_STEP);
    if (a && a->kind == TIR_ANNOT_INT) u->max_step = a->i;
    const tir_for *r = (const tir_for *)tir_mutate_default(m, n);
    u->max_step = saved;
    int64_t limit = a && a->kind == TIR_ANNOT_INT ? a->i : saved;
    tir_for_kind kind = r->kind;
    if (kind == TIR_FOR_SERIAL && limit > 0 && steps((const tir_stmt *)r) <= limit)
        kind = TIR_FOR_UNROLLED;
    int na = 0;
    tir_annot *annots = IR_NEWN(m->ctx, tir_annot, r->nannots + 1);
    for (int i = 0; i < r->nannots; i++)
        if (!is_unroll_pragma(r->annots[i].key)) annots[na++] = r->annots[i];
    if (kind == TIR_FOR_SERIAL && limit > 1 && !lower_has_kind(r->body, TIR_KIND_FOR) &&
        !tir_annots_get(na, annots, TIR_ANN_PRAGMA_UNROLL_MAX_STEP))
        annots[na++] = (tir_annot){
            .key = tir_intern(m->ctx, tir_annot_key_str(TIR_ANN_PRAGMA_UNROLL_MAX_STEP)),
            .kind = TIR_ANNOT_INT,
            .i = limit};
    if (kind == r->kind && na == r->nannots) return (const tir_node *)r;
    annots = (tir_annot *)tir_annots_copy(m->ctx, na, annots);
    return (const tir_node *)tir_for_new(m->ctx, r->var, r->min, r->extent, kind, r->thread_tag, na,
                                         annots, r->body);
}

tir_status lower_unroll(lower_state *st, const tir_prim_func *in, const tir_prim_func **out) {
    ur u = {0};
    tir_mutator m = {.ctx = st->ctx, .user = &u};
    m.on[TIR_KIND_FOR] = on_for;
    *out = lower_with_body(st->ctx, in, tir_mutate_stmt(&m, in->body));
    return TIR_OK;
}
