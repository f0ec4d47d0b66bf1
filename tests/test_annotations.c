/* Tests of the annotation-key table (minitir/annotations.def): every key
 * has a distinct string that looks up back to it, round-trips through the
 * text format with a value of the kind its readers expect, and is found by
 * tir_annots_get exactly where tir_annots_find finds its string.  That the
 * library names each key through the table (never by a bare string) is
 * checked by scripts/check_annot_keys.py (the annot_keys test). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "minitir/ir.h"

static int setup(void **st) {
    *st = tir_ctx_create();
    return *st ? 0 : -1;
}
static int teardown(void **st) {
    tir_ctx_destroy(*st);
    return 0;
}

static void test_keys_distinct_and_lookup(void **state) {
    (void)state;
    assert_true(TIR_ANN_COUNT > 0);
    for (int k = 0; k < TIR_ANN_COUNT; k++) {
        const char *s = tir_annot_key_str((tir_annot_key)k);
        assert_non_null(s);
        assert_true(s[0] != '\0');
        assert_int_equal(tir_annot_key_lookup(s), k);
        for (int j = 0; j < k; j++) assert_string_not_equal(tir_annot_key_str((tir_annot_key)j), s);
    }
    assert_int_equal(tir_annot_key_lookup("no_such_key"), TIR_ANN_COUNT);
    assert_int_equal(tir_annot_key_lookup(""), TIR_ANN_COUNT);
}

static void test_pipeline_keys_share_prefix(void **state) {
    (void)state;
    const tir_annot_key pipe[] = {TIR_ANN_SOFTWARE_PIPELINE_STAGE, TIR_ANN_SOFTWARE_PIPELINE_ORDER,
                                  TIR_ANN_SOFTWARE_PIPELINE_ASYNC_STAGES,
                                  TIR_ANN_SOFTWARE_PIPELINE_GUARD_TAIL,
                                  TIR_ANN_SOFTWARE_PIPELINE_CLAMP_TAIL};
    size_t n = strlen(TIR_ANN_PIPELINE_PREFIX);
    for (size_t i = 0; i < sizeof pipe / sizeof *pipe; i++)
        assert_int_equal(strncmp(tir_annot_key_str(pipe[i]), TIR_ANN_PIPELINE_PREFIX, n), 0);
    /* no other key carries the prefix: lowering would drop it */
    for (int k = 0; k < TIR_ANN_COUNT; k++) {
        bool is_pipe = false;
        for (size_t i = 0; i < sizeof pipe / sizeof *pipe; i++) is_pipe |= (int)pipe[i] == k;
        if (!is_pipe)
            assert_int_not_equal(
                strncmp(tir_annot_key_str((tir_annot_key)k), TIR_ANN_PIPELINE_PREFIX, n), 0);
    }
}

/* `"key": value` for a value of the key's kind. */
static void annot_text(tir_annot_key k, char *buf, size_t size) {
    const char *v = tir_annot_key_kind(k) == TIR_ANNOT_INTS  ? "[1, 2, 3]"
                    : tir_annot_key_kind(k) == TIR_ANNOT_INT ? "7"
                                                             : "\"s\"";
    snprintf(buf, size, "\"%s\": %s", tir_annot_key_str(k), v);
}

static void test_keys_roundtrip_text(void **state) {
    tir_ctx *ctx = *state;
    for (int k = 0; k < TIR_ANN_COUNT; k++) {
        char an[128], text[1024];
        annot_text((tir_annot_key)k, an, sizeof an);
        snprintf(text, sizeof text,
                 "@T.prim_func\n"
                 "def f(A: T.Buffer((16,), \"float32\")):\n"
                 "    for i in T.serial(16, annotations={%s, \"user_key\": 1}):\n"
                 "        A[i] = T.float32(0)\n",
                 an);
        const tir_prim_func *f = NULL;
        tir_status s = tir_parse_func(ctx, text, strlen(text), &f);
        if (s != TIR_OK) print_error("%s\n%s", tir_ctx_error(ctx), text);
        assert_int_equal(s, TIR_OK);
        const char *printed = tir_print(ctx, f);
        if (!strstr(printed, an)) print_error("missing %s in\n%s", an, printed);
        assert_non_null(strstr(printed, an));
        const tir_prim_func *g = NULL;
        assert_int_equal(tir_parse_func(ctx, printed, strlen(printed), &g), TIR_OK);
        assert_true(tir_struct_equal(f, g));
        assert_string_equal(tir_print(ctx, g), printed);
    }
}

static void test_annots_get_matches_find(void **state) {
    tir_ctx *ctx = *state;
    for (int k = 0; k < TIR_ANN_COUNT; k++) {
        const char *key = tir_annot_key_str((tir_annot_key)k);
        tir_annot in[2] = {{.key = "user_key", .kind = TIR_ANNOT_INT, .i = 1},
                           {.key = key, .kind = TIR_ANNOT_INT, .i = 40 + k}};
        const tir_annot *as = tir_annots_copy(ctx, 2, in);
        const tir_annot *a = tir_annots_get(2, as, (tir_annot_key)k);
        assert_non_null(a);
        assert_ptr_equal(a, tir_annots_find(2, as, key));
        assert_int_equal(a->i, 40 + k);
        /* absent: only the user's key */
        assert_null(tir_annots_get(1, in, (tir_annot_key)k));
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_keys_distinct_and_lookup),
        cmocka_unit_test(test_pipeline_keys_share_prefix),
        cmocka_unit_test_setup_teardown(test_keys_roundtrip_text, setup, teardown),
        cmocka_unit_test_setup_teardown(test_annots_get_matches_find, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
