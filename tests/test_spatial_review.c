/* test_spatial_review.c: the twenty-third session's review helper's
 * cases against tir_sched_create's spatial-write proof
 * (src/schedule/spatial_writes.c).  Each case is a spatial block two of
 * whose instances store one element (checked by brute force when the
 * case was written), which tir_sched_create accepted: reorder, bind and
 * reverse_compute_inline then change which instance writes last.  One
 * test function per finding, so that each fails on its own until fixed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "minitir/ir.h"
#include "minitir/schedule.h"

static int setup(void **st) {
    *st = tir_ctx_create();
    return *st ? 0 : -1;
}
static int teardown(void **st) {
    tir_ctx_destroy(*st);
    return 0;
}

/* text must parse, and tir_sched_create must refuse it naming block "S"
 * and buffer B as stored from two instances. */
static void expect_collision(tir_ctx *ctx, const char *text) {
    const tir_prim_func *f = NULL;
    if (tir_parse_func(ctx, text, strlen(text), &f) != TIR_OK)
        fail_msg("%s\n%s", tir_ctx_error(ctx), text);
    tir_schedule *s = NULL;
    tir_status rc = tir_sched_create(ctx, f, &s);
    if (s) tir_sched_destroy(s);
    if (rc != TIR_ERR_VERIFY)
        fail_msg("accepted (status %d), two instances store one element of B:\n%s", (int)rc,
                 text);
    assert_non_null(strstr(tir_ctx_error(ctx), "block \"S\" stores B from two instances"));
}

/* text must parse and tir_sched_create accept it (a block whose instances
 * were checked by brute force to store distinct elements). */
static void expect_accepted(tir_ctx *ctx, const char *text) {
    const tir_prim_func *f = NULL;
    if (tir_parse_func(ctx, text, strlen(text), &f) != TIR_OK)
        fail_msg("%s\n%s", tir_ctx_error(ctx), text);
    tir_schedule *s = NULL;
    if (tir_sched_create(ctx, f, &s) != TIR_OK) fail_msg("%s\n%s", tir_ctx_error(ctx), text);
    tir_sched_destroy(s);
}

/* Two stores whose index pairs (e // c, e % c) have different c: the proof
 * compared e1 = e2, but (vi // 4, vi % 4) and ((vi + 16) // 8, (vi + 16) %
 * 8) meet at B[2, 0] from vi = 8 and vi = 0 (e1 = 8, e2 = 16). */
static void test_pairs_of_different_divisors(void **st) {
    expect_collision(*st,
                     "@T.prim_func\n"
                     "def f(B: T.Buffer((8, 8), \"float32\")):\n"
                     "    for i in range(16):\n"
                     "        with T.block(\"S\"):\n"
                     "            vi = T.axis.remap(\"S\", [i])\n"
                     "            T.writes(B[0:8, 0:8])\n"
                     "            B[vi // 4, vi % 4] = T.float32(1)\n"
                     "            B[(vi + 16) // 8, (vi + 16) % 8] = T.float32(2)\n");
    /* The same past enumeration (2^16 instances): the review's case,
     * B[(vi + 200000) // 8, (vi + 200000) % 8] with vi < 100000, does not
     * collide (its rows are 25000 and up, vi // 4's below 25000; checked
     * by brute force), so it is accepted, rightly.  With + 16 it does
     * (vi = 8 and vi = 0 store B[2, 0]): no proof (the pairs' divisors
     * differ), and the enumeration of a corner of the domain (the first
     * 2^16 values of vi) finds the two instances. */
    expect_accepted(*st,
                    "@T.prim_func\n"
                    "def f(B: T.Buffer((50000, 8), \"float32\")):\n"
                    "    for i in range(100000):\n"
                    "        with T.block(\"S\"):\n"
                    "            vi = T.axis.remap(\"S\", [i])\n"
                    "            T.writes(B[0:50000, 0:8])\n"
                    "            B[vi // 4, vi % 4] = T.float32(1)\n"
                    "            B[(vi + 200000) // 8, (vi + 200000) % 8] = T.float32(2)\n");
    expect_collision(*st,
                     "@T.prim_func\n"
                     "def f(B: T.Buffer((25000, 8), \"float32\")):\n"
                     "    for i in range(100000):\n"
                     "        with T.block(\"S\"):\n"
                     "            vi = T.axis.remap(\"S\", [i])\n"
                     "            T.writes(B[0:25000, 0:8])\n"
                     "            B[vi // 4, vi % 4] = T.float32(1)\n"
                     "            B[(vi + 16) // 8, (vi + 16) % 8] = T.float32(2)\n");
}

/* A vector store whose ramps overlap between instances: vi = 0 stores
 * B[0:4], vi = 1 B[2:6].  The proof takes a Ramp index as not affine and
 * the enumeration does not evaluate it, so the block was accepted as
 * undecided (a case docs/text-format.md does not list). */
static void test_overlapping_ramps(void **st) {
    expect_collision(*st,
                     "@T.prim_func\n"
                     "def f(A: T.Buffer((16,), \"float32\"), B: T.Buffer((16,), \"float32\")):\n"
                     "    for i in range(4):\n"
                     "        with T.block(\"S\"):\n"
                     "            vi = T.axis.remap(\"S\", [i])\n"
                     "            T.reads(A[vi * 4:vi * 4 + 4])\n"
                     "            T.writes(B[vi * 2:vi * 2 + 4])\n"
                     "            B[T.Ramp(vi * 2, 1, 4)] = A[T.Ramp(vi * 4, 1, 4)]\n");
}

/* Nine stores: past SW_STORES the block is not looked at (w->bad), not
 * even enumerated; the ninth, B[vi // 2 + 72], collides (vi = 0, 1). */
static void test_many_stores(void **st) {
    char text[2048];
    int n = snprintf(text, sizeof text,
                     "@T.prim_func\n"
                     "def f(B: T.Buffer((80,), \"float32\")):\n"
                     "    for i in range(8):\n"
                     "        with T.block(\"S\"):\n"
                     "            vi = T.axis.remap(\"S\", [i])\n"
                     "            T.writes(B[0:80])\n");
    for (int k = 0; k < 8; k++)
        n += snprintf(text + n, sizeof text - (size_t)n,
                      "            B[vi * 9 + %d] = T.float32(%d)\n", k, k);
    snprintf(text + n, sizeof text - (size_t)n, "            B[vi // 2 + 72] = T.float32(9)\n");
    expect_collision(*st, text);
}

/* An outer spatial block whose nested block stores the same elements for
 * every outer instance: B[vt] does not depend on vo, so instances vo = 0
 * and vo = 1 of S store all of B.  Each block is checked alone and S has
 * no store of its own; S's write region B[0:4] at every vo says so. */
static void test_nested_block_writes(void **st) {
    expect_collision(*st,
                     "@T.prim_func\n"
                     "def f(A: T.Buffer((4, 4), \"float32\"), B: T.Buffer((4,), \"float32\")):\n"
                     "    for o in range(4):\n"
                     "        with T.block(\"S\"):\n"
                     "            vo = T.axis.remap(\"S\", [o])\n"
                     "            T.reads(A[vo, 0:4])\n"
                     "            T.writes(B[0:4])\n"
                     "            for t in range(4):\n"
                     "                with T.block(\"T\"):\n"
                     "                    vt = T.axis.remap(\"S\", [t])\n"
                     "                    T.reads(A[vo, vt])\n"
                     "                    T.writes(B[vt])\n"
                     "                    B[vt] = A[vo, vt]\n");
}

/* A blockized matmul tile (the outer block's reduce iterator vko, an init
 * block and an update block nested): the nested stores in the outer
 * block's terms, C[vio * 16 + vi, vjo * 16 + vj] with vi, vj inner loops,
 * are proved distinct across vio, vjo; accepted. */
static void test_nested_tile_accepted(void **st) {
    expect_accepted(*st,
                    "@T.prim_func\n"
                    "def f(A: T.Buffer((64, 64), \"float32\"), B: T.Buffer((64, 64), \"float32\"), C: T.Buffer((64, 64), \"float32\")):\n"
                    "    for io, jo, ko in T.grid(4, 4, 4):\n"
                    "        with T.block(\"C_o\"):\n"
                    "            vio, vjo, vko = T.axis.remap(\"SSR\", [io, jo, ko])\n"
                    "            T.reads(A[vio * 16:vio * 16 + 16, vko * 16:vko * 16 + 16], B[vko * 16:vko * 16 + 16, vjo * 16:vjo * 16 + 16])\n"
                    "            T.writes(C[vio * 16:vio * 16 + 16, vjo * 16:vjo * 16 + 16])\n"
                    "            with T.init():\n"
                    "                for ii, jj in T.grid(16, 16):\n"
                    "                    with T.block(\"C_init\"):\n"
                    "                        vi, vj = T.axis.remap(\"SS\", [ii, jj])\n"
                    "                        T.reads()\n"
                    "                        T.writes(C[vio * 16 + vi, vjo * 16 + vj])\n"
                    "                        C[vio * 16 + vi, vjo * 16 + vj] = T.float32(0)\n"
                    "            for ii, jj, kk in T.grid(16, 16, 16):\n"
                    "                with T.block(\"C\"):\n"
                    "                    vi, vj, vk = T.axis.remap(\"SSR\", [ii, jj, kk])\n"
                    "                    T.reads(C[vio * 16 + vi, vjo * 16 + vj], A[vio * 16 + vi, vko * 16 + vk], B[vko * 16 + vk, vjo * 16 + vj])\n"
                    "                    T.writes(C[vio * 16 + vi, vjo * 16 + vj])\n"
                    "                    C[vio * 16 + vi, vjo * 16 + vj] = C[vio * 16 + vi, vjo * 16 + vj] + A[vio * 16 + vi, vko * 16 + vk] * B[vko * 16 + vk, vjo * 16 + vj]\n");
}

/* A store under a loop inside the block: vi = 0, t = 1 and vi = 1, t = 0
 * both store B[1].  The enumeration skipped stores under loops and a
 * witness held t at its first value, so the block was accepted.  The
 * affine witness now moves an inner loop with an iterator (columns of vi
 * and t proportional) and evaluates both instances, the loops' ranges
 * and conditions included; B[vi * 4 + t] is proved and accepted. */
static void test_store_under_inner_loop(void **st) {
    expect_collision(*st,
                     "@T.prim_func\n"
                     "def f(B: T.Buffer((16,), \"float32\")):\n"
                     "    for i in range(8):\n"
                     "        with T.block(\"S\"):\n"
                     "            vi = T.axis.remap(\"S\", [i])\n"
                     "            T.writes(B[vi:vi + 4])\n"
                     "            for t in range(4):\n"
                     "                B[vi + t] = T.float32(1)\n");
    /* past 2^16 instances, and a stride of 2 in the inner loop */
    expect_collision(*st,
                     "@T.prim_func\n"
                     "def f(B: T.Buffer((300000,), \"float32\")):\n"
                     "    for i in range(100000):\n"
                     "        with T.block(\"S\"):\n"
                     "            vi = T.axis.remap(\"S\", [i])\n"
                     "            T.writes(B[vi:vi + 7])\n"
                     "            for t in range(4):\n"
                     "                B[vi + t * 2] = T.float32(1)\n");
    /* under a condition on the inner loop: t >= 2 (vi = 0, t = 3 and
     * vi = 1, t = 2 store B[3]) */
    expect_collision(*st,
                     "@T.prim_func\n"
                     "def f(B: T.Buffer((16,), \"float32\")):\n"
                     "    for i in range(8):\n"
                     "        with T.block(\"S\"):\n"
                     "            vi = T.axis.remap(\"S\", [i])\n"
                     "            T.writes(B[vi:vi + 4])\n"
                     "            for t in range(4):\n"
                     "                if t >= 2:\n"
                     "                    B[vi + t] = T.float32(1)\n");
    /* past the enumeration (inner iterations past 2^16): the affine
     * witness alone, vi = 0, t = 1 and vi = 1, t = 0 */
    expect_collision(*st,
                     "@T.prim_func\n"
                     "def f(B: T.Buffer((100004,), \"float32\")):\n"
                     "    for i in range(4):\n"
                     "        with T.block(\"S\"):\n"
                     "            vi = T.axis.remap(\"S\", [i])\n"
                     "            T.writes(B[vi:vi + 100000])\n"
                     "            for t in range(100000):\n"
                     "                B[vi + t] = T.float32(1)\n");
    /* a store below an else keeps the enumeration out: the witness tries
     * the inner loop's values where the condition holds */
    expect_collision(*st,
                     "@T.prim_func\n"
                     "def f(B: T.Buffer((16,), \"float32\"), C: T.Buffer((32,), \"float32\")):\n"
                     "    for i in range(8):\n"
                     "        with T.block(\"S\"):\n"
                     "            vi = T.axis.remap(\"S\", [i])\n"
                     "            T.writes(B[vi:vi + 4], C[vi * 4:vi * 4 + 4])\n"
                     "            for t in range(4):\n"
                     "                if t >= 2:\n"
                     "                    B[vi + t] = T.float32(1)\n"
                     "                else:\n"
                     "                    C[vi * 4 + t] = T.float32(2)\n");
    expect_accepted(*st,
                    "@T.prim_func\n"
                    "def f(B: T.Buffer((32,), \"float32\")):\n"
                    "    for i in range(8):\n"
                    "        with T.block(\"S\"):\n"
                    "            vi = T.axis.remap(\"S\", [i])\n"
                    "            T.writes(B[vi * 4:vi * 4 + 4])\n"
                    "            for t in range(4):\n"
                    "                B[vi * 4 + t] = T.float32(1)\n");
    /* overlapping only where a condition is false: t < 1 leaves B[vi]
     * alone, one element per instance (checked by brute force) */
    expect_accepted(*st,
                    "@T.prim_func\n"
                    "def f(B: T.Buffer((16,), \"float32\")):\n"
                    "    for i in range(8):\n"
                    "        with T.block(\"S\"):\n"
                    "            vi = T.axis.remap(\"S\", [i])\n"
                    "            T.writes(B[vi:vi + 4])\n"
                    "            for t in range(4):\n"
                    "                if t < 1:\n"
                    "                    B[vi + t] = T.float32(1)\n");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_pairs_of_different_divisors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_overlapping_ramps, setup, teardown),
        cmocka_unit_test_setup_teardown(test_many_stores, setup, teardown),
        cmocka_unit_test_setup_teardown(test_nested_block_writes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_nested_tile_accepted, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_under_inner_loop, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
