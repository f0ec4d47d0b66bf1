/* Tests of what a block's predicate and an empty reduce domain mean to
 * the primitives that move, copy or split a block: cache_write 9-10,
 * decompose_reduction 9, compute_at and reverse_compute_at 15,
 * reverse_compute_inline 12.
 *
 * Each accepted case runs the original and the scheduled function in the
 * interpreter with the output initialised (its old values mean something:
 * an empty reduction keeps them, a masked store leaves them) and compares
 * every element; each refused case checks the status and that the
 * schedule did not change.  Before these preconditions, every case here
 * was accepted and differed: cache_write copied an unwritten cache back
 * over K = 0 or over an accumulation without init, decompose_reduction
 * wrote the init where the reduction runs no instance, and compute_at,
 * reverse_compute_at and reverse_compute_inline dropped a T.where.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "sched_block_util.h"

static int setup(void **st) {
    *st = tir_ctx_create();
    return *st ? 0 : -1;
}
static int teardown(void **st) {
    tir_ctx_destroy(*st);
    return 0;
}

/* ------------------------------------------------------------ running */

enum { NBUF = 4, MAXE = 64 };

/* Runs f and g (same parameters: buffers of at most MAXE floats, then
 * scalars) on the same inputs, every buffer initialised (so that old
 * values show), with the scalars given; fails the test where an element
 * differs or g stops with an error. */
static void same_results(tir_ctx *ctx, const tir_prim_func *f, const tir_prim_func *g,
                         int nscalars, const int64_t *scalars) {
    static float data[2][NBUF][MAXE];
    tir_arg a[2][NBUF + 2];
    int nb = f->nparams - nscalars;
    assert_true(nb <= NBUF);
    for (int i = 0; i < nb; i++)
        for (int e = 0; e < MAXE; e++) data[0][i][e] = data[1][i][e] = (float)((e * 7 + i) % 5 - 2);
    for (int o = 0; o < 2; o++) {
        for (int i = 0; i < nb; i++) a[o][i].data = data[o][i];
        for (int i = 0; i < nscalars; i++) a[o][nb + i].scalar = scalars[i];
    }
    assert_int_equal(tir_interp_run(ctx, f, f->nparams, a[0], NULL), TIR_OK);
    tir_status st = tir_interp_run(ctx, g, g->nparams, a[1], NULL);
    if (st != TIR_OK) fprintf(stderr, "scheduled: %s\n", tir_ctx_error(ctx));
    assert_int_equal(st, TIR_OK);
    for (int i = 0; i < nb; i++)
        for (int e = 0; e < MAXE; e++)
            if (data[0][i][e] != data[1][i][e]) {
                fprintf(stderr, "buffer %d element %d: original %g, scheduled %g\n%s", i, e,
                        data[0][i][e], data[1][i][e], tir_print(ctx, g));
                fail();
            }
}

/* Both functions at K = 0, 1 and 3 (one scalar parameter). */
static void same_over_k(tir_ctx *ctx, const tir_prim_func *f, const tir_prim_func *g) {
    for (int64_t k = 0; k <= 3; k += 1 + (k == 1)) same_results(ctx, f, g, 1, &k);
}

/* ------------------------------------------------------------ functions */

/* C = A @ B over a symbolic K, with an init. */
static const char mm_k[] =
    "@T.prim_func\n"
    "def mm(A: T.Buffer((4, K), \"float32\"), B: T.Buffer((K, 3), \"float32\"), C: "
    "T.Buffer((4, 3), \"float32\"), K: T.int32):\n"
    "    for i, j, k in T.grid(4, 3, K):\n"
    "        with T.block(\"C\"):\n"
    "            vi, vj, vk = T.axis.remap(\"SSR\", [i, j, k])\n"
    "            T.reads(A[vi, vk], B[vk, vj])\n"
    "            T.writes(C[vi, vj])\n"
    "            with T.init():\n"
    "                C[vi, vj] = T.float32(0)\n"
    "            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]\n";

/* C += A @ B: an accumulation into C's old values, no init. */
static const char mm_acc[] =
    "@T.prim_func\n"
    "def acc(A: T.Buffer((4, 3), \"float32\"), B: T.Buffer((3, 2), \"float32\"), C: "
    "T.Buffer((4, 2), \"float32\")):\n"
    "    for i, j, k in T.grid(4, 2, 3):\n"
    "        with T.block(\"C\"):\n"
    "            vi, vj, vk = T.axis.remap(\"SSR\", [i, j, k])\n"
    "            T.reads(C[vi, vj], A[vi, vk], B[vk, vj])\n"
    "            T.writes(C[vi, vj])\n"
    "            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]\n";

/* Row sums over a triangle: row i sums i elements, row 0 none. */
static const char tri[] =
    "@T.prim_func\n"
    "def tri(A: T.Buffer((8, 8), \"float32\"), C: T.Buffer((8,), \"float32\")):\n"
    "    for i in range(8):\n"
    "        for k in range(i):\n"
    "            with T.block(\"C\"):\n"
    "                vi = T.axis.spatial(8, i)\n"
    "                vk = T.axis.reduce(i, k)\n"
    "                T.reads(A[vi, vk])\n"
    "                T.writes(C[vi])\n"
    "                with T.init():\n"
    "                    C[vi] = T.float32(0)\n"
    "                C[vi] = C[vi] + A[vi, vk]\n";

/* B = A * 2, then C = B + 1 under the predicate %s over C's loops
 * (i2_0, i2_1: i2 split by 2), n a scalar parameter. */
static const char masked_fmt[] =
    "@T.prim_func\n"
    "def masked(A: T.Buffer((8,), \"float32\"), C: T.Buffer((8,), \"float32\"), n: T.int32):\n"
    "    with T.block(\"root\"):\n"
    "        B = T.alloc_buffer((8,), \"float32\")\n"
    "        for i in range(8):\n"
    "            with T.block(\"B\"):\n"
    "                vi = T.axis.spatial(8, i)\n"
    "                T.reads(A[vi])\n"
    "                T.writes(B[vi])\n"
    "                B[vi] = A[vi] * T.float32(2)\n"
    "        for i2_0, i2_1 in T.grid(4, 2):\n"
    "            with T.block(\"C\"):\n"
    "                vi = T.axis.spatial(8, i2_0 * 2 + i2_1)\n"
    "                T.where(%s)\n"
    "                T.reads(B[vi])\n"
    "                T.writes(C[vi])\n"
    "                C[vi] = B[vi] + T.float32(1)\n";

/* As masked, with the first predicate on the producer B (over its loop
 * i) and the second on the consumer C (over its one loop i2). */
static const char masked_producer_fmt[] =
    "@T.prim_func\n"
    "def masked_producer(A: T.Buffer((8,), \"float32\"), C: T.Buffer((8,), \"float32\"), "
    "n: T.int32):\n"
    "    with T.block(\"root\"):\n"
    "        B = T.alloc_buffer((8,), \"float32\")\n"
    "        for i in range(8):\n"
    "            with T.block(\"B\"):\n"
    "                vi = T.axis.spatial(8, i)\n"
    "                T.where(%s)\n"
    "                T.reads(A[vi])\n"
    "                T.writes(B[vi])\n"
    "                B[vi] = A[vi] * T.float32(2)\n"
    "        for i2 in range(8):\n"
    "            with T.block(\"C\"):\n"
    "                vi = T.axis.spatial(8, i2)\n"
    "                T.where(%s)\n"
    "                T.reads(B[vi])\n"
    "                T.writes(C[vi])\n"
    "                C[vi] = B[vi] + T.float32(1)\n";

static const tir_prim_func *parse_fmt(tir_ctx *ctx, const char *fmt, const char *p1,
                                      const char *p2) {
    char text[4096];
    snprintf(text, sizeof text, fmt, p1, p2);
    const tir_prim_func *f = blk_parse(ctx, text);
    assert_non_null(f);
    return f;
}

/* The realize of block `name`, found by walking the function. */
typedef struct {
    tir_visitor v;
    const char *name;
    const tir_block_realize *found;
} find_realize;

static bool find_pre(tir_visitor *v, const tir_node *n) {
    find_realize *fr = (find_realize *)v;
    if (n->kind == TIR_KIND_BLOCK_REALIZE) {
        const tir_block_realize *r = (const tir_block_realize *)n;
        if (!strcmp(r->block->name, fr->name)) fr->found = r;
    }
    return !fr->found;
}

/* The predicate of block `name` in the current function, printed. */
static const char *pred_text(tir_schedule *s, const char *name, char *buf, size_t n) {
    find_realize fr = {{.pre = find_pre}, name, NULL};
    tir_visit(&fr.v, tir_sched_func(s)->body);
    assert_non_null(fr.found);
    const tir_expr *p = fr.found->predicate;
    snprintf(buf, n, "%s", p && !(p->kind == TIR_KIND_INT_IMM) ? tir_print(tir_sched_ctx(s), p) : "");
    return buf;
}

/* Whether a printed predicate is the non-empty K guard, as made (K > 0)
 * or as the simplifier rewrites it (1 <= K), alone or in a conjunction. */
static bool k_guard(const char *p) {
    return strstr(p, "K > 0") || strstr(p, "1 <= K");
}

/* ------------------------------------------------------------ cache_write */

static void test_cache_write_empty_domain(void **st) {
    tir_ctx *ctx = *st;
    const tir_prim_func *f = blk_parse(ctx, mm_k);
    tir_schedule *s = sched_new(ctx, f);
    tir_block_rv c = sched_block(s, "C"), wb;
    SCHED_OK(s, tir_sched_cache_write(s, c, 0, "local", 0, NULL, &wb));
    char p[256];
    assert_string_equal(pred_text(s, "C_local", p, sizeof p), "K > 0");
    same_over_k(ctx, f, tir_sched_func(s));
    /* the write-back moved under the spatial loops keeps K > 0 (15) */
    tir_loop_rv l[16];
    assert_int_equal(sched_loops(s, "C", l), 3);
    SCHED_OK(s, tir_sched_reverse_compute_at(s, wb, l[1], false));
    assert_true(k_guard(pred_text(s, "C_local", p, sizeof p)));
    same_over_k(ctx, f, tir_sched_func(s));
    /* and the init, decomposed at the k loop (9) */
    tir_block_rv init;
    assert_int_equal(sched_loops(s, "C", l), 3);
    SCHED_OK(s, tir_sched_decompose_reduction(s, c, l[2], &init));
    assert_true(k_guard(pred_text(s, "C_init", p, sizeof p)));
    same_over_k(ctx, f, tir_sched_func(s));
    sched_check_roundtrip(s);
    tir_sched_destroy(s);
    /* constant extents: no predicate */
    s = sched_new(ctx, tir_def_matmul(ctx, 8, 6, 4, TIR_F32));
    SCHED_OK(s, tir_sched_cache_write(s, sched_block(s, "C"), 0, "local", 0, NULL, &wb));
    assert_string_equal(pred_text(s, "C_local", p, sizeof p), "");
    tir_sched_destroy(s);
}

static void test_cache_write_preconditions_9_10(void **st) {
    tir_ctx *ctx = *st;
    tir_block_rv wb;
    /* 9: an accumulation into C's old values */
    tir_schedule *s = sched_new(ctx, blk_parse(ctx, mm_acc));
    tir_block_rv c = sched_block(s, "C");
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_REGION_NOT_COVERED, "cache_write",
                      tir_sched_cache_write(s, c, 0, "local", 0, NULL, &wb));
    assert_non_null(strstr(tir_ctx_error(ctx), "old values of C"));
    tir_sched_destroy(s);
    /* 10: row 0 of the triangle sums nothing, and i > 0 names a loop */
    s = sched_new(ctx, blk_parse(ctx, tri));
    c = sched_block(s, "C");
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_REGION_NOT_COVERED, "cache_write",
                      tir_sched_cache_write(s, c, 0, "local", 0, NULL, &wb));
    assert_non_null(strstr(tir_ctx_error(ctx), "i > 0"));
    tir_sched_destroy(s);
}

/* -------------------------------------------------- decompose_reduction */

static void test_decompose_empty_domain(void **st) {
    tir_ctx *ctx = *st;
    const tir_prim_func *f = blk_parse(ctx, mm_k);
    for (int at = 0; at < 3; at++) {
        tir_schedule *s = sched_new(ctx, f);
        tir_loop_rv l[16];
        assert_int_equal(sched_loops(s, "C", l), 3);
        tir_block_rv init;
        SCHED_OK(s, tir_sched_decompose_reduction(s, sched_block(s, "C"), l[at], &init));
        char p[256];
        assert_true(k_guard(pred_text(s, "C_init", p, sizeof p)));
        same_over_k(ctx, f, tir_sched_func(s));
        tir_sched_destroy(s);
    }
    /* 9: the triangle's domain names loop i */
    tir_schedule *s = sched_new(ctx, blk_parse(ctx, tri));
    tir_loop_rv l[16];
    assert_int_equal(sched_loops(s, "C", l), 2);
    tir_block_rv init, c = sched_block(s, "C");
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_NOT_REDUCTION, "decompose_reduction",
                      tir_sched_decompose_reduction(s, c, l[1], &init));
    tir_sched_destroy(s);
}

/* ------------------------------------ compute_at and reverse_compute_at */

static void test_reverse_compute_at_keeps_predicate(void **st) {
    tir_ctx *ctx = *st;
    /* C's loop i2 is its iterator's whole binding (a remap): it becomes
       B's i there */
    static const char *const preds[] = {"n > 0", "i2 % 2 == 0", "n > 3 and i2 < 5"};
    int64_t ns[2] = {0, 5};
    for (int p = 0; p < 3; p++) {
        const tir_prim_func *f = parse_fmt(ctx, masked_producer_fmt, "i < 8", preds[p]);
        tir_schedule *s = sched_new(ctx, f);
        tir_loop_rv l[16];
        assert_int_equal(sched_loops(s, "B", l), 1);
        SCHED_OK(s, tir_sched_reverse_compute_at(s, sched_block(s, "C"), l[0], false));
        char b[256];
        assert_string_not_equal(pred_text(s, "C", b, sizeof b), "");
        for (int k = 0; k < 2; k++) same_results(ctx, f, tir_sched_func(s), 1, &ns[k]);
        sched_check_roundtrip(s);
        tir_sched_destroy(s);
    }
    /* C's split loops, under its own nest, carry n > 0 alone */
    const tir_prim_func *f = parse_fmt(ctx, masked_fmt, "n > 0", "");
    tir_schedule *s = sched_new(ctx, f);
    tir_loop_rv l[16];
    assert_int_equal(sched_loops(s, "B", l), 1);
    SCHED_OK(s, tir_sched_reverse_compute_at(s, sched_block(s, "C"), l[0], false));
    for (int k = 0; k < 2; k++) same_results(ctx, f, tir_sched_func(s), 1, &ns[k]);
    tir_sched_destroy(s);
    /* 15: i2_0 feeds vi with i2_1, so no loop at B's i can stand for it */
    s = sched_new(ctx, parse_fmt(ctx, masked_fmt, "i2_0 % 2 == 0", ""));
    assert_int_equal(sched_loops(s, "B", l), 1);
    tir_block_rv c = sched_block(s, "C");
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_PREDICATED_PRODUCER, "reverse_compute_at",
                      tir_sched_reverse_compute_at(s, c, l[0], false));
    tir_sched_destroy(s);
}

static void test_compute_at_keeps_predicate(void **st) {
    tir_ctx *ctx = *st;
    /* the producer's mask and the consumer's agree (the consumer reads
       only what the producer wrote) */
    static const char *const preds[][2] = {{"n > 0", "n > 0"}, {"i % 2 == 0", "i2 % 2 == 0"}};
    int64_t ns[2] = {0, 5};
    for (int p = 0; p < 2; p++) {
        const tir_prim_func *f = parse_fmt(ctx, masked_producer_fmt, preds[p][0], preds[p][1]);
        tir_schedule *s = sched_new(ctx, f);
        tir_loop_rv l[16];
        assert_int_equal(sched_loops(s, "C", l), 1);
        SCHED_OK(s, tir_sched_compute_at(s, sched_block(s, "B"), l[0], false));
        char b[256];
        assert_string_not_equal(pred_text(s, "B", b, sizeof b), "");
        for (int k = 0; k < 2; k++) same_results(ctx, f, tir_sched_func(s), 1, &ns[k]);
        tir_sched_destroy(s);
    }
}

/* ------------------------------------------------ reverse_compute_inline */

static void test_reverse_compute_inline_predicate(void **st) {
    tir_ctx *ctx = *st;
    static const char *const preds[] = {"n > 0", "i2_1 == 0", "i2_0 * 2 + i2_1 < 7"};
    for (int p = 0; p < 3; p++) {
        tir_schedule *s = sched_new(ctx, parse_fmt(ctx, masked_fmt, preds[p], ""));
        tir_block_rv c = sched_block(s, "C");
        SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_PREDICATED_PRODUCER, "reverse_compute_inline",
                          tir_sched_reverse_compute_inline(s, c));
        tir_sched_destroy(s);
    }
    /* a predicate that only bounds the iterators still inlines */
    const tir_prim_func *f = parse_fmt(ctx, masked_fmt, "i2_0 * 2 + i2_1 < 8", "");
    tir_schedule *s = sched_new(ctx, f);
    SCHED_OK(s, tir_sched_reverse_compute_inline(s, sched_block(s, "C")));
    int64_t n = 1;
    same_results(ctx, f, tir_sched_func(s), 1, &n);
    tir_sched_destroy(s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_cache_write_empty_domain, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cache_write_preconditions_9_10, setup, teardown),
        cmocka_unit_test_setup_teardown(test_decompose_empty_domain, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reverse_compute_at_keeps_predicate, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_compute_at_keeps_predicate, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reverse_compute_inline_predicate, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
