/* Tests of lower_fragments (src/lower/lower_fragments.c) and of what the
 * other lowering passes know about warp fragments: hand-written
 * tensorized matmuls (tests/lower_kernels.c, lk_tc) lowered, checked for
 * the register offsets of the tiles, the ldmatrix choice and its per-lane
 * fallback, the clipping ifs at ragged sizes and their absence at
 * divisible ones, barriers around the shared tiles, and each user error.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
/* cmocka needs the headers above first */
#include <cmocka.h>

#include "lower_kernels.h"
#include "minitir/lower.h"

static tir_ctx *ctx;

static int setup(void **state) {
    (void)state;
    ctx = tir_ctx_create();
    return ctx ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    tir_ctx_destroy(ctx);
    return 0;
}

#define OK(x)                                                                                      \
    do {                                                                                           \
        tir_status s_ = (x);                                                                       \
        if (s_ != TIR_OK) fail_msg("%s: %s", #x, tir_ctx_error(ctx));                              \
    } while (0)

/* The text after pass `stop` (NULL: the whole pipeline). */
static const char *lowered(const tir_prim_func *f, const char *stop) {
    tir_lower_opts o;
    tir_lower_opts_init(&o);
    o.stop_after = stop;
    const tir_prim_func *k = NULL;
    OK(tir_lower(ctx, f, &o, &k));
    return tir_print(ctx, k);
}

static const tir_prim_func *tc(int64_t M, int64_t N, int64_t K, int flags) {
    const tir_prim_func *f = lk_tc(ctx, M, N, K, flags);
    if (!f) fail_msg("lk_tc: %s", tir_ctx_error(ctx));
    return f;
}

static void test_dump(void **state) {
    (void)state;
    const tir_prim_func *f = tc(32, 16, 32, 0);
    printf("%s\n", lowered(f, "lower_fragments"));
    printf("%s\n", lowered(f, NULL));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dump),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
