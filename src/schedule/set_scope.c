/* set_scope.c: change the storage scope of an allocated buffer (TVM's
 * SetScope).
 *
 * The buffer is rebuilt with the new scope and substituted everywhere, so
 * its allocation, regions, loads and stores all name the same new buffer;
 * function parameters are refused because their scope is fixed by the
 * caller's memory (global).
 */
#include <string.h>

#include "sched_internal.h"

/* True when b is one of the function's parameter buffers. */
static bool is_param(const tir_prim_func *f, const tir_buffer *b) {
    for (int i = 0; i < f->nparams; i++)
        if (f->buffer_map[i] == b) return true;
    return false;
}

tir_status sch_prim_set_scope(sch_call *c) {
    const tir_schedule *s = c->sch;
    tir_ctx *ctx = c->ctx;
    uint32_t rv = c->args[0].rv;
    const tir_block *b = sch_sref_block(s, sch_block_sref(c, rv));
    int64_t idx = c->args[1].i;
    const char *scope = c->args[2].s;

    if (idx < 0 || idx >= b->nwrites)
        return sch_fail(c, TIR_ERR_SCHED_INDEX_OUT_OF_RANGE, rv, b,
                        "buffer index %lld is out of range: block \"%s\" writes %d buffer%s",
                        (long long)idx, b->name, b->nwrites, b->nwrites == 1 ? "" : "s");
    tir_scope sc;
    /* 2 names three scopes: the parser also knows the fragment scopes,
       whose buffers cache_read / cache_write make for tensorize
       (docs/tensor-cores.md), not a change of scope. */
    if (!tir_scope_parse(scope, strlen(scope), &sc) || tir_scope_is_frag(sc))
        return sch_fail(c, TIR_ERR_SCHED_UNKNOWN_SCOPE, rv, b,
                        "unknown scope \"%s\" (use \"global\", \"shared\" or \"local\")", scope);
    const tir_buffer *buf = b->writes[idx].buffer;
    if (is_param(s->func, buf))
        return sch_fail(c, TIR_ERR_SCHED_OUTPUT_BUFFER, rv, b,
                        "buffer %s is a parameter of %s; only buffers allocated by a block can "
                        "change scope",
                        buf->name, s->func->name);
    if (buf->scope == sc) return TIR_OK; /* nothing to change; still traced */
    tir_buffer_desc d;
    tir_buffer_describe(buf, &d);
    d.scope = sc;
    const tir_buffer *nb = tir_buffer_new(ctx, &d);
    c->func = (const tir_prim_func *)tir_replace_buffers(ctx, s->func, 1, &buf, &nb);
    return TIR_OK;
}

tir_status tir_sched_set_scope(tir_schedule *s, tir_block_rv block, int64_t buffer_index,
                               const char *scope) {
    if (!s) return sch_bad_arg(s, "set_scope", "schedule is NULL");
    sch_arg args[3] = {SCH_RV(block), {.i = buffer_index}, {.s = scope}};
    return sch_run(s, SCH_INST_set_scope, args, NULL, NULL);
}
