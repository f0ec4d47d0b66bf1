/* annotate.c: set or remove annotations on loops and blocks (TVM's
 * Annotate / Unannotate).
 *
 * Annotations carry hints for later passes (software_pipeline_stage and
 * _order on a loop, pragma_auto_unroll_max_step, ...); the schedule stores
 * them without interpreting them.  Each value type is its own instruction
 * so that every trace line maps onto exactly one C function.
 */
#include <ctype.h>
#include <string.h>

#include "sched_internal.h"

static bool valid_key(const char *k) {
    if (!(isalpha((unsigned char)k[0]) || k[0] == '_')) return false;
    for (const char *p = k + 1; *p; p++)
        if (!(isalnum((unsigned char)*p) || *p == '_' || *p == '.')) return false;
    return true;
}

/* The annotation list without `key` (arena), its length in *n. */
static tir_annot *without(tir_ctx *ctx, int n, const tir_annot *as, const char *key, int *out_n) {
    tir_annot *r = IR_NEWN(ctx, tir_annot, n + 1);
    int k = 0;
    for (int i = 0; i < n; i++)
        if (strcmp(as[i].key, key) != 0) r[k++] = as[i];
    *out_n = k;
    return r;
}

/* Rewrites the target's annotations: adds `val` when set (replacing that
 * key), else removes `key`. */
static tir_status rewrite(sch_call *c, char target, const char *key, const tir_annot *val) {
    const tir_schedule *s = c->sch;
    tir_ctx *ctx = c->ctx;
    uint32_t rv = c->args[0].rv;
    int i = target == 'l' ? sch_loop_sref(c, rv) : sch_block_sref(c, rv);
    const tir_stmt *node = s->srefs[i].stmt;
    int n = 0;
    const tir_annot *as = NULL;
    if (target == 'l') {
        n = sch_sref_for(s, i)->nannots;
        as = sch_sref_for(s, i)->annots;
    } else {
        n = sch_sref_block(s, i)->nannots;
        as = sch_sref_block(s, i)->annots;
    }
    if (val && !valid_key(key))
        return sch_fail(c, TIR_ERR_SCHED_BAD_ANNOTATION, rv, node,
                        "annotation key \"%s\" is not an identifier ([A-Za-z_][A-Za-z0-9_.]*)",
                        key);
    if (!val && !tir_annots_find(n, as, key))
        return sch_fail(c, TIR_ERR_SCHED_NO_ANNOTATION, rv, node,
                        "there is no annotation \"%s\" to remove", key);
    int nn;
    tir_annot *na = without(ctx, n, as, key, &nn);
    if (val) na[nn++] = *val;
    const tir_stmt *old, *nw;
    if (target == 'l') {
        const tir_for *f = sch_sref_for(s, i);
        old = &f->base;
        nw = sch_for_with(ctx, f, f->kind, f->thread_tag, nn, na, f->body);
    } else {
        const tir_block_realize *r = s->srefs[i].realize;
        tir_block_desc d;
        tir_block_describe(r->block, &d);
        d.nannots = nn;
        d.annots = na;
        old = &r->base;
        nw = tir_block_realize_new(ctx, r->nvalues, r->values, r->predicate,
                                   tir_block_new(ctx, &d));
    }
    c->func = sch_replace(c, 1, &old, &nw);
    return TIR_OK;
}

static tir_status annotate(sch_call *c, char target, tir_annot_kind kind) {
    tir_annot a = {.key = c->args[1].s, .kind = kind};
    if (kind == TIR_ANNOT_INT) a.i = c->args[2].i;
    if (kind == TIR_ANNOT_STR) a.s = c->args[2].s;
    if (kind == TIR_ANNOT_INTS) {
        a.nints = c->args[2].n;
        a.ints = c->args[2].ints;
    }
    return rewrite(c, target, a.key, &a);
}

tir_status sch_prim_annotate_loop_int(sch_call *c) { return annotate(c, 'l', TIR_ANNOT_INT); }
tir_status sch_prim_annotate_loop_str(sch_call *c) { return annotate(c, 'l', TIR_ANNOT_STR); }
tir_status sch_prim_annotate_loop_ints(sch_call *c) { return annotate(c, 'l', TIR_ANNOT_INTS); }
tir_status sch_prim_annotate_block_int(sch_call *c) { return annotate(c, 'b', TIR_ANNOT_INT); }
tir_status sch_prim_annotate_block_str(sch_call *c) { return annotate(c, 'b', TIR_ANNOT_STR); }
tir_status sch_prim_annotate_block_ints(sch_call *c) {
    return annotate(c, 'b', TIR_ANNOT_INTS);
}
tir_status sch_prim_unannotate_loop(sch_call *c) { return rewrite(c, 'l', c->args[1].s, NULL); }
tir_status sch_prim_unannotate_block(sch_call *c) {
    return rewrite(c, 'b', c->args[1].s, NULL);
}

/* --------------------------------------------------------------- wrappers */

#define CHECK_S(name)                                                                     \
    if (!s) return sch_bad_arg(s, name, "schedule is NULL")

tir_status tir_sched_annotate_loop_int(tir_schedule *s, tir_loop_rv loop, const char *key,
                                       int64_t value) {
    CHECK_S("annotate_loop_int");
    sch_arg args[3] = {SCH_RV(loop), {.s = key}, {.i = value}};
    return sch_run(s, SCH_INST_annotate_loop_int, args, NULL, NULL);
}
tir_status tir_sched_annotate_loop_str(tir_schedule *s, tir_loop_rv loop, const char *key,
                                       const char *value) {
    CHECK_S("annotate_loop_str");
    sch_arg args[3] = {SCH_RV(loop), {.s = key}, {.s = value}};
    return sch_run(s, SCH_INST_annotate_loop_str, args, NULL, NULL);
}
tir_status tir_sched_annotate_loop_ints(tir_schedule *s, tir_loop_rv loop, const char *key,
                                        int n, const int64_t *values) {
    CHECK_S("annotate_loop_ints");
    sch_arg args[3] = {SCH_RV(loop), {.s = key}, {.n = n, .ints = values}};
    return sch_run(s, SCH_INST_annotate_loop_ints, args, NULL, NULL);
}
tir_status tir_sched_annotate_block_int(tir_schedule *s, tir_block_rv block, const char *key,
                                        int64_t value) {
    CHECK_S("annotate_block_int");
    sch_arg args[3] = {SCH_RV(block), {.s = key}, {.i = value}};
    return sch_run(s, SCH_INST_annotate_block_int, args, NULL, NULL);
}
tir_status tir_sched_annotate_block_str(tir_schedule *s, tir_block_rv block, const char *key,
                                        const char *value) {
    CHECK_S("annotate_block_str");
    sch_arg args[3] = {SCH_RV(block), {.s = key}, {.s = value}};
    return sch_run(s, SCH_INST_annotate_block_str, args, NULL, NULL);
}
tir_status tir_sched_annotate_block_ints(tir_schedule *s, tir_block_rv block, const char *key,
                                         int n, const int64_t *values) {
    CHECK_S("annotate_block_ints");
    sch_arg args[3] = {SCH_RV(block), {.s = key}, {.n = n, .ints = values}};
    return sch_run(s, SCH_INST_annotate_block_ints, args, NULL, NULL);
}
tir_status tir_sched_unannotate_loop(tir_schedule *s, tir_loop_rv loop, const char *key) {
    CHECK_S("unannotate_loop");
    sch_arg args[2] = {SCH_RV(loop), {.s = key}};
    return sch_run(s, SCH_INST_unannotate_loop, args, NULL, NULL);
}
tir_status tir_sched_unannotate_block(tir_schedule *s, tir_block_rv block, const char *key) {
    CHECK_S("unannotate_block");
    sch_arg args[2] = {SCH_RV(block), {.s = key}};
    return sch_run(s, SCH_INST_unannotate_block, args, NULL, NULL);
}
