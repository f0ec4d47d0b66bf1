/* test_codegen_cache_nopie.c: the codegen cache's build id in a non-PIE
 * program that takes tir_codegen's address (tests/meson.build builds it
 * with -fno-pie -no-pie and without a build id of its own).  Such a
 * program gets a canonical PLT entry for tir_codegen, and the library's
 * own references to the function resolve to it; the cache must still
 * key its disk entries by the library's build id, not the program's
 * (here: none, which would turn the disk cache off).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "minitir/codegen.h"

/* Written in code (an absolute address in a non-PIE program), so that
 * the link makes tir_codegen's canonical address the program's. */
void *volatile codegen_address;

static void test_library_build_id(void **state) {
    (void)state;
    codegen_address = (void *)tir_codegen;
    tir_codegen_cache_stats s;
    tir_codegen_cache_get_stats(&s);
    assert_true(s.disk_enabled);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_library_build_id),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
