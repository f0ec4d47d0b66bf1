/* user_sched.c: the new-user workload tests' scheduling harness (see
 * user_sched.h): a variant's refusal handler, handles and splits that are
 * skipped once the variant is refused, and the data helpers those tests
 * share (parsing, elements by dtype, element counts, written parameters,
 * the symbolic row reduction's text). */
#include "user_sched.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "minitir/runtime.h"

void us_refused(user_sched *u, sched_snap *snap, tir_status st, const char *prim,
                const char *call) {
    static char why[1 << 16];
    char name[300];
    if (u->variant >= 0)
        snprintf(name, sizeof name, "%s/%d", u->label, u->variant);
    else
        snprintf(name, sizeof name, "%s", u->label);
    if (!sched_fail_ok(u->s, snap, st, st, prim, why, sizeof why))
        FAILF("%s: %s refused uncleanly: %s", name, call, why);
    u->st = st;
    u->where = call;
    if (u->verbose)
        fprintf(stderr, "  %s: %s refused: %.300s\n", name, call, tir_ctx_error(u->ctx));
}

int us_loops(user_sched *u, const char *block, tir_loop_rv *out) {
    memset(out, 0, 16 * sizeof *out);
    if (u->st != TIR_OK) return 0;
    tir_block_rv b;
    const tir_loop_rv *l;
    int n;
    if (tir_sched_get_block(u->s, block, &b) != TIR_OK ||
        tir_sched_get_loops(u->s, b, &l, &n) != TIR_OK)
        FAILF("%s: loops of %s: %s", u->label, block, tir_ctx_error(u->ctx));
    if (n > 16) FAILF("%s: %d loops", u->label, n);
    memcpy(out, l, (size_t)n * sizeof *l);
    return n;
}

tir_block_rv us_block(user_sched *u, const char *name) {
    tir_block_rv b = {0, 0};
    if (u->st != TIR_OK) return b;
    if (tir_sched_get_block(u->s, name, &b) != TIR_OK)
        FAILF("%s: block %s: %s", u->label, name, tir_ctx_error(u->ctx));
    return b;
}

void us_split(user_sched *u, tir_loop_rv l, int64_t inner, tir_loop_rv *out) {
    out[0] = out[1] = (tir_loop_rv){0, 0};
    TRY(u, "split", tir_sched_split(u->s, l, 2, (const int64_t[]){TIR_SPLIT_INFER, inner}, out));
}

void us_split3(user_sched *u, tir_loop_rv l, int64_t mid, int64_t inner, tir_loop_rv *out) {
    out[0] = out[1] = out[2] = (tir_loop_rv){0, 0};
    TRY(u, "split",
        tir_sched_split(u->s, l, 3, (const int64_t[]){TIR_SPLIT_INFER, mid, inner}, out));
}

const tir_prim_func *us_parse(tir_ctx *ctx, const char *text) {
    const tir_prim_func *f = NULL;
    if (tir_parse_func(ctx, text, strlen(text), &f) != TIR_OK)
        FAILF("parse: %s\n%s", tir_ctx_error(ctx), text);
    return f;
}

void us_store_elem(void *data, tir_dtype t, int64_t i, double v) {
    if (t.code == TIR_TYPE_FLOAT && t.bits == 32)
        ((float *)data)[i] = (float)v;
    else if (t.code == TIR_TYPE_FLOAT && t.bits == 16)
        ((uint16_t *)data)[i] = tir_rt_f32_to_f16((float)v);
    else if (t.code == TIR_TYPE_INT && t.bits == 32)
        ((int32_t *)data)[i] = (int32_t)v;
    else if (t.code == TIR_TYPE_INT && t.bits == 8)
        ((int8_t *)data)[i] = (int8_t)v;
    else
        memset((char *)data + (size_t)i * tir_dtype_bytes(t), 0, tir_dtype_bytes(t));
}

double us_load_elem(const void *data, tir_dtype t, int64_t i) {
    if (t.code == TIR_TYPE_FLOAT && t.bits == 32) return ((const float *)data)[i];
    if (t.code == TIR_TYPE_FLOAT && t.bits == 16)
        return tir_rt_f16_to_f32(((const uint16_t *)data)[i]);
    if (t.code == TIR_TYPE_INT && t.bits == 32) return ((const int32_t *)data)[i];
    if (t.code == TIR_TYPE_INT && t.bits == 8) return ((const int8_t *)data)[i];
    return 0;
}

int64_t us_buf_count(tir_ctx *ctx, const tir_prim_func *f, const tir_buffer *b,
                     const int64_t *scalars) {
    const tir_var *vars[16];
    const tir_expr *vals[16];
    int nv = 0;
    for (int p = 0; p < f->nparams && nv < 16; p++)
        if (!f->buffer_map[p]) {
            vars[nv] = f->params[p];
            vals[nv] = tir_int(ctx, f->params[p]->base.dtype, scalars[nv]);
            nv++;
        }
    int64_t c = 1;
    for (int d = 0; d < b->ndim; d++) {
        int64_t e;
        const tir_expr *x = (const tir_expr *)tir_substitute(ctx, b->shape[d], nv, vars, vals);
        if (!tir_expr_const_int(tir_simplify(ctx, x), &e) || e < 0) return -1;
        c *= e;
    }
    return c;
}

uint64_t us_written_params(tir_ctx *ctx, const tir_prim_func *f) {
    const char *txt = tir_print(ctx, f);
    uint64_t w = 0;
    for (int i = 0; i < f->nparams && i < 64; i++) {
        const tir_buffer *b = f->buffer_map[i];
        if (!b) continue;
        char pat[200];
        for (const char *p = strstr(txt, "T.writes("); p; p = strstr(p + 9, "T.writes(")) {
            const char *e = strchr(p, '\n');
            snprintf(pat, sizeof pat, "%s[", b->name);
            for (const char *q = strstr(p, pat); q && (!e || q < e); q = strstr(q + 1, pat))
                if (q[-1] == '(' || q[-1] == ' ') w |= 1ull << i;
        }
    }
    return w;
}

const char *us_rowred_text(char *buf, const char *name, const char *init, const char *update) {
    snprintf(
        buf, 1024,
        "@T.prim_func\n"
        "def %s(A: T.Buffer((n, m), \"float32\"), B: T.Buffer((n,), \"float32\"), n: T.int32,\n"
        "           m: T.int32):\n"
        "    for i, k in T.grid(n, m):\n"
        "        with T.block(\"B\"):\n"
        "            vi, vk = T.axis.remap(\"SR\", [i, k])\n"
        "            T.reads(A[vi, vk])\n"
        "            T.writes(B[vi])\n"
        "            with T.init():\n"
        "                B[vi] = T.float32(%s)\n"
        "            B[vi] = %s\n",
        name, init, update);
    return buf;
}
