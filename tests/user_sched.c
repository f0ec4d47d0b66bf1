/* user_sched.c: the new-user workload tests' scheduling harness (see
 * user_sched.h): a variant's refusal handler, and handles and splits that
 * are skipped once the variant is refused. */
#include "user_sched.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#define FAILF(...)                                                                                 \
    do {                                                                                           \
        fprintf(stderr, __VA_ARGS__);                                                              \
        fputc('\n', stderr);                                                                       \
        fail();                                                                                    \
    } while (0)

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
