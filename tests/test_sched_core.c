/* Tests of the schedule core: creation, queries, handles (following nodes,
 * going stale, invalid ids, compared with same_loop / same_block), the
 * trace in text and C form, and replay (including its errors, which must
 * change nothing). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "sched_check.h"
#include "sched_testfuncs.h"

static int setup(void **st) {
    *st = tir_ctx_create();
    return *st ? 0 : -1;
}
static int teardown(void **st) {
    tir_ctx_destroy(*st);
    return 0;
}

static tir_schedule *sched(tir_ctx *ctx, const tir_prim_func *f) {
    assert_non_null(f);
    tir_schedule *s = NULL;
    if (tir_sched_create(ctx, f, &s) != TIR_OK) fail_msg("create: %s", tir_ctx_error(ctx));
    return s;
}

static const tir_for *loop_of(tir_schedule *s, tir_loop_rv l) {
    const tir_for *f = NULL;
    SCHED_OK(s, tir_sched_get_for(s, l, &f));
    return f;
}

static int64_t extent_of(tir_schedule *s, tir_loop_rv l) {
    int64_t e = -1;
    assert_true(tir_expr_const_int(loop_of(s, l)->extent, &e));
    return e;
}

static void test_create(void **st) {
    tir_ctx *ctx = *st;
    tir_schedule *s = (tir_schedule *)1;
    assert_int_equal(tir_sched_create(ctx, NULL, &s), TIR_ERR_INVALID_ARG);
    assert_null(s);
    assert_int_equal(tir_sched_create(ctx, tf_duplicate_names(ctx), &s),
                     TIR_ERR_SCHED_DUPLICATE_BLOCK_NAME);
    assert_null(s);
    assert_non_null(strstr(tir_ctx_error(ctx), "two blocks are named \"B\""));
    assert_non_null(strstr(tir_ctx_error(ctx), "^"));
    tir_sched_destroy(NULL);

    const tir_prim_func *f = tir_def_matmul(ctx, 5, 6, 7, TIR_F32);
    s = sched(ctx, f);
    assert_ptr_equal(tir_sched_func(s), f);
    assert_ptr_equal(tir_sched_orig_func(s), f);
    assert_ptr_equal(tir_sched_ctx(s), ctx);
    assert_int_equal(tir_sched_num_handles(s), 0);
    assert_int_equal(tir_sched_trace_len(s), 0);
    assert_string_equal(tir_sched_trace_text(s), "");
    /* Printing the current function gives TVMScript. */
    assert_non_null(strstr(tir_print(ctx, tir_sched_func(s)), "T.prim_func"));
    tir_sched_destroy(s);
}

/* tir_sched_create refuses a block that accesses what its T.reads /
 * T.writes do not declare: primitives trust the regions.  Without T.writes
 * on X1 (TVM's parser would infer it), compute_inline of B moved B's read
 * of X past X1's write (C 8 of 8 wrong); a T.reads one element short made
 * cache_read + compute_at copy one element where C read three. */
static const char regions_missing[] =
    "@T.prim_func\n"
    "def f(A: T.Buffer((8,), \"float32\"), C: T.Buffer((8,), \"float32\")):\n"
    "    with T.block(\"root\"):\n"
    "        B = T.alloc_buffer((8,), \"float32\")\n"
    "        X = T.alloc_buffer((8,), \"float32\")\n"
    "        for i in range(8):\n"
    "            with T.block(\"X0\"):\n"
    "                vi = T.axis.remap(\"S\", [i])\n"
    "                T.reads(A[vi])\n"
    "                T.writes(X[vi])\n"
    "                X[vi] = A[vi]\n"
    "        for i in range(8):\n"
    "            with T.block(\"B\"):\n"
    "                vi = T.axis.remap(\"S\", [i])\n"
    "                T.reads(X[vi])\n"
    "                T.writes(B[vi])\n"
    "                B[vi] = X[vi] * T.float32(2)\n"
    "        for i in range(8):\n"
    "            with T.block(\"X1\"):\n"
    "                vi = T.axis.remap(\"S\", [i])\n"
    "                X[vi] = T.float32(100)\n"
    "        for i in range(8):\n"
    "            with T.block(\"C\"):\n"
    "                vi = T.axis.remap(\"S\", [i])\n"
    "                T.reads(B[vi], X[vi])\n"
    "                T.writes(C[vi])\n"
    "                C[vi] = B[vi] + X[vi]\n";
static const char regions_short[] =
    "@T.prim_func\n"
    "def f(A: T.Buffer((66,), \"float32\"), C: T.Buffer((64,), \"float32\")):\n"
    "    for i in range(64):\n"
    "        with T.block(\"C\"):\n"
    "            vi = T.axis.remap(\"S\", [i])\n"
    "            T.reads(A[vi])\n"
    "            T.writes(C[vi])\n"
    "            C[vi] = A[vi] + A[vi + 2] * T.float32(2)\n";
/* The same with the whole window declared, and a block only wrapping
 * others (software_pipeline's wrapper), are fine. */
static const char regions_window[] =
    "@T.prim_func\n"
    "def f(A: T.Buffer((66,), \"float32\"), C: T.Buffer((64,), \"float32\")):\n"
    "    for i in range(64):\n"
    "        with T.block(\"C\"):\n"
    "            vi = T.axis.remap(\"S\", [i])\n"
    "            T.reads(A[vi:vi + 3])\n"
    "            T.writes(C[vi])\n"
    "            C[vi] = A[vi] + A[vi + 2] * T.float32(2)\n";
static const char regions_wrapper[] =
    "@T.prim_func\n"
    "def f(A: T.Buffer((6,), \"float32\"), C: T.Buffer((6,), \"float32\")):\n"
    "    for k in range(6):\n"
    "        with T.block(\"wrap\"):\n"
    "            with T.block(\"C\"):\n"
    "                vk = T.axis.remap(\"S\", [k])\n"
    "                T.reads(A[vk])\n"
    "                T.writes(C[vk])\n"
    "                C[vk] = A[vk] + T.float32(1)\n";
/* A nested block's regions must lie inside its parent's. */
static const char regions_nested[] =
    "@T.prim_func\n"
    "def f(A: T.Buffer((8,), \"float32\"), C: T.Buffer((8,), \"float32\")):\n"
    "    for io in range(2):\n"
    "        with T.block(\"C_o\"):\n"
    "            vio = T.axis.remap(\"S\", [io])\n"
    "            T.reads(A[vio * 4:vio * 4 + 4])\n"
    "            T.writes(C[vio * 4:vio * 4 + 3])\n"
    "            for ii in range(4):\n"
    "                with T.block(\"C\"):\n"
    "                    vi = T.axis.remap(\"S\", [ii])\n"
    "                    T.reads(A[vio * 4 + vi])\n"
    "                    T.writes(C[vio * 4 + vi])\n"
    "                    C[vio * 4 + vi] = A[vio * 4 + vi]\n";

/* A spatial block writing one element from two instances (the last one
 * wins): reorder of its loops, reverse_compute_inline into a producer
 * running in another order and bind all changed which instance is last
 * (9 of 11 of C wrong after reverse_compute_inline). */
static const char spatial_collision[] =
    "@T.prim_func\n"
    "def f(A: T.Buffer((6, 6), \"float32\"), C: T.Buffer((11,), \"float32\")):\n"
    "    for j, i in T.grid(6, 6):\n"
    "        with T.block(\"C\"):\n"
    "            vj, vi = T.axis.remap(\"SS\", [j, i])\n"
    "            T.reads(A[vi, vj])\n"
    "            T.writes(C[vi + vj])\n"
    "            C[vi + vj] = A[vi, vj] + T.float32(1)\n";
/* ... while a transpose, a shifted or strided store is fine. */
static const char spatial_injective[] =
    "@T.prim_func\n"
    "def f(A: T.Buffer((6, 6), \"float32\"), C: T.Buffer((6, 13), \"float32\")):\n"
    "    for j, i in T.grid(6, 6):\n"
    "        with T.block(\"C\"):\n"
    "            vj, vi = T.axis.remap(\"SS\", [j, i])\n"
    "            T.reads(A[vi, vj])\n"
    "            T.writes(C[vj, vi * 2 + 1])\n"
    "            C[vj, vi * 2 + 1] = A[vi, vj] + T.float32(1)\n";

static void test_create_regions(void **st) {
    tir_ctx *ctx = *st;
    const char *bad[] = {regions_missing, regions_short, regions_nested, spatial_collision};
    const char *why[] = {"block \"X1\" stores to a buffer missing from its T.writes: X",
                         "block \"C\" loads outside its T.reads / T.writes regions of A",
                         "block \"C_o\" stores outside its T.writes regions of C",
                         "block \"C\" stores C from two instances of its spatial iterators"};
    for (int t = 0; t < 4; t++) {
        const tir_prim_func *f = NULL;
        assert_int_equal(tir_parse_func(ctx, bad[t], strlen(bad[t]), &f), TIR_OK);
        tir_schedule *s = (tir_schedule *)1;
        assert_int_equal(tir_sched_create(ctx, f, &s), TIR_ERR_VERIFY);
        assert_null(s);
        if (!strstr(tir_ctx_error(ctx), why[t]))
            fail_msg("no \"%s\" in:\n%s", why[t], tir_ctx_error(ctx));
    }
    const char *good[] = {regions_window, regions_wrapper, spatial_injective};
    for (int t = 0; t < 3; t++) {
        const tir_prim_func *f = NULL;
        assert_int_equal(tir_parse_func(ctx, good[t], strlen(good[t]), &f), TIR_OK);
        tir_sched_destroy(sched(ctx, f));
    }
}

/* A block that only wraps blocks (no iterators, no regions: software
 * pipeline components in TVM's form) looked, in its parent's scope, as if
 * it accessed nothing.  cache_read put its copy of A before such a
 * wrapper whose block writes A, so C read the old A (8 of 8 wrong);
 * reverse_compute_inline moved Q's write of C before a wrapper whose
 * block reads C (Z 8 of 8 wrong); decompose_reduction moved the init
 * before a wrapper under the loop that reads C (D[7] wrong).  A
 * wrapper now gets its nested blocks' regions at tir_sched_create. */
#define WR_HEAD(params)                                                                \
    "@T.prim_func\n"                                                                   \
    "def f(" params "):\n"                                                             \
    "    with T.block(\"root\"):\n"
static const char wrap_writer[] =
    WR_HEAD("A: T.Buffer((8,), \"float32\"), C: T.Buffer((8,), \"float32\")")
    "        with T.block(\"W\"):\n"
    "            for i in range(8):\n"
    "                with T.block(\"X1\"):\n"
    "                    vi = T.axis.remap(\"S\", [i])\n"
    "                    T.writes(A[vi])\n"
    "                    A[vi] = T.float32(100)\n"
    "        for i in range(8):\n"
    "            with T.block(\"C\"):\n"
    "                vi = T.axis.remap(\"S\", [i])\n"
    "                T.reads(A[vi])\n"
    "                T.writes(C[vi])\n"
    "                C[vi] = A[vi]\n";
static const char wrap_reader[] =
    WR_HEAD("A: T.Buffer((8,), \"float32\"), Z: T.Buffer((8,), \"float32\"), "
            "C: T.Buffer((8,), \"float32\")")
    "        B = T.alloc_buffer((8,), \"float32\")\n"
    "        for i in range(8):\n"
    "            with T.block(\"P\"):\n"
    "                vi = T.axis.remap(\"S\", [i])\n"
    "                T.reads(A[vi])\n"
    "                T.writes(B[vi])\n"
    "                B[vi] = A[vi] * T.float32(2)\n"
    "        with T.block(\"W\"):\n"
    "            for i in range(8):\n"
    "                with T.block(\"R\"):\n"
    "                    vi = T.axis.remap(\"S\", [i])\n"
    "                    T.reads(C[vi])\n"
    "                    T.writes(Z[vi])\n"
    "                    Z[vi] = C[vi]\n"
    "        for i in range(8):\n"
    "            with T.block(\"Q\"):\n"
    "                vi = T.axis.remap(\"S\", [i])\n"
    "                T.reads(B[vi])\n"
    "                T.writes(C[vi])\n"
    "                C[vi] = B[vi] + T.float32(1)\n";
static const char wrap_sibling[] =
    WR_HEAD("A: T.Buffer((8, 8), \"float32\"), D: T.Buffer((8,), \"float32\"), "
            "C: T.Buffer((8,), \"float32\")")
    "        for i in range(8):\n"
    "            with T.block(\"W\"):\n"
    "                with T.block(\"R\"):\n"
    "                    T.reads(C[0:8])\n"
    "                    T.writes(D[0:8])\n"
    "                    for j in range(8):\n"
    "                        D[j] = C[j]\n"
    "            for k in range(8):\n"
    "                with T.block(\"C\"):\n"
    "                    vi, vk = T.axis.remap(\"SR\", [i, k])\n"
    "                    T.reads(A[vi, vk])\n"
    "                    T.writes(C[vi])\n"
    "                    with T.init():\n"
    "                        C[vi] = T.float32(0)\n"
    "                    C[vi] = C[vi] + A[vi, vk]\n";
/* A wrapper inside a block declaring less than the wrapped block writes
 * (C_o writes 3 elements, C 4): the nested block went unchecked. */
static const char wrap_in_short_parent[] =
    WR_HEAD("A: T.Buffer((8,), \"float32\"), C: T.Buffer((8,), \"float32\")")
    "        for io in range(2):\n"
    "            with T.block(\"C_o\"):\n"
    "                vio = T.axis.remap(\"S\", [io])\n"
    "                T.reads(A[vio * 4:vio * 4 + 4])\n"
    "                T.writes(C[vio * 4:vio * 4 + 3])\n"
    "                with T.block(\"W\"):\n"
    "                    for ii in range(4):\n"
    "                        with T.block(\"C\"):\n"
    "                            vi = T.axis.remap(\"S\", [ii])\n"
    "                            T.reads(A[vio * 4 + vi])\n"
    "                            T.writes(C[vio * 4 + vi])\n"
    "                            C[vio * 4 + vi] = A[vio * 4 + vi]\n";

/* ... while a block inside a wrapper still inlines into a consumer
 * outside it (its wrapper is no second writer of B), and the wrapper's
 * regions follow what it wraps (none left). */
static const char wrap_producer[] =
    WR_HEAD("A: T.Buffer((8,), \"float32\"), C: T.Buffer((8,), \"float32\")")
    "        B = T.alloc_buffer((8,), \"float32\")\n"
    "        with T.block(\"W\"):\n"
    "            for i in range(8):\n"
    "                with T.block(\"P\"):\n"
    "                    vi = T.axis.remap(\"S\", [i])\n"
    "                    T.reads(A[vi])\n"
    "                    T.writes(B[vi])\n"
    "                    B[vi] = A[vi] * T.float32(2)\n"
    "        for i in range(8):\n"
    "            with T.block(\"C\"):\n"
    "                vi = T.axis.remap(\"S\", [i])\n"
    "                T.reads(B[vi])\n"
    "                T.writes(C[vi])\n"
    "                C[vi] = B[vi] + T.float32(1)\n";

static void test_wrapper_regions(void **st) {
    tir_ctx *ctx = *st;
    const tir_prim_func *f = NULL;
    assert_int_equal(tir_parse_func(ctx, wrap_writer, strlen(wrap_writer), &f), TIR_OK);
    tir_schedule *s = sched(ctx, f);
    tir_block_rv cache;
    SCHED_OK(s, tir_sched_cache_read(s, sched_block(s, "C"), 0, "shared", 0, NULL, &cache));
    sched_check_all(s); /* the copy after W */
    tir_sched_destroy(s);

    assert_int_equal(tir_parse_func(ctx, wrap_reader, strlen(wrap_reader), &f), TIR_OK);
    s = sched(ctx, f);
    tir_block_rv q = sched_block(s, "Q");
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_NOT_STAGE_PIPELINE, "reverse_compute_inline",
                      tir_sched_reverse_compute_inline(s, q));
    assert_non_null(strstr(tir_ctx_error(ctx), "block \"W\" accesses C"));
    tir_sched_destroy(s);

    assert_int_equal(tir_parse_func(ctx, wrap_sibling, strlen(wrap_sibling), &f), TIR_OK);
    s = sched(ctx, f);
    tir_loop_rv l[16];
    sched_loops(s, "C", l);
    tir_block_rv c = sched_block(s, "C"), init;
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_NOT_STAGE_PIPELINE, "decompose_reduction",
                      tir_sched_decompose_reduction(s, c, l[0], &init));
    assert_non_null(strstr(tir_ctx_error(ctx), "block \"W\" under loop i reads C"));
    /* the filled regions print, and the text parses back to the same */
    assert_non_null(strstr(tir_print(ctx, tir_sched_func(s)),
                           "with T.block(\"W\"):\n            T.reads(C[0:8])\n"));
    sched_check_roundtrip(s);
    tir_sched_destroy(s);

    assert_int_equal(tir_parse_func(ctx, wrap_producer, strlen(wrap_producer), &f), TIR_OK);
    s = sched(ctx, f);
    assert_non_null(strstr(tir_print(ctx, tir_sched_func(s)), "T.writes(B[0:8])"));
    SCHED_OK(s, tir_sched_compute_inline(s, sched_block(s, "P")));
    sched_check_all(s);
    assert_null(strstr(tir_print(ctx, tir_sched_func(s)), "T.writes(B"));
    tir_sched_destroy(s);

    assert_int_equal(tir_parse_func(ctx, wrap_in_short_parent, strlen(wrap_in_short_parent), &f),
                     TIR_OK);
    s = (tir_schedule *)1;
    assert_int_equal(tir_sched_create(ctx, f, &s), TIR_ERR_VERIFY);
    assert_null(s);
    assert_non_null(strstr(tir_ctx_error(ctx), "block \"C_o\" stores outside its T.writes "
                                               "regions of C"));
}

/* A wrapper around a loop of symbolic extent: its filled regions, A[0:n]
 * and B[0:n], were then checked against what it wraps, and the analyzer
 * (constant bounds only) did not prove i < n under `for i in range(n)`:
 * tir_sched_create refused the function ("block \"W\" loads outside its
 * T.reads"), which it accepted before wrappers had regions.  The same
 * holds for a block that declares such a region itself. */
static const char wrap_symbolic[] =
    WR_HEAD("A: T.Buffer((n,), \"float32\"), C: T.Buffer((n,), \"float32\"), n: T.int32")
    "        B = T.alloc_buffer((n,), \"float32\")\n"
    "        with T.block(\"W\"):\n"
    "            for i in range(n):\n"
    "                with T.block(\"P\"):\n"
    "                    vi = T.axis.remap(\"S\", [i])\n"
    "                    T.reads(A[vi])\n"
    "                    T.writes(B[vi])\n"
    "                    B[vi] = A[vi] * T.float32(2)\n"
    "        for i in range(n):\n"
    "            with T.block(\"C\"):\n"
    "                vi = T.axis.remap(\"S\", [i])\n"
    "                T.reads(B[vi])\n"
    "                T.writes(C[vi])\n"
    "                C[vi] = B[vi] + T.float32(1)\n";
static const char block_symbolic[] =
    WR_HEAD("A: T.Buffer((n,), \"float32\"), B: T.Buffer((n,), \"float32\"), n: T.int32")
    "        for o in range(1):\n"
    "            with T.block(\"W\"):\n"
    "                vo = T.axis.remap(\"S\", [o])\n"
    "                T.reads(A[0:n])\n"
    "                T.writes(B[0:n])\n"
    "                for i in range(n):\n"
    "                    B[i] = A[i] * T.float32(2)\n";
/* ... still refused: a region one element short */
static const char block_symbolic_short[] =
    WR_HEAD("A: T.Buffer((n,), \"float32\"), B: T.Buffer((n,), \"float32\"), n: T.int32")
    "        with T.block(\"W\"):\n"
    "            T.reads(A[0:n - 1])\n"
    "            T.writes(B[0:n])\n"
    "            for i in range(n):\n"
    "                B[i] = A[i] * T.float32(2)\n";

static void test_wrapper_symbolic(void **st) {
    tir_ctx *ctx = *st;
    const tir_prim_func *f = NULL;
    assert_int_equal(tir_parse_func(ctx, wrap_symbolic, strlen(wrap_symbolic), &f), TIR_OK);
    tir_schedule *s = sched(ctx, f);
    assert_non_null(strstr(tir_print(ctx, tir_sched_func(s)),
                           "T.reads(A[0:n])\n            T.writes(B[0:n])"));
    SCHED_OK(s, tir_sched_compute_inline(s, sched_block(s, "P")));
    assert_null(strstr(tir_print(ctx, tir_sched_func(s)), "T.writes(B"));
    tir_sched_destroy(s);
    assert_int_equal(tir_parse_func(ctx, block_symbolic, strlen(block_symbolic), &f), TIR_OK);
    tir_sched_destroy(sched(ctx, f));
    assert_int_equal(tir_parse_func(ctx, block_symbolic_short, strlen(block_symbolic_short), &f),
                     TIR_OK);
    s = (tir_schedule *)1;
    assert_int_equal(tir_sched_create(ctx, f, &s), TIR_ERR_VERIFY);
    assert_null(s);
    assert_non_null(strstr(tir_ctx_error(ctx), "block \"W\" loads outside its T.reads"));
}

/* A stencil of dynamic shape (eighth new-user review): `A[vi + 2]` under
 * vi < n, declared as `A[vi:vi + 3]` or `A[0:n + 2]`, was refused at
 * create: the proof compared the ends in int64, where `int64(vi + 2)` is
 * an atom (the int32 sum might have wrapped, as far as the analyzer
 * knows).  Both regions are now proved in the index dtype; a region one
 * element short is still refused, at either end.  A clamp to the edge
 * (`A[T.max(vi - 1, 0)]` inside `A[0:n]`) was refused too: its relaxed
 * range has no end and `0 < n` needs n >= 1. */
static const char *stencil_region_fmt =
    "@T.prim_func\n"
    "def st(A: T.Buffer((n + 2,), \"float32\"), B: T.Buffer((n,), \"float32\"), n: T.int32):\n"
    "    for i in T.serial(n):\n"
    "        with T.block(\"B\"):\n"
    "            vi = T.axis.spatial(n, i)\n"
    "            T.reads(%s)\n"
    "            T.writes(B[vi])\n"
    "            B[vi] = A[vi] + A[vi + 1] * T.float32(2) + A[vi + 2]\n";

static void test_region_symbolic_stencil(void **st) {
    tir_ctx *ctx = *st;
    static const char *ok[] = {"A[vi:vi + 3]", "A[0:n + 2]", "A[vi], A[vi + 1], A[vi + 2]",
                               "A[vi:vi + 4]"};
    static const char *bad[] = {"A[vi:vi + 2]", "A[vi + 1:vi + 3]", "A[0:n + 1]", "A[1:n + 2]"};
    char text[1024];
    for (int i = 0; i < 8; i++) {
        snprintf(text, sizeof text, stencil_region_fmt, i < 4 ? ok[i] : bad[i - 4]);
        const tir_prim_func *f = NULL;
        assert_int_equal(tir_parse_func(ctx, text, strlen(text), &f), TIR_OK);
        tir_schedule *s = NULL;
        tir_status got = tir_sched_create(ctx, f, &s);
        if (i < 4) {
            if (got != TIR_OK) fprintf(stderr, "%s: %s\n", ok[i], tir_ctx_error(ctx));
            assert_int_equal(got, TIR_OK);
            tir_sched_destroy(s);
        } else {
            assert_int_equal(got, TIR_ERR_VERIFY);
            assert_non_null(strstr(tir_ctx_error(ctx), "block \"B\" loads outside its T.reads"));
        }
    }
    /* clamp to the edge inside A[0:n]: each end of a min / max proved on
     * its own, and n >= 1 wherever the block runs; the first four are in
     * A, the others one past an end */
    static const char *clamp_fmt =
        "@T.prim_func\n"
        "def cl(A: T.Buffer((n,), \"float32\"), B: T.Buffer((n,), \"float32\"), n: T.int32):\n"
        "    for i in T.serial(n):\n"
        "        with T.block(\"B\"):\n"
        "            vi = T.axis.spatial(n, i)\n"
        "            T.reads(A[0:n])\n"
        "            T.writes(B[vi])\n"
        "            B[vi] = %s\n";
    static const char *clamps[] = {"A[T.max(vi - 1, 0)]", "A[T.min(vi + 1, n - 1)]",
                                   "A[T.min(T.max(vi - 1, 0), n - 1)]",
                                   "A[T.max(vi - 1, 0)] + A[T.min(vi + 1, n - 1)]",
                                   "A[T.min(vi + 1, n)]", "A[T.max(vi - 2, -1)]",
                                   "A[T.max(vi + 1, 0)]", "A[T.min(vi - 1, n - 1)]"};
    for (int i = 0; i < 8; i++) {
        snprintf(text, sizeof text, clamp_fmt, clamps[i]);
        const tir_prim_func *f = NULL;
        assert_int_equal(tir_parse_func(ctx, text, strlen(text), &f), TIR_OK);
        tir_schedule *s = NULL;
        tir_status got = tir_sched_create(ctx, f, &s);
        if (i < 4) {
            if (got != TIR_OK) fprintf(stderr, "%s: %s\n", clamps[i], tir_ctx_error(ctx));
            assert_int_equal(got, TIR_OK);
            tir_sched_destroy(s);
        } else {
            if (got != TIR_ERR_VERIFY) fprintf(stderr, "%s accepted\n", clamps[i]);
            assert_int_equal(got, TIR_ERR_VERIFY);
        }
    }
}

/* tir_sched_create's proof that a spatial block's instances write
 * distinct elements, past what enumeration reaches: one block "B" per
 * case, its loops, iterators, predicate and stores given. */
#define SPATIAL_FN(PARAMS, LOOPS, AXES, EXTRA, STORES)                                      \
    "@T.prim_func\n"                                                                       \
    "def f(" PARAMS "):\n"                                                                 \
    "    for " LOOPS ":\n"                                                                 \
    "        with T.block(\"B\"):\n"                                                       \
    "            " AXES "\n" EXTRA STORES

typedef struct spatial_case {
    const char *text, *why; /* why: NULL for accepted */
} spatial_case;

static const spatial_case spatial_cases[] = {
    /* refused: two instances write B[k] (past 2^16 instances) */
    {SPATIAL_FN("A: T.Buffer((100000,), \"float32\"), B: T.Buffer((50000,), \"float32\")",
                "i in range(100000)", "vi = T.axis.spatial(100000, i)",
                "            T.reads(A[vi])\n            T.writes(B[vi // 2])\n",
                "            B[vi // 2] = A[vi]\n"),
     "block \"B\" stores B from two instances of its spatial iterators, (vi = 0) and (vi = 1), "
     "at B[vi // 2] = A[vi]"},
    /* ... over a symbolic domain */
    {SPATIAL_FN("A: T.Buffer((n,), \"float32\"), B: T.Buffer((n,), \"float32\"), n: T.int32",
                "i in range(n)", "vi = T.axis.spatial(n, i)",
                "            T.reads(A[vi])\n            T.writes(B[vi // 2])\n",
                "            B[vi // 2] = A[vi]\n"),
     "(vi = 0) and (vi = 1) whenever n >= 2, at B[vi // 2]"},
    /* ... two iterators of proportional coefficients, under a T.where */
    {SPATIAL_FN("A: T.Buffer((300, 300), \"float32\"), B: T.Buffer((900,), \"float32\")",
                "i, j in T.grid(300, 300)", "vi, vj = T.axis.remap(\"SS\", [i, j])",
                "            T.where(i < 299)\n"
                "            T.reads(A[vi, vj])\n            T.writes(B[vi * 2 + vj * 3])\n",
                "            B[vi * 2 + vj * 3] = A[vi, vj]\n"),
     "(vi = 0, vj = 2) and (vi = 3, vj = 0)"},
    /* ... a T.where that keeps the first witness out: enumerated */
    {SPATIAL_FN("A: T.Buffer((16,), \"float32\"), B: T.Buffer((8,), \"float32\")",
                "i in range(16)", "vi = T.axis.remap(\"S\", [i])",
                "            T.where(2 <= i)\n"
                "            T.reads(A[vi])\n            T.writes(B[vi // 2])\n",
                "            B[vi // 2] = A[vi]\n"),
     "(vi = 2) and (vi = 3)"},
    /* ... an iterator no index uses */
    {SPATIAL_FN("A: T.Buffer((1000, 1000), \"float32\"), B: T.Buffer((1000,), \"float32\")",
                "i, j in T.grid(1000, 1000)", "vi, vj = T.axis.remap(\"SS\", [i, j])",
                "            T.reads(A[vi, vj])\n            T.writes(B[vi])\n",
                "            B[vi] = A[vi, vj]\n"),
     "(vi = 0, vj = 0) and (vi = 0, vj = 1)"},
    /* ... several stores: the second collides with itself */
    {SPATIAL_FN("A: T.Buffer((100000,), \"float32\"), B: T.Buffer((100000,), \"float32\"), "
                "C: T.Buffer((50000,), \"float32\")",
                "i in range(100000)", "vi = T.axis.remap(\"S\", [i])",
                "            T.reads(A[vi])\n            T.writes(B[vi], C[vi // 2])\n",
                "            B[vi] = A[vi]\n            C[vi // 2] = A[vi]\n"),
     "stores C from two instances"},
    /* ... two stores of one buffer, each injective, overlapping */
    {SPATIAL_FN("A: T.Buffer((16,), \"float32\"), B: T.Buffer((17,), \"float32\")",
                "i in range(16)", "vi = T.axis.remap(\"S\", [i])",
                "            T.reads(A[vi])\n            T.writes(B[vi:vi + 2])\n",
                "            B[vi] = A[vi]\n            B[vi + 1] = A[vi]\n"),
     "(vi = 0) and (vi = 1)"},
    /* ... the same past 2^16 instances */
    {SPATIAL_FN("A: T.Buffer((100000,), \"float32\"), B: T.Buffer((100001,), \"float32\")",
                "i in range(100000)", "vi = T.axis.remap(\"S\", [i])",
                "            T.reads(A[vi])\n            T.writes(B[vi:vi + 2])\n",
                "            B[vi] = A[vi]\n            B[vi + 1] = A[vi]\n"),
     "(vi = 0) and (vi = 1), at B[vi + 1] = A[vi] and B[vi] = A[vi]"},
    /* ... an iterator bound to split loops (a printed schedule's text),
       under a T.where of the loops */
    {SPATIAL_FN("A: T.Buffer((100000,), \"float32\"), B: T.Buffer((50000,), \"float32\")",
                "i0, i1 in T.grid(3125, 32)", "vi = T.axis.spatial(100000, i0 * 32 + i1)",
                "            T.where(i0 * 32 + i1 < 99999)\n"
                "            T.reads(A[vi])\n            T.writes(B[vi // 2])\n",
                "            B[vi // 2] = A[vi]\n"),
     "(vi = 0) and (vi = 1), at B[vi // 2]"},
    /* ... the same over a symbolic count of rows */
    {SPATIAL_FN("A: T.Buffer((n * 32,), \"float32\"), B: T.Buffer((64,), \"float32\"), "
                "n: T.int32",
                "i0, i1 in T.grid(n, 32)", "vi = T.axis.spatial(n * 32, i0 * 32 + i1)",
                "            T.reads(A[vi])\n            T.writes(B[vi % 64])\n",
                "            B[vi % 64] = A[vi]\n"),
     "(vi = 0) and (vi = 64) whenever n >= 3, at B[vi % 64]"},
    /* accepted: a transpose over a symbolic domain */
    {SPATIAL_FN("A: T.Buffer((n, m), \"float32\"), B: T.Buffer((m, n), \"float32\"), n: T.int32, "
                "m: T.int32",
                "i, j in T.grid(n, m)", "vi, vj = T.axis.remap(\"SS\", [i, j])",
                "            T.reads(A[vi, vj])\n            T.writes(B[vj, vi])\n",
                "            B[vj, vi] = A[vi, vj]\n"),
     NULL},
    /* ... a reshape, a flattened 2-D store, a strided one */
    {SPATIAL_FN("A: T.Buffer((100000,), \"float32\"), B: T.Buffer((25000, 4), \"float32\")",
                "i in range(100000)", "vi = T.axis.remap(\"S\", [i])",
                "            T.reads(A[vi])\n            T.writes(B[vi // 4, vi % 4])\n",
                "            B[vi // 4, vi % 4] = A[vi]\n"),
     NULL},
    {SPATIAL_FN("A: T.Buffer((1000, 512), \"float32\"), B: T.Buffer((512000,), \"float32\")",
                "i, j in T.grid(1000, 512)", "vi, vj = T.axis.remap(\"SS\", [i, j])",
                "            T.reads(A[vi, vj])\n            T.writes(B[vi * 512 + vj])\n",
                "            B[vi * 512 + vj] = A[vi, vj]\n"),
     NULL},
    {SPATIAL_FN("A: T.Buffer((100000,), \"float32\"), B: T.Buffer((200001,), \"float32\")",
                "i in range(100000)", "vi = T.axis.remap(\"S\", [i])",
                "            T.reads(A[vi])\n            T.writes(B[vi * 2 + 1])\n",
                "            B[vi * 2 + 1] = A[vi]\n"),
     NULL},
    /* ... a symbolic row count over a constant row */
    {SPATIAL_FN("A: T.Buffer((n, 128), \"float32\"), B: T.Buffer((n * 128,), \"float32\"), "
                "n: T.int32",
                "i, j in T.grid(n, 128)", "vi, vj = T.axis.remap(\"SS\", [i, j])",
                "            T.reads(A[vi, vj])\n            T.writes(B[vi * 128 + vj])\n",
                "            B[vi * 128 + vj] = A[vi, vj]\n"),
     NULL},
    /* ... im2col's columns */
    {SPATIAL_FN("A: T.Buffer((2, 3, 32, 32), \"float32\"), B: T.Buffer((1800, 27), \"float32\")",
                "n, c, oh, ow, kh, kw in T.grid(2, 3, 30, 30, 3, 3)",
                "vn, vc, voh, vow, vkh, vkw = T.axis.remap(\"SSSSSS\", [n, c, oh, ow, kh, kw])",
                "            T.reads(A[vn, vc, voh + vkh, vow + vkw])\n"
                "            T.writes(B[vn * 900 + voh * 30 + vow, vc * 9 + vkh * 3 + vkw])\n",
                "            B[vn * 900 + voh * 30 + vow, vc * 9 + vkh * 3 + vkw] = "
                "A[vn, vc, voh + vkh, vow + vkw]\n"),
     NULL},
    /* ... a reshape of a sum (e // c, e % c) */
    {SPATIAL_FN("A: T.Buffer((1000, 8), \"float32\"), B: T.Buffer((500, 16), \"float32\")",
                "i, j in T.grid(1000, 8)", "vi, vj = T.axis.remap(\"SS\", [i, j])",
                "            T.reads(A[vi, vj])\n"
                "            T.writes(B[(vi * 8 + vj) // 16, (vi * 8 + vj) % 16])\n",
                "            B[(vi * 8 + vj) // 16, (vi * 8 + vj) % 16] = A[vi, vj]\n"),
     NULL},
    /* ... two stores of one buffer that never meet, under a T.where */
    {SPATIAL_FN("A: T.Buffer((100000,), \"float32\"), B: T.Buffer((200000,), \"float32\")",
                "i in range(100000)", "vi = T.axis.remap(\"S\", [i])",
                "            T.where(i < 99999)\n"
                "            T.reads(A[vi])\n            T.writes(B[vi * 2:vi * 2 + 2])\n",
                "            B[vi * 2] = A[vi]\n            B[vi * 2 + 1] = A[vi]\n"),
     NULL},
    /* ... a loop inside the block: a row of its own per instance */
    {SPATIAL_FN("A: T.Buffer((100000,), \"float32\"), B: T.Buffer((100000, 4), \"float32\")",
                "i in range(100000)", "vi = T.axis.remap(\"S\", [i])",
                "            T.reads(A[vi])\n            T.writes(B[vi, 0:4])\n",
                "            for k in range(4):\n                B[vi, k] = A[vi]\n"),
     NULL},
    /* ... split loops, each element once */
    {SPATIAL_FN("A: T.Buffer((100000,), \"float32\"), B: T.Buffer((25000, 4), \"float32\")",
                "i0, i1 in T.grid(3125, 32)", "vi = T.axis.spatial(100000, i0 * 32 + i1)",
                "            T.reads(A[vi])\n            T.writes(B[vi // 4, vi % 4])\n",
                "            B[vi // 4, vi % 4] = A[vi]\n"),
     NULL},
    /* ... a collision in a nest that never runs (no witness instance) */
    {SPATIAL_FN("A: T.Buffer((64,), \"float32\"), B: T.Buffer((64,), \"float32\")",
                "i0, i1 in T.grid(0, 32)", "vi = T.axis.spatial(64, i0 * 32 + i1)",
                "            T.reads(A[vi])\n            T.writes(B[vi // 2])\n",
                "            B[vi // 2] = A[vi]\n"),
     NULL},
    /* reduction blocks: instances that differ in a spatial iterator must
       not store one element (a mislabelled reduction; bind would race),
       those that differ in reduce iterators only may: C[vi // 2] += ...
       past enumeration */
    {SPATIAL_FN("A: T.Buffer((100000, 64), \"float32\"), C: T.Buffer((50000,), \"float32\")",
                "i, k in T.grid(100000, 64)", "vi, vk = T.axis.remap(\"SR\", [i, k])",
                "            T.reads(A[vi, vk])\n            T.writes(C[vi // 2])\n"
                "            with T.init():\n                C[vi // 2] = T.float32(0)\n",
                "            C[vi // 2] = C[vi // 2] + A[vi, vk]\n"),
     "stores C from two instances that differ in a spatial iterator, (vi = 0, vk = 0) and "
     "(vi = 1, vk = 0), at C[vi // 2] = C[vi // 2] + A[vi, vk]: a reduction's"},
    /* ... a spatial iterator no index uses, its loop holding only this
       block */
    {SPATIAL_FN("A: T.Buffer((64, 4, 32), \"float32\"), C: T.Buffer((64,), \"float32\")",
                "i, j, k in T.grid(64, 4, 32)", "vi, vj, vk = T.axis.remap(\"SSR\", [i, j, k])",
                "            T.reads(A[vi, vj, vk])\n            T.writes(C[vi])\n"
                "            with T.init():\n                C[vi] = T.float32(0)\n",
                "            C[vi] = C[vi] + A[vi, vj, vk]\n"),
     "(vi = 0, vj = 0, vk = 0) and (vi = 0, vj = 1, vk = 0)"},
    /* ... symbolic extents: the instances need both loops to run */
    {SPATIAL_FN("A: T.Buffer((n, m), \"float32\"), C: T.Buffer((n,), \"float32\"), n: T.int32, "
                "m: T.int32",
                "i, k in T.grid(n, m)", "vi, vk = T.axis.remap(\"SR\", [i, k])",
                "            T.reads(A[vi, vk])\n            T.writes(C[vi // 2])\n",
                "            C[vi // 2] = C[vi // 2] + A[vi, vk]\n"),
     "(vi = 0, vk = 0) and (vi = 1, vk = 0) whenever n >= 2 and m >= 1"},
    /* ... only the init collides: vi = 1 zeroes C[0] while vi = 0 sums into it */
    {SPATIAL_FN("A: T.Buffer((100000, 64), \"float32\"), C: T.Buffer((100000,), \"float32\")",
                "i, k in T.grid(100000, 64)", "vi, vk = T.axis.remap(\"SR\", [i, k])",
                "            T.reads(A[vi, vk])\n            T.writes(C[0:100000])\n"
                "            with T.init():\n                C[vi // 2 * 2] = T.float32(0)\n",
                "            C[vi] = C[vi] + A[vi, vk]\n"),
     "(vi = 0, vk = 0) and (vi = 1, vk = 0), at C[vi // 2 * 2] = "},
    /* ... a reduce iterator in the index: C[vi + vk] meets from vi = 0 and 1 */
    {SPATIAL_FN("A: T.Buffer((16, 16), \"float32\"), C: T.Buffer((31,), \"float32\")",
                "i, k in T.grid(16, 16)", "vi, vk = T.axis.remap(\"SR\", [i, k])",
                "            T.reads(A[vi, vk])\n            T.writes(C[vi:vi + 16])\n",
                "            C[vi + vk] = C[vi + vk] + A[vi, vk]\n"),
     "(vi = 0, vk = 1) and (vi = 1, vk = 0)"},
    /* ... the same, enumerated (a T.min no affine form takes) */
    {SPATIAL_FN("A: T.Buffer((16, 16), \"float32\"), C: T.Buffer((8,), \"float32\")",
                "i, k in T.grid(16, 16)", "vi, vk = T.axis.remap(\"SR\", [i, k])",
                "            T.reads(A[vi, vk])\n            T.writes(C[0:8])\n",
                "            C[T.min(vi, 7)] = C[T.min(vi, 7)] + A[vi, vk]\n"),
     "(vi = 7, vk = 0) and (vi = 8, vk = 0)"},
    /* accepted: a matmul over symbolic extents, with its init */
    {SPATIAL_FN("A: T.Buffer((n, l), \"float32\"), B: T.Buffer((l, m), \"float32\"), "
                "C: T.Buffer((n, m), \"float32\"), n: T.int32, m: T.int32, l: T.int32",
                "i, j, k in T.grid(n, m, l)", "vi, vj, vk = T.axis.remap(\"SSR\", [i, j, k])",
                "            T.reads(A[vi, vk], B[vk, vj])\n            T.writes(C[vi, vj])\n"
                "            with T.init():\n                C[vi, vj] = T.float32(0)\n",
                "            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]\n"),
     NULL},
    /* ... an rfactor block (vk_1 spatial, vk_0 reduce) over split loops */
    {SPATIAL_FN("A: T.Buffer((1000, 1024), \"float32\"), rf: T.Buffer((1000, 32), \"float32\")",
                "i, k0, k1 in T.grid(1000, 32, 32)",
                "vi, vk0, vk1 = T.axis.remap(\"SRS\", [i, k0, k1])",
                "            T.reads(A[vi, vk0 * 32 + vk1])\n            T.writes(rf[vi, vk1])\n"
                "            with T.init():\n                rf[vi, vk1] = T.float32(0)\n",
                "            rf[vi, vk1] = rf[vi, vk1] + A[vi, vk0 * 32 + vk1]\n"),
     NULL},
    /* ... an argmax: two buffers, each indexed by the spatial iterator */
    {SPATIAL_FN("A: T.Buffer((100000, 64), \"float32\"), V: T.Buffer((100000,), \"float32\"), "
                "I: T.Buffer((100000,), \"int32\")",
                "i, k in T.grid(100000, 64)", "vi, vk = T.axis.remap(\"SR\", [i, k])",
                "            T.reads(A[vi, vk], V[vi], I[vi])\n            T.writes(V[vi], I[vi])\n"
                "            with T.init():\n                V[vi] = T.float32(-3.0e38)\n"
                "                I[vi] = -1\n",
                "            I[vi] = T.Select(V[vi] < A[vi, vk], vk, I[vi])\n"
                "            V[vi] = T.max(V[vi], A[vi, vk])\n"),
     NULL},
    /* ... a reduce iterator in the index (not a reduction for the
       primitives, but no two instances of distinct vi meet) */
    {SPATIAL_FN("A: T.Buffer((100000, 64), \"float32\"), C: T.Buffer((100000, 64), \"float32\")",
                "i, k in T.grid(100000, 64)", "vi, vk = T.axis.remap(\"SR\", [i, k])",
                "            T.reads(A[vi, vk])\n            T.writes(C[vi, vk])\n",
                "            C[vi, vk] = C[vi, vk] + A[vi, vk]\n"),
     NULL},
    /* ... a scatter: neither proved nor refuted, the author's promise */
    {SPATIAL_FN("A: T.Buffer((100,), \"float32\"), I: T.Buffer((100,), \"int32\"), "
                "B: T.Buffer((100,), \"float32\")",
                "i in range(100)", "vi = T.axis.remap(\"S\", [i])",
                "            T.reads(A[vi], I[vi])\n            T.writes(B[0:100])\n",
                "            B[I[vi]] = A[vi]\n"),
     NULL},
};

static void test_create_spatial_writes(void **st) {
    tir_ctx *ctx = *st;
    for (size_t t = 0; t < sizeof spatial_cases / sizeof spatial_cases[0]; t++) {
        const spatial_case *c = &spatial_cases[t];
        const tir_prim_func *f = NULL;
        if (tir_parse_func(ctx, c->text, strlen(c->text), &f) != TIR_OK)
            fail_msg("case %zu: %s\n%s", t, tir_ctx_error(ctx), c->text);
        tir_schedule *s = NULL;
        tir_status rc = tir_sched_create(ctx, f, &s);
        if (!c->why && rc != TIR_OK)
            fail_msg("case %zu refused: %s", t, tir_ctx_error(ctx));
        if (c->why && rc != TIR_ERR_VERIFY)
            fail_msg("case %zu accepted (status %d), want \"%s\"", t, (int)rc, c->why);
        if (c->why && !strstr(tir_ctx_error(ctx), c->why))
            fail_msg("case %zu: no \"%s\" in:\n%s", t, c->why, tir_ctx_error(ctx));
        if (s) tir_sched_destroy(s);
    }
}

static void test_queries(void **st) {
    tir_ctx *ctx = *st;
    tir_schedule *s = sched(ctx, tir_def_matmul(ctx, 5, 6, 7, TIR_F32));
    tir_block_rv c, root;
    SCHED_OK(s, tir_sched_get_block(s, "C", &c));
    SCHED_OK(s, tir_sched_get_block(s, "root", &root));
    const tir_block *cb;
    SCHED_OK(s, tir_sched_get_block_node(s, c, &cb));
    assert_string_equal(cb->name, "C");
    const tir_loop_rv *l;
    int n;
    SCHED_OK(s, tir_sched_get_loops(s, c, &l, &n));
    assert_int_equal(n, 3);
    assert_int_equal(extent_of(s, l[0]), 5);
    assert_int_equal(extent_of(s, l[1]), 6);
    assert_int_equal(extent_of(s, l[2]), 7);
    /* Nested directly: i contains j contains k. */
    assert_ptr_equal(loop_of(s, l[0])->body, &loop_of(s, l[1])->base);
    assert_ptr_equal(loop_of(s, l[1])->body, &loop_of(s, l[2])->base);
    const tir_loop_rv *rl;
    SCHED_OK(s, tir_sched_get_loops(s, root, &rl, &n));
    assert_int_equal(n, 0);
    const tir_block_rv *kids;
    SCHED_OK(s, tir_sched_get_child_blocks(s, root, &kids, &n));
    assert_int_equal(n, 1);
    SCHED_OK(s, tir_sched_get_block_node(s, kids[0], &cb));
    assert_string_equal(cb->name, "C");
    SCHED_OK(s, tir_sched_get_loop_child_blocks(s, l[2], &kids, &n));
    assert_int_equal(n, 1);
    SCHED_OK(s, tir_sched_get_child_blocks(s, c, &kids, &n));
    assert_int_equal(n, 0);
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_BLOCK_NOT_FOUND, "get_block",
                      tir_sched_get_block(s, "nope", &c));
    assert_non_null(strstr(tir_ctx_error(ctx), "no block is named \"nope\""));
    assert_int_equal(tir_sched_num_handles(s), 7);
    assert_string_equal(tir_sched_trace_text(s),
                        "b0 = get_block(\"C\")\n"
                        "b1 = get_block(\"root\")\n"
                        "[l2, l3, l4] = get_loops(b0)\n"
                        "[] = get_loops(b1)\n"
                        "[b5] = get_child_blocks(b1)\n"
                        "[b6] = get_loop_child_blocks(l4)\n"
                        "[] = get_child_blocks(b0)\n");
    sched_check_roundtrip(s);
    tir_sched_destroy(s);

    /* Producers and consumers along B -> C -> D. */
    s = sched(ctx, tir_def_elementwise_chain(ctx, 3, 5, TIR_F32));
    const char *names[3] = {"B", "C", "D"};
    tir_block_rv b[3];
    for (int i = 0; i < 3; i++) SCHED_OK(s, tir_sched_get_block(s, names[i], &b[i]));
    const tir_block_rv *p;
    SCHED_OK(s, tir_sched_get_producers(s, b[0], &p, &n));
    assert_int_equal(n, 0);
    SCHED_OK(s, tir_sched_get_producers(s, b[1], &p, &n));
    assert_int_equal(n, 1);
    SCHED_OK(s, tir_sched_get_block_node(s, p[0], &cb));
    assert_string_equal(cb->name, "B");
    SCHED_OK(s, tir_sched_get_consumers(s, b[1], &p, &n));
    assert_int_equal(n, 1);
    SCHED_OK(s, tir_sched_get_block_node(s, p[0], &cb));
    assert_string_equal(cb->name, "D");
    SCHED_OK(s, tir_sched_get_consumers(s, b[2], &p, &n));
    assert_int_equal(n, 0);
    sched_check_roundtrip(s);
    tir_sched_destroy(s);
}

static void test_handles_follow_and_go_stale(void **st) {
    tir_ctx *ctx = *st;
    tir_schedule *s = sched(ctx, tir_def_matmul(ctx, 8, 8, 8, TIR_F32));
    tir_block_rv c;
    const tir_loop_rv *l;
    int n;
    SCHED_OK(s, tir_sched_get_block(s, "C", &c));
    SCHED_OK(s, tir_sched_get_loops(s, c, &l, &n));
    tir_loop_rv i = l[0], j = l[1], k = l[2];
    const tir_var *jv = loop_of(s, j)->var;
    /* reorder rebuilds the loops but keeps their variables: handles follow. */
    SCHED_OK(s, tir_sched_reorder(s, 2, (const tir_loop_rv[]){k, j}));
    assert_ptr_equal(loop_of(s, j)->var, jv);
    assert_ptr_equal(loop_of(s, i)->body, &loop_of(s, k)->base);
    /* annotate rebuilds the block: its handle follows. */
    SCHED_OK(s, tir_sched_annotate_block_int(s, c, "x", 1));
    const tir_block *cb;
    SCHED_OK(s, tir_sched_get_block_node(s, c, &cb));
    assert_int_equal(cb->nannots, 1);
    /* split removes the loop: its handle goes stale, for good. */
    tir_loop_rv parts[2];
    SCHED_OK(s, tir_sched_split(s, j, 2, (const int64_t[]){2, 4}, parts));
    char kind;
    bool stale;
    const tir_node *node;
    SCHED_OK(s, tir_sched_handle_info(s, j.id, &kind, &stale, &node));
    assert_int_equal(kind, 'l');
    assert_true(stale);
    assert_null(node);
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_STALE_HANDLE, "vectorize", tir_sched_vectorize(s, j));
    assert_non_null(strstr(tir_ctx_error(ctx), "handle l2, loop"));
    assert_non_null(strstr(tir_ctx_error(ctx), "`[l4, l5] = split(l2, [2, 4])`"));
    const tir_for *f;
    assert_int_equal(tir_sched_get_for(s, j, &f), TIR_ERR_SCHED_STALE_HANDLE);
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_STALE_HANDLE, "fuse",
                      tir_sched_fuse(s, 2, (const tir_loop_rv[]){k, j}, &parts[0]));
    /* The other handles are live and name the right nodes. */
    SCHED_OK(s, tir_sched_handle_info(s, parts[0].id, &kind, &stale, &node));
    assert_false(stale);
    assert_int_equal(node->kind, TIR_KIND_FOR);
    assert_int_equal(extent_of(s, parts[0]), 2);
    assert_int_equal(extent_of(s, parts[1]), 4);
    SCHED_OK(s, tir_sched_handle_info(s, c.id, &kind, &stale, &node));
    assert_int_equal(kind, 'b');
    assert_false(stale);
    sched_check_all(s);
    tir_sched_destroy(s);
}

static void test_invalid_handles(void **st) {
    tir_ctx *ctx = *st;
    tir_schedule *s = sched(ctx, tir_def_matmul(ctx, 4, 4, 4, TIR_F32));
    tir_block_rv c;
    SCHED_OK(s, tir_sched_get_block(s, "C", &c));
    tir_loop_rv zero = {0};
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_INVALID_HANDLE, "unroll", tir_sched_unroll(s, zero));
    assert_non_null(strstr(tir_ctx_error(ctx), "zero-initialised"));
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_INVALID_HANDLE, "unroll",
                      tir_sched_unroll(s, (tir_loop_rv){77, c.sched}));
    assert_non_null(strstr(tir_ctx_error(ctx), "does not exist in this schedule"));
    /* A block handle passed as a loop. */
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_INVALID_HANDLE, "unroll",
                      tir_sched_unroll(s, (tir_loop_rv){c.id, c.sched}));
    assert_non_null(strstr(tir_ctx_error(ctx), "handle b0, block \"C\" is not a loop handle"));
    SCHED_EXPECT_FAIL(s, TIR_ERR_INVALID_ARG, "get_block", tir_sched_get_block(s, NULL, &c));
    SCHED_EXPECT_FAIL(s, TIR_ERR_INVALID_ARG, "split",
                      tir_sched_split(s, zero, 2, (const int64_t[]){1, 1}, NULL));
    const tir_loop_rv *l;
    int n;
    SCHED_OK(s, tir_sched_get_loops(s, c, &l, &n));
    SCHED_EXPECT_FAIL(s, TIR_ERR_INVALID_ARG, "split", tir_sched_split(s, l[0], 2, NULL, &zero));
    SCHED_EXPECT_FAIL(s, TIR_ERR_INVALID_ARG, "reorder", tir_sched_reorder(s, -1, l));
    /* A handle of another schedule of the same function, with an id that
       exists here too, is refused. */
    tir_schedule *t = sched(ctx, tir_sched_orig_func(s));
    tir_block_rv tc;
    SCHED_OK(t, tir_sched_get_block(t, "C", &tc));
    const tir_loop_rv *tl;
    SCHED_OK(t, tir_sched_get_loops(t, tc, &tl, &n));
    assert_int_equal(tl[1].id, l[1].id); /* the same id, another schedule */
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_INVALID_HANDLE, "unroll", tir_sched_unroll(s, tl[1]));
    assert_non_null(strstr(tir_ctx_error(ctx), "made by another schedule"));
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_INVALID_HANDLE, "fuse",
                      tir_sched_fuse(s, 2, (const tir_loop_rv[]){l[0], tl[2]}, &zero));
    const tir_for *f;
    assert_int_equal(tir_sched_get_for(s, tl[1], &f), TIR_ERR_SCHED_INVALID_HANDLE);
    tir_sched_destroy(t);
    assert_int_equal(tir_sched_handle_info(s, 99, NULL, NULL, NULL), TIR_ERR_SCHED_INVALID_HANDLE);
    assert_int_equal(tir_sched_handle_info(s, 0, NULL, NULL, NULL), TIR_ERR_SCHED_INVALID_HANDLE);
    tir_sched_destroy(s);
}

/* tir_sched_same_loop / same_block compare what handles name, across
 * queries and rewrites; stale, invalid, wrong-kind and foreign handles
 * are never the same as anything (not even themselves). */
static void test_same_handle(void **st) {
    tir_ctx *ctx = *st;
    tir_schedule *s = sched(ctx, tir_def_matmul(ctx, 8, 6, 4, TIR_F32));
    tir_block_rv c, c2, root;
    SCHED_OK(s, tir_sched_get_block(s, "C", &c));
    SCHED_OK(s, tir_sched_get_block(s, "C", &c2));
    SCHED_OK(s, tir_sched_get_block(s, "root", &root));
    const tir_loop_rv *a, *b;
    int na, nb;
    SCHED_OK(s, tir_sched_get_loops(s, c, &a, &na));
    SCHED_OK(s, tir_sched_get_loops(s, c2, &b, &nb));
    assert_int_equal(na, 3);
    assert_int_equal(nb, 3);
    for (int x = 0; x < 3; x++)
        for (int y = 0; y < 3; y++) {
            assert_true(a[x].id != b[y].id); /* ids differ, so == cannot tell */
            assert_int_equal(tir_sched_same_loop(s, a[x], b[y]), x == y);
        }
    assert_true(tir_sched_same_block(s, c, c2));
    assert_true(tir_sched_same_block(s, c, c));
    assert_false(tir_sched_same_block(s, c, root));
    /* handles follow their loops through a reorder */
    SCHED_OK(s, tir_sched_reorder(s, 2, (const tir_loop_rv[]){a[2], a[0]}));
    const tir_loop_rv *r;
    SCHED_OK(s, tir_sched_get_loops(s, c, &r, &na)); /* k, j, i */
    assert_true(tir_sched_same_loop(s, r[0], b[2]));
    assert_true(tir_sched_same_loop(s, r[2], a[0]));
    assert_false(tir_sched_same_loop(s, r[0], a[0]));
    /* a split loop's handles are stale: never the same, even as themselves */
    tir_loop_rv parts[2];
    SCHED_OK(s, tir_sched_split(s, a[1], 2, (const int64_t[]){TIR_SPLIT_INFER, 2}, parts));
    assert_false(tir_sched_same_loop(s, a[1], b[1]));
    assert_false(tir_sched_same_loop(s, a[1], a[1]));
    assert_true(tir_sched_same_loop(s, parts[0], parts[0]));
    assert_false(tir_sched_same_loop(s, parts[0], parts[1]));
    /* zero, out-of-range and wrong-kind handles */
    tir_loop_rv zero = {0};
    assert_false(tir_sched_same_loop(s, zero, zero));
    assert_false(tir_sched_same_loop(s, (tir_loop_rv){999, a[0].sched}, a[0]));
    tir_loop_rv c_as_loop = {c.id, c.sched};
    assert_false(tir_sched_same_loop(s, c_as_loop, c_as_loop));
    assert_false(tir_sched_same_block(s, (tir_block_rv){a[0].id, a[0].sched}, c));
    assert_false(tir_sched_same_block(s, (tir_block_rv){0}, (tir_block_rv){0}));
    assert_false(tir_sched_same_loop(NULL, a[0], a[0]));
    assert_false(tir_sched_same_block(NULL, c, c));
    /* another schedule's handles, even with ids that exist here */
    tir_schedule *t = sched(ctx, tir_sched_orig_func(s));
    tir_block_rv tc;
    SCHED_OK(t, tir_sched_get_block(t, "C", &tc));
    assert_int_equal(tc.id, c.id);
    assert_false(tir_sched_same_block(s, c, tc));
    assert_false(tir_sched_same_block(t, c, tc));
    assert_true(tir_sched_same_block(t, tc, tc));
    tir_sched_destroy(t);
    /* neither query is traced or changes anything */
    sched_snap snap;
    sched_snap_take(s, &snap);
    (void)tir_sched_same_loop(s, r[0], r[1]);
    (void)tir_sched_same_block(s, c, c2);
    char why[4096];
    if (!sched_snap_same(s, &snap, why, sizeof why)) fail_msg("same_* changed s: %s", why);
    sched_check_all(s);
    tir_sched_destroy(s);
}

/* A schedule touching every argument kind, for the trace printers. */
static tir_schedule *small_schedule(tir_ctx *ctx) {
    tir_schedule *s = sched(ctx, tir_def_matmul(ctx, 16, 12, 10, TIR_F32));
    tir_block_rv c;
    const tir_loop_rv *l;
    int n;
    SCHED_OK(s, tir_sched_get_block(s, "C", &c));
    SCHED_OK(s, tir_sched_get_loops(s, c, &l, &n));
    tir_loop_rv i = l[0], j = l[1], k = l[2], ii[2], f;
    SCHED_OK(s, tir_sched_split(s, i, 2, (const int64_t[]){TIR_SPLIT_INFER, 4}, ii));
    SCHED_OK(s, tir_sched_fuse(s, 2, (const tir_loop_rv[]){ii[1], j}, &f));
    SCHED_OK(s, tir_sched_bind(s, ii[0], "blockIdx.x"));
    SCHED_OK(s, tir_sched_annotate_loop_ints(s, k, "software_pipeline_stage", 2,
                                             (const int64_t[]){0, -1}));
    SCHED_OK(s, tir_sched_annotate_block_str(s, c, "note", "say \"hi\"\n"));
    return s;
}

static const char small_trace[] = "b0 = get_block(\"C\")\n"
                                  "[l1, l2, l3] = get_loops(b0)\n"
                                  "[l4, l5] = split(l1, [None, 4])\n"
                                  "l6 = fuse([l5, l2])\n"
                                  "bind(l4, \"blockIdx.x\")\n"
                                  "annotate_loop_ints(l3, \"software_pipeline_stage\", [0, -1])\n"
                                  "annotate_block_str(b0, \"note\", \"say \\\"hi\\\"\\n\")\n";

static void test_trace_text(void **st) {
    tir_ctx *ctx = *st;
    tir_schedule *s = small_schedule(ctx);
    assert_string_equal(tir_sched_trace_text(s), small_trace);
    assert_int_equal(tir_sched_trace_len(s), 7);
    sched_check_all(s);
    /* Replay onto a schedule that already has handles of its own: names in
       the text are local to it. */
    tir_schedule *t = sched(ctx, tir_sched_orig_func(s));
    tir_block_rv c;
    SCHED_OK(t, tir_sched_get_block(t, "C", &c));
    SCHED_OK(t, tir_sched_replay(t, small_trace, strlen(small_trace)));
    assert_true(tir_struct_equal(tir_sched_func(t), tir_sched_func(s)));
    assert_int_equal(tir_sched_trace_len(t), 8);
    tir_sched_destroy(t);
    tir_sched_destroy(s);
}

static void test_trace_c(void **st) {
    tir_ctx *ctx = *st;
    tir_schedule *s = small_schedule(ctx);
    const char *want =
        "/* Schedule trace printed by minitir (tir_sched_trace_c). */\n"
        "#include \"minitir/schedule.h\"\n"
        "\n"
        "tir_status apply(tir_schedule *sch) {\n"
        "    tir_status st = TIR_OK;\n"
        "    tir_block_rv b0;\n"
        "    tir_loop_rv l1, l2, l3, l4, l5, l6;\n"
        "    /* b0 = get_block(\"C\") */\n"
        "    if ((st = tir_sched_get_block(sch, \"C\", &b0)) != TIR_OK) return st;\n"
        "    /* [l1, l2, l3] = get_loops(b0) */\n"
        "    {\n"
        "        const tir_loop_rv *o;\n"
        "        int n;\n"
        "        if ((st = tir_sched_get_loops(sch, b0, &o, &n)) != TIR_OK) return st;\n"
        "        if (n != 3) return TIR_ERR_SCHED_TRACE;\n"
        "        l1 = o[0];\n"
        "        l2 = o[1];\n"
        "        l3 = o[2];\n"
        "    }\n"
        "    /* [l4, l5] = split(l1, [None, 4]) */\n"
        "    {\n"
        "        tir_loop_rv o[2];\n"
        "        if ((st = tir_sched_split(sch, l1, 2, (const int64_t[]){TIR_SPLIT_INFER, 4}, o)) "
        "!= TIR_OK) return st;\n"
        "        l4 = o[0];\n"
        "        l5 = o[1];\n"
        "    }\n"
        "    /* l6 = fuse([l5, l2]) */\n"
        "    if ((st = tir_sched_fuse(sch, 2, (const tir_loop_rv[]){l5, l2}, &l6)) != TIR_OK) "
        "return st;\n"
        "    /* bind(l4, \"blockIdx.x\") */\n"
        "    if ((st = tir_sched_bind(sch, l4, \"blockIdx.x\")) != TIR_OK) return st;\n"
        "    /* annotate_loop_ints(l3, \"software_pipeline_stage\", [0, -1]) */\n"
        "    if ((st = tir_sched_annotate_loop_ints(sch, l3, \"software_pipeline_stage\", 2, "
        "(const int64_t[]){0, -1})) != TIR_OK) return st;\n"
        "    /* annotate_block_str(b0, \"note\", \"say \\\"hi\\\"\\n\") */\n"
        "    if ((st = tir_sched_annotate_block_str(sch, b0, \"note\", \"say \\\"hi\\\"\\n\")) "
        "!= TIR_OK) return st;\n"
        "    (void)b0;\n"
        "    (void)l1;\n"
        "    (void)l2;\n"
        "    (void)l3;\n"
        "    (void)l4;\n"
        "    (void)l5;\n"
        "    (void)l6;\n"
        "    return st;\n"
        "}\n";
    assert_string_equal(tir_sched_trace_c(s, "apply"), want);
    /* a name that is not a C identifier would be pasted into the code:
       "f(void); int g" declared another function, "int" did not compile */
    static const char *const bad[] = {"", "f(void); int g", "9f", "int", "a-b", "_Bool",
                                      /* identifiers the included header declares:
                                         the function did not compile */
                                      "bool", "size_t", "NULL", "INT32_MAX", "UINT64_C",
                                      "TIR_OK", "tir_status", "tir_sched_split", "__x"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_string_equal(tir_sched_trace_c(s, bad[i]), "");
        assert_int_equal(tir_ctx_error_code(tir_sched_ctx(s)), TIR_ERR_INVALID_ARG);
        assert_non_null(strstr(tir_ctx_error(tir_sched_ctx(s)), "not a C identifier"));
    }
    assert_non_null(strstr(tir_sched_trace_c(s, "_apply2"), "tir_status _apply2("));
    tir_sched_destroy(s);
}

/* Replays `text` on s and expects failure `want` with `needle` in the
 * message, leaving s unchanged. */
static void replay_fails(tir_schedule *s, const char *text, tir_status want, const char *needle) {
    sched_snap snap;
    sched_snap_take(s, &snap);
    tir_status got = tir_sched_replay(s, text, strlen(text));
    const char *msg = tir_ctx_error(tir_sched_ctx(s));
    if (got != want)
        fail_msg("replay of <<%s>> returned %s, expected %s: %s", text, tir_status_name(got),
                 tir_status_name(want), msg);
    if (!strstr(msg, needle)) fail_msg("message lacks \"%s\": %s", needle, msg);
    char why[4096];
    if (!sched_snap_same(s, &snap, why, sizeof why)) fail_msg("replay changed s: %s", why);
}

static void test_replay_errors(void **st) {
    tir_ctx *ctx = *st;
    tir_schedule *s = sched(ctx, tir_def_matmul(ctx, 16, 12, 10, TIR_F32));
    tir_block_rv c;
    SCHED_OK(s, tir_sched_get_block(s, "C", &c));
    replay_fails(s, "b0 = get_blok(\"C\")\n", TIR_ERR_PARSE, "1:6: unknown instruction \"get_blok\"");
    replay_fails(s, "b0 = get_block(\"C\"\n", TIR_ERR_PARSE, "1:19: expected ')'");
    replay_fails(s, "\n  b0 = get_block(\"C)\n", TIR_ERR_PARSE, "2:18: unterminated string");
    replay_fails(s, "b0 = get_block(C)\n", TIR_ERR_PARSE, "expected a string");
    /* Strings hold no NUL and only the escapes the printer writes: "C\000x"
       once named block "C", and "\r" read as 'r'. */
    replay_fails(s, "b0 = get_block(\"C\\000junk\")\n", TIR_ERR_PARSE,
                 "1:16: invalid escape in string");
    replay_fails(s, "b0 = get_block(\"C\\r\")\n", TIR_ERR_PARSE, "1:16: invalid escape");
    replay_fails(s, "b0 = get_block(\"C\\777\")\n", TIR_ERR_PARSE, "1:16: invalid escape");
    {
        static const char nul[] = "b0 = get_block(\"C\0junk\")\n";
        sched_snap snap;
        sched_snap_take(s, &snap);
        assert_int_equal(tir_sched_replay(s, nul, sizeof nul - 1), TIR_ERR_PARSE);
        assert_non_null(strstr(tir_ctx_error(ctx), "1:16: a NUL byte in string"));
        char why[4096];
        if (!sched_snap_same(s, &snap, why, sizeof why)) fail_msg("replay changed s: %s", why);
    }
    replay_fails(s, "b0 = get_block(\"C\") x\n", TIR_ERR_PARSE, "expected the end of the line");
    replay_fails(s, "get_block(\"C\")\n", TIR_ERR_PARSE, "get_block has one output");
    replay_fails(s, "b0 = get_loops(b0)\n", TIR_ERR_PARSE, "list of outputs");
    replay_fails(s, "x = bind(l0, \"threadIdx.x\")\n", TIR_ERR_PARSE, "bind has no outputs");
    replay_fails(s, "b0 = get_block(\"C\") $\n", TIR_ERR_PARSE, "unexpected character '$'");
    replay_fails(s, "[l1] = split(l0, [99999999999999999999])\n", TIR_ERR_PARSE, "out of range");
    replay_fails(s, "[l1, l2] = get_loops(b0)\n", TIR_ERR_SCHED_TRACE, "unknown handle b0");
    /* The first three lines succeed, then a count mismatch: all undone. */
    replay_fails(s,
                 "# a comment\n"
                 "b0 = get_block(\"C\")\n\n"
                 "[l1, l2, l3] = get_loops(b0)  # trailing comment\n"
                 "unroll(l3)\n"
                 "[l4, l5] = get_loops(b0)\n",
                 TIR_ERR_SCHED_TRACE, "trace line 6: get_loops made 3 handles but the line names 2");
    replay_fails(s,
                 "b0 = get_block(\"C\")\n"
                 "[l1, l2, l3] = get_loops(b0)\n"
                 "[l4] = split(l1, [None, 4])\n",
                 TIR_ERR_SCHED_TRACE, "split makes 2 handles but the line names 1");
    /* A failing primitive reports its own code, prefixed by the line. */
    replay_fails(s,
                 "b0 = get_block(\"C\")\n"
                 "[l1, l2, l3] = get_loops(b0)\n"
                 "unroll(l1)\n"
                 "[l4, l5] = split(l1, [None, 4])\n",
                 TIR_ERR_SCHED_LOOP_NOT_SERIAL, "trace line 4: split: only serial loops");
    replay_fails(s, "unroll(b0)\n", TIR_ERR_SCHED_TRACE, "unknown handle b0");
    replay_fails(s, "b0 = get_block(\"C\")\nunroll(b0)\n", TIR_ERR_SCHED_INVALID_HANDLE,
                 "not a loop handle");
    assert_int_equal(tir_sched_replay(s, NULL, 0), TIR_ERR_INVALID_ARG);
    /* An empty trace is fine and changes nothing. */
    SCHED_OK(s, tir_sched_replay(s, "\n# nothing\n", 11));
    assert_int_equal(tir_sched_trace_len(s), 1);
    tir_sched_destroy(s);
}

static void test_error_message_shape(void **st) {
    tir_ctx *ctx = *st;
    tir_schedule *s = sched(ctx, tir_def_matmul(ctx, 16, 12, 10, TIR_F32));
    tir_block_rv c;
    const tir_loop_rv *l;
    int n;
    SCHED_OK(s, tir_sched_get_block(s, "C", &c));
    SCHED_OK(s, tir_sched_get_loops(s, c, &l, &n));
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_FACTOR_MISMATCH, "split",
                      tir_sched_split(s, l[0], 2, (const int64_t[]){3, 5}, (tir_loop_rv[2]){{0}}));
    const char *msg = tir_ctx_error(ctx);
    /* "split: <rule> (l1, loop <name>)\n<IR with a caret line under the loop>" */
    const char *head = "split: the factors' product 15 does not cover the extent 16 of ";
    assert_true(strncmp(msg, head, strlen(head)) == 0);
    const char *nl = strchr(msg, '\n');
    assert_non_null(nl);
    const char *h = strstr(msg, "(l1, loop ");
    assert_true(h && h < nl);
    assert_non_null(strstr(nl, "T.prim_func"));
    assert_non_null(strstr(nl, "^"));
    tir_sched_destroy(s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_create, setup, teardown),
        cmocka_unit_test_setup_teardown(test_create_regions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wrapper_regions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wrapper_symbolic, setup, teardown),
        cmocka_unit_test_setup_teardown(test_region_symbolic_stencil, setup, teardown),
        cmocka_unit_test_setup_teardown(test_create_spatial_writes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_queries, setup, teardown),
        cmocka_unit_test_setup_teardown(test_handles_follow_and_go_stale, setup, teardown),
        cmocka_unit_test_setup_teardown(test_invalid_handles, setup, teardown),
        cmocka_unit_test_setup_teardown(test_same_handle, setup, teardown),
        cmocka_unit_test_setup_teardown(test_trace_text, setup, teardown),
        cmocka_unit_test_setup_teardown(test_trace_c, setup, teardown),
        cmocka_unit_test_setup_teardown(test_replay_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_error_message_shape, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
