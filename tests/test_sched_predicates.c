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
 *
 * The second half holds what the schedule fuzzer found once it drew
 * such functions (helper h64): cache_write 11-12 and cache_read 9 (masked
 * or possibly empty writers), decompose_reduction 10 and blockize 9 (an
 * init moved before steps whose first one the predicate decides),
 * fuse_reduction_epilogue 6, reverse_compute_at 16-17 and compute_at 16
 * (a reduce loop that may be empty, a domain over a loop), rfactor 8 and
 * 13, fuse 9, split's guard before a conjunct dividing by a loop's
 * extent, and compute_at regions bounded only through a type's range or
 * by a division by what may be 0.  Each failed before its fix.
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
    for (int i = 0; i < f->nparams; i++) assert_true((f->buffer_map[i] != NULL) == (i < nb));
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

/* =================================================================
 * Found by the schedule fuzzer once it drew predicates, scalar reduce
 * extents, triangles and accumulations (helper h64); every case below
 * was accepted and computed something else before its fix.
 * ================================================================= */

/* C = A @ B over constant K = 4 under the predicate %s (n a scalar). */
static const char mm_pred_fmt[] =
    "@T.prim_func\n"
    "def mmp(A: T.Buffer((4, 4), \"float32\"), B: T.Buffer((4, 3), \"float32\"), C: "
    "T.Buffer((4, 3), \"float32\"), n: T.int32):\n"
    "    for i, j, k in T.grid(4, 3, 4):\n"
    "        with T.block(\"C\"):\n"
    "            vi, vj, vk = T.axis.remap(\"SSR\", [i, j, k])\n"
    "            T.where(%s)\n"
    "            T.reads(A[vi, vk], B[vk, vj])\n"
    "            T.writes(C[vi, vj])\n"
    "            with T.init():\n"
    "                C[vi, vj] = T.float32(0)\n"
    "            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]\n";

/* As mm_pred_fmt, then the epilogue D = C + 1 (C a parameter: its old
 * values are the caller's where the reduction skips elements). */
static const char mm_epi_fmt[] =
    "@T.prim_func\n"
    "def mme(A: T.Buffer((4, 4), \"float32\"), B: T.Buffer((4, 3), \"float32\"), C: "
    "T.Buffer((4, 3), \"float32\"), D: T.Buffer((4, 3), \"float32\"), n: T.int32):\n"
    "    for i, j, k in T.grid(4, 3, %s):\n"
    "        with T.block(\"C\"):\n"
    "            vi, vj, vk = T.axis.remap(\"SSR\", [i, j, k])\n"
    "            T.where(%s)\n"
    "            T.reads(A[vi, vk], B[vk, vj])\n"
    "            T.writes(C[vi, vj])\n"
    "            with T.init():\n"
    "                C[vi, vj] = T.float32(0)\n"
    "            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]\n"
    "    for i, j in T.grid(4, 3):\n"
    "        with T.block(\"D\"):\n"
    "            vi, vj = T.axis.remap(\"SS\", [i, j])\n"
    "            T.reads(C[vi, vj])\n"
    "            T.writes(D[vi, vj])\n"
    "            D[vi, vj] = C[vi, vj] + T.float32(1)\n";

/* The scalar n (f's last parameter, where it has one) at 0, 1, 2 and 5. */
static void same_over_n(tir_ctx *ctx, const tir_prim_func *f, const tir_prim_func *g) {
    static const int64_t ns[] = {0, 1, 2, 5};
    if (f->buffer_map[f->nparams - 1]) {
        same_results(ctx, f, g, 0, NULL);
        return;
    }
    for (int k = 0; k < 4; k++) same_results(ctx, f, g, 1, &ns[k]);
}

/* Replays trace on a fresh schedule of f: it must succeed and compute
 * what f does for every n. */
static void replay_same(tir_ctx *ctx, const tir_prim_func *f, const char *trace) {
    tir_schedule *s = sched_new(ctx, f);
    SCHED_OK(s, tir_sched_replay(s, trace, strlen(trace)));
    same_over_n(ctx, f, tir_sched_func(s));
    sched_check_roundtrip(s);
    tir_sched_destroy(s);
}

/* Replays trace on a fresh schedule of f: its last instruction must fail
 * with `want`, a message naming prim, and (the replay being all or
 * nothing) leave the schedule as it was. */
static void replay_refused(tir_ctx *ctx, const tir_prim_func *f, const char *trace,
                           tir_status want, const char *prim) {
    tir_schedule *s = sched_new(ctx, f);
    tir_status st = tir_sched_replay(s, trace, strlen(trace));
    if (st != want || !strstr(tir_ctx_error(ctx), prim))
        fail_msg("%s: got %s, expected %s from %s: %s", trace, tir_status_name(st),
                 tir_status_name(want), prim, st == TIR_OK ? "" : tir_ctx_error(ctx));
    assert_int_equal(tir_sched_trace_len(s), 0);
    assert_ptr_equal(tir_sched_func(s), f);
    tir_sched_destroy(s);
}

static const char get_c[] = "b0 = get_block(\"C\")\n[l1, l2, l3] = get_loops(b0)\n";

/* cache_write 11-12, and 8's enumeration past a scalar's conjunct. */
static void test_cache_write_masked(void **st) {
    tir_ctx *ctx = *st;
    char tr[1024];
    snprintf(tr, sizeof tr, "%sb4 = cache_write(b0, 0, \"local\", [])\n", get_c);
    /* a scalar's conjunct masks all or nothing: the write-back runs under
       it; one holding at the reduction's first step keeps every element */
    static const char *const ok[] = {"n > 1", "k % 2 == 0", "n > 0 and k < 3"};
    for (int p = 0; p < 3; p++) replay_same(ctx, parse_fmt(ctx, mm_pred_fmt, ok[p], ""), tr);
    /* odd rows keep their values; k % 2 == 1 skips the init */
    static const char *const bad[] = {"i % 2 == 0", "k % 2 == 1", "n > 0 and j < 2"};
    for (int p = 0; p < 3; p++)
        replay_refused(ctx, parse_fmt(ctx, mm_pred_fmt, bad[p], ""), tr,
                       TIR_ERR_SCHED_REGION_NOT_COVERED, "cache_write");
    /* 12: a consumer would read the cache where the write-back does not run */
    snprintf(tr, sizeof tr,
             "%sb4 = get_block(\"D\")\nb5 = cache_write(b0, 0, \"local\", [b4])\n", get_c);
    replay_refused(ctx, parse_fmt(ctx, mm_epi_fmt, "4", "n > 0"), tr,
                   TIR_ERR_SCHED_REGION_NOT_COVERED, "cache_write");
    replay_refused(ctx, parse_fmt(ctx, mm_epi_fmt, "n", "True"), tr,
                   TIR_ERR_SCHED_REGION_NOT_COVERED, "cache_write");
    /* a block blockize left inside the cached one masks odd columns */
    snprintf(tr, sizeof tr, "%sb4 = blockize(l2)\nb5 = cache_write(b4, 0, \"local\", [])\n",
             get_c);
    replay_refused(ctx, parse_fmt(ctx, mm_pred_fmt, "j % 2 == 0 and n > 0", ""), tr,
                   TIR_ERR_SCHED_REGION_NOT_COVERED, "cache_write");
    /* 8: Y[2 * i] leaves Y[1] unwritten; n > 2 once stopped the count */
    static const char strided[] =
        "@T.prim_func\n"
        "def strided(X: T.Buffer((1,), \"float32\"), Y: T.Buffer((2,), \"float32\"), "
        "n: T.int32):\n"
        "    for i in range(1):\n"
        "        with T.block(\"Y\"):\n"
        "            vi = T.axis.spatial(1, i)\n"
        "            T.where(n > 2)\n"
        "            T.reads(X[vi])\n"
        "            T.writes(Y[vi * 2])\n"
        "            Y[vi * 2] = X[vi] + T.float32(1)\n";
    replay_refused(ctx, blk_parse(ctx, strided),
                   "b0 = get_block(\"Y\")\n[l1] = get_loops(b0)\n[l2, l3] = split(l1, [2, None])\n"
                   "b4 = cache_write(b0, 0, \"local\", [])\n",
                   TIR_ERR_SCHED_REGION_NOT_COVERED, "cache_write");
}

/* cache_read 9: the copy would read what a masked writer left unwritten. */
static void test_cache_read_masked_writer(void **st) {
    tir_ctx *ctx = *st;
    static const char *const preds[] = {"n > 0", "i % 2 == 0"};
    for (int p = 0; p < 2; p++) {
        tir_schedule *s = sched_new(ctx, parse_fmt(ctx, masked_producer_fmt, preds[p], "n > 0"));
        tir_block_rv c = sched_block(s, "C"), out;
        SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_REGION_NOT_COVERED, "cache_read",
                          tir_sched_cache_read(s, c, 0, "local", 1, &c, &out));
        tir_sched_destroy(s);
    }
}

/* decompose_reduction 10: the init block says what the predicate said at
 * the reduction's first step. */
static void test_decompose_first_step(void **st) {
    tir_ctx *ctx = *st;
    static const char *const preds[] = {"k % 2 == 1", "n > 1 and k % 2 == 1", "k % 2 == 0",
                                        "i % 2 == 0 and k < 3", "k + i < 3"};
    for (int p = 0; p < 5; p++)
        for (int at = 0; at < 3; at++) {
            char tr[256];
            snprintf(tr, sizeof tr, "%sb4 = decompose_reduction(b0, l%d)\n", get_c, at + 1);
            replay_same(ctx, parse_fmt(ctx, mm_pred_fmt, preds[p], ""), tr);
        }
    /* a fused spatial and reduce loop: its first step is not its min */
    char tr[512];
    snprintf(tr, sizeof tr, "%sl4 = fuse([l2, l3])\nb5 = decompose_reduction(b0, l4)\n", get_c);
    replay_refused(ctx, parse_fmt(ctx, mm_pred_fmt, "k % 2 == 1", ""), tr,
                   TIR_ERR_SCHED_PREDICATED_PRODUCER, "decompose_reduction");
    /* a predicate the simplifier folded to False masks the init too */
    snprintf(tr, sizeof tr, "%sb4 = decompose_reduction(b0, l1)\n", get_c);
    replay_same(ctx, parse_fmt(ctx, mm_pred_fmt, "False", ""), tr);
}

/* fuse_reduction_epilogue 6: the fused init runs only with the first step. */
static void test_fuse_epilogue_skipped_elements(void **st) {
    tir_ctx *ctx = *st;
    static const char tr[] = "b0 = get_block(\"C\")\nb1 = get_block(\"D\")\n"
                             "fuse_reduction_epilogue(b0, b1)\n";
    static const char *const bad[][2] = {{"4", "i % 2 == 0"}, {"4", "n > 1"}, {"4", "k % 2 == 1"},
                                         {"n", "True"}};
    for (int p = 0; p < 4; p++)
        replay_refused(ctx, parse_fmt(ctx, mm_epi_fmt, bad[p][0], bad[p][1]), tr,
                       TIR_ERR_SCHED_PREDICATED_PRODUCER, "fuse_reduction_epilogue");
    replay_same(ctx, parse_fmt(ctx, mm_epi_fmt, "4", "k % 2 == 0"), tr);
}

/* reverse_compute_at 16 (a reduce loop that may be empty) and 17 /
 * compute_at 16 (an iterator domain over a loop). */
static void test_compute_at_empty_loops(void **st) {
    tir_ctx *ctx = *st;
    /* C's reduce loop runs min(j, 1) times: once, or never at j = 0 */
    static const char minj[] =
        "@T.prim_func\n"
        "def minj(A: T.Buffer((4, 1), \"float32\"), B: T.Buffer((1, 3), \"float32\"), C: "
        "T.Buffer((4, 3), \"float32\"), D: T.Buffer((4, 3), \"float32\")):\n"
        "    for i, j in T.grid(4, 3):\n"
        "        for k in range(T.min(j, 1)):\n"
        "            with T.block(\"C\"):\n"
        "                vi = T.axis.spatial(4, i)\n"
        "                vj = T.axis.spatial(3, j)\n"
        "                vk = T.axis.reduce(T.min(j, 1), k)\n"
        "                T.reads(A[vi, vk], B[vk, vj])\n"
        "                T.writes(C[vi, vj])\n"
        "                with T.init():\n"
        "                    C[vi, vj] = T.float32(0)\n"
        "                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]\n"
        "    for i, j in T.grid(4, 3):\n"
        "        with T.block(\"D\"):\n"
        "            vi, vj = T.axis.remap(\"SS\", [i, j])\n"
        "            T.reads(C[vi, vj])\n"
        "            T.writes(D[vi, vj])\n"
        "            D[vi, vj] = C[vi, vj] + T.float32(1)\n";
    const tir_prim_func *f = blk_parse(ctx, minj);
    replay_refused(ctx, f,
                   "b0 = get_block(\"C\")\nb1 = get_block(\"D\")\n[l2, l3, l4] = get_loops(b0)\n"
                   "reverse_compute_at(b1, l4, 1)\n",
                   TIR_ERR_SCHED_REGION_NOT_COVERED, "reverse_compute_at");
    /* at j, which feeds C's spatial iterator, it is fine */
    tir_schedule *s = sched_new(ctx, f);
    static const char at_j[] = "b0 = get_block(\"C\")\nb1 = get_block(\"D\")\n"
                               "[l2, l3, l4] = get_loops(b0)\nreverse_compute_at(b1, l3, 0)\n";
    SCHED_OK(s, tir_sched_replay(s, at_j, strlen(at_j)));
    same_results(ctx, f, tir_sched_func(s), 0, NULL);
    tir_sched_destroy(s);
    /* V's vk runs over [0, i): moved, its new loops would name i */
    static const char tri2[] =
        "@T.prim_func\n"
        "def tri2(A: T.Buffer((4, 4), \"float32\"), V: T.Buffer((4,), \"float32\")):\n"
        "    with T.block(\"root\"):\n"
        "        S = T.alloc_buffer((4,), \"float32\")\n"
        "        for i, k in T.grid(4, 4):\n"
        "            with T.block(\"S\"):\n"
        "                vi, vk = T.axis.remap(\"SR\", [i, k])\n"
        "                T.reads(A[vi, vk])\n"
        "                T.writes(S[vi])\n"
        "                with T.init():\n"
        "                    S[vi] = T.float32(0)\n"
        "                S[vi] = S[vi] + A[vi, vk]\n"
        "        for i in range(4):\n"
        "            for k in range(i):\n"
        "                with T.block(\"V\"):\n"
        "                    vi = T.axis.spatial(4, i)\n"
        "                    vk = T.axis.reduce(i, k)\n"
        "                    T.reads(A[vi, vk], S[vi])\n"
        "                    T.writes(V[vi])\n"
        "                    with T.init():\n"
        "                        V[vi] = T.float32(0)\n"
        "                    V[vi] = V[vi] + A[vi, vk] * S[vi]\n";
    replay_refused(ctx, blk_parse(ctx, tri2),
                   "b0 = get_block(\"S\")\nb1 = get_block(\"V\")\n[l2, l3] = get_loops(b0)\n"
                   "reverse_compute_at(b1, l2, 0)\n",
                   TIR_ERR_SCHED_DEPENDENT_DOMAIN, "reverse_compute_at");
    /* and S, a producer over [0, 4), at V's i: fine */
    replay_same(ctx, blk_parse(ctx, tri2),
                "b0 = get_block(\"S\")\nb1 = get_block(\"V\")\n[l2, l3] = get_loops(b1)\n"
                "compute_at(b0, l2, 0)\n");
    /* compute_at 16: V itself, under a consumer's loop */
    static const char tri3c[] =
        "@T.prim_func\n"
        "def tri3c(A: T.Buffer((4, 4), \"float32\"), O: T.Buffer((4,), \"float32\")):\n"
        "    with T.block(\"root\"):\n"
        "        V = T.alloc_buffer((4,), \"float32\")\n"
        "        for i in range(4):\n"
        "            for k in range(i + 1):\n"
        "                with T.block(\"V\"):\n"
        "                    vi = T.axis.spatial(4, i)\n"
        "                    vk = T.axis.reduce(i + 1, k)\n"
        "                    T.reads(A[vi, vk])\n"
        "                    T.writes(V[vi])\n"
        "                    with T.init():\n"
        "                        V[vi] = T.float32(0)\n"
        "                    V[vi] = V[vi] + A[vi, vk]\n"
        "        for i in range(4):\n"
        "            with T.block(\"O\"):\n"
        "                vi = T.axis.spatial(4, i)\n"
        "                T.reads(V[vi])\n"
        "                T.writes(O[vi])\n"
        "                O[vi] = V[vi] * T.float32(2)\n";
    replay_refused(ctx, blk_parse(ctx, tri3c),
                   "b0 = get_block(\"V\")\nb1 = get_block(\"O\")\n[l2] = get_loops(b1)\n"
                   "compute_at(b0, l2, 0)\n",
                   TIR_ERR_SCHED_DEPENDENT_DOMAIN, "compute_at");
}

/* rfactor 13 (another reduce loop of extent n) and 8 (a loop of extent 0). */
static void test_rfactor_empty_domain(void **st) {
    tir_ctx *ctx = *st;
    static const char mm3[] =
        "@T.prim_func\n"
        "def mm3(A: T.Buffer((2, 4, 3), \"float32\"), B: T.Buffer((4, 3), \"float32\"), C: "
        "T.Buffer((2, 3), \"float32\"), n: T.int32):\n"
        "    for i, j, k, r in T.grid(2, 3, 4, n):\n"
        "        with T.block(\"C\"):\n"
        "            vi, vj, vk = T.axis.remap(\"SSR\", [i, j, k])\n"
        "            vr = T.axis.reduce(n, r)\n"
        "            T.where(i < 1)\n"
        "            T.reads(A[vi, vk, vr], B[vk, vj])\n"
        "            T.writes(C[vi, vj])\n"
        "            with T.init():\n"
        "                C[vi, vj] = T.float32(0)\n"
        "            C[vi, vj] = C[vi, vj] + A[vi, vk, vr] * B[vk, vj]\n";
    const tir_prim_func *f = blk_parse(ctx, mm3);
    for (int64_t n = 0; n <= 3; n++) {
        tir_schedule *s = sched_new(ctx, f);
        tir_loop_rv l[16];
        assert_int_equal(sched_loops(s, "C", l), 4);
        tir_block_rv rf;
        SCHED_OK(s, tir_sched_rfactor(s, l[2], 0, &rf));
        same_results(ctx, f, tir_sched_func(s), 1, &n);
        tir_sched_destroy(s);
    }
    /* i's extent 1 makes k's range(i) the constant 0 once fused */
    static const char zero[] =
        "@T.prim_func\n"
        "def zero(A: T.Buffer((2, 3), \"float32\"), C: T.Buffer((2,), \"float32\")):\n"
        "    for b, i in T.grid(2, 1):\n"
        "        for k in range(i):\n"
        "            with T.block(\"C\"):\n"
        "                vb = T.axis.spatial(2, b)\n"
        "                vi = T.axis.spatial(1, i)\n"
        "                vk = T.axis.reduce(i, k)\n"
        "                T.reads(A[vb, vk])\n"
        "                T.writes(C[vb])\n"
        "                with T.init():\n"
        "                    C[vb] = T.float32(0)\n"
        "                C[vb] = C[vb] + A[vb, vk]\n";
    replay_refused(ctx, blk_parse(ctx, zero),
                   "b0 = get_block(\"C\")\n[l1, l2, l3] = get_loops(b0)\nl4 = fuse([l1, l2])\n"
                   "[l5, l6] = get_loops(b0)\nb7 = rfactor(l6, 0)\n",
                   TIR_ERR_SCHED_RFACTOR_LOOP, "rfactor");
}

/* blockize 9: the init moved out would run where the inner steps do not. */
static void test_blockize_inner_first_step(void **st) {
    tir_ctx *ctx = *st;
    static const char fmt[] =
        "@T.prim_func\n"
        "def two(A: T.Buffer((4, 2, 3), \"float32\"), C: T.Buffer((4,), \"float32\"), "
        "n: T.int32):\n"
        "    for i, k0, k1 in T.grid(4, 2, %s):\n"
        "        with T.block(\"C\"):\n"
        "            vi, vk0 = T.axis.remap(\"SR\", [i, k0])\n"
        "            vk1 = T.axis.reduce(%s, k1)\n"
        "            T.where(%s)\n"
        "            T.reads(A[vi, vk0, vk1])\n"
        "            T.writes(C[vi])\n"
        "            with T.init():\n"
        "                C[vi] = T.float32(0)\n"
        "            C[vi] = C[vi] + A[vi, vk0, vk1]\n";
    static const char tr[] = "b0 = get_block(\"C\")\n[l1, l2, l3] = get_loops(b0)\n"
                             "b4 = blockize(l3)\n";
    static const char *const bad[][2] = {{"n", "True"}, {"3", "k1 % 2 == 1"}};
    static const char *const good[][2] = {{"3", "k1 % 2 == 0"}, {"3", "n > 1"}};
    char text[2048];
    for (int p = 0; p < 2; p++) {
        snprintf(text, sizeof text, fmt, bad[p][0], bad[p][0], bad[p][1]);
        replay_refused(ctx, blk_parse(ctx, text), tr, TIR_ERR_SCHED_NOT_REDUCTION, "blockize");
        snprintf(text, sizeof text, fmt, good[p][0], good[p][0], good[p][1]);
        replay_same(ctx, blk_parse(ctx, text), tr);
    }
}

/* fuse 9, the split guard first, and a region bounded only by a type's
 * range (compute_at). */
static void test_fuse_split_zero_extents(void **st) {
    tir_ctx *ctx = *st;
    /* C's k runs i times: fused with j, recovered as f // i and f % i */
    static const char tri3[] =
        "@T.prim_func\n"
        "def tri3(A: T.Buffer((3, 3), \"float32\"), B: T.Buffer((3, 3), \"float32\"), C: "
        "T.Buffer((3, 3), \"float32\")):\n"
        "    for i, j in T.grid(3, 3):\n"
        "        for k in range(i):\n"
        "            with T.block(\"C\"):\n"
        "                vi = T.axis.spatial(3, i)\n"
        "                vj = T.axis.spatial(3, j)\n"
        "                vk = T.axis.reduce(i, k)\n"
        "                T.where(k < 2)\n"
        "                T.reads(A[vi, vk], B[vk, vj])\n"
        "                T.writes(C[vi, vj])\n"
        "                with T.init():\n"
        "                    C[vi, vj] = T.float32(0)\n"
        "                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]\n";
    /* the split's extra iterations at i = 0: f < i * 3 first, or f % i < 2
       divides by 0 */
    replay_same(ctx, blk_parse(ctx, tri3),
                "b0 = get_block(\"C\")\n[l1, l2, l3] = get_loops(b0)\nl4 = fuse([l2, l3])\n"
                "[l5, l6] = split(l4, [6, 4])\n");
    /* x's extent 1 leaves rx's range(x) empty: fused, 0 // 0 */
    static const char empty[] =
        "@T.prim_func\n"
        "def empty(A: T.Buffer((3, 2), \"float32\"), C: T.Buffer((1,), \"float32\")):\n"
        "    for x, r in T.grid(1, 3):\n"
        "        for rx in range(x):\n"
        "            with T.block(\"C\"):\n"
        "                vx = T.axis.spatial(1, x)\n"
        "                vr = T.axis.reduce(3, r)\n"
        "                vrx = T.axis.reduce(x, rx)\n"
        "                T.reads(A[vr, vrx])\n"
        "                T.writes(C[vx])\n"
        "                with T.init():\n"
        "                    C[vx] = T.float32(0)\n"
        "                C[vx] = C[vx] + A[vr, vrx]\n";
    replay_refused(ctx, blk_parse(ctx, empty),
                   "b0 = get_block(\"C\")\n[l1, l2, l3] = get_loops(b0)\nl4 = fuse([l2, l3])\n",
                   TIR_ERR_SCHED_DEPENDENT_DOMAIN, "fuse");
    /* k < n split in two: relaxing k_0 * ((n + 1) // 2) bounds the
       unknown sign of (n + 1) // 2 by n's type, and W_local's loop of
       extent (n + 1) // 2 + 2147483647 wrapped */
    static const char wn[] =
        "@T.prim_func\n"
        "def wn(A: T.Buffer((4, 3), \"float32\"), W: T.Buffer((3,), \"float32\"), C: "
        "T.Buffer((4,), \"float32\"), n: T.int32):\n"
        "    for i, k in T.grid(4, n):\n"
        "        with T.block(\"C\"):\n"
        "            vi, vk = T.axis.remap(\"SR\", [i, k])\n"
        "            T.reads(A[vi, vk], W[vk])\n"
        "            T.writes(C[vi])\n"
        "            with T.init():\n"
        "                C[vi] = T.float32(0)\n"
        "            C[vi] = C[vi] + A[vi, vk] * W[vk]\n";
    /* ry runs min(y, 1) times: fused with rc, vrc = f // min(y, 1); P's
       region under x, min 0 // min(y, 1), divided by 0 at y = 0 */
    static const char fz[] =
        "@T.prim_func\n"
        "def fz(A: T.Buffer((3,), \"float32\"), C: T.Buffer((3,), \"float32\")):\n"
        "    with T.block(\"root\"):\n"
        "        P = T.alloc_buffer((3,), \"float32\")\n"
        "        for h in range(3):\n"
        "            with T.block(\"P\"):\n"
        "                vh = T.axis.spatial(3, h)\n"
        "                T.reads(A[vh])\n"
        "                T.writes(P[vh])\n"
        "                P[vh] = A[vh] * T.float32(2)\n"
        "        for y, x in T.grid(3, 1):\n"
        "            for rc, ry in T.grid(1, T.min(y, 1)):\n"
        "                with T.block(\"C\"):\n"
        "                    vy = T.axis.spatial(3, y)\n"
        "                    vrc = T.axis.reduce(1, rc)\n"
        "                    vry = T.axis.reduce(T.min(y, 1), ry)\n"
        "                    T.reads(P[vy + vrc - vry])\n"
        "                    T.writes(C[vy])\n"
        "                    with T.init():\n"
        "                        C[vy] = T.float32(0)\n"
        "                    C[vy] = C[vy] + P[vy + vrc - vry]\n";
    replay_refused(ctx, blk_parse(ctx, fz),
                   "b0 = get_block(\"P\")\nb1 = get_block(\"C\")\n"
                   "[l2, l3, l4, l5] = get_loops(b1)\nl6 = fuse([l4, l5])\n"
                   "compute_at(b0, l3, 1)\n",
                   TIR_ERR_SCHED_REGION_UNBOUNDED, "compute_at");
    replay_refused(ctx, blk_parse(ctx, wn),
                   "b0 = get_block(\"C\")\n[l1, l2] = get_loops(b0)\n"
                   "[l3, l4] = split(l2, [2, None])\nb5 = cache_read(b0, 1, \"local\", [b0])\n"
                   "compute_at(b5, l1, 0)\n",
                   TIR_ERR_SCHED_REGION_UNBOUNDED, "compute_at");
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
        cmocka_unit_test_setup_teardown(test_cache_write_masked, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cache_read_masked_writer, setup, teardown),
        cmocka_unit_test_setup_teardown(test_decompose_first_step, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fuse_epilogue_skipped_elements, setup, teardown),
        cmocka_unit_test_setup_teardown(test_compute_at_empty_loops, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rfactor_empty_domain, setup, teardown),
        cmocka_unit_test_setup_teardown(test_blockize_inner_first_step, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fuse_split_zero_extents, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
