/* Tests of annotate / unannotate on loops and blocks with integer, string
 * and integer-array values (replacing, removing, sorted by key); golden
 * text, structural equality, trace roundtrip, interpreter equivalence; one
 * negative test per precondition, each checking that nothing changed. */
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

static const char annotate_before[] =
    "@T.prim_func\n"
    "def matmul(A: T.Buffer((4, 4), \"float32\"), B: T.Buffer((4, 4), \"float32\"), C: T.Buffer((4, 4), \"float32\")):\n"
    "    T.func_attr({\"global_symbol\": \"matmul\", \"tir.noalias\": 1})\n"
    "    for i, j, k in T.grid(4, 4, 4):\n"
    "        with T.block(\"C\"):\n"
    "            vi, vj, vk = T.axis.remap(\"SSR\", [i, j, k])\n"
    "            T.reads(A[vi, vk], B[vk, vj])\n"
    "            T.writes(C[vi, vj])\n"
    "            with T.init():\n"
    "                C[vi, vj] = T.float32(0)\n"
    "            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]\n";

static const char annotate_after[] =
    "@T.prim_func\n"
    "def matmul(A: T.Buffer((4, 4), \"float32\"), B: T.Buffer((4, 4), \"float32\"), C: T.Buffer((4, 4), \"float32\")):\n"
    "    T.func_attr({\"global_symbol\": \"matmul\", \"tir.noalias\": 1})\n"
    "    for i in T.serial(4, annotations={\"note\": \"outer\"}):\n"
    "        for j in T.serial(4, annotations={\"pragma_auto_unroll_max_step\": 16}):\n"
    "            for k in T.serial(4, annotations={\"software_pipeline_order\": [0, 1, 2, 3], \"software_pipeline_stage\": [0, 0, 1, 2]}):\n"
    "                with T.block(\"C\"):\n"
    "                    vi, vj, vk = T.axis.remap(\"SSR\", [i, j, k])\n"
    "                    T.reads(A[vi, vk], B[vk, vj])\n"
    "                    T.writes(C[vi, vj])\n"
    "                    T.block_attr({\"dims\": [-1, 7], \"double_buffer_scope\": 0, \"scope\": \"local\"})\n"
    "                    with T.init():\n"
    "                        C[vi, vj] = T.float32(0)\n"
    "                    C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]\n";

static void test_annotate(void **st) {
    tir_ctx *ctx = *st;
    tir_schedule *s = sched_new(ctx, tir_def_matmul(ctx, 4, 4, 4, TIR_F32));
    sched_expect_text(s, annotate_before);
    tir_loop_rv l[16];
    sched_loops(s, "C", l);
    tir_block_rv c = sched_block(s, "C");
    SCHED_OK(s, tir_sched_annotate_loop_ints(s, l[2], "software_pipeline_stage", 4,
                                             (const int64_t[]){0, 0, 1, 2}));
    SCHED_OK(s, tir_sched_annotate_loop_ints(s, l[2], "software_pipeline_order", 4,
                                             (const int64_t[]){0, 1, 2, 3}));
    SCHED_OK(s, tir_sched_annotate_loop_int(s, l[1], "pragma_auto_unroll_max_step", 16));
    SCHED_OK(s, tir_sched_annotate_loop_str(s, l[0], "note", "outer"));
    SCHED_OK(s, tir_sched_annotate_block_int(s, c, "double_buffer_scope", 0));
    SCHED_OK(s, tir_sched_annotate_block_str(s, c, "scope", "local"));
    SCHED_OK(s, tir_sched_annotate_block_ints(s, c, "dims", 2, (const int64_t[]){-1, 7}));
    const tir_for *k = sched_for(s, l[2]);
    assert_int_equal(k->nannots, 2);
    assert_string_equal(k->annots[0].key, "software_pipeline_order"); /* sorted */
    assert_int_equal(k->annots[1].kind, TIR_ANNOT_INTS);
    assert_int_equal(k->annots[1].nints, 4);
    assert_int_equal(k->annots[1].ints[3], 2);
    const tir_block *b;
    SCHED_OK(s, tir_sched_get_block_node(s, c, &b));
    assert_int_equal(b->nannots, 3);
    sched_expect_text(s, annotate_after);
    sched_check_all(s);
    /* replacing a key keeps one entry with the new value */
    SCHED_OK(s, tir_sched_annotate_loop_str(s, l[1], "pragma_auto_unroll_max_step", "x"));
    assert_int_equal(sched_for(s, l[1])->nannots, 1);
    assert_int_equal(sched_for(s, l[1])->annots[0].kind, TIR_ANNOT_STR);
    assert_string_equal(sched_for(s, l[1])->annots[0].s, "x");
    /* removing all gives back the original function */
    SCHED_OK(s, tir_sched_unannotate_loop(s, l[2], "software_pipeline_stage"));
    SCHED_OK(s, tir_sched_unannotate_loop(s, l[2], "software_pipeline_order"));
    SCHED_OK(s, tir_sched_unannotate_loop(s, l[1], "pragma_auto_unroll_max_step"));
    SCHED_OK(s, tir_sched_unannotate_loop(s, l[0], "note"));
    SCHED_OK(s, tir_sched_unannotate_block(s, c, "double_buffer_scope"));
    SCHED_OK(s, tir_sched_unannotate_block(s, c, "scope"));
    SCHED_OK(s, tir_sched_unannotate_block(s, c, "dims"));
    assert_true(tir_struct_equal(tir_sched_func(s), tir_sched_orig_func(s)));
    sched_check_all(s);
    tir_sched_destroy(s);
}

static void test_annotate_preconditions(void **st) {
    tir_ctx *ctx = *st;
    tir_schedule *s = sched_new(ctx, tir_def_matmul(ctx, 4, 4, 4, TIR_F32));
    tir_loop_rv l[16];
    sched_loops(s, "C", l);
    tir_block_rv c = sched_block(s, "C");
    /* 1: the key is an identifier */
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_BAD_ANNOTATION, "annotate_loop_int",
                      tir_sched_annotate_loop_int(s, l[0], "", 1));
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_BAD_ANNOTATION, "annotate_loop_str",
                      tir_sched_annotate_loop_str(s, l[0], "1x", "v"));
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_BAD_ANNOTATION, "annotate_loop_ints",
                      tir_sched_annotate_loop_ints(s, l[0], "a b", 0, NULL));
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_BAD_ANNOTATION, "annotate_block_int",
                      tir_sched_annotate_block_int(s, c, "x\"", 1));
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_BAD_ANNOTATION, "annotate_block_str",
                      tir_sched_annotate_block_str(s, c, "-", "v"));
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_BAD_ANNOTATION, "annotate_block_ints",
                      tir_sched_annotate_block_ints(s, c, "", 1, (const int64_t[]){1}));
    /* pointer arguments */
    SCHED_EXPECT_FAIL(s, TIR_ERR_INVALID_ARG, "annotate_loop_str",
                      tir_sched_annotate_loop_str(s, l[0], "k", NULL));
    SCHED_EXPECT_FAIL(s, TIR_ERR_INVALID_ARG, "annotate_block_ints",
                      tir_sched_annotate_block_ints(s, c, "k", 2, NULL));
    /* unannotate 1: the key exists */
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_NO_ANNOTATION, "unannotate_loop",
                      tir_sched_unannotate_loop(s, l[0], "missing"));
    SCHED_OK(s, tir_sched_annotate_block_int(s, c, "present", 1));
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_NO_ANNOTATION, "unannotate_block",
                      tir_sched_unannotate_block(s, c, "missing"));
    sched_check_all(s);
    tir_sched_destroy(s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_annotate, setup, teardown),
        cmocka_unit_test_setup_teardown(test_annotate_preconditions, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
