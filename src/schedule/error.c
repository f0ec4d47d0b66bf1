/* error.c: the one way a schedule primitive reports a violated
 * precondition.
 *
 * Every message has the same shape, so users (and tests) can rely on it:
 *     <primitive>: <rule, with the values that broke it> (<handle>)
 *     <the current function, the offending loops or blocks marked>
 */
#include "sched_internal.h"

tir_status sch_failv(tir_ctx *ctx, const tir_schedule *s, tir_status code, const char *prim,
                     uint32_t rv, int nmarks, const void *const *marks, const char *fmt,
                     va_list ap) {
    ir_strbuf sb;
    ir_sb_init(&sb);
    char small[512];
    va_list ap2;
    va_copy(ap2, ap);
    int len = vsnprintf(small, sizeof small, fmt, ap2);
    va_end(ap2);
    ir_sb_printf(&sb, "%s: ", prim);
    if (len >= 0 && (size_t)len < sizeof small) {
        ir_sb_puts(&sb, small);
    } else if (len >= 0) {
        char *big = ir_xmalloc((size_t)len + 1);
        vsnprintf(big, (size_t)len + 1, fmt, ap);
        ir_sb_puts(&sb, big);
        free(big);
    }
    if (rv) ir_sb_printf(&sb, " (%s)", sch_rv_desc(s, rv));
    ir_sb_putc(&sb, '\n');
    ir_sb_puts(&sb, tir_print_marked(ctx, s->func, nmarks, marks));
    const char *msg = ir_sb_finish(&sb, ctx);
    return tir_ctx_fail(ctx, code, "%s", msg);
}

tir_status sch_fail(sch_call *c, tir_status code, uint32_t rv, const void *mark,
                    const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    const void *marks[1] = {mark};
    tir_status r = sch_failv(c->ctx, c->sch, code, c->prim, rv, mark ? 1 : 0, marks, fmt, ap);
    va_end(ap);
    return r;
}

tir_status sch_fail_marks(sch_call *c, tir_status code, uint32_t rv, int nmarks,
                          const void *const *marks, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    tir_status r = sch_failv(c->ctx, c->sch, code, c->prim, rv, nmarks, marks, fmt, ap);
    va_end(ap);
    return r;
}
