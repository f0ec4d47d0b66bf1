/* Tests that LLVM's NVPTX target is linked in and arch checks work. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "minitir/codegen.h"

static void test_version(void **st) {
    (void)st;
    assert_true(strncmp(tir_llvm_version(), "19.", 3) == 0);
}

static void test_arch(void **st) {
    (void)st;
    tir_ctx *ctx = tir_ctx_create();
    assert_int_equal(tir_codegen_check_arch(ctx, "sm_90"), TIR_OK);
    assert_int_equal(tir_codegen_check_arch(ctx, "sm_80"), TIR_OK);
    assert_int_equal(tir_codegen_check_arch(ctx, "sm_35"), TIR_ERR_UNSUPPORTED);
    assert_non_null(strstr(tir_ctx_error(ctx), "sm_35"));
    assert_int_equal(tir_codegen_check_arch(ctx, NULL), TIR_ERR_INVALID_ARG);
    tir_ctx_destroy(ctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_version),
        cmocka_unit_test(test_arch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
