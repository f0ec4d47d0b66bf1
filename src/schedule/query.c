/* query.c: the traced queries that hand out handles: get_block,
 * get_loops, get_child_blocks (of a block or a loop), get_producers and
 * get_consumers, plus the untraced node lookups and handle comparisons.
 *
 * Queries change no IR, but they create handles, so they are recorded in
 * the trace like primitives: replaying a trace must recreate every handle
 * the later instructions use.
 */
#include <string.h>

#include "sched_internal.h"

tir_status sch_prim_get_block(sch_call *c) {
    const char *name = c->args[0].s;
    if (sch_find_block(c->sch, name) < 0)
        return sch_fail(c, TIR_ERR_SCHED_BLOCK_NOT_FOUND, 0, NULL,
                        "no block is named \"%s\"", name);
    sch_out_block(c, name);
    return TIR_OK;
}

tir_status sch_prim_get_loops(sch_call *c) {
    const tir_schedule *s = c->sch;
    int b = sch_block_sref(c, c->args[0].rv);
    int n = 0;
    for (int p = s->srefs[b].parent; p >= 0 && sch_sref_for(s, p); p = s->srefs[p].parent) n++;
    const tir_var **vars = IR_NEWN(c->ctx, const tir_var *, n);
    int k = n;
    for (int p = s->srefs[b].parent; p >= 0 && sch_sref_for(s, p); p = s->srefs[p].parent)
        vars[--k] = sch_sref_for(s, p)->var;
    for (int i = 0; i < n; i++) sch_out_loop(c, vars[i]);
    return TIR_OK;
}

static void out_child_blocks(sch_call *c, const tir_stmt *st) {
    ir_vec rs = {0};
    sch_collect_child_realizes(st, &rs);
    for (int i = 0; i < rs.n; i++)
        sch_out_block(c, ((const tir_block_realize *)rs.items[i])->block->name);
    ir_vec_free(&rs);
}

tir_status sch_prim_get_child_blocks(sch_call *c) {
    const tir_block *b = sch_sref_block(c->sch, sch_block_sref(c, c->args[0].rv));
    if (b->init) out_child_blocks(c, b->init);
    out_child_blocks(c, b->body);
    return TIR_OK;
}

tir_status sch_prim_get_loop_child_blocks(sch_call *c) {
    const tir_for *f = sch_sref_for(c->sch, sch_loop_sref(c, c->args[0].rv));
    out_child_blocks(c, f->body);
    return TIR_OK;
}

static bool region_has(int n, const tir_buffer_region *rs, const tir_buffer *buf) {
    for (int i = 0; i < n; i++)
        if (rs[i].buffer == buf) return true;
    return false;
}

static bool writes_what_reads(const tir_block *w, const tir_block *r) {
    for (int i = 0; i < w->nwrites; i++)
        if (region_has(r->nreads, r->reads, w->writes[i].buffer)) return true;
    return false;
}

/* Producers (before, writing what b reads) or consumers (after, reading
 * what b writes) among the blocks of b's scope. */
static tir_status deps(sch_call *c, bool producers) {
    const tir_schedule *s = c->sch;
    int bi = sch_block_sref(c, c->args[0].rv);
    const tir_block *b = sch_sref_block(s, bi);
    int scope = sch_scope_of(s, bi);
    if (scope < 0) return TIR_OK; /* the root block has no siblings */
    const tir_block *sb = sch_sref_block(s, scope);
    ir_vec rs = {0};
    if (sb->init) sch_collect_child_realizes(sb->init, &rs);
    sch_collect_child_realizes(sb->body, &rs);
    int self = -1;
    for (int i = 0; i < rs.n; i++)
        if (((const tir_block_realize *)rs.items[i])->block == b) self = i;
    TIR_ASSERT(self >= 0);
    for (int i = 0; i < rs.n; i++) {
        const tir_block *o = ((const tir_block_realize *)rs.items[i])->block;
        if (producers && i < self && writes_what_reads(o, b)) sch_out_block(c, o->name);
        if (!producers && i > self && writes_what_reads(b, o)) sch_out_block(c, o->name);
    }
    ir_vec_free(&rs);
    return TIR_OK;
}

tir_status sch_prim_get_producers(sch_call *c) { return deps(c, true); }
tir_status sch_prim_get_consumers(sch_call *c) { return deps(c, false); }

/* --------------------------------------------------------------- wrappers */

tir_status tir_sched_get_block(tir_schedule *s, const char *name, tir_block_rv *out) {
    if (!s || !out) return sch_bad_arg(s, "get_block", "out is NULL");
    sch_arg args[1] = {{.s = name}};
    const uint32_t *ids;
    TIR_TRY(sch_run(s, SCH_INST_get_block, args, &ids, NULL));
    *out = sch_block_rv(s, ids[0]);
    return TIR_OK;
}

/* Block- or loop-list queries share their shape; the handles come back
 * in an arena array. */
static tir_status list_query(tir_schedule *s, sch_inst_kind k, sch_arg arg,
                             const tir_loop_rv **loops, const tir_block_rv **blocks, int *n) {
    if (!s || !(loops || blocks) || !n)
        return sch_bad_arg(s, sch_inst_table[k].name, "out or n is NULL");
    sch_arg args[1] = {arg};
    const uint32_t *ids;
    int nids;
    TIR_TRY(sch_run(s, k, args, &ids, &nids));
    if (loops) {
        tir_loop_rv *o = IR_NEWN(s->ctx, tir_loop_rv, nids);
        for (int i = 0; i < nids; i++) o[i] = sch_loop_rv(s, ids[i]);
        *loops = o;
    } else {
        tir_block_rv *o = IR_NEWN(s->ctx, tir_block_rv, nids);
        for (int i = 0; i < nids; i++) o[i] = sch_block_rv(s, ids[i]);
        *blocks = o;
    }
    *n = nids;
    return TIR_OK;
}

tir_status tir_sched_get_loops(tir_schedule *s, tir_block_rv block, const tir_loop_rv **out,
                               int *n) {
    if (!out) return sch_bad_arg(s, "get_loops", "out is NULL");
    return list_query(s, SCH_INST_get_loops, SCH_RV(block), out, NULL, n);
}
tir_status tir_sched_get_child_blocks(tir_schedule *s, tir_block_rv block,
                                      const tir_block_rv **out, int *n) {
    if (!out) return sch_bad_arg(s, "get_child_blocks", "out is NULL");
    return list_query(s, SCH_INST_get_child_blocks, SCH_RV(block), NULL, out, n);
}
tir_status tir_sched_get_loop_child_blocks(tir_schedule *s, tir_loop_rv loop,
                                           const tir_block_rv **out, int *n) {
    if (!out) return sch_bad_arg(s, "get_loop_child_blocks", "out is NULL");
    return list_query(s, SCH_INST_get_loop_child_blocks, SCH_RV(loop), NULL, out, n);
}
tir_status tir_sched_get_producers(tir_schedule *s, tir_block_rv block,
                                   const tir_block_rv **out, int *n) {
    if (!out) return sch_bad_arg(s, "get_producers", "out is NULL");
    return list_query(s, SCH_INST_get_producers, SCH_RV(block), NULL, out, n);
}
tir_status tir_sched_get_consumers(tir_schedule *s, tir_block_rv block,
                                   const tir_block_rv **out, int *n) {
    if (!out) return sch_bad_arg(s, "get_consumers", "out is NULL");
    return list_query(s, SCH_INST_get_consumers, SCH_RV(block), NULL, out, n);
}

/* Untraced lookups: they reuse the handle checks of a traced call without
 * running one. */
tir_status tir_sched_get_for(tir_schedule *s, tir_loop_rv loop, const tir_for **out) {
    if (!s || !out) return sch_bad_arg(s, "get_for", "out is NULL");
    if (loop.id != 0 && loop.sched != s->serial)
        return tir_ctx_fail(s->ctx, TIR_ERR_SCHED_INVALID_HANDLE,
                            "get_for: the handle was made by another schedule");
    char kind;
    bool stale;
    const tir_node *n;
    TIR_TRY(tir_sched_handle_info(s, loop.id, &kind, &stale, &n));
    if (kind != 'l')
        return tir_ctx_fail(s->ctx, TIR_ERR_SCHED_INVALID_HANDLE,
                            "get_for: handle %s is not a loop handle", sch_rv_desc(s, loop.id));
    if (stale)
        return tir_ctx_fail(s->ctx, TIR_ERR_SCHED_STALE_HANDLE, "get_for: handle %s is stale",
                            sch_rv_desc(s, loop.id));
    *out = (const tir_for *)n;
    return TIR_OK;
}

tir_status tir_sched_get_block_node(tir_schedule *s, tir_block_rv block, const tir_block **out) {
    if (!s || !out) return sch_bad_arg(s, "get_block_node", "out is NULL");
    if (block.id != 0 && block.sched != s->serial)
        return tir_ctx_fail(s->ctx, TIR_ERR_SCHED_INVALID_HANDLE,
                            "get_block_node: the handle was made by another schedule");
    char kind;
    bool stale;
    const tir_node *n;
    TIR_TRY(tir_sched_handle_info(s, block.id, &kind, &stale, &n));
    if (kind != 'b')
        return tir_ctx_fail(s->ctx, TIR_ERR_SCHED_INVALID_HANDLE,
                            "get_block_node: handle %s is not a block handle",
                            sch_rv_desc(s, block.id));
    if (stale)
        return tir_ctx_fail(s->ctx, TIR_ERR_SCHED_STALE_HANDLE,
                            "get_block_node: handle %s is stale", sch_rv_desc(s, block.id));
    *out = (const tir_block *)n;
    return TIR_OK;
}

/* The live entry a handle of kind `kind` names, or NULL. */
static const sch_entry *live_entry(const tir_schedule *s, char kind, uint32_t id, uint32_t tag) {
    if (!s || tag != s->serial || id < 1 || (int)id > s->nentries) return NULL;
    const sch_entry *e = &s->entries[id - 1];
    return e->kind == kind && e->retired_by < 0 ? e : NULL;
}

/* A loop handle names a loop variable and a block handle a block name
   (see sch_entry), so equal keys mean the same node now. */
bool tir_sched_same_loop(const tir_schedule *s, tir_loop_rv a, tir_loop_rv b) {
    const sch_entry *x = live_entry(s, 'l', a.id, a.sched), *y = live_entry(s, 'l', b.id, b.sched);
    return x && y && x->loop_var == y->loop_var;
}

bool tir_sched_same_block(const tir_schedule *s, tir_block_rv a, tir_block_rv b) {
    const sch_entry *x = live_entry(s, 'b', a.id, a.sched),
                    *y = live_entry(s, 'b', b.id, b.sched);
    return x && y && strcmp(x->block_name, y->block_name) == 0;
}
