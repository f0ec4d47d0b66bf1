/* key.c: the keys records are filed under: the workload key of a function
 * (its name, structural hash and parameter types as one line of text) and
 * the target filled from a device's properties; and the empty record.
 *
 * The workload key is text, not a number, so that a person reading the
 * database or an export sees what was tuned.  The structural hash alone
 * would do as identity, but buffer shapes and dtypes are not part of it
 * (tir_struct_hash numbers buffers without looking at their shapes), so
 * they are spelled out after it.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tune_internal.h"

/* One dimension: the constant, or the expression's text. */
static void put_dim(tir_ctx *ctx, ir_strbuf *sb, const tir_expr *e) {
    int64_t v;
    if (tir_expr_const_int(e, &v))
        ir_sb_printf(sb, "%lld", (long long)v);
    else
        ir_sb_puts(sb, tir_print(ctx, e));
}

static void put_param(tir_ctx *ctx, ir_strbuf *sb, const tir_prim_func *f, int i) {
    char dt[32];
    const tir_buffer *b = f->buffer_map[i];
    if (!b) {
        ir_sb_puts(sb, tir_dtype_str(f->params[i]->base.dtype, dt, sizeof dt));
        return;
    }
    ir_sb_puts(sb, tir_dtype_str(b->dtype, dt, sizeof dt));
    ir_sb_putc(sb, '[');
    for (int d = 0; d < b->ndim; d++) {
        if (d) ir_sb_putc(sb, ',');
        put_dim(ctx, sb, b->shape[d]);
    }
    ir_sb_putc(sb, ']');
}

tir_status tir_tune_workload_key(tir_ctx *ctx, const tir_prim_func *f, const char **out) {
    if (!f || !out) return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG, "tune: workload key of NULL");
    ir_strbuf sb;
    ir_sb_init(&sb);
    ir_sb_printf(&sb, "%s-%016llx-", f->name, (unsigned long long)tir_struct_hash(f));
    for (int i = 0; i < f->nparams; i++) {
        if (i) ir_sb_putc(&sb, ',');
        put_param(ctx, &sb, f, i);
    }
    *out = ir_sb_finish(&sb, ctx);
    return TIR_OK;
}

tir_status tir_tune_task_key(tir_ctx *ctx, const tir_tune_task *t, const char **out) {
    const tir_prim_func *f = t ? tir_tune_task_func(ctx, t) : NULL;
    if (!f) return t ? TIR_ERR_INVALID_ARG : tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG, "tune: no task");
    tir_status st = tir_tune_workload_key(ctx, f, out);
    /* TF32's function is float32's: the arithmetic must be in the key */
    if (st == TIR_OK && t->kind == TIR_RT_GEMM_TF32) *out = tir_ctx_sprintf(ctx, "%s+tf32", *out);
    return st;
}

void tir_tune_target_from_props(const tir_rt_props *props, tir_tune_target *out) {
    memset(out, 0, sizeof *out);
    snprintf(out->gpu, sizeof out->gpu, "%s", props->name);
    snprintf(out->arch, sizeof out->arch, "%s", props->arch);
    out->driver_version = props->driver_version;
}

void tir_tune_record_init(tir_tune_record *r) {
    memset(r, 0, sizeof *r);
    r->median_ms = NAN;
    r->gflops = NAN;
    r->compile_ms = NAN;
}
