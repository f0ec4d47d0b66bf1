/* software_pipeline.c: mark a loop for software pipelining (TVM's
 * software_pipeline_stage / _order / _async_stages loop annotations,
 * expanded later by lowering like TVM's InjectSoftwarePipeline).
 *
 * A separate primitive rather than three annotate calls so that the
 * annotations are validated against the loop they describe: one entry per
 * pipeline component, stages and an order that do not make a component
 * read data a later stage or a later statement of its own stage has not
 * produced yet, a real permutation as the order.
 */
#include <string.h>

#include "sched_internal.h"

#define K_STAGE tir_annot_key_str(TIR_ANN_SOFTWARE_PIPELINE_STAGE)
#define K_ORDER tir_annot_key_str(TIR_ANN_SOFTWARE_PIPELINE_ORDER)
#define K_ASYNC tir_annot_key_str(TIR_ANN_SOFTWARE_PIPELINE_ASYNC_STAGES)

/* The pipeline components of a loop body (arena array). */
static const tir_stmt **components(tir_ctx *ctx, const tir_stmt *body, int *n) {
    for (;;) {
        const tir_block_realize *r = tir_as_tir_block_realize(body);
        if (!r || r->block->niters != 0 || r->block->init) break;
        body = r->block->body;
    }
    const tir_seq *q = tir_as_tir_seq(body);
    if (!q) {
        const tir_stmt **one = IR_NEWN(ctx, const tir_stmt *, 1);
        one[0] = body;
        *n = 1;
        return one;
    }
    *n = q->n;
    return (const tir_stmt **)q->stmts;
}

/* Buffers the blocks of a component read (reads) or write. */
typedef struct {
    tir_visitor v;
    ir_vec reads, writes;
} access_state;

static bool access_pre(tir_visitor *v, const tir_node *n) {
    access_state *a = (access_state *)v;
    const tir_block *b = tir_as_tir_block(n);
    if (b) {
        for (int i = 0; i < b->nreads; i++) ir_vec_push(&a->reads, b->reads[i].buffer);
        for (int i = 0; i < b->nwrites; i++) ir_vec_push(&a->writes, b->writes[i].buffer);
    }
    const tir_buffer_store *st = tir_as_tir_buffer_store(n);
    if (st) ir_vec_push(&a->writes, st->buffer);
    const tir_buffer_load *ld = tir_as_tir_buffer_load(n);
    if (ld) ir_vec_push(&a->reads, ld->buffer);
    return true;
}

static bool vec_has(const ir_vec *v, const void *p) {
    for (int i = 0; i < v->n; i++)
        if (v->items[i] == p) return true;
    return false;
}

/* Preconditions 6 and 7 for a component j reading what an earlier
 * component i writes (TVM's rule for a read-after-write dependence from i to
 * j: stage(i) < stage(j), or the same stage and order(i) < order(j)).  A
 * later stage would make j read the previous iteration's data; an earlier
 * order in the same stage would make it read data not yet written. */
static tir_status check_dependence(sch_call *c, const tir_stmt **comp, const access_state *acc,
                                   int i, int j) {
    uint32_t rv = c->args[0].rv;
    const int64_t *stages = c->args[1].ints, *orders = c->args[2].ints;
    if (stages[i] < stages[j] || (stages[i] == stages[j] && orders[i] < orders[j]))
        return TIR_OK;
    for (int k = 0; k < acc[j].reads.n; k++) {
        const tir_buffer *b = acc[j].reads.items[k];
        if (!vec_has(&acc[i].writes, b)) continue;
        const void *marks[2] = {comp[i], comp[j]};
        if (stages[i] > stages[j])
            return sch_fail_marks(c, TIR_ERR_SCHED_PIPELINE_DEPENDENCE, rv, 2, marks,
                                  "component %d (stage %lld) reads %s, which component %d "
                                  "writes in the later stage %lld",
                                  j, (long long)stages[j], b->name, i, (long long)stages[i]);
        return sch_fail_marks(c, TIR_ERR_SCHED_PIPELINE_ORDER_DEPENDENCE, rv, 2, marks,
                              "component %d (stage %lld, order %lld) reads %s, which component "
                              "%d writes in the same stage but later in the order (%lld)",
                              j, (long long)stages[j], (long long)orders[j], b->name, i,
                              (long long)orders[i]);
    }
    return TIR_OK;
}

tir_status sch_prim_software_pipeline(sch_call *c) {
    const tir_schedule *s = c->sch;
    tir_ctx *ctx = c->ctx;
    uint32_t rv = c->args[0].rv;
    const tir_for *loop = sch_sref_for(s, sch_loop_sref(c, rv));
    int ns = c->args[1].n, no = c->args[2].n, na = c->args[3].n;
    const int64_t *stages = c->args[1].ints, *orders = c->args[2].ints,
                  *async = c->args[3].ints;

    TIR_TRY(sch_check_serial(c, rv, loop, "pipelined"));
    int n;
    const tir_stmt **comp = components(ctx, loop->body, &n);
    if (ns != n || no != n)
        return sch_fail(c, TIR_ERR_SCHED_PIPELINE_COUNT, rv, loop,
                        "the body of %s has %d pipeline component%s, but %d stages and %d "
                        "orders are given",
                        loop->var->name, n, n == 1 ? "" : "s", ns, no);
    for (int i = 0; i < n; i++)
        if (stages[i] < 0 || stages[i] > INT32_MAX)
            return sch_fail(c, TIR_ERR_SCHED_PIPELINE_STAGE, rv, comp[i],
                            "component %d has stage %lld; stages must be >= 0", i,
                            (long long)stages[i]);
    for (int i = 0; i < n; i++) {
        bool bad = orders[i] < 0 || orders[i] >= n;
        for (int j = 0; j < i && !bad; j++) bad = orders[j] == orders[i];
        if (bad)
            return sch_fail(c, TIR_ERR_SCHED_PIPELINE_ORDER, rv, comp[i],
                            "order %lld of component %d: the orders must be a permutation "
                            "of 0..%d",
                            (long long)orders[i], i, n - 1);
    }
    for (int i = 0; i < na; i++) {
        bool used = false;
        for (int j = 0; j < n; j++) used |= stages[j] == async[i];
        bool dup = false;
        for (int j = 0; j < i; j++) dup |= async[j] == async[i];
        if (!used || dup)
            return sch_fail(c, TIR_ERR_SCHED_PIPELINE_ASYNC, rv, loop,
                            "async stage %lld %s", (long long)async[i],
                            dup ? "is given twice" : "is not the stage of any component");
    }
    /* 6-7: the stages and the order respect the dependences */
    access_state *acc = IR_NEWN(ctx, access_state, n);
    for (int i = 0; i < n; i++) {
        acc[i].v.pre = access_pre;
        tir_visit(&acc[i].v, comp[i]);
    }
    tir_status ret = TIR_OK;
    for (int j = 0; j < n && ret == TIR_OK; j++)
        for (int i = 0; i < j && ret == TIR_OK; i++) ret = check_dependence(c, comp, acc, i, j);
    for (int i = 0; i < n; i++) {
        ir_vec_free(&acc[i].reads);
        ir_vec_free(&acc[i].writes);
    }
    TIR_TRY(ret);

    tir_annot *as = IR_NEWN(ctx, tir_annot, loop->nannots + 3);
    int m = 0;
    for (int i = 0; i < loop->nannots; i++) {
        const char *k = loop->annots[i].key;
        if (strcmp(k, K_STAGE) && strcmp(k, K_ORDER) && strcmp(k, K_ASYNC))
            as[m++] = loop->annots[i];
    }
    as[m++] = (tir_annot){.key = tir_intern(ctx, K_STAGE), .kind = TIR_ANNOT_INTS, .nints = n,
                          .ints = ir_copy_array(ctx, stages, sizeof *stages, n)};
    as[m++] = (tir_annot){.key = tir_intern(ctx, K_ORDER), .kind = TIR_ANNOT_INTS, .nints = n,
                          .ints = ir_copy_array(ctx, orders, sizeof *orders, n)};
    if (na > 0)
        as[m++] = (tir_annot){.key = tir_intern(ctx, K_ASYNC), .kind = TIR_ANNOT_INTS,
                              .nints = na, .ints = ir_copy_array(ctx, async, sizeof *async, na)};
    const tir_stmt *o[1] = {&loop->base};
    const tir_stmt *nw[1] = {sch_for_with(ctx, loop, loop->kind, loop->thread_tag, m, as,
                                          loop->body)};
    c->func = sch_replace(c, 1, o, nw);
    return TIR_OK;
}

tir_status tir_sched_software_pipeline(tir_schedule *s, tir_loop_rv loop, int nstages,
                                       const int64_t *stages, int norders,
                                       const int64_t *orders, int nasync,
                                       const int64_t *async_stages) {
    if (!s) return sch_bad_arg(s, "software_pipeline", "schedule is NULL");
    sch_arg args[4] = {SCH_RV(loop), {.n = nstages, .ints = stages},
                       {.n = norders, .ints = orders}, {.n = nasync, .ints = async_stages}};
    return sch_run(s, SCH_INST_software_pipeline, args, NULL, NULL);
}
