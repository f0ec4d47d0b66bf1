/* Tests of software_pipeline: the stage / order / async annotations on a
 * loop whose body copies two tiles to shared memory and computes (three
 * components), on a loop with one component, through an iterator-less
 * wrapper block; golden text, trace roundtrip, interpreter equivalence
 * (annotations do not change the meaning); one negative test per
 * precondition, each checking that nothing changed.  The GPU-path
 * regressions (lowered and simulated) are in test_sw_pipeline_regress.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "sched_check.h"

static int setup(void **st) {
    *st = tir_ctx_create();
    return *st ? 0 : -1;
}
static int teardown(void **st) {
    tir_ctx_destroy(*st);
    return 0;
}

/* C[i] = sum_k A[k, i] * B[k, i], each k step staging A and B rows in
 * shared memory. */
#define PIPE_HEAD                                                                         \
    "@T.prim_func\n"                                                                      \
    "def pipe(A: T.Buffer((7, 5), \"float32\"), B: T.Buffer((7, 5), \"float32\"), C: T.Buffer((5,), \"float32\")):\n" \
    "    with T.block(\"root\"):\n"                                                       \
    "        AS = T.alloc_buffer((5,), \"float32\", scope=\"shared\")\n"                  \
    "        BS = T.alloc_buffer((5,), \"float32\", scope=\"shared\")\n"
#define PIPE_BODY(K_LINE)                                                                 \
    K_LINE                                                                                \
    "            for i in T.serial(5):\n"                                                 \
    "                with T.block(\"AS\"):\n"                                             \
    "                    vk, vi = T.axis.remap(\"SS\", [k, i])\n"                         \
    "                    T.reads(A[vk, vi])\n"                                            \
    "                    T.writes(AS[vi])\n"                                              \
    "                    AS[vi] = A[vk, vi]\n"                                            \
    "            for i_1 in T.serial(5):\n"                                               \
    "                with T.block(\"BS\"):\n"                                             \
    "                    vk_1, vi_1 = T.axis.remap(\"SS\", [k, i_1])\n"                   \
    "                    T.reads(B[vk_1, vi_1])\n"                                        \
    "                    T.writes(BS[vi_1])\n"                                            \
    "                    BS[vi_1] = B[vk_1, vi_1]\n"                                      \
    "            for i_2 in T.serial(5):\n"                                               \
    "                with T.block(\"C\"):\n"                                              \
    "                    vi_2, vk_2 = T.axis.remap(\"SR\", [i_2, k])\n"                   \
    "                    T.reads(AS[vi_2], BS[vi_2])\n"                                   \
    "                    T.writes(C[vi_2])\n"                                             \
    "                    with T.init():\n"                                                \
    "                        C[vi_2] = T.float32(0)\n"                                    \
    "                    C[vi_2] = C[vi_2] + AS[vi_2] * BS[vi_2]\n"

static const char pipe_before[] = PIPE_HEAD PIPE_BODY("        for k in T.serial(7):\n");
static const char pipe_after[] = PIPE_HEAD PIPE_BODY(
    "        for k in T.serial(7, annotations={\"software_pipeline_async_stages\": [0], "
    "\"software_pipeline_order\": [0, 1, 2], \"software_pipeline_stage\": [0, 0, 1]}):\n");

static const char wrapped[] =
    "@T.prim_func\n"
    "def w(A: T.Buffer((6,), \"float32\"), B: T.Buffer((6,), \"float32\"), C: T.Buffer((6,), \"float32\")):\n"
    "    for k in T.serial(6):\n"
    "        with T.block(\"wrap\"):\n"
    "            T.reads()\n"
    "            T.writes()\n"
    "            with T.block(\"B\"):\n"
    "                vk = T.axis.spatial(6, k)\n"
    "                T.reads(A[vk])\n"
    "                T.writes(B[vk])\n"
    "                B[vk] = A[vk] + T.float32(1)\n"
    "            with T.block(\"C\"):\n"
    "                vk_1 = T.axis.spatial(6, k)\n"
    "                T.reads(B[vk_1])\n"
    "                T.writes(C[vk_1])\n"
    "                C[vk_1] = B[vk_1] * T.float32(2)\n";

static const tir_prim_func *parse(tir_ctx *ctx, const char *text) {
    const tir_prim_func *f = NULL;
    if (tir_parse_func(ctx, text, strlen(text), &f) != TIR_OK)
        fail_msg("parse: %s", tir_ctx_error(ctx));
    return f;
}

static const tir_annot *annot(tir_schedule *s, tir_loop_rv l, const char *key) {
    const tir_for *f = sched_for(s, l);
    return tir_annots_find(f->nannots, f->annots, key);
}

static void test_pipeline(void **st) {
    tir_ctx *ctx = *st;
    tir_schedule *s = sched_new(ctx, parse(ctx, pipe_before));
    sched_expect_text(s, pipe_before);
    tir_loop_rv l[16];
    sched_loops(s, "C", l);
    SCHED_OK(s, tir_sched_software_pipeline(s, l[0], 3, (const int64_t[]){0, 0, 1}, 3,
                                            (const int64_t[]){0, 1, 2}, 1,
                                            (const int64_t[]){0}));
    sched_expect_text(s, pipe_after);
    sched_check_all(s);
    /* again without async stages: the async annotation goes, others change */
    SCHED_OK(s, tir_sched_software_pipeline(s, l[0], 3, (const int64_t[]){0, 1, 2}, 3,
                                            (const int64_t[]){2, 0, 1}, 0, NULL));
    assert_null(annot(s, l[0], "software_pipeline_async_stages"));
    const tir_annot *o = annot(s, l[0], "software_pipeline_order");
    assert_non_null(o);
    assert_int_equal(o->nints, 3);
    assert_int_equal(o->ints[0], 2);
    assert_int_equal(annot(s, l[0], "software_pipeline_stage")->ints[2], 2);
    sched_check_all(s);
    /* one stage, the copies swapped: each still precedes the compute */
    SCHED_OK(s, tir_sched_software_pipeline(s, l[0], 3, (const int64_t[]){0, 0, 0}, 3,
                                            (const int64_t[]){1, 0, 2}, 0, NULL));
    sched_check_all(s);
    tir_sched_destroy(s);

    /* one component: the block itself */
    s = sched_new(ctx, tir_def_matmul(ctx, 5, 3, 7, TIR_F32));
    sched_loops(s, "C", l);
    SCHED_OK(s, tir_sched_software_pipeline(s, l[2], 1, (const int64_t[]){0}, 1,
                                            (const int64_t[]){0}, 0, NULL));
    sched_check_all(s);
    tir_sched_destroy(s);

    /* through a wrapper block without iterators: two components */
    s = sched_new(ctx, parse(ctx, wrapped));
    sched_loops(s, "wrap", l);
    SCHED_OK(s, tir_sched_software_pipeline(s, l[0], 2, (const int64_t[]){0, 1}, 2,
                                            (const int64_t[]){1, 0}, 2,
                                            (const int64_t[]){1, 0}));
    sched_check_all(s);
    tir_sched_destroy(s);
}

static void test_pipeline_preconditions(void **st) {
    tir_ctx *ctx = *st;
    tir_schedule *s = sched_new(ctx, parse(ctx, pipe_before));
    tir_loop_rv l[16], li[16];
    sched_loops(s, "C", l);
    sched_loops(s, "AS", li);
    const int64_t st3[3] = {0, 0, 1}, ord3[3] = {0, 1, 2};
    /* 1: serial */
    SCHED_OK(s, tir_sched_bind(s, li[1], "threadIdx.x"));
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_LOOP_NOT_SERIAL, "software_pipeline",
                      tir_sched_software_pipeline(s, li[1], 1, st3, 1, ord3, 0, NULL));
    /* 2: one entry per component */
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_PIPELINE_COUNT, "software_pipeline",
                      tir_sched_software_pipeline(s, l[0], 2, st3, 3, ord3, 0, NULL));
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_PIPELINE_COUNT, "software_pipeline",
                      tir_sched_software_pipeline(s, l[0], 3, st3, 4,
                                                  (const int64_t[]){0, 1, 2, 3}, 0, NULL));
    assert_non_null(strstr(tir_ctx_error(ctx), "3 pipeline components"));
    /* 3: stages >= 0 */
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_PIPELINE_STAGE, "software_pipeline",
                      tir_sched_software_pipeline(s, l[0], 3, (const int64_t[]){0, -1, 1}, 3,
                                                  ord3, 0, NULL));
    /* 4: a permutation */
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_PIPELINE_ORDER, "software_pipeline",
                      tir_sched_software_pipeline(s, l[0], 3, st3, 3,
                                                  (const int64_t[]){0, 0, 1}, 0, NULL));
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_PIPELINE_ORDER, "software_pipeline",
                      tir_sched_software_pipeline(s, l[0], 3, st3, 3,
                                                  (const int64_t[]){0, 1, 3}, 0, NULL));
    /* 5: async stages are used stages, once */
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_PIPELINE_ASYNC, "software_pipeline",
                      tir_sched_software_pipeline(s, l[0], 3, st3, 3, ord3, 1,
                                                  (const int64_t[]){2}));
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_PIPELINE_ASYNC, "software_pipeline",
                      tir_sched_software_pipeline(s, l[0], 3, st3, 3, ord3, 2,
                                                  (const int64_t[]){0, 0}));
    /* 6: the compute may not run before the copies it reads */
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_PIPELINE_DEPENDENCE, "software_pipeline",
                      tir_sched_software_pipeline(s, l[0], 3, (const int64_t[]){1, 0, 0}, 3,
                                                  ord3, 0, NULL));
    assert_non_null(strstr(tir_ctx_error(ctx), "reads AS"));
    /* 7: nor, in the same stage, be ordered before a copy it reads; the two
     * independent copies may swap */
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_PIPELINE_ORDER_DEPENDENCE, "software_pipeline",
                      tir_sched_software_pipeline(s, l[0], 3, (const int64_t[]){0, 0, 0}, 3,
                                                  (const int64_t[]){0, 2, 1}, 0, NULL));
    assert_non_null(strstr(tir_ctx_error(ctx), "reads BS"));
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_PIPELINE_ORDER_DEPENDENCE, "software_pipeline",
                      tir_sched_software_pipeline(s, l[0], 3, (const int64_t[]){1, 1, 1}, 3,
                                                  (const int64_t[]){2, 0, 1}, 0, NULL));
    assert_non_null(strstr(tir_ctx_error(ctx), "reads AS"));
    /* pointer arguments */
    SCHED_EXPECT_FAIL(s, TIR_ERR_INVALID_ARG, "software_pipeline",
                      tir_sched_software_pipeline(s, l[0], 3, NULL, 3, ord3, 0, NULL));
    sched_check_roundtrip(s);
    tir_sched_destroy(s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_pipeline, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pipeline_preconditions, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
